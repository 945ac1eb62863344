"""Validation of the exact linearizations against each other and against finite differences.

Models: the rolling disc (``nhcontrol.models.rolling_wheel``, n = 7, m = 2, l = 2), also with an
input torque, and the benchmark bicycle (n = 11, m = l = 4). Tolerances:

* exact procedures against each other: eigenvalues agree to 1e-10 absolute for simple
  eigenvalues (rounding only; multiple zero eigenvalues of defective blocks are only determined
  to ~sqrt(eps) ~ 1e-8, so they are matched at 1e-6);
* exact Jacobians against central differences with step h: truncation error O(h^2) times third
  derivatives ~ O(1..100), so ~1e-6 relative for h = 1e-4 on the (non-steady) disc.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import (ConstraintError, LinearSystemError, PartitionError,
                                    ReferenceMotionError)
from nhcontrol.analysis.stability import match_spectra, structural_zeros
from nhcontrol.linearization import linearize
from nhcontrol.linearization.finite_difference import (finite_difference_jacobian,
                                                   index1_accelerations, reduced_ode_jacobian_fd)
from nhcontrol.linearization.first import ReferencePoint, first_procedure, reference_point
from nhcontrol.linearization.second import second_procedure
from nhcontrol.models import rolling_wheel as rw

from test_linearize_validation_fixtures import SympyKernels

PART = rw.PARTITION


@pytest.fixture(scope="module")
def disc():
    return rw.model_disc()


@pytest.fixture(scope="module")
def disc_input():
    """Disc with a torque ``tau`` about the (yawed) lean axis: exercises the input matrix."""
    from nhcontrol.modeling import rot_z

    mb = rw.build_disc()
    tau = mb.add_inputs("tau")
    psi = [s for s in mb.coordinates if str(s) == "psi"][0]
    mb.add_torque(mb.body("disc"), rot_z(psi) * sp.Matrix([tau, 0, 0]))
    return mb.compile()


@pytest.fixture(scope="module")
def disc_sympy():
    mb = rw.build_disc()
    return SympyKernels(mb.equations(), mb.defaults, name="disc_sympy")


def _consistent(cm, rng, u=None):
    """Random non-steady state on the constraint manifold (Newton on C = 0, D xd = 0)."""
    from nhcontrol.linearization.finite_difference import _project_holonomic
    from nhcontrol.linearization.first import partition_indices

    ai, ad, d = partition_indices(cm, PART)
    x = np.array(rw.upright_rolling(cm, 1.0).x(0.0), dtype=float)
    x[ai + ad] += rng.uniform(-0.4, 0.4, len(ai + ad))
    U = None if u is None else np.atleast_2d(u)
    x = _project_holonomic(cm, x[None, :], d, U, None)[0]
    xd = np.zeros(cm.n)
    xd[ai] = rng.uniform(-2.0, 2.0, len(ai))
    D = cm.D(x, u)
    dd = ad + d
    xd[dd] = -np.linalg.solve(D[:, dd], D[:, ai] @ xd[ai])
    xdd, lam = index1_accelerations(cm, x, xd, u)
    return ReferencePoint(0.0, x, xd, xdd, lam, None if u is None else np.atleast_1d(u), None)


# ------------------------------------------------------------------------------------------
# same spectrum from every procedure
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("speed", [0.5, 2.0])
def test_disc_all_procedures_same_spectrum(disc, speed):
    """Third (8x8), second (10x10), first (14x14), FD counterpart: same non-spurious spectrum.

    The third's 8 eigenvalues must be found among the others' (1e-10 for the non-zero ones,
    1e-6 for the multiple zeros); the remaining eigenvalues are the extra spurious zeros.
    """
    ref = rw.upright_rolling(disc, speed)
    A3 = np.array(linearize(disc, ref, PART).A)
    assert A3.shape == (2 * (disc.n - disc.m) - disc.l,) * 2
    lam3 = np.linalg.eigvals(A3)
    nz3 = lam3[np.abs(lam3) > 1e-6]
    assert nz3.size >= 2                                  # at least the wobble pair
    f1 = first_procedure(disc, ref)
    s2 = second_procedure(disc, ref, PART)
    fd = finite_difference_jacobian(disc, ref, h=1e-5)
    assert f1.J.shape == (2 * disc.n,) * 2
    assert s2.J.shape == (2 * disc.n - disc.m - disc.l,) * 2
    for J in (f1.J, s2.J, fd.J):
        lam = np.linalg.eigvals(J)
        _, err_nz = match_spectra(nz3, lam)
        assert err_nz < (1e-7 if J is fd.J else 1e-10)
        _, err_all = match_spectra(lam3, lam)
        assert err_all < 1e-6
        idx, _ = match_spectra(nz3, lam)
        rest = np.delete(lam, idx)
        assert np.max(np.abs(rest)) < 1e-6          # the extra eigenvalues are spurious zeros


def test_disc_upright_stability_changes_with_speed(disc):
    """Invariant: the upright disc wobbles unstably at low speed and is marginal above it."""
    slow = np.linalg.eigvals(np.array(linearize(disc, rw.upright_rolling(disc, 0.3), PART).A))
    fast = np.linalg.eigvals(np.array(linearize(disc, rw.upright_rolling(disc, 3.0), PART).A))
    assert np.max(slow.real) > 1e-3
    assert np.max(np.abs(fast.real)) < 1e-8


def test_bicycle_all_procedures_same_spectrum():
    """Bicycle at v = 3 m/s: first (22x22), second (14x14), third (10x10) and FD (22x22)."""
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model()
    ref = bb.steady_forward(cm, 3.0)
    A3 = np.array(linearize(cm, ref, bb.PARTITION_4_172).A)
    block = A3[np.ix_(structural_zeros(A3).keep, structural_zeros(A3).keep)]
    true = np.linalg.eigvals(block)
    assert true.size == 4
    f1 = first_procedure(cm, ref)
    s2 = second_procedure(cm, ref, bb.PARTITION_4_172)
    fd = finite_difference_jacobian(cm, ref, h=1e-5)
    # zero eigenvalues sit in Jordan blocks: an error e in J moves them by ~e^(1/2), so the
    # FD Jacobian (error ~1e-10) has its "zeros" at ~1e-5
    for J, tol, ztol, nzero in ((f1.J, 1e-10, 1e-6, 18), (s2.J, 1e-10, 1e-6, 10),
                                (A3, 1e-10, 1e-6, 6), (fd.J, 1e-8, 1e-3, 18)):
        lam = np.linalg.eigvals(J)
        idx, err = match_spectra(true, lam)
        assert err < tol
        assert np.max(np.abs(np.delete(lam, idx))) < ztol
        assert lam.size - 4 == nzero
    # the first procedure's zero eigenvalues are *structural*: 2(m+l) spurious + forward motion
    assert structural_zeros(s2.J).n_zero == 10
    assert structural_zeros(A3).n_zero == 6


# ------------------------------------------------------------------------------------------
# exact against finite differences
# ------------------------------------------------------------------------------------------
def test_first_procedure_equals_fd_counterpart_nonsteady(disc):
    """J of Sect. 4.2.1 = central differences of Eq. (7.108) at a random non-steady point."""
    rng = np.random.default_rng(7)
    pt = _consistent(disc, rng)
    assert np.max(np.abs(pt.xdd)) > 0.1                         # not a steady motion
    f1 = first_procedure(disc, pt)
    fd = finite_difference_jacobian(disc, pt, h=1e-4)
    assert np.max(np.abs(f1.J - fd.J)) / np.max(np.abs(f1.J)) < 1e-6


def test_second_procedure_equals_fd_of_reduced_ode(disc):
    """J of Eq. (4.95) = central differences of the ODE (2.134)-(2.135) (non-steady)."""
    rng = np.random.default_rng(11)
    pt = _consistent(disc, rng)
    s2 = second_procedure(disc, pt, PART)
    fd = reduced_ode_jacobian_fd(disc, pt, PART, h=1e-4, form="second")
    assert fd.states == s2.states
    assert np.max(np.abs(s2.J - fd.J)) / np.max(np.abs(s2.J)) < 1e-6


@pytest.mark.parametrize("t_eval", [0.21, 0.47])
def test_third_procedure_equals_fd_of_reduced_ode_along_simulated_trajectory(disc_input, t_eval):
    """linearize() (Eq. (4.124) and the input matrix of Sect. 8.1) = central differences of the
    nonlinear reduced ODE (x_d from C = 0, dependent velocities from D xd = 0) along a
    *simulated*, non-steady trajectory (DOP853, rtol 1e-12) with a constant input torque.
    Relative tolerance 1e-6 (h = 1e-4: truncation ~h^2)."""
    cm = disc_input
    rng = np.random.default_rng(3)
    u0 = np.array([0.05])
    start = _consistent(cm, rng, u0)
    # integrate with the input held constant
    from scipy.integrate import solve_ivp

    n = cm.n

    def rhs(_t, s):
        return np.concatenate([s[n:], index1_accelerations(cm, s[:n], s[n:], u0)[0]])

    sol = solve_ivp(rhs, (0.0, 0.6), np.concatenate([start.x, start.xd]), method="DOP853",
                    rtol=1e-12, atol=1e-12, dense_output=True)
    pt = ReferencePoint(t_eval, sol.sol(t_eval)[:n], sol.sol(t_eval)[n:],
                        *index1_accelerations(cm, sol.sol(t_eval)[:n], sol.sol(t_eval)[n:], u0),
                        u0, None)
    assert np.max(np.abs(cm.C(pt.x, u0))) < 1e-9 and np.max(np.abs(cm.D(pt.x, u0) @ pt.xd)) < 1e-9
    from nhcontrol.reference import Reference

    ref = Reference.from_functions(
        cm, lambda t: sol.sol(t)[:n], lambda t: sol.sol(t)[n:],
        lambda t: index1_accelerations(cm, sol.sol(t)[:n], sol.sol(t)[n:], u0)[0],
        u=lambda t: u0, lam=lambda t: index1_accelerations(cm, sol.sol(t)[:n], sol.sol(t)[n:], u0)[1],
        t_range=(0.0, 0.6))   # the integrated interval (outside it the dense output extrapolates)
    res = linearize(cm, ref, PART, t=t_eval)
    fd = reduced_ode_jacobian_fd(cm, pt, PART, h=1e-4, form="third")
    assert tuple(res.states) == fd.states
    A = np.array(res.A)
    assert np.max(np.abs(A - fd.J)) / np.max(np.abs(A)) < 1e-6
    B = np.array(res.B)
    assert np.max(np.abs(B)) > 1e-3
    assert np.max(np.abs(B - fd.B)) / np.max(np.abs(B)) < 1e-6
    # not a steady motion: the linearization changes along the trajectory
    A_other = np.array(linearize(cm, ref, PART, t=0.05).A)
    assert np.max(np.abs(A_other - A)) > 1e-3


def test_fd_error_depends_on_h_third_procedure_does_not():
    """Bicycle at v = 5 m/s against Meijaard et al. (2007) Table 2: the eigenvalue error of the
    finite-difference counterpart (7.109) falls like h^2 (>= 30x per decade of h, from >= 1e-6 at
    h = 1e-2... 1e-3), and its Jacobian error against the exact first procedure likewise; the
    third procedure has no step and its error is at the table's precision (< 1e-12)."""
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.reproduce.bicycle_benchmark import reference_data

    cm = bb.model()
    ref = bb.steady_forward(cm, 5.0)
    table = reference_data()["eigenvalues"][5.0]
    A3 = np.array(linearize(cm, ref, bb.PARTITION_4_172).A)
    _, e3 = match_spectra(table, np.linalg.eigvals(A3))
    assert e3 < 1e-12
    f1 = first_procedure(cm, ref)
    jac_err, eig_err = [], []
    for h in (1e-2, 1e-3, 1e-4):
        fd = finite_difference_jacobian(cm, ref, h=h)
        jac_err.append(np.max(np.abs(fd.J - f1.J)))
        eig_err.append(match_spectra(table, np.linalg.eigvals(fd.J))[1])
    assert jac_err[0] > 30 * jac_err[1] > 30 * 30 * jac_err[2]
    assert eig_err[0] > 30 * eig_err[1] > 30 * 30 * eig_err[2]
    assert eig_err[1] > 1e-7 > e3 * 1e4


