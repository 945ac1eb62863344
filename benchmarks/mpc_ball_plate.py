"""Benchmark: LTV-MPC step time on the ball-plate linearization (thesis Ch. 8), compiled once vs
rebuilt every step, and against python-control's MPC, all measured in the same run.

Run ``python benchmarks/mpc_ball_plate.py [--steps S] [--peer-steps P]`` (``S >= 2``; ``P = 0``
skips python-control); prints one JSON object:

* ``step_s_N20``, ``step_s_N50``: median wall time of one ``LTVMPC.step`` (cvxpy Parameters,
  DPP, OSQP warm start) for horizons N = 20 and 50, on a receding-horizon loop of the 7-state
  controllable formulation (φ0 = 5°, dt = period/125 ≈ 0.05 s) from the deviations of
  Eq. (8.92) with |α|, |β| ≤ 10° (active at the start);
* ``rebuild_step_s_N20``: the same QP built from scratch in cvxpy at every step (constants instead
  of Parameters: construction + canonicalisation + cold OSQP solve), and
  ``ratio_rebuild_over_step_N20``; ``rebuild_max_input_difference`` checks both give the same
  input;
* ``peers``: ``python-control`` — ``control.optimal.create_mpc_iosystem`` on the LTI snapshot
  ``(Ad_0, Bd_0)`` (it only accepts a fixed system; scipy SLSQP on the stacked inputs), timed per
  output evaluation over ``--peer-steps`` steps, with our ``LTVMPC`` on the same LTI problem and
  the ratio; ``do-mpc`` — skipped when not installed.

The first MPC step (which canonicalises the problem) is excluded from the medians and reported
as ``first_step_s_N20``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np


class _Skipped(Exception):
    """A peer deliberately not run (reported as ``{"skipped": reason}``)."""


def _setup():
    from nhcontrol.models import ball_plate as bp
    from nhcontrol.reproduce import ball_plate_ltv as bpl
    from nhcontrol.reproduce.ball_plate import Settings
    from nhcontrol.systems import discretize

    st = Settings()
    cm = bp.model()
    ref = bp.circular_motion(cm, 5.0)
    mo = bp.motion_from_reference(cm, ref)
    dt = mo.period / st.steps_per_period
    d = discretize(bpl.controllable_formulation(cm, ref), dt)
    red = bp.spin_reduction(cm, ref)
    x0, xd0 = bp.initial_conditions(cm, 5.0)
    Z0 = red.reduce(bp.deviation(ref, 0.0, x0, xd0))
    Q = np.diag([st.q_angle] * 3 + [st.q_rate] * 2 + [st.q_contact] * 2)
    R = st.r_input * np.eye(2)
    return ref, d, dt, Z0, Q, R


def _loop(step_fn, d, ref, dt, Z0, N, steps):
    """Receding horizon on the linear model; returns per-step times and inputs."""
    from nhcontrol.design import window

    Z = Z0.copy()
    times, inputs = [], []
    for k in range(steps):
        Ad, Bd = window(d, k, N)
        u_ref = np.asarray(ref.u(dt * (k + np.arange(N))), float)
        t0 = time.perf_counter()
        du = step_fn(Z, Ad, Bd, u_ref)
        times.append(time.perf_counter() - t0)
        inputs.append(du)
        Z = Ad[0] @ Z + Bd[0] @ du
    return times, np.array(inputs)


def _ours(N, Q, R, Qf, bound):
    from nhcontrol.design import LTVMPC

    mpc = LTVMPC(N, Q, R, Qf, u_min=-bound, u_max=bound)

    def step(Z, Ad, Bd, u_ref):
        return mpc.step(Z, Ad, Bd, u_ref=u_ref).du
    return step


def _rebuild(N, Q, R, Qf, bound):
    import cvxpy as cp

    from nhcontrol.design._weights import psd_factor

    Lq, Lr, Lf = psd_factor(Q), psd_factor(R), psd_factor(Qf)
    n, k = Q.shape[0], R.shape[0]

    def step(Z, Ad, Bd, u_ref):
        X = cp.Variable((N + 1, n))
        U = cp.Variable((N, k))
        cons = [X[0] == Z] + [X[j + 1] == Ad[j] @ X[j] + Bd[j] @ U[j] for j in range(N)]
        cons += [U >= -bound - u_ref, U <= bound - u_ref]
        cost = cp.sum_squares(X[:N] @ Lq.T) + cp.sum_squares(U @ Lr.T) + cp.sum_squares(Lf @ X[N])
        prob = cp.Problem(cp.Minimize(cost), cons)
        prob.solve(solver="OSQP")
        if prob.status != "optimal":
            raise RuntimeError(f"rebuilt QP: {prob.status}")
        return np.asarray(U.value[0])
    return step


def _python_control(A, B, Q, R, Qf, lo, hi, N, dt, Z0, steps):
    import control
    import control.optimal as opt

    sys = control.ss(A, B, np.eye(A.shape[0]), 0, dt)
    cost = opt.quadratic_cost(sys, Q, R)
    term = opt.quadratic_cost(sys, Qf, None)
    cons = [opt.input_range_constraint(sys, lo, hi)]
    ctrl = opt.create_mpc_iosystem(sys, np.arange(N) * dt, cost, cons, terminal_cost=term)
    xc = np.zeros(ctrl.nstates)
    Z = Z0.copy()
    times, inputs = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        u = np.asarray(ctrl.output(0.0, xc, Z)).reshape(-1)
        times.append(time.perf_counter() - t0)
        inputs.append(u)
        Z = A @ Z + B @ u
    return times, np.array(inputs)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="receding-horizon steps per timing")
    parser.add_argument("--peer-steps", type=int, default=3,
                        help="steps of python-control's MPC (slow: ~seconds each); 0 skips it")
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error(f"--steps must be at least 2 (the first step, which canonicalises the "
                     f"problem, is excluded from the medians), got {args.steps}")
    if args.peer_steps < 0:
        parser.error(f"--peer-steps must be >= 0 (0 skips python-control), got {args.peer_steps}")

    from nhcontrol.design import finite_horizon_lqr, window

    ref, d, dt, Z0, Q, R = _setup()
    bound = math.radians(10.0)
    Ad_all, Bd_all = window(d, 0, 400)
    P = finite_horizon_lqr((Ad_all, Bd_all), Q, R, Q).P
    out: dict = {"problem": {"nstates": int(Q.shape[0]), "ninputs": 2, "dt_s": dt,
                             "bound_deg": 10.0, "steps": args.steps}}
    inputs = {}
    for N in (20, 50):
        times, u = _loop(_ours(N, Q, R, P[N], bound), d, ref, dt, Z0, N, args.steps)
        out[f"first_step_s_N{N}"] = times[0]
        out[f"step_s_N{N}"] = statistics.median(times[1:])
        inputs[N] = u
    rt, ru = _loop(_rebuild(20, Q, R, P[20], bound), d, ref, dt, Z0, 20, args.steps)
    out["rebuild_step_s_N20"] = statistics.median(rt)
    out["ratio_rebuild_over_step_N20"] = out["rebuild_step_s_N20"] / out["step_s_N20"]
    out["rebuild_max_input_difference"] = float(np.max(np.abs(ru - inputs[20])))

    peers: dict = {}
    # python-control: LTI snapshot, deviation bounds from the largest reference tilt
    A, B = np.asarray(Ad_all[0]), np.asarray(Bd_all[0])
    umax = float(np.max(np.abs(np.asarray(ref.u(np.linspace(0, 2 * np.pi, 200)), float))))
    lo, hi = [-(bound - umax)] * 2, [bound - umax] * 2
    try:
        if args.peer_steps == 0:
            raise _Skipped("--peer-steps 0")
        pt, pu = _python_control(A, B, Q, R, P[20], lo, hi, 20, dt, Z0, args.peer_steps)
        from nhcontrol.design import LTVMPC

        mpc = LTVMPC(20, Q, R, P[20], u_min=lo, u_max=hi)
        Z, ours_t, ours_u = Z0.copy(), [], []
        for _ in range(args.peer_steps + 1):
            t0 = time.perf_counter()
            s = mpc.step(Z, A, B)
            ours_t.append(time.perf_counter() - t0)
            ours_u.append(s.du)
            Z = A @ Z + B @ s.du
        ours = statistics.median(ours_t[1:]) if len(ours_t) > 1 else ours_t[0]
        peers["python-control"] = {
            "function": "control.optimal.create_mpc_iosystem (SLSQP), LTI snapshot (Ad_0, Bd_0), N=20",
            "step_s": statistics.median(pt), "ours_lti_step_s": ours,
            "ratio_over_ours": statistics.median(pt) / ours,
            "max_input_difference": float(np.max(np.abs(pu - np.array(ours_u[:len(pu)])))),
            "steps": args.peer_steps}
    except _Skipped as exc:
        peers["python-control"] = {"skipped": str(exc)}
    except Exception as exc:  # report, don't hide: the peer is optional
        peers["python-control"] = {"skipped": f"{type(exc).__name__}: {exc}"}
    try:
        import do_mpc  # noqa: F401

        peers["do-mpc"] = {"skipped": "installed but not wired in this benchmark"}
    except ImportError:
        peers["do-mpc"] = {"skipped": "do-mpc is not installed"}
    out["peers"] = peers
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
