"""reference_family: N references linearized in one stacked kernel call equal the one-by-one
linearizations (steady bicycle over speed; the ball-plate along its circle, with inputs), and
malformed families are refused with the culprit named."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import nhcontrol
from nhcontrol._util.errors import ReferenceMotionError
from nhcontrol.models import ball_plate as bp
from nhcontrol.models import benchmark_bicycle as bb
from nhcontrol.reference import reference_family, reference_points


@pytest.fixture(scope="module")
def bike():
    return bb.model()


def test_bicycle_speed_family_equals_point_linearizations(bike):
    speeds = [0.5, 2.0, 4.3, 6.0, 9.5]
    refs = [bb.steady_forward(bike, v=v) for v in speeds]
    fam = reference_family(refs)
    lin = nhcontrol.linearize(bike, fam, bb.PARTITION_4_172, t=np.arange(len(speeds)))
    assert lin.A.shape == (5, 10, 10) and fam.steady and fam.source == "family"
    for i, r in enumerate(refs):
        one = nhcontrol.linearize(bike, r, bb.PARTITION_4_172)
        np.testing.assert_allclose(lin.A[i], one.A, rtol=0, atol=1e-14 * np.abs(one.A).max())
    again = pickle.loads(pickle.dumps(fam))
    np.testing.assert_array_equal(again.xd(np.arange(5)), fam.xd(np.arange(5)))


def test_ball_plate_circle_family_with_inputs():
    cm = bp.model()
    ref = bp.circular_motion(cm, 5.0)
    times = np.array([0.0, 0.7, 1.9, 3.3])
    fam = reference_family([ref] * times.size, t=times)
    lin = nhcontrol.linearize(cm, fam, bp.PARTITION_8_72, t=np.arange(times.size))
    direct = nhcontrol.linearize(cm, ref, bp.PARTITION_8_72, t=times)
    np.testing.assert_allclose(lin.A, direct.A, rtol=0, atol=1e-13)
    np.testing.assert_allclose(lin.B, direct.B, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(fam.u(np.arange(4)), ref.u(times))


def test_malformed_families(bike):
    r1 = bb.steady_forward(bike, v=1.0)
    with pytest.raises(ReferenceMotionError, match="at least one"):
        reference_family([])
    with pytest.raises(ReferenceMotionError, match="member 1 is a dict"):
        reference_family([r1, {}])
    with pytest.raises(ReferenceMotionError, match="member 1 has other parameter values"):
        reference_family([r1, bb.steady_forward(bike, v=2.0, p={"c": 0.1})])
    with pytest.raises(ReferenceMotionError, match="member 1 is a reference of 'ball_plate'"):
        reference_family([r1, bp.circular_motion(bp.model(), 5.0)])
    with pytest.raises(ReferenceMotionError, match="one per member"):
        reference_family([r1, r1], t=[0.0, 1.0, 2.0])
    fam = reference_family([r1, r1])
    with pytest.raises(ReferenceMotionError, match=r"t = 0.5 for x\(t\)"):
        fam.x(0.5)


def test_reference_points_equal_the_family_of_references(bike):
    speeds = np.array([0.5, 3.0, 7.5])
    vals = dict(bike.parameters)
    states = [bb.steady_forward_state(v, 0.0, vals) for v in speeds]
    X, XD, XDD = (np.array([s[i] for s in states]) for i in range(3))
    pts = reference_points(bike, X, XD, XDD, steady=True)
    fam = reference_family([bb.steady_forward(bike, v=v) for v in speeds])
    t = np.arange(3)
    np.testing.assert_allclose(pts.lam(t), fam.lam(t), rtol=0, atol=1e-11)   # inverse dynamics
    a = nhcontrol.linearize(bike, pts, bb.PARTITION_4_172, t=t).A
    b = nhcontrol.linearize(bike, fam, bb.PARTITION_4_172, t=t).A
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-11 * np.abs(b).max())
    assert pts.source == "points" and pts.steady


def test_reference_points_are_checked(bike):
    vals = dict(bike.parameters)
    x, xd, xdd = bb.steady_forward_state(2.0, 0.0, vals)
    bad = np.array([xd, xd])
    bad[1, 7] = 0.0                                   # rear wheel not spinning: it slides
    with pytest.raises(ReferenceMotionError, match=r"t = 1\b"):
        reference_points(bike, [x, x], bad, [xdd, xdd])
    with pytest.raises(ReferenceMotionError, match=r"xd \(points\) must have shape \(2, 11\)"):
        reference_points(bike, [x, x], [xd], [xdd, xdd])
    ok = reference_points(bike, [x, x], bad, [xdd, xdd], check=False)
    assert ok.xd(1)[7] == 0.0
