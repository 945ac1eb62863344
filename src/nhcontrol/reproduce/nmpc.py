"""``nhcontrol reproduce nmpc``: LTV-MPC about the nominal reference against real-time-iteration
and SQP nonlinear MPC re-linearizing exactly along the prediction.

Arranges library calls:

1. **ball-plate circle** (thesis Ch. 8 reference, ``ρ = 0.5 m``, ``ω = 1 rad/s``): the
   controllers are designed on the nominal ball; the plant's ball is 10 % larger
   (``R = 1.1 R_nominal``, ``I = 2/5 m R²``) and starts 5 cm outside the circle
   (`ball_plate.initial_conditions` with ``ε_x = 5 cm``, all other perturbations zero, made
   consistent for the plant). ``ltv_mpc``: [`MPCController`][nhcontrol.design.MPCController] on
   the controllable 7-state formulation about the nominal reference (Sect. 8.4.5);
   ``rti`` and ``sqp``: [`NMPCController`][nhcontrol.design.NMPCController] on the 8-state
   linearization of ``PARTITION_8_72`` (``mode="rti"`` / ``"sqp"``). All: ``N = 20``,
   ``h = T/125``, ``|α|, |β| ≤ 10°``, steps ``≤ 0.5°`` per sample, the same weights on the
   contact point (``10⁴``) and on ``φ̇, θ̇`` (``0.1``), none on the ball's angles (a ball of another
   size cannot follow both the contact-point path and the nominal ball's rotation),
   ``R = 10³ I``. Error: distance of the contact point from the reference point
   ``‖C(t) − C_ref(t)‖`` at the samples, ``t = 0`` included (so ``max_error_m`` is the 5 cm
   initial offset for every controller: one sample's input cannot change the position at the
   next sample appreciably; ``max_error_after_1s_m`` and the RMS errors compare the transient).
   ``rti_true_ball`` is a diagnostic: the same RTI with the plant's ball in its prediction
   model (``p=`` the plant's parameters): what is left of the error without the parameter
   mismatch, which no re-linearization of the *designed* model can remove.
2. **ball-plate far from the nominal linearization** (key ``ball_plate_far``): the nominal ball
   (no parameter mismatch), contact point 5 cm outside the circle, and the ball's yaw and roll
   ``FAR_ANGLES_DEG`` = 45° away from the reference's (a ball put on the plate in another
   orientation). The LTV model of Eq. (8.74) is linear in the yaw-lean-roll deviations, so
   ``ltv_mpc`` (the same controller as in case 1) predicts with the Jacobians of the reference
   orientation; ``rti`` and ``sqp`` re-linearize along the predicted trajectory at the actual
   orientation; SQP (iterated to ``sqp_tol = 1e-4`` at every sample) is the converged reference.
   ``ltv_mpc_orientation_free`` is the LTV-MPC fed with ``ball_plate.orientation_free_deviation``
   (derived here: the orientation of a homogeneous ball is ignorable, so it is replaced by the
   reference's with the same angular velocity): for this symmetric ball it removes the reason
   re-linearization pays, and is reported so that the comparison says so. Errors "after the
   transient" over ``t ≥ FAR_TRANSIENT_S`` (keys ``max_error_after_1s_m``,
   ``rms_error_after_1s_m`` keep their names; ``settings.transient_s`` says the window).
3. **double lane change** (ISO 3888-1, `nhcontrol.applications.lane_change.lane_change_setup`: the
   torque-steered skate, reference by flatness and inverse dynamics, plant with other mass,
   inertia and centre of mass, initial lateral offset): RTI with the steering angle and rate as
   bounded states (with the margins of `LaneChangeSettings.backoff`), ``F_F = 0``.

Step times are the wall-clock seconds of one controller sample (re-linearization, ZOH and QP
included) and, for reference on a shared machine, its CPU seconds (``*_cpu_s``).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..design import MPCController, NMPCController
from ..applications.ball_plate_control import (BOUND_DEG, HORIZON, OFFSET_M, R_SCALE, RATE_DEG,
                                               ball_plate_nmpc_setup)
from ..applications.lane_change import LaneChangeSettings, lane_change_setup
from ..models import ball_plate as bp
from ..models import lane_change as lc
from ..simulate import forward_dynamics
from ..systems import DiscreteLTV

__all__ = ["run", "summary"]

FAR_ANGLES_DEG = (45.0, 0.0, 45.0)
"""``ball_plate_far``: the ball's yaw, lean and roll away from the reference's at ``t = 0`` [deg]
(a ball put on the plate in another orientation; nominal ball, contact point 5 cm outside)."""
FAR_TRANSIENT_S = 1.5
"""``ball_plate_far``: errors "after the transient" are taken over ``t ≥`` this [s]."""
FAR_CONTROLLERS = ("ltv_mpc", "ltv_mpc_orientation_free", "rti", "sqp")


def _ball_plate(quick: bool, *, r_scale: float | None = None, offset: float | None = None,
                angles_deg: tuple[float, float, float] = (0.0, 0.0, 0.0),
                t_final: float | None = None, transient_s: float = 1.0,
                names: tuple[str, ...] = ("ltv_mpc", "rti", "sqp", "rti_true_ball")
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """One ball-plate case: plant ball ``r_scale`` times the design's, contact point ``offset``
    outside the circle, the ball's yaw, lean and roll ``angles_deg`` away from the reference's;
    errors "after the transient" over ``t ≥ transient_s`` (keys ``*_after_1s_*`` keep their
    names for ``transient_s = 1``)."""
    r_scale = R_SCALE if r_scale is None else r_scale
    offset = OFFSET_M if offset is None else offset
    s = ball_plate_nmpc_setup(r_scale=r_scale, offset=offset, angles_deg=angles_deg)
    cm, plant, x0, xd0, ref, dt = s.cm, s.plant, s.x0, s.xd0, s.ref, s.dt
    plant_R = r_scale * bp.DEFAULTS["R"]
    if t_final is None:
        t_final = 3.0 if quick else 10.0
    b, r = math.radians(BOUND_DEG), math.radians(RATE_DEG)
    bounds, Q7, Q8, R, dsys = s.bounds, s.Q7, s.Q8, s.R, s.dsys
    reduced_deviation, reduced_orientation_free = s.deviation, s.orientation_free_deviation

    make = {
        "ltv_mpc": lambda: MPCController(dsys, ref, HORIZON, Q7, R, deviation=reduced_deviation,
                                         **bounds),
        "ltv_mpc_orientation_free": lambda: MPCController(
            dsys, ref, HORIZON, Q7, R, deviation=reduced_orientation_free, **bounds),
        "rti": lambda: NMPCController(cm, ref, bp.PARTITION_8_72, HORIZON, Q8, R, dt=dt, **bounds),
        "sqp": lambda: NMPCController(cm, ref, bp.PARTITION_8_72, HORIZON, Q8, R, dt=dt,
                                      mode="sqp", sqp_tol=1e-4, **bounds),
        "rti_true_ball": lambda: NMPCController(plant, ref, bp.PARTITION_8_72, HORIZON, Q8, R,
                                                dt=dt, p=plant.parameters, **bounds),
    }
    ctrls = {name: make[name]() for name in names}
    te = dt * np.arange(int(round(t_final / dt)) + 1)
    out, arrays = {}, {}
    for name, c in ctrls.items():
        sim = forward_dynamics(plant, (0.0, float(te[-1])), x0, xd0, controller=c, rtol=1e-8,
                               atol=1e-10, t_eval=te)
        xr = ref.x(sim.t)
        e = np.hypot(sim.x[:, 0] - xr[:, 0], sim.x[:, 1] - xr[:, 1])
        u = np.asarray(sim.control_inputs)
        du = np.abs(np.diff(u, axis=0)) if len(u) > 1 else np.zeros((0, 2))
        wall = np.array([h.solve_time for h in c.history])
        cpu = np.array([h.cpu_time for h in c.history])
        late = np.asarray(sim.t) >= transient_s - 1e-12
        out[name] = {
            "final_error_m": float(e[-1]), "max_error_m": float(e.max()),
            "initial_error_m": float(e[0]),
            "max_error_after_1s_m": float(e[late].max()),
            "rms_error_m": float(np.sqrt(np.mean(e ** 2))),
            "rms_error_after_1s_m": float(np.sqrt(np.mean(e[late] ** 2))),
            "median_step_s": float(np.median(wall)), "max_step_s": float(wall.max()),
            "median_step_cpu_s": float(np.median(cpu)),
            "bounds_respected": bool(np.max(np.abs(u)) <= b * (1 + 1e-9)
                                     and np.max(du, initial=0.0) <= r * (1 + 1e-6) + 1e-9),
            "statuses": c.statuses,
        }
        if name == "sqp":
            out[name]["median_iterations"] = float(np.median([h.iterations for h in c.history]))
            out[name]["max_kkt_residual"] = float(max(h.kkt_residual for h in c.history))
            # KKT residual after each SQP iteration at the sample nearest t = 1 s
            h1 = min(c.history, key=lambda h: abs(h.t - 1.0))
            out[name]["kkt_history_at_1s"] = [float(v) for v in h1.kkt_history]
        arrays[name] = {"t": np.asarray(sim.t), "x": np.asarray(sim.x), "e": e}
    out["settings"] = {"horizon": HORIZON, "dt_s": dt, "t_final_s": float(te[-1]),
                       "plant_R_m": plant_R, "design_R_m": bp.DEFAULTS["R"],
                       "initial_offset_m": offset, "initial_angle_deviation_deg": list(angles_deg),
                       "transient_s": transient_s, "bound_deg": BOUND_DEG,
                       "rate_deg_per_sample": RATE_DEG}
    arrays["ref"] = ref
    return out, arrays


def _lane_change(quick: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    st_ = LaneChangeSettings(rtol=1e-6, atol=1e-8) if quick else LaneChangeSettings()
    s = lane_change_setup(st_)
    cm, ref, dt, N = s.cm, s.ref, st_.dt, st_.horizon
    ins = list(cm.inputs)
    # Riccati schedule on the setup's ZOH sequences, back in SI inputs (F_F column zero)
    Bd = np.zeros(s.Bd.shape[:2] + (len(ins),))
    Bd[:, :, s.cols] = s.Bd @ np.linalg.inv(np.diag([1000.0, 1.0]))
    lqr_model = DiscreteLTV(np.asarray(s.Ad), Bd, dt)
    ns = len(s.states)
    lo, hi = np.full(ns, -np.inf), np.full(ns, np.inf)
    ig, ir = s.states.index("gamma"), s.states.index("gamma_d")
    hi[ig] = st_.backoff[0] * math.radians(st_.steer_max_deg)
    hi[ir] = st_.backoff[1] * math.radians(st_.steer_rate_max_deg_s)
    lo[ig], lo[ir] = -hi[ig], -hi[ir]
    u_lo, u_hi = np.full(len(ins), -np.inf), np.full(len(ins), np.inf)
    u_lo[ins.index("F_F")] = u_hi[ins.index("F_F")] = 0.0
    r = np.zeros(len(ins))
    r[ins.index("F_R")], r[ins.index("T")] = st_.r[0] / 1e6, st_.r[1]
    r[ins.index("F_F")] = st_.r[0] / 1e6
    steps = int(round(st_.t_final / dt))
    ctrl = NMPCController(cm, ref, {"independent": ("x", "gamma"), "admissible_dependent": ("y", "psi")},
                          N, np.diag(st_.q), np.diag(r), dt=dt, steps=steps, lqr_model=lqr_model,
                          u_min=u_lo, u_max=u_hi, x_min=lo, x_max=hi, feedforward="sample")
    x0 = ref.x(0.0) + np.array([0.0, st_.y_offset, 0.0, 0.0])
    te = np.linspace(0.0, st_.t_final, 501)
    sim = forward_dynamics(cm, (0.0, st_.t_final), x0, ref.xd(0.0), p=st_.plant, controller=ctrl,
                           rtol=st_.rtol, atol=st_.atol, t_eval=te)
    t = np.asarray(sim.t)
    e = lc.lateral_error(ref, t, sim.x)
    gam, gamd = np.asarray(sim.x)[:, 3], np.asarray(sim.xd)[:, 3]
    wall = np.array([h.solve_time for h in ctrl.history])
    cpu = np.array([h.cpu_time for h in ctrl.history])
    peak_rate = float(np.degrees(np.max(np.abs(gamd))))
    peak_steer = float(np.degrees(np.max(np.abs(gam))))
    out = {"rti": {
        "max_lateral_error_m": float(np.max(np.abs(e))),
        "max_lateral_error_after_1s_m": float(np.max(np.abs(e[t >= 1.0]))),
        "peak_steer_deg": peak_steer, "peak_steer_rate_deg_s": peak_rate,
        "bounds_respected": bool(peak_steer <= st_.steer_max_deg
                                 and peak_rate <= st_.steer_rate_max_deg_s),
        "median_step_s": float(np.median(wall)), "max_step_s": float(wall.max()),
        "median_step_cpu_s": float(np.median(cpu)), "statuses": ctrl.statuses},
        "settings": {"V_m_s": st_.V, "dt_s": dt, "horizon": N,
                     "steer_max_deg": st_.steer_max_deg,
                     "steer_rate_max_deg_s": st_.steer_rate_max_deg_s}}
    return out, {"t": t, "x": np.asarray(sim.x), "e": e, "ref": ref}


def run(*, out: Path | None = None, quick: bool = False) -> dict[str, Any]:
    """Headline numbers (JSON-serialisable); with ``out`` also the figures.

    Returns
    -------
    dict
        ``ball_plate`` → ``ltv_mpc``, ``rti``, ``sqp``, ``rti_true_ball`` (diagnostic), each
        with ``final_error_m``, ``max_error_m`` (``t = 0`` included), ``initial_error_m``,
        ``max_error_after_1s_m``, ``rms_error_m``, ``rms_error_after_1s_m``,
        ``median_step_s``, ``max_step_s``, ``median_step_cpu_s``, ``bounds_respected``,
        ``statuses`` (and for ``sqp`` ``median_iterations``, ``max_kkt_residual``,
        ``kkt_history_at_1s``), plus ``settings``; ``ball_plate_far`` → ``ltv_mpc``,
        ``ltv_mpc_orientation_free``, ``rti``, ``sqp`` with the same keys (``*_after_1s_*`` over
        ``t ≥ settings.transient_s``) and ``settings`` (``initial_angle_deviation_deg``,
        ``transient_s``); ``lane_change`` →
        ``rti`` with ``max_lateral_error_m``, ``peak_steer_rate_deg_s``, ``peak_steer_deg``,
        ``bounds_respected``, ``median_step_s`` …; ``goals`` (the comparisons the docs state, measured: RTI step time, RTI vs SQP, RTI vs
        LTV-MPC in both cases, ``far_*``: RTI at least 20 % below the LTV-MPC after the
        transient, SQP converged at every sample);
        ``timing_s``.
    """
    t0 = time.perf_counter()
    bpn, bpa = _ball_plate(quick)
    far, fara = _ball_plate(quick, r_scale=1.0, angles_deg=FAR_ANGLES_DEG,
                            t_final=3.0 if quick else 6.0, transient_s=FAR_TRANSIENT_S,
                            names=FAR_CONTROLLERS)
    lcn, lca = _lane_change(quick)
    rti, sqp, ltv = bpn["rti"], bpn["sqp"], bpn["ltv_mpc"]
    f_rti, f_sqp, f_ltv = far["rti"], far["sqp"], far["ltv_mpc"]
    result = {
        "ball_plate": bpn, "ball_plate_far": far, "lane_change": lcn,
        "goals": {
            "rti_median_step_le_2ms": rti["median_step_s"] <= 2e-3,
            "rti_median_step_cpu_le_2ms": rti["median_step_cpu_s"] <= 2e-3,
            "rti_final_error_within_10pct_of_sqp":
                abs(rti["final_error_m"] - sqp["final_error_m"]) <= 0.1 * sqp["final_error_m"],
            "rti_max_error_below_ltv_mpc": rti["max_error_m"] < ltv["max_error_m"],
            "rti_max_error_after_1s_below_ltv_mpc":
                rti["max_error_after_1s_m"] < ltv["max_error_after_1s_m"],
            "rti_rms_error_after_1s_below_ltv_mpc":
                rti["rms_error_after_1s_m"] < ltv["rms_error_after_1s_m"],
            "far_rti_rms_error_after_transient_20pct_below_ltv_mpc":
                f_rti["rms_error_after_1s_m"] <= 0.8 * f_ltv["rms_error_after_1s_m"],
            "far_rti_max_error_after_transient_20pct_below_ltv_mpc":
                f_rti["max_error_after_1s_m"] <= 0.8 * f_ltv["max_error_after_1s_m"],
            "far_sqp_every_step_converged": set(f_sqp["statuses"]) == {"optimal"},
        },
        "quick": bool(quick),
    }
    result["timing_s"] = float(time.perf_counter() - t0)
    if out is not None:
        result["figures"] = _figures(Path(out), bpa, lca, fara)
    return result


def _figures(out: Path, bpa: dict[str, Any], lca: dict[str, Any],
             fara: dict[str, Any]) -> list[str]:
    import matplotlib.pyplot as plt

    from ..plotting.style import cite, new_figure, savefig

    labels = {"ltv_mpc": "LTV-MPC (nominal reference)", "rti": "RTI NMPC", "sqp": "SQP NMPC",
              "rti_true_ball": "RTI NMPC, plant's ball in the model (diagnostic)"}
    names = []

    def error_figure(title: str, runs: dict[str, Any], series: dict[str, str], scale: float,
                     ylabel: str, extra: str, name: str, log: bool = False) -> None:
        fig, ax = new_figure(title=title)
        for key, lab in series.items():
            a = runs[key]
            y = scale * np.maximum(a["e"], 1e-10) if log else scale * a["e"]
            (ax.semilogy if log else ax.plot)(a["t"], y, label=lab)
        if log:
            ax.axvline(FAR_TRANSIENT_S, color="0.5", lw=0.8, ls=":", label="end of transient")
        ax.set_xlabel("time t (s)")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7 if log else 8)
        cite(fig, "thesis", "Ch. 8 circle", extra=extra)
        names.append(Path(savefig(fig, out, name)).name)
        plt.close(fig)

    error_figure("Ball-plate, ball 10 % larger, 5 cm offset: tracking error", bpa, labels, 100.0,
                 r"$\|C - C_\mathrm{ref}\|$ (cm)", "controllers designed on the nominal ball",
                 "nmpc_ball_plate_error")
    error_figure("Ball-plate, ball turned 45° in yaw and roll, 5 cm offset: tracking error", fara,
                 {"ltv_mpc": "LTV-MPC (nominal linearization, Eq. (8.74) deviation)",
                  "rti": "RTI NMPC", "sqp": "SQP NMPC (converged)",
                  "ltv_mpc_orientation_free": "LTV-MPC, orientation-free deviation"}, 1e3,
                 r"$\|C - C_\mathrm{ref}\|$ (mm)",
                 "nominal ball; controllers designed on the circle", "nmpc_ball_plate_far_error",
                 log=True)
    fig, ax = new_figure(title="Double lane change, RTI NMPC: lateral deviation of G")
    ax.plot(lca["t"], 100 * lca["e"], label="RTI NMPC")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("lateral deviation (cm)")
    ax.legend(fontsize=8)
    cite(fig, "road_review", extra="ISO 3888-1 track; torque-steered skate; mismatched plant")
    names.append(Path(savefig(fig, out, "nmpc_lane_change_error")).name)
    plt.close(fig)
    return names


def summary(result: dict[str, Any]) -> str:
    bpn = result["ball_plate"]
    s = bpn["settings"]
    lines = [f"Ball-plate circle, ball {s['plant_R_m'] / s['design_R_m']:.2f}x the design radius, "
             f"{100 * s['initial_offset_m']:g} cm offset, N = {s['horizon']}, "
             f"{s['t_final_s']:.2f} s:"]
    for key in ("ltv_mpc", "rti", "sqp", "rti_true_ball"):
        v = bpn[key]
        lines.append(f"  {key:13s} final {1e3 * v['final_error_m']:7.2f} mm, max {1e3 * v['max_error_m']:6.2f} mm "
                     f"(after 1 s {1e3 * v['max_error_after_1s_m']:6.2f} mm), RMS after 1 s "
                     f"{1e3 * v['rms_error_after_1s_m']:6.2f} mm, step median "
                     f"{1e3 * v['median_step_s']:.2f} ms (CPU {1e3 * v['median_step_cpu_s']:.2f} ms), "
                     f"max {1e3 * v['max_step_s']:.1f} ms, bounds {'kept' if v['bounds_respected'] else 'VIOLATED'}, "
                     f"{v['statuses']}")
    far = result["ball_plate_far"]
    lines.append(f"Ball-plate far from the nominal linearization (yaw, lean, roll "
                 f"{far['settings']['initial_angle_deviation_deg']} deg off, nominal ball), error "
                 f"after {far['settings']['transient_s']:g} s:")
    for key in FAR_CONTROLLERS:
        v = far[key]
        lines.append(f"  {key:25s} max {1e3 * v['max_error_after_1s_m']:7.3f} mm, RMS "
                     f"{1e3 * v['rms_error_after_1s_m']:7.3f} mm, final {1e3 * v['final_error_m']:.3f} mm, "
                     f"{v['statuses']}")
    v = result["lane_change"]["rti"]
    lines.append(f"Double lane change, RTI: max lateral error {100 * v['max_lateral_error_m']:.1f} cm, "
                 f"peak steering {v['peak_steer_deg']:.2f} deg, rate {v['peak_steer_rate_deg_s']:.1f} deg/s, "
                 f"bounds {'kept' if v['bounds_respected'] else 'VIOLATED'}, step median "
                 f"{1e3 * v['median_step_s']:.2f} ms, {v['statuses']}")
    lines.append("Goals: " + ", ".join(f"{k} = {v}" for k, v in result["goals"].items()))
    return "\n".join(lines)
