"""Single-track (bicycle) road-vehicle models with skates, after the road-vehicle review.

The four skate models of Table 1 of the review (kinematic bicycle and the force-,
torque- and steering-angle-driven variants), derived here from the text and first
principles (see docs/theory/road_vehicles.md).

The chassis is one rigid body (mass ``m``, yaw inertia ``J`` about the centre of mass
``G``) on the horizontal plane, coordinates ``x, y`` (``G``) and yaw ``psi``. Skates at
the rear point ``R = G - b i_1`` and the front point ``F = G + a i_1`` (``L = a + b``)
allow no lateral velocity (review Eq. (51)):

$$
-\\sin\\psi\\,\\dot x + \\cos\\psi\\,\\dot y - b\\dot\\psi = 0,\\qquad
-\\sin(\\psi+\\gamma)\\,\\dot x + \\cos(\\psi+\\gamma)\\,\\dot y + a\\cos\\gamma\\,\\dot\\psi = 0 .
$$

With the longitudinal speed ``u_1 = v_G · i_1`` they give ``ψ̇ = u_1 tan γ / L`` and
``v_G = u_1 i_1 + b ψ̇ j_1``. Variants (``n`` coordinates, ``l`` kinematic constraints,
``n - l/2`` degrees of freedom, ``2n - l`` first-order equations):

=====================  ===========================  ==========  ===  ===  =====
variant                inputs                       pseudo vel. n    l    dof
=====================  ===========================  ==========  ===  ===  =====
``kinematic``          steer ``gamma`` (+ rate)     --          3    3    1.5
``force``              ``F_R, F_F``, ``gamma``      ``v``       3    2    2
``torque``             steering torque ``T``        ``gamma_d`` 4    3    2.5
``force_torque``       ``F_R, F_F, T``              ``v, gamma_d`` 4 2    3
=====================  ===========================  ==========  ===  ===  =====

``kinematic`` and ``torque`` keep the longitudinal speed at the parameter ``V``: the
affine constraint ``cos ψ ẋ + sin ψ ẏ - V = 0``. An assigned steering angle ``gamma``
is rheonomic: its rate ``gamma_rate`` is a declared input (it enters ``ψ̈``). In the
torque-steered variants ``gamma`` is a coordinate and the front skate a body with yaw
inertia ``J_F`` about the vertical steering axis through ``F`` and mass ``m_F`` at ``F``.

Parameters of a typical passenger car: ``m = 1573 kg``, ``J = 2873 kg m^2``,
``a = l_f = 1.1 m``, ``b = l_r = 1.58 m`` as used in R. Rajamani, *Vehicle Dynamics and
Control*, 2nd ed., Springer, 2012 (lateral-dynamics examples of Ch. 2--3); ``J_F =
1 kg m^2`` and ``m_F = 20 kg`` (steering assembly at ``F``, torque-steered variants only)
are chosen here.

The rigid-wheel variants (``rigid_kinematic``, ``rigid_force``, ``rigid_torque``,
``rigid_force_torque``: 2.5, 3, 3.5 and 4 degrees of freedom) add the wheel spin angles
``phi_R, phi_F`` and the rolling constraints ``v_R · i_1 = r_w φ̇_R``,
``v_F · e_F = r_w φ̇_F`` (review Eq. (50)); each axle's wheels are a body of mass ``m_w`` and
spin inertia ``J_w`` driven by the axle torque ``M_R`` or ``M_F``
(docs/theory/road_vehicles.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import math

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import MultibodySystem, rot_y, rot_z
from nhcontrol.modeling.appell import AppellEquations, appell_equations

__all__ = [
    "build", "lateral_force_expressions", "DEFAULTS", "WHEEL_DEFAULTS", "VARIANTS", "Variant", "SingleTrackModel", "kinematic_steady_turn",
    "appell_vs_newton_euler", "appell_check", "newton_euler_wdot", "kinematic_turn_error", "APPELL_CHECKS",
    "static_axle_loads", "GRAVITY", "tyre_plant", "TYRE_DEFAULTS", "TYRE_LAWS", "TYRE_VARIANTS",
    "slip_angles", "lateral_tyre_force",
]

GRAVITY: float = 9.81
"""Gravitational acceleration [m/s²] of the static load split."""

Variant = Literal["kinematic", "force", "torque", "force_torque", "rigid_kinematic", "rigid_force",
                  "rigid_torque", "rigid_force_torque"]

VARIANTS: tuple[str, ...] = ("kinematic", "force", "torque", "force_torque", "rigid_kinematic",
                             "rigid_force", "rigid_torque", "rigid_force_torque")
"""The variants of Table 1 of the review: four skate models, then their rigid-wheel counterparts."""

WHEEL_DEFAULTS: Mapping[str, float] = {"r_w": 0.3, "m_w": 40.0, "J_w": 1.8}
"""Rigid-wheel variants, per axle (the two wheels of an axle lumped into one): wheel radius [m],
mass [kg] and spin inertia [kg m^2] (``J_w = m_w r_w² / 2``, uniform discs of 20 kg; chosen here
as typical passenger-car values). The wheels are added to the chassis ``m, J``."""

DEFAULTS: Mapping[str, float] = {"m": 1573.0, "J": 2873.0, "a": 1.1, "b": 1.58, "J_F": 1.0, "m_F": 20.0, "V": 20.0}
"""Passenger car (Rajamani 2012): mass [kg], yaw inertia [kg m^2], G to front / rear axle [m], steering
yaw inertia [kg m^2] and mass [kg] (torque-steered variants), prescribed speed [m/s].
"""


@dataclass(frozen=True, eq=False)
class SingleTrackModel:
    """A single-track model: the multibody system and its Appell's equations.

    Attributes
    ----------
    variant : str
    system : MultibodySystem
        Bodies, loads and the constraints of Table 1 (the Newton--Euler route), the
        constant-speed variants' ``cos ψ ẋ + sin ψ ẏ − V = 0`` as an affine constraint. The
        assigned steering angle ``gamma`` enters ``B``; its rate is the declared input
        ``gamma_rate`` of Appell's velocity map and, in Newton--Euler, the input rate ``u̇`` of
        ``gamma`` (``D ẍ = Q_d − E u̇``; ``gamma_rate`` itself enters no Newton--Euler term).
    appell : AppellEquations
    l : int
        Number of kinematic constraints of Table 1 (``n - nw``).
    """

    variant: str
    system: MultibodySystem
    appell: AppellEquations

    @property
    def n(self) -> int:
        return self.appell.n

    @property
    def l(self) -> int:  # noqa: E743 -- thesis symbol
        return self.appell.n - self.appell.nw

    @property
    def dof(self) -> float:
        """Degrees of freedom ``n - l/2`` (review: ``3N - g - h/2``)."""
        return self.n - self.l / 2

    @property
    def first_order_odes(self) -> int:
        """``2n - l`` first-order equations."""
        return 2 * self.n - self.l


def build(variant: Variant = "force", *, lateral_force_outputs: bool = False,
          **overrides: float) -> SingleTrackModel:
    """Build one single-track model of Table 1 (skate or rigid-wheel).

    Parameters
    ----------
    variant : str
        One of `VARIANTS`: the skate models ``'kinematic', 'force', 'torque',
        'force_torque'`` and their rigid-wheel counterparts ``'rigid_kinematic',
        'rigid_force', 'rigid_torque', 'rigid_force_torque'`` (wheel spin angles
        ``phi_R, phi_F`` added as coordinates, rolling constraints added, driven by axle
        torques ``M_R, M_F`` instead of forces).
    lateral_force_outputs : bool
        Declare the skates' lateral forces ``lateral_force_rear``, ``lateral_force_front`` [N]
        (the multipliers of ``rear_skate``, ``front_skate``) as outputs ``h(x, ẋ, u)``
        ([`lateral_force_expressions`][nhcontrol.models.single_track.lateral_force_expressions]);
        skate variants only. Their linearization ``C, D`` lets a controller bound the friction
        utilisation ``|F| / (μ N)`` (`nhcontrol.applications.lane_change`).
    **overrides : float
        Parameter defaults to change (names of `DEFAULTS`; ``r_w``, ``J_w`` of
        `WHEEL_DEFAULTS` for the rigid-wheel variants).

    Returns
    -------
    SingleTrackModel

    Raises
    ------
    ModelError
        Unknown variant or parameter, or a parameter that is not positive and finite.
    """
    if variant not in VARIANTS:
        raise ModelError(f"single-track variant {variant!r} is unknown; choose one of {list(VARIANTS)}")
    rigid = variant.startswith("rigid_")
    base = variant[len("rigid_"):] if rigid else variant
    allowed = {**DEFAULTS, **(WHEEL_DEFAULTS if rigid else {})}
    bad = sorted(set(overrides) - set(allowed))
    if bad:
        raise ModelError(f"unknown single-track parameters {bad} for variant {variant!r}; valid "
                         f"names: {sorted(allowed)}")
    vals = {**allowed, **overrides}
    for k, v in vals.items():
        if not math.isfinite(v) or (k != "V" and v <= 0):
            raise ModelError(f"single-track parameter {k} = {v!r} must be a positive finite number")
    steered = base in ("torque", "force_torque")
    driven = base in ("force", "force_torque")
    mb = MultibodySystem(f"single_track_{variant}")
    names = "x y psi" + (" gamma" if steered else "") + (" phi_R phi_F" if rigid else "")
    q = mb.add_coordinates(names)
    x, y, psi = q[:3]
    gam = q[3] if steered else None
    par = mb.add_parameters(**vals)
    m, J, a, b, J_F, m_F, V = par[:7]
    r_w, m_w, J_w = (par[7], par[8], par[9]) if rigid else (None, None, None)
    drive = ("M_R M_F" if rigid else "F_R F_F") if driven else ""
    if steered:
        ins = mb.add_inputs((drive + " T").strip())
        ins = ins if isinstance(ins, tuple) else (ins,)
        rate = None
    else:
        ins = mb.add_inputs((drive + " gamma gamma_rate").strip())
        gam, rate = ins[-2], ins[-1]
    c, s = sp.cos(psi), sp.sin(psi)
    i1 = sp.Matrix([c, s, 0])
    G = sp.Matrix([x, y, 0])
    chassis = mb.add_body("chassis", mass=m, inertia=sp.diag(0, 0, J), position=G, orientation=rot_z(psi))
    P_F = G + a * i1
    P_R = G - b * i1
    e_F = sp.Matrix([sp.cos(psi + gam), sp.sin(psi + gam), 0])
    front = None
    if steered:
        front = mb.add_body("front_skate", mass=m_F, inertia=sp.diag(0, 0, J_F), position=P_F,
                            orientation=rot_z(psi + gam))
        T = ins[-1]
        mb.add_torque(front, [0, 0, T])
        mb.add_torque(chassis, [0, 0, -T])
    if rigid:
        # wheels (thin discs at the axle centres): spin inertia J_w, diametral J_w / 2
        phi_R, phi_F = q[-2], q[-1]
        I_w = sp.diag(J_w / 2, J_w, J_w / 2)
        wheel_R = mb.add_body("rear_wheel", mass=m_w, inertia=I_w, position=P_R,
                              orientation=rot_z(psi) * rot_y(phi_R))
        wheel_F = mb.add_body("front_wheel", mass=m_w, inertia=I_w, position=P_F,
                              orientation=rot_z(psi + gam) * rot_y(phi_F))
        if driven:
            M_R, M_F = ins[0], ins[1]
            j_R = sp.Matrix([-s, c, 0])
            j_F = sp.Matrix([-sp.sin(psi + gam), sp.cos(psi + gam), 0])
            mb.add_torque(wheel_R, M_R * j_R)
            mb.add_torque(chassis, -M_R * j_R)
            mb.add_torque(wheel_F, M_F * j_F)
            mb.add_torque(front if front is not None else chassis, -M_F * j_F)
    elif driven:
        F_R, F_F = ins[0], ins[1]
        mb.add_force(chassis, F_R * i1, point=P_R)
        mb.add_force(front if front is not None else chassis, F_F * e_F, point=P_F)
    vel = mb.velocities
    xd, yd, psid = vel[:3]
    mb.add_nonholonomic(-s * xd + c * yd - b * psid, name="rear_skate" if not rigid else "rear_lateral")
    mb.add_nonholonomic(-sp.sin(psi + gam) * xd + sp.cos(psi + gam) * yd + a * sp.cos(gam) * psid,
                        name="front_skate" if not rigid else "front_lateral")
    if base in ("kinematic", "torque"):
        # prescribed longitudinal speed v_G · i_1 = V: affine, B ẋ + b = 0 with b = -V
        mb.add_nonholonomic(c * xd + s * yd - V, name="speed", affine=True)
    if rigid:
        # rolling (review Eq. (50)): longitudinal speed of the wheel centre = r_w * spin rate
        mb.add_nonholonomic(c * xd + s * yd - r_w * vel[-2], name="rear_rolling")
        mb.add_nonholonomic(sp.cos(psi + gam) * xd + sp.sin(psi + gam) * yd
                            + a * sp.sin(gam) * psid - r_w * vel[-1], name="front_rolling")
    # velocity map x_dot = Phi w + phi (derived in docs/theory/road_vehicles.md)
    w: list[sp.Symbol] = []
    if driven:
        u1 = sp.Symbol("v", real=True)
        w.append(u1)
    else:
        u1 = V
    wg = None
    if steered:
        wg = sp.Symbol("gamma_d", real=True)
        w.append(wg)
    L = a + b
    yaw = u1 * sp.tan(gam) / L
    xdot = [u1 * c - b * yaw * s, u1 * s + b * yaw * c, yaw]
    if steered:
        xdot.append(wg)
    if rigid:
        xdot += [u1 / r_w, u1 / (r_w * sp.cos(gam))]
    ae = appell_equations(mb, xdot, w, input_rates=None if rate is None else {gam: rate})
    mdl = SingleTrackModel(variant=variant, system=mb, appell=ae)
    if lateral_force_outputs:
        if rigid:
            raise ModelError(f"lateral_force_outputs is available for the skate variants "
                             f"{list(VARIANTS[:4])}, not {variant!r}")
        mb.add_output(["lateral_force_rear", "lateral_force_front"], lateral_force_expressions(mdl))
    return mdl


def lateral_force_expressions(mdl: SingleTrackModel) -> sp.Matrix:
    """The skates' lateral forces ``[Λ_rear, Λ_front]`` [N] as expressions of ``x, ẋ, u``
    (derived here).

    Appell's equations give ``ẇ = M_w⁻¹ F_w(x, w, u)``; the velocity map ``ẋ = Φ(x, u) w + φ``
    differentiated along the motion gives ``ẍ = ∂(Φw+φ)/∂x ẋ + Φ ẇ + ∂(Φw+φ)/∂γ γ̇`` (the last
    term for an assigned steering angle, ``γ̇`` the input ``gamma_rate``), and Newton–Euler,
    ``M ẍ + Dᵀ Λ = Q``, the multipliers ``Λ = (D Dᵀ)⁻¹ D (Q − M ẍ)`` (``Q − M ẍ`` lies in the
    range of ``Dᵀ``). The pseudo velocities are replaced by the velocities, ``v = cos ψ ẋ +
    sin ψ ẏ`` (and ``gamma_d``), so the expressions hold on the constraint manifold. The skate
    constraints are written ``n · v_P = 0`` with ``|n| = 1``: the multipliers are forces in
    newtons, as in [`friction_utilisation`][nhcontrol.reference.friction_utilisation].
    """
    mb, ae = mdl.system, mdl.appell
    eq = mb.equations()
    x, xd_s = list(eq.x), list(eq.xd)
    names = list(mb.constraints[i].name for i in range(len(mb.constraints)))
    rows = [names.index("rear_skate"), names.index("front_skate")]
    xdot = sp.Matrix(ae.xdot)
    wdot = ae.M_w.LUsolve(ae.F_w) if ae.nw else sp.zeros(0, 1)
    xdd = xdot.jacobian(list(ae.x)) * xdot
    if ae.nw:
        xdd += xdot.jacobian(list(ae.w)) * wdot
    ins = [str(u) for u in ae.u]
    if "gamma_rate" in ins:
        gam, rate = ae.u[ins.index("gamma")], ae.u[ins.index("gamma_rate")]
        xdd += xdot.diff(gam) * rate
    D = sp.Matrix(eq.D)
    Q = sp.Matrix(eq.Q).subs(dict(zip(xd_s, list(xdot))))
    lam = (D * D.T).LUsolve(D * (Q - sp.Matrix(eq.M) * xdd))
    psi = x[2]
    to_vel = {}
    for wi in ae.w:
        if str(wi) == "v":
            to_vel[wi] = sp.cos(psi) * xd_s[0] + sp.sin(psi) * xd_s[1]
        else:
            to_vel[wi] = xd_s[[str(q) for q in xd_s].index(str(wi))]
    return sp.Matrix([lam[r].subs(to_vel) for r in rows])


def static_axle_loads(cm: object, p: Mapping[str, float] | None = None,
                      g: float = GRAVITY) -> dict[str, float]:
    """Static load split of a single-track model: normal loads ``{"rear": N_r, "front": N_f}`` [N].

    The chassis mass ``m`` at ``G`` loads the axles as ``m g a / L`` (rear) and ``m g b / L``
    (front), ``L = a + b``; the front skate's mass ``m_F`` (torque-steered variants) loads the
    front axle, the wheels' ``m_w`` (rigid-wheel variants) their own axle. Flat road, no load
    transfer (the single-track models have no vertical dynamics and no height of ``G``).

    Parameters
    ----------
    cm : CompiledModel
        A compiled single-track model (parameters ``m, a, b`` and, where present, ``m_F``,
        ``m_w``).
    p : mapping, optional
        Parameters that differ from the model's defaults (e.g. the plant of a closed loop).
    """
    vals = dict(zip(cm.parameters, np.asarray(cm.param_vector(), dtype=float)))
    unknown = sorted(set(p or {}) - set(vals))
    if unknown:
        raise ModelError(f"static_axle_loads: unknown parameters {unknown}; the model has "
                         f"{sorted(vals)}")
    vals.update(p or {})
    if not {"m", "a", "b"} <= set(vals):
        raise ModelError(f"static_axle_loads needs a single-track model (parameters m, a, b), got "
                         f"parameters {sorted(vals)}")
    m, a, b = vals["m"], vals["a"], vals["b"]
    L = a + b
    steered = "gamma" in tuple(cm.coordinates)
    rear = g * (m * a / L + vals.get("m_w", 0.0))
    front = g * (m * b / L + vals.get("m_w", 0.0) + (vals.get("m_F", 0.0) if steered else 0.0))
    return {"rear": float(rear), "front": float(front)}


def kinematic_steady_turn(V: float, gamma: float, a: float = DEFAULTS["a"],
                          b: float = DEFAULTS["b"]) -> tuple[float, float]:
    """Steady turning of the kinematic bicycle: ``(R, ψ̇) = (L / tan γ, V tan γ / L)``.

    ``R`` is the radius of the path of the rear point ``R`` (rear axle centre).
    """
    L = a + b
    return L / math.tan(gamma), V * math.tan(gamma) / L


def newton_euler_wdot(mdl: SingleTrackModel, cm: object, s: ArrayLike, u: ArrayLike,
                      t: float = 0.0, ud: ArrayLike | None = None) -> NDArray[np.float64]:
    """``ẇ`` from Newton--Euler with multipliers (index-1 form, Eq. (2.119)) at ``s = [x, w]``.

    The velocities come from the velocity map, the accelerations from the saddle-point system
    ``[[M, Dᵀ], [D, 0]] [ẍ; Λ] = [Q; Q_d − E u̇]`` of the compiled model ``cm`` (for the
    constant-speed variants ``D`` and ``Q_d`` include the affine speed constraint; ``E u̇`` is
    the input-rate term of an assigned steering angle, ``E = ∂(B ẋ + b)/∂u``, with the input
    rates ``ud``, zero when omitted). The pseudo velocities' rates follow from ``ẍ``:
    ``v̇ = d(v_G · i_1)/dt``, ``γ̈``.
    """
    return _newton_euler(mdl, cm, s, u, t, ud)[0]


def _newton_euler(mdl: SingleTrackModel, cm: object, s: ArrayLike, u: ArrayLike, t: float,
                  ud: ArrayLike | None) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                                  NDArray[np.float64]]:
    """`newton_euler_wdot` with the mass matrix ``M`` and the accelerations ``ẍ`` it solved."""
    n = mdl.n
    s = np.asarray(s, dtype=float)
    u = np.asarray(u, dtype=float)
    xd = mdl.appell.rhs()(t, s, u)[:n]
    x = s[:n]
    M, D = np.asarray(cm.M(x, u)), np.asarray(cm.D(x, u))
    Q, Qd = np.asarray(cm.Q(x, xd, u)), np.asarray(cm.Qd(x, xd, u))
    if ud is not None and getattr(cm, "constraint_inputs", ()):
        Qd = Qd - np.asarray(cm.E(x, xd, u)) @ np.asarray(ud, dtype=float)
    psi, psid = x[2], xd[2]
    base = mdl.variant.removeprefix("rigid_")
    k = D.shape[0]
    K = np.block([[M, D.T], [D, np.zeros((k, k))]])
    xdd = np.linalg.solve(K, np.concatenate([Q, Qd]))[:n]
    out = []
    if base in ("force", "force_torque"):
        out.append(math.cos(psi) * xdd[0] + math.sin(psi) * xdd[1]
                   + psid * (-math.sin(psi) * xd[0] + math.cos(psi) * xd[1]))
    if base in ("torque", "force_torque"):
        out.append(xdd[3])
    return np.array(out), M, xdd


APPELL_CHECKS: dict[str, tuple] = {
    "force": (lambda t: [800.0 * math.sin(t), 300.0, 0.05 * math.cos(0.7 * t),
                         -0.035 * math.sin(0.7 * t)],
              [0, 0, 0.1, 15.0]),
    "torque": (lambda t: [20.0 * math.sin(2 * t)], [0, 0, 0, 0.02, 0.0]),
    "force_torque": (lambda t: [500.0, -200.0 * math.cos(t), 15.0 * math.sin(3 * t)],
                     [1, 2, 0.3, -0.01, 12.0, 0.0]),
    "rigid_force": (lambda t: [240.0 * math.sin(t), 90.0, 0.05 * math.cos(0.7 * t),
                               -0.035 * math.sin(0.7 * t)],
                    [0, 0, 0.1, 0, 0, 15.0]),
    "rigid_torque": (lambda t: [20.0 * math.sin(2 * t)], [0, 0, 0, 0.02, 0, 0, 0.0]),
    "rigid_force_torque": (lambda t: [150.0, -60.0 * math.cos(t), 15.0 * math.sin(3 * t)],
                           [1, 2, 0.3, -0.01, 0, 0, 12.0, 0.0]),
}
"""Inputs ``u(t)`` and initial states ``[x, w]`` of the Appell vs Newton--Euler checks (an
assigned steering angle comes with its rate: ``gamma_rate = dγ/dt``)."""


def appell_vs_newton_euler(mdl: SingleTrackModel, u: object = None, s0: ArrayLike | None = None,
                           *, t_final: float = 2.0, samples: int = 20,
                           cm: object = None) -> float:
    """Largest ``|ẇ_Appell − ẇ_Newton–Euler|`` at ``samples`` points of an Appell trajectory.

    Both formulations are exact, so the difference is round-off (``≲ 1e-10``). ``u(t)`` and
    ``s0`` default to [`APPELL_CHECKS`][nhcontrol.models.single_track.APPELL_CHECKS] of the variant.
    An assigned steering angle's rate (the input ``gamma_rate`` of Appell's velocity map) is the
    input rate ``u̇`` of ``gamma`` in Newton--Euler (``D ẍ = Q_d − E u̇``). The difference
    relative to its round-off scale: [`appell_check`][nhcontrol.models.single_track.appell_check].
    """
    return appell_check(mdl, u, s0, t_final=t_final, samples=samples, cm=cm)["max_abs_diff"]


def appell_check(mdl: SingleTrackModel, u: object = None, s0: ArrayLike | None = None,
                 *, t_final: float = 2.0, samples: int = 20, cm: object = None) -> dict[str, float]:
    """Appell's ``ẇ`` against Newton--Euler's along an Appell trajectory, absolute and relative
    to the round-off scale of the solve (derived here).

    Newton--Euler solves the saddle-point system ``[[M, Dᵀ], [D, 0]] [ẍ; Λ] = [Q; Q_d − E u̇]``.
    A backward-stable solve perturbs the data by ``O(ε)`` relative to their size; to first order
    the accelerations then move by ``c ε κ₂(M) ‖ẍ‖`` (the standard perturbation bound of a
    linear system, Higham, *Accuracy and Stability of Numerical Algorithms*, Thm. 7.2, with
    the mass matrix's conditioning: the constraint rows are of order one), ``c`` a modest
    constant of the dimension; Appell's ``M_w ẇ = F_w`` is better conditioned still. ``ẇ``
    follows from ``ẍ`` by rotations (``v̇``) and a copy (``γ̈``). The scale per sample is
    therefore ``σ = ε κ₂(M) max(‖ẍ‖₂, ‖ẇ‖_∞)`` and the ratio ``|Δẇ| / σ`` should stay below
    ``c ≈ 10`` whatever the variant, the masses and the trajectory. The single-track models mix
    the chassis (``m ≈ 1600`` kg, ``J ≈ 2900`` kg m²) with the steering (``J_F = 1`` kg m²)
    and wheels (``J_w / 2 = 0.9`` kg m²): ``κ₂(M) ≈ 3000`` and absolute differences up to a few
    ``1e-13`` where ``ẍ ≈ 10``.

    Returns
    -------
    dict
        ``max_abs_diff`` (largest ``|Δẇ|``), ``max_relative_to_roundoff`` (largest ``|Δẇ| / σ``),
        ``max_wdot`` (largest ``|ẇ|``), ``max_cond_M`` (largest ``κ₂(M)``).
    """
    if mdl.appell.nw == 0:
        raise ModelError(f"variant {mdl.variant!r} has no pseudo velocities (ẋ is prescribed): "
                         "there is no dynamic equation to compare")
    if u is None or s0 is None:
        u, s0 = APPELL_CHECKS[mdl.variant]
    cm = mdl.system.compile() if cm is None else cm
    f = mdl.appell.rhs()
    n = mdl.n
    sol = solve_ivp(lambda t, s: f(t, s, u(t)), (0, t_final), s0, rtol=1e-9, atol=1e-9,
                    dense_output=True)
    eps = float(np.finfo(float).eps)
    out = {"max_abs_diff": 0.0, "max_relative_to_roundoff": 0.0, "max_wdot": 0.0,
           "max_cond_M": 0.0}
    for t in np.linspace(0, t_final, samples):
        s = sol.sol(t)
        ut = np.asarray(u(t), dtype=float)
        ud = _steering_rate(mdl, ut)
        wa = f(t, s, ut)[n:]
        wn, M, xdd = _newton_euler(mdl, cm, s, ut, t, ud)
        d = float(np.max(np.abs(wa - wn)))
        kap = float(np.linalg.cond(M))
        sigma = eps * kap * max(float(np.linalg.norm(xdd)), float(np.max(np.abs(wa))))
        out["max_abs_diff"] = max(out["max_abs_diff"], d)
        out["max_relative_to_roundoff"] = max(out["max_relative_to_roundoff"],
                                              d / sigma if sigma > 0 else 0.0)
        out["max_wdot"] = max(out["max_wdot"], float(np.max(np.abs(wa))))
        out["max_cond_M"] = max(out["max_cond_M"], kap)
    return out


def _steering_rate(mdl: SingleTrackModel, u: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """Input rates ``u̇`` for Newton--Euler: ``γ̇`` (the input ``gamma_rate``) in the column of
    an assigned steering angle ``gamma``, zero elsewhere; None when ``γ`` is a coordinate."""
    names = [str(s) for s in mdl.system.inputs]
    if "gamma_rate" not in names:
        return None
    ud = np.zeros(len(names))
    ud[names.index("gamma")] = u[names.index("gamma_rate")]
    return ud


def kinematic_turn_error(V: float = 20.0, gamma: float = math.radians(3.0), *,
                         t_final: float = 5.0, mdl: SingleTrackModel | None = None) -> float:
    """Largest relative error of the rear-axle path radius of the integrated kinematic bicycle
    against ``L / tan γ`` ([`kinematic_steady_turn`][nhcontrol.models.single_track.kinematic_steady_turn]), over ``[0, t_final]``."""
    mdl = build("kinematic", V=V) if mdl is None else mdl
    f = mdl.appell.rhs()
    p = dict(mdl.appell.defaults)
    a, b = p["a"], p["b"]
    R_ex, _ = kinematic_steady_turn(V, gamma, a, b)
    sol = solve_ivp(lambda t, s: f(t, s, [gamma, 0.0]), (0, t_final), [0, 0, 0], rtol=1e-12,
                    atol=1e-12, dense_output=True)
    X, Y, PSI = sol.sol(np.linspace(0, t_final, 50))
    xr, yr = X - b * np.cos(PSI), Y - b * np.sin(PSI)
    radius = np.hypot(xr - xr[0], yr - (yr[0] + R_ex))
    return float(np.max(np.abs(radius / R_ex - 1)))



# ---------------------------------------------------------------------------------------------
# tyre plant: the same chassis with tyre slip instead of skate constraints

TYRE_DEFAULTS: Mapping[str, float] = {"C_R": 80e3, "C_F": 80e3, "mu": 0.9, "mf_C": 1.3,
                                      "mf_E": 0.0, "g": GRAVITY}
"""Tyre parameters of [`tyre_plant`][nhcontrol.models.single_track.tyre_plant]: cornering
stiffness per axle ``C_R``, ``C_F`` [N/rad] (80 kN/rad: Rajamani (2012) uses 80 kN/rad per
*tyre* with these vehicle parameters, so this is a soft axle; chosen here as the issue's
realistic-to-soft case), friction coefficient ``mu`` (0.9, dry asphalt), the magic formula's
shape factor ``mf_C`` (1.3 for the side force, Bakker, Nyborg & Pacejka 1987) and curvature
factor ``mf_E`` (0, chosen here), gravity ``g`` [m/s²]."""

TYRE_LAWS: tuple[str, ...] = ("linear", "magic")
"""Lateral tyre force laws: ``F_y = −C_α α`` and the simplified magic formula."""

TYRE_VARIANTS: tuple[str, ...] = ("force", "force_torque")
"""Skate variants that have a tyre-plant counterpart (same coordinates and inputs)."""


def lateral_tyre_force(alpha: object, C_alpha: object, Fz: object, law: str = "magic",
                       mu: object = TYRE_DEFAULTS["mu"], C: object = TYRE_DEFAULTS["mf_C"],
                       E: object = TYRE_DEFAULTS["mf_E"]) -> object:
    """Lateral tyre force ``F_y(α)`` [N] (SymPy or NumPy arguments), opposing the slip angle.

    ``linear``: ``F_y = −C_α α``. ``magic`` (simplified magic formula, Pacejka 2012, Ch. 4):
    ``F_y = −D sin(C arctan(Bα − E(Bα − arctan Bα)))`` with peak ``D = μ F_z`` and
    ``B = C_α / (C D)``, so that ``dF_y/dα = −C_α`` at ``α = 0``; ``|F_y| ≤ μ F_z``.
    """
    if law not in TYRE_LAWS:
        raise ModelError(f"tyre law {law!r} is unknown; choose one of {list(TYRE_LAWS)}")
    sym = any(isinstance(v, sp.Basic) for v in (alpha, C_alpha, Fz, mu, C, E))
    atan, sin = (sp.atan, sp.sin) if sym else (np.arctan, np.sin)
    if law == "linear":
        return -C_alpha * alpha
    D = mu * Fz
    Ba = C_alpha / (C * D) * alpha
    return -D * sin(C * atan(Ba - E * (Ba - atan(Ba))))


def _wheel_velocities(x: object, xd: object, gamma: object, a: object, b: object,
                      trig: tuple) -> tuple:
    """Longitudinal and lateral velocities of the rear and front axle centres in their wheel
    planes (the skate constraints of Table 1 are the lateral ones set to zero)."""
    cos, sin = trig
    psi = x[2]
    xd_, yd, psid = xd[0], xd[1], xd[2]
    c, s = cos(psi), sin(psi)
    cf, sf = cos(psi + gamma), sin(psi + gamma)
    return (c * xd_ + s * yd, -s * xd_ + c * yd - b * psid,
            cf * xd_ + sf * yd + a * sin(gamma) * psid, -sf * xd_ + cf * yd + a * cos(gamma) * psid)


def tyre_plant(variant: str = "force_torque", law: str = "magic", **overrides: float
               ) -> MultibodySystem:
    """Single-track vehicle with tyre slip: the ``variant`` skate model with its skate
    constraints replaced by lateral tyre forces (derived here; docs/theory/road_vehicles.md,
    "Tyre plant").

    Same coordinates, inputs and parameters (plus `TYRE_DEFAULTS`) as
    ``build(variant)``, no constraints. The slip angle of an axle is
    ``α = arctan(v_y / v_x)`` of its centre's velocity in the wheel plane (``v_y`` is the
    expression of its skate constraint); the lateral force ``F_y(α)``
    ([`lateral_tyre_force`][nhcontrol.models.single_track.lateral_tyre_force]) acts at the axle
    centre normal to the wheel plane, with the static normal loads ``F_z,R = g m a / L``,
    ``F_z,F = g (m b / L + m_F)`` (``m_F`` with the torque-steered variant) in the magic formula.
    As ``C_α → ∞`` the slip angles vanish like ``1 / C_α`` and the motion tends to the
    nonholonomic model's.

    Parameters
    ----------
    variant : {"force", "force_torque"}
    law : {"linear", "magic"}
    **overrides : float
        Names of `DEFAULTS` and `TYRE_DEFAULTS`.

    Returns
    -------
    MultibodySystem
        Named ``single_track_<variant>_tyre_<law>``; compile it for ``forward_dynamics``.
    """
    if variant not in TYRE_VARIANTS:
        raise ModelError(f"tyre_plant variant {variant!r} is unknown; choose one of "
                         f"{list(TYRE_VARIANTS)}")
    if law not in TYRE_LAWS:
        raise ModelError(f"tyre law {law!r} is unknown; choose one of {list(TYRE_LAWS)}")
    allowed = {**DEFAULTS, **TYRE_DEFAULTS}
    bad = sorted(set(overrides) - set(allowed))
    if bad:
        raise ModelError(f"unknown tyre-plant parameters {bad}; valid names: {sorted(allowed)}")
    vals = {**allowed, **overrides}
    for k, v in vals.items():
        if not math.isfinite(v) or (k not in ("V", "mf_E") and v <= 0):
            raise ModelError(f"tyre-plant parameter {k} = {v!r} must be a positive finite number")
    steered = variant == "force_torque"
    mb = MultibodySystem(f"single_track_{variant}_tyre_{law}")
    q = mb.add_coordinates("x y psi" + (" gamma" if steered else ""))
    x, y, psi = q[:3]
    par = dict(zip(vals, mb.add_parameters(**vals)))
    m, J, a, b = par["m"], par["J"], par["a"], par["b"]
    if steered:
        F_R, F_F, T = mb.add_inputs("F_R F_F T")
        gam = q[3]
    else:
        F_R, F_F, gam, _rate = mb.add_inputs("F_R F_F gamma gamma_rate")
    c, s = sp.cos(psi), sp.sin(psi)
    i1, j1 = sp.Matrix([c, s, 0]), sp.Matrix([-s, c, 0])
    e_F = sp.Matrix([sp.cos(psi + gam), sp.sin(psi + gam), 0])
    n_F = sp.Matrix([-sp.sin(psi + gam), sp.cos(psi + gam), 0])
    G = sp.Matrix([x, y, 0])
    chassis = mb.add_body("chassis", mass=m, inertia=sp.diag(0, 0, J), position=G,
                          orientation=rot_z(psi))
    P_F, P_R = G + a * i1, G - b * i1
    front = chassis
    if steered:
        front = mb.add_body("front_skate", mass=par["m_F"], inertia=sp.diag(0, 0, par["J_F"]),
                            position=P_F, orientation=rot_z(psi + gam))
        mb.add_torque(front, [0, 0, T])
        mb.add_torque(chassis, [0, 0, -T])
    L = a + b
    Fz_R = par["g"] * m * a / L
    Fz_F = par["g"] * (m * b / L + (par["m_F"] if steered else 0))
    vRx, vRy, vFx, vFy = _wheel_velocities(q, mb.velocities, gam, a, b, (sp.cos, sp.sin))
    kw = {"law": law, "mu": par["mu"], "C": par["mf_C"], "E": par["mf_E"]}
    FyR = lateral_tyre_force(sp.atan(vRy / vRx), par["C_R"], Fz_R, **kw)
    FyF = lateral_tyre_force(sp.atan(vFy / vFx), par["C_F"], Fz_F, **kw)
    mb.add_force(chassis, F_R * i1 + FyR * j1, point=P_R)
    mb.add_force(front, F_F * e_F + FyF * n_F, point=P_F)
    return mb


def slip_angles(x: ArrayLike, xd: ArrayLike, gamma: ArrayLike, a: float, b: float
                ) -> NDArray[np.float64]:
    """Slip angles ``[α_R, α_F]`` [rad] (N, 2) of the rear and front axles along a motion
    ``x, xd`` (N, ≥3: ``x, y, ψ`` of ``G`` first) with steering angles ``gamma`` (N,)."""
    X = np.atleast_2d(np.asarray(x, dtype=float)).T
    XD = np.atleast_2d(np.asarray(xd, dtype=float)).T
    vRx, vRy, vFx, vFy = _wheel_velocities(X, XD, np.asarray(gamma, dtype=float), a, b,
                                           (np.cos, np.sin))
    return np.column_stack([np.arctan2(vRy, vRx), np.arctan2(vFy, vFx)])
