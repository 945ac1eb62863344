"""Optimal trajectories by direct collocation on the minimal-state dynamics
([`optimal_trajectory()`][nhcontrol.optimize.optimal_trajectory]).

The transcription, the exact sparse Jacobian through the kernels of the third procedure and the
admissibility of the result are derived in docs/theory/optimize.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import NhcontrolError, OptimizationError
from . import _spec
from ._ipopt import NLPStats, require_cyipopt, solve_nlp
from ._paths import PathConstraint, PathRows
from ._reduced import ReducedDynamics
from ._transcription import Evaluations, Transcription

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization import Partition
    from nhcontrol.reference import Reference

__all__ = ["optimal_trajectory", "TrajectorySolution", "METHODS"]

Array = NDArray[np.float64]
METHODS = ("hermite-simpson", "trapezoidal", "backward-euler")
"""Collocation schemes: Hermite–Simpson (separated form, 4th order), trapezoidal (2nd order) and
backward Euler (1st order; opty's default scheme, for like-for-like comparisons)."""


def _ro(a: Any) -> Array:
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class TrajectorySolution:
    """An optimal trajectory of a compiled model (result of `optimal_trajectory`).

    Attributes
    ----------
    status : int
        IPOPT's status (0 solved, 1 solved to an acceptable level; see `success`).
    message : str
    objective : float
    t : (N,) ndarray
        Node times [s] (``t[-1]`` the optimal final time when it is free).
    x, xd, xdd : (N, n) ndarray
        Full coordinates, velocities and accelerations at the nodes (exact dynamics at each node).
    lam : (N, m+l) ndarray
        Multipliers (constraint forces) at the nodes.
    u : (N, k) ndarray
    X : (N, ns) ndarray
        Minimal states ``[x_ai, ẋ_ai, x_ad]`` at the nodes.
    states, inputs : tuple of str
    method : str
    stats : NLPStats
        Iterations, solve time [s] and problem sizes.
    setup_time : float
        Time [s] to build the problem (no code generation: the kernels are the model's).
    reference : Reference
        Admissible reference through the nodes (and Hermite–Simpson midpoints): ``x0, ẋ0, ẍ0,
        Λ0, u0`` from the exact dynamics at every sample (checked by `Reference.from_samples`),
        for `nhcontrol.linearize`, `MPCController`, `NMPCController`.
    """

    status: int
    message: str
    objective: float
    t: Array
    x: Array
    xd: Array
    xdd: Array
    lam: Array
    u: Array
    X: Array
    states: tuple[str, ...]
    inputs: tuple[str, ...]
    method: str
    stats: NLPStats
    setup_time: float
    reference: Reference = field(repr=False)
    partition: Partition | None = field(repr=False, default=None)
    samples: dict = field(repr=False, default_factory=dict)

    @property
    def success(self) -> bool:
        return self.status in (0, 1)

    @property
    def iterations(self) -> int:
        return self.stats.iterations

    @property
    def solve_time(self) -> float:
        return self.stats.time

    @property
    def t_final(self) -> float:
        return float(self.t[-1])

    def __repr__(self) -> str:
        return (f"TrajectorySolution({self.method}, N={self.t.size}, T={self.t_final:.4g} s, "
                f"objective={self.objective:.6g}, status={self.status} ({self.message!r}), "
                f"iterations={self.iterations}, time={self.solve_time:.3g} s)")


def optimal_trajectory(cm: CompiledModel, *, t_final: float | tuple[float, float], nodes: int,
                       initial: Mapping[str, float], final: Mapping[str, float] | None = None,
                       effort: Any = None, cost: Mapping[str, Any] | str | None = None,
                       u_bounds: Mapping[str, Any] | None = None,
                       x_bounds: Mapping[str, Any] | None = None,
                       xd_bounds: Mapping[str, Any] | None = None,
                       output_bounds: Mapping[str, Any] | None = None,
                       friction: Mapping[str, Any] | None = None,
                       path: Sequence[PathConstraint] = (),
                       p: ArrayLike | Mapping[str, float] | None = None,
                       method: Literal["hermite-simpson", "trapezoidal", "backward-euler"] = "hermite-simpson",
                       partition: Partition | Mapping[str, Any] | None = None,
                       x_guess: ArrayLike | None = None, guess: Any = None,
                       tol: float = 1e-8, max_iterations: int = 1000,
                       ipopt_options: Mapping[str, Any] | None = None,
                       check: bool = True) -> TrajectorySolution:
    """Optimal motion of a compiled model between two sets of conditions, by direct collocation.

    Minimises ``∫₀ᵀ (uᵀ R u + Σ q_s X_s²) dt + w_T T + Σ w_s (X_s(T) − X̄_s)²`` subject to the
    minimal-state dynamics ``Ẋ = f(X, u)`` of the third procedure (``X = [x_ai, ẋ_ai, x_ad]``,
    Eq. (4.123)) transcribed on ``nodes`` uniform nodes (trapezoidal or Hermite–Simpson), the
    initial and final conditions, bounds and path constraints, with IPOPT (cyipopt). The
    constraint Jacobian is exact and sparse (docs/theory/optimize.md).

    Parameters
    ----------
    cm : CompiledModel
    t_final : float or (float, float)
        Final time [s], or ``(lo, hi)`` for a free final time (minimum time with
        ``cost="time"``).
    nodes : int
        Number of nodes ``N ≥ 3``.
    initial, final : mapping
        ``{coordinate, velocity or input name: value}``; the names given are fixed, the rest
        free. Minimal-state and input names become variable bounds (an input fixed at the last
        node with the final state of a steady motion ends the motion in it: zero final
        accelerations), other names (dependent coordinates or velocities) equality constraints
        on the full ``x, ẋ`` of that node.
    effort : number, (k,) or (k, k) array_like, or mapping, optional
        ``R`` of ``∫ uᵀ R u dt`` (by input name in a mapping).
    cost : "time" or mapping, optional
        ``"time"`` (minimum time), or ``{"time": w_T, "states": {state: q_s},
        "terminal": {state: (w_s, target)}}``.
    u_bounds, x_bounds, xd_bounds : mapping, optional
        ``{name: (lower, upper)}`` (``None`` for an open side) of inputs, coordinates and
        velocities, at every node.
    output_bounds : mapping, optional
        ``{name: (lower, upper)}`` at every node, for declared outputs (``cm.outputs``) and
        constraint multipliers (by constraint name: ``Λ_i``, a contact force).
    friction : mapping, optional
        ``{"mu": μ, "normal_loads": {wheel: N}, "wheels": {...}}``: every wheel's friction
        utilisation ``|F_t| / (μ N) ≤ 1`` at every node (the wheels and loads as in
        `nhcontrol.reference.friction_utilisation`).
    path : sequence of PathConstraint, optional
        Further path constraints ``lower ≤ g(x, ẋ, u) ≤ upper`` with their exact derivatives
        (e.g. the corners of a car inside the lanes of a track).
    p : array_like or mapping, optional
        Parameters (default the model's).
    method : {"hermite-simpson", "trapezoidal", "backward-euler"}
    partition : Partition or mapping
        ``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)); needed when the model has constraints.
    x_guess : (n,) array_like, optional
        Start of the Newton iteration for the dependent coordinates (default: zeros with the
        initial coordinates given).
    guess : TrajectorySolution or Reference, optional
        Initial guess of the NLP (default: the states interpolated linearly between the
        initial and final values, inputs zero).
    tol, max_iterations : IPOPT's ``tol`` and ``max_iter``.
    ipopt_options : mapping, optional
        Further IPOPT options.
    check : bool
        Check that the reference is admissible (`Reference.from_samples`).

    Returns
    -------
    TrajectorySolution

    Raises
    ------
    OptimizationError
        Missing cyipopt (the extra ``optimize``), unknown names, bad bounds or weights, no
        objective.
    ModelError
        A model the transcription does not handle (first-order states, inputs in constraints).

    Examples
    --------
    >>> from nhcontrol.modeling import MultibodySystem
    >>> mb = MultibodySystem("cart"); (s,) = mb.add_coordinates("s"); (F,) = mb.add_inputs("F")
    >>> _ = mb.add_body("cart", mass=1, inertia=[[0, 0, 0], [0, 0, 0], [0, 0, 0]],
    ...                 position=[s, 0, 0]); mb.add_force("cart", [F, 0, 0])   # doctest: +SKIP
    """
    require_cyipopt()
    t_setup = time.perf_counter()
    if method not in METHODS:
        raise OptimizationError(f"method must be one of {list(METHODS)}, got {method!r}")
    if int(nodes) != nodes or nodes < 3:
        raise OptimizationError(f"nodes must be an integer ≥ 3, got {nodes!r}")
    N = int(nodes)
    Tlo, Thi = _spec.final_time(t_final)
    pvec = _spec.parameter_vector(cm, p)
    part = _partition(cm, partition)
    from ..linearization.first import velocity_names

    coords, vels = tuple(cm.coordinates), velocity_names(cm)
    names = coords + vels + tuple(cm.inputs)
    init = _spec.point_values(initial, names, "initial")
    fin = _spec.point_values(final, names, "final")
    xg = np.zeros(cm.n) if x_guess is None else np.asarray(x_guess, dtype=float).reshape(-1)
    if xg.size != cm.n:
        raise OptimizationError(f"x_guess must hold the {cm.n} coordinates {list(coords)}, got {xg.size}")
    if x_guess is None:
        for j, c in enumerate(coords):
            xg[j] = init.get(c, 0.0)
    rd = ReducedDynamics(cm, part, pvec, xg)
    tr = Transcription(rd, N, method, Tlo < Thi, Thi)
    R = _spec.effort_matrix(effort, rd.inputs)
    obj = _Objective(tr, R, cost)
    paths = PathRows(cm, rd, tr, pvec, init, fin,
                     _spec.bounds_of(x_bounds, coords, "x_bounds"),
                     _spec.bounds_of(xd_bounds, vels, "xd_bounds"),
                     output_bounds, friction, path)
    lb, ub = _variable_bounds(tr, rd, init, fin, paths,
                              _spec.bounds_of(u_bounds, rd.inputs, "u_bounds"), Tlo, Thi)
    z0 = _initial_guess(tr, rd, init, fin, guess, xg, lb, ub, Tlo, Thi)
    problem = _NLP(tr, obj, paths)
    cl = np.concatenate([np.zeros(tr.ndef), paths.lower])
    cu = np.concatenate([np.zeros(tr.ndef), paths.upper])
    setup = time.perf_counter() - t_setup
    xs, gs = _scaling(tr, z0, lb, ub, paths)
    z, J, stats = solve_nlp(problem, z0, lb, ub, cl, cu, tol=tol, max_iterations=max_iterations,
                            options=ipopt_options, x_scaling=xs, g_scaling=gs)
    return _solution(cm, rd, tr, z, J, stats, setup, pvec, method, part, check)


def _scaling(tr: Transcription, z0: Array, lb: Array, ub: Array, paths: PathRows
             ) -> tuple[Array, Array]:
    """Variable scales ``1 / typical magnitude`` per state, input and ``T`` (from the initial
    guess and the finite bounds, at least 1) and the defect rows scaled like their states."""
    def typical(cols: Array) -> Array:
        mags = [np.abs(z0[cols])]
        for b in (lb[cols], ub[cols]):
            mags.append(np.where(np.isfinite(b), np.abs(b), 0.0))
        return np.maximum(1.0, np.max(np.stack(mags), axis=(0,)).reshape(-1, tr.nz).max(axis=0)
                          if cols.size == tr.P * tr.nz else np.max(np.stack(mags)))

    grid = np.arange(tr.P * tr.nz)
    per = typical(grid)                       # (nz,): one scale per state and input
    xs = np.concatenate([np.tile(1.0 / per, tr.P), [1.0 / max(1.0, abs(z0[-1]))] if tr.free_time else []])
    dscale = np.tile(1.0 / per[:tr.ns], tr.ndef // tr.ns)
    pmag = np.maximum(1.0, np.where(np.isfinite(paths.upper), np.abs(paths.upper), 0.0))
    pmag = np.maximum(pmag, np.where(np.isfinite(paths.lower), np.abs(paths.lower), 0.0))
    return xs, np.concatenate([dscale, 1.0 / pmag])


def _partition(cm: CompiledModel, partition: Partition | Mapping[str, Any] | None) -> Partition | Mapping[str, Any]:
    if partition is not None:
        return partition
    if cm.m + cm.l == 0:
        return {"independent": list(cm.coordinates), "admissible_dependent": [], "dependent": []}
    raise OptimizationError(
        f"model {cm.name!r} has {cm.m} holonomic and {cm.l} nonholonomic constraints: give "
        f"partition={{'independent': [...], 'admissible_dependent': [...], 'dependent': [...]}} "
        f"(Eq. (4.96); nhcontrol.linearization.suggest_partition proposes one at a reference)")


class _Objective:
    """``Σ_j w_j (u_jᵀ R u_j + Σ q_s X_js²) + w_T T + Σ w_s (X_s(T) − X̄_s)²`` and its gradient."""

    def __init__(self, tr: Transcription, R: Array, cost: Any) -> None:
        rd = tr.rd
        self.tr, self.R = tr, R
        if isinstance(cost, str):
            if cost != "time":
                raise OptimizationError(f"cost must be 'time' or a mapping, got {cost!r}")
            cost = {"time": 1.0}
        cost = dict(cost or {})
        bad = sorted(set(cost) - {"time", "states", "terminal"})
        if bad:
            raise OptimizationError(f"cost keys {bad} unknown; use 'time', 'states', 'terminal'")
        self.wT = float(cost.get("time", 0.0))
        if self.wT and not tr.free_time:
            raise OptimizationError("cost 'time' needs a free final time: t_final=(lower, upper)")
        self.q = np.zeros(rd.ns)
        for name, w in dict(cost.get("states", {})).items():
            self.q[_state_index(rd, name, "cost['states']")] = float(w)
        self.term: list[tuple[int, float, float]] = []
        for name, wt in dict(cost.get("terminal", {})).items():
            w, target = wt
            self.term.append((_state_index(rd, name, "cost['terminal']"), float(w), float(target)))
        if not (np.any(R) or self.wT or np.any(self.q) or self.term):
            raise OptimizationError("the objective is empty: give effort (R of ∫ uᵀ R u dt) and/or "
                                    "cost ('time', 'states', 'terminal')")

    def value_grad(self, z: Array) -> tuple[float, Array]:
        tr = self.tr
        X, U, T = tr.split(z)
        w = tr.quadrature(T)
        L = np.einsum("pi,ij,pj->p", U, self.R, U) + X ** 2 @ self.q
        val = float(w @ L) + self.wT * T
        g = np.zeros_like(z)
        G = g[:tr.P * tr.nz].reshape(tr.P, tr.nz)
        G[:, :tr.ns] = 2.0 * w[:, None] * X * self.q
        G[:, tr.ns:] = 2.0 * w[:, None] * (U @ self.R)
        last = (tr.N - 1) * tr.nz
        for i, wt, target in self.term:
            val += wt * (X[tr.N - 1, i] - target) ** 2
            g[last + i] += 2.0 * wt * (X[tr.N - 1, i] - target)
        if tr.free_time:
            g[-1] = float(w @ L) / T + self.wT
        return val, g


def _state_index(rd: ReducedDynamics, name: str, what: str) -> int:
    if name not in rd.states:
        raise OptimizationError(f"{what} names {name!r}, which is not a state of the minimal state "
                                f"{list(rd.states)} (partition: x_ai, their velocities, x_ad)")
    return rd.states.index(name)


class _NLP:
    def __init__(self, tr: Transcription, obj: _Objective, paths: PathRows) -> None:
        self.tr, self.obj, self.paths = tr, obj, paths
        self.ev = Evaluations(tr)
        self._obj: tuple[bytes, float, Array] | None = None
        self._rows = np.concatenate([tr.rows, tr.ndef + paths.rows])
        self._cols = np.concatenate([tr.cols, paths.cols])

    def _value_grad(self, z: Array) -> tuple[float, Array]:
        key = np.asarray(z, dtype=float).tobytes()   # IPOPT asks for both at one point
        if self._obj is None or self._obj[0] != key:
            self._obj = (key, *self.obj.value_grad(z))
        return self._obj[1], self._obj[2]

    def objective(self, z: Array) -> float:
        return self._value_grad(z)[0]

    def gradient(self, z: Array) -> Array:
        return self._value_grad(z)[1].copy()

    def constraints(self, z: Array) -> Array:
        try:
            if self.tr.implicit:
                d = self.tr.implicit_defects(z)
                if not self.paths.specs:
                    return d
            pts = self.ev.at(z, jac=False)
        except NhcontrolError:      # a trial point outside the model's domain: IPOPT cuts the
            return np.full(self.tr.ndef + self.paths.lower.size, np.nan)   # step back
        X, U, T = self.tr.split(z)
        if not self.tr.implicit:
            d = self.tr.defects(X, pts.f, T)
        return np.concatenate([d, self.paths.values(pts, X, U, z)])

    def jacobianstructure(self) -> tuple[Array, Array]:
        return self._rows, self._cols

    def jacobian(self, z: Array) -> Array:
        try:
            if self.tr.implicit:
                d = self.tr.implicit_jacobian(z)
                if not self.paths.specs:
                    return d
            pts = self.ev.at(z, jac=True)
        except NhcontrolError:
            return np.full(self._rows.size, np.nan)
        X, U, T = self.tr.split(z)
        if not self.tr.implicit:
            d = self.tr.defect_jacobian(pts, T)
        return np.concatenate([d, self.paths.jacobian(pts, X, U, z)])


def _variable_bounds(tr: Transcription, rd: ReducedDynamics, init: dict, fin: dict, paths: PathRows,
                     ub_u: dict, Tlo: float, Thi: float) -> tuple[Array, Array]:
    lb = np.full(tr.nvar, -np.inf)
    ub = np.full(tr.nvar, np.inf)
    LB = lb[:tr.P * tr.nz].reshape(tr.P, tr.nz)
    UB = ub[:tr.P * tr.nz].reshape(tr.P, tr.nz)
    for name, (lo, hi) in paths.state_bounds.items():
        i = rd.states.index(name)
        LB[:, i], UB[:, i] = lo, hi
    for name, (lo, hi) in ub_u.items():
        i = tr.ns + rd.inputs.index(name)
        LB[:, i], UB[:, i] = lo, hi
    for node, vals in ((0, init), (tr.N - 1, fin)):
        for name, v in vals.items():
            if name in rd.states or name in rd.inputs:
                i = rd.states.index(name) if name in rd.states else tr.ns + rd.inputs.index(name)
                if not LB[node, i] <= v <= UB[node, i]:
                    raise OptimizationError(f"the {'initial' if node == 0 else 'final'} value "
                                            f"{name} = {v} lies outside its bounds "
                                            f"({LB[node, i]}, {UB[node, i]})")
                LB[node, i] = UB[node, i] = v
    if tr.free_time:
        lb[-1], ub[-1] = Tlo, Thi
    return lb, ub


def _initial_guess(tr: Transcription, rd: ReducedDynamics, init: dict, fin: dict, guess: Any,
                   xg: Array, lb: Array, ub: Array, Tlo: float, Thi: float) -> Array:
    z = np.zeros(tr.nvar)
    T = 0.5 * (Tlo + Thi)
    if guess is not None:
        if isinstance(guess, TrajectorySolution):
            T = float(guess.t[-1])
        elif getattr(guess, "t_range", None) is not None:
            T = float(guess.t_range[1]) - float(guess.t_range[0])
        if tr.free_time:
            T = min(max(T, Tlo), Thi)
    ts = tr.point_times(T)
    W = z[:tr.P * tr.nz].reshape(tr.P, tr.nz)
    if guess is None:
        X0 = rd.state_of(xg, np.zeros(rd.n))
        s = ts / T
        for i, name in enumerate(rd.states):
            a = init.get(name, fin.get(name, X0[i]))
            b = fin.get(name, a)
            W[:, i] = a + (b - a) * s
            rate = rd.velocities[rd.coordinates.index(name)] if name in rd.coordinates else None
            if name not in fin and rate in init and name in init:
                W[:, i] = a + init[rate] * ts          # free end: growing at its initial rate
    else:
        if isinstance(guess, TrajectorySolution):
            x, xd, u = guess.reference.x(ts * guess.t[-1] / T), guess.reference.xd(ts * guess.t[-1] / T), \
                guess.reference.u(ts * guess.t[-1] / T)
        elif all(callable(getattr(guess, a, None)) for a in ("x", "xd", "u")):
            t0 = float(guess.t_range[0]) if getattr(guess, "t_range", None) is not None else 0.0
            x, xd, u = guess.x(ts + t0), guess.xd(ts + t0), guess.u(ts + t0)
        else:
            raise OptimizationError(f"guess must be a TrajectorySolution or a Reference, got "
                                    f"{type(guess).__name__}")
        W[:, :tr.ns] = rd.state_of(x, xd)
        if rd.k:
            W[:, tr.ns:] = np.asarray(u, dtype=float).reshape(tr.P, rd.k)
    if tr.free_time:
        z[-1] = T
    return np.clip(z, lb, ub)


def _unwrap_dependent(cm: CompiledModel, rd: ReducedDynamics, x: Array, order: Array,
                      U: Array | None, pvec: Array) -> None:
    """Make the dependent coordinates continuous in time (in place): Newton at each point may
    land on a root of ``C(x) = 0`` that differs by a full turn ``2π`` in an angle (a wheel's
    contact angle); the shifted value is kept where ``C`` still vanishes there, so the
    interpolated reference does not jump."""
    for j in rd.d:
        col = x[order, j]
        turns = np.round(np.diff(col) / (2 * np.pi))
        if not np.any(turns):
            continue
        shifted = x[order].copy()
        shifted[:, j] = col - 2 * np.pi * np.concatenate([[0.0], np.cumsum(turns)])
        u = None if U is None else U[order]
        if np.max(np.abs(np.asarray(cm.C(shifted, u, pvec), dtype=float))) <= 1e-9:
            x[order, j] = shifted[:, j]


def _solution(cm: CompiledModel, rd: ReducedDynamics, tr: Transcription, z: Array, J: float,
              stats: NLPStats, setup: float, pvec: Array, method: str, part: Any,
              check: bool) -> TrajectorySolution:
    from ..reference import Reference

    X, U, T = tr.split(z)
    pts = rd.evaluate(X, U, jac=False)
    t = tr.times(T)[0]
    ts = tr.point_times(T)
    order = np.argsort(ts, kind="stable")
    _unwrap_dependent(cm, rd, pts.x, order, U if rd.k else None, pvec)
    u_all = U if rd.k else np.zeros((tr.P, 0))
    ref = Reference.from_samples(cm, ts[order], pts.x[order], pts.xd[order], pts.xdd[order],
                                 u_all[order] if rd.k else None, pvec, lam=pts.lam[order],
                                 check=check)
    N = tr.N
    samples = {"t": _ro(ts[order]), "x": _ro(pts.x[order]), "xd": _ro(pts.xd[order]),
               "xdd": _ro(pts.xdd[order]), "lam": _ro(pts.lam[order]), "u": _ro(u_all[order])}
    return TrajectorySolution(status=stats.status, message=stats.message, objective=J, t=_ro(t),
                              x=_ro(pts.x[:N]), xd=_ro(pts.xd[:N]), xdd=_ro(pts.xdd[:N]),
                              lam=_ro(pts.lam[:N]), u=_ro(u_all[:N]), X=_ro(X[:N]),
                              states=rd.states, inputs=rd.inputs, method=method, stats=stats,
                              setup_time=setup, reference=ref, partition=part, samples=samples)
