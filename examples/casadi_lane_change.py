"""Minimum-effort lane change with casadi.Opti on the exported model, checked on nhcontrol's plant.

Run ``python examples/casadi_lane_change.py [OUTDIR]``. The torque-steered single-track skate
(``nhcontrol.models.single_track``, variant ``"torque"``: a car at the prescribed speed
``V = 20 m/s`` steered by a torque ``T`` on the front skate) is handed to CasADi with
``nhcontrol.interop.to_casadi``: the minimal-state dynamics ``Ẋ = f(X, T, p)``,
``X = [γ, γ̇, x, y, ψ]`` (partition ``x_ai = [γ]``, ``x_ad = [x, y, ψ]``). ``casadi.Opti``
(direct multiple shooting, RK4 with four sub-steps per interval, IPOPT) finds the steering
torque, piecewise constant on ``N = 40`` intervals over 2.5 s, that moves the car one lane
(3.5 m) to the left with zero heading, steer angle and steer rate at the end, minimizing
``∫ T² dt``. The optimal torques then drive nhcontrol's nonlinear plant
(``nhcontrol.simulate.forward_dynamics``, the index-1 DAE of the compiled kernels, DOP853 with
tolerance 1e-10): its end state agrees with the optimizer's prediction to the accuracy of
the RK4 discretisation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import casadi
import numpy as np

from nhcontrol.interop import to_casadi
from nhcontrol.models import single_track
from nhcontrol.simulate import forward_dynamics

LANE = 3.5        # lateral offset [m]
HORIZON = 2.5     # manoeuvre time [s]
N = 40            # control intervals
SUBSTEPS = 4      # RK4 steps per interval
PARTITION = dict(independent=["gamma"], admissible_dependent=["x", "y", "psi"], dependent=[])


def optimize(cs: casadi.Function, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Optimal states (N+1, 5) and torques (N,) of the lane change; the cost ∫T² dt."""
    h = HORIZON / N / SUBSTEPS
    opti = casadi.Opti()
    X = opti.variable(5, N + 1)
    T = opti.variable(1, N)
    opti.subject_to(X[:, 0] == 0)
    for k in range(N):
        xk = X[:, k]
        for _ in range(SUBSTEPS):             # classical RK4 on the exported f(X, u, p)
            k1 = cs.f(xk, T[k], p)
            k2 = cs.f(xk + h / 2 * k1, T[k], p)
            k3 = cs.f(xk + h / 2 * k2, T[k], p)
            k4 = cs.f(xk + h * k3, T[k], p)
            xk = xk + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        opti.subject_to(X[:, k + 1] == xk)
    iy, ipsi = cs.states.index("y"), cs.states.index("psi")
    igam, igd = cs.states.index("gamma"), cs.states.index("gamma_d")
    opti.subject_to(X[[igam, igd, ipsi], N] == 0)
    opti.subject_to(X[iy, N] == LANE)
    cost = casadi.sumsqr(T) * HORIZON / N
    opti.minimize(cost)
    opti.solver("ipopt", {"print_time": False}, {"print_level": 0, "tol": 1e-10, "sb": "yes"})
    sol = opti.solve()
    return np.asarray(sol.value(X)), np.atleast_1d(np.asarray(sol.value(T))), float(sol.value(cost))


def main(outdir: str | Path = ".") -> dict:
    mdl = single_track.build("torque")
    cs = to_casadi(mdl, PARTITION)                     # symbolic route: SX graph of the model
    Xopt, Topt, cost = optimize(cs, cs.p)
    print(f"optimal lane change: ∫T² dt = {cost:.6g} N² m² s, peak |T| = {np.max(np.abs(Topt)):.4g} N m")

    # the optimal torques on nhcontrol's nonlinear plant (zero-order hold)
    cm = mdl.system.compile()
    edges = np.linspace(0.0, HORIZON, N + 1)

    def torque(t: float) -> np.ndarray:
        return np.array([Topt[min(int(np.searchsorted(edges, t, side="right")) - 1, N - 1)]])

    x0, xd0 = (np.asarray(v).ravel() for v in cs.coordinates_of(Xopt[:, 0], [0.0], cs.p))
    sim = forward_dynamics(cm, (0.0, HORIZON), x0, xd0, u=torque, breakpoints=edges[1:-1],
                           t_eval=edges)
    X_sim = np.array([cs.state(x, xd) for x, xd in zip(sim.x, sim.xd)]).T
    err = float(np.max(np.abs(X_sim - Xopt)))
    y_end = float(X_sim[cs.states.index("y"), -1])
    psi_end = float(X_sim[cs.states.index("psi"), -1])
    print(f"nonlinear plant: y(T) = {y_end:.6f} m, psi(T) = {psi_end:.2e} rad, "
          f"max |X_plant - X_opt| = {err:.2e}")

    out = {"cost": cost, "peak_torque": float(np.max(np.abs(Topt))), "y_end": y_end,
           "psi_end": psi_end, "max_state_error": err, "states": cs.states}
    outdir = Path(outdir)
    if outdir.is_dir():
        from nhcontrol.plotting.style import new_figure, savefig

        fig, (a1, a2) = new_figure(2, 1, sharex=True,
                                   title="Minimum-effort lane change (torque-steered skate, 20 m/s)")
        a1.plot(edges, Xopt[cs.states.index("y")], label="CasADi (RK4) prediction")
        a1.plot(sim.t, X_sim[cs.states.index("y")], "--", label="nhcontrol nonlinear plant")
        a1.set_ylabel("lateral position y (m)")
        a1.legend()
        a2.step(edges, np.append(Topt, Topt[-1]), where="post", label="optimal steering torque")
        a2.set_xlabel("time t (s)")
        a2.set_ylabel("torque T (N m)")
        a2.legend()
        out["figure"] = str(savefig(fig, outdir, "casadi_lane_change", fmt="png"))
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
