"""Shape-normalising evaluation of the kernels of a ``CompiledModel``.

The compiled kernels (contract section 2) accept one point ``(n,)`` or ``N`` stacked points
``(N, n)``. This module wraps them so that the reference and simulation code always sees stacked
arrays with explicit trailing shapes, including the corner cases ``m = 0`` (no holonomic
constraint), ``l = 0`` and ``k = 0`` (no inputs), where a kernel may return an empty array in any
convenient shape. Only the kernel methods of the contract are used (duck typing), so any object
with the same methods works (the tests use small hand-written models).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol._util.validation import as_float_array, check_finite, require_model

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["ModelEvaluator", "param_vector", "constraint_names"]


def param_vector(cm: CompiledModel, p: ArrayLike | Mapping[str, float] | None) -> NDArray[np.float64]:
    """Return the parameter vector ``p`` for ``cm`` (defaults, overrides mapping or full vector).

    Parameters
    ----------
    cm : CompiledModel
        The model; ``cm.parameters`` maps names to defaults (kernel order).
    p : (np,) array_like, mapping name -> float, or None
        ``None`` gives the defaults, a mapping overrides some of them (``cm.param_vector``),
        an array is used as is (its length is checked).

    Returns
    -------
    (np,) ndarray
    """
    if p is None:
        return np.array(cm.param_vector(), dtype=float)
    if isinstance(p, Mapping):
        return np.array(cm.param_vector(**dict(p)), dtype=float)
    names = tuple(getattr(cm, "parameters", {}) or ())
    arr = as_float_array(p, "p (parameter vector)", ndim=1, error=ModelError)
    if names and arr.shape[0] != len(names):
        raise ModelError(f"p (parameter vector) of model {getattr(cm, 'name', '?')!r} must have "
                         f"{len(names)} entries in the order {list(names)}, got {arr.shape[0]}; "
                         "pass p=None for the defaults or a dict of overrides")
    arr = check_finite(arr, "p (parameter vector)", error=ModelError)
    check = getattr(cm, "check_parameters", None)  # masses and inertias the values give the bodies
    return check(arr) if check is not None else arr


def constraint_names(cm: CompiledModel) -> tuple[str, ...]:
    """Names of the ``m + l`` constraints, holonomic first (the row order of ``D``)."""
    hol = tuple(getattr(cm, "holonomic_names", ()) or ())
    nh = tuple(getattr(cm, "nonholonomic_names", ()) or ())
    if len(hol) != cm.m:
        hol = tuple(f"C[{i}]" for i in range(cm.m))
    if len(nh) != cm.l:
        nh = tuple(f"B[{i}]" for i in range(cm.l))
    return hol + nh


class ModelEvaluator:
    """Stacked, shape-checked kernel evaluation for one model and one parameter vector.

    Parameters
    ----------
    cm : CompiledModel
        Model exposing ``M, Q, C, Cx, B, D, Qd`` (contract section 2).
    p : (np,) array_like, mapping or None
        Parameters (see `param_vector()`).

    Notes
    -----
    All methods take stacked arguments ``x (N, n)``, ``xd (N, n)``, ``u (N, k)`` (or ``None``
    when ``k = 0``) and return stacked results with a leading ``N`` axis.
    """

    def __init__(self, cm: CompiledModel, p: ArrayLike | Mapping[str, float] | None = None) -> None:
        require_model(cm, "cm")
        self.cm = cm
        self.n = int(cm.n)
        self.m = int(cm.m)
        self.l = int(cm.l)
        self.k = int(cm.ninputs)
        self.p = param_vector(cm, p)
        self.coordinates = tuple(cm.coordinates)
        self.inputs = tuple(getattr(cm, "inputs", ()) or ())
        if len(self.inputs) != self.k:
            self.inputs = tuple(f"u[{i}]" for i in range(self.k))
        self.constraints = constraint_names(cm)
        self.holonomic = self.constraints[: self.m]
        self.nonholonomic = self.constraints[self.m:]
        self.name = str(getattr(cm, "name", "model"))

    # ------------------------------------------------------------------ argument handling
    def states(self, value: ArrayLike, what: str, *,
               error: type[Exception] = ReferenceMotionError) -> NDArray[np.float64]:
        """Coerce ``value`` to a stacked ``(N, n)`` array (a single ``(n,)`` point gives N = 1)."""
        arr = as_float_array(value, what, error=error)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.n:
            raise error(f"{what} must have shape (n,) or (N, n) with n = {self.n} coordinates "
                        f"{list(self.coordinates)}, got {np.shape(value)}")
        return check_finite(arr, what, error=error)

    def input_stack(self, u: ArrayLike | None, N: int, *,
                    error: type[Exception] = ReferenceMotionError) -> NDArray[np.float64] | None:
        """Return inputs as ``(N, k)`` (or ``None`` for a model without inputs)."""
        if self.k == 0:
            if u is not None and np.size(u) != 0:
                raise error(f"model {self.name!r} has no inputs, but u = {np.asarray(u).tolist()!r} "
                            "was given; pass u=None")
            return None
        if u is None:
            return np.zeros((N, self.k))
        arr = as_float_array(u, "u (inputs)", error=error)
        if arr.ndim == 0 and self.k == 1:
            arr = arr.reshape(1)
        if arr.ndim == 1:
            if arr.shape[0] != self.k:
                raise error(f"u (inputs) must have {self.k} entries {list(self.inputs)}, "
                            f"got shape {arr.shape}")
            arr = np.broadcast_to(arr, (N, self.k))
        if arr.ndim != 2 or arr.shape != (N, self.k):
            raise error(f"u (inputs) must have shape (k,) or (N, k) = ({N}, {self.k}) for the inputs "
                        f"{list(self.inputs)}, got {arr.shape}")
        return check_finite(np.ascontiguousarray(arr), "u (inputs)", error=error)

    # ------------------------------------------------------------------ kernels
    def _call(self, kernel: str, shape: tuple[int, ...], N: int, *args: Any) -> NDArray[np.float64]:
        if 0 in shape:
            return np.zeros((N, *shape))
        fun = getattr(self.cm, kernel)
        res = np.asarray(fun(*args, self.p), dtype=float)
        try:
            return res.reshape((N, *shape))
        except ValueError as exc:  # a broken model, not a user error
            raise ModelError(f"kernel {kernel} of model {self.name!r} returned shape {res.shape}, "
                             f"expected {(N, *shape)}") from exc

    def M(self, x: NDArray, u: NDArray | None) -> NDArray[np.float64]:
        """Mass matrix ``M(x, u)``, ``(N, n, n)`` (Eq. (2.103))."""
        return self._call("M", (self.n, self.n), x.shape[0], x, u)

    def Q(self, x: NDArray, xd: NDArray, u: NDArray | None) -> NDArray[np.float64]:
        """Generalized forces ``Q(x, xd, u) = Qa + Qv``, ``(N, n)`` (Eq. (2.108))."""
        return self._call("Q", (self.n,), x.shape[0], x, xd, u)

    def C(self, x: NDArray, u: NDArray | None) -> NDArray[np.float64]:
        """Holonomic constraints ``C(x, u)``, ``(N, m)`` (Eq. (2.109))."""
        return self._call("C", (self.m,), x.shape[0], x, u)

    def B(self, x: NDArray, u: NDArray | None) -> NDArray[np.float64]:
        """Nonholonomic constraint matrix ``B(x, u)``, ``(N, l, n)`` (Eq. (2.110))."""
        return self._call("B", (self.l, self.n), x.shape[0], x, u)

    def D(self, x: NDArray, u: NDArray | None) -> NDArray[np.float64]:
        """Velocity-constraint matrix ``D = [Cx; B]``, ``(N, m + l, n)`` (Eq. (2.82))."""
        return self._call("D", (self.m + self.l, self.n), x.shape[0], x, u)

    def b(self, x: NDArray, u: NDArray | None) -> NDArray[np.float64]:
        """Velocity-free terms ``b`` (N, m+l) of ``D ẋ + b = 0`` (zeros without affine constraints)."""
        N = x.shape[0]
        if not getattr(self.cm, "affine_names", ()):
            return np.zeros((N, self.m + self.l))
        return self._call("b", (self.m + self.l,), N, x, u)

    def Qd(self, x: NDArray, xd: NDArray, u: NDArray | None,
           ud: NDArray | None = None) -> NDArray[np.float64]:
        """``Qd = -∂(D xd + b)/∂x · xd``, ``(N, m + l)`` (Eq. (2.117)); with input rates ``ud``
        (N, k) and inputs in the nonholonomic constraints, ``Qd − E u̇`` (``E = ∂(D ẋ + b)/∂u``)."""
        Qd = self._call("Qd", (self.m + self.l,), x.shape[0], x, xd, u)
        if ud is None or not self.rate_inputs:
            return Qd
        E = self._call("E", (self.m + self.l, self.k), x.shape[0], x, xd, u)
        return Qd - np.einsum("nij,nj->ni", E, ud)

    @property
    def rate_inputs(self) -> tuple[str, ...]:
        """Inputs that enter the nonholonomic constraints (their rates enter ``Q_d``)."""
        return tuple(getattr(self.cm, "constraint_inputs", ()) or ())


def clock_offset(cm: CompiledModel, t: Any, x: Any) -> tuple[str, float, float] | None:
    """``(clock name, τ, t)`` at the first sample where the clock coordinate of ``cm``
    (`MultibodySystem.add_clock`) differs from the time ``t`` by more than 1e-9 (relative to
    ``max(1, |t|)``), else None (also for models without a clock).

    ``τ(t) = t − t0 + τ(0)`` along every admissible motion, so a clock that does not start at
    ``t0`` runs every rheonomic term ``τ(0) − t0`` seconds off."""
    name = getattr(cm, "clock", None)
    if name is None or name not in tuple(cm.coordinates):
        return None
    i = tuple(cm.coordinates).index(name)
    tt = np.atleast_1d(np.asarray(t, dtype=float))
    X = np.asarray(x, dtype=float).reshape(tt.size, -1)
    off = np.abs(X[:, i] - tt) > 1e-9 * np.maximum(1.0, np.abs(tt))
    if not np.any(off):
        return None
    j = int(np.argmax(off))
    return name, float(X[j, i]), float(tt[j])

