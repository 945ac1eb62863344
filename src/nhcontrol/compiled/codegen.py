"""Python source generation for the kernels, two variants per function.

For every `FunctionSpec` two functions are written:

* ``<name>_s(x, ..., p)`` -- one point; the arguments are Python lists of floats, the code
  uses `math` (a domain error raises instead of producing NaN) and each output is built
  with one ``numpy.array(flat_list).reshape(shape)``;
* ``<name>_v(x, ..., p, N)`` -- ``N`` points; the arguments are 2-D arrays ``(N or 1, len)``,
  the code uses `numpy` and writes only the non-zero entries into preallocated zeros
  ``(N, rows*cols)`` (constants broadcast to ``N``).

The body of a function is the cone of expression-graph nodes its outputs need, printed in
definition order (the graph already shares every common subexpression of the derivation;
``sympy.cse`` has been applied to the user's expressions when they entered the graph).
"""

from __future__ import annotations

import json
from typing import Iterable

import sympy as sp
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from .._util.errors import ModelError
from ..modeling.graph import ExprGraph
from .derivatives import ARG_PREFIX, FunctionSpec

from ._layout import GENERATOR_VERSION  # noqa: E402,F401  (bumped whenever the generated code changes)


class _NamedMixin:
    names: dict

    def _print_Symbol(self, expr):  # noqa: N802 - sympy printer API
        return self.names[expr]

    _print_Dummy = _print_Symbol


class _ScalarPrinter(_NamedMixin, PythonCodePrinter):
    """``math``-module printer (fully qualified) with our symbol names."""


class _VectorPrinter(_NamedMixin, NumPyPrinter):
    """``numpy``-module printer (fully qualified) with our symbol names."""


_FUNCS = {sp.sin: "sin", sp.cos: "cos", sp.tan: "tan", sp.exp: "exp", sp.log: "log", sp.asin: "asin",
          sp.acos: "acos", sp.atan: "atan", sp.sinh: "sinh", sp.cosh: "cosh", sp.tanh: "tanh"}
_VFUNCS = {"asin": "arcsin", "acos": "arccos", "atan": "arctan"}


