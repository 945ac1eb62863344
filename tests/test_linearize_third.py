"""Third numerical linearization procedure (Sect. 4.2.3) on toy models with known answers.

Tolerances: closed-form references are compared at 1e-12 (round-off of a handful of
solves on O(1) matrices); central-difference references (h = 1e-6, O(h²) truncation plus
O(eps/h) round-off) at 1e-7 absolute on O(1) entries.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nhcontrol
from nhcontrol._util.errors import LinearSystemError, ReferenceMotionError
from nhcontrol.linearization import (LinearizationResult, Partition, identify_spurious, linearize,
                                 suggest_partition)
from test_linearize_third_toys import (ToyReference, constant_reference, fd_linearization,
                                       index1, inverse_dynamics, pendulum, point_reference,
                                       sleigh, sleigh_redundant, sleigh_state)

MASS, I_G, A_CM = 3.0, 0.4, 0.25
P_SLEIGH = Partition(["x", "theta"], ["y"], [])
P_REDUNDANT = Partition(["xp", "theta"], ["yp"], ["xg", "yg"])


@pytest.fixture(scope="module")
def pend():
    return pendulum()


@pytest.fixture(scope="module")
def sl():
    return sleigh()


@pytest.fixture(scope="module")
def slr():
    return sleigh_redundant()


# ------------------------------------------------------------------ closed-form references
def test_pendulum_holonomic_only_form(pend):
    """l = 0: the 2(n-m) form of Eq. (4.127); A = [[0, 1], [-g/L, 0]], B = [0, 1/mass]ᵀ
    at the bottom equilibrium (x horizontal, independent). Tolerance 1e-12."""
    g, L, mass = 9.81, 1.5, 2.0
    ref = constant_reference(pend, np.array([0.0, -L]), np.zeros(2))
    res = linearize(pend, ref, Partition(["x"], [], ["y"]))
    assert res.A.shape == (2, 2) and res.B.shape == (2, 1)
    np.testing.assert_allclose(res.A, [[0, 1], [-g / L, 0]], atol=1e-12)
    np.testing.assert_allclose(res.B, [[0], [1 / mass]], atol=1e-12)
    assert res.states == ("x", "x_d") and res.inputs == ("F",)
    assert res.n_spurious == 0 and res.spurious_eigenvalues.shape == (0,)
    np.testing.assert_allclose(np.sort(res.eigenvalues.imag), [-np.sqrt(g / L), np.sqrt(g / L)],
                               rtol=1e-12)


def test_pendulum_off_bottom_matches_closed_form(pend):
    """Away from the bottom, moving and forced (ẍ0, Λ0 ≠ 0): A and B equal the central
    differences of the reduced nonlinear ODE (Eq. (4.105) eliminates y); atol 1e-7."""
    L, th = 1.5, 0.4
    x0 = np.array([L * np.sin(th), -L * np.cos(th)])
    xd0 = np.array([0.7 * np.cos(th), 0.7 * np.sin(th)])      # tangent velocity
    u0 = np.array([0.3])
    ref = point_reference(pend, x0, xd0, u0)
    P = Partition(["x"], [], ["y"])
    res = linearize(pend, ref, P)
    A_fd, B_fd = fd_linearization(pend, P, x0, xd0, u0)
    np.testing.assert_allclose(res.A, A_fd, atol=1e-7)
    np.testing.assert_allclose(res.B, B_fd, atol=1e-7)


def sleigh_closed_form(v):
    """Chaplygin sleigh straight motion along theta = 0 at speed v, Partition (x, theta | y):
    m(v̇ - a ω²) = F, (I + m a²) ω̇ + m a v ω = τ, ẏ = v sin θ."""
    k = MASS * A_CM * v / (I_G + MASS * A_CM**2)
    A = np.zeros((5, 5))
    A[0, 2] = A[1, 3] = 1.0
    A[3, 3] = -k
    A[4, 1] = v
    B = np.zeros((5, 2))
    B[2, 0] = 1.0 / MASS
    B[3, 1] = 1.0 / (I_G + MASS * A_CM**2)
    return A, B, k


@pytest.mark.parametrize("v", [0.5, 2.0, -1.0])
def test_sleigh_closed_form(sl, v):
    """Chaplygin sleigh: A, B of the straight motion equal the closed form (1e-12); the
    spectrum is {0, 0, 0, 0, -m a v / (I + m a²)}, one spurious zero (l = 1)."""
    x0, xd0 = sleigh_state(v, 0.0)
    res = linearize(sl, constant_reference(sl, x0, xd0), P_SLEIGH)
    A, B, k = sleigh_closed_form(v)
    np.testing.assert_allclose(res.A, A, atol=1e-12)
    np.testing.assert_allclose(res.B, B, atol=1e-12)
    assert res.A.shape == (2 * (3 - 0) - 1,) * 2
    assert res.states == ("x", "theta", "x_d", "theta_d", "y")
    np.testing.assert_allclose(np.sort(res.nonspurious_eigenvalues.real), np.sort([0, 0, 0, -k]),
                               atol=1e-12)
    np.testing.assert_allclose(res.spurious_eigenvalues, [0.0], atol=1e-12)
    assert res.spurious_identification.method == "decoupled"


def test_redundant_sleigh_same_spectrum_and_singular_mass(sl, slr):
    """The sleigh with its CoM as extra coordinates (m = 2, M singular) gives the same
    5 x 5 spectrum as the minimal model (1e-12): the dependent coordinates are eliminated
    by Eq. (4.105) and the size 2(n-m)-l = 5 is the minimal one."""
    v, th = 2.0, 0.3
    x0, xd0 = sleigh_state(v, th, redundant=True)
    res = linearize(slr, constant_reference(slr, x0, xd0), P_REDUNDANT)
    assert res.A.shape == (5, 5)
    k = MASS * A_CM * v / (I_G + MASS * A_CM**2)
    np.testing.assert_allclose(np.sort(res.eigenvalues.real), [-k, 0, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(res.eigenvalues.imag, 0, atol=1e-12)


# ----------------------------------------------------------------- finite-difference checks
@pytest.mark.parametrize("make,partition,state", [
    (sleigh, P_SLEIGH, lambda: sleigh_state(1.3, 0.7, omega=0.9)),
    (sleigh, Partition(["y", "theta"], ["x"], []), lambda: sleigh_state(1.3, 0.7, omega=-0.4)),
    (sleigh_redundant, P_REDUNDANT, lambda: sleigh_state(1.3, 0.7, 0.9, redundant=True)),
    (sleigh_redundant, Partition(["xg", "theta"], ["yg"], ["xp", "yp"]),
     lambda: sleigh_state(-0.8, 2.0, 1.5, redundant=True)),
])
def test_matches_central_differences_of_reduced_ode(make, partition, state):
    """At non-steady points (ω ≠ 0, inputs ≠ 0, ẍ0 and Λ0 ≠ 0) A and B equal the central
    differences of the nonlinear reduced ODE Ẋ = F(X, u), X = [x_ai, ẋ_ai, x_ad]
    (index-1 DAE + Newton on C = 0); atol 1e-7 (h = 1e-6)."""
    cm = make()
    x0, xd0 = state()
    u0 = np.array([0.5, -0.2])
    ref = point_reference(cm, x0, xd0, u0)
    res = linearize(cm, ref, partition)
    A_fd, B_fd = fd_linearization(cm, partition, x0, xd0, u0)
    np.testing.assert_allclose(res.A, A_fd, atol=1e-7)
    np.testing.assert_allclose(res.B, B_fd, atol=1e-7)
    assert np.max(np.abs(res.A)) > 0.1          # not a trivial comparison


# ------------------------------------------------------------------- partition invariance
@pytest.mark.parametrize("partition", [
    Partition(["xp", "theta"], ["yp"], ["xg", "yg"]),
    Partition(["xg", "theta"], ["yg"], ["xp", "yp"]),
    Partition(["yp", "theta"], ["xp"], ["xg", "yg"]),
    Partition(["xp", "yg"], ["yp"], ["xg", "theta"]),
])
def test_different_partitions_same_spectrum(slr, partition):
    """Every valid partition gives the same full spectrum (the reduced states are coordinates
    of the same linearized constrained phase space). Compared through the characteristic
    polynomial (the zero eigenvalues are defective, so eigenvalues themselves split by
    sqrt(eps)); coefficients at 1e-10 against the closed form λ⁴ (λ + k)."""
    v, th = 2.0, 0.3
    x0, xd0 = sleigh_state(v, th, redundant=True)
    ref = constant_reference(slr, x0, xd0)
    partition.check(slr, ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = linearize(slr, ref, partition)
    k = MASS * A_CM * v / (I_G + MASS * A_CM**2)
    np.testing.assert_allclose(np.poly(res.A), [1, k, 0, 0, 0, 0], atol=1e-10)
    ident = res.spurious_identification        # own structure or found by swapping (via)
    assert ident.exact and ident.method in ("decoupled", "conserved")
    np.testing.assert_allclose(res.spurious_eigenvalues, [0.0], atol=1e-12)
    assert np.min(np.abs(res.nonspurious_eigenvalues + k)) < 1e-10


def test_spectrum_of_nonsteady_point_depends_on_partition(slr):
    """Along a non-steady reference the change of reduced coordinates between two partitions
    depends on x0(t), ẋ0(t), so A' = L A L⁻¹ + L̇ L⁻¹ and the "frozen-time" spectra differ
    (documented in docs/theory/linearization.md); both are nevertheless exact (see the
    central-difference test). Guards against claiming an invariance that does not hold."""
    x0, xd0 = sleigh_state(1.3, 0.7, 0.9, redundant=True)
    ref = point_reference(slr, x0, xd0, np.array([0.5, -0.2]))
    A1 = linearize(slr, ref, P_REDUNDANT).A
    A2 = linearize(slr, ref, Partition(["xg", "theta"], ["yg"], ["xp", "yp"])).A
    assert np.max(np.abs(np.poly(A1) - np.poly(A2))) > 1e-3


# ---------------------------------------------------------------------- vectorised path
def curved_reference(cm):
    """Non-steady sleigh reference: heading θ(t) = 0.3 sin t, speed v(t) = 1 + 0.2 t,
    realised by the inputs (F, τ) and Λ from inverse dynamics (exact at every t)."""
    def state(t):
        th, thd, thdd = 0.3 * np.sin(t), 0.3 * np.cos(t), -0.3 * np.sin(t)
        v, vd = 1 + 0.2 * t, 0.2
        c, s = np.cos(th), np.sin(th)
        x = np.array([np.sin(t), t, th])            # position values are irrelevant here
        xd = np.array([v * c, v * s, thd])
        xdd = np.array([vd * c - v * s * thd, vd * s + v * c * thd, thdd])
        return x, xd, xdd

    def lam_u(t):
        x, xd, xdd = state(t)
        return inverse_dynamics(cm, x, xd, xdd)

    return ToyReference(lambda t: state(t)[0], lambda t: state(t)[1], lambda t: state(t)[2],
                        lambda t: lam_u(t)[0], lambda t: lam_u(t)[1], False,
                        cm._pdef.copy())


def test_curved_reference_is_a_solution(sl):
    """Sanity of the test reference: M ẍ0 + DᵀΛ0 = Q(u0) and B ẋ0 = 0 (1e-12)."""
    ref = curved_reference(sl)
    for t in (0.0, 0.7, 2.0):
        x, xd, xdd, lam, u = ref.x(t), ref.xd(t), ref.xdd(t), ref.lam(t), ref.u(t)
        r = sl.M(x, u) @ xdd + sl.D(x, u).T @ lam - sl.Q(x, xd, u)
        np.testing.assert_allclose(r, 0, atol=1e-12)
        np.testing.assert_allclose(sl.B(x) @ xd, 0, atol=1e-12)
        xdd1, _ = index1(sl, x, xd, u)
        np.testing.assert_allclose(xdd1, xdd, atol=1e-10)


def test_vectorised_equals_pointwise(sl):
    """linearize(t=array) equals the pointwise calls (1e-13) with shapes (N, ns, ns), (N, ns, k);
    the reference is non-steady, so A(t) really varies."""
    ref = curved_reference(sl)
    ts = np.linspace(0.0, 3.0, 7)
    res = linearize(sl, ref, P_SLEIGH, t=ts)
    assert res.A.shape == (7, 5, 5) and res.B.shape == (7, 5, 2) and res.stacked
    for i, t in enumerate(ts):
        one = linearize(sl, ref, P_SLEIGH, t=t)
        np.testing.assert_allclose(res.A[i], one.A, atol=1e-13)
        np.testing.assert_allclose(res.B[i], one.B, atol=1e-13)
    assert np.ptp(res.A[:, 3, 3]) > 1e-2                  # A(t) is not constant
    assert res.eigenvalues.shape == (7, 5)
    assert res.spurious_eigenvalues.shape == (7, 1)
    np.testing.assert_array_equal(res.t, ts)


def test_vectorised_matches_central_differences(sl):
    """Along the curved reference every A(t_i), B(t_i) equals the central differences of the
    reduced ODE at that point (atol 1e-7)."""
    ref = curved_reference(sl)
    ts = np.array([0.2, 1.9])
    res = linearize(sl, ref, P_SLEIGH, t=ts)
    for i, t in enumerate(ts):
        A_fd, B_fd = fd_linearization(sl, P_SLEIGH, ref.x(t), ref.xd(t), ref.u(t))
        np.testing.assert_allclose(res.A[i], A_fd, atol=1e-7)
        np.testing.assert_allclose(res.B[i], B_fd, atol=1e-7)


# ------------------------------------------------------------------------- spurious ones
def test_spurious_conserved_at_equilibrium(slr):
    """At rest (ẋ0 = 0) J31 = J33 = 0: the l combinations x̃_ad - J32 x̃_ai are conserved, the
    spurious eigenvalue is exactly 0 and identified by the left structure ("conserved") even
    for a partition where J23 ≠ 0."""
    x0, xd0 = sleigh_state(0.0, 0.3, redundant=True)
    ref = constant_reference(slr, x0, xd0, u0=np.array([0.0, 0.0]))
    res = linearize(slr, ref, Partition(["yp", "theta"], ["xp"], ["xg", "yg"]))
    ident = res.spurious_identification
    assert ident.method in ("decoupled", "conserved") and ident.exact
    np.testing.assert_allclose(res.spurious_eigenvalues, [0.0], atol=1e-12)
    assert ident.residual <= ident.tol


def test_spurious_nearest_warns_and_still_returns_l_values():
    """A 2-state toy Jacobian (n_ai = 1, l = 1 → 3 x 3) with J23 ≠ 0 and J31 + J33 J32 ≠ 0:
    no exact split; the heuristic returns the eigenvalue nearest eig(J33), exact = False."""
    A = np.array([[0.0, 1.0, 0.0],
                  [-2.0, -0.1, 0.05],
                  [0.3, 0.2, -5.0]])
    ident = identify_spurious(A, 1, 1)
    assert ident.method == "nearest" and not ident.exact
    assert ident.spurious.shape == (1,) and ident.nonspurious.shape == (2,)
    ev = np.linalg.eigvals(A)
    assert np.min(np.abs(ev)) > 1e-2                     # no zero eigenvalue to fall back on
    assert np.min(np.abs(ev - ident.spurious[0])) < 1e-12
    assert abs(ident.spurious[0] - (-5.0)) < 0.05
    res = LinearizationResult(A=A, B=np.zeros((3, 0)), states=("q", "q_d", "s"), inputs=(),
                              partition=Partition(["q"], ["s"], []), n_spurious=1, t=0.0,
                              steady=True, n_independent=1, model_name="toy")
    with pytest.warns(UserWarning, match="identified heuristically"):
        res.spurious_eigenvalues


def test_zero_fallback_without_search():
    """identify_spurious alone (no model to search other partitions) on a Jacobian without an
    exact structure but with l zero eigenvalues returns zeros, method "zero", exact False."""
    # 3 x 3, n_ai = 1, l = 1: J23 ≠ 0, J31 + J33 J32 ≠ 0, det = 0
    A = np.array([[0.0, 1.0, 0.0],
                  [-2.0, -1.0, 2.0],
                  [1.0, 0.5, -1.0]])
    assert abs(np.linalg.det(A)) < 1e-14
    ident = identify_spurious(A, 1, 1)
    assert ident.method == "zero" and not ident.exact
    np.testing.assert_allclose(ident.spurious, [0.0], atol=1e-12)


def test_decoupled_identification_exact_values():
    """J23 = 0: spurious = eig(J33) and non-spurious = eig([[0, I], [J21, J22]]) exactly."""
    A = np.array([[0.0, 1.0, 0.0, 0.0],
                  [-4.0, -0.2, 0.0, 0.0],
                  [1.0, 2.0, -3.0, 1.0],
                  [0.5, 0.0, 0.0, -7.0]])
    ident = identify_spurious(A, 1, 2)
    assert ident.method == "decoupled"
    np.testing.assert_allclose(np.sort(ident.spurious.real), [-7.0, -3.0], atol=1e-14)
    np.testing.assert_allclose(np.sort_complex(ident.nonspurious),
                               np.sort_complex(np.roots([1, 0.2, 4.0])), atol=1e-12)


# -------------------------------------------------------------- result object, statespace
def test_result_is_read_only_and_statespace_named(sl):
    """A and B are read-only; to_statespace carries the state and input names."""
    x0, xd0 = sleigh_state(2.0, 0.0)
    res = linearize(sl, constant_reference(sl, x0, xd0), P_SLEIGH)
    with pytest.raises(ValueError):
        res.A[0, 0] = 1.0
    sys = res.to_statespace()
    assert sys.nstates == 5 and sys.ninputs == 2
    assert list(sys.state_labels) == list(res.states)
    assert list(sys.input_labels) == ["F", "tau"]
    np.testing.assert_array_equal(sys.A, res.A)
    np.testing.assert_array_equal(sys.B, res.B)


def test_to_statespace_refuses_non_steady(sl):
    ref = curved_reference(sl)
    res = linearize(sl, ref, P_SLEIGH, t=0.5)
    with pytest.raises(LinearSystemError, match="not steady.*LTV"):
        res.to_statespace()


def test_module_is_callable(sl):
    """nhcontrol.linearize(model, ref, partition) is the same as linearize.linearize."""
    x0, xd0 = sleigh_state(2.0, 0.0)
    ref = constant_reference(sl, x0, xd0)
    a = nhcontrol.linearize(sl, ref, P_SLEIGH)
    b = linearize(sl, ref, P_SLEIGH.to_dict())
    np.testing.assert_array_equal(a.A, b.A)


def test_partition_none_uses_suggestion(slr):
    x0, xd0 = sleigh_state(2.0, 0.3, redundant=True)
    ref = constant_reference(slr, x0, xd0)
    res = linearize(slr, ref)
    assert res.partition == suggest_partition(slr, ref)
    assert res.A.shape == (5, 5)


def test_bad_t_shape(sl):
    x0, xd0 = sleigh_state(2.0, 0.0)
    with pytest.raises(LinearSystemError, match="1-D array of times"):
        linearize(sl, constant_reference(sl, x0, xd0), P_SLEIGH, t=np.zeros((2, 2)))


def test_non_finite_reference_raises(sl):
    x0, xd0 = sleigh_state(2.0, 0.0)
    good = constant_reference(sl, x0, xd0)
    bad = ToyReference(lambda t: np.array([np.nan, 0, 0]), good.fxd, good.fxdd, good.flam,
                       good.fu, True, good.parameters)
    with pytest.raises(ReferenceMotionError, match=r"x0\(t\) is not finite"):
        linearize(sl, bad, P_SLEIGH)


def test_singular_reduced_mass_raises(sl):
    """I_G = 0 and a = 0 make m0 = T0ᵀ M T0 singular (no rotational inertia)."""
    x0, xd0 = sleigh_state(2.0, 0.0)
    ref = constant_reference(sl, x0, xd0)
    p = sl.param_vector(I_G=0.0, a=0.0)
    bad = ToyReference(ref.fx, ref.fxd, lambda t: np.zeros(3), lambda t: np.zeros(1),
                       ref.fu, True, p)
    with pytest.raises(ReferenceMotionError, match="m0"):
        linearize(sl, bad, P_SLEIGH)


def test_inputs_in_constraints_warn():
    """A pendulum whose rod length is an input (C = x² + y² - ℓ²) is outside Sect. 8.1
    (Eqs. (8.2)-(8.3) have no u): linearize warns, naming the input; A is still exact (the
    central differences at fixed ℓ agree to 1e-7)."""
    from test_linearize_third_toys import winch

    cm, ref = winch()
    P = Partition(["x"], [], ["y"])
    with pytest.warns(UserWarning, match=r"inputs \['ell'\] enter the constraints"):
        res = linearize(cm, ref, P)
    A_fd, _ = fd_linearization(cm, P, np.array([0.0, -1.5]), np.zeros(2), np.array([1.5]))
    np.testing.assert_allclose(res.A, A_fd, atol=1e-7)
