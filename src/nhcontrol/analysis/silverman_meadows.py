"""Silverman–Meadows controllability test of LTV systems (Eqs. (8.86)–(8.87)).

$$
\\begin{gathered}
Q_{N-1}(t) = [P_0(t)\\; P_1(t)\\; \\dots\\; P_{N-1}(t)], \\qquad (8.86) \\\\
P_k(t) = -A(t) P_{k-1}(t) + \\dot P_{k-1}(t), \\quad P_0 = B(t). \\qquad (8.87)
\\end{gathered}
$$

The system is completely controllable at ``t0`` if ``rank Q_{N−1}(t) = N`` for almost all ``t`` of
some interval after ``t0`` (Silverman & Meadows 1967). The derivatives of ``P_{k−1}`` are
expanded with Leibniz' rule, so only ``A^{(j)}`` (``j ≤ N−2``) and ``B^{(j)}`` (``j ≤ N−1``) are
needed:

$$
P_k^{(j)} = -\\sum_{i=0}^{j} \\binom{j}{i} A^{(i)} P_{k-1}^{(j-i)} + P_{k-1}^{(j+1)}.
$$
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Literal

import control
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .._util.validation import readonly
from ..systems.ltv import DerivativeMethod, LTVSystem, as_ltv
from .controllability import RankResult, rank_decision
from .._util.reprs import concise_repr

__all__ = ["silverman_meadows", "SilvermanMeadowsResult"]


@dataclass(frozen=True, eq=False)
class SilvermanMeadowsResult:
    """Silverman–Meadows matrices ``Q(t)`` and their ranks over a set of times.

    Attributes
    ----------
    times : (M,) ndarray
    Q : (M, n, n k (order + 1)) ndarray
        ``[P_0 … P_order]`` at each time (Eq. (8.86)).
    order : int
        Index of the last block (``N − 1 = n − 1`` by default).
    ranks : tuple of RankResult
        Rank decision at each time.
    generic_rank : int
        ``max`` of the ranks over ``times``.
    drop_times : (q,) ndarray
        Times where the rank is below ``generic_rank`` (isolated singular instants, or a whole
        sub-interval when controllability is lost there).
    is_controllable : bool
        ``generic_rank == n``.
    derivative_method : str
        How the derivatives of ``A`` and ``B`` were obtained.
    test : {"controllability", "observability"}
        ``"observability"``: the matrices are those of the dual system
        (`nhcontrol.analysis.dual_system`) at ``−t``, ``Q = [N_0ᵀ, −N_1ᵀ, N_2ᵀ, …]`` with
        ``N_0 = C``, ``N_{j+1} = N_j A + Ṅ_j``; `is_controllable` then means "observable"
        (see `is_observable`).
    """

    __repr__ = concise_repr

    times: NDArray[np.float64]
    Q: NDArray[np.float64]
    order: int
    ranks: tuple[RankResult, ...]
    generic_rank: int
    drop_times: NDArray[np.float64]
    is_controllable: bool
    derivative_method: str
    test: str = "controllability"

    @property
    def is_observable(self) -> bool:
        """``generic_rank == n`` of the observability test (``test="observability"``)."""
        if self.test != "observability":
            raise LinearSystemError("this is the controllability test; call "
                                    "silverman_meadows(sys, t, test='observability')")
        return self.is_controllable

    @property
    def rank(self) -> NDArray[np.int_]:
        """Rank at each time, shape (M,)."""
        return np.array([r.rank for r in self.ranks], dtype=int)

    @property
    def min_singular_value(self) -> NDArray[np.float64]:
        """Smallest of the ``n`` leading singular values of ``Q(t)`` at each time, shape (M,)."""
        n = self.Q.shape[1]
        return np.array([r.singular_values[n - 1] if r.singular_values.size >= n else 0.0
                         for r in self.ranks])


def silverman_meadows(sys: LTVSystem | control.StateSpace, t: ArrayLike, *, order: int | None = None,
                      method: DerivativeMethod = "auto", tol: float | None = None,
                      rtol: float | None = None,
                      test: Literal["controllability", "observability"] = "controllability"
                      ) -> SilvermanMeadowsResult:
    """Silverman–Meadows matrix ``Q_{N−1}(t)`` of Eqs. (8.86)–(8.87) and its rank.

    Parameters
    ----------
    sys : LTVSystem or control.StateSpace
        For a time-invariant system ``Q`` reduces to ``[B, −AB, A²B, …]`` (same rank as Kalman's).
    t : float or (M,) array_like
        Time(s) at which ``Q`` is evaluated.
    order : int, optional
        Index of the last block, default ``N − 1`` with ``N = n`` (Eq. (8.86)).
    method : {"auto", "exact", "spectral", "chebyshev"}
        Source of the derivatives ``A^{(j)}``, ``B^{(j)}``, see
        [`nhcontrol.systems.LTVSystem.derivative()`][nhcontrol.systems.LTVSystem.derivative].
        ``"exact"`` refuses numerical
        differentiation.
    tol, rtol : float, optional
        Rank thresholds applied at each time (see
        [`rank_decision()`][nhcontrol.analysis.rank_decision]).
    test : {"controllability", "observability"}, default "controllability"
        ``"observability"``: the dual test on ``(A(t), C(t))`` — the controllability test of
        the dual system ``Ā(σ) = Aᵀ(−σ)``, ``B̄(σ) = Cᵀ(−σ)`` at ``σ = −t``, whose blocks are
        ``(−1)^j N_jᵀ`` with ``N_0 = C``, ``N_{j+1} = N_j A + Ṅ_j`` (derived in
        docs/theory/estimation.md).

    Returns
    -------
    SilvermanMeadowsResult

    Raises
    ------
    LinearSystemError
        Derivatives of the required order are not available with ``method``.

    Notes
    -----
    Rank is decided pointwise; near an isolated rank drop the smallest singular value goes to
    zero continuously, so a time *close* to the drop is still full rank. ``drop_times`` lists the
    requested times at which the decision is below the generic rank.

    Examples
    --------
    >>> import numpy as np
    >>> from nhcontrol.systems import LTVSystem
    >>> sys = LTVSystem([[0.0, 1.0], [0.0, 0.0]], lambda t: [[0.0], [t]])   # det Q = t²
    >>> res = silverman_meadows(sys, [-1.0, 0.0, 1.0])
    >>> res.rank.tolist(), res.generic_rank, res.drop_times.tolist()
    ([2, 1, 2], 2, [0.0])
    """
    if test not in ("controllability", "observability"):
        raise LinearSystemError(f"test must be 'controllability' or 'observability', got {test!r}")
    s = as_ltv(sys)
    ta = s.check_time(t)
    times = np.atleast_1d(ta).astype(float)
    if test == "observability":
        from dataclasses import replace

        from .observability import dual_system

        r = silverman_meadows(dual_system(s), -times, order=order, method=method, tol=tol,
                              rtol=rtol)
        return replace(r, times=readonly(times), drop_times=readonly(-r.drop_times),
                       test="observability")
    n, k = s.nstates, s.ninputs
    q = n - 1 if order is None else int(order)
    if order is not None and (q != order or q < 0):
        raise LinearSystemError(f"order must be a non-negative integer (index of the last block), got {order!r}")
    # Derivatives A^{(i)}, i = 0..q-1 and B^{(j)}, j = 0..q at every time: (ord, M, n, .)
    dA = list(s.derivatives("A", times, max(q - 1, 0), method=method))
    dB = list(s.derivatives("B", times, q, method=method))
    # P[j] holds the j-th derivative of the current block P_k, j = 0..q-k.
    P = list(dB)
    blocks = [P[0]]
    for kk in range(1, q + 1):
        newP = []
        for j in range(q - kk + 1):
            acc = P[j + 1].copy()
            for i in range(j + 1):
                acc -= comb(j, i) * (dA[i] @ P[j - i])
            newP.append(acc)
        P = newP
        blocks.append(P[0])
    Q = np.concatenate(blocks, axis=-1)
    ranks = tuple(rank_decision(Q[m], tol=tol, rtol=rtol, name=f"Q_{q}(t) at t = {times[m]}")
                  for m in range(times.size))
    rk = np.array([r.rank for r in ranks])
    generic = int(rk.max())
    if s.is_constant:
        how = "constant system (derivatives are zero)"
    else:
        mA, mB = s.max_exact_order("A"), s.max_exact_order("B")
        needA, needB = q - 1, q
        exact = (mA is None or mA >= needA) and (mB is None or mB >= needB)
        if method == "exact" or (method == "auto" and exact):
            how = "exact"
        elif method == "auto":
            how = "spectral" if s.period is not None else "chebyshev"
            how = f"exact where available, else {how}"
        else:
            how = str(method)
    return SilvermanMeadowsResult(times=readonly(times), Q=readonly(Q), order=q, ranks=ranks,
                                  generic_rank=generic, drop_times=readonly(times[rk < generic]),
                                  is_controllable=generic == n, derivative_method=how)