class FastPrinter:
    """Printer for the node expressions (sums, products, powers, elementary functions).

    Much faster than SymPy's printers on the many short expressions of the graph; anything
    unusual is delegated to the SymPy printer ``fallback``.  Scalar mode uses `math`
    (``math.pow`` for non-integer powers, so a negative base raises instead of silently
    producing a complex number), vector mode `numpy`.
    """

    def __init__(self, names: dict, vector: bool, fallback, subst: dict | None = None) -> None:
        self.names = names
        self.vector = vector
        self.mod = "numpy" if vector else "math"
        self.fallback = fallback
        #: subexpression -> name of a local that already holds its value (common subexpressions)
        self.subst: dict = {} if subst is None else subst

    def __call__(self, e: sp.Expr) -> str:
        return self.p(e)

    def _signed(self, e: sp.Expr, sub: bool = True) -> tuple[bool, str]:
        """``(negative, text of |e|)`` so that sums print ``a - b*c`` instead of ``a + (-1.0)*b*c``.

        ``sub=False``: do not replace ``e`` itself by a temporary (factors of a product).
        """
        name = self.subst.get(e) if sub else None
        if name is not None:
            return False, name
        if e.is_Mul:
            coeff = sp.S.One
            rest = []
            for a in e.args:
                if a.is_Number:
                    coeff = coeff * a
                else:
                    rest.append(a)
            neg = bool(coeff < 0)
            c = -coeff if neg else coeff
            # a product inside a product prints without parentheses (left-to-right over all
            # factors), so it is never replaced by a temporary: that would regroup the rounding
            parts = [self.p(a, not a.is_Mul) for a in rest]
            if c != 1 or not parts:
                parts.insert(0, self.p(c))
            return neg, "*".join(parts)
        if e.is_Number and e < 0:
            return True, self.p(-e)
        return False, self.p(e)

    # ---- leaves: the literals are the only part of a leaf a target language prints its own way
    def _integer(self, v: int) -> str:
        return f"{v}.0" if v >= 0 else f"({v}.0)"

    def _rational(self, e: sp.Rational) -> str:
        return f"({e.p}/{e.q})"

    def _float(self, v: float) -> str:
        return repr(v) if v >= 0 else f"({v!r})"

    def _pi(self) -> str:
        return f"{self.mod}.pi"

    def _leaf(self, e: sp.Expr, sub: bool) -> str | None:
        """The text of a symbol, of a subexpression held in a temporary (``sub``) or of a
        number; None for any other expression."""
        if e.is_Symbol:
            return self.names[e]
        name = self.subst.get(e) if sub else None
        if name is not None:
            return name
        if e.is_Integer:
            return self._integer(int(e))
        if e.is_Rational:
            return self._rational(e)
        if e.is_Float:
            return self._float(float(e))
        if e is sp.pi:
            return self._pi()
        return None

    def p(self, e: sp.Expr, sub: bool = True) -> str:
        leaf = self._leaf(e, sub)
        if leaf is not None:
            return leaf
        if e.is_Add:
            terms = [self._signed(a) for a in e.args]
            if terms[0][0] and not terms[1][0]:
                # -a + b + ... printed as b - a + ...: the same IEEE sum (addition commutes,
                # negation is exact), one unary minus less
                terms[0], terms[1] = terms[1], terms[0]
            out = [("-" if terms[0][0] else "") + terms[0][1]]
            out += [(" - " if neg else " + ") + body for neg, body in terms[1:]]
            return "(" + "".join(out) + ")"
        if e.is_Mul:
            neg, body = self._signed(e, False)
            return f"(-{body})" if neg else body
        if e.is_Pow:
            b, x = e.args
            pb = self.p(b)
            if x.is_Integer:
                k = int(x)
                if k == 2:
                    return f"({pb}*{pb})" if b.is_Symbol else f"({pb})**2"
                return f"({pb})**({k})"
            if x == sp.S.Half:
                return f"{self.mod}.sqrt({pb})"
            if x == -sp.S.Half:
                return f"(1.0/{self.mod}.sqrt({pb}))"
            if self.vector:
                return f"numpy.power({pb}, {self.p(x)})"
            return f"math.pow({pb}, {self.p(x)})"
        f = _FUNCS.get(type(e))
        if f is not None:
            name = _VFUNCS.get(f, f) if self.vector else f
            return f"{self.mod}.{name}({self.p(e.args[0])})"
        if isinstance(e, sp.Abs):
            return f"{'numpy.abs' if self.vector else 'abs'}({self.p(e.args[0])})"
        if isinstance(e, sp.atan2):
            return f"{self.mod}.{'arctan2' if self.vector else 'atan2'}({self.p(e.args[0])}, {self.p(e.args[1])})"
        if isinstance(e, sp.Piecewise):
            return self.piecewise(e)
        try:
            return "(" + self.fallback.doprint(e) + ")"
        except Exception as exc:  # sympy printers raise PrintMethodNotImplementedError, TypeError, ...
            raise ModelError(f"the code generator cannot print {_short(e)} ({type(exc).__name__}); it "
                             f"comes from the model or its derivatives (the linearization needs exact "
                             f"derivatives: a non-smooth function such as sign or Abs, or an unevaluated "
                             f"Derivative, has none that can be printed). Replace it by a smooth function, "
                             f"e.g. tanh(v/eps) for sign(v) or sqrt(v**2 + eps**2) for Abs(v)") from exc

    # ---- Piecewise: only the active branch is evaluated (one point), see `_operands`
    _RELOPS = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}

    def condition(self, c) -> str:
        """Text of a Boolean condition (relations of expressions, And, Or, Not, True, False)."""
        if c is sp.true:
            return self._true()
        if c is sp.false:
            return self._false()
        if isinstance(c, sp.core.relational.Relational) and c.rel_op in self._RELOPS:
            return f"({self.p(c.lhs)} {self._RELOPS[c.rel_op]} {self.p(c.rhs)})"
        if isinstance(c, (sp.And, sp.Or)):
            return self._junction(isinstance(c, sp.And), [self.condition(a) for a in c.args])
        if isinstance(c, sp.Not):
            return self._not(self.condition(c.args[0]))
        raise ModelError(f"the code generator cannot print the condition {_short(c)} of a Piecewise "
                         f"expression; use relations (<, <=, >, >=) joined by And, Or, Not")

    def _true(self) -> str:
        return "True"

    def _false(self) -> str:
        return "False"

    def _junction(self, conj: bool, parts: list[str]) -> str:
        if self.vector:
            f = "numpy.logical_and" if conj else "numpy.logical_or"
            out = parts[0]
            for q in parts[1:]:
                out = f"{f}({out}, {q})"
            return out
        return "(" + (" and " if conj else " or ").join(parts) + ")"

    def _not(self, q: str) -> str:
        return f"numpy.logical_not({q})" if self.vector else f"(not {q})"

    def _nan(self) -> str:
        return f"{self.mod}.nan"

    def _select(self, cond: str, a: str, b: str) -> str:
        if self.vector:   # every branch is evaluated (under numpy.errstate), the active one kept
            return f"numpy.where({cond}, {a}, {b})"
        return f"({a} if {cond} else {b})"

    def piecewise(self, e: sp.Piecewise) -> str:
        """``(a if c1 else (b if c2 else ...))``: branches after the first true condition are not
        evaluated; no true condition gives NaN."""
        out = None
        for val, cond in reversed(e.args):
            if cond is sp.true:
                out = self.p(val)
                continue
            out = self._select(self.condition(cond), self.p(val), self._nan() if out is None else out)
        return self._nan() if out is None else out


