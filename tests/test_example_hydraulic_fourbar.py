"""Runs examples/hydraulic_fourbar.py and checks its headline numbers (docs/theory/hydraulics.md)."""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hydraulic_fourbar.py"


#: REGRESSION value: the equilibrium pressure as nhcontrol printed it before (7 digits). The
#: independent reference is the thesis' Eq. (7.99), p1(0) = p2(0) ≃ 2.82 MPa (checked below to
#: the printed precision, 0.005 MPa).
REGRESSION_P2_PRINTED = "2.820479 MPa"
THESIS_P2_MPA = 2.82   # thesis Eq. (7.99)


def test_example_headlines():
    buf = io.StringIO()
    mod = runpy.run_path(str(EXAMPLE), run_name="example")
    with contextlib.redirect_stdout(buf):
        nums = mod["main"]()
    out = buf.getvalue()
    assert REGRESSION_P2_PRINTED in out
    assert abs(nums["p2_Pa"] / 1e6 - THESIS_P2_MPA) < 0.005
    assert nums["A"].shape == (6, 6)
    ev = nums["eigenvalues"]
    assert np.min(ev.real) < -2e4 and np.sum(np.abs(ev) < 1e-9) == 2
    np.testing.assert_allclose(nums["multipliers"][[1, 2, 5, 6]], [-60.582, -90.616, 18.796, -80.660],
                               atol=1e-3)
