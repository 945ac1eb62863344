"""The condensed window QP solved by DAQP (``qp_solver="daqp"``, the default) against the sparse
QP solved by OSQP at tight tolerances (``qp_solver="osqp"``): the same first input (1e-6) on
every sample of the closed loops of ``reproduce nmpc`` (LTV-MPC, RTI) and ``reproduce
ball-plate`` (LTV-MPC), on random LTV windows with every kind of bound (input, rate, hard and
soft state, soft output with feed-through, a constant term, linear cost terms), the multipliers
mapped to the sparse layout satisfy the sparse QP's KKT conditions, and the OSQP path taken when
DAQP cannot (not installed, ρ₂ = 0) gives the same answers with its reason recorded."""

from __future__ import annotations


import numpy as np
import pytest

from nhcontrol.design import LTVMPC
from nhcontrol.design import _condensed
from nhcontrol.design._condensed import condensed_qp

TIGHT = dict(eps_abs=1e-11, eps_rel=1e-11, max_iter=200000, polishing=True)
CLARABEL_TIGHT = dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, tol_ktratio=1e-10)


def random_window(N, n, k, seed):
    rng = np.random.default_rng(seed)
    A = np.eye(n) + 0.05 * rng.standard_normal((N, n, n))
    B = 0.3 * rng.standard_normal((N, n, k))
    return A, B


KW = dict(u_min=[-0.4, -np.inf], u_max=[0.4, 0.6], du_min=-0.15, du_max=[0.15, np.inf],
          x_min=[-np.inf, -0.2, -np.inf], x_max=[np.inf, 0.2, np.inf])


def _pair(N, n, k, **kw):
    Q, R = np.diag([1.0, 2.0, 0.5][:n]), 0.1 * np.eye(k)
    a = LTVMPC(N, Q, R, 5 * np.eye(n), **kw)
    b = LTVMPC(N, Q, R, 5 * np.eye(n), qp_solver="osqp", solver_options=TIGHT, **kw)
    assert a.qp_path == "daqp" and b.qp_path == "osqp"
    return a, b


@pytest.mark.parametrize("soft", [False, True])
def test_condensed_equals_sparse_on_random_windows(soft):
    """Every bound kind active at times; constant terms, linear costs, reference input/state,
    a terminal weight replaced midway: DAQP's predicted inputs, states, cost and slacks equal
    OSQP's at tight tolerances (1e-7), and the multipliers of the condensed solution, mapped to
    OSQP's rows, satisfy the sparse stationarity ``P z + q + A_cᵀ y = 0`` (1e-8)."""
    N, n, k = 8, 3, 2
    A, B = random_window(N + 12, n, k, seed=5)
    extra = dict(soft_state=(50.0, 5.0)) if soft else {}
    a, b = _pair(N, n, k, **KW, **extra)
    x = np.array([0.8, -0.3, 0.5])
    kinds = set()
    rng = np.random.default_rng(0)
    for t in range(12):
        ur = 0.05 * np.sin(0.3 * (t + np.arange(N)))[:, None] * np.ones(k)
        xr = np.zeros((N + 1, n))
        xr[:, 1] = 0.01 * t
        step = dict(u_ref=ur, x_ref=xr, c=0.01 * rng.standard_normal((N, n)),
                    q_x=0.1 * rng.standard_normal((N + 1, n)),
                    q_u=0.1 * rng.standard_normal((N, k)))
        if t == 6:
            step["Qf"] = 2 * np.eye(n)
        sa = a.step(x, A[t:t + N], B[t:t + N], **step)
        sb = b.step(x, A[t:t + N], B[t:t + N], **step)
        assert sa.status == sb.status == "optimal" and sa.solver == "DAQP" and sb.solver == "OSQP"
        np.testing.assert_allclose(sa.predicted_u, sb.predicted_u, atol=1e-7)
        np.testing.assert_allclose(sa.predicted_x, sb.predicted_x, atol=1e-7)
        np.testing.assert_allclose(sa.slack, sb.slack, atol=1e-7)
        assert abs(sa.cost - sb.cost) <= 1e-7 * max(1.0, abs(sb.cost))
        # the sparse KKT stationarity with DAQP's multipliers in OSQP's layout
        lay = a._dense
        lay.kkt_at_zero(sa.duals)                     # writes A_j, B_j into the layout
        Pz = _sparse_P_times(a, lay.z)
        stat = Pz + lay.q + lay._At @ sa.duals
        assert np.max(np.abs(stat)) < 1e-8 * max(1.0, np.max(np.abs(lay.q)))
        kinds |= {g for g, (lo, hi) in _active(sa, a).items() if lo or hi}
        x = A[t] @ x + B[t] @ sa.u + 0.01
    assert {"u", "r", "x"} <= kinds                   # every kind of bound was active
    # the step buffers DAQP read keep their step-independent entries (rate rows, slack columns
    # and the slack block of the Hessian are written once)
    buf, Nk = lay._buf, N * k
    np.testing.assert_array_equal(buf["A"][:lay.m_r], lay._Ag[:lay.m_r])
    np.testing.assert_array_equal(buf["A"][:, Nk:], lay._Ag[:, Nk:])
    np.testing.assert_array_equal(buf["H"][Nk:, :], lay._H0[Nk:, :])


