"""C source generation for the kernels: the same expression graph and the same assignments as
the Python kernels (`nhcontrol.compiled.codegen.plan_function`), printed as C99.

For every `FunctionSpec` ``f`` the library exports

* ``int nhc_f(const double *x, ..., const double *p, double *o)`` -- one point: ``o`` is the
  flat output buffer (zeros preset by the caller; only non-zero entries are written); the
  return value holds the floating-point exception flags raised during the evaluation
  (``1`` invalid operation, ``2`` division by zero, ``4`` overflow; ``8`` out of memory), so a
  domain error raises in Python like the ``math``-based Python kernel does;
* ``int nhc_f_n(long N, const double *x, long sx, ..., double *o)`` -- ``N`` points; the row
  stride of every argument is given (0 broadcasts one row to all points), ``o`` is ``(N, F)``;
* ``int nhc_f_b(...)`` -- for ``f`` in `SIMD_FUNCTIONS` only: the signature and the results
  (bit for bit) of ``nhc_f_n``, evaluated in blocks of `SIMD_BLOCK` points by chunk functions
  whose statements are loops over the block, vectorized by the compiler
  (`_Function.chunk_source`); ``int nhc_simd_ok(void)`` tells whether this processor runs
  them (the loader uses ``nhc_f_n`` otherwise).

The arithmetic is printed in exactly the order of the Python one-point kernel (left-to-right
sums and products, ``pow`` where Python calls ``float.__pow__``, the C library's ``sin``,
``sqrt``, ... where Python calls `math`), and the code is compiled without fast-math
and without floating-point contraction, so both kernels agree to the last bit (tested to
1e-15 relative).

The statements of a function are split into chunk functions of about
`CHUNK_STATEMENTS` statements (one large function makes the optimiser superlinear);
values used by a later chunk live in a work array, the others are locals.  Chunks are
grouped into translation units of about `UNIT_STATEMENTS` statements that are
compiled in parallel; the entry points and the JSON layout (``nhc_layout``) form one more unit,
and the blocked chunks (`SIMD_FUNCTIONS`) units of their own (a small model without blocked
chunks, whose chunks fit in one unit, is compiled as a single unit; with them, the three
units of the ball-plate compile in 0.18 s on two cores against 0.27 s as one).
"""

from __future__ import annotations

import json
import math
import re
from typing import Callable, Iterable

import sympy as sp

from .._util.errors import ModelError
from ..modeling.graph import ExprGraph
from .codegen import FastPrinter, _find_block, cached_plan, symbol_names
from .derivatives import FunctionSpec

from ._ffi_tables import _jsonable, prebuilt_ffi_arguments  # noqa: F401  (re-exported)
from ._layout import C_GENERATOR_VERSION  # noqa: E402,F401  (part of the library's file name)
#: Statements per chunk function and per translation unit.
CHUNK_STATEMENTS = 150
UNIT_STATEMENTS = 1200
#: Functions that also get a blocked entry point ``nhc_<name>_b`` (see `_Function.chunk_source`).
SIMD_FUNCTIONS = ("linearization_terms",)
#: Points per block of the blocked entry points.
SIMD_BLOCK = 4
# a vector statement is + - * / of names, arguments and numbers; anything else goes lane by lane
_SCALAR = re.compile(r"[A-Za-z_]\w*\s*\(|[?<>=!&|]|NAN")
# the vector values of a printed statement (locals, work slots, arguments), for lane access
_LANE = re.compile(r"\b[wt]\d+\b|\b(?:W|x|xd|xdd|a|lam|v|u|p|ud)\[\d+\]")
#: Compiler settings of the blocked chunk functions: GCC on x86 compiles them for AVX2 (one
#: register holds the block's four points) at ``-Og`` (measured on the bicycle: 1.38 µs per
#: point against 1.30 at ``-O1``, for 57 % of its compile time); the floating-point semantics
#: do not change (no fast-math, no contraction).  The loader calls the blocked entry points only when
#: ``nhc_simd_ok()`` says the processor has AVX2.
_SIMD_PUSH = ("#if defined(NHC_HAVE_V)\n"
              "#if !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))\n"
              "#define NHC_SIMD 1\n#pragma GCC push_options\n#pragma GCC target(\"avx2\")\n"
              "#pragma GCC optimize(\"Og\")\n#endif\n")
