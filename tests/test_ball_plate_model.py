"""Tests of the ball-plate model (thesis Sect. 8.4.1-8.4.3) and the sphere-on-moving-plane contact.

Reference data (thesis text, kept here with its source):

* Ω ≈ 10.0382 rad/s for φ0 = 5° and Ω ≈ 12.2077 rad/s for φ0 = 35° (Sect. 8.4.4, after
  Eq. (8.88)), printed with 4 decimals -> compared at abs 5e-5;
* ε_ωφ ≈ 3.0383 rad/s, ε_ωθ ≈ 1.7868 rad/s (Eq. (8.92)), 4 decimals -> abs 5e-5.

Independent computations written by hand in this file (not taken from the package):
the constraints (8.56)-(8.57), the multipliers and plate angles (8.67)-(8.71), the Newton–Euler
equations of a sphere rolling on a plane whose frame is inertial (quasi-static plate), and the
closed-form structure of A(t), B(t) in Eqs. (8.75)-(8.76). Everything is exact arithmetic in
floating point, so agreement is asked at 1e-10 (relative to the size of the terms).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import LinearSystemError, ModelError, ReferenceMotionError
from nhcontrol.linearization import Partition, linearize
from nhcontrol.modeling import MultibodySystem, rot_x, rot_y, rot_z
from nhcontrol.modeling.contacts import sphere_on_moving_plane
from nhcontrol.models import ball_plate as bp
from nhcontrol.reproduce import ball_plate_ltv as bpl

RNG = np.random.default_rng(20261201)


@pytest.fixture(scope="module")
def cm():
    return bp.model()


@pytest.fixture(scope="module")
def ref5(cm):
    return bp.circular_motion(cm, 5.0)


# ----------------------------------------------------------------------------- hand formulas
def hand_B(x, R):
    """Eqs. (8.56)-(8.57): rows of B(x) (coefficients of x_C_d, y_C_d, psi_d, phi_d, theta_d)."""
    _, _, psi, phi, _ = x
    return np.array([[1.0, 0.0, 0.0, -R * math.sin(psi), -R * math.cos(psi) * math.cos(phi)],
                     [0.0, 1.0, 0.0, R * math.cos(psi), -R * math.sin(psi) * math.cos(phi)]])


def hand_reference(t, phi0, rho, omega, m, R, g, I, xA=0.0, yA=0.0):
    """Eqs. (8.63), (8.64), (8.67)-(8.71) exactly as printed in the thesis."""
    Om = rho * omega / (R * math.cos(phi0))                                           # (8.64)
    wt = omega * t
    x = np.array([xA + rho * math.cos(wt), yA + rho * math.sin(wt), math.pi / 2 + wt, phi0, Om * t])
    xd = np.array([-rho * omega * math.sin(wt), rho * omega * math.cos(wt), omega, 0.0, Om])
    xdd = np.array([-rho * omega ** 2 * math.cos(wt), -rho * omega ** 2 * math.sin(wt), 0.0, 0.0, 0.0])
    kk = (rho * m * omega * R + I * Om * math.cos(phi0)) * omega / (m * g * R)
    sa = kk * math.sin(wt)                                                           # (8.70)
    sb = -kk / math.sqrt(1 - kk ** 2 * math.sin(wt) ** 2) * math.cos(wt)              # (8.71)
    a, b = math.asin(sa), math.asin(sb)
    lam = np.array([rho * m * omega ** 2 * math.cos(wt) + m * g * math.cos(a) * math.sin(b),   # (8.67)
                    rho * m * omega ** 2 * math.sin(wt) - m * g * math.sin(a)])                 # (8.68)
    return x, xd, xdd, lam, np.array([a, b]), Om


def G_plate(psi, phi):
    """Plate-frame angular velocity of the ball = G(psi, phi) [psi_d, phi_d, theta_d]."""
    return np.array([[0.0, math.cos(psi), -math.sin(psi) * math.cos(phi)],
                     [0.0, math.sin(psi), math.cos(psi) * math.cos(phi)],
                     [1.0, 0.0, math.sin(phi)]])


def G_dot(psi, phi, psid, phid):
    return np.array([[0.0, -math.sin(psi) * psid,
                      -math.cos(psi) * math.cos(phi) * psid + math.sin(psi) * math.sin(phi) * phid],
                     [0.0, math.cos(psi) * psid,
                      -math.sin(psi) * math.cos(phi) * psid - math.cos(psi) * math.sin(phi) * phid],
                     [0.0, 0.0, math.cos(phi) * phid]])


def random_params():
    m = RNG.uniform(0.05, 2.0)
    R = RNG.uniform(0.02, 0.3)
    I = RNG.uniform(0.2, 0.7) * m * R ** 2
    g = RNG.uniform(5.0, 12.0)
    return dict(m=m, R=R, g=g, I=I)


# ----------------------------------------------------------------------------- model structure
def test_dimensions_and_names(cm):
    assert (cm.n, cm.m, cm.l, cm.ninputs) == (5, 0, 2, 2)
    assert tuple(cm.coordinates) == bp.COORDINATES
    assert tuple(cm.inputs) == bp.INPUTS
    assert dict(cm.parameters) == pytest.approx({"m": 0.1, "R": 0.05, "g": 9.81, "I": 0.4 * 0.1 * 0.05 ** 2})


def test_contact_reproduces_eq_8_55():
    """The helper's symbolic relative velocity is exactly Eq. (8.55) (sympy, exact zero)."""
    mb = bp.build()
    xC, yC, psi, phi, theta = mb.coordinates
    xCd, yCd, psid, phid, thetad = mb.velocities
    R = mb.parameters[1]
    want = [xCd - R * thetad * sp.cos(psi) * sp.cos(phi) - R * phid * sp.sin(psi),
            yCd - R * thetad * sp.sin(psi) * sp.cos(phi) + R * phid * sp.cos(psi)]
    got = [c.expr for c in mb.nonholonomic]
    assert [sp.simplify(g - w) for g, w in zip(got, want)] == [0, 0]
    assert not any(c.expr.has(*mb.inputs) for c in mb.nonholonomic)