def _sparse_P_times(mpc, z):
    """``P z`` of the sparse QP (``P = 2 blkdiag(Q…, Q_f, R…, ρ₂ I)``) from the weights."""
    N, n, k = mpc.horizon, mpc.nstates, mpc.ninputs
    lay = mpc._dense
    X = z[:(N + 1) * n].reshape(N + 1, n)
    U = z[(N + 1) * n:(N + 1) * n + N * k].reshape(N, k)
    S = z[(N + 1) * n + N * k:]
    out = np.concatenate([(2 * X[:N] @ mpc.Q).ravel(), 2 * lay.Qf @ X[N], (2 * U @ mpc.R).ravel(),
                          2 * (mpc.soft_state[1] if mpc.soft_state else 0.0) * S])
    return out


def _active(st, mpc):
    """Which groups have an active bound at the solution (from the multipliers)."""
    lay = mpc._dense
    out = {}
    for g in ("u", "r", "x"):
        r0, idx = lay._rows[g]
        cnt = mpc.horizon * idx.size
        if g == "x" and lay.ns:
            r0 = lay._soft_rows[0]
            cnt = 2 * cnt
        yy = st.duals[r0:r0 + cnt]
        out[g] = (bool(np.any(yy < -1e-9)), bool(np.any(yy > 1e-9)))
    return out


def test_outputs_soft_with_feedthrough_equal_the_sparse_qp():
    """Soft output bounds ``y = C_j δx_j + D_j δu`` (time-varying ``C_j``) and soft state bounds:
    the condensed rows give the sparse QP's answer (1e-7) and its output slacks."""
    N, n, k = 6, 3, 2
    A, B = random_window(N, n, k, seed=11)
    C = np.array([[1.0, 1.0, 0.0]])
    D = np.array([[0.5, 0.0]])
    kw = dict(u_min=-0.2, u_max=0.2, y_min=-0.05, y_max=0.05, C_y=C, D_y=D, soft_output=(20.0, 2.0),
              x_min=-0.5, x_max=0.5, soft_state=True)
    a, b = _pair(N, n, k, **kw)
    x = np.array([0.6, 0.4, -0.2])
    Cw = C[None] * (1.0 + 0.1 * np.arange(N))[:, None, None]
    sa, sb = (m.step(x, A, B, C_y=Cw) for m in (a, b))
    assert sa.slack_output.max() > 1e-3                  # the output bound is violated (soft)
    np.testing.assert_allclose(sa.predicted_u, sb.predicted_u, atol=1e-7)
    np.testing.assert_allclose(sa.slack_output, sb.slack_output, atol=1e-7)
    assert abs(sa.cost - sb.cost) <= 1e-7 * abs(sb.cost)


