"""Hydraulically actuated three-dimensional four-bar mechanism (thesis Sect. 7.3).

Mechanical subsystem
--------------------
``n = 10`` coordinates of Eq. (7.84), ``x = [x_G2, y_G2, z_G2, psi2, theta2, phi2, phi32, phi43,
s, alpha]``; ``m = 9`` holonomic constraints of Eq. (7.74); ``l = 0``. Link 2 (input) has the
orientation ``R2 = R_psi2 R_theta2 R_phi2`` (Z-Y-X, Eq. (7.73)), link 3 ``R3 = R2 R_phi32``,
link 4 ``R4 = R3 R_phi43``; the links lie along their body ``Y`` axes and are slender rods
(``I_xx = I_zz = m L^2 / 12``, ``I_yy = 0``) with the values of Table 7.1. Gravity acts along
``-Z1``. The cylinder (orientation ``Rc = R_psi2 R_theta2 R_alpha``) is massless: its length
``s`` and angle ``alpha`` enter only the cylinder loop (the last two rows of (7.74)), and its
force acts on link 2 at ``G2`` along the cylinder axis.

Sign of the cylinder loop (derived here). The text extraction prints the eighth constraint as
``d1 + r^Y_OcG2 - r^Y_O1G2``; with ``r_O1Oc = [0, -d1, 0]`` (Eq. (7.78)) the loop
``r_O1Oc + r_OcG2 = r_O1G2`` reads ``-d1 + r^Y_OcG2 - r^Y_O1G2 = 0``, the form that gives the
printed closed forms ``s0^2 = d1^2 + L2^2/4 + d1 L2 cos phi2`` and
``tan alpha0 = sin phi2 / (cos phi2 + 2 d1 / L2)`` (Eq. (7.85)); it is the one used here.

Chamber pressures
-----------------
The cylinder force of Eq. (7.7) is ``F_cyl = A2 p2 - A3 p3 - F_mu(s_dot)`` with ``p2`` the
piston-side and ``p3`` the rod-side chamber pressure (Sect. 7.3.2) and Brown–McPhee friction
(Eq. (7.8)). The piston area is ``A2 = pi D2^2 / 4``; the rod-side area is the annulus
``A3 = pi (D2^2 - D3^2) / 4`` (``D2`` piston, ``D3`` rod diameter, Table 7.2). This choice of
annulus (derived here) is the one that reproduces the printed equilibrium
``p1 = p2 ~ 2.82 MPa`` for ``p3 = 3.5 MPa`` (Eq. (7.99)); the rod cross-section
``pi D3^2 / 4`` would give 0.66 MPa.

In this model the three pressures ``p = [p1, p2, p3]`` are the inputs ``u`` of the mechanical
subsystem. At an equilibrium of the hydraulic circuit (valve neutral, ``U = 0``) they are
constant, so the statics and the multipliers below are exact.

Equilibrium (Eqs. (7.84)–(7.99))
--------------------------------
For an input angle ``phi2`` the loop closes in closed form (derived here): with
``C = L2 [cos phi2, sin phi2]`` and ``O4 = [L1, 0]`` in the ``Y1 Z1`` plane,
``theta3 = atan2(O4 - C) + acos((L3^2 + c^2 - L4^2) / (2 L3 c))`` (``c = |O4 - C|``, the
assembly branch of Eq. (7.98)), ``theta4 = atan2(O4 - D)``, ``phi32 = theta3 - phi2``,
``phi43 = theta4 - theta3``. The valve is neutral, so no flow crosses the throttle:
``p1 = p2``; ``p3`` is free (chosen), and ``p2`` follows from virtual work
(the planar statics of Eq. (7.90)):

$$
(A_2 p_2 - A_3 p_3)\\,\\frac{ds}{d\\phi_2}
= g \\sum_j m_j \\frac{d z_{Gj}}{d\\phi_2} .
$$

"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.modeling import MultibodySystem, check_parameters, hydraulics, rot_x, rot_y, rot_z
from nhcontrol._util.reprs import concise_repr

if TYPE_CHECKING:  # pragma: no cover
    from nhcontrol.compiled import CompiledModel

__all__ = [
    "build", "model", "equilibrium", "linearization", "build_with_circuit", "COORDINATES", "INPUTS",
    "MECHANICAL_DEFAULTS", "HYDRAULIC_DEFAULTS", "DEFAULTS", "PARTITION", "FourBarEquilibrium",
    "piston_areas", "circuit_equations", "CircuitJacobians", "circuit_jacobians", "reduced_rhs",
    "STATES", "circuit_rates", "spool_rates", "counterpart_jacobian", "TorquePulse",
    "torque_generalized_force", "torque_input_column", "check_hydraulic_parameters"
]

STATES: tuple[str, ...] = ("phi2", "phi2_d", "p1", "p2", "p3", "U")
"""State of the 6x6 Jacobian of Eq. (7.96)."""

COORDINATES: tuple[str, ...] = ("x_G2", "y_G2", "z_G2", "psi2", "theta2", "phi2", "phi32", "phi43",
                                "s", "alpha")
"""Coordinates of Eq. (7.84)."""
INPUTS: tuple[str, ...] = ("p1", "p2", "p3")
"""Chamber pressures (inputs of the mechanical subsystem) [Pa]."""

MECHANICAL_DEFAULTS: Mapping[str, float] = {"L1": 10.0, "L2": 2.0, "L3": 8.0, "L4": 5.0, "d1": 1.0,
                                            "m2": 2.0, "m3": 8.0, "m4": 5.0, "g": 9.81}
"""Table 7.1 (lengths [m], masses [kg]) and gravity [m/s^2]."""
HYDRAULIC_DEFAULTS: Mapping[str, float] = {
    "p_P": 7.6e6, "p_T": 0.1e6, "rho_oil": 850.0, "B_oil": 1.5e9, "B_h": 5.5e8, "B_c": 3.15e10,
    "V_h1": 4.71e-5, "V_h2": 3.14e-5, "V_h3": 7.85e-5, "A_t": 2.83e-5, "Cv_d": 2.138e-8, "Cd": 0.8,
    "D2": 0.080, "D3": 0.035, "l_cyl": 0.9, "c1": 0.43, "c2": 1.0, "F_c": 210.0, "F_s": 830.0,
    "v_s": 1.25e-2, "sigma2": 330.0, "tau_v": 0.0045}
"""Table 7.2 (SI units: Pa, kg/m^3, m^3, m^2, m, N, m/s, N s/m, s)."""
DEFAULTS: Mapping[str, float] = {**MECHANICAL_DEFAULTS,
                                 **{k: HYDRAULIC_DEFAULTS[k] for k in ("D2", "D3", "F_c", "F_s", "v_s",
                                                                      "sigma2")}}
"""Parameters of the mechanical model (the cylinder force needs D2, D3 and the friction data)."""

PARTITION: dict[str, list[str]] = dict(independent=["phi2"], admissible_dependent=[],
                                       dependent=[c for c in COORDINATES if c != "phi2"])
"""Partition of Eq. (7.95): phi2 independent, the other nine dependent."""


def piston_areas(D2: float = 0.080, D3: float = 0.035) -> tuple[float, float]:
    """Piston-side area ``A2 = pi D2^2/4`` and rod-side annulus ``A3 = pi (D2^2 - D3^2)/4`` [m^2]."""
    if not (math.isfinite(D2) and math.isfinite(D3) and 0 < D3 < D2):
        raise ModelError(f"cylinder diameters must satisfy 0 < D3 < D2 (rod inside the piston), "
                         f"got D2 = {D2!r} m, D3 = {D3!r} m")
    return math.pi * D2**2 / 4, math.pi * (D2**2 - D3**2) / 4


def _values(overrides: Mapping[str, float]) -> dict[str, float]:
    vals = {**DEFAULTS, **dict(overrides)}
    bad = sorted(set(overrides) - set(DEFAULTS))
    if bad:
        raise ModelError(f"unknown parameter(s) {bad} of the hydraulic four-bar; valid names are "
                         f"{list(DEFAULTS)}")
    positive = tuple(k for k in DEFAULTS if k not in ("F_c", "F_s", "sigma2"))
    out = check_parameters(vals, positive=positive,
                           requirement="hydraulic four-bar: lengths, masses, g, diameters and v_s "
                                       "must be positive finite numbers; friction data finite")
    piston_areas(out["D2"], out["D3"])
    return out


def build(**overrides: float) -> MultibodySystem:
    """Symbolic mechanical subsystem of the hydraulic four-bar, driven by the chamber pressures.

    Parameters
    ----------
    **overrides : float
        Values replacing [`DEFAULTS`][nhcontrol.models.hydraulic_fourbar.DEFAULTS] (Table 7.1 and
        the cylinder data of Table 7.2).

    Returns
    -------
    MultibodySystem
        ``n = 10``, ``m = 9``, ``l = 0``; inputs ``[p1, p2, p3]`` [Pa].

    Raises
    ------
    ModelError
        On an unknown parameter name or a non-positive length, mass or diameter.
    """
    return _build(False, _values(overrides), {})


def build_with_circuit(**overrides: float) -> MultibodySystem:
    """The four-bar with its circuit inside the model: first-order states ``p1, p2, p3, U``.

    The pressures and the spool position are first-order states of the
    [`MultibodySystem`][nhcontrol.modeling.MultibodySystem] (``add_first_order_states``) with
    the rates of [`circuit_equations()`][nhcontrol.models.hydraulic_fourbar.circuit_equations]
    (``set_rates``); ``U_ref`` is the model's one other input. Compile the mechanics with
    ``.compile()`` and the rates with ``nhcontrol.compiled.compile_rates``; then
    ``nhcontrol.linearization.linearize_first_order_system`` gives the 6x6 Jacobian (7.96).

    Parameters
    ----------
    **overrides : float
        Mechanical or hydraulic parameters.

    Returns
    -------
    MultibodySystem
        Inputs ``[p1, p2, p3, U, U_ref]``; first-order states ``[p1, p2, p3, U]``.
    """
    mech, hyd = _split(overrides)
    return _build(True, _values(mech), hyd)


def _build(with_circuit: bool, vals: dict[str, float], hyd: dict[str, float]) -> MultibodySystem:
    mb = MultibodySystem("hydraulic_fourbar_circuit" if with_circuit else "hydraulic_fourbar")
    xG, yG, zG, psi2, th2, phi2, phi32, phi43, s, alpha = mb.add_coordinates(" ".join(COORDINATES))
    syms = dict(zip(vals, mb.add_parameters(**vals)))
    L1, L2, L3, L4, d1 = (syms[k] for k in ("L1", "L2", "L3", "L4", "d1"))
    m2, m3, m4, g = (syms[k] for k in ("m2", "m3", "m4", "g"))
    if with_circuit:
        p1, p2, p3 = mb.add_first_order_states(" ".join(INPUTS))
        U = mb.add_first_order_states("U")
        U_ref = mb.add_inputs("U_ref")
    else:
        p1, p2, p3 = mb.add_inputs(" ".join(INPUTS))
    R2 = rot_z(psi2) * rot_y(th2) * rot_x(phi2)
    R3 = R2 * rot_x(phi32)
    R4 = R3 * rot_x(phi43)
    Rc = rot_z(psi2) * rot_y(th2) * rot_x(alpha)
    ey = sp.Matrix([0, 1, 0])
    rG2 = sp.Matrix([xG, yG, zG])
    rC = rG2 + R2 * ey * L2 / 2
    rD = rC + R3 * ey * L3
    rO2 = rD + R4 * ey * L4  # the ground pivot of link 4 (r_O2 of Eq. (7.76))

    def rod(mass: sp.Expr, length: sp.Expr) -> sp.Matrix:
        return sp.diag(mass * length**2 / 12, 0, mass * length**2 / 12)

    link2 = mb.add_body("link2", mass=m2, inertia=rod(m2, L2), position=rG2, orientation=R2)
    mb.add_body("link3", mass=m3, inertia=rod(m3, L3), position=rC + R3 * ey * L3 / 2, orientation=R3)
    mb.add_body("link4", mass=m4, inertia=rod(m4, L4), position=rD + R4 * ey * L4 / 2, orientation=R4)
    mb.add_gravity(g, (0, 0, -1))
    # Eq. (7.74)
    rO1 = rG2 - R2 * ey * L2 / 2
    v = R2 * sp.Matrix([1, 0, 0])
    for i, name in enumerate(("O1_x", "O1_y", "O1_z")):
        mb.add_holonomic(rO1[i], name)
    mb.add_holonomic(v[1], "X2_perp_Y1")
    mb.add_holonomic(v[2], "X2_perp_Z1")
    mb.add_holonomic(rO2[1] - L1, "O4_y")
    mb.add_holonomic(rO2[2], "O4_z")
    rOcG2 = Rc * ey * s
    rO1G2 = R2 * ey * L2 / 2
    mb.add_holonomic(-d1 + rOcG2[1] - rO1G2[1], "cylinder_y")
    mb.add_holonomic(rOcG2[2] - rO1G2[2], "cylinder_z")
    # Eqs. (7.7)-(7.8): cylinder force on link 2 at G2 along the cylinder axis
    A2 = sp.pi * syms["D2"] ** 2 / 4
    A3 = sp.pi * (syms["D2"] ** 2 - syms["D3"] ** 2) / 4
    s_dot = mb.velocities[COORDINATES.index("s")]
    F_mu = hydraulics.brown_mcphee_friction(s_dot, syms["F_c"], syms["F_s"], syms["v_s"], syms["sigma2"])
    F_cyl = hydraulics.cylinder_force(A2, p2, A3, p3, F_mu)
    mb.add_force(link2, Rc * ey * F_cyl, rG2)
    if with_circuit:
        H, W = circuit_equations(s, s_dot, (p1, p2, p3), U, U_ref, **hyd)
        mb.set_rates({p1: H[0], p2: H[1], p3: H[2], U: W[0]})
    return mb


@lru_cache(maxsize=4)
def _compiled(items: tuple[tuple[str, float], ...]) -> "CompiledModel":
    from nhcontrol.compiled.recipe import cached_model

    return cached_model(build, **dict(items))


def model(**overrides: float) -> "CompiledModel":
    """Compiled [`build()`][nhcontrol.models.hydraulic_fourbar.build] (cached)."""
    vals = _values(overrides)
    return _compiled(tuple(sorted(vals.items())))


@dataclass(frozen=True)
class FourBarEquilibrium:
    """Equilibrium of the hydraulic four-bar with the valve neutral (Eqs. (7.84)–(7.99)).

    Attributes
    ----------
    x : (10,) ndarray
        Coordinates in the order of [`COORDINATES`][nhcontrol.models.hydraulic_fourbar.COORDINATES]
        (angles in rad).
    p : (3,) ndarray
        Pressures ``[p1, p2, p3]`` [Pa] (``p1 = p2``).
    U : float
        Spool position (0, neutral).
    cylinder_force : float
        ``A2 p2 - A3 p3`` [N] (friction vanishes at rest).
    """

    __repr__ = concise_repr

    x: NDArray[np.float64]
    p: NDArray[np.float64]
    U: float
    cylinder_force: float


def equilibrium(phi2_deg: float = 60.0, p3: float = 3.5e6, **overrides: float) -> FourBarEquilibrium:
    """Equilibrium configuration and pressures for an input angle (Eqs. (7.84)–(7.90)).

    Parameters
    ----------
    phi2_deg : float
        Input-link angle ``phi2`` [deg].
    p3 : float
        Rod-side pressure [Pa] (free at the neutral valve; 3.5 MPa in Eq. (7.99)).
    **overrides : float
        Parameter values replacing [`DEFAULTS`][nhcontrol.models.hydraulic_fourbar.DEFAULTS].

    Returns
    -------
    FourBarEquilibrium

    Raises
    ------
    ReferenceMotionError
        If the loop cannot close at ``phi2`` or the cylinder is at a dead point (``ds/dphi2 = 0``).

    Examples
    --------
    >>> eq = equilibrium(60.0, 3.5e6)
    >>> print(f"{eq.p[1] / 1e6:.4f} MPa")
    2.8205 MPa
    """
    v = _values(overrides)
    if not (math.isfinite(phi2_deg) and math.isfinite(p3)):
        raise ReferenceMotionError(f"phi2_deg and p3 must be finite, got {phi2_deg!r}, {p3!r}")
    L1, L2, L3, L4, d1 = (v[k] for k in ("L1", "L2", "L3", "L4", "d1"))
    phi2 = math.radians(phi2_deg)
    C = L2 * np.array([math.cos(phi2), math.sin(phi2)])
    CO4 = np.array([L1, 0.0]) - C
    c = float(np.hypot(*CO4))
    cos_beta = (L3**2 + c**2 - L4**2) / (2 * L3 * c)
    if not -1.0 <= cos_beta <= 1.0:
        raise ReferenceMotionError(f"the four-bar loop does not close at phi2 = {phi2_deg} deg: "
                                   f"|C O4| = {c:.6g} m is outside [|L3 - L4|, L3 + L4] = "
                                   f"[{abs(L3 - L4):.6g}, {L3 + L4:.6g}] m; choose another phi2")
    th3 = math.atan2(CO4[1], CO4[0]) + math.acos(cos_beta)
    D = C + L3 * np.array([math.cos(th3), math.sin(th3)])
    DO4 = np.array([L1, 0.0]) - D
    th4 = math.atan2(DO4[1], DO4[0])
    yG, zG = C / 2
    s = math.hypot(yG + d1, zG)
    alpha = math.atan2(zG, yG + d1)
    x = np.array([0.0, yG, zG, 0.0, 0.0, phi2, (th3 - phi2) % (2 * math.pi),
                  (th4 - th3) % (2 * math.pi), s, alpha])
    # velocity closure L2 e'(phi2) + L3 e'(th3) w3 + L4 e'(th4) w4 = 0, e'(t) = [-sin t, cos t]
    ep = lambda t: np.array([-math.sin(t), math.cos(t)])  # noqa: E731
    w3, w4 = np.linalg.solve(np.column_stack([L3 * ep(th3), L4 * ep(th4)]), -L2 * ep(phi2))
    dz2 = L2 / 2 * math.cos(phi2)
    dz3 = L2 * math.cos(phi2) + L3 / 2 * math.cos(th3) * w3
    dz4 = L2 * math.cos(phi2) + L3 * math.cos(th3) * w3 + L4 / 2 * math.cos(th4) * w4
    dV = v["g"] * (v["m2"] * dz2 + v["m3"] * dz3 + v["m4"] * dz4)
    ds = -d1 * L2 * math.sin(phi2) / (2 * s)
    if abs(ds) < 1e-12 * L2:
        raise ReferenceMotionError(f"the cylinder is at a dead point at phi2 = {phi2_deg} deg "
                                   f"(ds/dphi2 = {ds:.3g} m/rad): it cannot hold the mechanism; "
                                   f"choose phi2 away from 0 and 180 deg")
    F = dV / ds
    A2, A3 = piston_areas(v["D2"], v["D3"])
    p2 = (F + A3 * p3) / A2
    return FourBarEquilibrium(x=_readonly(x), p=_readonly(np.array([p2, p2, p3])), U=0.0,
                              cylinder_force=float(F))


def _readonly(a: NDArray[np.float64]) -> NDArray[np.float64]:
    a = np.asarray(a, dtype=float)
    a.flags.writeable = False
    return a


def circuit_equations(s: sp.Expr, s_dot: sp.Expr, p: sp.MatrixBase | tuple[sp.Expr, ...], U: sp.Expr,
                      U_ref: sp.Expr, **overrides: float) -> tuple[sp.Matrix, sp.Matrix]:
    r"""Pressure and spool equations of the four-bar circuit, Eqs. (7.79)–(7.82) and (7.4).

    Valve wiring (derived here: the standard closed-centre 4/3 valve): port A feeds control volume 1 (hose between valve and throttle), the throttle joins
    volume 1 to the piston chamber (volume 2), port B is the rod chamber (volume 3). For
    ``U >= 0`` the valve connects P->A and B->T, for ``U < 0`` A->T and P->B; each open path
    carries ``Cv_d |U|`` times the blended orifice law of Eq. (7.6):

    $$
    Q_{A1} = \begin{cases} C_{vd} U\,\phi(p_P - p_1) & U \ge 0 \\
                           C_{vd} U\,\phi(p_1 - p_T) & U < 0 \end{cases},\quad
    Q_{B1} = \begin{cases} C_{vd} U\,\phi(p_3 - p_T) & U \ge 0 \\
                           C_{vd} U\,\phi(p_P - p_3) & U < 0 \end{cases},\quad
    Q_{A2} = C_{vt}\,\phi(p_1 - p_2),
    $$

    with ``phi`` the laminar/turbulent law with unit coefficient. Then (Eq. (7.81))
    ``p1' = Be1/V1 (Q_A1 - Q_A2)``, ``p2' = Be2/V2 (Q_A2 - A2 s')``,
    ``p3' = Be3/V3 (A3 s' - Q_B1)`` with ``V2 = V_h2 + A2 l2(s)``, ``V3 = V_h3 + A3 (l - l2(s))``,
    ``l2 = s - c1 - c2`` (Eq. (7.80)) and the moduli of Eq. (7.82).

    At ``U = 0`` the flows are continuous but their ``U``-derivative jumps (``C_vd phi(p_P - p1)``
    from the right, ``C_vd phi(p1 - p_T)`` from the left). Differentiating these expressions
    with SymPy takes the ``U >= 0`` branch, i.e. the right derivative (opening towards P->A).

    Parameters
    ----------
    s, s_dot : sympy expressions
        Cylinder length [m] and its rate [m/s].
    p : three sympy expressions
        Pressures ``p1, p2, p3`` [Pa].
    U, U_ref : sympy expressions
        Normalized spool position and its reference.
    **overrides : float
        Values replacing
        [`HYDRAULIC_DEFAULTS`][nhcontrol.models.hydraulic_fourbar.HYDRAULIC_DEFAULTS].

    Returns
    -------
    H : (3, 1) sympy Matrix
        Pressure rates ``p' = H(x, x', p, U)`` (Eq. (7.12)).
    W : (1, 1) sympy Matrix
        Spool rate ``U' = W(U, U_ref)`` (Eq. (7.13)).
    """
    bad = sorted(set(overrides) - set(HYDRAULIC_DEFAULTS))
    if bad:
        raise ModelError(f"unknown hydraulic parameter(s) {bad}; valid names are {list(HYDRAULIC_DEFAULTS)}")
    h = check_hydraulic_parameters(overrides)
    p1, p2, p3 = (sp.sympify(q) for q in p)
    A2, A3 = piston_areas(h["D2"], h["D3"])
    Cvt = hydraulics.throttle_coefficient(h["Cd"], h["A_t"], h["rho_oil"])

    def phi(dp: sp.Expr) -> sp.Expr:
        return hydraulics.turbulent_laminar_flow(1, dp)

    Cvd, pP, pT = h["Cv_d"], h["p_P"], h["p_T"]
    QA1 = sp.Piecewise((Cvd * U * phi(pP - p1), U >= 0), (Cvd * U * phi(p1 - pT), True))
    QB1 = sp.Piecewise((Cvd * U * phi(p3 - pT), U >= 0), (Cvd * U * phi(pP - p3), True))
    QA2 = hydraulics.throttle_flow(Cvt, p1 - p2)
    l2 = s - h["c1"] - h["c2"]
    l3 = h["l_cyl"] - l2
    V1 = sp.sympify(h["V_h1"])
    V2 = h["V_h2"] + A2 * l2
    V3 = h["V_h3"] + A3 * l3
    Be1 = hydraulics.effective_bulk_modulus(h["B_oil"], [(h["V_h1"], h["B_h"])])
    Be2 = hydraulics.effective_bulk_modulus(h["B_oil"], [(h["V_h2"], h["B_h"]), (A2 * l2, h["B_c"])])
    Be3 = hydraulics.effective_bulk_modulus(h["B_oil"], [(h["V_h3"], h["B_h"]), (A3 * l3, h["B_c"])])
    H = sp.Matrix([hydraulics.pressure_rate(Be1, V1, [QA1, -QA2]),
                   hydraulics.pressure_rate(Be2, V2, [QA2], A2 * s_dot),
                   hydraulics.pressure_rate(Be3, V3, [-QB1], -A3 * s_dot)])
    W = sp.Matrix([hydraulics.spool_rate(U, U_ref, h["tau_v"])])
    return H, W


def _split(overrides: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    mech = {k: v for k, v in overrides.items() if k in DEFAULTS}
    hyd = {k: v for k, v in overrides.items() if k in HYDRAULIC_DEFAULTS and k not in DEFAULTS}
    bad = sorted(set(overrides) - set(DEFAULTS) - set(HYDRAULIC_DEFAULTS))
    if bad:
        raise ModelError(f"unknown parameter(s) {bad} of the hydraulic four-bar; valid names are "
                         f"{list(DEFAULTS) + [k for k in HYDRAULIC_DEFAULTS if k not in DEFAULTS]}")
    check_hydraulic_parameters(hyd)
    return mech, hyd


_HYDRAULIC_RANGES: dict[str, tuple[str, str, str]] = {
    # name: (rule, unit, meaning); rule ">0", ">=0", ">p_T", "(0,1]" or "finite"
    "p_T": (">=0", "Pa", "tank pressure"),
    "p_P": (">p_T", "Pa", "supply pressure"),
    "rho_oil": (">0", "kg/m^3", "oil density"),
    "B_oil": (">0", "Pa", "bulk modulus of the oil"),
    "B_h": (">0", "Pa", "bulk modulus of the hose walls"),
    "B_c": (">0", "Pa", "bulk modulus of the cylinder walls"),
    "V_h1": (">0", "m^3", "hose volume 1"),
    "V_h2": (">0", "m^3", "hose volume 2"),
    "V_h3": (">0", "m^3", "hose volume 3"),
    "A_t": (">0", "m^2", "throttle area"),
    "Cv_d": (">0", "m^3/(s sqrt(Pa))", "valve flow coefficient"),
    "Cd": ("(0,1]", "", "discharge coefficient"),
    "D2": (">0", "m", "piston diameter"),
    "D3": (">0", "m", "rod diameter"),
    "l_cyl": (">0", "m", "cylinder length"),
    "c1": ("finite", "m", "cylinder offset c1"),
    "c2": ("finite", "m", "cylinder offset c2"),
    "F_c": (">=0", "N", "Coulomb friction"),
    "F_s": (">=0", "N", "static friction"),
    "v_s": (">0", "m/s", "Stribeck velocity"),
    "sigma2": (">=0", "N s/m", "viscous friction"),
    "tau_v": (">0", "s", "spool time constant"),
}
"""Physical range of every hydraulic parameter (Table 7.2), checked by `check_hydraulic_parameters`."""


def check_hydraulic_parameters(overrides: Mapping[str, Any]) -> dict[str, float]:
    """Check hydraulic parameter values (with the defaults of Table 7.2 for the others).

    Every value must be a finite real number in its physical range: bulk moduli, volumes,
    the oil density, the throttle area, the valve coefficient, the cylinder length, the Stribeck
    velocity and the spool time constant positive; the discharge coefficient in ``(0, 1]``; the
    tank pressure and the friction data non-negative; the supply pressure above the tank
    pressure; the rod thinner than the piston.

    Returns
    -------
    dict
        All hydraulic parameters as floats.

    Raises
    ------
    ModelError
        Naming every bad parameter with its value, unit, meaning and physical range.
    """
    h: dict[str, Any] = {**HYDRAULIC_DEFAULTS, **dict(overrides)}
    out: dict[str, float] = {}
    problems: list[str] = []
    for name, (rule, unit, meaning) in _HYDRAULIC_RANGES.items():
        val = h[name]
        u = f" {unit}" if unit else ""
        try:
            if isinstance(val, bool):
                raise TypeError
            num = float(val)
        except (TypeError, ValueError):
            problems.append(f"{name} = {val!r} ({meaning}) is not a real number")
            continue
        if not math.isfinite(num):
            problems.append(f"{name} = {val!r} ({meaning}) is not finite")
            continue
        out[name] = num
        need = {">0": "> 0", ">=0": ">= 0", "(0,1]": "in (0, 1]"}.get(rule)
        ok = {">0": num > 0, ">=0": num >= 0, "(0,1]": 0 < num <= 1}.get(rule, True)
        if not ok:
            problems.append(f"{name} = {num:g}{u} ({meaning}) must be {need}{u} "
                            f"(Table 7.2: {HYDRAULIC_DEFAULTS[name]:g})")
    if "p_P" in out and "p_T" in out and not out["p_P"] > out["p_T"]:
        problems.append(f"p_P = {out['p_P']:g} Pa (supply pressure) must be above p_T = {out['p_T']:g} Pa "
                        f"(tank pressure), or no valve position drives the cylinder (Table 7.2: "
                        f"{HYDRAULIC_DEFAULTS['p_P']:g} > {HYDRAULIC_DEFAULTS['p_T']:g})")
    if out.get("D2", 0) > 0 and out.get("D3", 0) > 0 and not out["D3"] < out["D2"]:
        problems.append(f"D3 = {out['D3']:g} m (rod) must be smaller than D2 = {out['D2']:g} m (piston)")
    if problems:
        raise ModelError("hydraulic four-bar: parameter value(s) outside their physical range: "
                         + "; ".join(problems))
    return out


@lru_cache(maxsize=8)
def _circuit_functions(hyd_items: tuple[tuple[str, float], ...]) -> tuple[Any, Any, Any]:
    xs = sp.symbols("x0:10")
    xds = sp.symbols("xd0:10")
    ps = sp.symbols("p0:3")
    U, Ur = sp.symbols("U U_ref")
    i_s = COORDINATES.index("s")
    H, W = circuit_equations(xs[i_s], xds[i_s], ps, U, Ur, **dict(hyd_items))
    args = (xs, xds, ps, U, Ur)
    jac = sp.Matrix.hstack(H.jacobian(sp.Matrix(xs)), H.jacobian(sp.Matrix(xds)),
                           H.jacobian(sp.Matrix(ps)), H.jacobian(sp.Matrix([U])))
    wjac = sp.Matrix.hstack(W.jacobian(sp.Matrix([U])), W.jacobian(sp.Matrix([Ur])))
    return (sp.lambdify(args, H, "numpy"), sp.lambdify(args, jac, "numpy"),
            sp.lambdify(args, wjac, "numpy"))


@lru_cache(maxsize=8)
def _circuit_scalar_symbols(hyd_items: tuple[tuple[str, float], ...]) -> tuple[tuple, Any]:
    """The one-point arguments ``(s, s_d, p1, p2, p3, U)`` and ``H`` of the circuit."""
    s, sd = sp.symbols("s s_d")
    ps = sp.symbols("p0:3")
    U = sp.Symbol("U")
    H, _ = circuit_equations(s, sd, ps, U, sp.Symbol("U_ref"), **dict(hyd_items))
    return (s, sd, *ps, U), H


@lru_cache(maxsize=8)
def _circuit_scalar(hyd_items: tuple[tuple[str, float], ...]) -> Any:
    """``H`` for one point with the ``math`` module: Piecewise becomes if/else (fast, no NaN branches)."""
    args, H = _circuit_scalar_symbols(hyd_items)
    return sp.lambdify(args, list(H), "math")


@lru_cache(maxsize=8)
def _circuit_scalar_jacobian(hyd_items: tuple[tuple[str, float], ...]) -> Any:
    """``∂H/∂[s, s_d, p1, p2, p3, U]`` for one point (``math`` module, no branch hoisting)."""
    args, H = _circuit_scalar_symbols(hyd_items)
    return sp.lambdify(args, list(H.jacobian(sp.Matrix(args))), "math")


@dataclass(frozen=True)
class CircuitJacobians:
    """Exact partial derivatives of the circuit equations at the equilibrium (Eqs. (7.26), (7.28)).

    Attributes
    ----------
    H_x, H_xd : (3, 10) ndarray
        ``∂H/∂x``, ``∂H/∂ẋ``.
    H_p : (3, 3) ndarray
        ``∂H/∂p``.
    H_U : (3, 1) ndarray
        ``∂H/∂U``: the right derivative at ``U = 0`` (see [`circuit_equations()`][nhcontrol.models.hydraulic_fourbar.circuit_equations]).
    W_U, W_Uref : (1, 1) ndarray
        ``∂W/∂U = -1/tau_v``, ``∂W/∂U_ref = 1/tau_v``.
    H : (3,) ndarray or None
        The pressure rates ``H(x0, 0, p0, U0)`` at the equilibrium (zero there): passed as
        ``H0``, the linearization checks the reference's ``ṗ0`` against them (Eq. (7.19)).
    """

    __repr__ = concise_repr

    H_x: NDArray[np.float64]
    H_xd: NDArray[np.float64]
    H_p: NDArray[np.float64]
    H_U: NDArray[np.float64]
    W_U: NDArray[np.float64]
    W_Uref: NDArray[np.float64]
    H: NDArray[np.float64] | None = None

    def as_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of [`nhcontrol.linearization.linearize_with_first_order_states()`][nhcontrol.linearization.linearize_with_first_order_states]."""
        return dict(H_x=self.H_x, H_xd=self.H_xd, H_z=self.H_p, H_w=self.H_U, W_w=self.W_U,
                    W_r=self.W_Uref, z_names=INPUTS, w_names=("U",), r_names=("U_ref",),
                    H0=self.H)


