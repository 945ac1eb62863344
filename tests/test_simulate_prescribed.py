"""``prescribed_motion``: inputs that realise prescribed coordinates (inverse dynamics of a partly
prescribed motion), checked against thesis Eq. (2.112) solved independently on the result."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import MultibodySystem, contacts, rot_z
from nhcontrol.reference import inverse_dynamics
from nhcontrol.simulate import consistent_initial_conditions, prescribed_motion


@pytest.fixture(scope="module")
def sled():
    """Knife-edge sled with a steering torque T and a push force F (n = 3, l = 1, k = 2)."""
    mb = MultibodySystem("pushed_sled")
    x, y, psi = mb.add_coordinates("x y psi")
    m, I_zz, a = mb.add_parameters(m=4.0, I_zz=0.3, a=0.25)
    T, F = mb.add_inputs("T F")
    R = rot_z(psi)
    c = sp.Matrix([x, y, 0])
    body = mb.add_body("sled", mass=m, inertia=sp.diag(I_zz / 2, I_zz / 2, I_zz), position=c, orientation=R)
    contacts.knife_edge(mb, body, c + R * sp.Matrix([a, 0, 0]), (1, 0, 0), name="edge")
    mb.add_generalized_force([F * sp.cos(psi), F * sp.sin(psi), T])
    return mb.compile()


def _sine(a, w):
    return lambda t: (a * math.sin(w * t), a * w * math.cos(w * t), -a * w * w * math.sin(w * t))


def test_prescribed_heading_torque_matches_eq_2_112(sled):
    cm = sled
    ic = consistent_initial_conditions(cm, [0.0, 0.0, 0.0], [1.0, 0.0, 0.6], independent=["x", "psi"])
    res = prescribed_motion(cm, (0.0, 2.0), ic.x, ic.xd, {"psi": _sine(0.3, 2.0)}, inputs=["T"],
                            t_eval=np.linspace(0.0, 2.0, 41))
    psi_ref = 0.3 * np.sin(2.0 * res.t)
    assert np.max(np.abs(res.x[:, 2] - psi_ref)) < 1e-8
    assert np.all(res.u[:, 1] == 0.0) and np.max(np.abs(res.u[:, 0])) > 0.1
    # Eq. (2.112) on the simulated motion, T unknown (A_tau = e_psi): the same torque, no residual
    inv = inverse_dynamics(cm, res.x, res.xd, res.xdd, actuation=np.array([[0.0], [0.0], [1.0]]))
    np.testing.assert_allclose(inv.tau[:, 0], res.u[:, 0], rtol=0, atol=1e-7 * np.max(np.abs(res.u)))


def test_two_prescriptions_two_inputs(sled):
    cm = sled
    ic = consistent_initial_conditions(cm, [0.0, 0.0, 0.0], [1.0, 0.0, 0.6], independent=["x", "psi"])
    speed = lambda t: (t + 0.25 * t * t, 1.0 + 0.5 * t, 0.5)        # noqa: E731  accelerating
    res = prescribed_motion(cm, (0.0, 1.0), ic.x, ic.xd, {"psi": _sine(0.3, 2.0), "x": speed},
                            t_eval=np.linspace(0.0, 1.0, 21))
    assert np.max(np.abs(res.x[:, 0] - (res.t + 0.25 * res.t ** 2))) < 1e-8
    A_tau = np.zeros((res.t.size, 3, 2))
    A_tau[:, 2, 0] = 1.0
    A_tau[:, 0, 1], A_tau[:, 1, 1] = np.cos(res.x[:, 2]), np.sin(res.x[:, 2])
    inv = inverse_dynamics(cm, res.x, res.xd, res.xdd, actuation=A_tau)
    np.testing.assert_allclose(inv.tau, res.u, rtol=0, atol=1e-7 * np.max(np.abs(res.u)))


def test_errors(sled):
    cm = sled
    x0, xd0 = np.zeros(3), np.array([1.0, 0.0, 0.0])
    with pytest.raises(ModelError, match="unknown"):
        prescribed_motion(cm, (0.0, 1.0), x0, xd0, {"theta": _sine(0.1, 1.0)}, inputs=["T"])
    with pytest.raises(ModelError, match="one per prescribed"):
        prescribed_motion(cm, (0.0, 1.0), x0, xd0, {"psi": _sine(0.1, 1.0)})          # 2 inputs, 1 coordinate
    with pytest.raises(ModelError, match="callable"):
        prescribed_motion(cm, (0.0, 1.0), x0, xd0, {"psi": 0.1}, inputs=["T"])
