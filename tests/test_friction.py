"""Friction utilisation from the constraint multipliers (nhcontrol.reference.friction_utilisation).

Closed form (derived in docs/theory/road_vehicles.md, "Friction utilisation"): a skate
single-track vehicle on a steady circle of rear-axle radius ``R`` at rear-axle speed ``v`` with
front steer ``γ`` (``force`` variant with ``γ`` assigned: chassis mass ``m`` only; the rear
driving force ``F_R = F_f sin γ − m ω² b`` along ``i_1`` keeps the speed constant). ``G`` moves on a circle about the
turn centre, which lies at ``R`` along ``j_1`` from the rear axle, so ``a_G · j_1 = v² / R``; the
lateral and yaw balances give ``F_r = m v²/R · a/L`` and ``F_f cos γ = m v²/R · b/L``.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from nhcontrol.models import single_track as st
from nhcontrol.reference import (FrictionError, Reference, friction_utilisation,
                                 wheel_contacts)

V, GAMMA = 15.0, math.radians(4.0)


@pytest.fixture(scope="module")
def kin():
    return st.build("force").system.compile()


def _circle(cm):
    """The steady turn of the kinematic skate: rear axle on the circle of radius R = L / tan γ."""
    p = dict(zip(cm.parameters, cm.param_vector()))
    a, b = p["a"], p["b"]
    L = a + b
    R = L / math.tan(GAMMA)
    w = V / R

    def fx(t):
        t = np.atleast_1d(t)
        psi = w * t
        return np.column_stack([R * np.sin(psi) + b * np.cos(psi),
                                R * (1 - np.cos(psi)) + b * np.sin(psi), psi])

    def fxd(t):
        t = np.atleast_1d(t)
        psi = w * t
        return np.column_stack([w * (R * np.cos(psi) - b * np.sin(psi)),
                                w * (R * np.sin(psi) + b * np.cos(psi)), np.full_like(t, w)])

    def fxdd(t):
        t = np.atleast_1d(t)
        psi = w * t
        return np.column_stack([-w ** 2 * (R * np.sin(psi) + b * np.cos(psi)),
                                w ** 2 * (R * np.cos(psi) - b * np.sin(psi)), np.zeros_like(t)])

    m = p["m"]
    F_r, F_f = m * V ** 2 / R * a / L, m * V ** 2 / R * b / L / math.cos(GAMMA)
    u0 = np.array([F_f * math.sin(GAMMA) - m * w ** 2 * b, 0.0, GAMMA, 0.0])
    ref = Reference.from_functions(cm, fx, fxd, fxdd, u=lambda t: np.tile(u0, (np.size(t), 1)),
                                   t_range=(0.0, 3.0))
    return ref, R, F_r, F_f, u0


def test_skate_steady_circle_closed_form(kin):
    """The multipliers of the reference (inverse dynamics) are the closed-form lateral forces to
    round-off; the utilisation divides them by μ times the static load split."""
    ref, R, F_r, F_f, u0 = _circle(kin)
    assert wheel_contacts(kin) == {"rear": (("rear_skate",), None), "front": (("front_skate",), None)}
    loads = st.static_axle_loads(kin)
    p = dict(zip(kin.parameters, kin.param_vector()))
    L = p["a"] + p["b"]
    assert math.isclose(loads["rear"], 9.81 * p["m"] * p["a"] / L, rel_tol=1e-15)
    assert math.isclose(loads["rear"] + loads["front"], 9.81 * p["m"], rel_tol=1e-15)
    fu = friction_utilisation(kin, ref, 0.9, normal_loads=loads, t=np.linspace(0, 3, 7))
    assert fu.wheels == ("rear", "front")
    assert np.allclose(fu.tangential[:, 0], F_r, rtol=1e-10)
    assert np.allclose(fu.tangential[:, 1], F_f, rtol=1e-10)
    assert np.allclose(fu.utilisation, fu.tangential / (0.9 * np.array([loads["rear"], loads["front"]])),
                       rtol=1e-14)
    # the skates' utilisations: (v²/R)(a/L)/(μ g a/L) = v²/(R μ g) at the rear, / cos γ at the front
    assert math.isclose(fu.utilisation[0, 0], V ** 2 / (R * 0.9 * 9.81), rel_tol=1e-10)
    assert fu.peak_wheel == "front" and fu.valid == (fu.peak <= 1.0)
    s = fu.summary()
    assert s["peak_friction_utilisation"] == fu.peak and set(s["per_wheel"]) == {"rear", "front"}


def test_simulation_and_trajectory_sources(kin):
    """The same forces from a forward simulation started on the circle (its multipliers) and
    from a bare trajectory t, x, xd, u (Eq. (2.119) solved at each sample)."""
    from nhcontrol.simulate import forward_dynamics

    ref, R, F_r, F_f, u0 = _circle(kin)
    loads = st.static_axle_loads(kin)
    sim = forward_dynamics(kin, (0.0, 2.0), ref.x(0.0), ref.xd(0.0), u=lambda t: u0,
                           rtol=1e-10, atol=1e-12, t_eval=np.linspace(0, 2, 9))
    fu = friction_utilisation(kin, sim, 0.9, normal_loads=loads)
    assert np.allclose(fu.tangential, [F_r, F_f], rtol=1e-6)
    traj = SimpleNamespace(t=sim.t, x=sim.x, xd=sim.xd, u=sim.u)
    fu2 = friction_utilisation(kin, traj, 0.9, normal_loads=loads)
    assert np.allclose(fu2.tangential, fu.tangential, rtol=1e-9)


def test_friction_errors(kin):
    ref, *_ = _circle(kin)
    with pytest.raises(FrictionError, match="no normal constraint.*static_axle_loads"):
        friction_utilisation(kin, ref, 0.9)
    with pytest.raises(FrictionError, match="mu must be a positive"):
        friction_utilisation(kin, ref, 0.0, normal_loads={"rear": 1.0, "front": 1.0})
    with pytest.raises(FrictionError, match="unknown wheels"):
        friction_utilisation(kin, ref, 0.9, normal_loads={"left": 1.0})
    with pytest.raises(FrictionError, match="not constraints of the model"):
        friction_utilisation(kin, ref, 0.9, normal_loads={"w": 1.0},
                             wheels={"w": (["P_vx"], None)})
    with pytest.raises(FrictionError, match="positive and finite"):
        friction_utilisation(kin, ref, 0.9, normal_loads={"rear": 1.0, "front": -1.0})


def test_bicycle_normal_loads_from_multipliers():
    """Benchmark bicycle (vertical dynamics): the normal loads are |Λ_z| of the contacts, equal
    to the static wheel loads in steady forward motion, where no horizontal force acts."""
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model()
    ref = bb.steady_forward(cm, 4.0)
    assert wheel_contacts(cm) == {"P": (("P_vx", "P_vy"), "P_z"), "Q": (("Q_vx", "Q_vy"), "Q_z")}
    fu = friction_utilisation(cm, ref, 0.9, t=[0.0, 0.5])
    assert np.allclose(fu.normal, bb.static_wheel_loads(), rtol=1e-12)
    assert np.max(np.abs(fu.tangential)) < 1e-9 * np.max(fu.normal) and fu.peak < 1e-9


def test_rigid_wheels_longitudinal_forces():
    """Rigid wheels (rigid_force variant): the rolling constraints' multipliers are the
    longitudinal contact forces. Straight acceleration under a rear axle torque M from rolling:
    a = (M / r) / (m + 2 m_w + 2 J_w / r²); the rear contact pushes F_r = M / r − J_w a / r², the
    front one spins its wheel up with F_f = J_w a / r² (closed form, derived here)."""
    from nhcontrol.simulate import forward_dynamics

    cm = st.build("rigid_force").system.compile()
    assert wheel_contacts(cm) == {"rear": (("rear_lateral", "rear_rolling"), None),
                                  "front": (("front_lateral", "front_rolling"), None)}
    p = dict(zip(cm.parameters, cm.param_vector()))
    M, V0, r = 300.0, 10.0, p["r_w"]
    sim = forward_dynamics(cm, (0.0, 1.0), [0, 0, 0, 0, 0], [V0, 0, 0, V0 / r, V0 / r],
                           u=lambda t: [M, 0.0, 0.0, 0.0], t_eval=np.linspace(0, 1, 5))
    fu = friction_utilisation(cm, sim, 0.9, normal_loads=st.static_axle_loads(cm))
    a = M / r / (p["m"] + 2 * p["m_w"] + 2 * p["J_w"] / r ** 2)
    assert np.allclose(fu.tangential, [M / r - p["J_w"] * a / r ** 2, p["J_w"] * a / r ** 2],
                       rtol=1e-8)
    assert np.max(np.abs(fu.components["rear_lateral"])) < 1e-9
    loads = st.static_axle_loads(cm)
    assert loads["rear"] == pytest.approx(9.81 * (p["m"] * p["a"] / (p["a"] + p["b"]) + p["m_w"]))
