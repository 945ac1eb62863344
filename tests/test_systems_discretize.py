"""Tests of the exact ZOH discretization and of DiscreteLTV."""

from __future__ import annotations

import control
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from nhcontrol._util.errors import LinearSystemError, SolverError, TimeRangeError
from nhcontrol.systems import DiscreteLTV, LTVSystem, discretize
from nhcontrol.systems.discretize import _magnus_composite

TWO_PI = 2 * np.pi


def hill(period: float | None = TWO_PI, **kw) -> LTVSystem:
    """Damped Hill-type oscillator with a time-varying input gain (2 states, 2 inputs)."""
    return LTVSystem(lambda t: [[0.0, 1.0], [-2.0 - np.cos(t) - 0.3 * np.sin(2 * t), -0.1]],
                     lambda t: [[0.0, 0.2 * np.cos(t)], [1.0 + 0.5 * np.sin(t), 0.0]],
                     period=period, states=["q", "v"], inputs=["F", "G"], **kw)


def simulate_pc(sys: LTVSystem, x0, U, t0, dt, rtol=1e-12):
    """Fine continuous simulation with the input held on each step (restarted each step)."""
    xs = [np.asarray(x0, float)]
    for k, u in enumerate(U):
        tk = t0 + k * dt
        sol = solve_ivp(lambda t, x: sys.A(t) @ x + sys.B(t) @ u, (tk, tk + dt), xs[-1],
                        method="DOP853", rtol=rtol, atol=1e-14)
        xs.append(sol.y[:, -1])
    return np.array(xs)


def test_lti_matches_control_sample_system():
    """expm of the augmented matrix equals python-control's ZOH to 1e-13."""
    ss = control.ss([[0, 1, 0], [-2, -0.3, 1], [0, 0, -5]], [[0], [0], [1.0]], np.eye(3), 0)
    d = discretize(ss, 0.05, steps=4)
    sd = control.sample_system(ss, 0.05, method="zoh")
    assert d.nsteps == 4 and d.period_steps == 1
    for k in range(4):
        np.testing.assert_allclose(d.Ad[k], sd.A, rtol=0, atol=1e-13)
        np.testing.assert_allclose(d.Bd[k], sd.B, rtol=0, atol=1e-13)
    assert d.at(2).dt == 0.05


def test_ltv_matches_fine_simulation_with_piecewise_constant_input():
    """x_{k+1} = Ad x_k + Bd u_k reproduces solve_ivp (rtol 1e-12) to 1e-9 over 40 steps."""
    sys = hill()
    dt, N = 0.37, 40
    d = discretize(sys, dt, t0=0.2, steps=N)
    U = np.random.default_rng(1).normal(size=(N, 2))
    x0 = [1.0, -0.5]
    X = d.simulate(x0, U)
    Xref = simulate_pc(sys, x0, U, 0.2, dt)
    np.testing.assert_allclose(X, Xref, rtol=0, atol=1e-9 * np.abs(Xref).max())
    np.testing.assert_allclose(d.times, 0.2 + dt * np.arange(N + 1))


def test_magnus_and_ivp_integrators_agree():
    sys = hill()
    d1 = discretize(sys, 0.1, steps=30, integrator="magnus")
    d2 = discretize(sys, 0.1, steps=30, integrator="ivp")
    np.testing.assert_allclose(d1.Ad, d2.Ad, rtol=0, atol=1e-11)
    np.testing.assert_allclose(d1.Bd, d2.Bd, rtol=0, atol=1e-11)


def test_magnus_scheme_is_sixth_order():
    """Halving the substep divides the one-step error by ~2^6 = 64 (between 45 and 90)."""
    sys = hill()
    t0, dt = 0.3, 0.8
    ref = discretize(sys, dt, t0=t0, steps=1, integrator="ivp", rtol=1e-13)
    errs = []
    for m in (2, 4, 8):
        E = _magnus_composite(sys, np.array([t0]), dt, m)[0]
        errs.append(max(np.abs(E[:2, :2] - ref.Ad[0]).max(), np.abs(E[:2, 2:] - ref.Bd[0]).max()))
    ratios = np.array(errs[:-1]) / np.array(errs[1:])
    assert np.all((ratios > 45) & (ratios < 90)), ratios


def test_periodic_reuse_equals_recomputation():
    """dt = T/25: steps are computed for one period and repeated; equal to a non-periodic run."""
    p = 25
    d = discretize(hill(), TWO_PI / p, steps=2 * p + 7)
    assert d.period_steps == p
    np.testing.assert_array_equal(d.Ad[p:2 * p], d.Ad[:p])
    np.testing.assert_array_equal(d.Bd[2 * p:], d.Bd[:7])
    d_np = discretize(hill(period=None), TWO_PI / p, steps=2 * p + 7)
    assert d_np.period_steps is None
    np.testing.assert_allclose(d.Ad, d_np.Ad, rtol=0, atol=1e-11)
    np.testing.assert_allclose(d.Bd, d_np.Bd, rtol=0, atol=1e-11)


def test_default_steps():
    assert discretize(hill(), TWO_PI / 10).nsteps == 10
    assert discretize(hill(period=None, t_range=(0.0, 1.0)), 0.25).nsteps == 4
    assert discretize(control.ss([[-1.0]], [[1.0]], [[1.0]], 0), 0.1).nsteps == 1


def test_large_step_is_refined():
    """A step of a full period (fast rotation of the frame) is split adaptively, still exact."""
    sys = hill()
    d = discretize(sys, TWO_PI, steps=1)
    ref = discretize(sys, TWO_PI / 200, steps=200)
    np.testing.assert_allclose(d.Ad[0], ref.transition(200, 0), rtol=0, atol=1e-9)


