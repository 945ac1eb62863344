"""examples/sympy_whipple_bicycle.py: the Whipple bicycle written in sympy.physics.mechanics.

Headline numbers: imported with ``from_sympy_mechanics`` (n = 8 coordinates, m = 1 holonomic and
l = 4 nonholonomic constraints), its lean/steer eigenvalues at v = 0, 5, 10 m/s equal Table 2 of
Meijaard et al. (2007) to 12 digits and more (measured: 1.8e-14 relative). The full check
compiles the bicycle (slow); the default check imports it and verifies the structure and the
upright configuration.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sympy.physics.mechanics")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sympy_whipple_bicycle.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("sympy_whipple_bicycle", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_whipple_import_structure(example):
    """Default check: the translation's coordinates, constraints and the upright configuration."""
    from nhcontrol.interop import from_sympy_mechanics

    system, P = example.whipple_system()
    mb = from_sympy_mechanics(system, {P[k]: v for k, v in example.MEIJAARD.items()}, name="whipple_sympy")
    assert [s.name for s in mb.coordinates] == ["q1", "q2", "q3", "q4", "q6", "q7", "q8", "q5"]
    assert (mb.n, mb.m, mb.l) == (8, 1, 4) and mb.n - mb.m - mb.l == 3   # lean, steer, rear wheel
    assert [b.name for b in mb.bodies] == ["rear_wheel", "rear_frame", "front_frame", "front_wheel"]
    # upright, zero pitch: the front contact is on the ground (C = 0), the wheel centres at their radii
    import sympy as sp

    zero = {s: 0 for s in mb.coordinates}
    vals = {s: mb.defaults[s.name] for s in mb.parameters}
    C = float(sp.sympify(mb.holonomic[0].expr).xreplace(zero).xreplace(vals))
    assert abs(C) < 1e-15
    heights = [float(b.position[2].xreplace(zero).xreplace(vals)) for b in mb.bodies]
    np.testing.assert_allclose(heights, [0.3, 0.9, 0.7, 0.35], rtol=1e-14)


@pytest.mark.slow
def test_whipple_matches_meijaard(example):
    out = example.main()
    assert out["m"] == 1 and out["l"] == 4
    assert out["max_rel_error"] < 1e-12
