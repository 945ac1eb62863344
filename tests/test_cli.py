"""Command line: help lists the commands and targets; bad input gives a clear message, no traceback."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from nhcontrol.cli import main
from nhcontrol.reproduce import SPECIFIC_OPTIONS, TARGET_OPTIONS, TARGETS, load, targets_with


def _run(*args):
    return subprocess.run([sys.executable, "-m", "nhcontrol.cli", *args], capture_output=True,
                          text=True)


def test_help_lists_commands():
    proc = _run("--help")
    assert proc.returncode == 0
    assert "reproduce" in proc.stdout and "targets" in proc.stdout


def test_reproduce_help_lists_every_target():
    proc = _run("reproduce", "--help")
    for name in TARGETS:
        assert name in proc.stdout


def test_targets_command(capsys):
    assert main(["targets"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in TARGETS)


def test_unknown_target_is_a_clear_error():
    proc = _run("reproduce", "no-such-target")
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr and "Traceback" not in proc.stderr


def test_out_inside_a_file_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = _run("reproduce", "skateboard", "--quick", "--out", str(blocker / "sub"))
    assert proc.returncode == 2
    assert f"is inside {str(blocker)!r}, which is a file" in proc.stderr
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------ options checked before any import
_HEAVY = ("sympy", "scipy", "control", "cvxpy", "nhcontrol.reproduce.", "nhcontrol.models",
          "nhcontrol.compiled.model", "nhcontrol.modeling")

_PROBE = """
import json, sys
from nhcontrol.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in sys.modules if m.startswith(HEAVY) and m != "nhcontrol.reproduce")
print(json.dumps({"code": code, "heavy": heavy}))
""".replace("HEAVY", repr(_HEAVY))


@pytest.mark.parametrize(("argv", "message"), [
    (["reproduce", "skateboard", "--n", "5"],
     "--n does not apply to target 'skateboard'; targets that take --n: monte-carlo-ball-plate, "
     "output-feedback"),
    (["reproduce", "bicycle-benchmark", "--backend", "serial"],
     "--backend does not apply to target 'bicycle-benchmark'; targets that take --backend: "
     "monte-carlo-ball-plate"),
    (["reproduce", "skateboard", "--animate", "--out", "{tmp}"],
     "--animate does not apply to target 'skateboard'; targets that take --animate: ball-plate, "
     "bicycle-benchmark, road-vehicles"),
    (["reproduce", "ball-plate", "--animate"], "--animate writes a file: give --out DIR"),
    (["reproduce", "ball-plate", "--out", "{file}"], "names a file; --out takes a folder"),
    (["reproduce", "monte-carlo-ball-plate", "--n", "0"], "--n must be a positive number of runs, got 0"),
    (["reproduce", "--animate", "wrong"], "invalid choice: 'wrong'"),
    (["reproduce", "ball-plate", "--animate", "wrong"], "unrecognized arguments: wrong"),
    (["reproduce", "skateboard", "--size", "a4"], "invalid choice: 'a4'"),
])
def test_usage_errors_answer_before_any_heavy_import(tmp_path, argv, message):
    """A usage error exits with status 2 and a one-line message, having imported no target, no
    model and none of the numerical libraries (that is what makes it answer at once: importing
    one target under load took 17-62 s)."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    argv = [a.format(tmp=tmp_path, file=afile) for a in argv]
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True)
    assert message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["code"] == 2
    assert out["heavy"] == []


def test_option_table_matches_the_targets_run_signatures():
    """`TARGET_OPTIONS` (what the command line accepts per target, checked before any import)
    equals what each target's ``run()`` really takes: import every target and compare."""
    for name in TARGETS:
        params = inspect.signature(load(name).run).parameters
        assert {"out", "quick"} <= set(params), name
        takes = {k for k in SPECIFIC_OPTIONS if k in params}
        assert takes == set(TARGET_OPTIONS.get(name, ())), (name, takes)
    assert set(TARGET_OPTIONS) <= set(TARGETS)


def test_help_names_the_targets_of_each_option():
    from nhcontrol.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["reproduce"]
    helps = {a.dest: a.help for a in sub._actions}
    assert f"({', '.join(targets_with('animate'))};" in helps["animate"]
    titles = [g.title for g in sub._action_groups]
    assert f"Monte-Carlo targets ({', '.join(targets_with('n'))})" in titles