def test_condensed_qp_matches_a_generic_elimination():
    """The structured recursions (forward prediction, backward Hessian) equal the generic
    elimination ``H = 2(ΓᵀQ̄Γ + R̄)``, ``g = 2ΓᵀQ̄ x̂ + Γᵀq_x + q_u`` built from the stacked
    prediction matrix ``Γ`` and free response ``x̂`` (1e-12 relative)."""
    N, n, k = 7, 3, 2
    A, B = random_window(N, n, k, seed=2)
    mpc = LTVMPC(N, np.diag([1.0, 2.0, 3.0]), 0.3 * np.eye(k), 4 * np.eye(n))
    lay = mpc._dense
    rng = np.random.default_rng(1)
    x0, c = rng.standard_normal(n), rng.standard_normal((N, n))
    qx, qu = rng.standard_normal((N + 1, n)), rng.standard_normal((N, k))
    Qf = 4 * np.eye(n) + 0.5
    qp = condensed_qp(lay, A, B, c, x0, Qf, qx, qu, {})
    # generic: simulate unit inputs
    Gam = np.zeros((N + 1, n, N * k))
    xf = np.zeros((N + 1, n))
    xf[0] = x0
    for j in range(N):
        xf[j + 1] = A[j] @ xf[j] + c[j]
        Gam[j + 1] = A[j] @ Gam[j]
        Gam[j + 1][:, j * k:(j + 1) * k] += B[j]
    Qbar = [mpc.Q] * N + [Qf]
    H = 2 * sum(Gam[j].T @ Qbar[j] @ Gam[j] for j in range(N + 1)) + np.kron(np.eye(N), 2 * mpc.R)
    g = sum(2 * Gam[j].T @ Qbar[j] @ xf[j] + Gam[j].T @ qx[j] for j in range(N + 1)) + qu.ravel()
    const = sum(xf[j] @ Qbar[j] @ xf[j] + qx[j] @ xf[j] for j in range(N + 1))
    np.testing.assert_allclose(qp.H, H, rtol=1e-12, atol=1e-12 * np.abs(H).max())
    np.testing.assert_allclose(qp.g, g, rtol=1e-12, atol=1e-12 * np.abs(g).max())
    assert abs(qp.const - const) <= 1e-12 * abs(const)


@pytest.mark.c_compiler
def test_c_and_numpy_condensing_agree():
    """The compiled recursions (one foreign call) and the numpy ones give the same QP data to
    round-off (1e-12 relative) with every kind of row, constant term and linear cost; without a
    compiler only the numpy path exists (skipped then), and ``NHCONTROL_BACKEND=python``
    asks for it."""
    import os

    if os.environ.get("NHCONTROL_BACKEND", "").strip().lower() == "python":
        pytest.skip("NHCONTROL_BACKEND=python: the numpy condensing is asked for")
    N, n, k = 9, 3, 2
    A, B = random_window(N, n, k, seed=12)
    C = np.array([[1.0, 1.0, 0.0]])
    mpc = LTVMPC(N, np.diag([1.0, 2.0, 3.0]), 0.3 * np.eye(k), 4 * np.eye(n), **KW,
                 soft_state=True, y_min=-0.1, y_max=0.1, C_y=C, D_y=np.array([[0.5, 0.0]]))
    lay = mpc._dense
    assert lay._c_library() is not None
    rng = np.random.default_rng(3)
    args = (A, B, rng.standard_normal((N, n)), rng.standard_normal(n), 4 * np.eye(n) + 0.5,
            rng.standard_normal((N + 1, n)), rng.standard_normal((N, k)),
            {g: (-np.ones((N, lay._rows[g][1].size)), np.ones((N, lay._rows[g][1].size)))
             for g in ("u", "r", "x", "y")},
            np.broadcast_to(C, (N, 1, n)).copy(), np.broadcast_to([[0.5, 0.0]], (N, 1, k)).copy())
    qc = condensed_qp(lay, *args, backend="c")
    qn = condensed_qp(lay, *args, backend="numpy")
    for name in ("H", "g", "A", "M"):
        a, b = getattr(qc, name), getattr(qn, name)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
    np.testing.assert_allclose(qc.lower, qn.lower, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(qc.upper, qn.upper, rtol=1e-12, atol=1e-12)
    assert abs(qc.const - qn.const) <= 1e-12 * abs(qn.const)
    np.testing.assert_array_equal(qc.H, qc.H.T)


def test_numpy_fallback_gives_the_same_steps(monkeypatch):
    """With the compiled condensing unavailable (no compiler), the numpy recursions give the
    same steps (1e-10) as the compiled ones over a receding loop."""
    N, n, k = 8, 3, 2
    A, B = random_window(N + 6, n, k, seed=5)
    a = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), soft_state=True, **KW)
    b = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), soft_state=True, **KW)
    b._dense._clib, b._dense._clib_tried = None, True          # the numpy path
    x = np.array([0.8, -0.3, 0.5])
    for t in range(6):
        sa, sb = (m.step(x, A[t:t + N], B[t:t + N]) for m in (a, b))
        assert sa.solver == sb.solver == "DAQP"
        np.testing.assert_allclose(sa.predicted_u, sb.predicted_u, atol=1e-10)
        np.testing.assert_allclose(sa.duals, sb.duals, atol=1e-8)
        x = A[t] @ x + B[t] @ sa.u


