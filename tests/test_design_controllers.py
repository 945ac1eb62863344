"""Controllers as objects: TV-LQR and LTV-MPC close the loop in nhcontrol
(forward_dynamics, the piecewise loop) and in python-control (interconnect with the sampled
plant to_nlsys(cm, dt)) with the same trajectory; soft state bounds stay feasible where hard
ones are infeasible and agree where feasible; integral action removes a constant-disturbance
offset; a failing QP falls back (shifted plan, then LQR) instead of stopping the run."""

from __future__ import annotations

import math

import control
import numpy as np
import pytest

from nhcontrol._util.errors import DesignError, SolverError
from nhcontrol.design import (LTVMPC, MPCController, TVLQRController, finite_horizon_lqr,
                              window)
from nhcontrol.models import ball_plate as bp
from nhcontrol.simulate import closed_loop_piecewise_linear, forward_dynamics, to_nlsys
from nhcontrol.systems import DiscreteLTV, LTVSystem, discretize, restrict

from _toy_models import ZeroRef as _ZeroRef

TIGHT = dict(eps_abs=1e-10, eps_rel=1e-10)


@pytest.fixture(scope="module")
def ball():
    cm = bp.model()
    x0, xd0 = bp.initial_conditions(cm, 5.0)
    ref = bp.spin_matched_motion(cm, x0, xd0)
    mo = bp.motion_from_reference(cm, ref)
    red = bp.spin_reduction(cm, ref)
    dt = mo.period / 125
    full = LTVSystem.from_linearization(cm, ref, bp.PARTITION_8_72)
    dsys = discretize(restrict(full, red.S, red.P, states=red.states), dt)
    Q = np.diag([1.0, 1.0, 1.0, 0.1, 0.1, 1e4, 1e4])
    R = 1e3 * np.eye(2)

    def dev(t, x, xd):
        return red.reduce(bp.deviation(ref, t, x, xd))
    return cm, x0, xd0, ref, dt, dsys, Q, R, dev


def _both_loops(cm, ctrl, x0, xd0, K):
    T = ctrl.dt * np.arange(K + 1)
    own = forward_dynamics(cm, (0.0, K * ctrl.dt), x0, xd0, controller=ctrl, t_eval=T)
    plant = to_nlsys(cm, dt=ctrl.dt)
    io = ctrl.to_iosystem()
    assert control.isdtime(io, strict=True) and io.dt == ctrl.dt
    assert io.input_labels == plant.output_labels and io.output_labels == plant.input_labels
    loop = control.interconnect([plant, io], inplist=[], outlist=plant.output_labels)
    ctrl.reset()
    resp = control.input_output_response(loop, T, 0, np.concatenate([x0, xd0, np.zeros(io.nstates)]))
    return own, resp


def test_tvlqr_same_trajectory_in_nhcontrol_and_python_control(ball):
    cm, x0, xd0, ref, dt, dsys, Q, R, dev = ball
    lq = finite_horizon_lqr(window(dsys, 0, 60), Q, R, Q)
    ctrl = TVLQRController(lq, ref, dt, deviation=dev)
    own, resp = _both_loops(cm, ctrl, x0, xd0, 10)
    np.testing.assert_allclose(np.asarray(resp.states)[:cm.n].T, own.x, atol=1e-9)
    # the same gains by hand: u = u0(t + h/2) − K_k δx_k
    np.testing.assert_allclose(own.control_inputs[3], ref.u(3.5 * dt) - lq.K[3] @ dev(
        3 * dt, own.x[3], own.xd[3]), atol=1e-12)
    # the piecewise loop takes the object too (held inputs: the same run)
    pw = closed_loop_piecewise_linear(cm, ctrl, 10 * dt, x0, xd0, ref.u(0.0), sample_time=dt,
                                      rtol=1e-10, atol=1e-12, points_per_step=1)
    np.testing.assert_allclose(pw.x, own.x, atol=1e-8)
    with pytest.raises(DesignError, match="past the LQR horizon"):
        ctrl.control(70 * dt, np.concatenate([x0, xd0]))


def test_mpc_same_trajectory_in_nhcontrol_and_python_control(ball):
    cm, x0, xd0, ref, dt, dsys, Q, R, dev = ball
    b, r = math.radians(10.0), math.radians(0.5)
    ctrl = MPCController(dsys, ref, 10, Q, R, deviation=dev, u_min=-b, u_max=b, du_min=-r,
                         du_max=r, solver_options=TIGHT)
    assert ctrl.to_iosystem().state_labels == ["alpha_prev", "beta_prev", "started"]
    own, resp = _both_loops(cm, ctrl, x0, xd0, 8)
    np.testing.assert_allclose(np.asarray(resp.states)[:cm.n].T, own.x, atol=1e-7)
    assert set(ctrl.statuses) == {"optimal"}
    assert np.all(np.abs(np.diff(own.control_inputs, axis=0)) <= r + 1e-9)


