"""Cheap symbolic simplification used while deriving the equations of motion.

``trigsimp`` is far too slow for models such as the bicycle benchmark (n = 11,
orientation matrices that are products of four or five elemental rotations).
The angular velocity ``ω̄ = vee(Rᵀ Ṙ)`` however collapses only through
``sin² + cos² = 1``.  [`cheap_trig()`][nhcontrol.modeling.cheap_trig] expands an expression (without trig
expansion, so ``sin(a + b)`` stays as it is), replaces every even power of a
sine ``sin(a)**(2k)`` by ``(1 - cos(a)**2)**k`` and expands again.  The result
is a polynomial in sines and cosines in which the Pythagorean identity has been
used consistently, so the cancellations that make ``ω̄`` short happen.
"""

from __future__ import annotations

import sympy as sp


def _is_sin_power(e: sp.Basic) -> bool:
    return (e.is_Pow and isinstance(e.base, sp.sin) and e.exp.is_Integer and int(e.exp) >= 2)


def _reduce_sin_power(e: sp.Pow) -> sp.Expr:
    k = int(e.exp)
    arg = e.base.args[0]
    return (1 - sp.cos(arg) ** 2) ** (k // 2) * sp.sin(arg) ** (k % 2)


def cheap_trig(expr: sp.Expr) -> sp.Expr:
    """Expand and apply ``sin(a)**2 = 1 - cos(a)**2`` (fast, exact).

    Parameters
    ----------
    expr : sympy expression

    Returns
    -------
    sympy expression
        Mathematically identical to ``expr``.
    """
    e = sp.expand(expr, trig=False)
    if not e.has(sp.sin):
        return e
    # after expansion every term is a monomial, so one replacement leaves at most
    # sin(a)**1 in each term and the second expansion creates no new even powers
    return sp.expand(e.replace(_is_sin_power, _reduce_sin_power), trig=False)


def cheap_trig_matrix(mat: sp.MatrixBase) -> sp.Matrix:
    """Apply [`cheap_trig()`][nhcontrol.modeling.cheap_trig] entrywise."""
    return sp.Matrix(mat.shape[0], mat.shape[1], [cheap_trig(e) for e in mat])


__all__ = ["cheap_trig", "cheap_trig_matrix"]


def angular_velocity_jacobian(R: sp.MatrixBase, coords: list[sp.Symbol],
                              frame: str = "body") -> sp.Matrix | None:
    """Exact, simplified ``G̅`` (``frame='body'``: ``ω̄ = G̅ ẋ``) or ``G`` (``'global'``: ``ω = G ẋ``).

    Column ``j`` is ``vee(Rᵀ ∂R/∂x_j)`` (body) or ``vee(∂R/∂x_j Rᵀ)`` (global).  The entries
    of ``R`` are treated as polynomials in ``s_k = sin(a_k)``, ``c_k = cos(a_k)`` and the other
    symbols; products and derivatives are done in a polynomial ring and the result is reduced
    modulo ``s_k² + c_k² - 1`` (a Gröbner basis in lex order, so the normal form is unique).
    This gives the same cancellations as ``trigsimp`` at a tiny fraction of the cost.

    Returns
    -------
    sympy.Matrix (3, n) or None
        None when ``R`` is not polynomial in sines, cosines and symbols (then the caller falls
        back to the unsimplified expression).
    """
    from sympy.polys.polyerrors import CoercionFailed, GeneratorsNeeded, PolynomialError
    from sympy.polys.rings import ring

    R = sp.Matrix(R)
    trig = sorted(R.atoms(sp.sin, sp.cos), key=sp.default_sort_key)
    angles = []
    for t in trig:
        if t.args[0] not in angles:
            angles.append(t.args[0])
    s_syms = [sp.Dummy(f"s{k}") for k in range(len(angles))]
    c_syms = [sp.Dummy(f"c{k}") for k in range(len(angles))]
    rep = {}
    for a, s, c in zip(angles, s_syms, c_syms):
        rep[sp.sin(a)] = s
        rep[sp.cos(a)] = c
    Rp = R.xreplace(rep)
    others = sorted(Rp.free_symbols - set(s_syms) - set(c_syms), key=sp.default_sort_key)
    # angle arguments must themselves be polynomial in the other symbols
    arg_syms = set()
    for a in angles:
        arg_syms |= a.free_symbols
    others = sorted(set(others) | (arg_syms - set(s_syms) - set(c_syms)), key=sp.default_sort_key)
    gens = [g for pair in zip(s_syms, c_syms) for g in pair] + others
    if not gens:
        return sp.zeros(3, len(coords))
    try:
        Rg, *G = ring(gens, sp.QQ)
        to = Rg.from_expr
        Rm = [[to(Rp[i, j]) for j in range(3)] for i in range(3)]
        dargs = [[to(sp.diff(a, q)) for q in coords] for a in angles]
    except (CoercionFailed, GeneratorsNeeded, PolynomialError, ValueError, TypeError):
        return None
    gs = G[: 2 * len(angles)]
    sk, ck = gs[0::2], gs[1::2]
    og = {o: G[2 * len(angles) + i] for i, o in enumerate(others)}
    basis = [s * s + c * c - 1 for s, c in zip(sk, ck)]

    def d(p, j):
        out = Rg.zero
        for k in range(len(angles)):
            da = dargs[k][j]
            if da:
                out += (p.diff(sk[k]) * ck[k] - p.diff(ck[k]) * sk[k]) * da
        q = coords[j]
        if q in og:
            out += p.diff(og[q])
        return out

    back = {s: sp.sin(a) for a, s in zip(angles, s_syms)}
    back.update({c: sp.cos(a) for a, c in zip(angles, c_syms)})
    cols = []
    for j in range(len(coords)):
        dR = [[d(Rm[i][k], j) for k in range(3)] for i in range(3)]
        if all(not e for row in dR for e in row):
            cols.append([sp.S.Zero] * 3)
            continue
        if frame == "body":   # W = Rᵀ dR
            W = lambda a, b: sum((Rm[k][a] * dR[k][b] for k in range(3)), Rg.zero)  # noqa: E731
        else:                 # W = dR Rᵀ
            W = lambda a, b: sum((dR[a][k] * Rm[b][k] for k in range(3)), Rg.zero)  # noqa: E731
        entries = [W(2, 1), W(0, 2), W(1, 0)]
        cols.append([e.rem(basis).as_expr().xreplace(back) if e else sp.S.Zero for e in entries])
    return sp.Matrix(3, len(coords), lambda a, j: cols[j][a])
