"""Property-based checks (hypothesis) of the ZOH discretization and of Gramians."""

from __future__ import annotations

import control
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nhcontrol.analysis import gramian
from nhcontrol.systems import LTVSystem, discretize

seeds = st.integers(min_value=0, max_value=2 ** 31 - 1)


def random_pair(seed: int, n: int, k: int):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n)) / np.sqrt(n), rng.normal(size=(n, k))


@settings(max_examples=15, deadline=None)
@given(seed=seeds, n=st.integers(1, 5), k=st.integers(1, 3), dt=st.floats(0.01, 2.0))
def test_lti_zoh_equals_sample_system(seed, n, k, dt):
    """expm of the augmented matrix vs control.sample_system: 1e-12 relative to max|Ad|."""
    A, B = random_pair(seed, n, k)
    ss = control.ss(A, B, np.eye(n), np.zeros((n, k)))
    d = discretize(ss, dt)
    sd = control.sample_system(ss, dt, method="zoh")
    scale = max(1.0, np.abs(sd.A).max())
    assert np.abs(d.Ad[0] - sd.A).max() <= 1e-12 * scale
    assert np.abs(d.Bd[0] - sd.B).max() <= 1e-12 * scale


@settings(max_examples=10, deadline=None)
@given(seed=seeds, n=st.integers(1, 4), dt=st.floats(0.05, 1.0))
def test_ltv_magnus_equals_ivp(seed, n, dt):
    """Random smooth periodic LTV: Magnus-6 and solve_ivp discretizations agree to 1e-9 (relative)."""
    A0, B0 = random_pair(seed, n, 2)
    A1, B1 = random_pair(seed + 1, n, 2)
    sys = LTVSystem(lambda t: A0 + np.cos(t) * A1, lambda t: B0 + np.sin(t) * B1)
    a = discretize(sys, dt, steps=3)
    b = discretize(sys, dt, steps=3, integrator="ivp")
    scale = max(1.0, np.abs(b.Ad).max(), np.abs(b.Bd).max())
    assert np.abs(a.Ad - b.Ad).max() <= 1e-9 * scale
    assert np.abs(a.Bd - b.Bd).max() <= 1e-9 * scale


@settings(max_examples=10, deadline=None)
@given(seed=seeds, n=st.integers(1, 4), T=st.floats(0.1, 3.0))
def test_constant_callable_gramian_equals_van_loan(seed, n, T):
    """A constant system given as callables (LTV path, Magnus) vs the LTI closed form."""
    A, B = random_pair(seed, n, 2)
    ref = gramian(control.ss(A, B, np.eye(n), np.zeros((n, 2))), 0.0, T).W
    got = gramian(LTVSystem(lambda t: A, lambda t: B), 0.0, T).W
    assert np.abs(got - ref).max() <= 1e-9 * np.abs(ref).max()
    # symmetric positive semidefinite
    assert np.allclose(got, got.T) and np.linalg.eigvalsh(got).min() >= -1e-12 * np.abs(got).max()
