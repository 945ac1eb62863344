"""Rolling elliptic torus (thesis Sect. 6.3): circular steady motion, constant Jacobian, Floquet.

Builds the circular motion of a solid torus (lean -20 deg, heading rate 6 rad/s), linearizes it
along the periodic motion (third numerical procedure), makes the Jacobian constant in the heading
frame and checks the Floquet multipliers against exp(T eig J). Saves a figure of the multipliers.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from nhcontrol.analysis import floquet, linearize_relative_equilibrium
from nhcontrol.models import rolling_torus as rt


def main(out: Path | None = None) -> dict:
    cm = rt.model()
    p = rt.torus_parameters("solid", rho=0.3, mu=0.2)
    ref, mo = rt.circular_motion(cm, math.radians(-20.0), Omega=6.0, p=p)
    lin = linearize_relative_equilibrium(cm, ref, rt.PARTITION, lambda st: rt.heading_frame(st, mo.Omega))
    periodic, J = lin.periodic, lin.J
    fr = floquet(periodic)
    rho_J = np.exp(periodic.period * np.linalg.eigvals(J))
    nontriv = fr.multipliers[np.abs(fr.multipliers - 1) > 1e-4]
    diff = max(float(np.min(np.abs(z - rho_J)) / abs(z)) for z in nontriv)
    print(f"spin omega = {mo.omega:.6f} rad/s, contact-path radius = {mo.radius_contact:.6f} m")
    print("nontrivial Floquet multipliers:", np.array2string(nontriv, precision=8))
    print(f"max relative difference from exp(T eig J): {diff:.1e}")
    print(f"speed of the centre: {abs(mo.V):.6f} m/s")
    if out is not None:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(4, 4))
        th = np.linspace(0, 2 * np.pi, 300)
        ax.plot(np.cos(th), np.sin(th), "k-", lw=0.6, label="unit circle")
        ax.plot(fr.multipliers.real, fr.multipliers.imag, "o", mfc="none", label="monodromy")
        ax.plot(rho_J.real, rho_J.imag, "k.", label="exp(T eig J)")
        ax.set_xlabel("Re ρ [-]")
        ax.set_ylabel("Im ρ [-]")
        ax.set_title("Rolling torus: Floquet multipliers")
        ax.set_aspect("equal")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(Path(out) / "rolling_torus_circle.png", dpi=120)
        plt.close(fig)
    return {"omega": mo.omega, "multipliers": nontriv, "max_rel_diff": diff}


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
