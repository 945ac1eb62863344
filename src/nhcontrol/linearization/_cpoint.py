"""Steps 1-7 of the third procedure at one point in compiled code: the fast one-point path of
`nhcontrol.linearization.linearize`.

`nhcontrol.linearization._point.point_procedure` (with `point_suspect` and the one-point
admissibility decision of `nhcontrol.reference.admissibility`) is the reference implementation;
the C routine below computes the same matrices with the same formulas, in the model's
coordinate order, for a model with C kernels: one call of the fused kernel (its flat output
buffer, no views), one call of ``C(x0)`` (and ``b(x0)`` for affine constraints) for the check,
and one call of this routine.

The inverses of ``D_dd``, ``∂C/∂x_d``, ``B̄_ad`` and the solve with ``m0`` use an unblocked LU
factorisation with partial pivoting (the algorithm of LAPACK's ``dgetf2``) written here.
Calling LAPACK instead (scipy's ``dgetrf``/``dgetri``/``dgetrs`` through
``scipy.linalg.cython_lapack`` function pointers) was measured first: the OpenBLAS that scipy
ships synchronises its threads even for 4 x 4 blocks, which made one bicycle point cost
40-270 µs instead of 20 µs on a 2-core machine (numpy's ``inv``, used by the general path,
does not show this). The blocks are small (at most ``m + l`` rows; a few tens for the catalogue
models), where LAPACK's blocked ``dgetrf`` runs its unblocked kernel too.

The routine answers only the common case: models whose inputs do not enter the nonholonomic
constraints (``cm.constraint_inputs`` empty: no input-rate terms; those models take the general
path).  Whenever the reference fails the admissibility check, a block may be ill conditioned
(the pre-check bound reaches ``cond_max``), a block is singular, the result is not finite, or
inputs enter the holonomic constraints, it returns a flag and
`linearize` takes the general path, which repeats the work with numpy and raises or warns
with the full message.  The agreement with the general path is tested for every shipped model
(tests/test_linearize_cpoint.py).

The library is generic (not per model; its C text is `nhcontrol._csrc.point`): compiled into
the package when nhcontrol is installed (``setup.py``), else once per cache directory on first
use, with the kernels' compiler settings (`nhcontrol.compiled.cbackend.compile_library`),
stored with a sha256 record and verified before it is opened, like the kernel libraries.  A
library that cannot be built or loaded gives one warning and the numpy path.
"""

from __future__ import annotations

import os
from _thread import allocate_lock as _new_lock   # threading.Lock, without importing threading
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from pathlib import Path

    from nhcontrol.compiled import CompiledModel

__all__ = ["point_function", "FIELDS", "INPUT_CONSTRAINT_FIELDS", "VERSION"]

from .._csrc.point import C_SOURCE, VERSION

FIELDS = ("M", "Q", "D", "Cx", "B", "Qd", "dMa_dx", "dMa_du", "dDTlam_dx", "dQ_dx", "dQ_dxd",
          "dQ_du", "dDv_dx", "dDa_dx", "dQd_dx", "dQd_dxd", "dCxv_dx", "dBv_dx", "dQd_du",
          "dDa_du", "dC_du")
"""Kernel fields the routine reads, in the order of its offsets array."""

INPUT_CONSTRAINT_FIELDS = ("dC_du", "dDa_du", "dQd_du")
"""Fields whose entries must all be ``<= INPUT_CONSTRAINT_ATOL`` in magnitude (inputs that enter the
constraints are outside Sect. 8.1: the general path carries or warns about them)."""


_LOCK = _new_lock()
_LIBS: dict[str, Any] = {}        # cache directory -> _Library or None (unusable: numpy path)


def _routine() -> Any:
    """The `RoutineLibrary` of the routine: its key, file name, build on first use or ahead
    (`prebuild`) and checked loading."""
    from .._csrc import point
    from ..compiled.cbackend import routine_library

    return routine_library(point, what="compiled linearization library (Steps 1-7)",
                           fallback="nhcontrol linearizes single points with numpy (same results, "
                                    "slower)")


