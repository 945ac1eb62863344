"""Tests of the contact helpers rolling_hoop and knife_edge (modeling/contacts).

Symbolic checks at random numeric points (exact expressions, compared at 1e-13).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import MultibodySystem, contacts, rot_x, rot_y, rot_z


def wheel_system(axis="y", extra_rotation=None):
    mb = MultibodySystem(f"wheel_{axis}")
    x, y, z, psi, phi, theta, xi = mb.add_coordinates("x y z psi phi theta xi")
    r, m = mb.add_parameters(r=0.3, m=2.0)
    spin = {"x": rot_x, "y": rot_y, "z": rot_z}[axis](theta)
    # bring the wheel axis to the body Y direction of the thesis frame when upright
    to_y = extra_rotation if extra_rotation is not None else sp.eye(3)
    R = rot_z(psi) * rot_x(phi) * to_y * spin
    center = sp.Matrix([x, y, z])
    body = mb.add_body("wheel", mass=m, inertia=sp.diag(1, 2, 1) * m * r**2 / 4, position=center, orientation=R)
    rec = contacts.rolling_hoop(mb, body, center, R, r, xi, name="P", axis=axis)
    return mb, rec, R, center


AXIS_TO_Y = {"y": sp.eye(3), "x": rot_z(sp.pi / 2), "z": rot_x(-sp.pi / 2)}


@pytest.mark.parametrize("axis", ["x", "y", "z"])
def test_rolling_hoop_geometry(axis):
    """|r_P - r_G| = r, r_P - r_G ⟂ wheel axis, t_P ⟂ radius and axis, |t_P| = r (1e-13)."""
    mb, rec, R, center = wheel_system(axis, AXIS_TO_Y[axis])
    assert rec.holonomic_names == ("P_z", "P_tangent")
    assert rec.nonholonomic_names == ("P_vx", "P_vy")
    assert [c.name for c in mb.holonomic] == ["P_z", "P_tangent"]
    rng = np.random.default_rng(1)
    k = "xyz".index(axis)
    for _ in range(3):
        vals = dict(zip(mb.coordinates, rng.uniform(-2, 2, 7)))
        vals[sp.Symbol("r")] = 0.3
        rad = np.array((rec.contact_point - center).subs(vals), dtype=float).ravel()
        tan = np.array(rec.tangent.subs(vals), dtype=float).ravel()
        ax = np.array(R.subs(vals), dtype=float)[:, k]
        assert np.linalg.norm(rad) == pytest.approx(0.3, rel=1e-13)
        assert np.linalg.norm(tan) == pytest.approx(0.3, rel=1e-13)
        assert abs(rad @ ax) < 1e-13 and abs(tan @ ax) < 1e-13 and abs(tan @ rad) < 1e-13


@pytest.mark.parametrize("axis", ["x", "y", "z"])
def test_upright_contact_is_lowest_point(axis):
    """Upright wheel (spin axis horizontal), z = r: both holonomic constraints vanish where the
    contact point is the lowest point of the rim (xi = pi/2 - theta for the thesis axis 'y')."""
    mb, rec, R, center = wheel_system(axis, AXIS_TO_Y[axis])
    x, y, z, psi, phi, theta, xi = mb.coordinates
    vals = {x: 0.4, y: -0.3, z: 0.3, psi: 0.8, phi: 0.0, theta: 1.3, sp.Symbol("r"): 0.3}
    if axis == "y":
        xi_star = math.pi / 2 - 1.3
    else:   # lowest point of the rim found numerically
        f = sp.lambdify(xi, rec.contact_point[2].subs(vals))
        grid = np.linspace(0, 2 * math.pi, 3601)
        g0 = float(grid[np.argmin([f(v) for v in grid])])
        xi_star = float(sp.nsolve(rec.tangent[2].subs(vals), xi, g0, prec=30))
    vals[xi] = xi_star
    cp = np.array(rec.contact_point.subs(vals), dtype=float).ravel()
    np.testing.assert_allclose(cp, [0.4, -0.3, 0.0], atol=1e-14)
    for c in mb.holonomic:
        assert abs(float(c.expr.subs(vals))) < 1e-14


def test_material_contact_velocity():
    """v_P has no xi_d term and equals v_G + ω × (r_P - r_G); pure rolling makes it zero."""
    mb, rec, R, center = wheel_system("y")
    x, y, z, psi, phi, theta, xi = mb.coordinates
    assert all(sp.diff(e, mb.velocities[6]) == 0 for e in rec.contact_velocity)
    # upright, rolling along the heading psi with spin rate w: center velocity r w (cos psi, sin psi, 0)
    w, ps, r = 2.5, 0.6, 0.3
    vals = {x: 0.0, y: 0.0, z: r, psi: ps, phi: 0.0, theta: 0.2, xi: math.pi / 2 - 0.2, sp.Symbol("r"): r}
    vel = dict(zip(mb.velocities, [r * w * math.cos(ps), r * w * math.sin(ps), 0.0, 0.0, 0.0, w, -w]))
    vp = np.array(rec.contact_velocity.subs({**vals, **vel}), dtype=float).ravel()
    np.testing.assert_allclose(vp, 0.0, atol=1e-14)


def test_rolling_hoop_collects_all_problems():
    mb = MultibodySystem("bad")
    x, y = mb.add_coordinates("x y")
    body = mb.add_body("b", mass=1, inertia=sp.eye(3), position=[x, y, 0])
    not_a_coordinate = sp.Symbol("xi")
    with pytest.raises(ModelError, match=r"(?s)wheel axis must be one of.*'w'.*center must have 3 components"
                                         r".*orientation must be a 3x3.*xi must be one of the system's coordinates"):
        contacts.rolling_hoop(mb, body, [x, y], sp.eye(2), 0.3, not_a_coordinate, name="P", axis="w")


def test_wheel_frame_axes():
    assert contacts.rolling_hoop.__module__.endswith("rolling_hoop")
    from nhcontrol.modeling.contacts.rolling_hoop import wheel_frame_axes

    assert wheel_frame_axes("y") == (1, 0)
    with pytest.raises(ModelError, match="use axis='y'"):
        wheel_frame_axes("q")


# --------------------------------------------------------------------------- knife edge
def skate(direction=(1, 0, 0)):
    mb = MultibodySystem("skate")
    x, y, psi = mb.add_coordinates("x y psi")
    a, = (mb.add_parameters(a=0.2),)
    R = rot_z(psi)
    G = sp.Matrix([x, y, 0])
    body = mb.add_body("s", mass=1, inertia=sp.eye(3), position=G, orientation=R)
    return mb, body, G + R * sp.Matrix([a, 0, 0])


def test_knife_edge_constraint():
    """Blade along body X: -sin psi xd + cos psi yd + a psid; along body Y: cos psi xd + sin psi yd."""
    mb, body, P = skate()
    rec = contacts.knife_edge(mb, body, P, (1, 0, 0), name="blade")
    assert rec.nonholonomic_names == ("blade_lateral",) and rec.holonomic_names == ()
    x, y, psi = mb.coordinates
    xd, yd, psid = mb.velocities
    a = sp.Symbol("a")
    assert sp.simplify(mb.nonholonomic[0].expr - (-sp.sin(psi) * xd + sp.cos(psi) * yd + a * psid)) == 0
    rec2 = contacts.knife_edge(mb, body, P, (0, 2, 0), name="side")
    # e = n × R (0, 2, 0) = 2 (-cos psi, -sin psi, 0) -> v_P · e
    expr = mb.nonholonomic[1].expr
    assert sp.simplify(expr - (-2) * (sp.cos(psi) * xd + sp.sin(psi) * yd)) == 0
    np.testing.assert_allclose(np.array(rec2.normal.subs(psi, 0.0), dtype=float).ravel(), [-2, 0, 0])


@pytest.mark.parametrize("direction, match", [
    ((0, 0, 0), "direction must be a non-zero body-frame vector"),
    ((0, 0, 1), "is vertical, so it has no horizontal normal"),
    ((1, 0), "direction must have 3 components"),
])
def test_knife_edge_bad_direction(direction, match):
    mb, body, P = skate()
    with pytest.raises(ModelError, match=match):
        contacts.knife_edge(mb, body, P, direction, name="blade")


def test_knife_edge_bad_point_and_name():
    mb, body, P = skate()
    with pytest.raises(ModelError, match=r"(?s)point must have 3 components.*name must be a non-empty string"):
        contacts.knife_edge(mb, body, P[:2, :], (1, 0, 0), name="")
