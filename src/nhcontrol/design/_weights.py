"""Validation of the pieces of a design problem: systems, weights, horizons.

Design works on numbers only (``docs/dev/contracts.md``): a discrete LTV system is any object
with ``Ad`` (N, n, n) and ``Bd`` (N, n, k) attributes
([`nhcontrol.systems.DiscreteLTV`][nhcontrol.systems.DiscreteLTV]
is one), or a plain pair ``(Ad, Bd)``. Every problem is reported as a
`DesignError` that states the expected and received shape or
the offending eigenvalue.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import DesignError, DesignTypeError
from .._util.validation import as_float_array, check_finite

PSD_RTOL = 1e-10
"""Relative tolerance for symmetry and semi-definiteness checks of weights: an eigenvalue
``>= -PSD_RTOL * |λ|max`` counts as non-negative (relative to the weight's own scale, so
``Q = 1e-12 I`` is as valid as ``Q = I``).
"""

PD_RTOL = 1e-12
"""An input weight ``R`` (or ``R + Bᵀ P B``) is called positive definite when its smallest eigenvalue
exceeds ``PD_RTOL * |λ|max`` (relative: ``R = 1e-13`` is positive definite, ``R = diag(1, 1e-13)``
is not; ``R = 0`` never is).
"""


def system_arrays(dsys: Any) -> tuple[NDArray[np.float64], NDArray[np.float64], float | None]:
    """Return ``(Ad, Bd, dt)`` with shapes (N, n, n), (N, n, k) from a discrete LTV system.

    Parameters
    ----------
    dsys : DiscreteLTV or tuple of array_like
        An object with attributes ``Ad`` (N, n, n) and ``Bd`` (N, n, k) (and optionally
        ``dt``), or a pair ``(Ad, Bd)``. A pair of 2-D arrays (n, n), (n, k) is one step.
    """
    if hasattr(dsys, "Ad") and hasattr(dsys, "Bd"):
        Ad, Bd, dt = dsys.Ad, dsys.Bd, getattr(dsys, "dt", None)
    elif isinstance(dsys, (tuple, list)) and len(dsys) == 2:
        (Ad, Bd), dt = dsys, None
    else:
        raise DesignTypeError(
            "the system must be a DiscreteLTV (attributes Ad (N, n, n), Bd (N, n, k)) or a "
            f"pair (Ad, Bd) of arrays, got {type(dsys).__name__}; discretize a continuous system "
            "first with nhcontrol.systems.discretize(sys, dt)")
    Ad = as_float_array(Ad, "Ad", error=DesignError)
    Bd = as_float_array(Bd, "Bd", error=DesignError)
    if Ad.ndim == 2:
        Ad = Ad[None]
    if Bd.ndim == 2:
        Bd = Bd[None]
    if Ad.ndim != 3 or Ad.shape[1] != Ad.shape[2]:
        raise DesignError(f"Ad must have shape (N, n, n), got {Ad.shape}")
    N, n, _ = Ad.shape
    if Bd.ndim != 3 or Bd.shape[:2] != (N, n):
        raise DesignError(f"Bd must have shape (N, n, k) = ({N}, {n}, k) to match Ad {Ad.shape}, "
                          f"got {Bd.shape}")
    if Bd.shape[2] == 0:
        raise DesignError("Bd has no input columns (k = 0): there is nothing to design")
    check_finite(Ad, "Ad", error=DesignError)
    check_finite(Bd, "Bd", error=DesignError)
    return Ad, Bd, (None if dt is None else float(dt))


def per_step(value: ArrayLike, name: str, steps: int, rows: int, cols: int) -> NDArray[np.float64]:
    """Broadcast a constant (rows, cols) weight or check a (steps, rows, cols) sequence.

    For a square weight a scalar is that multiple of the identity and a 1-D array of length
    ``rows`` the diagonal.
    """
    arr = as_float_array(value, name, error=DesignError)
    if rows == cols and arr.ndim == 0:
        arr = float(arr) * np.eye(rows)
    elif rows == cols and arr.ndim == 1 and arr.shape[0] == rows:
        arr = np.diag(arr)
    if arr.ndim == 2:
        if arr.shape != (rows, cols):
            raise DesignError(f"{name} must have shape ({rows}, {cols}) or ({steps}, {rows}, {cols}), "
                              f"got {arr.shape}")
        arr = np.broadcast_to(arr, (steps, rows, cols))
    elif arr.ndim == 3:
        if arr.shape != (steps, rows, cols):
            raise DesignError(f"{name} must have shape ({rows}, {cols}) or ({steps}, {rows}, {cols}) "
                              f"(one per step of the horizon N = {steps}), got {arr.shape}")
    elif arr.ndim == 0 and rows == cols == 1:
        arr = np.broadcast_to(arr.reshape(1, 1), (steps, 1, 1))
    else:
        raise DesignError(f"{name} must have shape ({rows}, {cols}) or ({steps}, {rows}, {cols}), "
                          f"got {arr.shape}")
    check_finite(np.asarray(arr), name, error=DesignError)
    return np.asarray(arr, dtype=float)


def check_symmetric(W: NDArray[np.float64], name: str) -> None:
    """Raise if ``W`` (..., r, r) is not symmetric to ``PSD_RTOL`` relative accuracy."""
    asym = np.max(np.abs(W - np.swapaxes(W, -1, -2))) if W.size else 0.0
    scale = float(np.max(np.abs(W))) if W.size else 0.0
    if asym > PSD_RTOL * scale:
        raise DesignError(f"{name} must be symmetric, got max |{name} - {name}ᵀ| = {asym:.3g} "
                          f"(tolerance {PSD_RTOL * scale:.3g}); pass (W + W.T)/2")


def check_psd(W: NDArray[np.float64], name: str, *, definite: bool = False) -> None:
    """Raise `DesignError` if a symmetric weight (or each of a stack) is not PSD / PD.

    The message reports the offending eigenvalue, the step and the tolerance.
    """
    if W.ndim == 3 and W.shape[0] > 0 and W.strides[0] == 0:  # a broadcast constant weight
        W = W[0]
    check_symmetric(W, name)
    stack = W[None] if W.ndim == 2 else W
    for i, Wi in enumerate(stack):
        lam = np.linalg.eigvalsh(0.5 * (Wi + Wi.T))
        scale = float(np.max(np.abs(lam))) if lam.size else 0.0
        where = "" if W.ndim == 2 else f" at step {i}"
        if definite:
            tol = PD_RTOL * scale
            if lam.size and lam[0] <= tol:
                raise DesignError(
                    f"{name} must be positive definite{where}: smallest eigenvalue {lam[0]:.3g} "
                    f"<= tolerance {tol:.3g} = {PD_RTOL:g} * largest eigenvalue (eigenvalues "
                    f"{np.array2string(lam, precision=3)}); give every input a positive weight")
        else:
            tol = -PSD_RTOL * scale
            if lam.size and lam[0] < tol:
                raise DesignError(
                    f"{name} must be positive semi-definite{where}: smallest eigenvalue "
                    f"{lam[0]:.3g} < {tol:.3g} (eigenvalues {np.array2string(lam, precision=3)})")


def check_weights(Q: NDArray[np.float64], R: NDArray[np.float64], S: NDArray[np.float64] | None,
                  Qf: NDArray[np.float64], *, cross: str = "S") -> None:
    """Check ``Q ⪰ 0``, ``R ≻ 0``, ``Qf ⪰ 0`` and, with a cross weight, ``[[Q, S], [Sᵀ, R]] ⪰ 0``
    (``cross`` names the cross weight in the message: ``"N"`` for `lqr()`)."""
    check_psd(Q, "Q")
    check_psd(R, "R", definite=True)
    check_psd(Qf, "Qf")
    if S is not None:
        joint = np.concatenate([np.concatenate([Q, S], axis=-1),
                                np.concatenate([np.swapaxes(S, -1, -2), R], axis=-1)], axis=-2)
        check_psd(joint, f"[[Q, {cross}], [{cross}ᵀ, R]]")


def psd_factor(W: NDArray[np.float64]) -> NDArray[np.float64]:
    """Return ``L`` (r, r) with ``Lᵀ L = W`` for a symmetric PSD ``W`` (eigen-decomposition)."""
    lam, V = np.linalg.eigh(0.5 * (W + W.T))
    lam = np.clip(lam, 0.0, None)
    return (np.sqrt(lam)[:, None] * V.T)
