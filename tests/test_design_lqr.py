"""Tests of nhcontrol.design.lqr: finite-horizon Riccati recursion and infinite-horizon LQR.

References: python-control's ``dlqr``/``lqr`` (slycot) for the LTI limits; the batch
least-squares solution of the whole horizon (stacked prediction matrices) for the finite horizon.
"""

from __future__ import annotations

import dataclasses

import control
import numpy as np
import pytest

from nhcontrol._util.errors import DesignError, NhcontrolError, SolverError
from nhcontrol.design import LQRResult, finite_horizon_lqr, lqr


def random_ltv(N: int, n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Ad = np.eye(n) + 0.1 * rng.standard_normal((N, n, n))
    Bd = 0.3 * rng.standard_normal((N, n, k))
    return Ad, Bd


def random_spd(r: int, rng: np.random.Generator, shift: float = 0.1) -> np.ndarray:
    M = rng.standard_normal((r, r))
    return M @ M.T + shift * np.eye(r)


def batch_solution(Ad, Bd, Q, R, Qf, x0):
    """Minimise the finite-horizon cost over the stacked input sequence (dense least squares).

    Returns the optimal input sequence (N, k) and optimal cost; independent of the recursion.
    """
    N, n, _ = Ad.shape
    k = Bd.shape[2]
    Qs = np.broadcast_to(Q, (N, n, n))
    Rs = np.broadcast_to(R, (N, k, k))
    # x_j = Phi_j x0 + Gam_j U
    Phi = [np.eye(n)]
    Gam = [np.zeros((n, N * k))]
    for j in range(N):
        Phi.append(Ad[j] @ Phi[-1])
        G = Ad[j] @ Gam[-1]
        G[:, j * k:(j + 1) * k] += Bd[j]
        Gam.append(G)
    H = np.zeros((N * k, N * k))
    g = np.zeros(N * k)
    c = 0.0
    for j in range(N + 1):
        W = Qf if j == N else Qs[j]
        H += Gam[j].T @ W @ Gam[j]
        g += Gam[j].T @ W @ Phi[j] @ x0
        c += x0 @ Phi[j].T @ W @ Phi[j] @ x0
    for j in range(N):
        H[j * k:(j + 1) * k, j * k:(j + 1) * k] += Rs[j]
    U = -np.linalg.solve(H, g)
    J = U @ H @ U + 2 * g @ U + c
    return U.reshape(N, k), float(J)


@pytest.mark.parametrize("seed,n,k", [(0, 2, 1), (1, 4, 2), (2, 6, 3)])
def test_long_horizon_converges_to_dlqr(seed, n, k):
    """LTI over 600 steps: K_0, P_0 equal python-control's dlqr to 1e-10 (relative to max(1,|.|)).

    The Riccati map contracts for a stabilisable/detectable pair, so after 600 steps the
    difference is at round-off level; 1e-10 leaves room for the DARE solver's accuracy.
    """
    rng = np.random.default_rng(seed)
    A = np.eye(n) + 0.1 * rng.standard_normal((n, n))
    B = rng.standard_normal((n, k))
    Q = random_spd(n, rng)
    R = random_spd(k, rng, 0.5)
    N = 600
    res = finite_horizon_lqr((np.tile(A, (N, 1, 1)), np.tile(B, (N, 1, 1))), Q, R, np.zeros((n, n)))
    K, P, _ = control.dlqr(A, B, Q, R)
    assert np.max(np.abs(res.K[0] - K)) <= 1e-10 * max(1.0, np.max(np.abs(K)))
    assert np.max(np.abs(res.P[0] - P)) <= 1e-10 * max(1.0, np.max(np.abs(P)))


def test_cross_weight_converges_to_dlqr():
    """With a cross weight S the recursion converges to dlqr(A, B, Q, R, S) (1e-10)."""
    rng = np.random.default_rng(7)
    n, k = 3, 2
    A = np.eye(n) + 0.1 * rng.standard_normal((n, n))
    B = rng.standard_normal((n, k))
    Q = random_spd(n, rng, 1.0)
    R = random_spd(k, rng, 1.0)
    S = 0.1 * rng.standard_normal((n, k))
    N = 600
    res = finite_horizon_lqr((np.tile(A, (N, 1, 1)), np.tile(B, (N, 1, 1))), Q, R, Q, S=S)
    K, P, _ = control.dlqr(A, B, Q, R, S)
    np.testing.assert_allclose(res.K[0], K, atol=1e-10 * max(1.0, np.abs(K).max()))
    np.testing.assert_allclose(res.P[0], P, atol=1e-10 * max(1.0, np.abs(P).max()))


def test_riccati_residual_per_step_independent():
    """Each P_k satisfies the plain Riccati equation to 1e-12 (relative), recomputed here."""
    Ad, Bd = random_ltv(40, 5, 2, seed=3)
    rng = np.random.default_rng(3)
    Q, R, Qf = random_spd(5, rng), random_spd(2, rng), random_spd(5, rng)
    res = finite_horizon_lqr((Ad, Bd), Q, R, Qf)
    assert res.K.shape == (40, 2, 5) and res.P.shape == (41, 5, 5)
    np.testing.assert_array_equal(res.P[-1], Qf)
    for j in range(40):
        A, B, P = Ad[j], Bd[j], res.P[j + 1]
        rhs = Q + A.T @ P @ A - A.T @ P @ B @ np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
        assert np.linalg.norm(res.P[j] - rhs) <= 1e-12 * max(1.0, np.linalg.norm(res.P[j]))
        Kj = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
        assert np.linalg.norm(res.K[j] - Kj) <= 1e-12 * max(1.0, np.linalg.norm(Kj))
        np.testing.assert_allclose(res.P[j], res.P[j].T, atol=0)
        assert np.linalg.eigvalsh(res.P[j])[0] >= -1e-12
    assert np.max(res.riccati_residual) < 1e-12


@pytest.mark.parametrize("varying", [False, True])
def test_optimal_cost_equals_simulated_and_batch(varying):
    """x0ᵀP0x0 equals the simulated closed-loop cost and the batch optimum (1e-9 relative).

    Per-step Q_k, R_k sequences are used when ``varying``.
    """
    N, n, k = 30, 4, 2
    Ad, Bd = random_ltv(N, n, k, seed=11)
    rng = np.random.default_rng(11)
    if varying:
        Q = np.stack([random_spd(n, rng) for _ in range(N)])
        R = np.stack([random_spd(k, rng, 0.3) for _ in range(N)])
    else:
        Q, R = random_spd(n, rng), random_spd(k, rng, 0.3)
    Qf = random_spd(n, rng)
    x0 = rng.standard_normal(n)
    res = finite_horizon_lqr((Ad, Bd), Q, R, Qf)
    Qs = np.broadcast_to(Q, (N, n, n))
    Rs = np.broadcast_to(R, (N, k, k))
    x = x0.copy()
    J = 0.0
    us = []
    for j in range(N):
        u = res.control(j, x)
        us.append(u)
        J += x @ Qs[j] @ x + u @ Rs[j] @ u
        x = Ad[j] @ x + Bd[j] @ u
    J += x @ Qf @ x
    assert abs(res.cost(x0) - J) <= 1e-9 * J
    U, Jb = batch_solution(Ad, Bd, Q, R, Qf, x0)
    assert abs(Jb - J) <= 1e-9 * J
    np.testing.assert_allclose(np.array(us), U, atol=1e-8 * max(1.0, np.abs(U).max()))


def test_result_is_immutable():
    Ad, Bd = random_ltv(5, 2, 1, seed=0)
    res = finite_horizon_lqr((Ad, Bd), np.eye(2), np.eye(1), np.eye(2))
    assert isinstance(res, LQRResult) and res.horizon == 5 and res.E is None
    assert res.nstates == 2 and res.ninputs == 1
    with pytest.raises(ValueError):
        res.K[0, 0, 0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.K = None  # type: ignore[misc]


def test_accepts_discrete_ltv_like_object():
    """Any object with Ad, Bd (and dt) works — the DiscreteLTV duck type."""
    Ad, Bd = random_ltv(8, 3, 1, seed=5)

    @dataclasses.dataclass(frozen=True)
    class Fake:
        Ad: np.ndarray
        Bd: np.ndarray
        dt: float

    a = finite_horizon_lqr(Fake(Ad, Bd, 0.05), np.eye(3), np.eye(1), np.eye(3))
    b = finite_horizon_lqr((Ad, Bd), np.eye(3), np.eye(1), np.eye(3))
    assert a.dt == 0.05 and b.dt is None
    np.testing.assert_array_equal(a.K, b.K)


def _sys():
    return random_ltv(6, 3, 2, seed=1)


@pytest.mark.parametrize("kwargs,match", [
    (dict(Q=np.eye(2)), r"Q must have shape \(3, 3\) or \(6, 3, 3\), got \(2, 2\)"),
    (dict(Q=np.zeros((5, 3, 3))), r"one per step of the horizon N = 6"),
    (dict(R=np.eye(3)), r"R must have shape \(2, 2\)"),
    (dict(Qf=np.eye(2)), r"Qf must have shape \(3, 3\)"),
    (dict(Q=np.diag([1.0, -1.0, 1.0])), r"Q must be positive semi-definite: smallest eigenvalue -1"),
    (dict(R=np.diag([1.0, 0.0])), r"R must be positive definite: smallest eigenvalue 0"),
    (dict(R=np.stack([np.eye(2)] * 5 + [-np.eye(2)])), r"R must be positive definite at step 5"),
    (dict(Q=np.triu(np.ones((3, 3)))), r"Q must be symmetric"),
    (dict(Qf=-np.eye(3)), r"Qf must be positive semi-definite"),
    (dict(S=np.ones((3, 2)) * 10), r"\[\[Q, S\], \[Sᵀ, R\]\] must be positive semi-definite"),
    (dict(S=np.ones((2, 2))), r"S must have shape \(3, 2\)"),
])
def test_bad_weights(kwargs, match):
    args = dict(Q=np.eye(3), R=np.eye(2), Qf=np.eye(3))
    args.update(kwargs)
    S = args.pop("S", None)
    with pytest.raises(DesignError, match=match):
        finite_horizon_lqr(_sys(), args["Q"], args["R"], args["Qf"], S=S)


@pytest.mark.parametrize("system,match", [
    ((np.zeros((4, 3, 3)), np.zeros((5, 3, 1))), r"Bd must have shape \(N, n, k\) = \(4, 3, k\)"),
    ((np.zeros((4, 3, 2)), np.zeros((4, 3, 1))), r"Ad must have shape \(N, n, n\), got \(4, 3, 2\)"),
    ((np.full((2, 2, 2), np.nan), np.zeros((2, 2, 1))), r"Ad contains 8 non-finite entries"),
    ((np.zeros((2, 2, 2)), np.zeros((2, 2, 0))), r"no input columns"),
    ("not a system", r"must be a DiscreteLTV"),
])
def test_bad_system(system, match):
    with pytest.raises(DesignError, match=match):
        finite_horizon_lqr(system, np.eye(3), np.eye(1), np.eye(3))


def test_overflow_is_reported():
    A = np.tile(1e120 * np.eye(2), (4, 1, 1))
    B = np.tile(np.ones((2, 1)), (4, 1, 1))
    with pytest.raises(SolverError, match=r"Riccati recursion overflowed"):
        finite_horizon_lqr((A, B), np.eye(2), np.eye(1), np.eye(2))


def test_gain_step_out_of_range():
    res = finite_horizon_lqr(_sys(), np.eye(3), np.eye(2), np.eye(3))
    with pytest.raises(DesignError, match=r"step must lie in \[0, 5\].*got 6"):
        res.gain(6)
    with pytest.raises(DesignError, match=r"x must have shape \(3\)"):
        res.control(0, np.zeros(2))


# ---------------------------------------------------------------- infinite horizon ----------

@pytest.mark.parametrize("dt", [0, 0.05])
def _riccati_condition(A, B, Q, R, P, discrete):
    """Relative condition number of the algebraic Riccati equation at its solution ``P``.

    Standard first-order estimate (Byers 1985; Sun 1998): the perturbation of ``P`` per unit
    relative perturbation of the data is ``(‖Q‖ + ‖A‖-terms ‖P‖ + ‖P‖² ‖G‖) / (sep · ‖P‖)``,
    with ``G = B R̄⁻¹ Bᵀ`` and ``sep`` the smallest singular value of the closed-loop Lyapunov
    (continuous) or Stein (discrete) operator, here its Kronecker matrix.
    """
    n = A.shape[0]
    if discrete:
        Rb = R + B.T @ P @ B
        Ac = A - B @ np.linalg.solve(Rb, B.T @ P @ A)
        L = np.eye(n * n) - np.kron(Ac.T, Ac.T)
        G = B @ np.linalg.solve(Rb, B.T)
        na = np.linalg.norm(A) ** 2
        num = np.linalg.norm(Q) + na * np.linalg.norm(P) + na * np.linalg.norm(P) ** 2 * np.linalg.norm(G)
    else:
        Rb = R
        Ac = A - B @ np.linalg.solve(R, B.T @ P)
        L = np.kron(np.eye(n), Ac.T) + np.kron(Ac.T, np.eye(n))
        G = B @ np.linalg.solve(R, B.T)
        num = (np.linalg.norm(Q) + 2 * np.linalg.norm(A) * np.linalg.norm(P)
               + np.linalg.norm(P) ** 2 * np.linalg.norm(G))
    sep = np.linalg.svd(L, compute_uv=False)[-1]
    return num / (sep * np.linalg.norm(P)), np.linalg.cond(Rb)


@pytest.mark.parametrize("dt", [0.0, 0.05, 0.1])
def test_lqr_matches_python_control(dt):
    """lqr() reproduces control.lqr / control.dlqr and reports a tiny ARE residual.

    Two backward-stable solvers of the same Riccati equation agree to ``2 n ε κ`` (relative),
    with ``κ`` the equation's condition number at the solution (``_riccati_condition``); the
    gain ``K = R̄⁻¹ Bᵀ P (A)`` adds at most a factor ``1 + cond(R̄)``. No constant tolerance:
    the bound is computed from the problem (here ``κ ≈ 5e3 … 2e4``).
    """
    rng = np.random.default_rng(4)
    A = rng.standard_normal((4, 4))
    B = rng.standard_normal((4, 2))
    sys = control.ss(A, B, np.eye(4), 0, dt) if dt == 0 else control.c2d(control.ss(A, B, np.eye(4), 0), dt)
    Q, R = np.eye(4), np.diag([1.0, 2.0])
    res = lqr(sys, Q, R)
    K, P, E = (control.dlqr if dt else control.lqr)(sys.A, sys.B, Q, R)
    kappa, cond_rbar = _riccati_condition(np.asarray(sys.A), np.asarray(sys.B), Q, R, np.asarray(P), bool(dt))
    tol_p = 2 * 4 * np.finfo(float).eps * kappa
    tol_k = tol_p * (1.0 + cond_rbar)
    assert np.linalg.norm(res.P - P) <= tol_p * np.linalg.norm(P)
    assert np.linalg.norm(res.K - K) <= tol_k * np.linalg.norm(K)
    assert res.horizon is None and res.method == ("dare" if dt else "care")
    assert res.riccati_residual[0] < 1e-9
    eig = np.linalg.eigvals(np.asarray(sys.A) - np.asarray(sys.B) @ res.K)
    np.testing.assert_allclose(np.sort_complex(eig), np.sort_complex(res.E), atol=1e-9)
    if dt:
        assert np.all(np.abs(res.E) < 1) and res.dt == dt
    else:
        assert np.all(res.E.real < 0) and res.dt == 0.0
    np.testing.assert_array_equal(res.gain(123), res.K)


def test_lqr_errors():
    with pytest.raises(DesignError, match=r"sys must be a control.StateSpace"):
        lqr((np.eye(2), np.ones((2, 1))), np.eye(2), np.eye(1))
    sys = control.ss(np.diag([1.0, 2.0]), [[1.0], [0.0]], np.eye(2), 0)  # mode 2 uncontrollable, unstable
    with pytest.raises(DesignError, match=r"(?s)no stabilising solution of the CARE.*not stabilisable"
                                          r".*eigenvalue \(2\+0j\)"):
        lqr(sys, np.eye(2), np.eye(1))
    # decided by nhcontrol (PBH with singular values), whatever slycot would do with the pair
    dsys = control.c2d(sys, 0.1)
    with pytest.raises(DesignError, match=r"(?s)no stabilising solution of the DARE.*not stabilisable"):
        lqr(dsys, np.eye(2), np.eye(1))
    # a mode on the stability boundary that Q does not see: no stabilising solution either
    integ = control.ss([[0.0, 1.0], [0.0, 0.0]], [[0.0], [1.0]], np.eye(2), 0)
    with pytest.raises(DesignError, match=r"(?s)state weight Q does not see.*eigenvalue 0j"):
        lqr(integ, np.diag([0.0, 1.0]), np.eye(1))
    assert np.all(lqr(integ, np.diag([1.0, 0.0]), np.eye(1)).E.real < 0)
    with pytest.raises(DesignError, match=r"Q must have shape \(2, 2\)"):
        lqr(sys, np.eye(3), np.eye(1))
    with pytest.raises(DesignError, match=r"R must be positive definite"):
        lqr(sys, np.eye(2), np.zeros((1, 1)))


def test_errors_are_builtin_subclasses():
    assert issubclass(DesignError, ValueError) and issubclass(DesignError, NhcontrolError)
    assert issubclass(SolverError, RuntimeError)


def test_real_discrete_ltv_from_systems():
    """A DiscreteLTV from nhcontrol.systems (ZOH of a double integrator) is accepted; dt travels."""
    from nhcontrol.systems import DiscreteLTV, discretize

    sys = control.ss([[0.0, 1.0], [0.0, 0.0]], [[0.0], [1.0]], np.eye(2), 0)
    d = discretize(sys, 0.1, steps=400)
    assert isinstance(d, DiscreteLTV)
    res = finite_horizon_lqr(d, np.eye(2), np.eye(1), np.zeros((2, 2)))
    ref = lqr(control.c2d(sys, 0.1), np.eye(2), np.eye(1))
    assert res.dt == 0.1
    np.testing.assert_allclose(res.K[0], ref.K, atol=1e-10)


def test_design_does_not_import_left_stages():
    """nhcontrol.design is numbers in, numbers out: no modeling/compiled/reference/linearization."""
    import subprocess
    import sys

    code = ("import sys, nhcontrol.design; "
            "print([m for m in ('modeling', 'compiled', 'reference', 'linearization') "
            "if 'nhcontrol.' + m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------- the recursion without overhead ---

def _reference_recursion(Ad, Bd, Qs, Rs, Ss, Qf):
    """The per-step recursion with its checks inside the loop (the implementation before issue
    10, kept here as the reference): Joseph form, ``numpy.linalg.solve``, ``eigvalsh`` of every
    R̄_k, the plain-formula residual of every step."""
    N, n, k = Bd.shape
    K, P = np.empty((N, k, n)), np.empty((N + 1, n, n))
    resid, mineig = np.empty(N), np.empty(N)
    P[N] = 0.5 * (Qf + Qf.T)
    for i in range(N - 1, -1, -1):
        A, B, Qi, Ri, Si, Pn = Ad[i], Bd[i], Qs[i], Rs[i], Ss[i], P[i + 1]
        Rbar = Ri + B.T @ Pn @ B
        Rbar = 0.5 * (Rbar + Rbar.T)
        mineig[i] = np.linalg.eigvalsh(Rbar)[0]
        Ki = np.linalg.solve(Rbar, B.T @ Pn @ A + Si.T)
        Acl = A - B @ Ki
        Pi = Acl.T @ Pn @ Acl + Ki.T @ Ri @ Ki + Qi - Si @ Ki - Ki.T @ Si.T
        K[i], P[i] = Ki, 0.5 * (Pi + Pi.T)
        Nn = A.T @ Pn @ B + Si
        plain = Qi + A.T @ Pn @ A - Nn @ np.linalg.solve(Ri + B.T @ Pn @ B, Nn.T)
        resid[i] = np.linalg.norm(P[i] - plain) / max(1.0, float(np.linalg.norm(P[i])))
    return K, P, resid, mineig


@pytest.mark.parametrize("n,k,varying,cross", [(7, 2, False, False), (5, 3, True, False),
                                               (12, 5, False, True), (20, 6, True, True)])
def test_recursion_bit_identical_to_per_step_reference(n, k, varying, cross):
    """K, P, the smallest eigenvalues of R̄_k and the (lazy) residuals equal the per-step
    reference exactly (the same floating-point operations in the same order), constant or
    time-varying weights, with and without a cross weight."""
    N = 30
    Ad, Bd = random_ltv(N, n, k, seed=n + k)
    rng = np.random.default_rng(n * k)
    if varying:
        Q = np.stack([random_spd(n, rng) for _ in range(N)])
        R = np.stack([random_spd(k, rng) for _ in range(N)])
    else:
        Q, R = random_spd(n, rng), random_spd(k, rng)
    S = 0.01 * rng.standard_normal((N, n, k)) if cross else None
    Qf = random_spd(n, rng)
    res = finite_horizon_lqr((Ad, Bd), Q, R, Qf, S=S)
    ref = _reference_recursion(Ad, Bd, np.broadcast_to(Q, (N, n, n)),
                               np.broadcast_to(R, (N, k, k)),
                               np.zeros((N, n, k)) if S is None else S, Qf)
    np.testing.assert_array_equal(res.K, ref[0])
    np.testing.assert_array_equal(res.P, ref[1])
    np.testing.assert_array_equal(res.min_eig_Rbar, ref[3])
    np.testing.assert_array_equal(res.riccati_residual, ref[2])
    assert not res.riccati_residual.flags.writeable


def test_lazy_residual_survives_pickling():
    """The result pickles before the residuals were computed; they are computed after loading."""
    import pickle

    Ad, Bd = random_ltv(12, 3, 1, seed=4)
    res = finite_horizon_lqr((Ad, Bd), np.eye(3), np.eye(1), np.eye(3))
    back = pickle.loads(pickle.dumps(res))
    np.testing.assert_array_equal(back.K, res.K)
    np.testing.assert_array_equal(back.riccati_residual, res.riccati_residual)
    assert np.max(back.riccati_residual) < 1e-12


def test_loss_of_positive_definiteness_names_the_first_step():
    """R̄ = R + BᵀPB with a tiny weight on an input that does not act (zero column of B) and a
    large one that does: λ_min/λ_max = 2e-13/1e3 < PD_RTOL at the last step of the horizon,
    the first one the recursion meets."""
    Ad = np.tile(np.eye(2), (4, 1, 1))
    Bd = np.tile(np.array([[30.0, 0.0], [0.0, 0.0]]), (4, 1, 1))
    with pytest.raises(SolverError, match=r"R \+ BᵀPB lost positive definiteness at step 3 of the "
                                          r"Riccati recursion \(smallest eigenvalue 2e-12"):
        finite_horizon_lqr((Ad, Bd), np.eye(2), np.diag([1.0, 2e-12]), np.eye(2))
