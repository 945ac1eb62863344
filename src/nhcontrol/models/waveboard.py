"""Waveboard: two platforms on a torsion bar, each on a caster with a toroidal wheel (Sect. 5.5).

Derived here (the thesis pages of Ch. 5 are missing). Bodies: rear platform + the rider's rear
half ``B``, front platform + front half ``P`` (the rider is rigid and split between the
platforms), rear caster fork ``K`` (on ``B``), front caster fork ``H`` (on ``P``), wheels ``R``,
``F`` (elliptic tori,
[`nhcontrol.modeling.contacts.elliptic_torus()`][nhcontrol.modeling.contacts.elliptic_torus]). ``n
= 15``:


```text
x = [x_b, y_b, z_b, psi_b, phi_b, theta_b, alpha, delta_R, delta_F,
     theta_R, theta_F, xi_R, xi_F, eta_R, eta_F]
```

Orientations: $R_B = R_z(\\psi_b)R_x(\\phi_b)R_y(\\theta_b)$, $R_P = R_B R_x(\\alpha)$
(torsion about the horizontal bar through ``(x_B, h_T)``),
$R_K = R_B R_y(-\\nu_R) R_z(\\delta_R)$, $R_H = R_P R_y(-\\nu_F) R_z(\\delta_F)$,
$R_R = R_K R_y(\\theta_R)$, $R_F = R_H R_y(\\theta_F)$.

Geometry is given in the upright side view (``X`` forward from the rear contact, ``Z`` up), as
in Table 4.1: each caster axis meets the ground at ``c_i`` ahead of its wheel's contact and leans
back by ``nu_i``; a point fixed in a body whose upright position is ``(X, Z)`` has body-frame
coordinates obtained by undoing the upright rotation (``R_y(nu)`` for a fork), which generalizes
Eqs. (4.134)-(4.138). The torsion bar has a linear spring--damper ``k_T, c_T``
([`nhcontrol.modeling.add_joint_spring_damper()`][nhcontrol.modeling.add_joint_spring_damper]); the
casters are free (optional return
spring ``k_K`` on ``delta_R``, zero by default).

Reduction: ``torsion=False, rear_caster=False`` removes ``alpha`` and ``delta_R``; the board is
then a bicycle whose body ``B`` is the composite of ``B, P, K``:
[`benchmark_equivalent()`][nhcontrol.models.waveboard.benchmark_equivalent]
gives its Table 4.1 parameters, and the benchmark bicycle model reproduces its eigenvalues.

Parameters ([`PARAMETERS`][nhcontrol.models.waveboard.PARAMETERS]) are **chosen** (a 0.8 m board
with 76 mm wheels and a 70 kg
rider); see ``docs/theory/waveboard.md``.
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
from nhcontrol.modeling import (MultibodySystem, add_joint_spring_damper, contacts, override_parameters,
                                parameter_values, rot_x, rot_y, rot_z)

from .toroidal_bicycle import torus_dimensions

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = [
    "build", "model", "steady_forward", "COORDINATES", "PARAMETERS", "PARTITION",
    "steady_forward_state", "benchmark_equivalent", "INPUTS"
]

COORDINATES: tuple[str, ...] = ("x_b", "y_b", "z_b", "psi_b", "phi_b", "theta_b", "alpha", "delta_R",
                                "delta_F", "theta_R", "theta_F", "xi_R", "xi_F", "eta_R", "eta_F")
INPUTS: tuple[str, ...] = ("tau_B", "tau_P")
"""Rider actuations (``build(actuated=True)``): ``tau_B`` a roll torque on the rear platform about
``X_B`` (an external torque: the rider's balancing is not modelled), ``tau_P`` the torque of the
rider's feet twisting the front platform about the bar relative to the rear one (action/reaction).
"""

PARAMETERS: Mapping[str, float] = {
    "w": 0.60, "g": 9.81, "h_T": 0.12,                          # contact distance, bar height
    "nu_R": 0.35, "c_R": 0.03, "nu_F": 0.35, "c_F": 0.03,       # caster tilts (20 deg), trails
    "x_B": 0.15, "z_B": 0.95, "m_B": 36.0,                      # rear platform + half rider
    "I_Bxx": 6.0, "I_Byy": 6.0, "I_Bzz": 0.6, "I_Bxz": 0.0,
    "x_P": 0.45, "z_P": 0.95, "m_P": 36.0,                      # front platform + half rider
    "I_Pxx": 6.0, "I_Pyy": 6.0, "I_Pzz": 0.6, "I_Pxz": 0.0,
    "x_K": 0.02, "z_K": 0.06, "m_K": 0.3, "I_Kxx": 2e-4, "I_Kyy": 2e-4, "I_Kzz": 2e-4, "I_Kxz": 0.0,
    "x_H": 0.62, "z_H": 0.06, "m_H": 0.3, "I_Hxx": 2e-4, "I_Hyy": 2e-4, "I_Hzz": 2e-4, "I_Hxz": 0.0,
    "rho_R": 0.038, "m_R": 0.25, "I_Rxx": 1.2e-4, "I_Ryy": 2.0e-4,
    "rho_F": 0.038, "m_F": 0.25, "I_Fxx": 1.2e-4, "I_Fyy": 2.0e-4,
    "mu_R": 0.3, "mu_F": 0.3, "sigma_R": 1.0, "sigma_F": 1.0,
    "k_T": 60.0, "c_T": 0.5, "k_K": 0.0,
}
"""Chosen waveboard + rider (SI units; upright side view, heights positive; inertias about the body's
centre of mass in the upright frame, Z up).
"""

PARTITION: dict[str, list[str]] = dict(
    independent=["x_b", "phi_b", "alpha", "delta_R", "delta_F"],
    admissible_dependent=["y_b", "psi_b", "theta_R", "theta_F"],
    dependent=["z_b", "theta_b", "xi_R", "xi_F", "eta_R", "eta_F"],
)


def _check(overrides: Mapping[str, Any]) -> dict[str, float]:
    return override_parameters(
        PARAMETERS, overrides, model="waveboard",
        nonnegative=("mu_R", "mu_F", "sigma_R", "sigma_F", "k_T", "c_T", "k_K"),
        requirement="waveboard parameters must be finite reals; mu, sigma, k, c >= 0")


def _inertia(p: Mapping[str, Any], k: str) -> sp.Matrix:
    return sp.Matrix([[p[f"I_{k}xx"], 0, p[f"I_{k}xz"]], [0, p[f"I_{k}yy"], 0],
                      [p[f"I_{k}xz"], 0, p[f"I_{k}zz"]]])


def build(*, torsion: bool = True, rear_caster: bool = True, actuated: bool = False,
          **parameter_overrides: float) -> MultibodySystem:
    """Symbolic waveboard.

    Parameters
    ----------
    torsion, rear_caster : bool
        Keep the torsion angle ``alpha`` / the rear caster steer ``delta_R`` as coordinates;
        ``False`` locks them (the coordinate is removed).
    actuated : bool
        Add the rider's torques [`INPUTS`][nhcontrol.models.waveboard.INPUTS] as inputs (for
        inverse dynamics).
    **parameter_overrides : float
        New defaults for [`PARAMETERS`][nhcontrol.models.waveboard.PARAMETERS].
    """
    values = _check(parameter_overrides)
    names = [c for c in COORDINATES if (torsion or c != "alpha") and (rear_caster or c != "delta_R")]
    mb = MultibodySystem("waveboard" + ("" if torsion else "_rigidbar") + ("" if rear_caster else "_lockedK"))
    cs = dict(zip(names, mb.add_coordinates(" ".join(names))))
    p = dict(zip(values, mb.add_parameters(**values)))
    z = sp.Integer(0)
    alpha, delta_R = cs.get("alpha", z), cs.get("delta_R", z)
    R_B = rot_z(cs["psi_b"]) * rot_x(cs["phi_b"]) * rot_y(cs["theta_b"])
    R_P = R_B * rot_x(alpha)
    nuR, nuF = p["nu_R"], p["nu_F"]
    R_K = R_B * rot_y(-nuR) * rot_z(delta_R)
    R_H = R_P * rot_y(-nuF) * rot_z(cs["delta_F"])
    R_R, R_F = R_K * rot_y(cs["theta_R"]), R_H * rot_y(cs["theta_F"])

    r_GB = sp.Matrix([cs["x_b"], cs["y_b"], cs["z_b"]])
    xB, zB, hT = p["x_B"], p["z_B"], p["h_T"]
    r_T = r_GB + R_B * sp.Matrix([0, 0, hT - zB])                  # bar point below G_B
    # caster axes: points at height z0 on the axis through ground point (c or w + c)
    xIR = p["c_R"] - zB * sp.tan(nuR)
    xIF = p["w"] + p["c_F"] - hT * sp.tan(nuF)
    r_IR = r_GB + R_B * sp.Matrix([xIR - xB, 0, 0])
    r_IF = r_T + R_P * sp.Matrix([xIF - xB, 0, 0])

    def fork(nu, X, Z, X0, Z0):  # body coordinates of upright point (X, Z) rel. (X0, Z0)
        return rot_y(nu) * sp.Matrix([X - X0, 0, Z - Z0])

    r_GP = r_T + R_P * sp.Matrix([p["x_P"] - xB, 0, p["z_P"] - hT])
    r_GK = r_IR + R_K * fork(nuR, p["x_K"], p["z_K"], xIR, zB)
    r_GH = r_IF + R_H * fork(nuF, p["x_H"], p["z_H"], xIF, hT)
    r_GR = r_IR + R_K * fork(nuR, 0, p["rho_R"], xIR, zB)
    r_GF = r_IF + R_H * fork(nuF, p["w"], p["rho_F"], xIF, hT)

    def upright_to_fork(I, nu):  # inertia given in the upright frame -> fork body frame
        return rot_y(nu) * I * rot_y(-nu)

    mb.add_body("B", mass=p["m_B"], inertia=_inertia(p, "B"), position=r_GB, orientation=R_B)
    body_P = mb.add_body("P", mass=p["m_P"], inertia=_inertia(p, "P"), position=r_GP, orientation=R_P)
    mb.add_body("K", mass=p["m_K"], inertia=upright_to_fork(_inertia(p, "K"), nuR), position=r_GK,
                orientation=R_K)
    mb.add_body("H", mass=p["m_H"], inertia=upright_to_fork(_inertia(p, "H"), nuF), position=r_GH,
                orientation=R_H)
    body_R = mb.add_body("R", mass=p["m_R"], inertia=sp.diag(p["I_Rxx"], p["I_Ryy"], p["I_Rxx"]),
                         position=r_GR, orientation=R_R)
    body_F = mb.add_body("F", mass=p["m_F"], inertia=sp.diag(p["I_Fxx"], p["I_Fyy"], p["I_Fxx"]),
                         position=r_GF, orientation=R_F)
    mb.add_gravity(p["g"], direction=(0, 0, -1))
    for w, body, r, R in (("R", body_R, r_GR, R_R), ("F", body_F, r_GF, R_F)):
        rho, a, _ = torus_dimensions(p[f"rho_{w}"], p[f"mu_{w}"], p[f"sigma_{w}"])
        contacts.elliptic_torus(mb, body, r, R, rho, a, p[f"sigma_{w}"], cs[f"xi_{w}"], cs[f"eta_{w}"],
                                name="P" if w == "R" else "Q")
    if torsion:
        add_joint_spring_damper(mb, cs["alpha"], p["k_T"], p["c_T"])
    if rear_caster:
        add_joint_spring_damper(mb, cs["delta_R"], p["k_K"])
    if actuated:
        tau_B, tau_P = mb.add_inputs(" ".join(INPUTS))
        ex_B = R_B * sp.Matrix([1, 0, 0])
        mb.add_torque(mb.body("B"), tau_B * ex_B - tau_P * ex_B)   # reaction of the bar torque
        mb.add_torque(body_P, tau_P * ex_B)
    return mb


@lru_cache(maxsize=6)
def _compiled(torsion: bool, rear_caster: bool, actuated: bool):
    from nhcontrol.compiled.recipe import cached_model

    return cached_model(build, torsion=torsion, rear_caster=rear_caster, actuated=actuated)


def model(*, torsion: bool = True, rear_caster: bool = True, actuated: bool = False):
    """Compiled [`build()`][nhcontrol.models.waveboard.build] (cached); parameters per call with ``cm.param_vector(...)``."""
    return _compiled(bool(torsion), bool(rear_caster), bool(actuated))


def steady_forward_state(v: float, t: ArrayLike, values: Mapping[str, float],
                         names: tuple[str, ...] = COORDINATES
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Upright steady forward motion: ``x_b = v t``, ``z_b = z_B``, wheels spinning,
    ``xi_i = nu_i + pi/2 - theta_i`` (as Eq. (4.175)), all other coordinates zero."""
    tt = np.atleast_1d(np.asarray(t, dtype=float))
    idx = {c: i for i, c in enumerate(names)}
    x = np.zeros((tt.size, len(names)))
    xd = np.zeros_like(x)
    x[:, idx["x_b"]], xd[:, idx["x_b"]] = v * tt, v
    x[:, idx["z_b"]] = values["z_B"]
    for w in "RF":
        om = v / values[f"rho_{w}"]
        x[:, idx[f"theta_{w}"]], xd[:, idx[f"theta_{w}"]] = om * tt, om
        x[:, idx[f"xi_{w}"]], xd[:, idx[f"xi_{w}"]] = values[f"nu_{w}"] + math.pi / 2 - om * tt, -om
    xdd = np.zeros_like(x)
    if np.ndim(t) == 0:
        return x[0], xd[0], xdd[0]
    return x, xd, xdd


