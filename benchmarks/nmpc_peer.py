"""Benchmark: nonlinear MPC of the ball-plate circle by nhcontrol's RTI and SQP and by do-mpc
(CasADi + IPOPT, orthogonal collocation), in one process.

Run ``python benchmarks/nmpc_peer.py [--steps S] [--horizon N] [--repeats K] [--tol TOL]
[--skip-dompc]``; prints one JSON object.

Two comparisons, kept apart:

* ``like_for_like``: **do-mpc against nhcontrol's SQP**, both solving the NLP of every sample to
  convergence with the same tolerance ``TOL`` (default 1e-4): IPOPT's ``tol`` (its scaled
  overall NLP error) and the SQP's ``sqp_tol`` (KKT residual of Eq. (N.7) relative to the first
  iterate's, ``docs/theory/nmpc.md``). The two measures are not identical; both are "converged"
  at ``TOL``. At 1e-6 the SQP (linearly convergent, (N.7)-(N.8)) stops at its 50-iteration limit
  on most samples, so 1e-4 is the tolerance both meet. Each sample's convergence is reported
  (``sqp_statuses``; ``dompc_success_rate``: IPOPT's ``success`` flag).
* ``scheme_comparison``: do-mpc against nhcontrol's **RTI**, one QP per sample: a comparison of
  two *schemes* (a converged NLP against one SQP iteration), not of two implementations of the
  same computation.

Timing is measured from **outside** each controller call: ``time.process_time()`` (CPU of the
whole process, every thread: IPOPT/BLAS threads included) and ``time.perf_counter()`` around the
complete ``controller(t, x, ẋ)`` call as the plant simulation makes it. The closed loops are run
``K`` times (default 3, the controllers' order rotated between repeats); every ``*_cpu_s`` /
``*_wall_s`` entry is ``{"median", "min", "max"}`` over the ``K`` per-run medians of the
samples (the first sample, which builds workspaces, left out), and every ratio likewise over the
``K`` per-run ratios. ``load_average`` is ``os.getloadavg()`` before and after: on a shared
machine the wall times move with the load, the CPU times much less.

Besides: ``rms_error_m`` per controller (contact point to the reference point over the run),
``tracking_error_ratio_rti_over_dompc``, ``rti_vs_sqp_first_input_rel_diff`` and
``dompc_vs_sqp_first_input_rel_diff`` (first input of the same problem; do-mpc discretizes by
collocation, nhcontrol by zero-order hold).

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
import os
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


def _nmpc(bp, cm, ref, dt, N, mode, tol=1e-4):
    from nhcontrol.design import NMPCController

    return NMPCController(cm, ref, bp.PARTITION_8_72, N, Q8, R2, dt=dt, mode=mode,
                          terminal="fixed", u_min=-BOUND, u_max=BOUND, sqp_tol=tol)


class _Timed:
    """``controller(t, x, ẋ)`` with process-CPU and wall time measured around the whole call."""

    def __init__(self, inner):
        self.inner, self.cpu, self.wall = inner, [], []

    def __call__(self, t, x, xd):
        c0, w0 = time.process_time(), time.perf_counter()
        u = self.inner(t, x, xd)
        self.cpu.append(time.process_time() - c0)
        self.wall.append(time.perf_counter() - w0)
        return u


class _DoMPC:
    """do-mpc's MPC of the same problem as a ``controller(t, x, ẋ)`` with timings."""

    def __init__(self, bp, cm, ref, dt, N, tol=1e-4):
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
        mpc.settings.nlpsol_opts.update({"ipopt.tol": float(tol), "ipopt.max_iter": 500})
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
        self.success: list[bool] = []

    def state(self, x, xd):
        return np.concatenate([x, xd[self.ai]])

    def __call__(self, t, x, xd):
        s = self.state(x, xd).reshape(-1, 1)
        if not self.started:
            self.mpc.t0 = t
            self.mpc.x0 = s
            self.mpc.set_initial_guess()
            self.started = True
        u = np.asarray(self.mpc.make_step(s)).reshape(-1)
        self.success.append(bool(self.mpc.solver_stats.get("success", False)))
        return u


def _rms_error(ref, sim):
    xr = ref.x(sim.t)
    e = np.hypot(sim.x[:, 0] - xr[:, 0], sim.x[:, 1] - xr[:, 1])
    return float(np.sqrt(np.mean(e ** 2)))


