"""Benchmark: nhcontrol's RTI NMPC and LTV-MPC against acados' compiled SQP_RTI on the same
problem, each in its own closed loop (prints JSON).

Run ``python benchmarks/peer_acados.py [--case ball-plate|robot] [--t-final T]
[--backends hpipm,qpoases] [--skip-acados]`` (``--skip-acados``: only nhcontrol's two loops,
their ``rti_step_s``, ``mpc_step_s`` and RMS errors, without acados). Needs the optional ``peers`` extra and acados' Python interface
with its template renderer (the acados wheel of the package index, ``pip install
comma-deps-acados``); without them it prints ``{"skipped": reason}``. acados' generated code
is written into a temporary directory and deleted afterwards. That wheel (0.2.2.post92) also
installs a reduced CasADi 3.6 as a top-level ``casadi`` package, which shadows a full CasADi
and lacks the linear-solver plugins ``to_casadi`` needs (``libcasadi_linsol_qr.so``): the
build then fails with that message (reported in ``acados.<backend>.skipped``); with a full
CasADi first on the path (acados' templates work with CasADi 3.8) the benchmark runs. acados
is therefore not part of the ``peers`` extra.

Problems (horizon N = 20):

* ``ball-plate`` — the case of ``nhcontrol reproduce nmpc``: the ball-plate circle (thesis
  Ch. 8, ``φ0 = 5°``, ``h = T/125``), plant ball 10 % larger, 5 cm radial offset,
  ``|α|, |β| ≤ 10°``, ``0.5°`` per sample, ``Q = diag(0, 0, 0, 0, 0.1, 0.1, 10⁴, 10⁴)``,
  ``R = 10³ I``, the Riccati terminal weight ``P_{k+N}`` of the reference's linearization;
* ``robot`` — the two-wheeled self-balancing robot of `nhcontrol.models.self_balancing_robot`
  (9 states, 2 wheel torques, 3 nonholonomic constraints) tracking a 2 m circle at 0.5 m/s,
  ``h = 0.02 s``, from a 5 cm lateral offset, ``|T| ≤ 3 N m``, ``0.3 N m`` per sample.

acados is given the CasADi model of ``nhcontrol.interop.to_casadi`` (``f_sx``, the same
minimal-state dynamics), one explicit RK4 step per sample written as discrete dynamics (the
previous input appended to its state for the rate bounds), linear least-squares cost with the
same weights and the same time-varying terminal weight, SQP_RTI with Gauss-Newton Hessian and
either PARTIAL_CONDENSING_HPIPM or FULL_CONDENSING_QPOASES.

Keys: ``acados_core_step_s`` (median of acados' ``time_tot``, the faster back-end: integration,
sensitivities, condensing, QP), ``acados_python_step_s`` (the whole step from Python, its
``set``/``get`` calls included), ``rti_step_s``, ``mpc_step_s`` (nhcontrol's samples timed from
outside the call), ``ratio_acados_core_over_rti``, ``ratio_acados_core_over_mpc`` (goal ≥ 1),
``tracking_rms_diff_mm`` (largest difference of the RMS tracking errors of the loops, goal ≤
0.3), ``acados_build_s`` (code generation and compilation), ``nhcontrol_build_s`` (a fresh
process with an empty model cache: model, both controllers, first step; goal ≤ 10 % of
acados'), each time with its range (``*_range_s``), and ``load_average``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_child  # noqa: E402

HORIZON = 20


class _Skipped(Exception):
    """acados (or its renderer/compiler) is not usable here."""


def _require_acados():
    try:
        import casadi  # noqa: F401
    except ImportError as exc:
        raise _Skipped("CasADi is not installed (pip install nhcontrol[peers])") from exc
    try:
        import acados  # noqa: F401
        from acados.acados_template import AcadosOcp, AcadosOcpSolver  # noqa: F401
    except ImportError:
        try:
            from acados_template import AcadosOcp, AcadosOcpSolver  # noqa: F401
        except ImportError as exc:
            raise _Skipped("acados' Python interface is not installed (pip install "
                           "comma-deps-acados, or acados with its acados_template)") from exc
    if shutil.which(os.environ.get("CC", "gcc")) is None:
        raise _Skipped("no C compiler: acados compiles its generated solver")


# ---------------------------------------------------------------------------------------------
def _case(name: str, t_final: float) -> dict:
    """The problem: model, reference, plant, initial state, weights, bounds, controllers."""
    from nhcontrol.design import MPCController, NMPCController
    from nhcontrol.systems import LTVSystem, discretize, restrict

    if name == "ball-plate":
        from nhcontrol.models import ball_plate as bp
        from nhcontrol.reference import consistent_initial_conditions

        cm = bp.model()
        plant = bp.model(R=1.1 * bp.DEFAULTS["R"])
        x0, xd0 = bp.initial_conditions(cm, 5.0, eps_x=0.05, eps_y=0.0, eps_psi_deg=0.0,
                                        eps_theta_deg=0.0, eps_vx=0.0, eps_vy=0.0, eps_wpsi=0.0)
        ic = consistent_initial_conditions(plant, x0, xd0, independent=("x_C", "y_C", "psi"))
        x0, xd0 = np.asarray(ic.x), np.asarray(ic.xd)
        ref = bp.spin_matched_motion(cm, x0, xd0)
        dt = bp.motion_from_reference(cm, ref).period / 125
        part = bp.PARTITION_8_72
        Q = np.diag([0.0, 0.0, 0.0, 0.0, 0.1, 0.1, 1e4, 1e4])
        R = 1e3 * np.eye(2)
        b, r = math.radians(10.0), math.radians(0.5)
        red = bp.spin_reduction(cm, ref)
        Q7 = np.diag([0.0, 0.0, 0.0, 0.1, 0.1, 1e4, 1e4])
        steps = int(round(t_final / dt))
        full = LTVSystem.from_linearization(cm, ref, part)
        dsys = discretize(restrict(full, red.S, red.P, states=red.states), dt,
                          steps=steps + 2 * HORIZON)
        mpc = MPCController(dsys, ref, HORIZON, Q7, R, u_min=-b, u_max=b, du_min=-r, du_max=r,
                            deviation=lambda t, x, xd: red.reduce(bp.deviation(ref, t, x, xd)))
        track = (0, 1)                 # contact point x_C, y_C
        system = bp.build()
    else:
        from nhcontrol.models import self_balancing_robot as sbr

        cm = sbr.model()
        plant = cm
        ref = sbr.circle(cm, 2.0, 0.5)
        dt = 0.02
        x0, xd0 = np.asarray(ref.x(0.0), float).copy(), np.asarray(ref.xd(0.0), float)
        x0[1] += 0.05                  # 5 cm lateral offset (still admissible: y is free)
        part = sbr.PARTITION
        Q = np.diag([10.0, 0.0, 0.0, 1.0, 0.01, 0.01, 1e3, 1e3, 10.0])
        R = 1.0 * np.eye(2)
        b, r = 3.0, 0.3
        steps = int(round(t_final / dt))
        full = LTVSystem.from_linearization(cm, ref, part)
        dsys = discretize(full, dt, steps=steps + 2 * HORIZON)
        ns = 9
        lin_idx = _partition_indices(cm, part)

        def deviation(t, x, xd):
            X = _reduce(lin_idx, x, xd)
            return X - _reduce(lin_idx, ref.x(t), ref.xd(t))
        mpc = MPCController(dsys, ref, HORIZON, Q, R, u_min=-b, u_max=b, du_min=-r, du_max=r,
                            deviation=deviation)
        track = (0, 1)
        system = sbr.build()
        del ns
    rti = NMPCController(cm, ref, part, HORIZON, Q, R, dt=dt, steps=steps + 1, u_min=-b,
                         u_max=b, du_min=-r, du_max=r)
    return dict(name=name, cm=cm, plant=plant, ref=ref, dt=dt, x0=x0, xd0=xd0, part=part, Q=Q,
                R=R, b=b, r=r, steps=steps, rti=rti, mpc=mpc, track=track, system=system)


def _partition_indices(cm, part):
    from nhcontrol.linearization import Partition

    idx = Partition.from_dict(part).indices(cm)
    return np.asarray(idx.ai, int), np.asarray(idx.ad, int)


def _reduce(idx, x, xd):
    ai, ad = idx
    x, xd = np.asarray(x, float), np.asarray(xd, float)
    return np.concatenate([x[ai], xd[ai], x[ad]])


def _rms_error_mm(case, sim) -> float:
    i, j = case["track"]
    xr = case["ref"].x(sim.t)
    e = np.hypot(sim.x[:, i] - xr[:, i], sim.x[:, j] - xr[:, j])
    return float(1e3 * np.sqrt(np.mean(e ** 2)))


# ---------------------------------------------------------------------------------------------
def _preload(lib_dir: str) -> None:
    """Load the wheel's shared libraries globally (the generated solver links them by name,
    and their folder is not on the loader's path)."""
    import ctypes

    for name in ("libblasfeo.so", "libhpipm.so", "libqpOASES_e.so.3.1", "libacados.so"):
        path = os.path.join(lib_dir, name)
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


