"""Figures of a Monte-Carlo verification ([`nhcontrol.applications.verify`][nhcontrol.applications.verify]): histograms and scatter.

Numbers in, figures out: the functions take [`MonteCarloResult`][nhcontrol.applications.verify.MonteCarloResult]
objects
keyed by controller name and draw them in the house style
([`nhcontrol.plotting.style`][nhcontrol.plotting.style]).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

__all__ = ["plot_histograms"]

_LINESTYLES = ("-", "--", ":", "-.")


def plot_histograms(results: Mapping[str, Any], out: Path, success_limit_m: float) -> list[Path]:
    """Histograms of the final contact error and the peak plate angle, and the error vs radius.

    Parameters
    ----------
    results : mapping controller name -> MonteCarloResult
        Runs with metrics ``final_error_m``, ``peak_input_deg`` and samples ``radius_factor``.
    out : Path
        Folder; files ``mc_final_error``, ``mc_peak_input``, ``mc_error_vs_radius``.
    success_limit_m : float
        The success threshold, drawn as a vertical line.

    Returns
    -------
    list of Path
    """
    from .style import LINEWIDTH, cite, new_figure, savefig

    out = Path(out)
    note = ("Ball-plate LQR and MPC designed on the nominal model, run on nonlinear plants with "
            "mass and radius x U(0.9, 1.1) and random initial deviations (study derived here).")
    paths = []
    def histogram(metric: str, scale: float, bins: Any, title: str, xlabel: str, name: str,
                  label: Any, limit: float | None = None, log: bool = False) -> None:
        fig, ax = new_figure(title=title)
        for (key, r), ls in zip(results.items(), _LINESTYLES):
            v = scale * r.values(metric)
            v = v[np.isfinite(v)]
            if log:
                v = np.maximum(v, bins[0])      # an exact zero would fall off a log axis
            ax.hist(v, bins=bins, histtype="step", lw=LINEWIDTH, ls=ls, label=label(key, r))
        if limit is not None:
            ax.axvline(limit, color="k", ls="--", lw=LINEWIDTH, zorder=5, label=f"success limit {limit:g} mm")
        if log:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("number of runs")
        ax.legend()
        cite(fig, "thesis", "the controllers of Ch. 8", extra=note)
        paths.append(savefig(fig, out, name))

    finite = [r.values("final_error_m") for r in results.values()]
    allv = np.concatenate([1e3 * v[np.isfinite(v)] for v in finite]) if finite else np.zeros(1)
    lim_mm = 1e3 * success_limit_m
    top = float(allv.max()) if allv.size else 1.0
    positive = allv[allv > 0]
    # errors spread over decades (a few runs far off the circle): logarithmic bins on a log axis,
    # so one outlier does not squeeze every other run into the first bin
    log = bool(positive.size) and max(top, lim_mm) > 30.0 * min(float(positive.min()), lim_mm)
    if log:
        lo = min(float(positive.min()), lim_mm) / 1.2
        bins = np.geomspace(lo, max(top, lim_mm) * 1.2, 41)
    else:
        bins = np.linspace(0.0, max(top, lim_mm) * 1.05, 41)
    histogram("final_error_m", 1e3, bins,
              "Monte Carlo: contact-point error at the end of the run",
              r"distance of the contact point to the circle at $t_{\mathrm{final}}$ (mm)"
              + (", log scale" if log else ""), "mc_final_error",
              lambda k, r: f"{k.upper()} ({100 * r.success_rate:.1f} % succeed, n = {r.n})",
              limit=lim_mm, log=log)
    histogram("peak_input_deg", 1.0, 30, "Monte Carlo: largest plate angle |α|, |β| per run",
              "peak plate angle (deg)", "mc_peak_input", lambda k, r: k.upper())

    fig, ax = new_figure(title="Monte Carlo: final error vs radius error of the plant")
    markers = iter(["o", "x", "+", "^"])
    for name, r in results.items():
        v = r.values("final_error_m")
        rf = np.array([s["radius_factor"] for s in r.samples])
        ax.plot(100 * (rf - 1.0), 1e3 * v, next(markers, "."), ms=4, alpha=0.7,
                mfc="none", label=name.upper())
    ax.axhline(1e3 * success_limit_m, color="k", ls="--", lw=LINEWIDTH, zorder=5, label="success limit")
    if allv.size and np.all(allv > 0) and top > 10.0 * lim_mm:
        ax.set_yscale("log")      # far outliers: a linear axis would flatten every other run
    ax.set_xlabel(r"plant radius error $R/R_{\mathrm{nominal}} - 1$ (%)")
    ax.set_ylabel("final contact-point error (mm)")
    ax.legend()
    cite(fig, "thesis", "the controllers of Ch. 8", extra=note)
    paths.append(savefig(fig, out, "mc_error_vs_radius"))
    return paths
