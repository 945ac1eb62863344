"""Steps 1-7 of the third procedure specialised to one model and partition: the routine of
`nhcontrol.linearization._cpoint` (``nhc_point_third``) generated as C with the sizes, the
index sets ``ai, ad, d``, the offsets of the fused kernel's fields and the kernel's structural
non-zeros baked in.

The fused kernel ``linearization_terms`` writes only the entries whose expression is not
identically zero (`nhcontrol.compiled.ccodegen`); their flat indices are recorded in the
kernel layout (``"nonzero"``), a property of the symbolic expressions, not of a probe point.
Every product with a kernel block is then printed as straight-line code over the pairs of
structural non-zeros that meet (a product entry where no pair meets is a structural zero and
is neither computed nor read), in the order of the generic routine's loops, so the sums are
the same sums (a skipped term is an exact zero).  The small blocks ``D_dd``, ``∂C/∂x_d``,
``B̄_ad`` and ``m0`` keep the generic routine's dense LU with partial pivoting (its C functions,
copied from `_cpoint.C_SOURCE`, called with constant sizes); a product with their inverse is
dense in the rows and keeps the zero columns of the right factor.

Same checks, flags and fallback as the generic routine: admissibility (1), conditioning
pre-check (2), a singular block or a result that is not finite (4), inputs in the
constraints (8).  Three entry points have the generic routine's signatures (``dims``, ``ix``,
``off`` are checked against the baked constants: 16 when they differ), so the callers swap
one function pointer:

* ``nhc_sp_third`` / ``nhc_sp_third_n`` for `_cpoint`'s ``run`` / ``run_n``;
* ``nhc_sp_prepared`` for the prepared linearizer's ``_call_fast`` and, through ``fp[3]``,
  ``nhc_point_first_order``; it writes ``T0``, the rows ``[ad, d]`` of ``V̄̄0`` and ``Th0`` into
  the work array at the generic layout only when the work array is given (not NULL), for the
  first-order rows (`Linearizer._with_kinematics`).

Two more take the prepared call's bound arguments as one array of addresses (each foreign
argument costs Python time): ``nhc_sp_call`` (the point and the outputs as arguments:
`Linearizer.__call__`) and ``nhc_sp_bound`` (everything bound: `Linearizer.bind`).

The library is per (kernel library, partition): generated from the kernel layout and the
partition indices alone (no SymPy, a few milliseconds), compiled once with
`nhcontrol.compiled.cbackend.compile_library` into the model's cache directory as
``nhc_pspec_<key>.<VERSION>.<platform>.so`` (key: sha256 of the generator's version and code
and of its inputs, so a warm start generates nothing) with the sha256 record of the cache,
verified before it is opened.  A layout without the pattern, a routine of more than
`MAX_VALUES` intermediate values, a generation or build that fails: None, and the callers
use the generic routine.
"""

from __future__ import annotations

import json
import os
from _thread import allocate_lock as _new_lock
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .._util.errors import CacheError
from .._csrc.point import helpers

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__: list[str] = []

VERSION = "s2"
"""Version of the generator (part of the library's file name and key)."""

OPT_FLAGS = ["-Og"]
"""Optimisation of the specialised routine (without fast-math and without contraction, as the
kernels).  Measured on the bicycle in one process: ``-Og`` 2.03 µs per point, ``-O1`` 2.05,
``-O2`` 1.88, ``-O0`` 4.6; compile 0.49, 0.78, 1.39, 0.34 s.  ``-Og`` (gcc and clang) keeps
``-O1``'s speed for two thirds of its compile time."""

_CDEF = """
int nhc_sp_third(const int64_t *, const int64_t *, const double *, const int64_t *,
                 const double *, const double *, const double *, const double *,
                 const double *, const double *, double, double, double, double *, double *,
                 double *, int64_t, int64_t *);
int nhc_sp_third_n(int64_t, const int64_t *, const int64_t *, const double *, int64_t,
                   const int64_t *, const double *, int64_t, const double *, int64_t,
                   const double *, const double *, const double *, int64_t, const double *,
                   int64_t, double, double, double, double *, double *, double *, int64_t,
                   int64_t *);
int nhc_sp_prepared(const int64_t *, const int64_t *, const int64_t *, const int64_t *,
                    double *, double *, double *, const double *, const double *,
                    const double *, const double *, const double *, const double *, double,
                    double, double, double *, double *, double *, int64_t, int64_t *);
int nhc_sp_call(const int64_t *, const double *, const double *, const double *, const double *,
                const double *, double *, double *);
int nhc_sp_bound(const int64_t *);
extern const char nhc_layout[];
"""

ONE = "1.0"
CHUNK = 150
"""Statements per chunk function of the generated routine."""
MAX_VALUES = 3000
"""Larger routines are not generated (their compile time would grow past seconds; the generic
routine serves them). The bicycle benchmark needs about 800 values."""


