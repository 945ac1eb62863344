"""Former path of [`nhcontrol.applications.lane_change`][nhcontrol.applications.lane_change] (moved into the
application layer); every name here is that module's, so existing imports and pickles keep
working. New code imports ``nhcontrol.applications.lane_change``."""

from __future__ import annotations

from typing import Any

from .applications import lane_change as _moved
from .applications.lane_change import *  # noqa: F401,F403
from .applications.lane_change import __all__  # noqa: F401

_MOVED_TO = "nhcontrol.applications.lane_change"


def __getattr__(name: str) -> Any:       # private names too (e.g. in pickles of this path)
    return getattr(_moved, name)
