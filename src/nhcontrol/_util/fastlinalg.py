"""Dense solves of small systems without numpy's per-call Python wrapper (same LAPACK routine).

``numpy.linalg.solve(a, b)`` for real operands is the gufunc ``_umath_linalg.solve(a, b,
signature="dd->d")`` (LAPACK ``dgesv``) run inside an ``errstate`` that turns a singular matrix
into ``LinAlgError``; that Python wrapper costs about three times the solve of a 10 x 10 system.
:func:`solve` calls the gufunc directly: bit-identical results (the same routine, tested), and a
singular matrix gives inf/NaN entries (invalid flag) instead of an exception, so callers check
the finiteness of what they compute. If a numpy release moves the private module, the public
function is used instead.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as np

__all__ = ["solve", "inv", "DIRECT"]


def _gufunc_solve() -> tuple[Callable[..., Any], bool]:
    try:
        from numpy.linalg import _umath_linalg

        gufunc = _umath_linalg.solve
        probe = gufunc(np.array([[2.0, 0.0], [0.0, 4.0]]), np.ones((2, 1)), signature="dd->d")
        if not np.array_equal(probe, [[0.5], [0.25]]):  # pragma: no cover - defensive
            raise ValueError("unexpected result")
        return partial(gufunc, signature="dd->d"), True
    except Exception:  # pragma: no cover - depends on the numpy release
        return np.linalg.solve, False


#: ``solve(a, b)`` for float64 ``a (..., r, r)``, ``b (..., r, c)``.
solve, DIRECT = _gufunc_solve()


def _gufunc_inv() -> Callable[..., Any]:
    try:
        from numpy.linalg import _umath_linalg

        gufunc = _umath_linalg.inv
        probe = gufunc(np.array([[2.0, 0.0], [0.0, 4.0]]), signature="d->d")
        if not np.array_equal(probe, [[0.5, 0.0], [0.0, 0.25]]):  # pragma: no cover
            raise ValueError("unexpected result")
        return partial(gufunc, signature="d->d")
    except Exception:  # pragma: no cover - depends on the numpy release
        return np.linalg.inv


#: ``inv(a)`` for float64 ``a (..., r, r)`` (LAPACK ``gesv`` against the identity, as
#: ``numpy.linalg.inv``; a singular matrix gives inf/NaN instead of ``LinAlgError``).
inv = _gufunc_inv()
