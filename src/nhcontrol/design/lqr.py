"""Linear-quadratic regulators: finite-horizon discrete (time-varying) and infinite-horizon LTI.

The finite-horizon regulator is the tool of thesis Ch. 8 for a linearization along a reference
motion that depends on time (the ball-plate circle, Eq. (8.74)): the controller acts on the
deviation ``δx_k = x(t_k) − x_ref(t_k)`` and commands ``u_k = u_ref(t_k) + δu_k`` with
``δu_k = −K_k δx_k``. See ``docs/theory/lqr_mpc.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.blas import limit_blas_threads
from .._util.errors import DesignError, DesignTypeError, SolverError
from .._util.memory import check_allocation
from .._util.fastlinalg import solve as _solve
from .._util.validation import as_float_array, check_finite, readonly
from ._weights import PD_RTOL, check_weights, per_step, system_arrays

__all__ = ["LQRResult", "finite_horizon_lqr", "lqr"]


@dataclass(frozen=True)
class LQRResult:
    """Gains and cost-to-go matrices of a linear-quadratic regulator (immutable).

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

    @property
    def riccati_residual(self) -> NDArray[np.float64]:
        """Relative Riccati residual of each step (see the class docstring)."""
        if callable(self._residual):
            object.__setattr__(self, "_residual", readonly(self._residual()))
        return self._residual

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

    def export_c(self, directory: Any, name: str = "lqr") -> dict:
        """Write the gain tables as standalone C99 (``<name>.h``, ``<name>.c``): read-only tables
        and ``<name>_control(step, dx, u)`` computing ``u = −K_step dx`` without allocation.

        See [`nhcontrol.interop.export_lqr_c()`][nhcontrol.interop.export_lqr_c].

        Returns
        -------
        dict
            ``{"files", "horizon", "nstates", "ninputs", "table_bytes"}``.
        """
        from ..interop.c_export import export_lqr_c

        return export_lqr_c(self, directory, name)

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
    import control

    from ..systems import DiscreteLTV

    if isinstance(dsys, control.StateSpace):
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
    Q : (n, n) or (N, n, n) array_like
        State weights, symmetric positive semi-definite.
    R : (k, k) or (N, k, k) array_like
        Input weights, symmetric positive definite.
    Qf : (n, n) array_like
        Terminal weight, symmetric positive semi-definite.
    S : (n, k) or (N, n, k) array_like, optional
        Cross weights; ``[[Q_k, S_k], [S_kᵀ, R_k]]`` must be positive semi-definite.
    N : int, optional
        Horizon, required (only) for a ``control.StateSpace``.

    Returns
    -------
    LQRResult
        ``K`` (N, k, n), ``P`` (N+1, n, n), ``u_k = −K_k x_k`` and optimal cost ``x0ᵀ P_0 x0``.

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
    # gains K, costs P, Rbar and the per-step weights (Q, R broadcast to every step when constant)
    check_allocation(8.0 * N * (k * n + 3 * n * n + 3 * k * k),
                     f"finite_horizon_lqr over N = {N} steps with n = {n} states and k = {k} inputs",
                     error=DesignError, hint="use a shorter horizon or a coarser sampling time")
    Qs = per_step(Q, "Q", N, n, n)
    Rs = per_step(R, "R", N, k, k)
    Qf_ = as_float_array(Qf, "Qf", shape=(n, n), error=DesignError)
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


def _unstabilisable_report(A: NDArray[np.float64], B: NDArray[np.float64], discrete: bool,
                           names: list[str]) -> str:
    """Name the modes that fail the PBH stabilisability test and the states that carry them.

    A mode ``λ`` of ``A`` with ``Re λ >= 0`` (``|λ| >= 1`` in discrete time) is unstabilisable
    when ``rank [A - λI, B] < n`` (Popov-Belevitch-Hautus); the states that carry it are the
    largest entries of its eigenvector.
    """
    n = A.shape[0]
    lam, V = np.linalg.eig(A)
    scale = max(1.0, float(np.linalg.norm(np.hstack([A, B]), 2)))
    bad = []
    for i, li in enumerate(lam):
        if (abs(li) < 1.0 - 1e-9) if discrete else (li.real < -1e-9 * scale):
            continue
        sv = np.linalg.svd(np.hstack([A - li * np.eye(n), B]), compute_uv=False)
        if sv[-1] <= PBH_RTOL * scale:
            v = np.abs(V[:, i])
            carried = [names[j] for j in np.argsort(-v) if v[j] > 0.1 * v.max()][:6]
            bad.append(f"eigenvalue {complex(np.round(li, 9))} (smallest singular value of [A - λI, B] "
                       f"{sv[-1]:.1e}) carried by {carried}")
    boundary = "|λ| >= 1" if discrete else "Re λ >= 0"
    if not bad:
        return (f"Every mode with {boundary} passes the PBH test (tolerance {PBH_RTOL:g} x {scale:.3g}); "
                "check that (Q, A) has no unobservable mode on the stability boundary")
    return (f"(A, B) is not stabilisable: {len(bad)} mode(s) with {boundary} cannot be moved by the "
            f"inputs: " + "; ".join(bad) + ". Remove the states that carry them (cyclic coordinates and "
            "spurious directions of a linearization are typical) and design on the rest: for a "
            "linearization use lin.to_statespace(states=\"reduced\") (or a list of state names); "
            "otherwise control.ss(A[keep][:, keep], B[keep], ...) or a controllable formulation")