class _Gen:
    """Straight-line C over structural non-zeros: matrices are lists of rows of atoms (a C
    expression naming one value, ``ONE``, or None for a structural zero).  Values live in the
    work array ``w`` of the routine's context; statements are grouped into units (a unit is
    never split between two chunk functions)."""

    def __init__(self) -> None:
        self.units: list[list[str]] = []
        self.k = 0
        self.arrays: dict[str, int] = {}
        self._open: list[str] | None = None

    def emit(self, line: str) -> None:
        if self._open is not None:
            self._open.append("    " + line)
        else:
            self.units.append(["    " + line])

    def begin(self) -> None:
        self._open = []

    def end(self) -> None:
        self.units.append(self._open or [])
        self._open = None

    def var(self, expr: str) -> str:
        name = f"w[{self.k}]"
        self.k += 1
        if self.k > MAX_VALUES:
            raise ValueError(f"more than {MAX_VALUES} intermediate values: the generic routine")
        self.emit(f"{name} = {expr};")
        return name

    @staticmethod
    def mul(a: str, b: str) -> str:
        if a == ONE:
            return b
        if b == ONE:
            return a
        return f"{a}*{b}"

    def mm(self, A: list, B: list, neg: bool = False) -> list:
        """``A @ B`` (``-(A @ B)`` with ``neg``): the sum over p in increasing order, as the
        generic ``mm`` accumulates it (from 0.0; a zero term is exact)."""
        r = len(A)
        q = len(B)
        cols = len(B[0]) if q else 0
        Bcols = [[p for p in range(q) if B[p][j] is not None] for j in range(cols)]
        out = []
        for i in range(r):
            Ai = A[i]
            row = []
            for j in range(cols):
                terms = [self.mul(Ai[p], B[p][j]) for p in Bcols[j] if Ai[p] is not None]
                if not terms:
                    row.append(None)
                elif len(terms) == 1 and not neg and "*" not in terms[0]:
                    row.append(terms[0])
                else:
                    s = " + ".join(terms)
                    row.append(self.var(f"-({s})" if neg else s))
            out.append(row)
        return out

    def acc(self, init: str | None, terms: list[str], sign: str) -> str | None:
        """``init ± t0 ± t1 …`` left to right (the generic in-place updates)."""
        if not terms:
            return init
        if init is None:
            head = terms[0] if sign == "+" else f"-({terms[0]})"
            rest = terms[1:]
        else:
            head, rest = init, terms
        s = head + "".join(f" {sign} {t}" for t in rest)
        return self.var(s)

    def dense(self, name: str, X: list) -> list:
        """An array ``name`` of the context holding ``X`` (zeros written); its atoms."""
        r = len(X)
        c = len(X[0]) if r else 0
        self.arrays[name] = max(1, r * c)
        for i in range(r):
            for j in range(c):
                self.emit(f"{name}[{i * c + j}] = {X[i][j] or '0.0'};")
        return [[f"{name}[{i * c + j}]" for j in range(c)] for i in range(r)]


def _zeros(r: int, c: int) -> list:
    return [[None] * c for _ in range(r)]


def _T(X: list, cols: int) -> list:
    return [[X[i][j] for i in range(len(X))] for j in range(cols)]


def _block(T: str, off: int, r: int, c: int, nz: set) -> list:
    return [[f"{T}[{off + i * c + j}]" if (off + i * c + j) in nz else None for j in range(c)]
            for i in range(r)]


