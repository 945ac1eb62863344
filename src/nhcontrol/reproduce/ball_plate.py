"""Reproduce thesis Ch. 8: the ball on a tilting plate tracking a circle (Sects. 8.4.2–8.4.5).

``nhcontrol reproduce ball-plate [--json] [--out DIR] [--quick]``

Pipeline: model and circular reference (``nhcontrol.models.ball_plate``, Eqs. (8.62)–(8.71)) →
exact linearization (third procedure, Eq. (8.74)) → controllability (Gramian (8.85),
Silverman–Meadows (8.86)–(8.87)) → zero-order-hold discretization → finite-horizon LQR and
LTV-MPC (``nhcontrol.design``) → closed loop on the **nonlinear** model (discrete controller,
zero-order hold on the plant) from the initial deviations of Eqs. (8.89)–(8.92), and the same
loop on the linear model.

Two formulations are run:

* the **8-state formulation** of Eq. (8.74) (the "first coordinate partition" of Figs. 8.2–8.5):
  uncontrollable (Gramian rank 7). The spin of the ball about the plate normal,
  ``ω_n = ψ̇ + θ̇ sin φ``, is a first integral; the initial deviation of Eq. (8.92) changes it, so the
  lean angle cannot return to φ0 and, at φ0 = 35°, the contact point misses the circle;
* the **controllable formulation** (7 states, the spin direction removed,
  ``ball_plate_ltv.controllable_formulation``). It regulates the motion on the manifold of the
  *measured* spin: since ``ω_n`` cannot be changed by any input, the reference is taken in the
  family of circular motions with the same circle, rate and plate angles, and the lean angle
  ``φ0*`` that has the measured spin (``ball_plate.spin_matched_motion``). The contact-point
  reference and ``u0(t)`` do not depend on φ0 (Eq. (8.70): ``IΩ cos φ0 = Iρω/R``), so the contact
  point is regulated to the *same* circle.

Tracking is regulation of the deviation (``docs/theory/lqr_mpc.md``): at ``t_k`` the controller
takes ``δX̃_k`` from ``ball_plate.deviation`` and applies ``u = u0(t_k + dt/2) + δu_k`` until
``t_{k+1}``. The feed-forward is taken at mid-sample: the held value then equals the mean of
``u0`` over the sample to O(dt²), whereas ``u0(t_k)`` would inject an O(dt) input error that the
ZOH linear model does not contain (with ``u0(t_k)`` the nonlinear and linear loops differ by a
deviation-independent 0.6 mm of contact-point position at dt ≈ 0.05 s).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from numpy.typing import NDArray
from . import ball_plate_ltv as bpl

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["run", "summary", "Settings", "contact_error", "TRANSIENT_S",
           "ClosedLoop", "closed_loop_nonlinear", "closed_loop_linear", "lqr_gains"]

PHI0_DEG = (5.0, 35.0)
"""Lean angles of the thesis (degrees), Sect. 8.4.5."""
MPC_BOUND_DEG = 10.0
"""Input bound of the MPC (degrees) on |α| and |β|."""
MPC_RATE_BOUND_DEG = 2.0
"""Bound of the MPC on the input step per sample, |u_k − u_{k−1}| (degrees; ≈ 40°/s at the
published sampling period). Measured on the nonlinear loop from the deviations of Eq. (8.92),
φ0 = 5° (``docs/theory/ball_plate.md``, Sect. 7): with 0.5° per sample the rate bound is active
on 31–38 of the 40 rate constraints of the window through the first 1.2 s, the plate reaches
only 7° and the contact point, converging to the moving reference point, crosses the circle
and is 84 mm outside it at t ≈ 0.8 s; with 2° it is 20 mm, and from t = 3 s on the MPC's error
equals the LQR's (the constraints are inactive and the two laws coincide)."""
TRANSIENT_S = 3.0
"""End of the transient for the comparisons "after the transient" [s] (keys
``max_error_after_transient_m``, ``rms_error_after_transient_m``)."""


@dataclass(frozen=True)
class Settings:
    """Numerical settings of the reproduction (the defaults are the published run).

    Attributes
    ----------
    t_final : float
        Simulated time [s] (the headline numbers are "after 20 s").
    steps_per_period : int
        Samples per period ``2π/ω`` of the reference; ``dt = period / steps_per_period``
        (≈ 0.05 s), so the discrete LTV sequence is exactly periodic.
    q_angle, q_rate, q_contact, r_input : float
        LQR/MPC weights: ``Q = diag(q_angle (ψ̃, φ̃, θ̃), q_rate (rates), q_contact (x̃_C, ỹ_C))``
        [1/rad², s²/rad², 1/m²], ``R = r_input I`` [1/rad²]. The thesis does not print its
        weights; with these the unconstrained LQR tilts the plate up to ~18° for the 10 cm
        initial error, so the MPC bound of 10° is active.
    tail_periods : int
        Extra periods of the finite-horizon LQR beyond ``t_final``. The gains approach those of
        the periodic regulator geometrically with the periods left (default weights: the
        per-period gain change falls ≈11x per period for the 7-state formulation, ≈3.4x for the
        8-state one, ``tests/test_ball_plate_discrete.py``), so with 3 tail periods the gains at
        ``t_final`` differ from the periodic ones by ≈2e-4 (7 states) and ≈2e-3 (8 states) of
        ``|K|``, and by less at earlier times.
    mpc_horizon : int
        MPC horizon ``N`` [steps].
    rtol, atol : float
        Tolerances of the nonlinear integration (DOP853).
    output_points : int
        Samples of the stored trajectories.
    linear_check_scale : float
        Scale of the initial deviations (8.92) for the linear-vs-nonlinear comparison.
    """

    t_final: float = 20.0
    steps_per_period: int = 125
    q_angle: float = 1.0
    q_rate: float = 0.1
    q_contact: float = 1e4
    r_input: float = 1e3
    tail_periods: int = 3
    mpc_horizon: int = 20
    rtol: float = 1e-8
    atol: float = 1e-10
    output_points: int = 401
    linear_check_scale: float = 0.05


