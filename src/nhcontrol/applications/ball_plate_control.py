"""The ball-plate tracking controllers of ``nhcontrol reproduce nmpc`` as library objects, and
their standalone C export (``nhcontrol export-c ball_plate --controller ...``).

[`ball_plate_nmpc_setup()`][nhcontrol.applications.ball_plate_control.ball_plate_nmpc_setup]
builds the case once: the thesis Ch. 8 circle (``ρ = 0.5 m``, ``ω = 1 rad/s``) designed on the
nominal ball, a plant whose ball is 10 % larger starting 5 cm outside the circle, the sample
time ``h = T/125``, the plate-angle bounds ``|α|, |β| ≤ 10°`` and steps ``≤ 0.5°`` per sample, the
weights of Sect. 8.4.5 on the contact point (``10⁴``) and on ``φ̇, θ̇`` (``0.1``), ``R = 10³ I``, and
the 7-state controllable ZOH model about the reference.
[`ball_plate_controller()`][nhcontrol.applications.ball_plate_control.ball_plate_controller] and
[`ball_plate_estimator()`][nhcontrol.applications.ball_plate_control.ball_plate_estimator] make
the controllers (TV-LQR, LTV-MPC, RTI NMPC; ``N = 20``) and the estimators (a linearized
Kalman filter measuring the contact point and the angles ``φ, θ``; the EKF on the manifold with a
camera on the contact point and encoders on the plate angles).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from nhcontrol._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["BallPlateSetup", "ball_plate_nmpc_setup", "ball_plate_controller",
           "ball_plate_estimator", "HORIZON", "BOUND_DEG", "RATE_DEG", "R_SCALE", "OFFSET_M"]

HORIZON = 20
"""Prediction horizon ``N`` of the MPC and RTI controllers (samples)."""
BOUND_DEG = 10.0
"""Plate-angle bound ``|α|, |β|`` [deg]."""
RATE_DEG = 0.5
"""Largest step of a plate angle per sample [deg]."""
R_SCALE = 1.1
"""Plant ball radius over the nominal (designed) radius."""
OFFSET_M = 0.05
"""Initial radial offset of the contact point from the circle [m]."""


@dataclass(frozen=True, eq=False)
class BallPlateSetup:
    """The ball-plate tracking case (see the module docstring)."""

    __repr__ = concise_repr

    cm: CompiledModel
    plant: CompiledModel
    x0: np.ndarray
    xd0: np.ndarray
    ref: Reference
    red: Any
    dt: float
    dsys: Any
    bounds: dict
    Q7: np.ndarray
    Q8: np.ndarray
    R: np.ndarray

    def deviation(self, t: float, x: Any, xd: Any) -> np.ndarray:
        """The 7-state deviation of the controllable formulation (Sect. 8.4.5)."""
        from ..models import ball_plate as bp

        return self.red.reduce(bp.deviation(self.ref, t, x, xd))

    def orientation_free_deviation(self, t: float, x: Any, xd: Any) -> np.ndarray:
        """The same of ``ball_plate.orientation_free_deviation`` (the ball's orientation
        replaced by the reference's, same contact point and angular velocity; derived here)."""
        from ..models import ball_plate as bp

        return self.red.reduce(bp.orientation_free_deviation(self.ref, t, x, xd))


def ball_plate_nmpc_setup(*, r_scale: float = R_SCALE, offset: float = OFFSET_M,
                          angles_deg: tuple[float, float, float] = (0.0, 0.0, 0.0)
                          ) -> BallPlateSetup:
    """The ball-plate case of ``reproduce nmpc`` (models compiled or loaded from the cache).

    ``r_scale``: plant ball radius over the designed one; ``offset``: initial radial offset of
    the contact point [m]; ``angles_deg``: the ball's yaw, lean and roll away from the
    reference's at ``t = 0`` [deg] (``reproduce nmpc``'s ``ball_plate_far`` case).
    """
    from ..models import ball_plate as bp
    from ..reference import consistent_initial_conditions
    from ..systems import LTVSystem, discretize, restrict

    cm = bp.model()
    plant = bp.model(R=r_scale * bp.DEFAULTS["R"]) if r_scale != 1.0 else cm
    x0, xd0 = bp.initial_conditions(cm, 5.0, eps_x=offset, eps_y=0.0, eps_psi_deg=angles_deg[0],
                                    eps_phi_deg=angles_deg[1], eps_theta_deg=angles_deg[2],
                                    eps_vx=0.0, eps_vy=0.0, eps_wpsi=0.0)
    ic = consistent_initial_conditions(plant, x0, xd0, independent=("x_C", "y_C", "psi"))
    x0, xd0 = np.asarray(ic.x), np.asarray(ic.xd)
    ref = bp.spin_matched_motion(cm, x0, xd0)
    mo = bp.motion_from_reference(cm, ref)
    red = bp.spin_reduction(cm, ref)
    dt = mo.period / 125
    b, r = math.radians(BOUND_DEG), math.radians(RATE_DEG)
    full = LTVSystem.from_linearization(cm, ref, bp.PARTITION_8_72)
    dsys = discretize(restrict(full, red.S, red.P, states=red.states), dt)
    return BallPlateSetup(cm=cm, plant=plant, x0=x0, xd0=xd0, ref=ref, red=red, dt=dt, dsys=dsys,
                          bounds=dict(u_min=-b, u_max=b, du_min=-r, du_max=r),
                          Q7=np.diag([0.0, 0.0, 0.0, 0.1, 0.1, 1e4, 1e4]),
                          Q8=np.diag([0.0, 0.0, 0.0, 0.0, 0.1, 0.1, 1e4, 1e4]),
                          R=1e3 * np.eye(2))


def ball_plate_controller(s: BallPlateSetup, kind: Literal["lqr", "mpc", "rti"],
                          **options: Any) -> Any:
    """The TV-LQR (the Riccati schedule of the LTV-MPC, inputs clipped to the bounds), the
    LTV-MPC or the RTI NMPC of the case (``options`` go to the controller)."""
    from ..design import MPCController, NMPCController, TVLQRController
    from ..models import ball_plate as bp

    if kind == "mpc":
        return MPCController(s.dsys, s.ref, HORIZON, s.Q7, s.R, deviation=s.deviation,
                             **s.bounds, **options)
    if kind == "rti":
        return NMPCController(s.cm, s.ref, bp.PARTITION_8_72, HORIZON, s.Q8, s.R, dt=s.dt,
                              **s.bounds, **options)
    if kind == "lqr":
        mpc = MPCController(s.dsys, s.ref, HORIZON, s.Q7, s.R, deviation=s.deviation, **s.bounds)
        return TVLQRController(mpc.schedule.lqr, s.ref, s.dt, deviation=s.deviation,
                               u_min=s.bounds["u_min"], u_max=s.bounds["u_max"],
                               **options)
    raise ValueError(f"kind must be 'lqr', 'mpc' or 'rti', got {kind!r}")


def ball_plate_estimator(s: BallPlateSetup, kind: Literal["kf", "ekf"], steps: int,
                         controller: Any) -> Any:
    """The linearized Kalman filter (``kf``: measured ``x_C, y_C, φ, θ`` about the reference,
    over ``steps`` samples) or the EKF on the manifold (``ekf``: camera on the contact point,
    encoders on the plate angles), both started at the reference."""
    from ..design import ExtendedKalmanFilter, KalmanEstimator, kalman_filter
    from ..models import ball_plate as bp
    from ..systems import DiscreteLTV

    if kind == "ekf":
        from .output_feedback import ball_plate_sensor_model

        cms = ball_plate_sensor_model()
        return ExtendedKalmanFilter(cms, bp.PARTITION_8_72, s.dt,
                                    Rn=np.diag([1e-6, 1e-6, 1e-8, 1e-8]), x0=s.ref.x(0.0),
                                    xd0=s.ref.xd(0.0), P0=1e-4 * np.eye(8), Qw=1e-6 * np.eye(2),
                                    Qx=1e-8 * np.eye(8))
    if kind == "kf":
        states = list(s.red.states)
        meas = ["x_C", "y_C", "phi", "theta"]
        C = np.zeros((len(meas), len(states)))
        for i, nm in enumerate(meas):
            C[i, states.index(nm)] = 1.0
        Ad = np.asarray(s.dsys.Ad)
        Bd = np.asarray(s.dsys.Bd)
        idx = np.arange(steps) % Ad.shape[0]
        d = DiscreteLTV(Ad[idx], Bd[idx], s.dt, states=tuple(states), C=C)
        kf = kalman_filter(d, 1e-8 * np.eye(len(states)), np.diag([1e-6, 1e-6, 1e-6, 1e-6]),
                           P0=1e-4 * np.eye(len(states)))
        ts = s.dt * np.arange(steps + 1)
        xr = np.asarray(s.ref.x(ts), float)
        coords = list(s.cm.coordinates)
        y0 = xr[:, [coords.index(nm) for nm in meas]]
        u0 = np.asarray(controller.u_ref(ts), float).reshape(steps + 1, -1)
        return KalmanEstimator(kf, y0, u0)
    raise ValueError(f"kind must be 'kf' or 'ekf', got {kind!r}")
