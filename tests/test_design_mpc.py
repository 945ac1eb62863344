"""Tests of nhcontrol.design.LTVMPC (cvxpy, compiled once with Parameters).

Reference: the finite-horizon Riccati recursion (``finite_horizon_lqr``) for the unconstrained
problem; Clarabel (an interior-point solver, independent of OSQP) for the constrained ones.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from nhcontrol._util.errors import DesignError, SolverError
from nhcontrol.design import LTVMPC, MPCStep, finite_horizon_lqr

TIGHT = dict(eps_abs=1e-10, eps_rel=1e-10, max_iter=200000, polishing=True)


def random_ltv(N: int, n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    return (np.eye(n) + 0.1 * rng.standard_normal((N, n, n)), 0.3 * rng.standard_normal((N, n, k)))


def test_problem_is_dpp_and_built_once():
    mpc = LTVMPC(10, np.eye(3), np.eye(1))
    assert mpc.problem.is_dpp()
    prob = mpc.problem
    Ad, Bd = random_ltv(10, 3, 1, 0)
    for j in range(3):
        step = mpc.step(np.ones(3) * 0.1 * (j + 1), Ad, Bd)
        assert isinstance(step, MPCStep) and step.status == "optimal"
    assert mpc.problem is prob


def test_unconstrained_ltv_matches_finite_horizon_lqr():
    """No active constraint + Riccati terminal weight: MPC = finite-horizon LQR (1e-6).

    The window's LQR (same Qf) gives the optimal first input −K_0 x0, the whole optimal
    trajectory and the optimal cost x0ᵀP0x0; OSQP at eps 1e-10 with polishing reaches them
    to ~1e-8, the test allows 1e-6 relative.
    """
    N, n, k = 15, 4, 2
    Ad, Bd = random_ltv(N, n, k, seed=2)
    rng = np.random.default_rng(2)
    Q = np.diag(rng.uniform(0.5, 2.0, n))
    R = np.diag(rng.uniform(0.5, 2.0, k))
    Qf = 3.0 * np.eye(n)
    res = finite_horizon_lqr((Ad, Bd), Q, R, Qf)
    mpc = LTVMPC(N, Q, R, Qf, solver_options=TIGHT)
    x0 = rng.standard_normal(n)
    st = mpc.step(x0, Ad, Bd)
    assert st.status == "optimal" and st.solver == "DAQP"      # the condensed path (default)
    scale = np.abs(res.K[0] @ x0).max()
    np.testing.assert_allclose(st.du, -res.K[0] @ x0, atol=1e-6 * scale)
    x = x0.copy()
    for j in range(N):
        u = -res.K[j] @ x
        np.testing.assert_allclose(st.predicted_u[j], u, atol=1e-6 * scale)
        x = Ad[j] @ x + Bd[j] @ u
        np.testing.assert_allclose(st.predicted_x[j + 1], x, atol=1e-6 * max(1, np.abs(x0).max()))
    assert abs(st.cost - res.cost(x0)) <= 1e-6 * res.cost(x0)


def test_lti_with_dare_terminal_cost_gives_dlqr_gain():
    """LTI, Qf = DARE solution: the first MPC move is the infinite-horizon dlqr input (1e-6)."""
    import control

    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([[0.005], [0.1]])
    K, P, _ = control.dlqr(A, B, np.eye(2), np.eye(1))
    mpc = LTVMPC(5, np.eye(2), np.eye(1), P, solver_options=TIGHT)
    x0 = np.array([0.3, -0.2])
    st = mpc.step(x0, A, B)
    np.testing.assert_allclose(st.du, -K @ x0, atol=1e-6 * np.abs(K @ x0).max())
    np.testing.assert_allclose(st.cost, x0 @ P @ x0, rtol=1e-6)


def test_input_bounds_respected_and_match_clarabel():
    """Saturating bounds: |u| ≤ 0.5 holds to 1e-6, is active, and OSQP agrees with Clarabel."""
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([[0.005], [0.1]])
    kw = dict(u_min=-0.5, u_max=0.5)
    a = LTVMPC(20, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), solver_options=TIGHT, **kw)
    b = LTVMPC(20, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), solver="CLARABEL", qp_solver="osqp", **kw)
    x0 = np.array([2.0, 0.0])
    sa, sb = a.step(x0, A, B), b.step(x0, A, B)
    assert sb.solver == "CLARABEL"
    assert np.max(np.abs(sa.predicted_u)) <= 0.5 + 1e-6
    assert abs(sa.u[0]) > 0.5 - 1e-6  # the bound is active at the first move
    np.testing.assert_allclose(sa.predicted_u, sb.predicted_u, atol=1e-5)
    assert abs(sa.cost - sb.cost) <= 1e-6 * sb.cost


def test_osqp_failure_falls_back_to_clarabel():
    """OSQP stopped after one iteration (status ``user_limit``, not accepted) → the step is
    re-solved by Clarabel in the same call: status ``optimal``, ``solver == "CLARABEL"``, both
    attempts recorded, and the answer equals a Clarabel-first controller's (1e-8; both are the
    same interior-point solve of the same QP)."""
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([[0.005], [0.1]])
    kw = dict(u_min=-0.5, u_max=0.5)
    a = LTVMPC(20, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), solver_options=dict(max_iter=1),
               qp_solver="osqp", **kw)
    b = LTVMPC(20, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), solver="CLARABEL", qp_solver="osqp", **kw)
    x0 = np.array([2.0, 0.0])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")  # cvxpy, OSQP try
        sa = a.step(x0, A, B)
    sb = b.step(x0, A, B)
    assert sa.status == "optimal" and sa.solver == "CLARABEL" and not sa.held
    assert sa.attempts[0][0] == "OSQP" and sa.attempts[0][1] not in ("optimal", "optimal_inaccurate")
    assert sa.attempts[1] == ("CLARABEL", "optimal")
    np.testing.assert_allclose(sa.predicted_u, sb.predicted_u, atol=1e-8)
    assert abs(sa.u[0]) > 0.5 - 1e-6


#: OSQP iterations after which the QP below is ``optimal_inaccurate`` (measured: the direct
#: formulation converges in fewer iterations than cvxpy's, which has auxiliary variables).
_INACCURATE_AFTER = {"direct": 100, "cvxpy": 200}


def _inaccurate_osqp(interface, **kw):
    """OSQP stopped early without polishing: cvxpy status ``optimal_inaccurate``."""
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([[0.005], [0.1]])
    mpc = LTVMPC(20, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), u_min=-0.5, u_max=0.5,
                 solver_options=dict(max_iter=_INACCURATE_AFTER[interface], eps_abs=1e-6,
                                     eps_rel=1e-6, polishing=False),
                 osqp_interface=interface, qp_solver="osqp", **kw)
    exact = LTVMPC(20, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), u_min=-0.5, u_max=0.5,
                   solver="CLARABEL", qp_solver="osqp").step(np.array([2.0, 0.0]), A, B)
    return mpc, A, B, exact


@pytest.mark.parametrize("interface", ["direct", "cvxpy"])
def test_inaccurate_osqp_answer_is_replaced_by_clarabel(interface):
    """OSQP ``optimal_inaccurate`` → Clarabel is tried and its ``optimal`` answer is used, with no
    RuntimeWarning (equal to a Clarabel-first controller to 1e-8)."""
    mpc, A, B, exact = _inaccurate_osqp(interface)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")  # cvxpy's own
        warnings.filterwarnings("error", category=RuntimeWarning)
        st = mpc.step(np.array([2.0, 0.0]), A, B)
    assert st.attempts == (("OSQP", "optimal_inaccurate"), ("CLARABEL", "optimal"))
    assert st.status == "optimal" and st.solver == "CLARABEL"
    np.testing.assert_allclose(st.predicted_u, exact.predicted_u, atol=1e-8)


@pytest.mark.parametrize("interface", ["direct", "cvxpy"])
def test_inaccurate_answer_kept_with_warning_when_fallback_fails(interface):
    """OSQP ``optimal_inaccurate`` and Clarabel stopped after one iteration: the OSQP answer is
    used, status ``optimal_inaccurate``, a RuntimeWarning names both attempts; the input is
    close to the exact one (measured 8e-5, asked < 1e-3: OSQP's inaccurate tolerance) and
    within the bounds."""
    mpc, A, B, exact = _inaccurate_osqp(interface, fallback_options=dict(max_iter=1))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        with pytest.warns(RuntimeWarning, match=r"status 'optimal_inaccurate' \(attempts: OSQP: "
                                                 r"optimal_inaccurate; CLARABEL: user_limit\)"):
            st = mpc.step(np.array([2.0, 0.0]), A, B)
    assert st.status == "optimal_inaccurate" and st.solver == "OSQP" and not st.held
    assert np.max(np.abs(st.predicted_u - exact.predicted_u)) < 1e-3
    assert np.max(np.abs(st.predicted_u)) <= 0.5 + 1e-3
    assert np.isfinite(st.cost) and abs(st.cost - exact.cost) < 1e-3 * exact.cost


def test_first_move_is_inside_the_bounds_exactly():
    """Saturated loop with a reference input (OSQP at default tolerances, 30 steps): every
    returned ``u`` satisfies ``u_min <= u <= u_max`` with no tolerance; ``du = u − u_ref[0]``
    exactly, and ``u`` differs from the solver's own first move by at most 1e-5 (the projection
    only removes OSQP's primal residual)."""
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([[0.005], [0.1]])
    mpc = LTVMPC(15, np.eye(2), 0.01 * np.eye(1), 10 * np.eye(2), u_min=-0.3, u_max=0.4)
    x = np.array([3.0, -1.0])
    saturated = 0
    for k in range(30):
        ur = np.full((15, 1), 0.1 * np.sin(0.2 * k))
        st = mpc.step(x, A, B, u_ref=ur)
        assert -0.3 <= st.u[0] <= 0.4
        assert st.du[0] == st.u[0] - ur[0, 0]
        assert abs(st.u[0] - (ur[0, 0] + st.predicted_u[0, 0])) <= 1e-5
        saturated += st.u[0] in (-0.3, 0.4)
        x = A @ x + B @ st.du
    assert saturated >= 3  # the bounds are active for several steps


def test_bounds_are_absolute_with_reference_input():
    """Tracking: bounds act on u = u_ref + δu; the reported u is absolute."""
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([[0.005], [0.1]])
    uref = np.linspace(0.3, 0.4, 20)[:, None]
    mpc = LTVMPC(20, np.eye(2), 0.01 * np.eye(1), u_min=-0.5, u_max=0.5, solver_options=TIGHT)
    st = mpc.step(np.array([-2.0, 0.0]), A, B, u_ref=uref)
    absu = uref + st.predicted_u
    assert np.max(absu) <= 0.5 + 1e-6 and np.max(absu) > 0.5 - 1e-6
    np.testing.assert_allclose(st.u, uref[0] + st.du, atol=0)
    np.testing.assert_allclose(st.du, st.predicted_u[0], atol=0)


def test_rate_bounds_with_previous_input():
    """|u_j − u_{j−1}| ≤ 0.05 including the first move from u_prev (1e-6)."""
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([[0.005], [0.1]])
    mpc = LTVMPC(25, np.eye(2), 0.01 * np.eye(1), du_min=-0.05, du_max=0.05, solver_options=TIGHT)
    st = mpc.step(np.array([1.0, 0.0]), A, B, u_prev=np.array([0.2]))
    seq = np.concatenate([[0.2], st.predicted_u[:, 0]])
    assert np.max(np.abs(np.diff(seq))) <= 0.05 + 1e-6
    assert np.max(np.abs(np.diff(seq))) > 0.05 - 1e-6
    # the default previous input is the last returned one
    st2 = mpc.step(np.array([1.0, 0.0]), A, B)
    assert abs(st2.u[0] - st.u[0]) <= 0.05 + 1e-6


def test_state_bounds_in_prediction():
    """x_ref + δx stays in the box over the horizon (1e-6), and the bound changes the answer."""
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([[0.005], [0.1]])
    free = LTVMPC(30, np.eye(2), 0.01 * np.eye(1), solver_options=TIGHT)
    boxed = LTVMPC(30, np.eye(2), 0.01 * np.eye(1), x_min=[-np.inf, -0.3], x_max=[np.inf, 0.3],
                   solver_options=TIGHT)
    x0 = np.array([1.0, 0.0])
    sf, sb = free.step(x0, A, B), boxed.step(x0, A, B)
    assert np.max(np.abs(sf.predicted_x[1:, 1])) > 0.35
    assert np.max(np.abs(sb.predicted_x[1:, 1])) <= 0.3 + 1e-6


def test_closed_loop_regulates_unstable_lti_within_bounds():
    """Receding horizon on an unstable LTI plant: |x| < 1e-4 after 120 steps, |u| ≤ 1 (1e-4).

    The decay is geometric (about a factor 10 per 20 steps once the input leaves saturation).
    """
    A = np.array([[1.02, 0.1], [0.0, 1.01]])
    B = np.array([[0.0], [0.1]])
    mpc = LTVMPC(20, np.eye(2), 0.1 * np.eye(1), 20 * np.eye(2), u_min=-1, u_max=1)
    x = np.array([1.0, 0.5])
    us = []
    for _ in range(120):
        st = mpc.step(x, A, B)
        us.append(st.u[0])
        x = A @ x + B @ st.u
    assert np.linalg.norm(x) < 1e-4
    assert np.max(np.abs(us)) <= 1 + 1e-4


def test_direct_osqp_equals_cvxpy_formulation_over_a_receding_loop():
    """The direct OSQP QP (default) and the cvxpy formulation give the same steps (1e-6) on an
    LTV loop with every kind of bound active at times, a reference input and state, a terminal
    weight replaced midway, and Clarabel (interior point, independent of OSQP) agrees (1e-5)."""
    N, n, k, steps = 8, 3, 2, 12
    Ad, Bd = random_ltv(N + steps, n, k, seed=5)
    kw = dict(u_min=[-0.4, -np.inf], u_max=[0.4, 0.6], du_min=-0.15, du_max=[0.15, np.inf],
              x_min=[-np.inf, -0.2, -np.inf], x_max=[np.inf, 0.2, np.inf])
    ctl = {name: LTVMPC(N, np.eye(n), 0.1 * np.eye(k), 5 * np.eye(n), osqp_interface=name,
                        solver_options=TIGHT, qp_solver="osqp", **kw) for name in ("direct", "cvxpy")}
    clarabel = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), 5 * np.eye(n), solver="CLARABEL", qp_solver="osqp", **kw)
    x = np.array([0.8, -0.3, 0.5])
    active, u_prev = set(), np.zeros(k)
    for t in range(steps):
        ur = 0.05 * np.sin(0.3 * (t + np.arange(N)))[:, None] * np.ones(k)
        xr = np.zeros((N + 1, n))
        xr[:, 1] = 0.02 * t
        extra = dict(Qf=2 * np.eye(n)) if t == 6 else {}
        sd = ctl["direct"].step(x, Ad[t:t + N], Bd[t:t + N], u_ref=ur, x_ref=xr, **extra)
        sc = ctl["cvxpy"].step(x, Ad[t:t + N], Bd[t:t + N], u_ref=ur, x_ref=xr, **extra)
        sl = clarabel.step(x, Ad[t:t + N], Bd[t:t + N], u_ref=ur, x_ref=xr, **extra)
        assert sd.status == sc.status == "optimal" and sd.solver == "OSQP"
        np.testing.assert_allclose(sd.predicted_u, sc.predicted_u, atol=1e-6)
        np.testing.assert_allclose(sd.predicted_x, sc.predicted_x, atol=1e-6)
        np.testing.assert_allclose(sd.predicted_u, sl.predicted_u, atol=1e-5)
        assert abs(sd.cost - sc.cost) <= 1e-6 * max(1.0, sc.cost)
        absu = ur + sd.predicted_u
        active.update({"u"} if np.max(np.abs(absu[:, 0])) > 0.4 - 1e-6 else set())
        active.update({"x"} if np.max(np.abs(xr[1:, 1] + sd.predicted_x[1:, 1])) > 0.2 - 1e-6
                      else set())
        seq = np.vstack([u_prev, ur + sd.predicted_u])
        active.update({"r"} if np.max(np.abs(np.diff(seq[:, 0]))) > 0.15 - 1e-6 else set())
        u_prev = sd.u
        x = Ad[t] @ x + Bd[t] @ sd.du
    assert active == {"u", "r", "x"}