class _Acados:
    """acados SQP_RTI of the same problem as a ``controller(t, x, ẋ)``, timed."""

    def __init__(self, case: dict, backend: str, workdir: Path) -> None:
        import casadi as ca
        try:
            from acados.acados_template import AcadosModel, AcadosOcp, AcadosOcpSolver
            import acados
            # the wheel's layout: libraries, headers and renderer under acados/install, the
            # templates beside its acados_template package
            os.environ.setdefault("ACADOS_SOURCE_DIR", acados.DIR)
            os.environ.setdefault("ACADOS_PYTHON_INTERFACE_PATH", acados.TEMPLATE_DIR)
            os.environ.setdefault("TERA_PATH", acados.TERA_PATH)
            _preload(acados.LIB_DIR)
        except ImportError:
            from acados_template import AcadosModel, AcadosOcp, AcadosOcpSolver

        from nhcontrol.interop import to_casadi

        cm, ref, dt = case["cm"], case["ref"], case["dt"]
        cs = to_casadi(case["system"], case["part"], x_guess=ref.x(0.0))
        if cs.f_sx is None:
            raise _Skipped("to_casadi gives no SX graph for this model (holonomic constraints)")
        self.cs, self.case = cs, case
        ns, k = cs.nstates, cs.ninputs
        X, U, Up = ca.SX.sym("X", ns), ca.SX.sym("u", k), ca.SX.sym("u_prev", k)
        p = ca.DM(np.asarray(cs.p, float))

        def f(x):
            return cs.f_sx(x, U, p)
        k1 = f(X)
        k2 = f(X + dt / 2 * k1)
        k3 = f(X + dt / 2 * k2)
        k4 = f(X + dt * k3)
        Xn = X + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)           # one RK4 step per sample
        model = AcadosModel()
        model.name = f"nh_{case['name'].replace('-', '_')}_{backend}"
        model.x = ca.vertcat(X, Up)
        model.u = U
        model.disc_dyn_expr = ca.vertcat(Xn, U)
        ocp = AcadosOcp()
        ocp.model = model
        nx = ns + k
        if hasattr(ocp.solver_options, "N_horizon"):
            ocp.solver_options.N_horizon = HORIZON
        else:                                                    # older acados
            ocp.dims.N = HORIZON
        ocp.solver_options.tf = HORIZON * dt
        ocp.cost.cost_type = "LINEAR_LS"
        ocp.cost.cost_type_e = "LINEAR_LS"
        ny = ns + k
        Vx = np.zeros((ny, nx))
        Vx[:ns, :ns] = np.eye(ns)
        Vu = np.zeros((ny, k))
        Vu[ns:, :] = np.eye(k)
        ocp.cost.Vx, ocp.cost.Vu = Vx, Vu
        ocp.cost.W = 2.0 * np.block([[case["Q"], np.zeros((ns, k))],
                                     [np.zeros((k, ns)), case["R"]]])
        Vxe = np.zeros((ns, nx))
        Vxe[:, :ns] = np.eye(ns)
        ocp.cost.Vx_e = Vxe
        ocp.cost.W_e = 2.0 * case["Q"]
        ocp.cost.yref = np.zeros(ny)
        ocp.cost.yref_e = np.zeros(ns)
        b, r = case["b"], case["r"]
        ocp.constraints.lbu = -b * np.ones(k)
        ocp.constraints.ubu = b * np.ones(k)
        ocp.constraints.idxbu = np.arange(k)
        C = np.zeros((k, nx))
        C[:, ns:] = -np.eye(k)
        ocp.constraints.C, ocp.constraints.D = C, np.eye(k)
        ocp.constraints.lg, ocp.constraints.ug = -r * np.ones(k), r * np.ones(k)
        ocp.constraints.x0 = np.zeros(nx)
        so = ocp.solver_options
        so.integrator_type = "DISCRETE"
        so.nlp_solver_type = "SQP_RTI"
        so.hessian_approx = "GAUSS_NEWTON"
        so.qp_solver = ("PARTIAL_CONDENSING_HPIPM" if backend == "hpipm"
                        else "FULL_CONDENSING_QPOASES")
        ocp.code_export_directory = str(workdir / f"c_generated_code_{backend}")
        t0 = time.perf_counter()
        cwd = os.getcwd()
        os.chdir(workdir)
        try:
            with contextlib.redirect_stdout(sys.stderr):       # acados prints; JSON is ours
                self.solver = AcadosOcpSolver(ocp, json_file=str(workdir / f"ocp_{backend}.json"),
                                              verbose=False)
        finally:
            os.chdir(cwd)
        self.build_s = time.perf_counter() - t0
        self.ns, self.k = ns, k
        self.core, self.whole = [], []
        self.statuses: dict[int, int] = {}
        self.u_prev = None
        self.schedule = case["rti"].schedule
        self.idx = _partition_indices(cm, case["part"])

    def __call__(self, t: float, x, xd):
        w0 = time.perf_counter()
        case, s, N, ns, k = self.case, self.solver, HORIZON, self.ns, self.k
        dt, ref = case["dt"], case["ref"]
        kk = int(round(t / dt))
        tn = t + dt * np.arange(N + 1)
        Xr = np.array([_reduce(self.idx, ref.x(ti), ref.xd(ti)) for ti in tn])
        ur = np.asarray(ref.u(tn[:N] + 0.5 * dt), float).reshape(N, k)
        X0 = _reduce(self.idx, x, xd)
        up = ur[0] if self.u_prev is None else self.u_prev
        x0 = np.concatenate([X0, up])
        if self.u_prev is None:          # first call: the reference as the initial guess
            for j in range(N + 1):
                s.set(j, "x", np.concatenate([Xr[j], ur[min(j, N - 1)]]))
            for j in range(N):
                s.set(j, "u", ur[j])
        s.set(0, "lbx", x0)
        s.set(0, "ubx", x0)
        for j in range(N):
            s.set(j, "yref", np.concatenate([Xr[j], ur[j]]))
        s.set(N, "yref", Xr[N])
        s.cost_set(N, "W", 2.0 * self.schedule.P(kk + N))
        status = int(s.solve())
        self.statuses[status] = self.statuses.get(status, 0) + 1
        u = np.asarray(s.get(0, "u"), float)
        self.core.append(float(np.ravel(s.get_stats("time_tot"))[0]))
        self.u_prev = u
        self.whole.append(time.perf_counter() - w0)
        return u


