"""State transition matrix ``Φ(t1, t0)`` of a linear (time-varying) system (Sect. 6.1).

``Φ`` solves ``∂Φ(t, t0)/∂t = A(t) Φ(t, t0)``, ``Φ(t0, t0) = I``; the free response is
``x(t1) = Φ(t1, t0) x(t0)``. It is the fundamental-matrix solution used by the thesis for the
Gramian of Eq. (8.85) and for the monodromy matrix ``Φ(t0 + T, t0)`` of Floquet theory.
"""

from __future__ import annotations

from typing import Literal

import control
import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from .._util.errors import LinearSystemError, SolverError
from ..systems.discretize import _magnus_steps
from ..systems.ltv import LTVSystem, as_ltv

__all__ = ["transition_matrix", "TRANSITION_RTOL"]

TRANSITION_RTOL = 1e-12
"""Default relative tolerance of the transition-matrix integration (DOP853)."""


def transition_matrix(sys: LTVSystem | control.StateSpace, t1: ArrayLike, t0: float, *,
                      rtol: float = TRANSITION_RTOL, atol: float | None = None,
                      method: Literal["ode", "magnus"] = "ode") -> NDArray[np.float64]:
    """State transition matrix ``Φ(t1, t0)``.

    Parameters
    ----------
    sys : LTVSystem or control.StateSpace
    t1 : float or (M,) array_like
        Final time(s); may lie before ``t0`` (backward integration).
    t0 : float
        Initial time.
    rtol : float, default 1e-12
        Relative tolerance of the DOP853 integration of ``Φ̇ = A(t) Φ``.
    atol : float, optional
        Absolute tolerance, default ``rtol * 1e-3`` (``method="ode"``).
    method : {"ode", "magnus"}, default "ode"
        ``"ode"``: DOP853 on ``Φ̇ = A Φ`` (one call of ``A`` per stage). ``"magnus"``: the
        sixth-order Magnus scheme of `nhcontrol.systems.discretize()` over ``[t0, t1]``
        (substeps doubled until two levels agree to ``rtol``; all Gauss nodes of a level in one
        vectorised call of ``A`` — much faster when ``A(t)`` is expensive and vectorized).

    Returns
    -------
    (n, n) ndarray, or (M, n, n) for an array ``t1``.

    Raises
    ------
    TimeRangeError
        A time outside ``sys.t_range``.
    SolverError
        The integration failed.

    Notes
    -----
    For time-invariant systems ``Φ(t1, t0) = expm(A (t1 − t0))`` exactly. Composition
    ``Φ(t2, t0) = Φ(t2, t1) Φ(t1, t0)`` and ``det Φ(t1, t0) = exp ∫ tr A`` (Liouville) hold and are
    tested.

    Examples
    --------
    >>> import numpy as np
    >>> from nhcontrol.systems import LTVSystem
    >>> sys = LTVSystem(lambda t: [[np.cos(t)]], [[1.0]])      # Φ = exp(sin t1 − sin t0)
    >>> bool(np.isclose(transition_matrix(sys, 2.0, 0.0)[0, 0], np.exp(np.sin(2.0)), rtol=1e-10))
    True
    """
    s = as_ltv(sys)
    t1a = s.check_time(t1, "t1")
    t0f = float(s.check_time(t0, "t0"))
    n = s.nstates
    if not (0 < rtol < 1):
        raise LinearSystemError(f"rtol must lie in (0, 1), got {rtol!r}")
    at = rtol * 1e-3 if atol is None else float(atol)
    flat = t1a.reshape(-1)
    if s.is_constant:
        A = s.A(t0f)
        out = np.array([expm(A * (ti - t0f)) for ti in flat]).reshape(flat.size, n, n)
        return out[0] if t1a.ndim == 0 else out.reshape((*t1a.shape, n, n))
    if method not in ("ode", "magnus"):
        raise LinearSystemError(f"method must be 'ode' or 'magnus', got {method!r}")
    out = np.empty((flat.size, n, n))
    if method == "magnus":
        for i, ti in enumerate(flat):
            if ti == t0f:
                out[i] = np.eye(n)
                continue
            E = _magnus_steps(s, np.array([t0f]), float(ti) - t0f, max(rtol, 1e-13), 1 << 16)
            out[i] = E[0, :n, :n]
        return out[0] if t1a.ndim == 0 else out.reshape((*t1a.shape, n, n))

    def rhs(t: float, y: NDArray) -> NDArray:
        return (s.A(t) @ y.reshape(n, n)).reshape(-1)

    for sign in (1.0, -1.0):
        idx = np.nonzero((flat - t0f) * sign > 0)[0]
        if idx.size == 0:
            continue
        order = idx[np.argsort(sign * flat[idx])]
        tend = float(flat[order[-1]])
        sol = solve_ivp(rhs, (t0f, tend), np.eye(n).reshape(-1), method="DOP853", rtol=rtol, atol=at,
                        t_eval=flat[order])
        if not sol.success:
            raise SolverError(f"integration of the transition matrix Φ(t, {t0f}) failed at t = "
                              f"{sol.t[-1] if sol.t.size else t0f}: {sol.message}")
        out[order] = sol.y.T.reshape(order.size, n, n)
    out[flat == t0f] = np.eye(n)
    return out[0] if t1a.ndim == 0 else out.reshape((*t1a.shape, n, n))
