"""Every compiled kernel against central finite differences of lower-order kernels.

Tolerance: central differences with step h = 1e-6 have truncation error O(h²·f''') ≈ 1e-12
and round-off O(eps·|f|/h) ≈ 1e-10 relative, so agreement to ``rtol = 1e-6`` (scaled by
the size of the compared quantity, ``atol = 1e-6 · max(1, |ref|)``) is a safe bound that
still detects any wrong term (which would be O(1)).
"""

from __future__ import annotations

import numpy as np
import pytest

from nhcontrol.compiled import LINEARIZATION_FIELDS
from nhcontrol.modeling import examples

H = 1e-6
RTOL = 1e-6

def _bicycle():
    from nhcontrol.models import benchmark_bicycle

    return benchmark_bicycle.build()


MODELS = {
    "pendulum": lambda: examples.pendulum(),
    "pendulum_inputs": lambda: examples.pendulum(with_inputs=True),
    "sleigh": examples.sleigh,
    "rolling_disc": examples.rolling_disc,
    "spatial_body": examples.spatial_body,     # every load type, inputs in the kinematics
    "bicycle": _bicycle,                       # thesis Sect. 4.3 (n=11, m=4, l=4)
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def compiled(request, tmp_path_factory):
    mb = MODELS[request.param]()
    return mb.compile(cache_dir=tmp_path_factory.mktemp("cache"))


def _fd(f, z0, h=H):
    """Central difference Jacobian of f (array-valued) at z0: shape f.shape + (len(z0),)."""
    z0 = np.asarray(z0, float)
    cols = []
    for i in range(z0.size):
        e = np.zeros_like(z0)
        e[i] = h
        cols.append((np.asarray(f(z0 + e)) - np.asarray(f(z0 - e))) / (2 * h))
    if not cols:
        return np.zeros(np.shape(f(z0)) + (0,))
    return np.stack(cols, axis=-1)


def _close(got, ref):
    scale = max(1.0, float(np.max(np.abs(ref))) if np.size(ref) else 1.0)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=RTOL * scale)


def _point(cm, seed=0):
    rng = np.random.default_rng(seed)
    n, ml, k = cm.n, cm.m + cm.l, cm.ninputs
    return dict(x=rng.uniform(-1, 1, n), xd=rng.uniform(-1, 1, n), a=rng.uniform(-1, 1, n),
                lam=rng.uniform(-1, 1, ml), v=rng.uniform(-1, 1, n), u=rng.uniform(-0.5, 0.5, k))


@pytest.mark.parametrize("seed", [0, 1])
def test_kernels_match_finite_differences(compiled, seed):
    cm = compiled
    P = _point(cm, seed)
    x, xd, a, lam, v, u = P["x"], P["xd"], P["a"], P["lam"], P["v"], P["u"]
    _close(cm.Cx(x, u), _fd(lambda z: cm.C(z, u), x))
    _close(cm.D(x, u), np.vstack([cm.Cx(x, u), cm.B(x, u)]))
    _close(cm.dMa_dx(x, a, u), _fd(lambda z: cm.M(z, u) @ a, x))
    _close(cm.dMa_du(x, a, u), _fd(lambda w: cm.M(x, w) @ a, u))
    _close(cm.dDTlam_dx(x, lam, u), _fd(lambda z: cm.D(z, u).T @ lam, x))
    _close(cm.dQ_dx(x, xd, u), _fd(lambda z: cm.Q(z, xd, u), x))
    _close(cm.dQ_dxd(x, xd, u), _fd(lambda z: cm.Q(x, z, u), xd))
    _close(cm.dQ_du(x, xd, u), _fd(lambda w: cm.Q(x, xd, w), u))
    _close(cm.dDv_dx(x, v, u), _fd(lambda z: cm.D(z, u) @ v, x))
    _close(cm.dDv_du(x, v, u), _fd(lambda w: cm.D(x, w) @ v, u))
    # Eq. (2.117): Qd = -d(D xd)/dx xd
    _close(cm.Qd(x, xd, u), -_fd(lambda z: cm.D(z, u) @ xd, x) @ xd)
    _close(cm.dQd_dx(x, xd, u), _fd(lambda z: cm.Qd(z, xd, u), x))
    _close(cm.dQd_dxd(x, xd, u), _fd(lambda z: cm.Qd(x, z, u), xd))
    _close(cm.dQd_du(x, xd, u), _fd(lambda w: cm.Qd(x, xd, w), u))
    _close(cm.dCxv_dx(x, v, u), _fd(lambda z: cm.Cx(z, u) @ v, x))
    _close(cm.dBv_dx(x, v, u), _fd(lambda z: cm.B(z, u) @ v, x))
    _close(cm.dC_du(x, u), _fd(lambda w: cm.C(x, w), u))


