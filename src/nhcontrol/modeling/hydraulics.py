"""Lumped-fluid hydraulic components (thesis Sect. 7.1.1, Eqs. (7.1)–(7.8)).

Each function returns a SymPy expression of its (symbolic or numeric) arguments, so the same
relation serves a symbolic model and a numeric check. The hydraulic circuit is divided into
control volumes of uniform pressure (lumped fluid theory); valves follow the semi-empirical
model; the cylinder force acts along the cylinder axis; seal friction is the Brown–McPhee model.

Laminar/turbulent blend (Eq. (7.6)). The turbulent flow ``gamma2 sqrt(|dp|) sign(dp)`` has a
vertical tangent at ``dp = 0``. Below ``|dp| <= dp_lim`` (2 bar in the thesis) the flow is
laminar, ``gamma1 dp``. The printed relation between the coefficients is garbled in the text
extraction; continuity of the flow at ``|dp| = dp_lim`` (``gamma1 dp_lim = gamma2
sqrt(dp_lim)``) fixes it (derived here):

$$
\\gamma_1 = \\gamma_2 / \\sqrt{\\Delta p_{lim}} .
$$

Physical ranges are checked for numeric arguments (bulk moduli, volumes, densities, time
constants, the transition pressure and the Stribeck velocity positive; areas and flow
coefficients non-negative; all finite): a `ModelError` names the function, the argument, its
value and the range, instead of an expression with ``zoo`` or a negative stiffness.

The blend is continuous but not differentiable at ``|dp| = dp_lim`` (the slope jumps from
``gamma1`` to ``gamma1 / 2``); it is smooth at ``dp = 0`` where linearizations are taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import math

import sympy as sp

from nhcontrol._util.errors import ModelError

__all__ = ["DP_LIM", "effective_bulk_modulus", "pressure_rate", "turbulent_laminar_flow",
           "valve_flow", "throttle_coefficient", "throttle_flow", "spool_rate", "cylinder_force",
           "brown_mcphee_friction"]

DP_LIM: float = 2.0e5
"""Laminar/turbulent transition pressure drop of Eq. (7.6): 2 bar [Pa]."""


def _s(value: Any) -> sp.Expr:
    return sp.sympify(value)


def _checked(value: Any, name: str, func: str, *, unit: str, rule: str = ">0", meaning: str = "",
             infinite_ok: bool = False) -> sp.Expr:
    """``value`` as a SymPy expression after its physical range is checked.

    A number must be finite and satisfy ``rule`` (``">0"`` or ``">=0"``); a symbolic value is
    refused only when SymPy knows it violates the rule (a symbol declared negative). The message
    names the function, the argument, its value with unit and the physical range.
    """
    if isinstance(value, bool) or value is None:
        raise ModelError(f"{func}: {name} must be a number or a SymPy expression [{unit}], got {value!r}")
    try:
        e = sp.sympify(value)
    except (sp.SympifyError, TypeError, ValueError) as exc:
        raise ModelError(f"{func}: {name} must be a number or a SymPy expression [{unit}], got "
                         f"{value!r}") from exc
    what = f" ({meaning})" if meaning else ""
    need = "> 0" if rule == ">0" else ">= 0"
    if infinite_ok:
        need += " (or sympy.oo, rigid)"
    if infinite_ok and e == sp.oo:
        return e
    if e.is_number:
        try:
            v = complex(e)
        except (TypeError, ValueError):
            v = complex(float("nan"))
        bad = v.imag != 0 or not math.isfinite(v.real) or (v.real <= 0 if rule == ">0" else v.real < 0)
        if bad:
            shown = "not finite" if not (math.isfinite(v.real) and math.isfinite(v.imag)) else f"{value!r}"
            raise ModelError(f"{func}: {name}{what} = {shown} {unit} is not physical; it must be a finite "
                             f"number {need} {unit}")
        return e
    if (rule == ">0" and e.is_positive is False) or (rule == ">=0" and e.is_nonnegative is False):
        raise ModelError(f"{func}: {name}{what} = {e} cannot be {need} (SymPy knows its sign); it must be "
                         f"{need} {unit}")
    return e


def effective_bulk_modulus(B_oil: Any, subvolumes: Sequence[tuple[Any, Any]]) -> sp.Expr:
    """Effective bulk modulus of a control volume, Eq. (7.2).

    $$
    \\frac{1}{B_e} = \\frac{1}{B_{oil}} + \\sum_k \\frac{1}{B_k}\\frac{V_k}{V},
    \\quad V = \\sum_k V_k .
    $$

    Parameters
    ----------
    B_oil : scalar or sympy expression
        Bulk modulus of the oil [Pa].
    subvolumes : sequence of (V_k, B_k)
        Subvolumes [m^3] (hoses, cylinder chambers) and the bulk moduli of their walls [Pa].

    Returns
    -------
    sympy.Expr
        ``B_e`` [Pa].

    Raises
    ------
    ModelError
        If no subvolume is given.
    """
    if len(subvolumes) == 0:
        raise ModelError("effective_bulk_modulus (Eq. (7.2)) needs at least one subvolume (V_k, B_k); "
                         "got none. Pass e.g. [(V_hose, B_hose)].")
    fn = "effective_bulk_modulus (Eq. (7.2))"
    B_oil = _checked(B_oil, "B_oil", fn, unit="Pa", meaning="bulk modulus of the oil")
    parts = [(_checked(Vk, f"V_{k} (subvolume {k})", fn, unit="m^3", rule=">=0"),
              _checked(Bk, f"B_{k} (wall modulus of subvolume {k})", fn, unit="Pa", infinite_ok=True))
             for k, (Vk, Bk) in enumerate(subvolumes)]
    V = sum((Vk for Vk, _ in parts), sp.S.Zero)
    _checked(V, "V = sum of the subvolumes", fn, unit="m^3", meaning="control volume")
    inv = 1 / B_oil + sum((Vk / (Bk * V) for Vk, Bk in parts), sp.S.Zero)
    return 1 / inv


def pressure_rate(B_e: Any, V: Any, flows: Sequence[Any], dV_dt: Any = 0) -> sp.Expr:
    """Pressure rate of a control volume, Eq. (7.1).

    $$
    \\dot p = \\frac{B_e}{V}\\Big(\\sum_k Q_k - \\frac{dV}{dt}\\Big)
    $$

    Parameters
    ----------
    B_e : scalar or sympy expression
        Effective bulk modulus [Pa]
        ([`effective_bulk_modulus()`][nhcontrol.modeling.hydraulics.effective_bulk_modulus]).
    V : scalar or sympy expression
        Volume [m^3] (may depend on coordinates, e.g. ``V_h + A l(s)``).
    flows : sequence
        Volume flow rates into the volume (positive in, negative out) [m^3/s].
    dV_dt : scalar or sympy expression
        Rate of change of the volume [m^3/s] (piston motion).
    """
    fn = "pressure_rate (Eq. (7.1))"
    B_e = _checked(B_e, "B_e", fn, unit="Pa", meaning="effective bulk modulus")
    V = _checked(V, "V", fn, unit="m^3", meaning="control volume")
    return B_e / V * (sum((_s(q) for q in flows), sp.S.Zero) - _s(dV_dt))


def turbulent_laminar_flow(gamma2: Any, dp: Any, dp_lim: Any = DP_LIM) -> sp.Expr:
    """Volume flow through an orifice with the laminar/turbulent blend of Eq. (7.6).

    $$
    Q = \\begin{cases} \\gamma_1\\,\\Delta p & |\\Delta p| \\le \\Delta p_{lim} \\\\
    \\gamma_2 \\sqrt{|\\Delta p|}\\,\\operatorname{sign}\\Delta p & |\\Delta p| > \\Delta p_{lim}
    \\end{cases}, \\qquad \\gamma_1 = \\gamma_2/\\sqrt{\\Delta p_{lim}} .
    $$

    Parameters
    ----------
    gamma2 : scalar or sympy expression
        Turbulent coefficient [m^3/(s sqrt(Pa))]: ``Cv_d U`` (valve) or ``Cv_t`` (throttle).
    dp : scalar or sympy expression
        Pressure drop in the direction of the flow [Pa].
    dp_lim : scalar
        Transition pressure drop [Pa]; 2 bar by default.
    """
    gamma2, dp = _s(gamma2), _s(dp)
    dp_lim = _checked(dp_lim, "dp_lim", "turbulent_laminar_flow (Eq. (7.6))", unit="Pa",
                      meaning="laminar/turbulent transition pressure drop")
    gamma1 = gamma2 / sp.sqrt(dp_lim)
    # three branches without Abs/sign so that symbolic derivatives stay plain expressions
    return sp.Piecewise((gamma1 * dp, sp.And(dp <= dp_lim, dp >= -dp_lim)),
                        (gamma2 * sp.sqrt(dp), dp > dp_lim), (-gamma2 * sp.sqrt(-dp), True))


def valve_flow(Cv_d: Any, U: Any, dp: Any, dp_lim: Any = DP_LIM) -> sp.Expr:
    """Flow through one path of a directional control valve, Eqs. (7.3) and (7.6).

    ``gamma2 = Cv_d U`` with ``U`` the normalized spool displacement of that path (``U >= 0``
    opens it). Use ``U`` for the paths P->A, B->T and ``-U`` for P->B, A->T of a 4/3 valve.
    """
    Cv_d = _checked(Cv_d, "Cv_d", "valve_flow (Eq. (7.3))", unit="m^3/(s sqrt(Pa))", rule=">=0",
                    meaning="valve flow coefficient")
    return turbulent_laminar_flow(Cv_d * _s(U), dp, dp_lim)


def throttle_coefficient(Cd: Any, A_t: Any, rho_oil: Any) -> sp.Expr:
    """Semi-empirical throttle coefficient ``Cv_t = Cd A_t sqrt(2 / rho_oil)``, Eq. (7.5)."""
    fn = "throttle_coefficient (Eq. (7.5))"
    return (_checked(Cd, "Cd", fn, unit="(dimensionless)", meaning="discharge coefficient")
            * _checked(A_t, "A_t", fn, unit="m^2", rule=">=0", meaning="throttle area")
            * sp.sqrt(2 / _checked(rho_oil, "rho_oil", fn, unit="kg/m^3", meaning="oil density")))


def throttle_flow(Cv_t: Any, dp: Any, dp_lim: Any = DP_LIM) -> sp.Expr:
    """Flow through a throttle valve, Eqs. (7.5)–(7.6)."""
    return turbulent_laminar_flow(Cv_t, dp, dp_lim)


def spool_rate(U: Any, U_ref: Any, tau: Any) -> sp.Expr:
    """First-order spool dynamics ``dU/dt = (U_ref - U) / tau``, Eq. (7.4)."""
    return (_s(U_ref) - _s(U)) / _checked(tau, "tau", "spool_rate (Eq. (7.4))", unit="s",
                                          meaning="spool time constant")


def cylinder_force(A_piston: Any, p_piston: Any, A_rod: Any, p_rod: Any, F_mu: Any = 0) -> sp.Expr:
    """Cylinder force in the extension direction, Eq. (7.7): ``A1 p1 - A2 p2 - F_mu``."""
    return _s(A_piston) * _s(p_piston) - _s(A_rod) * _s(p_rod) - _s(F_mu)


def brown_mcphee_friction(s_dot: Any, F_c: Any, F_s: Any, v_s: Any, sigma2: Any) -> sp.Expr:
    """Brown–McPhee seal friction, Eq. (7.8).

    $$
    F_\\mu = F_c \\tanh\\frac{4\\dot s}{v_s}
    + (F_s - F_c)\\,\\frac{\\dot s / v_s}{\\big(\\tfrac14 (\\dot s/v_s)^2 + \\tfrac34\\big)^2}
    + \\sigma_2 \\dot s
    $$

    Odd in ``s_dot`` and smooth; the Stribeck term peaks at ``s_dot = v_s`` with value
    ``F_s - F_c``, so the friction there is ``F_c tanh 4 + F_s - F_c + sigma2 v_s``.
    Its slope at rest is ``4 F_c / v_s + (F_s - F_c) 16 / (9 v_s) + sigma2``.
    """
    fn = "brown_mcphee_friction (Eq. (7.8))"
    sd, F_c, F_s, sigma2 = _s(s_dot), _s(F_c), _s(F_s), _s(sigma2)
    v_s = _checked(v_s, "v_s", fn, unit="m/s", meaning="Stribeck velocity")
    r = sd / v_s
    return F_c * sp.tanh(4 * r) + (F_s - F_c) * r / (sp.Rational(1, 4) * r**2 + sp.Rational(3, 4))**2 \
        + sigma2 * sd
