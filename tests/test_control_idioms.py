"""python-control's calling habits in nhcontrol.design: plain-matrix ``lqr``/``dlqr``,
``integral_action`` (compared with python-control's own results) and the PBH report of a
refused design, which names every direction no input moves."""

from __future__ import annotations

import control
import numpy as np
import pytest

from nhcontrol._util.errors import DesignError
from nhcontrol.design import dlqr, lqr


def _plant():
    A = np.array([[0.0, 1.0, 0.0], [2.0, -0.5, 1.0], [0.0, 0.0, -3.0]])
    B = np.array([[0.0], [1.0], [0.5]])
    return A, B


@pytest.mark.parametrize("N", [None, np.array([[0.1], [0.0], [0.05]])])
def test_lqr_with_plain_matrices_matches_python_control(N):
    A, B = _plant()
    Q, R = np.diag([1.0, 2.0, 3.0]), np.array([[0.5]])
    args = (A, B, Q, R) if N is None else (A, B, Q, R, N)
    K, S, E = lqr(*args)
    K0, S0, E0 = control.lqr(*args)
    np.testing.assert_allclose(K, K0, rtol=1e-8)
    np.testing.assert_allclose(S, S0, rtol=1e-8)
    np.testing.assert_allclose(np.sort_complex(E), np.sort_complex(E0), rtol=1e-8)
    # the StateSpace form gives the same, and N= as a keyword too
    sys = control.ss(A, B, np.eye(3), 0)
    res = lqr(sys, Q, R) if N is None else lqr(sys, Q, R, N=N)
    np.testing.assert_allclose(res.K, K, rtol=1e-10)


def test_scalar_plain_matrices_as_python_control():
    """python-control reads A, B, Q, R with ndmin=2: scalars are 1 x 1 systems."""
    np.testing.assert_allclose(lqr(1.0, 1.0, 1.0, 1.0).K, control.lqr(1.0, 1.0, 1.0, 1.0)[0], rtol=1e-10)
    np.testing.assert_allclose(dlqr(1.1, 1.0, 1.0, 1.0).K, control.dlqr(1.1, 1.0, 1.0, 1.0)[0], rtol=1e-10)


def test_dlqr_with_plain_matrices_matches_python_control():
    A, B = _plant()
    dsys = control.c2d(control.ss(A, B, np.eye(3), 0), 0.05)
    Q, R = np.eye(3), np.array([[1.0]])
    K, S, E = dlqr(dsys.A, dsys.B, Q, R)
    K0, S0, E0 = control.dlqr(dsys.A, dsys.B, Q, R)
    np.testing.assert_allclose(K, K0, rtol=1e-8)
    np.testing.assert_allclose(S, S0, rtol=1e-8)
    assert np.all(np.abs(E) < 1)
    res = dlqr(dsys.A, dsys.B, Q, R, method="scipy")
    assert res.method == "dare" and res.dt is None
    np.testing.assert_allclose(res.K, K0, rtol=1e-8)
    with pytest.raises(DesignError, match=r"method must be 'slycot', 'scipy'"):
        lqr(A, B, Q, R, method="magic")
    with pytest.raises(DesignError, match=r"A must be square \(n, n\) and B \(n, k\)"):
        dlqr(np.eye(3), np.ones((2, 1)), Q, R)
    with pytest.raises(DesignError, match=r"unexpected keyword\(s\) \['foo'\]"):
        lqr(A, B, Q, R, foo=1)


@pytest.mark.parametrize("discrete", [False, True])
def test_integral_action_matches_python_control(discrete):
    A, B = _plant()
    sys = control.ss(A, B, np.eye(3), 0)
    if discrete:
        sys = control.c2d(sys, 0.05)
    C = np.array([[1.0, 0.0, 0.0]])
    Q, R = np.diag([1.0, 1.0, 1.0, 4.0]), np.array([[1.0]])
    fn, ref = (dlqr, control.dlqr) if discrete else (lqr, control.lqr)
    res = fn(sys, Q, R, integral_action=C)
    K0, S0, _ = ref(sys, Q, R, integral_action=C)
    assert res.K.shape == (1, 4)
    np.testing.assert_allclose(res.K, K0, rtol=1e-8)
    np.testing.assert_allclose(res.S, S0, rtol=1e-8)
    # the gain closes python-control's integral state-feedback controller
    ctrl, clsys = control.create_statefbk_iosystem(sys, res.K, integral_action=C)
    assert ctrl.nstates == 1
    A_cl = clsys.linearize(np.zeros(clsys.nstates), np.zeros(clsys.ninputs)).A
    ev = np.linalg.eigvals(A_cl)
    assert np.all(np.abs(ev) < 1) if discrete else np.all(ev.real < 0)
    with pytest.raises(DesignError, match=r"integral_action must be a \(p, n\) = \(p, 3\)"):
        fn(sys, Q, R, integral_action=np.ones((1, 2)))
    with pytest.raises(DesignError, match=r"Q must have shape \(4, 4\)"):
        fn(sys, np.eye(3), R, integral_action=C)


