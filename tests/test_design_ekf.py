"""Extended Kalman filter on the constraint manifold: exact Jacobians at the estimate equal the
third procedure's, the estimate stays on the manifold, a seeded output-feedback loop is
reproducible and the filter is consistent (NEES) on a pendulum with two holonomic constraints;
the python-control form (discrete NonlinearIOSystem) equals correct + predict."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import nhcontrol
from nhcontrol._util.errors import DesignError
from nhcontrol.design import ExtendedKalmanFilter
from nhcontrol.modeling import MultibodySystem, rot_z
from nhcontrol.reference import Reference
from nhcontrol.simulate import output_feedback_loop

TH0 = 0.4
PART = {"independent": ["theta"], "admissible_dependent": [], "dependent": ["x", "y"]}


@pytest.fixture(scope="module")
def pendulum():
    mb = MultibodySystem("pendulum_ekf")
    x, y, th = mb.add_coordinates("x y theta")
    L, m, g = mb.add_parameters(L=1.2, m=2.0, g=9.81)
    tau = mb.add_inputs("tau")
    bar = mb.add_body("bar", mass=m, inertia=sp.diag(m * L**2 / 12, 0, m * L**2 / 12),
                      position=[x, y, 0], orientation=rot_z(th))
    mb.add_gravity(g, direction=(0, -1, 0))
    mb.add_torque(bar, [0, 0, tau])
    mb.add_holonomic(x - L / 2 * sp.sin(th), name="pin_x")
    mb.add_holonomic(y + L / 2 * sp.cos(th), name="pin_y")
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
