"""Rotation helpers: Eqs. (2.23)-(2.26) and the twelve sequences."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import SEQUENCES, euler_rotation, rot_x, rot_y, rot_z

q1, q2, q3 = sp.symbols("q1 q2 q3")


def test_eq_2_24_zxz_matches_thesis_entries():
    """Eq. (2.24), entry by entry as printed in the thesis (exact, symbolic)."""
    psi, phi, gam = sp.symbols("psi phi gamma")
    c, s = sp.cos, sp.sin
    R = euler_rotation("zxz", (psi, phi, gam))
    ref = sp.Matrix([
        [c(psi) * c(gam) - c(phi) * s(psi) * s(gam), -c(psi) * s(gam) - c(phi) * c(gam) * s(psi), s(psi) * s(phi)],
        [c(gam) * s(psi) + c(psi) * c(phi) * s(gam), c(psi) * c(phi) * c(gam) - s(psi) * s(gam), -c(psi) * s(phi)],
        [s(phi) * s(gam), c(gam) * s(phi), c(phi)]])
    assert sp.simplify(R - ref) == sp.zeros(3, 3)


def test_eq_2_26_zxy_matches_thesis_entries():
    """Eq. (2.26) (Tait-Bryan Z1-X2-Y3), exact."""
    psi, phi, th = sp.symbols("psi phi theta")
    c, s = sp.cos, sp.sin
    R = euler_rotation("zxy", (psi, phi, th))
    ref = sp.Matrix([
        [c(psi) * c(th) - s(psi) * s(phi) * s(th), -c(phi) * s(psi), c(psi) * s(th) + c(th) * s(psi) * s(phi)],
        [c(th) * s(psi) + c(psi) * s(phi) * s(th), c(psi) * c(phi), s(psi) * s(th) - c(psi) * c(th) * s(phi)],
        [-c(phi) * s(th), s(phi), c(phi) * c(th)]])
    assert sp.expand(R - ref) == sp.zeros(3, 3)


@pytest.mark.parametrize("seq", SEQUENCES)
def test_every_sequence_is_a_rotation_and_product_of_elementals(seq):
    R = euler_rotation(seq.upper(), (q1, q2, q3))
    el = {"x": rot_x, "y": rot_y, "z": rot_z}
    assert R == el[seq[0]](q1) * el[seq[1]](q2) * el[seq[2]](q3)
    f = sp.lambdify((q1, q2, q3), R, "numpy")
    Rv = np.array(f(0.3, -1.1, 2.0), dtype=float)
    np.testing.assert_allclose(Rv @ Rv.T, np.eye(3), atol=1e-14)
    assert abs(np.linalg.det(Rv) - 1) < 1e-14


def test_twelve_sequences():
    assert len(set(SEQUENCES)) == 12


def test_counterclockwise_sense():
    """rot_z(pi/2) maps the body X axis to the global Y axis (counterclockwise, Eq. (2.23))."""
    assert rot_z(sp.pi / 2) * sp.Matrix([1, 0, 0]) == sp.Matrix([0, 1, 0])
    assert rot_x(sp.pi / 2) * sp.Matrix([0, 1, 0]) == sp.Matrix([0, 0, 1])
    assert rot_y(sp.pi / 2) * sp.Matrix([0, 0, 1]) == sp.Matrix([1, 0, 0])


def test_bad_sequence_and_angle_count():
    with pytest.raises(ModelError, match="unknown rotation sequence 'xxy'.*12 sequences"):
        euler_rotation("xxy", (q1, q2, q3))
    with pytest.raises(ModelError, match="needs 3 angles, got 2"):
        euler_rotation("zxz", (q1, q2))
