"""Every generated figure in the house style: read back from the figure
objects at save time — fonts (titles 10, labels 9, ticks 8, legends 8, annotations 8), line
widths (data lines 1.3), colours (the colour-blind-safe palette or greys: no red/green pair),
one width per figure kind, typeset symbols (no raw ``v_d`` outside mathtext), captions kept out
of the image, reference curves on top.

The figures come from the reproduce targets' ``--quick`` runs (cheap ones by default; every
target with ``-m slow``) and from the plotting functions with small data."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from nhcontrol.plotting import style

FAST_TARGETS = ("skateboard",)
SLOW_TARGETS = ("rolling-hoop", "bicycle-benchmark", "bicycle-circular", "e-scooter", "waveboard", "rolling-torus", "toroidal-bicycle",
                "hydraulic-fourbar", "road-vehicles", "ball-plate", "monte-carlo-ball-plate", "output-feedback", "nmpc")
PALETTE_RGB = [to_rgb(c) for c in style.PALETTE]
RAW_NAME = re.compile(r"\b[A-Za-z]+_[A-Za-z0-9]+\b")


def _grey(rgb: tuple[float, float, float]) -> bool:
    return max(rgb) - min(rgb) < 1e-6


def _allowed_colour(c: Any) -> bool:
    rgb = to_rgb(c)
    return _grey(rgb) or any(np.allclose(rgb, p, atol=2e-3) for p in PALETTE_RGB)


def _outside_math(text: str) -> str:
    return re.sub(r"\$[^$]*\$", "", text)


def check_figure(fig: Any, name: str) -> list[str]:
    """The ways ``fig`` departs from the house style (empty when it follows it)."""
    bad: list[str] = []
    fs = style.FONT_SIZES
    width = round(float(fig.get_figwidth()), 3)
    if width not in [round(w, 3) for w in style.current_widths().values()]:
        bad.append(f"width {width} in is not one of {style.current_widths()}")
    title, caption = style.figure_text(fig)
    if not title:
        bad.append("no title")
    if not caption:
        bad.append("no caption (cite())")
    sup = getattr(fig, "_suptitle", None)
    loose = [t.get_text()[:40] for t in fig.texts if t is not sup and t.get_text()]
    if loose:
        bad.append(f"text drawn on the figure outside the axes: {loose}")
    if sup is not None and sup.get_fontsize() != fs["title"]:
        bad.append(f"suptitle {sup.get_fontsize()} pt")
    texts = [] if sup is None else [sup.get_text()]
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        if ax.title.get_text():
            texts.append(ax.title.get_text())
            if ax.title.get_fontsize() != fs["title"]:
                bad.append(f"title {ax.title.get_text()[:30]!r} {ax.title.get_fontsize()} pt")
        for lab in (ax.xaxis.label, ax.yaxis.label):
            texts.append(lab.get_text())
            if lab.get_text() and lab.get_fontsize() != fs["label"]:
                bad.append(f"axis label {lab.get_text()[:30]!r} {lab.get_fontsize()} pt")
        for tl in ax.get_xticklabels() + ax.get_yticklabels():
            if tl.get_text() and tl.get_fontsize() != fs["tick"]:
                bad.append(f"tick label {tl.get_fontsize()} pt")
                break
        for t in ax.texts:
            texts.append(t.get_text())
            if t.get_fontsize() != fs["annotation"]:
                bad.append(f"annotation {t.get_text()[:30]!r} {t.get_fontsize()} pt")
        leg = ax.get_legend()
        if leg is not None:
            for t in leg.get_texts():
                texts.append(t.get_text())
                if t.get_fontsize() != fs["legend"]:
                    bad.append(f"legend entry {t.get_text()[:30]!r} {t.get_fontsize()} pt")
        lines = ax.get_lines()
        ref_z = [ln.get_zorder() for ln in lines if str(ln.get_label()).lower().startswith("reference")]
        other_z = [ln.get_zorder() for ln in lines if not str(ln.get_label()).lower().startswith("reference")]
        if ref_z and other_z and min(ref_z) <= max(other_z):
            bad.append("a reference curve is drawn below another curve")
        for ln in lines:
            col = ln.get_color()
            if not _allowed_colour(col):
                bad.append(f"line {ln.get_label()!r} colour {col!r} is not in the palette")
            lw, drawn = float(ln.get_linewidth()), ln.get_linestyle() not in ("None", "", " ")
            auxiliary = _grey(to_rgb(col)) and to_rgb(col) != (0.0, 0.0, 0.0) or lw < 1.0
            if drawn and not auxiliary and abs(lw - style.LINEWIDTH) > 1e-9:
                bad.append(f"line {ln.get_label()!r} width {lw} (house {style.LINEWIDTH})")
        for coll in ax.collections:
            cols = np.atleast_2d(coll.get_facecolor())
            if hasattr(coll, "get_cmap") and coll.get_array() is not None:
                cmap = coll.get_cmap()
                cols = cmap(np.linspace(0.0, 1.0, getattr(cmap, "N", 3) if getattr(cmap, "N", 256) <= 8 else 3))
            for c in cols:
                if c[3] > 0 and not _allowed_colour(tuple(c[:3])) and getattr(coll.get_cmap(), "name", "") != "cividis":
                    bad.append(f"collection colour {tuple(np.round(c[:3], 3))} is not in the palette")
                    break
        for p in ax.patches:
            fc = p.get_facecolor()
            if fc[3] > 0 and not _allowed_colour(fc[:3]):
                bad.append(f"patch colour {tuple(np.round(fc[:3], 3))} is not in the palette")
                break
    for t in texts:
        raw = RAW_NAME.findall(_outside_math(t))
        if raw:
            bad.append(f"raw symbol(s) {raw} in {t[:50]!r}: typeset them as mathtext ($v_d$)")
        bracket = BRACKET_UNIT.search(_outside_math(t))
        if bracket:
            bad.append(f"unit written {bracket.group(0)!r} in {t[:50]!r}: the house writes units "
                       f"as ({bracket.group(1)})")
    families = {tuple(x.get_fontfamily()) for x in _all_texts(fig) if x.get_text()}
    if len(families) > 1:
        bad.append(f"more than one typeface in the figure: {sorted(families)}")
    return [f"{name}: {b}" for b in bad]


_UNIT = r"(?:s|ms|µs|m|mm|cm|km|rad|deg|°|N|kN|Nm|kg|g|Pa|kPa|MPa|bar|Hz|W|J|V|A|%)(?:[²³]|\^\d|⁻¹)?"
BRACKET_UNIT = re.compile(r"\[((?:1/)?" + _UNIT + r"(?:\s?[ ·/]\s?" + _UNIT + r")*)\]")
"""A unit written in brackets, ``[m]``, ``[N m]``, ``[1/s]`` (the house style is ``(m)``)."""


def _all_texts(fig: Any) -> list[Any]:
    from matplotlib.text import Text

    return [x for x in fig.findobj(Text)]


class _Capture:
    """Record every figure saved while active (matplotlib's ``Figure.savefig``)."""

    def __init__(self) -> None:
        self.found: list[tuple[str, list[str]]] = []

    def __enter__(self) -> "_Capture":
        from matplotlib.figure import Figure

        self._orig = Figure.savefig
        cap = self

        def savefig(fig: Any, fname: Any, *a: Any, **kw: Any) -> Any:
            cap.found.append((Path(str(fname)).name, check_figure(fig, Path(str(fname)).name)))
            return cap._orig(fig, fname, *a, **kw)
        Figure.savefig = savefig
        return self

    def __exit__(self, *exc: Any) -> None:
        from matplotlib.figure import Figure

        Figure.savefig = self._orig


def _run_targets(names: tuple[str, ...], out: Path) -> list[tuple[str, list[str]]]:
    from nhcontrol.reproduce import load

    with _Capture() as cap:
        for t in names:
            load(t).run(out=out / t, quick=True)
    return cap.found


def _report(found: list[tuple[str, list[str]]]) -> str:
    return "\n".join(p for _, probs in found for p in probs)


def test_style_helpers():
    fig, ax = style.new_figure(title="t", figsize=(9.0, 3.0))
    assert fig.get_figwidth() == style.WIDTHS["wide"]
    ax.plot([0, 1], [0, 1], label="data")
    style.reference_line(ax, [0, 1], [0, 1])
    ax.set_title("a title")
    ax.legend()                                   # outside house_style: 10 pt, lw 1.5
    style.cite(fig, "thesis", "Fig. 1")
    style.apply_style(fig)
    assert check_figure(fig, "helpers") == []
    assert ax.get_legend().get_texts()[0].get_fontsize() == 8
    # no green in the palette (so no red/green pair); in greyscale the cycle's curves differ by
    # line style (colours of equal luminance, orange and sky blue, get different styles)
    assert len(set(style.LINESTYLES)) == len(style.LINESTYLES) >= len(style.PALETTE)
    assert not any(g > 0.45 and r < 0.2 for r, g, b in PALETTE_RGB)
    cyc = style.rc_params()["axes.prop_cycle"].by_key()
    assert cyc["color"] == list(style.PALETTE) and len(set(map(str, cyc["linestyle"]))) == len(style.PALETTE)


def test_check_figure_finds_departures():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.3, 4.0))
    ax.plot([0, 1], [0, 1], color="tab:red", lw=2.0, label="v_d")
    ax.plot([0, 1], [1, 0], color="tab:green")
    ax.set_title("x", fontsize=12)
    ax.set_xlabel("t [s]", family="serif")
    ax.legend(fontsize=10)
    fig.text(0.0, 0.0, "caption in the image", fontsize=6)
    bad = " ".join(check_figure(fig, "bad"))
    plt.close(fig)
    for what in ("width 6.3", "title 'x' 12", "legend entry", "not in the palette", "width 2.0",
                 "raw symbol", "outside the axes", "unit written '[s]'", "more than one typeface"):
        assert what in bad, what


