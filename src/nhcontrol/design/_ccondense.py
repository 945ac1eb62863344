"""The condensing recursions of `nhcontrol.design._condensed` in C (one foreign call).

``nhc_condense`` runs the forward prediction recursion ``M_{j+1} = A_j M_j + [B_j | c_j]``,
the backward recursion ``W_l = Q_l M_l + ½[0 | q_{x,l}] + A_lᵀ W_{l+1}``, the Hessian block rows
``2 B_iᵀ W_{i+1}`` (lower triangle, mirrored) with ``2R`` on the diagonal blocks, the gradient
``2 B_iᵀ W_{i+1}[:, Nk]`` and the constant of the free response, touching only the columns
that can be non-zero (``M_l``: ``[0, l k)`` and the last; ``W_l``: the same for the Hessian's
lower triangle), with the inner loops over contiguous columns. ``nhc_costate`` runs the
backward costate recursion ``y_{j−1} = r_j + A_jᵀ y_j`` of the multipliers.

The library is generic (one per cache directory, not per model), compiled with the kernels'
compiler settings (`nhcontrol.compiled.cbackend.compile_library`) at ``-O3`` with the column
loops unrolled under GCC (no contraction, no reassociation: the numbers of ``-O2``; the
condensing of the ball-plate window, N = 20, 7 states, measured 14 µs against 18.6 µs at
``-O2``), stored with a sha256
record and verified before it is opened, like the kernel libraries. When it cannot be built
or loaded (no compiler) the numpy recursions give the same numbers (tested to 1e-12).
"""

from __future__ import annotations

import os
from _thread import allocate_lock as _new_lock
from typing import Any

import numpy as np

from .._util.errors import CacheError

__all__ = ["VERSION", "condense_library"]

VERSION = "q3"
"""Version of the C routine (part of the library's file name and cache key; ``q3``: the same
routine, rebuilt because a background build had compiled ``q2`` at ``-O2``)."""

OPTIMISE = "-O3"
"""The optimisation flag of the library, built ahead (`prebuild`) or on first use alike."""

_CDEF = """
int nhc_condense(const long long *dims, const double *A, const double *B, const double *c,
                 const double *x0, const double *Q, const double *Qf, const double *R,
                 const double *qx, double *M, double *W, double *H, double *g, double *cst);
int nhc_costate(const long long *dims, const double *A, const double *r, double *y);
"""

