"""Electric kick-scooter with toroidal wheels and front/rear suspensions (thesis Sect. 5.6).

Derived here from first principles (thesis Sect. 5.6; Ch. 9 summarises its conclusions). The
scooter is the bicycle of [`nhcontrol.models.toroidal_bicycle`][nhcontrol.models.toroidal_bicycle]
(frame + standing rider
``B``, handlebar/column/fork ``H``, rear wheel ``R``, front wheel ``F``, elliptic toroidal
wheels, Eqs. (4.185)-(4.197)) with two prismatic suspensions, ``n = 15`` coordinates


```text
x = [x_b, y_b, z_b, psi_b, phi_b, theta_b, delta, theta_R, theta_F, xi_R, xi_F,
     eta_R, eta_F, s_R, s_F]
```

* rear: the rear wheel centre slides by ``s_R`` along the frame axis ``Z_B`` (swing arm
  replaced by a slider, small-travel equivalent);
* front: the front wheel centre slides by ``s_F`` along the steer axis ``Z_H`` (telescopic fork);

each with a linear spring--damper
([`nhcontrol.modeling.add_joint_spring_damper()`][nhcontrol.modeling.add_joint_spring_damper])
whose
preload makes ``s = 0`` the static equilibrium:

$$
f_{0R} = N_P - m_R g, \\qquad f_{0F} = (N_Q - m_F g)\\cos\\nu,
$$

with the static wheel loads $N_P, N_Q$ of
[`nhcontrol.models.benchmark_bicycle.static_wheel_loads()`][nhcontrol.models.benchmark_bicycle.static_wheel_loads]
(the unsprung wheel is in
equilibrium under its weight, the ground load and the spring force along the joint axis; the
fork's transverse reaction takes the rest). The steady forward motion is the toroidal bicycle's
(Eq. (4.197)) with ``s_R = s_F = 0``. ``m = 6``, ``l = 4``: the minimal Jacobian is 14 × 14.

In the upright steady motion the in-plane (bounce/pitch: ``s_R, s_F``) and out-of-plane
(lean/steer) linear dynamics decouple by symmetry, so with hoop wheels and Table 4.1 the lean-steer
eigenvalues are Meijaard's for any suspension stiffness -- the reduction check of the tests.

Parameters ([`PARAMETERS`][nhcontrol.models.escooter.PARAMETERS], all **chosen**, see
``docs/models/escooter.md``): a kick-scooter
of the SEAT eXS / Segway-Ninebot ES class (8-inch tyres, ~0.8 m wheelbase) with a 75 kg
standing rider; the geometric and inertial data of the thesis' SEAT eXS set are not reproduced.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.modeling import (MultibodySystem, add_joint_spring_damper, contacts, override_parameters,
                                parameter_values)

from . import benchmark_bicycle as _bb
from . import toroidal_bicycle as _tb

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = [
    "build", "model", "steady_forward", "COORDINATES", "PARAMETERS", "BENCHMARK_PARAMETERS",
    "PARTITION", "steady_forward_state", "preloads"
]

COORDINATES: tuple[str, ...] = _tb.COORDINATES + ("s_R", "s_F")
"""Generalized coordinates (Eq. (4.196) plus the two suspension travels)."""

PARAMETERS: Mapping[str, float] = {
    "w": 0.84, "c": 0.06, "nu": 0.26, "g": 9.81,                  # wheelbase, trail, 15 deg tilt
    "x_B": 0.40, "z_B": 1.05, "x_H": 0.78, "z_H": 0.60,           # rider over the deck; column
    "m_B": 85.0, "I_Bxx": 14.0, "I_Byy": 15.0, "I_Bzz": 2.0, "I_Bxz": 0.5,
    "m_H": 4.0, "I_Hxx": 0.80, "I_Hyy": 0.80, "I_Hzz": 0.10, "I_Hxz": -0.04,
    "rho_R": 0.10, "m_R": 1.5, "I_Rxx": 0.005, "I_Ryy": 0.010,
    "rho_F": 0.10, "m_F": 3.5, "I_Fxx": 0.012, "I_Fyy": 0.022,   # front hub motor
    "mu_R": 0.35, "mu_F": 0.35, "sigma_R": 1.0, "sigma_F": 1.0,   # 52 mm tyre section
    "k_R": 4.0e4, "c_R": 400.0, "k_F": 3.0e4, "c_F": 300.0,
}
"""Chosen e-scooter parameter set (Meijaard's names, thesis signs; SI units). Inertias of ``B`` and
``H`` in Meijaard's frame (Z down), wheel inertias about the centre.
"""

BENCHMARK_PARAMETERS: Mapping[str, float] = {
    **_bb.PARAMETERS, "mu_R": 0.0, "mu_F": 0.0, "sigma_R": 0.0, "sigma_F": 0.0,
    "k_R": 4.0e4, "c_R": 400.0, "k_F": 3.0e4, "c_F": 300.0,
}
"""Table 4.1 with hoop wheels (``mu = sigma = 0``) and the chosen suspensions: the reduction case.
"""

PARTITION: dict[str, list[str]] = dict(
    independent=["x_b", "phi_b", "delta", "s_R", "s_F"],
    admissible_dependent=["y_b", "psi_b", "theta_R", "theta_F"],
    dependent=["z_b", "theta_b", "xi_R", "xi_F", "eta_R", "eta_F"],
)
"""The toroidal bicycle's partition with the suspension travels independent."""


def _check(overrides: Mapping[str, Any]) -> dict[str, float]:
    return override_parameters(
        PARAMETERS, overrides, model="e-scooter",
        nonnegative=("mu_R", "mu_F", "sigma_R", "sigma_F", "k_R", "c_R", "k_F", "c_F"),
        requirement="e-scooter parameters must be finite reals; mu, sigma, k, c >= 0")


def preloads(values: Mapping[str, Any]) -> tuple[Any, Any]:
    """Suspension preloads ``(f0_R, f0_F)`` that make ``s = 0`` static (numbers or expressions)."""
    total = values["m_R"] + values["m_B"] + values["m_H"] + values["m_F"]
    n_q = values["g"] * (values["m_B"] * values["x_B"] + values["m_H"] * values["x_H"]
                         + values["m_F"] * values["w"]) / values["w"]
    n_p = values["g"] * total - n_q
    cos = sp.cos if isinstance(values["nu"], sp.Basic) else np.cos
    return n_p - values["m_R"] * values["g"], (n_q - values["m_F"] * values["g"]) * cos(values["nu"])


def build(*, suspension: bool = True, **parameter_overrides: float) -> MultibodySystem:
    """Symbolic e-scooter (toroidal wheels, benchmark wheel inertias, suspensions).

    Parameters
    ----------
    suspension : bool
        Include the two suspension travels ``s_R, s_F`` (``n = 15``); ``False`` gives the
        rigid scooter (``n = 13``, the toroidal bicycle's coordinates).
    **parameter_overrides : float
        New defaults for [`PARAMETERS`][nhcontrol.models.escooter.PARAMETERS].

    Returns
    -------
    MultibodySystem
    """
    values = _check(parameter_overrides)
    names = COORDINATES if suspension else _tb.COORDINATES
    mb = MultibodySystem("escooter" if suspension else "escooter_rigid")
    coords = mb.add_coordinates(" ".join(names))
    p = dict(zip(values, mb.add_parameters(**values)))
    travel = (coords[13], coords[14]) if suspension else (0, 0)
    bodies = _bb.add_frame_and_wheels(mb, coords[:9], p, suspension=travel)
    xi_R, xi_F, eta_R, eta_F = coords[9:13]
    for w, xi, eta, name in (("R", xi_R, eta_R, "P"), ("F", xi_F, eta_F, "Q")):
        rho, a, _ = _tb.torus_dimensions(p[f"rho_{w}"], p[f"mu_{w}"], p[f"sigma_{w}"])
        contacts.elliptic_torus(mb, bodies[w], bodies[f"r_G{w}"], bodies[f"R_{w}"], rho, a,
                                p[f"sigma_{w}"], xi, eta, name=name)
    if suspension:
        f0_R, f0_F = preloads(p)
        add_joint_spring_damper(mb, coords[13], p["k_R"], p["c_R"], f0_R)
        add_joint_spring_damper(mb, coords[14], p["k_F"], p["c_F"], f0_F)
    return mb


@lru_cache(maxsize=4)
def _compiled(suspension: bool):
    from nhcontrol.compiled.recipe import cached_model

    return cached_model(build, suspension=suspension)


def model(*, suspension: bool = True):
    """Compiled [`build()`][nhcontrol.models.escooter.build] (cached); change parameters per call with ``cm.param_vector(...)``."""
    return _compiled(bool(suspension))


def steady_forward_state(v: float, t: ArrayLike, values: Mapping[str, float], n: int = 15
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Eq. (4.197) with ``eta_R = eta_F = 0`` and, when ``n = 15``, ``s_R = s_F = 0``."""
    x, xd, xdd = _tb.steady_forward_state(v, t, values)
    pad = [(0, 0)] * (x.ndim - 1) + [(0, n - 13)]
    return np.pad(x, pad), np.pad(xd, pad), np.pad(xdd, pad)


def steady_forward(model: CompiledModel, v: float, p: ArrayLike | Mapping[str, float] | None = None):
    """Reference of the steady forward motion at speed ``v`` [m/s].

    The multipliers come from inverse dynamics, Eq. (2.112); the preloads of
    [`preloads()`][nhcontrol.models.escooter.preloads]
    make the motion dynamically admissible (checked by ``Reference.check``).

    Raises
    ------
    ModelError
        If ``model`` is not an e-scooter model of this module.
    ReferenceMotionError
        If ``v`` is not a finite real number.
    """
    from nhcontrol.reference import Reference

    coords = tuple(model.coordinates)
    if coords not in (COORDINATES, _tb.COORDINATES):
        raise ModelError(f"expected the e-scooter with coordinates {list(COORDINATES)}, got "
                         f"{list(coords)}; use nhcontrol.models.escooter.model()")
    try:
        speed = float(v)
    except (TypeError, ValueError) as exc:
        raise ReferenceMotionError(f"forward speed v must be a real number in m/s, got {v!r}") from exc
    if not np.isfinite(speed):
        raise ReferenceMotionError(f"forward speed v must be finite, got {v!r}")
    pvec, vals = parameter_values(model, p)
    n = len(coords)
    return Reference.from_functions(
        model,
        lambda t: steady_forward_state(speed, t, vals, n)[0],
        lambda t: steady_forward_state(speed, t, vals, n)[1],
        lambda t: steady_forward_state(speed, t, vals, n)[2],
        p=pvec, steady=True)