def test_sympy_kernels_agree_with_compiled(disc, disc_sympy):
    """Plain-sympy lambdified kernels give the same first-procedure Jacobian as the generated
    code (independent check of the code generator), to 1e-12 relative."""
    rng = np.random.default_rng(5)
    pt = _consistent(disc, rng)
    a = first_procedure(disc, pt).J
    b = first_procedure(disc_sympy, pt).J
    assert np.max(np.abs(a - b)) / np.max(np.abs(a)) < 1e-12


def test_descriptor_form_has_the_same_finite_spectrum(disc):
    """E z' = A z (index-1 DAE form): finite generalized eigenvalues = eig(J); m+l infinite."""
    import scipy.linalg as sla

    rng = np.random.default_rng(2)
    f1 = first_procedure(disc, _consistent(disc, rng))
    w = sla.eigvals(f1.A, f1.E)
    finite = w[np.isfinite(w) & (np.abs(w) < 1e8)]
    assert finite.size == 2 * disc.n
    _, err = match_spectra(np.linalg.eigvals(f1.J), finite)
    assert err < 1e-6
    # Λ~ = J_lambda X~ solves the linearized dynamic equations
    X = rng.normal(size=2 * disc.n)
    n = disc.n
    xdd = f1.J[n:] @ X
    lam = f1.J_lambda @ X
    resid = (f1.E[n:2 * n, n:2 * n] @ xdd - f1.A[n:2 * n, 2 * n:] @ lam
             - (f1.Kx @ X[:n] + f1.Kv @ X[n:]))
    assert np.max(np.abs(resid)) < 1e-9 * max(1.0, np.max(np.abs(f1.Kx)))


