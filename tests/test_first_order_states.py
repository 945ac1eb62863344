"""First-order auxiliary states inside MultibodySystem (ż = H(x, ẋ, z, u), z in the loads):
exact rate kernels (compile_rates) and the linearization of Sect. 7.2 (linearize_first_order_system).

Toy: a point mass on a rod of length L (coordinates th, y; holonomic y - L sin th = 0) pushed
horizontally by a DC motor, F = k_t i, with L_m di/dt = u - R i - k_e xdot (back-emf on the
horizontal velocity xdot = -L sin th thd). At th0 = 135 deg the force k_t i0 = m g holds it.
Closed form of the 3x3 Jacobian in [th, thd, i]:
  m L^2 thdd = -k_t i L sin th - m g L cos th,   di/dt = (u - R i + k_e L sin th thd) / L_m.
"""

import math

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import LinearSystemError, ModelError
from nhcontrol.compiled import compile_rates
from nhcontrol.linearization import linearize_first_order_system
from nhcontrol.modeling import MultibodySystem
from nhcontrol.reference import Reference

P = dict(m=2.0, L=0.5, g=9.81, kt=3.0, ke=0.7, R=1.5, Lm=0.02)


def _toy():
    mb = MultibodySystem("motor_rod")
    th, y = mb.add_coordinates("th y")
    m, L, g, kt, ke, R, Lm = mb.add_parameters(**P)
    i = mb.add_first_order_states("i")
    u = mb.add_inputs("u")
    body = mb.add_body("mass", mass=m, inertia=sp.zeros(3, 3),
                       position=sp.Matrix([L * sp.cos(th), y, 0]))
    mb.add_gravity(g, (0, -1, 0))
    mb.add_holonomic(y - L * sp.sin(th), "rod")
    mb.add_force(body, sp.Matrix([kt * i, 0, 0]))
    xdot = -L * sp.sin(th) * mb.velocities[0]
    mb.set_rates({i: (u - R * i - ke * xdot) / Lm})
    return mb


@pytest.fixture(scope="module")
def toy():
    mb = _toy()
    return mb, mb.compile(), compile_rates(mb)


def test_rates_and_jacobians_are_exact(toy):
    mb, cm, rk = toy
    assert rk.states == ("i",) and rk.inputs == ("u",) and rk.state_index == (0,)
    assert mb.first_order_states == (sp.Symbol("i"),) and list(cm.inputs) == ["i", "u"]
    x, xd = np.array([2.0, 0.5 * math.sin(2.0)]), np.array([0.3, 0.5 * math.cos(2.0) * 0.3])
    h = rk.rates(x, xd, [1.2], [4.0])
    xdot = -P["L"] * math.sin(2.0) * 0.3
    assert h[0] == pytest.approx((4.0 - P["R"] * 1.2 - P["ke"] * xdot) / P["Lm"], rel=1e-14)
    J = rk.jacobians(x, xd, [1.2], [4.0])
    np.testing.assert_allclose(J.H_x, [[P["ke"] * P["L"] * math.cos(2.0) * 0.3 / P["Lm"], 0.0]], rtol=1e-14)
    np.testing.assert_allclose(J.H_xd, [[P["ke"] * P["L"] * math.sin(2.0) / P["Lm"], 0.0]], rtol=1e-14)
    np.testing.assert_allclose(J.H_z, [[-P["R"] / P["Lm"]]])
    np.testing.assert_allclose(J.H_u, [[1 / P["Lm"]]])


def test_linearization_matches_closed_form(toy):
    mb, cm, rk = toy
    m, L, g, kt, ke, R, Lm = (P[k] for k in ("m", "L", "g", "kt", "ke", "R", "Lm"))
    th0 = math.radians(135.0)
    i0 = -m * g * math.cos(th0) / (kt * math.sin(th0))
    ref = Reference.equilibrium(cm, [th0, L * math.sin(th0)], u=[i0, R * i0])
    res = linearize_first_order_system(cm, rk, ref, dict(independent=["th"], admissible_dependent=[],
                                                         dependent=["y"]))
    a21 = (-kt * i0 * L * math.cos(th0) + m * g * L * math.sin(th0)) / (m * L**2)
    a23 = -kt * L * math.sin(th0) / (m * L**2)
    A = np.array([[0, 1, 0], [a21, 0, a23], [0, ke * L * math.sin(th0) / Lm, -R / Lm]])
    np.testing.assert_allclose(res.A, A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.B, [[0.0], [0.0], [1 / Lm]], atol=1e-12)
    assert res.states == ("th", "th_d", "i") and res.inputs == ("u",)


def test_errors(toy):
    mb, cm, rk = toy
    with pytest.raises(ModelError, match="not a first-order state"):
        mb.set_rates({sp.Symbol("u"): 1})
    with pytest.raises(ModelError, match="unknown symbol"):
        mb.set_rates({sp.Symbol("i"): sp.Symbol("q")})
    with pytest.raises(ModelError, match="already used"):
        mb.add_first_order_states("th")
    bare = MultibodySystem("bare")
    bare.add_coordinates("x")
    z = bare.add_first_order_states("z")
    with pytest.raises(ModelError, match="no rate equation"):
        bare.rates
    with pytest.raises(ModelError, match="no first-order states"):
        compile_rates(_plain())
    with pytest.raises(ModelError, match="must have 1 entries"):
        rk.rates([0.0, 0.0], [0.0, 0.0], [1.0, 2.0], [0.0])
    assert str(z) == "z"


