"""``nhcontrol reproduce hydraulic-fourbar``: keys and headline numbers (see docs/theory/hydraulics.md)."""

import json

import pytest

from nhcontrol.reproduce import TARGETS, hydraulic_fourbar


@pytest.mark.slow
def test_run_keys_and_numbers(tmp_path):
    """Four model compilations (one per friction scenario), the responses (quick: two pulse
    sizes over 40 ms) and the figures: ~40 s."""
    res = hydraulic_fourbar.run(out=tmp_path, quick=True)
    json.dumps(res)
    e = res["equilibrium"]
    assert e["p1_Pa"] == e["p2_Pa"] and abs(e["p2_Pa"] / 1e6 - 2.82) < 0.005
    assert abs(e["phi32_deg"] - 322.1) < 0.05 and abs(e["phi43_deg"] - 266.4) < 0.05
    assert abs(e["alpha_deg"] - 30.0) < 1e-9 and abs(e["s"] - 3 ** 0.5) < 1e-12
    assert len(res["multipliers"]) == 9 and res["multipliers_residual"] < 1e-9
    assert res["jacobian_shape"] == [6, 6]
    assert set(res["eigenvalues"]) == {"nominal", "friction_div10", "friction_div100", "frictionless"}
    assert all(abs(im) == 0 for _, im in res["eigenvalues"]["nominal"])
    assert sum(abs(im) > 0 for _, im in res["eigenvalues"]["frictionless"]) == 2
    c = res["controllability"]
    assert c["is_controllable"] is False and len(c["uncontrollable_modes"]) >= 1
    assert all(abs(re) < 1e-9 for re, _ in c["uncontrollable_modes"])
    assert (tmp_path / "hydraulic_fourbar_eigenvalues.png").exists()
    assert "2.82" in hydraulic_fourbar.summary(res)
    cp = res["counterpart"]
    assert cp["shape"] == [24, 24] and cp["n_spurious_zero"] == 18 == cp["n_spurious_expected"]
    assert cp["eigenvalue_max_rel_diff"] < 1e-4
    fd = res["fd_error_vs_h"]
    assert len(fd["h"]) == len(fd["rel_error"]) and 1e-6 <= fd["best_h"] <= 1e-4
    assert fd["rel_error"][0] > 100 * min(fd["rel_error"]) < fd["rel_error"][-1] / 100
    tm = res["timing"]
    assert tm["third_s"] > 0 and tm["ratio"] == tm["counterpart_s"] / tm["third_s"]
    assert (tmp_path / "hydraulic_fourbar_fd_error_vs_h.png").exists()
    lv = res["linear_vs_nonlinear"]
    holds = res["damping_scenarios"]["holds"]
    assert holds["overdamped_has_lower_cylinder_speed"] and holds["friction_taylor_relative_error_smaller_overdamped"]
    assert not holds["friction_taylor_absolute_error_smaller_overdamped"]
    assert not holds["response_error_smaller_overdamped"]
    for sc in ("nominal", "friction_div100", "frictionless"):
        runs = lv[sc]["runs"]
        assert [q["M0_Nm"] for q in runs] == [300.0, 100.0]
        assert runs[1]["phi2_max_abs_diff_deg"] < runs[0]["phi2_max_abs_diff_deg"] / 3 ** 1.8
        assert lv[sc]["abs_diff_order_in_M0"] > 1.8
    for name in ("linear_vs_nonlinear", "linear_error_vs_M0"):
        assert (tmp_path / f"hydraulic_fourbar_{name}.png").exists()
    assert "order in M0" in hydraulic_fourbar.summary(res)


def test_benchmark_script_keys():
    """benchmarks/hydraulic_fourbar.py prints the timing keys (timings themselves are not tested)."""
    import contextlib
    import io
    import runpy
    from pathlib import Path
    mod = runpy.run_path(str(Path(__file__).parents[1] / "benchmarks" / "hydraulic_fourbar.py"))
    with contextlib.redirect_stdout(io.StringIO()) as buf:
        out = mod["main"](["--repeat", "2"])
    assert json.loads(buf.getvalue()) == out
    assert {"third_s", "counterpart_s", "ratio", "ratio_cpu"} <= set(out)
    assert out["shapes"] == [[6, 6], [24, 24]] and out["eigenvalue_max_rel_diff"] < 1e-4


def test_registered():
    assert TARGETS["hydraulic-fourbar"][0] == "hydraulic_fourbar"


def test_friction_taylor_error_is_second_order_and_scales_with_friction():
    from nhcontrol.reproduce.hydraulic_fourbar import damping_scenarios, friction_taylor_error
    vs = 1.25e-2
    r1, a1 = friction_taylor_error(1e-3 * vs, 1.0)
    r2, a2 = friction_taylor_error(2e-3 * vs, 1.0)
    assert 3.5 < r2 / r1 < 4.5                       # odd law: relative error ~ s_dot^2
    r2, a2 = friction_taylor_error(0.3 * vs, 1.0)
    r3, a3 = friction_taylor_error(0.3 * vs, 0.01)
    assert abs(r3 - r2) < 1e-9 * r2 and abs(a3 - 0.01 * a2) < 1e-9 * a2
    assert friction_taylor_error(1e-3, 0.0)[1] == 0.0

    def run(M0, sd, f, phi):
        return {"M0_Nm": M0, "s_dot_peak_over_v_s": sd, "friction_taylor_rel_error": f[0],
                "friction_taylor_abs_error_N": f[1], "phi2_rel_diff": phi}
    lvn = {"nominal": {"runs": [run(300.0, 0.2, (0.1, 20.0), 0.02)]},
           "friction_div100": {"runs": [run(300.0, 0.5, (0.3, 2.0), 0.01)]}}
    h = damping_scenarios(lvn)["holds"]
    assert h == {"overdamped_has_lower_cylinder_speed": True,
                 "friction_taylor_relative_error_smaller_overdamped": True,
                 "friction_taylor_absolute_error_smaller_overdamped": False,
                 "response_error_smaller_overdamped": False}
