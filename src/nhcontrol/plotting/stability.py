"""Stability plots: eigenvalues versus a parameter (thesis Fig. 4.5) and root locus (Fig. 4.4)."""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from .style import LINEWIDTH, PALETTE

__all__ = ["plot_eigenvalues_vs_parameter", "plot_root_locus"]


def _axes(ax: Any):
    if ax is not None:
        return ax.figure, ax
    from .style import new_figure

    return new_figure(figsize=(7.0, 4.5))


def plot_eigenvalues_vs_parameter(sweep: Any, *, ax: Any = None, critical: Sequence[Any] = (),
                                  labels: dict[str, str] | None = None,
                                  xlabel: str | None = None, title: str | None = None,
                                  ylim: tuple[float, float] | None = None):
    """Real (solid) and imaginary (dashed) parts of the eigenvalues over a parameter (Fig. 4.5).

    Parameters
    ----------
    sweep : EigenvalueSweep
        From
        [`nhcontrol.analysis.eigenvalues_vs_parameter()`][nhcontrol.analysis.eigenvalues_vs_parameter].
    ax : matplotlib Axes, optional
    critical : sequence of CriticalPoint, optional
        Drawn as vertical dotted lines, labelled with ``labels[kind]`` or the kind.
    labels : dict, optional
        Text per critical point, keyed by its index in ``critical`` (as str) or by kind.
    xlabel, title : str, optional
    ylim : (float, float), optional
        Vertical range (set before the critical points are annotated).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = _axes(ax)
    v = np.asarray(sweep.values)
    lam = np.asarray(sweep.eigenvalues)
    for j in range(lam.shape[1]):
        ax.plot(v, lam[:, j].real, "-", color=PALETTE[0], lw=LINEWIDTH,
                label="Re λ" if j == 0 else None)
        im = np.abs(lam[:, j].imag)
        masked = np.where(im > 1e-9, im, np.nan)
        ax.plot(v, masked, "--", color=PALETTE[1], lw=LINEWIDTH, label="|Im λ|" if j == 0 else None)
    ax.axhline(0.0, color="k", lw=0.6)
    if ylim is not None:
        ax.set_ylim(*ylim)
    labels = labels or {}
    for i, cp in enumerate(critical):
        text = labels.get(str(i), labels.get(cp.kind, cp.kind))
        ax.axvline(cp.value, color="0.4", ls=":", lw=1.0)
        m = re.match(r"^.*?\s*[(\[](.*)[)\]]\s*$", str(sweep.parameter))
        unit = f" {m.group(1)}" if m else ""
        ax.annotate(f"{text} = {cp.value:.4f}{unit}", (cp.value, ax.get_ylim()[1]), rotation=90,
                    va="top", ha="right", fontsize=8, color="0.3")
    ax.set_xlabel(xlabel or f"{sweep.parameter}")
    ax.set_ylabel("eigenvalue λ (1/s)")
    if title:
        ax.set_title(title)
    ax.legend(loc="lower left")
    ax.grid(True, lw=0.3)
    return fig


def plot_root_locus(sweep: Any, *, ax: Any = None, critical: Sequence[Any] = (),
                    labels: Sequence[str] | None = None, title: str | None = None):
    """Eigenvalue paths in the complex plane over a parameter (Fig. 4.4).

    The first parameter value is marked with crosses, the last with squares, critical points
    with circles.

    Parameters
    ----------
    sweep : EigenvalueSweep
    ax : matplotlib Axes, optional
    critical : sequence of CriticalPoint, optional
    labels : sequence of str, optional
        One label per critical point (default: its kind).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = _axes(ax)
    lam = np.asarray(sweep.eigenvalues)
    v = np.asarray(sweep.values)
    for j in range(lam.shape[1]):
        ax.plot(lam[:, j].real, lam[:, j].imag, "-", color=PALETTE[0], lw=LINEWIDTH)
    m = re.match(r"^(.*?)\s*[(\[](.*)[)\]]\s*$", str(sweep.parameter))
    name, unit = (m.group(1), " " + m.group(2)) if m else (str(sweep.parameter), "")
    ax.plot(lam[0].real, lam[0].imag, "x", color=PALETTE[3], ms=8, label=f"{name} = {v[0]:g}{unit}")
    ax.plot(lam[-1].real, lam[-1].imag, "s", mfc="none", color=PALETTE[2], ms=7,
            label=f"{name} = {v[-1]:g}{unit}")
    for i, cp in enumerate(critical):
        e = complex(cp.eigenvalue)
        ax.plot([e.real, e.real], [e.imag, -e.imag], "o", mfc="none", color="k", ms=7)
        text = labels[i] if labels is not None else cp.kind
        ax.annotate(f"{text} = {cp.value:.3f}{unit}", (e.real, e.imag), fontsize=8,
                    xytext=(4, 4), textcoords="offset points")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.axvline(0.0, color="k", lw=0.6)
    ax.set_xlabel("Re λ (1/s)")
    ax.set_ylabel("Im λ (1/s)")
    if title:
        ax.set_title(title)
    ax.legend()
    ax.grid(True, lw=0.3)
    return fig
