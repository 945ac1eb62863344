"""Your first model: a steerable robotic sled, from MultibodySystem to a verified controller.

Run ``python examples/own_model.py [OUTDIR]``. A rigid sled on a knife edge (a wheel that cannot
slip sideways) with a steering torque ``T`` about the vertical axis — not in ``nhcontrol.models``:
symbolic model → compiled kernels → steady straight run (``Reference.constant_velocity``) → exact
linearization (third procedure) → ``to_statespace(states=["psi", "psi_d"])`` → ``control.lqr`` → the
nonlinear plant (``to_nlsys``) in closed loop through ``control.interconnect`` and
``control.input_output_response``, started with a 0.2 rad heading error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import control
import numpy as np
import sympy as sp

from nhcontrol.linearization import linearize
from nhcontrol.modeling import MultibodySystem, contacts, rot_z
from nhcontrol.reference import Reference
from nhcontrol.simulate import constraint_drift, to_nlsys

V = 1.5          # forward speed [m/s]
PSI0 = 0.2       # initial heading error [rad]


def build() -> MultibodySystem:
    mb = MultibodySystem("robot_sled")
    x, y, psi = mb.add_coordinates("x y psi")
    m, I_zz, a, c = mb.add_parameters(m=4.0, I_zz=0.3, a=0.25, c=0.5)   # kg, kg m², m, N m s
    T = mb.add_inputs("T")                                          # steering torque [N m]
    R = rot_z(psi)
    center = sp.Matrix([x, y, 0])
    sled = mb.add_body("sled", mass=m, inertia=sp.diag(I_zz / 2, I_zz / 2, I_zz), position=center,
                       orientation=R)
    # the knife edge sits a = 0.25 m ahead of the centre of mass and rolls along the body X axis
    contacts.knife_edge(mb, sled, center + R * sp.Matrix([a, 0, 0]), (1, 0, 0), name="edge")
    # steering torque and a rotational damper about the vertical axis (generalized force on psi)
    mb.add_generalized_force([0, 0, T - c * mb.velocities[2]])
    return mb


def main(outdir: str | Path = ".") -> dict:
    cm = build().compile()
    ref = Reference.constant_velocity(cm, [0.0, 0.0, 0.0], [V, 0.0, 0.0])   # straight along X
    partition = dict(independent=["x", "psi"], admissible_dependent=["y"], dependent=[])
    lin = linearize(cm, ref, partition)
    # "reduced" keeps only psi_d: the heading psi is cyclic (a turned straight run is a straight run).
    # To regulate the heading too, name the states; to_statespace checks psi, psi_d do not depend
    # on the dropped x, x_d, y.
    print("reduced:", lin.to_statespace(states="reduced").state_labels)
    sys_red = lin.to_statespace(states=["psi", "psi_d"])
    K, _, E = control.lqr(sys_red, np.diag([10.0, 1.0]), np.eye(1))
    print("linear states:", lin.states, "-> controlled:", sys_red.state_labels)
    print("open-loop eigenvalues:", np.round(np.linalg.eigvals(sys_red.A), 4))
    print("closed-loop eigenvalues:", np.round(E, 4))

    plant = to_nlsys(cm, outputs=sys_red.state_labels, name="sled")
    ctrl = control.ss(np.zeros((0, 0)), np.zeros((0, 2)), np.zeros((1, 0)), -K,
                      inputs=sys_red.state_labels, outputs=["T"], name="lqr")
    loop = control.interconnect([plant, ctrl], inputs=[], outputs=sys_red.state_labels + ["T"])
    t = np.linspace(0.0, 8.0, 401)
    x0 = np.array([0.0, 0.0, PSI0])
    xd0 = np.array([V * np.cos(PSI0), V * np.sin(PSI0), 0.0])    # consistent: no side slip
    resp = control.input_output_response(loop, t, 0, np.concatenate([x0, xd0]),
                                         solve_ivp_kwargs={"rtol": 1e-10, "atol": 1e-12})
    psi = resp.outputs[0]
    drift = constraint_drift(cm, resp.states).max
    lin_cl = control.ss(sys_red.A - sys_red.B @ K, np.zeros((2, 0)), np.eye(2), np.zeros((2, 0)))
    dX0 = lin.deviation(ref, 0.0, x0, xd0)[[list(lin.states).index(s) for s in sys_red.state_labels]]
    psi_lin = control.initial_response(lin_cl, t, dX0).outputs[0]
    rel = float(np.max(np.abs(psi - psi_lin)) / np.max(np.abs(psi_lin)))
    print(f"|psi(8 s)| = {abs(psi[-1]):.2e} rad, peak |T| = {np.max(np.abs(resp.outputs[-1])):.3f} N m, "
          f"nonlinear vs linear {100 * rel:.2f} %, constraint drift {drift:.1e}")

    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(t, psi, label="nonlinear plant")
    ax.plot(t, psi_lin, "--", label="linear closed loop")
    ax.set_xlabel("time t (s)")
    ax.set_ylabel("heading ψ (rad)")
    ax.set_title(f"Robot sled at {V} m/s: LQR on the steering torque")
    ax.legend()
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "own_model.png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    return {"states": lin.states, "reduced": sys_red.state_labels, "closed_loop": E,
            "psi_end": float(psi[-1]), "rel_diff": rel, "drift": drift, "K": K}


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
