"""Linear combinations of named states: echelon forms of direction sets and their text.

Pure numpy helpers shared by ``analysis.decomposition`` (the Kalman decomposition) and
``design.lqr`` (the PBH report of a refused design); they live here so that ``design`` names
the directions without importing the model-building stages behind ``nhcontrol.analysis``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["COEF_RTOL", "format_combination", "echelon_combinations", "pbh_directions"]

COEF_RTOL = 1e-9
"""Coefficients of a combination below ``COEF_RTOL × max |coefficient|`` are printed as zero."""


def format_combination(c: ArrayLike, names: Sequence[str], digits: int = 6,
                       first: int | None = None) -> str:
    """``"x - 0.05 phiL - 0.05 phiR"``: a combination written with the state names (the state
    ``first``, e.g. the pivot, leading)."""
    cv = np.asarray(c, dtype=float)
    tol = COEF_RTOL * max(1.0, float(np.abs(cv).max(initial=0.0)))
    parts: list[str] = []
    order = list(range(cv.size))
    if first is not None:
        order.remove(first)
        order.insert(0, first)
    for v, nm in ((cv[i], names[i]) for i in order):
        if abs(v) <= tol:
            continue
        mag = abs(v)
        term = nm if abs(mag - 1.0) <= 1e-12 else f"{mag:.{digits}g} {nm}"
        if not parts:
            parts.append(term if v > 0 else f"-{term}")
        else:
            parts.append(("+ " if v > 0 else "- ") + term)
    return " ".join(parts) if parts else "0"


def echelon_combinations(W: ArrayLike, names: Sequence[str], *, order: Sequence[str] | None = None,
                         tol: float | None = None) -> tuple[NDArray[np.float64], list[int]]:
    """Reduced row echelon form of the row space of ``W`` (q, n) with pivots chosen in ``order``.

    Gauss–Jordan elimination on an orthonormal basis of the rows: the next pivot is the first
    state of ``order`` (default: the state order) whose column still has an entry above
    ``tol`` (default ``1e-8``, the rows being orthonormal); its row is scaled to make the pivot 1
    and the pivot column is cleared in every other row.

    Returns
    -------
    (R, pivots) : (q, n) ndarray and list of int
        The combinations (row ``i`` has coefficient 1 at state ``pivots[i]`` and 0 at the other
        pivots) and the pivot columns.
    """
    Wa = np.atleast_2d(np.asarray(W, dtype=float))
    n = Wa.shape[1]
    if Wa.shape[0] == 0:
        return np.zeros((0, n)), []
    # an orthonormal basis of the row space: the echelon form does not depend on W's scaling
    _, s, Vt = np.linalg.svd(Wa, full_matrices=False)
    R = Vt[: int(np.sum(s > max(s[0], 1e-300) * 1e-12))].copy()
    idx = list(range(n)) if order is None else [list(names).index(o) for o in order]
    idx += [j for j in range(n) if j not in idx]
    thr = 1e-8 if tol is None else float(tol)
    pivots: list[int] = []
    row = 0
    for j in idx:
        if row >= R.shape[0]:
            break
        cand = np.abs(R[row:, j])
        if cand.size == 0 or cand.max() <= thr:
            continue
        r = row + int(np.argmax(cand))
        R[[row, r]] = R[[r, row]]
        R[row] /= R[row, j]
        for i in range(R.shape[0]):
            if i != row:
                R[i] -= R[i, j] * R[row]
        R[row, j] = 1.0
        pivots.append(j)
        row += 1
    R = R[:row]
    R[np.abs(R) <= COEF_RTOL * np.maximum(1.0, np.abs(R).max(axis=1, keepdims=True))] = 0.0
    return R, pivots


def pbh_directions(A: ArrayLike, B: ArrayLike, lam: complex, names: Sequence[str], *,
                   tol: float, order: Sequence[str] | None = None
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Every real direction ``w`` with ``w [A − λI, B] = 0`` (the PBH test of ``λ``).

    The left null space of ``[A − λI, B]`` (from its SVD, singular values ``<= tol``); for a
    complex ``λ`` its real and imaginary parts (the real left-invariant subspace of the pair
    ``λ, λ̄``). Returns the echelon form of the directions (see `echelon_combinations()`) and
    the singular values.
    """
    Aa = np.asarray(A, dtype=float)
    n = Aa.shape[0]
    M = np.hstack([Aa - lam * np.eye(n), np.asarray(B, dtype=float)])
    U, s, _ = np.linalg.svd(M, full_matrices=True)
    rank = int(np.sum(s > tol))
    W = U[:, rank:].conj().T
    if np.iscomplexobj(W) and np.any(np.abs(W.imag) > 1e-12):
        W = np.vstack([W.real, W.imag])
    R, _ = echelon_combinations(np.real(W), names, order=order)
    return R, s


