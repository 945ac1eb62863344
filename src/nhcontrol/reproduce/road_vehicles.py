"""``nhcontrol reproduce road-vehicles``: single-track models of the road-vehicle review and an
ISO 3888-1 double lane change at 15 m/s (and, without ``--quick``, at the standard's 80 km/h)
tracked by LTV-MPC and LQR on the nonlinear model.

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
   model, from a lateral offset (`nhcontrol.applications.lane_change`: ``lane_change_setup``,
   ``closed_loop``);
3. the lane change on the ``force`` skate, whose steering angle is assigned (an input in the
   front skate constraint; `nhcontrol.applications.lane_change`): its reference with input rates →
   the third procedure with the rate matrix ``B_rate`` → ``input_state_form`` (``γ`` a state,
   ``γ̇`` the input; states ``[x, ẋ, y, ψ, γ]``) → ``LTVMPC`` with ``|γ|`` a state bound and
   ``|γ̇|`` an input bound, and the finite-horizon LQR with the same weights, each closed on the
   same mismatched nonlinear vehicle with ``γ`` piecewise linear in time (the commanded rate
   held over each sample);
4. the no-slip checks: the friction utilisation of the reference and of every loop
   (``nhcontrol.reference.friction_utilisation``, warned above 1; the MPCs bound it by soft
   output constraints on the skates' lateral forces, declared outputs of the models); both
   readings of the track's 3.5 m offset and both speeds for the reference, with the lower bound
   of the acceleration any motion through the cones needs
   (``lane_change.minimal_peak_lateral_acceleration``); the tyre plant
   (``single_track.tyre_plant``) converging to the skate model as the cornering stiffness grows
   (``tyre_convergence``) and, without ``--quick``, the four controllers closed on it at
   80 kN/rad per axle at the lane change's speed and at √1.5 times it (``tyre_plant_runs``)
   and over a range of stiffnesses (``tyre_stiffness_sweep``).

Derivations and choices: ``docs/theory/road_vehicles.md``; guide: ``docs/guide/road_vehicles.md``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import dataclasses

from ..applications.lane_change import (TYRE_CONTROLLERS, LaneChangeSettings, LaneChangeSetup,
                                   assigned_steering_setup, closed_loop, closed_loop_assigned,
                                   lane_change_setup, tyre_convergence, tyre_plant_runs,
                                   tyre_stiffness_sweep)
from ..models import lane_change as lc
from ..reference import FrictionLimitWarning, friction_utilisation
from ..models import single_track as st

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

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
    checks = {v: st.appell_check(models[v]) for v in checked}
    diffs = {v: c["max_abs_diff"] for v, c in checks.items()}
    rel = {v: c["max_relative_to_roundoff"] for v, c in checks.items()}
    return {"models": table, "appell_vs_newton_euler": diffs,
            "appell_vs_newton_euler_max_diff": float(max(diffs.values())),
            "appell_vs_newton_euler_relative": rel,
            "appell_vs_newton_euler_max_relative": float(max(rel.values())),
            "kinematic_turning_radius_rel_error": st.kinematic_turn_error(mdl=models["kinematic"])}


def _track(s: LaneChangeSetup) -> dict[str, Any]:
    """Geometry of the ISO 3888-1 track and of the reference path (JSON)."""
    tr = s.st.track
    path = lc.iso_3888_1_path(offset_reference=s.st.offset_reference)
    return {"standard": "ISO 3888-1 (double lane change)",
            "offset_reference": tr.offset_reference,
            "section_lengths_m": list(lc.ISO_3888_1_SECTIONS),
            "vehicle_width_m": tr.vehicle_width,
            "lane_widths_m": {"lane_1": tr.widths[0], "lane_3": tr.widths[1],
                              "lane_5_6": tr.widths[2]},
            "lane_offset_m": tr.offset,
            "lane_centre_offset_m": tr.centre_offset,
            "lanes": [{"x_begin_m": a, "x_end_m": b, "y_centre_m": y, "width_m": w}
                      for a, b, y, w in tr.lanes],
            "transitions": [{"x_start_m": a, "length_m": ell, "lateral_change_m": h}
                            for a, ell, h in zip(path.starts, path.lengths, path.heights)],
            "transition_shape": "degree-9 smoothstep (curvature and its first two rates continuous)"}


def _reference_numbers(cm: CompiledModel, V: float, offset_reference: str, mu: float) -> dict[str, Any]:
    """Peaks of the lane-change reference of ``cm`` (``force_torque``) at the speed ``V`` on the
    track read as ``offset_reference``: lateral acceleration, friction utilisation (from the
    multipliers of inverse dynamics), cone clearance, and the geometric lower bound of the
    acceleration any motion through the cones needs."""
    tr = lc.iso_3888_1_track(offset_reference)
    T = sum(lc.ISO_3888_1_SECTIONS) / V
    ref = lc.lane_change_reference(cm, V, t_final=T + 0.5,
                                   path=lc.iso_3888_1_path(offset_reference=offset_reference))
    t = np.linspace(0.0, T, 1001)
    fu = friction_utilisation(cm, ref, mu, st.static_axle_loads(cm), t=t)
    p = dict(zip(cm.parameters, cm.param_vector()))
    tc = np.linspace(0.0, T, 4001)
    bound = lc.minimal_peak_lateral_acceleration(V, tr)
    mug = mu * st.GRAVITY
    return {"speed_m_s": float(V), "speed_km_h": float(3.6 * V),
            "lane_centre_offset_m": tr.centre_offset,
            "peak_lateral_acceleration_m_s2": float(np.max(np.abs(lc.lateral_acceleration(ref, t)))),
            "peak_friction_utilisation": fu.peak,
            "cone_clearance_m": lc.cone_clearance(ref.x(tc), p["a"], p["b"], tr),
            "lower_bound_any_path_m_s2": bound["lower_bound_m_s2"],
            "mu_g_m_s2": float(mug),
            "reference_within_friction": bool(fu.peak <= 1.0),
            "excluded_by_geometry": bool(bound["lower_bound_m_s2"] > mug)}


def _readings(cm: CompiledModel, st_: LaneChangeSettings) -> dict[str, Any]:
    """`_reference_numbers` for both readings of the 3.5 m offset, at ``st_.V`` and at the
    standard's test speed (80 km/h)."""
    return {ref: {f"{3.6 * V:.0f}_km_h": _reference_numbers(cm, V, ref, st_.mu)
                  for V in (st_.V, lc.TEST_SPEED)}
            for ref in lc.OFFSET_REFERENCES}


