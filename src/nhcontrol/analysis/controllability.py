"""Rank decisions and LTI controllability tests (Kalman rank, Popov–Belevitch–Hautus).

Every rank decision in nhcontrol returns a [`RankResult`][nhcontrol.analysis.RankResult] carrying
its evidence: the
singular values, the tolerance used and an orthonormal basis of the left null space (the
directions of the state space that cannot be reached). The default tolerance is that of
``numpy.linalg.matrix_rank``: ``tol = s_max · max(shape) · eps``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import control
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .._util.validation import RANK_RTOL, as_float_array, check_finite, readonly
from ..systems.ltv import LTVSystem, as_ltv
from .._util.reprs import concise_repr

__all__ = ["RankResult", "rank_decision", "ctrb_matrix", "controllability", "ControllabilityResult",
           "PBHMode"]


@dataclass(frozen=True, eq=False)
class RankResult:
    """A numerical rank decision with its evidence.

    Attributes
    ----------
    rank : int
        Number of singular values ``> tol``.
    nstates : int
        Number of rows ``n`` of the tested matrix (the state dimension).
    singular_values : (min(n, p),) ndarray
        Descending singular values of the ``(n, p)`` matrix.
    tol : float
        Absolute threshold used.
    condition_number : float
        ``s_max / s_min`` over the ``min(n, p)`` singular values (``inf`` if ``s_min == 0``).
    uncontrollable_directions : (n, n - rank) ndarray
        Orthonormal basis of the left null space ``{v : vᵀ M = 0}`` (complex for complex ``M``).
    is_controllable : bool
        ``rank == nstates`` (full row rank).
    """

    rank: int
    nstates: int
    singular_values: NDArray[np.float64]
    tol: float
    condition_number: float
    uncontrollable_directions: NDArray[Any]
    is_controllable: bool

    @property
    def margin(self) -> float:
        """``s_rank / tol``: how far above the threshold the smallest kept singular value lies
        (``0`` when the rank is 0). The dropped ones are in ``singular_values[rank:]``."""
        if self.rank == 0:
            return 0.0
        return float(self.singular_values[self.rank - 1] / self.tol) if self.tol > 0 else float("inf")

    def __repr__(self) -> str:
        sv = np.array2string(self.singular_values, precision=3, max_line_width=120)
        return (f"RankResult(rank={self.rank}/{self.nstates}, tol={self.tol:.3e}, "
                f"cond={self.condition_number:.3e}, singular_values={sv})")


def rank_decision(M: ArrayLike, *, tol: float | None = None, rtol: float | None = None,
                  name: str = "matrix") -> RankResult:
    """Numerical rank of an ``(n, p)`` matrix from its SVD.

    Parameters
    ----------
    M : (n, p) array_like
        Real or complex matrix (``n`` = number of states).
    tol : float, optional
        Absolute threshold; overrides ``rtol``.
    rtol : float, optional
        Relative threshold: ``tol = rtol · s_max``. Default ``tol = s_max · max(n, p) · eps``
        (``numpy.linalg.matrix_rank``).
    name : str
        Used in messages.

    Returns
    -------
    RankResult
    """
    arr = np.asarray(M)
    if not np.iscomplexobj(arr):
        arr = as_float_array(arr, name, ndim=2)
    elif arr.ndim != 2:
        raise LinearSystemError(f"{name} must be a 2-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        check_finite(np.abs(arr), name)
    n, p = arr.shape
    if n == 0:
        raise LinearSystemError(f"{name} has no rows (0 states)")
    if p == 0:
        sv = np.zeros(0)
        U = np.eye(n, dtype=arr.dtype)
    else:
        U, sv, _ = np.linalg.svd(arr, full_matrices=True)
    smax = float(sv[0]) if sv.size else 0.0
    if tol is not None:
        if not (tol >= 0 and np.isfinite(tol)):
            raise LinearSystemError(f"tol must be a non-negative finite number, got {tol!r}")
        thr = float(tol)
    elif rtol is not None:
        if not (rtol >= 0 and np.isfinite(rtol)):
            raise LinearSystemError(f"rtol must be a non-negative finite number, got {rtol!r}")
        thr = float(rtol) * smax
    else:
        thr = smax * max(n, p) * RANK_RTOL
    rank = int(np.sum(sv > thr))
    smin = float(sv[-1]) if sv.size else 0.0
    cond = smax / smin if smin > 0 else float("inf")
    null = U[:, rank:].copy()
    return RankResult(rank=rank, nstates=n, singular_values=readonly(sv.copy()), tol=thr,
                      condition_number=float(cond), uncontrollable_directions=readonly(null),
                      is_controllable=rank == n)


def ctrb_matrix(A: ArrayLike, B: ArrayLike) -> NDArray[np.float64]:
    """Kalman controllability matrix ``[B, A B, …, A^{n−1} B]``, shape (n, n k)."""
    Aa = as_float_array(A, "A", ndim=2)
    n = Aa.shape[0]
    if Aa.shape != (n, n):
        raise LinearSystemError(f"A must be square (n, n), got {Aa.shape}")
    Ba = as_float_array(B, "B")
    if Ba.ndim == 1:
        Ba = Ba.reshape(-1, 1)
    if Ba.ndim != 2 or Ba.shape[0] != n:
        raise LinearSystemError(f"B must have shape (n, k) = ({n}, k) to match A, got {Ba.shape}")
    blocks = [Ba]
    for _ in range(n - 1):
        blocks.append(Aa @ blocks[-1])
    return np.hstack(blocks)


@dataclass(frozen=True, eq=False)
class PBHMode:
    """PBH test of one eigenvalue: rank of ``[λI − A, B]``."""

    __repr__ = concise_repr

    eigenvalue: complex
    rank: RankResult

    @property
    def is_controllable(self) -> bool:
        """``rank([λI − A, B]) == n``."""
        return self.rank.is_controllable


@dataclass(frozen=True, eq=False)
class ControllabilityResult:
    """Controllability of an LTI pair ``(A, B)``.

    Attributes
    ----------
    kalman : RankResult
        Rank of ``[B, AB, …, A^{n−1}B]``.
    pbh : tuple of PBHMode
        One entry per eigenvalue of ``A`` (with multiplicity).
    uncontrollable_modes : (q,) complex ndarray
        Eigenvalues whose PBH rank is below ``n``.
    is_controllable : bool
        Kalman decision (``kalman.is_controllable``).
    states, inputs : tuple of str
    """

    __repr__ = concise_repr

    kalman: RankResult
    pbh: tuple[PBHMode, ...]
    uncontrollable_modes: NDArray[np.complex128]
    is_controllable: bool
    states: tuple[str, ...]
    inputs: tuple[str, ...]

    @property
    def rank(self) -> int:
        """Kalman rank."""
        return self.kalman.rank

    @property
    def is_stabilizable(self) -> bool:
        """All uncontrollable modes have ``Re λ < 0``."""
        return bool(np.all(np.real(self.uncontrollable_modes) < 0))


def controllability(sys: control.StateSpace | LTVSystem | tuple[ArrayLike, ArrayLike], *,
                    t: float | None = None, tol: float | None = None, rtol: float | None = None,
                    method: Literal["both", "kalman"] = "both") -> ControllabilityResult:
    """Kalman rank and PBH tests of an LTI pair.

    Parameters
    ----------
    sys : control.StateSpace, (A, B) tuple or LTVSystem
        An LTV system is accepted only when constant, or with ``t`` given (then the *frozen*
        pair ``(A(t), B(t))`` is tested — which says nothing about the LTV system itself; use
        `gramian()` or `silverman_meadows()` for that).
    t : float, optional
        Freezing time for a time-varying ``LTVSystem``.
    tol, rtol : float, optional
        Rank thresholds, see [`rank_decision()`][nhcontrol.analysis.rank_decision]; for PBH they
        apply to each
        ``[λI − A, B]``.
    method : {"both", "kalman"}
        ``"kalman"`` skips the per-eigenvalue PBH tests.

    Returns
    -------
    ControllabilityResult

    Notes
    -----
    The Kalman matrix ``[B, AB, …, A^{n−1}B]`` is badly scaled for large ``n`` or widely spread
    eigenvalues; the PBH test ``rank [λI − A, B] = n`` for every eigenvalue ``λ`` is better
    conditioned and names the uncontrollable modes; both are reported.

    Examples
    --------
    >>> import numpy as np
    >>> res = controllability((np.diag([-1.0, 2.0]), np.array([[1.0], [0.0]])))
    >>> res.rank, res.uncontrollable_modes.real.tolist(), res.is_stabilizable
    (1, [2.0], False)
    """
    if method not in ("both", "kalman"):
        raise LinearSystemError(f"method must be 'both' or 'kalman', got {method!r}")
    s = as_ltv(sys)
    if not s.is_constant:
        if t is None:
            raise LinearSystemError(
                "controllability() tests an LTI pair, got a time-varying LTVSystem; pass t= to test "
                "the frozen pair (A(t), B(t)), or use nhcontrol.analysis.gramian / silverman_meadows "
                "for the controllability of the LTV system (Eqs. (8.85)-(8.87))")
        tt = float(t)
    else:
        tt = 0.0 if s.t_range is None else s.t_range[0]
    A, B = s.A(tt), s.B(tt)
    n = s.nstates
    kal = rank_decision(ctrb_matrix(A, B), tol=tol, rtol=rtol, name="[B, AB, ..., A^(n-1)B]")
    modes: list[PBHMode] = []
    bad: list[complex] = []
    if method == "both":
        for lam in np.linalg.eigvals(A):
            M = np.hstack([lam * np.eye(n) - A, B.astype(complex)])
            r = rank_decision(M, tol=tol, rtol=rtol, name=f"[λI - A, B] at λ = {lam}")
            modes.append(PBHMode(complex(lam), r))
            if not r.is_controllable:
                bad.append(complex(lam))
    return ControllabilityResult(kalman=kal, pbh=tuple(modes),
                                 uncontrollable_modes=readonly(np.array(bad, dtype=complex)),
                                 is_controllable=kal.is_controllable, states=s.states, inputs=s.inputs)
