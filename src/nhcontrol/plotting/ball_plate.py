"""Figures of the ball-plate closed loops (thesis Figs. 8.2–8.5).

Numbers in, figures out: every function takes plain arrays (what
`nhcontrol.reproduce.ball_plate.run()` computes) and returns a matplotlib ``Figure``; nothing
here runs a simulation. Curves are passed as a mapping ``label -> (t, values)`` (or
``label -> (x_C, y_C)`` for the path on the plate) so any set of runs (reference, open loop,
LQR linear/nonlinear, MPC) can be compared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["plot_contact_path", "plot_signal", "plot_inputs", "save_figures"]

Curves = Mapping[str, tuple[ArrayLike, ArrayLike]]

from .style import PALETTE, REFERENCE_STYLE

_STYLE = {"Reference": dict(REFERENCE_STYLE)}


def _figure(figsize: tuple[float, float] = (5.5, 4.0)):
    from .style import new_figure  # the user's backend is respected (tests use MPLBACKEND=Agg)

    return new_figure(figsize=figsize)


def plot_contact_path(curves: Curves, *, title: str = "",
                      limits_from: Sequence[str] | None = None) -> "object":
    """Trajectory of the contact point C on the plate (Figs. 8.2 (a), 8.4 (a)).

    Parameters
    ----------
    curves : mapping str -> ((M,) array_like, (M,) array_like)
        ``label -> (x_C, y_C)`` in metres; a label ``"Reference"`` is drawn dashed.
    title : str, optional
    limits_from : sequence of str, optional
        Labels of the curves that set the axis limits (default: all). The others (an open loop
        spiralling away) are clipped at the frame and their legend entry says so.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = _figure((5.0, 5.0))
    framed = list(curves) if limits_from is None else [k for k in curves if k in limits_from]
    for label, (xc, yc) in curves.items():
        shown = label if label in framed else f"{label} (clipped)"
        ax.plot(np.asarray(xc), np.asarray(yc), label=shown, **_STYLE.get(label, {}))
    ax.set_xlabel(r"$x_C$ (m)")
    ax.set_ylabel(r"$y_C$ (m)")
    if len(framed) < len(curves):
        xs = np.concatenate([np.asarray(curves[k][0], float).ravel() for k in framed])
        ys = np.concatenate([np.asarray(curves[k][1], float).ravel() for k in framed])
        cx, cy = 0.5 * (xs.max() + xs.min()), 0.5 * (ys.max() + ys.min())
        half = 0.55 * max(xs.max() - xs.min(), ys.max() - ys.min(), 1e-6)
        ax.set_xlim(cx - half, cx + half)
        ax.set_ylim(cy - half, cy + half)
        ax.set_aspect("equal", adjustable="box")
    else:
        ax.set_aspect("equal", adjustable="datalim")
    ax.legend()
    if title:
        ax.set_title(title)
    return fig


def plot_signal(curves: Curves, *, ylabel: str, title: str = "") -> "object":
    """Time evolution of one signal for several runs (Figs. 8.2 (b), 8.3, 8.4 (b)).

    Parameters
    ----------
    curves : mapping str -> ((M,) array_like, (M,) array_like)
        ``label -> (t, values)``.
    ylabel : str
        Axis label with units, e.g. ``"φ (deg)"``.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = _figure()
    for label, (t, v) in curves.items():
        ax.plot(np.asarray(t), np.asarray(v), label=label, **_STYLE.get(label, {}))
    ax.set_xlabel("time t (s)")
    ax.set_ylabel(ylabel)
    ax.legend()
    if title:
        ax.set_title(title)
    return fig


def plot_inputs(t: ArrayLike, u: ArrayLike, t_ref: ArrayLike, u_ref: ArrayLike, *,
                names: Sequence[str] = ("α", "β"), bound_deg: float | None = None,
                label: str = "LQR", title: str = "") -> "object":
    """Plate angles applied by a controller against their reference values (Fig. 8.5).

    Parameters
    ----------
    t : (M,) array_like
    u : (M, 2) array_like
        Applied inputs in degrees.
    t_ref : (R,) array_like
    u_ref : (R, 2) array_like
        Reference inputs ``α0(t), β0(t)`` (Eqs. (8.70)–(8.71)) in degrees.
    names : (2,) sequence of str
    bound_deg : float, optional
        Draw ``±bound`` (the MPC input bound).
    label : str
        Name of the controller in the legend.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = _figure()
    u = np.asarray(u, dtype=float)
    u_ref = np.asarray(u_ref, dtype=float)
    colors = PALETTE[:2]
    for i, nm in enumerate(names):
        ax.plot(np.asarray(t_ref), u_ref[:, i], ls=(0, (4, 2)), color=colors[i], zorder=5,
                label=f"{nm}0 (reference)")
        # applied: solid (explicit, not the cycle's style, which could be a dash like the
        # reference's); reference: dashed, same colour
        ax.step(np.asarray(t), u[:, i], where="post", color=colors[i], ls="-", label=f"{nm}, {label}")
    if bound_deg is not None:
        for s in (-1, 1):
            ax.axhline(s * bound_deg, color="0.5", lw=0.8, ls=":",
                       label=f"bound ±{bound_deg:g}°" if s > 0 else None)
    ax.set_xlabel("time t (s)")
    ax.set_ylabel("plate angles (deg)")
    ax.legend(ncol=2)
    if title:
        ax.set_title(title)
    return fig


def save_figures(figures: Mapping[str, object], out: Path) -> list[Path]:
    """Save ``name -> Figure`` as ``out/<name>.<format>`` and close them.

    The format is the one of the command line (``--format``; PNG at 300 dpi), through
    [`savefig()`][nhcontrol.plotting.style.savefig].

    Returns
    -------
    list of Path
        The files written.
    """
    from .style import savefig

    return [savefig(fig, Path(out), name) for name, fig in figures.items()]