def test_results_are_readonly(disc):
    ref = rw.upright_rolling(disc, 1.0)
    res = second_procedure(disc, ref, PART)
    with pytest.raises(ValueError):
        res.J[0, 0] = 1.0
    with pytest.raises(ValueError):
        first_procedure(disc, ref).J[0, 0] = 1.0


# ------------------------------------------------------------------------------------------
# error paths
# ------------------------------------------------------------------------------------------
def test_bad_partitions(disc):
    ref = rw.upright_rolling(disc, 1.0)
    with pytest.raises(PartitionError, match=r"unknown coordinates \['q'\]"):
        second_procedure(disc, ref, dict(independent=["q", "psi", "phi"],
                                         admissible_dependent=["y", "theta"], dependent=["z", "xi"]))
    with pytest.raises(PartitionError, match="listed more than once"):
        second_procedure(disc, ref, dict(independent=["x", "x", "phi"],
                                         admissible_dependent=["y", "theta"], dependent=["z", "xi"]))
    with pytest.raises(PartitionError, match="n-m-l = 3"):
        second_procedure(disc, ref, dict(independent=["x", "psi"],
                                         admissible_dependent=["phi", "y", "theta"],
                                         dependent=["z", "xi"]))
    # z and xi as independent: D_dd singular (z does not enter the rolling constraints' columns)
    with pytest.raises(PartitionError, match=r"D_dd \(Eq\. \(2\.131\)\).*singular"):
        second_procedure(disc, ref, dict(independent=["z", "theta", "phi"],
                                         admissible_dependent=["x", "y"], dependent=["psi", "xi"]))
    with pytest.raises(PartitionError, match="form='third' needs"):
        reduced_ode_jacobian_fd(disc, ref, dict(independent=["x", "psi", "phi"],
                                                dependent=["y", "theta", "z", "xi"]))


