"""Finite-horizon time-varying Kalman filter: LTI limit against control.dlqe, duality with
finite_horizon_lqr on the time-reversed dual system, weight checks, update/predict."""

from __future__ import annotations

import control
import numpy as np
import pytest

from nhcontrol._util.errors import DesignError
from nhcontrol.design import finite_horizon_lqr, kalman_filter
from nhcontrol.systems import DiscreteLTV


def _lti():
    A = np.array([[1.0, 0.1], [-0.2, 0.97]])
    B = np.array([[0.0], [0.1]])
    C = np.array([[1.0, 0.0]])
    return A, B, C


def test_lti_limit_matches_dlqe():
    A, B, C = _lti()
    Qn, Rn, G = np.diag([1e-3, 4e-3]), np.array([[1e-2]]), np.eye(2)
    d = DiscreteLTV.from_lti(A, B, 0.1, 400, C=C)
    kf = kalman_filter(d, Qn, Rn, P0=10 * np.eye(2))
    L, P, _ = control.dlqe(A, G, C, Qn, Rn)
    np.testing.assert_allclose(kf.L[-1], L, rtol=1e-9)
    np.testing.assert_allclose(kf.P[-1], P, rtol=1e-9)
    assert np.abs(kf.L[0] - L).max() > 1e-3          # far from stationary at the start
    # discrete StateSpace input with N=
    kf2 = kalman_filter(control.ss(A, B, C, 0, 0.1), Qn, Rn, N=400, P0=10 * np.eye(2))
    np.testing.assert_array_equal(kf2.L, kf.L)


def test_duality_with_finite_horizon_lqr():
    """KF a priori covariances and predictor gains = LQR of (Ad_kᵀ, C_kᵀ) backwards:
    P'_j = P_{N-j}, K'_j = L_{N-1-j}ᵀ with Q' = G Qn Gᵀ, R' = Rn, Qf = P0."""
    rng = np.random.default_rng(5)
    N, n, p = 12, 3, 2
    Ad = np.eye(n) + 0.2 * rng.normal(size=(N, n, n))
    Ck = rng.normal(size=(N + 1, p, n))
    G = rng.normal(size=(n, 2))
    Qn, Rn = np.diag([0.3, 0.1]), np.diag([0.05, 0.2])
    P0 = np.diag([1.0, 2.0, 0.5])
    d = DiscreteLTV(Ad, np.zeros((N, n, 1)), 0.1, Ck=Ck)
    kf = kalman_filter(d, Qn, Rn, P0=P0, G=G)
    dual = (np.stack([Ad[N - 1 - j].T for j in range(N)]),
            np.stack([Ck[N - 1 - j].T for j in range(N)]))
    lq = finite_horizon_lqr(dual, G @ Qn @ G.T, Rn, P0)
    for j in range(N):
        np.testing.assert_allclose(lq.K[j], kf.L[N - 1 - j].T, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(lq.P[j], kf.P[N - j], rtol=1e-10, atol=1e-12)
    # update identities: Z = (I - M C) P, M = Z Cᵀ Rn⁻¹
    for i in (0, 5, N):
        np.testing.assert_allclose(kf.Z[i], (np.eye(n) - kf.M[i] @ Ck[i]) @ kf.P[i], atol=1e-12)
        np.testing.assert_allclose(kf.M[i], kf.Z[i] @ Ck[i].T @ np.linalg.inv(Rn), atol=1e-10)


def test_correct_predict_consistent_with_L():
    A, B, C = _lti()
    d = DiscreteLTV.from_lti(A, B, 0.1, 10, C=C)
    kf = kalman_filter(d, 1e-3 * np.eye(2), [[1e-2]])
    x, y, u = np.array([0.3, -0.1]), np.array([0.5]), np.array([0.2])
    two = kf.predict(3, kf.correct(3, x, y), u)
    one = A @ x + B @ u + kf.L[3] @ (y - C @ x)
    np.testing.assert_allclose(two, one, rtol=1e-13)


def test_weight_checks():
    A, B, C = _lti()
    d = DiscreteLTV.from_lti(A, B, 0.1, 5, C=C)
    with pytest.raises(DesignError, match="Rn must be positive definite"):
        kalman_filter(d, np.eye(2), [[0.0]])
    with pytest.raises(DesignError, match="Qn must be positive semi-definite"):
        kalman_filter(d, -np.eye(2), [[1.0]])
    with pytest.raises(DesignError, match="Qn must be symmetric"):
        kalman_filter(d, [[1.0, 0.5], [0.0, 1.0]], [[1.0]])
    with pytest.raises(DesignError, match=r"Rn must have shape \(1, 1\)"):
        kalman_filter(d, np.eye(2), np.eye(2))
    with pytest.raises(DesignError, match="P0 must be positive semi-definite"):
        kalman_filter(d, np.eye(2), [[1.0]], P0=-np.eye(2))
    with pytest.raises(DesignError, match="sample index"):
        kalman_filter(d, np.eye(2), [[1.0]]).correct(6, np.zeros(2), [0.0])
