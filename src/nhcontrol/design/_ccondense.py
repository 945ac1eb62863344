"""The condensing recursions of `nhcontrol.design._condensed` in C (one foreign call).

``nhc_condense`` runs the forward prediction recursion ``M_{j+1} = A_j M_j + [B_j | c_j]``,
the backward recursion ``W_l = Q_l M_l + ½[0 | q_{x,l}] + A_lᵀ W_{l+1}``, the Hessian block rows
``2 B_iᵀ W_{i+1}`` (lower triangle, mirrored) with ``2R`` on the diagonal blocks, the gradient
``2 B_iᵀ W_{i+1}[:, Nk]`` and the constant of the free response, touching only the columns
that can be non-zero (``M_l``: ``[0, l k)`` and the last; ``W_l``: the same for the Hessian's
lower triangle), with the inner loops over contiguous columns. ``nhc_costate`` runs the
backward costate recursion ``y_{j−1} = r_j + A_jᵀ y_j`` of the multipliers.

The library is generic (not per model; its C text is `nhcontrol._csrc.condense`), compiled
into the package when nhcontrol is installed (``setup.py``), else once per cache directory on
first use, with the kernels' compiler settings (`nhcontrol.compiled.cbackend.compile_library`)
at ``-O3`` with the column loops unrolled under GCC (no contraction, no reassociation: the
numbers of ``-O2``; the condensing of the ball-plate window, N = 20, 7 states, measured 14 µs
against 18.6 µs at ``-O2``), stored with a sha256 record and verified before it is opened,
like the kernel libraries. When it cannot be built or loaded (no compiler) the numpy
recursions give the same numbers (tested to 1e-12).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .._csrc.condense import C_SOURCE, VERSION  # noqa: F401 (C_SOURCE: read by the tests)

__all__ = ["VERSION", "condense_library"]

_LIBS: dict[str, "_Library"] = {}        # library path -> the loaded routines


def _routine() -> Any:
    """The `RoutineLibrary` of the condensing routines: its key, file name, build on first
    use or ahead (`prebuild`) and checked loading."""
    from .._csrc import condense
    from ..compiled.cbackend import routine_library

    return routine_library(condense, what="compiled MPC condensing library",
                           fallback="the MPC QP is condensed with numpy (same results, slower)")


def library_file(directory: str) -> str:
    """The library's file in the cache directory ``directory``."""
    return _routine()._file(directory)


class _Library:
    """The loaded routines ``condense``, ``costate`` and the FFI."""

    def __init__(self, loaded: tuple[str, Any, Any]) -> None:
        self.path, self.ffi, self.lib = loaded
        self.condense, self.costate = self.lib.nhc_condense, self.lib.nhc_costate


def prebuild(directory: str) -> None:
    """Compile the library into ``directory`` (a trusted cache directory) ahead of its first
    use (a cold model build: `nhcontrol.compiled.cbackend.prebuild_routines`), with the flags
    of a build on first use (`nhcontrol._csrc.condense.OPTIMISE`: one file name, one library, whichever path built it)."""
    _routine().prebuild(directory)


def condense_library(cache_dir: str | os.PathLike | None = None) -> "_Library | None":
    """The compiled condensing routines of the (trusted) cache directory, built on first use;
    None when they cannot be built or loaded (one warning; the numpy recursions then run)."""
    loaded = _routine().load(cache_dir)
    if loaded is None:
        return None
    hit = _LIBS.get(loaded[0])
    if hit is None:
        hit = _LIBS[loaded[0]] = _Library(loaded)
    return hit


def as_c(a: Any) -> np.ndarray:
    """A C-contiguous float64 array (no copy when it already is one)."""
    return np.ascontiguousarray(a, dtype=np.float64)
