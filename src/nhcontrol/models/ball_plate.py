"""The ball-plate system of thesis Sect. 8.4: a sphere rolling on a plate tilted by the inputs.

Model (Sect. 8.4.1, Fig. 8.1, Eqs. (8.44)--(8.61))
---------------------------------------------------
``n = 5`` coordinates, ``m = 0`` holonomic and ``l = 2`` nonholonomic constraints, ``k = 2``
inputs (the plate angles, Eq. (8.44)):


```text
x = [x_C, y_C, psi, phi, theta]        u = [alpha, beta]
```

``(x_C, y_C)`` locate the contact point ``C`` in the plate frame (body 2), ``psi, phi, theta``
(yaw, lean, roll) the orientation of the sphere (body 3) relative to the plate,

$$
\\begin{gathered}
R_2 = R_x(\\alpha) R_y(\\beta), \\qquad R_3 = R_2 R_z(\\psi) R_x(\\varphi) R_y(\\theta)
\\qquad \\text{(Eq. (8.46))} \\\\
r_C = R_2 [x_C, y_C, 0]^T, \\qquad r_{G3} = r_C + R_2 [0, 0, R]^T
\\qquad \\text{(Eqs. (8.47), (8.48))}
\\end{gathered}
$$

and the rolling constraints are those of
[`sphere_on_moving_plane()`][nhcontrol.modeling.contacts.sphere_on_moving_plane] (Eqs.
(8.49)--(8.57)).
Parameters (Eq. (8.88)): mass ``m = 0.1`` kg, radius ``R = 0.05`` m, ``g = 9.81`` m/s², central
moment of inertia ``I = 2/5 m R²`` (isotropic).

Modelling assumption (stated and checked in ``tests/test_ball_plate_model.py``): the plate is
*quasi-static* — its angles ``α, β`` enter the positions and orientations, but their rates do not
(velocities are ``∂/∂x · ẋ``, Sect. 8.1). The plate frame is then an inertial frame tilted by
``u``; only the direction of gravity in it changes. This reproduces Eqs. (8.67)--(8.71) exactly;
prescribing the plate angles *with* their rates would add Euler, centrifugal and Coriolis terms of
the rotating plate that those equations do not contain (``docs/theory/ball_plate.md``).

Reference, linearization, controllability
-----------------------------------------
[`circular_motion()`][nhcontrol.models.ball_plate.circular_motion] is the circular steady motion of
Eqs. (8.62)--(8.71); `ltv_system()`
the 8-state LTV system of Eq. (8.74) from [`nhcontrol.linearize()`][nhcontrol.linearize] with the
partition
[`PARTITION_8_72`][nhcontrol.models.ball_plate.PARTITION_8_72]; `closed_form_ltv()` its closed form
(Eqs. (8.75)--(8.76), with exact
time derivatives for Silverman--Meadows);
[`spin_reduction()`][nhcontrol.models.ball_plate.spin_reduction] and
`controllable_formulation()` remove the one uncontrollable direction, the conserved spin of
the ball about the plate normal ``ω_n = ψ̇ + θ̇ sin φ`` (Sect. 8.4.4--8.4.5).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import (ConditioningWarning, LinearSystemError, ModelError,
                                    ReferenceMotionError)
from nhcontrol._util.validation import as_float_array, readonly
from nhcontrol.modeling import (MultibodySystem, check_parameters, contacts, override_parameters,
                                parameter_values, rot_x, rot_y, rot_z)
from nhcontrol.linearization import state_deviation
from nhcontrol.reference import consistent_initial_conditions
from nhcontrol._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = [
    "build", "model", "circular_motion", "COORDINATES", "INPUTS", "DEFAULTS", "PARTITION_8_72",
    "LTV_STATES", "REDUCED_STATES", "CircularMotion", "circular_parameters",
    "motion_from_reference", "initial_conditions", "spin_matched_motion", "deviation",
    "reoriented_state", "orientation_free_deviation",
    "closed_form_matrices", "SpinReduction", "spin_reduction"
]

COORDINATES: tuple[str, ...] = ("x_C", "y_C", "psi", "phi", "theta")
"""Generalized coordinates, Eq. (8.45) / Fig. 8.1."""
INPUTS: tuple[str, ...] = ("alpha", "beta")
"""Inputs: plate angles about the global X and the plate Y axis, Eq. (8.44)."""
DEFAULTS: Mapping[str, float] = {"m": 0.1, "R": 0.05, "g": 9.81, "I": 0.4 * 0.1 * 0.05 ** 2}
"""Default parameters, Eq. (8.88) (``I = 2/5 m R²``, the solid sphere)."""
PARTITION_8_72: dict[str, tuple[str, ...]] = dict(
    independent=("psi", "phi", "theta"), admissible_dependent=("x_C", "y_C"), dependent=())
"""Coordinate partition of Eqs. (8.72)-(8.73): the three angles independent, the contact point
admissible dependent (``D_dd = I_2``, regular everywhere).
"""
LTV_STATES: tuple[str, ...] = ("psi", "phi", "theta", "psi_d", "phi_d", "theta_d", "x_C", "y_C")
"""State of the LTV system (8.74), ``X̃ = [x̃_ai, ẋ̃_ai, x̃_ad]``."""
REDUCED_STATES: tuple[str, ...] = ("psi", "phi", "theta", "phi_d", "theta_d", "x_C", "y_C")
"""State of the controllable formulation (``psi_d`` eliminated through the spin, Sect. 8.4.5)."""
COS_PHI_MIN = 1e-6
"""|cos(phi0)| below which the yaw-lean-roll angles are singular (det G = cos phi, Eq. (8.59))."""
SEC_PHI_WARN = 1e3
"""``sec(phi0) = 1/|cos(phi0)|`` above which `circular_parameters()` warns
(`ConditioningWarning`): the spin ``Ω = ρω/(R cos φ0)`` (Eq. (8.64)) and the angle rates grow
like ``sec φ0`` and the linearization about the circle loses accuracy like ``ε·sec²φ0``.
Measured (``A(t)``, ``B(t)`` of `nhcontrol.linearize` against the closed form
Eqs. (8.75)-(8.76), relative, default parameters): 9e-15 at 85°, 1e-11 at 89.9° (sec = 573),
8e-10 at 89.99° (sec = 5.7e3), 5e-8 at 89.999° (sec = 5.7e4).
"""

_SPIN = LTV_STATES.index("psi_d")


# ---------------------------------------------------------------------------- model
def _parameters(overrides: Mapping[str, Any]) -> dict[str, float]:
    vals = override_parameters(
        DEFAULTS, overrides, model="ball-plate", sort_names=False, positive=("m", "R", "I"),
        names_note=" (mass m [kg], radius R [m], gravity g [m/s^2], central inertia I [kg m^2])",
        requirement="invalid ball-plate parameters: m, R and I must be positive and finite, g finite")
    if "I" not in overrides:  # solid ball of the given m and R
        vals.update(check_parameters(
            {"I": 0.4 * vals["m"] * vals["R"] ** 2}, positive=("I",),
            requirement="invalid ball-plate parameters: the inertia I = 0.4 m R^2 of a solid ball of "
                        f"m={vals['m']!r}, R={vals['R']!r} must be positive and finite (give I)"))
    return vals


def build(**overrides: float) -> MultibodySystem:
    """Symbolic ball-plate model of Sect. 8.4.1 (Eqs. (8.44)--(8.57)).

    Parameters
    ----------
    **overrides : float
        Default values of the parameters ``m, R, g, I`` (Eq. (8.88)). When ``m`` or ``R`` is given
        and ``I`` is not, ``I = 2/5 m R²``.

    Returns
    -------
    MultibodySystem
        ``n = 5``, ``m = 0``, ``l = 2``, ``k = 2``; one body ``ball``; gravity along ``-Z``.

    Raises
    ------
    ModelError
        Unknown parameter names, non-positive ``m``, ``R``, ``I``.

    Notes
    -----
    The plate is not a body of the model: its motion is prescribed by the inputs, so with the
    quasi-static convention it contributes nothing to ``M`` and ``Q``.
    """
    vals = _parameters(overrides)
    mb = MultibodySystem("ball_plate")
    xC, yC, psi, phi, theta = mb.add_coordinates(" ".join(COORDINATES))
    m, R, g, I = mb.add_parameters(**vals)
    alpha, beta = mb.add_inputs(" ".join(INPUTS))
    R2 = rot_x(alpha) * rot_y(beta)                                   # Eq. (8.46)
    R3 = R2 * rot_z(psi) * rot_x(phi) * rot_y(theta)
    r_c_bar = sp.Matrix([xC, yC, 0])                                  # Eq. (8.47)
    r_g3 = R2 * (r_c_bar + sp.Matrix([0, 0, R]))                      # Eq. (8.48)
    ball = mb.add_body("ball", mass=m, inertia=I * sp.eye(3), position=r_g3, orientation=R3)
    mb.add_gravity(g, direction=(0, 0, -1))
    contacts.sphere_on_moving_plane(mb, ball, radius=R, plate_orientation=R2,
                                    contact_point_plate=r_c_bar, name="roll")
    return mb


@lru_cache(maxsize=8)
def _compiled(items: tuple[tuple[str, float], ...]):
    from nhcontrol.compiled.recipe import cached_model

    return cached_model(build, **dict(items))


def model(**overrides: float):
    """Compiled [`build()`][nhcontrol.models.ball_plate.build] (kernels cached on disk and in memory). Returns a ``CompiledModel``."""
    vals = _parameters(overrides)
    return _compiled(tuple(sorted(vals.items())))


def _param_values(cm: CompiledModel, p: ArrayLike | Mapping[str, float] | None) -> tuple[NDArray[np.float64], dict[str, float]]:
    if tuple(getattr(cm, "coordinates", ())) != COORDINATES or tuple(getattr(cm, "inputs", ())) != INPUTS:
        raise ModelError(f"expected the ball-plate model (coordinates {list(COORDINATES)}, inputs "
                         f"{list(INPUTS)}), got {getattr(cm, 'name', '?')!r} with coordinates "
                         f"{list(getattr(cm, 'coordinates', ()))}; use nhcontrol.models.ball_plate.model()")
    return parameter_values(cm, p)


# ---------------------------------------------------------------------------- reference
@dataclass(frozen=True)
class CircularMotion:
    """Circular steady motion of the ball on the plate, Eqs. (8.62)--(8.71).

    Attributes
    ----------
    phi0 : float
        Lean angle φ0 [rad].
    rho, omega : float
        Radius ρ [m] of the circle described by ``C`` and its angular rate ω [rad/s].
    x_A, y_A : float
        Centre ``A`` of the circle (plate frame) [m].
    Omega : float
        Roll rate Ω = ρω / (R cos φ0) [rad/s], Eq. (8.64).
    tilt : float
        ``K = (ρ m ω R + I Ω cos φ0) ω / (m g R)``, the amplitude of ``sin α0`` (Eq. (8.70)).
    m, R, g, I : float
        Parameters used.
    """

    __repr__ = concise_repr

    phi0: float
    rho: float
    omega: float
    x_A: float
    y_A: float
    Omega: float
    tilt: float
    m: float
    R: float
    g: float
    I: float

    @property
    def period(self) -> float:
        """``2π/|ω|`` [s]."""
        return 2.0 * math.pi / abs(self.omega)

    def x(self, t: ArrayLike) -> NDArray[np.float64]:
        """``x0(t)``, Eq. (8.63); ``(5,)`` or ``(N, 5)``."""
        tt = np.asarray(t, dtype=float)
        wt = self.omega * tt
        out = np.stack([self.x_A + self.rho * np.cos(wt), self.y_A + self.rho * np.sin(wt),
                        0.5 * np.pi + wt, np.full_like(wt, self.phi0), self.Omega * tt], axis=-1)
        return out

    def xd(self, t: ArrayLike) -> NDArray[np.float64]:
        """``ẋ0(t)``; ``(5,)`` or ``(N, 5)``."""
        wt = self.omega * np.asarray(t, dtype=float)
        rw = self.rho * self.omega
        return np.stack([-rw * np.sin(wt), rw * np.cos(wt), np.full_like(wt, self.omega),
                         np.zeros_like(wt), np.full_like(wt, self.Omega)], axis=-1)

    def xdd(self, t: ArrayLike) -> NDArray[np.float64]:
        """``ẍ0(t)``; ``(5,)`` or ``(N, 5)``."""
        wt = self.omega * np.asarray(t, dtype=float)
        rw2 = self.rho * self.omega ** 2
        z = np.zeros_like(wt)
        return np.stack([-rw2 * np.cos(wt), -rw2 * np.sin(wt), z, z, z], axis=-1)

    def u(self, t: ArrayLike) -> NDArray[np.float64]:
        """``u0(t) = [α0, β0]``, Eqs. (8.70)--(8.71); ``(2,)`` or ``(N, 2)``."""
        wt = self.omega * np.asarray(t, dtype=float)
        K = self.tilt
        sin_a = K * np.sin(wt)
        sin_b = -K * np.cos(wt) / np.sqrt(1.0 - (K * np.sin(wt)) ** 2)
        return np.stack([np.arcsin(sin_a), np.arcsin(sin_b)], axis=-1)

    def lam(self, t: ArrayLike) -> NDArray[np.float64]:
        """``Λ0(t)``, Eqs. (8.67)--(8.68); ``(2,)`` or ``(N, 2)`` (order ``roll_x, roll_y``)."""
        wt = self.omega * np.asarray(t, dtype=float)
        a, b = np.moveaxis(self.u(t), -1, 0)
        mw2 = self.rho * self.m * self.omega ** 2
        return np.stack([mw2 * np.cos(wt) + self.m * self.g * np.cos(a) * np.sin(b),
                         mw2 * np.sin(wt) - self.m * self.g * np.sin(a)], axis=-1)


def circular_parameters(cm: CompiledModel, phi0_deg: float, *, rho: float = 0.5, omega: float = 1.0,
                        x_A: float = 0.0, y_A: float = 0.0,
                        p: ArrayLike | Mapping[str, float] | None = None) -> CircularMotion:
    """Parameters of the circular steady motion (Eqs. (8.62)--(8.64), (8.70)).

    Parameters
    ----------
    cm : CompiledModel
        [`model()`][nhcontrol.models.ball_plate.model].
    phi0_deg : float
        Lean angle φ0 in degrees (5 and 35 in the thesis).
    rho, omega : float
        Circle radius [m] and rate [rad/s] (Eq. (8.88): 0.5 m, 1 rad/s).
    x_A, y_A : float
        Circle centre in the plate frame [m].
    p : (4,) array_like or mapping, optional
        Parameters (order ``cm.parameters``) or overrides; defaults when None.

    Returns
    -------
    CircularMotion

    Raises
    ------
    ReferenceMotionError
        Non-finite values, ``rho <= 0``, ``omega == 0``, ``|cos φ0|`` too small (the angles are
        singular), or a circle too fast for a tilt to exist (``|K| >= 1`` in Eq. (8.70)).

    Warns
    -----
    ConditioningWarning
        ``1/|cos φ0| > SEC_PHI_WARN`` (``1e3``, ``|φ0|`` within ~0.057° of 90°): the reference
        is ill conditioned and the linearization about it loses accuracy (``ε sec² φ0``).
    """
    _, vals = _param_values(cm, p)
    try:
        phi0 = math.radians(float(phi0_deg))
        rho_f, om_f, xa, ya = float(rho), float(omega), float(x_A), float(y_A)
    except (TypeError, ValueError) as exc:
        raise ReferenceMotionError(f"phi0_deg, rho, omega, x_A, y_A must be real numbers: {exc}") from exc
    if not all(math.isfinite(v) for v in (phi0, rho_f, om_f, xa, ya)):
        raise ReferenceMotionError(f"circular motion parameters must be finite, got phi0_deg={phi0_deg}, "
                                   f"rho={rho}, omega={omega}, x_A={x_A}, y_A={y_A}")
    if rho_f <= 0 or om_f == 0:
        raise ReferenceMotionError(f"the circle needs rho > 0 and omega != 0, got rho={rho_f}, omega={om_f}")
    if abs(math.cos(phi0)) < COS_PHI_MIN:
        raise ReferenceMotionError(f"phi0 = {phi0_deg} deg makes cos(phi0) = {math.cos(phi0):.2e}: the yaw-lean-"
                                   "roll angles are singular there (Eq. (8.59) divides by cos phi); "
                                   "choose |phi0| < 90 deg")
    sec = 1.0 / abs(math.cos(phi0))
    if sec > SEC_PHI_WARN:
        warnings.warn(
            f"phi0 = {phi0_deg} deg is {90.0 - abs(math.degrees(phi0)) % 180.0:.3g} deg from the "
            f"singular lean of the yaw-lean-roll angles (Eq. (8.59) divides by cos phi0): "
            f"sec(phi0) = {sec:.3g} > {SEC_PHI_WARN:g}. The reference is ill conditioned: the spin "
            f"Omega = rho omega / (R cos phi0) (Eq. (8.64)) is {sec:.3g} times rho omega / R and "
            f"the linearization about it loses accuracy like eps sec^2(phi0) ~ "
            f"{np.finfo(float).eps * sec**2:.1e} (relative). Keep |phi0| further from 90 deg.",
            ConditioningWarning, stacklevel=3)
    m, R, g, I = vals["m"], vals["R"], vals["g"], vals["I"]
    Omega = rho_f * om_f / (R * math.cos(phi0))                                   # Eq. (8.64)
    K = (rho_f * m * om_f * R + I * Omega * math.cos(phi0)) * om_f / (m * g * R)  # Eq. (8.70)
    if not abs(K) < 1.0:
        raise ReferenceMotionError(
            f"no plate tilt can hold this circle: sin(alpha0) would reach |K| = {abs(K):.4g} >= 1 "
            f"(Eq. (8.70), K = (rho m omega R + I Omega cos phi0) omega / (m g R)); expected |K| < 1, "
            f"reduce rho or omega (rho = {rho_f}, omega = {om_f})")
    return CircularMotion(phi0=phi0, rho=rho_f, omega=om_f, x_A=xa, y_A=ya, Omega=Omega, tilt=K,
                          m=m, R=R, g=g, I=I)


def circular_motion(cm: CompiledModel, phi0_deg: float, *, rho: float = 0.5, omega: float = 1.0,
                    x_A: float = 0.0, y_A: float = 0.0,
                    p: ArrayLike | Mapping[str, float] | None = None):
    """Circular steady motion of the ball as a [`Reference`][nhcontrol.reference.Reference].

    ``x0(t)`` of Eqs. (8.62)--(8.63) with Ω of Eq. (8.64), multipliers Λ0 of
    Eqs. (8.67)--(8.68) and plate angles u0 of Eqs. (8.69)--(8.71). The reference constructor
    checks the constraints and the dynamic equations (8.65) with these multipliers and inputs.

    Parameters
    ----------
    cm : CompiledModel
    phi0_deg, rho, omega, x_A, y_A, p
        See [`circular_parameters()`][nhcontrol.models.ball_plate.circular_parameters].

    Returns
    -------
    Reference
        ``steady=False``, ``period = 2π/|ω|``.

    Raises
    ------
    ReferenceMotionError
        See [`circular_parameters()`][nhcontrol.models.ball_plate.circular_parameters]; also if the
        model does not satisfy Eq. (8.65).

    Examples
    --------
    >>> from nhcontrol.models import ball_plate as bp                 # doctest: +SKIP
    >>> ref = bp.circular_motion(bp.model(), 5.0)                     # doctest: +SKIP
    >>> round(float(ref.xd(0.0)[4]), 4)                               # doctest: +SKIP
    10.0382
    """
    from nhcontrol.reference import Reference

    cmo = circular_parameters(cm, phi0_deg, rho=rho, omega=omega, x_A=x_A, y_A=y_A, p=p)
    pvec, _ = _param_values(cm, p)
    return Reference.from_functions(cm, cmo.x, cmo.xd, cmo.xdd, u=cmo.u, lam=cmo.lam, p=pvec,
                                    steady=False, period=cmo.period)


def motion_from_reference(cm: CompiledModel, ref: Reference, *, rtol: float = 1e-9) -> CircularMotion:
    """Recover the [`CircularMotion`][nhcontrol.models.ball_plate.CircularMotion] behind a reference made by [`circular_motion()`][nhcontrol.models.ball_plate.circular_motion].

    Reads ``ω = ψ̇0``, ``ρ = ẏ_C0(0)/ω``, ``φ0``, ``A`` at ``t = 0`` and checks ``x0, ẋ0, u0`` at
    three times against Eqs. (8.63), (8.70)--(8.71).

    Raises
    ------
    ReferenceMotionError
        If ``ref`` is not a circular steady motion of the ball-plate model (names the worst
        coordinate and the difference).
    """
    _, vals = _param_values(cm, getattr(ref, "parameters", None))
    t0 = 0.0
    tr = getattr(ref, "t_range", None)
    if tr is not None:
        t0 = float(tr[0])
    x0, xd0 = np.asarray(ref.x(t0), float), np.asarray(ref.xd(t0), float)
    om = float(xd0[2])
    if om == 0.0:
        raise ReferenceMotionError("the reference is not a circular motion of the ball: psi_d0 = 0")
    wt0 = om * t0
    rho = float(np.hypot(xd0[0], xd0[1]) / abs(om))
    x_A = float(x0[0] - rho * math.cos(wt0))
    y_A = float(x0[1] - rho * math.sin(wt0))
    try:
        mo = circular_parameters(cm, math.degrees(float(x0[3])), rho=rho, omega=om, x_A=x_A, y_A=y_A,
                                 p=getattr(ref, "parameters", None))
    except ReferenceMotionError as exc:
        raise ReferenceMotionError(f"the reference is not a circular motion of the ball: {exc}") from exc
    T = mo.period
    ts = t0 + np.array([0.0, 0.37 * T, 0.81 * T])
    worst, what = 0.0, ""
    for name, mine, theirs in (("x", mo.x(ts), ref.x(ts)), ("xd", mo.xd(ts), ref.xd(ts)),
                               ("u", mo.u(ts), ref.u(ts))):
        theirs = np.asarray(theirs, float)
        scale = 1.0 + np.max(np.abs(mine))
        err = float(np.max(np.abs(mine - theirs)) / scale)
        if err > worst:
            worst, what = err, name
    if worst > rtol:
        raise ReferenceMotionError(
            f"the reference is not the circular steady motion of Eqs. (8.62)-(8.71): {what}(t) differs "
            f"by {worst:.3g} (relative) from the circle with rho = {rho:.6g}, omega = {om:.6g}, "
            f"phi0 = {math.degrees(float(x0[3])):.6g} deg; build it with ball_plate.circular_motion()")
    return mo


def initial_conditions(cm: CompiledModel, phi0_deg: float, *, eps_x: float = -0.1, eps_y: float = 0.1,
                       eps_psi_deg: float = 5.0, eps_phi_deg: float = 0.0, eps_theta_deg: float = 10.0,
                       eps_vx: float = 0.1, eps_vy: float = 0.1, eps_wpsi: float = 0.1,
                       rho: float = 0.5, omega: float = 1.0,
                       p: ArrayLike | Mapping[str, float] | None = None
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Perturbed initial state of Eqs. (8.89)--(8.92) (defaults: the thesis values).

    ``ẋ_C(0) = ε_vx`` (the reference has ``ẋ_C0(0) = 0``), ``ẏ_C(0) = ρω + ε_vy``,
    ``ψ̇(0) = ω + ε_ωψ``; ``φ̇(0)`` and ``θ̇(0)`` follow from the constraints,
    Eqs. (8.58)--(8.59), so the state satisfies (8.61). For φ0 = 5° this gives
    ``ε_ωφ ≈ 3.0383`` and ``ε_ωθ ≈ 1.7868`` rad/s, Eq. (8.92).

    Returns
    -------
    x0, xd0 : (5,) ndarray
        Read-only.
    """
    mo = circular_parameters(cm, phi0_deg, rho=rho, omega=omega, p=p)
    psi = 0.5 * math.pi + math.radians(eps_psi_deg)
    x = np.array([mo.x_A + mo.rho + eps_x, mo.y_A + eps_y, psi, mo.phi0 + math.radians(eps_phi_deg),
                  math.radians(eps_theta_deg)])
    xd = np.array([float(eps_vx), mo.rho * mo.omega + float(eps_vy), mo.omega + eps_wpsi, 0.0, 0.0])
    # φ̇, θ̇ from D(x) ẋ = 0, i.e. Eqs. (8.58)-(8.59) (m = 0: the coordinates stay as given)
    ic = consistent_initial_conditions(cm, x, xd, independent=("x_C", "y_C", "psi"), p=p)
    return ic.x, ic.xd


