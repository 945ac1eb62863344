"""Imports point one way (../shared/ARCHITECTURE.md): each stage imports only stages to its left
and ``nhcontrol._util``; ``models`` is built only from ``modeling``, ``compiled``, ``reference`` and ``linearization``;
nothing below the edge (``plotting``, ``cli``, ``reproduce``) imports the edge. The application
layer ``applications`` (lane change, Monte-Carlo verification, output-feedback studies) builds on
the pipeline's stages, ``models`` and ``sweep``; nothing but the edge imports it.

The sanctioned exceptions are ``MultibodySystem.compile()`` (the architecture's own
``system.compile()``), which imports ``compiled`` lazily inside the method, and
``CompiledModel.linearizer()`` (the prepared one-point linearizer of ARCHITECTURE.md, stage 4),
which imports ``linearization.prepared`` lazily inside the method.

Former module paths (``nhcontrol.linearize`` for the subpackage) are not used inside the library:
an import of one is reported with the current name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "nhcontrol"
ORDER = ["_util", "modeling", "compiled", "reference", "linearization", "systems", "analysis",
         "design", "simulate"]
EDGE = {"plotting", "cli", "reproduce"}
# models may also use linearization (e.g. the bicycle's canonical matrices, Meijaard et al. 2007);
# never analysis or design (ARCHITECTURE.md).
ALLOWED_FOR_MODELS = {"_util", "modeling", "compiled", "reference", "linearization"}
EXCEPTIONS = {("modeling", "compiled", "compile"), ("compiled", "linearization", "linearizer")}
APPLICATIONS = "applications"
ALLOWED_FOR_APPLICATIONS = {*ORDER, "models", "sweep", "optimize"}
# optimize (ARCHITECTURE.md): after linearization; imports compiled, reference, linearization
OPTIMIZE = "optimize"
ALLOWED_FOR_OPTIMIZE = {"_util", "compiled", "reference", "linearization"}
# former names kept as import paths for users (nhcontrol/__init__.py and the top-level shim
# modules); the library itself uses the new ones
FORMER = {"linearize": "linearization", "lane_change_control": "applications.lane_change",
          "verify": "applications.verify", "output_feedback_studies": "applications.output_feedback"}


def _stage(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path):
    tree = ast.parse(path.read_text())
    stage = _stage(path)
    is_pkg_module = len(path.relative_to(SRC).parts) > 1

    class Visitor(ast.NodeVisitor):
        def __init__(self):
            self.func: list[str] = []
            self.found: list[tuple[str, str, int]] = []

        def visit_FunctionDef(self, node):
            self.func.append(node.name)
            self.generic_visit(node)
            self.func.pop()

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_If(self, node):
            test = node.test
            name = getattr(test, "id", None) or getattr(test, "attr", None)
            if name == "TYPE_CHECKING":  # type-only imports do not run
                for child in node.orelse:
                    self.visit(child)
                return
            self.generic_visit(node)

        def _add(self, target: str, lineno: int):
            self.found.append((target, self.func[-1] if self.func else "", lineno))

        def visit_Import(self, node):
            for alias in node.names:
                if alias.name.startswith("nhcontrol."):
                    self._add(alias.name.split(".")[1], node.lineno)

        def visit_ImportFrom(self, node):
            mod = node.module or ""
            if node.level == 0:
                if mod.startswith("nhcontrol."):
                    self._add(mod.split(".")[1], node.lineno)
                elif mod == "nhcontrol":
                    for alias in node.names:
                        self._add(alias.name, node.lineno)
                return
            up = node.level - (1 if is_pkg_module else 0)
            if up <= 0 and is_pkg_module:
                return  # inside the own subpackage
            if up >= 1 or not is_pkg_module:
                if mod:
                    self._add(mod.split(".")[0], node.lineno)
                else:
                    for alias in node.names:
                        self._add(alias.name, node.lineno)

    v = Visitor()
    v.visit(tree)
    return stage, v.found


def _violations():
    out = []
    for path in sorted(SRC.rglob("*.py")):
        stage, found = _imports(path)
        if stage in EDGE or stage == "__init__" or stage in FORMER:
            continue
        for target, func, lineno in found:
            if target == stage or target in ("__version__",):
                continue
            where = f"{path.relative_to(SRC)}:{lineno}"
            if target in FORMER:
                out.append(f"{where} imports the former path {target!r}; use {FORMER[target]!r}")
                continue
            if (stage, target, func) in EXCEPTIONS:
                continue
            if target in EDGE:
                out.append(f"{where} imports the edge module {target!r}")
            elif stage == APPLICATIONS:
                if target not in ALLOWED_FOR_APPLICATIONS:
                    out.append(f"{where}: applications import {target!r} (allowed: "
                               f"{sorted(ALLOWED_FOR_APPLICATIONS)})")
            elif target == APPLICATIONS:
                out.append(f"{where}: {stage!r} imports the application layer (only the edge may)")
            elif stage == OPTIMIZE:
                if target not in ALLOWED_FOR_OPTIMIZE:
                    out.append(f"{where}: optimize imports {target!r} (allowed: {sorted(ALLOWED_FOR_OPTIMIZE)})")
            elif stage == "models":
                if target not in ALLOWED_FOR_MODELS:
                    out.append(f"{where}: models import {target!r} (allowed: {sorted(ALLOWED_FOR_MODELS)})")
            elif stage in ORDER and target in ORDER and ORDER.index(target) > ORDER.index(stage):
                out.append(f"{where}: stage {stage!r} imports {target!r}, which is to its right")
    return out


def test_imports_point_one_way():
    bad = _violations()
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("stage", ORDER[1:])
def test_every_stage_exists(stage):
    assert (SRC / stage / "__init__.py").exists()


def test_application_modules_live_in_their_layer():
    """No application study sits at the top level beside the stages: the top-level modules are
    the package's own files, the edge and the former paths (re-exports of ``applications``)."""
    top = {p.stem for p in SRC.glob("*.py")} - {"__init__"}
    assert top <= EDGE | set(FORMER), sorted(top - EDGE - set(FORMER))
    for old, new in FORMER.items():
        path = SRC / f"{old}.py"
        if path.exists():
            text = path.read_text()
            assert f"from .{new.rpartition('.')[0]} import {new.rpartition('.')[2]} as _moved" in text
            assert len(text.splitlines()) < 25, f"{old}.py is more than a re-export of {new}"
