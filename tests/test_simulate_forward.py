"""Forward dynamics of the index-1 DAE with Baumgarte stabilisation, Eq. (2.119)."""

from __future__ import annotations


import control
import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import PartitionError, SolverError
from nhcontrol.simulate import (consistent_initial_conditions, forward_dynamics, simulate_discrete,
                                simulate_ltv)
from test_simulate_toy_models import ToyModel, cart, cart_pendulum, pendulum, sleigh

M_P, G, L = 1.5, 9.81, 0.8


def pendulum_energy(res):
    return 0.5 * M_P * np.sum(res.xd**2, axis=1) + M_P * G * res.x[:, 1]


def test_pendulum_conserves_energy_and_stays_on_manifold():
    """Conservative pendulum over 5 s (≈ 3 periods), DOP853 rtol 1e-10 / atol 1e-12:
    energy constant to 1e-8 relative, |C| and |D ẋ| below 1e-8, the tension positive."""
    cm = pendulum()
    phi0 = 1.0
    res = forward_dynamics(cm, (0.0, 5.0), [L * np.sin(phi0), -L * np.cos(phi0)], [0.0, 0.0])
    E = pendulum_energy(res)
    assert np.ptp(E) < 1e-8 * abs(E[0])
    assert res.max_holonomic_drift < 1e-8 and res.max_velocity_drift < 1e-8
    assert res.max_nonholonomic_drift == 0.0        # l = 0
    # the amplitude is kept: max X equals L sin(phi0)
    assert np.max(res.x[:, 0]) == pytest.approx(L * np.sin(phi0), abs=1e-6)
    # multiplier = tension / L = m (L φ̇² + g cos φ) / L
    T = M_P * (np.sum(res.xd**2, 1) / L - G * res.x[:, 1] / L)
    np.testing.assert_allclose(res.lam[:, 0], T / L, rtol=1e-8)
    assert res.x.shape == (res.t.size, 2) and not res.x.flags.writeable


def test_compiled_chaplygin_sleigh_conserves_energy():
    """Compiled Chaplygin sleigh (models.sleigh, a = -0.2): kinetic energy conserved to 1e-9
    relative, |B ẋ| < 1e-8 over 10 s, and the yaw rate decays (a v < 0 is stable)."""
    sl = pytest.importorskip("nhcontrol.models.sleigh")
    cm = sl.model()
    pv = dict(cm.parameters)
    # consistent start: speed 1 along the blade plus a yaw rate, y_d from the constraint
    ic = consistent_initial_conditions(cm, [0, 0, 0], [1.0, 0.0, 0.5], independent=["x", "psi"])
    res = forward_dynamics(cm, (0.0, 10.0), ic.x, ic.xd)
    Ek = 0.5 * pv["m"] * (res.xd[:, 0]**2 + res.xd[:, 1]**2) + 0.5 * pv["I_zz"] * res.xd[:, 2]**2
    assert np.ptp(Ek) < 1e-9 * Ek[0]
    assert res.max_nonholonomic_drift < 1e-8
    assert abs(res.xd[-1, 2]) < 0.1 * abs(res.xd[0, 2])


def test_baumgarte_holonomic_drift_follows_the_stabilised_ode():
    """Start off the manifold, C(x0) = 2e-3, Ċ0 = 0. The stabilised equations impose
    C̈ + 2α Ċ + β² C = 0 exactly, so with α = β = 5: C(t) = C0 (1 + α t) e^{-α t}.
    Agreement to 1e-10 absolute (integration tolerance); with (0, 0) C does not decay."""
    cm = pendulum()
    r0 = np.sqrt(L**2 + 2 * 2e-3)
    x0 = [r0 * np.sin(0.4), -r0 * np.cos(0.4)]
    with pytest.warns(UserWarning, match=r"violate the constraints: max \|C\(x0\)\| = 0.002"):
        res = forward_dynamics(cm, (0.0, 3.0), x0, [0.0, 0.0], baumgarte=(5.0, 5.0),
                               t_eval=np.linspace(0, 3, 61))
    C = (np.sum(res.x**2, 1) - L**2) / 2
    np.testing.assert_allclose(C, 2e-3 * (1 + 5 * res.t) * np.exp(-5 * res.t), atol=1e-10)
    assert res.holonomic_drift[-1] < 1e-8
    with pytest.warns(UserWarning, match="consistent_initial_conditions"):
        plain = forward_dynamics(cm, (0.0, 3.0), x0, [0.0, 0.0], baumgarte=(0.0, 0.0))
    assert plain.holonomic_drift[-1] == pytest.approx(2e-3, rel=1e-6)