def spin_matched_motion(cm: CompiledModel, x: ArrayLike, xd: ArrayLike, *, rho: float = 0.5,
                        omega: float = 1.0,
                        x_A: float = 0.0, y_A: float = 0.0,
                        p: ArrayLike | Mapping[str, float] | None = None):
    """Circular motion with the same normal spin as the state ``(x, ẋ)`` (reachable reference).

    The spin ``ω_n = ψ̇ + θ̇ sin φ`` cannot be changed by the plate (Sect. 8.4.4). Among the
    circles with the given ``ρ, ω, A`` the one with ``ω + (ρ ω / R) tan φ0 = ω_n`` has the spin
    of the state, so the deviation from it has ``c = wᵀ X̃ ≈ 0`` (to second order) and the
    controllable formulation applies without drift:
    ``tan φ0* = (ω_n - ω) R / (ρ ω)``.

    Parameters
    ----------
    cm : CompiledModel
    x, xd : (5,) array_like
        State (e.g. [`initial_conditions()`][nhcontrol.models.ball_plate.initial_conditions]).
    rho, omega, x_A, y_A, p
        See [`circular_parameters()`][nhcontrol.models.ball_plate.circular_parameters].

    Returns
    -------
    Reference
        [`circular_motion()`][nhcontrol.models.ball_plate.circular_motion] with ``phi0_deg =
        degrees(φ0*)``.
    """
    X = as_float_array(x, "x", shape=(5,), error=ReferenceMotionError)
    XD = as_float_array(xd, "xd", shape=(5,), error=ReferenceMotionError)
    _, vals = _param_values(cm, p)
    spin = float(XD[2] + XD[4] * math.sin(X[3]))
    phi0 = math.atan((spin - float(omega)) * vals["R"] / (float(rho) * float(omega)))
    return circular_motion(cm, math.degrees(phi0), rho=rho, omega=omega, x_A=x_A, y_A=y_A, p=p)


