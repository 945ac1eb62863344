"""`LTVMPC._dense_step`: the condensed DAQP step of the MPC and RTI controllers without the
checks of data they made themselves, the solver chain and the `MPCStep`. It must give the
numbers of `LTVMPC.step` bit for bit, keep the same state for the next step, and hand every
case it does not cover (a DAQP failure, state bounds, non-finite data) back to `step`."""

from __future__ import annotations

import numpy as np
import pytest

from nhcontrol._util.errors import DesignError, SolverError

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _loop(t_final, name, lean):
    """A short ``reproduce nmpc`` ball-plate loop (rate and angle bounds active at the start)
    with the lean step on or off; the controller."""
    from nhcontrol.applications.ball_plate_control import ball_plate_nmpc_setup
    from nhcontrol.design import MPCController, NMPCController
    from nhcontrol.models import ball_plate as bp
    from nhcontrol.reproduce import nmpc as rn
    from nhcontrol.simulate import forward_dynamics
    from nhcontrol.systems import LTVSystem, discretize, restrict

    case = ball_plate_nmpc_setup()
    cm, plant, x0, xd0, ref, red, dt = (case.cm, case.plant, case.x0, case.xd0, case.ref,
                                        case.red, case.dt)
    steps = int(round(t_final / dt))
    if name == "ltv_mpc":
        full = LTVSystem.from_linearization(cm, ref, bp.PARTITION_8_72)
        dsys = discretize(restrict(full, red.S, red.P, states=red.states), dt,
                          steps=steps + 2 * rn.HORIZON)
        c = MPCController(dsys, ref, rn.HORIZON, case.Q7, case.R, deviation=case.deviation,
                          **case.bounds)
    else:
        c = NMPCController(cm, ref, bp.PARTITION_8_72, rn.HORIZON, case.Q8, case.R, dt=dt,
                           steps=steps + 1, mode="rti", **case.bounds)
    calls = {"lean": 0, "step": 0}
    dense, step = c.mpc._dense_step, c.mpc.step

    def counted_dense(*a):
        got = dense(*a) if lean else None
        calls["lean"] += got is not None
        return got

    def counted_step(*a, **kw):
        calls["step"] += 1
        return step(*a, **kw)
    c.mpc._dense_step, c.mpc.step = counted_dense, counted_step
    forward_dynamics(plant, (0.0, steps * dt), x0, xd0, controller=c, rtol=1e-8, atol=1e-10,
                     t_eval=dt * np.arange(steps + 1))
    return c, calls


@pytest.mark.parametrize("name", ["ltv_mpc", "rti"])
def test_the_lean_step_gives_the_inputs_and_plans_of_step_bit_for_bit(name):
    """1 s of each loop, once through `_dense_step` and once through `step` alone: the same
    inputs, statuses and plans (predicted states and inputs) bit for bit, and the lean step
    answered every sample."""
    lean, calls = _loop(1.0, name, True)
    full, calls_full = _loop(1.0, name, False)
    n = len(lean.history)
    assert n > 15 and calls == {"lean": n, "step": 0} and calls_full["step"] == n
    assert [r.status for r in lean.history] == [r.status for r in full.history]
    np.testing.assert_array_equal(np.array([r.u for r in lean.history]),
                                  np.array([r.u for r in full.history]))
    for a, b in zip(lean._plan[1:4], full._plan[1:4]):
        np.testing.assert_array_equal(a, b)


def _mpc(**kw):
    from nhcontrol.design import LTVMPC

    rng = np.random.default_rng(3)
    N, n, k = 8, 3, 1
    A = np.repeat((np.eye(n) + 0.1 * rng.standard_normal((n, n)))[None], N, axis=0)
    B = np.repeat(rng.standard_normal((n, k))[None], N, axis=0)
    mpc = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), u_min=-0.3, u_max=0.3, du_min=-0.1,
                 du_max=0.1, **kw)
    return mpc, A, B, np.array([1.0, -0.5, 0.2]), np.zeros((N, k)), np.zeros(k)


@pytest.mark.parametrize("condensing", ["c", "numpy"])
def test_the_lean_step_keeps_the_state_step_keeps(condensing):
    """After a lean step the controller's remembered previous input, multipliers and QP are
    those `step` leaves: a following `step` gives the same answer either way; with the
    compiled condensing and with the numpy recursions of a machine without a compiler."""
    a, A, B, x0, ur, up = _mpc()
    b, *_ = _mpc()
    if condensing == "numpy":
        for m in (a, b):
            m._dense._clib, m._dense._clib_tried = None, True
    got = a._dense_step(x0, A, B, up, ur, None, None, None, None, None)
    st = b.step(x0, A, B, u_prev=up, u_ref=ur)
    assert got is not None
    np.testing.assert_array_equal(got[0], st.u)
    np.testing.assert_array_equal(got[1], st.predicted_x)
    np.testing.assert_array_equal(got[2], st.predicted_u)
    np.testing.assert_array_equal(got[3](), st.duals)
    np.testing.assert_array_equal(a._u_last, b._u_last)
    x1 = A[0] @ x0 + B[0] @ got[0]
    np.testing.assert_array_equal(a.step(x1, A, B, u_ref=ur).u, b.step(x1, A, B, u_ref=ur).u)


