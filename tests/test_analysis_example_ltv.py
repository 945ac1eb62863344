"""Runs examples/ltv_controllability.py and checks its headline numbers."""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ltv_controllability.py"


@pytest.fixture(scope="module")
def run():
    buf = io.StringIO()
    mod = runpy.run_path(str(EXAMPLE), run_name="example")
    with contextlib.redirect_stdout(buf):
        nums = mod["main"]()
    return nums, buf.getvalue()


@pytest.fixture(scope="module")
def numbers(run):
    return run[0]


def test_script_prints_headlines(run):
    out = run[1]
    assert "Silverman-Meadows generic rank: 2" in out
    assert "-> unstable" in out and "drops at t = [0.0]" in out


def test_frozen_versus_interval_controllability(numbers):
    assert numbers["frozen_rank"] == 1
    assert numbers["gramian_rank"] == 2 and numbers["sm_generic_rank"] == 2
    np.testing.assert_allclose(numbers["gramian_eigs"], [np.pi / 2, np.pi / 2], rtol=1e-10)


def test_isolated_drop(numbers):
    assert numbers["drop_times"] == [0.0]
    assert numbers["drop_ranks"].count(1) == 1


def test_mathieu_and_rotating_frame(numbers):
    m = numbers["mathieu"]
    assert m[0.25][0] == "unstable" and m[0.05][0] == "marginal" and m[0.45][0] == "marginal"
    assert numbers["rotating_frozen_max_real"] == pytest.approx(-0.4, abs=1e-12)
    np.testing.assert_allclose(numbers["rotating_floquet_exponents"], [-1.0, 0.2], atol=1e-9)
    assert numbers["rotating_classification"] == "unstable"


def test_discretization_error(numbers):
    assert numbers["discretization_max_error"] < 1e-10
