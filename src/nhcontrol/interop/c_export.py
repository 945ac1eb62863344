"""Standalone C99 export of a model and of its third numerical procedure ([`export_c()`][nhcontrol.interop.export_c]).

The exported directory has no Python dependency. ``nhc_model.c`` holds

* the model's kernels, printed by the same C printer and from the same expression graph as
  nhcontrol's own C kernels (`nhcontrol.compiled.ccodegen`; the same arithmetic in the same
  order, so the same numbers): ``nhc_terms`` (every term Steps 1-7 need, the fused
  ``linearization_terms``), ``nhc_dynamics`` (``M, Q, D, Q_d``), ``nhc_C``, ``nhc_Cx``,
  ``nhc_D``, ``nhc_b``;
* ``nhc_linearize``: Steps 1-7 of the third procedure at one point (thesis Sect. 4.2.3,
  Eqs. (4.96)-(4.125); input matrix of Sect. 8.1) with the reference admissibility check and
  the conditioning pre-check — the routine nhcontrol's ``linearize`` runs for models with C
  kernels (`nhcontrol.linearization._cpoint`), included verbatim;
* ``nhc_accelerations`` (the index-1 system Eq. (2.127)) and ``nhc_rhs``, the minimal-state
  right-hand side ``Ẋ = f(X, u, p)``, ``X = [x_ai, ẋ_ai, x_ad]`` (Newton on ``C(x) = 0`` for
  ``x_d``, ``D ẋ + b = 0`` for the dependent velocities), and ``nhc_jacobian``: ``f`` with its
  exact Jacobians ``A = ∂f/∂X``, ``B = ∂f/∂u`` (the third procedure at the motion through ``X``),
  for an embedded EKF or nonlinear MPC.

No function allocates memory or touches global state: each takes a caller-owned workspace of
``NHC_WORK`` doubles and ``NHC_IWORK`` 64-bit integers (macros in ``nhc_model.h``; its
comment states the bytes), so the code is reentrant and suits a microcontroller. Return codes
(``NHC_OK = 0`` or a sum of flags) are listed in the header. ``nhc_check.c`` reads one JSON
object ``{"x", "xd", "xdd", "lam", "u", "p"}`` on stdin and prints ``{"A", "B", "status"}``;
``make`` builds it with the system compiler.

[`export_lqr_c()`][nhcontrol.interop.export_lqr_c] writes the gain tables of a finite-horizon
LQR (`LQRResult.export_c`) as read-only C arrays with ``nhc_lqr_control(step, dx, u)``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from .._util.errors import InteropError

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition
    from nhcontrol.modeling import MultibodySystem

__all__ = ["export_c", "export_lqr_c", "STATUS_CODES", "C_FLAGS", "resolve_model", "resolve_partition"]

STATUS_CODES: Mapping[str, int] = {
    "NHC_OK": 0, "NHC_NOT_ADMISSIBLE": 1, "NHC_ILL_CONDITIONED": 2, "NHC_SINGULAR": 4,
    "NHC_INPUTS_IN_CONSTRAINTS": 8, "NHC_WORK_TOO_SMALL": 16, "NHC_DOMAIN": 32,
    "NHC_NO_CONVERGENCE": 64}
"""Return codes of the exported functions (flags; a sum when several apply)."""

C_FLAGS = "-O2 -std=c99 -ffp-contract=off -fno-fast-math"
"""Compiler flags of the generated Makefile (no contraction, no fast-math: the same rounding
as nhcontrol's kernels)."""

_NEWTON_ITER = 60


def _system_of(model: Any, system: Any) -> Any:
    from ..compiled import CompiledModel
    from ..compiled.model import _system_for
    from ..modeling import MultibodySystem

    if system is not None:
        if not isinstance(system, MultibodySystem):
            raise InteropError(f"system must be a MultibodySystem, got {type(system).__name__}")
        return system
    if isinstance(model, MultibodySystem):
        return model
    inner = getattr(model, "system", None)
    if isinstance(inner, MultibodySystem):
        return inner
    if isinstance(model, CompiledModel):
        mb = _system_for(model)
        if mb is None:
            raise InteropError(
                f"the C export prints the model's expressions, and compiled model {model.name!r} was not "
                f"compiled in this process (loaded from a pickle or evicted): pass system=... (its "
                f"MultibodySystem) or compile it again with system.compile()")
        return mb
    raise InteropError(f"export_c needs a CompiledModel or a MultibodySystem, got {type(model).__name__}")


def _layout_of(f: Any, spec: Any) -> dict[str, tuple[int, int, list[int]]]:
    return {name: out for (name, _, _), out in zip(spec.outputs, f.outputs)}


def _point_source() -> str:
    from ..linearization import _cpoint

    src = _cpoint.C_SOURCE
    src = src.replace("NHC_API const char nhc_layout[] = NHC_LAYOUT;\n", "")
    # byte counts as size_t (no -Wsign-conversion under -Wconversion; the same numbers)
    src = re.sub(r"memset\((\w+), 0, sizeof\(double\) \* ([^;]+)\);",
                 lambda m: f"memset({m.group(1)}, 0, sizeof(double) * (size_t)({m.group(2)}));", src)
    if "NHC_LAYOUT" in src or "nhc_point_third(" not in src:   # pragma: no cover - a changed routine
        raise InteropError("the C routine of nhcontrol.linearization._cpoint changed its layout; the C "
                           "export cannot include it")
    return src


_CHUNK_HEAD = re.compile(r"^NHC_CHUNK void \w+\((?P<params>[^)]*)\)\n\{\n", re.M)


def _mark_used(src: str) -> str:
    """A generated chunk function with ``(void)arg;`` for each parameter (a chunk reads only
    some of its arguments: no ``-Wunused-parameter`` under ``-Wextra``)."""
    def add(m: re.Match) -> str:
        names = re.findall(r"\*\s*(?:restrict\s+)?(\w+)\s*(?:,|$)", m.group("params"))
        return m.group(0) + "    " + " ".join(f"(void){nm};" for nm in names) + "\n"

    return _CHUNK_HEAD.sub(add, src)


def _point_work(n: int, m: int, l: int, k: int) -> int:
    """``nhc_point_work(dims)`` of the point routine (the same formula; the routine returns 16,
    NHC_WORK_TOO_SMALL, if this were ever too small)."""
    n1, na, c = n - m - l, n - m, m + l
    ns = 2 * n1 + l
    big = max(c, n1)
    return (n * n1 + n * (2 * n + n1 + k) + c * c + 2 * c * (n1 + 3 * n) + n1 * (2 * n + n1 + k)
            + n1 * n + n * na + m * m + 2 * m * (na + n) + 3 * l * na + l * n + 2 * l * ns + l * l
            + n1 * na + n1 * n1 + 3 * n1 * (ns + k) + n1 * n1 + (big + 1) * (big + 1) + 2 * n + 4 * c + 16)


def export_c(model: CompiledModel | MultibodySystem, directory: str | Path, partition: Partition | Mapping[str, Any], *,
             system: MultibodySystem | None = None, force: bool = False,
             write: bool = True) -> Any:
    """Write standalone C99 sources of a model and its one-point third procedure.

    Parameters
    ----------
    model : CompiledModel or MultibodySystem
        The model (a compiled model must have been compiled in this process, or give
        ``system``).
    directory : path-like
        Output directory (created): ``nhc_model.h``, ``nhc_model.c``, ``nhc_check.c``,
        ``Makefile``, ``nhc_model.json`` (names, sizes, partition, parameter defaults), written
        through `nhcontrol._util.staging.write_tree` (a staging folder, then one rename per
        file; a manifest ``.nhcontrol-export.json`` of what was written).
    partition : Partition or mapping
        ``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)) for ``nhc_linearize`` and ``nhc_rhs``.
    system : MultibodySystem, optional
    force : bool, default False
        Overwrite files in ``directory`` that nhcontrol did not write (or that were edited since
        the last export); never a symbolic link.
    write : bool, default True
        False: write nothing and return ``(metadata, {file name: text})`` (the controllers'
        exports add their files to the model's and write them together).

    Returns
    -------
    dict
        The metadata written to ``nhc_model.json`` (``files``, ``n, m, l, k, np, ns``,
        ``work_doubles``, ``iwork``, ``memory_bytes``, names).

    Raises
    ------
    InteropError
        No symbolic model available; first-order states or inputs in the nonholonomic
        constraints (not exported); an expression without C translation.
    PartitionError
        A bad partition.
    ExportError
        ``directory`` is a file or cannot be written, or a symbolic link stands where a file
        goes; `ExportConflictError` (a subclass) when it holds files nhcontrol did not write and
        ``force`` is False. Nothing is written then.
    """
    from ..compiled.ccodegen import CCodegenError, _Function
    from ..compiled.codegen import symbol_names
    from ..compiled.model import _Derivation, _rates
    from ..linearization.first import partition_indices
    from ..linearization.third import INPUT_CONSTRAINT_ATOL
    from ..reference.admissibility import ADMISSIBILITY_TOL
    from .._util.validation import COND_MAX
    from types import SimpleNamespace

    import sympy as sp

    mb = _system_of(model, system)
    if _rates(mb)[0] or getattr(mb, "first_order_states", ()):
        raise InteropError(f"model {mb.name!r} has first-order states; the C export covers mechanical "
                           f"models only (no hydraulic/motor states yet)")
    cin = [s.name for s in mb.inputs if any(s in sp.sympify(c.expr).free_symbols for c in mb.nonholonomic)]
    if cin:
        raise InteropError(f"inputs {cin} of model {mb.name!r} enter its nonholonomic constraints (their "
                           f"rates enter the dynamics); the C export does not cover such models yet")
    der = _Derivation(mb)
    specs, graph, symbols = der.specs
    eom = mb.equations()
    n, m, l, k, npar = eom.n, eom.m, eom.l, len(eom.u), len(eom.p)
    c = m + l
    coords = tuple(s.name for s in eom.x)
    ai, ad, d = partition_indices(SimpleNamespace(coordinates=coords, n=n, m=m, l=l), partition)
    if len(ad) != l:
        raise InteropError(f"the C export needs the three-set partition of Eq. (4.96) with l = {l} "
                           f"admissible dependent coordinates, got {len(ad)}")
    g = len(ai)
    ns = 2 * g + l
    affine = bool(any(c_.affine for c_ in mb.nonholonomic))
    by_name = {s.name: s for s in specs}
    wanted = {"terms": "linearization_terms", "dynamics": "dynamics_terms", "C": "C", "Cx": "Cx",
              "D": "D", "b": "b"}
    if "output_terms" in by_name:      # declared outputs y = h(x, xd, u) and their derivatives
        wanted["outputs"] = "output_terms"
    names, group_of = symbol_names(graph, symbols)
    sizes = {grp: len(s) for grp, s in symbols.items()}
    try:
        funcs = {key: _Function(by_name[sname], graph, names, group_of, sizes, True, der.plans)
                 for key, sname in wanted.items()}
    except CCodegenError as exc:
        raise InteropError(f"model {mb.name!r} has an expression without C translation: {exc}") from exc
    lay_terms = _layout_of(funcs["terms"], by_name["linearization_terms"])
    lay_dyn = _layout_of(funcs["dynamics"], by_name["dynamics_terms"])
    kw = max(f.nwork for f in funcs.values())
    from ..linearization._cpoint import FIELDS, INPUT_CONSTRAINT_FIELDS

    ucons = [f_ for f_ in INPUT_CONSTRAINT_FIELDS if f_ in lay_terms]
    offs = [lay_terms[f_][0] for f_ in FIELDS] + [v for f_ in ucons for v in (lay_terms[f_][0], lay_terms[f_][1])]
    size_terms, size_dyn = funcs["terms"].size, funcs["dynamics"].size
    work_lin = size_terms + max(m, 1) + max(c, 1) + kw + _point_work(n, m, l, k)
    work_rhs = (max(m, 1) + max(funcs["Cx"].size, 1) + max(m * m, 1) + max(funcs["D"].size, 1)
                + max(funcs["b"].size, 1) + max(c * c, 1) + max(c, 1) + size_dyn + (n + c) ** 2 + (n + c)
                + kw + 2 * n + 8)
    work_acc = size_dyn + (n + c) ** 2 + (n + c) + kw
    work_jac = 3 * n + c + ns + 8 + max(work_lin, work_rhs, work_acc)
    work = work_jac
    iwork = n + c + 1

    params = [s.name for s in eom.p]
    defaults = [float(mb.defaults[p_]) for p_ in params]
    vel = [s.name for s in eom.xd]
    states = [coords[i] for i in ai] + [vel[i] for i in ai] + [coords[i] for i in ad]
    meta = {"model": mb.name, "n": n, "m": m, "l": l, "k": k, "np": npar, "ns": ns,
            "coordinates": list(coords), "velocities": vel, "inputs": [s.name for s in eom.u],
            "parameters": params, "parameter_defaults": defaults, "states": states,
            "partition": {"independent": [coords[i] for i in ai],
                          "admissible_dependent": [coords[i] for i in ad],
                          "dependent": [coords[i] for i in d]},
            "work_doubles": work, "iwork": iwork, "memory_bytes": 8 * (work + iwork),
            "work_parts": {"linearize": work_lin, "rhs": work_rhs, "accelerations": work_acc,
                           "jacobian": work_jac},
            "admissibility_tol": ADMISSIBILITY_TOL, "cond_max": COND_MAX,
            "status_codes": dict(STATUS_CODES),
            "files": ["nhc_model.h", "nhc_model.c", "nhc_check.c", "Makefile", "nhc_model.json"],
            "outputs": list(mb.outputs) if "outputs" in funcs else [],
            "ny": (_layout_of(funcs["outputs"], by_name["output_terms"])["h"][1]
                   if "outputs" in funcs else 0)}

    _check_meta_names(meta)
    lay_out = _layout_of(funcs["outputs"], by_name["output_terms"]) if "outputs" in funcs else {}
    header = _header(meta, funcs, lay_terms, lay_dyn, kw, affine, INPUT_CONSTRAINT_ATOL, lay_out)
    body = _body(meta, funcs, ai, ad, d, offs, len(ucons), affine, kw)
    files = {"nhc_model.h": header, "nhc_model.c": body, "nhc_check.c": _CHECK,
             "Makefile": _MAKEFILE.format(flags=C_FLAGS), "nhc_model.json": json.dumps(meta, indent=1)}
    for fname, text in files.items():
        if not text.isascii():   # pragma: no cover - every user text goes through source_text
            raise InteropError(f"internal: generated {fname} is not ASCII")
    if not write:
        return meta, files
    write_files(directory, files, force=force, what="export_c")
    return meta


def write_files(directory: str | Path, files: Mapping[str, str], *, force: bool = False,
                what: str = "export") -> dict:
    """Write the generated files ``{name: text}`` of one export into ``directory`` through the
    one writer of user folders (`nhcontrol._util.staging.write_tree`: staging folder, no
    symbolic links followed, no file overwritten that nhcontrol did not write unless
    ``force``, a manifest)."""
    from .._util.staging import write_tree

    return write_tree(directory, dict(files), force=force, what=what)


def _check_meta_names(meta: dict) -> None:
    """Defence in depth: the names printed into the sources are identifiers (the modeling layer
    refuses others where they are declared; a model built elsewhere cannot slip through)."""
    from .._util.names import check_name

    check_name(meta["model"], "model", error=InteropError)
    for kind, key in (("coordinate", "coordinates"), ("velocity", "velocities"), ("input", "inputs"),
                      ("parameter", "parameters"), ("state", "states")):
        for nm in meta[key]:
            check_name(nm, kind, model=meta["model"], error=InteropError)


def _c_double(v: float) -> str:
    """A finite double as a C literal (``repr`` round-trips; non-finite values are refused)."""
    v = float(v)
    if not np.isfinite(v):
        raise InteropError(f"a parameter default is {v}; the C export needs finite defaults")
    return repr(v)


def _c_list(vals: Any, fmt: str = "{}") -> str:
    vals = list(vals)
    return ", ".join(fmt.format(v) for v in vals) if vals else "0"


def _header(meta: dict, funcs: dict, lay_terms: dict, lay_dyn: dict, kw: int, affine: bool,
            atol_u: float, lay_out: dict | None = None) -> str:
    n, m, l, k, npar, ns = (meta[s] for s in ("n", "m", "l", "k", "np", "ns"))
    from .._util.names import source_text

    lines = [f"/* Standalone C99 export of the nhcontrol model '{source_text(meta['model'])}'. Generated by nhcontrol; do not edit.",
             " *",
             " * Coordinates x (NHC_N): " + source_text(", ".join(meta["coordinates"])),
             " * Inputs u (NHC_K):      " + (source_text(", ".join(meta["inputs"])) or "(none)"),
             " * Parameters p (NHC_NP): " + source_text(", ".join(meta["parameters"])),
             " * Minimal state X (NHC_NS) = [x_ai, xd_ai, x_ad]: " + source_text(", ".join(meta["states"])),
             " * Multipliers lam: NHC_C = m + l entries (holonomic first, then nonholonomic).",
             " * Matrices are row-major.",
             " *",
             f" * Memory: every function takes a caller-owned workspace of NHC_WORK = {meta['work_doubles']} doubles",
             f" * and NHC_IWORK = {meta['iwork']} int64_t ({meta['memory_bytes']} bytes in all); none allocates or",
             " * uses global or static mutable state (reentrant). Stack use is a few hundred bytes per call",
             " * plus the locals of one generated chunk function (at most ~150 doubles).",
             " */",
             "#ifndef NHC_MODEL_H", "#define NHC_MODEL_H", "#include <stdint.h>", "",
             f"#define NHC_N {n}", f"#define NHC_M {m}", f"#define NHC_L {l}", f"#define NHC_C {m + l}",
             f"#define NHC_K {k}", f"#define NHC_NP {npar}", f"#define NHC_NS {ns}",
             f"#define NHC_WORK {meta['work_doubles']}", f"#define NHC_IWORK {meta['iwork']}",
             f"#define NHC_WORK_LINEARIZE {meta['work_parts']['linearize']}",
             f"#define NHC_WORK_RHS {meta['work_parts']['rhs']}",
             f"#define NHC_WORK_ACCELERATIONS {meta['work_parts']['accelerations']}",
             f"#define NHC_KERNEL_WORK {kw}",
             f"#define NHC_ADMISSIBILITY_TOL {meta['admissibility_tol']!r}",
             f"#define NHC_COND_MAX {meta['cond_max']!r}",
             f"#define NHC_INPUT_CONSTRAINT_ATOL {atol_u!r}",
             f"#define NHC_AFFINE {1 if affine else 0}", ""]
    lines.append("/* return codes (flags; a sum when several apply) */")
    for key, val in STATUS_CODES.items():
        lines.append(f"#define {key} {val}")
    lines.append("")
    lines.append(f"/* output buffer of nhc_terms: NHC_TERMS_SIZE doubles; field F at NHC_TERMS_<F> (row-major) */")
    lines.append(f"#define NHC_TERMS_SIZE {funcs['terms'].size}")
    for name, (off, size, shape) in lay_terms.items():
        lines.append(f"#define NHC_TERMS_{name} {off}   /* {'x'.join(map(str, shape)) or 'scalar'} */")
    lines.append(f"#define NHC_DYNAMICS_SIZE {funcs['dynamics'].size}")
    for name, (off, size, shape) in lay_dyn.items():
        lines.append(f"#define NHC_DYNAMICS_{name} {off}   /* {'x'.join(map(str, shape))} */")
    for key in ("C", "Cx", "D", "b"):
        lines.append(f"#define NHC_{key.upper()}_SIZE {funcs[key].size}")
    if "outputs" in funcs:
        lines.append(f"/* declared outputs y = h(x, xd, u): NHC_NY = {meta['ny']} values; nhc_output_terms writes h and")
        lines.append("   its partial derivatives (row-major) at NHC_OUTPUTS_<F> of NHC_OUTPUTS_SIZE doubles */")
        lines.append(f"#define NHC_NY {meta['ny']}")
        lines.append(f"#define NHC_OUTPUTS_SIZE {funcs['outputs'].size}")
        for name, (off, size, shape) in lay_out.items():
            lines.append(f"#define NHC_OUTPUTS_{name} {off}   /* {'x'.join(map(str, shape)) or 'scalar'} */")
        lines.append("int nhc_output_terms(const double *x, const double *xd, const double *u, const double *p,")
        lines.append("                     double *out, double *work);")
    lines += ["",
              "/* the parameter defaults of the model */",
              "void nhc_default_parameters(double p[NHC_NP]);",
              "",
              "/* kernels: out is written in full (NHC_*_SIZE doubles); NHC_DOMAIN when an entry is not finite */",
              "int nhc_terms(const double *x, const double *xd, const double *xdd, const double *lam,",
              "              const double *u, const double *p, double *out, double *work);",
              "int nhc_dynamics(const double *x, const double *xd, const double *u, const double *p,",
              "                 double *out, double *work);",
              "int nhc_C(const double *x, const double *u, const double *p, double *out, double *work);",
              "int nhc_Cx(const double *x, const double *u, const double *p, double *out, double *work);",
              "int nhc_D(const double *x, const double *u, const double *p, double *out, double *work);",
              "int nhc_b(const double *x, const double *u, const double *p, double *out, double *work);",
              "",
              "/* Steps 1-7 of the third procedure at (x, xd, xdd, lam, u, p): A (NHC_NS x NHC_NS), B (NHC_NS x NHC_K).",
              "   check != 0: the reference admissibility check (relative tolerance tol) and the conditioning",
              "   pre-check (cond_max) run first; NHC_NOT_ADMISSIBLE / NHC_ILL_CONDITIONED / NHC_SINGULAR /",
              "   NHC_INPUTS_IN_CONSTRAINTS as in nhcontrol.linearize (which then explains in Python). */",
              "int nhc_linearize(const double *x, const double *xd, const double *xdd, const double *lam,",
              "                  const double *u, const double *p, int check, double tol, double cond_max,",
              "                  double *A, double *B, double *work, int64_t nwork, int64_t *iwork);",
              "",
              "/* index-1 accelerations and multipliers, Eq. (2.127) */",
              "int nhc_accelerations(const double *x, const double *xd, const double *u, const double *p,",
              "                      double *xdd, double *lam, double *work, int64_t nwork, int64_t *iwork);",
              "",
              "/* minimal-state right-hand side Xdot = f(X, u, p); x_guess (NHC_N) starts the Newton iteration",
              "   for x_d; x and xd (NHC_N each) receive the full coordinates and velocities */",
              "int nhc_rhs(const double *X, const double *u, const double *p, const double *x_guess,",
              "            double *Xdot, double *x, double *xd, double *work, int64_t nwork, int64_t *iwork);",
              "",
              "/* Xdot = f(X, u, p) and its exact Jacobians A = df/dX, B = df/du (the third procedure at the",
              "   motion through X: nhc_rhs, nhc_accelerations, nhc_linearize with its checks) */",
              "int nhc_jacobian(const double *X, const double *u, const double *p, const double *x_guess,",
              "                 double *Xdot, double *A, double *B, double *work, int64_t nwork, int64_t *iwork);",
              "", "#endif", ""]
    return "\n".join(lines)


def _kernel_wrapper(cname: str, f: Any) -> str:
    from ..compiled.ccodegen import _ARG_C

    sig = ", ".join(f"const double *{_ARG_C[a]}" for a in f.args)
    call = ", ".join(_ARG_C[a] for a in f.args)
    chunks = "\n".join(f"    nhc_{f.name}_{ci}({call}, work, out);" for ci in range(len(f.chunks)))
    unused = "\n".join(f"    (void){_ARG_C[a]};" for a in f.args)
    return f"""int {cname}({sig}, double *out, double *work)
{{
    int64_t i;
{unused}
    for (i = 0; i < {f.size}; i++) out[i] = 0.0;
{chunks}
    return nhc_finite(out, {f.size}) ? NHC_OK : NHC_DOMAIN;
}}"""


def _body(meta: dict, funcs: dict, ai: list, ad: list, d: list, offs: list, nucons: int,
          affine: bool, kw: int) -> str:
    n, m, l, k, ns = (meta[s] for s in ("n", "m", "l", "k", "ns"))
    c = m + l
    g = len(ai)
    dd = list(ad) + list(d)
    from .._util.names import source_text

    parts = [f"/* Standalone C99 export of the nhcontrol model '{source_text(meta['model'])}'. Generated by nhcontrol; do not edit. */",
             "#include <math.h>", "#include <stdint.h>", "#include <string.h>", '#include "nhc_model.h"', "",
             "/* ---- Steps 1-7 at one point: the routine of nhcontrol.linearization._cpoint, verbatim ---- */",
             _point_source(), "",
             "/* ---- the model's kernels (nhcontrol.compiled.ccodegen) ---- */",
             "#define NHC_CHUNK static", ""]
    for f in funcs.values():
        parts += [_mark_used(f.chunk_source(ci)) for ci in range(len(f.chunks))]
    parts.append("")
    parts.append("static int nhc_finite(const double *a, int64_t len)\n{\n    double s = 0.0;\n"
                 "    int64_t i;\n    for (i = 0; i < len; i++) s += a[i] * 0.0;\n    return s == 0.0;\n}\n")
    parts.append("void nhc_default_parameters(double p[NHC_NP])\n{\n"
                 + "".join(f"    p[{i}] = {_c_double(v)};   /* {source_text(nm)} */\n"
                           for i, (nm, v) in enumerate(zip(meta["parameters"], meta["parameter_defaults"])))
                 + ("    (void)p;\n" if not meta["parameters"] else "") + "}\n")
    for key, cname in (("terms", "nhc_terms"), ("dynamics", "nhc_dynamics"), ("C", "nhc_C"), ("Cx", "nhc_Cx"),
                       ("D", "nhc_D"), ("b", "nhc_b"), ("outputs", "nhc_output_terms")):
        if key in funcs:
            parts.append(_kernel_wrapper(cname, funcs[key]))
    ix = list(ai) + list(ad) + list(d)
    Msz, Csz = max(m, 1), max(c, 1)
    parts.append(f"""
int nhc_linearize(const double *x, const double *xd, const double *xdd, const double *lam,
                  const double *u, const double *p, int check, double tol, double cond_max,
                  double *A, double *B, double *work, int64_t nwork, int64_t *iwork)
{{
    const int64_t dims[6] = {{{n}, {m}, {l}, {k}, check ? 1 : 0, {nucons}}};
    const int64_t ix[{max(len(ix), 1)}] = {{{_c_list(ix)}}};
    const int64_t off[{len(offs)}] = {{{_c_list(offs)}}};
    double *T = work, *Cv = T + NHC_TERMS_SIZE, *bv = Cv + {Msz}, *W = bv + {Csz};
    double *PW = W + NHC_KERNEL_WORK;
    int st;
    if (nwork < NHC_WORK_LINEARIZE) return NHC_WORK_TOO_SMALL;
    st = nhc_terms(x, xd, xdd, lam, u, p, T, W);
    if (st) return st;
    if ({m} && check) {{ st = nhc_C(x, u, p, Cv, W); if (st) return st; }}
    if ({1 if affine else 0} && check) {{ st = nhc_b(x, u, p, bv, W); if (st) return st; }}
    st = nhc_point_third(dims, ix, T, off, Cv, ({1 if affine else 0} && check) ? bv : NULL, x, xd, xdd, lam,
                         tol, cond_max, NHC_INPUT_CONSTRAINT_ATOL, A, B, PW, nwork - (int64_t)(PW - work), iwork);
    return st;
}}

/* the saddle-point system [[M, D^T], [D, 0]] [xdd; lam] = [Q; Qd], Eq. (2.127) (LU with partial pivoting) */
static int nhc_solve_index1(const double *dyn, double *xdd, double *lam, double *K, double *r, int64_t *piv)
{{
    const int64_t n = {n}, c = {c}, s = {n + c};
    int64_t i, j;
    const double *M = dyn + NHC_DYNAMICS_M, *Q = dyn + NHC_DYNAMICS_Q;
    const double *D = dyn + NHC_DYNAMICS_D, *Qd = dyn + NHC_DYNAMICS_Qd;
    (void)D; (void)Qd;
    for (i = 0; i < s * s; i++) K[i] = 0.0;
    for (i = 0; i < n; i++) {{
        for (j = 0; j < n; j++) K[i * s + j] = M[i * n + j];
        for (j = 0; j < c; j++) {{ K[i * s + n + j] = D[j * n + i]; K[(n + j) * s + i] = D[j * n + i]; }}
        r[i] = Q[i];
    }}
    for (j = 0; j < c; j++) r[n + j] = Qd[j];
    if (lu(K, s, piv)) return NHC_SINGULAR;
    lu_solve(K, s, piv, r, 1, 1);
    for (i = 0; i < n; i++) xdd[i] = r[i];
    for (j = 0; j < c; j++) lam[j] = r[n + j];
    return (nhc_finite(r, s) ? NHC_OK : NHC_SINGULAR);
}}

/* needs NHC_DYNAMICS_SIZE + (n+c)^2 + (n+c) + NHC_KERNEL_WORK doubles of work */
static int nhc_accel_impl(const double *x, const double *xd, const double *u, const double *p,
                          double *xdd, double *lam, double *work, int64_t *iwork)
{{
    double *dyn = work, *K = dyn + NHC_DYNAMICS_SIZE, *r = K + {(n + c) ** 2}, *W = r + {n + c};
    int st = nhc_dynamics(x, xd, u, p, dyn, W);
    if (st) return st;
    return nhc_solve_index1(dyn, xdd, lam, K, r, iwork);
}}

int nhc_accelerations(const double *x, const double *xd, const double *u, const double *p,
                      double *xdd, double *lam, double *work, int64_t nwork, int64_t *iwork)
{{
    if (nwork < NHC_WORK_ACCELERATIONS) return NHC_WORK_TOO_SMALL;
    return nhc_accel_impl(x, xd, u, p, xdd, lam, work, iwork);
}}

int nhc_rhs(const double *X, const double *u, const double *p, const double *x_guess,
            double *Xdot, double *x, double *xd, double *work, int64_t nwork, int64_t *iwork)
{{
    const int64_t ai[{max(g, 1)}] = {{{_c_list(ai)}}};
    const int64_t ad[{max(l, 1)}] = {{{_c_list(ad)}}};
    const int64_t d[{max(m, 1)}] = {{{_c_list(d)}}};
    const int64_t dd[{max(c, 1)}] = {{{_c_list(dd)}}};
    double *Cv = work, *Cxb = Cv + {Msz}, *Cd = Cxb + {max(funcs['Cx'].size, 1)};
    double *Db = Cd + {max(m * m, 1)}, *bb = Db + {max(funcs['D'].size, 1)};
    double *Ddd = bb + {max(funcs['b'].size, 1)}, *rv = Ddd + {max(c * c, 1)};
    double *lam = rv + {Csz}, *xdd = lam + {Csz}, *W = xdd + {n};
    int64_t i, j, it;
    int st;
    (void)ad; (void)d; (void)dd; (void)ai; (void)u;
    if (nwork < NHC_WORK_RHS) return NHC_WORK_TOO_SMALL;
    for (i = 0; i < {n}; i++) x[i] = x_guess[i];
    for (j = 0; j < {g}; j++) x[ai[j]] = X[j];
    for (j = 0; j < {l}; j++) x[ad[j]] = X[{2 * g} + j];
    /* x_d from C(x) = 0 (Newton) */
    for (it = 0; {m} > 0; it++) {{
        double big = 0.0, step = 0.0, xs = 0.0;
        if (it >= {_NEWTON_ITER}) return NHC_NO_CONVERGENCE;
        st = nhc_C(x, u, p, Cv, W);
        if (st) return st;
        st = nhc_Cx(x, u, p, Cxb, W);
        if (st) return st;
        for (i = 0; i < {m}; i++)
            for (j = 0; j < {m}; j++) Cd[i * {m} + j] = Cxb[i * {n} + d[j]];
        if (lu(Cd, {m}, iwork)) return NHC_SINGULAR;
        for (i = 0; i < {m}; i++) if (fabs(Cv[i]) > big) big = fabs(Cv[i]);
        lu_solve(Cd, {m}, iwork, Cv, 1, 1);
        for (i = 0; i < {m}; i++) {{
            x[d[i]] -= Cv[i];
            if (fabs(Cv[i]) > step) step = fabs(Cv[i]);
        }}
        for (i = 0; i < {n}; i++) if (fabs(x[i]) > xs) xs = fabs(x[i]);
        if (!(step == step)) return NHC_NO_CONVERGENCE;
        if (step <= 1e-15 * (1.0 + xs)) break;
        (void)big;
    }}
    /* dependent velocities from D xd + b = 0 */
    for (i = 0; i < {n}; i++) xd[i] = 0.0;
    for (j = 0; j < {g}; j++) xd[ai[j]] = X[{g} + j];
    if ({c}) {{
        st = nhc_D(x, u, p, Db, W);
        if (st) return st;
        if ({1 if affine else 0}) {{ st = nhc_b(x, u, p, bb, W); if (st) return st; }}
        for (i = 0; i < {c}; i++) {{
            double s = 0.0;
            for (j = 0; j < {g}; j++) s += Db[i * {n} + ai[j]] * X[{g} + j];
            rv[i] = {"s + bb[i]" if affine else "s"};
            for (j = 0; j < {c}; j++) Ddd[i * {c} + j] = Db[i * {n} + dd[j]];
        }}
        if (lu(Ddd, {c}, iwork)) return NHC_SINGULAR;
        lu_solve(Ddd, {c}, iwork, rv, 1, 1);
        for (i = 0; i < {c}; i++) xd[dd[i]] = -rv[i];
    }}
    st = nhc_accel_impl(x, xd, u, p, xdd, lam, W, iwork);
    if (st) return st;
    for (j = 0; j < {g}; j++) {{ Xdot[j] = xd[ai[j]]; Xdot[{g} + j] = xdd[ai[j]]; }}
    for (j = 0; j < {l}; j++) Xdot[{2 * g} + j] = xd[ad[j]];
    return nhc_finite(Xdot, {ns}) ? NHC_OK : NHC_DOMAIN;
}}

int nhc_jacobian(const double *X, const double *u, const double *p, const double *x_guess,
                 double *Xdot, double *A, double *B, double *work, int64_t nwork, int64_t *iwork)
{{
    double *x = work, *xd = x + {n}, *xdd = xd + {n}, *lam = xdd + {n}, *W = lam + {Csz};
    int64_t nW = nwork - (int64_t)(W - work);
    int st;
    if (nwork < NHC_WORK) return NHC_WORK_TOO_SMALL;
    st = nhc_rhs(X, u, p, x_guess, Xdot, x, xd, W, nW, iwork);
    if (st) return st;
    st = nhc_accelerations(x, xd, u, p, xdd, lam, W, nW, iwork);
    if (st) return st;
    return nhc_linearize(x, xd, xdd, lam, u, p, 1, NHC_ADMISSIBILITY_TOL, NHC_COND_MAX, A, B, W, nW, iwork);
}}
""")
    return "\n".join(parts)


_MAKEFILE = """# Builds the standalone check program of the exported model (system C compiler).
CC ?= cc
CFLAGS ?= {flags}

nhc_check: nhc_check.c nhc_model.c nhc_model.h
\t$(CC) $(CFLAGS) -o nhc_check nhc_check.c nhc_model.c -lm

# the model as a shared library (e.g. for ctypes or another language's FFI)
libnhc_model.so: nhc_model.c nhc_model.h
\t$(CC) $(CFLAGS) -fPIC -shared -o libnhc_model.so nhc_model.c -lm

clean:
\trm -f nhc_check libnhc_model.so

.PHONY: clean
"""

_CHECK = r'''/* Reads one JSON object {"x": [...], "xd": [...], "xdd": [...], "lam": [...], "u": [...], "p": [...]}
 * on stdin ("u" and "p" optional: zeros and the model defaults), linearizes with nhc_linearize
 * (admissibility and conditioning checks on, the default tolerances) and prints
 * {"A": [[...]], "B": [[...]], "status": code} on stdout. Generated by nhcontrol. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nhc_model.h"

#define NHC_INPUT_MAX 1048576

/* the numbers of the list after "key": in text into out (at most cap); count or -1 */
static int read_list(const char *text, const char *key, double *out, int cap)
{
    char pat[32];
    const char *s;
    int cnt = 0;
    snprintf(pat, sizeof pat, "\"%s\"", key);
    s = strstr(text, pat);
    if (!s) return -1;
    s = strchr(s + strlen(pat), '[');
    if (!s) return -1;
    s++;
    for (;;) {
        char *end;
        double v;
        while (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t' || *s == ',') s++;
        if (*s == ']') return cnt;
        v = strtod(s, &end);
        if (end == s) return -1;
        if (cnt >= cap) return -1;
        out[cnt++] = v;
        s = end;
    }
}

static void print_matrix(const double *a, int r, int c)
{
    int i, j;
    printf("[");
    for (i = 0; i < r; i++) {
        printf("%s[", i ? ", " : "");
        for (j = 0; j < c; j++) printf("%s%.17g", j ? ", " : "", a[i * c + j]);
        printf("]");
    }
    printf("]");
}

int main(void)
{
    static char text[NHC_INPUT_MAX];
    static double work[NHC_WORK];
    static int64_t iwork[NHC_IWORK];
    double x[NHC_N], xd[NHC_N], xdd[NHC_N], lam[NHC_C + 1], u[NHC_K + 1], p[NHC_NP + 1];
    double A[NHC_NS * NHC_NS + 1], B[NHC_NS * NHC_K + 1];
    size_t len = fread(text, 1, NHC_INPUT_MAX - 1, stdin);
    int st, i;
    text[len] = 0;
    memset(u, 0, sizeof u);
    nhc_default_parameters(p);
    if (read_list(text, "x", x, NHC_N) != NHC_N || read_list(text, "xd", xd, NHC_N) != NHC_N
        || read_list(text, "xdd", xdd, NHC_N) != NHC_N || read_list(text, "lam", lam, NHC_C + 1) != NHC_C) {
        fprintf(stderr, "nhc_check: the input needs lists x, xd, xdd (%d numbers each) and lam (%d)\n",
                NHC_N, NHC_C);
        return 2;
    }
    if (strstr(text, "\"u\"") && read_list(text, "u", u, NHC_K + 1) != NHC_K) {
        fprintf(stderr, "nhc_check: u must hold %d numbers\n", NHC_K);
        return 2;
    }
    if (strstr(text, "\"p\"") && read_list(text, "p", p, NHC_NP + 1) != NHC_NP) {
        fprintf(stderr, "nhc_check: p must hold %d numbers\n", NHC_NP);
        return 2;
    }
    st = nhc_linearize(x, xd, xdd, lam, u, p, 1, NHC_ADMISSIBILITY_TOL, NHC_COND_MAX, A, B,
                       work, NHC_WORK, iwork);
    printf("{\"A\": ");
    print_matrix(A, NHC_NS, NHC_NS);
    printf(", \"B\": ");
    print_matrix(B, NHC_NS, NHC_K);
    printf(", \"status\": %d}\n", st);
    (void)i;
    return st ? 1 : 0;
}
'''


def export_lqr_c(result: Any, directory: str | Path, name: str = "lqr", *, force: bool = False) -> dict:
    """Write the gain tables of a (finite-horizon) LQR as C99 (`LQRResult.export_c`).

    ``<name>.h`` / ``<name>.c`` hold the gains ``K`` (read-only tables, ``static const``) and

    * ``int <name>_gain(long step, double K[k*n])`` — the gain of a step (row-major);
    * ``int <name>_control(long step, const double dx[n], double u[k])`` — ``u = −K_step dx``
      (the deviation from the reference, in the states of the design);

    both return 0, or 1 for a step outside ``[0, N)`` (an infinite-horizon gain serves every step).

    Parameters
    ----------
    result : LQRResult
    directory : path-like
    name : str
        C identifier prefix and file stem (an identifier, `nhcontrol._util.names`).
    force : bool, default False
        Overwrite files nhcontrol did not write (see `export_c`).

    Returns
    -------
    dict
        ``{"files", "horizon", "nstates", "ninputs", "table_bytes"}``.
    """
    K = np.asarray(result.K, dtype=float)
    if not np.all(np.isfinite(K)):
        raise InteropError("the LQR gains are not all finite; nothing to export")
    from .._util.names import check_name

    check_name(name, "C prefix (export_lqr_c name=)", error=InteropError)
    N = result.horizon
    Ks = K[None] if N is None else K
    steps, kk, nn = Ks.shape
    rows = ",\n".join("    {" + ", ".join(repr(float(v)) for v in Ks[i].ravel()) + "}" for i in range(steps))
    guard = name.upper() + "_H"
    h = f"""/* Gain tables of an LQR designed with nhcontrol ({'finite horizon N = ' + str(N) if N is not None else 'infinite horizon'}).
 * u = -K_step dx, dx the state deviation (n = {nn}), u (k = {kk}). Generated by nhcontrol; do not edit.
 * Memory: {steps * kk * nn * 8} bytes of read-only tables; no allocation, no mutable state. */
#ifndef {guard}
#define {guard}
#define {name.upper()}_STEPS {steps}
#define {name.upper()}_N {nn}
#define {name.upper()}_K {kk}
int {name}_gain(long step, double *K);
int {name}_control(long step, const double *dx, double *u);
#endif
"""
    sel = "0" if N is None else "step"
    range_check = "" if N is None else f"    if (step < 0 || step >= {steps}) return 1;\n"
    c = f"""/* Gain tables of an LQR designed with nhcontrol. Generated by nhcontrol; do not edit. */
#include "{name}.h"

static const double {name}_table[{steps}][{kk * nn}] = {{
{rows}
}};

int {name}_gain(long step, double *K)
{{
    long i;
{range_check}    for (i = 0; i < {kk * nn}; i++) K[i] = {name}_table[{sel}][i];
    (void)step;
    return 0;
}}

int {name}_control(long step, const double *dx, double *u)
{{
    long i, j;
{range_check}    for (i = 0; i < {kk}; i++) {{
        double s = 0.0;
        for (j = 0; j < {nn}; j++) s += {name}_table[{sel}][i * {nn} + j] * dx[j];
        u[i] = -s;
    }}
    (void)step;
    return 0;
}}
"""
    from .._util.staging import write_tree

    write_tree(directory, {f"{name}.h": h, f"{name}.c": c}, force=force, what="export_lqr_c")
    return {"files": [f"{name}.h", f"{name}.c"], "horizon": N, "nstates": nn, "ninputs": kk,
            "table_bytes": steps * kk * nn * 8}


def resolve_model(spec: str, inputs: Any = None) -> tuple[Any, Any]:
    """The model named on the command line (``nhcontrol export-c MODEL``) and its module.

    ``spec`` is a catalogue name (a module of ``nhcontrol.models`` with a ``build()`` function,
    e.g. ``benchmark_bicycle``) or ``package.module:function`` (a function without arguments that
    returns a `MultibodySystem`, a compiled model, or an object with a ``system`` attribute).
    ``inputs`` (catalogue models) is passed to ``build(inputs=...)``.

    Returns
    -------
    (model, module)

    Raises
    ------
    InteropError
        Unknown module or function, or a function that returns something else.
    """
    import importlib

    if ":" in spec:
        modname, func = spec.split(":", 1)
    else:
        modname, func = f"nhcontrol.models.{spec}", "build"
    try:
        module = importlib.import_module(modname)
    except ImportError as exc:
        from .. import models

        known = sorted(n for n in dir(models) if not n.startswith("_") and n[0].islower())
        raise InteropError(f"no model {spec!r}: {exc}. Give a catalogue name (one of the modules of "
                           f"nhcontrol.models, e.g. benchmark_bicycle, sleigh) or package.module:function"
                           + (f"; the catalogue has {known}" if known else "")) from exc
    fn = getattr(module, func, None)
    if not callable(fn):
        raise InteropError(f"{modname} has no function {func!r}")
    if inputs is not None:
        inputs = [str(s) for s in inputs]
        if not inputs:
            raise InteropError("--inputs names no actuator; give comma-separated names, e.g. "
                               "--inputs T_phi,T_delta, or leave --inputs out")
        import inspect

        try:
            takes = "inputs" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            takes = True
        if not takes:
            raise InteropError(f"--inputs {','.join(inputs)!r}: {modname}.{func}() takes no inputs= "
                               f"(model {spec!r} has fixed actuators); leave --inputs out")
    try:
        model = fn(inputs=tuple(inputs)) if inputs else fn()
    except TypeError as exc:
        raise InteropError(f"{modname}.{func}() cannot be called as needed ({exc}); give a function "
                           f"without required arguments (package.module:function)") from exc
    from ..compiled import CompiledModel
    from ..modeling import MultibodySystem

    if not isinstance(model, (MultibodySystem, CompiledModel)) and not isinstance(
            getattr(model, "system", None), MultibodySystem):
        raise InteropError(f"{modname}.{func}() returned a {type(model).__name__}, not a model; give a "
                           f"function that returns a MultibodySystem or a compiled model")
    return model, module


def resolve_partition(spec: str | None, module: Any) -> Any:
    """The partition of ``--partition``: a name in the model's module (e.g. ``PARTITION_4_172``),
    or ``independent=a,b;admissible_dependent=c;dependent=d`` (``ai=``/``ad=``/``d=`` too); None
    takes the module's ``PARTITION`` or its only ``PARTITION*`` constant."""
    if spec is None:
        cands = sorted(n for n in dir(module) if n.startswith("PARTITION"))
        if "PARTITION" in cands:
            return getattr(module, "PARTITION")
        if len(cands) == 1:
            return getattr(module, cands[0])
        raise InteropError("give --partition: a partition constant of the model's module "
                           f"({cands or 'none'}) or independent=a,b;admissible_dependent=c;dependent=d")
    if "=" not in spec:
        if not hasattr(module, spec):
            raise InteropError(f"the model's module {module.__name__} has no partition {spec!r}; "
                               f"it has {sorted(n for n in dir(module) if n.startswith('PARTITION'))}")
        return getattr(module, spec)
    keys = {"ai": "independent", "independent": "independent", "ad": "admissible_dependent",
            "admissible_dependent": "admissible_dependent", "d": "dependent", "dependent": "dependent"}
    out: dict[str, list[str]] = {"independent": [], "admissible_dependent": [], "dependent": []}
    for part in filter(None, (p_.strip() for p_ in spec.split(";"))):
        key, _, names = part.partition("=")
        if key.strip() not in keys:
            raise InteropError(f"--partition: unknown set {key.strip()!r}; use independent=, "
                               f"admissible_dependent=, dependent= (or ai=, ad=, d=)")
        out[keys[key.strip()]] = [s.strip() for s in names.split(",") if s.strip()]
    return out
