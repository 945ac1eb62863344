"""Inverse dynamics: multipliers and actuations from a prescribed motion, Eq. (2.112)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ReferenceMotionError
from nhcontrol._util.validation import RANK_RTOL, as_float_array, check_finite, readonly

from ._eval import ModelEvaluator
from ._linalg import column_rank, format_sv
from nhcontrol._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["InverseDynamicsResult", "inverse_dynamics", "RankDeficiencyWarning",
           "INVERSE_DYNAMICS_TOL"]

INVERSE_DYNAMICS_TOL = 1e-8
"""Default relative tolerance of the admissibility check of Eq. (2.112): ``|A_a X_a - b_a|_inf <= tol *
max(1, |M xdd|_inf, |Q|_inf)`` per sample.
"""


class RankDeficiencyWarning(UserWarning):
    """The multipliers/actuations are not unique (redundant constraints or actuations)."""


@dataclass(frozen=True)
class InverseDynamicsResult:
    """Multipliers and actuations of a prescribed motion (Eq. (2.112)).

    Shapes have a leading ``N`` axis when the motion was given at ``N`` samples and none for a
    single point.

    Attributes
    ----------
    lam : (N, m + l) ndarray
        Lagrange multipliers ``Λ`` (holonomic first, the row order of ``D``). They are the
        constraint reactions with opposite sign: the reaction force is ``-Dᵀ Λ``.
    tau : (N, nτ) ndarray
        Actuations ``τ`` (``nτ = 0`` when no actuation matrix was given).
    residual : (N,) ndarray
        ``|[-Dᵀ, A_τ] [Λ; τ] - (M xdd - Q)|_inf`` per sample: the part of ``M xdd - Q`` that
        neither the constraint reactions nor the actuations can produce.
    scale : (N,) ndarray
        ``max(1, |M xdd|_inf, |Q|_inf)``, the force scale the residual is compared with.
    tol : float
        Relative tolerance of the admissibility test.
    admissible : bool
        ``all(residual <= tol * scale)``.
    rank : (N,) ndarray of int
        Numerical rank of ``A_a = [-Dᵀ, A_τ]`` per sample.
    singular_values : (N, m + l + nτ) ndarray
        Singular values of ``A_a`` per sample (evidence for ``rank``).
    rank_tol : (N,) ndarray
        Rank threshold per sample (``RANK_RTOL * s_max * n``).
    """

    __repr__ = concise_repr

    lam: NDArray[np.float64]
    tau: NDArray[np.float64]
    residual: NDArray[np.float64]
    scale: NDArray[np.float64]
    tol: float
    admissible: bool
    rank: NDArray[np.int_]
    singular_values: NDArray[np.float64]
    rank_tol: NDArray[np.float64]

    @property
    def max_residual(self) -> float:
        """Largest residual over the samples."""
        return float(np.max(self.residual)) if np.size(self.residual) else 0.0


def _actuation_stack(actuation: Any, x: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """Return ``A_τ`` stacked as ``(N, n, nτ)`` from an array or a callable ``A_τ(x)``."""
    N = x.shape[0]
    if callable(actuation):
        mats = [as_float_array(actuation(xi), "actuation(x) (A_τ)", error=ReferenceMotionError)
                for xi in x]
        A = np.stack([a.reshape(n, -1) if a.ndim == 1 else a for a in mats])
    else:
        A = as_float_array(actuation, "actuation (A_τ)", error=ReferenceMotionError)
        if A.ndim == 1:
            A = A.reshape(n, 1) if A.shape[0] == n else A
        if A.ndim == 2:
            A = np.broadcast_to(A, (N, *A.shape))
    if A.ndim != 3 or A.shape[0] != N or A.shape[1] != n:
        raise ReferenceMotionError(f"actuation matrix A_τ (Eq. (2.111)) must have shape (n, nτ) or "
                                   f"(N, n, nτ) with n = {n}, N = {N}, got {A.shape}")
    return check_finite(np.asarray(A, dtype=float), "actuation (A_τ)", error=ReferenceMotionError)


def inverse_dynamics(cm: CompiledModel, x: ArrayLike, xd: ArrayLike, xdd: ArrayLike,
                     u: ArrayLike | None = None,
                     p: ArrayLike | Mapping[str, float] | None = None,
                     actuation: ArrayLike | Callable[[NDArray[np.float64]], ArrayLike] | None = None,
                     *, tol: float = INVERSE_DYNAMICS_TOL, check: bool = True,
                     t: ArrayLike | None = None) -> InverseDynamicsResult:
    r"""Multipliers ``Λ`` (and actuations ``τ``) of a prescribed motion, Eq. (2.112).

    Solves, at every sample, in least squares (batched SVD)

    $$
    \underbrace{\begin{bmatrix} -D^T(x) & A_\tau(x) \end{bmatrix}}_{A_a}
    \underbrace{\begin{bmatrix} \Lambda \\ \tau \end{bmatrix}}_{X_a}
    = \underbrace{M(x, u)\,\ddot x - Q(x, \dot x, u)}_{b_a},
    $$

    which is the dynamic equation (2.111) ``M xdd + Dᵀ Λ = Q + A_τ τ`` solved for the unknown
    forces. The motion is dynamically admissible when the residual ``A_a X_a - b_a`` vanishes.

    Parameters
    ----------
    cm : CompiledModel
        The model (kernels ``M``, ``Q``, ``D``).
    x, xd, xdd : (n,) or (N, n) array_like
        Coordinates, velocities and accelerations of the motion.
    u : (k,) or (N, k) array_like, optional
        Inputs (zeros when omitted).
    p : (np,) array_like or mapping, optional
        Parameters (defaults when omitted).
    actuation : (n, nτ), (N, n, nτ) array_like or callable ``A_τ(x) -> (n, nτ)``, optional
        Projection matrix ``A_τ`` of the actuations ``τ`` (Eq. (2.111)).
    tol : float
        Relative tolerance: sample ``i`` is admissible when
        ``residual[i] <= tol * max(1, |M xdd|_inf, |Q|_inf)``.
    check : bool
        Raise `ReferenceMotionError` when a sample is not admissible (default). With
        ``check=False`` the least-squares solution is returned with its residual.
    t : (N,) array_like, optional
        Times of the samples, only used in messages.

    Returns
    -------
    InverseDynamicsResult

    Raises
    ------
    ReferenceMotionError
        Bad shapes, or (``check=True``) a motion that is not dynamically admissible; the
        message reports the residual, where it occurs and in which coordinate.

    Warns
    -----
    RankDeficiencyWarning
        ``A_a`` is rank deficient (redundant constraints or actuations): the minimum-norm
        solution is returned; the message reports the singular values and the tolerance.

    Notes
    -----
    Thesis Eq. (2.112) (Sect. 2.3.4). ``A_a`` is ``n × (m + l + nτ)``; it is square when the
    system has ``nτ = n - m - l`` actuations, as in the thesis. The Lagrange multipliers are the
    constraint reactions with opposite sign.

    Examples
    --------
    >>> res = inverse_dynamics(cm, x, xd, xdd)          # doctest: +SKIP
    >>> res.lam.shape                                     # doctest: +SKIP
    (200, 8)
    """
    ev = ModelEvaluator(cm, p)
    single = np.ndim(x) == 1
    X = ev.states(x, "x (coordinates)")
    N = X.shape[0]
    XD = ev.states(xd, "xd (velocities)")
    XDD = ev.states(xdd, "xdd (accelerations)")
    if XD.shape[0] != N or XDD.shape[0] != N:
        raise ReferenceMotionError(f"x, xd and xdd must have the same number of samples, got "
                                   f"{X.shape[0]}, {XD.shape[0]}, {XDD.shape[0]}")
    U = ev.input_stack(u, N)
    if not (np.isfinite(tol) and tol > 0):
        raise ReferenceMotionError(f"tol must be a positive number, got {tol!r}")
    n, ml = ev.n, ev.m + ev.l

    M = ev.M(X, U)
    Q = ev.Q(X, XD, U)
    D = ev.D(X, U)
    Mxdd = np.einsum("nij,nj->ni", M, XDD)
    b = Mxdd - Q                                               # b_a of Eq. (2.112)
    if actuation is not None:
        At = _actuation_stack(actuation, X, n)
    else:
        At = np.zeros((N, n, 0))
    ntau = At.shape[2]
    Aa = np.concatenate([-np.transpose(D, (0, 2, 1)), At], axis=2)   # A_a of Eq. (2.112)
    ncol = ml + ntau

    if ncol == 0:
        Xa = np.zeros((N, 0))
        s = np.zeros((N, 0))
        rank = np.zeros(N, dtype=int)
        rtol_arr = np.zeros(N)
    else:
        Uu, s, Vh = np.linalg.svd(Aa, full_matrices=False)     # batched SVD
        rtol_arr = RANK_RTOL * s[:, 0] * max(n, ncol)
        keep = s > rtol_arr[:, None]
        rank = keep.sum(axis=1)
        sinv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
        coef = np.einsum("nji,nj->ni", Uu, b) * sinv
        Xa = np.einsum("nji,nj->ni", Vh, coef)                 # minimum-norm least squares
    r = np.einsum("nij,nj->ni", Aa, Xa) - b
    residual = np.max(np.abs(r), axis=1)
    scale = np.maximum(1.0, np.maximum(np.max(np.abs(Mxdd), axis=1), np.max(np.abs(Q), axis=1)))
    ok = residual <= tol * scale
    times = None if t is None else np.atleast_1d(np.asarray(t, dtype=float))

    def where(i: int) -> str:
        if times is not None and times.shape[0] == N:
            return f"t = {times[i]:.6g}"
        return f"sample {i}" if N > 1 else "the given point"

    if np.any(rank < ncol):
        i = int(np.argmin(rank))
        names = [f"Λ[{c}]" for c in ev.constraints] + [f"τ[{j}]" for j in range(ntau)]
        ev_rank = column_rank(Aa[i], names)
        warnings.warn(
            f"[-Dᵀ, A_τ] of Eq. (2.112) is rank deficient at {where(i)}: rank {int(rank[i])} < "
            f"{ncol} unknowns (singular values {format_sv(s[i])}, tol {rtol_arr[i]:.3g}); "
            f"dependent unknowns {list(ev_rank.redundant)}: the multipliers are not unique, the "
            "minimum-norm solution is returned. Remove redundant constraints or actuations.",
            RankDeficiencyWarning, stacklevel=2)
    if check and not np.all(ok):
        i = int(np.argmax(residual / (tol * scale)))
        j = int(np.argmax(np.abs(r[i])))
        raise ReferenceMotionError(
            f"the motion is not dynamically admissible at {where(i)} "
            f"({int(np.sum(~ok))} of {N} samples fail): the residual of Eq. (2.112) "
            f"|[-Dᵀ, A_τ][Λ; τ] - (M xdd - Q)|_inf = {residual[i]:.3e} exceeds tol·scale = "
            f"{tol:.1e}·{scale[i]:.3g}, largest in the equation of coordinate "
            f"{ev.coordinates[j]!r}. The constraint reactions"
            + (" and the actuations" if ntau else "")
            + " cannot produce M xdd - Q: check that xdd is the acceleration of the motion and the "
            "inputs u, or pass an actuation matrix A_τ (actuation=...), or check=False to get the "
            "least-squares multipliers anyway.")

    def shape(a: NDArray) -> NDArray:
        return readonly(np.array(a[0] if single else a))

    return InverseDynamicsResult(
        lam=shape(Xa[:, :ml]), tau=shape(Xa[:, ml:]), residual=shape(residual),
        scale=shape(scale), tol=float(tol), admissible=bool(np.all(ok)),
        rank=shape(rank), singular_values=shape(s), rank_tol=shape(rtol_arr))
