"""Skate single-track models of the road-vehicle review (Table 1) and Appell's equations.

Checks: the degree-of-freedom counts of Table 1, the velocity maps satisfy the skate
constraints identically, the kinematic bicycle's steady turn (``R = L / tan γ`` about the
rear axle, ``ψ̇ = V tan γ / L``), and Appell's equations against Newton--Euler with
multipliers (compiled model, index-1 form Eq. (2.119)) on the same trajectories to 1e-10.
"""

import math

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from nhcontrol._util.errors import ModelError
from nhcontrol.models import single_track as st
from nhcontrol.modeling.appell import appell_equations

from _helpers import accelerations

EXPECTED = {"kinematic": (3, 3, 1.5, 3), "force": (3, 2, 2.0, 4), "torque": (4, 3, 2.5, 5),
            "force_torque": (4, 2, 3.0, 6),
            # rigid wheels (Table 1, last rows): two spin angles, two rolling constraints, +1 dof
            "rigid_kinematic": (5, 5, 2.5, 5), "rigid_force": (5, 4, 3.0, 6),
            "rigid_torque": (6, 5, 3.5, 7), "rigid_force_torque": (6, 4, 4.0, 8)}


@pytest.fixture(scope="module")
def models():
    return {v: st.build(v) for v in st.VARIANTS}


@pytest.mark.parametrize("variant", st.VARIANTS)
def test_dof_counts_of_table_1(models, variant):
    mdl = models[variant]
    assert (mdl.n, mdl.l, mdl.dof, mdl.first_order_odes) == EXPECTED[variant]


@pytest.mark.parametrize("variant", st.VARIANTS)
def test_velocity_map_satisfies_skate_constraints(models, variant):
    mdl = models[variant]
    mb, ae = mdl.system, mdl.appell
    sub = dict(zip(mb.velocities, ae.xdot))
    for c in mb.nonholonomic:
        assert sp.simplify(c.expr.subs(sub)) == 0, c.name
    if variant.removeprefix("rigid_") in ("kinematic", "torque"):  # affine: v_G . i1 = V
        x, y, psi = mb.coordinates[:3]
        V = [p for p in mb.parameters if str(p) == "V"][0]
        assert sp.simplify(sp.cos(psi) * ae.xdot[0] + sp.sin(psi) * ae.xdot[1] - V) == 0


def test_kinematic_bicycle_steady_turn(models):
    """Rear-axle path radius and yaw rate of the kinematic bicycle at V = 20 m/s, γ = 3°
    (closed form; integration tolerance 1e-11 gives ~1e-9 relative error)."""
    f = models["kinematic"].appell.rhs()
    V, gam, a, b = 20.0, math.radians(3.0), st.DEFAULTS["a"], st.DEFAULTS["b"]
    R_ex, r_ex = st.kinematic_steady_turn(V, gam)
    assert R_ex == pytest.approx((a + b) / math.tan(gam), rel=1e-15)
    sol = solve_ivp(lambda t, s: f(t, s, [gam, 0.0]), (0, 5.0), [0, 0, 0], rtol=1e-12, atol=1e-12,
                    dense_output=True)
    t = np.linspace(0, 5, 50)
    X, Y, PSI = sol.sol(t)
    xr, yr = X - b * np.cos(PSI), Y - b * np.sin(PSI)
    # circle through the rear point: centre at (xr0, yr0 + R) for a left turn from the origin
    radius = np.hypot(xr - xr[0], yr - (yr[0] + R_ex))
    assert np.max(np.abs(radius / R_ex - 1)) < 1e-8
    assert np.gradient(PSI, t) == pytest.approx(np.full_like(t, r_ex), rel=1e-6)
    assert f(0, [0, 0, 0], [gam, 0.0])[2] == pytest.approx(r_ex, rel=1e-14)


