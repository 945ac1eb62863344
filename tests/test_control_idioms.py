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


def test_dlqr_with_plain_matrices_matches_python_control():
    A, B = _plant()
    dsys = control.c2d(control.ss(A, B, np.eye(3), 0), 0.05)
    Q, R = np.eye(3), np.array([[1.0]])
    K, S, E = dlqr(dsys.A, dsys.B, Q, R)
    K0, S0, E0 = control.dlqr(dsys.A, dsys.B, Q, R)
    np.testing.assert_allclose(K, K0, rtol=1e-8)
    np.testing.assert_allclose(S, S0, rtol=1e-8)
    assert np.all(np.abs(E) < 1)
    res = dlqr(dsys.A, dsys.B, Q, R)
    assert res.method == "dare" and res.dt is None
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
