"""Cheap symbolic simplification used while deriving the equations of motion.

``trigsimp`` is far too slow for models such as the bicycle benchmark (n = 11,
orientation matrices that are products of four or five elemental rotations).
The angular velocity ``ω̄ = vee(Rᵀ Ṙ)`` however collapses only through
``sin² + cos² = 1``.  :func:`cheap_trig` expands an expression (without trig
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
    """Apply :func:`cheap_trig` entrywise."""
    return sp.Matrix(mat.shape[0], mat.shape[1], [cheap_trig(e) for e in mat])


__all__ = ["cheap_trig", "cheap_trig_matrix"]
