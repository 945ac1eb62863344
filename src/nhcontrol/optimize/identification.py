"""Output-error parameter identification by collocation ([`identify()`][nhcontrol.optimize.identify]).

The states at the samples (and Hermite–Simpson midpoints) and the parameters ``θ`` are the
variables; the collocation defects of ``Ẋ = f(X, u, θ)`` are the constraints; the objective is
``½ Σ_j Σ_o ((y_o(t_j) − ỹ_jo) / σ_o)²``. Derivatives are exact: ``∂f/∂[X, u]`` from the
kernels of the third procedure, ``∂f/∂θ`` from the symbolic derivatives of the model terms
(`_parameter_terms`). The covariance is the Gauss–Newton one: the sensitivities
``S = dỹ/dφ`` of the outputs with respect to ``φ = [θ, free initial states]`` through the
collocation equations (implicit-function theorem on the defects), ``cov = s² (SᵀS)⁻¹`` with
the residual variance ``s² = eᵀe / (Nq − dim φ)`` of the weighted residuals (derived in
docs/theory/optimize.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import NhcontrolError, OptimizationError
from . import _spec
from ._ipopt import NLPStats
from ._parameter_terms import parameter_terms
from ._reduced import ReducedDynamics
from ._transcription import Transcription
from .trajectory import METHODS, _partition, _ro

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization import Partition

__all__ = ["identify", "IdentificationResult"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class IdentificationResult:
    """Estimated parameters of `identify`.

    Attributes
    ----------
    names : tuple of str
        Parameters estimated.
    estimates : dict
        ``{name: value}``.
    std : dict
        ``{name: standard deviation}`` (square roots of the diagonal of `covariance`).
    covariance : (r, r) ndarray
        Gauss–Newton covariance of the parameters (the initial states estimated with them are
        marginalised).
    residuals : (N, q) ndarray
        Fit residuals ``y_model − y`` at the samples.
    residual_std : (q,) ndarray
        Root mean square of the residuals per output.
    t : (N,) ndarray
    x, xd : (N, n) ndarray
        Full coordinates and velocities of the fitted motion.
    X : (N, ns) ndarray
        Minimal states of the fitted motion.
    objective : float
    stats : NLPStats
    """

    names: tuple[str, ...]
    estimates: dict
    std: dict
    covariance: Array
    residuals: Array
    residual_std: Array
    t: Array
    x: Array
    xd: Array
    X: Array
    outputs: tuple[str, ...]
    objective: float
    stats: NLPStats = field(repr=False)

    @property
    def success(self) -> bool:
        return self.stats.success

    def z_scores(self, truth: Mapping[str, float]) -> dict:
        """``(estimate − truth) / std`` per parameter."""
        return {k: (self.estimates[k] - float(truth[k])) / self.std[k] for k in self.names}

    def __repr__(self) -> str:
        est = ", ".join(f"{k}={self.estimates[k]:.6g}±{self.std[k]:.2g}" for k in self.names)
        return (f"IdentificationResult({est}; N={self.t.size}, outputs={list(self.outputs)}, "
                f"status={self.stats.status}, iterations={self.stats.iterations})")


def identify(cm: CompiledModel, t: ArrayLike, u: ArrayLike | None, y: ArrayLike, *,
             outputs: Sequence[str], parameters: Mapping[str, Any],
             x0: ArrayLike | None = None, xd0: ArrayLike | None = None,
             noise_std: float | ArrayLike | None = None,
             partition: Partition | Mapping[str, Any] | None = None,
             p: ArrayLike | Mapping[str, float] | None = None,
             method: Literal["hermite-simpson", "trapezoidal", "backward-euler"] = "hermite-simpson",
             x_guess: ArrayLike | None = None, tol: float = 1e-10, max_iterations: int = 50) -> IdentificationResult:
    """Estimate parameters of a model from measured outputs (output error, by collocation).

    Parameters
    ----------
    cm : CompiledModel
        The model (its symbolic model must be known in this process: compiled here or loaded
        by a catalogue ``model()`` function).
    t : (N,) array_like
        Uniformly spaced sample times [s].
    u : (N, k) array_like or None
        Inputs at the samples (linear between samples).
    y : (N, q) array_like
        Measurements of `outputs`.
    outputs : sequence of str
        Coordinate, velocity or declared-output names (``cm.outputs``) measured.
    parameters : mapping
        ``{name: initial guess}`` or ``{name: (guess, lower, upper)}``.
    x0, xd0 : (n,) array_like, optional
        Known initial coordinates and velocities; without them the initial minimal state is
        estimated with the parameters.
    noise_std : float or (q,) array_like, optional
        Standard deviation of the measurement noise per output (weights ``1/σ``; default 1).
    partition : Partition or mapping
    p : parameters of the model that are not estimated (default the model's).
    method : {"hermite-simpson", "trapezoidal", "backward-euler"}
    x_guess : (n,) array_like, optional
        Start of the Newton iteration for dependent coordinates (default `x0` or zeros).

    Returns
    -------
    IdentificationResult

    Raises
    ------
    OptimizationError
        Unknown names, non-uniform times, shapes, missing cyipopt.
    """
    import time

    t_start = time.perf_counter()
    if method not in METHODS:
        raise OptimizationError(f"method must be one of {list(METHODS)}, got {method!r}")
    t = np.asarray(t, dtype=float).reshape(-1)
    N = t.size
    if N < 3 or not np.all(np.isfinite(t)):
        raise OptimizationError(f"t must hold at least 3 finite sample times, got {N}")
    h = np.diff(t)
    if np.any(h <= 0) or np.max(np.abs(h - h.mean())) > 1e-9 * max(1.0, abs(t[-1])):
        raise OptimizationError("t must be uniformly spaced and increasing (the collocation grid)")
    names, theta0, lo, hi = _parameter_spec(cm, parameters)
    pvec = _spec.parameter_vector(cm, p)
    pidx = [list(cm.parameters).index(nm) for nm in names]
    part = _partition(cm, partition)
    xg = np.asarray(x0 if x_guess is None and x0 is not None else
                    (np.zeros(cm.n) if x_guess is None else x_guess), dtype=float).reshape(-1)
    rd = ReducedDynamics(cm, part, pvec, xg)
    tr = Transcription(rd, N, method, False, float(t[-1] - t[0]))
    U = _inputs(rd, u, N)
    Y, sig = _measurements(y, N, len(outputs), noise_std)
    obs = _Observations(cm, rd, outputs)
    theta = parameter_terms(cm, names)
    X0 = None if x0 is None else rd.state_of(np.asarray(x0, float), np.asarray(
        xd0 if xd0 is not None else np.zeros(cm.n), float))
    oe = _OutputError(rd, tr, theta, pidx, pvec, obs, Y, sig, U, X0 is None)
    X = oe.start(X0, theta0, Y, t)
    X, th, e, S, pts, iterations, converged = oe.fit(X, theta0, lo, hi, tol, max_iterations)
    dof = max(S.shape[0] - S.shape[1], 1)
    s2 = float(np.sum(e ** 2)) / dof
    cov = (s2 * np.linalg.pinv(S.T @ S))[:len(names), :len(names)]
    std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    residuals = e * sig
    stats = NLPStats(status=0 if converged else -1,
                     message="converged" if converged else "stopped before convergence",
                     iterations=iterations, time=time.perf_counter() - t_start,
                     variables=int(tr.P * tr.ns + len(names)), constraints=int(tr.ndef),
                     jacobian_nonzeros=int(oe.rows.size))
    return IdentificationResult(
        names=tuple(names), estimates={k: float(v) for k, v in zip(names, th)},
        std={k: float(v) for k, v in zip(names, std)}, covariance=_ro(cov),
        residuals=_ro(residuals), residual_std=_ro(np.sqrt(np.mean(residuals ** 2, axis=0))),
        t=_ro(t), x=_ro(pts.x[:N]), xd=_ro(pts.xd[:N]), X=_ro(X[:N]), outputs=tuple(outputs),
        objective=0.5 * float(np.sum(e ** 2)), stats=stats)


def _parameter_spec(cm: CompiledModel, parameters: Mapping[str, Any]) -> tuple[list[str], Array, Array, Array]:
    if not isinstance(parameters, Mapping) or not parameters:
        raise OptimizationError("parameters must be a non-empty mapping {name: guess} or "
                                "{name: (guess, lower, upper)}")
    bad = sorted(set(parameters) - set(cm.parameters))
    if bad:
        raise OptimizationError(f"parameters names unknown {bad}; the model has {list(cm.parameters)}")
    names, g, lo, hi = [], [], [], []
    for nm, spec in parameters.items():
        if np.ndim(spec) == 0:
            guess, a, b = float(spec), -np.inf, np.inf
        else:
            try:
                guess, a, b = spec
            except (TypeError, ValueError):
                raise OptimizationError(f"parameters[{nm!r}] must be a guess or (guess, lower, upper), "
                                        f"got {spec!r}") from None
            a = -np.inf if a is None else float(a)
            b = np.inf if b is None else float(b)
        if not (np.isfinite(guess) and a <= guess <= b):
            raise OptimizationError(f"parameters[{nm!r}]: the guess {guess} must be finite and inside "
                                    f"its bounds ({a}, {b})")
        names.append(nm)
        g.append(float(guess))
        lo.append(a)
        hi.append(b)
    return names, np.array(g), np.array(lo), np.array(hi)


def _inputs(rd: ReducedDynamics, u: Any, N: int) -> Array:
    if rd.k == 0:
        return np.zeros((N, 0))
    if u is None:
        raise OptimizationError(f"the model has inputs {list(rd.inputs)}: give u (N, {rd.k})")
    U = np.asarray(u, dtype=float).reshape(N, -1)
    if U.shape != (N, rd.k) or not np.all(np.isfinite(U)):
        raise OptimizationError(f"u must be ({N}, {rd.k}) finite inputs {list(rd.inputs)}, got {U.shape}")
    return U


def _measurements(y: Any, N: int, q: int, noise_std: Any) -> tuple[Array, Array]:
    Y = np.asarray(y, dtype=float).reshape(N, -1)
    if Y.shape != (N, q) or not np.all(np.isfinite(Y)):
        raise OptimizationError(f"y must be ({N}, {q}) finite measurements of the outputs, got {Y.shape}")
    sig = np.ones(q) if noise_std is None else np.broadcast_to(np.asarray(noise_std, float), (q,)).copy()
    if not np.all((sig > 0) & np.isfinite(sig)):
        raise OptimizationError(f"noise_std must be positive and finite, got {sig.tolist()}")
    return Y, sig


class _Observations:
    """``ỹ(x, ẋ, u)`` of coordinate, velocity and declared-output names and its Jacobian."""

    def __init__(self, cm: CompiledModel, rd: ReducedDynamics, outputs: Sequence[str]) -> None:
        declared = tuple(getattr(cm, "outputs", ()) or ())
        self.items = []
        for nm in outputs:
            if nm in rd.coordinates:
                self.items.append(("x", rd.coordinates.index(nm)))
            elif nm in rd.velocities:
                self.items.append(("xd", rd.velocities.index(nm)))
            elif nm in declared:
                self.items.append(("h", declared.index(nm)))
            else:
                raise OptimizationError(f"outputs names {nm!r}, which is no coordinate, velocity or "
                                        f"declared output of {cm.name!r} (coordinates "
                                        f"{list(rd.coordinates)}, outputs {list(declared)})")
        self.cm, self.rd = cm, rd

    def values(self, pts: Any, U: Array, p: Array, jac: bool) -> tuple[Array, Array | None]:
        N = U.shape[0]
        ot = None
        if any(kind == "h" for kind, _ in self.items):
            ot = self.cm.output_terms(pts.x[:N], pts.xd[:N], U if self.rd.k else None, p)
        vals, jacs = [], []
        for kind, i in self.items:
            if kind == "x":
                vals.append(pts.x[:N, i])
                jacs.append(pts.Tx[:N, i] if jac else None)
            elif kind == "xd":
                vals.append(pts.xd[:N, i])
                jacs.append(pts.Txd[:N, i] if jac else None)
            else:
                q, n = len(self.cm.outputs), self.rd.n
                vals.append(np.asarray(ot.h, float).reshape(N, q)[:, i])
                if jac:
                    hx = np.asarray(ot.dh_dx, float).reshape(N, q, n)[:, i]
                    hxd = np.asarray(ot.dh_dxd, float).reshape(N, q, n)[:, i]
                    jacs.append(np.einsum("pn,pnz->pz", hx, pts.Tx[:N]) + np.einsum("pn,pnz->pz", hxd, pts.Txd[:N]))
        return np.stack(vals, axis=1), (np.stack(jacs, axis=1) if jac else None)


class _OutputError:
    """Collocation states of given parameters (Newton on the defects, sparse LU), their exact
    sensitivities (implicit-function theorem) and the Levenberg–Marquardt iteration."""

    def __init__(self, rd: ReducedDynamics, tr: Transcription, theta: Any, pidx: list[int],
                 pvec: Array, obs: _Observations, Y: Array, sig: Array, U: Array,
                 free_x0: bool) -> None:
        self.rd, self.tr, self.theta, self.pidx, self.p0 = rd, tr, theta, pidx, pvec.copy()
        self.obs, self.Y, self.sig, self.U = obs, Y, sig, U
        self.r = len(pidx)
        self.free_x0 = free_x0
        ns, nz, N, P = tr.ns, tr.nz, tr.N, tr.P
        Um = 0.5 * (U[:-1] + U[1:])
        self.Uall = np.concatenate([U, Um]) if tr.hs else U
        xcols = (np.arange(P)[:, None] * nz + np.arange(ns)[None, :]).ravel()
        self.x0cols, self.keep = xcols[:ns], xcols[ns:]
        # θ blocks of the defect Jacobian: rows of interval i, r columns after the grid variables
        rows, cols = [], []
        for set_ in range(2 if tr.hs else 1):
            for i in range(N - 1):
                rr, cc = np.meshgrid((set_ * (N - 1) + i) * ns + np.arange(ns),
                                     tr.nvar + np.arange(self.r), indexing="ij")
                rows.append(rr.ravel())
                cols.append(cc.ravel())
        self.rows = np.concatenate([tr.rows] + rows).astype(np.int64)
        self.cols = np.concatenate([tr.cols] + cols).astype(np.int64)
        self.newton_iterations = 0

    def _z(self, X: Array) -> Array:
        W = np.concatenate([X, self.Uall], axis=1)
        return W.ravel()

    def _params(self, th: Array) -> Array:
        p = self.p0.copy()
        p[self.pidx] = th
        return p

    def _defects(self, X: Array, th: Array, jac: bool) -> tuple[Array, Any, Any]:
        from scipy.sparse import csc_matrix

        tr, N, nz = self.tr, self.tr.N, self.tr.nz
        self.rd.p = self._params(th)
        pts = self.rd.evaluate(X, self.Uall if self.rd.k else None, jac=jac,
                               theta=self.theta if jac else None)
        c = tr.defects(X, pts.f, tr.T_fixed)
        if not jac:
            return c, None, pts
        base = type(pts)(pts.f, pts.x, pts.xd, pts.xdd, pts.lam, pts.J[:, :, :nz])
        vals = [tr.defect_jacobian(base, tr.T_fixed)]
        Jt = pts.J[:, :, nz:]
        h = tr.T_fixed / (N - 1)
        if tr.hs:
            vals += [(-h / 6 * (Jt[:N - 1] + 4 * Jt[N:] + Jt[1:N])).ravel(),
                     (-h / 8 * (Jt[:N - 1] - Jt[1:N])).ravel()]
        elif tr.method == "backward-euler":
            vals.append((-h * Jt[1:N]).ravel())
        else:
            vals.append((-h / 2 * (Jt[:N - 1] + Jt[1:N])).ravel())
        A = csc_matrix((np.concatenate(vals), (self.rows, self.cols)), shape=(tr.ndef, tr.nvar + self.r))
        return c, A, pts

    def states(self, X: Array, th: Array) -> tuple[Array, Any, Any]:
        """Newton on the defects for the states after ``X_0``; returns ``(X, A, points)``."""
        from scipy.sparse.linalg import splu

        ns = self.tr.ns
        Xf = X.ravel().copy()
        for _ in range(30):
            Xm = Xf.reshape(-1, ns)
            try:
                c, A, pts = self._defects(Xm, th, True)
            except NhcontrolError as exc:
                raise OptimizationError(
                    f"the collocation states left the model's domain for the parameters "
                    f"{dict(zip(self.theta.names, th.tolist()))} ({exc}); start closer to the "
                    f"truth, bound the parameters, or give x0/xd0") from exc
            self.newton_iterations += 1
            if np.max(np.abs(c)) <= 1e-11 * (1.0 + np.max(np.abs(Xm))):
                return Xm, A, pts
            lu = splu(A[:, self.keep].tocsc())
            step = lu.solve(-c)
            if not np.all(np.isfinite(step)):
                break
            Xf[ns:] += step
            if np.max(np.abs(step)) <= 1e-13 * (1.0 + np.max(np.abs(Xf))):
                c, A, pts = self._defects(Xf.reshape(-1, ns), th, True)
                return Xf.reshape(-1, ns), A, pts
        c, A, pts = self._defects(Xf.reshape(-1, ns), th, True)
        if np.max(np.abs(c)) > 1e-8 * (1.0 + np.max(np.abs(Xf))):
            raise OptimizationError(
                f"the collocation equations of the model did not converge for the parameters "
                f"{dict(zip(self.theta.names, th.tolist()))} (defect {np.max(np.abs(c)):.3g}); "
                f"start closer to the truth or bound the parameters")
        return Xf.reshape(-1, ns), A, pts

    def residuals(self, X: Array, th: Array, A: Any, pts: Any) -> tuple[Array, Array]:
        """Weighted residuals ``e (N, q)`` and ``S = de/dφ (N·q, dim φ)``, ``φ = [θ, X_0]``."""
        from scipy.sparse.linalg import splu

        tr, ns, nz, N = self.tr, self.tr.ns, self.tr.nz, self.tr.N
        yv, yj = self.obs.values(pts, self.U, self.rd.p, True)
        e = (yv - self.Y) / self.sig
        ej = yj / self.sig[None, :, None]
        pcols = tr.nvar + np.arange(self.r)
        phi = np.concatenate([pcols, self.x0cols]) if self.free_x0 else pcols
        dX = splu(A[:, self.keep].tocsc()).solve(-A[:, phi].toarray())
        self.dX = dX                      # d[X_1 …]/dφ: predicts the states of a trial step
        sens = np.zeros((tr.nvar + self.r, phi.size))
        sens[self.keep] = dX
        sens[phi, np.arange(phi.size)] = 1.0
        node_x = (np.arange(N)[:, None] * nz + np.arange(ns)[None, :])      # (N, ns)
        S = (np.einsum("pqs,psf->pqf", ej[:, :, :ns], sens[node_x])
             + np.einsum("pqr,rf->pqf", ej[:, :, nz:], sens[pcols]))
        return e, S.reshape(N * e.shape[1], phi.size)

    def fit(self, X: Array, th: Array, lo: Array, hi: Array, tol: float, max_iterations: int
            ) -> tuple[Array, Array, Array, Array, Any, int, bool]:
        """Levenberg–Marquardt with Marquardt's diagonal scaling on ``φ = [θ, X_0]``."""
        X, A, pts = self.states(X, th)
        e, S = self.residuals(X, th, A, pts)
        cost = 0.5 * float(np.sum(e ** 2))
        mu = 1e-3
        ns = self.tr.ns
        for it in range(1, max_iterations + 1):
            dX_dphi = self.dX
            F = S.T @ S
            g = S.T @ e.ravel()
            d = np.diag(F).copy()
            d[d <= 0] = 1.0
            accepted = False
            for _ in range(20):
                step = np.linalg.solve(F + mu * np.diag(d), -g)
                th_new = np.clip(th + step[:self.r], lo, hi)
                X_try = X.copy()
                if self.free_x0:
                    X_try[0] += step[self.r:]
                dphi = step.copy()
                dphi[:self.r] = th_new - th
                X_try.reshape(-1)[ns:] += dX_dphi @ dphi       # first-order prediction
                try:
                    Xn, An, pn = self.states(X_try, th_new)
                    en, Sn = self.residuals(Xn, th_new, An, pn)
                    cn = 0.5 * float(np.sum(en ** 2))
                except (NhcontrolError, np.linalg.LinAlgError, RuntimeError):
                    cn = np.inf     # the trial left the model's domain: a shorter step
                if cn <= cost:
                    accepted = True
                    break
                mu *= 10.0
            if not accepted:
                return X, th, e, S, pts, it, False
            rel = np.max(np.abs(th_new - th) / np.maximum(np.abs(th), 1e-300))
            done = (cost - cn) <= tol * max(cost, 1e-300) and rel <= np.sqrt(tol)
            X, th, e, S, pts, cost = Xn, th_new, en, Sn, pn, cn
            mu = max(mu / 10.0, 1e-12)
            if done:
                return X, th, e, S, pts, it, True
        return X, th, e, S, pts, max_iterations, False

    def start(self, X0: Array | None, th0: Array, Y: Array, t: Array) -> Array:
        """States of the first iterate: integration of the model from ``X_0`` (given, or from
        the measured states) with the initial parameters."""
        tr, rd = self.tr, self.rd
        X = np.zeros((tr.P, tr.ns))
        if X0 is None:
            X0 = np.zeros(tr.ns)
            for j, (kind, i) in enumerate(self.obs.items):
                if kind in ("x", "xd"):
                    name = (rd.coordinates if kind == "x" else rd.velocities)[i]
                    if name in rd.states:
                        X0[rd.states.index(name)] = Y[0, j]
        rd.p = self._params(th0)
        # classical Runge-Kutta on the half-steps (nodes and midpoints), inputs linear in time
        h = tr.T_fixed / (tr.N - 1) / (2 if tr.hs else 1)
        steps = (tr.N - 1) * (2 if tr.hs else 1)
        traj = np.zeros((steps + 1, tr.ns))
        traj[0] = X0
        tt = t[0] + h * np.arange(steps + 1)

        def f(time: float, Xs: Array) -> Array:
            uu = np.array([np.interp(time, t, self.U[:, j]) for j in range(rd.k)])
            return rd.evaluate(Xs[None], uu[None] if rd.k else None, jac=False).f[0]

        try:
            for i in range(steps):
                a, ti = traj[i], tt[i]
                k1 = f(ti, a)
                k2 = f(ti + h / 2, a + h / 2 * k1)
                k3 = f(ti + h / 2, a + h / 2 * k2)
                k4 = f(ti + h, a + h * k3)
                traj[i + 1] = a + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            if tr.hs:
                X[:tr.N], X[tr.N:] = traj[0::2], traj[1::2]
            else:
                X[:] = traj
        except (NhcontrolError, np.linalg.LinAlgError):
            X[:] = X0
        X[0] = X0
        return X
