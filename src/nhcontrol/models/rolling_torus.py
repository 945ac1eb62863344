"""A wheel shaped as an elliptic torus rolling without slipping on a horizontal plane.

Thesis Sect. 6.3 (derived here from first principles; contact of Sect. 4.5.1,
Eqs. (4.189)-(4.197); derivation of the steady motions in ``docs/theory/rolling_torus.md``,
derived here). Absolute coordinates (``n = 8``):


```text
x = [x_C, y_C, z_C, psi, phi, theta, xi, eta]
```

``(x_C, y_C, z_C)`` is the centre of the wheel, ``R = R_z(psi) R_x(phi) R_y(theta)`` (heading,
lean, spin; wheel axis = body ``Y``), ``xi, eta`` the contact coordinates of
[`elliptic_torus()`][nhcontrol.modeling.contacts.elliptic_torus] (major radius ``rho``, radial
semi-axis ``a``
of the cross-section, axial semi-axis ``b = sigma a``): ``m = 3`` holonomic and ``l = 2``
nonholonomic constraints, three degrees of freedom. The partition of the thesis
(Sect. 8.4.3) is [`PARTITION`][nhcontrol.models.rolling_torus.PARTITION]: ``x_ai = [psi, phi,
theta]``, ``x_ad = [x_C, y_C]``.

Inertia about the centre, body frame, ``diag(A, C, A)`` with the parameters ``A`` (about a
diameter) and ``C`` (about the axis);
[`torus_inertia()`][nhcontrol.models.rolling_torus.torus_inertia] gives them for a solid torus
(Eqs. (4.189)-(4.190)) and a thin-walled (hollow) one, so one compiled model serves every
geometry and mass distribution.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import quad

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.modeling import MultibodySystem, check_parameters, contacts, parameter_values, rot_x, rot_y, rot_z

if TYPE_CHECKING:  # pragma: no cover
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = [
    "build", "model", "circular_motion", "COORDINATES", "PARTITION", "Kind", "torus_inertia",
    "torus_parameters", "SteadyMotion", "circular_heading_rates", "circular_spin_rate",
    "circular_state", "time_unit_from_pair", "heading_frame", "straight_rolling", "vertical_spin"
]

COORDINATES: tuple[str, ...] = ("x_C", "y_C", "z_C", "psi", "phi", "theta", "xi", "eta")
"""Coordinates of the rolling torus."""

PARTITION: dict[str, list[str]] = dict(
    independent=["psi", "phi", "theta"],
    admissible_dependent=["x_C", "y_C"],
    dependent=["z_C", "xi", "eta"],
)
"""Partition of thesis Sect. 8.4.3 (Eqs. (5.38), (6.54))."""

Kind = Literal["solid", "hollow"]


def torus_inertia(kind: Kind, rho: float, a: float, sigma: float, m: float) -> tuple[float, float]:
    """Moments of inertia ``(A, C)`` of a torus about a diameter and about its axis.

    Solid (homogeneous), Eqs. (4.189)-(4.190):
    $C = m(\\rho^2 + \\tfrac34 a^2)$, $A = m(\\tfrac12\\rho^2 + \\tfrac38 a^2 + \\tfrac14 b^2)$.
    Hollow (uniform thin wall, derived here): the surface element of the elliptic torus is
    $(\\rho + a\\cos\\eta)\\,\\ell(\\eta)\\,d\\eta\\,d\\xi$, $\\ell = \\sqrt{a^2\\sin^2\\eta + b^2\\cos^2\\eta}$;
    the moments are quadratures over ``eta`` (for ``sigma = 1``:
    $C = m(\\rho^2 + \\tfrac32 a^2)$, $A = m(\\tfrac12\\rho^2 + \\tfrac54 a^2)$).
    Both tend to the hoop's ``(m rho^2 / 2, m rho^2)`` as ``a -> 0``.

    Raises
    ------
    ModelError
        Unknown ``kind``.
    """
    b = sigma * a
    if kind == "solid":
        return m * (rho**2 / 2 + 3 * a**2 / 8 + b**2 / 4), m * (rho**2 + 3 * a**2 / 4)
    if kind != "hollow":
        raise ModelError(f"torus kind must be 'solid' or 'hollow', got {kind!r}")
    if a == 0.0:
        return m * rho**2 / 2, m * rho**2

    def ell(e: float) -> float:
        return math.hypot(a * math.sin(e), b * math.cos(e))

    def integral(f):
        return quad(lambda e: f(e) * (rho + a * math.cos(e)) * ell(e), 0.0, 2 * math.pi,
                    epsabs=0.0, epsrel=1e-13, limit=200)[0]

    w = integral(lambda e: 1.0)
    r2 = integral(lambda e: (rho + a * math.cos(e)) ** 2) / w
    z2 = integral(lambda e: (b * math.sin(e)) ** 2) / w
    return m * (r2 / 2 + z2), m * r2


def torus_parameters(kind: Kind = "solid", *, rho: float = 0.3, mu: float = 0.1, sigma: float = 1.0,
                     m: float = 2.0, g: float = 9.81) -> dict[str, float]:
    """Parameter dictionary ``rho, a, sigma, m, g, A, C`` of a torus with ``a = mu rho``.

    ``mu = a / rho`` is the cross-section ratio (``mu = 0``: hoop), ``sigma = b / a``.

    Raises
    ------
    ModelError
        Negative or non-finite values, ``rho`` or ``m`` not positive, ``mu >= 1``.
    """
    vals = check_parameters({"rho": rho, "mu": mu, "sigma": sigma, "m": m, "g": g},
                            positive=("rho", "m", "sigma"), nonnegative=("mu",),
                            requirement="rolling torus: rho, sigma and m must be positive, mu >= 0, "
                                        "all finite")
    if vals["mu"] >= 1.0:
        raise ModelError(f"rolling torus: the cross-section ratio mu = a/rho must be < 1, got {mu!r}")
    a = vals["mu"] * vals["rho"]
    A, C = torus_inertia(kind, vals["rho"], a, vals["sigma"], vals["m"])
    return {"rho": vals["rho"], "a": a, "sigma": vals["sigma"], "m": vals["m"], "g": vals["g"],
            "A": A, "C": C}


def build(**parameter_overrides: float) -> MultibodySystem:
    """Symbolic model of the rolling elliptic torus.

    Parameters
    ----------
    **parameter_overrides : float
        Defaults of ``rho, a, sigma, m, g, A, C`` (default:
        [`torus_parameters()`][nhcontrol.models.rolling_torus.torus_parameters]
        ``("solid")``).

    Returns
    -------
    MultibodySystem
        ``n = 8`` ([`COORDINATES`][nhcontrol.models.rolling_torus.COORDINATES]), ``m = 3``, ``l = 2``.
    """
    vals = dict(torus_parameters("solid"))
    unknown = sorted(set(parameter_overrides) - set(vals))
    if unknown:
        raise ModelError(f"rolling torus: unknown parameters {unknown}; expected some of {sorted(vals)}")
    vals.update(parameter_overrides)
    vals = check_parameters(vals, positive=("rho", "sigma", "m", "A", "C"), nonnegative=("a",),
                            requirement="rolling torus: rho, sigma, m, A, C must be positive, a >= 0")
    mb = MultibodySystem("rolling_torus")
    x, y, z, psi, phi, theta, xi, eta = mb.add_coordinates(" ".join(COORDINATES))
    rho, a, sigma, m, g, A, C = mb.add_parameters(**vals)
    R = rot_z(psi) * rot_x(phi) * rot_y(theta)
    center = sp.Matrix([x, y, z])
    wheel = mb.add_body("torus", mass=m, inertia=sp.diag(A, C, A), position=center, orientation=R)
    mb.add_gravity(g, direction=(0, 0, -1))
    contacts.elliptic_torus(mb, wheel, center, R, rho, a, sigma, xi, eta, name="P")
    return mb


@lru_cache(maxsize=2)
def _compiled() -> "CompiledModel":
    from nhcontrol.compiled.recipe import cached_model

    return cached_model(build)


def model() -> "CompiledModel":
    """Compiled [`build()`][nhcontrol.models.rolling_torus.build] (cached; parameters travel with each reference)."""
    return _compiled()


# ----------------------------------------------------------------------------- steady motions
class SteadyMotion:
    """Closed-form data of a steady motion (see ``docs/theory/rolling_torus.md``).

    Attributes: ``phi0`` lean [rad], ``omega`` spin rate ``theta_dot`` [rad/s], ``Omega``
    heading rate ``psi_dot`` [rad/s], ``eta0`` contact angle on the cross-section, ``h`` height of
    the centre, ``d_y, d_z`` contact point from the centre along the wheel axis / the in-plane
    downward direction, ``s`` horizontal offset of the contact point, ``V`` speed of the centre,
    ``radius_contact`` signed radius of the contact path ``omega d_z / Omega`` (inf if straight),
    ``radius_center`` signed radius ``V / Omega`` of the centre's path.
    """

    __slots__ = ("phi0", "omega", "Omega", "eta0", "h", "d_y", "d_z", "s", "V", "radius_contact",
                 "radius_center")

    def __init__(self, phi0: float, omega: float, Omega: float, vals: Mapping[str, float]) -> None:
        g = _geometry(phi0, vals)
        self.phi0, self.omega, self.Omega = float(phi0), float(omega), float(Omega)
        self.eta0, self.h, self.d_y, self.d_z, self.s = g
        self.V = self.omega * self.d_z + self.Omega * self.s
        self.radius_contact = math.inf if self.Omega == 0 else self.omega * self.d_z / self.Omega
        self.radius_center = math.inf if self.Omega == 0 else self.V / self.Omega

    def __repr__(self) -> str:
        return (f"SteadyMotion(phi0={self.phi0!r}, omega={self.omega!r}, Omega={self.Omega!r}, "
                f"radius_contact={self.radius_contact!r})")


def _geometry(phi0: float, vals: Mapping[str, float]) -> tuple[float, float, float, float, float]:
    rho, a, sigma = vals["rho"], vals["a"], vals["sigma"]
    eta0 = -math.atan(sigma * math.tan(phi0))
    d_y, d_z = sigma * a * math.sin(eta0), rho + a * math.cos(eta0)
    h = d_z * math.cos(phi0) - d_y * math.sin(phi0)
    s = d_y * math.cos(phi0) + d_z * math.sin(phi0)
    return eta0, h, d_y, d_z, s


def _coefficients(phi0: float, vals: Mapping[str, float]) -> tuple[float, float, float]:
    """``(a2, a1 / omega, a0)`` of ``a2 Omega^2 + a1 Omega + a0 = 0`` (lean moment balance)."""
    _, h, _, d_z, s = _geometry(phi0, vals)
    A, C, m, g = vals["A"], vals["C"], vals["m"], vals["g"]
    c, sn = math.cos(phi0), math.sin(phi0)
    return (A - C) * sn * c - m * h * s, -(C * c + m * h * d_z), -m * g * s


def _check_phi(phi0: float) -> float:
    try:
        phi = float(phi0)
    except (TypeError, ValueError) as exc:
        raise ReferenceMotionError(f"lean phi0 must be a real number in rad, got {phi0!r}") from exc
    if not (math.isfinite(phi) and abs(phi) < math.pi / 2):
        raise ReferenceMotionError(f"lean phi0 must be finite with |phi0| < pi/2 rad, got {phi0!r}")
    return phi


def circular_heading_rates(phi0: float, omega: float, vals: Mapping[str, float]) -> tuple[float, ...]:
    """Heading rates ``Omega`` of the circular motions with lean ``phi0`` and spin ``omega``.

    Real roots of $a_2\\Omega^2 + a_1\\Omega + a_0 = 0$ (docs/theory/rolling_torus.md), sorted by
    ``|Omega|`` (the first is the slow branch that tends to straight rolling as ``phi0 -> 0``).
    Empty when there is none.
    """
    phi = _check_phi(phi0)
    a2, k1, a0 = _coefficients(phi, vals)
    a1 = k1 * float(omega)
    if a2 == 0.0:
        return () if a1 == 0.0 else (-a0 / a1,)
    disc = a1 * a1 - 4 * a2 * a0
    if disc < 0:
        return ()
    q = -0.5 * (a1 + math.copysign(math.sqrt(disc), a1 if a1 != 0 else 1.0))
    roots = [q / a2] + ([a0 / q] if q != 0 else [])
    return tuple(sorted(roots, key=abs))


def circular_spin_rate(phi0: float, Omega: float, vals: Mapping[str, float]) -> float:
    """Spin rate ``omega`` of the circular motion with lean ``phi0`` and heading rate ``Omega``.

    $\\omega = (a_2\\Omega^2 + a_0) / (-k_1\\Omega)$ (linear in ``omega``).

    Raises
    ------
    ReferenceMotionError
        ``Omega = 0`` with ``phi0`` != 0 (a leaning wheel cannot roll straight).
    """
    phi = _check_phi(phi0)
    a2, k1, a0 = _coefficients(phi, vals)
    Om = float(Omega)
    if Om == 0.0 or k1 == 0.0:
        raise ReferenceMotionError(f"no circular motion with heading rate Omega = {Omega!r} rad/s at lean "
                                   f"phi0 = {phi0!r} rad; give a nonzero Omega")
    return (a2 * Om * Om + a0) / (-k1 * Om)


def time_unit_from_pair(phi0: float, omega_bar: float, Omega_bar: float, vals: Mapping[str, float]) -> float:
    """Time unit ``tau`` [s] in which ``(omega_bar, Omega_bar)`` at lean ``phi0`` is a circular motion.

    With ``omega = omega_bar / tau`` and ``Omega = Omega_bar / tau`` (one time unit for both
    rates), the lean moment balance $a_2\\Omega^2 + a_1\\Omega + a_0 = 0$
    (docs/theory/rolling_torus.md) reads
    $\\tau^2 = -(a_2\\bar\\Omega^2 + k_1\\bar\\omega\\bar\\Omega)/a_0$ with $a_1 = k_1\\omega$: a printed
    pair fixes the ratio ``Omega / omega`` and hence, for a given torus, the physical motion and
    the unit (derived here). Used to read the thesis' pair ``phi0 = -5 deg, omega_bar = 0.75,
    Omega_bar = 0.0794`` (Sect. 6.3.8, Eq. (6.133)) as one physical motion.

    Raises
    ------
    ReferenceMotionError
        No positive ``tau`` (the pair is no circular motion of this torus at any time unit).
    """
    phi = _check_phi(phi0)
    a2, k1, a0 = _coefficients(phi, vals)
    wb, Ob = float(omega_bar), float(Omega_bar)
    if a0 == 0.0:
        raise ReferenceMotionError(f"time_unit_from_pair: lean phi0 = {phi0!r} gives no gravity moment (a0 = 0); "
                                   "the time unit is not determined")
    tau2 = -(a2 * Ob * Ob + k1 * wb * Ob) / a0
    if not (math.isfinite(tau2) and tau2 > 0):
        raise ReferenceMotionError(f"time_unit_from_pair: (omega_bar, Omega_bar) = ({omega_bar!r}, {Omega_bar!r}) at "
                                   f"phi0 = {phi0!r} rad is no circular motion of this torus for any time unit "
                                   f"(tau^2 = {tau2:.3g})")
    return math.sqrt(tau2)


def circular_state(motion: SteadyMotion, t: ArrayLike
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Coordinates, velocities and accelerations ``(N, 8)`` (or ``(8,)``) of a steady motion.

    ``psi = Omega t``, ``theta = omega t``, ``xi = pi/2 - omega t``, ``phi = phi0``,
    ``eta = eta0``, ``z_C = h``; the centre leaves the origin with velocity ``V`` along the
    heading and turns with rate ``Omega``:
    ``x_C = V sin(Omega t)/Omega``, ``y_C = V (1 - cos(Omega t))/Omega``.
    """
    tt = np.asarray(t, dtype=float)
    scalar = tt.ndim == 0
    tt = np.atleast_1d(tt)
    mo = motion
    psi = mo.Omega * tt
    x = np.zeros((tt.shape[0], 8))
    x[:, 0] = mo.V * tt * np.sinc(psi / np.pi)
    x[:, 1] = mo.V * mo.Omega * tt**2 / 2 * np.sinc(psi / (2 * np.pi)) ** 2
    x[:, 2] = mo.h
    x[:, 3] = psi
    x[:, 4] = mo.phi0
    x[:, 5] = mo.omega * tt
    x[:, 6] = np.pi / 2 - mo.omega * tt
    x[:, 7] = mo.eta0
    xd = np.zeros_like(x)
    xd[:, 0], xd[:, 1] = mo.V * np.cos(psi), mo.V * np.sin(psi)
    xd[:, 3], xd[:, 5], xd[:, 6] = mo.Omega, mo.omega, -mo.omega
    xdd = np.zeros_like(x)
    xdd[:, 0], xdd[:, 1] = -mo.V * mo.Omega * np.sin(psi), mo.V * mo.Omega * np.cos(psi)
    return (x[0], xd[0], xdd[0]) if scalar else (x, xd, xdd)