def generate(n: int, m: int, l: int, k: int, ai: Sequence[int], ad: Sequence[int],  # noqa: E741
             d: Sequence[int], fields: dict, nonzero: Sequence[int]) -> str:
    """The C source of the specialised routine (no layout string).

    ``fields``: kernel field -> ``(offset, size, shape)`` in the fused kernel's flat output;
    ``nonzero``: its structural non-zeros.
    """
    from ._cpoint import FIELDS, INPUT_CONSTRAINT_FIELDS

    n1, na, c, ns = n - m - l, n - m, m + l, 2 * (n - m - l) + l
    w7 = 2 * n + n1 + k
    rw = n1 + 3 * n
    dd = list(ad) + list(d)
    nz = set(int(i) for i in nonzero)
    g = _Gen()

    def F(name: str, r: int, cc: int) -> list:
        off, size, _ = fields[name]
        if size != r * cc:
            raise ValueError(f"field {name} has {size} entries, not {r} x {cc}")
        return _block("T", int(off), r, cc, nz)

    def Fv(name: str, r: int) -> list:
        return [row[0] for row in F(name, r, 1)]

    M, D, Cx, Bm = F("M", n, n), F("D", c, n), F("Cx", m, n), F("B", l, n)
    Q, Qd = Fv("Q", n), Fv("Qd", c)

    # ---- inputs in the constraints: only structural non-zeros can exceed atol_u ----
    ucons = []
    for f in INPUT_CONSTRAINT_FIELDS:
        if f in fields:
            off, size, _ = fields[f]
            ucons += [f"!(fabs(T[{i}]) <= atol_u)" for i in range(int(off), int(off) + int(size))
                      if i in nz]
    if ucons:
        g.emit(f"if ({' || '.join(ucons)}) return 8;")

    # ---- the reference admissibility check (the generic routine's, over non-zeros) ----
    g.begin()
    g.emit("if (check) {")
    g.emit("double vx = 0.0, ax = 0.0, S = 0.0, maxM = 0.0, aF = 0.0, fh = 0.0, fv = 0.0, fa = 0.0, t;")
    g.emit(f"const double rho = 4.0 * (double)({n + c}) * 2.220446049250313e-16;")
    g.emit(f"for (int i = 0; i < {n}; i++) {{ if (fabs(xd0[i]) > vx) vx = fabs(xd0[i]); "
           f"if (fabs(xdd0[i]) > ax) ax = fabs(xdd0[i]); }}")
    for i in range(n):
        terms = [f"fabs({M[i][j]}) * fabs(xdd0[{j}])" for j in range(n) if M[i][j] is not None]
        terms += [f"fabs(lam0[{j}]) * fabs({D[j][i]})" for j in range(c) if D[j][i] is not None]
        head = f"fabs({Q[i]})" if Q[i] is not None else "0.0"
        g.emit(f"t = {' + '.join([head] + terms)}; if (t > S) S = t;")
        for j in range(n):
            if M[i][j] is not None:
                g.emit(f"if (fabs({M[i][j]}) > maxM) maxM = fabs({M[i][j]});")
    g.emit("if (maxM * (1.0 + vx * vx + ax) > S) S = maxM * (1.0 + vx * vx + ax);")
    g.emit("if (maxM > 0.0) aF = S / maxM;")
    g.emit("double xs[%d];" % max(1, n))
    g.emit(f"for (int j = 0; j < {n}; j++) xs[j] = fabs(x0[j]) > 1.0 ? fabs(x0[j]) : 1.0;")

    def sum_or_zero(terms: list[str]) -> str:
        return " + ".join(terms) if terms else "0.0"

    def precheck(F: list, rows: int, cols: int, inv: str) -> None:
        """The conditioning pre-check of the inverted block ``inv`` (``suspect`` of the generic
        routine) with the squared row norms of the ``rows x cols`` matrix ``F``: flag 2 when a row
        vanishes or the bound reaches ``cond_max``."""
        g.begin()
        g.emit("if (check) {")
        zero = []
        for i in range(rows):
            terms = [f"{F[i][j]}*{F[i][j]}" for j in range(cols) if F[i][j] is not None]
            g.emit(f"rn2[{i}] = {sum_or_zero(terms)};")
            zero.append(f"!(rn2[{i}] != 0.0)")
        g.emit(f"if (({' || '.join(zero)}) || suspect({inv}, {rows}, rn2, lim)) ctx->flags |= 2;")
        g.emit("}")
        g.end()

    for i in range(m):
        sc = sum_or_zero([f"fabs({D[i][j]}) * xs[{j}]" for j in range(n) if D[i][j] is not None])
        g.emit(f"double sc{i} = {sc};")
        g.emit(f"if (sc{i} > fh) fh = sc{i};")
    for i in range(c):
        row = sum_or_zero([f"fabs({D[i][j]})" for j in range(n) if D[i][j] is not None])
        g.emit(f"double row{i} = {row};")
        qd = f"fabs({Qd[i]})" if Qd[i] is not None else "0.0"
        g.emit(f"t = row{i} * vx + (bv ? fabs(bv[{i}]) : 0.0); if (t > fv) fv = t;")
        g.emit(f"t = row{i} * (ax + vx * vx + aF) + {qd}; if (t > fa) fa = t;")
    g.emit("fh *= rho; fv *= rho; fa *= rho;")
    g.emit("int fl = 0;")
    for i in range(m):
        g.emit(f"if (!(fabs(Cv[{i}]) <= tol * sc{i} + fh)) fl = 1;")
    for i in range(c):
        r1 = sum_or_zero([f"{D[i][j]} * xd0[{j}]" for j in range(n) if D[i][j] is not None])
        r2 = sum_or_zero([f"{D[i][j]} * xdd0[{j}]" for j in range(n) if D[i][j] is not None])
        qd = Qd[i] if Qd[i] is not None else "0.0"
        qda = f"fabs({Qd[i]})" if Qd[i] is not None else "0.0"
        g.emit(f"{{ double r1 = {r1}, s1 = row{i} * vx; if (bv) {{ r1 += bv[{i}]; s1 += fabs(bv[{i}]); }} "
               f"if (!(fabs(r1) <= tol * s1 + fv)) fl = 1; }}")
        g.emit(f"if (!(fabs(({r2}) - {qd}) <= tol * (row{i} * (ax + vx * vx) + {qda}) + fa)) fl = 1;")
    for i in range(n):
        r = sum_or_zero([f"{M[i][j]} * xdd0[{j}]" for j in range(n) if M[i][j] is not None])
        dl = sum_or_zero([f"lam0[{j}] * {D[j][i]}" for j in range(c) if D[j][i] is not None])
        q = Q[i] if Q[i] is not None else "0.0"
        g.emit(f"if (!(fabs((({r}) + ({dl})) - {q}) <= tol * S + rho * S)) fl = 1;")
    g.emit("if (fl) return fl;")
    g.emit("}")
    g.end()
    big = max(c, n1, m, l, 1) + 1
    g.arrays.update(lwork=big * big, rn2=c + 1)

    # ---- Steps 1-3 ----
    T0 = _zeros(n, n1)
    for j in range(n1):
        T0[ai[j]][j] = ONE
    dQ_dxd, dQ_dx = F("dQ_dxd", n, n), F("dQ_dx", n, n)
    dMa_dx, dDTl = F("dMa_dx", n, n), F("dDTlam_dx", n, n)
    W7 = _zeros(n, w7)
    for i in range(n):
        for j in range(n):
            W7[i][j] = dQ_dxd[i][j]
            a, b, cc = dQ_dx[i][j], dMa_dx[i][j], dDTl[i][j]
            if a is None and b is None and cc is None:
                continue
            if a is not None and b is None and cc is None:
                W7[i][n + j] = a
                continue
            s = a if a is not None else None
            for t in (b, cc):
                if t is None:
                    continue
                s = f"-{t}" if s is None else f"{s} - {t}"
            W7[i][n + j] = g.var(s)
    sol = None
    if c:
        dDv, dQd_dxd = F("dDv_dx", c, n), F("dQd_dxd", c, n)
        dDa, dQd_dx = F("dDa_dx", c, n), F("dQd_dx", c, n)
        Ddd = g.dense("Ddd", [[D[i][dd[j]] for j in range(c)] for i in range(c)])
        rhs1 = _zeros(c, rw)
        for i in range(c):
            for j in range(n1):
                rhs1[i][j] = D[i][ai[j]]
            for j in range(n):
                rhs1[i][n1 + j] = dDv[i][j]
                rhs1[i][n1 + n + j] = None if dQd_dxd[i][j] is None else g.var(f"-{dQd_dxd[i][j]}")
                a, b = dDa[i][j], dQd_dx[i][j]
                if a is not None and b is not None:
                    rhs1[i][n1 + 2 * n + j] = g.var(f"{a} - {b}")
                elif a is not None:
                    rhs1[i][n1 + 2 * n + j] = a
                elif b is not None:
                    rhs1[i][n1 + 2 * n + j] = g.var(f"-{b}")
        g.emit(f"if (inverse(Ddd, {c}, ipv, lwork)) return 4;")
        sol = g.mm(Ddd, rhs1, neg=True)          # [T_dd, Vbb0_dd, U0_dd, V0_dd]
        for i in range(c):
            for j in range(n1):
                T0[dd[i]][j] = sol[i][j]
        for i in range(n):
            for j in range(2 * n):
                terms = [g.mul(M[i][dd[q]], sol[q][n1 + n + j]) for q in range(c)
                         if M[i][dd[q]] is not None and sol[q][n1 + n + j] is not None]
                W7[i][j] = g.acc(W7[i][j], terms, "-")
        precheck(D, c, n, "Ddd")
    MT0 = g.mm(M, T0)
    for i in range(n):
        for j in range(n1):
            W7[i][2 * n + j] = MT0[i][j]
    if k:
        dQ_du, dMa_du = F("dQ_du", n, k), F("dMa_du", n, k)
        for i in range(n):
            for j in range(k):
                a, b = dQ_du[i][j], dMa_du[i][j]
                W7[i][2 * n + n1 + j] = (g.var(f"{a} - {b}") if a is not None and b is not None
                                         else a if a is not None
                                         else None if b is None else g.var(f"-{b}"))
    RS = g.mm(_T(T0, n1), W7)                   # [R0, S0, m0, T0^T(dQ/du - d(M xdd0)/du)]
    RVS = [[RS[i][n + j] for j in range(n)] for i in range(n1)]
    if c:
        for i in range(n1):
            for j in range(n):
                terms = [g.mul(RS[i][dd[q]], sol[q][n1 + j]) for q in range(c)
                         if RS[i][dd[q]] is not None and sol[q][n1 + j] is not None]
                RVS[i][j] = g.acc(RVS[i][j], terms, "+")

    # ---- Steps 4-5 ----
    Th0 = _zeros(n, na)
    for j in range(na):
        Th0[ai[j] if j < n1 else ad[j - n1]][j] = ONE
    solh = None
    if m:
        dCxv = F("dCxv_dx", m, n)
        Cxd = g.dense("Cxd", [[Cx[i][d[j]] for j in range(m)] for i in range(m)])
        rhsh = [[Cx[i][ai[j] if j < n1 else ad[j - n1]] for j in range(na)] + list(dCxv[i])
                for i in range(m)]
        g.emit(f"if (inverse(Cxd, {m}, ipv, lwork)) return 4;")
        solh = g.mm(Cxd, rhsh, neg=True)        # [Th0_d, Vh0_d]
        for i in range(m):
            for j in range(na):
                Th0[d[i]][j] = solh[i][j]
        g.emit(f"if (check && suspect(Cxd, {m}, rn2, lim)) ctx->flags |= 2;")

    A = _zeros(ns, ns)
    for j in range(n1):
        A[j][n1 + j] = ONE
    # ---- Step 6 ----
    if l:
        dBv = F("dBv_dx", l, n)
        Bbar = g.mm(Bm, Th0)
        Wl = [list(r) for r in dBv]
        if m:
            for i in range(l):
                for j in range(n):
                    terms = [g.mul(Bm[i][d[q]], solh[q][na + j]) for q in range(m)
                             if Bm[i][d[q]] is not None and solh[q][na + j] is not None]
                    Wl[i][j] = g.acc(Wl[i][j], terms, "+")
        WT = g.mm(Wl, Th0)
        rhsn = [[WT[i][j] for j in range(n1)] + [Bbar[i][j] for j in range(n1)]
                + [WT[i][n1 + j] for j in range(l)] for i in range(l)]
        Bad = g.dense("Bad", [[Bbar[i][n1 + j] for j in range(l)] for i in range(l)])
        g.emit(f"if (inverse(Bad, {l}, ipv, lwork)) return 4;")
        soln = g.mm(Bad, rhsn, neg=True)
        for i in range(l):
            for j in range(ns):
                A[2 * n1 + i][j] = soln[i][j]
        precheck(Bbar, l, na, "Bad")

    # ---- Step 7 ----
    RVST = g.mm(RVS, Th0)
    R0T0 = g.mm([row[:n] for row in RS], T0)
    rhs7 = [[RVST[i][j] for j in range(n1)] + [R0T0[i][j] for j in range(n1)]
            + [RVST[i][n1 + j] for j in range(l)] + [RS[i][2 * n + n1 + j] for j in range(k)]
            for i in range(n1)]
    Bout = _zeros(ns, k)
    if n1:
        r7 = g.dense("rhs7", rhs7)
        m0c = g.dense("m0c", [[RS[i][2 * n + j] for j in range(n1)] for i in range(n1)])
        del m0c
        g.emit(f"if (lu(m0c, {n1}, ipv)) return 4;")
        g.emit(f"lu_solve(m0c, {n1}, ipv, rhs7, {ns + k}, {ns + k});")
        for i in range(n1):
            for j in range(ns):
                A[n1 + i][j] = r7[i][j]
            for j in range(k):
                Bout[n1 + i][j] = r7[i][ns + j]

    # ---- finiteness, outputs ----
    computed = [v for row in A for v in row if v not in (None, ONE)]
    computed += [v for row in Bout for v in row if v not in (None, ONE)]
    if computed:
        parts = [f"{v}*0.0" for v in computed]
        while len(parts) > 1:           # a balanced sum (NaN for any NaN or inf entry)
            parts = [f"({parts[i]} + {parts[i + 1]})" if i + 1 < len(parts) else parts[i]
                     for i in range(0, len(parts), 2)]
        g.emit(f"if (!({parts[0]} == 0.0)) ctx->flags |= 4;")
    for i in range(ns):
        for j in range(ns):
            g.emit(f"A[{i * ns + j}] = {A[i][j] or '0.0'};")
        for j in range(k):
            g.emit(f"Bout[{i * k + j}] = {Bout[i][j] or '0.0'};")
    # the kinematics for the first-order rows (generic work layout), when asked for
    at_sol = n * n1 + n * w7 + c * c + c * rw
    at_th0 = at_sol + c * rw + n1 * w7 + n1 * n
    g.begin()
    g.emit("if (W) {")
    for i in range(n):
        for j in range(n1):
            g.emit(f"W[{i * n1 + j}] = {T0[i][j] or '0.0'};")
    for i in range(c):
        for j in range(n):
            g.emit(f"W[{at_sol + i * rw + n1 + j}] = {sol[i][n1 + j] or '0.0'};")
    for i in range(n):
        for j in range(na):
            g.emit(f"W[{at_th0 + i * na + j}] = {Th0[i][j] or '0.0'};")
    g.emit("}")
    g.end()
    g.emit("return ctx->flags;")

    kin = at_th0 + n * na
    offs = [int(fields[f][0]) for f in FIELDS]
    dims = f"dims[0] == {n} && dims[1] == {m} && dims[2] == {l} && dims[3] == {k}"
    ixc = " && ".join(f"ix[{i}] == {v}" for i, v in enumerate(list(ai) + list(ad) + list(d)))
    offc = " && ".join(f"off[{i}] == {v}" for i, v in enumerate(offs))
    match = " && ".join(s for s in (dims, ixc, offc) if s)
    # chunk functions of about CHUNK statements (one long function makes the register
    # allocator superlinear: seconds instead of a fraction of one)
    chunks: list[list[str]] = [[]]
    for unit in g.units:
        if chunks[-1] and len(chunks[-1]) + len(unit) > CHUNK:
            chunks.append([])
        chunks[-1].extend(unit)
    arrays = dict(g.arrays)
    struct = (f"struct sp_ctx {{\n    int flags;\n    int64_t ipv[{big}];\n    double w[{max(1, g.k)}];\n"
              + "".join(f"    double {a}[{sz}];\n" for a, sz in arrays.items()) + "};\n")
    unpack = "".join(f"    double *{a} = ctx->{a}; (void){a};\n" for a in arrays)
    args = ("struct sp_ctx *restrict ctx, int check, const double *restrict T, const double *Cv, "
            "const double *bv, const double *x0, const double *xd0, const double *xdd0, "
            "const double *lam0, double tol, double cond_max, double atol_u, double *restrict A, "
            "double *restrict Bout, double *restrict W")
    call = "ctx, check, T, Cv, bv, x0, xd0, xdd0, lam0, tol, cond_max, atol_u, A, Bout, W"
    funcs = []
    for ci, lines in enumerate(chunks):
        funcs.append(f"static NHC_NOINLINE int sp_c{ci}({args})\n{{\n"
                     "    (void)check; (void)T; (void)Cv; (void)bv; (void)x0; (void)xd0; (void)xdd0;\n"
                     "    (void)lam0; (void)tol; (void)cond_max; (void)atol_u; (void)A; (void)Bout;\n"
                     "    (void)W;\n"
                     "    double *restrict w = ctx->w; int64_t *ipv = ctx->ipv; (void)w; (void)ipv;\n"
                     "    const double lim = cond_max * cond_max; (void)lim;\n"
                     + unpack + "\n".join(lines) + "\n    return 0;\n}\n")
    steps = "".join(f"    if ((rc = sp_c{ci}({call}))) return rc;\n" for ci in range(len(chunks)))
    body = (struct + "\n" + "\n".join(funcs)
            + f"\nstatic int sp_body({args[len('struct sp_ctx *restrict ctx, '):]})\n{{\n"
            "    struct sp_ctx c0, *ctx = &c0;\n    int rc;\n    ctx->flags = 0;\n"
            + steps + "    return 0;\n}\n")
    return f"""/* Steps 1-7 of the third procedure specialised to one model and partition: generated by
 * nhcontrol.linearization._cspecial ({VERSION}); do not edit.  n = {n}, m = {m}, l = {l}, k = {k};
 * ai = {list(ai)}, ad = {list(ad)}, d = {list(d)}; {len(nz)} structural non-zeros of the kernel. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(_MSC_VER)
#define NHC_API __declspec(dllexport)
#define NHC_NOINLINE __declspec(noinline)
#define restrict __restrict
#else
#define NHC_API
#define NHC_NOINLINE __attribute__((noinline))
#endif

{helpers()}
{body}
static int sp_match(const int64_t *dims, const int64_t *ix, const int64_t *off)
{{
    (void)ix; (void)off;
    return {match or "1"};
}}

NHC_API int nhc_sp_third(const int64_t *dims, const int64_t *ix, const double *T, const int64_t *off,
                         const double *Cv, const double *bv, const double *x0, const double *xd0,
                         const double *xdd0, const double *lam0, double tol, double cond_max,
                         double atol_u, double *A, double *Bout, double *W, int64_t nW, int64_t *ipiv)
{{
    (void)ipiv;
    if (!sp_match(dims, ix, off)) return 16;
    if (W && nW < {kin}) return 16;
    return sp_body((int)dims[4], T, Cv, bv, x0, xd0, xdd0, lam0, tol, cond_max, atol_u, A, Bout, W);
}}

NHC_API int nhc_sp_third_n(int64_t N, const int64_t *dims, const int64_t *ix, const double *T,
                           int64_t sT, const int64_t *off, const double *Cv, int64_t sC,
                           const double *bv, int64_t sb, const double *x0, const double *xd0,
                           const double *xdd0, int64_t sx, const double *lam0, int64_t sl,
                           double tol, double cond_max, double atol_u, double *A, double *Bout,
                           double *W, int64_t nW, int64_t *ipiv)
{{
    (void)W; (void)nW; (void)ipiv;
    if (!sp_match(dims, ix, off)) return 16;
    for (int64_t i = 0; i < N; i++) {{
        int flags = sp_body((int)dims[4], T + i * sT, Cv + i * sC, bv ? bv + i * sb : bv,
                            x0 + i * sx, xd0 + i * sx, xdd0 + i * sx, lam0 + i * sl, tol,
                            cond_max, atol_u, A + i * {ns * ns}, Bout + i * {ns * k}, 0);
        if (flags) return flags;
    }}
    return 0;
}}

typedef int (*nhc_kernel6)(const double *, const double *, const double *, const double *,
                           const double *, const double *, double *);
typedef int (*nhc_kernel3)(const double *, const double *, const double *, double *);

NHC_API int nhc_sp_prepared(const int64_t *fp, const int64_t *dims, const int64_t *ix,
                            const int64_t *off, double *T, double *Cv, double *bv,
                            const double *x, const double *xd, const double *xdd,
                            const double *lam, const double *u, const double *p, double tol,
                            double cond_max, double atol_u, double *A, double *Bout,
                            double *W, int64_t nW, int64_t *ipiv)
{{
    (void)ipiv;
    if (!sp_match(dims, ix, off)) return 16;
    if (W && nW < {kin}) return 16;
    int rc = ((nhc_kernel6)(intptr_t)fp[0])(x, xd, xdd, lam, u, p, T);
    if (rc) return 32 | (rc << 8);
    if (dims[4] && fp[1]) {{
        rc = ((nhc_kernel3)(intptr_t)fp[1])(x, u, p, Cv);
        if (rc) return 32 | (rc << 8);
    }}
    if (dims[4] && fp[2]) {{
        rc = ((nhc_kernel3)(intptr_t)fp[2])(x, u, p, bv);
        if (rc) return 32 | (rc << 8);
    }}
    return sp_body((int)dims[4], T, Cv, (dims[4] && fp[2]) ? bv : 0, x, xd, xdd, lam, tol,
                   cond_max, atol_u, A, Bout, W);
}}

/* the prepared call with its bound arguments in one array (fewer foreign arguments: each costs
   Python time): ctx = [fp[0], fp[1], fp[2], check, T, Cv, bv, p, W (0: no kinematics),
   scalars (tol, cond_max, atol_u), and for nhc_sp_bound: x, xd, xdd, lam, u, A, B], as
   int64 addresses */
#define PTR(t, i) ((t)(intptr_t)ctx[i])
static int sp_run(const int64_t *ctx, const double *x, const double *xd, const double *xdd,
                  const double *lam, const double *u, double *A, double *Bout)
{{
    const double *p = PTR(const double *, 7), *sc = PTR(const double *, 9);
    double *T = PTR(double *, 4), *Cv = PTR(double *, 5), *bv = PTR(double *, 6);
    const int check = (int)ctx[3];
    int rc = PTR(nhc_kernel6, 0)(x, xd, xdd, lam, u, p, T);
    if (rc) return 32 | (rc << 8);
    if (check && ctx[1]) {{
        rc = PTR(nhc_kernel3, 1)(x, u, p, Cv);
        if (rc) return 32 | (rc << 8);
    }}
    if (check && ctx[2]) {{
        rc = PTR(nhc_kernel3, 2)(x, u, p, bv);
        if (rc) return 32 | (rc << 8);
    }}
    return sp_body(check, T, Cv, (check && ctx[2]) ? bv : 0, x, xd, xdd, lam, sc[0], sc[1], sc[2],
                   A, Bout, PTR(double *, 8));
}}

NHC_API int nhc_sp_call(const int64_t *ctx, const double *x, const double *xd, const double *xdd,
                        const double *lam, const double *u, double *A, double *Bout)
{{
    return sp_run(ctx, x, xd, xdd, lam, u, A, Bout);
}}

NHC_API int nhc_sp_bound(const int64_t *ctx)
{{
    return sp_run(ctx, PTR(const double *, 10), PTR(const double *, 11), PTR(const double *, 12),
                  PTR(const double *, 13), PTR(const double *, 14), PTR(double *, 15),
                  PTR(double *, 16));
}}
#undef PTR

NHC_API const char nhc_layout[] = NHC_LAYOUT;
"""


