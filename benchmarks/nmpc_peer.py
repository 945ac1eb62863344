"""Benchmark: nonlinear MPC of the ball-plate circle by nhcontrol's RTI and SQP and by do-mpc
(CasADi + IPOPT, orthogonal collocation), in one run.

Run ``python benchmarks/nmpc_peer.py [--steps S] [--horizon N] [--skip-dompc]``; prints one JSON
object:

* ``rti_step_s``, ``sqp_step_s``, ``dompc_step_s``: median wall time of one controller sample
  (nhcontrol: shift, admissible nodes, stacked exact re-linearization, ZOH, QP; do-mpc:
  ``make_step``, one IPOPT solve warm-started from its previous solution) over a closed loop of
  ``S`` samples on the nonlinear plant (``forward_dynamics``, the same for all);
  ``*_step_cpu_s`` the CPU time of the same samples (``time.thread_time``), less sensitive to
  other processes on a shared machine;
* ``ratio_dompc_over_rti`` (goal ≥ 10) and its CPU counterpart;
* ``tracking_error_ratio_rti_over_dompc`` (goal ≤ 1.1): RMS over the run of the contact point's
  distance from the reference point, RTI over do-mpc; ``rms_error_m`` of each;
* ``rti_vs_sqp_first_input_rel_diff``: ``‖u_RTI − u_SQP‖ / ‖u_SQP‖`` of the first sample (RTI
  linearizes once about the reference, SQP iterates to the KKT point), and
  ``dompc_vs_sqp_first_input_rel_diff`` (the same problem in do-mpc's discretization).

The problem (the same for the three): the ball-plate circle of thesis Ch. 8 (``φ0 = 5°``,
``ρ = 0.5 m``, ``ω = 1 rad/s``, ``h = T/125``) from a 5 cm radial offset of the contact point;
state ``X = [ψ, φ, θ, ψ̇, φ̇, θ̇, x_C, y_C]`` (``PARTITION_8_72``), stage cost
``(X − X_ref)ᵀ Q (X − X_ref) + (u − u_ref)ᵀ R (u − u_ref)`` with ``Q = diag(0, 0, 0, 0, 0.1,
0.1, 10⁴, 10⁴)``, ``R = 10³ I``, terminal weight ``Q``, ``|α|, |β| ≤ 10°`` (no rate bounds:
do-mpc has none), horizon ``N`` (default 20). do-mpc's model is the same symbolic equations of
motion (``MultibodySystem.equations()``) printed into CasADi through SymPy's ``lambdify``; its
state is ``[x (5), ẋ_ai (3)]`` with the dependent velocities from the constraints.

do-mpc and CasADi are optional (``pip install nhcontrol[peers]``); without them the do-mpc keys
are ``{"skipped": reason}``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import warnings

import numpy as np

Q8 = np.diag([0.0, 0.0, 0.0, 0.0, 0.1, 0.1, 1e4, 1e4])
R2 = 1e3 * np.eye(2)
BOUND = math.radians(10.0)


def _setup():
    from nhcontrol.models import ball_plate as bp

    cm = bp.model()
    x0, xd0 = bp.initial_conditions(cm, 5.0, eps_x=0.05, eps_y=0.0, eps_psi_deg=0.0,
                                    eps_theta_deg=0.0, eps_vx=0.0, eps_vy=0.0, eps_wpsi=0.0)
    ref = bp.spin_matched_motion(cm, x0, xd0)
    mo = bp.motion_from_reference(cm, ref)
    return bp, cm, np.asarray(x0), np.asarray(xd0), ref, mo.period / 125


def _nmpc(bp, cm, ref, dt, N, mode):
    from nhcontrol.design import NMPCController

    return NMPCController(cm, ref, bp.PARTITION_8_72, N, Q8, R2, dt=dt, mode=mode,
                          terminal="fixed", u_min=-BOUND, u_max=BOUND, sqp_tol=1e-6)


class _DoMPC:
    """do-mpc's MPC of the same problem as a ``controller(t, x, ẋ)`` with timings."""

    def __init__(self, bp, cm, ref, dt, N):
        import casadi as ca
        import do_mpc
        import sympy as sp

        eom = bp.build().equations()
        args = list(eom.x) + list(eom.xd) + list(eom.u) + list(eom.p)
        xs, vs = ca.SX.sym("x", 5), ca.SX.sym("v", 3)
        us = ca.SX.sym("u", 2)
        p = np.array([bp.DEFAULTS[str(s)] for s in eom.p], dtype=float)
        p[[str(s) for s in eom.p].index("I")] = 0.4 * bp.DEFAULTS["m"] * bp.DEFAULTS["R"] ** 2
        ai, ad = [2, 3, 4], [0, 1]                      # psi, phi, theta | x_C, y_C
        self.ai, self.ad = ai, ad
        funcs = {"sin": ca.sin, "cos": ca.cos, "tan": ca.tan, "sqrt": ca.sqrt}

        def conv(mat, xd):
            vals = [xs[i] for i in range(5)] + [xd[i] for i in range(5)] + [us[0], us[1]] + list(p)
            f = sp.lambdify(args, list(mat), modules=[funcs])
            out = [ca.SX(o) if not isinstance(o, ca.SX) else o for o in f(*vals)]
            return ca.reshape(ca.vertcat(*out), mat.shape[1], mat.shape[0]).T

        # dependent velocities from D(x) ẋ = 0, then Eq. (2.119) without Baumgarte terms
        Dm = conv(eom.D, [0] * 5)
        vd = -ca.solve(Dm[:, ad], Dm[:, ai] @ vs)
        xd = ca.SX.zeros(5)
        for j, i in enumerate(ai):
            xd[i] = vs[j]
        for j, i in enumerate(ad):
            xd[i] = vd[j]
        xdl = [xd[i] for i in range(5)]
        M, Qv, D, Qd = conv(eom.M, xdl), conv(eom.Q, xdl), conv(eom.D, xdl), conv(eom.Qd, xdl)
        K = ca.blockcat([[M, D.T], [D, ca.SX.zeros(2, 2)]])
        acc = ca.solve(K, ca.vertcat(Qv, Qd))[:5]
        self.f_vd = ca.Function("vd", [xs, vs, us], [vd])

        model = do_mpc.model.Model("continuous")
        X = model.set_variable("_x", "x", shape=(5, 1))
        V = model.set_variable("_x", "v", shape=(3, 1))
        U = model.set_variable("_u", "u", shape=(2, 1))
        Xr = model.set_variable("_tvp", "xr", shape=(8, 1))
        Ur = model.set_variable("_tvp", "ur", shape=(2, 1))
        sub = ca.Function("rhs", [xs, vs, us], [xd, ca.vertcat(*[acc[i] for i in ai])])
        dx, dv = sub(X, V, U)
        model.set_rhs("x", dx)
        model.set_rhs("v", dv)
        Xlin = ca.vertcat(X[2], X[3], X[4], V[0], V[1], V[2], X[0], X[1])   # LTV_STATES order
        e = Xlin - Xr
        du = U - Ur
        model.set_expression("lterm", e.T @ ca.DM(Q8) @ e + du.T @ ca.DM(R2) @ du)
        model.set_expression("mterm", e.T @ ca.DM(Q8) @ e)
        model.setup()
        mpc = do_mpc.controller.MPC(model)
        mpc.settings.n_horizon = N
        mpc.settings.t_step = dt
        mpc.settings.store_full_solution = False
        mpc.settings.supress_ipopt_output()
        mpc.set_objective(lterm=model.aux["lterm"], mterm=model.aux["mterm"])
        mpc.set_rterm(u=0.0)             # no rate penalty (nor in RTI/SQP)
        mpc.bounds["lower", "_u", "u"] = -BOUND
        mpc.bounds["upper", "_u", "u"] = BOUND
        tpl = mpc.get_tvp_template()
        coords = list(cm.coordinates)
        order = [coords.index(s) for s in ("psi", "phi", "theta")]

        def tvp_fun(t_now):
            tt = float(np.asarray(t_now).reshape(-1)[0]) + dt * np.arange(N + 1)
            xr, xdr = ref.x(tt), ref.xd(tt)
            ur = ref.u(tt + 0.5 * dt)
            for k in range(N + 1):
                tpl["_tvp", k, "xr"] = np.concatenate([xr[k, order], xdr[k, order], xr[k, :2]])
                tpl["_tvp", k, "ur"] = ur[k]
            return tpl

        mpc.set_tvp_fun(tvp_fun)
        mpc.setup()
        self.mpc, self.started = mpc, False
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def state(self, x, xd):
        return np.concatenate([x, xd[self.ai]])

    def __call__(self, t, x, xd):
        s = self.state(x, xd).reshape(-1, 1)
        if not self.started:
            self.mpc.t0 = t
            self.mpc.x0 = s
            self.mpc.set_initial_guess()
            self.started = True
        w0, c0 = time.perf_counter(), time.thread_time()
        u = np.asarray(self.mpc.make_step(s)).reshape(-1)
        self.wall.append(time.perf_counter() - w0)
        self.cpu.append(time.thread_time() - c0)
        return u


