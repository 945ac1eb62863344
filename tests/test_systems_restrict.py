"""``nhcontrol.systems.restrict`` and the ball-plate controllable formulation from library modules.

The restriction of the 8-state LTV system (8.74) to the spin-preserving subspace equals the
controllable formulation of Sect. 8.4.5 computed from the closed form; a subspace the dynamics
leave is refused; examples use only library modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import control
import numpy as np
import pytest

from nhcontrol._util.errors import LinearSystemError
from nhcontrol.models import ball_plate as bp
from nhcontrol.systems import LTVSystem, restrict

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def case():
    cm = bp.model()
    ref = bp.circular_motion(cm, 5.0)
    mo = bp.motion_from_reference(cm, ref)
    return cm, ref, mo


def test_ball_plate_controllable_formulation_from_library(case):
    cm, ref, mo = case
    red = bp.spin_reduction(cm, ref)
    full = LTVSystem.from_linearization(cm, ref, bp.PARTITION_8_72)
    ctrl = restrict(full, red.S, red.P, states=red.states)
    assert ctrl.states == bp.REDUCED_STATES and ctrl.inputs == bp.INPUTS
    assert ctrl.period == pytest.approx(mo.period)
    ts = np.array([0.1, 2.2, 5.0])
    A, B = bp.closed_form_matrices(mo, ts)
    np.testing.assert_allclose(ctrl.A(ts), red.S @ A @ red.P, rtol=0, atol=1e-9 * np.abs(A).max())
    np.testing.assert_allclose(ctrl.B(ts), red.S @ B, rtol=0, atol=1e-9 * np.abs(B).max())


def test_exact_derivatives_carried_through(case):
    cm, ref, mo = case
    red = bp.spin_reduction(cm, ref)
    full = LTVSystem(lambda t: bp.closed_form_matrices(mo, t)[0], lambda t: bp.closed_form_matrices(mo, t)[1],
                     period=mo.period, dA=lambda t, k: bp.closed_form_matrices(mo, t, k)[0],
                     dB=lambda t, k: bp.closed_form_matrices(mo, t, k)[1], vectorized=True)
    ctrl = restrict(full, red.S, red.P)
    assert ctrl.max_exact_order("A") is None and ctrl.states[0] == "x[0]"
    got = ctrl.derivative("A", 0.4, 3, method="exact")
    np.testing.assert_allclose(got, red.S @ bp.closed_form_matrices(mo, 0.4, 3)[0] @ red.P, rtol=1e-12,
                               atol=1e-12)


def test_constant_statespace_and_refusals():
    # ẋ1 = -x1 + u, ẋ2 = 0: x2 is a first integral, the subspace x2 = 0 is invariant
    sys = control.ss([[-1.0, 0.0], [0.0, 0.0]], [[1.0], [0.0]], np.eye(2), 0, states=["a", "b"],
                     inputs=["u"])
    r = restrict(sys, [[1.0, 0.0]], [[1.0], [0.0]], states=["a"])
    assert r.is_constant and r.inputs == ("u",)
    np.testing.assert_array_equal(r.A(0.0), [[-1.0]])
    with pytest.raises(LinearSystemError, match="not invariant"):
        restrict(sys, [[0.0, 1.0]], [[0.0], [1.0]])          # u drives a out of x = P z
    with pytest.raises(LinearSystemError, match="left inverse"):
        restrict(sys, [[2.0, 0.0]], [[1.0], [0.0]])
    with pytest.raises(LinearSystemError, match=r"P must be \(n, r\)"):
        restrict(sys, [[1.0, 0.0, 0.0]], [[1.0], [0.0], [0.0]])


def _reproduce_imports(path: Path) -> list[str]:
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.startswith("nhcontrol.reproduce")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("nhcontrol.reproduce"):
                bad.append(node.module)
            elif node.module == "nhcontrol":
                bad += [f"nhcontrol.{a.name}" for a in node.names if a.name == "reproduce"]
    return bad


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_examples_import_only_library_modules(path):
    """ARCHITECTURE.md: examples use only the library, never ``nhcontrol.reproduce``."""
    assert _reproduce_imports(path) == [], f"{path.name} imports {_reproduce_imports(path)}"


def test_the_scan_sees_reproduce_imports(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("import nhcontrol.reproduce.ball_plate\nfrom nhcontrol import reproduce\n"
                 "from nhcontrol.reproduce import ball_plate_ltv as bpl\n")
    assert len(_reproduce_imports(f)) == 3
