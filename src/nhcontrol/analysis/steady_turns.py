"""Linear stability of steady turns of bicycle-like models, and its two independent checks.

Derived here (thesis Ch. 9 names the stability of circular motions of the bicycle and the
e-scooter as future work; Basu-Mandal, Chatterjee & Papadopoulos, Proc. R. Soc. A 463 (2007)
1983-2003 is the published study). A steady turn
([`nhcontrol.models.bicycle_turns.SteadyTurn`][nhcontrol.models.bicycle_turns.SteadyTurn]) is a
relative equilibrium: its linearization is periodic with the heading period ``2 pi / |Omega|``,
and constant after the change of variables that rotates the horizontal deviations of the frame
into the heading frame (the torus' Eq. (6.76) argument). In the constant Jacobian ``J`` the
cyclic coordinates ``x_b, y_b, psi_b, theta_R, theta_F`` do not feed back; the remaining
"shape" block (lean, steer, their rates, the rear spin rate and any suspension states) has
one zero eigenvalue along the family (energy: neighbouring turns at another speed) and the
nontrivial eigenvalues that decide stability.

Checks: Floquet multipliers of the periodic linearization (`turn_floquet`) and a nonlinear
simulation from a perturbed initial state
([`nhcontrol.simulate.turn_simulation()`][nhcontrol.simulate.turn_simulation]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sl
from numpy.typing import NDArray

from .._util.errors import LinearSystemError
from ..models import bicycle_turns as bt
from .floquet import floquet
from .relative_equilibrium import MARGINAL_RTOL, linearize_relative_equilibrium

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["TurnStability", "turn_stability", "turn_floquet", "stability_boundary", "stable_ranges"]

FAMILY_ZERO_TOL = 1e-6
"""Largest ``|lambda| / max(1, max|lambda|)`` accepted as the family's zero eigenvalue."""


@dataclass(frozen=True, eq=False)
class TurnStability:
    """Eigenvalues of a steady turn's constant Jacobian.

    Attributes
    ----------
    J : (N, N) ndarray
        Constant Jacobian (heading frame).
    states : list of str
    eigenvalues : (k,) complex ndarray
        Nontrivial eigenvalues (shape block without the family's zero), by decreasing real part.
    family_zero : float
        ``|lambda|`` of the eigenvalue removed as the family's zero.
    max_real : float
        Largest real part among ``eigenvalues``.
    stable : bool
        ``max_real < -MARGINAL_RTOL * max(1, max|lambda|)`` (asymptotic stability of the shape
        variables; the turn is then orbitally stable up to a shift along the family).
    """

    J: NDArray[np.float64]
    states: list[str]
    eigenvalues: NDArray[np.complex128]
    family_zero: float
    max_real: float
    stable: bool


def turn_stability(cm: CompiledModel, turn: "bt.SteadyTurn") -> TurnStability:
    """Stability of a steady turn from the constant Jacobian (exact linearization).

    Raises
    ------
    LinearSystemError
        If the shape block has no eigenvalue near zero (the point is not on a family of turns).
    """
    J, states = bt.turn_jacobian(cm, turn)
    k = bt.shape_indices(states)
    lam = np.linalg.eigvals(J[np.ix_(k, k)])
    scale = max(1.0, float(np.abs(lam).max()))
    j = int(np.argmin(np.abs(lam)))
    z = float(abs(lam[j]))
    if z > FAMILY_ZERO_TOL * scale:
        raise LinearSystemError(f"turn_stability: the shape block has no zero eigenvalue (smallest |lambda| = "
                                f"{z:.3e}); is the turn a solution of the steady-turn equations?")
    rest = np.delete(lam, j)
    rest = rest[np.argsort(-rest.real)]
    mr = float(rest.real.max())
    return TurnStability(J=J, states=states, eigenvalues=rest, family_zero=z, max_real=mr,
                         stable=bool(mr < -MARGINAL_RTOL * scale))


