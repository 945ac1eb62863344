"""Monte-Carlo verification of the ball-plate LQR and MPC on the nonlinear plant.

``nhcontrol reproduce monte-carlo-ball-plate [--n N] [--address ADDR] [--json] [--out DIR]``

The controllers of the ball-plate reproduction (thesis Ch. 8; the controllable formulation of
``nhcontrol reproduce ball-plate``) are designed **once**, on the nominal model (``m = 0.1 kg``,
``R = 0.05 m``, Eq. (8.88)) and the circular reference at ``φ0 = 5°``. Each run then closes the
loop on a **perturbed nonlinear plant**:

* mass and radius each ``× (1 + e)``, ``e`` uniform on ``[−10 %, +10 %]`` (solid ball,
  ``I = 2/5 m R²``);
* the initial deviations of Eqs. (8.89)–(8.92) each scaled by an independent factor uniform on
  ``[−1, 1]`` (contact point ±0.1 m, ``ψ`` ±5°, ``θ`` ±10°, contact velocity ±0.1 m/s), with the
  spin ``ω_n = ψ̇ + θ̇ sin φ`` of the nominal reference: the spin is a first integral that no
  plate motion changes (Sect. 8.4.4), so a deviation in it is not a control task (the
  ``ball-plate`` target treats it by re-planning the reference).

A run succeeds when the contact point is within
[`SUCCESS_FINAL_ERROR_M`][nhcontrol.reproduce.monte_carlo_ball_plate.SUCCESS_FINAL_ERROR_M] of the
circle at ``t_final``. Every run ends with one named status (key ``status_counts``):
``"success"``; ``"lost"`` (the contact point went farther than
[`LOST_DISTANCE_M`][nhcontrol.reproduce.monte_carlo_ball_plate.LOST_DISTANCE_M] from the circle:
a terminal event stops the integration there, metric ``lost = 1``, ``t_end_s`` the time);
``"final_error_above_limit"``; or ``"raised: <ExceptionType>"`` (a solver or integration error,
message in ``worst``). The MPC's steps that were not ``"optimal"`` (solved
``"optimal_inaccurate"`` or held after a solver failure) are counted per run
(``mpc_steps_inaccurate``, ``mpc_steps_held``). Success rates come with their 95 % Wilson score
intervals (``success_rate_wilson95``,
[`wilson_interval()`][nhcontrol.applications.verify.wilson_interval]).
Reported besides: statistics of the final and peak errors, the peak plate angle and the largest
input step per sample, the worst runs with their samples, and histograms.

The controllers measure the ``ball_plate.orientation_free_deviation`` (see ``reproduce
ball-plate``): with the yaw-lean-roll angle deviations of Eq. (8.74) instead, the angles of a
ball that rolls 0.1 m turn by tens of degrees, the linear prediction model fails and runs are
lost (seed 0, ``--quick``: samples 35 and 49 ended 3.40 m and 4.43 m off the circle, every MPC
step ``"optimal"``, no fallback solver used).

Weights: the LQR/MPC state weight puts ``q_angle = 1e-4`` on the three orientation angles of the
ball (``ψ, φ, θ``), not the ``1`` of the ``ball-plate`` target. The orientation of a ball does not
matter for where it rolls, and its reference grows like ``1/R`` (``θ0(t)`` is the rolled angle):
with a radius error the angle reference is unreachable while the circle is, and with ``q_angle =
1`` the controller trades ~40 mm of contact error against the growing angle error after 10 s
(measured at ``R × 0.9``), against ~6 mm with ``1e-4``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Study", "QUICK", "FULL", "SUCCESS_FINAL_ERROR_M", "LOST_DISTANCE_M", "STATUSES",
           "SPREAD", "DEVIATION_SCALE", "closed_loop_run", "run_status", "run", "summary"]

PHI0_DEG = 5.0
"""Lean angle of the reference circle (degrees)."""
SPREAD = 0.10
"""Relative half-width of the mass and radius uncertainty."""
DEVIATION_SCALE: dict[str, float] = {"eps_x": 0.1, "eps_y": 0.1, "eps_psi_deg": 5.0,
                                     "eps_theta_deg": 10.0, "eps_vx": 0.1, "eps_vy": 0.1}
"""Largest initial deviations, those of Eqs. (8.89)--(8.92) (each scaled by U(-1, 1))."""
THESIS_DEVIATION = np.array([-1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
"""The factors that give the deviations of Eq. (8.92) (``ε_x = −0.1 m``, the others positive)."""
SUCCESS_FINAL_ERROR_M = 0.010
"""Success: contact point within this distance of the circle at ``t_final`` [m]."""
LOST_DISTANCE_M = 0.25
"""A run is stopped with status ``"lost"`` when the contact point is farther than this from the
circle [m] (2.5 times the largest initial deviation of the contact point, half the circle's
radius)."""
STATUSES = ("success", "lost", "final_error_above_limit")
"""Named outcomes of a run (besides ``"raised: <ExceptionType>"``)."""


@dataclass(frozen=True)
class Study:
    """Settings of the study (hashable: each worker process designs the controllers once).

    Attributes
    ----------
    n : int
        Runs per controller.
    t_final : float
        Simulated time [s].
    mpc_horizon : int
        MPC horizon [samples].
    q_angle : float
        Weight of the orientation angles (see the module notes).
    rtol, atol : float
        Integration tolerances of the nonlinear plant.
    """

    n: int = 1000
    t_final: float = 10.0
    mpc_horizon: int = 20
    q_angle: float = 1e-4
    rtol: float = 1e-7
    atol: float = 1e-9


FULL = Study()
QUICK = Study(n=8, mpc_horizon=10, rtol=1e-6, atol=1e-8)
"""``--quick``: 8 runs per controller, MPC horizon 10, looser tolerances."""


@lru_cache(maxsize=4)
def _design(study: Study) -> dict[str, Any]:
    """Nominal model, reference, discrete LTV system, LQR gains (once per process)."""
    from nhcontrol.models import ball_plate as bp

    from . import ball_plate as rbp

    cm = bp.model()
    ref = bp.circular_motion(cm, PHI0_DEG)
    st = replace(rbp.Settings(), t_final=study.t_final, mpc_horizon=study.mpc_horizon,
                 q_angle=study.q_angle, rtol=study.rtol, atol=study.atol)
    f = rbp._formulation(bp, cm, PHI0_DEG, st, reduced=True, ref=ref)
    mo = f["motion"]
    spin = mo.omega + mo.rho * mo.omega / mo.R * math.tan(mo.phi0)
    return {"cm": cm, "bp": bp, "rbp": rbp, "st": st, "f": f, "motion": mo, "spin": spin}


def _law(d: dict[str, Any], controller: str, statuses: list[str]):
    if controller == "lqr":
        return d["rbp"]._lqr_law(d["bp"], d["f"])
    if controller == "mpc":
        return d["rbp"]._mpc_law(d["bp"], d["f"], d["st"], statuses)
    raise ValueError(f"controller must be 'lqr' or 'mpc', got {controller!r}")


def closed_loop_run(controller: str, mass_factor: float, radius_factor: float,
                    deviation: NDArray[np.float64], study: Study = FULL) -> dict[str, float]:
    """One closed loop on the perturbed nonlinear plant; returns its metrics.

    Parameters
    ----------
    controller : {"lqr", "mpc"}
    mass_factor, radius_factor : float
        Plant mass and radius relative to the nominal ones.
    deviation : (6,) array_like
        Factors in ``[-1, 1]`` of the initial deviations
        [`DEVIATION_SCALE`][nhcontrol.reproduce.monte_carlo_ball_plate.DEVIATION_SCALE].
    study : Study

    Returns
    -------
    dict
        ``final_error_m`` (contact point to the circle at ``t_final``), ``max_error_m``,
        ``rms_error_m`` (over the second half), ``peak_input_deg``, ``max_input_step_deg``
        (largest change of a plate angle between samples), ``spin_drift`` (change of ``ω_n``,
        a check of the plant: ~0), ``initial_error_m``, ``lost`` (1 when the contact point went
        farther than ``LOST_DISTANCE_M`` from the circle and the run was stopped there, else 0;
        ``final_error_m`` is then the distance at the stop, ``LOST_DISTANCE_M``),
        ``t_end_s`` (the time reached), ``mpc_steps_inaccurate`` and ``mpc_steps_held`` (MPC
        steps solved ``"optimal_inaccurate"`` or held after a solver failure; 0 for the LQR).
    """
    from nhcontrol.simulate import forward_dynamics

    d = _design(study)
    cm, bp, mo, f = d["cm"], d["bp"], d["motion"], d["f"]
    m = 0.1 * float(mass_factor)
    R = 0.05 * float(radius_factor)
    p = {"m": m, "R": R, "I": 0.4 * m * R * R, "g": 9.81}
    dev = np.asarray(deviation, float)
    if dev.shape != (6,):
        raise ValueError(f"deviation must have 6 factors ({list(DEVIATION_SCALE)}), got shape "
                         f"{dev.shape}")
    eps = {k: s * float(e) for (k, s), e in zip(DEVIATION_SCALE.items(), dev)}
    x0, xd0 = bp.initial_conditions(cm, PHI0_DEG, eps_wpsi=0.0, p=p, **eps)
    xd0 = np.array(xd0)
    xd0[2] = d["spin"] - xd0[4] * math.sin(x0[3])           # nominal spin (first integral)
    statuses: list[str] = []
    law = _law(d, controller, statuses)
    dt = f["dt"]

    def lost(t: float, x: NDArray, xd: NDArray) -> float:
        return LOST_DISTANCE_M - abs(math.hypot(x[0] - mo.x_A, x[1] - mo.y_A) - mo.rho)
    lost.terminal = True                                    # type: ignore[attr-defined]
    sim = forward_dynamics(cm, (0.0, study.t_final), x0, xd0, p=p,
                           controller=lambda t, x, xd: law(int(round(t / dt)), t, x, xd),
                           sample_time=dt, rtol=study.rtol, atol=study.atol,
                           t_eval=np.linspace(0.0, study.t_final, 201), events=lost)
    x, xd = np.asarray(sim.x), np.asarray(sim.xd)
    t_end = float(np.asarray(sim.t)[-1])
    is_lost = t_end < study.t_final - 1e-9
    if is_lost:                                            # stopped by the event
        te = np.asarray(sim.t_events[0]).ravel() if sim.t_events else np.zeros(0)
        t_end = float(te[0]) if te.size else t_end
    e = d["rbp"].contact_error(mo, x)
    u = np.degrees(np.asarray(sim.control_inputs, float))
    wn = xd[:, 2] + xd[:, 4] * np.sin(x[:, 3])
    half = e[e.size // 2:]
    if is_lost:            # at the event the distance is LOST_DISTANCE_M (the output grid ends earlier)
        e = np.append(e, LOST_DISTANCE_M)
    return {"final_error_m": float(e[-1]), "max_error_m": float(e.max()),
            "rms_error_m": float(np.sqrt(np.mean(half ** 2))),
            "initial_error_m": float(e[0]),
            "peak_input_deg": float(np.abs(u).max()),
            "max_input_step_deg": float(np.abs(np.diff(u, axis=0)).max()) if len(u) > 1 else 0.0,
            "spin_drift": float(np.abs(wn - wn[0]).max()),
            "lost": float(is_lost), "t_end_s": t_end,
            "mpc_steps_inaccurate": float(sum(st == "optimal_inaccurate" for st in statuses)),
            "mpc_steps_held": float(sum(st.startswith("held") for st in statuses))}


def run_status(metrics: dict[str, float] | None, error: str | None) -> str:
    """The named outcome of one run: one of `STATUSES` or ``"raised: <ExceptionType>"``."""
    if error is not None or metrics is None:
        return f"raised: {str(error).split(':', 1)[0]}"
    if metrics.get("lost", 0.0):
        return "lost"
    if not metrics["final_error_m"] <= SUCCESS_FINAL_ERROR_M:
        return "final_error_above_limit"
    return "success"


def run(*, out: Path | None = None, quick: bool = False, n: int | None = None,
        address: str | None = None, backend: str | None = None, seed: int = 0,
        progress: bool | None = None) -> dict[str, Any]:
    """Run the study for the LQR and the MPC; return JSON-ready results.

    Parameters
    ----------
    out : Path, optional
        Folder for the histograms.
    quick : bool
        [`QUICK`][nhcontrol.reproduce.monte_carlo_ball_plate.QUICK] (8 runs each) instead of
        [`FULL`][nhcontrol.reproduce.monte_carlo_ball_plate.FULL] (1,000 runs each).
    n : int, optional
        Runs per controller (overrides the study's).
    address : str, optional
        Dask scheduler (``"tcp://host:8786"``): the runs go to that cluster.
    backend : {"serial", "processes", "dask"}, optional
        Default: ``"dask"`` with ``address``, ``"serial"`` for fewer than 32 runs, else
        ``"processes"``.
    seed : int
        Samples are child ``i`` of ``SeedSequence(seed)`` (the same for both controllers).
    progress : bool, optional
        tqdm bar (default: on for more than 32 runs).

    Returns
    -------
    dict
        ``study``, ``samplers``, ``success_criterion``, ``nominal`` (per controller: the thesis'
        deviations on the nominal plant), ``lqr`` and ``mpc`` (``n``, ``success_rate``,
        ``statistics``, ``worst``, ``backend``), ``timing_s``.
    """
    from nhcontrol.applications.verify import monte_carlo, relative, uniform

    study = QUICK if quick else FULL
    if n is not None:
        if isinstance(n, bool) or int(n) != n or int(n) < 1:
            raise ValueError(f"--n must be a positive integer, got {n!r}")
        study = replace(study, n=int(n))
    if backend is None:
        backend = "dask" if address else ("serial" if study.n < 32 else "processes")
    if progress is None:
        progress = study.n > 32
    t0 = time.perf_counter()
    samplers = {"mass_factor": relative(1.0, SPREAD), "radius_factor": relative(1.0, SPREAD),
                "deviation": uniform(-np.ones(6), np.ones(6))}
    opts: dict[str, Any] = {"backend": backend, "progress": progress}
    if address:
        opts["address"] = address
    result: dict[str, Any] = {
        "study": {**study.__dict__, "phi0_deg": PHI0_DEG, "spread": SPREAD,
                  "deviation_scale": DEVIATION_SCALE},
        "samplers": {k: repr(v) for k, v in samplers.items()},
        "success_criterion": f"final_error_m <= {SUCCESS_FINAL_ERROR_M:g}",
        "lost_distance_m": LOST_DISTANCE_M,
        "nominal": {}}
    studies = {}
    for ctrl in ("lqr", "mpc"):
        result["nominal"][ctrl] = closed_loop_run(ctrl, 1.0, 1.0, THESIS_DEVIATION, study)
        res = monte_carlo(closed_loop_run, samplers, study.n,
                          success={"final_error_m": SUCCESS_FINAL_ERROR_M}, seed=seed,
                          constants={"controller": ctrl, "study": study}, **opts)
        studies[ctrl] = res
        block = res.to_dict(worst_metric="final_error_m", k=5)
        names = [run_status(m, e) for m, e in zip(res.metrics, res.errors)]
        block["status_counts"] = {k: names.count(k) for k in sorted(set(names))}
        if sum(names.count(k) for k in ("success",)) != res.n_success:
            raise RuntimeError("status 'success' disagrees with the success criterion")
        ferr = res.values("final_error_m")
        rf = np.array([s["radius_factor"] for s in res.samples])
        ok = np.isfinite(ferr)
        if ok.sum() > 2:
            # the steady offset is set by the radius error: its correlation says so
            block["corr_final_error_vs_abs_radius_error"] = float(
                np.corrcoef(ferr[ok], np.abs(rf[ok] - 1.0))[0, 1])
        block["cluster"] = res.sweep.cluster
        result[ctrl] = block
    result["timing_s"] = float(time.perf_counter() - t0)
    if out is not None:
        from nhcontrol.plotting.monte_carlo import plot_histograms

        result["figures"] = [p.name for p in plot_histograms(studies, Path(out),
                                                            SUCCESS_FINAL_ERROR_M)]
    return result


def summary(result: dict[str, Any]) -> str:
    """Human-readable report of [`run()`][nhcontrol.reproduce.monte_carlo_ball_plate.run]."""
    st = result["study"]
    lines = [f"Ball-plate LQR and MPC under ±{100 * st['spread']:g} % mass/radius uncertainty and "
             f"random initial deviations (phi0 = {st['phi0_deg']:g} deg, {st['t_final']:g} s, "
             f"{st['n']} runs each; thesis Ch. 8)",
             f"  success: {result['success_criterion']}"]
    for ctrl in ("lqr", "mpc"):
        b, nom = result[ctrl], result["nominal"][ctrl]
        fe, pk = b["statistics"]["final_error_m"], b["statistics"]["peak_input_deg"]
        lo, hi = b["success_rate_wilson95"]
        lines.append(f"  {ctrl.upper()}: {b['n_success']}/{b['n']} succeed "
                     f"({100 * b['success_rate']:.1f} %, 95 % Wilson interval "
                     f"[{100 * lo:.1f}, {100 * hi:.1f}] %; statuses {b['status_counts']}), "
                     f"final error median "
                     f"{1e3 * fe['median']:.2f} mm, p95 {1e3 * fe['p95']:.2f} mm, max "
                     f"{1e3 * fe['max']:.2f} mm; peak plate angle max {pk['max']:.1f} deg; "
                     f"nominal plant {1e3 * nom['final_error_m']:.3f} mm")
        if b.get("worst"):
            w = b["worst"][0]
            s = w["sample"]
            lines.append(f"    worst run #{w['index']}: {1e3 * w['final_error_m']:.2f} mm at mass "
                         f"x{s['mass_factor']:.3f}, radius x{s['radius_factor']:.3f}")
    lines.append(f"  total time {result['timing_s']:.1f} s")
    return "\n".join(lines)
