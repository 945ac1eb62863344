"""Small linear-algebra helpers shared by ``reference`` and ``simulate`` (rank evidence)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from numpy.typing import NDArray

from nhcontrol._util.validation import RANK_RTOL


class _LazyScipyLinalg:
    """``scipy.linalg``, imported at first use (loading nhcontrol needs no scipy)."""

    def __getattr__(self, name: str):  # noqa: ANN204
        import scipy.linalg

        return getattr(scipy.linalg, name)


sla = _LazyScipyLinalg()

__all__ = ["RankEvidence", "column_rank", "format_sv"]


@dataclass(frozen=True)
class RankEvidence:
    """Rank of a matrix with its evidence.

    Attributes
    ----------
    rank : int
        Numerical rank.
    singular_values : (min(r, c),) ndarray
        Singular values, descending.
    tol : float
        Threshold used: ``RANK_RTOL * s_max * max(shape)`` unless overridden.
    redundant : tuple of str
        Names of the columns found linearly dependent on the others (column-pivoted QR:
        the last ``c - rank`` pivots), empty when of full column rank.
    """

    rank: int
    singular_values: NDArray[np.float64]
    tol: float
    redundant: tuple[str, ...]


def format_sv(s: NDArray[np.float64], limit: int = 8) -> str:
    """Compact text of singular values, e.g. ``[3.1e+00, 1.2e-17]``."""
    vals = [f"{v:.3g}" for v in np.asarray(s)[:limit]]
    more = ", ..." if np.size(s) > limit else ""
    return "[" + ", ".join(vals) + more + "]"


def column_rank(A: NDArray[np.float64], names: Sequence[str],
                rtol: float = RANK_RTOL) -> RankEvidence:
    """Numerical column rank of ``A`` and the names of redundant columns.

    Parameters
    ----------
    A : (r, c) ndarray
    names : sequence of str, length c
        Column names (e.g. constraint names for ``A = D^T``).
    rtol : float
        Relative tolerance, ``tol = rtol * s_max * max(r, c)``.

    Returns
    -------
    RankEvidence
    """
    A = np.asarray(A, dtype=float)
    if A.size == 0:
        return RankEvidence(0, np.zeros(0), 0.0, ())
    s = np.linalg.svd(A, compute_uv=False)
    tol = float(rtol * (s[0] if s.size else 0.0) * max(A.shape))
    rank = int(np.sum(s > tol))
    redundant: tuple[str, ...] = ()
    if rank < A.shape[1]:
        _, _, piv = sla.qr(A, mode="economic", pivoting=True)
        redundant = tuple(names[int(j)] for j in piv[rank:])
    return RankEvidence(rank, s, tol, redundant)
