"""``lin.from_deviation``: consistent ``(x, ẋ)`` from a linear state.

Round trip with ``lin.deviation``, constraint residuals, and the solved dependent velocities
against the linearization itself (the ``x_ad`` rows of ``A`` predict ``ẋ̃_ad`` to first order).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from nhcontrol._util.errors import LinearSystemError
from nhcontrol.linearization import linearize
from nhcontrol.models import ball_plate as bp
from nhcontrol.models import benchmark_bicycle as bb
from nhcontrol.simulate import constraint_drift


@pytest.fixture(scope="module")
def bicycle():
    cm = bb.model(inputs=("T_delta",))
    ref = bb.steady_forward(cm, 2.0)
    return cm, ref, linearize(cm, ref, bb.PARTITION_4_172)


@pytest.fixture(scope="module")
def ball_plate():
    cm = bp.model()
    ref = bp.circular_motion(cm, 5.0)
    ts = np.array([0.0, 0.9, 2.3])
    return cm, ref, ts, linearize(cm, ref, bp.PARTITION_8_72, t=ts)


def _residual(cm, x, xd, p):
    return constraint_drift(cm, np.concatenate([np.atleast_2d(x), np.atleast_2d(xd)], axis=1), p=p).max


def test_bicycle_round_trip_and_constraints(bicycle):
    cm, ref, lin = bicycle
    dX = 0.05 * np.random.default_rng(1).standard_normal(lin.nstates)
    x, xd = lin.from_deviation(ref, 0.3, dX)
    assert x.shape == xd.shape == (len(cm.coordinates),)
    np.testing.assert_allclose(lin.deviation(ref, 0.3, x, xd), dX, rtol=0, atol=1e-14)
    assert _residual(cm, x, xd, ref.parameters) < 1e-12
    # the dependent coordinates really moved off the reference (pitch follows lean and steer)
    dep = [cm.coordinates.index(c) for c in bb.PARTITION_4_172["dependent"]]
    assert np.max(np.abs(x[dep] - ref.x(0.3)[dep])) > 1e-5


def test_ball_plate_round_trip_many_times(ball_plate):
    cm, ref, ts, lin = ball_plate
    dX = 0.05 * np.random.default_rng(2).standard_normal((ts.size, lin.nstates))
    X, XD = lin.from_deviation(ref, ts, dX)
    assert X.shape == (ts.size, 5)
    np.testing.assert_allclose(lin.deviation(ref, ts, X, XD), dX, rtol=0, atol=1e-14)
    assert _residual(cm, X, XD, ref.parameters) < 1e-12


def test_solved_velocities_match_the_linearization_to_first_order(bicycle):
    """ẋ̃_ad = J31 x̃_ai + J32 ẋ̃_ai + J33 x̃_ad (rows of Eq. (4.124)): the error is O(ε²)."""
    cm, ref, lin = bicycle
    n1 = lin.n_independent
    ad = list(lin.states[2 * n1:])
    dX = np.random.default_rng(3).standard_normal(lin.nstates)
    errs = []
    for eps in (1e-3, 5e-4):
        x, xd = lin.from_deviation(ref, 0.0, eps * dX)
        got = np.array([xd[cm.coordinates.index(s)] - ref.xd(0.0)[cm.coordinates.index(s)] for s in ad])
        pred = lin.A[2 * n1:] @ (eps * dX)
        errs.append(np.max(np.abs(got - pred)))
        assert errs[-1] < 1e-2 * np.max(np.abs(pred))
    assert 3.0 < errs[0] / errs[1] < 5.0          # second order: halving ε quarters the error


def test_errors_and_unpickled_result(bicycle):
    cm, ref, lin = bicycle
    with pytest.raises(LinearSystemError, match=r"dX must be \(10,\)"):
        lin.from_deviation(ref, 0.0, np.zeros(9))
    with pytest.raises(LinearSystemError, match="must be finite"):
        lin.from_deviation(ref, 0.0, np.full(10, np.nan))
    l2 = pickle.loads(pickle.dumps(lin))
    with pytest.raises(LinearSystemError, match="pass cm="):
        l2.from_deviation(ref, 0.0, np.zeros(10))
    x, xd = l2.from_deviation(ref, 0.0, np.zeros(10), cm=cm)
    np.testing.assert_allclose(x, ref.x(0.0), atol=1e-14)