def circuit_jacobians(eq: FourBarEquilibrium, **hydraulic_overrides: float) -> CircuitJacobians:
    """Partial derivatives of [`circuit_equations()`][nhcontrol.models.hydraulic_fourbar.circuit_equations] at an equilibrium (exact, SymPy).

    Use with
    [`nhcontrol.linearization.linearize_with_first_order_states()`][nhcontrol.linearization.linearize_with_first_order_states]
    for the 6x6
    Jacobian of Eq. (7.96):

    ```python
    cm = model(); eq = equilibrium(60.0)
    ref = Reference.equilibrium(cm, eq.x, u=eq.p)
    res = linearize_with_first_order_states(cm, ref, PARTITION, **circuit_jacobians(eq).as_kwargs())
    ```
    """
    _, hyd = _split(hydraulic_overrides) if hydraulic_overrides else ({}, {})
    key = tuple(sorted(hyd.items()))
    fJ, fH, Wj, dest = _circuit_point_plan(key)
    s0, p0, U0 = float(eq.x[_I_S]), [float(v) for v in eq.p], float(eq.U)
    try:   # H depends on x, xd only through s, s_d; one point, active Piecewise branches only
        vals = fJ(s0, 0.0, *p0, U0) + fH(s0, 0.0, *p0, U0)
    except (ZeroDivisionError, ValueError):
        vals = [math.nan] * 21
    if Wj is None:           # a spool law whose Jacobian is not constant: evaluate it here
        Wj = np.asarray(_circuit_functions(key)[2](eq.x, np.zeros(10), eq.p, eq.U, 0.0), dtype=float)
    vals = np.array(vals + [float(Wj[0, 0]), float(Wj[0, 1])], dtype=float)
    if not (math.isfinite(float(np.add.reduce(vals))) and np.isfinite(Wj).all()):
        raise ReferenceMotionError(f"the circuit Jacobian is not finite at p = {list(eq.p)} Pa, "
                                   f"s = {eq.x[8]} m (a chamber volume or pressure out of range?)")
    # one read-only buffer (its views are read-only and C-contiguous): [H_x, H_xd, H_p, H_U,
    # W_U, W_Uref, H]
    buf = np.zeros(_BUF_SIZE)
    buf[dest] = vals
    buf.flags.writeable = False
    return CircuitJacobians(H_x=buf[:30].reshape(3, 10), H_xd=buf[30:60].reshape(3, 10),
                            H_p=buf[60:69].reshape(3, 3), H_U=buf[69:72].reshape(3, 1),
                            W_U=buf[72:73].reshape(1, 1), W_Uref=buf[73:74].reshape(1, 1),
                            H=buf[74:77])