def _plain():
    mb = MultibodySystem("plain")
    mb.add_coordinates("x")
    return mb


def test_description_unchanged_without_states():
    """Models without first-order states keep their description (and cache hash)."""
    assert "z=" not in _plain().description() and "rate=" in _toy().description()


@pytest.mark.slow
def test_hydraulic_fourbar_built_with_states_gives_the_same_jacobian():
    """The four-bar with p1, p2, p3, U as first-order states of the MultibodySystem (one more
    compilation, ~20 s) gives exactly the 6x6 Jacobian and B of the path with the circuit beside
    the model."""
    from nhcontrol.models import hydraulic_fourbar as hf
    mb = hf.build_with_circuit()
    cm, rk = mb.compile(), compile_rates(mb)
    eq = hf.equilibrium(60.0)
    ref = Reference.equilibrium(cm, eq.x, u=np.r_[eq.p, 0.0, 0.0])
    res = linearize_first_order_system(cm, rk, ref, hf.PARTITION)
    lin = hf.linearization()
    assert res.states == hf.STATES and res.inputs == ("U_ref",)
    np.testing.assert_allclose(res.A, lin.A, rtol=1e-12, atol=0)
    np.testing.assert_allclose(res.B, lin.B, rtol=1e-12, atol=0)
    np.testing.assert_allclose(rk.rates(eq.x, np.zeros(10), np.r_[eq.p, 0.1], [0.0])[:3],
                               hf.circuit_rates(eq.x, np.zeros(10), eq.p, 0.1), rtol=1e-12)
    with pytest.raises(LinearSystemError, match="do not belong"):
        linearize_first_order_system(hf.model(), rk, Reference.equilibrium(hf.model(), eq.x, u=eq.p),
                                     hf.PARTITION)
    # the same torque-pulse simulation through both model forms
    from nhcontrol.simulate import forward_dynamics_first_order
    pulse = hf.TorquePulse(300.0, 0.02)
    tau = hf.HYDRAULIC_DEFAULTS["tau_v"]
    T = np.linspace(0.0, 0.02, 21)
    Q = dict(generalized_force=lambda t, x, xd: hf.torque_generalized_force(x, pulse(t)), t_eval=T,
             max_step=0.002, rtol=1e-10)
    a = forward_dynamics_first_order(cm, (0.0, 0.02), eq.x, np.zeros(10), np.r_[eq.p, 0.0], rates=rk,
                                     r=[0.0], **Q)
    b = forward_dynamics_first_order(hf.model(), (0.0, 0.02), eq.x, np.zeros(10), eq.p, [0.0],
                                     z_rate=lambda x, xd, z, w: hf.circuit_rates(x, xd, z, w[0]),
                                     w_rate=lambda w, r: hf.spool_rates(w, r, tau), r=0.0, **Q)
    dphi = np.max(np.abs(b.x[:, 5] - eq.x[5]))
    assert dphi > 1e-6 and np.max(np.abs(a.x[:, 5] - b.x[:, 5])) < 1e-6 * dphi
    np.testing.assert_allclose(a.z[:, :3], b.z, rtol=1e-7)


def test_simulation_of_a_model_with_states(toy):
    """forward_dynamics_first_order with the compiled rates: the equilibrium is kept, and a small
    step of the motor voltage agrees with the linearization to second order (halving the step
    quarters the difference)."""
    import control as ct
    from nhcontrol.simulate import forward_dynamics_first_order
    mb, cm, rk = toy
    L, R = P["L"], P["R"]
    th0 = math.radians(135.0)
    i0 = -P["m"] * P["g"] * math.cos(th0) / (P["kt"] * math.sin(th0))
    x0 = [th0, L * math.sin(th0)]
    ref = Reference.equilibrium(cm, x0, u=[i0, R * i0])
    lin = linearize_first_order_system(cm, rk, ref, dict(independent=["th"], admissible_dependent=[],
                                                         dependent=["y"]))
    T = np.linspace(0.0, 0.05, 51)
    diffs = []
    for du in (0.2, 0.1):
        sim = forward_dynamics_first_order(cm, (0.0, 0.05), x0, [0.0, 0.0], [i0], rates=rk,
                                           r=[R * i0 + du], t_eval=T, rtol=1e-10)
        lr = ct.forced_response(ct.ss(lin.A, lin.B, np.eye(3), 0), T, np.full(T.size, du))
        diffs.append(np.max(np.abs(sim.x[:, 0] - th0 - lr.states[0])))
        assert sim.constraint_residual < 1e-10 and sim.r.shape == (51, 1)
    assert diffs[0] / diffs[1] == pytest.approx(4.0, rel=0.1)
    with pytest.raises(Exception, match="not both"):
        forward_dynamics_first_order(cm, (0.0, 0.01), x0, [0.0, 0.0], [i0], [0.0], rates=rk)
