"""Observability of LTI, LTV and discrete LTV systems, by duality with controllability.

For ``ẋ = A(t) x + B(t) u``, ``y = C(t) x + D(t) u`` the state is observable on ``[t0, t1]``
iff the observability Gramian

$$
W_o(t_0, t_1) = \\int_{t_0}^{t_1} \\Phi^T(\\tau, t_0)\\, C^T(\\tau) C(\\tau)\\, \\Phi(\\tau, t_0)\\, d\\tau
$$

is non-singular (Kalman's duality; e.g. Chen, *Linear System Theory and Design*, Thm. 6.O11).
The dual system runs in reversed time ``σ = −t``,

$$ \\bar A(\\sigma) = A^T(-\\sigma), \\qquad \\bar B(\\sigma) = C^T(-\\sigma), $$

whose transition matrix is ``Φ̄(σ1, σ0) = Φᵀ(−σ0, −σ1)``; its controllability Gramian of
Eq. (8.85) over ``[−t1, −t0]`` is exactly ``W_o(t0, t1)`` (derived in
docs/theory/estimation.md). So every test here is the corresponding controllability test
([`gramian()`][nhcontrol.analysis.gramian.gramian], [`controllability()`][nhcontrol.analysis.controllability.controllability],
[`silverman_meadows()`][nhcontrol.analysis.silverman_meadows.silverman_meadows]) on the dual system — the same
transition machinery, tolerances and evidence (singular values, tolerance, unobservable
directions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import control
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .._util.validation import readonly
from ..systems.discrete import DiscreteLTV
from ..systems.ltv import LTVSystem, as_ltv
from .controllability import PBHMode, RankResult, controllability
from .gramian import GRAMIAN_RTOL, gramian
from .._util.reprs import concise_repr

__all__ = ["observability", "ObservabilityResult", "obsv_matrix", "observability_gramian",
           "ObservabilityGramianResult", "dual_system"]


def obsv_matrix(A: ArrayLike, C: ArrayLike) -> NDArray[np.float64]:
    """Kalman observability matrix ``[C; CA; …; CA^{n−1}]`` (n p, n)."""
    A = np.asarray(A, dtype=float)
    C = np.atleast_2d(np.asarray(C, dtype=float))
    blocks = [C]
    for _ in range(A.shape[0] - 1):
        blocks.append(blocks[-1] @ A)
    return np.vstack(blocks)


@dataclass(frozen=True, eq=False)
class ObservabilityResult:
    """Observability of an LTI pair ``(A, C)`` (the controllability of ``(Aᵀ, Cᵀ)``).

    Attributes
    ----------
    kalman : RankResult
        Rank of ``[C; CA; …; CA^{n−1}]`` (decided on its transpose, so that
        ``kalman.uncontrollable_directions`` is an orthonormal basis of the unobservable
        subspace ``ker O``).
    pbh : tuple of PBHMode
        Rank of ``[λI − A; C]`` per eigenvalue of ``A`` (decided on the transpose).
    unobservable_modes : (q,) complex ndarray
        Eigenvalues whose PBH rank is below ``n``.
    is_observable : bool
    states, outputs : tuple of str
    """

    __repr__ = concise_repr

    kalman: RankResult
    pbh: tuple[PBHMode, ...]
    unobservable_modes: NDArray[np.complex128]
    is_observable: bool
    states: tuple[str, ...]
    outputs: tuple[str, ...]

    @property
    def rank(self) -> int:
        """Kalman rank."""
        return self.kalman.rank

    @property
    def singular_values(self) -> NDArray[np.float64]:
        """Singular values of the observability matrix (descending)."""
        return self.kalman.singular_values

    @property
    def tol(self) -> float:
        """Threshold of the Kalman rank decision."""
        return self.kalman.tol

    @property
    def unobservable_directions(self) -> NDArray[Any]:
        """Orthonormal basis of ``ker [C; CA; …]`` (n, n − rank)."""
        return self.kalman.uncontrollable_directions

    @property
    def is_detectable(self) -> bool:
        """All unobservable modes have ``Re λ < 0``."""
        return bool(np.all(np.real(self.unobservable_modes) < 0))


def _outputs_of(s: LTVSystem, t: float) -> NDArray[np.float64]:
    return s.output_matrices(t)[0]


def observability(sys: control.StateSpace | LTVSystem | tuple[ArrayLike, ArrayLike], *,
                  t: float | None = None, tol: float | None = None, rtol: float | None = None,
                  method: Literal["both", "kalman"] = "both") -> ObservabilityResult:
    """Kalman rank and PBH observability tests of an LTI pair ``(A, C)``.

    Parameters
    ----------
    sys : control.StateSpace, (A, C) tuple or LTVSystem
        An LTV system only when constant, or with ``t`` (the frozen pair ``(A(t), C(t))``,
        which says nothing about the LTV system: use `observability_gramian()` or
        ``silverman_meadows(..., test="observability")``).
    t : float, optional
    tol, rtol : float, optional
        Rank thresholds, see [`rank_decision()`][nhcontrol.analysis.rank_decision].
    method : {"both", "kalman"}

    Returns
    -------
    ObservabilityResult

    Examples
    --------
    >>> import numpy as np
    >>> res = observability((np.array([[0.0, 1.0], [0.0, 0.0]]), np.array([[1.0, 0.0]])))
    >>> res.rank, res.is_observable
    (2, True)
    """
    if isinstance(sys, tuple) and len(sys) == 2:
        A, C = (np.asarray(m, dtype=float) for m in sys)
        states = tuple(f"x[{i}]" for i in range(A.shape[0]))
        outputs = tuple(f"y[{i}]" for i in range(np.atleast_2d(C).shape[0]))
    else:
        s = as_ltv(sys)
        if not (s.is_constant and s.outputs_constant):
            if t is None:
                raise LinearSystemError(
                    "observability() tests an LTI pair, got a time-varying LTVSystem; pass t= to "
                    "test the frozen pair (A(t), C(t)), or use observability_gramian / "
                    "silverman_meadows(..., test='observability') for the LTV system")
            tt = float(t)
        else:
            tt = 0.0 if s.t_range is None else s.t_range[0]
        A, C = s.A(tt), _outputs_of(s, tt)
        states, outputs = s.states, s.outputs
    dual = controllability((A.T, np.atleast_2d(C).T), tol=tol, rtol=rtol, method=method)
    return ObservabilityResult(kalman=dual.kalman, pbh=dual.pbh,
                               unobservable_modes=dual.uncontrollable_modes,
                               is_observable=dual.is_controllable, states=tuple(states),
                               outputs=tuple(outputs))


def dual_system(sys: LTVSystem | control.StateSpace) -> LTVSystem:
    """The dual system in reversed time ``σ = −t``: ``Ā(σ) = Aᵀ(−σ)``, ``B̄(σ) = Cᵀ(−σ)``.

    Its controllability (Gramian over ``[−t1, −t0]``, Silverman–Meadows at ``−t``) is the
    observability of ``sys`` (module docstring). States keep their names; the inputs of the
    dual are the outputs of ``sys``.
    """
    s = as_ltv(sys)
    rng = None if s.t_range is None else (-s.t_range[1], -s.t_range[0])
    bps = [-b for b in s.breakpoints]
    if s.is_constant and s.outputs_constant:
        A0 = s.A(0.0 if s.t_range is None else s.t_range[0])
        return LTVSystem(np.array(A0.T), np.array(s.C.T), states=s.states, inputs=s.outputs,
                         t_range=rng, breakpoints=bps)

    def Abar(sig: ArrayLike) -> NDArray[np.float64]:
        return np.swapaxes(s.A(-np.asarray(sig, dtype=float)), -1, -2)

    def Bbar(sig: ArrayLike) -> NDArray[np.float64]:
        return np.swapaxes(s.output_matrices(-np.asarray(sig, dtype=float))[0], -1, -2)

    return LTVSystem(Abar, Bbar, states=s.states, inputs=s.outputs, t_range=rng,
                     period=s.period, vectorized=True, breakpoints=bps)


@dataclass(frozen=True, eq=False)
class ObservabilityGramianResult:
    """An observability Gramian with its rank decision.

    Attributes
    ----------
    W : (n, n) ndarray
        Symmetric positive semidefinite Gramian (read-only).
    t0, t1 : float
    frame : {"t0", "t1"}
        ``"t0"``: ``∫ Φᵀ(τ, t0) CᵀC Φ(τ, t0) dτ`` (initial state reconstructed); ``"t1"``:
        ``Φ(τ, t1)`` (final state).
    discrete : bool
    rank_result : RankResult
        Rank decision on ``W`` (``uncontrollable_directions`` = unobservable directions).
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
        return self.rank_result.rank

    @property
    def is_observable(self) -> bool:
        """``W`` non-singular."""
        return self.rank_result.is_controllable

    @property
    def singular_values(self) -> NDArray[np.float64]:
        return self.rank_result.singular_values

    @property
    def tol(self) -> float:
        return self.rank_result.tol

    @property
    def unobservable_directions(self) -> NDArray[np.float64]:
        """Orthonormal basis of ``ker W`` (initial states invisible in ``y`` on ``[t0, t1]``)."""
        return self.rank_result.uncontrollable_directions


