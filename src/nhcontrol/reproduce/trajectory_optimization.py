"""Optimal trajectories and parameter identification on the exact dynamics (`nhcontrol.optimize`).

``nhcontrol reproduce trajectory-optimization [--json] [--out DIR] [--quick]``

Arranges the calls of [`nhcontrol.applications.trajectory_optimization`][nhcontrol.applications.trajectory_optimization]:

* ``lane_change`` — minimum-time ISO 3888-1 double lane change of the torque-steered skate
  single-track model entering at 20 m/s: tyres inside the friction circle (μ = 0.9, static axle
  loads), the body's corners inside the cone lanes, steering within the study's limits
  (Hermite–Simpson collocation, IPOPT); then tracked by the lane-change study's LTV-MPC on the
  nonlinear model (``tracking_max_error_m``);
* ``bicycle_turn`` — the benchmark bicycle, steer torque only, from straight running at 5 m/s
  into the steady turn of radius 10 m of the catalogue with minimum effort: the countersteer
  (``initial_steer_sign`` opposite to the final steer), the final lean, steer, radius and speed
  reached, tracked by LTV-MPC on the nonlinear model (``tracking_max_error_m``; see
  [`nhcontrol.applications.bicycle_turn`][nhcontrol.applications.bicycle_turn]);
* ``identification`` — the ball-plate's radius and inertia from 10 s of noisy simulated camera
  and encoder data (100 Hz; σ = 1 mm, 0.01 rad): ``z_scores`` and ``relative_errors``.

``--quick``: 61 nodes, no MPC, and 4 s of data at 50 Hz (the bicycle turn on 41 nodes, no MPC).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["run", "summary"]


def run(*, out: Path | None = None, quick: bool = False) -> dict:
    """Run both studies (``quick``: smaller problems, no closed loop)."""
    from nhcontrol.applications import trajectory_optimization as to

    lane = to.minimum_time_lane_change(nodes=61 if quick else 81, track_with_mpc=not quick)
    ident = (to.ball_plate_identification(duration=4.0, rate=50.0) if quick
             else to.ball_plate_identification())
    result: dict[str, Any] = {"lane_change": lane["numbers"], "identification": ident["numbers"],
                              "quick": quick}
    turn = _bicycle_turn(quick)
    result["bicycle_turn"] = turn["numbers"]
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        _figure(lane, ident, out)
        _turn_figure(turn, out)
    return result


def _bicycle_turn(quick: bool) -> dict:
    from nhcontrol.applications.bicycle_turn import countersteer_turn

    return countersteer_turn(nodes=41, track_with_mpc=False) if quick else countersteer_turn()


def _turn_figure(turn: dict, out: Path) -> None:
    """Lean and steer of the optimal countersteer (and of the LTV-MPC loop), and the torque."""
    import numpy as np

    from nhcontrol.plotting.style import LINESTYLES as ls
    from nhcontrol.plotting.style import PALETTE as col
    from nhcontrol.plotting.style import cite, new_figure, savefig

    a, n = turn["arrays"], turn["numbers"]
    fig, (ax1, ax2) = new_figure(2, 1, title=f"Benchmark bicycle: countersteer into a steady turn "
                                             f"of radius {n['final_radius_m']:.0f} m")
    ax1.plot(a["t"], a["steer_deg"], ls[0], color=col[0], label=r"steer $\delta$ (optimal)")
    ax1.plot(a["t"], a["lean_deg"], ls[0], color=col[1], label=r"lean $\varphi$ (optimal)")
    if "loop_t" in a:
        ax1.plot(a["loop_t"], a["loop_steer_deg"], ls[1], color=col[2], label="steer, LTV-MPC loop")
        ax1.plot(a["loop_t"], a["loop_lean_deg"], ls[1], color=col[4], label="lean, LTV-MPC loop")
    k = int(np.argmin(np.abs(a["steer_deg"] - n["countersteer_deg"])))    # the node nearest it
    ax1.annotate(f"countersteer {n['countersteer_deg']:+.2f}°", (a["t"][k], a["steer_deg"][k]),
                 xytext=(a["t"][k] + 0.9, 2.0), arrowprops={"arrowstyle": "->", "color": col[5]})
    ax1.axhline(0.0, color=col[5], lw=0.5)
    ax1.set_ylim(top=3.5)
    ax1.set(xlabel="t (s)", ylabel="angle (deg)",
            title=f"steer (right positive) and lean: {n['final_steer_deg']:.2f}° and "
                  f"{n['final_lean_deg']:.2f}° in the turn at {n['final_speed_m_s']:.3f} m/s")
    ax1.legend(loc="lower left", fontsize=8, ncol=2)
    ax2.plot(a["t"], a["torque_Nm"], ls[0], color=col[3], label=r"steer torque $T_\delta$ (optimal)")
    ax2.axhline(n["steady_torque_Nm"], color=col[5], ls=ls[3],
                label=f"torque holding the turn {n['steady_torque_Nm']:.3f} N m")
    ax2.set(xlabel="t (s)", ylabel="steer torque (N m)",
            title=rf"minimum $\int T_\delta^2\,dt$, IPOPT status {n['status']}, "
                  f"{n['total_iterations']} iterations")
    ax2.legend(loc="upper right", fontsize=8)
    cite(fig, "meijaard2007", "",
         extra="The benchmark bicycle of thesis Sect. 4.3.1. Minimum-effort steer torque from straight running at 5 m/s into the steady turn of "
               "radius 10 m at the speed reached (Hermite–Simpson collocation on the exact "
               "minimal-state dynamics, derived here); dashed: LTV-MPC on the nonlinear model "
               "started with the lean 1° off. Steer in Meijaard's sign (right positive).")
    savefig(fig, out, "trajectory_optimization_bicycle_turn")


def _figure(lane: dict, ident: dict, out: Path) -> None:
    from nhcontrol.models import lane_change as lc
    from nhcontrol.plotting.style import PALETTE as col
    from nhcontrol.plotting.style import new_figure, savefig

    fig, (ax1, ax2) = new_figure(2, 1, title="Trajectory optimization and identification")
    cx, cy = lc.ISO_TRACK.cones()
    ax1.plot(cx, cy, "^", color=col[3], ms=4, label="cones (ISO 3888-1)")
    x = lane["arrays"]["x"]
    ax1.plot(x[:, 0], x[:, 1], "-", color=col[0], label="minimum-time path of G")
    if "loop_x" in lane["arrays"]:
        lx = lane["arrays"]["loop_x"]
        ax1.plot(lx[:, 0], lx[:, 1], "--", color=col[1], label="LTV-MPC on the nonlinear model")
    ax1.set(xlabel="X (m)", ylabel="Y (m)",
            title=f"Minimum-time lane change: {lane['numbers']['t_final_s']:.3f} s, peak friction "
                  f"utilisation {lane['numbers']['peak_friction_utilisation']:.3f}")
    ax1.legend(loc="upper right", fontsize=8)
    t, y, yf = (ident["arrays"][k] for k in ("t", "y", "y_fit"))
    ax2.plot(t, y[:, 0] * 1e3, ".", color=col[2], ms=2, label="x_C measured")
    ax2.plot(t, yf[:, 0] * 1e3, "-", color=col[0], label="x_C fitted")
    ax2.plot(t, y[:, 1] * 1e3, ".", color=col[4], ms=2, label="y_C measured")
    ax2.plot(t, yf[:, 1] * 1e3, "-", color=col[1], label="y_C fitted")
    z = ident["numbers"]["z_scores"]
    ax2.set(xlabel="t (s)", ylabel="contact point (mm)",
            title=f"Ball-plate identification: z-scores R {z['R']:.2f}, I {z['I']:.2f}")
    ax2.legend(loc="upper right", fontsize=8, ncol=2)
    savefig(fig, out, "trajectory_optimization")


def summary(result: dict) -> str:
    lc_, idn = result["lane_change"], result["identification"]
    lines = ["Trajectory optimization (nhcontrol.optimize)",
             f"  lane change: {lc_['t_final_s']:.3f} s over the track (in {lc_['speed_in_m_s']:.1f} m/s, "
             f"out {lc_['speed_out_m_s']:.1f} m/s), peak friction utilisation "
             f"{lc_['peak_friction_utilisation']:.4f} (mu = {lc_['mu']}), cone clearance "
             f"{lc_['cone_clearance_m']:.3f} m, IPOPT status {lc_['status']} in {lc_['iterations']} "
             f"iterations ({lc_['solve_s']:.1f} s)"]
    if "tracking_max_error_m" in lc_:
        lines.append(f"  LTV-MPC on the nonlinear model: max lateral error {lc_['tracking_max_error_m']:.4f} m")
    z = ", ".join(f"{k} {v:+.2f}" for k, v in idn["z_scores"].items())
    e = ", ".join(f"{k} {100 * v:+.3f} %" for k, v in idn["relative_errors"].items())
    lines.append(f"  identification ({idn['samples']} samples): z-scores {z}; errors {e}")
    if "bicycle_turn" in result:
        bt_ = result["bicycle_turn"]
        lines.append(f"  bicycle turn: countersteer {bt_['countersteer_deg']:+.2f} deg (sign "
                     f"{bt_['initial_steer_sign']:+d}), then steer {bt_['final_steer_deg']:+.2f} deg, lean "
                     f"{bt_['final_lean_deg']:+.2f} deg on radius {bt_['final_radius_m']:.3f} m at "
                     f"{bt_['final_speed_m_s']:.4f} m/s; IPOPT status {bt_['status']}, "
                     f"{bt_['total_iterations']} iterations ({bt_['total_solve_s']:.1f} s); reference "
                     f"admissible: {bt_['reference_admissible']}; open loop within "
                     f"{bt_['open_loop_max_lean_error_deg']:.1e} deg of lean")
        if "tracking_max_error_m" in bt_:
            lines.append(f"  LTV-MPC on the nonlinear bicycle (lean {bt_['tracking_lean_offset_deg']:.0f} deg off "
                         f"at the start): max position error {bt_['tracking_max_error_m']:.4f} m, lean error "
                         f"at the end {bt_['tracking_final_lean_error_deg']:.2e} deg")
    return "\n".join(lines)


if __name__ == "__main__":   # pragma: no cover
    print(summary(run()))