def _short(e: sp.Expr, limit: int = 160) -> str:
    text = str(e)
    return text if len(text) <= limit else text[:limit] + "..."


def _printers(names: dict) -> tuple[PythonCodePrinter, NumPyPrinter]:
    settings = {"fully_qualified_modules": True, "standard": "python3", "order": "none"}
    sp_, vp = _ScalarPrinter(settings), _VectorPrinter(settings)
    sp_.names = names
    vp.names = names
    return FastPrinter(names, False, sp_), FastPrinter(names, True, vp)


def symbol_names(graph: ExprGraph, symbols: dict[str, list[sp.Symbol]]) -> tuple[dict, dict]:
    """Names for arguments (``X0``, ``XD0``, ...) and nodes (``w<k>``); arg symbol -> group."""
    names: dict = {}
    group_of: dict = {}
    for grp, syms in symbols.items():
        for i, s in enumerate(syms):
            names[s] = f"{ARG_PREFIX[grp]}{i}"
            group_of[s] = grp
    for w, k in graph.index.items():
        names[w] = f"w{k}"
    return names, group_of


def _operands(e: sp.Expr) -> list[sp.Expr]:
    """The subtrees of ``e`` that may be replaced by temporaries (non-atomic arguments; the
    arguments of a product are looked through to their own factors, see `FastPrinter`)."""
    out: list = []
    if isinstance(e, sp.Piecewise):
        return out      # a branch is evaluated only under its condition: never hoisted
    stack = list(reversed(e.args))
    while stack:
        a = stack.pop()
        if a.is_Atom:
            continue
        if e.is_Mul and a.is_Mul:
            stack.extend(reversed(a.args))
        else:
            out.append(a)
    return out


def _subtree_counts(exprs: Iterable[sp.Expr]) -> dict:
    """Occurrences of every replaceable subtree in ``exprs`` (a repeated subtree is not descended again)."""
    counts: dict = {}
    for e in exprs:
        stack = [e]
        while stack:
            a = stack.pop()
            c = counts.get(a, 0) + 1
            counts[a] = c
            if c == 1:
                stack.extend(_operands(a))
    return counts



class FunctionPlan:
    """What one generated function computes, independent of the target language.

    Attributes
    ----------
    zero_fill : list of sympy.Symbol
        Arguments the cone needs but the function does not take (``ẋ`` of ``B(x)``): 0.
    ops : list of (name, expr, avail_key, memo_node)
        Assignments in order.  ``expr`` is printed with the substitutions made available
        by the earlier assignments (``avail_key`` of an op is added *after* it is printed);
        ``memo_node`` is the node whose printed line does not depend on any substitution
        (so it may be shared across functions), else None.
    entries : list of (output index, flat index, expr)
        The non-zero output entries (printed with all substitutions available).
    """

    __slots__ = ("zero_fill", "ops", "entries")

    def __init__(self, zero_fill: list, ops: list, entries: list) -> None:
        self.zero_fill = zero_fill
        self.ops = ops
        self.entries = entries

    def replay(self):
        """Yield ``(name, expr, memo_node, avail)`` in order, ``avail`` the substitutions to print with."""
        avail: dict = {}
        for name, expr, key, memo in self.ops:
            yield name, expr, memo, avail
            if key is not None:
                avail[key] = name