def turn_floquet(cm: CompiledModel, turn: "bt.SteadyTurn", *, trivial_tol: float = 1e-5) -> dict:
    """Floquet multipliers of the periodic linearization against ``exp(T eig J)``.

    The periodic LTV linearization along the turn (one heading period ``T = 2 pi / |Omega|``) is
    integrated to its monodromy matrix ([`floquet()`][nhcontrol.analysis.floquet.floquet]) and compared
    with ``T(0)^{-1} expm(T J) T(0)`` from the constant Jacobian of the change of variables.

    Returns
    -------
    dict
        ``monodromy_rel_diff``, ``spectral_radius_nontrivial`` (multipliers farther than
        ``trivial_tol`` from 1), ``spectral_radius_constant`` (``exp(T max Re lambda)`` of
        `turn_stability`), ``stable_floquet``, ``stable_constant``, ``agree``, ``period``.

    Raises
    ------
    LinearSystemError
        For a straight motion (``Omega = 0``: no period).
    """
    if turn.Omega == 0.0:
        raise LinearSystemError("turn_floquet: straight running has no heading period (Omega = 0)")
    ref = bt.turn_reference(cm, turn)
    _, states = bt.turn_jacobian(cm, turn)
    lin = linearize_relative_equilibrium(cm, ref, bt.turn_partition(cm, front=states[0] == "theta_F"),
                                         lambda st: bt.heading_frame(st, turn.Omega))
    periodic = lin.periodic
    T = periodic.period
    fr = floquet(periodic)
    Tf, _ = bt.heading_frame(periodic.states, turn.Omega)
    T0 = Tf(0.0)
    X_const = np.linalg.solve(T0, sl.expm(T * lin.J) @ T0)
    mono = float(np.abs(fr.monodromy - X_const).max() / np.abs(X_const).max())
    mu = fr.multipliers
    nontrivial = mu[np.abs(mu - 1.0) > trivial_tol]
    rho = float(np.abs(nontrivial).max()) if nontrivial.size else 1.0
    ts = turn_stability(cm, turn)
    rho_c = math.exp(T * ts.max_real)
    stable_f = rho < 1.0 - trivial_tol
    return {"period": T, "monodromy_rel_diff": mono, "spectral_radius_nontrivial": rho,
            "spectral_radius_constant": rho_c, "spectral_radius_rel_diff": abs(rho - rho_c) / rho_c,
            "stable_floquet": bool(stable_f), "stable_constant": ts.stable,
            "agree": bool(stable_f == ts.stable)}


def stability_boundary(cm: CompiledModel, a: "bt.SteadyTurn", b: "bt.SteadyTurn", *, tol: float = 1e-10,
                       max_iter: int = 60) -> "bt.SteadyTurn":
    """Turn where the stability changes between neighbours ``a`` and ``b`` of a family.

    Bisection on the sign of ``max_real`` of `turn_stability` along the family
    ([`turn_between()`][nhcontrol.models.bicycle_turns.turn_between]) until the fraction
    interval is below ``tol``.

    Raises
    ------
    LinearSystemError
        ``a`` and ``b`` have the same stability.
    """
    sa = turn_stability(cm, a).stable
    if sa == turn_stability(cm, b).stable:
        raise LinearSystemError("stability_boundary: the two turns have the same stability")
    lo, hi = 0.0, 1.0
    best = a
    for _ in range(max_iter):
        if hi - lo < tol:
            break
        mid = 0.5 * (lo + hi)
        t = bt.turn_between(cm, a, b, mid)
        if turn_stability(cm, t).stable == sa:
            lo = mid
        else:
            hi, best = mid, t
    return best


def _turn_fields(t: "bt.SteadyTurn") -> dict[str, float]:
    return {"v": t.speed, "lean_deg": t.lean_deg, "steer_deg": t.steer_deg, "radius_m": t.radius}


def _crossing(cm: CompiledModel, t: "bt.SteadyTurn") -> dict[str, Any]:
    """The eigenvalue that decides stability at a boundary turn (largest real part; a complex
    pair: a Hopf boundary, a real one: a divergence boundary)."""
    ts = turn_stability(cm, t)
    lam = ts.eigenvalues[0]
    return {"eigenvalue": [float(lam.real), float(abs(lam.imag))],
            "crossing": "complex pair" if abs(lam.imag) > FAMILY_ZERO_TOL * max(1.0, abs(lam)) else "real"}


