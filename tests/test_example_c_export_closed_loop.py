"""examples/c_export_closed_loop.py: an LQR designed in nhcontrol running in C on the exported model.

Headline numbers (measured): the C program (sampled finite-horizon LQR from
``LQRResult.export_c``, RK4 on the exported ``nhc_rhs``, 4312 bytes of workspace) brings the
torque-steered skate from 0.5 m off the lane centre to |y(3 s)| = 2.8e-4 m with a peak steering
torque of 1.46 N m, and its trajectory equals the same loop on nhcontrol's nonlinear plant to
1.9e-11. Slow: it compiles the model and runs two simulations.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "c_export_closed_loop.py"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cc") is None, reason="the example needs a C compiler (cc)")
def test_c_export_closed_loop_example(tmp_path):
    spec = importlib.util.spec_from_file_location("c_export_closed_loop", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(tmp_path)
    assert abs(out["y_end"]) < 1e-3
    assert out["peak_torque"] == pytest.approx(1.461, rel=1e-3)
    assert out["max_difference"] < 1e-8
    assert (tmp_path / "c_export_closed_loop.png").exists()
    assert (tmp_path / "skate_c" / "closed_loop").exists()
