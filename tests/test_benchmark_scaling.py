"""Smoke tests of ``benchmarks/scaling.py``: the sleigh with N trailers.

The first (slow: fresh processes build the model) builds N = 1 only without SymPy; the second
(slow) runs SymPy's KanesMethod for N = 1, 2 and checks that both linearizations have the same
spectrum (measured 4e-15 and 3e-14) and that the JSON carries the fitted exponents.
"""

from __future__ import annotations

import json
import math

import pytest

from _helpers import load_benchmark


def _load():
    return load_benchmark("scaling")


def _positive(x) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x > 0


@pytest.mark.slow
def test_scaling_one_case_without_sympy(capsys):
    """N = 1 without SymPy (about 8 s idle, 22 s under load: three builds in fresh processes)."""
    out = _load().main(["--trailers", "1", "--sympy-cap", "0", "--repeat", "2"])
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(out))
    (case,) = out["cases"]
    assert (case["n"], case["m"], case["l"], case["nstates"]) == (6, 2, 2, 6)
    for key in ("cold_build_s", "warm_load_s", "kernel_one_point_s", "linearize_one_point_s"):
        assert _positive(case[key]), key
    assert case["warm_from_cache"] is True and case["cold_build"]["from_cache"] is False
    assert case["sympy"] == {"skipped": "--sympy-cap 0"}
    # one case: no fit; no N = 4 case: no ratio
    assert out["exponent_cold_build"] is None and out["exponent_linearize"] is None
    assert out["ratio_sympy_over_nhcontrol_N4"] is None


@pytest.mark.slow
def test_scaling_sympy_agrees_and_exponents_are_fitted(capsys):
    """SymPy's KanesMethod (minimal coordinates, N + 1 velocity constraints) and nhcontrol
    (absolute coordinates, 2N hitch constraints) give the same N + 5 eigenvalues (1e-8
    relative; measured 4e-15 and 3e-14) for N = 1, 2."""
    out = _load().main(["--trailers", "1", "2", "--sympy-cap", "300", "--repeat", "2"])
    capsys.readouterr()
    for case in out["cases"]:
        assert case["sympy"]["nstates"] == case["nstates"] == case["trailers"] + 5
        assert case["eigenvalues_agree"], case["eigenvalue_max_difference"]
    assert isinstance(out["exponent_cold_build"], float)
    assert isinstance(out["exponent_linearize"], float)


def test_scaling_bad_arguments(capsys):
    with pytest.raises(SystemExit, match=r"^2$"):
        _load().main(["--trailers", "0"])
    assert "--trailers must be positive integers" in capsys.readouterr().err