def test_refusal_lists_every_pbh_direction():
    """Two cyclic positions tied to one velocity: the PBH rank at 0 drops by two and both
    conserved combinations are named (with all the states that carry them)."""
    # states a, b, c (positions) and v (velocity); a' = v, b' = 2 v, c' = -v, v' = u
    A = np.zeros((4, 4))
    A[0, 3], A[1, 3], A[2, 3] = 1.0, 2.0, -1.0
    B = np.array([[0.0], [0.0], [0.0], [1.0]])
    sys = control.ss(A, B, np.eye(4), 0, states=["a", "b", "c", "v"])
    with pytest.raises(DesignError) as err:
        lqr(sys, np.eye(4), 1.0)
    msg = str(err.value)
    assert "not stabilisable" in msg and "rank [A - λI, B] = 2 < 4" in msg
    assert "2 direction(s) no input moves: a + c; b + 2 c" in msg
    assert "carried by ['a', 'b', 'c']" in msg and "kalman_decomposition" in msg


def test_ltv_to_iosystem_simulates_like_simulate_ltv():
    """``LTVSystem.to_iosystem()`` through ``control.input_output_response`` agrees with
    nhcontrol's own LTV simulation (a Mathieu-type system with a time-varying output)."""
    from nhcontrol.simulate import simulate_ltv
    from nhcontrol.systems import LTVSystem, discretize

    def A(t):
        return [[0.0, 1.0], [-1.0 - 0.3 * np.cos(2 * t), -0.1]]

    def B(t):
        return [[0.0], [1.0 + 0.2 * np.sin(t)]]

    sys = LTVSystem(A, B, states=["q", "v"], inputs=["f"], C=lambda t: [[1.0, 0.5 * np.cos(t)]],
                    outputs=["y"])
    plain = LTVSystem(A, B, states=["q", "v"], inputs=["f"])
    io = sys.to_iosystem(name="mathieu")
    assert isinstance(io, control.NonlinearIOSystem) and io.name == "mathieu"
    assert io.state_labels == ["q", "v"] and io.input_labels == ["f"] and io.output_labels == ["y"]
    T = np.linspace(0.0, 5.0, 201)
    U = np.full((1, T.size), 0.5)              # constant: python-control interpolates U linearly
    resp = control.input_output_response(io, T, U, X0=[0.2, 0.0],
                                         solve_ivp_kwargs={"rtol": 1e-10, "atol": 1e-12})
    ref = simulate_ltv(plain, (0.0, 5.0), [0.2, 0.0], u=lambda t: [0.5], t_eval=T)
    np.testing.assert_allclose(resp.states.T, ref.x, atol=1e-7)
    y = ref.x[:, 0] + 0.5 * np.cos(T) * ref.x[:, 1]
    np.testing.assert_allclose(resp.outputs, y, atol=1e-7)
    # the discrete sequence: one step of the I/O system is one step of A_k, B_k
    d = discretize(plain, 0.05, steps=20)
    dio = d.to_iosystem()
    assert dio.dt == 0.05 and dio.state_labels == ["q", "v"]
    x1 = dio._rhs(d.t0 + 3 * 0.05, np.array([1.0, -1.0]), np.array([0.5]))
    np.testing.assert_allclose(x1, d.Ad[3] @ [1.0, -1.0] + d.Bd[3] @ [0.5], rtol=1e-14)


def _double_integrator(dt=0.1):
    return control.c2d(control.ss([[0.0, 1.0], [0.0, 0.0]], [[0.0], [1.0]], np.eye(2), 0,
                                  states=["p", "v"], inputs=["F"], outputs=["p", "v"], name="cart"), dt)


def _run(ctrl, dsys, x0, steps, disturbance=0.0):
    x = np.array(x0, float)
    for i in range(steps):
        u = ctrl.control(i * dsys.dt, x)
        x = dsys.A @ x + dsys.B @ (u + disturbance)
    return x


def test_controllers_on_a_plain_statespace_regulate_to_zero():
    from nhcontrol.design import MPCController, TVLQRController

    dsys = _double_integrator()
    Q, R = np.eye(2), np.array([[1.0]])
    K = dlqr(dsys, Q, R).K
    lqr_ctrl = TVLQRController(dlqr(dsys, Q, R), None)
    assert lqr_ctrl.dt == 0.1 and lqr_ctrl.inputs == ("F",)
    np.testing.assert_allclose(lqr_ctrl.control(0.0, [1.0, 0.0]), -K @ [1.0, 0.0], rtol=1e-12)
    mpc = MPCController(dsys, None, 20, Q, R, u_min=-5.0, u_max=5.0)
    assert mpc.inputs == ("F",) and mpc.plain
    # unconstrained region: the MPC with the Riccati terminal cost is the LQR
    np.testing.assert_allclose(mpc.control(0.0, [0.1, 0.0]), -K @ [0.1, 0.0], rtol=1e-4, atol=1e-7)
    mpc.reset()
    x = _run(mpc, dsys, [1.0, 0.0], 150)
    assert np.linalg.norm(x) < 1e-3
    assert all(abs(r.u[0]) <= 5.0 + 1e-6 for r in mpc.history)
    assert repr(mpc) == "MPCController(cart, N=20, dt=0.1 s, inputs=['F'], qp='daqp')"
    with pytest.raises(DesignError, match=r"state must be the 2 states \['p', 'v'\]"):
        mpc.control(0.0, [1.0, 0.0, 0.0, 0.0])