def library_path(directory: str | os.PathLike) -> Path:
    """``<directory>/nhc_point_<key>.<version>.<platform>.so`` (``.dll`` on Windows)."""
    from ..compiled import cache as _cache

    return _cache._path(library_file(os.fspath(directory)))


def library_file(directory: str) -> str:
    """``<directory>/nhc_point_<key>.<version>.<platform>.so`` (``.dll`` on Windows)."""
    return _routine()._file(directory)


class _Library:
    """The loaded routine: ``fn``, ``work(dims)`` and the FFI."""

    def __init__(self, loaded: tuple[str, Any, Any]) -> None:
        self.path, self.ffi, self.lib = loaded
        lib = self.lib
        self.fn, self.fn_n, self.work = lib.nhc_point_third, lib.nhc_point_third_n, lib.nhc_point_work
        self.prepared = lib.nhc_point_prepared
        self.first_order = lib.nhc_point_first_order


def prebuild(directory: str) -> None:
    """Compile the library into ``directory`` ahead of its first use (a cold model build:
    `nhcontrol.compiled.cbackend.prebuild_routines`)."""
    _routine().prebuild(directory)


def _library(directory: str) -> "_Library | None":
    """The routine of the (trusted) cache directory ``directory``, built on first use; None
    when it cannot be built or loaded (one warning; the numpy path then runs). A directory not
    in ``_LIBS`` is looked up afresh (its library opened and checked again)."""
    key = str(directory)
    with _LOCK:
        if key in _LIBS:
            return _LIBS[key]
        loaded = _routine().load(key, fresh=True)
        lib = None if loaded is None else _Library(loaded)
        _LIBS[key] = lib
        return lib


_FUNCS: dict[tuple[int, int], tuple[Any, Any, Any]] = {}


def point_function(cm: CompiledModel, idx: Any, atol_u: float) -> "Callable[..., Any] | None":
    """The compiled one-point linearization of model ``cm`` for partition ``idx``, or None
    (a model without C kernels, or a routine that cannot be built: the numpy path).

    The callable takes ``(x, xd, xdd, lam, u, p, check, tol, cond_max)`` (one point; ``u`` and
    ``p`` may be None) and returns ``(A, B, buffer)`` (``buffer``: the fused kernel's flat
    output, for `CKernels.split`) or None when the general path must decide (see the module
    docstring).  Its attribute ``many`` does the same for stacked points (``x (N, n)`` …).
    """
    ck = getattr(cm, "_ck", None)
    if ck is None or getattr(cm, "_library_path", None) is None or getattr(cm, "constraint_inputs", ()):
        return None     # no C kernels, or inputs in the nonholonomic constraints (input rates)
    hit = _FUNCS.get((id(cm), id(idx)))
    if hit is not None and hit[0] is cm and hit[1] is idx:
        return hit[2]
    lib = _library(os.path.dirname(cm._library_path))
    if lib is None:
        return None
    fn = _make(cm, idx, ck, lib, float(atol_u))
    if len(_FUNCS) > 256:
        _FUNCS.clear()
    _FUNCS[(id(cm), id(idx))] = (cm, idx, fn)
    return fn