_SIMD_POP = "#if defined(NHC_SIMD)\n#pragma GCC pop_options\n#endif\n#endif\n"
_SIMD_OK = """NHC_API int nhc_simd_ok(void)
{
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
    static int ok = -1;    /* asked once; a race only writes the same answer twice */
    if (ok < 0) {
        __builtin_cpu_init();
        ok = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return ok;
#else
    return 0;   /* the blocked entry points are plain C here: correct, not faster */
#endif
}"""

# the C library functions Python's math module calls for the same name (math.gamma, for
# instance, is CPython's own and has no counterpart here: such models keep the Python kernels)
_CFUNCS = {sp.sin: "sin", sp.cos: "cos", sp.tan: "tan", sp.exp: "exp", sp.log: "log", sp.asin: "asin",
           sp.acos: "acos", sp.atan: "atan", sp.sinh: "sinh", sp.cosh: "cosh", sp.tanh: "tanh",
           sp.asinh: "asinh", sp.acosh: "acosh", sp.atanh: "atanh", sp.erf: "erf", sp.erfc: "erfc"}
_IDENT = re.compile(r"\b[wt]\d+\b")


class CCodegenError(ModelError):
    """An expression of the model has no C translation here (the Python kernels are used)."""


def _cfloat(v: float) -> str:
    if not math.isfinite(v):
        raise CCodegenError(f"the constant {v!r} has no finite C literal")
    return repr(v) if v >= 0 else f"({v!r})"


class CPrinter(FastPrinter):
    """C99 printer of node expressions, operation for operation the Python scalar printer.

    Python evaluates ``(a)**k`` as ``pow(a, k)`` of the C library (``float.__pow__``), a
    Rational ``p/q`` as the correctly rounded quotient (printed here as that double), and
    `math` functions as the C library's; the printed text keeps the same association.
    """

    def __repr__(self) -> str:
        return "CPrinter()"

    def __init__(self, names: dict) -> None:
        super().__init__(names, False, None)

    def _integer(self, v: int) -> str:
        if abs(v) >= 2 ** 53:
            return _cfloat(float(v))
        return super()._integer(v)

    def _rational(self, e: sp.Rational) -> str:
        return _cfloat(e.p / e.q)  # Python's int/int true division: correctly rounded

    def _float(self, v: float) -> str:
        return _cfloat(v)

    def _pi(self) -> str:
        return repr(math.pi)

    def _true(self) -> str:
        return "1"

    def _false(self) -> str:
        return "0"

    def _junction(self, conj: bool, parts: list[str]) -> str:
        return "(" + (" && " if conj else " || ").join(parts) + ")"

    def _not(self, q: str) -> str:
        return f"(!{q})"

    def _nan(self) -> str:
        return "NAN"

    def _select(self, cond: str, a: str, b: str) -> str:
        return f"({cond} ? {a} : {b})"

    def p(self, e: sp.Expr, sub: bool = True) -> str:
        leaf = self._leaf(e, sub)
        if leaf is not None:
            return leaf
        if e.is_Add or e.is_Mul:
            return super().p(e, sub)
        if e.is_Pow:
            b, x = e.args
            pb = self.p(b)
            if x.is_Integer:
                k = int(x)
                if k == 2 and b.is_Symbol:
                    return f"({pb}*{pb})"
                return f"pow({pb}, {k}.0)"
            if x == sp.S.Half:
                return f"sqrt({pb})"
            if x == -sp.S.Half:
                return f"(1.0/sqrt({pb}))"
            return f"pow({pb}, {self.p(x)})"
        f = _CFUNCS.get(type(e))
        if f is not None:
            return f"{f}({self.p(e.args[0])})"
        if isinstance(e, sp.Abs):
            return f"fabs({self.p(e.args[0])})"
        if isinstance(e, sp.atan2):
            return f"atan2({self.p(e.args[0])}, {self.p(e.args[1])})"
        if isinstance(e, sp.Piecewise):
            return self.piecewise(e)
        raise CCodegenError(f"no C translation for {type(e).__name__} in {str(e)[:80]!r}")