@pytest.mark.parametrize("k", range(3))
def test_B_matches_eqs_8_56_8_57(cm, k):
    """B(x) equals the rows of Eqs. (8.56)-(8.57) at random x, u (tolerance 1e-14)."""
    x = RNG.uniform(-2, 2, 5)
    u = RNG.uniform(-0.5, 0.5, 2)
    np.testing.assert_allclose(cm.B(x, u), hand_B(x, 0.05), rtol=0, atol=1e-14)


@pytest.mark.parametrize("k", range(4))
def test_reference_satisfies_dynamics_with_eqs_8_67_8_71(cm, k):
    """Eq. (8.65) holds with Λ0, u0 of Eqs. (8.67)-(8.71) at random parameters, circles and times.

    Residual ``M ẍ0 + Dᵀ Λ0 - Q`` relative to ``m g`` below 1e-10; constraints ``D ẋ0`` and
    ``D ẍ0 - Qd`` below 1e-10 (relative to ``ρ ω`` and ``ρ ω²``)."""
    par = random_params()
    p = cm.param_vector(**par)
    phi0 = math.radians(RNG.uniform(-60, 60))
    rho = RNG.uniform(0.1, 1.0)
    kmax = 0.9 * par["m"] * par["g"] * par["R"] ** 2 / ((par["m"] * par["R"] ** 2 + par["I"]) * rho)
    omega = RNG.choice([-1, 1]) * RNG.uniform(0.2, 1.0) * math.sqrt(kmax)
    t = RNG.uniform(0, 20)
    x, xd, xdd, lam, u, _ = hand_reference(t, phi0, rho, omega, **par)
    res = cm.M(x, u, p) @ xdd + cm.D(x, u, p).T @ lam - cm.Q(x, xd, u, p)
    assert np.max(np.abs(res)) <= 1e-10 * par["m"] * par["g"]
    assert np.max(np.abs(cm.D(x, u, p) @ xd)) <= 1e-10 * abs(rho * omega)
    assert np.max(np.abs(cm.D(x, u, p) @ xdd - cm.Qd(x, xd, u, p))) <= 1e-10 * rho * omega ** 2


