"""Benchmark of the LTV stages: ZOH discretization and Gramian of an 8-state, 2-input periodic
system over one period with 1,000 steps, against a plain step-by-step ``solve_ivp`` loop.

Run ``python benchmarks/ltv.py [--repeat R]``; prints JSON with medians over ``R`` runs:
``discretize_s`` (Magnus-6, scalar callables), ``discretize_vectorized_s`` (same with vectorized
callables), ``gramian_s`` (Lyapunov ODE, Eq. (8.85)), ``naive_discretize_s`` (one ``solve_ivp``
per step on the augmented matrix ODE, rtol 1e-11), ``ratio_naive_over_discretize`` and the
max difference between the two discretizations.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from scipy.integrate import solve_ivp

from nhcontrol.analysis import gramian
from nhcontrol.systems import LTVSystem, discretize

N_STATES, N_INPUTS, N_STEPS = 8, 2, 1000
PERIOD = 2 * np.pi


def make_system(vectorized: bool = False) -> LTVSystem:
    rng = np.random.default_rng(42)
    n, k = N_STATES, N_INPUTS
    A0 = rng.normal(size=(n, n)) / np.sqrt(n) - 0.2 * np.eye(n)
    A1, A2 = 0.3 * rng.normal(size=(n, n)) / np.sqrt(n), 0.2 * rng.normal(size=(n, n)) / np.sqrt(n)
    B0, B1 = rng.normal(size=(n, k)), 0.5 * rng.normal(size=(n, k))
    if vectorized:
        def A(t):
            t = np.asarray(t)
            return A0 + np.multiply.outer(np.cos(t), A1) + np.multiply.outer(np.sin(2 * t), A2)

        def B(t):
            return B0 + np.multiply.outer(np.cos(np.asarray(t)), B1)
    else:
        def A(t):
            return A0 + np.cos(t) * A1 + np.sin(2 * t) * A2

        def B(t):
            return B0 + np.cos(t) * B1
    return LTVSystem(A, B, period=PERIOD, vectorized=vectorized)


def naive_discretize(sys: LTVSystem, dt: float, steps: int, rtol: float = 1e-11):
    n, k = sys.nstates, sys.ninputs
    Ad, Bd = np.empty((steps, n, n)), np.empty((steps, n, k))
    y0 = np.hstack([np.eye(n), np.zeros((n, k))]).reshape(-1)
    A0, B0 = sys._funcs["A"], sys._funcs["B"]  # raw callables: no validation overhead

    def rhs(t, y):
        Y = y.reshape(n, n + k)
        d = A0(t) @ Y
        d[:, n:] += B0(t)
        return d.reshape(-1)

    for j in range(steps):
        sol = solve_ivp(rhs, (j * dt, (j + 1) * dt), y0, method="DOP853", rtol=rtol, atol=rtol * 1e-3)
        Y = sol.y[:, -1].reshape(n, n + k)
        Ad[j], Bd[j] = Y[:, :n], Y[:, n:]
    return Ad, Bd


def median_time(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def run(repeat: int = 3, naive_repeat: int = 3, steps: int = N_STEPS) -> dict:
    sys, sysv = make_system(False), make_system(True)
    dt = PERIOD / steps
    t_disc, d = median_time(lambda: discretize(sys, dt, steps=steps), repeat)
    t_discv, dv = median_time(lambda: discretize(sysv, dt, steps=steps), repeat)
    t_gram, g = median_time(lambda: gramian(sys, 0.0, PERIOD), repeat)
    t_naive, (Ad, Bd) = median_time(lambda: naive_discretize(sys, dt, steps), naive_repeat)
    diff = float(max(np.abs(d.Ad - Ad).max(), np.abs(d.Bd - Bd).max()))
    return {
        "nstates": N_STATES, "ninputs": N_INPUTS, "steps": steps, "repeat": repeat,
        "naive_repeat": naive_repeat,
        "discretize_s": t_disc,
        "discretize_vectorized_s": t_discv,
        "gramian_s": t_gram,
        "naive_discretize_s": t_naive,
        "ratio_naive_over_discretize": t_naive / t_disc,
        "max_abs_diff_vs_naive": diff,
        "max_abs_diff_vectorized": float(np.abs(d.Ad - dv.Ad).max()),
        "gramian_rank": g.rank,
        "gramian_cond": g.rank_result.condition_number,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--naive-repeat", type=int, default=3)
    p.add_argument("--steps", type=int, default=N_STEPS)
    a = p.parse_args()
    print(json.dumps(run(a.repeat, a.naive_repeat, a.steps), indent=2))


if __name__ == "__main__":
    main()
