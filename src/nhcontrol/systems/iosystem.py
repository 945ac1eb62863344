"""Linear time-varying systems as python-control input/output systems.

[`LTVSystem.to_iosystem()`][nhcontrol.systems.LTVSystem.to_iosystem] and
[`DiscreteLTV.to_iosystem()`][nhcontrol.systems.DiscreteLTV.to_iosystem] hand a time-varying
linear system to python-control as a ``NonlinearIOSystem`` (python-control has no LTV class):
the update function evaluates ``A(t) x + B(t) u`` (``A_k x + B_k u`` with
``k = round((t − t0)/dt)`` in discrete time) and the output function ``C(t) x + D(t) u``, with
the state, input and output names of the system, so ``control.interconnect`` connects it by
name and ``control.input_output_response`` simulates it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .._util.errors import LinearSystemError

if TYPE_CHECKING:
    import control

    from .discrete import DiscreteLTV
    from .ltv import LTVSystem

__all__ = ["ltv_to_iosystem", "discrete_ltv_to_iosystem"]


def ltv_to_iosystem(sys: LTVSystem, name: str | None = None) -> control.NonlinearIOSystem:
    """``ẋ = A(t) x + B(t) u``, ``y = C(t) x + D(t) u`` as a continuous ``NonlinearIOSystem``.

    Evaluating outside ``t_range`` raises `TimeRangeError` (python-control's simulation stops
    with it).
    """
    import control

    n, k = sys.nstates, sys.ninputs

    def upd(t: float, x: NDArray, u: NDArray, params: Any = None) -> NDArray:
        A, B = sys.A(float(t)), sys.B(float(t))
        return A @ np.asarray(x, float).reshape(n) + B @ np.asarray(u, float).reshape(k)

    def out(t: float, x: NDArray, u: NDArray, params: Any = None) -> NDArray:
        C, D = sys.output_matrices(float(t))
        return C @ np.asarray(x, float).reshape(n) + D @ np.asarray(u, float).reshape(k)

    return control.nlsys(upd, out, states=list(sys.states), inputs=list(sys.inputs),
                         outputs=list(sys.outputs), dt=0, name=name)


def discrete_ltv_to_iosystem(sys: DiscreteLTV, name: str | None = None) -> control.NonlinearIOSystem:
    """``x[k+1] = A_k x[k] + B_k u[k]``, ``y = C_k x + D_k u`` as a discrete ``NonlinearIOSystem``
    (``dt`` the sample time; ``k = round((t − t0)/dt)``, wrapped for a periodic sequence)."""
    import control

    Ad, Bd = np.asarray(sys.Ad), np.asarray(sys.Bd)
    N, n, k = Bd.shape
    h, t0 = float(sys.dt), float(getattr(sys, "t0", 0.0))
    period = getattr(sys, "period_steps", None)
    Ck, Dk = getattr(sys, "Ck", None), getattr(sys, "Dk", None)
    C = np.asarray(Ck if Ck is not None else sys.C, float)
    D0 = getattr(sys, "D", None)
    D = np.asarray(Dk if Dk is not None else (np.zeros((C.shape[-2], k)) if D0 is None else D0), float)

    def index(t: float) -> int:
        j = int(round((float(t) - t0) / h))
        if period:
            return j % int(period)
        if not 0 <= j < N:
            raise LinearSystemError(f"t = {t:.6g} is sample {j}, outside the {N} steps of this "
                                    f"DiscreteLTV (t0 = {t0:.6g}, dt = {h:.6g})")
        return j

    def pick(M: NDArray, j: int) -> NDArray:
        return M[min(j, M.shape[0] - 1)] if M.ndim == 3 else M

    def upd(t: float, x: NDArray, u: NDArray, params: Any = None) -> NDArray:
        j = index(t)
        return Ad[j] @ np.asarray(x, float).reshape(n) + Bd[j] @ np.asarray(u, float).reshape(k)

    def out(t: float, x: NDArray, u: NDArray, params: Any = None) -> NDArray:
        j = min(max(int(round((float(t) - t0) / h)), 0), 10**9)
        j = j % int(period) if period else j
        return pick(C, j) @ np.asarray(x, float).reshape(n) + pick(D, j) @ np.asarray(u, float).reshape(k)

    outputs = list(getattr(sys, "outputs", None) or []) or None
    return control.nlsys(upd, out, states=list(sys.states), inputs=list(sys.inputs),
                         outputs=outputs or C.shape[-2], dt=h, name=name)
