"""A small expression graph with exact forward-mode symbolic differentiation.

Deriving the Newton--Euler equations of a model such as the bicycle benchmark as plain
SymPy trees produces generalized forces of tens of thousands of operations, and their
partial derivatives (``∂Q/∂x``, ``∂Qd/∂x``, ...) by ``Expr.diff`` take minutes.  Here every
intermediate quantity (entries of ``R``, ``J``, ``G̅``, ``M``, ...) is a *node*: a fresh
symbol ``w`` with a short defining expression in the arguments (``x, ẋ, u, p``) and
earlier nodes.  The total derivative of an expression is obtained by the chain rule,

$$
\\frac{d e}{d z} = \\frac{\\partial e}{\\partial z}
    + \\sum_{w} \\frac{\\partial e}{\\partial w} \\frac{d w}{d z},
$$

where ``dw/dz`` is itself a memoised node (only for nodes that depend on ``z``).  All
expressions stay short, the derivatives are exact (no finite differences), and the
code generator prints the nodes in definition order.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import sympy as sp


def _add(terms: list) -> sp.Expr:
    """Unevaluated sum (skips SymPy's canonicalisation, the dominant cost); 0 and 1 term cases folded."""
    if not terms:
        return sp.S.Zero
    if len(terms) == 1:
        return terms[0]
    return sp.Add(*terms, evaluate=False)


def _mul(factors: tuple, extra: sp.Expr) -> sp.Expr:
    """Unevaluated product of ``factors`` and ``extra`` with ones dropped (a zero factor gives 0)."""
    fs = [f for f in (*factors, extra) if f is not sp.S.One]
    if any(f is sp.S.Zero for f in fs):
        return sp.S.Zero
    if not fs:
        return sp.S.One
    if len(fs) == 1:
        return fs[0]
    return sp.Mul(*fs, evaluate=False)


class Direction:
    """A directional derivative ``Σ_s c_s ∂/∂s`` over arguments (e.g. ``d/dt`` along ``ẋ``).

    Used as the ``z`` of `ExprGraph.diff()`: with ``Direction({x_i: ẋ_i})`` the result
    is ``∂e/∂x ẋ`` in one pass instead of ``n`` partial derivatives (``J̇ ẋ``, ``Ġ̅ ẋ``,
    ``Qd`` of Eq. (2.117)).
    """

    __slots__ = ("name", "coeffs", "support")

    def __init__(self, name: str, coeffs: dict) -> None:
        self.name = name
        self.coeffs = {k: sp.sympify(v) for k, v in coeffs.items() if v != 0}
        self.support = frozenset(self.coeffs)

    def __repr__(self) -> str:
        return f"Direction({self.name!r})"


class ExprGraph:
    """Nodes ``w_k = f_k(args, w_<k)`` with memoised exact total derivatives.

    Parameters
    ----------
    args : iterable of sympy.Symbol
        The independent symbols (coordinates, velocities, inputs, parameters, auxiliary
        vectors).  Any other free symbol of a node expression must be a node.
    """

    def __repr__(self) -> str:
        return f"ExprGraph({len(getattr(self, 'nodes', ()) or ())} nodes)"

    def __init__(self, args: Iterable[sp.Symbol]) -> None:
        self.args: set[sp.Symbol] = set(args)
        self.defs: dict[sp.Symbol, sp.Expr] = {}
        self.index: dict[sp.Symbol, int] = {}
        self.deps: dict[sp.Symbol, frozenset] = {}
        self.nodes_in: dict[sp.Symbol, tuple[sp.Symbol, ...]] = {}
        self._d: dict[tuple[sp.Symbol, sp.Symbol], sp.Expr] = {}
        self._expanded: dict[sp.Symbol, sp.Expr] = {}
        self._atom_nodes: dict[sp.Expr, sp.Symbol] = {}
        self._origin: dict[sp.Symbol, tuple[sp.Symbol, "Direction"]] = {}

    # ------------------------------------------------------------------ building
    def add_args(self, args: Iterable[sp.Symbol]) -> None:
        """Declare more independent symbols (e.g. auxiliary vectors ``a``, ``λ``, ``v``)."""
        self.args.update(args)

    def _new_symbol(self) -> sp.Dummy:
        return sp.Dummy(f"w{len(self.defs)}")

    def define(self, expr: sp.Expr) -> sp.Expr:
        """Return a node for ``expr`` (atoms -- numbers, symbols -- are returned unchanged)."""
        expr = sp.sympify(expr)
        if expr.is_Atom:
            return expr
        return self._register(self._new_symbol(), expr)

    def _register(self, sym: sp.Symbol, expr: sp.Expr) -> sp.Symbol:
        free = expr.free_symbols
        # in definition order: the iteration order of a set of symbols depends on the hash seed,
        # and the derivatives create nodes while walking these tuples (reproducible numbering)
        nodes = tuple(sorted((s for s in free if s in self.defs), key=self.index.__getitem__))
        deps = set(s for s in free if s in self.args)
        for w in nodes:
            deps |= self.deps[w]
        unknown = free - self.args - set(nodes)
        if unknown:
            raise ValueError(f"internal: expression node uses undeclared symbols {sorted(map(str, unknown))}")
        self.defs[sym] = expr
        self.index[sym] = len(self.index)
        self.deps[sym] = frozenset(deps)
        self.nodes_in[sym] = nodes
        return sym

    def ingest(self, exprs: Sequence[sp.Expr]) -> list[sp.Expr]:
        """Turn user expressions (trees) into short node expressions through ``sympy.cse``.

        Returns
        -------
        list of sympy expressions
            The reduced expressions (in nodes and arguments), same order as ``exprs``.
        """
        exprs = [sp.sympify(e) for e in exprs]
        if not exprs:
            return []
        # a Piecewise is one node, its branches stay inside it: a subexpression of a branch
        # hoisted into a node of its own would be evaluated outside its condition (the
        # 1/sqrt(dp) of a turbulent flow at dp = 0)
        pieces = set()
        for e in exprs:
            pieces |= e.atoms(sp.Piecewise)
        if pieces:
            outer = [f for f in pieces if not any(g is not f and g.has(f) for g in pieces)]
            pw = {f: self._register(sp.Dummy("pw"), f)
                  for f in sorted(outer, key=sp.default_sort_key) if f.free_symbols <= self.args}
            exprs = [e.xreplace(pw) for e in exprs]
        # one node per elementary function of the arguments for the whole model (sin(q), ...)
        atoms = set()
        for e in exprs:
            atoms |= {f for f in e.atoms(sp.Function) if f.free_symbols <= self.args}
        if atoms:
            for f in sorted(atoms - set(self._atom_nodes), key=sp.default_sort_key):
                self._atom_nodes[f] = self._register(sp.Dummy("f"), f)
            exprs = [e.xreplace({f: self._atom_nodes[f] for f in atoms}) for e in exprs]
        symbols = (sp.Dummy(f"c{k}") for k in iter(int, 1))
        repl, reduced = sp.cse(exprs, symbols=symbols, optimizations=None, order="none")
        for s, e in repl:
            self._register(s, e)
        return [self.define(r) if not r.is_Atom else r for r in reduced]

    @staticmethod
    def _hits(deps: frozenset, z) -> bool:
        if isinstance(z, Direction):
            return not deps.isdisjoint(z.support)
        return z in deps

    def depends(self, expr: sp.Expr, z) -> bool:
        """Whether ``expr`` (in nodes and arguments) depends on the argument (or direction) ``z``."""
        for s in sp.sympify(expr).free_symbols:
            if s in self.deps:
                if self._hits(self.deps[s], z):
                    return True
            elif (s in z.support) if isinstance(z, Direction) else (s == z):
                return True
        return False

    def deps_of(self, expr: sp.Expr) -> frozenset:
        out: set = set()
        for s in sp.sympify(expr).free_symbols:
            if s in self.deps:
                out |= self.deps[s]
            elif s in self.args:
                out.add(s)
        return frozenset(out)

    # ------------------------------------------------------------------ derivatives
    def _partial_chain(self, expr: sp.Expr, z: sp.Symbol) -> sp.Expr:
        """Total derivative of one expression, assuming the node derivatives it needs exist.

        Structural recursion (sum, product, power and one-argument function rules) with the
        leaves ``z`` (derivative 1), other arguments (0) and nodes (their memoised
        derivative); anything else falls back to SymPy's ``diff`` plus the chain rule.
        """
        if expr.is_Symbol:
            if expr in self.defs:
                return self._d[(expr, z)] if self._hits(self.deps[expr], z) else sp.S.Zero
            if isinstance(z, Direction):
                return z.coeffs.get(expr, sp.S.Zero)
            return sp.S.One if expr == z else sp.S.Zero
        if expr.is_Atom:
            return sp.S.Zero
        if expr.is_Add:
            terms = [t for t in (self._partial_chain(a, z) for a in expr.args) if t is not sp.S.Zero]
            return _add(terms)
        if expr.is_Mul:
            args = expr.args
            terms = []
            for i, a in enumerate(args):
                da = self._partial_chain(a, z)
                if da is not sp.S.Zero:
                    terms.append(_mul(args[:i] + args[i + 1:], da))
            return _add(terms)
        if expr.is_Pow:
            b, e = expr.args
            db = self._partial_chain(b, z)
            de = self._partial_chain(e, z) if not e.is_Number else sp.S.Zero
            terms = []
            if db is not sp.S.Zero:
                if e.is_Number:
                    em1 = e - 1
                    pw = b if em1 == 1 else (sp.S.One if em1 == 0 else sp.Pow(b, em1, evaluate=False))
                    terms.append(_mul((e, pw), db))
                else:
                    terms.append(_mul((e, sp.Pow(b, e - 1, evaluate=False)), db))
            if de is not sp.S.Zero:
                terms.append(_mul((expr, sp.log(b)), de))
            return _add(terms)
        if isinstance(expr, sp.Function) and len(expr.args) == 1:
            da = self._partial_chain(expr.args[0], z)
            if da is sp.S.Zero:
                return sp.S.Zero
            try:
                return _mul((expr.fdiff(1),), da)
            except (sp.core.function.ArgumentIndexError, NotImplementedError, AttributeError):
                pass
        # general fallback: explicit partial plus chain rule through the nodes it contains
        free = expr.free_symbols
        if isinstance(z, Direction):
            res = sum((c * expr.diff(a) for a, c in z.coeffs.items() if a in free), sp.S.Zero)
        else:
            res = expr.diff(z) if z in free else sp.S.Zero
        for w in sorted((w for w in free if w in self.defs), key=self.index.__getitem__):
            if self._hits(self.deps[w], z):
                dw = self._d[(w, z)]
                if dw != 0:
                    res += expr.diff(w) * dw
        return res

    def _swap_rule(self, w: sp.Symbol, z) -> tuple | None:
        """For ``w = D_d w0`` (a directional derivative along ``d = Σ c_i ∂/∂a_i``) and ``z`` one
        of the coefficient symbols ``c_k``: ``∂w/∂c_k = ∂w0/∂a_k + D_d(∂w0/∂c_k)`` (partial
        derivatives commute), which reuses the partials of ``w0`` instead of differentiating
        the whole directional graph again.  Returns ``(w0, d, a_k)`` when it applies."""
        if isinstance(z, Direction) or w not in self._origin:
            return None
        w0, d = self._origin[w]
        for a, c in d.coeffs.items():
            if c == z:
                return w0, d, a
        return w0, d, None    # z is not a coefficient: ∂(D_d w0)/∂z = D_d(∂w0/∂z)

    def _ensure(self, roots: Iterable[sp.Symbol], z: sp.Symbol) -> None:
        """Create ``dw/dz`` for every node in the cone of ``roots`` that depends on ``z``."""
        todo = []
        stack = [w for w in roots if w in self.defs and self._hits(self.deps[w], z) and (w, z) not in self._d]
        seen = set(stack)
        swap: dict = {}
        while stack:
            w = stack.pop()
            rule = self._swap_rule(w, z)
            if rule is not None:
                swap[w] = rule
                continue
            todo.append(w)
            for c in self.nodes_in[w]:
                if c not in seen and self._hits(self.deps[c], z) and (c, z) not in self._d:
                    seen.add(c)
                    stack.append(c)
        for w, (w0, d, a) in swap.items():
            if (w, z) not in self._d:
                first = self.diff(w0, a) if a is not None else sp.S.Zero
                self._d[(w, z)] = self.define(_add([t for t in (first, self.diff(self.diff(w0, z), d))
                                                    if t is not sp.S.Zero]))
        for w in sorted(todo, key=self.index.__getitem__):
            dw = self.define(self._partial_chain(self.defs[w], z))
            self._d[(w, z)] = dw
            if isinstance(z, Direction) and dw in self.defs and dw not in self._origin and \
                    all(c.is_Symbol and c in self.args and c not in z.support for c in z.coeffs.values()):
                self._origin[dw] = (w, z)

    def diff(self, expr: sp.Expr, z: sp.Symbol) -> sp.Expr:
        """Exact total derivative ``d expr / d z`` (an expression in nodes and arguments)."""
        expr = sp.sympify(expr)
        if not self.depends(expr, z):
            return sp.S.Zero
        self._ensure(sorted((s for s in expr.free_symbols if s in self.defs), key=self.index.__getitem__), z)
        return self._partial_chain(expr, z)

    def jacobian(self, exprs: Sequence[sp.Expr], zs: Sequence[sp.Symbol]) -> sp.Matrix:
        """``[d e_i / d z_j]`` as a Matrix (len(exprs), len(zs))."""
        rows = [[self.diff(e, z) for z in zs] for e in exprs]
        return sp.Matrix(len(exprs), len(zs), [v for r in rows for v in r])

    # ------------------------------------------------------------------ expansion
    def expand(self, expr: sp.Expr) -> sp.Expr:
        """Substitute all nodes: the explicit expression in the arguments only."""
        expr = sp.sympify(expr)
        nodes = [s for s in expr.free_symbols if s in self.defs]
        if not nodes:
            return expr
        # expand the cone in definition order (memoised)
        for w in self.cone(nodes):
            if w not in self._expanded:
                e = self.defs[w]
                self._expanded[w] = e.xreplace({c: self._expanded[c] for c in self.nodes_in[w]})
        return expr.xreplace({w: self._expanded[w] for w in nodes})

    def expand_matrix(self, mat: sp.MatrixBase) -> sp.ImmutableMatrix:
        return sp.ImmutableMatrix(mat.shape[0], mat.shape[1], [self.expand(e) for e in mat])

    # ------------------------------------------------------------------ code order
    def cone(self, exprs: Iterable[sp.Expr]) -> list[sp.Symbol]:
        """Nodes needed to evaluate ``exprs``, in definition order."""
        stack = []
        for e in exprs:
            stack.extend(s for s in sp.sympify(e).free_symbols if s in self.defs)
        cone = set(stack)
        while stack:
            w = stack.pop()
            for c in self.nodes_in[w]:
                if c not in cone:
                    cone.add(c)
                    stack.append(c)
        return sorted(cone, key=self.index.__getitem__)

    def __len__(self) -> int:
        return len(self.defs)


__all__ = ["ExprGraph", "Direction"]
