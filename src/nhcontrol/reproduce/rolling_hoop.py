"""``nhcontrol reproduce rolling-hoop``: upright straight rolling of a hoop and a uniform disc.

Thesis Sect. 5.3 (closed form derived here, in ``docs/theory/classical.md``). The
absolute-coordinate Newton–Euler models of
[`nhcontrol.models.rolling_wheel`][nhcontrol.models.rolling_wheel] (n = 7,
m = 2, l = 2) are linearized by the third numerical procedure along upright straight rolling
at speed ``v``; the 8-state Jacobian has the characteristic polynomial
``λ^6 (λ^2 + c(v))`` with ``c(v) = -λ^2`` the sum of its principal 2×2 minors. The critical
speed of stable upright rolling is the root of ``c(v)`` (Brent's method on the exact
Jacobian; no formula typed in), compared here with the closed form
``v_c = sqrt(A m g r^3 / (C (C + m r^2)))``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import brentq

from .. import linearization as _lin
from ..analysis import charpoly
from ..models import rolling_wheel
from nhcontrol.plotting.style import PALETTE, LINEWIDTH

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition

__all__ = ["run", "summary", "jacobian", "pair_coefficient", "critical_speed",
           "analytic_critical_speed"]

_FACTORS = {"hoop": (0.5, 1.0), "disc": (0.25, 0.5)}
"""Inertia factors (A, C) / (m r^2) of the two bodies of revolution."""


def _model(kind: str, r: float, m: float, g: float):
    build = rolling_wheel.model_hoop if kind == "hoop" else rolling_wheel.model_disc
    return build(r=r, m=m, g=g)


def jacobian(cm: CompiledModel, v: float) -> np.ndarray:
    """Minimal 8×8 Jacobian (Eq. (4.124)) of upright rolling at speed ``v``."""
    ref = rolling_wheel.upright_rolling(cm, v)
    part = _lin.Partition.from_dict(rolling_wheel.PARTITION)
    return np.asarray(_lin.linearize(cm, ref, part).A)


def pair_coefficient(cm: CompiledModel, v: float) -> float:
    """``c(v)``: coefficient of ``λ^6`` in ``det(λI - J(v))``; ``c = -λ^2`` of the wobble pair."""
    return float(charpoly(jacobian(cm, v))[2])


def critical_speed(cm: CompiledModel, bracket: tuple[float, float] = (0.05, 5.0)) -> float:
    """Speed at which the lean pair turns from real (capsize) to imaginary (wobble).

    Root of `pair_coefficient()` by Brent's method, ``xtol = 1e-14``.
    """
    lo, hi = bracket
    return float(brentq(lambda v: pair_coefficient(cm, v), lo, hi, xtol=1e-14, rtol=1e-15))


def analytic_critical_speed(kind: str, r: float = 0.3, m: float = 2.0, g: float = 9.81) -> float:
    """Closed form ``v_c = sqrt(A m g r^3 / (C (C + m r^2)))`` (docs/theory/classical.md)."""
    fa, fc = _FACTORS[kind]
    A, C = fa * m * r**2, fc * m * r**2
    return float(np.sqrt(A * m * g * r**3 / (C * (C + m * r**2))))


def _analytic_pair(kind: str, v: float, r: float, m: float, g: float) -> complex:
    fa, fc = _FACTORS[kind]
    A, C = fa * m * r**2, fc * m * r**2
    lam2 = (m * g * r - C * (C + m * r**2) * (v / r) ** 2 / A) / (A + m * r**2)
    return complex(np.sqrt(complex(lam2)))


def run(*, out: Path | None = None, quick: bool = False, r: float = 0.3, m: float = 2.0,
        g: float = 9.81) -> dict:
    """Eigenvalues over a speed range and critical speeds of the hoop and the disc."""
    speeds = np.linspace(0.0, 3.0, 7 if quick else 31)
    result: dict[str, Any] = {"parameters": {"r": r, "m": m, "g": g}, "speeds": speeds.tolist()}
    for kind in ("hoop", "disc"):
        cm = _model(kind, r, m, g)
        eigs, err = [], 0.0
        for v in speeds:
            lam = np.linalg.eigvals(jacobian(cm, v))
            nontrivial = lam[np.argsort(-np.abs(lam))][:2]
            pair = _analytic_pair(kind, v, r, m, g)
            err = max(err, float(np.min(np.abs(nontrivial[:, None] - np.array([pair, -pair])[None, :]),
                                        axis=1).max()))
            eigs.append(sorted(([float(z.real), float(z.imag)] for z in lam), key=lambda p: (-abs(complex(*p)), p)))
        vc = critical_speed(cm)
        vc_exact = analytic_critical_speed(kind, r, m, g)
        result[kind] = {
            "critical_speed": vc,
            "critical_speed_analytic": vc_exact,
            "critical_speed_rel_error": abs(vc - vc_exact) / vc_exact,
            "eigenvalues": eigs,
            "max_eigenvalue_error_vs_analytic": err,
            "jacobian_shape": list(jacobian(cm, 1.0).shape),
        }
    if out is not None:
        _plot(result, out)
    return result


def _plot(result: dict, out: Path) -> None:
    from nhcontrol.plotting.style import cite, new_figure, savefig

    fig, axes = new_figure(1, 2, sharey=True,
                           title="Upright rolling of a hoop and a disc: lean/wobble eigenvalues "
                                 "vs speed")
    v = np.asarray(result["speeds"])
    p = result["parameters"]
    vf = np.linspace(v.min(), v.max(), 301)
    for ax, kind in zip(axes, ("hoop", "disc")):
        eig = np.asarray(result[kind]["eigenvalues"])  # (N, 8, 2), nontrivial pair first
        ax.plot(np.r_[v, v], np.r_[eig[:, 0, 0], eig[:, 1, 0]], "o", mfc="none", color=PALETTE[0],
                label=r"Re $\lambda$, third procedure")
        ax.plot(v, np.abs(eig[:, 0, 1]), "s", mfc="none", color=PALETTE[3],
                label=r"|Im $\lambda$|, third procedure")
        pair = np.array([_analytic_pair(kind, s, p["r"], p["m"], p["g"]) for s in vf])
        ax.plot(vf, pair.real, "-", color="k", lw=LINEWIDTH, zorder=3,
                label=r"closed form $\lambda^2 = (mgr - C(C+mr^2)\,\Omega^2/A)/(A+mr^2)$")
        ax.plot(vf, -pair.real, "-", color="k", lw=LINEWIDTH, zorder=3)
        ax.plot(vf, np.abs(pair.imag), "--", color="k", lw=LINEWIDTH, zorder=3)
        ax.axvline(result[kind]["critical_speed"], color="0.4", ls=":", lw=1.0,
                   label=f"critical speed $v_c$ = {result[kind]['critical_speed']:.4f} m/s")
        ax.axhline(0, color="0.6", lw=0.6)
        ax.set_title(f"{kind} (A, C = {_FACTORS[kind][0]:g}, {_FACTORS[kind][1]:g} m r²)")
        ax.set_xlabel("forward speed v (m/s)")
        if kind == "hoop":
            ax.legend(loc="upper left")
    axes[0].set_ylabel(r"eigenvalue of the lean pair $\pm\lambda$ (1/s)")
    cite(fig, "thesis", "Sect. 5.3",
         extra=(f"r = {p['r']:g} m, m = {p['m']:g} kg, g = {p['g']:g} m/s², Ω = v/r; the six "
                "other eigenvalues are zero. Solid/dashed: closed form (real/imaginary part)."))
    result["figures"] = [savefig(fig, out, "rolling_hoop_eigenvalues").name]


def summary(result: dict) -> str:
    lines = ["Upright straight rolling (third numerical procedure, 8-state Jacobian):"]
    for kind in ("hoop", "disc"):
        r = result[kind]
        lines.append(f"  {kind:5s} critical speed {r['critical_speed']:.12f} m/s "
                     f"(closed form {r['critical_speed_analytic']:.12f}, rel. error "
                     f"{r['critical_speed_rel_error']:.1e}); max eigenvalue error vs closed form "
                     f"{r['max_eigenvalue_error_vs_analytic']:.1e}")
    return "\n".join(lines)
