"""Progress display: one outer bar per sweep (the tasks, in any back-end, draw none), a spinner
with the elapsed time for steps without a loop (model builds), a bar for the GIF writer
(tests/test_animation.py)."""

from __future__ import annotations

import threading
import time

import pytest

from nhcontrol._util.progress import progress, quiet, spinner
from nhcontrol.sweep import sweep

import _sweep_funcs as sf


@pytest.fixture
def bars_on(monkeypatch):
    monkeypatch.setenv("NHCONTROL_PROGRESS", "1")


@pytest.mark.parametrize("backend", ["serial", "threads", "processes"])
def test_sweep_tasks_draw_no_bar_only_the_outer_one(bars_on, capfd, backend):
    res = sweep(sf.with_inner_bar, {"a": [1, 2, 3, 4]}, backend=backend, max_workers=2,
                progress=True)
    assert list(res.values) == [4, 5, 6, 7]
    err = capfd.readouterr().err
    assert "with_inner_bar" in err                  # the outer bar (named after the function)
    assert "inner task bar" not in err and "inner spinner" not in err


def test_quiet_is_per_block_and_restores(bars_on, capsys):
    with quiet():
        with quiet():
            list(progress(range(2), "hidden", delay=0.0))
        list(progress(range(2), "hidden too", delay=0.0))
    list(progress(range(2), "shown", delay=0.0))
    err = capsys.readouterr().err
    assert "hidden" not in err and "shown" in err


def test_spinner_shows_elapsed_time_and_stops_its_thread(bars_on, capsys):
    with spinner("building model 'x'", delay=0.0, interval=0.02):
        time.sleep(0.1)
    err = capsys.readouterr().err
    assert "building model 'x': 00:0" in err
    assert not [t for t in threading.enumerate() if t.name == "nhcontrol-spinner"]


def test_spinner_silent_off_terminal(monkeypatch, capsys):
    monkeypatch.delenv("NHCONTROL_PROGRESS", raising=False)   # stderr is captured: not a terminal
    with spinner("building", delay=0.0, interval=0.01):
        time.sleep(0.05)
    assert capsys.readouterr().err == ""


def test_model_build_runs_under_a_spinner(monkeypatch):
    """compile_system wraps the build (or the cache load) in a spinner named after the model."""
    from contextlib import contextmanager

    import nhcontrol._util.progress as pg
    from _toy_models import pinned_pendulum

    seen = []

    @contextmanager
    def recording(desc, **kw):
        seen.append(desc)
        yield

    monkeypatch.setattr(pg, "spinner", recording)
    mb, _ = pinned_pendulum("progress_pendulum")
    mb.compile()
    assert seen == ["building model 'progress_pendulum' (derive, generate, compile)"]
