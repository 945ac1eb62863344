"""The Chaplygin sleigh and a planar skateboard: rigid boards on knife edges.

Two models built with [`knife_edge()`][nhcontrol.modeling.contacts.knife_edge]:

* the Chaplygin sleigh ([`build()`][nhcontrol.models.sleigh.build],
  [`model()`][nhcontrol.models.sleigh.model],
  [`straight_motion()`][nhcontrol.models.sleigh.straight_motion]): one blade,
  two degrees of freedom;
* a planar skateboard ([`build_skateboard()`][nhcontrol.models.sleigh.build_skateboard],
  [`model_skateboard()`][nhcontrol.models.sleigh.model_skateboard],
  [`skateboard_turn()`][nhcontrol.models.sleigh.skateboard_turn]): two steerable trucks whose steer
  angle is the input ``u``,
  one degree of freedom.

Chaplygin sleigh
----------------

A rigid body moving on the horizontal plane, ``n = 3`` absolute coordinates
``x = [x, y, psi]`` (centre of mass ``G`` and yaw), with a knife edge
([`knife_edge()`][nhcontrol.modeling.contacts.knife_edge]) at the body point
``P = G + R_z(psi) [a, 0, 0]^T`` whose blade runs along the body ``X`` axis:
``m = 0``, ``l = 1``, two degrees of freedom. The nonholonomic constraint is

$$
-\\sin\\psi\\,\\dot x + \\cos\\psi\\,\\dot y + a\\,\\dot\\psi = 0 .
$$

Straight motion along the blade, $x = v t$, $y = \\psi = 0$, is a relative
equilibrium with zero multiplier. Linearizing (lateral reaction ``F`` at ``P``:
$m\\ddot y = F$, $I_{zz}\\ddot\\psi = a F$, $\\dot y = v\\psi - a\\dot\\psi$)
gives $(I_{zz} + m a^2)\\ddot\\psi = m a v\\,\\dot\\psi$: the yaw rate decays when
``a v < 0`` (the blade trails behind the centre of mass, like the feathers of an arrow)
and grows when ``a v > 0``; for ``a = 0`` it is conserved. The default ``a = -0.2`` puts
the blade 0.2 m behind ``G``, so forward motion (``v > 0``) is the stable one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.modeling import MultibodySystem, check_parameters, contacts, parameter_values, rot_z

if TYPE_CHECKING:  # pragma: no cover
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = [
    "build", "model", "straight_motion", "COORDINATES", "DEFAULTS", "PARTITION",
    "straight_motion_state", "SKATEBOARD_DEFAULTS", "PARTITION_SKATEBOARD_STRAIGHT",
    "PARTITION_SKATEBOARD_TURN", "build_skateboard", "model_skateboard", "skateboard_turn",
    "skateboard_turn_state", "skateboard_turn_multipliers"
]

COORDINATES: tuple[str, ...] = ("x", "y", "psi")
"""Coordinates: centre of mass (x, y) and yaw psi."""

DEFAULTS: Mapping[str, float] = {"m": 1.0, "I_zz": 0.05, "a": -0.2}
"""Mass m [kg], yaw inertia about G I_zz [kg m^2], blade offset a [m] along the body X axis."""

PARTITION: dict[str, list[str]] = dict(independent=["x", "psi"], admissible_dependent=["y"], dependent=[])
"""Suggested partition: forward position and yaw independent, ``y`` admissible dependent."""


def _values(m: float, I_zz: float, a: float) -> dict[str, float]:
    return check_parameters({"m": m, "I_zz": I_zz, "a": a}, positive=("m", "I_zz"),
                            requirement="Chaplygin sleigh: m and I_zz must be positive finite numbers "
                                        "and a finite")


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
    from nhcontrol.compiled.recipe import cached_model

    return cached_model(build, m, I_zz, a)


def model(m: float = 1.0, I_zz: float = 0.05, a: float = -0.2) -> "CompiledModel":
    """Compiled [`build()`][nhcontrol.models.sleigh.build] (cached). Returns a ``CompiledModel``."""
    vals = _values(m, I_zz, a)
    return _compiled(vals["m"], vals["I_zz"], vals["a"])


def _pvec(model: "CompiledModel", p: ArrayLike | Mapping[str, float] | None) -> NDArray[np.float64]:
    return parameter_values(model, p)[0]


def _speed(v: Any) -> float:
    try:
        speed = float(v)
    except (TypeError, ValueError) as exc:
        raise ReferenceMotionError(f"speed v must be a real number in m/s, got {v!r}") from exc
    if not math.isfinite(speed):
        raise ReferenceMotionError(f"speed v must be finite, got {v!r}")
    return speed


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
        [`model()`][nhcontrol.models.sleigh.model].
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
    from nhcontrol.reference import Reference, StateComponent

    if tuple(model.coordinates) != COORDINATES or getattr(model, "name", "") != "chaplygin_sleigh":
        raise ModelError(f"expected the Chaplygin sleigh with coordinates {list(COORDINATES)}, got "
                         f"{getattr(model, 'name', '?')!r} with {list(model.coordinates)}; use sleigh.model()")
    speed = _speed(v)
    pvec = _pvec(model, p)
    nc = model.m + model.l

    state = partial(straight_motion_state, speed)   # picklable (no closures)
    return Reference.from_functions(
        model, StateComponent(state, 0), StateComponent(state, 1), StateComponent(state, 2),
        lam=np.zeros(nc), p=pvec, steady=True)


# =========================================================================== skateboard
SKATEBOARD_DEFAULTS: Mapping[str, float] = {"m": 5.0, "I_zz": 0.4, "r": 0.25}
"""Skateboard: mass m [kg], yaw inertia I_zz about G [kg m^2], half wheelbase r [m]."""

PARTITION_SKATEBOARD_STRAIGHT: dict[str, list[str]] = dict(
    independent=["x"], admissible_dependent=["y", "psi"], dependent=[])
"""Straight motion (``u = 0``): forward position independent, ``y`` and ``psi`` follow from the two
parallel blades (``D_dd`` regular while ``cos psi != 0``).
"""

PARTITION_SKATEBOARD_TURN: dict[str, list[str]] = dict(
    independent=["psi"], admissible_dependent=["x", "y"], dependent=[])
"""Turning (``u != 0``): yaw independent, ``x, y`` from the two blades; ``D_dd`` (the two blade
normals) is regular for every heading when ``sin u != 0``.
"""


def _skateboard_values(m: float, I_zz: float, r: float) -> dict[str, float]:
    return check_parameters({"m": m, "I_zz": I_zz, "r": r}, positive=("m", "I_zz", "r"),
                            requirement="skateboard: m, I_zz and the half wheelbase r must be positive "
                                        "finite numbers")


def build_skateboard(m: float = 5.0, I_zz: float = 0.4, r: float = 0.25) -> MultibodySystem:
    """Symbolic planar skateboard: a board on two steerable knife-edge trucks.

    The board (centre of mass ``G``, yaw ``psi``; coordinates ``x = [x, y, psi]``) carries
    two massless trucks at the body points ``G ± R_z(psi) [r, 0, 0]^T``. Their blades (wheel
    pairs modelled as knife edges, [`knife_edge()`][nhcontrol.modeling.contacts.knife_edge]) point
    along ``[cos u, +sin u, 0]`` (front) and ``[cos u, -sin u, 0]`` (rear) in the board frame:
    the steer angle ``u`` is an **input** (the rider tilts the deck; the trucks turn opposite
    ways, as in the snakeboard of Lewis et al. 1994 without rotor). Inputs are
    quasi-static (Sect. 8.1): they enter ``B(x, u)`` but their rates do not.

    ``n = 3``, ``m = 0``, ``l = 2`` (``front_lateral``, ``rear_lateral``): one degree of
    freedom, the speed along the path. For constant ``u`` the board turns about the point
    ``(0, r / tan u)`` of the board frame (where the blade normals meet).

    Parameters
    ----------
    m : float
        Mass of board and rider [kg].
    I_zz : float
        Yaw moment of inertia about ``G`` [kg m^2].
    r : float
        Half wheelbase [m].

    Returns
    -------
    MultibodySystem

    Raises
    ------
    ModelError
        If a value is not positive and finite.
    """
    vals = _skateboard_values(m, I_zz, r)
    mb = MultibodySystem("skateboard")
    x, y, psi = mb.add_coordinates(" ".join(COORDINATES))
    m_s, i_s, r_s = mb.add_parameters(**vals)
    u = mb.add_inputs("u")
    R = rot_z(psi)
    center = sp.Matrix([x, y, 0])
    board = mb.add_body("board", mass=m_s, inertia=sp.diag(i_s / 2, i_s / 2, i_s), position=center,
                        orientation=R)
    contacts.knife_edge(mb, board, center + R * sp.Matrix([r_s, 0, 0]), (sp.cos(u), sp.sin(u), 0),
                        name="front")
    contacts.knife_edge(mb, board, center + R * sp.Matrix([-r_s, 0, 0]), (sp.cos(u), -sp.sin(u), 0),
                        name="rear")
    return mb


@lru_cache(maxsize=8)
def _compiled_skateboard(m: float, I_zz: float, r: float) -> "CompiledModel":
    from nhcontrol.compiled.recipe import cached_model

    return cached_model(build_skateboard, m, I_zz, r)


def model_skateboard(m: float = 5.0, I_zz: float = 0.4, r: float = 0.25) -> "CompiledModel":
    """Compiled [`build_skateboard()`][nhcontrol.models.sleigh.build_skateboard] (cached). Returns a ``CompiledModel`` with one input ``u``."""
    vals = _skateboard_values(m, I_zz, r)
    return _compiled_skateboard(vals["m"], vals["I_zz"], vals["r"])


def skateboard_turn_state(v: float, u0: float, t: ArrayLike, r: float
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Steady turn at speed ``v`` with constant steer ``u0`` (straight line for ``u0 = 0``).

    Turning radius of ``G`` $\\rho = r/\\tan u_0$, yaw rate $\\omega = v/\\rho$:
    $x = \\rho\\sin\\omega t$, $y = \\rho(1 - \\cos\\omega t)$,
    $\\psi = \\omega t$ (centre of the circle at ``(0, rho)``).

    Returns
    -------
    x, xd, xdd : (3,) or (N, 3) ndarray
    """
    tt = np.asarray(t, dtype=float)
    scalar = tt.ndim == 0
    tt = np.atleast_1d(tt)
    w = v * math.tan(u0) / r
    x = np.zeros((tt.shape[0], 3))
    xd = np.zeros_like(x)
    xdd = np.zeros_like(x)
    # x = v sin(w t)/w and y = v (1 - cos(w t))/w written without dividing by w (exact at w = 0)
    wt = w * tt
    sinc = np.sinc(wt / np.pi)                                 # sin(wt)/(wt)
    cosc = np.where(np.abs(wt) < 1e-4, wt / 2 - wt**3 / 24, (1 - np.cos(wt)) / np.where(wt == 0, 1, wt))
    x[:, 0] = v * tt * sinc
    x[:, 1] = v * tt * cosc
    x[:, 2] = wt
    xd[:, 0] = v * np.cos(wt)
    xd[:, 1] = v * np.sin(wt)
    xd[:, 2] = w
    xdd[:, 0] = -v * w * np.sin(wt)
    xdd[:, 1] = v * w * np.cos(wt)
    return (x[0], xd[0], xdd[0]) if scalar else (x, xd, xdd)


