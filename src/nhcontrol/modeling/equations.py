"""Newton--Euler equations of motion in absolute coordinates (thesis Eqs. (2.98)--(2.119)).

For every body ``i`` with centre of mass ``r_Gi(x, u)`` and orientation
``R_i(x, u)``:

* ``J_i = ∂r_Gi/∂x`` (3, n), so ``v_Gi = J_i ẋ`` and ``a_Gi = J_i ẍ + J̇_i ẋ``;
* ``ω̄_i = vee(R_iᵀ Ṙ_i) = G̅_i ẋ`` with ``Ṙ_i = Σ_j ∂R_i/∂x_j ẋ_j`` and
  ``ᾱ_i = G̅_i ẍ + Ġ̅_i ẋ``.

Projecting Eq. (2.94) with ``Lᵀ`` (Eqs. (2.101)--(2.105)) gives

``M = Σ m_i J_iᵀ J_i + G̅_iᵀ Ī_i G̅_i``,
``Qv = Σ -m_i J_iᵀ (J̇_i ẋ) - G̅_iᵀ (Ī_i (Ġ̅_i ẋ) + ω̄_i × Ī_i ω̄_i)``,
``Qa = Σ_loads (∂v_P/∂ẋ)ᵀ F + (∂ω/∂ẋ)ᵀ T``,

and with ``D = [C_x; B]`` (Eq. (2.82)) and ``Qd = -∂(D ẋ)/∂x ẋ`` (Eq. (2.117))
the index-1 form (2.115)--(2.116).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy as sp

from .system import Body, _skew

if TYPE_CHECKING:  # pragma: no cover
    from .system import MultibodySystem


@dataclass(frozen=True)
class EquationsOfMotion:
    """Symbolic equations ``M ẍ + Dᵀ Λ = Q``, ``C = 0``, ``B ẋ = 0``, ``D ẍ = Qd``.

    Attributes
    ----------
    x, xd, u, p : tuple of sympy.Symbol
        Coordinates (n), velocities (n), inputs (k), parameters.
    M : ImmutableMatrix (n, n)
        Mass matrix, Eq. (2.103).
    Qa, Qv, Q : ImmutableMatrix (n, 1)
        Applied, quadratic-velocity and total generalized forces, Eqs. (2.104), (2.105), (2.108).
    C : ImmutableMatrix (m, 1)
        Holonomic constraints, Eq. (2.109).
    Cx : ImmutableMatrix (m, n)
        ``∂C/∂x``.
    B : ImmutableMatrix (l, n)
        Nonholonomic constraint matrix, Eq. (2.110).
    D : ImmutableMatrix (m + l, n)
        ``[Cx; B]``, Eq. (2.82).
    Qd : ImmutableMatrix (m + l, 1)
        ``-∂(D ẋ)/∂x ẋ``, Eq. (2.117).
    holonomic_names, nonholonomic_names : tuple of str
    """

    x: tuple
    xd: tuple
    u: tuple
    p: tuple
    M: sp.ImmutableMatrix
    Qa: sp.ImmutableMatrix
    Qv: sp.ImmutableMatrix
    Q: sp.ImmutableMatrix
    C: sp.ImmutableMatrix
    Cx: sp.ImmutableMatrix
    B: sp.ImmutableMatrix
    D: sp.ImmutableMatrix
    Qd: sp.ImmutableMatrix
    holonomic_names: tuple
    nonholonomic_names: tuple

    @property
    def n(self) -> int:
        return len(self.x)

    @property
    def m(self) -> int:
        return self.C.shape[0]

    @property
    def l(self) -> int:  # noqa: E743
        return self.B.shape[0]


def _zero_if_empty(rows: list, ncols: int) -> sp.Matrix:
    return sp.Matrix(rows) if rows else sp.zeros(0, ncols)


def derive_equations(mb: "MultibodySystem") -> EquationsOfMotion:
    """Derive the :class:`EquationsOfMotion` of a validated model (see module docstring)."""
    n = mb.n
    x = sp.Matrix(mb.coordinates)
    xd = sp.Matrix(mb.velocities)
    M = sp.zeros(n, n)
    Qv = sp.zeros(n, 1)
    Qa = sp.zeros(n, 1)
    J_of: dict[int, sp.Matrix] = {}
    for b in mb.bodies:
        J = b.position.jacobian(x)                       # J_i, (3, n)
        J_of[b.index] = J
        vG = J * xd
        Jd_xd = vG.jacobian(x) * xd                      # J̇_i ẋ
        wbar = mb.body_angular_velocity(b)               # ω̄_i = G̅_i ẋ
        Gb = wbar.jacobian(xd)                           # G̅_i, (3, n)
        Gbd_xd = wbar.jacobian(x) * xd                   # Ġ̅_i ẋ
        I = sp.Matrix(b.inertia)
        Iw = I * wbar
        M += b.mass * (J.T * J) + Gb.T * I * Gb          # Eq. (2.103)
        Qv += -b.mass * (J.T * Jd_xd) - Gb.T * (I * Gbd_xd + wbar.cross(Iw))  # Eq. (2.105)

    for ld in mb.loads:
        if ld.kind == "gravity":
            g, e = ld.data
            for b in mb.bodies:
                Qa += J_of[b.index].T * (b.mass * g * sp.Matrix(e))
        elif ld.kind == "force":
            body, F, P = ld.data
            Qa += mb._point_jacobian(body, P).T * sp.Matrix(F)
        elif ld.kind == "torque":
            body, T = ld.data
            G = mb.angular_velocity(body).jacobian(xd)
            Qa += G.T * sp.Matrix(T)
        elif ld.kind in ("spring", "damper"):
            ba, Pa, bb, Pb = ld.data[:4]
            d = sp.Matrix(Pb) - sp.Matrix(Pa)
            Jrel = mb._point_jacobian(bb, Pb) - mb._point_jacobian(ba, Pa)   # ∂ḋ/∂ẋ (material points)
            if ld.kind == "spring":
                k, L0 = ld.data[4], ld.data[5]
                if L0 == 0:
                    f_vec = -k * d                                            # force on b
                else:
                    L = sp.sqrt((d.T * d)[0, 0])
                    f_vec = -k * (L - L0) / L * d
            else:
                c = ld.data[4]
                ddot = Jrel * xd
                f_vec = -c * (d.T * ddot)[0, 0] / (d.T * d)[0, 0] * d
            Qa += Jrel.T * f_vec
        elif ld.kind == "generalized":
            Qa += sp.Matrix(ld.data[0])
        else:  # pragma: no cover - internal
            raise RuntimeError(f"unknown load kind {ld.kind}")

    hol = mb.holonomic
    nh = mb.nonholonomic
    C = _zero_if_empty([c.expr for c in hol], 1)
    Cx = C.jacobian(x) if hol else sp.zeros(0, n)
    Bexpr = _zero_if_empty([c.expr for c in nh], 1)
    B = Bexpr.jacobian(xd) if nh else sp.zeros(0, n)
    D = Cx.col_join(B)
    if D.shape[0]:
        Qd = -(D * xd).jacobian(x) * xd                  # Eq. (2.117)
    else:
        Qd = sp.zeros(0, 1)
    Q = Qa + Qv
    im = sp.ImmutableMatrix
    return EquationsOfMotion(x=mb.coordinates, xd=mb.velocities, u=mb.inputs, p=mb.parameters,
                             M=im(M), Qa=im(Qa), Qv=im(Qv), Q=im(Q), C=im(C), Cx=im(Cx), B=im(B),
                             D=im(D), Qd=im(Qd),
                             holonomic_names=tuple(c.name for c in hol),
                             nonholonomic_names=tuple(c.name for c in nh))


__all__ = ["EquationsOfMotion", "derive_equations"]
