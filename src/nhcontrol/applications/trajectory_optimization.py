"""Showcases of `nhcontrol.optimize`: a minimum-time ISO 3888-1 lane change at the friction limit,
the benchmark bicycle's countersteer into a steady turn, and ball-plate identification.

Each function arranges library calls (models, `optimize`, the LTV-MPC of the lane-change study,
`simulate`) and returns ``{"numbers": {...}, "arrays": {...}}``.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from nhcontrol.models import lane_change as lc
from nhcontrol.models import single_track as st
from nhcontrol.optimize import PathConstraint, optimal_trajectory

from . import lane_change as lcc

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["minimum_time_lane_change", "track_corridor", "FRONT_OVERHANG", "REAR_OVERHANG",
           "FRICTION_MARGIN", "ball_plate_identification"]

FRONT_OVERHANG: float = 0.9
"""Body overhang [m] ahead of the front axle (that of `nhcontrol.models.lane_change.cone_clearance`)."""
REAR_OVERHANG: float = 1.0
"""Body overhang [m] behind the rear axle (that of `nhcontrol.models.lane_change.cone_clearance`)."""
FRICTION_MARGIN = 0.99
"""The friction circle is imposed at the collocation points with ``0.99 μ``: between them the
interpolated motion may exceed the points' values slightly (by 0.13 % with 81 nodes)."""
_EPS = 0.1          # width [m] of the smooth lane membership
_MARGIN = 0.05      # lateral margin [m] kept from the cone lines at the nodes


def track_corridor(track: lc.Iso3888Track, a: float, b: float, *, margin: float = _MARGIN,
                   eps: float = _EPS) -> PathConstraint:
    """The four body corners inside the cone-marked lanes of ``track`` (derived here):
    ``g = s_k(p_x) ((p_y − Y_k)² − (w_k/2 − margin)²) ≤ 0`` for every corner ``p`` and lane
    ``k``, ``s_k = σ((p_x − X_0)/ε) σ((X_1 − p_x)/ε)`` a smooth membership of the lane's
    stretch (logistic ``σ``), with exact derivatives in ``x, y, ψ``."""
    corners = [(a + FRONT_OVERHANG, track.vehicle_width / 2), (a + FRONT_OVERHANG, -track.vehicle_width / 2),
               (-(b + REAR_OVERHANG), track.vehicle_width / 2), (-(b + REAR_OVERHANG), -track.vehicle_width / 2)]
    lanes = track.lanes

    def fun(x: NDArray, xd: NDArray, u: NDArray) -> tuple[NDArray, ...]:
        P, n = x.shape
        c, s = np.cos(x[:, 2]), np.sin(x[:, 2])
        g = np.zeros((P, len(corners) * len(lanes)))
        gx = np.zeros(g.shape + (n,))
        r = 0
        for lx, ly in corners:
            px, py = x[:, 0] + lx * c - ly * s, x[:, 1] + lx * s + ly * c
            dpx_dpsi, dpy_dpsi = -lx * s - ly * c, lx * c - ly * s
            for X0, X1, yc, w in lanes:
                s1 = 1.0 / (1.0 + np.exp(-np.clip((px - X0) / eps, -60, 60)))
                s2 = 1.0 / (1.0 + np.exp(-np.clip((X1 - px) / eps, -60, 60)))
                m = s1 * s2
                dm = (s1 * (1 - s1) * s2 - s1 * s2 * (1 - s2)) / eps
                q = (py - yc) ** 2 - (w / 2 - margin) ** 2
                g[:, r] = m * q
                dg_dpx, dg_dpy = dm * q, m * 2 * (py - yc)
                gx[:, r, 0] = dg_dpx
                gx[:, r, 1] = dg_dpy
                gx[:, r, 2] = dg_dpx * dpx_dpsi + dg_dpy * dpy_dpsi
                r += 1
        return g, gx, np.zeros_like(gx), np.zeros((P, g.shape[1], u.shape[1]))

    k = len(corners) * len(lanes)
    return PathConstraint("corners_in_lanes", fun, np.full(k, -np.inf), np.zeros(k))


