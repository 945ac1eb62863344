"""Restriction of a linear system to an invariant subspace (e.g. a conserved quantity removed).

For ``ẋ = A(t) x + B(t) u`` and a subspace ``x = P z`` (``P`` of full column rank ``r``) that the
motion never leaves, whatever the input — ``(I − P S) A(t) P = 0`` and ``(I − P S) B(t) = 0``
with a left inverse ``S`` (``S P = I``) — the coordinates ``z = S x`` obey

$$
\\dot z = S A(t) P\\, z + S B(t)\\, u .
$$

Derived here. The typical case is a first integral ``c = wᵀ x`` with ``wᵀ A = 0``, ``wᵀ B = 0``
(the conserved spin of the ball on the plate, thesis Sect. 8.4.5): no input can change ``c``, so
the system is not controllable, while its restriction to ``c = 0`` (``range P = ker wᵀ``) can be.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .._util.validation import as_float_array
from .ltv import LTVSystem, as_ltv

__all__ = ["restrict", "RESTRICT_RTOL"]

RESTRICT_RTOL = 1e-9
"""Relative size (w.r.t. ``max(1, ‖A‖)``) accepted for ``S P − I`` and for the part of ``A P``, ``B``
that leaves ``range P`` at the probe times.
"""


def restrict(sys: Any, S: ArrayLike, P: ArrayLike, *, states: Sequence[str] | None = None,
             check_times: ArrayLike | None = None, rtol: float = RESTRICT_RTOL) -> LTVSystem:
    """The system on the invariant subspace ``x = P z``, in the coordinates ``z = S x``.

    Parameters
    ----------
    sys : LTVSystem or continuous control.StateSpace
    S : (r, n) array_like
        Left inverse of ``P`` (``S P = I``): reduced coordinates of a state.
    P : (n, r) array_like
        Basis of the invariant subspace.
    states : sequence of str, optional
        Names of ``z`` (default ``z[i]``).
    check_times : array_like, optional
        Times at which invariance is checked (default: the start of ``t_range``, or ``0``, and
        two more points within one period when the system is periodic).
    rtol : float
        Tolerance of the checks, relative to ``max(1, ‖A(t)‖, ‖B(t)‖)``.

    Returns
    -------
    LTVSystem
        ``A_r(t) = S A(t) P``, ``B_r(t) = S B(t)``, same inputs, ``t_range``, ``period`` and
        vectorization; exact time derivatives ``S A^{(j)} P``, ``S B^{(j)}`` wherever ``sys`` has
        exact ones (otherwise computed on demand like any callable system). An output map
        ``y = C x`` other than the identity becomes ``y = C P z`` (same output names).

    Raises
    ------
    LinearSystemError
        Wrong shapes, ``S P ≠ I``, or a subspace that ``A`` or ``B`` leaves (the size is given):
        then the restriction would not be the system's motion.
    """
    s = as_ltv(sys)
    n = s.nstates
    Sm = as_float_array(S, "S", ndim=2, error=LinearSystemError)
    Pm = as_float_array(P, "P", ndim=2, error=LinearSystemError)
    r = Pm.shape[1]
    if Pm.shape[0] != n or Sm.shape != (r, n) or r < 1:
        raise LinearSystemError(f"restrict: P must be (n, r) and S (r, n) with n = {n} states, got P "
                                f"{Pm.shape} and S {Sm.shape}")
    err = float(np.max(np.abs(Sm @ Pm - np.eye(r))))
    if not err <= rtol:
        raise LinearSystemError(f"restrict: S must be a left inverse of P (S P = I), max |S P - I| = {err:.3g}")
    if check_times is None:
        t0 = 0.0 if s.t_range is None else s.t_range[0]
        check_times = [t0] if s.period is None else [t0, t0 + 0.29 * s.period, t0 + 0.71 * s.period]
    proj = np.eye(n) - Pm @ Sm
    for t in np.atleast_1d(np.asarray(check_times, dtype=float)):
        A, B = s.A(float(t)), s.B(float(t))
        scale = max(1.0, float(np.linalg.norm(A)), float(np.linalg.norm(B)))
        leak = max(float(np.linalg.norm(proj @ A @ Pm)), float(np.linalg.norm(proj @ B))) / scale
        if not leak <= rtol:
            raise LinearSystemError(
                f"restrict: the subspace x = P z is not invariant at t = {t:g}: (I - P S) [A P, B] has "
                f"relative size {leak:.3g} > {rtol:g}; the restriction would not follow the system "
                "(choose P spanning an invariant subspace, e.g. the kernel of a first integral)")

    def dA(t: Any, k: int) -> NDArray[np.float64]:
        return Sm @ s.derivative("A", t, k, method="exact") @ Pm

    def dB(t: Any, k: int) -> NDArray[np.float64]:
        return Sm @ s.derivative("B", t, k, method="exact")

    exact_A, exact_B = s.max_exact_order("A"), s.max_exact_order("B")
    out = {} if s.has_identity_output else {"C": s.C @ Pm, "outputs": s.outputs}
    if s.is_constant:
        return LTVSystem(Sm @ s.A(0.0) @ Pm, Sm @ s.B(0.0), states=states, inputs=list(s.inputs),
                         t_range=s.t_range, period=s.period, breakpoints=s.breakpoints, **out)
    derivs: dict[str, Any] = {}
    for key, ex, f, which in (("dA", exact_A, dA, "A"), ("dB", exact_B, dB, "B")):
        if ex is None:
            derivs[key] = f
        elif ex > 0:
            derivs[key] = [(lambda t, _k=j, _f=f: _f(t, _k)) for j in range(1, ex + 1)]
    return LTVSystem(lambda t: Sm @ s.A(t) @ Pm, lambda t: Sm @ s.B(t), states=states,
                     inputs=list(s.inputs), t_range=s.t_range, period=s.period,
                     vectorized=s.vectorized, breakpoints=s.breakpoints, **derivs, **out)
