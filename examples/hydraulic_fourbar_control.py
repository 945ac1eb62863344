"""Hydraulic four-bar (thesis Sect. 7.3): controllability from U_ref and an LQR with integral action
that moves the input link phi2, verified on the nonlinear model with hydraulics.

1. The 6-state Jacobian (7.96) with ``U_ref`` as input is not controllable: with the valve closed
   the oil in volumes 1+2 and in volume 3 is conserved, and one spool changes both in a fixed
   ratio, so one combination ``w . x`` (the left null vector of ``[A, B]``) never changes. An
   LQR of the full system keeps that eigenvalue at zero (it cannot stabilise it).
2. The design is made on the controllable subspace ``w⊥`` (5 states; every eigenvalue passes the
   PBH test, while the Kalman matrix is too ill-conditioned, cond ~1e18, to decide), with an
   integrator of the ``phi2`` error (the static force balance is extremely sensitive to the
   pressures, so a pure state feedback leaves a steady error on the nonlinear model).
3. The target is the equilibrium of the linear model at ``phi2 + delta`` with the same conserved
   quantity; the nonlinear DAE (7.97) with the saturated spool reference ``|U_ref| <= 1`` is
   driven there by ``forward_dynamics_first_order``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import null_space

import control as ct
from nhcontrol.analysis import controllability
from nhcontrol._util.errors import DesignError
from nhcontrol.design import lqr
from nhcontrol.models import hydraulic_fourbar as hf
from nhcontrol.simulate import forward_dynamics_first_order

#: State scaling for the numerics: pressures in MPa (entries of A span 1e-4 ... 1e9 in SI).
SCALE = np.diag([1.0, 1.0, 1e-6, 1e-6, 1e-6, 1.0])


def design(q_phi: float = 1e8, q_int: float = 1e10) -> dict[str, object]:
    """Controllability analysis and the LQR with integral action on the controllable subspace."""
    lin = hf.linearization(60.0, 3.5e6)
    A = SCALE @ lin.A @ np.linalg.inv(SCALE)
    B = SCALE @ lin.B
    full = controllability((A, B))
    try:                                             # the full pair is not stabilisable:
        lqr(ct.ss(A, B, np.eye(6), 0), np.eye(6), np.eye(1))   # nhcontrol refuses it (PBH)
        full_lqr_refusal = ""
    except DesignError as exc:
        full_lqr_refusal = str(exc)
    w = null_space(np.hstack([A, B]).T)             # conserved: w^T x' = 0 for every input
    V = null_space(w.T)                              # orthonormal basis of w-perp (6 x 5)
    Ar, Br = V.T @ A @ V, V.T @ B
    reduced = controllability((Ar, Br))
    c = V[0]                                         # phi2 = c . xi
    Aa = np.block([[Ar, np.zeros((5, 1))], [c[None, :], np.zeros((1, 1))]])
    Ba = np.vstack([Br, [[0.0]]])
    Qa = np.zeros((6, 6))
    Qa[:5, :5] = q_phi * np.outer(c, c) + 1e-6 * np.eye(5)
    Qa[5, 5] = q_int
    res = lqr(ct.ss(Aa, Ba, np.eye(6), 0), Qa, np.eye(1))
    K = np.asarray(res.K)
    return {"lin": lin, "A": A, "B": B, "w": w[:, 0], "V": V, "full": full, "reduced": reduced,
            "full_lqr_refusal": full_lqr_refusal, "K_state": K[:, :5] @ V.T @ SCALE,
            "k_int": float(K[0, 5]), "closed_loop_eigenvalues": np.asarray(res.E)}


def target(A: np.ndarray, w: np.ndarray, X0: np.ndarray, delta: float) -> np.ndarray:
    """Equilibrium of the linear model at ``phi2 + delta`` with ``w . (X - X0) = 0`` (SI units)."""
    N = null_space(A)                                # equilibria of the linear model (2-D)
    coef = np.linalg.lstsq(np.vstack([N[0], w @ N]), np.array([delta, 0.0]), rcond=None)[0]
    return X0 + np.linalg.solve(SCALE, N @ coef)


def main(delta_deg: float = 0.5, t_end: float = 2.0) -> dict[str, object]:
    d = design()
    eq = hf.equilibrium(60.0, 3.5e6)
    X0 = np.r_[eq.x[5], 0.0, eq.p, eq.U]
    Xt = target(d["A"], d["w"], X0, math.radians(delta_deg))
    Kx, kI = d["K_state"], d["k_int"]
    tau = hf.HYDRAULIC_DEFAULTS["tau_v"]

    def controller(t, x, xd, z, w):
        """U_ref = sat(-K (X - X_t) - k_I * integral(phi2 - phi2_t)); second entry feeds the integrator."""
        X = np.r_[x[5], xd[5], z, w[0]]
        u = -(Kx @ (X - Xt))[0] - kI * w[1]
        return np.array([min(1.0, max(-1.0, u)), x[5] - Xt[0]])

    T = np.linspace(0.0, t_end, 201)
    sim = forward_dynamics_first_order(
        hf.model(), (0.0, t_end), eq.x, np.zeros(10), eq.p, [eq.U, 0.0],
        z_rate=lambda x, xd, z, w: hf.circuit_rates(x, xd, z, w[0]),
        w_rate=lambda w, r: np.array([(r[0] - w[0]) / tau, r[1]]),   # spool (7.4) and integrator
        r=controller, t_eval=T, rtol=1e-7, max_step=0.01, jacobian="update")
    phi2 = np.degrees(sim.x[:, 5])
    settled = T[np.nonzero(np.abs(phi2 - math.degrees(Xt[0])) > 0.02 * abs(delta_deg))[0][-1] + 1]
    print(f"Kalman rank {d['full'].kalman.rank}/6, controllable: {d['full'].is_controllable}; "
          f"uncontrollable modes (PBH): {np.round(d['full'].uncontrollable_modes, 9)}")
    print("LQR on all 6 states: refused, " + d["full_lqr_refusal"].split(":")[0]
          + " (the conserved quantity cannot be moved)")
    print(f"conserved combination w = {np.round(d['w'], 5)} (phi2, phi2_d, p1..p3 [MPa], U)")
    print(f"controllable subspace (5 states): PBH rank 5 at every eigenvalue: "
          f"{len(d['reduced'].uncontrollable_modes) == 0}")
    print("closed-loop eigenvalues [1/s]:", np.array2string(np.sort_complex(d["closed_loop_eigenvalues"]),
                                                             precision=2))
    print(f"move phi2 by {delta_deg} deg: phi2(t_end) = {phi2[-1]:.5f} deg (target "
          f"{math.degrees(Xt[0]):.5f}), within 2 % after {settled:.2f} s, |U_ref| saturated for "
          f"{np.mean(np.abs(sim.r[:, 0]) >= 1.0) * t_end:.2f} s; pressures "
          f"{np.round(sim.z[-1] / 1e6, 4)} MPa; max |C(x)| = {sim.constraint_residual:.1e}")
    return {"design": d, "sim": sim, "target": Xt, "phi2_deg": phi2, "settling_time_s": float(settled)}


if __name__ == "__main__":
    main()
