"""One figure style for every nhcontrol figure: style, citation captions, saving.

Every reproduce target draws through this module so that all figures share fonts, line widths,
grid, a title, a source line naming the publication they reproduce, and the output format chosen on
the command line (``nhcontrol reproduce TARGET --out DIR --format png|svg|pdf``; PNG at 300 dpi).

Typical use inside a reproduce target:

```python
from nhcontrol.plotting.style import new_figure, cite, savefig

fig, ax = new_figure(title="Benchmark bicycle: eigenvalues vs speed")
ax.plot(v, re)
ax.set_xlabel("forward speed v (m/s)")
cite(fig, "thesis", "Fig. 4.5")
path = savefig(fig, out, "fig_4_5_eigenvalues_vs_speed")   # out/<name>.<format>
```

The format is a keyword of [`savefig()`][nhcontrol.plotting.style.savefig]; when omitted it is the
one selected by the innermost
[`figure_format()`][nhcontrol.plotting.style.figure_format] context (the CLI enters
``figure_format(args.format)`` around ``run``), else
``"png"``.
"""

from __future__ import annotations

import contextlib
import contextvars
from pathlib import Path
from typing import Any, Iterator, Literal

__all__ = [
    "FORMATS", "DPI", "REFERENCES", "PALETTE", "LINESTYLES", "LINEWIDTH", "WIDTHS", "FONT_SIZES",
    "rc_params", "house_style", "new_figure", "animation_figure", "apply_style", "reference_line", "cite", "citation",
    "savefig", "figure_format", "current_format", "figure_text", "SIZES", "figure_size", "current_widths",
]

PALETTE: tuple[str, ...] = ("#0072B2", "#E69F00", "#56B4E9", "#CC79A7", "#D55E00", "#000000")
"""The house colours, in cycle order: blue, orange, sky blue, reddish purple, vermillion, black
(Okabe & Ito's colour-blind-safe set without its green, so no red/green pair exists). Paired
with [`LINESTYLES`][nhcontrol.plotting.style.LINESTYLES] in the property cycle, so curves stay
distinguishable in greyscale too."""

LINESTYLES: tuple[Any, ...] = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 1)))
"""Line styles paired with [`PALETTE`][nhcontrol.plotting.style.PALETTE] in the property cycle."""

LINEWIDTH: float = 1.3
"""Width of data lines (points); auxiliary lines (zero lines, limits, grids) are thinner."""

FONT_SIZES: dict[str, float] = {"title": 10.0, "label": 9.0, "tick": 8.0, "legend": 8.0,
                                "annotation": 8.0}
"""Font sizes (points) of the house style: titles, axis labels, tick labels, legends, annotations."""

WIDTHS: dict[str, float] = {"single": 5.5, "wide": 7.5}
"""Figure widths (inches) on screen by kind: one panel (``"single"``) or several side by side
(``"wide"``); the ``"screen"`` entry of [`SIZES`][nhcontrol.plotting.style.SIZES]."""

SIZES: dict[str, dict[str, float]] = {
    "screen": WIDTHS,
    "column": {"single": 3.5, "wide": 3.5},
    "page": {"single": 7.2, "wide": 7.2},
}
"""Width presets (inches) by name: ``"screen"`` (the default: 5.5 in for one panel, 7.5 in for
several), ``"column"`` (every figure 3.5 in wide: one column of a two-column journal page) and
``"page"`` (every figure 7.2 in wide: the full text width). Heights scale with the width (the
aspect ratio is kept); fonts keep their point sizes, so text stays legible in print. Chosen with
[`figure_size()`][nhcontrol.plotting.style.figure_size] or ``nhcontrol reproduce ... --size
column``."""

REFERENCE_STYLE: dict[str, Any] = {"color": "#000000", "ls": (0, (4, 2)), "lw": LINEWIDTH,
                                   "zorder": 5}
"""How a reference curve is drawn: black, dashed, above the data curves (see
[`reference_line()`][nhcontrol.plotting.style.reference_line])."""

FORMATS: tuple[str, ...] = ("png", "svg", "pdf")
"""Output formats accepted by [`savefig()`][nhcontrol.plotting.style.savefig] and ``--format``."""
DPI: int = 300
"""Resolution of raster (PNG) output, dots per inch."""

Format = Literal["png", "svg", "pdf"]

REFERENCES: dict[str, str] = {
    "thesis": ("A. García-Agúndez, Modelling and Linear Stability Analysis of Highly Mobile "
               "Nonholonomic Multibody Systems, PhD thesis, Universidad de Sevilla, 2023"),
    "meijaard2007": ("J. P. Meijaard, J. M. Papadopoulos, A. Ruina, A. L. Schwab, Proc. R. Soc. A "
                     "463 (2007) 1955–1982"),
    "road_review": ("Nonholonomic dynamics and control of road vehicles: moving toward automation "
                    "(review, first part)"),
}
"""Short citation strings by key, used in figure captions and the CLI help; the full bibliography is
docs/references.md.
"""