@pytest.mark.parametrize("k", range(4))
def test_dynamics_equal_quasi_static_newton_euler_by_hand(cm, k):
    """At random states the model's accelerations equal the sphere on an inertial tilted plane.

    Independent physics (quasi-static plate): with ``κ = m g R / (I + m R²)`` the plate-frame
    angular velocity of the ball obeys ``ω̇ = [κ sin α, κ cos α sin β, 0]``, the contact force is
    ``Λ = m g_t - m a_C`` with ``g_t = g [cos α sin β, -sin α]``. Solved from the model's
    ``[[M, Dᵀ], [D, 0]]`` system; tolerance 1e-10 relative."""
    par = random_params()
    p = cm.param_vector(**par)
    m, R, g, I = par["m"], par["R"], par["g"], par["I"]
    x = np.concatenate([RNG.uniform(-1, 1, 2), RNG.uniform(-3, 3, 1), RNG.uniform(-1.2, 1.2, 1),
                        RNG.uniform(-3, 3, 1)])
    qd = RNG.uniform(-5, 5, 3)
    w = G_plate(x[2], x[3]) @ qd
    xd = np.concatenate([[R * w[1], -R * w[0]], qd])          # satisfies (8.56)-(8.57)
    u = RNG.uniform(-0.6, 0.6, 2)
    M, D, Q, Qd = cm.M(x, u, p), cm.D(x, u, p), cm.Q(x, xd, u, p), cm.Qd(x, xd, u, p)
    K = np.block([[M, D.T], [D, np.zeros((2, 2))]])
    sol = np.linalg.solve(K, np.concatenate([Q, Qd]))
    xdd, lam = sol[:5], sol[5:]
    kappa = m * g * R / (I + m * R ** 2)
    a, b = u
    wdot = G_plate(x[2], x[3]) @ xdd[2:] + G_dot(x[2], x[3], qd[0], qd[1]) @ qd
    np.testing.assert_allclose(wdot, [kappa * math.sin(a), kappa * math.cos(a) * math.sin(b), 0.0],
                               rtol=0, atol=1e-10 * (kappa + np.abs(qd).max() ** 2))
    lam_hand = [m * g * math.cos(a) * math.sin(b) - m * xdd[0], -m * g * math.sin(a) - m * xdd[1]]
    np.testing.assert_allclose(lam, lam_hand, rtol=0, atol=1e-10 * m * (g + np.abs(xdd[:2]).max()))


def test_prescribed_plate_rates_would_not_reproduce_eq_8_67():
    """Why the quasi-static assumption: along the reference the plate turns (α̇0, β̇0 ≠ 0).

    A plate prescribed with its rates adds the transport acceleration
    ``Ω̇2 × r + Ω2 × (Ω2 × r) + 2 Ω2 × v_rel`` of the ball centre, whose in-plane part would
    enter Λ0; Eqs. (8.67)-(8.68) contain no such term. Here it is > 1e-3 of ``ρ m ω²`` at
    several times, i.e. far from negligible, so the thesis equations are the quasi-static ones."""
    par = dict(m=0.1, R=0.05, g=9.81, I=1e-4)
    phi0, rho, omega = math.radians(35.0), 0.5, 1.0
    worst = 0.0
    for t in (0.3, 1.1, 2.5, 4.0):
        h = 1e-5   # test-only differences of the prescribed plate angles
        us = [hand_reference(t + d, phi0, rho, omega, **par)[4] for d in (-h, 0.0, h)]
        a, b = us[1]
        ad, bd = (us[2] - us[0]) / (2 * h)
        add, bdd = (us[2] - 2 * us[1] + us[0]) / h ** 2
        W = np.array([ad * math.cos(b), bd, ad * math.sin(b)])           # R2 = Rx(a) Ry(b)
        Wd = np.array([add * math.cos(b) - ad * bd * math.sin(b), bdd,
                       add * math.sin(b) + ad * bd * math.cos(b)])
        x, xd, *_ = hand_reference(t, phi0, rho, omega, **par)
        r = np.array([x[0], x[1], par["R"]])
        v = np.array([xd[0], xd[1], 0.0])
        extra = np.cross(Wd, r) + np.cross(W, np.cross(W, r)) + 2 * np.cross(W, v)
        worst = max(worst, float(np.hypot(extra[0], extra[1])) / (rho * omega ** 2))
    assert worst > 1e-3


# ----------------------------------------------------------------------------- reference
@pytest.mark.parametrize("phi0_deg, Omega", [(5.0, 10.0382), (35.0, 12.2077)])
def test_Omega_eq_8_64(cm, phi0_deg, Omega):
    """Ω of Eq. (8.64) with the data of Eq. (8.88): thesis values, 4 decimals (abs 5e-5)."""
    ref = bp.circular_motion(cm, phi0_deg)
    assert float(ref.xd(0.0)[4]) == pytest.approx(Omega, abs=5e-5)
    assert bp.circular_parameters(cm, phi0_deg).Omega == pytest.approx(Omega, abs=5e-5)
    assert ref.period == pytest.approx(2 * math.pi)


