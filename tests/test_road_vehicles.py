"""ISO 3888-1 double lane change on the single-track skate model (showcase).

Issue 27: the lane change is drivable (15 m/s, peak lateral acceleration of G 3.88 m/s², body
inside the cones), and every run reports its friction utilisation.

Checks: the path geometry and its smoothness; the flat reference is exact (its rates are the
derivatives of its coordinates, constraints and dynamics hold); the third-procedure
linearization along the (non-steady) trajectory agrees with central differences of the
nonlinear reduced ODE; the reproduce target (quick) meets its targets (max lateral deviation
the initial 5 cm offset, under 1 cm after 1 s, MPC respects the steering bounds); the example
runs. The
assigned-steering (``force``) variant: its reference with input rates, its MPC (γ a state,
γ̇ the input) and LQR over the first 2 s, and the sampled loop with piecewise-linear inputs.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.linearization import Partition, linearize, reduced_ode_jacobian_fd
from nhcontrol.models import lane_change as lc
from nhcontrol.models import single_track as st
from nhcontrol.reproduce import TARGETS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "road_vehicle_lane_change.py"


@pytest.fixture(scope="module")
def cm():
    return st.build("force_torque").system.compile()


@pytest.fixture(scope="module")
def ref(cm):
    return lc.lane_change_reference(cm)


def test_iso_track_geometry():
    """ISO 3888-1 lanes for a car 1.8 m wide: widths 1.1 W + 0.25, 1.2 W + 0.25, 1.3 W + 0.25;
    the right-hand cone rows of lanes 1 and 3 3.5 m apart, those of lanes 1 and 5-6 aligned."""
    tr = lc.ISO_TRACK
    assert tr.boundaries == (0.0, 15.0, 45.0, 70.0, 95.0, 110.0, 125.0)
    assert np.allclose(tr.widths, (2.23, 2.41, 2.59), atol=1e-12)
    (a0, a1, y1, w1), (b0, b1, y3, w3), (c0, c1, y5, w5) = tr.lanes
    assert (a0, a1, b0, b1, c0, c1) == (0.0, 15.0, 45.0, 70.0, 95.0, 125.0)
    assert abs((y3 - w3 / 2) - (y1 - w1 / 2) - 3.5) < 1e-12          # right-hand rows 3.5 m apart
    assert abs((y5 - w5 / 2) - (y1 - w1 / 2)) < 1e-12                # lanes 1 and 5-6 aligned
    assert abs(tr.centre_offset - 3.59) < 1e-12
    cx, cy = tr.cones()
    assert cx.size == cy.size and set(np.round(cy, 9)) == {
        round(v, 9) for v in (y1 - w1 / 2, y1 + w1 / 2, y3 - w3 / 2, y3 + w3 / 2, y5 - w5 / 2, y5 + w5 / 2)}
    for X0, X1, *_ in tr.lanes:                     # cones at both ends, at most 5 m apart
        xs = np.unique(cx[(cx >= X0) & (cx <= X1)])
        assert xs[0] == X0 and xs[-1] == X1 and np.max(np.diff(xs)) <= 5.0
    with pytest.raises(ModelError, match="vehicle_width"):
        lc.Iso3888Track(vehicle_width=-1.0)


def test_iso_path_geometry():
    path = lc.iso_3888_1_path()
    h = lc.ISO_TRACK.centre_offset
    assert path.starts == (5.0, 60.0) and path.lengths == (50.0, 45.0)
    assert path.heights == (h, -h)
    X = np.array([0.0, 5.0, 55.0, 57.5, 60.0, 105.0, 125.0])
    assert np.allclose(path(X), [0, 0, h, h, h, 0, 0], atol=1e-12)
    # where the lanes end and begin the path is within 11 cm of their centre lines
    (_, _, _, _), (_, _, y3, _), (_, _, y5, _) = lc.ISO_TRACK.lanes
    dev = np.abs(path(np.array([15.0, 45.0, 70.0, 95.0])) - [0.0, y3, y3, y5])
    assert np.max(dev) < 0.11 and np.min(dev) > 0.05
    # derivatives 1..4 vanish at both ends of each transition (C4 path): one-sided limits
    for Xb in (5.0, 55.0, 60.0, 105.0):
        for k in range(1, 5):
            assert abs(path(Xb - 1e-9, k)) < 1e-6 and abs(path(Xb + 1e-9, k)) < 1e-6
    # central differences of the analytic derivatives
    Xs = np.arange(6.05, 104.1, 2.0)        # no point within h of a transition's end
    h = 1e-4
    for k in range(4):
        fd = (path(Xs + h, k) - path(Xs - h, k)) / (2 * h)
        assert np.allclose(fd, path(Xs, k + 1), rtol=1e-6, atol=1e-8)
    with pytest.raises(ModelError, match="finite"):
        lc.iso_3888_1_path(offset=float("nan"))
    with pytest.raises(ModelError, match="lead must be between 0 and 12.5 m"):
        lc.iso_3888_1_path(lead=13.0)
    old = lc.iso_3888_1_path(3.5, lead=0.0)          # the section-length transitions
    assert old.starts == (15.0, 70.0) and old.lengths == (30.0, 25.0)


def test_lane_change_is_drivable(cm, ref):
    """At 15 m/s the reference asks at most 4 m/s² of lateral acceleration of G along the body's
    lateral axis (computed 3.88 m/s²), at most 2.6° of steering, and the car's body (4.58 m x
    1.8 m) keeps more than 10 cm from the cone lines (computed 14.9 cm). The lateral acceleration
    equals V²κ of the rear-axle path plus b ψ̈ (G ahead of R): checked against that closed form."""
    assert lc.SPEED == 15.0
    t = np.linspace(0.0, 125.0 / 15.0, 8001)
    ay = lc.lateral_acceleration(ref, t)
    assert 3.8 < np.max(np.abs(ay)) <= 4.0
    x, xd, xdd = ref.x(t), ref.xd(t), ref.xdd(t)
    b = st.DEFAULTS["b"]
    # R moves along i1 at speed u = V / cos ψ: a_R·j1 = u ψ̇; a_G·j1 = a_R·j1 + b ψ̈
    u = 15.0 / np.cos(x[:, 2])
    assert np.allclose(ay, u * xd[:, 2] + b * xdd[:, 2], atol=1e-9)
    assert np.degrees(np.max(np.abs(x[:, 3]))) < 2.6
    clr = lc.cone_clearance(x, st.DEFAULTS["a"], b)
    assert 0.10 < clr < 0.16
    # the same path at 20 m/s with the section-length transitions: 24 m/s², outside the cones
    ref20 = lc.lane_change_reference(cm, 20.0, path=lc.iso_3888_1_path(lead=0.0))
    t20 = np.linspace(0.0, 125.0 / 20.0, 4001)
    assert np.max(np.abs(lc.lateral_acceleration(ref20, t20))) > 20.0


def test_flat_reference_is_exact(cm, ref):
    """ẋ0, ẍ0 of the flatness map equal central differences of x0, ẋ0 (h = 1e-5 s, error
    O(h²) ~ 1e-8 relative); the skate constraints hold to round-off, the dynamics with the
    inverse-dynamics inputs (F_F = 0) to 1e-8 relative; tan γ = L κ of the rear-axle path."""
    t = np.linspace(0.3, 6.0, 60)
    h = 1e-5
    for f, df in ((ref.x, ref.xd), (ref.xd, ref.xdd)):
        fd = (f(t + h) - f(t - h)) / (2 * h)
        assert np.allclose(fd, df(t), rtol=1e-6, atol=1e-7)
    rep = ref.check(cm, t)
    assert rep.ok and rep.max_velocity < 1e-12 and rep.max_acceleration < 1e-11
    assert np.all(ref.u(t)[:, 1] == 0.0)
    x = ref.x(t)
    a, b = st.DEFAULTS["a"], st.DEFAULTS["b"]
    path = lc.iso_3888_1_path()
    X_R = x[:, 0] - b * np.cos(x[:, 2])
    assert np.allclose(X_R, lc.SPEED * t, atol=1e-12)
    kappa = path(X_R, 2) / (1 + path(X_R, 1) ** 2) ** 1.5
    assert np.allclose(np.tan(x[:, 3]), (a + b) * kappa, atol=1e-14)


@pytest.fixture(scope="module")
def force_cm():
    return st.build("force").system.compile()


def test_reference_errors(cm, force_cm):
    with pytest.raises(ReferenceMotionError, match="force_torque.*use assigned_steering_reference"):
        lc.lane_change_reference(force_cm, 20.0)
    with pytest.raises(ReferenceMotionError, match="positive finite speed"):
        lc.lane_change_reference(cm, -1.0)
    with pytest.raises(ReferenceMotionError, match="'force' model.*use lane_change_reference"):
        lc.assigned_steering_reference(cm, 20.0)
    with pytest.raises(ReferenceMotionError, match="positive finite speed"):
        lc.assigned_steering_reference(force_cm, float("inf"))


def test_assigned_steering_reference(force_cm, ref):
    """The ``force`` skate with γ assigned: x, y, ψ and γ equal those of the torque-steered
    reference (same flat output); its input rates are the derivatives of its inputs (central
    differences, h = 1e-5 s: ~1e-8 relative); the constraints with Q_d − E u̇0 hold to
    round-off and the dynamics within the check tolerance (1e-9)."""
    ra = lc.assigned_steering_reference(force_cm)
    t = np.linspace(0.3, 6.0, 60)
    assert np.array_equal(ra.x(t), ref.x(t)[:, :3])
    u, ud = ra.u(t), ra.ud(t)
    assert np.array_equal(u[:, 2], ref.x(t)[:, 3]) and np.array_equal(u[:, 3], ref.xd(t)[:, 3])
    assert np.all(u[:, 1] == 0.0)
    h = 1e-5
    fd = (ra.u(t + h) - ra.u(t - h)) / (2 * h)
    assert np.allclose(fd, ud, rtol=1e-6, atol=1e-6 * np.max(np.abs(ud), axis=0))
    rep = ra.check(force_cm, t)
    assert rep.ok and rep.max_velocity < 1e-12 and rep.max_acceleration < 1e-11


@pytest.fixture(scope="module")
def assigned_setup():
    from nhcontrol.applications.lane_change import LaneChangeSettings, assigned_steering_setup

    return assigned_steering_setup(LaneChangeSettings(rtol=1e-6, atol=1e-8))


def test_assigned_steering_mpc_first_two_seconds(assigned_setup):
    """LTV-MPC on the assigned-steering skate (states [x, ẋ, y, ψ, γ], inputs [F_R, γ̇]) over
    the first 2 s (the first lane change and the 5 cm initial offset) on the mismatched plant:
    every QP optimal, |γ| ≤ 8° and |γ̇| ≤ 40°/s, lateral deviation ≤ 0.15 m (measured 5.0 cm,
    the offset; 0.5 cm after 1 s at 15 m/s); γ is continuous and ramps at the commanded rate."""
    from nhcontrol.applications.lane_change import closed_loop_assigned

    s = assigned_setup
    assert s.states == ("x", "x_d", "y", "psi", "gamma")
    assert tuple(s.ltv.inputs) == ("F_R", "F_F", "gamma_rate", "gamma_dot")
    res = closed_loop_assigned(s, "mpc", t_final=2.0)
    b, a = res["numbers"], res["arrays"]
    assert b["steps"] == 40 and b["statuses"] == {"optimal": 40}
    assert b["bounds_respected"] and b["max_lateral_error_m"] <= 0.15
    assert b["max_lateral_error_after_1s_m"] <= 0.03
    assert b["peak_steer_deg"] <= 8.0 and b["peak_steer_rate_deg_s"] <= 40.0
    # γ_{k+1} = γ_k + dt γ̇_k at the samples: the plant's steering is the MPC's integrator
    dt = s.st.dt
    g = a["u"][:, 2]
    assert np.allclose(np.diff(g), dt * a["u"][:-1, 3], atol=1e-15)
    assert np.allclose(np.interp(a["t_u"], a["t"], a["gamma"]), g, atol=1e-15)


def test_assigned_steering_lqr_first_two_seconds(assigned_setup):
    """Finite-horizon LQR (same weights, no bounds) on the assigned-steering skate over the
    first 2 s: it tracks (≤ 0.15 m; measured 5.0 cm, the offset) with the same sub-keys as the
    MPC's numbers but no solver statuses; γ continuous at the commanded rates."""
    from nhcontrol.applications.lane_change import closed_loop_assigned

    res = closed_loop_assigned(assigned_setup, "lqr", t_final=2.0)
    b, a = res["numbers"], res["arrays"]
    assert b["steps"] == 40 and "statuses" not in b
    assert b["max_lateral_error_m"] <= 0.15 and b["max_lateral_error_after_1s_m"] <= 0.05
    assert np.allclose(np.diff(a["u"][:, 2]), assigned_setup.st.dt * a["u"][:-1, 3],
                       atol=1e-15)


