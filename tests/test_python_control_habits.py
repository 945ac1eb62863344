"""A python-control user's habits: ``K, S, E = lqr(...)`` in python-control's
order and meaning, the cross weight ``N``, scalar and 1-D weights, ``dlqr``; a controller from
``control.create_statefbk_iosystem`` on the nonlinear bicycle (forward_dynamics and
interconnect, no renaming); selection of states/outputs by name; concise reprs."""

from __future__ import annotations

import math
import warnings

import control
import numpy as np
import pytest

from nhcontrol._util.errors import DesignError, LinearSystemError, SolverError
from nhcontrol.design import LQRResult, dlqr, finite_horizon_lqr, lqr
from nhcontrol.systems import DiscreteLTV, LTVSystem, discretize

A2 = np.array([[0.0, 1.0], [2.0, -0.5]])
B2 = np.array([[0.0], [1.0]])


@pytest.fixture(scope="module")
def sys2():
    return control.ss(A2, B2, np.eye(2), 0, states=["q", "v"], inputs=["F"])


def test_unpacks_as_python_control(sys2):
    Q, R = np.diag([3.0, 1.0]), np.array([[0.5]])
    res = lqr(sys2, Q, R)
    K, S, E = res
    Kc, Sc, Ec = control.lqr(sys2, Q, R)
    np.testing.assert_allclose(K, Kc, rtol=1e-10)
    np.testing.assert_allclose(S, Sc, rtol=1e-9)             # S is the Riccati solution
    np.testing.assert_allclose(np.sort_complex(E), np.sort_complex(Ec), rtol=1e-9)
    # the CARE holds for S: AᵀS + SA − SBR⁻¹BᵀS + Q = 0
    res_are = A2.T @ S + S @ A2 - S @ B2 @ np.linalg.solve(R, B2.T @ S) + Q
    assert np.max(np.abs(res_are)) < 1e-9
    assert res[0] is res.K and res.S is res.P and len(res) == 3
    assert isinstance(res, LQRResult) and res.riccati_residual[0] < 1e-12
    Kf, Pf, Ef = finite_horizon_lqr((np.eye(2), np.ones((2, 1))), np.eye(2), 1.0, np.eye(2))
    assert Kf.shape == (1, 1, 2) and Pf.shape == (2, 2, 2) and Ef is None