def test_shapes_follow_contract(compiled):
    cm = compiled
    P = _point(cm)
    n, m, l, k = cm.n, cm.m, cm.l, cm.ninputs
    x, xd, u = P["x"], P["xd"], P["u"]
    assert cm.M(x, u).shape == (n, n)
    assert cm.Q(x, xd, u).shape == (n,)
    assert cm.C(x, u).shape == (m,)
    assert cm.Cx(x, u).shape == (m, n)
    assert cm.B(x, u).shape == (l, n)
    assert cm.D(x, u).shape == (m + l, n)
    assert cm.Qd(x, xd, u).shape == (m + l,)
    assert cm.dMa_du(x, P["a"], u).shape == (n, k)
    assert cm.dQd_du(x, xd, u).shape == (m + l, k)
    assert cm.dC_du(x, u).shape == (m, k)


def test_mass_matrix_symmetric_positive_definite(compiled):
    """M symmetric (to 1e-13) and positive semidefinite; positive definite unless the model has
    massless contact coordinates (the bicycle's ξ_R, ξ_F), where the index-1 matrix of
    Eq. (2.119) must still be regular."""
    cm = compiled
    rng = np.random.default_rng(3)
    X = rng.uniform(-1.0, 1.0, (20, cm.n))
    U = rng.uniform(-0.5, 0.5, (20, cm.ninputs))
    M = cm.M(X, U)
    np.testing.assert_allclose(M, np.swapaxes(M, 1, 2), rtol=0, atol=1e-13)
    eig = np.linalg.eigvalsh(M)
    scale = eig[:, -1:]
    massless = [i for i, c in enumerate(cm.coordinates) if c.startswith("xi_")]
    assert np.all(eig >= -1e-12 * scale)
    if not massless:
        assert np.all(eig[:, 0] > 1e-9 * scale[:, 0])
    else:
        np.testing.assert_allclose(M[:, massless, :], 0, atol=1e-13)
        D = cm.D(X, U)
        r = D.shape[1]
        A = np.block([[M, np.swapaxes(D, 1, 2)], [D, np.zeros((20, D.shape[1], D.shape[1]))]])
        assert np.all(np.linalg.cond(A) < 1e10)


def test_linearization_terms_equal_individual_kernels(compiled):
    cm = compiled
    P = _point(cm)
    x, xd, xdd, lam, u = P["x"], P["xd"], P["a"], P["lam"], P["u"]
    t = cm.linearization_terms(x, xd, xdd, lam, u)
    ref = {"M": cm.M(x, u), "Q": cm.Q(x, xd, u), "D": cm.D(x, u), "Cx": cm.Cx(x, u), "B": cm.B(x, u),
           "Qd": cm.Qd(x, xd, u), "dMa_dx": cm.dMa_dx(x, xdd, u), "dMa_du": cm.dMa_du(x, xdd, u),
           "dDTlam_dx": cm.dDTlam_dx(x, lam, u), "dQ_dx": cm.dQ_dx(x, xd, u),
           "dQ_dxd": cm.dQ_dxd(x, xd, u), "dQ_du": cm.dQ_du(x, xd, u), "dDv_dx": cm.dDv_dx(x, xd, u),
           "dDa_dx": cm.dDv_dx(x, xdd, u), "dQd_dx": cm.dQd_dx(x, xd, u), "dQd_dxd": cm.dQd_dxd(x, xd, u),
           "dCxv_dx": cm.dCxv_dx(x, xd, u), "dBv_dx": cm.dBv_dx(x, xd, u), "dQd_du": cm.dQd_du(x, xd, u),
           "dDa_du": cm.dDv_du(x, xdd, u), "dC_du": cm.dC_du(x, u)}
    assert set(ref) == set(LINEARIZATION_FIELDS)
    for name in LINEARIZATION_FIELDS:
        np.testing.assert_allclose(getattr(t, name), ref[name], rtol=1e-14, atol=1e-14, err_msg=name)
        assert not getattr(t, name).flags.writeable


def test_vectorised_equals_pointwise(compiled):
    cm = compiled
    rng = np.random.default_rng(7)
    N = 5
    X, XD, XDD = (rng.uniform(-1, 1, (N, cm.n)) for _ in range(3))
    LAM = rng.uniform(-1, 1, (N, cm.m + cm.l))
    U = rng.uniform(-0.5, 0.5, (N, cm.ninputs))
    tv = cm.linearization_terms(X, XD, XDD, LAM, U)
    for i in range(N):
        ti = cm.linearization_terms(X[i], XD[i], XDD[i], LAM[i], U[i])
        for name in LINEARIZATION_FIELDS:
            np.testing.assert_allclose(getattr(tv, name)[i], getattr(ti, name), rtol=1e-13, atol=1e-13,
                                       err_msg=name)
    # 1-D arguments broadcast against stacked ones (constant entries too)
    Mv = cm.M(X)
    assert Mv.shape == (N, cm.n, cm.n)
    np.testing.assert_allclose(Mv[2], cm.M(X[2]), rtol=1e-14, atol=1e-14)
