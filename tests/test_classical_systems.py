"""Classical nonholonomic systems against their closed forms (docs/theory/classical.md).

The closed forms are derived independently of the Newton–Euler models; agreement to rounding
(1e-12 relative for the critical speeds, 1e-12 absolute for eigenvalues of size ~10 1/s)
validates the model, the reference motion and the third numerical procedure together.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from nhcontrol.models import rolling_wheel, sleigh
from nhcontrol.reproduce import rolling_hoop, skateboard


@pytest.mark.parametrize("kind, expected", [("hoop", np.sqrt(9.81 * 0.3 / 4)),
                                            ("disc", np.sqrt(9.81 * 0.3 / 3))])
def test_critical_speed_matches_closed_form(kind, expected):
    cm = rolling_wheel.model_hoop() if kind == "hoop" else rolling_wheel.model_disc()
    vc = rolling_hoop.critical_speed(cm)
    assert vc == pytest.approx(expected, rel=1e-12)
    assert rolling_hoop.analytic_critical_speed(kind) == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("v", [0.3, 0.9, 1.7])
def test_disc_spectrum_is_the_lean_pair_plus_zeros(v):
    cm = rolling_wheel.model_disc()
    lam = np.linalg.eigvals(rolling_hoop.jacobian(cm, v))
    lam = lam[np.argsort(-np.abs(lam))]
    pair = rolling_hoop._analytic_pair("disc", v, 0.3, 2.0, 9.81)
    assert np.allclose(np.sort_complex(lam[:2]), np.sort_complex(np.array([pair, -pair])), atol=1e-10)
    assert np.all(np.abs(lam[2:]) < 1e-6)  # zeros (Jordan blocks: perturbed at sqrt(eps))


def test_critical_speed_does_not_depend_on_mass():
    a = rolling_hoop.critical_speed(rolling_wheel.model_disc(m=2.0))
    b = rolling_hoop.critical_speed(rolling_wheel.model_disc(m=7.5))
    assert a == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize("a", [-0.2, 0.15])
@pytest.mark.parametrize("v", [-1.3, 0.7, 2.0])
def test_sleigh_yaw_eigenvalue(a, v):
    cm = sleigh.model(a=a)
    lam = skateboard.yaw_eigenvalue(cm, v)
    assert lam == pytest.approx(skateboard.analytic_yaw_eigenvalue(v, 1.0, 0.05, a), abs=1e-12)
    eig = np.linalg.eigvals(skateboard.jacobian(cm, v))
    assert np.sum(np.abs(eig) > 1e-9) == 1


@pytest.mark.parametrize("target, key", [("rolling-hoop", "hoop"), ("skateboard", "critical_speed")])
def test_cli_json(target, key, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "nhcontrol.cli", "reproduce", target, "--json",
                           "--quick", "--out", str(tmp_path)], capture_output=True, text=True,
                          check=True)
    data = json.loads(proc.stdout)
    assert key in data
    if target == "rolling-hoop":
        assert data["disc"]["critical_speed"] == pytest.approx(0.990454441153, rel=1e-11)
        assert data["hoop"]["critical_speed"] == pytest.approx(0.857758707330, rel=1e-11)
        assert (tmp_path / "rolling_hoop_eigenvalues.png").exists()
    else:
        assert data["jacobian_shape"] == [5, 5]
        assert (tmp_path / "skateboard_eigenvalues.png").exists()


@pytest.mark.parametrize("a, direction", [(-0.2, "forward (v > 0)"), (0.15, "backward (v < 0)")])
def test_skateboard_reports_lead_of_g_and_stable_direction(a, direction):
    """The model's a is the blade position from G; the JSON reports the lead d = -a, and the
    straight motion is stable in the direction in which G leads the blade (λ = -m d v/(I + m d²)
    < 0 for d v > 0), checked on the computed yaw eigenvalues at |v| = 1.5 (not only the label)."""
    res = skateboard.run(quick=True, a=a)
    assert res["parameters"]["lead_of_G_over_blade"] == -a
    assert res["stable_direction"] == direction
    v = np.array(res["speeds"])
    lam = np.array(res["yaw_eigenvalue"])
    forward = lam[np.isclose(v, 1.5)][0]
    assert (forward < 0) == (a < 0)
