"""Tests of the rolling disc and hoop (models/rolling_wheel.py).

Reference result (closed form, e.g. Neimark & Fufaev, "Dynamics of nonholonomic systems",
or any textbook treatment of the rolling coin): for a wheel of mass m, radius r, polar
moment C and diametral moment A rolling upright with spin Omega = v / r, the linearized
lean/yaw equations are

    (A + m r^2) phi'' - (C + m r^2) Omega psi' - m g r phi = 0,   A psi'' + C Omega phi' = 0,

so the lean oscillates with omega^2 = ((C + m r^2) C Omega^2 / A - m g r) / (A + m r^2) and
upright rolling is stable iff Omega^2 > m g r A / (C (C + m r^2)): v^2 > g r / 3 for the
disc, v^2 > g r / 4 for the hoop. The model is checked against this with a central finite
difference of the nonlinear dynamics on the constraint manifold (h = 1e-6, error ~1e-9,
compared at rtol 1e-6).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _helpers import accelerations, central_jacobian, project
from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.models import rolling_wheel as rw

IX = {name: i for i, name in enumerate(rw.COORDINATES)}
R, MASS, G = 0.3, 2.0, 9.81
INERTIA = {"disc": (MASS * R**2 / 4, MASS * R**2 / 2), "hoop": (MASS * R**2 / 2, MASS * R**2)}


@pytest.fixture(scope="module", params=["disc", "hoop"])
def wheel(request):
    cm = rw.model_disc() if request.param == "disc" else rw.model_hoop()
    return request.param, cm


def lean_yaw_matrix(cm, v, h=1e-6):
    """Central-difference state matrix of (phi, psi, phi_d, psi_d) about upright rolling."""
    x0, _, _ = rw.upright_rolling_state(v, 0.0, R)
    ind = [IX[c] for c in rw.PARTITION["independent"]]
    hol = [IX[c] for c in rw.PARTITION["dependent"]]

    def g(z):
        x = x0.copy()
        x[IX["phi"]], x[IX["psi"]] = z[0], z[1]
        vel = np.zeros(3)
        vel[rw.PARTITION["independent"].index("x")] = v
        vel[rw.PARTITION["independent"].index("phi")] = z[2]
        vel[rw.PARTITION["independent"].index("psi")] = z[3]
        x, xd = project(cm, x, vel, ind, hol)
        a, _ = accelerations(cm, x, xd)
        return np.array([z[2], z[3], a[IX["phi"]], a[IX["psi"]]])

    return central_jacobian(g, 4, h)


def test_dimensions(wheel):
    kind, cm = wheel
    assert (cm.n, cm.m, cm.l) == (7, 2, 2)
    assert tuple(cm.coordinates) == rw.COORDINATES
    assert dict(cm.parameters) == {"r": 0.3, "m": 2.0, "g": 9.81}
    assert cm.name == f"rolling_{kind}"


def test_mass_matrix_has_the_wheel_inertias(wheel):
    """At upright, theta = 0: M = diag(m, m, m, C_zz, A, C, 0) with A, C of the disc / hoop (1e-15)."""
    kind, cm = wheel
    A, C = INERTIA[kind]
    M = cm.M(np.array([0.1, -0.2, R, 0.0, 0.0, 0.0, math.pi / 2]))
    np.testing.assert_allclose(M, M.T, atol=1e-15)
    np.testing.assert_allclose(np.diag(M), [MASS, MASS, MASS, A, A, C, 0.0], rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(M - np.diag(np.diag(M)), 0.0, atol=1e-15)


@pytest.mark.parametrize("v", [0.0, 1.0, 4.3, 10.0])
def test_upright_rolling_residuals(wheel, v):
    """Residuals of the upright rolling reference (C, D xd, D xdd - Qd, dynamics) below 1e-12."""
    _, cm = wheel
    ref = rw.upright_rolling(cm, v)
    assert ref.steady
    report = ref.check(cm, np.linspace(0.0, 1.0, 6), tol=1e-12, raise_on_error=True)
    assert max(report.max_holonomic, report.max_velocity, report.max_acceleration,
               report.max_dynamics) < 1e-12


def test_multipliers_are_the_weight(wheel):
    """Closed-form Λ0 (only Λ_Pz = -m g) equals inverse dynamics, Eq. (2.112) (1e-12)."""
    from nhcontrol.reference import inverse_dynamics

    _, cm = wheel
    x, xd, xdd = rw.upright_rolling_state(3.0, 0.4, R)
    lam = inverse_dynamics(cm, x, xd, xdd).lam
    np.testing.assert_allclose(lam, [-MASS * G, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(rw.upright_rolling(cm, 3.0).lam(0.4), lam, atol=1e-12)


@pytest.mark.parametrize("v", [0.5, 2.0, 5.0])
def test_lean_yaw_dynamics_match_closed_form(wheel, v):
    """Eigenvalues of the FD-linearized lean/yaw dynamics = {0, 0, ±i omega} or ±sqrt(-omega^2) (rtol 1e-6)."""
    kind, cm = wheel
    A, C = INERTIA[kind]
    omega_spin = v / R
    w2 = ((C + MASS * R**2) * C * omega_spin**2 / A - MASS * G * R) / (A + MASS * R**2)
    ev = np.linalg.eigvals(lean_yaw_matrix(cm, v))
    ev = ev[np.argsort(np.abs(ev))]
    np.testing.assert_allclose(ev[:2], 0.0, atol=1e-6)
    expected = np.sqrt(complex(-w2))
    np.testing.assert_allclose(np.sort(np.abs(ev[2:].imag)), [abs(expected.imag)] * 2, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.sort(np.abs(ev[2:].real)), [abs(expected.real)] * 2, rtol=1e-6, atol=1e-7)


def test_critical_speeds():
    """Stability boundary v_c^2 = g r / 3 (disc) and g r / 4 (hoop): unstable below, oscillating above."""
    for kind, cm, vc in (("disc", rw.model_disc(), math.sqrt(G * R / 3)), ("hoop", rw.model_hoop(), math.sqrt(G * R / 4))):
        below = np.linalg.eigvals(lean_yaw_matrix(cm, 0.9 * vc)).real.max()
        above = np.linalg.eigvals(lean_yaw_matrix(cm, 1.1 * vc)).real.max()
        assert below > 0.1, kind
        assert abs(above) < 1e-6, kind


def test_partition_is_regular(wheel):
    _, cm = wheel
    x, _, _ = rw.upright_rolling_state(2.0, 0.3, R)
    part = rw.PARTITION
    assert sorted(sum(part.values(), [])) == sorted(rw.COORDINATES)
    dd = [IX[c] for c in part["admissible_dependent"] + part["dependent"]]
    assert np.linalg.cond(cm.D(x)[:, dd]) < 1e3
    assert np.linalg.cond(cm.Cx(x)[:, [IX[c] for c in part["dependent"]]]) < 1e3


@pytest.mark.parametrize("kwargs, match", [
    (dict(r=-0.3), r"radius r and mass m must be positive.*r=-0.3"),
    (dict(m=0.0), r"m=0.0"),
    (dict(g="nine"), r"g='nine'"),
])
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(ModelError, match=match):
        rw.build_disc(**kwargs)
    with pytest.raises(ModelError, match=match):
        rw.model_hoop(**kwargs)


def test_reference_errors(wheel):
    _, cm = wheel
    with pytest.raises(ReferenceMotionError, match="forward speed v must be finite"):
        rw.upright_rolling(cm, math.inf)
    with pytest.raises(ModelError, match=r"parameter vector p must have shape \(3,\)"):
        rw.upright_rolling(cm, 1.0, p=[1.0])


def test_wrong_model_raises():
    from nhcontrol.models import sleigh

    with pytest.raises(ModelError, match="expected a rolling-wheel model"):
        rw.upright_rolling(sleigh.model(), 1.0)


@pytest.mark.parametrize("v", [0.5, 2.0])
def test_exact_linearization_with_suggested_partition(wheel, v):
    """nhcontrol.linearize (third numerical procedure) with PARTITION gives ±i omega / ±sqrt(-omega^2)
    of the closed form and zeros otherwise (exact derivatives: 1e-9 relative)."""
    from nhcontrol.linearization import Partition, linearize

    kind, cm = wheel
    A, C = INERTIA[kind]
    w2 = ((C + MASS * R**2) * C * (v / R)**2 / A - MASS * G * R) / (A + MASS * R**2)
    res = linearize(cm, rw.upright_rolling(cm, v), Partition(**rw.PARTITION))
    assert res.states[:3] == tuple(rw.PARTITION["independent"])
    ev = np.linalg.eigvals(res.A)
    ev = ev[np.argsort(-np.abs(ev))]
    expected = np.sqrt(complex(-w2))
    np.testing.assert_allclose(np.sort(np.abs(ev[:2].imag)), [abs(expected.imag)] * 2, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.sort(np.abs(ev[:2].real)), [abs(expected.real)] * 2, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ev[2:], 0.0, atol=1e-9)