def _rms_error(ref, sim):
    xr = ref.x(sim.t)
    e = np.hypot(sim.x[:, 0] - xr[:, 0], sim.x[:, 1] - xr[:, 1])
    return float(np.sqrt(np.mean(e ** 2)))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--horizon", type=int, default=20)
    ap.add_argument("--skip-dompc", action="store_true")
    args = ap.parse_args(argv)
    if args.steps < 2:
        ap.error("--steps must be >= 2")
    from nhcontrol.simulate import forward_dynamics

    bp, cm, x0, xd0, ref, dt = _setup()
    N, S = args.horizon, args.steps
    te = dt * np.arange(S + 1)
    out: dict = {"horizon": N, "steps": S, "dt_s": dt}
    s0 = np.concatenate([x0, xd0])
    firsts = {}
    for mode in ("rti", "sqp"):
        c = _nmpc(bp, cm, ref, dt, N, mode)
        firsts[mode] = c.control(0.0, s0)
        sim = forward_dynamics(cm, (0.0, S * dt), x0, xd0, controller=c, rtol=1e-8, atol=1e-10,
                               t_eval=te)
        hist = c.history[1:]                       # the first sample builds OSQP's workspace
        out[f"{mode}_step_s"] = statistics.median(h.solve_time for h in hist)
        out[f"{mode}_step_cpu_s"] = statistics.median(h.cpu_time for h in hist)
        out[f"{mode}_rms_error_m"] = _rms_error(ref, sim)
        out[f"{mode}_statuses"] = c.statuses
        if mode == "sqp":
            out["sqp_median_iterations"] = statistics.median(h.iterations for h in c.history)
            out["sqp_max_kkt_residual"] = max(h.kkt_residual for h in c.history)
    out["rti_vs_sqp_first_input_rel_diff"] = float(
        np.linalg.norm(firsts["rti"] - firsts["sqp"]) / np.linalg.norm(firsts["sqp"]))
    try:
        if args.skip_dompc:
            raise ImportError("--skip-dompc given")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import casadi
            import do_mpc  # noqa: F401
    except ImportError as exc:
        out["dompc"] = {"skipped": f"do-mpc/casadi not available ({exc}); pip install nhcontrol[peers]"}
        for key in ("dompc_step_s", "ratio_dompc_over_rti", "tracking_error_ratio_rti_over_dompc"):
            out[key] = {"skipped": out["dompc"]["skipped"]}
        print(json.dumps(out, indent=2, default=str))
        return out
    import do_mpc
    warnings.filterwarnings("ignore", module=r"do_mpc(\..*)?")   # optional-feature notices
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"casadi(\..*)?")
    first = _DoMPC(bp, cm, ref, dt, N)
    u_first = first(0.0, x0, xd0)
    out["dompc_vs_sqp_first_input_rel_diff"] = float(
        np.linalg.norm(u_first - firsts["sqp"]) / np.linalg.norm(firsts["sqp"]))
    dm = _DoMPC(bp, cm, ref, dt, N)
    sim = forward_dynamics(cm, (0.0, S * dt), x0, xd0, controller=dm, sample_time=dt, rtol=1e-8,
                           atol=1e-10, t_eval=te)
    out["dompc_step_s"] = statistics.median(dm.wall[1:])
    out["dompc_step_cpu_s"] = statistics.median(dm.cpu[1:])
    out["dompc_rms_error_m"] = _rms_error(ref, sim)
    out["ratio_dompc_over_rti"] = out["dompc_step_s"] / out["rti_step_s"]
    out["ratio_dompc_over_rti_cpu"] = out["dompc_step_cpu_s"] / out["rti_step_cpu_s"]
    out["tracking_error_ratio_rti_over_dompc"] = out["rti_rms_error_m"] / out["dompc_rms_error_m"]
    out["versions"] = {"do_mpc": getattr(do_mpc, "__version__", "?"), "casadi": casadi.__version__}
    print(json.dumps(out, indent=2, default=str))
    return out


if __name__ == "__main__":
    main()
