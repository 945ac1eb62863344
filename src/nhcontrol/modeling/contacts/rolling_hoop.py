"""Rigid hoop (knife-edge wheel) rolling without slipping on the ground plane ``z = 0``.

This is the wheel-ground contact of the bicycle benchmark (thesis Sect. 4.3.1,
Eqs. (4.132), (4.139)-(4.140) and the rolling constraints of Sect. 4.3.2, the
same construction as Eqs. (4.194)-(4.195) for the toroidal wheel).

Geometry
--------
The wheel is a circle of radius $\\rho$ in the wheel body frame, centred at the
body point $G$ (the centre of the wheel), lying in the plane perpendicular to the
wheel axis. The radius that contains the contact point is located by the *contact
coordinate* $\\xi$ (an extra generalized coordinate of the model):

$$
\\bar r_{GP}(\\xi) = R_\\xi\\, \\bar\\rho, \\qquad
r_P = r_G + R\\, R_\\xi\\, \\bar\\rho, \\qquad
t_P = R\\, \\frac{\\partial \\bar r_{GP}}{\\partial \\xi}
$$

with $R_\\xi$ the elemental rotation about the wheel axis and $\\bar\\rho$ a
radius vector perpendicular to it. In the thesis frames (Fig. 4.2) the wheel axis is the
body $Y$ axis, $R_\\xi = R_y(\\xi)$ and $\\bar\\rho = [\\rho, 0, 0]^T$
(Eq. (4.133)); with this choice the contact point is the lowest point of the rim when
$\\theta + \\xi = \\pi/2$ for an upright wheel (Eq. (4.175)).

Constraints
-----------
Holonomic (Eq. (4.139)): the contact point lies on the ground and the rim is tangent to it,

$$
r_{P,z} = 0, \\qquad n \\cdot t_P = 0, \\qquad n = [0, 0, 1]^T.
$$

Nonholonomic (rolling without slipping, Eq. (4.145)): the horizontal components of the
velocity of the *material* point of the wheel that is in contact are zero,

$$
v_P = \\dot r_G + \\omega \\times (r_P - r_G), \\qquad v_{P,x} = v_{P,y} = 0,
$$

which is linear in the velocities and free of $\\dot\\xi$ (the material point, not the
geometric contact point, is used). The vertical component of $v_P$ vanishes on the
constraint manifold because of the two holonomic constraints, so it is not imposed again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling.rotations import rot_x, rot_y, rot_z

from ._checks import as_vec3, check_coordinate, check_name, contact_error
from nhcontrol._util.reprs import concise_repr

__all__ = ["RollingHoopContact", "rolling_hoop", "wheel_frame_axes"]

WheelAxis = Literal["x", "y", "z"]

_RADIUS_AXIS = {"x": 2, "y": 0, "z": 1}
"""For each wheel axis, the body axis along which the contact radius rho-bar points when xi = 0 (cyclic
predecessor: y -> x as in the thesis, z -> y, x -> z).
"""


@dataclass(frozen=True)
class RollingHoopContact:
    """What [`rolling_hoop()`][nhcontrol.modeling.contacts.rolling_hoop.rolling_hoop] added to a [`MultibodySystem`][nhcontrol.modeling.MultibodySystem].

    Attributes
    ----------
    name : str
        Contact name (prefix of the constraint names).
    holonomic_names : tuple of str
        ``("<name>_z", "<name>_tangent")``: $r_{P,z}$ and $n \\cdot t_P$
        (Eq. (4.139)).
    nonholonomic_names : tuple of str
        ``("<name>_vx", "<name>_vy")``: horizontal velocity of the material contact point.
    contact_point : (3, 1) sympy.ImmutableMatrix
        $r_P(x)$ in the global frame (Eq. (4.132)).
    tangent : (3, 1) sympy.ImmutableMatrix
        $t_P(x)$ (Eq. (4.140)).
    contact_velocity : (3, 1) sympy.ImmutableMatrix
        Velocity of the material contact point $v_P(x, \\dot x)$.
    axis : {"x", "y", "z"}
        Wheel axis in the wheel body frame.
    radius : sympy.Expr
        Hoop radius $\\rho$.
    xi : sympy.Symbol
        Contact coordinate $\\xi$.
    """

    __repr__ = concise_repr

    name: str
    holonomic_names: tuple[str, ...]
    nonholonomic_names: tuple[str, ...]
    contact_point: sp.ImmutableMatrix
    tangent: sp.ImmutableMatrix
    contact_velocity: sp.ImmutableMatrix
    axis: str
    radius: sp.Expr
    xi: sp.Symbol


def wheel_frame_axes(axis: WheelAxis) -> tuple[int, int]:
    """Return ``(axis_index, radius_index)`` of the wheel axis and the radius direction.

    Parameters
    ----------
    axis : {"x", "y", "z"}
        Wheel axis in the wheel body frame.

    Returns
    -------
    tuple of int
        Index (0, 1, 2) of the wheel axis and of the body axis along which
        $\\bar\\rho$ points at $\\xi = 0$.
    """
    if axis not in _RADIUS_AXIS:
        raise ModelError(f"wheel axis must be one of 'x', 'y', 'z' (body frame of the wheel), got {axis!r}; "
                         "the thesis' wheels spin about their body Y axis: use axis='y'")
    return "xyz".index(axis), _RADIUS_AXIS[axis]


def _elemental_rotation(axis: str, angle: sp.Expr) -> sp.Matrix:
    """Counterclockwise elemental rotation (Eqs. (2.23), (2.25)) about a body axis."""
    return {"x": rot_x, "y": rot_y, "z": rot_z}[axis](angle)


def rolling_hoop(mb: Any, wheel_body: Any, center: Any, orientation: Any, radius: Any,
                 xi: sp.Symbol, *, name: str, axis: WheelAxis = "y") -> RollingHoopContact:
    """Add a hoop rolling without slipping on the ground plane ``z = 0`` to ``mb``.

    Adds two holonomic constraints (contact point on the ground and rim tangent to it,
    Eq. (4.139)) and two nonholonomic constraints (no horizontal slip of the material
    contact point, Eq. (4.145)).

    Parameters
    ----------
    mb : MultibodySystem
        The system being built; the constraints are added to it.
    wheel_body : Body
        The wheel body (returned by ``mb.add_body``); its angular velocity gives the
        velocity of the material contact point.
    center : (3,) or (3, 1) sympy expression
        Global position $r_G(x)$ of the wheel centre (a point fixed to the wheel,
        normally its centre of mass).
    orientation : (3, 3) sympy Matrix
        Orientation $R(x)$ of the wheel body frame (the one given to ``add_body``).
    radius : sympy expression or float
        Hoop radius $\\rho$ (usually a parameter symbol).
    xi : sympy.Symbol
        The contact coordinate $\\xi$ (must be one of ``mb``'s coordinates).
    name : str
        Contact name; constraint names are ``<name>_z``, ``<name>_tangent``,
        ``<name>_vx``, ``<name>_vy``.
    axis : {"x", "y", "z"}, default "y"
        Wheel (spin) axis in the wheel body frame. ``"y"`` is the thesis convention
        (Fig. 4.2): $R_\\xi = R_y(\\xi)$, $\\bar\\rho = [\\rho, 0, 0]^T$. For
        ``"z"`` the radius starts along body ``y`` and for ``"x"`` along body ``z``.

    Returns
    -------
    RollingHoopContact
        Names of the added constraints and the contact-point expressions.

    Raises
    ------
    ModelError
        If the axis is unknown, ``center``/``orientation`` have the wrong shape or
        ``xi`` is not a coordinate of ``mb`` (all problems in one message).

    Notes
    -----
    The material velocity is $v_P = \\dot r_G + \\omega \\times (r_P - r_G)$
    (``mb.velocity_of(center)`` and ``mb.angular_velocity(wheel_body)``), i.e.
    $v_{G} + R(\\bar\\omega \\times \\bar r_{GP})$ of Eq. (4.195).
    """
    problems: list[str] = []
    if axis not in _RADIUS_AXIS:
        problems.append(f"wheel axis must be one of 'x', 'y', 'z', got {axis!r} "
                        "(the thesis' wheels spin about their body Y axis: axis='y')")
    r_g = as_vec3(center, f"rolling_hoop {name!r}: center", problems)
    try:
        rot = sp.Matrix(orientation)
        if rot.shape != (3, 3):
            problems.append(f"rolling_hoop {name!r}: orientation must be a 3x3 matrix, got shape {rot.shape}")
    except (TypeError, ValueError, sp.SympifyError) as exc:
        problems.append(f"rolling_hoop {name!r}: orientation must be a 3x3 matrix: {exc}")
        rot = None
    check_coordinate(mb, xi, f"rolling_hoop {name!r}: xi", problems)
    check_name(name, "rolling_hoop", problems)
    if problems or r_g is None or rot is None:
        raise contact_error("rolling hoop", problems)

    rho = sp.sympify(radius)
    _, k_rad = wheel_frame_axes(axis)
    rho_bar = sp.zeros(3, 1)
    rho_bar[k_rad] = rho
    r_gp_bar = _elemental_rotation(axis, xi) * rho_bar          # r̄_GP(ξ) = R_ξ ρ̄, Eq. (4.132)
    r_p = r_g + rot * r_gp_bar                                  # r_P, Eq. (4.132)
    t_p = rot * r_gp_bar.diff(xi)                               # t_P, Eq. (4.140)

    omega = sp.Matrix(mb.angular_velocity(wheel_body))
    v_p = sp.Matrix(mb.velocity_of(r_g)) + omega.cross(rot * r_gp_bar)   # Eq. (4.195)

    hol = (f"{name}_z", f"{name}_tangent")
    nonhol = (f"{name}_vx", f"{name}_vy")
    mb.add_holonomic(r_p[2], name=hol[0])                       # r_Pz = 0, Eq. (4.139)
    mb.add_holonomic(t_p[2], name=hol[1])                       # n · t_P = 0, Eq. (4.139)
    mb.add_nonholonomic(v_p[0], name=nonhol[0])                 # v_Px = 0, Eq. (4.145)
    mb.add_nonholonomic(v_p[1], name=nonhol[1])                 # v_Py = 0, Eq. (4.145)
    return RollingHoopContact(name=name, holonomic_names=hol, nonholonomic_names=nonhol,
                              contact_point=sp.ImmutableMatrix(r_p), tangent=sp.ImmutableMatrix(t_p),
                              contact_velocity=sp.ImmutableMatrix(v_p), axis=axis, radius=rho, xi=xi)
