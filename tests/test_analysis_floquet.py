"""Tests of Floquet analysis: Mathieu tongues, rotating-frame LTI systems, invariants, errors."""

from __future__ import annotations

import control
import numpy as np
import pytest
from scipy.linalg import expm
from scipy.special import mathieu_a, mathieu_b

from nhcontrol._util.errors import LinearSystemError
from nhcontrol.analysis import floquet
from nhcontrol.systems import LTVSystem

TWO_PI = 2 * np.pi


def mathieu(delta: float, eps: float, c: float = 0.0) -> LTVSystem:
    """x'' + c x' + (δ + ε cos t) x = 0 as a first-order periodic system (T = 2π)."""
    return LTVSystem(lambda t: [[0.0, 1.0], [-(delta + eps * np.cos(t)), -c]], [[0.0], [1.0]], period=TWO_PI)


def tongue(order: int, eps: float) -> tuple[float, float]:
    """Boundaries in δ of the order-th instability tongue from scipy's Mathieu characteristic
    values: y'' + (a - 2q cos 2v) y = 0 with t = 2v gives a = 4δ, q = -2ε (and a_m(-q) = b_m(q)
    for odd m), so the tongue is δ ∈ [min(a_m, b_m), max(a_m, b_m)] / 4 at q = 2ε."""
    a, b = mathieu_a(order, 2 * eps) / 4, mathieu_b(order, 2 * eps) / 4
    return min(a, b), max(a, b)


@pytest.mark.parametrize("order, eps", [(1, 0.1), (1, 0.3), (2, 0.3), (2, 0.5)])
def test_mathieu_tongues_classified(order, eps):
    """Points 2e-3 inside/outside the tongue edges (scipy reference, ~1e-12): inside unstable,
    outside marginal (|μ| = 1 for the conservative equation, det M = 1)."""
    lo, hi = tongue(order, eps)
    assert hi - lo > 1e-2  # (second tongue has width O(ε²))
    for d in (lo + 2e-3, 0.5 * (lo + hi), hi - 2e-3):
        assert floquet(mathieu(d, eps)).classification == "unstable"
    for d in (lo - 2e-3, hi + 2e-3):
        f = floquet(mathieu(d, eps))
        assert f.classification == "marginal" and not f.is_stable
        assert abs(np.linalg.det(f.monodromy) - 1) < 1e-9
        np.testing.assert_allclose(np.abs(f.multipliers), 1.0, atol=1e-9)


def test_first_tongue_perturbation_theory():
    """Small ε: tongue edges 1/4 ± ε/2 + O(ε²); at δ = 1/4 the exponent is ε/2 + O(ε²)
    (Landau & Lifshitz, Mechanics §27: x'' + ω0²(1 + h cos 2ω0 t) x = 0 grows at s = h ω0 / 4,
    here ω0 = 1/2, h = 4ε)."""
    eps = 0.02
    lo, hi = tongue(1, eps)
    assert abs(lo - (0.25 - eps / 2)) < eps ** 2 and abs(hi - (0.25 + eps / 2)) < eps ** 2
    f = floquet(mathieu(0.25, eps))
    assert f.exponents.real.max() == pytest.approx(eps / 2, rel=0.02)


def test_damped_mathieu_stable_and_liouville():
    """With damping c the product of multipliers is det M = exp(-c T) (Liouville)."""
    c = 0.05
    f = floquet(mathieu(0.6, 0.2, c))
    assert f.classification == "stable" and f.is_stable
    assert np.linalg.det(f.monodromy) == pytest.approx(np.exp(-c * TWO_PI), rel=1e-10)
    assert f.spectral_radius == pytest.approx(np.abs(f.multipliers).max())
    # inside the first tongue the parametric drive beats the damping (exponent ≈ ε/2 - c/2 > 0)
    assert floquet(mathieu(0.25, 0.4, c)).classification == "unstable"


def rotating_frame(A0: np.ndarray, w: float) -> LTVSystem:
    """x = P(t) z with ż = A0 z and P the rotation by w t of the first two coordinates:
    A(t) = P A0 Pᵀ + Ṗ Pᵀ, and Φ(t, 0) = P(t) e^{A0 t}."""
    n = A0.shape[0]
    J = np.zeros((n, n))
    J[0, 1], J[1, 0] = -1.0, 1.0

    def P(t):
        R = np.eye(n)
        R[:2, :2] = [[np.cos(w * t), -np.sin(w * t)], [np.sin(w * t), np.cos(w * t)]]
        return R

    return LTVSystem(lambda t: P(t) @ A0 @ P(t).T + w * J @ P(t) @ P(t).T * (np.arange(n) < 2)[:, None],
                     np.eye(n)[:, :1], period=TWO_PI / w)


def wrap_imag(lam: np.ndarray, w: float) -> np.ndarray:
    """Reduce Im λ modulo w into (-w/2, w/2] (the principal branch of log(e^{λT})/T, T = 2π/w)."""
    im = np.mod(lam.imag + w / 2, w) - w / 2
    im = np.where(np.isclose(im, -w / 2), w / 2, im)
    return lam.real + 1j * im


