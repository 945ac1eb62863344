"""Steer-torque LQR for the benchmark bicycle at 2 m/s, verified on the nonlinear plant.

Run ``python examples/bicycle_steer_control.py [OUTDIR]``. Public API and python-control only:
the benchmark bicycle with Meijaard's steer torque ``T_delta`` → steady forward motion at
v = 2 m/s (the weave mode is unstable) → exact linearization (third procedure) →
``to_statespace(states="reduced")`` (lean, steer and their rates) → ``control.lqr`` →
the nonlinear plant ``to_nlsys`` closed with the gain by ``control.interconnect`` and simulated by
``control.input_output_response`` from initial leans of 1°, 2° and 5°, compared with the linear
closed loop.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import control
import numpy as np

from nhcontrol.linearization import linearize
from nhcontrol.models import benchmark_bicycle as bb
from nhcontrol.simulate import constraint_drift, to_nlsys

V = 2.0                                   # forward speed [m/s]
T_FINAL = 5.0                             # [s]
LEANS_DEG = (1.0, 2.0, 5.0)


def closed_loop(cm, ref, K, reduced):
    """Plant + static state feedback T_delta = -K y (the reduced states are zero on the upright run)."""
    plant = to_nlsys(cm, outputs=list(reduced), name="bicycle")
    ctrl = control.ss(np.zeros((0, 0)), np.zeros((0, len(reduced))), np.zeros((1, 0)), -K,
                      inputs=list(reduced), outputs=["T_delta"], name="lqr")
    return control.interconnect([plant, ctrl], inputs=[], outputs=list(reduced) + ["T_delta"],
                                name="bicycle_lqr")


def initial_state(lin, ref, lean_deg):
    """Consistent (x, ẋ) of the straight run at t = 0 with the rear frame leaned by lean_deg:
    the linear state with only phi_b nonzero, made consistent with the constraints."""
    dX = np.zeros(lin.nstates)
    dX[lin.states.index("phi_b")] = math.radians(lean_deg)
    return lin.from_deviation(ref, 0.0, dX)


def main(outdir: str | Path = ".") -> dict:
    cm = bb.model(inputs=("T_delta",))
    ref = bb.steady_forward(cm, V)
    lin = linearize(cm, ref, bb.PARTITION_4_172)
    sys_red = lin.to_statespace(states="reduced")
    reduced = sys_red.state_labels                           # phi_b, delta, phi_b_d, delta_d
    open_loop = np.linalg.eigvals(sys_red.A)
    K, _, E = control.lqr(sys_red, np.diag([10.0, 10.0, 1.0, 1.0]), np.eye(1))
    clsys = closed_loop(cm, ref, K, reduced)
    lin_cl = control.ss(sys_red.A - sys_red.B @ K, np.zeros((4, 0)), np.eye(4), np.zeros((4, 0)))
    t = np.linspace(0.0, T_FINAL, 501)
    iphi = cm.coordinates.index("phi_b")
    rows = []
    for lean in LEANS_DEG:
        x0, xd0 = initial_state(lin, ref, lean)
        resp = control.input_output_response(clsys, t, 0, np.concatenate([x0, xd0]),
                                             solve_ivp_method="LSODA",
                                             solve_ivp_kwargs={"rtol": 1e-10, "atol": 1e-12})
        phi = resp.outputs[0]
        # linear prediction from the same initial deviation (reduced states)
        dX = lin.deviation(ref, 0.0, x0, xd0)
        dX0 = dX[[lin.states.index(s) for s in reduced]]
        phi_lin = control.initial_response(lin_cl, t, dX0).outputs[0]
        rel = float(np.max(np.abs(phi - phi_lin)) / np.max(np.abs(phi_lin)))
        drift = constraint_drift(cm, resp.states).max
        rows.append({"lean_deg": lean, "phi_end": float(phi[-1]), "max_rel_diff": rel, "drift": drift,
                     "t": t, "phi": phi, "phi_lin": phi_lin})
        print(f"lean {lean:.0f} deg: |phi(5 s)| = {abs(phi[-1]):.2e} rad, max |phi - phi_lin| / max "
              f"|phi_lin| = {100 * rel:.3f} %, constraint drift {drift:.1e}")
    print("open-loop eigenvalues:", np.round(np.sort_complex(open_loop), 4))
    print("closed-loop eigenvalues:", np.round(np.sort_complex(E), 4))
    ratios = [rows[i]["max_rel_diff"] / rows[0]["max_rel_diff"] for i in (1, 2)]
    print(f"relative difference ratios 2°/1° = {ratios[0]:.2f}, 5°/1° = {ratios[1]:.2f} "
          "(quadratic scaling: 4, 25)")
    _plot(rows, Path(outdir))
    return {"K": K, "open_loop": open_loop, "closed_loop": E, "rows": rows, "ratios": ratios}


def _plot(rows, outdir: Path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in rows:
        ax.plot(r["t"], np.degrees(r["phi"]), label=f"nonlinear, {r['lean_deg']:.0f}°")
        ax.plot(r["t"], np.degrees(r["phi_lin"]), "--", color="k", lw=0.8)
    ax.plot([], [], "--", color="k", lw=0.8, label="linear closed loop")
    ax.set_xlabel("time t (s)")
    ax.set_ylabel("lean φ (deg)")
    ax.set_title(f"Benchmark bicycle at v = {V} m/s, steer-torque LQR")
    ax.legend()
    outdir.mkdir(parents=True, exist_ok=True)
    fig.savefig(outdir / "bicycle_steer_control.png", dpi=120, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
