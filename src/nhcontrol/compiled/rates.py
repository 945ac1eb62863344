"""Numeric kernels of the rate equations of first-order auxiliary states (thesis Eqs. (7.12)-(7.13)).

A [`MultibodySystem`][nhcontrol.modeling.MultibodySystem] with first-order states ``z``
(``add_first_order_states``, ``set_rates``) has ``ż = H(x, ẋ, z, u)``. The mechanical kernels
see ``z`` as inputs (so ``∂Q/∂z`` is exact in ``dQ_du``); this module compiles ``H`` and its
exact partial derivatives ``H_x``, ``H_ẋ``, ``H_z``, ``H_u`` (``u``: the other inputs), obtained
by symbolic differentiation (SymPy), for one point.
``Piecewise`` expressions (valves, laminar/turbulent blends) evaluate only their active branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from .._util.errors import ModelError

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

    H_x: NDArray[np.float64]
    H_xd: NDArray[np.float64]
    H_z: NDArray[np.float64]
    H_u: NDArray[np.float64]


class RateKernels:
    """``H(x, ẋ, z, u, p)`` and its exact Jacobians for one model (see
    [`compile_rates()`][nhcontrol.compiled.compile_rates]).

    Attributes
    ----------
    name : str
    states : tuple of str
        First-order states ``z`` (r).
    inputs : tuple of str
        The other inputs ``u`` (k_u).
    state_index, input_index : tuple of int
        Positions of ``z`` and ``u`` in the model's input vector (the compiled model's ``u``).
    parameters : dict
        Parameter defaults in kernel order.
    """

    def __init__(self, name: str, n: int, states: tuple[str, ...], inputs: tuple[str, ...],
                 state_index: tuple[int, ...], input_index: tuple[int, ...],
                 parameters: dict[str, float], f_rates: Any, f_jac: Any) -> None:
        self.name, self.n = name, n
        self.states, self.inputs = states, inputs
        self.state_index, self.input_index = state_index, input_index
        self.parameters = parameters
        self._p0 = np.array(list(parameters.values()), dtype=float)
        self._f, self._fj = f_rates, f_jac

    def _args(self, x: ArrayLike, xd: ArrayLike, z: ArrayLike, u: ArrayLike | None,
              p: ArrayLike | None) -> tuple[Any, ...]:
        x = np.asarray(x, dtype=float).ravel()
        xd = np.asarray(xd, dtype=float).ravel()
        z = np.atleast_1d(np.asarray(z, dtype=float)).ravel()
        u = np.zeros(0) if u is None else np.atleast_1d(np.asarray(u, dtype=float)).ravel()
        p = self._p0 if p is None else np.asarray(p, dtype=float).ravel()
        for arr, size, what in ((x, self.n, "x"), (xd, self.n, "xd"), (z, len(self.states), "z"),
                                (u, len(self.inputs), "u"), (p, self._p0.size, "p")):
            if arr.size != size:
                raise ModelError(f"rates of model {self.name!r}: {what} must have {size} entries, "
                                 f"got {arr.size}")
        return (*x, *xd, *z, *u, *p)

    def split_inputs(self, u_all: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Split a model input vector into ``(z, u)``."""
        u_all = np.atleast_1d(np.asarray(u_all, dtype=float)).ravel()
        return u_all[list(self.state_index)], u_all[list(self.input_index)]

    def rates(self, x: ArrayLike, xd: ArrayLike, z: ArrayLike, u: ArrayLike | None = None,
              p: ArrayLike | None = None) -> NDArray[np.float64]:
        """``ż = H(x, ẋ, z, u)`` (r,)."""
        out = np.array(self._f(*self._args(x, xd, z, u, p)), dtype=float)
        return out

    def jacobians(self, x: ArrayLike, xd: ArrayLike, z: ArrayLike, u: ArrayLike | None = None,
                  p: ArrayLike | None = None) -> RateJacobians:
        """Exact ``H_x, H_ẋ, H_z, H_u`` at one point.

        Raises
        ------
        ModelError
            If a derivative is not finite there (e.g. a square root at zero flow).
        """
        J = np.array(self._fj(*self._args(x, xd, z, u, p)), dtype=float).reshape(len(self.states), -1)
        if not np.all(np.isfinite(J)):
            raise ModelError(f"the rate Jacobian of model {self.name!r} is not finite at this point "
                             f"(a rate is not differentiable there)")
        n, r = self.n, len(self.states)
        return RateJacobians(H_x=J[:, :n], H_xd=J[:, n:2 * n], H_z=J[:, 2 * n:2 * n + r],
                             H_u=J[:, 2 * n + r:])

    def __repr__(self) -> str:
        return f"RateKernels({self.name!r}, z={list(self.states)}, u={list(self.inputs)})"


def compile_rates(system: Any) -> RateKernels:
    """Compile the rate equations ``H`` of a system's first-order states and their Jacobians.

    Parameters
    ----------
    system : MultibodySystem
        With ``add_first_order_states`` and ``set_rates`` for every state.

    Returns
    -------
    RateKernels

    Raises
    ------
    ModelError
        If the system has no first-order states or a state has no rate.
    """
    states = tuple(system.first_order_states)
    if not states:
        raise ModelError(f"model {system.name!r} has no first-order states; add them with "
                         f"add_first_order_states and set_rates")
    H = sp.Matrix(system.rates)
    inputs_all = list(system.inputs)
    others = tuple(u for u in inputs_all if u not in states)
    x, xd, params = list(system.coordinates), list(system.velocities), list(system.parameters)
    args = [*x, *xd, *states, *others, *params]
    jac = H.jacobian(sp.Matrix([*x, *xd, *states, *others]))
    # no common-subexpression hoisting: it would evaluate every Piecewise branch (e.g. the
    # 1/sqrt(dp) of a turbulent branch at dp = 0) outside its condition
    f = sp.lambdify(args, list(H), modules="math", cse=False)
    fj = sp.lambdify(args, list(jac), modules="math", cse=False)
    defaults = system.defaults
    return RateKernels(system.name, len(x), tuple(str(z) for z in states), tuple(str(u) for u in others),
                       tuple(inputs_all.index(z) for z in states),
                       tuple(inputs_all.index(u) for u in others),
                       {str(q): float(defaults[str(q)]) for q in params}, f, fj)
