"""State selection that knows the physics, on a two-wheeled self-balancing robot written with
sympy.physics.mechanics (``tests/_twowheel.py``: 6 coordinates, 3 nonholonomic constraints,
9 states).

Closed forms (derived in the model's docstring): straight running conserves
``x − r(φL + φR)/2`` and ``ψ − r(φR − φL)/d`` (r = 0.1, d = 0.4: coefficients 0.05 and 0.25),
which no torque moves; every other direction is controllable.
"""

from __future__ import annotations

import control
import numpy as np
import pytest

import _twowheel as tw
from nhcontrol import linearize
from nhcontrol._util.errors import DesignError
from nhcontrol.analysis import kalman_decomposition
from nhcontrol.design import lqr

R, D = tw.VALUES["r"], tw.VALUES["d"]


@pytest.fixture(scope="module")
def robot():
    cm = tw.build().compile()
    ref = tw.straight_running(cm, 0.5)
    return cm, ref, linearize(cm, ref, tw.PARTITION)


def test_kalman_decomposition_names_the_two_conserved_directions(robot):
    _, _, lin = robot
    assert lin.nstates == 9
    kd = kalman_decomposition(lin)
    assert kd.controllability.rank == 7
    sv = kd.controllability.singular_values
    assert sv[6] > 100 * kd.controllability.tol and sv[7] < 1e-6 * kd.controllability.tol
    assert [c.pivot for c in kd.uncontrollable] == ["x", "psi"]
    assert all(c.conserved for c in kd.uncontrollable) and len(kd.conserved) == 2
    names = list(lin.states)
    want = {"x": {"x": 1.0, "phiL": -R / 2, "phiR": -R / 2}, "psi": {"psi": 1.0, "phiL": R / D, "phiR": -R / D}}
    for c in kd.uncontrollable:
        expect = np.zeros(9)
        for s, v in want[c.pivot].items():
            expect[names.index(s)] = v
        np.testing.assert_allclose(c.coefficients, expect, atol=1e-10)
        assert set(c.carriers) == set(want[c.pivot])
        # conserved: w A = 0 and w B = 0 for the linearization itself
        assert np.abs(c.coefficients @ lin.A).max() < 1e-9 and np.abs(c.coefficients @ lin.B).max() < 1e-9
    assert [str(c) for c in kd.uncontrollable] == ["x - 0.05 phiL - 0.05 phiR", "psi + 0.25 phiL - 0.25 phiR"]
    # the controllable part keeps the wheels, the pitch and y
    assert kd.kept_states == ("theta", "phiL", "phiR", "theta_d", "phiL_d", "phiR_d", "y")
    # the other choice of pivots keeps x and psi
    alt = kalman_decomposition(lin, pivot_order=["phiL", "phiR"])
    assert [c.pivot for c in alt.uncontrollable] == ["phiL", "phiR"] and "x" in alt.kept_states
    assert "KalmanDecomposition(nstates=9, controllable=7" in repr(kd)


def test_lqr_refusal_lists_every_direction(robot):
    _, _, lin = robot
    with pytest.raises(DesignError) as err:
        lqr(lin.to_statespace(), np.eye(9), np.eye(2))
    msg = str(err.value)
    assert "rank [A - λI, B] = 7 < 9" in msg and "2 direction(s) no input moves" in msg
    assert "carried by ['phiL', 'phiR', 'x', 'psi']" in msg
    assert "kalman_decomposition(sys).controllable_subsystem()" in msg
    # the linearization itself: the same refusal, pivoted on x_ad as the decomposition
    with pytest.raises(DesignError) as err:
        lqr(lin, np.eye(9), np.eye(2))
    assert "x - 0.05 phiL - 0.05 phiR; psi + 0.25 phiL - 0.25 phiR" in str(err.value)


