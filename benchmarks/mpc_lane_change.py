"""Benchmark: LTV-MPC step time on the ISO 3888-1 lane change (road-vehicle showcase).

Run ``python benchmarks/mpc_lane_change.py [--steps S]``; prints one JSON object with, for the
horizon N = 20 of ``nhcontrol reproduce road-vehicles`` (6 states, 2 inputs, bounds on the
steering angle and rate over the window), the median wall-clock and CPU time of one
``LTVMPC.step`` in a receding-horizon loop on the discrete LTV model (the predicted state of
each step is the next initial state), for the two OSQP interfaces measured in the same run:
``direct`` (OSQP set up once, matrices updated in place) and ``cvxpy`` (cvxpy Parameters,
DPP), their ratio, and the largest difference of the first inputs. The first step is excluded
from the medians.

Under ``assigned_steering`` the same numbers for the MPC of the skate whose steering angle is
assigned (`nhcontrol.applications.lane_change`: 5 states ``[x, ẋ, y, ψ, γ]``, inputs
``[F_R, γ̇]``; ``|γ|`` a state bound, ``|γ̇|`` an input bound).
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
    from nhcontrol.applications.lane_change import INPUT_SCALE, state_reference

    st = s.st
    N = st.horizon
    Q, R = np.diag(st.q), np.diag(st.r)
    P = finite_horizon_lqr((s.Ad, s.Bd), Q, R, Q).P
    hi = np.full(len(s.states), np.inf)
    hi[s.states.index("gamma")] = st.backoff[0] * math.radians(st.steer_max_deg)
    hi[s.states.index("gamma_d")] = st.backoff[1] * math.radians(st.steer_rate_max_deg_s)
    mpc = LTVMPC(N, Q, R, P[N], x_min=-hi, x_max=hi, osqp_interface=interface)
    inv = np.linalg.inv(INPUT_SCALE)

    def window(t: float) -> tuple:
        return (s.ref.u(t + st.dt * np.arange(N))[:, s.cols] @ inv.T,
                state_reference(s, t + st.dt * np.arange(N + 1)))

    return _steps(s, mpc, P, window, steps)


def _steps(s, mpc, P, window, steps: int) -> dict:
    """``steps`` MPC steps on the linear model from the initial offset, timed (wall and CPU);
    ``window(t)`` gives the input and state references of the horizon at ``t``."""
    st, N = s.st, s.st.horizon
    dX = np.zeros(len(s.states))
    dX[s.states.index("y")] = st.y_offset
    wall, cpu, u0 = [], [], []
    for k in range(steps):
        u_ref, x_ref = window(k * st.dt)
        c0, p0 = time.perf_counter(), time.process_time()
        step = mpc.step(dX, s.Ad[k:k + N], s.Bd[k:k + N], u_ref=u_ref, x_ref=x_ref, Qf=P[k + N])
        wall.append(time.perf_counter() - c0)
        cpu.append(time.process_time() - p0)
        u0.append(np.asarray(step.u))
        dX = np.asarray(step.predicted_x[1])
    return {"median_step_s": statistics.median(wall[1:]), "median_step_cpu_s": statistics.median(cpu[1:]),
            "first_step_s": wall[0], "u": np.array(u0)}


def _loop_assigned(s, interface: str, steps: int) -> dict:
    from nhcontrol.design import LTVMPC, finite_horizon_lqr
    from nhcontrol.applications.lane_change import reference_window

    st, ast = s.st, s.ast
    N = st.horizon
    Q, R = np.diag(ast.q), np.diag(ast.r)
    P = finite_horizon_lqr((s.Ad, s.Bd), Q, R, Q).P
    hi = np.full(len(s.states), np.inf)
    hi[s.states.index("gamma")] = ast.backoff[0] * math.radians(st.steer_max_deg)
    rate_hi = np.array([np.inf, ast.backoff[1] * math.radians(st.steer_rate_max_deg_s)])
    mpc = LTVMPC(N, Q, R, P[N], x_min=-hi, x_max=hi, u_min=-rate_hi, u_max=rate_hi,
                 osqp_interface=interface)
    return _steps(s, mpc, P, lambda t: reference_window(s, t), steps)


def _compare(res: dict) -> dict:
    out = {name: {k: v for k, v in r.items() if k != "u"} for name, r in res.items()}
    out["ratio_cvxpy_over_direct"] = res["cvxpy"]["median_step_s"] / res["direct"]["median_step_s"]
    out["max_input_difference"] = float(np.max(np.abs(res["cvxpy"]["u"] - res["direct"]["u"])))
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=120)
    args = ap.parse_args(argv)
    from nhcontrol.applications.lane_change import (LaneChangeSettings, assigned_steering_setup,
                                               lane_change_setup)

    s = lane_change_setup(LaneChangeSettings())
    steps = min(args.steps, s.Ad.shape[0] - s.st.horizon)
    out = {"horizon": s.st.horizon, "steps": steps}
    out.update(_compare({name: _loop(s, name, steps) for name in ("direct", "cvxpy")}))
    sa = assigned_steering_setup(LaneChangeSettings())
    steps_a = min(args.steps, sa.Ad.shape[0] - sa.st.horizon)
    out["assigned_steering"] = {"horizon": sa.st.horizon, "steps": steps_a, "states": list(sa.states)}
    out["assigned_steering"].update(
        _compare({name: _loop_assigned(sa, name, steps_a) for name in ("direct", "cvxpy")}))
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