def deviation(ref: Reference, t: ArrayLike, x: ArrayLike, xd: ArrayLike) -> NDArray[np.float64]:
    """Deviation ``X̃(t) = [x_ai - x_ai0, ẋ_ai - ẋ_ai0, x_ad - x_ad0]`` of a full state (Eq. (8.74)).

    Parameters
    ----------
    ref : Reference
        The circular reference.
    t : float or (N,) array_like
    x, xd : (5,) or (N, 5) array_like
        Nonlinear coordinates and velocities (order
        [`COORDINATES`][nhcontrol.models.ball_plate.COORDINATES]).

    Returns
    -------
    (8,) or (N, 8) ndarray
        In the order [`LTV_STATES`][nhcontrol.models.ball_plate.LTV_STATES]. For the controllable
        formulation multiply by
        ``spin_reduction(...).S`` (drops ``psi_d``).

    Notes
    -----
    [`nhcontrol.linearization.state_deviation()`][nhcontrol.linearization.state_deviation] with
    [`LTV_STATES`][nhcontrol.models.ball_plate.LTV_STATES]; the same as
    ``lin.deviation`` of a linearization with
    [`PARTITION_8_72`][nhcontrol.models.ball_plate.PARTITION_8_72], whose
    ``lin.from_deviation`` is the inverse.
    """
    return state_deviation(LTV_STATES, ref, t, x, xd, error=ReferenceMotionError)


