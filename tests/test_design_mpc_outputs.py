"""Soft output constraints of the LTV-MPC: bounds on ``y = C δx + D δu``
(time-varying ``C_j``, a feed-through ``D_j``) with slacks, an exact L1 plus a quadratic penalty
and the slack usage reported per step. The soft problem stays feasible where the hard one is
not and equals it where it is feasible (both OSQP paths); in a closed loop the soft controller
never falls back and the outputs return inside their bounds."""

from __future__ import annotations

import numpy as np
import pytest

from nhcontrol._util.errors import DesignError, SolverError
from nhcontrol.design import LTVMPC, MPCController
from nhcontrol.systems import DiscreteLTV

from _toy_models import ZeroRef as _ZeroRef

H = 0.1
A = np.array([[1.0, H], [0.0, 1.0]])
B = np.array([[H * H / 2], [H]])
N = 20
C = np.array([[1.0, 0.5], [0.0, 1.0]])        # y = [p + v/2 (+ u/10), v]
D = np.array([[0.1], [0.0]])
CT = np.stack([C * (1.0 + 0.01 * j) for j in range(N)])   # time-varying C_j
Y_REF = np.tile([1.2, 0.0], (N + 1, 1))       # absolute y = y_ref + C δx + D δu


def _opts(iface):
    tight = {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 100000}
    return dict(solver_options=tight, fallback_options={}, osqp_interface=iface)


def _outputs(step):
    """Absolute predicted outputs y_j, j = 1 … N (the last input held at j = N)."""
    du = np.vstack([step.predicted_u[1:], step.predicted_u[-1:]])
    return Y_REF[1:] + np.einsum("jpn,jn->jp", CT, step.predicted_x[1:]) + du @ D.T


@pytest.mark.parametrize("iface", ["direct", "cvxpy"])
def test_soft_outputs_equal_hard_where_feasible_and_stay_feasible_where_not(iface):
    kw = dict(u_min=-1.0, u_max=1.0, y_min=[-np.inf, -1.0], y_max=[1.0, 1.0], C_y=CT, D_y=D,
              **_opts(iface))
    hard = LTVMPC(N, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), **kw)
    soft = LTVMPC(N, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), soft_output=(1e4, 1e2), **kw)
    x = np.array([-0.5, 0.0])
    a, b = hard.step(x, A, B, y_ref=Y_REF), soft.step(x, A, B, y_ref=Y_REF)
    ya = _outputs(a)
    assert ya[:, 0].max() == pytest.approx(1.0, abs=1e-6)     # the output bound is active
    assert np.all(ya <= 1.0 + 1e-6)
    np.testing.assert_allclose(b.predicted_x, a.predicted_x, atol=1e-6)
    np.testing.assert_allclose(b.u, a.u, atol=1e-6)
    assert b.slack_output.shape == (N, 2) and b.slack.shape == (N, 0)
    assert b.slack_max < 1e-7                                  # exact penalty: no slack used
    x = np.array([0.2, 0.5])            # y_1 >= 1.2 + 0.25 + 0.25 - 0.15 > 1 for any |u| <= 1
    with pytest.raises(SolverError):
        hard.step(x, A, B, y_ref=Y_REF)
    c = soft.step(x, A, B, y_ref=Y_REF)
    assert c.status == "optimal" and c.slack_max > 0.1
    yc = _outputs(c)
    # the slack is exactly the violation of the bound it relaxes (L1 penalty: no more)
    np.testing.assert_allclose(c.slack_output[:, 0], np.maximum(yc[:, 0] - 1.0, 0.0), atol=1e-6)
    assert np.all(np.abs(c.predicted_u) <= 1.0 + 1e-6)        # input bounds stay hard


def test_direct_and_cvxpy_output_paths_agree_with_time_varying_outputs():
    steps = []
    for iface in ("direct", "cvxpy"):
        m = LTVMPC(N, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), u_min=-1.0, u_max=1.0,
                   y_min=[-0.3, -0.4], y_max=[0.3, 0.4], C_y=C, D_y=D, soft_output=(50.0, 1.0),
                   **_opts(iface))
        steps.append(m.step([0.6, 0.3], A, B, C_y=CT[::-1]))
    np.testing.assert_allclose(steps[0].predicted_x, steps[1].predicted_x, atol=1e-6)
    np.testing.assert_allclose(steps[0].slack_output, steps[1].slack_output, atol=1e-6)
    assert steps[0].slack_max > 1e-3      # a small ρ₁: the penalty trades violation for cost