_LOOP_KEYS = ("max_lateral_error_m", "peak_steer_deg", "peak_steer_rate_deg_s", "bounds_respected",
              "peak_friction_utilisation", "cone_clearance_m")


def _loop_table(blocks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per closed loop: its peak friction utilisation, whether it kept the steering bounds
    and the friction limit, its cone clearance and largest deviation."""
    out = {}
    for name, b in blocks.items():
        row = {k: b[k] for k in _LOOP_KEYS}
        row["within_friction"] = bool(b["peak_friction_utilisation"] <= 1.0)
        row["inside_cones"] = bool(b["cone_clearance_m"] >= 0.0)
        out[name] = row
    return out


def _loops(st_: LaneChangeSettings, s: LaneChangeSetup | None = None, sa: Any = None
           ) -> tuple[dict[str, Any], LaneChangeSetup, Any]:
    """The four closed loops (torque-steered and assigned-steering skates, MPC and LQR)."""
    s = lane_change_setup(st_) if s is None else s
    sa = assigned_steering_setup(st_) if sa is None else sa
    loops = {kind: closed_loop(s, kind) for kind in ("mpc", "lqr")}
    loops["assigned"] = closed_loop_assigned(sa, "mpc")
    loops["assigned_lqr"] = closed_loop_assigned(sa, "lqr")
    return loops, s, sa


_RUNS = ("reference", "lane_change", "lane_change_lqr", "lane_change_assigned_steering",
         "lane_change_assigned_steering_lqr")


def _warn_friction(result: dict[str, Any]) -> None:
    """Warn (`FrictionLimitWarning`) and list in ``friction_warnings`` every run whose peak
    friction utilisation exceeds 1: the no-slip wheel model is then outside its validity."""
    over = [k for k in _RUNS if k in result and result[k]["peak_friction_utilisation"] > 1.0]
    over += [f"lane_change_80_km_h.{k}" for k, b in result.get("lane_change_80_km_h", {}).items()
             if b["peak_friction_utilisation"] > 1.0]
    result["friction_warnings"] = over
    for k in over:
        b = result[k] if "." not in k else result["lane_change_80_km_h"][k.split(".")[1]]
        warnings.warn(f"road-vehicles: {k} needs {b['peak_friction_utilisation']:.2f} times "
                      f"the friction available (mu = {result['settings']['mu']:g}): the no-slip wheel model is outside its validity", FrictionLimitWarning,
                      stacklevel=2)


def run(*, out: Path | None = None, quick: bool = False, animate: bool = False) -> dict[str, Any]:
    """Headline numbers (JSON-serialisable); with ``out`` also the figures (and with
    ``animate`` ``road_vehicles_lane_change.gif``: the car on the track with its cones, LTV-MPC).

    Returns
    -------
    dict
        ``models`` (per variant of Table 1, skate and rigid-wheel: ``n``, ``l``, ``dof``,
        ``first_order_odes``), ``appell_vs_newton_euler`` (per variant checked: largest
        ``|Δẇ|``) and ``appell_vs_newton_euler_max_diff``, ``appell_vs_newton_euler_relative``
        (per variant: largest ``|Δẇ| / (ε κ₂(M) ‖ẍ‖)``,
        [`appell_check`][nhcontrol.models.single_track.appell_check]) and
        ``appell_vs_newton_euler_max_relative``, ``kinematic_turning_radius_rel_error``,
        ``lane_change`` (MPC) and ``lane_change_lqr`` (``max_lateral_error_m``,
        ``rms_lateral_error_m``, ``peak_steer_deg``, ``peak_steer_rate_deg_s``,
        ``median_step_s``, ...), ``lane_change_assigned_steering`` (the same numbers for the
        MPC on the ``force`` skate with ``γ`` assigned, ``γ̇`` its input),
        ``lane_change_assigned_steering_lqr`` (the finite-horizon LQR with the same weights, no
        bounds), every run with its ``peak_friction_utilisation`` (skates' lateral forces from the
        multipliers over μ times the static load split, μ = ``settings.mu``), ``reference``
        (peaks of the reference, its ``cone_clearance_m``, ``peak_friction_utilisation`` and
        ``friction`` per wheel), ``speed_m_s``, ``track`` (ISO 3888-1 geometry and the path's
        transitions), ``friction_warnings`` (runs above 1; each also warns with
        `FrictionLimitWarning`), ``tyre_plant`` (``convergence_slope`` of the open-loop
        deviation of the tyre plant from the skate model vs cornering stiffness and the
        ``convergence`` data; without ``quick`` also ``x1`` and ``x1.5``: the four controllers
        designed on the skate models closed on the magic-formula tyre plant at 80 kN/rad per
        axle, at the lane change's speed and at √1.5 times it, each with
        ``max_lateral_error_m``, ``peak_slip_angle_deg``, ``bounds_respected``, ...; and
        ``stiffness_sweep``: the four at the lane change's speed for 80–500 kN/rad) and
        ``settings`` (``assigned_steering``: the weights of both
        controllers, the MPC's margins, states and inputs; ``offset_reference``,
        ``friction_bound``), ``track_readings`` (per reading of the 3.5 m offset,
        ``"centre-to-near-row"`` and ``"row-to-row"``, and per speed, ``"54_km_h"`` and
        ``"80_km_h"``: the reference's ``peak_lateral_acceleration_m_s2``,
        ``peak_friction_utilisation``, ``cone_clearance_m``, ``lane_centre_offset_m``, the
        ``lower_bound_any_path_m_s2`` of the acceleration any motion through the cones needs,
        ``mu_g_m_s2``, ``reference_within_friction``, ``excluded_by_geometry``),
        ``closed_loops`` (per speed and loop: ``peak_friction_utilisation``,
        ``within_friction``, ``bounds_respected``, ``cone_clearance_m``, ``inside_cones``,
        ``max_lateral_error_m``, peak steering angle and rate) and, without ``quick``,
        ``lane_change_80_km_h`` (the four loops at 80 km/h, numbers as at 15 m/s).
    """
    st_ = QUICK if quick else LaneChangeSettings()
    t_start = time.perf_counter()
    result = _models(quick)
    loops, s, sa = _loops(st_)
    for key, kind in zip(_RUNS[1:], ("mpc", "lqr", "assigned", "assigned_lqr")):
        result[key] = loops[kind]["numbers"]
    tr = np.linspace(0.0, st_.t_final, 1001)
    xr, xdr, ur = s.ref.x(tr), s.ref.xd(tr), s.ref.u(tr)
    result["reference"] = {
        "peak_steer_deg": float(np.degrees(np.max(np.abs(xr[:, 3])))),
        "peak_steer_rate_deg_s": float(np.degrees(np.max(np.abs(xdr[:, 3])))),
        "peak_yaw_rate_deg_s": float(np.degrees(np.max(np.abs(xdr[:, 2])))),
        "peak_lateral_acceleration_m_s2": float(np.max(np.abs(lc.lateral_acceleration(s.ref, tr)))),
        "peak_F_R_N": float(np.max(np.abs(ur[:, 0]))),
        "peak_T_Nm": float(np.max(np.abs(ur[:, 2]))),
        "max_residual": float(s.ref.check(s.cm, tr[::10]).max_dynamics),
    }
    p = dict(zip(s.cm.parameters, s.cm.param_vector()))
    tc = np.linspace(0.0, st_.t_final, 4001)
    result["reference"]["cone_clearance_m"] = lc.cone_clearance(s.ref.x(tc), p["a"], p["b"],
                                                                st_.track)
    result["speed_m_s"] = float(st_.V)
    result["track"] = _track(s)
    result["track_readings"] = _readings(s.cm, st_)
    fu_ref = friction_utilisation(s.cm, s.ref, st_.mu, st.static_axle_loads(s.cm), t=tr)
    result["reference"]["peak_friction_utilisation"] = fu_ref.peak
    result["reference"]["friction"] = fu_ref.summary()
    loops["reference_friction"] = fu_ref
    result["closed_loops"] = {f"{3.6 * st_.V:.0f}_km_h": _loop_table(
        {k: result[k] for k in _RUNS[1:]})}
    if not quick:
        st80 = dataclasses.replace(st_, V=lc.TEST_SPEED)
        loops80, _, _ = _loops(st80)
        result["lane_change_80_km_h"] = {k: loops80[kind]["numbers"] for k, kind in
                                         zip(_RUNS[1:], ("mpc", "lqr", "assigned", "assigned_lqr"))}
        result["closed_loops"]["80_km_h"] = _loop_table(result["lane_change_80_km_h"])
    settings = asdict(st_)
    settings["backoff"] = list(st_.backoff)
    settings["t_final"] = st_.t_final
    settings["states"] = list(s.states)
    settings["assigned_steering"] = {"q": list(sa.ast.q), "r": list(sa.ast.r),
                                     "backoff": list(sa.ast.backoff), "states": list(sa.states),
                                     "inputs": ["F_R", "gamma_dot"]}
    result["settings"] = settings
    _warn_friction(result)
    conv = tyre_convergence()
    tyre: dict[str, Any] = {"convergence_slope": conv["convergence_slope"],
                            "convergence": {k: v for k, v in conv.items() if k != "arrays"}}
    loops["tyre_convergence"] = conv
    if not quick:
        runs = tyre_plant_runs(st_, setups={1.0: (s, sa)})
        tyre.update({k: v for k, v in runs.items() if k != "arrays"})
        loops["tyre_runs"] = runs
        tyre["stiffness_sweep"] = loops["tyre_sweep"] = tyre_stiffness_sweep(s, sa)
    else:
        tyre["controllers"] = "not run with --quick (see the full run)"
    result["tyre_plant"] = tyre
    result["timing_s"] = float(time.perf_counter() - t_start)
    if out is not None:
        result["figures"] = _figures(Path(out), s, loops)
        if animate:
            result["animations"] = [_animation(Path(out), s, loops["mpc"], quick).name]
    return result


def _styles() -> list[dict[str, Any]]:
    """Colour and line style of the closed loops, in the order of `_LOOP_LABELS`: the house
    palette (colour-blind safe) paired with its line styles."""
    from ..plotting.style import LINESTYLES, PALETTE

    return [{"color": c, "ls": ls} for c, ls in zip(PALETTE, LINESTYLES)]


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
                              cones=np.column_stack(s.st.track.cones()),
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
    fig, ax = new_figure(title=f"ISO 3888-1 double lane change at {st_.V:g} m/s: path of G")
    cx, cy = st_.track.cones()
    ax.plot(cx, cy, ls="none", marker="^", ms=4, color=_styles()[4]["color"],
            label="cones (ISO 3888-1)")
    reference_line(ax, xr[:, 0], xr[:, 1], label="reference (flatness)")
    for (kind, lab), col in zip(_LOOP_LABELS, _styles()):
        a = loops[kind]["arrays"]
        ax.plot(a["x"][:, 0], a["x"][:, 1], **col, label=lab)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.legend()
    cite(fig, "road_review", extra=extra)
    names.append(Path(savefig(fig, out, "road_vehicles_path")).name)
    plt.close(fig)

    fig, ax = new_figure(title="Lateral deviation of G from the reference")
    for (kind, lab), col in zip(_LOOP_LABELS, _styles()):
        a = loops[kind]["arrays"]
        ax.plot(a["t"], 100 * a["e"], **col, label=lab)
    ax.axhline(15.0, color="0.5", lw=0.8, ls=":", label="target ±15 cm")
    ax.axhline(-15.0, color="0.5", lw=0.8, ls=":")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("lateral deviation (cm)")
    ax.legend()
    cite(fig, "road_review", extra=extra)
    names.append(Path(savefig(fig, out, "road_vehicles_lateral_error")).name)
    plt.close(fig)

    fig, axs = new_figure(3, 1, title="Steering angle, steering rate and driving inputs",
                          figsize=(7.5, 9.6))        # wide: the legends stand beside the axes
    tr = np.linspace(0.0, st_.t_final, 501)
    reference_line(axs[0], tr, np.degrees(s.ref.x(tr)[:, 3]))
    reference_line(axs[1], tr, np.degrees(s.ref.xd(tr)[:, 3]))
    for (kind, lab), col in zip(_LOOP_LABELS[:2], _styles()):
        a = loops[kind]["arrays"]
        axs[0].plot(a["t"], np.degrees(a["x"][:, 3]), **col, label=lab)
        axs[1].plot(a["t"], np.degrees(a["xd"][:, 3]), **col, label=lab)
        axs[2].step(a["t_u"], a["u"][:, 2], where="post", **col, label=f"T, {lab}")
    for (kind, lab), col in zip(_LOOP_LABELS[2:], _styles()[2:]):
        a = loops[kind]["arrays"]
        axs[0].plot(a["t"], np.degrees(a["gamma"]), **col, label=lab)
        axs[1].plot(a["t"], np.degrees(a["gamma_d"]), **col, label=lab)
    for ax, lim in ((axs[0], st_.steer_max_deg), (axs[1], st_.steer_rate_max_deg_s)):
        ax.axhline(lim, color="0.3", lw=0.8, ls=":", label="limit")
        ax.axhline(-lim, color="0.3", lw=0.8, ls=":")
    axs[0].set_ylabel("γ (deg)")
    axs[1].set_ylabel("γ̇ (deg/s)")
    axs[2].set_ylabel("steering torque T (N m)")
    axs[2].set_xlabel("t (s)")
    for ax in axs:                     # beside the axes: inside they covered the curves
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    cite(fig, "road_review", extra=extra)
    names.append(Path(savefig(fig, out, "road_vehicles_inputs")).name)
    plt.close(fig)

    fu = loops["reference_friction"]
    fig, ax = new_figure(title=f"Friction utilisation |F|/(μN) of the skates, μ = {fu.mu:g}")
    reference_line(ax, fu.t, fu.utilisation[:, 0], label="reference, rear")
    reference_line(ax, fu.t, fu.utilisation[:, 1], label="reference, front", ls="-")
    for (kind, lab), col in zip(_LOOP_LABELS, _styles()):
        a = loops[kind]["arrays"]
        ax.plot(a["t"], np.max(a["friction"], axis=1), **col,
                label=f"{lab} (larger of the two)")
    ax.axhline(1.0, color="0.3", lw=0.8, ls=":", label="friction limit")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("friction utilisation |F|/(μN) [-]")
    ax.set_ylim(0.0, max(1.1, 1.05 * max(float(np.max(loops[k]["arrays"]["friction"]))
                                          for k, _ in _LOOP_LABELS)))
    ax.legend(fontsize=7)
    cite(fig, "road_review", extra=extra + "; lateral skate forces = constraint multipliers, "
                                          "normal loads = static load split")
    names.append(Path(savefig(fig, out, "road_vehicles_friction")).name)
    plt.close(fig)

    conv = loops["tyre_convergence"]
    C, err = np.array(conv["stiffness_N_rad"]), np.array(conv["max_position_error_m"])
    fig, ax = new_figure(title="Tyre plant → skate model as the cornering stiffness grows")
    ax.loglog(C, err, "o-", color=_styles()[0]["color"],
              label=f"max |$r_G$(tyre) − $r_G$(skate)|, {conv['law']} tyres, same inputs")
    lo, hi = conv["fit_stiffness_N_rad"]
    m = (C >= lo) & (C <= hi)
    k = np.polyfit(np.log(C[m]), np.log(err[m]), 1)
    ax.loglog(C[m], np.exp(np.polyval(k, np.log(C[m]))), "--", color=_styles()[1]["color"],
              label=f"least-squares fit, slope {conv['convergence_slope']:.3f}")
    ax.axvline(80e3, color="0.3", lw=0.8, ls=":",
               label="80 kN/rad per axle (the closed-loop runs)")
    ax.set_xlabel(r"cornering stiffness per axle $C_\alpha$ (N/rad)")
    ax.set_ylabel("largest deviation of G (m)")
    ax.legend(fontsize=7)
    cite(fig, "road_review", extra=extra + "; tyre plant derived here (docs/theory/road_vehicles.md)")
    names.append(Path(savefig(fig, out, "road_vehicles_tyre_convergence")).name)
    plt.close(fig)

    if "tyre_runs" in loops:
        runs = loops["tyre_runs"]
        keys = [k for k in runs if k.startswith("x")]
        fig, axs = new_figure(len(keys), 1, title="Controllers designed on the skate models, "
                              f"closed on the tyre plant ({runs['stiffness_N_rad'] / 1e3:g} kN/rad)")
        labels = dict(zip((c[0] for c in TYRE_CONTROLLERS), (lab for _, lab in _LOOP_LABELS)))
        for ax, key in zip(np.atleast_1d(axs), keys):
            for (name, lab), col in zip(labels.items(), _styles()):
                a = runs["arrays"][key][name]
                ax.plot(a["t"], a["e"], **col, label=lab)
            ax.set_title(f"{runs[key]['speed_m_s']:.2f} m/s: {runs[key]['lateral_acceleration_factor']:g}"
                         " × the lane change's lateral acceleration", fontsize=9)
            ax.set_ylabel("lateral deviation of G (m)")
            ax.legend(fontsize=7, ncol=2)
        np.atleast_1d(axs)[-1].set_xlabel("t (s)")
        cite(fig, "road_review", extra=extra + "; magic-formula tyres (Pacejka 2012)")
        names.append(Path(savefig(fig, out, "road_vehicles_tyre_plant")).name)
        plt.close(fig)
        sw = loops["tyre_sweep"]
        fig, ax = new_figure(title=f"Skate-model controllers on the tyre plant at {st_.V:g} m/s "
                             "vs cornering stiffness")
        for (name, lab), col, mk in zip(labels.items(), _styles(), "osD^"):
            ax.loglog(sw["stiffness_N_rad"], sw[name]["max_lateral_error_m"], marker=mk,
                      **col, label=lab)
        ax.axhline(st_.y_offset, color="0.3", lw=0.8, ls=":", label="initial offset")
        ax.set_xlabel(r"cornering stiffness per axle $C_\alpha$ (N/rad)")
        ax.set_ylabel("max lateral deviation of G (m)")
        ax.legend(fontsize=7)
        cite(fig, "road_review", extra=extra + "; magic-formula tyres (Pacejka 2012)")
        names.append(Path(savefig(fig, out, "road_vehicles_tyre_sweep")).name)
        plt.close(fig)
    return names


def summary(result: dict[str, Any]) -> str:
    lines = ["Single-track models of the road-vehicle review (Table 1):"]
    for v, m in result["models"].items():
        lines.append(f"  {v:18s} n = {m['n']}, l = {m['l']}, dof = {m['dof']:g}, "
                     f"first-order ODEs = {m['first_order_odes']}")
    lines.append(f"Appell vs Newton–Euler (multipliers), max |Δẇ| = "
                 f"{result['appell_vs_newton_euler_max_diff']:.2e}, at most "
                 f"{result['appell_vs_newton_euler_max_relative']:.2f} ε κ₂(M) ‖ẍ‖ over "
                 f"{', '.join(result['appell_vs_newton_euler'])}")
    lines.append(f"kinematic bicycle steady turn: radius relative error = "
                 f"{result['kinematic_turning_radius_rel_error']:.2e}")
    r = result["reference"]
    s = result["settings"]
    lines.append(f"ISO 3888-1 double lane change at {s['V']:g} m/s: reference peaks γ = "
                 f"{r['peak_steer_deg']:.2f}°, γ̇ = {r['peak_steer_rate_deg_s']:.1f}°/s, lateral "
                 f"acceleration {r['peak_lateral_acceleration_m_s2']:.2f} m/s², cone clearance "
                 f"{100 * r['cone_clearance_m']:.1f} cm, friction utilisation "
                 f"{r['peak_friction_utilisation']:.2f} (μ = {s['mu']:g}); limits |γ| ≤ "
                 f"{s['steer_max_deg']:g}°, |γ̇| ≤ {s['steer_rate_max_deg_s']:g}°/s")
    for key, lab in (("lane_change", "LTV-MPC (N = %d)" % s["horizon"]),
                     ("lane_change_lqr", "finite-horizon LQR"),
                     ("lane_change_assigned_steering", "LTV-MPC, γ assigned"),
                     ("lane_change_assigned_steering_lqr", "LQR, γ assigned")):
        b = result[key]
        lines.append(f"  {lab:20s} max |e| = {100 * b['max_lateral_error_m']:.1f} cm (after 1 s "
                     f"{100 * b['max_lateral_error_after_1s_m']:.1f} cm), rms {100 * b['rms_lateral_error_m']:.1f}"
                     f" cm, peak γ = {b['peak_steer_deg']:.2f}°, γ̇ = {b['peak_steer_rate_deg_s']:.1f}°/s"
                     f" (bounds {'respected' if b['bounds_respected'] else 'VIOLATED'}), friction "
                     f"utilisation {b['peak_friction_utilisation']:.2f}, median step "
                     f"{1e3 * b['median_step_s']:.2f} ms (CPU {1e3 * b['median_step_cpu_s']:.2f} ms)")
    for ref, by_speed in result.get("track_readings", {}).items():
        for key, b in by_speed.items():
            lines.append(f"  track read {ref} at {b['speed_km_h']:.0f} km/h: reference a_y "
                         f"{b['peak_lateral_acceleration_m_s2']:.2f} m/s², friction utilisation "
                         f"{b['peak_friction_utilisation']:.2f}; any path through the cones needs "
                         f"≥ {b['lower_bound_any_path_m_s2']:.2f} m/s² (μg = {b['mu_g_m_s2']:.2f})")
    for speed, table in result.get("closed_loops", {}).items():
        for name, b in table.items():
            lines.append(f"  closed loop {speed} {name:34s} friction utilisation "
                         f"{b['peak_friction_utilisation']:.2f}"
                         f" ({'within' if b['within_friction'] else 'BEYOND'} friction), steering "
                         f"bounds {'kept' if b['bounds_respected'] else 'BROKEN'}, cone clearance "
                         f"{100 * b['cone_clearance_m']:.1f} cm")
    if result.get("friction_warnings"):
        lines.append("  WARNING: friction utilisation above 1 (no-slip model outside its validity) in "
                     + ", ".join(result["friction_warnings"]))
    ty = result.get("tyre_plant")
    if ty:
        c = ty["convergence"]
        lines.append(f"tyre plant → skate model: deviation ∝ C_α^{ty['convergence_slope']:.3f} "
                     f"(fit over {c['fit_stiffness_N_rad'][0]:.0e}–{c['fit_stiffness_N_rad'][1]:.0e}"
                     f" N/rad); open loop at 1e5 N/rad: {c['max_position_error_m'][1]:.2f} m")
        for key in [k for k in ty if k.startswith("x")]:
            b = ty[key]
            lines.append(f"  on the tyre plant at {b['speed_m_s']:.2f} m/s "
                         f"({b['lateral_acceleration_factor']:g} × a_y):")
            for name, *_ in TYRE_CONTROLLERS:
                n = b[name]
                lines.append(f"    {name:13s} max |e| = {n['max_lateral_error_m']:.2f} m, peak slip "
                             f"{n['peak_slip_angle_deg']:.1f}°, bounds "
                             f"{'respected' if n['bounds_respected'] else 'VIOLATED'}")
    return "\n".join(lines)
