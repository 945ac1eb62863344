"""The library's logger, ``logging.getLogger("nhcontrol")`` (silent by default).

Modules log through children of it (``get_logger(__name__)`` gives ``nhcontrol.compiled.model``
...): model builds and their timing, kernel-cache decisions (hit, miss, rebuild), solver
fallbacks and the progress of long runs. A library does not configure logging: the package
installs a ``NullHandler`` only, so nothing is printed unless the application asks for it —
``nhcontrol -v ...`` on the command line, or in Python::

    import logging
    logging.basicConfig(level=logging.INFO)          # everything at INFO, or only ours:
    logging.getLogger("nhcontrol").setLevel(logging.DEBUG)
"""

from __future__ import annotations

import logging
import sys

__all__ = ["LOGGER_NAME", "get_logger", "enable_console_logging"]

LOGGER_NAME = "nhcontrol"
"""Name of the package's root logger."""

logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())


def get_logger(name: str = LOGGER_NAME) -> logging.Logger:
    """The logger ``name`` (a module's ``__name__`` under ``nhcontrol``, or the root ``"nhcontrol"``)."""
    if name != LOGGER_NAME and not name.startswith(LOGGER_NAME + "."):
        name = f"{LOGGER_NAME}.{name}"
    return logging.getLogger(name)


def enable_console_logging(verbosity: int = 1) -> logging.Handler | None:
    """Print the package's log records on standard error: ``verbosity`` 1 → INFO, 2+ → DEBUG
    (0: nothing). Returns the handler added (``None`` for 0); used by the CLI's ``-v``."""
    if verbosity <= 0:
        return None
    log = logging.getLogger(LOGGER_NAME)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s",
                                           datefmt="%H:%M:%S"))
    log.addHandler(handler)
    log.setLevel(logging.INFO if verbosity == 1 else logging.DEBUG)
    return handler
