"""Smoke test of ``benchmarks/casadi_export.py``: keys, positive timings, both routes agree with
``nhcontrol.linearize`` (timings are never asserted)."""

from __future__ import annotations

import json
import math

import pytest

from _helpers import load_benchmark

pytest.importorskip("casadi", reason="the benchmark needs the optional dependency casadi")


def test_benchmark_casadi_export_keys(capsys):
    out = load_benchmark("casadi_export").main(["--model", "skate", "--repeats", "3"])
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(out))
    assert out["problem"]["nstates"] == 5 and out["problem"]["ninputs"] == 1
    assert out["linearize_s"] > 0
    for route in ("symbolic", "kernels"):
        r = out[route]
        for key in ("export_s", "f_s", "AB_s", "AB_ratio_over_linearize"):
            assert isinstance(r[key], float) and math.isfinite(r[key]) and r[key] > 0, (route, key)
        assert r["max_rel_difference_A"] < 1e-10 and r["max_rel_difference_B"] < 1e-10


def test_benchmark_casadi_export_bad_argument(capsys):
    with pytest.raises(SystemExit, match=r"^2$"):
        load_benchmark("casadi_export").main(["--repeats", "0"])
    assert "--repeats must be a positive integer, got 0" in capsys.readouterr().err
