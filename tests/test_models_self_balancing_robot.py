"""The two-wheeled self-balancing robot: its steady circle is admissible with zero torques, and
on a straight run the exact linearization's unstable pitch eigenvalue equals the closed form of
the planar wheeled inverted pendulum (derived in the test: ``s² = m_b g l_b M₂₂ / det M``,
``M = [[I_by + m_b l_b², m_b r l_b], [m_b r l_b, (m_b + 2 m_w) r² + 2 I_wa]]``)."""

from __future__ import annotations

import numpy as np
import pytest

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.linearization import linearize
from nhcontrol.models import self_balancing_robot as sbr
from nhcontrol.reference import Reference


@pytest.fixture(scope="module")
def cm():
    return sbr.model()


def test_circle_is_a_relative_equilibrium_with_zero_torques(cm):
    ref = sbr.circle(cm, 2.0, 0.5)
    ts = np.linspace(0.0, 20.0, 7)
    x, xd = ref.x(ts), ref.xd(ts)
    np.testing.assert_allclose(np.hypot(x[:, 0], x[:, 1] - 2.0), 2.0, atol=1e-12)
    np.testing.assert_allclose(np.hypot(xd[:, 0], xd[:, 1]), 0.5, atol=1e-12)
    np.testing.assert_array_equal(ref.u(ts), 0.0)
    # the lateral multiplier is the centripetal force of the whole robot, m v²/ρ (up to sign)
    mtot = cm.parameters["m_b"] + 2 * cm.parameters["m_w"]
    assert abs(abs(ref.lam(1.0)[2]) - mtot * 0.5 ** 2 / 2.0) < 1e-9


def test_straight_run_pitch_eigenvalue_matches_the_planar_pendulum(cm):
    p = cm.parameters
    v = 0.5
    ref = Reference.constant_velocity(cm, np.zeros(6), [v, 0, 0, 0, v / p["r"], v / p["r"]])
    lin = linearize(cm, ref, sbr.PARTITION)
    ev = np.linalg.eigvals(np.asarray(lin.to_statespace().A))
    M11 = p["I_by"] + p["m_b"] * p["l_b"] ** 2
    M12 = p["m_b"] * p["r"] * p["l_b"]
    M22 = (p["m_b"] + 2 * p["m_w"]) * p["r"] ** 2 + 2 * p["I_wa"]
    s = np.sqrt(p["m_b"] * p["g"] * p["l_b"] * M22 / (M11 * M22 - M12 ** 2))
    assert abs(ev.real.max() - s) < 1e-9 * s
    assert lin.states == ("theta", "phi_L", "phi_R", "theta_d", "phi_L_d", "phi_R_d", "x", "y",
                          "psi")


def test_bad_inputs(cm):
    with pytest.raises(ModelError, match="unknown self-balancing robot parameters"):
        sbr.build(mass=3.0)
    with pytest.raises(ReferenceMotionError, match="radius must be a positive"):
        sbr.circle(cm, -1.0)
