"""Second-order (mass, damping, stiffness) matrices of selected coordinates from the linearization.

For a family of steady motions parametrised by a speed ``v`` (relative equilibria such as the
bicycle's straight running, Eq. (4.148)), the rows of the third-procedure Jacobian
(Eq. (4.125)) that give the accelerations of ``r`` chosen independent coordinates ``q`` read

$$
\\ddot q = J_{q}(v)\\, q + J_{\\dot q}(v)\\, \\dot q + B_q(v)\\, u .
$$

When the dynamics of ``q`` closes on ``q`` (the other columns of those rows vanish — cyclic
coordinates and spurious directions do not enter) and the model has ``r`` inputs whose
generalized forces act on ``q`` with a known matrix ``H``, the second-order form
``M q̈ + C(v) q̇ + K(v) q = H u`` follows: ``M = H B_q^{-1}`` (``B_q`` does not depend on ``v``),
``C(v) = -M J_q̇(v)``, ``K(v) = -M J_q(v)`` (derived here). For the bicycle ``C(v) = v C1`` and
``K(v) = g K0 + v² K2`` exactly (Meijaard et al. 2007), so three speeds determine them and a
fourth checks the polynomial form.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .result import LinearizationResult

__all__ = ["SECOND_ORDER_RTOL", "second_order_matrices"]

SECOND_ORDER_RTOL = 1e-8
"""Relative tolerance of the checks in
[`second_order_matrices()`][nhcontrol.linearization.second_order_matrices] (closure of the rows on ``q``
and the polynomial dependence on ``v``).
"""


def _rows(lin: LinearizationResult, coordinates: Sequence[str]) -> tuple[NDArray, NDArray, NDArray]:
    st = list(lin.states)
    missing = [c for c in coordinates if c not in st or f"{c}_d" not in st]
    if missing:
        raise LinearSystemError(f"coordinates {missing} are not independent coordinates of the "
                                 f"linearization (states {st}); choose a partition in which they are")
    iq = [st.index(c) for c in coordinates]
    iv = [st.index(f"{c}_d") for c in coordinates]
    A = lin.A[0] if lin.A.ndim == 3 else lin.A
    B = lin.B[0] if lin.B.ndim == 3 else lin.B
    rows = A[iv]
    other = np.delete(rows, iq + iv, axis=1)
    scale = max(1.0, float(np.abs(rows).max()))
    if other.size and np.abs(other).max() > SECOND_ORDER_RTOL * scale:
        j = int(np.argmax(np.abs(other).max(axis=0)))
        others = [s for k, s in enumerate(st) if k not in iq + iv]
        raise LinearSystemError(f"the accelerations of {list(coordinates)} depend on {others[j]!r} "
                                 f"(entry {np.abs(other).max():.3g}); they have no second-order "
                                 "form of their own at this reference")
    return rows[:, iq], rows[:, iv], B[iv]


def second_order_matrices(linearization_at: Callable[[float], LinearizationResult],
                          coordinates: Sequence[str], H: ArrayLike, *,
                          speeds: Sequence[float] = (0.0, 1.0, 2.0, 3.0),
                          signs: ArrayLike | None = None) -> dict[str, NDArray[np.float64]]:
    """``M, C1, K0g, K2`` of ``M q̈ + v C1 q̇ + (K0g + v² K2) q = H u`` from the third procedure.

    Parameters
    ----------
    linearization_at : callable
        ``v -> LinearizationResult`` of the steady motion at speed ``v`` (with inputs).
    coordinates : sequence of str
        The ``r`` coordinates ``q`` (independent in the partition used).
    H : (r, k) array_like
        Generalized forces on ``q`` per unit input, in the sign convention of the result.
    speeds : sequence of float
        Four distinct speeds, the first 0: ``v0 = 0`` gives ``K0g``, the next two ``C1`` and
        ``K2``, the last checks that ``C`` is linear and ``K`` quadratic in ``v``.
    signs : (r,) array_like, optional
        ``±1`` per coordinate: the result is expressed in ``S q`` (``S = diag(signs)``).

    Returns
    -------
    dict
        ``M, C1, K0g, K2`` (r, r) (``K0g`` is the whole ``v = 0`` stiffness, ``g K0`` for the
        bicycle).

    Raises
    ------
    LinearSystemError
        When the rows of ``q`` involve other states, ``B_q`` is singular, or ``C``/``K`` are not
        linear/quadratic in ``v`` to [`SECOND_ORDER_RTOL`][nhcontrol.linearization.SECOND_ORDER_RTOL].
    """
    v = [float(s) for s in speeds]
    if len(v) != 4 or v[0] != 0.0 or len(set(v)) != 4:
        raise LinearSystemError(f"speeds must be four distinct values starting with 0, got {v}")
    r = len(coordinates)
    S = np.diag(np.ones(r) if signs is None else np.asarray(signs, dtype=float))
    Hm = np.asarray(H, dtype=float)
    Ms, Cs, Ks = [], [], []
    for vi in v:
        Jq, Jv, Bq = _rows(linearization_at(vi), coordinates)
        # in S q: q̈_S = S Jq S q_S + S Jv S q̇_S + S Bq u
        Jq, Jv, Bq = S @ Jq @ S, S @ Jv @ S, S @ Bq
        if Bq.shape != Hm.shape:
            raise LinearSystemError(f"H must have shape {Bq.shape} (coordinates x inputs), got {Hm.shape}")
        sv = np.linalg.svd(Bq, compute_uv=False)
        if sv.size < r or sv[-1] <= 1e-12 * max(1.0, sv[0]):
            raise LinearSystemError(f"the inputs do not act independently on {list(coordinates)} "
                                     f"(singular values of B_q {sv.tolist()}); M = H B_q^-1 needs r "
                                     "independent inputs")
        M = Hm @ np.linalg.pinv(Bq)
        Ms.append(M)
        Cs.append(-M @ Jv)
        Ks.append(-M @ Jq)
    M = Ms[0]
    K0g = Ks[0]
    # C = v C1, K = K0g + v^2 K2: least squares over v1, v2; v3 checks
    C1 = (Cs[1] / v[1] + Cs[2] / v[2]) / 2
    K2 = ((Ks[1] - K0g) / v[1] ** 2 + (Ks[2] - K0g) / v[2] ** 2) / 2
    scale = max(1.0, float(np.abs(np.concatenate([M, C1, K0g, K2])).max()))
    err = max(np.abs(Ms[3] - M).max(), np.abs(Cs[3] - v[3] * C1).max(),
              np.abs(Ks[3] - K0g - v[3] ** 2 * K2).max(), np.abs(Cs[1] / v[1] - Cs[2] / v[2]).max())
    if err > SECOND_ORDER_RTOL * scale:
        raise LinearSystemError(f"the linearization is not of the form M q'' + v C1 q' + (K0 + v^2 K2) q "
                                 f"(deviation {err:.3g} at v = {v[3]}); no canonical matrices")
    return {"M": M, "C1": C1, "K0g": K0g, "K2": K2}
