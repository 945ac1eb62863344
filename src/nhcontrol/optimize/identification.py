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

from .._util.errors import OptimizationError
from . import _spec
from ._ipopt import NLPStats, require_cyipopt, solve_nlp
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
             method: Literal["hermite-simpson", "trapezoidal"] = "hermite-simpson",
             x_guess: ArrayLike | None = None, tol: float = 1e-10, max_iterations: int = 500,
             ipopt_options: Mapping[str, Any] | None = None) -> IdentificationResult:
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
    method : {"hermite-simpson", "trapezoidal"}
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
    require_cyipopt()
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
    X0fixed = None if x0 is None else rd.state_of(np.asarray(x0, float), np.asarray(
        xd0 if xd0 is not None else np.zeros(cm.n), float))
    problem = _IdentificationNLP(rd, tr, theta, pidx, pvec, obs, Y, sig, U)
    z0, lb, ub = problem.start(theta0, lo, hi, X0fixed, Y, t)
    cl = cu = np.zeros(tr.ndef)
    z, J, stats = solve_nlp(problem, z0, lb, ub, cl, cu, tol=tol, max_iterations=max_iterations,
                            options=ipopt_options)
    return problem.result(z, J, stats, names, X0fixed is None, t, tuple(outputs))


def _parameter_spec(cm: Any, parameters: Mapping[str, Any]) -> tuple[list[str], Array, Array, Array]:
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

    def __init__(self, cm: Any, rd: ReducedDynamics, outputs: Sequence[str]) -> None:
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