_I_S = COORDINATES.index("s")
_BUF_SIZE = 77


@lru_cache(maxsize=8)
def _circuit_point_plan(hyd_items: tuple[tuple[str, float], ...]) -> tuple[Any, Any, Any, Any]:
    """``(∂H/∂[s, s_d, p, U], H, [∂W/∂U, ∂W/∂U_ref] or None, dest)`` for `circuit_jacobians`:
    ``dest`` places the 18 partials (row-major ``(3, 6)``), the 3 rates and the 2 spool partials
    in its buffer ``[H_x (3, 10), H_xd (3, 10), H_p (3, 3), H_U (3, 1), W_U, W_Uref, H (3,)]``."""
    dest = []
    for i in range(3):
        dest += [10 * i + _I_S, 30 + 10 * i + _I_S, 60 + 3 * i, 61 + 3 * i, 62 + 3 * i, 69 + i]
    dest += [74, 75, 76, 72, 73]
    return (_circuit_scalar_jacobian(hyd_items), _circuit_scalar(hyd_items),
            _spool_jacobian(hyd_items), np.array(dest, dtype=np.intp))


@lru_cache(maxsize=8)
def _spool_jacobian(hyd_items: tuple[tuple[str, float], ...]) -> NDArray[np.float64] | None:
    """``[∂W/∂U, ∂W/∂U_ref]`` (1, 2) when it is constant (the linear spool law, Eq. (7.4)),
    else None."""
    U, Ur = sp.symbols("U U_ref")
    _, W = circuit_equations(sp.Symbol("s"), sp.Symbol("s_d"), sp.symbols("p0:3"), U, Ur,
                             **dict(hyd_items))
    J = sp.Matrix.hstack(W.jacobian(sp.Matrix([U])), W.jacobian(sp.Matrix([Ur])))
    if J.free_symbols:
        return None
    out = np.array(J.tolist(), dtype=float)
    out.flags.writeable = False
    return out


