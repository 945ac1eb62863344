"""The documentation site is complete: every nav entry exists, every page is reachable, and every
public subpackage has an API reference page. (``mkdocs build --strict`` itself runs in
``tests/test_docs_render.py``, whose pages it checks.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _nav_pages() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("nav:"):]
    return re.findall(r":\s*([\w/.\-]+\.md)\s*$", nav, flags=re.M) + ["index.md"]


def _exists(page: str) -> bool:
    """A page of docs/, or a notebook page (docs/hooks/notebooks.py makes ``notebooks/<name>.md``
    from ``notebooks/<name>.py``)."""
    if page.startswith("notebooks/"):
        return (ROOT / page).with_suffix(".py").is_file()
    return (DOCS / page).exists()


def test_nav_entries_exist():
    missing = [p for p in _nav_pages() if not _exists(p)]
    assert not missing, f"mkdocs.yml nav lists missing pages: {missing}"


def test_every_page_is_in_nav():
    nav = set(_nav_pages())
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    pages |= {f"notebooks/{p.stem}.md" for p in (ROOT / "notebooks").glob("*.py")}
    orphans = sorted(pages - nav)
    assert not orphans, f"pages not reachable from the nav: {orphans}"


@pytest.mark.parametrize("stage", ["modeling", "compiled", "reference", "linearization", "systems",
                                   "analysis", "design", "simulate", "models"])
def test_api_page_per_stage(stage):
    page = DOCS / "api" / f"{stage}.md"
    assert f"::: nhcontrol.{stage}" in page.read_text()


def test_gallery_images_exist():
    """docs/gallery.md (written by docs/gen_gallery.py) shows reproduce targets' figures; every
    image it references is committed and every section names a reproduce target."""
    from nhcontrol.reproduce import TARGETS

    page = (DOCS / "gallery.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", page)
    assert images, "the gallery shows no figure"
    missing = [i for i in images if not (DOCS / i).is_file()]
    assert not missing, f"gallery images missing (run python docs/gen_gallery.py): {missing}"
    sections = re.findall(r"^## `([\w-]+)`", page, flags=re.M)
    assert sections and set(sections) <= set(TARGETS), sorted(set(sections) - set(TARGETS))


def test_gallery_script_shrinks_and_keeps_caption(tmp_path):
    """docs/gen_gallery.py: a 300-dpi figure is reduced to the web width and its title and
    caption (stored by plotting.style.savefig) come back for the page."""
    import runpy

    from PIL import Image

    from nhcontrol.plotting.style import cite, new_figure, savefig

    gallery = runpy.run_path(str(DOCS / "gen_gallery.py"), run_name="gallery")
    fig, ax = new_figure(title="Rolling hoop: eigenvalues vs speed")
    ax.plot([0, 1], [1, 0])
    cite(fig, "thesis", "Sect. 5.3")
    src = savefig(fig, tmp_path, "big")
    text = gallery["shrink"](src, tmp_path / "small.png", 600)
    assert text["title"] == "Rolling hoop: eigenvalues vs speed"
    assert "Reproduces Sect. 5.3" in text["caption"]
    with Image.open(tmp_path / "small.png") as im:
        assert im.width == 600
