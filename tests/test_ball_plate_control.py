"""Ball-plate closed loops (thesis Ch. 8): example, invariants, and the reproduce target.

Published numbers: Ω ≃ 10.0382 rad/s (φ0 = 5°) and 12.2077 rad/s (φ0 = 35°) (Sect. 8.4.5, four
decimals → tolerance 5e-5); Gramian and Silverman–Meadows rank 7 of 8 for Eq. (8.74). The
closed-loop targets (contact point within 5 mm of the circle after 20 s, |α|, |β| ≤ 10° for the
MPC) are those of the issue; the thesis prints no closed-loop numbers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import runpy
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ball_plate_circle.py"


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    out = tmp_path_factory.mktemp("bp_example")
    buf = io.StringIO()
    mod = runpy.run_path(str(EXAMPLE), run_name="example")
    with contextlib.redirect_stdout(buf):
        nums = mod["main"](out, 6.0)
    return nums, buf.getvalue(), out


def test_example_headlines(example):
    """6 s of the example: both controllers pull C from 87.7 mm to < 15 mm of the circle.

    (The 20 s target of 5 mm is checked on the reproduce target, marked slow.) The LQR tilts the
    plate beyond 10° and jumps by several degrees per sample; the MPC keeps |α|, |β| ≤ 10° and
    its steps ≤ 0.5° per sample (no bang-bang chattering), to the OSQP tolerance (1e-4 deg).
    """
    nums, text, out = example
    for name in ("LQR", "MPC"):
        assert nums[name]["initial_error_m"] == pytest.approx(0.0877, abs=1e-4)
        assert nums[name]["final_error_m"] < 0.015
        assert f"{name}: contact point" in text
    assert nums["LQR"]["peak_input_deg"] > 12.0
    assert nums["MPC"]["peak_input_deg"] <= 10.0 + 1e-4
    assert nums["MPC"]["max_input_step_deg"] <= 0.5 + 1e-4
    assert nums["LQR"]["max_input_step_deg"] > 2.0
    for f in nums["figures"]:
        assert Path(f).is_file() and Path(f).stat().st_size > 1000


def _pieces(phi0=5.0, steps_per_period=63):
    from nhcontrol.models import ball_plate as bp
    from nhcontrol.reproduce import ball_plate as rb

    st = dataclasses.replace(rb.QUICK, t_final=6.0, steps_per_period=steps_per_period)
    cm = bp.model()
    x0, xd0 = bp.initial_conditions(cm, phi0)
    return bp, rb, st, cm, x0, xd0


def test_mpc_with_inactive_bounds_equals_lqr_on_ball_plate():
    """Unconstrained MPC with the Riccati terminal weight P_N = LQR on the 7-state model (1e-6).

    OSQP at eps 1e-10; the first move and the whole predicted input sequence are compared with
    the finite-horizon gains K_j of the same discrete LTV system.
    """
    from nhcontrol.design import LTVMPC, window

    bp, rb, st, cm, x0, xd0 = _pieces()
    f = rb._formulation(bp, cm, 5.0, st, reduced=True, ref=bp.spin_matched_motion(cm, x0, xd0))
    N = 15
    Z = f["reduce"](bp.deviation(f["ref"], 0.0, x0, xd0))
    mpc = LTVMPC(N, f["Q"], f["R"], f["lqr"].P[N],
                 solver_options=dict(eps_abs=1e-10, eps_rel=1e-10, max_iter=200000))
    Ad, Bd = window(f["discrete"], 0, N)
    step = mpc.step(Z, Ad, Bd)
    z = Z.copy()
    scale = np.max(np.abs(f["lqr"].control(0, Z)))
    for j in range(N):
        u = f["lqr"].control(j, z)
        np.testing.assert_allclose(step.predicted_u[j], u, atol=1e-6 * scale)
        z = Ad[j] @ z + Bd[j] @ u


def test_eight_state_loop_conserves_spin_and_misses_lean_angle():
    """8-state (uncontrollable) LQR at φ0 = 35°: the spin ω_n is conserved (1e-5 rad/s) and φ
    stays > 4° away from φ0 after 6 s, as in Fig. 8.4 (b); C is not on the circle (> 1 cm)."""
    bp, rb, st, cm, x0, xd0 = _pieces(35.0)
    f = rb._formulation(bp, cm, 35.0, st, reduced=False)
    run = rb.closed_loop_nonlinear(cm, f["ref"], x0, xd0, rb._lqr_law(bp, f), f["dt"], st)
    wn = run.xd[:, 2] + run.xd[:, 4] * np.sin(run.x[:, 3])
    assert np.max(np.abs(wn - wn[0])) < 1e-5
    assert abs(math.degrees(run.x[-1, 3]) - 35.0) > 4.0
    assert rb.contact_error(f["motion"], run.x)[-1] > 0.01
    assert run.u.shape == (run.t_u.size, 2) and run.step_times.size == run.t_u.size


@pytest.fixture(scope="module")
def quick_result(tmp_path_factory):
    from nhcontrol.cli import main

    out = tmp_path_factory.mktemp("bp_reproduce")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["reproduce", "ball-plate", "--json", "--quick", "--out", str(out)]) == 0
    return json.loads(buf.getvalue()), out


@pytest.mark.slow
def test_reproduce_quick_json_and_headlines(quick_result):
    """`nhcontrol reproduce ball-plate --quick --json --out`: keys, ranks, Ω, closed-loop targets."""
    r, out = quick_result
    assert r["Omega"]["5"] == pytest.approx(10.0382, abs=5e-5)
    assert r["Omega"]["35"] == pytest.approx(12.2077, abs=5e-5)
    assert r["gramian_rank"] == 7 and r["silverman_meadows_rank"] == 7
    sv = r["gramian_singular_values"]
    assert len(sv) == 8 and sv[-1] < r["gramian_tol"] < sv[-2]
    cf = r["controllable_formulation"]
    assert cf == {**cf, "nstates": 7, "gramian_rank": 7, "silverman_meadows_rank": 7}
    for key in ("5", "35"):
        for ctrl in ("lqr", "mpc"):
            b = r[ctrl][key]
            assert b["final_error_m"] < 0.005 < b["max_error_m"]
        assert r["mpc"][key]["peak_input_deg"] <= 10.0 + 1e-4
        assert r["mpc"][key]["max_input_step_deg"] <= 2.0 + 1e-4   # MPC_RATE_BOUND_DEG
        assert r["mpc"][key]["median_step_s"] > 0
        assert set(r["mpc"][key]["statuses"]) == {"optimal"}
        assert r["linear_vs_nonlinear"][key]["relative_difference"] < 0.05
        # after the transient the bounded MPC and the LQR coincide (bounds inactive)
        assert (r["mpc"][key]["max_error_after_transient_m"]
                <= r["lqr"][key]["max_error_after_transient_m"] + 1e-6)
        act = r["mpc"][key]["constraint_activity"]
        assert act["steps_with_fallback_or_held"] == 0 and 0 < act["first_1s"]["rate_active"] < 1
    dg = r["mpc_diagnosis"]
    assert {"adopted", "rate_0.5_deg", "thesis_deviation"} <= set(dg)
    assert dg["adopted"]["error_at_0.8s_m"] < dg["rate_0.5_deg"]["error_at_0.8s_m"]
    unc = r["uncontrollable_lqr"]
    assert unc["35"]["final_error_m"] > 0.01                      # Fig. 8.4 (a)
    assert abs(unc["35"]["final_phi_deg"] - 35.0) > 4.0            # Fig. 8.4 (b)
    assert abs(unc["5"]["final_phi_deg"] - 5.0) > 1.0              # Fig. 8.2 (b)
    for name in r["figures"]:
        assert (out / name).is_file()
    assert (out / "ball-plate.json").is_file()
    from nhcontrol.reproduce.ball_plate import summary

    assert "Gramian rank 7/8" in summary(r)


def test_reoriented_state_keeps_constraints_spin_and_contact_motion():
    """``ball_plate.reoriented_state`` (derived here): same angular velocity, spin and contact
    velocity, the rolling constraints hold, and the nonlinear plant from the reoriented state
    moves its contact point as from the measured one (the orientation of a homogeneous ball is
    ignorable): 0.3 s with the reference's plate angles, agreement to the integration tolerance."""
    from nhcontrol.models import ball_plate as bp
    from nhcontrol.simulate import forward_dynamics

    cm = bp.model()
    ref = bp.circular_motion(cm, 5.0)
    x, xd = bp.initial_conditions(cm, 5.0)
    x = np.array(x, float)
    x[2:5] += [0.7, -0.9, 2.0]                      # 40, -52, 115 deg off the reference angles
    from nhcontrol.reference import consistent_initial_conditions
    ic = consistent_initial_conditions(cm, x, xd, independent=("x_C", "y_C", "psi"))
    x, xd = np.asarray(ic.x), np.asarray(ic.xd)
    xr, xdr = bp.reoriented_state(ref, 0.2, x, xd)
    assert np.allclose(xr[2:5], np.asarray(ref.x(0.2))[2:5]) and np.allclose(xr[:2], x[:2])
    spin = lambda q, qd: qd[2] + qd[4] * np.sin(q[3])        # ω_n = ψ̇ + θ̇ sin φ
    assert spin(xr, xdr) == pytest.approx(spin(x, xd), rel=1e-12)
    u = np.asarray(ref.u(0.2), float)
    res = lambda q, qd: np.asarray(cm.B(q, u)) @ qd + np.asarray(cm.b(q, u)).ravel()  # B ẋ + b
    assert np.abs(res(xr, xdr)).max() < 1e-12 and np.abs(res(x, xd)).max() < 1e-12
    dev = bp.orientation_free_deviation(ref, 0.2, x, xd)
    assert np.abs(dev[:3]).max() < 1e-12
    kw = dict(u=lambda t: u, rtol=1e-10, atol=1e-12, t_eval=np.linspace(0.0, 0.3, 7))
    a = forward_dynamics(cm, (0.0, 0.3), x, xd, **kw)
    b = forward_dynamics(cm, (0.0, 0.3), xr, xdr, **kw)
    assert np.abs(np.asarray(a.x)[:, :2] - np.asarray(b.x)[:, :2]).max() < 1e-8
    with pytest.raises(Exception, match="singularity"):
        bp.reoriented_state(ref, 0.2, np.r_[x[:3], np.pi / 2, x[4]], xd)


