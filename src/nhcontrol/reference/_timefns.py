"""Helpers of the `Reference` constructors: user functions of time as vectorised, picklable
functions, input interpolants, and the checks of times, ranges, periods, jump times and rate
kernels."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ReferenceMotionError
from nhcontrol._util.validation import as_float_array, as_real, check_finite

from ._eval import ModelEvaluator

_TimeFn = Callable[[NDArray[np.float64]], NDArray[np.float64]]
"""A vectorised time function: ``(N,)`` times -> ``(N, d)`` values."""


class _Constant:
    """``t -> value`` for every time (picklable)."""

    def __init__(self, value: NDArray[np.float64]) -> None:
        self.value = np.array(value, dtype=float)

    def __call__(self, tt: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.empty((tt.shape[0], self.value.shape[0]))
        out[...] = self.value
        return out

    def one(self, t: float) -> NDArray[np.float64]:
        """The value at one time (a new array)."""
        return self.value.copy()


def _constant(value: NDArray[np.float64]) -> _TimeFn:
    return _Constant(value)


class _Vectorized:
    """A user function of time as ``(N,) -> (N, d)`` (picklable when the user function is)."""

    def __init__(self, f: Any, d: int, what: str, vectorised: bool) -> None:
        self.f, self.d, self.what, self.vectorised = f, d, what, vectorised

    def scalar_call(self, ti: float) -> NDArray[np.float64]:
        try:
            val = np.asarray(self.f(float(ti)), dtype=float)
        except (TypeError, ValueError) as exc:
            raise ReferenceMotionError(f"{self.what}(t) failed at t = {ti:.6g}: {exc}") from exc
        if val.size != self.d:
            raise ReferenceMotionError(f"{self.what}(t) must return {self.d} values, got shape {val.shape} "
                                       f"at t = {ti:.6g}")
        return val.reshape(self.d)

    def __call__(self, tt: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.vectorised:
            return np.asarray(self.f(tt), dtype=float).reshape(tt.shape[0], self.d)
        if tt.shape[0] == 0:
            return np.zeros((0, self.d))
        return np.stack([self.scalar_call(ti) for ti in tt])


def _vectorize(f: Any, d: int, what: str, probe: NDArray[np.float64]) -> _TimeFn:
    """Turn a user function of time into a vectorised ``(N,) -> (N, d)`` function.

    A constant array is accepted as well. The function is called once with an array of 3
    probe times; if it returns ``(3, d)`` rows equal to the scalar calls it is used vectorised,
    otherwise it is called point by point.
    """
    if not callable(f):
        arr = as_float_array(f, what, error=ReferenceMotionError)
        arr = arr.reshape(1) if arr.ndim == 0 and d == 1 else arr
        if arr.shape != (d,):
            raise ReferenceMotionError(f"{what} must be a callable of t or a constant array of "
                                       f"shape ({d},), got shape {arr.shape}")
        return _constant(check_finite(arr, what, error=ReferenceMotionError))
    g = _Vectorized(f, d, what, False)
    rows = np.stack([g.scalar_call(ti) for ti in probe])
    vectorised = False
    try:
        out = np.asarray(f(probe.copy()), dtype=float)
        vectorised = out.shape == (probe.size, d) and np.allclose(out, rows, rtol=1e-12, atol=1e-14)
    except Exception:  # noqa: BLE001 - a scalar-only user function, use the loop
        vectorised = False
    g.vectorised = bool(vectorised)
    return g


def _probe_times(t_range: tuple[float, float] | None, period: float | None) -> NDArray[np.float64]:
    if t_range is not None:
        return np.linspace(t_range[0], t_range[1], 3)
    if period is not None:
        return np.array([0.0, period / 3.0, 2.0 * period / 3.0])
    return np.array([0.0, 0.5, 1.0])


def _check_range(t_range: Any) -> tuple[float, float] | None:
    if t_range is None:
        return None
    tr = as_float_array(t_range, "t_range", shape=(2,), error=ReferenceMotionError)
    if not (np.all(np.isfinite(tr)) and tr[1] > tr[0]):
        raise ReferenceMotionError(f"t_range must be (t_start, t_end) with t_end > t_start, got "
                                   f"{tr.tolist()}")
    return (float(tr[0]), float(tr[1]))


def _check_breakpoints(breakpoints: ArrayLike | None, t_range: tuple[float, float] | None
                       ) -> tuple[float, ...]:
    """Sorted, distinct, finite jump times (inside ``t_range`` when there is one)."""
    if breakpoints is None:
        return ()
    bp = as_float_array(breakpoints, "breakpoints", error=ReferenceMotionError).reshape(-1)
    check_finite(bp, "breakpoints", error=ReferenceMotionError)
    if t_range is not None:
        lo, hi = t_range
        out = bp[(bp < lo) | (bp > hi)]
        if out.size:
            raise ReferenceMotionError(f"breakpoints must lie in t_range = [{lo:.6g}, {hi:.6g}] "
                                       f"(the jump times of u on the reference), got {out.tolist()}")
    return tuple(float(b) for b in np.unique(bp))


def _simulation_breakpoints(result: Any, t_range: tuple[float, float]) -> tuple[float, ...]:
    """The jump times of a simulation's inputs: its open-loop ``breakpoints``, or the control
    instants at which the held input changes."""
    bps = {float(b) for b in getattr(result, "breakpoints", ())}
    ct, cu = np.asarray(result.control_times), np.asarray(result.control_inputs)
    if ct.size > 1:
        bps |= {float(a) for a in ct[1:][np.any(cu[1:] != cu[:-1], axis=1)]}
    lo, hi = t_range
    return tuple(sorted(b for b in bps if lo < b < hi))


def _check_rate_kernels(ev: ModelEvaluator, rates: Any) -> None:
    """Raise unless ``rates`` are the rate kernels of the model's first-order states."""
    names = list(ev.inputs)
    states = list(getattr(rates, "states", ()))
    if (sorted(states + list(getattr(rates, "inputs", ()))) != sorted(names)
            or [names[i] for i in getattr(rates, "state_index", ())] != states):
        raise ReferenceMotionError(
            f"rates must be the rate kernels of model {ev.name!r} (compile_rates of the system "
            f"with first-order states among its inputs {names}), got {rates!r}")


