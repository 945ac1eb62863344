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
    "FORMATS", "DPI", "REFERENCES", "rc_params", "new_figure", "cite", "citation",
    "savefig", "figure_format", "current_format", "figure_text",
]

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


def current_format() -> str:
    """Format [`savefig()`][nhcontrol.plotting.style.savefig] uses when none is given (``"png"`` outside [`figure_format()`][nhcontrol.plotting.style.figure_format])."""
    return _FORMAT.get()


def rc_params() -> dict[str, Any]:
    """Matplotlib rc settings of the house style (serif maths like the thesis' figures)."""
    return {
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.labelsize": 9,
        "legend.fontsize": 8,
        "xtick.labelsize": 8,
        "ytick.labelsize": 8,
        "lines.linewidth": 1.3,
        "lines.markersize": 4,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "mathtext.fontset": "cm",
        "savefig.dpi": DPI,
        "savefig.bbox": "tight",
        "figure.constrained_layout.use": True,
    }


def new_figure(nrows: int = 1, ncols: int = 1, *, title: str = "",
               figsize: tuple[float, float] | None = None, **subplots_kw: Any):
    """A figure in the house style: ``(fig, ax)`` as `matplotlib.pyplot.subplots()` returns.

    Parameters
    ----------
    nrows, ncols : int
    title : str
        Figure title (``suptitle`` for several axes, axes title for one). Every figure has one.
    figsize : (2,) tuple of float, optional
        Inches; default 5.5 x 4.0 per panel row, widened for several columns.
    """
    import matplotlib.pyplot as plt

    if figsize is None:
        figsize = (5.5 if ncols == 1 else 4.2 * ncols, 4.0 if nrows == 1 else 3.2 * nrows)
    with plt.rc_context(rc_params()):
        fig, ax = plt.subplots(nrows, ncols, figsize=figsize, **subplots_kw)
    for a in (ax.flat if hasattr(ax, "flat") else [ax]):
        a.grid(True, alpha=0.3)
    if title:
        if nrows * ncols == 1:
            ax.set_title(title)
        else:
            fig.suptitle(title)
    return fig, ax


def citation(key: str = "thesis", where: str = "") -> str:
    """Source line, e.g. ``citation("thesis", "Fig. 4.5")``.

    Returns ``"Reproduces Fig. 4.5 of <reference>"``; with ``where=""`` ``"Source: <reference>"``.
    ``key`` is one of [`REFERENCES`][nhcontrol.plotting.style.REFERENCES] or a free citation text.
    """
    ref = REFERENCES.get(key, key)
    return f"Reproduces {where} of {ref}" if where else f"Source: {ref}"


def cite(fig: Any, key: str = "thesis", where: str = "", *, extra: str = "") -> Any:
    """Write the source line (and an optional explanation of labels) under the figure.

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
    matplotlib.text.Text
    """
    text = citation(key, where)
    if extra:
        text = extra + "\n" + text
    return fig.text(0.01, 0.0, text, ha="left", va="top", fontsize=6, color="0.3",
                    wrap=True, transform=fig.transFigure)


def figure_text(fig: Any) -> tuple[str, str]:
    """``(title, caption)`` of a figure: its suptitle (else the first axes title) and the text
    lines [`cite()`][nhcontrol.plotting.style.cite] wrote under it.

    [`savefig()`][nhcontrol.plotting.style.savefig] stores both in the file's metadata (PNG
    ``Title``/``Description``), where the docs gallery reads them.
    """
    sup = getattr(fig, "_suptitle", None)
    title = sup.get_text() if sup is not None else ""
    if not title:
        title = next((ax.get_title() for ax in fig.axes if ax.get_title()), "")
    caption = " ".join(t.get_text().replace("\n", " ") for t in fig.texts
                       if t is not sup and t.get_text())
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
    title, caption = figure_text(fig)
    meta = {"png": {"Creator": "nhcontrol", "Title": title, "Description": caption},
            "pdf": {"Creator": "nhcontrol", "Title": title, "Subject": caption},
            "svg": {"Title": title, "Description": caption}}[f]
    fig.savefig(path, format=f, dpi=DPI, bbox_inches="tight",
                metadata={k: v for k, v in meta.items() if v})
    if close:
        plt.close(fig)
    return path
