"""Logging and progress: the "nhcontrol" logger is silent by default and
tells, with -v, about builds, cache decisions and long runs; --help documents every environment
variable the code reads and the cache location; progress bars obey NHCONTROL_PROGRESS."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from nhcontrol.cli import ENVIRONMENT, build_parser, main

SRC = Path(__file__).resolve().parents[1] / "src" / "nhcontrol"


def test_help_documents_every_environment_variable(capsys):
    used = set()
    for p in SRC.rglob("*.py"):
        used |= set(re.findall(r"NHCONTROL_[A-Z][A-Z_]*[A-Z]", p.read_text(encoding="utf-8")))
    assert used, "no environment variable found: the scan is broken"
    missing = sorted(used - set(ENVIRONMENT))
    assert not missing, f"environment variables read by the code but not in ENVIRONMENT (--help): {missing}"
    for argv in (["--help"], ["reproduce", "--help"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
        out = capsys.readouterr().out
        for name in used:
            assert name in out, (argv, name)
        assert "Kernel cache in use:" in out


def test_silent_by_default_and_verbose_on_request(capsys, tmp_path):
    from nhcontrol.models import sleigh

    lib = logging.getLogger("nhcontrol")
    assert any(isinstance(h, logging.NullHandler) for h in lib.handlers)
    sleigh.model()
    assert capsys.readouterr().err == ""          # nothing printed by the library itself
    assert main(["-v", "reproduce", "skateboard", "--quick"]) == 0
    err = capsys.readouterr().err
    assert "nhcontrol.cli INFO: reproduce skateboard (quick): started" in err
    assert "reproduce skateboard: finished in" in err
    assert all(not isinstance(h, logging.StreamHandler) or isinstance(h, logging.NullHandler)
               for h in lib.handlers)              # -v does not outlive the call


def test_build_and_cache_decisions_are_logged(caplog, tmp_path):
    from nhcontrol.models import sleigh

    mb = sleigh.build()
    with caplog.at_level(logging.INFO, logger="nhcontrol"):
        mb.compile(cache_dir=str(tmp_path), backend="python")
        mb.compile(cache_dir=str(tmp_path), backend="python")
    msgs = [r.getMessage() for r in caplog.records if r.name == "nhcontrol.compiled.model"]
    assert any("not in the cache" in m and "deriving" in m for m in msgs), msgs
    assert any("built in" in m for m in msgs), msgs
    assert any("loaded from the cache" in m for m in msgs), msgs


def test_progress_switch(monkeypatch, capsys):
    from nhcontrol._util.progress import progress

    monkeypatch.setenv("NHCONTROL_PROGRESS", "1")
    assert list(progress(range(3), "demo", delay=0.0)) == [0, 1, 2]
    assert "demo" in capsys.readouterr().err
    monkeypatch.setenv("NHCONTROL_PROGRESS", "0")
    assert list(progress(range(3), "demo", delay=0.0)) == [0, 1, 2]
    assert capsys.readouterr().err == ""
