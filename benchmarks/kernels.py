"""Benchmark of the two kernel back-ends, C and Python, on one model (prints JSON).

Run ``python benchmarks/kernels.py [--model bicycle|sleigh|rolling_disc] [--repeats 3]``.

Keys (times in seconds, medians of repeated runs; every C number has its Python peer from the
same run, and the ratios are Python over C):

* ``cold_build_c_s`` / ``cold_build_python_s``: ``build()`` + ``compile()`` into an empty cache
  in a fresh process (C: derivation, Python and C generation, the parallel C compile and the
  load); ``c_compile_overhead_s`` their difference;
* ``warm_load_c_s`` / ``warm_load_python_s``: ``compile()`` that finds the cached kernels (fresh
  process; C: the Python module, the sha256 check of the library and ``dlopen``);
* ``one_point_c_s`` / ``one_point_python_s``: fused ``linearization_terms`` at one point
  (through ``CompiledModel``: argument checks and result views included), ``ratio_one_point``;
* ``dynamics_one_point_c_s`` / ``dynamics_one_point_python_s``, ``ratio_dynamics_one_point``;
* ``n_point_c_s`` / ``n_point_python_s``: ``linearization_terms`` at ``N = 1000`` stacked points
  (Python: the numpy-vectorised kernel), ``per_point_c_s``, ``ratio_n_point``;
* ``warm_process_*_cpu_s``: CPU time of the whole warm child (imports, ``build()`` and the
  load), an upper bound of the warm load's CPU time;
* ``*_cpu_s``: the same in CPU time (``thread_time`` for the kernels; for the builds the CPU of
  the child and of its compiler processes), steadier than wall time on a loaded machine; the
  ``ratio_*`` keys use the CPU times;
* ``max_rel_diff_c_python``: largest entry-wise relative difference of all one-point outputs
  at the sampled points (0.0: the two back-ends agree bit for bit);
* ``cpu_count``: usable cores (the C compile runs one compiler per core);
* ``warm_process_s``: a fresh process running ``from nhcontrol.models import benchmark_bicycle;
  benchmark_bicycle.model()`` with the model in the cache (``$NHCONTROL_CACHE_DIR``; one
  untimed child fills it first), wall time from the child's first statement to the model,
  imports included: median of 5 processes (goal ≤ 0.25 s on an idle machine; the recipe of
  ``nhcontrol.compiled.recipe`` finds the kernels without SymPy); ``warm_process_cpu_s`` its CPU
  time, ``warm_process_total_s`` the whole child as seen by the parent (interpreter start-up
  included), ``warm_process_sympy_imported`` (False: no SymPy import), and
  ``import_nhcontrol_s`` (``import nhcontrol`` alone, goal ≤ 0.1 s).  ``--warm-only`` measures
  only these (no cold builds);
* ``load_average``: 1, 5, 15 minute load averages of the machine when the run ended.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))   # benchmarks/_common.py
from _common import build_model, run_child  # noqa: E402

_CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from _common import model_builder
    c0 = time.process_time()
    t0 = time.perf_counter()
    name, backend = sys.argv[2], sys.argv[3]
    build = model_builder(name)
    t1 = time.perf_counter()
    mb = build()
    t2 = time.perf_counter()
    cm = mb.compile(cache_dir=sys.argv[1], backend=backend)
    t3 = time.perf_counter()
    assert cm.backend == backend
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)   # the compiler processes
    print(json.dumps({"import_s": t1 - t0, "build_s": t2 - t1, "compile_s": t3 - t2,
                      "cpu_s": time.process_time() - c0 + ch.ru_utime + ch.ru_stime,
                      "from_cache": cm.from_cache}))
""")


_WARM_CHILD = textwrap.dedent("""
    import time
    t0 = time.perf_counter(); c0 = time.process_time()
    from nhcontrol.models import benchmark_bicycle
    cm = benchmark_bicycle.model()
    t1 = time.perf_counter(); c1 = time.process_time()
    import json, sys
    print(json.dumps({"s": t1 - t0, "cpu_s": c1 - c0, "sympy": "sympy" in sys.modules,
                      "backend": cm.backend}))
""")

_IMPORT_CHILD = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import nhcontrol
    t1 = time.perf_counter()
    import json, sys
    print(json.dumps({"s": t1 - t0, "numpy": "numpy" in sys.modules}))