def test_fd_step_and_form_errors(disc):
    ref = rw.upright_rolling(disc, 1.0)
    with pytest.raises(LinearSystemError, match="step h must be a positive number"):
        finite_difference_jacobian(disc, ref, h=0.0)
    with pytest.raises(LinearSystemError, match="form must be 'third' or 'second'"):
        reduced_ode_jacobian_fd(disc, ref, PART, form="first")


def test_reference_errors(disc):
    bad = ReferencePoint(0.0, np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(4), None, None)

    class Wrong:
        parameters = None

        def x(self, t): return np.zeros(3)
        def xd(self, t): return np.zeros(7)
        def xdd(self, t): return np.zeros(7)
        def lam(self, t): return np.zeros(4)

    with pytest.raises(ReferenceMotionError, match="reference x0\\(t\\) must have 7 entries, got 3"):
        first_procedure(disc, Wrong())

    class NaN(Wrong):
        def x(self, t): return np.full(7, np.nan)

    with pytest.raises(ReferenceMotionError, match="non-finite"):
        reference_point(disc, NaN())
    assert reference_point(disc, bad) is bad


def test_singular_saddle_point_matrix_raises(disc):
    """A point where the constraints are dependent: saddle-point matrix singular."""
    ref = rw.upright_rolling(disc, 1.0)

    class Redundant:
        """Kernels of the disc with the first constraint row repeated (rank D = 3 < m + l);
        the fused kernel is hidden so that the single kernels are used."""

        linearization_terms = None

        def __init__(self, cm):
            self._cm = cm

        def __getattr__(self, name):
            return getattr(self._cm, name)

        def D(self, x, u=None, p=None):
            D = np.array(self._cm.D(x, u, p))
            D[..., 1, :] = D[..., 0, :]
            return D

    with pytest.raises(ConstraintError, match=r"saddle-point matrix \[\[M, D\^T\], \[D, 0\]\]"):
        index1_accelerations(Redundant(disc), ref.x(0.0), ref.xd(0.0))
    with pytest.raises(ConstraintError, match="singular"):
        first_procedure(Redundant(disc), ReferencePoint(0.0, np.array(ref.x(0.0)),
                                                        np.array(ref.xd(0.0)), np.zeros(7),
                                                        np.array(ref.lam(0.0)), None, None))