C_SOURCE = r'''
#include <string.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("unroll-loops")   /* the short column loops (no reassociation: same numbers) */
#endif
#if defined(_WIN32)
#define NHC_API __declspec(dllexport)
#else
#define NHC_API __attribute__((visibility("default")))
#endif

/* dims = {N, n, k, nv, has_c, has_qx}; row-major arrays: A (N, n, n), B (N, n, k), c (N, n),
   x0 (n), Q, Qf (n, n), R (k, k), qx (N+1, n); outputs M (N+1, n, Nk+1), W (N, n, Nk+1)
   (W_l at l-1), H (nv, nv: the leading Nk x Nk block written), g (Nk), cst (1). */
NHC_API int nhc_condense(const long long *dims, const double *A, const double *B,
                         const double *c, const double *x0, const double *Q,
                         const double *Qf, const double *R, const double *qx, double *M,
                         double *W, double *H, double *g, double *cst)
{
    const long long N = dims[0], n = dims[1], k = dims[2], nv = dims[3];
    const int has_c = (int)dims[4], has_qx = (int)dims[5];
    const long long Nk = N * k, C1 = Nk + 1;
    long long j, l, r, q, col, a, b, i;
    memset(M, 0, (size_t)((N + 1) * n * C1) * sizeof(double));
    for (r = 0; r < n; ++r) M[r * C1 + Nk] = x0[r];
    /* forward: M_{j+1} = A_j M_j (columns [0, jk) and Nk) + [B_j in block j | c_j] */
    for (j = 0; j < N; ++j) {
        const double *Aj = A + j * n * n, *Mj = M + j * n * C1;
        double *Mn = M + (j + 1) * n * C1;
        const long long nc = j * k;
        for (r = 0; r < n; ++r) {
            double *row = Mn + r * C1;
            for (q = 0; q < n; ++q) {
                const double arq = Aj[r * n + q];
                const double *src = Mj + q * C1;
                if (arq == 0.0) continue;
                for (col = 0; col < nc; ++col) row[col] += arq * src[col];
                row[Nk] += arq * src[Nk];
            }
            if (has_c) row[Nk] += c[j * n + r];
            for (a = 0; a < k; ++a) row[j * k + a] = B[(j * n + r) * k + a];
        }
    }
    /* backward: W_l = Q_l M_l + 1/2 [0 | qx_l] + A_l^T W_{l+1}, columns [0, lk) and Nk
       (the lower triangle of the Hessian needs no more) */
    memset(W, 0, (size_t)(N * n * C1) * sizeof(double));
    for (l = N; l >= 1; --l) {
        const double *Ql = (l == N) ? Qf : Q, *Ml = M + l * n * C1;
        double *Wl = W + (l - 1) * n * C1;
        const long long nc = l * k;
        for (r = 0; r < n; ++r) {
            double *row = Wl + r * C1;
            for (q = 0; q < n; ++q) {
                const double v = Ql[r * n + q];
                const double *src = Ml + q * C1;
                if (v == 0.0) continue;
                for (col = 0; col < nc; ++col) row[col] += v * src[col];
                row[Nk] += v * src[Nk];
            }
            if (has_qx) row[Nk] += 0.5 * qx[l * n + r];
            if (l < N) {
                const double *Al = A + l * n * n, *Wn = W + l * n * C1;
                for (q = 0; q < n; ++q) {
                    const double v = Al[q * n + r];
                    const double *src = Wn + q * C1;
                    if (v == 0.0) continue;
                    for (col = 0; col < nc; ++col) row[col] += v * src[col];
                    row[Nk] += v * src[Nk];
                }
            }
        }
    }
    /* H block row i = 2 B_i^T W_{i+1} (columns < (i+1)k, mirrored), + 2R; g_i likewise */
    for (i = 0; i < N; ++i) {
        const double *Bi = B + i * n * k, *Wi = W + i * n * C1;
        const long long nc = (i + 1) * k;
        for (a = 0; a < k; ++a) {
            double *hrow = H + (i * k + a) * nv;
            for (col = 0; col < nc; ++col) hrow[col] = 0.0;
            g[i * k + a] = 0.0;
            for (r = 0; r < n; ++r) {
                const double v = 2.0 * Bi[r * k + a];
                const double *src = Wi + r * C1;
                if (v == 0.0) continue;
                for (col = 0; col < nc; ++col) hrow[col] += v * src[col];
                g[i * k + a] += v * src[Nk];
            }
            for (b = 0; b < k; ++b) hrow[i * k + b] += 2.0 * R[a * k + b];
        }
    }
    for (i = 0; i < Nk; ++i)                       /* symmetric: upper from lower */
        for (col = i + 1; col < Nk; ++col) H[i * nv + col] = H[col * nv + i];
    /* cost of the free response */
    {
        double s = 0.0;
        for (j = 0; j <= N; ++j) {
            const double *Qj = (j == N) ? Qf : Q, *xf = M + j * n * C1;
            for (r = 0; r < n; ++r) {
                double t = 0.0;
                for (q = 0; q < n; ++q) t += Qj[r * n + q] * xf[q * C1 + Nk];
                s += xf[r * C1 + Nk] * t;
                if (has_qx) s += qx[j * n + r] * xf[r * C1 + Nk];
            }
        }
        cst[0] = s;
    }
    return 0;
}

/* dims = {N, n}; y_{N-1} = r_{N-1}, y_{j-1} = r_{j-1} + A_j^T y_j (A (N, n, n), r, y (N, n)) */
NHC_API int nhc_costate(const long long *dims, const double *A, const double *r, double *y)
{
    const long long N = dims[0], n = dims[1];
    long long j, a, b;
    for (a = 0; a < n; ++a) y[(N - 1) * n + a] = r[(N - 1) * n + a];
    for (j = N - 1; j >= 1; --j) {
        const double *Aj = A + j * n * n, *yj = y + j * n;
        double *yp = y + (j - 1) * n;
        for (a = 0; a < n; ++a) yp[a] = r[(j - 1) * n + a];
        for (b = 0; b < n; ++b) {
            const double v = yj[b];
            for (a = 0; a < n; ++a) yp[a] += Aj[b * n + a] * v;
        }
    }
    return 0;
}

NHC_API const char nhc_layout[] = NHC_LAYOUT;
'''
"""The routine (``NHC_LAYOUT`` is replaced by the library's layout string)."""

