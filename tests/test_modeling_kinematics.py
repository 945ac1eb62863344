"""Angular velocities (ω̃ = Ṙ Rᵀ, ω̄ = Rᵀ ω), point velocities and the expression graph."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import MultibodySystem, euler_rotation, rot_x, rot_y, rot_z
from nhcontrol.modeling.graph import Direction, ExprGraph
from nhcontrol.modeling.simplify import angular_velocity_jacobian


def _body(seq="zxz", extra=None):
    mb = MultibodySystem("kin")
    q = mb.add_coordinates("x y z psi phi gamma")
    R = euler_rotation(seq, q[3:]) if extra is None else extra(q)
    b = mb.add_body("b", mass=1, inertia=sp.eye(3), position=q[:3], orientation=R)
    return mb, q, b


def test_zxz_body_angular_velocity_textbook_form():
    """ω̄ for Z-X-Z Euler angles (Eq. (2.24)): exact symbolic identity."""
    mb, q, b = _body("zxz")
    psi, phi, gam = q[3:]
    psid, phid, gamd = mb.velocities[3:]
    ref = sp.Matrix([psid * sp.sin(phi) * sp.sin(gam) + phid * sp.cos(gam),
                     psid * sp.sin(phi) * sp.cos(gam) - phid * sp.sin(gam),
                     psid * sp.cos(phi) + gamd])
    assert sp.expand(mb.body_angular_velocity(b) - ref) == sp.zeros(3, 1)
    ref_global = sp.Matrix([phid * sp.cos(psi) + gamd * sp.sin(psi) * sp.sin(phi),
                            phid * sp.sin(psi) - gamd * sp.cos(psi) * sp.sin(phi),
                            psid + gamd * sp.cos(phi)])
    assert sp.expand(mb.angular_velocity(b) - ref_global) == sp.zeros(3, 1)


def _numeric_check(mb, b, seed=0):
    """ω̃ = Ṙ Rᵀ and ω̄ = Rᵀ ω at random points (to 1e-12)."""
    qs, qds = list(mb.coordinates), list(mb.velocities)
    R = sp.Matrix(b.orientation)
    Rd = sum((R.diff(q) * qd for q, qd in zip(qs, qds)), sp.zeros(3, 3))
    fR = sp.lambdify([qs, qds], R, "numpy")
    fRd = sp.lambdify([qs, qds], Rd, "numpy")
    fw = sp.lambdify([qs, qds], mb.angular_velocity(b), "numpy")
    fwb = sp.lambdify([qs, qds], mb.body_angular_velocity(b), "numpy")
    rng = np.random.default_rng(seed)
    for _ in range(4):
        x, xd = rng.uniform(-1, 1, len(qs)), rng.uniform(-1, 1, len(qs))
        Rv, Rdv = np.asarray(fR(x, xd), float), np.asarray(fRd(x, xd), float)
        W = Rdv @ Rv.T
        w = np.ravel(fw(x, xd))
        np.testing.assert_allclose(W, -W.T, atol=1e-12)
        np.testing.assert_allclose(w, [W[2, 1], W[0, 2], W[1, 0]], atol=1e-12)
        np.testing.assert_allclose(np.ravel(fwb(x, xd)), Rv.T @ w, atol=1e-12)


@pytest.mark.parametrize("seq", ["zxz", "zxy", "xyz", "yzy"])
def test_angular_velocity_numerically(seq):
    mb, q, b = _body(seq)
    _numeric_check(mb, b)


def test_long_chain_with_parameter_and_input():
    """Five rotations with a parameter angle and an input, as in the bicycle's front frame."""
    nu = sp.Symbol("nu")

    def R(q):
        return rot_z(q[3]) * rot_x(q[4]) * rot_y(q[5]) * rot_y(-nu) * rot_z(q[0] + q[1])

    mb, q, b = _body(extra=R)
    mb.add_parameters(nu=0.3)
    wb = mb.body_angular_velocity(b)
    assert sp.count_ops(wb) < 200  # simplified (the raw vee(Rᵀ Ṙ) has thousands of operations)
    sub = {nu: 0.3}
    mb2 = MultibodySystem("kin2")
    q2 = mb2.add_coordinates("x y z psi phi gamma")
    b2 = mb2.add_body("b", mass=1, inertia=sp.eye(3), position=q2[:3],
                      orientation=R(q2).subs(sub))
    _numeric_check(mb2, b2)


