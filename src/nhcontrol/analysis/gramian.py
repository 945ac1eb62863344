"""Finite-interval controllability Gramians of LTI, LTV and discrete LTV systems (Eq. (8.85)).

The thesis (Sect. 8.4.4) uses

$$
W_c(t_0, t_1) = \\int_{t_0}^{t_1} \\Phi(t_1, \\tau) B(\\tau) B^T(\\tau) \\Phi^T(t_1, \\tau)\\, d\\tau
\\qquad (8.85)
$$

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
from ..systems.discretize import expm_batch
from ..systems.ltv import LTVSystem, as_ltv
from .controllability import RankResult, rank_decision
from .._util.reprs import concise_repr

__all__ = ["gramian", "GramianResult", "GRAMIAN_RTOL", "constant_gramian"]

GRAMIAN_RTOL = 1e-11
"""Default relative tolerance of the Lyapunov-ODE integration for LTV Gramians."""


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
        ``True`` for the sum over the steps of a [`DiscreteLTV`][nhcontrol.systems.DiscreteLTV].
    rank_result : RankResult
        Rank decision on ``W`` (singular values = eigenvalues of ``W``).
    states : tuple of str
    """

    __repr__ = concise_repr

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
            rtol: float | None = None, ode_rtol: float = GRAMIAN_RTOL,
            method: Literal["magnus", "ode"] = "magnus", max_steps: int = 1 << 16) -> GramianResult:
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
        Rank threshold on ``W`` (see [`rank_decision()`][nhcontrol.analysis.rank_decision]); default
        ``s_max(W) · n · eps``. Since ``W`` squares the singular values of the reachability map, this
        corresponds to a relative threshold of about ``sqrt(n · eps)`` on that map.
    ode_rtol : float, default 1e-11
        Relative accuracy of the LTV integration: the DOP853 tolerance (``method="ode"``) or the
        refinement criterion of the Magnus scheme (``method="magnus"``).
    method : {"magnus", "ode"}, default "magnus"
        LTV only. ``"magnus"``: sixth-order Magnus expansion of the Lyapunov equation on ``N``
        uniform steps (one vectorised evaluation of ``A``, ``B`` at the ``3N`` Gauss nodes per
        level), ``N`` doubled from 16 until two levels agree to ``ode_rtol`` relative to
        ``max|W|``. ``"ode"``: DOP853 on the differential Lyapunov equation (one call of ``A``,
        ``B`` per stage; an independent check).
    max_steps : int, default 65536
        Largest ``N`` of the Magnus scheme before `SolverError`.

    Returns
    -------
    GramianResult

    Notes
    -----
    * LTI (``LTVSystem.constant``, ``StateSpace``): `constant_gramian` - Van Loan's block
      exponential ``expm([[−A, B Bᵀ], [0, Aᵀ]] h) = [[·, F12], [0, F22]]``, ``G(h) = F22ᵀ F12``
      on a short ``h = T / 2^s`` (``‖A‖ h ≤ 1/2``), then ``s`` doublings
      ``G(2h) = G(h) + e^{Ah} G(h) e^{Aᵀh}`` (derived here): sums of positive semidefinite
      terms, exact to a few ``s · eps`` at every horizon; frame ``"t0"`` is the same integral
      with ``−A``. A Gramian that overflows float64 raises `LinearSystemError`.
    * LTV: the differential Lyapunov equation ``Ẇ = A W + W Aᵀ + B Bᵀ``, ``W(t0) = 0`` gives
      ``W(t1) = W_c(t0, t1)`` of Eq. (8.85). ``"ode"`` integrates it (for ``frame="t0"``,
      ``Ẇ0 = Ψ B Bᵀ Ψᵀ`` with ``Ψ̇ = −Ψ A``, ``Ψ(t0) = I``, ``Ψ(t) = Φ(t0, t)``). ``"magnus"``
      uses that ``X ↦ L_X = (M ↦ X M + M Xᵀ)`` is a Lie-algebra homomorphism, so the Magnus
      expansion of the Lyapunov flow is that of ``(A, B Bᵀ)`` with the commutator
      ``[(X, S), (Y, R)] = ([X, Y], L_X R − L_Y S)``; a step ``(Ω, Σ)`` maps
      ``W ↦ e^Ω W e^{Ωᵀ} + ∫_0^1 e^{uΩ} Σ e^{uΩᵀ} du`` (Van Loan block exponential); for
      ``frame="t0"`` the step Gramians are summed backwards, ``S ← Φ_k^{-1} (G_k + S) Φ_k^{-T}``
      (one step's transition matrix inverted at a time).
    * Discrete: ``W = Σ_{k=k0}^{k1−1} Φ_{k1,k+1} Bd_k Bd_kᵀ Φ_{k1,k+1}ᵀ`` from the recursion
      ``W ← Ad_k W Ad_kᵀ + Bd_k Bd_kᵀ`` (``frame="t0"``: ``Φ_{k0,k+1} = Φ_{k+1,k0}^{-1}``, by the
      backward recursion ``S ← Ad_k^{-1} (Bd_k Bd_kᵀ + S) Ad_k^{-T}``).

    Examples
    --------
    >>> import numpy as np
    >>> from nhcontrol.systems import LTVSystem
    >>> sys = LTVSystem(np.zeros((2, 2)), lambda t: [[np.cos(t)], [np.sin(t)]])
    >>> g = gramian(sys, 0.0, np.pi)          # W = (π/2) I although rank [B, AB] = 1
    >>> g.rank, bool(np.allclose(g.W, np.pi / 2 * np.eye(2)))
    (2, True)
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
        A, B = np.asarray(s.A(t0f), dtype=float), np.asarray(s.B(t0f), dtype=float)
        # frame "t1": ∫_0^T e^{Aσ} B Bᵀ e^{Aᵀσ} dσ; frame "t0": the same with −A (σ = τ − t0)
        W = constant_gramian(A if frame == "t1" else -A, B @ B.T, t1f - t0f)
    elif method == "ode":
        W = _ltv_gramian(s, t0f, t1f, frame, ode_rtol)
    elif method == "magnus":
        W, Phi, Phis, Gs = _magnus_gramian(s, t0f, t1f, ode_rtol, int(max_steps))
        if frame == "t0":
            W = _backward_sum(Phis, Gs)
    else:
        raise LinearSystemError(f"method must be 'magnus' or 'ode', got {method!r}")
    W = 0.5 * (W + W.T)
    _check_finite(W, t0f, t1f, frame)
    rr = rank_decision(W, tol=tol, rtol=rtol, name="controllability Gramian W_c")
    return GramianResult(readonly(W), t0f, t1f, frame, False, rr, s.states)


def _check_finite(W: NDArray, t0: float, t1: float, frame: str) -> None:
    if not np.all(np.isfinite(W)):
        raise LinearSystemError(
            f"the controllability Gramian on [{t0:g}, {t1:g}] (frame={frame!r}) overflows float64: a mode "
            f"of the system grows like e^(λ T) with Re λ T beyond ~350 in this frame (unstable modes in "
            f"frame 't1', stable ones in frame 't0'); use a shorter interval or the other frame")


def constant_gramian(A: NDArray[np.float64], Q: NDArray[np.float64], T: float) -> NDArray[np.float64]:
    """``∫_0^T e^{Aσ} Q e^{Aᵀσ} dσ`` for constant ``A`` and ``Q = Qᵀ ⪰ 0``, accurate at every ``T``.

    Derived here (scaling and doubling): with ``h = T / 2^s`` and ``‖A‖ h ≤ 1/2`` the short
    Gramian ``G(h)`` comes from Van Loan's block exponential ``expm([[−A, Q], [0, Aᵀ]] h)``
    (factors at most ``e^{1/2}``, no cancellation), and

    ``G(2h) = G(h) + e^{Ah} G(h) e^{Aᵀh}``,  ``e^{2Ah} = (e^{Ah})²``,

    adds two positive semidefinite matrices at every doubling, so the relative error stays at a
    few ``s · eps`` for any horizon and any spectrum: no factor ``e^{−AT}`` is formed (the plain
    block exponential over ``T`` multiplies ``e^{AT}`` by a block that grows like ``e^{−AT}``,
    which loses all digits for a stable ``A`` at ``T ≈ 10``).
    """
    A = np.asarray(A, dtype=float)
    Q = np.asarray(Q, dtype=float)
    n = A.shape[0]
    q = float(np.abs(Q).max()) if Q.size else 0.0
    if q == 0.0 or T == 0.0:
        return np.zeros((n, n))
    a = float(np.abs(A).sum(axis=0).max()) if n else 0.0
    s = 0 if a * T <= 0.5 else int(np.ceil(np.log2(a * T / 0.5)))
    h = T / 2.0 ** s
    H = np.zeros((2 * n, 2 * n))
    H[:n, :n] = -A * h
    H[:n, n:] = (Q / q) * h
    H[n:, n:] = A.T * h
    F = expm(H)
    E = F[n:, n:].T                         # e^{Ah}
    G = E @ F[:n, n:]                       # G(h) / q
    G = 0.5 * (G + G.T)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(s):
            G = G + E @ G @ E.T
            G = 0.5 * (G + G.T)
            E = E @ E
    return q * G


def _backward_sum(Phis: NDArray, Gs: NDArray) -> NDArray[np.float64]:
    """``Σ_k Ψ_k G_k Ψ_kᵀ`` with ``Ψ_k = Φ_0^{-1} ⋯ Φ_k^{-1}`` (frame ``t0``) by the backward
    recursion ``S ← Φ_k^{-1} (G_k + S) Φ_k^{-T}``: one well-conditioned step solve at a time and
    sums of positive semidefinite terms, never the inverse of the whole transition matrix."""
    S = np.zeros_like(Gs[0])
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(len(Gs) - 1, -1, -1):
            S = np.linalg.solve(Phis[k], np.linalg.solve(Phis[k], Gs[k] + S).T)
            S = 0.5 * (S + S.T)
    return S


_GL3 = np.array([0.5 - np.sqrt(15.0) / 10.0, 0.5, 0.5 + np.sqrt(15.0) / 10.0])


def _lyap_comm(X: NDArray, S: NDArray, Y: NDArray, R: NDArray) -> tuple[NDArray, NDArray]:
    """``[(X, S), (Y, R)] = ([X, Y], L_X R − L_Y S)`` with ``L_X M = X M + M Xᵀ`` (stacked)."""
    XR = X @ R
    YS = Y @ S
    return X @ Y - Y @ X, XR + np.swapaxes(XR, -1, -2) - YS - np.swapaxes(YS, -1, -2)


def _magnus_gramian_steps(s: LTVSystem, starts: NDArray, h: float) -> tuple[NDArray, NDArray]:
    """Sixth-order Magnus step of the Lyapunov flow from each start: (Φ_k, G_k), (M, n, n) each."""
    n = s.nstates
    nodes = (starts[:, None] + h * _GL3[None, :]).reshape(-1)
    A = s.A(nodes).reshape(starts.size, 3, n, n)
    B = s.B(nodes).reshape(starts.size, 3, n, -1)
    Q = B @ np.swapaxes(B, -1, -2)
    c2, c3 = np.sqrt(15.0) * h / 3.0, 10.0 * h / 3.0
    a1 = (h * A[:, 1], h * Q[:, 1])
    a2 = (c2 * (A[:, 2] - A[:, 0]), c2 * (Q[:, 2] - Q[:, 0]))
    a3 = (c3 * (A[:, 2] - 2 * A[:, 1] + A[:, 0]), c3 * (Q[:, 2] - 2 * Q[:, 1] + Q[:, 0]))
    C1 = _lyap_comm(*a1, *a2)
    t = _lyap_comm(*a1, 2 * a3[0] + C1[0], 2 * a3[1] + C1[1])
    C2 = (-t[0] / 60.0, -t[1] / 60.0)
    L = (-20 * a1[0] - a3[0] + C1[0], -20 * a1[1] - a3[1] + C1[1])
    Rr = (a2[0] + C2[0], a2[1] + C2[1])
    c = _lyap_comm(*L, *Rr)
    Om = a1[0] + a3[0] / 12.0 + c[0] / 240.0
    Sg = a1[1] + a3[1] / 12.0 + c[1] / 240.0
    H = np.zeros((starts.size, 2 * n, 2 * n))
    H[:, :n, :n] = -Om
    H[:, :n, n:] = 0.5 * (Sg + np.swapaxes(Sg, -1, -2))
    H[:, n:, n:] = np.swapaxes(Om, -1, -2)
    F = expm_batch(H)
    Phi = np.swapaxes(F[:, n:, n:], -1, -2)
    G = Phi @ F[:, :n, n:]
    return Phi, G


def _magnus_gramian(s: LTVSystem, t0: float, t1: float, rtol: float,
                    max_steps: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray, NDArray]:
    n = s.nstates
    prev = None
    N = 16
    while True:
        h = (t1 - t0) / N
        starts = t0 + h * np.arange(N)
        with np.errstate(over="ignore", invalid="ignore"):
            Phis, Gs = _magnus_gramian_steps(s, starts, h)
            W = np.zeros((n, n))
            Phi = np.eye(n)
            for k in range(N):
                W = Phis[k] @ W @ Phis[k].T + Gs[k]
                Phi = Phis[k] @ Phi
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(Phi))):
            prev = None
        elif prev is not None:
            scale = max(np.abs(W).max(), np.finfo(float).tiny)
            if np.abs(W - prev[0]).max() <= rtol * scale and \
                    np.abs(Phi - prev[1]).max() <= rtol * max(1.0, np.abs(Phi).max()):
                return W, Phi, Phis, Gs
        if 2 * N > max_steps:
            raise SolverError(
                f"the Magnus Gramian on [{t0}, {t1}] did not converge to ode_rtol = {rtol} with "
                f"{N} steps; use method='ode', a looser ode_rtol or a larger max_steps")
        prev = (W, Phi)
        N *= 2


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
        Q = d.Bd[k0:k1] @ np.swapaxes(d.Bd[k0:k1], -1, -2)
        W = _backward_sum(d.Ad[k0:k1], Q)
    W = 0.5 * (W + W.T)
    _check_finite(W, float(d.times[k0]), float(d.times[k1]), frame)
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
