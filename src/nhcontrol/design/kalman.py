"""Finite-horizon time-varying Kalman filter of a discrete LTV system (the dual of
[`finite_horizon_lqr()`][nhcontrol.design.finite_horizon_lqr]).

For ``x_{k+1} = Ad_k x_k + Bd_k u_k + G_k w_k``, ``y_k = C_k x_k + D_k u_k + v_k`` with white
noises ``w_k ~ (0, Qn_k)``, ``v_k ~ (0, Rn_k)`` and ``x_0 ~ (x̂_0, P_0)`` the filter is the
forward Riccati recursion (Kalman 1960; e.g. Simon, *Optimal State Estimation*, Sect. 5.1):

$$
\\begin{aligned}
S_k &= C_k P_k C_k^T + R_{n,k}, \\qquad M_k = P_k C_k^T S_k^{-1}, \\\\
Z_k &= (I - M_k C_k) P_k (I - M_k C_k)^T + M_k R_{n,k} M_k^T, \\\\
P_{k+1} &= A_{d,k} Z_k A_{d,k}^T + G_k Q_{n,k} G_k^T, \\qquad L_k = A_{d,k} M_k ,
\\end{aligned}
$$

with ``P`` the a priori and ``Z`` the a posteriori covariances, ``M`` the measurement-update
gains (``x̂⁺_k = x̂⁻_k + M_k (y_k − C_k x̂⁻_k − D_k u_k)``) and ``L`` the predictor gains in
python-control's ``dlqe`` convention (``x̂_{k+1} = Ad_k x̂_k + Bd_k u_k + L_k (y_k − C_k x̂_k −
D_k u_k)``). It is the LQR recursion of the dual system ``(Ad_kᵀ, C_kᵀ)`` run forward in time
(docs/theory/estimation.md); for constant matrices ``L_k`` converges to ``control.dlqe``'s gain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util import checks as _checks
from .._util.errors import DesignError, SolverError
from .._util.memory import check_allocation
from .._util.work import check_iterations
from .._util.validation import as_float_array, check_finite, readonly
from ._weights import PD_RTOL, check_psd, per_step, system_arrays

__all__ = ["KalmanFilterResult", "kalman_filter", "KalmanEstimator"]


@dataclass(frozen=True, eq=False)
class KalmanFilterResult:
    """Gains and covariances of a finite-horizon Kalman filter (immutable).

    Attributes
    ----------
    L : (N, n, p) ndarray
        Predictor gains (``control.dlqe`` convention), ``L_k = Ad_k M_k``.
    M : (N+1, n, p) ndarray
        Measurement-update (filter) gains.
    P : (N+1, n, n) ndarray
        A priori covariances ``P_k = E[(x_k − x̂⁻_k)(·)ᵀ]``; ``P[0] = P0``.
    Z : (N+1, n, n) ndarray
        A posteriori covariances after the measurement at sample ``k``.
    S : (N+1, p, p) ndarray
        Innovation covariances ``C_k P_k C_kᵀ + Rn_k``.
    C, D : (N+1, p, n), (N+1, p, k) ndarray
        Output matrices used at every sample.
    Ad, Bd : (N, n, n), (N, n, k) ndarray
        The system (for `predict()`).
    horizon : int
    dt : float or None
    states, outputs : tuple of str
    """

    L: NDArray[np.float64]
    M: NDArray[np.float64]
    P: NDArray[np.float64]
    Z: NDArray[np.float64]
    S: NDArray[np.float64]
    C: NDArray[np.float64]
    D: NDArray[np.float64]
    Ad: NDArray[np.float64]
    Bd: NDArray[np.float64]
    horizon: int
    dt: float | None
    states: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()

    @property
    def nstates(self) -> int:
        return int(self.P.shape[-1])

    @property
    def noutputs(self) -> int:
        return int(self.S.shape[-1])

    def _k(self, k: int, last: int) -> int:
        kk = int(k)
        if kk != k or not 0 <= kk <= last:
            raise DesignError(f"sample index must be an integer in [0, {last}], got {k!r}")
        return kk

    def correct(self, k: int, x_prior: ArrayLike, y: ArrayLike, u: ArrayLike | None = None
                ) -> NDArray[np.float64]:
        """Measurement update ``x̂⁺_k = x̂⁻_k + M_k (y_k − C_k x̂⁻_k − D_k u_k)`` (n,)."""
        kk = self._k(k, self.horizon)
        n, p = self.nstates, self.noutputs
        what = "KalmanFilterResult.correct"
        xv = _checks.finite_vector(x_prior, "x_prior", n, what=what, error=DesignError)
        yv = _checks.finite_vector(y, "y", p, what=what, error=DesignError)
        innov = yv - self.C[kk] @ xv
        if u is not None and self.D.shape[-1]:
            innov = innov - self.D[kk] @ _checks.finite_vector(u, "u", self.D.shape[-1], what=what,
                                                               error=DesignError)
        return xv + self.M[kk] @ innov

    def predict(self, k: int, x_post: ArrayLike, u: ArrayLike | None = None) -> NDArray[np.float64]:
        """Time update ``x̂⁻_{k+1} = Ad_k x̂⁺_k + Bd_k u_k`` (n,)."""
        kk = self._k(k, self.horizon - 1)
        what = "KalmanFilterResult.predict"
        xv = _checks.finite_vector(x_post, "x_post", self.nstates, what=what, error=DesignError)
        out = self.Ad[kk] @ xv
        if u is not None:
            out = out + self.Bd[kk] @ _checks.finite_vector(u, "u", self.Bd.shape[-1], what=what,
                                                            error=DesignError)
        return out


def _output_sequences(dsys: Any, N: int, n: int, k: int) -> tuple[NDArray, NDArray, tuple]:
    """``C_k``, ``D_k`` at the ``N + 1`` samples and the output names."""
    om = getattr(dsys, "output_matrices", None)
    if om is not None:
        pairs = [om(i) for i in range(N + 1)]
        C = np.stack([np.asarray(c, dtype=float) for c, _ in pairs])
        D = np.stack([np.asarray(d, dtype=float) for _, d in pairs])
        return C, D, tuple(getattr(dsys, "outputs", ()) or ())
    C = getattr(dsys, "C", None)
    if C is None:
        raise DesignError("kalman_filter needs the measured outputs y = C x + D u: pass a "
                          "DiscreteLTV with C (or Ck), e.g. discretize(LTVSystem.from_linearization("
                          "..., outputs='declared'), dt)")
    C = as_float_array(C, "C", error=DesignError)
    return (np.broadcast_to(C, (N + 1,) + C.shape).copy(), np.zeros((N + 1, C.shape[0], k)), ())


def kalman_filter(dsys: Any, Qn: ArrayLike, Rn: ArrayLike, *, N: int | None = None,
                  P0: ArrayLike | None = None, G: ArrayLike | None = None) -> KalmanFilterResult:
    """Finite-horizon time-varying Kalman filter (forward Riccati recursion).

    Parameters
    ----------
    dsys : DiscreteLTV or discrete control.StateSpace
        ``Ad`` (N, n, n), ``Bd`` (N, n, k) and the outputs ``C_k``, ``D_k``
        (`DiscreteLTV.output_matrices`); a discrete ``StateSpace`` is held constant over ``N``
        steps (give ``N=``).
    Qn : (g, g) or (N, g, g) array_like
        Process-noise covariance (symmetric positive semi-definite).
    Rn : (p, p) or (N+1, p, p) array_like
        Measurement-noise covariance (symmetric positive definite).
    N : int, optional
        Horizon, required (only) for a ``control.StateSpace``.
    P0 : (n, n) array_like, optional
        A priori covariance of the initial state (default the identity).
    G : (n, g) or (N, n, g) array_like, optional
        Process-noise input matrix (default the identity, ``g = n``); e.g. ``Bd`` for noise on
        the inputs.

    Returns
    -------
    KalmanFilterResult

    Raises
    ------
    DesignError
        Bad shapes, non-symmetric or indefinite covariances (relative to their scale), no
        outputs.
    SolverError
        An innovation covariance ``S_k`` that is not positive definite, or overflow.

    Examples
    --------
    >>> import numpy as np
    >>> from nhcontrol.systems import DiscreteLTV
    >>> d = DiscreteLTV.from_lti([[1.0, 0.1], [0.0, 1.0]], [[0.0], [0.1]], 0.1, 200, C=[[1.0, 0.0]])
    >>> kf = kalman_filter(d, 1e-4 * np.eye(2), [[1e-2]])
    >>> kf.L.shape, kf.M.shape, kf.P.shape
    ((200, 2, 1), (201, 2, 1), (201, 2, 2))
    """
    from .lqr import _from_statespace

    dsys = _from_statespace(dsys, N, "kalman_filter")
    Ad, Bd, dt = system_arrays(dsys)
    Nh, n, k = Bd.shape
    check_iterations(Nh, f"kalman_filter over N = {Nh} steps", error=DesignError,
                     hint="use a shorter horizon")
    C, D, outs = _output_sequences(dsys, Nh, n, k)
    p = C.shape[1]
    if p == 0:
        raise DesignError("kalman_filter needs at least one measured output (C has no rows)")
    check_allocation(8.0 * (Nh + 1) * (3 * n * n + 2 * n * p + p * p),
                     f"kalman_filter over N = {Nh} steps with n = {n} states and p = {p} outputs",
                     error=DesignError, hint="use a shorter horizon")
    if G is None:
        Gs = np.broadcast_to(np.eye(n), (Nh, n, n))
    else:
        Ga = as_float_array(G, "G", error=DesignError)
        g = Ga.shape[-1] if Ga.ndim >= 2 else 0
        Gs = per_step(Ga, "G", Nh, n, g)
    g = Gs.shape[-1]
    Qs = per_step(Qn, "Qn", Nh, g, g)
    Rs = per_step(Rn, "Rn", Nh + 1, p, p)
    P0_ = np.eye(n) if P0 is None else as_float_array(P0, "P0", shape=(n, n), error=DesignError)
    check_finite(P0_, "P0", error=DesignError)
    check_psd(Qs, "Qn")
    check_psd(Rs, "Rn", definite=True)
    check_psd(P0_, "P0")

    P = np.empty((Nh + 1, n, n))
    Z = np.empty((Nh + 1, n, n))
    M = np.empty((Nh + 1, n, p))
    L = np.empty((Nh, n, p))
    S = np.empty((Nh + 1, p, p))
    P[0] = 0.5 * (P0_ + P0_.T)
    eye = np.eye(n)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for i in range(Nh + 1):
            Ci, Ri, Pi = C[i], Rs[i], P[i]
            Si = Ci @ Pi @ Ci.T + Ri
            Si = 0.5 * (Si + Si.T)
            S[i] = Si
            Mi = np.linalg.solve(Si, Ci @ Pi).T if np.isfinite(Si).all() else np.full((n, p), np.nan)
            M[i] = Mi
            IKC = eye - Mi @ Ci
            Zi = IKC @ Pi @ IKC.T + Mi @ Ri @ Mi.T                    # Joseph form
            Z[i] = 0.5 * (Zi + Zi.T)
            if i < Nh:
                L[i] = Ad[i] @ Mi
                Pn = Ad[i] @ Z[i] @ Ad[i].T + Gs[i] @ Qs[i] @ Gs[i].T
                P[i + 1] = 0.5 * (Pn + Pn.T)
    _check(S, P, Z)
    return KalmanFilterResult(L=readonly(L), M=readonly(M), P=readonly(P), Z=readonly(Z),
                              S=readonly(S), C=readonly(C), D=readonly(D),
                              Ad=readonly(np.array(Ad)), Bd=readonly(np.array(Bd)), horizon=Nh,
                              dt=dt, states=tuple(getattr(dsys, "states", ()) or ()), outputs=outs)


def _check(S: NDArray[np.float64], P: NDArray[np.float64], Z: NDArray[np.float64]) -> None:
    """Raise `SolverError` at the first sample whose innovation covariance is not positive
    definite or whose covariances overflowed."""
    for i in range(S.shape[0]):
        if not (np.isfinite(S[i]).all() and np.isfinite(P[i]).all() and np.isfinite(Z[i]).all()):
            raise SolverError(f"the Kalman filter recursion overflowed at sample {i} (non-finite "
                              f"covariance); the system blows up over the horizon: shorten it")
        lam = np.linalg.eigvalsh(S[i])
        if lam[0] <= PD_RTOL * abs(lam[-1]):
            raise SolverError(f"the innovation covariance C P Cᵀ + Rn lost positive definiteness "
                              f"at sample {i} (smallest eigenvalue {lam[0]:.3g}); increase Rn")


class KalmanEstimator:
    """Sample-by-sample use of a [`KalmanFilterResult`][nhcontrol.design.KalmanFilterResult]
    on the deviations from a reference (a linearized Kalman filter along a trajectory).

    The measured ``y_k`` and the held input ``u_{k−1}`` become ``ỹ_k = y_k − y0_k`` and
    ``ũ_{k−1} = u_{k−1} − u0_{k−1}``; `update()` predicts with ``ũ_{k−1}`` (except at the first
    sample) and corrects with ``ỹ_k`` (feed-through ``D_k ũ_{k−1}``: the input held when the
    sensors sampled).

    Parameters
    ----------
    kf : KalmanFilterResult
    y0 : (N+1, q) array_like
        Outputs along the reference at the samples (e.g. ``cm.output(x0(t_k), ẋ0(t_k), u0)``).
    u0 : (N+1, k) array_like
        Reference inputs held over the samples (the feed-forward of the controller).
    X0 : (n,) array_like, optional
        Initial deviation estimate (zero: the reference).
    t0 : float, default 0.0
        Time of sample 0.

    Attributes
    ----------
    X : (n,) ndarray
        Current estimate (a posteriori after `update()`).
    P : (n, n) ndarray
        Its covariance (``kf.Z[k]``).
    states : tuple of str
    """

    def __init__(self, kf: KalmanFilterResult, y0: ArrayLike, u0: ArrayLike,
                 X0: ArrayLike | None = None, t0: float = 0.0) -> None:
        self.kf = kf
        self.t0 = _checks.sample_time(t0, what="KalmanEstimator", error=DesignError, name="t0")
        N, n, q = kf.horizon, kf.nstates, kf.noutputs
        k = kf.Bd.shape[-1]
        self.y0 = as_float_array(y0, "y0", shape=(N + 1, q), error=DesignError)
        self.u0 = as_float_array(u0, "u0", shape=(N + 1, k), error=DesignError)
        self.X = np.zeros(n) if X0 is None else as_float_array(X0, "X0", shape=(n,), error=DesignError)
        self.P = np.array(kf.P[0])
        self.k = -1
        self.states = kf.states

    def export_c(self, out: Any, *, controller: Any = None, reference: Any = None,
                 steps: int | None = None, force: bool = False) -> dict:
        """Write this estimator as standalone C99 (its current state is the exported start);
        with ``controller`` together with the controller and the closed-loop harness
        ``nhc_loop``. See [`nhcontrol.interop.export_estimator()`][nhcontrol.interop.c_controllers.export_estimator]
        and docs/guide/c_export.md."""
        from ..interop.c_controllers import export_estimator

        return export_estimator(self, out, controller=controller, reference=reference,
                                steps=steps, force=force)

    def update(self, t: float, y: ArrayLike, u_prev: ArrayLike | None = None) -> NDArray[np.float64]:
        """Next sample at time ``t``: predict with the held input ``u_prev`` (absolute), correct
        with ``y`` (absolute); returns the a posteriori deviation estimate.

        Raises
        ------
        DesignError
            If ``t`` is not the filter's next sample time ``t0 + k dt``.
        """
        kk = self.k + 1
        what = "KalmanEstimator.update"
        tv = _checks.sample_time(t, what=what, error=DesignError)
        dt = self.kf.dt if self.kf.dt is not None else None
        if dt is not None:
            want = self.t0 + kk * dt
            if abs(tv - want) > _checks.GRID_RTOL * max(1.0, abs(want)) + 1e-12:
                raise DesignError(f"KalmanEstimator.update at t = {tv:.9g}: the next sample "
                                  f"is k = {kk} at t = {want:.9g}; call update once per sample")
        y = _checks.finite_vector(y, "y", self.kf.noutputs, what=what, error=DesignError)
        if u_prev is not None:
            u_prev = _checks.finite_vector(u_prev, "u_prev", self.u0.shape[1], what=what,
                                           error=DesignError)
        if kk > self.kf.horizon:
            raise DesignError(f"the Kalman filter horizon of {self.kf.horizon} steps is exhausted "
                              f"(sample {kk}); design it over a longer horizon")
        du = None
        if u_prev is not None:
            du = np.asarray(u_prev, dtype=float) - self.u0[max(kk - 1, 0)]
        Xp = self.X if kk == 0 else self.kf.predict(kk - 1, self.X, du)
        self.X = self.kf.correct(kk, Xp, np.asarray(y, dtype=float) - self.y0[kk], du)
        self.P = np.array(self.kf.Z[kk])
        self.k = kk
        return self.X
