"""Floquet analysis of linear periodic systems (thesis Sect. 6.3, Eqs. (6.130)–(6.133)).

For ``ẋ = A(t) x`` with ``A(t + T) = A(t)`` the monodromy matrix ``X(T) = Φ(t0 + T, t0)`` maps the
state over one period. Its eigenvalues ``μ_j`` (Floquet multipliers, ``ρ_j`` in the thesis) decide
stability: the zero solution is asymptotically stable iff all ``|μ_j| < 1``. The Floquet exponents
are ``λ_j = log(μ_j) / T``, defined modulo ``2πi/T``; we return the principal branch
(``Im λ ∈ (−π/T, π/T]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import control
import numpy as np
from numpy.typing import NDArray

from .._util.errors import LinearSystemError
from .._util.validation import readonly
from ..systems.ltv import LTVSystem, as_ltv
from .transition import TRANSITION_RTOL, transition_matrix
from .._util.reprs import concise_repr

__all__ = ["floquet", "FloquetResult", "FLOQUET_TOL"]

FLOQUET_TOL = 1e-8
"""Default tolerance on ``|μ| − 1`` for the "marginal" classification."""


@dataclass(frozen=True, eq=False)
class FloquetResult:
    """Floquet multipliers and exponents of a periodic linear system.

    Attributes
    ----------
    monodromy : (n, n) ndarray
        ``Φ(t0 + T, t0)``.
    multipliers : (n,) complex ndarray
        Eigenvalues ``μ_j`` of the monodromy matrix, sorted by decreasing ``|μ|``.
    exponents : (n,) complex ndarray
        ``log(μ_j) / T`` on the principal branch, same order. ``Re λ_j = log|μ_j| / T`` is
        unique; ``Im λ_j`` only modulo ``2π/T``.
    period : float
    t0 : float
    spectral_radius : float
        ``max |μ_j|``.
    tol : float
        Tolerance on ``|μ| − 1`` for the classification.
    classification : {"stable", "marginal", "unstable"}
        ``"stable"`` if ``ρ < 1 − tol``, ``"unstable"`` if ``ρ > 1 + tol``, else ``"marginal"``
        (a multiplier on the unit circle within ``tol``: linear stability undecided, e.g. the
        conservative Mathieu equation or a neutral rigid-body mode).
    is_stable : bool
        ``classification == "stable"`` (asymptotic stability).
    """

    __repr__ = concise_repr

    monodromy: NDArray[np.float64]
    multipliers: NDArray[np.complex128]
    exponents: NDArray[np.complex128]
    period: float
    t0: float
    spectral_radius: float
    tol: float
    classification: Literal["stable", "marginal", "unstable"]
    is_stable: bool

    @property
    def is_unstable(self) -> bool:
        """Some ``|μ| > 1 + tol``."""
        return self.classification == "unstable"


def floquet(sys: LTVSystem | control.StateSpace, period: float | None = None, *, t0: float = 0.0,
            tol: float = FLOQUET_TOL, rtol: float = TRANSITION_RTOL,
            method: Literal["ode", "magnus"] = "ode") -> FloquetResult:
    """Monodromy matrix, Floquet multipliers and exponents.

    Parameters
    ----------
    sys : LTVSystem or control.StateSpace
        Periodic system (only ``A`` matters).
    period : float, optional
        ``T > 0``; defaults to ``sys.period``.
    t0 : float, default 0.0
        Start of the period (multipliers do not depend on it; the monodromy matrix is similar).
    tol : float, default 1e-8
        Tolerance on ``|μ| − 1`` for the ``"marginal"`` class. It must exceed the integration
        error of the monodromy matrix (``rtol`` times its growth over the period).
    rtol : float, default 1e-12
        Integration tolerance of the transition matrix.
    method : {"ode", "magnus"}, default "ode"
        Integrator of the monodromy matrix, see
        [`transition_matrix()`][nhcontrol.analysis.transition_matrix].

    Returns
    -------
    FloquetResult

    Raises
    ------
    LinearSystemError
        No period, a non-positive period, or a period different from ``sys.period``.

    Examples
    --------
    >>> import numpy as np
    >>> from nhcontrol.systems import LTVSystem
    >>> mathieu = LTVSystem(lambda t: [[0.0, 1.0], [-(0.25 + 0.3 * np.cos(t)), 0.0]], [[0.0], [1.0]],
    ...                     period=2 * np.pi)
    >>> floquet(mathieu).classification      # δ = 1/4 is inside the first tongue
    'unstable'
    """
    s = as_ltv(sys)
    if period is None:
        if s.period is None:
            raise LinearSystemError(
                "floquet() needs the period T: pass period= or build the LTVSystem with period=")
        T = s.period
    else:
        try:
            T = float(period)
        except (TypeError, ValueError) as exc:
            raise LinearSystemError(f"period must be a positive number, got {period!r}") from exc
        if not (np.isfinite(T) and T > 0):
            raise LinearSystemError(f"period must be a positive finite number T > 0, got {period!r}")
        if s.period is not None:
            r = T / s.period
            if abs(r - round(r)) > 1e-9 * max(1.0, r) or round(r) < 1:
                raise LinearSystemError(
                    f"period = {T} is not a multiple of the system's period {s.period}; pass "
                    "period=None to use the system's period")
    if not (tol > 0 and np.isfinite(tol)):
        raise LinearSystemError(f"tol must be a positive finite number, got {tol!r}")
    X = transition_matrix(s, float(t0) + T, float(t0), rtol=rtol, method=method)
    mu = np.linalg.eigvals(X).astype(complex)
    order = np.lexsort((-np.angle(mu), -np.abs(mu)))
    mu = mu[order]
    if np.any(mu == 0):
        raise LinearSystemError("a Floquet multiplier is exactly zero; the monodromy matrix is singular, "
                                "which cannot happen for a finite A(t); check the system")
    lam = np.log(mu) / T
    rho = float(np.abs(mu).max())
    if rho > 1 + tol:
        cls: Literal["stable", "marginal", "unstable"] = "unstable"
    elif rho < 1 - tol:
        cls = "stable"
    else:
        cls = "marginal"
    return FloquetResult(monodromy=readonly(X), multipliers=readonly(mu), exponents=readonly(lam),
                         period=T, t0=float(t0), spectral_radius=rho, tol=float(tol),
                         classification=cls, is_stable=cls == "stable")
