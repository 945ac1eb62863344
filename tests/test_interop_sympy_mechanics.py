"""sympy.physics.mechanics models in nhcontrol (nhcontrol.interop.from_sympy_mechanics).

* sympy's own n-link pendulum on a cart (``sympy.physics.mechanics.models``, a KanesMethod):
  nhcontrol's third procedure equals ``KanesMethod.linearize`` at the upright equilibrium and at
  a random non-equilibrium point with a cart force (1e-12 relative);
* a rolling disc written with ``System`` (nonholonomic, speeds u eliminated by the kinematic
  equations): the lean/yaw eigenvalues of upright rolling equal the closed form
  ``λ² = −((C + m r²) C Ω²/A − m g r)/(A + m r²)`` (Neimark & Fufaev; see
  tests/test_models_rolling_wheel.py) to 1e-10, and the other eigenvalues vanish;
* unsupported features give errors that name them.
"""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("sympy")
me = pytest.importorskip("sympy.physics.mechanics")

from nhcontrol._util.errors import InteropError  # noqa: E402
from nhcontrol.interop import from_sympy_mechanics  # noqa: E402


def _rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - b)) / max(1.0, np.max(np.abs(b))))


@pytest.fixture(scope="module")
def pendulum():
    from sympy.physics.mechanics.models import n_link_pendulum_on_cart

    n = 2
    kane = n_link_pendulum_on_cart(n, cart_force=True, joint_torques=False)
    g = sp.Symbol("g")
    vals = {g: 9.81, **{s: 1.0 - 0.2 * i for i, s in enumerate(sp.symbols(f"l:{n}"))},
            **{s: 1.0 + 0.3 * i for i, s in enumerate(sp.symbols(f"m:{n + 1}"))}}
    F = me.dynamicsymbols("F")
    mb = from_sympy_mechanics(kane, vals, inputs=[F], name="pendulum_on_cart")
    cm = mb.compile()
    return kane, vals, F, mb, cm


def _nhcontrol_at(cm, x, xd, u):
    from nhcontrol import linearize
    from nhcontrol.linearization import index1_accelerations
    from nhcontrol.reference import reference_points

    xdd, lam = index1_accelerations(cm, x, xd, u)
    ref = reference_points(cm, x[None], xd[None], xdd[None], np.atleast_2d(u), lam[None])
    return linearize(cm, ref, dict(independent=list(cm.coordinates)), 0.0), xdd


@pytest.mark.parametrize("point", ["upright", "random"])
def test_pendulum_on_cart_matches_kanes_linearize(pendulum, point):
    kane, vals, F, mb, cm = pendulum
    assert cm.coordinates == ("q0", "q1", "q2") and cm.inputs == ("F",)
    assert set(cm.parameters) == {"g", "l0", "l1", "m0", "m1", "m2"}
    if point == "upright":
        x, xd, Fv = np.zeros(3), np.zeros(3), 0.0
    else:
        rng = np.random.default_rng(0)
        x, xd, Fv = rng.normal(0, 0.5, 3), rng.normal(0, 0.5, 3), 0.7
    lin, xdd = _nhcontrol_at(cm, x, xd, [Fv])
    assert lin.states == ("q0", "q1", "q2", "q0_d", "q1_d", "q2_d")
    op = {**dict(zip(kane.q, x)), **dict(zip(kane.u, xd)), **{s.diff(): a for s, a in zip(kane.u, xdd)}, F: Fv}
    A, B = kane.linearize(A_and_B=True, op_point=[op, vals])[:2]
    A, B = np.array(A.evalf(), dtype=float), np.array(B.evalf(), dtype=float)
    assert _rel(lin.A, A) <= 1e-12 and _rel(lin.B, B) <= 1e-12