def routine_arrays(cm: CompiledModel, idx: Any, ck: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dims, offsets, ix)`` of the routine for model ``cm`` (C kernels ``ck``) and partition
    ``idx``: ``dims = [n, m, l, k, check = 1, number of input-constraint fields]``, the
    offsets of `FIELDS` (then offset, size pairs of `INPUT_CONSTRAINT_FIELDS`) in the fused
    kernel's output, and the permutation ``[ai, ad, d]``."""
    n, m, l, k = int(idx.n), int(idx.m), int(idx.l), int(cm.ninputs)  # noqa: E741
    spec = ck.layout["functions"]["linearization_terms"]
    from ..compiled._layout import LINEARIZATION_FIELDS as names
    at = {nm: int(o[0]) for nm, o in zip(names, spec["outputs"])}
    sizes = {nm: int(o[1]) for nm, o in zip(names, spec["outputs"])}
    ucons = [f for f in INPUT_CONSTRAINT_FIELDS if f in at]
    offs = np.array([at[f] for f in FIELDS] + [v for f in ucons for v in (at[f], sizes[f])],
                    dtype=np.int64)
    ix = np.concatenate([idx.ai, idx.ad, idx.d]).astype(np.int64)
    dims_on = np.array([n, m, l, k, 1, len(ucons)], dtype=np.int64)
    return dims_on, offs, ix


def library_for(cm: CompiledModel) -> "_Library | None":
    """The routine's library for the cache directory of ``cm``'s C kernels, or None (a model
    without C kernels or inputs in its nonholonomic constraints, or a routine that cannot be
    built: the numpy path)."""
    if (getattr(cm, "_ck", None) is None or getattr(cm, "_library_path", None) is None
            or getattr(cm, "constraint_inputs", ())):
        return None
    return _library(os.path.dirname(cm._library_path))


