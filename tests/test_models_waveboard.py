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
