"""Progress bars for long reproduce steps (tqdm on standard error).

``progress(iterable, desc="speed sweep")`` wraps a loop in a tqdm bar that appears only when the
step lasts longer than ``delay`` seconds (default 2 s) and only on an interactive terminal (tqdm's
``disable=None``), so ``--json`` output, logs and tests stay clean. ``NHCONTROL_PROGRESS=0``
switches bars off, ``NHCONTROL_PROGRESS=1`` forces them on.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Iterator, TypeVar

__all__ = ["progress", "progress_bar"]

T = TypeVar("T")


def _disable() -> bool | None:
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


def progress(iterable: Iterable[T], desc: str = "", *, total: int | None = None,
             delay: float = 2.0, **kw: Any) -> Iterator[T]:
    """Iterate ``iterable`` with a tqdm progress bar on stderr (shown after ``delay`` s)."""
    from tqdm.auto import tqdm

    return iter(tqdm(iterable, desc=desc, total=total, delay=delay, disable=_disable(),
                     file=sys.stderr, leave=False, dynamic_ncols=True, **kw))


def progress_bar(total: int, desc: str = "", *, delay: float = 2.0, **kw: Any):
    """A manual tqdm bar (``with progress_bar(n, "MPC") as bar: ... bar.update()``)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, delay=delay, disable=_disable(), file=sys.stderr,
                leave=False, dynamic_ncols=True, **kw)