_ARG_C = {"x": "x", "xd": "xd", "xdd": "xdd", "a": "a", "lam": "lam", "v": "v", "u": "u", "p": "p",
          "ud": "ud"}


def _signature(args: Iterable[str], const: bool = True, vector: bool = False) -> str:
    q = "const nhc_v *restrict " if vector else ("const double *restrict " if const else "double *")
    return ", ".join(f"{q}{_ARG_C[a]}" for a in args)


class _Function:
    """Printed statements of one function, chunked, plus its output layout."""

    def __init__(self, spec: FunctionSpec, graph: ExprGraph, names: dict, group_of: dict, sizes: dict,
                 cse: bool, plans: dict | None = None) -> None:
        from .._util.names import name_problem

        for label in (spec.name, *spec.args):
            if name_problem(label):      # defence in depth: only identifiers become C symbols
                raise CCodegenError(f"generated function {spec.name!r}: {label!r} cannot become a C "
                                    f"symbol ({name_problem(label)})")
        self.name = spec.name
        self.args = tuple(spec.args)
        self.sizes = {a: int(sizes[a]) for a in self.args}
        plan, avail_final = cached_plan(plans, spec, graph, names, group_of, cse)
        cnames = dict(names)
        for s, grp in group_of.items():
            cnames[s] = f"{_ARG_C[grp]}[{names[s][len(_prefix(names[s])):]}]"
        for s in plan.zero_fill:  # B(x) does not take ẋ: nodes evaluated at ẋ = 0 as in Python
            cnames[s] = "0.0"
        pr = CPrinter(cnames)
        stmts: list[tuple[str | None, str]] = []       # (defined name or None, expression or store)
        for name, expr, _, avail in plan.replay():
            pr.subst = avail
            stmts.append((name, pr(expr)))
        pr.subst = avail_final
        per_out: dict[int, dict[int, sp.Expr]] = {oi: {} for oi in range(len(spec.outputs))}
        for oi, fi, e in plan.entries:
            per_out[oi][fi] = e
        flat: list[str] = []
        starts: list[tuple[int, list[str]]] = []
        self.outputs: list[tuple[int, int, list[int]]] = []    # (offset, size, shape)
        for oi, (_, mat, shape) in enumerate(spec.outputs):
            size = mat.shape[0] * mat.shape[1]
            items = [pr(per_out[oi][fi]) if fi in per_out[oi] else "0.0" for fi in range(size)]
            at = _find_block(starts, items) if size else 0
            if at is None:
                at = len(flat)
                flat.extend(items)
                starts.append((at, items))
            self.outputs.append((at, size, [int(s) for s in shape]))
        self.size = len(flat)
        #: the flat indices the function writes (its structural non-zeros): every other entry of
        #: the output is zero whatever the arguments (the specialised Steps 1-7 and the blocked
        #: entry's copy-out rely on it)
        self.nonzero = [k for k, it in enumerate(flat) if it != "0.0"]
        stmts += [(None, f"o[{k}] = {flat[k]};") for k in self.nonzero]
        # chunks, and the names that cross a chunk boundary (work array slots)
        self.chunks = [stmts[i:i + CHUNK_STATEMENTS] for i in range(0, len(stmts), CHUNK_STATEMENTS)] or [[]]
        home: dict[str, int] = {}
        slots: dict[str, int] = {}
        for ci, chunk in enumerate(self.chunks):
            for name, text in chunk:
                for ident in _IDENT.findall(text):
                    if home[ident] != ci and ident not in slots:
                        slots[ident] = len(slots)
                if name is not None:
                    home[name] = ci
        self.slots = slots
        self.nwork = max(len(slots), 1)
        self.simd = spec.name in SIMD_FUNCTIONS

    def chunk_source(self, ci: int, vector: bool = False) -> str:
        """Chunk ``ci`` (``nhc_<name>_<ci>``), or with ``vector`` over a block of `SIMD_BLOCK`
        points (``nhc_<name>_<ci>_b``).

        The blocked chunk holds every value as a vector of the block's points (``nhc_v``, GCC's
        vector extension: one lane per point). The arguments arrive transposed (``x[i]``: entry
        ``i`` of the block's points), the work array holds one vector per slot, and ``o`` is the
        block's output (one vector per entry).  The statements keep their order and their text:
        a statement of ``+ - * /`` only is one vector statement (each lane the same IEEE
        operations, in the same order, as the one-point chunk); a statement with anything else
        (a C library call, a comparison, a conditional, a constant) is evaluated lane by lane
        from the same text.  So the results are the one-point results bit for bit (no fast-math,
        no contraction).
        """
        slots = self.slots
        local: set = set()

        def ref(m: re.Match) -> str:
            ident = m.group(0)
            return ident if ident in local else f"W[{slots[ident]}]"

        def value(text: str) -> str:
            """``text`` as a value of the chunk's type (lane by lane unless ``+ - * /`` only)."""
            if not vector or not (_SCALAR.search(text) or not _LANE.search(text)):
                return text
            return "(nhc_v){" + ", ".join(_LANE.sub(lambda m: f"{m.group(0)}[{j}]", text)
                                          for j in range(SIMD_BLOCK)) + "}"

        if vector:
            lines = [f"NHC_CHUNK void nhc_{self.name}_{ci}_b({_signature(self.args, vector=True)}, "
                     f"nhc_v *restrict W, nhc_v *restrict o)", "{"]
        else:
            lines = [f"NHC_CHUNK void nhc_{self.name}_{ci}({_signature(self.args)}, double *restrict W, "
                     f"double *restrict o)", "{"]
        kind = "nhc_v" if vector else "double"
        for name, text in self.chunks[ci]:
            body = _IDENT.sub(ref, text)
            if name is None:                                      # o[k] = ...;
                k, rest = body[2:].split("] = ", 1)
                lines.append(f"    o[{k}] = {value(rest.rstrip(';'))};")
                continue
            lines.append(f"    const {kind} {name} = {value(body)};")
            local.add(name)
            if name in slots:
                lines.append(f"    W[{slots[name]}] = {name};")
        lines.append("}")
        return "\n".join(lines)

    def soa_prototypes(self) -> list[str]:
        return [f"NHC_CHUNK void nhc_{self.name}_{ci}_b({_signature(self.args, vector=True)}, "
                f"nhc_v *restrict W, nhc_v *restrict o);" for ci in range(len(self.chunks))] if self.simd else []

    def block_entry_source(self) -> str:
        """``nhc_<name>_b``: the signature and results of ``nhc_<name>_n``, blocks of
        `SIMD_BLOCK` points through the blocked chunks, the remaining points one by one (all
        points one by one where the compiler has no vector extension)."""
        nsig = ", ".join(f"const double *{_ARG_C[a]}, long s_{_ARG_C[a]}" for a in self.args)
        bargs = ", ".join(f"B_{_ARG_C[a]}" for a in self.args)
        pcall = ", ".join(f"{_ARG_C[a]} + i*s_{_ARG_C[a]}" for a in self.args)
        decl = "\n".join(f"    nhc_v B_{_ARG_C[a]}[{max(n, 1)}];" for a, n in self.sizes.items())
        fill = "\n".join(
            f"        for (k = 0; k < {n}; k++) for (j = 0; j < NHC_B; j++) "
            f"B_{_ARG_C[a]}[k][j] = {_ARG_C[a]}[(i + j)*s_{_ARG_C[a]} + k];"
            for a, n in self.sizes.items() if n)
        bcalls = "\n".join(f"        nhc_{self.name}_{ci}_b({bargs}, V, O);" for ci in range(len(self.chunks)))
        nz = self.nonzero
        nzlist = ", ".join(str(k) for k in nz) or "0"
        pcalls = "\n".join(f"        nhc_{self.name}_{ci}({pcall}, W, o + i*{self.size});"
                            for ci in range(len(self.chunks)))
        return f"""NHC_API int nhc_{self.name}_b(long N, {nsig}, double *o)
{{
    long i = 0;
    double *W = (double *)malloc({self.nwork} * sizeof(double));
    if (W == NULL) return 8;
#if defined(NHC_HAVE_V)
    {{
    int j, k;
{decl}
    static const int nz[] = {{{nzlist}}};
    nhc_v *V = (nhc_v *)malloc({self.nwork} * sizeof(nhc_v));
    nhc_v *O = (nhc_v *)malloc({max(self.size, 1)} * sizeof(nhc_v));
    if (V == NULL || O == NULL) {{ free(V); free(O); free(W); return 8; }}
    (void)j; (void)k;
    /* the blocked chunks may be AVX2 code: on a processor without it every point goes one by
       one below (the same numbers), never an illegal instruction */
    for (; nhc_simd_ok() && i + NHC_B <= N; i += NHC_B) {{
{fill}
{bcalls}
        for (k = 0; k < {len(nz)}; k++) for (j = 0; j < NHC_B; j++) o[(i + j)*{self.size} + nz[k]] = O[nz[k]][j];
    }}
    free(V);
    free(O);
    }}
#endif
    for (; i < N; i++) {{
{pcalls}
    }}
    free(W);
    return 0;
}}"""

    def prototypes(self) -> list[str]:
        return [f"NHC_CHUNK void nhc_{self.name}_{ci}({_signature(self.args)}, double *restrict W, double *restrict o);"
                for ci in range(len(self.chunks))]

    def entries_source(self) -> tuple[str, str]:
        """The C of the one-point entry point ``nhc_<name>`` and of the N-point loop
        ``nhc_<name>_n``."""
        sig = _signature(self.args)
        call = ", ".join(_ARG_C[a] for a in self.args)
        calls = "\n".join(f"    nhc_{self.name}_{ci}({call}, W, o);" for ci in range(len(self.chunks)))
        nsig = ", ".join(f"const double *{_ARG_C[a]}, long s_{_ARG_C[a]}" for a in self.args)
        pcall = ", ".join(f"{_ARG_C[a]} + i*s_{_ARG_C[a]}" for a in self.args)
        pcalls = "\n".join(f"        nhc_{self.name}_{ci}({pcall}, W, o + i*{self.size});"
                           for ci in range(len(self.chunks)))
        checks = "\n".join(f"    for (k = 0; k < {n}; k++) if (!isfinite({_ARG_C[a]}[k])) return 16;"
                           for a, n in self.sizes.items() if n)
        return f"""NHC_API int nhc_{self.name}({sig}, double *o)
{{
    double *W;
    int flags, k;
{checks}
    (void)k;
    W = (double *)malloc({self.nwork} * sizeof(double));
    if (W == NULL) return 8;
    feclearexcept(FE_ALL_EXCEPT);
{calls}
    flags = fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW);
    free(W);
    return ((flags & FE_INVALID) ? 1 : 0) | ((flags & FE_DIVBYZERO) ? 2 : 0) | ((flags & FE_OVERFLOW) ? 4 : 0);
}}""", f"""NHC_API int nhc_{self.name}_n(long N, {nsig}, double *o)
{{
    long i;
    double *W = (double *)malloc({self.nwork} * sizeof(double));
    if (W == NULL) return 8;
    for (i = 0; i < N; i++) {{
{pcalls}
    }}
    free(W);
    return 0;
}}"""

    def cdefs(self) -> list[str]:
        sig = ", ".join("const double *" for _ in self.args)
        nsig = ", ".join("const double *, long" for _ in self.args)
        out = [f"int nhc_{self.name}({sig}, double *);", f"int nhc_{self.name}_n(long, {nsig}, double *);"]
        if self.simd:
            out.append(f"int nhc_{self.name}_b(long, {nsig}, double *);")
        return out

    def layout(self) -> dict:
        out = {"args": list(self.args), "size": self.size, "outputs": self.outputs,
               "nonzero": self.nonzero}
        if self.simd:
            out["block"] = SIMD_BLOCK
        return out