def test_baumgarte_nonholonomic_drift_decays_exponentially():
    """Sleigh (a = 0) started with a side slip B ẋ0 = ε: d(Bẋ)/dt = -2α Bẋ, so
    B ẋ(t) = ε e^{-2α t}. α = 2: agreement to 1e-9 absolute (rtol 1e-10 on velocities ~1)."""
    cm = sleigh()
    eps = 1e-3
    with pytest.warns(UserWarning, match=r"max \|D\(x0\) xd0\| = 0.001"):
        res = forward_dynamics(cm, (0.0, 2.0), [0, 0, 0], [1.0, eps, 0.3],
                               baumgarte=(2.0, 2.0), t_eval=np.linspace(0, 2, 41))
    th = res.x[:, 2]
    Bxd = -np.sin(th) * res.xd[:, 0] + np.cos(th) * res.xd[:, 1]
    np.testing.assert_allclose(Bxd, eps * np.exp(-4.0 * res.t), atol=1e-9)
    np.testing.assert_allclose(res.nonholonomic_drift, np.abs(Bxd), atol=1e-15)


def test_consistent_initial_conditions_pendulum_and_cart_pendulum():
    """Newton on C = 0 for the dependent coordinate keeps the independent ones; D ẋ = 0."""
    cm = pendulum()
    ic = consistent_initial_conditions(cm, [0.3, -0.9], [1.0, 5.0], independent=["X"])
    assert ic.x[0] == 0.3 and ic.xd[0] == 1.0
    assert ic.x[1] == pytest.approx(-np.sqrt(L**2 - 0.09), abs=1e-14)
    assert ic.holonomic_residual < 1e-12 and ic.velocity_residual < 1e-12
    assert ic.dependent_positions == ("Y",) and ic.dependent_velocities == ("Y",)
    x0, xd0 = ic                                     # unpacks
    assert x0 is ic.x
    cp = cart_pendulum()
    ic2 = consistent_initial_conditions(cp, [0.1, 0.5, -0.2], [0.2, 0.0, 0.0],
                                        independent=["s", "X"], dependent=["Y"])
    assert abs(cp.C(ic2.x)[0]) < 1e-12 and np.max(np.abs(cp.D(ic2.x) @ ic2.xd)) < 1e-12
    assert 1 <= ic2.iterations <= 10


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(independent=["X", "Y"]), PartitionError, r"n - m - l = 2 - 1 - 0 = 1 coordinates, got 2"),
    (dict(independent=["Z"]), PartitionError, r"unknown: \['Z'\]"),
    (dict(independent=["X"], dependent=["X"]), PartitionError, r"also independent: \['X'\]"),
    (dict(independent=["X"], x_guess=[0.9, 0.0]), PartitionError, r"∂C/∂x_d is singular .*cond = inf"),
    (dict(independent=["X"], x_guess=[0.8, 0.0]), PartitionError, r"D_dd \(Eq. \(2.131\)\) is singular"),
    (dict(independent=["X"], x_guess=[0.2, -40.0], max_iter=2), SolverError, r"did not converge in 2"),
])
def test_consistent_initial_conditions_errors(kwargs, exc, match):
    cm = pendulum()
    xg = kwargs.pop("x_guess", [0.3, -0.9])
    with pytest.raises(exc, match=match):
        consistent_initial_conditions(cm, xg, [0.0, 0.0], **kwargs)