def test_controllable_subsystem_balances_the_robot(robot):
    """LQR on the named controllable subsystem; its gain on the full state leaves only the two
    conserved directions at zero; the nonlinear robot balances from a pitch offset and the
    wheels keep the reference speed."""
    cm, ref, lin = robot
    kd = kalman_decomposition(lin)
    sub = kd.controllable_subsystem(name="robot_c")
    assert sub.state_labels == list(kd.kept_states) and sub.input_labels == ["TL", "TR"]
    assert control.ctrb(sub.A, sub.B).shape == (7, 14)
    assert np.linalg.matrix_rank(control.ctrb(sub.A, sub.B)) == 7
    Kc, _, E = lqr(sub, np.eye(7), np.eye(2))
    assert np.all(E.real < 0)
    K = kd.full_gain(Kc)
    ev = np.sort_complex(np.linalg.eigvals(lin.A - lin.B @ K))
    assert np.sum(np.abs(ev) < 1e-8) == 2 and np.all(ev[np.abs(ev) >= 1e-8].real < 0)
    # python-control's state-feedback controller on the subsystem drives the nonlinear robot
    from nhcontrol.simulate import forward_dynamics

    ctrl, _ = control.create_statefbk_iosystem(sub, Kc)
    x0, xd0 = ref.x(0.0), ref.xd(0.0)
    x0 = x0.copy()
    x0[tw.COORDS.index("theta")] = 0.1
    res = forward_dynamics(cm, (0.0, 4.0), x0, xd0, controller=ctrl, sample_time=0.005,
                           linearization=lin, reference=ref, t_eval=np.linspace(0, 4.0, 41))
    th = res.x[:, tw.COORDS.index("theta")]
    assert abs(th[0]) == pytest.approx(0.1) and abs(th[-1]) < 1e-3
    wheel_speed = res.xd[-1, tw.COORDS.index("phiL")]
    assert wheel_speed == pytest.approx(0.5 / R, abs=0.1)          # 5 rad/s, within 2 %


def test_kanes_method_with_dependent_speeds_is_accepted(robot):
    """The same robot as a KanesMethod with dependent speeds (no configuration constraint)
    gives the same linearization as the System."""
    _, ref, lin = robot
    cm_k = tw.build("kane").compile()
    lin_k = linearize(cm_k, tw.straight_running(cm_k, 0.5), tw.PARTITION)
    assert lin_k.states == lin.states
    np.testing.assert_allclose(lin_k.A, lin.A, atol=1e-10 * np.abs(lin.A).max())
    np.testing.assert_allclose(lin_k.B, lin.B, atol=1e-10 * np.abs(lin.B).max())


def test_reference_signals_in_the_order_of_the_states(robot):
    _, ref, lin = robot
    T = np.linspace(0.0, 2.0, 5)
    sig = lin.reference_signals(ref, T)
    assert sig.state_labels == lin.states and sig.input_labels == ("TL", "TR")
    i = list(lin.states).index
    np.testing.assert_allclose(sig.xd[i("x")], 0.5 * T, atol=1e-12)
    np.testing.assert_allclose(sig.xd[i("phiL")], 0.5 / R * T, atol=1e-12)
    np.testing.assert_allclose(sig.xd[i("phiR_d")], 0.5 / R, atol=1e-12)
    np.testing.assert_allclose(sig.ud, 0.0, atol=1e-12)
    assert sig.U.shape == (11, 5) and sig.labels[:2] == ["xd[0]", "xd[1]"] and sig.labels[-1] == "ud[1]"
    # a python-control state-feedback controller fed with them commands u0 on the reference
    sub = kalman_decomposition(lin).controllable_subsystem()
    Kc = lqr(sub, np.eye(7), np.eye(2)).K
    ctrl, _ = control.create_statefbk_iosystem(sub, Kc)
    s2 = lin.reference_signals(ref, T, states=sub)
    assert s2.state_labels == tuple(sub.state_labels)
    u = ctrl.output(1.0, [], np.concatenate([s2.U[:, 2], s2.xd[:, 2]]))
    np.testing.assert_allclose(u, s2.ud[:, 2], atol=1e-12)


