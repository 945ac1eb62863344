"""Smoke test of benchmarks/ltv.py (reduced size): JSON keys present, results consistent."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "ltv.py"
KEYS = {"discretize_s", "gramian_s", "naive_discretize_s", "ratio_naive_over_discretize"}


def test_benchmark_run_small():
    res = runpy.run_path(str(BENCH), run_name="bench")["run"](repeat=1, naive_repeat=1, steps=40)
    assert KEYS <= set(res)
    assert all(res[k] > 0 for k in KEYS)
    assert res["max_abs_diff_vs_naive"] < 1e-9     # same matrices as the naive loop
    assert res["gramian_rank"] == 8


@pytest.mark.slow
def test_benchmark_prints_json_full_size():
    out = subprocess.run([sys.executable, str(BENCH), "--repeat", "1", "--naive-repeat", "1"],
                         capture_output=True, text=True, check=True).stdout
    res = json.loads(out)
    assert KEYS <= set(res) and res["steps"] == 1000
