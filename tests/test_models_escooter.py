"""E-scooter with toroidal wheels and suspensions (thesis Sect. 5.6, Ch. 9 conclusions).

Reduction check: hoop wheels + Table 4.1 + suspensions must give the benchmark bicycle's
lean-steer eigenvalues (independent model) and Meijaard et al.'s v_w, v_c (published to 13
digits) to >= 12 significant digits: tolerance 1e-12 relative.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import MultibodySystem, add_joint_spring_damper
from nhcontrol.models import escooter as es
from nhcontrol.reproduce import escooter as rep


@pytest.fixture(scope="module")
def cm():
    return es.model()


def test_steady_forward_is_admissible_with_preloads(cm):
    """The preloads make s = 0 static: Eq. (2.108) residual ~ round-off along the motion."""
    ref = es.steady_forward(cm, 6.0)
    report = ref.check(cm, [0.0, 0.4, 1.1])
    assert report.max_dynamics < 1e-9


def test_preloads_from_static_wheel_loads():
    """f0_R = N_P - m_R g and f0_F = (N_Q - m_F g) cos(nu) with the statics of the benchmark helper."""
    from nhcontrol.models import benchmark_bicycle as bb
    v = dict(es.PARAMETERS)
    n_p, n_q = bb.static_wheel_loads(v)
    f0_R, f0_F = es.preloads(v)
    assert f0_R == pytest.approx(n_p - v["m_R"] * v["g"], rel=1e-14)
    assert f0_F == pytest.approx((n_q - v["m_F"] * v["g"]) * np.cos(v["nu"]), rel=1e-14)


def test_joint_spring_damper():
    mb = MultibodySystem("slider")
    s = mb.add_coordinates("s")
    k, = (mb.add_parameters(k=2.0),)
    q = add_joint_spring_damper(mb, s, k, 0.5, 3.0)
    assert sp.simplify(q - (-(3.0 + k * s + 0.5 * mb.velocities[0]))) == 0
    with pytest.raises(ModelError, match="not a coordinate"):
        add_joint_spring_damper(mb, sp.Symbol("zz"), k)


def test_reduction_to_benchmark_12_digits(cm):
    red = rep.reduction(cm)
    assert red["max_rel_diff_vs_benchmark_model"] < 1e-12
    assert red["v_w_rel_error_vs_meijaard"] < 1e-12
    assert red["v_c_rel_error_vs_meijaard"] < 1e-12


def test_suspension_pairs_and_polynomial(cm):
    poly, res = rep.speed_polynomial(cm, cm.param_vector(), es.PARTITION)
    assert res < 1e-12                                   # J(v) is quadratic in v
    ev = rep.spectrum(poly, [1.0, 5.0, 12.0])
    pairs = [e[np.abs(e.imag) >= rep.SUSPENSION_IMAG] for e in ev]
    assert all(p.size == 4 for p in pairs)               # two complex pairs
    assert all(np.all(p.real < 0) for p in pairs)
    assert np.ptp([np.sort(p.real) for p in pairs], axis=0).max() < 1e-9


def test_ch9_trends_quick(tmp_path):
    result = rep.run(out=tmp_path, quick=True)
    json.dumps(result)
    for key in ("reduction_max_rel_diff", "reduction", "speeds", "eigenvalues", "stable_speed_ranges", "trends"):
        assert key in result
    assert result["reduction_max_rel_diff"] < 1e-12
    assert set(result["reduction"]) >= {"parameters", "eigenvalues", "v_w", "v_c", "speeds"}
    assert all(result["trends"].values()), result["trends"]
    assert result["stable_speed_ranges"] == []
    assert (tmp_path / "escooter_eigenvalues.png").exists()
    assert (tmp_path / "escooter_trends.png").exists()
    tr = result["steady_turns"]
    assert abs(tr["capsize_bifurcation_speed"] - tr["capsize_speed_straight_running"]) < 1e-6
    assert tr["max_residual"] <= 1e-10
    assert {"i_handlebar_forward", "iii_pivoting"} <= set(tr["families"])
    assert {"v", "lean_deg", "steer_deg", "radius_m", "stable", "max_real_eig"} <= set(tr["families"]["iii_pivoting"][0])
    assert (tmp_path / "escooter_steady_turns.png").exists()
    st = result["suspension_trends"]
    assert st["agrees"] and min(st["damping"]["slope_abs_real"]) > 0.9 and min(st["stiffness"]["slope_imag"]) > 0.4
    assert result["rider_trends"]["agrees"]
    assert (tmp_path / "escooter_suspension_trends.png").exists() and (tmp_path / "escooter_rider_trends.png").exists()


def test_errors(cm):
    with pytest.raises(ModelError, match="e-scooter"):
        es.build(k_R=-1.0)
    from nhcontrol.models import benchmark_bicycle as bb
    with pytest.raises(ModelError, match="e-scooter"):
        es.steady_forward(bb.model(), 1.0)
