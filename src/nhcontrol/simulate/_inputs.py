"""Input laws of [`forward_dynamics()`][nhcontrol.simulate.forward_dynamics]: open-loop inputs
``u(t)`` and their rates as functions of time, held inputs, and the intervals between the jump
times (``breakpoints``) of open-loop inputs.

All are module-level classes, so a `SimulationResult` that keeps them pickles when the user's
functions do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import SimulationInputError, SolverError
from nhcontrol._util.validation import as_float_array, check_finite
from nhcontrol.reference._eval import ModelEvaluator


class HeldInput:
    """Input held constant over a segment, vectorised ``(t, X, Xd) -> (N, k)`` (picklable)."""

    def __init__(self, u: NDArray, k: int) -> None:
        self.u, self.k = np.array(u, dtype=float).reshape(k), k

    def __call__(self, tt: NDArray, X: NDArray, XD: NDArray) -> NDArray:
        return np.broadcast_to(self.u, (tt.size, self.k)).copy()


class OpenLoopInput:
    """Open-loop input ``u(t)``, vectorised (picklable when ``u`` is)."""

    def __init__(self, u_of_t: Callable[[float], NDArray], k: int) -> None:
        self.u_of_t, self.k = u_of_t, k

    def __call__(self, tt: NDArray, X: NDArray, XD: NDArray) -> NDArray:
        return np.array([self.u_of_t(ti) for ti in tt]).reshape(tt.size, self.k)


def as_input_function(u: Any, ev: ModelEvaluator, t0: float) -> Callable[[float], NDArray]:
    """Turn ``u`` (None, constant array, callable u(t), Reference) into ``t -> (k,)``."""
    k = ev.k
    if u is None:
        return ConstantInput(np.zeros(k))
    if hasattr(u, "u") and hasattr(u, "sample") and callable(u.u):   # a Reference
        u = u.u
    if callable(u):
        probe = np.asarray(u(t0), dtype=float).reshape(-1)
        if probe.shape != (k,):
            raise SolverError(f"u(t) must return {k} inputs {list(ev.inputs)}, got shape "
                              f"{np.shape(u(t0))} at t = {t0:.6g}")
        return UserInput(u, k)
    arr = as_float_array(u, "u (inputs)", error=SolverError).reshape(-1)
    if arr.shape != (k,):
        raise SolverError(f"u (inputs) must have {k} entries {list(ev.inputs)}, got "
                          f"{np.shape(u)}; pass a constant array, a callable u(t) or a Reference")
    return ConstantInput(check_finite(arr, "u (inputs)", error=SolverError))


class ConstantInput:
    """A constant input ``t -> u``."""

    def __init__(self, u: NDArray) -> None:
        self.u = u

    def __call__(self, t: float) -> NDArray:
        return self.u


class UserInput:
    """A user's ``u(t)`` checked to shape ``(k,)`` at each call."""

    def __init__(self, u: Callable[[float], Any], k: int) -> None:
        self.u, self.k = u, k

    def __call__(self, t: float) -> NDArray:
        return np.asarray(self.u(t), dtype=float).reshape(self.k)


class OnInterval:
    """An open-loop ``t -> (k,)`` read on ``[lo, hi]`` only (picklable when ``f`` is).

    With ``lo`` just above a breakpoint and ``hi`` just below the next one, the interval sees
    the one-sided limits of ``f`` at its ends, whichever side ``f`` itself takes at a jump.
    """

    def __init__(self, f: Callable[[float], NDArray], lo: float, hi: float) -> None:
        self.f, self.lo, self.hi = f, lo, hi

    def __call__(self, t: float) -> NDArray:
        return self.f(min(max(t, self.lo), self.hi))


class RightContinuous:
    """``f`` with its right limit at the ``breakpoints`` (picklable when ``f`` is): the value
    that belongs to the state after a jump, as sampled in the results."""

    def __init__(self, f: Callable[[float], NDArray], breakpoints: NDArray) -> None:
        self.f, self.breakpoints = f, breakpoints

    def __call__(self, t: float) -> NDArray:
        if np.any(self.breakpoints == t):
            t = float(np.nextafter(t, math.inf))
        return self.f(t)


