"""Inputs in the nonholonomic constraints, ``B(x, u) ẋ + b(x, u) = 0``, and their rates.

Derivation: docs/theory/road_vehicles.md, "Inputs in the constraints". Checks:

* ``E = ∂(B ẋ + b)/∂u`` (kernel) against central differences of ``B(x, u) ẋ + b(x, u)``;
* (a) the torque-steered skate whose longitudinal speed is an *input*,
  ``cos ψ ẋ + sin ψ ẏ − u_V = 0`` (``b = −u_V``), and (b) the force-driven skate whose
  steering angle ``γ`` is an input entering ``B``: along simulated motions with ``u̇0 ≠ 0`` the
  third procedure (``A``, ``B`` with the constraint terms, the rate matrix ``B_rate``) against
  central differences of the nonlinear reduced ODE ``F(X, u, u̇)``, one point = stacked;
* a reference that ignores ``u̇0`` is refused (acceleration level ``D ẍ0 = Q_d − E u̇0``);
* (b) Newton–Euler with multipliers and ``E u̇`` against Appell's equations (whose velocity map
  carries ``γ̇`` as the declared rate input) with a time-varying steering angle;
* a zero-order-hold steering jump: velocities re-projected, constraints at round-off after it;
  the same for an open-loop steering step declared in ``breakpoints``;
* a pickled simulation evaluates with its input rates;
* the linearization with first-order states refuses inputs in the constraints;
* the state-space form of ``Ẋ = A X + B u + B_rate u̇`` (``X' = X − B_rate u``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from nhcontrol._util.errors import ReferenceMotionError, SolverError
from nhcontrol.linearization import LinearizationResult, index1_accelerations, linearize
from nhcontrol.linearization import reduced_ode_jacobian_fd
from nhcontrol.models import single_track as st
from nhcontrol.reference import Reference
from nhcontrol.simulate import forward_dynamics
from _helpers import require_c_backend


def _speed_input_model():
    """Torque-steered skate, speed prescribed by the input u_V (b = −u_V)."""
    mdl = st.build("force_torque")
    mb = mdl.system
    x, y, psi, gam = mb.coordinates
    xd, yd, _, _ = mb.velocities
    uV = mb.add_inputs("u_V")
    mb.add_nonholonomic(sp.cos(psi) * xd + sp.sin(psi) * yd - uV, name="speed", affine=True)
    return mb.compile()


def _u_a(t):
    return np.array([0.0, 0.0, 20.0 * math.sin(2 * t), 20.0 + 2.0 * math.sin(t)])


def _ud_a(t):
    return np.array([0.0, 0.0, 40.0 * math.cos(2 * t), 2.0 * math.cos(t)])


def _u_b(t):
    g = 0.05 * math.sin(1.5 * t)
    gd = 0.075 * math.cos(1.5 * t)
    return np.array([300.0 * math.sin(t), 100.0, g, gd])


def _ud_b(t):
    return np.array([300.0 * math.cos(t), 0.0, 0.075 * math.cos(1.5 * t),
                     -0.1125 * math.sin(1.5 * t)])


class _Path:
    """A simulated motion as the functions of a Reference (ẍ from Eq. (2.119) with E u̇)."""

    def __init__(self, cm, t, y, u, ud):
        self.cm, self.sol, self.u, self.ud, self.n = cm, y, u, ud, cm.n

    def x(self, t):
        return self.sol(t)[:self.n]

    def xd(self, t):
        return self.sol(t)[self.n:]

    def xdd(self, t):
        return index1_accelerations(self.cm, self.x(t), self.xd(t), self.u(t), None, self.ud(t))[0]


def _reference(cm, path, t_range, with_ud=True):
    return Reference.from_functions(cm, path.x, path.xd, path.xdd, u=path.u,
                                    ud=path.ud if with_ud else None, t_range=t_range,
                                    tol=1e-7)


@pytest.fixture(scope="module")
def case_a():
    cm = _speed_input_model()
    # consistent start: γ = 0.02, speed u_V(0), velocities from the velocity map
    a, b = cm.parameters["a"], cm.parameters["b"]
    g0, V0 = 0.02, _u_a(0.0)[3]
    yaw = V0 * math.tan(g0) / (a + b)
    x0, xd0 = np.array([0.0, 0.0, 0.0, g0]), np.array([V0, b * yaw, yaw, 0.0])
    sim = forward_dynamics(cm, (0.0, 2.0), x0, xd0, u=_u_a, ud=_ud_a, rtol=1e-11, atol=1e-11)
    assert np.max(sim.nonholonomic_drift) < 1e-8
    assert np.any(Reference.from_simulation(sim).ud(1.0))     # the rates travel with it
    path = _Path(cm, sim.t, lambda t: np.concatenate([sim.evaluate(t).x[0], sim.evaluate(t).xd[0]]),
                 _u_a, _ud_a)
    return cm, path


@pytest.fixture(scope="module")
def case_b():
    mdl = st.build("force")
    cm = mdl.system.compile()
    f = mdl.appell.rhs()
    sol = solve_ivp(lambda t, s: f(t, s, _u_b(t)), (0.0, 2.0), [0.0, 0.0, 0.1, 15.0], rtol=1e-11,
                    atol=1e-11, dense_output=True)
    n = 3

    def y(t):
        s = sol.sol(t)
        return np.concatenate([s[:n], f(t, s, _u_b(t))[:n]])

    return mdl, cm, _Path(cm, None, y, _u_b, _ud_b), sol


def test_E_kernel_is_the_input_derivative_of_the_velocity_constraints(case_a):
    """E = ∂(B ẋ + b)/∂u exactly: central differences of B(x, u) ẋ + b(x, u) agree to 1e-9."""
    cm, path = case_a
    x, xd, u = path.x(0.7), path.xd(0.7), _u_a(0.7)
    h = 1e-6

    def g(uu):
        return np.asarray(cm.D(x, uu)) @ xd + np.asarray(cm.b(x, uu))

    E_fd = np.array([(g(u + h * e) - g(u - h * e)) / (2 * h) for e in np.eye(4)]).T
    np.testing.assert_allclose(cm.E(x, xd, u), E_fd, atol=1e-9 * np.abs(E_fd).max())
    assert cm.constraint_inputs == ("u_V",)


@pytest.mark.parametrize("which", ["a", "b"])
def test_third_procedure_with_input_rates_vs_central_differences(which, case_a, case_b):
    """A, B (constraint terms included) and B_rate at a reference with u̇0 ≠ 0 against central
    differences (h = 1e-6) of the reduced ODE F(X, u, u̇) (index-1 DAE with Q_d − E u̇): agreement
    to 1e-6 relative (measured ~1e-9); one point equals the stacked path to 1e-14."""
    if which == "a":
        cm, path = case_a
    else:
        _, cm, path, _ = case_b
    ref = _reference(cm, path, (0.0, 2.0))
    ts = [0.6, 1.7]
    stacked = linearize(cm, ref, None, t=ts)
    for i, t in enumerate(ts):
        res = linearize(cm, ref, stacked.partition, t=t)
        assert np.any(ref.ud(t))
        fd = reduced_ode_jacobian_fd(cm, ref, stacked.partition, t=t)
        for name, ex, num in (("A", res.A, fd.J), ("B", res.B, fd.B), ("B_rate", res.B_rate, fd.B_rate)):
            scale = max(1.0, np.abs(num).max())
            err = np.abs(ex - num).max() / scale
            print(f"{which} t={t} {name}: {err:.2e}")
            assert err <= 1e-6, (which, t, name, err)
        assert np.abs(res.B_rate).max() > 1e-3          # the rates do act
        for ex, st_ in ((res.A, stacked.A[i]), (res.B, stacked.B[i]), (res.B_rate, stacked.B_rate[i])):
            assert np.abs(ex - st_).max() <= 1e-14 * max(1.0, np.abs(ex).max())


def test_reference_without_input_rates_is_refused(case_a):
    """The same motion with u̇0 omitted violates D ẍ0 = Q_d − E u̇0: refused, constraint named."""
    cm, path = case_a
    with pytest.raises(ReferenceMotionError, match=r"(?s)acceleration.*'speed'.*ud="):
        _reference(cm, path, (0.0, 2.0), with_ud=False)


def test_newton_euler_with_input_rates_equals_appell(case_b):
    """Force skate, γ(t) = 0.05 sin 1.5t assigned: Appell's ẇ (rate input γ̇ in the velocity
    map) equals Newton–Euler with multipliers and E u̇ at 20 points to 1e-10."""
    mdl, cm, _, sol = case_b
    f = mdl.appell.rhs()
    worst = 0.0
    for t in np.linspace(0.0, 2.0, 20):
        s = sol.sol(t)
        ne = st.newton_euler_wdot(mdl, cm, s, _u_b(t), t, ud=_ud_b(t))
        worst = max(worst, float(np.max(np.abs(f(t, s, _u_b(t))[3:] - ne))))
    print(f"Appell vs Newton-Euler: {worst:.2e}")
    assert worst < 1e-10
    # without the rate term they differ by the steering-rate term of the force skate equation
    s = sol.sol(0.3)
    assert np.max(np.abs(f(0.3, s, _u_b(0.3))[3:] - st.newton_euler_wdot(mdl, cm, s, _u_b(0.3)))) > 1e-3


def test_zero_order_hold_steering_jump_reprojects_velocities():
    """A held steering angle that jumps at t = 0.1 and 0.2: after each jump the velocities lie on
    the new constraint manifold (residual at round-off, not Baumgarte-decaying)."""
    cm = st.build("force").system.compile()
    a, b = cm.parameters["a"], cm.parameters["b"]
    v = 15.0
    x0, xd0 = np.zeros(3), np.array([v, 0.0, 0.0])
    steer = {0: 0.0, 1: 0.05, 2: -0.03}

    def ctrl(t, x, xd):
        return np.array([0.0, 0.0, steer[min(int(round(t / 0.1)), 2)], 0.0])

    res = forward_dynamics(cm, (0.0, 0.3), x0, xd0, controller=ctrl, sample_time=0.1,
                           rtol=1e-11, atol=1e-11)
    assert np.max(res.nonholonomic_drift) < 1e-10
    # the jump itself: ψ̇ = v₁ tan γ / L right after it (kinetic-energy projection keeps v₁
    # up to the steering impulse)
    i = int(np.searchsorted(res.t, 0.1))
    assert abs(res.t[i] - 0.1) < 1e-12
    vel = res.xd[i]
    v1 = vel[0] * math.cos(res.x[i, 2]) + vel[1] * math.sin(res.x[i, 2])
    assert abs(vel[2] - v1 * math.tan(0.05) / (a + b)) < 1e-10


def _steer_step_ge(t):
    """Open-loop steering step γ: 0 → 0.05 at t = 0.1 (right-continuous), drive force 50 N."""
    return np.array([50.0, 0.0, 0.05 if t >= 0.1 else 0.0, 0.0])


def _steer_step_gt(t):
    """The same step, left-continuous at t = 0.1."""
    return np.array([50.0, 0.0, 0.05 if t > 0.1 else 0.0, 0.0])


@pytest.fixture(scope="module")
def force_model():
    return st.build("force").system.compile()


@pytest.mark.parametrize("u", [_steer_step_ge, _steer_step_gt])
def test_open_loop_steering_step_at_a_breakpoint_reprojects_velocities(force_model, u):
    """An open-loop steering step declared in ``breakpoints``: the integration stops at it,
    the velocities are projected onto the new constraints, and |B ẋ| stays at round-off
    (<= 1e-10, integration tolerance 1e-11) right after the jump and later, whichever side
    u(0.1) takes; the sample at t = 0.1 is the one after the jump (ψ̇ = v₁ tan γ / L)."""
    cm = force_model
    L = cm.parameters["a"] + cm.parameters["b"]
    x0, xd0 = np.zeros(3), np.array([15.0, 0.0, 0.0])
    res = forward_dynamics(cm, (0.0, 0.3), x0, xd0, u=u, breakpoints=[0.1, 7.0], rtol=1e-11,
                           atol=1e-11)
    i = int(np.searchsorted(res.t, 0.1))
    assert res.t[i] == 0.1 and res.t[i + 1] > 0.1           # one sample at the jump
    assert res.u[i, 2] == 0.05 and res.u[i - 1, 2] == 0.0
    assert res.nonholonomic_drift[i] <= 1e-10
    assert res.max_nonholonomic_drift <= 1e-10
    vel = res.xd[i]
    v1 = vel[0] * math.cos(res.x[i, 2]) + vel[1] * math.sin(res.x[i, 2])
    assert abs(vel[2] - v1 * math.tan(0.05) / L) < 1e-10
    np.testing.assert_array_equal(res.evaluate(0.1).xd[0], res.xd[i])


def test_open_loop_step_without_breakpoints_is_refused(force_model):
    """Without ``breakpoints`` nothing would re-project at the jump (|B ẋ| of the order of v·Δγ
    right after it, pulled back only by Baumgarte stabilisation): an input in the constraints that
    changes inside an interval without rates is refused, naming it and the fix."""
    with pytest.raises(SolverError, match=r"(?s)\['gamma'\] enter the nonholonomic constraints.*"
                                          r"no input rates ud were given.*breakpoints="):
        forward_dynamics(force_model, (0.0, 0.15), np.zeros(3), np.array([15.0, 0.0, 0.0]),
                         u=_steer_step_ge, rtol=1e-11, atol=1e-11)


def test_breakpoints_are_finite_jump_times_of_open_loop_inputs(force_model):
    args = (force_model, (0.0, 0.2), np.zeros(3), np.array([15.0, 0.0, 0.0]))
    with pytest.raises(SolverError, match="breakpoints are the jump times of open-loop inputs"):
        forward_dynamics(*args, controller=lambda t, x, xd: np.zeros(4), sample_time=0.1,
                         breakpoints=[0.1])
    with pytest.raises(SolverError, match=r"breakpoints must be finite times .* got \[0.1, nan\]"):
        forward_dynamics(*args, u=_steer_step_ge, breakpoints=[0.1, np.nan])


def test_pickled_simulation_evaluates_with_its_input_rates(case_b):
    """``evaluate()`` of an unpickled result equals the original bit for bit (its ẍ, Λ use the
    input rates u̇(t), which travel with it; with u̇ = 0 they would differ); input rates that
    cannot be pickled drop the dense output, and evaluate() says why."""
    import pickle

    _, cm, path, _ = case_b
    y0 = path.sol(0.0)
    sim = forward_dynamics(cm, (0.0, 0.5), y0[:3], y0[3:], u=_u_b, ud=_ud_b, breakpoints=[0.25])
    t = np.linspace(0.0, 0.5, 7)
    back = pickle.loads(pickle.dumps(sim))
    one, two = sim.evaluate(t), back.evaluate(t)
    for f in ("x", "xd", "xdd", "lam", "u"):
        np.testing.assert_array_equal(getattr(two, f), getattr(one, f))
    still = sim._dynamics.stacked(one.x, one.xd, one.u)          # the same with u̇ = 0
    assert np.max(np.abs(still["xdd"] - one.xdd)) > 1e-3
    local = forward_dynamics(cm, (0.0, 0.1), y0[:3], y0[3:], u=_u_b, ud=lambda t: _ud_b(t))
    with pytest.raises(SolverError, match=r"input rates.*cannot be pickled"):
        pickle.loads(pickle.dumps(local)).evaluate(0.05)


@pytest.mark.parametrize("which", ["with_first_order_states", "first_order_system"])
def test_first_order_linearization_refuses_inputs_in_the_constraints(which, force_model):
    """Both linearizations with first-order states refuse a model whose inputs enter its
    nonholonomic constraints before reading the reference: the message names those inputs and
    says what to use instead."""
    from nhcontrol._util.errors import LinearSystemError
    from nhcontrol.linearization import linearize_first_order_system, linearize_with_first_order_states

    cm = force_model
    part = {"independent": ["x"], "admissible_dependent": ["y", "psi"]}
    match = (r"the inputs \['gamma'\] of model .* enter its nonholonomic constraints.*does not "
             r"carry.*B_rate.*Use nhcontrol\.linearize for the mechanical part.*or make those "
             r"inputs coordinates")
    with pytest.raises(LinearSystemError, match=match):
        if which == "with_first_order_states":
            z = list(cm.inputs)
            linearize_with_first_order_states(
                cm, None, part, H_x=np.zeros((4, 3)), H_xd=np.zeros((4, 3)), H_z=np.zeros((4, 4)),
                H_w=np.zeros((4, 0)), W_w=np.zeros((0, 0)), W_r=np.zeros((0, 0)), z_names=z,
                w_names=[], r_names=[])
        else:
            linearize_first_order_system(cm, None, None, part)


def test_statespace_with_input_rate_matrix():
    """Ẋ = A X + B u + B₁ u̇ → X' = X − B₁ u: Ẋ' = A X' + (A B₁ + B) u, y = X' + B₁ u; the step
    response of the state space equals the solution of the original equations (X jumps by B₁ at
    the step)."""
    A = np.array([[0.0, 1.0], [-2.0, -0.3]])
    B = np.array([[0.0], [1.0]])
    B1 = np.array([[0.0], [0.5]])
    res = LinearizationResult(A=A, B=B, B_rate=B1, states=("q", "q_d"), inputs=("g",),
                              partition=None, n_spurious=0, t=0.0, steady=True, n_independent=1)
    ss = res.to_statespace()
    np.testing.assert_allclose(ss.B, A @ B1 + B)
    np.testing.assert_allclose(ss.D, B1)
    assert ss.state_labels == ["q", "q_d_shift"] and ss.input_labels == ["g"]
    # unit step at t = 0+: X(0+) = B1, then Ẋ = A X + B
    t = np.linspace(0.0, 3.0, 31)
    from scipy.linalg import expm
    X = np.array([expm(A * ti) @ B1[:, 0] + np.linalg.solve(A, (expm(A * ti) - np.eye(2)) @ B[:, 0])
                  for ti in t])
    import control
    y = control.forced_response(ss, t, np.ones_like(t)).outputs.T
    np.testing.assert_allclose(y[1:], X[1:], atol=1e-9)


def test_forward_dynamics_with_input_rates_follows_appell(case_b):
    """The same motion integrated both ways (γ(t) assigned, rates given to forward_dynamics):
    Newton–Euler (index-1 DAE with E u̇, Baumgarte) and Appell agree to 1e-8 over 2 s
    (integration tolerance 1e-11; the formulations themselves agree to round-off, above)."""
    mdl, cm, path, sol = case_b
    y0 = path.sol(0.0)
    sim = forward_dynamics(cm, (0.0, 2.0), y0[:3], y0[3:], u=_u_b, ud=_ud_b, rtol=1e-11,
                           atol=1e-11, t_eval=np.linspace(0.0, 2.0, 11))
    X = np.array([path.x(t) for t in sim.t])
    XD = np.array([path.xd(t) for t in sim.t])
    worst = max(np.abs(sim.x - X).max(), np.abs(sim.xd - XD).max())
    print(f"trajectory NE vs Appell: {worst:.2e}")
    assert worst < 1e-8


def test_input_rate_kernels_python_equal_c(case_b):
    """The generated Python and C kernels of input_rate_terms agree bit for bit."""
    mdl, cm, path, _ = case_b
    from nhcontrol.compiled import compile_system
    py = compile_system(mdl.system, backend="python")
    require_c_backend(cm.backend)
    x, xd, u, ud = path.x(0.4), path.xd(0.4), _u_b(0.4), _ud_b(0.4)
    lam = np.array([3.0, -2.0])
    for one, two in ((cm.input_rate_terms(x, xd, ud, lam, u), py.input_rate_terms(x, xd, ud, lam, u)),
                     (cm.input_rate_terms(np.stack([x, x]), xd, ud, lam, u),
                      py.input_rate_terms(np.stack([x, x]), xd, ud, lam, u))):
        for f in ("E", "dEw_dx", "dEw_dxd", "dEw_du", "dDTlam_du"):
            np.testing.assert_array_equal(getattr(one, f), getattr(two, f))


def test_ltv_route_refuses_or_makes_rate_inputs_states(case_b):
    """LTVSystem.from_linearization drops nothing: a model with inputs in its constraints is
    refused unless input_states=True, which gives states [X; γ] and inputs [F_R, F_F,
    gamma_rate, gamma_dot]: A_aug = [[A, B_γ], [0, 0]], B_aug = [[B_o, B_rate,γ], [0, 1]]."""
    from nhcontrol._util.errors import LinearSystemError
    from nhcontrol.systems import LTVSystem

    _, cm, path, _ = case_b
    ref = _reference(cm, path, (0.0, 2.0))
    with pytest.raises(LinearSystemError, match="input_states=True"):
        LTVSystem.from_linearization(cm, ref)
    ltv = LTVSystem.from_linearization(cm, ref, input_states=True)
    res = linearize(cm, ref, None, t=0.9)
    ns = res.A.shape[0]
    assert ltv.states == res.states + ("gamma",)
    assert ltv.inputs == ("F_R", "F_F", "gamma_rate", "gamma_dot")
    A, B = np.asarray(ltv.A(0.9)), np.asarray(ltv.B(0.9))
    j = res.inputs.index("gamma")
    np.testing.assert_array_equal(A[:ns, :ns], res.A)
    np.testing.assert_array_equal(A[:ns, ns], res.B[:, j])
    np.testing.assert_array_equal(B[:ns, -1], res.B_rate[:, j])
    assert B[ns, -1] == 1.0 and not np.any(A[ns:])


def test_reference_carries_the_jump_times(force_model, tmp_path):
    """A Reference of a run with an open-loop steering step keeps its breakpoints: re-simulated
    with forward_dynamics(u=ref) it integrates across the same jump (re-projection; |B ẋ| <= 1e-10
    and the states of the first run to 1e-8), u_limits gives both sides of the jump. A zero-order
    hold gives the instants where the held input changes; from_samples with a held input the
    sample times where it changes; from_functions takes them (inside t_range)."""
    cm = force_model
    x0, xd0 = np.zeros(3), np.array([15.0, 0.0, 0.0])
    tol = dict(rtol=1e-11, atol=1e-11)
    res = forward_dynamics(cm, (0.0, 0.3), x0, xd0, u=_steer_step_ge, breakpoints=[0.1], **tol)
    assert res.breakpoints == (0.1,)
    ref = Reference.from_simulation(res)
    assert ref.breakpoints == (0.1,)
    before, after = ref.u_limits(0.1)
    assert before[2] == 0.0 and after[2] == 0.05 and np.array_equal(*ref.u_limits(0.2))
    again = forward_dynamics(cm, (0.0, 0.3), x0, xd0, u=ref, t_eval=res.t, **tol)
    assert again.breakpoints == (0.1,) and again.max_nonholonomic_drift <= 1e-10
    assert np.max(np.abs(again.x - res.x)) < 1e-8
    with pytest.raises(SolverError, match=r"(?s)\['gamma'\] enter the nonholonomic.*breakpoints="):
        forward_dynamics(cm, (0.0, 0.15), x0, xd0, u=ref, breakpoints=[], **tol)   # would smear the jump

    steer = [0.0, 0.05, 0.05]
    held = forward_dynamics(cm, (0.0, 0.3), x0, xd0, sample_time=0.1, **tol,
                            controller=lambda t, x, xd: np.array(
                                [50.0, 0.0, steer[min(int(round(t / 0.1)), 2)], 0.0]))
    assert held.breakpoints == () and Reference.from_simulation(held).breakpoints == (0.1,)
    t = np.array([0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3])
    smp = Reference.from_samples(cm, t, res.evaluate(t).x, res.evaluate(t).xd,
                                 u=[_steer_step_ge(s) for s in t], u_interpolation="previous",
                                 check=False)
    assert smp.breakpoints == (0.1,)
    fn = Reference.from_functions(cm, smp.x, smp.xd, smp.xdd, smp.u, t_range=(0.0, 0.3),
                                  breakpoints=[0.2, 0.1, 0.1], check=False)
    assert fn.breakpoints == (0.1, 0.2)
    straight = Reference.from_functions(cm, lambda t: [15.0 * t, 0.0, 0.0], [15.0, 0.0, 0.0],
                                        np.zeros(3), np.zeros(4), t_range=(0.0, 0.3),
                                        breakpoints=[0.1])
    straight.save(tmp_path / "ref.npz", ts=np.linspace(0.0, 0.3, 31))
    assert Reference.load(tmp_path / "ref.npz", cm).breakpoints == (0.1,)
    from nhcontrol.simulate import SimulationResult
    res.save(tmp_path / "run.npz")
    assert SimulationResult.load(tmp_path / "run.npz").breakpoints == (0.1,)
    with pytest.raises(ReferenceMotionError, match=r"breakpoints must lie in t_range = \[0, 0\.3\].*\[0\.5\]"):
        Reference.from_functions(cm, smp.x, smp.xd, smp.xdd, smp.u, t_range=(0.0, 0.3),
                                 breakpoints=[0.5], check=False)
