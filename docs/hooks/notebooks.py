"""mkdocs hook: one page per notebook of ``notebooks/`` (jupytext ``py:percent`` text files).

Markdown cells become the page's text and code cells ``python`` blocks, in order; the page says
how to open the notebook in Jupyter. Nothing is executed here (``tests/test_notebooks.py`` runs
every notebook from top to bottom) and nothing but the standard library is needed, so the site
builds offline with the ``docs`` extra alone. ``mkdocs.yml`` lists the pages under "Notebooks" as
``notebooks/<name>.md``.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
_CELL = re.compile(r"^# %%(.*)$")


def cells(text: str) -> list[tuple[str, str]]:
    """``[(kind, source), ...]`` of a ``py:percent`` file: kind ``"markdown"`` or ``"code"``; the
    jupytext header (the leading comment block) is skipped."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = _CELL.match(line)
        if m:
            out.append(("markdown" if "[markdown]" in m.group(1) else "code", []))
        elif out:
            out[-1][1].append(line)
    result = []
    for kind, lines in out:
        if kind == "markdown":
            lines = [ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in lines]
        result.append((kind, "\n".join(lines).strip("\n")))
    return result


def page(path: Path) -> str:
    """The markdown page of the notebook ``path``."""
    parts = []
    rel = f"notebooks/{path.name}"
    for i, (kind, src) in enumerate(cells(path.read_text(encoding="utf-8"))):
        if kind == "markdown":
            parts.append(src)
            if i == 0:
                parts.append(f"*This page is the notebook `{rel}`, kept as a jupytext text file. "
                             f"Open it in Jupyter with `jupytext --to notebook {rel}` (or with the "
                             f"jupytext extension installed, open the `.py` file directly); "
                             f"`tests/test_notebooks.py` runs it from top to bottom.*")
        elif src.strip():
            parts.append(f"```python\n{src}\n```")
    return "\n\n".join(parts) + "\n"


def on_files(files, config):
    for path in sorted(NOTEBOOKS.glob("*.py")):
        files.append(File.generated(config, f"notebooks/{path.stem}.md", content=page(path)))
    return files
