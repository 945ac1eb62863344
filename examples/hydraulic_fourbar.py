"""Hydraulically actuated four-bar (thesis Sect. 7.3): equilibrium, multipliers, 6x6 Jacobian.

Uses only the public API: the catalogue model, the toolbox's inverse dynamics and the third
procedure with first-order states (pressures p1, p2, p3 and spool position U).
"""

from __future__ import annotations

import math

import numpy as np

from nhcontrol.linearization import linearize_with_first_order_states
from nhcontrol.models import hydraulic_fourbar as hf
from nhcontrol.reference import Reference
from nhcontrol.reference.inverse import inverse_dynamics


def main() -> dict[str, object]:
    eq = hf.equilibrium(phi2_deg=60.0, p3=3.5e6)
    cm = hf.model()
    lam = inverse_dynamics(cm, eq.x, np.zeros(10), np.zeros(10), u=eq.p).lam
    ref = Reference.equilibrium(cm, eq.x, u=eq.p)
    lin = linearize_with_first_order_states(cm, ref, hf.PARTITION, **hf.circuit_jacobians(eq).as_kwargs())
    print(f"phi32 = {math.degrees(eq.x[6]):.4f} deg, phi43 = {math.degrees(eq.x[7]):.4f} deg, "
          f"s = {eq.x[8]:.6f} m, alpha = {math.degrees(eq.x[9]):.4f} deg")
    print(f"p1 = p2 = {eq.p[1] / 1e6:.6f} MPa (thesis: ~2.82 MPa), p3 = {eq.p[2] / 1e6:.2f} MPa")
    print("multipliers (7.91):", np.array2string(lam, precision=4, suppress_small=True))
    print(f"Jacobian {lin.A.shape} in {lin.states}; eigenvalues [1/s]:")
    print(np.array2string(lin.eigenvalues, precision=4, suppress_small=True))
    return {"p2_Pa": float(eq.p[1]), "multipliers": lam, "A": lin.A, "eigenvalues": lin.eigenvalues}


if __name__ == "__main__":
    main()