def minimum_time_lane_change(*, speed: float = 20.0, mu: float = 0.9, nodes: int = 121,
                             track: lc.Iso3888Track = lc.ISO_TRACK, run_out: float = 35.0,
                             settings: lcc.LaneChangeSettings | None = None,
                             track_with_mpc: bool = True) -> dict[str, Any]:
    """Minimum-time ISO 3888-1 double lane change of the torque-steered skate single-track
    model (``force_torque``) entering at ``speed``, tyres inside the friction circle ``μ`` (static
    axle loads), the body's corners inside the cone lanes, steering within the limits of the
    lane-change study; then tracked by its LTV-MPC on the nonlinear model.

    IPOPT runs to its tolerance (``tol = 1e-7``, acceptable-level termination off), so
    ``status`` 0 states convergence. With the limited-memory Hessian the last digits of the
    dual infeasibility come slowly: with 81 nodes it wanders between 1e-7 and 1e-5 for tens of
    iterations near iteration 550 while the constraint violation (1e-13) and the
    complementarity (1e-11) are converged, and the acceptable-level stop (ten iterations below
    1e-5) used to end the run there with status 1, 18 iterations before the tolerance is met
    (567 iterations; objectives equal to 4e-10, times through the track to 2e-8 s).

    Returns
    -------
    dict
        ``numbers``: ``t_final_s`` (time to the end of the track), ``objective``, ``status``,
        ``iterations``, ``solve_s``, ``peak_friction_utilisation`` (dense samples of the
        reference), ``cone_clearance_m``, ``tracking_max_error_m``, ``tracking_rms_error_m``,
        ``mpc_peak_friction_utilisation``; ``arrays``: the optimal ``t, x, u`` and the closed
        loop's ``t, x``.
    """
    from nhcontrol.reference import friction_utilisation

    cm = st.build("force_torque").system.compile()
    vals = dict(cm.parameters)
    a, b = vals["a"], vals["b"]
    end = track.boundaries[-1] + b + REAR_OVERHANG            # the whole body past the track
    x_final = end + run_out
    sett = settings or lcc.LaneChangeSettings(plant={}, y_offset=0.0)
    gmax = 0.9 * math.radians(sett.steer_max_deg)
    rmax = 0.85 * math.radians(sett.steer_rate_max_deg_s)
    loads = st.static_axle_loads(cm)
    # initial guess: the flatness-based lane change of the study at the entry speed
    guess = lc.lane_change_reference(cm, speed, t_final=x_final / speed, x_start=-b)
    t0 = time.perf_counter()
    sol = optimal_trajectory(
        cm, t_final=(0.5 * x_final / speed, 2.0 * x_final / speed), nodes=nodes,
        initial={"x": 0.0, "y": 0.0, "psi": 0.0, "gamma": 0.0, "x_d": speed, "gamma_d": 0.0},
        final={"x": x_final, "psi": 0.0, "gamma": 0.0, "gamma_d": 0.0},
        cost={"time": 1.0}, effort={"T": 1e-4, "F_R": 1e-10},
        u_bounds={"F_R": (-3000.0, 3000.0), "F_F": (0.0, 0.0), "T": (-300.0, 300.0)},
        x_bounds={"gamma": (-gmax, gmax)}, xd_bounds={"gamma_d": (-rmax, rmax)},
        friction={"mu": FRICTION_MARGIN * mu, "normal_loads": loads}, path=[track_corridor(track, a, b)],
        partition=lcc.PARTITION, guess=guess, tol=1e-7, max_iterations=1500,
        ipopt_options={"acceptable_iter": 0})
    solve = time.perf_counter() - t0
    ref = sol.reference
    tt = np.linspace(0.0, sol.t_final, 4001)
    fu = friction_utilisation(cm, ref, mu, loads, t=tt)
    xs = ref.x(tt)
    t_end = float(np.interp(end, xs[:, 0], tt))
    numbers: dict[str, Any] = {
        "t_final_s": t_end, "status": sol.status, "objective": sol.objective,
        "iterations": sol.iterations, "solve_s": solve, "nodes": nodes, "speed_in_m_s": speed,
        "speed_out_m_s": float(np.interp(end, xs[:, 0], ref.xd(tt)[:, 0])), "mu": mu,
        "peak_friction_utilisation": fu.peak,
        "cone_clearance_m": lc.cone_clearance(xs[xs[:, 0] <= end], a, b, track)}
    arrays = {"t": np.asarray(sol.t), "x": np.asarray(sol.x), "u": np.asarray(sol.u)}
    if track_with_mpc:
        numbers.update(_track(cm, ref, t_end, sett, mu, arrays))
    return {"numbers": numbers, "arrays": arrays, "solution": sol}


