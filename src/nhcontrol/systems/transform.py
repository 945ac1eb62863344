"""Time-varying change of state variables of a linear system (Lyapunov transformation).

For ``ẋ = A(t) x + B(t) u`` and ``z = T(t) x`` with ``T(t)`` invertible,

$$
\\dot z = \\big(T A T^{-1} + \\dot T T^{-1}\\big) z + T B\\, u .
$$

When a steady motion has a continuous symmetry (the circular motion of a rolling body of
revolution, thesis Sect. 6.3.4, Eq. (6.76)) a ``T(t)`` built from that symmetry makes the
transformed matrices constant.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .ltv import LTVSystem, as_ltv

__all__ = ["change_of_variables"]

Matrix = Callable[[float], ArrayLike]


def change_of_variables(sys: LTVSystem, T: Matrix, T_dot: Matrix, *,
                        states: list[str] | None = None, period: float | None = None) -> LTVSystem:
    """The system in the variables ``z = T(t) x``.

    Parameters
    ----------
    sys : LTVSystem
    T, T_dot : callable ``t -> (n, n)``
        The transformation and its exact time derivative.
    states : list of str, optional
        Names of ``z`` (default: those of ``sys``).
    period : float, optional
        Period of the new system (default ``sys.period``).

    Returns
    -------
    LTVSystem
        ``A_z(t) = T A T^{-1} + Ṫ T^{-1}``, ``B_z(t) = T B`` (scalar evaluation).

    Raises
    ------
    LinearSystemError
        ``T(t)`` of the wrong shape or singular.
    """
    s = as_ltv(sys)
    n = s.nstates
    if not s.has_identity_output:
        raise LinearSystemError(
            f"change_of_variables: the system has the output map y = C x with outputs {list(s.outputs)}; in "
            "z = T(t) x it becomes y = C T(t)^-1 z, time-varying, which an LTVSystem (constant C) does not "
            "hold: transform sys.with_outputs() (outputs = states) and apply C T(t)^-1 yourself")

    def mats(t: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        Tm = np.asarray(T(t), dtype=float)
        Td = np.asarray(T_dot(t), dtype=float)
        if Tm.shape != (n, n) or Td.shape != (n, n):
            raise LinearSystemError(f"change_of_variables: T(t) and T_dot(t) must be ({n}, {n}), got "
                                    f"{Tm.shape} and {Td.shape} at t = {t}")
        cond = np.linalg.cond(Tm)
        if not np.isfinite(cond) or cond > 1e12:
            raise LinearSystemError(f"change_of_variables: T(t) is singular at t = {t} (cond = {cond:.1e})")
        Ti = np.linalg.inv(Tm)
        return Tm @ s.A(t) @ Ti + Td @ Ti, Tm @ s.B(t)

    return LTVSystem(lambda t: mats(float(t))[0], lambda t: mats(float(t))[1],
                     states=list(states) if states is not None else list(s.states), inputs=list(s.inputs),
                     t_range=s.t_range, period=period if period is not None else s.period,
                     breakpoints=s.breakpoints)
