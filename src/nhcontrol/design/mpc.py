"""Linear time-varying model predictive control with cvxpy (compiled once, warm-started).

The controller regulates the *deviation* from a reference motion: ``δx = x − x_ref(t_k)``,
``u = u_ref(t_k) + δu``. Bounds are given on the *absolute* input / state (e.g. the plate
angles ``|α|, |β| ≤ 10°``) and are shifted by the reference window at each step. See
``docs/theory/lqr_mpc.md`` for the quadratic programme and the DPP argument.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.log import get_logger
from .._util import checks as _checks
from .._util.errors import DesignError, SolverError
from .._util.validation import as_float_array, check_finite, readonly
from ._mpc_checks import _bound, _output_window, _ready, _soft
from ._condensed import DenseWindowQP, LazyDuals, daqp_available
from ._osqp import WindowQP
from ._weights import check_psd, psd_factor
from .._util.reprs import concise_repr

_log = get_logger(__name__)
__all__ = ["LTVMPC", "MPCStep", "window"]

_ACCEPTED = ("optimal", "optimal_inaccurate")


@dataclass(frozen=True)
class MPCStep:
    """Outcome of one receding-horizon step (immutable).

    Attributes
    ----------
    status : str
        ``"optimal"``, ``"optimal_inaccurate"`` (used, with a RuntimeWarning, only when the other
        solver did not reach ``"optimal"`` either), or
        ``"held: <why>"`` when the solvers failed and ``on_failure="hold"`` returned the previous
        input.
    u : (k,) ndarray
        Input to apply, absolute: ``u_ref[0] + du``, inside ``[u_min, u_max]`` and
        ``[u_prev + du_min, u_prev + du_max]`` exactly (the solver's first move projected onto
        the bounds; the projection is of the order of the solver tolerance).
    du : (k,) ndarray
        Deviation input ``δu_0 = u − u_ref[0]`` (``predicted_u[0]`` is the unprojected one).
    predicted_x : (N+1, n) ndarray
        Predicted deviation states ``δx_0 … δx_N`` (for a held input: the model propagated with
        the held input).
    predicted_u : (N, k) ndarray
        Predicted deviation inputs ``δu_0 … δu_{N-1}``.
    cost : float
        Optimal value of the QP (for a held input: ``nan`` is never used; the cost of the
        propagated held trajectory).
    solve_time : float
        Wall-clock seconds spent in ``problem.solve`` (all attempts).
    solver : str
        Solver that produced the answer (``"DAQP"``, ``"OSQP"``, ``"CLARABEL"``; or the last
        one tried).
    held : bool
        True when the previous input was held after a failure.
    attempts : tuple of (str, str)
        ``(solver, cvxpy status)`` of every attempt, in order.
    duals : ndarray or None
        Multipliers of the sparse QP's rows in OSQP's layout and sign convention (OSQP's own,
        or DAQP's mapped back with the costate recursion of the dynamics rows, run when the
        attribute is first read), for a later ``step(warm_start=(δx, δu, duals))``; None when
        Clarabel answered.
    slack : (N, p) ndarray
        Slacks ``s_j`` of the soft state bounds (one column per bounded state component,
        rows ``j = 1 … N``); an empty ``(N, 0)`` array for hard bounds. Nonzero entries mark
        where the prediction leaves the bounds.
    slack_output : (N, p_y) ndarray
        Slacks of the soft output bounds (one column per bounded output component, rows
        ``j = 1 … N``); ``(N, 0)`` for hard output bounds or none.
    """

    __repr__ = concise_repr

    status: str
    u: NDArray[np.float64]
    du: NDArray[np.float64]
    predicted_x: NDArray[np.float64]
    predicted_u: NDArray[np.float64]
    cost: float
    solve_time: float
    solver: str
    held: bool = False
    attempts: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    slack: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    duals: NDArray[np.float64] | None = None
    slack_output: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_duals"] = self.duals                   # formed before pickling
        return state

    @property
    def slack_max(self) -> float:
        """Largest slack of the soft state and output bounds (0 for hard bounds or none
        used)."""
        out = 0.0
        for s in (self.slack, self.slack_output):
            if s.size:                  # (np.max of an empty array with initial= is slow)
                out = max(out, float(np.max(s)))
        return out


def _finite(a: NDArray[np.float64]) -> bool:
    """Every entry finite: the sum is finite (an inf or NaN entry makes it inf or NaN), else
    the entries are checked (a sum can overflow)."""
    return math.isfinite(float(np.add.reduce(a, axis=None))) or bool(np.isfinite(a).all())


def _duals_get(self: MPCStep) -> NDArray[np.float64] | None:
    d = self.__dict__.get("_duals")
    if callable(d):                     # the condensed path: mapped on first access
        d = np.array(d(), dtype=float)
        self.__dict__["_duals"] = d
    return d


def _duals_set(self: MPCStep, value: Any) -> None:
    self.__dict__["_duals"] = value


def _plan_duals(st: MPCStep) -> Any:
    """`MPCStep.duals` as kept for the next step's warm start: the array, or the multipliers
    of the condensed path not yet formed (`LazyDuals`; DAQP's warm start does not need the
    costate recursion)."""
    return st.__dict__.get("_duals")


# `MPCStep.duals` is a dataclass field (the same constructor, comparison and fields) read through
# this property: the condensed path hands a function and the multipliers are mapped to the sparse
# layout (the costate recursion of the dynamics rows) only when they are asked for
MPCStep.duals = property(_duals_get, _duals_set,                      # type: ignore[assignment]
                         doc="Multipliers of the sparse QP's rows (see the class docstring).")


def window(dsys: Any, start: int, horizon: int, *,
           periodic: bool | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return the prediction window ``(Ad[start:start+N], Bd[start:start+N])`` of a discrete system.

    Parameters
    ----------
    dsys : DiscreteLTV or (Ad, Bd)
        Discrete LTV system with ``Ad`` (M, n, n), ``Bd`` (M, n, k).
    start : int
        Index ``k`` of the current sample.
    horizon : int
        Window length ``N``.
    periodic : bool, optional
        Wrap indices modulo the period when the window runs past the last step. Default: True
        when ``dsys.period_steps`` is set (the sequences then repeat with that period), else False.

    Returns
    -------
    Ad : (N, n, n) ndarray
    Bd : (N, n, k) ndarray

    Raises
    ------
    DesignError
        The window leaves a non-periodic sequence (discretize over a longer time range).
    """
    from ._weights import system_arrays

    Ad, Bd, _ = system_arrays(dsys)
    M = Ad.shape[0]
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or start < 0:
        raise DesignError(f"start must be a non-negative integer step index, got {start!r}")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise DesignError(f"horizon must be a positive integer number of steps, got {horizon!r}")
    p = getattr(dsys, "period_steps", None)
    if periodic is None:
        periodic = p is not None
    idx = np.arange(int(start), int(start) + int(horizon))
    if periodic:
        idx = idx % int(p if p is not None else M)
    elif idx[-1] >= M:
        raise DesignError(
            f"the prediction window [{start}, {start + horizon}) leaves the discrete system, which "
            f"has {M} steps; discretize over a longer time range (steps >= {start + horizon}) or "
            "pass periodic=True for a periodic reference")
    return Ad[idx], Bd[idx]


