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
   model, from a lateral offset (`nhcontrol.lane_change_control`: ``lane_change_setup``,
   ``closed_loop``);
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

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ..lane_change_control import (LaneChangeSettings, LaneChangeSetup, assigned_steering_setup,
                                   closed_loop, closed_loop_assigned, lane_change_setup)
from ..models import single_track as st

__all__ = ["run", "summary", "QUICK"]

QUICK = LaneChangeSettings(rtol=1e-6, atol=1e-8)
"""``--quick``: looser integration tolerances (same controllers); Appell checks of the skate
variants only."""


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


def run(*, out: Path | None = None, quick: bool = False, animate: bool = False) -> dict[str, Any]:
    """Headline numbers (JSON-serialisable); with ``out`` also the figures (and with
    ``animate`` ``road_vehicles_lane_change.gif``: the car on the track with its cones, LTV-MPC).

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
        if animate:
            result["animations"] = [_animation(Path(out), s, loops["mpc"], quick).name]
    return result


def _animation(out: Path, s: LaneChangeSetup, loop: dict[str, Any], quick: bool) -> Path:
    """GIF of the MPC lane change: the car (a rectangle, front wheel steered) and the cones."""
    from ..plotting import animate
    from ..plotting.animation import lane_change_scene

    a = loop["arrays"]
    t = np.asarray(a["t"])
    x = np.asarray(a["x"])
    xr = s.ref.x(t)
    scene = lane_change_scene(t, x[:, 0], x[:, 1], x[:, 2], gamma=x[:, 3],
                              reference=(xr[:, 0], xr[:, 1]),
                              title=f"Double lane change at {s.st.V:g} m/s, LTV-MPC")
    return animate(scene, out / "road_vehicles_lane_change.gif", fps=15, dpi=40 if quick else 60,
                   max_frames=40 if quick else 120)


_LOOP_LABELS = (("mpc", "LTV-MPC"), ("lqr", "finite-horizon LQR"),
                ("assigned", "LTV-MPC, assigned steering"),
                ("assigned_lqr", "LQR, assigned steering"))


def _figures(out: Path, s: LaneChangeSetup, loops: dict[str, Any]) -> list[str]:
    import matplotlib.pyplot as plt

    from ..plotting.style import cite, new_figure, reference_line, savefig

    st_ = s.st
    extra = ("ISO 3888-1 double lane-change track; force/torque skate model of Table 1 "
             "(assigned steering: force skate)")
    names: list[str] = []
    t = loops["mpc"]["arrays"]["t"]
    xr = s.ref.x(t)
    fig, ax = new_figure(title=f"Double lane change at {st_.V:g} m/s: path of G")
    reference_line(ax, xr[:, 0], xr[:, 1], label="reference (flatness)")
    for kind, lab in _LOOP_LABELS:
        a = loops[kind]["arrays"]
        ax.plot(a["x"][:, 0], a["x"][:, 1], label=lab)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.legend()
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
    ax.legend()
    cite(fig, "road_review", extra=extra)
    names.append(Path(savefig(fig, out, "road_vehicles_lateral_error")).name)
    plt.close(fig)

    fig, axs = new_figure(3, 1, title="Steering angle, steering rate and driving inputs")
    tr = np.linspace(0.0, st_.t_final, 501)
    reference_line(axs[0], tr, np.degrees(s.ref.x(tr)[:, 3]))
    reference_line(axs[1], tr, np.degrees(s.ref.xd(tr)[:, 3]))
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
        ax.axhline(lim, color="0.3", lw=0.8, ls=":", label="limit")
        ax.axhline(-lim, color="0.3", lw=0.8, ls=":")
    axs[0].set_ylabel("γ [deg]")
    axs[1].set_ylabel("γ̇ [deg/s]")
    axs[2].set_ylabel("steering torque T [N m]")
    axs[2].set_xlabel("t [s]")
    for ax in axs:
        ax.legend(loc="upper left", ncol=2)
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
