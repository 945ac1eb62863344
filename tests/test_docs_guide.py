"""Every ```python block of docs/guide/*.md runs, top to bottom per page.

Convention for a fragment that is not meant to run: its first line is a comment starting with
``# not run`` followed by the reason, e.g. ``# not run: fragment of build()`` — visible in the
rendered page. Keep such fragments few; ```text blocks are for output and formulas.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide"
BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)
SKIP = "# not run"


def blocks(page: Path) -> list[str]:
    return [b for b in BLOCK.findall(page.read_text(encoding="utf-8"))]


PAGES = sorted(GUIDE.glob("*.md"))

#: Pages that need an optional dependency (extra) which the default test install does not have:
#: they run where it is installed and are skipped, with the reason, elsewhere.
OPTIONAL = {"casadi": "casadi", "optimize": "cyipopt"}

#: Pages that build generated C with the machine's compiler (``make``): marked ``c_compiler``,
#: skipped on a machine without one (tests/conftest.py)
NEEDS_C = {"c_export"}


def test_the_pages_that_need_a_compiler_exist():
    assert NEEDS_C <= {p.stem for p in PAGES}
    assert all("make" in (GUIDE / f"{stem}.md").read_text(encoding="utf-8") for stem in NEEDS_C)


def test_skip_markers_are_few():
    all_blocks = [b for p in PAGES for b in blocks(p)]
    skipped = [b for b in all_blocks if b.lstrip().startswith(SKIP)]
    assert len(skipped) <= max(3, len(all_blocks) // 4), f"{len(skipped)} of {len(all_blocks)} skipped"


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.c_compiler)
                                  if p.stem in NEEDS_C else p for p in PAGES],
                         ids=[p.stem for p in PAGES])
def test_guide_page_runs(page, tmp_path, monkeypatch):
    if page.stem in OPTIONAL:
        pytest.importorskip(OPTIONAL[page.stem], reason=f"{page.name} needs the optional "
                            f"dependency {OPTIONAL[page.stem]!r} (pip install 'nhcontrol[{page.stem}]')")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    ns: dict = {"__name__": f"guide_{page.stem}"}
    for i, code in enumerate(blocks(page)):
        if code.lstrip().startswith(SKIP):
            continue
        try:
            exec(compile(code, f"{page.name}[block {i + 1}]", "exec"), ns)
        except Exception as exc:  # noqa: BLE001 - report which block failed
            raise AssertionError(f"{page.name}, python block {i + 1} failed: {type(exc).__name__}: "
                                 f"{exc}\n--- block ---\n{code}") from exc
    import matplotlib.pyplot as plt
    plt.close("all")
