"""Tests of the Silverman–Meadows matrix Q_{N-1}(t) (Eqs. (8.86)–(8.87))."""

from __future__ import annotations

import control
import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import LinearSystemError
from nhcontrol.analysis import controllability, gramian, silverman_meadows
from nhcontrol.systems import LTVSystem

TWO_PI = 2 * np.pi


def symbolic_case():
    """3-state periodic system; returns (sympy A, sympy B, symbol t)."""
    t = sp.symbols("t")
    A = sp.Matrix([[0, 1, 0], [-2 - sp.cos(t), -sp.Rational(1, 10), sp.sin(t)], [0, sp.cos(2 * t), -1]])
    B = sp.Matrix([[0], [1 + sp.sin(t) / 2], [sp.cos(t) / 3]])
    return A, B, t


def symbolic_Q(A, B, t, tval):
    """Eq. (8.87) computed symbolically: P_k = -A P_{k-1} + dP_{k-1}/dt."""
    P = B
    blocks = [P]
    for _ in range(A.shape[0] - 1):
        P = -A * P + P.diff(t)
        blocks.append(P)
    return np.array(sp.Matrix.hstack(*blocks).subs(t, tval).evalf(), dtype=float)


def make_system(A, B, t, *, exact: bool, period=TWO_PI):
    fA = sp.lambdify(t, A, "numpy")
    fB = sp.lambdify(t, B, "numpy")
    kw = {}
    if exact:
        dAs = [sp.lambdify(t, A.diff(t, o), "numpy") for o in range(1, 4)]
        dBs = [sp.lambdify(t, B.diff(t, o), "numpy") for o in range(1, 4)]
        kw = dict(dA=[lambda s, f=f: np.array(f(s), float) for f in dAs],
                  dB=[lambda s, f=f: np.array(f(s), float) for f in dBs])
    return LTVSystem(lambda s: np.array(fA(s), float), lambda s: np.array(fB(s), float), period=period, **kw)


@pytest.mark.parametrize("exact, period, method, tol", [
    (True, TWO_PI, "exact", 1e-13),      # exact derivatives: round-off only
    (False, TWO_PI, "auto", 1e-10),      # spectral (FFT) derivatives of the periodic callables
    (False, None, "chebyshev", 1e-9),    # local Chebyshev derivatives
])
def test_Q_matches_symbolic_recursion(exact, period, method, tol):
    """Q_2(t) vs sympy's recursion; tolerance relative to max|Q| per derivative source."""
    A, B, t = symbolic_case()
    sys = make_system(A, B, t, exact=exact, period=period)
    times = np.array([0.0, 0.9, 2.2])
    res = silverman_meadows(sys, times, method=method)
    assert res.Q.shape == (3, 3, 3) and res.order == 2
    for m, tv in enumerate(times):
        ref = symbolic_Q(A, B, t, tv)
        assert np.abs(res.Q[m] - ref).max() <= tol * np.abs(ref).max()
    assert res.generic_rank == 3 and res.is_controllable


def test_isolated_rank_drop():
    """A = [[0, 1], [0, 0]], B = [0, t]ᵀ: Q = [[0, -t], [t, 1]], det Q = t², rank 1 only at t = 0."""
    sys = LTVSystem([[0.0, 1.0], [0.0, 0.0]], lambda t: [[0.0], [t]], dB=lambda t, o: [[0.0], [1.0 if o == 1 else 0.0]])
    ts = np.linspace(-1, 1, 9)
    res = silverman_meadows(sys, ts, method="exact")
    for m, tv in enumerate(ts):
        np.testing.assert_allclose(res.Q[m], [[0.0, -tv], [tv, 1.0]], atol=1e-15)
    np.testing.assert_array_equal(res.rank, [2, 2, 2, 2, 1, 2, 2, 2, 2])
    np.testing.assert_array_equal(res.drop_times, [0.0])
    assert res.generic_rank == 2 and res.is_controllable
    # the smallest singular value vanishes like t² near the drop
    smin = res.min_singular_value
    assert smin[4] == 0.0 and smin[5] == pytest.approx(0.25 ** 2, rel=0.2)
    # same result with numerical (Chebyshev) derivatives
    sys2 = LTVSystem([[0.0, 1.0], [0.0, 0.0]], lambda t: [[0.0], [t]])
    res2 = silverman_meadows(sys2, ts)
    np.testing.assert_allclose(res2.Q, res.Q, atol=1e-12)
    assert res2.derivative_method.startswith("exact where available")