def _check_model(cm: "CompiledModel") -> None:
    if tuple(cm.coordinates) != COORDINATES:
        raise ModelError(f"expected the rolling-torus model with coordinates {list(COORDINATES)}, got "
                         f"{getattr(cm, 'name', '?')!r} with {list(cm.coordinates)}; use rolling_torus.model()")


def _reference(cm: "CompiledModel", motion: SteadyMotion, pvec: NDArray[np.float64]) -> "Reference":
    from functools import partial

    from nhcontrol.reference import Reference, StateComponent

    steady = motion.Omega == 0.0
    period = None if steady else 2 * math.pi / abs(motion.Omega)
    f = partial(circular_state, motion)
    return Reference.from_functions(cm, StateComponent(f, 0), StateComponent(f, 1), StateComponent(f, 2),
                                    p=pvec, steady=steady, period=period)


def _rate(val: float, name: str) -> float:
    try:
        out = float(val)
    except (TypeError, ValueError) as exc:
        raise ReferenceMotionError(f"{name} must be a real number in rad/s, got {val!r}") from exc
    if not math.isfinite(out):
        raise ReferenceMotionError(f"{name} must be finite, got {val!r}")
    return out


def circular_motion(cm: "CompiledModel", phi0: float, *, omega: float | None = None,
                    Omega: float | None = None, branch: int = 0,
                    p: ArrayLike | Mapping[str, float] | None = None) -> tuple["Reference", SteadyMotion]:
    """Circular steady motion with lean ``phi0`` and spin rate ``omega`` or heading rate ``Omega``.

    Give exactly one of ``omega`` (then ``Omega`` is root ``branch`` of
    [`circular_heading_rates()`][nhcontrol.models.rolling_torus.circular_heading_rates]) or
    ``Omega`` (then ``omega`` from
    [`circular_spin_rate()`][nhcontrol.models.rolling_torus.circular_spin_rate]).
    The multipliers come from inverse dynamics (Eq. (2.112)), which also checks that the motion
    is dynamically admissible; the reference is periodic with the period of the heading
    ``2 pi / |Omega|``.

    Returns
    -------
    (Reference, SteadyMotion)

    Raises
    ------
    ReferenceMotionError
        Both or neither rate given, no real root, or an inadmissible motion.
    """
    _check_model(cm)
    pvec, vals = parameter_values(cm, p)
    phi = _check_phi(phi0)
    if (omega is None) == (Omega is None):
        raise ReferenceMotionError("give exactly one of omega (spin rate) or Omega (heading rate)")
    if omega is not None:
        w = _rate(omega, "spin rate omega")
        roots = circular_heading_rates(phi, w, vals)
        if branch not in (0, 1) or branch >= len(roots):
            raise ReferenceMotionError(f"no circular motion (branch {branch}) with lean phi0 = {phi0!r} rad "
                                       f"and spin rate omega = {omega!r} rad/s: heading rates {list(roots)}")
        Om = roots[branch]
    else:
        Om = _rate(Omega, "heading rate Omega")
        w = circular_spin_rate(phi, Om, vals)
    motion = SteadyMotion(phi, w, Om, vals)
    return _reference(cm, motion, pvec), motion