def test_reference_check_and_hand_values(cm, ref5):
    """Residuals of the Reference below 1e-12 and x0, λ0, u0 equal the hand formulas."""
    ts = np.linspace(0.0, 2 * math.pi, 9)
    rep = ref5.check(cm, ts)
    assert rep.ok
    for t in ts[:4]:
        x, xd, xdd, lam, u, _ = hand_reference(float(t), math.radians(5.0), 0.5, 1.0, 0.1, 0.05, 9.81, 1e-4)
        np.testing.assert_allclose(ref5.x(t), x, atol=1e-13)
        np.testing.assert_allclose(ref5.lam(t), lam, atol=1e-13)
        np.testing.assert_allclose(ref5.u(t), u, atol=1e-13)


def test_initial_conditions_eq_8_92(cm):
    """ε_ωφ ≈ 3.0383, ε_ωθ ≈ 1.7868 rad/s (Eq. (8.92), abs 5e-5) and D(x0) ẋ0 = 0 (1e-14)."""
    x0, xd0 = bp.initial_conditions(cm, 5.0)
    mo = bp.circular_parameters(cm, 5.0)
    assert xd0[3] == pytest.approx(3.0383, abs=5e-5)
    assert xd0[4] - mo.Omega == pytest.approx(1.7868, abs=5e-5)
    assert np.max(np.abs(cm.D(x0) @ xd0)) < 1e-14
    np.testing.assert_allclose(x0, [0.4, 0.1, math.pi / 2 + math.radians(5), math.radians(5),
                                    math.radians(10)], atol=1e-15)


def test_deviation_is_zero_on_reference(ref5):
    ts = np.array([0.2, 1.7])
    X = bp.deviation(ref5, ts, ref5.x(ts), ref5.xd(ts))
    assert X.shape == (2, 8)
    assert np.max(np.abs(X)) == 0.0
    x1 = np.array(ref5.x(0.2)) + np.array([0.1, 0, 0, 0.2, 0])
    np.testing.assert_allclose(bp.deviation(ref5, 0.2, x1, ref5.xd(0.2)), [0, 0.2, 0, 0, 0, 0, 0.1, 0],
                               atol=1e-15)


def test_motion_from_reference_roundtrip(cm):
    ref = bp.circular_motion(cm, 20.0, rho=0.3, omega=-0.8, x_A=0.1, y_A=-0.2)
    mo = bp.motion_from_reference(cm, ref)
    assert (mo.rho, mo.omega, mo.x_A, mo.y_A) == pytest.approx((0.3, -0.8, 0.1, -0.2), abs=1e-12)
    assert math.degrees(mo.phi0) == pytest.approx(20.0, abs=1e-12)


# ----------------------------------------------------------------------------- linearization
@pytest.mark.parametrize("phi0_deg", [5.0, 35.0])
def test_third_procedure_equals_closed_form_8_75_8_76(cm, phi0_deg):
    """A(t), B(t) of nhcontrol.linearize (partition (8.72)-(8.73)) vs the closed form, 20 times.

    Agreement 1e-12 relative; the zero pattern of Eqs. (8.75)-(8.76) holds exactly (<1e-12)."""
    ref = bp.circular_motion(cm, phi0_deg)
    mo = bp.motion_from_reference(cm, ref)
    ts = np.linspace(0.0, 2 * math.pi, 20, endpoint=False)
    res = linearize(cm, ref, Partition.from_dict(bp.PARTITION_8_72), t=ts)
    assert tuple(res.states) == bp.LTV_STATES
    Ac, Bc = bp.closed_form_matrices(mo, ts)
    assert np.max(np.abs(res.A - Ac)) <= 1e-12 * np.max(np.abs(Ac))
    assert np.max(np.abs(res.B - Bc)) <= 1e-12 * np.max(np.abs(Bc))
    pattern_A = np.zeros((8, 8), bool)
    pattern_A[0, 3] = pattern_A[1, 4] = pattern_A[2, 5] = True
    pattern_A[3, [0, 4]] = pattern_A[4, [1, 3, 5]] = pattern_A[5, [0, 4]] = True
    pattern_A[6, [0, 1, 4, 5]] = pattern_A[7, [0, 1, 4, 5]] = True
    assert np.max(np.abs(res.A[:, ~pattern_A])) < 1e-12
    assert np.max(np.abs(res.B[:, [0, 1, 2, 6, 7], :])) < 1e-12
    # rows 4-6 of A are constant (a1..a7), Eqs. (8.80)-(8.82)
    assert np.ptp(res.A[:, 3:6, :], axis=0).max() < 1e-12


