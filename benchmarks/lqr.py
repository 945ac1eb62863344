"""Benchmark: ``finite_horizon_lqr`` against a plain numpy backward Riccati loop, same run.

Run ``python benchmarks/lqr.py [--horizon N] [--states n] [--inputs k] [--repeats R]``; prints
one JSON object:

* ``finite_horizon_lqr_s``: median CPU time of ``finite_horizon_lqr((Ad, Bd), Q, R, Qf)`` on a
  random stable-ish LTV system (default the ball-plate sizes: n = 7, k = 2, N = 400, the
  horizon of ``benchmarks/mpc_ball_plate.py``), validation, the positive-definiteness and
  overflow checks and the result object included (the Riccati residuals are computed on
  first access, so not here);
* ``numpy_loop_s``: the textbook loop ``K = (R + BᵀPB)⁻¹ BᵀPA``, ``P = Q + AᵀP(A − BK)`` with no
  validation and no checks, the same data; the two are interleaved (alternating order) so
  machine load hits both alike;
* ``ratio_over_numpy`` (goal ≤ 1.5) and ``max_rel_difference_K``, ``max_rel_difference_P``
  (the two recursions agree to round-off: the library uses the Joseph form);
* ``residual_access_s``: the first access of ``riccati_residual`` (lazy diagnostics).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def numpy_loop(Ad, Bd, Q, R, Qf):
    """Plain backward Riccati recursion (the peer)."""
    N, n, k = Bd.shape
    K = np.empty((N, k, n))
    P = np.empty((N + 1, n, n))
    P[N] = Qf
    for i in range(N - 1, -1, -1):
        A, B, Pn = Ad[i], Bd[i], P[i + 1]
        BtP = B.T @ Pn
        K[i] = np.linalg.solve(R + BtP @ B, BtP @ A)
        P[i] = Q + A.T @ Pn @ (A - B @ K[i])
    return K, P


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=400)
    parser.add_argument("--states", type=int, default=7)
    parser.add_argument("--inputs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    for name in ("horizon", "states", "inputs", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be a positive integer, got {getattr(args, name)}")

    from nhcontrol.design import finite_horizon_lqr

    N, n, k = args.horizon, args.states, args.inputs
    rng = np.random.default_rng(0)
    Ad = np.eye(n) + 0.05 * rng.standard_normal((N, n, n))
    Bd = 0.1 * rng.standard_normal((N, n, k))
    Q, R, Qf = np.eye(n), 0.1 * np.eye(k), 10.0 * np.eye(n)

    times: dict[str, list[float]] = {"lib": [], "numpy": []}
    results = {}
    for r in range(args.repeats + 1):  # the first round warms caches and is discarded
        order = ("lib", "numpy") if r % 2 == 0 else ("numpy", "lib")
        for name in order:
            t0 = time.process_time()
            if name == "lib":
                results[name] = finite_horizon_lqr((Ad, Bd), Q, R, Qf)
            else:
                results[name] = numpy_loop(Ad, Bd, Q, R, Qf)
            if r:
                times[name].append(time.process_time() - t0)
    res = results["lib"]
    Kn, Pn = results["numpy"]
    t0 = time.process_time()
    resid = res.riccati_residual
    residual_access = time.process_time() - t0

    def rel(a, b):
        return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))

    lib_s, np_s = statistics.median(times["lib"]), statistics.median(times["numpy"])
    out = {"problem": {"horizon": N, "nstates": n, "ninputs": k, "repeats": args.repeats,
                       "clock": "process_time"},
           "finite_horizon_lqr_s": lib_s, "numpy_loop_s": np_s,
           "ratio_over_numpy": lib_s / np_s,
           "max_rel_difference_K": rel(res.K, Kn), "max_rel_difference_P": rel(res.P, Pn),
           "residual_access_s": residual_access,
           "max_riccati_residual": float(np.max(resid))}
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