def plan_function(spec: FunctionSpec, graph: ExprGraph, names: dict, group_of: dict,
                  cse: bool = True) -> tuple[FunctionPlan, dict]:
    """The assignments of one function and the final substitutions (expr -> local name).

    Common subexpressions across the node definitions and outputs of the function: every
    repeated subtree (structurally equal, same argument order, so the printed arithmetic and
    its rounding are identical) is evaluated once into a local ``t<k>``; a subtree equal to
    the definition of an earlier node reuses that node.  ``cse=False``: no temporaries.
    """
    entries: list[tuple[int, int, sp.Expr]] = []   # (output index, flat index, expr)
    for oi, (_, mat, _) in enumerate(spec.outputs):
        for fi, e in enumerate(mat):
            if e != 0:
                entries.append((oi, fi, e))
    cone = graph.cone(e for _, _, e in entries)
    used_args: set = set()
    for e in [graph.defs[w] for w in cone] + [e for _, _, e in entries]:
        used_args |= {s for s in e.free_symbols if s in group_of}
    zero_fill = sorted((s for s in used_args if group_of[s] not in spec.args), key=lambda s: names[s])
    for s in zero_fill:
        if group_of[s] != "xd":  # pragma: no cover - internal consistency
            raise RuntimeError(f"internal: {spec.name} needs argument {names[s]} it does not take")
    counts = _subtree_counts([graph.defs[w] for w in cone] + [e for _, _, e in entries]) if cse else {}
    avail: dict = {}
    ops: list = []
    ntemp = 0

    def temp(e: sp.Expr) -> None:
        nonlocal ntemp
        name = f"t{ntemp}"
        ntemp += 1
        ops.append((name, e, e, None))
        avail[e] = name

    def emit_inside(e: sp.Expr) -> bool:
        """Emit the temporaries of the repeated subtrees of ``e``'s arguments; True if any exist."""
        found = False
        stack = [(a, False) for a in reversed(_operands(e))]
        while stack:
            a, done = stack.pop()
            if a in avail:
                found = True
                continue
            if not done:
                stack.append((a, True))
                stack.extend((b, False) for b in reversed(_operands(a)))
                continue
            if counts.get(a, 0) > 1:
                temp(a)
                found = True
        return found

    for w in cone:
        d = graph.defs[w]
        if d in avail:
            ops.append((names[w], d, None, None))   # prints as the local that holds d
            continue
        memo = None if emit_inside(d) else w        # printed with temporaries: specific to this function
        key = d if counts.get(d, 0) > 1 and not d.is_Atom else None
        ops.append((names[w], d, key, memo))
        if key is not None:
            avail[d] = names[w]
    for _, _, e in entries:
        if e.is_Atom or e in avail:
            continue
        emit_inside(e)
        if counts.get(e, 0) > 1:
            temp(e)
    return FunctionPlan(zero_fill, ops, entries), avail


def cached_plan(plans: dict | None, spec: FunctionSpec, graph: ExprGraph, names: dict, group_of: dict,
                cse: bool) -> tuple[FunctionPlan, dict]:
    """`plan_function`, memoised in ``plans`` (shared by the Python and the C printer of one build)."""
    if plans is None:
        return plan_function(spec, graph, names, group_of, cse)
    key = (spec.name, cse)
    if key not in plans:
        plans[key] = plan_function(spec, graph, names, group_of, cse)
    return plans[key]


