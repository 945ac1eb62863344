"""Benchmark: nhcontrol's RTI NMPC and LTV-MPC against acados' compiled SQP_RTI on the same
problem, each in its own closed loop (prints JSON).

Run ``python benchmarks/peer_acados.py [--case ball-plate|robot|both] [--t-final T]
[--backends hpipm,qpoases] [--skip-acados] [--skip-cold] [--rk4-steps M] [--rti-rk4 M1,M2]
[--acados-dir DIR] [--no-shift] [--rounds R]``. ``--case both`` runs the two problems one after
the other and prints ``{"ball-plate": {...}, "robot": {...}}``. The closed loops run in ``R``
rounds (default 3): each round runs every controller's whole loop once, in turn (nhcontrol's
RTI and LTV-MPC, then acados' back-ends; each starts afresh, and a loop repeats its inputs
exactly), so that a slower spell of a shared machine falls on all of them alike; the step
times are medians over the samples of all rounds. ``--skip-acados``: only nhcontrol's two
loops (``rti_step_s``, ``mpc_step_s``, RMS errors) and, without ``--skip-cold``, its cold
build. Needs the optional ``peers`` extra and
acados' Python interface with its template renderer (the acados wheel of the package index,
``pip install comma-deps-acados``); without them it prints ``{"skipped": reason}``. acados'
generated code is written into a temporary directory and deleted afterwards, unless
``--acados-dir DIR`` keeps it there: a later run reuses a solver whose problem hash matches
(the discrete dynamics, dimensions, cost, constraints, options and versions) and reports the
build time measured when it was built (``acados_build_cached: true``, with that build's load).
The acados wheel (0.2.2.post92) also installs a reduced CasADi 3.6 as a top-level ``casadi``
package, which shadows a full CasADi and lacks the linear-solver plugins ``to_casadi`` needs
(``libcasadi_linsol_qr.so``): move that folder out of the environment's ``site-packages`` so
that the full CasADi (3.8 works with acados' templates) is imported; the script sets
``ACADOS_SOURCE_DIR``, ``ACADOS_PYTHON_INTERFACE_PATH`` and ``TERA_PATH`` from the wheel's
``acados`` module and preloads its libraries. acados is therefore not part of the ``peers``
extra.

Problems (horizon N = 20):

* ``ball-plate`` — the case of ``nhcontrol reproduce nmpc``: the ball-plate circle (thesis
  Ch. 8, ``φ0 = 5°``, ``h = T/125``), plant ball 10 % larger (the same kernels with the
  plant's ``R`` and ``I = 2/5 m R²``), 5 cm radial offset, ``|α|, |β| ≤ 10°``, ``0.5°`` per
  sample, ``Q = diag(0, 0, 0, 0, 0.1, 0.1, 10⁴, 10⁴)``, ``R = 10³ I``, the Riccati terminal
  weight ``P_{k+N}`` of the reference's linearization;
* ``robot`` — the two-wheeled self-balancing robot of `nhcontrol.models.self_balancing_robot`
  (9 states, 2 wheel torques, 3 nonholonomic constraints) tracking a 2 m circle at 0.5 m/s,
  ``h = 0.02 s``, from a 5 cm lateral offset, ``|T| ≤ 3 N m``, ``0.3 N m`` per sample.

acados is given the CasADi model of ``nhcontrol.interop.to_casadi`` (``f_sx``, the same
minimal-state dynamics), ``M`` explicit RK4 steps per sample (``--rk4-steps``, default 1)
written as discrete dynamics (the previous input appended to its state for the rate bounds),
linear least-squares cost with the same weights and the same time-varying terminal weight,
SQP_RTI with Gauss-Newton Hessian and either PARTIAL_CONDENSING_HPIPM or
FULL_CONDENSING_QPOASES, the same first guess (the reference) and, like nhcontrol's RTI, the
last iterate shifted by one sample as the next linearization trajectory, linearized at the
measured state (``--no-shift``: acados' default, the last iterate as it is).

The same problem. acados multiplies every stage cost by its shooting interval (the cost
module's ``scaling``, here ``dt``) and the terminal cost by 1; its stage weight is therefore
``W = 2 diag(Q, R)/dt``. Without that factor the terminal weight ``P_{k+N}`` was ``1/dt``
times heavier than nhcontrol's (50 on the robot): on the robot acados' loop then tracked with
9.01 mm RMS against nhcontrol's 10.13 mm (the 1.18 mm difference once reported), on the
ball-plate (``1/dt`` ≈ 20) within 0.04 mm. With the factor, acados' first plan equals that of
nhcontrol's RTI with acados' prediction to 1e-8. What remains is the discretisation: nhcontrol's
RTI predicts with the exponential-Euler step ``X̄ + φ₁(A h) h f`` and ``Φ = exp(A h)`` of the
exact linearization, acados with RK4. ``--rti-rk4 M`` runs nhcontrol's RTI with acados'
``M``-step RK4 prediction (CasADi's exact derivatives of the scheme) and everything else
unchanged (key ``discretisation_rms_error_mm``). Measured (10 s loops, ``--rti-rk4 1,4``):

| RMS tracking error (mm) | exponential Euler | RK4, 1 step | RK4, 4 steps | acados (HPIPM / qpOASES) |
|---|---|---|---|---|
| robot | 10.13485 | 10.13494 | 10.13494 | 10.13494 / 10.13494 |
| ball-plate | 18.6762 | 18.7829 | 18.7829 | 18.7829 / 18.7720 |

acados' loop is nhcontrol's RTI with RK4 prediction (to 1e-8 mm on the robot; on the
ball-plate qpOASES ends 0.01 mm lower), RK4 has converged at one step per sample (four steps
change the RMS by 2e-5 mm; acados itself with ``--rk4-steps 4``, qpOASES: 18.7722 mm, its
build about ten times the CPU time), and what separates acados from nhcontrol's RTI is the
discretisation of the prediction: 1e-4 mm on the robot, 0.11 mm on the ball-plate, whose plant
(the larger ball) is not the prediction model. ``tracking_rms_diff_mm`` (the largest
difference over the four loops) also holds the difference between nhcontrol's RTI and its
LTV-MPC (0.06 mm on the robot).

Keys: ``acados_core_step_s`` (median of acados' ``time_tot``, the faster back-end: integration,
sensitivities, condensing, QP), ``acados_python_step_s`` (the whole step from Python, its
``set``/``get`` calls included), ``rti_step_s``, ``mpc_step_s`` (nhcontrol's samples timed from
outside the call; ``*_statuses`` count the samples of all rounds),
``ratio_acados_core_over_rti``, ``ratio_acados_core_over_mpc`` (goal ≥ 1;
``..._rounds``: the same ratio of each round's medians; ``*_round_medians_s``: those medians),
``tracking_rms_diff_mm`` (largest difference of the RMS tracking errors of the loops, goal ≤
0.3), ``acados_build_s`` and ``acados_build_cpu_s`` (code generation and compilation, the
compiler's CPU included), ``nhcontrol_build_s`` and ``nhcontrol_build_cpu_s`` (a fresh process
with an empty cache directory, nhcontrol as installed, its sources compiled to bytecode
beforehand as ``pip install`` does: imports, model derivation, kernel generation and
compilation, both controllers, first step; goal ≤ 10 % of acados'; nhcontrol's
model-independent routine libraries, Steps 1–7, the MPC condensing and the RTI core, come
compiled with the installation when ``setup.py`` found a compiler, as acados' solver libraries
come compiled with acados, and ``nhcontrol_routines_installed`` says whether they did),
``nhcontrol_build_unshipped_s`` and its keys (the same with those libraries ignored,
``NHCONTROL_SHIPPED_ROUTINES=0``: the process compiles them too, as after an installation
without a compiler), ``nhcontrol_build_generic_cached_s`` and its keys (ignored, but built
into the cache directory beforehand in a process of their own, untimed, as they stay in a
user's cache after the first model; the runs of the three kinds alternate, and run between
acados' two builds, so that the faster of those, ``acados_build_s``, falls in the same spell of
the machine),
``nhcontrol_build_after_imports_s`` and ``..._cpu_s`` (the same process after importing
NumPy, SciPy, SymPy and nhcontrol's modules: like ``acados_build_s``, which starts after its
imports and after ``to_casadi``'s export), ``ratio_nhcontrol_build_over_acados`` (wall),
``ratio_nhcontrol_build_after_imports_over_acados`` (the same with both clocks started after
the imports: the like-for-like ratio; the goal is read on the stricter one, imports charged to
nhcontrol only), ``ratio_nhcontrol_build_unshipped_over_acados``,
``ratio_nhcontrol_build_generic_cached_over_acados`` and ``..._cpu`` (CPU: less sensitive to
the load of a shared machine), each step time with its range (``*_range_s``), and
``load_average`` (at the end; acados' builds carry their own);
``nhcontrol_build_error`` when a cold-build process failed (the other keys are still given).
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
        # the plant: the same kernels with the larger ball's parameters (R, I = 2/5 m R²)
        R1 = 1.1 * bp.DEFAULTS["R"]
        plant_p = {"R": R1, "I": 0.4 * bp.DEFAULTS["m"] * R1 ** 2}
        x0, xd0 = bp.initial_conditions(cm, 5.0, eps_x=0.05, eps_y=0.0, eps_psi_deg=0.0,
                                        eps_theta_deg=0.0, eps_vx=0.0, eps_vy=0.0, eps_wpsi=0.0)
        ic = consistent_initial_conditions(cm, x0, xd0, independent=("x_C", "y_C", "psi"),
                                           p=plant_p)
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
        build = bp.build
    elif name == "robot":
        from nhcontrol.models import self_balancing_robot as sbr

        cm = sbr.model()
        plant_p = None
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
        build = sbr.build
        del ns
    else:
        raise ValueError(f"unknown case {name!r}: 'ball-plate' or 'robot'")

    def make_rti(cls=NMPCController):
        return cls(cm, ref, part, HORIZON, Q, R, dt=dt, steps=steps + 1, u_min=-b, u_max=b,
                   du_min=-r, du_max=r)
    return dict(name=name, cm=cm, plant_p=plant_p, ref=ref, dt=dt, x0=x0, xd0=xd0, part=part, Q=Q,
                R=R, b=b, r=r, steps=steps, rti=make_rti(), make_rti=make_rti, mpc=mpc,
                track=track, build=build)


def _rk4_rti(case: dict, rk4_steps: int):
    """nhcontrol's RTI controller with acados' prediction instead of its own: the node map
    ``F(X̄_j, ū_j)`` and its Jacobians ``Φ_j, Γ_j`` from ``rk4_steps`` RK4 steps of
    ``to_casadi``'s ``f`` (CasADi's exact derivatives of the scheme), everything else (QP, cost,
    terminal weight, bounds, initial guess, shifts) unchanged: it separates the discretisation
    from the rest of the problem."""
    import casadi as ca
    from nhcontrol.design import NMPCController
    from nhcontrol.interop import to_casadi

    cs = to_casadi(case["build"](), case["part"], x_guess=case["ref"].x(0.0))
    ns, k, N = cs.nstates, cs.ninputs, HORIZON
    X, U = ca.SX.sym("X", ns), ca.SX.sym("u", k)
    Xn = _rk4(cs, X, U, ca.DM(np.asarray(cs.p, float)), case["dt"], rk4_steps)
    fn = ca.Function("rk4", [X, U], [Xn, ca.jacobian(Xn, X), ca.jacobian(Xn, U)]).map(N)

    class RK4RTI(NMPCController):
        def _model(self, ts, X, U, xguess):
            x, _ = self._admissible(X, xguess, U)      # full coordinates: the next guesses
            F, Phi, Gam = fn(X.T, U.T)
            Phi = np.asarray(Phi).reshape(ns, N, ns).transpose(1, 0, 2)
            Gam = np.asarray(Gam).reshape(ns, N, k).transpose(1, 0, 2)
            return Phi, Gam, np.asarray(F).T, x
    return case["make_rti"](RK4RTI)


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

    def __init__(self, case: dict, backend: str, workdir: Path, rk4_steps: int = 1,
                 cache_dir: Path | None = None, shift: bool = True) -> None:
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
        cs = to_casadi(case["build"](), case["part"], x_guess=ref.x(0.0))
        if cs.f_sx is None:
            raise _Skipped("to_casadi gives no SX graph for this model (holonomic constraints)")
        self.cs, self.case = cs, case
        ns, k = cs.nstates, cs.ninputs
        X, U, Up = ca.SX.sym("X", ns), ca.SX.sym("u", k), ca.SX.sym("u_prev", k)
        p = ca.DM(np.asarray(cs.p, float))

        Xn = _rk4(cs, X, U, p, dt, rk4_steps)                  # RK4 steps per sample
        model = AcadosModel()
        model.name = f"nh_{case['name'].replace('-', '_')}_{backend}_rk{rk4_steps}"
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
        # acados multiplies each stage cost by its shooting interval (the cost module's
        # "scaling", the time step dt of this discrete model) and the terminal cost by 1:
        # W = 2 diag(Q, R)/dt gives nhcontrol's stage cost (without the 1/dt the terminal
        # weight was 1/dt times heavier than nhcontrol's)
        ocp.cost.W = 2.0 / dt * np.block([[case["Q"], np.zeros((ns, k))],
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
        self.build_cached, self.build_load = False, None
        meta = None
        key = None
        if cache_dir is not None:
            # a build of this very problem (same dynamics, data, options, acados) is reused
            key = _problem_key(ocp)
            workdir = Path(cache_dir).resolve() / model.name
            meta = workdir / "nh_build.json"
            if workdir.exists() and (not meta.exists()
                                     or json.loads(meta.read_text()).get("key") != key):
                shutil.rmtree(workdir)             # another problem, or an interrupted build
            workdir.mkdir(parents=True, exist_ok=True)
        ocp.code_export_directory = str(workdir / f"c_generated_code_{backend}")
        json_file = str(workdir / f"ocp_{backend}.json")
        cwd = os.getcwd()
        os.chdir(workdir)
        try:
            with contextlib.redirect_stdout(sys.stderr):       # acados prints; JSON is ours
                if meta is not None and meta.exists():
                    rec = json.loads(meta.read_text())
                    self.solver = AcadosOcpSolver(ocp, json_file=json_file, generate=False,
                                                  build=False, verbose=False)
                    self.build_s, self.build_load = rec["build_s"], rec["load_average"]
                    self.build_cpu_s = rec.get("build_cpu_s")           # None: not recorded
                    self.build_cached = True
                else:
                    t0, c0 = time.perf_counter(), os.times()
                    self.solver = AcadosOcpSolver(ocp, json_file=json_file, verbose=False)
                    self.build_s = time.perf_counter() - t0
                    self.build_cpu_s = sum(os.times()[:4]) - sum(c0[:4])   # compilers too
                    self.build_load = _load_average()
                    if meta is not None:
                        meta.write_text(json.dumps({"key": key, "build_s": self.build_s,
                                                    "build_cpu_s": self.build_cpu_s,
                                                    "load_average": self.build_load}))
        finally:
            os.chdir(cwd)
        self.ns, self.k = ns, k
        self.shift, self.plan = bool(shift), None
        self.core, self.whole = [], []
        self.statuses: dict[int, int] = {}
        self.u_prev = None
        self.schedule = case["rti"].schedule
        self.idx = _partition_indices(cm, case["part"])

    def reset(self) -> None:
        """A fresh loop: the reference as the first guess again, no timings, no statuses."""
        self.plan, self.u_prev = None, None
        self.core, self.whole = [], []
        self.statuses = {}

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
        elif self.shift:                 # the last iterate shifted by one sample, its last
            xs, us = self.plan           # node repeated (as NMPCController does)
            for j in range(1, N + 1):
                s.set(j, "x", xs[min(j + 1, N)])
            for j in range(N):
                s.set(j, "u", us[min(j + 1, N - 1)])
        if self.shift:                   # linearized at the measured state (X̄_0 = X_0)
            s.set(0, "x", x0)
        s.set(0, "lbx", x0)
        s.set(0, "ubx", x0)
        for j in range(N):
            s.set(j, "yref", np.concatenate([Xr[j], ur[j]]))
        s.set(N, "yref", Xr[N])
        s.cost_set(N, "W", 2.0 * self.schedule.P(kk + N))
        status = int(s.solve())
        self.statuses[status] = self.statuses.get(status, 0) + 1
        u = np.asarray(s.get(0, "u"), float)
        if self.shift:
            self.plan = ([s.get(j, "x") for j in range(N + 1)], [s.get(j, "u") for j in range(N)])
        self.core.append(float(np.ravel(s.get_stats("time_tot"))[0]))
        self.u_prev = u
        self.whole.append(time.perf_counter() - w0)
        return u


def _rk4(cs, X, U, p, dt: float, steps: int):
    """``steps`` explicit RK4 steps of ``Ẋ = f(X, u)`` over one sample ``dt`` (CasADi SX)."""
    h = dt / steps
    for _ in range(steps):
        k1 = cs.f_sx(X, U, p)
        k2 = cs.f_sx(X + h / 2 * k1, U, p)
        k3 = cs.f_sx(X + h / 2 * k2, U, p)
        k4 = cs.f_sx(X + h * k3, U, p)
        X = X + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return X


def _problem_key(ocp) -> str:
    """Hash of what acados' generated solver depends on (for ``--acados-dir``): the discrete
    dynamics (CasADi's serialization), dimensions, cost, constraints, solver options and the
    versions of acados, CasADi and Python."""
    import hashlib
    from importlib import metadata

    import casadi as ca

    h = hashlib.sha256()

    def put(v) -> None:
        if isinstance(v, np.ndarray):
            h.update(repr((v.shape, str(v.dtype))).encode())
            h.update(np.ascontiguousarray(v).tobytes())
        else:
            h.update(repr(v).encode())
        h.update(b"\0")
    for dist in ("comma-deps-acados", "acados_template", "casadi"):
        try:
            put(f"{dist}={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            put(dist)
    put(sys.version)
    m = ocp.model
    put(m.name)
    put(ca.Function("dyn", [m.x, m.u], [m.disc_dyn_expr]).serialize())
    for part in (ocp.dims, ocp.cost, ocp.constraints, ocp.solver_options):
        for name, v in sorted(vars(part).items()):
            if "code_export" not in name:
                put(name)
                put(np.asarray(v) if isinstance(v, (np.ndarray, list)) else v)
    return h.hexdigest()


_GENERIC_ROUTINES = """
import json
import nhcontrol.design
from nhcontrol.compiled import cache
from nhcontrol.design import _ccondense, _crti
from nhcontrol.linearization import _cpoint
d = cache.trusted_dir(None)
print(json.dumps([_cpoint._library(d) is not None, _ccondense.condense_library(d) is not None,
                  _crti.rti_library(d) is not None]))
"""
"""Builds nhcontrol's model-independent routine libraries (Steps 1-7, the MPC condensing, the
RTI core) into the cache directory of ``NHCONTROL_CACHE_DIR``: what acados ships compiled."""


BUILD_KINDS = ("installed", "unshipped", "generic")
"""The cold builds timed: ``installed`` (nhcontrol as installed: its model-independent routine
libraries compiled by ``setup.py`` when they could be), ``unshipped`` (those ignored,
``NHCONTROL_SHIPPED_ROUTINES=0``: the process compiles them too, as after an installation
without a compiler) and ``generic`` (ignored, but built into the cache beforehand)."""


def _nhcontrol_build(case: str, kind: str = "installed") -> dict:
    """A fresh process, empty model cache: model, both controllers, first step (wall and CPU
    seconds, the CPU of the compiler processes included). nhcontrol's sources are compiled to
    bytecode first, untimed, as ``pip install`` does. ``kind`` (`BUILD_KINDS`): with the
    routine libraries installed with nhcontrol; without them (the process compiles them into
    its cache); without them but with the cache directory holding them, built beforehand,
    untimed, in a process of their own (as they stay in a user's cache after the first
    model)."""
    if kind not in BUILD_KINDS:
        raise ValueError(f"kind={kind!r}: use one of {BUILD_KINDS}")
    script = f"""
