"""Former path of [`nhcontrol.applications.output_feedback`][nhcontrol.applications.output_feedback] (moved into the
application layer); every name here is that module's, so existing imports and pickles keep
working. New code imports ``nhcontrol.applications.output_feedback``."""

from __future__ import annotations

from typing import Any

from .applications import output_feedback as _moved
from .applications.output_feedback import *  # noqa: F401,F403
from .applications.output_feedback import __all__  # noqa: F401

_MOVED_TO = "nhcontrol.applications.output_feedback"


def __getattr__(name: str) -> Any:       # private names too (e.g. in pickles of this path)
    return getattr(_moved, name)