def _nhcontrol_build(case: str) -> float:
    """A fresh process, empty model cache: model, both controllers, first step (wall s)."""
    script = f"""
import json, sys, time, tempfile, os
t0 = time.perf_counter()
sys.argv = ["x"]
import peer_acados as pa
c = pa._case({case!r}, 0.2)
cm, x0, xd0 = c["cm"], c["x0"], c["xd0"]
c["rti"].control(0.0, list(x0) + list(xd0))
c["mpc"].control(0.0, list(x0) + list(xd0))
print(json.dumps({{"s": time.perf_counter() - t0}}))
"""
    with tempfile.TemporaryDirectory() as tmp:
        old = os.environ.get("NHCONTROL_CACHE_DIR")
        os.environ["NHCONTROL_CACHE_DIR"] = tmp
        try:
            return float(run_child(script)["s"])
        finally:
            if old is None:
                os.environ.pop("NHCONTROL_CACHE_DIR", None)
            else:
                os.environ["NHCONTROL_CACHE_DIR"] = old


def _load_average() -> list | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def _stats(v) -> dict:
    v = list(v)
    return {"median": statistics.median(v), "range": [min(v), max(v)]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("ball-plate", "robot"), default="ball-plate")
    parser.add_argument("--t-final", type=float, default=10.0, help="closed-loop length [s]")
    parser.add_argument("--backends", default="hpipm,qpoases")
    parser.add_argument("--skip-cold", action="store_true",
                        help="skip the cold-cache nhcontrol build (a fresh process)")
    parser.add_argument("--skip-acados", action="store_true",
                        help="only nhcontrol's closed loops (rti_step_s, mpc_step_s)")
    args = parser.parse_args(argv)
    out: dict = {"case": args.case}
    if not args.skip_acados:
        try:
            _require_acados()
        except _Skipped as exc:
            out["skipped"] = str(exc)
            print(json.dumps(out, indent=2))
            return out

    from nhcontrol.simulate import forward_dynamics

    case = _case(args.case, args.t_final)
    steps, dt = case["steps"], case["dt"]
    te = dt * np.arange(steps + 1)
    sim_kw = dict(rtol=1e-8, atol=1e-10, t_eval=te)
    rms = {}
    for name in ("rti", "mpc"):
        c = case[name]
        sim = forward_dynamics(case["plant"], (0.0, float(te[-1])), case["x0"], case["xd0"],
                               controller=c, **sim_kw)
        w = [h.solve_time for h in c.history[1:]]
        out[f"{name}_step_s"] = statistics.median(w)
        out[f"{name}_step_range_s"] = [min(w), max(w)]
        out[f"{name}_statuses"] = c.statuses
        rms[name] = _rms_error_mm(case, sim)
    if args.skip_acados:
        out["rms_error_mm"] = rms
        out["load_average"] = _load_average()
        print(json.dumps(out, indent=2))
        return out
    acados: dict = {}
    with tempfile.TemporaryDirectory(prefix="nh_acados_") as tmp:
        for backend in args.backends.split(","):
            try:
                ac = _Acados(case, backend, Path(tmp))
            except _Skipped as exc:
                acados[backend] = {"skipped": str(exc)}
                continue
            except Exception as exc:  # noqa: BLE001 - the renderer/compiler: report why
                acados[backend] = {"skipped": f"acados build failed: {type(exc).__name__}: "
                                              f"{str(exc)[:300]}"}
                continue
            sim = forward_dynamics(case["plant"], (0.0, float(te[-1])), case["x0"],
                                   case["xd0"], controller=ac, sample_time=dt, **sim_kw)
            acados[backend] = {"core_step_s": statistics.median(ac.core[1:]),
                               "core_step_range_s": [min(ac.core[1:]), max(ac.core[1:])],
                               "python_step_s": statistics.median(ac.whole[1:]),
                               "build_s": ac.build_s, "rms_error_mm": _rms_error_mm(case, sim),
                               "statuses": {str(k): v for k, v in ac.statuses.items()}}
    out["acados"] = acados
    ok = {b: v for b, v in acados.items() if "core_step_s" in v}
    if not ok:
        out["skipped"] = "; ".join(f"{b}: {v['skipped']}" for b, v in acados.items())
    else:
        best = min(ok, key=lambda b: ok[b]["core_step_s"])
        out["acados_backend"] = best
        out["acados_core_step_s"] = ok[best]["core_step_s"]
        out["acados_core_step_range_s"] = ok[best]["core_step_range_s"]
        out["acados_python_step_s"] = ok[best]["python_step_s"]
        out["ratio_acados_core_over_rti"] = out["acados_core_step_s"] / out["rti_step_s"]
        out["ratio_acados_core_over_mpc"] = out["acados_core_step_s"] / out["mpc_step_s"]
        out["rms_error_mm"] = {"rti": rms["rti"], "mpc": rms["mpc"],
                               **{f"acados_{b}": v["rms_error_mm"] for b, v in ok.items()}}
        vals = list(out["rms_error_mm"].values())
        out["tracking_rms_diff_mm"] = max(vals) - min(vals)
        out["acados_build_s"] = min(v["build_s"] for v in ok.values())
    if not args.skip_cold:
        out["nhcontrol_build_s"] = _nhcontrol_build(args.case)
        if "acados_build_s" in out:
            out["ratio_nhcontrol_build_over_acados"] = (out["nhcontrol_build_s"]
                                                        / out["acados_build_s"])
    out["load_average"] = _load_average()
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
