"""Public signatures name the real classes: ``cm: CompiledModel``,
``ref: Reference``, ``partition: Partition | Mapping``, imported under ``if TYPE_CHECKING:`` (no
import cost, no cycle). Every such annotation resolves to the class it names."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import typing
from pathlib import Path

import nhcontrol

SRC = Path(__file__).resolve().parents[1] / "src" / "nhcontrol"
NAMES = ("CompiledModel", "Reference", "Partition")


def _type_checking_names(mod) -> dict:
    """The names a module imports under ``if TYPE_CHECKING:`` (imported here for real)."""
    tree = ast.parse(inspect.getsource(mod))
    ns: dict = {"__name__": mod.__name__, "__package__": mod.__package__}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            exec(compile(ast.Module(body=node.body, type_ignores=[]), mod.__name__, "exec"), ns)
    return {k: v for k, v in ns.items() if not k.startswith("__")}


def _annotated(mod):
    for obj in vars(mod).values():
        if getattr(obj, "__module__", None) != mod.__name__:
            continue
        if inspect.isfunction(obj):
            yield obj
        elif inspect.isclass(obj):
            yield obj
            for v in vars(obj).values():
                v = getattr(v, "__func__", v)
                if inspect.isfunction(v):
                    yield v


def _leaves(value, glob) -> list:
    """Every type inside an annotation (unions, generics, quoted parts evaluated)."""
    if isinstance(value, str):
        return _leaves(eval(value, glob), glob)
    if isinstance(value, typing.ForwardRef):
        return _leaves(value.__forward_arg__, glob)
    args = typing.get_args(value)
    return [value] + [leaf for a in args for leaf in _leaves(a, glob)]


def test_no_any_for_the_core_objects():
    pattern = re.compile(r"\b(cm|ref|partition)\b: Any\b")
    bad = [f"{p.relative_to(SRC)}:{i}: {line.strip()}"
           for p in sorted(SRC.rglob("*.py"))
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if pattern.search(line)]
    assert not bad, "annotate with CompiledModel / Reference / Partition:\n" + "\n".join(bad)


def test_annotations_resolve_to_the_classes():
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition
    from nhcontrol.reference import Reference

    real = {"CompiledModel": CompiledModel, "Reference": Reference, "Partition": Partition}
    bad, checked = [], 0
    for info in pkgutil.walk_packages(nhcontrol.__path__, "nhcontrol."):
        mod = importlib.import_module(info.name)
        if getattr(mod, "_MOVED_TO", None):
            continue
        extra = None
        for obj in _annotated(mod):
            ann = {k: v for k, v in getattr(obj, "__annotations__", {}).items()
                   if isinstance(v, str) and any(re.search(rf"\b{n}\b", v) for n in NAMES)}
            if not ann:
                continue
            if extra is None:
                extra = _type_checking_names(mod)
            glob = {**vars(mod), **extra}
            for key, text in ann.items():
                checked += 1
                try:
                    leaves = _leaves(text, glob)
                except Exception as exc:       # noqa: BLE001 - reported with the place
                    bad.append(f"{info.name}.{obj.__qualname__}: {key}: {text!r} ({exc})")
                    continue
                for n in NAMES:
                    if re.search(rf"\b{n}\b", text) and real[n] not in leaves:
                        bad.append(f"{info.name}.{obj.__qualname__}: {key}: {text!r} is not {n}")
    assert checked > 150
    assert not bad, "\n".join(bad)
