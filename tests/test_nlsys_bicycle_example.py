"""to_nlsys and examples/bicycle_steer_control.py.

Headline numbers: the open-loop lean-steer eigenvalues at v = 2 m/s are Meijaard et al. (2007),
Table 2 (b) (weave 2.68234517512745 ± 1.68066296590675i, -3.07158645641514, -8.67387984831735),
checked at 1e-9; the closed loop levels a 5° lean to |φ| < 1e-3 rad within 5 s; the relative
difference of the nonlinear and linear responses is ≤ 0.5 % at 1° and scales like the square
of the initial lean (ratios 4 and 25 within ±25 %).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import control
import numpy as np
import pytest

from nhcontrol._util.errors import SolverError
from nhcontrol.models import sleigh
from nhcontrol.simulate import constraint_drift, forward_dynamics, to_nlsys

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "bicycle_steer_control.py"


def test_to_nlsys_matches_forward_dynamics():
    cm = sleigh.model()
    ref = sleigh.straight_motion(cm, 1.0)
    x0, xd0 = ref.x(0.0), 1.2 * ref.xd(0.0)
    plant = to_nlsys(cm)
    assert plant.state_labels == ["x", "y", "psi", "x_d", "y_d", "psi_d"]
    assert plant.output_labels == plant.state_labels and plant.ninputs == 0
    t = np.linspace(0.0, 1.0, 11)
    r = control.input_output_response(plant, t, 0, np.concatenate([x0, xd0]),
                                      solve_ivp_kwargs={"rtol": 1e-10, "atol": 1e-12})
    fd = forward_dynamics(cm, (0.0, 1.0), x0, xd0, t_eval=t)
    np.testing.assert_allclose(r.states[:3].T, fd.x, atol=1e-8)
    assert constraint_drift(cm, r.states).max < 1e-8
    sub = to_nlsys(cm, outputs=["psi", "x_d"], name="sled")
    assert sub.output_labels == ["psi", "x_d"] and sub.name == "sled"
    with pytest.raises(SolverError, match=r"\['heading'\] are not states"):
        to_nlsys(cm, outputs=["heading"])


def test_bicycle_steer_control_example(tmp_path):
    spec = importlib.util.spec_from_file_location("bicycle_steer_control", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(tmp_path)
    published = np.array([2.68234517512745 + 1.68066296590675j, 2.68234517512745 - 1.68066296590675j,
                          -3.07158645641514, -8.67387984831735])
    np.testing.assert_allclose(np.sort_complex(out["open_loop"]), np.sort_complex(published), atol=1e-9)
    assert np.all(out["closed_loop"].real < 0)
    five = out["rows"][2]
    assert five["lean_deg"] == 5.0 and abs(five["phi_end"]) < 1e-3
    assert out["rows"][0]["max_rel_diff"] <= 0.005
    assert 3.0 <= out["ratios"][0] <= 5.0 and 18.0 <= out["ratios"][1] <= 31.0
    assert max(r["drift"] for r in out["rows"]) < 1e-8
    assert (tmp_path / "bicycle_steer_control.png").exists()
