"""``nhcontrol reproduce road-vehicles``: single-track models of the road-vehicle review and an
ISO 3888-1 double lane change at 20 m/s tracked by LTV-MPC on the nonlinear model.

Arranges library calls:

1. the skate and rigid-wheel models of Table 1 (`nhcontrol.models.single_track`): degrees of freedom
   ``n − l/2`` and first-order equations ``2n − l``; Appell's equations against Newton–Euler with
   multipliers along Appell trajectories; the kinematic bicycle's steady turn;
2. the lane change (`nhcontrol.models.lane_change`): the reference of the ``force_torque``
   skate model by flatness and inverse dynamics → the third numerical procedure along it
   (``LTVSystem.from_linearization``, not steady) → zero-order-hold discretization →
   ``LTVMPC`` with steering-angle and steering-rate bounds (states ``gamma``, ``gamma_d``) and
   the finite-horizon LQR, each closed on the nonlinear model (``forward_dynamics`` with a
   sampled controller) whose mass, yaw inertia and centre of mass differ from the controller's
   model, from a lateral offset;
3. the lane change on the ``force`` skate, whose steering angle is assigned (an input in the
   front skate constraint; `nhcontrol.lane_change_control`): its reference with input rates →
   the third procedure with the rate matrix ``B_rate`` → ``input_state_form`` (``γ`` a state,
   ``γ̇`` the input; states ``[x, ẋ, y, ψ, γ]``) → ``LTVMPC`` with ``|γ|`` a state bound and
   ``|γ̇|`` an input bound, and the finite-horizon LQR with the same weights, each closed on the
   same mismatched nonlinear vehicle with ``γ`` piecewise linear in time (the commanded rate
   held over each sample).

Derivations and choices: ``docs/theory/road_vehicles.md``; guide: ``docs/guide/road_vehicles.md``.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from ..design import LTVMPC, finite_horizon_lqr
from ..lane_change_control import (ASSIGNED_PARTITION, AssignedSteeringSettings,
                                   AssignedSteeringSetup, LaneChangeSettings,
                                   assigned_steering_setup, closed_loop_assigned,
                                   lane_change_numbers)
from ..linearize import Partition, linearize
from ..models import lane_change as lc
from ..models import single_track as st
from ..simulate import forward_dynamics
from ..systems import LTVSystem, discretize

__all__ = ["run", "summary", "lane_change_setup", "closed_loop", "LaneChangeSettings",
           "LaneChangeSetup", "QUICK", "PARTITION", "ASSIGNED_PARTITION",
           "AssignedSteeringSettings", "AssignedSteeringSetup", "assigned_steering_setup",
           "closed_loop_assigned"]

PARTITION = {"x_ai": ["x", "gamma"], "x_ad": ["y", "psi"]}
"""Partition of the ``force_torque`` model: ``x_ai = [x, γ]``, ``x_ad = [y, ψ]`` (Eq. (4.96));
the linear state is ``[x, γ, ẋ, γ̇, y, ψ]`` (Eq. (4.123))."""

QUICK = LaneChangeSettings(rtol=1e-6, atol=1e-8)
"""``--quick``: looser integration tolerances (same controllers); Appell checks of the skate
variants only."""

_INPUT_SCALE = np.diag([1000.0, 1.0])
"""Input scaling of the controllers: ``F_R`` in kN, ``T`` in N m."""


@dataclass(frozen=True)
class LaneChangeSetup:
    """The model, reference, linearization and discrete LTV system of the lane change."""

    cm: Any
    ref: Any
    lin0: Any
    ltv: Any
    Ad: NDArray[np.float64]
    Bd: NDArray[np.float64]
    cols: list[int]
    states: tuple[str, ...]
    st: LaneChangeSettings


def lane_change_setup(st_: LaneChangeSettings) -> LaneChangeSetup:
    """Reference (flatness + inverse dynamics), LTV system (third procedure) and ZOH sequences."""
    cm = st.build("force_torque").system.compile()
    nsteps = int(round(st_.t_final / st_.dt))
    ref = lc.lane_change_reference(cm, st_.V, t_final=(nsteps + st_.horizon + 1) * st_.dt)
    part = Partition.from_dict(PARTITION)
    ltv = LTVSystem.from_linearization(cm, ref, part)
    d = discretize(ltv, st_.dt, steps=nsteps + st_.horizon)
    cols = [list(cm.inputs).index(s) for s in lc.DRIVE_INPUTS]
    return LaneChangeSetup(cm=cm, ref=ref, lin0=linearize(cm, ref, part, t=0.0), ltv=ltv,
                           Ad=np.asarray(d.Ad), Bd=np.asarray(d.Bd)[:, :, cols] @ _INPUT_SCALE,
                           cols=cols, states=tuple(ltv.states), st=st_)


def _state_ref(s: LaneChangeSetup, t: NDArray[np.float64]) -> NDArray[np.float64]:
    """Reference values of the linear states ``[x, γ, ẋ, γ̇, y, ψ]`` at the times ``t``."""
    coords = list(s.cm.coordinates)
    x, xd = s.ref.x(t), s.ref.xd(t)
    return np.column_stack([xd[:, coords.index(n[:-2])] if n.endswith("_d") else x[:, coords.index(n)]
                            for n in s.states])


def _law(s: LaneChangeSetup, kind: str, statuses: list[str]) -> Callable:
    st_ = s.st
    N, dt = st_.horizon, st_.dt
    Q, R = np.diag(st_.q), np.diag(st_.r)
    lqr = finite_horizon_lqr((s.Ad, s.Bd), Q, R, Q)
    inv = np.linalg.inv(_INPUT_SCALE)
    mpc = None
    if kind == "mpc":
        ns = len(s.states)
        lo, hi = np.full(ns, -np.inf), np.full(ns, np.inf)
        ig, ir = s.states.index("gamma"), s.states.index("gamma_d")
        hi[ig] = st_.backoff[0] * math.radians(st_.steer_max_deg)
        hi[ir] = st_.backoff[1] * math.radians(st_.steer_rate_max_deg_s)
        lo[ig], lo[ir] = -hi[ig], -hi[ir]
        mpc = LTVMPC(N, Q, R, lqr.P[N], x_min=lo, x_max=hi)

    def law(k: int, t: float, x: NDArray, xd: NDArray) -> tuple[NDArray, float, float]:
        dX = s.lin0.deviation(s.ref, t, x, xd)
        u_ref = s.ref.u(t + dt * np.arange(N))[:, s.cols] @ inv.T
        if mpc is None:
            c0, p0 = time.perf_counter(), time.process_time()
            u = u_ref[0] + lqr.control(k, dX)
            return u, time.perf_counter() - c0, time.process_time() - p0
        x_ref = _state_ref(s, t + dt * np.arange(N + 1))
        c0, p0 = time.perf_counter(), time.process_time()
        step = mpc.step(dX, s.Ad[k:k + N], s.Bd[k:k + N], u_ref=u_ref, x_ref=x_ref,
                        Qf=lqr.P[min(k + N, lqr.P.shape[0] - 1)])
        elapsed, cpu = time.perf_counter() - c0, time.process_time() - p0
        statuses.append(step.status)
        return np.asarray(step.u), elapsed, cpu

    return law


def closed_loop(s: LaneChangeSetup, kind: str, *, points: int = 501) -> dict[str, Any]:
    """Close ``kind`` (``"mpc"`` or ``"lqr"``) on the nonlinear model; return arrays and numbers.

    The controller is sampled every ``dt`` (zero-order hold). Reported: the lateral deviation of
    ``G`` from its reference ([`lateral_error`][nhcontrol.models.lane_change.lateral_error]), the peak steering angle and
    rate of the simulated motion (dense output, ``points`` samples), and the wall-clock and CPU
    (``time.process_time``) time of each controller evaluation (``LTVMPC.step`` or the LQR gain
    product; the CPU time is less sensitive to other processes on a shared machine).
    """
    st_ = s.st
    statuses: list[str] = []
    law = _law(s, kind, statuses)
    times: list[float] = []
    cpu: list[float] = []

    def controller(t: float, x: NDArray, xd: NDArray) -> NDArray:
        u2, el, c = law(int(round(t / st_.dt)), t, x, xd)
        times.append(el)
        cpu.append(c)
        u = np.zeros(len(s.cm.inputs))
        u[s.cols] = _INPUT_SCALE @ u2
        return u

    x0 = s.ref.x(0.0) + np.array([0.0, st_.y_offset, 0.0, 0.0])
    sim = forward_dynamics(s.cm, (0.0, st_.t_final), x0, s.ref.xd(0.0), p=st_.plant,
                           controller=controller, sample_time=st_.dt, rtol=st_.rtol, atol=st_.atol,
                           t_eval=np.linspace(0.0, st_.t_final, points))
    t = np.asarray(sim.t)
    e = lc.lateral_error(s.ref, t, sim.x)
    gam, gamd = np.asarray(sim.x)[:, 3], np.asarray(sim.xd)[:, 3]
    out = lane_change_numbers(st_, t, e, gam, gamd, times, cpu, statuses if kind == "mpc" else None)
    arrays = {"t": t, "x": np.asarray(sim.x), "xd": np.asarray(sim.xd), "e": e,
              "t_u": np.asarray(sim.control_times), "u": np.asarray(sim.control_inputs)}
    return {"numbers": out, "arrays": arrays}


def _models(quick: bool) -> dict[str, Any]:
    """Table 1 counts of every variant; Appell vs Newton--Euler (skate variants only in quick
    mode: the rigid-wheel ones need three more model compilations)."""
    models = {v: st.build(v) for v in st.VARIANTS}
    table = {v: {"n": m.n, "l": m.l, "dof": m.dof, "first_order_odes": m.first_order_odes}
             for v, m in models.items()}
    checked = [v for v in st.APPELL_CHECKS if not (quick and v.startswith("rigid_"))]
    diffs = {v: st.appell_vs_newton_euler(models[v]) for v in checked}
    return {"models": table, "appell_vs_newton_euler": diffs,
            "appell_vs_newton_euler_max_diff": float(max(diffs.values())),
            "kinematic_turning_radius_rel_error": st.kinematic_turn_error(mdl=models["kinematic"])}


def run(*, out: Path | None = None, quick: bool = False) -> dict[str, Any]:
    """Headline numbers (JSON-serialisable); with ``out`` also the figures.

    Returns
    -------
    dict
        ``models`` (per variant of Table 1, skate and rigid-wheel: ``n``, ``l``, ``dof``,
        ``first_order_odes``), ``appell_vs_newton_euler`` (per variant checked) and
        ``appell_vs_newton_euler_max_diff``, ``kinematic_turning_radius_rel_error``,
        ``lane_change`` (MPC) and ``lane_change_lqr`` (``max_lateral_error_m``,
        ``rms_lateral_error_m``, ``peak_steer_deg``, ``peak_steer_rate_deg_s``,
        ``median_step_s``, ...), ``lane_change_assigned_steering`` (the same numbers for the
        MPC on the ``force`` skate with ``γ`` assigned, ``γ̇`` its input),
        ``lane_change_assigned_steering_lqr`` (the finite-horizon LQR with the same weights, no
        bounds), ``reference``
        (peaks of the reference) and ``settings`` (``assigned_steering``: the weights of both
        controllers, the MPC's margins, states and inputs).
    """
    st_ = QUICK if quick else LaneChangeSettings()
    t_start = time.perf_counter()
    result = _models(quick)
    s = lane_change_setup(st_)
    loops = {kind: closed_loop(s, kind) for kind in ("mpc", "lqr")}
    result["lane_change"] = loops["mpc"]["numbers"]
    result["lane_change_lqr"] = loops["lqr"]["numbers"]
    sa = assigned_steering_setup(st_)
    loops["assigned"] = closed_loop_assigned(sa, "mpc")
    loops["assigned_lqr"] = closed_loop_assigned(sa, "lqr")
    result["lane_change_assigned_steering"] = loops["assigned"]["numbers"]
    result["lane_change_assigned_steering_lqr"] = loops["assigned_lqr"]["numbers"]
    tr = np.linspace(0.0, st_.t_final, 1001)
    xr, xdr, ur = s.ref.x(tr), s.ref.xd(tr), s.ref.u(tr)
    result["reference"] = {
        "peak_steer_deg": float(np.degrees(np.max(np.abs(xr[:, 3])))),
        "peak_steer_rate_deg_s": float(np.degrees(np.max(np.abs(xdr[:, 3])))),
        "peak_yaw_rate_deg_s": float(np.degrees(np.max(np.abs(xdr[:, 2])))),
        "peak_lateral_acceleration_m_s2": float(np.max(np.abs(st_.V * xdr[:, 2]))),
        "peak_F_R_N": float(np.max(np.abs(ur[:, 0]))),
        "peak_T_Nm": float(np.max(np.abs(ur[:, 2]))),
        "max_residual": float(s.ref.check(s.cm, tr[::10]).max_dynamics),
    }
    settings = asdict(st_)
    settings["backoff"] = list(st_.backoff)
    settings["t_final"] = st_.t_final
    settings["states"] = list(s.states)
    settings["assigned_steering"] = {"q": list(sa.ast.q), "r": list(sa.ast.r),
                                     "backoff": list(sa.ast.backoff), "states": list(sa.states),
                                     "inputs": ["F_R", "gamma_dot"]}
    result["settings"] = settings
    result["timing_s"] = float(time.perf_counter() - t_start)
    if out is not None:
        result["figures"] = _figures(Path(out), s, loops)
    return result


_LOOP_LABELS = (("mpc", "LTV-MPC"), ("lqr", "finite-horizon LQR"),
                ("assigned", "LTV-MPC, assigned steering"),
                ("assigned_lqr", "LQR, assigned steering"))


def _figures(out: Path, s: LaneChangeSetup, loops: dict[str, Any]) -> list[str]:
    import matplotlib.pyplot as plt

    from ..plotting.style import cite, new_figure, savefig

    st_ = s.st
    extra = ("ISO 3888-1 double lane-change track; force/torque skate model of Table 1 "
             "(assigned steering: force skate)")
    names: list[str] = []
    t = loops["mpc"]["arrays"]["t"]
    xr = s.ref.x(t)
    fig, ax = new_figure(title=f"Double lane change at {st_.V:g} m/s: path of G")
    ax.plot(xr[:, 0], xr[:, 1], "k--", lw=1.0, label="reference (flatness)")
    for kind, lab in _LOOP_LABELS:
        a = loops[kind]["arrays"]
        ax.plot(a["x"][:, 0], a["x"][:, 1], label=lab)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.legend(fontsize=8)
    cite(fig, "road_review", extra=extra)
    names.append(Path(savefig(fig, out, "road_vehicles_path")).name)
    plt.close(fig)

    fig, ax = new_figure(title="Lateral deviation of G from the reference")
    for kind, lab in _LOOP_LABELS:
        a = loops[kind]["arrays"]
        ax.plot(a["t"], 100 * a["e"], label=lab)
    ax.axhline(15.0, color="0.5", lw=0.8, ls=":", label="target ±15 cm")
    ax.axhline(-15.0, color="0.5", lw=0.8, ls=":")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("lateral deviation [cm]")
    ax.legend(fontsize=8)
    cite(fig, "road_review", extra=extra)
    names.append(Path(savefig(fig, out, "road_vehicles_lateral_error")).name)
    plt.close(fig)

    fig, axs = new_figure(3, 1, title="Steering angle, steering rate and driving inputs")
    tr = np.linspace(0.0, st_.t_final, 501)
    axs[0].plot(tr, np.degrees(s.ref.x(tr)[:, 3]), "k--", lw=1.0, label="reference")
    axs[1].plot(tr, np.degrees(s.ref.xd(tr)[:, 3]), "k--", lw=1.0, label="reference")
    for kind, lab in (("mpc", "LTV-MPC"), ("lqr", "finite-horizon LQR")):
        a = loops[kind]["arrays"]
        axs[0].plot(a["t"], np.degrees(a["x"][:, 3]), label=lab)
        axs[1].plot(a["t"], np.degrees(a["xd"][:, 3]), label=lab)
        axs[2].step(a["t_u"], a["u"][:, 2], where="post", label=f"T, {lab}")
    for kind, lab in _LOOP_LABELS[2:]:
        a = loops[kind]["arrays"]
        axs[0].plot(a["t"], np.degrees(a["gamma"]), label=lab)
        axs[1].plot(a["t"], np.degrees(a["gamma_d"]), label=lab)
    for ax, lim in ((axs[0], st_.steer_max_deg), (axs[1], st_.steer_rate_max_deg_s)):
        ax.axhline(lim, color="r", lw=0.8, ls=":", label="limit")
        ax.axhline(-lim, color="r", lw=0.8, ls=":")
    axs[0].set_ylabel("γ [deg]")
    axs[1].set_ylabel("γ̇ [deg/s]")
    axs[2].set_ylabel("steering torque T [N m]")
    axs[2].set_xlabel("t [s]")
    for ax in axs:
        ax.legend(fontsize=6, loc="upper left", ncol=2)
    cite(fig, "road_review", extra=extra)
    names.append(Path(savefig(fig, out, "road_vehicles_inputs")).name)
    plt.close(fig)
    return names


def summary(result: dict[str, Any]) -> str:
    lines = ["Single-track models of the road-vehicle review (Table 1):"]
    for v, m in result["models"].items():
        lines.append(f"  {v:18s} n = {m['n']}, l = {m['l']}, dof = {m['dof']:g}, "
                     f"first-order ODEs = {m['first_order_odes']}")
    lines.append(f"Appell vs Newton–Euler (multipliers), max |Δẇ| = "
                 f"{result['appell_vs_newton_euler_max_diff']:.2e} over "
                 f"{', '.join(result['appell_vs_newton_euler'])}")
    lines.append(f"kinematic bicycle steady turn: radius relative error = "
                 f"{result['kinematic_turning_radius_rel_error']:.2e}")
    r = result["reference"]
    s = result["settings"]
    lines.append(f"ISO 3888-1 double lane change at {s['V']:g} m/s: reference peaks γ = "
                 f"{r['peak_steer_deg']:.2f}°, γ̇ = {r['peak_steer_rate_deg_s']:.1f}°/s, lateral "
                 f"acceleration {r['peak_lateral_acceleration_m_s2']:.1f} m/s²; limits |γ| ≤ "
                 f"{s['steer_max_deg']:g}°, |γ̇| ≤ {s['steer_rate_max_deg_s']:g}°/s")
    for key, lab in (("lane_change", "LTV-MPC (N = %d)" % s["horizon"]),
                     ("lane_change_lqr", "finite-horizon LQR"),
                     ("lane_change_assigned_steering", "LTV-MPC, γ assigned"),
                     ("lane_change_assigned_steering_lqr", "LQR, γ assigned")):
        b = result[key]
        lines.append(f"  {lab:20s} max |e| = {100 * b['max_lateral_error_m']:.1f} cm (after 1 s "
                     f"{100 * b['max_lateral_error_after_1s_m']:.1f} cm), rms {100 * b['rms_lateral_error_m']:.1f}"
                     f" cm, peak γ = {b['peak_steer_deg']:.2f}°, γ̇ = {b['peak_steer_rate_deg_s']:.1f}°/s"
                     f" (bounds {'respected' if b['bounds_respected'] else 'VIOLATED'}), median step "
                     f"{1e3 * b['median_step_s']:.2f} ms (CPU {1e3 * b['median_step_cpu_s']:.2f} ms)")
    return "\n".join(lines)
