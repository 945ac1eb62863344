"""The notebooks of ``notebooks/`` run from top to bottom.

They are kept as jupytext text files (``py:percent``: diffable, reviewable, importable by the docs
site); each test reads one with jupytext and executes it cell by cell in a fresh IPython kernel
with nbclient, as a student opening it in Jupyter would (``jupytext --to notebook`` makes the
``.ipynb``). The notebooks assert their own headline numbers, so a wrong result fails here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")


def test_there_are_notebooks():
    assert {p.stem for p in NOTEBOOKS} >= {"bicycle_benchmark", "sympy_mechanics_to_lqr",
                                           "ball_plate_pipeline", "output_feedback_ekf"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    nb = jupytext.read(path)
    assert nb.metadata["jupytext"]["text_representation"]["format_name"] == "percent"
    monkeypatch.setenv("MPLBACKEND", "Agg")              # the kernel inherits the environment
    monkeypatch.setenv("NHCONTROL_PROGRESS", "0")
    # run from notebooks/, as Jupyter does (a notebook may import from ../examples); the
    # notebooks write no file
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


def test_docs_page_of_each_notebook():
    """docs/hooks/notebooks.py renders each notebook as a page: the title first, every code cell
    as a python block, every markdown cell as text (the site lists them under "Notebooks")."""
    import importlib.util

    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location("nb_hook", ROOT / "docs/hooks/notebooks.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    nav = (ROOT / "mkdocs.yml").read_text()
    for path in NOTEBOOKS:
        nb = jupytext.read(path)
        text = hook.page(path)
        assert text.startswith("# ") and f"`notebooks/{path.name}`" in text
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert text.count("```python\n") == len(code)
        for c in nb.cells:
            first = c.source.strip().splitlines()[0]
            assert first in text, (path.name, first)
        assert f"notebooks/{path.stem}.md" in nav