@pytest.mark.parametrize("name", ["closed_loop", "closed_loop_assigned"])
def test_closed_loop_kind_refused(name):
    """Both lane-change loops of the library take only the MPC or the LQR (checked before the
    setup is used)."""
    import nhcontrol.applications.lane_change as lcc
    from nhcontrol._util.errors import DesignError

    with pytest.raises(DesignError, match="kind must be 'mpc' or 'lqr', got 'pid'"):
        getattr(lcc, name)(None, "pid")


@pytest.mark.parametrize("t", [1.3, 4.2])
def test_ltv_along_lane_change_matches_finite_differences(cm, ref, t):
    """A(t), B(t) of the third procedure (exact) vs central differences of the nonlinear
    reduced ODE (h = 1e-6: agreement ~1e-6 relative) at two instants of the lane change."""
    part = Partition.from_dict({"x_ai": ["x", "gamma"], "x_ad": ["y", "psi"]})
    lin = linearize(cm, ref, part, t=t)
    fd = reduced_ode_jacobian_fd(cm, ref, part, t=t)
    assert tuple(lin.states) == tuple(fd.states) == ("x", "gamma", "x_d", "gamma_d", "y", "psi")
    assert lin.A.shape == (cm.first_order_odes,) * 2 and cm.dof == 3.0     # Table 1: 4 − 2/2
    scale = 1.0 + np.max(np.abs(lin.A))
    assert np.max(np.abs(lin.A - fd.J)) < 1e-5 * scale
    assert np.max(np.abs(lin.B - fd.B)) < 1e-5 * (1.0 + np.max(np.abs(lin.B)))