def _spread(values) -> dict:
    v = [float(a) for a in values]
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def _loop(cm, x0, xd0, dt, S, inner):
    from nhcontrol.simulate import forward_dynamics

    timed = _Timed(inner)
    te = dt * np.arange(S + 1)
    sim = forward_dynamics(cm, (0.0, S * dt), x0, xd0, controller=timed, sample_time=dt,
                           rtol=1e-8, atol=1e-10, t_eval=te)
    # medians over the samples, the first (workspace set-up) left out
    return sim, statistics.median(timed.cpu[1:]), statistics.median(timed.wall[1:])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--horizon", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--skip-dompc", action="store_true")
    args = ap.parse_args(argv)
    if args.steps < 2:
        ap.error("--steps must be >= 2")
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    bp, cm, x0, xd0, ref, dt = _setup()
    N, S, K, tol = args.horizon, args.steps, args.repeats, args.tol
    out: dict = {"horizon": N, "steps": S, "repeats": K, "dt_s": dt, "tol": tol,
                 "timing": "process CPU and wall time around each whole controller call",
                 "load_average": {"before": list(os.getloadavg())}}
    s0 = np.concatenate([x0, xd0])
    firsts = {m: _nmpc(bp, cm, ref, dt, N, m, tol).control(0.0, s0) for m in ("rti", "sqp")}
    out["rti_vs_sqp_first_input_rel_diff"] = float(
        np.linalg.norm(firsts["rti"] - firsts["sqp"]) / np.linalg.norm(firsts["sqp"]))
    names = ["rti", "sqp"]
    skipped = None
    try:
        if args.skip_dompc:
            raise ImportError("--skip-dompc given")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import casadi
            import do_mpc
        warnings.filterwarnings("ignore", module=r"do_mpc(\..*)?")   # optional-feature notices
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"casadi(\..*)?")
        names.append("dompc")
        out["versions"] = {"do_mpc": getattr(do_mpc, "__version__", "?"),
                           "casadi": casadi.__version__}
        first = _DoMPC(bp, cm, ref, dt, N, tol)
        out["dompc_vs_sqp_first_input_rel_diff"] = float(
            np.linalg.norm(first(0.0, x0, xd0) - firsts["sqp"]) / np.linalg.norm(firsts["sqp"]))
    except ImportError as exc:
        skipped = f"do-mpc/casadi not available ({exc}); pip install nhcontrol[peers]"
    cpu: dict = {n: [] for n in names}
    wall: dict = {n: [] for n in names}
    for k in range(K):
        for name in names[k % len(names):] + names[:k % len(names)]:     # rotate the order
            if name == "dompc":
                inner = _DoMPC(bp, cm, ref, dt, N, tol)
            else:
                c = _nmpc(bp, cm, ref, dt, N, name, tol)
                inner = c
            sim, c_med, w_med = _loop(cm, x0, xd0, dt, S, inner)
            cpu[name].append(c_med)
            wall[name].append(w_med)
            if k == 0:
                out[f"{name}_rms_error_m"] = _rms_error(ref, sim)
                if name == "dompc":
                    out["dompc_success_rate"] = float(np.mean(inner.success))
                else:
                    out[f"{name}_statuses"] = c.statuses
                    if name == "sqp":
                        out["sqp_median_iterations"] = statistics.median(
                            h.iterations for h in c.history)
                        out["sqp_max_kkt_residual"] = max(h.kkt_residual for h in c.history)
    for name in names:
        out[f"{name}_step_cpu_s"] = _spread(cpu[name])
        out[f"{name}_step_wall_s"] = _spread(wall[name])
    if skipped is not None:
        out["dompc"] = {"skipped": skipped}
        for key in ("like_for_like", "scheme_comparison", "tracking_error_ratio_rti_over_dompc"):
            out[key] = {"skipped": skipped}
    else:
        out["like_for_like"] = {
            "what": "do-mpc (IPOPT) against nhcontrol SQP, both converged to tol",
            "dompc_over_sqp_cpu": _spread(a / b for a, b in zip(cpu["dompc"], cpu["sqp"])),
            "dompc_over_sqp_wall": _spread(a / b for a, b in zip(wall["dompc"], wall["sqp"]))}
        out["scheme_comparison"] = {
            "what": "do-mpc (converged NLP per sample) against nhcontrol RTI (one QP per "
                    "sample): two schemes, not two implementations of one computation",
            "dompc_over_rti_cpu": _spread(a / b for a, b in zip(cpu["dompc"], cpu["rti"])),
            "dompc_over_rti_wall": _spread(a / b for a, b in zip(wall["dompc"], wall["rti"]))}
        out["tracking_error_ratio_rti_over_dompc"] = out["rti_rms_error_m"] / out["dompc_rms_error_m"]
    out["sqp_over_rti_cpu"] = _spread(a / b for a, b in zip(cpu["sqp"], cpu["rti"]))
    out["load_average"]["after"] = list(os.getloadavg())
    print(json.dumps(out, indent=2, default=str))
    return out


if __name__ == "__main__":
    main()
