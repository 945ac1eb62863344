"""python-control conventions of the linear systems and the design errors."""

from __future__ import annotations

import control
import numpy as np
import pytest

from nhcontrol._util.errors import DesignError, LinearSystemError
from nhcontrol.design import finite_horizon_lqr, lqr
from nhcontrol.linearization import linearize
from nhcontrol.models import benchmark_bicycle as bb
from nhcontrol.simulate import simulate_discrete
from nhcontrol.systems import DiscreteLTV, LTVSystem

A2 = np.array([[1.0, 0.1], [0.0, 1.0]])
B2 = np.array([[0.005], [0.1]])


def test_ltv_system_labels_and_time_domain():
    sys = LTVSystem.constant(np.array([[0.0, 1.0], [-1.0, 0.0]]), np.array([[0.0], [1.0]]),
                             states=["q", "q_d"], inputs=["F"])
    assert sys.state_labels == ["q", "q_d"] and sys.input_labels == ["F"]
    assert sys.output_labels == ["q", "q_d"] and sys.noutputs == 2
    assert sys.dt == 0 and not sys.isdtime() and sys.isctime()
    assert sys.states == ("q", "q_d")   # the former names stay


def test_discrete_ltv_labels_and_time_domain():
    d = DiscreteLTV.from_lti(A2, B2, 0.1, 4)
    assert d.state_labels == ["x[0]", "x[1]"] and d.input_labels == ["u[0]"]
    assert d.noutputs == 2 and d.output_labels == d.state_labels
    assert d.dt == 0.1 and d.isdtime() and not d.isctime()


def test_finite_horizon_lqr_accepts_discrete_statespace():
    dss = control.ss(A2, B2, np.eye(2), 0, dt=0.1, states=["p", "v"], inputs=["a"])
    res = finite_horizon_lqr(dss, np.eye(2), np.eye(1), np.eye(2), N=30)
    ref = finite_horizon_lqr((np.tile(A2, (30, 1, 1)), np.tile(B2, (30, 1, 1))), np.eye(2), np.eye(1),
                             np.eye(2))
    np.testing.assert_array_equal(res.K, ref.K)
    assert res.dt == 0.1
    with pytest.raises(DesignError, match="horizon N="):
        finite_horizon_lqr(dss, np.eye(2), np.eye(1), np.eye(2))
    with pytest.raises(DesignError, match="discretize first"):
        finite_horizon_lqr(control.ss(A2, B2, np.eye(2), 0), np.eye(2), np.eye(1), np.eye(2), N=5)
    with pytest.raises(DesignError, match="carries its own horizon"):
        finite_horizon_lqr(DiscreteLTV.from_lti(A2, B2, 0.1, 4), np.eye(2), np.eye(1), np.eye(2), N=5)


def test_simulate_discrete_accepts_discrete_statespace():
    dss = control.ss(A2, B2, np.eye(2), 0, dt=0.1, states=["p", "v"], inputs=["a"])
    r = simulate_discrete(dss, [1.0, 0.0], u=np.array([0.5]), N=5)
    r_ref = simulate_discrete(DiscreteLTV.from_lti(A2, B2, 0.1, 5), [1.0, 0.0], u=np.array([0.5]))
    np.testing.assert_array_equal(r.x, r_ref.x)
    with pytest.raises(LinearSystemError, match="discretize first"):
        simulate_discrete(control.ss(A2, B2, np.eye(2), 0), [1.0, 0.0], N=5)


def test_lqr_error_names_unstabilisable_modes_and_states():
    sys = control.ss(np.diag([1.0, -1.0, 0.0]), [[1.0], [0.0], [0.0]], np.eye(3), 0,
                     states=["a", "b", "cyclic"])
    with pytest.raises(DesignError, match=r"not stabilisable.*eigenvalue 0j.*\['cyclic'\]") as err:
        lqr(sys, np.eye(3), np.eye(1))
    assert "ball-plate" not in str(err.value)


def test_linearization_eigenvalues_is_a_property():
    cm = bb.model()
    lin = linearize(cm, bb.steady_forward(cm, 2.0), bb.PARTITION_4_172)
    ev = lin.eigenvalues
    assert ev.shape == (10,)
    np.testing.assert_allclose(np.sort_complex(np.asarray(ev)),
                               np.sort_complex(np.linalg.eigvals(lin.A)), atol=1e-12)
    with pytest.warns(DeprecationWarning, match="property"):
        old = lin.eigenvalues()
    np.testing.assert_array_equal(old, ev)