def test_more_partition_and_projection_errors(disc):
    from nhcontrol._util.errors import SolverError
    from nhcontrol.linearization.finite_difference import _project_holonomic

    ref = rw.upright_rolling(disc, 1.0)
    with pytest.raises(PartitionError, match=r"coordinates in no set: \['xi'\]"):
        second_procedure(disc, ref, dict(independent=["x", "psi", "phi"],
                                         admissible_dependent=["y", "theta"], dependent=["z"]))
    with pytest.raises(PartitionError, match="admissible dependent x_ad must hold l = 2"):
        second_procedure(disc, ref, dict(independent=["x", "psi", "phi"],
                                         admissible_dependent=["y"], dependent=["theta", "z", "xi"]))
    # x and y do not enter C(x): ∂C/∂x_d singular in the projection of the reduced ODE
    with pytest.raises(PartitionError, match=r"∂C/∂x_d \(Eq\. \(4\.105\)\) is singular"):
        reduced_ode_jacobian_fd(disc, ref, dict(independent=["psi", "phi", "theta"],
                                                admissible_dependent=["z", "xi"],
                                                dependent=["x", "y"]))
    x = np.array(ref.x(0.0), dtype=float)
    x[2] += 0.2                                              # z off the ground
    with pytest.raises(SolverError, match="did not converge in 1 iterations"):
        _project_holonomic(disc, x[None, :], [2, 6], None, None, maxiter=1)


def test_zeta_fit_needs_a_quartic():
    from nhcontrol.reproduce.bicycle_benchmark import zeta_from_jacobian

    with pytest.raises(LinearSystemError, match="must be 4 x 4"):
        zeta_from_jacobian(lambda v: np.eye(2) * v)