# ----------------------------------------------------------------------------- the library
_LOCK = _new_lock()
_LIBS: dict[str, Any] = {}        # library path -> _Library or None (unusable: generic routine)


class _Library:
    """The loaded specialised routine: ``third``, ``third_n``, ``prepared``."""

    def __init__(self, path: str, key: str) -> None:
        from ..compiled import cache as _cache
        from ..compiled.cbackend import _ffi_of, _read_layout

        _cache.verify_artefact(path)     # immediately before opening (private directory)
        raw, layout = _read_layout(path)
        if layout.get("key") != key or layout.get("generator") != VERSION:
            raise CacheError(f"the library {path} belongs to another specialised routine")
        ffi = _ffi_of(layout)
        lib = ffi.dlopen(str(path))
        self.path, self._raw, self.ffi, self.lib = path, raw, ffi, lib
        self.third, self.third_n, self.prepared = lib.nhc_sp_third, lib.nhc_sp_third_n, lib.nhc_sp_prepared
        self.call, self.bound = lib.nhc_sp_call, lib.nhc_sp_bound


_SELF: list[bytes] = []


def _generator_digest() -> bytes:
    """sha256 of this generator's own code and of the generic routine's helpers it copies."""
    if not _SELF:
        from .._util.sha import sha256
        from ._cpoint import C_SOURCE

        try:
            with open(__file__, "rb") as fh:
                h = sha256(fh.read())
        except OSError:                  # pragma: no cover - no source file (then VERSION decides)
            h = sha256(VERSION.encode())
        h.update(C_SOURCE.encode())
        _SELF.append(h.digest())
    return _SELF[0]