@pytest.fixture(scope="module")
def bicycle_steer_lin():
    cm = bb.model(inputs=("T_delta",))
    return linearize(cm, bb.steady_forward(cm, 2.0), bb.PARTITION_4_172)


def test_reduced_statespace_of_the_bicycle(bicycle_steer_lin):
    lin = bicycle_steer_lin
    full = lin.to_statespace()
    with pytest.raises(DesignError, match=r"not stabilisable.*to_statespace\(states=\"reduced\"\)"):
        lqr(full, np.eye(10), np.eye(1))
    red = lin.to_statespace(states="reduced")
    assert red.state_labels == ["phi_b", "delta", "phi_b_d", "delta_d"]
    assert red.input_labels == ["T_delta"] and red.output_labels[0] == "phi_b"
    res = lqr(red, np.eye(4), np.eye(1))
    assert np.all(res.E.real < 0)
    K, _, _ = control.lqr(red, np.eye(4), np.eye(1))   # python-control directly
    np.testing.assert_allclose(K, res.K, rtol=1e-9)
    # the kept block reproduces the non-spurious, non-zero eigenvalues of the full system
    ev = np.asarray(lin.eigenvalues)
    np.testing.assert_allclose(np.sort_complex(np.linalg.eigvals(red.A)),
                               np.sort_complex(ev[np.abs(ev) > 1e-9]), atol=1e-9)


def test_statespace_with_named_states(bicycle_steer_lin):
    lin = bicycle_steer_lin
    sys = lin.to_statespace(states=["delta", "phi_b", "delta_d", "phi_b_d"])
    assert sys.state_labels == ["delta", "phi_b", "delta_d", "phi_b_d"]
    i = [list(lin.states).index(s) for s in sys.state_labels]
    np.testing.assert_array_equal(sys.A, lin.A[np.ix_(i, i)])
    with pytest.raises(LinearSystemError, match=r"cannot drop \['delta_d'\].*d\(phi_b_d\)/dt depends on"):
        lin.to_statespace(states=["phi_b", "delta", "phi_b_d"])
    with pytest.raises(LinearSystemError, match="valid names"):
        lin.to_statespace(states=["lean"])


def test_deviation_in_the_order_of_the_states(bicycle_steer_lin):
    lin = bicycle_steer_lin
    cm = bb.model(inputs=("T_delta",))
    ref = bb.steady_forward(cm, 2.0)
    ts = np.array([0.0, 0.7])
    x, xd = ref.x(ts).copy(), ref.xd(ts).copy()
    x[:, cm.coordinates.index("phi_b")] += 0.01
    xd[:, cm.coordinates.index("delta")] -= 0.02
    dX = lin.deviation(ref, ts, x, xd)
    assert dX.shape == (2, len(lin.states))
    expect = np.zeros(len(lin.states))
    expect[list(lin.states).index("phi_b")] = 0.01
    expect[list(lin.states).index("delta_d")] = -0.02
    np.testing.assert_allclose(dX, np.tile(expect, (2, 1)), atol=1e-12)
    np.testing.assert_allclose(lin.deviation(ref, 0.7, x[1], xd[1]), expect, atol=1e-12)
    with pytest.raises(LinearSystemError, match="must both be"):
        lin.deviation(ref, 0.0, x[0], xd[0, :3])


