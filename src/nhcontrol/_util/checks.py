"""Checks at the top of the estimator and controller entry points: no NaN in, no NaN out, times
on the sample grid, sizes bounded before any work starts.

Every function raises the caller's error class with a message that names the argument, the
call, the value and what to do.

* `finite_vector` — a real vector of the expected size whose entries are all finite;
* `sample_time` — a finite time; `grid_index` — the index ``k`` of a time on the grid
  ``t0 + k dt`` (an off-grid time is refused: an estimator or controller that keeps state would
  otherwise apply the same measurement twice, or skip one);
* `covariance` — a symmetric positive (semi)definite matrix, or standard deviations;
* `positive_int`, `positive_real` — settings such as ``sqp_max_iter``, ``sqp_tol``;
* `horizon` — a prediction horizon checked against ``NHCONTROL_MAX_ITERATIONS`` and
  ``NHCONTROL_MAX_BYTES`` before anything is built.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

_F64 = np.dtype(np.float64)

GRID_RTOL = 1e-9
"""Relative tolerance of `grid_index` (times within ``1e-9 max(1, |t|) + 1e-12`` of a sample are
that sample: the round-off of ``t0 + k dt`` summed over many samples)."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def finite_vector(value: ArrayLike, name: str, size: int, *, what: str,
                  error: type[Exception]) -> NDArray[np.float64]:
    """``value`` as a float vector of ``size`` finite entries (a scalar is accepted for size 1).

    The message names ``what`` (the call), ``name`` and the first non-finite entry.
    """
    if (type(value) is np.ndarray and value.dtype == _F64 and value.shape == (size,)
            and math.isfinite(float(np.add.reduce(value)))):
        return value          # the per-sample fast path (a finite sum: every entry is finite)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise error(f"{what}: {name} must be a real vector of {size} numbers, got "
                    f"{type(value).__name__} {_shown(value)}") from exc
    if arr.ndim > 1 and arr.size == size and max(arr.shape) == size:
        arr = arr.reshape(-1)      # a column or row vector
    if arr.ndim == 0 and size == 1:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.shape[0] != size:
        raise error(f"{what}: {name} must have {size} entries, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise error(f"{what}: {name} contains {bad.size} non-finite entr{'y' if bad.size == 1 else 'ies'} "
                    f"({name}[{int(bad[0])}] = {arr[bad[0]]}); pass finite numbers (a missing "
                    f"measurement cannot be NaN: skip the sample or hold the last value)")
    return arr


def sample_time(t: Any, *, what: str, error: type[Exception], name: str = "t") -> float:
    """``t`` as a finite float."""
    try:
        tv = float(t)
    except (TypeError, ValueError) as exc:
        raise error(f"{what}: {name} must be a real time in seconds, got {_shown(t)}") from exc
    if not math.isfinite(tv):
        raise error(f"{what}: {name} = {tv} is not a finite time")
    return tv


def grid_index(t: float, t0: float, dt: float, *, what: str, error: type[Exception]) -> int:
    """The sample index ``k`` with ``t = t0 + k dt``; an off-grid time is refused.

    The rule of every sampled estimator and controller of nhcontrol: they are called at their
    sample times only (``t0 + k dt`` within `GRID_RTOL`). A time between two samples is an
    error, never rounded to the nearest one (rounding applied a measurement twice).
    """
    k = round((t - t0) / dt)
    want = t0 + k * dt
    if abs(t - want) > GRID_RTOL * max(1.0, abs(want)) + 1e-12:
        below, above = t0 + math.floor((t - t0) / dt) * dt, t0 + math.ceil((t - t0) / dt) * dt
        raise error(f"{what} at t = {t:.9g}: not a sample time of this object (t0 = {t0:.9g}, "
                    f"dt = {dt:.9g}; the samples around it are t = {below:.9g} and {above:.9g}); "
                    f"call it once per sample, at t0 + k dt")
    return int(k)


