r"""A two-wheeled self-balancing robot: a body pitching about the axle of two independently
driven wheels that roll without slipping on the ground.

Coordinates (``n = 6``): the ground point ``(x, y)`` midway between the wheel contacts, the
heading ``psi``, the body pitch ``theta`` (zero upright, positive leaning forward) and the
absolute wheel rotation angles ``phi_L``, ``phi_R`` (about the axle, positive rolling forward).
Inputs: the wheel torques ``T_L``, ``T_R`` applied by the body on the wheels (the body takes
the reaction: generalized forces ``Q_phi_i = T_i``, ``Q_theta = −T_L − T_R``).

Nonholonomic constraints (``l = 3``): rolling without slipping of each wheel (radius ``r``,
track ``d``) and no lateral slip of the axle, the kinematics of the differential-drive
wheeled inverted pendulum (Y. Kim, S. H. Kim, Y. K. Kwak, *Dynamic analysis of a nonholonomic
two-wheeled inverted pendulum robot*, J. Intell. Robot. Syst. 44 (2005) 25–46, Eqs. (1)–(3);
F. Grasser et al., *JOE, a mobile, inverted pendulum*, IEEE Trans. Ind. Electron. 49 (2002)):

$$
\dot x\cos\psi + \dot y\sin\psi \mp \tfrac d2\,\dot\psi - r\,\dot\phi_{L,R} = 0, \qquad
-\dot x\sin\psi + \dot y\cos\psi = 0 .
$$

Bodies: the chassis (mass ``m_b``, principal inertias ``I_bx, I_by, I_bz`` at its centre of
mass ``l_b`` above the axle, orientation ``R_z(ψ) R_y(θ)``), two wheels (mass ``m_w``, axial
inertia ``I_wa``, diametral ``I_wd``, orientation ``R_z(ψ) R_y(φ_i)``), gravity ``g``.

[`circle()`][nhcontrol.models.self_balancing_robot.circle] gives the steady circular motion
(radius ``ρ``, speed ``v``) with the body upright and zero torques: a relative equilibrium
(the centripetal force is lateral, along the pitch axis, so it exerts no pitching moment).
With the partition [`PARTITION`][nhcontrol.models.self_balancing_robot.PARTITION]
(independent ``theta, phi_L, phi_R``; admissible dependent ``x, y, psi``) the linear state has
9 entries ``[θ, φ_L, φ_R, θ̇, φ̇_L, φ̇_R, x, y, ψ]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache, partial
from typing import TYPE_CHECKING

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.modeling import MultibodySystem, check_parameters, rot_y, rot_z

if TYPE_CHECKING:  # pragma: no cover
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["COORDINATES", "DEFAULTS", "INPUTS", "PARTITION", "build", "circle", "circle_state",
           "model"]

COORDINATES: tuple[str, ...] = ("x", "y", "psi", "theta", "phi_L", "phi_R")
"""Coordinates: ground point midway between the wheels, heading, pitch, wheel angles."""

INPUTS: tuple[str, ...] = ("T_L", "T_R")
"""Wheel torques [N m] (body on wheel)."""

DEFAULTS: Mapping[str, float] = {"m_b": 10.0, "I_bx": 0.5, "I_by": 0.4, "I_bz": 0.3,
                                 "l_b": 0.3, "m_w": 1.0, "I_wa": 0.01, "I_wd": 0.006,
                                 "r": 0.1, "d": 0.4, "g": 9.81}
"""Chassis mass [kg], principal inertias at its centre of mass [kg m²], height of its centre
of mass above the axle [m]; wheel mass [kg], axial and diametral inertias [kg m²], radius [m];
track [m]; gravity [m/s²]."""

PARTITION: dict[str, list[str]] = dict(independent=["theta", "phi_L", "phi_R"],
                                       admissible_dependent=["x", "y", "psi"], dependent=[])
"""Partition of the linearization: 9 linear states ``[θ, φ_L, φ_R, θ̇, φ̇_L, φ̇_R, x, y, ψ]``."""


def _values(**kw: float) -> dict[str, float]:
    vals = {**DEFAULTS, **kw}
    unknown = set(kw) - set(DEFAULTS)
    if unknown:
        raise ModelError(f"unknown self-balancing robot parameters {sorted(unknown)}; known: "
                         f"{sorted(DEFAULTS)}")
    return check_parameters(vals, positive=tuple(DEFAULTS),
                            requirement="self-balancing robot: every parameter must be a "
                                        "positive finite number")


def build(**parameters: float) -> MultibodySystem:
    """Symbolic two-wheeled self-balancing robot (``n = 6``, ``m = 0``, ``l = 3``, ``k = 2``).

    Parameters
    ----------
    **parameters : float
        Overrides of `DEFAULTS`.

    Returns
    -------
    MultibodySystem

    Raises
    ------
    ModelError
        An unknown name or a value that is not positive and finite.
    """
    vals = _values(**parameters)
    mb = MultibodySystem("self_balancing_robot")
    x, y, psi, theta, phL, phR = mb.add_coordinates(" ".join(COORDINATES))
    p = dict(zip(vals, mb.add_parameters(**vals)))
    TL, TR = mb.add_inputs(" ".join(INPUTS))
    r, d, lb = p["r"], p["d"], p["l_b"]
    Rpsi = rot_z(psi)
    axle = sp.Matrix([x, y, r])
    lateral = Rpsi * sp.Matrix([0, 1, 0])
    mb.add_body("chassis", mass=p["m_b"], inertia=sp.diag(p["I_bx"], p["I_by"], p["I_bz"]),
                position=axle + Rpsi * rot_y(theta) * sp.Matrix([0, 0, lb]),
                orientation=Rpsi * rot_y(theta))
    Iw = sp.diag(p["I_wd"], p["I_wa"], p["I_wd"])
    mb.add_body("wheel_L", mass=p["m_w"], inertia=Iw, position=axle + d / 2 * lateral,
                orientation=Rpsi * rot_y(phL))
    mb.add_body("wheel_R", mass=p["m_w"], inertia=Iw, position=axle - d / 2 * lateral,
                orientation=Rpsi * rot_y(phR))
    xd, yd, psid, _, phLd, phRd = mb.velocities
    fwd = xd * sp.cos(psi) + yd * sp.sin(psi)
    mb.add_nonholonomic(fwd - d / 2 * psid - r * phLd, name="roll_L")
    mb.add_nonholonomic(fwd + d / 2 * psid - r * phRd, name="roll_R")
    mb.add_nonholonomic(-xd * sp.sin(psi) + yd * sp.cos(psi), name="no_side_slip")
    mb.add_gravity(p["g"])
    mb.add_generalized_force([0, 0, 0, -TL - TR, TL, TR])
    return mb


@lru_cache(maxsize=4)
def _compiled(items: tuple[tuple[str, float], ...]) -> "CompiledModel":
    from nhcontrol.compiled.recipe import cached_model

    return cached_model(build, **dict(items))


def model(**parameters: float) -> "CompiledModel":
    """Compiled [`build()`][nhcontrol.models.self_balancing_robot.build] (cached on disk and
    per process). Returns a ``CompiledModel``."""
    vals = _values(**parameters)
    return _compiled(tuple(sorted(vals.items())))


def circle_state(radius: float, speed: float, r: float, d: float, t: ArrayLike
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``x, ẋ, ẍ`` of the circle of `circle` at ``t`` (each (6,) or (N, 6)).

    The ground point starts at the origin heading along ``X`` and turns left:
    ``ψ = ω t``, ``x = ρ sin ψ``, ``y = ρ (1 − cos ψ)``, ``ω = v/ρ``, upright (``θ = 0``),
    wheels ``φ_{L,R} = (v ∓ ω d/2) t / r``.
    """
    tt = np.asarray(t, dtype=float)
    scalar = tt.ndim == 0
    tt = np.atleast_1d(tt)
    w = speed / radius
    ps = w * tt
    s, c = np.sin(ps), np.cos(ps)
    wl, wr = (speed - w * d / 2) / r, (speed + w * d / 2) / r
    x = np.empty((tt.shape[0], 6))          # columns filled in place (no stacking)
    xd = np.empty((tt.shape[0], 6))
    xdd = np.zeros((tt.shape[0], 6))
    x[:, 0], x[:, 1], x[:, 2], x[:, 3], x[:, 4], x[:, 5] = (radius * s, radius * (1 - c), ps,
                                                            0.0, wl * tt, wr * tt)
    xd[:, 0], xd[:, 1], xd[:, 2], xd[:, 3], xd[:, 4], xd[:, 5] = speed * c, speed * s, w, 0.0, wl, wr
    xdd[:, 0], xdd[:, 1] = -speed * w * s, speed * w * c
    return (x[0], xd[0], xdd[0]) if scalar else (x, xd, xdd)


