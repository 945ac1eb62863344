"""Tests of the controllability Gramian (Eq. (8.85)) for LTI, LTV and discrete systems."""

from __future__ import annotations

import control
import numpy as np
import pytest

from nhcontrol._util.errors import LinearSystemError, TimeRangeError
from nhcontrol.analysis import gramian, transition_matrix
from nhcontrol.systems import DiscreteLTV, LTVSystem, discretize


def double_integrator_W(T: float) -> np.ndarray:
    """∫_0^T [T-τ, 1]ᵀ[T-τ, 1] dτ."""
    return np.array([[T ** 3 / 3, T ** 2 / 2], [T ** 2 / 2, T]])


def oscillator_W(w: float, T: float) -> np.ndarray:
    """A = [[0, w], [-w, 0]], B = e2: e^{As} B = [sin ws, cos ws]ᵀ."""
    return np.array([[T / 2 - np.sin(2 * w * T) / (4 * w), np.sin(w * T) ** 2 / (2 * w)],
                     [np.sin(w * T) ** 2 / (2 * w), T / 2 + np.sin(2 * w * T) / (4 * w)]])


DI = control.ss([[0, 1], [0, 0]], [[0], [1]], np.eye(2), 0)


@pytest.mark.parametrize("T", [0.1, 1.0, 7.0])
def test_double_integrator_closed_form(T):
    """Van Loan block exponential: relative 1e-13."""
    g = gramian(DI, 0.0, T)
    np.testing.assert_allclose(g.W, double_integrator_W(T), rtol=1e-13)
    assert g.rank == 2 and g.is_controllable and not g.discrete


