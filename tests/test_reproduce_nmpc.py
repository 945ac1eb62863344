"""``nhcontrol reproduce nmpc``: the documented keys, bounds kept, every
sample solved (no fallback), RTI's final error within 10 % of SQP's; the maximum error is the
initial offset (t = 0 included) and the diagnostic RTI with the plant's ball tracks far closer. Run in quick mode (3 s of
the ball-plate, looser tolerances on the lane change); marked slow (a few seconds of CPU)."""

from __future__ import annotations

import pytest

from nhcontrol.reproduce import TARGETS


def test_registered():
    assert TARGETS["nmpc"][0] == "nmpc"


@pytest.mark.slow
def test_reproduce_nmpc_quick(tmp_path):
    from nhcontrol.reproduce import nmpc

    r = nmpc.run(out=tmp_path, quick=True)
    for key in ("ltv_mpc", "rti", "sqp"):
        v = r["ball_plate"][key]
        assert {"final_error_m", "max_error_m", "median_step_s", "max_step_s", "bounds_respected",
                "statuses"} <= set(v)
        assert v["bounds_respected"] and set(v["statuses"]) == {"optimal"}
        assert v["final_error_m"] < 0.05           # closer than the 5 cm start
    bpn = r["ball_plate"]
    for key in ("ltv_mpc", "rti", "sqp", "rti_true_ball"):
        v = bpn[key]
        # max_error_m includes t = 0: the initial offset, the same for every controller
        assert v["max_error_m"] == pytest.approx(v["initial_error_m"]) == pytest.approx(0.05)
        assert v["rms_error_after_1s_m"] <= v["max_error_after_1s_m"]
    # what is left of the error is the ball's size, not the linearization: with the plant's
    # ball in its model the same RTI tracks an order of magnitude closer after 1 s
    assert bpn["rti_true_ball"]["max_error_after_1s_m"] < 0.2 * bpn["rti"]["max_error_after_1s_m"]
    h = bpn["sqp"]["kkt_history_at_1s"]
    assert len(h) >= 2 and h[-1] < 1e-3 * h[0]
    lc = r["lane_change"]["rti"]
    assert {"max_lateral_error_m", "peak_steer_rate_deg_s", "bounds_respected", "median_step_s"} <= set(lc)
    assert lc["bounds_respected"] and lc["max_lateral_error_m"] < 0.15
    assert r["goals"]["rti_final_error_within_10pct_of_sqp"]
    assert len(r["figures"]) == 3 and all((tmp_path / f).exists() for f in r["figures"])
    assert "Ball-plate circle" in nmpc.summary(r)
    far = r["ball_plate_far"]
    assert set(far) == set(nmpc.FAR_CONTROLLERS) | {"settings"}
    assert r["goals"]["far_rti_rms_error_after_transient_20pct_below_ltv_mpc"]
    assert r["goals"]["far_sqp_every_step_converged"]


def test_far_from_the_nominal_linearization_rti_beats_ltv_mpc():
    """``ball_plate_far`` shortened to 2.2 s (RTI and LTV-MPC only): with the ball's yaw and
    roll 45° off the reference, RTI (re-linearizing at the actual orientation) has at least 20 %
    less error over [1.5, 2.2] s than the LTV-MPC about the nominal linearization (full 6 s run:
    RMS 2.20 mm against 51.3 mm, SQP 2.44 mm)."""
    from nhcontrol.reproduce import nmpc

    out, _ = nmpc._ball_plate(True, r_scale=1.0, angles_deg=nmpc.FAR_ANGLES_DEG, t_final=2.2,
                              transient_s=nmpc.FAR_TRANSIENT_S, names=("ltv_mpc", "rti"))
    rti, ltv = out["rti"], out["ltv_mpc"]
    assert set(rti["statuses"]) == {"optimal"} and rti["bounds_respected"]
    assert rti["rms_error_after_1s_m"] <= 0.8 * ltv["rms_error_after_1s_m"]
    assert rti["max_error_after_1s_m"] <= 0.8 * ltv["max_error_after_1s_m"]