@pytest.mark.parametrize("interface", ["direct", "cvxpy"])
def test_controller_pickles_and_continues(interface):
    """A pickled controller (e.g. shipped to a sweep worker) gives the same steps (1e-6: the copy
    starts without a warm start), with the last input and a replaced terminal weight kept."""
    import pickle

    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([[0.005], [0.1]])
    mpc = LTVMPC(10, np.eye(2), 0.1 * np.eye(1), u_min=-0.5, u_max=0.5, du_min=-0.1, du_max=0.1,
                 osqp_interface=interface, solver_options=TIGHT)
    mpc.step(np.array([1.0, 0.0]), A, B, Qf=4 * np.eye(2))
    copy = pickle.loads(pickle.dumps(mpc))
    x = np.array([0.8, -0.2])
    a, b = mpc.step(x, A, B), copy.step(x, A, B)
    np.testing.assert_allclose(b.predicted_u, a.predicted_u, atol=1e-6)
    assert abs(b.cost - a.cost) <= 1e-6 * a.cost


def test_bad_osqp_option_is_refused_at_construction():
    with pytest.raises(DesignError, match=r"OSQP refused the solver options \{'eps_absolute'"):
        LTVMPC(4, np.eye(2), np.eye(1), solver_options={"eps_absolute": 1e-6})
    with pytest.raises(DesignError, match=r"osqp_interface must be 'direct' or 'cvxpy', got 'c'"):
        LTVMPC(4, np.eye(2), np.eye(1), osqp_interface="c")