def test_multipliers_formed_on_demand_equal_the_formed_ones():
    """The condensed path keeps the multipliers unformed (`LazyDuals`) until `MPCStep.duals`
    is read: formed later (after more solves) they equal those of their own solve; shifted
    unformed, they give DAQP the same initial active set, hence the same next step, as the
    formed and shifted ones; a pickled step carries them formed."""
    import pickle

    from nhcontrol.design._condensed import LazyDuals
    from nhcontrol.design.mpc import _plan_duals

    N, n, k = 8, 3, 2
    A, B = random_window(N + 6, n, k, seed=5)
    a = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), soft_state=True, **KW)
    b = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), soft_state=True, **KW)
    x = np.array([0.8, -0.3, 0.5])
    s0 = a.step(x, A[:N], B[:N])
    lazy = _plan_duals(s0)
    assert isinstance(lazy, LazyDuals)
    formed_now = lazy()
    a.step(0.5 * x, A[1:N + 1], B[1:N + 1])                      # another solve in between
    np.testing.assert_array_equal(s0.duals, formed_now)
    assert np.count_nonzero(s0.duals) > 0
    lay = a._dense
    np.testing.assert_array_equal(lay.shift_duals(lazy)(), lay.shift_duals(s0.duals))
    np.testing.assert_array_equal(lay.shift_duals(lazy).inequality_multipliers(),
                                  lay._lam_of(lay.shift_duals(s0.duals)))
    assert lay.shift_duals(lazy).inequality_multipliers().any()     # a warm start from bounds
    warm_x = np.vstack([s0.predicted_x[1:], s0.predicted_x[-1:]])
    warm_u = np.vstack([s0.predicted_u[1:], s0.predicted_u[-1:]])
    x1 = A[0] @ x + B[0] @ s0.u
    sa = a.step(x1, A[1:N + 1], B[1:N + 1], u_prev=s0.u,
                warm_start=(warm_x, warm_u, lay.shift_duals(lazy)))
    sb = b.step(x1, A[1:N + 1], B[1:N + 1], u_prev=s0.u,
                warm_start=(warm_x, warm_u, lay.shift_duals(s0.duals)))
    np.testing.assert_array_equal(sa.predicted_u, sb.predicted_u)
    assert a._dense.iterations == b._dense.iterations
    back = pickle.loads(pickle.dumps(sa))
    np.testing.assert_array_equal(back.duals, sa.duals)


def test_controller_with_unformed_multipliers_pickles_and_continues():
    """An `MPCController` whose plan holds unformed multipliers pickles (they are formed) and
    the restored controller's next input equals the original's."""
    import pickle

    from nhcontrol.design import MPCController

    A, B = random_window(40, 3, 2, seed=2)
    c = MPCController((A, B), None, 6, np.eye(3), np.eye(2), dt=0.1, u_min=-0.1, u_max=0.1,
                      du_min=-0.05, du_max=0.05)
    for j in range(3):
        c.control(0.1 * j, np.array([1.0, -0.5, 0.3]))
    c2 = pickle.loads(pickle.dumps(c))
    np.testing.assert_array_equal(c2.control(0.3, np.ones(3)), c.control(0.3, np.ones(3)))


