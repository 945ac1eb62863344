"""``nhcontrol reproduce skateboard``: straight motion of the Chaplygin sleigh (skateboard on a skate).

Thesis Sect. 5.2 (closed form derived here, in ``docs/theory/classical.md``). The
absolute-coordinate model of [`nhcontrol.models.sleigh`][nhcontrol.models.sleigh] (n = 3, m = 0, l
= 1) is
linearized by the third numerical procedure along the straight motion at speed ``v``; the
5-state Jacobian has one non-zero eigenvalue, ``λ(v) = -c1(v)`` (``c1 = -trace J``), compared
with the closed form ``λ = -m d v / (I_G + m d^2)`` (``d``: distance of the centre of mass
ahead of the skate; the model's parameter ``a`` is the blade position measured from ``G``, so
``d = -a``, reported as ``parameters["lead_of_G_over_blade"]``). Straight motion is stable when the centre of mass leads the skate; the
speed at which stability changes (``v = 0``, the direction reversal) is found by root finding.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import brentq

from .. import linearization as _lin
from ..analysis import charpoly
from ..models import sleigh
from nhcontrol.plotting.style import PALETTE, LINEWIDTH

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition

__all__ = ["run", "summary", "jacobian", "yaw_eigenvalue", "analytic_yaw_eigenvalue"]


def jacobian(cm: CompiledModel, v: float) -> np.ndarray:
    """Minimal 5×5 Jacobian (Eq. (4.124)) of the straight motion at speed ``v``."""
    ref = sleigh.straight_motion(cm, v)
    return np.asarray(_lin.linearize(cm, ref, _lin.Partition.from_dict(sleigh.PARTITION)).A)


def yaw_eigenvalue(cm: CompiledModel, v: float) -> float:
    """The non-zero eigenvalue: ``-c1`` of ``det(λI - J) = λ^5 + c1 λ^4 + ...`` (all others vanish)."""
    return float(-charpoly(jacobian(cm, v))[1])


def analytic_yaw_eigenvalue(v: float, m: float, I_zz: float, a: float) -> float:
    """``λ = -m d v / (I_G + m d^2)`` with ``d = -a`` the lead of G over the blade (model's ``a``)."""
    d = -a
    return -m * d * v / (I_zz + m * d**2)


def run(*, out: Path | None = None, quick: bool = False, m: float = 1.0, I_zz: float = 0.05,
        a: float = -0.2) -> dict:
    """Eigenvalues over a speed range, both directions of travel."""
    cm = sleigh.model(m=m, I_zz=I_zz, a=a)
    speeds = np.linspace(-2.0, 2.0, 9 if quick else 41)
    eigs, lam_num, err, err_others = [], [], 0.0, 0.0
    for v in speeds:
        J = jacobian(cm, v)
        lam = np.linalg.eigvals(J)
        eigs.append(sorted([float(z.real), float(z.imag)] for z in lam))
        lv = yaw_eigenvalue(cm, v)
        lam_num.append(lv)
        err = max(err, abs(lv - analytic_yaw_eigenvalue(v, m, I_zz, a)))
        cp = charpoly(J)
        err_others = max(err_others, float(np.max(np.abs(cp[2:]))))
    v_change = float(brentq(lambda v: yaw_eigenvalue(cm, v), -1.0, 1.5, xtol=1e-14))
    result = {
        # the model's a is the blade position measured from G (a < 0: blade behind G); the
        # closed form of docs/theory/classical.md uses the lead of G over the blade, -a
        "parameters": {"m": m, "I_zz": I_zz, "a": a, "lead_of_G_over_blade": -a},
        "jacobian_shape": list(jacobian(cm, 1.0).shape),
        "speeds": speeds.tolist(),
        "eigenvalues": eigs,
        "yaw_eigenvalue": lam_num,
        "max_error_vs_analytic": err,
        "max_other_charpoly_coefficient": err_others,
        "yaw_eigenvalue_slope": analytic_yaw_eigenvalue(1.0, m, I_zz, a),
        "critical_speed": v_change,
        "stable_direction": "forward (v > 0)" if analytic_yaw_eigenvalue(1.0, m, I_zz, a) < 0
        else "backward (v < 0)",
    }
    if out is not None:
        _plot(result, out)
    return result


def _plot(result: dict, out: Path) -> None:
    from nhcontrol.plotting.style import cite, new_figure, savefig

    fig, ax = new_figure(title="Chaplygin sleigh / skateboard: yaw eigenvalue vs speed")
    v = np.asarray(result["speeds"])
    p = result["parameters"]
    vf = np.linspace(v.min(), v.max(), 201)
    # closed-form line drawn on top of the markers so both stay visible
    ax.plot(v, result["yaw_eigenvalue"], "o", mfc="none", color=PALETTE[0], label="third procedure")
    ax.plot(vf, [analytic_yaw_eigenvalue(s, p["m"], p["I_zz"], p["a"]) for s in vf], "-",
            color="k", lw=LINEWIDTH, label=r"closed form $\lambda = m a v/(I_G + m a^2)$", zorder=3)
    ax.axhline(0, color="0.6", lw=0.6)
    ax.set_xlabel("forward speed v (m/s)")
    ax.set_ylabel(r"yaw eigenvalue $\lambda$ (1/s)")
    ax.legend()
    cite(fig, "thesis", "Sect. 5.2",
         extra=(f"m = {p['m']:g} kg, I_G = {p['I_zz']:g} kg m², a = {p['a']:g} m (the model's "
                f"a; the centre of mass leads the blade by {-p['a']:g} m): the yaw motion is "
                "stable (λ < 0) when travelling forward. Closed form derived in "
                "docs/theory/classical.md."))
    result["figures"] = [savefig(fig, out, "skateboard_eigenvalues").name]


def summary(result: dict) -> str:
    return (f"Chaplygin sleigh / skateboard, straight motion: Jacobian {result['jacobian_shape']}, "
            f"yaw eigenvalue λ = {result['yaw_eigenvalue_slope']:.12f} · v 1/s "
            f"(max error vs closed form {result['max_error_vs_analytic']:.1e}); stable direction "
            f"{result['stable_direction']}; stability changes at v = {_zero(result['critical_speed'])} m/s")


def _zero(x: float, tol: float = 1e-12) -> str:
    """Print round-off zeros as 0."""
    return "0" if abs(x) < tol else f"{x:.3g}"
