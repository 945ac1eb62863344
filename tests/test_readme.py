"""README.md stays true: the quickstart is exactly two commands, CI runs the second one, and the
tour's Python code runs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_quickstart_is_two_commands_and_ci_runs_the_test_one():
    quick = README[README.index("## Quickstart"):]
    commands = [c for c in _blocks("bash")[0].splitlines() if c.strip()]
    assert len(commands) == 2
    assert "nhcontrol reproduce bicycle-benchmark" in commands[0]
    assert commands[1] in (ROOT / ".ci" / "run").read_text()
    assert quick.index(commands[0]) < quick.index(commands[1])


def test_tour_code_runs():
    code = _blocks("python")[0]
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    lin = namespace["lin"]
    assert lin.A.shape == (10, 10)
    assert namespace["ss"].nstates == 10
    # the tour's comment: Meijaard et al. (2007) Table 2 at v = 5 m/s (printed to 4 decimals here)
    ev = np.asarray(lin.nonspurious_eigenvalues)
    weave = ev[np.argmax(ev.imag)]
    assert weave.real == pytest.approx(-0.7753, abs=5e-5) and weave.imag == pytest.approx(4.4649, abs=5e-5)
    real = ev[np.abs(ev.imag) < 1e-9].real
    assert np.min(np.abs(real - (-0.3229))) < 5e-5


def test_supported_versions_are_the_declared_lower_bounds():
    """The versions README.md names as supported are pyproject.toml's lower bounds, and the
    oldest Python it says CI runs the oldest set on is `requires-python`'s, the one `.ci/run`
    looks for."""
    from packaging.version import Version

    text = " ".join(README.split())              # (the README wraps its lines anywhere)
    pyproject = (ROOT / "pyproject.toml").read_text()
    py = re.search(r'requires-python = ">=(\d+\.\d+)"', pyproject).group(1)
    assert f"Python ≥ {py}" in text and f"oldest supported Python ({py})" in text
    assert f"/versions/{py}*/bin/python{py}" in (ROOT / ".ci" / "run").read_text()
    named = re.findall(r"(numpy|scipy|sympy|python-control|slycot|cvxpy|osqp|daqp) ≥ ([\d.]+\d)",
                       text[text.index("Supported versions"):])
    assert len(named) == 8, named
    for name, version in named:
        dist = "control" if name == "python-control" else name
        declared = re.search(rf'"{dist}>=([\d.]+)"', pyproject)
        assert declared and Version(declared.group(1)) == Version(version), (name, version)
