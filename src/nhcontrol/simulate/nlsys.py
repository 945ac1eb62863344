"""The nonlinear plant as a python-control ``NonlinearIOSystem`` ([`to_nlsys()`][nhcontrol.simulate.to_nlsys])."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import control
import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import SimulationInputError, SolverError
from nhcontrol.reference._eval import ModelEvaluator, clock_offset

from ._dynamics import Dynamics
from .forward import DEFAULT_BAUMGARTE, INITIAL_TOL, _step_interval, _velocity_names
from nhcontrol._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["to_nlsys", "ConstraintDrift", "constraint_drift"]


class _Plant:
    """Right-hand side ``[ẋ; ẍ]`` of the index-1 DAE, Eq. (2.119), as python-control wants it."""

    def __init__(self, dyn: Dynamics, n: int, k: int) -> None:
        self.dyn, self.n, self.k = dyn, n, k
        self.t_first: float | None = None   # earliest time seen: a call before it starts a new run

    def update(self, t: float, state: NDArray, u: NDArray, params: Any = None) -> NDArray:
        n = self.n
        x, xd = np.asarray(state[:n], dtype=float), np.asarray(state[n:], dtype=float)
        uu = np.asarray(u, dtype=float).reshape(self.k) if self.k else None
        # the first call, or one earlier than any before (a new run): finite-difference calls
        # at the same time (control.linearize) are not checked
        if self.t_first is None or float(t) < self.t_first:
            self.t_first = float(t)
            if not (isinstance(params, Mapping) and params.get("check_initial") is False):
                self._check_start(float(t), x, xd, uu)
        return np.concatenate([xd, self.dyn.accel(float(t), x, xd, uu)[:n]])

    def _check_start(self, t: float, x: NDArray, xd: NDArray, u: NDArray | None) -> None:
        """The first state of a run must lie on the constraint manifold, with its clock (if
        any) at the time of the call."""
        off = clock_offset(self.dyn.ev.cm, t, x)
        if off is not None:
            raise SimulationInputError(
                f"the clock {off[0]!r} of the python-control plant of model {self.dyn.ev.name!r} starts at "
                f"{off[0]} = {off[1]:.6g} but the run starts at t = {off[2]:.6g}: every rheonomic term "
                f"would run {off[1] - off[2]:.6g} s off. Start the clock at the first time of the run "
                f"(or pass params={{'check_initial': False}})")
        out = self.dyn.stacked(x[None], xd[None], None if u is None else u[None], None)
        ev = self.dyn.ev
        names = list(ev.constraints)
        C = np.abs(np.asarray(out["C"])[0])
        V = np.abs(np.asarray(out["Dxd"])[0])
        if np.all(C <= INITIAL_TOL) and np.all(V <= INITIAL_TOL):
            return
        worst = [f"|C| = {C[i]:.3g} in {names[i]!r}" for i in np.flatnonzero(C > INITIAL_TOL)[:3]]
        worst += [f"|D ẋ + b| = {V[i]:.3g} in {names[i]!r}" for i in np.flatnonzero(V > INITIAL_TOL)[:3]]
        raise SimulationInputError(
            f"the state of the python-control plant of model {ev.name!r} at t = {t:.6g} (the start of "
            f"the run) violates the constraints: {', '.join(worst)} (tolerance {INITIAL_TOL:g}); "
            f"Baumgarte stabilisation would pull the motion back, so the response is not the motion "
            f"you asked for. Start from a consistent state: ic = "
            f"nhcontrol.simulate.consistent_initial_conditions(cm, x0, xd0, ...); X0 = "
            f"np.concatenate([ic.x, ic.xd]) (or pass params={{'check_initial': False}} to "
            f"input_output_response to start off the manifold on purpose)")


class _SampledPlant:
    """One sample ``h`` of Eq. (2.119) with the input held: ``[x; ẋ]_{k+1} = F([x; ẋ]_k, u_k)``.

    Pure (no memory between calls): every call integrates ``[t, t + h]`` from scratch with the
    stepper of ``forward_dynamics`` (DOP853 by default). When inputs enter the constraints the
    velocities are first projected onto the constraints of the held input (the impulsive form
    of Eq. (2.119), as ``forward_dynamics`` does at an input jump).
    """

    def __init__(self, dyn: Dynamics, n: int, k: int, h: float, method: str, rtol: float,
                 atol: float, project: bool, name: str) -> None:
        self.dyn, self.n, self.k, self.h = dyn, n, k, h
        self.method, self.rtol, self.atol, self.project, self.name = method, rtol, atol, project, name
        self._start = _Plant(dyn, n, k)     # the start-of-run check of the continuous plant

    def update(self, t: float, state: NDArray, u: NDArray, params: Any = None) -> NDArray:
        n, k = self.n, self.k
        y = np.asarray(state, dtype=float).reshape(2 * n).copy()
        uu = np.asarray(u, dtype=float).reshape(k).copy() if k else None
        if self.project and uu is not None:
            y[n:] = self.dyn.project_velocities(y[:n], y[n:], uu)
        chk = self._start
        if chk.t_first is None or float(t) <= chk.t_first:       # the first sample of a run
            chk.t_first = float(t)
            if not (isinstance(params, Mapping) and params.get("check_initial") is False):
                chk._check_start(float(t), y[:n], y[n:], uu)
        dyn = self.dyn

        def rhs(tt: float, yy: NDArray) -> NDArray:
            return np.concatenate([yy[n:], dyn.accel(tt, yy[:n], yy[n:], uu)[:n]])

        a = float(t)
        sol = _step_interval(self.method, rhs, a, a + self.h, y, rtol=self.rtol, atol=self.atol,
                             max_step=np.inf, first=None, dense=False, model_name=self.name)
        return sol.y[:, -1].copy()


_SAMPLED_METHODS = ("DOP853", "RK45", "Radau", "BDF")


class _Outputs:
    def __init__(self, idx: list[int], cm: CompiledModel | None = None, sensors: list[tuple[int, int]] | None = None,
                 p: Any = None) -> None:
        self.idx = idx
        # declared outputs (MultibodySystem.add_output): (position among the outputs, index of h)
        self.cm, self.sensors, self.p = cm, sensors or [], p

    def __call__(self, t: float, state: NDArray, u: NDArray, params: Any = None) -> NDArray:
        if not self.sensors:
            return np.asarray(state)[self.idx]
        st = np.asarray(state, dtype=float)
        n = self.cm.n
        h = self.cm.output(st[:n], st[n:], np.asarray(u, dtype=float) if self.cm.ninputs else None,
                           self.p)
        out = np.empty(len(self.idx))
        for pos, i in enumerate(self.idx):
            out[pos] = st[i] if i >= 0 else 0.0
        for pos, j in self.sensors:
            out[pos] = h[j]
        return out


def to_nlsys(cm: CompiledModel, *, p: ArrayLike | Mapping[str, float] | None = None,
             outputs: Sequence[str] | None = None, name: str | None = None,
             baumgarte: tuple[float, float] = DEFAULT_BAUMGARTE, dt: float | None = None,
             method: str = "DOP853", rtol: float = 1e-10,
             atol: float = 1e-12) -> control.NonlinearIOSystem:
    """The nonlinear model as a python-control ``NonlinearIOSystem`` (continuous or sampled).

    The states are ``[x; ẋ]`` named after the coordinates and their velocities
    (``<coordinate>_d``, as `LinearizationResult.states`); the inputs are ``cm.inputs``;
    the update function solves the index-1 equations with Baumgarte stabilisation,
    Eq. (2.119), ``[[M, Dᵀ], [D, 0]] [ẍ; Λ] = [Q; Qd − 2α D ẋ − β² C]``.

    Parameters
    ----------
    cm : CompiledModel
    p : (p,) array_like or mapping, optional
        Parameters (defaults when None).
    outputs : sequence of str, optional
        State names to output (default: all states); the outputs carry the same names. The
        names of declared outputs (`MultibodySystem.add_output`, ``cm.outputs``) give the
        sensor readings ``h(x, ẋ, u)`` (e.g. for an estimator's ``to_iosystem()``).
    name : str, optional
        System name (default: the model's name).
    baumgarte : (float, float)
        ``(α, β)`` in 1/s (thesis ``β_e``, ``γ_e``).
    dt : float, optional
        Sample time ``h`` [s]. When given, the result is the *sampled* plant, a discrete-time
        system (``sys.dt == h``) whose update is the nonlinear model integrated over one sample
        with the input held (zero-order hold),
        ``[x; ẋ]_{k+1} = F([x; ẋ]_k, u_k)``; when inputs enter the constraints the velocities
        are first projected onto the constraints of the held input (as
        [`forward_dynamics()`][nhcontrol.simulate.forward_dynamics] does at an input jump).
        python-control interconnects it with discrete controllers of the same ``dt`` (e.g. the
        ``to_iosystem()`` of nhcontrol's controllers); the loop then matches
        ``forward_dynamics(..., controller=..., sample_time=h)`` to the integration tolerance.
        Its first sample of a run checks the start as the continuous plant does (below).
    method : {"DOP853", "RK45", "Radau", "BDF"}
        Integrator of the sampled plant (``dt`` given).
    rtol, atol : float
        Its tolerances.

    Returns
    -------
    control.NonlinearIOSystem
        Usable in ``control.interconnect`` and ``control.input_output_response``; check the
        constraint drift of a response with
        [`constraint_drift()`][nhcontrol.simulate.constraint_drift]. The first call of the
        plant (and any call at a time earlier than all before: a new run) checks that the
        state lies on the constraint manifold (to 1e-8) and raises `SimulationInputError`
        naming the violated constraints otherwise;
        start from [`consistent_initial_conditions()`][nhcontrol.simulate.consistent_initial_conditions],
        or pass ``params={"check_initial": False}`` to start off the manifold on purpose.

    Raises
    ------
    SolverError
        For unknown output names, a non-positive ``dt`` or an unknown ``method``.

    Examples
    --------
    >>> from nhcontrol.models import sleigh
    >>> from nhcontrol.simulate import to_nlsys
    >>> plant = to_nlsys(sleigh.model())
    >>> plant.nstates, plant.state_labels[:4]
    (6, ['x', 'y', 'psi', 'x_d'])
    """
    ev = ModelEvaluator(cm, p)
    n, k = int(cm.n), int(cm.ninputs)
    states = list(cm.coordinates) + list(_velocity_names(cm))
    outs = states if outputs is None else list(outputs)
    declared = list(getattr(cm, "outputs", ()) or ())
    bad = [o for o in outs if o not in states and o not in declared]
    if bad:
        raise SolverError(f"outputs {bad} are not states of {cm.name!r}; valid names are {states}"
                          + (f" and the declared outputs {declared}" if declared else ""))
    sensors = [(pos, declared.index(o)) for pos, o in enumerate(outs) if o not in states]
    out_fn = _Outputs([states.index(o) if o in states else -1 for o in outs], cm, sensors, ev.p)
    if dt is None:
        plant = _Plant(Dynamics(ev, *baumgarte), n, k)
        return control.nlsys(plant.update, out_fn, states=states, inputs=list(cm.inputs),
                             outputs=outs, name=name or str(cm.name))
    try:
        h = float(dt)
    except (TypeError, ValueError) as exc:
        raise SolverError(f"dt must be a positive sample time in seconds, got {dt!r}") from exc
    if isinstance(dt, bool) or not (np.isfinite(h) and h > 0):
        raise SolverError(f"dt must be a positive sample time in seconds, got {dt!r}")
    if method not in _SAMPLED_METHODS:
        raise SolverError(f"method must be one of {list(_SAMPLED_METHODS)} for the sampled plant, "
                          f"got {method!r}")
    project = bool(getattr(cm, "constraint_inputs", ())) and k > 0
    sampled = _SampledPlant(Dynamics(ev, *baumgarte), n, k, h, method, float(rtol), float(atol),
                            project, ev.name)
    return control.nlsys(sampled.update, out_fn, states=states, inputs=list(cm.inputs),
                         outputs=outs, name=name or str(cm.name), dt=h)


@dataclass(frozen=True)
class ConstraintDrift:
    """Constraint residuals along a trajectory: ``max_i |C_i(x)|`` and ``max_i |(D ẋ)_i|`` per time."""

    __repr__ = concise_repr

    holonomic: NDArray[np.float64]
    velocity: NDArray[np.float64]

    @property
    def max(self) -> float:
        """Largest residual of either kind."""
        return float(max(np.max(self.holonomic, initial=0.0), np.max(self.velocity, initial=0.0)))


def constraint_drift(cm: CompiledModel, states: ArrayLike, u: ArrayLike | None = None,
                     p: ArrayLike | Mapping[str, float] | None = None) -> ConstraintDrift:
    """Drift of a trajectory of [`to_nlsys()`][nhcontrol.simulate.to_nlsys] off the constraints (Eqs. (2.109), (2.114)).

    Parameters
    ----------
    cm : CompiledModel
    states : (2n, N) or (N, 2n) array_like
        ``[x; ẋ]`` samples, e.g. ``response.states`` of ``control.input_output_response``.
    u : (k, N) or (N, k) array_like, optional
    p : optional
        Parameters.
    """
    n = int(cm.n)
    S = np.asarray(states, dtype=float)
    if S.ndim != 2 or 2 * n not in S.shape:
        raise SolverError(f"states must be (2n, N) or (N, 2n) with 2n = {2 * n}, got {S.shape}")
    if S.shape[0] == 2 * n and S.shape[1] != 2 * n:
        S = S.T
    ev = ModelEvaluator(cm, p)
    U = None
    if u is not None and cm.ninputs:
        U = np.asarray(u, dtype=float)
        U = U.T if U.shape[0] == cm.ninputs and U.shape[1] != cm.ninputs else U
    X, XD = S[:, :n], S[:, n:]
    hol = np.zeros(len(S))
    vel = np.zeros(len(S))
    for i in range(len(S)):
        ui = None if U is None else U[i]
        if cm.m:
            hol[i] = np.max(np.abs(cm.C(X[i], ui, ev.p)))
        if cm.m + cm.l:
            vel[i] = np.max(np.abs(np.reshape(cm.D(X[i], ui, ev.p), (-1, n)) @ XD[i]))
    return ConstraintDrift(holonomic=hol, velocity=vel)
