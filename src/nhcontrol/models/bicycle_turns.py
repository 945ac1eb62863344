"""Hands-free steady turns (circular motions) of bicycle-like models.

Derived here (the thesis names the circular motions of the bicycle and the e-scooter as future
work, Ch. 9; the published anchor is Basu-Mandal, Chatterjee & Papadopoulos, Proc. R. Soc. A
463 (2007) 1983-2003). The models are those whose first eleven coordinates are the benchmark's
(Eq. (4.128)),

```text
x = [x_b, y_b, z_b, psi_b, phi_b, theta_b, delta, theta_R, theta_F, xi_R, xi_F, ...]
```

(the benchmark bicycle, the toroidal bicycle and the e-scooter; extra coordinates such as
``eta_R, eta_F, s_R, s_F`` are constant in a steady turn).

A steady turn is a relative equilibrium of the symmetry group "translate and rotate about the
vertical, spin each wheel": at ``t = 0`` the frame is at the origin with heading zero and

$$
\\dot x_b = u,\\ \\dot y_b = w,\\ \\dot\\psi_b = \\Omega,\\ \\dot\\theta_R = \\omega_R,
\\ \\dot\\theta_F = \\omega_F,\\ \\dot\\xi_R = -\\omega_R,\\ \\dot\\xi_F = -\\omega_F,
$$

all other velocities zero, and the only nonzero accelerations are those of the frame's
reference point turning with rate ``Omega``: ``ẍ_b = -Omega w``, ``ÿ_b = Omega u``. The unknowns
are the constant coordinates (``z_b, phi_b, theta_b, delta, xi_R, xi_F, ...``), the rates
``(u, w, Omega, omega_F, omega_R)`` and the multipliers ``Lambda``; the equations are the
holonomic constraints ``C(x) = 0`` (Eq. (2.109)), the velocity constraints ``D(x) xd = 0``
(Eq. (2.81)) and the dynamic equations ``M(x) xdd + D^T Lambda = Q(x, xd)`` (Eq. (2.108)).
Energy conservation makes one dynamic equation redundant (the forward one), so the solutions
form one-parameter families; the rear-wheel spin rate ``omega_R`` parametrizes them locally.
Newton (Gauss-Newton on the consistent overdetermined system) uses the exact Jacobian from the
compiled symbolic derivatives (``dMa_dx``, ``dDTlam_dx``, ``dQ_dx``, ``dQ_dxd``, ``dDv_dx``);
families are followed by pseudo-arclength continuation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ModelError, ReferenceMotionError, SolverError
from nhcontrol.modeling import parameter_values

if TYPE_CHECKING:  # pragma: no cover
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference
    from nhcontrol.linearization.partition import Partition

__all__ = ["SteadyTurn", "TURN_PARTITION", "TURN_PARTITION_FRONT", "CYCLIC", "RATES", "turn_state", "turn_reference",
           "turn_residual", "solve_steady_turn", "straight_turn", "continue_turns",
           "heading_frame", "turn_jacobian", "shape_indices", "turn_partition",
           "rear_contact", "time_reversed", "turn_between", "pivot_turn", "nudge", "families", "FAMILY_NAMES", "capsize_speed", "capsize_direction", "bifurcation_speed",
           "turn_of_radius"]

BASE: tuple[str, ...] = ("x_b", "y_b", "z_b", "psi_b", "phi_b", "theta_b", "delta", "theta_R",
                         "theta_F", "xi_R", "xi_F")
CYCLIC: tuple[str, ...] = ("x_b", "y_b", "psi_b", "theta_R", "theta_F")
"""Coordinates that grow along a steady turn (zero at ``t = 0``)."""
RATES: tuple[str, ...] = ("u", "w", "Omega", "omega_F", "omega_R")
"""Velocity unknowns: frame velocity ``(u, w)`` in the heading frame, yaw rate, wheel spin rates."""

TURN_PARTITION: dict[str, list[str]] = dict(
    independent=["theta_R", "phi_b", "delta"],
    admissible_dependent=["x_b", "y_b", "psi_b", "theta_F"],
    dependent=["z_b", "theta_b", "xi_R", "xi_F"],
)
"""Partition for turns (derived here): rear-wheel rotation, lean and steer independent. Unlike
Eq. (4.172) it stays regular when the heading turns through 90 degrees (``x_b`` is not
independent). Models with extra coordinates add them to ``dependent`` (contact ``eta``) or
``independent`` (suspension travels); see `turn_partition()`."""


TURN_PARTITION_FRONT: dict[str, list[str]] = dict(
    independent=["theta_F", "phi_b", "delta"],
    admissible_dependent=["x_b", "y_b", "psi_b", "theta_R"],
    dependent=["z_b", "theta_b", "xi_R", "xi_F"],
)
"""Alternative to `TURN_PARTITION` with the front-wheel rotation independent: regular where the
rear wheel pivots (``omega_R = 0`` with the front wheel across the frame), where
`TURN_PARTITION` is singular."""


def turn_partition(cm: CompiledModel, front: bool = False) -> dict[str, list[str]]:
    """`TURN_PARTITION` (or `TURN_PARTITION_FRONT` with ``front``) extended to the model's extra
    coordinates (``eta_*`` dependent, ``s_*`` independent)."""
    _check_model(cm, inputs=True)
    part = {k: list(v) for k, v in (TURN_PARTITION_FRONT if front else TURN_PARTITION).items()}
    for c in cm.coordinates[len(BASE):]:
        (part["independent"] if c.startswith("s_") else part["dependent"]).append(c)
    return part


def _check_model(cm: CompiledModel, inputs: bool = False) -> None:
    """A bicycle-like model; with ``inputs`` its inputs (constant in a steady turn) are allowed
    where they enter only the generalized forces."""
    if tuple(cm.coordinates[:len(BASE)]) != BASE:
        raise ModelError(f"steady turns need a bicycle-like model whose coordinates start with {list(BASE)} "
                         f"(benchmark_bicycle, toroidal_bicycle, escooter); got model "
                         f"{getattr(cm, 'name', '?')!r} with {list(cm.coordinates)}")
    if inputs and tuple(getattr(cm, "constraint_inputs", ()) or ()):
        raise ModelError(f"steady turns take inputs that enter the generalized forces only; inputs "
                         f"{list(cm.constraint_inputs)} of model {getattr(cm, 'name', '?')!r} enter its "
                         f"constraints")
    if cm.inputs and not inputs:
        raise ModelError(f"steady turns are hands-free: use the model without inputs, got inputs "
                         f"{list(cm.inputs)}")


@dataclass(frozen=True, eq=False)
class SteadyTurn:
    """One steady turn (relative equilibrium) of a bicycle-like model.

    Attributes
    ----------
    x0, xd0, xdd0 : (n,) ndarray
        Coordinates, velocities and accelerations at ``t = 0`` (frame at the origin, heading 0).
    lam : (m + l,) ndarray
        Lagrange multipliers at ``t = 0`` (those of the horizontal contact forces turn with the
        heading).
    p : (np,) ndarray
        Parameter vector.
    omega_R, Omega : float
        Rear-wheel spin rate and yaw rate [rad/s].
    speed : float
        ``rho_R * omega_R`` [m/s] (the forward speed of straight running; Meijaard's ``v``).
    lean_deg, steer_deg : float
        Frame lean ``phi_b`` (right positive) and steer in Meijaard's sign ``delta_M = -delta``,
        in degrees.
    radius : float
        Radius of the rear contact point's circle [m] (``inf`` when ``Omega = 0``).
    residual : float
        Scaled residual of the steady-turn equations at the solution (see `turn_residual()`).
    u : (k,) ndarray
        Constant inputs of the turn (empty for a hands-free model; e.g. the steer torque that
        holds a turn of given speed and radius, `turn_of_radius()`).
    """

    x0: NDArray[np.float64]
    xd0: NDArray[np.float64]
    xdd0: NDArray[np.float64]
    lam: NDArray[np.float64]
    p: NDArray[np.float64]
    coordinates: tuple[str, ...]
    residual: float = 0.0
    values: dict = field(default_factory=dict, repr=False)
    u: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))

    @property
    def omega_R(self) -> float:
        return float(self.xd0[self.coordinates.index("theta_R")])

    @property
    def omega_F(self) -> float:
        return float(self.xd0[self.coordinates.index("theta_F")])

    @property
    def Omega(self) -> float:
        return float(self.xd0[self.coordinates.index("psi_b")])

    @property
    def speed(self) -> float:
        return float(self.values["rho_R"] * self.omega_R)

    @property
    def lean_deg(self) -> float:
        return math.degrees(float(self.x0[self.coordinates.index("phi_b")]))

    @property
    def steer_deg(self) -> float:
        return -math.degrees(float(self.x0[self.coordinates.index("delta")]))

    @property
    def center(self) -> NDArray[np.float64]:
        """Horizontal position of the turn centre at ``t = 0`` (inf when straight)."""
        u, w, Om = self.xd0[0], self.xd0[1], self.Omega
        if Om == 0.0:
            return np.array([math.inf, math.inf])
        return np.array([-w / Om, u / Om])

    @property
    def radius(self) -> float:
        if self.Omega == 0.0:
            return math.inf
        return float(np.hypot(*(rear_contact(self)[:2] - self.center)))

    @property
    def period(self) -> float | None:
        return None if self.Omega == 0.0 else 2 * math.pi / abs(self.Omega)

    def __repr__(self) -> str:
        return (f"SteadyTurn(v={self.speed:.6g} m/s, lean={self.lean_deg:.6g} deg, steer={self.steer_deg:.6g} deg, "
                f"Omega={self.Omega:.6g} rad/s, radius={self.radius:.6g} m)")


def rear_contact(turn: SteadyTurn) -> NDArray[np.float64]:
    """Rear contact point at ``t = 0`` (hoop, or a torus of circular cross-section).

    The contact point of a wheel with centre ``c``, axis ``a`` and radii ``(rho, a_t)`` (torus
    centre-line radius and tube radius; ``a_t = 0`` for a hoop) on the plane ``z = 0`` is
    ``c + rho d - a_t e_z`` with ``d`` the unit in-plane direction closest to ``-e_z``.
    """
    v = turn.values
    c = turn.coordinates
    q = dict(zip(c, turn.x0))
    ps, ph, th = q["psi_b"], q["phi_b"], q["theta_b"]
    R = _rz(ps) @ _rx(ph) @ _ry(th)
    s_R = q.get("s_R", 0.0)
    R_wheel = v["rho_R"]
    mu = v.get("mu_R", 0.0)
    rho, a_t = R_wheel / (1 + mu), mu * R_wheel / (1 + mu)
    center = np.array([q["x_b"], q["y_b"], q["z_b"]]) + R @ np.array([-v["x_B"], 0.0, R_wheel - v["z_B"] + s_R])
    axis = R[:, 1]
    down = -np.array([0.0, 0.0, 1.0]) + axis[2] * axis
    nd = np.linalg.norm(down)
    if nd < 1e-12:
        raise ReferenceMotionError("the rear wheel lies flat: no unique contact point")
    return center + rho * down / nd - np.array([0.0, 0.0, a_t])


def _rx(a: float) -> NDArray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a: float) -> NDArray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(a: float) -> NDArray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


# ----------------------------------------------------------------------------- motion in time
def turn_state(turn: SteadyTurn, t: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Coordinates, velocities and accelerations ``(N, n)`` (or ``(n,)``) of a steady turn.

    ``psi_b = Omega t``, ``theta_R = omega_R t``, ``xi_R = xi_R(0) - omega_R t`` (likewise for the
    front wheel), all other non-cyclic coordinates constant; the frame point ``(x_b, y_b)``
    leaves the origin with velocity ``(u, w)`` and turns with rate ``Omega``.
    """
    tt = np.asarray(t, dtype=float)
    scalar = tt.ndim == 0
    tt = np.atleast_1d(tt)
    u, w = float(turn.xd0[0]), float(turn.xd0[1])
    Om = turn.Omega
    psi = Om * tt
    a = tt * np.sinc(psi / np.pi)                                  # sin(Om t)/Om
    b = Om * tt**2 / 2 * np.sinc(psi / (2 * np.pi)) ** 2           # (1 - cos(Om t))/Om
    x = tt[:, None] * turn.xd0 + turn.x0
    x[:, 0] = u * a - w * b
    x[:, 1] = w * a + u * b
    xd = np.tile(turn.xd0, (tt.size, 1))
    cs, sn = np.cos(psi), np.sin(psi)
    xd[:, 0], xd[:, 1] = u * cs - w * sn, u * sn + w * cs
    xdd = np.zeros_like(x)
    xdd[:, 0], xdd[:, 1] = -Om * xd[:, 1], Om * xd[:, 0]
    return (x[0], xd[0], xdd[0]) if scalar else (x, xd, xdd)


class _TurnFn:
    """Picklable ``t -> turn_state(turn, t)[k]``."""

    def __init__(self, turn: SteadyTurn, k: int) -> None:
        self.turn, self.k = turn, k

    def __call__(self, t: Any) -> Any:
        return turn_state(self.turn, t)[self.k]


def turn_reference(cm: "CompiledModel", turn: SteadyTurn, *, check: bool = True) -> "Reference":
    """`nhcontrol.reference.Reference` of a steady turn (periodic with ``2 pi / |Omega|``;
    ``steady`` when ``Omega = 0``).

    The multipliers come from inverse dynamics (Eq. (2.112)): those of the horizontal contact
    forces turn with the heading (the nonholonomic constraints are written in the global frame),
    so only ``turn.lam`` at ``t = 0`` is stored on the turn. With ``check`` the reference is
    checked for admissibility (an independent check of the steady-turn solution).
    """
    from nhcontrol.reference import Reference

    _check_model(cm, inputs=True)
    u = _turn_inputs(cm, turn) if cm.inputs else None
    if turn.Omega == 0.0:
        return Reference.constant_velocity(cm, turn.x0, turn.xd0, u=u, p=turn.p, check=check)
    return Reference.from_functions(cm, _TurnFn(turn, 0), _TurnFn(turn, 1), _TurnFn(turn, 2), u=u,
                                    p=turn.p, period=turn.period, check=check)


def _turn_inputs(cm: CompiledModel, turn: SteadyTurn) -> NDArray[np.float64]:
    u = np.asarray(turn.u, dtype=float).reshape(-1)
    if u.size != len(cm.inputs):
        raise ModelError(f"the turn holds {u.size} inputs but model {getattr(cm, 'name', '?')!r} has "
                         f"{list(cm.inputs)}; solve the turn on this model (solve_steady_turn, "
                         f"turn_of_radius)")
    return u


# ----------------------------------------------------------------------------- equations
class _Layout:
    """Unknown vector ``y = [free coordinates, u, w, Omega, omega_F, omega_R, Lambda, inputs]``
    and scales (the model's inputs, constant in a steady turn, last; none when hands-free)."""

    def __init__(self, cm: CompiledModel, vals: Mapping[str, float]) -> None:
        self.coords = tuple(cm.coordinates)
        self.n = len(self.coords)
        self.free = [i for i, c in enumerate(self.coords) if c not in CYCLIC]
        self.free_names = [self.coords[i] for i in self.free]
        self.nf = len(self.free)
        self.nc = int(cm.m) + int(cm.l)
        self.m = int(cm.m)
        self.k = len(cm.inputs)
        self.N = self.nf + len(RATES) + self.nc + self.k
        ix = {c: i for i, c in enumerate(self.coords)}
        self.ix = ix
        L = float(vals["w"])
        g = float(vals["g"])
        V0 = math.sqrt(g * L)
        mass = sum(float(vals[f"m_{b}"]) for b in "BHRF")
        # scales of the unknowns (for the arclength metric) and of the residual rows
        self.sy = np.concatenate([np.ones(self.nf),
                                  [V0, V0, V0 / L, V0 / vals["rho_F"], V0 / vals["rho_R"]],
                                  np.full(self.nc, mass * g), np.ones(self.k)])
        self.srow = np.concatenate([np.ones(self.m), np.full(self.nc, V0), np.full(self.n, mass * g * L)])
        # d xd / d rates (n x 5): u, w, Omega, omega_F, omega_R
        G = np.zeros((self.n, 5))
        G[ix["x_b"], 0] = 1.0
        G[ix["y_b"], 1] = 1.0
        G[ix["psi_b"], 2] = 1.0
        G[ix["theta_F"], 3], G[ix["xi_F"], 3] = 1.0, -1.0
        G[ix["theta_R"], 4], G[ix["xi_R"], 4] = 1.0, -1.0
        self.G = G

    def unpack(self, y: NDArray) -> tuple[NDArray, NDArray, NDArray, NDArray]:
        x = np.zeros(self.n)
        x[self.free] = y[:self.nf]
        r = y[self.nf:self.nf + 5]
        lam = y[self.nf + 5:self.nf + 5 + self.nc]
        xd = self.G @ r
        xdd = np.zeros(self.n)
        xdd[self.ix["x_b"]], xdd[self.ix["y_b"]] = -r[2] * r[1], r[2] * r[0]
        return x, xd, xdd, lam

    def inputs(self, y: NDArray) -> NDArray | None:
        return y[self.N - self.k:] if self.k else None

    def pack(self, x: NDArray, xd: NDArray, lam: NDArray, u: NDArray | None = None) -> NDArray:
        ix = self.ix
        r = [xd[ix["x_b"]], xd[ix["y_b"]], xd[ix["psi_b"]], xd[ix["theta_F"]], xd[ix["theta_R"]]]
        uu = np.zeros(self.k) if u is None or np.size(u) == 0 else np.asarray(u, dtype=float).reshape(-1)
        return np.concatenate([np.asarray(x)[self.free], r, lam, uu])


def turn_residual(cm: "CompiledModel", y: ArrayLike, p: ArrayLike | None = None
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Residual of the steady-turn equations and its exact Jacobian (rows scaled).

    Rows: ``C(x)`` (m), ``D(x) xd`` (m + l, divided by ``sqrt(g w)``),
    ``M xdd + D^T Lambda - Q`` (n, divided by ``m_total g w``); columns: the unknowns ``y``
    (free coordinates, ``u, w, Omega, omega_F, omega_R``, ``Lambda``, and the model's constant
    inputs when it has any).
    """
    pvec, vals = parameter_values(cm, p)
    lay = _Layout(cm, vals)
    return _residual(cm, lay, np.asarray(y, dtype=float), pvec)


def _residual(cm: CompiledModel, lay: _Layout, y: NDArray, pvec: NDArray) -> tuple[NDArray, NDArray]:
    x, xd, xdd, lam = lay.unpack(y)
    ui = lay.inputs(y)
    dt = cm.dynamics_terms(x, xd, ui, p=pvec)
    M, Q, D = dt.M, dt.Q, dt.D
    C = cm.C(x, ui, p=pvec)
    r = np.concatenate([C, D @ xd, M @ xdd + D.T @ lam - Q])
    nf = lay.nf
    J = np.zeros((r.size, lay.N))
    f = lay.free
    m, nc = lay.m, lay.nc
    J[:m, :nf] = cm.Cx(x, ui, p=pvec)[:, f]
    J[m:m + nc, :nf] = cm.dDv_dx(x, xd, ui, p=pvec)[:, f]
    J[m:m + nc, nf:nf + 5] = D @ lay.G
    dyn = cm.dMa_dx(x, xdd, ui, p=pvec) + cm.dDTlam_dx(x, lam, ui, p=pvec) - cm.dQ_dx(x, xd, ui, p=pvec)
    J[m + nc:, :nf] = dyn[:, f]
    # xdd = [-Omega w, Omega u, 0...]: d xdd / d (u, w, Omega)
    ixx, ixy = lay.ix["x_b"], lay.ix["y_b"]
    u, w, Om = y[nf], y[nf + 1], y[nf + 2]
    dxdd = np.zeros((lay.n, 5))
    dxdd[ixx, 1], dxdd[ixx, 2] = -Om, -w
    dxdd[ixy, 0], dxdd[ixy, 2] = Om, u
    J[m + nc:, nf:nf + 5] = M @ dxdd - cm.dQ_dxd(x, xd, ui, p=pvec) @ lay.G
    J[m + nc:, nf + 5:nf + 5 + nc] = D.T
    if lay.k:       # constant inputs: d(M xdd - Q)/du (they enter no constraint: _check_model)
        J[m + nc:, lay.N - lay.k:] = cm.dMa_du(x, xdd, ui, p=pvec) - cm.dQ_du(x, xd, ui, p=pvec)
    s = lay.srow
    return r / s, J / s[:, None]


def _newton(cm: CompiledModel, lay: _Layout, y0: NDArray, pvec: NDArray, extra: Any, *, tol: float,
            max_iter: int
            ) -> tuple[NDArray, float, int]:
    """Gauss-Newton on ``[F(y); extra(y)] = 0`` (consistent, full column rank)."""
    y = y0.copy()
    hist = []
    for it in range(max_iter):
        r, J = _residual(cm, lay, y, pvec)
        e, Je = extra(y)
        R = np.concatenate([r, np.atleast_1d(e)])
        A = np.vstack([J, np.atleast_2d(Je)])
        res = float(np.abs(R).max())
        hist.append(res)
        if not np.isfinite(res):
            break
        # column scaling: unknowns in their natural sizes
        dy = np.linalg.lstsq(A * lay.sy, -R, rcond=None)[0] * lay.sy
        y = y + dy
        if res < tol and float(np.abs(dy / lay.sy).max()) < 1e-9:
            r, _ = _residual(cm, lay, y, pvec)
            return y, float(np.abs(r).max()), it + 1
    raise SolverError(f"steady turn: Newton did not converge in {max_iter} iterations; scaled residual "
                      f"history {[f'{h:.2e}' for h in hist]}; start closer to a solution")


def _make_turn(cm: CompiledModel, lay: _Layout, y: NDArray, pvec: NDArray, vals: Mapping[str, float],
               residual: float) -> SteadyTurn:
    x, xd, xdd, lam = lay.unpack(y)
    u = lay.inputs(y)
    return SteadyTurn(x0=x, xd0=xd, xdd0=xdd, lam=lam, p=pvec.copy(), coordinates=lay.coords,
                      residual=residual, values=dict(vals),
                      u=np.zeros(0) if u is None else u.copy())


def solve_steady_turn(cm: "CompiledModel", guess: SteadyTurn, *, fix: str | Mapping[str, float] = "omega_R",
                      value: float | None = None, tol: float = 1e-13, max_iter: int = 30) -> SteadyTurn:
    """Newton solution of the steady-turn equations from ``guess`` with one unknown fixed (one
    more per input of the model).

    Parameters
    ----------
    cm : CompiledModel
        A bicycle-like model (`BASE` coordinates first). Its inputs, if any (a steer torque),
        are constant unknowns of the turn: the family of turns then has ``1 + k`` parameters.
    guess : SteadyTurn
        Starting point (e.g. `straight_turn()` or a neighbour on a family).
    fix : str or mapping
        The unknown held at ``value``: ``"omega_R"`` (default), another rate of `RATES`, or a
        free coordinate such as ``"phi_b"`` or ``"delta"``; or a mapping ``{unknown: value}``
        of ``1 + k`` of them (input names too) for a model with ``k`` inputs, e.g.
        ``{"omega_R": v / rho_R, "Omega": 0.5}`` (the steer torque of that turn solved for).
    value : float, optional
        Its value (default: the guess'); only with a single name ``fix``.
    tol : float
        Tolerance on the scaled residual.

    Raises
    ------
    ModelError
        Unknown names in ``fix``, or a number of them other than ``1 + k``.
    SolverError
        No convergence.
    """
    _check_model(cm, inputs=True)
    pvec = np.asarray(guess.p, dtype=float)
    _, vals = parameter_values(cm, pvec)
    lay = _Layout(cm, vals)
    names = lay.free_names + list(RATES) + [None] * lay.nc + list(cm.inputs)
    fixed = {fix: value} if isinstance(fix, str) else dict(fix)
    bad = [nm for nm in fixed if nm not in names or nm is None]
    if bad or len(fixed) != 1 + lay.k:
        raise ModelError(f"fix must be one of {[nm for nm in names if nm is not None]} or a mapping of "
                         f"{1 + lay.k} of them for model {getattr(cm, 'name', '?')!r} (one, plus one "
                         f"per input {list(cm.inputs)}), got {list(fixed)}")
    if not isinstance(fix, str) and value is not None:
        raise ModelError("value is for a single name fix; give the values in the fix mapping")
    y0 = lay.pack(guess.x0, guess.xd0, guess.lam, guess.u)
    ks = [names.index(nm) for nm in fixed]
    vs = [float(y0[k]) if v is None else float(v) for k, v in zip(ks, fixed.values())]
    y0[ks] = vs
    rows = np.zeros((len(ks), lay.N))
    rows[np.arange(len(ks)), ks] = 1.0 / lay.sy[ks]

    def extra(y: NDArray) -> tuple[NDArray, NDArray]:
        return (y[ks] - vs) / lay.sy[ks], rows

    y, res, _ = _newton(cm, lay, y0, pvec, extra, tol=tol, max_iter=max_iter)
    return _make_turn(cm, lay, y, pvec, vals, res)


POSITIVE = ("rho_R", "rho_F", "w", "g", "m_B", "m_H", "m_R", "m_F")
"""Parameters that must be positive for a steady turn to be physical (wheel radii, wheelbase,
gravity, masses): with ``rho_R < 0`` the speed ``v = rho_R omega_R`` changes sign and the families
would hold negative speeds."""


def _check_physical(vals: Mapping[str, float], what: str) -> None:
    bad = [f"{k} = {vals[k]:g}" for k in POSITIVE if k in vals and not vals[k] > 0]
    if bad:
        raise ModelError(f"{what}: the bicycle parameters {', '.join(bad)} are not physical; wheel "
                         f"radii, wheelbase, gravity and masses must be positive (Table 4.1: "
                         f"rho_R = 0.3, rho_F = 0.35, w = 1.02 m)")


def straight_turn(cm: "CompiledModel", v: float, p: ArrayLike | Mapping[str, float] | None = None, *,
                  steer: float = 0.0) -> SteadyTurn:
    """Straight running at ``v = rho_R omega_R`` as a `SteadyTurn` (``Omega = 0``), solved by Newton.

    ``steer`` [rad, thesis sign] selects handlebar forward (0) or reversed (``pi``); the pitch,
    height, contact coordinates, front spin rate and multipliers are solved for (the model's
    inputs, if any, are zero).
    """
    _check_model(cm, inputs=True)
    pvec, vals = parameter_values(cm, p)
    _check_physical(vals, "straight_turn")
    lay = _Layout(cm, vals)
    ix = lay.ix
    x = np.zeros(lay.n)
    x[ix["z_b"]] = vals["z_B"]
    x[ix["delta"]] = steer
    x[ix["xi_R"]] = math.pi / 2
    x[ix["xi_F"]] = vals["nu"] + math.pi / 2
    xd = lay.G @ np.array([v, 0.0, 0.0, v / vals["rho_F"], v / vals["rho_R"]])
    mass = sum(vals[f"m_{b}"] for b in "BHRF")
    lam = np.zeros(lay.nc)
    lam[list(cm.holonomic_names).index("P_z")] = -0.5 * mass * vals["g"]
    lam[list(cm.holonomic_names).index("Q_z")] = -0.5 * mass * vals["g"]
    guess = SteadyTurn(x, xd, np.zeros(lay.n), lam, pvec, lay.coords, values=dict(vals))
    yk = lay.pack(x, xd, lam)
    fixed = {lay.free_names.index("phi_b"): 0.0, lay.nf + 2: 0.0, lay.nf + 4: v / vals["rho_R"]}
    # the steer is fixed only near its guess (it is decided by symmetry: delta = 0 or pi)
    fixed[lay.free_names.index("delta")] = steer
    fixed.update({lay.N - lay.k + i: 0.0 for i in range(lay.k)})     # no input torques
    ks = sorted(fixed)

    def extra(y: NDArray) -> tuple[NDArray, NDArray]:
        E = np.zeros((len(ks), lay.N))
        e = np.zeros(len(ks))
        for i, k in enumerate(ks):
            E[i, k] = 1.0 / lay.sy[k]
            e[i] = (y[k] - fixed[k]) / lay.sy[k]
        return e, E

    y, res, _ = _newton(cm, lay, yk, pvec, extra, tol=1e-13, max_iter=40)
    del guess
    for k in ks:             # exact symmetric values (Newton leaves ~1e-30)
        y[k] = fixed[k]
    y[lay.nf + 1] = 0.0      # no side slip of the frame point in straight running
    return _make_turn(cm, lay, y, pvec, vals, res)


def turn_of_radius(cm: "CompiledModel", speed: float, radius: float,
                   p: ArrayLike | Mapping[str, float] | None = None, *, left: bool = True,
                   steps: int = 4, tol: float = 1e-10) -> SteadyTurn:
    """The steady turn of a model with one input (a steer torque) at ``speed`` (``rho_R
    omega_R``, Meijaard's ``v``) whose rear contact runs on a circle of ``radius``, the constant
    input that holds it solved for (derived here).

    A hands-free bicycle has one steady turn per speed on each family (`families()`); a steer
    torque ``T`` adds one unknown, so the turns of given speed and yaw rate ``Omega`` form the
    solution set of the steady-turn equations with ``omega_R`` and ``Omega`` fixed
    (`solve_steady_turn()`). They are reached from straight running (`straight_turn()`) by
    ``steps`` continuation steps in ``Omega`` up to ``speed / radius``, then ``Omega`` is
    corrected by ``Omega <- Omega r(Omega) / radius`` (``r`` the radius of the rear contact's
    circle, `SteadyTurn.radius`) until ``|r - radius| <= tol radius``.

    Parameters
    ----------
    cm : CompiledModel
        A bicycle-like model with exactly one input entering its generalized forces, e.g.
        ``benchmark_bicycle.model(inputs=("T_delta",))``.
    speed, radius : float
        Forward speed [m/s] and radius [m] of the rear contact's circle, both positive.
    left : bool
        Turn to the left (``Omega > 0``, lean ``phi_b < 0``) or to the right.

    Raises
    ------
    ModelError
        A model without exactly one input, or non-positive ``speed``/``radius``.
    SolverError
        No convergence.
    """
    _check_model(cm, inputs=True)
    if len(cm.inputs) != 1:
        raise ModelError(f"turn_of_radius needs a model with one input (a steer torque) to hold a "
                         f"turn of given speed and radius; model {getattr(cm, 'name', '?')!r} has "
                         f"inputs {list(cm.inputs)} (hands-free turns: families(), solve_steady_turn())")
    if not (speed > 0 and radius > 0 and math.isfinite(speed) and math.isfinite(radius)):
        raise ModelError(f"speed and radius must be positive and finite, got speed = {speed!r} m/s, "
                         f"radius = {radius!r} m")
    turn = straight_turn(cm, speed, p)
    omega_R = speed / turn.values["rho_R"]
    Om = (1.0 if left else -1.0) * speed / radius
    for s in np.arange(1, steps + 1) / steps:
        turn = solve_steady_turn(cm, turn, fix={"omega_R": omega_R, "Omega": s * Om})
    for _ in range(20):
        if abs(turn.radius - radius) <= tol * radius:
            return turn
        Om *= turn.radius / radius
        turn = solve_steady_turn(cm, turn, fix={"omega_R": omega_R, "Omega": Om})
    raise SolverError(f"turn_of_radius: the yaw rate correction did not reach radius {radius} m "
                      f"(last {turn.radius} m at Omega = {Om} rad/s)")


def time_reversed(turn: SteadyTurn) -> SteadyTurn:
    """The same turn run backwards in time: velocities negated; configuration, accelerations
    (quadratic in the velocities) and multipliers unchanged. The equations are invariant under
    time reversal (no dissipation, no inputs), so it is a steady turn too; its eigenvalues are
    the negated ones."""
    return SteadyTurn(turn.x0.copy(), -turn.xd0, turn.xdd0.copy(), turn.lam.copy(), turn.p.copy(),
                      turn.coordinates, residual=turn.residual, values=dict(turn.values))


# ----------------------------------------------------------------------------- capsize bifurcation
def turn_jacobian(cm: "CompiledModel", turn: SteadyTurn) -> tuple[NDArray[np.float64], list[str]]:
    """Constant Jacobian of a steady turn in the heading frame, and its state names.

    The exact linearization (third numerical procedure, Eq. (4.124)) at ``t = 0`` in the
    partition `turn_partition()`, mapped by the change of variables ``z = T(t) dx`` of
    `heading_frame()`: with ``T(0) = I``, ``J = A(0) + T_dot(0)`` (Eq. (6.76); derived here).
    Where `TURN_PARTITION` is singular (pivoting on the rear wheel) `TURN_PARTITION_FRONT` is
    used; the nontrivial eigenvalues do not depend on the partition. The states keep their names (``x_b, y_b`` are then the deviations along and across the
    heading).
    """
    from nhcontrol._util.errors import PartitionError
    from nhcontrol.linearization import linearize
    from nhcontrol.reference import Reference

    _check_model(cm)
    ref = Reference.from_functions(cm, turn.x0, turn.xd0, turn.xdd0, lam=turn.lam, p=turn.p, check=False)
    try:
        lin = linearize(cm, ref, turn_partition(cm), 0.0)
    except PartitionError:       # rear wheel pivoting: the front-wheel partition is regular
        lin = linearize(cm, ref, turn_partition(cm, front=True), 0.0)
    states = list(lin.states)
    _, T_dot = heading_frame(states, turn.Omega)
    return np.asarray(lin.A) + T_dot(0.0), states


def shape_indices(states: Sequence[str]) -> list[int]:
    """Indices of the non-cyclic states (lean, steer, their rates, the rear spin rate, ...)."""
    return [i for i, s in enumerate(states) if s not in CYCLIC]


def _shape_matrix(cm: CompiledModel, turn: SteadyTurn) -> tuple[NDArray, list[str]]:
    return turn_jacobian(cm, turn)


def capsize_speed(cm: "CompiledModel", p: ArrayLike | Mapping[str, float] | None = None, *,
                  steer: float = 0.0, bracket: tuple[float, float] = (3.0, 12.0)) -> float:
    """Speed where straight running has a zero eigenvalue off the trivial ones (capsize).

    Root in ``bracket`` of the constant coefficient of the lean-steer characteristic polynomial
    ``det(lambda I - A_s)`` with ``A_s`` the Jacobian of straight running restricted to
    ``(phi, delta, phi_d, delta_d)`` (and suspension states if any), from the exact
    linearization (third numerical procedure). For the benchmark: 6.0243 m/s (Meijaard et al.
    2007, Table 2).
    """
    from scipy.optimize import brentq

    def c0(v: float) -> float:
        A, st = _shape_matrix(cm, straight_turn(cm, v, p, steer=steer))
        k = [i for i, s in enumerate(st) if s.split("_d")[0] not in CYCLIC
             and s not in ("theta_R_d",)]
        return float(np.linalg.det(A[np.ix_(k, k)]))

    lo, hi = bracket
    if np.sign(c0(lo)) == np.sign(c0(hi)):
        raise SolverError(f"capsize_speed: no sign change of det(A_s) in {bracket} m/s")
    return float(brentq(c0, lo, hi, xtol=1e-13, rtol=1e-15))


def capsize_direction(cm: "CompiledModel", v_c: float, p: ArrayLike | Mapping[str, float] | None = None, *,
                      steer: float = 0.0) -> tuple[float, float]:
    """Null vector ``(d phi, d delta)`` (normalized, ``d phi = 1``) of straight running at ``v_c``."""
    A, st = _shape_matrix(cm, straight_turn(cm, v_c, p, steer=steer))
    k = [i for i, s in enumerate(st) if s.split("_d")[0] not in CYCLIC and s != "theta_R_d"]
    sub = A[np.ix_(k, k)]
    w, V = np.linalg.eig(sub)
    j = int(np.argmin(np.abs(w)))
    vec = np.real(V[:, j])
    names = [st[i] for i in k]
    return 1.0, float(vec[names.index("delta")] / vec[names.index("phi_b")])


def bifurcation_speed(cm: "CompiledModel", p: ArrayLike | Mapping[str, float] | None = None, *,
                      steer: float = 0.0, bracket: tuple[float, float] = (3.0, 12.0), leans: tuple[float, float] = (2e-3, 4e-3)) -> tuple[float, list[SteadyTurn]]:
    """Speed at which the turning family leaves straight running, from the nonlinear turns.

    Solves the steady-turn equations with the lean fixed at ``leans[0]`` and ``leans[1] = 2 leans[0]``
    (started on the capsize null vector) and extrapolates ``v(phi) = v_b + a phi^2 + O(phi^4)`` to
    ``phi = 0`` (Richardson): ``v_b = (4 v(phi_1) - v(phi_2)) / 3``.
    """
    v_c = capsize_speed(cm, p, steer=steer, bracket=bracket)
    _, ddelta = capsize_direction(cm, v_c, p, steer=steer)
    st = straight_turn(cm, v_c, p, steer=steer)
    turns = []
    guess = st
    for lean in leans:
        x = guess.x0.copy()
        c = guess.coordinates
        x[c.index("phi_b")] = lean
        x[c.index("delta")] = st.x0[c.index("delta")] + ddelta * lean
        xd = guess.xd0.copy()
        g = SteadyTurn(x, xd, guess.xdd0, guess.lam, guess.p, c, values=guess.values)
        guess = solve_steady_turn(cm, g, fix="phi_b", value=lean)
        turns.append(guess)
    v1, v2 = turns[0].speed, turns[1].speed
    r = (leans[1] / leans[0]) ** 2
    return (r * v1 - v2) / (r - 1), turns


def turn_between(cm: "CompiledModel", a: SteadyTurn, b: SteadyTurn, s: float) -> SteadyTurn:
    """The turn of the family through neighbours ``a`` and ``b`` at fraction ``s`` in between.

    Newton from the linear interpolation with the unknown that changes most between ``a`` and
    ``b`` (scaled; among the coordinates and rates) held at its interpolated value.
    """
    pvec = np.asarray(a.p, dtype=float)
    _, vals = parameter_values(cm, pvec)
    lay = _Layout(cm, vals)
    ya, yb = lay.pack(a.x0, a.xd0, a.lam), lay.pack(b.x0, b.xd0, b.lam)
    k = int(np.argmax(np.abs((yb - ya) / lay.sy)[:lay.nf + 5]))
    names = lay.free_names + list(RATES)
    y = ya + s * (yb - ya)
    x, xd, xdd, lam = lay.unpack(y)
    guess = SteadyTurn(x, xd, xdd, lam, pvec, lay.coords, values=dict(vals))
    return solve_steady_turn(cm, guess, fix=names[k], value=float(y[k]))


# ----------------------------------------------------------------------------- continuation
def _check_continuation(*, step: float, max_step: float, min_step: float, max_points: Any,
                        **limits: float) -> None:
    """Refuse continuation settings that would loop without end or do unbounded work: every
    step size and limit a positive finite number, ``min_step`` at most ``step`` and
    ``max_step`` (a ``min_step`` of 0 would halve the step forever after a failed correction), and
    ``max_points`` a positive integer within ``$NHCONTROL_MAX_ITERATIONS``. The first step is
    ``min(step, max_step)``."""
    from nhcontrol._util.work import check_iterations

    for name, value in {"step": step, "max_step": max_step, "min_step": min_step, **limits}.items():
        try:
            ok = math.isfinite(float(value)) and float(value) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise SolverError(f"continue_turns: {name}={value!r} must be a positive finite number")
    if not min_step <= min(step, max_step):
        raise SolverError(f"continue_turns: min_step={min_step!r} must not exceed step={step!r} or "
                          f"max_step={max_step!r} (the continuation stops when a halved step falls "
                          f"below min_step)")
    if isinstance(max_points, bool) or not isinstance(max_points, (int, np.integer)) or max_points < 1:
        raise SolverError(f"continue_turns: max_points={max_points!r} must be a positive integer "
                          f"(the number of turns to return at most, the start included)")
    check_iterations(int(max_points), f"continue_turns(max_points={max_points})", error=SolverError,
                     hint="ask for fewer points, or raise $NHCONTROL_MAX_ITERATIONS")


def continue_turns(cm: "CompiledModel", start: SteadyTurn, direction: SteadyTurn | None = None, *,
                   step: float = 0.02, max_step: float = 0.15, min_step: float = 1e-5,
                   max_points: int = 400, max_speed: float = 40.0, max_lean_deg: float = 88.0,
                   max_rate: float = 400.0, tol: float = 1e-12,
                   stop_at_rest: bool = True) -> list[SteadyTurn]:
    """Follow a family of steady turns by pseudo-arclength continuation.

    The unknowns ``y`` (free coordinates, rates, multipliers) are scaled to order one
    (``sqrt(g w)`` for speeds, ``m_total g`` for multipliers); the tangent is the null vector of
    the Jacobian of the (rank-deficient by one: energy) equations, oriented towards
    away from ``direction`` (a previous point) or towards increasing ``omega_R``. Steps grow after easy
    corrections and halve after failures.

    Stops when the rear-wheel spin rate changes sign (``stop_at_rest``: the motions with
    ``omega_R < 0`` are the time reverses of those with ``omega_R > 0``), ``|speed| > max_speed``, ``|lean| > max_lean_deg``, a rate exceeds ``max_rate``
    rad/s, after ``max_points`` points, or when the step falls below ``min_step``.

    Returns
    -------
    list of SteadyTurn
        ``start`` first.

    Raises
    ------
    SolverError
        A step size or limit that is not a positive finite number, ``min_step`` above ``step``
        or ``max_step``, or ``max_points`` not a positive integer or above
        ``$NHCONTROL_MAX_ITERATIONS``.
    """
    _check_model(cm)
    _check_continuation(step=step, max_step=max_step, min_step=min_step, max_points=max_points,
                        max_speed=max_speed, max_lean_deg=max_lean_deg, max_rate=max_rate, tol=tol)
    pvec = np.asarray(start.p, dtype=float)
    _, vals = parameter_values(cm, pvec)
    lay = _Layout(cm, vals)
    sy = lay.sy
    y = lay.pack(start.x0, start.xd0, start.lam) / sy          # scaled unknowns

    def F(ys: NDArray) -> tuple[NDArray, NDArray]:
        r, J = _residual(cm, lay, ys * sy, pvec)
        return r, J * sy

    def tangent(ys: NDArray, prev: NDArray | None) -> NDArray:
        _, J = F(ys)
        t = np.linalg.svd(J)[2][-1]
        if prev is not None:
            return t if t @ prev >= 0 else -t
        if direction is not None:       # away from direction (the previous point)
            d = ys - lay.pack(direction.x0, direction.xd0, direction.lam) / sy
            return t if t @ d >= 0 else -t
        return t if t[lay.nf + 4] >= 0 else -t

    out = [start]
    t = tangent(y, None)
    h = min(step, max_step)
    while len(out) < max_points:
        yp = y + h * t
        ok = False
        yc = yp.copy()
        for it in range(12):
            r, J = F(yc)
            e = t @ (yc - yp)
            R = np.concatenate([r, [e]])
            A = np.vstack([J, t])
            dy = np.linalg.lstsq(A, -R, rcond=None)[0]
            yc = yc + dy
            if not np.all(np.isfinite(yc)):
                break
            if float(np.abs(R).max()) < tol and float(np.abs(dy).max()) < 1e-9:
                ok = True
                break
        if not ok:
            h /= 2
            if h < min_step:
                break
            continue
        r, _ = F(yc)
        turn = _make_turn(cm, lay, yc * sy, pvec, vals, float(np.abs(r).max()))
        t_new = tangent(yc, t)
        y, t = yc, t_new
        out.append(turn)
        if stop_at_rest and len(out) > 2 and out[-1].omega_R * out[1].omega_R < 0:
            break
        if it <= 3:
            h = min(max_step, 1.5 * h)
        rates = np.abs(turn.xd0[[lay.ix["psi_b"], lay.ix["theta_R"], lay.ix["theta_F"]]])
        if (abs(turn.speed) > max_speed or abs(turn.lean_deg) > max_lean_deg
                or float(rates.max()) > max_rate):
            break
    return out


def pivot_turn(cm: "CompiledModel", p: ArrayLike | Mapping[str, float] | None = None, *,
               steer: float = -math.pi / 2, Omega: float = -2.0) -> SteadyTurn:
    """Steady turn with the rear wheel not rotating (``omega_R = 0``): the frame pivots about the
    rear contact, driven by the front wheel. Newton from an upright guess with the given steer
    (thesis sign, rad) and yaw rate; the benchmark's is at lean 0.69 deg, steer 91.8 deg
    (Meijaard's sign), ``|Omega| = 1.98`` rad/s (Basu-Mandal et al. 2007: "moderate-speed circular
    pivoting, with the rear wheel not rotating and the bicycle virtually upright")."""
    st = straight_turn(cm, 0.0, p)
    c = st.coordinates
    x = st.x0.copy()
    x[c.index("delta")] = steer
    xd = st.xd0.copy()
    xd[c.index("psi_b")] = Omega
    guess = SteadyTurn(x, xd, st.xdd0, st.lam, st.p, c, values=st.values)
    return solve_steady_turn(cm, guess, fix="omega_R", value=0.0, max_iter=40)


def nudge(turn: SteadyTurn, d_omega_R: float) -> SteadyTurn:
    """A copy with ``omega_R`` changed by ``d_omega_R`` (to orient `continue_turns`)."""
    c = turn.coordinates
    xd = turn.xd0.copy()
    xd[c.index("theta_R")] += d_omega_R
    xd[c.index("xi_R")] -= d_omega_R
    return SteadyTurn(turn.x0, xd, turn.xdd0, turn.lam, turn.p, c, values=turn.values)


FAMILY_NAMES = ("i_handlebar_forward", "ii_handlebar_reversed", "iii_pivoting")
"""Names of the three families of Basu-Mandal et al. (2007)."""


def families(cm: "CompiledModel", p: ArrayLike | Mapping[str, float] | None = None, *,
             max_step: float = 0.06, max_speed: float = 30.0, max_rate: float = 60.0,
             capsize_bracket: tuple[float, float] = (3.0, 12.0),
             reversed_bracket: tuple[float, float] = (3.0, 12.0)) -> tuple[dict[str, list[SteadyTurn]], dict[str, str]]:
    """The families of steady turns of Basu-Mandal et al. (2007), each with ``v >= 0``.

    * ``i_handlebar_forward``: from the capsize bifurcation of straight running
      (`bifurcation_speed`) to rest;
    * ``ii_handlebar_reversed``: from the capsize bifurcation of straight running with the
      handlebar reversed (``delta = pi``);
    * ``iii_pivoting``: through `pivot_turn` (rear wheel at rest), both ways; the half with
      ``omega_R < 0`` is time-reversed (`time_reversed`).

    Returns
    -------
    (dict, dict)
        Families by name (lists of `SteadyTurn`), and for each family not found the reason.

    Raises
    ------
    ModelError
        Parameters that are not physical (`POSITIVE`: a wheel radius, the wheelbase, gravity
        or a mass not positive), before any turn is computed: with ``rho_R < 0`` the speed
        ``v = rho_R omega_R`` would change sign.
    """
    _check_model(cm)
    _check_physical(parameter_values(cm, p)[1], "families")
    out: dict[str, list[SteadyTurn]] = {}
    missing: dict[str, str] = {}
    try:
        _, fwd = bifurcation_speed(cm, p, bracket=capsize_bracket)
        fam = continue_turns(cm, fwd[1], fwd[0], max_step=max_step, max_speed=max_speed)
        out[FAMILY_NAMES[0]] = [t for t in fam if t.omega_R >= 0]
    except (SolverError, ReferenceMotionError) as exc:
        missing[FAMILY_NAMES[0]] = str(exc)
    try:
        _, rev = bifurcation_speed(cm, p, steer=math.pi, bracket=reversed_bracket)
        out[FAMILY_NAMES[1]] = continue_turns(cm, rev[1], rev[0], max_step=max_step, max_speed=max_speed)
    except (SolverError, ReferenceMotionError) as exc:
        missing[FAMILY_NAMES[1]] = str(exc)
    try:
        piv = pivot_turn(cm, p)
        a = continue_turns(cm, piv, None, max_step=max_step, max_speed=max_speed, stop_at_rest=False,
                           max_rate=max_rate)
        b = continue_turns(cm, piv, nudge(piv, 0.01), max_step=2 * max_step, max_speed=max_speed,
                           stop_at_rest=False, max_rate=max_rate)
        out[FAMILY_NAMES[2]] = [time_reversed(t) if t.omega_R < 0 else t for t in b[::-1] + a[1:]]
    except (SolverError, ReferenceMotionError) as exc:
        missing[FAMILY_NAMES[2]] = str(exc)
    return out, missing


def heading_frame(states: Sequence[str], Omega: float) -> tuple[Any, Any]:
    """``z = T(t) dx``: rotate ``(dx_b, dy_b)`` into the heading frame (identity elsewhere).

    Along a steady turn the linearization depends on time only through the heading
    ``psi0 = Omega t`` acting on the deviations of the frame point (derived here; the same
    argument as for the rolling torus, ``docs/theory/rolling_torus.md``).
    """
    names = list(states)
    for c in ("x_b", "y_b"):
        if c not in names:
            raise ModelError(f"heading_frame: the states {names} lack {c!r}; use turn_partition()")
    ix, iy = names.index("x_b"), names.index("y_b")
    from ._frames import rotating_pair_frame

    return rotating_pair_frame(len(names), ix, iy, Omega)
