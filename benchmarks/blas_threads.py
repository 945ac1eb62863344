"""Benchmark: BLAS threads for the small dense work of the hot paths (prints JSON).

Run ``python benchmarks/blas_threads.py [--repeats 7]``.  Every case runs with the BLAS at its
default thread count (``default``; ``NHCONTROL_BLAS_THREADS=off`` so the library does not limit
either) and limited to one thread by ``nhcontrol._util.blas.blas_threads`` (``single``: what
``linearize`` and ``finite_horizon_lqr`` do by default for ``n >= 64``), interleaved in one process; wall time (``perf_counter``) and CPU time of the
whole process (``process_time``: every BLAS thread counts) are medians over the repeats.

Cases (``n`` = state dimension):

* ``steps_n{11,33,64,99}``: the dense linear algebra of the third procedure's Steps 1-7 at one point
  for ``n`` coordinates with ``n/3`` constraints: LU solves ``M^{-1} [D^T, rhs]`` with
  ``n + n/3 + 1`` right-hand sides, the constraint Schur complement, products of ``n x n``
  blocks (random well-conditioned matrices);
* ``lqr_n{11,33,99}``: ``nhcontrol.design.finite_horizon_lqr`` over 50 steps with ``k = n/3``
  inputs;
* ``linearize_bicycle_1`` / ``linearize_bicycle_1000``: ``nhcontrol.linearize`` of the benchmark
  bicycle at one instant / 1,000 stacked instants of its steady forward motion;
* ``linearize_trailers_n99``: ``nhcontrol.linearize`` at one instant of the sleigh with 32
  trailers of ``benchmarks/scaling.py`` (``n = 99``; ``--trailers`` chooses another size).

Keys per case: ``wall_default_s``, ``wall_single_s``, ``cpu_default_s``, ``cpu_single_s``,
``cpu_ratio_default_over_single``, ``wall_ratio_default_over_single``; top level:
``blas`` (threadpoolctl's description of the loaded BLAS libraries), ``context_overhead_s``
(entering and leaving ``blas_threads()`` once).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import timeit
from typing import Callable

import numpy as np


def _steps(n: int, rng: np.random.Generator) -> Callable[[], None]:
    c = max(1, n // 3)
    A = rng.standard_normal((n, n))
    M = A @ A.T + n * np.eye(n)
    D = rng.standard_normal((c, n))
    Q = rng.standard_normal((n, n))
    rhs = rng.standard_normal(n)

    def work() -> None:
        for _ in range(20):
            X = np.linalg.solve(M, np.column_stack([D.T, rhs, Q]))
            S = D @ X[:, :c]
            lam = np.linalg.solve(S, D @ X[:, c])
            J = Q @ X[:, c + 1:] - X[:, :c] @ (D @ Q)
            _ = J @ J.T + np.outer(lam @ D, rhs)

    return work


def _lqr(n: int, rng: np.random.Generator) -> Callable[[], None]:
    from nhcontrol.design import finite_horizon_lqr

    k, N = max(1, n // 3), 50
    Ad = np.eye(n) + 0.01 * rng.standard_normal((N, n, n))
    Bd = 0.1 * rng.standard_normal((N, n, k))
    Q, R = np.eye(n), np.eye(k)

    def work() -> None:
        finite_horizon_lqr((Ad, Bd), Q, R, Q)

    return work


def _bicycle(N: int) -> Callable[[], None]:
    from nhcontrol.linearization import Partition, linearize
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model()
    ref = bb.steady_forward(cm, 5.0)
    part = Partition.from_dict(bb.PARTITION_4_172)
    t = 0.0 if N == 1 else np.linspace(0.0, 1.0, N)

    def work() -> None:
        linearize(cm, ref, part, t=t)

    return work


def _trailers(N: int) -> Callable[[], None]:
    """``linearize`` of the sleigh with ``N`` trailers (benchmarks/scaling.py) on its straight motion."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import scaling

    from nhcontrol.linearization import linearize, suggest_partition
    from nhcontrol.reference import Reference

    cm = scaling.build(N).compile()
    x0, xd0 = scaling.straight_state(N)
    ref = Reference.constant_velocity(cm, x0, xd0)
    ref = Reference.constant_velocity(cm, x0, xd0, lam=ref.lam(0.0))
    part = suggest_partition(cm, ref)

    def work() -> None:
        linearize(cm, ref, part)

    return work


def _measure(work: Callable[[], None], limit: int | None) -> tuple[float, float]:
    """(wall, CPU) of ``work``: ``limit=None`` BLAS at its default threads (the library's own
    limiting switched off), ``limit=1`` inside ``blas_threads(1)`` (what the hot paths do)."""
    from nhcontrol._util.blas import ENV_BLAS_THREADS, blas_threads

    old = os.environ.get(ENV_BLAS_THREADS)
    os.environ[ENV_BLAS_THREADS] = "off" if limit is None else str(limit)
    try:
        with blas_threads(limit):
            w0, c0 = time.perf_counter(), time.process_time()
            work()
            return time.perf_counter() - w0, time.process_time() - c0
    finally:
        if old is None:
            del os.environ[ENV_BLAS_THREADS]
        else:
            os.environ[ENV_BLAS_THREADS] = old


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--trailers", type=int, default=32,
                    help="also linearize the sleigh with this many trailers (n = 3 (N + 1)); 0: skip")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_info

    from nhcontrol._util.blas import blas_threads

    rng = np.random.default_rng(0)
    cases: dict[str, Callable[[], None]] = {}
    for n in (11, 33, 64, 99):
        cases[f"steps_n{n}"] = _steps(n, rng)
    for n in (11, 33, 99):
        cases[f"lqr_n{n}"] = _lqr(n, rng)
    cases["linearize_bicycle_1"] = _bicycle(1)
    cases["linearize_bicycle_1000"] = _bicycle(1000)
    if args.trailers:
        cases[f"linearize_trailers_n{3 * (args.trailers + 1)}"] = _trailers(args.trailers)
    out: dict = {}
    med = statistics.median
    for name, work in cases.items():
        work()                                   # warm-up (imports, first BLAS call)
        rows: dict = {None: [], 1: []}
        for _ in range(args.repeats):
            for limit in (None, 1):              # interleaved
                rows[limit].append(_measure(work, limit))
        wd, cd = med(r[0] for r in rows[None]), med(r[1] for r in rows[None])
        ws, cs = med(r[0] for r in rows[1]), med(r[1] for r in rows[1])
        out[name] = {"wall_default_s": wd, "wall_single_s": ws, "cpu_default_s": cd, "cpu_single_s": cs,
                     "cpu_ratio_default_over_single": cd / cs if cs > 0 else None,
                     "wall_ratio_default_over_single": wd / ws if ws > 0 else None}

    def enter_leave() -> None:
        with blas_threads(1):
            pass

    overhead = med(timeit.repeat(enter_leave, number=1000, repeat=5)) / 1000
    result = {"repeats": args.repeats, "context_overhead_s": overhead,
              "blas": [{k: i.get(k) for k in ("internal_api", "num_threads", "threading_layer", "version")}
                       for i in threadpool_info() if i.get("user_api") == "blas"],
              "cases": out}
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
