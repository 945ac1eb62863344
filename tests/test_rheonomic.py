"""Rheonomic constraints through a clock coordinate: `MultibodySystem.add_clock`.

The skate single-track model with steering torque (``force_torque`` variant, its driving forces
left at 0) whose longitudinal speed is prescribed as a function of time,
``v_G · i_1 = V(t) = V0 + a t``, written with the clock ``τ`` (``τ̇ − 1 = 0``) as the affine
constraint ``cos ψ ẋ + sin ψ ẏ − (V0 + a τ) = 0``. Checks: the degree-of-freedom count equals
the constant-speed model's (2.5: the clock is not counted); forward dynamics (Newton–Euler,
index-1 DAE with Baumgarte, ``τ(0) = t0``) against Appell's equations whose velocity map is
written in the explicit time ``t`` (no clock in the map); the reference check; the third
procedure along the rheonomic trajectory against central differences (the clock column holds
``∂(·)/∂t``, the clock row is zero: one extra spurious zero eigenvalue); a steady reference
drops the clock from the reduced state space; a rheonomic holonomic constraint ``C(x, t)``
(pendulum with a moving pivot) against its minimal-coordinate equation; misuse of
``add_clock``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from nhcontrol._util.errors import ModelError
from nhcontrol.linearization import Partition, linearize, reduced_ode_jacobian_fd, suggest_partition
from nhcontrol.modeling.appell import appell_equations
from nhcontrol.models import single_track as st
from nhcontrol.reference import Reference
from nhcontrol.simulate import forward_dynamics

ACCEL = 0.5                 # V(t) = V0 + ACCEL t  [m/s²]
T0, T1 = 1.0, 4.0           # simulated interval: tau(0) = T0


def _model():
    mdl = st.build("force_torque")
    mb = mdl.system
    x, y, psi, gam = mb.coordinates
    tau = mb.add_clock()
    xd, yd = mb.velocities[:2]
    V = [p for p in mb.parameters if str(p) == "V"][0]
    acc = mb.add_parameters(accel=ACCEL)
    mb.add_nonholonomic(sp.cos(psi) * xd + sp.sin(psi) * yd - (V + acc * tau), name="speed",
                        affine=True)
    return mb, tau, V, acc


@pytest.fixture(scope="module")
def setup():
    mb, tau, V, acc = _model()
    cm = mb.compile(cache=False)
    # Appell's equations with the rheonomic velocity map written in the explicit time t
    x, y, psi, gam, _ = mb.coordinates
    a, b = (p for p in mb.parameters if str(p) in ("a", "b"))
    t = sp.Symbol("t", real=True)
    speed = V + acc * t
    yaw = speed * sp.tan(gam) / (a + b)
    wg = sp.Symbol("gamma_d", real=True)
    xdot = [speed * sp.cos(psi) - b * yaw * sp.sin(psi), speed * sp.sin(psi) + b * yaw * sp.cos(psi),
            yaw, wg, sp.S.One]
    ae = appell_equations(mb, xdot, [wg], time=t)
    f = ae.rhs()
    u = lambda tt: [0.0, 0.0, 20.0 * math.sin(2 * tt)]  # noqa: E731
    s0 = np.array([0.0, 0.0, 0.1, 0.02, T0, 0.3])
    xd0 = f(T0, s0, u(T0))[:5]
    ts = np.linspace(T0, T1, 31)
    sim = forward_dynamics(cm, (T0, T1), s0[:5], xd0, u=u, rtol=1e-11, atol=1e-12, t_eval=ts)
    sol = solve_ivp(lambda tt, s: f(tt, s, u(tt)), (T0, T1), s0, rtol=1e-11, atol=1e-12, t_eval=ts)
    return mb, cm, sim, sol, ts


def test_dof_excludes_the_clock(setup):
    mb, cm, _, _, _ = setup
    const = st.build("torque")                   # same model at constant speed V
    assert (mb.n, mb.l) == (5, 4)
    assert (mb.dof, mb.first_order_odes) == (const.dof, const.first_order_odes) == (2.5, 5)
    assert (const.system.dof, const.system.first_order_odes) == (2.5, 5)
    assert (cm.dof, cm.first_order_odes, cm.clock) == (2.5, 5, "tau")
    assert cm.affine_names == ("clock", "speed")
    rng = np.random.default_rng(0)
    xv = rng.uniform(-1, 1, 5)
    assert cm.b(xv)[-2:] == pytest.approx([-1.0, -(cm.parameters["V"] + ACCEL * xv[4])], rel=1e-14)


def test_simulation_equals_appell(setup):
    """Newton–Euler with the clock (tau(0) = t0) and Appell's equations in explicit time agree
    to 1e-8 over 3 s; tau equals t to round-off; |D ẋ + b| stays below 1e-8."""
    _, cm, sim, sol, ts = setup
    assert np.max(np.abs(sim.x - sol.y[:5].T)) < 1e-8
    assert np.max(np.abs(sim.xd[:, 3] - sol.y[5])) < 1e-8
    assert np.max(np.abs(sim.x[:, 4] - ts)) < 1e-12
    assert np.max(np.abs(sim.xd[:, 4] - 1.0)) < 1e-12
    speed = np.cos(sim.x[:, 2]) * sim.xd[:, 0] + np.sin(sim.x[:, 2]) * sim.xd[:, 1]
    assert np.max(np.abs(speed - (cm.parameters["V"] + ACCEL * ts))) < 1e-8
    assert sim.max_velocity_drift < 1e-8


def test_linearization_matches_finite_differences(setup):
    """The exact A(t), B(t) (∂b/∂τ enters Q_d and ∂(D v + b)/∂x) agree with central differences of
    the nonlinear reduced ODE to 1e-6 relative; tau is an x_ad state with a zero row of A (an
    extra zero eigenvalue, spurious) and a non-zero column (the explicit time derivatives)."""
    _, cm, sim, _, _ = setup
    ref = Reference.from_simulation(sim)
    # absolute residuals of an integration at rtol 1e-11 with speeds of 20-22 m/s: ~1e-10 in
    # D ẋ + b, ~1e-9 in D ẍ - Q_d, hence the tolerance 1e-8 (the default is 1e-9)
    assert ref.check(cm, np.linspace(T0 + 0.1, T1 - 0.1, 7), tol=1e-8).ok
    part = suggest_partition(cm, ref, t=2.0)
    assert "tau" in part.admissible_dependent
    part = Partition.from_dict({"x_ai": ["gamma"], "x_ad": ["x", "y", "psi", "tau"]})
    for t in (1.5, 3.3):
        lin = linearize(cm, ref, part, t=t)
        fd = reduced_ode_jacobian_fd(cm, ref, part, t=t)
        assert lin.A.shape == (cm.first_order_odes + 1,) * 2
        assert np.max(np.abs(lin.A - fd.J)) < 1e-6 * np.max(np.abs(lin.A))
        assert np.max(np.abs(lin.B - fd.B)) < 1e-6 * np.max(np.abs(lin.B))
        j = lin.states.index("tau")
        assert np.all(lin.A[j] == 0.0) and np.all(lin.B[j] == 0.0)
        assert np.max(np.abs(lin.A[:, j])) > 1e-2             # ∂(·)/∂t of the speed V0 + a t
        assert np.sum(np.abs(lin.spurious_eigenvalues) < 1e-12) == cm.l


def test_add_clock_misuse():
    mb, _, _, _ = _model()
    with pytest.raises(ModelError, match="already has the clock 'tau'"):
        mb.add_clock("t2")
    mdl = st.build("force")
    with pytest.raises(ModelError, match="clock name 'psi'.*already used"):
        mdl.system.add_clock("psi")


def test_steady_reference_drops_the_clock():
    """A clock on which nothing depends (constant-speed model, straight steady run): the clock
    column of A vanishes too and to_statespace(states="reduced") drops tau; tau's zero
    eigenvalue is one of the l + 1 spurious ones."""
    mb = st.build("torque").system
    mb.add_clock()
    cm = mb.compile(cache=False)
    V = cm.parameters["V"]
    ref = Reference.from_functions(cm, x=lambda t: np.array([V * t, 0, 0, 0, t]),
                                   xd=lambda t: np.array([V, 0, 0, 0, 1.0]),
                                   xdd=lambda t: np.zeros(5), u=lambda t: np.zeros(1), steady=True)
    assert ref.check(cm, np.linspace(0, 1, 5)).ok
    lin = linearize(cm, ref, suggest_partition(cm, ref, t=0.5), t=0.5)
    assert lin.states[-1] == "tau" and lin.A.shape == (cm.first_order_odes + 1,) * 2
    assert np.all(lin.A[:, -1] == 0.0) and np.all(lin.A[-1] == 0.0)
    assert "tau" not in lin.reduced_states()
    assert "tau" not in lin.to_statespace(states="reduced").state_labels
    assert len(lin.spurious_eigenvalues) == cm.l == 4


def test_rheonomic_holonomic_constraint_shaken_pendulum():
    """C(x, t) = 0 through the clock: a particle on a rod of length L whose pivot moves as
    A sin(ω t), (x − A sin ωτ)² + y² − L² = 0. Newton–Euler with the clock against the
    minimal-coordinate equation θ̈ = −(g sin θ − A ω² sin(ω t) cos θ) / L (derived by hand,
    solved by solve_ivp) to 1e-8 over 3 s; dof 1; the third procedure (x_ai = x, x_d = y,
    x_ad = tau) against central differences to 1e-6 relative."""
    from nhcontrol.modeling import MultibodySystem

    amp, om, length, grav, t0, th0 = 0.2, 3.0, 1.0, 9.81, 0.5, 0.3
    mb = MultibodySystem("shaken_pendulum")
    x, y = mb.add_coordinates("x y")
    tau = mb.add_clock()
    A, w, L, m, g = mb.add_parameters(A=amp, omega=om, L=length, m=1.0, g=grav)
    mb.add_body("bob", mass=m, inertia=sp.zeros(3), position=[x, y, 0])
    mb.add_gravity(g, direction=(0, -1, 0))
    mb.add_holonomic((x - A * sp.sin(w * tau)) ** 2 + y ** 2 - L ** 2, name="rod")
    assert (mb.n, mb.m, mb.l, mb.dof, mb.first_order_odes) == (3, 1, 1, 1.0, 2)
    cm = mb.compile(cache=False)
    x0 = [amp * math.sin(om * t0) + length * math.sin(th0), -length * math.cos(th0), t0]
    xd0 = [amp * om * math.cos(om * t0), 0.0, 1.0]                # θ̇(t0) = 0
    ts = np.linspace(t0, t0 + 3, 31)
    sim = forward_dynamics(cm, (t0, t0 + 3), x0, xd0, rtol=1e-11, atol=1e-12, t_eval=ts)
    sol = solve_ivp(lambda t, s: [s[1], -(grav * math.sin(s[0]) - amp * om ** 2 * math.sin(om * t)
                                          * math.cos(s[0])) / length],
                    (t0, t0 + 3), [th0, 0.0], rtol=1e-12, atol=1e-12, t_eval=ts)
    th = sol.y[0]
    assert np.max(np.abs(sim.x[:, 0] - (amp * np.sin(om * ts) + length * np.sin(th)))) < 1e-8
    assert np.max(np.abs(sim.x[:, 1] + length * np.cos(th))) < 1e-8
    ref = Reference.from_simulation(sim)
    assert ref.check(cm, np.linspace(t0 + 0.1, t0 + 2.9, 7)).ok
    part = Partition.from_dict({"x_ai": ["x"], "x_ad": ["tau"], "x_d": ["y"]})
    for t in (1.0, 2.7):
        lin = linearize(cm, ref, part, t=t)
        fd = reduced_ode_jacobian_fd(cm, ref, part, t=t)
        assert lin.states == ("x", "x_d", "tau")
        assert np.max(np.abs(lin.A - fd.J)) < 1e-6 * np.max(np.abs(lin.A))
        assert np.all(lin.A[2] == 0.0) and abs(lin.A[1, 2]) > 1.0   # ∂ẍ/∂t of the moving pivot
