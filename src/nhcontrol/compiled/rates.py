"""The rate equations of first-order auxiliary states (thesis Eqs. (7.12)-(7.13)) for one point.

A [`MultibodySystem`][nhcontrol.modeling.MultibodySystem] with first-order states ``z``
(``add_first_order_states``, ``set_rates``) has ``ż = H(x, ẋ, z, u)``. The mechanical kernels
see ``z`` as inputs (so ``∂Q/∂z`` is exact in ``dQ_du``); ``H`` and its exact partial
derivatives ``H_x``, ``H_ẋ``, ``H_z``, ``H_u`` (``u``: the other inputs) are one more generated
kernel of the compiled model, ``rate_terms`` (same expression graph, C and Python back-ends,
cache). [`RateKernels`][nhcontrol.compiled.RateKernels] splits the model's input vector into
``z`` and ``u`` around it.
``Piecewise`` expressions (valves, laminar/turbulent blends) evaluate only their active branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import ModelError
from .model import CompiledModel
from .._util.reprs import concise_repr

__all__ = ["RateKernels", "RateJacobians", "compile_rates"]


@dataclass(frozen=True)
class RateJacobians:
    """Exact partial derivatives of ``H`` at one point (Eqs. (7.26), (7.28)).

    Attributes
    ----------
    H_x, H_xd : (r, n) ndarray
    H_z : (r, r) ndarray
    H_u : (r, k_u) ndarray
        With respect to the inputs that are not first-order states.
    """

    __repr__ = concise_repr

    H_x: NDArray[np.float64]
    H_xd: NDArray[np.float64]
    H_z: NDArray[np.float64]
    H_u: NDArray[np.float64]


class RateKernels:
    """``H(x, ẋ, z, u, p)`` and its exact Jacobians for one model (see
    [`compile_rates()`][nhcontrol.compiled.compile_rates]): the kernel ``rate_terms`` of its
    compiled model, with the input vector split into ``z`` and ``u``.

    Attributes
    ----------
    name : str
    model : CompiledModel
        The compiled system whose kernel ``rate_terms`` is evaluated.
    states : tuple of str
        First-order states ``z`` (r).
    inputs : tuple of str
        The other inputs ``u`` (k_u).
    state_index, input_index : tuple of int
        Positions of ``z`` and ``u`` in the model's input vector (the compiled model's ``u``).
    parameters : dict
        Parameter defaults in kernel order.
    """

    def __init__(self, model: CompiledModel) -> None:
        if not model.first_order_states:
            raise ModelError(f"model {model.name!r} has no first-order states; add them with "
                             f"add_first_order_states and set_rates")
        names = list(model.inputs)
        self.model = model
        self.name, self.n = model.name, model.n
        self.states = tuple(model.first_order_states)
        self.inputs = tuple(u for u in names if u not in self.states)
        self.state_index = tuple(names.index(z) for z in self.states)
        self.input_index = tuple(names.index(u) for u in self.inputs)
        self.parameters = dict(model.parameters)
        self._zi, self._ui = list(self.state_index), list(self.input_index)

    def _args(self, x: ArrayLike, xd: ArrayLike, z: ArrayLike, u: ArrayLike | None,
              p: ArrayLike | None) -> tuple:
        z = np.atleast_1d(np.asarray(z, dtype=float)).ravel()
        u = np.zeros(0) if u is None else np.atleast_1d(np.asarray(u, dtype=float)).ravel()
        for arr, size, what in ((z, len(self.states), "z"), (u, len(self.inputs), "u")):
            if arr.size != size:
                raise ModelError(f"rates of model {self.name!r}: {what} must have {size} entries, "
                                 f"got {arr.size}")
        u_all = np.empty(len(self.states) + len(self.inputs))
        u_all[self._zi] = z
        u_all[self._ui] = u
        x = np.asarray(x, dtype=float).ravel()
        xd = np.asarray(xd, dtype=float).ravel()
        p = None if p is None else np.asarray(p, dtype=float).ravel()
        return x, xd, u_all, p

    def split_inputs(self, u_all: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Split a model input vector into ``(z, u)``."""
        u_all = np.atleast_1d(np.asarray(u_all, dtype=float)).ravel()
        return u_all[self._zi], u_all[self._ui]

    def rates(self, x: ArrayLike, xd: ArrayLike, z: ArrayLike, u: ArrayLike | None = None,
              p: ArrayLike | None = None) -> NDArray[np.float64]:
        """``ż = H(x, ẋ, z, u)`` (r,)."""
        return np.array(self.model.rates(*self._args(x, xd, z, u, p)), dtype=float)

    def jacobians(self, x: ArrayLike, xd: ArrayLike, z: ArrayLike, u: ArrayLike | None = None,
                  p: ArrayLike | None = None) -> RateJacobians:
        """Exact ``H_x, H_ẋ, H_z, H_u`` at one point.

        Raises
        ------
        ModelError
            If a derivative is not finite there (e.g. a square root at zero flow).
        """
        return self.jacobians_at(*self._args(x, xd, z, u, p))

    def jacobians_at(self, x: ArrayLike, xd: ArrayLike, u_all: ArrayLike,
                     p: ArrayLike | None = None) -> RateJacobians:
        """Exact ``H_x, H_ẋ, H_z, H_u`` at one point or ``N`` stacked points of the model's
        input vector ``u_all = [z, u]`` (model order; ``(N, k)`` gives a leading ``N`` axis).

        Raises
        ------
        ModelError
            If a derivative is not finite there (e.g. a square root at zero flow).
        """
        t = self.model.rate_terms(x, xd, u_all, p)
        if not (np.isfinite(t.dH_dx).all() and np.isfinite(t.dH_dxd).all() and np.isfinite(t.dH_du).all()):
            raise ModelError(f"the rate Jacobian of model {self.name!r} is not finite at this point "
                             f"(a rate is not differentiable there)")
        return RateJacobians(H_x=t.dH_dx, H_xd=t.dH_dxd, H_z=t.dH_du[..., self._zi],
                             H_u=t.dH_du[..., self._ui])

    def __repr__(self) -> str:
        return f"RateKernels({self.name!r}, z={list(self.states)}, u={list(self.inputs)})"


def compile_rates(system: Any, cache: bool = True, cache_dir: str | Path | None = None,
                  backend: str | None = None) -> RateKernels:
    """The rate equations ``H`` of a system's first-order states and their Jacobians.

    ``H`` and its exact Jacobians are the kernel ``rate_terms`` of the compiled system, so this
    compiles the system (or finds it in this process or in the kernel cache, with the same
    arguments as `MultibodySystem.compile`).

    Parameters
    ----------
    system : MultibodySystem
        With ``add_first_order_states`` and ``set_rates`` for every state.
    cache, cache_dir, backend
        As in [`compile_system()`][nhcontrol.compiled.compile_system].

    Returns
    -------
    RateKernels

    Raises
    ------
    ModelError
        If the system has no first-order states or a state has no rate.
    """
    from .model import compile_system

    states = tuple(system.first_order_states)
    if not states:
        raise ModelError(f"model {system.name!r} has no first-order states; add them with "
                         f"add_first_order_states and set_rates")
    system.rates   # raises for a state without a rate equation
    return RateKernels(compile_system(system, cache=cache, cache_dir=cache_dir, backend=backend))