def test_registered():
    assert TARGETS["road-vehicles"][0] == "road_vehicles"


def test_reproduce_quick(tmp_path):
    """The whole target in quick mode (~10 s of CPU): keys, model table, cross-checks, and the
    lane-change targets (timings are reported, not asserted)."""
    from nhcontrol.reproduce import road_vehicles as rv

    from nhcontrol.reference import FrictionLimitWarning

    with pytest.warns(FrictionLimitWarning, match="lane_change_assigned_steering needs 1.4"):
        res = rv.run(out=tmp_path, quick=True)
    json.dumps(res)
    assert res["models"]["kinematic"]["dof"] == 1.5 and res["models"]["force_torque"]["dof"] == 3.0
    assert {m["first_order_odes"] for m in res["models"].values()} == {3, 4, 5, 6, 7, 8}
    assert [res["models"][f"rigid_{v}"]["dof"] for v in ("kinematic", "force", "torque",
                                                         "force_torque")] == [2.5, 3.0, 3.5, 4.0]
    assert set(res["appell_vs_newton_euler"]) == {"force", "torque", "force_torque"}  # quick
    assert res["appell_vs_newton_euler_max_diff"] <= 5e-13     # the README's claim
    assert res["kinematic_turning_radius_rel_error"] < 1e-8
    mpc, lqr = res["lane_change"], res["lane_change_lqr"]
    for b in (mpc, lqr):
        assert set(b) >= {"max_lateral_error_m", "rms_lateral_error_m", "peak_steer_deg",
                          "peak_steer_rate_deg_s", "median_step_s"}
        # the 5 cm initial offset is the largest deviation; 0.6 cm computed after 1 s
        assert b["max_lateral_error_m"] <= 0.0501 and b["max_lateral_error_after_1s_m"] <= 0.01
    s = res["settings"]
    assert s["V"] == 15.0                                    # the README's "at 15 m/s"
    assert mpc["bounds_respected"] and mpc["peak_steer_rate_deg_s"] <= s["steer_rate_max_deg_s"]
    assert mpc["peak_steer_deg"] <= s["steer_max_deg"]
    assert set(mpc["statuses"]) == {"optimal"}
    # the drivable lane change: 15 m/s, at most 4 m/s² (3.88 computed), inside the cones
    r = res["reference"]
    assert res["speed_m_s"] == s["V"] == 15.0
    assert 3.8 < r["peak_lateral_acceleration_m_s2"] <= 4.0
    assert 0.10 < r["cone_clearance_m"] < 0.16
    assert r["peak_steer_rate_deg_s"] < s["steer_rate_max_deg_s"]
    tr = res["track"]
    assert tr["section_lengths_m"] == [15.0, 30.0, 25.0, 25.0, 15.0, 15.0]
    assert tr["lane_offset_m"] == 3.5 and abs(tr["lane_centre_offset_m"] - 3.59) < 1e-12
    assert [t["length_m"] for t in tr["transitions"]] == [50.0, 45.0]
    assert r["max_residual"] < 1e-8
    asg = res["lane_change_assigned_steering"]
    assert set(asg) == set(mpc)
    assert asg["max_lateral_error_m"] <= 0.0501 and asg["bounds_respected"]
    assert asg["max_lateral_error_after_1s_m"] <= 0.01
    assert set(asg["statuses"]) == {"optimal"}
    assert s["assigned_steering"]["states"] == ["x", "x_d", "y", "psi", "gamma"]
    # the finite-horizon LQR on the assigned-steering skate: same sub-keys as the torque LQR
    alqr = res["lane_change_assigned_steering_lqr"]
    assert set(alqr) == set(lqr)
    assert alqr["max_lateral_error_m"] <= 0.0501 and alqr["max_lateral_error_after_1s_m"] <= 0.01
    # friction (μ = 0.9, static load split): the reference uses 47 % (a_y / (μ g) = 0.44 plus
    # the front skate's share of the yaw acceleration); the torque-steered loops 62 %; the
    # assigned-steering loops correct the 5 cm offset in their first sample at the 40°/s rate
    # limit, whose yaw acceleration needs 1.44-1.50 μN at the front skate: flagged
    assert s["mu"] == 0.9
    assert 0.44 < r["peak_friction_utilisation"] < 0.5 and r["friction"]["peak_wheel"] == "front"
    assert r["peak_friction_utilisation"] == r["friction"]["peak_friction_utilisation"]
    for b in (mpc, lqr):
        assert r["peak_friction_utilisation"] < b["peak_friction_utilisation"] < 0.7
    for b in (asg, alqr):
        assert 1.3 < b["peak_friction_utilisation"] < 1.6
    assert res["friction_warnings"] == ["lane_change_assigned_steering",
                                        "lane_change_assigned_steering_lqr"]
    assert sorted(res["figures"]) == sorted(["road_vehicles_path.png",
                                             "road_vehicles_lateral_error.png",
                                             "road_vehicles_inputs.png",
                                             "road_vehicles_friction.png",
                                             "road_vehicles_tyre_convergence.png"])
    # tyre plant: open-loop deviation from the skate model ∝ 1/C_α (fitted slope -0.976);
    # the closed loops on the tyre plant run without --quick (tests/test_tyre_plant.py, slow)
    ty = res["tyre_plant"]
    assert -1.0 < ty["convergence_slope"] < -0.95
    assert ty["convergence"]["stiffness_N_rad"][0] == 4e4 and "x1" not in ty
    assert "LTV-MPC" in rv.summary(res)


def test_example(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("road_vehicle_lane_change", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(tmp_path)
    assert out["states"] == ("x", "gamma", "x_d", "gamma_d", "y", "psi")
    assert out["max_lateral_error_m"] <= 0.0501                    # the 5 cm initial offset
    assert 3.8 < out["peak_lateral_acceleration_m_s2"] <= 4.0
    assert out["peak_steer_deg"] <= 8.0 and out["peak_steer_rate_deg_s"] <= 40.0
    assert math.isfinite(out["median_step_s"])
    b = out["assigned_steering"]
    assert b["states"] == ("x", "x_d", "y", "psi", "gamma")
    assert b["max_lateral_error_m"] <= 0.0501
    assert b["peak_steer_deg"] <= 8.0 and b["peak_steer_rate_deg_s"] <= 40.0
    printed = capsys.readouterr().out
    assert "max lateral deviation" in printed and "assigned steering" in printed
    assert (tmp_path / "road_vehicle_lane_change.png").exists()