_LOCK = _new_lock()
_LIBS: dict[str, Any] = {}
_KEY: list[str] = []


def _key() -> str:
    if not _KEY:
        from .._util.sha import sha256_hex

        _KEY.append(sha256_hex((VERSION + "\n" + C_SOURCE).encode()))
    return _KEY[0]


def _source() -> str:
    return C_SOURCE.replace("NHC_LAYOUT", _layout_literal())


def _layout_literal() -> str:
    from ..compiled._ffi_tables import routine_layout_literal

    return routine_layout_literal(_key(), VERSION, _CDEF)


def _library_file(directory: str) -> str:
    from ..compiled.cbackend import library_suffix

    return os.path.join(directory, f"nhc_condense_{_key()[:24]}.{VERSION}.{library_suffix()}")


class _Library:
    """The loaded routines ``condense``, ``costate`` and the FFI."""

    def __init__(self, path: str) -> None:
        from ..compiled.cbackend import open_routine

        raw, ffi, lib = open_routine(path, _key(), VERSION)
        self.path, self._raw, self.ffi, self.lib = path, raw, ffi, lib
        self.condense, self.costate = lib.nhc_condense, lib.nhc_costate


def prebuild(directory: str) -> None:
    """Compile the library into ``directory`` (a trusted cache directory) ahead of its first
    use (a cold model build: `nhcontrol.compiled.cbackend.prebuild_routines`), with the flags
    of a build on first use (`OPTIMISE`: one file name, one library, whichever path built it)."""
    from ..compiled.cbackend import prebuild_routine

    prebuild_routine(_library_file(directory), _source, _LOCK, _LIBS, directory,
                     optimise=OPTIMISE, template=C_SOURCE, layout=_layout_literal)


def condense_library(cache_dir: str | os.PathLike | None = None) -> "_Library | None":
    """The compiled condensing routines of the (trusted) cache directory, built on first use;
    None when they cannot be built or loaded (one warning; the numpy recursions then run)."""
    from ..compiled import cache as _cache

    if os.environ.get("NHCONTROL_BACKEND", "").lower() == "python":
        return None
    try:
        directory = _cache.trusted_dir(cache_dir)
    except (CacheError, OSError) as exc:
        _cache.warn_once("backend", "condense", f"the MPC QP is condensed with numpy (same "
                                                f"results, slower): no cache directory ({exc})")
        return None
    with _LOCK:
        if directory in _LIBS:
            return _LIBS[directory]
        from ..compiled.cbackend import load_or_build_routine

        lib = load_or_build_routine(
            _library_file(directory), _Library, _source, what="compiled MPC condensing library",
            fallback="the MPC QP is condensed with numpy (same results, slower)",
            optimise=OPTIMISE)
        _LIBS[directory] = lib
        return lib


def _ptr(ffi: Any, a: np.ndarray) -> Any:
    return ffi.from_buffer("double[]", a)


def as_c(a: Any) -> np.ndarray:
    """A C-contiguous float64 array (no copy when it already is one)."""
    return np.ascontiguousarray(a, dtype=np.float64)
