"""The reference motion ``x0(t), xd0(t), xdd0(t), Λ0(t), u0(t)`` about which one linearizes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ReferenceMotionError, TimeRangeError
from nhcontrol._util.validation import as_float_array, as_real, as_times, check_finite, readonly

from ._eval import ModelEvaluator, clock_offset
from .admissibility import (ADMISSIBILITY_TOL, SAMPLED_ADMISSIBILITY_TOL, check_admissible,
                            check_rates)
from .inverse import INVERSE_DYNAMICS_TOL, inverse_dynamics
from .residuals import ResidualReport, compute_residuals
from ._timefns import (_interp_rate, _Previous, _Vectorized, _check_breakpoints, _check_period,
                       _check_range, _check_rate_kernels, _constant, _interp, _probe_times,
                       _simulation_breakpoints, _vectorize)
from . import _timefns
from nhcontrol._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

# The time functions were defined here before they moved to _timefns: references pickled then
# name them under this module, so the names stay (same attribute layouts).
_Constant, _Linear = _timefns._Constant, _timefns._Linear

__all__ = ["Reference", "ReferenceSamples", "CHECK_TOL"]

CHECK_TOL = 1e-9
"""Default absolute tolerance of [`Reference.check()`][nhcontrol.reference.Reference.check]."""

_TimeFn = Callable[[NDArray[np.float64]], NDArray[np.float64]]
"""A vectorised time function: ``(N,)`` times -> ``(N, d)`` values."""
UInterpolation = Literal["cubic", "linear", "previous"]


@dataclass(frozen=True)
class ReferenceSamples:
    """A reference motion sampled at times ``t`` (read-only arrays).

    Attributes
    ----------
    t : (N,) ndarray
    x, xd, xdd : (N, n) ndarray
        ``x0``, ``ẋ0``, ``ẍ0``.
    lam : (N, m + l) ndarray
        ``Λ0``, holonomic first.
    u : (N, k) ndarray
        ``u0``.
    """

    __repr__ = concise_repr

    t: NDArray[np.float64]
    x: NDArray[np.float64]
    xd: NDArray[np.float64]
    xdd: NDArray[np.float64]
    lam: NDArray[np.float64]
    u: NDArray[np.float64]


class StateComponent:
    """``t -> fn(t)[index]``: one of the arrays of a closed-form motion, as a picklable function.

    Closed-form references return ``(x, ẋ, ẍ)`` from one function of time; a
    [`Reference`][nhcontrol.reference.Reference] built from ``StateComponent(f, 0)``,
    ``StateComponent(f, 1)`` and
    ``StateComponent(f, 2)`` pickles whenever ``f`` does (a module-level function or a
    `functools.partial()` of one), unlike a lambda or a local function.

    Parameters
    ----------
    fn : callable
        ``fn(t)`` returning a sequence of arrays.
    index : int
        Which of them.
    """

    def __init__(self, fn: Any, index: int) -> None:
        self.fn, self.index = fn, int(index)

    def __call__(self, t: Any) -> Any:
        return self.fn(t)[self.index]

    def __repr__(self) -> str:
        return f"StateComponent({self.fn!r}, {self.index})"


class _InverseLam:
    """``Λ0(t)`` by inverse dynamics, Eq. (2.112), at the requested times (picklable)."""

    def __init__(self, cm: CompiledModel, fx: _TimeFn, fxd: _TimeFn, fxdd: _TimeFn, fu: _TimeFn,
                 p: NDArray[np.float64], k: int, ml: int, tol: float, check: bool) -> None:
        self.cm, self.fx, self.fxd, self.fxdd, self.fu = cm, fx, fxd, fxdd, fu
        self.p, self.k, self.ml, self.tol, self.check = p, k, ml, tol, check

    def __call__(self, tt: NDArray[np.float64]) -> NDArray[np.float64]:
        U = self.fu(tt) if self.k else None
        res = inverse_dynamics(self.cm, self.fx(tt), self.fxd(tt), self.fxdd(tt), U, self.p,
                               tol=self.tol, check=self.check, t=tt)
        return np.asarray(res.lam).reshape(tt.shape[0], self.ml)


class _Affine:
    """``x0 + ẋ0 t`` (picklable)."""

    def __init__(self, x0: NDArray[np.float64], xd0: NDArray[np.float64]) -> None:
        self.x0, self.xd0 = np.array(x0, dtype=float), np.array(xd0, dtype=float)

    def __call__(self, tt: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.x0[None, :] + tt[:, None] * self.xd0[None, :]

    def one(self, t: float) -> NDArray[np.float64]:
        """The value at one time ``t`` (the same numbers as a row of ``self(tt)``)."""
        return self.x0 + t * self.xd0


class _DenseSimulation:
    """One dense evaluation of a simulation serves x, ẋ, ẍ, Λ and u at the same times."""

    def __init__(self, result: Any) -> None:
        self.result = result
        self._key: bytes | None = None
        self._val: Any = None

    def __call__(self, tt: NDArray[np.float64]) -> Any:
        key = tt.tobytes()
        if self._key != key:
            self._key, self._val = key, self.result.evaluate(tt)
        return self._val

    def __getstate__(self) -> dict:
        return {"result": self.result, "_key": None, "_val": None}


class _Field:
    """A named field of a `_DenseSimulation` evaluation (picklable)."""

    def __init__(self, dense: _DenseSimulation, name: str) -> None:
        self.dense, self.name = dense, name

    def __call__(self, tt: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.array(getattr(self.dense(tt), self.name))


@dataclass(frozen=True, eq=False)
class Reference:
    """A reference motion ``x0(t), ẋ0(t), ẍ0(t), Λ0(t), u0(t)`` of a model.

    Build it with `from_functions()`, `constant_velocity()`, `equilibrium()`,
    `from_samples()` or `from_simulation()`, not with the constructor.

    Attributes
    ----------
    coordinates : tuple of str
        Names of the ``n`` coordinates (the model's).
    inputs : tuple of str
        Names of the ``k`` inputs.
    constraints : tuple of str
        Names of the ``m + l`` constraints (rows of ``D``; order of ``Λ``).
    parameters : (np,) ndarray
        The parameter vector ``p`` the motion belongs to.
    steady : bool
        True when the linearization about this motion is time invariant (relative
        equilibria such as the bicycle's steady forward motion).
    period : float or None
        Period of a periodic motion.
    t_range : (float, float) or None
        Times on which the motion is defined (``None``: all times).
    model_name : str
    source : str
        How it was built (``"functions"``, ``"constant_velocity"``, ``"samples"``,
        ``"simulation"``).
    check_tol : float
        Relative tolerance of the admissibility check (`nhcontrol.reference.admissibility`)
        run when the reference is built and by `nhcontrol.linearize()`.
    lam_source : str
        ``"given"`` (by the user), ``"inverse_dynamics"`` (Eq. (2.112)) or ``"simulation"``.
    breakpoints : tuple of float
        Times at which the inputs ``u0`` (and their rates ``u̇0``) jump: a piecewise-constant
        schedule, a zero-order hold. Given to `from_functions()` and `from_samples()`, carried
        by `from_simulation()` (the run's ``breakpoints`` or control instants);
        ``forward_dynamics(cm, ..., u=ref)`` integrates between them (its ``breakpoints``
        default), and a linearization at a jump time takes the value ``u0(t_j)`` the reference
        gives there (one side of the jump; see `u_limits()`).

    Notes
    -----
    ``x(t)`` etc. accept a scalar ``t`` (result ``(n,)``) or an array ``(N,)`` (result
    ``(N, n)``). When ``Λ0`` is not given, it is obtained by inverse dynamics, Eq. (2.112),
    at the requested times.

    Every constructor checks, at three probe times (the ends and the middle of ``t_range``, or
    of one period, else ``t = 0, 0.5, 1``), that the motion satisfies ``C(x0) = 0``,
    ``D(x0) ẋ0 = 0``, ``D ẍ0 = Qd`` and ``M ẍ0 + Dᵀ Λ0 = Q(x0, ẋ0, u0)`` relative to the size of
    their terms (`nhcontrol.reference.admissibility`; tolerance ``check_tol``), and raises
    `ReferenceMotionError` naming the constraint or coordinate, the residual, the time and
    the fix. ``check=False`` skips it (e.g. to build a deliberately inconsistent motion for a
    test); `nhcontrol.linearize()` checks again at the times it uses.
    """

    coordinates: tuple[str, ...]
    inputs: tuple[str, ...]
    constraints: tuple[str, ...]
    parameters: NDArray[np.float64]
    steady: bool
    period: float | None
    t_range: tuple[float, float] | None
    model_name: str
    source: str
    _fx: _TimeFn = field(repr=False)
    _fxd: _TimeFn = field(repr=False)
    _fxdd: _TimeFn = field(repr=False)
    _flam: _TimeFn = field(repr=False)
    _fu: _TimeFn = field(repr=False)
    _wrap_t0: float | None = field(default=None, repr=False)
    check_tol: float = ADMISSIBILITY_TOL
    lam_source: str = "given"
    _fud: _TimeFn | None = field(default=None, repr=False)
    breakpoints: tuple[float, ...] = ()

    # ------------------------------------------------------------------ evaluation
    @property
    def n(self) -> int:
        """Number of coordinates."""
        return len(self.coordinates)

    def _times(self, t: ArrayLike) -> tuple[NDArray[np.float64], bool]:
        if type(t) is float and math.isfinite(t):
            tt, scalar = np.array([t]), True    # one finite time (the one-point hot path)
        elif type(t) is np.ndarray and t.ndim == 1 and t.dtype == np.float64 \
                and np.isfinite(t).all():
            tt, scalar = t.copy(), False        # already finite float64 times (linearize)
        else:
            ta = as_times(t, "t", error=ReferenceMotionError)
            scalar = ta.ndim == 0
            tt = np.atleast_1d(ta).astype(float)
            check_finite(tt, "t", error=ReferenceMotionError)
        if self.period is not None and self._wrap_t0 is not None:
            tt = self._wrap_t0 + np.mod(tt - self._wrap_t0, self.period)
        elif self.t_range is not None and self.period is None and tt.size:
            lo, hi = self.t_range
            slack = 1e-9 * max(1.0, hi - lo)
            bad = (tt < lo - slack) | (tt > hi + slack)
            if np.any(bad):
                raise TimeRangeError(f"the reference of {self.model_name!r} is defined on "
                                     f"t in [{lo:.6g}, {hi:.6g}], got t = {tt[bad][0]:.6g}; "
                                     "evaluate inside t_range")
            tt = np.clip(tt, lo, hi)
        return tt, scalar

    def _ev(self, f: _TimeFn, t: ArrayLike) -> NDArray[np.float64]:
        tt, scalar = self._times(t)
        out = np.asarray(f(tt), dtype=float)
        return out[0] if scalar else out

    def x(self, t: ArrayLike) -> NDArray[np.float64]:
        """Coordinates ``x0(t)``: ``(n,)`` for scalar ``t``, ``(N, n)`` for ``(N,)``."""
        return self._ev(self._fx, t)

    def xd(self, t: ArrayLike) -> NDArray[np.float64]:
        """Velocities ``ẋ0(t)``."""
        return self._ev(self._fxd, t)

    def xdd(self, t: ArrayLike) -> NDArray[np.float64]:
        """Accelerations ``ẍ0(t)``."""
        return self._ev(self._fxdd, t)

    def lam(self, t: ArrayLike) -> NDArray[np.float64]:
        """Lagrange multipliers ``Λ0(t)`` (``(m + l,)``; inverse dynamics Eq. (2.112) if not given)."""
        return self._ev(self._flam, t)

    def u(self, t: ArrayLike) -> NDArray[np.float64]:
        """Inputs ``u0(t)`` (``(k,)``)."""
        return self._ev(self._fu, t)

    def ud(self, t: ArrayLike) -> NDArray[np.float64]:
        """Input rates ``u̇0(t)`` (``(k,)``): given with ``ud=`` (`from_functions()`), else zero
        (constant or piecewise-constant inputs). They matter for inputs that enter the
        nonholonomic constraints, whose acceleration level is ``D ẍ0 = Q_d − E u̇0``."""
        if self._fud is None:
            tt, scalar = self._times(t)
            k = len(self.inputs)
            return np.zeros(k) if scalar else np.zeros((tt.shape[0], k))
        return self._ev(self._fud, t)

    @property
    def has_input_rates(self) -> bool:
        """True when the input rates ``u̇0`` were given (``ud=``, or a simulation's), False
        when `ud()` returns zeros because none were."""
        return self._fud is not None

    def u_limits(self, t: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(u0(t⁻), u0(t⁺))``: the inputs just before and just after ``t`` (equal unless
        ``t`` is one of the `breakpoints`, where they are the two sides of the jump).

        Linearize on each side of a jump at the time next to it, e.g.
        ``np.nextafter(t_j, -np.inf)`` and ``np.nextafter(t_j, np.inf)``; ``linearize`` at
        ``t_j`` itself takes ``u0(t_j)``, whichever side the reference gives there.
        """
        tt = float(as_real(t, "t", error=ReferenceMotionError))
        if tt not in self.breakpoints:
            u = self.u(tt)
            return u, u.copy()
        return (self.u(float(np.nextafter(tt, -np.inf))), self.u(float(np.nextafter(tt, np.inf))))

    def values(self, t: ArrayLike) -> tuple[NDArray[np.float64], ...]:
        """``(x0, ẋ0, ẍ0, Λ0, u0)`` at ``t`` with one check of the times (what ``linearize``
        needs; the same numbers as the five methods)."""
        if type(t) is float and self.period is None and self.t_range is None:
            one = self.__dict__.get("_one")
            if one is None:     # constant and affine functions of time: one point without a
                one = all(hasattr(f, "one") for f in    # stacked axis (the same numbers)
                          (self._fx, self._fxd, self._fxdd, self._flam, self._fu))
                object.__setattr__(self, "_one", one)   # a cache, not a field
            if one and math.isfinite(t):
                return (self._fx.one(t), self._fxd.one(t), self._fxdd.one(t),
                        self._flam.one(t), self._fu.one(t))
        tt, scalar = self._times(t)
        shared: dict[int, Any] = {}
        vals = []
        for fn, index, d, f in self._values_plan():
            if fn is None:
                vals.append(np.asarray(f(tt), dtype=float))
                continue
            # x, ẋ, ẍ given as StateComponent(fn, i) of one vectorised fn: call fn once
            key = id(fn)
            if key not in shared:
                shared[key] = fn(tt)
            vals.append(np.asarray(shared[key][index], dtype=float).reshape(tt.shape[0], d))
        return tuple(v[0] for v in vals) if scalar else tuple(vals)

    def _values_plan(self) -> tuple[tuple[Any, int, int, _TimeFn], ...]:
        """How `values()` evaluates the five functions, decided once per reference:
        ``(fn, index, d, f)`` with ``fn`` the shared vectorised function of a
        ``StateComponent`` (else None: call ``f``)."""
        plan = self.__dict__.get("_plan")
        if plan is None:
            rows = []
            for f in (self._fx, self._fxd, self._fxdd, self._flam, self._fu):
                inner = getattr(f, "f", None)
                if isinstance(inner, StateComponent) and getattr(f, "vectorised", False):
                    rows.append((inner.fn, inner.index, f.d, f))
                else:
                    rows.append((None, 0, 0, f))
            plan = tuple(rows)
            object.__setattr__(self, "_plan", plan)   # a cache, not a field (frozen dataclass)
        return plan

    def sample(self, ts: ArrayLike) -> ReferenceSamples:
        """All quantities at times ``ts`` (``(N,)``) as a [`ReferenceSamples`][nhcontrol.reference.ReferenceSamples]."""
        tt = np.atleast_1d(np.asarray(ts, dtype=float))
        return ReferenceSamples(t=readonly(np.array(tt)), x=readonly(np.array(self.x(tt))),
                                xd=readonly(np.array(self.xd(tt))),
                                xdd=readonly(np.array(self.xdd(tt))),
                                lam=readonly(np.array(self.lam(tt))),
                                u=readonly(np.array(self.u(tt))))

    def default_times(self, num: int = 101) -> NDArray[np.float64]:
        """Times used by `check()` when none are given.

        ``num`` points over ``t_range``, else over one period, else ``[0.0]``.
        """
        if self.t_range is not None:
            return np.linspace(self.t_range[0], self.t_range[1], num)
        if self.period is not None:
            t0 = self._wrap_t0 or 0.0
            return np.linspace(t0, t0 + self.period, num)
        return np.array([0.0])

    def check(self, cm: CompiledModel, ts: ArrayLike | None = None, *, tol: float = CHECK_TOL,
              raise_on_error: bool = False) -> ResidualReport:
        """Residuals of the motion in the constraints and the equations of motion.

        Parameters
        ----------
        cm : CompiledModel
            The model the reference belongs to (same coordinates).
        ts : (N,) array_like, optional
            Sample times (default `default_times()`).
        tol : float
            Absolute tolerance for every residual.
        raise_on_error : bool
            Raise `ReferenceMotionError` with the numbers when a residual exceeds ``tol``.

        Returns
        -------
        ResidualReport
            ``|C|`` (Eq. (2.109)), ``|D ẋ|`` (Eq. (2.114)), ``|D ẍ - Qd|`` (Eq. (2.116)),
            ``|M ẍ + Dᵀ Λ - Q|`` (Eq. (2.108)).
        """
        if tuple(cm.coordinates) != self.coordinates:
            raise ReferenceMotionError(
                f"the reference has coordinates {list(self.coordinates)} but model "
                f"{getattr(cm, 'name', '?')!r} has {list(cm.coordinates)}; check it against the "
                "model it was built for")
        ev = ModelEvaluator(cm, self.parameters)
        tt = self.default_times() if ts is None else np.atleast_1d(np.asarray(ts, dtype=float))
        s = self.sample(tt)
        report = compute_residuals(ev, s.t, s.x, s.xd, s.xdd, s.lam,
                                   None if ev.k == 0 else s.u, tol,
                                   None if ev.k == 0 else self.ud(s.t))
        if raise_on_error:
            report.raise_if_failed(f"the reference motion of {self.model_name!r}")
            off = clock_offset(cm, s.t, s.x)
            if off is not None:
                raise ReferenceMotionError(
                    f"the reference motion of {self.model_name!r} has its clock {off[0]!r} at "
                    f"{off[0]} = {off[1]:.6g} at t = {off[2]:.6g}: the clock is the time ({off[0]}(t) = t), "
                    f"so every rheonomic term is {off[1] - off[2]:.6g} s off. Give x0(t) with "
                    f"{off[0]} = t")
        return report

    def __repr__(self) -> str:
        return (f"Reference({self.model_name!r}, source={self.source!r}, n={self.n}, "
                f"steady={self.steady}, period={self.period}, t_range={self.t_range})")

    def save(self, path: Any, ts: ArrayLike | None = None, *, num: int = 201) -> Any:
        """Save the motion sampled at ``ts`` to ``path`` (``.npz`` with JSON metadata).

        A reference is made of functions of time; what is stored is ``x0, ẋ0, ẍ0, Λ0, u0`` at
        the times ``ts`` (default `default_times()` with ``num`` points: ``t_range`` or one
        period) with the names, parameters and flags. `load()` interpolates them again
        (`from_samples()`: quintic Hermite in ``x``, exact at the samples), so save at times
        dense enough for the motion.

        Raises
        ------
        ReferenceMotionError
            Fewer than 6 times (a steady reference defined for all ``t`` has no default: give
            ``ts``).
        """
        from .._util.storage import save_npz

        tt = self.default_times(num) if ts is None else as_float_array(ts, "ts", ndim=1,
                                                                       error=ReferenceMotionError)
        if tt.size < 6:
            raise ReferenceMotionError(
                f"Reference.save needs at least 6 sample times, got {tt.size}; this reference "
                f"(source {self.source!r}, t_range {self.t_range}, period {self.period}) has no finite "
                "time range: pass ts=np.linspace(t0, t1, N)")
        smp = self.sample(tt)
        return save_npz(path, "Reference", {"t": smp.t, "x": smp.x, "xd": smp.xd, "xdd": smp.xdd,
                                            "lam": smp.lam, "u": smp.u, "parameters": self.parameters},
                        {"coordinates": list(self.coordinates), "inputs": list(self.inputs),
                         "constraints": list(self.constraints), "steady": bool(self.steady),
                         "period": self.period, "model_name": self.model_name, "source": self.source,
                         "breakpoints": list(self.breakpoints)})

    @classmethod
    def load(cls, path: Any, cm: CompiledModel) -> "Reference":
        """Read a file of `save()` for the model ``cm`` (its coordinates, inputs and
        constraints must match). The motion is periodic (``period`` kept) when the samples span
        one period and the last equals the first; otherwise it is defined on the sampled range.
        """
        from .._util.storage import LoadedFile

        from ._eval import constraint_names

        f = LoadedFile(path, "Reference")
        meta = {key: f.names(key) for key in ("coordinates", "inputs", "constraints")}
        for key, have in (("coordinates", tuple(cm.coordinates)), ("inputs", tuple(cm.inputs)),
                          ("constraints", constraint_names(cm))):
            if tuple(have) != meta[key]:
                raise ReferenceMotionError(f"{path}: the saved reference has {key} {list(meta[key])}, the model "
                                           f"{getattr(cm, 'name', '?')!r} has {list(have)}; load it with "
                                           "the model it was saved from")
        t = f.array("t", ndim=1)
        if t.size < 2 or np.any(np.diff(t) <= 0):
            raise f.fail("t", f"is not an increasing sequence of at least 2 times (got {t[:6].tolist()})")
        N, n, k, ml = t.size, len(meta["coordinates"]), len(meta["inputs"]), len(meta["constraints"])
        arr = {"t": t}
        for key, width in (("x", n), ("xd", n), ("xdd", n), ("lam", ml), ("u", k)):
            arr[key] = f.array(key, ndim=2)
            f.shape(key, arr[key], (N, width), f"{N} times and {width} names")
        arr["parameters"] = f.array("parameters", ndim=1)
        f.shape("parameters", arr["parameters"], (len(getattr(cm, "parameters", ())),),
                f"model {getattr(cm, 'name', '?')!r}")
        per = f.number("period", positive=True, allow_none=True)
        steady = f.flag("steady")
        bps = f.numbers("breakpoints") if "breakpoints" in f.meta else None
        ev = ModelEvaluator(cm, arr["parameters"])
        periodic = bool(per is not None and abs(t[-1] - t[0] - per) <= 1e-9 * per
                        and all(np.allclose(arr[k][-1], arr[k][0], rtol=1e-10, atol=1e-12)
                                for k in ("x", "xd", "xdd", "lam", "u")))
        return f.build(lambda: cls.from_samples(cm, t, arr["x"], arr["xd"], arr["xdd"],
                                                u=arr["u"] if ev.k else None, p=arr["parameters"],
                                                lam=arr["lam"], periodic=periodic, steady=steady,
                                                breakpoints=None if bps is None else list(bps)))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def _build(cls, cm: CompiledModel, ev: ModelEvaluator, fx: _TimeFn, fxd: _TimeFn, fxdd: _TimeFn,
               flam: _TimeFn | None, fu: _TimeFn, *, steady: bool, period: float | None,
               t_range: tuple[float, float] | None, source: str, tol: float,
               check_dynamics: bool, check: bool = True, check_tol: float = ADMISSIBILITY_TOL,
               lam_source: str = "given", wrap_t0: float | None = None,
               fud: _TimeFn | None = None, rates: Any = None,
               breakpoints: ArrayLike | None = None) -> "Reference":
        ml = ev.m + ev.l
        bps = _check_breakpoints(breakpoints, t_range)
        if not (isinstance(check_tol, (int, float)) and np.isfinite(check_tol) and check_tol > 0):
            raise ReferenceMotionError(f"tol must be a positive number, got {check_tol!r}")
        # evaluate once at probe times: shapes, finiteness and admissibility
        probe = _probe_times(t_range, period)
        vals: dict[str, NDArray[np.float64]] = {}
        for name, f, d in (("x", fx, ev.n), ("xd", fxd, ev.n), ("xdd", fxdd, ev.n),
                           ("u", fu, ev.k), ("lam", flam, ml),
                           ("ud", fud if fud is not None else _constant(np.zeros(ev.k)), ev.k)):
            if f is None:          # Λ0 by inverse dynamics: least squares here, checked below
                f = _InverseLam(cm, fx, fxd, fxdd, fu, ev.p, ev.k, ml, tol, False)
            val = np.asarray(f(probe), dtype=float)
            if val.shape != (probe.size, d):
                raise ReferenceMotionError(f"{name}(t) must give shape ({d},) per time, got "
                                           f"{val.shape[1:]} (for {probe.size} times: {val.shape})")
            vals[name] = check_finite(val, f"{name}(t)", error=ReferenceMotionError,
                                      where=f"at t in {probe.tolist()}")
        if check and not steady and wrap_t0 is None:
            off = clock_offset(cm, probe, vals["x"])
            if off is not None:
                raise ReferenceMotionError(
                    f"the reference motion of {ev.name!r} has its clock {off[0]!r} at {off[0]} = "
                    f"{off[1]:.6g} at t = {off[2]:.6g}: the clock is the time ({off[0]}(t) = t, "
                    f"MultibodySystem.add_clock), so every rheonomic term would be {off[1] - off[2]:.6g} s "
                    f"off. Give x(t) with {off[0]} = t (check=False skips this)")
        if check:
            U = vals["u"] if ev.k else None
            X, XD = vals["x"], vals["xd"]
            check_admissible(probe, X, XD, vals["xdd"], vals["lam"], U,
                             M=ev.M(X, U), Q=ev.Q(X, XD, U), D=ev.D(X, U),
                             Qd=ev.Qd(X, XD, U, vals["ud"] if ev.k else None),
                             C=ev.C(X, U), b=ev.b(X, U), coordinates=ev.coordinates,
                             constraints=ev.constraints,
                             inputs=ev.inputs, lam_given=flam is not None and lam_source == "given",
                             tol=check_tol, what=f"the reference motion of {ev.name!r}")
        if check and rates is not None:
            _check_rate_kernels(ev, rates)
            check_rates(rates, probe, vals["x"], vals["xd"], vals["u"], vals["ud"], ev.p,
                        rates_given=fud is not None, tol=check_tol,
                        what=f"the reference motion of {ev.name!r}")
        if flam is None:
            flam = _InverseLam(cm, fx, fxd, fxdd, fu, ev.p, ev.k, ml, tol, check_dynamics and check)
        return cls(coordinates=ev.coordinates, inputs=ev.inputs, constraints=ev.constraints,
                   parameters=readonly(np.array(ev.p)), steady=bool(steady), period=period,
                   t_range=t_range, model_name=ev.name, source=source, _fx=fx, _fxd=fxd,
                   _fxdd=fxdd, _flam=flam, _fu=fu, _wrap_t0=wrap_t0, check_tol=float(check_tol),
                   lam_source=lam_source, _fud=fud, breakpoints=bps)

    @classmethod
    def from_functions(cls, cm: CompiledModel, x: Any, xd: Any, xdd: Any, u: Any = None,
                       lam: Any = None,
                       p: ArrayLike | Mapping[str, float] | None = None, steady: bool = False,
                       period: float | None = None, t_range: ArrayLike | None = None, *,
                       tol: float = INVERSE_DYNAMICS_TOL, check: bool = True,
                       ud: Any = None, rates: Any = None,
                       breakpoints: ArrayLike | None = None) -> "Reference":
        """Reference from functions of time.

        Parameters
        ----------
        cm : CompiledModel
        x, xd, xdd : callable ``t -> (n,)`` or constant ``(n,)`` array
            ``x0(t)``, ``ẋ0(t)``, ``ẍ0(t)``. Functions may be scalar-only or vectorised
            (``(N,) -> (N, n)``); this is detected.
        u : callable ``t -> (k,)`` or ``(k,)`` array, optional
            Inputs (zeros when omitted).
        lam : callable ``t -> (m + l,)`` or array, optional
            Multipliers; when omitted they come from inverse dynamics, Eq. (2.112), which also
            checks that the motion is dynamically admissible with relative tolerance ``tol``.
        p : (np,) array_like or mapping, optional
            Parameters.
        ud : callable ``t -> (k,)`` or ``(k,)`` array, optional
            Input rates ``u̇0(t)`` (zeros when omitted), for inputs that enter the nonholonomic
            constraints: the acceleration level checked is ``D ẍ0 = Q_d − E u̇0``
            (``E = ∂(B ẋ + b)/∂u``), and ``linearize`` uses them. A motion whose ``u0`` varies
            with ``ud`` omitted fails that check (the message names the constraint). In the
            entries of first-order states ``z`` they are ``ż0`` (see ``rates``).
        steady : bool
            Time-invariant linearization (relative equilibrium).
        period : float, optional
        t_range : (t_start, t_end), optional
            Outside it, evaluation raises `TimeRangeError` (unless ``period`` is given).
        tol : float
            Relative tolerance of the admissibility check (constraints, their velocity and
            acceleration levels, and the dynamic equations, each relative to the size of its
            terms; `nhcontrol.reference.admissibility`) and of inverse dynamics.
        check : bool
            Check admissibility at three probe times (default). ``False`` skips it; the
            reference then keeps ``check_tol = tol`` for `nhcontrol.linearize()`, which
            checks again unless called with ``check=False``.
        rates : RateKernels, optional
            ``nhcontrol.compiled.compile_rates(system)`` of a model with first-order states
            ``z`` (inputs of ``cm``): the check then includes their rate equation
            ``ż0 = H(x0, ẋ0, z0, u0)`` (Eq. (7.19)) with ``ż0`` the entries of ``ud`` (zero
            when ``ud`` is omitted, so a ``z0(t)`` that varies needs ``ud``), relative to the
            size of its terms (`nhcontrol.reference.admissibility`).
            `nhcontrol.linearization.linearize_first_order_system()` checks it again.
        breakpoints : (J,) array_like, optional
            Times at which ``u`` (and ``ud``) jump (steps, piecewise-constant schedules),
            inside ``t_range`` when one is given; kept as `breakpoints`.

        Raises
        ------
        ReferenceMotionError
            Wrong shapes, non-finite values, or (``check=True``) a motion that violates the
            constraints or the equations of motion (or, with ``rates``, the rate equation of a
            first-order state): the message names the constraint, coordinate or state, the
            residual, the time and the fix.
        """
        ev = ModelEvaluator(cm, p)
        tr = _check_range(t_range)
        T = _check_period(period)
        probe = _probe_times(tr, T)
        fx = _vectorize(x, ev.n, "x", probe)
        fxd = _vectorize(xd, ev.n, "xd", probe)
        fxdd = _vectorize(xdd, ev.n, "xdd", probe)
        fu = _constant(np.zeros(ev.k)) if u is None else _vectorize(u, ev.k, "u", probe)
        fud = None if ud is None else _vectorize(ud, ev.k, "ud", probe)
        flam = None if lam is None else _vectorize(lam, ev.m + ev.l, "lam", probe)
        return cls._build(cm, ev, fx, fxd, fxdd, flam, fu, steady=steady, period=T, t_range=tr,
                          source="functions", tol=tol, check_dynamics=True, check=check,
                          check_tol=tol,
                          lam_source="inverse_dynamics" if flam is None else "given", fud=fud,
                          rates=rates, breakpoints=breakpoints)

    @classmethod
    def constant_velocity(cls, cm: CompiledModel, x0: ArrayLike, xd0: ArrayLike,
                          u: ArrayLike | None = None,
                          p: ArrayLike | Mapping[str, float] | None = None,
                          lam: ArrayLike | None = None, t_range: ArrayLike | None = None, *,
                          tol: float = INVERSE_DYNAMICS_TOL, check: bool = True,
                          rates: Any = None) -> "Reference":
        """Steady motion ``x0(t) = x0 + ẋ0 t``, ``ẋ0`` constant, ``ẍ0 = 0`` (``steady=True``).

        This is the form of the relative equilibria of the thesis (e.g. the bicycle's steady
        forward motion, Eq. (4.148)), where the coordinates that grow are cyclic.
        The multipliers come from inverse dynamics, Eq. (2.112), unless given.
        ``tol``, ``check`` and ``rates`` are those of `from_functions()`: the motion must satisfy
        ``C(x0) = 0``, ``D(x0) ẋ0 = 0``, ``D ẍ0 = Qd`` and ``M ẍ0 + Dᵀ Λ0 = Q(x0, ẋ0, u0)``,
        and with ``rates`` the first-order states ``z`` among the inputs must be at rest,
        ``H(x0, ẋ0, z0, u0) = 0`` (``ReferenceMotionError`` otherwise).
        """
        ev = ModelEvaluator(cm, p)
        X0 = ev.states(x0, "x0")[0]
        XD0 = ev.states(xd0, "xd0")[0]
        U = _constant(np.zeros(ev.k)) if u is None else _vectorize(u, ev.k, "u", np.zeros(3))
        fx = _Affine(X0, XD0)
        flam = None if lam is None else _vectorize(lam, ev.m + ev.l, "lam", np.zeros(3))
        return cls._build(cm, ev, fx, _constant(XD0), _constant(np.zeros(ev.n)), flam, U,
                          steady=True, period=None, t_range=_check_range(t_range),
                          source="constant_velocity", tol=tol, check_dynamics=True, check=check,
                          check_tol=tol,
                          lam_source="inverse_dynamics" if flam is None else "given",
                          rates=rates)

    @classmethod
    def equilibrium(cls, cm: CompiledModel, x0: ArrayLike, u: ArrayLike | None = None,
                    p: ArrayLike | Mapping[str, float] | None = None, *,
                    tol: float = INVERSE_DYNAMICS_TOL, check: bool = True,
                    rates: Any = None) -> "Reference":
        """Static equilibrium ``x0`` (constant, zero velocity), ``steady=True``.

        ``tol``, ``check`` and ``rates`` as in `from_functions()` (with ``rates``, the
        first-order states must be at rest: ``H(x0, 0, z0, u0) = 0``).
        """
        return cls.constant_velocity(cm, x0, np.zeros(int(cm.n)), u=u, p=p, tol=tol, check=check,
                                     rates=rates)

    @classmethod
    def from_samples(cls, cm: CompiledModel, t: ArrayLike, x: ArrayLike, xd: ArrayLike | None = None,
                     xdd: ArrayLike | None = None, u: ArrayLike | None = None,
                     p: ArrayLike | Mapping[str, float] | None = None, *,
                     lam: ArrayLike | None = None, periodic: bool = False,
                     u_interpolation: UInterpolation = "cubic",
                     steady: bool = False, check: bool = True,
                     tol: float = SAMPLED_ADMISSIBILITY_TOL,
                     breakpoints: ArrayLike | None = None, ud: ArrayLike | None = None,
                     rates: Any = None) -> "Reference":
        """Reference interpolated from samples, with consistent derivatives.

        Parameters
        ----------
        cm : CompiledModel
        t : (N,) array_like
            Strictly increasing sample times.
        x : (N, n) array_like
        xd, xdd : (N, n) array_like, optional
            With both: quintic Hermite interpolation (``scipy.interpolate.BPoly``) matching
            ``x, ẋ, ẍ`` at every sample (C² curve). With ``xd`` only: ``ẍ`` at the samples from
            a cubic spline of ``ẋ``, then the same quintic Hermite. With neither: a quintic
            interpolating spline of ``x`` (C⁴, needs N ≥ 6). In every case ``xd(t)`` and
            ``xdd(t)`` are the exact derivatives of the interpolant ``x(t)``.
        u : (N, k) array_like, optional
            Input samples, interpolated as ``u_interpolation`` says (``"previous"`` is a
            zero-order hold: the sample times where ``u`` changes become `breakpoints`). The
            input rates ``u̇0(t)`` are the exact derivative of that interpolant (zero for
            ``"previous"``) unless ``ud`` is given.
        p : parameters, optional
        lam : (N, m + l) array_like, optional
            Multiplier samples (cubic spline). When omitted, ``Λ0`` comes from inverse dynamics
            Eq. (2.112) in least squares (``check=False``): interpolated data are not exactly
            admissible; `check()` reports how far they are.
        periodic : bool
            The samples cover exactly one period (the last sample equals the first); the
            interpolant is periodic and times are wrapped.
        steady : bool
        check : bool
            Check admissibility at three probe times (`from_functions()`); ``False`` skips
            it.
        tol : float
            Relative tolerance of that check, default
            `SAMPLED_ADMISSIBILITY_TOL` (``1e-3``):
            between the samples the interpolant satisfies the constraints only to its
            interpolation error; a wrong or missing velocity still fails (relative residual of
            order 1).
        breakpoints : (J,) array_like, optional
            Further jump times of ``u`` inside the sampled range (kept as `breakpoints`).
        ud : (N, k) array_like, optional
            Input-rate samples (interpolated as ``u``), e.g. the rates ``ż`` of first-order
            states given by their rate equation.
        rates : RateKernels, optional
            As in `from_functions()`: the check includes ``ż0 = H(x0, ẋ0, z0, u0)``.

        Raises
        ------
        ReferenceMotionError
            Wrong shapes, non-increasing times, too few samples, or ``periodic=True`` with end
            samples that differ.
        """
        ev = ModelEvaluator(cm, p)
        tt = as_float_array(t, "t (sample times)", ndim=1, error=ReferenceMotionError)
        check_finite(tt, "t (sample times)", error=ReferenceMotionError)
        N = tt.shape[0]
        if N < 2 or np.any(np.diff(tt) <= 0):
            raise ReferenceMotionError(f"t (sample times) must be strictly increasing with at least "
                                       f"2 samples, got {N} samples"
                                       + ("" if N < 2 else f" with min step {np.min(np.diff(tt)):.3g}"))

        def samples(a: ArrayLike, d: int, what: str) -> NDArray[np.float64]:
            arr = as_float_array(a, what, error=ReferenceMotionError)
            if arr.ndim == 1 and d == 1:
                arr = arr[:, None]
            if arr.shape != (N, d):
                raise ReferenceMotionError(f"{what} must have shape (N, {d}) = ({N}, {d}) to match "
                                           f"t, got {arr.shape}")
            return check_finite(arr, what, error=ReferenceMotionError)

        X = samples(x, ev.n, "x (samples)")
        XD = None if xd is None else samples(xd, ev.n, "xd (samples)")
        XDD = None if xdd is None else samples(xdd, ev.n, "xdd (samples)")
        if XDD is not None and XD is None:
            raise ReferenceMotionError("xdd samples were given without xd samples; give xd as well "
                                       "(or neither, to differentiate the spline of x)")
        period = float(tt[-1] - tt[0]) if periodic else None
        if periodic:
            for what, arr in (("x", X), ("xd", XD), ("xdd", XDD)):
                if arr is None:
                    continue
                gap = np.abs(arr[-1] - arr[0])
                bad = gap > 1e-9 * (1.0 + np.abs(arr[0]))
                if np.any(bad):
                    names = [ev.coordinates[i] for i in np.flatnonzero(bad)]
                    raise ReferenceMotionError(
                        f"periodic=True needs the last sample to equal the first, but {what} differs "
                        f"in {names} (max gap {np.max(gap):.3e}); sample exactly one period "
                        "including both ends, or use periodic=False")
        bc = "periodic" if periodic else "not-a-knot"
        from scipy.interpolate import BPoly, CubicSpline, make_interp_spline  # here: a light import

        if XD is None:
            if N < 6:
                raise ReferenceMotionError(f"interpolating x alone uses a quintic spline and needs at "
                                           f"least 6 samples, got {N}; give xd (and xdd) as well")
            spl = make_interp_spline(tt, X, k=5, bc_type="periodic" if periodic else None)
            d1, d2 = spl.derivative(1), spl.derivative(2)
            fx, fxd, fxdd = spl, d1, d2
        else:
            if XDD is None:
                XDD = CubicSpline(tt, XD, bc_type=bc if N > 3 or periodic else "natural"
                                  ).derivative()(tt)
            bp = _quintic_hermite(BPoly, tt, X, XD, XDD)
            b1, b2 = bp.derivative(1), bp.derivative(2)
            fx, fxd, fxdd = bp, b1, b2
        fu = (_constant(np.zeros(ev.k)) if u is None or ev.k == 0 else
              _interp(tt, samples(u, ev.k, "u (samples)"), u_interpolation, periodic))
        flam = None
        if lam is not None:
            flam = _interp(tt, samples(lam, ev.m + ev.l, "lam (samples)"), "cubic", periodic)
        fud = None
        if ud is not None and ev.k:
            fud = _interp(tt, samples(ud, ev.k, "ud (samples)"), u_interpolation, periodic)
        elif u is not None and ev.k:
            fud = _interp_rate(fu)                 # the derivative of the input interpolant
        bps = _check_breakpoints(breakpoints, (float(tt[0]), float(tt[-1])))
        if isinstance(fu, _Previous):            # a zero-order hold jumps where u changes
            Y = fu.y
            held = tuple(float(a) for a in tt[1:-1][np.any(Y[1:-1] != Y[:-2], axis=1)])
            bps = tuple(sorted(set(bps) | set(held)))
        return cls._build(cm, ev, fx, fxd, fxdd, flam, fu, steady=steady, period=period,
                          t_range=(float(tt[0]), float(tt[-1])), source="samples",
                          tol=INVERSE_DYNAMICS_TOL, check_dynamics=False, check=check,
                          check_tol=tol,
                          lam_source="inverse_dynamics" if flam is None else "given",
                          wrap_t0=float(tt[0]) if periodic else None, breakpoints=bps,
                          fud=fud, rates=rates)

    @classmethod
    def from_simulation(cls, result: Any, *, u_interpolation: UInterpolation | None = None,
                        check: bool = True, tol: float = SAMPLED_ADMISSIBILITY_TOL
                        ) -> "Reference":
        """Reference from a [`nhcontrol.simulate.SimulationResult`][nhcontrol.simulate.SimulationResult].

        With the integrator's dense output (``forward_dynamics(..., dense_output=True)``, the
        default) ``x0, ẋ0`` are the continuous extension of the integrator and ``ẍ0, Λ0`` solve
        the same saddle-point system (2.119) at any time, with the simulation's inputs (so a
        zero-order-hold input stays piecewise constant; open-loop input rates given to
        ``forward_dynamics(..., ud=...)`` become ``u̇0``). Without dense output the samples are
        interpolated by `from_samples()` (quintic Hermite). ``check`` and ``tol`` are those
        of `from_samples()` (the integrated motion satisfies the constraints to the
        integration tolerance). The reference's `breakpoints` are the run's (its
        ``breakpoints=``, or the control instants at which a zero-order-hold input changes),
        so ``forward_dynamics(cm, ..., u=ref)`` integrates across the same jumps.
        """
        cm = result.model
        ev = ModelEvaluator(cm, result.parameters)
        tr = (float(result.t[0]), float(result.t[-1]))
        bps = _simulation_breakpoints(result, tr)
        if getattr(result, "has_dense_output", False):
            dense = _DenseSimulation(result)
            fx, fxd, fxdd, flam, fu = (_Field(dense, nm) for nm in ("x", "xd", "xdd", "lam", "u"))
            udf = getattr(getattr(result, "_dynamics", None), "input_rates", None)
            fud = None if udf is None else _Vectorized(udf, ev.k, "ud", False)
            return cls._build(cm, ev, fx, fxd, fxdd, flam, fu, steady=False, period=None,
                              t_range=tr, source="simulation", tol=INVERSE_DYNAMICS_TOL,
                              check_dynamics=False, check=check, check_tol=tol,
                              lam_source="simulation", fud=fud, breakpoints=bps)
        kind = u_interpolation or ("previous" if getattr(result, "sample_time", None) else "cubic")
        t, keep = np.unique(np.asarray(result.t), return_index=True)
        ref = cls.from_samples(cm, t, result.x[keep], result.xd[keep], result.xdd[keep],
                               u=result.u[keep] if ev.k else None, p=result.parameters,
                               lam=result.lam[keep], u_interpolation=kind, check=check, tol=tol,
                               breakpoints=bps)
        return ref


def _quintic_hermite(bpoly: Any, t: NDArray[np.float64], y: NDArray[np.float64],
                     yd: NDArray[np.float64], ydd: NDArray[np.float64]) -> Any:
    """``BPoly.from_derivatives(t, [y, yd, ydd])`` (the quintic Hermite interpolant of values,
    first and second derivatives ``(N, d)`` at ``t (N,)``) with its Bernstein coefficients
    written for all intervals at once, in scipy's order of operations (the same numbers): on
    ``[t_i, t_i + h]`` ``c_0 = y_i``, ``c_1 = h ẏ_i/5 + c_0``, ``c_2 = (h² ÿ_i/20 − c_0) + 2 c_1``
    and symmetrically from the right end."""
    h = np.diff(t).reshape((-1,) + (1,) * (y.ndim - 1))
    a, b = slice(None, -1), slice(1, None)
    c = np.empty((6, t.size - 1) + y.shape[1:])
    c[0], c[5] = y[a], y[b]
    c[1] = yd[a] / 5.0 * h + c[0]
    c[4] = -(yd[b] / 5.0) * h + c[5]
    c[2] = (ydd[a] / 20.0 * h ** 2 - c[0]) + 2.0 * c[1]
    c[3] = (ydd[b] / 20.0 * h ** 2 + 2.0 * c[4]) - c[5]
    return bpoly(c, t)