def as_breakpoints(breakpoints: ArrayLike | None, t0: float, tf: float,
                   open_loop: bool) -> NDArray[np.float64]:
    """The sorted jump times of open-loop inputs strictly inside ``(t0, tf)``."""
    if breakpoints is None:
        return np.zeros(0)
    if not open_loop:
        raise SolverError("breakpoints are the jump times of open-loop inputs u; a discrete "
                          "controller's inputs jump at its samples (sample_time), which are "
                          "breakpoints already")
    bp = as_float_array(breakpoints, "breakpoints", error=SimulationInputError).reshape(-1)
    if not np.all(np.isfinite(bp)):
        raise SimulationInputError(f"breakpoints must be finite times (the jumps of u inside "
                                   f"t_span = [{t0:g}, {tf:g}]), got {bp.tolist()}")
    return np.unique(bp[(bp > t0) & (bp < tf)])


def _exact_derivative(u: Any) -> Callable[[float], Any] | None:
    """The exact time derivative of a piecewise-polynomial input (scipy's ``PPoly`` family -
    ``CubicSpline``, ``Akima1DInterpolator``, ``PchipInterpolator`` - and ``BSpline`` such as
    ``make_interp_spline(t, U, k=1)``, the piecewise-linear input), or None."""
    from scipy.interpolate import BSpline, PPoly
    if isinstance(u, (PPoly, BSpline)):
        return u.derivative()
    return None


def input_rates_for(u: Any, ev: ModelEvaluator, t0: float, tf: float,
                    bps: NDArray[np.float64]) -> Callable[[float], Any] | None:
    """Rates ``u̇(t)`` of open-loop inputs ``u`` given without ``ud`` when inputs enter the
    nonholonomic constraints: exact where they can be (a `Reference`'s rates or the derivative
    of its input interpolant; a scipy spline or piecewise polynomial), None for inputs that are
    constant between the ``bps`` (zero rates are then right); otherwise `SimulationInputError`
    naming the inputs, the constraints and the fix (a time-varying ``u(t)`` with ``u̇ = 0`` in
    the acceleration level ``D ẍ = Q_d − E u̇`` leaves the constraints)."""
    names = list(ev.inputs)
    cin = [c for c in getattr(ev.cm, "constraint_inputs", ()) if c in names]
    if not cin or u is None:
        return None
    is_ref = hasattr(u, "ud") and hasattr(u, "sample") and hasattr(u, "breakpoints")
    if is_ref:
        if getattr(u, "has_input_rates", True):
            return u.ud
        from nhcontrol.reference._timefns import _interp_rate
        fu = getattr(u, "_fu", None)
        rate = _interp_rate(fu) if fu is not None else None
        if rate is not None:
            return _DerivativeOf(rate, ev.k)
        f = u.u
        fix = "build the Reference with its rates: Reference.from_functions(..., u=..., ud=...)"
    else:
        d = _exact_derivative(u)
        if d is not None:
            return d
        if not callable(u):
            return None     # constant inputs: zero rates
        f = u
        fix = ("pass ud=lambda t: ... (the exact rates), or give u as a Reference with rates, or as "
               "a scipy spline that is differentiated exactly (scipy.interpolate.CubicSpline(t, U); "
               "make_interp_spline(t, U, k=1) for a piecewise-linear input)")
    edges = np.concatenate([[t0], bps[(bps > t0) & (bps < tf)], [tf]])
    idx = [names.index(c) for c in cin]
    for a, b in zip(edges[:-1], edges[1:]):
        probes = a + (b - a) * np.linspace(0.05, 0.95, 7)
        vals = np.array([np.asarray(f(float(t)), dtype=float).reshape(-1)[idx] for t in probes])
        spread = np.abs(vals - vals[0]).max(axis=0)
        moving = [cin[j] for j in range(len(cin)) if spread[j] > 1e-12 * (1.0 + np.abs(vals[:, j]).max())]
        if moving:
            j = cin.index(moving[0])
            raise SimulationInputError(
                f"the inputs {moving} enter the nonholonomic constraints of model {ev.name!r} and u(t) "
                f"changes in time ({moving[0]}({probes[0]:.4g}) = {vals[0, j]:.6g}, "
                f"{moving[0]}({probes[-1]:.4g}) = {vals[-1, j]:.6g}) but no input rates ud were given: "
                f"the acceleration level D ẍ = Q_d − E u̇ would take u̇ = 0 and the motion would leave "
                f"the constraints. Fix: {fix}. (Inputs that only jump: give their jump times as "
                f"breakpoints=...)")
    return None


class _DerivativeOf:
    """``t -> (k,)`` from a vectorised time function (picklable)."""

    def __init__(self, f: Callable, k: int) -> None:
        self.f, self.k = f, k

    def __call__(self, t: float) -> NDArray:
        return np.asarray(self.f(np.atleast_1d(float(t))), dtype=float).reshape(-1)[: self.k]

