"""Every public name has an API entry: each name in ``__all__`` of every
public module and subpackage of nhcontrol is rendered by a ``::: target`` line of docs/api/*.md
— the module itself, a package that re-exports the same object, or the object named directly.

Static (no site build): the ``:::`` targets are imported and compared by identity. On failure
the message lists the missing names per module and the line to add. (The rendered anchors are
checked on the built site by tests/test_docs_render.py.)"""

from __future__ import annotations

import importlib
import pkgutil
import re
import types
from pathlib import Path

import nhcontrol

ROOT = Path(__file__).resolve().parents[1]


def public_modules() -> list[str]:
    """Every importable module and package of nhcontrol whose dotted path has no ``_`` part
    (former paths that only re-export a moved module, ``_MOVED_TO``, are documented there)."""
    names = ["nhcontrol"]
    for info in pkgutil.walk_packages(nhcontrol.__path__, "nhcontrol."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        if getattr(importlib.import_module(info.name), "_MOVED_TO", None):
            continue
        names.append(info.name)
    return sorted(names)


def api_targets() -> dict[str, str]:
    """``::: target`` of docs/api/*.md -> page."""
    out = {}
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        for t in re.findall(r"^::: (\S+)", page.read_text(encoding="utf-8"), re.M):
            out[t] = page.name
    return out


def _resolve(target: str):
    try:
        obj = importlib.import_module(target)
    except ImportError:
        obj = None
    if obj is None or getattr(obj, "_MOVED_TO", None):   # nhcontrol.linearize: the function, not
        mod, _, attr = target.rpartition(".")            # the former import path of that name
        return getattr(importlib.import_module(mod), attr)
    return obj


def missing_entries() -> dict[str, list[str]]:
    targets = api_targets()
    rendered_ids: set[int] = set()          # objects rendered by some ::: line
    rendered_names: set[str] = set()        # "<module>.<name>" rendered
    for t in targets:
        obj = _resolve(t)
        rendered_ids.add(id(obj))
        if isinstance(obj, types.ModuleType):
            for n in getattr(obj, "__all__", []):
                if hasattr(obj, n):
                    v = getattr(obj, n)
                    rendered_names.add(f"{t}.{n}")
                    if isinstance(v, (type, types.FunctionType, types.BuiltinFunctionType)) or callable(v):
                        rendered_ids.add(id(v))
    missing: dict[str, list[str]] = {}
    for modname in public_modules():
        mod = importlib.import_module(modname)
        for n in getattr(mod, "__all__", []):
            if n.startswith("__"):
                continue
            v = getattr(mod, n, None)
            if isinstance(v, types.ModuleType):
                if getattr(v, "_MOVED_TO", None):       # a former path, documented where it moved
                    continue
                if any(t == v.__name__ or t.startswith(v.__name__ + ".") for t in targets):
                    continue
            elif f"{modname}.{n}" in rendered_names or f"{modname}.{n}" in targets:
                continue
            elif (isinstance(v, type) or callable(v)) and id(v) in rendered_ids:
                continue
            missing.setdefault(modname, []).append(n)
    return missing


def test_targets_resolve():
    bad = []
    for t, page in api_targets().items():
        try:
            _resolve(t)
        except (ImportError, AttributeError) as exc:
            bad.append(f"{page}: ::: {t} ({exc})")
    assert not bad, "API pages name things that do not exist:\n" + "\n".join(bad)


def test_every_public_name_has_an_api_entry():
    missing = missing_entries()
    lines = [f"  {m}: {', '.join(ns)}   -> add '::: {m}' to a docs/api page (or document the names)"
             for m, ns in sorted(missing.items())]
    total = sum(len(v) for v in missing.values())
    assert not missing, f"{total} public names (__all__) have no API entry:\n" + "\n".join(lines)