def test_mpc_without_bounds_is_the_tvlqr(ball):
    """Terminal cost P_{k+N} of the Riccati recursion: with no active bound the MPC input is the
    finite-horizon LQR input of the same recursion."""
    cm, x0, xd0, ref, dt, dsys, Q, R, dev = ball
    ctrl = MPCController(dsys, ref, 10, Q, R, deviation=dev, solver_options=TIGHT)
    s = np.concatenate([x0, xd0])
    u = ctrl.control(0.0, s)
    np.testing.assert_allclose(u, ref.u(0.5 * dt) - ctrl.lqr.K[0] @ dev(0.0, x0, xd0), atol=1e-7)


def _double_integrator(h=0.1):
    A = np.array([[1.0, h], [0.0, 1.0]])
    B = np.array([[h * h / 2], [h]])
    return A, B


def _run_linear(ctrl, A, B, s0, steps, d=0.0):
    s = np.array(s0, dtype=float)
    out = []
    for k in range(steps):
        u = ctrl.control(k * ctrl.dt, s)
        out.append((s.copy(), u.copy()))
        s = A @ s + B @ (u + d)
    return s, out


def test_integral_action_removes_constant_disturbance_offset():
    A, B = _double_integrator()
    dsys = DiscreteLTV.from_lti(A, B, dt=0.1, steps=1)
    kw = dict(u_min=-2.0, u_max=2.0, solver_options=TIGHT)
    plain = MPCController(dsys, _ZeroRef(), 15, np.diag([10.0, 1.0]), np.eye(1), steps=400, **kw)
    integ = MPCController(dsys, _ZeroRef(), 15, np.diag([10.0, 1.0]), np.eye(1), steps=400,
                          integral=([[1.0, 0.0]], [[5.0]]), **kw)
    assert integ.to_iosystem(["p", "p_d"]).state_labels == ["f_prev", "started", "integral[0]"]
    sp, _ = _run_linear(plain, A, B, [1.0, 0.0], 300, d=0.3)
    si, _ = _run_linear(integ, A, B, [1.0, 0.0], 300, d=0.3)
    assert abs(sp[0]) > 1e-2                    # proportional only: a steady offset
    assert abs(si[0]) < 1e-6 and abs(si[1]) < 1e-6   # integral action: none


def test_soft_bounds_feasible_where_hard_are_not_and_equal_where_feasible():
    A, B = _double_integrator()
    kw = dict(u_min=-1.0, u_max=1.0, x_min=[-1.0, -0.5], x_max=[1.0, 0.5], solver_options=TIGHT)
    for iface in ("direct", "cvxpy"):
        hard = LTVMPC(20, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), osqp_interface=iface, **kw)
        soft = LTVMPC(20, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), osqp_interface=iface,
                      soft_state=(1e4, 1e2), **kw)
        x = np.array([0.8, 0.4])                 # feasible: the same plan, no slack
        a, b = hard.step(x, A, B), soft.step(x, A, B)
        np.testing.assert_allclose(b.predicted_x, a.predicted_x, atol=1e-6)
        np.testing.assert_allclose(b.u, a.u, atol=1e-6)
        assert b.slack.shape == (20, 2) and b.slack_max < 1e-7
        x = np.array([0.9, 0.5])                 # cannot stop before x = 1 with |u| <= 1
        with pytest.raises(SolverError):
            hard.step(x, A, B)
        c = soft.step(x, A, B)
        assert c.status == "optimal" and 1e-3 < c.slack_max < 0.1
        assert np.all(np.abs(c.predicted_u) <= 1.0 + 1e-6)   # input bounds stay hard


def test_failing_qp_falls_back_without_stopping_the_run():
    A, B = _double_integrator()
    dsys = DiscreteLTV.from_lti(A, B, dt=0.1, steps=1)
    ctrl = MPCController(dsys, _ZeroRef(), 10, np.eye(2), 0.01 * np.eye(1), steps=100,
                         u_min=-1.0, u_max=1.0, x_min=[-1.0, -0.5], x_max=[1.0, 0.5])
    # feasible first (a plan exists), then pushed out of the feasible set by a disturbance
    ctrl.control(0.0, [0.5, 0.2])
    u1 = ctrl.control(0.1, [0.95, 0.5])
    assert ctrl.history[-1].status.startswith("fallback: shifted plan")
    s, _ = _run_linear(ctrl, A, B, [0.99, 0.5], 80)
    assert any(r.status.startswith("fallback: lqr") for r in ctrl.history)
    assert np.all(np.isfinite(s)) and abs(s[0]) < 0.02   # the run went on and converged
    with pytest.raises(SolverError):
        MPCController(dsys, _ZeroRef(), 10, np.eye(2), 0.01 * np.eye(1), steps=100, u_min=-1.0,
                      u_max=1.0, x_min=[-1.0, -0.5], x_max=[1.0, 0.5],
                      fallback=False).control(0.0, [0.99, 0.5])
