"""Tests of the bicycle benchmark model (thesis Sect. 4.3, Meijaard et al. 2007).

Reference data (kept as text with its source):

* Table 4.2 of the thesis, "Benchmark" column = coefficients of the characteristic quartic
  (4.184) of Meijaard et al. (2007), 15 significant digits;
* static wheel loads computed by hand from Table 4.1 (moment balance about the rear contact).

The lean/steer linearization used here is a *central finite difference* of the nonlinear
index-1 dynamics on the constraint manifold (test-only validation; the product path uses
exact symbolic derivatives). Its truncation/round-off error is about 1e-9 relative for
h = 1e-6, so the published coefficients are compared at rtol = 1e-7.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from _helpers import bicycle_lean_steer_matrix
from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.models import benchmark_bicycle as bb

#: Thesis Table 4.2, "Benchmark" column (Meijaard et al. 2007): zeta*_1 ... zeta*_7 of Eq. (4.184).
ZETA_BENCHMARK = (3.19038797723880, 3.51247840148387, 40.39852784001426, 3.48482071330797,
                  26.56139846201176, 300.01505074911196, 8.26676015041884)

SPEEDS = (0.0, 1.0, 4.3, 10.0)
IX = {name: i for i, name in enumerate(bb.COORDINATES)}


@pytest.fixture(scope="module")
def cm():
    return bb.model()


@pytest.fixture(scope="module")
def mb():
    return bb.build()


def quartic(v: float) -> np.ndarray:
    """Coefficients of Eq. (4.184): l^4 + z1 v l^3 + (z2 v^2 - z3) l^2 + (z4 v^2 - z5) v l + z6 - z7 v^2."""
    z = ZETA_BENCHMARK
    return np.array([1.0, z[0] * v, z[1] * v**2 - z[2], (z[3] * v**2 - z[4]) * v, z[5] - z[6] * v**2])


# --------------------------------------------------------------------------- helpers (test-only)
# project, accelerations and the central-difference lean/steer matrix live in tests/_helpers.py
lean_steer_matrix = bicycle_lean_steer_matrix


# --------------------------------------------------------------------------- structure
def test_dimensions_and_names(cm):
    """n = 11 (Eq. (4.128)), m = 4 (Eq. (4.139)), l = 4 (Eq. (4.145)), Table 4.1 parameters."""
    assert (cm.n, cm.m, cm.l, cm.ninputs) == (11, 4, 4, 0)
    assert tuple(cm.coordinates) == bb.COORDINATES
    assert tuple(cm.holonomic_names) == ("P_z", "P_tangent", "Q_z", "Q_tangent")
    assert tuple(cm.nonholonomic_names) == ("P_vx", "P_vy", "Q_vx", "Q_vy")
    assert dict(cm.parameters) == dict(bb.PARAMETERS)


def test_model_is_cached(cm):
    assert bb.model() is cm


@pytest.mark.parametrize("name", ["PARTITION_4_172", "PARTITION_4_203", "PARTITION_4_208"])
def test_partitions_are_valid(cm, name):
    """Each partition splits the 11 coordinates 3/4/4 and its blocks are regular along Eq. (4.174).

    ``Cx`` restricted to the dependent coordinates x_d (4x4) and ``D_dd`` (8x8, Eq. (2.131))
    must be invertible: condition numbers below 1e6 (they are O(10)).
    """
    part = getattr(bb, name)
    ind, ad, dep = part["independent"], part["admissible_dependent"], part["dependent"]
    assert (len(ind), len(ad), len(dep)) == (3, 4, 4)
    assert sorted(ind + ad + dep) == sorted(bb.COORDINATES)
    x, _, _ = bb.steady_forward_state(4.3, 0.37, bb.PARAMETERS)
    Cx, D = cm.Cx(x), cm.D(x)
    i_d = [IX[c] for c in dep]
    i_dd = [IX[c] for c in ad + dep]
    assert np.linalg.cond(Cx[:, i_d]) < 1e6
    assert np.linalg.cond(D[:, i_dd]) < 1e6


def test_inertia_transformation_matches_eq_4_131():
    """Eq. (4.131) equals R_nu^T R_pi^T I_H R_pi R_nu with R_nu = R_y(-nu), and Table 4.1's Ī_H (1e-5)."""
    from nhcontrol.modeling import rot_x, rot_y

    P = bb.PARAMETERS
    nu = P["nu"]
    I_H = np.array([[P["I_Hxx"], 0, P["I_Hxz"]], [0, P["I_Hyy"], 0], [P["I_Hxz"], 0, P["I_Hzz"]]])
    R_pi = np.array(rot_x(sp.pi), dtype=float)
    R_nu = np.array(rot_y(-nu), dtype=float)
    Ib = R_nu.T @ R_pi.T @ I_H @ R_pi @ R_nu
    c, s = math.cos(nu), math.sin(nu)
    expected = {
        "xx": P["I_Hxx"] * c**2 + P["I_Hzz"] * s**2 - P["I_Hxz"] * math.sin(2 * nu),
        "zz": P["I_Hxx"] * s**2 + P["I_Hzz"] * c**2 + P["I_Hxz"] * math.sin(2 * nu),
        "xz": (P["I_Hzz"] - P["I_Hxx"]) * s * c - P["I_Hxz"] * math.cos(2 * nu),
    }
    np.testing.assert_allclose([Ib[0, 0], Ib[2, 2], Ib[0, 2]], [expected["xx"], expected["zz"], expected["xz"]],
                               rtol=1e-14)
    # Table 4.1 prints Ī_H = [5.841, -0.912, 0.759] x 1e-2 (3 decimals in units of 1e-2)
    np.testing.assert_allclose([Ib[0, 0], Ib[0, 2], Ib[2, 2]], [0.05841, -0.00912, 0.00759], atol=6e-6)