def _track(cm: CompiledModel, ref: Reference, t_end: float, sett: lcc.LaneChangeSettings, mu: float,
           arrays: dict) -> dict[str, float]:
    """The lane-change study's LTV-MPC (`nhcontrol.applications.lane_change`) on the optimal
    reference, closed on the nonlinear model."""
    from dataclasses import replace

    from nhcontrol.linearization import Partition, linearize
    from nhcontrol.systems import LTVSystem, discretize

    V = sum(lc.ISO_3888_1_SECTIONS) / t_end
    s_ = replace(sett, V=V, mu=mu)
    nsteps = int(round(s_.t_final / s_.dt))
    part = Partition.from_dict(lcc.PARTITION)
    ltv = LTVSystem.from_linearization(cm, ref, part)
    # the optimal reference is a piecewise polynomial (C² in x): its A(t) has kinks in higher
    # derivatives, so the ZOH integration uses a tolerance the splines can meet
    d = discretize(ltv, s_.dt, steps=nsteps + s_.horizon, rtol=1e-7)
    cols = [list(ltv.inputs).index(n) for n in lc.DRIVE_INPUTS]
    Ad, Bd = np.asarray(d.Ad), np.asarray(d.Bd)[:, :, cols] @ lcc.INPUT_SCALE
    Ad.setflags(write=False)
    Bd.setflags(write=False)
    setup = lcc.LaneChangeSetup(cm=cm, ref=ref, lin0=linearize(cm, ref, part, t=0.0), ltv=ltv,
                                Ad=Ad, Bd=Bd, cols=cols, states=tuple(ltv.states), st=s_,
                                friction=None)   # plain LTV-MPC (no friction rows)
    run = lcc.closed_loop(setup, "mpc")
    nums = run["numbers"]
    arrays["loop_t"], arrays["loop_x"] = run["arrays"]["t"], run["arrays"]["x"]
    return {"tracking_max_error_m": float(nums["max_lateral_error_m"]),
            "tracking_rms_error_m": float(nums["rms_lateral_error_m"]),
            "mpc_peak_friction_utilisation": float(nums["peak_friction_utilisation"]),
            "mpc_bounds_respected": bool(nums["bounds_respected"])}


BALL_PLATE_NOISE = (1e-3, 1e-3, 1e-2, 1e-2)
"""Documented noise level of the identification showcase: a camera on the contact point
(σ = 1 mm for ``x_C, y_C``) and encoders of the ball's lean and roll angles (σ = 0.01 rad)."""


def ball_plate_identification(*, duration: float = 10.0, rate: float = 100.0, seed: int = 1,
                              noise: tuple[float, ...] = BALL_PLATE_NOISE,
                              guess: tuple[float, float] = (0.9, 1.15)) -> dict[str, Any]:
    """The ball-plate's radius ``R`` and inertia ``I`` (thesis Sect. 8.4) from ``duration`` s of
    noisy simulated measurements at ``rate`` Hz (plate tilted by two sines, data from
    `nhcontrol.simulate.forward_dynamics`), starting from ``guess`` times the truth.

    Returns
    -------
    dict
        ``numbers``: ``truth``, ``estimates``, ``std``, ``z_scores``, ``relative_errors``,
        ``residual_std``, ``noise_std``, ``iterations``, ``solve_s``; ``arrays``: ``t``, ``y``,
        ``y_fit``.
    """
    from nhcontrol.models import ball_plate as bp
    from nhcontrol.optimize import identify
    from nhcontrol.simulate import forward_dynamics

    cm = bp.model()
    outputs = ["x_C", "y_C", "phi", "theta"]
    t = np.linspace(0.0, duration, int(round(duration * rate)) + 1)

    def plate(tt: Any) -> NDArray:
        tt = np.asarray(tt, dtype=float)
        return np.stack([0.05 * np.sin(1.3 * tt), 0.05 * np.cos(0.9 * tt)], axis=-1)

    sim = forward_dynamics(cm, (0.0, duration), np.zeros(5), np.zeros(5), u=plate, t_eval=t,
                           rtol=1e-11, atol=1e-13)
    idx = [cm.coordinates.index(o) for o in outputs]
    sig = np.asarray(noise, dtype=float)
    rng = np.random.default_rng(seed)
    y = np.asarray(sim.x)[:, idx] + sig * rng.standard_normal((t.size, len(outputs)))
    truth = {"R": float(cm.parameters["R"]), "I": float(cm.parameters["I"])}
    t0 = time.perf_counter()
    res = identify(cm, t, plate(t), y, outputs=outputs,
                   parameters={"R": (guess[0] * truth["R"], 0.2 * truth["R"], 5 * truth["R"]),
                               "I": (guess[1] * truth["I"], 0.05 * truth["I"], 20 * truth["I"])},
                   x0=np.zeros(5), xd0=np.zeros(5), noise_std=sig, partition=bp.PARTITION_8_72)
    solve = time.perf_counter() - t0
    numbers = {"truth": truth, "estimates": res.estimates, "std": res.std,
               "z_scores": res.z_scores(truth),
               "relative_errors": {k: res.estimates[k] / truth[k] - 1.0 for k in truth},
               "residual_std": dict(zip(outputs, res.residual_std.tolist())),
               "noise_std": dict(zip(outputs, sig.tolist())), "samples": int(t.size),
               "duration_s": duration, "iterations": res.stats.iterations, "converged": res.success,
               "solve_s": solve}
    return {"numbers": numbers, "arrays": {"t": t, "y": y, "y_fit": y + res.residuals}}