_FORMAT: contextvars.ContextVar[str] = contextvars.ContextVar("nhcontrol_figure_format",
                                                              default="png")


def _check_format(fmt: str) -> str:
    f = str(fmt).lower().lstrip(".")
    if f not in FORMATS:
        raise ValueError(f"figure format {fmt!r} is not supported; choose one of {list(FORMATS)} "
                         "(e.g. --format pdf)")
    return f


@contextlib.contextmanager
def figure_format(fmt: str) -> Iterator[str]:
    """Context in which [`savefig()`][nhcontrol.plotting.style.savefig] writes ``fmt`` (``"png"``, ``"svg"`` or ``"pdf"``)."""
    token = _FORMAT.set(_check_format(fmt))
    try:
        yield _FORMAT.get()
    finally:
        _FORMAT.reset(token)


_SIZE: contextvars.ContextVar[str] = contextvars.ContextVar("nhcontrol_figure_size", default="screen")


@contextlib.contextmanager
def figure_size(preset: str) -> Iterator[dict[str, float]]:
    """Context in which [`new_figure()`][nhcontrol.plotting.style.new_figure] and
    [`animation_figure()`][nhcontrol.plotting.style.animation_figure] draw figures of the width
    preset ``preset`` (a key of [`SIZES`][nhcontrol.plotting.style.SIZES]: ``"screen"``,
    ``"column"``, ``"page"``).

    Examples
    --------
    >>> from nhcontrol.plotting.style import figure_size, new_figure
    >>> with figure_size("column"):
    ...     fig, ax = new_figure(title="for one journal column")
    >>> fig.get_figwidth()
    3.5
    """
    name = str(preset).lower()
    if name not in SIZES:
        raise ValueError(f"figure size preset {preset!r} is not known; choose one of {list(SIZES)} "
                         "(e.g. --size column for a 3.5 in journal column)")
    token = _SIZE.set(name)
    try:
        yield SIZES[name]
    finally:
        _SIZE.reset(token)


def current_widths() -> dict[str, float]:
    """Widths (inches) by kind (``"single"``, ``"wide"``) of the preset in force
    (``SIZES["screen"]`` outside [`figure_size()`][nhcontrol.plotting.style.figure_size])."""
    return SIZES[_SIZE.get()]


def current_format() -> str:
    """Format [`savefig()`][nhcontrol.plotting.style.savefig] uses when none is given (``"png"`` outside [`figure_format()`][nhcontrol.plotting.style.figure_format])."""
    return _FORMAT.get()


def rc_params() -> dict[str, Any]:
    """Matplotlib rc settings of the house style.

    One typeface per figure: text is DejaVu Sans (matplotlib's default sans serif) and
    mathematics is typeset in the same face (``mathtext.fontset = "dejavusans"``), so a label
    such as ``"$v_d$ (m/s)"`` does not mix serif italics with sans text."""
    from cycler import cycler

    return {
        "font.size": 9,
        "axes.titlesize": FONT_SIZES["title"],
        "figure.titlesize": FONT_SIZES["title"],
        "axes.labelsize": FONT_SIZES["label"],
        "legend.fontsize": FONT_SIZES["legend"],
        "legend.title_fontsize": FONT_SIZES["legend"],
        "xtick.labelsize": FONT_SIZES["tick"],
        "ytick.labelsize": FONT_SIZES["tick"],
        "lines.linewidth": LINEWIDTH,
        "patch.linewidth": LINEWIDTH,
        "axes.prop_cycle": cycler(color=list(PALETTE), linestyle=list(LINESTYLES)),
        "image.cmap": "cividis",
        "lines.markersize": 4,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "font.family": "sans-serif",
        "font.sans-serif": ["DejaVu Sans"],
        "mathtext.fontset": "dejavusans",
        "savefig.dpi": DPI,
        "savefig.bbox": "tight",
        "figure.constrained_layout.use": True,
    }


@contextlib.contextmanager
def house_style() -> Iterator[None]:
    """Context in which matplotlib draws in the house style (``rc_params()``); the CLI enters
    it around a reproduce run, so legends, lines and colours created later match too."""
    import matplotlib.pyplot as plt

    with plt.rc_context(rc_params()):
        yield