def test_zoh_closed_loop_matches_exact_discrete_solution():
    """Cart (Ẍ = F/m) under u_k = -K [X_k, Ẋ_k] with zero-order hold h = 0.1 s: at the
    sampling instants the nonlinear simulation equals the exact discretization
    Ad = [[1, h], [0, 1]], Bd = [h²/2m, h/m] (to 1e-10; integration tolerance)."""
    cm = cart()
    m, h, K = 2.0, 0.1, np.array([2.0, 1.5])
    res = forward_dynamics(cm, (0.0, 3.0), [1.0, 0.0], [0.5, 0.0], sample_time=h,
                           controller=lambda t, x, xd: [-K @ [x[0], xd[0]]])
    assert res.control_times.size == 30
    Ad = np.array([[1, h], [0, 1]])
    Bd = np.array([[h**2 / (2 * m)], [h / m]])

    class DLTI:      # DiscreteLTV-like duck
        pass
    d = DLTI()
    d.Ad, d.Bd, d.dt, d.t0 = np.broadcast_to(Ad, (30, 2, 2)), np.broadcast_to(Bd, (30, 2, 1)), h, 0.0
    lin = simulate_discrete(d, [1.0, 0.5], controller=lambda t, z: -K @ z)
    sim = res.evaluate(lin.t)
    np.testing.assert_allclose(sim.x[:, 0], lin.x[:, 0], atol=1e-10)
    np.testing.assert_allclose(sim.xd[:, 0], lin.x[:, 1], atol=1e-10)
    np.testing.assert_allclose(res.control_inputs[:, 0], lin.u[:-1, 0], atol=1e-10)
    # the input is held: constant between two instants, jumps at them
    u_mid = res.evaluate(np.array([0.51, 0.55, 0.59])).u[:, 0]
    assert np.ptp(u_mid) == 0.0 and u_mid[0] == res.control_inputs[5, 0]


def test_continuous_feedback_matches_linear_simulation():
    """Cart with continuous u = -k1 X - k2 Ẋ equals simulate_ltv of the closed loop (1e-9)."""
    cm = cart()
    k1, k2, m = 3.0, 1.0, 2.0
    te = np.linspace(0, 4, 41)
    res = forward_dynamics(cm, (0.0, 4.0), [1.0, 0.0], [0.0, 0.0], t_eval=te,
                           controller=lambda t, x, xd: [-k1 * x[0] - k2 * xd[0]])
    sys = control.ss([[0, 1], [0, 0]], [[0], [1 / m]], np.eye(2), 0)
    lin = simulate_ltv(sys, (0.0, 4.0), [1.0, 0.0], controller=lambda t, z: [-k1 * z[0] - k2 * z[1]],
                       t_eval=te)
    np.testing.assert_allclose(res.x[:, 0], lin.x[:, 0], atol=1e-9)
    np.testing.assert_allclose(res.u[:, 0], lin.u[:, 0], atol=1e-8)


def test_t_eval_and_dense_evaluation_agree():
    cm = pendulum()
    x0 = [L * np.sin(0.5), -L * np.cos(0.5)]
    te = np.linspace(0, 1, 11)
    a = forward_dynamics(cm, (0.0, 1.0), x0, [0, 0], t_eval=te)
    b = forward_dynamics(cm, (0.0, 1.0), x0, [0, 0])
    np.testing.assert_array_equal(a.t, te)
    np.testing.assert_allclose(a.x, b.evaluate(te).x, atol=1e-12)
    np.testing.assert_allclose(a.lam, b.evaluate(te).lam, atol=1e-9)


def test_terminal_event_stops_at_the_lowest_point():
    """Released at φ0, the bob reaches X = 0 after a quarter period; a terminal event stops."""
    cm = pendulum()

    def bottom(t, x, xd):
        return x[0]
    bottom.terminal = True
    bottom.direction = -1
    res = forward_dynamics(cm, (0.0, 5.0), [L * np.sin(0.3), -L * np.cos(0.3)], [0, 0],
                           events=bottom)
    assert res.status == 1 and "terminal event" in res.message
    assert res.t_events[0].size == 1 and res.t[-1] == pytest.approx(res.t_events[0][0])
    assert abs(res.x[-1, 0]) < 1e-9
    # small-amplitude quarter period ≈ (π/2) sqrt(L/g) (amplitude 0.3 rad: +0.6 %)
    assert res.t[-1] == pytest.approx(np.pi / 2 * np.sqrt(L / G), rel=0.01)