class _IdentificationNLP:
    def __init__(self, rd: ReducedDynamics, tr: Transcription, theta: Any, pidx: list[int],
                 pvec: Array, obs: _Observations, Y: Array, sig: Array, U: Array) -> None:
        self.rd, self.tr, self.theta, self.pidx, self.p0 = rd, tr, theta, pidx, pvec.copy()
        self.obs, self.Y, self.sig, self.U = obs, Y, sig, U
        self.r = len(pidx)
        self.nbase = tr.nvar
        self._key: bytes | None = None
        rows = [tr.rows, ]
        cols = [tr.cols, ]
        ns, N = tr.ns, tr.N
        for set_ in range(2 if tr.hs else 1):
            for i in range(N - 1):
                row0 = (set_ * (N - 1) + i) * ns
                rr, cc = np.meshgrid(row0 + np.arange(ns), self.nbase + np.arange(self.r), indexing="ij")
                rows.append(rr.ravel())
                cols.append(cc.ravel())
        self._rows = np.concatenate(rows).astype(np.int64)
        self._cols = np.concatenate(cols).astype(np.int64)

    # ------------------------------------------------------------------ evaluation
    def _split(self, z: Array) -> tuple[Array, Array, Array]:
        X, U, _ = self.tr.split(z[:self.nbase])
        p = self.p0.copy()
        p[self.pidx] = z[self.nbase:]
        return X, U, p

    def _eval(self, z: Array) -> Any:
        key = z.tobytes()
        if key != self._key:
            X, U, p = self._split(z)
            self.rd.p = p
            self._pts = self.rd.evaluate(X, U, theta=self.theta)
            self._key = key
        return self._pts

    def _residuals(self, z: Array, jac: bool) -> tuple[Array, Array | None]:
        pts = self._eval(z)
        N = self.tr.N
        yv, yj = self.obs.values(pts, self.U, self.rd.p, jac)
        e = (yv - self.Y) / self.sig
        return e, (None if yj is None else yj / self.sig[None, :, None])

    def objective(self, z: Array) -> float:
        e, _ = self._residuals(z, False)
        return 0.5 * float(np.sum(e ** 2))

    def gradient(self, z: Array) -> Array:
        e, ej = self._residuals(z, True)
        tr, N = self.tr, self.tr.N
        g = np.zeros_like(z)
        gz = np.einsum("pq,pqz->pz", e, ej)       # (N, ns + k + r)
        G = g[:tr.P * tr.nz].reshape(tr.P, tr.nz)
        G[:N, :] = gz[:, :tr.nz]
        g[self.nbase:] = gz[:, tr.nz:].sum(axis=0)
        return g

    def constraints(self, z: Array) -> Array:
        pts = self._eval(z)
        X, _, _ = self._split(z)
        return self.tr.defects(X, pts.f, self.tr.T_fixed)

    def jacobianstructure(self) -> tuple[Array, Array]:
        return self._rows, self._cols

    def jacobian(self, z: Array) -> Array:
        pts = self._eval(z)
        tr, N, ns, nz = self.tr, self.tr.N, self.tr.ns, self.tr.nz
        base = type(pts)(pts.f, pts.x, pts.xd, pts.xdd, pts.lam, pts.J[:, :, :nz])
        vals = [tr.defect_jacobian(base, tr.T_fixed)]
        Jt = pts.J[:, :, nz:]
        h = tr.T_fixed / (N - 1)
        if tr.hs:
            blocks = [-h / 6 * (Jt[:N - 1] + 4 * Jt[N:] + Jt[1:N]), -h / 8 * (Jt[:N - 1] - Jt[1:N])]
        else:
            blocks = [-h / 2 * (Jt[:N - 1] + Jt[1:N])]
        for b in blocks:
            vals.append(b.ravel())
        return np.concatenate(vals)

    # ------------------------------------------------------------------ start and result
    def start(self, theta0: Array, lo: Array, hi: Array, X0: Array | None, Y: Array,
              t: Array) -> tuple[Array, Array, Array]:
        from scipy.integrate import solve_ivp

        tr, rd = self.tr, self.rd
        z = np.zeros(self.nbase + self.r)
        lb, ub = np.full(z.size, -np.inf), np.full(z.size, np.inf)
        W = z[:tr.P * tr.nz].reshape(tr.P, tr.nz)
        LB = lb[:tr.P * tr.nz].reshape(tr.P, tr.nz)
        UB = ub[:tr.P * tr.nz].reshape(tr.P, tr.nz)
        Um = 0.5 * (self.U[:-1] + self.U[1:])
        Uall = np.concatenate([self.U, Um]) if tr.hs else self.U
        W[:, tr.ns:] = Uall
        LB[:, tr.ns:] = UB[:, tr.ns:] = Uall
        z[self.nbase:] = theta0
        lb[self.nbase:], ub[self.nbase:] = lo, hi
        ts = tr.point_times(tr.T_fixed) + t[0]
        if X0 is not None:
            p = self.p0.copy()
            p[self.pidx] = theta0
            rd.p = p

            def rhs(tt: float, X: Array) -> Array:
                uu = np.array([np.interp(tt, t, self.U[:, j]) for j in range(rd.k)])
                return rd.evaluate(X[None], uu[None] if rd.k else None, jac=False).f[0]

            sol = solve_ivp(rhs, (t[0], t[-1]), X0, t_eval=np.sort(ts), rtol=1e-8, atol=1e-10)
            if sol.success and sol.y.shape[1] == ts.size:
                order = np.argsort(ts, kind="stable")
                W[order, :tr.ns] = sol.y.T
            else:
                W[:, :tr.ns] = X0
            LB[0, :tr.ns] = UB[0, :tr.ns] = X0
        else:
            for j, (kind, i) in enumerate(self.obs.items):
                name = (rd.coordinates if kind == "x" else rd.velocities)[i] if kind != "h" else None
                if name in rd.states:
                    W[:, rd.states.index(name)] = np.interp(ts, t, Y[:, j])
        return z, lb, ub

    def result(self, z: Array, J: float, stats: NLPStats, names: list[str], free_x0: bool,
               t: Array, outputs: tuple[str, ...]) -> IdentificationResult:
        from scipy.sparse import csc_matrix
        from scipy.sparse.linalg import splu

        tr, ns, nz, N = self.tr, self.tr.ns, self.tr.nz, self.tr.N
        e, ej = self._residuals(z, True)
        pts = self._pts
        jac = self.jacobian(z)
        A = csc_matrix((jac, (self._rows, self._cols)), shape=(tr.ndef, z.size))
        xcols = (np.arange(tr.P)[:, None] * nz + np.arange(ns)[None, :]).ravel()
        phi_x = xcols[:ns] if free_x0 else np.zeros(0, int)
        keep = xcols[ns:]
        pcols = np.arange(self.nbase, z.size)
        rhs = -A[:, np.concatenate([pcols, phi_x])].toarray()
        dX = splu(csc_matrix(A[:, keep])).solve(rhs)            # (len(keep), r + nphi_x)
        sens = np.zeros((z.size, rhs.shape[1]))
        sens[keep] = dX
        sens[pcols, np.arange(self.r)] = 1.0
        if free_x0:
            sens[phi_x, self.r + np.arange(ns)] = 1.0
        # dỹ/dφ at the nodes: through [X_j, θ] (inputs fixed)
        S = np.zeros((N, e.shape[1], rhs.shape[1]))
        for j in range(N):
            cols = np.concatenate([j * nz + np.arange(ns), pcols])
            Jj = np.concatenate([ej[j, :, :ns], ej[j, :, nz:]], axis=1)
            S[j] = Jj @ sens[cols]
        S2 = S.reshape(-1, rhs.shape[1])
        dof = max(S2.shape[0] - S2.shape[1], 1)
        s2 = float(np.sum(e ** 2)) / dof
        F = S2.T @ S2
        cov_all = s2 * np.linalg.pinv(F)
        cov = cov_all[:self.r, :self.r]
        std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        est = z[self.nbase:]
        residuals = e * self.sig
        return IdentificationResult(
            names=tuple(names), estimates={k: float(v) for k, v in zip(names, est)},
            std={k: float(s) for k, s in zip(names, std)}, covariance=_ro(cov),
            residuals=_ro(residuals), residual_std=_ro(np.sqrt(np.mean(residuals ** 2, axis=0))),
            t=_ro(t), x=_ro(pts.x[:N]), xd=_ro(pts.xd[:N]), X=_ro(self.tr.split(z[:self.nbase])[0][:N]),
            outputs=outputs, objective=J, stats=stats)