def test_geometry_of_the_reference_configuration(mb):
    """Positions (4.132)-(4.138) put the bodies where Meijaard's Fig. 1 has them (1e-14).

    With P the rear contact at the origin: G_R at (0, rho_R), G_B at (x_B, z_B), G_H at
    (x_H, z_H), G_F at (w, rho_F); the steer axis (H frame Z axis) meets the ground at w + c.
    """
    P = bb.PARAMETERS
    x0, _, _ = bb.steady_forward_state(0.0, 0.0, P)
    x0[IX["x_b"]] = P["x_B"]      # put the rear contact at the origin
    subs = {s: v for s, v in zip(mb.coordinates, x0)}
    subs.update({s: mb.defaults[s.name] for s in mb.parameters})
    pos = {b.name: np.array(b.position.subs(subs), dtype=float).ravel() for b in mb.bodies}
    np.testing.assert_allclose(pos["R"], [0, 0, P["rho_R"]], atol=1e-14)
    np.testing.assert_allclose(pos["B"], [P["x_B"], 0, P["z_B"]], atol=1e-14)
    np.testing.assert_allclose(pos["H"], [P["x_H"], 0, P["z_H"]], atol=1e-14)
    np.testing.assert_allclose(pos["F"], [P["w"], 0, P["rho_F"]], atol=1e-14)
    R_H = np.array(mb.body("H").orientation.subs(subs), dtype=float)
    axis = R_H[:, 2]
    # line through G_F... steer axis passes through I = G_B + [x_I, 0, 0]; intersect with z = 0
    x_I = P["w"] + P["c"] - P["x_B"] - P["z_B"] * math.tan(P["nu"])
    point_I = pos["B"] + np.array([x_I, 0, 0])
    s = -point_I[2] / axis[2]
    np.testing.assert_allclose(point_I + s * axis, [P["w"] + P["c"], 0, 0], atol=1e-14)
    assert axis[0] < 0 < axis[2]   # tilted backwards by nu
    np.testing.assert_allclose(math.atan2(-axis[0], axis[2]), P["nu"], rtol=1e-14)


# --------------------------------------------------------------------------- mass matrix
def test_mass_matrix_symmetric_semidefinite(cm):
    """M (Eq. (2.103)) is symmetric and positive semidefinite, singular only in xi_R, xi_F.

    The contact coordinates carry no mass (no body depends on them), so M has exactly two
    zero eigenvalues with null space span(e_xi_R, e_xi_F); restricted to the other nine
    coordinates it is positive definite, and the index-1 matrix [[M, Dᵀ], [D, 0]] of
    Eq. (2.119) is regular. M[x_b, x_b] is the total mass 94 kg.
    """
    x, _, _ = bb.steady_forward_state(4.3, 0.8, bb.PARAMETERS)
    x = x + np.array([0, 0, 0, 0.2, 0.1, 0.0, 0.3, 0, 0, 0, 0])   # a generic pose
    M = cm.M(x)
    np.testing.assert_allclose(M, M.T, atol=1e-14)
    xi = [IX["xi_R"], IX["xi_F"]]
    np.testing.assert_array_equal(M[xi, :], 0.0)
    others = [i for i in range(11) if i not in xi]
    assert np.linalg.eigvalsh(M[np.ix_(others, others)]).min() > 1e-2
    assert np.linalg.eigvalsh(M).min() > -1e-12
    P = bb.PARAMETERS
    assert M[0, 0] == pytest.approx(P["m_R"] + P["m_B"] + P["m_H"] + P["m_F"], rel=1e-14)
    D = cm.D(x)
    K = np.block([[M, D.T], [D, np.zeros((8, 8))]])
    assert np.linalg.cond(K) < 1e8