def generate_function(spec: FunctionSpec, graph: ExprGraph, names: dict, group_of: dict,
                      sizes: dict[str, int], printed: dict | None = None, cse: bool = True,
                      plans: dict | None = None) -> str:
    """Source of the scalar and vector variants of one function (see module docstring).

    ``printed`` memoises the printed node lines across functions (node -> (scalar, vector));
    only lines that use no temporary of the function are memoised.  ``cse=False`` prints
    every node definition as it is (no temporaries; same values bit for bit, more operations).
    """
    from .._util.names import name_problem

    for label in (spec.name, *spec.args):
        if name_problem(label):          # defence in depth: only identifiers become Python names
            raise ValueError(f"generated function {spec.name!r}: {label!r} cannot become a Python "
                             f"name ({name_problem(label)})")
    sprint, vprint = _printers(names)
    printed = {} if printed is None else printed
    plan, avail_final = cached_plan(plans, spec, graph, names, group_of, cse)
    entries = plan.entries

    args = ", ".join(spec.args)
    lines_s = [f"def {spec.name}_s({args}):"]
    lines_v = [f"def {spec.name}_v({args}, N):"]
    for a in spec.args:
        if sizes[a]:
            lines_s.append(f"    {', '.join(f'{ARG_PREFIX[a]}{i}' for i in range(sizes[a]))}, = {a}")
            lines_v += [f"    {ARG_PREFIX[a]}{i} = {a}[:, {i}]" for i in range(sizes[a])]
    for s in plan.zero_fill:  # B(x) is exact at any ẋ (constraints linear in ẋ): evaluate nodes at ẋ = 0
        lines_s.append(f"    {names[s]} = 0.0")
        lines_v.append(f"    {names[s]} = 0.0")
    for name, expr, memo, avail in plan.replay():
        sprint.subst = vprint.subst = avail
        if memo is not None:
            if memo not in printed:
                printed[memo] = (f"    {name} = {sprint(expr)}", f"    {name} = {vprint(expr)}")
            ls, lv = printed[memo]
        else:
            ls, lv = f"    {name} = {sprint(expr)}", f"    {name} = {vprint(expr)}"
        lines_s.append(ls)
        lines_v.append(lv)
    sprint.subst = vprint.subst = avail_final

    per_out: dict[int, dict[int, sp.Expr]] = {oi: {} for oi in range(len(spec.outputs))}
    for oi, fi, e in entries:
        per_out[oi][fi] = e
    # scalar variant: all outputs are views of one flat buffer, filled by one indexed
    # assignment of the non-zero entries and then made read-only (so the views are read-only
    # and cannot be made writeable); an output equal to a block of an earlier one (Cx and B
    # are blocks of D) is a view of that block
    rets = []
    out_s: list[str] = []
    flat: list[str] = []          # printed entries of the buffer (zeros included)
    starts: list[tuple[int, list[str]]] = []
    for oi, (oname, mat, shape) in enumerate(spec.outputs):
        size = mat.shape[0] * mat.shape[1]
        shp = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        vshp = "(N, " + ", ".join(str(s) for s in shape) + ")"
        var = f"o_{oname}"
        rets.append(var)
        items = [sprint(per_out[oi][fi]) if fi in per_out[oi] else "0.0" for fi in range(size)]
        at = _find_block(starts, items) if size else 0
        if size == 0 or not per_out[oi]:
            lines_v.append(f"    {var} = _zeros({vshp})")
        if at is None:
            at = len(flat)
            flat.extend(items)
            starts.append((at, items))
        out_s.append(f"    {var} = _o[{at}:{at + size}].reshape({shp})")
        if size == 0 or not per_out[oi]:
            continue
        lines_v.append(f"    {var} = _zeros((N, {size}))")
        for fi, e in per_out[oi].items():
            lines_v.append(f"    {var}[:, {fi}] = {vprint(e)}")
        lines_v.append(f"    {var} = {var}.reshape({vshp})")
    consts = ""
    nz = [i for i, it in enumerate(flat) if it != "0.0"]
    if flat and len(nz) == len(flat):
        lines_s.append(f"    _o = _array([{', '.join(flat)}], dtype=_f64)")
    else:
        lines_s.append(f"    _o = _zeros({len(flat)})")
        if nz:
            idx = f"_NZ_{spec.name}"
            consts = f"{idx} = numpy.array([{', '.join(map(str, nz))}], dtype=numpy.intp)\n\n\n"
            lines_s.append(f"    _o[{idx}] = ({', '.join(flat[i] for i in nz)},)")
    lines_s.append("    _o.flags.writeable = False")
    lines_s += out_s
    lines_s.append(f"    return ({', '.join(rets)},)")
    lines_v.append(f"    return ({', '.join(rets)},)")
    return consts + "\n".join(lines_s) + "\n\n\n" + "\n".join(lines_v) + "\n"


def _find_block(blocks: list[tuple[int, list[str]]], items: list[str]) -> int | None:
    """Flat offset of ``items`` as a contiguous block of an earlier output, or None."""
    k = len(items)
    for start, prev in blocks:
        for off in range(len(prev) - k + 1):
            if prev[off] == items[0] and prev[off:off + k] == items:
                return start + off
    return None


def generate_module(specs: Iterable[FunctionSpec], graph: ExprGraph, symbols: dict[str, list[sp.Symbol]],
                    meta: dict, cse: bool = True, plans: dict | None = None) -> str:
    """Source of a complete kernel module (imports, ``META`` and all functions).

    ``cse``: evaluate repeated subexpressions once (see `generate_function()`).
    """
    from .._util.names import source_text

    names, group_of = symbol_names(graph, symbols)
    sizes = {g: len(s) for g, s in symbols.items()}
    head = [
        f'"""Generated by nhcontrol.compiled ({GENERATOR_VERSION}) for model \'{source_text(meta["name"])}\'; do not edit."""',
        "import json",
        "import math",
        "import numpy",
        "_array = numpy.array",
        "_zeros = numpy.zeros",
        "_f64 = numpy.float64",
        f"META = json.loads({json.dumps(json.dumps(meta, sort_keys=True))})",
        "",
        "",
    ]
    printed: dict = {}
    body = [generate_function(spec, graph, names, group_of, sizes, printed, cse, plans) for spec in specs]
    return "\n".join(head) + "\n\n".join(body)


__all__ = ["generate_function", "generate_module", "GENERATOR_VERSION", "symbol_names"]
