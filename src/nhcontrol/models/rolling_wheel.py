"""A single wheel rolling without slipping on the ground: uniform disc or hoop.

The wheel of the bicycle benchmark on its own, in absolute coordinates (``n = 7``):


```text
x = [x, y, z, psi, phi, theta, xi]
```

``(x, y, z)`` is the centre of the wheel, ``R = R_z(psi) R_x(phi) R_y(theta)``
(yaw, lean, spin; Eq. (2.26)) its orientation with the spin axis along the body ``Y``
axis as in the thesis (Fig. 4.2), and ``xi`` the contact coordinate of the
[`rolling_hoop()`][nhcontrol.modeling.contacts.rolling_hoop] contact (Eqs. (4.132),
(4.139)-(4.140)):
``m = 2`` holonomic constraints ``P_z, P_tangent`` and ``l = 2`` nonholonomic ones
``P_vx, P_vy`` (Eq. (4.145)), three degrees of freedom.

Inertia tensors about the centre in the body frame (spin axis ``Y``):

* uniform thin disc: $\\bar I = \\mathrm{diag}(m r^2/4,\\; m r^2/2,\\; m r^2/4)$;
* hoop (all mass on the rim): $\\bar I = \\mathrm{diag}(m r^2/2,\\; m r^2,\\; m r^2/2)$.

A disc and a hoop roll on the same knife-edge rim; only the mass distribution differs.
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
from nhcontrol.modeling import (MultibodySystem, check_parameters, contacts, parameter_values, rot_x,
                                rot_y, rot_z)

if TYPE_CHECKING:  # pragma: no cover
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = [
    "model_disc", "model_hoop", "upright_rolling", "build_disc", "build_hoop", "COORDINATES",
    "DEFAULTS", "PARTITION", "upright_rolling_state"
]

COORDINATES: tuple[str, ...] = ("x", "y", "z", "psi", "phi", "theta", "xi")
"""Coordinates of the rolling wheel (absolute coordinates)."""

DEFAULTS: Mapping[str, float] = {"r": 0.3, "m": 2.0, "g": 9.81}
"""Default parameters: radius r [m], mass m [kg], gravity g [m/s^2]."""

PARTITION: dict[str, list[str]] = dict(
    independent=["x", "psi", "phi"],
    admissible_dependent=["y", "theta"],
    dependent=["z", "xi"],
)
"""Suggested partition (the analogue of Eq. (4.172) for the bicycle): forward position, yaw and lean
independent; the spin ``theta`` and ``y`` follow from the rolling constraints, ``z`` and ``xi`` from
the holonomic ones. ``D_dd`` is regular along
[`upright_rolling()`][nhcontrol.models.rolling_wheel.upright_rolling].
"""

_INERTIA_FACTORS = {"disc": (sp.Rational(1, 4), sp.Rational(1, 2)), "hoop": (sp.Rational(1, 2), sp.Integer(1))}


def _values(kind: str, r: float, m: float, g: float) -> dict[str, float]:
    return check_parameters({"r": r, "m": m, "g": g}, positive=("r", "m"),
                            requirement=f"rolling {kind}: radius r and mass m must be positive finite "
                                        "numbers and g finite")


def _build(kind: str, r: float, m: float, g: float) -> MultibodySystem:
    vals = _values(kind, r, m, g)
    mb = MultibodySystem(f"rolling_{kind}")
    x, y, z, psi, phi, theta, xi = mb.add_coordinates(" ".join(COORDINATES))
    r_s, m_s, g_s = mb.add_parameters(**vals)
    f_diam, f_polar = _INERTIA_FACTORS[kind]
    inertia = sp.diag(f_diam * m_s * r_s**2, f_polar * m_s * r_s**2, f_diam * m_s * r_s**2)
    R = rot_z(psi) * rot_x(phi) * rot_y(theta)
    center = sp.Matrix([x, y, z])
    wheel = mb.add_body(kind, mass=m_s, inertia=inertia, position=center, orientation=R)
    mb.add_gravity(g_s, direction=(0, 0, -1))
    contacts.rolling_hoop(mb, wheel, center, R, r_s, xi, name="P", axis="y")
    return mb


def build_disc(r: float = 0.3, m: float = 2.0, g: float = 9.81) -> MultibodySystem:
    """Symbolic model of a uniform thin disc rolling without slipping.

    Parameters
    ----------
    r : float
        Radius [m] (default of the ``r`` parameter).
    m : float
        Mass [kg].
    g : float
        Gravitational acceleration [m/s^2].

    Returns
    -------
    MultibodySystem
        ``n = 7`` ([`COORDINATES`][nhcontrol.models.rolling_wheel.COORDINATES]), ``m = 2``, ``l = 2``; inertia
        ``diag(m r^2/4, m r^2/2, m r^2/4)``.

    Raises
    ------
    ModelError
        If ``r`` or ``m`` is not positive or a value is not finite.
    """
    return _build("disc", r, m, g)


def build_hoop(r: float = 0.3, m: float = 2.0, g: float = 9.81) -> MultibodySystem:
    """Symbolic model of a hoop (thin ring) rolling without slipping.

    Parameters
    ----------
    r, m, g : float
        Radius [m], mass [kg], gravity [m/s^2].

    Returns
    -------
    MultibodySystem
        As [`build_disc()`][nhcontrol.models.rolling_wheel.build_disc] with inertia ``diag(m r^2/2,
        m r^2, m r^2/2)``.

    Raises
    ------
    ModelError
        If ``r`` or ``m`` is not positive or a value is not finite.
    """
    return _build("hoop", r, m, g)


@lru_cache(maxsize=8)
def _compiled(kind: str, r: float, m: float, g: float) -> "CompiledModel":
    from nhcontrol.compiled.recipe import cached_model

    return cached_model(_build, kind, r, m, g)


def model_disc(r: float = 0.3, m: float = 2.0, g: float = 9.81) -> "CompiledModel":
    """Compiled [`build_disc()`][nhcontrol.models.rolling_wheel.build_disc] (cached). Returns a ``CompiledModel``."""
    vals = _values("disc", r, m, g)
    return _compiled("disc", vals["r"], vals["m"], vals["g"])


def model_hoop(r: float = 0.3, m: float = 2.0, g: float = 9.81) -> "CompiledModel":
    """Compiled [`build_hoop()`][nhcontrol.models.rolling_wheel.build_hoop] (cached). Returns a ``CompiledModel``."""
    vals = _values("hoop", r, m, g)
    return _compiled("hoop", vals["r"], vals["m"], vals["g"])


def upright_rolling_state(v: float, t: ArrayLike, r: float
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Coordinates, velocities, accelerations of the upright wheel rolling straight.

    $x = v t$, $z = r$, $\\theta = v t / r$,
    $\\xi = \\pi/2 - v t/r$ (the contact radius points down, as in Eq. (4.175)),
    all others zero; $\\ddot x = 0$.

    Parameters
    ----------
    v : float
        Forward speed [m/s].
    t : float or (N,) array_like
    r : float
        Wheel radius [m].

    Returns
    -------
    x, xd, xdd : (7,) or (N, 7) ndarray
    """
    tt = np.asarray(t, dtype=float)
    scalar = tt.ndim == 0
    tt = np.atleast_1d(tt)
    x = np.zeros((tt.shape[0], 7))
    x[:, 0] = v * tt
    x[:, 2] = r
    x[:, 5] = v * tt / r
    x[:, 6] = np.pi / 2 - v * tt / r
    xd = np.zeros_like(x)
    xd[:, 0], xd[:, 5], xd[:, 6] = v, v / r, -v / r
    xdd = np.zeros_like(x)
    return (x[0], xd[0], xdd[0]) if scalar else (x, xd, xdd)


