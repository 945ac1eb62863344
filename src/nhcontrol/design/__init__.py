"""nhcontrol.design — controllers for linearized (time-varying) systems.

Numbers in, numbers out: nothing here imports ``modeling``, ``compiled``, ``reference`` or
``linearize``. Tracking a reference motion is regulation of the deviation
``δx = x − x_ref(t_k)`` with ``u = u_ref(t_k) + δu`` (``docs/theory/lqr_mpc.md``).

- [`finite_horizon_lqr()`][nhcontrol.design.finite_horizon_lqr] — backward Riccati recursion for
  a discrete LTV system.
- [`lqr()`][nhcontrol.design.lqr.lqr], [`dlqr()`][nhcontrol.design.dlqr] — infinite-horizon LQR of
  an LTI ``control.StateSpace`` (python-control/slycot); ``K, S, E = lqr(sys, Q, R)`` as in
  python-control.
- [`LTVMPC`][nhcontrol.design.LTVMPC] — cvxpy MPC with input, input-rate and state bounds,
  compiled once (DPP);
  [`window()`][nhcontrol.design.window] cuts its prediction window out of a ``DiscreteLTV``.
"""

from .lqr import LQRResult, dlqr, finite_horizon_lqr, lqr
from .mpc import LTVMPC, MPCStep, window

__all__ = [
    "finite_horizon_lqr", "LTVMPC", "lqr", "dlqr", "LQRResult", "MPCStep", "window"
]
