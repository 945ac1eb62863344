"""Extended Kalman filter on the constraint manifold: exact Jacobians at the estimate equal the
third procedure's, the estimate stays on the manifold, a seeded output-feedback loop is
reproducible and the filter is consistent (NEES) on a pendulum with two holonomic constraints;
the python-control form (discrete NonlinearIOSystem) equals correct + predict."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nhcontrol
from nhcontrol._util.errors import DesignError
from nhcontrol.design import ExtendedKalmanFilter
from nhcontrol.reference import Reference
from nhcontrol.simulate import output_feedback_loop

from _toy_models import SLEIGH, pinned_pendulum
from _toy_models import sleigh_motor as build_sleigh_motor

TH0 = 0.4
PART = {"independent": ["theta"], "admissible_dependent": [], "dependent": ["x", "y"]}


@pytest.fixture(scope="module")
def pendulum():
    mb, s = pinned_pendulum("pendulum_ekf")
    x = s.x
    mb.add_output("camera_tip_x", 2 * x)          # a camera sees the tip: a dependent coordinate
    cm = mb.compile()
    tau0 = 2.0 * 9.81 * 0.6 * math.sin(TH0)
    ref = Reference.equilibrium(cm, [0.6 * math.sin(TH0), -0.6 * math.cos(TH0), TH0], u=[tau0])
    return cm, ref, tau0


def test_jacobians_equal_third_procedure(pendulum):
    cm, ref, tau0 = pendulum
    ekf = ExtendedKalmanFilter(cm, PART, 0.01, Rn=[[1e-6]], x0=ref.x(0.0), xd0=ref.xd(0.0),
                               P0=np.eye(2), u0=[tau0])
    A, B, H, Dy = ekf.jacobians()
    lin = nhcontrol.linearize(cm, ref, PART)
    np.testing.assert_allclose(A, lin.A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(B, lin.B, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(H, lin.C, rtol=1e-12, atol=1e-12)
    assert ekf.states == lin.states


def _loop(cm, ref, tau0, seed):
    sig_y, sig_w = 2e-3, 0.05
    ekf = ExtendedKalmanFilter(cm, PART, 0.02, Rn=[[sig_y**2]], x0=ref.x(0.0), xd0=ref.xd(0.0),
                               P0=np.diag([0.1**2, 0.3**2]), Qw=[[sig_w**2]], u0=[tau0])
    x0 = [0.6 * math.sin(TH0 + 0.1), -0.6 * math.cos(TH0 + 0.1), TH0 + 0.1]
    xd0 = [0.0, 0.0, 0.0]
    res = output_feedback_loop(cm, (0.0, 3.0), x0, xd0, estimator=ekf,
                               controller=lambda k, t, X: [tau0], sample_time=0.02,
                               measurement_noise=[sig_y], process_noise=[sig_w], seed=seed,
                               u_init=[tau0], rtol=1e-9, atol=1e-11)
    return ekf, res


def test_output_feedback_loop_ekf_consistent_and_reproducible(pendulum):
    cm, ref, tau0 = pendulum
    ekf, res = _loop(cm, ref, tau0, seed=7)
    truth = np.column_stack([res.x[:, 2], res.xd[:, 2]])
    err = truth - res.estimates
    # after the first second the estimate follows the swinging pendulum (amplitude 0.1 rad)
    late = res.time > 1.0
    assert np.abs(err[late, 0]).max() < 0.01
    assert np.abs(truth[late, 0] - TH0).max() > 0.05           # it does swing
    # NEES (2 states): mean near 2, most samples in the two-sided 95 % band
    nees = res.nees(truth)
    assert 1.0 < nees.mean() < 3.5
    from scipy.stats import chi2

    inside = np.mean((nees >= chi2.ppf(0.025, 2)) & (nees <= chi2.ppf(0.975, 2)))
    assert inside > 0.8
    # the estimate is on the manifold: C(x̂) = 0 to the projection tolerance
    assert np.abs(cm.C(ekf.x, ekf.u)).max() < 1e-10
    # seeded: the same run twice
    _, again = _loop(cm, ref, tau0, seed=7)
    np.testing.assert_array_equal(again.outputs, res.outputs)
    np.testing.assert_array_equal(again.estimates, res.estimates)


def test_iosystem_is_correct_then_predict(pendulum):
    cm, ref, tau0 = pendulum
    kw = dict(Rn=[[1e-4]], x0=ref.x(0.0), xd0=ref.xd(0.0), P0=np.diag([0.01, 0.04]),
              Qw=[[1e-3]], u0=[tau0])
    ekf = ExtendedKalmanFilter(cm, PART, 0.02, **kw)
    sys, xinit = ekf.to_iosystem()
    assert sys.dt == 0.02 and sys.ninputs == 2 and sys.noutputs == 2
    y, u = [cm.output(ref.x(0.0), ref.xd(0.0), [tau0])[0] + 0.01], [tau0 + 0.1]
    nxt = sys._rhs(0.0, xinit, np.concatenate([y, u]))
    ref_ekf = ExtendedKalmanFilter(cm, PART, 0.02, **kw)
    ref_ekf.correct(y, u)
    ref_ekf.predict(u)
    np.testing.assert_allclose(nxt[:2], ref_ekf.X, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(nxt[2:].reshape(2, 2), ref_ekf.P, rtol=1e-12, atol=1e-16)


def test_ekf_errors(pendulum):
    cm, ref, tau0 = pendulum
    with pytest.raises(DesignError, match="Rn must be positive definite"):
        ExtendedKalmanFilter(cm, PART, 0.01, Rn=[[0.0]], x0=ref.x(0.0), xd0=ref.xd(0.0), P0=np.eye(2))
    with pytest.raises(DesignError, match=r"P0 must have shape \(2, 2\)"):
        ExtendedKalmanFilter(cm, PART, 0.01, Rn=[[1.0]], x0=ref.x(0.0), xd0=ref.xd(0.0), P0=np.eye(3))
    from nhcontrol.modeling.examples import sleigh

    with pytest.raises(DesignError, match="declares no outputs"):
        ExtendedKalmanFilter(sleigh().compile(), {"independent": ["x", "theta"],
                                                  "admissible_dependent": ["y"], "dependent": []},
                             0.01, Rn=[[1.0]], x0=np.zeros(3), xd0=np.zeros(3), P0=np.eye(5))


def test_ekf_iosystem_interconnected_with_sampled_plant(pendulum):
    """python-control route: the sampled plant (to_nlsys(cm, dt=...)) outputs the declared
    sensor, the EKF's iosystem estimates from it, interconnect closes plant -> estimator; the
    estimate converges to the true swinging pendulum (no noise)."""
    import control

    from nhcontrol.simulate import to_nlsys

    cm, ref, tau0 = pendulum
    dt = 0.02
    plant = to_nlsys(cm, dt=dt, outputs=["camera_tip_x", "theta", "theta_d"], name="plant")
    ekf = ExtendedKalmanFilter(cm, PART, dt, Rn=[[1e-6]], x0=ref.x(0.0), xd0=ref.xd(0.0),
                               P0=np.diag([0.1 ** 2, 0.3 ** 2]), Qx=1e-8 * np.eye(2), u0=[tau0])
    est, xinit = ekf.to_iosystem()
    loop = control.interconnect(
        [plant, est], connections=[["ekf.camera_tip_x", "plant.camera_tip_x"]],
        inplist=["plant.tau", "ekf.tau"], inputs=["tau_plant", "tau_ekf"],
        outlist=["plant.theta", "plant.theta_d", "ekf.theta_hat", "ekf.theta_d_hat"],
        outputs=["theta", "theta_d", "theta_hat", "theta_d_hat"], dt=dt)
    th1 = TH0 + 0.1
    x0 = np.concatenate([[0.6 * math.sin(th1), -0.6 * math.cos(th1), th1], np.zeros(3), xinit])
    T = np.arange(0.0, 2.0 + dt / 2, dt)
    U = np.full((2, T.size), tau0)
    resp = control.input_output_response(loop, T, U, x0)
    th, thh = resp.outputs[0], resp.outputs[2]
    assert abs(thh[0] - TH0) < 1e-12                 # starts at the reference (prior)
    assert np.abs(th[-20:] - thh[-20:]).max() < 2e-3  # converged to the truth
    assert np.abs(th - TH0).max() > 0.05


def test_ill_conditioned_partition_at_the_estimate(pendulum):
    """x independent: ∂C/∂(y, θ) has det (L/2) cos θ; near θ = π/2 the prediction refuses, as
    linearize does, naming the block and suggesting a partition that works there."""
    from nhcontrol._util.errors import PartitionError

    cm, ref, tau0 = pendulum
    th = math.pi / 2 - 1e-11
    part = {"independent": ["x"], "admissible_dependent": [], "dependent": ["y", "theta"]}
    ekf = ExtendedKalmanFilter(cm, part, 0.01, Rn=[[1e-6]], P0=np.eye(2), u0=[tau0],
                               x0=[0.6 * math.sin(th), -0.6 * math.cos(th), th], xd0=np.zeros(3))
    with pytest.raises(PartitionError, match=r"(?s)dC/dx_d.*independent=\['(y|theta)'\]"):
        ekf.predict()


def test_update_refuses_a_wrong_sample_time(pendulum):
    cm, ref, tau0 = pendulum
    ekf = ExtendedKalmanFilter(cm, PART, 0.02, Rn=[[1e-6]], x0=ref.x(0.0), xd0=ref.xd(0.0),
                               P0=np.eye(2), u0=[tau0])
    y = cm.output(ref.x(0.0), ref.xd(0.0), [tau0])
    ekf.update(0.0, y, [tau0])
    with pytest.raises(DesignError, match="next sample of this filter is at t = 0.02"):
        ekf.update(0.05, y, [tau0])


# ---------------------------------------------------------------- first-order states (Sect. 7.2)
SLEIGH_PART = dict(independent=["x", "psi"], admissible_dependent=["y"], dependent=[])


@pytest.fixture(scope="module")
def sleigh_motor():
    """Chaplygin sleigh (l = 1) pushed by a DC motor whose current i is a first-order state,
    L_m di/dt = V - R i - k_e v; a compass on the heading and a wheel-speed sensor on v."""
    P = SLEIGH
    mb, s = build_sleigh_motor("sleigh_motor_ekf")
    psi, v = s.psi, s.v
    mb.add_output("compass", psi)
    mb.add_output("wheel_speed", v)
    cm = mb.compile()
    psi0, v0 = 0.3, 1.2
    i0 = P["c"] * v0 / P["kt"]
    u0 = np.array([i0, P["R"] * i0 + P["ke"] * v0, 0.0])
    ref = Reference.constant_velocity(cm, [0.1, -0.2, psi0],
                                      [v0 * math.cos(psi0), v0 * math.sin(psi0), 0.0], u=u0)
    return cm, ref, u0


def test_ekf_first_order_states_jacobians(sleigh_motor):
    """The EKF's state is [x_ai, ẋ_ai, x_ad, z]; at a reference point its A, B (C kernels and
    the general path) and H, D_y equal linearize_first_order_system's A, B, C, D."""
    from nhcontrol.compiled import compile_rates  # noqa: F401  (RateKernels of the model)
    from nhcontrol.compiled.rates import RateKernels
    from nhcontrol.linearization import linearize_first_order_system

    cm, ref, u0 = sleigh_motor
    ekf = ExtendedKalmanFilter(cm, SLEIGH_PART, 0.01, Rn=np.diag([1e-6, 1e-4]), x0=ref.x(0.0),
                               xd0=ref.xd(0.0), z0=u0[:1], u0=u0[1:], P0=np.eye(6))
    assert ekf.states == ("x", "psi", "x_d", "psi_d", "y", "i") and ekf.inputs == ("V", "tau")
    lin = linearize_first_order_system(cm, RateKernels(cm), ref, SLEIGH_PART)
    A, B, H, Dy = ekf.jacobians()
    np.testing.assert_allclose(A, lin.A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(B, lin.B, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(H, lin.C, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Dy, lin.D, rtol=1e-12, atol=1e-14)
    ekf._lz = None                                     # the path through linearize
    A2, B2, _, _ = ekf.jacobians()
    np.testing.assert_allclose(A2, lin.A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(B2, lin.B, rtol=1e-12, atol=1e-12)
    with pytest.raises(DesignError, match="give their initial estimate z0"):
        ExtendedKalmanFilter(cm, SLEIGH_PART, 0.01, Rn=np.eye(2), x0=ref.x(0.0),
                             xd0=ref.xd(0.0), P0=np.eye(6))


def test_ekf_first_order_states_estimates_the_current(sleigh_motor):
    """Truth: the nonlinear model integrated by ``forward_dynamics_first_order`` (Radau, rtol
    1e-9: another integrator than the filter's, over the index-1 DAE with Baumgarte
    stabilisation) with a voltage disturbance held over each sample, from an initial state drawn
    from the filter's prior (σ = 0.2 A on the unmeasured current); the filter converges to the
    current, consistently: NEES over the 6 states averaged over three seeds (the position x, y is
    unobservable, its error stays at its one draw, so a single run scatters). The filter's own
    estimate keeps the sleigh's nonholonomic constraint to round-off."""
    from scipy.stats import chi2

    from nhcontrol.compiled.rates import RateKernels
    from nhcontrol.simulate import forward_dynamics_first_order

    cm, ref, u0 = sleigh_motor
    rates = RateKernels(cm)
    dt, sig_V = 0.02, 0.05
    Rn = np.diag([1e-3 ** 2, 1e-2 ** 2])
    P0 = np.diag([1e-4, 1e-4, 1e-2, 1e-2, 1e-4, 0.2 ** 2])
    kw = dict(Rn=Rn, xd0=ref.xd(0.0), u0=u0[1:], Qw=np.diag([sig_V ** 2, 1e-8]))
    means, inside, first, late = [], [], [], []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        ekf = ExtendedKalmanFilter(cm, SLEIGH_PART, dt, x0=ref.x(0.0), z0=u0[:1], P0=P0, **kw)
        X0 = ekf.X + np.sqrt(np.diag(P0)) * rng.standard_normal(6)
        x, xd, z = ekf._from_minimal(X0, ekf.x, ekf.xd, u0[1:])        # a state on the manifold
        x, xd, z = x.copy(), xd.copy(), np.atleast_1d(z).copy()
        nees, err = [], []
        for k in range(150):
            y = cm.output(x, xd, np.concatenate([z, u0[1:]])) + rng.normal(0, np.sqrt(np.diag(Rn)))
            if k:
                ekf.predict(u0[1:])
            Xhat = ekf.correct(y)
            X_true = np.array([x[0], x[2], xd[0], xd[2], x[1], z[0]])   # [x_ai, ẋ_ai, x_ad, z]
            e = X_true - Xhat
            nees.append(e @ np.linalg.solve(ekf.P, e))
            err.append(abs(e[5]))
            w = np.array([sig_V * rng.standard_normal(), 0.0])
            sim = forward_dynamics_first_order(cm, (k * dt, (k + 1) * dt), x, xd, z, rates=rates,
                                               r=u0[1:] + w, rtol=1e-9, t_eval=[(k + 1) * dt])
            x, xd, z = sim.x[-1], sim.xd[-1], sim.z[-1]
        nees = np.array(nees)
        means.append(nees.mean())
        inside.append(np.mean((nees >= chi2.ppf(0.025, 6)) & (nees <= chi2.ppf(0.975, 6))))
        first.append(err[0])
        late.append(float(np.sqrt(np.mean(np.square(err[-50:])))))
        sd_i = math.sqrt(ekf.P[5, 5])
    # the current is found: the filter's σ far below the prior's 0.2 A (the voltage disturbance
    # keeps it at ~0.02 A), the late rms error at that σ
    assert max(first) > 0.1 and sd_i < 0.15 * 0.2 and max(late) < 2 * sd_i
    assert 4.0 < np.mean(means) < 8.0                          # 6 states: mean near 6
    assert np.mean(inside) > 0.85
    B = np.asarray(cm.B(ekf.x, ekf._ua(ekf.u)))                # the sleigh's knife edge, B ẋ = 0
    assert cm.m == 0 and cm.l == 1
    assert abs(B @ ekf.xd).max() <= 1e-12 * max(1.0, abs(ekf.xd).max())
