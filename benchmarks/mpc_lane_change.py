"""Benchmark: LTV-MPC step time on the ISO 3888-1 lane change (road-vehicle showcase).

Run ``python benchmarks/mpc_lane_change.py [--steps S]``; prints one JSON object with, for the
horizon N = 20 of ``nhcontrol reproduce road-vehicles`` (6 states, 2 inputs, bounds on the
steering angle and rate over the window), the median wall-clock and CPU time of one
``LTVMPC.step`` in a receding-horizon loop on the discrete LTV model (the predicted state of
each step is the next initial state), for the two OSQP interfaces measured in the same run:
``direct`` (OSQP set up once, matrices updated in place) and ``cvxpy`` (cvxpy Parameters,
DPP), their ratio, and the largest difference of the first inputs. The first step is excluded
from the medians.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np


def _loop(s, interface: str, steps: int) -> dict:
    from nhcontrol.design import LTVMPC, finite_horizon_lqr
    from nhcontrol.reproduce import road_vehicles as rv

    st = s.st
    N = st.horizon
    Q, R = np.diag(st.q), np.diag(st.r)
    P = finite_horizon_lqr((s.Ad, s.Bd), Q, R, Q).P
    hi = np.full(len(s.states), np.inf)
    hi[s.states.index("gamma")] = st.backoff[0] * math.radians(st.steer_max_deg)
    hi[s.states.index("gamma_d")] = st.backoff[1] * math.radians(st.steer_rate_max_deg_s)
    mpc = LTVMPC(N, Q, R, P[N], x_min=-hi, x_max=hi, osqp_interface=interface)
    inv = np.linalg.inv(np.diag([1000.0, 1.0]))
    dX = np.zeros(len(s.states))
    dX[s.states.index("y")] = st.y_offset
    wall, cpu, u0 = [], [], []
    for k in range(steps):
        t = k * st.dt
        u_ref = s.ref.u(t + st.dt * np.arange(N))[:, s.cols] @ inv.T
        x_ref = rv._state_ref(s, t + st.dt * np.arange(N + 1))
        c0, p0 = time.perf_counter(), time.process_time()
        step = mpc.step(dX, s.Ad[k:k + N], s.Bd[k:k + N], u_ref=u_ref, x_ref=x_ref, Qf=P[k + N])
        wall.append(time.perf_counter() - c0)
        cpu.append(time.process_time() - p0)
        u0.append(np.asarray(step.u))
        dX = np.asarray(step.predicted_x[1])
    return {"median_step_s": statistics.median(wall[1:]), "median_step_cpu_s": statistics.median(cpu[1:]),
            "first_step_s": wall[0], "u": np.array(u0)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=120)
    args = ap.parse_args(argv)
    from nhcontrol.reproduce import road_vehicles as rv

    s = rv.lane_change_setup(rv.LaneChangeSettings())
    steps = min(args.steps, s.Ad.shape[0] - s.st.horizon)
    res = {name: _loop(s, name, steps) for name in ("direct", "cvxpy")}
    out = {"horizon": s.st.horizon, "steps": steps}
    for name, r in res.items():
        out[name] = {k: v for k, v in r.items() if k != "u"}
    out["ratio_cvxpy_over_direct"] = res["cvxpy"]["median_step_s"] / res["direct"]["median_step_s"]
    out["max_input_difference"] = float(np.max(np.abs(res["cvxpy"]["u"] - res["direct"]["u"])))
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