def _euler_rate_matrix(psi: NDArray[np.float64], phi: NDArray[np.float64]) -> NDArray[np.float64]:
    """``E(ψ, φ)`` with ``ω = E [ψ̇, φ̇, θ̇]`` (plate frame) for ``R_3 = R_2 R_z(ψ) R_x(φ) R_y(θ)``.

    Columns ``e_z``, ``R_z(ψ) e_x``, ``R_z(ψ) R_x(φ) e_y`` (Eq. (8.46)); shape (..., 3, 3),
    ``det E = cos φ``.
    """
    c, s, cf, sf = np.cos(psi), np.sin(psi), np.cos(phi), np.sin(phi)
    z, o = np.zeros_like(c), np.ones_like(c)
    return np.stack([np.stack([z, c, -s * cf], -1), np.stack([z, s, c * cf], -1),
                     np.stack([o, z, sf], -1)], -2)


def reoriented_state(ref: Reference, t: ArrayLike, x: ArrayLike,
                     xd: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The state with the ball's orientation replaced by the reference's (derived here).

    Returns ``(x', ẋ')`` with the measured contact point and contact velocity, the reference
    angles ``ψ0(t), φ0(t), θ0(t)`` and the angle rates that give the *measured* angular velocity
    of the ball at those angles: ``[ψ̇', φ̇', θ̇'] = E(ψ0, φ0)^{-1} E(ψ, φ) [ψ̇, φ̇, θ̇]`` with
    ``E`` the map from the yaw-lean-roll rates to the angular velocity relative to the plate
    (columns ``e_z, R_z(ψ) e_x, R_z(ψ) R_x(φ) e_y``, Eq. (8.46)).

    A homogeneous ball (``I`` isotropic, centre of mass at the centre) has an ignorable
    orientation: the rolling constraints ``ṙ_C = R ω × e_z`` and the equations of motion involve
    the angular velocity and the contact point only, so ``(x', ẋ')`` satisfies the constraints,
    has the same spin ``ω_n`` and produces the same contact-point motion under any input as
    ``(x, ẋ)``. It is the point of that motion nearest the reference in the angles.

    Parameters
    ----------
    ref : Reference
        The circular reference.
    t : float or (N,) array_like
    x, xd : (5,) or (N, 5) array_like
        Coordinates and velocities (order [`COORDINATES`][nhcontrol.models.ball_plate.COORDINATES]).

    Returns
    -------
    x, xd : (5,) or (N, 5) ndarray

    Raises
    ------
    ReferenceMotionError
        The measured or the reference lean angle is at the singularity ``cos φ = 0`` of the
        yaw-lean-roll angles.
    """
    X = np.asarray(x, float)
    XD = np.asarray(xd, float)
    x0 = np.asarray(ref.x(t), float)
    for name, phi in (("measured", X[..., 3]), ("reference", x0[..., 3])):
        if np.any(np.abs(np.cos(phi)) < COS_PHI_MIN):
            raise ReferenceMotionError(
                f"the {name} lean angle phi = {np.degrees(np.max(np.abs(phi))):.6g} deg is at the "
                f"singularity cos(phi) = 0 of the yaw-lean-roll angles (|cos(phi)| < "
                f"{COS_PHI_MIN:g}); the ball's orientation cannot be re-expressed there")
    w = np.einsum("...ij,...j->...i", _euler_rate_matrix(X[..., 2], X[..., 3]), XD[..., 2:5])
    xn, xdn = X.copy(), XD.copy()
    xn[..., 2:5] = x0[..., 2:5]
    xdn[..., 2:5] = np.linalg.solve(_euler_rate_matrix(x0[..., 2], x0[..., 3]),
                                    w[..., None])[..., 0]
    return xn, xdn


def orientation_free_deviation(ref: Reference, t: ArrayLike, x: ArrayLike,
                               xd: ArrayLike) -> NDArray[np.float64]:
    """[`deviation()`][nhcontrol.models.ball_plate.deviation] of the
    [`reoriented_state()`][nhcontrol.models.ball_plate.reoriented_state] (derived here).

    The angle deviations ``ψ̃, φ̃, θ̃`` are zero; the rate deviations carry the angular-velocity
    error. A controller fed with it regulates the contact point and the angular velocity only:
    the orientation of a homogeneous ball does not influence where it rolls, while the
    deviations of the yaw-lean-roll angles grow to tens of degrees during a 10 cm transient
    (the ball rolls ≈ 2 rad over 0.1 m) and take the linear model far outside its validity
    (``docs/theory/ball_plate.md``, Sect. 7).
    """
    return deviation(ref, t, *reoriented_state(ref, t, x, xd))


# ---------------------------------------------------------------------------- closed form
def _trig(wt: NDArray[np.float64], order: int, omega: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``d^j/dt^j`` of ``cos(ωt)`` and ``sin(ωt)``."""
    sh = order * 0.5 * np.pi
    f = omega ** order
    return f * np.cos(wt + sh), f * np.sin(wt + sh)


def _h_derivatives(wt: NDArray[np.float64], K: float, omega: float, order: int) -> list[NDArray[np.float64]]:
    """Derivatives ``h^{(j)}``, ``j = 0..order``, of ``h = sqrt(1 - K² sin²(ωt)) = cos α0``.

    Exact recurrence from ``h² = y = 1 - K²/2 + (K²/2) cos 2ωt``:
    ``2 h h^{(j)} = y^{(j)} - Σ_{i=1}^{j-1} C(j, i) h^{(i)} h^{(j-i)}``.
    """
    h = [np.sqrt(1.0 - (K * np.sin(wt)) ** 2)]
    for j in range(1, order + 1):
        yj = 0.5 * K ** 2 * (2 * omega) ** j * np.cos(2 * wt + j * 0.5 * np.pi)
        acc = yj - sum(math.comb(j, i) * h[i] * h[j - i] for i in range(1, j))
        h.append(acc / (2.0 * h[0]))
    return h


def closed_form_matrices(motion: CircularMotion, t: ArrayLike, order: int = 0
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Closed form of ``A(t)``, ``B(t)`` of Eqs. (8.75)--(8.76) and their time derivatives.

    Derived in ``docs/theory/ball_plate.md`` from the angular-velocity form of the dynamics
    ``ω̇_x = κ sin α``, ``ω̇_y = κ cos α sin β``, ``ω̇_n = 0``, ``κ = m g R / (I + m R²)``. With
    ``c = cos φ0``, ``s = sin φ0``, ``τ = tan φ0``, ``C = cos ωt``, ``S = sin ωt``
    (state order [`LTV_STATES`][nhcontrol.models.ball_plate.LTV_STATES]):

    ```python
    a1 = a3 = -ω² ρ τ / R,  a2 = ω (R s c - ρ) / (R c²),  a4 = ω ρ / R,  a5 = ω c,
    a6 = ω² ρ / (R c),      a7 = ω (ρ τ - R) / (R c),
    a8 = a12 = -ω ρ,  a9 = a13 = ω ρ τ,  a10 = a14 = R,  a11 = a15 = -R c,

    [b1 b2; b3 b4; b5 b6] = [[τC, τS], [-S, C], [-C/c, -S/c]] · κ [[h, 0], [-h'/ω, √(1-K²)]],
    ```

    ``h = cos α0 = sqrt(1 - K² S²)``.

    Parameters
    ----------
    motion : CircularMotion
    t : float or (N,) array_like
    order : int, default 0
        Derivative order ``j`` (exact: trigonometric shifts and the recurrence of ``h``).

    Returns
    -------
    A : (8, 8) or (N, 8, 8) ndarray
    B : (8, 2) or (N, 8, 2) ndarray
    """
    if int(order) != order or order < 0:
        raise LinearSystemError(f"order must be a non-negative integer, got {order!r}")
    order = int(order)
    tt = np.asarray(t, dtype=float)
    scalar = tt.ndim == 0
    ts = np.atleast_1d(tt)
    N = ts.shape[0]
    om, rho, R, phi0, K = motion.omega, motion.rho, motion.R, motion.phi0, motion.tilt
    c, s = math.cos(phi0), math.sin(phi0)
    tau = s / c
    wt = om * ts
    A = np.zeros((N, 8, 8))
    B = np.zeros((N, 8, 2))
    if order == 0:
        A[:, 0, 3] = A[:, 1, 4] = A[:, 2, 5] = 1.0
        A[:, 3, 0] = -om ** 2 * rho * tau / R                     # a1
        A[:, 3, 4] = om * (R * s * c - rho) / (R * c ** 2)        # a2
        A[:, 4, 1] = -om ** 2 * rho * tau / R                     # a3
        A[:, 4, 3] = om * rho / R                                 # a4
        A[:, 4, 5] = om * c                                       # a5
        A[:, 5, 0] = om ** 2 * rho / (R * c)                      # a6
        A[:, 5, 4] = om * (rho * tau - R) / (R * c)               # a7
    Cj, Sj = _trig(wt, order, om)
    A[:, 6, 0], A[:, 6, 1] = -om * rho * Cj, om * rho * tau * Sj  # a8, a9     (Eq. (8.83))
    A[:, 6, 4], A[:, 6, 5] = R * Cj, -R * c * Sj                  # a10, a11
    A[:, 7, 0], A[:, 7, 1] = -om * rho * Sj, -om * rho * tau * Cj  # a12, a13  (Eq. (8.84))
    A[:, 7, 4], A[:, 7, 5] = R * Sj, R * c * Cj                   # a14, a15
    # B(t): Leibniz rule on G2(t) F(t) (Eq. (8.76))
    kappa = motion.m * motion.g * R / (motion.I + motion.m * R ** 2)
    h = _h_derivatives(wt, K, om, order + 1)
    root = math.sqrt(1.0 - K ** 2)
    for i in range(order + 1):
        Ci, Si = _trig(wt, i, om)
        G2 = np.empty((N, 3, 2))                                            # Ĝ⁻¹ R_zᵀ, 2 columns
        G2[:, 0, 0], G2[:, 0, 1] = tau * Ci, tau * Si
        G2[:, 1, 0], G2[:, 1, 1] = -Si, Ci
        G2[:, 2, 0], G2[:, 2, 1] = -Ci / c, -Si / c
        j = order - i
        F = np.zeros((N, 2, 2))
        F[:, 0, 0] = kappa * h[j]
        F[:, 1, 0] = -kappa * h[j + 1] / om
        F[:, 1, 1] = kappa * root if j == 0 else 0.0
        B[:, 3:6, :] += math.comb(order, i) * G2 @ F
    if scalar:
        return A[0], B[0]
    return A, B


# ---------------------------------------------------------------------------- controllability
@dataclass(frozen=True, eq=False)
class SpinReduction:
    """The conserved spin and the 7-state reduction of Sect. 8.4.5.

    The spin of the ball about the plate normal, ``ω_n = ψ̇ + θ̇ sin φ``, is a first integral
    of the model for every input; linearized, ``c = wᵀ X̃`` is constant with

    ``w = [0, Ω cos φ0, 0, 1, 0, sin φ0, 0, 0]`` (order [`LTV_STATES`][nhcontrol.models.ball_plate.LTV_STATES]),

    so ``wᵀ A(t) = 0``, ``wᵀ B(t) = 0``: ``w`` spans the uncontrollable direction. With
    ``Z = S X̃`` (drop ``ψ̇``) and ``X̃ = P Z + e_ψ̇ c`` (``P S + e_ψ̇ wᵀ = I``),

    ``Ż = S A P Z + S B ũ + S A e_ψ̇ c``.

    Attributes
    ----------
    w : (8,) ndarray
        Left null vector of ``A`` and ``B`` (uncontrollable direction), ``w[psi_d] = 1``.
    S : (7, 8) ndarray
        Full → reduced state (selection).
    P : (8, 7) ndarray
        Reduced state → full state on ``c = 0``.
    e_spin : (8,) ndarray
        ``X̃ = P Z + e_spin c``.
    states : tuple of str
        [`REDUCED_STATES`][nhcontrol.models.ball_plate.REDUCED_STATES].
    """

    __repr__ = concise_repr

    w: NDArray[np.float64]
    S: NDArray[np.float64]
    P: NDArray[np.float64]
    e_spin: NDArray[np.float64]
    states: tuple[str, ...]

    def spin(self, X: ArrayLike) -> NDArray[np.float64]:
        """``c = wᵀ X̃`` for ``X̃`` of shape (8,) or (N, 8)."""
        return np.asarray(X, float) @ self.w

    def reduce(self, X: ArrayLike) -> NDArray[np.float64]:
        """``Z = S X̃``."""
        return np.asarray(X, float) @ self.S.T

    def expand(self, Z: ArrayLike, spin: ArrayLike = 0.0) -> NDArray[np.float64]:
        """``X̃ = P Z + e_spin c``."""
        return np.asarray(Z, float) @ self.P.T + np.multiply.outer(np.asarray(spin, float), self.e_spin)


def _spin_reduction(mo: CircularMotion) -> SpinReduction:
    w = np.zeros(8)
    w[LTV_STATES.index("phi")] = mo.Omega * math.cos(mo.phi0)
    w[_SPIN] = 1.0
    w[LTV_STATES.index("theta_d")] = math.sin(mo.phi0)
    keep = [i for i in range(8) if i != _SPIN]
    S = np.eye(8)[keep]
    P = S.T.copy()
    P[_SPIN, :] = -w[keep]
    e = np.zeros(8)
    e[_SPIN] = 1.0
    return SpinReduction(w=readonly(w), S=readonly(S), P=readonly(P), e_spin=readonly(e),
                         states=REDUCED_STATES)


def spin_reduction(cm: CompiledModel, ref: Reference) -> SpinReduction:
    """Uncontrollable direction and reduction maps for a circular reference (Sect. 8.4.5)."""
    return _spin_reduction(motion_from_reference(cm, ref))