def test_the_lean_step_hands_back_what_it_does_not_cover():
    """None (the caller then runs `step`) without the condensed path, with state bounds, for
    other shapes, for a non-finite reference input (a NaN bound would be no bound: `step`
    names it) and when DAQP does not answer "optimal"; `step` then reports as always."""
    a, A, B, x0, ur, up = _mpc(qp_solver="osqp")
    assert a._dense_step(x0, A, B, up, ur, None, None, None, None, None) is None
    a, *_ = _mpc(x_min=[-5.0, -np.inf, -np.inf])
    assert a._dense_step(x0, A, B, up, ur, None, None, None, None, None) is None
    a, *_ = _mpc()
    assert a._dense_step(x0, A[:-1], B[:-1], up, ur, None, None, None, None, None) is None
    bad = ur.copy()
    bad[3, 0] = np.nan
    assert a._dense_step(x0, A, B, up, bad, None, None, None, None, None) is None
    with pytest.raises(DesignError, match="u_ref"):
        a.step(x0, A, B, u_prev=up, u_ref=bad)
    # infeasible: the rate bound cannot reach the input bound from u_prev = 1 (outside)
    far = np.array([1.0])
    a, *_ = _mpc()
    assert a._dense_step(x0, A, B, far, ur, None, None, None, None, None) is None
    with pytest.raises(SolverError, match="DAQP: infeasible; OSQP: infeasible"):
        a.step(x0, A, B, u_prev=far, u_ref=ur)


def test_a_nan_in_the_window_never_gives_an_input():
    """A non-finite entry of the window, the state, the constant terms or the linear cost (not
    checked by the lean step) reaches the solution, which is checked: None, and `step` names
    the array. A new terminal weight is checked by both (named at once)."""
    a, A, B, x0, ur, up = _mpc()
    N, n, k = 8, 3, 1
    base = dict(x0=x0, A=A, B=B, c=np.zeros((N, n)), qx=np.zeros((N + 1, n)),
                qu=np.zeros((N, k)), Qf=np.eye(n))
    names = {"x0": "x0", "A": "Ad", "B": "Bd", "c": "c", "qx": "q_x", "qu": "q_u", "Qf": "Qf"}
    for key, where in (("A", (5, 1, 2)), ("B", (7, 2, 0)), ("x0", (1,)), ("c", (3, 0)),
                       ("qx", (8, 2)), ("qu", (2, 0)), ("Qf", (0, 0))):
        d = {name: v.copy() for name, v in base.items()}
        d[key][where] = np.nan
        a, *_ = _mpc()
        if key == "Qf":
            with pytest.raises(DesignError, match="Qf"):
                a._dense_step(d["x0"], d["A"], d["B"], up, ur, d["Qf"], d["c"], d["qx"],
                              d["qu"], None)
        else:
            assert a._dense_step(d["x0"], d["A"], d["B"], up, ur, d["Qf"], d["c"], d["qx"],
                                 d["qu"], None) is None, key
        with pytest.raises(DesignError, match=names[key]):
            a.step(d["x0"], d["A"], d["B"], u_prev=up, u_ref=ur, Qf=d["Qf"], c=d["c"],
                   q_x=d["qx"], q_u=d["qu"])


def test_the_offset_free_controller_gives_the_same_loop_through_the_lean_step():
    """The offset-free MPC (disturbance estimate in ``c``, target in ``q_x``, ``q_u``; the
    input bound active at the start): 120 samples with the lean step and with `step` alone,
    inputs bit for bit; the lean step answered every sample."""
    from nhcontrol.design import OffsetFreeMPCController
    from nhcontrol.systems import DiscreteLTV

    from _toy_models import ZeroRef

    h = 0.1
    A = np.array([[1.0, h], [0.0, 1.0]])
    B = np.array([[h * h / 2], [h]])
    C = np.array([[1.0, 0.0]])

    def run(lean):
        dsys = DiscreteLTV.from_lti(A, B, dt=h, steps=1, C=C)
        c = OffsetFreeMPCController(dsys, ZeroRef(), 15, np.diag([10.0, 1.0]), np.eye(1),
                                    disturbance="input", Qn=(np.diag([1e-6, 1e-6]), [[1e-3]]),
                                    Rn=[[1e-4]], steps=400, u_min=-2.0, u_max=2.0,
                                    outputs=("p_meas",))
        n_lean = []
        dense = c.mpc._dense_step

        def counted(*a):
            got = dense(*a) if lean else None
            n_lean.append(got is not None)
            return got
        c.mpc._dense_step = counted
        s, us = np.array([3.0, 0.0]), []
        for k in range(120):
            u = c.control(k * h, C @ s)
            us.append(u.copy())
            s = A @ s + B @ (u + 0.3)
        return np.array(us), n_lean

    us, n_lean = run(True)
    us_full, _ = run(False)
    assert all(n_lean) and len(n_lean) == 120
    assert np.max(np.abs(us)) == pytest.approx(2.0)          # the bound was active
    np.testing.assert_array_equal(us, us_full)
