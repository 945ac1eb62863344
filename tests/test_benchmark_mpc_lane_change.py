"""Smoke test of ``benchmarks/mpc_lane_change.py``: keys, both OSQP interfaces give the same
inputs (to the solvers' tolerance), timings positive (their values are machine dependent)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "mpc_lane_change.py"


@pytest.mark.slow
def test_benchmark_runs(capsys):
    spec = importlib.util.spec_from_file_location("bench_mpc_lane_change", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--steps", "6"])
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(out))
    assert out["horizon"] == 20 and out["steps"] == 6
    assert out["assigned_steering"]["states"] == ["x", "x_d", "y", "psi", "gamma"]
    for b in (out, out["assigned_steering"]):
        assert b["steps"] == 6
        for name in ("direct", "cvxpy"):
            for key in ("median_step_s", "median_step_cpu_s", "first_step_s"):
                assert math.isfinite(b[name][key]) and b[name][key] >= 0
        assert b["ratio_cvxpy_over_direct"] > 0
        assert b["max_input_difference"] < 1e-4
