"""Tests of the Chaplygin sleigh (models/sleigh.py).

Closed-form reference: linearized about straight motion at speed v, the yaw rate obeys
(I_zz + m a^2) psi'' = m a v psi' (module docstring), so the yaw-rate eigenvalue is
m a v / (I_zz + m a^2); it is compared with a central finite difference of the nonlinear
dynamics (h = 1e-6, rtol 1e-7).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.models import sleigh


@pytest.fixture(scope="module")
def cm():
    return sleigh.model()


def yaw_rate_eigenvalue(cm, v, h=1e-6):
    """d(psi_dd)/d(psi_d) at straight motion, with y_d from the constraint (FD)."""
    def psi_dd(wz):
        x = np.zeros(3)
        xd = np.array([v, 0.0, wz])
        B = cm.B(x)
        xd[1] = -(B[0, 0] * xd[0] + B[0, 2] * xd[2]) / B[0, 1]
        M, D = cm.M(x), cm.D(x)
        sol = np.linalg.solve(np.block([[M, D.T], [D, np.zeros((1, 1))]]),
                              np.concatenate([cm.Q(x, xd), cm.Qd(x, xd)]))
        return sol[2]
    return (psi_dd(h) - psi_dd(-h)) / (2 * h)


def test_dimensions(cm):
    assert (cm.n, cm.m, cm.l) == (3, 0, 1)
    assert tuple(cm.nonholonomic_names) == ("blade_lateral",)
    assert dict(cm.parameters) == dict(sleigh.DEFAULTS)


def test_constraint_is_the_knife_edge(cm):
    """B(x) = [-sin psi, cos psi, a] (1e-15)."""
    a = sleigh.DEFAULTS["a"]
    for psi in (0.0, 0.7, -2.1):
        np.testing.assert_allclose(cm.B(np.array([0.3, -1.0, psi]))[0], [-math.sin(psi), math.cos(psi), a],
                                   atol=1e-15)


@pytest.mark.parametrize("v", [0.0, 1.0, 4.3, 10.0])
def test_straight_motion_residuals(cm, v):
    ref = sleigh.straight_motion(cm, v)
    report = ref.check(cm, np.linspace(0.0, 2.0, 5), tol=1e-12, raise_on_error=True)
    assert report.max_dynamics < 1e-12 and report.max_velocity < 1e-12
    np.testing.assert_array_equal(ref.lam(1.0), [0.0])


@pytest.mark.parametrize("a, v", [(-0.2, 1.0), (-0.2, 4.3), (0.3, 2.0), (0.0, 1.0)])
def test_yaw_rate_eigenvalue_matches_closed_form(a, v):
    cm = sleigh.model(a=a)
    m, I = sleigh.DEFAULTS["m"], sleigh.DEFAULTS["I_zz"]
    expected = m * a * v / (I + m * a**2)
    assert yaw_rate_eigenvalue(cm, v) == pytest.approx(expected, rel=1e-7, abs=1e-8)


def test_partition(cm):
    part = sleigh.PARTITION
    assert sorted(sum(part.values(), [])) == sorted(sleigh.COORDINATES)
    B = cm.B(np.zeros(3))
    dd = [sleigh.COORDINATES.index(c) for c in part["admissible_dependent"]]
    assert abs(np.linalg.det(B[:, dd])) > 0.5


def test_errors(cm):
    with pytest.raises(ModelError, match=r"m and I_zz must be positive.*I_zz=-1"):
        sleigh.build(I_zz=-1)
    with pytest.raises(ReferenceMotionError, match="speed v must be a real number"):
        sleigh.straight_motion(cm, None)
    with pytest.raises(ModelError, match="expected the Chaplygin sleigh"):
        from nhcontrol.models import rolling_wheel
        sleigh.straight_motion(rolling_wheel.model_disc(), 1.0)


def test_exact_linearization_with_partition(cm):
    """nhcontrol.linearize with PARTITION: one eigenvalue m a v/(I_zz + m a^2), the others zero (1e-12)."""
    from nhcontrol.linearize import Partition, linearize

    v = 2.0
    m, I, a = sleigh.DEFAULTS["m"], sleigh.DEFAULTS["I_zz"], sleigh.DEFAULTS["a"]
    res = linearize(cm, sleigh.straight_motion(cm, v), Partition(**sleigh.PARTITION))
    ev = np.sort(np.linalg.eigvals(res.A).real)
    np.testing.assert_allclose(ev, [m * a * v / (I + m * a**2), 0, 0, 0, 0], atol=1e-12)
