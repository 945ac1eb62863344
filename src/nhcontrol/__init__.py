"""nhcontrol — exact linearization, analysis and control of nonholonomic multibody systems.

The pipeline (see ``docs/dev/contracts.md``)::

    modeling -> compiled -> reference -> linearize -> systems -> analysis -> design
                                                               simulate <-'

Subpackages are imported lazily, so ``import nhcontrol`` is cheap.
``nhcontrol.linearize`` is both the subpackage and a callable:
``nhcontrol.linearize(model, reference, partition)``.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_SUBPACKAGES = (
    "modeling", "compiled", "reference", "linearize", "systems", "analysis", "design",
    "simulate", "models", "plotting", "reproduce", "sweep", "verify", "cli", "interop",
)

__all__ = ["__version__", *_SUBPACKAGES]


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'nhcontrol' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
