"""Tests of nhcontrol.systems.LTVSystem: construction, evaluation, derivatives, errors."""

from __future__ import annotations

import control
import numpy as np
import pytest

from nhcontrol._util.errors import LinearSystemError, NhcontrolError, TimeRangeError
from nhcontrol.systems import LTVSystem, as_ltv

TWO_PI = 2 * np.pi


def mathieu_like(eps: float = 0.3, **kw) -> LTVSystem:
    return LTVSystem(lambda t: [[0.0, 1.0], [-1.0 - eps * np.cos(t) * np.exp(np.sin(t)), -0.1]],
                     lambda t: [[0.0], [1.0 + 0.5 * np.sin(2 * t)]], **kw)


def a10_derivative(eps: float, t: float, order: int) -> float:
    """Exact d^order/dt^order of A[1, 0] = -1 - eps cos(t) exp(sin(t)) via sympy."""
    import sympy as sp
    s = sp.symbols("s")
    f = -1 - eps * sp.cos(s) * sp.exp(sp.sin(s))
    return float(sp.diff(f, s, order).subs(s, t))


def test_shapes_names_and_statespace():
    sys = mathieu_like(states=["q", "v"], inputs=["F"], period=TWO_PI)
    assert (sys.nstates, sys.ninputs) == (2, 1)
    assert sys.states == ("q", "v") and sys.inputs == ("F",)
    ts = np.linspace(0, 1, 5)
    assert sys.A(ts).shape == (5, 2, 2) and sys.B(ts).shape == (5, 2, 1)
    np.testing.assert_array_equal(sys.A(ts)[3], sys.A(ts[3]))
    ss = sys.at(0.7)
    assert isinstance(ss, control.StateSpace)
    np.testing.assert_array_equal(ss.A, sys.A(0.7))
    np.testing.assert_array_equal(ss.B, sys.B(0.7))
    assert list(ss.state_labels) == ["q", "v"] and list(ss.input_labels) == ["F"]
    assert not sys.is_constant


def test_one_dimensional_b_is_a_column_and_constant_system():
    sys = LTVSystem(np.diag([1.0, 2.0]), np.array([1.0, 0.0]))
    assert sys.is_constant and sys.ninputs == 1
    np.testing.assert_array_equal(sys.B(3.0), [[1.0], [0.0]])
    np.testing.assert_array_equal(sys.derivative("A", 1.0, 3), np.zeros((2, 2)))
    assert sys.max_exact_order("A") is None


def test_as_ltv_from_statespace_keeps_labels():
    ss = control.ss([[0, 1], [-2, -3]], [[0], [1]], np.eye(2), 0, states=["p", "w"], inputs=["tau"])
    sys = as_ltv(ss)
    assert sys.is_constant and sys.states == ("p", "w") and sys.inputs == ("tau",)
    np.testing.assert_array_equal(sys.A(5.0), ss.A)
    assert as_ltv(sys) is sys


def test_as_ltv_rejects_discrete_and_junk():
    dss = control.ss([[0.5]], [[1.0]], [[1.0]], 0, dt=0.1)
    with pytest.raises(LinearSystemError, match="discrete StateSpace with dt = 0.1"):
        as_ltv(dss)
    with pytest.raises(LinearSystemError, match="expected an LTVSystem"):
        as_ltv("not a system")


def test_vectorized_callables_are_checked():
    sys = LTVSystem(lambda t: np.stack([np.zeros_like(t), np.ones_like(t)], -1)[..., None, :].repeat(2, -2)
                    if np.ndim(t) else np.array([[0.0, 1.0], [0.0, 1.0]]),
                    lambda t: np.ones((np.size(t), 2, 1)) if np.ndim(t) else np.ones((2, 1)),
                    vectorized=True)
    assert sys.A(np.arange(4.0)).shape == (4, 2, 2)
    bad = LTVSystem(lambda t: np.zeros((2, 2)), lambda t: np.ones((2, 1)), vectorized=True)
    with pytest.raises(LinearSystemError, match=r"vectorized A must return shape \(3, 2, 2\)"):
        bad.A(np.arange(3.0))


