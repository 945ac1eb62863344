"""Waveboard with torsion bar, two casters and toroidal wheels (thesis Sect. 5.5, derived here).

Reduction: rigid bar + locked rear caster + hoops is a bicycle; its eigenvalues must equal those
of the independent benchmark-bicycle model with the composite parameters to >= 12 digits
(tolerance 1e-12 relative).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from nhcontrol._util.errors import ModelError
from nhcontrol.models import waveboard as wb
from nhcontrol.reproduce import waveboard as rep


def test_steady_forward_is_admissible():
    cm = wb.model()
    assert wb.steady_forward(cm, 2.5).check(cm, [0.0, 0.3, 0.9]).max_dynamics < 1e-9


def test_benchmark_equivalent_composite_body():
    """Composite mass centre and parallel-axis inertia, checked against a direct point-mass sum."""
    eq = wb.benchmark_equivalent({"I_Bxz": 0.1})
    v = dict(wb.PARAMETERS)
    m = v["m_B"] + v["m_P"] + v["m_K"]
    assert eq["m_B"] == pytest.approx(m, rel=1e-15)
    zc = (v["m_B"] * v["z_B"] + v["m_P"] * v["z_P"] + v["m_K"] * v["z_K"]) / m
    xc = (v["m_B"] * v["x_B"] + v["m_P"] * v["x_P"] + v["m_K"] * v["x_K"]) / m
    assert eq["z_B"] == pytest.approx(zc, rel=1e-14)
    Iyy = sum(v[f"I_{k}yy"] + v[f"m_{k}"] * ((v[f"x_{k}"] - xc) ** 2 + (v[f"z_{k}"] - zc) ** 2) for k in "BPK")
    assert eq["I_Byy"] == pytest.approx(Iyy, rel=1e-14)
    Ixz = 0.1 - sum(v[f"m_{k}"] * (v[f"x_{k}"] - xc) * (v[f"z_{k}"] - zc) for k in "BPK")
    assert eq["I_Bxz"] == pytest.approx(-Ixz, rel=1e-12)         # Meijaard's frame: Z down


def test_reduction_to_benchmark_12_digits():
    red = rep.reduction()
    assert red["max_rel_diff_vs_benchmark_model"] < 1e-12
    assert red["v_w"] is not None


def test_reproduce_json_and_figure(tmp_path):
    result = rep.run(out=tmp_path, quick=True)
    json.dumps(result)
    for key in ("reduction_max_rel_diff", "reduction", "speeds", "eigenvalues", "stable_speed_ranges"):
        assert key in result
    assert result["polynomial_residual"] < 1e-12
    assert result["completely_unstable"] and result["stable_speed_ranges"] == []
    assert len(result["eigenvalues"]) == len(result["speeds"])
    assert (tmp_path / "waveboard_eigenvalues.png").exists()
    tr = result["caster_torus_trend"]
    assert tr["agrees"] and all(a > 0 for a in tr["vs_caster_tilt"]["min_spectral_abscissa"])
    assert (tmp_path / "waveboard_caster_torus_trend.png").exists()
    assert "skipped" in result["inverse_dynamics"]           # quick: no actuated model compiled


@pytest.mark.slow  # compiles the actuated model and runs the nonlinear check (~1 min)
def test_inverse_dynamics_study_json_figures_and_trends(tmp_path):
    """Sect. 5.5.4 (derived here): rider torques along the meander, two design parameters."""
    result = rep.run(out=tmp_path, quick=False)
    json.dumps(result)
    study = result["inverse_dynamics"]
    rows = {(r["parameter"], r["value"]): r for r in study["variants"]}
    assert len(rows) == 6
    for r in rows.values():
        assert r["phi_b_amplitude_deg"] == pytest.approx(r["alpha_amplitude_deg"], rel=1e-12)   # shape
        assert r["tau_B_rms"] == pytest.approx(r["tau_B_peak"] / np.sqrt(2), rel=1e-12)
        assert 1.0 < r["tau_B_peak"] < 500.0 and 1.0 < r["tau_P_peak"] < 500.0
    kT = [rows[("k_T", v)] for v in rep.ID_VARIANTS["k_T"]]
    nu = [rows[("nu", v)] for v in rep.ID_VARIANTS["nu"]]
    # the torsion bar is internal: the external roll torque does not depend on its stiffness
    assert max(abs(r["tau_B_peak"] - kT[0]["tau_B_peak"]) for r in kT) < 1e-9 * kT[0]["tau_B_peak"]
    assert abs(study["relative_change_over_k_T"]["tau_P_peak"]) > 1e-3
    # a more tilted caster steers less per roll: more roll, larger torques for the same meander
    assert nu[0]["tau_B_peak"] < nu[1]["tau_B_peak"] < nu[2]["tau_B_peak"]
    assert nu[0]["tau_P_peak"] < nu[1]["tau_P_peak"] < nu[2]["tau_P_peak"]
    # the nominal case on the nonlinear model: same torques up to terms cubic in the amplitude
    chk = study["nonlinear_check"]
    small = chk["runs"][1]
    assert small["max_rel_torque_diff"] < 1e-2 and small["prescription_error_rad"] < 1e-8
    assert small["constraint_drift"] < 1e-9
    assert chk["ratio"] > 8.0                                   # 4x amplitude: >= quadratic in relative terms
    assert (tmp_path / "waveboard_inverse_dynamics.png").exists()
    assert "inverse dynamics" in rep.summary(result)


def test_locked_builds_drop_coordinates_and_errors():
    mb = wb.build(torsion=False, rear_caster=False)
    assert [str(c) for c in mb.coordinates] == [c for c in wb.COORDINATES if c not in ("alpha", "delta_R")]
    with pytest.raises(ModelError, match="waveboard"):
        wb.build(k_T=-1.0)
    from nhcontrol.models import benchmark_bicycle as bb
    with pytest.raises(ModelError, match="waveboard"):
        wb.steady_forward(bb.model(), 1.0)


@pytest.mark.slow  # compiles the actuated model (~15 s cold)
def test_rider_torques_enter_as_platform_torques():
    """tau_B is a roll torque on the board (generalized force on phi_b only through B's roll),
    tau_P twists the front platform against the rear one: Q_alpha = tau_P, no net roll torque."""
    cm = wb.model(actuated=True)
    x, xd, _ = wb.steady_forward_state(2.0, 0.0, wb.PARAMETERS)
    p = cm.param_vector()
    q0 = np.asarray(cm.Q(x[None], xd[None], np.zeros((1, 2)), p)).reshape(-1)
    qB = np.asarray(cm.Q(x[None], xd[None], np.array([[1.0, 0.0]]), p)).reshape(-1) - q0
    qP = np.asarray(cm.Q(x[None], xd[None], np.array([[0.0, 1.0]]), p)).reshape(-1) - q0
    i = wb.COORDINATES.index
    assert qB[i("phi_b")] == pytest.approx(1.0, abs=1e-12)
    assert qB[i("alpha")] == pytest.approx(0.0, abs=1e-12)
    assert qP[i("alpha")] == pytest.approx(1.0, abs=1e-12)
    assert qP[i("phi_b")] == pytest.approx(0.0, abs=1e-12)
