"""Optimal trajectories by direct collocation (nhcontrol.optimize.optimal_trajectory).

Closed form: the minimum-effort transfer of a linear system ``Ẋ = A X + B u`` between two states
in a fixed time ``T`` costs ``J* = dᵀ W(T)⁻¹ d`` (``d = X_T − e^{AT} X_0``, ``W`` the
controllability Gramian with ``R = I``); the collocation's objective converges to it at the
scheme's order (trapezoidal 2, Hermite–Simpson 4). Exact Jacobians: against the prepared
linearizer and central differences.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

pytest.importorskip("cyipopt", reason="nhcontrol.optimize needs the optional extra 'optimize' (cyipopt)")

from nhcontrol._util.errors import OptimizationError  # noqa: E402
from nhcontrol.analysis.gramian import constant_gramian  # noqa: E402
from nhcontrol.modeling import MultibodySystem  # noqa: E402
from nhcontrol.optimize import optimal_trajectory  # noqa: E402
from nhcontrol.optimize._reduced import ReducedDynamics  # noqa: E402

MASS, STIFF, DAMP = 2.0, 3.0, 0.4


@pytest.fixture(scope="module")
def oscillator():
    """A mass on a spring and a damper driven by a force: linear dynamics (n = 1)."""
    mb = MultibodySystem("optimize_oscillator")
    s = mb.add_coordinates("s")
    (sd,) = mb.velocities
    F = mb.add_inputs("F")
    m, k, c = mb.add_parameters(m=MASS, k=STIFF, c=DAMP)
    body = mb.add_body("cart", mass=m, inertia=sp.zeros(3), position=[s, 0, 0])
    mb.add_force(body, [F - k * s - c * sd, 0, 0])
    return mb.compile()


def _closed_form(T: float) -> float:
    A = np.array([[0.0, 1.0], [-STIFF / MASS, -DAMP / MASS]])
    B = np.array([[0.0], [1.0 / MASS]])
    W = constant_gramian(A, B @ B.T, T)
    from scipy.linalg import expm

    d = np.array([1.0, 0.0]) - expm(A * T) @ np.array([0.0, 0.0])
    return float(d @ np.linalg.solve(W, d))


@pytest.mark.parametrize("method, order", [("backward-euler", 1), ("trapezoidal", 2), ("hermite-simpson", 4)])
def test_minimum_effort_equals_gramian_closed_form(oscillator, method, order):
    T = 2.0
    Jstar = _closed_form(T)
    errs = []
    for N in (9, 17, 33):
        sol = optimal_trajectory(oscillator, t_final=T, nodes=N, initial={"s": 0.0, "s_d": 0.0},
                                 final={"s": 1.0, "s_d": 0.0}, effort=1.0, method=method, tol=1e-12)
        assert sol.success, sol
        errs.append(abs(sol.objective - Jstar) / Jstar)
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    # observed order within ±0.5 of the scheme's order (h halves: error / 2^order)
    assert np.all(np.abs(rates - order) < 0.5), (errs, rates)
    assert errs[-1] < {1: 0.2, 2: 1e-2, 4: 1e-5}[order]


def test_reference_is_admissible_and_reproduced_open_loop(oscillator):
    from nhcontrol.simulate import forward_dynamics

    sol = optimal_trajectory(oscillator, t_final=2.0, nodes=41, initial={"s": 0.0, "s_d": 0.0},
                             final={"s": 1.0, "s_d": 0.0}, effort=1.0, u_bounds={"F": (-8.0, 8.0)})
    assert sol.success
    assert np.all(np.abs(sol.u) <= 8.0 + 1e-7)
    at_samples = sol.reference.check(oscillator, sol.samples["t"], tol=1e-9)
    assert at_samples.ok, str(at_samples)           # exact dynamics at every sample
    between = sol.reference.check(oscillator, tol=1e-3)
    assert between.ok, str(between)                 # the interpolant between them
    res = forward_dynamics(oscillator, (0.0, 2.0), sol.x[0], sol.xd[0], u=sol.reference,
                           t_eval=sol.t)
    err = np.max(np.abs(np.asarray(res.x)[:, 0] - sol.x[:, 0]))
    assert err < 1e-4, err
    assert "TrajectorySolution(hermite-simpson" in repr(sol)


def test_minimum_time_bang_bang(oscillator):
    """Minimum time with a bounded force: the time is the one that makes the transfer feasible,
    and the input saturates (a bang-bang law)."""
    sol = optimal_trajectory(oscillator, t_final=(0.5, 5.0), nodes=31, initial={"s": 0.0, "s_d": 0.0},
                             final={"s": 1.0, "s_d": 0.0}, cost="time", u_bounds={"F": (-5.0, 5.0)},
                             method="trapezoidal")
    assert sol.success
    assert 0.5 < sol.t_final < 5.0
    assert np.mean(np.abs(sol.u[:, 0]) > 4.9) > 0.6


def test_exact_jacobian_matches_linearizer_and_finite_differences():
    from nhcontrol.models import single_track as st

    cm = st.build("force_torque").system.compile()
    part = {"independent": ["x", "gamma"], "admissible_dependent": ["y", "psi"], "dependent": []}
    p = np.array(list(cm.parameters.values()))
    rd = ReducedDynamics(cm, part, p, np.zeros(cm.n))
    rng = np.random.default_rng(3)
    X = np.array([[0.0, 0.05, 15.0, 0.1, 0.3, 0.1]]) + 0.01 * rng.standard_normal((3, rd.ns))
    U = np.array([[200.0, 0.0, 5.0]]) + rng.standard_normal((3, rd.k))
    pts = rd.evaluate(X, U)
    lz = cm.linearizer(part, p=p, check=False)
    for i in range(3):
        A, B = lz(pts.x[i], pts.xd[i], pts.xdd[i], pts.lam[i], U[i])
        assert np.allclose(A, pts.J[i, :, :rd.ns], rtol=1e-10, atol=1e-10 * np.max(np.abs(A)))
        assert np.allclose(B, pts.J[i, :, rd.ns:], rtol=1e-10, atol=1e-10 * np.max(np.abs(B)))
    z = np.concatenate([X[0], U[0]])
    for j in range(z.size):
        step = 1e-6 * max(1.0, abs(z[j]))
        zp, zm = z.copy(), z.copy()
        zp[j] += step
        zm[j] -= step
        fp = rd.evaluate(zp[None, :rd.ns], zp[None, rd.ns:], jac=False)
        fm = rd.evaluate(zm[None, :rd.ns], zm[None, rd.ns:], jac=False)
        fd = (fp.f[0] - fm.f[0]) / (2 * step)
        lam_fd = (fp.lam[0] - fm.lam[0]) / (2 * step)
        scale = 1.0 + np.max(np.abs(pts.J[0]))
        assert np.allclose(fd, pts.J[0, :, j], atol=1e-6 * scale)
        assert np.allclose(lam_fd, pts.Tlam[0, :, j], atol=1e-6 * (1 + np.max(np.abs(pts.Tlam[0]))))


def test_nlp_jacobian_with_paths_matches_finite_differences():
    """The whole NLP Jacobian (defects, Hermite–Simpson midpoints, free time, multiplier bounds
    and friction rows) against central differences of the constraint function."""
    from nhcontrol.models import single_track as st
    from nhcontrol.optimize import trajectory as tj
    from nhcontrol.optimize._paths import PathRows
    from nhcontrol.optimize._transcription import Transcription

    cm = st.build("force_torque").system.compile()
    part = {"independent": ["x", "gamma"], "admissible_dependent": ["y", "psi"], "dependent": []}
    p = np.array(list(cm.parameters.values()))
    rd = ReducedDynamics(cm, part, p, np.zeros(cm.n))
    tr = Transcription(rd, 4, "hermite-simpson", True, 1.0)
    loads = st.static_axle_loads(cm)
    paths = PathRows(cm, rd, tr, p, {}, {"x_d": 15.0}, {}, {}, {"rear_skate": (-1e4, 1e4)},
                     {"mu": 0.9, "normal_loads": dict(loads)})
    obj = tj._Objective(tr, np.eye(3) * 1e-4, {"time": 1.0})
    nlp = tj._NLP(tr, obj, paths)
    rng = np.random.default_rng(0)
    z = np.zeros(tr.nvar)
    W = z[:-1].reshape(tr.P, tr.nz)
    W[:, :rd.ns] = [0.0, 0.02, 15.0, 0.1, 0.3, 0.05]
    W[:, rd.ns:] = [300.0, 0.0, 3.0]
    z[:-1] += 0.01 * rng.standard_normal(z.size - 1)
    z[-1] = 1.3
    rows, cols = nlp.jacobianstructure()
    vals = nlp.jacobian(z)
    Jd = np.zeros((tr.ndef + paths.lower.size, z.size))
    np.add.at(Jd, (rows, cols), vals)
    Jfd = np.zeros_like(Jd)
    for j in range(z.size):
        step = 1e-6 * max(1.0, abs(z[j]))
        zp, zm = z.copy(), z.copy()
        zp[j] += step
        zm[j] -= step
        Jfd[:, j] = (nlp.constraints(zp) - nlp.constraints(zm)) / (2 * step)
    err = np.abs(Jd - Jfd) / (1.0 + np.abs(Jfd))
    assert np.max(err) < 1e-5, np.unravel_index(np.argmax(err), err.shape)
    g = nlp.gradient(z)
    gfd = np.array([(nlp.objective(z + e) - nlp.objective(z - e)) / 2e-6
                    for e in 1e-6 * np.eye(z.size)])
    assert np.allclose(g, gfd, rtol=1e-5, atol=1e-6)


def test_jacobian_after_constraints_reuses_their_values():
    """IPOPT asks for the constraints, then the Jacobian at the same point: the Jacobian reuses
    the values (full coordinates, saddle-point matrices, accelerations) and equals the one of a
    fresh evaluation exactly; the statistics split the solve's time."""
    from nhcontrol.models import single_track as st
    from nhcontrol.optimize import trajectory as tj
    from nhcontrol.optimize._paths import PathRows
    from nhcontrol.optimize._transcription import Transcription

    cm = st.build("force_torque").system.compile()
    part = {"independent": ["x", "gamma"], "admissible_dependent": ["y", "psi"], "dependent": []}
    p = np.array(list(cm.parameters.values()))

    def nlp():
        rd = ReducedDynamics(cm, part, p, np.zeros(cm.n))
        tr = Transcription(rd, 5, "hermite-simpson", True, 1.0)
        paths = PathRows(cm, rd, tr, p, {}, {}, {}, {}, {"rear_skate": (-1e4, 1e4)}, None)
        return tj._NLP(tr, tj._Objective(tr, np.eye(3) * 1e-4, {"time": 1.0}), paths)

    a, b = nlp(), nlp()
    z = np.zeros(a.tr.nvar)
    W = z[:-1].reshape(a.tr.P, a.tr.nz)
    W[:, :a.tr.ns] = [0.0, 0.02, 15.0, 0.1, 0.3, 0.05]
    W[:, a.tr.ns:] = [300.0, 0.0, 3.0]
    z[:-1] += 0.01 * np.random.default_rng(1).standard_normal(z.size - 1)
    z[-1] = 1.2
    c = a.constraints(z)
    values = a.ev._pts
    J = a.jacobian(z)
    assert a.ev._pts.x is values.x and a.ev._pts.K is values.K          # reused, not recomputed
    np.testing.assert_array_equal(J, b.jacobian(z))
    np.testing.assert_array_equal(c, b.constraints(z))