# ---------------------------------------------------------------- errors
def test_non_square_a():
    with pytest.raises(LinearSystemError, match=r"A\(t\) must be a square \(n, n\) matrix, got shape \(2, 3\)"):
        LTVSystem(lambda t: np.ones((2, 3)), lambda t: np.ones((2, 1)))


def test_mismatched_b():
    with pytest.raises(LinearSystemError, match=r"B\(t\) must have shape \(n, k\) = \(2, k\).*got \(3, 1\)"):
        LTVSystem(lambda t: np.eye(2), lambda t: np.ones((3, 1)))


def test_shape_change_over_time_is_caught():
    sys = LTVSystem(lambda t: np.eye(2) if t < 1 else np.eye(3), np.ones((2, 1)))
    with pytest.raises(LinearSystemError, match=r"must have shape \(2, 2\) at every t, got \(3, 3\) at t = 2.0"):
        sys.A(2.0)


def test_nan_in_matrix_is_caught():
    sys = LTVSystem(lambda t: np.eye(2) * (np.nan if t > 1 else 1.0), np.ones((2, 1)))
    with pytest.raises(LinearSystemError, match="non-finite"):
        sys.A(np.array([0.0, 2.0]))


def test_time_outside_range():
    sys = mathieu_like(t_range=(0.0, 1.0))
    with pytest.raises(TimeRangeError, match=r"t = 1.5 lies outside the range t_range = \(0.0, 1.0\)"):
        sys.A(1.5)
    with pytest.raises(TimeRangeError, match="outside"):
        sys.derivative("B", np.array([0.5, -0.1]), 1)
    assert issubclass(TimeRangeError, LinearSystemError) and issubclass(TimeRangeError, ValueError)


@pytest.mark.parametrize("period", [0.0, -1.0, np.inf, "x"])
def test_non_positive_period(period):
    with pytest.raises(LinearSystemError, match="period must be a positive"):
        mathieu_like(period=period)


@pytest.mark.parametrize("t_range, msg", [((1.0, 0.0), "t_start < t_end"), ((0.0,), "pair"),
                                          ((0.0, np.inf), "finite")])
def test_bad_t_range(t_range, msg):
    with pytest.raises(LinearSystemError, match=msg):
        mathieu_like(t_range=t_range)


def test_names_count_checked():
    with pytest.raises(LinearSystemError, match="states must list 2 names, got 1"):
        mathieu_like(states=["q"])


def test_bad_derivative_arguments():
    sys = mathieu_like()
    with pytest.raises(LinearSystemError, match="which must be 'A' or 'B'"):
        sys.derivative("C", 0.0, 1)
    with pytest.raises(LinearSystemError, match="non-negative integer"):
        sys.derivative("A", 0.0, -1)
    with pytest.raises(LinearSystemError, match="method must be one of"):
        sys.derivative("A", 0.0, 1, method="fd")
    with pytest.raises(LinearSystemError, match="spectral differentiation needs a periodic system"):
        sys.derivative("A", 0.0, 1, method="spectral")
    with pytest.raises(LinearSystemError, match=r"dA must be a callable"):
        LTVSystem(np.eye(1), np.ones((1, 1)), dA=3.0)


# ---------------------------------------------------------------- derivatives
def test_exact_derivative_list_and_refusal_beyond_it():
    """dA given to order 2: order 3 with method='exact' raises; 'auto' falls back (Chebyshev)."""
    A = lambda t: [[np.sin(t)]]  # noqa: E731
    sys = LTVSystem(A, [[1.0]], dA=[lambda t: [[np.cos(t)]], lambda t: [[-np.sin(t)]]])
    assert sys.max_exact_order("A") == 2
    assert sys.derivative("A", 0.3, 2, method="exact")[0, 0] == -np.sin(0.3)
    with pytest.raises(LinearSystemError, match=r"order 3 of A\(t\).*only up to order 2.*method='auto'"):
        sys.derivative("A", 0.3, 3, method="exact")
    # auto fallback: Chebyshev; accuracy 1e-10 for order 3 (stated in LTVSystem.derivative docs)
    assert abs(sys.derivative("A", 0.3, 3)[0, 0] + np.cos(0.3)) < 1e-10