def test_plotting_functions_follow_the_house_style(tmp_path):
    from nhcontrol.plotting.ball_plate import plot_contact_path, plot_inputs, plot_signal

    t = np.linspace(0.0, 2.0, 50)
    with _Capture() as cap:
        fig = plot_contact_path({"Reference": (np.cos(t), np.sin(t)), "LQR": (1.1 * np.cos(t), np.sin(t))},
                                title="Contact path")
        style.cite(fig, "thesis", "Fig. 8.2")
        style.savefig(fig, tmp_path, "path")
        fig = plot_signal({"Reference": (t, t), "LQR": (t, 1.1 * t)}, ylabel=r"$\varphi$ (deg)",
                          title="Lean")
        style.cite(fig, "thesis", "Fig. 8.3")
        style.savefig(fig, tmp_path, "signal")
        fig = plot_inputs(t, np.c_[t, -t], t, np.c_[t, -t] * 1.1, bound_deg=3.0, title="Inputs")
        style.cite(fig, "thesis", "Fig. 8.5")
        style.savefig(fig, tmp_path, "inputs")
    assert len(cap.found) == 3
    assert _report(cap.found) == ""


def test_quick_targets_follow_the_house_style(tmp_path):
    found = _run_targets(FAST_TARGETS, tmp_path)
    assert len(found) >= 1
    assert _report(found) == ""