def straight_rolling(cm: "CompiledModel", omega: float,
                     p: ArrayLike | Mapping[str, float] | None = None) -> tuple["Reference", SteadyMotion]:
    """Upright straight rolling with spin rate ``omega`` (speed ``omega (rho + a)``); steady reference."""
    _check_model(cm)
    pvec, vals = parameter_values(cm, p)
    motion = SteadyMotion(0.0, _rate(omega, "spin rate omega"), 0.0, vals)
    return _reference(cm, motion, pvec), motion


def vertical_spin(cm: "CompiledModel", Omega: float,
                  p: ArrayLike | Mapping[str, float] | None = None) -> tuple["Reference", SteadyMotion]:
    """Upright wheel spinning about its vertical diameter at rate ``Omega`` (centre at rest).

    Periodic reference (period ``2 pi / |Omega|``); its linearization in the rotating frame is
    constant.
    """
    _check_model(cm)
    pvec, vals = parameter_values(cm, p)
    Om = _rate(Omega, "heading rate Omega")
    if Om == 0.0:
        raise ReferenceMotionError("vertical spin needs a nonzero heading rate Omega")
    return _reference(cm, SteadyMotion(0.0, 0.0, Om, vals), pvec), SteadyMotion(0.0, 0.0, Om, vals)


# ----------------------------------------------------------------------------- linearization
def heading_frame(states: "list[str] | tuple[str, ...]", Omega: float
                  ) -> tuple["callable", "callable"]:
    """Change of variables ``z = T(t) δx`` that makes the circular-motion Jacobian constant.

    The circular motion is a relative equilibrium of the symmetry "rotate about the vertical
    and translate" (derived here, docs/theory/rolling_torus.md): the linearization depends on
    time only through the heading ``psi0 = Omega t`` acting on the deviations of the centre
    ``(δx_C, δy_C)``. ``T(t)`` rotates them into the heading frame,
    ``[δu, δv] = R_z(-psi0(t)) [δx_C, δy_C]``, and is the identity on all other states.

    Returns
    -------
    T, T_dot : callable ``t -> (n, n)``
    """
    names = list(states)
    missing = [c for c in ("x_C", "y_C") if c not in names]
    if missing:
        raise ModelError(f"heading_frame: the states {names} lack {missing}; use the partition "
                         f"{PARTITION} (x_C, y_C admissible dependent)")
    ix, iy = names.index("x_C"), names.index("y_C")
    from ._frames import rotating_pair_frame

    return rotating_pair_frame(len(names), ix, iy, Omega)
