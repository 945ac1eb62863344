"""mkdocs hook: serve MathJax from the site itself (no CDN), so equations render offline.

The MathJax 3 component ``es5/tex-svg.js`` (one self-contained file; fonts as SVG paths) is taken
from the ``django-static-mathjax`` distribution (MathJax 3.2.2, Apache-2.0, a ``docs`` extra of
nhcontrol) and added to the site as ``javascripts/mathjax/tex-svg.js``; ``mkdocs.yml`` loads it
after ``javascripts/mathjax-config.js``. The MathJax licence is copied next to it.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

SITE_PATH = "javascripts/mathjax"
COMPONENT = "tex-svg.js"


def mathjax_dir() -> Path:
    """Directory of the MathJax distribution (``.../mathjax/static/mathjax``)."""
    try:
        import mathjax  # the django-static-mathjax distribution
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise PluginError("MathJax is served from the site itself and comes from the "
                          "'django-static-mathjax' package: pip install -e '.[docs]'") from exc
    root = Path(mathjax.__file__).resolve().parent / "static" / "mathjax"
    if not (root / "es5" / COMPONENT).is_file():
        raise PluginError(f"MathJax component es5/{COMPONENT} not found under {root}; "
                          "reinstall django-static-mathjax")
    return root


def on_files(files, config):
    root = mathjax_dir()
    for src, dest in ((root / "es5" / COMPONENT, f"{SITE_PATH}/{COMPONENT}"),
                      (root / "LICENSE", f"{SITE_PATH}/LICENSE")):
        files.append(File.generated(config, dest, abs_src_path=str(src)))
    return files
