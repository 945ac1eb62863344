"""The minimal-state dynamics ``Ẋ = f(X, u)`` and its exact Jacobians, stacked over many points.

The state of the third procedure is ``X = [x_ai, ẋ_ai, x_ad]`` (Eq. (4.123)). At ``P`` points at
once (one kernel call per term for all collocation points) this module evaluates

* the full coordinates ``x(X)`` (``x_d`` on ``C(x) = 0``, Eq. (2.109), by predictor-corrector
  continuation in ``x_a`` from a solved point ``x̄``, derived here: the tangent prediction
  ``x_d ≈ x̄_d − C_{x,d}⁻¹ C_{x,a} (x_a − x̄_a)``, then Newton, the step halved when the
  correction is not small, so the roots stay on one branch of ``C = 0``) and velocities
  ``ẋ(X)`` (``ẋ_dd = −D_dd⁻¹ D_ai ẋ_ai`` and ``b``, Eq. (2.114));
* ``ẍ, Λ`` of the index-1 system ``[[M, Dᵀ], [D, 0]] [ẍ; Λ] = [Q; Q_d]`` (Eq. (2.127));
* with ``jac=True`` the exact sensitivities of ``x, ẋ, ẍ, Λ`` with respect to ``z = [X, u]``
  (derived here, the differential of the same three equations):

  .. math::

     T_x = \\partial x/\\partial z:\\; T_{x,d} = -C_{x,d}^{-1} C_{x,a} T_{x,a},\\qquad
     T_{\\dot x,dd} = -D_{dd}^{-1}\\,(D_{ai} T_{\\dot x,ai} + \\partial(D\\dot x_0 + b)/\\partial x\\, T_x),

  .. math::

     \\begin{bmatrix} M & D^T \\\\ D & 0 \\end{bmatrix}
     \\begin{bmatrix} \\partial\\ddot x \\\\ \\partial\\Lambda \\end{bmatrix} =
     \\begin{bmatrix} (Q_x - \\partial(M\\ddot x_0)/\\partial x - \\partial(D^T\\Lambda_0)/\\partial x) T_x
       + Q_{\\dot x} T_{\\dot x} + [0,\\; Q_u - \\partial(M\\ddot x_0)/\\partial u] \\\\
       (Q_{d,x} - \\partial(D\\ddot x_0)/\\partial x) T_x + Q_{d,\\dot x} T_{\\dot x}
       + [0,\\; Q_{d,u} - \\partial(D\\ddot x_0)/\\partial u] \\end{bmatrix}

  from the kernels of the third procedure (`CompiledModel.linearization_terms`, the terms of
  Eqs. (4.99)-(4.103)); ``A = ∂f/∂X`` and ``B = ∂f/∂u`` are then the rows ``[ẋ_ai, ẍ_ai,
  ẋ_ad]`` of those sensitivities, the matrices of Eq. (4.124) (tested against the prepared
  linearizer), and ``∂Λ/∂z`` comes with them (path constraints on contact forces).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
from numpy.typing import NDArray

from .._util.errors import ConstraintError, ModelError, SolverError

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization import Partition

Array = NDArray[np.float64]

NEWTON_TOL = 1e-12
"""Absolute tolerance of the Newton iteration on ``C(x) = 0`` for the dependent coordinates."""
NEWTON_ITERATIONS = 50
MAX_CORRECTION = 0.1
"""Largest Newton correction of a dependent coordinate from its tangent prediction accepted as
the same branch of ``C(x) = 0``. Along a continuation step the correction is of second order in
the step of ``x_a`` while another root (the frame flipped over, a contact point on the far side
of a wheel) lies a finite distance away: a larger correction halves the step."""
MIN_CONTINUATION_STEP = 2.0 ** -12
"""Smallest fraction of the path from the solved point to the new one (then the point is
refused: a singular constraint block or no root on the branch)."""


@dataclass(frozen=True)
class ReducedPoints:
    """Values (and sensitivities) of the minimal-state dynamics at ``P`` points.

    ``f (P, ns)``, ``x, xd, xdd (P, n)``, ``lam (P, m+l)``; with Jacobians ``Tx, Txd, Txdd
    (P, n, ns+k)``, ``Tlam (P, m+l, ns+k)`` and ``J = ∂f/∂[X, u] (P, ns, ns+k)``.
    """

    f: Array
    x: Array
    xd: Array
    xdd: Array
    lam: Array
    J: Array | None = None
    Tx: Array | None = None
    Txd: Array | None = None
    Txdd: Array | None = None
    Tlam: Array | None = None
    K: Array | None = field(default=None, repr=False)
    """The saddle-point matrices ``[[M, Dᵀ], [D, 0]] (P, n+c, n+c)`` (kept for the sensitivities)."""
    D: Array | None = field(default=None, repr=False)


class ReducedDynamics:
    """Stacked evaluation of ``Ẋ = f(X, u)`` of a compiled model and a partition (see module)."""

    def __init__(self, cm: CompiledModel, partition: Partition | Mapping[str, Any],
                 p: Array, x_guess: Array) -> None:
        from ..linearization.first import partition_indices, velocity_names
        from ..linearization.partition import Partition

        if getattr(cm, "first_order_states", ()):
            raise ModelError(f"model {cm.name!r} has first-order states {list(cm.first_order_states)}; "
                             f"nhcontrol.optimize transcribes mechanical models only")
        if getattr(cm, "constraint_inputs", ()):
            raise ModelError(f"inputs {list(cm.constraint_inputs)} of model {cm.name!r} enter its "
                             f"nonholonomic constraints (their rates enter the dynamics); declare the "
                             f"input as a coordinate driven by a force or torque to optimize it")
        if isinstance(partition, Mapping):
            partition = Partition.from_dict(partition)
        ai, ad, d = partition_indices(cm, partition)
        if len(ad) != cm.l:
            raise ModelError(f"nhcontrol.optimize needs the three-set partition of Eq. (4.96) with "
                             f"l = {cm.l} admissible dependent coordinates, got {len(ad)}")
        self.cm, self.partition, self.p = cm, partition, np.asarray(p, dtype=float)
        self.ai, self.ad, self.d = np.array(ai, int), np.array(ad, int), np.array(d, int)
        self.a = np.concatenate([self.ai, self.ad])
        self.dd = np.concatenate([self.ad, self.d])
        self.n, self.m, self.l = int(cm.n), int(cm.m), int(cm.l)
        self.k = int(cm.ninputs)
        self.g = len(ai)
        self.ns = 2 * self.g + self.l
        self.guess = np.asarray(x_guess, dtype=float)
        self.affine = bool(getattr(cm, "affine_names", ()))
        vel = velocity_names(cm)
        coords = tuple(cm.coordinates)
        self.states = (tuple(coords[i] for i in ai) + tuple(vel[i] for i in ai)
                       + tuple(coords[i] for i in ad))
        self.inputs = tuple(cm.inputs)
        self.coordinates, self.velocities = coords, vel
        self._warm: dict[int, Array] = {}

    # ------------------------------------------------------------------ maps
    def state_of(self, x: Array, xd: Array) -> Array:
        """``X = [x_ai, ẋ_ai, x_ad]`` of full coordinates and velocities ``(…, n)``."""
        x, xd = np.asarray(x, float), np.asarray(xd, float)
        return np.concatenate([x[..., self.ai], xd[..., self.ai], x[..., self.ad]], axis=-1)

    def _u(self, U: Array | None, P: int) -> Array | None:
        if self.k == 0:
            return None
        return np.ascontiguousarray(np.broadcast_to(np.asarray(U, float), (P, self.k)))

    def full(self, X: Array, U: Array | None) -> tuple[Array, Array]:
        """Full ``x, ẋ`` ``(P, n)`` of states ``X (P, ns)``."""
        cm, g, P = self.cm, self.g, X.shape[0]
        u = self._u(U, P)
        x = np.tile(self.guess, (P, 1))
        x[:, self.ai] = X[:, :g]
        x[:, self.ad] = X[:, 2 * g:]
        if self.m:
            warm = self._warm.get(P)
            if warm is None:                     # first evaluation: continuation point by point
                self._sequential(x, u)
            elif not self._continue(warm, x, u):   # from the last solution at these points
                self._sequential(x, u)             # (IPOPT's trial points are near the last ones)
            self._warm[P] = x.copy()
        xd = np.zeros((P, self.n))
        xd[:, self.ai] = X[:, g:2 * g]
        if self.m + self.l:             # (no constraint Jacobian to evaluate without constraints)
            D = np.asarray(cm.D(x, u, self.p), float).reshape(P, self.m + self.l, self.n)
            rhs = D[:, :, self.ai] @ X[:, g:2 * g, None]
            if self.affine:
                rhs = rhs + np.asarray(cm.b(x, u, self.p), float).reshape(P, -1, 1)
            xd[:, self.dd] = -np.linalg.solve(D[:, :, self.dd], rhs)[..., 0]
        return x, xd

    def _predict(self, solved: Array, x: Array, u: Array | None) -> Array | None:
        """Tangent prediction ``x̄_d − C_{x,d}⁻¹ C_{x,a} (x_a − x̄_a)`` of ``x_d`` at the points
        ``x`` (their ``x_a``) off solved points ``x̄`` ``(P, n)`` (see module); ``None`` where
        ``C_{x,d}`` is singular."""
        P = solved.shape[0]
        Cx = np.asarray(self.cm.Cx(solved, u, self.p), float).reshape(P, self.m, self.n)
        dxa = (x[:, self.a] - solved[:, self.a])[..., None]
        try:
            pred = solved[:, self.d] - np.linalg.solve(Cx[:, :, self.d], Cx[:, :, self.a] @ dxa)[..., 0]
        except np.linalg.LinAlgError:
            return None
        return pred if np.all(np.isfinite(pred)) else None

    def _continue(self, solved: Array, x: Array, u: Array | None) -> bool:
        """``x_d`` at the points ``x`` (in place) by predictor-corrector continuation along the
        straight path in ``x_a`` from the solved points ``x̄`` (derived here): each step
        predicts by the tangent (`_predict`) and corrects by Newton; a step whose correction
        exceeds `MAX_CORRECTION` (another branch of ``C = 0``) or that does not converge is
        halved, down to `MIN_CONTINUATION_STEP`. The whole path in one step is the usual case
        (a wheel's rotation and contact angle enter ``C`` only through their sum, so the tangent
        predicts them exactly however far the wheel turns)."""
        start, cur = solved[:, self.a].copy(), solved.copy()
        s, h = 0.0, 1.0
        while s < 1.0:
            h = min(h, 1.0 - s)
            trial = cur.copy()
            trial[:, self.a] = start + (s + h) * (x[:, self.a] - start)
            pred = self._predict(cur, trial, u)
            ok = pred is not None
            if ok:
                trial[:, self.d] = pred
                ok = (self._newton(trial, u)
                      and float(np.max(np.abs(trial[:, self.d] - pred))) <= MAX_CORRECTION)
            if ok:
                cur, s, h = trial, s + h, 2.0 * h
            else:
                h /= 2.0
                if h < MIN_CONTINUATION_STEP:
                    return False
        x[:, self.d] = cur[:, self.d]
        return True

    def _newton(self, x: Array, u: Array | None) -> bool:
        """Newton on ``C(x) = 0`` for ``x_d`` at all points at once (in place); converged?"""
        cm, P = self.cm, x.shape[0]
        for _ in range(NEWTON_ITERATIONS):
            Cv = np.asarray(cm.C(x, u, self.p), float).reshape(P, self.m)
            if not np.all(np.isfinite(Cv)):
                return False
            Cd = np.asarray(cm.Cx(x, u, self.p), float).reshape(P, self.m, self.n)[:, :, self.d]
            try:
                step = np.linalg.solve(Cd, Cv[..., None])[..., 0]
            except np.linalg.LinAlgError:
                return False
            x[:, self.d] -= step
            if np.max(np.abs(Cv)) <= NEWTON_TOL and np.max(np.abs(step)) <= 1e-13 * (1 + np.max(np.abs(x))):
                return True
            if np.max(np.abs(Cv)) > 1e6:
                return False
        return bool(np.max(np.abs(np.asarray(cm.C(x, u, self.p), float))) <= 1e3 * NEWTON_TOL)

    def _sequential(self, x: Array, u: Array | None) -> None:
        """Point by point, each by continuation (`_continue`) from the solved point nearest in
        ``x_a = [x_ai, x_ad]``, the first from `x_guess` (solved on its own first): the roots
        stay on the branch of `x_guess` (a far Newton start could land on another root of
        ``C = 0``, e.g. the frame flipped over)."""
        g = self.guess[None].copy()
        u0 = None if u is None else u[:1]
        if not self._newton(g, u0):
            self._fail(0)
        solved: list[int] = []
        for j in range(x.shape[0]):
            near = g
            if solved:
                dist = np.sum((x[solved][:, self.a] - x[j, self.a]) ** 2, axis=1)
                near = x[solved[int(np.argmin(dist))]][None]
            xj = x[j:j + 1].copy()
            if not self._continue(near, xj, None if u is None else u[j:j + 1]):
                self._fail(j)
            x[j, self.d] = xj[0, self.d]
            solved.append(j)

    def _fail(self, j: int) -> None:
        raise SolverError(
            f"Newton on the holonomic constraints C(x) = 0 (Eq. (2.109)) for the dependent "
            f"coordinates {[self.coordinates[i] for i in self.d]} found no root on the branch of "
            f"x_guess at point {j} (continuation from the nearest solved point stalled: a singular "
            f"block C_x,d or the branch ends); give bounds on the states, a closer initial guess, "
            f"or an x_guess that satisfies C(x) = 0")

    # ------------------------------------------------------------------ dynamics
    def evaluate(self, X: Array, U: Array | None, *, jac: bool = True,
                 theta: Any = None, values: ReducedPoints | None = None) -> ReducedPoints:
        """``f`` (and its exact Jacobian ``J = [A, B]`` with the sensitivities) at ``P`` points.

        With ``theta`` (a `ParameterTerms`), the sensitivities get ``r`` more columns: the
        derivatives with respect to those parameters (``z = [X, u, θ]``). ``values``: the
        values already evaluated at the same ``X, U`` (``jac=False``), reused for the
        sensitivities."""
        X = np.atleast_2d(np.asarray(X, float))
        u = self._u(U, X.shape[0])
        if values is not None and values.K is not None:
            f, x, xd, xdd, lam = values.f, values.x, values.xd, values.xdd, values.lam
            K, D = values.K, values.D
        else:
            f, x, xd, xdd, lam, K, D = self._values(X, u)
            if not jac:
                return ReducedPoints(f, x, xd, xdd, lam, K=K, D=D)
        return self._sensitivities(X, u, f, x, xd, xdd, lam, K, D, theta)

    def _values(self, X: Array, u: Array | None) -> tuple[Array, ...]:
        """``f, x, ẋ, ẍ, Λ`` and the saddle-point matrices ``K`` and ``D`` at the points."""
        cm = self.cm
        P, n, c = X.shape[0], self.n, self.m + self.l
        x, xd = self.full(X, u)
        dt = cm.dynamics_terms(x, xd, u, self.p)
        M = np.asarray(dt.M, float).reshape(P, n, n)
        D = np.asarray(dt.D, float).reshape(P, c, n)
        K = np.zeros((P, n + c, n + c))
        K[:, :n, :n], K[:, :n, n:], K[:, n:, :n] = M, np.transpose(D, (0, 2, 1)), D
        rhs = np.concatenate([np.asarray(dt.Q, float).reshape(P, n),
                              np.asarray(dt.Qd, float).reshape(P, c)], axis=1)
        try:
            sol = np.linalg.solve(K, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError as exc:
            raise ConstraintError("the saddle-point matrix [[M, Dᵀ], [D, 0]] of Eq. (2.127) is "
                                  "singular at a collocation point") from exc
        xdd, lam = sol[:, :n], sol[:, n:]
        f = np.concatenate([xd[:, self.ai], xdd[:, self.ai], xd[:, self.ad]], axis=1)
        if not np.all(np.isfinite(f)):
            raise ConstraintError("the minimal-state dynamics are not finite at a collocation point "
                                  "(a singular constraint block); bound the states away from it")
        return f, x, xd, xdd, lam, K, D

    def _sensitivities(self, X: Array, u: Array | None, f: Array, x: Array, xd: Array, xdd: Array,
                       lam: Array, K: Array, D: Array, theta: Any) -> ReducedPoints:
        cm = self.cm
        P, n, c, g, k, ns = X.shape[0], self.n, self.m + self.l, self.g, self.k, self.ns
        lt = cm.linearization_terms(x, xd, xdd, lam, u, self.p)

        def term(name: str, r: int, cols: int) -> Array:
            return np.asarray(getattr(lt, name), float).reshape(P, r, cols)

        pt = None if theta is None else theta(x, xd, u, self.p)
        r = 0 if pt is None else len(theta.names)
        nz = ns + k + r
        Tx = np.zeros((P, n, nz))
        Tx[:, self.ai, np.arange(g)] = 1.0
        Tx[:, self.ad, 2 * g + np.arange(self.l)] = 1.0
        if self.m:
            Cx = term("Cx", self.m, n)
            if k and np.any(term("dC_du", self.m, k)):
                raise ModelError(f"inputs of model {cm.name!r} enter its holonomic constraints; "
                                 f"nhcontrol.optimize does not transcribe such models")
            rhs_x = Cx[:, :, self.a] @ Tx[:, self.a, :]
            if r:
                rhs_x[:, :, ns + k:] += pt["C"]
            Tx[:, self.d, :] = -np.linalg.solve(Cx[:, :, self.d], rhs_x)
        Txd = np.zeros((P, n, nz))
        Txd[:, self.ai, g + np.arange(g)] = 1.0
        if c:
            rhs_v = D[:, :, self.ai] @ Txd[:, self.ai, :] + term("dDv_dx", c, n) @ Tx
            if r:   # ∂(D ẋ + b)/∂θ at fixed x, ẋ
                rhs_v[:, :, ns + k:] += np.einsum("pcnr,pn->pcr", pt["D"], xd) + pt["b"]
            Txd[:, self.dd, :] = -np.linalg.solve(D[:, :, self.dd], rhs_v)
        Qx = term("dQ_dx", n, n) - term("dMa_dx", n, n) - term("dDTlam_dx", n, n)
        top = Qx @ Tx + term("dQ_dxd", n, n) @ Txd
        bottom = (term("dQd_dx", c, n) - term("dDa_dx", c, n)) @ Tx + term("dQd_dxd", c, n) @ Txd
        if k:
            top[:, :, ns:ns + k] += term("dQ_du", n, k) - term("dMa_du", n, k)
            bottom[:, :, ns:ns + k] += term("dQd_du", c, k) - term("dDa_du", c, k)
        if r:       # ∂Q/∂θ − ∂(M ẍ)/∂θ − ∂(Dᵀ Λ)/∂θ and ∂Q_d/∂θ − ∂(D ẍ)/∂θ at fixed x, ẋ, ẍ, Λ
            top[:, :, ns + k:] += (pt["Q"] - np.einsum("pijr,pj->pir", pt["M"], xdd)
                                   - np.einsum("pcir,pc->pir", pt["D"], lam))
            bottom[:, :, ns + k:] += pt["Qd"] - np.einsum("pcjr,pj->pcr", pt["D"], xdd)
        S = np.linalg.solve(K, np.concatenate([top, bottom], axis=1))
        Txdd, Tlam = S[:, :n, :], S[:, n:, :]
        J = np.concatenate([Txd[:, self.ai, :], Txdd[:, self.ai, :], Txd[:, self.ad, :]], axis=1)
        return ReducedPoints(f, x, xd, xdd, lam, J, Tx, Txd, Txdd, Tlam, K=K, D=D)
