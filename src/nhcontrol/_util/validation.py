"""The one validation module: array coercion and shape checks with clear messages.

Every public function that takes arrays from a user should pass them through
these helpers, so that messages look alike across the toolbox:
"<what> must have shape (n, n) = (8, 8), got (8, 7)".
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import LinearSystemError

RANK_RTOL = float(np.finfo(float).eps)
"""Default relative tolerance for rank decisions: ``tol = RANK_RTOL * s_max * max(shape)`` unless a
caller overrides it (same convention as ``numpy.linalg.matrix_rank``).
"""

COND_MAX = 1e10
"""Condition number above which a block that must be inverted is called singular."""


def as_float_array(value: ArrayLike, name: str, *, ndim: int | None = None,
                   shape: Sequence[int | None] | None = None,
                   error: type[Exception] = LinearSystemError) -> NDArray[np.float64]:
    """Convert ``value`` to a float64 array and check its dimensions.

    Parameters
    ----------
    value : array_like
        What the user passed.
    name : str
        The user-facing name used in messages, e.g. ``"A(t)"``.
    ndim : int, optional
        Required number of dimensions.
    shape : sequence of int or None, optional
        Required shape; ``None`` entries are free.
    error : exception class
        Raised on failure.

    Returns
    -------
    NDArray[np.float64]
    """
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise error(f"{name} must be a real numeric array, got {type(value).__name__}: {exc}") from exc
    if ndim is not None and arr.ndim != ndim:
        raise error(f"{name} must be a {ndim}-D array, got {arr.ndim}-D with shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            want = "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"
            raise error(f"{name} must have shape {want}, got {arr.shape}")
    return arr


def check_finite(arr: NDArray[np.float64], name: str, *,
                 error: type[Exception] = LinearSystemError, where: str = "") -> NDArray[np.float64]:
    """Raise ``error`` if ``arr`` holds NaN or inf (nothing is silently wrong)."""
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))
        loc = f" {where}" if where else ""
        raise error(f"{name}{loc} contains {len(bad)} non-finite entries (first at index "
                    f"{tuple(int(i) for i in bad[0])}); check the model parameters and the evaluation point")
    return arr


def check_names(names: Iterable[str] | None, count: int, what: str, default_prefix: str,
                *, error: type[Exception] = LinearSystemError) -> tuple[str, ...]:
    """Return ``count`` signal names, generating ``prefix[i]`` when ``names`` is None."""
    if names is None:
        return tuple(f"{default_prefix}[{i}]" for i in range(count))
    if isinstance(names, str):
        names = [names]
    out = tuple(str(s) for s in names)
    if len(out) != count:
        raise error(f"{what} must list {count} names, got {len(out)}: {list(out)}")
    if len(set(out)) != len(out):
        dup = sorted({s for s in out if out.count(s) > 1})
        raise error(f"{what} must be unique, duplicated: {dup}")
    return out


def readonly(arr: NDArray) -> NDArray:
    """Return ``arr`` marked read-only (results are immutable)."""
    arr = np.asarray(arr)
    arr.setflags(write=False)
    return arr
