"""Kernel expressions: the equations of motion and every partial derivative that the third
numerical procedure (Sect. 4.2.3, Eqs. (4.96)--(4.125)) and Sect. 8.1 need.

Derivatives of products with a vector, e.g. ``∂(M a)/∂x``, are formed with an auxiliary
symbol vector ``a`` that becomes a kernel argument.  All derivatives are exact total
derivatives in the expression graph of the equations
(`ExprGraph`).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..modeling.equations import EquationsOfMotion
from ..modeling.graph import Direction

from ._layout import (ARG_PREFIX, DIRECT_KERNELS, DYNAMICS_FIELDS, INPUT_RATE_FIELDS,  # noqa: F401
                      KERNEL_SIGNATURES, LINEARIZATION_FIELDS, OUTPUT_FIELDS, RATE_FIELDS, ROUTES,
                      _VECTOR_OUTPUTS)
from .._util.reprs import concise_repr



@dataclass(frozen=True)
class FunctionSpec:
    """One generated function: argument groups and named outputs (graph-level matrices)."""

    __repr__ = concise_repr

    name: str
    args: tuple[str, ...]
    outputs: tuple[tuple[str, sp.ImmutableMatrix, tuple[int, ...]], ...]


def kernel_specs(eom: EquationsOfMotion, rates: tuple[sp.Expr, ...] = (),
                 outputs: tuple[sp.Expr, ...] = ()
                 ) -> tuple[list[FunctionSpec], dict[str, list[sp.Symbol]]]:
    """Specs of all kernels of the contract table plus the fused functions.

    ``rates``: the rate expressions ``H`` of first-order states (in ``x, ẋ, u, p``); when given,
    two more functions compute ``H`` (``rates``, for simulation) and ``H`` with its Jacobians
    (``rate_terms``, `RATE_FIELDS`).

    ``outputs``: the declared output expressions ``h`` (in ``x, ẋ, u, p``); when given, two
    more functions compute ``h`` (``outputs``) and ``h`` with its Jacobians (``output_terms``,
    `OUTPUT_FIELDS`).

    Returns
    -------
    specs : list of FunctionSpec
    symbols : dict
        Argument group -> the symbols used for it in the expressions (model symbols for
        ``x, xd, u, p``; fresh dummies for the auxiliary vectors ``a, lam, v, xdd``).
    """
    g = eom.graph
    n, m, l = eom.n, eom.m, eom.l
    S: dict[str, list[sp.Symbol]] = {"x": list(eom.x), "xd": list(eom.xd), "u": list(eom.u), "p": list(eom.p)}
    for grp, cnt in (("xdd", n), ("a", n), ("lam", m + l), ("v", n), ("ud", len(eom.u))):
        S[grp] = [sp.Dummy(f"{grp}{i}") for i in range(cnt)]
    g.add_args(S["xdd"] + S["a"] + S["lam"] + S["v"] + S["ud"])
    X, XD, U = S["x"], S["xd"], S["u"]
    M, Q, C, Cx, B, D, Qd = eom.M_g, eom.Q_g, eom.C_g, eom.Cx_g, eom.B_g, eom.D_g, eom.Qd_g

    def mv(A: sp.MatrixBase, vec: list) -> list:
        return [sum((A[i, j] * vec[j] for j in range(A.shape[1]) if A[i, j] != 0), sp.S.Zero)
                for i in range(A.shape[0])]

    def jac(exprs: list, zs: list) -> sp.ImmutableMatrix:
        if not exprs or not zs:
            return sp.ImmutableMatrix(sp.zeros(len(exprs), len(zs)))
        return sp.ImmutableMatrix(g.jacobian(exprs, zs))

    def with_vec(vec: list) -> dict[str, sp.ImmutableMatrix]:
        if vec is S["xd"]:
            Dv = list(eom.Dxd_g)                       # D ẋ already in the graph (Eq. (2.117))
        else:
            Dv = eom.Dv_g(vec, Direction("v_x", dict(zip(X, vec))), Direction("v_xd", dict(zip(XD, vec))))
        return {"dDv_dx": jac(Dv, X), "dDv_du": jac(Dv, U),
                "dCxv_dx": jac(Dv[:m], X), "dBv_dx": jac(Dv[m:], X)}

    def with_a(vec: list) -> dict[str, sp.ImmutableMatrix]:
        Ma = eom.Ma_g(vec)
        return {"dMa_dx": jac(Ma, X), "dMa_du": jac(Ma, U)}

    Ql, Qdl, Cl = list(Q), list(Qd), list(C)
    base = {"M": M, "Q": Q, "C": C, "Cx": Cx, "B": B, "D": D, "Qd": Qd, "b": eom.b_g,
            "dDTlam_dx": jac(mv(D.T, S["lam"]), X) if m + l else sp.ImmutableMatrix(sp.zeros(n, n)),
            "dQ_dx": jac(Ql, X), "dQ_dxd": jac(Ql, XD), "dQ_du": jac(Ql, U),
            "dQd_dx": jac(Qdl, X), "dQd_dxd": jac(Qdl, XD), "dQd_du": jac(Qdl, U),
            "dC_du": jac(Cl, U)}
    k_ = dict(base)

    def shape(name: str, mat: sp.MatrixBase) -> tuple[int, ...]:
        return (mat.shape[0],) if name in _VECTOR_OUTPUTS else tuple(mat.shape)

    # small direct functions; every other kernel is served by a fused function (see ROUTES)
    specs = [FunctionSpec(name, KERNEL_SIGNATURES[name], ((name, k_[name], shape(name, k_[name])),))
             for name in DIRECT_KERNELS]

    # fused linearization terms: a = ẍ0, v = ẋ0 (Eqs. (4.99), (4.103))
    fa = with_a(S["xdd"])
    fv = with_vec(S["xd"])
    fvv = with_vec(S["xdd"])
    fused = dict(base)
    fused.update(fa)
    fused.update({"dDv_dx": fv["dDv_dx"], "dCxv_dx": fv["dCxv_dx"], "dBv_dx": fv["dBv_dx"],
                  "dDa_dx": fvv["dDv_dx"], "dDa_du": fvv["dDv_du"]})
    specs.append(FunctionSpec("linearization_terms", ("x", "xd", "xdd", "lam", "u", "p"),
                              tuple((nm, fused[nm], shape(nm, fused[nm])) for nm in LINEARIZATION_FIELDS)))
    specs.append(FunctionSpec("dynamics_terms", ("x", "xd", "u", "p"),
                              tuple((nm, base[nm], shape(nm, base[nm])) for nm in DYNAMICS_FIELDS)))
    # inputs in the constraints: E = ∂(B ẋ + b)/∂u and the partial derivatives of E u̇0 (the
    # input-rate term of D ẍ = Qd − E u̇) and of Dᵀ Λ0 with respect to u
    E = eom.E_g if eom.E_g is not None else sp.ImmutableMatrix(sp.zeros(m + l, len(U)))
    Eud = mv(E, S["ud"])
    irt = {"E": E, "dEw_dx": jac(Eud, X), "dEw_dxd": jac(Eud, XD), "dEw_du": jac(Eud, U),
             "dDTlam_du": jac(mv(D.T, S["lam"]), U) if m + l else sp.ImmutableMatrix(sp.zeros(n, len(U)))}
    specs.append(FunctionSpec("input_rate_terms", ("x", "xd", "ud", "lam", "u", "p"),
                              tuple((nm, irt[nm], shape(nm, irt[nm])) for nm in INPUT_RATE_FIELDS)))
    if rates:
        # first-order states (Ch. 7): ż = H(x, ẋ, z, u), z among the inputs u of the mechanics
        H = g.ingest(list(rates))
        rt = {"H": sp.ImmutableMatrix(len(H), 1, H), "dH_dx": jac(H, X), "dH_dxd": jac(H, XD),
              "dH_du": jac(H, U)}
        specs.append(FunctionSpec("rates", ("x", "xd", "u", "p"), (("H", rt["H"], (len(H),)),)))
        specs.append(FunctionSpec("rate_terms", ("x", "xd", "u", "p"),
                                  tuple((nm, rt[nm], (len(H),) if nm == "H" else tuple(rt[nm].shape))
                                        for nm in RATE_FIELDS)))
    if outputs:
        # declared outputs (sensors): y = h(x, ẋ, u), u including first-order states
        h = g.ingest(list(outputs))
        ot = {"h": sp.ImmutableMatrix(len(h), 1, h), "dh_dx": jac(h, X), "dh_dxd": jac(h, XD),
              "dh_du": jac(h, U)}
        specs.append(FunctionSpec("outputs", ("x", "xd", "u", "p"), (("h", ot["h"], (len(h),)),)))
        specs.append(FunctionSpec("output_terms", ("x", "xd", "u", "p"),
                                  tuple((nm, ot[nm], (len(h),) if nm == "h" else tuple(ot[nm].shape))
                                        for nm in OUTPUT_FIELDS)))
    return specs, S


__all__ = ["FunctionSpec", "kernel_specs", "ARG_PREFIX", "KERNEL_SIGNATURES", "LINEARIZATION_FIELDS",
           "DYNAMICS_FIELDS", "RATE_FIELDS", "OUTPUT_FIELDS", "INPUT_RATE_FIELDS", "DIRECT_KERNELS", "ROUTES"]