def new_figure(nrows: int = 1, ncols: int = 1, *, title: str = "",
               figsize: tuple[float, float] | None = None, **subplots_kw: Any):
    """A figure in the house style: ``(fig, ax)`` as `matplotlib.pyplot.subplots()` returns.

    Parameters
    ----------
    nrows, ncols : int
    title : str
        Figure title (``suptitle`` for several axes, axes title for one). Every figure has one.
    figsize : (2,) tuple of float, optional
        Inches. The width is always one of the preset in force
        ([`figure_size()`][nhcontrol.plotting.style.figure_size]; on screen
        [`WIDTHS`][nhcontrol.plotting.style.WIDTHS]): ``"single"`` for one column of panels,
        ``"wide"`` for several; a given ``figsize`` keeps its aspect ratio at that width.
        Default height 4.0 in per panel row (3.2 for several rows) at the screen width, scaled
        with the width.
    """
    import matplotlib.pyplot as plt

    widths = current_widths()
    width = widths["single"] if ncols == 1 else widths["wide"]
    if figsize is None:
        figsize = (WIDTHS["single"] if ncols == 1 else WIDTHS["wide"],
                   4.0 if nrows == 1 else 3.2 * nrows)
    w, h = float(figsize[0]), float(figsize[1])
    if ncols == 1 and w > 0.5 * (WIDTHS["single"] + WIDTHS["wide"]):
        width = widths["wide"]
    figsize = (width, h * width / w)
    with plt.rc_context(rc_params()):
        fig, ax = plt.subplots(nrows, ncols, figsize=figsize, **subplots_kw)
    for a in (ax.flat if hasattr(ax, "flat") else [ax]):
        a.grid(True, alpha=0.3)
        a.set_prop_cycle(rc_params()["axes.prop_cycle"])
    if title:
        if nrows * ncols == 1:
            ax.set_title(title, fontsize=FONT_SIZES["title"])
        else:
            fig.suptitle(title, fontsize=FONT_SIZES["title"])
    return fig, ax


def animation_figure(title: str, height: float) -> Any:
    """An empty figure for an animation: the house style, ``"wide"`` in the width preset in force
    (7.5 in on screen), ``height`` scaled with it, the title as suptitle, laid out once by the
    caller (no constrained layout, which would run per frame)."""
    import matplotlib.pyplot as plt

    width = current_widths()["wide"]
    rc = {**rc_params(), "figure.constrained_layout.use": False}
    with plt.rc_context(rc):
        fig = plt.figure(figsize=(width, float(height) * width / WIDTHS["wide"]))
    fig.suptitle(title, fontsize=FONT_SIZES["title"])
    return fig


def reference_line(ax: Any, x: Any, y: Any, label: str = "reference", **kw: Any) -> Any:
    """Draw a reference curve on top of the data curves, black and dashed, labelled
    (``label`` should start with "reference"); returns the `Line2D`."""
    style = {**REFERENCE_STYLE, **kw}
    (line,) = ax.plot(x, y, label=label, **style)
    line.set_gid("reference")
    return line


def apply_style(fig: Any) -> Any:
    """Apply the house font sizes and line widths to a finished figure (called by
    [`savefig()`][nhcontrol.plotting.style.savefig]).

    Titles and the suptitle get ``FONT_SIZES["title"]``, axis labels ``"label"``, tick labels
    ``"tick"``, legend texts ``"legend"``, other texts in axes ``"annotation"``; lines drawn
    with matplotlib's default width (drawn outside [`house_style()`][nhcontrol.plotting.style.house_style])
    get [`LINEWIDTH`][nhcontrol.plotting.style.LINEWIDTH]; curves labelled "reference…" are
    raised above the others.
    """
    import matplotlib as mpl

    default_lw = float(mpl.rcParamsDefault["lines.linewidth"])
    sup = getattr(fig, "_suptitle", None)
    if sup is not None:
        sup.set_fontsize(FONT_SIZES["title"])
    top = 0.0
    for ax in fig.axes:
        for t in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
            if t is not None:
                t.set_fontsize(FONT_SIZES["title"])
        ax.xaxis.label.set_fontsize(FONT_SIZES["label"])
        ax.yaxis.label.set_fontsize(FONT_SIZES["label"])
        ax.tick_params(labelsize=FONT_SIZES["tick"])
        for t in ax.texts:
            t.set_fontsize(FONT_SIZES["annotation"])
        leg = ax.get_legend()
        if leg is not None:
            for t in leg.get_texts():
                t.set_fontsize(FONT_SIZES["legend"])
            leg.get_title().set_fontsize(FONT_SIZES["legend"])
        for ln in ax.get_lines():
            if abs(float(ln.get_linewidth()) - default_lw) < 1e-9:
                ln.set_linewidth(LINEWIDTH)
            top = max(top, float(ln.get_zorder()))
        for ln in ax.get_lines():
            if str(ln.get_label()).lower().startswith("reference") or ln.get_gid() == "reference":
                ln.set_zorder(max(top, 2.0) + 1.0)
    for leg in getattr(fig, "legends", []):
        for t in leg.get_texts():
            t.set_fontsize(FONT_SIZES["legend"])
    _wrap_titles(fig)
    return fig