def test_statistics_split_evaluations_from_ipopt(oscillator):
    sol = optimal_trajectory(oscillator, t_final=2.0, nodes=9, initial={"s": 0.0, "s_d": 0.0},
                             final={"s": 1.0, "s_d": 0.0}, effort=1.0)
    assert 0.0 < sol.stats.evaluation_time < sol.stats.time


@pytest.fixture(scope="module")
def cart_pole():
    """A cart (s) with a pendulum (th) driven by a force on the cart: no constraints, n = 2."""
    mb = MultibodySystem("optimize_cart_pole")
    s, th = mb.add_coordinates("s th")
    F = mb.add_inputs("F")
    m, mp, L, g = mb.add_parameters(m=1.0, mp=0.3, L=0.5, g=9.81)
    cart = mb.add_body("cart", mass=m, inertia=sp.zeros(3), position=[s, 0, 0])
    mb.add_body("bob", mass=mp, inertia=sp.zeros(3),
                position=[s + L * sp.sin(th), -L * sp.cos(th), 0])
    mb.add_gravity(g, direction=(0, -1, 0))
    mb.add_force(cart, [F, 0, 0])
    return mb.compile()


def test_implicit_backward_euler_rows_and_optimum(cart_pole, monkeypatch):
    """Backward Euler on a model without constraints uses the implicit rows
    ``M (v_{i+1} − v_i) − h Q``: exact Jacobian (central differences, free time, the partition's
    order of the coordinates reversed) and the optimum of the explicit rows."""
    from nhcontrol.optimize import _transcription as tm

    part = {"independent": ["th", "s"], "admissible_dependent": [], "dependent": []}
    p = np.array(list(cart_pole.parameters.values()))
    rd = ReducedDynamics(cart_pole, part, p, np.zeros(2))
    tr = tm.Transcription(rd, 6, "backward-euler", True, 1.0)
    assert tr.implicit
    rng = np.random.default_rng(5)
    z = rng.standard_normal(tr.nvar)
    z[-1] = 1.3
    J = np.zeros((tr.ndef, tr.nvar))
    np.add.at(J, (tr.rows, tr.cols), tr.implicit_jacobian(z))
    Jfd = np.column_stack([(tr.implicit_defects(z + e) - tr.implicit_defects(z - e)) / 2e-6
                           for e in 1e-6 * np.eye(tr.nvar)])
    assert np.max(np.abs(J - Jfd)) < 1e-6 * (1.0 + np.max(np.abs(J)))
    # the same equations: the implicit rows vanish where the explicit ones do (scaled by M)
    X, U, T = tr.split(z)
    pts = rd.evaluate(X, U, jac=False)
    explicit = tr.defects(X, pts.f, T).reshape(5, 4)
    implicit = tr.implicit_defects(z).reshape(5, 4)
    np.testing.assert_allclose(implicit[:, :2], explicit[:, :2], atol=1e-12)
    args = dict(t_final=2.0, nodes=31, partition=part, initial={"s": 0, "th": 0, "s_d": 0, "th_d": 0},
                final={"s": 1.0, "th": 0, "s_d": 0, "th_d": 0}, effort=1.0, method="backward-euler",
                u_bounds={"F": (-4.0, 4.0)}, tol=1e-8)
    sol = optimal_trajectory(cart_pole, **args)
    plain = tm.Transcription.__init__

    def explicit_rows(self, *a, **k):
        plain(self, *a, **k)
        self.implicit = False

    monkeypatch.setattr(tm.Transcription, "__init__", explicit_rows)
    ref = optimal_trajectory(cart_pole, **args)
    assert sol.status == ref.status == 0
    assert abs(sol.objective - ref.objective) <= 1e-7 * ref.objective
    np.testing.assert_allclose(sol.X, ref.X, atol=1e-6)


