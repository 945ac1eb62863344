"""ISO 3888-1 double lane change at 15 m/s: LTV-MPC on a single-track vehicle model.

Run ``python examples/road_vehicle_lane_change.py [OUTDIR]``. Public API only:

1. the skate single-track model driven by a rear force ``F_R`` and a steering torque ``T``
   (road-vehicle review, Table 1: 4 coordinates, 2 skate constraints, 3 degrees of freedom);
2. the reference of the lane change from the flat output (rear-axle centre) and inverse
   dynamics: a smooth path through the cones of ISO 3888-1 (lane 3's near cone row 3.5 m left
   of lane 1's centre line) at 15 m/s, peak lateral acceleration 5.07 m/s², 62 % of the
   friction available on a dry road (a drivable manoeuvre, where a no-slip wheel model is
   valid);
3. the third numerical procedure along it (an LTV system in ``[x, γ, ẋ, γ̇, y, ψ]``) and its
   zero-order-hold discretization;
4. ``LTVMPC`` (N = 20) with ``|γ| ≤ 8°`` and ``|γ̇| ≤ 40°/s`` on the predicted states, closed on
   the nonlinear model of a vehicle 20 % heavier than the controller's, with its centre of mass
   10 cm further back, starting 5 cm off the path;
5. the same lane change on the skate whose steering angle is assigned (an input in the front
   skate constraint): its LTV system in input-state form (``γ`` a state, ``γ̇`` the input) and
   ``LTVMPC`` with ``|γ|`` a state bound, ``|γ̇|`` an input bound and the skates' friction
   utilisation bounded, the plant's ``γ`` ramping at the commanded rate over each sample,
   started on the reference (`nhcontrol.applications.lane_change`).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from nhcontrol.design import LTVMPC, finite_horizon_lqr
from nhcontrol.applications.lane_change import (LaneChangeSettings, assigned_steering_setup,
                                           closed_loop_assigned)
from nhcontrol.linearization import Partition, linearize
from nhcontrol.models import lane_change as lc
from nhcontrol.models import single_track as st
from nhcontrol.simulate import forward_dynamics
from nhcontrol.systems import LTVSystem, discretize

V, DT, N = lc.SPEED, 0.05, 20             # speed 15 m/s, sampling time [s], MPC horizon
STEER_MAX, RATE_MAX = math.radians(8.0), math.radians(40.0)
SCALE = np.diag([1000.0, 1.0])             # controller inputs: F_R in kN, T in N m


def main(outdir: str | Path = ".") -> dict:
    cm = st.build("force_torque").system.compile()
    T_END = sum(lc.ISO_3888_1_SECTIONS) / V                      # 125 m of track
    steps = int(round(T_END / DT))
    ref = lc.lane_change_reference(cm, V, t_final=(steps + N + 1) * DT)
    part = Partition.from_dict({"x_ai": ["x", "gamma"], "x_ad": ["y", "psi"]})
    ltv = LTVSystem.from_linearization(cm, ref, part)             # A(t), B(t), Eq. (4.124)
    d = discretize(ltv, DT, steps=steps + N)
    cols = [cm.inputs.index("F_R"), cm.inputs.index("T")]        # F_F = 0
    Ad, Bd = d.Ad, d.Bd[:, :, cols] @ SCALE
    states = list(ltv.states)                                     # x, gamma, x_d, gamma_d, y, psi
    Q, R = np.diag([1.0, 1.0, 1.0, 0.01, 100.0, 10.0]), np.diag([1.0, 1e-3])
    P = finite_horizon_lqr((Ad, Bd), Q, R, Q).P                   # terminal weights of the MPC
    hi = np.full(6, np.inf)
    hi[states.index("gamma")] = 0.95 * STEER_MAX                  # margins for the motion
    hi[states.index("gamma_d")] = 0.9 * RATE_MAX                  # between samples
    mpc = LTVMPC(N, Q, R, P[N], x_min=-hi, x_max=hi)
    lin0 = linearize(cm, ref, part, t=0.0)                        # for lin0.deviation
    ix = [cm.coordinates.index(s.removesuffix("_d")) for s in states]
    rate = [s.endswith("_d") for s in states]
    solve_times = []

    def controller(t, x, xd):
        k = int(round(t / DT))
        tw = t + DT * np.arange(N + 1)
        xr, xdr = ref.x(tw), ref.xd(tw)
        x_ref = np.column_stack([(xdr if r else xr)[:, i] for i, r in zip(ix, rate)])
        u_ref = ref.u(tw[:-1])[:, cols] @ np.linalg.inv(SCALE)
        c0 = time.perf_counter()
        step = mpc.step(lin0.deviation(ref, t, x, xd), Ad[k:k + N], Bd[k:k + N], u_ref=u_ref,
                        x_ref=x_ref, Qf=P[k + N])
        solve_times.append(time.perf_counter() - c0)
        u = np.zeros(3)
        u[cols] = SCALE @ step.u
        return u

    plant = {"m": 1.2 * st.DEFAULTS["m"], "J": 1.2 * st.DEFAULTS["J"], "a": 1.2, "b": 1.48}
    x0 = ref.x(0.0) + [0.0, 0.05, 0.0, 0.0]
    sim = forward_dynamics(cm, (0.0, T_END), x0, ref.xd(0.0), p=plant, controller=controller,
                           sample_time=DT, rtol=1e-7, atol=1e-9,
                           t_eval=np.linspace(0.0, T_END, 401))
    e = lc.lateral_error(ref, sim.t, sim.x)
    out = {"max_lateral_error_m": float(np.max(np.abs(e))),
           "peak_lateral_acceleration_m_s2": float(np.max(np.abs(lc.lateral_acceleration(
               ref, np.linspace(0.0, T_END, 2001))))),
           "peak_steer_deg": float(np.degrees(np.max(np.abs(sim.x[:, 3])))),
           "peak_steer_rate_deg_s": float(np.degrees(np.max(np.abs(sim.xd[:, 3])))),
           "median_step_s": float(np.median(solve_times)), "states": tuple(states)}
    print(f"reference: peak lateral acceleration {out['peak_lateral_acceleration_m_s2']:.2f} m/s^2")
    print(f"max lateral deviation {100 * out['max_lateral_error_m']:.1f} cm; peak steer "
          f"{out['peak_steer_deg']:.2f} deg (limit 8), peak steer rate "
          f"{out['peak_steer_rate_deg_s']:.1f} deg/s (limit 40); median MPC step "
          f"{1e3 * out['median_step_s']:.1f} ms")

    # steering angle assigned: gamma is a state of the input-state form, gamma_dot its input
    sa = assigned_steering_setup(LaneChangeSettings(rtol=1e-7, atol=1e-9))
    asg = closed_loop_assigned(sa, "mpc", points_per_step=3)
    out["assigned_steering"] = {k: asg["numbers"][k] for k in (
        "max_lateral_error_m", "peak_steer_deg", "peak_steer_rate_deg_s", "median_step_s")}
    out["assigned_steering"]["states"] = sa.states
    b = out["assigned_steering"]
    print(f"assigned steering: max lateral deviation {100 * b['max_lateral_error_m']:.1f} cm; "
          f"peak steer {b['peak_steer_deg']:.2f} deg, peak steer rate "
          f"{b['peak_steer_rate_deg_s']:.1f} deg/s; median MPC step "
          f"{1e3 * b['median_step_s']:.1f} ms")

    import matplotlib.pyplot as plt
    from nhcontrol.plotting.style import PALETTE, cite, new_figure, reference_line, savefig

    fig, (a1, a2) = new_figure(2, 1, title=f"ISO 3888-1 double lane change at {V:g} m/s, LTV-MPC")
    cx, cy = lc.iso_3888_1_track().cones()
    a1.plot(cx, cy, ls="none", marker="^", ms=4, color=PALETTE[4], label="cones")
    xr = ref.x(sim.t)
    reference_line(a1, xr[:, 0], xr[:, 1])
    a1.plot(sim.x[:, 0], sim.x[:, 1], color=PALETTE[0], label="nonlinear model, MPC")
    xa = asg["arrays"]
    a1.plot(xa["x"][:, 0], xa["x"][:, 1], color=PALETTE[1], ls="--",
            label="MPC, steering angle assigned")
    a1.set_xlabel("x (m)")
    a1.set_ylabel("y (m)")
    a1.legend(fontsize=8)
    a2.plot(sim.t, 100 * e, color=PALETTE[0], label="lateral deviation of G")
    a2.plot(xa["t"], 100 * xa["e"], color=PALETTE[1], ls="--",
            label="lateral deviation of G, steering angle assigned")
    a2.set_xlabel("t (s)")
    a2.set_ylabel("deviation (cm)")
    a2.legend(fontsize=8)
    cite(fig, "road_review", extra="ISO 3888-1 double lane-change track; force/torque and force "
                                   "skate models of Table 1")
    savefig(fig, Path(outdir), "road_vehicle_lane_change")
    plt.close(fig)
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
