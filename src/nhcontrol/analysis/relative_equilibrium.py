"""Linearization along relative equilibria and stability thresholds of parameter families.

A steady motion that is an equilibrium of the equations reduced by a continuous symmetry
(straight or circular rolling of a body of revolution, thesis Sect. 6.3) has a periodic (or
constant) linearization; a change of variables ``z = T(t) δx`` built from the symmetry makes
it constant (Eq. (6.76); derivation in ``docs/theory/rolling_torus.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq

from .._util.errors import LinearSystemError
from ..linearization import Partition
from ..systems import LTVSystem, change_of_variables
from .._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["RelativeEquilibriumLinearization", "linearize_relative_equilibrium", "charpoly_root",
           "stability_threshold", "MARGINAL_RTOL"]

MARGINAL_RTOL = 1e-7
"""Real parts below ``MARGINAL_RTOL * max(1, max|λ|)`` count as zero (marginal stability)."""

Frame = Callable[[tuple[str, ...]], tuple[Callable[[float], Any], Callable[[float], Any]]]


@dataclass(frozen=True, eq=False)
class RelativeEquilibriumLinearization:
    """Periodic linearization along a relative equilibrium and its constant form.

    Attributes
    ----------
    periodic : LTVSystem
        ``A(t)``, ``B(t)`` of the third numerical procedure (constant for a steady reference).
    constant : LTVSystem
        The same in the variables ``z = T(t) δx`` (``periodic`` when no frame is given).
    J : (n, n) ndarray
        ``constant.A(0)``.
    """

    __repr__ = concise_repr

    periodic: LTVSystem
    constant: LTVSystem
    J: NDArray[np.float64]


def linearize_relative_equilibrium(cm: CompiledModel, ref: Reference, partition: Partition | dict,
                                   frame: Frame | None = None, *,
                                   rename: dict[str, str] | None = None) -> RelativeEquilibriumLinearization:
    """Linearize along ``ref`` and map to constant form with ``frame``.

    Parameters
    ----------
    cm : CompiledModel
    ref : Reference
    partition : Partition or mapping
    frame : callable, optional
        ``states -> (T, T_dot)`` (e.g. ``models.rolling_torus.heading_frame``); ignored for a
        steady reference.
    rename : dict, optional
        New names of some states in the constant form.

    Returns
    -------
    RelativeEquilibriumLinearization
    """
    part = partition if isinstance(partition, Partition) else Partition.from_dict(partition)
    periodic = LTVSystem.from_linearization(cm, ref, part)
    if frame is None or periodic.is_constant:
        return RelativeEquilibriumLinearization(periodic, periodic, np.asarray(periodic.A(0.0)))
    T, T_dot = frame(periodic.states)
    names = [(rename or {}).get(s, s) for s in periodic.states]
    constant = change_of_variables(periodic, T, T_dot, states=names)
    return RelativeEquilibriumLinearization(periodic, constant, np.asarray(constant.A(0.0)))


def charpoly_root(matrix_fn: Callable[[float], Any], k: int, bracket: tuple[float, float]) -> float:
    """Root in ``bracket`` of the coefficient of ``λ^(n-k)`` in ``det(λI - matrix_fn(v))``.

    For ``det = λ^(n-2) (λ^2 + c(v))`` (one nontrivial pair), ``k = 2`` gives the value where the
    pair turns from real (divergence) to imaginary (oscillation). Brent, ``xtol = 1e-14``.

    Raises
    ------
    LinearSystemError
        No sign change in ``bracket``.
    """
    def c(v: float) -> float:
        return float(np.real(np.poly(np.asarray(matrix_fn(v), dtype=float))[k]))

    lo, hi = bracket
    if np.sign(c(lo)) == np.sign(c(hi)):
        raise LinearSystemError(f"charpoly_root: coefficient {k} has the same sign at both ends of {bracket}")
    return float(brentq(c, lo, hi, xtol=1e-14, rtol=1e-15))


def stability_threshold(matrix_fn: Callable[[float], Any], bracket: tuple[float, float], *,
                        rtol: float = 1e-10, zero_rtol: float = MARGINAL_RTOL) -> float:
    """Parameter value in ``bracket`` where the family turns from unstable to (marginally) stable.

    Bisection on "some ``Re λ > zero_rtol * max(1, max|λ|)``" (robust to the trivial eigenvalues
    in Jordan blocks, which split by ~sqrt(eps)), to ``rtol`` relative.

    Raises
    ------
    LinearSystemError
        Not unstable at the lower end and stable at the upper end.
    """
    def unstable(v: float) -> bool:
        lam = np.linalg.eigvals(np.asarray(matrix_fn(v), dtype=float))
        return float(lam.real.max()) > zero_rtol * max(1.0, float(np.abs(lam).max()))

    lo, hi = bracket
    if not unstable(lo) or unstable(hi):
        raise LinearSystemError(f"stability_threshold: expected unstable at {lo} and stable at {hi}")
    while hi - lo > rtol * abs(hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if unstable(mid) else (lo, mid)
    return 0.5 * (lo + hi)
