"""Extended Kalman filter on the constraint manifold, with the exact Jacobians of the third
procedure (thesis Sect. 4.2.3) and of the declared outputs.

The state of the filter is the minimal state of a partition (Eq. (4.123)),
``X = [x_ai, ẋ_ai, x_ad]`` — absolute values, not deviations. Every estimate is a point of
the constraint manifold: the dependent coordinates ``x_d`` solve ``C(x) = 0`` (Newton) and the
``m + l`` dependent velocities ``D_dd ẋ_dd = −(D_ai ẋ_ai + b)`` (Eq. (2.76)), recomputed after
every prediction and every measurement update. One sample of length ``dt``:

* **prediction** — the nonlinear equations of motion (the index-1 form, Eq. (2.119),
  ``[[M, Dᵀ], [D, 0]] [ẍ; Λ] = [Q; Q_d]``) integrated with the input held (classical
  Runge–Kutta, ``substeps`` steps) from the estimate, then projected onto the manifold; the
  covariance ``P⁻ = A_d Z A_dᵀ + B_d Q_w B_dᵀ + Q_x`` with ``A_d = e^{A dt}``,
  ``B_d = ∫_0^{dt} e^{Aτ} dτ B`` from the exact ``A, B`` of the third procedure at the
  estimate (``Q_w``: covariance of a disturbance added to the held input, as the seeded
  process noise of `nhcontrol.simulate.output_feedback_loop` does);
* **update** — ``S = H P⁻ Hᵀ + R_n``, ``K = P⁻ Hᵀ S⁻¹``, ``X⁺ = X⁻ + K (y − h(x⁻, ẋ⁻, u))``,
  ``Z = (I − K H) P⁻ (I − K H)ᵀ + K R_n Kᵀ`` (Joseph form) with ``H`` the output matrix of the
  declared outputs through the partition (`nhcontrol.linearization.outputs`) at the prior estimate.

The Jacobians come from the generated kernels (``linearization_terms``, ``output_terms``) and the
one-point Steps 1-7 (`nhcontrol.linearization._point`), or from the prepared linearizer
``cm.linearizer(partition)`` when the model offers one (its admissibility and conditioning
checks on).

Models with first-order states ``z`` (``add_first_order_states``, ``set_rates``: pressures,
currents, ``ż = H(x, ẋ, z, u)``, thesis Sect. 7.2) are estimated in ``[x_ai, ẋ_ai, x_ad, z]``:
the prediction integrates ``ż = H`` beside the mechanics, ``A, B`` are the Jacobian of Sect. 7.2
(`nhcontrol.linearization.linearize_first_order_system`) at the estimate, ``H`` has the columns
``∂h/∂z``; the filter's inputs are the model's other inputs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util import checks as _checks
from .._util.work import check_iterations
from .._util.errors import DesignError, PartitionError, SolverError
from .._util.fastlinalg import solve as _solve
from .._util.validation import as_float_array
from ._weights import check_psd

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition

__all__ = ["ExtendedKalmanFilter"]

Array = NDArray[np.float64]


def _expm(E: Array) -> Array:
    """Matrix exponential of a small matrix: scaling so that ``‖E/2^s‖₁ <= 1/4``, Taylor
    polynomial of degree 16 (truncation ``< 4^-17/17! ≈ 2e-25``, below round-off), ``s``
    squarings. (scipy's ``expm`` took 20-50 ms on some of these sparse matrices: its
    structure detection and norm estimation, not the arithmetic.)"""
    nrm = float(np.max(np.sum(np.abs(E), axis=0))) if E.size else 0.0
    s = max(0, int(math.ceil(math.log2(nrm / 0.25)))) if nrm > 0.25 else 0
    X = E / (2.0 ** s)
    n = E.shape[0]
    F = np.eye(n) + X / 16.0
    for j in range(15, 0, -1):
        F = np.eye(n) + (X @ F) / j
    for _ in range(s):
        F = F @ F
    return F


class _EstimatePoint:
    """The current estimate as a one-point reference (``x``, ``ẋ``, ``u``, parameters) for the
    partition checks of `nhcontrol.linearization.partition` (conditioning, `suggest_partition`)."""

    steady = False

    def __init__(self, ekf: "ExtendedKalmanFilter") -> None:
        self._e = ekf
        self.parameters = ekf.p
        self.coordinates = tuple(ekf.cm.coordinates)

    def x(self, t: Any) -> Array:
        return self._e.x

    def xd(self, t: Any) -> Array:
        return self._e.xd

    def xdd(self, t: Any) -> Array:
        e = self._e
        return e._accelerations(e.x, e.xd, e._ua(e.u))[0]

    def lam(self, t: Any) -> Array:
        e = self._e
        return e._accelerations(e.x, e.xd, e._ua(e.u))[1]

    def u(self, t: Any) -> Array:
        return self._e._ua(self._e.u)


class _RatePoint:
    """The estimate as a one-point reference for `linearize_first_order_system` (the path
    without C kernels): its values, and input rates ``ud`` with ``ż0 = H`` in the entries of the
    first-order states (the rate equation holds at the estimate by construction; the check
    runs)."""

    steady = False
    lam_source = "given"
    has_input_rates = True

    def __init__(self, cm: CompiledModel, x: Array, xd: Array, xdd: Array, lam: Array, u: Array,
                 ud: Array, p: Array) -> None:
        self.coordinates = tuple(cm.coordinates)
        self.model_name = str(getattr(cm, "name", ""))
        self.parameters = p
        self._v = (x, xd, xdd, lam, u)
        self._ud = ud

    def values(self, ts: Any) -> tuple[Array, ...]:
        if np.ndim(ts) == 0:
            return self._v
        N = np.shape(ts)[0]
        return tuple(np.broadcast_to(v, (N, v.shape[0])) for v in self._v)

    def _one(self, v: Array, ts: Any) -> Array:
        return v if np.ndim(ts) == 0 else np.broadcast_to(v, (np.shape(ts)[0], v.shape[0]))

    def x(self, t: Any) -> Array:
        return self._one(self._v[0], t)

    def xd(self, t: Any) -> Array:
        return self._one(self._v[1], t)

    def xdd(self, t: Any) -> Array:
        return self._one(self._v[2], t)

    def lam(self, t: Any) -> Array:
        return self._one(self._v[3], t)

    def u(self, t: Any) -> Array:
        return self._one(self._v[4], t)

    def ud(self, t: Any) -> Array:
        return self._one(self._ud, t)


class ExtendedKalmanFilter:
    """Extended Kalman filter of a constrained multibody model in the minimal state of a partition.

    Parameters
    ----------
    cm : CompiledModel
        With declared outputs (`MultibodySystem.add_output`): the measurements ``y = h(x, ẋ, u)``.
    partition : Partition or mapping
        ``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)); the filter state is ``[x_ai, ẋ_ai, x_ad]`` (and ``z``).
    dt : float
        Sample time of the measurements (and of the held inputs).
    Rn : (q, q) array_like
        Measurement-noise covariance (positive definite).
    x0, xd0 : (n,) array_like
        Initial estimate (projected onto the manifold).
    P0 : (ns, ns) array_like
        Covariance of the initial estimate (``ns = 2(n − m − l) + l + r``, ``r`` first-order
        states).
    Qw : (k, k) array_like, optional
        Covariance of a disturbance added to the input held over one sample (default zero;
        ``k``: the model's inputs other than first-order states).
    Qx : (ns, ns) array_like, optional
        Additional process-noise covariance per sample on the minimal state (default zero).
    u0 : (k,) array_like, optional
        Input held before the first sample (zeros).
    p : array_like or mapping, optional
        Parameters (defaults).
    z0 : (r,) array_like
        Initial estimate of the first-order states (required when the model has them).
    t0 : float
        Time of the first sample.
    substeps : int, default 4
        Runge–Kutta steps per sample of the prediction.
    tol : float, default 1e-12
        Tolerance of the projection onto the manifold (``max |C|``).
    check_partition : bool, default True
        Check at every prediction that the blocks ``D_dd``, ``∂C/∂x_d``, ``B̄_ad`` of the
        partition are well conditioned at the estimate (``cond < cond_max``), and raise
        `PartitionError` as [`nhcontrol.linearize()`][nhcontrol.linearize] does — naming the
        block, the coordinates, the condition number and a partition that works at the
        estimate (`suggest_partition`).
    cond_max : float, default 1e10

    Attributes
    ----------
    x, xd : (n,) ndarray
        Current estimate of coordinates and velocities (on the manifold).
    z : (r,) ndarray
        Current estimate of the first-order states (empty without).
    X : (ns,) ndarray
        Current estimate in the minimal state ``[x_ai, ẋ_ai, x_ad, z]``.
    P : (ns, ns) ndarray
        Its covariance (a priori after `predict()`, a posteriori after `correct()`).
    states, outputs, inputs : tuple of str
    t : float
        Time of the current estimate.

    Examples
    --------
    See docs/guide/estimation.md and examples/bicycle_ekf.py.
    """

    def __init__(self, cm: CompiledModel, partition: Partition | Mapping[str, Any], dt: float, *,
                 Rn: ArrayLike, x0: ArrayLike, xd0: ArrayLike, P0: ArrayLike,
                 Qw: ArrayLike | None = None, Qx: ArrayLike | None = None,
                 u0: ArrayLike | None = None, p: ArrayLike | Mapping[str, float] | None = None,
                 z0: ArrayLike | None = None, t0: float = 0.0, substeps: int = 4, tol: float = 1e-12,
                 check_partition: bool = True, cond_max: float = 1e10) -> None:
        if not getattr(cm, "outputs", ()):
            raise DesignError(f"model {getattr(cm, 'name', '?')!r} declares no outputs: the EKF "
                              f"needs sensors added with MultibodySystem.add_output(name, expr)")
        # lazily: importing nhcontrol.design loads no stage left of systems (numbers in, out)
        from ..linearization.outputs import output_matrices_from_terms
        from ..linearization.partition import Partition

        self._omft = output_matrices_from_terms
        self.cm = cm
        self.partition = partition if isinstance(partition, Partition) else Partition.from_dict(partition)
        idx = self.partition.indices(cm)
        self._idx = idx
        self.n, self.m, self.l = idx.n, idx.m, idx.l
        names = list(cm.inputs)
        zs = tuple(getattr(cm, "first_order_states", ()) or ())
        self._zi = np.array([names.index(z) for z in zs], dtype=np.intp)
        self._ui = np.array([i for i, nm in enumerate(names) if nm not in zs], dtype=np.intp)
        self.r, self.k, self._kall = len(zs), int(self._ui.size), len(names)
        n1 = idx.n_ai
        self.ns = 2 * n1 + self.l + self.r
        self.dt = float(dt)
        if not (math.isfinite(self.dt) and self.dt > 0):
            raise DesignError(f"dt must be a positive sample time, got {dt!r}")
        self.substeps = _checks.positive_int(substeps, "substeps", what="ExtendedKalmanFilter",
                                             error=DesignError)
        check_iterations(self.substeps, f"ExtendedKalmanFilter(substeps={self.substeps}): integration "
                         f"steps per sample", error=DesignError, hint="a few substeps per sample suffice")
        self.tol = float(tol)
        self.check_partition = bool(check_partition)
        self.cond_max = float(cond_max)
        self.p = cm.param_vector(**p) if isinstance(p, Mapping) else (
            np.array(cm.param_vector()) if p is None else as_float_array(p, "p", error=DesignError))
        coords = tuple(cm.coordinates)
        self.states = (tuple(coords[i] for i in idx.ai) + tuple(f"{coords[i]}_d" for i in idx.ai)
                       + tuple(coords[i] for i in idx.ad) + zs)
        self.outputs = tuple(cm.outputs)
        self.inputs = tuple(names[i] for i in self._ui)
        q = len(self.outputs)
        self.Rn = self._cov(Rn, q, "Rn", definite=True)
        self.Qw = np.zeros((self.k, self.k)) if Qw is None else self._cov(Qw, self.k, "Qw")
        self.Qx = np.zeros((self.ns, self.ns)) if Qx is None else self._cov(Qx, self.ns, "Qx")
        self.P = self._cov(P0, self.ns, "P0")
        self.u = np.zeros(self.k) if u0 is None else as_float_array(u0, "u0", shape=(self.k,),
                                                                     error=DesignError)
        self._ai, self._ad, self._d = idx.ai, idx.ad, idx.d
        self._dd = np.concatenate([idx.ad, idx.d]).astype(np.intp)
        self._affine = bool(getattr(cm, "affine_names", ()))
        self._eye = np.eye(self.ns)
        self._u_none = np.zeros(self._kall)              # the kernels' u when there is none
        if self.r:
            if z0 is None:
                raise DesignError(f"model {cm.name!r} has first-order states {list(zs)}: give "
                                  f"their initial estimate z0 ({self.r} values)")
            self.z = as_float_array(z0, "z0", shape=(self.r,), error=DesignError).copy()
        else:
            if z0 is not None and np.asarray(z0, dtype=object).size:
                raise DesignError(f"z0 was given, but model {cm.name!r} has no first-order states "
                                  f"(nothing to initialise: z0 would be ignored); leave z0 out")
            self.z = np.zeros(0)
        self._bind_kernels()
        self._lz = None
        lz = getattr(cm, "linearizer", None)
        if callable(lz) and getattr(cm, "backend", None) == "c":
            try:
                self._lz = lz(self.partition, p=self.p)
            except TypeError:
                self._lz = None
        x = as_float_array(x0, "x0", shape=(self.n,), error=DesignError).copy()
        xd = as_float_array(xd0, "xd0", shape=(self.n,), error=DesignError).copy()
        self.x, self.xd = self._project(x, xd, self._ua(self.u))
        self.t = _checks.sample_time(t0, what="ExtendedKalmanFilter", error=DesignError, name="t0")
        self._started = False

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _cov(W: ArrayLike, r: int, name: str, definite: bool = False) -> Array:
        Wm = as_float_array(W, name, error=DesignError)
        if Wm.ndim == 0 and r == 1:
            Wm = Wm.reshape(1, 1)
        if Wm.shape != (r, r):
            raise DesignError(f"{name} must have shape ({r}, {r}), got {Wm.shape}")
        check_psd(Wm, name, definite=definite)
        return 0.5 * (Wm + Wm.T)

    def _bind_kernels(self) -> None:
        """Kernel calls of the hot path (projection, output Jacobian): with C kernels the
        one-point compiled function itself on the filter's own float64 vectors (the arguments
        are this filter's arrays, already of the model's sizes: the per-call argument
        conversion of the public methods is skipped; the C code still checks that they are
        finite and raises through the model's messages); else the public methods."""
        cm = self.cm
        call = getattr(cm, "_call_c", None)
        from ..compiled._layout import LINEARIZATION_FIELDS

        p = np.ascontiguousarray(self.p, dtype=float)
        zl, zn = np.zeros(self.m + self.l), np.zeros(self.n)
        iD, iDv = LINEARIZATION_FIELDS.index("D"), LINEARIZATION_FIELDS.index("dDv_dx")
        if getattr(cm, "backend", None) == "c" and callable(call) \
                and p.shape == (len(getattr(cm, "parameters", p)),):
            def C(x: Array, u: Array) -> Array:
                return call("C", [x, u, p], "C")[0]

            def D(x: Array, u: Array) -> Array:
                return call("D", [x, u, p], "D")[0]

            def terms(x: Array, xd: Array, u: Array) -> tuple[Array, Array]:
                t = call("linearization_terms", [x, xd, zn, zl, u, p], "linearization_terms")
                return t[iD], t[iDv]                       # D, ∂(D ẋ + b)/∂x (one call)

            def outputs(x: Array, xd: Array, u: Array) -> tuple:
                return call("output_terms", [x, xd, u, p], "output_terms")
        else:
            k = self._kall

            def C(x: Array, u: Array) -> Array:
                return cm.C(x, u if k else None, p)

            def D(x: Array, u: Array) -> Array:
                return cm.D(x, u if k else None, p)

            def terms(x: Array, xd: Array, u: Array) -> tuple[Array, Array]:
                uu = u if k else None
                return cm.D(x, uu, p), cm.dDv_dx(x, xd, uu, p)

            def outputs(x: Array, xd: Array, u: Array) -> tuple:
                ot = cm.output_terms(x, xd, u if k else None, p)
                return ot.h, ot.dh_dx, ot.dh_dxd, ot.dh_du
        self._kC, self._kD, self._kterms, self._kout = C, D, terms, outputs

    def _ua(self, u: Array, z: Array | None = None) -> Array:
        """The model's input vector ``[z, u]`` (model order) of the filter's inputs ``u`` and
        first-order states ``z`` (default the current estimate); ``u`` itself without them."""
        if not self.r:
            return u if self._kall else self._u_none
        ua = np.empty(self._kall)
        ua[self._zi] = self.z if z is None else z
        ua[self._ui] = u
        return ua

    @property
    def X(self) -> Array:
        """Minimal state ``[x_ai, ẋ_ai, x_ad, z]`` of the current estimate (``z``: the
        first-order states, when the model has them)."""
        return np.concatenate([self.x[self._ai], self.xd[self._ai], self.x[self._ad], self.z])

    @property
    def nstates(self) -> int:
        return self.ns

    def _from_minimal(self, X: Array, x: Array, xd: Array, u: Array,
                      D0: Array | None = None) -> tuple[Array, Array, Array]:
        """``(x, ẋ, z)`` on the manifold with the minimal entries ``X`` (others from ``x, ẋ``;
        ``u``: the filter's inputs; ``D0``: ``D(x)`` of the given point, for the projection)."""
        n1 = self._ai.size
        nm = 2 * n1 + self.l
        x = x.copy()
        xd = xd.copy()
        x[self._ai] = X[:n1]
        xd[self._ai] = X[n1:2 * n1]
        x[self._ad] = X[2 * n1:nm]
        z = np.array(X[nm:], dtype=float)
        x, xd = self._project(x, xd, self._ua(u, z), D0)
        return x, xd, z

    def _project(self, x: Array, xd: Array, u: Array, D0: Array | None = None
                 ) -> tuple[Array, Array]:
        """Newton on ``C(x) = 0`` for ``x_d``; ``D_dd ẋ_dd = −(D_ai ẋ_ai + b)`` (Eq. (2.76));
        ``u`` is the model's input vector (`_ua`).

        ``D0``: ``D`` at a nearby point (the prior of a measurement update): the iteration
        starts as a chord method with its ``∂C/∂x_d`` and takes Newton steps with ``D(x)``
        as soon as a chord step reduces ``max |C|`` by less than a factor 10."""
        cm, m = self.cm, self.m
        uu = u if self._kall else self._u_none
        kC, kD = self._kC, self._kD
        Dm = None
        if m:
            d = self._d
            J0 = None if D0 is None else D0[:m, d]
            last = math.inf
            for it in range(50):
                C = kC(x, uu)
                cmax = float(np.abs(C).max())
                if cmax <= self.tol:
                    break
                if J0 is not None and cmax > 0.1 * last:
                    J0 = None                               # chord too slow: Newton
                last = cmax
                if J0 is not None:
                    J = J0
                else:
                    Dm = kD(x, uu)
                    J = Dm[:m, d]                           # ∂C/∂x_d: the first m rows of D
                step = _solve(J, C[:, None])[:, 0]
                if not np.isfinite(step).all():
                    raise PartitionError(f"∂C/∂x_d is singular at the estimate for "
                                         f"{[cm.coordinates[j] for j in d]}; choose another "
                                         f"partition (nhcontrol.linearization.suggest_partition)")
                x = x.copy() if it == 0 else x
                x[d] -= step
                Dm = None                                   # x moved: D is not D(x) any more
            else:
                raise SolverError(f"the estimate left the constraint manifold: Newton on C(x) = 0 "
                                  f"for {[cm.coordinates[j] for j in d]} did not converge "
                                  f"(max |C| = {float(np.max(np.abs(C))):.3g}); the estimate "
                                  f"diverged (check Rn, Qw and the initial covariance)")
        if self._dd.size:
            if Dm is None:
                Dm = kD(x, uu)
            Ddd = Dm[:, self._dd]
            rhs = -(Dm[:, self._ai] @ xd[self._ai])
            if self._affine:
                rhs = rhs - cm.b(x, u if self._kall else None, self.p)
            sol = _solve(Ddd, rhs[:, None])[:, 0]
            if not np.isfinite(sol).all():
                raise PartitionError(f"D_dd is singular at the estimate (Eq. (2.76)); choose "
                                     f"another partition (nhcontrol.linearization.suggest_partition)")
            xd = xd.copy()
            xd[self._dd] = sol
        return x, xd

    def _check_partition(self) -> None:
        """Raise `PartitionError` (with a suggested partition) when a block of the partition is
        ill conditioned at the estimate."""
        from ..linearization.partition import _singular_message

        pt = _EstimatePoint(self)
        report = self.partition.conditioning(self.cm, pt, self.t, cond_max=self.cond_max)
        if not report.ok:
            raise PartitionError("EKF at t = %g: " % self.t
                                 + _singular_message(self.partition, report, self.cm, pt, self.t,
                                                     self.cond_max)
                                 + "\n(the estimate left the region where this partition is "
                                   "valid: restart the filter with the suggested partition)")

    def _accelerations(self, x: Array, xd: Array, ua: Array) -> tuple[Array, Array]:
        """``ẍ, Λ`` of Eq. (2.119) (held input, no Baumgarte terms; ``ua`` the model's input
        vector, `_ua`)."""
        t = self.cm.dynamics_terms(x, xd, ua if self._kall else None, self.p)
        n, c = self.n, self.m + self.l
        K = np.zeros((n + c, n + c))
        K[:n, :n] = t.M
        K[:n, n:] = t.D.T
        K[n:, :n] = t.D
        sol = _solve(K, np.concatenate([t.Q, t.Qd])[:, None])[:, 0]
        return sol[:n], sol[n:]

    def _rates(self, x: Array, xd: Array, z: Array, u: Array) -> Array:
        """``ż = H(x, ẋ, z, u)`` of the first-order states (Eq. (7.19))."""
        return np.asarray(self.cm.rates(x, xd, self._ua(u, z), self.p), dtype=float)

    def _integrate(self, x: Array, xd: Array, z: Array, u: Array
                   ) -> tuple[Array, Array, Array]:
        """Classical Runge–Kutta over one sample with the input held (the first-order states
        ``ż = H`` alongside the mechanics)."""
        h = self.dt / self.substeps
        r = self.r
        for _ in range(self.substeps):
            if r:
                ua = self._ua(u, z)
                a1, _ = self._accelerations(x, xd, ua)
                g1 = self._rates(x, xd, z, u)
                x2, v2, z2 = x + 0.5 * h * xd, xd + 0.5 * h * a1, z + 0.5 * h * g1
                a2, _ = self._accelerations(x2, v2, self._ua(u, z2))
                g2 = self._rates(x2, v2, z2, u)
                x3, v3, z3 = x + 0.5 * h * v2, xd + 0.5 * h * a2, z + 0.5 * h * g2
                a3, _ = self._accelerations(x3, v3, self._ua(u, z3))
                g3 = self._rates(x3, v3, z3, u)
                x4, v4, z4 = x + h * v3, xd + h * a3, z + h * g3
                a4, _ = self._accelerations(x4, v4, self._ua(u, z4))
                g4 = self._rates(x4, v4, z4, u)
                z = z + h / 6.0 * (g1 + 2 * g2 + 2 * g3 + g4)
            else:
                ua = self._ua(u)
                a1, _ = self._accelerations(x, xd, ua)
                x2, v2 = x + 0.5 * h * xd, xd + 0.5 * h * a1
                a2, _ = self._accelerations(x2, v2, ua)
                x3, v3 = x + 0.5 * h * v2, xd + 0.5 * h * a2
                a3, _ = self._accelerations(x3, v3, ua)
                x4, v4 = x + h * v3, xd + h * a3
                a4, _ = self._accelerations(x4, v4, ua)
            x = x + h / 6.0 * (xd + 2 * v2 + 2 * v3 + v4)
            xd = xd + h / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
        if not (np.isfinite(x).all() and np.isfinite(xd).all() and np.isfinite(z).all()):
            raise SolverError("the EKF prediction is not finite: the estimate diverged")
        x, xd = self._project(x, xd, self._ua(u, z))
        return x, xd, z

    def jacobians(self, x: ArrayLike | None = None, xd: ArrayLike | None = None,
                  u: ArrayLike | None = None, z: ArrayLike | None = None
                  ) -> tuple[Array, Array, Array, Array]:
        """Exact ``A, B`` (third procedure; with first-order states the Jacobian of Sect. 7.2,
        `nhcontrol.linearization.linearize_first_order_system`) and ``H, D_y`` (declared outputs
        through the partition) at ``(x, ẋ, z, u)`` (default: the current estimate and held
        input)."""
        x = self.x if x is None else np.asarray(x, dtype=float)
        xd = self.xd if xd is None else np.asarray(xd, dtype=float)
        u = self.u if u is None else np.asarray(u, dtype=float)
        z = self.z if z is None else np.asarray(z, dtype=float)
        A, B = self._AB(x, xd, u, z)
        H, Dy = self._output_matrices(x, xd, self._ua(u, z))
        return A, B, H, Dy

    def _AB(self, x: Array, xd: Array, u: Array, z: Array | None = None
            ) -> tuple[Array, Array]:
        """``A, B`` of the third procedure at the point of a motion through ``(x, ẋ)``: its
        accelerations and multipliers from Eq. (2.119) — the prepared linearizer
        (``cm.linearizer``, C kernels) or the one-point Steps 1-7; with first-order states the
        rows of ``z`` appended (Sect. 7.2, `_AB_first_order`)."""
        ua = self._ua(u, z)
        xdd, lam = self._accelerations(x, xd, ua)
        if self.r:
            A, B = self._AB_first_order(x, xd, xdd, lam, ua)
        else:
            uu = ua if self._kall else None
            if self._lz is not None:
                A, B = self._lz(x, xd, xdd, lam, uu)
            else:
                from ..linearization._point import point_procedure

                terms = self.cm.linearization_terms(x, xd, xdd, lam, uu, self.p)
                with np.errstate(all="ignore"):
                    out = point_procedure(terms, self._idx, self.k)
                A, B = out["A"], out["B"]
        if not (np.isfinite(A).all() and np.isfinite(B).all()):
            raise PartitionError(f"the linearization at the estimate is not finite: a block of "
                                 f"the partition {self.partition} is singular there; choose "
                                 f"another partition (nhcontrol.linearization.suggest_partition)")
        return np.asarray(A), np.asarray(B)

    def _AB_first_order(self, x: Array, xd: Array, xdd: Array, lam: Array, ua: Array
                        ) -> tuple[Array, Array]:
        """``A, B`` in ``[x̃_ai, ẋ̃_ai, x̃_ad, z̃]`` at the estimate: the mechanical rows and the
        kinematics ``T0, V̄̄0, T_h0`` of one compiled call, the rate rows
        ``(H_x + H_ẋ V̄̄0) T_h0``, ``H_ẋ T0``, ``H_z`` from the exact rate Jacobians (kernel
        ``rate_terms``), the numbers of `linearize_first_order_system` at this point; without
        C kernels (or when the compiled call cannot decide) that function itself, on the
        estimate as a one-point reference whose ``ż0`` is the rate equation (so its checks
        run)."""
        from ..linearization import first_order as fo
        from ..linearization import prepared as pr

        n1 = self._ai.size
        zi, ui = self._zi, self._ui
        if self._lz is not None:
            try:
                Am, Bm, T0, Vdd, Th0 = self._lz._with_kinematics(x, xd, xdd, lam, ua)
            except pr._Refused:
                pass
            else:
                rt = self.cm.rate_terms(x, xd, ua, self.p)
                Hx, Hxd, Hdu = (np.asarray(a, dtype=float) for a in (rt.dH_dx, rt.dH_dxd,
                                                                     rt.dH_du))
                if np.isfinite(Hx).all() and np.isfinite(Hxd).all() and np.isfinite(Hdu).all():
                    Gx, Gxd = fo._fast_rate_rows(self._lz, T0, Vdd, Th0, Hx, Hxd)
                    A = fo._fast_assemble(Am, Bm, Gx, Gxd, Hdu[:, zi], list(zi), n1, self.l)
                    B = np.vstack([Bm[:, ui], Hdu[:, ui]])
                    return A, B
        from ..compiled.rates import RateKernels

        H = self.cm.rates(x, xd, ua, self.p)
        ud = np.zeros(self._kall)
        ud[zi] = H
        ref = _RatePoint(self.cm, x, xd, xdd, lam, ua, ud, self.p)
        res = fo.linearize_first_order_system(self.cm, RateKernels(self.cm), ref, self.partition)
        return np.asarray(res.A), np.asarray(res.B)

    def _output_matrices(self, x: Array, xd: Array, ua: Array, terms: Any = None
                         ) -> tuple[Array, Array]:
        return self._output_terms(x, xd, ua, terms)[:2]

    def _output_terms(self, x: Array, xd: Array, ua: Array, terms: Any = None
                      ) -> tuple[Array, Array, Array, Array]:
        """``H, D_y`` through the partition, ``h`` and ``D`` at ``(x, ẋ)`` and the model's input
        vector ``ua`` (two kernel calls: the outputs with their derivatives, and ``D``,
        ``∂(D ẋ)/∂x`` from the fused terms). With first-order states ``H`` has their columns
        ``∂h/∂z`` and ``D_y`` the columns of the other inputs (docs/theory/estimation.md)."""
        uu = ua if self._kall else self._u_none
        h, dh_dx, dh_dxd, dh_du = self._kout(x, xd, uu)
        if terms is not None:
            Dm, dDv = terms.D, terms.dDv_dx
        else:
            Dm, dDv = self._kterms(x, xd, uu)
        Dm = np.asarray(Dm).reshape(self.m + self.l, self.n)
        H, Dy = self._omft(Dm[:self.m], Dm, np.asarray(dDv).reshape(self.m + self.l, self.n),
                           dh_dx, dh_dxd, dh_du, self._idx)
        if self.r:
            H = np.concatenate([H, Dy[:, self._zi]], axis=1)
            Dy = Dy[:, self._ui]
        return H, Dy, np.asarray(h), Dm

    # ------------------------------------------------------------------ the filter
    def predict(self, u: ArrayLike | None = None) -> Array:
        """Propagate estimate and covariance over one sample with ``u`` held; returns ``X⁻``."""
        u = self.u if u is None else _checks.finite_vector(u, "u", self.k, what="EKF.predict",
                                                           error=DesignError)
        if self.check_partition and self.m + self.l:
            self._check_partition()
        A, B = self._AB(self.x, self.xd, u)
        ns, k = self.ns, self.k
        E = np.zeros((ns + k, ns + k))
        E[:ns, :ns] = A * self.dt
        E[:ns, ns:] = B * self.dt
        F = _expm(E)
        Ad, Bd = F[:ns, :ns], F[:ns, ns:]
        P = Ad @ self.P @ Ad.T + Bd @ self.Qw @ Bd.T + self.Qx
        self.P = 0.5 * (P + P.T)
        self.x, self.xd, self.z = self._integrate(self.x, self.xd, self.z, u)
        self.u = u
        self.t += self.dt
        return self.X

    def correct(self, y: ArrayLike, u: ArrayLike | None = None) -> Array:
        """Measurement update with ``y`` (q,) (``u``: the input in ``h``, default the held one);
        returns ``X⁺``."""
        u = self.u if u is None else _checks.finite_vector(u, "u", self.k, what="EKF.correct",
                                                           error=DesignError)
        yv = _checks.finite_vector(y, "y", len(self.outputs), what="EKF.correct", error=DesignError)
        H, _, h, Dm = self._output_terms(self.x, self.xd, self._ua(u))
        P = self.P
        HP = H @ P
        S = HP @ H.T + self.Rn
        K = _solve(S, HP).T
        if not np.isfinite(K).all():
            raise SolverError("the innovation covariance H P Hᵀ + Rn is singular")
        X = self.X + K @ (yv - h)
        IKH = self._eye - K @ H
        Z = IKH @ P @ IKH.T + K @ self.Rn @ K.T
        self.P = 0.5 * (Z + Z.T)
        self.x, self.xd, self.z = self._from_minimal(X, self.x, self.xd, u, Dm)
        self._S, self._K = S, K
        return self.X

    def update(self, t: float, y: ArrayLike, u_prev: ArrayLike | None = None) -> Array:
        """One sample at time ``t``: predict with the input held since the last sample
        (``u_prev``), then correct with ``y``; the first call only corrects (the initial estimate
        is at ``t0``). Returns the a posteriori estimate ``X⁺`` of the minimal state.

        Raises
        ------
        DesignError
            If ``t`` is not the next sample time (``t0`` first, then ``+ dt``).
        """
        tv = _checks.sample_time(t, what="EKF.update", error=DesignError)
        y = _checks.finite_vector(y, "y", len(self.outputs), what="EKF.update", error=DesignError)
        if u_prev is not None:
            u_prev = _checks.finite_vector(u_prev, "u_prev", self.k, what="EKF.update", error=DesignError)
        want = self.t + self.dt if self._started else self.t
        if abs(tv - want) > _checks.GRID_RTOL * max(1.0, abs(want)) + 1e-12:
            raise DesignError(f"EKF.update at t = {tv:.9g}: the next sample of this filter "
                              f"is at t = {want:.9g} (t0 = first sample, then every dt = "
                              f"{self.dt:g}); call update once per sample")
        if self._started:
            self.predict(u_prev)
        elif u_prev is not None:
            self.u = as_float_array(u_prev, "u_prev", shape=(self.k,), error=DesignError)
        self._started = True
        return self.correct(y)

    def export_c(self, out: Any, *, controller: Any = None, reference: Any = None,
                 steps: int | None = None, force: bool = False) -> dict:
        """Write this estimator as standalone C99 (its current state is the exported start);
        with ``controller`` together with the controller and the closed-loop harness
        ``nhc_loop``. See [`nhcontrol.interop.export_estimator()`][nhcontrol.interop.c_controllers.export_estimator]
        and docs/guide/c_export.md."""
        from ..interop.c_controllers import export_estimator

        return export_estimator(self, out, controller=controller, reference=reference,
                                steps=steps, force=force)

    # ------------------------------------------------------------------ python-control
    def to_iosystem(self, name: str = "ekf") -> Any:
        """Discrete-time ``control.NonlinearIOSystem`` (``dt`` = the sample time) in the
        predictor form of ``control.create_estimator_iosystem``: state ``[X⁻_k, vec P⁻_k]``,
        inputs ``[y_k, u_k]``, outputs ``X⁻_k``; the update corrects with ``y_k`` and predicts
        with ``u_k``. Uses a copy of this filter's settings (its current estimate and
        covariance are the initial state ``xinit`` returned with the system).

        Returns
        -------
        sys : control.NonlinearIOSystem
        xinit : (ns + ns²,) ndarray
        """
        import control
        import copy

        work = copy.copy(self)
        ns, q, k = self.ns, len(self.outputs), self.k

        def updfcn(t: float, state: Array, inp: Array, params: Any) -> Array:
            X, P = state[:ns], state[ns:].reshape(ns, ns)
            y, u = inp[:q], inp[q:]
            work.x, work.xd, work.z = work._from_minimal(X, work.x, work.xd, u)
            work.P = P
            work.u = u
            work.correct(y, u)
            work.predict(u)
            return np.concatenate([work.X, work.P.ravel()])

        def outfcn(t: float, state: Array, inp: Array, params: Any) -> Array:
            return state[:ns]

        sys = control.nlsys(updfcn, outfcn, inputs=list(self.outputs) + list(self.inputs),
                            outputs=[f"{s}_hat" for s in self.states],
                            states=[f"{s}_hat" for s in self.states]
                            + [f"P[{i},{j}]" for i in range(ns) for j in range(ns)],
                            dt=self.dt, name=name)
        return sys, np.concatenate([self.X, self.P.ravel()])

    def __repr__(self) -> str:
        return (f"ExtendedKalmanFilter({getattr(self.cm, 'name', '?')!r}, states={list(self.states)}, "
                f"outputs={list(self.outputs)}, dt={self.dt})")
