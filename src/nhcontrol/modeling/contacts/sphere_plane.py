"""Sphere rolling without slipping on a plane that belongs to another, moving body.

This is the ball-plate contact of thesis Sect. 8.4.1, Eqs. (8.46)--(8.55).

Geometry
--------
The plate (body 2) has its frame at ``r_O`` (default: the global origin) with orientation
$R_2(x, u)$ (for the ball-plate system $R_2 = R_\\alpha R_\\beta$, Eq. (8.46),
a function of the inputs only). The plane is the plate's $XY$ plane, with unit normal
$\\bar n = [0, 0, 1]^T$ in the plate frame. The contact point $C$ is given by
its plate-frame coordinates $\\bar r_C = [x_C, y_C, 0]^T$ (Eq. (8.47)) and the centre
of the sphere (body 3) lies at $r_{G3} = r_C + R_2 \\bar r_{CG3}$,
$\\bar r_{CG3} = [0, 0, R]^T$ (Eq. (8.48)).

Constraints
-----------
Rolling without slipping (Eq. (8.49)): the velocity of the material point of the sphere at
$C$ relative to the material point of the plate at $C$, in the plate frame,
vanishes,

$$
\\begin{gathered}
\\bar v^2_{C32} = R_2^T v_{C32}, \\qquad v_{C32} = v_{C31} - v_{C21}
\\qquad \\text{(Eqs. (8.51), (8.52))} \\\\
v_{C31} = v_{G31} + \\omega_3 \\times (r_C - r_{G3}), \\qquad
v_{C21} = v_{O21} + \\omega_2 \\times (r_C - r_O)
\\qquad \\text{(Eqs. (8.53), (8.54))}
\\end{gathered}
$$

(the body-frame forms $R_3 (\\bar\\omega_3 \\times \\bar r_{G3C})$ of Eqs. (8.53)--(8.54)
are the same vectors written in global components). The $X$ and $Y$
components are the $l = 2$ nonholonomic constraints (Eq. (8.50)); the $Z$
component vanishes identically because the centre stays at height $R$ above the
contact point (Eq. (8.55)), and the helper checks that it does.

Velocities follow the builder's convention (``∂/∂x · ẋ``, inputs quasi-static, Sect. 8.1):
a plate whose orientation depends on the inputs only has $\\omega_2 = 0$. Even for a
plate that moves with the coordinates, $\\omega_2$ cancels from $v_{C32}$ (the
constraint is the kinematics *relative* to the plate), see ``docs/theory/ball_plate.md``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import sympy as sp
from sympy.functions.elementary.trigonometric import TrigonometricFunction as _Trig

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling.simplify import cheap_trig

from ._checks import as_vec3, check_name, contact_error
from nhcontrol._util.reprs import concise_repr

__all__ = ["SphereOnPlaneContact", "sphere_on_moving_plane"]

GEOMETRY_TOL = 1e-9
"""Tolerance of the numeric consistency checks at random points (geometry, Z component)."""


@dataclass(frozen=True)
class SphereOnPlaneContact:
    """What [`sphere_on_moving_plane()`][nhcontrol.modeling.contacts.sphere_plane.sphere_on_moving_plane] added to a [`MultibodySystem`][nhcontrol.modeling.MultibodySystem].

    Attributes
    ----------
    name : str
        Contact name.
    nonholonomic_names : tuple of str
        ``("<name>_x", "<name>_y")``, the $X$, $Y$ components of Eq. (8.50).
    holonomic_names : tuple of str
        Always empty: the sphere is kept on the plane by the choice of coordinates.
    contact_point : (3, 1) sympy.ImmutableMatrix
        Global position $r_C = r_O + R_2 \\bar r_C$ (Eq. (8.47)).
    relative_velocity : (3, 1) sympy.ImmutableMatrix
        $\\bar v^2_{C32}$ (Eq. (8.55)), plate-frame components, linear in ``ẋ``.
    plate_orientation : (3, 3) sympy.ImmutableMatrix
        $R_2$.
    """

    __repr__ = concise_repr

    name: str
    nonholonomic_names: tuple[str, ...]
    holonomic_names: tuple[str, ...]
    contact_point: sp.ImmutableMatrix
    relative_velocity: sp.ImmutableMatrix
    plate_orientation: sp.ImmutableMatrix


def _random_values(symbols: set[sp.Symbol], seed: int) -> dict[sp.Symbol, sp.Float]:
    rnd = random.Random(seed)
    return {s: sp.Float(rnd.uniform(0.2, 1.3)) for s in sorted(symbols, key=lambda s: s.name)}


def _max_abs_at_random_points(mat: sp.MatrixBase, npoints: int = 3) -> float:
    free = set().union(*(sp.sympify(e).free_symbols for e in mat))
    worst = 0.0
    for k in range(npoints):
        vals = _random_values(free, 1234 + k)
        for e in mat:
            worst = max(worst, abs(float(sp.sympify(e).xreplace(vals).evalf())))
    return worst


def _simplify_relative_velocity(v_bar: sp.Matrix, inputs: tuple[sp.Symbol, ...]) -> sp.Matrix:
    """Short form of ``R_2ᵀ (v_C31 - v_C21)``.

    The relative velocity is a kinematic quantity *relative to the plate*: when the plate
    orientation depends on the inputs only, ``R_2(u)`` cancels (``R_2ᵀ R_2 = I``), but expanding
    that cancellation symbolically is slow. If the expression evaluated with the inputs set to
    zero equals the full one at random points (it must, for an exact identity of analytic
    functions), the ``u = 0`` form is used; otherwise the full expression is simplified with
    [`cheap_trig()`][nhcontrol.modeling.cheap_trig] and, where an identity can still shorten
    it (`_trig_reduced`), `sympy.trigsimp()`.
    """
    if inputs:
        at_zero = v_bar.xreplace({u: sp.S.Zero for u in inputs})
        if _max_abs_at_random_points(v_bar - at_zero) <= GEOMETRY_TOL:
            return sp.Matrix([_trigsimp_if_needed(cheap_trig(e)) for e in at_zero])
    return sp.Matrix([_trigsimp_if_needed(cheap_trig(e)) for e in v_bar])


def _trigsimp_if_needed(e: sp.Expr) -> sp.Expr:
    """`sympy.trigsimp()` of ``e`` (an output of [`cheap_trig()`][nhcontrol.modeling.cheap_trig]),
    skipped when no trigonometric identity can shorten it (`_trig_reduced`)."""
    return e if _trig_reduced(e) else sp.trigsimp(e)


def _trig_reduced(e: sp.Expr) -> bool:
    """Whether the expanded polynomial ``e`` in sines and cosines is already as short as
    `sympy.trigsimp()` makes it, by a sufficient structural test (False: simplify it).

    Every trigonometric function is ``sin`` or ``cos`` of a symbol, no term holds a power of
    one or two of them of the same symbol (so neither ``sin² + cos² = 1`` nor a double angle
    applies), and no two terms with trigonometric factors have the same non-trigonometric
    factors up to a number (so no two terms pair into an angle sum ``sin(a ± b)``,
    ``cos(a ± b)``). The sines and cosines of distinct symbols are then algebraically
    independent but for ``sin² + cos² = 1``, which no term can use, so ``trigsimp`` has no
    identity to apply (it returns Eq. (8.55) unchanged, after tens of milliseconds per entry).
    """
    if not e.has(_Trig):
        return True
    seen: set = set()
    for term in sp.Add.make_args(e):
        rest, args = [], set()
        for f in sp.Mul.make_args(term):
            if isinstance(f, (sp.sin, sp.cos)):
                if not f.args[0].is_Symbol or f.args[0] in args:
                    return False
                args.add(f.args[0])
            elif f.has(_Trig):
                return False                  # a power, another function, a nested argument
            elif not f.is_Number:
                rest.append(f)
        if args:
            key = sp.Mul(*rest)
            if key in seen:
                return False
            seen.add(key)
    return True


def sphere_on_moving_plane(mb: Any, ball_body: Any, *, radius: Any, plate_orientation: Any,
                           contact_point_plate: Any, plate_origin: Any = (0, 0, 0),
                           plate_body: Any = None, name: str = "roll") -> SphereOnPlaneContact:
    """Add the rolling-without-slipping constraints of a sphere on a moving plane.

    Parameters
    ----------
    mb : MultibodySystem
        The system being built; two nonholonomic constraints are added (Eq. (8.50)).
    ball_body : Body
        The sphere (body 3), returned by ``mb.add_body``; its centre of mass is the centre of
        the sphere and must be at $r_C + R_2 [0, 0, R]^T$ (Eq. (8.48)).
    radius : sympy expression
        Radius $R$ of the sphere.
    plate_orientation : (3, 3) sympy Matrix
        $R_2(x, u)$, plate frame to global (Eq. (8.46)); the plane is the plate's
        $XY$ plane and the sphere lies on its $+Z$ side.
    contact_point_plate : (3,) sequence or (3, 1) sympy Matrix
        $\\bar r_C$ in the plate frame, with zero $Z$ component, e.g.
        ``(x_C, y_C, 0)`` (Eq. (8.47)).
    plate_origin : (3,) sequence, default (0, 0, 0)
        Global position $r_O(x, u)$ of the plate frame origin.
    plate_body : Body, optional
        The plate as a body of ``mb`` (when it has mass and coordinates of its own). Its
        ``orientation`` must equal ``plate_orientation``. When omitted the plate is a
        prescribed frame (its motion given by ``plate_origin`` and ``plate_orientation``).
    name : str, default "roll"
        Contact name; the constraints are called ``<name>_x`` and ``<name>_y``.

    Returns
    -------
    SphereOnPlaneContact

    Raises
    ------
    ModelError
        If an argument is not a 3-vector / 3x3 matrix, the contact point is not in the plate
        plane, the centre of ``ball_body`` is not at distance ``radius`` along the plate
        normal above the contact point, or ``name`` is empty (all problems at once).

    Notes
    -----
    Computes $\\bar v^2_{C32} = R_2^T (v_{C31} - v_{C21})$ (Eqs. (8.51)--(8.54)) with
    ``mb.point_velocity`` for the sphere and the plate. When the result does not depend on the
    inputs (checked at random points; it never does for a plate moved by the inputs only) the
    ``u = 0`` form is kept, then [`cheap_trig()`][nhcontrol.modeling.cheap_trig] and (where a
    trigonometric identity can still apply) `sympy.trigsimp()` shorten it. For
    $R_3 = R_2 R_\\psi R_\\varphi R_\\theta$ this gives Eq. (8.55):
    $\\dot x_C - R\\dot\\theta\\cos\\psi\\cos\\varphi - R\\dot\\varphi\\sin\\psi$ and
    $\\dot y_C - R\\dot\\theta\\sin\\psi\\cos\\varphi + R\\dot\\varphi\\cos\\psi$.
    """
    problems: list[str] = []
    if not check_name(name, "sphere_on_moving_plane", problems):
        name = "roll"
    r_c_bar = as_vec3(contact_point_plate, f"sphere_on_moving_plane {name!r}: contact_point_plate", problems)
    r_o = as_vec3(plate_origin, f"sphere_on_moving_plane {name!r}: plate_origin", problems)
    R2 = None
    try:
        R2 = sp.Matrix(plate_orientation)
        if R2.shape != (3, 3):
            problems.append(f"sphere_on_moving_plane {name!r}: plate_orientation must be 3x3, "
                            f"got shape {R2.shape}")
            R2 = None
    except (TypeError, ValueError, sp.SympifyError) as exc:
        problems.append(f"sphere_on_moving_plane {name!r}: plate_orientation must be a 3x3 sympy "
                        f"Matrix, got {type(plate_orientation).__name__}: {exc}")
    Rs = sp.sympify(radius)
    if r_c_bar is not None and sp.simplify(r_c_bar[2]) != 0:
        problems.append(f"sphere_on_moving_plane {name!r}: contact_point_plate must lie in the plate "
                        f"plane (Z component 0, Eq. (8.47)), got Z = {r_c_bar[2]}")
    position = getattr(ball_body, "position", None)
    if position is None:
        problems.append(f"sphere_on_moving_plane {name!r}: ball_body must be a Body returned by "
                        f"mb.add_body, got {ball_body!r}")
    if plate_body is not None and R2 is not None:
        diff = sp.Matrix(plate_body.orientation) - R2
        if _max_abs_at_random_points(diff) > GEOMETRY_TOL:
            problems.append(f"sphere_on_moving_plane {name!r}: plate_body {plate_body.name!r} has an "
                            "orientation different from plate_orientation; pass the same matrix")
    if not problems:
        r_c = r_o + R2 * r_c_bar
        centre = r_c + R2 * sp.Matrix([0, 0, Rs])
        gap = _max_abs_at_random_points(sp.Matrix(position) - centre)
        if gap > GEOMETRY_TOL:
            problems.append(
                f"sphere_on_moving_plane {name!r}: the centre of body {ball_body.name!r} is not at "
                f"r_C + R_2 [0, 0, R]^T (Eq. (8.48)); it differs by up to {gap:.3g} at random points. "
                f"Place the body at plate_origin + plate_orientation * (contact_point_plate + [0, 0, radius])")
    if problems:
        raise contact_error("sphere-on-moving-plane", problems)

    # Eq. (8.53): velocity of the material point of the sphere at C (global components)
    v_c31 = sp.Matrix(mb.point_velocity(ball_body, r_c))
    # Eq. (8.54): velocity of the material point of the plate at C
    if plate_body is not None:
        v_c21 = sp.Matrix(mb.point_velocity(plate_body, r_c))
    else:
        Rd = sp.Matrix(mb.velocity_of(R2))
        W2 = Rd * R2.T                                  # skew(ω2), quasi-static inputs
        w2 = sp.Matrix([W2[2, 1], W2[0, 2], W2[1, 0]])
        v_o = sp.Matrix(mb.velocity_of(r_o))
        v_c21 = v_o + w2.cross(r_c - r_o)
    # Eqs. (8.51)-(8.52): relative velocity in the plate frame
    v_bar = R2.T * (v_c31 - v_c21)
    v_bar = _simplify_relative_velocity(v_bar, tuple(getattr(mb, "inputs", ())))
    z_left = _max_abs_at_random_points(sp.Matrix([v_bar[2]]))
    if z_left > GEOMETRY_TOL:
        raise ModelError(
            f"sphere_on_moving_plane {name!r}: the normal component of the relative contact velocity "
            f"(Eq. (8.55)) is not identically zero (up to {z_left:.3g} at random points); the sphere "
            "would leave the plane. Check that contact_point_plate and the ball position use the "
            "same plate frame")
    names = (f"{name}_x", f"{name}_y")
    mb.add_nonholonomic(v_bar[0], name=names[0])
    mb.add_nonholonomic(v_bar[1], name=names[1])
    return SphereOnPlaneContact(name=name, nonholonomic_names=names, holonomic_names=(),
                                contact_point=sp.ImmutableMatrix(r_c),
                                relative_velocity=sp.ImmutableMatrix(v_bar),
                                plate_orientation=sp.ImmutableMatrix(R2))