def test_frozen_uncontrollable_but_sm_full_rank():
    """A = 0, B = [cos t, sin t]ᵀ: every frozen pair has rank 1, Q = [[cos, -sin], [sin, cos]]
    (a rotation, all singular values 1) and the Gramian over [0, π] has rank 2."""
    sys = LTVSystem(np.zeros((2, 2)), lambda t: [[np.cos(t)], [np.sin(t)]], period=TWO_PI)
    ts = np.linspace(0, TWO_PI, 13)
    res = silverman_meadows(sys, ts)
    for m, tv in enumerate(ts):
        np.testing.assert_allclose(res.Q[m], [[np.cos(tv), -np.sin(tv)], [np.sin(tv), np.cos(tv)]], atol=1e-12)
        assert controllability(sys, t=tv).rank == 1
        np.testing.assert_allclose(res.ranks[m].singular_values, [1.0, 1.0], atol=1e-12)
    assert res.generic_rank == 2 and res.drop_times.size == 0
    assert gramian(sys, 0.0, np.pi).rank == 2


def test_lti_reduces_to_kalman_with_signs():
    """For constant (A, B): P_k = (-A)^k B, so Q has the Kalman rank."""
    ss = control.ss([[0, 1, 0], [0, 0, 1], [-1, -2, -3]], [[0], [0], [1]], np.eye(3), 0)
    res = silverman_meadows(ss, 0.0)
    np.testing.assert_allclose(res.Q[0], control.ctrb(ss.A, ss.B) * np.array([1, -1, 1]), atol=1e-14)
    assert res.generic_rank == controllability(ss).rank == 3
    assert res.derivative_method.startswith("constant")


def test_uncontrollable_subsystem_detected_with_direction():
    sys = LTVSystem(lambda t: [[0.0, 1.0, 0.0], [-1.0 - 0.2 * np.cos(t), 0.0, 0.0], [0.0, 0.0, -0.3]],
                    lambda t: [[0.0], [1.0], [0.0]], period=TWO_PI)
    res = silverman_meadows(sys, np.linspace(0, 3, 4))
    assert res.generic_rank == 2 and not res.is_controllable
    v = res.ranks[0].uncontrollable_directions
    assert v.shape == (3, 1) and abs(abs(v[2, 0]) - 1) < 1e-10


def test_order_argument():
    sys = LTVSystem(np.zeros((2, 2)), lambda t: [[np.cos(t)], [np.sin(t)]], period=TWO_PI)
    res = silverman_meadows(sys, 0.3, order=3)
    assert res.Q.shape == (1, 2, 4)
    # P_2 = B'' = -B, P_3 = B''' = -B'
    np.testing.assert_allclose(res.Q[0, :, 2], -res.Q[0, :, 0], atol=1e-12)
    with pytest.raises(LinearSystemError, match="order must be a non-negative integer"):
        silverman_meadows(sys, 0.3, order=-1)


def test_exact_method_refuses_missing_derivatives():
    """n = 3 needs A' and B'' (Eq. (8.87)); with dA/dB given only to order 1, 'exact' raises."""
    A, B, t = symbolic_case()
    fA, fB = sp.lambdify(t, A), sp.lambdify(t, B)
    sys = LTVSystem(lambda s: np.array(fA(s), float), lambda s: np.array(fB(s), float),
                    dA=[lambda s: np.array(sp.lambdify(t, A.diff(t))(s), float)],
                    dB=[lambda s: np.array(sp.lambdify(t, B.diff(t))(s), float)])
    with pytest.raises(LinearSystemError, match=r"order 2 of B\(t\).*only up to order 1"):
        silverman_meadows(sys, 0.5, method="exact")
    # auto falls back to Chebyshev for B'' and agrees with sympy to 1e-9
    res = silverman_meadows(sys, 0.5)
    ref = symbolic_Q(A, B, t, 0.5)
    assert np.abs(res.Q[0] - ref).max() < 1e-9 * np.abs(ref).max()


def test_sampled_nonperiodic_data_refuses_high_orders():
    ts = np.linspace(0, 1, 30)
    sys = LTVSystem.from_samples(ts, np.zeros((30, 8, 8)), np.ones((30, 8, 1)), degree=3)
    with pytest.raises(LinearSystemError, match=r"only up to order 2 \(degree-3 interpolating spline"):
        silverman_meadows(sys, 0.5)
