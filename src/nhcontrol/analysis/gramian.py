"""Finite-interval controllability Gramians of LTI, LTV and discrete LTV systems (Eq. (8.85)).

The thesis (Sect. 8.4.4) uses

.. math::

    W_c(t_0, t_1) = \\int_{t_0}^{t_1} \\Phi(t_1, \\tau) B(\\tau) B^T(\\tau) \\Phi^T(t_1, \\tau)\\, d\\tau
    \\qquad (8.85)

(the *reachability* form, ``frame="t1"``, default). The other common convention,
``W_0 = ∫ Φ(t0, τ) B Bᵀ Φ(t0, τ)ᵀ dτ = Φ(t0, t1) W_c Φ(t0, t1)ᵀ`` (``frame="t0"``), has the same
rank; the system is controllable on ``[t0, t1]`` iff either is non-singular.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import control
import numpy as np
from numpy.typing import NDArray
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from .._util.errors import LinearSystemError, SolverError
from .._util.validation import readonly
from ..systems.discrete import DiscreteLTV
from ..systems.ltv import LTVSystem, as_ltv
from .controllability import RankResult, rank_decision

__all__ = ["gramian", "GramianResult", "GRAMIAN_RTOL"]

#: Default relative tolerance of the Lyapunov-ODE integration for LTV Gramians.
GRAMIAN_RTOL = 1e-11


@dataclass(frozen=True, eq=False)
class GramianResult:
    """A controllability Gramian with its rank decision.

    Attributes
    ----------
    W : (n, n) ndarray
        Symmetric positive semidefinite Gramian (read-only).
    t0, t1 : float
        Interval.
    frame : {"t1", "t0"}
        ``"t1"``: Eq. (8.85), ``Φ(t1, τ)``; ``"t0"``: ``Φ(t0, τ)``.
    discrete : bool
        ``True`` for the sum over the steps of a :class:`DiscreteLTV`.
    rank_result : RankResult
        Rank decision on ``W`` (singular values = eigenvalues of ``W``).
    states : tuple of str
    """

    W: NDArray[np.float64]
    t0: float
    t1: float
    frame: str
    discrete: bool
    rank_result: RankResult
    states: tuple[str, ...]

    @property
    def rank(self) -> int:
        """Numerical rank of ``W``."""
        return self.rank_result.rank

    @property
    def is_controllable(self) -> bool:
        """``W`` non-singular (full rank)."""
        return self.rank_result.is_controllable

    @property
    def singular_values(self) -> NDArray[np.float64]:
        """Singular values (= eigenvalues) of ``W``, descending."""
        return self.rank_result.singular_values

    @property
    def uncontrollable_directions(self) -> NDArray[np.float64]:
        """Orthonormal basis of ``ker W`` (states not reachable on ``[t0, t1]``)."""
        return self.rank_result.uncontrollable_directions


def gramian(sys: LTVSystem | control.StateSpace | DiscreteLTV, t0: float | None = None,
            t1: float | None = None, *, frame: Literal["t1", "t0"] = "t1", tol: float | None = None,
            rtol: float | None = None, ode_rtol: float = GRAMIAN_RTOL) -> GramianResult:
    """Controllability Gramian over ``[t0, t1]`` (Eq. (8.85)), stable or not.

    Parameters
    ----------
    sys : LTVSystem, control.StateSpace or DiscreteLTV
    t0, t1 : float
        Interval, ``t1 > t0``. Required for continuous systems. For a ``DiscreteLTV`` they are
        optional (default: the whole horizon) and must be sample times.
    frame : {"t1", "t0"}, default "t1"
        ``"t1"``: ``W = ∫ Φ(t1, τ) B Bᵀ Φ(t1, τ)ᵀ dτ`` (Eq. (8.85)); ``"t0"``: ``Φ(t0, τ)`` instead.
    tol, rtol : float, optional
        Rank threshold on ``W`` (see :func:`rank_decision`); default
        ``s_max(W) · n · eps``. Since ``W`` squares the singular values of the reachability map, this
        corresponds to a relative threshold of about ``sqrt(n · eps)`` on that map.
    ode_rtol : float, default 1e-11
        Relative tolerance of the DOP853 integration (LTV only).

    Returns
    -------
    GramianResult

    Notes
    -----
    * LTI: Van Loan's block exponential,
      ``expm([[−A, B Bᵀ], [0, Aᵀ]] T) = [[·, F12], [0, F22]]``, ``W = F22ᵀ F12`` with
      ``T = t1 − t0``.
    * LTV: the differential Lyapunov equation ``Ẇ = A W + W Aᵀ + B Bᵀ``, ``W(t0) = 0`` gives
      ``W(t1) = W_c(t0, t1)`` of Eq. (8.85); for ``frame="t0"``, ``Ẇ0 = Ψ B Bᵀ Ψᵀ`` with
      ``Ψ̇ = −Ψ A``, ``Ψ(t0) = I`` (``Ψ(t) = Φ(t0, t)``).
    * Discrete: ``W = Σ_{k=k0}^{k1−1} Φ_{k1,k+1} Bd_k Bd_kᵀ Φ_{k1,k+1}ᵀ`` from the recursion
      ``W ← Ad_k W Ad_kᵀ + Bd_k Bd_kᵀ`` (``frame="t0"``: ``Φ_{k0,k+1} = Φ_{k+1,k0}^{-1}``).
    """
    if frame not in ("t1", "t0"):
        raise LinearSystemError(f"frame must be 't1' (Eq. (8.85)) or 't0', got {frame!r}")
    if isinstance(sys, DiscreteLTV):
        return _discrete_gramian(sys, t0, t1, frame, tol, rtol)
    s = as_ltv(sys)
    if t0 is None or t1 is None:
        raise LinearSystemError("gramian(sys, t0, t1) needs the interval [t0, t1] for a continuous system")
    t0f, t1f = float(t0), float(t1)
    if not (np.isfinite(t0f) and np.isfinite(t1f) and t1f > t0f):
        raise LinearSystemError(f"the Gramian interval must satisfy t0 < t1, got t0 = {t0}, t1 = {t1}")
    s.check_time(np.array([t0f, t1f]), "Gramian interval")
    n = s.nstates
    if s.is_constant:
        A, B = s.A(t0f), s.B(t0f)
        T = t1f - t0f
        H = np.zeros((2 * n, 2 * n))
        H[:n, :n] = -A
        H[:n, n:] = B @ B.T
        H[n:, n:] = A.T
        F = expm(H * T)
        W = F[n:, n:].T @ F[:n, n:]
        if frame == "t0":
            Phi_back = expm(-A * T)
            W = Phi_back @ W @ Phi_back.T
    else:
        W = _ltv_gramian(s, t0f, t1f, frame, ode_rtol)
    W = 0.5 * (W + W.T)
    rr = rank_decision(W, tol=tol, rtol=rtol, name="controllability Gramian W_c")
    return GramianResult(readonly(W), t0f, t1f, frame, False, rr, s.states)


def _ltv_gramian(s: LTVSystem, t0: float, t1: float, frame: str, ode_rtol: float) -> NDArray[np.float64]:
    n = s.nstates
    if frame == "t1":
        def rhs(t: float, y: NDArray) -> NDArray:
            W = y.reshape(n, n)
            A, B = s.A(t), s.B(t)
            AW = A @ W
            return (AW + AW.T + B @ B.T).reshape(-1)
        y0 = np.zeros(n * n)
    else:
        def rhs(t: float, y: NDArray) -> NDArray:
            Psi = y[: n * n].reshape(n, n)
            A, B = s.A(t), s.B(t)
            PB = Psi @ B
            return np.concatenate([(-Psi @ A).reshape(-1), (PB @ PB.T).reshape(-1)])
        y0 = np.concatenate([np.eye(n).reshape(-1), np.zeros(n * n)])
    sol = solve_ivp(rhs, (t0, t1), y0, method="DOP853", rtol=ode_rtol, atol=ode_rtol * 1e-3)
    if not sol.success:
        raise SolverError(f"integration of the Gramian ODE on [{t0}, {t1}] failed: {sol.message}")
    y = sol.y[:, -1]
    return y.reshape(n, n) if frame == "t1" else y[n * n:].reshape(n, n)


def _discrete_gramian(d: DiscreteLTV, t0: float | None, t1: float | None, frame: str,
                      tol: float | None, rtol: float | None) -> GramianResult:
    k0 = 0 if t0 is None else _sample_index(d, t0, "t0")
    k1 = d.nsteps if t1 is None else _sample_index(d, t1, "t1")
    if k1 <= k0:
        raise LinearSystemError(
            f"the Gramian interval must contain at least one step: got t0 = {d.times[k0]}, "
            f"t1 = {d.times[k1]} (k0 = {k0}, k1 = {k1})")
    n = d.nstates
    W = np.zeros((n, n))
    for k in range(k0, k1):
        W = d.Ad[k] @ W @ d.Ad[k].T + d.Bd[k] @ d.Bd[k].T
    if frame == "t0":
        Phi = d.transition(k1, k0)
        W = np.linalg.solve(Phi, np.linalg.solve(Phi, W).T)
    W = 0.5 * (W + W.T)
    rr = rank_decision(W, tol=tol, rtol=rtol, name="discrete controllability Gramian")
    return GramianResult(readonly(W), float(d.times[k0]), float(d.times[k1]), frame, True, rr, d.states)


def _sample_index(d: DiscreteLTV, t: float, name: str) -> int:
    r = (float(t) - d.t0) / d.dt
    k = int(round(r))
    if abs(r - k) > 1e-9 * max(1.0, abs(r)) or not (0 <= k <= d.nsteps):
        raise LinearSystemError(
            f"{name} = {t} is not a sample time of the DiscreteLTV (t0 = {d.t0}, dt = {d.dt}, "
            f"{d.nsteps} steps); pass one of its times")
    return k
