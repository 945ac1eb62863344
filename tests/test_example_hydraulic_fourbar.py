"""Runs examples/hydraulic_fourbar.py and checks its headline numbers (docs/theory/hydraulics.md)."""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hydraulic_fourbar.py"


def test_example_headlines():
    buf = io.StringIO()
    mod = runpy.run_path(str(EXAMPLE), run_name="example")
    with contextlib.redirect_stdout(buf):
        nums = mod["main"]()
    out = buf.getvalue()
    assert "2.820479 MPa" in out
    assert abs(nums["p2_Pa"] / 1e6 - 2.82) < 0.005
    assert nums["A"].shape == (6, 6)
    ev = nums["eigenvalues"]
    assert np.min(ev.real) < -2e4 and np.sum(np.abs(ev) < 1e-9) == 2
    np.testing.assert_allclose(nums["multipliers"][[1, 2, 5, 6]], [-60.582, -90.616, 18.796, -80.660],
                               atol=1e-3)
