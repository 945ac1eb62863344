"""``benchmarks/_common.py``: the helpers the benchmark scripts share, and that the scripts
that use it import it however they are run (as a script, by ``runpy`` or by path through
``_helpers.load_benchmark``). Timings are not tested."""

from __future__ import annotations

import itertools
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from _helpers import load_benchmark

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
USERS = {"hydraulic_fourbar": ("median_time",), "linearize_bicycle": ("median_time",),
         "kernels": ("build_model", "run_child"),
         "model_build": ("build_model", "run_child")}


@pytest.fixture(scope="module")
def common():
    return load_benchmark("_common")


@pytest.mark.parametrize("name", sorted(USERS))
def test_scripts_use_the_shared_helpers(name):
    """Loaded by path and by runpy, each script's helpers are those of benchmarks/_common.py."""
    for mod in (vars(load_benchmark(name)), runpy.run_path(str(BENCH / f"{name}.py"))):
        assert callable(mod["main"])
        for helper in USERS[name]:
            assert Path(mod[helper].__code__.co_filename) == BENCH / "_common.py"


def test_script_runs_from_its_path():
    out = subprocess.run([sys.executable, str(BENCH / "model_build.py"), "--help"],
                         capture_output=True, text=True, check=True)
    assert "--repeats" in out.stdout


def test_median_time_warms_up_once_then_takes_the_median(common):
    calls = []
    ticks = itertools.accumulate([0.0, 1.0, 0.0, 5.0, 0.0, 2.0])   # lengths 1, 5, 2
    clock = iter(ticks).__next__
    assert common.median_time(lambda: calls.append(1), 3, clock) == 2.0
    assert len(calls) == 4


def test_run_child_reads_the_last_line_as_json(common):
    script = "import json, sys; print('noise'); print(json.dumps(sys.argv[1:]))"
    assert common.run_child(script, "a", "b") == ["a", "b"]
