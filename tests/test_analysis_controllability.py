"""Tests of rank decisions, Kalman rank and PBH (nhcontrol.analysis.controllability)."""

from __future__ import annotations

import control
import numpy as np
import pytest

from nhcontrol._util.errors import LinearSystemError
from nhcontrol.analysis import controllability, ctrb_matrix, rank_decision
from nhcontrol.systems import LTVSystem


def test_ctrb_matrix_equals_control_ctrb():
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(5, 5)), rng.normal(size=(5, 2))
    np.testing.assert_allclose(ctrb_matrix(A, B), control.ctrb(A, B), rtol=1e-14)


@pytest.mark.parametrize("seed", range(5))
def test_kalman_rank_equals_numpy_rank_of_control_ctrb(seed):
    rng = np.random.default_rng(seed)
    n = 4
    # random system with a controllable part of dimension seed % 4 + 1 (Kalman decomposition)
    r = seed % 4 + 1
    A = np.zeros((n, n))
    A[:r, :r] = rng.normal(size=(r, r))
    A[:r, r:] = rng.normal(size=(r, n - r))
    A[r:, r:] = rng.normal(size=(n - r, n - r))
    B = np.zeros((n, 1))
    B[:r] = rng.normal(size=(r, 1))
    T = np.linalg.qr(rng.normal(size=(n, n)))[0]
    At, Bt = T @ A @ T.T, T @ B
    # default tolerance = numpy.linalg.matrix_rank's convention, on the same matrix
    assert controllability(control.ss(At, Bt, np.eye(n), 0)).rank == np.linalg.matrix_rank(control.ctrb(At, Bt))
    # the rotation T leaves round-off ~1e-16 in the uncontrollable part, which the eps-level default
    # may count (seed 0 does): a relative tolerance of 1e-10 recovers the exact structure
    res = controllability(control.ss(At, Bt, np.eye(n), 0), rtol=1e-10)
    assert res.rank == np.linalg.matrix_rank(control.ctrb(At, Bt), tol=1e-10 * np.linalg.norm(
        control.ctrb(At, Bt), 2)) == r
    assert res.is_controllable == (r == n)
    # uncontrollable directions are orthonormal and orthogonal to the controllable subspace
    V = res.kalman.uncontrollable_directions
    assert V.shape == (n, n - r)
    np.testing.assert_allclose(V.T @ V, np.eye(n - r), atol=1e-12)
    np.testing.assert_allclose(V.T @ control.ctrb(At, Bt), 0, atol=1e-10)


def test_pbh_names_the_uncontrollable_mode():
    """diag(-1, -2, 3) with B = [1, 1, 0]ᵀ: the mode λ = 3 is uncontrollable (not stabilizable)."""
    res = controllability((np.diag([-1.0, -2.0, 3.0]), np.array([[1.0], [1.0], [0.0]])))
    assert res.rank == 2 and not res.is_controllable
    np.testing.assert_allclose(res.uncontrollable_modes, [3.0])
    assert not res.is_stabilizable
    bad = [m for m in res.pbh if not m.is_controllable]
    assert len(bad) == 1 and bad[0].rank.rank == 2
    v = bad[0].rank.uncontrollable_directions[:, 0]
    assert abs(abs(v[2]) - 1) < 1e-12  # left eigenvector e3
    good = controllability((np.diag([-1.0, -2.0, -3.0]), np.array([[1.0], [1.0], [0.0]])))
    assert good.is_stabilizable and good.uncontrollable_modes.size == 1


def test_pbh_complex_modes():
    """Harmonic oscillator with an uncontrollable duplicate: modes ±i of the second copy."""
    A = np.kron(np.eye(2), np.array([[0.0, 1.0], [-1.0, 0.0]]))
    A[2:, 2:] *= 2.0  # second oscillator at ±2i
    B = np.array([[0.0], [1.0], [0.0], [0.0]])
    res = controllability(control.ss(A, B, np.eye(4), 0))
    assert res.rank == 2
    np.testing.assert_allclose(np.sort_complex(res.uncontrollable_modes), [-2j, 2j], atol=1e-12)


def test_rank_result_fields_and_default_tolerance():
    M = np.diag([3.0, 1e-9, 1e-17])
    r = rank_decision(M)
    assert r.tol == pytest.approx(3.0 * 3 * np.finfo(float).eps)
    assert r.rank == 2 == np.linalg.matrix_rank(M)
    np.testing.assert_allclose(r.singular_values, [3.0, 1e-9, 1e-17])
    assert r.condition_number == pytest.approx(3e17)
    assert r.uncontrollable_directions.shape == (3, 1)
    assert rank_decision(M, rtol=1e-6).rank == 1
    assert rank_decision(M, tol=1e-20).rank == 3
    assert not r.is_controllable and "rank=2/3" in repr(r)
    with pytest.raises(ValueError):
        r.singular_values[0] = 1.0


def test_wide_matrix_left_null_space():
    M = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])
    r = rank_decision(M)
    assert r.rank == 1 and r.nstates == 2
    v = r.uncontrollable_directions[:, 0]
    np.testing.assert_allclose(v @ M, 0, atol=1e-14)


@pytest.mark.parametrize("kw, msg", [(dict(tol=-1.0), "tol must be a non-negative"),
                                     (dict(rtol=np.nan), "rtol must be a non-negative")])
def test_rank_decision_bad_tolerances(kw, msg):
    with pytest.raises(LinearSystemError, match=msg):
        rank_decision(np.eye(2), **kw)


def test_rank_decision_shape_and_finite_errors():
    with pytest.raises(LinearSystemError, match="must be a 2-D array"):
        rank_decision(np.ones(3))
    with pytest.raises(LinearSystemError, match="non-finite"):
        rank_decision(np.array([[1.0, np.inf]]))


def test_controllability_of_ltv_requires_t():
    s = LTVSystem(np.zeros((2, 2)), lambda t: [[np.cos(t)], [np.sin(t)]])
    with pytest.raises(LinearSystemError, match="pass t= to test the frozen pair"):
        controllability(s)
    assert controllability(s, t=0.4).rank == 1
    with pytest.raises(LinearSystemError, match="method must be 'both' or 'kalman'"):
        controllability(s, t=0.4, method="gramian")


def test_ctrb_matrix_errors():
    with pytest.raises(LinearSystemError, match=r"A must be square"):
        ctrb_matrix(np.ones((2, 3)), np.ones((2, 1)))
    with pytest.raises(LinearSystemError, match=r"B must have shape \(n, k\) = \(2, k\)"):
        ctrb_matrix(np.eye(2), np.ones((3, 1)))


def test_margin():
    r = rank_decision(np.diag([1.0, 1e-3]), tol=1e-6)
    assert r.margin == pytest.approx(1e3)
    assert rank_decision(np.zeros((2, 2))).margin == 0.0
