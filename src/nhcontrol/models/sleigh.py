"""The Chaplygin sleigh (a planar skate / skateboard deck on one blade).

A rigid body moving on the horizontal plane, ``n = 3`` absolute coordinates
``x = [x, y, psi]`` (centre of mass ``G`` and yaw), with a knife edge
(:func:`~nhcontrol.modeling.contacts.knife_edge`) at the body point
``P = G + R_z(psi) [a, 0, 0]^T`` whose blade runs along the body ``X`` axis:
``m = 0``, ``l = 1``, two degrees of freedom. The nonholonomic constraint is

.. math::  -\\sin\\psi\\,\\dot x + \\cos\\psi\\,\\dot y + a\\,\\dot\\psi = 0 .

Straight motion along the blade, :math:`x = v t`, :math:`y = \\psi = 0`, is a relative
equilibrium with zero multiplier. Linearizing (lateral reaction ``F`` at ``P``:
:math:`m\\ddot y = F`, :math:`I_{zz}\\ddot\\psi = a F`, :math:`\\dot y = v\\psi - a\\dot\\psi`)
gives :math:`(I_{zz} + m a^2)\\ddot\\psi = m a v\\,\\dot\\psi`: the yaw rate decays when
``a v < 0`` (the blade trails behind the centre of mass, like the feathers of an arrow)
and grows when ``a v > 0``; for ``a = 0`` it is conserved. The default ``a = -0.2`` puts
the blade 0.2 m behind ``G``, so forward motion (``v > 0``) is the stable one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.modeling import MultibodySystem, contacts, rot_z

if TYPE_CHECKING:  # pragma: no cover
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["COORDINATES", "DEFAULTS", "PARTITION", "build", "model", "straight_motion",
           "straight_motion_state"]

#: Coordinates: centre of mass (x, y) and yaw psi.
COORDINATES: tuple[str, ...] = ("x", "y", "psi")

#: Mass m [kg], yaw inertia about G I_zz [kg m^2], blade offset a [m] along the body X axis.
DEFAULTS: Mapping[str, float] = {"m": 1.0, "I_zz": 0.05, "a": -0.2}

#: Suggested partition: forward position and yaw independent, ``y`` admissible dependent.
PARTITION: dict[str, list[str]] = dict(independent=["x", "psi"], admissible_dependent=["y"], dependent=[])


def _values(m: float, I_zz: float, a: float) -> dict[str, float]:
    vals = {"m": m, "I_zz": I_zz, "a": a}
    bad = []
    for key, val in vals.items():
        try:
            vals[key] = float(val)
        except (TypeError, ValueError):
            bad.append(f"{key}={val!r}")
            continue
        if not math.isfinite(vals[key]) or (key != "a" and vals[key] <= 0):
            bad.append(f"{key}={val!r}")
    if bad:
        raise ModelError(f"Chaplygin sleigh: m and I_zz must be positive finite numbers and a finite, got {bad}")
    return vals


def build(m: float = 1.0, I_zz: float = 0.05, a: float = -0.2) -> MultibodySystem:
    """Symbolic Chaplygin sleigh.

    Parameters
    ----------
    m : float
        Mass [kg].
    I_zz : float
        Moment of inertia about the vertical axis through ``G`` [kg m^2].
    a : float
        Position of the blade on the body ``X`` axis, measured from ``G`` [m].

    Returns
    -------
    MultibodySystem
        ``n = 3``, ``m = 0``, ``l = 1`` (constraint ``blade_lateral``).

    Raises
    ------
    ModelError
        If ``m`` or ``I_zz`` is not positive or a value is not finite.
    """
    vals = _values(m, I_zz, a)
    mb = MultibodySystem("chaplygin_sleigh")
    x, y, psi = mb.add_coordinates(" ".join(COORDINATES))
    m_s, i_s, a_s = mb.add_parameters(**vals)
    R = rot_z(psi)
    center = sp.Matrix([x, y, 0])
    # planar body: the in-plane inertias do not enter (no roll/pitch); a flat plate's values are used
    body = mb.add_body("sleigh", mass=m_s, inertia=sp.diag(i_s / 2, i_s / 2, i_s), position=center,
                       orientation=R)
    contacts.knife_edge(mb, body, center + R * sp.Matrix([a_s, 0, 0]), (1, 0, 0), name="blade")
    return mb


@lru_cache(maxsize=8)
def _compiled(m: float, I_zz: float, a: float) -> "CompiledModel":
    return build(m, I_zz, a).compile()


def model(m: float = 1.0, I_zz: float = 0.05, a: float = -0.2) -> "CompiledModel":
    """Compiled :func:`build` (cached). Returns a ``CompiledModel``."""
    vals = _values(m, I_zz, a)
    return _compiled(vals["m"], vals["I_zz"], vals["a"])


def straight_motion_state(v: float, t: ArrayLike
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``x = v t``, ``y = psi = 0`` and its derivatives; each (3,) or (N, 3)."""
    tt = np.asarray(t, dtype=float)
    scalar = tt.ndim == 0
    tt = np.atleast_1d(tt)
    x = np.zeros((tt.shape[0], 3))
    x[:, 0] = v * tt
    xd = np.zeros_like(x)
    xd[:, 0] = v
    xdd = np.zeros_like(x)
    return (x[0], xd[0], xdd[0]) if scalar else (x, xd, xdd)


def straight_motion(model: "CompiledModel", v: float,
                    p: ArrayLike | Mapping[str, float] | None = None) -> "Reference":
    """Reference of the sleigh sliding straight along its blade at speed ``v``.

    The multiplier is zero (no lateral force is needed for a straight motion).

    Parameters
    ----------
    model : CompiledModel
        :func:`model`.
    v : float
        Speed [m/s] along the blade.
    p : (p,) array_like or mapping, optional
        Parameter vector or overrides.

    Returns
    -------
    Reference
        ``steady=True``.

    Raises
    ------
    ModelError
        If ``model`` is not the sleigh.
    ReferenceMotionError
        If ``v`` is not finite.
    """
    from nhcontrol.reference import Reference

    if tuple(model.coordinates) != COORDINATES:
        raise ModelError(f"expected the Chaplygin sleigh with coordinates {list(COORDINATES)}, got "
                         f"{getattr(model, 'name', '?')!r} with {list(model.coordinates)}; use sleigh.model()")
    try:
        speed = float(v)
    except (TypeError, ValueError) as exc:
        raise ReferenceMotionError(f"speed v must be a real number in m/s, got {v!r}") from exc
    if not math.isfinite(speed):
        raise ReferenceMotionError(f"speed v must be finite, got {v!r}")
    names = list(model.parameters)
    if p is None:
        pvec = np.array([model.parameters[k] for k in names], dtype=float)
    elif isinstance(p, Mapping):
        pvec = np.asarray(model.param_vector(**p), dtype=float)
    else:
        pvec = np.asarray(p, dtype=float)
        if pvec.shape != (len(names),):
            raise ModelError(f"parameter vector p must have shape ({len(names)},) (order {names}), got "
                             f"{pvec.shape}")
    nc = model.m + model.l

    def lam_fun(t):
        tt = np.asarray(t, dtype=float)
        return np.zeros(nc) if tt.ndim == 0 else np.zeros((tt.shape[0], nc))

    return Reference.from_functions(
        model,
        lambda t: straight_motion_state(speed, t)[0],
        lambda t: straight_motion_state(speed, t)[1],
        lambda t: straight_motion_state(speed, t)[2],
        lam=lam_fun, p=pvec, steady=True)
