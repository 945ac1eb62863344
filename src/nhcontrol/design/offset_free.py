r"""Offset-free output-feedback MPC: a disturbance model estimated by the Kalman filter.

The scheme of Muske & Badgwell 2002 and Pannocchia & Rawlings 2003 (``docs/references.md``) on
the deviation model of
[`MPCController`][nhcontrol.design.MPCController] (equations (N.13)-(N.16) of
``docs/theory/nmpc.md``):

1. the prediction model is augmented with a constant disturbance ``d`` entering the state
   through ``B_d`` and the measured outputs through ``C_d``::

       δx_{j+1} = A_j δx_j + B_j δu_j + B_d d_j,   d_{j+1} = d_j,   ỹ_j = C δx_j + D δu + C_d d_j

   (``disturbance="input"``: ``B_d = B_j``, ``C_d = 0``, one disturbance per input;
   ``"output"``: ``B_d = 0``, ``C_d = I``, one per measured output; or given matrices);
2. the augmented state ``(δx, d)`` is estimated from the measured outputs by the finite-horizon
   Kalman filter of the augmented model ([`kalman_filter()`][nhcontrol.design.kalman_filter]);
3. a **target** ``(δx_s, δu_s)`` is computed from the estimate ``d̂``: the steady state of the
   model at the current sample in which the tracked outputs ``H ỹ`` are zero,

       (I − A_k) δx_s − B_k δu_s = B_d d̂,   H (C δx_s + D δu_s + C_d d̂) = 0

   (least squares / least norm when not square; exact for an LTI model, quasi-steady along a
   time-varying one);
4. the QP of [`LTVMPC`][nhcontrol.design.LTVMPC] regulates ``(δx − δx_s, δu − δu_s)`` with the
   prediction ``δx_{j+1} = A_j δx_j + B_j δu_j + B_d d̂`` from ``δx̂``.

In a steady state of the closed loop the filter's innovation is zero, so the estimated outputs
are the measured ones; the QP's solution is the target, at which ``H ỹ = 0``: no offset in the
tracked outputs, for any constant disturbance the model can represent (the detectability
condition ``rank [I − A, −B_d; C, C_d] = n + n_d`` is checked).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any, Callable, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util import checks as _checks
from .._util.errors import DesignError, SolverError
from .._util.validation import as_float_array
from .controllers import (ControlRecord, RiccatiSchedule, TrackingController, _as_discrete,
                          _io_callbacks, _mpc_sample, _shifted_warm_start)
from .kalman import KalmanFilterResult, kalman_filter
from .mpc import LTVMPC

__all__ = ["OffsetFreeMPCController"]


class OffsetFreeMPCController(TrackingController):
    r"""Output-feedback LTV-MPC with a disturbance model and a Kalman filter (offset-free).

    The controller measures outputs, not the state: ``control(t, y)`` takes the measured
    outputs ``y`` (p,) at the sample ``t`` (absolute; ``ỹ = y − y_ref(t)``). With
    ``measurement=`` it also has the state-feedback call ``ctrl(t, x, ẋ)`` of
    [`forward_dynamics()`][nhcontrol.simulate.forward_dynamics] (``y = measurement(t, x, ẋ)``).
    Its state in `to_iosystem()` (inputs: the measured outputs) is the previous input and the
    a-posteriori estimate ``(δx̂, d̂)``.

    Parameters
    ----------
    model : DiscreteLTV, (Ad, Bd), LTVSystem or StateSpace
        Prediction model of the deviation (as for `MPCController`).
    reference : Reference
        Carries ``u0(t)`` (feed-forward) and the sample times.
    horizon : int
        ``N``.
    Q, R : array_like
        Stage weights of ``δx − δx_s`` and ``δu − δu_s``.
    C : (p, n) array_like, optional
        Measured outputs ``ỹ = C δx + D δu`` (default: the model's ``C``).
    D : (p, k) array_like, optional
        Their feed-through (default zero); the input that enters is the one held over the
        sample before the measurement.
    disturbance : {"input", "output"}, (B_d, C_d) or None
        The disturbance model (see the module docstring); ``None``: no disturbance model (a
        plain Kalman filter of the state: offsets remain, for comparison).
    Qn : array_like
        Process-noise covariance of the augmented state (``n + n_d``, the last ``n_d`` the
        random walk of ``d``: its size sets how fast ``d̂`` follows a change), or a pair
        tuple ``(Q_x, Q_d)`` of the two diagonal blocks (matrices or their diagonals).
    Rn : (p, p) array_like
        Measurement-noise covariance.
    P0 : array_like, optional
        Initial covariance of the augmented estimate (default the identity).
    track : (r, p) array_like, optional
        ``H``: the outputs driven to zero offset (default all measured outputs; for a unique
        target ``r = k``).
    dt, steps, terminal, Qf, riccati_tail :
        As for [`MPCController`][nhcontrol.design.MPCController]; ``steps`` is also the Kalman
        filter's horizon (default the model's, or 10 N for an LTI model).
    y_ref : callable ``t -> (p,)``, optional
        Outputs along the reference (default 0).
    measurement : callable ``(t, x, ẋ) -> (p,)``, optional
        The sensors, for the ``ctrl(t, x, ẋ)`` call of ``forward_dynamics``.
    fallback : bool
        On a failed QP: the next input of the previous plan, then the input target ``u_s``
        clipped to the bounds (``"fallback: ..."`` statuses), instead of raising.
    **mpc_options
        Bounds and solver options of [`LTVMPC`][nhcontrol.design.LTVMPC].

    Raises
    ------
    DesignError
        Bad shapes, or a disturbance model that is not detectable from the outputs.
    """

    def __init__(self, model: Any, reference: Any, horizon: int, Q: ArrayLike, R: ArrayLike, *,
                 Qn: Any, Rn: ArrayLike, C: ArrayLike | None = None, D: ArrayLike | None = None,
                 disturbance: Literal["input", "output"] | tuple[ArrayLike, ArrayLike] | None = "input",
                 P0: ArrayLike | None = None, track: ArrayLike | None = None,
                 Qf: ArrayLike | None = None, dt: float | None = None, steps: int | None = None,
                 terminal: Literal["riccati", "fixed"] = "riccati", riccati_tail: int | None = None,
                 y_ref: Callable[[float], ArrayLike] | None = None,
                 measurement: Callable[[float, NDArray, NDArray], ArrayLike] | None = None,
                 fallback: bool = True, t0: float = 0.0,
                 feedforward: Literal["midpoint", "sample"] = "midpoint",
                 inputs: tuple[str, ...] | None = None,
                 outputs: tuple[str, ...] | None = None, **mpc_options: Any) -> None:
        Ad, Bd, h, period = _as_discrete(model, dt)
        M, n, k = Bd.shape
        N = _checks.horizon(horizon, n=n, k=k, what="OffsetFreeMPCController", error=DesignError,
                            multiple=6, extra_steps=steps if isinstance(steps, int) and steps > 0 else M)
        if C is None:
            try:
                C = getattr(model, "C", None)
            except Exception:           # an LTVSystem with time-varying outputs
                C = None
            if C is None:
                raise DesignError("give the measured outputs C (p, n) (constant): the model has "
                                  "no constant output matrix")
        C_ = as_float_array(C, "C", ndim=2, error=DesignError)
        if C_.shape[1] != n:
            raise DesignError(f"C must have {n} columns (the model's states), got {C_.shape}")
        p = C_.shape[0]
        D_ = np.zeros((p, k)) if D is None else as_float_array(D, "D", shape=(p, k), error=DesignError)
        if disturbance is None:
            Bdist, Cdist = np.zeros((M, n, 0)), np.zeros((p, 0))
        elif isinstance(disturbance, str):
            if disturbance == "input":
                Bdist, Cdist = Bd.copy(), np.zeros((p, k))
            elif disturbance == "output":
                Bdist, Cdist = np.zeros((M, n, p)), np.eye(p)
            else:
                raise DesignError(f"disturbance must be 'input', 'output', a pair (B_d, C_d) or "
                                  f"None, got {disturbance!r}")
        else:
            Bdist = as_float_array(disturbance[0], "B_d", error=DesignError)
            Cdist = as_float_array(disturbance[1], "C_d", ndim=2, error=DesignError)
            if Bdist.ndim == 2:
                Bdist = np.broadcast_to(Bdist, (M,) + Bdist.shape).copy()
            if Bdist.shape[:2] != (M, n) or Cdist.shape != (p, Bdist.shape[2]):
                raise DesignError(f"disturbance (B_d, C_d) must have shapes (n, n_d) = ({n}, n_d) "
                                  f"and (p, n_d) = ({p}, n_d), got {Bdist.shape[1:]} and {Cdist.shape}")
        nd = Cdist.shape[1]
        self.nx, self.nd, self.noutputs = n, nd, p
        if nd:
            # detectability of the constant disturbance (Pannocchia & Rawlings 2003, Lemma 1)
            Mx = np.block([[np.eye(n) - Ad[0], -Bdist[0]], [C_, Cdist]])
            rank = np.linalg.matrix_rank(Mx)
            if rank < n + nd:
                raise DesignError(
                    f"the disturbance model is not detectable from the {p} measured outputs: "
                    f"rank [I - A, -B_d; C, C_d] = {rank} < n + n_d = {n + nd}; use fewer "
                    "disturbances (n_d <= p), disturbance='output', or measure more outputs")
        self.C, self.D, self.Bdist, self.Cdist = C_, D_, Bdist, Cdist
        self.H = np.eye(p) if track is None else as_float_array(track, "track", ndim=2,
                                                                error=DesignError)
        if self.H.shape[1] != p:
            raise DesignError(f"track must have {p} columns (the measured outputs), got {self.H.shape}")
        self.horizon, self.terminal, self.fallback = N, terminal, bool(fallback)
        self.Ad, self.Bd, self.period = Ad, Bd, period
        self.steps = int(steps) if steps is not None else (period or (M if M > 1 else 10 * N))
        Q_ = as_float_array(Q, "Q", shape=(n, n), error=DesignError)
        R_ = as_float_array(R, "R", shape=(k, k), error=DesignError)
        Qf_ = Q_ if Qf is None else as_float_array(Qf, "Qf", shape=(n, n), error=DesignError)
        mpc_options.setdefault("on_failure", "raise")
        self.mpc = LTVMPC(N, Q_, R_, Qf_, **mpc_options)
        self.schedule = RiccatiSchedule(Ad, Bd, period, self.steps, N, Q_, R_, Qf_, riccati_tail)
        # the Kalman filter of the augmented model over the schedule
        na = n + nd
        idx = self.schedule.indices(0, self.steps)
        Aa = np.zeros((idx.size, na, na))
        Aa[:, :n, :n] = Ad[idx]
        Aa[:, :n, n:] = Bdist[idx]
        Aa[:, n:, n:] = np.eye(nd)
        Ba = np.zeros((idx.size, na, k))
        Ba[:, :n] = Bd[idx]
        Ca = np.hstack([C_, Cdist])
        if isinstance(Qn, tuple) and len(Qn) == 2:
            Qx = np.atleast_2d(as_float_array(Qn[0], "Qn[0]", error=DesignError))
            Qd = np.atleast_2d(as_float_array(Qn[1], "Qn[1]", error=DesignError))
            Qx = np.diag(Qx.ravel()) if Qx.shape[0] == 1 and n > 1 else Qx
            Qd = np.diag(Qd.ravel()) if Qd.shape[0] == 1 and nd > 1 else Qd
            if Qx.shape != (n, n) or Qd.shape != (nd, nd):
                raise DesignError(f"Qn = (Q_x, Q_d) must be ({n}, {n}) and ({nd}, {nd}) "
                                  f"(or their diagonals), got {Qx.shape} and {Qd.shape}")
            Qn_ = np.block([[Qx, np.zeros((n, nd))], [np.zeros((nd, n)), Qd]])
        else:
            Qn_ = as_float_array(Qn, "Qn", shape=(na, na), error=DesignError)
        aug = SimpleNamespace(Ad=Aa, Bd=Ba, dt=h, states=(), outputs=tuple(outputs or ()),
                              output_matrices=lambda i: (Ca, D_))
        self.kf: KalmanFilterResult = kalman_filter(aug, Qn_, Rn, P0=P0)
        self.y_ref, self.measurement = y_ref, measurement
        self.outputs = tuple(outputs) if outputs is not None else tuple(f"y[{i}]" for i in range(p))
        super().__init__(reference, h, t0=t0, feedforward=feedforward, inputs=inputs)
        self._plan: tuple | None = None

    # ------------------------------------------------------------------ pieces
    def _initial_memory(self) -> NDArray[np.float64]:
        return np.zeros(self.Bd.shape[2] + 1 + self.nx + self.nd)

    def memory_labels(self) -> list[str]:
        names = list(self.inputs) or [f"u[{i}]" for i in range(self.Bd.shape[2])]
        return ([f"{u}_prev" for u in names] + ["started"]
                + [f"xhat[{i}]" for i in range(self.nx)] + [f"dhat[{i}]" for i in range(self.nd)])

    def reset(self) -> None:
        super().reset()
        self.mpc.reset()
        self._plan = None
        self._last_sample = None

    def target(self, k: int, dhat: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The steady target ``(δx_s, δu_s)`` for the disturbance estimate ``d̂`` at sample ``k``
        (Eq. (N.15)): least squares, least norm when not unique."""
        n, k_in = self.nx, self.Bd.shape[2]
        j = int(self.schedule.indices(k, 1)[0])
        A, B = self.Ad[j], self.Bd[j]
        d = np.asarray(dhat, dtype=float)
        H = self.H
        Mt = np.block([[np.eye(n) - A, -B], [H @ self.C, H @ self.D]])
        rhs = np.concatenate([self.Bdist[j] @ d, -H @ (self.Cdist @ d)])
        sol = np.linalg.lstsq(Mt, rhs, rcond=None)[0]
        return sol[:n], sol[n:n + k_in]

    def _estimate(self, k: int, y: NDArray, t: float, memory: NDArray) -> NDArray[np.float64]:
        kin = self.Bd.shape[2]
        if k > self.kf.horizon:
            raise DesignError(f"sample {k} (t = {t:.6g}) is past the Kalman filter's horizon of "
                              f"{self.kf.horizon} steps; pass a larger steps=")
        yt = y - (np.asarray(self.y_ref(t), float) if self.y_ref is not None else 0.0)
        Xpost = memory[kin + 1:]
        if memory[kin] > 0.5 and k > 0:
            du = memory[:kin] - np.atleast_1d(self.u_ref(t - self.dt))
            Xprior = self.kf.predict(k - 1, Xpost, du)
        else:
            du = np.zeros(kin)
            Xprior = Xpost
        return self.kf.correct(k, Xprior, yt, du)

    def _compute(self, t: float, y: NDArray, memory: NDArray  # type: ignore[override]
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64], ControlRecord, dict]:
        start = time.perf_counter()
        kin, N, n = self.Bd.shape[2], self.horizon, self.nx
        k = self.index(t)
        X = self._estimate(k, y, t, memory)
        xh, dh = X[:n], X[n:]
        tw = t + self.dt * np.arange(N)
        ur = np.atleast_2d(self.u_ref(tw)).reshape(N, kin)
        u_prev = memory[:kin] if memory[kin] > 0.5 else ur[0]
        xs, us = self.target(k, dh)
        idx = self.schedule.indices(k, N)
        Qf = self.schedule.P(k + N) if self.terminal == "riccati" else self.mpc._Qf
        c = np.einsum("jnd,d->jn", self.Bdist[idx], dh) if self.nd else None
        qx = np.tile(-2.0 * self.mpc.Q @ xs, (N + 1, 1))
        qx[N] = -2.0 * Qf @ xs
        qu = np.tile(-2.0 * self.mpc.R @ us, (N, 1))
        side: dict[str, Any] = {}
        warm = _shifted_warm_start(self._plan, k, self.mpc, N, n, kin)
        try:
            u, status, slack, xp, dup, duals, _ = _mpc_sample(
                self.mpc, xh, self.Ad[idx], self.Bd[idx], u_prev, ur,
                Qf if self.terminal == "riccati" else None, warm, c=c, qx=qx, qu=qu)
            side["_plan"] = (k, ur + dup, xp, dup, duals)
        except SolverError as exc:
            if not self.fallback:
                raise
            why = str(exc).split(";")[0]
            b = self.mpc.bounds
            slack = 0.0
            if self._plan is not None and 0 < k - self._plan[0] < N:
                u = np.clip(self._plan[1][k - self._plan[0]], b["u_min"], b["u_max"])
                status = f"fallback: shifted plan ({why})"
            else:
                u = np.clip(ur[0] + us, np.maximum(b["u_min"], u_prev + b["du_min"]),
                            np.minimum(b["u_max"], u_prev + b["du_max"]))
                status = f"fallback: target input ({why})"
        mem = np.concatenate([u, [1.0], X])
        rec = ControlRecord(float(t), u, status, time.perf_counter() - start, slack, 1)
        return u, mem, rec, side

    # ------------------------------------------------------------------ protocol
    @property
    def estimate(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The current a-posteriori estimate ``(δx̂, d̂)``."""
        X = self._memory[self.Bd.shape[2] + 1:]
        return X[:self.nx].copy(), X[self.nx:].copy()

    def control(self, t: float, y: ArrayLike) -> NDArray[np.float64]:  # type: ignore[override]
        """Input at the sample ``t`` for the measured outputs ``y`` (p,).

        The estimator inside takes every sample once, in order (the rule of
        `KalmanEstimator.update`): ``t`` must be a sample time ``t0 + k dt`` and, after the
        first call, the next one (``k`` = the previous ``k`` + 1); an off-grid, repeated or
        skipped sample is refused (`DesignError`), never applied twice. `reset()` starts over.
        """
        what = "OffsetFreeMPCController.control"
        tv = _checks.sample_time(t, what=what, error=DesignError)
        k = _checks.grid_index(tv, self.t0, self.dt, what=what, error=DesignError)
        last = getattr(self, "_last_sample", None)
        if last is not None and k != last + 1:
            raise DesignError(f"{what} at t = {tv:.9g} (sample k = {k}): the next sample of the "
                              f"estimator is k = {last + 1} at t = {self.t0 + (last + 1) * self.dt:.9g}; "
                              f"call control once per sample, in order (reset() to start over)")
        yv = _checks.finite_vector(y, "y", self.noutputs, what=what, error=DesignError)
        t = tv
        c0, w0 = time.thread_time(), time.perf_counter()
        u, memory, rec, side = self._compute(float(t), yv, self._memory)
        w1, c1 = time.perf_counter(), time.thread_time()
        if not np.all(np.isfinite(u)):
            raise SolverError(f"{what} at t = {tv:.9g} computed a non-finite input {np.asarray(u).tolist()}; "
                              f"nothing was applied (check the weights, the noise covariances and y)")
        self._memory = memory
        from dataclasses import replace
        self._commit(replace(rec, solve_time=w1 - w0, cpu_time=c1 - c0), side)
        self._last_sample = k
        return u

    def __call__(self, t: float, x: ArrayLike, xd: ArrayLike) -> NDArray[np.float64]:
        """``control(t, measurement(t, x, ẋ))``: the signature of ``forward_dynamics``'
        controllers (needs ``measurement=``)."""
        if self.measurement is None:
            raise DesignError("this controller measures outputs: call control(t, y), or pass "
                              "measurement=(t, x, xd) -> y to use it with forward_dynamics")
        return self.control(t, np.asarray(self.measurement(t, np.asarray(x, float),
                                                           np.asarray(xd, float)), float))

    def to_iosystem(self, output_labels: list[str] | None = None, *,  # type: ignore[override]
                    name: str | None = None) -> Any:
        """A python-control discrete-time ``NonlinearIOSystem``: inputs the measured outputs
        (``output_labels``, default `outputs`), outputs the plant inputs, state `memory_labels`
        (previous input, ``started``, the estimate ``(δx̂, d̂)``)."""
        import control

        labels = list(output_labels) if output_labels is not None else list(self.outputs)
        if len(labels) != self.noutputs:
            raise DesignError(f"output_labels must name the {self.noutputs} measured outputs, "
                              f"got {len(labels)}")
        outs = list(self.inputs) or [f"u[{i}]" for i in range(self.Bd.shape[2])]
        upd, out = _io_callbacks(self._compute, self._commit)

        return control.nlsys(upd, out, inputs=labels, outputs=outs, states=self.memory_labels(),
                             dt=self.dt, name=name or type(self).__name__)
