"""examples/hydraulic_fourbar_control.py: controllability from U_ref, LQR with integral action on
the controllable subspace, verified on the nonlinear DAE with hydraulics (docs/theory/hydraulics.md)."""

from __future__ import annotations

import contextlib
import io
import math
import runpy
from pathlib import Path

import numpy as np
import pytest

from nhcontrol.models import hydraulic_fourbar as hf

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hydraulic_fourbar_control.py"


@pytest.fixture(scope="module")
def mod():
    return runpy.run_path(str(EXAMPLE), run_name="example")


def test_design(mod):
    d = mod["design"]()
    # full system: the two zero eigenvalues fail PBH; the LQR cannot move the conserved one
    assert not d["full"].is_controllable
    assert len(d["full"].uncontrollable_modes) >= 1
    assert np.all(np.abs(d["full"].uncontrollable_modes) < 1e-9)
    # nhcontrol decides (PBH with singular values) that no stabilising CARE solution exists,
    # whatever the installed slycot would do with the pair
    assert "no stabilising solution of the CARE" in d["full_lqr_refusal"]
    assert "not stabilisable" in d["full_lqr_refusal"] and "eigenvalue 0j" in d["full_lqr_refusal"]
    # w is conserved: w^T A = 0 and w^T B = 0 (scaled units)
    w = d["w"]
    assert np.max(np.abs(w @ d["A"])) < 1e-9 * np.abs(d["A"]).max() and abs(w @ d["B"][:, 0]) < 1e-12
    # reduced system: every eigenvalue passes PBH; the LQI closed loop is stable
    assert len(d["reduced"].uncontrollable_modes) == 0
    E = d["closed_loop_eigenvalues"]
    assert E.size == 6 and np.all(E.real < -1.0)
    # the target is an equilibrium of the linear model with the same conserved quantity
    eq = hf.equilibrium(60.0)
    X0 = np.r_[eq.x[5], 0.0, eq.p, 0.0]
    Xt = mod["target"](d["A"], d["w"], X0, math.radians(0.5))
    dX = mod["SCALE"] @ (Xt - X0)
    assert math.degrees(Xt[0]) == pytest.approx(60.5, abs=1e-12)
    assert np.max(np.abs(d["A"] @ dX)) < 1e-8 * np.abs(d["A"]).max() * np.abs(dX).max()
    assert abs(w @ dX) < 1e-12 and dX[2] == pytest.approx(dX[3], rel=1e-9)


@pytest.mark.slow
def test_move_on_the_nonlinear_model(mod):
    """0.5 deg move over 2 s on the nonlinear DAE (~20 s): reaches the target, the constraints
    hold, and the final state is a static equilibrium of the nonlinear model (checked by the
    independent closed-form statics of ``hydraulic_fourbar.equilibrium``)."""
    with contextlib.redirect_stdout(io.StringIO()) as buf:
        out = mod["main"](0.5, 2.0)
    assert "PBH rank 5" in buf.getvalue()
    sim = out["sim"]
    assert out["phi2_deg"][-1] == pytest.approx(60.5, abs=1e-3)
    assert out["settling_time_s"] < 1.8
    assert sim.constraint_residual < 1e-10
    assert np.max(np.abs(sim.r[:, 0])) <= 1.0
    eq_f = hf.equilibrium(out["phi2_deg"][-1], float(sim.z[-1, 2]))
    assert sim.z[-1, 1] == pytest.approx(eq_f.p[1], rel=1e-4)
    assert abs(sim.w[-1, 0]) < 1e-3 and abs(math.degrees(sim.xd[-1, 5])) < 1e-3