def test_infeasible_statuses_and_hold():
    """Hard state bounds that cannot hold: DAQP, OSQP and Clarabel all report ``infeasible``;
    ``on_failure="hold"`` holds the previous input (the same chain as the OSQP path)."""
    A, B = np.eye(2), np.array([[0.0], [0.01]])
    mpc = LTVMPC(5, np.eye(2), np.eye(1), x_min=[-0.1, -0.1], x_max=[0.1, 0.1], u_min=-1,
                 u_max=1, on_failure="hold")
    with pytest.warns(RuntimeWarning, match="holding the previous input"):
        st = mpc.step(np.array([1.0, 0.0]), A, B, u_prev=np.array([0.25]))
    assert st.attempts == (("DAQP", "infeasible"), ("OSQP", "infeasible"),
                           ("CLARABEL", "infeasible"))
    assert st.held and st.status.startswith("held: DAQP: infeasible")


def test_osqp_path_when_daqp_cannot(monkeypatch):
    """Without daqp, or with a soft bound whose quadratic penalty is zero (a singular condensed
    Hessian), the OSQP path solves every step, the reason is recorded in ``qp_path_reason``,
    and the answers equal the condensed path's (OSQP at tight tolerances, 1e-7)."""
    N, n, k = 8, 3, 2
    A, B = random_window(N, n, k, seed=4)
    x = np.array([0.8, -0.3, 0.5])
    ref = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), **KW).step(x, A, B)
    monkeypatch.setattr(_condensed, "daqp_available", lambda: False)
    from nhcontrol.design import mpc as mpc_mod
    monkeypatch.setattr(mpc_mod, "daqp_available", lambda: False)
    m = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), solver_options=TIGHT, **KW)
    assert m.qp_path == "osqp" and "not installed" in m.qp_path_reason
    st = m.step(x, A, B)
    assert st.solver == "OSQP"
    np.testing.assert_allclose(st.predicted_u, ref.predicted_u, atol=1e-7)
    monkeypatch.undo()
    z = LTVMPC(N, np.eye(n), 0.1 * np.eye(k), soft_state=(10.0, 0.0), **KW)
    assert z.qp_path == "osqp" and "rho2 = 0" in z.qp_path_reason
    assert z.step(x, A, B).solver == "OSQP"


def test_osqp_fallback_set_up_at_its_first_use():
    """With DAQP in front and no OSQP options, the OSQP workspace is set up at the first sample
    DAQP does not solve (here: DAQP stopped at one iteration), with the terminal weight given
    since; its answer equals a controller whose OSQP path was set up at construction. OSQP
    options given to the constructor are checked there (a bad one refused at once)."""
    from nhcontrol._util.errors import DesignError

    N, n, k = 8, 3, 2
    A, B = random_window(N, n, k, seed=11)
    x = np.array([0.8, -0.3, 0.5])
    Q, R = np.diag([1.0, 2.0, 0.5]), 0.1 * np.eye(k)
    lazy = LTVMPC(N, Q, R, 5 * np.eye(n), daqp_options={"iter_limit": 1}, **KW)
    eager = LTVMPC(N, Q, R, 5 * np.eye(n), qp_solver="osqp", **KW)
    assert lazy._qp is None and eager._qp is not None
    from nhcontrol.design.mpc import REALTIME_OSQP_SETTINGS      # (the NMPC's: set up late too)
    assert LTVMPC(N, Q, R, solver_options=REALTIME_OSQP_SETTINGS, **KW)._qp is None
    used = LTVMPC(N, Q, R, 5 * np.eye(n), **KW)
    assert used.step(x, A, B).solver == "DAQP" and used._qp is None    # DAQP answered: no OSQP
    import pickle

    assert pickle.loads(pickle.dumps(used))._qp is None
    Qf = 7 * np.eye(n)
    sa = lazy.step(x, A, B, Qf=Qf)
    sb = eager.step(x, A, B, Qf=Qf)
    assert sa.attempts[0] == ("DAQP", "user_limit") and sa.solver == "OSQP", sa.attempts
    assert lazy._qp is not None
    np.testing.assert_allclose(sa.predicted_u, sb.predicted_u, atol=1e-12)
    assert sa.cost == pytest.approx(sb.cost, rel=1e-12)
    with pytest.raises(DesignError, match="OSQP refused the solver options"):
        LTVMPC(N, Q, R, solver_options={"eps_absolute": 1e-9}, **KW)