def test_to_response_named_signals():
    cm = cart()
    res = forward_dynamics(cm, (0.0, 1.0), [0.0, 0.0], [0.0, 0.0], u=[1.0],
                           t_eval=np.linspace(0, 1, 5))
    resp = res.to_response()
    assert isinstance(resp, control.TimeResponseData)
    assert resp.state_labels == ["X", "Y", "X_d", "Y_d"] and resp.input_labels == ["F"]
    assert resp.states.shape == (4, 5) and resp.outputs.shape == (4, 5)
    assert resp.inputs.shape == (1, 5) and resp.output_labels == resp.state_labels
    np.testing.assert_allclose(resp.states[0], 0.5 * (1 / 2.0) * res.t**2, atol=1e-12)   # X = F t²/2m
    # a model without inputs: states only
    r0 = forward_dynamics(pendulum(), (0.0, 0.5), [0.0, -L], [0.1, 0.0]).to_response()
    assert r0.ninputs == 0 and r0.state_labels == ["X", "Y", "X_d", "Y_d"]


def test_open_loop_inputs_callable_and_reference():
    """u(t) as a callable and as a Reference's u give the same trajectory."""
    from nhcontrol.reference import Reference
    cm = cart()
    ref = Reference.from_functions(cm, lambda t: [np.sin(t) * 0.5, 0.0],
                                   lambda t: [np.cos(t) * 0.5, 0.0], lambda t: [-np.sin(t) * 0.5, 0.0],
                                   u=lambda t: [-np.sin(t)])      # F = m Ẍ = -sin t
    a = forward_dynamics(cm, (0.0, 2.0), [0, 0], [0.5, 0], u=ref, t_eval=[0.5, 1.0, 2.0])
    b = forward_dynamics(cm, (0.0, 2.0), [0, 0], [0.5, 0], u=lambda t: [-np.sin(t)],
                         t_eval=[0.5, 1.0, 2.0])
    np.testing.assert_allclose(a.x, b.x, atol=0)
    np.testing.assert_allclose(a.x[:, 0], 0.5 * np.sin([0.5, 1.0, 2.0]), atol=1e-10)


def test_redundant_constraints_are_named():
    X, Y = sp.symbols("X Y")
    m, g = sp.symbols("m g")
    cm = ToyModel("twice", [X, Y], sp.diag(m, m), [0, -m * g], [Y, 2 * Y], None, {m: 1.0, g: 9.81})
    with pytest.raises(SolverError, match=r"singular at t = 0 .*redundant constraints: \['hol[01]'\]"):
        forward_dynamics(cm, (0.0, 1.0), [0.0, 0.0], [1.0, 0.0])


def test_singular_mass_on_admissible_motion_is_reported():
    X, Y = sp.symbols("X Y")
    m = sp.symbols("m")
    cm = ToyModel("massless_x", [X, Y], sp.diag(0, m), [0, 0], [Y], None, {m: 1.0})
    with pytest.raises(SolverError, match=r"mass matrix is singular on the admissible motions"):
        forward_dynamics(cm, (0.0, 1.0), [0.0, 0.0], [1.0, 0.0])


@pytest.mark.parametrize("kwargs, match", [
    (dict(t_span=(1.0, 0.0)), r"t_span must be \(t0, tf\) with tf > t0"),
    (dict(baumgarte=(-1.0, 1.0)), r"Baumgarte constants .* >= 0"),
    (dict(baumgarte=3.0), r"baumgarte must be a pair"),
    (dict(method="Euler"), r"method must be one of"),
    (dict(u=[1.0], controller=lambda t, x, xd: [0.0]), r"either open-loop inputs u or a controller"),
    (dict(sample_time=0.1), r"pass controller=\.\.\. as well"),
    (dict(controller=lambda t, x, xd: [0.0, 1.0], sample_time=0.1), r"must return 1 finite inputs"),
    (dict(controller=lambda t, x, xd: [0.0], sample_time=0.0), r"sample_time must be a positive"),
    (dict(t_eval=[0.0, 2.0]), r"t_eval must be non-empty, sorted and inside t_span"),
    (dict(u=[1.0, 2.0]), r"u \(inputs\) must have 1 entries \['F'\]"),
    (dict(x0=[0.0, 0.0, 0.0]), r"x0 \(initial coordinates\) must have shape"),
])
def test_forward_dynamics_errors(kwargs, match):
    cm = cart()
    args = dict(t_span=(0.0, 1.0), x0=[0.0, 0.0], xd0=[0.0, 0.0])
    args.update(kwargs)
    t_span, x0, xd0 = args.pop("t_span"), args.pop("x0"), args.pop("xd0")
    with pytest.raises(SolverError, match=match):
        forward_dynamics(cm, t_span, x0, xd0, **args)


