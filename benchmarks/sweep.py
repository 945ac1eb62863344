"""Benchmark of nhcontrol.sweep: cheap points (bicycle eigenvalues) and expensive points (ball-plate
closed loops on the nonlinear plant), serial vs a process pool vs a Dask LocalCluster, in one run.

Run ``python benchmarks/sweep.py [--repeat R] [--workers W]``; prints one JSON object:

* ``eigen_grid``: 400 points (40 forward speeds x 10 trails) of the benchmark bicycle, each the
  non-spurious eigenvalues of the third-procedure linearization of the steady forward motion.
  ``serial_s``, ``processes_s``, ``dask_s``: one point per call (the model is shipped once per
  worker as a constant); ``chunked_s``: ``vectorized=True`` with one chunk per trail, where a
  chunk stacks the closed-form steady states of its 40 speeds into one ``reference_points``
  (checked and given multipliers in one stacked call), one stacked linearization (one kernel
  call) and one batched eigenvalue call; ``max_abs_diff_chunked`` checks that the two paths
  agree (the multipliers come from inverse dynamics on one path and from the closed form of
  ``steady_forward`` on the other: ~1e-13). The eigenvalues are those of the lean/steer block
  (``lin.reduced_states()``).
* ``closed_loops``: 64 Monte-Carlo runs of the ball-plate LQR on perturbed nonlinear plants
  (``nhcontrol.reproduce.monte_carlo_ball_plate.closed_loop_run``), ``serial_s``,
  ``processes_s``, ``dask_s`` (same samples; results compared).
* top level: ``serial_s``, ``processes_s``, ``dask_s`` (the two studies together),
  ``speedup_dask_closed_loops`` (serial / dask on the closed loops; goal >= 1.6 on 2 cores),
  ``speedup_chunked_cheap`` (one-point-per-call serial / chunked serial on the eigenvalue grid;
  goal >= 10), ``dask_startup_s`` (LocalCluster start, paid once, not in ``dask_s``),
  ``cpu_count`` and ``load_average`` (the machine's state while measuring).

Times are medians over ``R`` interleaved repeats (wall clock).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

SPEEDS = np.linspace(0.25, 10.0, 40)
TRAILS = np.linspace(0.04, 0.13, 10)
N_LOOPS = 64


# ------------------------------------------------------------------ cheap points: eigenvalues
def _reduced_block(lin):
    """The lean/steer block (``lin.reduced_states()``: phi_b, delta and their rates)."""
    idx = [lin.states.index(s) for s in lin.reduced_states()]
    return lin.A[..., idx, :][..., :, idx]


def eig_point(c, v, model, part):
    """Eigenvalues of the bicycle with trail c at speed v (one linearization per call)."""
    import nhcontrol
    from nhcontrol.models import benchmark_bicycle as bb

    lin = nhcontrol.linearize(model, bb.steady_forward(model, v=float(v), p={"c": float(c)}),
                              part)
    return np.sort_complex(np.linalg.eigvals(_reduced_block(lin)))


def eig_chunk(c, v, model, part):
    """Vectorized: per trail in the chunk, the steady states of all its speeds in closed form
    (Eq. (4.174)) as one ``reference_points`` (one stacked admissibility check and inverse
    dynamics), one stacked linearization (one kernel call) and one batched eigenvalue call."""
    import nhcontrol
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.reference import reference_points

    c = np.asarray(c, float)
    v = np.asarray(v, float)
    out: list = [None] * v.size
    for cc in np.unique(c):
        sel = np.flatnonzero(c == cc)
        vals = dict(model.parameters, c=float(cc))
        states = [bb.steady_forward_state(float(s), 0.0, vals) for s in v[sel]]
        X, XD, XDD = (np.array([st[i] for st in states]) for i in range(3))
        ref = reference_points(model, X, XD, XDD, p={"c": float(cc)}, steady=True)
        lin = nhcontrol.linearize(model, ref, part, t=np.arange(sel.size))
        eig = np.linalg.eigvals(_reduced_block(lin))
        for k, i in enumerate(sel):
            out[i] = np.sort_complex(eig[k])
    return out


# ------------------------------------------------------------------ expensive points: loops
def loop_samples():
    from nhcontrol.applications.verify import draw_samples, relative, uniform

    return draw_samples({"mass_factor": relative(1.0, 0.1), "radius_factor": relative(1.0, 0.1),
                         "deviation": uniform(-np.ones(6), np.ones(6))}, N_LOOPS, seed=0)


def median_time(fn, repeat):
    out = []
    res = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out), res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    import distributed

    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.reproduce import monte_carlo_ball_plate as mc
    from nhcontrol.sweep import sweep

    model = bb.model()
    part = bb.PARTITION_4_172
    grid = {"c": TRAILS.tolist(), "v": SPEEDS.tolist()}
    consts = {"model": model, "part": part}
    study = mc.Study(n=N_LOOPS, t_final=10.0, mpc_horizon=10, rtol=1e-7, atol=1e-9)
    points = [dict(s, controller="lqr") for s in loop_samples()]
    mc._design(study)                                   # warm: the serial peer designs once too

    t0 = time.perf_counter()
    cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                       processes=True, dashboard_address=":0")
    client = distributed.Client(cluster)
    startup = time.perf_counter() - t0
    W = args.workers
    runs: dict[str, dict[str, list[float]]] = {"eigen": {}, "loops": {}}
    results: dict[str, object] = {}

    def record(study_key, name, fn):
        t = time.perf_counter()
        res = fn()
        runs[study_key].setdefault(name, []).append(time.perf_counter() - t)
        results[(study_key, name)] = res

    try:
        for _ in range(args.repeat):               # interleaved repeats
            record("eigen", "serial", lambda: sweep(eig_point, grid, constants=consts))
            record("eigen", "chunked", lambda: sweep(eig_chunk, grid, constants=consts,
                                                     vectorized=True, chunk_size=SPEEDS.size))
            record("eigen", "processes", lambda: sweep(eig_point, grid, constants=consts,
                                                       backend="processes", max_workers=W))
            record("eigen", "dask", lambda: sweep(eig_point, grid, constants=consts,
                                                  backend="dask", client=client))
            record("loops", "serial", lambda: sweep(mc.closed_loop_run, points,
                                                    constants={"study": study}))
            record("loops", "processes", lambda: sweep(mc.closed_loop_run, points,
                                                       constants={"study": study},
                                                       backend="processes", max_workers=W))
            record("loops", "dask", lambda: sweep(mc.closed_loop_run, points,
                                                  constants={"study": study}, backend="dask",
                                                  client=client))
    finally:
        client.close()
        cluster.close()

    med = {k: {n: statistics.median(v) for n, v in d.items()} for k, d in runs.items()}
    ser = results[("eigen", "serial")].values
    diff_chunk = max(float(np.max(np.abs(a - b)))
                     for a, b in zip(ser, results[("eigen", "chunked")].values))
    same_backends = all(
        all(np.array_equal(a, b) for a, b in zip(ser, results[("eigen", n)].values))
        for n in ("processes", "dask"))
    lser = results[("loops", "serial")].values
    loops_same = all(results[("loops", n)].values == lser for n in ("processes", "dask"))
    out = {
        "eigen_grid": {"points": len(ser), **{f"{n}_s": t for n, t in med["eigen"].items()},
                       "max_abs_diff_chunked": diff_chunk,
                       "parallel_equal_serial": bool(same_backends)},
        "closed_loops": {"runs": N_LOOPS, **{f"{n}_s": t for n, t in med["loops"].items()},
                         "parallel_equal_serial": bool(loops_same),
                         "success_rate": float(np.mean([r["final_error_m"] <= 0.01
                                                        for r in lser]))},
        "serial_s": med["eigen"]["serial"] + med["loops"]["serial"],
        "processes_s": med["eigen"]["processes"] + med["loops"]["processes"],
        "dask_s": med["eigen"]["dask"] + med["loops"]["dask"],
        "speedup_dask_closed_loops": med["loops"]["serial"] / med["loops"]["dask"],
        "speedup_processes_closed_loops": med["loops"]["serial"] / med["loops"]["processes"],
        "speedup_chunked_cheap": med["eigen"]["serial"] / med["eigen"]["chunked"],
        "dask_startup_s": startup,
        "workers": W,
        "repeat": args.repeat,
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