def test_closed_loop_soft_outputs_recover_where_hard_falls_back():
    dsys = DiscreteLTV.from_lti(A, B, dt=H, steps=1, C=[[1.0, 0.5]])
    kw = dict(u_min=-1.0, u_max=1.0, y_min=-0.5, y_max=0.5, steps=200,
              solver_options={"eps_abs": 1e-9, "eps_rel": 1e-9})
    runs = {}
    for name, soft in (("hard", False), ("soft", True)):
        ctrl = MPCController(dsys, _ZeroRef(), 15, np.eye(2), 0.01 * np.eye(1),
                             soft_output=soft, **kw)
        s = np.array([0.3, 0.8])                 # y = 0.7: outside the bound at the start
        ys = []
        for k in range(80):
            u = ctrl.control(k * H, s)
            s = A @ s + B @ u
            ys.append(s[0] + 0.5 * s[1])
        runs[name] = (ctrl, np.array(ys), s)
    hard, soft = runs["hard"][0], runs["soft"][0]
    assert any(r.status.startswith("fallback") for r in hard.history)
    assert set(soft.statuses) == {"optimal"}
    slack = np.array([r.slack_max for r in soft.history])
    assert slack[0] > 0.05 and np.all(slack[20:] < 1e-6)      # used only while needed
    ys, s = runs["soft"][1], runs["soft"][2]
    assert np.all(np.abs(ys[20:]) <= 0.5 + 1e-6) and np.linalg.norm(s) < 1e-3


def test_output_bound_errors():
    with pytest.raises(DesignError, match="C_y"):
        LTVMPC(5, np.eye(2), np.eye(1), y_max=1.0)
    with pytest.raises(DesignError, match="C_y must have shape"):
        LTVMPC(5, np.eye(2), np.eye(1), y_max=1.0, C_y=np.ones((1, 3)))
    with pytest.raises(DesignError, match="y_min must not exceed"):
        LTVMPC(5, np.eye(2), np.eye(1), y_min=2.0, y_max=1.0, C_y=np.ones((1, 2)))
    with pytest.raises(DesignError, match="soft_output"):
        LTVMPC(5, np.eye(2), np.eye(1), y_max=1.0, C_y=np.ones((1, 2)), soft_output=(-1, 0))


def test_time_varying_outputs_of_the_model_are_sliced_per_window():
    """A DiscreteLTV with time-varying outputs Ck: the controller bounds C_{k+j} δx_{k+j} at its
    sample k (the window moves with k), the same as LTVMPC given those windows explicitly."""
    M = 60
    Ck = np.stack([[[1.0, 0.2 + 0.01 * i]] for i in range(M + 1)])
    dsys = DiscreteLTV(np.broadcast_to(A, (M, 2, 2)).copy(), np.broadcast_to(B, (M, 2, 1)).copy(),
                       H, Ck=Ck)
    tight = {"eps_abs": 1e-10, "eps_rel": 1e-10}
    ctrl = MPCController(dsys, _ZeroRef(), 10, np.eye(2), 0.01 * np.eye(1), u_min=-1.0,
                         u_max=1.0, y_min=-0.4, y_max=0.4, soft_output=True, steps=40,
                         terminal="fixed", solver_options=tight)
    ref = LTVMPC(10, np.eye(2), 0.01 * np.eye(1), u_min=-1.0, u_max=1.0, y_min=-0.4, y_max=0.4,
                 C_y=Ck[1:11], soft_output=True, solver_options=tight)
    s = np.array([0.6, 0.0])
    for k in range(5):
        u = ctrl.control(k * H, s)
        st = ref.step(s, A, B, C_y=Ck[k + 1:k + 11])
        np.testing.assert_allclose(u, st.u, atol=1e-5)
        assert ctrl.history[-1].slack_max == pytest.approx(st.slack_max, abs=1e-5)
        s = A @ s + B @ u
    assert max(r.slack_max for r in ctrl.history) > 0.05
