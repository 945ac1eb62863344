"""Command line: help lists the commands and targets; bad input gives a clear message, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nhcontrol.cli import main
from nhcontrol.reproduce import TARGETS


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


def test_unwritable_out_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = _run("reproduce", "skateboard", "--quick", "--out", str(blocker / "sub"))
    assert proc.returncode == 2
    assert "cannot write figures to --out" in proc.stderr
    assert "Traceback" not in proc.stderr