def test_output_matrix_on_ltv_and_discrete_ltv(tmp_path):
    """C = I unless given; names, python-control views, discretization, save/load carry it."""
    import control

    from nhcontrol.systems import DiscreteLTV, LTVSystem, discretize

    sys = LTVSystem(lambda t: [[0.0, 1.0], [-1.0 - 0.1 * np.cos(t), 0.0]], lambda t: [[0.0], [1.0]],
                    period=2 * np.pi, states=["q", "v"], inputs=["f"])
    assert sys.noutputs == 2 and sys.output_labels == ["q", "v"] and sys.has_identity_output
    meas = sys.with_outputs([[1.0, 0.0]], outputs=["q_meas"])
    assert meas.noutputs == 1 and meas.output_labels == ["q_meas"] and not meas.has_identity_output
    ss = meas.at(0.3)
    np.testing.assert_array_equal(ss.C, [[1.0, 0.0]])
    assert ss.output_labels == ["q_meas"] and ss.noutputs == 1
    assert sys.noutputs == 2                                       # the original is unchanged
    d = discretize(meas, 2 * np.pi / 20)
    assert d.output_labels == ["q_meas"] and d.at(3).output_labels == ["q_meas"]
    X = d.simulate([1.0, 0.0], np.zeros((d.nsteps, 1)))
    np.testing.assert_array_equal(d.output(X), X[:, :1])
    d2 = DiscreteLTV.load(d.save(tmp_path / "d"))
    np.testing.assert_array_equal(d2.C, d.C)
    assert d2.output_labels == ["q_meas"]
    assert LTVSystem.constant(np.eye(2), np.ones((2, 1)), C=[1.0, 1.0]).output_labels == ["y[0]"]
    with pytest.raises(LinearSystemError, match=r"C must have shape \(p, n\) = \(p, 2\)"):
        sys.with_outputs(np.ones((1, 3)))
    with pytest.raises(LinearSystemError, match="outputs must list 1 names"):
        sys.with_outputs([[1.0, 0.0]], outputs=["a", "b"])
    # a discrete python-control system keeps its C and output labels; a nonzero D is refused
    pc = control.ss(np.eye(2) * 0.9, [[0.0], [1.0]], [[0.0, 2.0]], 0, 0.1, states=["a", "b"],
                    outputs=["y2"])
    dd = DiscreteLTV.from_statespace(pc, 4)
    assert dd.output_labels == ["y2"] and dd.C.tolist() == [[0.0, 2.0]]
    with pytest.raises(LinearSystemError, match="nonzero feedthrough"):
        DiscreteLTV.from_statespace(control.ss(pc.A, pc.B, pc.C, 1.0, 0.1), 4)


def test_linear_simulations_report_the_outputs():
    """simulate_discrete / simulate_ltv give y = C x (+ D u) under the system's output names."""
    import control

    from nhcontrol.simulate import simulate_ltv
    from nhcontrol.systems import DiscreteLTV, LTVSystem

    d = DiscreteLTV.from_lti(0.9 * np.eye(2), [[0.0], [1.0]], 0.1, 5, states=["a", "b"], inputs=["f"],
                             C=[[1.0, 2.0]], outputs=["s"])
    r = simulate_discrete(d, [1.0, 1.0], u=np.ones((5, 1)))
    np.testing.assert_allclose(r.y[:, 0], r.x[:, 0] + 2 * r.x[:, 1])
    resp = r.to_response()
    assert resp.output_labels == ["s"] and resp.state_labels == ["a", "b"]
    np.testing.assert_allclose(np.asarray(resp.outputs).reshape(-1), r.y[:, 0])
    plain = simulate_discrete(DiscreteLTV.from_lti(0.9 * np.eye(2), [[0.0], [1.0]], 0.1, 5), [1.0, 1.0])
    assert plain.output_labels == ["x[0]", "x[1]"] and plain.y is plain.x
    sys = LTVSystem.constant(-np.eye(2), [[0.0], [1.0]], states=["a", "b"], inputs=["f"], C=[[0.0, 1.0]],
                             outputs=["b_meas"])
    rc = simulate_ltv(sys, (0.0, 1.0), [1.0, 0.0], u=lambda t: [1.0], t_eval=np.linspace(0, 1, 11))
    np.testing.assert_allclose(rc.y[:, 0], 1.0 - np.exp(-rc.t), atol=1e-6)
    ss = control.ss(-np.eye(2), [[0.0], [1.0]], [[1.0, 0.0]], [[0.5]], inputs=["f"], outputs=["q"])
    rs = simulate_ltv(ss, (0.0, 1.0), [1.0, 0.0], u=lambda t: [2.0], t_eval=np.linspace(0, 1, 5))
    np.testing.assert_allclose(rs.y[:, 0], rs.x[:, 0] + 1.0, atol=1e-12)
    assert rs.output_labels == ["q"]


def test_change_of_variables_refuses_an_output_map():
    from nhcontrol.systems import LTVSystem, change_of_variables

    sys = LTVSystem.constant(-np.eye(2), [[0.0], [1.0]], C=[[1.0, 0.0]])
    with pytest.raises(LinearSystemError, match="time-varying"):
        change_of_variables(sys, lambda t: np.eye(2), lambda t: np.zeros((2, 2)))
    z = change_of_variables(sys.with_outputs(), lambda t: 2 * np.eye(2), lambda t: np.zeros((2, 2)))
    assert z.noutputs == 2
