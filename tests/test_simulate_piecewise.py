"""`closed_loop_piecewise_linear`: a sampled loop whose law commands inputs and their rates;
the plant sees ``u(t) = u_k + u̇_k (t − t_k)`` over each sample (the assigned-steering skate of
the road-vehicle review, whose steering angle enters the front skate constraint)."""

from __future__ import annotations

import numpy as np
import pytest

from nhcontrol._util.errors import SimulationInputError
from nhcontrol.models import single_track as st
from nhcontrol.simulate import closed_loop_piecewise_linear


@pytest.fixture(scope="module")
def force_cm():
    return st.build("force").system.compile()


def test_closed_loop_piecewise_linear(force_cm):
    """The general loop: a law that commands a constant steering rate gives γ(t) = γ0 + r t
    exactly at every output point (the plant's input is the ramp, continued across samples);
    wrong shapes and periods are refused with the model's input names."""
    rate = 0.02

    def law(k, t, x, xd, u_now):
        return np.array([0.0, 0.0, u_now[2], rate]), np.array([0.0, 0.0, rate, 0.0])

    x0, xd0 = np.zeros(3), np.array([20.0, 0.0, 0.0])
    loop = closed_loop_piecewise_linear(force_cm, law, 0.2, x0, xd0, np.zeros(4),
                                        sample_time=0.05, rtol=1e-6, atol=1e-8)
    assert loop.t_u.size == 4 and loop.t.size == 4 * 4 + 1
    assert np.allclose(loop.u[:, 2], rate * loop.t, atol=1e-15)
    assert np.all(loop.ud[:, 2] == rate) and np.all(loop.u_k[:, 3] == rate)
    assert np.all(loop.xd[1:, 2] > 0)                     # turning left at the assigned angle
    with pytest.raises(SimulationInputError, match=r"shape \(4,\) \(inputs \['F_R'"):
        closed_loop_piecewise_linear(force_cm, lambda *a: (np.zeros(3), np.zeros(4)), 0.1, x0,
                                     xd0, np.zeros(4), sample_time=0.05)
    with pytest.raises(SimulationInputError, match="sample_time must be a positive"):
        closed_loop_piecewise_linear(force_cm, law, 0.1, x0, xd0, np.zeros(4), sample_time=0.0)
    with pytest.raises(SimulationInputError, match="shorter than one sample"):
        closed_loop_piecewise_linear(force_cm, law, 0.01, x0, xd0, np.zeros(4), sample_time=0.05)