def _prefix(name: str) -> str:
    return name.rstrip("0123456789")


#: Compiler settings of the one-point entry points (argument checks, work array, floating-point
#: flags around the chunk calls; no arithmetic of the kernels): GCC compiles them at ``-O0``,
#: which spares a third of their unit's compile time (the ball-plate's: 172 ms of CPU at
#: ``-O1``, 137 ms so; medians of 15) for 5-7 ns more per call (of about 210 ns for
#: ``linearization_terms``). The N-point loops stay at ``-O1``: at ``-O0`` they made the stacked
#: evaluation of a small model 40 % slower. The chunks, the blocked entry points and every other
#: compiler keep their settings; the numbers do not change (the chunks do the arithmetic).
_ENTRY_PUSH = ("#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC push_options\n"
               "#pragma GCC optimize(\"O0\")\n#endif\n")
_ENTRY_POP = "\n#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC pop_options\n#endif\n"
_EXTERN_CHUNK = "#define NHC_CHUNK\n"
_STATIC_CHUNK = ("#if defined(_MSC_VER)\n#define NHC_CHUNK static __declspec(noinline)\n#else\n"
                 "#define NHC_CHUNK static __attribute__((noinline))\n#endif\n")
_HEAD = ("/* Generated by nhcontrol.compiled ({ver}); do not edit. */\n#include <math.h>\n"
         "#if defined(_MSC_VER)\n#define restrict __restrict\n#define NHC_API __declspec(dllexport)\n"
         "#else\n#define NHC_API\n#endif\n" + f"#define NHC_B {SIMD_BLOCK}\n"
         "#if defined(__GNUC__)\n#define NHC_HAVE_V 1\n"
         "typedef double nhc_v __attribute__((vector_size(NHC_B * sizeof(double)), aligned(8)));\n"
         "#endif\n" + _EXTERN_CHUNK)