def steady_forward(model: CompiledModel, v: float, p: ArrayLike | Mapping[str, float] | None = None):
    """Reference of the upright steady forward motion (multipliers by inverse dynamics, Eq. (2.112))."""
    from nhcontrol.reference import Reference

    names = tuple(model.coordinates)
    if not set(names) <= set(COORDINATES) or "delta_F" not in names:
        raise ModelError(f"expected a waveboard model (coordinates {list(COORDINATES)}), got {list(names)}; "
                         "use nhcontrol.models.waveboard.model()")
    try:
        speed = float(v)
    except (TypeError, ValueError) as exc:
        raise ReferenceMotionError(f"forward speed v must be a real number in m/s, got {v!r}") from exc
    if not math.isfinite(speed):
        raise ReferenceMotionError(f"forward speed v must be finite, got {v!r}")
    pvec, vals = parameter_values(model, p)
    f = [lambda t, k=k: steady_forward_state(speed, t, vals, names)[k] for k in range(3)]
    return Reference.from_functions(model, f[0], f[1], f[2], p=pvec, steady=True)


def benchmark_equivalent(values: Mapping[str, float] | None = None) -> dict[str, float]:
    """Table 4.1 parameters of the locked board (rigid bar, locked rear caster, hoop wheels).

    Body ``B`` of the benchmark is the composite of ``B, P, K``: total mass, mass centre and
    inertia by the parallel-axis theorem in the upright frame (Z up), then expressed in
    Meijaard's frame (Z down: ``I_xz -> -I_xz``, Eqs. (4.130)-(4.131)). The front fork ``H`` is
    the benchmark's handlebar; the steer axis ``nu_F`` is Meijaard's ``lambda``, ``c_F`` the trail.
    """
    v = dict(PARAMETERS) if values is None else {**PARAMETERS, **values}
    parts = [("B", v["x_B"], v["z_B"]), ("P", v["x_P"], v["z_P"]), ("K", v["x_K"], v["z_K"])]
    m = sum(v[f"m_{k}"] for k, _, _ in parts)
    xc = sum(v[f"m_{k}"] * X for k, X, _ in parts) / m
    zc = sum(v[f"m_{k}"] * Z for k, _, Z in parts) / m
    I = np.zeros((3, 3))
    for k, X, Z in parts:
        Ik = np.array([[v[f"I_{k}xx"], 0, v[f"I_{k}xz"]], [0, v[f"I_{k}yy"], 0], [v[f"I_{k}xz"], 0, v[f"I_{k}zz"]]])
        d = np.array([X - xc, 0.0, Z - zc])
        I += Ik + v[f"m_{k}"] * (d @ d * np.eye(3) - np.outer(d, d))
    return {
        "w": v["w"], "c": v["c_F"], "nu": v["nu_F"], "g": v["g"],
        "x_B": xc, "z_B": zc, "x_H": v["x_H"], "z_H": v["z_H"],
        "m_B": m, "I_Bxx": I[0, 0], "I_Byy": I[1, 1], "I_Bzz": I[2, 2], "I_Bxz": -I[0, 2],
        "m_H": v["m_H"], "I_Hxx": v["I_Hxx"], "I_Hyy": v["I_Hyy"], "I_Hzz": v["I_Hzz"], "I_Hxz": -v["I_Hxz"],
        "rho_R": v["rho_R"], "m_R": v["m_R"], "I_Rxx": v["I_Rxx"], "I_Ryy": v["I_Ryy"],
        "rho_F": v["rho_F"], "m_F": v["m_F"], "I_Fxx": v["I_Fxx"], "I_Fyy": v["I_Fyy"],
    }
