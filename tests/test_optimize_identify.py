"""Parameter identification by output error on collocation (nhcontrol.optimize.identify).

The ball-plate of thesis Sect. 8.4 (ball radius ``R`` and central inertia ``I``) from simulated
noisy measurements of the contact point and two ball angles: the data come from
`nhcontrol.simulate.forward_dynamics` (an independent integrator, rtol 1e-10); the estimates
must lie within 3 standard deviations of the truth (the covariance is the Gauss–Newton one,
scaled by the residual variance) and the parameter derivatives are exact (central differences).
"""

from __future__ import annotations

import numpy as np
import pytest

from nhcontrol._util.errors import OptimizationError
from nhcontrol.models import ball_plate as bp
from nhcontrol.optimize import identify
from nhcontrol.optimize._parameter_terms import parameter_terms
from nhcontrol.optimize._reduced import ReducedDynamics

OUTPUTS = ["x_C", "y_C", "phi", "theta"]
NOISE = np.array([2e-3, 2e-3, 2e-2, 2e-2])


def _plate(t):
    t = np.asarray(t, dtype=float)
    return np.stack([0.05 * np.sin(1.3 * t), 0.05 * np.cos(0.9 * t)], axis=-1)


@pytest.fixture(scope="module")
def data():
    from nhcontrol.simulate import forward_dynamics

    cm = bp.model()
    t = np.linspace(0.0, 4.0, 201)
    res = forward_dynamics(cm, (0.0, 4.0), np.zeros(5), np.zeros(5), u=lambda tt: _plate(tt),
                           t_eval=t, rtol=1e-11, atol=1e-13)
    x = np.asarray(res.x)
    idx = [cm.coordinates.index(o) for o in OUTPUTS]
    rng = np.random.default_rng(7)
    y = x[:, idx] + NOISE * rng.standard_normal((t.size, len(OUTPUTS)))
    return cm, t, _plate(t), y


def test_ball_radius_and_inertia_within_three_sigma(data):
    cm, t, u, y = data
    truth = {"R": cm.parameters["R"], "I": cm.parameters["I"]}
    res = identify(cm, t, u, y, outputs=OUTPUTS, parameters={"R": (0.047, 0.01, 0.2), "I": (1.05e-4, 1e-6, 1e-3)},
                   x0=np.zeros(5), xd0=np.zeros(5), noise_std=NOISE, partition=bp.PARTITION_8_72)
    assert res.success, res
    z = res.z_scores(truth)
    assert all(abs(v) < 3.0 for v in z.values()), (res, z)
    for k in truth:
        assert abs(res.estimates[k] / truth[k] - 1.0) < 0.01
    # residuals at the noise level (the model fits)
    assert np.all(res.residual_std < 1.5 * NOISE) and np.all(res.residual_std > 0.5 * NOISE)
    assert res.covariance.shape == (2, 2) and "IdentificationResult(R=" in repr(res)


def test_parameter_derivatives_are_exact():
    cm = bp.model()
    p = np.array(list(cm.parameters.values()))
    rd = ReducedDynamics(cm, bp.PARTITION_8_72, p, np.zeros(cm.n))
    theta = parameter_terms(cm, ["R", "I", "g"])
    rng = np.random.default_rng(1)
    X = 0.3 * rng.standard_normal((3, rd.ns))
    U = 0.1 * rng.standard_normal((3, rd.k))
    J = rd.evaluate(X, U, theta=theta).J[:, :, rd.ns + rd.k:]
    for j, name in enumerate(["R", "I", "g"]):
        i = list(cm.parameters).index(name)
        step = 1e-6 * p[i]
        rd.p = p.copy()
        rd.p[i] += step
        fp = rd.evaluate(X, U, jac=False).f
        rd.p = p.copy()
        rd.p[i] -= step
        fm = rd.evaluate(X, U, jac=False).f
        fd = (fp - fm) / (2 * step)
        assert np.allclose(J[:, :, j], fd, rtol=1e-6, atol=1e-7 * np.max(np.abs(fd))), name


def test_identify_errors(data):
    cm, t, u, y = data
    with pytest.raises(OptimizationError, match="unknown"):
        identify(cm, t, u, y, outputs=OUTPUTS, parameters={"radius": 0.05}, partition=bp.PARTITION_8_72)
    with pytest.raises(OptimizationError, match="uniformly"):
        identify(cm, t ** 1.1, u, y, outputs=OUTPUTS, parameters={"R": 0.05}, partition=bp.PARTITION_8_72)
    with pytest.raises(OptimizationError, match="no coordinate"):
        identify(cm, t, u, y, outputs=["x_C", "y_C", "phi", "camera"], parameters={"R": 0.05},
                 partition=bp.PARTITION_8_72)