def _speed_extremum(cm: CompiledModel, a: "bt.SteadyTurn", m: "bt.SteadyTurn", b: "bt.SteadyTurn", *,
                    tol: float = 1e-9, max_iter: int = 80) -> "bt.SteadyTurn":
    """The fold between ``a`` and ``b`` whose middle neighbour ``m`` has the extreme speed:
    golden-section search of the speed along the family on both sides of ``m``."""
    sign = 1.0 if m.speed >= a.speed else -1.0           # a maximum (+) or a minimum (-) of v
    best = m
    g = (math.sqrt(5.0) - 1.0) / 2.0
    for lo_t, hi_t in ((a, m), (m, b)):
        lo, hi = 0.0, 1.0
        c, d = hi - g * (hi - lo), lo + g * (hi - lo)
        tc, td = bt.turn_between(cm, lo_t, hi_t, c), bt.turn_between(cm, lo_t, hi_t, d)
        for _ in range(max_iter):
            if hi - lo < tol:
                break
            if sign * tc.speed > sign * td.speed:
                hi, d, td = d, c, tc
                c = hi - g * (hi - lo)
                tc = bt.turn_between(cm, lo_t, hi_t, c)
            else:
                lo, c, tc = c, d, td
                d = lo + g * (hi - lo)
                td = bt.turn_between(cm, lo_t, hi_t, d)
        for t in (tc, td):
            if sign * t.speed > sign * best.speed:
                best = t
    return best


def stable_ranges(cm: CompiledModel, family: list) -> list[dict]:
    """Stable sections of a family of turns: each a set of turns, with its boundaries refined by
    `stability_boundary` and the folds of speed inside it.

    A family is a curve in the space of turns (continuation order), not a function of speed: it
    can fold in speed inside a stable section, so a section's speeds are the minimum and maximum
    over its turns (folds included), not the speeds at its two ends.

    Returns
    -------
    list of dict
        One per section, in family order:

        * ``v_min``, ``v_max`` [m/s]: the speed range over the section's turns (its boundary
          turns, the family's turns inside it and its folds);
        * ``boundaries``: the section's two ends in family order, each with ``kind``
          (``"stability gained"`` or ``"stability lost"`` in the family's direction, or
          ``"family end"`` when the family ends stable), ``v``, ``lean_deg``, ``steer_deg``,
          ``radius_m``, and for a stability boundary the ``eigenvalue`` ``[Re, |Im|]`` that
          crosses there (1/s) and ``crossing`` (``"complex pair"`` or ``"real"``);
        * ``folds``: the turns inside the section where the speed has a local extremum along
          the family (``v``, ``lean_deg``, ``steer_deg``, ``radius_m``, ``kind`` ``"maximum"``
          or ``"minimum"``), refined by golden-section search;
        * ``points``: the number of the family's turns inside the section;
        * ``v_from``, ``v_to``, ``lean_deg_from``, ``lean_deg_to``, ``steer_deg_from``,
          ``steer_deg_to``, ``radius_m_from``, ``radius_m_to``: the values at the two ends in
          family order.
    """
    st = [turn_stability(cm, t).stable for t in family]
    out, start, first = [], None, 0
    for i, s in enumerate(st):
        if s and start is None:
            first = i
            start = family[0] if i == 0 else stability_boundary(cm, family[i - 1], family[i])
            start_kind = "family end" if i == 0 else "stability gained"
        if start is not None and (not s or i == len(st) - 1):
            last = i if s else i - 1
            end = family[i] if s else stability_boundary(cm, family[i - 1], family[i])
            end_kind = "family end" if s else "stability lost"
            turns = [start] + list(family[first:last + 1]) + [end]
            folds = []
            for k in range(1, len(turns) - 1):
                dv0, dv1 = turns[k].speed - turns[k - 1].speed, turns[k + 1].speed - turns[k].speed
                if dv0 * dv1 < 0.0:
                    f = _speed_extremum(cm, turns[k - 1], turns[k], turns[k + 1])
                    if turn_stability(cm, f).stable:
                        folds.append({**_turn_fields(f), "kind": "maximum" if dv0 > 0 else "minimum"})
            speeds = [t.speed for t in turns] + [f["v"] for f in folds]
            bounds = []
            for t, kind in ((start, start_kind), (end, end_kind)):
                row: dict[str, Any] = {"kind": kind, **_turn_fields(t)}
                if kind != "family end":
                    row.update(_crossing(cm, t))
                bounds.append(row)
            out.append({"v_min": min(speeds), "v_max": max(speeds), "boundaries": bounds,
                        "folds": folds, "points": last - first + 1,
                        "v_from": start.speed, "v_to": end.speed, "lean_deg_from": start.lean_deg,
                        "lean_deg_to": end.lean_deg, "steer_deg_from": start.steer_deg,
                        "steer_deg_to": end.steer_deg, "radius_m_from": start.radius,
                        "radius_m_to": end.radius})
            start = None
    return out