def observability_gramian(sys: LTVSystem | control.StateSpace | DiscreteLTV,
                          t0: float | None = None, t1: float | None = None, *,
                          frame: Literal["t0", "t1"] = "t0", tol: float | None = None,
                          rtol: float | None = None, ode_rtol: float = GRAMIAN_RTOL,
                          method: Literal["magnus", "ode"] = "magnus",
                          max_steps: int = 1 << 16) -> ObservabilityGramianResult:
    """Observability Gramian over ``[t0, t1]`` by duality with [`gramian()`][nhcontrol.analysis.gramian.gramian].

    Parameters
    ----------
    sys : LTVSystem, control.StateSpace or DiscreteLTV
        With its outputs ``C`` (``LTVSystem.output_matrices``, e.g.
        ``LTVSystem.from_linearization(..., outputs="declared")``).
    t0, t1 : float
        Interval (sample times for a ``DiscreteLTV``; default its whole horizon).
    frame : {"t0", "t1"}, default "t0"
        ``"t0"``: ``W_o = ∫ Φᵀ(τ, t0) CᵀC Φ(τ, t0) dτ``; ``"t1"``: with ``Φ(τ, t1)``.
    tol, rtol, ode_rtol, method, max_steps
        As in `gramian()` (applied to the dual system).

    Returns
    -------
    ObservabilityGramianResult

    Notes
    -----
    Continuous: `gramian()` of `dual_system()` over ``[−t1, −t0]`` (``frame="t1"`` of the dual
    for ``frame="t0"`` here). Discrete: ``W = Σ_{k=k0}^{k1−1} Φᵀ_{k,k0} C_kᵀ C_k Φ_{k,k0}``,
    the measurements of the samples ``k0 … k1 − 1``, from the dual ``DiscreteLTV`` with
    ``Ād_j = Ad_{k1−1−j}ᵀ``, ``B̄d_j = C_{k1−1−j}ᵀ``.

    Examples
    --------
    >>> import numpy as np, control
    >>> sys = control.ss([[0, 1], [0, 0]], [[0], [1]], [[1, 0]], 0)
    >>> g = observability_gramian(sys, 0.0, 1.0)      # [[T, T²/2], [T²/2, T³/3]]
    >>> np.round(g.W, 12).tolist()
    [[1.0, 0.5], [0.5, 0.333333333333]]
    """
    if frame not in ("t0", "t1"):
        raise LinearSystemError(f"frame must be 't0' or 't1', got {frame!r}")
    if isinstance(sys, DiscreteLTV):
        return _discrete(sys, t0, t1, frame, tol, rtol)
    if t0 is None or t1 is None:
        raise LinearSystemError("observability_gramian(sys, t0, t1) needs the interval [t0, t1] "
                                "for a continuous system")
    t0f, t1f = float(t0), float(t1)
    if not (np.isfinite(t0f) and np.isfinite(t1f) and t1f > t0f):
        raise LinearSystemError(f"the Gramian interval must satisfy t0 < t1, got t0 = {t0}, t1 = {t1}")
    s = as_ltv(sys)
    s.check_time(np.array([t0f, t1f]), "observability Gramian interval")
    g = gramian(dual_system(s), -t1f, -t0f, frame="t1" if frame == "t0" else "t0", tol=tol,
                rtol=rtol, ode_rtol=ode_rtol, method=method, max_steps=max_steps)
    return ObservabilityGramianResult(g.W, t0f, t1f, frame, False, g.rank_result, s.states)


def _discrete(d: DiscreteLTV, t0: float | None, t1: float | None, frame: str,
              tol: float | None, rtol: float | None) -> ObservabilityGramianResult:
    from .gramian import _sample_index

    k0 = 0 if t0 is None else _sample_index(d, t0, "t0")
    k1 = d.nsteps if t1 is None else _sample_index(d, t1, "t1")
    if k1 <= k0:
        raise LinearSystemError(f"the Gramian interval must contain at least one step: got "
                                f"t0 = {d.times[k0]}, t1 = {d.times[k1]}")
    ks = list(range(k1 - 1, k0 - 1, -1))
    Ad = np.stack([d.Ad[k].T for k in ks])
    Bd = np.stack([d.output_matrices(k)[0].T for k in ks])
    dual = DiscreteLTV(Ad, Bd, d.dt, 0.0, d.states, tuple(d.outputs))
    g = gramian(dual, frame="t1" if frame == "t0" else "t0", tol=tol, rtol=rtol)
    return ObservabilityGramianResult(g.W, float(d.times[k0]), float(d.times[k1]), frame, True,
                                      g.rank_result, d.states)
