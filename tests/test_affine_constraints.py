"""Affine nonholonomic constraints ``B(x) ẋ + b(x) = 0`` in the Newton–Euler route.

The skate single-track model with steering torque (``force_torque`` variant, its driving forces
left at 0) and a prescribed speed that varies along the road,
``cos ψ ẋ + sin ψ ẏ − V (1 + ε sin(k x)) = 0``: an affine constraint whose velocity-free term
depends on the coordinates. Checks: validation (the flag is required; inputs in ``b`` are
accepted), the degree-of-freedom count of Table 1 (2.5), the kernels ``b`` and
``∂(D v + b)/∂x`` against central differences, forward dynamics (index-1 DAE with
Baumgarte) against Appell's equations with the same velocity map, consistent initial
conditions and the residual report, and the third numerical procedure along a simulated
trajectory against central differences of the nonlinear reduced ODE.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from nhcontrol._util.errors import ModelError
from nhcontrol.linearization import Partition, linearize, reduced_ode_jacobian_fd
from nhcontrol.modeling.appell import appell_equations
from nhcontrol.models import single_track as st
from nhcontrol.reference import Reference
from nhcontrol.simulate import consistent_initial_conditions, forward_dynamics

EPS, K = 0.1, 0.2           # speed profile V (1 + ε sin(k x))


def _model(affine: bool = True, with_input: bool = False):
    mdl = st.build("force_torque")
    mb = mdl.system
    x, y, psi, gam = mb.coordinates
    xd, yd, _, _ = mb.velocities
    V = [p for p in mb.parameters if str(p) == "V"][0]
    speed = V * (1 + EPS * sp.sin(K * x))
    if with_input:
        speed = speed * (1 + mb.inputs[0])
    mb.add_nonholonomic(sp.cos(psi) * xd + sp.sin(psi) * yd - speed, name="speed", affine=affine)
    return mdl, mb, speed


@pytest.fixture(scope="module")
def setup():
    mdl, mb, speed = _model()
    cm = mb.compile(cache=False)
    # Appell's equations with the same velocity map (u_1 = speed), pseudo velocity γ̇
    x, y, psi, gam = mb.coordinates
    a, b = (p for p in mb.parameters if str(p) in ("a", "b"))
    L = a + b
    yaw = speed * sp.tan(gam) / L
    wg = sp.Symbol("gamma_d", real=True)
    xdot = [speed * sp.cos(psi) - b * yaw * sp.sin(psi), speed * sp.sin(psi) + b * yaw * sp.cos(psi),
            yaw, wg]
    ae = appell_equations(mb, xdot, [wg])
    return mb, cm, ae


def test_validation():
    _, mb, _ = _model(affine=False)
    with pytest.raises(ModelError, match="velocity-free term.*affine=True"):
        mb.validate()
    _, mb, _ = _model(with_input=True)
    mb.validate()    # inputs in b are accepted (tests/test_input_rates.py carries their terms)


def test_dof_of_table_1(setup):
    mb, cm, _ = setup
    assert (mb.dof, mb.first_order_odes) == (2.5, 5)
    assert (cm.dof, cm.first_order_odes) == (2.5, 5)
    assert cm.affine_names == ("speed",)


def test_kernels_b_and_velocity_jacobian(setup):
    """b(x) exact; ∂(D v + b)/∂x (the velocity term of Eq. (4.99)) equals central differences of
    D(x) v + b(x) (h = 1e-6, agreement 1e-8)."""
    _, cm, _ = setup
    rng = np.random.default_rng(3)
    x, v = rng.uniform(-1, 1, 4), rng.uniform(-1, 1, 4)
    V = cm.parameters["V"]
    assert np.allclose(cm.b(x), [0.0, 0.0, -V * (1 + EPS * math.sin(K * x[0]))], rtol=1e-14)
    h = 1e-6
    fd = np.column_stack([((cm.D(x + h * e) @ v + cm.b(x + h * e)) - (cm.D(x - h * e) @ v + cm.b(x - h * e)))
                          / (2 * h) for e in np.eye(4)])
    assert np.max(np.abs(cm.dDv_dx(x, v) - fd)) < 1e-8


def test_forward_dynamics_equals_appell(setup):
    """Newton–Euler with the affine constraint (index-1 DAE, Baumgarte) and Appell's equations
    from the same start: coordinates and γ̇ agree to 1e-8 over 2 s (tolerances 1e-11)."""
    mb, cm, ae = setup
    f = ae.rhs()
    u = lambda t: [0.0, 0.0, 20.0 * math.sin(2 * t)]  # noqa: E731
    s0 = np.array([0.0, 0.0, 0.1, 0.02, 0.3])
    xd0 = f(0.0, s0, u(0.0))[:4]
    assert np.max(np.abs(cm.D(s0[:4]) @ xd0 + cm.b(s0[:4]))) < 1e-12
    t = np.linspace(0, 2, 21)
    sim = forward_dynamics(cm, (0, 2.0), s0[:4], xd0, u=u, rtol=1e-11, atol=1e-12, t_eval=t)
    sol = solve_ivp(lambda tt, s: f(tt, s, u(tt)), (0, 2), s0, rtol=1e-11, atol=1e-12, t_eval=t)
    assert np.max(np.abs(sim.x - sol.y[:4].T)) < 1e-8
    assert np.max(np.abs(sim.xd[:, 3] - sol.y[4])) < 1e-8
    assert sim.max_velocity_drift < 1e-8          # |D ẋ + b|, not |D ẋ| (which is ~V)


def test_consistent_initial_conditions_and_residuals(setup):
    _, cm, _ = setup
    ic = consistent_initial_conditions(cm, [0.3, 0.0, 0.2, 0.05], [0.0, 0.0, 0.0, 0.1],
                                       independent=["gamma"])
    assert np.max(np.abs(cm.D(ic.x) @ ic.xd + cm.b(ic.x))) < 1e-12
    V = cm.parameters["V"]
    speed = V * (1 + EPS * math.sin(K * ic.x[0]))
    assert math.cos(ic.x[2]) * ic.xd[0] + math.sin(ic.x[2]) * ic.xd[1] == pytest.approx(speed, rel=1e-13)


def test_third_procedure_along_trajectory_matches_finite_differences(setup):
    """The exact A(t), B(t) of the third procedure (∂b/∂x enters through Eq. (4.99) and Q_d)
    agree with central differences of the nonlinear reduced ODE to 1e-6 relative at two times
    of a simulated (non-steady) motion; the reference passes its residual check (D ẋ + b)."""
    mb, cm, ae = setup
    f = ae.rhs()
    u = lambda t: [0.0, 0.0, 20.0 * math.sin(2 * t)]  # noqa: E731
    s0 = np.array([0.0, 0.0, 0.1, 0.02, 0.3])
    sim = forward_dynamics(cm, (0, 2.0), s0[:4], f(0.0, s0, u(0.0))[:4], u=u, rtol=1e-11,
                           atol=1e-12)
    ref = Reference.from_simulation(sim)
    assert ref.check(cm, np.linspace(0.1, 1.9, 7)).ok
    part = Partition.from_dict({"x_ai": ["gamma"], "x_ad": ["x", "y", "psi"]})
    for t in (0.5, 1.3):
        lin = linearize(cm, ref, part, t=t)
        fd = reduced_ode_jacobian_fd(cm, ref, part, t=t)
        assert lin.A.shape == (cm.first_order_odes, cm.first_order_odes)
        assert np.max(np.abs(lin.A - fd.J)) < 1e-6 * np.max(np.abs(lin.A))
        assert np.max(np.abs(lin.B - fd.B)) < 1e-6 * max(1.0, np.max(np.abs(lin.B)))
