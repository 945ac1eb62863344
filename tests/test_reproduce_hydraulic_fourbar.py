"""``nhcontrol reproduce hydraulic-fourbar``: keys and headline numbers (see docs/theory/hydraulics.md)."""

import json

import pytest

from nhcontrol.reproduce import TARGETS, hydraulic_fourbar


@pytest.mark.slow
def test_run_keys_and_numbers(tmp_path):
    """Four model compilations (one per friction scenario) and the figure: ~15 s."""
    res = hydraulic_fourbar.run(out=tmp_path)
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


def test_registered():
    assert TARGETS["hydraulic-fourbar"][0] == "hydraulic_fourbar"
