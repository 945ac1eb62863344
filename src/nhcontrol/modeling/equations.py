"""Newton--Euler equations of motion in absolute coordinates (thesis Eqs. (2.98)--(2.119)).

For every body ``i`` with centre of mass ``r_Gi(x, u)`` and orientation ``R_i(x, u)``:

* ``J_i = ∂r_Gi/∂x`` (3, n), so ``v_Gi = J_i ẋ`` and ``a_Gi = J_i ẍ + J̇_i ẋ``;
* ``ω̄_i = vee(R_iᵀ Ṙ_i) = G̅_i ẋ`` with ``Ṙ_i = Σ_j ∂R_i/∂x_j ẋ_j``, i.e. column ``j`` of
  ``G̅_i`` is ``vee(R_iᵀ ∂R_i/∂x_j)``, and ``ᾱ_i = G̅_i ẍ + Ġ̅_i ẋ``.

Projecting the Newton--Euler equations (2.94) of all bodies with ``Lᵀ``
(Eqs. (2.98)--(2.105)) gives

``M = Σ m_i J_iᵀ J_i + G̅_iᵀ Ī_i G̅_i``,
``Qv = Σ -m_i J_iᵀ (J̇_i ẋ) - G̅_iᵀ (Ī_i (Ġ̅_i ẋ) + ω̄_i × Ī_i ω̄_i)``,
``Qa = Σ_loads J_Pᵀ F + G_iᵀ T`` with the material-point Jacobian
``J_P = J_i - (P - r_Gi)~ G_i`` and the global ``G_i = R_i G̅_i``,

and with ``D = [C_x; B]`` (Eq. (2.82)) and ``Qd = -∂(D ẋ)/∂x ẋ`` (Eq. (2.117)) the
index-1 form (2.115)--(2.116).  Inputs are quasi-static: every time derivative is
``∂(·)/∂x ẋ`` (Sect. 8.1).

Everything is built in an `ExprGraph`, so that the
expressions stay short and their exact partial derivatives are cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import sympy as sp

from .graph import Direction, ExprGraph
from .._util.reprs import concise_repr

if TYPE_CHECKING:  # pragma: no cover
    from .system import MultibodySystem


@dataclass(frozen=True, eq=False)
class EquationsOfMotion:
    """Symbolic equations ``M ẍ + Dᵀ Λ = Q``, ``C = 0``, ``B ẋ = 0``, ``D ẍ = Qd``.

    The ``*_g`` fields are expressed in the nodes of `graph` (short expressions,
    used by the code generator); the properties ``M, Q, ...`` give the explicit SymPy
    matrices in the model's symbols (computed on first access; large for big models).

    Attributes
    ----------
    x, xd, u, p : tuple of sympy.Symbol
        Coordinates (n), velocities (n), inputs (k), parameters.
    graph : ExprGraph
    M_g : (n, n), Qa_g, Qv_g, Q_g : (n, 1), C_g : (m, 1), Cx_g : (m, n), B_g : (l, n),
    D_g : (m + l, n), Qd_g : (m + l, 1), b_g : (m + l, 1), E_g : (m + l, k)
        Graph-level matrices; ``b`` the velocity-free terms of affine constraints and
        ``E = ∂(D ẋ + b)/∂u`` the input-rate matrix (holonomic rows zero), so that the
        acceleration level is ``D ẍ = Qd − E u̇``.
    holonomic_names, nonholonomic_names : tuple of str
    """

    __repr__ = concise_repr

    x: tuple
    xd: tuple
    u: tuple
    p: tuple
    graph: ExprGraph = field(repr=False)
    M_g: sp.ImmutableMatrix = field(repr=False)
    Qa_g: sp.ImmutableMatrix = field(repr=False)
    Qv_g: sp.ImmutableMatrix = field(repr=False)
    Q_g: sp.ImmutableMatrix = field(repr=False)
    C_g: sp.ImmutableMatrix = field(repr=False)
    Cx_g: sp.ImmutableMatrix = field(repr=False)
    B_g: sp.ImmutableMatrix = field(repr=False)
    D_g: sp.ImmutableMatrix = field(repr=False)
    Qd_g: sp.ImmutableMatrix = field(repr=False)
    holonomic_names: tuple = ()
    nonholonomic_names: tuple = ()
    body_terms: tuple = field(default=(), repr=False)
    Dxd_g: sp.ImmutableMatrix = field(default=None, repr=False)
    Bxd_g: sp.ImmutableMatrix = field(default=None, repr=False)
    b_g: sp.ImmutableMatrix = field(default=None, repr=False)
    E_g: sp.ImmutableMatrix = field(default=None, repr=False)

    def Dv_g(self, v: list, vdir_x, vdir_xd) -> list:
        """``D v`` (m + l expressions) in structured form for a vector ``v`` (graph level).

        Holonomic rows ``∂C/∂x v`` are the directional derivative of ``C`` along ``vdir_x``
        (``Direction({x_j: v_j})``); nonholonomic rows ``B v`` the directional derivative of the
        constraint expressions ``B ẋ`` along ``vdir_xd`` (``Direction({ẋ_j: v_j})``).
        """
        g = self.graph
        return ([g.diff(c, vdir_x) for c in self.C_g] + [g.diff(e, vdir_xd) for e in self.Bxd_g])

    def Ma_g(self, a: list) -> list:
        """``M a`` (n expressions) built per body, ``Σ m Jᵀ(J a) + G̅ᵀ Ī (G̅ a)`` (graph level).

        Differentiating this structured form (``∂(M a)/∂x``) needs derivatives of the
        3-vectors ``J a`` and ``G̅ a`` instead of all ``n²`` entries of ``M``.
        """
        g = self.graph
        n = self.n
        out = [sp.S.Zero] * n
        for mass, J, Gb, I in self.body_terms:
            Ja = [g.define(sum((J[k, j] * a[j] for j in range(n) if J[k, j] != 0), sp.S.Zero)) for k in range(3)]
            Gba = [g.define(sum((Gb[k, j] * a[j] for j in range(n) if Gb[k, j] != 0), sp.S.Zero)) for k in range(3)]
            IGba = [g.define(sum((I[k, c] * Gba[c] for c in range(3)), sp.S.Zero)) for k in range(3)]
            for i in range(n):
                t1 = sum((J[k, i] * Ja[k] for k in range(3) if J[k, i] != 0), sp.S.Zero)
                t2 = sum((Gb[k, i] * IGba[k] for k in range(3) if Gb[k, i] != 0), sp.S.Zero)
                out[i] = out[i] + mass * t1 + t2
        return out

    @property
    def n(self) -> int:
        return len(self.x)

    @property
    def m(self) -> int:
        return self.C_g.shape[0]

    @property
    def l(self) -> int:  # noqa: E743
        return self.B_g.shape[0]

    def _x(self, mat: sp.MatrixBase) -> sp.ImmutableMatrix:
        return self.graph.expand_matrix(mat)

    @cached_property
    def M(self) -> sp.ImmutableMatrix:
        """Mass matrix ``M(x, u)`` (n, n), Eq. (2.103)."""
        return self._x(self.M_g)

    @cached_property
    def Qa(self) -> sp.ImmutableMatrix:
        """Applied generalized forces (n, 1), Eq. (2.104)."""
        return self._x(self.Qa_g)

    @cached_property
    def Qv(self) -> sp.ImmutableMatrix:
        """Quadratic-velocity generalized forces (n, 1), Eq. (2.105)."""
        return self._x(self.Qv_g)

    @cached_property
    def Q(self) -> sp.ImmutableMatrix:
        """``Q = Qa + Qv`` (n, 1), Eq. (2.108)."""
        return self._x(self.Q_g)

    @cached_property
    def C(self) -> sp.ImmutableMatrix:
        """Holonomic constraints (m, 1), Eq. (2.109)."""
        return self._x(self.C_g)

    @cached_property
    def Cx(self) -> sp.ImmutableMatrix:
        """``∂C/∂x`` (m, n)."""
        return self._x(self.Cx_g)

    @cached_property
    def B(self) -> sp.ImmutableMatrix:
        """Nonholonomic constraint matrix (l, n), Eq. (2.110)."""
        return self._x(self.B_g)

    @cached_property
    def D(self) -> sp.ImmutableMatrix:
        """``[Cx; B]`` (m + l, n), Eq. (2.82)."""
        return self._x(self.D_g)

    @cached_property
    def Qd(self) -> sp.ImmutableMatrix:
        """``-∂(D ẋ)/∂x ẋ`` (m + l, 1), Eq. (2.117)."""
        return self._x(self.Qd_g)


def _vec(items) -> sp.ImmutableMatrix:
    items = list(items)
    return sp.ImmutableMatrix(len(items), 1, items) if items else sp.ImmutableMatrix(sp.zeros(0, 1))


def _mat(rows: int, cols: int, items) -> sp.ImmutableMatrix:
    return sp.ImmutableMatrix(rows, cols, list(items)) if rows * cols else sp.ImmutableMatrix(sp.zeros(rows, cols))


class _BodyKin:
    """Graph-level kinematics of one body."""

    def __init__(self, g: ExprGraph, mb, body, x, xd, tdir: Direction) -> None:
        n = len(x)
        Gb_e = mb.rotation_jacobian(body, "body")        # G̅, column j = vee(Rᵀ ∂R/∂x_j)
        G_e = mb.rotation_jacobian(body, "global")       # G = R G̅
        vals = g.ingest(list(body.position) + list(body.orientation) + list(body.inertia) + [body.mass]
                        + list(Gb_e) + list(G_e))
        self.r = vals[0:3]
        self.R = sp.Matrix(3, 3, vals[3:12])
        self.I = sp.Matrix(3, 3, vals[12:21])
        self.mass = vals[21]
        self.Gb = sp.Matrix(3, n, vals[22:22 + 3 * n])
        self._G = sp.Matrix(3, n, vals[22 + 3 * n:22 + 6 * n])
        # J = ∂r/∂x (3, n) and J̇ ẋ
        self.J = sp.Matrix(3, n, [g.define(g.diff(self.r[a], x[j])) for a in range(3) for j in range(n)])
        self.vG = [g.define(sum((self.J[a, j] * xd[j] for j in range(n)), sp.S.Zero)) for a in range(3)]
        self.Jd_xd = [g.define(g.diff(self.vG[a], tdir)) for a in range(3)]        # J̇ ẋ = ∂(J ẋ)/∂x ẋ
        Gb = self.Gb
        self.wbar = [g.define(sum((Gb[a, j] * xd[j] for j in range(n)), sp.S.Zero)) for a in range(3)]
        self.Gbd_xd = [g.define(g.diff(self.wbar[a], tdir)) for a in range(3)]    # Ġ̅ ẋ = ∂(G̅ ẋ)/∂x ẋ
        self._g = g
        self._n = n

    @property
    def G(self) -> sp.Matrix:
        """Global ``G = R G̅`` (3, n), ``ω = G ẋ``."""
        return self._G

    def point_jacobian(self, P) -> sp.Matrix:
        """``J_P = J - (P - r)~ G`` (3, n) of the material point at global ``P`` (graph exprs)."""
        rho = [self._g.define(P[a] - self.r[a]) for a in range(3)]
        if all(e == 0 for e in rho):
            return self.J
        sk = sp.Matrix([[0, -rho[2], rho[1]], [rho[2], 0, -rho[0]], [-rho[1], rho[0], 0]])
        return (self.J - sk * self.G).applyfunc(self._g.define)


def derive_equations(mb: "MultibodySystem") -> EquationsOfMotion:
    """Derive the [`EquationsOfMotion`][nhcontrol.modeling.EquationsOfMotion] of a validated model (see module docstring)."""
    n = mb.n
    x, xd = list(mb.coordinates), list(mb.velocities)
    g = ExprGraph(list(mb.coordinates) + list(mb.velocities) + list(mb.inputs) + list(mb.parameters))
    tdir = Direction("t", dict(zip(x, xd)))          # d/dt with quasi-static inputs (Sect. 8.1)
    kin = {b.index: _BodyKin(g, mb, b, x, xd, tdir) for b in mb.bodies}

    M = sp.zeros(n, n)
    Qv = sp.zeros(n, 1)
    Qa = sp.zeros(n, 1)
    for b in mb.bodies:
        k = kin[b.index]
        J, Gb, I, mass = k.J, k.Gb, k.I, k.mass
        IGb = (I * Gb).applyfunc(g.define)
        M += mass * (J.T * J) + Gb.T * IGb                                        # Eq. (2.103)
        wbar = sp.Matrix(k.wbar)
        Iw = (I * wbar).applyfunc(g.define)
        gyro = (I * sp.Matrix(k.Gbd_xd) + wbar.cross(Iw)).applyfunc(g.define)
        Qv += -mass * (J.T * sp.Matrix(k.Jd_xd)) - Gb.T * gyro                    # Eq. (2.105)

    def pjac(body, P):
        if body is None:
            return sp.zeros(3, n)
        return kin[body.index].point_jacobian(P)

    for ld in mb.loads:
        if ld.kind == "gravity":
            gg, e = ld.data
            gv = g.ingest([gg] + list(e))
            for b in mb.bodies:
                k = kin[b.index]
                Qa += k.J.T * sp.Matrix([k.mass * gv[0] * gv[1 + a] for a in range(3)])
        elif ld.kind == "force":
            body, F, P = ld.data
            vals = g.ingest(list(F) + list(P))
            Qa += pjac(body, vals[3:6]).T * sp.Matrix(vals[0:3])
        elif ld.kind == "torque":
            body, T = ld.data
            Tv = g.ingest(list(T))
            Qa += kin[body.index].G.T * sp.Matrix(Tv)
        elif ld.kind in ("spring", "damper"):
            ba, Pa, bb, Pb = ld.data[:4]
            vals = g.ingest(list(Pa) + list(Pb) + list(ld.data[4:]))
            Pa_g, Pb_g = vals[0:3], vals[3:6]
            d = sp.Matrix([g.define(Pb_g[a] - Pa_g[a]) for a in range(3)])
            Jrel = (pjac(bb, Pb_g) - pjac(ba, Pa_g)).applyfunc(g.define)             # ∂ḋ/∂ẋ
            dd = g.define((d.T * d)[0, 0])
            if ld.kind == "spring":
                kk, L0 = vals[6], vals[7]
                if L0 == 0:
                    fac = -kk
                else:
                    L = g.define(sp.sqrt(dd))
                    fac = g.define(-kk * (L - L0) / L)
            else:
                c = vals[6]
                ddot = (Jrel * sp.Matrix(xd)).applyfunc(g.define)
                fac = g.define(-c * (d.T * ddot)[0, 0] / dd)
            Qa += Jrel.T * (fac * d)
        elif ld.kind == "generalized":
            Qa += sp.Matrix(g.ingest(list(ld.data[0])))
        else:  # pragma: no cover - internal
            raise RuntimeError(f"unknown load kind {ld.kind}")

    M = M.applyfunc(g.define)
    Qa = Qa.applyfunc(g.define)
    Qv = Qv.applyfunc(g.define)
    Q = (Qa + Qv).applyfunc(g.define)

    hol, nh = mb.holonomic, mb.nonholonomic
    m, l = len(hol), len(nh)
    C = g.ingest([c.expr for c in hol])
    Cx = [g.define(g.diff(C[i], x[j])) for i in range(m) for j in range(n)]
    Bexpr = g.ingest([c.expr for c in nh])
    B = [g.define(g.diff(Bexpr[i], xd[j])) for i in range(l) for j in range(n)]
    D = Cx + B
    # D ẋ in structured form: Ċ = ∂C/∂x ẋ (one directional derivative of C) and the
    # nonholonomic expressions themselves (B ẋ, exact because they are linear in ẋ)
    Dxd = [g.define(g.diff(C[i], tdir)) for i in range(m)] + [g.define(e) for e in Bexpr]
    Qd = [g.define(-g.diff(Dxd[i], tdir)) for i in range(m + l)]                 # Eq. (2.117)
    # velocity-free terms b of affine constraints (D ẋ + b = 0; zero rows otherwise): with
    # Dxd = B ẋ + b above, Qd = -d(B ẋ + b)/dt and ∂(D ẋ + b)/∂x need nothing else
    at_rest = {v: 0 for v in xd}
    bvec = [sp.S.Zero] * m + g.ingest([sp.sympify(c.expr).subs(at_rest) if c.affine else sp.S.Zero
                                       for c in nh])
    # input-rate matrix E = ∂(B ẋ + b)/∂u of the nonholonomic rows (holonomic rows zero: inputs
    # in C(x, u) stay quasi-static): d(B ẋ + b)/dt = B ẍ − Qd + E u̇, so D ẍ = Qd − E u̇
    # (docs/theory/road_vehicles.md, "Inputs in the constraints")
    U = list(mb.inputs)
    k = len(U)
    E = [sp.S.Zero] * (m * k) + [g.define(g.diff(Bexpr[i], U[j])) for i in range(l) for j in range(k)]

    return EquationsOfMotion(
        x=mb.coordinates, xd=mb.velocities, u=mb.inputs, p=mb.parameters, graph=g,
        M_g=_mat(n, n, M), Qa_g=_vec(Qa), Qv_g=_vec(Qv), Q_g=_vec(Q), C_g=_vec(C),
        Cx_g=_mat(m, n, Cx), B_g=_mat(l, n, B), D_g=_mat(m + l, n, D), Qd_g=_vec(Qd),
        holonomic_names=tuple(c.name for c in hol), nonholonomic_names=tuple(c.name for c in nh),
        Dxd_g=_vec(Dxd), Bxd_g=_vec(Bexpr), b_g=_vec(bvec), E_g=_mat(m + l, k, E),
        body_terms=tuple((k.mass, sp.ImmutableMatrix(k.J), sp.ImmutableMatrix(k.Gb), sp.ImmutableMatrix(k.I))
                         for k in kin.values()))


__all__ = ["EquationsOfMotion", "derive_equations"]
