"""python-control controllers in forward_dynamics: the bicycle at 2 m/s with a
steer-torque LQR, as a static StateSpace, a discrete StateSpace (ZOH) and a static
NonlinearIOSystem; each levels a 2° lean (|φ(4 s)| < 1e-4 rad) and the static ones agree with a
hand-written feedback callable to the integration tolerance."""

from __future__ import annotations

import math

import control
import numpy as np
import pytest

from nhcontrol._util.errors import SolverError
from nhcontrol.linearization import linearize
from nhcontrol.models import benchmark_bicycle as bb
from nhcontrol.simulate import consistent_initial_conditions, forward_dynamics


@pytest.fixture(scope="module")
def setup():
    cm = bb.model(inputs=("T_delta",))
    ref = bb.steady_forward(cm, 2.0)
    lin = linearize(cm, ref, bb.PARTITION_4_172)
    red = lin.to_statespace(states="reduced")
    K = control.lqr(red, np.diag([10.0, 10.0, 1.0, 1.0]), np.eye(1))[0]
    x, xd = ref.x(0.0).copy(), ref.xd(0.0).copy()
    x[cm.coordinates.index("phi_b")] = math.radians(2.0)
    ic = consistent_initial_conditions(cm, x, xd, partition=bb.PARTITION_4_172)
    return cm, ref, lin, red, K, np.asarray(ic.x), np.asarray(ic.xd)


def _phi(cm, res):
    return res.x[:, cm.coordinates.index("phi_b")]


def test_static_statespace_and_nlsys_controllers(setup):
    cm, ref, lin, red, K, x0, xd0 = setup
    labels = red.state_labels
    gain = control.ss(np.zeros((0, 0)), np.zeros((0, 4)), np.zeros((1, 0)), -K, inputs=labels,
                      outputs=["T_delta"])
    te = np.linspace(0.0, 4.0, 9)
    r1 = forward_dynamics(cm, (0.0, 4.0), x0, xd0, controller=gain, linearization=lin, reference=ref,
                          t_eval=te)
    idx = [list(lin.states).index(s) for s in labels]

    def by_hand(t, x, xd):
        return -K @ lin.deviation(ref, t, x, xd)[idx]
    r0 = forward_dynamics(cm, (0.0, 4.0), x0, xd0, controller=by_hand, t_eval=te)
    np.testing.assert_allclose(r1.x, r0.x, atol=1e-9)
    assert abs(_phi(cm, r1)[-1]) < 1e-4
    nl = control.nlsys(None, lambda t, x, u, params: -K @ u, inputs=labels, outputs=["T_delta"])
    r2 = forward_dynamics(cm, (0.0, 4.0), x0, xd0, controller=nl, linearization=lin, reference=ref,
                          t_eval=te)
    np.testing.assert_allclose(r2.x, r0.x, atol=1e-9)


def test_discrete_statespace_controller_with_zoh(setup):
    cm, ref, lin, red, K, x0, xd0 = setup
    dt = 0.01
    dred = control.c2d(red, dt)
    Kd = control.dlqr(dred, np.diag([10.0, 10.0, 1.0, 1.0]), np.eye(1))[0]
    ctrl = control.ss(np.zeros((0, 0)), np.zeros((0, 4)), np.zeros((1, 0)), -Kd, dt=dt,
                      inputs=red.state_labels, outputs=["T_delta"])
    res = forward_dynamics(cm, (0.0, 4.0), x0, xd0, controller=ctrl, linearization=lin, reference=ref)
    assert res.sample_time == dt and abs(_phi(cm, res)[-1]) < 1e-4


def test_controller_errors(setup):
    cm, ref, lin, red, K, x0, xd0 = setup
    gain = control.ss(np.zeros((0, 0)), np.zeros((0, 4)), np.zeros((1, 0)), -K, inputs=red.state_labels,
                      outputs=["T_delta"])
    with pytest.raises(SolverError, match="linearization=lin"):
        forward_dynamics(cm, (0.0, 0.1), x0, xd0, controller=gain)
    dyn = control.ss(-np.eye(1), np.ones((1, 4)), np.ones((1, 1)), np.zeros((1, 4)),
                     inputs=red.state_labels, outputs=["T_delta"])
    with pytest.raises(SolverError, match="discretize it"):
        forward_dynamics(cm, (0.0, 0.1), x0, xd0, controller=dyn, linearization=lin, reference=ref)
    wrong = control.ss(np.zeros((0, 0)), np.zeros((0, 1)), np.zeros((1, 0)), [[1.0]], inputs=["lean"],
                       outputs=["T_delta"])
    with pytest.raises(SolverError, match=r"\['lean'\] that are neither states"):
        forward_dynamics(cm, (0.0, 0.1), x0, xd0, controller=wrong, linearization=lin, reference=ref)
    with pytest.raises(SolverError, match=r"must accept \(t, x, xd\)"):
        forward_dynamics(cm, (0.0, 0.1), x0, xd0, controller=lambda t, x: np.zeros(1))