@pytest.mark.parametrize("kwargs, err, msg", [
    (dict(dt=0.0), LinearSystemError, "dt must be a positive"),
    (dict(dt=0.1, method="foh"), LinearSystemError, "method must be 'zoh'"),
    (dict(dt=0.1, integrator="rk4"), LinearSystemError, "integrator must be"),
    (dict(dt=0.1, steps=0), LinearSystemError, "steps must be a positive integer"),
    (dict(dt=0.1, steps=2.5), LinearSystemError, "steps must be a positive integer"),
    (dict(dt=0.1, rtol=2.0), LinearSystemError, r"rtol must lie in \(0, 1\)"),
])
def test_discretize_argument_errors(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        discretize(hill(), **kwargs)


def test_discretize_needs_steps_or_range():
    with pytest.raises(LinearSystemError, match="steps is required"):
        discretize(hill(period=None), 0.1)


def test_discretize_outside_range():
    with pytest.raises(TimeRangeError, match="discretization grid"):
        discretize(hill(period=None, t_range=(0.0, 1.0)), 0.3, steps=5)
    with pytest.raises(LinearSystemError, match="no full step"):
        discretize(hill(period=None, t_range=(0.0, 1.0)), 2.0)


def test_solver_error_when_substeps_exhausted():
    with pytest.raises(SolverError, match="did not reach rtol"):
        discretize(hill(), 50.0, steps=1, max_substeps=2)


# ---------------------------------------------------------------- DiscreteLTV
def test_discrete_ltv_is_immutable_and_checked():
    d = DiscreteLTV(np.zeros((3, 2, 2)), np.zeros((3, 2, 1)), 0.1)
    with pytest.raises(ValueError):
        d.Ad[0, 0, 0] = 1.0
    with pytest.raises(AttributeError):
        d.dt = 0.2  # type: ignore[misc]
    assert d.states == ("x[0]", "x[1]") and d.inputs == ("u[0]",)
    assert (d.nstates, d.ninputs, d.nsteps) == (2, 1, 3)


@pytest.mark.parametrize("Ad, Bd, dt, msg", [
    (np.zeros((3, 2, 3)), np.zeros((3, 2, 1)), 0.1, r"square state matrices"),
    (np.zeros((3, 2, 2)), np.zeros((2, 2, 1)), 0.1, r"Bd must have shape \(N, n, k\) = \(3, 2, k\)"),
    (np.zeros((3, 2, 2)), np.zeros((3, 2, 1)), -0.1, "dt must be a positive"),
    (np.zeros((0, 2, 2)), np.zeros((0, 2, 1)), 0.1, "at least one step"),
    (np.full((1, 1, 1), np.nan), np.zeros((1, 1, 1)), 0.1, "non-finite"),
])
def test_discrete_ltv_errors(Ad, Bd, dt, msg):
    with pytest.raises(LinearSystemError, match=msg):
        DiscreteLTV(Ad, Bd, dt)


def test_discrete_ltv_index_and_transition_errors():
    d = DiscreteLTV.from_lti(np.eye(2), np.ones((2, 1)), 0.1, 3)
    assert d.at(-1).A.shape == (2, 2)
    with pytest.raises(LinearSystemError, match=r"step index must be an integer in \[-3, 3\)"):
        d.at(3)
    with pytest.raises(LinearSystemError, match="0 <= k0 <= k1 <= N = 3"):
        d.transition(1, 2)
    with pytest.raises(LinearSystemError, match=r"Bd must have shape \(n, k\) = \(2, k\)"):
        DiscreteLTV.from_lti(np.eye(2), np.ones((3, 1)), 0.1, 3)


def test_discrete_transition_composes():
    d = discretize(hill(), 0.2, steps=10)
    np.testing.assert_allclose(d.transition(10, 0), d.transition(10, 4) @ d.transition(4, 0), atol=1e-14)
    assert list(d.at(3).state_labels) == ["q", "v"]


@pytest.mark.parametrize("scale, tol", [(0.01, 1e-15), (1.0, 1e-14), (3.0, 1e-13)])
def test_expm_batch_matches_scipy(scale, tol):
    """Batched Taylor scaling-and-squaring vs scipy.linalg.expm, relative max-abs error."""
    from scipy.linalg import expm
    from nhcontrol.systems.discretize import expm_batch
    X = np.random.default_rng(2).normal(size=(50, 5, 5)) * scale / 5
    E = expm_batch(X)
    R = np.array([expm(x) for x in X])
    assert (np.abs(E - R).max(axis=(1, 2)) / np.abs(R).max(axis=(1, 2))).max() < tol


def test_two_steps_compose_into_one():
    """Semigroup invariant: one step of 2dt equals two steps of dt,
    Ad = Ad1 Ad0 and Bd = Ad1 Bd0 + Bd1 (to 1e-11), also with t0 != 0."""
    sys = hill()
    two = discretize(sys, 0.3, t0=1.7, steps=2)
    one = discretize(sys, 0.6, t0=1.7, steps=1)
    np.testing.assert_allclose(one.Ad[0], two.Ad[1] @ two.Ad[0], rtol=0, atol=1e-11)
    np.testing.assert_allclose(one.Bd[0], two.Ad[1] @ two.Bd[0] + two.Bd[1], rtol=0, atol=1e-11)


def test_periodic_reuse_with_offset_start():
    p = 20
    d = discretize(hill(), TWO_PI / p, t0=0.9, steps=p + 3)
    ref = discretize(hill(period=None), TWO_PI / p, t0=0.9 + TWO_PI, steps=3)
    np.testing.assert_allclose(d.Ad[p:], ref.Ad, rtol=0, atol=1e-11)


def test_steps_required_when_period_does_not_divide():
    with pytest.raises(LinearSystemError, match="its period is not a multiple of dt"):
        discretize(hill(), 0.3)