def _infeasible(**kw):
    A = np.eye(2)
    B = np.array([[0.0], [0.01]])
    return LTVMPC(5, np.eye(2), np.eye(1), x_min=[-0.1, -0.1], x_max=[0.1, 0.1],
                  u_min=-1, u_max=1, **kw), A, B


def test_infeasible_raises_solver_error():
    mpc, A, B = _infeasible()
    with pytest.raises(SolverError, match=r"MPC step failed \(DAQP: infeasible; OSQP: infeasible.*CLARABEL: infeasible"):
        mpc.step(np.array([1.0, 0.0]), A, B)


def test_infeasible_hold_returns_previous_input_with_status():
    mpc, A, B = _infeasible(on_failure="hold")
    with pytest.warns(RuntimeWarning, match=r"holding the previous input"):
        st = mpc.step(np.array([1.0, 0.0]), A, B, u_prev=np.array([0.25]))
    assert st.held and st.status.startswith("held: DAQP: infeasible; OSQP: infeasible")
    np.testing.assert_array_equal(st.u, [0.25])
    assert [a[0] for a in st.attempts] == ["DAQP", "OSQP", "CLARABEL"]
    assert np.all(np.isfinite(st.predicted_x)) and np.isfinite(st.cost)
    np.testing.assert_allclose(st.predicted_x[1], A @ [1.0, 0.0] + B @ [0.25])


