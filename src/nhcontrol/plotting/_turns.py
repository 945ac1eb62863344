"""The figure of families of hands-free steady turns (lean and steer angle against speed), shared
by the bicycle and e-scooter reproduce targets."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .style import LINESTYLES, LINEWIDTH, PALETTE, new_figure

_LOOKS = {"i_handlebar_forward": (PALETTE[0], LINESTYLES[0], "o"),
          "ii_handlebar_reversed": (PALETTE[4], LINESTYLES[1], "s"),
          "iii_pivoting": (PALETTE[1], LINESTYLES[2], "^")}


def plot_turn_families(families: Mapping[str, Sequence[Mapping[str, Any]]], capsize_speed: float,
                       title: str) -> tuple[Any, Any]:
    """Lean (left) and steer angle (right) of each family against the speed: a line per family in
    the house colours and line styles, filled markers on its stable points, and a dotted line at
    the capsize bifurcation speed of straight running. Returns ``(fig, axes)``."""
    fig, axes = new_figure(1, 2, figsize=(10.0, 4.2), title=f"{title} (filled markers: stable)")
    for j, (name, pts) in enumerate(families.items()):
        colour, ls, marker = _LOOKS.get(name, (PALETTE[j % len(PALETTE)], LINESTYLES[j % len(LINESTYLES)], "D"))
        v = np.array([p["v"] for p in pts])
        stable = np.array([p["stable"] for p in pts], dtype=bool)
        for ax, key in zip(axes, ("lean_deg", "steer_deg")):
            y = np.array([p[key] for p in pts])
            ax.plot(v, y, color=colour, ls=ls, lw=LINEWIDTH, label=name.replace("_", " "))
            if stable.any():
                ax.plot(v[stable], y[stable], ls="none", marker=marker, ms=4, color=colour)
    axes[0].set_ylabel("lean angle (deg)")
    axes[1].set_ylabel("steer angle, Meijaard's sign (deg)")
    for ax in axes:
        ax.set_xlabel(r"speed $v = \rho_R\,\dot\theta_R$ (m/s)")
        ax.axvline(capsize_speed, color="0.5", ls=":", lw=0.8)
    axes[0].legend(fontsize=7)
    return fig, axes