""")


def warm_process(repeats: int = 5) -> dict:
    """The ``warm_process_*`` and ``import_nhcontrol_s`` keys (see the module docstring)."""
    run_child(_WARM_CHILD)                      # fills the cache (and the bytecode caches)
    runs, total = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        runs.append(run_child(_WARM_CHILD))
        total.append(time.perf_counter() - t0)
    imports = [run_child(_IMPORT_CHILD)["s"] for _ in range(repeats)]
    med = statistics.median
    return {"warm_process_s": med(r["s"] for r in runs),
            "warm_process_cpu_s": med(r["cpu_s"] for r in runs),
            "warm_process_total_s": med(total),
            "warm_process_sympy_imported": any(r["sympy"] for r in runs),
            "warm_process_backend": runs[0]["backend"],
            "import_nhcontrol_s": med(imports)}


def _load() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):  # pragma: no cover
        return None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bicycle", choices=["bicycle", "sleigh", "rolling_disc", "spatial_body"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warm-only", action="store_true",
                    help="only the warm-start keys (warm_process_s, import_nhcontrol_s)")
    args = ap.parse_args(argv)
    med = statistics.median
    if args.warm_only:
        result = {**warm_process(), "load_average": _load()}
        print(json.dumps(result, indent=2))
        return result

    cold: dict = {"c": [], "python": []}
    warm: dict = {"c": [], "python": []}
    cold_cpu: dict = {"c": [], "python": []}
    warm_cpu: dict = {"c": [], "python": []}
    for _ in range(args.repeats):
        for backend in ("python", "c"):          # interleaved, so machine load hits both alike
            with tempfile.TemporaryDirectory() as d:
                c = run_child(_CHILD, d, args.model, backend)
                assert not c["from_cache"]
                cold[backend].append(c["build_s"] + c["compile_s"])
                cold_cpu[backend].append(c["cpu_s"])
                w = run_child(_CHILD, d, args.model, backend)
                assert w["from_cache"]
                warm[backend].append(w["compile_s"])
                warm_cpu[backend].append(w["cpu_s"])

    with tempfile.TemporaryDirectory() as d:
        mb = build_model(args.model)
        cms = {b: mb.compile(cache_dir=d, backend=b) for b in ("python", "c")}
        cm = cms["c"]
        rng = np.random.default_rng(0)
        n, r, k = cm.n, cm.m + cm.l, cm.ninputs
        p0 = np.array(list(cm.parameters.values()))
        x, xd, xdd = rng.uniform(-1, 1, (3, n))
        lam, u = rng.uniform(-1, 1, r), rng.uniform(-1, 1, k)
        X, XD, XDD = rng.uniform(-1, 1, (3, 1000, n))
        LAM = rng.uniform(-1, 1, (1000, r))
        worst = 0.0
        for _ in range(20):
            pt = (*rng.uniform(-1, 1, (3, n)), rng.uniform(-1, 1, r), rng.uniform(-1, 1, k),
                  p0 * rng.uniform(0.9, 1.1, p0.size))
            for a, b in zip(cms["c"].linearization_terms(*pt).__dict__.values(),
                            cms["python"].linearization_terms(*pt).__dict__.values()):
                if a.size:
                    worst = max(worst, float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))))
        t: dict = {}
        for clock in ("wall", "cpu"):
            timer = time.perf_counter if clock == "wall" else time.thread_time
            for b, c in cms.items():
                num = 2000 if b == "c" else 100
                t[b, clock] = {
                    "one": med(timeit.repeat(lambda: c.linearization_terms(x, xd, xdd, lam, u), number=num,
                                             repeat=7, timer=timer)) / num,
                    "dyn": med(timeit.repeat(lambda: c.dynamics_terms(x, xd, u), number=num, repeat=7,
                                             timer=timer)) / num,
                    "many": med(timeit.repeat(lambda: c.linearization_terms(X, XD, XDD, LAM, u), number=1,
                                              repeat=5, timer=timer)),
                }
    result = {
        "model": args.model, "n": cm.n, "m": cm.m, "l": cm.l, "k": cm.ninputs, "repeats": args.repeats,
        "cpu_count": _cores(),
        "cold_build_c_s": med(cold["c"]), "cold_build_python_s": med(cold["python"]),
        "c_compile_overhead_s": med(cold["c"]) - med(cold["python"]),
        "cold_build_c_cpu_s": med(cold_cpu["c"]), "cold_build_python_cpu_s": med(cold_cpu["python"]),
        "warm_load_c_s": med(warm["c"]), "warm_load_python_s": med(warm["python"]),
        "warm_process_c_cpu_s": med(warm_cpu["c"]), "warm_process_python_cpu_s": med(warm_cpu["python"]),
    }
    for clock, suffix in (("wall", "s"), ("cpu", "cpu_s")):
        tc, tp = t["c", clock], t["python", clock]
        result.update({
            f"one_point_c_{suffix}": tc["one"], f"one_point_python_{suffix}": tp["one"],
            f"dynamics_one_point_c_{suffix}": tc["dyn"], f"dynamics_one_point_python_{suffix}": tp["dyn"],
            f"n_point_c_{suffix}": tc["many"], f"n_point_python_{suffix}": tp["many"],
            f"per_point_c_{suffix}": tc["many"] / 1000,
        })
    ratio_clock = "cpu"
    tc, tp = t["c", ratio_clock], t["python", ratio_clock]
    result.update({
        "ratio_one_point": tp["one"] / tc["one"], "ratio_dynamics_one_point": tp["dyn"] / tc["dyn"],
        "ratio_n_point": tp["many"] / tc["many"],
        "max_rel_diff_c_python": worst,
    })
    result.update(warm_process())
    result["load_average"] = _load()
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