@pytest.mark.parametrize("kw", [dict(), dict(u_min=-0.3, u_max=0.3)])
def test_receding_loop_without_general_rows(kw):
    """Only simple bounds (or none): the condensed QP has no general rows; every step of a
    receding loop is solved by DAQP (no silent switch to OSQP) and equals tight OSQP (1e-7)."""
    N, n, k = 10, 3, 2
    A, B = random_window(N + 8, n, k, seed=9)
    a, b = _pair(N, n, k, **kw)
    x = np.array([1.0, -0.5, 0.3])
    for t in range(8):
        sa, sb = (m.step(x, A[t:t + N], B[t:t + N]) for m in (a, b))
        assert sa.attempts == (("DAQP", "optimal"),)
        np.testing.assert_allclose(sa.predicted_u, sb.predicted_u, atol=1e-7)
        x = A[t] @ x + B[t] @ sa.u


def test_bad_qp_solver_name():
    from nhcontrol._util.errors import DesignError

    with pytest.raises(DesignError, match="qp_solver must be 'daqp' or 'osqp'"):
        LTVMPC(4, np.eye(2), np.eye(1), qp_solver="qpoases")
    with pytest.raises(DesignError, match=r"unknown DAQP settings \['primal_tolerance'\]"):
        LTVMPC(4, np.eye(2), np.eye(1), daqp_options={"primal_tolerance": 1e-9})