def reduced_rhs(X: NDArray[np.float64], U_ref: float = 0.0, *, phi2_deg: float = 60.0,
                p3: float = 3.5e6, **overrides: float) -> NDArray[np.float64]:
    """Right-hand side of the reduced nonlinear equations in the state [`STATES`][nhcontrol.models.hydraulic_fourbar.STATES].

    For validation (central differences of this function give the Jacobian independently of the
    third procedure): the dependent coordinates are solved from ``C(x) = 0`` by Newton's method
    (started at the equilibrium of ``phi2_deg``), the dependent velocities from ``Cx ẋ = 0``, and
    the accelerations and multipliers from the index-1 system ``[M Cxᵀ; Cx 0][ẍ; Λ] = [Q; Qd]``.
    """
    mech, hyd = _split(overrides)
    X = np.asarray(X, dtype=float)
    eq = equilibrium(phi2_deg, p3, **mech)
    cm = model(**mech)
    ai = COORDINATES.index("phi2")
    dd = [i for i in range(10) if i != ai]
    p = X[2:5]
    x = np.array(eq.x, dtype=float)
    x[ai] = X[0]
    for _ in range(50):
        c = np.asarray(cm.C(x, u=p))
        if np.max(np.abs(c)) < 1e-14:
            break
        x[dd] -= np.linalg.solve(np.asarray(cm.Cx(x, u=p))[:, dd], c)
    Cx = np.asarray(cm.Cx(x, u=p))
    xd = np.zeros(10)
    xd[ai] = X[1]
    xd[dd] = -np.linalg.solve(Cx[:, dd], Cx[:, ai] * X[1])
    M = np.asarray(cm.M(x, u=p))
    K = np.block([[M, Cx.T], [Cx, np.zeros((9, 9))]])
    rhs = np.concatenate([np.asarray(cm.Q(x, xd, u=p)), np.asarray(cm.Qd(x, xd, u=p))])
    xdd = np.linalg.solve(K, rhs)[:10]
    H, _, _ = _circuit_functions(tuple(sorted(hyd.items())))
    with np.errstate(invalid="ignore", divide="ignore"):  # numpy evaluates every Piecewise branch
        h = np.asarray(H(x, xd, p, X[5], U_ref), dtype=float).ravel()
    tau = {**HYDRAULIC_DEFAULTS, **hyd}["tau_v"]
    return np.concatenate([[X[1], xdd[ai]], h, [(U_ref - X[5]) / tau]])


