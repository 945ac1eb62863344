"""Elliptic toroidal wheel rolling without slipping on the ground plane ``z = 0``.

Thesis Sect. 4.5.1, Eqs. (4.191)-(4.195) (the torus parameterization is derived
here, in ``docs/theory/toroidal_wheel.md``).

Geometry
--------
The wheel surface is swept by an ellipse (semi-axes $a$ in the wheel plane, radially,
and $b$ along the wheel axis) whose centre runs on a circle of radius $\\rho$
(the major radius). With the contact coordinates $\\xi$ (around the wheel) and
$\\eta$ (around the cross-section, eccentric anomaly), in the wheel body frame with
the wheel axis $Y$ (Fig. 4.9),

$$
\\bar r_{GP}(\\xi, \\eta) = R_y(\\xi)\\,\\big(\\bar\\rho + \\bar e(\\eta)\\big), \\qquad
\\bar\\rho = [\\rho, 0, 0]^T, \\qquad \\bar e(\\eta) = [a\\cos\\eta,\\ b\\sin\\eta,\\ 0]^T,
$$

which is Eq. (4.193) for the circular cross-section ($b = a$,
$\\bar e = R_z(\\eta) [a, 0, 0]^T$).

Constraints
-----------
Holonomic, Eq. (4.191): the contact point is on the ground and the surface is tangent to it
along both surface directions,

$$
r_{P,z} = 0, \\qquad n\\cdot t_L = 0, \\qquad n\\cdot \\hat t_T = 0,
\\qquad t_L = R\\,\\partial_\\xi \\bar r_{GP}, \\qquad
\\hat t_T = R\\,R_y(\\xi)\\,[-\\sin\\eta,\\ \\sigma\\cos\\eta,\\ 0]^T,
$$

where $\\hat t_T = t_T / a$ (Eq. (4.192) divided by the semi-axis, $\\sigma = b/a$).
Dividing by $a$ leaves the constraint manifold unchanged for $a > 0$ and keeps the
constraint regular in the hoop limit $a = b = 0$, where $\\eta$ no longer moves the
contact point but stays defined, so the model degenerates smoothly to the hoop bicycle.

Nonholonomic, Eqs. (4.194)-(4.195): the horizontal velocity of the material contact point
vanishes, $v_P = \\dot r_G + \\omega\\times(r_P - r_G)$, $v_{P,x} = v_{P,y} = 0$.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from nhcontrol.modeling.rotations import rot_y

from ._checks import as_vec3, check_coordinate, check_name, contact_error
from ..._util.reprs import concise_repr

__all__ = ["EllipticTorusContact", "elliptic_torus"]


@dataclass(frozen=True)
class EllipticTorusContact:
    """What [`elliptic_torus()`][nhcontrol.modeling.contacts.elliptic_torus.elliptic_torus] added to a [`MultibodySystem`][nhcontrol.modeling.MultibodySystem].

    Attributes
    ----------
    name : str
        Contact name (prefix of the constraint names).
    holonomic_names : tuple of str
        ``("<name>_z", "<name>_tangent_L", "<name>_tangent_T")`` (Eq. (4.191)).
    nonholonomic_names : tuple of str
        ``("<name>_vx", "<name>_vy")`` (Eq. (4.194)).
    contact_point : (3, 1) sympy.ImmutableMatrix
        $r_P(x)$.
    contact_velocity : (3, 1) sympy.ImmutableMatrix
        Velocity of the material contact point (Eq. (4.195)).
    xi, eta : sympy.Symbol
        Contact coordinates.
    """

    __repr__ = concise_repr

    name: str
    holonomic_names: tuple[str, ...]
    nonholonomic_names: tuple[str, ...]
    contact_point: sp.ImmutableMatrix
    contact_velocity: sp.ImmutableMatrix
    xi: sp.Symbol
    eta: sp.Symbol


def elliptic_torus(mb: Any, wheel_body: Any, center: Any, orientation: Any, major_radius: Any,
                   semi_axis_radial: Any, axis_ratio: Any, xi: sp.Symbol, eta: sp.Symbol, *,
                   name: str) -> EllipticTorusContact:
    """Add an elliptic torus wheel (axis = body ``Y``) rolling without slipping on ``z = 0``.

    Adds three holonomic constraints (Eq. (4.191)) and two nonholonomic ones (Eq. (4.194)).

    Parameters
    ----------
    mb : MultibodySystem
        The system being built.
    wheel_body : Body
        The wheel body (from ``mb.add_body``).
    center : (3,) sympy expression
        Global position of the wheel centre.
    orientation : (3, 3) sympy Matrix
        Orientation of the wheel frame (wheel axis = body ``Y``).
    major_radius : sympy expression
        $\\rho$, radius of the circle of cross-section centres.
    semi_axis_radial : sympy expression
        $a$, semi-axis of the cross-section in the wheel plane.
    axis_ratio : sympy expression
        $\\sigma = b/a$, ratio of the axial to the radial semi-axis.
    xi, eta : sympy.Symbol
        Contact coordinates (must be coordinates of ``mb``).
    name : str
        Contact name; constraints ``<name>_z``, ``<name>_tangent_L``, ``<name>_tangent_T``,
        ``<name>_vx``, ``<name>_vy``.

    Returns
    -------
    EllipticTorusContact

    Raises
    ------
    ModelError
        Wrong shapes, or ``xi``/``eta`` not coordinates of ``mb`` (all problems at once).
    """
    problems: list[str] = []
    r_g = as_vec3(center, f"elliptic_torus {name!r}: center", problems)
    rot = sp.Matrix(orientation) if hasattr(orientation, "shape") else None
    if rot is None or rot.shape != (3, 3):
        problems.append(f"elliptic_torus {name!r}: orientation must be a 3x3 sympy Matrix")
    for label, sym in (("xi", xi), ("eta", eta)):
        check_coordinate(mb, sym, f"elliptic_torus {name!r}: {label}", problems)
    check_name(name, "elliptic_torus", problems)
    if problems:
        raise contact_error("elliptic torus", problems)

    rho, a, sigma = (sp.sympify(v) for v in (major_radius, semi_axis_radial, axis_ratio))
    R_xi = rot_y(xi)
    e_bar = sp.Matrix([a * sp.cos(eta), sigma * a * sp.sin(eta), 0])
    r_gp_bar = R_xi * (sp.Matrix([rho, 0, 0]) + e_bar)          # Eq. (4.193)
    r_p = r_g + rot * r_gp_bar                                   # r_P, Eq. (4.192)
    t_l = rot * r_gp_bar.diff(xi)                                # t_L, Eq. (4.192)
    t_t_hat = rot * R_xi * sp.Matrix([-sp.sin(eta), sigma * sp.cos(eta), 0])  # t_T / a

    omega = sp.Matrix(mb.angular_velocity(wheel_body))
    v_p = sp.Matrix(mb.velocity_of(r_g)) + omega.cross(rot * r_gp_bar)   # Eq. (4.195)

    hol = (f"{name}_z", f"{name}_tangent_L", f"{name}_tangent_T")
    nonhol = (f"{name}_vx", f"{name}_vy")
    mb.add_holonomic(r_p[2], name=hol[0])                        # Eq. (4.191)
    mb.add_holonomic(t_l[2], name=hol[1])
    mb.add_holonomic(t_t_hat[2], name=hol[2])
    mb.add_nonholonomic(v_p[0], name=nonhol[0])                  # Eq. (4.194)
    mb.add_nonholonomic(v_p[1], name=nonhol[1])
    return EllipticTorusContact(name=name, holonomic_names=hol, nonholonomic_names=nonhol,
                                contact_point=sp.ImmutableMatrix(r_p),
                                contact_velocity=sp.ImmutableMatrix(v_p), xi=xi, eta=eta)
