"""Lazy exports of a package (PEP 562): a name is imported from the submodule that defines it
when first used, then kept in the package's namespace."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_getattr(package: str, namespace: dict[str, Any], exports: Mapping[str, str],
                 submodules: tuple[str, ...] = ()) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``exports`` maps a public name to the submodule
    that defines it (the value is stored in ``namespace``, the package's ``globals()``, so later
    look-ups skip this function); ``submodules`` are returned as modules."""

    def __getattr__(name: str) -> Any:
        sub = exports.get(name)
        if sub is not None:
            value = getattr(importlib.import_module(f"{package}.{sub}"), name)
            namespace[name] = value
            return value
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