def test_cross_weight_is_N_and_S_is_deprecated(sys2):
    Q, R, N = np.eye(2), np.eye(1), np.array([[0.1], [0.2]])
    K, S, E = lqr(sys2, Q, R, N)
    Kc, Sc, _ = control.lqr(sys2, Q, R, N)
    np.testing.assert_allclose(K, Kc, rtol=1e-10)
    np.testing.assert_allclose(S, Sc, rtol=1e-9)
    with pytest.warns(DeprecationWarning, match="cross weight is called N"):
        old = lqr(sys2, Q, R, S=N)
    np.testing.assert_array_equal(old.K, K)
    with pytest.raises(DesignError, match="give the cross weight once"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        lqr(sys2, Q, R, N, S=N)
    with pytest.raises(DesignError, match=r"\[\[Q, N\], \[Nᵀ, R\]\]"):
        lqr(sys2, Q, R, 10 * np.ones((2, 1)))


def test_scalar_and_1d_weights(sys2):
    ref = lqr(sys2, np.diag([3.0, 1.0]), np.array([[0.5]]))
    for Q, R in (([3.0, 1.0], 0.5), (np.array([3.0, 1.0]), [0.5]), (np.diag([3.0, 1.0]), 0.5)):
        np.testing.assert_allclose(lqr(sys2, Q, R).K, ref.K, rtol=1e-12)
    np.testing.assert_allclose(lqr(sys2, 2.0, 1.0).K, control.lqr(sys2, 2 * np.eye(2), 1.0)[0], rtol=1e-10)
    fh = finite_horizon_lqr((A2, B2), [3.0, 1.0], 0.5, 1.0)
    fh2 = finite_horizon_lqr((A2, B2), np.diag([3.0, 1.0]), [[0.5]], np.eye(2))
    np.testing.assert_array_equal(fh.K, fh2.K)
    with pytest.raises(DesignError, match=r"Q must have shape \(2, 2\)"):
        lqr(sys2, [1.0, 2.0, 3.0], 1.0)


def test_dlqr(sys2):
    dsys = control.c2d(sys2, 0.05)
    K, S, E = dlqr(dsys, np.eye(2), 1.0)
    Kc, Sc, Ec = control.dlqr(dsys, np.eye(2), np.eye(1))
    np.testing.assert_allclose(K, Kc, rtol=1e-9)
    np.testing.assert_allclose(S, Sc, rtol=1e-9)
    assert np.all(np.abs(E) < 1.0)
    with pytest.raises(DesignError, match="continuous"):
        dlqr(sys2, np.eye(2), 1.0)
    assert "dare" in repr(lqr(dsys, np.eye(2), 1.0))


def test_reprs_are_concise(sys2):
    r = repr(lqr(sys2, np.eye(2), 1.0))
    assert r.startswith("LQRResult(care") and "[" not in r.split("K")[1] and "\n" not in r
    lt = LTVSystem(lambda t: A2 * (1 + 0.1 * np.cos(t)), B2, period=2 * np.pi, states=["q", "v"], inputs=["F"])
    assert repr(lt) == "<LTVSystem periodic: 2 states [q, v], 1 inputs [F], period=6.28319>"
    assert "<table>" in lt._repr_html_()
    d = discretize(LTVSystem.constant(A2, B2, states=["q", "v"]), 0.1, steps=10)
    assert "\n" not in repr(d) and "10 steps" in repr(d) and "[q, v]" in repr(d)
    assert "<table>" in d._repr_html_()


def test_select_by_name():
    A = np.array([[0.0, 1.0, 0.0], [-2.0, -0.1, 0.0], [1.0, 0.0, 0.0]])   # c is cyclic: nothing reads it
    B = np.array([[0.0], [1.0], [0.0]])
    s = LTVSystem(lambda t: A * (1 + 0.2 * np.sin(t)), lambda t: B, period=2 * np.pi,
                  states=["q", "v", "c"], inputs=["F"], dA=lambda t, k: A * 0.2 * np.sin(t + k * np.pi / 2))
    r = s.select(states=["v", "q"])
    assert r.state_labels == ["v", "q"] and r.output_labels == ["v", "q"]
    np.testing.assert_array_equal(r.A(0.7), s.A(0.7)[np.ix_([1, 0], [1, 0])])
    np.testing.assert_allclose(r.derivative("A", 0.7, 2), s.derivative("A", 0.7, 2)[np.ix_([1, 0], [1, 0])])
    with pytest.raises(LinearSystemError, match="'q' depends on the dropped state 'v'"):
        s.select(states=["q", "c"])
    with pytest.raises(LinearSystemError, match=r"unknown states \['vv'\].*'vv' -> 'v'"):
        s.select(states=["q", "vv"])
    o = s.select(outputs=["q"])
    assert o.output_labels == ["q"] and o.C.tolist() == [[1.0, 0.0, 0.0]]
    with pytest.raises(LinearSystemError, match="output 'c' reads the dropped state 'c'"):
        s.select(states=["q", "v"], outputs=["c"])
    d = discretize(s, 0.1, steps=10)
    dr = d.select(states=["q", "v"], outputs=["v"])
    np.testing.assert_array_equal(dr.Ad, d.Ad[:, :2, :2])
    assert dr.output_labels == ["v"] and dr.C.tolist() == [[0.0, 1.0]]
    with pytest.raises(LinearSystemError, match="at step"):
        d.select(states=["c"])


# --------------------------------------------------------------------------- the nonlinear plant
@pytest.fixture(scope="module")
def bicycle():
    from nhcontrol.linearization import linearize
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.simulate import consistent_initial_conditions

    cm = bb.model(inputs=("T_delta",))
    ref = bb.steady_forward(cm, 5.0)
    lin = linearize(cm, ref, bb.PARTITION_4_172)
    x, xd = ref.x(0.0).copy(), ref.xd(0.0).copy()
    x[cm.coordinates.index("phi_b")] = math.radians(2.0)
    ic = consistent_initial_conditions(cm, x, xd, partition=bb.PARTITION_4_172)
    return cm, ref, lin, np.asarray(ic.x), np.asarray(ic.xd)


def test_statefbk_controller_on_the_nonlinear_plant(bicycle):
    from nhcontrol.simulate import forward_dynamics, to_nlsys

    cm, ref, lin, x0, xd0 = bicycle
    sys = lin.to_statespace(states=["phi_b", "delta", "phi_b_d", "delta_d"])
    assert sys.output_labels == sys.state_labels == ["phi_b", "delta", "phi_b_d", "delta_d"]
    K, _, E = lqr(sys, [10.0, 10.0, 1.0, 1.0], 1.0)
    ctrl, _ = control.create_statefbk_iosystem(sys, K)        # inputs xd[i], ud[0], the states
    assert ctrl.input_labels[-4:] == sys.state_labels
    te = np.linspace(0.0, 3.0, 7)
    res = forward_dynamics(cm, (0.0, 3.0), x0, xd0, controller=ctrl, linearization=lin, reference=ref,
                           t_eval=te)
    idx = [list(lin.states).index(s) for s in sys.state_labels]

    def by_hand(t, x, xd):
        return np.asarray(ref.u(t)).reshape(-1) - K @ lin.deviation(ref, t, x, xd)[idx]
    res0 = forward_dynamics(cm, (0.0, 3.0), x0, xd0, controller=by_hand, t_eval=te)
    np.testing.assert_allclose(res.x, res0.x, atol=1e-9)
    iphi = cm.coordinates.index("phi_b")
    assert abs(res.x[-1, iphi]) < 0.1 * math.radians(2.0)   # levelled (open loop at 5 m/s: weave)
    # the same controller closes the loop around the nonlinear plant with control.interconnect
    plant = to_nlsys(cm)
    clsys = control.interconnect([plant, ctrl], inputs=ctrl.input_labels[:5],
                                 outputs=["phi_b", "T_delta"], check_unused=False)
    xref = np.array([ref.x(0.0)[cm.coordinates.index(s)] if s in cm.coordinates else
                     ref.xd(0.0)[cm.coordinates.index(s[:-2])] for s in sys.state_labels])
    ud = np.asarray(ref.u(0.0)).reshape(-1)
    U = np.concatenate([xref, ud])[:, None] * np.ones((1, te.size))
    resp = control.input_output_response(clsys, te, U, X0=np.concatenate([x0, xd0]),
                                         solve_ivp_kwargs=dict(rtol=1e-9, atol=1e-11))
    np.testing.assert_allclose(resp.outputs[0], res.x[:, iphi], atol=2e-6)


def test_mismatched_names_give_a_correct_hint(bicycle):
    from nhcontrol.simulate import forward_dynamics

    cm, ref, lin, x0, xd0 = bicycle
    K = np.ones((1, 2))
    old = control.ss(np.zeros((0, 0)), np.zeros((0, 2)), np.zeros((1, 0)), -K,
                     inputs=["y_phi_b", "y_delta"], outputs=["T_delta"])
    with pytest.raises(SolverError, match=r"'y_phi_b' -> 'phi_b'.*create_statefbk_iosystem") as exc:
        forward_dynamics(cm, (0.0, 0.1), x0, xd0, controller=old, linearization=lin, reference=ref)
    assert "reduced').state_labels" not in str(exc.value)
