"""SymPy expressions to CasADi ``SX``/``MX`` graphs (the converter of ``nhcontrol.interop``).

[`sympy_to_casadi()`][nhcontrol.interop.sympy_to_casadi] walks a SymPy expression tree (or a
matrix, or a list of them) once, sharing every repeated sub-expression, and builds the same
expression from CasADi's elementary operations. Intermediate symbols (the nodes of an
``ExprGraph``, the replacements of ``sympy.cse``) are translated on first use from their
definitions, so a model's short graph-level expressions become a CasADi graph of the same size,
never the expanded trees. [`casadi_function()`][nhcontrol.interop.casadi_function] wraps the
translation as a ``casadi.Function`` of named vector inputs.

The translation is exact: each SymPy operation maps to the CasADi operation of the same
mathematical meaning (``Abs`` → ``fabs``, ``atan2`` → ``atan2``, ``Piecewise`` → nested
``if_else``, ``Mod(a, b)`` → ``a − b floor(a/b)`` with SymPy's sign convention); numbers are
rounded once to double precision. An operation without a translation raises
`InteropError` (`nhcontrol._util.errors`) naming it. CasADi is imported only when a
function here is called (optional dependency, extra ``casadi``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from .._util.errors import InteropError

__all__ = ["sympy_to_casadi", "casadi_function", "require_casadi", "SUPPORTED_FUNCTIONS"]

SUPPORTED_FUNCTIONS: tuple[str, ...] = (
    "sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "atan2", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "exp", "log", "sqrt", "Abs", "sign", "Min", "Max", "floor",
    "ceiling", "Mod", "Heaviside", "Piecewise", "erf")
"""SymPy functions with a CasADi translation (besides ``+``, ``*``, ``**``, numbers, relations and
the logical ``And``/``Or``/``Not``)."""


def require_casadi() -> Any:
    """Import and return the ``casadi`` module, or raise a clear error when it is missing."""
    try:
        import casadi
    except ImportError as exc:   # pragma: no cover - casadi is installed where the tests run
        raise InteropError("the CasADi interop needs the optional dependency 'casadi'; install it "
                           "with: pip install 'nhcontrol[casadi]' (or pip install casadi)") from exc
    return casadi


def _fold(op: Callable[[Any, Any], Any], args: list) -> Any:
    out = args[0]
    for a in args[1:]:
        out = op(out, a)
    return out


def _function_table(ca: Any) -> dict[str, Callable[..., Any]]:
    def mod(a: Any, b: Any) -> Any:           # SymPy's Mod: result has the sign of b
        return a - b * ca.floor(a / b)

    def heaviside(a: Any, h0: Any = 0.5) -> Any:
        return ca.if_else(a > 0, 1.0, ca.if_else(a < 0, 0.0, h0))

    return {
        "sin": ca.sin, "cos": ca.cos, "tan": ca.tan, "asin": ca.asin, "acos": ca.acos,
        "atan": ca.atan, "sinh": ca.sinh, "cosh": ca.cosh, "tanh": ca.tanh, "asinh": ca.asinh,
        "acosh": ca.acosh, "atanh": ca.atanh, "exp": ca.exp, "log": ca.log, "sqrt": ca.sqrt,
        "Abs": ca.fabs, "sign": ca.sign, "floor": ca.floor, "ceiling": ca.ceil, "erf": ca.erf,
        "cot": lambda a: 1.0 / ca.tan(a), "sec": lambda a: 1.0 / ca.cos(a),
        "csc": lambda a: 1.0 / ca.sin(a), "atan2": ca.atan2, "Mod": mod, "Heaviside": heaviside,
        "Min": lambda *a: _fold(ca.fmin, list(a)), "Max": lambda *a: _fold(ca.fmax, list(a)),
    }


def _number(e: Any) -> float:
    try:
        return float(e)
    except TypeError as exc:
        raise InteropError(f"the constant {e} is not real; CasADi graphs are real-valued") from exc


def _combine(e: Any, a: list, ca: Any, table: Mapping[str, Callable[..., Any]]) -> Any:
    """CasADi value of the SymPy node ``e`` from the CasADi values ``a`` of its arguments."""
    import sympy as sp

    if isinstance(e, sp.Add):
        return _fold(lambda s, t: s + t, a)
    if isinstance(e, sp.Mul):
        return _fold(lambda s, t: s * t, a)
    if isinstance(e, sp.Pow):
        base, ex = a
        q = e.exp
        if q.is_Number:
            if q == -1:
                return 1.0 / base
            if q == sp.Rational(1, 2):
                return ca.sqrt(base)
            if q == sp.Rational(-1, 2):
                return 1.0 / ca.sqrt(base)
            if q == 2:
                return base * base
            if q.is_Integer:
                return ca.constpow(base, float(q))
        return base ** ex
    if type(e).__name__ == "ExprCondPair":
        return (a[0], a[1])
    if isinstance(e, sp.Piecewise):
        # (expr_i, cond_i) pairs in order; the last condition is usually True
        out = None
        for val, cond in reversed(a):
            if out is None:
                if not (isinstance(cond, bool) and cond):
                    raise InteropError(f"the Piecewise expression {e} has no otherwise branch "
                                       f"(a final (value, True) pair); CasADi needs a value everywhere")
                out = val
            else:
                out = ca.if_else(cond, val, out)
        return out
    if isinstance(e, sp.Equality):
        return a[0] == a[1]
    if isinstance(e, sp.Unequality):
        return a[0] != a[1]
    if isinstance(e, sp.StrictLessThan):
        return a[0] < a[1]
    if isinstance(e, sp.LessThan):
        return a[0] <= a[1]
    if isinstance(e, sp.StrictGreaterThan):
        return a[0] > a[1]
    if isinstance(e, sp.GreaterThan):
        return a[0] >= a[1]
    if isinstance(e, sp.And):
        return _fold(ca.logic_and, a)
    if isinstance(e, sp.Or):
        return _fold(ca.logic_or, a)
    if isinstance(e, sp.Not):
        return ca.logic_not(a[0])
    name = type(e).__name__
    fn = table.get(name)
    if fn is None:
        raise InteropError(f"the SymPy operation {name!r} (in {str(e)[:80]}) has no CasADi translation; "
                           f"supported: +, *, **, numbers, relations, And/Or/Not and "
                           f"{', '.join(SUPPORTED_FUNCTIONS)}. Rewrite the expression with these")
    return fn(*a)


def sympy_to_casadi(exprs: Any, symbols: Mapping[Any, Any], *,
                    definitions: Mapping[Any, Any] | None = None,
                    cache: dict | None = None) -> Any:
    """Translate SymPy expressions into CasADi expressions.

    Parameters
    ----------
    exprs : sympy.Expr, sympy.MatrixBase or sequence of them
        What to translate. A matrix gives a CasADi matrix of the same shape; a list or tuple
        gives a list of translations.
    symbols : mapping sympy.Symbol -> casadi.SX / casadi.MX / float
        The value of every free symbol (scalar CasADi expressions, e.g. the entries of
        ``casadi.SX.sym("x", n)``, or numbers).
    definitions : mapping sympy.Symbol -> sympy.Expr, optional
        Intermediate symbols and their definitions (the nodes of an expression graph, the
        replacements of ``sympy.cse``); each is translated once, on first use.
    cache : dict, optional
        Memo of translated sub-expressions; pass the same dict to several calls to share the
        translated nodes between them.

    Returns
    -------
    casadi.SX or casadi.MX (or list of them)
        The type of the values in ``symbols`` (SX when all are SX).

    Raises
    ------
    InteropError
        An operation without CasADi translation, a free symbol without a value, a complex
        constant.

    Examples
    --------
    >>> import casadi, sympy as sp
    >>> q, w = sp.symbols("q w")
    >>> x = casadi.SX.sym("x", 2)
    >>> e = sympy_to_casadi(sp.sin(q) * w**2, {q: x[0], w: x[1]})
    >>> float(casadi.Function("f", [x], [e])([0.5, 2.0]))  # doctest: +ELLIPSIS
    1.917702...
    """
    import sympy as sp

    ca = require_casadi()
    table = _function_table(ca)
    defs = definitions or {}
    memo: dict = cache if cache is not None else {}

    def convert(expr: Any) -> Any:
        expr = sp.sympify(expr)
        if expr in memo:
            return memo[expr]
        stack: list[tuple[Any, bool]] = [(expr, False)]
        while stack:
            e, ready = stack.pop()
            if e in memo:
                continue
            if isinstance(e, sp.Symbol):
                if e in symbols:
                    memo[e] = symbols[e]
                elif e in defs:
                    d = sp.sympify(defs[e])
                    if ready:
                        memo[e] = memo[d]
                    else:
                        stack.append((e, True))
                        stack.append((d, False))
                else:
                    raise InteropError(f"the symbol {e.name!r} has no value: give it in `symbols` "
                                       f"(an input or parameter) or in `definitions`")
                continue
            if e is sp.true or e is sp.false:
                memo[e] = bool(e)
                continue
            if e.is_number and not isinstance(e, (sp.Piecewise, sp.Function)) or e.is_Number:
                memo[e] = _number(e)
                continue
            if isinstance(e, (sp.Derivative, sp.Integral)) or (
                    isinstance(e, sp.Function) and not isinstance(e, sp.Piecewise)
                    and type(e).__name__ not in table):
                raise InteropError(f"the SymPy operation {type(e).__name__!r} (in {str(e)[:80]}) has no "
                                   f"CasADi translation; supported: {', '.join(SUPPORTED_FUNCTIONS)}")
            if ready:
                memo[e] = _combine(e, [memo[a] for a in e.args], ca, table)
            else:
                stack.append((e, True))
                stack.extend((a, False) for a in e.args if a not in memo)
        return memo[expr]

    if isinstance(exprs, sp.MatrixBase):
        rows, cols = exprs.shape
        kind = _kind(symbols, ca)
        out = kind.zeros(rows, cols)
        for i in range(rows):
            for j in range(cols):
                if exprs[i, j] != 0:
                    out[i, j] = convert(exprs[i, j])
        return out
    if isinstance(exprs, (list, tuple)):
        return [sympy_to_casadi(e, symbols, definitions=defs, cache=memo) for e in exprs]
    return convert(exprs)


def _kind(symbols: Mapping[Any, Any], ca: Any) -> Any:
    for v in symbols.values():
        if isinstance(v, ca.MX):
            return ca.MX
    return ca.SX


def casadi_function(name: str, inputs: Sequence[tuple[str, Iterable[Any]]],
                    outputs: Sequence[tuple[str, Any]], *,
                    definitions: Mapping[Any, Any] | None = None) -> Any:
    """A ``casadi.Function`` (SX graph) from SymPy expressions.

    Parameters
    ----------
    name : str
    inputs : sequence of (name, symbols)
        Each input is a vector of the given SymPy symbols (in order), e.g.
        ``[("x", q), ("p", params)]``.
    outputs : sequence of (name, expression)
        SymPy expressions or matrices of the input symbols (and of ``definitions``).
    definitions : mapping, optional
        Intermediate symbols, as for [`sympy_to_casadi()`][nhcontrol.interop.sympy_to_casadi].

    Returns
    -------
    casadi.Function
        Named inputs and outputs (``f(x=..., p=...)`` works as well as positional calls).

    Examples
    --------
    >>> import sympy as sp
    >>> a, b = sp.symbols("a b")
    >>> f = casadi_function("f", [("v", [a, b])], [("y", sp.Matrix([a * b, sp.cos(a)]))])
    >>> [float(v) for v in f([2.0, 3.0]).full().ravel()]  # doctest: +ELLIPSIS
    [6.0, -0.41614...]
    """
    ca = require_casadi()
    mapping: dict = {}
    syms = []
    for iname, group in inputs:
        group = list(group)
        v = ca.SX.sym(iname, len(group))
        syms.append(v)
        for i, s in enumerate(group):
            if s in mapping:
                raise InteropError(f"the symbol {s} appears twice among the inputs of {name!r}")
            mapping[s] = v[i]
    memo: dict = {}
    outs = [sympy_to_casadi(e, mapping, definitions=definitions, cache=memo) for _, e in outputs]
    outs = [o if isinstance(o, ca.SX) else ca.SX(o) for o in outs]
    return ca.Function(name, syms, outs, [i for i, _ in inputs], [o for o, _ in outputs])
