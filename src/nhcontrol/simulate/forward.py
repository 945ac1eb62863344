"""Nonlinear forward dynamics: the index-1 DAE with Baumgarte stabilisation, Eq. (2.119).

Open loop (constant or time-varying inputs), continuous feedback, or a discrete controller with
zero-order hold (the closed loops of Ch. 8: a discrete LQR/MPC on the nonlinear plant). The
integration between two controller instants is one ``scipy.integrate.solve_ivp`` call with a
constant input, so the right-hand side is smooth on every piece.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import BDF, DOP853, RK45, OdeSolution, Radau, solve_ivp

from nhcontrol._util.errors import SimulationInputError, SolverError
from nhcontrol._util.validation import COND_MAX, as_float_array, readonly
from nhcontrol._util.work import check_evaluations
from nhcontrol.reference._eval import ModelEvaluator, clock_offset

from ._dynamics import Dynamics
from ._inputs import (HeldInput, OnInterval, OpenLoopInput, RightContinuous, as_breakpoints,
                      as_input_function)
from .controllers import as_controller
from .result import SimulationResult
from ._inputs import ConstantInput, UserInput, input_rates_for

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

# The input laws were defined here, underscored, before they moved to _inputs: results pickled
# then name them under this module, so the old names stay (same attribute layouts).
_HeldInput, _OpenLoopInput, _ConstantInput, _UserInput = (HeldInput, OpenLoopInput,
                                                          ConstantInput, UserInput)

__all__ = ["forward_dynamics", "DEFAULT_BAUMGARTE", "DEFAULT_MAX_EVALUATIONS", "ConditioningWarning"]

DEFAULT_BAUMGARTE = (5.0, 5.0)
"""Default Baumgarte constants ``(α, β)`` in 1/s: ``C̈ + 2α Ċ + β² C = 0`` is critically damped with a
double pole at ``-5`` 1/s, and ``d(B ẋ)/dt + 2α B ẋ = 0`` decays at 10 1/s.
"""

Method = Literal["DOP853", "RK45", "Radau", "LSODA", "BDF"]


INITIAL_TOL = 1e-8
"""Largest constraint residual |C(x0)|, |D(x0) xd0| at the start accepted without a warning."""


DEFAULT_MAX_EVALUATIONS = 2_000_000
MIN_EVALUATIONS_PER_STEP = {"DOP853": 11, "RK45": 5}
"""Right-hand-side evaluations of one step of the explicit methods (first-same-as-last
counted once): the least one integration interval costs (2 for the implicit ones)."""
"""Default work budget of `forward_dynamics`: right-hand-side evaluations (each one kernel call
and one linear solve; a few minutes on one core for a bicycle-size model)."""


class _WorkBudget:
    """Counts right-hand-side evaluations and stops a run that cannot finish within its budget.

    Every ``CHECK_EVERY`` evaluations: the evaluation budget, the wall-time limit, and (after
    ``WINDOW`` evaluations) a projection: at the rate simulated time advanced over the last
    ``WINDOW``-``2 WINDOW`` evaluations, would reaching ``tf`` need more than twice the budget?
    A stiff model integrated with an explicit method fails that projection within the first
    few thousand evaluations instead of running for hours.
    """

    CHECK_EVERY = 500
    WINDOW = 5000

    def __init__(self, t0: float, tf: float, max_evaluations: int | None, time_limit: float | None,
                 method: str, name: str) -> None:
        self.t0, self.tf, self.max, self.time_limit = t0, tf, max_evaluations, time_limit
        self.method, self.name = method, name
        self.count = 0
        self.t_reached = t0
        self.start = time.perf_counter()
        self.mark = (0, t0)

    def tick(self, t: float) -> None:
        self.count += 1
        if t > self.t_reached:
            self.t_reached = t
        if self.count % self.CHECK_EVERY:
            return
        elapsed = time.perf_counter() - self.start
        if self.max is not None and self.count >= self.max:
            self.fail(f"the work budget max_evaluations={self.max} is used up")
        if self.time_limit is not None and elapsed > self.time_limit:
            self.fail(f"the wall-time limit time_limit={self.time_limit:g} s is reached")
        c0, tm0 = self.mark
        if self.max is not None and self.count - c0 >= self.WINDOW:
            rate = (self.t_reached - tm0) / (self.count - c0)     # simulated s per evaluation
            need = (self.tf - self.t_reached) / rate if rate > 0 else math.inf
            if rate <= 0:
                self.fail(f"simulated time has not advanced over the last {self.count - c0} evaluations")
            if self.count + need > 2 * self.max:
                self.fail(f"at the rate of the last {self.count - c0} evaluations ({rate:.3g} s of "
                          f"simulated time per evaluation) reaching tf = {self.tf:.6g} needs about "
                          f"{need:.3g} more, over the work budget max_evaluations={self.max}")
            if self.count - c0 >= 2 * self.WINDOW:
                self.mark = (self.count, self.t_reached)

    def fail(self, why: str) -> None:
        span = self.tf - self.t0
        done = 100.0 * (self.t_reached - self.t0) / span
        if self.method in ("DOP853", "RK45"):
            hint = (f"steps this small for method={self.method!r} (explicit) mean the model is most likely "
                    "stiff (a fast mode such as a very stiff spring on a small mass): use method='Radau' "
                    "or method='BDF' (implicit, with the exact Jacobian)")
        else:
            hint = ("the model has a very fast mode or a near-singular configuration: check its "
                    "parameters, loosen rtol/atol")
        raise SolverError(f"forward_dynamics of model {self.name!r} stopped at t = {self.t_reached:.6g} "
                          f"({done:.3g} % of t_span [{self.t0:.6g}, {self.tf:.6g}]) after {self.count} "
                          f"right-hand-side evaluations in {time.perf_counter() - self.start:.3g} s: "
                          f"{why}. {hint[0].upper() + hint[1:]}; or raise max_evaluations / time_limit "
                          f"if a run this long is intended")


def work_budget(t0: float, tf: float, max_evaluations: Any, time_limit: Any, method: str,
                name: str) -> _WorkBudget:
    """A checked work budget (`_WorkBudget`) for a run of model ``name`` over ``[t0, tf]``."""
    if max_evaluations is not None:
        try:
            max_ev = int(max_evaluations)
        except (TypeError, ValueError, OverflowError) as exc:
            raise SolverError(f"max_evaluations must be a positive integer or None, got {max_evaluations!r}"
                              ) from exc
        if max_ev != max_evaluations or max_ev < 1:
            raise SolverError(f"max_evaluations must be a positive integer or None, got {max_evaluations!r}")
    else:
        max_ev = None
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0
                                       and math.isfinite(time_limit)):
        raise SolverError(f"time_limit must be a positive number of seconds or None, got {time_limit!r}")
    return _WorkBudget(t0, tf, max_ev, None if time_limit is None else float(time_limit), method, name)


class ConditioningWarning(UserWarning):
    """The saddle-point matrix of Eq. (2.119) became ill conditioned during a simulation."""


def _velocity_names(cm: CompiledModel) -> tuple[str, ...]:
    vel = tuple(getattr(cm, "velocities", ()) or ())
    if len(vel) != int(cm.n):
        vel = tuple(f"{c}_d" for c in cm.coordinates)
    return vel


_STEPPERS = {"DOP853": DOP853, "RK45": RK45, "Radau": Radau, "BDF": BDF}
"""Solvers stepped by hand over the hold intervals (they expose the proposed step ``h_abs``)."""

_IMPLICIT = ("Radau", "BDF", "LSODA")
"""Methods that use a Jacobian of the right-hand side (given exactly when the model can)."""


class _Interval:
    """What one hold interval produced (the fields of ``solve_ivp``'s result that are used)."""

    def __init__(self, t: NDArray, y: NDArray, sol: Any, nfev: int, proposal: float) -> None:
        self.t, self.y, self.sol, self.nfev, self.proposal = t, y, sol, nfev, proposal
        self.status = 0
        self.t_events: list = []


def _step_interval(method: str, rhs: Callable, a: float, b: float, y: NDArray, *, rtol: float,
                   atol: float, max_step: float, first: float | None, dense: bool,
                   model_name: str, jac: Callable | None = None) -> _Interval:
    """Integrate one hold interval ``[a, b]`` by stepping a scipy solver by hand.

    Unlike ``solve_ivp`` this returns the solver's *proposed* next step (``h_abs``), so the next
    interval starts with the step size the error control wants (split evenly over the interval)
    instead of the clipped last step (about 2x fewer evaluations for the ball-plate loops).
    """
    if first is not None:
        # split the interval evenly into steps no larger than the proposal, so the first step
        # is accepted and no sliver step is left at the end of the interval
        first = (b - a) / math.ceil((b - a) / first * (1.0 - 1e-12))
    extra = {"jac": jac} if jac is not None and method in _IMPLICIT else {}
    solver = _STEPPERS[method](rhs, a, y, b, rtol=rtol, atol=atol, max_step=max_step,
                               first_step=first, **extra)
    ts, ys, interps = [a], [y], []
    proposal = 0.0
    while solver.status == "running":
        msg = solver.step()
        if solver.status == "failed":
            raise SolverError(f"the integration of model {model_name!r} failed at t = {solver.t:.6g} "
                              f"(interval [{a:.6g}, {b:.6g}]): {msg}. Try method='Radau' for stiff "
                              "problems, smaller Baumgarte constants or looser rtol/atol")
        if dense:
            interps.append(solver.dense_output())
        ts.append(solver.t)
        ys.append(solver.y.copy())
        if solver.status == "running":      # an unclipped step: its proposal is reliable
            proposal = float(solver.h_abs)
        elif proposal == 0.0:               # one step covered the interval: its proposal
            proposal = float(solver.h_abs)
    T = np.array(ts)
    sol = OdeSolution(T, interps) if dense else None
    return _Interval(T, np.array(ys).T, sol, int(solver.nfev), proposal)


def _interval_count(span: float, h: float) -> int:
    """Number of hold intervals of length ``h`` covering ``span`` (the last one may be shorter).

    A span that is an integer multiple of ``h`` up to rounding gives exactly that multiple, so
    no sliver interval of length ~1e-16 is integrated at the end.
    """
    r = span / h
    near = round(r)
    if near >= 1 and abs(r - near) <= 1e-9 * max(1.0, r):
        return int(near)
    return max(1, int(math.ceil(r)))


def _wrap_events(events: Any, n: int) -> list:
    if events is None:
        return []
    evs = list(events) if isinstance(events, (list, tuple)) else [events]
    out = []
    for e in evs:
        if not callable(e):
            raise SolverError(f"events must be callables event(t, x, xd) -> float, got {e!r}")

        def w(t: float, y: NDArray, _e: Any = e) -> float:
            return float(_e(t, y[:n], y[n:]))
        w.terminal = getattr(e, "terminal", False)      # type: ignore[attr-defined]
        w.direction = getattr(e, "direction", 0.0)      # type: ignore[attr-defined]
        out.append(w)
    return out


def _is_reference(u: Any) -> bool:
    """A `Reference` passed as the open-loop inputs (duck-typed: no import cycle)."""
    return hasattr(u, "ud") and hasattr(u, "sample") and hasattr(u, "breakpoints")


def forward_dynamics(cm: CompiledModel, t_span: Sequence[float], x0: ArrayLike, xd0: ArrayLike, *,
                     u: Any = None, p: ArrayLike | Mapping[str, float] | None = None,
                     baumgarte: tuple[float, float] = DEFAULT_BAUMGARTE,
                     method: Method = "DOP853", rtol: float = 1e-10, atol: float = 1e-12,
                     t_eval: ArrayLike | None = None,
                     controller: Callable[[float, NDArray, NDArray], ArrayLike] | None = None,
                     sample_time: float | None = None, events: Any = None,
                     dense_output: bool = True, max_step: float = math.inf,
                     check_initial: bool = True, exact_jacobian: bool = True,
                     linearization: Any = None, reference: Reference | None = None,
                     max_evaluations: int | None = DEFAULT_MAX_EVALUATIONS,
                     time_limit: float | None = None, ud: Any = None,
                     breakpoints: ArrayLike | None = None) -> SimulationResult:
    r"""Integrate the equations of motion (index-1 DAE with Baumgarte stabilisation).

    At every right-hand-side evaluation the saddle-point system of Eq. (2.119) is solved

    $$
    \begin{bmatrix} M(x,u) & D^T(x,u) \\ D(x,u) & 0 \end{bmatrix}
    \begin{bmatrix} \ddot x \\ \Lambda \end{bmatrix} =
    \begin{bmatrix} Q(x,\dot x,u) \\
    Q_d(x,\dot x) - 2\alpha\,D(x)\dot x - \beta^2 \begin{bmatrix} C(x) \\ 0 \end{bmatrix}
    \end{bmatrix},
    $$

    which is Eq. (2.119) with ``D ẋ = [Ċ; C_nh] = Q1`` and ``[C; 0] = Q2`` (Eq. (2.118));
    ``(α, β)`` are the thesis' ``(β_e, γ_e)``. The holonomic constraints then obey
    ``C̈ + 2α Ċ + β² C = 0`` and the nonholonomic ones ``d(B ẋ)/dt + 2α B ẋ = 0``.

    Parameters
    ----------
    cm : CompiledModel
        The model (kernels ``M, Q, C, D, Qd``).
    t_span : (t0, tf)
        Integration interval.
    x0, xd0 : (n,) array_like
        Initial coordinates and velocities (make them consistent with
        [`consistent_initial_conditions()`][nhcontrol.simulate.consistent_initial_conditions];
        Baumgarte pulls inconsistent ones back).
    u : (k,) array_like, callable ``u(t) -> (k,)`` or Reference, optional
        Open-loop inputs (zeros when omitted). A ``Reference`` contributes its ``u0(t)``.
        Inputs that jump (steps, piecewise-constant schedules) declare their jump times in
        ``breakpoints``.
    p : (np,) array_like or mapping, optional
        Parameters (defaults when omitted).
    baumgarte : (float, float)
        ``(α, β)`` in 1/s, both ``>= 0``; ``(0, 0)`` integrates the plain index-1 form
        (Eqs. (2.115)-(2.116)).
    method : {"DOP853", "RK45", "Radau", "LSODA", "BDF"}
        ``scipy.integrate.solve_ivp`` method.
    rtol, atol : float
        Integration tolerances.
    t_eval : (N,) array_like, optional
        Output times (within ``t_span``); default: the integrator's steps.
    controller : callable ``controller(t, x, xd) -> (k,)``, optional
        Feedback. With ``sample_time`` it is called at ``t0, t0 + h, ...`` and its output held
        constant (zero-order hold) until the next instant; without, it is evaluated
        continuously in the right-hand side. Cannot be combined with ``u``.
    sample_time : float, optional
        Period ``h`` of the discrete controller.
    linearization, reference : LinearizationResult, Reference, optional
        For a python-control ``controller`` (``StateSpace`` or ``NonlinearIOSystem``, static or
        discrete): its inputs are the states of ``linearization`` it names, read from
        ``linearization.deviation(reference, t, x, ẋ)``, and ``u = u0(t) + y_c``; a discrete
        one runs with zero-order hold at its ``dt``. Continuous dynamic controllers: close the
        loop with [`to_nlsys()`][nhcontrol.simulate.to_nlsys] and ``control.interconnect``.
    events : callable ``event(t, x, xd) -> float`` or list of them, optional
        Like ``solve_ivp`` events (attributes ``terminal``, ``direction`` are honoured).
    dense_output : bool
        Keep the integrator's continuous extension (for
        [`SimulationResult.evaluate()`][nhcontrol.simulate.SimulationResult.evaluate] and
        ``Reference.from_simulation``).
    max_step : float
        Largest integrator step.
    check_initial : bool
        Check the conditioning of the saddle-point matrix at ``x0`` (raises if singular).
    exact_jacobian : bool
        For the implicit methods ("Radau", "BDF", "LSODA"), give the integrator the exact
        Jacobian of ``[ẋ; ẍ]`` (`Dynamics.jacobian()`, from the generated
        ``linearization_terms`` kernel) instead of letting scipy difference the right-hand
        side. Not used with a continuous ``controller`` (its ``∂u/∂x`` is unknown).
    max_evaluations : int or None, default `DEFAULT_MAX_EVALUATIONS`
        Work budget: right-hand-side evaluations (one kernel call and one linear solve each).
        The run stops with a `SolverError` when it is used up, or as soon as the rate of
        progress over the last few thousand evaluations shows that ``tf`` cannot be reached
        within twice the budget (a stiff model under an explicit method). ``None``: no limit.
    time_limit : float or None
        Wall-time limit in seconds (none by default).
    ud : (k,) array_like or callable ``ud(t) -> (k,)``, optional
        Rates ``u̇(t)`` of open-loop inputs that enter the nonholonomic constraints
        ``B(x, u) ẋ + b(x, u) = 0``: the acceleration level is ``D ẍ = Q_d − E u̇``
        (``E = ∂(B ẋ + b)/∂u``). Default: ``u.ud`` when ``u`` is a Reference (or the exact
        derivative of its input interpolant); the exact derivative when ``u`` is a scipy
        piecewise polynomial or spline (``CubicSpline``, ``PchipInterpolator``,
        ``make_interp_spline(t, U, k=1)`` for piecewise-linear inputs); zero for constant inputs.
        A callable ``u(t)`` whose inputs in the constraints change between the ``breakpoints``
        without ``ud`` is refused (`SimulationInputError` naming them): ``u̇ = 0`` would let the
        motion leave the constraints. Held inputs (``sample_time``) have ``u̇ = 0`` between the samples;
        at each sample where they jump, the velocities are projected onto the new constraints
        ``D(x, u⁺) ẋ + b(x, u⁺) = 0`` by the constraint impulse (`Dynamics.project_velocities`),
        so the constraints hold to round-off after the jump.
    breakpoints : (J,) array_like, optional
        Times at which the open-loop inputs ``u`` (and ``ud``) may jump. The integration stops
        at each of them; on ``[t_j, t_{j+1}]`` it reads ``u`` and ``ud`` inside the interval
        only (their one-sided limits at its ends, whichever side ``u(t_j)`` itself takes), and
        where inputs that enter the nonholonomic constraints jump, the velocities are projected
        onto the new constraints as for held inputs. The samples at ``t_j`` (one each) are
        those after the jump. Times outside ``(t0, tf)`` are ignored. Without them a jump
        inside an integration step is smoothed over by the step-size control; inputs that enter
        the nonholonomic constraints and change without ``breakpoints`` (and without ``ud``)
        are refused (see ``ud``).
        Default: ``u.breakpoints`` when ``u`` is a Reference.

    Returns
    -------
    SimulationResult

    Raises
    ------
    SolverError
        Bad arguments; a singular saddle-point matrix (the message names the redundant
        constraints, or reports that ``M`` is singular on the admissible motions); a failed
        integration; the work budget or time limit exceeded (the message says how far the
        run got and, for an explicit method, suggests ``method='Radau'`` or ``'BDF'``).

    Warns
    -----
    ConditioningWarning
        The saddle-point matrix had a condition number above ``COND_MAX`` at some output time.
    UserWarning
        The initial conditions violate the constraints by more than ``INITIAL_TOL`` (1e-8) in
        ``|C(x0)|`` or ``|D(x0) xd0|`` (checked when the first output time is ``t0``).

    Notes
    -----
    One right-hand-side evaluation is one fused kernel call (``cm.dynamics_terms`` when the model
    has it, else ``M, Q, D, Qd``), plus ``C`` when ``m > 0``, and one LAPACK ``dgesv`` solve.
    With a discrete controller each hold interval is integrated separately with the input
    constant (with ``breakpoints``, each interval between them); for the explicit and implicit Runge-Kutta/BDF methods the solver is stepped by
    hand so that the step size the error control proposes is carried over to the next interval
    (split evenly over it), otherwise (events, LSODA) ``solve_ivp`` is called per interval.

    Examples
    --------
    >>> res = forward_dynamics(cm, (0.0, 5.0), x0, xd0)          # doctest: +SKIP
    >>> res.max_holonomic_drift < 1e-8                             # doctest: +SKIP
    True
    """
    ev = ModelEvaluator(cm, p)
    n, k = ev.n, ev.k
    span = as_float_array(t_span, "t_span", shape=(2,), error=SimulationInputError)
    t0, tf = float(span[0]), float(span[1])
    if not (np.isfinite(t0) and np.isfinite(tf) and tf > t0):
        raise SimulationInputError(f"t_span must be (t0, tf) with tf > t0, got {span.tolist()}")
    X0 = ev.states(x0, "x0 (initial coordinates)", error=SimulationInputError)
    XD0 = ev.states(xd0, "xd0 (initial velocities)", error=SimulationInputError)
    if X0.shape[0] != 1 or XD0.shape[0] != 1:
        raise SimulationInputError(f"x0 and xd0 must be single points of shape ({n},), got "
                          f"{np.shape(x0)} and {np.shape(xd0)}")
    off = clock_offset(cm, t0, X0[0]) if check_initial else None
    if off is not None:
        raise SimulationInputError(
            f"the clock {off[0]!r} of model {ev.name!r} starts at {off[0]} = {off[1]:.6g} but t0 = "
            f"{off[2]:.6g}: every rheonomic term would run {off[1] - off[2]:.6g} s off (the clock is "
            f"the time, {off[0]}(t) = t). Start it at x0[{off[0]!r}] = t0 = {off[2]:.6g}, or give "
            f"t_span = ({off[1]:.6g}, ...) if that is the time meant (check_initial=False skips this)")
    try:
        alpha, beta = (float(b) for b in baumgarte)
    except (TypeError, ValueError) as exc:
        raise SimulationInputError(f"baumgarte must be a pair (alpha, beta) of numbers, got {baumgarte!r}"
                          ) from exc
    if not (alpha >= 0 and beta >= 0 and math.isfinite(alpha) and math.isfinite(beta)):
        raise SimulationInputError(f"Baumgarte constants (alpha, beta) must be finite and >= 0, got "
                          f"({alpha}, {beta}); e.g. baumgarte={DEFAULT_BAUMGARTE}")
    if method not in ("DOP853", "RK45", "Radau", "LSODA", "BDF"):
        raise SimulationInputError(f"method must be one of 'DOP853', 'RK45', 'Radau', 'LSODA', 'BDF', got "
                          f"{method!r}")
    if controller is not None and u is not None:
        raise SolverError("give either open-loop inputs u or a controller, not both; put a "
                          "feed-forward inside the controller (u_k = u_ref(t_k) + δu_k)")
    controller, sample_time = as_controller(controller, cm, sample_time, linearization, reference)
    if sample_time is not None:
        h = float(sample_time)
        if controller is None:
            raise SolverError("sample_time is the period of a discrete controller; pass "
                              "controller=... as well (open-loop inputs need no sample_time)")
        if not (math.isfinite(h) and h > 0):
            raise SolverError(f"sample_time must be a positive number of seconds, got {sample_time!r}")
        # counted before the first interval: every hold interval is at least one step
        check_evaluations((tf - t0) / h, MIN_EVALUATIONS_PER_STEP.get(str(method), 2),
                          max_evaluations if isinstance(max_evaluations, int) else None,
                          f"forward_dynamics(t_span=({t0:g}, {tf:g}), sample_time={h:g}) of model "
                          f"{getattr(cm, 'name', '?')!r}: {(tf - t0) / h:.6g} hold intervals",
                          error=SimulationInputError,
                          hint="shorten t_span, lengthen sample_time, or raise max_evaluations "
                               "(None: no budget) if a run this long is intended")
    te = None
    if t_eval is not None:
        te = as_float_array(t_eval, "t_eval", ndim=1, error=SolverError)
        slack = 1e-12 * max(1.0, tf - t0)
        if te.size == 0 or np.any(np.diff(te) < 0) or te[0] < t0 - slack or te[-1] > tf + slack:
            raise SolverError(f"t_eval must be non-empty, sorted and inside t_span = [{t0:g}, "
                              f"{tf:g}], got {te.size} times in [{te.min() if te.size else 0:g}, "
                              f"{te.max() if te.size else 0:g}]")
        te = np.clip(te, t0, tf)
    if breakpoints is None and controller is None and _is_reference(u):
        breakpoints = u.breakpoints or None                      # a Reference's jump times
    bps = as_breakpoints(breakpoints, t0, tf, controller is None)
    budget = work_budget(t0, tf, max_evaluations, time_limit, method, ev.name)
    dyn = Dynamics(ev, alpha, beta)
    y0 = np.concatenate([X0[0], XD0[0]])

    def check_u(val: Any, t: float) -> NDArray[np.float64]:
        arr = np.asarray(val, dtype=float).reshape(-1)
        if arr.shape != (k,) or not np.all(np.isfinite(arr)):
            raise SolverError(f"controller(t, x, xd) at t = {t:.6g} must return {k} finite inputs "
                              f"{list(ev.inputs)}, got {np.asarray(val).tolist()!r}")
        return arr

    # ---- input law of each segment: ufun(t, x, xd) (scalar) and its vectorised version
    rate_inputs = bool(getattr(cm, "constraint_inputs", ())) and k > 0
    ud_of_t = None
    if controller is None:
        u_of_t = as_input_function(u, ev, t0)
        seg_law = [("open", u_of_t)]
        if ud is None and rate_inputs:
            # a Reference's u̇0(t), the exact derivative of a spline, or refused
            ud = input_rates_for(u, ev, t0, tf, bps)
        elif ud is None and _is_reference(u) and callable(u.ud):
            ud = u.ud                                            # a Reference's u̇0(t)
        if ud is not None and rate_inputs:
            ud_of_t = as_input_function(ud, ev, t0)
            # for the samples and SimulationResult.evaluate: the rates after each jump
            dyn.input_rates = RightContinuous(ud_of_t, bps) if bps.size else ud_of_t
    elif ud is not None:
        raise SolverError("ud (input rates) belongs to open-loop inputs u; a controller's held "
                          "inputs have zero rate between the samples")
    elif sample_time is None:
        seg_law = [("feedback", controller)]
    else:
        seg_law = []
    if check_initial and sample_time is None:
        # (with a discrete controller the check is made with its first output, below)
        if controller is None:
            u_init = u_of_t(t0)
        else:
            u_init = check_u(controller(t0, X0[0].copy(), XD0[0].copy()), t0)
        dyn.check_conditioning(t0, X0[0], u_init if k else None)

    wrapped_events = _wrap_events(events, n)
    nfev = 0
    segments: list = []
    t_out: list[NDArray] = []
    y_out: list[NDArray] = []
    ev_times: list[list[NDArray]] = [[] for _ in wrapped_events]
    ctrl_t: list[float] = []
    ctrl_u: list[NDArray] = []
    status, message = 0, "reached the end of t_span"
    dense = dense_output or te is not None

    def integrate(a: float, b: float, y: NDArray, rhs: Callable, first: float | None,
                  jac: Callable | None = None) -> Any:
        opts: dict[str, Any] = dict(method=method, rtol=rtol, atol=atol, dense_output=dense,
                                    events=wrapped_events or None, max_step=max_step)
        if jac is not None and method in _IMPLICIT:
            opts["jac"] = jac
        if first is not None and method in ("DOP853", "RK45", "Radau", "BDF", "LSODA"):
            opts["first_step"] = min(first, b - a)
        sol = solve_ivp(rhs, (a, b), y, **opts)
        if sol.status == -1:
            raise SolverError(f"the integration of model {ev.name!r} failed at t = {sol.t[-1]:.6g} "
                              f"(interval [{a:.6g}, {b:.6g}]): {sol.message}. Try method='Radau' "
                              "for stiff problems, smaller Baumgarte constants or looser rtol/atol")
        return sol

    use_jac = exact_jacobian and method in _IMPLICIT and dyn.has_jacobian

    def make_jac(ufun: Callable[[float, NDArray, NDArray], NDArray | None],
                 udfun: Callable[[float], NDArray] | None = None) -> Callable | None:
        # exact ∂f/∂y at fixed input (open loop or held input); None lets scipy difference it
        if not use_jac:
            return None

        def jac(t: float, y: NDArray) -> NDArray:
            return dyn.jacobian(t, y[:n], y[n:], ufun(t, y[:n], y[n:]),
                                None if udfun is None else udfun(t))
        return jac

    def make_rhs(ufun: Callable[[float, NDArray, NDArray], NDArray | None],
                 udfun: Callable[[float], NDArray] | None = None) -> Callable:
        def rhs(t: float, y: NDArray) -> NDArray:
            budget.tick(t)
            x, xd = y[:n], y[n:]
            sol = dyn.accel(t, x, xd, ufun(t, x, xd), None if udfun is None else udfun(t))
            return np.concatenate([xd, sol[:n]])
        return rhs

    def run_interval(a: float, b: float, y: NDArray, law: Callable,
                     udfun: Callable[[float], NDArray] | None, first: float | None) -> tuple:
        # one hold interval [a, b]; returns its solution and the first step of the next one
        rhs, jac = make_rhs(law, udfun), make_jac(law, udfun)
        if wrapped_events or method not in _STEPPERS:
            sol = integrate(a, b, y, rhs, first, jac)
            if sol.t.size >= 2:     # start the next interval with the largest step taken
                first = float(np.max(np.diff(sol.t)))
        else:
            sol = _step_interval(method, rhs, a, b, y, rtol=rtol, atol=atol, max_step=max_step,
                                 first=first, dense=dense, model_name=ev.name, jac=jac)
            first = sol.proposal if sol.proposal > 0 else None
        return sol, first

    def keep(a: float, sol: Any, uvec: Callable, last: bool) -> bool:
        # record an interval (its end point only if it is the last); True: a terminal event
        nonlocal nfev, status, message
        nfev += sol.nfev
        segments.append((a, float(sol.t[-1]), sol.sol if dense else None, uvec))
        last = last or sol.status == 1
        t_out.append(sol.t if last else sol.t[:-1])
        y_out.append(sol.y.T if last else sol.y.T[:-1])
        for i, tev in enumerate(sol.t_events or []):
            ev_times[i].append(tev)
        if sol.status == 1:
            status, message = 1, f"a terminal event stopped the integration at t = {sol.t[-1]:.6g}"
        return sol.status == 1

    def project(y: NDArray, u_minus: NDArray, u_plus: NDArray) -> NDArray:
        # inputs in the constraints jump: re-project the velocities onto the new constraints
        if rate_inputs and not np.array_equal(u_plus, u_minus):
            return np.concatenate([y[:n], dyn.project_velocities(y[:n], y[n:], u_plus)])
        return y

    none = None
    if sample_time is None and bps.size:
        # open-loop inputs with jumps: one interval between consecutive breakpoints
        edges = np.concatenate([[t0], bps, [tf]])
        y, first, u_prev = y0, None, None
        for j in range(edges.size - 1):
            a, b = float(edges[j]), float(edges[j + 1])
            lo = a if j == 0 else float(np.nextafter(a, math.inf))
            hi = b if j == edges.size - 2 else float(np.nextafter(b, -math.inf))
            u_j = OnInterval(u_of_t, lo, hi)
            if u_prev is not None:
                y = project(y, u_prev(a), u_j(a))
            law = (lambda t, x, xd: none) if k == 0 else (lambda t, x, xd, _u=u_j: _u(t))
            sol, first = run_interval(a, b, y, law,
                                      None if ud_of_t is None else OnInterval(ud_of_t, lo, hi),
                                      first)
            uvec = OpenLoopInput(u_j, k) if k else HeldInput(np.zeros(0), 0)
            y, u_prev = sol.y[:, -1].copy(), u_j
            if keep(a, sol, uvec, j == edges.size - 2):
                break
    elif sample_time is None:
        kind, law = seg_law[0]
        if kind == "open":
            ufun = (lambda t, x, xd: none) if k == 0 else (lambda t, x, xd: u_of_t(t))
            uvec = OpenLoopInput(u_of_t, k) if k else HeldInput(np.zeros(0), 0)
        else:
            def ufun(t: float, x: NDArray, xd: NDArray) -> NDArray:
                return check_u(law(t, x.copy(), xd.copy()), t)

            def uvec(tt: NDArray, X: NDArray, XD: NDArray) -> NDArray:
                return np.array([ufun(ti, X[i], XD[i]) for i, ti in enumerate(tt)]
                                ).reshape(tt.size, k)
        sol = integrate(t0, tf, y0, make_rhs(ufun, ud_of_t), None,
                        make_jac(ufun, ud_of_t) if kind == "open" else None)
        keep(t0, sol, uvec, True)
    else:
        h = float(sample_time)
        nseg = _interval_count(tf - t0, h)
        y = y0
        first = None
        from .._util.progress import progress

        for j in progress(range(nseg), f"simulating {getattr(cm, 'name', 'model')} (hold intervals)",
                          total=nseg):
            a = t0 + j * h
            b = tf if j == nseg - 1 else t0 + (j + 1) * h
            uk = check_u(controller(a, y[:n].copy(), y[n:].copy()), a)   # type: ignore[misc]
            if j == 0 and check_initial:
                dyn.check_conditioning(a, y[:n], uk if k else None)
            if j:
                y = project(y, ctrl_u[-1], uk)
            ctrl_t.append(a)
            ctrl_u.append(uk)
            uk_arg = uk if k else None
            sol, first = run_interval(a, b, y, (lambda t, x, xd, _u=uk_arg: _u), None, first)
            y = sol.y[:, -1].copy()
            if keep(a, sol, HeldInput(uk, k), j == nseg - 1):
                break

    # ---- outputs
    T = np.concatenate(t_out)
    Y = np.concatenate(y_out)
    if te is not None:
        t_end = segments[-1][1]
        te_use = te[te <= t_end + 1e-12 * max(1.0, tf - t0)]
        starts = np.array([s[0] for s in segments])
        idx = np.clip(np.searchsorted(starts, te_use, side="right") - 1, 0, len(segments) - 1)
        Y = np.empty((te_use.size, 2 * n))
        for j in np.unique(idx):
            sel = idx == j
            Y[sel] = segments[j][2](np.clip(te_use[sel], segments[j][0], segments[j][1])).T
        T = te_use
    starts = np.array([s[0] for s in segments])
    idx = np.clip(np.searchsorted(starts, T, side="right") - 1, 0, len(segments) - 1)
    U = np.zeros((T.size, k))
    if k:
        for j in np.unique(idx):
            sel = idx == j
            U[sel] = segments[j][3](T[sel], Y[sel, :n], Y[sel, n:])
    X, XD = Y[:, :n], Y[:, n:]
    UD = None
    if ud_of_t is not None:
        UD = np.array([dyn.input_rates(ti) for ti in T]).reshape(T.size, k)
    out = dyn.stacked(X, XD, U if k else None, UD)
    if np.any(out["cond"] >= COND_MAX):
        i = int(np.argmax(out["cond"]))
        warnings.warn(f"the saddle-point matrix of Eq. (2.119) is ill conditioned at t = {T[i]:.6g} "
                      f"(cond = {out['cond'][i]:.3g} >= {COND_MAX:.0e}): accelerations and "
                      "multipliers there are unreliable (redundant constraints or a singular "
                      "configuration)", ConditioningWarning, stacklevel=2)

    def rowmax(a: NDArray) -> NDArray:
        return np.max(np.abs(a), axis=1) if a.shape[1] else np.zeros(a.shape[0])

    if T.size and abs(T[0] - t0) <= 1e-12 * max(1.0, abs(t0)):
        c0 = float(rowmax(out["C"])[0])
        v0 = float(rowmax(out["Dxd"])[0])
        if c0 > INITIAL_TOL or v0 > INITIAL_TOL:
            warnings.warn(f"the initial conditions violate the constraints: max |C(x0)| = {c0:.3g}, "
                          f"max |D(x0) xd0| = {v0:.3g} (tolerance {INITIAL_TOL:g}); Baumgarte "
                          "stabilisation pulls the motion back to the constraint manifold, so the "
                          "start is not the motion you asked for. Make (x0, xd0) consistent with "
                          "nhcontrol.simulate.consistent_initial_conditions(cm, x0, xd0, ...)",
                          UserWarning, stacklevel=2)

    if not dense_output:
        segments = [(s[0], s[1], None, s[3]) for s in segments]
    return SimulationResult(
        t=readonly(np.array(T)), x=readonly(np.array(X)), xd=readonly(np.array(XD)),
        xdd=readonly(out["xdd"]), lam=readonly(out["lam"]), u=readonly(U),
        holonomic_drift=readonly(rowmax(out["C"])), nonholonomic_drift=readonly(rowmax(out["Bxd"])),
        velocity_drift=readonly(rowmax(out["Dxd"])), condition=readonly(out["cond"]),
        coordinates=ev.coordinates, velocities=_velocity_names(cm), input_labels=ev.inputs,
        constraints=ev.constraints, model=cm, parameters=readonly(np.array(ev.p)),
        baumgarte=(alpha, beta), method=method,
        sample_time=None if sample_time is None else float(sample_time),
        control_times=readonly(np.array(ctrl_t, dtype=float)),
        control_inputs=readonly(np.array(ctrl_u, dtype=float).reshape(len(ctrl_u), k)),
        t_events=tuple(readonly(np.concatenate(e) if e else np.zeros(0)) for e in ev_times),
        status=status, message=message, nfev=int(nfev), _segments=tuple(segments), _dynamics=dyn,
        breakpoints=tuple(float(b) for b in bps))
