"""Knife edge (skate, Chaplygin sleigh blade) on the ground plane.

A body point $P$ carries a blade along the body-fixed direction $\\bar d$.
The blade may slide along its own direction but not sideways: the velocity of the
material point $P$ has no component along the horizontal normal of the blade,

$$
d = R\\,\\bar d, \\qquad e = n \\times d, \\qquad v_P \\cdot e = 0,
\\qquad n = [0, 0, 1]^T,
$$

one nonholonomic constraint $B(x)\\dot x = 0$ (Eq. (2.110)), linear in the
velocities. For a blade that stays horizontal ($d \\perp n$) the constraint is
the classical Chaplygin sleigh condition $-\\sin\\psi\\,\\dot x_P + \\cos\\psi\\,\\dot y_P = 0$.
The contact point is *not* forced onto the ground here: planar models keep their
height constant by construction, spatial ones add the holonomic contact separately.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp

from nhcontrol._util.errors import ModelError

from ._checks import as_vec3, check_name, contact_error
from nhcontrol._util.reprs import concise_repr

__all__ = ["KnifeEdgeContact", "knife_edge"]


@dataclass(frozen=True)
class KnifeEdgeContact:
    """What [`knife_edge()`][nhcontrol.modeling.contacts.knife_edge.knife_edge] added to a [`MultibodySystem`][nhcontrol.modeling.MultibodySystem].

    Attributes
    ----------
    name : str
        Contact name.
    nonholonomic_names : tuple of str
        ``("<name>_lateral",)``.
    holonomic_names : tuple of str
        Always empty (kept for a uniform record interface).
    contact_point : (3, 1) sympy.ImmutableMatrix
        Global position of the blade point $r_P(x)$.
    direction : (3, 1) sympy.ImmutableMatrix
        Blade direction in the global frame $d = R \\bar d$.
    normal : (3, 1) sympy.ImmutableMatrix
        Horizontal blade normal $e = n \\times d$.
    contact_velocity : (3, 1) sympy.ImmutableMatrix
        Velocity of the material point $v_P(x, \\dot x)$.
    """

    __repr__ = concise_repr

    name: str
    nonholonomic_names: tuple[str, ...]
    holonomic_names: tuple[str, ...]
    contact_point: sp.ImmutableMatrix
    direction: sp.ImmutableMatrix
    normal: sp.ImmutableMatrix
    contact_velocity: sp.ImmutableMatrix


def knife_edge(mb: Any, body: Any, point: Any, direction: Any, *, name: str,
               orientation: Any = None) -> KnifeEdgeContact:
    """Add a knife-edge (skate) constraint: no sideways velocity of a body point.

    Parameters
    ----------
    mb : MultibodySystem
        The system being built; one nonholonomic constraint is added.
    body : Body
        The body carrying the blade (returned by ``mb.add_body``).
    point : (3,) or (3, 1) sympy expression
        Global position $r_P(x)$ of the blade point (a point fixed to ``body``).
    direction : (3,) sequence or sympy Matrix
        Blade direction $\\bar d$ in the **body frame** (e.g. ``(1, 0, 0)``: the
        blade runs along the body X axis). Need not be normalised.
    name : str
        Contact name; the constraint is called ``<name>_lateral``.
    orientation : (3, 3) sympy Matrix, optional
        Orientation $R(x)$ of ``body``; by default the one given to ``add_body``.

    Returns
    -------
    KnifeEdgeContact

    Raises
    ------
    ModelError
        If ``point`` or ``direction`` is not a 3-vector, the direction is zero or
        vertical (no horizontal normal), or ``name`` is empty (all at once).

    Notes
    -----
    Constraint: $v_P \\cdot (n \\times R \\bar d) = 0$, with
    $v_P$ = ``mb.point_velocity(body, point)`` (velocity of the material point).
    The normal $e = n \\times d$ is not normalised, so the multiplier of the constraint
    is the lateral reaction force divided by $|e|$ (equal to it for a horizontal unit
    blade direction). A direction that can become vertical during the motion makes the
    constraint degenerate there.

    Examples
    --------
    >>> import sympy as sp
    >>> from nhcontrol.modeling import MultibodySystem, rot_z
    >>> mb = MultibodySystem("sleigh")
    >>> x, y, psi = mb.add_coordinates("x y psi")
    >>> body = mb.add_body("s", mass=1, inertia=sp.eye(3), position=[x, y, 0], orientation=rot_z(psi))
    >>> rec = knife_edge(mb, body, sp.Matrix([x, y, 0]), (1, 0, 0), name="blade")
    >>> rec.nonholonomic_names
    ('blade_lateral',)
    """
    problems: list[str] = []
    r_p = as_vec3(point, f"knife_edge {name!r}: point", problems)
    d_bar = as_vec3(direction, f"knife_edge {name!r}: direction", problems)
    if d_bar is not None and all(sp.sympify(c).is_zero for c in d_bar):
        problems.append(f"knife_edge {name!r}: direction must be a non-zero body-frame vector, got {list(d_bar)}")
    if orientation is None:
        orientation = getattr(body, "orientation", None)
    rot = None
    if orientation is None:
        problems.append(f"knife_edge {name!r}: cannot find the orientation of the body; pass orientation=R")
    else:
        rot = sp.Matrix(orientation)
        if rot.shape != (3, 3):
            problems.append(f"knife_edge {name!r}: orientation must be 3x3, got shape {rot.shape}")
    check_name(name, "knife_edge", problems)
    if problems or r_p is None or d_bar is None or rot is None:
        raise contact_error("knife-edge", problems)

    d = rot * d_bar                                   # blade direction, global frame
    e = sp.Matrix([-d[1], d[0], 0])                   # n × d with n = e_z
    if all(sp.expand(c) == 0 for c in e):
        raise ModelError(f"cannot add the knife-edge contact {name!r}: the blade direction {list(d_bar)} is "
                         "vertical, so it has no horizontal normal; use a direction in the ground plane")
    v_p = sp.Matrix(mb.point_velocity(body, r_p))
    mb.add_nonholonomic((v_p.T * e)[0, 0], name=f"{name}_lateral")
    return KnifeEdgeContact(name=name, nonholonomic_names=(f"{name}_lateral",), holonomic_names=(),
                            contact_point=sp.ImmutableMatrix(r_p), direction=sp.ImmutableMatrix(d),
                            normal=sp.ImmutableMatrix(e), contact_velocity=sp.ImmutableMatrix(v_p))
