"""nhcontrol.analysis.stability on matrices with known answers (and Meijaard's benchmark).

Tolerances: characteristic polynomials from principal minors vs numpy.poly (eigenvalue based)
to 1e-10 relative for well-separated spectra; critical points by Brent's method to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest

from nhcontrol._util.errors import LinearSystemError
from nhcontrol.analysis.stability import (CriticalPoint, charpoly, critical_points,
                                          eigenvalues_vs_parameter, match_spectra,
                                          spectral_abscissa, structural_zeros)
from nhcontrol.reproduce.bicycle_benchmark import reference_data


def test_charpoly_against_numpy_poly():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 5))
    assert np.allclose(charpoly(A), np.poly(A), rtol=1e-10, atol=1e-12)
    assert charpoly(np.diag([2.0, 3.0])).tolist() == [1.0, -5.0, 6.0]


def test_structural_zeros_chain():
    """x1' = x2 (x2 feeds nothing back), x3 free, a 2x2 oscillator block: 3 exact zeros."""
    J = np.zeros((5, 5))
    J[0, 1] = 1.0                      # x0' = x1: column 0 zero
    J[3, 4], J[4, 3] = 1.0, -4.0      # oscillator
    J[1, 3] = 0.7                      # x1 driven by the oscillator: row 1 not zero
    sz = structural_zeros(J)
    assert sz.n_zero == 3 and sz.keep == (3, 4)
    assert np.allclose(np.sort(np.linalg.eigvals(sz.block).imag), [-2, 2])
    # det(λI - J) = λ^3 det(λI - block)
    lam = 0.37
    assert np.isclose(np.linalg.det(lam * np.eye(5) - J),
                      lam**3 * np.linalg.det(lam * np.eye(2) - sz.block))


def test_match_spectra():
    idx, err = match_spectra([1.0, 2j], [0.0, 2j + 1e-9, 1.0 + 1e-12])
    assert idx.tolist() == [2, 1] and err < 2e-9
    with pytest.raises(LinearSystemError, match="cannot match 3 eigenvalues into only 2"):
        match_spectra([1, 2, 3], [1, 2])


def _meijaard_block(v):
    R = reference_data()["matrices"]
    Minv = np.linalg.inv(R["M"])
    return np.block([[np.zeros((2, 2)), np.eye(2)],
                     [-Minv @ (9.81 * R["K0"] + v * v * R["K2"]), -v * Minv @ R["C1"]]])


def test_critical_points_on_meijaard_matrices():
    """From Meijaard's published M, C1, K0, K2 (14 decimals): v_d, v_w, v_c of Table 2 to 1e-11
    relative -- an independent path to the same reference numbers."""
    ref = reference_data()["speeds"]
    cps = critical_points(_meijaard_block, np.linspace(0, 10, 51))
    kinds = [(c.kind, c.direction) for c in cps]
    assert kinds == [("coalescence", "real_to_complex"), ("oscillatory", "stabilizing"),
                     ("real", "destabilizing")]
    for c, key in zip(cps, ("vd", "vw", "vc")):
        assert isinstance(c, CriticalPoint)
        assert abs(c.value - ref[key]) < 1e-11 * ref[key], key
        assert c.bracket[0] <= c.value <= c.bracket[1]
    assert abs(cps[0].eigenvalue.real - reference_data()["lambda_d"]) < 1e-7
    assert abs(cps[1].eigenvalue.real) < 1e-12 and cps[1].eigenvalue.imag > 0


def test_hopf_of_a_damped_oscillator():
    """x'' + (1 - v) x' + x = 0: a pair crosses at v = 1 (destabilizing), λ = ±i."""
    cps = critical_points(lambda v: np.array([[0.0, 1.0], [-1.0, v - 1.0]]), [0.0, 0.7, 1.3, 1.9])
    osc = [c for c in cps if c.kind == "oscillatory"]
    assert len(osc) == 1 and abs(osc[0].value - 1.0) < 1e-13
    assert osc[0].direction == "destabilizing" and abs(osc[0].eigenvalue - 1j) < 1e-12
    # damping ratio 1 at v = -1 is outside the grid: no coalescence reported
    assert not [c for c in cps if c.kind == "coalescence"]


def test_eigenvalue_tracking_is_continuous():
    sw = eigenvalues_vs_parameter(_meijaard_block, np.linspace(0, 10, 201))
    assert sw.eigenvalues.shape == (201, 4)
    jumps = np.max(np.abs(np.diff(sw.eigenvalues, axis=0)))
    assert jumps < 1.5                       # branches followed, no swaps between far roots
    assert np.allclose(np.sort(sw.real[0]), [-5.53094371765393, -3.13164324790656,
                                             3.13164324790656, 5.53094371765393], atol=1e-10)
    with pytest.raises(ValueError):
        sw.eigenvalues[0, 0] = 0


def test_stability_errors():
    with pytest.raises(LinearSystemError, match="strictly increasing grid"):
        critical_points(_meijaard_block, [1.0, 0.5])
    with pytest.raises(LinearSystemError, match="must be square"):
        spectral_abscissa(np.zeros((2, 3)))
    with pytest.raises(LinearSystemError, match="meant for blocks up to 10 x 10"):
        charpoly(np.eye(11))
    with pytest.raises(LinearSystemError, match="at least one parameter value"):
        eigenvalues_vs_parameter(_meijaard_block, [])