def test_exact_derivative_callable_any_order():
    sys = LTVSystem(lambda t: [[np.sin(t)]], [[1.0]], dA=lambda t, o: [[np.sin(t + o * np.pi / 2)]])
    assert sys.max_exact_order("A") is None
    for o in range(1, 9):
        assert sys.derivative("A", 0.4, o, method="exact")[0, 0] == pytest.approx(np.sin(0.4 + o * np.pi / 2),
                                                                                   abs=1e-15)


def test_no_exact_derivatives_refused_with_exact_method():
    sys = mathieu_like()
    with pytest.raises(LinearSystemError, match=r"only up to order 0 \(no dA given\)"):
        sys.derivative("A", 0.0, 1, method="exact")


@pytest.mark.parametrize("order, tol", [(1, 1e-13), (2, 1e-12), (3, 1e-11), (4, 1e-10), (5, 1e-9),
                                        (6, 1e-8), (7, 1e-7)])
def test_spectral_derivatives_of_periodic_callable(order, tol):
    """FFT differentiation of A[1,0] = -1 - 0.3 cos t e^{sin t} vs sympy; the tolerance is
    relative to max(1, |exact|) and grows with the order (round-off times (k w)^order)."""
    sys = mathieu_like(period=TWO_PI)
    for t in (0.0, 0.7, 4.1):
        got = sys.derivative("A", t, order)[1, 0]
        ref = a10_derivative(0.3, t, order)
        assert abs(got - ref) <= tol * max(1.0, abs(ref))


@pytest.mark.parametrize("order, tol", [(1, 1e-13), (2, 1e-12), (3, 1e-10), (4, 1e-9), (5, 1e-8),
                                        (6, 1e-6), (7, 1e-6)])
def test_chebyshev_derivatives_of_nonperiodic_callable(order, tol):
    """Adaptive chopped Chebyshev (h = 1) differentiation vs sympy; relative tolerance as stated
    (measured: 1e-14 at order 1 to 6e-8 at order 7)."""
    sys = mathieu_like()
    for t in (0.0, 0.7, 4.1):
        got = sys.derivative("A", t, order)[1, 0]
        ref = a10_derivative(0.3, t, order)
        assert abs(got - ref) <= tol * max(1.0, abs(ref))


def test_chebyshev_near_end_of_range_stays_inside():
    sys = mathieu_like(t_range=(0.0, 3.0))
    got = sys.derivative("A", 2.95, 2)[1, 0]
    assert abs(got - a10_derivative(0.3, 2.95, 2)) < 1e-9


def test_derivative_vectorized_over_times():
    sys = mathieu_like(period=TWO_PI)
    ts = np.array([0.1, 0.2, 0.3])
    d = sys.derivative("B", ts, 1)
    assert d.shape == (3, 2, 1)
    np.testing.assert_allclose(d[:, 1, 0], np.cos(2 * ts), atol=1e-12)


# ---------------------------------------------------------------- from_samples
def test_from_samples_periodic_is_trigonometric_interpolation():
    """32 samples of a band-limited matrix function: interpolant and its derivatives exact to
    ~1e-12 (relative), also between the samples."""
    ts = np.linspace(0, TWO_PI, 33)
    A = lambda t: np.array([[np.cos(3 * t), 1.0], [np.sin(t) ** 2, -0.5]])  # noqa: E731
    B = lambda t: np.array([[np.sin(t)], [1.0]])  # noqa: E731
    sys = LTVSystem.from_samples(ts, [A(t) for t in ts], [B(t) for t in ts], period=TWO_PI)
    assert sys.period == TWO_PI and sys.t_range is None and sys.vectorized
    tq = np.array([0.123, 2.5, 7.0])  # 7.0 is beyond the sampled period (periodic extension)
    np.testing.assert_allclose(sys.A(tq), [A(t) for t in tq], atol=1e-13)
    for o in range(1, 7):
        d = sys.derivative("A", tq, o, method="exact")
        np.testing.assert_allclose(d[:, 0, 0], 3.0 ** o * np.cos(3 * tq + o * np.pi / 2),
                                   atol=1e-12 * 3.0 ** o)
        np.testing.assert_allclose(d[:, 1, 0], -0.5 * 2.0 ** o * np.cos(2 * tq + o * np.pi / 2),
                                   atol=1e-12 * 2.0 ** o)


