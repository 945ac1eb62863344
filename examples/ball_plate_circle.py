"""Ball on a tilting plate tracking a circle (thesis Ch. 8): LQR and MPC on the nonlinear model.

Run ``python examples/ball_plate_circle.py [OUTDIR] [T_FINAL]``. Uses only the public API:
model → circular reference → exact linearization (controllable formulation) → ZOH discretization
→ finite-horizon LQR and LTV-MPC (|α|, |β| ≤ 10°, steps ≤ 0.5° per sample), both as controller
objects (``TVLQRController``, ``MPCController``: they form the deviation, slice their windows and
hold their own sample time) → closed loop on the nonlinear model from the initial deviations of
Eqs. (8.89)–(8.92).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from nhcontrol.design import MPCController, TVLQRController, finite_horizon_lqr, window
from nhcontrol.models import ball_plate as bp
from nhcontrol.plotting.ball_plate import plot_contact_path, plot_inputs, save_figures
from nhcontrol.simulate import forward_dynamics
from nhcontrol.systems import LTVSystem, discretize, restrict


def main(outdir: str | Path = ".", t_final: float = 20.0, phi0_deg: float = 5.0) -> dict:
    cm = bp.model()
    x0, xd0 = bp.initial_conditions(cm, phi0_deg)          # Eqs. (8.89)-(8.92)
    ref = bp.spin_matched_motion(cm, x0, xd0)              # same circle, the spin of (x0, xd0)
    mo = bp.motion_from_reference(cm, ref)
    red = bp.spin_reduction(cm, ref)                       # Z = S X̃ (conserved spin removed)
    dt = mo.period / 125                                   # ~0.05 s, exactly periodic samples
    full = LTVSystem.from_linearization(cm, ref, bp.PARTITION_8_72)   # Eq. (8.74), 8 states
    ctrl = restrict(full, red.S, red.P, states=red.states)  # controllable formulation, Sect. 8.4.5
    dsys = discretize(ctrl, dt)                            # 7 states, 2 inputs
    Q = np.diag([1.0, 1.0, 1.0, 0.1, 0.1, 1e4, 1e4])       # ψ̃ φ̃ θ̃ | ω̃_φ ω̃_θ | x̃_C ỹ_C
    R = 1e3 * np.eye(2)
    steps = int(math.ceil(t_final / dt)) + 3 * 125
    lqr = finite_horizon_lqr(window(dsys, 0, steps), Q, R, Q)
    N, bound, rate = 20, math.radians(10.0), math.radians(0.5)   # rate: no bang-bang inputs

    def deviation(t, x, xd):                   # the controllers' state: Z = S X̃ (Sect. 8.4.5)
        return red.reduce(bp.deviation(ref, t, x, xd))

    # u = u0(t_k + dt/2) + δu_k, held on the sample (feedforward="midpoint", the default)
    controllers = {
        "LQR": TVLQRController(lqr, ref, dt, deviation=deviation),
        # terminal weight: P_{k+N} of the periodic Riccati recursion (terminal="riccati")
        "MPC": MPCController(dsys, ref, N, Q, R, deviation=deviation, u_min=-bound, u_max=bound,
                             du_min=-rate, du_max=rate),
    }
    runs = {}
    for name, ctrl in controllers.items():
        runs[name] = forward_dynamics(cm, (0.0, t_final), x0, xd0, controller=ctrl, rtol=1e-8,
                                      atol=1e-10, t_eval=np.linspace(0, t_final, 401))

    def error(sim):                                        # distance of C to the circle [m]
        return np.abs(np.hypot(sim.x[:, 0] - mo.x_A, sim.x[:, 1] - mo.y_A) - mo.rho)

    nums = {name: {"final_error_m": float(error(s)[-1]), "initial_error_m": float(error(s)[0]),
                   "peak_input_deg": float(np.degrees(np.max(np.abs(s.control_inputs)))),
                   "max_input_step_deg": float(np.degrees(np.max(np.abs(
                       np.diff(s.control_inputs, axis=0)))))}
            for name, s in runs.items()}
    for name, v in nums.items():
        print(f"{name}: contact point {1e3 * v['final_error_m']:.3f} mm from the circle after "
              f"{t_final:g} s (initially {1e3 * v['initial_error_m']:.1f} mm), "
              f"peak plate angle {v['peak_input_deg']:.2f} deg, largest step per sample "
              f"{v['max_input_step_deg']:.2f} deg")
    tr = np.linspace(0.0, t_final, 400)
    xr = ref.x(tr)
    figs = {"ball_plate_circle_path": plot_contact_path(
        {"Reference": (xr[:, 0], xr[:, 1]),
         **{n: (s.x[:, 0], s.x[:, 1]) for n, s in runs.items()}},
        title=f"φ0 = {phi0_deg:g}°, controllable formulation"),
        "ball_plate_circle_mpc_inputs": plot_inputs(
            runs["MPC"].control_times, np.degrees(runs["MPC"].control_inputs), tr,
            np.degrees(ref.u(tr)), label="MPC", bound_deg=10.0)}
    nums["figures"] = [str(p) for p in save_figures(figs, Path(outdir))]
    return nums


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".",
         float(sys.argv[2]) if len(sys.argv) > 2 else 20.0)