def circuit_rates(x: NDArray[np.float64], xd: NDArray[np.float64], p: NDArray[np.float64],
                  U: NDArray[np.float64], U_ref: Any = 0.0, **hydraulic_overrides: float
                  ) -> NDArray[np.float64]:
    """Pressure rates ``H(x, ẋ, p, U)`` of [`circuit_equations()`][nhcontrol.models.hydraulic_fourbar.circuit_equations], evaluated for stacked points.

    Parameters
    ----------
    x, xd : (N, 10) or (10,) array_like
    p : (N, 3) or (3,) array_like
        Pressures [Pa].
    U : (N, 1), (N,) or scalar
        Spool positions.
    U_ref : ignored by ``H`` (accepted so the signature matches ``z_rate`` of
        [`nhcontrol.linearization.finite_difference_jacobian_first_order()`][nhcontrol.linearization.finite_difference_jacobian_first_order]).
    **hydraulic_overrides : float
        Values replacing
        [`HYDRAULIC_DEFAULTS`][nhcontrol.models.hydraulic_fourbar.HYDRAULIC_DEFAULTS].

    Returns
    -------
    (N, 3) or (3,) ndarray
        ``[p1', p2', p3']`` [Pa/s].
    """
    _, hyd = _split(hydraulic_overrides)
    key = tuple(sorted(hyd.items()))
    single = np.ndim(x) == 1
    if single:
        i_s = COORDINATES.index("s")
        pp = np.asarray(p, dtype=float).ravel()
        return np.array(_circuit_scalar(key)(float(x[i_s]), float(xd[i_s]), float(pp[0]), float(pp[1]),
                                             float(pp[2]), float(np.asarray(U).ravel()[0])))
    H, _, _ = _circuit_functions(key)
    X = np.atleast_2d(np.asarray(x, dtype=float))
    N = X.shape[0]
    XD = np.broadcast_to(np.atleast_2d(np.asarray(xd, dtype=float)), (N, 10))
    P = np.broadcast_to(np.atleast_2d(np.asarray(p, dtype=float)), (N, 3))
    Us = np.broadcast_to(np.asarray(U, dtype=float).reshape(-1), (N,))
    with np.errstate(invalid="ignore", divide="ignore"):  # numpy evaluates every Piecewise branch
        out = np.asarray(H(X.T, XD.T, P.T, Us, 0.0), dtype=float).reshape(3, N).T
    return out[0] if single else out