def lqr(sys: Any, Q: ArrayLike, R: ArrayLike, *, S: ArrayLike | None = None) -> LQRResult:
    r"""Infinite-horizon LQR of an LTI system through python-control (slycot).

    Parameters
    ----------
    sys : control.StateSpace
        Continuous (``dt == 0``) or discrete (``dt > 0``; ``dt=True`` counts as discrete with
        unspecified period) LTI system with ``n`` states and ``k`` inputs.
    Q : (n, n) array_like
        State weight, symmetric positive semi-definite.
    R : (k, k) array_like
        Input weight, symmetric positive definite.
    S : (n, k) array_like, optional
        Cross weight.

    Returns
    -------
    LQRResult
        ``K`` (k, n), ``P`` (n, n) (solution of the CARE / DARE), ``E`` the closed-loop
        eigenvalues, ``horizon=None``; ``u = −K x``.

    Raises
    ------
    DesignError
        Not an LTI state-space system, bad shapes, indefinite weights, or no stabilising
        solution (``(A, B)`` not stabilisable — python-control's message is included).

    Notes
    -----
    Continuous: $A^T P + P A - (P B + S) R^{-1} (B^T P + S^T) + Q = 0$,
    $K = R^{-1}(B^T P + S^T)$ (``control.lqr``). Discrete:
    $P = A^T P A - (A^T P B + S)(R + B^T P B)^{-1}(B^T P A + S^T) + Q$,
    $K = (R + B^T P B)^{-1}(B^T P A + S^T)$ (``control.dlqr``).
    """
    import control

    if not isinstance(sys, control.StateSpace):
        raise DesignTypeError(f"sys must be a control.StateSpace (LTI), got {type(sys).__name__}; "
                          "for a time-varying system discretize it and use finite_horizon_lqr")
    A = np.asarray(sys.A, dtype=float)
    B = np.asarray(sys.B, dtype=float)
    n, k = B.shape
    Q_ = as_float_array(Q, "Q", shape=(n, n), error=DesignError)
    R_ = as_float_array(R, "R", shape=(k, k), error=DesignError)
    S_ = None if S is None else as_float_array(S, "S", shape=(n, k), error=DesignError)
    for W, nm in ((Q_, "Q"), (R_, "R")):
        check_finite(W, nm, error=DesignError)
    check_weights(Q_, R_, S_, np.zeros((n, n)))
    discrete = control.isdtime(sys, strict=True)
    # The gain does not change when all weights are multiplied by one number (P scales with
    # it); the Riccati solvers use absolute tolerances, so solve with weights of order one
    # (R = 1e-13, Q = 1e-12 I gives the gain of R = 0.1, Q = I to round-off).
    w = max(float(np.max(np.abs(W))) for W in ((Q_, R_) if S_ is None else (Q_, R_, S_)))
    w = w if w > 0 and np.isfinite(w) else 1.0
    args = ((A, B, Q_ / w, R_ / w) if S_ is None else (A, B, Q_ / w, R_ / w, S_ / w))
    try:
        if discrete:
            K, P, E = control.dlqr(*args)
        else:
            K, P, E = control.lqr(*args)
    except Exception as exc:  # python-control raises ControlArgument / ValueError / slycot errors
        raise DesignError(
            f"python-control could not solve the {'DARE' if discrete else 'CARE'} "
            f"({type(exc).__name__}: {exc}). " + _unstabilisable_report(A, B, discrete, _labels(sys, n))
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
                     method="dare" if discrete else "care", _residual=readonly(resid))