def inputs_for(cm: CompiledModel, idx: Any, ck: Any) -> "tuple[tuple, str] | None":
    """``(arguments of generate, key)`` of the specialised routine of model ``cm`` (C kernels
    ``ck``) and partition ``idx``, or None (a kernel layout without the structural pattern).

    The key is the sha256 of the generator's version and code and of its inputs (the sizes,
    the partition indices, the fields' offsets and the pattern): the generated source is a
    function of these, so a warm start needs no generation."""
    spec = ck.layout["functions"]["linearization_terms"]
    nonzero = spec.get("nonzero")
    if nonzero is None:
        return None
    from .._util.sha import sha256
    from ..compiled._layout import LINEARIZATION_FIELDS as names

    fields = {nm: o for nm, o in zip(names, spec["outputs"])}
    ints = [[int(i) for i in a] for a in (idx.ai, idx.ad, idx.d)]
    args = (int(idx.n), int(idx.m), int(idx.l), int(cm.ninputs), *ints, fields, nonzero)
    h = sha256(VERSION.encode() + _generator_digest())
    h.update(json.dumps(args, sort_keys=True).encode())
    return args, h.hexdigest()


_BUILDING: set[str] = set()      # library paths a background thread is building (`routine_soon`)


def _after_fork_in_child() -> None:
    """A process forked during a background build (`routine_soon`) has no thread to finish it:
    it forgets it (and the lock the thread may hold); a library it needs is then loaded or built."""
    global _LOCK
    _BUILDING.clear()
    if _LOCK.locked():
        _LOCK = _new_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _path(cm: CompiledModel, key: str) -> str:
    from .._csrc import library_name

    return os.path.join(os.path.dirname(cm._library_path), library_name("nhc_pspec", key, VERSION))