def test_plain_controllers_track_x_ref_and_u_ref():
    from nhcontrol.design import MPCController, TVLQRController

    dsys = _double_integrator()
    Q, R = np.eye(2), np.array([[1.0]])
    target = lambda t: [2.0, 0.0]            # noqa: E731 - a set point, zero feed-forward
    for ctrl in (TVLQRController(dlqr(dsys, Q, R), None, x_ref=target),
                 MPCController(dsys, None, 15, Q, R, x_ref=target, u_ref=lambda t: [0.0])):
        x = _run(ctrl, dsys, [0.0, 0.0], 200)
        np.testing.assert_allclose(x, [2.0, 0.0], atol=1e-3)


def test_integral_action_removes_offset_in_plain_controllers():
    """A constant input disturbance: python-control's integral augmentation (dlqr with
    integral_action, then the controller with the same C) leaves no steady offset in C x."""
    from nhcontrol.design import MPCController, TVLQRController

    dsys = _double_integrator()
    C = np.array([[1.0, 0.0]])
    Qa, R = np.diag([1.0, 1.0, 0.5]), np.array([[1.0]])
    gains = dlqr(dsys, Qa, R, integral_action=C)
    ctrl = TVLQRController(gains, None, integral_action=C)
    assert ctrl.memory_labels() == ["z[0]"]
    x = _run(ctrl, dsys, [1.0, 0.0], 600, disturbance=0.3)
    assert abs(x[0]) < 1e-4
    plain = _run(TVLQRController(dlqr(dsys, np.eye(2), R), None), dsys, [1.0, 0.0], 600, 0.3)
    assert abs(plain[0]) > 0.1                  # without the integrator: an offset
    mpc = MPCController(dsys, None, 15, Qa, R, integral_action=C)
    x = _run(mpc, dsys, [1.0, 0.0], 600, disturbance=0.3)
    assert abs(x[0]) < 1e-3


def test_plain_controller_to_iosystem_closes_the_loop_in_python_control():
    from nhcontrol.design import TVLQRController

    dsys = _double_integrator()
    ctrl = TVLQRController(dlqr(dsys, np.eye(2), 1.0), None)
    io = ctrl.to_iosystem()
    assert io.input_labels == ["p", "v"] and io.output_labels == ["F"] and io.dt == 0.1
    loop = control.interconnect([dsys, io], inputs=[], outputs=["p", "v"])
    T = np.arange(0, 100) * 0.1
    resp = control.input_output_response(loop, T, 0, X0=[1.0, 0.0])
    x = _run(TVLQRController(dlqr(dsys, np.eye(2), 1.0), None), dsys, [1.0, 0.0], 99)
    np.testing.assert_allclose(resp.states[:, -1], x, atol=1e-12)


def test_kalman_decomposition_discrete_time_conserves_multiplier_one():
    """In discrete time a conserved combination keeps its value from step to step
    (multiplier 1); the continuous and the sampled system name the same direction."""
    from nhcontrol.analysis import kalman_decomposition

    sys = control.ss([[0, 0, 1.0], [0, 0, 2.0], [0, 0, -1.0]], [[0], [0], [1.0]], np.eye(3), 0,
                     states=["a", "b", "v"], inputs=["F"])
    kc = kalman_decomposition(sys)
    kdisc = kalman_decomposition(control.c2d(sys, 0.1))
    for kd in (kc, kdisc):
        assert [str(c) for c in kd.uncontrollable] == ["a - 0.5 b"] and kd.uncontrollable[0].conserved
    assert kdisc.controllable_subsystem().dt == 0.1


def test_kalman_decomposition_of_a_constant_ltv_system():
    from nhcontrol._util.errors import LinearSystemError
    from nhcontrol.analysis import kalman_decomposition
    from nhcontrol.systems import LTVSystem

    ltv = LTVSystem.constant([[0, 0, 1.0], [0, 0, 2.0], [0, 0, -1.0]], [[0], [0], [1.0]],
                             states=["a", "b", "v"], inputs=["F"])
    assert [str(c) for c in kalman_decomposition(ltv).uncontrollable] == ["a - 0.5 b"]
    varying = LTVSystem(lambda t: [[0.0, 1.0], [-1.0 - np.cos(t), 0.0]], lambda t: [[0.0], [1.0]])
    with pytest.raises(LinearSystemError, match="varies with time"):
        kalman_decomposition(varying)