def spool_rates(U: Any, U_ref: Any, tau_v: float = HYDRAULIC_DEFAULTS["tau_v"]) -> NDArray[np.float64]:
    """Spool rates ``W = (U_ref - U) / tau_v`` (Eq. (7.4)) for stacked points (any matching shapes)."""
    check_hydraulic_parameters({"tau_v": tau_v})
    return (np.asarray(U_ref, dtype=float) - np.asarray(U, dtype=float)) / tau_v


def linearization(phi2_deg: float = 60.0, p3: float = 3.5e6, **overrides: float) -> Any:
    """The 6x6 Jacobian of Eq. (7.96) by the third procedure with first-order states.

    Parameters
    ----------
    phi2_deg, p3 : float
        Equilibrium (see [`equilibrium()`][nhcontrol.models.hydraulic_fourbar.equilibrium]).
    **overrides : float
        Mechanical ([`DEFAULTS`][nhcontrol.models.hydraulic_fourbar.DEFAULTS]) or hydraulic
        ([`HYDRAULIC_DEFAULTS`][nhcontrol.models.hydraulic_fourbar.HYDRAULIC_DEFAULTS]) parameters,
        e.g. ``F_c=2.1, F_s=8.3, sigma2=3.3`` for friction / 100.

    Returns
    -------
    nhcontrol.linearization.FirstOrderLinearization
        ``A`` (6, 6) in [`STATES`][nhcontrol.models.hydraulic_fourbar.STATES], ``B`` (6, 1) for
        ``U_ref``.
    """
    from nhcontrol.linearization import linearize_with_first_order_states
    from nhcontrol.reference import Reference

    mech, hyd = _split(overrides)
    eq = equilibrium(phi2_deg, p3, **mech)
    cm = model(**mech)
    ref = Reference.equilibrium(cm, eq.x, u=eq.p)
    return linearize_with_first_order_states(cm, ref, PARTITION,
                                             **circuit_jacobians(eq, **hyd).as_kwargs())