def skateboard_turn_multipliers(v: float, u0: float, values: Mapping[str, float]) -> NDArray[np.float64]:
    """Exact multipliers of the steady turn, ``[front, rear]``.

    Both trucks carry the same lateral force ``F``: the resultant ``2 F cos u0`` along the
    board ``y`` axis is the centripetal force $m v^2/\\rho$ and the torques about ``G``
    cancel. The blade normal $e = n \\times d$ has unit length, the reaction is
    $-B^T\\Lambda$ (Eq. (2.106)), so
    $\\Lambda = -F = -m v^2 \\sin u_0 / (2 r \\cos^2 u_0)$.
    """
    lam = -values["m"] * v**2 * math.sin(u0) / (2 * values["r"] * math.cos(u0) ** 2)
    return np.array([lam, lam])


def skateboard_turn(model: "CompiledModel", v: float, u0: float = 0.0,
                    p: ArrayLike | Mapping[str, float] | None = None) -> "Reference":
    """Reference of the skateboard turning steadily (or going straight for ``u0 = 0``).

    Parameters
    ----------
    model : CompiledModel
        [`model_skateboard()`][nhcontrol.models.sleigh.model_skateboard].
    v : float
        Speed of ``G`` [m/s].
    u0 : float
        Constant steer angle [rad], ``|u0| < pi/2``.
    p : (p,) array_like or mapping, optional
        Parameter vector or overrides.

    Returns
    -------
    Reference
        With ``u(t) = u0`` and the multipliers of [`skateboard_turn_multipliers()`][nhcontrol.models.sleigh.skateboard_turn_multipliers].
        ``steady=True`` for the straight motion; a turn is periodic (period
        $2\\pi/|\\omega|$) and, in the absolute coordinates ``x, y``, gives a periodic
        linearization (``steady=False``).

    Raises
    ------
    ModelError
        If ``model`` is not the skateboard.
    ReferenceMotionError
        If ``v`` or ``u0`` is not finite or ``|u0| >= pi/2``.
    """
    from nhcontrol.reference import Reference, StateComponent

    if getattr(model, "name", "") != "skateboard" or tuple(model.coordinates) != COORDINATES:
        raise ModelError(f"expected the skateboard model (coordinates {list(COORDINATES)}, input 'u'), got "
                         f"{getattr(model, 'name', '?')!r}; use sleigh.model_skateboard()")
    speed = _speed(v)
    try:
        steer = float(u0)
    except (TypeError, ValueError) as exc:
        raise ReferenceMotionError(f"steer angle u0 must be a real number in rad, got {u0!r}") from exc
    if not (math.isfinite(steer) and abs(steer) < math.pi / 2):
        raise ReferenceMotionError(f"steer angle u0 must be finite with |u0| < pi/2 (trucks across the "
                                   f"board cannot roll), got {u0!r}")
    pvec = _pvec(model, p)
    vals = dict(zip(model.parameters, pvec.tolist()))
    lam0 = skateboard_turn_multipliers(speed, steer, vals)
    w = speed * math.tan(steer) / vals["r"]
    period = None if w == 0 else 2 * math.pi / abs(w)

    state = partial(skateboard_turn_state, speed, steer, r=vals["r"])   # picklable (no closures)
    return Reference.from_functions(
        model, StateComponent(state, 0), StateComponent(state, 1), StateComponent(state, 2),
        u=np.array([steer]), lam=lam0, p=pvec, steady=period is None, period=period)