def test_from_samples_periodic_requires_equispaced_and_periodic():
    ts = np.sort(np.random.default_rng(0).uniform(0, 6, 16))
    with pytest.raises(LinearSystemError, match="equispaced over one period"):
        LTVSystem.from_samples(ts, np.ones((16, 1, 1)), np.ones((16, 1, 1)), period=TWO_PI)
    ts = np.linspace(0, TWO_PI, 9)
    As = np.arange(9.0).reshape(9, 1, 1)
    with pytest.raises(LinearSystemError, match="not periodic"):
        LTVSystem.from_samples(ts, As, np.ones((9, 1, 1)), period=TWO_PI)


def test_from_samples_spline_and_order_limit():
    """Degree-5 spline of 41 samples on [0, 2]: A to 1e-7, dA to 1e-5; order 10 refused."""
    ts = np.linspace(0, 2, 41)
    As = np.array([[[np.exp(-t)]] for t in ts])
    sys = LTVSystem.from_samples(ts, As, np.ones((41, 1, 1)))
    assert sys.t_range == (0.0, 2.0) and sys.max_exact_order("A") == 4
    assert abs(sys.A(0.77)[0, 0] - np.exp(-0.77)) < 1e-7
    assert abs(sys.derivative("A", 0.77, 1)[0, 0] + np.exp(-0.77)) < 1e-5
    with pytest.raises(LinearSystemError, match=r"order 10 of A\(t\).*only up to order 4.*spline"):
        sys.derivative("A", 0.5, 10)
    with pytest.raises(TimeRangeError, match="outside"):
        sys.A(2.5)


@pytest.mark.parametrize("kwargs, msg", [
    (dict(t=[0.0, 1.0, 1.0]), "strictly increasing"),
    (dict(A=np.ones((3, 2, 1))), r"A_samples must have shape \(M, n, n\)"),
    (dict(B=np.ones((3, 3, 1))), r"B_samples must have shape \(M, n, k\) = \(3, 2, k\)"),
    (dict(degree=4), "odd positive integer"),
    (dict(degree=3, t=[0.0, 1.0, 2.0]), "needs more than 3 samples"),
])
def test_from_samples_errors(kwargs, msg):
    t = kwargs.get("t", [0.0, 1.0, 2.0])
    A = kwargs.get("A", np.ones((3, 2, 2)))
    B = kwargs.get("B", np.ones((3, 2, 1)))
    with pytest.raises(LinearSystemError, match=msg):
        LTVSystem.from_samples(t, A, B, degree=kwargs.get("degree", 1))


def test_errors_are_nhcontrol_errors():
    with pytest.raises(NhcontrolError):
        LTVSystem(np.ones((2, 3)), np.ones((2, 1)))
    with pytest.raises(ValueError):
        LTVSystem(np.ones((2, 3)), np.ones((2, 1)))


def test_spectral_needs_a_full_period_in_range():
    sys = mathieu_like(period=TWO_PI, t_range=(0.0, 3.0))
    with pytest.raises(LinearSystemError, match="samples one full period"):
        sys.derivative("A", 1.0, 1)
    # a range covering a period starting elsewhere works (sampled from t_range[0])
    sys2 = mathieu_like(period=TWO_PI, t_range=(1.0, 1.0 + TWO_PI))
    assert abs(sys2.derivative("A", 2.0, 1)[1, 0] - a10_derivative(0.3, 2.0, 1)) < 1e-12


def test_unresolved_numerical_derivatives_warn():
    """A kink is not band-limited: spectral and Chebyshev fits warn instead of failing silently."""
    kink = LTVSystem(lambda t: [[abs(np.sin(t))]], [[1.0]], period=TWO_PI)
    with pytest.warns(RuntimeWarning, match="not resolved with 4096 samples"):
        kink.derivative("A", 1.0, 1)
    kink2 = LTVSystem(lambda t: [[abs(t - 0.3)]], [[1.0]])
    with pytest.warns(RuntimeWarning, match="does not resolve"):
        kink2.derivative("A", 0.0, 1)


def test_constant_system_cannot_be_mutated_through_results():
    sys = LTVSystem(np.eye(2), np.ones((2, 1)))
    A = sys.A(0.0)
    A[0, 0] = 5.0
    assert sys.A(1.0)[0, 0] == 1.0