@pytest.mark.parametrize("phi0_deg", [5.0, 35.0])
def test_rows_7_8_are_first_harmonics(cm, phi0_deg):
    """Rows 7-8 of A(t) are a cos ωt + b sin ωt (Eqs. (8.83)-(8.84)): a least-squares fit on
    (1, cos, sin, cos 2, sin 2) over 16 times has residual < 1e-12 and zero mean/2nd harmonic,
    and the coefficients are a8..a15 of the closed form (e.g. a8 = -ωρ, a10 = R, a11 = -R cos φ0)."""
    ref = bp.circular_motion(cm, phi0_deg)
    ts = np.linspace(0.0, 2 * math.pi, 16, endpoint=False)
    A = linearize(cm, ref, Partition.from_dict(bp.PARTITION_8_72), t=ts).A
    F = np.stack([np.ones_like(ts), np.cos(ts), np.sin(ts), np.cos(2 * ts), np.sin(2 * ts)], 1)
    Y = A[:, 6:8, :].reshape(16, -1)
    coef, *_ = np.linalg.lstsq(F, Y, rcond=None)
    assert np.max(np.abs(F @ coef - Y)) < 1e-12
    assert np.max(np.abs(coef[[0, 3, 4]])) < 1e-12
    c = math.cos(math.radians(phi0_deg))
    cos_c = coef[1].reshape(2, 8)
    sin_c = coef[2].reshape(2, 8)
    assert cos_c[0, 0] == pytest.approx(-0.5, abs=1e-12)          # a8 = -ωρ
    assert cos_c[0, 4] == pytest.approx(0.05, abs=1e-12)          # a10 = R
    assert sin_c[0, 5] == pytest.approx(-0.05 * c, abs=1e-12)     # a11 = -R cos φ0
    assert cos_c[1, 5] == pytest.approx(0.05 * c, abs=1e-12)      # -a15
    assert sin_c[1, 0] == pytest.approx(-0.5, abs=1e-12)          # a12 = -ωρ


def test_closed_form_derivatives_vs_central_differences(ref5, cm):
    """Exact derivatives (orders 1-3) of the closed form vs central differences (test only).

    h = 1e-3 gives truncation ~h² |f'''| ~ 1e-6 relative; tolerance 1e-5 relative."""
    mo = bp.motion_from_reference(cm, ref5)
    t, h = 0.7, 1e-3
    for k in (1, 2, 3):
        Ak, Bk = bp.closed_form_matrices(mo, t, k)
        Ap, Bp = bp.closed_form_matrices(mo, t + h, k - 1)
        Am, Bm = bp.closed_form_matrices(mo, t - h, k - 1)
        np.testing.assert_allclose((Ap - Am) / (2 * h), Ak, rtol=0, atol=1e-5 * (1 + np.abs(Ak).max()))
        np.testing.assert_allclose((Bp - Bm) / (2 * h), Bk, rtol=0, atol=1e-5 * (1 + np.abs(Bk).max()))


def test_ltv_system_object(cm, ref5):
    sys = bpl.ltv_system(cm, ref5)
    assert (sys.nstates, sys.ninputs) == (8, 2)
    assert sys.states == bp.LTV_STATES and sys.inputs == bp.INPUTS
    assert sys.period == pytest.approx(2 * math.pi)
    np.testing.assert_allclose(sys.A(1.0 + 2 * math.pi), sys.A(1.0), atol=1e-12)


# ----------------------------------------------------------------------------- error paths
def test_unknown_parameter():
    with pytest.raises(ModelError, match=r"unknown ball-plate parameter\(s\) \['mass'\]"):
        bp.build(mass=1.0)
    with pytest.raises(ModelError, match="must be positive"):
        bp.build(R=-0.1)


def test_circle_too_fast(cm):
    with pytest.raises(ReferenceMotionError, match=r"no plate tilt can hold this circle.*\|K\|"):
        bp.circular_motion(cm, 5.0, rho=0.5, omega=5.0)


def test_singular_lean(cm):
    with pytest.raises(ReferenceMotionError, match="singular"):
        bp.circular_parameters(cm, 90.0)


def test_bad_circle(cm):
    with pytest.raises(ReferenceMotionError, match="rho > 0 and omega != 0"):
        bp.circular_parameters(cm, 5.0, omega=0.0)


def test_wrong_model():
    from nhcontrol.models import sleigh
    with pytest.raises(ModelError, match="expected the ball-plate model"):
        bp.circular_parameters(sleigh.model(), 5.0)


