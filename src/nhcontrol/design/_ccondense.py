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

from .._csrc.condense import C_SOURCE, OPTIMISE, STEM, VERSION
from .._csrc.condense import CDEF as _CDEF

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


def library_file(directory: str) -> str:
    from ..compiled.cbackend import library_suffix

    return os.path.join(directory, f"{STEM}_{_key()[:24]}.{VERSION}.{library_suffix()}")


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

    prebuild_routine(library_file(directory), _source, _LOCK, _LIBS, directory,
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
            library_file(directory), _Library, _source, what="compiled MPC condensing library",
            fallback="the MPC QP is condensed with numpy (same results, slower)",
            optimise=OPTIMISE)
        _LIBS[directory] = lib
        return lib


def _ptr(ffi: Any, a: np.ndarray) -> Any:
    return ffi.from_buffer("double[]", a)


def as_c(a: Any) -> np.ndarray:
    """A C-contiguous float64 array (no copy when it already is one)."""
    return np.ascontiguousarray(a, dtype=np.float64)
