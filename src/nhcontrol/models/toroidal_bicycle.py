"""Bicycle with elliptic toroidal wheels (thesis Sect. 4.5.1, Eqs. (4.185)-(4.197)).

The benchmark bicycle ([`nhcontrol.models.benchmark_bicycle`][nhcontrol.models.benchmark_bicycle])
with both hoops replaced by
elliptic tori
([`nhcontrol.modeling.contacts.elliptic_torus()`][nhcontrol.modeling.contacts.elliptic_torus]): ``n
= 13`` coordinates


```text
x = [x_b, y_b, z_b, psi_b, phi_b, theta_b, delta, theta_R, theta_F, xi_R, xi_F, eta_R, eta_F]
```

(Eq. (4.196)), ``m = 6`` holonomic (Eq. (4.191)) and ``l = 4`` nonholonomic constraints
(Eq. (4.194)); the minimal Jacobian is again ``2(n - m) - l = 10`` square.

Wheel geometry (derived here, see ``docs/theory/toroidal_wheel.md``):
each wheel keeps its overall radius $R_i$ (Table 4.1, parameters ``rho_R``, ``rho_F``), the
torus aspect ratio $\\mu_i = a_i/\\rho_i$ is the ratio of the minor (radial semi-axis of the
cross-section) to the major radius and $\\sigma_i = b_i/a_i$ is the aspect ratio of the
elliptic cross-section (axial over radial semi-axis), so

$$
\\rho_i = \\frac{R_i}{1 + \\mu_i}, \\qquad a_i = \\mu_i \\rho_i, \\qquad b_i = \\sigma_i a_i .
$$

``mu = sigma = 0`` is the hoop of radius $R_i$ (Meijaard et al.'s benchmark). The wheel
inertia is either the benchmark's (Table 4.1, ``wheel_inertia="benchmark"``, default, so that
only the contact geometry changes) or that of a homogeneous elliptic torus of the wheel's mass,
Eqs. (4.189)-(4.190) (``wheel_inertia="torus"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import MultibodySystem, contacts, override_parameters, parameter_values

from . import benchmark_bicycle as _bb

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = [
    "build", "model", "steady_forward", "COORDINATES", "PARAMETERS", "PARTITION",
    "steady_forward_state", "torus_dimensions"
]

COORDINATES: tuple[str, ...] = _bb.COORDINATES + ("eta_R", "eta_F")
"""Generalized coordinates, Eq. (4.196)."""

PARAMETERS: Mapping[str, float] = {**_bb.PARAMETERS, "mu_R": 0.0, "mu_F": 0.0, "sigma_R": 0.0,
                                   "sigma_F": 0.0}
"""Table 4.1 plus the torus aspect ratios (hoops by default)."""

PARTITION: dict[str, list[str]] = dict(
    independent=["x_b", "phi_b", "delta"],
    admissible_dependent=["y_b", "psi_b", "theta_R", "theta_F"],
    dependent=["z_b", "theta_b", "xi_R", "xi_F", "eta_R", "eta_F"],
)
"""Partition of Eq. (4.172) extended with the cross-section coordinates as dependent ones."""

WheelInertia = Literal["benchmark", "torus"]


def _check(overrides: Mapping[str, Any]) -> dict[str, float]:
    return override_parameters(
        PARAMETERS, overrides, model="toroidal-bicycle",
        nonnegative=("mu_R", "mu_F", "sigma_R", "sigma_F"),
        requirement="toroidal-bicycle parameters must be finite reals, aspect ratios mu, sigma >= 0")


def torus_dimensions(R: Any, mu: Any, sigma: Any) -> tuple[Any, Any, Any]:
    """``(rho, a, b)`` of a torus of overall radius ``R``: ``rho = R/(1+mu)``, ``a = mu rho``, ``b = sigma a``."""
    rho = R / (1 + mu)
    a = mu * rho
    return rho, a, sigma * a


def build(inputs: Any = (), *, wheel_inertia: WheelInertia = "benchmark",
          **parameter_overrides: float) -> MultibodySystem:
    """Symbolic bicycle with elliptic toroidal wheels.

    Parameters
    ----------
    inputs : sequence of str, optional
        Any subset of ``("T_phi", "T_delta")``: the benchmark's lean and steer torques
        (Meijaard's signs, `nhcontrol.models.benchmark_bicycle.add_benchmark_torques()`).
    wheel_inertia : {"benchmark", "torus"}
        Table 4.1 wheel inertias, or those of a homogeneous elliptic torus (Eqs. (4.189)-(4.190)).
    **parameter_overrides : float
        New defaults for [`PARAMETERS`][nhcontrol.models.toroidal_bicycle.PARAMETERS] (e.g.
        ``mu_R=0.2``).

    Returns
    -------
    MultibodySystem
        ``n = 13``, ``m = 6`` (``P_z, P_tangent_L, P_tangent_T, Q_z, ...``), ``l = 4``.
    """
    if wheel_inertia not in ("benchmark", "torus"):
        raise ModelError(f"wheel_inertia must be 'benchmark' or 'torus', got {wheel_inertia!r}")
    _bb.check_inputs(inputs)
    values = _check(parameter_overrides)
    mb = MultibodySystem(f"toroidal_bicycle_{wheel_inertia}")
    coords = mb.add_coordinates(" ".join(COORDINATES))
    p = dict(zip(values, mb.add_parameters(**values)))
    dims = {w: torus_dimensions(p[f"rho_{w}"], p[f"mu_{w}"], p[f"sigma_{w}"]) for w in "RF"}
    inertia = None
    if wheel_inertia == "torus":
        def torus(m, rho, a, b):  # Eqs. (4.189)-(4.190)
            ixx = m * (4 * rho**2 + 3 * a**2 + 2 * b**2) / 8
            return sp.diag(ixx, m * (4 * rho**2 + 3 * a**2) / 4, ixx)
        inertia = (torus(p["m_R"], *dims["R"]), torus(p["m_F"], *dims["F"]))
    bodies = _bb.add_frame_and_wheels(mb, coords[:9], p, wheel_inertia=inertia)
    xi_R, xi_F, eta_R, eta_F = coords[9:]
    for w, xi, eta, name in (("R", xi_R, eta_R, "P"), ("F", xi_F, eta_F, "Q")):
        rho, a, _ = dims[w]
        contacts.elliptic_torus(mb, bodies[w], bodies[f"r_G{w}"], bodies[f"R_{w}"], rho, a,
                                p[f"sigma_{w}"], xi, eta, name=name)
    _bb.add_benchmark_torques(mb, inputs)
    return mb


@lru_cache(maxsize=4)
def _compiled(wheel_inertia: str, inputs: tuple[str, ...] = ()):
    from nhcontrol.compiled.recipe import cached_model

    return cached_model(build, inputs, wheel_inertia=wheel_inertia)


def model(inputs: Any = (), *, wheel_inertia: WheelInertia = "benchmark"):
    """Compiled [`build()`][nhcontrol.models.toroidal_bicycle.build] (cached). Change ``mu``/``sigma`` per call with ``cm.param_vector``.

    ``inputs``: any subset of ``("T_phi", "T_delta")`` (lean and steer torque, see
    [`build()`][nhcontrol.models.toroidal_bicycle.build]).
    """
    return _compiled(wheel_inertia, _bb.check_inputs(inputs))


def steady_forward_state(v: float, t: ArrayLike, values: Mapping[str, float]
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Eq. (4.197): the benchmark's steady forward motion with ``eta_R = eta_F = 0``."""
    x, xd, xdd = _bb.steady_forward_state(v, t, values)
    pad = [(0, 0)] * (x.ndim - 1) + [(0, 2)]
    return np.pad(x, pad), np.pad(xd, pad), np.pad(xdd, pad)


def steady_forward(model: CompiledModel, v: float, p: ArrayLike | Mapping[str, float] | None = None):
    """Reference of the steady forward motion at speed ``v`` (Eqs. (4.196)-(4.197)).

    The multipliers come from inverse dynamics, Eq. (2.112), which also checks that the motion
    is dynamically admissible for the given aspect ratios.
    """
    from nhcontrol.reference import Reference, StateComponent

    if tuple(model.coordinates) != COORDINATES:
        raise ModelError(f"expected the toroidal bicycle with coordinates {list(COORDINATES)}, got "
                         f"{list(model.coordinates)}; use nhcontrol.models.toroidal_bicycle.model()")
    pvec, vals = parameter_values(model, p)
    speed = float(v)
    state = partial(steady_forward_state, speed, values=dict(vals))   # picklable (no closures)
    return Reference.from_functions(
        model, StateComponent(state, 0), StateComponent(state, 1), StateComponent(state, 2),
        p=pvec, steady=True)