@pytest.mark.parametrize("variant, u, s0", [
    ("force", lambda t: [800.0 * math.sin(t), 300.0, 0.05 * math.cos(0.7 * t),
                         -0.035 * math.sin(0.7 * t)], [0, 0, 0.1, 15.0]),
    ("torque", lambda t: [20.0 * math.sin(2 * t)], [0, 0, 0, 0.02, 0.0]),
    ("force_torque", lambda t: [500.0, -200.0 * math.cos(t), 15.0 * math.sin(3 * t)], [1, 2, 0.3, -0.01, 12.0, 0.0]),
])
def test_appell_equals_newton_euler_with_multipliers(models, variant, u, s0):
    """Appell's ẇ equals the Newton--Euler ẇ (index-1 form with multipliers, ``Q_d − E u̇`` with
    the steering rate of the force skate) at 20 points of an Appell trajectory to 1e-10 (both
    are exact; differences are round-off)."""
    mdl = models[variant]
    cm = mdl.system.compile(cache=False)
    f = mdl.appell.rhs()
    n = mdl.n
    sol = solve_ivp(lambda t, s: f(t, s, u(t)), (0, 2.0), s0, rtol=1e-9, atol=1e-9, dense_output=True)
    worst = 0.0
    for t in np.linspace(0, 2.0, 20):
        s = sol.sol(t)
        ut = np.array(u(t), dtype=float)
        wd_a = f(t, s, ut)[n:]
        ud = None if variant != "force" else np.array([0.0, 0.0, ut[3], 0.0])   # γ̇ = gamma_rate
        wd_ne = st.newton_euler_wdot(mdl, cm, s, ut, t, ud)  # torque: affine speed constraint in cm
        worst = max(worst, np.max(np.abs(wd_a - wd_ne)))
    assert worst < 1e-10


def test_rheonomic_steering_rate_enters(models):
    """With an assigned steering angle γ(t) the rate r = γ̇ enters the force skate. The skate
    reactions do no work (each contact point moves along its blade), so with no driving force
    the kinetic energy μ(γ) v²/2, μ = m + (m b² + J) tan²γ / L², is conserved:
    v̇ = -μ̇ v / (2 μ) (closed form derived independently of Appell's equations)."""
    mdl = models["force"]
    f = mdl.appell.rhs()
    s = np.array([0, 0, 0.0, 15.0])
    assert f(0, s, [0, 0, 0.05, 0.0])[3] == pytest.approx(0.0, abs=1e-12)  # constant γ: v̇ = 0
    v1 = f(0, s, [0, 0, 0.05, 0.2])[3]
    p = st.DEFAULTS
    L = p["a"] + p["b"]
    g, r, v = 0.05, 0.2, 15.0
    mu = p["m"] + (p["m"] * p["b"] ** 2 + p["J"]) * math.tan(g) ** 2 / L ** 2
    dmu = (p["m"] * p["b"] ** 2 + p["J"]) * 2 * math.tan(g) / math.cos(g) ** 2 / L ** 2 * r
    assert v1 == pytest.approx(-dmu * v / (2 * mu), rel=1e-12)


def test_errors():
    with pytest.raises(ModelError, match="unknown"):
        st.build("rigid_wheel")
    with pytest.raises(ModelError, match="valid names"):
        st.build("force", mass=3.0)
    with pytest.raises(ModelError, match="r_w.*valid names"):   # wheel radius: rigid wheels only
        st.build("force", r_w=0.3)
    with pytest.raises(ModelError, match="positive"):
        st.build("force", m=-1.0)
    mdl = st.build("force")
    w = sp.Symbol("w")
    with pytest.raises(ModelError, match="affine"):
        appell_equations(mdl.system, [w ** 2, 0, 0], [w])
    with pytest.raises(ModelError, match="one expression per coordinate"):
        appell_equations(mdl.system, [w, 0], [w])


