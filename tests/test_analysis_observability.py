"""Observability by duality: Kalman/PBH ranks, the observability Gramian (closed form of the
double integrator with C = [1, 0]; LTV duality checks against a direct quadrature), the discrete
Gramian and the Silverman–Meadows observability test."""

from __future__ import annotations

import control
import numpy as np
import pytest
from scipy.integrate import quad_vec

from nhcontrol._util.errors import LinearSystemError
from nhcontrol.analysis import (controllability, gramian, observability, observability_gramian,
                                silverman_meadows)
from nhcontrol.systems import DiscreteLTV, LTVSystem, discretize


def test_double_integrator_closed_form():
    sys = control.ss([[0, 1], [0, 0]], [[0], [1]], [[1, 0]], 0)
    T = 2.0
    g = observability_gramian(sys, 0.5, 0.5 + T)
    # W_o = ∫ Φᵀ Cᵀ C Φ dτ with CΦ(τ) = [1, τ]: [[T, T²/2], [T²/2, T³/3]]
    np.testing.assert_allclose(g.W, [[T, T**2 / 2], [T**2 / 2, T**3 / 3]], rtol=1e-12)
    assert g.is_observable and g.rank == 2
    # final-state frame: Φ(τ, t1) = Φ(τ - t1): [[T, -T²/2], [-T²/2, T³/3]]
    g1 = observability_gramian(sys, 0.0, T, frame="t1")
    np.testing.assert_allclose(g1.W, [[T, -T**2 / 2], [-T**2 / 2, T**3 / 3]], rtol=1e-12)
    # velocity only: position unobservable
    gv = observability_gramian(control.ss([[0, 1], [0, 0]], [[0], [1]], [[0, 1]], 0), 0.0, T)
    assert gv.rank == 1 and not gv.is_observable
    np.testing.assert_allclose(np.abs(gv.unobservable_directions[:, 0]), [1.0, 0.0], atol=1e-12)


def test_kalman_pbh_duality():
    A = np.diag([-1.0, 2.0, 0.5])
    C = np.array([[1.0, 0.0, 1.0]])
    r = observability((A, C))
    dual = controllability((A.T, C.T))
    assert r.rank == dual.rank == 2
    np.testing.assert_allclose(r.singular_values, dual.kalman.singular_values)
    assert r.unobservable_modes.real.tolist() == [2.0]
    assert not r.is_detectable
    v = r.unobservable_directions[:, 0]
    np.testing.assert_allclose(np.abs(v), [0, 1, 0], atol=1e-12)
    assert r.tol > 0


def test_ltv_gramian_against_quadrature():
    """W_o of a periodic LTV system with time-varying C(t) against direct quadrature of
    ∫ Φᵀ(τ, t0) Cᵀ C Φ(τ, t0) dτ (Φ from transition_matrix)."""
    from nhcontrol.analysis import transition_matrix

    A = lambda t: np.array([[0.0, 1.0], [-1.0 - 0.3 * np.cos(t), -0.1]])
    Cf = lambda t: np.array([[1.0 + 0.5 * np.sin(t), 0.2]])
    sys = LTVSystem(A, np.zeros((2, 1)), C=Cf, period=2 * np.pi)
    t0, t1 = 0.3, 2.1
    g = observability_gramian(sys, t0, t1)

    def integrand(tau):
        Phi = transition_matrix(sys, tau, t0) if tau > t0 else np.eye(2)
        CP = Cf(tau) @ Phi
        return CP.T @ CP

    ref, _ = quad_vec(integrand, t0, t1, epsabs=1e-13, epsrel=1e-12)
    np.testing.assert_allclose(g.W, ref, rtol=1e-8, atol=1e-10)
    go = observability_gramian(sys, t0, t1, method="ode")
    np.testing.assert_allclose(go.W, g.W, rtol=1e-8, atol=1e-10)


def test_discrete_gramian_sum():
    rng = np.random.default_rng(1)
    Ad = rng.normal(size=(4, 3, 3)) * 0.5
    Ck = rng.normal(size=(5, 1, 3))
    d = DiscreteLTV(Ad, np.zeros((4, 3, 1)), 0.1, Ck=Ck)
    g = observability_gramian(d)
    W = np.zeros((3, 3))
    Phi = np.eye(3)
    for k in range(4):
        W += Phi.T @ Ck[k].T @ Ck[k] @ Phi
        Phi = Ad[k] @ Phi
    np.testing.assert_allclose(g.W, W, rtol=1e-12, atol=1e-14)
    assert g.discrete and g.rank == 3


def test_silverman_meadows_observability():
    # ẋ = [[0, 1], [0, 0]] x, y = [t, 0] x: N0 = [t, 0], N1 = N0 A + Ṅ0 = [1, t]; det = t²
    sys = LTVSystem([[0.0, 1.0], [0.0, 0.0]], np.zeros((2, 1)), C=lambda t: [[t, 0.0]],
                    D=np.zeros((1, 1)))
    res = silverman_meadows(sys, [-1.0, 0.0, 1.0], test="observability")
    assert res.rank.tolist() == [2, 1, 2] and res.drop_times.tolist() == [0.0]
    assert res.is_observable and res.test == "observability"
    np.testing.assert_allclose(np.abs(res.Q[2]), np.abs(np.array([[1.0, 1.0], [0.0, 1.0]])),
                               atol=1e-9)
    with pytest.raises(LinearSystemError, match="test must be"):
        silverman_meadows(sys, 0.0, test="detectability")
    with pytest.raises(LinearSystemError, match="controllability test"):
        silverman_meadows(sys, 1.0).is_observable


def test_lti_consistency_and_errors():
    sys = control.ss([[0, 1], [-2, -0.3]], [[0], [1]], [[1, 0]], 0)
    d = discretize(sys, 0.05, steps=40)
    gd = observability_gramian(d)
    gc = observability_gramian(sys, 0.0, 2.0)
    assert gd.rank == gc.rank == 2
    # rectangle rule of the continuous Gramian: close for small dt
    np.testing.assert_allclose(gd.W * 0.05, gc.W, rtol=0.1)
    with pytest.raises(LinearSystemError, match="t0 < t1"):
        observability_gramian(sys, 1.0, 0.0)
    with pytest.raises(LinearSystemError, match="frame"):
        observability_gramian(sys, 0.0, 1.0, frame="t2")
    lt = LTVSystem(lambda t: np.eye(2) * t, np.zeros((2, 1)), C=[[1.0, 0.0]])
    with pytest.raises(LinearSystemError, match="time-varying"):
        observability(lt)
    assert observability(lt, t=1.0).rank == 1
