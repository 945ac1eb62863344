"""The Reference class: constructors, evaluation, interpolation and residual checks."""

from __future__ import annotations

import numpy as np
import pytest

from nhcontrol._util.errors import ReferenceMotionError, TimeRangeError
from nhcontrol.reference import Reference, ResidualReport
from nhcontrol.simulate import forward_dynamics
from test_reference_inverse import L, M_P, pendulum_motion
from test_simulate_toy_models import cart, pendulum, sleigh

OMEGA = 2.0


def rotation_functions(vectorised: bool):
    """Uniform rotation of the pendulum (admissible when g = 0)."""
    if vectorised:
        return (lambda t: pendulum_motion(OMEGA * np.asarray(t), OMEGA + 0 * np.asarray(t), 0 * np.asarray(t))[0],
                lambda t: pendulum_motion(OMEGA * np.asarray(t), OMEGA + 0 * np.asarray(t), 0 * np.asarray(t))[1],
                lambda t: pendulum_motion(OMEGA * np.asarray(t), OMEGA + 0 * np.asarray(t), 0 * np.asarray(t))[2])

    def one(i):
        def f(t):
            if np.ndim(t):
                raise TypeError("scalar only")
            return pendulum_motion(OMEGA * t, OMEGA, 0.0)[i]
        return f
    return one(0), one(1), one(2)


@pytest.mark.parametrize("vectorised", [True, False])
def test_from_functions_shapes_and_multipliers(vectorised):
    """λ from inverse dynamics equals m ω² (closed form, 1e-12); scalar/array t shapes."""
    cm = pendulum()
    ref = Reference.from_functions(cm, *rotation_functions(vectorised), p=cm.param_vector(g=0.0),
                                   period=2 * np.pi / OMEGA)
    assert ref.x(0.3).shape == (2,) and ref.x(np.linspace(0, 1, 7)).shape == (7, 2)
    assert ref.lam(0.1).shape == (1,) and ref.u(0.1).shape == (0,)
    np.testing.assert_allclose(ref.lam(np.linspace(0, 3, 9))[:, 0], M_P * OMEGA**2, rtol=1e-12)
    s = ref.sample(np.linspace(0, 1, 5))
    assert s.x.shape == (5, 2) and s.lam.shape == (5, 1) and not s.x.flags.writeable
    rep = ref.check(cm)
    assert isinstance(rep, ResidualReport) and rep.ok
    assert rep.max_holonomic < 1e-14 and rep.max_dynamics < 1e-12
    assert ref.coordinates == ("X", "Y") and ref.period == pytest.approx(np.pi)


def test_from_functions_rejects_inadmissible_motion():
    """With gravity the uniform rotation needs a torque: ReferenceMotionError with numbers."""
    cm = pendulum()
    with pytest.raises(ReferenceMotionError, match=r"not a motion of the model .*dynamics residual .*'Y'.*No multiplier can remove it"):
        Reference.from_functions(cm, *rotation_functions(True))


def test_check_reports_and_raises_on_inconsistent_velocity():
    """A velocity that violates D ẋ = 0 is reported (value and time) and raises on request."""
    cm = pendulum()
    x, xd, xdd = (lambda t: np.array([0.0, -L]), lambda t: np.array([0.0, 0.01]),
                  lambda t: np.zeros(2))
    ref = Reference.from_functions(cm, x, xd, xdd, lam=lambda t: np.array([M_P * 9.81 / L]),
                                   t_range=(0.0, 1.0), check=False)
    rep = ref.check(cm)
    assert not rep.ok and rep.failures == ("velocity", "acceleration")
    assert rep.max_velocity == pytest.approx(L * 0.01, rel=1e-12)   # |Cx xd| = |Y Ẏ|
    text = str(rep)
    assert "FAIL" in text and "8.000e-03" in text and "Eq. (2.114)" in text
    with pytest.raises(ReferenceMotionError, match=r"velocity residual \|D xd\| \(Eq\. \(2\.114\)\) = 8\.000e-03"):
        ref.check(cm, raise_on_error=True)


