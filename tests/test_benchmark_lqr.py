"""Smoke test of ``benchmarks/lqr.py``: keys and internal consistency.

Timings are machine dependent and only asked to be positive; the two recursions (Joseph form
with checks, and the textbook loop) must agree to round-off.
"""

from __future__ import annotations

import json
import math

import pytest

from _helpers import load_benchmark


def _load():
    return load_benchmark("lqr")


def test_benchmark_lqr_keys(capsys):
    out = _load().main(["--horizon", "60", "--repeats", "3"])
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(out))
    for key in ("finite_horizon_lqr_s", "numpy_loop_s", "residual_access_s"):
        assert isinstance(out[key], float) and math.isfinite(out[key]) and out[key] >= 0, key
    assert out["ratio_over_numpy"] == pytest.approx(
        out["finite_horizon_lqr_s"] / out["numpy_loop_s"], rel=1e-12)
    assert out["max_rel_difference_K"] < 1e-12 and out["max_rel_difference_P"] < 1e-12
    assert out["max_riccati_residual"] < 1e-12
    assert out["problem"] == {"horizon": 60, "nstates": 7, "ninputs": 2, "repeats": 3,
                              "clock": "process_time"}


def test_benchmark_lqr_bad_argument(capsys):
    with pytest.raises(SystemExit, match=r"^2$"):
        _load().main(["--horizon", "0"])
    assert "--horizon must be a positive integer, got 0" in capsys.readouterr().err