def test_bicycle_lean_perturbation_stays_on_manifold():
    """Compiled benchmark bicycle (n = 11, m = l = 4) at 5 m/s with 0.05 rad lean: 3 s of
    simulation stay on the manifold (|C|, |D ẋ| < 1e-8) and the lean decays (self-stable)."""
    bb = pytest.importorskip("nhcontrol.models.benchmark_bicycle")
    cm = bb.model()
    x, xd, _ = bb.steady_forward_state(5.0, 0.0, dict(cm.parameters))
    x = x.copy()
    x[4] = 0.05
    ic = consistent_initial_conditions(cm, x, xd, independent=bb.PARTITION_4_172["independent"],
                                       dependent=bb.PARTITION_4_172["dependent"])
    res = forward_dynamics(cm, (0.0, 3.0), ic.x, ic.xd)
    assert res.max_holonomic_drift < 1e-8 and res.max_velocity_drift < 1e-8
    assert np.max(np.abs(res.x[res.t > 2.0, 4])) < 0.05


@pytest.mark.parametrize("tf, count", [(0.3, 3), (0.25, 3), (0.05, 1)])
def test_zoh_interval_count(tf, count):
    """0.3 / 0.1 is 2.9999999999999996 in floating point: still 3 hold intervals, no sliver."""
    calls = []

    def ctrl(t, x, xd):
        calls.append(t)
        return [0.0]
    res = forward_dynamics(cart(), (0.0, tf), [0.0, 0.0], [1.0, 0.0], controller=ctrl, sample_time=0.1)
    assert len(calls) == count and res.control_times.size == count
    assert res.t[-1] == pytest.approx(tf, abs=1e-15)
    np.testing.assert_allclose(res.x[-1, 0], tf, atol=1e-10)      # free flight at 1 m/s


@pytest.mark.parametrize("h, ratio", [(0.01, 0.8), (0.05, 1.1)])
def test_zoh_hand_stepping_equals_solve_ivp_path(h, ratio):
    """The ZOH loop steps DOP853 by hand (keeping the proposed step across intervals); with an
    event it uses solve_ivp per interval. Both give the same trajectory (1e-10). When the
    natural step exceeds the hold (h = 0.01) the hand stepping needs one step per interval
    (< 0.8x the evaluations); otherwise it costs about the same (< 1.1x)."""
    cm = cart_pendulum()
    x0 = [0.0, 0.6 * np.sin(0.4), -0.6 * np.cos(0.4)]

    def ctrl(t, x, xd):
        return [-3.0 * x[0] - 1.0 * xd[0]]

    def never(t, x, xd):
        return 1.0
    a = forward_dynamics(cm, (0.0, 1.0), x0, [0, 0, 0], controller=ctrl, sample_time=h)
    b = forward_dynamics(cm, (0.0, 1.0), x0, [0, 0, 0], controller=ctrl, sample_time=h,
                         events=never)
    te = np.linspace(0, 1, 21)
    np.testing.assert_allclose(a.evaluate(te).x, b.evaluate(te).x, atol=1e-10)
    assert a.nfev < ratio * b.nfev


def test_exact_jacobian_matches_central_differences_on_the_bicycle():
    """Dynamics.jacobian (exact, from linearization_terms) vs central differences of the
    right-hand side (h = 1e-6) at a non-steady bicycle state slightly off the manifold (so the
    Baumgarte terms count): agreement 1e-9 relative to max |J| (FD error ~h²)."""
    bb = pytest.importorskip("nhcontrol.models.benchmark_bicycle")
    from nhcontrol.reference._eval import ModelEvaluator
    from nhcontrol.simulate._dynamics import Dynamics
    cm = bb.model()
    x, xd, _ = bb.steady_forward_state(4.0, 0.3, dict(cm.parameters))
    x, xd = x.copy(), xd.copy()
    x[4], x[6], xd[4], xd[6] = 0.1, 0.05, 0.2, -0.3
    ic = consistent_initial_conditions(cm, x, xd, independent=["x_b", "phi_b", "delta"],
                                       dependent=["z_b", "theta_b", "xi_R", "xi_F"])
    dyn = Dynamics(ModelEvaluator(cm), 5.0, 3.0)
    n = cm.n
    y = np.concatenate([ic.x, ic.xd])
    y[2] += 1e-3

    def f(z):
        return np.concatenate([z[n:], dyn.accel(0.0, z[:n], z[n:], None)[:n]])
    J = dyn.jacobian(0.0, y[:n], y[n:], None)
    h = 1e-6
    Jfd = np.stack([(f(y + h * e) - f(y - h * e)) / (2 * h) for e in np.eye(2 * n)], axis=1)
    assert np.max(np.abs(J - Jfd)) < 1e-9 * np.max(np.abs(J))