@pytest.mark.parametrize("kwargs,match", [
    (dict(horizon=0), r"horizon must be a positive integer number of steps, got 0"),
    (dict(horizon=2.5), r"horizon must be a positive integer"),
    (dict(R=np.zeros((1, 1))), r"R must be positive definite"),
    (dict(Q=-np.eye(2)), r"Q must be positive semi-definite"),
    (dict(Qf=np.eye(3)), r"Qf must have shape \(2, 2\)"),
    (dict(u_min=1.0, u_max=0.0), r"u_min must not exceed u_max; violated at components \[0\]"),
    (dict(x_min=[0, 0, 0]), r"x_min must be a scalar or have shape \(2,\), got \(3,\)"),
    (dict(du_max=np.nan), r"du_max contains NaN"),
    (dict(solver="ECOS"), r"solver must be 'OSQP' or 'CLARABEL', got 'ECOS'"),
    (dict(on_failure="ignore"), r"on_failure must be 'raise' or 'hold'"),
])
def test_construction_errors(kwargs, match):
    args = dict(horizon=4, Q=np.eye(2), R=np.eye(1))
    args.update(kwargs)
    with pytest.raises(DesignError, match=match):
        LTVMPC(args.pop("horizon"), args.pop("Q"), args.pop("R"), **args)


