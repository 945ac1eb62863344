"""Hydraulic components of thesis Sect. 7.1.1 (Eqs. (7.1)–(7.8)): limit cases and closed forms."""

import math

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import hydraulics as hy


def _f(expr):
    return float(sp.N(expr, 30))


def test_effective_bulk_modulus_single_and_series():
    """Eq. (7.2): rigid walls give B_oil; two subvolumes combine as compliances in series."""
    assert _f(hy.effective_bulk_modulus(1.5e9, [(1e-4, sp.oo)])) == pytest.approx(1.5e9, rel=1e-15)
    Be = _f(hy.effective_bulk_modulus(1.5e9, [(4.71e-5, 5.5e8)]))
    assert Be == pytest.approx(1 / (1 / 1.5e9 + 1 / 5.5e8), rel=1e-14)
    Be2 = _f(hy.effective_bulk_modulus(1.5e9, [(1e-5, 5.5e8), (3e-5, 3.15e10)]))
    assert Be2 == pytest.approx(1 / (1 / 1.5e9 + 0.25 / 5.5e8 + 0.75 / 3.15e10), rel=1e-14)
    with pytest.raises(ModelError, match="at least one subvolume"):
        hy.effective_bulk_modulus(1.5e9, [])


def test_pressure_rate_continuity():
    """Eq. (7.1): B_e / V (sum Q - dV/dt)."""
    assert _f(hy.pressure_rate(1e9, 1e-4, [2e-5, -1e-5], 4e-6)) == pytest.approx(1e13 * 6e-6)


@pytest.mark.parametrize("dp", [-5e5, -2e5, -1e5, 0.0, 3e4, 2e5, 2.0000001e5, 7e5])
def test_laminar_turbulent_blend(dp):
    """Eq. (7.6): laminar below 2 bar, turbulent above, continuous at the transition, odd."""
    g2 = 2.138e-8 * 0.5
    q = _f(hy.turbulent_laminar_flow(g2, dp))
    if abs(dp) <= hy.DP_LIM:
        assert q == pytest.approx(g2 / math.sqrt(hy.DP_LIM) * dp, rel=1e-14, abs=0)
    else:
        assert q == pytest.approx(g2 * math.sqrt(abs(dp)) * np.sign(dp), rel=1e-14)
    assert _f(hy.turbulent_laminar_flow(g2, -dp)) == pytest.approx(-q, rel=1e-14, abs=0)


def test_blend_continuous_at_dp_lim():
    g2 = 1.0e-8
    lo = _f(hy.turbulent_laminar_flow(g2, hy.DP_LIM))
    hi = _f(hy.turbulent_laminar_flow(g2, hy.DP_LIM * (1 + 1e-12)))
    assert hi == pytest.approx(lo, rel=1e-11)
    assert lo == pytest.approx(g2 * math.sqrt(hy.DP_LIM), rel=1e-14)


def test_valve_and_throttle():
    """Eqs. (7.3)–(7.5): valve flow scales with U and vanishes at U = 0; Cv_t = Cd A_t sqrt(2/rho)."""
    dp = 5e5
    assert _f(hy.valve_flow(2.138e-8, 0, dp)) == 0.0
    assert _f(hy.valve_flow(2.138e-8, 0.3, dp)) == pytest.approx(0.3 * 2.138e-8 * math.sqrt(dp), rel=1e-14)
    Cvt = _f(hy.throttle_coefficient(0.8, 2.83e-5, 850))
    assert Cvt == pytest.approx(0.8 * 2.83e-5 * math.sqrt(2 / 850), rel=1e-14)
    assert _f(hy.throttle_flow(Cvt, 1e5)) == pytest.approx(Cvt / math.sqrt(2e5) * 1e5, rel=1e-14)
    assert _f(hy.spool_rate(0.2, 1.0, 0.0045)) == pytest.approx(0.8 / 0.0045)


def test_cylinder_force_and_friction():
    """Eqs. (7.7)–(7.8): force balance; Brown–McPhee is odd, zero at rest, peaks at v_s."""
    assert _f(hy.cylinder_force(2.0, 3.0, 1.0, 4.0, 0.5)) == pytest.approx(1.5)
    Fc, Fs, vs, s2 = 210.0, 830.0, 1.25e-2, 330.0
    sd = sp.Symbol("sd")
    F = hy.brown_mcphee_friction(sd, Fc, Fs, vs, s2)
    assert _f(F.subs(sd, 0)) == 0.0
    assert _f(F.subs(sd, vs)) == pytest.approx(Fc * math.tanh(4) + Fs - Fc + s2 * vs, rel=1e-14)
    assert _f(F.subs(sd, -0.03)) == pytest.approx(-_f(F.subs(sd, 0.03)), rel=1e-14)
    slope = _f(sp.diff(F, sd).subs(sd, 0))
    assert slope == pytest.approx(4 * Fc / vs + 16 * (Fs - Fc) / (9 * vs) + s2, rel=1e-14)
    # the Stribeck term's maximum is at s_dot = v_s
    r = np.linspace(0.5, 1.5, 2001)
    strib = r / (0.25 * r**2 + 0.75) ** 2
    assert r[np.argmax(strib)] == pytest.approx(1.0, abs=1e-3)
