"""Validation of the user's names, weights and bounds (one place, messages in the user's names)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import OptimizationError

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

Array = NDArray[np.float64]


def effort_matrix(effort: Any, inputs: Sequence[str]) -> Array:
    """``R (k, k)`` of a number, a vector, a matrix or a mapping ``{input: weight}``."""
    k = len(inputs)
    if effort is None:
        return np.zeros((k, k))
    if isinstance(effort, Mapping):
        bad = sorted(set(effort) - set(inputs))
        if bad:
            raise OptimizationError(f"effort names unknown inputs {bad}; the model's inputs are {list(inputs)}")
        R = np.zeros((k, k))
        for name, w in effort.items():
            R[inputs.index(name), inputs.index(name)] = float(w)
    else:
        a = np.asarray(effort, dtype=float)
        if a.ndim == 0:
            R = float(a) * np.eye(k)
        elif a.shape == (k,):
            R = np.diag(a)
        elif a.shape == (k, k):
            R = 0.5 * (a + a.T)
        else:
            raise OptimizationError(f"effort must be a number, {k} weights, a ({k}, {k}) matrix or "
                                    f"{{input: weight}} for the inputs {list(inputs)}, got shape {a.shape}")
    if not np.all(np.isfinite(R)) or np.min(np.linalg.eigvalsh(R)) < -1e-12 * max(1.0, np.max(np.abs(R))):
        raise OptimizationError(f"effort R must be finite and positive semidefinite, got eigenvalues "
                                f"{np.linalg.eigvalsh(R).tolist()}")
    return R


def bounds_of(spec: Mapping[str, Any] | None, names: Sequence[str], what: str) -> dict[str, tuple[float, float]]:
    """``{name: (lo, hi)}`` with ``None`` for an open side, names checked against `names`."""
    out: dict[str, tuple[float, float]] = {}
    if spec is None:
        return out
    if not isinstance(spec, Mapping):
        raise OptimizationError(f"{what} must be a mapping {{name: (lower, upper)}}, got {type(spec).__name__}")
    bad = sorted(set(spec) - set(names))
    if bad:
        raise OptimizationError(f"{what} names unknown {bad}; valid names: {list(names)}")
    for name, pair in spec.items():
        try:
            lo, hi = pair
        except (TypeError, ValueError):
            raise OptimizationError(f"{what}[{name!r}] must be a pair (lower, upper) with None for "
                                    f"an open side, got {pair!r}") from None
        lo = -math.inf if lo is None else float(lo)
        hi = math.inf if hi is None else float(hi)
        if math.isnan(lo) or math.isnan(hi) or lo > hi:
            raise OptimizationError(f"{what}[{name!r}] = ({lo}, {hi}): the lower bound must not "
                                    f"exceed the upper one")
        out[name] = (lo, hi)
    return out


def point_values(spec: Mapping[str, float] | None, names: Sequence[str], what: str) -> dict[str, float]:
    """``{name: value}`` of an initial or final condition."""
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise OptimizationError(f"{what} must be a mapping {{coordinate, velocity or input name: value}}, "
                                f"got {type(spec).__name__}")
    bad = sorted(set(spec) - set(names))
    if bad:
        raise OptimizationError(f"{what} names unknown {bad}; use coordinate, velocity and input "
                                f"names of the model: {list(names)}")
    out = {}
    for name, v in spec.items():
        v = float(v)
        if not math.isfinite(v):
            raise OptimizationError(f"{what}[{name!r}] must be finite, got {v}")
        out[name] = v
    return out


def final_time(t_final: Any) -> tuple[float, float]:
    """``(lo, hi)`` of a fixed final time (``lo == hi``) or a free one."""
    if np.ndim(t_final) == 0:
        T = float(t_final)
        lo = hi = T
    else:
        try:
            lo, hi = (float(v) for v in t_final)
        except (TypeError, ValueError):
            raise OptimizationError(f"t_final must be a number or a pair (lower, upper) for a free "
                                    f"final time, got {t_final!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and 0.0 < lo <= hi):
        raise OptimizationError(f"t_final must be positive and finite (lower ≤ upper), got {t_final!r}")
    return lo, hi


def parameter_vector(cm: CompiledModel, p: ArrayLike | Mapping[str, float] | None) -> Array:
    """The model's parameter vector: defaults, a mapping of overrides or a full vector (the
    reference stage's rule, `nhcontrol.reference._eval.param_vector`, with its checks)."""
    from ..reference._eval import param_vector

    return param_vector(cm, p)
