"""Validation helpers of the MPC's bounds and per-step data (shared by `LTVMPC` and its callers)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import DesignError
from .._util.validation import as_float_array, check_finite

_F64 = np.dtype(np.float64)


def _ready(a: Any, shape: tuple[int, ...]) -> bool:
    """True for a float64 ndarray of ``shape`` whose entries are all finite (their sum is: the
    per-step fast path of `LTVMPC.step`; anything else takes the validating path)."""
    return (type(a) is np.ndarray and a.dtype == _F64 and a.shape == shape
            and math.isfinite(float(np.add.reduce(a, axis=None))))


def _bound(value: ArrayLike | None, name: str, size: int) -> NDArray[np.float64]:
    if value is None:
        return np.full(size, np.inf)
    arr = as_float_array(value, name, error=DesignError)
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise DesignError(f"{name} must be a scalar or have shape ({size},), got {arr.shape}")
    if np.any(np.isnan(arr)):
        raise DesignError(f"{name} contains NaN; use ±inf for an absent bound")
    return arr


def _soft(value: Any, name: str) -> tuple[float, float] | None:
    """``(ρ₁, ρ₂)`` of ``soft_state`` / ``soft_output`` (``True``: ``(1e4, 1e2)``; None: hard)."""
    if value is True:
        return (1e4, 1e2)
    if value is False or value is None:
        return None
    try:
        soft = (float(value[0]), float(value[1]))
    except (TypeError, ValueError, IndexError) as exc:
        raise DesignError(f"{name} must be True, False or a pair (rho1, rho2) of penalties, got "
                          f"{value!r}") from exc
    if not (soft[0] > 0 and soft[1] >= 0 and np.isfinite(soft[0]) and np.isfinite(soft[1])):
        raise DesignError(f"{name} penalties must be finite with rho1 > 0 and rho2 >= 0, got "
                          f"{value!r}")
    return soft


def _output_window(M: Any, name: str, N: int, shape: tuple[int, int]) -> NDArray[np.float64]:
    """``(N, p, q)`` window of output matrices from one ``(p, q)`` or ``(N, p, q)`` array."""
    if _ready(M, (N, *shape)):
        return M                                        # type: ignore[no-any-return]
    arr = as_float_array(M, name, error=DesignError)
    if arr.shape == shape:
        arr = np.broadcast_to(arr, (N, *shape))
    if arr.shape != (N, *shape):
        raise DesignError(f"{name} must have shape {shape} or ({N}, {shape[0]}, {shape[1]}) (one "
                          f"matrix per predicted sample j = 1 … N), got {arr.shape}")
    return check_finite(np.asarray(arr, dtype=float), name, error=DesignError)