def test_force_skate_closed_form():
    """μ v̇ + (m b² + J) tan γ γ̇ v / (L² cos² γ) = F_R + F_F / cos γ (derived in
    docs/theory/road_vehicles.md) equals the generated Appell equation to 1e-12 (relative)."""
    f = st.build("force").appell.rhs()
    p = st.DEFAULTS
    L, k = p["a"] + p["b"], p["m"] * p["b"] ** 2 + p["J"]
    for F_R, F_F, g, r, v in [(500.0, -300.0, 0.1, 0.3, 12.0), (-50.0, 900.0, -0.2, -0.5, 25.0)]:
        mu = p["m"] + k * math.tan(g) ** 2 / L ** 2
        vd = (F_R + F_F / math.cos(g) - k * math.tan(g) / (L * math.cos(g)) ** 2 * r * v) / mu
        assert f(0, [1.0, 2.0, 0.4, v], [F_R, F_F, g, r])[3] == pytest.approx(vd, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["rigid_force", "rigid_torque", "rigid_force_torque"])
def test_rigid_wheel_appell_equals_newton_euler(models, variant):
    """Rigid-wheel variants: Appell's ẇ equals Newton--Euler with the four constraints (two
    lateral, two rolling, review Eq. (50)) at 20 points of an Appell trajectory to 1e-10."""
    assert st.appell_vs_newton_euler(models[variant]) < 1e-10


def test_rigid_wheel_straight_run_closed_form(models):
    """Rigid-wheel force model going straight (γ = 0): the wheels add their mass and spin
    inertia, (m + 2 m_w + 2 J_w / r²) v̇ = (M_R + M_F) / r (derived here from the kinetic
    energy; Appell's equation to 1e-12 relative)."""
    f = models["rigid_force"].appell.rhs()
    p = {**st.DEFAULTS, **st.WHEEL_DEFAULTS}
    mu = p["m"] + 2 * p["m_w"] + 2 * p["J_w"] / p["r_w"] ** 2
    M_R, M_F, v = 300.0, -120.0, 14.0
    vd = f(0, [1.0, 2.0, 0.4, 0, 0, v], [M_R, M_F, 0.0, 0.0])[5]
    assert vd == pytest.approx((M_R + M_F) / p["r_w"] / mu, rel=1e-12)


def test_rigid_wheel_tends_to_skate():
    """With wheel mass and spin inertia -> 0 the rigid-wheel force model is the force skate
    driven by F = M / r (force/torque equivalence of the review, Sect. 5): ẋ and v̇ agree to
    O(m_w, J_w) = 1e-9 relative while steering with a rate."""
    rigid = st.build("rigid_force", m_w=1e-9, J_w=1e-9).appell.rhs()
    skate = st.build("force").appell.rhs()
    r = st.WHEEL_DEFAULTS["r_w"]
    for M_R, M_F, g, rate, v in [(300.0, -120.0, 0.1, 0.3, 14.0), (-50.0, 270.0, -0.2, -0.5, 25.0)]:
        a = rigid(0, [1.0, 2.0, 0.4, 0.0, 0.0, v], [M_R, M_F, g, rate])
        b = skate(0, [1.0, 2.0, 0.4, v], [M_R / r, M_F / r, g, rate])
        assert a[:3] == pytest.approx(b[:3], rel=1e-12)
        assert a[5] == pytest.approx(b[3], rel=1e-8)
        assert a[3] == pytest.approx(v / r, rel=1e-14) and a[4] == pytest.approx(v / (r * math.cos(g)), rel=1e-14)


@pytest.mark.parametrize("variant", st.VARIANTS)
def test_multibody_system_reports_dof(models, variant):
    """MultibodySystem.dof = n − m − l/2 (review: 3N − g − h/2) and first_order_odes =
    2(n − m) − l of the Newton–Euler systems equal Table 1 (the constant-speed variants carry
    the affine speed constraint)."""
    mdl = models[variant]
    mb = mdl.system
    assert mb.dof == mb.n - mb.m - mb.l / 2 == mdl.dof
    assert mb.first_order_odes == 2 * (mb.n - mb.m) - mb.l == mdl.first_order_odes