def routine_soon(cm: CompiledModel, idx: Any, ck: Any, done: Callable[["_Library"], None]) -> None:
    """`routine` (built when missing) in a background thread, which calls ``done(library)`` when
    it is there; the caller keeps the generic routine meanwhile (the same numbers: module
    docstring), so no call waits for the compiler. Synchronous (as `routine`) when background
    builds are off (`nhcontrol.compiled.cbackend.PREBUILD`, the test suite's setting) or the
    machine has one core. Meanwhile ``routine(..., build=False)`` of the same library returns
    None at once (the generic routine) instead of waiting for the build."""
    from ..compiled import cbackend

    got = inputs_for(cm, idx, ck)
    if got is None:
        return
    path = _path(cm, got[1])
    if not cbackend.PREBUILD or cbackend._workers() < 2 or path in _LIBS:
        lib = routine(cm, idx, ck)
        if lib is not None:
            done(lib)
        return
    def work() -> None:
        cbackend._lower_thread_priority()     # nobody waits for it: the compiler takes idle CPU
        try:
            lib = routine(cm, idx, ck)
        finally:
            _BUILDING.discard(path)
        if lib is not None:
            done(lib)

    _BUILDING.add(path)
    cbackend.start_background(work, "nhcontrol-specialise")


def routine(cm: CompiledModel, idx: Any, ck: Any, build: bool = True) -> "_Library | None":
    """The specialised routine of model ``cm`` and partition ``idx`` (built on first use into
    the kernels' cache directory; with ``build=False`` only loaded when it is there, None while
    a background thread builds it), or None: the generic routine."""
    got = inputs_for(cm, idx, ck)
    if got is None:
        return None
    args, key = got
    path = _path(cm, key)
    if not build and path in _BUILDING:
        return None
    with _LOCK:
        if path in _LIBS:
            return _LIBS[path]
        from ..compiled import cache as _cache

        there = os.path.exists(path) or os.path.exists(_cache._record(path))
        if not build and not there:
            return None
        from ..compiled.cbackend import CompilerUnavailable, compile_library

        lib = None
        try:
            if there:
                try:
                    lib = _Library(path, key)
                except (CacheError, OSError, ValueError, KeyError) as exc:
                    _cache.discard_artefact(path)
                    _cache.warn_once("artefact", path, f"discarded the unusable compiled linearization "
                                                       f"library {path} ({exc}); it is rebuilt")
            if lib is None:
                try:
                    src = generate(*args)
                except (ValueError, KeyError, IndexError, TypeError):
                    _LIBS[path] = None         # not a layout this generator can read
                    return None
                from ..compiled._ffi_tables import routine_layout_literal   # a cold build only

                literal = routine_layout_literal(key, VERSION, _CDEF)
                compile_library([src.replace("NHC_LAYOUT", literal)], _cache._path(path), workers=1,
                                optimise=OPT_FLAGS[0])
                lib = _Library(path, key)
        except CompilerUnavailable:
            lib = None                   # the generic routine (which says why, if it cannot)
        except (CacheError, OSError, ValueError, KeyError, AttributeError) as exc:
            _cache.warn_once("backend", "pspec",
                             f"nhcontrol uses its generic compiled Steps 1-7 (same results, slower): "
                             f"the routine specialised to the partition cannot be built or loaded ({exc})")
            lib = None
        if len(_LIBS) > 256:
            _LIBS.clear()
        _LIBS[path] = lib
        return lib