import json, os, sys, time
t0, c0 = time.perf_counter(), os.times()
sys.argv = ["x"]
import peer_acados as pa
import numpy, scipy.linalg, sympy                     # the libraries a cold build needs
import nhcontrol.design, nhcontrol.systems, nhcontrol.reference
import nhcontrol.models.{ {"ball-plate": "ball_plate", "robot": "self_balancing_robot"}[case] }
t1, c1 = time.perf_counter(), os.times()
c = pa._case({case!r}, 0.2)
cm, x0, xd0 = c["cm"], c["x0"], c["xd0"]
c["rti"].control(0.0, list(x0) + list(xd0))
c["mpc"].control(0.0, list(x0) + list(xd0))
t2, c2 = time.perf_counter(), os.times()
print(json.dumps({{"s": t2 - t0, "cpu": sum(c2[:4]) - sum(c0[:4]),
                  "s_after_imports": t2 - t1, "cpu_after_imports": sum(c2[:4]) - sum(c1[:4])}}))
"""
    import nhcontrol

    run_child(f"import compileall, json; compileall.compile_dir("
              f"{os.path.dirname(nhcontrol.__file__)!r}, quiet=1); print(json.dumps({{}}))")
    with tempfile.TemporaryDirectory() as tmp:
        env = {"NHCONTROL_CACHE_DIR": tmp,
               "NHCONTROL_SHIPPED_ROUTINES": None if kind == "installed" else "0"}
        if kind == "generic" and not all(run_child(_GENERIC_ROUTINES, env=env)):
            raise RuntimeError("the model-independent routine libraries could not be built")
        return run_child(script, env=env)


def _routines_installed() -> bool:
    """Whether this installation of nhcontrol holds its three routine libraries (``setup.py``
    compiled them) and uses them (``NHCONTROL_SHIPPED_ROUTINES`` is not ``0``)."""
    from nhcontrol.compiled import cbackend
    from nhcontrol.design import _ccondense, _crti
    from nhcontrol.linearization import _cpoint

    return all(cbackend.shipped_routine(m.library_file("/")) is not None
               for m in (_cpoint, _ccondense, _crti))


def _load_average() -> list | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("ball-plate", "robot", "both"), default="ball-plate")
    parser.add_argument("--t-final", type=float, default=10.0, help="closed-loop length [s]")
    parser.add_argument("--backends", default="hpipm,qpoases")
    parser.add_argument("--skip-cold", action="store_true",
                        help="skip the cold-cache nhcontrol build (a fresh process)")
    parser.add_argument("--skip-acados", action="store_true",
                        help="only nhcontrol's closed loops (rti_step_s, mpc_step_s)")
    parser.add_argument("--rk4-steps", type=int, default=1,
                        help="acados' explicit RK4 steps per sample (default 1)")
    parser.add_argument("--rti-rk4", default="",
                        help="comma-separated RK4 step counts M: also run nhcontrol's RTI with "
                             "acados' M-step RK4 prediction (key discretisation_rms_error_mm)")
    parser.add_argument("--no-shift", action="store_true",
                        help="acados warm-started from its last iterate as it is (acados' "
                             "default) instead of shifted by one sample like nhcontrol's RTI")
    parser.add_argument("--acados-dir", default=None,
                        help="keep acados' generated solvers here and reuse one whose problem "
                             "hash matches (its build time is the one measured when it was "
                             "built; default: a temporary directory, always a cold build)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="closed loops per controller, in turns (medians over all samples)")
    parser.add_argument("--cold-repeat", type=int, default=3,
                        help="fresh processes timing nhcontrol's cold build (median, range)")
    args = parser.parse_args(argv)
    if args.rk4_steps < 1:
        parser.error("--rk4-steps must be a positive integer")
    if args.cold_repeat < 1:
        parser.error("--cold-repeat must be a positive integer")
    if args.rounds < 1:
        parser.error("--rounds must be a positive integer")
    if args.case == "both":
        out = {name: _run(args, name) for name in ("ball-plate", "robot")}
    else:
        out = _run(args, args.case)
    print(json.dumps(out, indent=2))
    return out


def _run(args, name: str) -> dict:
    """The JSON record of one problem."""
    out: dict = {"case": name}
    if not args.skip_acados:
        try:
            _require_acados()
        except _Skipped as exc:
            out["skipped"] = str(exc)
            return out

    from nhcontrol.simulate import forward_dynamics

    case = _case(name, args.t_final)
    steps, dt = case["steps"], case["dt"]
    te = dt * np.arange(steps + 1)
    sim_kw = dict(rtol=1e-8, atol=1e-10, t_eval=te, p=case["plant_p"])

    def loop(controller, **kw):
        return forward_dynamics(case["cm"], (0.0, float(te[-1])), case["x0"], case["xd0"],
                                controller=controller, **sim_kw, **kw)
    # nhcontrol's cold build: fresh processes, each with an empty model cache (as installed,
    # without the installed routine libraries, and with them in the cache: in turn), between
    # acados' two builds, so that the faster of those is timed in the same spell of the machine
    builds: dict = {kind: [] for kind in BUILD_KINDS}

    def cold_builds() -> None:
        if args.skip_cold:
            return
        out["nhcontrol_routines_installed"] = _routines_installed()
        try:
            for _ in range(args.cold_repeat):
                for kind in BUILD_KINDS:
                    builds[kind].append(_nhcontrol_build(out["case"], kind))
        except Exception as exc:  # noqa: BLE001 - a failed child: the rest is still reported
            out["nhcontrol_build_error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
    backends = [] if args.skip_acados else args.backends.split(",")
    if len(backends) < 2:
        cold_builds()
    acados: dict = {}
    solvers: dict = {}
    cache = None if args.acados_dir is None else Path(args.acados_dir)
    with tempfile.TemporaryDirectory(prefix="nh_acados_") as tmp:
        for i, backend in enumerate(backends):
            try:
                solvers[backend] = _Acados(case, backend, Path(tmp), rk4_steps=args.rk4_steps,
                                           cache_dir=cache, shift=not args.no_shift)
            except _Skipped as exc:
                acados[backend] = {"skipped": str(exc)}
            except Exception as exc:  # noqa: BLE001 - the renderer/compiler: report why
                acados[backend] = {"skipped": f"acados build failed: {type(exc).__name__}: "
                                              f"{str(exc)[:300]}"}
            if i == 0 and len(backends) >= 2:
                cold_builds()
        # the closed loops, in rounds: each round runs every controller's whole loop once, in
        # turn (nhcontrol's RTI and LTV-MPC, then acados' back-ends), so that a slower spell of
        # a shared machine falls on all of them alike; a controller starts each loop afresh
        times: dict = {loop_name: [] for loop_name in ("rti", "mpc", *solvers)}
        rms: dict = {}
        for rnd in range(args.rounds):
            for loop_name in ("rti", "mpc"):
                c = case[loop_name]
                c.reset()
                sim = loop(c)
                times[loop_name].append([h.solve_time for h in c.history[1:]])
                counts = out.setdefault(f"{loop_name}_statuses", {})   # (over all rounds)
                for key, v in c.statuses.items():
                    counts[key] = counts.get(key, 0) + v
                if rnd == 0:
                    rms[loop_name] = _rms_error_mm(case, sim)
            for backend, ac in solvers.items():
                ac.reset()
                sim = loop(ac, sample_time=dt)
                times[backend].append(ac.core[1:])
                if rnd == 0:
                    acados[backend] = {"build_s": ac.build_s, "build_cpu_s": ac.build_cpu_s,
                                       "build_cached": ac.build_cached,
                                       "build_load_average": ac.build_load,
                                       "rms_error_mm": _rms_error_mm(case, sim),
                                       "statuses": {},
                                       "python_step_s": statistics.median(ac.whole[1:])}
                counts = acados[backend]["statuses"]                      # (over all rounds)
                for key, v in ac.statuses.items():
                    counts[str(key)] = counts.get(str(key), 0) + v
    out["rounds"] = args.rounds
    for loop_name in ("rti", "mpc"):
        w = [v for r in times[loop_name] for v in r]
        out[f"{loop_name}_step_s"] = statistics.median(w)
        out[f"{loop_name}_step_range_s"] = [min(w), max(w)]
        out[f"{loop_name}_step_round_medians_s"] = [statistics.median(r)
                                                    for r in times[loop_name]]
    if args.rti_rk4:
        disc = {"rti_exponential_euler": rms["rti"]}
        for m in (int(v) for v in args.rti_rk4.split(",")):
            c = _rk4_rti(case, m)
            sim = loop(c)
            disc[f"rti_rk4_{m}"] = _rms_error_mm(case, sim)
        out["discretisation_rms_error_mm"] = disc
    stems = ((builds["installed"], "nhcontrol_build"),
             (builds["unshipped"], "nhcontrol_build_unshipped"),
             (builds["generic"], "nhcontrol_build_generic_cached"))
    for runs, stem in stems:
        if not runs:
            continue
        for key, field in ((f"{stem}_s", "s"), (f"{stem}_cpu_s", "cpu"),
                           (f"{stem}_after_imports_s", "s_after_imports"),
                           (f"{stem}_after_imports_cpu_s", "cpu_after_imports")):
            v = [c[field] for c in runs]
            out[key] = statistics.median(v)
            out[key[:-2] + "_range_s"] = [min(v), max(v)]
    if args.skip_acados:
        out["rms_error_mm"] = rms
        out["load_average"] = _load_average()
        return out
    for backend in solvers:
        w = [v for r in times[backend] for v in r]
        acados[backend].update(core_step_s=statistics.median(w),
                               core_step_range_s=[min(w), max(w)],
                               core_step_round_medians_s=[statistics.median(r)
                                                          for r in times[backend]])
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
        # the same ratios round by round (each round's medians: controllers run back to back)
        for loop_name in ("rti", "mpc"):
            out[f"ratio_acados_core_over_{loop_name}_rounds"] = [
                a / b for a, b in zip(ok[best]["core_step_round_medians_s"],
                                      out[f"{loop_name}_step_round_medians_s"])]
        out["rms_error_mm"] = {"rti": rms["rti"], "mpc": rms["mpc"],
                               **{f"acados_{b}": v["rms_error_mm"] for b, v in ok.items()}}
        vals = list(out["rms_error_mm"].values())
        out["tracking_rms_diff_mm"] = max(vals) - min(vals)
        fastest = min(ok, key=lambda b: ok[b]["build_s"])
        out["acados_build_s"] = ok[fastest]["build_s"]
        out["acados_build_cpu_s"] = ok[fastest]["build_cpu_s"]
        out["acados_build_cached"] = ok[fastest]["build_cached"]
        out["acados_build_load_average"] = ok[fastest]["build_load_average"]
        out["acados_rk4_steps"] = args.rk4_steps
        out["acados_shifted_guess"] = not args.no_shift
    for runs, stem in stems:
        if not runs:
            continue
        if "acados_build_s" in out:
            out[f"ratio_{stem}_over_acados"] = out[f"{stem}_s"] / out["acados_build_s"]
            # both clocks started after the imports (acados' after casadi, its template and
            # to_casadi's export; nhcontrol's after NumPy, SciPy, SymPy and its modules)
            out[f"ratio_{stem}_after_imports_over_acados"] = (out[f"{stem}_after_imports_s"]
                                                              / out["acados_build_s"])
        if out.get("acados_build_cpu_s"):
            out[f"ratio_{stem}_over_acados_cpu"] = (out[f"{stem}_cpu_s"]
                                                    / out["acados_build_cpu_s"])
    out["load_average"] = _load_average()
    return out

if __name__ == "__main__":
    main()