def _make(cm: CompiledModel, idx: Any, ck: Any, lib: _Library, atol_u: float) -> Callable[..., Any]:
    n, m, l, k = int(idx.n), int(idx.m), int(idx.l), int(cm.ninputs)  # noqa: E741
    n1 = n - m - l
    ns = 2 * n1 + l
    c = m + l
    spec = ck.layout["functions"]["linearization_terms"]
    dims_on, offs, ix = routine_arrays(cm, idx, ck)
    dims_off = dims_on.copy()
    dims_off[4] = 0
    ffi = lib.ffi
    fb = ffi.from_buffer
    i64 = ffi.typeof("int64_t[]")
    dbl = ffi.typeof("double[]")
    c_on, c_off, c_ix, c_offs = fb(i64, dims_on), fb(i64, dims_off), fb(i64, ix), fb(i64, offs)
    keep = (dims_on, dims_off, ix, offs)            # the buffers behind the cdata above
    nwork = int(lib.work(c_on))
    raw_terms = ck.raw["linearization_terms"]
    raw_C = ck.raw.get("C") if m else None
    raw_b = ck.raw.get("b") if getattr(cm, "affine_names", ()) else None
    p0 = np.ascontiguousarray(cm._p0)
    u0 = np.zeros(k)
    psize = p0.shape[0]
    empty = np.zeros(1)
    null = ffi.NULL
    from . import _cspecial

    # the routine specialised to the model and partition (_cspecial.py) when its library is
    # in the cache; else the generic one until SPECIALISE_AFTER points have gone through this
    # function, then it is built in the background and swapped in when it is there (a call
    # never waits for a compiler; both give the same numbers)
    sp = _cspecial.routine(cm, idx, ck, build=False)
    cur = [(lib.fn, lib.fn_n, None) if sp is None else (sp.third, sp.third_n, null),
           sp is not None, 0]                  # routines (one tuple), specialised tried, points

    def swap(got: Any) -> None:
        cur[0] = (got.third, got.third_n, null)      # one assignment: a call reads one tuple

    def count(N: int) -> None:
        cur[2] += N
        if not cur[1] and cur[2] >= SPECIALISE_AFTER:
            cur[1] = True
            _cspecial.routine_soon(cm, idx, ck, swap)

    import threading

    local = threading.local()        # per-thread work arrays of the routine (reused)
    from ..compiled.cbackend import FloatingPointFlags

    def run(x: np.ndarray, xd: np.ndarray, xdd: np.ndarray, lam: np.ndarray, u: Any, p: Any,
            check: bool, tol: float, cond_max: float, trusted: bool = False) -> tuple | None:
        """``trusted``: ``x, xd, xdd, lam, u`` are float64 vectors of the model's sizes (as
        `linearize` makes them); only their contiguity is left to ``from_buffer``."""
        if p is None:
            p = p0
        elif not (type(p) is np.ndarray and p.ndim == 1 and p.dtype == np.float64
                  and p.shape[0] == psize):
            return None
        if u is None:
            u = u0
        if not trusted:
            for a, size in ((x, n), (xd, n), (xdd, n), (lam, c), (u, k)):
                if not (type(a) is np.ndarray and a.shape == (size,) and a.dtype == np.float64):
                    return None
        try:        # ValueError: an argument that is not contiguous (from_buffer)
            buf = raw_terms(x, xd, xdd, lam, u, p)
            Cv = raw_C(x, u, p) if (check and raw_C is not None) else empty
            bv = raw_b(x, u, p) if (check and raw_b is not None) else None
            A = np.empty((ns, ns))
            B = np.empty((ns, k))
            fn, _, work_arg = cur[0]
            try:
                c_W, c_piv = local.work
            except AttributeError:      # first call in this thread: its own work arrays
                W, piv = np.empty(nwork), np.empty(n + 1, dtype=np.int64)
                local.work = c_W, c_piv = fb(dbl, W), fb(i64, piv)
                local.keep = (W, piv)
            flags = fn(c_on if check else c_off, c_ix, fb(dbl, buf), c_offs, fb(dbl, Cv),
                       null if bv is None else fb(dbl, bv), fb(dbl, x), fb(dbl, xd), fb(dbl, xdd),
                       fb(dbl, lam), tol, cond_max, atol_u, fb(dbl, A), fb(dbl, B),
                       c_W if work_arg is None else work_arg, nwork, c_piv)
        except (FloatingPointFlags, ValueError):
            return None
        if flags:
            return None
        if not cur[1]:
            count(1)
        return A, B, buf

    raw_terms_n = ck.raw_many["linearization_terms"]
    # the N-point kernel called directly (cbackend.CKernels: N, then argument, row stride pairs,
    # then the output) when its arguments are those of the raw call
    direct = list(spec["args"]) == ["x", "xd", "xdd", "lam", "u", "p"]
    # the blocked (vectorized) N-point entry when the processor runs it: the same numbers
    kern_name = ("nhc_linearization_terms_b" if (getattr(ck, "simd", False) and spec.get("block"))
                 else "nhc_linearization_terms_n")
    kern_n = getattr(ck._lib, kern_name)
    kfb, kdbl = ck._ffi.from_buffer, ck._ffi.typeof("double[]")
    raw_C_n = ck.raw_many.get("C") if m else None
    raw_b_n = ck.raw_many.get("b") if getattr(cm, "affine_names", ()) else None
    size = int(spec["size"])
    sizeC = int(ck.layout["functions"]["C"]["size"]) if raw_C_n is not None else 0
    sizeb = int(ck.layout["functions"]["b"]["size"]) if raw_b_n is not None else 0
    u0row = np.zeros((1, k))
    p0row = p0[None]
    empty2 = np.zeros((1, 1))
    contiguous = np.ascontiguousarray

    def run_n(x: np.ndarray, xd: np.ndarray, xdd: np.ndarray, lam: np.ndarray, u: Any, p: Any,
              check: bool, tol: float, cond_max: float) -> tuple | None:
        """``N`` stacked points (``x (N, n)`` …, ``u (N, k)`` or None, ``p`` None, ``(P,)`` or
        ``(N, P)``) in blocks of `BLOCK` points: ``(A (N, ns, ns), B (N, ns, k), buffer of the
        first point)`` or None."""
        N = x.shape[0]
        if p is None:
            p = p0row
        elif type(p) is np.ndarray and p.dtype == np.float64 and p.shape == (psize,):
            p = p[None]
        elif not (type(p) is np.ndarray and p.dtype == np.float64 and p.shape == (N, psize)):
            return None
        for a, size_ in ((x, n), (xd, n), (xdd, n), (lam, c)):
            if not (type(a) is np.ndarray and a.shape == (N, size_) and a.dtype == np.float64):
                return None
        if u is not None and not (type(u) is np.ndarray and u.shape == (N, k)):
            return None
        fn_n = cur[0][1]
        A = np.empty((N, ns, ns))
        B = np.empty((N, ns, k))
        W = np.empty(nwork)
        piv = np.empty(n + 1, dtype=np.int64)
        c_W, c_piv = fb(dbl, W), fb(i64, piv)
        first = None
        # one zeroed kernel buffer for all blocks: the kernel writes the same entries (its
        # structural non-zeros) at every point, the others stay zero (a fresh 1 MB buffer per
        # block cost its zeroing and page faults)
        kbuf = np.zeros((min(N, BLOCK), size))
        c_kbuf = kfb(kdbl, kbuf)
        for s in range(0, N, BLOCK):
            e = min(N, s + BLOCK)
            nb = e - s
            xs, xds, xdds = contiguous(x[s:e]), contiguous(xd[s:e]), contiguous(xdd[s:e])
            lams = contiguous(lam[s:e])
            us = u0row if u is None else contiguous(u[s:e], dtype=np.float64)
            ps = p if p.shape[0] == 1 else contiguous(p[s:e])
            try:
                if nb and not direct:
                    kbuf[:nb] = raw_terms_n(xs, xds, xdds, lams, us, ps, nb)
                elif nb:
                    rows = (xs, xds, xdds, lams, us, ps)
                    strided = [v for a in rows for v in (kfb(kdbl, a), a.shape[1] if a.shape[0] > 1 else 0)]
                    if kern_n(nb, *strided, c_kbuf):
                        raise MemoryError("the C kernel could not allocate its work array")
                buf = kbuf[:nb]
                Cv = raw_C_n(xs, us, ps, nb) if (check and raw_C_n is not None) else empty2
                bv = raw_b_n(xs, us, ps, nb) if (check and raw_b_n is not None) else None
            except MemoryError:
                return None
            if not np.isfinite(buf).all():       # outside the model's domain: the general
                return None                      # path names the point
            flags = fn_n(nb, c_on if check else c_off, c_ix, fb(dbl, buf), size, c_offs,
                         fb(dbl, Cv), sizeC if Cv is not empty2 else 0,
                         null if bv is None else fb(dbl, bv), sizeb, fb(dbl, xs), fb(dbl, xds),
                         fb(dbl, xdds), n, fb(dbl, lams), c, tol, cond_max, atol_u,
                         fb(dbl, A[s:e]), fb(dbl, B[s:e]), c_W, nwork, c_piv)
            if flags:
                return None
            if first is None:
                first = buf[0].copy()
        if not cur[1]:
            count(N)
        return A, B, first

    run.__dict__["_keep"] = keep
    run.__dict__["nstates"] = ns
    run.__dict__["c"] = c
    run.__dict__["many"] = run_n
    run.__dict__["kernel_n"] = kern_name if direct else "raw_many"
    return run


SPECIALISE_AFTER = 1000
"""Points a compiled one-point function of `linearize` runs with the generic routine before it
builds the routine specialised to its model and partition (`_cspecial`; about 0.1-1.5 s of
compiling, once per model and partition, in a background thread on two cores or more, the
generic routine serving meanwhile: `_cspecial.routine_soon`; the prepared linearizer builds it
after as many calls, or at once when a call is bound with `Linearizer.bind`)."""

BLOCK = 128
"""Points per kernel call of the stacked compiled path (the kernel output of a block, ~0.3 MB for
the bicycle, stays in the cache; see docs/theory/linearization.md, "Stacks in blocks")."""
