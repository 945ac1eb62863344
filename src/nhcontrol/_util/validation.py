"""The one validation module: array coercion and shape checks with clear messages.

Every public function that takes arrays from a user should pass them through
these helpers, so that messages look alike across the toolbox:
"<what> must have shape (n, n) = (8, 8), got (8, 7)".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from .errors import ArgumentTypeError, LinearSystemError

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike, NDArray


RANK_RTOL = float(np.finfo(float).eps)
"""Default relative tolerance for rank decisions: ``tol = RANK_RTOL * s_max * max(shape)`` unless a
caller overrides it (same convention as ``numpy.linalg.matrix_rank``).
"""

COND_MAX = 1e10
"""Condition number above which a block that must be inverted is called singular."""

ADMISSIBILITY_TOL = 1e-8
"""Default relative tolerance of the admissibility check (closed-form references), exported as
`nhcontrol.reference.ADMISSIBILITY_TOL`; defined here so that the prepared linearizer's default
needs no import of the reference stage."""

INPUT_CONSTRAINT_ATOL = 1e-12
"""Absolute tolerance above which inputs are said to enter the holonomic constraints at the
reference (``∂C/∂u`` non-zero; for a model without the ``input_rate_terms`` kernel also
``∂(D ẍ0)/∂u`` or ``∂Q_d/∂u``). Their terms are not carried (quasi-static inputs in ``C(x, u)``),
so the input matrix then misses terms; inputs in the nonholonomic constraints are carried.
Exported as `nhcontrol.linearization.third.INPUT_CONSTRAINT_ATOL`; defined here so that the
prepared linearizer needs no import of the general path."""


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


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def as_times(value: ArrayLike, name: str = "t", *,
             error: type[Exception] = LinearSystemError) -> NDArray[np.float64]:
    """``value`` as a scalar or 1-D float array of times; messages name ``name``.

    A value that is not real numbers (a string, ``None``, a complex number) raises ``error``
    with the argument's name and what was given, never numpy's bare conversion message.
    """
    if isinstance(value, (str, bytes)) or value is None:
        raise error(f"{name} must be a time in seconds (a real number) or a 1-D array of times, "
                    f"got {type(value).__name__} {_shown(value)}")
    try:
        arr = np.asarray(value)
        if np.iscomplexobj(arr):
            raise TypeError("complex values")
        arr = arr.astype(float)
    except (TypeError, ValueError) as exc:
        raise error(f"{name} must be a time in seconds (a real number) or a 1-D array of times, "
                    f"got {type(value).__name__} {_shown(value)} ({exc})") from None
    if arr.ndim > 1:
        raise error(f"{name} must be a scalar or a 1-D array of times, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise error(f"{name} must be finite, got {_shown(value)}")
    return arr


def as_real(value: object, name: str, *, error: type[Exception] = LinearSystemError) -> float:
    """``value`` as one real ``float``; messages name ``name`` (finiteness is the caller's)."""
    if isinstance(value, (str, bytes)) or value is None or isinstance(value, complex):
        raise error(f"{name} must be a real number, got {type(value).__name__} {_shown(value)}")
    try:
        arr = np.asarray(value)
        if arr.size != 1 or np.iscomplexobj(arr):
            raise TypeError(f"shape {arr.shape}" if arr.size != 1 else "complex value")
        return float(arr.reshape(()))
    except (TypeError, ValueError) as exc:
        raise error(f"{name} must be a real number, got {type(value).__name__} {_shown(value)} "
                    f"({exc})") from None


MODEL_ATTRIBUTES = ("n", "m", "l", "ninputs", "coordinates", "M", "Q", "D", "Qd")
"""What a compiled model must provide (the kernel contract); checked by `require_model()`."""

REFERENCE_ATTRIBUTES = ("x", "xd", "xdd", "lam", "u")
"""What a reference motion must provide; checked by `require_reference()`."""


def require_model(cm: object, name: str = "cm", where: str = "",
                  needs: tuple[str, ...] = ()) -> None:
    """Raise `ArgumentTypeError` unless ``cm`` has the kernel interface of a model
    (`MODEL_ATTRIBUTES` and the extra attributes ``needs``)."""
    missing = [a for a in MODEL_ATTRIBUTES + tuple(needs) if not hasattr(cm, a)]
    if missing:
        raise ArgumentTypeError(
            f"{where + ': ' if where else ''}{name} must be a CompiledModel (from "
            f"MultibodySystem.compile() or a catalogue model such as "
            f"nhcontrol.models.benchmark_bicycle.model()), got {type(cm).__name__} "
            f"{_shown(cm)} (missing {missing[:4]})")


def require_reference(ref: object, name: str = "ref", where: str = "") -> None:
    """Raise `ArgumentTypeError` unless ``ref`` is a reference motion."""
    bad = [a for a in REFERENCE_ATTRIBUTES if not callable(getattr(ref, a, None))]
    if bad:
        raise ArgumentTypeError(
            f"{where + ': ' if where else ''}{name} must be a nhcontrol.reference.Reference "
            f"(e.g. Reference.constant_velocity(cm, x0, xd0) or a catalogue motion such as "
            f"benchmark_bicycle.steady_forward(cm, v)), got {type(ref).__name__} {_shown(ref)}")


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
