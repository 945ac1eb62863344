"""Continuous-time linear time-varying systems ``ẋ = A(t) x + B(t) u``.

[`LTVSystem`][nhcontrol.systems.LTVSystem] wraps the matrices ``A(t)``, ``B(t)`` of a linearization
along a reference
motion (thesis Eq. (8.74), Sect. 6.1) given as callables, as samples on a time grid, or as a
constant pair (a python-control ``StateSpace`` is accepted everywhere an LTV system is, through
[`as_ltv()`][nhcontrol.systems.as_ltv]). It also gives the time derivatives ``A^{(j)}(t)``,
``B^{(j)}(t)`` needed by the
Silverman–Meadows test (Eqs. (8.86)–(8.87)): exact ones when supplied, otherwise spectral
(periodic systems) or local Chebyshev differentiation, see
[`LTVSystem.derivative()`][nhcontrol.systems.LTVSystem.derivative].
"""

from __future__ import annotations

import math
import sys as _sys
import warnings
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence

import numpy as np
from numpy.polynomial import chebyshev as _cheb
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError, LinearSystemTypeError, TimeRangeError
from .._util.reprs import html_table, short_names as _short
from .._util.validation import as_float_array, check_finite, check_names, readonly

if TYPE_CHECKING:
    import control  # imported where it is used (it takes ~1 s)
    from typing import Mapping
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition
    from nhcontrol.reference import Reference

__all__ = ["LTVSystem", "as_ltv", "DerivativeMethod"]

DerivativeMethod = Literal["auto", "exact", "spectral", "chebyshev"]
MatrixFunction = Callable[[float], ArrayLike]

CHEB_DEGREES = (16, 24, 32, 48, 64)
"""Degrees tried (in order) for the local Chebyshev interpolant of non-periodic callables."""
CHEB_TAIL_RTOL = 1e-13
"""A Chebyshev fit is accepted when its last 4 coefficients are below this fraction of the largest.
"""
CHEB_CHOP_RTOL = 1e-15
"""Chebyshev coefficients below this fraction of the largest are dropped before differentiating."""
SPECTRAL_MAX_SAMPLES = 4096
"""Largest number of samples per period used for spectral differentiation."""
SPECTRAL_TAIL_RTOL = 1e-13
"""Relative size of the discarded Fourier tail accepted by spectral differentiation."""


SELECT_RTOL = 1e-10
"""Relative size below which ``A[kept, dropped]`` counts as zero in `LTVSystem.select()` and
`DiscreteLTV.select()`."""


