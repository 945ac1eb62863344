"""Force elements on relative joint coordinates (suspensions, torsion bars).

A prismatic (or revolute) joint whose relative coordinate ``s`` is one of the generalized
coordinates carries the internal force (torque) pair of a linear spring--damper. Its virtual
work is ``f δs`` exactly (the pair acts along the joint axis, which is fixed in the body that
carries it), so it enters ``Q`` (Eq. (2.108)) as one generalized force on ``s``:

$$
Q_s = -(f_0 + k\\,s + c\\,\\dot s),
$$

with the preload $f_0$ (the force that the compressed element transmits at ``s = 0``,
chosen so that ``s = 0`` is the static equilibrium). Derived here.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from nhcontrol._util.errors import ModelError

from .system import MultibodySystem

__all__ = ["add_joint_spring_damper"]


def add_joint_spring_damper(mb: MultibodySystem, coordinate: sp.Symbol, stiffness: Any,
                            damping: Any = 0, preload: Any = 0) -> sp.Expr:
    """Linear spring--damper acting on the relative joint coordinate ``coordinate``.

    Parameters
    ----------
    mb : MultibodySystem
    coordinate : sympy.Symbol
        A coordinate of ``mb`` that is a relative joint displacement (suspension travel [m],
        torsion angle [rad]).
    stiffness, damping, preload : expressions
        ``k`` [N/m or N m/rad], ``c`` [N s/m or N m s/rad] and ``f_0`` [N or N m].

    Returns
    -------
    sympy.Expr
        The generalized force $Q_s = -(f_0 + k s + c \\dot s)$ that was added.
    """
    coords = list(mb.coordinates)
    if coordinate not in coords:
        raise ModelError(f"joint coordinate {coordinate!r} is not a coordinate of {mb.name!r}; "
                         f"choose one of {[str(c) for c in coords]}")
    i = coords.index(coordinate)
    sd = mb.velocities[i]
    q = -(sp.sympify(preload) + sp.sympify(stiffness) * coordinate + sp.sympify(damping) * sd)
    Q = sp.zeros(mb.n, 1)
    Q[i] = q
    mb.add_generalized_force(Q)
    return q