def test_time_range_is_enforced():
    cm = pendulum()
    ref = Reference.equilibrium(cm, [0.0, -L])
    np.testing.assert_allclose(ref.lam(5.0), [M_P * 9.81 / L], rtol=1e-13)   # λ = m g / L
    lim = Reference.from_functions(cm, lambda t: [0.0, -L], np.zeros(2), np.zeros(2),
                                   t_range=(0.0, 1.0))
    with pytest.raises(TimeRangeError, match=r"defined on t in \[0, 1\], got t = 1\.5"):
        lim.x(1.5)


def test_constant_velocity_sleigh():
    """Straight sliding of the sleigh is a steady motion with zero multiplier."""
    cm = sleigh()
    ref = Reference.constant_velocity(cm, [0.0, 0.0, 0.0], [1.2, 0.0, 0.0])
    assert ref.steady
    np.testing.assert_allclose(ref.x(2.0), [2.4, 0.0, 0.0])
    np.testing.assert_allclose(ref.lam(np.array([0.0, 3.0])), 0.0, atol=1e-15)
    assert ref.check(cm, np.linspace(0, 10, 11)).ok


def _samples(t):
    return pendulum_motion(OMEGA * t, OMEGA + 0 * t, 0 * t)


@pytest.mark.parametrize("given", ["x", "x_xd", "x_xd_xdd"])
def test_from_samples_interpolation_accuracy_and_consistency(given):
    """Interpolated uniform rotation (h = 0.05 s, ω h = 0.1): errors vs the exact motion.

    Quintic Hermite from (x, ẋ, ẍ) is O(h⁶) (bound 1e-8 on x), from (x, ẋ) and from x alone
    (quintic spline) a bit less accurate (bounds 1e-6). ẋ(t) must be the derivative of x(t)
    (central differences, h = 1e-5, tolerance 1e-8), whatever was given.
    """
    cm = pendulum()
    t = np.arange(0, 2.0 + 1e-12, 0.05)
    x, xd, xdd = _samples(t)
    kw = dict(x=x)
    if given != "x":
        kw["xd"] = xd
    if given == "x_xd_xdd":
        kw["xdd"] = xdd
    ref = Reference.from_samples(cm, t, p=cm.param_vector(g=0.0), **kw)
    tq = np.linspace(0.1, 1.9, 37) + 0.013
    xe, xde, xdde = _samples(tq)
    tolx = 1e-8 if given == "x_xd_xdd" else 1e-6
    np.testing.assert_allclose(ref.x(tq), xe, atol=tolx)
    np.testing.assert_allclose(ref.xd(tq), xde, atol=200 * tolx)
    h = 1e-5
    np.testing.assert_allclose(ref.xd(tq), (ref.x(tq + h) - ref.x(tq - h)) / (2 * h), atol=1e-8)
    np.testing.assert_allclose(ref.xdd(tq), (ref.xd(tq + h) - ref.xd(tq - h)) / (2 * h), atol=1e-6)
    rep = ref.check(cm, tq, tol=1e-4)
    assert rep.ok, str(rep)


def test_from_samples_periodic_wraps_time():
    """Periodic samples over one period: evaluation at t + T equals t (to 1e-12)."""
    cm = pendulum()
    T = 2 * np.pi / OMEGA
    t = np.linspace(0, T, 41)
    x, xd, xdd = _samples(t)
    ref = Reference.from_samples(cm, t, x, xd, xdd, p=cm.param_vector(g=0.0), periodic=True)
    assert ref.period == pytest.approx(T)
    np.testing.assert_allclose(ref.x(0.37 + 3 * T), ref.x(0.37), atol=1e-12)
    np.testing.assert_allclose(ref.x(0.37), _samples(np.array(0.37))[0], atol=1e-8)


@pytest.mark.parametrize("bad, match", [
    (dict(t=np.array([0.0, 0.2, 0.1, 0.3, 0.4, 0.5])), r"strictly increasing"),
    (dict(t=np.linspace(0, 1, 3)), r"needs at least 6 samples"),
    (dict(periodic=True), r"periodic=True needs the last sample to equal the first"),
    (dict(xdd_only=True), r"xdd samples were given without xd"),
    (dict(wrong_shape=True), r"x \(samples\) must have shape \(N, 2\)"),
    (dict(u_interpolation="spline"), r"u_interpolation must be"),
])
def test_from_samples_errors(bad, match):
    cm = cart() if "u_interpolation" in bad else pendulum()
    t = bad.get("t", np.linspace(0, 1, 8))
    x = np.c_[np.sin(t), np.zeros_like(t)]
    kw = {}
    if bad.get("xdd_only"):
        kw["xdd"] = x
    if bad.get("wrong_shape"):
        x = x[:, :1]
    if "periodic" in bad:
        kw["periodic"] = True
    if "u_interpolation" in bad:
        kw["u"] = np.ones((t.size, 1))
        kw["u_interpolation"] = bad["u_interpolation"]
    with pytest.raises(ReferenceMotionError, match=match):
        Reference.from_samples(cm, t, x, **kw)


