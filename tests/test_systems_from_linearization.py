"""``LTVSystem.from_linearization``: the output of ``nhcontrol.linearize`` along a trajectory as
an LTV system.

Tolerances: the LTV system calls the same third procedure as ``linearize``, so its matrices agree
to 1e-13 (identical arithmetic up to the order of stacked evaluation); the transition-matrix check
integrates with tight tolerances and compares at 1e-9.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from nhcontrol._util.errors import PartitionError, TimeRangeError
from nhcontrol.analysis import transition_matrix
from nhcontrol.linearization import Partition, linearize
from nhcontrol.systems import LTVSystem, discretize
from test_linearize_third import P_SLEIGH, curved_reference
from test_linearize_third_toys import constant_reference, sleigh, sleigh_state


@pytest.fixture(scope="module")
def sl():
    return sleigh()


def test_matrices_equal_linearize_along_non_steady_reference(sl):
    """A(t), B(t) (scalar and vectorised) equal linearize(t) to 1e-13, with its state names."""
    ref = curved_reference(sl)
    sys = LTVSystem.from_linearization(sl, ref, P_SLEIGH)
    ts = np.array([0.0, 0.4, 1.3, 2.9])
    res = linearize(sl, ref, P_SLEIGH, t=ts)
    assert not sys.is_constant and sys.vectorized
    assert sys.states == res.states and sys.inputs == res.inputs
    assert (sys.nstates, sys.ninputs) == (5, 2)
    np.testing.assert_allclose(sys.A(ts), res.A, rtol=0, atol=1e-13)
    np.testing.assert_allclose(sys.B(ts), res.B, rtol=0, atol=1e-13)
    for i, t in enumerate(ts):
        np.testing.assert_allclose(sys.A(float(t)), res.A[i], rtol=0, atol=1e-13)
        np.testing.assert_allclose(sys.B(float(t)), res.B[i], rtol=0, atol=1e-13)
    assert np.ptp(sys.A(ts)[:, 3, 3]) > 1e-2              # really time-varying
    ss = sys.at(1.3)
    np.testing.assert_allclose(ss.A, res.A[2], rtol=0, atol=1e-13)
    assert list(ss.state_labels) == list(res.states)


def test_transition_matrix_and_discretization_of_the_linearization(sl):
    """Φ(1.5, 0.2) of the LTV linearization equals a direct solve_ivp of Ẋ = A(t) X
    (rtol 1e-12) to 1e-9, and ZOH discretization gives Ad[k] = Φ(t_{k+1}, t_k)."""
    ref = curved_reference(sl)
    sys = LTVSystem.from_linearization(sl, ref, P_SLEIGH, t_range=(0.0, 3.0))
    n = sys.nstates
    sol = solve_ivp(lambda t, y: (sys.A(t) @ y.reshape(n, n)).ravel(), (0.2, 1.5),
                    np.eye(n).ravel(), rtol=1e-12, atol=1e-14)
    Phi = np.asarray(transition_matrix(sys, 1.5, 0.2))
    np.testing.assert_allclose(Phi, sol.y[:, -1].reshape(n, n), rtol=0, atol=1e-9)
    d = discretize(sys, 0.65, t0=0.2, steps=2)
    np.testing.assert_allclose(d.Ad[1] @ d.Ad[0], Phi, rtol=0, atol=1e-9)
    with pytest.raises(TimeRangeError, match="outside the range"):
        sys.A(3.5)


def test_steady_reference_gives_a_constant_system(sl):
    """A steady reference (straight motion) gives is_constant with the matrices of linearize."""
    x0, xd0 = sleigh_state(1.2, 0.0)
    ref = constant_reference(sl, x0, xd0)
    sys = LTVSystem.from_linearization(sl, ref, {"independent": ["x", "theta"],
                                                 "admissible_dependent": ["y"], "dependent": []})
    res = linearize(sl, ref, P_SLEIGH)
    assert sys.is_constant
    np.testing.assert_array_equal(sys.A(0.7), res.A)
    np.testing.assert_array_equal(sys.B(0.7), res.B)


def test_singular_partition_raises_at_construction(sl):
    """A partition whose B̄_ad block is singular fails when the system is built, not later."""
    ref = curved_reference(sl)
    bad = Partition(["y", "theta"], ["x"], [])                # lateral constraint at θ = 0
    with pytest.raises(PartitionError, match="singular"):
        LTVSystem.from_linearization(sl, ref, bad)
