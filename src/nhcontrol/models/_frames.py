"""The heading frame of a steady turn, shared by the catalogue's turning motions.

Along a motion whose heading grows as ``Omega t`` the linearization depends on time only
through the rotation of the two horizontal position deviations; ``z = T(t) δx`` rotates that
pair into the heading frame and leaves every other state alone, which makes the Jacobian
constant (derived in ``docs/theory/rolling_torus.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__: list[str] = []


def rotating_pair_frame(n: int, ix: int, iy: int, Omega: float
                        ) -> tuple[Callable[[float], NDArray[np.float64]],
                                   Callable[[float], NDArray[np.float64]]]:
    """``T(t)`` (identity but for the rotation by ``Omega t`` of states ``ix, iy``) and ``Ṫ(t)``."""
    Om = float(Omega)
    pair = np.ix_([ix, iy], [ix, iy])

    def T(t: float) -> NDArray[np.float64]:
        c, s = math.cos(Om * t), math.sin(Om * t)
        out = np.eye(n)
        out[pair] = [[c, s], [-s, c]]
        return out

    def T_dot(t: float) -> NDArray[np.float64]:
        c, s = math.cos(Om * t), math.sin(Om * t)
        out = np.zeros((n, n))
        out[pair] = [[-Om * s, Om * c], [-Om * c, -Om * s]]
        return out

    return T, T_dot
