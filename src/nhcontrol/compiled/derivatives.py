"""Symbolic kernel expressions: the equations of motion and every partial derivative that
the third numerical procedure (Sect. 4.2.3, Eqs. (4.96)--(4.125)) and Sect. 8.1 need.

Derivatives of products with a vector, e.g. ``∂(M a)/∂x``, are formed symbolically with an
auxiliary symbol vector ``a`` that becomes a kernel argument.  All expressions are written
in canonical argument symbols (``X0..``, ``XD0..``, ``A0..``, ``L0..``, ``V0..``, ``U0..``,
``P0..``) so that the generated code does not depend on the user's symbol names.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..modeling.equations import EquationsOfMotion

#: Argument groups: name -> (prefix of the canonical symbols, length attribute).
ARG_PREFIX = {"x": "X", "xd": "XD", "xdd": "XDD", "a": "A", "lam": "L", "v": "V", "u": "U", "p": "P"}


@dataclass(frozen=True)
class FunctionSpec:
    """One generated function: argument names, and named outputs with their one-point shapes."""

    name: str
    args: tuple[str, ...]
    outputs: tuple[tuple[str, sp.ImmutableMatrix, tuple[int, ...]], ...]


def canonical_symbols(prefix: str, count: int) -> list[sp.Symbol]:
    return [sp.Symbol(f"{prefix}{i}") for i in range(count)]


def _jac(vec: sp.MatrixBase, syms: list[sp.Symbol]) -> sp.Matrix:
    rows = vec.shape[0]
    if rows == 0 or not syms:
        return sp.zeros(rows, len(syms))
    return sp.Matrix(vec).jacobian(sp.Matrix(syms))


def kernel_specs(eom: EquationsOfMotion) -> tuple[list[FunctionSpec], dict[str, int]]:
    """Build the specs of all kernels of the contract table plus the fused functions.

    Returns
    -------
    specs : list of FunctionSpec
    sizes : dict
        Length of each argument group.
    """
    n, m, l = eom.n, eom.m, eom.l
    k, npar = len(eom.u), len(eom.p)
    S = {g: canonical_symbols(ARG_PREFIX[g], c) for g, c in
         (("x", n), ("xd", n), ("xdd", n), ("a", n), ("lam", m + l), ("v", n), ("u", k), ("p", npar))}
    sizes = {g: len(v) for g, v in S.items()}
    sub = dict(zip(eom.x, S["x"]))
    sub.update(zip(eom.xd, S["xd"]))
    sub.update(zip(eom.u, S["u"]))
    sub.update(zip(eom.p, S["p"]))

    def c(mat: sp.MatrixBase) -> sp.Matrix:
        return sp.Matrix(mat).xreplace(sub) if mat.shape[0] * mat.shape[1] else sp.zeros(*mat.shape)

    X, XD, U = S["x"], S["xd"], S["u"]
    M, Q, C, Cx, B, D, Qd = (c(eom.M), c(eom.Q), c(eom.C), c(eom.Cx), c(eom.B), c(eom.D), c(eom.Qd))
    a, lam, v = sp.Matrix(S["a"]), sp.Matrix(S["lam"]), sp.Matrix(S["v"])
    Ma = M * a
    DTlam = D.T * lam if m + l else sp.zeros(n, 1)
    Dv = D * v if m + l else sp.zeros(0, 1)
    Cxv = Cx * v if m else sp.zeros(0, 1)
    Bv = B * v if l else sp.zeros(0, 1)
    k_ = {
        "M": M, "Q": Q, "C": C, "Cx": Cx, "B": B, "D": D, "Qd": Qd,
        "dMa_dx": _jac(Ma, X), "dMa_du": _jac(Ma, U), "dDTlam_dx": _jac(DTlam, X),
        "dQ_dx": _jac(Q, X), "dQ_dxd": _jac(Q, XD), "dQ_du": _jac(Q, U),
        "dDv_dx": _jac(Dv, X), "dDv_du": _jac(Dv, U),
        "dQd_dx": _jac(Qd, X), "dQd_dxd": _jac(Qd, XD), "dQd_du": _jac(Qd, U),
        "dCxv_dx": _jac(Cxv, X), "dBv_dx": _jac(Bv, X), "dC_du": _jac(C, U),
    }
    vec_kernels = {"Q", "C", "Qd"}
    signature = {
        "M": ("x", "u", "p"), "Q": ("x", "xd", "u", "p"), "C": ("x", "u", "p"),
        "Cx": ("x", "u", "p"), "B": ("x", "u", "p"), "D": ("x", "u", "p"), "Qd": ("x", "xd", "u", "p"),
        "dMa_dx": ("x", "a", "u", "p"), "dMa_du": ("x", "a", "u", "p"),
        "dDTlam_dx": ("x", "lam", "u", "p"),
        "dQ_dx": ("x", "xd", "u", "p"), "dQ_dxd": ("x", "xd", "u", "p"), "dQ_du": ("x", "xd", "u", "p"),
        "dDv_dx": ("x", "v", "u", "p"), "dDv_du": ("x", "v", "u", "p"),
        "dQd_dx": ("x", "xd", "u", "p"), "dQd_dxd": ("x", "xd", "u", "p"), "dQd_du": ("x", "xd", "u", "p"),
        "dCxv_dx": ("x", "v", "u", "p"), "dBv_dx": ("x", "v", "u", "p"), "dC_du": ("x", "u", "p"),
    }

    def shape(name: str, mat: sp.MatrixBase) -> tuple[int, ...]:
        return (mat.shape[0],) if name in vec_kernels else tuple(mat.shape)

    specs = [FunctionSpec(name, signature[name], ((name, sp.ImmutableMatrix(mat), shape(name, mat)),))
             for name, mat in k_.items()]

    # fused linearization terms: a = xdd, v = xd (Eqs. (4.99), (4.103))
    to_xdd_a = dict(zip(S["a"], S["xdd"]))
    v_to_xd = dict(zip(S["v"], S["xd"]))
    v_to_xdd = dict(zip(S["v"], S["xdd"]))
    fused = [
        ("M", M), ("Q", Q), ("D", D), ("Cx", Cx), ("B", B), ("Qd", Qd),
        ("dMa_dx", k_["dMa_dx"].xreplace(to_xdd_a)), ("dMa_du", k_["dMa_du"].xreplace(to_xdd_a)),
        ("dDTlam_dx", k_["dDTlam_dx"]), ("dQ_dx", k_["dQ_dx"]), ("dQ_dxd", k_["dQ_dxd"]),
        ("dQ_du", k_["dQ_du"]),
        ("dDv_dx", k_["dDv_dx"].xreplace(v_to_xd)), ("dDa_dx", k_["dDv_dx"].xreplace(v_to_xdd)),
        ("dQd_dx", k_["dQd_dx"]), ("dQd_dxd", k_["dQd_dxd"]),
        ("dCxv_dx", k_["dCxv_dx"].xreplace(v_to_xd)), ("dBv_dx", k_["dBv_dx"].xreplace(v_to_xd)),
        ("dQd_du", k_["dQd_du"]), ("dDa_du", k_["dDv_du"].xreplace(v_to_xdd)), ("dC_du", k_["dC_du"]),
    ]
    specs.append(FunctionSpec("linearization_terms", ("x", "xd", "xdd", "lam", "u", "p"),
                              tuple((nm, sp.ImmutableMatrix(mat), shape(nm, mat)) for nm, mat in fused)))
    specs.append(FunctionSpec("dynamics_terms", ("x", "xd", "u", "p"),
                              tuple((nm, sp.ImmutableMatrix(mat), shape(nm, mat)) for nm, mat in
                                    (("M", M), ("Q", Q), ("D", D), ("Qd", Qd)))))
    return specs, sizes


#: Field order of :class:`~nhcontrol.compiled.LinearizationTerms`.
LINEARIZATION_FIELDS = ("M", "Q", "D", "Cx", "B", "Qd", "dMa_dx", "dMa_du", "dDTlam_dx", "dQ_dx",
                        "dQ_dxd", "dQ_du", "dDv_dx", "dDa_dx", "dQd_dx", "dQd_dxd", "dCxv_dx",
                        "dBv_dx", "dQd_du", "dDa_du", "dC_du")

__all__ = ["FunctionSpec", "kernel_specs", "canonical_symbols", "ARG_PREFIX", "LINEARIZATION_FIELDS"]
