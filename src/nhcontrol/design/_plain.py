"""The regulation target of a controller built on a plain linear system (``reference=None``).

python-control's controllers regulate the state of a linear system to zero, or track a desired
state ``x_d(t)`` and input ``u_d(t)``. [`TVLQRController`][nhcontrol.design.TVLQRController] and
[`MPCController`][nhcontrol.design.MPCController] do the same when given ``reference=None``: the
controller then reads the system's own state ``x`` (not the multibody ``[x; ẋ]``), acts on
``δx = x − x_ref(t)`` and commands ``u = u_ref(t) + δu`` (``x_ref``, ``u_ref`` default to zero).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import DesignError

__all__ = ["PlainReference", "plain_reference"]


class PlainReference:
    """``x_ref(t)`` (n,) and ``u_ref(t)`` (k,) of a plain linear system, zero by default.

    ``u(t)`` accepts an array of times (returns ``(N, k)``), as a `Reference` does.
    """

    def __init__(self, nstates: int, ninputs: int, x_ref: Callable[[float], ArrayLike] | None = None,
                 u_ref: Callable[[float], ArrayLike] | None = None,
                 states: Sequence[str] = (), inputs: Sequence[str] = ()) -> None:
        for nm, f in (("x_ref", x_ref), ("u_ref", u_ref)):
            if f is not None and not callable(f):
                raise DesignError(f"{nm} must be a callable of t (the desired {nm[0]}(t)), got "
                                  f"{type(f).__name__}; a constant c is lambda t: c")
        self.nstates, self.ninputs = int(nstates), int(ninputs)
        self.x_ref, self.u_ref = x_ref, u_ref
        self.states = tuple(states) or tuple(f"x[{i}]" for i in range(self.nstates))
        self.inputs = tuple(inputs) or tuple(f"u[{j}]" for j in range(self.ninputs))

    coordinates: tuple[str, ...] = ()

    def _eval(self, f: Any, t: float, size: int, name: str) -> NDArray[np.float64]:
        if f is None:
            return np.zeros(size)
        v = np.asarray(f(float(t)), dtype=float).reshape(-1)
        if v.shape != (size,):
            raise DesignError(f"{name}(t) must return {size} values, got shape {v.shape} at t = {t:.6g}")
        if not np.all(np.isfinite(v)):
            raise DesignError(f"{name}(t) is not finite at t = {t:.6g}: {v.tolist()}")
        return v

    def x(self, t: ArrayLike) -> NDArray[np.float64]:
        tt = np.asarray(t, dtype=float)
        if tt.ndim == 0:
            return self._eval(self.x_ref, float(tt), self.nstates, "x_ref")
        return np.array([self._eval(self.x_ref, ti, self.nstates, "x_ref") for ti in tt.ravel()])

    def u(self, t: ArrayLike) -> NDArray[np.float64]:
        tt = np.asarray(t, dtype=float)
        if tt.ndim == 0:
            return self._eval(self.u_ref, float(tt), self.ninputs, "u_ref")
        return np.array([self._eval(self.u_ref, ti, self.ninputs, "u_ref") for ti in tt.ravel()]
                        ).reshape(tt.shape + (self.ninputs,))

    def __repr__(self) -> str:
        what = [nm for nm, f in (("x_ref", self.x_ref), ("u_ref", self.u_ref)) if f is not None]
        return f"PlainReference({'regulation to zero' if not what else ', '.join(what)})"


def plain_reference(reference: Any, nstates: int, ninputs: int, x_ref: Any, u_ref: Any,
                    states: Sequence[str] | None, inputs: Sequence[str] | None) -> Any:
    """``reference`` itself, or a `PlainReference` when it is ``None``."""
    if reference is not None:
        if u_ref is not None:
            raise DesignError("u_ref= is the feed-forward of a plain linear system (reference=None); "
                              "with a Reference the feed-forward is its u0(t)")
        return reference
    return PlainReference(nstates, ninputs, x_ref, u_ref, states or (), inputs or ())


def model_names(model: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """State and input names of a DiscreteLTV, LTVSystem or StateSpace (empty if none)."""
    st = getattr(model, "state_labels", None) or getattr(model, "states", None) or ()
    ins = getattr(model, "input_labels", None) or getattr(model, "inputs", None) or ()
    return (tuple(st) if not isinstance(st, str) else (), tuple(ins) if not isinstance(ins, str) else ())
