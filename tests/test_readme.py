"""README.md stays true: the quickstart is exactly two commands, CI runs the second one, and the
tour's Python code runs."""

from __future__ import annotations

import re
from pathlib import Path

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
