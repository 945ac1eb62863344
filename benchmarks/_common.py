"""Helpers shared by the benchmark scripts (no benchmark itself; prints nothing).

A script imports them after putting its own folder on ``sys.path``::

    sys.path.insert(0, str(Path(__file__).resolve().parent))   # benchmarks/_common.py
    from _common import median_time  # noqa: E402

which works however the script is run: ``python benchmarks/<name>.py``,
``runpy.run_path`` and ``tests/_helpers.load_benchmark`` (a module loaded by its path).

* :func:`median_time` -- median wall (or CPU) time of repeated calls after one warm-up call;
* :func:`model_builder` / :func:`build_model` -- the ``build`` function, or its result, of a
  model named on the command line (the bicycle or one of ``nhcontrol.modeling.examples``);
* :func:`run_child` -- a Python snippet in a fresh process, its last output line read as JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any


def median_time(fn: Callable[[], Any], repeat: int,
                clock: Callable[[], float] = time.perf_counter) -> float:
    """Median of ``repeat`` timings of ``fn()`` with ``clock``, after one untimed warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def model_builder(model: str) -> Callable[[], Any]:
    """The ``build()`` function of ``model``: ``"bicycle"`` (the benchmark bicycle) or the name
    of a function of ``nhcontrol.modeling.examples`` (importing its module, nothing built)."""
    if model == "bicycle":
        from nhcontrol.models.benchmark_bicycle import build
    else:
        from nhcontrol.modeling import examples
        build = getattr(examples, model)
    return build


def build_model(model: str) -> Any:
    """The ``MultibodySystem`` of ``model`` (see :func:`model_builder`)."""
    return model_builder(model)()


def run_child(script: str, *args: str, env: "dict[str, str | None] | None" = None) -> dict:
    """Run ``python -c script *args`` in a fresh process (which can import this module); its
    last line of output as JSON. ``env``: variables set in the child's environment (None:
    removed from it); this process's own is left as it is.

    The child writes and uses bytecode caches as an installed package does (pip compiles
    bytecode at install time): ``PYTHONDONTWRITEBYTECODE`` is removed from its environment, so
    its timings do not include recompiling nhcontrol's sources."""
    changes = {"PYTHONDONTWRITEBYTECODE": None, **(env or {})}
    env = dict(os.environ)
    for k, v in changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    # the child can ``from _common import ...`` (this folder first on its path)
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join([here] + [d for d in [env.get("PYTHONPATH")] if d])
    out = subprocess.run([sys.executable, "-c", script, *args], check=True,
                         capture_output=True, text=True, env=env)
    lines = out.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"the child process printed nothing (exit status {out.returncode}); "
                           f"its standard error ends: {out.stderr[-1000:]!r}")
    return json.loads(lines[-1])
