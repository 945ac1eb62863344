"""The bicycle benchmark of Meijaard et al. (2007) as a Newton--Euler multibody model.

Thesis Sect. 4.3.1: five bodies (ground, rear body and frame with rider ``B``, handlebar
and fork ``H``, rear wheel ``R``, front wheel ``F``), hoop wheels rolling without slipping,
``n = 11`` coordinates (Eq. (4.128))


```text
x = [x_b, y_b, z_b, psi_b, phi_b, theta_b, delta, theta_R, theta_F, xi_R, xi_F]
```

``m = 4`` holonomic constraints (Eq. (4.139)) and ``l = 4`` nonholonomic ones (rolling
without slipping, Eq. (4.145)); ``n - m - l = 3`` degrees of freedom.

Frames (Fig. 4.2): global ``Z`` up, ``X`` forward. Orientation matrices (Eq. (4.129))

$$
R_B = R_z(\\psi_b) R_x(\\phi_b) R_y(\\theta_b), \\quad R_R = R_B R_y(\\theta_R), \\quad
R_H = R_B R_\\nu R_z(\\delta), \\quad R_F = R_H R_y(\\theta_F),
$$

where $R_\\nu = R_y(-\\nu)$ tilts the steer axis (the handlebar ``Z_H`` axis)
*backwards* by the steer axis tilt $\\nu$ (Meijaard's $\\lambda$). The sign is
derived here: it is the one for which Eqs. (4.135)-(4.138) and
(4.131) and the front contact coordinate $\\xi_F^0 = \\nu + \\pi/2 - \\theta_F^0$
(Eq. (4.175)) are consistent (checked in ``tests/test_models_bicycle.py``).

Parameters are those of Table 4.1 with the thesis signs (``z_B``, ``z_H`` positive
heights); the inertia tensors are given as in Meijaard et al. (their frame has ``Z`` down)
and converted with Eqs. (4.130)-(4.131).

References
----------
J. P. Meijaard, J. M. Papadopoulos, A. Ruina, A. L. Schwab, "Linearized dynamics
equations for the balance and steer of a bicycle: a benchmark and review",
Proc. R. Soc. A 463 (2007) 1955-1982.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from nhcontrol._util.errors import ModelError, ReferenceMotionError
# SymPy and the symbolic modeling are imported where the model is built (build(),
# add_frame_and_wheels()): model() loads a cached model without them (nhcontrol.compiled.recipe)
from nhcontrol.modeling.parameters import override_parameters, parameter_values

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike, NDArray
    import sympy as sp

    from nhcontrol.compiled import CompiledModel
    from nhcontrol.modeling import MultibodySystem
    from nhcontrol.reference import Reference

__all__ = [
    "build", "model", "steady_forward", "COORDINATES", "PARAMETERS", "PARTITION_4_172",
    "PARTITION_4_203", "PARTITION_4_208", "steady_forward_state", "steady_forward_multipliers",
    "static_wheel_loads"
]

COORDINATES: tuple[str, ...] = ("x_b", "y_b", "z_b", "psi_b", "phi_b", "theta_b", "delta",
                                "theta_R", "theta_F", "xi_R", "xi_F")
"""Generalized coordinates, Eq. (4.128)."""

PARAMETERS: Mapping[str, float] = {
    "w": 1.02, "c": 0.08, "nu": math.pi / 10, "g": 9.81,
    "x_B": 0.3, "z_B": 0.9, "x_H": 0.9, "z_H": 0.7,
    "m_B": 85.0, "I_Bxx": 9.2, "I_Byy": 11.0, "I_Bzz": 2.8, "I_Bxz": 2.4,
    "m_H": 4.0, "I_Hxx": 0.05892, "I_Hyy": 0.06, "I_Hzz": 0.00708, "I_Hxz": -0.00756,
    "rho_R": 0.3, "m_R": 2.0, "I_Rxx": 0.0603, "I_Ryy": 0.12,
    "rho_F": 0.35, "m_F": 3.0, "I_Fxx": 0.1405, "I_Fyy": 0.28,
}
"""Table 4.1 (Meijaard et al. 2007) with the thesis sign conventions: ``z_B``, ``z_H`` are positive
heights; ``nu`` is the steer axis tilt (Meijaard's lambda). Inertias in Meijaard's frame (Z down):
``I_Bxz = 2.4`` gives Ī_Bxz = -2.4 (Eq. (4.131)).
"""

PARTITION_4_172: dict[str, list[str]] = dict(
    independent=["x_b", "phi_b", "delta"],
    admissible_dependent=["y_b", "psi_b", "theta_R", "theta_F"],
    dependent=["z_b", "theta_b", "xi_R", "xi_F"],
)
"""Eq. (4.172): forward motion, lean and steer independent (third numerical procedure)."""

PARTITION_4_203: dict[str, list[str]] = dict(
    independent=["x_b", "psi_b", "phi_b"],
    admissible_dependent=["y_b", "delta", "theta_R", "theta_F"],
    dependent=["z_b", "theta_b", "xi_R", "xi_F"],
)
"""Eq. (4.203) (written there for the toroidal model; the ``eta`` coordinates do not exist for hoops):
forward motion, yaw and lean independent. The thesis gives only the union x_dd = [y_b, z_b, theta_b,
delta, theta_R, theta_F, xi_R, xi_F]; it is split here into admissible dependent / dependent as in
Eq. (4.208), the only split with this independent set that the thesis uses, so both dicts hold the
same sets.
"""

PARTITION_4_208: dict[str, list[str]] = dict(
    independent=["x_b", "psi_b", "phi_b"],
    admissible_dependent=["y_b", "delta", "theta_R", "theta_F"],
    dependent=["z_b", "theta_b", "xi_R", "xi_F"],
)
"""Eq. (4.208) (without ``eta_R``, ``eta_F``): forward motion, yaw and lean independent; the J23 block
is not null (Eq. (4.209)).
"""


def _check_overrides(overrides: Mapping[str, Any]) -> dict[str, float]:
    return override_parameters(PARAMETERS, overrides, model="bicycle", names_note=" (Table 4.1)",
                               requirement="bicycle parameters must be finite real numbers")


INPUTS = ("T_phi", "T_delta")
"""The benchmark's actuators (Meijaard et al. 2007, Eq. (A1)): lean torque and steer torque."""


def check_inputs(inputs: Any) -> tuple[str, ...]:
    """Validate a choice of the benchmark's torques ``inputs`` (any subset of `INPUTS`)."""
    names = (inputs,) if isinstance(inputs, str) else tuple(inputs or ())
    bad = [nm for nm in names if nm not in INPUTS]
    if bad or len(set(names)) != len(names):
        raise ModelError(f"inputs must be distinct names among {list(INPUTS)} (lean torque T_phi, steer "
                         f"torque T_delta of Meijaard et al. 2007), got {list(names)}")
    return names


def add_benchmark_torques(mb: MultibodySystem, inputs: Any) -> tuple[str, ...]:
    """Add the benchmark's lean and/or steer torque as inputs of ``mb`` (Meijaard's convention).

    The lean torque ``T_phi`` does the virtual work ``T_phi δφ`` and the steer torque
    ``T_delta`` (between rear frame and front assembly, about the steer axis) the virtual work
    ``T_delta δδ_M`` of Meijaard et al. (2007). The lean ``phi_b`` of the thesis has
    Meijaard's sign (right lean positive) but the steer ``delta`` is measured about the
    upward steer axis ``Z_H`` (Eq. (4.129)), the opposite of Meijaard's downward axis:
    ``δ_M = -delta``. Hence the generalized forces (added to ``Qa``) are ``+T_phi`` on
    ``phi_b`` and ``-T_delta`` on ``delta`` (derived here).

    Parameters
    ----------
    mb : MultibodySystem
        A bicycle with the coordinates ``phi_b`` and ``delta``.
    inputs : sequence of str
        Any subset of `INPUTS`, in the order wanted for ``u``.

    Returns
    -------
    tuple of str
        The input names added.
    """
    names = check_inputs(inputs)
    if not names:
        return names
    syms = mb.add_inputs(list(names))
    syms = (syms,) if len(names) == 1 else syms
    coords = [c.name for c in mb.coordinates]
    Q = [0] * mb.n
    for nm, u in zip(names, syms):
        if nm == "T_phi":
            Q[coords.index("phi_b")] += u
        else:
            Q[coords.index("delta")] -= u
    mb.add_generalized_force(Q)
    return names


def build(inputs: Any = (), **parameter_overrides: float) -> MultibodySystem:
    """Build the symbolic bicycle benchmark model (thesis Sect. 4.3.1).

    Parameters
    ----------
    inputs : sequence of str, optional
        Actuators, any subset of `INPUTS` (``"T_phi"`` lean torque, ``"T_delta"`` steer
        torque, Meijaard's sign convention; see `add_benchmark_torques()`). None by default.
    **parameter_overrides : float
        New default values for parameters of
        [`PARAMETERS`][nhcontrol.models.benchmark_bicycle.PARAMETERS] (Table 4.1), e.g.
        ``build(m_B=90.0)``.

    Returns
    -------
    MultibodySystem
        ``n = 11`` coordinates [`COORDINATES`][nhcontrol.models.benchmark_bicycle.COORDINATES] (Eq. (4.128)), bodies ``B, H, R, F``,
        gravity, hoop contacts ``P`` (rear) and ``Q`` (front): holonomic constraints
        ``P_z, P_tangent, Q_z, Q_tangent`` (Eq. (4.139), in this order) and nonholonomic
        ``P_vx, P_vy, Q_vx, Q_vy`` (Eq. (4.145)).

    Raises
    ------
    ModelError
        For unknown parameter names or non-numeric values.

    Notes
    -----
    Positions, Eqs. (4.132)-(4.138):

    $$
    \\begin{gathered}
    r_{G_B} = [x_b, y_b, z_b]^T, \\quad r_I = r_{G_B} + R_B [x_I, 0, 0]^T, \\quad
    r_{G_R} = r_{G_B} + R_B [-x_B, 0, \\rho_R - z_B]^T, \\\\
    r_{G_H} = r_I + R_H [a, 0, -b]^T, \\quad r_{G_F} = r_I + R_H [d, 0, -e]^T,
    \\end{gathered}
    $$

    with $x_I = w + c - x_B - z_B\\tan\\nu$,
    $a = (x_H - w - c)\\cos\\nu + z_H\\sin\\nu$,
    $b = ((x_H - w - c)\\sin 2\\nu - z_H\\cos 2\\nu + 2 z_B - z_H)/(2\\cos\\nu)$,
    $d = \\rho_F\\sin\\nu - c\\cos\\nu$,
    $e = (2 z_B - \\rho_F - c\\sin 2\\nu - \\rho_F\\cos 2\\nu)/(2\\cos\\nu)$.
    Inertia tensors in the body frames, Eqs. (4.130)-(4.131):
    $\\bar I_B = R_\\pi^T I_B R_\\pi$ (so $\\bar I_{Bxz} = -I_{Bxz}$) and
    $\\bar I_H = R_\\nu^T R_\\pi^T I_H R_\\pi R_\\nu$; the wheels have
    $\\bar I = \\mathrm{diag}(I_{xx}, I_{yy}, I_{xx})$ about their ``Y`` (spin) axis.
    """
    from nhcontrol.modeling import MultibodySystem, contacts

    check_inputs(inputs)
    values = _check_overrides(parameter_overrides)
    mb = MultibodySystem("benchmark_bicycle")
    coords = mb.add_coordinates(" ".join(COORDINATES))
    p = dict(zip(values, mb.add_parameters(**values)))
    bodies = add_frame_and_wheels(mb, coords[:9], p)
    xi_R, xi_F = coords[9:]

    # Hoop wheels rolling without slipping: Eqs. (4.132), (4.139)-(4.140), (4.145).
    contacts.rolling_hoop(mb, bodies["R"], bodies["r_GR"], bodies["R_R"], p["rho_R"], xi_R,
                          name="P", axis="y")
    contacts.rolling_hoop(mb, bodies["F"], bodies["r_GF"], bodies["R_F"], p["rho_F"], xi_F,
                          name="Q", axis="y")
    add_benchmark_torques(mb, inputs)
    return mb


def add_frame_and_wheels(mb: MultibodySystem, coords: tuple, p: Mapping[str, sp.Symbol],
                         wheel_inertia: tuple[sp.Matrix, sp.Matrix] | None = None,
                         suspension: tuple[Any, Any] = (0, 0)) -> dict[str, Any]:
    """Add the four bodies of the benchmark (B, H, R, F) and gravity to ``mb``.

    Shared by the hoop-wheel benchmark and the toroidal-wheel bicycle
    ([`nhcontrol.models.toroidal_bicycle`][nhcontrol.models.toroidal_bicycle]); only the
    wheel-ground contacts differ.

    Parameters
    ----------
    mb : MultibodySystem
        The system being built.
    coords : tuple of sympy.Symbol
        ``x_b, y_b, z_b, psi_b, phi_b, theta_b, delta, theta_R, theta_F``.
    p : mapping
        Parameter symbols by name ([`PARAMETERS`][nhcontrol.models.benchmark_bicycle.PARAMETERS];
        ``rho_R``, ``rho_F`` are the wheel radii).
    wheel_inertia : pair of (3, 3) sympy Matrix, optional
        Body-frame inertia tensors of the rear and front wheels; Table 4.1 values when None.
    suspension : pair of sympy expressions, optional
        Prismatic suspension travels ``(s_R, s_F)`` [m]: the rear wheel centre moves by
        ``s_R`` along the frame's ``Z_B`` axis and the front one by ``s_F`` along the steer
        axis ``Z_H`` (a telescopic fork); zero (rigid) by default
        ([`nhcontrol.models.escooter`][nhcontrol.models.escooter]).

    Returns
    -------
    dict
        Bodies ``"B", "H", "R", "F"``, wheel centres ``"r_GR", "r_GF"`` and wheel
        orientations ``"R_R", "R_F"``.
    """
    import sympy as sp

    from nhcontrol.modeling import rot_x, rot_y, rot_z

    x_b, y_b, z_b, psi_b, phi_b, theta_b, delta, theta_R, theta_F = coords
    w, c, nu, g = p["w"], p["c"], p["nu"], p["g"]
    x_B, z_B, x_H, z_H = p["x_B"], p["z_B"], p["x_H"], p["z_H"]
    rho_R, rho_F = p["rho_R"], p["rho_F"]

    # Orientation matrices, Eq. (4.129); R_nu = R_y(-nu) tilts the steer axis backwards.
    R_B = rot_z(psi_b) * rot_x(phi_b) * rot_y(theta_b)
    R_R = R_B * rot_y(theta_R)
    R_nu = rot_y(-nu)
    R_H = R_B * R_nu * rot_z(delta)
    R_F = R_H * rot_y(theta_F)

    # Inertia tensors in the body frames, Eqs. (4.130)-(4.131).
    I_B = sp.Matrix([[p["I_Bxx"], 0, -p["I_Bxz"]], [0, p["I_Byy"], 0], [-p["I_Bxz"], 0, p["I_Bzz"]]])
    sn, cn = sp.sin(nu), sp.cos(nu)
    I_Hxx, I_Hyy, I_Hzz, I_Hxz = p["I_Hxx"], p["I_Hyy"], p["I_Hzz"], p["I_Hxz"]
    Ib_Hxx = I_Hxx * cn**2 + I_Hzz * sn**2 - I_Hxz * sp.sin(2 * nu)
    Ib_Hzz = I_Hxx * sn**2 + I_Hzz * cn**2 + I_Hxz * sp.sin(2 * nu)
    Ib_Hxz = (I_Hzz - I_Hxx) * sn * cn - I_Hxz * sp.cos(2 * nu)
    I_H = sp.Matrix([[Ib_Hxx, 0, Ib_Hxz], [0, I_Hyy, 0], [Ib_Hxz, 0, Ib_Hzz]])
    if wheel_inertia is None:
        I_R = sp.diag(p["I_Rxx"], p["I_Ryy"], p["I_Rxx"])
        I_F = sp.diag(p["I_Fxx"], p["I_Fyy"], p["I_Fxx"])
    else:
        I_R, I_F = wheel_inertia

    # Positions, Eqs. (4.132)-(4.138).
    x_I = w + c - x_B - z_B * sp.tan(nu)                                          # (4.134)
    a = (x_H - w - c) * cn + z_H * sn                                             # (4.135)
    b = ((x_H - w - c) * sp.sin(2 * nu) - z_H * sp.cos(2 * nu) + 2 * z_B - z_H) / (2 * cn)  # (4.136)
    d = rho_F * sn - c * cn                                                       # (4.137)
    e = (2 * z_B - rho_F - c * sp.sin(2 * nu) - rho_F * sp.cos(2 * nu)) / (2 * cn)  # (4.138)
    r_GB = sp.Matrix([x_b, y_b, z_b])
    r_I = r_GB + R_B * sp.Matrix([x_I, 0, 0])
    s_R, s_F = suspension
    r_GR = r_GB + R_B * sp.Matrix([-x_B, 0, rho_R - z_B + s_R])
    r_GH = r_I + R_H * sp.Matrix([a, 0, -b])
    r_GF = r_I + R_H * sp.Matrix([d, 0, -e + s_F])

    body_B = mb.add_body("B", mass=p["m_B"], inertia=I_B, position=r_GB, orientation=R_B)
    body_H = mb.add_body("H", mass=p["m_H"], inertia=I_H, position=r_GH, orientation=R_H)
    body_R = mb.add_body("R", mass=p["m_R"], inertia=I_R, position=r_GR, orientation=R_R)
    body_F = mb.add_body("F", mass=p["m_F"], inertia=I_F, position=r_GF, orientation=R_F)
    mb.add_gravity(g, direction=(0, 0, -1))
    return {"B": body_B, "H": body_H, "R": body_R, "F": body_F, "r_GR": r_GR, "r_GF": r_GF,
            "R_R": R_R, "R_F": R_F}


@lru_cache(maxsize=8)
def _model_cached(items: tuple[tuple[str, float], ...], inputs: tuple[str, ...] = ()) -> "CompiledModel":
    from nhcontrol.compiled.recipe import cached_model

    # a warm start: the cached kernels found from the recipe, no symbolic build, no SymPy
    return cached_model(build, inputs, **dict(items))


def model(inputs: Any = (), **parameter_overrides: float) -> "CompiledModel":
    """Compiled bicycle benchmark (cached in memory and on disk).

    Parameters
    ----------
    inputs : sequence of str, optional
        Actuators, any subset of `INPUTS`, e.g. ``model(inputs=("T_phi", "T_delta"))``
        or ``model(inputs=("T_delta",))`` (see [`build()`][nhcontrol.models.benchmark_bicycle.build]).
    **parameter_overrides : float
        As for [`build()`][nhcontrol.models.benchmark_bicycle.build]. Parameters can also be
        changed per call of every kernel
        through ``p = cm.param_vector(...)``, which needs no recompilation.

    Returns
    -------
    CompiledModel
    """
    names = check_inputs(inputs)
    values = _check_overrides(parameter_overrides)
    changed = tuple(sorted((k, v) for k, v in values.items() if v != PARAMETERS[k]))
    return _model_cached(changed, names)


def _parameter_values(cm: CompiledModel, p: ArrayLike | Mapping[str, float] | None) -> dict[str, float]:
    return parameter_values(cm, p)[1]


def _require_bicycle(cm: CompiledModel) -> None:
    if tuple(cm.coordinates) != COORDINATES:
        raise ModelError(f"expected the benchmark bicycle model with coordinates {list(COORDINATES)}, "
                         f"got model {getattr(cm, 'name', '?')!r} with {list(cm.coordinates)}; "
                         "use nhcontrol.models.benchmark_bicycle.model()")


def steady_forward_state(v: float, t: ArrayLike, values: Mapping[str, float]
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Coordinates, velocities and accelerations of the steady forward motion.

    Eqs. (4.148), (4.174)-(4.175): $x_b = v t$, $z_b = z_B$,
    $\\theta_R = v t/\\rho_R$, $\\theta_F = v t/\\rho_F$,
    $\\xi_R = \\pi/2 - v t/\\rho_R$, $\\xi_F = \\nu + \\pi/2 - v t/\\rho_F$,
    all other coordinates zero; $\\ddot x = 0$.

    Parameters
    ----------
    v : float
        Forward speed [m/s].
    t : float or (N,) array_like
        Times.
    values : mapping
        Parameter values (needs ``z_B``, ``nu``, ``rho_R``, ``rho_F``).

    Returns
    -------
    x, xd, xdd : (11,) or (N, 11) ndarray
    """
    tt = np.asarray(t, dtype=float)
    scalar = tt.ndim == 0
    tt = np.atleast_1d(tt)
    rr, rf, nu, zb = values["rho_R"], values["rho_F"], values["nu"], values["z_B"]
    # x(t) = x(0) + t ẋ: every coordinate is affine in t
    rate = np.array([v, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, v / rr, v / rf, -v / rr, -v / rf])
    start = np.array([0.0, 0.0, zb, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, np.pi / 2, nu + np.pi / 2])
    x = tt[:, None] * rate + start
    xd = np.empty_like(x)
    xd[...] = rate
    xdd = np.zeros_like(x)
    if scalar:
        return x[0], xd[0], xdd[0]
    return x, xd, xdd


def static_wheel_loads(values: Mapping[str, float] | None = None) -> tuple[float, float]:
    """Vertical ground reactions ``(N_P, N_Q)`` [N] of the upright bicycle from statics.

    Moment balance about the rear contact ``P`` in the symmetry plane: the centres of
    mass lie at horizontal distances ``0, x_B, x_H, w`` from ``P`` (Table 4.1), so

    $$
    N_Q = g\\,(m_B x_B + m_H x_H + m_F w)/w, \\qquad
    N_P = g\\,(m_R + m_B + m_H + m_F) - N_Q.
    $$

    Parameters
    ----------
    values : mapping, optional
        Parameter values; defaults to [`PARAMETERS`][nhcontrol.models.benchmark_bicycle.PARAMETERS].

    Returns
    -------
    tuple of float
    """
    v = dict(PARAMETERS) if values is None else dict(values)
    total = v["m_R"] + v["m_B"] + v["m_H"] + v["m_F"]
    n_q = v["g"] * (v["m_B"] * v["x_B"] + v["m_H"] * v["x_H"] + v["m_F"] * v["w"]) / v["w"]
    return v["g"] * total - n_q, n_q


def steady_forward_multipliers(cm: CompiledModel, p: ArrayLike | Mapping[str, float] | None = None
                               ) -> NDArray[np.float64]:
    """Exact Lagrange multipliers $\\Lambda^0$ of the steady forward motion.

    Closed form. Along Eq. (4.174) $\\ddot x^0 = 0$ and $Q_v = 0$ (the
    wheels spin about a principal axis and every centre of mass moves on a straight line
    at constant speed), so Eq. (2.108) reduces to $D^T \\Lambda^0 = Q_a$, the
    statics of the upright bicycle: the ground pushes up at ``P`` and ``Q`` with the
    wheel loads of [`static_wheel_loads()`][nhcontrol.models.benchmark_bicycle.static_wheel_loads],
    there are no horizontal contact forces
    (no rolling resistance, constant speed), and the tangency constraints carry no load
    (the ``xi`` rows of Eq. (2.108) read $\\Lambda_{t}\\, n\\cdot\\partial t/\\partial\\xi = 0$).
    Since the reaction is $-D^T\\Lambda$ (Eq. (2.106)) and $\\partial r_{P,z}/\\partial z_b = 1$,

    $$
    \\Lambda_{P_z} = -N_P, \\quad \\Lambda_{Q_z} = -N_Q, \\quad \\text{others } 0.
    $$

    The tests check this against the inverse dynamics of Eq. (2.112).

    Parameters
    ----------
    cm : CompiledModel
        The compiled bicycle ([`model()`][nhcontrol.models.benchmark_bicycle.model]).
    p : (p,) array_like or mapping, optional
        Parameter vector (``cm.param_vector(...)``) or overrides; defaults when None.

    Returns
    -------
    (8,) ndarray
        In the constraint order ``cm.holonomic_names + cm.nonholonomic_names``.
    """
    _require_bicycle(cm)
    vals = _parameter_values(cm, p)
    n_p, n_q = static_wheel_loads(vals)
    names = list(cm.holonomic_names) + list(cm.nonholonomic_names)
    lam = np.zeros(len(names))
    lam[names.index("P_z")] = -n_p
    lam[names.index("Q_z")] = -n_q
    return lam


def steady_forward(model: "CompiledModel", v: float,
                   p: ArrayLike | Mapping[str, float] | None = None) -> "Reference":
    """Reference of the steady forward motion at speed ``v`` (Eqs. (4.148), (4.174)-(4.175)).

    Parameters
    ----------
    model : CompiledModel
        The compiled bicycle ([`model()`][nhcontrol.models.benchmark_bicycle.model]).
    v : float
        Forward speed [m/s] (any real value; ``v = 0`` is the upright equilibrium).
    p : (p,) array_like or mapping, optional
        Parameter vector or overrides; defaults when None.

    Returns
    -------
    Reference
        ``steady=True`` (a relative equilibrium: the linearization is time invariant),
        with the exact multipliers of
        [`steady_forward_multipliers()`][nhcontrol.models.benchmark_bicycle.steady_forward_multipliers].

    Raises
    ------
    ReferenceMotionError
        If ``v`` is not a finite real number.
    ModelError
        If ``model`` is not the bicycle benchmark.

    Examples
    --------
    >>> from nhcontrol.models import benchmark_bicycle as bb
    >>> cm = bb.model()                                   # doctest: +SKIP
    >>> ref = bb.steady_forward(cm, 4.3)                  # doctest: +SKIP
    >>> ref.check(cm, [0.0, 0.5, 1.0]).max_dynamics < 1e-12   # doctest: +SKIP
    True
    """
    from nhcontrol.reference import Reference

    _require_bicycle(model)
    try:
        speed = float(v)
    except (TypeError, ValueError) as exc:
        raise ReferenceMotionError(f"forward speed v must be a real number in m/s, got {v!r}") from exc
    if not math.isfinite(speed):
        raise ReferenceMotionError(f"forward speed v must be finite, got {v!r}")
    vals = _parameter_values(model, p)
    pvec = np.array([vals[k] for k in model.parameters])
    lam0 = steady_forward_multipliers(model, pvec)

    # every coordinate is affine in t (Eqs. (4.174)-(4.175)): a constant-velocity reference
    x0, xd0, _ = steady_forward_state(speed, 0.0, vals)
    return Reference.constant_velocity(model, x0, xd0, lam=lam0, p=pvec)


def canonical_matrices(cm: "CompiledModel", p: ArrayLike | Mapping[str, float] | None = None
                       ) -> dict[str, NDArray[np.float64]]:
    """Meijaard's lean-steer matrices ``M, C1, K0, K2`` (and ``H``) from the third procedure.

    ``M q̈ + v C1 q̇ + (g K0 + v² K2) q = H u`` with ``q = [φ, δ_M]`` in Meijaard's sign
    convention (Meijaard et al. 2007, Eq. (A1)): the thesis lean ``phi_b`` is Meijaard's
    ``φ``, but the thesis steer ``delta`` turns about the upward steer axis (Eq. (4.129)), so
    ``δ_M = -delta``. The matrices come from the exact linearizations (Eq. (4.125)) of
    [`steady_forward()`][nhcontrol.models.benchmark_bicycle.steady_forward] at ``v = 0, 1, 2`` m/s
    (``J(v) = J0 + v J1 + v² J2`` in the rows of
    ``φ̈, δ̈``), checked at ``v = 3`` m/s; ``M`` needs the generalized forces of the torques,
    so the actuated model ([`model()`][nhcontrol.models.benchmark_bicycle.model] with
    ``inputs=INPUTS``) is used for it when ``cm``
    has no inputs (same parameters).

    Parameters
    ----------
    cm : CompiledModel
        The bicycle ([`model()`][nhcontrol.models.benchmark_bicycle.model], with or without inputs).
    p : (p,) array_like or mapping, optional
        Parameter vector or overrides of ``cm`` (defaults when None).

    Returns
    -------
    dict
        ``M, C1, K0, K2`` (2, 2) and, when ``cm`` has inputs, ``H`` (2, k): the generalized
        forces on ``[φ, δ_M]`` per unit input (the identity columns for ``T_phi``, ``T_delta``).

    Examples
    --------
    >>> from nhcontrol.models import benchmark_bicycle as bb
    >>> mats = bb.canonical_matrices(bb.model())          # doctest: +SKIP
    >>> round(mats["M"][0, 0], 5)                          # doctest: +SKIP
    80.81722
    """
    from nhcontrol.linearization import linearize, second_order_matrices

    _require_bicycle(cm)
    vals = _parameter_values(cm, p)
    act = cm if tuple(cm.inputs) == INPUTS else model(inputs=INPUTS)
    pvec = np.array([vals[k] for k in act.parameters])
    signs = (1.0, -1.0)   # [phi_b, delta] -> [φ, δ_M]
    mats = second_order_matrices(lambda v: linearize(act, steady_forward(act, v, pvec), PARTITION_4_172),
                                 ("phi_b", "delta"), np.eye(2), signs=signs)
    out = {"M": mats["M"], "C1": mats["C1"], "K0": mats["K0g"] / vals["g"], "K2": mats["K2"]}
    if cm.inputs:
        pv = np.array([vals[k] for k in cm.parameters])
        lin = linearize(cm, steady_forward(cm, 0.0, pv), PARTITION_4_172)
        st = list(lin.states)
        Bq = np.diag(signs) @ lin.B[[st.index("phi_b_d"), st.index("delta_d")]]
        out["H"] = out["M"] @ Bq
    return {k: np.array(v) for k, v in out.items()}