class LTVSystem:
    """Linear time-varying system ``ẋ(t) = A(t) x(t) + B(t) u(t)``.

    Parameters
    ----------
    A : callable ``t -> (n, n)`` or (n, n) array_like
        State matrix. A constant array gives a time-invariant system.
    B : callable ``t -> (n, k)`` or (n, k) array_like
        Input matrix (a 1-D result is read as one input column).
    states, inputs : sequence of str, optional
        Signal names (default ``x[i]``, ``u[i]``).
    t_range : (float, float), optional
        Interval on which ``A``, ``B`` are defined; evaluating outside raises
        `TimeRangeError`. ``None`` means all real ``t``.
    period : float, optional
        Period ``T > 0`` when ``A(t + T) = A(t)``, ``B(t + T) = B(t)`` (Floquet theory, Sect. 6.3;
        spectral derivatives; reuse of discretized steps).
    dA, dB : callable or sequence of callables, optional
        Exact time derivatives: either ``dA(t, order)`` returning ``d^order A / dt^order`` for any
        ``order >= 1``, or a list ``[A', A'', ...]`` of callables of ``t`` (then the highest exact
        order is the list length).
    vectorized : bool, default False
        ``True`` when ``A(ts)``/``B(ts)`` (and ``dA``, ``dB``) accept an array ``ts`` of shape
        (N,) and return (N, n, n)/(N, n, k); speeds up discretization and derivatives.
    C : (p, n) array_like or callable ``t -> (p, n)``, optional
        Output matrix of ``y = C(t) x + D(t) u``; default the identity (the outputs are
        the states), as python-control's ``ss(A, B, I, 0)``. A callable gives time-varying
        outputs (read them with `output_matrices()`; the property `C` is then refused).
    D : (p, k) array_like or callable ``t -> (p, k)``, optional
        Feed-through of the outputs (default zero).
    outputs : sequence of str, optional
        Output names (default: the state names when ``C`` is the identity, else ``y[i]``).
    breakpoints : (J,) array_like, optional
        Times at which ``A(t)`` or ``B(t)`` jump (e.g. the jumps of the reference inputs,
        `Reference.breakpoints`). Between two breakpoints the matrices are smooth; at a
        breakpoint they may have two one-sided limits, and ``A(t_j)`` is whichever side the
        callables return there. `simulate_ltv()` stops at them and `discretize()` splits the
        steps that contain one (see there).

    Attributes
    ----------
    nstates, ninputs : int
    states, inputs : tuple of str
    t_range : (float, float) or None
    period : float or None
    breakpoints : tuple of float
        Sorted jump times of ``A(t)``, ``B(t)`` (inside ``t_range``); empty for smooth systems.
    is_constant : bool
        ``True`` for a time-invariant pair (closed forms are used downstream).

    Notes
    -----
    The object is immutable; only a private cache of spectral coefficients is filled lazily.

    Examples
    --------
    >>> import numpy as np
    >>> sys = LTVSystem(lambda t: [[0.0, 1.0], [-1.0 - 0.1 * np.cos(t), 0.0]],
    ...                 lambda t: [[0.0], [1.0]], period=2 * np.pi, states=["q", "v"])
    >>> sys.nstates, sys.ninputs, float(sys.A(0.0)[1, 0])
    (2, 1, -1.1)
    >>> round(float(sys.derivative("A", 0.0, 2)[1, 0]), 12)  # spectral: (-0.1 cos t)'' at 0
    0.1
    """

    def __init__(self, A: MatrixFunction | ArrayLike, B: MatrixFunction | ArrayLike, *,
                 states: Sequence[str] | None = None, inputs: Sequence[str] | None = None,
                 t_range: tuple[float, float] | None = None, period: float | None = None,
                 dA: Callable[..., ArrayLike] | Sequence[MatrixFunction] | None = None,
                 dB: Callable[..., ArrayLike] | Sequence[MatrixFunction] | None = None,
                 vectorized: bool = False, C: ArrayLike | None = None,
                 outputs: Sequence[str] | None = None,
                 breakpoints: ArrayLike | None = None,
                 D: MatrixFunction | ArrayLike | None = None) -> None:
        self._t_range = _check_t_range(t_range)
        self._period = _check_period(period)
        self._breakpoints = _check_breakpoints(breakpoints, self._t_range)
        const_A = not callable(A)
        const_B = not callable(B)
        self._vectorized = bool(vectorized)
        probe = 0.0 if self._t_range is None else self._t_range[0]
        A0 = as_float_array(A(probe) if callable(A) else A, "A(t)")
        if A0.ndim != 2 or A0.shape[0] != A0.shape[1]:
            raise LinearSystemError(
                f"A(t) must be a square (n, n) matrix, got shape {A0.shape} at t = {probe}; "
                "pass the state matrix of ẋ = A(t) x + B(t) u")
        n = A0.shape[0]
        B0 = as_float_array(B(probe) if callable(B) else B, "B(t)")
        if B0.ndim == 1:
            B0 = B0.reshape(-1, 1)
        if B0.ndim != 2 or B0.shape[0] != n:
            raise LinearSystemError(
                f"B(t) must have shape (n, k) = ({n}, k) to match A(t) of shape {A0.shape}, "
                f"got {B0.shape} at t = {probe}")
        check_finite(A0, "A(t)", where=f"at t = {probe}")
        check_finite(B0, "B(t)", where=f"at t = {probe}")
        self._n, self._k = n, B0.shape[1]
        self._states = check_names(states, n, "states", "x")
        self._inputs = check_names(inputs, self._k, "inputs", "u")
        self._set_outputs(C, D, outputs, probe)
        if const_A:
            A0 = readonly(np.array(A0))
        if const_B:
            B0 = readonly(np.array(B0))
        self._funcs: dict[str, Any] = {
            "A": (lambda t, _c=A0: _c) if const_A else A,
            "B": (lambda t, _c=B0: _c) if const_B else B,
        }
        self._const = {"A": A0 if const_A else None, "B": B0 if const_B else None}
        self._exact: dict[str, Any] = {"A": self._parse_derivs(dA, "dA"), "B": self._parse_derivs(dB, "dB")}
        # Intrinsic interpolants (from_samples): which -> callable(t, order) and max order.
        self._interp: dict[str, Any] = {}
        self._interp_max: int | None = None
        self._interp_kind: str | None = None
        self._cache: dict[tuple[str, str], Any] = {}

    # ------------------------------------------------------------------ constructors
    @classmethod
    def constant(cls, A: ArrayLike, B: ArrayLike, *, states: Sequence[str] | None = None,
                 inputs: Sequence[str] | None = None,
                 t_range: tuple[float, float] | None = None, C: ArrayLike | None = None,
                 outputs: Sequence[str] | None = None) -> "LTVSystem":
        """Time-invariant pair ``(A, B)`` as an LTV system (``is_constant`` is True)."""
        return cls(np.asarray(A, dtype=float), np.asarray(B, dtype=float), states=states,
                   inputs=inputs, t_range=t_range, C=C, outputs=outputs)

    @classmethod
    def from_samples(cls, t: ArrayLike, A_samples: ArrayLike, B_samples: ArrayLike, *,
                     states: Sequence[str] | None = None, inputs: Sequence[str] | None = None,
                     period: float | None = None, degree: int = 5) -> "LTVSystem":
        """LTV system interpolating sampled matrices.

        Parameters
        ----------
        t : (M,) array_like
            Strictly increasing sample times.
        A_samples : (M, n, n) array_like
        B_samples : (M, n, k) array_like
        states, inputs : sequence of str, optional
        period : float, optional
            When given, the samples must be equispaced over one period (``t[0] + j T / M``; a
            last sample at ``t[0] + T`` equal to the first is dropped) and the interpolant is the
            trigonometric interpolant, differentiable to any order (spectral accuracy for
            smooth periodic data). Otherwise an interpolating B-spline of odd ``degree``.
        degree : int, default 5
            Spline degree for non-periodic data; derivatives up to order ``degree - 1`` are
            supported (continuous), higher orders raise `LinearSystemError`.

        Returns
        -------
        LTVSystem
            Vectorized; ``t_range = (t[0], t[-1])`` for non-periodic data, ``None`` (all ``t``)
            for periodic data.
        """
        ts = as_float_array(t, "t", ndim=1)
        As = as_float_array(A_samples, "A_samples", ndim=3)
        Bs = as_float_array(B_samples, "B_samples")
        if Bs.ndim == 2:
            Bs = Bs[:, :, None]
        M = ts.shape[0]
        if As.shape[0] != M or As.shape[1] != As.shape[2]:
            raise LinearSystemError(
                f"A_samples must have shape (M, n, n) = ({M}, n, n) for {M} sample times, got {As.shape}")
        if Bs.ndim != 3 or Bs.shape[:2] != (M, As.shape[1]):
            raise LinearSystemError(
                f"B_samples must have shape (M, n, k) = ({M}, {As.shape[1]}, k), got {Bs.shape}")
        check_finite(As, "A_samples")
        check_finite(Bs, "B_samples")
        if M < 2 or np.any(np.diff(ts) <= 0):
            raise LinearSystemError("t must hold at least 2 strictly increasing sample times")
        per = _check_period(period)
        if per is not None:
            if abs(ts[-1] - ts[0] - per) <= 1e-9 * per:
                if not (np.allclose(As[-1], As[0], rtol=1e-8, atol=1e-10)
                        and np.allclose(Bs[-1], Bs[0], rtol=1e-8, atol=1e-10)):
                    raise LinearSystemError(
                        "periodic samples include t[0] + period but A/B there differ from t[0]; "
                        "the data is not periodic with the given period")
                ts, As, Bs = ts[:-1], As[:-1], Bs[:-1]
                M -= 1
            h = per / M
            if not np.allclose(ts - ts[0], h * np.arange(M), rtol=0, atol=1e-9 * per):
                raise LinearSystemError(
                    f"periodic samples must be equispaced over one period: expected t[0] + j*T/M with "
                    f"T = {per}, M = {M} (spacing {h}), got spacings in [{np.diff(ts).min()}, "
                    f"{np.diff(ts).max()}]; resample or omit period= to use a spline")
            coefA = _TrigInterp(ts[0], per, As)
            coefB = _TrigInterp(ts[0], per, Bs)
            sys = cls(lambda tt: coefA(tt, 0), lambda tt: coefB(tt, 0), states=states,
                      inputs=inputs, period=per, vectorized=True)
            sys._interp = {"A": coefA, "B": coefB}
            sys._interp_max = None
            sys._interp_kind = "trigonometric interpolant of the samples"
            return sys
        deg = int(degree)
        if deg != degree or deg < 1 or deg % 2 == 0:
            raise LinearSystemError(f"degree must be an odd positive integer (spline degree), got {degree!r}")
        if M <= deg:
            raise LinearSystemError(f"a degree-{deg} spline needs more than {deg} samples, got {M}")
        from scipy.interpolate import make_interp_spline   # (imported when used: ~0.2 s)

        splA = make_interp_spline(ts, As, k=deg, axis=0)
        splB = make_interp_spline(ts, Bs, k=deg, axis=0)
        sys = cls(lambda tt: splA(tt), lambda tt: splB(tt), states=states, inputs=inputs,
                  t_range=(float(ts[0]), float(ts[-1])), vectorized=True)
        sys._interp = {"A": lambda tt, o: splA(tt, nu=o), "B": lambda tt, o: splB(tt, nu=o)}
        sys._interp_max = deg - 1
        sys._interp_kind = f"degree-{deg} interpolating spline of the samples"
        return sys

    @classmethod
    def from_linearization(cls, cm: CompiledModel, ref: Reference,
                           partition: Partition | Mapping[str, Any] | None = None, *,
                           t_range: tuple[float, float] | None = None,
                           period: float | None = None, check: bool = False,
                           dA: Callable[..., ArrayLike] | Sequence[MatrixFunction] | None = None,
                           dB: Callable[..., ArrayLike] | Sequence[MatrixFunction] | None = None,
                           input_states: bool = False,
                           breakpoints: ArrayLike | None = None,
                           outputs: Literal["states", "declared"] = "states") -> "LTVSystem":
        """LTV system ``A(t)``, ``B(t)`` of [`nhcontrol.linearize()`][nhcontrol.linearize] along a reference.

        Every evaluation of ``A(t)`` or ``B(t)`` runs the third numerical procedure (thesis
        Sect. 4.2.3, Eq. (4.124); input matrix of Sect. 8.1) at ``t``, vectorised over arrays
        of times; the pair for the most recent times is kept, so ``A(t)`` followed by ``B(t)``
        costs one linearization.

        Parameters
        ----------
        cm : CompiledModel
        ref : Reference
            Reference motion (``ref.t_range`` and ``ref.period`` are the defaults below).
        partition : Partition or mapping, optional
            ``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)); ``None`` takes `suggest_partition()` at
            the start of the range (once, so the state order is the same at every ``t``).
        t_range : (float, float), optional
            Default ``ref.t_range``.
        period : float, optional
            Default ``ref.period``.
        check : bool, default False
            Check the partition blocks at every evaluation (the partition is always checked
            once, at the probe time, here).
        dA, dB : optional
            Exact time derivatives, as in [`LTVSystem`][nhcontrol.systems.LTVSystem] (otherwise
            spectral/Chebyshev
            differentiation of ``A(t)``, ``B(t)`` is used where needed).
        input_states : bool, default False
            For a model whose inputs enter the nonholonomic constraints
            (``cm.constraint_inputs``, rate matrix ``B_rate``): make those inputs states driven
            by their rates (`LinearizationResult.input_state_form`; states ``[X̃; ũ_r]``,
            inputs ``[ũ_o; <name>_dot]``). Without it such a model is refused, because
            ``A(t), B(t)`` alone would drop the rate term.
        breakpoints : (J,) array_like, optional
            Jump times of ``A(t)``, ``B(t)``; default ``ref.breakpoints`` (the jumps of the
            reference inputs ``u0(t)``, where the linearization jumps too). ``[]`` declares
            none.

        Returns
        -------
        LTVSystem
            States ``[x_ai, ẋ_ai, x_ad]`` and the model's inputs, by name. For a steady
            reference (``ref.steady``, e.g. a relative equilibrium) a constant system
            (``is_constant``) with the matrices at the probe time. Its ``breakpoints`` are
            the reference's (inside ``t_range``): `simulate_ltv()` and `discretize()` use
            them by default.
        outputs : {"states", "declared"}, default "states"
            ``"declared"``: the outputs are the model's declared outputs
            (`MultibodySystem.add_output`) with the time-varying ``C(t)``, ``D(t)`` of the
            same linearization (`LinearizationResult.C`, `LinearizationResult.D`); with
            ``input_states`` the rate inputs' columns of ``D`` move to ``C``.

        Raises
        ------
        PartitionError, ReferenceMotionError
            From [`nhcontrol.linearize()`][nhcontrol.linearize] at the probe time.
        """
        from ..linearization import Partition, linearize, suggest_partition

        rng = _check_t_range(t_range if t_range is not None else getattr(ref, "t_range", None))
        per = _check_period(period if period is not None else getattr(ref, "period", None))
        probe = 0.0 if rng is None else rng[0]
        jumps = breakpoints if breakpoints is not None else getattr(ref, "breakpoints", None)
        if partition is None:
            partition = suggest_partition(cm, ref, t=probe)
        elif not isinstance(partition, Partition):
            partition = Partition.from_dict(partition)
        first = linearize(cm, ref, partition, t=probe, check=True)
        states, inputs = list(first.states), list(first.inputs)
        if outputs not in ("states", "declared"):
            raise LinearSystemError(f"outputs must be 'states' or 'declared', got {outputs!r}")
        declared = outputs == "declared"
        if declared and first.C is None:
            raise LinearSystemError(
                f"model {getattr(cm, 'name', '?')!r} declares no outputs: outputs='declared' needs "
                "sensors added with MultibodySystem.add_output(name, expr) before compiling")
        out_names = list(first.outputs) if declared else None
        rate_inputs = tuple(getattr(cm, "constraint_inputs", ()) or ())
        if rate_inputs and not input_states:
            raise LinearSystemError(
                f"the inputs {list(rate_inputs)} of model {getattr(cm, 'name', '?')!r} enter its "
                "nonholonomic constraints: their rates act through B_rate "
                "(dX/dt = A X + B u + B_rate du/dt), which A(t), B(t) alone drop; pass "
                "input_states=True to make them states driven by their rates")

        def form(res: Any) -> tuple[Any, Any]:
            if not rate_inputs:
                return res.A, res.B
            f = res.input_state_form(rate_inputs)
            return f.A, f.B

        def out_form(res: Any) -> tuple[Any, Any]:
            if not rate_inputs:
                return res.C, res.D
            r = [list(res.inputs).index(s) for s in rate_inputs]
            o = [j for j in range(len(res.inputs)) if j not in r]
            Dm = np.asarray(res.D)
            return (np.concatenate([res.C, Dm[..., r]], axis=-1),
                    np.concatenate([Dm[..., o], np.zeros(Dm.shape[:-1] + (len(r),))], axis=-1))

        if rate_inputs:
            f = first.input_state_form(rate_inputs)
            states, inputs = list(f.states), list(f.inputs)
        if getattr(ref, "steady", False):
            A0, B0 = form(first)
            C0, D0 = out_form(first) if declared else (None, None)
            return cls(np.array(A0), np.array(B0), states=states, inputs=inputs,
                       t_range=rng, breakpoints=jumps, C=C0, D=D0, outputs=out_names)
        last: dict[str, Any] = {}

        def pair(t: Any) -> Any:
            key = np.asarray(t, dtype=float)
            if "t" not in last or last["t"].shape != key.shape or not np.array_equal(last["t"], key):
                res = linearize(cm, ref, partition, t=key, check=check)
                A_t, B_t = form(res)
                last.update(t=key.copy(), A=A_t, B=B_t)
                if declared:
                    C_t, D_t = out_form(res)
                    last.update(C=C_t, D=D_t)
            return last

        return cls(lambda t: pair(t)["A"], lambda t: pair(t)["B"], states=states, inputs=inputs,
                   t_range=rng, period=per, dA=dA, dB=dB, vectorized=True, breakpoints=jumps,
                   C=(lambda t: pair(t)["C"]) if declared else None,
                   D=(lambda t: pair(t)["D"]) if declared else None, outputs=out_names)

    # ------------------------------------------------------------------ properties
    @property
    def nstates(self) -> int:
        """Number of states ``n``."""
        return self._n

    @property
    def ninputs(self) -> int:
        """Number of inputs ``k``."""
        return self._k

    @property
    def states(self) -> tuple[str, ...]:
        """State names."""
        return self._states

    @property
    def inputs(self) -> tuple[str, ...]:
        """Input names."""
        return self._inputs

    # python-control conventions (``StateSpace`` names): C = I, the outputs are the states
    @property
    def state_labels(self) -> list[str]:
        """State names, as python-control's ``state_labels`` (same as `states`)."""
        return list(self._states)

    @property
    def input_labels(self) -> list[str]:
        """Input names, as python-control's ``input_labels`` (same as `inputs`)."""
        return list(self._inputs)

    @property
    def output_labels(self) -> list[str]:
        """Output names (the state names when ``C = I``, the default)."""
        return list(self._outputs)

    @property
    def outputs(self) -> tuple[str, ...]:
        """Output names (same as `output_labels`)."""
        return self._outputs

    @property
    def noutputs(self) -> int:
        """Number of outputs ``p`` (``= nstates`` when ``C = I``)."""
        return int(self._C.shape[0])

    @property
    def C(self) -> NDArray[np.float64]:
        """Constant output matrix ``(p, n)`` of ``y = C x + D u``; the identity by default.

        Raises
        ------
        LinearSystemError
            When the outputs vary with time (use `output_matrices()`).
        """
        self._need_constant_outputs("C")
        return self._C

    @property
    def has_identity_output(self) -> bool:
        """True when the outputs are the states (``C = I``, output names = state names)."""
        return (self.outputs_constant and self._C.shape[0] == self._n
                and bool(np.array_equal(self._C, np.eye(self._n))) and self._outputs == self._states
                and not np.any(getattr(self, "_D", 0.0)))

    def with_outputs(self, C: ArrayLike | MatrixFunction | None = None,
                     outputs: Sequence[str] | None = None,
                     D: ArrayLike | MatrixFunction | None = None) -> "LTVSystem":
        """The same system with the output map ``y = C(t) x + D(t) u`` and output names.

        ``C=None`` restores the identity. Useful after `from_linearization()`, e.g.
        ``sys.with_outputs(C, outputs=["phi_b"])`` to measure the lean only; ``C`` and ``D``
        may be callables of ``t`` (time-varying outputs).
        """
        import copy

        new = copy.copy(self)
        probe = 0.0 if self._t_range is None else self._t_range[0]
        new._set_outputs(C, D, outputs, probe)
        return new

    def _set_outputs(self, C: Any, D: Any, outputs: Sequence[str] | None, probe: float) -> None:
        """Validate and store the output map (constant or callables of ``t``)."""
        self._Cf = C if callable(C) else None
        self._Df = D if callable(D) else None
        C0 = C(probe) if callable(C) else C
        self._C, self._outputs = _output_map(C0, outputs, self._states)
        p = self._C.shape[0]
        D0 = D(probe) if callable(D) else D
        if D0 is None:
            self._D = readonly(np.zeros((p, self._k)))
        else:
            Dm = as_float_array(D0, "D")
            if Dm.ndim == 1 and p == 1:
                Dm = Dm.reshape(1, -1)
            if Dm.shape != (p, self._k):
                raise LinearSystemError(f"D must have shape (p, k) = ({p}, {self._k}) (outputs "
                                        f"{list(self._outputs)}, inputs {list(self._inputs)}), got {Dm.shape}")
            check_finite(Dm, "D")
            self._D = readonly(np.array(Dm))

    @property
    def outputs_constant(self) -> bool:
        """``True`` when ``C`` and ``D`` do not depend on time."""
        return getattr(self, "_Cf", None) is None and getattr(self, "_Df", None) is None

    @property
    def D(self) -> NDArray[np.float64]:
        """Constant feed-through ``(p, k)`` of the outputs (zero by default).

        Raises
        ------
        LinearSystemError
            When the outputs vary with time (use `output_matrices()`).
        """
        self._need_constant_outputs("D")
        return getattr(self, "_D", np.zeros((self.noutputs, self._k)))

    def _need_constant_outputs(self, what: str) -> None:
        if not self.outputs_constant:
            raise LinearSystemError(f"the outputs of this LTV system vary with time: {what} is not "
                                    f"one matrix; use sys.output_matrices(t) for C(t), D(t)")

    def output_matrices(self, t: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``C(t)`` and ``D(t)`` of ``y = C(t) x + D(t) u``: (p, n), (p, k) for a scalar ``t``,
        (N, p, n), (N, p, k) for ``t`` of shape (N,)."""
        ta = self.check_time(t)
        p, n, k = self.noutputs, self._n, self._k
        D0 = getattr(self, "_D", np.zeros((p, k)))

        def ev(f: Any, const: NDArray[np.float64], shape: tuple[int, int], name: str
               ) -> NDArray[np.float64]:
            if f is None:
                return np.broadcast_to(const, ta.shape + shape).copy() if ta.ndim else const
            if ta.ndim == 0:
                out = as_float_array(f(float(ta)), f"{name}(t)").reshape(shape)
            elif self._vectorized:
                out = as_float_array(f(ta), f"{name}(t)").reshape(ta.shape + shape)
            else:
                out = np.stack([as_float_array(f(float(tt)), f"{name}(t)").reshape(shape)
                                for tt in ta.ravel()]).reshape(ta.shape + shape)
            check_finite(out, f"{name}(t)")
            return out

        return (ev(getattr(self, "_Cf", None), self._C, (p, n), "C"),
                ev(getattr(self, "_Df", None), D0, (p, k), "D"))

    @property
    def dt(self) -> float:
        """Sampling time: ``0`` (continuous time), as python-control."""
        return 0

    def isdtime(self, strict: bool = False) -> bool:
        """False: a continuous-time system (python-control's ``isdtime``)."""
        return False

    def isctime(self, strict: bool = False) -> bool:
        """True: a continuous-time system (python-control's ``isctime``)."""
        return True

    @property
    def t_range(self) -> tuple[float, float] | None:
        """Interval of definition or ``None`` (all ``t``)."""
        return self._t_range

    @property
    def period(self) -> float | None:
        """Period ``T`` or ``None``."""
        return self._period

    @property
    def breakpoints(self) -> tuple[float, ...]:
        """Sorted jump times of ``A(t)``, ``B(t)`` (empty for smooth systems)."""
        return getattr(self, "_breakpoints", ())   # systems pickled before the field existed

    @property
    def is_constant(self) -> bool:
        """``True`` when both ``A`` and ``B`` are constant."""
        return self._const["A"] is not None and self._const["B"] is not None

    @property
    def vectorized(self) -> bool:
        """``True`` when the matrix callables accept arrays of times."""
        return self._vectorized

    # ------------------------------------------------------------------ evaluation
    def A(self, t: ArrayLike) -> NDArray[np.float64]:
        """State matrix ``A(t)``: (n, n) for scalar ``t``, (N, n, n) for ``t`` of shape (N,)."""
        return self._eval("A", t, 0)

    def B(self, t: ArrayLike) -> NDArray[np.float64]:
        """Input matrix ``B(t)``: (n, k) for scalar ``t``, (N, n, k) for ``t`` of shape (N,)."""
        return self._eval("B", t, 0)

    def AB(self, t: ArrayLike) -> NDArray[np.float64]:
        """``[A(t) B(t)]`` stacked: (n, n + k) or (N, n, n + k)."""
        return np.concatenate([self.A(t), self.B(t)], axis=-1)

    def to_iosystem(self, name: str | None = None) -> control.NonlinearIOSystem:
        """This system as a python-control ``NonlinearIOSystem`` (time-varying, continuous).

        The update function is ``A(t) x + B(t) u``, the output ``C(t) x + D(t) u``; states,
        inputs and outputs carry this system's names, so ``control.interconnect`` connects it
        by name and ``control.input_output_response`` simulates it (see
        [`nhcontrol.systems.iosystem`][nhcontrol.systems.iosystem]).

        Examples
        --------
        >>> import control, numpy as np
        >>> sys = LTVSystem(lambda t: [[0.0, 1.0], [-1.0 - 0.1 * np.cos(t), 0.0]],
        ...                 lambda t: [[0.0], [1.0]], states=["q", "v"], inputs=["f"])
        >>> io = sys.to_iosystem(name="mathieu")
        >>> io.state_labels, io.input_labels, io.dt
        (['q', 'v'], ['f'], 0)
        """
        from .iosystem import ltv_to_iosystem

        return ltv_to_iosystem(self, name)

    def at(self, t: float) -> control.StateSpace:
        """Frozen-time python-control ``StateSpace`` ``(A(t), B(t), C, 0)`` with signal names.

        The outputs are `output_labels` (the states unless ``C`` was given). A frozen-time pair says nothing about the controllability or
        stability of the LTV system (see ``docs/theory/ltv.md``).
        """
        import control

        tt = float(t)
        Ct, Dt = self.output_matrices(tt)
        return control.ss(self.A(tt), self.B(tt), Ct, Dt,
                          states=list(self._states), inputs=list(self._inputs),
                          outputs=list(self._outputs))

    def check_time(self, t: ArrayLike, what: str = "t") -> NDArray[np.float64]:
        """Return ``t`` as a float array, raising ``TimeRangeError`` if outside ``t_range``."""
        ta = as_float_array(t, what)
        check_finite(ta, what)
        if self._t_range is not None and ta.size:
            lo, hi = self._t_range
            slack = 1e-12 * max(1.0, abs(lo), abs(hi))
            bad = (ta < lo - slack) | (ta > hi + slack)
            if np.any(bad):
                first = float(ta[bad].flat[0])
                raise TimeRangeError(
                    f"{what} = {first} lies outside the range t_range = ({lo}, {hi}) on which this "
                    f"LTV system is defined ({int(bad.sum())} time(s) outside); evaluate inside the "
                    "range or build the system with a wider t_range")
        return ta

    # ------------------------------------------------------------------ derivatives
    def max_exact_order(self, which: Literal["A", "B"]) -> int | None:
        """Highest derivative order available without numerical differentiation.

        ``None`` means unbounded (constant systems, ``dA(t, order)`` callables, trigonometric
        interpolants); ``0`` means none.
        """
        self._check_which(which)
        if self._const[which] is not None:
            return None
        if self._interp:
            return self._interp_max
        ex = self._exact[which]
        if ex is None:
            return 0
        if isinstance(ex, list):
            return len(ex)
        return None

    def derivative(self, which: Literal["A", "B"], t: ArrayLike, order: int, *,
                   method: DerivativeMethod = "auto", h: float | None = None) -> NDArray[np.float64]:
        """Time derivative ``d^order A/dt^order`` (``which="A"``) or of ``B`` at ``t``.

        Parameters
        ----------
        which : {"A", "B"}
        t : float or (N,) array_like
        order : int
            Derivative order ``>= 0``.
        method : {"auto", "exact", "spectral", "chebyshev"}
            ``"exact"``: only supplied/intrinsic derivatives (``dA``/``dB``, a constant system, the
            interpolant of `from_samples()`); raises when the order is not available.
            ``"spectral"``: FFT differentiation of one period of the callable (needs ``period``;
            the number of samples is doubled until the Fourier tail is below 1e-13 of the largest
            coefficient, coefficients at the round-off floor are dropped). ``"chebyshev"``:
            differentiate a Chebyshev interpolant on ``[t - h, t + h]`` (shifted into ``t_range``)
            whose degree is doubled (16 … 64) until its tail is resolved to 1e-13, with coefficients
            below 1e-15 of the largest dropped. ``"auto"``: exact when available, otherwise
            spectral for periodic systems and Chebyshev otherwise; sampled non-periodic data never
            falls back (the spline carries no information beyond its degree).
        h : float, optional
            Half-width of the Chebyshev interval (default ``min(1, half of t_range)``); choose it
            about the time scale on which ``A`` varies. Round-off grows like ``eps · d^j / h^j``
            for order ``j`` (measured: ~1e-14 for ``j = 1`` to ~6e-8 for ``j = 7``, relative).

        Returns
        -------
        (n, n) / (n, k) or (N, n, n) / (N, n, k) ndarray

        Raises
        ------
        LinearSystemError
            The order is not supported by the data or the method.
        TimeRangeError
            ``t`` outside ``t_range``.
        """
        o = _check_order(order)
        return self.derivatives(which, t, o, method=method, h=h, orders=(o,))[0]

    def derivatives(self, which: Literal["A", "B"], t: ArrayLike, max_order: int, *,
                    method: DerivativeMethod = "auto", h: float | None = None,
                    orders: Sequence[int] | None = None) -> NDArray[np.float64]:
        """All derivatives ``A^{(0)} … A^{(max_order)}`` (or of ``B``) at ``t`` in one call.

        Same sources and rules as `derivative()`; numerical fits are computed once and
        differentiated for every order.

        Returns
        -------
        (max_order + 1, *t.shape, n, n) or (…, n, k) ndarray
            (or ``len(orders)`` leading entries when ``orders`` is given).
        """
        self._check_which(which)
        mo = _check_order(max_order)
        if method not in ("auto", "exact", "spectral", "chebyshev"):
            raise LinearSystemError(
                f"method must be one of 'auto', 'exact', 'spectral', 'chebyshev', got {method!r}")
        want = list(range(mo + 1)) if orders is None else [_check_order(o) for o in orders]
        ta = self.check_time(t)
        maxo = self.max_exact_order(which)
        numeric: list[int] = []
        out: dict[int, NDArray[np.float64]] = {}
        for o in want:
            exact_ok = o == 0 or maxo is None or o <= maxo
            if method == "exact" or (method == "auto" and (exact_ok or self._interp)):
                if not exact_ok:
                    src = self._interp_kind or (f"d{which} given up to order {maxo}" if maxo else
                                                f"no d{which} given")
                    hint = ("pass period= for periodic data (trigonometric interpolant), raise "
                            "degree=, or give exact derivatives" if self._interp else
                            f"pass d{which} up to order {o} or use method='auto' to fall back to "
                            "spectral/Chebyshev differentiation")
                    raise LinearSystemError(
                        f"derivative of order {o} of {which}(t) requested, but the data supports "
                        f"exact derivatives only up to order {maxo} ({src}); {hint}")
                out[o] = self._eval(which, ta, o)
            elif o == 0:
                out[o] = self._eval(which, ta, 0)
            else:
                numeric.append(o)
        if numeric:
            if method == "spectral" or (method == "auto" and self._period is not None):
                if self._period is None:
                    raise LinearSystemError(
                        "spectral differentiation needs a periodic system; pass period= to "
                        "LTVSystem or use method='chebyshev'")
                ti = self._spectral(which)
                for o in numeric:
                    out[o] = ti(ta, o)
            else:
                vals = self._chebyshev(which, ta, numeric, h)
                for o, v in zip(numeric, vals):
                    out[o] = v
        return np.stack([out[o] for o in want])

    # ------------------------------------------------------------------ internals
    def _parse_derivs(self, d: Any, name: str) -> Any:
        if d is None:
            return None
        if callable(d):
            return d
        if isinstance(d, (list, tuple)):
            if not all(callable(f) for f in d):
                raise LinearSystemError(f"{name} must be a callable {name}(t, order) or a list of "
                                        f"callables [d1(t), d2(t), ...], got a list with non-callables")
            return list(d)
        raise LinearSystemError(f"{name} must be a callable {name}(t, order) or a list of callables, "
                                f"got {type(d).__name__}")

    @staticmethod
    def _check_which(which: str) -> None:
        if which not in ("A", "B"):
            raise LinearSystemError(f"which must be 'A' or 'B', got {which!r}")

    def _shape(self, which: str) -> tuple[int, int]:
        return (self._n, self._n) if which == "A" else (self._n, self._k)

    def _raw(self, which: str, o: int) -> Callable[[Any], Any]:
        """Callable ``t -> value`` of derivative order ``o`` (exact/intrinsic sources only)."""
        if o == 0:
            return self._funcs[which]
        if self._const[which] is not None:
            z = np.zeros(self._shape(which))
            return lambda t: z
        if self._interp:
            f = self._interp[which]
            return lambda t: f(t, o)
        ex = self._exact[which]
        if isinstance(ex, list):
            return ex[o - 1]
        return lambda t: ex(t, o)

    def _eval(self, which: str, t: ArrayLike, o: int) -> NDArray[np.float64]:
        ta = self.check_time(t)
        shape = self._shape(which)
        name = which if o == 0 else f"d^{o}{which}/dt^{o}"
        f = self._raw(which, o)
        if ta.ndim == 0:
            val = _as_matrix(f(float(ta)), shape, f"{name}(t)", float(ta))
            if self._const[which] is not None:
                return np.array(val)  # a copy: the stored constant stays untouched
            return check_finite(val, f"{name}(t)", where=f"at t = {float(ta)}")
        flat = ta.reshape(-1)
        if self._const[which] is not None:
            out = np.broadcast_to(f(0.0), (flat.size, *shape)).copy()
        elif self._vectorized:
            out = np.asarray(f(flat), dtype=float)
            if out.shape != (flat.size, *shape):
                _raise_vec(name, out.shape, (flat.size, *shape))
        else:
            try:
                out = np.array([f(float(ti)) for ti in flat], dtype=float)
            except (TypeError, ValueError):
                out = None
            if out is not None and out.shape == (flat.size, shape[0]) and shape[1] == 1:
                out = out[:, :, None]
            if out is None or out.shape != (flat.size, *shape):
                # slow path: find the offending time for the message
                out = np.empty((flat.size, *shape))
                for i, ti in enumerate(flat):
                    out[i] = _as_matrix(f(float(ti)), shape, f"{name}(t)", float(ti))
        check_finite(out, f"{name}(t)")
        return out.reshape((*ta.shape, *shape))

    def _spectral(self, which: str) -> "_TrigInterp":
        key = (which, "spectral")
        if key not in self._cache:
            T = float(self._period)  # type: ignore[arg-type]
            base = 0.0
            if self._t_range is not None:
                lo, hi = self._t_range
                if hi - lo < T * (1 - 1e-12):
                    raise LinearSystemError(
                        f"spectral differentiation samples one full period T = {T}, but t_range = "
                        f"({lo}, {hi}) is shorter; widen t_range or use method='chebyshev'")
                base = lo
            M = 16
            while True:
                ts = base + T * np.arange(M) / M
                ti = _TrigInterp(base, T, self._eval(which, ts, 0))
                if ti.tail_ratio <= SPECTRAL_TAIL_RTOL:
                    break
                if M >= SPECTRAL_MAX_SAMPLES:
                    warnings.warn(
                        f"spectral differentiation of {which}(t): the Fourier coefficients are not "
                        f"resolved with {M} samples per period (tail/max = {ti.tail_ratio:.1e} > "
                        f"{SPECTRAL_TAIL_RTOL:.0e}); derivatives may be inaccurate — is the period "
                        "right and A(t) smooth? Give exact derivatives (dA=, dB=) if you can",
                        RuntimeWarning, stacklevel=4)
                    break
                M *= 2
            self._cache[key] = ti
        return self._cache[key]

    def _chebyshev(self, which: str, ta: NDArray[np.float64], orders: Sequence[int],
                   h: float | None) -> list[NDArray[np.float64]]:
        shape = self._shape(which)
        if h is None:
            h = 1.0 if self._t_range is None else min(1.0, 0.5 * (self._t_range[1] - self._t_range[0]))
        if not (h > 0 and np.isfinite(h)):
            raise LinearSystemError(f"h must be a positive finite half-width, got {h!r}")
        flat = ta.reshape(-1)
        out = [np.empty((flat.size, *shape)) for _ in orders]
        for i, ti in enumerate(flat):
            a, b = ti - h, ti + h
            if self._t_range is not None:
                lo, hi = self._t_range
                if b - a > hi - lo:
                    a, b = lo, hi
                elif a < lo:
                    a, b = lo, lo + 2 * h
                elif b > hi:
                    a, b = hi - 2 * h, hi
            c, r = 0.5 * (a + b), 0.5 * (b - a)
            for d in CHEB_DEGREES:
                x = np.cos(np.pi * (np.arange(d + 1) + 0.5) / (d + 1))
                vals = self._eval(which, c + r * x, 0).reshape(d + 1, -1)
                coef = _cheb.chebfit(x, vals, d)
                top = np.abs(coef).max()
                tail = np.abs(coef[-4:]).max()
                if top == 0 or tail <= CHEB_TAIL_RTOL * top:
                    break
            else:
                warnings.warn(
                    f"Chebyshev differentiation of {which}(t) near t = {ti}: degree {CHEB_DEGREES[-1]} "
                    f"does not resolve [{a}, {b}] (tail/max = {tail / top:.1e}); derivatives may be "
                    "inaccurate — pass a smaller h= or exact derivatives (dA=, dB=)",
                    RuntimeWarning, stacklevel=4)
            coef = np.where(np.abs(coef) < CHEB_CHOP_RTOL * top, 0.0, coef)
            for j, o in enumerate(orders):
                dcoef = _cheb.chebder(coef, m=o, scl=1.0 / r)
                out[j][i] = _cheb.chebval((ti - c) / r, dcoef).reshape(shape)
        return [v.reshape((*ta.shape, *shape)) for v in out]

    def select(self, states: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
               inputs: Sequence[str] | None = None, *, check_times: ArrayLike | None = None,
               rtol: float = SELECT_RTOL) -> "LTVSystem":
        """The system on chosen states, outputs and inputs, picked by name.

        ``sys.select(states=["phi", "theta", "phi_d", "theta_d"], outputs=["phi"])`` keeps those
        states (in that order), the output ``phi`` and all inputs. Dropping states is exact only
        when no kept state depends on a dropped one: ``A(t)[kept, dropped]`` must vanish (cyclic
        coordinates, spurious directions); this is checked at ``check_times`` (default: the ends
        and three interior points of ``t_range``, or of one period, or ``0`` and ``1``) and a
        violation names the coupling. Dropped inputs are held at zero. An output is kept only if
        it does not read a dropped state.

        Parameters
        ----------
        states, outputs, inputs : sequence of str, optional
            Names to keep, in the new order; ``None`` keeps all (for outputs: all outputs that
            read only kept states when ``C = I``, i.e. the kept states).
        check_times : array_like, optional
            Times at which ``A(t)[kept, dropped] = 0`` is checked.
        rtol : float
            Entries below ``rtol · max(1, max|A(t)|)`` count as zero.

        Returns
        -------
        LTVSystem
            Same ``t_range``, ``period``, breakpoints and vectorization; exact derivatives of
            the selected blocks wherever ``sys`` has exact ones.

        Raises
        ------
        LinearSystemError
            Unknown or repeated names (the valid ones are listed), a kept state that depends on
            a dropped one, an output that reads a dropped state.
        """
        keep = _pick("states", states, self._states)
        ukeep = _pick("inputs", inputs, self._inputs)
        drop = [i for i in range(self._n) if i not in keep]
        if drop:
            if check_times is None:
                if self._t_range is not None:
                    check_times = np.linspace(*self._t_range, 5)
                elif self._period is not None:
                    check_times = np.linspace(0.0, self._period, 5)[:-1]
                else:
                    check_times = [0.0, 1.0]
            ts = np.atleast_1d(np.asarray(check_times, dtype=float))
            for t in ts:
                A = self.A(float(t))
                _check_decoupled(A, keep, drop, self._states, rtol, f"at t = {float(t):g}")
        C, onames = _select_outputs(self._C, self._outputs, self._states, keep, drop, outputs,
                                    self.has_identity_output)
        ix = np.asarray(keep)
        ju = np.asarray(ukeep, dtype=int)
        sA = (lambda M: M[..., ix[:, None], ix])
        sB = (lambda M: M[..., ix[:, None], ju])
        out = {} if C is None else {"C": C, "outputs": onames}
        names = {"states": [self._states[i] for i in keep], "inputs": [self._inputs[j] for j in ukeep]}
        if self.is_constant:
            return LTVSystem(sA(self.A(0.0)), sB(self.B(0.0)), t_range=self._t_range,
                             period=self._period, breakpoints=self._breakpoints, **names, **out)
        derivs: dict[str, Any] = {}
        for key, which, sel in (("dA", "A", sA), ("dB", "B", sB)):
            ex = self.max_exact_order(which)

            def f(t: Any, k: int, _w: str = which, _s: Any = sel) -> NDArray[np.float64]:
                return _s(self.derivative(_w, t, k, method="exact"))
            if ex is None:
                derivs[key] = f
            elif ex > 0:
                derivs[key] = [(lambda t, _k=j, _f=f: _f(t, _k)) for j in range(1, ex + 1)]
        return LTVSystem(lambda t: sA(self.A(t)), lambda t: sB(self.B(t)), t_range=self._t_range,
                         period=self._period, vectorized=self._vectorized,
                         breakpoints=self._breakpoints, **derivs, **names, **out)

    def __repr__(self) -> str:
        kind = "constant" if self.is_constant else ("periodic" if self._period else "time-varying")
        extra = f", t_range={self._t_range}" if self._t_range is not None else ""
        extra += f", period={self._period:.6g}" if self._period else ""
        outs = "" if self.has_identity_output else f", outputs={_short(self._outputs)}"
        return (f"<LTVSystem {kind}: {self._n} states {_short(self._states)}, {self._k} inputs "
                f"{_short(self._inputs)}{outs}{extra}>")

    def _repr_html_(self) -> str:
        rows = [("kind", "constant" if self.is_constant else ("periodic" if self._period else "time-varying")),
                ("states", ", ".join(self._states)), ("inputs", ", ".join(self._inputs)),
                ("outputs", "= states (C = I)" if self.has_identity_output else ", ".join(self._outputs)),
                ("t_range", str(self._t_range)), ("period", str(self._period))]
        return html_table(f"LTVSystem ({self._n} states, {self._k} inputs)", rows)


def _pick(kind: str, wanted: Sequence[str] | None, available: Sequence[str]) -> list[int]:
    """Indices of the names ``wanted`` among ``available`` (all when ``None``)."""
    import difflib

    avail = list(available)
    if wanted is None:
        return list(range(len(avail)))
    if isinstance(wanted, str):
        wanted = [wanted]
    wanted = list(wanted)
    unknown = [w for w in wanted if w not in avail]
    if unknown:
        near = {w: difflib.get_close_matches(str(w), avail, n=1) for w in unknown}
        hint = "; ".join(f"{w!r} -> {c[0]!r}?" for w, c in near.items() if c)
        raise LinearSystemError(f"select: unknown {kind} {unknown}; the {kind} are {avail}"
                                + (f" (did you mean: {hint})" if hint else ""))
    dup = sorted({w for w in wanted if wanted.count(w) > 1})
    if dup:
        raise LinearSystemError(f"select: {kind} {dup} given more than once")
    if not wanted:
        raise LinearSystemError(f"select: keep at least one of the {kind} {avail}")
    return [avail.index(w) for w in wanted]


def _check_decoupled(A: NDArray[np.float64], keep: list[int], drop: list[int], states: Sequence[str],
                     rtol: float, where: str) -> None:
    """Raise when a kept state depends on a dropped one (``A[kept, dropped] ≠ 0``)."""
    blk = np.abs(A[np.ix_(keep, drop)])
    tol = rtol * max(1.0, float(np.max(np.abs(A))))
    if blk.size and float(blk.max()) > tol:
        i, j = np.unravel_index(int(np.argmax(blk)), blk.shape)
        raise LinearSystemError(
            f"select: the kept state {states[keep[i]]!r} depends on the dropped state "
            f"{states[drop[j]]!r} {where} (|A| = {float(blk[i, j]):.3g} > {tol:.3g}); dropping it "
            "would change the motion. Keep it, or drop only states that nothing depends on "
            "(cyclic coordinates, spurious directions: LinearizationResult.reduced_states())")


def _select_outputs(C: NDArray[np.float64], onames: Sequence[str], states: Sequence[str],
                    keep: list[int], drop: list[int], outputs: Sequence[str] | None,
                    identity: bool) -> tuple[NDArray[np.float64] | None, list[str] | None]:
    """The output map on the kept states: ``(C, names)``, or ``(None, None)`` for ``C = I``."""
    if identity and (outputs is None or list(outputs) == [states[i] for i in keep]):
        return None, None          # C = I on the kept states, outputs named after them
    rows = _pick("outputs", outputs, onames) if outputs is not None else list(range(len(onames)))
    Cs = C[rows]
    reads = np.abs(Cs[:, drop]) > 0 if drop else np.zeros((len(rows), 0), dtype=bool)
    if reads.any():
        r, j = np.argwhere(reads)[0]
        raise LinearSystemError(f"select: the output {onames[rows[r]]!r} reads the dropped state "
                                f"{states[drop[j]]!r}; keep that state or drop the output")
    return Cs[:, keep], [onames[r] for r in rows]


class _TrigInterp:
    """Trigonometric interpolant of equispaced samples over one period, any derivative order."""

    def __init__(self, t0: float, T: float, vals: NDArray[np.float64]) -> None:
        M = vals.shape[0]
        self.t0, self.T, self.M = float(t0), float(T), M
        self.shape = vals.shape[1:]
        F = np.fft.fft(vals.reshape(M, -1), axis=0) / M
        k = np.fft.fftfreq(M, d=1.0 / M)
        if M % 2 == 0:
            # Split the Nyquist coefficient symmetrically so the interpolant stays real.
            F = np.concatenate([F, F[M // 2: M // 2 + 1] / 2], axis=0)
            F[M // 2] /= 2
            k = np.concatenate([k, [M / 2]])
        mag = np.abs(F).max(axis=1)
        top = mag.max() if mag.size else 0.0
        # Coefficients at the round-off floor carry only noise, which differentiation amplifies
        # by (k w)^order: drop them (as chebfun does).
        F = np.where(np.abs(F) < 8 * np.finfo(float).eps * max(top, np.finfo(float).tiny), 0.0, F)
        self.F, self.k = F, k
        tail = mag[np.abs(k) > M / 4].max() if np.any(np.abs(k) > M / 4) else 0.0
        self.tail_ratio = float(tail / top) if top > 0 else 0.0

    def __call__(self, t: ArrayLike, order: int) -> NDArray[np.float64]:
        ta = np.asarray(t, dtype=float)
        w = 2 * np.pi / self.T
        fac = (1j * w * self.k) ** order
        ph = np.exp(1j * w * np.outer(ta.reshape(-1) - self.t0, self.k))
        out = (ph * fac) @ self.F
        return out.real.reshape((*ta.shape, *self.shape))


def _output_map(C: ArrayLike | None, outputs: Sequence[str] | None, states: tuple[str, ...]
                ) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """Validated output matrix (identity by default) and output names."""
    n = len(states)
    if C is None:
        Cm = np.eye(n)
        default = states
    else:
        Cm = as_float_array(C, "C")
        if Cm.ndim == 1:
            Cm = Cm.reshape(1, -1)
        if Cm.ndim != 2 or Cm.shape[1] != n:
            raise LinearSystemError(f"C must have shape (p, n) = (p, {n}) to map the states {list(states)} "
                                    f"to the outputs, got {Cm.shape}")
        check_finite(Cm, "C")
        default = None
    names = check_names(outputs if outputs is not None else default, Cm.shape[0], "outputs", "y")
    return readonly(np.array(Cm)), names


def _check_order(order: Any) -> int:
    try:
        o = int(order)
    except (TypeError, ValueError) as exc:
        raise LinearSystemError(f"derivative order must be a non-negative integer, got {order!r}") from exc
    if o != order or o < 0:
        raise LinearSystemError(f"derivative order must be a non-negative integer, got {order!r}")
    return o


def _as_matrix(val: Any, shape: tuple[int, int], name: str, t: float) -> NDArray[np.float64]:
    arr = as_float_array(val, name)
    if arr.ndim == 1 and shape[1] == 1 and arr.shape[0] == shape[0]:
        arr = arr.reshape(shape)
    if arr.shape != shape:
        raise LinearSystemError(f"{name} must have shape {shape} at every t, got {arr.shape} at t = {t}")
    return arr


def _raise_vec(name: str, got: tuple[int, ...], want: tuple[int, ...]) -> None:
    raise LinearSystemError(
        f"vectorized {name} must return shape {want} for {want[0]} times, got {got}; fix the callable "
        "or build the LTVSystem with vectorized=False")


def _check_t_range(t_range: Any) -> tuple[float, float] | None:
    if t_range is None:
        return None
    try:
        lo, hi = (float(v) for v in t_range)
    except (TypeError, ValueError) as exc:
        raise LinearSystemError(f"t_range must be a pair (t_start, t_end), got {t_range!r}") from exc
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        raise LinearSystemError(f"t_range must be finite with t_start < t_end, got ({lo}, {hi})")
    return (lo, hi)


def _check_breakpoints(breakpoints: ArrayLike | None, t_range: tuple[float, float] | None
                       ) -> tuple[float, ...]:
    """Sorted, unique, finite jump times, those strictly inside ``t_range`` (when given)."""
    if breakpoints is None:
        return ()
    bp = as_float_array(breakpoints, "breakpoints").reshape(-1)
    if not np.all(np.isfinite(bp)):
        raise LinearSystemError(f"breakpoints must be finite times (the jumps of A(t), B(t)), got "
                                f"{bp.tolist()}")
    if t_range is not None:
        bp = bp[(bp > t_range[0]) & (bp < t_range[1])]
    return tuple(float(b) for b in np.unique(bp))


def _check_period(period: Any) -> float | None:
    if period is None:
        return None
    try:
        T = float(period)
    except (TypeError, ValueError) as exc:
        raise LinearSystemError(f"period must be a positive number, got {period!r}") from exc
    if not (math.isfinite(T) and T > 0):
        raise LinearSystemError(f"period must be a positive finite number T > 0, got {period!r}")
    return T


def as_ltv(sys: Any) -> LTVSystem:
    """Return ``sys`` as an [`LTVSystem`][nhcontrol.systems.LTVSystem].

    Parameters
    ----------
    sys : LTVSystem, control.StateSpace or (A, B) tuple
        A continuous-time python-control ``StateSpace`` becomes a constant LTV system with its
        state, input and output labels and its ``C`` (a nonzero ``D`` is dropped with a warning).

    Returns
    -------
    LTVSystem

    Raises
    ------
    LinearSystemError
        For discrete-time ``StateSpace`` objects or unsupported types.
    """
    if isinstance(sys, LTVSystem):
        return sys
    # a StateSpace exists only once python-control was imported (not imported for nothing here)
    control = _sys.modules.get("control")
    if control is not None and isinstance(sys, control.StateSpace):
        if sys.isdtime(strict=True):
            raise LinearSystemError(
                f"expected a continuous-time system, got a discrete StateSpace with dt = {sys.dt}; "
                "use nhcontrol.systems.DiscreteLTV.from_lti for discrete data")
        if np.any(np.asarray(sys.D) != 0):
            warnings.warn("the control.StateSpace has a nonzero feedthrough D, which an LTVSystem does not "
                          "hold (y = C x): D is dropped (A, B and C are kept)", UserWarning, stacklevel=2)
        return LTVSystem.constant(sys.A, sys.B, states=list(sys.state_labels), inputs=list(sys.input_labels),
                                  C=np.asarray(sys.C, dtype=float), outputs=list(sys.output_labels))
    if isinstance(sys, tuple) and len(sys) == 2:
        return LTVSystem.constant(sys[0], sys[1])
    raise LinearSystemTypeError(
        f"expected an LTVSystem, a continuous control.StateSpace or an (A, B) tuple, got {type(sys).__name__}")
