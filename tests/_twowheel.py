"""A two-wheeled self-balancing robot written with sympy.physics.mechanics (test model).

Coordinates ``x, y`` (axle centre), yaw ``psi``, body pitch ``theta`` and the wheel angles
``phiL, phiR`` (spin relative to the yaw frame); motor torques ``TL, TR`` act between the body
and each wheel. Three nonholonomic constraints (no lateral slip, rolling of each wheel):

    -ẋ sin ψ + ẏ cos ψ = 0,   ẋ cos ψ + ẏ sin ψ ∓ (d/2) ψ̇ − r φ̇_{L,R} = 0,

so 6 coordinates, 3 independent speeds and 9 states (Eq. (4.123)). Linearized about straight
running, ``x − r(φL + φR)/2`` and ``ψ − r(φR − φL)/d`` are conserved and no input moves them.
"""

from __future__ import annotations

import sympy as sp
import sympy.physics.mechanics as me

VALUES = {"mb": 10.0, "mw": 1.0, "r": 0.1, "d": 0.4, "l": 0.3, "Ib": 0.4, "Ibz": 0.3,
          "Iw": 0.005, "Iwd": 0.003, "g": 9.81}
COORDS = ("x", "y", "psi", "theta", "phiL", "phiR")


def sympy_model(kind: str = "system"):
    """``(model, values, inputs)``: a ``System`` (default) or a ``KanesMethod`` with dependent
    speeds ``x_d, y_d, psi_d`` (``kind="kane"``)."""
    t = me.dynamicsymbols._t
    q = me.dynamicsymbols(" ".join(COORDS))
    x, y, psi, theta, phiL, phiR = q
    u = me.dynamicsymbols("x_u y_u psi_u theta_u phiL_u phiR_u")
    TL, TR = me.dynamicsymbols("TL TR")
    sy = {k: sp.Symbol(k) for k in VALUES}
    mb_, mw, r, d, l, Ib, Ibz, Iw, Iwd, g = (sy[k] for k in VALUES)
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    A = N.orientnew("A", "Axis", [psi, N.z])
    B = A.orientnew("B", "Axis", [theta, A.y])
    WL = A.orientnew("WL", "Axis", [phiL, A.y])
    WR = A.orientnew("WR", "Axis", [phiR, A.y])
    C = O.locatenew("C", x * N.x + y * N.y + r * N.z)
    G = C.locatenew("G", l * B.z)
    CL = C.locatenew("CL", d / 2 * A.y)
    CR = C.locatenew("CR", -d / 2 * A.y)
    kd = {qi.diff(t): ui for qi, ui in zip(q, u)}
    for P in (C, G, CL, CR):
        P.set_vel(N, P.pos_from(O).dt(N).xreplace(kd))
    for F in (A, B, WL, WR):
        F.set_ang_vel(N, F.ang_vel_in(N).xreplace(kd))
    body = me.RigidBody("body", G, B, mb_, (me.inertia(B, Ib, Ib, Ibz), G))
    wl = me.RigidBody("wheelL", CL, WL, mw, (me.inertia(WL, Iwd, Iw, Iwd), CL))
    wr = me.RigidBody("wheelR", CR, WR, mw, (me.inertia(WR, Iwd, Iw, Iwd), CR))
    loads = [(G, -mb_ * g * N.z), (CL, -mw * g * N.z), (CR, -mw * g * N.z),
             (WL, TL * A.y), (WR, TR * A.y), (B, -(TL + TR) * A.y)]
    vL = CL.vel(N) + WL.ang_vel_in(N).cross(-r * N.z)
    vR = CR.vel(N) + WR.ang_vel_in(N).cross(-r * N.z)
    nonhol = [C.vel(N).dot(A.y), vL.dot(A.x), vR.dot(A.x)]
    kdes = [qi.diff(t) - ui for qi, ui in zip(q, u)]
    u_ind = [u[3], u[4], u[5]]
    u_dep = [u[0], u[1], u[2]]
    if kind == "kane":
        kane = me.KanesMethod(N, q_ind=list(q), u_ind=u_ind, u_dependent=u_dep, kd_eqs=kdes,
                              velocity_constraints=nonhol)
        kane.kanes_equations([body, wl, wr], loads)
        return kane, sy, [TL, TR]
    system = me.System(N, O)
    system.q_ind = list(q)
    system.u_ind = u_ind
    system.u_dep = u_dep
    system.kdes = kdes
    system.add_bodies(body, wl, wr)
    for pt, f in loads:
        if isinstance(pt, me.Point):
            system.add_loads(me.Force(pt, f))
        else:
            system.add_loads(me.Torque(pt, f))
    system.nonholonomic_constraints = nonhol
    return system, sy, [TL, TR]


def build(kind: str = "system"):
    """The robot as an nhcontrol `MultibodySystem`."""
    from nhcontrol.interop import from_sympy_mechanics

    model, sy, ins = sympy_model(kind)
    return from_sympy_mechanics(model, {sy[k]: v for k, v in VALUES.items()}, inputs=ins,
                                name=f"two_wheeled_robot_{kind}")


PARTITION = dict(independent=["theta", "phiL", "phiR"], admissible_dependent=["x", "y", "psi"],
                 dependent=[])


def straight_running(cm, v: float = 0.5):
    """Upright straight running at ``v`` (m/s) along x: a steady motion with zero torques."""
    import numpy as np

    from nhcontrol.reference import Reference

    r = VALUES["r"]
    return Reference.constant_velocity(cm, np.zeros(6), [v, 0.0, 0.0, 0.0, v / r, v / r])