def _wrap_titles(fig: Any) -> None:
    """Break titles wider than the figure onto several lines (a 3.5 in journal column holds about
    45 characters of a 10 pt title); titles with mathematics (``$``) are left whole."""
    import textwrap

    texts = [getattr(fig, "_suptitle", None)] + [ax.title for ax in fig.axes]
    renderer = None
    for t in texts:
        if t is None or not t.get_text() or "$" in t.get_text() or "\n" in t.get_text():
            continue
        if renderer is None:
            renderer = fig.canvas.get_renderer()
        width = t.get_window_extent(renderer).width
        room = 0.95 * fig.bbox.width
        if width > room:
            chars = max(20, int(len(t.get_text()) * room / width))
            t.set_text("\n".join(textwrap.wrap(t.get_text(), chars)))


def citation(key: str = "thesis", where: str = "") -> str:
    """Source line, e.g. ``citation("thesis", "Fig. 4.5")``.

    Returns ``"Reproduces Fig. 4.5 of <reference>"``; with ``where=""`` ``"Source: <reference>"``.
    ``key`` is one of [`REFERENCES`][nhcontrol.plotting.style.REFERENCES] or a free citation text.
    """
    ref = REFERENCES.get(key, key)
    return f"Reproduces {where} of {ref}" if where else f"Source: {ref}"


def cite(fig: Any, key: str = "thesis", where: str = "", *, extra: str = "") -> str:
    """Attach the caption (source line and an optional explanation of labels) to the figure.

    The caption is not drawn inside the image: [`savefig()`][nhcontrol.plotting.style.savefig]
    stores it in the file's metadata (PNG ``Description``), and the docs gallery prints it
    under the figure at the page's text size.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    key : str
        Reference key of [`REFERENCES`][nhcontrol.plotting.style.REFERENCES] (``"thesis"``,
        ``"meijaard2007"``) or free text.
    where : str
        Figure / equation reproduced, e.g. ``"Fig. 4.5"``.
    extra : str
        A further caption line, e.g. what legend labels mean.

    Returns
    -------
    str
        The caption.
    """
    text = citation(key, where)
    if extra:
        text = extra + " " + text
    prev = getattr(fig, "_nhcontrol_caption", "")
    fig._nhcontrol_caption = (prev + " " + text).strip() if prev else text
    return text


def figure_text(fig: Any) -> tuple[str, str]:
    """``(title, caption)`` of a figure: its suptitle (else the first axes title) and the text
    caption [`cite()`][nhcontrol.plotting.style.cite] attached (and any text placed on the figure).

    [`savefig()`][nhcontrol.plotting.style.savefig] stores both in the file's metadata (PNG
    ``Title``/``Description``), where the docs gallery reads them.
    """
    sup = getattr(fig, "_suptitle", None)
    title = sup.get_text() if sup is not None else ""
    if not title:
        title = next((ax.get_title() for ax in fig.axes if ax.get_title()), "")
    title = " ".join(title.split("\n"))          # a title wrapped to fit the figure is one line
    caption = " ".join([getattr(fig, "_nhcontrol_caption", "")]
                       + [t.get_text().replace("\n", " ") for t in fig.texts
                          if t is not sup and t.get_text()]).strip()
    return title, caption


def savefig(fig: Any, out: str | Path, name: str, *, fmt: str | None = None,
            close: bool = True) -> Path:
    """Save ``fig`` as ``out/<name>.<fmt>`` (PNG at [`DPI`][nhcontrol.plotting.style.DPI]) and close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    out : path-like
        Folder (created if missing).
    name : str
        File stem without extension.
    fmt : {"png", "svg", "pdf"}, optional
        Default: [`current_format()`][nhcontrol.plotting.style.current_format] (the CLI's
        ``--format``).
    close : bool
        Close the figure after saving (default True).

    Returns
    -------
    Path
        The file written.
    """
    import matplotlib.pyplot as plt

    f = _check_format(fmt if fmt is not None else current_format())
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.{f}"
    apply_style(fig)
    title, caption = figure_text(fig)
    meta = {"png": {"Creator": "nhcontrol", "Title": title, "Description": caption},
            "pdf": {"Creator": "nhcontrol", "Title": title, "Subject": caption},
            "svg": {"Title": title, "Description": caption}}[f]
    from .._util.staging import write_file

    # a journal preset keeps the saved width at the column or page width (a 0.02 in margin
    # instead of matplotlib's 0.1 in on each side)
    pad = {} if _SIZE.get() == "screen" else {"pad_inches": 0.02}
    # a temporary file next to the target, then one rename (never through a link)
    write_file(path, lambda fh: fig.savefig(fh, format=f, dpi=DPI, bbox_inches="tight",
                                            metadata={k: v for k, v in meta.items() if v}, **pad),
               what="savefig")
    if close:
        plt.close(fig)
    return path