QUICK = Settings(t_final=20.0, steps_per_period=125, mpc_horizon=10, rtol=1e-6, atol=1e-8,
                 output_points=201, tail_periods=2)
"""``--quick``: shorter MPC horizon and looser integration tolerances, but the published sampling
period (a coarser one makes the LQR plate angles peak near 90 deg).
"""


@dataclass(frozen=True)
class ClosedLoop:
    """One closed-loop (or open-loop) run, sampled on ``t``.

    Attributes
    ----------
    t : (M,) ndarray
    x, xd : (M, 5) ndarray
        Coordinates ``[x_C, y_C, ψ, φ, θ]`` and velocities (for a linear run: reference plus
        the linear deviation).
    t_u : (K,) ndarray
        Sample instants of the controller.
    u : (K, 2) ndarray
        Applied plate angles ``[α, β]`` [rad], held on ``[t_k, t_{k+1})``.
    step_times : (K,) ndarray
        Seconds per controller evaluation (QP solve for MPC).
    statuses : tuple of str
        MPC statuses (empty for LQR).
    """

    t: NDArray[np.float64]
    x: NDArray[np.float64]
    xd: NDArray[np.float64]
    t_u: NDArray[np.float64]
    u: NDArray[np.float64]
    step_times: NDArray[np.float64]
    statuses: tuple[str, ...] = ()


