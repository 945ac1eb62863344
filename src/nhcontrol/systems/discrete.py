"""Discrete-time linear time-varying systems (zero-order-hold sequences).

A [`DiscreteLTV`][nhcontrol.systems.DiscreteLTV] holds the matrices of

$$
x_{k+1} = A_{d,k}\\, x_k + B_{d,k}\\, u_k, \\qquad k = 0, \\dots, N-1,
$$

on the grid ``t_k = t0 + k dt``. It is what `nhcontrol.systems.discretize()` returns and what
[`nhcontrol.design`][nhcontrol.design] (finite-horizon LQR, LTV-MPC) consumes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .._util.memory import check_allocation
from .._util.reprs import html_table, short_names as _short
from .._util.validation import as_float_array, check_finite, check_names, readonly
from .ltv import SELECT_RTOL, _check_decoupled, _output_map, _pick, _select_outputs

if TYPE_CHECKING:  # python-control is imported where it is used (it takes ~1 s)
    import control

__all__ = ["DiscreteLTV"]


@dataclass(frozen=True, eq=False)
class DiscreteLTV:
    """Zero-order-hold discrete LTV system ``x[k+1] = Ad[k] x[k] + Bd[k] u[k]``.

    Parameters
    ----------
    Ad : (N, n, n) array_like
        State matrices; ``Ad[k] = Φ(t_{k+1}, t_k)`` for a ZOH discretization.
    Bd : (N, n, k) array_like
        Input matrices; ``Bd[k] = ∫_{t_k}^{t_{k+1}} Φ(t_{k+1}, τ) B(τ) dτ``.
    dt : float
        Sampling time (> 0).
    t0 : float, default 0.0
        Time of sample 0.
    states, inputs : sequence of str, optional
        Signal names (default ``x[i]``, ``u[i]``).
    period_steps : int, optional
        Number of steps per period when the sequences are periodic (``Ad[k + p] = Ad[k]``),
        ``None`` otherwise. Informational.
    C : (p, n) array_like, optional
        Constant output matrix of ``y[k] = C x[k]`` (``D = 0``); default the identity (the
        outputs are the states).
    outputs : sequence of str, optional
        Output names (default: the state names for ``C = I``, else ``y[i]``).
    D : (p, k) array_like, optional
        Constant feed-through of ``y[k] = C x[k] + D u[k]`` (default zero).
    Ck, Dk : (N + 1, p, n), (N + 1, p, k) array_like, optional
        Time-varying output matrices at the samples ``t_k`` (``y[k] = Ck[k] x[k] + Dk[k] u[k]``,
        e.g. the sampled ``C(t)``, ``D(t)`` of declared outputs); ``C`` and ``D`` must then be
        omitted (read them with `output_matrices()`).
    breakpoints : tuple of float, default ()
        Jump times of the continuous ``A(t)``, ``B(t)`` on the grid's interval
        (``LTVSystem.breakpoints``): `discretize()` integrates a step that contains one in
        pieces, each on one side of the jump, with the input held over the whole step.
        Informational.

    Attributes
    ----------
    times : (N + 1,) ndarray
        ``t0 + dt * arange(N + 1)``.
    nstates, ninputs, nsteps : int
        ``n``, ``k`` and ``N``.

    Notes
    -----
    Instances are immutable: arrays are stored read-only. Use `from_lti()` for a constant
    pair repeated over ``steps`` steps.

    Examples
    --------
    >>> import numpy as np
    >>> d = DiscreteLTV.from_lti(np.eye(2), np.ones((2, 1)), dt=0.1, steps=3)
    >>> d.Ad.shape, d.nsteps, float(d.times[-1])
    ((3, 2, 2), 3, 0.30000000000000004)
    """

    Ad: NDArray[np.float64]
    Bd: NDArray[np.float64]
    dt: float
    t0: float = 0.0
    states: tuple[str, ...] | None = None
    inputs: tuple[str, ...] | None = None
    period_steps: int | None = None
    C: NDArray[np.float64] | None = field(default=None, repr=False)
    outputs: tuple[str, ...] | None = None
    breakpoints: tuple[float, ...] = ()
    D: NDArray[np.float64] | None = field(default=None, repr=False)
    Ck: NDArray[np.float64] | None = field(default=None, repr=False)
    Dk: NDArray[np.float64] | None = field(default=None, repr=False)
    times: NDArray[np.float64] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        Ad = as_float_array(self.Ad, "Ad", ndim=3)
        N, n, n2 = Ad.shape
        if n != n2:
            raise LinearSystemError(f"Ad must have shape (N, n, n) (square state matrices), got {Ad.shape}")
        if N < 1:
            raise LinearSystemError("Ad must hold at least one step, got N = 0; pass steps >= 1")
        Bd = as_float_array(self.Bd, "Bd", ndim=3)
        if Bd.shape[:2] != (N, n):
            raise LinearSystemError(
                f"Bd must have shape (N, n, k) = ({N}, {n}, k) to match Ad {Ad.shape}, got {Bd.shape}")
        check_finite(Ad, "Ad")
        check_finite(Bd, "Bd")
        dt = float(self.dt)
        if not np.isfinite(dt) or dt <= 0.0:
            raise LinearSystemError(f"dt must be a positive finite sampling time, got {self.dt!r}")
        t0 = float(self.t0)
        if not np.isfinite(t0):
            raise LinearSystemError(f"t0 must be finite, got {self.t0!r}")
        states = check_names(self.states, n, "states", "x")
        inputs = check_names(self.inputs, Bd.shape[2], "inputs", "u")
        if self.period_steps is not None and int(self.period_steps) < 1:
            raise LinearSystemError(f"period_steps must be a positive integer or None, got {self.period_steps!r}")
        object.__setattr__(self, "Ad", readonly(np.array(Ad, dtype=float)))
        object.__setattr__(self, "Bd", readonly(np.array(Bd, dtype=float)))
        object.__setattr__(self, "dt", dt)
        object.__setattr__(self, "t0", t0)
        object.__setattr__(self, "states", states)
        object.__setattr__(self, "inputs", inputs)
        k = Bd.shape[2]
        if self.Ck is not None:
            if self.C is not None or self.D is not None:
                raise LinearSystemError("give either constant outputs (C, D) or time-varying ones "
                                        "(Ck, Dk), not both")
            Ck = as_float_array(self.Ck, "Ck", ndim=3)
            if Ck.shape[0] != N + 1 or Ck.shape[2] != n:
                raise LinearSystemError(f"Ck must have shape (N + 1, p, n) = ({N + 1}, p, {n}) "
                                        f"(one output matrix per sample), got {Ck.shape}")
            Dk = (np.zeros((N + 1, Ck.shape[1], k)) if self.Dk is None
                  else as_float_array(self.Dk, "Dk", ndim=3))
            if Dk.shape != (N + 1, Ck.shape[1], k):
                raise LinearSystemError(f"Dk must have shape (N + 1, p, k) = ({N + 1}, "
                                        f"{Ck.shape[1]}, {k}), got {Dk.shape}")
            check_finite(Ck, "Ck")
            check_finite(Dk, "Dk")
            _, outs = _output_map(Ck[0], self.outputs, states)
            object.__setattr__(self, "Ck", readonly(np.array(Ck)))
            object.__setattr__(self, "Dk", readonly(np.array(Dk)))
            object.__setattr__(self, "outputs", outs)
        else:
            if self.Dk is not None:
                raise LinearSystemError("Dk needs Ck (time-varying output matrices)")
            Cm, outs = _output_map(self.C, self.outputs, states)
            object.__setattr__(self, "C", Cm)
            object.__setattr__(self, "outputs", outs)
            Dm = np.zeros((Cm.shape[0], k)) if self.D is None else as_float_array(self.D, "D")
            if Dm.shape != (Cm.shape[0], k):
                raise LinearSystemError(f"D must have shape (p, k) = ({Cm.shape[0]}, {k}), got {Dm.shape}")
            check_finite(Dm, "D")
            object.__setattr__(self, "D", readonly(np.array(Dm, dtype=float)))
        if self.period_steps is not None:
            object.__setattr__(self, "period_steps", int(self.period_steps))
        bp = as_float_array(self.breakpoints, "breakpoints").reshape(-1)
        if not np.all(np.isfinite(bp)):
            raise LinearSystemError(f"breakpoints must be finite times (the jumps of A(t), B(t)), "
                                    f"got {bp.tolist()}")
        object.__setattr__(self, "breakpoints", tuple(float(b) for b in np.unique(bp)))
        object.__setattr__(self, "times", readonly(t0 + dt * np.arange(N + 1, dtype=float)))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_lti(cls, Ad: ArrayLike, Bd: ArrayLike, dt: float, steps: int, *, t0: float = 0.0,
                 states: Sequence[str] | None = None,
                 inputs: Sequence[str] | None = None, C: ArrayLike | None = None,
                 outputs: Sequence[str] | None = None) -> "DiscreteLTV":
        """Repeat a constant discrete pair ``(Ad, Bd)`` over ``steps`` steps.

        Parameters
        ----------
        Ad : (n, n) array_like
        Bd : (n, k) array_like
        dt : float
        steps : int
            Number of steps ``N`` (>= 1).
        t0 : float, default 0.0
        states, inputs : sequence of str, optional
        C, outputs : optional
            Output matrix and names (default: the states).

        Returns
        -------
        DiscreteLTV
            With ``Ad`` of shape (N, n, n) and ``period_steps = 1``.
        """
        A = as_float_array(Ad, "Ad", ndim=2)
        if A.shape[0] != A.shape[1]:
            raise LinearSystemError(f"Ad must be square (n, n), got {A.shape}")
        B = as_float_array(Bd, "Bd")
        if B.ndim == 1:
            B = B.reshape(-1, 1)
        if B.ndim != 2 or B.shape[0] != A.shape[0]:
            raise LinearSystemError(f"Bd must have shape (n, k) = ({A.shape[0]}, k), got {B.shape}")
        steps_i = _check_steps(steps)
        n_, k_ = B.shape
        check_allocation(8.0 * 2 * steps_i * n_ * (n_ + k_),
                         f"DiscreteLTV.from_lti(..., steps={steps_i}) with n = {n_} states and k = {k_} "
                         f"inputs", error=LinearSystemError, hint="use fewer steps")
        return cls(np.broadcast_to(A, (steps_i, *A.shape)), np.broadcast_to(B, (steps_i, *B.shape)),
                   dt, t0, None if states is None else tuple(states),
                   None if inputs is None else tuple(inputs), period_steps=1, C=C,
                   outputs=None if outputs is None else tuple(outputs))

    @classmethod
    def from_statespace(cls, sys: Any, N: int | None, *, error: type[Exception] = LinearSystemError,
                        what: str = "this function") -> "DiscreteLTV":
        """A discrete python-control ``StateSpace`` held constant over a horizon of ``N`` steps.

        Parameters
        ----------
        sys : control.StateSpace
            Discrete time (``sys.dt > 0``); its state and input labels are kept.
        N : int
            Horizon (number of steps).
        error : exception class
            Raised for a continuous system, an unspecified sampling time or a missing ``N``.
        what : str
            The caller's name for the messages.

        Returns
        -------
        DiscreteLTV
            ``Ad = sys.A``, ``Bd = sys.B`` at every step, ``dt = sys.dt``; ``C = sys.C`` and the
            output labels (a nonzero ``sys.D`` is refused: a ``DiscreteLTV`` has ``D = 0``).
        """
        import control

        if not isinstance(sys, control.StateSpace):
            raise error(f"{what} needs a discrete control.StateSpace here, got {type(sys).__name__}")
        if not control.isdtime(sys, strict=True):
            raise error(f"{what} works in discrete time but got a continuous control.StateSpace "
                        f"(dt = {sys.dt}); discretize first, e.g. control.c2d(sys, dt) or "
                        "nhcontrol.systems.discretize(sys, dt)")
        if isinstance(sys.dt, bool) or sys.dt is None:
            raise error(f"{what} needs the sampling time of the discrete system, got dt = {sys.dt!r}; "
                        "create it with a numeric dt")
        if N is None:
            raise error(f"{what} got a time-invariant discrete control.StateSpace: give the horizon "
                        "N=... (number of steps)")
        if np.any(np.asarray(sys.D) != 0):
            raise error(f"{what}: the discrete control.StateSpace has a nonzero feedthrough D; a "
                        "DiscreteLTV has y = C x (D = 0): pass control.ss(sys.A, sys.B, sys.C, 0, sys.dt)")
        n_, k_ = np.shape(sys.B)
        check_allocation(8.0 * 2 * _check_steps(N) * n_ * (n_ + k_),
                         f"{what} over a horizon of N = {N} steps with n = {n_} states and k = {k_} inputs",
                         error=error, hint="use a shorter horizon")
        return cls.from_lti(np.asarray(sys.A, dtype=float), np.asarray(sys.B, dtype=float), float(sys.dt),
                            N, states=list(sys.state_labels), inputs=list(sys.input_labels),
                            C=np.asarray(sys.C, dtype=float), outputs=list(sys.output_labels))

    # ------------------------------------------------------------------ dimensions
    @property
    def nstates(self) -> int:
        """Number of states ``n``."""
        return int(self.Ad.shape[1])

    @property
    def ninputs(self) -> int:
        """Number of inputs ``k``."""
        return int(self.Bd.shape[2])

    def save(self, path: Any) -> Any:
        """Save to ``path`` (``.npz``: ``Ad``, ``Bd`` and JSON metadata); see `load()`."""
        from .._util.storage import save_npz

        arrays = {"Ad": self.Ad, "Bd": self.Bd}
        if self.Ck is None:
            arrays.update(C=self.C, D=self.D)
        else:
            arrays.update(Ck=self.Ck, Dk=self.Dk)
        return save_npz(path, "DiscreteLTV", arrays,
                        {"dt": float(self.dt), "t0": float(self.t0), "period_steps": self.period_steps,
                         "states": None if self.states is None else list(self.states),
                         "inputs": None if self.inputs is None else list(self.inputs),
                         "outputs": list(self.outputs),
                         "breakpoints": list(self.breakpoints)})

    @classmethod
    def load(cls, path: Any) -> "DiscreteLTV":
        """Read a file written by `save()`.

        Raises
        ------
        StorageError
            The file is not a saved `DiscreteLTV`, or a field is missing, of the wrong type,
            non-finite or inconsistent with the others; the message names the file and the field.
        """
        from .._util.storage import LoadedFile

        f = LoadedFile(path, "DiscreteLTV")
        Ad = f.array("Ad", ndim=3)
        if Ad.shape[1] != Ad.shape[2]:
            raise f.fail("Ad", f"has shape {Ad.shape}: the state matrices must be square")
        Bd = f.array("Bd", ndim=3)
        f.shape("Bd", Bd, Ad.shape[:2] + (None,), f"Ad {Ad.shape}")
        C = f.array("C", ndim=2, optional=True)
        if C is not None:
            f.shape("C", C, (None, Ad.shape[1]), f"Ad {Ad.shape}")
        D = f.array("D", ndim=None, optional=True)
        Ck = f.array("Ck", ndim=3, optional=True)
        Dk = f.array("Dk", ndim=3, optional=True)
        ny = C.shape[0] if C is not None else (Ck.shape[1] if Ck is not None else None)
        n, k = Ad.shape[1], Bd.shape[2]
        return f.build(lambda: cls(
            Ad, Bd, f.number("dt", positive=True), f.number("t0"),
            f.names("states", n, f"Ad {Ad.shape}", allow_none=True),
            f.names("inputs", k, f"Bd {Bd.shape}", allow_none=True),
            period_steps=f.integer("period_steps", minimum=1, allow_none=True), C=C,
            outputs=f.names("outputs", ny, "C", allow_none=True, default=None),
            breakpoints=f.numbers("breakpoints", default=[]), D=D, Ck=Ck, Dk=Dk))

    # python-control conventions (``StateSpace`` names): C = I, the outputs are the states
    @property
    def state_labels(self) -> list[str]:
        """State names (``x[i]`` when none were given, as python-control)."""
        return list(self.states) if self.states else [f"x[{i}]" for i in range(self.nstates)]

    @property
    def input_labels(self) -> list[str]:
        """Input names (``u[j]`` when none were given, as python-control)."""
        return list(self.inputs) if self.inputs else [f"u[{j}]" for j in range(self.ninputs)]

    @property
    def output_labels(self) -> list[str]:
        """Output names (the state names when ``C = I``, the default)."""
        return list(self.outputs)

    @property
    def noutputs(self) -> int:
        """Number of outputs ``p`` (``= nstates`` when ``C = I``)."""
        return int(self.Ck.shape[1] if self.Ck is not None else self.C.shape[0])

    @property
    def outputs_constant(self) -> bool:
        """``True`` when the output matrices do not change from sample to sample."""
        return self.Ck is None

    def output_matrices(self, k: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(C_k, D_k)`` of ``y[k] = C_k x[k] + D_k u[k]`` at sample ``k`` (``0 <= k <= N``)."""
        kk = int(k)
        if kk != k or not (0 <= kk <= self.nsteps):
            raise LinearSystemError(f"sample index must be an integer in [0, {self.nsteps}], got {k!r}")
        if self.Ck is None:
            return self.C, self.D
        return self.Ck[kk], self.Dk[kk]

    def output(self, X: ArrayLike) -> NDArray[np.float64]:
        """``y = C x`` for states ``X`` of shape (n,) or (N, n) (e.g. from [`simulate()`][nhcontrol.simulate]);
        with time-varying outputs ``X`` must be (N + 1, n) (``y[k] = C_k x[k]``)."""
        X = np.asarray(X, dtype=float)
        if self.Ck is None:
            return X @ self.C.T
        if X.shape != (self.nsteps + 1, self.nstates):
            raise LinearSystemError(f"with time-varying outputs X must have shape (N + 1, n) = "
                                    f"({self.nsteps + 1}, {self.nstates}), got {X.shape}")
        return np.einsum("kpn,kn->kp", self.Ck, X)

    def isdtime(self, strict: bool = False) -> bool:
        """True: a discrete-time system with sampling time `dt` (python-control's ``isdtime``)."""
        return True

    def isctime(self, strict: bool = False) -> bool:
        """False: a discrete-time system (python-control's ``isctime``)."""
        return False

    @property
    def nsteps(self) -> int:
        """Number of steps ``N``."""
        return int(self.Ad.shape[0])

    # ------------------------------------------------------------------ views
    def at(self, k: int) -> control.StateSpace:
        """Discrete python-control system of step ``k`` (``C``, ``D = 0``; outputs = states by default).

        Parameters
        ----------
        k : int
            Step index, ``-N <= k < N``.

        Returns
        -------
        control.StateSpace
            With ``dt`` set and the state/input names.
        """
        import control

        kk = self._index(k)
        Ck, Dk = self.output_matrices(kk)
        return control.ss(self.Ad[kk], self.Bd[kk], Ck, Dk, self.dt,
                          states=list(self.states), inputs=list(self.inputs),
                          outputs=list(self.outputs))

    def transition(self, k1: int, k0: int) -> NDArray[np.float64]:
        """Discrete transition matrix ``Φ_{k1,k0} = Ad[k1-1] ⋯ Ad[k0]`` (identity if ``k1 == k0``).

        Parameters
        ----------
        k1, k0 : int
            Sample indices with ``0 <= k0 <= k1 <= N``.

        Returns
        -------
        (n, n) ndarray
        """
        if not (0 <= int(k0) <= int(k1) <= self.nsteps):
            raise LinearSystemError(
                f"transition(k1, k0) needs 0 <= k0 <= k1 <= N = {self.nsteps}, got k1 = {k1}, k0 = {k0}")
        Phi = np.eye(self.nstates)
        for j in range(int(k0), int(k1)):
            Phi = self.Ad[j] @ Phi
        return Phi

    def simulate(self, x0: ArrayLike, u: ArrayLike | None = None) -> NDArray[np.float64]:
        """Propagate ``x[k+1] = Ad[k] x[k] + Bd[k] u[k]``.

        Parameters
        ----------
        x0 : (n,) array_like
        u : (N, k) array_like, optional
            Inputs held constant over each step (zeros when omitted).

        Returns
        -------
        (N + 1, n) ndarray
            States at ``times``.
        """
        n, k, N = self.nstates, self.ninputs, self.nsteps
        x = as_float_array(x0, "x0", shape=(n,))
        U = np.zeros((N, k)) if u is None else as_float_array(u, "u", shape=(N, k))
        X = np.empty((N + 1, n))
        X[0] = x
        for j in range(N):
            X[j + 1] = self.Ad[j] @ X[j] + self.Bd[j] @ U[j]
        return X

    def _index(self, k: int) -> int:
        N = self.nsteps
        kk = int(k)
        if kk != k or not (-N <= kk < N):
            raise LinearSystemError(f"step index must be an integer in [-{N}, {N}), got {k!r}")
        return kk % N

    def select(self, states: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
               inputs: Sequence[str] | None = None, *, rtol: float = SELECT_RTOL) -> "DiscreteLTV":
        """The sequences on chosen states, outputs and inputs, picked by name (as
        [`LTVSystem.select()`][nhcontrol.systems.LTVSystem.select]).

        ``Ad[k][kept, dropped]`` must vanish at every step (else the coupling is named); dropped
        inputs are held at zero; an output may not read a dropped state.
        """
        keep = _pick("states", states, self.states)
        ukeep = _pick("inputs", inputs, self.inputs)
        drop = [i for i in range(self.nstates) if i not in keep]
        if drop:
            blk = np.abs(self.Ad[:, keep][:, :, drop])
            worst = int(np.argmax(blk.max(axis=(1, 2)))) if blk.size else 0
            _check_decoupled(self.Ad[worst], keep, drop, self.states, rtol, f"at step {worst}")
        identity = bool(self.C.shape[0] == self.nstates and np.array_equal(self.C, np.eye(self.nstates))
                        and tuple(self.outputs) == tuple(self.states))
        C, onames = _select_outputs(self.C, self.outputs, self.states, keep, drop, outputs, identity)
        ix, ju = np.asarray(keep), np.asarray(ukeep, dtype=int)
        return DiscreteLTV(self.Ad[:, ix[:, None], ix], self.Bd[:, ix[:, None], ju], self.dt, self.t0,
                           tuple(self.states[i] for i in keep), tuple(self.inputs[j] for j in ukeep),
                           period_steps=self.period_steps, C=C,
                           outputs=None if onames is None else tuple(onames),
                           breakpoints=self.breakpoints)

    def to_iosystem(self, name: str | None = None) -> Any:
        """This sequence as a discrete python-control ``NonlinearIOSystem`` (``dt`` the sample
        time): ``x[k+1] = A_k x[k] + B_k u[k]``, ``y = C_k x + D_k u`` with ``k = round((t −
        t0)/dt)`` (wrapped for a periodic sequence), named like this system."""
        from .iosystem import discrete_ltv_to_iosystem

        return discrete_ltv_to_iosystem(self, name)

    def __repr__(self) -> str:
        per = f", period_steps={self.period_steps}" if self.period_steps else ""
        outs = ("" if tuple(self.outputs) == tuple(self.states) and self.C.shape[0] == self.nstates
                else f", outputs={_short(self.outputs)}")
        rho = float(np.max(np.abs(np.linalg.eigvals(self.Ad[0])))) if self.nstates else 0.0
        return (f"<DiscreteLTV {self.nsteps} steps of dt={self.dt:g} from t0={self.t0:g}: "
                f"{self.nstates} states {_short(self.states)}, {self.ninputs} inputs "
                f"{_short(self.inputs)}{outs}{per}, spectral radius of Ad[0] {rho:.4g}>")

    def _repr_html_(self) -> str:
        rows = [("steps", f"{self.nsteps} × dt = {self.dt:g} from t0 = {self.t0:g}"),
                ("states", ", ".join(self.states)), ("inputs", ", ".join(self.inputs)),
                ("outputs", ", ".join(self.outputs)), ("period_steps", str(self.period_steps))]
        return html_table(f"DiscreteLTV ({self.nstates} states, {self.ninputs} inputs)", rows)


def _check_steps(steps: object) -> int:
    try:
        s = int(steps)  # type: ignore[call-overload]
    except (TypeError, ValueError) as exc:
        raise LinearSystemError(f"steps must be a positive integer, got {steps!r}") from exc
    if s != steps or s < 1:
        raise LinearSystemError(f"steps must be a positive integer, got {steps!r}")
    return s