def counterpart_jacobian(h: float = 1e-5, phi2_deg: float = 60.0, p3: float = 3.5e6,
                         **overrides: float) -> Any:
    """Conventional counterpart of Sect. 7.3.5: the 24x24 Jacobian (7.109) by central differences.

    State ``X = [x (10), ẋ (10), p1, p2, p3, U]`` (Eq. (7.104)), size ``2n + r + u = 24``,
    absolute step ``h`` in every component (Eq. (7.110)), SI units (Pa for the pressures).
    Its spectrum is the six eigenvalues of
    [`linearization()`][nhcontrol.models.hydraulic_fourbar.linearization] plus ``2(m + l) = 18``
    spurious zeros.

    Parameters
    ----------
    h : float
        Central-difference step.
    phi2_deg, p3 : float
        Equilibrium (see [`equilibrium()`][nhcontrol.models.hydraulic_fourbar.equilibrium]).
    **overrides : float
        Mechanical or hydraulic parameters.

    Returns
    -------
    nhcontrol.linearization.FiniteDifferenceResult
    """
    from nhcontrol.linearization import finite_difference_jacobian_first_order
    from nhcontrol.reference import Reference

    mech, hyd = _split(overrides)
    eq = equilibrium(phi2_deg, p3, **mech)
    cm = model(**mech)
    ref = Reference.equilibrium(cm, eq.x, u=eq.p)
    tau = {**HYDRAULIC_DEFAULTS, **hyd}["tau_v"]

    def z_rate(x: Any, v: Any, z: Any, w: Any, r: Any) -> NDArray[np.float64]:
        return circuit_rates(x, v, z, w[:, 0], **hyd)

    def w_rate(w: Any, r: Any) -> NDArray[np.float64]:
        return spool_rates(w, r, tau)

    return finite_difference_jacobian_first_order(cm, ref, z_rate=z_rate, w_rate=w_rate, w0=[eq.U],
                                                  r0=[0.0], h=h, z_names=INPUTS, w_names=("U",))