# --------------------------------------------------------------------------- steady forward motion
@pytest.mark.parametrize("v", SPEEDS)
def test_steady_forward_residuals_from_kernels(cm, v):
    """Along Eq. (4.174): |C|, |D xd|, |D xdd - Qd| and |M xdd + Dᵀ Λ0 - Q| below 1e-12.

    Sampled on t in [0, 1] s (wheel angles up to 33 rad at 10 m/s). For long times the
    coordinates themselves carry a rounding error eps*|theta_R| (theta_R + xi_R = pi/2 is not
    exact in floating point), so over t in [0, 20] s only the relative dynamic residual
    |M xdd + Dᵀ Λ0 - Q| / |Q| is checked, at 1e-13.
    """
    ts = np.linspace(0.0, 1.0, 6)
    x, xd, xdd = bb.steady_forward_state(v, ts, bb.PARAMETERS)
    lam = bb.steady_forward_multipliers(cm)
    for i in range(ts.size):
        assert np.max(np.abs(cm.C(x[i]))) < 1e-12
        assert np.max(np.abs(cm.D(x[i]) @ xd[i])) < 1e-12
        assert np.max(np.abs(cm.D(x[i]) @ xdd[i] - cm.Qd(x[i], xd[i]))) < 1e-12
        res = cm.M(x[i]) @ xdd[i] + cm.D(x[i]).T @ lam - cm.Q(x[i], xd[i])
        assert np.max(np.abs(res)) < 1e-12
    x, xd, xdd = bb.steady_forward_state(v, np.linspace(0.0, 20.0, 9), bb.PARAMETERS)
    res = np.einsum("nij,nj->ni", cm.M(x), xdd) + np.einsum("nji,j->ni", cm.D(x), lam) - cm.Q(x, xd)
    assert np.max(np.abs(res)) < 1e-13 * np.max(np.abs(cm.Q(x, xd)))


@pytest.mark.parametrize("v", SPEEDS)
def test_steady_forward_reference_check(cm, v):
    """The Reference of steady_forward passes Reference.check at 1e-12 (steady=True)."""
    ref = bb.steady_forward(cm, v)
    assert ref.steady
    report = ref.check(cm, np.linspace(0.0, 1.0, 5), tol=1e-12, raise_on_error=True)
    assert report.max_dynamics < 1e-12
    assert report.max_holonomic < 1e-12
    np.testing.assert_allclose(ref.xd(1.0)[IX["theta_R"]], v / bb.PARAMETERS["rho_R"], rtol=1e-15)
    np.testing.assert_allclose(ref.x(2.0)[IX["xi_F"]],
                               bb.PARAMETERS["nu"] + math.pi / 2 - 2 * v / bb.PARAMETERS["rho_F"], rtol=1e-14)


@pytest.mark.parametrize("v", [0.0, 4.3])
def test_closed_form_multipliers_match_inverse_dynamics(cm, v):
    """Closed-form Λ0 equals the least-squares solution of Eq. (2.112) (1e-10 relative)."""
    from nhcontrol.reference import inverse_dynamics

    x, xd, xdd = bb.steady_forward_state(v, 0.9, bb.PARAMETERS)
    res = inverse_dynamics(cm, x, xd, xdd)
    np.testing.assert_allclose(res.lam, bb.steady_forward_multipliers(cm), rtol=1e-10, atol=1e-9)


def test_static_multipliers_are_the_wheel_loads(cm):
    """At v = 0, Λ from inverse dynamics = minus the hand-computed static wheel loads (1e-10).

    Hand computation (Table 4.1): N_Q = g (m_B x_B + m_H x_H + m_F w)/w
    = 9.81 (85*0.3 + 4*0.9 + 3*1.02)/1.02 = 309.3035294 N and
    N_P = 9.81*94 - N_Q = 612.8364706 N.
    """
    from nhcontrol.reference import inverse_dynamics

    x, xd, xdd = bb.steady_forward_state(0.0, 0.0, bb.PARAMETERS)
    lam = inverse_dynamics(cm, x, xd, xdd).lam
    names = list(cm.holonomic_names) + list(cm.nonholonomic_names)
    n_q = 9.81 * (85 * 0.3 + 4 * 0.9 + 3 * 1.02) / 1.02
    n_p = 9.81 * 94 - n_q
    assert lam[names.index("P_z")] == pytest.approx(-n_p, rel=1e-10)
    assert lam[names.index("Q_z")] == pytest.approx(-n_q, rel=1e-10)
    others = [i for i, nm in enumerate(names) if nm not in ("P_z", "Q_z")]
    np.testing.assert_allclose(lam[others], 0.0, atol=1e-9)
    assert bb.static_wheel_loads() == pytest.approx((n_p, n_q), rel=1e-14)


