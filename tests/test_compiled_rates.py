"""The rates of first-order states as a generated kernel (``rate_terms``).

A pressure ``z`` filled through a throttle (laminar/turbulent blend, a ``Piecewise`` of
`turbulent_laminar_flow`) and emptied by a piston ``x``: ``ż = B/V (Q(p_s − z) − A ẋ)``.
References: the closed-form rate and its derivatives in each branch (tolerance 1e-14 relative,
a few roundings); the C and Python kernels, one point and N points: identical bits (the same
printed arithmetic, tolerance zero).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.compiled import compile_rates
from nhcontrol.compiled.model import generate_source
from nhcontrol.modeling import MultibodySystem
from nhcontrol.modeling.hydraulics import turbulent_laminar_flow
from _helpers import require_c_backend

P = dict(m=3.0, k=50.0, B=1.2e9, V=1e-4, A=2e-3, Cv=2e-7, ps=1e7)
DP_LIM = 2e5


def _piston():
    mb = MultibodySystem("throttle_piston")
    x = mb.add_coordinates("x")
    m, k, B, V, A, Cv, ps = mb.add_parameters(**P)
    z = mb.add_first_order_states("z")
    mb.add_inputs("w")
    body = mb.add_body("piston", mass=m, inertia=sp.zeros(3, 3), position=sp.Matrix([x, 0, 0]))
    mb.add_force(body, sp.Matrix([A * z - k * x, 0, 0]))
    mb.set_rates({z: B / V * (turbulent_laminar_flow(Cv, ps - z, DP_LIM) - A * mb.velocities[0])})
    return mb


def _closed_form(z, xd):
    """``(ż, ∂ż/∂ẋ, ∂ż/∂z)`` in the branch of ``dp = ps − z``."""
    dp, c = P["ps"] - z, P["B"] / P["V"]
    if abs(dp) <= DP_LIM:
        q, dq = P["Cv"] / math.sqrt(DP_LIM) * dp, P["Cv"] / math.sqrt(DP_LIM)
    elif dp > DP_LIM:
        q, dq = P["Cv"] * math.sqrt(dp), P["Cv"] / (2 * math.sqrt(dp))
    else:
        q, dq = -P["Cv"] * math.sqrt(-dp), P["Cv"] / (2 * math.sqrt(-dp))
    return c * (q - P["A"] * xd), -c * P["A"], -c * dq


@pytest.fixture(scope="module")
def kernels():
    mb = _piston()
    return mb, compile_rates(mb, backend="python", cache=False), compile_rates(mb)


# z: laminar, at the branch point dp = 0 (turbulent branches singular there), turbulent both ways
ZS = [P["ps"] - 1e5, P["ps"], P["ps"] - 3e6, P["ps"] + 4e6]


@pytest.mark.parametrize("z", ZS)
def test_rate_terms_exact_in_every_branch(kernels, z):
    _, py, _ = kernels
    h, h_xd, h_z = _closed_form(z, 0.7)
    assert py.rates([0.1], [0.7], [z], [0.0])[0] == pytest.approx(h, rel=1e-14, abs=1e-14 * abs(h_xd))
    J = py.jacobians([0.1], [0.7], [z], [0.0])
    assert J.H_x.tolist() == [[0.0]] and J.H_u.tolist() == [[0.0]]
    assert J.H_xd[0, 0] == pytest.approx(h_xd, rel=1e-14)
    assert J.H_z[0, 0] == pytest.approx(h_z, rel=1e-14)


def test_c_and_python_kernels_identical(kernels):
    _, py, c = kernels
    require_c_backend(c.model.backend)
    X, XD = np.full((4, 1), 0.1), np.linspace(-1.0, 1.0, 4)[:, None]
    U = np.c_[ZS, np.zeros(4)]
    many_py, many_c = py.model.rate_terms(X, XD, U), c.model.rate_terms(X, XD, U)
    for j in range(4):
        one_py, one_c = py.model.rate_terms(X[j], XD[j], U[j]), c.model.rate_terms(X[j], XD[j], U[j])
        for f in ("H", "dH_dx", "dH_dxd", "dH_du"):
            ref = getattr(one_py, f)
            assert np.array_equal(getattr(one_c, f), ref), f
            assert np.array_equal(getattr(many_c, f)[j], ref), f
            np.testing.assert_allclose(getattr(many_py, f)[j], ref, rtol=1e-15, atol=0)


def test_rates_are_a_cached_kernel_of_the_model(kernels, tmp_path):
    mb, _, _ = kernels
    src = generate_source(mb, key="k" * 64)
    assert "def rate_terms_s(" in src and " if " in src and "numpy.where(" in src
    first = compile_rates(mb, cache_dir=tmp_path)
    again = compile_rates(_piston(), cache_dir=tmp_path)
    assert again.model is first.model or again.model.from_cache


def test_rate_terms_refused_without_first_order_states():
    mb = MultibodySystem("plain")
    x = mb.add_coordinates("x")
    mb.add_body("b", mass=1.0, inertia=sp.zeros(3, 3), position=sp.Matrix([x, 0, 0]))
    with pytest.raises(ModelError, match="has no first-order states"):
        mb.compile(backend="python", cache=False).rate_terms([0.0], [0.0])
