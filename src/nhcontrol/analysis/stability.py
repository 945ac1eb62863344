"""Eigenvalues versus a parameter and critical parameter values (thesis Sect. 4.3.6, Figs. 4.4-4.5).

Numbers in, numbers out: every function takes a callable ``matrix_fn(value) -> (k, k) array``
(e.g. the Jacobian of a linearization as a function of the forward speed), so it serves any
linear system.

* [`structural_zeros()`][nhcontrol.analysis.structural_zeros] removes states whose row or column
  of ``J`` vanishes (each gives one
  *exact* zero eigenvalue: ``det(λI - J) = λ det(λI - J')`` expanding along that row/column) --
  the forward motion and the spurious eigenvalues of the bicycle (Eq. (4.181)).
* [`charpoly()`][nhcontrol.analysis.charpoly] computes characteristic-polynomial coefficients
  from sums of principal minors
  (no eigenvalues involved, accurate to rounding in the entries).
* [`eigenvalues_vs_parameter()`][nhcontrol.analysis.eigenvalues_vs_parameter] tracks eigenvalue
  branches continuously over a grid.
* [`critical_points()`][nhcontrol.analysis.critical_points] finds, by bracketing on a grid and
  Brent's method, where the spectral
  abscissa crosses zero (oscillatory: a complex pair crosses the imaginary axis, e.g. the weave
  speed ``v_w``; real: an eigenvalue crosses the origin, e.g. the capsize speed ``v_c``) and where
  two real eigenvalues merge into a complex pair (sign change of the discriminant
  ``prod_{i<j} (λ_i - λ_j)^2``, e.g. ``v_d``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq, linear_sum_assignment

from .._util.errors import LinearSystemError, SolverError
from .._util.validation import as_float_array, check_finite, readonly
from .._util.reprs import concise_repr

__all__ = [
    "STRUCTURAL_ZERO_RTOL",
    "StructuralZeros",
    "EigenvalueSweep",
    "CriticalPoint",
    "structural_zeros",
    "charpoly",
    "eigenvalues_vs_parameter",
    "critical_points",
    "spectral_abscissa",
    "match_spectra",
]

STRUCTURAL_ZERO_RTOL = 1e-12
"""Entries with ``|J_ij| <= STRUCTURAL_ZERO_RTOL * max|J|`` count as structural zeros."""

MatrixFn = Callable[[float], ArrayLike]


def _square(J: ArrayLike, name: str = "J") -> NDArray[np.float64]:
    A = as_float_array(J, name, ndim=2)
    if A.shape[0] != A.shape[1]:
        raise LinearSystemError(f"{name} must be square, got shape {A.shape}")
    return check_finite(A, name)


@dataclass(frozen=True)
class StructuralZeros:
    """Result of [`structural_zeros()`][nhcontrol.analysis.structural_zeros].

    Attributes
    ----------
    keep : tuple of int
        Indices of the states of the non-trivial block ``J[keep][:, keep]``.
    removed : tuple of int
        Indices removed (each contributes one exact zero eigenvalue), in removal order.
    tol : float
        Absolute threshold used for "zero" entries.
    block : (k, k) ndarray
        The non-trivial block.
    """

    __repr__ = concise_repr

    keep: tuple[int, ...]
    removed: tuple[int, ...]
    tol: float
    block: NDArray[np.float64]

    @property
    def n_zero(self) -> int:
        """Number of exact zero eigenvalues split off."""
        return len(self.removed)


def structural_zeros(J: ArrayLike, *, rtol: float = STRUCTURAL_ZERO_RTOL) -> StructuralZeros:
    """Split off the states whose row or column of ``J`` is zero, repeatedly.

    Parameters
    ----------
    J : (N, N) array_like
    rtol : float
        Entries ``|J_ij| <= rtol * max|J|`` are zero.

    Returns
    -------
    StructuralZeros
        ``det(λI - J) = λ^{n_zero} det(λI - block)``.
    """
    A = _square(J)
    scale = float(np.max(np.abs(A))) if A.size else 0.0
    tol = rtol * scale
    Z = np.abs(A) <= tol
    keep = list(range(A.shape[0]))
    removed: list[int] = []
    changed = True
    while changed and keep:
        changed = False
        for j in list(keep):
            sub = [i for i in keep]
            if np.all(Z[sub, j]) or np.all(Z[j, sub]):
                keep.remove(j)
                removed.append(j)
                changed = True
    block = A[np.ix_(keep, keep)].copy()
    return StructuralZeros(tuple(keep), tuple(removed), tol, readonly(block))


def charpoly(A: ArrayLike) -> NDArray[np.float64]:
    """Coefficients ``[1, c1, ..., ck]`` of ``det(λI - A) = λ^k + c1 λ^{k-1} + ... + ck``.

    ``c_j = (-1)^j`` times the sum of the principal ``j x j`` minors of ``A``; exact up to the
    rounding of the determinants (no eigenvalues involved). Meant for small blocks (``k <= 8``).

    Parameters
    ----------
    A : (k, k) array_like

    Returns
    -------
    (k+1,) ndarray
    """
    M = _square(A, "A")
    k = M.shape[0]
    if k > 10:
        raise LinearSystemError(f"charpoly sums principal minors and is meant for blocks up to "
                                f"10 x 10, got {k} x {k}; reduce the matrix first "
                                "(structural_zeros)")
    c = np.zeros(k + 1)
    c[0] = 1.0
    for j in range(1, k + 1):
        s = 0.0
        for idx in itertools.combinations(range(k), j):
            s += np.linalg.det(M[np.ix_(idx, idx)])
        c[j] = (-1) ** j * s
    return c


@dataclass(frozen=True)
class EigenvalueSweep:
    """Eigenvalues of ``matrix_fn(value)`` over a grid, tracked into continuous branches.

    Attributes
    ----------
    values : (N,) ndarray
        Parameter values.
    eigenvalues : (N, k) complex ndarray
        Column ``j`` follows one branch (nearest-neighbour assignment between steps).
    parameter : str
        Name of the parameter (for plots).
    """

    __repr__ = concise_repr

    values: NDArray[np.float64]
    eigenvalues: NDArray[np.complex128]
    parameter: str = "v"

    @property
    def real(self) -> NDArray[np.float64]:
        """Real parts, (N, k)."""
        return self.eigenvalues.real

    @property
    def imag(self) -> NDArray[np.float64]:
        """Imaginary parts, (N, k)."""
        return self.eigenvalues.imag


def match_spectra(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.intp], float]:
    """Assign each eigenvalue of ``a`` to a distinct eigenvalue of ``b`` (minimal total distance).

    Parameters
    ----------
    a : (ka,) complex array_like
    b : (kb,) complex array_like, ``kb >= ka``

    Returns
    -------
    index : (ka,) ndarray of int
        ``b[index[i]]`` is matched to ``a[i]``.
    max_error : float
        ``max_i |a[i] - b[index[i]]|``.
    """
    a = np.asarray(a, dtype=complex).ravel()
    b = np.asarray(b, dtype=complex).ravel()
    if b.size < a.size:
        raise LinearSystemError(f"cannot match {a.size} eigenvalues into only {b.size}")
    cost = np.abs(a[:, None] - b[None, :])
    rows, cols = linear_sum_assignment(cost)
    index = np.empty(a.size, dtype=np.intp)
    index[rows] = cols
    err = float(np.max(cost[rows, cols])) if a.size else 0.0
    return index, err


def eigenvalues_vs_parameter(matrix_fn: MatrixFn, values: ArrayLike, *, parameter: str = "v",
                             track: bool = True) -> EigenvalueSweep:
    """Eigenvalues of ``matrix_fn(v)`` for every ``v`` of a grid (Fig. 4.5).

    Parameters
    ----------
    matrix_fn : callable
        ``v -> (k, k)`` array.
    values : (N,) array_like
        The grid, in the order to track.
    parameter : str
        Name used by plots.
    track : bool
        Reorder eigenvalues of each step to continue the branches of the previous step.

    Returns
    -------
    EigenvalueSweep
    """
    vals = as_float_array(values, "values", ndim=1)
    if vals.size == 0:
        raise LinearSystemError("values must hold at least one parameter value")
    rows = []
    prev = None
    from .._util.progress import progress

    for v in progress(vals, "eigenvalues vs parameter", total=vals.size):
        lam = np.linalg.eigvals(_square(matrix_fn(float(v)), f"matrix_fn({v})"))
        if prev is None or not track:
            lam = lam[np.lexsort((lam.imag, lam.real))]
        else:
            idx, _ = match_spectra(prev, lam)
            lam = lam[idx]
        rows.append(lam)
        prev = lam
    eig = np.array(rows)
    return EigenvalueSweep(readonly(vals.copy()), readonly(eig), parameter)


def spectral_abscissa(A: ArrayLike) -> float:
    """``max Re λ(A)``."""
    return float(np.max(np.linalg.eigvals(_square(A, "A")).real))


@dataclass(frozen=True)
class CriticalPoint:
    """A parameter value where the stability or the nature of the spectrum changes.

    Attributes
    ----------
    kind : {"oscillatory", "real", "coalescence"}
        ``"oscillatory"``: a complex pair crosses the imaginary axis (Hopf; the weave speed);
        ``"real"``: a real eigenvalue crosses zero (the capsize speed); ``"coalescence"``: two
        real eigenvalues merge into a complex pair or split back (``v_d``).
    value : float
        The critical parameter value (Brent's method, ``xtol``).
    eigenvalue : complex
        The eigenvalue concerned at ``value`` (upper-half-plane member of a pair).
    direction : str
        ``"stabilizing"``/``"destabilizing"`` for crossings (as the parameter increases),
        ``"real_to_complex"``/``"complex_to_real"`` for coalescences.
    bracket : tuple of float
        Grid interval that contained the change.
    """

    __repr__ = concise_repr

    kind: Literal["oscillatory", "real", "coalescence"]
    value: float
    eigenvalue: complex
    direction: str
    bracket: tuple[float, float]


def _discriminant(lam: NDArray[np.complex128]) -> float:
    d = 1.0 + 0j
    for i in range(lam.size):
        for j in range(i + 1, lam.size):
            d *= (lam[i] - lam[j]) ** 2
    return float(d.real)


def critical_points(matrix_fn: MatrixFn, values: ArrayLike, *, xtol: float = 1e-15,
                    rtol: float = 4 * np.finfo(float).eps, imag_tol: float = 1e-9,
                    coalescences: bool = True) -> tuple[CriticalPoint, ...]:
    """Critical parameter values of ``matrix_fn`` on a grid, refined by Brent's method.

    Parameters
    ----------
    matrix_fn : callable
        ``v -> (k, k)`` array; pass the non-trivial block (see
        [`structural_zeros()`][nhcontrol.analysis.structural_zeros]):
        structurally zero eigenvalues would pin the spectral abscissa at zero.
    values : (N,) array_like
        Increasing grid used for bracketing (sign changes between neighbours).
    xtol, rtol : float
        Tolerances of `scipy.optimize.brentq()`.
    imag_tol : float
        ``|Im λ| <= imag_tol * max(1, |λ|)`` counts as real when classifying.
    coalescences : bool
        Also look for sign changes of the discriminant.

    Returns
    -------
    tuple of CriticalPoint
        Sorted by value.

    Raises
    ------
    LinearSystemError
        If the grid is not strictly increasing or has fewer than two points.
    SolverError
        If Brent's method fails on a bracket.
    """
    grid = as_float_array(values, "values", ndim=1)
    if grid.size < 2 or np.any(np.diff(grid) <= 0):
        raise LinearSystemError("values must be a strictly increasing grid of at least two points")

    def eig(v: float) -> NDArray[np.complex128]:
        return np.linalg.eigvals(_square(matrix_fn(float(v)), f"matrix_fn({v})"))

    def alpha(v: float) -> float:
        return float(np.max(eig(v).real))

    def disc(v: float) -> float:
        return _discriminant(eig(v))

    spectra = [eig(v) for v in grid]
    a = np.array([np.max(s.real) for s in spectra])
    out: list[CriticalPoint] = []

    def root(f, lo, hi) -> float:
        try:
            return float(brentq(f, lo, hi, xtol=xtol, rtol=rtol, maxiter=200))
        except (ValueError, RuntimeError) as exc:
            raise SolverError(f"Brent's method failed on [{lo}, {hi}]: {exc}") from exc

    for i in range(grid.size - 1):
        lo, hi = grid[i], grid[i + 1]
        if a[i] == 0.0 or np.sign(a[i]) != np.sign(a[i + 1]):
            if a[i] == 0.0:
                v = lo
            elif a[i + 1] == 0.0:
                continue
            else:
                v = root(alpha, lo, hi)
            lam = eig(v)
            j = int(np.argmax(lam.real))
            e = complex(lam[j])
            if e.imag < 0:
                e = e.conjugate()
            osc = abs(e.imag) > imag_tol * max(1.0, abs(e))
            direction = "stabilizing" if a[i] > 0 else "destabilizing"
            out.append(CriticalPoint("oscillatory" if osc else "real", v, e, direction, (lo, hi)))
    if coalescences:
        dvals = np.array([_discriminant(s) for s in spectra])
        for i in range(grid.size - 1):
            lo, hi = grid[i], grid[i + 1]
            if dvals[i] == 0.0 or dvals[i + 1] == 0.0 or np.sign(dvals[i]) == np.sign(dvals[i + 1]):
                continue
            v = root(disc, lo, hi)
            nreal_lo = int(np.sum(np.abs(spectra[i].imag) <= imag_tol * np.maximum(1, np.abs(spectra[i]))))
            nreal_hi = int(np.sum(np.abs(spectra[i + 1].imag) <= imag_tol * np.maximum(1, np.abs(spectra[i + 1]))))
            direction = "real_to_complex" if nreal_hi < nreal_lo else "complex_to_real"
            lam = eig(v)
            # the merging pair: the two closest eigenvalues
            best = min(itertools.combinations(range(lam.size), 2),
                       key=lambda ij: abs(lam[ij[0]] - lam[ij[1]]))
            e = complex(0.5 * (lam[best[0]] + lam[best[1]]))
            out.append(CriticalPoint("coalescence", v, complex(e.real, abs(e.imag)), direction,
                                     (lo, hi)))
    out.sort(key=lambda c: c.value)
    return tuple(out)
