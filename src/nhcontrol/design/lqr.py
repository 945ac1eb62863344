"""Linear-quadratic regulators: finite-horizon discrete (time-varying) and infinite-horizon LTI.

The finite-horizon regulator is the tool of thesis Ch. 8 for a linearization along a reference
motion that depends on time (the ball-plate circle, Eq. (8.74)): the controller acts on the
deviation ``δx_k = x(t_k) − x_ref(t_k)`` and commands ``u_k = u_ref(t_k) + δu_k`` with
``δu_k = −K_k δx_k``. See ``docs/theory/lqr_mpc.md``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.blas import limit_blas_threads
from .._util.errors import DesignError, DesignTypeError, SolverError
from .._util.memory import check_allocation
from .._util.work import check_iterations
from .._util.fastlinalg import solve as _solve
from .._util.validation import as_float_array, check_finite, readonly
from ._weights import PD_RTOL, check_weights, per_step, system_arrays
from .._util.combinations import format_combination, pbh_directions

__all__ = ["LQRResult", "finite_horizon_lqr", "lqr", "dlqr"]


@dataclass(frozen=True)
class LQRResult:
    """Gains and cost-to-go matrices of a linear-quadratic regulator (immutable).

    Unpacks like python-control's result: ``K, S, E = lqr(sys, Q, R)`` gives the gain, the
    Riccati solution (``S`` is `P`) and the closed-loop eigenvalues (``None`` for a finite
    horizon).

    Attributes
    ----------
    K : (N, k, n) ndarray, or (k, n) for an infinite horizon
        Feedback gains, ``u_k = −K_k x_k``.
    P : (N+1, n, n) ndarray, or (n, n) for an infinite horizon
        Cost-to-go matrices; ``P[0]`` gives the optimal cost ``x0ᵀ P0 x0`` and ``P[N] = Qf``.
    horizon : int or None
        Number of steps ``N``; ``None`` for an infinite horizon.
    dt : float or None
        Sampling time (``0.0`` for a continuous-time infinite-horizon design, ``None`` if the
        discrete system did not carry one).
    riccati_residual : (N,) ndarray, or (1,) for an infinite horizon
        Relative residual ``‖P_k − Ric(P_{k+1})‖ / max(1, ‖P_k‖)`` of each step of the
        recursion (Frobenius norms), evaluated with the un-stabilised formula; it measures
        the round-off of the Joseph form. For an infinite horizon: the residual of the
        algebraic Riccati equation relative to ``max(1, ‖P‖)``. A property: for the
        finite-horizon recursion it is computed on first access (it costs as much as the
        recursion itself), then kept.
    min_eig_Rbar : (N,) ndarray, or (1,) for an infinite horizon
        Smallest eigenvalue of ``R̄_k = R_k + B_kᵀ P_{k+1} B_k`` (the matrix that is inverted).
    E : (n,) complex ndarray or None
        Closed-loop eigenvalues for an infinite-horizon design, ``None`` otherwise.
    method : str
        ``"riccati-recursion"``, ``"care"`` (``control.lqr``) or ``"dare"`` (``control.dlqr``).
    """

    K: NDArray[np.float64]
    P: NDArray[np.float64]
    horizon: int | None
    dt: float | None
    min_eig_Rbar: NDArray[np.float64]
    E: NDArray[np.complex128] | None
    method: str
    _residual: Any = field(default=None, repr=False, compare=False)
    """the residuals, or a picklable callable that computes them (evaluated once, on access)"""
    states: tuple[str, ...] = field(default=(), compare=False)
    """state names of the design (an LTI ``StateSpace``'s labels, integrators ``z[i]`` appended)"""
    inputs: tuple[str, ...] = field(default=(), compare=False)
    """input names of the design (empty when the system did not name them)"""

    @property
    def riccati_residual(self) -> NDArray[np.float64]:
        """Relative Riccati residual of each step (see the class docstring)."""
        if callable(self._residual):
            object.__setattr__(self, "_residual", readonly(self._residual()))
        return self._residual

    @property
    def S(self) -> NDArray[np.float64]:
        """Riccati solution (python-control's name for it): the same array as `P`."""
        return self.P

    def __iter__(self) -> Iterator[Any]:
        """``K, S, E = result``: gain, Riccati solution and closed-loop eigenvalues, as
        ``control.lqr`` returns them."""
        return iter((self.K, self.P, self.E))

    def __len__(self) -> int:
        return 3

    def __getitem__(self, i: int) -> Any:
        """``result[0]`` is ``K`` (``control.lqr(...)[0]`` habit), ``[1]`` the Riccati solution, ``[2]`` ``E``."""
        return (self.K, self.P, self.E)[i]

    def __repr__(self) -> str:
        kind = (f"horizon={self.horizon}" if self.horizon is not None else
                ("continuous" if self.dt == 0.0 else f"discrete, dt={self.dt}"))
        extra = ""
        if self.E is not None and self.E.size:
            extra = (f", max Re(E)={float(np.max(self.E.real)):.4g}" if self.method == "care"
                     else f", max |E|={float(np.max(np.abs(self.E))):.4g}")
        return (f"LQRResult({self.method}, {kind}, nstates={self.nstates}, ninputs={self.ninputs}, "
                f"K {self.K.shape}{extra})")

    @property
    def nstates(self) -> int:
        """Number of states ``n``."""
        return int(self.P.shape[-1])

    @property
    def ninputs(self) -> int:
        """Number of inputs ``k``."""
        return int(self.K.shape[-2])

    def gain(self, step: int = 0) -> NDArray[np.float64]:
        """Return the gain ``K_step`` (k, n); an infinite-horizon gain for any step."""
        if self.horizon is None:
            return self.K
        if not 0 <= step < self.horizon:
            raise DesignError(f"step must lie in [0, {self.horizon - 1}] for a horizon of "
                              f"N = {self.horizon} steps, got {step}")
        return self.K[step]

    def control(self, step: int, x: ArrayLike) -> NDArray[np.float64]:
        """Return the feedback ``u = −K_step x`` (k,) for a (deviation) state ``x`` (n,)."""
        xv = as_float_array(x, "x", shape=(self.nstates,), error=DesignError)
        return -self.gain(step) @ xv

    def export_c(self, directory: Any, name: str = "lqr", *, force: bool = False) -> dict:
        """Write the gain tables as standalone C99 (``<name>.h``, ``<name>.c``): read-only tables
        and ``<name>_control(step, dx, u)`` computing ``u = −K_step dx`` without allocation.

        See [`nhcontrol.interop.export_lqr_c()`][nhcontrol.interop.export_lqr_c] (``force``:
        overwrite files in ``directory`` that nhcontrol did not write).

        Returns
        -------
        dict
            ``{"files", "horizon", "nstates", "ninputs", "table_bytes"}``.
        """
        from ..interop.c_export import export_lqr_c

        return export_lqr_c(self, directory, name, force=force)

    def cost(self, x0: ArrayLike) -> float:
        """Optimal cost ``x0ᵀ P0 x0`` from the (deviation) state ``x0`` (n,)."""
        xv = as_float_array(x0, "x0", shape=(self.nstates,), error=DesignError)
        P0 = self.P if self.horizon is None else self.P[0]
        return float(xv @ P0 @ xv)




def _riccati_rhs(A: NDArray, B: NDArray, Q: NDArray, R: NDArray, S: NDArray,
                 P: NDArray) -> NDArray:
    """Plain (not Joseph) right-hand side ``Q + AᵀPA − (AᵀPB + S)(R + BᵀPB)⁻¹(BᵀPA + Sᵀ)``."""
    Rbar = R + B.T @ P @ B
    N_ = A.T @ P @ B + S
    return Q + A.T @ P @ A - N_ @ np.linalg.solve(Rbar, N_.T)


def _from_statespace(dsys: Any, N: int | None, what: str) -> Any:
    import sys

    from ..systems import DiscreteLTV

    # a StateSpace exists only once python-control was imported (not imported for nothing here)
    control = sys.modules.get("control")
    if control is not None and isinstance(dsys, control.StateSpace):
        if N is not None and not isinstance(N, bool) and isinstance(N, (int, np.integer)):
            check_iterations(N, f"{what}(N={N}): {N} steps of the recursion", error=DesignError,
                             hint="use a shorter horizon")
        return DiscreteLTV.from_statespace(dsys, N, error=DesignError, what=what)
    if N is not None:
        raise DesignError(f"{what}: N= is the horizon of a discrete control.StateSpace; a "
                          f"{type(dsys).__name__} carries its own horizon (omit N)")
    return dsys


@limit_blas_threads(lambda dsys, Q, R, Qf, **kwargs: np.shape(Qf)[-1])   # one BLAS thread for n >= 64
def finite_horizon_lqr(dsys: Any, Q: ArrayLike, R: ArrayLike, Qf: ArrayLike, *,
                       S: ArrayLike | None = None, N: int | None = None) -> LQRResult:
    r"""Finite-horizon discrete LQR by the backward Riccati recursion (time-varying gains).

    Minimises

    $$
    J = x_N^T Q_f x_N + \sum_{k=0}^{N-1} x_k^T Q_k x_k + u_k^T R_k u_k + 2 x_k^T S_k u_k
    $$

    subject to $x_{k+1} = A_k x_k + B_k u_k$ (the zero-order-hold discretisation of the
    linearized system, e.g. of Eq. (8.74) along the ball-plate circle).

    Parameters
    ----------
    dsys : DiscreteLTV, (Ad, Bd) or discrete control.StateSpace
        Discrete system with ``Ad`` (N, n, n), ``Bd`` (N, n, k); the horizon is ``N``. A
        discrete python-control ``StateSpace`` is held constant over a horizon of ``N`` steps
        (give ``N=``); a continuous one is rejected ("discretize first").
    Q : (n, n), (N, n, n), (n,) or scalar array_like
        State weights, symmetric positive semi-definite (a 1-D array of length ``n`` is the
        diagonal, a scalar that multiple of the identity).
    R : (k, k), (N, k, k), (k,) or scalar array_like
        Input weights, symmetric positive definite (same shorthands).
    Qf : (n, n), (n,) or scalar array_like
        Terminal weight, symmetric positive semi-definite.
    S : (n, k) or (N, n, k) array_like, optional
        Cross weights; ``[[Q_k, S_k], [S_kᵀ, R_k]]`` must be positive semi-definite. (Here
        ``N`` is the horizon, so the cross weight keeps the name ``S``; in `lqr()` it is ``N``
        as in python-control.)
    N : int, optional
        Horizon, required (only) for a ``control.StateSpace``.

    Returns
    -------
    LQRResult
        ``K`` (N, k, n), ``P`` (N+1, n, n), ``u_k = −K_k x_k`` and optimal cost ``x0ᵀ P_0 x0``;
        unpacks as ``K, P, E`` with ``E = None``.

    Raises
    ------
    DesignError
        Bad shapes, non-symmetric or indefinite weights, non-finite matrices.
    SolverError
        ``R_k + B_kᵀ P_{k+1} B_k`` loses positive definiteness during the recursion.

    Notes
    -----
    With $\bar R_k = R_k + B_k^T P_{k+1} B_k$, the recursion from $P_N = Q_f$ is

    $$
    \begin{aligned}
    K_k &= \bar R_k^{-1} (B_k^T P_{k+1} A_k + S_k^T), \\
    P_k &= (A_k - B_k K_k)^T P_{k+1} (A_k - B_k K_k) + K_k^T R_k K_k
           + Q_k - S_k K_k - K_k^T S_k^T ,
    \end{aligned}
    $$

    the Joseph (stabilised) form of
    $P_k = Q_k + A_k^T P_{k+1} A_k - (A_k^T P_{k+1} B_k + S_k) K_k$, followed by
    symmetrisation $P_k \leftarrow (P_k + P_k^T)/2$. The Joseph form is a sum of PSD terms
    when $S = 0$, so round-off cannot drive $P_k$ indefinite.

    Examples
    --------
    >>> import numpy as np
    >>> from nhcontrol.design import finite_horizon_lqr
    >>> A = np.array([[1.0, 0.1], [0.0, 1.0]]); B = np.array([[0.005], [0.1]])
    >>> res = finite_horizon_lqr((np.tile(A, (50, 1, 1)), np.tile(B, (50, 1, 1))),
    ...                          np.eye(2), np.eye(1), np.eye(2))
    >>> res.K.shape, res.P.shape
    ((50, 1, 2), (51, 2, 2))
    """
    dsys = _from_statespace(dsys, N, "finite_horizon_lqr")
    Ad, Bd, dt = system_arrays(dsys)
    N, n, k = Bd.shape
    check_iterations(N, f"finite_horizon_lqr over N = {N} steps", error=DesignError,
                     hint="use a shorter horizon or a coarser sampling time")
    # gains K, costs P, Rbar and the per-step weights (Q, R broadcast to every step when constant)
    check_allocation(8.0 * N * (k * n + 3 * n * n + 3 * k * k),
                     f"finite_horizon_lqr over N = {N} steps with n = {n} states and k = {k} inputs",
                     error=DesignError, hint="use a shorter horizon or a coarser sampling time")
    Qs = per_step(Q, "Q", N, n, n)
    Rs = per_step(R, "R", N, k, k)
    Qf_ = _weight(Qf, "Qf", n)
    check_finite(Qf_, "Qf", error=DesignError)
    Ss = None if S is None else per_step(S, "S", N, n, k)
    check_weights(Qs, Rs, Ss, Qf_)

    K = np.empty((N, k, n))
    P = np.empty((N + 1, n, n))
    Rbars = np.empty((N, k, k))
    P[N] = 0.5 * (Qf_ + Qf_.T)
    # The loop does only the arithmetic of the recursion (Joseph form, the operations in the
    # order of the docstring's formulas); the checks run afterwards on the whole stacks: a
    # non-finite or indefinite step poisons every earlier one (NaN/inf propagate), so the first
    # bad step in recursion order is the largest index that fails.
    Q_const, R_const = Qs.strides[0] == 0, Rs.strides[0] == 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for i in range(N - 1, -1, -1):
            A, B, Pn = Ad[i], Bd[i], P[i + 1]
            Ri = Rs[0] if R_const else Rs[i]
            BtP = B.T @ Pn
            Rbar = Ri + BtP @ B
            Rbar = np.add(Rbar, Rbar.T, out=Rbars[i])
            Rbar *= 0.5
            rhs = BtP @ A if Ss is None else BtP @ A + Ss[i].T
            Ki = _solve(Rbar, rhs)  # a singular R̄ gives inf/NaN: checked below
            Acl = A - B @ Ki
            Pi = Acl.T @ Pn @ Acl
            Pi += Ki.T @ Ri @ Ki
            Pi += Qs[0] if Q_const else Qs[i]
            if Ss is not None:
                Pi = Pi - Ss[i] @ Ki - Ki.T @ Ss[i].T
            K[i] = Ki
            Pi = np.add(Pi, Pi.T, out=P[i])
            Pi *= 0.5
        mineig = _check_recursion(Rbars, P)
    resid = partial(_recursion_residuals, Ad, Bd, Qs, Rs, Ss, P)
    return LQRResult(K=readonly(K), P=readonly(P), horizon=N, dt=dt,
                     min_eig_Rbar=readonly(mineig), E=None, method="riccati-recursion",
                     _residual=resid)


def _check_recursion(Rbars: NDArray[np.float64], P: NDArray[np.float64]) -> NDArray[np.float64]:
    """Raise `SolverError` at the first bad step (in recursion order, from ``N − 1``
    down) of a finished recursion; return the smallest eigenvalues of the ``R̄_k``."""
    N = Rbars.shape[0]
    fin_R = np.isfinite(Rbars).all(axis=(1, 2))
    mineig = np.full(N, np.nan)
    lam = np.linalg.eigvalsh(np.where(fin_R[:, None, None], Rbars, 0.0)) if N else np.empty((0, 0))
    if lam.size:
        mineig = np.where(fin_R, lam[:, 0], np.nan)
    with np.errstate(over="ignore"):
        normP = np.sqrt(np.sum(np.square(P[:N]), axis=(1, 2)))
    fin_P = np.isfinite(P[:N]).all(axis=(1, 2))
    for i in range(N - 1, -1, -1):
        if not fin_R[i]:
            raise SolverError(f"the Riccati recursion overflowed (non-finite R + BᵀPB) at step "
                              f"{i}; the system blows up over the horizon: shorten it or rescale")
        scale = abs(float(lam[i, -1])) if lam.size else 0.0     # relative to R̄'s own scale
        if lam.size and lam[i, 0] <= PD_RTOL * scale:
            raise SolverError(
                f"R + BᵀPB lost positive definiteness at step {i} of the Riccati recursion "
                f"(smallest eigenvalue {lam[i, 0]:.3g}, tolerance {PD_RTOL * scale:.3g}); "
                "increase R or check Bd for blow-up")
        if not fin_P[i]:
            raise SolverError(f"the Riccati recursion overflowed (non-finite P) at step {i}; "
                              "the system blows up over the horizon: shorten it or rescale")
        if not np.isfinite(normP[i]):
            raise SolverError(f"the Riccati recursion overflowed (‖P‖ not representable) at step "
                              f"{i}; the system blows up over the horizon: shorten it or rescale")
    return mineig


def _recursion_residuals(Ad: NDArray, Bd: NDArray, Qs: NDArray, Rs: NDArray,
                         Ss: NDArray | None, P: NDArray) -> NDArray[np.float64]:
    """``‖P_k − Ric(P_{k+1})‖_F / max(1, ‖P_k‖_F)`` per step, with the plain formula."""
    N, n, k = Bd.shape
    Sz = np.zeros((N, n, k)) if Ss is None else Ss
    resid = np.empty(N)
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(N):
            plain = _riccati_rhs(Ad[i], Bd[i], Qs[i], Rs[i], Sz[i], P[i + 1])
            resid[i] = np.linalg.norm(P[i] - plain) / max(1.0, float(np.linalg.norm(P[i])))
    return resid


PBH_RTOL = 1e-9
"""Relative tolerance of the PBH rank test in `_unstabilisable_report()`."""


def _labels(sys: Any, n: int) -> list[str]:
    labels = list(getattr(sys, "state_labels", []) or [])
    return labels if len(labels) == n else [f"x[{i}]" for i in range(n)]


def _boundary_mode_reports(A: NDArray[np.float64], B: NDArray[np.float64], Qe: NDArray[np.float64],
                           discrete: bool, names: list[str], order: list[str] | None = None
                           ) -> tuple[list[str], list[str]]:
    """The modes that make the algebraic Riccati equation lack a stabilising solution.

    A stabilising solution exists if and only if ``(A, B)`` is stabilisable and ``(Qe, A)``
    has no unobservable mode on the stability boundary, with ``Qe = Q − S R⁻¹ Sᵀ`` the
    effective state weight. Both are decided here with the Popov–Belevitch–Hautus test on the
    eigenvalues of ``A``, each with its smallest singular value and the tolerance
    ``PBH_RTOL × max(1, ‖[A, B]‖₂)`` (resp. ``‖[A; Qe]‖₂``), so that the outcome does not
    depend on how a particular slycot or SciPy release treats such a pair.

    Returns
    -------
    (unstabilisable, unobservable_on_boundary) : lists of str
        One sentence per failing mode: the eigenvalue, the singular value and the states that
        carry it (the largest entries of its eigenvector).
    """
    n = A.shape[0]
    lam, V = np.linalg.eig(A)
    scale_b = max(1.0, float(np.linalg.norm(np.hstack([A, B]), 2)))
    # Q's overall size does not matter for detectability: compare its shape with A's size.
    nq = float(np.linalg.norm(Qe, 2))
    Qe = Qe * (max(1.0, float(np.linalg.norm(A, 2))) / nq) if nq > 0 else Qe
    scale_q = max(1.0, float(np.linalg.norm(np.vstack([A, Qe]), 2)))
    btol = 1e-9 * max(1.0, float(np.max(np.abs(lam)))) if lam.size else 1e-9

    def carried(i: int) -> list[str]:
        v = np.abs(V[:, i])
        return [names[j] for j in np.argsort(-v) if v[j] > 0.1 * v.max()][:6]

    bad_b: list[str] = []
    bad_q: list[str] = []
    # eigenvalues that agree to round-off are one mode (a repeated or defective eigenvalue is
    # split by round-off); the PBH test of one of them finds all its directions
    ctol = 1e-7 * max(1.0, float(np.max(np.abs(lam)))) if lam.size else 1e-7
    seen: list[complex] = []
    for i, li in enumerate(lam):
        li = complex(li)
        if abs(li.real) <= ctol:
            li = complex(0.0, li.imag)
        if abs(li.imag) <= ctol:
            li = complex(li.real, 0.0)
        if li.imag < 0 or any(abs(li - s0) <= ctol for s0 in seen):   # one report per pair
            continue
        seen.append(li)
        outside = (abs(li) >= 1.0 - btol) if discrete else (li.real >= -btol)
        if not outside:
            continue
        lam_i = li.real if li.imag == 0 else li
        M = np.hstack([A - lam_i * np.eye(n), B])
        sv = np.linalg.svd(M, compute_uv=False)
        if sv[-1] <= PBH_RTOL * scale_b:
            R, _ = pbh_directions(A, B, lam_i, names, tol=PBH_RTOL * scale_b, order=order)
            combos = [format_combination(r, names, first=_pivot(r, names, order)) for r in R]
            who = [names[j] for j in np.flatnonzero(np.any(np.abs(R) > 0, axis=0))]
            rank = int(np.sum(sv > PBH_RTOL * scale_b))
            bad_b.append(f"eigenvalue {complex(np.round(li, 9))}: rank [A - λI, B] = {rank} < {n} "
                         f"(smallest singular values {np.array2string(sv[rank:], precision=1)} <= "
                         f"tolerance {PBH_RTOL * scale_b:.1e}), {len(combos)} direction(s) no input "
                         f"moves: {'; '.join(combos)} (carried by {who})")
        on_boundary = (abs(abs(li) - 1.0) <= btol) if discrete else (abs(li.real) <= btol)
        if on_boundary:
            sq = np.linalg.svd(np.vstack([A - lam_i * np.eye(n), Qe]), compute_uv=False)
            if sq[-1] <= PBH_RTOL * scale_q:
                bad_q.append(f"eigenvalue {complex(np.round(li, 9))} (smallest singular value of "
                             f"[A - λI; Q] {sq[-1]:.1e} <= tolerance {PBH_RTOL * scale_q:.1e}) carried by "
                             f"{carried(i)}")
    return bad_b, bad_q


def _pivot(r: NDArray[np.float64], names: list[str], order: list[str] | None) -> int | None:
    """The pivot of an echelon row: its first coefficient 1 in the pivot order."""
    idx = [names.index(o) for o in (order or [])] + list(range(len(names)))
    return next((j for j in idx if abs(r[j] - 1.0) <= 1e-12), None)


def _unstabilisable_report(A: NDArray[np.float64], B: NDArray[np.float64], discrete: bool,
                           names: list[str], Qe: NDArray[np.float64] | None = None,
                           order: list[str] | None = None) -> str:
    """Name the modes that fail the PBH stabilisability test and the states that carry them.

    A mode ``λ`` of ``A`` with ``Re λ >= 0`` (``|λ| >= 1`` in discrete time) is unstabilisable
    when ``rank [A - λI, B] < n`` (Popov-Belevitch-Hautus); the states that carry it are the
    largest entries of its eigenvector. A mode on the stability boundary that the state weight
    does not see (``rank [A - λI; Q] < n``) also leaves the Riccati equation without a
    stabilising solution.
    """
    n = A.shape[0]
    bad, badq = _boundary_mode_reports(A, B, np.eye(n) if Qe is None else Qe, discrete, names, order)
    boundary = "|λ| >= 1" if discrete else "Re λ >= 0"
    if bad:
        return (f"(A, B) is not stabilisable: {len(bad)} mode(s) with {boundary} cannot be moved by the "
                f"inputs: " + " | ".join(bad) + ". Design on the controllable part: "
                "nhcontrol.analysis.kalman_decomposition(sys).controllable_subsystem() names it by "
                "the states (full_gain() maps its gain back); or remove the states that carry these "
                "directions (cyclic coordinates and spurious directions of a linearization are "
                "typical): for a linearization lin.to_statespace(states=\"reduced\") (or a list of "
                "state names), otherwise control.ss(A[keep][:, keep], B[keep], ...)")
    if badq:
        return (f"the state weight Q does not see {len(badq)} mode(s) on the stability boundary "
                f"({'|λ| = 1' if discrete else 'Re λ = 0'}): " + "; ".join(badq) + ". Weight the states "
                "that carry them (a positive definite Q always works)")
    return (f"Every mode with {boundary} passes the PBH test (tolerance {PBH_RTOL:g} x scale) and Q "
            "sees every mode on the stability boundary")


def _weight(W: ArrayLike, name: str, n: int) -> NDArray[np.float64]:
    """A weight as an (n, n) matrix: a scalar is that multiple of the identity, a 1-D array of
    length ``n`` the diagonal (python-control accepts a scalar for a 1 x 1 weight)."""
    arr = as_float_array(W, name, error=DesignError)
    if arr.ndim == 0:
        arr = float(arr) * np.eye(n)
    elif arr.ndim == 1 and arr.shape[0] == n:
        arr = np.diag(arr)
    elif arr.ndim != 2 or arr.shape != (n, n):
        raise DesignError(f"{name} must have shape ({n}, {n}) (or be a diagonal of length {n}, or a "
                          f"scalar times the identity), got shape {arr.shape}")
    return arr


def _cross_weight(N: ArrayLike | None, S: ArrayLike | None, n: int, k: int, stacklevel: int = 3
                  ) -> NDArray[np.float64] | None:
    """The cross weight ``N`` (n, k), with the deprecated keyword ``S`` still accepted."""
    if S is not None:
        if N is not None:
            raise DesignError("give the cross weight once: N= (python-control's name); S= is its "
                              "deprecated old name")
        warnings.warn("lqr(..., S=...) is deprecated: the cross weight is called N, as in "
                      "control.lqr (S is the Riccati solution in K, S, E = lqr(...)); pass N=",
                      DeprecationWarning, stacklevel=stacklevel)
        N = S
    if N is None:
        return None
    arr = as_float_array(N, "N", error=DesignError)
    if arr.ndim == 0 and n == k == 1:
        arr = arr.reshape(1, 1)
    if arr.shape != (n, k):
        raise DesignError(f"the cross weight N must have shape (n, k) = ({n}, {k}), got {arr.shape}")
    return arr


def lqr(*args: Any, integral_action: ArrayLike | None = None, S: ArrayLike | None = None,
        **kwargs: Any) -> LQRResult:
    r"""Infinite-horizon LQR of an LTI system through python-control (slycot).

    Called as python-control's ``control.lqr``:

    * ``K, S, E = lqr(sys, Q, R)`` or ``lqr(sys, Q, R, N)`` with an LTI ``control.StateSpace``
      (a discrete one is designed as by `dlqr()`);
    * ``K, S, E = lqr(A, B, Q, R)`` or ``lqr(A, B, Q, R, N)`` with plain matrices (continuous
      time).

    It unpacks as ``control.lqr``'s result (the gain, the Riccati solution and the closed-loop
    eigenvalues) and is also an `LQRResult` with the Riccati residual and the conditioning of
    the design.

    Parameters
    ----------
    *args
        ``sys, Q, R[, N]`` or ``A, B, Q, R[, N]``, positional as in python-control (each may
        also be given by keyword):

        * ``sys`` (control.StateSpace or LinearizationResult): continuous (``dt == 0``) or
          discrete (``dt > 0``; ``dt=True`` counts as discrete with unspecified period) LTI
          system with ``n`` states and ``k`` inputs; a linearization about a steady reference
          is used through its ``to_statespace()`` (and a refusal names the directions pivoted
          on its admissible dependent coordinates). Or, instead of ``sys``, the two matrices
          ``A`` (n, n) and ``B`` (n, k).
        * ``Q`` ((n, n), (n,) or scalar array_like): state weight, symmetric positive
          semi-definite (a 1-D array is the diagonal, a scalar that multiple of the identity);
          ``(n + p, n + p)`` with ``integral_action``.
        * ``R`` ((k, k), (k,) or scalar array_like): input weight, symmetric positive definite
          (same shorthands).
        * ``N`` ((n, k) array_like, optional): cross weight, the term ``2 xᵀ N u`` of the cost
          (python-control's ``N``).
    integral_action : (p, n) array_like, optional
        python-control's ``integral_action``: the matrix ``C`` of the integrated signals. The
        system is augmented with ``p`` integrator states ``ż = C x`` (continuous) or
        ``z[k+1] = z[k] + C x[k]`` (discrete), as ``control.lqr``/``control.dlqr`` do; ``Q``
        then weights ``[x; z]`` and the gain ``K`` is ``(k, n + p)`` (the form
        ``control.create_statefbk_iosystem(sys, K, integral_action=C)`` takes).
    S : (n, k) array_like, optional
        Deprecated name of ``N`` (a `DeprecationWarning`); python-control's ``S`` is the
        Riccati solution.
    **kwargs
        ``sys``, ``A``, ``B``, ``Q``, ``R``, ``N`` by keyword, and ``method`` ({"slycot",
        "scipy"}, optional):
        python-control's Riccati solver (default: slycot when installed, else scipy).

    Returns
    -------
    LQRResult
        ``K`` (k, n), ``P`` = ``S`` (n, n) (solution of the CARE / DARE), ``E`` the closed-loop
        eigenvalues, ``horizon=None``; ``u = −K x``. Unpacks as ``K, S, E``.

    Raises
    ------
    DesignError
        Bad shapes, indefinite weights, or no stabilising solution (``(A, B)`` not
        stabilisable: every direction the PBH test finds is named as a combination of the
        states; python-control's message is included when its solver fails).
    DesignTypeError
        Neither an LTI ``control.StateSpace`` nor matrices ``A, B``.

    Notes
    -----
    Continuous: $A^T S + S A - (S B + N) R^{-1} (B^T S + N^T) + Q = 0$,
    $K = R^{-1}(B^T S + N^T)$ (``control.lqr``). Discrete:
    $S = A^T S A - (A^T S B + N)(R + B^T S B)^{-1}(B^T S A + N^T) + Q$,
    $K = (R + B^T S B)^{-1}(B^T S A + N^T)$ (``control.dlqr``).

    Examples
    --------
    >>> import control, numpy as np
    >>> from nhcontrol.design import lqr
    >>> sys = control.ss([[0.0, 1.0], [0.0, 0.0]], [[0.0], [1.0]], np.eye(2), 0)
    >>> K, S, E = lqr(sys, [1.0, 1.0], 1.0)
    >>> np.round(K, 6)
    array([[1.      , 1.732051]])
    >>> K2, _, _ = lqr(sys.A, sys.B, np.eye(2), 1.0)          # plain matrices
    >>> bool(np.allclose(K2, K))
    True
    """
    sys, Q, R, N = _parse_lqr_args(args, kwargs, "lqr", discrete=False)
    return _lqr(sys, Q, R, N, S, discrete_only=False, integral_action=integral_action,
                method=_method(kwargs))


def dlqr(*args: Any, integral_action: ArrayLike | None = None, S: ArrayLike | None = None,
         **kwargs: Any) -> LQRResult:
    r"""Infinite-horizon LQR of a discrete LTI system (python-control's ``dlqr``).

    The same as [`lqr()`][nhcontrol.design.lqr.lqr] for a discrete ``control.StateSpace``
    (``dt > 0`` or ``dt=True``): ``dlqr(dsys, Q, R[, N])`` or, with plain matrices,
    ``dlqr(A, B, Q, R[, N])`` (discrete time, unspecified period). A continuous system is
    refused (discretize it first with ``control.c2d(sys, dt)`` or
    [`nhcontrol.systems.discretize()`][nhcontrol.systems.discretize]). ``K, S, E = dlqr(dsys,
    Q, R)`` with ``S`` the DARE solution and ``E`` the closed-loop eigenvalues (inside the unit
    circle). ``integral_action=C`` augments with ``z[k+1] = z[k] + C x[k]``, as
    ``control.dlqr`` does.

    Examples
    --------
    >>> import control, numpy as np
    >>> from nhcontrol.design import dlqr
    >>> dsys = control.ss([[1.0, 0.1], [0.0, 1.0]], [[0.005], [0.1]], np.eye(2), 0, dt=0.1)
    >>> K, S, E = dlqr(dsys, np.eye(2), 1.0)
    >>> bool(np.all(np.abs(E) < 1))
    True
    >>> K2, _, _ = dlqr(dsys.A, dsys.B, np.eye(2), 1.0)       # plain matrices
    >>> bool(np.allclose(K2, K))
    True
    """
    sys, Q, R, N = _parse_lqr_args(args, kwargs, "dlqr", discrete=True)
    return _lqr(sys, Q, R, N, S, discrete_only=True, integral_action=integral_action,
                method=_method(kwargs))


def _parse_lqr_args(args: tuple, kwargs: dict, fname: str, *, discrete: bool
                    ) -> tuple[Any, Any, Any, Any]:
    """``(sys, Q, R, N)`` from python-control's two call forms ``(sys, Q, R[, N])`` and
    ``(A, B, Q, R[, N])`` (keywords ``sys, Q, R, N`` accepted too)."""
    import control

    kw = dict(kwargs)
    unknown = sorted(set(kw) - {"sys", "A", "B", "Q", "R", "N", "method"})
    if unknown:
        raise DesignTypeError(f"{fname}() got unexpected keyword(s) {unknown}; it takes "
                              f"{fname}(sys, Q, R[, N]) or {fname}(A, B, Q, R[, N]) and "
                              "integral_action=")
    if "sys" in kw:
        args = (kw.pop("sys"),) + tuple(args)
    elif "A" in kw or "B" in kw:
        args = (kw.pop("A", None), kw.pop("B", None)) + tuple(args)
    first = args[0] if args else None
    if isinstance(first, control.StateSpace) or (hasattr(first, "to_statespace")
                                                 and hasattr(first, "partition")):
        names = ("sys", "Q", "R", "N")
    elif first is not None and not isinstance(first, control.InputOutputSystem) and (
            len(args) >= 4 or ("Q" in kw and len(args) >= 2)) and _is_matrix_like(first):
        names = ("A", "B", "Q", "R", "N")
    else:
        got = type(first).__name__ if args else "nothing"
        raise DesignTypeError(
            f"sys must be a control.StateSpace (LTI), got {got}; {fname}() is called as "
            f"{fname}(sys, Q, R[, N]) or with plain matrices {fname}(A, B, Q, R[, N]) (as "
            f"control.{fname}); for a time-varying system discretize it and use finite_horizon_lqr")
    if len(args) > len(names):
        raise DesignTypeError(f"{fname}() takes at most {len(names)} positional arguments "
                              f"{names}, got {len(args)}")
    vals = dict(zip(names, args))
    for key in names:
        if key in kw:
            if key in vals:
                raise DesignTypeError(f"{fname}() got {key} twice (positional and keyword)")
            vals[key] = kw.pop(key)
    missing = [key for key in names[:-1] if vals.get(key) is None]
    if missing:
        raise DesignTypeError(f"{fname}() is missing {missing}: call {fname}(sys, Q, R[, N]) or "
                              f"{fname}(A, B, Q, R[, N])")
    if names[0] == "A":
        A = np.atleast_2d(as_float_array(vals["A"], "A", error=DesignError))   # ndmin=2, as control.lqr
        B = as_float_array(vals["B"], "B", error=DesignError)
        B = B.reshape(-1, 1) if B.ndim == 1 and B.size == A.shape[0] else np.atleast_2d(B)
        if A.ndim != 2 or A.shape[0] != A.shape[1] or B.ndim != 2 or B.shape[0] != A.shape[0]:
            raise DesignError(f"A must be square (n, n) and B (n, k) with the same n, got A "
                              f"{A.shape} and B {B.shape}")
        n = A.shape[0]
        sys = control.ss(A, B, np.eye(n), np.zeros((n, B.shape[1])), True if discrete else 0)
    else:
        sys = vals["sys"]
    return sys, vals["Q"], vals["R"], vals.get("N")


def _method(kwargs: dict) -> str | None:
    """python-control's ``method=`` (``"slycot"`` or ``"scipy"``; default: slycot, else scipy)."""
    m = kwargs.get("method")
    if m not in (None, "slycot", "scipy"):
        raise DesignError(f"method must be 'slycot', 'scipy' or None (python-control's Riccati "
                          f"solvers), got {m!r}")
    return m


def _is_matrix_like(obj: Any) -> bool:
    try:
        return np.asarray(obj).dtype.kind in "biuf" and np.ndim(obj) in (0, 1, 2)
    except (TypeError, ValueError):
        return False


def _augment_integral(A: NDArray[np.float64], B: NDArray[np.float64], C: Any, discrete: bool,
                      names: list[str]) -> tuple[NDArray, NDArray, list[str]]:
    """python-control's integral augmentation ``[[A, 0], [C, 0]]`` (continuous) or
    ``[[A, 0], [C, I]]`` (discrete), ``[B; 0]``; the integrators are named ``z[i]``."""
    n, k = B.shape
    Ci = as_float_array(C, "integral_action", error=DesignError)
    if Ci.ndim == 1:
        Ci = Ci.reshape(1, -1)
    if Ci.ndim != 2 or Ci.shape[1] != n:
        raise DesignError(f"integral_action must be a (p, n) = (p, {n}) matrix C of the integrated "
                          f"signals C x (python-control's integral_action), got shape {Ci.shape}")
    check_finite(Ci, "integral_action", error=DesignError)
    p = Ci.shape[0]
    Aa = np.block([[A, np.zeros((n, p))], [Ci, np.eye(p) if discrete else np.zeros((p, p))]])
    Ba = np.vstack([B, np.zeros((p, k))])
    return Aa, Ba, list(names) + [f"z[{i}]" for i in range(p)]


def _lqr(sys: Any, Q: ArrayLike, R: ArrayLike, N: ArrayLike | None, S: ArrayLike | None, *,
         discrete_only: bool, integral_action: ArrayLike | None = None,
         method: str | None = None) -> LQRResult:
    import control

    fname = "dlqr" if discrete_only else "lqr"
    order: list[str] | None = None
    if hasattr(sys, "to_statespace") and hasattr(sys, "partition"):       # a linearization
        # report the directions pivoted on its admissible dependent coordinates x_ad (Eq. (4.123))
        order = [s for s in (getattr(sys.partition, "admissible_dependent", ()) or ())
                 if s in tuple(sys.states)]
        sys = sys.to_statespace()
    if not isinstance(sys, control.StateSpace):
        raise DesignTypeError(f"sys must be a control.StateSpace (LTI), got {type(sys).__name__}; "
                              "for matrices pass control.ss(A, B, np.eye(n), 0) (add dt= for discrete "
                              "time); for a time-varying system discretize it and use finite_horizon_lqr")
    A = np.asarray(sys.A, dtype=float)
    B = np.asarray(sys.B, dtype=float)
    discrete = control.isdtime(sys, strict=True)
    if discrete_only and not discrete:
        raise DesignError(f"{fname}: sys is continuous (dt = {sys.dt!r}); discretize it first "
                          "(control.c2d(sys, dt)) or call lqr() for the continuous design")
    names = _labels(sys, A.shape[0])
    if integral_action is not None:
        A, B, names = _augment_integral(A, B, integral_action, discrete, names)
    n, k = B.shape
    Q_ = _weight(Q, "Q", n)
    R_ = _weight(R, "R", k)
    S_ = _cross_weight(N, S, n, k, stacklevel=4)
    for W, nm in ((Q_, "Q"), (R_, "R")):
        check_finite(W, nm, error=DesignError)
    if S_ is not None:
        check_finite(S_, "N", error=DesignError)
    check_weights(Q_, R_, S_, np.zeros((n, n)), cross="N")
    # The gain does not change when all weights are multiplied by one number (P scales with
    # it); the Riccati solvers use absolute tolerances, so solve with weights of order one
    # (R = 1e-13, Q = 1e-12 I gives the gain of R = 0.1, Q = I to round-off).
    w = max(float(np.max(np.abs(W))) for W in ((Q_, R_) if S_ is None else (Q_, R_, S_)))
    w = w if w > 0 and np.isfinite(w) else 1.0
    args = ((A, B, Q_ / w, R_ / w) if S_ is None else (A, B, Q_ / w, R_ / w, S_ / w))
    # Decide existence ourselves (PBH, with singular values), before any solver sees the pair:
    # slycot releases differ in whether they refuse or return a non-stabilising solution.
    Qe = Q_ if S_ is None else Q_ - S_ @ np.linalg.solve(R_, S_.T)
    bad_b, bad_q = _boundary_mode_reports(A, B, 0.5 * (Qe + Qe.T), discrete, names, order)
    if bad_b or bad_q:
        raise DesignError(
            f"no stabilising solution of the {'DARE' if discrete else 'CARE'} exists: "
            + _unstabilisable_report(A, B, discrete, names, 0.5 * (Qe + Qe.T), order))
    try:
        if discrete:
            K, P, E = control.dlqr(*args, method=method)
        else:
            K, P, E = control.lqr(*args, method=method)
    except Exception as exc:  # python-control raises ControlArgument / ValueError / slycot errors
        raise DesignError(
            f"python-control could not solve the {'DARE' if discrete else 'CARE'} "
            f"({type(exc).__name__}: {exc}). " + _unstabilisable_report(A, B, discrete, names, order=order)
        ) from exc
    K = np.asarray(K, dtype=float)
    P = np.asarray(P, dtype=float) * w
    Sz = np.zeros((n, k)) if S_ is None else S_
    if discrete:
        res = P - _riccati_rhs(A, B, Q_, R_, Sz, P)
        rbar = R_ + B.T @ P @ B
    else:
        NS = P @ B + Sz
        res = A.T @ P + P @ A - NS @ np.linalg.solve(R_, NS.T) + Q_
        rbar = R_
    resid = np.array([np.linalg.norm(res) / max(1.0, float(np.linalg.norm(P)))])
    dt = float(sys.dt) if discrete and not isinstance(sys.dt, bool) else (None if discrete else 0.0)
    return LQRResult(K=readonly(K), P=readonly(0.5 * (P + P.T)), horizon=None, dt=dt,
                     min_eig_Rbar=readonly(np.array([np.linalg.eigvalsh(0.5 * (rbar + rbar.T))[0]])),
                     E=readonly(np.asarray(E, dtype=complex)),
                     method="dare" if discrete else "care", _residual=readonly(resid),
                     states=tuple(names), inputs=tuple(getattr(sys, "input_labels", ()) or ()))