def test_reference_from_op_point_robot(robot):
    """sympy's op_point of straight running (speeds u through the kinematic equations) is the
    same steady Reference as the closed form."""
    from nhcontrol.interop import reference_from_op_point

    cm, ref, lin = robot
    model, sy, (TL, TR) = tw.sympy_model()
    q, u = model.q, model.u
    speeds = {"x_u": 0.5, "phiL_u": 0.5 / R, "phiR_u": 0.5 / R}
    op = {**{s: 0.0 for s in q}, **{s: speeds.get(s.name if hasattr(s, "name") else type(s).__name__, 0.0)
                                     for s in u}, TL: 0.0, TR: 0.0}
    r2 = reference_from_op_point(cm, [op, {sy["g"]: 9.81}], model)
    assert r2.steady
    np.testing.assert_allclose(r2.xd(0.0), ref.xd(0.0), atol=1e-14)
    np.testing.assert_allclose(linearize(cm, r2, tw.PARTITION).A, lin.A, atol=1e-12)
    from nhcontrol._util.errors import InteropError

    with pytest.raises(InteropError, match=r"no value to the coordinates \['x'"):
        reference_from_op_point(cm, {TL: 0.0})
    with pytest.raises(InteropError, match=r"pass the sympy model \(model=...\)"):
        reference_from_op_point(cm, op)


def test_reference_from_op_point_matches_kanes_linearize():
    """sympy's pendulum on a cart at a non-equilibrium point with accelerations: the op_point
    dictionary sympy linearizes at gives the same A, B through nhcontrol (1e-12)."""
    import sympy as sp
    import sympy.physics.mechanics as me
    from sympy.physics.mechanics.models import n_link_pendulum_on_cart

    from nhcontrol.interop import from_sympy_mechanics, reference_from_op_point
    from nhcontrol.linearization import index1_accelerations

    kane = n_link_pendulum_on_cart(1, cart_force=True, joint_torques=False)
    g, l0, m0, m1 = sp.symbols("g l0 m0 m1")
    vals = {g: 9.81, l0: 0.8, m0: 1.0, m1: 0.6}
    F = me.dynamicsymbols("F")
    cm = from_sympy_mechanics(kane, vals, inputs=[F], name="cart_pendulum_op").compile()
    x, xd, Fv = np.array([0.2, 0.4]), np.array([-0.3, 0.5]), 0.7
    xdd = np.asarray(index1_accelerations(cm, x, xd, [Fv])[0])
    op = {**dict(zip(kane.q, x)), **dict(zip(kane.u, xd)), **{s.diff(): a for s, a in zip(kane.u, xdd)}, F: Fv}
    ref = reference_from_op_point(cm, [op, vals], kane)
    assert not ref.steady
    lin = linearize(cm, ref, dict(independent=list(cm.coordinates)), 0.0)
    A, B = kane.linearize(A_and_B=True, op_point=[op, vals])[:2]
    A, B = np.array(A.evalf(), dtype=float), np.array(B.evalf(), dtype=float)
    assert np.abs(lin.A - A).max() <= 1e-12 * max(1.0, np.abs(A).max())
    assert np.abs(lin.B - B).max() <= 1e-12 * max(1.0, np.abs(B).max())


def test_bicycle_conserved_combinations_come_first():
    """Benchmark bicycle (Meijaard et al. 2007: wheel radii rR = 0.3 m, rF = 0.35 m) at 5 m/s,
    steer torque only: the forward speed and the wheel angles rolled with it are conserved
    (theta_R - x_b/rR, theta_F - x_b/rF, x_b_d); x_b itself is driven by the speed."""
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model(inputs=("T_delta",))
    lin = linearize(cm, bb.steady_forward(cm, 5.0), bb.PARTITION_4_172)
    kd = kalman_decomposition(lin)
    assert kd.controllability.rank == 6
    names = list(lin.states)
    conserved = {c.pivot: c for c in kd.conserved}
    assert set(conserved) == {"theta_R", "theta_F", "x_b_d"}
    for wheel, radius in (("theta_R", 0.3), ("theta_F", 0.35)):
        want = np.zeros(10)
        want[names.index(wheel)], want[names.index("x_b")] = 1.0, -1.0 / radius
        np.testing.assert_allclose(conserved[wheel].coefficients, want, atol=1e-9)
    driven = [c for c in kd.uncontrollable if not c.conserved]
    assert [c.pivot for c in driven] == ["x_b"] and np.isnan(driven[0].rate)
    assert kd.kept_states == ("phi_b", "delta", "phi_b_d", "delta_d", "y_b", "psi_b")


