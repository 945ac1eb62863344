r"""Real-time-iteration nonlinear MPC with the exact linearization.

At the sample ``t_k`` with measured ``(x, ẋ)`` the controller

1. **shifts** its previous plan by one sample (states ``X̄_j``, inputs ``ū_j``; the first
   node is the measurement, ``X̄_0 = X(t_k)``; the first plan is the reference);
2. makes every predicted node **admissible**: the linear state
   ``X = [x_ai, ẋ_ai, x_ad]`` of the partition (Eq. (4.123)) fixes ``x_ai, x_ad, ẋ_ai``; the
   dependent coordinates solve ``C(x) = 0`` (Newton, Eq. (2.109), by
   [`consistent_initial_conditions()`][nhcontrol.reference.consistent_initial_conditions]) and
   the dependent velocities ``D(x) ẋ (+ b) = 0`` (Eq. (2.76), one batched solve); the
   accelerations and multipliers come from Eq. (2.119) at the node;
3. **re-linearizes exactly** at all ``N`` nodes in one stacked call of the third procedure
   ([`linearize()`][nhcontrol.linearization.linearize], Eqs. (4.96)-(4.125), compiled path):
   ``A_j, B_j`` and the node's rate ``f_j = Ẋ̄_j``;
4. **discretizes** (zero-order hold) with one batched matrix exponential

   $$
   \exp\!\left(h\begin{bmatrix} A_j & B_j & f_j \\ 0 & 0 & 0 \\ 0 & 0 & 0\end{bmatrix}\right)
   = \begin{bmatrix} Φ_j & Γ_j & γ_j \\ 0 & I & 0 \\ 0 & 0 & 1\end{bmatrix},
   \qquad F(X̄_j, ū_j) = X̄_j + γ_j ,
   $$

   the exponential-Euler step (second order in ``h``, exact for a linear model), so the
   prediction is ``X_{j+1} ≈ F(X̄_j, ū_j) + Φ_j δX_j + Γ_j δu_j`` with the defect
   ``c_j = F(X̄_j, ū_j) − X̄_{j+1}`` (multiple shooting);
5. solves **one QP** (condensed and solved by DAQP by default, or the sparse QP by OSQP with
   ``qp_solver="osqp"``; warm-started with the previous multipliers) for
   ``δX, δu`` with the tracking cost written about the plan (linear terms
   ``2 Q (X̄_j − X_ref,j)``, ``2 R (ū_j − u_ref,j)``) and **applies** ``ū_0 + δu_0``.

With C kernels, steps 2-4 of the ``N`` nodes run in one compiled call (``design/_crti.py``: the
augmented matrix's top rows, a Padé approximant with the degree of Al-Mohy and Higham 2009;
docs/theory/nmpc.md, "The ZOH exponential in compiled code"); the numpy path below is its
fallback (no compiler, a node it declines) and gives the same numbers to round-off.

``mode="sqp"`` repeats 2-5 from the new plan until the KKT residual of the discretized
nonlinear problem (dynamics ``X_{j+1} = F(X_j, u_j)``, the same cost and bounds) is below
``sqp_tol``: the reference solution RTI approximates with one iteration per sample. The KKT
residual reported per sample (`ControlRecord.kkt_residual`) is evaluated at the last
linearization point with the multipliers of its QP: the largest of the dynamics defects
``|c_j|``, the stationarity ``‖q + A_cᵀ y‖∞`` and the complementarity of the bounds (with the
Jacobians ``Φ_j, Γ_j`` of the ZOH-discretized exact linearization).

Failure modes, each named in the sample's status (never a crash mid-run):

- ``"fallback: reference linearization"`` — the partition is ill conditioned at a predicted
  node (or a node cannot be made admissible): the QP is built about the reference instead
  (the LTV-MPC of the nominal linearization);
- ``"fallback: shifted plan"`` — the QP failed (infeasible, solver error): the next input of
  the previous plan;
- ``"fallback: lqr"`` — no plan left: the LQR ``u_ref − K_k (X − X_ref)`` of the Riccati
  schedule, clipped to the bounds.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util import checks as _checks
from .._util.errors import DesignError, NhcontrolError, SolverError
from .._util.validation import as_float_array
from .controllers import ControlRecord, RiccatiSchedule, TrackingController, _mpc_sample
from .mpc import LTVMPC, REALTIME_OSQP_SETTINGS

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition
    from nhcontrol.reference import Reference

__all__ = ["NMPCController"]


def _expm_nodes(X: NDArray[np.float64]) -> NDArray[np.float64]:
    """Exponentials of the stacked augmented matrices (N.3) by scaling and squaring.

    One scaling ``2^-s`` for the whole stack brings every 1-norm to ``≤ 0.2``; the degree-10
    Taylor polynomial (Horner) then truncates below ``0.2^11/11! ≈ 5e-16``; ``s`` squarings.
    About half the work of ``systems.discretize.expm_batch`` (degree 18) at the same accuracy
    for these small stacks (tested against ``scipy.linalg.expm`` in ``test_design_nmpc``).
    """
    norm = float(np.abs(X).sum(axis=-2).max(initial=0.0))
    s = int(max(0, np.ceil(np.log2(norm / 0.2)))) if norm > 0.2 else 0
    Y = X * (0.5 ** s)
    eye = np.eye(X.shape[-1])
    E = eye + Y / 10.0
    for j in range(9, 0, -1):
        E = eye + (Y @ E) / j
    for _ in range(s):
        E = E @ E
    return E


class _Nodes:
    """The predicted nodes as the reference ``linearize`` reads: values at the node times ``ts``
    (``values(ts)`` for the stacked call; ``x(t)`` … at one or several node times for the
    diagnostics of a failed partition check)."""

    def __init__(self, ref: Reference, ts: NDArray, x: NDArray, xd: NDArray, xdd: NDArray,
                 lam: NDArray, u: NDArray | None, parameters: Any = None) -> None:
        self.coordinates = getattr(ref, "coordinates", None)
        self.model_name = getattr(ref, "model_name", "?")
        # the prediction model's parameters (``NMPCController(p=...)``), not the reference's
        self.parameters = getattr(ref, "parameters", None) if parameters is None else parameters
        self.steady = False
        self.check_tol = getattr(ref, "check_tol", 1e-8)
        self._ts = np.asarray(ts, dtype=float)
        self._v = (x, xd, xdd, lam, u)

    def values(self, ts: Any) -> tuple:
        return self._v

    def _at(self, i: int, t: Any) -> Any:
        arr = self._v[i]
        if arr is None:
            return None
        tt = np.asarray(t, dtype=float)
        j = np.abs(self._ts[:, None] - tt.reshape(1, -1)).argmin(axis=0)
        return arr[j[0]] if tt.ndim == 0 else arr[j]

    def x(self, t: Any) -> NDArray:
        return self._at(0, t)

    def xd(self, t: Any) -> NDArray:
        return self._at(1, t)

    def xdd(self, t: Any) -> NDArray:
        return self._at(2, t)

    def lam(self, t: Any) -> NDArray:
        return self._at(3, t)

    def u(self, t: Any) -> Any:
        return self._at(4, t)


class NMPCController(TrackingController):
    """Nonlinear MPC by real-time iteration (``mode="rti"``) or SQP (``mode="sqp"``).

    Parameters
    ----------
    cm : CompiledModel
        The prediction model (may differ from the plant: a 10 % larger ball …).
    reference : Reference
        Tracked motion (``x0, ẋ0`` give ``X_ref``; ``u0`` the input target and first plan).
    partition : Partition or mapping
        Partition of the linearization (Eq. (4.96)); its linear state
        ``X = [x_ai, ẋ_ai, x_ad]`` is the QP's state.
    horizon : int
        ``N``.
    Q, R : array_like
        Weights of ``X − X_ref`` (ns × ns, order of ``LinearizationResult.states``) and of
        ``u − u_ref``.
    Qf : array_like, optional
        Terminal weight (``terminal="fixed"``) and end condition of the Riccati recursion
        (default ``Q``).
    dt : float
        Sample time [s].
    p : optional
        Parameters of the prediction model (defaults: the reference's).
    mode : {"rti", "sqp"}
    sqp_max_iter : int
        Iteration limit of the SQP (status ``"sqp: not converged"`` when reached).
    sqp_tol : float
        Relative KKT tolerance of the SQP: it stops when the residual is below
        ``sqp_tol · max(1, residual of the first iterate)``.
    terminal : {"riccati", "fixed"}
        ``"riccati"`` (default): ``P_{k+N}`` of the finite-horizon Riccati recursion along the
        reference (its exact linearization, ZOH-discretized), as in
        [`MPCController`][nhcontrol.design.MPCController]; also the gains of the LQR fallback.
    steps : int, optional
        Samples the controller will run (length of the Riccati schedule of a non-periodic
        reference; default: the reference's ``t_range``).
    lqr_model : DiscreteLTV, optional
        The discretized linearization along the reference for the Riccati schedule (computed
        when omitted).
    report_kkt : bool, optional
        Evaluate the KKT residual (N.7) of every sample (``ControlRecord.kkt_residual``;
        ``nan`` when off). Default: on for SQP (its stopping test), off for RTI (about 0.1-0.3 ms
        per sample).
    state_bounds : {"absolute", "error"}
        Whether ``x_min, x_max`` bound the linear state ``X`` itself (a steering angle) or its
        error ``X − X_ref``.
    **mpc_options
        ``u_min, u_max, du_min, du_max, x_min, x_max`` (on ``X`` or ``X − X_ref``, see
        ``state_bounds``; predicted samples ``j = 1 … N``), ``soft_state``, output bounds
        ``y_min, y_max`` on ``y = C_y X + D_y u`` (absolute; ``C_y`` in the order of `states`)
        with ``soft_output``, ``solver_options``, ``qp_solver`` (``"daqp"``: the condensed QP
        by DAQP, default; ``"osqp"``), ``daqp_options`` of [`LTVMPC`][nhcontrol.design.LTVMPC].

    Notes
    -----
    On a linear model the exponential-Euler step is the exact ZOH discretization and the
    linearization is the same at every node, so one RTI step is the LTV-MPC step and the SQP
    stops after its second QP (tested).
    """

    def __init__(self, cm: CompiledModel, reference: Reference,
                 partition: Partition | Mapping[str, Any], horizon: int, Q: ArrayLike,
                 R: ArrayLike, Qf: ArrayLike | None = None, *, dt: float,
                 p: ArrayLike | Mapping[str, float] | None = None,
                 mode: Literal["rti", "sqp"] = "rti", sqp_max_iter: int = 50,
                 sqp_tol: float = 1e-6, terminal: Literal["riccati", "fixed"] = "riccati",
                 steps: int | None = None, lqr_model: Any = None, t0: float = 0.0,
                 feedforward: Literal["midpoint", "sample"] = "midpoint",
                 state_bounds: Literal["absolute", "error"] = "absolute",
                 report_kkt: bool | None = None, **mpc_options: Any) -> None:
        from ..linearization import Partition, linearize
        from ..reference._eval import ModelEvaluator

        if mode not in ("rti", "sqp"):
            raise DesignError(f"mode must be 'rti' or 'sqp', got {mode!r}")
        if terminal not in ("riccati", "fixed"):
            raise DesignError(f"terminal must be 'riccati' or 'fixed', got {terminal!r}")
        if state_bounds not in ("absolute", "error"):
            raise DesignError(f"state_bounds must be 'absolute' or 'error', got {state_bounds!r}")
        self.cm, self.mode, self.state_bounds = cm, mode, state_bounds
        self.report_kkt = (mode == "sqp") if report_kkt is None else bool(report_kkt)
        self.sqp_max_iter = _checks.positive_int(sqp_max_iter, "sqp_max_iter", what="NMPCController",
                                                 error=DesignError)
        self.sqp_tol = _checks.positive_real(sqp_tol, "sqp_tol", what="NMPCController", error=DesignError)
        self.partition = partition if isinstance(partition, Partition) else Partition.from_dict(partition)
        self.idx = self.partition.indices(cm)
        self._linearize = linearize
        from .._util.validation import COND_MAX
        self._lin_tol = float(getattr(reference, "check_tol", 1e-8))
        self._cond_max = COND_MAX
        self._attach_compiled()
        self.ev = ModelEvaluator(cm, getattr(reference, "parameters", None) if p is None else p)
        n, m, l = self.idx.n, self.idx.m, self.idx.l
        self.n, self.m, self.l, self.k = n, m, l, int(cm.ninputs)
        ai, ad = np.asarray(self.idx.ai), np.asarray(self.idx.ad)
        self._ai, self._ad, self._d = ai, ad, np.asarray(self.idx.d)
        self._dep = np.concatenate([ad, self._d]).astype(int)        # dependent velocities
        self._red = np.concatenate([ai, n + ai, ad]).astype(np.intp)  # X of [x, ẋ] (`reduce`)
        self.ns = 2 * ai.size + ad.size
        coords = tuple(cm.coordinates)
        self.states = (tuple(coords[i] for i in ai) + tuple(f"{coords[i]}_d" for i in ai)
                       + tuple(coords[i] for i in ad))
        ns, k = self.ns, self.k
        N = _checks.horizon(horizon, n=ns, k=k, what="NMPCController", error=DesignError, multiple=6,
                            extra_steps=steps if isinstance(steps, int) and steps > 0 else 0)
        self.horizon = N
        self.Q = as_float_array(Q, "Q", shape=(ns, ns), error=DesignError)
        self.R = as_float_array(R, "R", shape=(k, k), error=DesignError)
        self.Qf = self.Q if Qf is None else as_float_array(Qf, "Qf", shape=(ns, ns), error=DesignError)
        self.terminal = terminal
        mpc_options.setdefault("on_failure", "raise")
        # real time: no solution polishing (one factorisation less per sample) and OSQP's
        # termination checked every 5 iterations (about 20 % fewer iterations warm-started),
        # unless asked otherwise
        mpc_options["solver_options"] = {**REALTIME_OSQP_SETTINGS,
                                         **dict(mpc_options.get("solver_options") or {})}
        if mpc_options.get("osqp_interface", "direct") != "direct":
            raise DesignError("NMPCController uses the direct OSQP interface")
        self.mpc = LTVMPC(N, self.Q, self.R, self.Qf, **mpc_options)
        super().__init__(reference, dt, t0=t0, feedforward=feedforward,
                         inputs=tuple(cm.inputs))
        h = self.dt
        if steps is None:
            tr = getattr(reference, "t_range", None)
            steps = int(np.ceil((tr[1] - self.t0) / h)) if tr else 10 * N
        self.steps = int(steps)
        # Riccati schedule along the reference: terminal weights and the LQR fallback
        if lqr_model is None:
            from ..systems import LTVSystem, discretize
            period = getattr(reference, "period", None)
            per = 1 if getattr(reference, "steady", False) else None   # LTI: one step repeats
            if period and per is None:
                r = period / h
                per = int(round(r)) if abs(r - round(r)) < 1e-9 * max(1.0, r) else None
            full = LTVSystem.from_linearization(cm, reference, self.partition)
            nst = per if per else self.steps + 6 * N
            lqr_model = discretize(full, h, t0=self.t0, steps=nst)
            period_steps = per
        else:
            period_steps = getattr(lqr_model, "period_steps", None)
        Ad, Bd = np.asarray(lqr_model.Ad), np.asarray(lqr_model.Bd)
        self.schedule = RiccatiSchedule(Ad, Bd, period_steps, self.steps, N, self.Q, self.R,
                                        self.Qf)
        self._plan: tuple | None = None

    # ------------------------------------------------------------------ model pieces
    _COMPILED = ("_lin_n", "_core", "_core_pending", "_raw")

    def _attach_compiled(self) -> None:
        """The compiled routines of this model and partition: the stacked linearization
        (what `linearize` runs for N > 1 nodes on the C backend; None on the numpy backend),
        the whole model work of a sample (admissible nodes, accelerations, linearization, ZOH
        exponentials) in one compiled call (`_crti`; None: the numpy path of `_model`; right
        after a cold model build it may still be compiling in the background, and `_model`
        asks again until it is there) and the raw N-point kernels."""
        from .._util.validation import INPUT_CONSTRAINT_ATOL
        from ..linearization import _cpoint
        cm = self.cm
        fast = (_cpoint.point_function(cm, self.idx, INPUT_CONSTRAINT_ATOL)
                if getattr(cm, "backend", None) == "c" else None)
        self._lin_n = None if fast is None else fast.many
        self._core, self._core_pending = None, fast is not None
        if self._core_pending:
            self._ask_core()
        self._raw = self._raw_kernels(cm)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the compiled routines (foreign-function objects): the receiving
        process attaches its own from its kernel cache (`__setstate__`), so a controller can
        be sent to Dask workers; the plan (warm start) and the history travel with it."""
        return {key: val for key, val in self.__dict__.items() if key not in self._COMPILED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._attach_compiled()

    @staticmethod
    def _raw_kernels(cm: CompiledModel) -> dict[str, tuple]:
        """The N-point C kernels of ``D`` and ``dynamics_terms`` that `CompiledModel` calls for
        stacked points (the same numbers), called directly in the loop: ``{name: (kernel,
        [(start, stop, shape)] of its outputs)}``; empty on the numpy backend."""
        ck = getattr(cm, "_ck", None)
        if ck is None or getattr(cm, "backend", None) != "c":
            return {}
        out = {}
        for name, args in (("D", ["x", "u", "p"]), ("dynamics_terms", ["x", "xd", "u", "p"])):
            spec = ck.layout["functions"].get(name)
            fn = ck.raw_many.get(name)
            if spec is None or fn is None or list(spec["args"]) != args:
                continue
            out[name] = (fn, [(int(a), int(a) + int(z), tuple(sh)) for a, z, sh in spec["outputs"]])
        return out

    def _stacked(self, name: str, *args: NDArray) -> tuple | None:
        """Outputs of the raw N-point kernel ``name`` at stacked float64 arguments (``p`` the
        prediction model's), or None (no such kernel, a non-finite output: the validating
        path of `CompiledModel` decides and names the problem)."""
        hit = self._raw.get(name)
        p = self.ev.p
        if hit is None or not (type(p) is np.ndarray and p.ndim == 1):
            return None
        fn, outs = hit
        Nn = args[0].shape[0]
        try:
            o = fn(*args, p[None], Nn)
        except MemoryError:
            return None
        if not np.isfinite(o).all():
            return None
        return tuple(o[:, a:b].reshape((Nn, *shape)) for a, b, shape in outs)

    def reduce(self, x: NDArray, xd: NDArray) -> NDArray[np.float64]:
        """Linear state ``X = [x_ai, ẋ_ai, x_ad]`` of ``(x, ẋ)`` (stacked over the last axis)."""
        return np.concatenate((x, xd), axis=-1)[..., self._red]

    def _admissible(self, X: NDArray, xguess: NDArray, U: NDArray) -> tuple[NDArray, NDArray]:
        """Full admissible ``(x, ẋ)`` (N, n) of the linear states ``X`` (N, ns)."""
        na, nad = self._ai.size, self._ad.size
        Nn = X.shape[0]
        x = np.array(xguess, dtype=float, copy=True)
        x[:, self._ai] = X[:, :na]
        x[:, self._ad] = X[:, 2 * na:2 * na + nad]
        xd = np.zeros_like(x)
        xd[:, self._ai] = X[:, na:2 * na]
        if self.m:
            from ..reference import consistent_initial_conditions
            for j in range(Nn):
                ic = consistent_initial_conditions(
                    self.cm, x[j], xd[j], partition=self.partition,
                    u=U[j] if self.k else None, p=self.ev.p)
                x[j], xd[j] = ic.x, ic.xd
            return x, xd
        if self.l:
            Uu = U if self.k else None
            got = self._stacked("D", x, U) if self.k else None
            D = self.ev.D(x, Uu) if got is None else np.reshape(got[0], (x.shape[0], self.l, self.n))
            dep = self._dep
            rhs = -np.einsum("nij,nj->ni", D[:, :, self._ai], xd[:, self._ai])
            if getattr(self.cm, "affine_names", ()):
                rhs = rhs - self.ev.b(x, Uu)
            xd[:, dep] = np.linalg.solve(D[:, :, dep], rhs[..., None])[..., 0]
        return x, xd

    def _accelerations(self, x: NDArray, xd: NDArray, U: NDArray) -> tuple[NDArray, NDArray]:
        """``ẍ, Λ`` of Eq. (2.119) at admissible stacked points (no Baumgarte term needed)."""
        ev, n, ml = self.ev, self.n, self.m + self.l
        Uu = U if self.k else None
        fused = getattr(self.cm, "dynamics_terms", None)
        got = self._stacked("dynamics_terms", x, xd, U) if self.k else None
        if got is not None:                # the same kernel, called directly
            Nn = x.shape[0]
            M, Qv, D, Qd = got
            M, Qv = np.reshape(M, (Nn, n, n)), np.reshape(Qv, (Nn, n))
            D = np.reshape(D, (Nn, ml, n)) if ml else None
            Qd = np.reshape(Qd, (Nn, ml)) if ml else None
        elif fused is not None:            # one generated function for M, Q, D, Qd (stacked)
            terms = fused(x, xd, Uu, ev.p)
            Nn = x.shape[0]
            M = np.reshape(terms.M, (Nn, n, n))
            Qv = np.reshape(terms.Q, (Nn, n))
            D = np.reshape(terms.D, (Nn, ml, n)) if ml else None
            Qd = np.reshape(terms.Qd, (Nn, ml)) if ml else None
        else:
            M, Qv = ev.M(x, Uu), ev.Q(x, xd, Uu)
            D = ev.D(x, Uu) if ml else None
            Qd = ev.Qd(x, xd, Uu, None) if ml else None
        if not ml:
            return np.linalg.solve(M, Qv[..., None])[..., 0], np.zeros((x.shape[0], 0))
        Nn = x.shape[0]
        K = np.zeros((Nn, n + ml, n + ml))
        K[:, :n, :n] = M
        K[:, :n, n:] = np.transpose(D, (0, 2, 1))
        K[:, n:, :n] = D
        sol = np.linalg.solve(K, np.concatenate([Qv, Qd], axis=1)[..., None])[..., 0]
        return sol[:, :n], sol[:, n:]

    def _ask_core(self) -> None:
        """The compiled core once its background build is over (`_crti.rti_core`)."""
        from ._crti import PENDING, rti_core
        core = rti_core(self.cm, self.idx, self._lin_tol, self._cond_max, wait=False)
        if core is not PENDING:
            self._core, self._core_pending = core, False

    def _model(self, ts: NDArray, X: NDArray, U: NDArray, xguess: NDArray
               ) -> tuple[NDArray, NDArray, NDArray, NDArray]:
        """``Φ_j, Γ_j, F(X̄_j, ū_j)`` at the nodes and their full coordinates: by the compiled
        core when it answers, else (and on any node it declines) by numpy, which raises or
        warns with the full message."""
        if self._core_pending:
            self._ask_core()
        core = self._core
        if core is not None:
            got = core(X, xguess, U, self.ev.p, self.dt)
            if got is not None:
                return got[1], got[2], got[3], got[0]
        x, xd = self._admissible(X, xguess, U)
        xdd, lam = self._accelerations(x, xd, U)
        got = None
        if (self._lin_n is not None and ts.size > 1 and math.isfinite(
                float(xd.sum() + x.sum() + xdd.sum() + lam.sum()))):
            # the stacked compiled Steps 1-7 that `linearize` calls for these nodes (the same
            # numbers), without building its result; None: `linearize` decides (and names the
            # point that fails)
            got = self._lin_n(x, xd, xdd, lam, U if self.k else None, self.ev.p, False,
                              self._lin_tol, self._cond_max)
        if got is not None:
            A, B = got[0], got[1]
        else:
            nodes = _Nodes(self.reference, ts, x, xd, xdd, lam, U if self.k else None, self.ev.p)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lin = self._linearize(self.cm, nodes, self.partition, ts, check=False)
            A, B = np.asarray(lin.A), np.asarray(lin.B)
        f = self.reduce(xd, xdd)                     # Ẋ = [ẋ_ai, ẍ_ai, ẋ_ad]
        ns, k = self.ns, self.k
        E = np.zeros((ts.size, ns + k + 1, ns + k + 1))
        E[:, :ns, :ns] = A
        E[:, :ns, ns:ns + k] = B
        E[:, :ns, -1] = f
        Ex = _expm_nodes(E * self.dt)
        Phi, Gam, gam = Ex[:, :ns, :ns], Ex[:, :ns, ns:ns + k], Ex[:, :ns, -1]
        return Phi, Gam, X + gam, x

    def _plan_outputs(self, Xbar: NDArray, Ubar: NDArray) -> NDArray[np.float64] | None:
        """Outputs ``C_j X̄_j + D_j ū_j`` of the plan (rows ``j = 0 … N``; the last input held):
        the output bounds of the QP in ``δX, δu`` act on the absolute ``y = C X + D u``."""
        mpc = self.mpc
        if not mpc.noutputs or mpc._Cy is None:
            return None
        N = self.horizon
        y = np.zeros((N + 1, mpc.noutputs))
        y[1:] = np.einsum("jpn,jn->jp", mpc._Cy, Xbar[1:])
        if mpc._Dy is not None:
            y[1:] += np.einsum("jpk,jk->jp", mpc._Dy, np.concatenate((Ubar[1:], Ubar[-1:])))
        return y

    # ------------------------------------------------------------------ protocol
    def memory_labels(self) -> list[str]:
        return [f"{u}_prev" for u in self.inputs] + ["started"]

    def _initial_memory(self) -> NDArray[np.float64]:
        return np.zeros(self.k + 1)

    def reset(self) -> None:
        super().reset()
        self.mpc.reset()
        self._plan = None
        self._ref_block = None

    def _reference_window(self, k: int, t: float) -> tuple[NDArray, NDArray]:
        """``(X_ref, u_ref)`` of the samples ``k … k+N`` (reduced states) and ``k … k+N−1``
        (`_read_ahead`)."""
        N, kin = self.horizon, self.k

        def evaluate(tb: NDArray) -> tuple[NDArray, NDArray]:
            ref = self.reference
            return (self.reduce(np.asarray(ref.x(tb)), np.asarray(ref.xd(tb))),
                    np.atleast_2d(self.u_ref(tb[:-1])).reshape(tb.size - 1, kin))
        o, (X, U) = self._read_ahead("_ref_block", k, t, N + 1, evaluate)
        return X[o:o + N + 1], U[o:o + N]

    def _compute(self, t: float, x: NDArray, xd: NDArray, memory: NDArray
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64], ControlRecord, dict]:
        start = time.perf_counter()
        N, ns, kin, h = self.horizon, self.ns, self.k, self.dt
        k = self.index(t)
        ref = self.reference
        tn = t + h * np.arange(N + 1)
        Xref, uref = self._reference_window(k, t)
        u_prev = memory[:kin] if memory[kin] > 0.5 else uref[0]
        X0 = self.reduce(np.asarray(x, float), np.asarray(xd, float))
        # 1. shift the plan (or start from the reference)
        if self._plan is not None and k - self._plan[0] == 1:
            _, Xp, Up, xp, duals = self._plan
            Xbar = np.concatenate((Xp[1:], Xp[-1:]))     # (2-D: as vstack, less overhead)
            Ubar = np.concatenate((Up[1:], Up[-1:]))
            qp = self.mpc._layout_qp
            duals = None if duals is None or qp is None else qp.shift_duals(duals)
            xguess = np.concatenate((xp[1:], xp[-1:]))
        else:
            Xbar, Ubar, duals = Xref.copy(), uref.copy(), None
            xguess = np.asarray(ref.x(tn[:N]), dtype=float)
        Xbar[0] = X0
        xguess = np.array(xguess[:N], dtype=float)
        xguess[0] = x
        Qf = self.schedule.P(k + N) if self.terminal == "riccati" else None
        status, slack, kkt, iters = "", 0.0, float("nan"), 0
        side: dict[str, Any] = {}
        u: NDArray | None = None
        max_iter = 1 if self.mode == "rti" else self.sqp_max_iter
        fallback_lin = ""
        hist: list[float] = []
        for it in range(max_iter):
            try:
                Phi, Gam, F, xfull = self._model(tn[:N], Xbar[:N], Ubar, xguess)
            except (NhcontrolError, np.linalg.LinAlgError) as exc:
                if it:
                    break          # keep the last good SQP iterate
                # named fallback: the QP about the reference (the nominal LTV-MPC step)
                fallback_lin = f"fallback: reference linearization ({str(exc).split(';')[0][:120]})"
                Xbar, Ubar = Xref.copy(), uref.copy()
                xguess = np.asarray(ref.x(tn[:N]), dtype=float)
                try:
                    Phi, Gam, F, xfull = self._model(tn[:N], Xbar[:N], Ubar, xguess)
                except (NhcontrolError, np.linalg.LinAlgError) as exc2:
                    u, status = self._fallback(k, X0 - Xref[0], uref[0], u_prev,
                                               f"model: {str(exc2).split(';')[0][:120]}")
                    break
            c = F - Xbar[1:]
            e = Xbar - Xref
            qx = 2.0 * e @ self.Q
            Pn = self.mpc._Qf if Qf is None else Qf
            qx[N] = 2.0 * Pn @ e[N]
            qu = 2.0 * (Ubar - uref) @ self.R
            warm = (np.zeros((N + 1, ns)), np.zeros((N, kin)), duals)
            try:
                # the condensed DAQP step without the checks of data made here when it answers
                # (not when KKT residuals are reported: they need the `MPCStep`), else `step`
                u, status, slack, dX, dU, duals, st = _mpc_sample(
                    self.mpc, X0 - Xbar[0], Phi, Gam, u_prev, Ubar, Qf, warm,
                    lean=not self.report_kkt, c=c, qx=qx, qu=qu,
                    x_ref=Xbar if self.state_bounds == "absolute" else e,
                    y_ref=self._plan_outputs(Xbar, Ubar))
            except SolverError as exc:
                if it:
                    break
                u, status = self._fallback(k, X0 - Xref[0], uref[0], u_prev,
                                           str(exc).split(";")[0][:160])
                break
            if st is not None:
                qp = self.mpc._last_qp
                # (the multipliers of the DAQP or OSQP answer; none when Clarabel answered)
                res = (qp.kkt_at_zero(st.duals) if qp is not None and self.report_kkt
                       and st.duals is not None else None)
                kkt = max(res.values()) if res else float("nan")
                if res:
                    hist.append(kkt)
            iters = it + 1
            Xbar, Ubar = Xbar + dX, Ubar + dU
            xguess = xfull
            if it == 0:
                kkt0 = max(kkt, 1.0)
            if self.mode == "sqp" and kkt <= self.sqp_tol * kkt0:
                break
        else:
            if self.mode == "sqp":
                status = f"sqp: not converged ({max_iter} iterations, KKT {kkt:.3g})"
        if u is None:
            u, status = self._fallback(k, X0 - Xref[0], uref[0], u_prev, "no iterate")
        elif iters:
            side["_plan"] = (k, Xbar, Ubar, np.concatenate((xguess, xguess[-1:])), duals)
            if fallback_lin:
                status = fallback_lin
        mem = np.concatenate([u, [1.0]])
        rec = ControlRecord(float(t), u, status, time.perf_counter() - start, slack, iters, kkt,
                            kkt_history=tuple(hist))
        return u, mem, rec, side

    def _fallback(self, k: int, e0: NDArray, u0: NDArray, u_prev: NDArray, why: str
                  ) -> tuple[NDArray[np.float64], str]:
        b = self.mpc.bounds
        if self._plan is not None and 0 < k - self._plan[0] < self.horizon:
            u = np.clip(self._plan[2][k - self._plan[0]], b["u_min"], b["u_max"])
            return u, f"fallback: shifted plan ({why})"
        u = u0 - self.schedule.K(k) @ e0
        u = np.clip(u, np.maximum(b["u_min"], u_prev + b["du_min"]),
                    np.minimum(b["u_max"], u_prev + b["du_max"]))
        return u, f"fallback: lqr ({why})"
