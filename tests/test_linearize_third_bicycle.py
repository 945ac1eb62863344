"""Third numerical procedure on the benchmark bicycle (thesis Sect. 4.3.5 and 4.5.2).

Reference data (text, with sources):

* Eq. (4.180): the 10 x 10 Jacobian for the partition (4.172), printed with 4 decimals as
  polynomials in the forward speed v. Stored below as coefficient triples (c0, c1, c2) of
  ``c0 + c1 v + c2 v²``. Tolerance: half a unit of the 4th decimal on each printed
  coefficient, i.e. ``0.5e-4 (1 + |v| + v²)`` per entry.
* Table 4.2, "Benchmark" column (Meijaard et al. 2007): coefficients ζ*_1 … ζ*_7 of the
  lean-steer quartic (4.184), printed with 14-15 significant digits; its roots are the
  benchmark eigenvalues (at v = 5 m/s: -14.0783896928, -0.7753418822 ± 4.4648677138i,
  -0.3228664290). Tolerance on the eigenvalues 1e-9 (relative), far above the ~1e-14
  precision of the printed coefficients and the round-off of a 10 x 10 eigenproblem.
"""

from __future__ import annotations


import numpy as np
import pytest

from nhcontrol.linearization import Partition, identify_spurious, linearize, suggest_partition
from nhcontrol.models import benchmark_bicycle as bb

#: Thesis Table 4.2, "Benchmark" column: zeta*_1 ... zeta*_7 of Eq. (4.184).
ZETA = (3.19038797723880, 3.51247840148387, 40.39852784001426, 3.48482071330797,
        26.56139846201176, 300.01505074911196, 8.26676015041884)

#: Thesis Eq. (4.180), partition (4.172); state [x_b, phi_b, delta, x_b_d, phi_b_d, delta_d,
#: y_b, psi_b, theta_R, theta_F]; (row, col): (c0, c1, c2) meaning c0 + c1 v + c2 v².
#: All other entries are zero.
EQ_4_180 = {
    (0, 3): (1, 0, 0), (1, 4): (1, 0, 0), (2, 5): (1, 0, 0),
    (4, 1): (9.4898, 0, 0), (4, 2): (0.5715, 0, 0.8912), (4, 4): (0, -0.1055, 0),
    (4, 5): (0, 0.3305, 0),
    (5, 1): (-11.7195, 0, 0), (5, 2): (30.9088, 0, -1.9717), (5, 4): (0, -3.6768, 0),
    (5, 5): (0, -3.0849, 0),
    (6, 2): (0, 0.2797, 0), (6, 4): (-0.9, 0, 0), (6, 5): (0.0224, 0, 0), (6, 7): (0, 1, 0),
    (7, 2): (0, 0.9324, 0), (7, 5): (0.0746, 0, 0),
    (8, 3): (3.3333, 0, 0),
    (9, 3): (2.8571, 0, 0),
}


def eq_4_180(v: float) -> tuple[np.ndarray, np.ndarray]:
    """The printed Jacobian at speed v and the per-entry tolerance."""
    J = np.zeros((10, 10))
    tol = np.full((10, 10), 0.5e-4)
    for (i, j), (c0, c1, c2) in EQ_4_180.items():
        J[i, j] = c0 + c1 * v + c2 * v * v
        tol[i, j] = 0.5e-4 * (1 + abs(v) + v * v)
    return J, tol


def benchmark_eigenvalues(v: float) -> np.ndarray:
    z1, z2, z3, z4, z5, z6, z7 = ZETA
    return np.roots([1, z1 * v, z2 * v * v - z3, (z4 * v * v - z5) * v, z6 - z7 * v * v])


@pytest.fixture(scope="module")
def cm():
    return bb.model()


@pytest.fixture(scope="module")
def p172():
    return Partition.from_dict(bb.PARTITION_4_172)


@pytest.fixture(scope="module")
def p208():
    return Partition.from_dict(bb.PARTITION_4_208)


@pytest.mark.parametrize("v", [1.0, 3.0])
def test_jacobian_matches_eq_4_180(cm, p172, v):
    """Every entry of the 10 x 10 Jacobian equals Eq. (4.180) to its printed 4 decimals."""
    res = linearize(cm, bb.steady_forward(cm, v), p172)
    assert res.A.shape == (10, 10)
    assert res.states == ("x_b", "phi_b", "delta", "x_b_d", "phi_b_d", "delta_d",
                          "y_b", "psi_b", "theta_R", "theta_F")
    J, tol = eq_4_180(v)
    err = np.abs(res.A - J)
    worst = np.unravel_index(np.argmax(err - tol), err.shape)
    assert np.all(err <= tol), f"max excess {np.max(err - tol):.3g} at {worst}"


@pytest.mark.parametrize("v", [0.0, 1.0, 5.0, 10.0])
def test_eigenvalues_match_benchmark(cm, p172, v):
    """Non-zero eigenvalues = roots of the benchmark quartic (Table 4.2), relative 1e-9; the
    l = 4 spurious eigenvalues are exact zeros (J23 = 0, Sect. 4.5.2: "decoupled")."""
    res = linearize(cm, bb.steady_forward(cm, v), p172)
    ident = res.spurious_identification
    assert ident.method == "decoupled" and ident.exact
    np.testing.assert_allclose(res.spurious_eigenvalues, 0.0, atol=1e-12)
    non = res.nonspurious_eigenvalues
    assert non.shape == (6,)
    ref = benchmark_eigenvalues(v)
    # two of the six are the (decoupled) forward motion: a double zero
    lateral = non[np.argsort(np.abs(non))[2:]]
    np.testing.assert_allclose(np.sort(np.abs(non))[:2], 0.0, atol=1e-7)
    np.testing.assert_allclose(np.sort_complex(lateral), np.sort_complex(ref), rtol=1e-9)