def covariance(value: ArrayLike, r: int, name: str, *, what: str, error: type[Exception],
               definite: bool = False, allow_std: bool = True) -> NDArray[np.float64]:
    """A symmetric positive semidefinite (``definite``: definite) ``(r, r)`` covariance, or
    ``(r,)`` standard deviations (``allow_std``) turned into ``diag(σ²)``."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise error(f"{what}: {name} must be a real ({r}, {r}) covariance, got "
                    f"{type(value).__name__}") from exc
    if allow_std and a.shape == (r,):
        if not np.all(np.isfinite(a)):
            raise error(f"{what}: {name} (standard deviations) holds non-finite entries {a.tolist()}")
        if definite and np.any(a == 0):
            raise error(f"{what}: {name} (standard deviations) must be positive, got {a.tolist()}")
        return np.diag(a ** 2)
    if a.shape != (r, r):
        want = f"({r}, {r}) covariance" + (f" or ({r},) standard deviations" if allow_std else "")
        raise error(f"{what}: {name} must be a {want}, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise error(f"{what}: {name} holds non-finite entries")
    scale = max(float(np.max(np.abs(a))), np.finfo(float).tiny) if a.size else 1.0
    if a.size and float(np.max(np.abs(a - a.T))) > 1e-10 * scale:
        raise error(f"{what}: {name} is not symmetric (largest |{name} - {name}ᵀ| = "
                    f"{float(np.max(np.abs(a - a.T))):.3g}); a covariance is symmetric")
    a = 0.5 * (a + a.T)
    if a.size:
        low = float(np.linalg.eigvalsh(a)[0])
        if low < -1e-12 * scale or (definite and low <= 1e-14 * scale):
            kind = "positive definite" if definite else "positive semidefinite"
            raise error(f"{what}: {name} is not {kind} (smallest eigenvalue {low:.3g}); give a "
                        f"covariance matrix (e.g. diag(σ²) with every σ > 0)")
    return a


def positive_int(value: Any, name: str, *, what: str, error: type[Exception], minimum: int = 1) -> int:
    """An integer >= ``minimum`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise error(f"{what}: {name} must be an integer >= {minimum}, got {_shown(value)}")
    return int(value)


def positive_real(value: Any, name: str, *, what: str, error: type[Exception],
                  allow_zero: bool = False) -> float:
    """A finite real > 0 (``allow_zero``: >= 0)."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise error(f"{what}: {name} must be a positive real number, got {_shown(value)}") from exc
    if not (math.isfinite(v) and (v >= 0 if allow_zero else v > 0)):
        raise error(f"{what}: {name} must be a finite number {'>=' if allow_zero else '>'} 0, got "
                    f"{_shown(value)}")
    return v


def horizon(value: Any, *, n: int, k: int, what: str, error: type[Exception],
            name: str = "horizon", multiple: int = 1, extra_steps: int = 0) -> int:
    """A prediction horizon ``N``: a positive integer whose problem fits the work and memory
    bounds, checked before anything is built.

    The QP of a horizon ``N`` is assembled from per-stage blocks ``A_j, B_j, Q, R`` of
    ``(n + k)²`` numbers (derived here: the sparse QP and the Riccati recursion along the
    horizon touch each block a bounded number of times), so the work is counted as
    ``(multiple N + extra_steps) (n + k)²`` (``multiple``: horizons the object spans, e.g. the
    Riccati schedule's tail of 5 N; ``extra_steps``: the model's own steps) against
    ``NHCONTROL_MAX_ITERATIONS`` and its matrices as 32 bytes per entry (values, indices and
    the solver's factorisation) against ``NHCONTROL_MAX_BYTES``.
    """
    from .memory import check_allocation
    from .work import check_iterations

    N = positive_int(value, name, what=what, error=error)
    steps = multiple * N + max(int(extra_steps), 0)
    size = steps * max(n + k, 1) ** 2
    hint = (f"a prediction horizon covers the dynamics that matter (tens to hundreds of samples); "
            f"choose a shorter {name}, or raise the limit if this is intended")
    check_iterations(size, f"{what}: {name}={N} with n = {n} states and k = {k} inputs "
                     f"({steps:.3g} stages of (n + k)² = {(n + k) ** 2} block entries)",
                     error=error, hint=hint)
    check_allocation(32.0 * size, f"{what}: the problem of {name}={N}", error=error, hint=hint)
    return N


__all__ = ["finite_vector", "sample_time", "grid_index", "covariance", "positive_int",
           "positive_real", "horizon", "GRID_RTOL"]