def _c_units(specs: Iterable[FunctionSpec], graph: ExprGraph, symbols: dict, meta: dict,
             cse: bool = True, plans: dict | None = None) -> tuple[list[str], dict, str]:
    """`generate_c`'s units without ``nhc_layout``, its layout without cffi's tables, and the
    head every unit starts with."""
    names, group_of = symbol_names(graph, symbols)
    sizes = {g: len(s) for g, s in symbols.items()}
    funcs = [_Function(spec, graph, names, group_of, sizes, cse, plans) for spec in specs]
    head = _HEAD.format(ver=C_GENERATOR_VERSION)
    units: list[str] = []
    cur: list[str] = []
    count = 0
    for f in funcs:
        for ci, chunk in enumerate(f.chunks):
            cur.append(f.chunk_source(ci))
            count += len(chunk)
            if count >= UNIT_STATEMENTS:
                units.append(head + "\n\n".join(cur) + "\n")
                cur, count = [], 0
    if cur:
        units.append(head + "\n\n".join(cur) + "\n")
    # the blocked chunks (SIMD_FUNCTIONS), in units of their own with the vectorizer's settings
    simd_units: list[str] = []
    cur, count = [], 0
    for f in funcs:
        if not f.simd:
            continue
        for ci, chunk in enumerate(f.chunks):
            cur.append(f.chunk_source(ci, vector=True))
            count += len(chunk)
            if count >= UNIT_STATEMENTS:
                simd_units.append("\n\n".join(cur) + "\n")
                cur, count = [], 0
    if cur:
        simd_units.append("\n\n".join(cur) + "\n")
    simd = any(f.simd for f in funcs)
    cdef = [d for f in funcs for d in f.cdefs()] + ["extern const char nhc_layout[];"]
    if simd:
        cdef.append("int nhc_simd_ok(void);")
    layout = {"key": meta["key"], "generator": C_GENERATOR_VERSION,
              "functions": {f.name: f.layout() for f in funcs}, "cdef": "\n".join(cdef)}
    protos = "\n".join(p for f in funcs for p in f.prototypes() + f.soa_prototypes())
    pairs = [f.entries_source() for f in funcs]
    entries = (_ENTRY_PUSH + "\n\n".join(one for one, _ in pairs) + _ENTRY_POP + "\n"
               + "\n\n".join(many for _, many in pairs))
    if simd:
        entries += "\n\n" + _SIMD_OK + "\n\n" + "\n\n".join(f.block_entry_source() for f in funcs if f.simd)
    if not simd_units and len(units) <= 1:
        # a small model without blocked chunks: one unit (one compiler run); the chunks are
        # static and never inlined into the entry points, so no arithmetic moves across the
        # floating-point flag calls. (Blocked chunks are a unit of their own: the compiler
        # runs on them, the scalar chunks and the entry points at once, on as many cores.)
        chunks = "".join(u[len(head):] for u in units)
        entry = (head.replace(_EXTERN_CHUNK, _STATIC_CHUNK) + "#include <fenv.h>\n#include <stdlib.h>\n\n"
                 + chunks + "\n" + entries)
        return [entry], layout, head
    entry = head + "#include <fenv.h>\n#include <stdlib.h>\n\n" + protos + "\n\n" + entries
    return [entry] + units + [head + _SIMD_PUSH + u + _SIMD_POP for u in simd_units], layout, head


