"""Default-run versions of claims that the slow suite checks at full size (docs/dev/claims.md).

* the Ch. 8 closed loop: the LQR on the controllable (7-state) formulation brings the ball's
  contact point within 5 mm of the circle after 20 s on the nonlinear plant (φ0 = 5°, quick
  integration tolerances; the slow reproduce test runs both angles and the MPC);
* Appell vs Newton–Euler on a rigid-wheel single-track model (the README's ≤ 5e-13);
* SymPy's ``KanesMethod`` against nhcontrol on a small nonholonomic model (a sleigh with one
  trailer: minimal coordinates and velocity constraints against absolute coordinates, hitch
  constraints and the third procedure), same spectrum to 1e-12 relative (measured 4e-15).
"""

from __future__ import annotations

import numpy as np
import pytest

from _helpers import load_benchmark


def test_ball_plate_lqr_within_5_mm_after_20_s():
    from nhcontrol.models import ball_plate as bp
    from nhcontrol.reproduce import ball_plate as rb

    st = rb.QUICK
    assert st.t_final == 20.0
    cm = bp.model()
    x0, xd0 = bp.initial_conditions(cm, 5.0)
    ref7 = bp.spin_matched_motion(cm, x0, xd0)
    f7 = rb._formulation(bp, cm, 5.0, st, reduced=True, ref=ref7)
    nl7 = rb.closed_loop_nonlinear(cm, f7["ref"], x0, xd0, rb._lqr_law(bp, f7), f7["dt"], st)
    err = rb.contact_error(f7["motion"], nl7.x)
    assert err[0] == pytest.approx(0.0877, abs=1e-3)          # starts 88 mm off the circle
    assert err[-1] < 0.005                                      # README / Ch. 8 claim: < 5 mm


def test_appell_equals_newton_euler_on_a_rigid_wheel_model():
    from nhcontrol.models import single_track as st

    mdl = st.build("rigid_force")
    assert st.appell_vs_newton_euler(mdl, t_final=1.0, samples=8) <= 5e-13


def test_kanes_method_agrees_with_nhcontrol_on_a_sleigh_with_a_trailer():
    from nhcontrol.analysis import match_spectra
    from nhcontrol.linearization import linearize, suggest_partition
    from nhcontrol.reference import Reference

    sc = load_benchmark("scaling")
    cm = sc.build(1).compile()
    x0, xd0 = sc.straight_state(1)
    ref = Reference.constant_velocity(cm, x0, xd0)
    lin = linearize(cm, ref, suggest_partition(cm, ref))
    eig = np.linalg.eigvals(np.asarray(lin.A))
    sym = sc.sympy_linearize(1)
    lam_s = np.array(sym["eig_real"]) + 1j * np.array(sym["eig_imag"])
    assert sym["nstates"] == eig.size == 6
    diff = match_spectra(eig, lam_s)[1]
    assert diff <= 1e-12 * max(1.0, float(np.max(np.abs(eig))))