def test_benchmark_values_at_5(cm, p172):
    """Headline numbers at v = 5 m/s, the roots of the Table 4.2 quartic quoted to 9-10
    digits: weave -0.7753418822 ± 4.4648677138i, capsize -0.3228664290, castering
    -14.0783896928 (tolerance 2e-9)."""
    res = linearize(cm, bb.steady_forward(cm, 5.0), p172)
    ev = res.nonspurious_eigenvalues
    weave = ev[np.argmax(ev.imag)]
    real = np.sort(ev[np.abs(ev.imag) < 1e-9].real)
    ref = benchmark_eigenvalues(5.0)
    assert abs(weave - ref[np.argmax(ref.imag)]) < 1e-9
    assert abs(weave - (-0.7753418822 + 4.4648677138j)) < 2e-9
    assert abs(real[0] - (-14.0783896928)) < 2e-9
    assert abs(real[-3] - (-0.3228664290)) < 2e-9


@pytest.mark.parametrize("v", [2.0, 6.0])
def test_partition_4_208_same_spectrum_and_xad_not_droppable(cm, p172, p208, v):
    """Sect. 4.5.2: with (4.208) (yaw independent, steer admissible dependent) J23 ≠ 0
    (Eq. (4.209)) yet the characteristic polynomial equals that of (4.172) (1e-8 relative);
    dropping the x_ad block gives the right spectrum for (4.172) (Eq. (4.201)) and a wrong
    one for (4.208) (Eq. (4.205))."""
    ref = bb.steady_forward(cm, v)
    r1, r2 = linearize(cm, ref, p172), linearize(cm, ref, p208)
    b1, b2 = r1.blocks(), r2.blocks()
    assert np.max(np.abs(b1["J23"])) < 1e-12
    assert np.max(np.abs(b2["J23"])) > 1e-2
    c1, c2 = np.poly(r1.A), np.poly(r2.A)
    np.testing.assert_allclose(c2, c1, rtol=1e-8, atol=1e-8 * np.max(np.abs(c1)))
    # no exact structure in (4.208) itself; found in the single swap delta <-> psi_b, i.e. (4.172)
    ident2 = r2.spurious_identification
    assert ident2.method == "decoupled" and ident2.exact
    assert set(ident2.via) == {"y_b", "psi_b", "theta_R", "theta_F"}
    np.testing.assert_allclose(r2.spurious_eigenvalues, 0.0, atol=1e-12)

    def dropped(res):
        n1 = res.n_independent
        return np.linalg.eigvals(res.A[:2 * n1, :2 * n1])

    ref_ev = benchmark_eigenvalues(v)

    def has_benchmark(ev):
        return all(np.min(np.abs(ev - r)) < 1e-8 * (1 + abs(r)) for r in ref_ev)

    assert has_benchmark(dropped(r1))
    assert not has_benchmark(dropped(r2))


def test_suggest_partition_on_bicycle(cm, p172):
    """suggest_partition keeps the preferred (x_b, phi_b, delta) independent and is valid;
    its Jacobian has the characteristic polynomial of (4.172) (1e-8 relative)."""
    ref = bb.steady_forward(cm, 4.0)
    sug = suggest_partition(cm, ref, prefer=["x_b", "phi_b", "delta"])
    assert sug.independent == ("x_b", "phi_b", "delta")
    assert all(c < 1e3 for c in sug.report.conditions.values())
    c_ref = np.poly(linearize(cm, ref, p172).A)
    np.testing.assert_allclose(np.poly(linearize(cm, ref, sug).A), c_ref, rtol=1e-8,
                               atol=1e-8 * np.max(np.abs(c_ref)))


def test_vectorised_and_statespace(cm, p172):
    """Along the steady motion A(t) is constant: the stacked call equals the scalar one
    (1e-12) and to_statespace carries the names."""
    ref = bb.steady_forward(cm, 5.0)
    ts = np.linspace(0.0, 2.0, 400)
    res = linearize(cm, ref, p172, t=ts)
    one = linearize(cm, ref, p172, t=1.0)
    assert res.A.shape == (400, 10, 10) and res.B.shape == (400, 10, 0)
    np.testing.assert_allclose(res.A, np.broadcast_to(one.A, res.A.shape), atol=1e-12)
    sys = one.to_statespace()
    assert list(sys.state_labels) == list(one.states) and sys.nstates == 10
    # speed is measured by benchmarks/linearize_bicycle.py (stacked_per_point_s), not asserted here


def test_identify_spurious_on_bicycle_blocks(cm, p172):
    """identify_spurious on the bicycle Jacobian: 'decoupled', spurious = eig(J33) = 0,
    non-spurious = eig of the (x_ai, ẋ_ai) block (Eq. (4.201)) exactly."""
    res = linearize(cm, bb.steady_forward(cm, 3.0), p172)
    ident = identify_spurious(res.A, 3, 4)
    top = np.linalg.eigvals(res.A[:6, :6])
    np.testing.assert_allclose(np.sort_complex(ident.nonspurious), np.sort_complex(top),
                               atol=1e-12)