def test_non_polynomial_orientation_falls_back_to_exact_expression():
    """rot_z(atan(x)) has sin(atan(x)) = x/sqrt(1+x²): not polynomial in sines and cosines."""
    mb, q, b = _body(extra=lambda q: rot_z(sp.atan(q[3])) * rot_x(q[4]))
    assert angular_velocity_jacobian(b.orientation, list(mb.coordinates)) is None
    _numeric_check(mb, b)


def test_point_velocity_of_body_fixed_point():
    mb, q, b = _body("zyx")
    P = sp.Matrix(q[:3]) + b.orientation * sp.Matrix([0.3, -0.2, 0.5])
    diff = mb.point_velocity(b, P) - mb.velocity_of(P)
    f = sp.lambdify([list(mb.coordinates), list(mb.velocities)], diff, "numpy")
    rng = np.random.default_rng(1)
    np.testing.assert_allclose(np.ravel(f(rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6))), 0, atol=1e-12)


def test_rotation_jacobian_frame_error():
    mb, q, b = _body()
    with pytest.raises(ModelError, match="frame must be 'body' or 'global', got 'local'"):
        mb.rotation_jacobian(b, "local")


def test_graph_total_derivatives_match_sympy():
    """ExprGraph.diff (chain rule through nodes, directional derivatives) equals Expr.diff exactly."""
    x, y, v = sp.symbols("x y v")
    g = ExprGraph([x, y, v])
    e1, e2 = g.ingest([sp.sin(x * y) ** 2 + sp.cos(x) * y, sp.sqrt(1 + x**2) * sp.exp(y) + sp.sin(x * y)])
    w = g.define(e1 * e2 + sp.tan(e1) / e2)
    explicit = g.expand(w)
    for z in (x, y):
        d = g.diff(w, z)
        assert sp.simplify(g.expand(d) - explicit.diff(z)) == 0
    tdir = Direction("t", {x: v})
    dt = g.diff(w, tdir)
    assert sp.simplify(g.expand(dt) - explicit.diff(x) * v) == 0
    # derivatives of a directional-derivative node (commuted partials, ExprGraph._swap_rule)
    dt_node = g.define(dt)
    pt = {x: sp.Rational(3, 7), y: sp.Rational(-2, 5), v: sp.Rational(5, 3)}
    for z in (v, x, y):
        diff = (g.expand(g.diff(dt_node, z)) - (explicit.diff(x) * v).diff(z)).xreplace(pt)
        assert abs(complex(diff.evalf(30))) < 1e-25
    assert g.diff(w, sp.Symbol("unrelated")) == 0


def test_numeric_angles_in_orientation():
    """Float angles (e.g. a fixed tilt 0.1 rad) become numeric coefficients; still exact to 1e-12."""
    mb, q, b = _body(extra=lambda q: rot_y(0.1) * rot_z(q[3]) * rot_x(sp.Rational(1, 3)) * rot_y(q[4]))
    _numeric_check(mb, b)


def test_cheap_trig_uses_pythagoras():
    from nhcontrol.modeling import cheap_trig

    a, b = sp.symbols("a b")
    assert cheap_trig(sp.sin(a) ** 2 + sp.cos(a) ** 2) == 1
    assert cheap_trig((sp.sin(a) ** 4 - sp.cos(a) ** 4) * sp.sin(b)) == sp.expand((1 - 2 * sp.cos(a) ** 2) * sp.sin(b))