@dataclass(frozen=True)
class TorquePulse:
    """External torque on link 2 about ``X1``, ``M(t)``, the ``Q_M`` of Eq. (7.97) (derived here).

    The profile of Eq. (7.100) is not in the available text; a smooth half-sine pulse is used:

    $$
    M(t) = M_0 \\sin(\\pi t / T_p) \\quad (0 \\le t \\le T_p), \\qquad 0 \\text{ otherwise},
    $$

    with amplitude ``M0`` [N m] and duration ``T_p`` [s]. Its impulse is ``2 M0 T_p / pi``.
    """

    __repr__ = concise_repr

    M0: float
    duration: float = 0.02

    def __post_init__(self) -> None:
        if not (math.isfinite(self.M0) and math.isfinite(self.duration) and self.duration > 0):
            raise ModelError(f"TorquePulse needs a finite amplitude M0 [N m] and a positive duration "
                             f"[s], got M0 = {self.M0!r}, duration = {self.duration!r}")

    def __call__(self, t: Any) -> Any:
        t = np.asarray(t, dtype=float)
        on = (t >= 0) & (t <= self.duration)
        out = np.where(on, self.M0 * np.sin(np.pi * np.clip(t, 0, self.duration) / self.duration), 0.0)
        return float(out) if out.ndim == 0 else out


def torque_generalized_force(x: NDArray[np.float64], M: float) -> NDArray[np.float64]:
    """Generalized force of a torque ``M`` about ``X1`` on link 2 (derived here).

    With ``R2 = R_z(psi2) R_y(theta2) R_x(phi2)`` the angular velocity of link 2 is
    ``psi2' Z1 + theta2' R_z Y1 + phi2' R_z R_y X1``, so the virtual power of ``M X1`` gives
    ``Q_psi2 = 0``, ``Q_theta2 = -M sin psi2``, ``Q_phi2 = M cos psi2 cos theta2``.
    """
    x = np.asarray(x, dtype=float)
    Q = np.zeros(10)
    Q[4] = -M * math.sin(x[3])
    Q[5] = M * math.cos(x[3]) * math.cos(x[4])
    return Q


def torque_input_column(lin: Any, phi2_deg: float = 60.0, p3: float = 3.5e6,
                        **overrides: float) -> NDArray[np.float64]:
    """Input column of the torque ``M`` in the 6-state linear system of
    [`linearization()`][nhcontrol.models.hydraulic_fourbar.linearization].

    The mechanical row of the third procedure is ``m0 x_ai'' = T0^T (...)`` with the reduced mass
    ``m0 = T0^T M(x0) T0`` (Sect. 4.2.3); a generalized force ``Q_M = M q`` adds
    ``T0^T q / m0`` to the ``phi2_d`` row (``q = e_phi2`` at the equilibrium, where
    ``psi2 = theta2 = 0``).
    """
    mech, _ = _split(overrides)
    eq = equilibrium(phi2_deg, p3, **mech)
    cm = model(**mech)
    T0 = np.asarray(lin.T0, dtype=float)
    m0 = T0.T @ np.asarray(cm.M(eq.x, u=eq.p)).reshape(10, 10) @ T0
    b = np.zeros(6)
    b[1] = float(np.linalg.solve(m0, T0.T @ torque_generalized_force(eq.x, 1.0))[0])
    return b