@pytest.mark.parametrize("A0, w", [
    (np.array([[-1.0, 0.0], [0.0, 0.2]]), 2.0),                 # real eigenvalues, one unstable
    (np.array([[-0.1, 1.0], [-2.0, -0.3]]), 1.5),               # complex pair
    (np.array([[-0.2, 3.0, 0.0], [-3.0, -0.2, 1.0], [0.5, 0.0, -1.0]]), 0.7),  # 3 states
])
def test_rotating_frame_exponents_are_eigenvalues_of_A0(A0, w):
    """What must agree (Sect. 6.3.8): Re λ exactly, Im λ modulo the rotation frequency w; the
    multipliers equal e^{λ(A0) T}. The frozen-time eigenvalues of A(t) do NOT (tested too)."""
    sys = rotating_frame(A0, w)
    T = TWO_PI / w
    f = floquet(sys)
    lam0 = np.linalg.eigvals(A0)
    np.testing.assert_allclose(np.sort_complex(f.multipliers), np.sort_complex(np.exp(lam0 * T)), atol=1e-9)
    np.testing.assert_allclose(np.sort(f.exponents.real), np.sort(lam0.real), atol=1e-9)
    np.testing.assert_allclose(np.sort_complex(f.exponents), np.sort_complex(wrap_imag(lam0, w)), atol=1e-9)
    np.testing.assert_allclose(f.monodromy, expm(A0 * T), atol=1e-9 * max(1.0, np.abs(expm(A0 * T)).max()))
    assert np.all(np.abs(f.exponents.imag) <= np.pi / T + 1e-12)   # principal branch
    assert f.classification == ("unstable" if lam0.real.max() > 0 else "stable")


def test_frozen_time_eigenvalues_mislead_in_rotating_frame():
    """A0 = diag(-1, 0.2) rotated at w = 2: every frozen A(t) has eigenvalues -0.4 ± 1.96i
    (stable) but the system is unstable with Floquet exponent 0.2."""
    sys = rotating_frame(np.diag([-1.0, 0.2]), 2.0)
    for t in np.linspace(0, np.pi, 5):
        assert np.linalg.eigvals(sys.A(t)).real.max() == pytest.approx(-0.4, abs=1e-12)
    f = floquet(sys)
    assert f.classification == "unstable"
    assert f.exponents.real.max() == pytest.approx(0.2, abs=1e-9)


def test_lti_system_multipliers_and_t0_independence():
    ss = control.ss([[0, 1], [-4, -0.4]], [[0], [1]], np.eye(2), 0)
    f = floquet(ss, period=1.3)
    np.testing.assert_allclose(np.sort_complex(f.multipliers), np.sort_complex(np.exp(np.linalg.eigvals(ss.A) * 1.3)),
                               rtol=1e-13)
    m = mathieu(0.6, 0.3, 0.05)
    np.testing.assert_allclose(np.sort_complex(floquet(m, t0=1.1).multipliers),
                               np.sort_complex(floquet(m).multipliers), atol=1e-10)


def test_marginal_tolerance():
    """|μ| = 1 ± 1e-6 is 'marginal' with tol = 1e-5 and decided with tol = 1e-7."""
    T = 1.0
    a = np.log(1 + 1e-6)
    ss = control.ss([[a, 0], [0, -1.0]], [[1], [1]], np.eye(2), 0)
    assert floquet(ss, period=T, tol=1e-5).classification == "marginal"
    assert floquet(ss, period=T, tol=1e-7).classification == "unstable"
    ss2 = control.ss([[-a, 0], [0, -1.0]], [[1], [1]], np.eye(2), 0)
    assert floquet(ss2, period=T, tol=1e-7).classification == "stable"


@pytest.mark.parametrize("period, msg", [(0.0, "period must be a positive"), (-TWO_PI, "period must be a positive"),
                                         ("abc", "period must be a positive"),
                                         (1.0, "not a multiple of the system's period")])
def test_floquet_period_errors(period, msg):
    with pytest.raises(LinearSystemError, match=msg):
        floquet(mathieu(0.3, 0.1), period=period)


def test_floquet_needs_a_period_and_positive_tol():
    with pytest.raises(LinearSystemError, match="needs the period T"):
        floquet(control.ss([[-1.0]], [[1.0]], [[1.0]], 0))
    with pytest.raises(LinearSystemError, match="tol must be a positive"):
        floquet(mathieu(0.3, 0.1), tol=0.0)
    # a multiple of the period is accepted: multipliers are squared
    f1, f2 = floquet(mathieu(0.6, 0.2, 0.05)), floquet(mathieu(0.6, 0.2, 0.05), period=2 * TWO_PI)
    np.testing.assert_allclose(np.sort_complex(f2.multipliers), np.sort_complex(f1.multipliers ** 2), atol=1e-9)


@pytest.mark.parametrize("delta, eps, c", [(0.25, 0.3, 0.0), (0.6, 0.2, 0.05), (1.0, 0.5, 0.01)])
def test_magnus_and_ode_monodromy_agree(delta, eps, c):
    """Two independent integrators of X(T): multipliers agree to 1e-9."""
    a = floquet(mathieu(delta, eps, c), method="ode")
    b = floquet(mathieu(delta, eps, c), method="magnus")
    np.testing.assert_allclose(np.sort_complex(a.multipliers), np.sort_complex(b.multipliers), atol=1e-9)
    assert a.classification == b.classification