def test_errors_name_the_problem(oscillator):
    with pytest.raises(OptimizationError, match="unknown"):
        optimal_trajectory(oscillator, t_final=1.0, nodes=5, initial={"q": 0.0}, effort=1.0)
    with pytest.raises(OptimizationError, match="objective is empty"):
        optimal_trajectory(oscillator, t_final=1.0, nodes=5, initial={"s": 0.0})
    with pytest.raises(OptimizationError, match="free final time"):
        optimal_trajectory(oscillator, t_final=1.0, nodes=5, initial={"s": 0.0}, cost="time")
    with pytest.raises(OptimizationError, match="method"):
        optimal_trajectory(oscillator, t_final=1.0, nodes=5, initial={"s": 0.0}, effort=1.0,
                           method="euler")
    with pytest.raises(OptimizationError, match="u_bounds"):
        optimal_trajectory(oscillator, t_final=1.0, nodes=5, initial={"s": 0.0}, effort=1.0,
                           u_bounds={"G": (0, 1)})


def test_lane_corridor_derivatives_are_exact():
    """The cone-lane path constraint of the lane-change showcase: its hand-derived derivatives
    against central differences."""
    from nhcontrol.applications.trajectory_optimization import track_corridor
    from nhcontrol.models import lane_change as lc

    pc = track_corridor(lc.ISO_TRACK, 1.1, 1.58)
    rng = np.random.default_rng(2)
    x = np.column_stack([rng.uniform(-5, 130, 40), rng.uniform(-1, 4, 40), rng.uniform(-0.2, 0.2, 40),
                         np.zeros(40)])
    g, gx, _, _ = pc.fun(x, np.zeros_like(x), np.zeros((40, 3)))
    for j in range(3):
        e = np.zeros(4)
        e[j] = 1e-6
        fd = (pc.fun(x + e, x, np.zeros((40, 3)))[0] - pc.fun(x - e, x, np.zeros((40, 3)))[0]) / 2e-6
        assert np.allclose(gx[:, :, j], fd, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_reproduce_quick_lane_change_and_identification():
    from nhcontrol.reproduce import trajectory_optimization as rt

    res = rt.run(quick=True)
    lane, ident = res["lane_change"], res["identification"]
    assert lane["status"] == 0          # converged to tol (the acceptable-level stop is off)
    assert lane["cone_clearance_m"] > 0.0
    assert lane["peak_friction_utilisation"] < 1.02
    assert all(abs(z) < 3 for z in ident["z_scores"].values())
    assert all(abs(e) < 0.01 for e in ident["relative_errors"].values())
    assert "lane change" in rt.summary(res)


def test_holonomic_model_dependent_coordinates_and_reference():
    """A pendulum in absolute coordinates (n = 3, m = 2): the dependent coordinates x, y come
    from Newton on C = 0 at every collocation point; the reference is admissible at its samples
    and an open-loop simulation reproduces it."""
    from nhcontrol.simulate import forward_dynamics

    mb = MultibodySystem("optimize_pendulum_pin")
    x, y, th = mb.add_coordinates("x y theta")
    L, m, g = mb.add_parameters(L=1.0, m=1.0, g=9.81)
    tau = mb.add_inputs("tau")
    bar = mb.add_body("bar", mass=m, inertia=sp.diag(m * L**2 / 12, 0, m * L**2 / 12),
                      position=[x, y, 0], orientation=sp.Matrix([[sp.cos(th), -sp.sin(th), 0],
                                                                  [sp.sin(th), sp.cos(th), 0], [0, 0, 1]]))
    mb.add_gravity(g, direction=(0, -1, 0))
    mb.add_torque(bar, [0, 0, tau])
    mb.add_holonomic(x - L / 2 * sp.sin(th), name="pin_x")
    mb.add_holonomic(y + L / 2 * sp.cos(th), name="pin_y")
    cm = mb.compile()
    part = {"independent": ["theta"], "admissible_dependent": [], "dependent": ["x", "y"]}
    sol = optimal_trajectory(cm, t_final=2.0, nodes=41, partition=part, effort=1.0,
                             initial={"theta": 0.0, "theta_d": 0.0}, final={"theta": 0.8, "theta_d": 0.0},
                             x_guess=[0.0, -0.5, 0.0])
    assert sol.success
    assert np.allclose(sol.x[:, 0], 0.5 * np.sin(sol.x[:, 2]), atol=1e-10)
    assert sol.reference.check(cm, sol.samples["t"], tol=1e-9).ok
    ol = forward_dynamics(cm, (0.0, 2.0), sol.x[0], sol.xd[0], u=sol.reference, t_eval=sol.t)
    assert np.max(np.abs(np.asarray(ol.x)[:, 2] - sol.x[:, 2])) < 1e-3   # collocation accuracy
