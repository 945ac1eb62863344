"""Simulation of linear systems: discrete LTV/LTI sequences and continuous LTV/LTI systems.

Duck typed: a discrete system is anything with ``Ad`` ((N, n, n) or (n, n)), ``Bd``, ``dt``
(and optionally ``t0``, ``states``, ``inputs``), e.g. ``nhcontrol.systems.DiscreteLTV``; a
continuous LTV system has callables ``A(t)``, ``B(t)`` (``nhcontrol.systems.LTVSystem``); a
python-control ``StateSpace`` (arrays ``A``, ``B``) is accepted as the LTI case.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import control
import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp

from nhcontrol._util.errors import LinearSystemError, SolverError
from nhcontrol._util.memory import check_allocation
from nhcontrol._util.validation import as_float_array, check_finite, check_names, readonly
from nhcontrol._util.work import check_iterations

from .forward import _interval_count
from nhcontrol._util.reprs import concise_repr

__all__ = ["LinearSimulationResult", "simulate_discrete", "simulate_ltv"]


@dataclass(frozen=True)
class LinearSimulationResult:
    """Trajectory of a linear system.

    Attributes
    ----------
    t : (N + 1,) or (N,) ndarray
        Times of the states.
    x : (len(t), n) ndarray
        States.
    u : (len(t), k) ndarray
        Inputs applied from ``t`` on (for a discrete system the last row repeats the last input,
        so that every row of ``x`` has one).
    state_labels, input_labels : tuple of str
    dt : float or None
        Sample time (discrete or zero-order-hold simulations).
    C, D : ndarray or None
        Output map ``y = C x + D u`` of the simulated system (``None``: the outputs are the states).
    output_names : tuple of str or None
        Output names (the state names when ``C`` is ``None``); see `output_labels`.
    time, states, inputs, outputs : ndarray
        python-control's names for the data (``TimeResponseData``): ``time`` (N,), ``states``
        (n, N), ``inputs`` (k, N), ``outputs`` (p, N), signals in rows.
    """

    __repr__ = concise_repr

    t: NDArray[np.float64]
    x: NDArray[np.float64]
    u: NDArray[np.float64]
    state_labels: tuple[str, ...]
    input_labels: tuple[str, ...]
    dt: float | None
    C: NDArray[np.float64] | None = None
    D: NDArray[np.float64] | None = None
    output_names: tuple[str, ...] | None = None

    @property
    def time(self) -> NDArray[np.float64]:
        """Times (python-control's ``time``; the same array as `t`)."""
        return self.t

    @property
    def states(self) -> NDArray[np.float64]:
        """States (n, N), rows named by `state_labels` (``TimeResponseData.states``)."""
        return readonly(np.ascontiguousarray(self.x.T))

    @property
    def inputs(self) -> NDArray[np.float64]:
        """Inputs (k, N), rows named by `input_labels`."""
        return readonly(np.ascontiguousarray(self.u.T))

    @property
    def outputs(self) -> NDArray[np.float64]:
        """Outputs ``y = C x + D u`` (p, N), rows named by `output_labels`."""
        return readonly(np.ascontiguousarray(self.y.T))

    @property
    def y(self) -> NDArray[np.float64]:
        """Outputs ``y = C x + D u`` at ``t``, shape ``(len(t), p)`` (the states when no ``C``)."""
        if self.C is None:
            return self.x
        y = self.x @ self.C.T
        if self.D is not None and self.D.size:
            y = y + self.u @ self.D.T
        return y

    @property
    def output_labels(self) -> list[str]:
        """Output names (python-control's ``output_labels``)."""
        return list(self.output_names) if self.output_names is not None else list(self.state_labels)

    def to_response(self) -> control.TimeResponseData:
        """The trajectory as a python-control ``TimeResponseData`` (outputs ``y``, states ``x``)."""
        has_u = bool(self.input_labels)
        return control.TimeResponseData(
            self.t, self.y.T, self.x.T, self.u.T if has_u else None, issiso=False,
            output_labels=self.output_labels, state_labels=list(self.state_labels),
            input_labels=list(self.input_labels) if has_u else None, plot_inputs=has_u)


def _output_map(sys: Any, n: int, k: int) -> dict[str, Any]:
    """``C``, ``D``, output names of a system with an output map (LTVSystem, DiscreteLTV,
    control.StateSpace); empty when it has none or it is the identity with the state names."""
    C = getattr(sys, "C", None)
    if C is None or callable(C):
        return {}
    C = np.asarray(C, dtype=float)
    D = getattr(sys, "D", None)
    D = None if D is None or callable(D) else np.asarray(D, dtype=float).reshape(C.shape[0], k)
    names = getattr(sys, "output_labels", None)
    if C.ndim != 2 or C.shape[1] != n:
        raise LinearSystemError(f"the output matrix C of the system must be (p, {n}), got {C.shape}")
    outs = check_names(list(names) if names is not None else None, C.shape[0], "outputs", "y")
    states = getattr(sys, "state_labels", None)
    if (C.shape[0] == n and np.array_equal(C, np.eye(n)) and (D is None or not D.any())
            and states is not None and list(outs) == list(states)):
        return {}
    return {"C": readonly(C), "D": None if D is None or not D.any() else readonly(D), "output_names": outs}


def _controller_fn(controller: Any, k: int, n: int) -> Callable[[int, float, NDArray], NDArray]:
    """``controller(t, x)`` callable, or an object with gains ``K`` (N, k, n): ``u = -K_j x``."""
    if callable(controller):
        def f(j: int, t: float, x: NDArray) -> NDArray:
            val = np.asarray(controller(t, x.copy()), dtype=float).reshape(-1)
            if val.shape != (k,) or not np.all(np.isfinite(val)):
                raise LinearSystemError(f"controller(t, x) at t = {t:.6g} must return {k} finite "
                                        f"inputs, got {np.asarray(val).tolist()!r}")
            return val
        return f
    K = getattr(controller, "K", None)
    if K is None:
        raise LinearSystemError(f"controller must be callable controller(t, x) -> u or have gains K "
                                f"of shape (N, k, n); got {type(controller).__name__}")
    K = as_float_array(K, "controller.K")
    if K.ndim == 2:
        K = K[None]
    if K.ndim != 3 or K.shape[1:] != (k, n):
        raise LinearSystemError(f"controller.K must have shape (N, k, n) = (?, {k}, {n}), got {K.shape}")

    def g(j: int, t: float, x: NDArray) -> NDArray:
        if K.shape[0] != 1 and j >= K.shape[0]:
            raise LinearSystemError(f"controller.K has {K.shape[0]} gains, step {j} needs more; "
                                    "simulate fewer steps or design a longer horizon")
        return -(K[0] if K.shape[0] == 1 else K[j]) @ x
    return g


def _open_loop(u: Any, k: int, steps: int | None, times: NDArray | None) -> Callable[[int, float], NDArray]:
    if u is None:
        zero = np.zeros(k)
        return lambda j, t: zero
    if callable(u):
        def f(j: int, t: float) -> NDArray:
            val = np.asarray(u(t), dtype=float).reshape(-1)
            if val.shape != (k,):
                raise LinearSystemError(f"u(t) must return {k} inputs, got shape {np.shape(val)}")
            return val
        return f
    arr = check_finite(as_float_array(u, "u (inputs)"), "u (inputs)")
    if arr.ndim <= 1:
        arr = arr.reshape(-1)
        if arr.shape != (k,):
            raise LinearSystemError(f"u (inputs) must have shape (k,) = ({k},) or (steps, k), got "
                                    f"{arr.shape}")
        return lambda j, t: arr
    if arr.ndim != 2 or arr.shape[1] != k or (steps is not None and arr.shape[0] < steps):
        raise LinearSystemError(f"u (inputs) must have shape (steps, k) = ({steps}, {k}), got "
                                f"{arr.shape}")
    return lambda j, t: arr[j]


def simulate_discrete(dsys: Any, x0: ArrayLike, controller: Any = None, u: Any = None,
                      steps: int | None = None, *, N: int | None = None) -> LinearSimulationResult:
    """Simulate ``x_{j+1} = Ad_j x_j + Bd_j u_j`` (discrete LTV, or LTI when ``Ad`` is 2-D).

    Parameters
    ----------
    dsys : DiscreteLTV-like
        Attributes ``Ad`` ((N, n, n) or (n, n)), ``Bd`` ((N, n, k) or (n, k)), ``dt``; optional
        ``t0`` (default 0), ``states``, ``inputs``.
    x0 : (n,) array_like
    controller : callable ``controller(t_j, x_j) -> (k,)`` or object with ``K`` (N, k, n), optional
        State feedback (``u_j = -K_j x_j`` for a gain object such as an LQR result).
    u : (k,), (steps, k) array_like or callable ``u(t)``, optional
        Open-loop inputs (zeros when omitted). Not together with ``controller``.
    steps : int, optional
        Number of steps (default ``N`` for an LTV sequence; required for LTI).
    N : int, optional
        Same as ``steps`` (the horizon, as in ``finite_horizon_lqr(..., N=)``). A discrete
        python-control ``StateSpace`` is accepted as ``dsys`` with ``steps`` or ``N``; a
        continuous one is rejected ("discretize first").

    Returns
    -------
    LinearSimulationResult
        ``t`` of length ``steps + 1``.

    Raises
    ------
    LinearSystemError
        Bad shapes, too many steps for the sequence, bad controller output.
    """
    if N is not None:
        if steps is not None and int(steps) != int(N):
            raise LinearSystemError(f"steps={steps} and N={N} disagree; give one of them")
        steps = N
    if isinstance(dsys, control.StateSpace):
        from nhcontrol.systems import DiscreteLTV

        dsys = DiscreteLTV.from_statespace(dsys, steps, what="simulate_discrete")
    Ad = as_float_array(getattr(dsys, "Ad", None), "dsys.Ad")
    Bd = as_float_array(getattr(dsys, "Bd", None), "dsys.Bd")
    dt = float(getattr(dsys, "dt"))
    t0 = float(getattr(dsys, "t0", 0.0) or 0.0)
    if Ad.ndim == 2:
        Ad, Bd = Ad[None], (Bd[None] if Bd.ndim == 2 else Bd)
        lti = True
    else:
        lti = False
    if Ad.ndim != 3 or Ad.shape[1] != Ad.shape[2] or Bd.ndim != 3 or Bd.shape[:2] != Ad.shape[:2]:
        raise LinearSystemError(f"dsys.Ad must be (N, n, n) and dsys.Bd (N, n, k) with the same N "
                                f"and n, got {Ad.shape} and {Bd.shape}")
    N, n, k = Ad.shape[0], Ad.shape[1], Bd.shape[2]
    if steps is None:
        if lti:
            raise LinearSystemError("an LTI discrete system (2-D Ad) needs steps=...")
        steps = N
    steps = int(steps)
    if lti:
        check_iterations(steps, f"simulate_discrete(steps={steps})", error=LinearSystemError,
                         hint="simulate fewer steps (a longer sample time, a shorter horizon)")
        check_allocation(8.0 * (steps + 1) * (n + k), f"simulate_discrete(steps={steps}): states and inputs",
                         error=LinearSystemError, hint="simulate fewer steps")
    if steps < 0 or (not lti and steps > N):
        raise LinearSystemError(f"steps must be in [0, {N}] for this sequence of {N} matrices, got "
                                f"{steps}")
    if controller is not None and u is not None:
        raise LinearSystemError("give either open-loop inputs u or a controller, not both")
    x = check_finite(as_float_array(x0, "x0", shape=(n,)), "x0")
    states = check_names(getattr(dsys, "states", None), n, "states", "x")
    inputs = check_names(getattr(dsys, "inputs", None), k, "inputs", "u")
    ctrl = None if controller is None else _controller_fn(controller, k, n)
    ol = _open_loop(u, k, steps, None)
    X = np.empty((steps + 1, n))
    Uo = np.zeros((steps + 1, k))
    X[0] = x
    for j in range(steps):
        t = t0 + j * dt
        uj = ctrl(j, t, X[j]) if ctrl is not None else ol(j, t)
        Uo[j] = uj
        A, B = (Ad[0], Bd[0]) if lti else (Ad[j], Bd[j])
        X[j + 1] = A @ X[j] + B @ uj
    if steps:
        Uo[steps] = Uo[steps - 1]
    t = t0 + dt * np.arange(steps + 1)
    return LinearSimulationResult(t=readonly(t), x=readonly(X), u=readonly(Uo), state_labels=states,
                                  input_labels=inputs, dt=dt, **_output_map(dsys, n, k))


def simulate_ltv(sys: Any, t_span: Sequence[float], x0: ArrayLike, u: Any = None,
                 controller: Any = None, sample_time: float | None = None, *,
                 t_eval: ArrayLike | None = None, method: str = "DOP853", rtol: float = 1e-10,
                 atol: float = 1e-12, breakpoints: ArrayLike | None = None
                 ) -> LinearSimulationResult:
    """Simulate ``ẋ = A(t) x + B(t) u`` (continuous LTV, or LTI ``StateSpace``).

    Parameters
    ----------
    sys : LTVSystem-like or control.StateSpace
        Callables ``A(t) -> (n, n)``, ``B(t) -> (n, k)`` or constant arrays ``A``, ``B``.
    t_span : (t0, tf)
    x0 : (n,) array_like
    u : (k,) array_like or callable ``u(t)``, optional
        Open-loop input (not with ``controller``).
    controller : callable ``controller(t, x) -> (k,)`` or object with ``K``, optional
        Feedback; with ``sample_time`` a zero-order hold, otherwise continuous.
    sample_time : float, optional
    t_eval : (N,) array_like, optional
        Output times (default: controller instants and the integrator's steps).
    method, rtol, atol
        ``solve_ivp`` settings.
    breakpoints : (J,) array_like, optional
        Times at which ``A(t)``, ``B(t)`` or the open-loop ``u(t)`` jump. Default
        ``sys.breakpoints`` (an `LTVSystem` from ``LTVSystem.from_linearization`` carries
        those of its reference, whose inputs jump there); ``[]`` declares none. The
        integration stops at each of them (inside the hold intervals of a ``sample_time``
        controller too) and reads ``A``, ``B`` and ``u`` inside each interval only (their
        one-sided limits at its ends).

    Returns
    -------
    LinearSimulationResult
    """
    Aa, Ba = getattr(sys, "A", None), getattr(sys, "B", None)
    if Aa is None or Ba is None:
        raise LinearSystemError(f"sys must have A and B (callables of t or arrays), got "
                                f"{type(sys).__name__}")
    if callable(Aa):
        Af, Bf = Aa, Ba
    else:
        A0 = as_float_array(Aa, "sys.A", ndim=2)
        B0 = as_float_array(Ba, "sys.B", ndim=2)
        Af, Bf = (lambda t: A0), (lambda t: B0)
    span = as_float_array(t_span, "t_span", shape=(2,))
    t0, tf = float(span[0]), float(span[1])
    if not tf > t0:
        raise LinearSystemError(f"t_span must be (t0, tf) with tf > t0, got {span.tolist()}")
    A_probe = np.asarray(Af(t0), dtype=float)
    B_probe = np.asarray(Bf(t0), dtype=float)
    n = A_probe.shape[0]
    B_probe = B_probe.reshape(n, -1)
    k = B_probe.shape[1]
    x = check_finite(as_float_array(x0, "x0", shape=(n,)), "x0")
    if controller is not None and u is not None:
        raise LinearSystemError("give either open-loop inputs u or a controller, not both")
    if sample_time is not None and controller is None:
        raise LinearSystemError("sample_time is the period of a discrete controller; pass "
                                "controller=... as well")
    states = check_names(getattr(sys, "states", None) if not isinstance(sys, control.StateSpace)
                         else sys.state_labels, n, "states", "x")
    inputs = check_names(getattr(sys, "inputs", None) if not isinstance(sys, control.StateSpace)
                         else sys.input_labels, k, "inputs", "u")
    ctrl = None if controller is None else _controller_fn(controller, k, n)
    ol = _open_loop(u, k, None, None)

    def run(a: float, b: float, y: NDArray, ufun: Callable[[float, NDArray], NDArray],
            lo: float = -math.inf, hi: float = math.inf) -> Any:
        def rhs(t: float, z: NDArray) -> NDArray:
            t = min(max(t, lo), hi)            # inside [lo, hi]: one side of each jump
            return np.asarray(Af(t)) @ z + np.asarray(Bf(t)).reshape(n, k) @ ufun(t, z)
        sol = solve_ivp(rhs, (a, b), y, method=method, rtol=rtol, atol=atol, dense_output=True)
        if sol.status == -1:
            raise SolverError(f"LTV integration failed at t = {sol.t[-1]:.6g}: {sol.message}")
        return sol

    segs: list = []

    def pieces(edges: NDArray, y: NDArray, law: Callable[[float, NDArray], NDArray]) -> NDArray:
        """Integrate over consecutive ``edges`` (each piece sees one side of every jump at its
        inner ends); append the pieces to ``segs``; return the final state."""
        for i in range(edges.size - 1):
            c, d = float(edges[i]), float(edges[i + 1])
            lo = c if i == 0 else float(np.nextafter(c, math.inf))
            hi = d if i == edges.size - 2 else float(np.nextafter(d, -math.inf))
            sol = run(c, d, y, law, lo, hi)
            segs.append((c, d, sol, law))
            y = sol.y[:, -1]
        return y

    if breakpoints is None:
        breakpoints = () if isinstance(sys, control.StateSpace) else getattr(sys, "breakpoints", ())
    bps = np.unique(check_finite(as_float_array(breakpoints, "breakpoints").reshape(-1),
                                 "breakpoints"))
    bps = bps[(bps > t0) & (bps < tf)]
    if ctrl is None or sample_time is None:
        law = ((lambda t, z: ctrl(0, t, z)) if ctrl is not None else (lambda t, z: ol(0, t)))
        pieces(np.concatenate([[t0], bps, [tf]]), x, law)
    else:
        h = float(sample_time)
        if not (math.isfinite(h) and h > 0):
            raise LinearSystemError(f"sample_time must be positive, got {sample_time!r}")
        check_iterations((tf - t0) / h, f"simulate_ltv(t_span=({t0:g}, {tf:g}), sample_time={h:g}): "
                                        f"{(tf - t0) / h:.6g} hold intervals", error=LinearSystemError,
                         hint="shorten t_span or lengthen sample_time")
        nseg = _interval_count(tf - t0, h)
        y = x
        for j in range(nseg):
            a = t0 + j * h
            b = tf if j == nseg - 1 else t0 + (j + 1) * h
            uj = ctrl(j, a, y)
            law = (lambda t, z, _u=uj: _u)
            # A(t), B(t) jumps inside the hold interval
            y = pieces(np.concatenate([[a], bps[(bps > a) & (bps < b)], [b]]), y, law)
    if t_eval is None:
        T = np.unique(np.concatenate([s[2].t for s in segs]))
    else:
        T = as_float_array(t_eval, "t_eval", ndim=1)
        if T.size == 0 or T.min() < t0 - 1e-12 or T.max() > tf + 1e-12:
            raise LinearSystemError(f"t_eval must lie in [{t0:g}, {tf:g}]")
    starts = np.array([s[0] for s in segs])
    idx = np.clip(np.searchsorted(starts, T, side="right") - 1, 0, len(segs) - 1)
    X = np.empty((T.size, n))
    U = np.empty((T.size, k))
    for j in np.unique(idx):
        sel = np.flatnonzero(idx == j)
        X[sel] = segs[j][2].sol(np.clip(T[sel], segs[j][0], segs[j][1])).T
        for i in sel:
            U[i] = segs[j][3](T[i], X[i])
    return LinearSimulationResult(t=readonly(np.array(T)), x=readonly(X), u=readonly(U),
                                  state_labels=states, input_labels=inputs,
                                  dt=None if sample_time is None else float(sample_time),
                                  **_output_map(sys, n, k))
