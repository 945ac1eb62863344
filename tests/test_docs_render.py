"""The documentation site as a reader gets it: built with ``mkdocs build --strict`` into a temporary
directory, then read as HTML.

* every formula is typeset by the MathJax the site serves (no CDN: the site works offline), with
  no MathJax error (``Multiple \\tag``, undefined control sequences, unbalanced braces), checked by
  running that MathJax under node on every formula;
* no stray ``$`` is left in the text (a formula the Markdown did not recognise), no display block
  carries two ``\\tag``s in one row, no raw reST role (``:func:`` ...), ``.. math::`` or ``::``
  literal marker is printed, and no page loads a script from another host;
* the references page names the sources; README and the CLI help point to it.

Needs the ``docs`` extra (mkdocs, mkdocstrings, django-static-mathjax); the MathJax check also
needs ``node``.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")
mathjax = pytest.importorskip("mathjax", reason="docs extra (django-static-mathjax) not installed")

MATH = re.compile(r'<(div|span) class="arithmatex">(.*?)</\1>', re.S)
ROLE = re.compile(r"(?<![\w:]):(func|class|meth|mod|attr|data|math|exc|obj|ref|py:\w+):(`|(?=\S))")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    # (no -q: mkdocs' quiet mode drops the warnings before --strict counts them, so a quiet
    # strict build passes with warnings; mkdocstrings' docstring warnings must fail it)
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def _pages(site: Path) -> dict[str, str]:
    return {str(p.relative_to(site)): p.read_text(encoding="utf-8")
            for p in sorted(site.rglob("index.html")) if "404" not in str(p)}


def _formulas(page: str) -> list[tuple[str, bool]]:
    """(TeX, display) of every arithmatex element, delimiters removed, entities decoded."""
    out = []
    for tag, body in MATH.findall(page):
        tex = html.unescape(re.sub(r"<[^>]+>", "", body)).strip()
        display = tex.startswith("\\[")
        tex = tex[2:-2] if tex[:2] in ("\\[", "\\(") else tex
        out.append((tex, display))
    return out


def _text(page: str) -> str:
    """Visible text of the article, without formulas, code and scripts."""
    body = page[page.find("<article"):page.rfind("</article>")] if "<article" in page else page
    body = MATH.sub(" ", body)
    body = re.sub(r"<(code|pre|script|style)\b.*?</\1>", " ", body, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def test_no_stray_dollar(site):
    bad = {}
    for name, page in _pages(site).items():
        text = _text(page)
        hits = [text[max(0, m.start() - 60):m.start() + 40].replace("\n", " ")
                for m in re.finditer(r"\$", text)]
        if hits:
            bad[name] = hits[:3]
    assert not bad, f"unrendered $...$ (formula not recognised by arithmatex): {bad}"


def test_one_tag_per_row(site):
    bad = []
    for name, page in _pages(site).items():
        for tex, _ in _formulas(page):
            if any(row.count("\\tag") > 1 for row in re.split(r"\\\\", tex)):
                bad.append((name, tex[:120]))
    assert not bad, f"several \\tag in one row of a display (MathJax 'Multiple \\tag'): {bad}"


def test_no_rest_markup(site):
    bad = {}
    for name, page in _pages(site).items():
        text = _text(page) + " ".join(re.findall(r"<code>([^<]*)</code>", page))
        hits = [m.group(0) for m in ROLE.finditer(text)]
        hits += re.findall(r"\.\. (?:math|code-block|note|warning)::", text)
        hits += re.findall(r"\]\[nhcontrol\.[\w.]*\]", text)   # unresolved cross-reference
        hits += [line.strip()[-40:] for line in _text(page).splitlines()
                 if re.search(r"\w::\s*$", line)]
        if hits:
            bad[name] = hits[:5]
    assert not bad, f"raw reST roles or literal markers in the HTML: {bad}"


def test_mathjax_served_by_the_site(site):
    js = site / "javascripts" / "mathjax" / "tex-svg.js"
    assert js.is_file() and js.stat().st_size > 100_000
    assert (site / "javascripts" / "mathjax" / "LICENSE").is_file()
    for name, page in _pages(site).items():
        remote = re.findall(r'<script[^>]+src="(https?:[^"]+)"', page)
        assert not remote, f"{name} loads scripts from another host: {remote}"
    page = (site / "theory" / "ltv" / "index.html").read_text()
    assert "javascripts/mathjax/tex-svg.js" in page


@pytest.mark.skipif(shutil.which("node") is None, reason="node is needed to run MathJax")
def test_every_formula_typesets(site):
    items = [{"tex": tex, "display": display, "where": name}
             for name, page in _pages(site).items() for tex, display in _formulas(page)]
    assert len(items) > 500          # the theory pages hold several hundred formulas
    mj = Path(mathjax.__file__).resolve().parent / "static" / "mathjax"
    proc = subprocess.run(["node", str(ROOT / "tests" / "mathjax_check.js"), str(mj)],
                          input=json.dumps(items), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    errors = json.loads(proc.stdout)
    assert not errors, f"{len(errors)} formulas fail in MathJax: {errors[:5]}"


def test_mathjax_check_detects_errors():
    """The node check itself reports a duplicate tag and an undefined macro."""
    if shutil.which("node") is None:
        pytest.skip("node is needed to run MathJax")
    mj = Path(mathjax.__file__).resolve().parent / "static" / "mathjax"
    items = [{"tex": r"x \tag{1} \tag{2}", "display": True, "where": "a"},
             {"tex": r"\notamacro{x}", "display": False, "where": "b"},
             {"tex": r"\frac{a}{b} \tag{8.86}", "display": True, "where": "c"}]
    proc = subprocess.run(["node", str(ROOT / "tests" / "mathjax_check.js"), str(mj)],
                          input=json.dumps(items), capture_output=True, text=True, timeout=60)
    assert [e["where"] for e in json.loads(proc.stdout)] == ["a", "b"]


def test_references_named(site):
    refs = " ".join((site / "references" / "index.html").read_text().split())
    for needle in ("García-Agúndez", "Modelling and Linear Stability Analysis of Highly Mobile "
                   "Nonholonomic Multibody Systems", "Universidad de Sevilla", "2023",
                   "Meijaard", "Proceedings of the Royal Society A", "463",
                   "Nonholonomic dynamics and control of road vehicles"):
        assert needle in refs, needle
    readme = (ROOT / "README.md").read_text()
    assert "García-Agúndez" in readme and "docs/references.md" in readme


def test_no_talk_of_copies():
    """Docs and docstrings say 'derived here', never what a copy of the thesis holds."""
    pattern = re.compile(r"our copy|missing from (?:our|the thesis)|our source text|missing pages",
                         re.I)
    hits = [f"{p.relative_to(ROOT)}" for p in [*ROOT.joinpath("docs").rglob("*.md"),
                                              *ROOT.joinpath("src").rglob("*.py"),
                                              ROOT / "README.md"]
            if pattern.search(p.read_text(encoding="utf-8"))]
    assert not hits, hits


def _api_modules() -> dict[str, list[str]]:
    """Module documented by each ``::: module`` line of docs/api/*.md -> its page names."""
    out: dict[str, list[str]] = {}
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        for mod in re.findall(r"^::: (\S+)", page.read_text(), re.M):
            out.setdefault(mod, []).append(page.stem)
    return out


def test_every_public_name_documented(site):
    """Every name of ``__all__`` of a documented module has an entry (anchor) on its API page,
    and every public subpackage of nhcontrol has an API page."""
    import importlib

    import nhcontrol

    api = _api_modules()
    subpackages = [n for n in nhcontrol.__all__ if not n.startswith("_") and n != "cli"
                   and not getattr(getattr(nhcontrol, n), "_MOVED_TO", None)]   # former paths
    undocumented_pkgs = [n for n in subpackages
                         if not any(m == f"nhcontrol.{n}" or m.startswith(f"nhcontrol.{n}.")
                                    for m in api)]
    assert not undocumented_pkgs, f"subpackages without an API page: {undocumented_pkgs}"
    html_text = "".join(p.read_text() for p in (site / "api").rglob("index.html"))
    missing = {}
    for mod in api:
        try:
            module = importlib.import_module(mod)
        except ImportError:   # a ::: line naming a function, not a module
            continue
        if getattr(module, "_MOVED_TO", None):   # nhcontrol.linearize: the function, not the
            continue                             # former import path of the same name
        names = getattr(module, "__all__", [])
        # a function named like its submodule (analysis.gramian.gramian) is rendered from the
        # submodule; a subpackage in __all__ has ::: entries of its own modules
        gone = [n for n in names if f'id="{mod}.{n}"' not in html_text
                and f'id="{mod}.{n}.{n}"' not in html_text
                and not any(m.startswith(f"{mod}.{n}.") for m in api)]
        if gone:
            missing[mod] = gone
    assert not missing, f"public names (__all__) without an API entry: {missing}"


@pytest.mark.parametrize("mod, first", [("nhcontrol.linearization", "linearize"),
                                        ("nhcontrol.analysis", "controllability"),
                                        ("nhcontrol.design", "finite_horizon_lqr"),
                                        ("nhcontrol.simulate", "forward_dynamics"),
                                        ("nhcontrol.models.benchmark_bicycle", "build")])
def test_entry_points_first(site, mod, first):
    """The main entry point is the first member rendered for its module."""
    page = next(p for m, ps in _api_modules().items() if m == mod for p in ps)
    text = (site / "api" / page / "index.html").read_text()
    body = text[text.find("<article"):]
    ids = re.findall(rf'id="{re.escape(mod)}\.(\w+)(?:\.\1)?"', body)
    assert ids and ids[0] == first, ids[:5]


def test_cross_references_link(site):
    """Docstring cross-references are resolved links, e.g. the linearize page links Partition."""
    text = (site / "api" / "linearization" / "index.html").read_text()
    assert re.search(r'<a class="autorefs[^"]*"[^>]*href="[^"]*#nhcontrol\.linearization\.Partition"', text)
