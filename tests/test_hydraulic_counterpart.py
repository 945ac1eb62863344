"""Conventional counterpart of thesis Sect. 7.3.5 (Eqs. (7.103)-(7.110)) for the hydraulic four-bar.

The 24x24 central-difference Jacobian must carry the six eigenvalues of the exact 6x6 Jacobian
(7.96) plus 2(m + l) = 18 spurious zeros; its accuracy depends on the step h (Fig. 7.14).
"""

import numpy as np
import pytest

from nhcontrol._util.errors import LinearSystemError
from nhcontrol.linearization import finite_difference_jacobian_first_order
from nhcontrol.models import hydraulic_fourbar as hf
from nhcontrol.reference import Reference

TAU = hf.HYDRAULIC_DEFAULTS["tau_v"]


@pytest.fixture(scope="module")
def exact():
    return hf.linearization()


def _nearest_rel(exact_ev, approx_ev):
    return np.array([np.min(np.abs(approx_ev - e)) / abs(e) for e in exact_ev])


def test_counterpart_spectrum_six_plus_eighteen_zeros(exact):
    fd = hf.counterpart_jacobian(1e-5)
    assert fd.J.shape == (24, 24) and fd.B.shape == (24, 1) and fd.n_spurious == 18
    assert fd.states[20:] == ("p1", "p2", "p3", "U")
    ev24 = np.linalg.eigvals(fd.J)
    ev6 = exact.eigenvalues
    nonzero = ev6[np.abs(ev6) > 1.0]
    assert len(nonzero) == 4
    assert _nearest_rel(nonzero, ev24).max() < 1e-4
    # 18 spurious + the 2 physical zeros of the 6x6 (conserved oil volumes), far below |λ| >= 213
    small = np.sort(np.abs(ev24))
    assert small[19] < 0.05 and small[20] > 200.0
    # U_ref column: only the spool row, 1/tau_v
    expected = np.zeros((24, 1))
    expected[23, 0] = 1 / TAU
    np.testing.assert_allclose(fd.B, expected, atol=1e-6 / TAU)


def test_counterpart_pressure_rows_match_exact_circuit_partials():
    """Rows of p' in the 24x24: dH/dx, dH/dxd, dH/dp equal the exact SymPy partials
    (``circuit_jacobians``) to the accuracy of central differences. The pressure columns are
    limited by round-off: p + h with p ~ 3e6 Pa and h = 1e-5 Pa keeps ~5 significant digits."""
    fd = hf.counterpart_jacobian(1e-5)
    cj = hf.circuit_jacobians(hf.equilibrium(60.0))
    J = np.asarray(fd.J)
    for block, exact, rtol in ((J[20:23, :10], cj.H_x, 1e-6), (J[20:23, 10:20], cj.H_xd, 1e-6),
                               (J[20:23, 20:23], cj.H_p, 1e-4)):
        scale = np.abs(exact).max()
        assert np.max(np.abs(block - exact)) <= rtol * scale   # H_x = 0 at rest (no flow)


def test_error_vs_step_is_u_shaped(exact):
    """Fig. 7.14: too small a step (round-off) and too large a step (truncation, nonlinearity)
    both degrade the friction-sensitive eigenvalues; h ~ 1e-5 is far better than either end."""
    ev6 = exact.eigenvalues
    pair = ev6[(np.abs(ev6) > 1.0) & (np.abs(ev6) < 2e3) & (np.abs(ev6 + 1 / TAU) > 1e-6)]
    assert len(pair) == 2

    def err(h):
        return _nearest_rel(pair, np.linalg.eigvals(hf.counterpart_jacobian(h).J)).max()

    e_small, e_mid, e_large = err(1e-9), err(1e-5), err(1e-2)
    assert e_mid < 1e-4
    assert e_small > 100 * e_mid and e_large > 100 * e_mid


def test_counterpart_errors():
    eq = hf.equilibrium(60.0)
    cm = hf.model()
    ref = Reference.equilibrium(cm, eq.x, u=eq.p)
    ok = dict(z_rate=lambda x, v, z, w, r: hf.circuit_rates(x, v, z, w[:, 0]),
              w_rate=lambda w, r: hf.spool_rates(w, r, TAU), w0=[0.0], r0=[0.0])
    with pytest.raises(LinearSystemError, match="step h must be a positive"):
        finite_difference_jacobian_first_order(cm, ref, h=0.0, **ok)
    bad = dict(ok, z_rate=lambda x, v, z, w, r: np.zeros((x.shape[0], 2)))
    with pytest.raises(LinearSystemError, match="z_rate must return shape"):
        finite_difference_jacobian_first_order(cm, ref, **bad)
    nan = dict(ok, w_rate=lambda w, r: np.full_like(w, np.nan))
    with pytest.raises(LinearSystemError, match="w_rate returned non-finite"):
        finite_difference_jacobian_first_order(cm, ref, **nan)


def test_circuit_rates_vectorised_matches_symbolic():
    import sympy as sp
    eq = hf.equilibrium(60.0)
    rng = np.random.default_rng(0)
    X = np.tile(eq.x, (3, 1))
    XD = np.zeros((3, 10))
    XD[:, 8] = rng.normal(0, 0.01, 3)
    P = eq.p + rng.normal(0, 2e5, (3, 3))
    U = np.array([0.05, -0.05, 0.0])
    out = hf.circuit_rates(X, XD, P, U)
    s, sd, p1, p2, p3, Us, Ur = sp.symbols("s sd p1 p2 p3 U U_ref")
    H, _ = hf.circuit_equations(s, sd, (p1, p2, p3), Us, Ur)
    for i in range(3):
        at = {s: X[i, 8], sd: XD[i, 8], p1: P[i, 0], p2: P[i, 1], p3: P[i, 2], Us: U[i]}
        np.testing.assert_allclose(out[i], [float(e) for e in H.subs(at)], rtol=1e-12)
    np.testing.assert_allclose(hf.circuit_rates(X[0], XD[0], P[0], U[0]), out[0])