def test_mpc_no_longer_loses_ground_and_matches_lqr_after_the_transient():
    """``reproduce ball-plate``, φ0 = 5°, controllable formulation, nonlinear plant, first 3.5 s
    (quick tolerances, N = 20): the MPC (|α|, |β| ≤ 10°, steps ≤ MPC_RATE_BOUND_DEG) is 20 mm
    from the circle at 0.8 s (84 mm with the former 0.5° per sample; full run in
    ``mpc_diagnosis``) and over [TRANSIENT_S, 3.5] s within 1 µm of the LQR (both at the 17 µm
    floor of the full run; its keys ``max_error_after_transient_m``: 0.0204 / 0.0196 mm)."""
    from dataclasses import replace

    from nhcontrol.models import ball_plate as bp
    from nhcontrol.reproduce import ball_plate as rb

    st = replace(rb.QUICK, t_final=3.5, mpc_horizon=20, output_points=351)
    cm = bp.model()
    x0, xd0 = bp.initial_conditions(cm, 5.0)
    ref = bp.spin_matched_motion(cm, x0, xd0)
    f = rb._formulation(bp, cm, 5.0, st, reduced=True, ref=ref)
    lqr = rb.closed_loop_nonlinear(cm, ref, x0, xd0, rb._lqr_law(bp, f), f["dt"], st)
    statuses: list = []
    mpc = rb.closed_loop_nonlinear(cm, ref, x0, xd0, rb._mpc_law(bp, f, st, statuses),
                                   f["dt"], st)
    e_l, e_m = (rb.contact_error(f["motion"], r.x) for r in (lqr, mpc))
    assert set(statuses) == {"optimal"}
    assert np.interp(0.8, mpc.t, e_m) < 0.025                  # measured 19.9 mm (was 83.5)
    late = mpc.t >= rb.TRANSIENT_S
    assert e_m[late].max() <= e_l[late].max() + 1e-6
    assert np.degrees(np.abs(mpc.u).max()) <= rb.MPC_BOUND_DEG + 1e-3
