"""The Whipple bicycle written in sympy.physics.mechanics, linearized by nhcontrol.

Run ``python examples/sympy_whipple_bicycle.py``. The benchmark bicycle of Meijaard, Papadopoulos,
Ruina & Schwab (2007) is written here the way a sympy.mechanics user writes it — reference
frames, points, rigid bodies, a ``System`` with kinematic differential equations, one holonomic
and four nonholonomic constraints — with no nhcontrol in sight. Coordinates: rear contact point
``q1, q2``, yaw ``q3``, lean ``q4``, pitch ``q5`` (dependent), steer ``q6``, wheel rotations
``q7, q8``; speeds ``u_i = q̇_i``. ``nhcontrol.interop.from_sympy_mechanics`` turns it into a
``MultibodySystem``; the third procedure linearizes the steady forward motion, and the four
lean/steer eigenvalues agree with Table 2 of Meijaard et al. (2007) (15 significant digits as
printed) at v = 0, 1, ..., 10 m/s.

Geometry (z up, x forward): the steer axis is tilted back by ``lam`` and meets the ground a
trail ``c`` ahead of the front contact; lengths and inertias are Meijaard's Table 1 (inertia
products change sign from Meijaard's z-down frame).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
import sympy.physics.mechanics as me

from nhcontrol import linearize
from nhcontrol.interop import from_sympy_mechanics
from nhcontrol.reference import Reference

MEIJAARD = {"w": 1.02, "c": 0.08, "lam": math.pi / 10, "g": 9.81, "rR": 0.3, "rF": 0.35,
            "mR": 2.0, "IRxx": 0.0603, "IRyy": 0.12, "xB": 0.3, "zB": 0.9, "mB": 85.0,
            "IBxx": 9.2, "IByy": 11.0, "IBzz": 2.8, "IBxz": 2.4, "xH": 0.9, "zH": 0.7, "mH": 4.0,
            "IHxx": 0.05892, "IHyy": 0.06, "IHzz": 0.00708, "IHxz": -0.00756, "mF": 3.0,
            "IFxx": 0.1405, "IFyy": 0.28}
"""Meijaard et al. (2007), Table 1 (``zB``, ``zH`` as heights; ``IBxz``, ``IHxz`` in their z-down frame)."""

# Meijaard et al. (2007), Table 2: the lean/steer eigenvalues at v = 0, 5, 10 m/s
TABLE2 = {0.0: [5.53094371765393, 3.13164324790656, -3.13164324790656, -5.53094371765393],
          5.0: [complex(-0.77534188219585, 4.46486771378823), complex(-0.77534188219585, -4.46486771378823),
                -0.32286642900409, -14.0783896927982],
          10.0: [complex(-3.72016840437287, 10.9068113947629), complex(-3.72016840437287, -10.9068113947629),
                 0.16105338653172, -24.624596350174]}

PARTITION = dict(independent=["q4", "q6", "q7"], admissible_dependent=["q1", "q2", "q3", "q8"],
                 dependent=["q5"])


def whipple_system():
    """The Whipple bicycle as a ``sympy.physics.mechanics.System`` and its parameter symbols."""
    t = me.dynamicsymbols._t
    q = me.dynamicsymbols("q1:9")
    u = me.dynamicsymbols("u1:9")
    P = {k: sp.Symbol(k) for k in MEIJAARD}
    w, c, lam, g, rR, rF = (P[k] for k in ("w", "c", "lam", "g", "rR", "rF"))

    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    A = N.orientnew("A", "Axis", [q[2], N.z])            # yaw
    B = A.orientnew("B", "Axis", [q[3], A.x])            # lean
    C = B.orientnew("C", "Axis", [q[4], B.y])            # rear frame (pitch)
    D = C.orientnew("D", "Axis", [q[6], C.y])            # rear wheel
    Cs = C.orientnew("Cs", "Axis", [-lam, C.y])          # steer axis along Cs.z
    E = Cs.orientnew("E", "Axis", [q[5], Cs.z])          # front frame (steer)
    F = E.orientnew("F", "Axis", [q[7], E.y])            # front wheel

    def in_C(x, z):                                      # components in C, fixed in C
        return x * C.x + z * C.z

    def in_E(x, z):                                      # C-components at zero steer, fixed in E
        v = Cs.dcm(C) * sp.Matrix([x, 0, z])
        return v[0] * E.x + v[1] * E.y + v[2] * E.z

    contact_R = O.locatenew("contact_R", q[0] * N.x + q[1] * N.y)
    Ro = contact_R.locatenew("Ro", rR * B.z)                        # rear wheel centre
    Bo = Ro.locatenew("Bo", in_C(P["xB"], P["zB"] - rR))            # rear body mass centre
    S = Ro.locatenew("S", in_C(w + c, -rR))                         # steer axis at the ground
    Ho = S.locatenew("Ho", in_E(P["xH"] - w - c, P["zH"]))          # front assembly mass centre
    Fo = S.locatenew("Fo", in_E(-c, rF))                            # front wheel centre
    down = (-N.z + N.z.dot(E.y) * E.y)
    contact_F = Fo.locatenew("contact_F", rF * down / sp.sqrt(1 - N.z.dot(E.y) ** 2))
    # velocities along the kinematic chain (rigid-body formula for points fixed in C and E)
    Ro.set_vel(N, Ro.pos_from(O).dt(N))
    for pt in (Bo, S):
        pt.v2pt_theory(Ro, N, C)
    for pt in (Ho, Fo):
        pt.v2pt_theory(S, N, E)

    def inertia(frame, ixx, iyy, izz, ixz):               # Meijaard's z-down products: sign change
        return me.inertia(frame, ixx, iyy, izz, 0, 0, -ixz)

    IH = Cs.dcm(C) * inertia(C, P["IHxx"], P["IHyy"], P["IHzz"], P["IHxz"]).to_matrix(C) * C.dcm(Cs)
    bodies = [
        me.RigidBody("rear_wheel", Ro, D, P["mR"], (me.inertia(D, P["IRxx"], P["IRyy"], P["IRxx"]), Ro)),
        me.RigidBody("rear_frame", Bo, C, P["mB"], (inertia(C, P["IBxx"], P["IByy"], P["IBzz"], P["IBxz"]), Bo)),
        me.RigidBody("front_frame", Ho, E, P["mH"],
                     (me.inertia(E, IH[0, 0], IH[1, 1], IH[2, 2], IH[0, 1], IH[1, 2], IH[0, 2]), Ho)),
        me.RigidBody("front_wheel", Fo, F, P["mF"], (me.inertia(F, P["IFxx"], P["IFyy"], P["IFxx"]), Fo)),
    ]
    system = me.System(N, O)
    system.q_ind = [q[i] for i in (0, 1, 2, 3, 5, 6, 7)]
    system.q_dep = [q[4]]
    system.u_ind = [u[3], u[5], u[6]]
    system.u_dep = [u[i] for i in (0, 1, 2, 4, 7)]
    system.kdes = [qi.diff(t) - ui for qi, ui in zip(q, u)]
    system.add_bodies(*bodies)
    system.apply_uniform_gravity(-g * N.z)
    kd = {qi.diff(t): ui for qi, ui in zip(q, u)}
    system.holonomic_constraints = [contact_F.pos_from(O).dot(N.z)]
    vR = Ro.vel(N) + D.ang_vel_in(N).cross(contact_R.pos_from(Ro))     # material contact points
    vF = Fo.vel(N) + F.ang_vel_in(N).cross(contact_F.pos_from(Fo))
    system.nonholonomic_constraints = [vR.dot(N.x).xreplace(kd), vR.dot(N.y).xreplace(kd),
                                       vF.dot(N.x).xreplace(kd), vF.dot(N.y).xreplace(kd)]
    return system, P


def lean_steer_eigenvalues(cm, v: float) -> np.ndarray:
    """The four eigenvalues of the lean/steer motion of steady forward motion at ``v`` (the others
    of the 10 x 10 Jacobian are the zeros of the ignorable coordinates and speeds)."""
    rR, rF = MEIJAARD["rR"], MEIJAARD["rF"]
    xd0 = {"q1": v, "q7": v / rR, "q8": v / rF}
    ref = Reference.constant_velocity(cm, np.zeros(cm.n), [xd0.get(s, 0.0) for s in cm.coordinates])
    ev = np.linalg.eigvals(linearize(cm, ref, PARTITION).A)
    return ev[np.argsort(-np.abs(ev))][:4]


def main() -> dict:
    system, P = whipple_system()
    mb = from_sympy_mechanics(system, {P[k]: v for k, v in MEIJAARD.items()}, name="whipple_sympy")
    cm = mb.compile()
    worst = 0.0
    for v, want in TABLE2.items():
        got = lean_steer_eigenvalues(cm, v)
        for lam in want:
            err = np.min(np.abs(got - lam)) / abs(lam)
            worst = max(worst, float(err))
        print(f"v = {v:4.1f} m/s: " + ", ".join(f"{z:.12g}" for z in sorted(got, key=lambda z: (z.real, z.imag))))
    print(f"largest relative difference from Meijaard et al. (2007), Table 2: {worst:.2e}")
    return {"coordinates": cm.coordinates, "m": cm.m, "l": cm.l, "max_rel_error": worst}


if __name__ == "__main__":
    main()