def _layout_line(layout: dict) -> str:
    """The definition of ``nhc_layout``: ``layout`` with cffi's parsed tables of its
    declarations (`prebuilt_ffi_arguments`, when they can be made) as a C string literal."""
    ffi_args = prebuilt_ffi_arguments(layout["cdef"])
    if ffi_args is not None:
        layout["ffi"] = ffi_args
    text = json.dumps(layout, sort_keys=True)
    literal = json.dumps(text)  # a valid C string literal: JSON escapes are a subset of C's
    return f"\n\nNHC_API const char nhc_layout[] = {literal};\n"


def generate_c(specs: Iterable[FunctionSpec], graph: ExprGraph, symbols: dict, meta: dict,
               cse: bool = True, plans: dict | None = None) -> tuple[list[str], dict]:
    """C translation units of a kernel library and its layout.

    Returns
    -------
    units : list of str
        ``units[0]`` holds the exported entry points and ``nhc_layout`` (the JSON layout as a
        C string); the others hold the chunk functions (the blocked ones in units of their
        own).  A small model without blocked chunks (chunks of at most `UNIT_STATEMENTS`
        statements in all) is one unit.
    layout : dict
        ``{"key", "generator", "functions": {name: {"args", "size", "outputs", "nonzero"}},
        "cdef", "ffi"}``; ``nonzero``: the flat indices the function writes (every other entry
        is zero for all arguments: the structural non-zeros of its expressions);
        ``outputs`` are ``(offset, size, shape)`` into the flat buffer of ``size`` doubles;
        ``ffi``: cffi's parsed tables of ``cdef`` (`prebuilt_ffi_arguments`), when they can be
        made.

    Raises
    ------
    CCodegenError
        When an expression has no C translation.
    """
    units, layout, _ = _c_units(specs, graph, symbols, meta, cse, plans)
    units[0] += _layout_line(layout)
    return units, layout


def generate_c_parts(specs: Iterable[FunctionSpec], graph: ExprGraph, symbols: dict, meta: dict,
                     cse: bool = True, plans: dict | None = None
                     ) -> tuple[list[str], dict, Callable[[], str]]:
    """`generate_c`'s library as the units without ``nhc_layout`` and a function giving the
    unit that defines it: a build compiles the units while the layout's cffi tables, tens of
    milliseconds of parsing, are made (`nhcontrol.compiled.cbackend.compile_library`'s
    ``late``)."""
    units, layout, head = _c_units(specs, graph, symbols, meta, cse, plans)
    return units, layout, lambda: head + _layout_line(layout)


__all__ = ["prebuilt_ffi_arguments", "generate_c", "generate_c_parts", "CPrinter", "CCodegenError", "C_GENERATOR_VERSION", "CHUNK_STATEMENTS",
           "UNIT_STATEMENTS", "SIMD_FUNCTIONS", "SIMD_BLOCK"]