def test_python_control_closes_the_nonlinear_loop_with_reference_signals(robot):
    """to_nlsys plant + create_statefbk_iosystem controller on the named controllable subsystem,
    driven by lin.reference_signals (the wheel angles of the reference grow as 5 t): no name is
    mapped by hand, and the robot balances from a 0.1 rad pitch offset."""
    from nhcontrol.simulate import to_nlsys

    cm, ref, lin = robot
    sub = kalman_decomposition(lin).controllable_subsystem()
    ctrl, _ = control.create_statefbk_iosystem(sub, lqr(sub, np.eye(7), np.eye(2)).K)
    plant = to_nlsys(cm)
    desired = [s for s in ctrl.input_labels if s.startswith(("xd[", "ud["))]
    loop = control.interconnect([plant, ctrl], inputs=desired, outputs=plant.output_labels)
    T = np.linspace(0.0, 3.0, 61)
    sig = lin.reference_signals(ref, T, states=sub)
    assert sig.labels == desired
    x0 = np.concatenate([ref.x(0.0), ref.xd(0.0)])
    x0[tw.COORDS.index("theta")] = 0.1
    resp = control.input_output_response(loop, T, sig.U, X0=x0)
    i = plant.state_labels.index
    assert abs(resp.states[i("theta"), -1]) < 5e-3
    assert resp.states[i("phiL_d"), -1] == pytest.approx(0.5 / R, abs=0.2)


def test_badly_scaled_states_are_balanced():
    """Hydraulic four-bar (thesis Ch. 7; pressures in Pa beside angles in rad): unscaled, the
    decomposition finds the rank of the hand-scaled pair of examples/hydraulic_fourbar_control.py
    (5 of 6, one conserved direction: the states are balanced before the rank decision)."""
    from nhcontrol.analysis import rank_decision
    from nhcontrol.models import hydraulic_fourbar as hf

    lin = hf.linearization(60.0, 3.5e6)
    A, B = np.asarray(lin.A), np.asarray(lin.B)
    kd = kalman_decomposition((A, B), states=list(lin.states))
    scale = np.diag([1.0, 1.0, 1e-6, 1e-6, 1e-6, 1.0])          # MPa, as the example does
    pbh0 = rank_decision(np.hstack([scale @ A @ np.linalg.inv(scale), scale @ B]), rtol=1e-9)
    assert kd.controllability.rank == pbh0.rank == 5           # one direction, at λ = 0
    (w,) = kd.uncontrollable
    assert w.conserved and w.pivot == "phi2"
    assert np.abs(w.coefficients @ A).max() <= 1e-9 * np.abs(A).max() and not np.any(w.coefficients @ B)


def test_time_varying_linearization_is_refused_with_the_ltv_tools():
    """The catalogue's self-balancing robot on a circle: A(t), B(t) vary with time, so the LTI
    decomposition refuses and names the LTV tools (and the frozen-pair form)."""
    from nhcontrol._util.errors import LinearSystemError
    from nhcontrol.models import self_balancing_robot as sbr

    cm = sbr.model()
    lin = linearize(cm, sbr.circle(cm), sbr.PARTITION)
    with pytest.raises(LinearSystemError, match=r"not steady.*gramian or silverman_meadows"):
        kalman_decomposition(lin)
    frozen = kalman_decomposition((lin.A, lin.B), states=lin.states)
    assert frozen.nstates == 9 and frozen.controllability.rank < 9