def test_from_simulation_dense_output_is_admissible():
    """A simulated pendulum swing turned into a Reference satisfies the equations of motion
    between the output samples to the integrator's accuracy (rtol 1e-10: residuals < 1e-7)."""
    cm = pendulum()
    x0 = [L * np.sin(1.0), -L * np.cos(1.0)]
    res = forward_dynamics(cm, (0.0, 2.0), x0, [0.0, 0.0])
    ref = Reference.from_simulation(res)
    assert ref.source == "simulation" and ref.t_range == (0.0, 2.0)
    tq = np.linspace(0, 2, 57)
    rep = ref.check(cm, tq, tol=1e-7)
    assert rep.ok, str(rep)
    # λ = T/L with T = m (L φ̇² + g cos φ): from the dense state
    X, XD = ref.x(tq), ref.xd(tq)
    T = M_P * (np.sum(XD**2, 1) / L + 9.81 * (-X[:, 1]) / L)
    np.testing.assert_allclose(ref.lam(tq)[:, 0], T / L, rtol=1e-7)


def test_from_simulation_zero_order_hold_inputs_stay_piecewise_constant():
    """The inputs of a ZOH closed loop are piecewise constant in the Reference too."""
    cm = cart()
    res = forward_dynamics(cm, (0.0, 1.0), [1.0, 0.0], [0.0, 0.0],
                           controller=lambda t, x, xd: [-2.0 * x[0] - 1.0 * xd[0]], sample_time=0.1)
    ref = Reference.from_simulation(res)
    u = ref.u(np.array([0.31, 0.35, 0.399]))
    np.testing.assert_array_equal(u[0], u[2])
    np.testing.assert_allclose(u[0], res.control_inputs[3])
    nodense = forward_dynamics(cm, (0.0, 1.0), [1.0, 0.0], [0.0, 0.0], dense_output=False,
                               controller=lambda t, x, xd: [-2.0 * x[0] - 1.0 * xd[0]],
                               sample_time=0.1)
    ref2 = Reference.from_simulation(nodense)
    assert ref2.source == "samples"
    np.testing.assert_allclose(ref2.u(0.35), res.control_inputs[3])


def test_check_against_wrong_model_is_refused():
    cm = pendulum()
    ref = Reference.equilibrium(cm, [0.0, -L])
    with pytest.raises(ReferenceMotionError, match=r"has coordinates \['X', 'Y'\] but model 'sleigh'"):
        ref.check(sleigh())


def test_bad_function_output_shape():
    cm = pendulum()
    with pytest.raises(ReferenceMotionError, match=r"x\(t\) must return 2 values, got shape \(3,\)"):
        Reference.from_functions(cm, lambda t: np.zeros(3), np.zeros(2), np.zeros(2))
    with pytest.raises(ReferenceMotionError, match=r"period must be a positive number"):
        Reference.from_functions(cm, np.zeros(2), np.zeros(2), np.zeros(2), period=-1.0)


def test_quintic_hermite_is_scipys_from_derivatives():
    """The all-intervals Bernstein coefficients of from_samples' quintic Hermite interpolant are
    bitwise those of ``BPoly.from_derivatives`` (uneven steps, large values)."""
    from scipy.interpolate import BPoly

    from nhcontrol.reference.reference import _quintic_hermite

    rng = np.random.default_rng(4)
    for N, d in ((2, 1), (7, 3), (60, 5)):
        t = np.cumsum(rng.uniform(1e-3, 0.2, N))
        y, yd, ydd = 80.0 * rng.standard_normal((3, N, d))
        want = BPoly.from_derivatives(t, np.stack([y, yd, ydd], axis=1))
        got = _quintic_hermite(BPoly, t, y, yd, ydd)
        np.testing.assert_array_equal(got.c, want.c)
        np.testing.assert_array_equal(got.x, want.x)
