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
    from nhcontrol.linearization import Partition, linearize

    v = 2.0
    m, I, a = sleigh.DEFAULTS["m"], sleigh.DEFAULTS["I_zz"], sleigh.DEFAULTS["a"]
    res = linearize(cm, sleigh.straight_motion(cm, v), Partition(**sleigh.PARTITION))
    ev = np.sort(np.linalg.eigvals(res.A).real)
    np.testing.assert_allclose(ev, [m * a * v / (I + m * a**2), 0, 0, 0, 0], atol=1e-12)


# --------------------------------------------------------------------------- skateboard
@pytest.fixture(scope="module")
def board():
    return sleigh.model_skateboard()


def test_skateboard_structure(board):
    """n = 3, l = 2, one input u entering B(x, u): front blade normal (-sin u, cos u) in the board frame."""
    assert (board.n, board.m, board.l, board.ninputs) == (3, 0, 2, 1)
    assert tuple(board.nonholonomic_names) == ("front_lateral", "rear_lateral")
    r = sleigh.SKATEBOARD_DEFAULTS["r"]
    u = 0.3
    B = board.B(np.zeros(3), u=[u])
    np.testing.assert_allclose(B, [[-math.sin(u), math.cos(u), r * math.cos(u)],
                                   [math.sin(u), math.cos(u), -r * math.cos(u)]], atol=1e-15)


@pytest.mark.parametrize("v, u0", [(0.0, 0.0), (2.0, 0.0), (2.0, 0.3), (5.0, -0.2), (1.0, 1.2)])
def test_skateboard_turn_residuals(board, v, u0):
    """The steady turn satisfies the constraints and the dynamics with its closed-form Λ0 (1e-12)."""
    ref = sleigh.skateboard_turn(board, v, u0)
    assert ref.steady == (u0 == 0.0 or v == 0.0)
    report = ref.check(board, np.linspace(0.0, 3.0, 13), tol=1e-12, raise_on_error=True)
    assert report.max_dynamics < 1e-12
    np.testing.assert_allclose(ref.u(0.7), [u0])


@pytest.mark.parametrize("v, u0", [(2.0, 0.3), (5.0, -0.2)])
def test_skateboard_multipliers_match_inverse_dynamics(board, v, u0):
    """Λ = -m v² sin u0 / (2 r cos² u0) for both trucks equals Eq. (2.112) (1e-12 relative)."""
    from nhcontrol.reference import inverse_dynamics

    r = sleigh.SKATEBOARD_DEFAULTS["r"]
    x, xd, xdd = sleigh.skateboard_turn_state(v, u0, 1.3, r)
    lam = inverse_dynamics(board, x, xd, xdd, u=[u0]).lam
    m = sleigh.SKATEBOARD_DEFAULTS["m"]
    expected = -m * v**2 * math.sin(u0) / (2 * r * math.cos(u0) ** 2)
    np.testing.assert_allclose(lam, [expected, expected], rtol=1e-12)


def test_skateboard_simulation_follows_the_circle(board):
    """forward_dynamics with constant u0 from the turn's initial state stays on it for one period (1e-8 m)."""
    from nhcontrol import simulate

    v, u0, r = 2.0, 0.3, sleigh.SKATEBOARD_DEFAULTS["r"]
    ref = sleigh.skateboard_turn(board, v, u0)
    ts = np.linspace(0.0, ref.period, 21)
    res = simulate.forward_dynamics(board, (0.0, ref.period), ref.x(0.0), ref.xd(0.0), u=[u0], t_eval=ts)
    np.testing.assert_allclose(res.x, ref.x(ts), atol=1e-8)
    np.testing.assert_allclose(res.x[-1, :2], [0.0, 0.0], atol=1e-8)   # back at the start after a period
    np.testing.assert_allclose(res.lam, ref.lam(ts), rtol=1e-7)


@pytest.mark.parametrize("name, u0", [("PARTITION_SKATEBOARD_TURN", 0.3), ("PARTITION_SKATEBOARD_STRAIGHT", 0.0)])
def test_skateboard_partitions_are_regular(board, name, u0):
    """D_dd = B[:, x_ad] has condition number below 1e3 along the reference samples."""
    part = getattr(sleigh, name)
    ref = sleigh.skateboard_turn(board, 2.0, u0)
    dd = [sleigh.COORDINATES.index(c) for c in part["admissible_dependent"]]
    ts = np.linspace(0.0, ref.period or 1.0, 9)[:-1] if u0 else [0.0, 1.0]
    for t in ts:
        assert np.linalg.cond(board.B(ref.x(t), u=[u0])[:, dd]) < 1e3


def test_skateboard_errors(board, cm):
    with pytest.raises(ReferenceMotionError, match=r"\|u0\| < pi/2"):
        sleigh.skateboard_turn(board, 1.0, math.pi / 2)
    with pytest.raises(ReferenceMotionError, match="steer angle u0 must be a real number"):
        sleigh.skateboard_turn(board, 1.0, "left")
    with pytest.raises(ModelError, match="expected the skateboard model"):
        sleigh.skateboard_turn(cm, 1.0, 0.1)
    with pytest.raises(ModelError, match="expected the Chaplygin sleigh"):
        sleigh.straight_motion(board, 1.0)
    with pytest.raises(ModelError, match=r"half wheelbase r must be positive.*r=0"):
        sleigh.build_skateboard(r=0)