def upright_rolling(model: "CompiledModel", v: float,
                    p: ArrayLike | Mapping[str, float] | None = None) -> "Reference":
    """Reference of the upright wheel rolling straight at speed ``v``.

    A relative equilibrium of the disc and the hoop for every ``v``. Multipliers in closed
    form: the only reaction is the weight carried at the contact point, so (reaction
    $-D^T\\Lambda$, Eq. (2.106)) $\\Lambda_{P_z} = -m g$ and all others zero;
    the tests check this against the inverse dynamics of Eq. (2.112).

    Parameters
    ----------
    model : CompiledModel
        [`model_disc()`][nhcontrol.models.rolling_wheel.model_disc] or
        [`model_hoop()`][nhcontrol.models.rolling_wheel.model_hoop].
    v : float
        Forward speed [m/s].
    p : (p,) array_like or mapping, optional
        Parameter vector (order ``model.parameters``) or overrides; defaults when None.

    Returns
    -------
    Reference
        ``steady=True``.

    Raises
    ------
    ModelError
        If ``model`` is not a rolling-wheel model.
    ReferenceMotionError
        If ``v`` is not finite.
    """
    from nhcontrol.reference import Reference, StateComponent

    if tuple(model.coordinates) != COORDINATES:
        raise ModelError(f"expected a rolling-wheel model with coordinates {list(COORDINATES)}, got "
                         f"{getattr(model, 'name', '?')!r} with {list(model.coordinates)}; use model_disc() "
                         "or model_hoop()")
    try:
        speed = float(v)
    except (TypeError, ValueError) as exc:
        raise ReferenceMotionError(f"forward speed v must be a real number in m/s, got {v!r}") from exc
    if not math.isfinite(speed):
        raise ReferenceMotionError(f"forward speed v must be finite, got {v!r}")
    pvec, vals = parameter_values(model, p)
    cnames = list(model.holonomic_names) + list(model.nonholonomic_names)
    lam0 = np.zeros(len(cnames))
    lam0[cnames.index("P_z")] = -vals["m"] * vals["g"]

    state = partial(upright_rolling_state, speed, r=vals["r"])   # picklable (no closures)
    return Reference.from_functions(
        model, StateComponent(state, 0), StateComponent(state, 1), StateComponent(state, 2),
        lam=lam0, p=pvec, steady=True)
