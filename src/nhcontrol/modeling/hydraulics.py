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

The blend is continuous but not differentiable at ``|dp| = dp_lim`` (the slope jumps from
``gamma1`` to ``gamma1 / 2``); it is smooth at ``dp = 0`` where linearizations are taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sympy as sp

from nhcontrol._util.errors import ModelError

__all__ = ["DP_LIM", "effective_bulk_modulus", "pressure_rate", "turbulent_laminar_flow",
           "valve_flow", "throttle_coefficient", "throttle_flow", "spool_rate", "cylinder_force",
           "brown_mcphee_friction"]

DP_LIM: float = 2.0e5
"""Laminar/turbulent transition pressure drop of Eq. (7.6): 2 bar [Pa]."""


def _s(value: Any) -> sp.Expr:
    return sp.sympify(value)


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
    V = sum((_s(Vk) for Vk, _ in subvolumes), sp.S.Zero)
    inv = 1 / _s(B_oil) + sum((_s(Vk) / (_s(Bk) * V) for Vk, Bk in subvolumes), sp.S.Zero)
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
    return _s(B_e) / _s(V) * (sum((_s(q) for q in flows), sp.S.Zero) - _s(dV_dt))


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
    gamma2, dp, dp_lim = _s(gamma2), _s(dp), _s(dp_lim)
    gamma1 = gamma2 / sp.sqrt(dp_lim)
    # three branches without Abs/sign so that symbolic derivatives stay plain expressions
    return sp.Piecewise((gamma1 * dp, sp.And(dp <= dp_lim, dp >= -dp_lim)),
                        (gamma2 * sp.sqrt(dp), dp > dp_lim), (-gamma2 * sp.sqrt(-dp), True))


def valve_flow(Cv_d: Any, U: Any, dp: Any, dp_lim: Any = DP_LIM) -> sp.Expr:
    """Flow through one path of a directional control valve, Eqs. (7.3) and (7.6).

    ``gamma2 = Cv_d U`` with ``U`` the normalized spool displacement of that path (``U >= 0``
    opens it). Use ``U`` for the paths P->A, B->T and ``-U`` for P->B, A->T of a 4/3 valve.
    """
    return turbulent_laminar_flow(_s(Cv_d) * _s(U), dp, dp_lim)


def throttle_coefficient(Cd: Any, A_t: Any, rho_oil: Any) -> sp.Expr:
    """Semi-empirical throttle coefficient ``Cv_t = Cd A_t sqrt(2 / rho_oil)``, Eq. (7.5)."""
    return _s(Cd) * _s(A_t) * sp.sqrt(2 / _s(rho_oil))


def throttle_flow(Cv_t: Any, dp: Any, dp_lim: Any = DP_LIM) -> sp.Expr:
    """Flow through a throttle valve, Eqs. (7.5)–(7.6)."""
    return turbulent_laminar_flow(Cv_t, dp, dp_lim)


def spool_rate(U: Any, U_ref: Any, tau: Any) -> sp.Expr:
    """First-order spool dynamics ``dU/dt = (U_ref - U) / tau``, Eq. (7.4)."""
    return (_s(U_ref) - _s(U)) / _s(tau)


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
    sd, F_c, F_s, v_s, sigma2 = _s(s_dot), _s(F_c), _s(F_s), _s(v_s), _s(sigma2)
    r = sd / v_s
    return F_c * sp.tanh(4 * r) + (F_s - F_c) * r / (sp.Rational(1, 4) * r**2 + sp.Rational(3, 4))**2 \
        + sigma2 * sd
