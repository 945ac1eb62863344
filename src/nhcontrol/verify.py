"""Former path of [`nhcontrol.applications.verify`][nhcontrol.applications.verify] (moved into the
application layer); every name here is that module's, so existing imports and pickles keep
working. New code imports ``nhcontrol.applications.verify``."""

from __future__ import annotations

from typing import Any

from .applications import verify as _moved
from .applications.verify import *  # noqa: F401,F403
from .applications.verify import __all__  # noqa: F401

_MOVED_TO = "nhcontrol.applications.verify"


def __getattr__(name: str) -> Any:       # private names too (e.g. in pickles of this path)
    return getattr(_moved, name)