def test_not_a_circle(cm):
    """A motion with the circle's x0, ẋ0 but other plate angles is refused (names u)."""
    mo = bp.circular_parameters(cm, 5.0)

    class Fake:
        parameters = None
        t_range = None
        x = staticmethod(mo.x)
        xd = staticmethod(mo.xd)
        u = staticmethod(lambda t: mo.u(t) + 0.01)

    with pytest.raises(ReferenceMotionError, match=r"not the circular steady motion.*u\(t\) differs"):
        bp.motion_from_reference(cm, Fake())
    with pytest.raises(ReferenceMotionError, match=r"not the circular steady motion"):
        bpl.ltv_system(cm, Fake())


def test_deviation_shape_error(ref5):
    with pytest.raises(ReferenceMotionError, match=r"shape \(5,\) or \(N, 5\)"):
        bp.deviation(ref5, 0.0, np.zeros(4), np.zeros(4))


def test_closed_form_order_error(cm):
    with pytest.raises(LinearSystemError, match="non-negative integer"):
        bp.closed_form_matrices(bp.circular_parameters(cm, 5.0), 0.0, -1)


def _mini_plate():
    mb = MultibodySystem("mini")
    xC, yC, psi, phi, theta = mb.add_coordinates("x_C y_C psi phi theta")
    R = mb.add_parameters(R=0.05)
    a, b = mb.add_inputs("alpha beta")
    R2 = rot_x(a) * rot_y(b)
    return mb, (xC, yC, psi, phi, theta), R, R2


def test_contact_wrong_centre():
    mb, (xC, yC, psi, phi, theta), R, R2 = _mini_plate()
    ball = mb.add_body("ball", mass=1, inertia=sp.eye(3), position=sp.Matrix([xC, yC, R]),
                       orientation=R2 * rot_z(psi) * rot_x(phi) * rot_y(theta))
    with pytest.raises(ModelError, match=r"centre of body 'ball' is not at r_C \+ R_2 \[0, 0, R\]"):
        sphere_on_moving_plane(mb, ball, radius=R, plate_orientation=R2,
                               contact_point_plate=(xC, yC, 0))


def test_contact_bad_arguments():
    mb, (xC, yC, psi, phi, theta), R, R2 = _mini_plate()
    ball = mb.add_body("ball", mass=1, inertia=sp.eye(3), position=R2 * sp.Matrix([xC, yC, R]),
                       orientation=R2 * rot_z(psi))
    with pytest.raises(ModelError, match=r"(?s)plate_orientation must be 3x3.*"
                                         r"contact_point_plate must lie in the plate plane"):
        sphere_on_moving_plane(mb, ball, radius=R, plate_orientation=sp.eye(2),
                               contact_point_plate=(xC, yC, 1))


def test_contact_on_turntable_plate_rotation_cancels():
    """A plate that is a body with its own coordinate (turntable angle χ, R_2 = R_z(χ)): the
    relative velocity is still Eq. (8.55), without χ̇ — the plate's angular velocity cancels from
    v_C32 (Eqs. (8.52)-(8.54), docs/theory/ball_plate.md Sect. 1). Exact (sympy) zero difference."""
    mb = MultibodySystem("turntable")
    xC, yC, psi, phi, theta, chi = mb.add_coordinates("x_C y_C psi phi theta chi")
    R = mb.add_parameters(R=0.05)
    R2 = rot_z(chi)
    plate = mb.add_body("plate", mass=1, inertia=sp.eye(3), position=(0, 0, 0), orientation=R2)
    ball = mb.add_body("ball", mass=1, inertia=sp.eye(3), position=R2 * sp.Matrix([xC, yC, R]),
                       orientation=R2 * rot_z(psi) * rot_x(phi) * rot_y(theta))
    rec = sphere_on_moving_plane(mb, ball, radius=R, plate_orientation=R2,
                                 contact_point_plate=(xC, yC, 0), plate_body=plate)
    xCd, yCd, psid, phid, thetad, chid = mb.velocities
    want = [xCd - R * thetad * sp.cos(psi) * sp.cos(phi) - R * phid * sp.sin(psi),
            yCd - R * thetad * sp.sin(psi) * sp.cos(phi) + R * phid * sp.cos(psi), 0]
    assert [sp.simplify(g - w) for g, w in zip(rec.relative_velocity, want)] == [0, 0, 0]
    assert rec.nonholonomic_names == ("roll_x", "roll_y")
