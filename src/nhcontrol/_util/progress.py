"""Progress bars for long reproduce steps (tqdm on standard error).

``progress(iterable, desc="speed sweep")`` wraps a loop in a tqdm bar that appears only when the
step lasts longer than ``delay`` seconds (default 2 s) and only on an interactive terminal (tqdm's
``disable=None``), so ``--json`` output, logs and tests stay clean. ``NHCONTROL_PROGRESS=0``
switches bars off, ``NHCONTROL_PROGRESS=1`` forces them on.

One bar per sweep: the tasks of a sweep (``nhcontrol.sweep``: serial, threads, worker processes,
Dask workers) run inside `quiet()`, where no bar is drawn, whatever ``NHCONTROL_PROGRESS`` says;
the sweep draws the one outer bar. Steps without a loop to count (a model build: derivation,
code generation, the C compiler) show a `spinner()` with the elapsed time.
"""

from __future__ import annotations

import os
import sys
from _thread import _local   # threading.local, without importing threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, TypeVar

__all__ = ["progress", "progress_bar", "quiet", "spinner"]

T = TypeVar("T")

_QUIET = _local()


@contextmanager
def quiet() -> Iterator[None]:
    """No progress bar or spinner is drawn inside the block (in this thread): the tasks of a sweep
    run in it, so that only the sweep's outer bar is drawn."""
    depth = getattr(_QUIET, "depth", 0)
    _QUIET.depth = depth + 1
    try:
        yield
    finally:
        _QUIET.depth = depth


def _disable() -> bool | None:
    if getattr(_QUIET, "depth", 0):
        return True
    raw = os.environ.get("NHCONTROL_PROGRESS", "")
    flag = raw.strip()
    if flag == "0":
        return True
    if flag == "1":
        return False
    if flag:
        from .errors import ConfigurationError
        raise ConfigurationError(f"NHCONTROL_PROGRESS={raw!r} is not valid; accepted: 0 (no progress "
                                 f"bars), 1 (always), or unset (on an interactive terminal only)")
    return None  # tqdm: off when stderr is not a terminal


def _not_a_terminal(stream: Any) -> bool:
    """tqdm's rule for ``disable=None``: a stream whose ``isatty()`` is false (anything else is
    left to tqdm)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except (ValueError, OSError):
        return False


def _delay(delay: float) -> float:
    """``NHCONTROL_PROGRESS=1`` shows every bar at once (short steps too)."""
    return 0.0 if os.environ.get("NHCONTROL_PROGRESS", "").strip() == "1" else delay


def progress(iterable: Iterable[T], desc: str = "", *, total: int | None = None,
             delay: float = 2.0, **kw: Any) -> Iterator[T]:
    """Iterate ``iterable`` with a tqdm progress bar on stderr (shown after ``delay`` s)."""
    from tqdm.auto import tqdm

    return iter(tqdm(iterable, desc=desc, total=total, delay=_delay(delay), disable=_disable(),
                     file=sys.stderr, leave=False, dynamic_ncols=True, **kw))


def progress_bar(total: int, desc: str = "", *, delay: float = 2.0, **kw: Any):
    """A manual tqdm bar (``with progress_bar(n, "MPC") as bar: ... bar.update()``)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, delay=_delay(delay), disable=_disable(), file=sys.stderr,
                leave=False, dynamic_ncols=True, **kw)


@contextmanager
def spinner(desc: str, *, delay: float = 2.0, interval: float = 0.5) -> Iterator[None]:
    """Show ``desc: <elapsed time>`` on stderr while the block runs, from ``delay`` seconds on
    (a step without a loop to count: a model build). Same rules as `progress()`: terminals only,
    ``NHCONTROL_PROGRESS``, never inside `quiet()`. A daemon thread redraws the line every
    ``interval`` seconds; it is stopped and joined when the block ends."""
    disable = _disable()
    if disable is None and _not_a_terminal(sys.stderr):
        disable = True          # what tqdm decides for None, without importing tqdm
    if disable is True:
        yield
        return
    delay = _delay(delay)
    import threading

    from tqdm.auto import tqdm

    bar = tqdm(total=None, desc=desc, disable=disable, file=sys.stderr, leave=False,
               dynamic_ncols=True, bar_format="{desc}: {elapsed}", delay=delay)
    if bar.disable:
        yield
        return
    stop = threading.Event()

    def tick() -> None:
        if stop.wait(delay):
            return
        while True:
            bar.refresh()
            if stop.wait(interval):
                return

    thread = threading.Thread(target=tick, name="nhcontrol-spinner", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.close()