def test_multipliers_follow_parameter_vector(cm):
    """Λ0 uses the parameters of p (heavier rider -> larger loads), without recompiling."""
    from nhcontrol.reference import inverse_dynamics

    p = cm.param_vector(m_B=100.0, x_B=0.35)
    x, xd, xdd = bb.steady_forward_state(2.0, 0.0, dict(zip(cm.parameters, p)))
    lam = bb.steady_forward_multipliers(cm, p)
    np.testing.assert_allclose(lam, inverse_dynamics(cm, x, xd, xdd, p=p).lam, rtol=1e-10, atol=1e-9)
    ref = bb.steady_forward(cm, 2.0, p)
    assert ref.check(cm, [0.0, 1.0], tol=1e-12).max_dynamics < 1e-12


# --------------------------------------------------------------------------- benchmark validation
@pytest.mark.parametrize("v", [0.0, 1.0, 4.3, 5.0, 10.0])
def test_lean_steer_characteristic_polynomial_matches_benchmark(cm, v):
    """The lean/steer quartic (4.184) of the model equals Meijaard's (Table 4.2) at rtol 1e-7.

    At v = 5 m/s this gives the benchmark eigenvalues -14.0784, -0.775342 +- 4.46487 i,
    -0.322866 (self-stable).
    """
    A = lean_steer_matrix(cm, v)
    np.testing.assert_allclose(np.poly(A), quartic(v), rtol=1e-7, atol=1e-7 * 300)
    ev = np.sort_complex(np.linalg.eigvals(A))
    np.testing.assert_allclose(ev, np.sort_complex(np.roots(quartic(v))), rtol=1e-6, atol=1e-7)


def thesis_4_180_rows(v: float) -> np.ndarray:
    """Rows of phi_b_dd and delta_dd of the thesis' Jacobian (4.180) (4 decimals printed).

    Columns (phi_b, delta, phi_b_d, delta_d); the x_b, x_b_d and x_ad columns are zero there.
    """
    return np.array([[9.4898, 0.5715 + 0.8912 * v**2, -0.1055 * v, 0.3305 * v],
                     [-11.7195, 30.9088 - 1.9717 * v**2, -3.6768 * v, -3.0849 * v]])


@pytest.mark.parametrize("v", [1.0, 2.0, 5.0])
def test_lean_steer_rows_match_thesis_jacobian_4_180(cm, v):
    """The model reproduces the printed entries of Eq. (4.180), signs included.

    Tolerance: half a unit of the 4th printed decimal per coefficient, 5e-5 (1 + v^2).
    """
    A = lean_steer_matrix(cm, v)
    np.testing.assert_allclose(A[2:], thesis_4_180_rows(v), rtol=0, atol=5e-5 * (1 + v**2))
    np.testing.assert_array_equal(A[:2], [[0, 0, 1, 0], [0, 0, 0, 1]])


# --------------------------------------------------------------------------- errors
def test_unknown_parameter_raises():
    with pytest.raises(ModelError, match=r"unknown bicycle parameter\(s\) \['rider_mass'\]"):
        bb.build(rider_mass=80.0)


def test_non_numeric_parameter_raises():
    with pytest.raises(ModelError, match="finite real numbers.*m_B='heavy'"):
        bb.model(m_B="heavy")


@pytest.mark.parametrize("v", [float("nan"), "fast"])
def test_bad_speed_raises(cm, v):
    with pytest.raises(ReferenceMotionError, match="forward speed v must be"):
        bb.steady_forward(cm, v)


def test_wrong_model_raises(cm):
    from nhcontrol.models import sleigh

    with pytest.raises(ModelError, match="expected the benchmark bicycle model"):
        bb.steady_forward(sleigh.model(), 1.0)


def test_bad_parameter_vector_raises(cm):
    with pytest.raises(ModelError, match=r"parameter vector p must have shape \(26,\)"):
        bb.steady_forward(cm, 1.0, p=np.ones(3))
