"""Finite-difference linearizations, for validation only (never the product path).

Two things live here:

* [`finite_difference_jacobian()`][nhcontrol.linearization.finite_difference_jacobian] -- the
  *conventional counterpart* of thesis Sect. 7.3.5,
  Eqs. (7.103)-(7.110) without the hydraulic states (``r = u = 0``): the index-1 DAE is solved for
  the accelerations, ``[xdd; Λ] = A_h(x)^{-1} f_h(X)`` (Eq. (7.107)), giving the ODE
  ``dX/dt = F(X)``, ``X = [x, v]`` (Eq. (7.108)), whose ``2n x 2n`` Jacobian is approximated by
  central differences with step ``h`` (Eqs. (7.109)-(7.110)),
  $J_j \\simeq \\big(F(X_0 + h e_j) - F(X_0 - h e_j)\\big) / (2h)$.
  Its error depends on ``h`` (truncation ``O(h^2)``, round-off ``O(eps/h)``; Fig. 7.14), unlike
  the exact procedures.
*
  [`finite_difference_jacobian_first_order()`][nhcontrol.linearization.finite_difference_jacobian_first_order]
  -- the same counterpart with the first-order
  states of Ch. 7 (pressures ``z = p`` as the model's inputs, spool positions ``w = U``),
  Eqs. (7.103)-(7.110) in full: ``X = [x, v, z, w]`` of size ``2n + r + u``, driven by the
  references ``r`` (``U_ref``).
* [`reduced_ode_jacobian_fd()`][nhcontrol.linearization.reduced_ode_jacobian_fd] -- central
  differences of the *nonlinear reduced ODE* whose exact
  linearization is the third numerical procedure (Eqs. (4.118)-(4.119), state
  ``[x_ai, xd_ai, x_ad]``: ``x_d`` from ``C(x) = 0`` by Newton's method, the dependent velocities
  from ``D(x) xd = 0``) or the second one (Eqs. (2.134)-(2.135), state ``[x_ai, xd_ai, x_dd]``).
  It validates [`nhcontrol.linearization.linearize()`][nhcontrol.linearization.linearize] along non-steady
  references.

All perturbed points are evaluated in one stacked kernel call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from .._util.errors import ConstraintError, LinearSystemError, PartitionError, SolverError
from .._util.validation import readonly
from ._jacobian import _JacobianMembers
from .first import partition_indices, reference_point, velocity_names
from .._util.reprs import concise_repr

if TYPE_CHECKING:
    from typing import Mapping
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition
    from nhcontrol.reference import Reference

__all__ = [
    "FiniteDifferenceResult",
    "index1_accelerations",
    "finite_difference_jacobian",
    "finite_difference_jacobian_first_order",
    "reduced_ode_jacobian_fd",
    "DEFAULT_STEP",
]

DEFAULT_STEP = 1e-5
"""Default central-difference step (the thesis finds h ≈ 1e-5 best for its example, Fig. 7.14)."""


@dataclass(frozen=True)
class FiniteDifferenceResult(_JacobianMembers):
    """A central-difference Jacobian (Eqs. (7.109)-(7.110)).

    Attributes
    ----------
    J : (N, N) ndarray
        State Jacobian (``N = 2n`` for the counterpart, ``2n-2m-l`` / ``2n-m-l`` reduced).
    B : (N, k) ndarray
        Input matrix by the same differences (``k = 0``: shape ``(N, 0)``).
    states : tuple of str
    h : float
        Step used.
    n_spurious : int
        Spurious eigenvalues of this form: ``2(m+l)``, ``l`` or ``m+l``.
    t : float
    B_rate : (N, k) ndarray or None
        Matrix of the input rates ``u̇`` by the same differences (reduced ODE of a model whose
        inputs enter the nonholonomic constraints), else None.
    """

    __repr__ = concise_repr

    J: NDArray[np.float64]
    B: NDArray[np.float64]
    states: tuple[str, ...]
    h: float
    n_spurious: int
    t: float
    B_rate: NDArray[np.float64] | None = None


def _stack(a: NDArray[np.float64] | None, N: int) -> NDArray[np.float64] | None:
    if a is None:
        return None
    a = np.asarray(a, dtype=float)
    return np.broadcast_to(a, (N,) + a.shape[-1:]).copy() if a.ndim == 1 else a


def index1_accelerations(cm: CompiledModel, x: Any, xd: Any, u: Any = None, p: Any = None,
                         ud: Any = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Accelerations and multipliers of the index-1 DAE, Eq. (2.127) / (7.107).

    Solves ``[[M, D^T], [D, 0]] [xdd; Λ] = [Q; Qd]`` at one point or ``N`` stacked points;
    with input rates ``ud`` and inputs in the nonholonomic constraints ``Qd − E u̇``
    (``E = ∂(B ẋ + b)/∂u``).

    Parameters
    ----------
    cm : CompiledModel
    x, xd : (n,) or (N, n) array_like
    u : (k,) or (N, k) array_like, optional
    p : (p,) array_like, optional

    Returns
    -------
    xdd : (n,) or (N, n) ndarray
    lam : (m+l,) or (N, m+l) ndarray

    Raises
    ------
    ConstraintError
        If the saddle-point matrix is singular at some point.
    """
    x = np.asarray(x, dtype=float)
    xd = np.asarray(xd, dtype=float)
    single = x.ndim == 1
    X = np.atleast_2d(x)
    XD = np.atleast_2d(xd)
    N, n = X.shape
    c = int(cm.m) + int(cm.l)
    U = _stack(u, N) if u is not None else None
    M = np.asarray(cm.M(X, U, p), dtype=float).reshape(N, n, n)
    D = np.asarray(cm.D(X, U, p), dtype=float).reshape(N, c, n)
    Q = np.asarray(cm.Q(X, XD, U, p), dtype=float).reshape(N, n)
    Qd = np.asarray(cm.Qd(X, XD, U, p), dtype=float).reshape(N, c)
    if ud is not None and getattr(cm, "constraint_inputs", ()):
        k = int(cm.ninputs)
        E = np.asarray(cm.E(X, XD, U, p), dtype=float).reshape(N, c, k)
        Qd = Qd - np.einsum("nij,nj->ni", E, _stack(ud, N))
    Aug = np.zeros((N, n + c, n + c))
    Aug[:, :n, :n] = M
    Aug[:, :n, n:] = np.transpose(D, (0, 2, 1))
    Aug[:, n:, :n] = D
    rhs = np.concatenate([Q, Qd], axis=1)
    try:
        sol = np.linalg.solve(Aug, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError as exc:
        raise ConstraintError("The saddle-point matrix [[M, D^T], [D, 0]] of Eq. (2.127) is "
                              "singular at one of the evaluation points; the constraints are "
                              "redundant or the step h leaves the admissible region") from exc
    xdd, lam = sol[:, :n], sol[:, n:]
    if single:
        return xdd[0], lam[0]
    return xdd, lam


def _central(F, X0: NDArray[np.float64], h: float) -> NDArray[np.float64]:
    """Central differences of a stacked function ``F((2N, N0)) -> (2N, M)``, Eq. (7.110)."""
    N = X0.size
    E = h * np.eye(N)
    pts = np.concatenate([X0 + E, X0 - E], axis=0)
    vals = F(pts)
    return ((vals[:N] - vals[N:]) / (2.0 * h)).T


def _central_inputs(F, X0: NDArray[np.float64], u0: NDArray[np.float64] | None,
                    h: float) -> NDArray[np.float64]:
    """Input matrix ``B`` by central differences in ``u`` at the state ``X0``, Eq. (7.110).

    ``F((2k, N0), us=(2k, k)) -> (2k, M)`` is the stacked right-hand side; ``u0`` of shape
    ``(k,)`` is the reference input (``None``: no inputs). Returns ``B`` of shape ``(M, k)``,
    ``(X0.size, 0)`` without inputs.
    """
    k = 0 if u0 is None else u0.size
    if not k:
        return np.zeros((X0.size, 0))
    Eu = h * np.eye(k)
    us = np.concatenate([u0 + Eu, u0 - Eu], axis=0)
    vals = F(np.broadcast_to(X0, (2 * k, X0.size)).copy(), us)
    return ((vals[:k] - vals[k:]) / (2.0 * h)).T


def _check_h(h: float) -> float:
    h = float(h)
    if not np.isfinite(h) or h <= 0:
        raise LinearSystemError(f"finite-difference step h must be a positive number, got {h!r}; "
                                f"use e.g. h = {DEFAULT_STEP}")
    return h



def _central_with_rates(cm: CompiledModel, pt: Any, rates: Any, F_mech: Any, S0: NDArray[np.float64],
                        h: float, states: tuple[str, ...], n_spurious: int,
                        coordinates: Any) -> FiniteDifferenceResult:
    """Central differences of the mechanical ODE ``F_mech`` with the first-order states appended.

    The rates ``ż = H(x, ẋ, z, u)`` of ``rates`` (``compile_rates``) follow the mechanical state
    ``S``; ``z`` and the remaining inputs fill the model's input vector (``rates.state_index``,
    ``rates.input_index``); ``coordinates(S, U) -> (x, ẋ)`` recovers the full coordinates and
    velocities from the mechanical state.
    """
    zi, ui = list(rates.state_index), list(rates.input_index)
    if pt.u is None or sorted(zi + ui) != list(range(pt.u.size)):
        raise LinearSystemError(f"the rate kernels {rates!r} do not belong to model "
                                f"{getattr(cm, 'name', '?')!r}")
    nz, nmech = len(zi), S0.size
    params = None if pt.p is None else np.asarray(pt.p, dtype=float).reshape(-1)

    def F(S: NDArray[np.float64], us: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        N = S.shape[0]
        U = np.broadcast_to(pt.u, (N, pt.u.size)).copy()
        if us is not None:
            U[:, ui] = us
        U[:, zi] = S[:, nmech:]
        mech = F_mech(S[:, :nmech], U)
        X, XD = coordinates(S[:, :nmech], U)
        zd = np.asarray(rates.model.rates(X, XD, U, params)).reshape(N, nz)   # one stacked call
        return np.concatenate([mech, zd], axis=1)

    S0 = np.concatenate([S0, pt.u[zi]])
    J = _central(F, S0, h)
    B = _central_inputs(F, S0, pt.u[ui] if ui else None, h)
    return FiniteDifferenceResult(J=readonly(J), B=readonly(B), states=states + tuple(rates.states),
                                  h=h, n_spurious=n_spurious, t=pt.t)

def finite_difference_jacobian(cm: CompiledModel, ref: Reference, t: float = 0.0, *,
                               h: float = DEFAULT_STEP,
                               p: Any = None, rates: Any = None) -> FiniteDifferenceResult:
    """Conventional counterpart linearization, Eqs. (7.104)-(7.110), by central differences.

    Parameters
    ----------
    cm : CompiledModel
        Needs only ``M, D, Q, Qd``.
    ref : Reference or ReferencePoint
        Gives ``X0 = [x0(t), xd0(t)]`` and ``u0(t)``.
    t : float
        Instant of the linearization.
    h : float
        Step of the central differences (absolute, as in Eq. (7.110)).
    p : (p,) array_like, optional
    rates : RateKernels, optional
        First-order states built in the model
        ([`compile_rates()`][nhcontrol.compiled.compile_rates]): ``X = [x, v, z]`` of size
        ``2n + r`` with ``ż = H(x, v, z, u)`` (Eqs. (7.103)-(7.110)); ``B`` then has the columns
        of the other inputs ``u``.

    Returns
    -------
    FiniteDifferenceResult
        ``J`` ``(2n, 2n)`` (``2n + r`` with ``rates``), ``B`` ``(2n, k)``,
        ``n_spurious = 2(m+l)``.

    Raises
    ------
    LinearSystemError
        If ``h`` is not positive.
    ConstraintError
        If the saddle-point matrix is singular at a perturbed point.
    """
    h = _check_h(h)
    pt = reference_point(cm, ref, t, p=p)
    n = int(cm.n)
    X0 = np.concatenate([pt.x, pt.xd])

    def F(Xs: NDArray[np.float64], us: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        u = us if us is not None else (None if pt.u is None else _stack(pt.u, len(Xs)))
        xdd, _ = index1_accelerations(cm, Xs[:, :n], Xs[:, n:], u, pt.p)
        return np.concatenate([Xs[:, n:], xdd], axis=1)

    states = tuple(cm.coordinates) + velocity_names(cm)
    if rates is not None:
        return _central_with_rates(cm, pt, rates, F, X0, h, states, 2 * (int(cm.m) + int(cm.l)),
                                   lambda Xs, U: (Xs[:, :n], Xs[:, n:2 * n]))
    J = _central(F, X0, h)
    B = _central_inputs(F, X0, pt.u, h)
    return FiniteDifferenceResult(J=readonly(J), B=readonly(B), states=states, h=h,
                                  n_spurious=2 * (int(cm.m) + int(cm.l)), t=pt.t)


def finite_difference_jacobian_first_order(
        cm: CompiledModel, ref: Reference, *, z_rate: Any, w_rate: Any, w0: Any, r0: Any,
        t: float = 0.0,
        h: float = DEFAULT_STEP, z_names: Any = None, w_names: Any = None,
        p: Any = None) -> FiniteDifferenceResult:
    """Conventional counterpart with first-order states, Eqs. (7.103)-(7.110), by central differences.

    The index-1 DAE (7.103) is solved for the accelerations (Eq. (7.107)), giving the ODE
    (7.108) in ``X = [x, v, z, w]``:

    $$
    \\dot X = F(X, r) = [v;\\ \\ddot x(x, v, z);\\ H(x, v, z, w, r);\\ W(w, r)],
    $$

    whose ``(2n + r + u)``-square Jacobian is approximated column by column with the absolute
    step ``h`` (Eq. (7.110)); all ``2N`` perturbed points are evaluated in one stacked call.

    Parameters
    ----------
    cm : CompiledModel
        Mechanical model whose inputs ``u`` are the states ``z`` (same order).
    ref : Reference or ReferencePoint
        Gives ``x0(t), xd0(t)`` and ``z0 = u0(t)``.
    z_rate : callable
        ``z_rate(x, v, z, w, r) -> (N, r)`` for stacked ``(N, n), (N, n), (N, r), (N, u), (N, k)``
        arrays: the rates ``H`` (Eq. (7.12)).
    w_rate : callable
        ``w_rate(w, r) -> (N, u)``: the rates ``W`` (Eq. (7.13)).
    w0, r0 : array_like
        ``w`` and the references ``r`` at the linearization point.
    t : float
    h : float
        Step of the central differences (absolute, the same for every component).
    z_names, w_names : sequence of str, optional
        Names of the states (default ``z0, z1, ...``, ``w0, ...``).
    p : (p,) array_like, optional

    Returns
    -------
    FiniteDifferenceResult
        ``J`` of size ``2n + r + u``, ``B`` ``(2n + r + u, k)`` (columns of ``r``),
        ``n_spurious = 2(m + l)``.

    Raises
    ------
    LinearSystemError
        If ``h`` is not positive, the model has no inputs ``z``, or a rate function returns the
        wrong shape or non-finite values.
    ConstraintError
        If the saddle-point matrix is singular at a perturbed point.
    """
    h = _check_h(h)
    pt = reference_point(cm, ref, t, p=p)
    if pt.u is None or pt.u.size == 0:
        raise LinearSystemError(f"model {getattr(cm, 'name', '?')!r} has no inputs: the states z "
                                f"(pressures) must be the model's inputs u")
    n, r = int(cm.n), int(pt.u.size)
    w0 = np.atleast_1d(np.asarray(w0, dtype=float)).ravel()
    r0 = np.atleast_1d(np.asarray(r0, dtype=float)).ravel()
    nu, k = w0.size, r0.size
    N0 = 2 * n + r + nu

    def _rates(f: Any, args: tuple, shape: tuple[int, int], what: str) -> NDArray[np.float64]:
        out = np.asarray(f(*args), dtype=float)
        if out.shape != shape:
            raise LinearSystemError(f"{what} must return shape {shape} for {shape[0]} stacked "
                                    f"points, got {out.shape}")
        if not np.all(np.isfinite(out)):
            raise LinearSystemError(f"{what} returned non-finite values; is the step h = {h} "
                                    f"leaving the domain of the rate equations?")
        return out

    def F(Xs: NDArray[np.float64], rs: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        Ns = Xs.shape[0]
        R = np.broadcast_to(r0, (Ns, k)).copy() if rs is None else rs
        x, v, z, w = (Xs[:, :n], Xs[:, n:2 * n], Xs[:, 2 * n:2 * n + r], Xs[:, 2 * n + r:])
        xdd, _ = index1_accelerations(cm, x, v, z, pt.p)
        zd = _rates(z_rate, (x, v, z, w, R), (Ns, r), "z_rate")
        wd = _rates(w_rate, (w, R), (Ns, nu), "w_rate")
        return np.concatenate([v, xdd, zd, wd], axis=1)

    X0 = np.concatenate([pt.x, pt.xd, pt.u, w0])
    J = _central(F, X0, h)
    B = _central_inputs(F, X0, r0, h)
    zn = tuple(z_names) if z_names is not None else tuple(f"z{i}" for i in range(r))
    wn = tuple(w_names) if w_names is not None else tuple(f"w{i}" for i in range(nu))
    states = tuple(cm.coordinates) + velocity_names(cm) + zn + wn
    if len(states) != N0:
        raise LinearSystemError(f"z_names/w_names must name {r} and {nu} states, got {zn}, {wn}")
    return FiniteDifferenceResult(J=readonly(J), B=readonly(B), states=states, h=h,
                                  n_spurious=2 * (int(cm.m) + int(cm.l)), t=pt.t)


def _project_holonomic(cm: CompiledModel, X: NDArray[np.float64], d: list[int], U, p,
                       tol: float = 1e-14, maxiter: int = 30) -> NDArray[np.float64]:
    """Solve ``C(x) = 0`` for the dependent coordinates ``x_d`` (Newton, stacked points)."""
    X = X.copy()
    if not d:
        return X
    N = X.shape[0]
    m = int(cm.m)
    err = np.inf
    for _ in range(maxiter):
        C = np.asarray(cm.C(X, U, p), dtype=float).reshape(N, m)
        err = float(np.max(np.abs(C)))
        if err <= tol:
            return X
        Cx = np.asarray(cm.Cx(X, U, p), dtype=float).reshape(N, m, -1)[:, :, d]
        try:
            step = np.linalg.solve(Cx, C[..., None])[..., 0]
        except np.linalg.LinAlgError as exc:
            raise PartitionError("∂C/∂x_d (Eq. (4.105)) is singular at a perturbed point; choose "
                                 "other dependent coordinates x_d") from exc
        X[:, d] -= step
        # quadratic convergence has stalled at rounding level: accept
        if np.max(np.abs(step)) <= 4 * np.finfo(float).eps * (1.0 + np.max(np.abs(X[:, d]))):
            return X
    raise SolverError(f"Newton's method on C(x) = 0 for x_d did not converge in {maxiter} "
                      f"iterations (max |C| = {err:.3g}); use a smaller step h")


def reduced_ode_jacobian_fd(cm: CompiledModel, ref: Reference,
                            partition: Partition | Mapping[str, Any], t: float = 0.0, *,
                            h: float = 1e-6, p: Any = None,
                            form: Literal["third", "second"] = "third",
                            rates: Any = None, ud: Any = None) -> FiniteDifferenceResult:
    """Central-difference Jacobian of the nonlinear reduced ODE (validation of Sects. 4.2.2-4.2.3).

    Parameters
    ----------
    cm : CompiledModel
    ref : Reference or ReferencePoint
        The reference; ``x0(t), xd0(t), u0(t)`` must satisfy the constraints.
    partition : Partition or mapping
        Three-set partition of Eq. (2.137) (``form="second"`` also accepts two sets).
    t : float
    h : float
        Step of the central differences.
    p : (p,) array_like, optional
    form : {"third", "second"}
        ``"third"``: state ``[x_ai, xd_ai, x_ad]``, size ``2(n-m)-l`` (exact counterpart:
        Eq. (4.124)); ``x_d`` solves ``C(x) = 0``. ``"second"``: state ``[x_ai, xd_ai, x_dd]``,
        size ``2n-m-l`` (exact counterpart: Eq. (4.95)); positions are not projected.
    rates : RateKernels, optional
        First-order states built in the model
        ([`compile_rates()`][nhcontrol.compiled.compile_rates]): their values ``z`` (the model
        inputs at ``rates.state_index``) are appended to the state, with ``ż = H(x, ẋ, z, u)``
        (Eq. (7.12)); ``B`` then has the columns of the other inputs ``u``. Exact counterpart:
        [`linearize_first_order_system()`][nhcontrol.linearization.linearize_first_order_system].
    ud : (k,) array_like, optional
        Input rates ``u̇0`` of a model whose inputs enter the nonholonomic constraints (default
        ``ref.ud(t)`` when the reference has them, else zero): the ODE is
        ``F(X, u, u̇)`` with ``D ẍ = Q_d − E u̇``, and ``B_rate = ∂F/∂u̇`` is differenced too.

    Returns
    -------
    FiniteDifferenceResult

    Raises
    ------
    PartitionError
        Invalid partition or singular ``Ddd`` / ``∂C/∂x_d`` at a perturbed point.
    SolverError
        If the projection on ``C(x) = 0`` does not converge.
    """
    h = _check_h(h)
    if form not in ("third", "second"):
        raise LinearSystemError(f"form must be 'third' or 'second', got {form!r}")
    ai, ad, d = partition_indices(cm, partition)
    if form == "third" and len(ad) != cm.l:
        raise PartitionError(f"form='third' needs the three-set partition of Eq. (2.137) with "
                             f"l = {cm.l} admissible dependent coordinates, got {len(ad)}")
    pt = reference_point(cm, ref, t, p=p)
    n, c = int(cm.n), int(cm.m) + int(cm.l)
    dd = ad + d
    g = len(ai)
    pos = ai + ad if form == "third" else ai + dd

    def full_state(S: NDArray[np.float64], U: NDArray[np.float64] | None
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``x`` (projected on ``C = 0`` for the third form) and ``ẋ`` at reduced states ``S``."""
        N = S.shape[0]
        X = np.broadcast_to(pt.x, (N, n)).copy()
        X[:, ai] = S[:, :g]
        X[:, pos[g:]] = S[:, 2 * g:]
        if form == "third":
            X = _project_holonomic(cm, X, d, U, pt.p)
        D = np.asarray(cm.D(X, U, pt.p), dtype=float).reshape(N, c, n)
        XD = np.zeros((N, n))
        XD[:, ai] = S[:, g:2 * g]
        try:
            rhs = D[:, :, ai] @ S[:, g:2 * g, None]
            if getattr(cm, "affine_names", ()):           # D ẋ + b = 0 (affine constraints)
                rhs = rhs + np.asarray(cm.b(X, U, pt.p), dtype=float).reshape(N, c, 1)
            XD[:, dd] = -np.linalg.solve(D[:, :, dd], rhs)[..., 0]
        except np.linalg.LinAlgError as exc:
            raise PartitionError("D_dd (Eq. (2.131)) is singular at a perturbed point; choose "
                                 "other independent coordinates") from exc
        return X, XD

    with_rates = bool(getattr(cm, "constraint_inputs", ())) and pt.u is not None
    ud0 = None
    if with_rates:
        ud0 = (np.asarray(ud, dtype=float).reshape(pt.u.size) if ud is not None
               else np.asarray(ref.ud(pt.t), dtype=float).reshape(pt.u.size)
               if callable(getattr(ref, "ud", None)) else np.zeros(pt.u.size))

    def F(S: NDArray[np.float64], us: NDArray[np.float64] | None = None,
          uds: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        U = us if us is not None else (None if pt.u is None else _stack(pt.u, S.shape[0]))
        UD = None if not with_rates else (uds if uds is not None else _stack(ud0, S.shape[0]))
        X, XD = full_state(S, U)
        xdd, _ = index1_accelerations(cm, X, XD, U, pt.p, UD)
        return np.concatenate([XD[:, ai], xdd[:, ai], XD[:, pos[g:]]], axis=1)

    S0 = np.concatenate([pt.x[ai], pt.xd[ai], pt.x[pos[g:]]])
    names = tuple(cm.coordinates)
    vel = velocity_names(cm)
    states = (tuple(names[i] for i in ai) + tuple(vel[i] for i in ai)
              + tuple(names[i] for i in pos[g:]))
    n_sp = int(cm.l) if form == "third" else c
    if rates is not None:
        return _central_with_rates(cm, pt, rates, F, S0, h, states, n_sp, full_state)
    J = _central(F, S0, h)
    B = _central_inputs(F, S0, pt.u, h)
    B_rate = None
    if with_rates:
        B_rate = readonly(_central_inputs(lambda Ss, uds: F(Ss, None, uds), S0, ud0, h))
    return FiniteDifferenceResult(J=readonly(J), B=readonly(B), states=states, h=h,
                                  n_spurious=n_sp, t=pt.t, B_rate=B_rate)