def rolling_disc_system():
    """A uniform disc rolling without slip, written with sympy.physics.mechanics.System:
    yaw q1, lean q2, spin q3, contact point (q4, q5); speeds u = q̇; rolling constraints on the
    material contact point (two, nonholonomic, in u)."""
    t = me.dynamicsymbols._t
    q = me.dynamicsymbols("q1:6")
    u = me.dynamicsymbols("u1:6")
    m, r, g = sp.symbols("m r g")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    Y = N.orientnew("Y", "Axis", [q[0], N.z])
    L = Y.orientnew("L", "Axis", [q[1], Y.x])
    R = L.orientnew("R", "Axis", [q[2], L.y])
    C = O.locatenew("C", q[3] * N.x + q[4] * N.y)
    G = C.locatenew("G", r * L.z)
    disc = me.RigidBody("disc", G, R, m, (me.inertia(R, m * r**2 / 4, m * r**2 / 2, m * r**2 / 4), G))
    system = me.System(N, O)
    system.q_ind = q
    system.u_ind = u[:3]
    system.u_dep = u[3:]
    system.kdes = [qi.diff(t) - ui for qi, ui in zip(q, u)]
    system.add_bodies(disc)
    system.apply_uniform_gravity(-g * N.z)
    kd = {qi.diff(t): ui for qi, ui in zip(q, u)}
    v_contact = G.vel(N) + R.ang_vel_in(N).cross(-r * L.z)
    system.nonholonomic_constraints = [v_contact.dot(N.x).xreplace(kd), v_contact.dot(N.y).xreplace(kd)]
    system.validate_system()
    return system, (m, r, g)


@pytest.fixture(scope="module")
def disc():
    system, (m, r, g) = rolling_disc_system()
    mb = from_sympy_mechanics(system, {m: 2.0, r: 0.3, g: 9.81}, name="rolling_disc_sympy")
    return mb, mb.compile()


@pytest.mark.parametrize("v", [0.5, 2.0, 5.0])
def test_rolling_disc_closed_form_eigenvalues(disc, v):
    from nhcontrol import linearize
    from nhcontrol.reference import Reference

    mb, cm = disc
    assert (cm.m, cm.l) == (0, 2) and cm.coordinates == ("q1", "q2", "q3", "q4", "q5")
    mass, r, g = 2.0, 0.3, 9.81
    A_, C_ = mass * r**2 / 4, mass * r**2 / 2
    Om = v / r
    ref = Reference.constant_velocity(cm, np.zeros(5), [0.0, 0.0, Om, v, 0.0])   # checked admissible
    lin = linearize(cm, ref, dict(independent=["q1", "q2", "q4"], admissible_dependent=["q3", "q5"],
                                  dependent=[]))
    ev = np.linalg.eigvals(lin.A)
    ev = ev[np.argsort(np.abs(ev))]
    w2 = ((C_ + mass * r**2) * C_ * Om**2 / A_ - mass * g * r) / (A_ + mass * r**2)
    lam = np.sqrt(complex(-w2))
    assert np.max(np.abs(ev[:-2])) < 1e-10
    np.testing.assert_allclose(np.sort_complex(ev[-2:]), np.sort_complex([lam, -lam]), rtol=1e-10, atol=1e-12)


def test_errors_name_the_problem():
    system, (m, r, g) = rolling_disc_system()
    with pytest.raises(InteropError, match=r"without a value: \['g'\]"):
        from_sympy_mechanics(system, {m: 2.0, r: 0.3})
    with pytest.raises(InteropError, match="names used twice"):
        from_sympy_mechanics(system, {m: 2.0, r: 0.3, g: 9.8, "q1": 1.0})
    # a time-dependent symbol that is no coordinate, speed or input
    T = me.dynamicsymbols("T")
    system.add_loads(me.Torque(system.bodies[0].frame, T * system.frame.z))
    with pytest.raises(InteropError, match=r"time-dependent symbols \['T'\]"):
        from_sympy_mechanics(system, {m: 2.0, r: 0.3, g: 9.8})
    mb = from_sympy_mechanics(system, {m: 2.0, r: 0.3, g: 9.8}, inputs=[T])
    assert [s.name for s in mb.inputs] == ["T"]
    with pytest.raises(InteropError, match="needs a sympy.physics.mechanics System"):
        from_sympy_mechanics(object(), {})