REALTIME_OSQP_SETTINGS: dict[str, Any] = {"polishing": False, "check_termination": 5}
"""The OSQP settings `NMPCController` gives its QP unless told otherwise: no solution polishing
(one factorisation less per sample) and termination checked every 5 iterations (about 20 %
fewer iterations warm-started). Every supported OSQP (>= 1.0) takes them, so with them, as with
none, an `LTVMPC` behind DAQP sets OSQP up at its first use."""


class LTVMPC:
    r"""Receding-horizon controller for ``δx_{j+1} = A_j δx_j + B_j δu_j`` with bounds.

    The quadratic programme (built once, with cvxpy Parameters for everything that changes)

    $$
    \min_{δx, δu} \; \sum_{j=0}^{N-1} δx_j^T Q δx_j + δu_j^T R δu_j + δx_N^T Q_f δx_N
    $$

    subject to $δx_0 = x_0$, $δx_{j+1} = A_j δx_j + B_j δu_j$,
    $u_{min} \le u_{ref,j} + δu_j \le u_{max}$,
    $Δu_{min} \le u_j - u_{j-1} \le Δu_{max}$ (with $u_{-1}$ the previous input),
    $x_{min} \le x_{ref,j} + δx_j \le x_{max}$ for $j = 1 … N$, and
    $y_{min} \le y_{ref,j} + C_j δx_j + D_j δu_{\min(j, N-1)} \le y_{max}$ for $j = 1 … N$
    (outputs; the last input held at $j = N$).

    Parameters
    ----------
    horizon : int
        Prediction horizon ``N`` (steps).
    Q : (n, n) array_like
        Stage state weight (PSD).
    R : (k, k) array_like
        Stage input weight (PD).
    Qf : (n, n) array_like, optional
        Terminal weight (PSD); default ``Q``. It can be replaced at each step (``step(Qf=...)``),
        e.g. by the finite-horizon Riccati matrix ``P_{k+N}`` of the LTV system.
    u_min, u_max : scalar or (k,) array_like, optional
        Bounds on the absolute input ``u = u_ref + δu`` (``±inf`` for none).
    du_min, du_max : scalar or (k,) array_like, optional
        Bounds on the input increment per step ``u_j − u_{j−1}``.
    x_min, x_max : scalar or (n,) array_like, optional
        Bounds on the absolute predicted state ``x_ref,j + δx_j``, ``j = 1 … N``.
    solver : {"OSQP", "CLARABEL"}
        First solver; the other is the fallback, tried when the first fails or returns
        ``"optimal_inaccurate"``.
    on_failure : {"raise", "hold"}
        After both solvers fail: raise `SolverError` (default) or return the previous
        input with ``status = "held: ..."`` and ``held=True``.
    solver_options : mapping, optional
        Extra keyword arguments for the first solver (e.g. ``{"eps_abs": 1e-9}`` for OSQP).
    fallback_options : mapping, optional
        Extra keyword arguments for the fallback solver.
    soft_state : bool or (float, float)
        Make the state bounds soft: ``x_{min} − s_j ≤ x_{ref,j} + δx_j ≤ x_{max} + s_j`` with
        slacks ``s_j ≥ 0`` charged ``ρ₁ Σ s + ρ₂ Σ s²`` (``True``: ``(ρ₁, ρ₂) = (1e4, 1e2)``).
        The L1 part is an *exact* penalty: when the hard problem is feasible and ``ρ₁``
        exceeds the largest multiplier of the state bounds, the soft problem has the same
        solution with zero slacks; when it is infeasible the soft one still has a solution
        (the smallest violation in the weighted sense). See ``docs/theory/nmpc.md``.
    y_min, y_max : scalar or (p,) array_like, optional
        Bounds on the absolute predicted output ``y_j = y_ref,j + C_j δx_j + D_j δu_j``,
        ``j = 1 … N`` (``δu_N := δu_{N−1}``, the last input held); need ``C_y``.
    C_y : (p, n) or (N, p, n) array_like, optional
        Output matrices of the bounded outputs (one for all samples or one per predicted sample
        ``j = 1 … N``); replace them per step with ``step(C_y=...)`` (time-varying outputs).
    D_y : (p, k) or (N, p, k) array_like, optional
        Feed-through of the bounded outputs (default none).
    soft_output : bool or (float, float)
        Make the output bounds soft, as ``soft_state`` for the states: slacks ``σ_j ≥ 0`` per
        bounded output component and sample, ``y_{min} − σ_j ≤ y_j ≤ y_{max} + σ_j``, charged
        ``ρ₁ Σ σ + ρ₂ Σ σ²`` (exact L1 penalty); reported in `MPCStep.slack_output`.
    osqp_interface : {"direct", "cvxpy"}
        How OSQP is called. ``"direct"`` (default): the QP is written once in OSQP's standard
        form and only the changing numbers are overwritten at each step (no cvxpy work per
        step; about the cost of a hand-written OSQP loop). ``"cvxpy"``: through the
        parametrised cvxpy problem `problem`. Clarabel always goes through cvxpy. Both
        give the same QP; unset OSQP settings are cvxpy's defaults (``eps_abs = eps_rel =
        1e-5``, ``max_iter = 10000``) with polishing.
    qp_solver : {"daqp", "osqp"}
        ``"daqp"`` (default): each step condenses the QP (states eliminated by the structured
        recursions of ``docs/theory/condensed_qp.md``, in C when a compiler is available) and
        solves it with DAQP (dual active set, one ``daqp.solve`` call per step: the
        unconstrained minimiser is tried first, then DAQP iterates from the active set of the
        multipliers of ``warm_start``, which the controllers fill with the previous window's
        shifted, or from the empty set); when it fails, OSQP and then Clarabel are tried
        (OSQP's workspace is then set up at the first sample that needs it, unless OSQP
        options other than `REALTIME_OSQP_SETTINGS` were given: those are checked at
        construction). ``"osqp"``: the sparse QP by OSQP (then Clarabel). The OSQP path also solves when
        daqp is not installed or a soft bound has ``ρ₂ = 0`` (reason in `qp_path_reason`;
        `qp_path` says which path solves).
    daqp_options : mapping, optional
        DAQP settings overriding ``nhcontrol.design._condensed.DAQP_DEFAULTS``
        (``primal_tol = 1e-9``, ``iter_limit = 10000``).

    Raises
    ------
    DesignError
        Bad horizon, weights or bounds (``u_min > u_max`` …), or OSQP settings OSQP refuses.

    Notes
    -----
    With ``osqp_interface="direct"`` the OSQP problem (``nhcontrol.design._osqp.WindowQP``) has
    a fixed sparsity pattern; a step overwrites the entries of ``A_j``, ``B_j`` (only when they
    changed: an LTI model keeps OSQP's factorisation), the terminal block when ``Qf`` is
    given, and the bound vectors, then warm-starts from the previous solution.

    For the cvxpy path and for Clarabel, the window is two stacked Parameters ``A_window`` (N n, n), ``B_window`` (N n, k); every
    product ``A_j @ δx_j`` multiplies a slice of a Parameter by a Variable: it is parameter-affine
    times parameter-free, hence DPP, and ``problem.is_dpp()`` is checked at construction; the
    canonicalisation is therefore done once and each step only re-evaluates the problem data
    and warm-starts the solver.
    """

    def __repr__(self) -> str:
        qp = getattr(self, "qp_solver", None) or self.solver
        return (f"LTVMPC(N={self.horizon}, nstates={self.nstates}, ninputs={self.ninputs}, "
                f"qp={str(qp).lower()!r})")

    def __init__(self, horizon: int, Q: ArrayLike, R: ArrayLike, Qf: ArrayLike | None = None, *,
                 u_min: ArrayLike | None = None, u_max: ArrayLike | None = None,
                 du_min: ArrayLike | None = None, du_max: ArrayLike | None = None,
                 x_min: ArrayLike | None = None, x_max: ArrayLike | None = None,
                 solver: Literal["OSQP", "CLARABEL"] = "OSQP",
                 on_failure: Literal["raise", "hold"] = "raise",
                 solver_options: Mapping[str, Any] | None = None,
                 fallback_options: Mapping[str, Any] | None = None,
                 osqp_interface: Literal["direct", "cvxpy"] = "direct",
                 soft_state: bool | tuple[float, float] = False,
                 y_min: ArrayLike | None = None, y_max: ArrayLike | None = None,
                 C_y: ArrayLike | None = None, D_y: ArrayLike | None = None,
                 soft_output: bool | tuple[float, float] = False,
                 qp_solver: Literal["daqp", "osqp"] = "daqp",
                 daqp_options: Mapping[str, Any] | None = None) -> None:
        if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise DesignError(f"horizon must be a positive integer number of steps, got {horizon!r}")
        Q_ = as_float_array(Q, "Q", ndim=2, error=DesignError)
        n = Q_.shape[0]
        Q_ = as_float_array(Q_, "Q", shape=(n, n), error=DesignError)
        R_ = as_float_array(R, "R", ndim=2, error=DesignError)
        k = R_.shape[0]
        R_ = as_float_array(R_, "R", shape=(k, k), error=DesignError)
        N = _checks.horizon(horizon, n=n, k=k, what="LTVMPC", error=DesignError)
        Qf_ = Q_ if Qf is None else as_float_array(Qf, "Qf", shape=(n, n), error=DesignError)
        for W, nm in ((Q_, "Q"), (R_, "R"), (Qf_, "Qf")):
            check_finite(W, nm, error=DesignError)
        check_psd(Q_, "Q")
        check_psd(R_, "R", definite=True)
        check_psd(Qf_, "Qf")
        solver = str(solver).upper()
        if solver not in ("OSQP", "CLARABEL"):
            raise DesignError(f"solver must be 'OSQP' or 'CLARABEL', got {solver!r}")
        if on_failure not in ("raise", "hold"):
            raise DesignError(f"on_failure must be 'raise' or 'hold', got {on_failure!r}")
        bounds = {}
        for (lo_name, lo, hi_name, hi, size) in (("u_min", u_min, "u_max", u_max, k),
                                                 ("du_min", du_min, "du_max", du_max, k),
                                                 ("x_min", x_min, "x_max", x_max, n)):
            lo_a = _bound(lo, lo_name, size)
            hi_a = _bound(hi, hi_name, size)
            if lo is None and lo_a is not None:
                lo_a = -lo_a
            bad = np.flatnonzero(lo_a > hi_a)
            if bad.size:
                raise DesignError(f"{lo_name} must not exceed {hi_name}; violated at components "
                                  f"{bad.tolist()}: {lo_a[bad].tolist()} > {hi_a[bad].tolist()}")
            bounds[lo_name], bounds[hi_name] = lo_a, hi_a
        # outputs: C_y fixes their number
        if C_y is None:
            if y_min is not None or y_max is not None:
                raise DesignError("output bounds y_min/y_max need the output matrices C_y (p, n) "
                                  "or (N, p, n) (and D_y for a feed-through)")
            py = 0
        else:
            Cy = as_float_array(C_y, "C_y", error=DesignError)
            if Cy.ndim not in (2, 3) or Cy.shape[-1] != n:
                raise DesignError(f"C_y must have shape (p, {n}) or ({N}, p, {n}), got {Cy.shape}")
            py = Cy.shape[-2]
        for lo_name, lo, hi_name, hi in (("y_min", y_min, "y_max", y_max),):
            lo_a, hi_a = -_bound(lo, lo_name, py), _bound(hi, hi_name, py)
            if lo is not None:
                lo_a = _bound(lo, lo_name, py)
            bad = np.flatnonzero(lo_a > hi_a)
            if bad.size:
                raise DesignError(f"y_min must not exceed y_max; violated at components "
                                  f"{bad.tolist()}: {lo_a[bad].tolist()} > {hi_a[bad].tolist()}")
            bounds[lo_name], bounds[hi_name] = lo_a, hi_a
        self.noutputs = py
        self._Cy = None if C_y is None else _output_window(C_y, "C_y", N, (py, n))
        self._Dy = None if D_y is None else _output_window(D_y, "D_y", N, (py, k))

        if osqp_interface not in ("direct", "cvxpy"):
            raise DesignError(f"osqp_interface must be 'direct' or 'cvxpy', got {osqp_interface!r}")
        self.soft_state = _soft(soft_state, "soft_state")
        self.soft_output = _soft(soft_output, "soft_output")

        self.horizon, self.nstates, self.ninputs = N, n, k
        self.Q, self.R = readonly(Q_.copy()), readonly(R_.copy())
        self.bounds = {key: readonly(v) for key, v in bounds.items()}
        self.solver = solver
        self.fallback = "CLARABEL" if solver == "OSQP" else "OSQP"
        self.on_failure = on_failure
        self.osqp_interface = osqp_interface
        self.solver_options = dict(solver_options or {})
        self.fallback_options = dict(fallback_options or {})
        self._u_last: NDArray[np.float64] | None = None
        self._slack_value = np.zeros((N, 0))
        self._slack_y_value = np.zeros((N, 0))
        self._Qf_given: Any = None
        self._duals: NDArray[np.float64] | None = None
        self._Lf_value = psd_factor(Qf_)
        self._problem: Any = None
        self._loaded: dict[str, Any] | None = None
        # components with at least one finite bound, per group (input, rate, state)
        self._idx = {g: np.flatnonzero(np.isfinite(bounds[lo]) | np.isfinite(bounds[hi]))
                     for g, lo, hi in (("u", "u_min", "u_max"), ("r", "du_min", "du_max"),
                                       ("x", "x_min", "x_max"), ("y", "y_min", "y_max"))}
        self._Qf = Qf_.copy()
        if qp_solver not in ("daqp", "osqp"):
            raise DesignError(f"qp_solver must be 'daqp' or 'osqp', got {qp_solver!r}")
        self.qp_solver = qp_solver
        self.daqp_options = dict(daqp_options or {})
        self._set_up_solvers()

    def _set_up_solvers(self) -> None:
        """The condensed DAQP problem (`qp_solver="daqp"`, when it can be used) and the direct
        OSQP problem (`osqp_interface="direct"`). With DAQP in front, OSQP is the fallback: its
        workspace (and the import of ``osqp``) is set up at the first sample that needs it,
        unless OSQP options other than `REALTIME_OSQP_SETTINGS` were given (checked by OSQP
        here, where a bad one is reported)."""
        self.qp_path_reason = ""
        self._dense: DenseWindowQP | None = None
        if self.qp_solver == "daqp":
            self._dense = self._make_dense()
        self.qp_path = "daqp" if self._dense is not None else "osqp"
        direct = self.osqp_interface == "direct"
        opts = self.solver_options if self.solver == "OSQP" else self.fallback_options
        self._qp_lazy = (direct and self._dense is not None
                         and (not opts or opts == REALTIME_OSQP_SETTINGS))
        self._qp: WindowQP | None = self._make_qp() if direct and not self._qp_lazy else None
        self._qp_Qf_stale = False
        self._last_qp: WindowQP | None = self._dense if self._dense is not None else self._qp

    def _osqp_qp(self) -> WindowQP | None:
        """The direct OSQP problem, set up now if it was left for its first use."""
        if self._qp is None and self._qp_lazy:
            self._qp = self._make_qp()          # (with the current terminal weight)
            self._qp_lazy = self._qp_Qf_stale = False
        return self._qp

    @property
    def _layout_qp(self) -> WindowQP | None:
        """The QP whose row layout the multipliers (`MPCStep.duals`) follow (both paths share
        it): for shifting them to the next window."""
        return self._dense if self._dense is not None else self._qp

    def _make_dense(self) -> DenseWindowQP | None:
        """The condensed DAQP problem, or None with the reason in `qp_path_reason` (the OSQP
        path then solves every step)."""
        why = ""
        if not daqp_available():
            why = "the daqp package is not installed (pip install daqp)"
        else:
            for name, sf in (("soft_state", self.soft_state), ("soft_output", self.soft_output)):
                if sf is not None and not sf[1] > 0:
                    why = (f"{name} has rho2 = 0: the condensed Hessian would be singular in the "
                           "slacks")
        if why:
            self.qp_path_reason = why
            _log.info("LTV-MPC: the OSQP path solves the QP: %s", why)
            return None
        return DenseWindowQP(self.horizon, self.nstates, self.ninputs, self.Q, self.R, self._Qf,
                             self._idx["u"], self._idx["r"], self._idx["x"], self.daqp_options,
                             soft=self.soft_state, iy=self._idx["y"], ny_d=self._Dy is not None,
                             soft_output=self.soft_output)

    def _make_qp(self) -> WindowQP:
        return WindowQP(self.horizon, self.nstates, self.ninputs, self.Q, self.R, self._Qf,
                        self._idx["u"], self._idx["r"], self._idx["x"],
                        self.solver_options if self.solver == "OSQP" else self.fallback_options,
                        soft=self.soft_state, iy=self._idx["y"], ny_d=self._Dy is not None,
                        soft_output=self.soft_output)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the solver objects (OSQP's workspace, cvxpy's compiled problem):
        they are rebuilt from the weights and bounds on first use (no warm start then)."""
        state = {key: val for key, val in self.__dict__.items()
                 if key not in ("_qp", "_dense", "_last_qp", "_problem", "_loaded", "_x0", "_A", "_B", "_Lf",
                                "_bound_params", "_X", "_U", "_S", "_c", "_qx", "_qu",
                                "_Cp", "_Dp", "_Sy", "_groups")}
        state["_qp"], state["_problem"], state["_loaded"] = None, None, None
        state["_dense"] = state["_last_qp"] = None
        state.pop("_qp_lazy", None)
        if callable(state.get("_duals")):
            state["_duals"] = state["_duals"]()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("soft_state", None)    # pickled before soft bounds existed
        state.setdefault("_Qf_given", None)
        state.setdefault("_duals", None)
        state.setdefault("_slack_value", np.zeros((state.get("horizon", 1), 0)))
        state.setdefault("_slack_y_value", np.zeros((state.get("horizon", 1), 0)))
        state.setdefault("soft_output", None)
        state.setdefault("noutputs", 0)
        state.setdefault("_Cy", None)
        state.setdefault("_Dy", None)
        if "_idx" in state:
            state["_idx"].setdefault("y", np.zeros(0, np.intp))
        for key in ("y_min", "y_max"):
            state["bounds"].setdefault(key, np.zeros(0))
        state.setdefault("qp_solver", "osqp")
        state.setdefault("daqp_options", {})
        state.setdefault("qp_path_reason", "")
        self.__dict__.update(state)
        self._set_up_solvers()

    def _Lf_factor(self) -> NDArray[np.float64]:
        if self._Lf_value is None:
            self._Lf_value = psd_factor(self._Qf)
        return self._Lf_value

    @property
    def problem(self) -> Any:
        """The parametrised cvxpy problem (DPP), built on first use.

        It is solved when the solver is Clarabel (first or as fallback) or with
        ``osqp_interface="cvxpy"``; the direct OSQP path does not need it.
        """
        if self._problem is None:
            self._build_problem()
        return self._problem

    def _build_problem(self) -> None:
        import cvxpy as cp

        N, n, k = self.horizon, self.nstates, self.ninputs
        bounds = self.bounds
        X = cp.Variable((N + 1, n), name="dx")
        U = cp.Variable((N, k), name="du")
        self._x0 = cp.Parameter(n, name="x0")
        # the window of A_j, B_j as two stacked Parameters (one value assignment each per step;
        # slicing a Parameter keeps the products A_j @ δx_j parameter-affine, hence DPP)
        self._A = cp.Parameter((N * n, n), name="A_window")
        self._B = cp.Parameter((N * n, k), name="B_window")
        self._Lf = cp.Parameter((n, n), name="Lf")
        self._Lf.value = self._Lf_factor()
        self._c = cp.Parameter((N, n), name="c")
        self._qx = cp.Parameter((N + 1, n), name="q_x")
        self._qu = cp.Parameter((N, k), name="q_u")
        Lq, Lr = psd_factor(self.Q), psd_factor(self.R)
        cost = (cp.sum_squares(X[:N] @ Lq.T) + cp.sum_squares(U @ Lr.T)
                + cp.sum_squares(self._Lf @ X[N]) + cp.sum(cp.multiply(self._qx, X))
                + cp.sum(cp.multiply(self._qu, U)))
        cons = [X[0] == self._x0]
        cons += [X[j + 1] == self._A[j * n:(j + 1) * n, :] @ X[j]
                 + self._B[j * n:(j + 1) * n, :] @ U[j] + self._c[j] for j in range(N)]
        ix = self._idx["x"]
        S = None
        if self.soft_state is not None and ix.size:
            S = cp.Variable((N, ix.size), name="slack", nonneg=True)
            cost = cost + self.soft_state[0] * cp.sum(S) + self.soft_state[1] * cp.sum_squares(S)
        self._S = S
        self._bound_params: dict[str, tuple[Any, NDArray[np.intp]]] = {}

        def add(name: str, expr: Any, lim: NDArray[np.float64], rows: int, upper: bool) -> None:
            idx = np.flatnonzero(np.isfinite(lim))
            if idx.size == 0:
                return
            par = cp.Parameter((rows, idx.size), name=name)
            self._bound_params[name] = (par, idx)
            cons.append(expr[:, idx] <= par if upper else expr[:, idx] >= par)

        add("u_lo", U, bounds["u_min"], N, False)
        add("u_hi", U, bounds["u_max"], N, True)
        if np.any(np.isfinite(bounds["du_min"])) or np.any(np.isfinite(bounds["du_max"])):
            # rows: δu_0 (the parameter absorbs u_prev − u_ref_0), δu_j − δu_{j−1}
            dU = cp.vstack([U[0:1]] + ([U[1:] - U[:-1]] if N > 1 else []))
            add("r_lo", dU, bounds["du_min"], N, False)
            add("r_hi", dU, bounds["du_max"], N, True)
        if S is None:
            add("x_lo", X[1:], bounds["x_min"], N, False)
            add("x_hi", X[1:], bounds["x_max"], N, True)
        else:
            # soft: the slack of component ix[j] relaxes both of its sides
            full = cp.hstack([X[1:, int(i):int(i) + 1] for i in ix]) if ix.size > 1 else X[1:, ix]
            lo_idx = np.flatnonzero(np.isfinite(bounds["x_min"][ix]))
            hi_idx = np.flatnonzero(np.isfinite(bounds["x_max"][ix]))
            for name, sel, upper in (("x_lo", lo_idx, False), ("x_hi", hi_idx, True)):
                if sel.size:
                    par = cp.Parameter((N, sel.size), name=name)
                    self._bound_params[name] = (par, ix[sel])
                    e = full[:, sel]
                    cons.append(e - S[:, sel] <= par if upper else e + S[:, sel] >= par)
        # outputs C_j δx_j + D_j δu_{min(j, N−1)}, j = 1 … N, of the bounded components
        iy = self._idx["y"]
        self._Cp = self._Dp = self._Sy = None
        if iy.size:
            py = iy.size
            self._Cp = cp.Parameter((N * py, n), name="C_y")
            self._Dp = cp.Parameter((N * py, k), name="D_y") if self._Dy is not None else None
            rows = []
            for j in range(1, N + 1):
                e = self._Cp[(j - 1) * py:j * py, :] @ X[j]
                if self._Dp is not None:
                    e = e + self._Dp[(j - 1) * py:j * py, :] @ U[min(j, N - 1)]
                rows.append(cp.reshape(e, (1, py), order="C"))
            Y = cp.vstack(rows)                                   # (N, py)
            if self.soft_output is not None:
                Sy = cp.Variable((N, py), name="slack_y", nonneg=True)
                self._Sy = Sy
                cost = cost + self.soft_output[0] * cp.sum(Sy) + self.soft_output[1] * cp.sum_squares(Sy)
            for name, lim, upper in (("y_lo", bounds["y_min"][iy], False),
                                     ("y_hi", bounds["y_max"][iy], True)):
                sel = np.flatnonzero(np.isfinite(lim))
                if sel.size:
                    par = cp.Parameter((N, sel.size), name=name)
                    self._bound_params[name] = (par, iy[sel])
                    e = Y[:, sel] if sel.size < py else Y
                    if self._Sy is not None:
                        sl = self._Sy[:, sel] if sel.size < py else self._Sy
                        e = e - sl if upper else e + sl
                    cons.append(e <= par if upper else e >= par)
        self._X, self._U = X, U
        problem = cp.Problem(cp.Minimize(cost), cons)
        if not problem.is_dpp():  # pragma: no cover - guards future edits of the QP
            raise DesignError("internal: the MPC problem is not DPP; it would be recompiled "
                              "at every step")
        self._problem = problem

    # ------------------------------------------------------------------------------------
    def _window(self, M: ArrayLike, name: str, shape: tuple[int, int]) -> NDArray[np.float64]:
        N = self.horizon
        if _ready(M, (N, *shape)):
            return M                                    # type: ignore[return-value]
        arr = as_float_array(M, name, error=DesignError)
        if arr.ndim == 2 and arr.shape == shape:
            arr = np.broadcast_to(arr, (N, *shape))
        if arr.shape != (N, *shape):
            raise DesignError(f"{name} must have shape ({N}, {shape[0]}, {shape[1]}) (one matrix "
                              f"per step of the horizon N = {N}) or {shape} for an LTI model, "
                              f"got {arr.shape}")
        return check_finite(np.asarray(arr), name, error=DesignError)

    def _bound_groups(self) -> dict[str, tuple[Any, Any, Any]]:
        """``{group: (lower, upper, idx)}`` for the groups with a finite bound: the bounds of
        their bounded components (``idx``; None when every component is bounded, no gather);
        kept while `bounds` is the same object."""
        hit = self.__dict__.get("_groups")
        if hit is not None and hit[0] is self.bounds:
            return hit[1]
        bd = self.bounds
        out = {}
        for g, lo, hi in (("u", "u_min", "u_max"), ("r", "du_min", "du_max"),
                          ("x", "x_min", "x_max")):
            idx = self._idx[g]
            if idx.size:
                full = idx.size == bd[lo].shape[0]
                out[g] = (bd[lo] if full else bd[lo][idx], bd[hi] if full else bd[hi][idx],
                          None if full else idx)
        self.__dict__["_groups"] = (bd, out)
        return out

    def _ref(self, value: ArrayLike | None, name: str, rows: int, size: int) -> NDArray[np.float64]:
        if value is None:
            return np.zeros((rows, size))
        if _ready(value, (rows, size)):
            return value                                # type: ignore[return-value]
        arr = as_float_array(value, name, error=DesignError)
        if arr.shape == (size,):
            arr = np.broadcast_to(arr, (rows, size))
        if arr.shape != (rows, size):
            raise DesignError(f"{name} must have shape ({size},) or ({rows}, {size}), got {arr.shape}")
        return check_finite(np.asarray(arr, dtype=float), name, error=DesignError)

    def _set_terminal(self, Qf: ArrayLike, trusted: bool = False) -> None:
        """A new terminal weight for this and the following steps (`step`'s ``Qf``); the same
        read-only array as the last step's is no update. ``trusted``: a Riccati solution of the
        controllers (positive semidefinite by construction: not checked again)."""
        if (Qf is self._Qf_given and isinstance(Qf, np.ndarray) and not Qf.flags.writeable):
            return                     # the same terminal weight as the last step: no update
        n = self.nstates
        self._Qf_given = Qf
        if not _ready(Qf, (n, n)):
            check_finite(as_float_array(Qf, "Qf", shape=(n, n), error=DesignError), "Qf",
                         error=DesignError)
        Qf_ = np.asarray(Qf, dtype=float)
        if not trusted:
            check_psd(Qf_, "Qf")
        self._Lf_value = None           # factored when the cvxpy path needs it
        self._Qf = Qf_.copy()
        if self._dense is not None:
            self._dense.Qf = self._Qf       # (the controller's own array, not duplicated again)
            self._qp_Qf_stale = True        # OSQP gets it when it solves (_solve_direct)
        elif self._qp is not None:
            self._qp.set_terminal(Qf_)
        if self._problem is not None:
            self._Lf.value = self._Lf_factor()

    def _shifted_bounds(self, ur: NDArray[np.float64], up: NDArray[np.float64],
                        xr: NDArray[np.float64] | None) -> dict[str, tuple[Any, Any]]:
        """The absolute bounds shifted by the references, as bounds on ``δu_j``, on the rates
        and on ``δx_j`` (``j = 1 … N``): ``{group: (lower, upper)}`` for the components with a
        bound (the others are not in the QP)."""
        shift = {}
        for g, (lo_b, hi_b, idx) in self._bound_groups().items():
            if g == "u":
                off = ur
            elif g == "r":      # rates: δu_0 − (u_prev − u_ref_0), δu_j − δu_{j−1}
                off = np.empty_like(ur)
                np.subtract(ur[0], up, out=off[0])
                np.subtract(ur[1:], ur[:-1], out=off[1:])
            else:
                off = xr[1:]                                    # type: ignore[index]
            o = off if idx is None else off[:, idx]
            shift[g] = (lo_b - o, hi_b - o)
        return shift

    def _first_input(self, ur0: NDArray[np.float64], du0: NDArray[np.float64],
                     up: NDArray[np.float64]) -> NDArray[np.float64]:
        """The absolute first input ``u_ref,0 + δu_0`` projected on the hard input bounds (it
        moves by at most the solver's primal tolerance, e.g. 3e-8 rad for OSQP's default on the
        ball-plate loop) and on the rate bounds of the first move (``u_prev ± Δu``), where they
        are compatible; remembered as the previous input of the next step."""
        bd = self.bounds
        u = np.minimum(np.maximum(ur0 + du0, bd["u_min"]), bd["u_max"])
        if self._idx["r"].size:     # (without rate bounds lo, hi are u_min, u_max: no change)
            lo = np.maximum(bd["u_min"], up + bd["du_min"])
            hi = np.minimum(bd["u_max"], up + bd["du_max"])
            ok = lo <= hi
            if ok.all():            # (np.clip's dispatch costs more than the two calls)
                u = np.minimum(np.maximum(u, lo), hi)
            else:
                u[ok] = np.minimum(np.maximum(u[ok], lo[ok]), hi[ok])
        self._u_last = u.copy()
        return u

    def _dense_step(self, x0: NDArray[np.float64], A: NDArray[np.float64],
                    B: NDArray[np.float64], up: NDArray[np.float64], ur: NDArray[np.float64],
                    Qf: NDArray[np.float64] | None, c: NDArray[np.float64] | None,
                    qx: NDArray[np.float64] | None, qu: NDArray[np.float64] | None,
                    duals: Any) -> tuple[NDArray[np.float64], ...] | None:
        """`step` for nhcontrol's own controllers on the condensed DAQP path, when DAQP answers
        "optimal": the same calls on the same arrays (the same numbers, the same state kept for
        the next step) without what these callers do not need: the checks of the window data
        they made themselves (shapes are checked, and a new terminal weight as by `step`; a
        non-finite entry of ``x0, A, B, c, q_x, q_u`` reaches the solution, which is checked,
        and `step` then names it), the solver chain, the warnings and the `MPCStep`.

        Returns ``(u, δx (N+1, n), δu (N, k), duals)``, or None when anything more is needed
        (no condensed path, state or output bounds, other shapes, a non-finite reference input,
        DAQP not "optimal"): the caller then runs `step`, which starts with the same first
        attempt, so the answer does not depend on which of the two ran."""
        dq = self._dense
        N, n, k = self.horizon, self.nstates, self.ninputs
        if (dq is None or self._idx["x"].size or self._idx["y"].size
                or A.shape != (N, n, n) or B.shape != (N, n, k) or x0.shape != (n,)
                or ur.shape != (N, k) or up.shape != (k,)
                or (c is not None and c.shape != (N, n))
                or (qx is not None and qx.shape != (N + 1, n))
                or (qu is not None and qu.shape != (N, k))
                or not (_ready(ur, (N, k)) and _ready(up, (k,)))):   # (bounds: a NaN is no bound)
            return None
        if Qf is not None:
            self._set_terminal(Qf, True)
        dq.set_window(A, B)
        dq.set_bounds(x0, self._shifted_bounds(ur, up, None), c)
        dq.set_linear(qx, qu)
        dq._had_linear = qx is not None or qu is not None
        if duals is not None and not isinstance(duals, LazyDuals):
            duals = None if np.size(duals) != dq.l.size else np.asarray(duals, dtype=float)
        dq.warm_start(None, duals)
        status, x_pred, du_pred, _ = dq.solve()
        if status != "optimal" or not (_finite(du_pred) and _finite(x_pred)):
            return None
        self._last_qp = dq
        self._slack_value, self._slack_y_value = dq.slack, dq.slack_y     # (empty: no bounds)
        self._duals = dq.lazy_duals()                 # type: ignore[assignment]
        return self._first_input(ur[0], du_pred[0], up), x_pred, du_pred, self._duals

    def _solve_direct(self, qp: WindowQP, data: dict[str, Any]) -> tuple[str, Any, Any, float]:
        """OSQP on the in-place QP, or DAQP on the condensed one: ``(status, δx, δu, cost)``
        (arrays are fresh copies)."""
        if qp is self._qp and self.__dict__.get("_qp_Qf_stale"):
            qp.set_terminal(self._Qf)
            self._qp_Qf_stale = False
        qp.set_window(data["A"], data["B"])
        if data["Cy"] is not None and qp.py:
            iy = self._idx["y"]
            qp.set_outputs(data["Cy"][:, iy], None if data["Dy"] is None else data["Dy"][:, iy])
        qp.set_bounds(data["x0"], data["shift"], data["c"])
        if data["linear"] or getattr(qp, "_had_linear", False):
            qp.set_linear(data["qx"], data["qu"])
            qp._had_linear = data["linear"]
        if data["warm"] is not None:
            (wx, wu), wy = data["warm"]
            # (the primal warm start: only OSQP uses it; DAQP starts from the active set of wy)
            z = None
            if qp is not self._dense:
                z = np.concatenate([wx.ravel(), wu.ravel(), np.zeros(qp.nz - wx.size - wu.size)])
                wy = wy() if isinstance(wy, LazyDuals) else wy
            qp.warm_start(z, wy)                                    # type: ignore[arg-type]
        out = qp.solve()
        self._last_qp = qp
        if out[1] is not None:
            self._slack_value = np.maximum(qp.slack, 0.0) if qp.slack.size else qp.slack
            self._slack_y_value = np.maximum(qp.slack_y, 0.0) if qp.slack_y.size else qp.slack_y
            # DAQP: the multipliers are mapped to the sparse layout when first read
            self._duals = (qp.lazy_duals() if qp is self._dense       # type: ignore[assignment]
                           else qp.y.copy())
        return out

    def _solve_cvxpy(self, solver: str, opts: Mapping[str, Any],
                     data: dict[str, Any]) -> tuple[str, Any, Any, float]:
        """The parametrised cvxpy problem: load this step's data (once), solve, read."""
        problem = self.problem
        if self._loaded is not data:
            N, n, k = self.horizon, self.nstates, self.ninputs
            self._x0.value = data["x0"]
            self._A.value = data["A"].reshape(N * n, n)
            self._B.value = data["B"].reshape(N * n, k)
            self._c.value = np.zeros((N, n)) if data["c"] is None else data["c"]
            self._qx.value = np.zeros((N + 1, n)) if data["qx"] is None else data["qx"]
            self._qu.value = np.zeros((N, k)) if data["qu"] is None else data["qu"]
            if self._Cp is not None:
                iy = self._idx["y"]
                self._Cp.value = data["Cy"][:, iy].reshape(-1, self.nstates)
                if self._Dp is not None:
                    self._Dp.value = data["Dy"][:, iy].reshape(-1, self.ninputs)
            for name, (par, idx) in self._bound_params.items():
                # the parameter's finite side (idx) within the group's bounded components
                lo, hi = data["shift"][name[0]]
                pos = np.searchsorted(self._idx[name[0]], idx)
                par.value = (hi if name.endswith("_hi") else lo)[:, pos]
            self._loaded = data
        problem.solve(solver=solver, warm_start=True, **opts)
        status = str(problem.status)
        if status not in _ACCEPTED or self._U.value is None or self._X.value is None:
            return status, None, None, float("nan")
        self._slack_value = (np.zeros((self.horizon, 0)) if self._S is None
                             else np.maximum(np.array(self._S.value, dtype=float), 0.0))
        self._slack_y_value = (np.zeros((self.horizon, 0)) if self._Sy is None
                               else np.maximum(np.array(self._Sy.value, dtype=float), 0.0))
        return (status, np.array(self._X.value, dtype=float), np.array(self._U.value, dtype=float),
                float(problem.value))

    def reset(self) -> None:
        """Forget the last applied input (the default ``u_prev`` of the next step)."""
        self._u_last = None

    def step(self, x0: ArrayLike, Ad: ArrayLike, Bd: ArrayLike, *,
             u_prev: ArrayLike | None = None, u_ref: ArrayLike | None = None,
             x_ref: ArrayLike | None = None, Qf: ArrayLike | None = None,
             c: ArrayLike | None = None, q_x: ArrayLike | None = None,
             q_u: ArrayLike | None = None,
             warm_start: tuple[ArrayLike, ArrayLike] | tuple[ArrayLike, ArrayLike, ArrayLike] | None = None,
             y_ref: ArrayLike | None = None, C_y: ArrayLike | None = None,
             D_y: ArrayLike | None = None, _trusted_Qf: bool = False) -> MPCStep:
        """Solve the QP for the current deviation state and return the first input.

        Parameters
        ----------
        x0 : (n,) array_like
            Current deviation state ``δx = x(t_k) − x_ref(t_k)``.
        Ad : (N, n, n) or (n, n) array_like
            Window ``A_k … A_{k+N−1}`` of the discrete model (one matrix for LTI).
        Bd : (N, n, k) or (n, k) array_like
            Window ``B_k … B_{k+N−1}``.
        u_prev : (k,) array_like, optional
            Previous absolute input ``u_{k−1}`` (for the rate bounds); default the input this
            controller returned last, or ``u_ref[0]`` at the first step.
        u_ref : (N, k) or (k,) array_like, optional
            Reference input over the window (default 0: the bounds then act on ``δu``).
        x_ref : (N+1, n) or (n,) array_like, optional
            Reference state over the window (default 0), used only by the state bounds.
        Qf : (n, n) array_like, optional
            New terminal weight (kept for the following steps).
        c : (N, n) array_like, optional
            Constant terms of the prediction model, ``δx_{j+1} = A_j δx_j + B_j δu_j + c_j``
            (the affine term of a model linearized off the reference, a disturbance estimate).
        q_x : (N+1, n) array_like, optional
            Linear cost terms ``Σ q_{x,j}ᵀ δx_j`` (a cost about a point that is not ``δx = 0``:
            ``(δx + e)ᵀ Q (δx + e) = δxᵀ Q δx + 2 eᵀ Q δx + const``).
        q_u : (N, k) array_like, optional
            Linear cost terms ``Σ q_{u,j}ᵀ δu_j``.
        warm_start : ((N+1, n), (N, k)[, duals]) array_like, optional
            Warm start ``(δx, δu)`` for the direct OSQP path, optionally with the dual vector
            `MPCStep.duals` of an earlier step (zeros otherwise); default: OSQP's own (the
            previous solution). An explicit warm start makes the step independent of any
            solve in between.
        y_ref : (N+1, p) or (p,) array_like, optional
            Reference output over the window (default 0), used only by the output bounds
            (rows ``j = 1 … N``).
        C_y, D_y : (N, p, n), (N, p, k) array_like, optional
            New output matrices of the bounded outputs for the predicted samples ``j = 1 … N``
            (or one matrix for all); kept for the following steps.

        Returns
        -------
        MPCStep

        Raises
        ------
        DesignError
            Bad shapes or non-finite data.
        SolverError
            Both solvers failed (infeasible, or numerical failure) and ``on_failure="raise"``.
        """
        N, n, k = self.horizon, self.nstates, self.ninputs
        x0v = x0 if _ready(x0, (n,)) else check_finite(
            as_float_array(x0, "x0", shape=(n,), error=DesignError), "x0", error=DesignError)
        A = self._window(Ad, "Ad", (n, n))
        B = self._window(Bd, "Bd", (n, k))
        ur = self._ref(u_ref, "u_ref", N, k)
        xr = self._ref(x_ref, "x_ref", N + 1, n) if (x_ref is not None or self._idx["x"].size) \
            else None      # used only by the state bounds
        if u_prev is not None:
            up = u_prev if _ready(u_prev, (k,)) else check_finite(
                as_float_array(u_prev, "u_prev", shape=(k,), error=DesignError), "u_prev",
                error=DesignError)
        elif self._u_last is not None:
            up = self._u_last
        else:
            up = ur[0].copy()
        if Qf is not None:
            self._set_terminal(Qf, _trusted_Qf)
        bd = self.bounds
        shift = self._shifted_bounds(ur, up, xr)
        if C_y is not None:
            if self._Cy is None:
                raise DesignError("C_y given to step() but the controller has no outputs; pass "
                                  "C_y (and y_min/y_max) to LTVMPC(...)")
            self._Cy = _output_window(C_y, "C_y", N, (self.noutputs, n))
        if D_y is not None:
            if self._Dy is None:
                raise DesignError("D_y given to step() but the controller was built without a "
                                  "feed-through; pass D_y to LTVMPC(...)")
            self._Dy = _output_window(D_y, "D_y", N, (self.noutputs, k))
        iy = self._idx["y"]
        if iy.size:
            yr = self._ref(y_ref, "y_ref", N + 1, self.noutputs)[1:, iy]
            shift["y"] = (bd["y_min"][iy] - yr, bd["y_max"][iy] - yr)
        cc = None if c is None else self._ref(c, "c", N, n)        # None: zero
        qx = None if q_x is None else self._ref(q_x, "q_x", N + 1, n)
        qu = None if q_u is None else self._ref(q_u, "q_u", N, k)
        warm = None
        lay = self._dense if self._dense is not None else self._qp
        if warm_start is not None and lay is not None:
            wx = self._ref(warm_start[0], "warm_start[0]", N + 1, n)
            wu = self._ref(warm_start[1], "warm_start[1]", N, k)
            wy = warm_start[2] if len(warm_start) >= 3 else None
            if wy is not None and not isinstance(wy, LazyDuals):     # (a controller's plan)
                wy = None if np.size(wy) != lay.l.size else np.asarray(wy, dtype=float)
            warm = ((wx, wu), wy)
        data = {"x0": x0v, "A": A, "B": B, "shift": shift, "c": cc, "qx": qx, "qu": qu,
                "linear": q_x is not None or q_u is not None, "warm": warm,
                "Cy": self._Cy, "Dy": self._Dy}

        attempts: list[tuple[str, str]] = []
        elapsed = 0.0
        # an "optimal_inaccurate" answer is kept as a candidate while the other solver is tried;
        # it is used (with a warning) only if that one does not reach "optimal"
        candidate: tuple[str, str, NDArray, NDArray, float] | None = None
        chain = [(self.solver, self.solver_options), (self.fallback, self.fallback_options)]
        if self._dense is not None:
            chain.insert(0, ("DAQP", self.daqp_options))
        for solver, opts in chain:
            t0 = time.perf_counter()
            try:
                if solver == "DAQP":
                    status, x_pred, du_pred, cost = self._solve_direct(self._dense, data)
                elif solver == "OSQP" and self._osqp_qp() is not None:
                    status, x_pred, du_pred, cost = self._solve_direct(self._qp, data)
                else:
                    status, x_pred, du_pred, cost = self._solve_cvxpy(solver, opts, data)
            except Exception as exc:  # cvxpy.error.SolverError and solver-specific errors
                status = f"solver_error ({type(exc).__name__}: {exc})"
                x_pred = du_pred = None
            elapsed += time.perf_counter() - t0
            attempts.append((solver, status))
            if status != "optimal" and solver != chain[-1][0]:
                _log.info("MPC step: %s returned %r; trying the next solver", solver, status)
            if status in _ACCEPTED and du_pred is not None and x_pred is not None:
                if _finite(du_pred) and _finite(x_pred):
                    if status == "optimal":
                        candidate = (solver, status, du_pred, x_pred, cost)
                        break
                    if candidate is None:
                        candidate = (solver, status, du_pred, x_pred, cost)
        if candidate is not None:
            solver, status, du_pred, x_pred, cost = candidate
            if status != "optimal":
                warnings.warn(f"MPC step solved by {solver} with status {status!r} (attempts: "
                              + "; ".join(f"{a}: {b}" for a, b in attempts)
                              + "); the input is used but may be inaccurate", RuntimeWarning,
                              stacklevel=2)
            u = self._first_input(ur[0], du_pred[0], up)
            return MPCStep(status=status, u=readonly(u), du=readonly(u - ur[0]),
                           predicted_x=readonly(x_pred), predicted_u=readonly(du_pred),
                           cost=cost, solve_time=elapsed, solver=solver, held=False,
                           attempts=tuple(attempts), slack=readonly(self._slack_value.copy()),
                           duals=(self._duals if solver == "DAQP" or (solver == "OSQP"
                                                                      and self._qp is not None)
                                  else None),
                           slack_output=readonly(self._slack_y_value.copy()))
        why = "; ".join(f"{s}: {st}" for s, st in attempts)
        if self.on_failure == "raise":
            raise SolverError(
                f"MPC step failed ({why}) for δx0 = {np.array2string(x0v, precision=4)}; the "
                "bounds may be infeasible from this state (relax u/du/x bounds, lengthen the "
                "horizon) or pass on_failure='hold' to keep the previous input")
        du_hold = up - ur[0]
        x_pred = np.empty((N + 1, n))
        x_pred[0] = x0v
        du_pred = np.tile(up, (N, 1)) - ur
        for j in range(N):
            x_pred[j + 1] = A[j] @ x_pred[j] + B[j] @ du_pred[j] + (0.0 if cc is None else cc[j])
        Lq, Lr, Lf = psd_factor(self.Q), psd_factor(self.R), self._Lf_factor()
        cost = float(np.sum((x_pred[:N] @ Lq.T) ** 2) + np.sum((du_pred @ Lr.T) ** 2)
                     + np.sum((Lf @ x_pred[N]) ** 2))
        warnings.warn(f"MPC step failed ({why}); holding the previous input "
                      f"{np.array2string(up, precision=4)}", RuntimeWarning, stacklevel=2)
        self._u_last = up.copy()
        return MPCStep(status=f"held: {why}", u=readonly(up.copy()), du=readonly(du_hold),
                       predicted_x=readonly(x_pred), predicted_u=readonly(du_pred), cost=cost,
                       solve_time=elapsed, solver=attempts[-1][0], held=True,
                       attempts=tuple(attempts), slack=readonly(np.zeros((N, 0))),
                       slack_output=readonly(np.zeros((N, 0))))