@pytest.mark.parametrize("call,match", [
    (dict(x0=np.zeros(3)), r"x0 must have shape \(2\)"),
    (dict(Ad=np.zeros((3, 2, 2))), r"Ad must have shape \(4, 2, 2\) \(one matrix per step"),
    (dict(Bd=np.zeros((2, 2))), r"Bd must have shape \(4, 2, 1\)"),
    (dict(u_ref=np.zeros((3, 1))), r"u_ref must have shape \(1,\) or \(4, 1\)"),
    (dict(x0=np.array([np.inf, 0.0])), r"x0 contains 1 non-finite"),
    (dict(Qf=-np.eye(2)), r"Qf must be positive semi-definite"),
])
def test_step_errors(call, match):
    mpc = LTVMPC(4, np.eye(2), np.eye(1))
    args = dict(x0=np.zeros(2), Ad=np.eye(2), Bd=np.ones((2, 1)))
    args.update(call)
    x0, Ad, Bd = args.pop("x0"), args.pop("Ad"), args.pop("Bd")
    with pytest.raises(DesignError, match=match):
        mpc.step(x0, Ad, Bd, **args)


def test_window_from_discrete_ltv():
    """window() slices a DiscreteLTV, wraps periodic ones, and refuses to run off the end."""
    from nhcontrol.design import window
    from nhcontrol.systems import DiscreteLTV

    Ad, Bd = random_ltv(6, 2, 1, seed=9)
    d = DiscreteLTV(Ad, Bd, 0.1)
    a, b = window(d, 2, 3)
    np.testing.assert_array_equal(a, Ad[2:5])
    np.testing.assert_array_equal(b, Bd[2:5])
    with pytest.raises(DesignError, match=r"window \[4, 8\) leaves the discrete system, which has 6"):
        window(d, 4, 4)
    a, _ = window(d, 4, 4, periodic=True)
    np.testing.assert_array_equal(a, Ad[[4, 5, 0, 1]])
    dp = DiscreteLTV(Ad, Bd, 0.1, period_steps=3)
    a, _ = window(dp, 2, 3)
    np.testing.assert_array_equal(a, Ad[[2, 0, 1]])
    with pytest.raises(DesignError, match=r"start must be a non-negative integer"):
        window(d, -1, 2)
    with pytest.raises(DesignError, match=r"horizon must be a positive integer"):
        window(d, 0, 0)


