"""The benchmark bicycle with lean/steer torques and its canonical matrices.

Reference values: Meijaard et al. (2007), Sect. 5.3 (14 decimals as printed, g = 9.81 m/s²), kept
in ``src/nhcontrol/reproduce/data/bicycle_benchmark_reference.txt``; compared at 1e-11 absolute
(the printed precision is 1e-14; the third procedure reproduces them to ~2e-13).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nhcontrol._util.errors import ModelError
from nhcontrol.models import benchmark_bicycle as bb
from nhcontrol.models import toroidal_bicycle as tb

DATA = Path(__file__).resolve().parents[1] / "src/nhcontrol/reproduce/data/bicycle_benchmark_reference.txt"


def _published() -> dict[str, np.ndarray]:
    out = {}
    for line in DATA.read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == "matrix":
            out[parts[1]] = np.array([float(x) for x in parts[2:]]).reshape(2, 2)
    return out


def test_inputs_any_subset_and_errors():
    assert bb.model(inputs=("T_delta",)).inputs == ("T_delta",)
    assert bb.model().inputs == ()
    with pytest.raises(ModelError, match=r"T_phi.*T_delta.*got \['T_steer'\]"):
        bb.model(inputs=("T_steer",))
    with pytest.raises(ModelError, match="distinct"):
        bb.build(inputs=("T_phi", "T_phi"))


def test_canonical_matrices_reproduce_meijaard():
    ref = _published()
    mats = bb.canonical_matrices(bb.model(inputs=("T_phi", "T_delta")))
    for k in ("M", "C1", "K0", "K2"):
        np.testing.assert_allclose(mats[k], ref[k], rtol=0, atol=1e-11, err_msg=k)
    np.testing.assert_allclose(mats["H"], np.eye(2), atol=1e-12)


def test_canonical_matrices_without_inputs_and_steer_only():
    ref = _published()
    m0 = bb.canonical_matrices(bb.model())
    assert "H" not in m0
    np.testing.assert_allclose(m0["M"], ref["M"], atol=1e-11)
    m1 = bb.canonical_matrices(bb.model(inputs=("T_delta",)))
    np.testing.assert_allclose(m1["H"], [[0.0], [1.0]], atol=1e-12)


def test_canonical_matrices_follow_parameters():
    """A heavier rear frame changes M[0, 0] by m_B-dependent terms; check against the other route."""
    cm = bb.model(inputs=("T_phi", "T_delta"))
    mats = bb.canonical_matrices(cm, {"m_B": 90.0})
    assert abs(mats["M"][0, 0] - 80.81722) > 1.0
    # characteristic polynomial of the canonical form = eigenvalues of the linearization (v = 4)
    from nhcontrol.linearization import linearize
    v = 4.0
    lin = linearize(cm, bb.steady_forward(cm, v, {"m_B": 90.0}), bb.PARTITION_4_172)
    M, C, K = mats["M"], v * mats["C1"], 9.81 * mats["K0"] + v**2 * mats["K2"]
    Minv = np.linalg.inv(M)
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-Minv @ K, -Minv @ C]])
    lam = np.sort_complex(np.linalg.eigvals(A))
    nz = np.asarray(lin.nonspurious_eigenvalues)
    nz = np.sort_complex(nz[np.abs(nz) > 1e-8])
    np.testing.assert_allclose(lam, nz, atol=1e-9)


def test_toroidal_bicycle_takes_the_torques():
    cm = tb.model(inputs=("T_phi", "T_delta"))
    assert cm.inputs == ("T_phi", "T_delta")
    x = np.zeros(cm.n)
    Q = cm.Q(x, np.zeros(cm.n), u=np.array([2.0, 3.0]))
    Q0 = cm.Q(x, np.zeros(cm.n))
    d = Q - Q0
    i_phi, i_delta = cm.coordinates.index("phi_b"), cm.coordinates.index("delta")
    np.testing.assert_allclose(d[[i_phi, i_delta]], [2.0, -3.0], atol=1e-14)
    np.testing.assert_allclose(np.delete(d, [i_phi, i_delta]), 0.0, atol=1e-14)
