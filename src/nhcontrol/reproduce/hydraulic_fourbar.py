"""``nhcontrol reproduce hydraulic-fourbar``: the hydraulically actuated four-bar of thesis Sect. 7.3.

Arranges library calls: the equilibrium at phi2 = 60 deg with p3 = 3.5 MPa (Eqs. (7.84)-(7.99)),
the multipliers by inverse dynamics (Eqs. (7.91)-(7.94)), the 6x6 Jacobian of Eq. (7.96) from
:func:`nhcontrol.linearize.linearize_with_first_order_states` for four friction scenarios
(nominal, friction/10, friction/100, frictionless), and the controllability with ``U_ref`` as
input. Derivations and choices: ``docs/theory/hydraulics.md``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.controllability import controllability
from ..linearize import linearize_with_first_order_states
from ..models import hydraulic_fourbar as hf
from ..reference import Reference
from ..reference.inverse import inverse_dynamics

__all__ = ["run", "summary", "SCENARIOS"]

#: Friction scale factors of the scenarios (F_c, F_s, sigma2 multiplied together).
SCENARIOS: dict[str, float] = {"nominal": 1.0, "friction_div10": 0.1, "friction_div100": 0.01,
                               "frictionless": 0.0}


def _friction(factor: float) -> dict[str, float]:
    d = hf.DEFAULTS
    return {"F_c": d["F_c"] * factor, "F_s": d["F_s"] * factor, "sigma2": d["sigma2"] * factor}


def _linearization(factor: float) -> Any:
    over = _friction(factor)
    eq = hf.equilibrium(60.0, 3.5e6)
    cm = hf.model(**over)
    ref = Reference.equilibrium(cm, eq.x, u=eq.p)
    return linearize_with_first_order_states(cm, ref, hf.PARTITION, **hf.circuit_jacobians(eq).as_kwargs())


def run(*, out: Path | None = None, quick: bool = False) -> dict[str, Any]:
    """Headline numbers (JSON-serialisable); with ``out`` also the eigenvalue figure."""
    eq = hf.equilibrium(60.0, 3.5e6)
    cm = hf.model()
    inv = inverse_dynamics(cm, eq.x, np.zeros(10), np.zeros(10), u=eq.p)
    lins = {name: _linearization(f) for name, f in SCENARIOS.items()}
    eigs = {name: [[float(e.real), float(e.imag)] for e in lin.eigenvalues] for name, lin in lins.items()}
    # pressures in MPa for the numerical rank decisions (entries of A span 1e-4 ... 1e9 in SI)
    S = np.diag([1.0, 1.0, 1e-6, 1e-6, 1e-6, 1.0])
    A, B = np.asarray(lins["nominal"].A), np.asarray(lins["nominal"].B)
    ctrb = controllability((S @ A @ np.linalg.inv(S), S @ B))
    result: dict[str, Any] = {
        "equilibrium": {"phi2_deg": 60.0, "phi32_deg": math.degrees(eq.x[6]),
                        "phi43_deg": math.degrees(eq.x[7]), "s": float(eq.x[8]),
                        "alpha_deg": math.degrees(eq.x[9]), "p1_Pa": float(eq.p[0]),
                        "p2_Pa": float(eq.p[1]), "p3_Pa": float(eq.p[2]),
                        "cylinder_force_N": eq.cylinder_force},
        "multipliers": [float(v) for v in inv.lam],
        "multipliers_residual": inv.max_residual,
        "jacobian_shape": list(lins["nominal"].A.shape),
        "states": list(lins["nominal"].states),
        "eigenvalues": eigs,
        "controllability": {"input": "U_ref", "is_controllable": bool(ctrb.is_controllable),
                            "kalman_rank": int(ctrb.kalman.rank),
                            "state_units": "phi2 rad, phi2_d rad/s, p MPa, U 1",
                            "uncontrollable_modes": [[float(e.real), float(e.imag)]
                                                     for e in ctrb.uncontrollable_modes],
                            "singular_values": [float(s) for s in ctrb.kalman.singular_values]},
    }
    if out is not None:
        result["figures"] = _plot(Path(out))
    return result


def _plot(out: Path) -> list[str]:
    import matplotlib.pyplot as plt

    from ..plotting.style import cite, new_figure, savefig

    factors = np.logspace(-3, 0, 7)
    fig, ax = new_figure(title="Hydraulic four-bar: mechanical eigenvalues vs seal friction")
    for f in factors:
        ev = _linearization(float(f)).eigenvalues
        mid = ev[(np.abs(ev) > 1.0) & (np.abs(ev) < 5e3) & (np.abs(ev + 1 / 0.0045) > 1e-6 * 222)]
        ax.plot(mid.real, mid.imag, "b.", ms=5)
    ax.plot([], [], "b.", label="friction-sensitive eigenvalues, friction x 1e-3 ... 1")
    ax.axvline(0, color="0.6", lw=0.6)
    ax.set_xlabel("Re λ [1/s]")
    ax.set_ylabel("Im λ [1/s]")
    ax.legend(fontsize=8)
    cite(fig, "thesis", "Sect. 7.3")
    path = savefig(fig, out, "hydraulic_fourbar_eigenvalues")
    plt.close(fig)
    return [Path(path).name]


def summary(result: dict[str, Any]) -> str:
    e = result["equilibrium"]
    lines = [f"Hydraulic four-bar (Sect. 7.3): phi32 = {e['phi32_deg']:.4f} deg, phi43 = "
             f"{e['phi43_deg']:.4f} deg, s = {e['s']:.6f} m, alpha = {e['alpha_deg']:.4f} deg, "
             f"p1 = p2 = {e['p2_Pa'] / 1e6:.6f} MPa (thesis ~2.82), p3 = {e['p3_Pa'] / 1e6:.2f} MPa",
             "multipliers (7.91): " + ", ".join(f"{v:.4f}" for v in result["multipliers"]),
             f"Jacobian {result['jacobian_shape']} in {result['states']}"]
    for name, ev in result["eigenvalues"].items():
        lines.append(f"  {name:16s} " + ", ".join(f"{re:.4g}{im:+.4g}j" for re, im in ev))
    c = result["controllability"]
    lines.append(f"controllable from U_ref: {c['is_controllable']} (Kalman rank {c['kalman_rank']}, "
                 f"uncontrollable modes (PBH) {c['uncontrollable_modes']})")
    return "\n".join(lines)
