"""Runs examples/rolling_torus_circle.py and checks its headline numbers."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rolling_torus_circle.py"


def test_example_floquet_matches_constant_jacobian(tmp_path, capsys):
    nums = runpy.run_path(str(EXAMPLE), run_name="example")["main"](tmp_path)
    assert nums["max_rel_diff"] <= 1e-9
    assert len(nums["multipliers"]) >= 2
    assert np.all(np.abs(np.abs(nums["multipliers"]) - 1) < 1e-6)   # conservative: on the unit circle
    assert "nontrivial Floquet multipliers" in capsys.readouterr().out
    assert (tmp_path / "rolling_torus_circle.png").exists()