def test_pickled_controller_rebuilds_the_condensed_path():
    import pickle

    m = LTVMPC(5, np.eye(2), np.eye(1), u_min=-1, u_max=1)
    A, B = random_window(5, 2, 1, seed=8)
    s1 = m.step(np.array([1.0, 0.0]), A, B)
    m2 = pickle.loads(pickle.dumps(m))
    assert m2.qp_path == "daqp"
    s2 = m2.step(np.array([1.0, 0.0]), A, B)
    assert s2.solver == "DAQP"
    np.testing.assert_allclose(s2.u, m.step(np.array([1.0, 0.0]), A, B).u, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# closed loops: every sample's QP solved again by a tight OSQP reference (a shadow controller)

def _shadow(mpc, diffs):
    """Wrap ``mpc.step`` and the controllers' ``mpc._dense_step``: each call also solves the
    same QP (same arguments) by the sparse formulation with Clarabel (interior point, tight
    tolerances; independent of DAQP and of the condensing) and records ``|u_daqp − u_ref|``."""
    b = mpc.bounds
    ref = LTVMPC(mpc.horizon, mpc.Q, mpc.R, mpc._Qf, u_min=b["u_min"], u_max=b["u_max"],
                 du_min=b["du_min"], du_max=b["du_max"], x_min=b["x_min"], x_max=b["x_max"],
                 soft_state=mpc.soft_state or False, qp_solver="osqp", solver="CLARABEL",
                 solver_options=CLARABEL_TIGHT)
    step = mpc.step

    def both(x0, Ad, Bd, **kw):
        if kw.get("Qf") is not None:
            ref._Qf_given = None
        st = step(x0, Ad, Bd, **kw)
        sr = ref.step(x0, Ad, Bd, **{**kw, "warm_start": None})
        assert sr.status == "optimal"
        diffs.append((st.solver, st.status, float(np.max(np.abs(st.u - sr.u)))))
        return st
    mpc.step = both
    dense_step = mpc._dense_step

    def both_dense(x0, A, B, up, ur, Qf, c, qx, qu, duals):
        got = dense_step(x0, A, B, up, ur, Qf, c, qx, qu, duals)
        if got is not None:                  # (None: the controller calls `step`, shadowed above)
            if Qf is not None:
                ref._Qf_given = None
            sr = ref.step(x0, A, B, u_prev=up, u_ref=ur, Qf=Qf, c=c, q_x=qx, q_u=qu)
            assert sr.status == "optimal"
            diffs.append(("DAQP", "optimal", float(np.max(np.abs(got[0] - sr.u)))))
        return got
    mpc._dense_step = both_dense
    return ref


def _nmpc_case(t_final, names):
    from nhcontrol.applications.ball_plate_control import ball_plate_nmpc_setup
    from nhcontrol.design import MPCController, NMPCController
    from nhcontrol.models import ball_plate as bp
    from nhcontrol.reproduce import nmpc as rn
    from nhcontrol.simulate import forward_dynamics
    from nhcontrol.systems import LTVSystem, discretize, restrict

    case = ball_plate_nmpc_setup()                     # the set-up reproduce nmpc runs
    cm, plant, x0, xd0, ref, red, dt = (case.cm, case.plant, case.x0, case.xd0, case.ref,
                                        case.red, case.dt)
    bounds, Q7, Q8, R = case.bounds, case.Q7, case.Q8, case.R
    steps = int(round(t_final / dt))
    out = {}
    for name in names:
        if name == "ltv_mpc":
            full = LTVSystem.from_linearization(cm, ref, bp.PARTITION_8_72)
            dsys = discretize(restrict(full, red.S, red.P, states=red.states), dt,
                              steps=steps + 2 * rn.HORIZON)
            c = MPCController(dsys, ref, rn.HORIZON, Q7, R,
                              deviation=case.deviation, **bounds)
        else:
            c = NMPCController(cm, ref, bp.PARTITION_8_72, rn.HORIZON, Q8, R, dt=dt,
                               steps=steps + 1, mode=name, sqp_tol=1e-4, **bounds)
        diffs = []
        _shadow(c.mpc, diffs)
        forward_dynamics(plant, (0.0, steps * dt), x0, xd0, controller=c, rtol=1e-8,
                         atol=1e-10, t_eval=dt * np.arange(steps + 1))
        out[name] = (c, diffs)
    return out


def _check_loop(c, diffs):
    assert diffs and all(s == "DAQP" for s, _, _ in diffs)
    assert max(d for _, _, d in diffs) <= 1e-6
    assert set(c.statuses) == {"optimal"}


def test_reproduce_nmpc_loops_short():
    """1 s of the ``reproduce nmpc`` ball-plate loops (the rate and angle bounds active at the
    start): on every sample the first input equals the tight OSQP reference's to 1e-6."""
    for c, diffs in _nmpc_case(1.0, ("ltv_mpc", "rti")).values():
        _check_loop(c, diffs)


@pytest.mark.slow
def test_reproduce_nmpc_loops_full():
    """The full 10 s loops of ``reproduce nmpc`` (LTV-MPC, RTI, SQP)."""
    for c, diffs in _nmpc_case(10.0, ("ltv_mpc", "rti", "sqp")).values():
        _check_loop(c, diffs)


@pytest.mark.slow
def test_reproduce_ball_plate_mpc_loop():
    """The LTV-MPC loop of ``reproduce ball-plate`` (quick settings): every sample's first
    input equals the tight OSQP reference's to 1e-6."""
    from nhcontrol.reproduce import ball_plate as rbp
    from nhcontrol.design import mpc as mpc_mod

    diffs: list = []
    made = []
    orig = mpc_mod.LTVMPC.__init__

    def init(self, *a, **kw):
        orig(self, *a, **kw)
        if kw.get("qp_solver", "daqp") == "daqp" and not made:
            made.append(self)
            _shadow(self, diffs)
    mpc_mod.LTVMPC.__init__ = init
    try:
        rbp.run(quick=True)
    finally:
        mpc_mod.LTVMPC.__init__ = orig
    assert len(diffs) > 100
    assert all(s == "DAQP" and st == "optimal" for s, st, _ in diffs)
    assert max(d for _, _, d in diffs) <= 1e-6


def test_finite_check_of_the_answer_survives_an_overflowing_sum():
    """The answer's finite check sums first (fast) and checks the entries when the sum is not
    finite: entries near the largest float whose sum overflows are finite, a NaN or an inf
    is not."""
    from nhcontrol.design.mpc import _finite

    big = np.full((3, 2), 1.5e308)
    with np.errstate(over="ignore"):                 # (the sum overflows on purpose)
        assert not np.isfinite(big.sum()) and _finite(big)
    for bad in (np.nan, np.inf, -np.inf):
        a = np.zeros((3, 2))
        a[1, 1] = bad
        assert not _finite(a)
    assert _finite(np.zeros((21, 7)))
