"""Declared outputs through first-order states (Sect. 7.2 with MultibodySystem.add_output):
``C, D`` of `linearize_with_first_order_states` and `linearize_first_order_system` in the state
``[x̃_ai, ẋ̃_ai, x̃_ad, z̃, w̃]`` against central differences of ``h`` on the constraint
manifold (derived here, docs/theory/estimation.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nhcontrol.linearization import (linearize, linearize_first_order_system,
                                 linearize_with_first_order_states)
from nhcontrol.models import hydraulic_fourbar as hf
from nhcontrol.reference import Reference


def _fd_outputs(cm, ref, lin, t, u0, nz, steps):
    """Central differences of ``h(x(X̃), ẋ(X̃), z0 + z̃)`` in ``[X̃_mech, z̃]``; the mechanical
    part through ``lin.from_deviation`` (Newton on the constraints, dependent velocities)."""
    nm = len(lin.states)
    q = len(cm.outputs)
    J = np.zeros((q, nm + nz))

    def h(dX):
        x, xd = lin.from_deviation(ref, t, dX[:nm], cm=cm)
        u = np.array(u0, dtype=float)
        u[:nz] += dX[nm:]
        return np.asarray(cm.output(x, xd, u), dtype=float)

    for j in range(nm + nz):
        e = np.zeros(nm + nz)
        e[j] = steps[j]
        J[:, j] = (h(e) - h(-e)) / (2 * steps[j])
    return J


@pytest.fixture(scope="module")
def fourbar_sensors():
    mb = hf.build()
    q = dict(zip(hf.COORDINATES, mb.coordinates))
    p1, p2, p3 = mb.inputs
    s_d = mb.velocities[hf.COORDINATES.index("s")]
    mb.add_output("pressure_p2", p2 / 1e6)                 # a pressure transducer [MPa]
    mb.add_output("encoder_phi43", q["phi43"])              # a joint angle (dependent coordinate)
    mb.add_output("power_p2", p2 * s_d / 1e6)               # pressure times cylinder speed
    return mb.compile()


def test_fourbar_outputs_through_first_order_states(fourbar_sensors):
    """Hydraulic four-bar (n = 10, m = 9) at the 60° equilibrium, the pressures as first-order
    states z beside the model and the spool U as w: C = [mechanical columns through the
    partition, ∂h/∂z, 0] equals central differences on the manifold; D (the spool reference)
    is zero."""
    cm = fourbar_sensors
    eq = hf.equilibrium(60.0)
    ref = Reference.equilibrium(cm, eq.x, u=eq.p)
    res = linearize_with_first_order_states(cm, ref, hf.PARTITION,
                                            **hf.circuit_jacobians(eq).as_kwargs())
    assert res.outputs == ("pressure_p2", "encoder_phi43", "power_p2")
    assert res.states == hf.STATES and res.C.shape == (3, 6) and res.D.shape == (3, 1)
    lin = linearize(cm, ref, hf.PARTITION)
    fd = _fd_outputs(cm, ref, lin, 0.0, eq.p, 3, [1e-5, 1e-5, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(res.C[:, :5], fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(res.C[:, 5], 0.0)          # the spool is not measured
    np.testing.assert_array_equal(res.D, 0.0)
    assert res.C[0, 3] == pytest.approx(1e-6)                # the pressure sensor reads z
    assert abs(res.C[1, 0]) > 0.1                            # phi43 moves with phi2
    assert abs(res.C[2, 1]) > 1e-3 and abs(res.C[2, 3]) == 0.0   # at rest: p2 ∂ṡ/∂φ̇2 only
    # the mechanical columns are those of linearize
    np.testing.assert_allclose(res.C[:, :2], lin.C, rtol=1e-12, atol=1e-15)


def _sleigh_motor_sensors():
    from _toy_models import SLEIGH, sleigh_motor

    P = SLEIGH
    mb, s = sleigh_motor("sleigh_motor_sensors")
    V, R, i, yd, psi = s.V, s.R, s.i, s.yd, s.psi
    mb.add_output("motor_power", (V - R * i) * i)            # depends on z and an input
    mb.add_output("lateral_speed", yd * i)                   # a dependent velocity times z
    mb.add_output("heading", psi)
    return mb, P


def test_first_order_system_outputs_moving_reference():
    """A model with its first-order state inside (sleigh with a DC motor current i, l = 1) on a
    steady straight run: C in [x̃_ai, ẋ̃_ai, x̃_ad, ĩ] and D for the other inputs [V, τ] equal
    central differences (the dependent velocity ẏ through the blade constraint)."""
    from nhcontrol.compiled import compile_rates

    mb, P = _sleigh_motor_sensors()
    cm, rk = mb.compile(), compile_rates(mb)
    part = dict(independent=["x", "psi"], admissible_dependent=["y"], dependent=[])
    psi0, v = 0.3, 1.2
    i0 = P["c"] * v / P["kt"]
    u0 = np.array([i0, P["R"] * i0 + P["ke"] * v, 0.0])
    ref = Reference.constant_velocity(cm, [0.1, -0.2, psi0],
                                      [v * math.cos(psi0), v * math.sin(psi0), 0.0], u=u0)
    res = linearize_first_order_system(cm, rk, ref, part, t=0.4)
    assert res.C.shape == (3, 6) and res.D.shape == (3, 2)
    lin = linearize(cm, ref, part, 0.4)
    fd = _fd_outputs(cm, ref, lin, 0.4, u0, 1, [1e-6] * 6)
    np.testing.assert_allclose(res.C, fd, rtol=1e-7, atol=1e-9)
    # D: the other inputs V, tau (motor power = (V - R i) i: ∂/∂V = i0)
    np.testing.assert_allclose(res.D, [[i0, 0.0], [0.0, 0.0], [0.0, 0.0]], atol=1e-14)
    assert abs(res.C[1, 5]) > 0.1                             # ẏ i: the current column
    # stacked times: the per-time matrices
    both = linearize_first_order_system(cm, rk, ref, part, t=[0.4, 0.9])
    np.testing.assert_allclose(both.C[0], res.C, rtol=1e-12, atol=1e-15)
    assert both.C.shape == (2, 3, 6) and both.D.shape == (2, 3, 2)
