"""Tests of nhcontrol.analysis.transition_matrix against closed forms and invariants."""

from __future__ import annotations

import control
import numpy as np
import pytest
from scipy.linalg import expm

from nhcontrol._util.errors import LinearSystemError, TimeRangeError
from nhcontrol.analysis import transition_matrix
from nhcontrol.systems import LTVSystem


def lower_triangular() -> LTVSystem:
    """A(t) = [[-1, 0], [t, -2]]: Φ11 = e^{-(t-t0)}, Φ22 = e^{-2(t-t0)},
    Φ21 = e^{-2t+t0} ((t-1) e^t - (t0-1) e^{t0})."""
    return LTVSystem(lambda t: [[-1.0, 0.0], [t, -2.0]], [[1.0], [0.0]])


def phi_lower(t: float, t0: float) -> np.ndarray:
    return np.array([[np.exp(-(t - t0)), 0.0],
                     [np.exp(-2 * t + t0) * ((t - 1) * np.exp(t) - (t0 - 1) * np.exp(t0)), np.exp(-2 * (t - t0))]])


def commuting() -> LTVSystem:
    """A(t) = cos(t) I + N (N nilpotent) commutes with itself at all times:
    Φ(t, t0) = e^{sin t - sin t0} [[1, t - t0], [0, 1]]."""
    return LTVSystem(lambda t: [[np.cos(t), 1.0], [0.0, np.cos(t)]], [[0.0], [1.0]])


@pytest.mark.parametrize("t1, t0", [(2.0, 0.0), (3.5, 0.5), (-1.0, 1.0)])
def test_triangular_closed_form(t1, t0):
    """DOP853 at rtol 1e-12: relative agreement 1e-10 (forward and backward)."""
    Phi = transition_matrix(lower_triangular(), t1, t0)
    ref = phi_lower(t1, t0)
    np.testing.assert_allclose(Phi, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


def test_commuting_closed_form_and_array_times():
    ts = np.array([-2.0, -0.5, 0.3, 0.3, 1.0, 4.0])
    Phi = transition_matrix(commuting(), ts, 0.3)
    assert Phi.shape == (6, 2, 2)
    for t, P in zip(ts, Phi):
        ref = np.exp(np.sin(t) - np.sin(0.3)) * np.array([[1.0, t - 0.3], [0.0, 1.0]])
        np.testing.assert_allclose(P, ref, rtol=1e-10, atol=1e-12)


def test_composition_and_liouville():
    s = commuting()
    P20 = transition_matrix(s, 2.0, 0.0)
    np.testing.assert_allclose(P20, transition_matrix(s, 2.0, 1.2) @ transition_matrix(s, 1.2, 0.0), rtol=1e-10)
    # det Φ = exp ∫ tr A = exp(2 (sin 2 - sin 0))
    assert np.linalg.det(P20) == pytest.approx(np.exp(2 * np.sin(2.0)), rel=1e-10)


def test_lti_uses_expm():
    ss = control.ss([[0, 1], [-4, -0.2]], [[0], [1]], np.eye(2), 0)
    np.testing.assert_allclose(transition_matrix(ss, 1.7, 0.2), expm(ss.A * 1.5), rtol=1e-14)


def test_errors():
    s = LTVSystem(lambda t: [[-1.0]], [[1.0]], t_range=(0.0, 1.0))
    with pytest.raises(TimeRangeError, match=r"t1 = 2.0 lies outside"):
        transition_matrix(s, 2.0, 0.0)
    with pytest.raises(LinearSystemError, match="rtol must lie"):
        transition_matrix(s, 0.5, 0.0, rtol=0.0)


@pytest.mark.parametrize("t1, t0", [(2.0, 0.0), (-1.0, 1.0)])
def test_magnus_method_matches_closed_form(t1, t0):
    """Magnus-6 transition matrix (refined to rtol 1e-12) vs closed form: relative 1e-10."""
    ref = phi_lower(t1, t0)
    got = transition_matrix(lower_triangular(), t1, t0, method="magnus")
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())
    ts = np.array([t0, t1])
    np.testing.assert_allclose(transition_matrix(lower_triangular(), ts, t0, method="magnus")[0], np.eye(2))


def test_transition_method_error():
    with pytest.raises(LinearSystemError, match="method must be 'ode' or 'magnus'"):
        transition_matrix(lower_triangular(), 1.0, 0.0, method="rk4")
