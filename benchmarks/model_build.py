"""Benchmark of model building and kernel evaluation (prints JSON).

Keys: ``cold_build_s`` (``build()`` + ``compile()`` into an empty cache, fresh process),
``warm_load_s`` (``compile()`` that finds the cached kernels, fresh process),
``warm_total_s`` (``build()`` + that ``compile()``), ``eval_one_point_s`` (fused
``linearization_terms`` at one point), ``eval_1000_points_s`` (the same for 1000 stacked
points), ``dynamics_one_point_s`` (``dynamics_terms``), plus sizes of the generated module.
All times are medians of repeated runs.

Usage::

    python benchmarks/model_build.py [--model bicycle|rolling_disc|spatial_body] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import textwrap
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # benchmarks/_common.py
from _common import build_model, run_child  # noqa: E402

_CHILD = textwrap.dedent("""
    import json, sys, time
    from _common import model_builder
    t0 = time.perf_counter()
    name = sys.argv[2]
    build = model_builder(name)
    t1 = time.perf_counter()
    mb = build()
    t2 = time.perf_counter()
    cm = mb.compile(cache_dir=sys.argv[1])
    t3 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "build_s": t2 - t1, "compile_s": t3 - t2,
                      "from_cache": cm.from_cache}))
""")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bicycle", choices=["bicycle", "rolling_disc", "spatial_body", "sleigh"])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    cold, warm = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as d:
            c = run_child(_CHILD, d, args.model)
            assert not c["from_cache"]
            cold.append(c)
            w = run_child(_CHILD, d, args.model)
            assert w["from_cache"]
            warm.append(w)

    import numpy as np

    with tempfile.TemporaryDirectory() as d:
        cm = build_model(args.model).compile(cache_dir=d)
        source_bytes = cm.source_path.stat().st_size
        source_lines = cm.source_path.read_text().count("\n")
        rng = np.random.default_rng(0)
        n, r = cm.n, cm.m + cm.l
        x, xd, xdd = rng.uniform(-1, 1, (3, n))
        lam = rng.uniform(-1, 1, r)
        X, XD, XDD = rng.uniform(-1, 1, (3, 1000, n))
        LAM = rng.uniform(-1, 1, (1000, r))
        one = timeit.repeat(lambda: cm.linearization_terms(x, xd, xdd, lam), number=200, repeat=7)
        dyn = timeit.repeat(lambda: cm.dynamics_terms(x, xd), number=200, repeat=7)
        many = timeit.repeat(lambda: cm.linearization_terms(X, XD, XDD, LAM), number=1, repeat=7)
    med = statistics.median
    result = {
        "model": args.model, "n": cm.n, "m": cm.m, "l": cm.l, "k": cm.ninputs,
        "repeats": args.repeats,
        "cold_build_s": med(c["build_s"] + c["compile_s"] for c in cold),
        "cold_compile_only_s": med(c["compile_s"] for c in cold),
        "warm_load_s": med(w["compile_s"] for w in warm),
        "warm_total_s": med(w["build_s"] + w["compile_s"] for w in warm),
        "eval_one_point_s": med(one) / 200,
        "dynamics_one_point_s": med(dyn) / 200,
        "eval_1000_points_s": med(many),
        "generated_source_bytes": source_bytes,
        "generated_source_lines": source_lines,
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
