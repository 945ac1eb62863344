"""Showcase of `nhcontrol.optimize`: the benchmark bicycle countersteers into a steady turn.

The benchmark bicycle (Meijaard et al. 2007; thesis Sect. 4.3.1) with the steer torque
``T_delta`` as its only input runs straight and upright at 5 m/s; the minimum-effort steer torque
``min ∫ T_delta² dt`` (direct collocation on the exact minimal-state dynamics,
`nhcontrol.optimize.optimal_trajectory`) brings it in ``t_final`` into the steady turn of radius
10 m of the catalogue (`nhcontrol.models.bicycle_turns.turn_of_radius`: lean, steer, zero lean and
steer rates). The optimum steers *out of* the turn first (the countersteer: the front wheel
runs out from under the frame, which leans into the turn), then into it. The optimal motion is
tracked by LTV-MPC on the nonlinear model.

Set-up (derived here):

* partition `nhcontrol.models.bicycle_turns.TURN_PARTITION` (rear-wheel rotation, lean and steer
  independent; it stays regular while the heading turns);
* the cyclic coordinates (wheel rotations, yaw, position) are fixed at the start and free at the
  end, and so is the speed: with the steer torque as the only input the speed changes only
  through that torque's work and the height of the centre of mass, both of second order at
  straight running, so a final speed condition would make the constraint Jacobian rank deficient there (no
  linear independence of the active constraints); the speed reached is reported instead;
* the final lean and steer, zero lean and steer rates and the final torque are those of the
  steady turn of radius 10 m *at the speed reached* (with the torque that holds it the final
  accelerations vanish: the bicycle stays in the turn after ``t_final``):
  the target speed is corrected (secant steps on ``v_reached(v) − v``, at most
  `speed_iterations` optimisations, each warm-started from the last) until the two agree, so
  the final state is a steady turn of the catalogue;
* the dependent coordinates (frame height and pitch, the contact angles) follow the wheel by
  continuation in `nhcontrol.optimize` (the contact angle moves by ``−v/ρ`` times the time).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from nhcontrol._util.errors import OptimizationError
from nhcontrol.models import benchmark_bicycle as bb
from nhcontrol.models import bicycle_turns as bt
from nhcontrol.optimize import optimal_trajectory

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.optimize import TrajectorySolution
    from nhcontrol.reference import Reference

__all__ = ["countersteer_turn", "turn_guess", "MPC_DT", "MPC_HORIZON", "STEER_ONSET",
           "ADMISSIBILITY_TOL"]

MPC_DT = 0.02
"""Sample time [s] of the LTV-MPC that tracks the optimal turn."""
MPC_HORIZON = 25
"""Horizon (samples) of that LTV-MPC (0.5 s)."""
STEER_ONSET = 1e-3
"""The steer's first motion: where it first exceeds this fraction of its final value; its sign
is ``initial_steer_sign``."""
ADMISSIBILITY_TOL = 1e-6
"""Absolute tolerance of the admissibility check at the reference's samples (the constraints
hold there to ~1e-12, the dynamic equations in newtons to ~1e-8)."""
_LEAN_OFFSET = math.radians(1.0)      # initial lean error of the closed loop [rad]
_SPEED_TOL = 1e-6                     # relative agreement of target and reached speed


def turn_guess(cm: CompiledModel, start: bt.SteadyTurn, turn: bt.SteadyTurn, t_final: float,
               samples: int = 601) -> Reference:
    """Initial guess of the optimisation (not admissible; derived here): straight running blended
    into ``turn`` by the smooth step ``s = 3τ² − 2τ³`` (``τ = t / t_final``) in every non-cyclic
    coordinate, velocity and the input, the yaw rate ``s Ω``, the frame point at the speed of
    ``start`` along the heading, the wheels spinning as in ``start``."""
    from scipy.integrate import cumulative_trapezoid

    from nhcontrol.reference import Reference

    ix = {c: i for i, c in enumerate(cm.coordinates)}
    t = np.linspace(0.0, t_final, samples)
    tau = t / t_final
    s, sd = 3 * tau ** 2 - 2 * tau ** 3, 6 * tau * (1 - tau) / t_final
    x = start.x0 + s[:, None] * (turn.x0 - start.x0)
    xd = start.xd0 + s[:, None] * (turn.xd0 - start.xd0)
    shape = [ix[c] for c in ("phi_b", "delta")]
    xd[:, shape] = sd[:, None] * (turn.x0 - start.x0)[shape]
    psi = turn.Omega * t_final * (tau ** 3 - tau ** 4 / 2)          # ∫ s Ω dt
    x[:, ix["psi_b"]], xd[:, ix["psi_b"]] = psi, turn.Omega * s
    v = float(start.xd0[ix["x_b"]])
    xd[:, ix["x_b"]], xd[:, ix["y_b"]] = v * np.cos(psi), v * np.sin(psi)
    for c in ("x_b", "y_b", "theta_R", "theta_F", "xi_R", "xi_F"):
        x[:, ix[c]] = start.x0[ix[c]] + cumulative_trapezoid(xd[:, ix[c]], t, initial=0.0)
    u = s[:, None] * np.asarray(turn.u, dtype=float)[None, :]
    return Reference.from_samples(cm, t, x, xd, u=u, p=start.p, check=False)


def countersteer_turn(*, speed: float = 5.0, radius: float = 10.0, t_final: float = 3.0,
                      nodes: int = 61, speed_iterations: int = 5,
                      track_with_mpc: bool = True) -> dict[str, Any]:
    """The benchmark bicycle (steer torque only) from straight running at ``speed`` into the
    steady turn of ``radius`` (to the left) in ``t_final`` with minimum ``∫ T_delta² dt``
    (Hermite–Simpson on ``nodes`` nodes), then tracked by LTV-MPC on the nonlinear model
    (see module).

    Returns
    -------
    dict
        ``numbers``: ``initial_steer_sign`` (sign of the steer's first motion, where it first
        exceeds `STEER_ONSET` of its final value; steers in Meijaard's sign ``δ_M = −delta``,
        right positive), ``countersteer_deg`` (the extreme of that first excursion),
        ``final_steer_deg``,
        ``final_lean_deg`` (right positive), their rates and accelerations at the end (zero:
        the steady turn), ``final_radius_m``, ``final_speed_m_s`` (the
        speed reached), ``steady_torque_Nm`` (the torque that holds the final turn),
        ``turn_residual`` (of the steady-turn equations there), ``status``, ``iterations``,
        ``solve_s`` (IPOPT, last solve), ``total_iterations``, ``total_solve_s``,
        ``speed_iterations``, ``speed_gap_m_s`` (speed reached minus that of the final turn)
        and ``speed_converged`` (within 1e-6 of the entry speed), ``objective``,
        ``peak_torque_Nm``, ``reference_admissible``,
        ``reference_max_residual`` (the admissibility check of the reference at every sample,
        absolute, `ADMISSIBILITY_TOL`), ``reference_dense_residuals`` (its largest residuals on 2001 times, between
        the samples: the interpolation error), ``open_loop_max_lean_error_deg``,
        ``open_loop_max_steer_error_deg``, ``open_loop_max_position_error_m`` (the nonlinear
        model driven by the optimal torque, at the nodes),
        and with the MPC ``tracking_max_error_m`` (frame point's horizontal distance from the
        reference), ``tracking_max_lean_error_deg``, ``tracking_final_lean_error_deg``,
        ``tracking_max_torque_Nm``, ``tracking_lean_offset_deg`` (initial lean error);
        ``arrays``: ``t, lean_deg, steer_deg, torque_Nm`` of the optimum (nodes) and the closed
        loop's ``loop_t, loop_lean_deg, loop_steer_deg``.
    """
    if int(speed_iterations) != speed_iterations or speed_iterations < 1:
        raise OptimizationError(f"speed_iterations must be a positive integer (optimisations to "
                                f"match the final turn's speed to the speed reached), got "
                                f"{speed_iterations!r}")
    cm = bb.model(inputs=("T_delta",))
    part = bt.turn_partition(cm)
    start = bt.straight_turn(cm, speed)
    rho_R = start.values["rho_R"]
    ix = {c: i for i, c in enumerate(cm.coordinates)}
    init = {"theta_R": 0.0, "phi_b": 0.0, "delta": 0.0, "theta_R_d": speed / rho_R,
            "phi_b_d": 0.0, "delta_d": 0.0, "x_b": 0.0, "y_b": 0.0, "psi_b": 0.0, "theta_F": 0.0}
    target, sol, guess, prev = speed, None, None, None
    its, secs = 0, 0.0
    for k in range(speed_iterations):
        turn = bt.turn_of_radius(cm, target, radius)
        final = {"phi_b": float(turn.x0[ix["phi_b"]]), "delta": float(turn.x0[ix["delta"]]),
                 "phi_b_d": 0.0, "delta_d": 0.0, "T_delta": float(turn.u[0])}
        guess = sol if sol is not None else turn_guess(cm, start, turn, t_final)
        t0 = time.perf_counter()
        sol = optimal_trajectory(cm, t_final=t_final, nodes=nodes, initial=init, final=final,
                                 effort={"T_delta": 1.0}, partition=part, x_guess=start.x0,
                                 guess=guess, tol=1e-8, max_iterations=500)
        secs += time.perf_counter() - t0
        its += sol.iterations
        reached = rho_R * float(sol.xd[-1, ix["theta_R"]])
        gap = reached - target
        if abs(gap) <= _SPEED_TOL * speed:
            break
        # secant on gap(target) = reached - target (a fixed-point step first)
        step = gap if prev is None or gap == prev[1] else -gap * (target - prev[0]) / (gap - prev[1])
        prev = (target, gap)
        target += step
    numbers = _numbers(cm, sol, turn, reached, ix)
    numbers.update(_open_loop(cm, sol, ix))
    numbers.update({"speed_in_m_s": speed, "radius_target_m": radius, "t_final_s": t_final,
                    "nodes": nodes, "speed_iterations": k + 1, "total_iterations": its,
                    "total_solve_s": secs, "speed_gap_m_s": gap,
                    "speed_converged": bool(abs(gap) <= _SPEED_TOL * speed)})
    arrays: dict[str, NDArray] = {
        "t": np.asarray(sol.t), "lean_deg": np.degrees(sol.x[:, ix["phi_b"]]),
        "steer_deg": -np.degrees(sol.x[:, ix["delta"]]), "torque_Nm": np.asarray(sol.u[:, 0])}
    if track_with_mpc:
        numbers.update(_track(cm, sol, part, arrays))
    return {"numbers": numbers, "arrays": arrays, "solution": sol, "turn": turn}


def _numbers(cm: CompiledModel, sol: TrajectorySolution, turn: bt.SteadyTurn, reached: float,
             ix: dict[str, int]) -> dict[str, Any]:
    steer = -np.degrees(sol.samples["x"][:, ix["delta"]])        # Meijaard's sign, every sample
    final = float(steer[-1])
    first = int(np.argmax(np.abs(steer) > STEER_ONSET * abs(final)))   # the steer's first motion
    sign = int(np.sign(steer[first]))
    flips = np.flatnonzero(np.sign(steer[first:]) != sign)
    excursion = steer[first:first + (int(flips[0]) if flips.size else steer.size)]
    counter = float(excursion.max() if sign > 0 else excursion.min())      # its extreme
    ref = sol.reference
    chk = ref.check(cm, sol.samples["t"], tol=ADMISSIBILITY_TOL)
    xT = sol.x[-1]
    return {
        "initial_steer_sign": sign, "final_steer_sign": int(np.sign(final)),
        "countersteer_deg": counter, "final_steer_deg": final,
        "final_lean_deg": math.degrees(float(xT[ix["phi_b"]])),
        "final_lean_rate_deg_s": math.degrees(float(sol.xd[-1, ix["phi_b"]])),
        "final_steer_rate_deg_s": math.degrees(float(sol.xd[-1, ix["delta"]])),
        "final_lean_acceleration_deg_s2": math.degrees(float(sol.xdd[-1, ix["phi_b"]])),
        "final_steer_acceleration_deg_s2": math.degrees(float(sol.xdd[-1, ix["delta"]])),
        "final_radius_m": turn.radius, "final_speed_m_s": reached,
        "final_yaw_rate_rad_s": float(sol.xd[-1, ix["psi_b"]]), "turn_yaw_rate_rad_s": turn.Omega,
        "steady_lean_deg": turn.lean_deg, "steady_steer_deg": turn.steer_deg,
        "steady_torque_Nm": float(turn.u[0]), "turn_residual": turn.residual,
        "status": sol.status, "iterations": sol.iterations, "solve_s": sol.solve_time,
        "objective": sol.objective, "peak_torque_Nm": float(np.max(np.abs(sol.samples["u"]))),
        "reference_admissible": bool(chk.ok), "reference_max_residual": float(max(chk.maxima.values())),
    }


def _open_loop(cm: CompiledModel, sol: TrajectorySolution, ix: dict[str, int]) -> dict[str, Any]:
    """The reference between its samples (residuals on a dense grid: the interpolation error)
    and the nonlinear model driven open loop by the optimal torque from the optimal start."""
    from nhcontrol.simulate import forward_dynamics

    dense = sol.reference.check(cm, np.linspace(0.0, sol.t_final, 2001), tol=1e-3)
    ol = forward_dynamics(cm, (0.0, sol.t_final), sol.x[0], sol.xd[0], u=sol.reference, t_eval=sol.t)
    err = np.abs(np.asarray(ol.x) - sol.x)
    return {"reference_dense_residuals": {k: float(v) for k, v in dense.maxima.items()},
            "open_loop_max_lean_error_deg": math.degrees(float(err[:, ix["phi_b"]].max())),
            "open_loop_max_steer_error_deg": math.degrees(float(err[:, ix["delta"]].max())),
            "open_loop_max_position_error_m": float(np.hypot(err[:, ix["x_b"]], err[:, ix["y_b"]]).max())}


def _track(cm: CompiledModel, sol: TrajectorySolution, part: dict, arrays: dict) -> dict[str, Any]:
    """LTV-MPC (`MPCController` on the exact linearization along the optimum, third procedure)
    closed on the nonlinear model, the plant started with the lean 1° off the reference."""
    from nhcontrol.design import MPCController
    from nhcontrol.linearization import linearize
    from nhcontrol.reference import consistent_initial_conditions
    from nhcontrol.simulate import forward_dynamics
    from nhcontrol.systems import LTVSystem

    ref = sol.reference
    ix = {c: i for i, c in enumerate(cm.coordinates)}
    T = sol.t_final
    t_end = T - MPC_HORIZON * MPC_DT
    steps = int(round(t_end / MPC_DT))
    ltv = LTVSystem.from_linearization(cm, ref, part)
    lin0 = linearize(cm, ref, part, t=0.0)
    w = {"phi_b": 100.0, "delta": 100.0, "phi_b_d": 1.0, "delta_d": 1.0, "x_b": 1.0, "y_b": 1.0,
         "psi_b": 10.0}
    Q = np.diag([w.get(s, 0.0) for s in ltv.states])
    mpc = MPCController(ltv, ref, MPC_HORIZON, Q, np.array([[1.0]]), dt=MPC_DT,
                        linearization=lin0, steps=steps, u_min=[-10.0], u_max=[10.0])
    xg = np.array(sol.x[0])
    xg[ix["phi_b"]] += _LEAN_OFFSET
    x0, xd0 = consistent_initial_conditions(cm, xg, sol.xd[0], partition=part, u=sol.u[0])
    cl = forward_dynamics(cm, (0.0, t_end), x0, xd0, controller=mpc, sample_time=MPC_DT,
                          t_eval=np.linspace(0.0, t_end, steps + 1))
    t = np.asarray(cl.t)
    xr = ref.x(t)
    pos = np.hypot(cl.x[:, ix["x_b"]] - xr[:, ix["x_b"]], cl.x[:, ix["y_b"]] - xr[:, ix["y_b"]])
    lean = np.degrees(cl.x[:, ix["phi_b"]] - xr[:, ix["phi_b"]])
    arrays["loop_t"] = t
    arrays["loop_lean_deg"] = np.degrees(cl.x[:, ix["phi_b"]])
    arrays["loop_steer_deg"] = -np.degrees(cl.x[:, ix["delta"]])
    u = np.asarray(cl.u) if getattr(cl, "u", None) is not None else np.zeros((1, 1))
    return {"tracking_max_error_m": float(pos.max()),
            "tracking_max_lean_error_deg": float(np.abs(lean).max()),
            "tracking_final_lean_error_deg": float(abs(lean[-1])),
            "tracking_max_torque_Nm": float(np.abs(u).max()),
            "tracking_lean_offset_deg": math.degrees(_LEAN_OFFSET),
            "tracking_duration_s": float(t_end), "mpc_dt_s": MPC_DT, "mpc_horizon": MPC_HORIZON}
