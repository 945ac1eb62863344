"""Nonlinear DAE with hydraulics (Eq. (7.97)) vs the linear 6x6 system under a torque pulse.

The linear response is exact to first order, so the difference between the two must shrink at
least like M0^2 with the pulse amplitude (a wrong input column or Jacobian would leave O(M0)).
"""

import math

import numpy as np
import pytest

from nhcontrol._util.errors import ModelError, SolverError
from nhcontrol.models import hydraulic_fourbar as hf
from nhcontrol.reproduce import hydraulic_fourbar as rep
from nhcontrol.simulate import forward_dynamics_first_order

TAU = hf.HYDRAULIC_DEFAULTS["tau_v"]


def _rates():
    return dict(z_rate=lambda x, xd, z, w: hf.circuit_rates(x, xd, z, w[0]),
                w_rate=lambda w, r: hf.spool_rates(w, r, TAU))


def test_equilibrium_is_kept_without_pulse():
    eq = hf.equilibrium(60.0)
    sim = forward_dynamics_first_order(hf.model(), (0.0, 0.02), eq.x, np.zeros(10), eq.p, [0.0],
                                       **_rates(), t_eval=[0.0, 0.01, 0.02])
    np.testing.assert_allclose(sim.x, np.tile(eq.x, (3, 1)), atol=1e-10)
    np.testing.assert_allclose(sim.z, np.tile(eq.p, (3, 1)), rtol=1e-10)
    assert sim.constraint_residual < 1e-12 and sim.w.shape == (3, 1) and sim.r.shape == (3, 1)


def test_linear_vs_nonlinear_nominal_second_order():
    """Nominal friction, pulses of 300 and 100 N m: the difference falls by more than 3^1.8."""
    res = rep.linear_vs_nonlinear((300.0, 100.0), t_end=0.03, scenarios=("nominal",))
    assert res["pulse"]["T_p_s"] == 0.02 and set(res) == {"pulse", "nominal"}
    big, small = res["nominal"]["runs"]
    assert small["phi2_rel_diff"] < 1e-2 and small["p2_rel_diff"] < 1e-2
    assert big["phi2_max_abs_diff_deg"] / small["phi2_max_abs_diff_deg"] > 3 ** 1.8
    assert res["nominal"]["abs_diff_order_in_M0"] > 1.8
    # the linear peak is proportional to M0, the nonlinear one close to it
    assert big["phi2_peak_linear_deg"] == pytest.approx(3 * small["phi2_peak_linear_deg"], rel=1e-9)
    assert big["constraint_residual"] < 1e-10


@pytest.mark.slow
def test_linear_vs_nonlinear_all_scenarios():
    """Three scenarios, 1000/300/100 N m over 0.1 s (~1 min): frictionless exactly second order,
    friction makes the remainder steeper (odd friction law), never flatter than M0^2."""
    res = rep.linear_vs_nonlinear()
    for sc in rep.RESPONSE_SCENARIOS:
        assert res[sc]["abs_diff_order_in_M0"] > 1.9
        assert res[sc]["runs"][-1]["phi2_rel_diff"] < 5e-3
    assert res["frictionless"]["abs_diff_order_in_M0"] == pytest.approx(2.0, abs=0.1)


def test_torque_generalized_force_is_virtual_power():
    """Q_M = (∂ω/∂q̇)ᵀ M X1 with ω from Ṙ Rᵀ of R2 = Rz Ry Rx (finite differences, random pose)."""
    from nhcontrol.modeling import rot_x, rot_y, rot_z
    import sympy as sp
    a, b, c = sp.symbols("a b c")
    R = sp.lambdify((a, b, c), rot_z(a) * rot_y(b) * rot_x(c), "numpy")
    q = np.array([0.3, -0.4, 1.1])
    x = np.zeros(10)
    x[3:6] = q
    h = 1e-6
    Qn = np.zeros(3)
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        Rd = (np.array(R(*(q + e))) - np.array(R(*(q - e)))) / (2 * h)
        W = Rd @ np.array(R(*q)).T
        omega = np.array([W[2, 1], W[0, 2], W[1, 0]])
        Qn[j] = omega @ np.array([2.5, 0.0, 0.0])
    np.testing.assert_allclose(hf.torque_generalized_force(x, 2.5)[3:6], Qn, atol=1e-8)


def test_pulse_and_errors():
    p = hf.TorquePulse(100.0, 0.02)
    assert p(-0.001) == 0.0 and p(0.01) == pytest.approx(100.0) and p(0.03) == 0.0
    assert np.allclose(p(np.array([0.0, 0.005])), [0.0, 100.0 * math.sin(math.pi / 4)])
    with pytest.raises(ModelError, match="positive duration"):
        hf.TorquePulse(1.0, 0.0)
    eq = hf.equilibrium(60.0)
    cm = hf.model()
    with pytest.raises(SolverError, match="stiff integrator"):
        forward_dynamics_first_order(cm, (0, 0.01), eq.x, np.zeros(10), eq.p, [0.0], **_rates(),
                                     method="RK45")
    with pytest.raises(SolverError, match="one entry per model input"):
        forward_dynamics_first_order(cm, (0, 0.01), eq.x, np.zeros(10), eq.p[:2], [0.0], **_rates())
    with pytest.raises(SolverError, match="Baumgarte"):
        forward_dynamics_first_order(cm, (0, 0.01), eq.x, np.zeros(10), eq.p, [0.0], **_rates(),
                                     baumgarte=(-1.0, 50.0))