def _check_period(period: Any) -> float | None:
    if period is None:
        return None
    T = as_real(period, "period", error=ReferenceMotionError)
    if not (np.isfinite(T) and T > 0):
        raise ReferenceMotionError(f"period must be a positive number of seconds, got {period!r}")
    return T


class _Linear:
    def __init__(self, t: NDArray[np.float64], y: NDArray[np.float64]) -> None:
        self.t, self.y = t, y

    def __call__(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.stack([np.interp(s, self.t, self.y[:, j]) for j in range(self.y.shape[1])], axis=1)


class _Previous(_Linear):
    def __call__(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        idx = np.clip(np.searchsorted(self.t, s, side="right") - 1, 0, self.t.shape[0] - 1)
        return self.y[idx]


class _Slope(_Linear):
    """The time derivative of `_Linear`: the slope of each interval (right-continuous)."""

    def __call__(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        idx = np.clip(np.searchsorted(self.t, s, side="right") - 1, 0, self.t.shape[0] - 2)
        return (np.diff(self.y, axis=0) / np.diff(self.t)[:, None])[idx]


def _interp_rate(f: _TimeFn) -> _TimeFn | None:
    """The exact time derivative of an interpolant of `_interp` (None: zero, a held input)."""
    spl = sys.modules.get("scipy.interpolate")     # imported where splines are made (_interp)
    if spl is not None and isinstance(f, spl.CubicSpline):
        return f.derivative()
    if isinstance(f, _Previous):
        return None
    if isinstance(f, _Linear):
        return _Slope(f.t, f.y)
    return None


def _interp(t: NDArray[np.float64], y: NDArray[np.float64], kind: str, periodic: bool) -> _TimeFn:
    """Vectorised interpolant of samples ``y (N, d)`` at ``t (N,)`` (picklable)."""
    if kind == "cubic":
        from scipy.interpolate import CubicSpline   # here: loading nhcontrol needs no scipy

        bc = "periodic" if periodic and np.allclose(y[-1], y[0]) else "not-a-knot"
        if t.shape[0] < 4 and bc != "periodic":
            bc = "natural"
        return CubicSpline(t, y, bc_type=bc)
    if kind == "linear":
        return _Linear(t, y)
    if kind == "previous":
        return _Previous(t, y)
    raise ReferenceMotionError(f"u_interpolation must be 'cubic', 'linear' or 'previous', got {kind!r}")