def test_radau_with_exact_jacobian_agrees_with_dop853():
    """Compiled Chaplygin sleigh, 3 s: Radau (exact Jacobian) and DOP853 agree to 1e-8."""
    sl = pytest.importorskip("nhcontrol.models.sleigh")
    cm = sl.model()
    ic = consistent_initial_conditions(cm, [0, 0, 0], [1.0, 0.0, 0.5], independent=["x", "psi"])
    te = np.linspace(0, 3, 7)
    a = forward_dynamics(cm, (0.0, 3.0), ic.x, ic.xd, t_eval=te)
    b = forward_dynamics(cm, (0.0, 3.0), ic.x, ic.xd, t_eval=te, method="Radau")
    np.testing.assert_allclose(b.x, a.x, atol=1e-8)
    assert b.max_nonholonomic_drift < 1e-8


def test_non_finite_input_is_reported():
    with pytest.raises(SolverError, match=r"u \(inputs\) contains 1 non-finite entries"):
        forward_dynamics(cart(), (0.0, 1.0), [0.0, 0.0], [0.0, 0.0], u=[np.nan])
    with pytest.raises(SolverError, match=r"must return 1 finite inputs"):
        forward_dynamics(cart(), (0.0, 1.0), [0.0, 0.0], [0.0, 0.0],
                         controller=lambda t, x, xd: [np.inf], sample_time=0.1)
    with pytest.raises(SolverError, match=r"non-finite accelerations/multipliers at t = "):
        forward_dynamics(cart(), (0.0, 1.0), [0.0, 0.0], [0.0, 0.0],
                         u=lambda t: [np.nan if t > 0.5 else 0.0])


def test_consistent_initial_conditions_from_partition_dict():
    """A partition dict (Eq. (4.96)) gives the same result as independent=/dependent=."""
    bb = pytest.importorskip("nhcontrol.models.benchmark_bicycle")
    cm = bb.model()
    x, xd, _ = bb.steady_forward_state(5.0, 0.0, dict(cm.parameters))
    x = x.copy()
    x[4] = 0.1
    a = consistent_initial_conditions(cm, x, xd, partition=bb.PARTITION_4_172)
    b = consistent_initial_conditions(cm, x, xd, independent=bb.PARTITION_4_172["independent"],
                                      dependent=bb.PARTITION_4_172["dependent"])
    np.testing.assert_array_equal(a.x, b.x)
    assert a.dependent_positions == ("z_b", "theta_b", "xi_R", "xi_F")
    assert a.holonomic_residual < 1e-12 and a.velocity_residual < 1e-12
    with pytest.raises(PartitionError, match=r"either partition=\.\.\. or independent="):
        consistent_initial_conditions(cm, x, xd, partition=bb.PARTITION_4_172, independent=["x_b"])
    with pytest.raises(PartitionError, match=r"give the n - m - l = 3 independent coordinates"):
        consistent_initial_conditions(cm, x, xd)


def test_consistent_start_gives_no_initial_conditions_warning():
    """A start on the manifold (|C| ~ 1e-16) raises no warning at all; 1e-6 off does."""
    import warnings

    cm = pendulum()
    x0 = [L * np.sin(0.4), -L * np.cos(0.4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        forward_dynamics(cm, (0.0, 0.5), x0, [0.0, 0.0])
    r0 = np.sqrt(L**2 + 2e-6)
    with pytest.warns(UserWarning, match=r"tolerance 1e-08"):
        forward_dynamics(cm, (0.0, 0.5), [r0 * np.sin(0.4), -r0 * np.cos(0.4)], [0.0, 0.0])