def test_bicycle_third_procedure_equals_fd_at_nonsteady_state():
    """Bicycle at a random state on the constraint manifold (lean 0.1, steer -0.2, yaw rate,
    pitch/contact from C = 0): x_dd0 != 0 and Λ0 from the index-1 DAE. linearize() vs central
    differences of the nonlinear reduced ODE, 1e-6 relative (h = 1e-4); the first and second
    procedures vs their finite-difference counterparts likewise."""
    from nhcontrol.linearization.finite_difference import _project_holonomic
    from nhcontrol.linearization.first import partition_indices
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.reference import Reference

    cm = bb.model()
    part = bb.PARTITION_4_172
    ai, ad, d = partition_indices(cm, part)
    names = list(cm.coordinates)
    x = np.array(bb.steady_forward(cm, 4.0).x(0.3), dtype=float)
    x[names.index("phi_b")] = 0.1
    x[names.index("delta")] = -0.2
    x[names.index("psi_b")] = 0.3
    x = _project_holonomic(cm, x[None, :], d, None, None)[0]
    xd = np.zeros(cm.n)
    xd[ai] = [4.0, 0.3, -0.5]                                  # x_b, phi_b, delta rates
    D = cm.D(x)
    dd = ad + d
    xd[dd] = -np.linalg.solve(D[:, dd], D[:, ai] @ xd[ai])
    xdd, lam = index1_accelerations(cm, x, xd)
    assert np.max(np.abs(xdd)) > 0.5
    pt = ReferencePoint(0.0, x, xd, xdd, lam, None, None)
    ref = Reference.from_functions(cm, x, xd, xdd, lam=lam)
    A = np.array(linearize(cm, ref, part).A)
    fd = reduced_ode_jacobian_fd(cm, pt, part, h=1e-4)
    assert np.max(np.abs(A - fd.J)) / np.max(np.abs(A)) < 1e-6
    s2 = second_procedure(cm, pt, part)
    fd2 = reduced_ode_jacobian_fd(cm, pt, part, h=1e-4, form="second")
    assert np.max(np.abs(s2.J - fd2.J)) / np.max(np.abs(s2.J)) < 1e-6
    f1 = first_procedure(cm, pt)
    fd1 = finite_difference_jacobian(cm, pt, h=1e-4)
    assert np.max(np.abs(f1.J - fd1.J)) / np.max(np.abs(f1.J)) < 1e-6


def test_partition_object_and_dict_give_the_same_result(disc):
    from nhcontrol.linearization import Partition

    ref = rw.upright_rolling(disc, 1.5)
    a = second_procedure(disc, ref, PART)
    b = second_procedure(disc, ref, Partition.from_dict(PART))
    assert a.states == b.states and np.array_equal(a.J, b.J)
    assert a.independent == tuple(PART["independent"])
    assert a.n_spurious == disc.m + disc.l and a.nstates == 2 * disc.n - disc.m - disc.l


def test_third_procedure_along_nhcontrol_simulate_trajectory():
    """Bicycle at 4.5 m/s released with lean 0.05 rad (weave: non-steady), integrated with
    nhcontrol.simulate.forward_dynamics (plain index-1 form). At two instants on the simulated
    trajectory linearize() equals central differences of the nonlinear reduced ODE (1e-6
    relative, h = 1e-4), and the Jacobians at the two instants differ."""
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.reference import Reference
    from nhcontrol.simulate import consistent_initial_conditions, forward_dynamics

    cm = bb.model()
    part = bb.PARTITION_4_172
    ref0 = bb.steady_forward(cm, 4.5)
    x0 = np.array(ref0.x(0.0), dtype=float)
    xd0 = np.array(ref0.xd(0.0), dtype=float)
    x0[list(cm.coordinates).index("phi_b")] = 0.05
    ic = consistent_initial_conditions(cm, x0, xd0, independent=part["independent"],
                                       dependent=part["dependent"])
    sim = forward_dynamics(cm, (0.0, 0.8), ic.x, ic.xd, baumgarte=(0.0, 0.0), rtol=1e-11,
                           t_eval=[0.4, 0.8])
    assert np.max(sim.holonomic_drift) < 1e-8 and np.max(sim.velocity_drift) < 1e-8
    As = []
    for i in range(2):
        x, xd = sim.x[i], sim.xd[i]
        xdd, lam = index1_accelerations(cm, x, xd)
        ref = Reference.from_functions(cm, x, xd, xdd, lam=lam)
        A = np.array(linearize(cm, ref, part).A)
        fd = reduced_ode_jacobian_fd(cm, ReferencePoint(0.0, x, xd, xdd, lam, None, None), part,
                                     h=1e-4)
        assert np.max(np.abs(A - fd.J)) / np.max(np.abs(A)) < 1e-6
        As.append(A)
    assert np.max(np.abs(As[0] - As[1])) > 1e-3
