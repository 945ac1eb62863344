"""The nonlinear plant as a python-control ``NonlinearIOSystem`` ([`to_nlsys()`][nhcontrol.simulate.to_nlsys])."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import control
import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import SimulationInputError, SolverError
from nhcontrol.reference._eval import ModelEvaluator, clock_offset

from ._dynamics import Dynamics
from .forward import DEFAULT_BAUMGARTE, INITIAL_TOL, _velocity_names

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
        any) at the time of the call (issue 22)."""
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


class _Outputs:
    def __init__(self, idx: list[int]) -> None:
        self.idx = idx

    def __call__(self, t: float, state: NDArray, u: NDArray, params: Any = None) -> NDArray:
        return np.asarray(state)[self.idx]


def to_nlsys(cm: Any, *, p: ArrayLike | Mapping[str, float] | None = None,
             outputs: Sequence[str] | None = None, name: str | None = None,
             baumgarte: tuple[float, float] = DEFAULT_BAUMGARTE) -> control.NonlinearIOSystem:
    """The nonlinear model as a python-control ``NonlinearIOSystem``.

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
        State names to output (default: all states); the outputs carry the same names.
    name : str, optional
        System name (default: the model's name).
    baumgarte : (float, float)
        ``(α, β)`` in 1/s (thesis ``β_e``, ``γ_e``).

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
        For unknown output names.

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
    bad = [o for o in outs if o not in states]
    if bad:
        raise SolverError(f"outputs {bad} are not states of {cm.name!r}; valid names are {states}")
    plant = _Plant(Dynamics(ev, *baumgarte), n, k)
    return control.nlsys(plant.update, _Outputs([states.index(o) for o in outs]),
                         states=states, inputs=list(cm.inputs), outputs=outs,
                         name=name or str(cm.name))


@dataclass(frozen=True)
class ConstraintDrift:
    """Constraint residuals along a trajectory: ``max_i |C_i(x)|`` and ``max_i |(D ẋ)_i|`` per time."""

    holonomic: NDArray[np.float64]
    velocity: NDArray[np.float64]

    @property
    def max(self) -> float:
        """Largest residual of either kind."""
        return float(max(np.max(self.holonomic, initial=0.0), np.max(self.velocity, initial=0.0)))


def constraint_drift(cm: Any, states: ArrayLike, u: ArrayLike | None = None,
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