def contact_error(motion: Any, x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Distance of the contact point to the circle, ``| ‖r_C − r_A‖ − ρ |`` [m], shape (M,)."""
    return np.abs(np.hypot(x[:, 0] - motion.x_A, x[:, 1] - motion.y_A) - motion.rho)


def lqr_gains(dsys: Any, steps: int, Q: NDArray, R: NDArray):
    """Finite-horizon LQR over ``steps`` samples of a (periodic) ``DiscreteLTV``, ``Qf = Q``."""
    from nhcontrol.design import finite_horizon_lqr, window

    Ad, Bd = window(dsys, 0, steps)
    return finite_horizon_lqr((Ad, Bd), Q, R, Q)


def closed_loop_nonlinear(cm: CompiledModel, ref: Reference, x0: NDArray, xd0: NDArray,
                          law: Callable | None,
                          dt: float, st: Settings, t_eval: NDArray | None = None) -> ClosedLoop:
    """Nonlinear model with a discrete controller ``law(k, t_k, x, xd) -> u`` held on each sample.

    ``law=None`` runs the open loop ``u = u0(t)`` (reference plate angles). Output on ``t_eval``
    (default ``st.output_points`` equally spaced samples of ``[0, t_final]``).
    """
    from nhcontrol.simulate import forward_dynamics

    times: list[float] = []
    if t_eval is None:
        t_eval = np.linspace(0.0, st.t_final, st.output_points)

    if law is None:
        sim = forward_dynamics(cm, (0.0, st.t_final), x0, xd0, u=ref, rtol=st.rtol, atol=st.atol,
                               t_eval=t_eval)
        tu = sim.t
        uu = np.asarray(sim.u)
    else:
        def controller(t: float, x: NDArray, xd: NDArray) -> NDArray:
            k = int(round(t / dt))
            c0 = time.perf_counter()
            u = law(k, t, x, xd)
            times.append(time.perf_counter() - c0)
            return u

        sim = forward_dynamics(cm, (0.0, st.t_final), x0, xd0, controller=controller,
                               sample_time=dt, rtol=st.rtol, atol=st.atol,
                               t_eval=t_eval)
        tu = np.asarray(sim.control_times)
        uu = np.asarray(sim.control_inputs)
    return ClosedLoop(t=np.asarray(sim.t), x=np.asarray(sim.x), xd=np.asarray(sim.xd), t_u=tu,
                      u=uu, step_times=np.asarray(times))


def closed_loop_linear(ref: Reference, Ad: NDArray, Bd: NDArray, X0: NDArray, feedback: Callable,
                       dt: float, expand: Callable[[NDArray], NDArray]) -> ClosedLoop:
    """Discrete linear closed loop ``X_{k+1} = Ad_k X_k + Bd_k δu_k``, ``δu_k = feedback(k, X_k)``.

    ``expand`` maps the controller state to the 8-state deviation ``X̃`` (identity for Eq. (8.74))
    so the run can be drawn in nonlinear coordinates (``x = x0(t) + deviation``).
    """
    K = Ad.shape[0]
    X = np.empty((K + 1, X0.size))
    U = np.empty((K, Bd.shape[2]))
    X[0] = X0
    for k in range(K):
        U[k] = feedback(k, X[k])
        X[k + 1] = Ad[k] @ X[k] + Bd[k] @ U[k]
    t = dt * np.arange(K + 1)
    Xf = expand(X)                                          # (K+1, 8): ψ φ θ ψ̇ φ̇ θ̇ x_C y_C
    x = np.asarray(ref.x(t), float).copy()
    xd = np.asarray(ref.xd(t), float).copy()
    x[:, [2, 3, 4]] += Xf[:, [0, 1, 2]]
    xd[:, [2, 3, 4]] += Xf[:, [3, 4, 5]]
    x[:, [0, 1]] += Xf[:, [6, 7]]
    u = np.asarray(ref.u(t[:-1] + 0.5 * dt), float) + U
    return ClosedLoop(t=t, x=x, xd=xd, t_u=t[:-1], u=u, step_times=np.zeros(0))


def _summarise(motion: Any, run: ClosedLoop) -> dict[str, float]:
    e = contact_error(motion, run.x)
    late = e[run.t >= TRANSIENT_S - 1e-12]
    return {"final_error_m": float(e[-1]), "max_error_m": float(np.max(e)),
            "max_error_after_1s_m": float(np.max(e[run.t >= 1.0 - 1e-12], initial=0.0)),
            "max_error_after_transient_m": float(np.max(late, initial=0.0)),
            "rms_error_after_transient_m": float(np.sqrt(np.mean(late ** 2))) if late.size else 0.0,
            "peak_input_deg": float(np.degrees(np.max(np.abs(run.u))))}


def _formulation(bp: Any, cm: CompiledModel, phi0: float, st: Settings, *, reduced: bool,
                 ref: Reference | None = None, reorient: bool | None = None) -> dict[str, Any]:
    """Reference, LTV system, discretization, LQR and deviation map of one formulation.

    The LTV system is the product path (third numerical procedure, ``method="linearize"``).
    ``reorient`` (default: ``reduced``): the controllers measure the deviation of the
    ``ball_plate.reoriented_state`` (``ball_plate.orientation_free_deviation``: the ball's
    orientation replaced by the reference's, same contact point and angular velocity), not the
    yaw-lean-roll angle deviations of Eq. (8.74), which grow to tens of degrees in the 10 cm
    transient where the linear model no longer holds (``docs/theory/ball_plate.md``, Sect. 7).
    The 8-state runs of Figs. 8.2-8.5 keep the thesis' deviation.
    """
    from nhcontrol.systems import discretize

    ref = bp.circular_motion(cm, phi0) if ref is None else ref
    mo = bp.motion_from_reference(cm, ref)
    dt = mo.period / st.steps_per_period
    if reduced:
        sysc = bpl.controllable_formulation(cm, ref)
        red = bp.spin_reduction(cm, ref)
        reduce: Callable[[NDArray], NDArray] = red.reduce
        expand: Callable[[NDArray], NDArray] = red.expand
        n = 7
    else:
        sysc = bpl.ltv_system(cm, ref)
        red = None
        reduce = expand = (lambda X: np.asarray(X, float))
        n = 8
    d = discretize(sysc, dt)
    qa, qr, qp = st.q_angle, st.q_rate, st.q_contact
    Q = np.diag([qa] * 3 + [qr] * (n - 5) + [qp] * 2)
    R = st.r_input * np.eye(2)
    nsim = int(math.ceil(st.t_final / dt - 1e-9))
    lqr = lqr_gains(d, nsim + st.tail_periods * st.steps_per_period, Q, R)
    reorient = reduced if reorient is None else reorient
    dev = bp.orientation_free_deviation if reorient else bp.deviation
    return dict(ref=ref, motion=mo, dt=dt, sys=sysc, discrete=d, Q=Q, R=R, lqr=lqr, nsim=nsim,
                reduce=reduce, expand=expand, reduction=red, n=n, deviation=dev)


def _lqr_law(bp: Any, f: dict[str, Any]) -> Callable:
    ref, lqr, reduce, half, dev = f["ref"], f["lqr"], f["reduce"], 0.5 * f["dt"], f["deviation"]

    def law(k: int, t: float, x: NDArray, xd: NDArray) -> NDArray:
        Z = reduce(dev(ref, t, x, xd))
        return np.asarray(ref.u(t + half), float) + lqr.control(k, Z)
    return law


def _mpc_law(bp: Any, f: dict[str, Any], st: Settings, statuses: list[str],
             diagnostics: list[dict[str, float]] | None = None, *,
             rate_bound_deg: float | None = None) -> Callable:
    """The MPC law; ``diagnostics`` (optional) collects per step: the solver used, the active
    rate and input bounds of the planned window and the share of the terminal cost."""
    from nhcontrol.design import LTVMPC, window

    N = st.mpc_horizon
    bound = math.radians(MPC_BOUND_DEG)
    rate = math.radians(MPC_RATE_BOUND_DEG if rate_bound_deg is None else rate_bound_deg)
    mpc = LTVMPC(N, f["Q"], f["R"], f["lqr"].P[N], u_min=-bound, u_max=bound,
                 du_min=-rate, du_max=rate)
    ref, reduce, dt, d, P = f["ref"], f["reduce"], f["dt"], f["discrete"], f["lqr"].P
    dev = f["deviation"]
    last: list[NDArray] = []                 # the input applied last (for the rate activity)

    def law(k: int, t: float, x: NDArray, xd: NDArray) -> NDArray:
        Z = reduce(dev(ref, t, x, xd))
        Ad, Bd = window(d, k, N)
        u_ref = np.asarray(ref.u(t + dt * (np.arange(N) + 0.5)), float)
        u_prev = u_ref[0] if not last else last[-1]
        Qf = P[min(k + N, P.shape[0] - 1)]
        step = mpc.step(Z, Ad, Bd, u_ref=u_ref, Qf=Qf)
        statuses.append(step.status)
        if diagnostics is not None:
            u_plan = u_ref + step.predicted_u
            moves = np.abs(np.diff(np.vstack([u_prev, u_plan]), axis=0))
            xN = step.predicted_x[-1]
            diagnostics.append({
                "t": t, "fallback": float(len(step.attempts) > 1 or step.held),
                "rate_active": float(np.mean(moves >= rate * (1 - 1e-3))),
                "input_active": float(np.mean(np.abs(u_plan) >= bound * (1 - 1e-3))),
                "terminal_share": float(xN @ Qf @ xN / step.cost) if step.cost > 0 else 0.0})
        last[:] = [step.u]
        return step.u
    return law


def _controllability(bp: Any, cm: CompiledModel, phi0: float) -> dict[str, Any]:
    """Gramian (8.85) over one period and Silverman–Meadows rank (8.86)–(8.87) of both formulations.

    The Gramian integrates the closed form of ``A(t), B(t)`` (Eqs. (8.75)–(8.76)), which
    ``ball_plate_ltv.ltv_system`` checks against the third numerical procedure to ``AGREEMENT_TOL``;
    integrating the product path itself gives the same singular values but takes minutes.
    Silverman–Meadows uses the product-path system with its exact derivatives.
    """
    from nhcontrol.analysis import gramian, silverman_meadows

    ref = bp.circular_motion(cm, phi0)
    mo = bp.motion_from_reference(cm, ref)
    g8 = gramian(bpl.ltv_system(cm, ref, method="closed_form"), 0.0, mo.period)
    g7 = gramian(bpl.controllable_formulation(cm, ref, method="closed_form"), 0.0, mo.period)
    ts = np.linspace(0.05, 0.95, 7) * mo.period
    sm8 = silverman_meadows(bpl.ltv_system(cm, ref), ts)
    sm7 = silverman_meadows(bpl.controllable_formulation(cm, ref), ts)
    return {
        "gramian_rank": int(g8.rank), "gramian_singular_values": g8.singular_values.tolist(),
        "gramian_tol": float(g8.rank_result.tol),
        "silverman_meadows_rank": int(sm8.generic_rank),
        "silverman_meadows_singular_values_t0": sm8.ranks[0].singular_values[:8].tolist(),
        "silverman_meadows_tol_t0": float(sm8.ranks[0].tol),
        "controllable_formulation": {
            "nstates": 7, "gramian_rank": int(g7.rank),
            "gramian_singular_values": g7.singular_values.tolist(),
            "gramian_tol": float(g7.rank_result.tol),
            "silverman_meadows_rank": int(sm7.generic_rank),
            "silverman_meadows_singular_values_t0": sm7.ranks[0].singular_values[:7].tolist(),
            "silverman_meadows_tol_t0": float(sm7.ranks[0].tol)},
    }


def run(*, out: Path | None = None, quick: bool = False, animate: bool = False) -> dict[str, Any]:
    """Run the reproduction; return the headline numbers (JSON-serialisable).

    Parameters
    ----------
    out : Path, optional
        Folder for the figures (PNG) of Figs. 8.2–8.5 and of the controllable loops.
    quick : bool
        Coarser sampling, shorter MPC horizon and looser integration (smoke test, ~1 min).
    animate : bool
        With ``out``: also ``ball_plate_lqr_phi5.gif``, the LQR loop on the nonlinear model
        (plate tilt, contact path over the reference circle).

    Returns
    -------
    dict
        Keys ``Omega``, ``gramian_rank``, ``gramian_singular_values``,
        ``silverman_meadows_rank``, ``controllable_formulation``, ``lqr``, ``mpc`` (each keyed by
        φ0 ``"5"``, ``"35"``), ``uncontrollable_lqr``, ``linear_vs_nonlinear``, ``settings``,
        ``timing_s``, ``mpc_diagnosis`` (`_mpc_diagnosis`). Per loop in ``lqr`` and ``mpc``:
        ``final_error_m``, ``max_error_m`` (the initial 87.7 mm), ``max_error_after_1s_m``,
        ``max_error_after_transient_m`` and ``rms_error_after_transient_m`` (over
        ``t ≥ TRANSIENT_S``), ``peak_input_deg``, ``max_input_step_deg``; ``mpc`` also
        ``statuses`` (count per MPC status) and ``constraint_activity`` (mean over the steps of
        the first second and of the run: ``rate_active`` and ``input_active``, the fraction of
        the planned moves at their rate and input bounds; ``terminal_share``, the terminal cost
        over the optimal cost; ``steps_with_fallback_or_held``, steps that needed more than one
        solver attempt or held the input). Errors are distances of the contact point to the circle [m].
    """
    from nhcontrol.models import ball_plate as bp

    st = QUICK if quick else Settings()
    t_start = time.perf_counter()
    cm = bp.model()
    result: dict[str, Any] = {"Omega": {}, "lqr": {}, "mpc": {}, "uncontrollable_lqr": {},
                              "linear_vs_nonlinear": {}, "spin_matched_phi0_deg": {}}
    ctrb = _controllability(bp, cm, 5.0)
    result.update({k: ctrb[k] for k in ("gramian_rank", "gramian_singular_values", "gramian_tol",
                                        "silverman_meadows_rank",
                                        "silverman_meadows_singular_values_t0",
                                        "silverman_meadows_tol_t0", "controllable_formulation")})
    figures: dict[str, Any] = {}
    for phi0 in PHI0_DEG:
        key = f"{phi0:g}"
        x0, xd0 = bp.initial_conditions(cm, phi0)
        # ---- 8-state formulation (Figs. 8.2-8.5)
        f8 = _formulation(bp, cm, phi0, st, reduced=False)
        mo = f8["motion"]
        result["Omega"][key] = float(mo.Omega)
        nl8 = closed_loop_nonlinear(cm, f8["ref"], x0, xd0, _lqr_law(bp, f8), f8["dt"], st)
        ol = closed_loop_nonlinear(cm, f8["ref"], x0, xd0, None, f8["dt"], st)
        X0 = bp.deviation(f8["ref"], 0.0, x0, xd0)
        Ad8, Bd8 = _window(f8)
        lin8 = closed_loop_linear(f8["ref"], Ad8, Bd8, X0, lambda k, X: f8["lqr"].control(k, X),
                                  f8["dt"], f8["expand"])
        blk = _summarise(mo, nl8)
        blk.update(final_phi_deg=float(np.degrees(nl8.x[-1, 3])), phi_ref_deg=phi0,
                   linear_final_error_m=float(contact_error(mo, lin8.x)[-1]),
                   open_loop_final_error_m=float(contact_error(mo, ol.x)[-1]))
        result["uncontrollable_lqr"][key] = blk
        # ---- controllable formulation on the spin-matched reference
        ref7 = bp.spin_matched_motion(cm, x0, xd0)
        result["spin_matched_phi0_deg"][key] = float(np.degrees(bp.motion_from_reference(cm, ref7).phi0))
        f7 = _formulation(bp, cm, phi0, st, reduced=True, ref=ref7)
        nl7 = closed_loop_nonlinear(cm, f7["ref"], x0, xd0, _lqr_law(bp, f7), f7["dt"], st)
        statuses: list[str] = []
        diag: list[dict[str, float]] = []
        mp7 = closed_loop_nonlinear(cm, f7["ref"], x0, xd0, _mpc_law(bp, f7, st, statuses, diag),
                                    f7["dt"], st)
        wn = nl7.xd[:, 2] + nl7.xd[:, 4] * np.sin(nl7.x[:, 3])
        b = _summarise(mo, nl7)
        b["spin_drift"] = float(np.max(np.abs(wn - wn[0])))
        b["max_input_step_deg"] = float(np.degrees(np.max(np.abs(np.diff(nl7.u, axis=0)))))
        result["lqr"][key] = b
        m = _summarise(mo, mp7)
        m["median_step_s"] = float(np.median(mp7.step_times))
        m["max_step_s"] = float(np.max(mp7.step_times))
        m["statuses"] = {s: statuses.count(s) for s in sorted(set(statuses))}
        m["constraint_activity"] = _activity(diag)
        m["max_input_step_deg"] = float(np.degrees(np.max(np.abs(np.diff(mp7.u, axis=0)))))
        result["mpc"][key] = m
        # ---- linear vs nonlinear near the reference (scaled initial deviations)
        result["linear_vs_nonlinear"][key] = _linear_check(bp, cm, phi0, st)
        if out is not None:
            figures.update(_figures(key, mo, f8, nl8, ol, lin8, nl7, mp7, st))
        if out is not None and animate and key == f"{PHI0_DEG[0]:g}":
            result.setdefault("animations", []).append(
                _animation(Path(out), key, f8["ref"], nl8, st, dpi=80,
                           max_frames=40 if quick else 120).name)
    result["mpc_diagnosis"] = _mpc_diagnosis(bp, cm, PHI0_DEG[0], st)
    result["settings"] = {k: getattr(st, k) for k in Settings.__dataclass_fields__}
    result["settings"]["dt_s"] = float(f8["dt"])
    result["settings"]["mpc_bound_deg"] = MPC_BOUND_DEG
    result["settings"]["mpc_rate_bound_deg"] = MPC_RATE_BOUND_DEG
    result["timing_s"] = float(time.perf_counter() - t_start)
    if out is not None:
        from nhcontrol.plotting.ball_plate import save_figures

        result["figures"] = [p.name for p in save_figures(figures, Path(out))]
    return result


DIAGNOSIS_T_FINAL = 3.0
"""Length of the diagnostic MPC runs of `_mpc_diagnosis` [s]."""


def _mpc_diagnosis(bp: Any, cm: CompiledModel, phi0: float, st: Settings) -> dict[str, Any]:
    """The controllable MPC loop over the first ``DIAGNOSIS_T_FINAL`` s, in three variants.

    ``rate_0.5_deg``: the former rate bound of 0.5° per sample (the contact point crosses the
    circle and is ~84 mm outside it at 0.8 s; rate bounds active); ``thesis_deviation``: the
    current rate bound with the yaw-lean-roll angle deviations of Eq. (8.74) measured instead of
    the orientation-free deviation (angle deviations of tens of degrees: the linear prediction
    fails and the ball leaves the circle); ``adopted``: the loop of key ``mpc``. Each: contact
    error at 0.8 s and at the end, its largest value after 1 s, the largest yaw-lean-roll angle
    deviation, and the constraint activity.
    """
    from dataclasses import replace

    sd = replace(st, t_final=DIAGNOSIS_T_FINAL, output_points=int(100 * DIAGNOSIS_T_FINAL) + 1)
    x0, xd0 = bp.initial_conditions(cm, phi0)
    ref = bp.spin_matched_motion(cm, x0, xd0)
    out: dict[str, Any] = {"phi0_deg": phi0, "t_final_s": DIAGNOSIS_T_FINAL}
    for name, reorient, rate in (("adopted", True, MPC_RATE_BOUND_DEG),
                                 ("rate_0.5_deg", True, 0.5),
                                 ("thesis_deviation", False, MPC_RATE_BOUND_DEG)):
        f = _formulation(bp, cm, phi0, sd, reduced=True, ref=ref, reorient=reorient)
        statuses: list[str] = []
        diag: list[dict[str, float]] = []
        r = closed_loop_nonlinear(cm, ref, x0, xd0,
                                  _mpc_law(bp, f, sd, statuses, diag, rate_bound_deg=rate),
                                  f["dt"], sd)
        e = contact_error(f["motion"], r.x)
        ang = bp.deviation(ref, r.t, r.x, r.xd)[:, :3]
        out[name] = {"rate_bound_deg": rate, "orientation_free_deviation": reorient,
                     "error_at_0.8s_m": float(np.interp(0.8, r.t, e)),
                     "max_error_after_1s_m": float(np.max(e[r.t >= 1.0])),
                     "final_error_m": float(e[-1]),
                     "max_angle_deviation_deg": float(np.degrees(np.max(np.abs(ang)))),
                     "statuses": {k: statuses.count(k) for k in sorted(set(statuses))},
                     "constraint_activity": _activity(diag)}
    return out


def _activity(diag: list[dict[str, float]]) -> dict[str, Any]:
    """Constraint activity of the MPC's plans, first second and whole run (means over steps)."""
    out: dict[str, Any] = {"steps_with_fallback_or_held": int(sum(d["fallback"] for d in diag))}
    for name, sel in (("first_1s", [d for d in diag if d["t"] < 1.0]), ("all", diag)):
        out[name] = {k: float(np.mean([d[k] for d in sel])) if sel else 0.0
                     for k in ("rate_active", "input_active", "terminal_share")}
    return out


def _window(f: dict[str, Any]) -> tuple[NDArray, NDArray]:
    from nhcontrol.design import window

    return window(f["discrete"], 0, f["nsim"])


def _linear_check(bp: Any, cm: CompiledModel, phi0: float, st: Settings) -> dict[str, float]:
    """Controllable LQR loop, linear vs nonlinear, from ``s ×`` the deviations of Eq. (8.92).

    The reference is the spin-matched one of the scaled state, so the linear model describes
    the whole deviation. Reported: the largest contact-point difference between the two runs,
    relative to the largest contact-point deviation from the reference (O(s) if linearization is
    exact: the difference is O(s²)).
    """
    s = st.linear_check_scale
    x0, xd0 = bp.initial_conditions(cm, phi0, eps_x=-0.1 * s, eps_y=0.1 * s, eps_psi_deg=5.0 * s,
                                    eps_theta_deg=10.0 * s, eps_vx=0.1 * s, eps_vy=0.1 * s,
                                    eps_wpsi=0.1 * s)
    f = _formulation(bp, cm, phi0, st, reduced=True, ref=bp.spin_matched_motion(cm, x0, xd0),
                     reorient=False)         # the linear loop has the angle deviations too
    grid = f["dt"] * np.arange(f["nsim"] + 1)
    grid = grid[grid <= st.t_final + 1e-12]
    nl = closed_loop_nonlinear(cm, f["ref"], x0, xd0, _lqr_law(bp, f), f["dt"], st, t_eval=grid)
    Ad, Bd = _window(f)
    Z0 = f["reduce"](bp.deviation(f["ref"], 0.0, x0, xd0))
    lin = closed_loop_linear(f["ref"], Ad, Bd, Z0, lambda k, Z: f["lqr"].control(k, Z), f["dt"],
                             f["expand"])
    tl, xl = lin.t[:nl.t.size], lin.x[:nl.t.size]          # same sample instants
    diff = float(np.max(np.hypot(*(nl.x[:, :2] - xl[:, :2]).T)))
    dev = float(np.max(np.hypot(*(xl[:, :2] - np.asarray(f["ref"].x(tl))[:, :2]).T)))
    return {"scale": s, "max_contact_difference_m": diff, "max_contact_deviation_m": dev,
            "relative_difference": diff / dev}


def _animation(out: Path, key: str, ref: Reference, run_: ClosedLoop, st: Settings, *,
               dpi: int, max_frames: int) -> Path:
    """GIF of a closed loop: contact path over the reference circle, plate tilt (``dpi = 80``:
    600 px wide at the screen width of 7.5 in)."""
    from nhcontrol.plotting import animate
    from nhcontrol.plotting.animation import ball_plate_scene

    tr = np.linspace(0.0, st.t_final, 801)
    xr = np.asarray(ref.x(tr), float)
    k = np.clip(np.searchsorted(run_.t_u, run_.t, side="right") - 1, 0, len(run_.t_u) - 1)
    u = np.asarray(run_.u)[k]                       # held plate angles at the samples
    scene = ball_plate_scene(run_.t, run_.x[:, 0], run_.x[:, 1], u[:, 0], u[:, 1],
                             reference=(xr[:, 0], xr[:, 1]),
                             title=f"Ball-plate, LQR on the nonlinear model, φ0 = {key}°")
    return animate(scene, out / f"ball_plate_lqr_phi{key}.gif", fps=15, dpi=dpi,
                   max_frames=max_frames, speed=2.0)


def _figures(key: str, mo: Any, f8: dict[str, Any], nl8: ClosedLoop, ol: ClosedLoop,
             lin8: ClosedLoop, nl7: ClosedLoop, mp7: ClosedLoop, st: Settings) -> dict[str, Any]:
    from nhcontrol.plotting.ball_plate import plot_contact_path, plot_inputs, plot_signal
    from nhcontrol.plotting.style import cite

    ref = f8["ref"]
    tr = np.linspace(0.0, st.t_final, 801)
    xr = np.asarray(ref.x(tr), float)
    deg = np.degrees
    runs = {"LQR, linear model": lin8, "LQR, nonlinear model": nl8,
            "open loop, nonlinear model": ol}
    models = ("Linear model: the discrete LTV system of Eq. (8.74) (8 states) in closed loop; "
              "nonlinear model: the ball-plate DAE integrated with the same sampled controller.")
    fig_no = "8_2" if key == "5" else "8_4"
    thesis_fig = "Fig. 8.2" if key == "5" else "Fig. 8.4"
    figs: dict[str, Any] = {}

    def add(name: str, fig: Any, where: str, extra: str = models) -> None:
        cite(fig, "thesis", where, extra=extra)
        figs[name] = fig

    add(f"fig{fig_no}a_path_phi{key}", plot_contact_path(
        {"Reference": (xr[:, 0], xr[:, 1]), **{k: (r.x[:, 0], r.x[:, 1]) for k, r in runs.items()}},
        title=f"Contact point on the plate, 8-state formulation, φ0 = {key}°",
        limits_from=["Reference", "LQR, linear model", "LQR, nonlinear model"]), f"{thesis_fig} (a)")
    add(f"fig{fig_no}b_phi_phi{key}", plot_signal(
        {"Reference": (tr, deg(xr[:, 3])), **{k: (r.t, deg(r.x[:, 3])) for k, r in runs.items()}},
        ylabel="lean angle φ (deg)", title=f"Lean angle of the ball, φ0 = {key}°"),
        f"{thesis_fig} (b)")
    # the yaw angle grows by 360° per turn: its cumulative value (up to ~1200°) hides the
    # deviation, so the figure shows ψ − ψ0(t), the deviation from the reference motion
    add(f"fig8_3a_psi_phi{key}", plot_signal(
        {k: (r.t, deg(r.x[:, 2] - np.asarray(ref.x(r.t), float)[:, 2])) for k, r in runs.items()},
        ylabel="yaw deviation ψ − ψ0 (deg)",
        title=f"Yaw angle of the ball, deviation from the reference, φ0 = {key}°"), "Fig. 8.3 (a)")
    add(f"fig8_3b_theta_phi{key}", plot_signal(
        {"Reference": (tr, deg(xr[:, 4])), **{k: (r.t, deg(r.x[:, 4])) for k, r in runs.items()}},
        ylabel="roll angle θ (deg)", title=f"Roll angle of the ball, φ0 = {key}°"), "Fig. 8.3 (b)")
    ur = deg(np.asarray(ref.u(tr), float))
    add(f"fig8_5_inputs_phi{key}", plot_inputs(
        nl8.t_u, deg(nl8.u), tr, ur, label="LQR",
        title=f"Plate angles α, β, 8-state LQR, φ0 = {key}°"), "Fig. 8.5",
        extra="Applied plate angles (held over each sample) and those of the reference motion, "
              "Eqs. (8.70)–(8.71).")
    ctrl = ("Controllable formulation (7 states, spin removed; derived here, "
            "docs/theory/ball_plate.md) on the spin-matched circle; both loops on the nonlinear "
            "model.")
    add(f"controllable_path_phi{key}", plot_contact_path(
        {"Reference": (xr[:, 0], xr[:, 1]), "LQR, nonlinear model": (nl7.x[:, 0], nl7.x[:, 1]),
         "MPC, nonlinear model": (mp7.x[:, 0], mp7.x[:, 1])},
        title=f"Contact point, controllable formulation, φ0 = {key}°"), "Sect. 8.4.5", ctrl)
    add(f"controllable_error_phi{key}", plot_signal(
        {"LQR, nonlinear model": (nl7.t, 1e3 * contact_error(mo, nl7.x)),
         "MPC, nonlinear model": (mp7.t, 1e3 * contact_error(mo, mp7.x))},
        ylabel="distance of C to the circle (mm)",
        title=f"Tracking error, controllable formulation, φ0 = {key}°"), "Sect. 8.4.5", ctrl)
    add(f"controllable_mpc_inputs_phi{key}", plot_inputs(
        mp7.t_u, deg(mp7.u), tr, ur, label="MPC", bound_deg=MPC_BOUND_DEG,
        title=(f"Plate angles, MPC (|α|, |β| ≤ {MPC_BOUND_DEG:g}°, "
               f"steps ≤ {MPC_RATE_BOUND_DEG:g}° per sample), φ0 = {key}°")), "Sect. 8.4.5",
        "Applied plate angles (held over each sample, dt ≈ 0.05 s) and those of the reference "
        "motion, Eqs. (8.70)–(8.71).")
    return figs


def summary(result: dict[str, Any]) -> str:
    """Human-readable report of `run()`."""
    lines = ["Ball-plate system tracking a circle (thesis Ch. 8)"]
    lines.append("  Omega (Eq. (8.64)): " + ", ".join(
        f"phi0 = {k} deg: {v:.4f} rad/s" for k, v in result["Omega"].items()))
    sv = result["gramian_singular_values"]
    lines.append(f"  8-state formulation (8.74): Gramian rank {result['gramian_rank']}/8 "
                 f"(smallest singular values {sv[-2]:.3g}, {sv[-1]:.3g}; tol {result['gramian_tol']:.3g}), "
                 f"Silverman-Meadows rank {result['silverman_meadows_rank']}/8")
    cf = result["controllable_formulation"]
    lines.append(f"  controllable formulation: {cf['nstates']} states, Gramian rank "
                 f"{cf['gramian_rank']}, Silverman-Meadows rank {cf['silverman_meadows_rank']}")
    for key, b in result["uncontrollable_lqr"].items():
        lines.append(f"  phi0 = {key} deg, 8-state LQR (Figs. 8.2-8.5): contact error after "
                     f"{result['settings']['t_final']:g} s {1e3 * b['final_error_m']:.2f} mm, "
                     f"final phi {b['final_phi_deg']:.2f} deg (reference {b['phi_ref_deg']:g})")
    for ctrl in ("lqr", "mpc"):
        for key, b in result[ctrl].items():
            extra = (f", median step {1e3 * b['median_step_s']:.2f} ms" if ctrl == "mpc" else "")
            lines.append(f"  phi0 = {key} deg, controllable {ctrl.upper()}: final error "
                         f"{1e3 * b['final_error_m']:.3f} mm, max {1e3 * b['max_error_m']:.1f} mm, "
                         f"peak |alpha|,|beta| {b['peak_input_deg']:.2f} deg, largest step per "
                         f"sample {b['max_input_step_deg']:.2f} deg{extra}")
    for key in result["lqr"]:
        lq, mp = result["lqr"][key], result["mpc"][key]
        lines.append(f"  phi0 = {key} deg, after {TRANSIENT_S:g} s: largest error LQR "
                     f"{1e3 * lq['max_error_after_transient_m']:.4f} mm, MPC "
                     f"{1e3 * mp['max_error_after_transient_m']:.4f} mm; MPC rate bounds active on "
                     f"{100 * mp['constraint_activity']['first_1s']['rate_active']:.0f} % of the "
                     f"planned moves of the first second, {mp['statuses']}")
    dg = result.get("mpc_diagnosis")
    if dg:
        for name in ("adopted", "rate_0.5_deg", "thesis_deviation"):
            d = dg[name]
            lines.append(f"  MPC diagnosis ({name}: {d['rate_bound_deg']:g} deg/sample, "
                         f"orientation-free {d['orientation_free_deviation']}): error at 0.8 s "
                         f"{1e3 * d['error_at_0.8s_m']:.1f} mm, largest after 1 s "
                         f"{1e3 * d['max_error_after_1s_m']:.1f} mm")
    for key, b in result["linear_vs_nonlinear"].items():
        lines.append(f"  phi0 = {key} deg, linear vs nonlinear (deviations x{b['scale']:g}): max "
                     f"contact difference {1e3 * b['max_contact_difference_m']:.4f} mm = "
                     f"{b['relative_difference']:.2e} of the deviation")
    lines.append(f"  total time {result['timing_s']:.1f} s")
    return "\n".join(lines)