@pytest.mark.slow
def test_every_target_follows_the_house_style(tmp_path):
    found = _run_targets(SLOW_TARGETS, tmp_path)
    assert len(found) >= 20
    assert _report(found) == ""


@pytest.mark.parametrize(("preset", "single", "wide"), [("screen", 5.5, 7.5), ("column", 3.5, 3.5),
                                                       ("page", 7.2, 7.2)])
def test_width_presets_for_a_journal(preset, single, wide):
    """figure_size("column") draws 3.5 in figures (one journal column), "page" 7.2 in (two
    columns); heights follow the width (same aspect), fonts keep their point sizes."""
    import matplotlib.pyplot as plt

    with style.figure_size(preset):
        one, _ = style.new_figure(title="one panel")
        two, _ = style.new_figure(1, 2, title="two panels")
        anim = style.animation_figure("frames", 3.2)
        assert check_figure(one, preset) == ["%s: no caption (cite())" % preset]
    assert (one.get_figwidth(), two.get_figwidth(), anim.get_figwidth()) == (single, wide, wide)
    assert one.get_figheight() == pytest.approx(4.0 * single / 5.5)
    assert anim.get_figheight() == pytest.approx(3.2 * wide / 7.5)
    for f in (one, two, anim):
        plt.close(f)
    assert style.current_widths() == style.WIDTHS            # restored after the block
    with pytest.raises(ValueError, match="choose one of"):
        with style.figure_size("a4"):
            pass


def test_one_typeface_text_and_mathematics():
    """Text and mathtext in one sans-serif face: no serif italics beside sans labels."""
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    rc = style.rc_params()
    assert rc["font.family"] == "sans-serif" and rc["font.sans-serif"] == ["DejaVu Sans"]
    assert rc["mathtext.fontset"] == "dejavusans"
    with style.house_style():
        fig, ax = style.new_figure(title=r"speed $v_d$ (m/s)")
        ax.set_xlabel(r"$\varphi$ (deg)")
        fig.canvas.draw()                                   # mathtext typeset in DejaVu Sans
        path = font_manager.findfont(font_manager.FontProperties(family=["sans-serif"]))
    assert path.endswith("DejaVuSans.ttf")
    assert check_figure(fig, "typeface") == ["typeface: no caption (cite())"]
    plt.close(fig)


def test_no_bracket_units_in_figure_code():
    """Every label the plotting code, the reproduce targets, the examples and the notebooks write
    uses the unit style (m), never [m] (a static check of the sources: the figures of the slow
    targets are checked at save time by test_every_target_follows_the_house_style)."""
    root = Path(__file__).resolve().parents[1]
    files = [*root.glob("src/nhcontrol/plotting/*.py"), *root.glob("src/nhcontrol/reproduce/*.py"),
             *root.glob("examples/*.py"), *root.glob("notebooks/*.py")]
    call = re.compile(r"(set_xlabel|set_ylabel|xlabel=|ylabel=|label=|parameter=|set_title|title=)"
                      r"\s*\(?\s*[rf]*([\"'])(.*?)\2")
    bad = []
    for f in files:
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for m in call.finditer(line):
                text = re.sub(r"\{[^{}]*\}", "", m.group(3))      # f-string fields are code
                if BRACKET_UNIT.search(_outside_math(text)):
                    bad.append(f"{f.relative_to(root)}:{i}: {m.group(3)!r}")
    assert not bad, "\n".join(bad)
