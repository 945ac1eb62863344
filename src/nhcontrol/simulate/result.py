"""Results of the nonlinear forward simulation ([`forward_dynamics()`][nhcontrol.simulate.forward_dynamics])."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import control
import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import SolverError
from nhcontrol._util.validation import readonly
from nhcontrol._util.reprs import concise_repr, short_names

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["SimulationResult", "SimulationSamples"]


@dataclass(frozen=True)
class SimulationSamples:
    """A simulated trajectory evaluated at times ``t`` (dense output).

    Attributes
    ----------
    t : (N,) ndarray
    x, xd, xdd : (N, n) ndarray
    lam : (N, m + l) ndarray
    u : (N, k) ndarray
    """

    __repr__ = concise_repr

    t: NDArray[np.float64]
    x: NDArray[np.float64]
    xd: NDArray[np.float64]
    xdd: NDArray[np.float64]
    lam: NDArray[np.float64]
    u: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """A forward simulation of the index-1 equations of motion, Eq. (2.119).

    Attributes
    ----------
    t : (N,) ndarray
        Output times (``t_eval`` or the integrator's steps).
    x, xd, xdd : (N, n) ndarray
        Coordinates, velocities, accelerations.
    lam : (N, m + l) ndarray
        Lagrange multipliers (holonomic first); reactions are ``-Dᵀ Λ``.
    u : (N, k) ndarray
        Inputs applied at ``t`` (right-continuous for a zero-order hold).
    holonomic_drift : (N,) ndarray
        ``max_i |C_i(x)|`` (Eq. (2.109)); zeros when ``m = 0``.
    nonholonomic_drift : (N,) ndarray
        ``max_i |(B ẋ)_i|`` (Eq. (2.110)); zeros when ``l = 0``.
    velocity_drift : (N,) ndarray
        ``max_i |(D ẋ)_i|`` (Eq. (2.114)).
    condition : (N,) ndarray
        Condition number of ``[[M, Dᵀ], [D, 0]]`` at each output time.
    coordinates, velocities, input_labels, constraints : tuple of str
        Names (``input_labels`` as python-control names them).
    time, states, inputs, outputs : ndarray
        python-control's names for the data (`TimeResponseData`): ``time`` (N,), ``states``
        ``[x; ẋ]`` (2n, N), ``inputs`` (k, N), ``outputs`` = ``states`` (2n, N); their labels
        ``state_labels``, ``input_labels``, ``output_labels``.
    model : CompiledModel
        The model simulated (kept for `evaluate()` and ``Reference.from_simulation``).
    parameters : (np,) ndarray
    baumgarte : (float, float)
        ``(α, β)`` (thesis ``β_e``, ``γ_e``).
    method : str
    sample_time : float or None
        Zero-order-hold period of the discrete controller.
    control_times : (K,) ndarray
        Instants at which the discrete controller was called.
    control_inputs : (K, k) ndarray
        The inputs it returned (held until the next instant).
    t_events : tuple of ndarray
        Event times, one array per event function.
    status : int
        0: reached the end; 1: a terminal event stopped the integration.
    message : str
    nfev : int
        Right-hand-side evaluations.
    breakpoints : tuple of float
        Jump times of the open-loop inputs declared to `forward_dynamics()` (inside
        ``t_span``); ``Reference.from_simulation`` carries them (with a zero-order hold, the
        control instants where the held input changes).
    """

    t: NDArray[np.float64]
    x: NDArray[np.float64]
    xd: NDArray[np.float64]
    xdd: NDArray[np.float64]
    lam: NDArray[np.float64]
    u: NDArray[np.float64]
    holonomic_drift: NDArray[np.float64]
    nonholonomic_drift: NDArray[np.float64]
    velocity_drift: NDArray[np.float64]
    condition: NDArray[np.float64]
    coordinates: tuple[str, ...]
    velocities: tuple[str, ...]
    input_labels: tuple[str, ...]
    constraints: tuple[str, ...]
    model: CompiledModel | None = field(repr=False)
    parameters: NDArray[np.float64] = field(repr=False)
    baumgarte: tuple[float, float]
    method: str
    sample_time: float | None
    control_times: NDArray[np.float64] = field(repr=False)
    control_inputs: NDArray[np.float64] = field(repr=False)
    t_events: tuple[NDArray[np.float64], ...] = field(repr=False)
    status: int
    message: str
    nfev: int
    _segments: tuple = field(repr=False, default=())
    _dynamics: Any = field(repr=False, default=None)
    breakpoints: tuple[float, ...] = field(repr=False, default=())

    # ------------------------------------------------------------------ summaries
    @property
    def max_holonomic_drift(self) -> float:
        """``max_t |C|``."""
        return float(np.max(self.holonomic_drift)) if self.t.size else 0.0

    @property
    def max_nonholonomic_drift(self) -> float:
        """``max_t |B ẋ|``."""
        return float(np.max(self.nonholonomic_drift)) if self.t.size else 0.0

    @property
    def max_velocity_drift(self) -> float:
        """``max_t |D ẋ|``."""
        return float(np.max(self.velocity_drift)) if self.t.size else 0.0

    @property
    def max_drift(self) -> float:
        """Largest of the holonomic and velocity drifts."""
        return max(self.max_holonomic_drift, self.max_velocity_drift)

    # ------------------------------------------------------------------ python-control names
    @property
    def state_labels(self) -> list[str]:
        """State names ``coordinates + velocities`` (the rows of `states`)."""
        return list(self.coordinates + self.velocities)

    @property
    def output_labels(self) -> list[str]:
        """Output names: the states (the rows of `outputs`)."""
        return self.state_labels

    @property
    def time(self) -> NDArray[np.float64]:
        """Sample times (N,) (python-control's ``time``; the same array as `t`)."""
        return self.t

    @property
    def states(self) -> NDArray[np.float64]:
        """State trajectory ``[x; ẋ]`` (2n, N), rows named by `state_labels` (as
        ``TimeResponseData.states``)."""
        return readonly(np.vstack([self.x.T, self.xd.T]))

    @property
    def inputs(self) -> NDArray[np.float64]:
        """Input trajectory (k, N), rows named by `input_labels`."""
        return readonly(np.ascontiguousarray(self.u.T))

    @property
    def outputs(self) -> NDArray[np.float64]:
        """Outputs (2n, N): the states (see `to_response()` to select some)."""
        return self.states

    @property
    def nstates(self) -> int:
        """``2n``."""
        return 2 * len(self.coordinates)

    @property
    def ninputs(self) -> int:
        """``k``."""
        return len(self.input_labels)

    @property
    def noutputs(self) -> int:
        """``2n`` (the outputs are the states)."""
        return self.nstates

    # ------------------------------------------------------------------ files
    _ARRAYS = ("t", "x", "xd", "xdd", "lam", "u", "holonomic_drift", "nonholonomic_drift", "velocity_drift",
               "condition", "parameters", "control_times", "control_inputs")

    def save(self, path: Any) -> Any:
        """Save the samples to ``path`` (``.npz`` + JSON metadata; the model by name and hash).

        The dense output is not stored: a loaded result evaluates only at its samples.
        """
        from nhcontrol._util.storage import save_npz

        arrays = {k: getattr(self, k) for k in self._ARRAYS}
        arrays.update({f"t_events_{i}": e for i, e in enumerate(self.t_events)})
        meta = {"coordinates": list(self.coordinates), "velocities": list(self.velocities),
                "inputs": list(self.input_labels), "constraints": list(self.constraints),
                "baumgarte": list(self.baumgarte), "method": self.method, "sample_time": self.sample_time,
                "status": int(self.status), "message": self.message, "nfev": int(self.nfev),
                "n_events": len(self.t_events), "model_name": self.model_name,
                "model_hash": getattr(self.model, "model_hash", None),
                "breakpoints": [float(b) for b in self.breakpoints]}
        return save_npz(path, "SimulationResult", arrays, meta)

    @classmethod
    def load(cls, path: Any, model: CompiledModel | None = None) -> "SimulationResult":
        """Read a file of `save()`. ``model`` (optional) is attached after its hash is checked.

        Raises
        ------
        StorageError
            The file is not a saved `SimulationResult`, a field is missing, of the wrong type or
            inconsistent with the others (the names and the array sizes), or ``model`` is not
            the model it was simulated with; the message names the file and the field.
        """
        from nhcontrol._util.storage import LoadedFile, StorageError

        f = LoadedFile(path, "SimulationResult")
        coords = f.names("coordinates")
        n = len(coords)
        vels = f.names("velocities", n, "coordinates")
        inputs = f.names("inputs")
        cons = f.names("constraints")
        t = f.array("t", ndim=1)
        N = t.shape[0]
        arr = {"t": t}
        sizes = {"x": n, "xd": n, "xdd": n, "lam": len(cons), "u": len(inputs)}
        for key, width in sizes.items():
            arr[key] = f.array(key, ndim=2)
            f.shape(key, arr[key], (N, width), f"{N} times and {width} names")
        for key in ("holonomic_drift", "nonholonomic_drift", "velocity_drift", "condition"):
            arr[key] = f.array(key, ndim=1, finite=key != "condition")
            f.shape(key, arr[key], (N,), f"{N} times")
        arr["parameters"] = f.array("parameters", ndim=1)
        arr["control_times"] = f.array("control_times", ndim=1)
        arr["control_inputs"] = f.array("control_inputs", ndim=2)
        nev = f.integer("n_events")
        events = tuple(readonly(f.array(f"t_events_{i}", ndim=1)) for i in range(nev))
        mhash = f.text("model_hash", allow_none=True)
        name = f.text("model_name", default="")
        if model is not None and mhash and getattr(model, "model_hash", None) != mhash:
            raise StorageError(f"{path} was simulated with model {name!r} (hash "
                               f"{str(mhash)[:12]}...), not with {getattr(model, 'name', model)!r}")
        base = f.numbers("baumgarte")
        if len(base) != 2:
            raise f.fail("baumgarte", f"is {list(base)}, not a pair (alpha, beta)")
        res = f.build(lambda: cls(
            **{k: readonly(np.array(arr[k])) for k in cls._ARRAYS},
            coordinates=coords, velocities=vels, input_labels=inputs, constraints=cons, model=model,
            baumgarte=base, method=f.text("method"),
            sample_time=f.number("sample_time", positive=True, allow_none=True),
            t_events=events, status=f.integer("status", minimum=-1), message=f.text("message"),
            nfev=f.integer("nfev"), breakpoints=f.numbers("breakpoints", default=[])))
        object.__setattr__(res, "_dense_note", f"it was loaded from {path} (samples only)")
        return res

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        # The fast evaluator is rebuilt from model, parameters and baumgarte on unpickling;
        # the input rates u̇(t) it was given (forward_dynamics(..., ud=...)) travel alongside.
        # The dense output travels with the input law of each segment (held values and
        # module-level input functions pickle); a law or input rates that cannot be pickled
        # (a lambda, a local function) drop the dense output, and evaluate() says so.
        state = dict(self.__dict__)
        state["_dynamics"] = None
        rates = getattr(self._dynamics, "input_rates", None)
        state["_input_rates"] = rates
        if self._segments:
            try:
                pickle.dumps(([seg[3] for seg in self._segments], rates))
            except (pickle.PicklingError, AttributeError, TypeError) as exc:
                state["_segments"] = tuple((a, b, None, None) for a, b, _, _ in self._segments)
                state["_input_rates"] = None
                state["_dense_note"] = (f"it was unpickled; its dense output was not pickled because the input law "
                                        f"(input function, input rates or controller) cannot be pickled ({exc})")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        if "inputs" in state and "input_labels" not in state:     # pickled before the labels moved
            state["input_labels"] = tuple(state.pop("inputs"))
        rates = state.pop("_input_rates", None)
        for key, value in state.items():
            object.__setattr__(self, key, value)
        if state.get("_dynamics") is None and self.model is not None:
            from nhcontrol.reference._eval import ModelEvaluator

            from ._dynamics import Dynamics
            dyn = Dynamics(ModelEvaluator(self.model, self.parameters), *self.baumgarte)
            dyn.input_rates = rates
            object.__setattr__(self, "_dynamics", dyn)

    @property
    def has_dense_output(self) -> bool:
        """True when the integrator's continuous extension was kept (see `evaluate()`)."""
        return bool(self._segments) and all(s[2] is not None for s in self._segments)

    def __str__(self) -> str:
        return (f"SimulationResult of {len(self.t)} samples on t in [{self.t[0]:.6g}, "
                f"{self.t[-1]:.6g}] ({self.method}, Baumgarte α = {self.baumgarte[0]:g}, "
                f"β = {self.baumgarte[1]:g}, nfev = {self.nfev}): max |C| = "
                f"{self.max_holonomic_drift:.2e}, max |B ẋ| = {self.max_nonholonomic_drift:.2e}, "
                f"max |D ẋ| = {self.max_velocity_drift:.2e}; {self.message}")

    def __repr__(self) -> str:
        span = f"[{self.t[0]:.6g}, {self.t[-1]:.6g}]" if self.t.size else "[]"
        return (f"SimulationResult({self.model_name!r}, {self.t.size} samples, t in {span} s, "
                f"states={short_names(self.state_labels, 6)}, inputs={short_names(self.input_labels, 6)}, "
                f"status={self.status})")

    # ------------------------------------------------------------------ dense evaluation
    def evaluate(self, t: ArrayLike) -> SimulationSamples:
        """The trajectory at arbitrary times in the simulated interval (dense output).

        ``x, ẋ`` come from the integrator's continuous extension, ``ẍ, Λ`` from solving
        Eq. (2.119) there with the input that was applied (zero-order hold: the held value)
        and its rate (``forward_dynamics(..., ud=...)``; a pickled result carries both).

        Raises
        ------
        SolverError
            The simulation was run with ``dense_output=False``, or ``t`` is outside the
            simulated interval.
        """
        if not self.has_dense_output:
            note = self.__dict__.get("_dense_note")
            if note:
                raise SolverError(f"this simulation has no dense output: {note}; evaluate at the "
                                  "stored times t (or keep the input law picklable)")
            raise SolverError("this simulation kept no dense output; rerun forward_dynamics with "
                              "dense_output=True (the default) to evaluate between samples")
        tt = np.atleast_1d(np.asarray(t, dtype=float))
        lo, hi = self._segments[0][0], self._segments[-1][1]
        slack = 1e-12 * max(1.0, abs(hi - lo))
        if tt.size and (tt.min() < lo - slack or tt.max() > hi + slack):
            raise SolverError(f"t must lie in the simulated interval [{lo:.6g}, {hi:.6g}], got "
                              f"[{tt.min():.6g}, {tt.max():.6g}]")
        tt = np.clip(tt, lo, hi)
        n = len(self.coordinates)
        starts = np.array([s[0] for s in self._segments])
        idx = np.clip(np.searchsorted(starts, tt, side="right") - 1, 0, len(self._segments) - 1)
        Y = np.empty((tt.size, 2 * n))
        U = np.empty((tt.size, len(self.input_labels)))
        for j in np.unique(idx):
            sel = idx == j
            _, _, sol, ufun = self._segments[j]
            Y[sel] = sol(tt[sel]).T
            U[sel] = ufun(tt[sel], Y[sel, :n], Y[sel, n:])
        X, XD = Y[:, :n], Y[:, n:]
        udf = getattr(self._dynamics, "input_rates", None)
        UD = None if udf is None else np.array([udf(ti) for ti in tt]).reshape(tt.size, -1)
        out = self._dynamics.stacked(X, XD, U if self.input_labels else None, UD)
        return SimulationSamples(t=readonly(tt), x=readonly(X), xd=readonly(XD),
                                 xdd=readonly(out["xdd"]), lam=readonly(out["lam"]),
                                 u=readonly(U))

    # ------------------------------------------------------------------ python-control
    def to_response(self, outputs: Sequence[str] | None = None) -> control.TimeResponseData:
        """The trajectory as a python-control ``TimeResponseData``.

        States are ``[x; ẋ]`` named after the coordinates and velocities; the outputs are the
        states named in ``outputs`` (default: all) and carry the same labels; inputs are named
        after the model's inputs (no input signal for a model without inputs). Select a few
        outputs for a readable ``.plot()``.

        Raises
        ------
        SolverError
            For names that are not states.
        """
        states = np.vstack([self.x.T, self.xd.T])
        names = self.state_labels
        outs = names if outputs is None else list(outputs)
        bad = [o for o in outs if o not in names]
        if bad or not outs:
            raise SolverError(f"outputs {bad or outs} are not states of {self.model_name!r}; valid names "
                              f"are {names}")
        idx = [names.index(o) for o in outs]
        has_u = bool(self.input_labels)
        return control.TimeResponseData(
            self.t, states[idx], states, self.u.T if has_u else None, issiso=False,
            output_labels=outs, state_labels=names,
            input_labels=list(self.input_labels) if has_u else None,
            title=f"forward dynamics of {self.model_name}",
            sysname=self.model_name, success=self.status >= 0, message=self.message,
            plot_inputs=has_u)

    @property
    def model_name(self) -> str:
        """Name of the simulated model."""
        return str(getattr(self.model, "name", "model"))