def test_untranslatable_actuator_is_named():
    from sympy.physics.mechanics.actuator import ActuatorBase

    class Magic(ActuatorBase):
        def to_loads(self):
            raise NotImplementedError("no loads")

    system, (m, r, g) = rolling_disc_system()
    system.add_actuators(Magic())
    with pytest.raises(InteropError, match="actuator .*Magic.* cannot be translated"):
        from_sympy_mechanics(system, {m: 2.0, r: 0.3, g: 9.8})


def test_point_without_position_is_named():
    t = me.dynamicsymbols._t
    q, u = me.dynamicsymbols("q u")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    P = me.Point("P")
    P.set_vel(N, u * N.x)           # a velocity, but no position: not absolute coordinates
    system = me.System(N, O)
    system.q_ind = [q]
    system.u_ind = [u]
    system.kdes = [q.diff(t) - u]
    system.add_bodies(me.Particle("pa", P, sp.Symbol("m")))
    with pytest.raises(InteropError, match="position of the mass centre P of body 'pa'"):
        from_sympy_mechanics(system, {"m": 1.0})


def test_joints_and_actuators_match_systems_own_linearization():
    """A double pendulum built with System.from_newtonian, PinJoints and TorqueActuators (a drive
    torque T and a joint spring -k q2): nhcontrol's third procedure equals the linearization of
    the System's own Kane equations at a random moving point (the fixed ground body is left out)."""
    from nhcontrol import linearize
    from nhcontrol.linearization import index1_accelerations
    from nhcontrol.reference import reference_points

    q1, q2, u1, u2, T = me.dynamicsymbols("q1 q2 u1 u2 T")
    l1, l2, m1, m2, g, k = sp.symbols("l1 l2 m1 m2 g k")
    ceiling = me.RigidBody("ceiling")
    link1, link2 = me.RigidBody("link1", mass=m1), me.RigidBody("link2", mass=m2)
    link1.central_inertia = me.inertia(link1.frame, 0.1 * m1, 0.01 * m1, 0.1 * m1)
    link2.central_inertia = me.inertia(link2.frame, 0.1 * m2, 0.01 * m2, 0.1 * m2)
    system = me.System.from_newtonian(ceiling)
    system.add_joints(
        me.PinJoint("J1", ceiling, link1, coordinates=q1, speeds=u1, joint_axis=ceiling.frame.z,
                    child_point=l1 / 2 * link1.frame.y),
        me.PinJoint("J2", link1, link2, coordinates=q2, speeds=u2, joint_axis=link1.frame.z,
                    parent_point=-l1 / 2 * link1.frame.y, child_point=l2 / 2 * link2.frame.y))
    system.apply_uniform_gravity(-g * ceiling.frame.y)
    system.add_actuators(me.TorqueActuator(T, ceiling.frame.z, link1.frame, ceiling.frame),
                         me.TorqueActuator(-k * q2, link1.frame.z, link2.frame, link1.frame))
    vals = {l1: 1.0, l2: 0.7, m1: 2.0, m2: 1.0, g: 9.81, k: 3.0}
    mb = from_sympy_mechanics(system, vals, inputs=[T], name="double_pendulum_joints")
    assert [b.name for b in mb.bodies] == ["link1", "link2"]
    cm = mb.compile()
    x, xd, u = np.array([0.3, -0.5]), np.array([0.2, 0.7]), np.array([0.4])
    xdd, lam = index1_accelerations(cm, x, xd, u)
    lin = linearize(cm, reference_points(cm, x[None], xd[None], xdd[None], u[None], lam[None]),
                    dict(independent=["q1", "q2"]), 0.0)
    system.form_eoms()
    op = {q1: x[0], q2: x[1], u1: xd[0], u2: xd[1], u1.diff(): xdd[0], u2.diff(): xdd[1], T: u[0]}
    A, B = system.eom_method.linearize(A_and_B=True, op_point=[op, vals])[:2]
    assert _rel(lin.A, np.array(A.evalf(), dtype=float)) <= 1e-12
    assert _rel(lin.B, np.array(B.evalf(), dtype=float)) <= 1e-12
