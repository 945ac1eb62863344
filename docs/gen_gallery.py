"""Regenerate the figure gallery of the docs (docs/gallery.md and docs/gallery/*.png).

Runs every reproduce target of ``nhcontrol.reproduce.TARGETS`` as a reader would
(``nhcontrol reproduce TARGET --out DIR --format png``), shrinks each 300-dpi figure to a web
size (at most ``--width`` pixels wide, palette PNG) into ``docs/gallery/`` and writes the page.

    python docs/gen_gallery.py                       # every target, published settings
    python docs/gen_gallery.py --quick rolling-hoop  # some targets, --quick grids

Targets named with ``--quick-targets`` (default: none — the Monte Carlo study runs its full
1,000 runs per controller, as the text describes) always run with ``--quick``. A target that fails is reported on the page, not hidden; the others still run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent
GALLERY = DOCS / "gallery"
PAGE = DOCS / "gallery.md"
ROOT = DOCS.parent


def _targets() -> dict[str, tuple[str, str]]:
    sys.path.insert(0, str(ROOT / "src"))
    from nhcontrol.reproduce import TARGETS

    return dict(TARGETS)


def shrink(src: Path, dst: Path, width: int) -> dict[str, str]:
    """``src`` scaled to at most ``width`` pixels wide, saved as an optimised palette PNG.

    Returns the title and caption that ``nhcontrol.plotting.style.savefig`` stored in it.
    """
    from PIL import Image

    with Image.open(src) as im:
        text = {"title": im.info.get("Title", ""), "caption": im.info.get("Description", "")}
        im = im.convert("RGB")
        if im.width > 2 * im.height:      # wide multi-panel figures keep legible text
            width = int(width * 1.5)
        if im.width > width:
            im = im.resize((width, round(im.height * width / im.width)), Image.LANCZOS)
        im.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(dst, optimize=True)
    return text


def _animates(name: str) -> bool:
    """True when the target's ``run`` takes ``animate`` (``--animate``)."""
    import inspect

    from nhcontrol.reproduce import load

    return "animate" in inspect.signature(load(name).run).parameters


def run_target(name: str, quick: bool, out: Path) -> dict:
    """Run one target in a fresh interpreter; its JSON result (or the error)."""
    cmd = [sys.executable, "-m", "nhcontrol.cli", "reproduce", name, "--json", "--out", str(out),
           "--format", "png"] + (["--quick"] if quick else []) + (["--animate"] if _animates(name) else [])
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout).strip()[-800:], "seconds": seconds}
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        result = {}
    figures = sorted(out.glob("*.png"))
    return {"figures": [f.name for f in figures], "seconds": seconds,
            "animations": sorted(f.name for f in out.glob("*.gif")),
            "result_figures": result.get("figures", [])}


def write_page(entries: dict[str, dict], targets: dict[str, tuple[str, str]]) -> None:
    lines = [
        "# Figure gallery",
        "",
        "Every figure that `nhcontrol reproduce TARGET --out DIR` draws, one section per target.",
        "Each figure carries its title, axis labels with units, a legend, and a caption line",
        "naming the publication it reproduces (see [References](references.md)); the text under",
        "each image repeats them. The files here are reduced copies of the 300-dpi PNGs;",
        "`--format svg` or `--format pdf` gives vector figures for print. Targets with a simulation",
        "also show its animation (`--animate`, GIF).",
        "",
        "Regenerate with `python docs/gen_gallery.py` (all targets) or "
        "`python docs/gen_gallery.py TARGET ...`.",
        "",
    ]
    for name, (_, description) in targets.items():
        e = entries.get(name)
        lines += [f"## `{name}`", "", description + ".", ""]
        if e is None:
            lines += ["*Not generated yet: run `python docs/gen_gallery.py " + name + "`.*", ""]
            continue
        mode = " --quick" if e.get("quick") else ""
        lines += [f"Command: `nhcontrol reproduce {name}{mode} --out DIR`.", ""]
        if "error" in e:
            lines += ["The run failed when the gallery was generated:", "", "```text",
                      e["error"], "```", ""]
            continue
        if not e["figures"]:
            lines += ["This target prints numbers only (no figure).", ""]
        for anim in e.get("animations", []):
            lines += [f"![animation {anim}](gallery/{name}/{anim})", "",
                      f"**Animation** (`{anim}`, `--animate`).", ""]
        for fig in e["figures"]:
            text = e.get("text", {}).get(fig, {})
            title = text.get("title") or Path(fig).stem
            caption = text.get("caption", "")
            lines += [f"![{title}](gallery/{name}/{fig})", "",
                      f"**{title}** (`{fig}`). {caption}".rstrip(), ""]
    PAGE.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    targets = _targets()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", help="targets to (re)generate (default: all)")
    ap.add_argument("--quick", action="store_true", help="run the targets with --quick")
    ap.add_argument("--quick-targets", nargs="*", default=[],
                    help="targets always run with --quick")
    ap.add_argument("--width", type=int, default=1100, help="largest width in pixels")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.targets) - set(targets))
    if unknown:
        ap.error(f"unknown targets {unknown}; choose from {sorted(targets)}")
    index_file = GALLERY / "index.json"
    entries: dict[str, dict] = json.loads(index_file.read_text()) if index_file.exists() else {}
    entries = {k: v for k, v in entries.items() if k in targets}
    for name in (args.targets or list(targets)):
        quick = args.quick or name in args.quick_targets
        print(f"{name}{' (quick)' if quick else ''} ...", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            e = run_target(name, quick, Path(tmp))
            dest = GALLERY / name
            if "error" not in e:
                if dest.exists():
                    for old in [*dest.glob("*.png"), *dest.glob("*.gif")]:
                        old.unlink()
                dest.mkdir(parents=True, exist_ok=True)
                for anim in e.get("animations", []):
                    shutil.copyfile(Path(tmp) / anim, dest / anim)
                e["text"] = {fig: shrink(Path(tmp) / fig, dest / fig, args.width)
                             for fig in e["figures"]}
        e["quick"] = quick
        entries[name] = e
        print(f"  {len(e.get('figures', []))} figures, {e['seconds']:.0f} s"
              + (f", FAILED: {e['error'][-200:]}" if "error" in e else ""), flush=True)
    GALLERY.mkdir(exist_ok=True)
    index_file.write_text(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "seconds"}
                                      for k, v in entries.items()}, indent=1, sort_keys=True))
    write_page(entries, targets)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
