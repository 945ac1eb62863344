"""Tracking controllers as objects: one protocol for TV-LQR, LTV-MPC and RTI-NMPC.

Every controller here tracks a reference motion with a sampled, zero-order-hold input and
follows the same protocol ([`TrackingController`][nhcontrol.design.TrackingController]):

- ``control(t, state) -> u`` with ``state = [x; ẋ]`` the plant state at the sample ``t``
  (``ctrl(t, x, xd)`` is the same call in the signature of
  [`forward_dynamics()`][nhcontrol.simulate.forward_dynamics]'s controllers);
- ``reset()`` forgets what the controller remembers (previous input, integrator, plan);
- ``reference``, ``dt``, ``t0`` and ``inputs`` they carry;
- ``to_iosystem()``: a python-control discrete-time ``NonlinearIOSystem`` whose inputs are the
  plant state ``[x; ẋ]`` (named like [`to_nlsys()`][nhcontrol.simulate.to_nlsys]'s states),
  whose outputs are the plant inputs, and whose state is what the controller remembers;
  closed with the sampled plant ``to_nlsys(cm, dt=h)`` by ``control.interconnect``;
- ``history``: one [`ControlRecord`][nhcontrol.design.ControlRecord] per sample (status,
  solve time, slack used).

The deviation the controller acts on is ``δx = S · dev(t, x, ẋ)`` with ``dev`` the linearization's
``deviation(ref, t, x, ẋ)`` (Eq. (4.96)), a user callable, or ``[x − x0(t); ẋ − ẋ0(t)]``, and
``S`` an optional state map (e.g. the ball-plate's spin reduction). The feed-forward is
``u0(t_k + h/2)`` (``feedforward="midpoint"``, the input the ZOH sample sees on average) or
``u0(t_k)``.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util import checks as _checks
from .._util.errors import DesignError, SolverError
from .._util.validation import as_float_array
from .lqr import LQRResult, finite_horizon_lqr
from ._plain import PlainReference, model_names, plain_reference
from .mpc import LTVMPC, MPCStep, _plan_duals
from .._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.reference import Reference

__all__ = ["ControlRecord", "TrackingController", "TVLQRController", "MPCController",
           "RiccatiSchedule"]


@dataclass(frozen=True)
class ControlRecord:
    """What one sample of a tracking controller did.

    Attributes
    ----------
    t : float
        Sample time.
    u : (k,) ndarray
        Applied input.
    status : str
        ``"lqr"`` (TV-LQR), the QP status (``"optimal"``, ``"optimal_inaccurate"``), or a
        named fallback ``"fallback: shifted plan (...)"`` / ``"fallback: lqr (...)"``.
    solve_time : float
        Wall-clock seconds of the whole sample (``time.perf_counter``, a monotonic clock,
        around the controller's call: deviation, window, re-linearization, discretization,
        QP set-up and solve, fallbacks).
    slack_max : float
        Largest slack of soft state and output bounds (0 when none were needed).
    iterations : int
        SQP iterations (1 for RTI and LTV-MPC, 0 for LQR).
    kkt_residual : float
        KKT residual of the discretized nonlinear problem after the step (NMPC; ``nan`` else).
    cpu_time : float
        CPU seconds of the sample in this thread (``time.thread_time``; less sensitive than the
        wall clock to other processes on a shared machine).
    kkt_history : tuple of float
        KKT residual after each SQP iteration of the sample (NMPC with the residual reported;
        empty otherwise): its ratios show the (linear) rate of convergence.
    """

    __repr__ = concise_repr

    t: float
    u: NDArray[np.float64]
    status: str
    solve_time: float = 0.0
    slack_max: float = 0.0
    iterations: int = 0
    kkt_residual: float = float("nan")
    cpu_time: float = 0.0
    kkt_history: tuple[float, ...] = ()


def _timed(rec: ControlRecord, solve_time: float, cpu_time: float) -> ControlRecord:
    """``dataclasses.replace(rec, solve_time=..., cpu_time=...)`` without re-running the
    generated ``__init__`` of every field (a new record: ``rec`` is not changed; 0.4 µs
    against 2.4 µs per sample)."""
    new = object.__new__(type(rec))
    d = new.__dict__
    d.update(rec.__dict__)
    d["solve_time"], d["cpu_time"] = solve_time, cpu_time
    return new


class TrackingController:
    """Base class and protocol of nhcontrol's sampled tracking controllers.

    Subclasses implement ``_compute(t, x, ẋ, memory) -> (u, new_memory, record, side)``; the
    memory is a flat float array (the controller's state in `to_iosystem`), ``side`` the
    attributes to set when the sample is committed (a plan for warm starts and fallbacks):
    python-control evaluates output functions more than once per sample (once with its
    initial zero signals), so only the state update commits.
    """

    dt: float
    t0: float
    reference: Reference
    inputs: tuple[str, ...]

    def __init__(self, reference: Reference, dt: float, *, linearization: Any = None,
                 deviation: Callable[[float, NDArray, NDArray], ArrayLike] | None = None,
                 state_map: ArrayLike | Callable[[NDArray], NDArray] | None = None,
                 t0: float = 0.0, feedforward: Literal["midpoint", "sample"] = "midpoint",
                 inputs: tuple[str, ...] | None = None) -> None:
        h = float(dt)
        if not (math.isfinite(h) and h > 0):
            raise DesignError(f"dt must be a positive sample time in seconds, got {dt!r}")
        if feedforward not in ("midpoint", "sample"):
            raise DesignError(f"feedforward must be 'midpoint' or 'sample', got {feedforward!r}")
        if not callable(getattr(reference, "u", None)):
            raise DesignError(f"reference must be a Reference (with x(t), xd(t), u(t)), got "
                              f"{type(reference).__name__}")
        t0v = _checks.sample_time(t0, what=type(self).__name__, error=DesignError, name="t0")
        self.reference, self.dt, self.t0 = reference, h, t0v
        self.plain = isinstance(reference, PlainReference)
        self.linearization, self._deviation, self.feedforward = linearization, deviation, feedforward
        if state_map is None or callable(state_map):
            self.state_map = state_map
        else:
            self.state_map = as_float_array(state_map, "state_map", ndim=2, error=DesignError)
        ins = inputs if inputs is not None else tuple(getattr(reference, "inputs", ()) or ())
        if self.plain and inputs is not None and len(tuple(inputs)) != reference.ninputs:
            raise DesignError(f"inputs names {list(inputs)} must name the {reference.ninputs} inputs")
        self.inputs = tuple(ins)
        self.history: list[ControlRecord] = []
        self._memory = self._initial_memory()

    # ------------------------------------------------------------------ pieces
    def _initial_memory(self) -> NDArray[np.float64]:
        return np.zeros(0)

    def deviation(self, t: float, x: ArrayLike, xd: ArrayLike) -> NDArray[np.float64]:
        """The state the controller acts on, ``δx = S dev(t, x, ẋ)``."""
        x = np.asarray(x, dtype=float)
        xd = np.asarray(xd, dtype=float)
        if self._deviation is not None:
            d = np.asarray(self._deviation(t, x, xd), dtype=float).reshape(-1)
        elif self.plain:
            d = x - self.reference.x(t)
        elif self.linearization is not None:
            d = np.asarray(self.linearization.deviation(self.reference, t, x, xd), dtype=float)
        else:
            ref = self.reference
            d = np.concatenate([x - ref.x(t), xd - ref.xd(t)])
        if self.state_map is None:
            return d
        if callable(self.state_map):
            return np.asarray(self.state_map(d), dtype=float).reshape(-1)
        return self.state_map @ d

    def u_ref(self, t: ArrayLike) -> NDArray[np.float64]:
        """Feed-forward ``u0`` for the sample(s) starting at ``t`` (midpoint or sample time)."""
        tt = np.asarray(t, dtype=float)
        return np.asarray(self.reference.u(tt + (0.5 * self.dt if self.feedforward == "midpoint"
                                                 else 0.0)), dtype=float)

    def index(self, t: float) -> int:
        """Sample index ``k = round((t − t0)/dt)``."""
        k = int(round((float(t) - self.t0) / self.dt))
        if k < 0:
            raise DesignError(f"t = {t:.6g} is before the controller's first sample t0 = {self.t0:.6g}")
        return k

    def _compute(self, t: float, x: NDArray, xd: NDArray, memory: NDArray
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64], ControlRecord, dict]:
        raise NotImplementedError

    def _commit(self, rec: ControlRecord, side: dict) -> None:
        self.__dict__.update(side)
        self.history.append(rec)

    # ------------------------------------------------------------------ protocol
    def control(self, t: float, state: ArrayLike) -> NDArray[np.float64]:
        """Input at the sample ``t`` for the plant state ``state = [x; ẋ]`` (2n,), or the
        state ``x`` of the plain linear system (``reference=None``).

        ``t`` must be a sample time ``t0 + k dt`` (an off-grid time is refused, as by the
        estimators); ``state`` must be finite, of length ``2n`` (n = the reference's
        coordinates; the system's ``n`` states for a plain system). A non-finite input is
        never returned (`SolverError`).
        """
        what = f"{type(self).__name__}.control"
        tv = _checks.sample_time(t, what=what, error=DesignError)
        _checks.grid_index(tv, self.t0, self.dt, what=what, error=DesignError)
        if self.plain:
            s = np.asarray(state, dtype=float).reshape(-1)
            if s.size != self.reference.nstates:
                raise DesignError(f"state must be the {self.reference.nstates} states "
                                  f"{list(self.reference.states)} of the system, got {s.size} entries")
            s = _checks.finite_vector(s, "state x", s.size, what=what, error=DesignError)
            return self._apply(what, tv, s, np.zeros(0))
        n_ref = len(getattr(self.reference, "coordinates", ()) or ())
        if n_ref:
            s = _checks.finite_vector(state, "state [x; xd]", 2 * n_ref, what=what, error=DesignError)
        else:
            s = np.asarray(state, dtype=float).reshape(-1)
            if s.size % 2:
                raise DesignError(f"state must be [x; xd] of even length 2n, got {s.size} entries")
            s = _checks.finite_vector(s, "state [x; xd]", s.size, what=what, error=DesignError)
        n = s.size // 2
        return self._apply(what, tv, s[:n], s[n:])

    def _apply(self, what: str, tv: float, x: NDArray, xd: NDArray) -> NDArray[np.float64]:
        """One sample: compute, refuse a non-finite input, then commit memory and record."""
        c0, w0 = time.thread_time(), time.perf_counter()
        u, memory, rec, side = self._compute(tv, x, xd, self._memory)
        w1, c1 = time.perf_counter(), time.thread_time()
        if not all(map(math.isfinite, np.asarray(u, dtype=float).ravel().tolist())):
            raise SolverError(f"{what} at t = {tv:.9g} computed a non-finite input {np.asarray(u).tolist()}; "
                              f"nothing was applied (check the weights, the model and the state)")
        self._memory = memory
        self._commit(_timed(rec, w1 - w0, c1 - c0), side)
        return u

    def __call__(self, t: float, x: ArrayLike, xd: ArrayLike) -> NDArray[np.float64]:
        """``control(t, [x; ẋ])`` in the signature of ``forward_dynamics``' controllers
        (``control(t, x)`` for a plain linear system, ``xd`` ignored)."""
        if self.plain:
            return self.control(t, x)
        return self.control(t, np.concatenate([np.asarray(x, float).ravel(),
                                               np.asarray(xd, float).ravel()]))

    def reset(self) -> None:
        """Forget what the controller remembers (previous input, integrator, plan, history)."""
        self._memory = self._initial_memory()
        self.history = []
        self._u_block = None

    #: samples of the reference evaluated ahead of a horizon at once (`_read_ahead`)
    REFERENCE_BLOCK = 64

    def _read_ahead(self, slot: str, k: int, t: float, rows: int,
                    evaluate: Callable[[NDArray[np.float64]], tuple[NDArray[np.float64], ...]]
                    ) -> tuple[int, tuple[NDArray[np.float64], ...]]:
        """``(o, arrays)``: the arrays ``evaluate(times)`` gave for the sample times from some
        ``k0 ≤ k`` on (the first with one row per time), read-only, and the offset ``o = k − k0``
        of the ``rows`` samples from ``k``. For a `Reference` the times run ``REFERENCE_BLOCK``
        samples past the window and the block is kept in attribute ``slot`` until a window leaves
        it (one evaluation of a reference costs about as much for 85 times as for 21); where
        the block would leave the reference's time range, and for any other reference object
        (which may change between samples: a command updated online), the window alone."""
        blk = getattr(self, slot, None)
        if (blk is None or blk[0] is not self.reference
                or not blk[1] <= k <= blk[1] + blk[2].shape[0] - rows):
            from ..reference.reference import Reference

            ahead = isinstance(self.reference, Reference)
            for m in (rows + self.REFERENCE_BLOCK, rows) if ahead else (rows,):
                try:
                    arrays = evaluate(t + self.dt * np.arange(m))
                except Exception:  # noqa: BLE001 - the window alone below says what is wrong
                    if m == rows:
                        raise
                    continue
                for a in arrays:
                    a.flags.writeable = False
                blk = (self.reference, k, *arrays)
                setattr(self, slot, blk if ahead else None)
                break
        return k - blk[1], blk[2:]

    def _u_window(self, k: int, t: float, count: int, kin: int) -> NDArray[np.float64]:
        """`u_ref` of the ``count`` samples from ``k`` (``(count, kin)``, `_read_ahead`)."""
        o, (U,) = self._read_ahead(
            "_u_block", k, t, count,
            lambda tb: (np.atleast_2d(self.u_ref(tb)).reshape(tb.size, kin),))
        return U[o:o + count]

    @property
    def statuses(self) -> dict[str, int]:
        """How many samples ended with each status (from `history`)."""
        out: dict[str, int] = {}
        for r in self.history:
            key = r.status.split(" (")[0]
            out[key] = out.get(key, 0) + 1
        return out

    def memory_labels(self) -> list[str]:
        """Names of the controller's state in `to_iosystem` (what it remembers)."""
        return []

    def __repr__(self) -> str:
        hz = getattr(self, "horizon", None)
        return (f"{type(self).__name__}({_target(self)}" + (f", N={hz}" if hz is not None else "")
                + f", dt={self.dt:.4g} s, inputs={list(self.inputs)})")

    def export_c(self, out: Any, *, estimator: Any = None, steps: int | None = None,
                 force: bool = False) -> dict:
        """Write this controller as standalone C99 with the closed-loop harness ``nhc_loop``
        (``make`` in ``out`` builds it); see
        [`nhcontrol.interop.export_loop()`][nhcontrol.interop.export_loop] and
        docs/guide/c_export.md.

        Parameters
        ----------
        out : path-like
            Output folder.
        estimator : KalmanEstimator or ExtendedKalmanFilter, optional
            Exported beside the controller: the harness then reads measurements.
        steps : int, optional
            Samples the exported schedule covers (default: the controller's).
        force : bool, default False
            Overwrite files in ``out`` that nhcontrol did not write (never a symbolic link).

        Returns
        -------
        dict
            The export's metadata (``nhc_export.json``).
        """
        from ..interop.c_controllers import export_loop

        return export_loop(self, out, estimator, steps=steps, force=force)

    def to_iosystem(self, state_labels: list[str] | None = None, *, name: str | None = None) -> Any:
        """A python-control discrete-time ``NonlinearIOSystem`` of this controller.

        Inputs: the plant state ``[x; ẋ]`` (``state_labels``; default the reference's
        coordinates and ``<coordinate>_d``, the state names of ``to_nlsys``); outputs: the
        plant inputs; state: `memory_labels` (what the controller remembers, zero = nothing
        remembered yet); ``dt`` = the sample time. Close the loop with the sampled plant
        ``to_nlsys(cm, dt=ctrl.dt)`` through ``control.interconnect`` (signals connect by name)
        and simulate with ``control.input_output_response``.

        A QP's warm start and the fallback plan stay inside the object (they change no optimum);
        call `reset()` before a new run.
        """
        import control

        if self.plain:
            labels = list(state_labels) if state_labels is not None else list(self.reference.states)
            if len(labels) != self.reference.nstates:
                raise DesignError(f"state_labels must name the {self.reference.nstates} states, got {labels}")
            upd, out = _io_callbacks(lambda t, yy, xc: self._compute(t, yy, np.zeros(0), xc), self._commit)
            mem = self.memory_labels()
            return control.nlsys(upd, out, inputs=labels, outputs=list(self.inputs), states=mem or 0,
                                 dt=self.dt, name=name or type(self).__name__)
        if state_labels is None:
            coords = tuple(getattr(self.reference, "coordinates", ()) or ())
            if not coords:
                raise DesignError("give state_labels: the reference does not name its coordinates")
            state_labels = list(coords) + [f"{c}_d" for c in coords]
        labels = list(state_labels)
        if len(labels) % 2:
            raise DesignError(f"state_labels must name [x; xd] (even length), got {len(labels)}")
        n = len(labels) // 2
        outs = list(self.inputs) or [f"u[{i}]" for i in range(len(np.atleast_1d(self.u_ref(self.t0))))]
        upd, out = _io_callbacks(lambda t, yy, xc: self._compute(t, yy[:n], yy[n:], xc), self._commit)

        mem = self.memory_labels()
        return control.nlsys(upd, out, inputs=labels, outputs=outs, states=mem or 0,
                             dt=self.dt, name=name or type(self).__name__)


# ---------------------------------------------------------------------------------------------
class TVLQRController(TrackingController):
    """Finite-horizon time-varying LQR tracking: ``u_k = u0 − K_k δx_k`` (Eq. (8.79)).

    Parameters
    ----------
    gains : LQRResult
        From [`finite_horizon_lqr()`][nhcontrol.design.finite_horizon_lqr] (gains ``K_k``
        for the samples ``k = 0 … N−1`` of the discretized linearization), or an
        infinite-horizon (constant) gain from [`dlqr()`][nhcontrol.design.dlqr].
    reference : Reference or None
        The reference motion (``u0(t)`` feed-forward; ``x0, ẋ0`` for the default deviation).
        ``None``: a plain linear system (python-control's habit): the controller reads the
        system's state ``x`` (``control(t, x)``), regulates ``δx = x − x_ref(t)`` to zero and
        commands ``u = u_ref(t) − K δx``.
    dt : float, optional
        Sample time [s] (the discretization's; default the gains' ``dt``).
    linearization, deviation, state_map, t0, feedforward, inputs :
        How the deviation and the feed-forward are formed (see the module docstring).
    u_min, u_max : scalar or (k,) array_like, optional
        Input saturation (clipping).
    periodic : bool
        Gains repeat with their horizon (``K_{k mod N}``) instead of failing past it.
    x_ref, u_ref : callable ``t -> (n,)``, ``t -> (k,)``, optional
        Desired state and feed-forward of a plain system (``reference=None``); default zero.
    states : sequence of str, optional
        State names of a plain system (the inputs of `to_iosystem`).
    integral_action : (p, n) array_like, optional
        python-control's ``integral_action`` with a gain of ``dlqr(..., integral_action=C)``
        (``K`` of shape ``(k, n + p)``): the integrator ``z_{k+1} = z_k + C δx_k`` (the discrete
        form of ``control.create_statefbk_iosystem``) and ``u = u0 − K_x δx − K_z z``.

    Raises
    ------
    DesignError
        At a sample past the gains' horizon (non-periodic); gains of the wrong size.
    """

    def __init__(self, gains: LQRResult, reference: Reference | None = None, dt: float | None = None, *,
                 linearization: Any = None,
                 deviation: Callable | None = None, state_map: Any = None, t0: float = 0.0,
                 feedforward: Literal["midpoint", "sample"] = "midpoint",
                 inputs: tuple[str, ...] | None = None, u_min: ArrayLike | None = None,
                 u_max: ArrayLike | None = None, periodic: bool = False,
                 x_ref: Callable[[float], ArrayLike] | None = None,
                 u_ref: Callable[[float], ArrayLike] | None = None,
                 states: tuple[str, ...] | None = None,
                 integral_action: ArrayLike | None = None) -> None:
        if not isinstance(gains, LQRResult):
            raise DesignError("gains must be an LQRResult (finite_horizon_lqr(...) or dlqr(...))")
        if gains.horizon is None and gains.method == "care":
            raise DesignError("gains come from a continuous-time lqr(); a sampled controller needs a "
                              "discrete design: dlqr(control.c2d(sys, dt), Q, R) or finite_horizon_lqr")
        if dt is None:
            if not gains.dt:
                raise DesignError("give dt= (the gains carry no sample time)")
            dt = gains.dt
        self.gains, self.periodic = gains, bool(periodic)
        self.u_min = -np.inf if u_min is None else np.asarray(u_min, dtype=float)
        self.u_max = np.inf if u_max is None else np.asarray(u_max, dtype=float)
        k, ntot = gains.K.shape[-2:]
        self.Ci = None
        if integral_action is not None:
            Ci = as_float_array(integral_action, "integral_action", error=DesignError)
            Ci = Ci.reshape(1, -1) if Ci.ndim == 1 else Ci
            if Ci.ndim != 2 or Ci.shape[1] + Ci.shape[0] != ntot:
                raise DesignError(f"integral_action must be (p, n) with n + p = {ntot} (the columns of "
                                  f"the gain K), got shape {Ci.shape}")
            self.Ci = Ci
        n = ntot - (0 if self.Ci is None else self.Ci.shape[0])
        if reference is None:
            states = states or (gains.states[:n] if len(gains.states) >= n else None)
            inputs = inputs or (tuple(gains.inputs) if len(gains.inputs) == k else None)
        reference = plain_reference(reference, n, k, x_ref, u_ref, states, inputs)
        super().__init__(reference, dt, linearization=linearization, deviation=deviation,
                         state_map=state_map, t0=t0, feedforward=feedforward, inputs=inputs)

    def _initial_memory(self) -> NDArray[np.float64]:
        return np.zeros(0 if getattr(self, "Ci", None) is None else self.Ci.shape[0])

    def memory_labels(self) -> list[str]:
        return [] if self.Ci is None else [f"z[{i}]" for i in range(self.Ci.shape[0])]

    def _compute(self, t: float, x: NDArray, xd: NDArray, memory: NDArray
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64], ControlRecord]:
        start = time.perf_counter()
        k = self.index(t)
        if self.gains.horizon is None:
            K = self.gains.K
        else:
            N = int(self.gains.horizon)
            if k >= N:
                if not self.periodic:
                    raise DesignError(f"sample {k} (t = {t:.6g}) is past the LQR horizon of {N} steps; "
                                      "compute the gains over a longer horizon or pass periodic=True")
                k %= N
            K = self.gains.K[k]
        dx = self.deviation(t, x, xd)
        if self.Ci is None:
            if dx.shape[0] != K.shape[1]:
                raise DesignError(f"the deviation has {dx.shape[0]} entries, the gain {K.shape[1]} "
                                  "columns; check linearization/deviation/state_map")
            u = np.clip(np.atleast_1d(self.u_ref(t)) - K @ dx, self.u_min, self.u_max)
            return u, memory, ControlRecord(float(t), u, "lqr", time.perf_counter() - start), {}
        n = dx.shape[0]
        u = np.clip(np.atleast_1d(self.u_ref(t)) - K[:, :n] @ dx - K[:, n:] @ memory,
                    self.u_min, self.u_max)
        mem = memory + self.Ci @ dx
        return u, mem, ControlRecord(float(t), u, "lqr", time.perf_counter() - start), {}

    def __repr__(self) -> str:
        hz = "infinite horizon" if self.gains.horizon is None else f"horizon={self.gains.horizon}"
        return (f"TVLQRController({_target(self)}, {hz}, dt={self.dt:.4g} s, "
                f"inputs={list(self.inputs)})")


def _target(ctrl: TrackingController) -> str:
    """What a controller regulates, for its repr."""
    if ctrl.plain:
        return f"plain system, states={list(ctrl.reference.states)}"
    ref = ctrl.reference
    name = getattr(ref, "model_name", None) or getattr(ref, "name", None)
    if not name:
        name = getattr(getattr(ref, "model", None), "name", None) or type(ref).__name__
    return str(name)


# ---------------------------------------------------------------------------------------------


def _io_callbacks(compute: Callable[[float, NDArray, NDArray], tuple],
                  commit: Callable[[Any, Any], None]) -> tuple[Callable, Callable]:
    """The update and output functions of a controller's discrete-time `NonlinearIOSystem`.

    python-control evaluates the output and the update at the same ``(t, x, y)``; both are served
    by one call of ``compute(t, y, x)`` (its ``(u, memory, record, side)``, the record's
    ``cpu_time`` set), kept in a small cache, and the update commits the record: the update sees
    the converged signals."""
    cache: dict[tuple, tuple] = {}

    def run(t: float, xc: NDArray, y: NDArray) -> tuple:
        key = (float(t), np.asarray(y, float).tobytes(), np.asarray(xc, float).tobytes())
        hit = cache.get(key)
        if hit is None:
            c0, w0 = time.thread_time(), time.perf_counter()
            hit = compute(float(t), np.asarray(y, dtype=float).reshape(-1),
                          np.asarray(xc, dtype=float).reshape(-1).copy())
            w1, c1 = time.perf_counter(), time.thread_time()
            hit = (hit[0], hit[1], _timed(hit[2], w1 - w0, c1 - c0), hit[3])
            if len(cache) > 8:
                cache.clear()
            cache[key] = hit
        return hit

    def upd(t: float, xc: NDArray, y: NDArray, params: Any = None) -> NDArray:
        _, mem, rec, side = run(t, xc, y)
        commit(rec, side)
        return mem

    def out(t: float, xc: NDArray, y: NDArray, params: Any = None) -> NDArray:
        return run(t, xc, y)[0]

    return upd, out

def _mpc_sample(mpc: Any, x0: NDArray, A: NDArray, B: NDArray, u_prev: NDArray, ur: NDArray,
                Qf: NDArray | None, warm: tuple, *, lean: bool = True, c: NDArray | None = None,
                qx: NDArray | None = None, qu: NDArray | None = None, **step_kw: Any) -> tuple:
    """The QP of one sample of an MPC controller: ``(u, status, slack, δx plan, δu plan,
    duals, step)``. `LTVMPC._dense_step` answers when it can (``lean``: nothing in ``step_kw``
    that only `step` takes into account; ``step`` is then None), else `LTVMPC.step` (its solver
    chain's RuntimeWarnings silenced: the controller records the status; ``step`` is its
    `MPCStep`), which raises `SolverError` on failure."""
    got = None
    if lean:
        try:
            got = mpc._dense_step(x0, A, B, u_prev, ur, Qf, c, qx, qu, warm[2])
        except Exception:  # noqa: BLE001 - `step` runs it again and reports it
            got = None
    if got is not None:
        u, xp, dup, duals = got
        return u, "optimal", 0.0, xp, dup, duals, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        st: MPCStep = mpc.step(x0, A, B, u_prev=u_prev, u_ref=ur, Qf=Qf, c=c, q_x=qx, q_u=qu,
                               warm_start=warm, _trusted_Qf=True, **step_kw)
    return (np.asarray(st.u, float), st.status, st.slack_max, np.asarray(st.predicted_x),
            np.asarray(st.predicted_u), _plan_duals(st), st)


def _shifted_warm_start(plan: Any, k: int, mpc: Any, N: int, n: int, m: int) -> tuple:
    """The warm start of an MPC step at sample ``k``: the previous plan ``(k_prev, _, X, dU,
    duals)`` shifted by one sample (last entry repeated), with its duals shifted by the QP, when
    the previous step was sample ``k - 1``; else a cold start (zeros, no duals)."""
    if plan is None or k - plan[0] != 1:
        return (np.zeros((N + 1, n)), np.zeros((N, m)), None)
    _, _, xp, dup, duals = plan
    qp = mpc._layout_qp
    if duals is not None and qp is not None:
        duals = qp.shift_duals(duals)
    return (np.concatenate((xp[1:], xp[-1:])), np.concatenate((dup[1:], dup[-1:])), duals)

def _as_discrete(model: Any, dt: float | None) -> tuple[NDArray, NDArray, float, int | None]:
    """``(Ad, Bd, dt, period_steps)`` from a DiscreteLTV, an ``(Ad, Bd)`` pair (with ``dt``),
    a continuous LTVSystem or StateSpace (discretized with ``dt``)."""
    from ._weights import system_arrays

    if hasattr(model, "Ad") and hasattr(model, "Bd"):
        Ad, Bd, mdt = system_arrays(model)
        h = float(mdt if mdt is not None else dt)
        if dt is not None and mdt is not None and abs(float(dt) - float(mdt)) > 1e-12 * float(mdt):
            raise DesignError(f"dt = {dt} disagrees with the discrete model's dt = {mdt}")
        return Ad, Bd, h, getattr(model, "period_steps", None)
    if isinstance(model, (tuple, list)):
        if dt is None:
            raise DesignError("an (Ad, Bd) pair needs dt=")
        Ad, Bd, _ = system_arrays(tuple(model))
        return Ad, Bd, float(dt), None
    from ..systems import discretize

    if hasattr(model, "isdtime") and model.isdtime(strict=True):
        if isinstance(model.dt, bool):
            raise DesignError("the discrete StateSpace has no numeric sample time (dt=True); give it one")
        if dt is not None and abs(float(dt) - float(model.dt)) > 1e-12 * float(model.dt):
            raise DesignError(f"dt = {dt} disagrees with the discrete model's dt = {model.dt}")
        Ad, Bd = np.asarray(model.A, float)[None], np.asarray(model.B, float)[None]
        return Ad, Bd, float(model.dt), None
    if dt is None:
        raise DesignError(f"a continuous model ({type(model).__name__}) needs dt= to be discretized")
    d = discretize(model, float(dt))
    return np.asarray(d.Ad), np.asarray(d.Bd), float(d.dt), d.period_steps


def _model_outputs(model: Any, t0: float, h: float, count: int) -> tuple[Any, Any]:
    """``(C, D)`` of a model's outputs: ``Ck, Dk`` of a time-varying ``DiscreteLTV``, the
    samples ``t0 + i h`` (``i < count``) of a continuous ``LTVSystem``'s ``C(t), D(t)``, or the
    constant ``C, D`` (StateSpace, DiscreteLTV)."""
    if getattr(model, "Ck", None) is not None:
        return model.Ck, getattr(model, "Dk", None)
    om = getattr(model, "output_matrices", None)
    if om is not None and not hasattr(model, "Ad"):            # continuous LTVSystem
        return om(t0 + h * np.arange(count))
    C = getattr(model, "C", None)
    if C is None:
        raise DesignError("output bounds y_min/y_max need output matrices: pass C_y (and D_y) "
                          "or a model with outputs (a DiscreteLTV with C or Ck, an LTVSystem, a "
                          "StateSpace)")
    return C, getattr(model, "D", None)


class RiccatiSchedule:
    """Finite-horizon Riccati recursion over a controller's whole schedule (Eq. (8.80)).

    Run once over the samples ``0 … steps + N + tail`` (one period plus ``N + tail`` for a
    periodic model, whose ``P_j``, ``K_j`` are then read modulo the period; past the end of a
    non-periodic model the last step is repeated). ``P(j)`` is the terminal weight of an MPC
    window ending at sample ``j``, ``K(j)`` the LQR gain at sample ``j``.
    """

    def __init__(self, Ad: NDArray, Bd: NDArray, period: int | None, steps: int, horizon: int,
                 Q: NDArray, R: NDArray, Qf: NDArray, tail: int | None = None) -> None:
        self.Ad, self.Bd, self.period = Ad, Bd, period
        tail = 5 * horizon if tail is None else int(tail)
        span = (period if period else steps) + horizon + tail
        self.lqr = finite_horizon_lqr((Ad[self.indices(0, span)], Bd[self.indices(0, span)]),
                                      Q, R, Qf)

    def __repr__(self) -> str:
        return (f"RiccatiSchedule({self.lqr.horizon} steps, nstates={self.lqr.nstates}, "
                f"ninputs={self.lqr.ninputs}, period={self.period})")

    def indices(self, start: int, length: int) -> NDArray[np.intp]:
        """Model steps of the window ``start … start + length − 1`` (wrapped or clipped)."""
        idx = np.arange(start, start + length)
        if self.period:
            return idx % int(self.period)
        return np.minimum(idx, self.Ad.shape[0] - 1)

    def P(self, j: int) -> NDArray[np.float64]:
        if self.period:
            j %= int(self.period)
        return self.lqr.P[min(j, self.lqr.P.shape[0] - 1)]

    def K(self, j: int) -> NDArray[np.float64]:
        if self.period:
            j %= int(self.period)
        return self.lqr.K[min(j, self.lqr.K.shape[0] - 1)]


class MPCController(TrackingController):
    r"""LTV-MPC tracking controller that slices its own windows.

    At the sample ``t_k`` it forms the deviation ``δx_k``, cuts the window ``A_{k…k+N−1}``,
    ``B_{k…k+N−1}`` out of its discrete model (wrapping a periodic one; past the end of a
    non-periodic one the last step is repeated: the window *shifts* to the end), the reference
    inputs ``u0`` over the window and the terminal weight, solves the QP of
    [`LTVMPC`][nhcontrol.design.LTVMPC] and applies the first input.

    Terminal cost (default ``terminal="riccati"``): ``P_{k+N}`` of the finite-horizon Riccati
    recursion of the same model and weights run over the whole schedule plus a tail of
    ``riccati_tail`` steps (Eq. (8.80); the cost-to-go of the LQR that takes over after the
    horizon, so the MPC equals the TV-LQR when no bound is active). ``terminal="fixed"`` keeps
    ``Qf``.

    Offset-free tracking (``integral=(C_i, Q_i)``): the integrator ``z_{k+1} = z_k + h C_i δx_k``
    of the tracked components ``C_i δx`` is appended to the state (weight ``Q_i``); a constant
    disturbance then leaves no steady offset in ``C_i δx``.

    Failure (never a crash mid-run): when the QP fails (infeasible, solver error) the input is
    the next one of the previous plan (``"fallback: shifted plan"``) while it lasts, then the
    LQR of the Riccati recursion ``u0 − K_k δx_k`` clipped to the bounds
    (``"fallback: lqr"``). The status of every sample is in `history`.

    Parameters
    ----------
    model : DiscreteLTV, (Ad, Bd), LTVSystem or StateSpace
        Prediction model of the deviation (continuous ones are discretized with ``dt``).
    reference : Reference or None
        ``None``: a plain linear system (python-control's habit): the controller reads the
        model's own state ``x`` (``control(t, x)``), acts on ``δx = x − x_ref(t)`` and
        commands ``u = u_ref(t) + δu`` (regulation to zero by default).
    horizon : int
        ``N``.
    Q, R : array_like
        Stage weights of the deviation state and input.
    Qf : array_like, optional
        Terminal weight (``terminal="fixed"``) and the end condition of the Riccati recursion
        (default ``Q``).
    dt : float, optional
        Sample time (default: the discrete model's).
    steps : int, optional
        Samples the controller will run (default: the model's; the Riccati schedule covers
        ``steps + N + riccati_tail``).
    terminal : {"riccati", "fixed"}
    riccati_tail : int, optional
        Extra steps of the Riccati recursion (default ``5 N``).
    integral : (C_i, Q_i), optional
        Integral action on ``C_i δx`` with weight ``Q_i``.
    x_ref : callable ``t -> (n,)``, optional
        The reference in the controller's state coordinates (absolute state bounds act on
        ``x_ref + δx``); default 0 (bounds on ``δx``).
    fallback : bool
        Use the fallbacks above (default) instead of raising `SolverError`.
    y_ref : callable ``t -> (p,)``, optional
        The outputs along the reference (absolute output bounds act on ``y_ref + C δx + D δu``);
        default 0 (bounds on the output deviation).
    u_ref : callable ``t -> (k,)``, optional
        Feed-forward of a plain system (``reference=None``; default 0).
    states : sequence of str, optional
        State names of a plain system (default the model's).
    integral_action : (p, n) array_like, optional
        python-control's form of integral action: ``z_{k+1} = z_k + C δx_k`` with ``Q`` of
        shape ``(n + p, n + p)`` weighing ``[δx; z]`` (as ``dlqr(..., integral_action=C)``).
    **mpc_options
        ``u_min, u_max, du_min, du_max, x_min, x_max, soft_state, y_min, y_max, C_y, D_y,
        soft_output, solver, solver_options ...`` of [`LTVMPC`][nhcontrol.design.LTVMPC].
        Output bounds without ``C_y`` use the discrete model's outputs (``Ck, Dk`` of a
        ``DiscreteLTV``, time-varying: the window takes the samples ``k+1 … k+N``, wrapped or
        clipped like ``A_j``); ``C_y`` given as ``(steps, p, n)`` is sliced the same way.
    """

    def __init__(self, model: Any, reference: Reference | None, horizon: int, Q: ArrayLike, R: ArrayLike,
                 Qf: ArrayLike | None = None, *, dt: float | None = None, steps: int | None = None,
                 terminal: Literal["riccati", "fixed"] = "riccati", riccati_tail: int | None = None,
                 integral: tuple[ArrayLike, ArrayLike] | None = None,
                 x_ref: Callable[[float], ArrayLike] | None = None, fallback: bool = True,
                 y_ref: Callable[[float], ArrayLike] | None = None,
                 linearization: Any = None, deviation: Callable | None = None,
                 state_map: Any = None, t0: float = 0.0,
                 feedforward: Literal["midpoint", "sample"] = "midpoint",
                 inputs: tuple[str, ...] | None = None,
                 u_ref: Callable[[float], ArrayLike] | None = None,
                 states: tuple[str, ...] | None = None,
                 integral_action: ArrayLike | None = None, **mpc_options: Any) -> None:
        Ad, Bd, h, period = _as_discrete(model, dt)
        if terminal not in ("riccati", "fixed"):
            raise DesignError(f"terminal must be 'riccati' or 'fixed', got {terminal!r}")
        M, n, k = Bd.shape
        N = _checks.horizon(horizon, n=n, k=k, what="MPCController", error=DesignError,
                            multiple=6 if riccati_tail is None else 1,
                            extra_steps=(steps if isinstance(steps, int) and steps > 0 else M)
                            + (riccati_tail if isinstance(riccati_tail, int) else 0))
        self.model_name = str(getattr(model, "name", None) or getattr(model, "model_name", None) or "")
        if reference is None:
            st, ins = model_names(model)
            reference = plain_reference(None, n, k, x_ref, u_ref, states or (st if len(st) == n else ()),
                                        inputs or (ins if len(ins) == k else ()))
            inputs = inputs or reference.inputs
        else:
            plain_reference(reference, n, k, None, u_ref, None, None)
        Qfull = None
        if integral_action is not None:           # python-control's form: Q weighs [x; z]
            if integral is not None:
                raise DesignError("give integral action once: integral=(C_i, Q_i) or integral_action=C")
            Ca = as_float_array(integral_action, "integral_action", error=DesignError)
            Ca = Ca.reshape(1, -1) if Ca.ndim == 1 else Ca
            if Ca.ndim != 2 or Ca.shape[1] != n:
                raise DesignError(f"integral_action must be a (p, n) = (p, {n}) matrix, got {Ca.shape}")
            p_ = Ca.shape[0]
            Qfull = as_float_array(Q, "Q", shape=(n + p_, n + p_), error=DesignError)
            integral = (Ca / h, Qfull[n:, n:])          # z_{k+1} = z_k + C δx_k
            Q = Qfull[:n, :n]
        Q_ = as_float_array(Q, "Q", shape=(n, n), error=DesignError)
        R_ = as_float_array(R, "R", shape=(k, k), error=DesignError)
        Qf_ = Q_ if Qf is None else as_float_array(Qf, "Qf", shape=(n, n), error=DesignError)
        self.ni = 0
        if integral is not None:
            Ci = as_float_array(integral[0], "integral C_i", ndim=2, error=DesignError)
            if Ci.shape[1] != n:
                raise DesignError(f"integral C_i must have {n} columns (the deviation state), got {Ci.shape}")
            ni = Ci.shape[0]
            Qi = as_float_array(integral[1], "integral Q_i", shape=(ni, ni), error=DesignError)
            Aa = np.zeros((M, n + ni, n + ni))
            Aa[:, :n, :n] = Ad
            Aa[:, n:, :n] = h * Ci
            Aa[:, n:, n:] = np.eye(ni)
            Ba = np.zeros((M, n + ni, k))
            Ba[:, :n] = Bd
            Ad, Bd = Aa, Ba
            Q_ = np.block([[Q_, np.zeros((n, ni))], [np.zeros((ni, n)), Qi]])
            Qf_ = np.block([[Qf_, np.zeros((n, ni))], [np.zeros((ni, n)), Qi]])
            self.ni, self.Ci = ni, Ci
            if Qfull is not None:
                Q_ = Qfull
                if Qf is None:
                    Qf_ = Qfull
            for key in ("x_min", "x_max"):
                if mpc_options.get(key) is not None:
                    v = np.broadcast_to(np.asarray(mpc_options[key], float), (n,))
                    mpc_options[key] = np.concatenate([v, np.full(ni, np.inf if key == "x_max" else -np.inf)])
        # output bounds: the output matrices per model sample (sliced per window) or constant
        self._Cy_seq = self._Dy_seq = None
        if mpc_options.get("y_min") is not None or mpc_options.get("y_max") is not None:
            Cy, Dy = mpc_options.get("C_y"), mpc_options.get("D_y")
            from_model = Cy is None
            if Cy is None:
                Ck, Dk = _model_outputs(model, float(t0), h, M + 1)
                Cy, Dy = np.asarray(Ck, float), None if Dk is None else np.asarray(Dk, float)
                if Dy is not None and not np.any(Dy):
                    Dy = None
            Cy = as_float_array(Cy, "C_y", error=DesignError)
            Dy = None if Dy is None else as_float_array(Dy, "D_y", error=DesignError)
            if self.ni:                       # no bound on the integrators
                pad = [(0, 0)] * (Cy.ndim - 1) + [(0, self.ni)]
                Cy = np.pad(Cy, pad)
            if Cy.ndim == 3 and (from_model or Cy.shape[0] != N):
                self._Cy_seq, self._Dy_seq = Cy, (Dy if Dy is not None and Dy.ndim == 3 else None)
                js = np.arange(1, N + 1)                 # the first window: samples 1 … N
                mpc_options["C_y"] = Cy[np.minimum(js, Cy.shape[0] - 1)]
                mpc_options["D_y"] = (Dy[np.minimum(js, Dy.shape[0] - 1)]
                                      if self._Dy_seq is not None else Dy)
            else:
                mpc_options["C_y"], mpc_options["D_y"] = Cy, Dy
        self.y_ref = y_ref
        self.Ad, self.Bd, self.period = Ad, Bd, period
        self.nx = n
        self.horizon = N
        self.terminal = terminal
        self.fallback = bool(fallback)
        self.x_ref = x_ref
        mpc_options.setdefault("on_failure", "raise")
        self.mpc = LTVMPC(N, Q_, R_, Qf_, **mpc_options)
        self.steps = int(steps) if steps is not None else (period or M)
        self.schedule = RiccatiSchedule(Ad, Bd, period, self.steps, N, Q_, R_, Qf_, riccati_tail)
        self.lqr = self.schedule.lqr
        super().__init__(reference, h, linearization=linearization, deviation=deviation,
                         state_map=state_map, t0=t0, feedforward=feedforward, inputs=inputs)
        self._plan: tuple[int, NDArray] | None = None

    def __repr__(self) -> str:
        qp = getattr(self.mpc, "qp_solver", None) or getattr(self.mpc, "solver", None)
        qp = qp.lower() if isinstance(qp, str) else qp
        target = self.model_name.replace("$sampled", "") if self.model_name else _target(self)
        return (f"MPCController({target}, N={self.horizon}, dt={self.dt:.4g} s, "
                f"inputs={list(self.inputs)}" + (f", qp={qp!r}" if isinstance(qp, str) else "") + ")")

    def _indices(self, start: int, length: int) -> NDArray[np.intp]:
        return self.schedule.indices(start, length)

    def _P(self, j: int) -> NDArray[np.float64]:
        return self.schedule.P(j)

    def _K(self, j: int) -> NDArray[np.float64]:
        return self.schedule.K(j)

    def _initial_memory(self) -> NDArray[np.float64]:
        return np.zeros(self.Bd.shape[2] + 1 + self.ni)

    def memory_labels(self) -> list[str]:
        names = list(self.inputs) or [f"u[{i}]" for i in range(self.Bd.shape[2])]
        return ([f"{u}_prev" for u in names] + ["started"]
                + [f"integral[{i}]" for i in range(self.ni)])

    def reset(self) -> None:
        super().reset()
        self.mpc.reset()
        self._plan = None

    def _compute(self, t: float, x: NDArray, xd: NDArray, memory: NDArray
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64], ControlRecord]:
        start = time.perf_counter()
        kin = self.Bd.shape[2]
        N = self.horizon
        k = self.index(t)
        dx = self.deviation(t, x, xd)
        if dx.shape != (self.nx,):
            raise DesignError(f"the deviation has shape {dx.shape}, the MPC model {self.nx} states; "
                              "check linearization/deviation/state_map")
        z = memory[kin + 1:]
        xi = np.concatenate([dx, z])
        ur = self._u_window(k, t, N, kin)
        u_prev = memory[:kin] if memory[kin] > 0.5 else ur[0]
        x_ref = None
        if self.x_ref is not None:
            xr = np.array([np.asarray(self.x_ref(ti), float) for ti in t + self.dt * np.arange(N + 1)])
            x_ref = np.hstack([xr, np.zeros((N + 1, self.ni))]) if self.ni else xr
        idx = self._indices(k, N)
        Qf = self._P(k + N) if self.terminal == "riccati" else None
        out_kw: dict[str, Any] = {}
        if self._Cy_seq is not None:                  # outputs at the samples k+1 … k+N
            iy = np.minimum(self._indices(k + 1, N), self._Cy_seq.shape[0] - 1)
            out_kw["C_y"] = self._Cy_seq[iy]
            if self._Dy_seq is not None:
                out_kw["D_y"] = self._Dy_seq[np.minimum(iy, self._Dy_seq.shape[0] - 1)]
        if self.y_ref is not None:
            out_kw["y_ref"] = np.array([np.asarray(self.y_ref(ti), float)
                                        for ti in t + self.dt * np.arange(N + 1)])
        status, slack = "", 0.0
        side: dict[str, Any] = {}
        nxi = xi.size
        warm = _shifted_warm_start(self._plan, k, self.mpc, N, nxi, kin)
        try:
            u, status, slack, xp, dup, duals, _ = _mpc_sample(
                self.mpc, xi, self.Ad[idx], self.Bd[idx], u_prev, ur, Qf, warm,
                lean=x_ref is None and not out_kw, x_ref=x_ref, **out_kw)
            side["_plan"] = (k, ur + dup, xp, dup, duals)
        except SolverError as exc:
            if not self.fallback:
                raise
            u, status = self._fallback(k, xi, ur[0], u_prev, str(exc).split(";")[0])
        mem = np.concatenate([u, [1.0], z + self.dt * (self.Ci @ dx) if self.ni else np.zeros(0)])
        rec = ControlRecord(float(t), u, status, time.perf_counter() - start, slack, 1)
        return u, mem, rec, side

    def _fallback(self, k: int, xi: NDArray, u0: NDArray, u_prev: NDArray, why: str
                  ) -> tuple[NDArray[np.float64], str]:
        b = self.mpc.bounds
        if self._plan is not None and 0 < k - self._plan[0] < self.horizon:
            u = np.clip(self._plan[1][k - self._plan[0]], b["u_min"], b["u_max"])
            return u, f"fallback: shifted plan ({why})"
        u = u0 - self._K(k) @ xi
        u = np.clip(u, np.maximum(b["u_min"], u_prev + b["du_min"]),
                    np.minimum(b["u_max"], u_prev + b["du_max"]))
        return u, f"fallback: lqr ({why})"
