"""``nhcontrol reproduce waveboard``: the waveboard with toroidal wheels (Sect. 5.5, derived here).

Reduction check: rigid torsion bar, locked rear caster, hoop wheels against the benchmark bicycle
model (an independent model) with the composite parameters of
[`nhcontrol.models.waveboard.benchmark_equivalent()`][nhcontrol.models.waveboard.benchmark_equivalent].
Then the 14 × 14 Jacobian of the
steady forward motion (third procedure, ``J(v) = J0 + v J1 + v² J2`` identified from three speeds and
checked at a fourth), its eigenvalues vs speed and the self-stable speed ranges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .. import linearize as _lin
from ..models import benchmark_bicycle as bb
from ..models import waveboard as wb
from .bicycle_benchmark import jacobian_polynomial
from .escooter import spectrum, stable_ranges

__all__ = ["run", "summary", "reduction", "speed_polynomial"]

V_MAX = 8.0
SPEEDS = np.round(np.linspace(0.25, V_MAX, 32), 10)
REDUCTION_SPEEDS = (1.0, 3.0, 6.0)
HOOPS = {"mu_R": 0.0, "mu_F": 0.0, "sigma_R": 0.0, "sigma_F": 0.0}
LOCKED_PARTITION = dict(independent=["x_b", "phi_b", "delta_F"],
                        admissible_dependent=["y_b", "psi_b", "theta_R", "theta_F"],
                        dependent=["z_b", "theta_b", "xi_R", "xi_F", "eta_R", "eta_F"])


def speed_polynomial(cm: Any, p: np.ndarray, partition: dict) -> tuple[tuple[np.ndarray, ...], float]:
    """``(J0, J1, J2)`` of ``J(v)`` and the relative residual of the fit at ``v = 5.3``."""
    part = _lin.Partition.from_dict(partition)

    def J(v: float) -> np.ndarray:
        return np.asarray(_lin.linearize(cm, wb.steady_forward(cm, v, p=p), part).A)

    poly = jacobian_polynomial(J, speeds=(0.0, 2.0, 4.0))
    Jt = J(5.3)
    res = float(np.max(np.abs(poly[0] + 5.3 * poly[1] + 5.3**2 * poly[2] - Jt)) / np.max(np.abs(Jt)))
    return poly, res


def _nontrivial(ev: np.ndarray) -> np.ndarray:
    ev = ev[np.abs(ev) > 1e-6 * np.max(np.abs(ev))]
    return np.sort_complex(ev)


def reduction() -> dict[str, Any]:
    """Locked board (hoops) vs the benchmark bicycle with `waveboard.benchmark_equivalent()`."""
    cr = wb.model(torsion=False, rear_caster=False)
    pv = cr.param_vector(**HOOPS)
    eq = wb.benchmark_equivalent()
    bcm = bb.model()
    pb = bcm.param_vector(**eq)
    rows, worst = [], 0.0
    part_w = _lin.Partition.from_dict(LOCKED_PARTITION)
    part_b = _lin.Partition.from_dict(bb.PARTITION_4_172)
    for v in REDUCTION_SPEEDS:
        e1 = _nontrivial(np.linalg.eigvals(np.asarray(_lin.linearize(cr, wb.steady_forward(cr, v, p=pv), part_w).A)))
        e2 = _nontrivial(np.linalg.eigvals(np.asarray(_lin.linearize(bcm, bb.steady_forward(bcm, v, p=pb), part_b).A)))
        if e1.shape != e2.shape:
            raise RuntimeError(f"reduction: {e1.size} eigenvalues vs {e2.size} of the benchmark model")
        worst = max(worst, float(np.max(np.abs(e1 - e2) / np.abs(e2))))
        rows.append({"v": v, "eigenvalues": [[float(z.real), float(z.imag)] for z in e1],
                     "benchmark_eigenvalues": [[float(z.real), float(z.imag)] for z in e2]})
    poly, _ = speed_polynomial(cr, pv, LOCKED_PARTITION)
    ranges = stable_ranges(poly, v_max=30.0)
    return {"parameters": {k: float(x) for k, x in eq.items()}, "wheels": "hoops (mu = sigma = 0)",
            "speeds": list(REDUCTION_SPEEDS), "eigenvalues": rows,
            "v_w": ranges[0][0] if ranges else None,
            # None: the locked board stays stable up to the end of the search (30 m/s)
            "v_c": ranges[0][1] if ranges and ranges[0][1] < 30.0 else None,
            "stable_speed_ranges": ranges, "max_rel_diff_vs_benchmark_model": worst}


def run(*, out: Path | None = None, quick: bool = False) -> dict:
    """Reduction check and the steady-forward-motion spectrum vs speed."""
    red = reduction()
    cm = wb.model()
    poly, res = speed_polynomial(cm, cm.param_vector(), wb.PARTITION)
    ev = spectrum(poly, SPEEDS)
    ranges = stable_ranges(poly, v_max=V_MAX)
    fine = spectrum(poly, np.linspace(0.05, V_MAX, 300))
    result: dict[str, Any] = {
        "reduction_max_rel_diff": red["max_rel_diff_vs_benchmark_model"],
        "reduction": red,
        "parameters": dict(wb.PARAMETERS),
        "speeds": [float(v) for v in SPEEDS],
        "eigenvalues": [[[float(z.real), float(z.imag)] for z in e] for e in ev],
        "stable_speed_ranges": ranges,
        "min_spectral_abscissa": float(np.min(np.max(fine.real, axis=1))),
        "completely_unstable": bool(not ranges and np.min(np.max(fine.real, axis=1)) > 0),
        "polynomial_residual": res,
    }
    if out is not None:
        result["figures"] = _plot(poly, ranges, Path(out))
    return result


def _plot(poly: tuple[np.ndarray, ...], ranges: list, out: Path) -> list[str]:
    from nhcontrol.plotting.style import cite, new_figure, savefig

    vs = np.linspace(0.05, V_MAX, 300)
    ev = spectrum(poly, vs)
    fig, ax = new_figure(title="Waveboard with toroidal wheels: eigenvalues vs speed")
    ax.plot(vs, ev.real, "k.", ms=1.5)
    ax.plot(vs, np.abs(ev.imag), ".", color="C0", ms=1.0)
    ax.plot([], [], "k.", label="Re λ")
    ax.plot([], [], ".", color="C0", label="|Im λ|")
    for i, (a, b) in enumerate(ranges):
        ax.axvspan(a, b, color="C2", alpha=0.2, label="self-stable" if i == 0 else None)
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.set_ylim(-20, 20)
    ax.set_xlabel("forward speed v (m/s)")
    ax.set_ylabel("eigenvalue λ (1/s)")
    ax.legend(fontsize=8)
    cite(fig, "thesis", "Sect. 5.5 (model derived here, parameters chosen)",
         extra="Steady forward motion; eigenvalues of the minimal Jacobian (third procedure). "
               + ("Shaded: self-stable speeds." if ranges else
                  "No speed is self-stable: an eigenvalue has a positive real part at every "
                  "speed, the 'completely unstable' waveboard of Ch. 9."))
    return [savefig(fig, out, "waveboard_eigenvalues").name]


def summary(result: dict) -> str:
    """Human-readable report of [`run()`][nhcontrol.reproduce.waveboard.run]."""
    red = result["reduction"]
    return "\n".join([
        "Waveboard with toroidal wheels (Sect. 5.5, derived here)",
        f"  reduction (rigid bar, locked rear caster, hoops) vs benchmark model: max rel. diff "
        f"{result['reduction_max_rel_diff']:.2e}; v_w = {red['v_w']}, v_c = {red['v_c']} m/s "
        "(None: stable to 30 m/s)",
        f"  stable speed ranges in (0, {V_MAX}] m/s: {result['stable_speed_ranges'] or 'none'}",
        f"  completely unstable: {result['completely_unstable']} "
        f"(min over speed of max Re λ = {result['min_spectral_abscissa']:.3f} 1/s)",
    ])