def circle(cm: "CompiledModel", radius: float = 2.0, speed: float = 0.5) -> "Reference":
    """Steady circular motion (radius ``ρ`` [m], speed ``v`` [m/s] of the axle's midpoint),
    upright, zero torques; periodic with ``2πρ/v`` in the trigonometric coordinates (the
    multipliers, the centripetal force, from inverse dynamics, Eq. (2.112)).

    Raises
    ------
    ModelError
        ``cm`` is not this robot.
    ReferenceMotionError
        A radius or speed that is not positive and finite.
    """
    from nhcontrol.reference import Reference, StateComponent

    if tuple(cm.coordinates) != COORDINATES or getattr(cm, "name", "") != "self_balancing_robot":
        raise ModelError(f"expected the self-balancing robot with coordinates "
                         f"{list(COORDINATES)}, got {getattr(cm, 'name', '?')!r}; use "
                         "self_balancing_robot.model()")
    for name, val in (("radius", radius), ("speed", speed)):
        if not (isinstance(val, (int, float)) and math.isfinite(val) and val > 0):
            raise ReferenceMotionError(f"{name} must be a positive finite number, got {val!r}")
    r, d = float(cm.parameters["r"]), float(cm.parameters["d"])
    state = partial(circle_state, float(radius), float(speed), r, d)
    return Reference.from_functions(cm, StateComponent(state, 0), StateComponent(state, 1),
                                    StateComponent(state, 2), u=np.zeros(2))