def test_control_guide_snippets_run():
    """The code blocks of docs/guide/control.md up to the MPC loop run and their closed loops
    work."""
    import pathlib
    import re

    path = pathlib.Path(__file__).resolve().parents[1] / "docs" / "guide" / "control.md"
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), re.S)
    ns: dict = {}
    upto = next(i for i, b in enumerate(blocks) if "step = mpc.step(" in b) + 1
    exec("\n".join(blocks[:upto]), ns)  # noqa: S102 - our own documentation
    assert ns["step"].status == "optimal"
    assert np.max(np.abs(ns["K"])) > 0       # the gain of the python-control block


def test_direct_osqp_extension_and_interface_paths_agree():
    """The step calls OSQP's extension object directly (update + solve as OSQP.update/solve
    do); without it (another OSQP build) it goes through OSQP's Python interface: the same
    inputs, predictions, duals and iterations over a receding LTV loop with changing windows,
    bounds and a terminal weight update."""
    N, n, k = 12, 3, 2
    A, B = random_ltv(40, n, k, 7)
    kw = dict(u_min=-0.4, u_max=0.4, du_min=-0.2, du_max=0.2)
    a = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), 5 * np.eye(n), qp_solver="osqp", **kw)
    b = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), 5 * np.eye(n), qp_solver="osqp", **kw)
    assert a._qp._ext is not None                     # osqp >= 1.0 (a requirement)
    b._qp._ext = None
    x = np.array([1.0, -0.5, 0.3])
    for j in range(6):
        Qf = 6 * np.eye(n) if j == 3 else None
        sa = a.step(x, A[j:j + N], B[j:j + N], Qf=Qf, c=np.full((N, n), 0.01 * j))
        sb = b.step(x, A[j:j + N], B[j:j + N], Qf=Qf, c=np.full((N, n), 0.01 * j))
        assert sa.status == sb.status == "optimal"
        np.testing.assert_array_equal(sa.u, sb.u)
        np.testing.assert_array_equal(sa.predicted_x, sb.predicted_x)
        np.testing.assert_array_equal(sa.duals, sb.duals)
        assert sa.cost == sb.cost and a._qp.iterations == b._qp.iterations
        x = A[j] @ x + B[j] @ sa.u
