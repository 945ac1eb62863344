"""nhcontrol.design — controllers for linearized (time-varying) systems.

Numbers in, numbers out: only the two tools that work on the nonlinear model — the EKF and the
nonlinear MPC (``NMPCController``: ``linearize``, ``reference`` and ``systems`` for the
re-linearization along its prediction) — import stages to the left of ``systems``. Tracking a reference motion is regulation of the deviation
``δx = x − x_ref(t_k)`` with ``u = u_ref(t_k) + δu`` (``docs/theory/lqr_mpc.md``).

- [`finite_horizon_lqr()`][nhcontrol.design.finite_horizon_lqr] — backward Riccati recursion for
  a discrete LTV system.
- [`lqr()`][nhcontrol.design.lqr.lqr], [`dlqr()`][nhcontrol.design.dlqr] — infinite-horizon LQR of
  an LTI ``control.StateSpace``, a steady linearization or plain matrices (python-control/slycot);
  ``K, S, E = lqr(sys, Q, R)`` and ``lqr(A, B, Q, R)`` as in python-control, with
  ``integral_action=``; a refusal names every direction the PBH test finds.
- [`LTVMPC`][nhcontrol.design.LTVMPC] — cvxpy MPC with input, input-rate and state bounds,
  compiled once (DPP);
  [`window()`][nhcontrol.design.window] cuts its prediction window out of a ``DiscreteLTV``.
- Controllers as objects ([`TrackingController`][nhcontrol.design.TrackingController] protocol:
  ``control(t, [x; ẋ])``, ``reset()``, ``to_iosystem()``; with ``reference=None`` a plain
  ``StateSpace``/``DiscreteLTV`` regulated to zero or to ``x_ref(t)``, ``control(t, x)``):
  [`TVLQRController`][nhcontrol.design.TVLQRController],
  [`MPCController`][nhcontrol.design.MPCController] (soft bounds, Riccati terminal cost,
  integral action, named fallbacks),
  [`OffsetFreeMPCController`][nhcontrol.design.OffsetFreeMPCController] (output feedback:
  a disturbance model estimated by the Kalman filter, offset-free),
  [`NMPCController`][nhcontrol.design.NMPCController] (real-time iteration / SQP nonlinear MPC
  re-linearizing exactly along the predicted trajectory; algorithm, fallbacks and equations in
  ``docs/theory/nmpc.md``).
- [`kalman_filter()`][nhcontrol.design.kalman_filter] — the dual of the finite-horizon LQR: the
  time-varying Kalman filter of a discrete LTV system with outputs;
  [`KalmanEstimator`][nhcontrol.design.KalmanEstimator] runs it sample by sample on the deviations.
- [`ExtendedKalmanFilter`][nhcontrol.design.ExtendedKalmanFilter] — EKF on the constraint
  manifold with the exact Jacobians of the third procedure (imports ``compiled``/``linearization``
  for the model's kernels: the one design tool that works on the nonlinear model).
"""

from .controllers import (ControlRecord, MPCController, RiccatiSchedule, TrackingController,
                          TVLQRController)
from .ekf import ExtendedKalmanFilter
from .kalman import KalmanEstimator, KalmanFilterResult, kalman_filter
from .lqr import LQRResult, dlqr, finite_horizon_lqr, lqr
from .mpc import LTVMPC, MPCStep, window
from .nmpc import NMPCController
from .offset_free import OffsetFreeMPCController

__all__ = [
    "finite_horizon_lqr", "dlqr", "LTVMPC", "lqr", "LQRResult", "MPCStep", "window",
    "TrackingController", "TVLQRController", "MPCController", "ControlRecord", "NMPCController",
    "RiccatiSchedule", "OffsetFreeMPCController",
    "kalman_filter", "KalmanFilterResult", "KalmanEstimator", "ExtendedKalmanFilter",
]