@pytest.mark.parametrize("w, T", [(1.0, np.pi), (2.5, 1.3)])
def test_harmonic_oscillator_closed_form(w, T):
    ss = control.ss([[0, w], [-w, 0]], [[0], [1]], np.eye(2), 0)
    np.testing.assert_allclose(gramian(ss, 0.0, T).W, oscillator_W(w, T), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("w, T", [(1.0, np.pi), (2.5, 1.3)])
def test_ltv_path_reproduces_closed_form(w, T):
    """The same oscillator given as a (time-varying-looking) callable uses the Lyapunov ODE:
    agreement 1e-10 relative to |W| (DOP853 at rtol 1e-11)."""
    s = LTVSystem(lambda t: [[0.0, w], [-w, 0.0 * t]], lambda t: [[0.0], [1.0]])
    assert not s.is_constant
    ref = oscillator_W(w, T)
    np.testing.assert_allclose(gramian(s, 0.0, T).W, ref, rtol=0, atol=1e-10 * np.abs(ref).max())


def test_stable_lti_agrees_with_control_gram():
    """Over [0, 40] with slowest pole -0.5 (e^{-40} ≈ 4e-18): equals control.gram to 1e-12."""
    ss = control.ss([[-1, 2, 0], [-2, -1, 0], [0, 0, -0.5]], [[1, 0], [0, 0], [0, 1]], np.eye(3), 0)
    np.testing.assert_allclose(gramian(ss, 0.0, 40.0).W, control.gram(ss, "c"), rtol=1e-12, atol=1e-14)


def test_unstable_lti_is_fine_on_finite_interval():
    ss = control.ss([[1.0]], [[1.0]], [[1.0]], 0)
    # ∫_0^T e^{2s} ds = (e^{2T} - 1) / 2
    assert gramian(ss, 0.0, 2.0).W[0, 0] == pytest.approx((np.exp(4.0) - 1) / 2, rel=1e-13)


def test_ltv_controllable_although_every_frozen_pair_is_not():
    """A = 0, B(t) = [cos t, sin t]ᵀ: rank [B, AB] = 1 at every t, but W(0, π) = (π/2) I."""
    s = LTVSystem(np.zeros((2, 2)), lambda t: [[np.cos(t)], [np.sin(t)]])
    from nhcontrol.analysis import controllability
    for t in np.linspace(0, np.pi, 7):
        assert controllability(s, t=t).rank == 1
    g = gramian(s, 0.0, np.pi)
    np.testing.assert_allclose(g.W, np.pi / 2 * np.eye(2), atol=1e-10)
    assert g.rank == 2 and g.is_controllable


def test_uncontrollable_ltv_reports_direction():
    """Third state decoupled from the input: rank 2, null direction e3 (up to sign)."""
    s = LTVSystem(lambda t: [[0.0, 1.0, 0.0], [-1.0 - 0.2 * np.cos(t), 0.0, 0.0], [0.0, 0.0, -0.3]],
                  lambda t: [[0.0], [1.0], [0.0]], period=2 * np.pi)
    g = gramian(s, 0.0, 2 * np.pi)
    assert g.rank == 2 and not g.is_controllable
    v = g.uncontrollable_directions
    assert v.shape == (3, 1) and abs(abs(v[2, 0]) - 1) < 1e-10
    assert g.singular_values[-1] <= g.rank_result.tol


def test_frame_t0_relation():
    """W0 = Φ(t0, t1) Wc Φ(t0, t1)ᵀ, for LTV (ODE) and LTI (expm)."""
    s = LTVSystem(lambda t: [[0.0, 1.0], [-2.0 - np.cos(t), -0.1]], lambda t: [[0.0], [1.0 + 0.3 * np.sin(t)]])
    g1 = gramian(s, 0.5, 3.0)
    g0 = gramian(s, 0.5, 3.0, frame="t0")
    P = transition_matrix(s, 0.5, 3.0)
    np.testing.assert_allclose(g0.W, P @ g1.W @ P.T, rtol=1e-9, atol=1e-11)
    ss = control.ss([[0, 1], [-2, -0.1]], [[0], [1]], np.eye(2), 0)
    P = transition_matrix(ss, 0.0, 2.0)
    np.testing.assert_allclose(gramian(ss, 0.0, 2.0, frame="t0").W, P @ gramian(ss, 0.0, 2.0).W @ P.T, rtol=1e-12)


def test_discrete_gramian_matches_sum_and_converges_to_continuous():
    """Discrete sum equals its defining formula exactly and, with ZOH steps of dt,
    approaches the continuous Gramian as dt → 0 (error O(dt))."""
    s = LTVSystem(lambda t: [[0.0, 1.0], [-2.0 - np.cos(t), -0.1]], lambda t: [[0.0], [1.0]], period=2 * np.pi)
    Wc = gramian(s, 0.0, 2 * np.pi).W
    errs = []
    for N in (100, 200):
        d = discretize(s, 2 * np.pi / N, steps=N)
        g = gramian(d)
        assert g.discrete and g.t1 == pytest.approx(2 * np.pi)
        # defining sum Σ Φ_{N,k+1} Bd_k Bd_kᵀ Φᵀ
        W = sum(d.transition(N, k + 1) @ d.Bd[k] @ d.Bd[k].T @ d.transition(N, k + 1).T for k in range(N))
        np.testing.assert_allclose(g.W, W, rtol=1e-12, atol=1e-14)
        # dt-scaled discrete Gramian approximates the continuous one
        errs.append(np.abs(g.W / d.dt - Wc).max() / np.abs(Wc).max())
    assert errs[1] < 0.6 * errs[0] and errs[1] < 0.05


def test_discrete_subinterval_and_frame_t0():
    d = DiscreteLTV.from_lti([[1.0, 0.1], [0.0, 1.0]], [[0.005], [0.1]], 0.1, 10)
    g = gramian(d, 0.2, 0.5)
    assert g.t0 == pytest.approx(0.2) and g.t1 == pytest.approx(0.5)
    W = np.zeros((2, 2))
    for k in range(2, 5):
        W = d.Ad[k] @ W @ d.Ad[k].T + d.Bd[k] @ d.Bd[k].T
    np.testing.assert_allclose(g.W, W, rtol=1e-14)
    P = d.transition(5, 2)
    np.testing.assert_allclose(gramian(d, 0.2, 0.5, frame="t0").W, np.linalg.inv(P) @ W @ np.linalg.inv(P).T,
                               rtol=1e-12)


def test_rank_tolerance_override():
    ss = control.ss([[0, 1], [0, 0]], [[0], [1]], np.eye(2), 0)
    g = gramian(ss, 0.0, 1e-3)
    assert g.rank == 2
    # the smallest eigenvalue ~ T^3/12 ≈ 8e-11 is cut by an explicit rtol of 1e-6
    assert gramian(ss, 0.0, 1e-3, rtol=1e-6).rank == 1
    assert gramian(ss, 0.0, 1e-3, tol=1e-20).rank == 2


@pytest.mark.parametrize("args, kwargs, err, msg", [
    ((0.0, None), {}, LinearSystemError, r"needs the interval \[t0, t1\]"),
    ((1.0, 0.5), {}, LinearSystemError, "t0 < t1"),
    ((0.0, 1.0), {"frame": "mid"}, LinearSystemError, "frame must be 't1'"),
])
def test_gramian_errors(args, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        gramian(DI, *args, **kwargs)


def test_gramian_time_range_and_discrete_grid_errors():
    s = LTVSystem(lambda t: [[-1.0]], [[1.0]], t_range=(0.0, 1.0))
    with pytest.raises(TimeRangeError, match="Gramian interval"):
        gramian(s, 0.0, 2.0)
    d = DiscreteLTV.from_lti([[1.0]], [[1.0]], 0.1, 10)
    with pytest.raises(LinearSystemError, match="not a sample time"):
        gramian(d, 0.05, 0.5)
    with pytest.raises(LinearSystemError, match="at least one step"):
        gramian(d, 0.5, 0.5)


@pytest.mark.parametrize("frame", ["t1", "t0"])
def test_magnus_and_ode_methods_agree(frame):
    """Two independent LTV integrations (Magnus-6 on the Lyapunov flow, DOP853 on the
    Lyapunov ODE) agree to 1e-10 relative to max|W| on a 3-state, 2-input system."""
    s = LTVSystem(lambda t: [[0.0, 1.0, 0.0], [-2.0 - np.cos(t), -0.1, np.sin(t)], [0.0, np.cos(2 * t), -0.5]],
                  lambda t: [[0.0, 0.1], [1.0 + 0.5 * np.sin(t), 0.0], [0.2 * np.cos(t), 1.0]])
    a = gramian(s, 0.3, 5.0, frame=frame, method="magnus").W
    b = gramian(s, 0.3, 5.0, frame=frame, method="ode").W
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-10 * np.abs(b).max())


def test_magnus_gramian_errors():
    s = LTVSystem(lambda t: [[0.0, 1.0], [-2.0 - np.cos(t), -0.1]], lambda t: [[0.0], [1.0]])
    from nhcontrol._util.errors import SolverError
    with pytest.raises(SolverError, match="did not converge"):
        gramian(s, 0.0, 50.0, max_steps=16)
    with pytest.raises(LinearSystemError, match="method must be 'magnus' or 'ode'"):
        gramian(s, 0.0, 1.0, method="quad")
