"""Lane-change control of the single-track skates, closed on the nonlinear model.

Two skates of `nhcontrol.models.single_track` follow the ISO 3888-1 lane change
(`nhcontrol.models.lane_change`):

- the ``force_torque`` skate, steered by a torque ``T``: the third numerical procedure along its
  reference gives an LTV system in ``[x, γ, ẋ, γ̇, y, ψ]``, so bounds on ``|γ|`` and ``|γ̇|``
  are state bounds.
  [`lane_change_setup`][nhcontrol.applications.lane_change.lane_change_setup]: reference, LTV system
  and its zero-order-hold sequences (inputs ``[F_R / 1 kN, T / 1 N m]``);
  [`closed_loop`][nhcontrol.applications.lane_change.closed_loop]: LTV-MPC or the finite-horizon
  LQR, sampled with zero-order hold, on a nonlinear vehicle whose parameters may differ;
  [`state_reference`][nhcontrol.applications.lane_change.state_reference]: the reference of the
  linear states over a window;
- the ``force`` skate, whose steering angle ``γ`` is assigned (an input that enters the front
  skate constraint). Its lane-change reference carries input rates
  ([`assigned_steering_reference`][nhcontrol.models.lane_change.assigned_steering_reference]);
  the third numerical procedure with the rate matrix ``B_rate`` and ``input_states=True`` gives
  an LTV system with ``γ`` a state and ``γ̇`` an input (states ``[x, ẋ, y, ψ, γ]``), so a bound
  on ``|γ|`` is a state bound and a bound on ``|γ̇|`` an input bound.
  [`assigned_steering_setup`][nhcontrol.applications.lane_change.assigned_steering_setup]:
  reference, input-state LTV system and its zero-order-hold sequences (inputs
  ``[F_R / 1 kN, γ̇]``);
  [`closed_loop_assigned`][nhcontrol.applications.lane_change.closed_loop_assigned]: LTV-MPC
  (``|γ|`` a state bound, ``|γ̇|`` an input bound) or the finite-horizon LQR with the same
  weights and no bounds, closed through
  [`closed_loop_piecewise_linear`][nhcontrol.simulate.closed_loop_piecewise_linear] (over each
  sample the plant sees ``u(t) = u_k + u̇_k (t − t_k)``).

Friction: both skate models declare their skates' lateral forces as outputs
(``single_track.build(..., lateral_force_outputs=True)``); the LTV system carries their exact
``C(t), D(t)`` and the MPCs bound the friction utilisation ``|F| / (μ N)`` of both skates by soft
output constraints (``LaneChangeSettings.friction_bound``) on the state augmented with the
previous input, so that the utilisation is bounded just before and just after each predicted
sample (it jumps with the steering rate or torque). The loops start on the reference
(``y_offset = 0``).

Checks of the no-slip assumption: every loop reports its ``peak_friction_utilisation``
([`friction_utilisation`][nhcontrol.reference.friction_utilisation]); both loops take another
plant (``plant_model=``), e.g. the
[`tyre_plant`][nhcontrol.models.single_track.tyre_plant] with lateral tyre slip;
[`tyre_convergence`][nhcontrol.applications.lane_change.tyre_convergence] measures how the tyre plant
tends to the skate model as the cornering stiffness grows,
[`tyre_plant_runs`][nhcontrol.applications.lane_change.tyre_plant_runs] and
[`tyre_stiffness_sweep`][nhcontrol.applications.lane_change.tyre_stiffness_sweep] close the
controllers designed on the skates on it.

This module sits at the right end of the pipeline (it arranges ``models``, ``linearize``,
``systems``, ``design`` and ``simulate``); derivations and choices: docs/theory/road_vehicles.md,
"Double lane change" and "Assigned steering".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import DesignError
from nhcontrol.compiled import CompiledModel
from nhcontrol.design import LTVMPC, finite_horizon_lqr
from nhcontrol.linearization import LinearizationResult, Partition, linearize
from nhcontrol.reference import Reference, friction_utilisation
from nhcontrol.models import lane_change as lc
from nhcontrol.models import single_track as st
from nhcontrol.simulate import closed_loop_piecewise_linear, forward_dynamics
from nhcontrol.systems import LTVSystem, discretize

__all__ = ["LaneChangeSettings", "LaneChangeSetup", "PARTITION", "INPUT_SCALE",
           "lane_change_setup", "closed_loop", "state_reference",
           "AssignedSteeringSettings", "AssignedSteeringSetup", "ASSIGNED_PARTITION",
           "RATE_INPUT_SCALE", "assigned_steering_setup", "closed_loop_assigned",
           "reference_window", "lane_change_numbers", "tyre_convergence", "TYRE_STIFFNESSES",
           "tyre_plant_runs", "TYRE_CONTROLLERS", "tyre_stiffness_sweep"]

PARTITION = {"x_ai": ["x", "gamma"], "x_ad": ["y", "psi"]}
"""Partition of the ``force_torque`` model: ``x_ai = [x, γ]``, ``x_ad = [y, ψ]`` (Eq. (4.96));
the linear state is ``[x, γ, ẋ, γ̇, y, ψ]`` (Eq. (4.123))."""

INPUT_SCALE = np.diag([1000.0, 1.0])
"""Input scaling of the torque-steered controllers: ``F_R`` in kN, ``T`` in N m."""
INPUT_SCALE.setflags(write=False)

ASSIGNED_PARTITION = {"x_ai": ["x"], "x_ad": ["y", "psi"]}
"""Partition of the ``force`` model: ``x_ai = [x]``, ``x_ad = [y, ψ]``; with the steering angle
appended by ``input_state_form`` the linear state is ``[x, ẋ, y, ψ, γ]``."""

RATE_INPUT_SCALE = np.diag([1000.0, 1.0])
"""Input scaling of the assigned-steering controllers: ``F_R`` in kN, ``γ̇`` in rad/s."""
RATE_INPUT_SCALE.setflags(write=False)


@dataclass(frozen=True)
class LaneChangeSettings:
    """Settings of the lane-change loops (ISO 3888-1 track).

    Attributes
    ----------
    V : float
        Longitudinal speed of the rear-axle centre [m/s].
    dt : float
        Sampling time of the controllers [s].
    horizon : int
        MPC horizon ``N`` [steps].
    steer_max_deg, steer_rate_max_deg_s : float
        Steering-angle and steering-rate limits the plant must respect.
    backoff : (float, float)
        Fractions of the limits the MPC of the torque-steered skate imposes on its predicted
        samples (``|γ|``, ``|γ̇|``): the bounds hold at the samples of the linear prediction only,
        so the controller keeps a margin for the motion between samples and the model error.
    q, r : tuple of float
        Diagonal weights of the torque-steered skate's ``[x, γ, ẋ, γ̇, y, ψ]`` and of
        ``[F_R / 1 kN, T / 1 N m]``.
    plant : dict
        Parameters of the simulated vehicle that differ from the controller's model.
    y_offset : float
        Initial lateral offset of the vehicle [m] (default 0: the loops start on the reference,
        a consistent start; an offset is corrected at the steering-rate limit).
    mu : float
        Tyre-road friction coefficient of the friction-utilisation check (0.9: dry asphalt).
    rtol, atol : float
        Integration tolerances of the nonlinear model.
    offset_reference : {"centre-to-near-row", "row-to-row"}
        How the track's 3.5 m lane offset is read
        ([`OffsetReference`][nhcontrol.models.lane_change.OffsetReference]).
    friction_bound : float or None
        Bound the MPCs put on the predicted friction utilisation ``|F| / (μ N)`` of both skates
        (the declared outputs ``lateral_force_rear``, ``lateral_force_front`` of the model over
        ``μ`` times the static load split), soft with an exact L1 penalty; ``None``: no
        friction rows. Below 1 to leave a margin for the plant's other mass and geometry.
    """

    V: float = lc.SPEED
    dt: float = 0.05
    horizon: int = 20
    steer_max_deg: float = 8.0
    steer_rate_max_deg_s: float = 40.0
    backoff: tuple[float, float] = (0.95, 0.9)
    q: tuple[float, ...] = (1.0, 1.0, 1.0, 0.01, 100.0, 10.0)
    r: tuple[float, ...] = (1.0, 1e-3)
    plant: dict = field(default_factory=lambda: {"m": 1.2 * st.DEFAULTS["m"],
                                                 "J": 1.2 * st.DEFAULTS["J"], "a": 1.2, "b": 1.48})
    y_offset: float = 0.0
    mu: float = 0.9
    rtol: float = 1e-8
    atol: float = 1e-10
    offset_reference: lc.OffsetReference = "centre-to-near-row"
    friction_bound: float | None = 0.9

    @property
    def track(self) -> lc.Iso3888Track:
        """The ISO 3888-1 track of these settings
        ([`iso_3888_1_track`][nhcontrol.models.lane_change.iso_3888_1_track])."""
        return lc.iso_3888_1_track(self.offset_reference)

    @property
    def t_final(self) -> float:
        """Time to drive the 125 m of the track [s]."""
        return sum(lc.ISO_3888_1_SECTIONS) / self.V


@dataclass(frozen=True)
class _LinearizedLaneChange:
    """Fields shared by the setups of both skates (see `LaneChangeSetup`)."""

    cm: CompiledModel
    ref: Reference
    lin0: LinearizationResult
    ltv: LTVSystem
    Ad: NDArray[np.float64]
    Bd: NDArray[np.float64]
    cols: list[int]
    states: tuple[str, ...]
    st: LaneChangeSettings
    friction: dict[str, Any] | None


def _linearized(cm: CompiledModel, reference: Callable[..., Reference], partition: dict,
                st_: LaneChangeSettings, inputs: tuple[str, ...], scale: NDArray[np.float64], *,
                input_states: bool = False) -> dict[str, Any]:
    """The fields of a setup: the reference over the track plus one horizon (so the MPC's window
    never leaves it), the LTV system of the third procedure along it, its linearization at
    ``t = 0`` and its ZOH sequences with the input columns ``inputs`` (names of the LTV system's
    inputs) scaled by ``scale``."""
    nsteps = int(round(st_.t_final / st_.dt))
    ref = reference(cm, st_.V, t_final=(nsteps + st_.horizon + 1) * st_.dt,
                    path=lc.iso_3888_1_path(offset_reference=st_.offset_reference))
    part = Partition.from_dict(partition)
    declared = "lateral_force_rear" in tuple(getattr(cm, "outputs", ()))
    ltv = LTVSystem.from_linearization(cm, ref, part, input_states=input_states,
                                       outputs="declared" if declared else "states")
    d = discretize(ltv, st_.dt, steps=nsteps + st_.horizon)
    cols = [list(ltv.inputs).index(s) for s in inputs]
    Ad = np.asarray(d.Ad)
    Bd = np.asarray(d.Bd)[:, :, cols] @ scale
    Ad.setflags(write=False)
    Bd.setflags(write=False)
    friction = _friction_rows(cm, ref, ltv, cols, scale, st_, nsteps) if declared else None
    return {"cm": cm, "ref": ref, "lin0": linearize(cm, ref, part, t=0.0), "ltv": ltv,
            "Ad": Ad, "Bd": Bd, "cols": cols, "states": tuple(ltv.states), "st": st_,
            "friction": friction}


def _friction_rows(cm: CompiledModel, ref: Reference, ltv: LTVSystem, cols: list[int],
                   scale: NDArray[np.float64], st_: LaneChangeSettings, nsteps: int
                   ) -> dict[str, Any]:
    """Friction utilisation of the skates along the reference, linearized at the samples.

    ``y = Λ / (μ N)`` of the declared outputs ``lateral_force_rear``, ``lateral_force_front``
    (static loads ``N`` of the controller's model): ``C`` (K, 2, n) and ``D`` (K, 2, 2) (inputs
    of the controller, scaled as ``Bd``; the model input ``gamma_rate`` of an assigned steering
    angle is the rate ``γ̇`` the controller commands, so its column is added to ``gamma_dot``'s),
    ``y0`` (K, 2) at the reference and ``u0`` (K, 2) the reference inputs in the controller's
    units, at ``t_k = k dt``, ``k = 0 … K − 1``.
    """
    tk = st_.dt * np.arange(nsteps + st_.horizon + 1)
    C, D = ltv.output_matrices(tk)
    Dsel = np.asarray(D)[:, :, cols]
    names = list(ltv.inputs)
    if "gamma_rate" in names and "gamma_dot" in names:
        Dsel[:, :, [names[c] for c in cols].index("gamma_dot")] += np.asarray(D)[:, :, names.index("gamma_rate")]
    loads = st.static_axle_loads(cm)
    muN = st_.mu * np.array([loads["rear"], loads["front"]])
    x, xd, u = ref.x(tk), ref.xd(tk), ref.u(tk)
    y0 = np.asarray(cm.output(x, xd, u)) / muN
    inv = np.linalg.inv(scale)
    mnames = list(cm.inputs)
    ucols = [mnames.index("gamma_rate" if n == "gamma_dot" else n) for n in (names[c] for c in cols)]
    u0 = u[:, ucols] @ inv.T
    return {"C": np.asarray(C) / muN[None, :, None], "D": (Dsel @ scale) / muN[None, :, None],
            "y0": y0, "u0": u0, "muN": muN}


def _friction_mpc(N: int, Q: NDArray, R: NDArray, P: NDArray, x_lo: NDArray, x_hi: NDArray,
                  bound: float, **kw: Any) -> LTVMPC:
    """LTV-MPC on the state augmented with the previous input, ``z = [δx; δu_{j−1}]``, with the
    friction utilisation of both skates bounded (soft, exact L1 penalty) just before and just
    after every predicted sample: ``|y0 + C_j δx_j + D_j δu_{j−1}| ≤ bound`` and
    ``|y0 + C_j δx_j + D_j δu_j| ≤ bound``, ``j = 1 … N`` (the utilisation jumps with the input
    where it depends on it directly: the steering rate, the steering torque). Without the
    augmentation the applied input's direct effect would never be bounded."""
    n, k = Q.shape[0], R.shape[0]
    Qa = np.zeros((n + k, n + k))
    Qa[:n, :n] = Q
    Pa = np.zeros_like(Qa)
    Pa[:n, :n] = P
    lo = np.concatenate([x_lo, np.full(k, -np.inf)])
    hi = np.concatenate([x_hi, np.full(k, np.inf)])
    return LTVMPC(N, Qa, R, Pa, x_min=lo, x_max=hi, y_min=-bound, y_max=bound,
                  C_y=np.zeros((4, n + k)), D_y=np.zeros((4, k)), soft_output=True, **kw)


def _mpc_step(s: "_LinearizedLaneChange", mpc: LTVMPC, k: int, dX: NDArray, u_ref: NDArray,
              x_ref: NDArray, P: NDArray) -> Any:
    """One `LTVMPC.step` at sample ``k``: plain, or on the augmented state of `_friction_mpc`
    (the previous input's slot of ``z_0`` is zero: it enters no bounded row)."""
    N = s.st.horizon
    Ad, Bd = s.Ad[k:k + N], s.Bd[k:k + N]
    if mpc.nstates == dX.size:
        return mpc.step(dX, Ad, Bd, u_ref=u_ref, x_ref=x_ref, Qf=P)
    w = _friction_window(s, k, Ad, Bd, u_ref, x_ref)
    n, kk = dX.size, Bd.shape[2]
    Pa = np.zeros((n + kk, n + kk))
    Pa[:n, :n] = P
    return mpc.step(np.concatenate([dX, np.zeros(kk)]), w["Ad"], w["Bd"], u_ref=u_ref,
                    x_ref=w["x_ref"], Qf=Pa, C_y=w["C_y"], D_y=w["D_y"], y_ref=w["y_ref"])


def _friction_window(s: "_LinearizedLaneChange", k: int, Ad: NDArray, Bd: NDArray,
                     u_ref: NDArray, x_ref: NDArray) -> dict[str, Any]:
    """Arguments of `LTVMPC.step` for `_friction_mpc` at step ``k``: the augmented window, the
    output rows (before, after) at the samples ``k + 1 … k + N`` and their reference values
    (corrected for the held input differing from the reference input at the sample)."""
    f = s.friction
    N = s.st.horizon
    n, kk = Ad.shape[1], Bd.shape[2]
    Aa = np.zeros((N, n + kk, n + kk))
    Aa[:, :n, :n] = Ad
    Ba = np.concatenate([Bd, np.broadcast_to(np.eye(kk), (N, kk, kk))], axis=1)
    j = k + 1 + np.arange(N)
    C, D, y0, u0 = f["C"][j], f["D"][j], f["y0"][j], f["u0"][j]
    before = np.concatenate([C, D], axis=2)
    after = np.concatenate([C, np.zeros_like(D)], axis=2)
    Cy = np.concatenate([before, after], axis=1)
    Dy = np.concatenate([np.zeros_like(D), D], axis=1)
    u_after = u_ref[np.minimum(np.arange(1, N + 1), N - 1)]
    yb = y0 + np.einsum("jpk,jk->jp", D, u_ref - u0)
    ya = y0 + np.einsum("jpk,jk->jp", D, u_after - u0)
    y_ref = np.zeros((N + 1, 4))
    y_ref[1:] = np.concatenate([yb, ya], axis=1)
    xr = np.zeros((N + 1, n + kk))
    xr[:, :n] = x_ref
    return {"Ad": Aa, "Bd": Ba, "C_y": Cy, "D_y": Dy, "y_ref": y_ref, "x_ref": xr}


@dataclass(frozen=True)
class LaneChangeSetup(_LinearizedLaneChange):
    """The ``force_torque`` model ``cm``, its reference ``ref``, the linearization ``lin0`` at
    ``t = 0`` (for ``lin0.deviation``), the LTV system ``ltv`` (states ``states``) and its ZOH
    sequences ``Ad`` (K, 6, 6), ``Bd`` (K, 6, 2) (inputs ``[F_R / 1 kN, T / 1 N m]``, columns
    ``cols`` of the model's inputs), for the settings ``st``."""


def lane_change_setup(st_: LaneChangeSettings = LaneChangeSettings()) -> LaneChangeSetup:
    """Reference (flatness + inverse dynamics), LTV system (third procedure) and ZOH sequences
    of the torque-steered (``force_torque``) skate.

    The reference spans the track plus one horizon, so the MPC's window never leaves it.
    """
    cm = st.build("force_torque", lateral_force_outputs=True).system.compile()
    return LaneChangeSetup(**_linearized(cm, lc.lane_change_reference, PARTITION, st_,
                                         lc.DRIVE_INPUTS, INPUT_SCALE))


def state_reference(s: LaneChangeSetup, t: ArrayLike) -> NDArray[np.float64]:
    """Reference values of the linear states ``[x, γ, ẋ, γ̇, y, ψ]`` (``s.states``) at the
    times ``t`` (M,): an (M, 6) array, the ``x_ref`` of the MPC's window."""
    t = np.asarray(t, dtype=float)
    coords = list(s.cm.coordinates)
    x, xd = s.ref.x(t), s.ref.xd(t)
    return np.column_stack([xd[:, coords.index(n[:-2])] if n.endswith("_d") else x[:, coords.index(n)]
                            for n in s.states])


def _law(s: LaneChangeSetup, kind: Literal["mpc", "lqr"], statuses: list[str]) -> Callable:
    """The sampled controller of `closed_loop`: ``(k, t, x, ẋ) -> (u, wall time, CPU time)``
    with ``u = [F_R / 1 kN, T / 1 N m]`` from the MPC or the LQR."""
    st_ = s.st
    N, dt = st_.horizon, st_.dt
    Q, R = np.diag(st_.q), np.diag(st_.r)
    lqr = finite_horizon_lqr((s.Ad, s.Bd), Q, R, Q)
    inv = np.linalg.inv(INPUT_SCALE)
    mpc = None
    if kind == "mpc":
        ns = len(s.states)
        lo, hi = np.full(ns, -np.inf), np.full(ns, np.inf)
        ig, ir = s.states.index("gamma"), s.states.index("gamma_d")
        hi[ig] = st_.backoff[0] * math.radians(st_.steer_max_deg)
        hi[ir] = st_.backoff[1] * math.radians(st_.steer_rate_max_deg_s)
        lo[ig], lo[ir] = -hi[ig], -hi[ir]
        fr = s.friction is not None and st_.friction_bound is not None
        mpc = (_friction_mpc(N, Q, R, lqr.P[N], lo, hi, st_.friction_bound) if fr
               else LTVMPC(N, Q, R, lqr.P[N], x_min=lo, x_max=hi))

    def law(k: int, t: float, x: NDArray, xd: NDArray) -> tuple[NDArray, float, float]:
        dX = s.lin0.deviation(s.ref, t, x, xd)
        u_ref = s.ref.u(t + dt * np.arange(N))[:, s.cols] @ inv.T
        if mpc is None:
            c0, p0 = time.perf_counter(), time.process_time()
            u = u_ref[0] + lqr.control(k, dX)
            return u, time.perf_counter() - c0, time.process_time() - p0
        x_ref = state_reference(s, t + dt * np.arange(N + 1))
        c0, p0 = time.perf_counter(), time.process_time()
        step = _mpc_step(s, mpc, k, dX, u_ref, x_ref, lqr.P[min(k + N, lqr.P.shape[0] - 1)])
        elapsed, cpu = time.perf_counter() - c0, time.process_time() - p0
        statuses.append(step.status)
        return np.asarray(step.u), elapsed, cpu

    return law


def closed_loop(s: LaneChangeSetup, kind: Literal["mpc", "lqr"] = "mpc", *, points: int = 501,
                plant_model: CompiledModel | None = None, plant_p: dict | None = None
                ) -> dict[str, Any]:
    """LTV-MPC or finite-horizon LQR on the torque-steered skate, closed on the nonlinear model.

    The controller is sampled every ``dt`` (zero-order hold, ``forward_dynamics`` with
    ``controller=`` and ``sample_time=``). The MPC bounds ``|γ|`` and ``|γ̇|`` on its predicted
    states with the margins ``backoff`` of `LaneChangeSettings`; the LQR (same weights) has no
    bounds.

    Parameters
    ----------
    s : LaneChangeSetup
    kind : {"mpc", "lqr"}
    points : int
        Output points of the dense output over the track.
    plant_model : CompiledModel, optional
        The simulated vehicle, default the controller's model ``s.cm``; e.g. the compiled
        [`tyre_plant`][nhcontrol.models.single_track.tyre_plant] ``("force_torque")`` (same
        coordinates and inputs). Its parameters are ``st.plant`` updated with ``plant_p``.
    plant_p : dict, optional
        Further plant parameters (e.g. the tyres' ``C_R``, ``C_F``).

    Returns
    -------
    dict
        ``numbers``: ``max_lateral_error_m``, ``rms_lateral_error_m``,
        ``max_lateral_error_after_1s_m`` (lateral deviation of ``G`` from its reference,
        [`lateral_error`][nhcontrol.models.lane_change.lateral_error]), ``peak_steer_deg``,
        ``peak_steer_rate_deg_s`` (of the simulated motion at the ``points`` samples),
        ``median_step_s``, ``max_step_s``, ``median_step_cpu_s`` (one ``LTVMPC.step`` or LQR
        gain product, wall clock and ``time.process_time``; the CPU time is less sensitive to
        other processes on a shared machine), ``steps``, ``bounds_respected``,
        ``peak_friction_utilisation`` (largest ``|F| / (μ N)`` of the skates' lateral forces, the
        multipliers of the simulation, over the static load split of the plant,
        [`friction_utilisation`][nhcontrol.reference.friction_utilisation]),
        ``cone_clearance_m`` (the plant's body on the track of ``st``) and, for the MPC,
        ``statuses``; ``arrays``: ``t``, ``x``, ``xd``, ``e``, ``t_u``, ``u`` (the held inputs),
        ``friction`` (utilisation (M, 2) of the rear and front skates).

    Raises
    ------
    DesignError
        ``kind`` not ``"mpc"`` or ``"lqr"``.
    """
    if kind not in ("mpc", "lqr"):
        raise DesignError(f"kind must be 'mpc' or 'lqr', got {kind!r}")
    st_ = s.st
    statuses: list[str] = []
    law = _law(s, kind, statuses)
    times: list[float] = []
    cpu: list[float] = []

    def controller(t: float, x: NDArray, xd: NDArray) -> NDArray:
        u2, el, c = law(int(round(t / st_.dt)), t, x, xd)
        times.append(el)
        cpu.append(c)
        u = np.zeros(len(s.cm.inputs))
        u[s.cols] = INPUT_SCALE @ u2
        return u

    x0 = s.ref.x(0.0) + np.array([0.0, st_.y_offset, 0.0, 0.0])
    plant, pp = _plant(s, plant_model, plant_p)
    sim = forward_dynamics(plant, (0.0, st_.t_final), x0, s.ref.xd(0.0), p=pp,
                           controller=controller, sample_time=st_.dt, rtol=st_.rtol, atol=st_.atol,
                           t_eval=np.linspace(0.0, st_.t_final, points))
    t = np.asarray(sim.t)
    e = lc.lateral_error(s.ref, t, sim.x)
    gam, gamd = np.asarray(sim.x)[:, 3], np.asarray(sim.xd)[:, 3]
    out = lane_change_numbers(st_, t, e, gam, gamd, times, cpu, statuses if kind == "mpc" else None)
    arrays = {"t": t, "x": np.asarray(sim.x), "xd": np.asarray(sim.xd), "e": e,
              "t_u": np.asarray(sim.control_times), "u": np.asarray(sim.control_inputs)}
    _contact_numbers(s, plant, pp, sim, gam, out, arrays)
    return {"numbers": out, "arrays": arrays}


def _plant(s: _LinearizedLaneChange, plant_model: CompiledModel | None,
           plant_p: dict | None) -> tuple[CompiledModel, dict]:
    """The simulated model and its parameters (``st.plant`` updated with ``plant_p``)."""
    plant = s.cm if plant_model is None else plant_model
    if tuple(plant.coordinates) != tuple(s.cm.coordinates) or tuple(plant.inputs) != tuple(s.cm.inputs):
        raise DesignError(f"plant_model must have the controller model's coordinates "
                          f"{list(s.cm.coordinates)} and inputs {list(s.cm.inputs)}, got "
                          f"{list(plant.coordinates)} and {list(plant.inputs)}")
    return plant, {**s.st.plant, **(plant_p or {})}


def _contact_numbers(s: _LinearizedLaneChange, plant: CompiledModel, pp: dict, traj: Any,
                     gamma: NDArray, out: dict, arrays: dict) -> None:
    """``peak_friction_utilisation`` (and ``arrays["friction"]``) of a run: from the constraint
    multipliers on a skate plant; on a tyre plant from its lateral tyre forces, with
    ``peak_slip_angle_deg`` and ``arrays["slip"]`` (rad, rear and front); ``cone_clearance_m``
    of the plant's body on the settings' track at the run's output points
    ([`cone_clearance`][nhcontrol.models.lane_change.cone_clearance], negative: a corner left
    a lane)."""
    pv = {**dict(zip(plant.parameters, np.asarray(plant.param_vector(), dtype=float))), **pp}
    out["cone_clearance_m"] = lc.cone_clearance(np.asarray(traj.x), pv["a"], pv["b"], s.st.track)
    if plant.l > 0:
        fu = friction_utilisation(plant, traj, s.st.mu, st.static_axle_loads(plant, pp), p=pp)
        out["peak_friction_utilisation"] = fu.peak
        arrays["friction"] = fu.utilisation
        return
    p = {**dict(zip(plant.parameters, np.asarray(plant.param_vector(), dtype=float))), **pp}
    slip = st.slip_angles(traj.x, traj.xd, gamma, p["a"], p["b"])
    loads = st.static_axle_loads(plant, pp, g=p["g"])
    law = "magic" if str(plant.name).endswith("_magic") else "linear"
    F = np.column_stack([st.lateral_tyre_force(slip[:, i], p[c], loads[w], law, p["mu"],
                                               p["mf_C"], p["mf_E"])
                         for i, (c, w) in enumerate((("C_R", "rear"), ("C_F", "front")))])
    util = np.abs(F) / (p["mu"] * np.array([loads["rear"], loads["front"]]))
    out["peak_friction_utilisation"] = float(np.max(util))
    out["peak_slip_angle_deg"] = float(np.degrees(np.max(np.abs(slip))))
    arrays["friction"], arrays["slip"] = util, slip


@dataclass(frozen=True)
class AssignedSteeringSettings:
    """Weights and margins of the controllers of the assigned-steering (``force``) skate.

    Speed, sampling time, horizon, limits, plant, initial offset and tolerances are those of
    `LaneChangeSettings`. The finite-horizon LQR uses the same weights (its terminal weight is
    ``Q``, as the MPC's tail weight is its Riccati matrix ``P_{k+N}``).

    Attributes
    ----------
    q, r : tuple of float
        Diagonal weights of ``[x, ẋ, y, ψ, γ]`` and of ``[F_R / 1 kN, γ̇ / 1 rad/s]``.
    backoff : (float, float)
        Fractions of the limits the MPC imposes on ``|γ|`` (predicted states) and ``|γ̇|``
        (inputs). With ``γ`` piecewise linear in time both hold exactly between samples and on
        the mismatched plant (``γ`` is the controller's own integrator); the 1 % margins cover
        the tolerance of the QP solver only.
    """

    q: tuple[float, ...] = (1.0, 1.0, 100.0, 10.0, 1.0)
    r: tuple[float, ...] = (1.0, 0.1)
    backoff: tuple[float, float] = (0.99, 0.99)


@dataclass(frozen=True)
class AssignedSteeringSetup(_LinearizedLaneChange):
    """The ``force`` model, its reference, the LTV system in input-state form and its ZOH
    sequences ``Ad`` (K, 5, 5), ``Bd`` (K, 5, 2) (inputs ``[F_R / 1 kN, γ̇]``, columns ``cols``
    of the LTV system's inputs); fields as in `LaneChangeSetup`, plus the controllers' weights
    ``ast``."""

    ast: AssignedSteeringSettings


def assigned_steering_setup(st_: LaneChangeSettings = LaneChangeSettings(),
                            ast: AssignedSteeringSettings = AssignedSteeringSettings()
                            ) -> AssignedSteeringSetup:
    """Reference with input rates, LTV system with ``γ`` as a state (``input_states=True``) and
    its zero-order-hold sequences, for the ``force`` skate.

    The reference spans the track plus one horizon, so the MPC's window never leaves it.
    """
    cm = st.build("force", lateral_force_outputs=True).system.compile()
    return AssignedSteeringSetup(**_linearized(cm, lc.assigned_steering_reference,
                                               ASSIGNED_PARTITION, st_, ("F_R", "gamma_dot"),
                                               RATE_INPUT_SCALE, input_states=True), ast=ast)


def reference_window(s: AssignedSteeringSetup, t: float
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The reference over the MPC window from ``t``: ``u_ref`` (N, 2) and ``x_ref`` (N + 1, 5).

    ``u_ref = [F_R0 / 1 kN, (γ0(t_{j+1}) − γ0(t_j)) / dt]``: the secant rate of ``γ0`` over each
    sample, so the integrator row ``γ_{j+1} = γ_j + dt γ̇_j`` of the discrete model holds
    exactly along the reference; ``x_ref = [x0, ẋ0, y0, ψ0, γ0]`` at the ``N + 1`` samples.
    """
    st_ = s.st
    tt = t + st_.dt * np.arange(st_.horizon + 1)
    x, xd, u = s.ref.x(tt), s.ref.xd(tt), s.ref.u(tt)
    g = u[:, list(s.cm.inputs).index("gamma")]
    u_ref = np.column_stack([u[:-1, 0] / RATE_INPUT_SCALE[0, 0], np.diff(g) / st_.dt])
    return u_ref, np.column_stack([x[:, 0], xd[:, 0], x[:, 1], x[:, 2], g])


def _assigned_law(s: AssignedSteeringSetup, kind: Literal["mpc", "lqr"], times: list[float],
                  cpu: list[float], statuses: list[str]) -> Callable:
    """The controller's law for `closed_loop_piecewise_linear`: ``[F_R, γ̇]`` from the MPC or
    the LQR, the plant's ``γ`` continued from its current value at the commanded rate."""
    st_, ast = s.st, s.ast
    N = st_.horizon
    Q, R = np.diag(ast.q), np.diag(ast.r)
    lqr = finite_horizon_lqr((s.Ad, s.Bd), Q, R, Q)
    mpc = None
    if kind == "mpc":
        hi = np.full(len(s.states), np.inf)
        hi[s.states.index("gamma")] = ast.backoff[0] * math.radians(st_.steer_max_deg)
        rate_hi = np.array([np.inf, ast.backoff[1] * math.radians(st_.steer_rate_max_deg_s)])
        if s.friction is not None and st_.friction_bound is not None:
            mpc = _friction_mpc(N, Q, R, lqr.P[N], -hi, hi, st_.friction_bound,
                                u_min=-rate_hi, u_max=rate_hi)
        else:
            mpc = LTVMPC(N, Q, R, lqr.P[N], x_min=-hi, x_max=hi, u_min=-rate_hi, u_max=rate_hi)
    names = list(s.cm.inputs)
    iF, ig, ir = names.index("F_R"), names.index("gamma"), names.index("gamma_rate")

    def law(k: int, t: float, x: NDArray, xd: NDArray, u_now: NDArray
            ) -> tuple[NDArray, NDArray]:
        gam = float(u_now[ig])
        dX = np.append(s.lin0.deviation(s.ref, t, x, xd), gam - s.ref.u(t)[ig])
        u_ref, x_ref = reference_window(s, t)
        c0, p0 = time.perf_counter(), time.process_time()
        if mpc is None:
            v = u_ref[0] + lqr.control(k, dX)
        else:
            step = _mpc_step(s, mpc, k, dX, u_ref, x_ref, lqr.P[min(k + N, lqr.P.shape[0] - 1)])
            v = np.asarray(step.u)
        times.append(time.perf_counter() - c0)
        cpu.append(time.process_time() - p0)
        if mpc is not None:
            statuses.append(step.status)
        F_R, rate = RATE_INPUT_SCALE @ v
        u_k = np.zeros(len(names))
        u_k[iF], u_k[ig], u_k[ir] = float(F_R), gam, float(rate)
        ud_k = np.zeros(len(names))
        ud_k[ig] = float(rate)
        return u_k, ud_k

    return law


def lane_change_numbers(st_: LaneChangeSettings, t: NDArray[np.float64], e: NDArray[np.float64],
                        gamma: NDArray[np.float64], gamma_rate: NDArray[np.float64],
                        times: list[float], cpu: list[float],
                        statuses: list[str] | None = None) -> dict[str, Any]:
    """The summary of a lane-change run: lateral deviation ``e(t)`` [m] (max, rms, max after
    1 s), peak steering angle and rate [deg, deg/s] and whether they keep the limits of
    ``st_``, the controller's step times [s] (wall and CPU), and the solver statuses."""
    stt = np.asarray(times)
    out = {
        "max_lateral_error_m": float(np.max(np.abs(e))),
        "rms_lateral_error_m": float(np.sqrt(np.mean(e ** 2))),
        "max_lateral_error_after_1s_m": float(np.max(np.abs(e[t >= 1.0]))),
        "peak_steer_deg": float(np.degrees(np.max(np.abs(gamma)))),
        "peak_steer_rate_deg_s": float(np.degrees(np.max(np.abs(gamma_rate)))),
        "median_step_s": float(np.median(stt)),
        "max_step_s": float(np.max(stt)),
        "median_step_cpu_s": float(np.median(cpu)),
        "steps": int(stt.size),
    }
    out["bounds_respected"] = bool(out["peak_steer_deg"] <= st_.steer_max_deg
                                   and out["peak_steer_rate_deg_s"] <= st_.steer_rate_max_deg_s)
    if statuses is not None:
        out["statuses"] = {k: statuses.count(k) for k in sorted(set(statuses))}
    return out


def closed_loop_assigned(s: AssignedSteeringSetup, kind: Literal["mpc", "lqr"] = "mpc", *,
                         t_final: float | None = None, points_per_step: int = 4,
                         plant_model: CompiledModel | None = None, plant_p: dict | None = None
                         ) -> dict[str, Any]:
    """LTV-MPC or finite-horizon LQR on the assigned-steering skate, closed on the nonlinear model.

    Every ``dt`` the controller returns ``[F_R, γ̇]``; over the sample the plant sees ``F_R``
    held and ``γ`` ramping at the commanded rate from its current value
    ([`closed_loop_piecewise_linear`][nhcontrol.simulate.closed_loop_piecewise_linear]),
    so ``γ`` is continuous, its rate is exactly the controller's input and the discrete model's
    integrator row is exact. The MPC bounds ``|γ|`` (state) and ``|γ̇|`` (input) with the
    margins of `AssignedSteeringSettings` and, with ``friction_bound`` of the settings, the
    friction utilisation of both skates (soft, just before and after every predicted sample);
    the LQR (same weights) has no bounds: its ``bounds_respected`` and
    ``peak_friction_utilisation`` say whether it kept them.

    Parameters
    ----------
    s : AssignedSteeringSetup
    kind : {"mpc", "lqr"}
    t_final : float, optional
        Default: the whole track (``s.st.t_final``).
    points_per_step : int
        Output points per sample.
    plant_model, plant_p
        As in [`closed_loop`][nhcontrol.applications.lane_change.closed_loop] (e.g. the compiled
        ``tyre_plant("force")``).

    Returns
    -------
    dict
        ``numbers``: ``max_lateral_error_m``, ``rms_lateral_error_m``,
        ``max_lateral_error_after_1s_m`` (lateral deviation of ``G``,
        [`lateral_error`][nhcontrol.models.lane_change.lateral_error]), ``peak_steer_deg``,
        ``peak_steer_rate_deg_s`` (of the applied ramps), ``median_step_s``, ``max_step_s``,
        ``median_step_cpu_s`` (one controller evaluation), ``steps``, ``bounds_respected``,
        ``peak_friction_utilisation`` (multipliers solved along the loop on the plant, static
        load split of the plant), ``cone_clearance_m`` and, for the MPC, ``statuses``;
        ``arrays``: ``t``, ``x``,
        ``xd``, ``e``, ``gamma``, ``gamma_d``, ``t_u``, ``u`` (the plant's inputs at the
        samples), ``friction`` (utilisation (M, 2) of the rear and front skates).

    Raises
    ------
    DesignError
        ``kind`` not ``"mpc"`` or ``"lqr"``.
    """
    if kind not in ("mpc", "lqr"):
        raise DesignError(f"kind must be 'mpc' or 'lqr', got {kind!r}")
    st_ = s.st
    times: list[float] = []
    cpu: list[float] = []
    statuses: list[str] = []
    law = _assigned_law(s, kind, times, cpu, statuses)
    x0 = s.ref.x(0.0) + np.array([0.0, st_.y_offset, 0.0])
    plant, pp = _plant(s, plant_model, plant_p)
    loop = closed_loop_piecewise_linear(
        plant, law, st_.t_final if t_final is None else t_final, x0, s.ref.xd(0.0),
        s.ref.u(0.0), sample_time=st_.dt, p=pp, rtol=st_.rtol, atol=st_.atol,
        points_per_step=points_per_step)
    names = list(s.cm.inputs)
    ig = names.index("gamma")
    e = lc.lateral_error(s.ref, loop.t, loop.x)
    gam_t, gamd_t = loop.u[:, ig], loop.ud[:, ig]
    out = lane_change_numbers(st_, loop.t, e, gam_t, gamd_t, times, cpu,
                              statuses if kind == "mpc" else None)
    arrays = {"t": loop.t, "x": loop.x, "xd": loop.xd, "e": e, "gamma": gam_t,
              "gamma_d": gamd_t, "t_u": loop.t_u, "u": loop.u_k}
    _contact_numbers(s, plant, pp, loop, gam_t, out, arrays)
    return {"numbers": out, "arrays": arrays}


TYRE_STIFFNESSES: tuple[float, ...] = (4e4, 1e5, 3e5, 1e6, 3e6, 1e7)
"""Cornering stiffnesses per axle [N/rad] of the convergence study (`tyre_convergence`)."""


def tyre_convergence(stiffnesses: tuple[float, ...] = TYRE_STIFFNESSES, *, law: str = "linear",
                     V: float = lc.SPEED, fit_last: int = 4, rtol: float = 1e-8,
                     points: int = 401) -> dict[str, Any]:
    """Convergence of the tyre plant to the nonholonomic model as the cornering stiffness grows.

    The inputs of the assigned-steering lane-change reference (``F_R``, ``γ``, ``γ̇`` of the
    ``force`` skate, [`assigned_steering_reference`][nhcontrol.models.lane_change.assigned_steering_reference])
    drive, open loop and from the same initial state, the
    [`tyre_plant`][nhcontrol.models.single_track.tyre_plant] ``("force", law)`` with
    ``C_R = C_F = C_α``; the reference motion is the skate model's exact response to them. The
    error is the largest distance of ``G`` from it over the track. With ``α = O(1/C_α)`` the
    error is ``O(1/C_α)``: the slope of ``log error`` vs ``log C_α``, fitted over the
    ``fit_last`` largest stiffnesses, tends to −1.

    Returns
    -------
    dict
        ``stiffness_N_rad``, ``max_position_error_m``, ``local_slopes`` (between neighbours),
        ``convergence_slope`` (least-squares fit), ``fit_stiffness_N_rad`` (its range), ``law``,
        ``speed_m_s``; ``arrays``: ``t`` and the deviations ``e`` (len(stiffnesses), points).
    """
    from scipy.interpolate import CubicSpline

    Cs = np.asarray(stiffnesses, dtype=float)
    if Cs.ndim != 1 or Cs.size < 2 or not np.all(np.isfinite(Cs) & (Cs > 0)) or np.any(np.diff(Cs) <= 0):
        raise DesignError(f"stiffnesses must be at least two increasing positive values [N/rad], "
                          f"got {stiffnesses!r}")
    if not 2 <= fit_last <= Cs.size:
        raise DesignError(f"fit_last must be between 2 and {Cs.size}, got {fit_last!r}")
    cm = st.build("force").system.compile()
    T = sum(lc.ISO_3888_1_SECTIONS) / V
    ref = lc.assigned_steering_reference(cm, V, t_final=T)
    tg = np.linspace(0.0, T, 2001)
    u = CubicSpline(tg, ref.u(tg))          # inverse dynamics once; the plant's u(t) is a spline
    plant = st.tyre_plant("force", law).compile()
    te = np.linspace(0.0, T, points)
    X0 = ref.x(te)
    errs, E = [], []
    for C in Cs:
        sim = forward_dynamics(plant, (0.0, T), ref.x(0.0), ref.xd(0.0), u=u,
                               p={"C_R": C, "C_F": C}, method="LSODA", rtol=rtol,
                               atol=1e-2 * rtol, t_eval=te)
        d = np.hypot(*(np.asarray(sim.x)[:, :2] - X0[:, :2]).T)
        E.append(d)
        errs.append(float(np.max(d)))
    lc_, le = np.log(Cs), np.log(errs)
    slope = float(np.polyfit(lc_[-fit_last:], le[-fit_last:], 1)[0])
    return {"stiffness_N_rad": Cs.tolist(), "max_position_error_m": errs,
            "local_slopes": (np.diff(le) / np.diff(lc_)).tolist(), "convergence_slope": slope,
            "fit_stiffness_N_rad": [float(Cs[-fit_last]), float(Cs[-1])], "law": law,
            "speed_m_s": float(V), "arrays": {"t": te, "e": np.array(E)}}


TYRE_CONTROLLERS: tuple[tuple[str, str, str], ...] = (
    ("mpc", "torque", "mpc"), ("lqr", "torque", "lqr"),
    ("assigned_mpc", "assigned", "mpc"), ("assigned_lqr", "assigned", "lqr"))
"""Controllers of `tyre_plant_runs`: ``(key, skate, kind)``; ``torque`` is the ``force_torque``
skate (`closed_loop`), ``assigned`` the ``force`` skate (`closed_loop_assigned`)."""

_TYRE_KEYS = ("max_lateral_error_m", "rms_lateral_error_m", "max_lateral_error_after_1s_m",
              "peak_slip_angle_deg", "peak_steer_deg", "peak_steer_rate_deg_s", "bounds_respected",
              "peak_friction_utilisation")


def tyre_plant_runs(st_: LaneChangeSettings = LaneChangeSettings(), *,
                    accel_factors: tuple[float, ...] = (1.0, 1.5), stiffness: float = 80e3,
                    law: str = "magic", setups: dict[float, tuple] | None = None
                    ) -> dict[str, Any]:
    """The lane-change controllers designed on the skate (nonholonomic) models, closed on the
    [`tyre_plant`][nhcontrol.models.single_track.tyre_plant] (cornering stiffness ``stiffness``
    per axle, ``law``; the mismatched mass, inertia and centre of mass of ``st_.plant``).

    For each factor ``f`` of ``accel_factors`` the speed is ``V √f`` (the lane change's lateral
    acceleration scales with ``V²``), the reference and the controllers are designed anew at that
    speed on the skate models, and the four controllers of `TYRE_CONTROLLERS` run on the tyre
    plant.

    Parameters
    ----------
    setups : dict, optional
        ``{factor: (LaneChangeSetup, AssignedSteeringSetup)}`` already built (the reproduce
        target reuses those of the skate loops).

    Returns
    -------
    dict
        ``{"x<f>": {"speed_m_s", "lateral_acceleration_factor", <controller>: numbers}}`` with the
        numbers ``max_lateral_error_m``, ``rms_lateral_error_m``,
        ``max_lateral_error_after_1s_m``, ``peak_slip_angle_deg``, ``peak_steer_deg``,
        ``peak_steer_rate_deg_s``, ``bounds_respected``, ``peak_friction_utilisation`` (tyre
        force over ``μ F_z``) and, for the MPCs, ``statuses``; ``"arrays"``: per factor and
        controller the run's arrays.
    """
    import dataclasses

    tp = {"torque": st.tyre_plant("force_torque", law).compile(),
          "assigned": st.tyre_plant("force", law).compile()}
    pp = {"C_R": float(stiffness), "C_F": float(stiffness)}
    out: dict[str, Any] = {"stiffness_N_rad": float(stiffness), "law": law, "arrays": {}}
    for f in accel_factors:
        if not (np.isfinite(f) and f > 0):
            raise DesignError(f"accel_factors must be positive, got {f!r}")
        if setups is not None and f in setups:
            s_t, s_a = setups[f]
        else:
            stf = dataclasses.replace(st_, V=st_.V * math.sqrt(f))
            s_t, s_a = lane_change_setup(stf), assigned_steering_setup(stf)
        key = f"x{f:g}"
        block: dict[str, Any] = {"speed_m_s": float(s_t.st.V), "lateral_acceleration_factor": float(f)}
        out["arrays"][key] = {}
        for name, skate, kind in TYRE_CONTROLLERS:
            if skate == "torque":
                r = closed_loop(s_t, kind, plant_model=tp["torque"], plant_p=pp)
            else:
                r = closed_loop_assigned(s_a, kind, plant_model=tp["assigned"], plant_p=pp)
            n = r["numbers"]
            block[name] = {k: n[k] for k in _TYRE_KEYS}
            if "statuses" in n:
                block[name]["statuses"] = n["statuses"]
            out["arrays"][key][name] = r["arrays"]
        out[key] = block
    return out


def tyre_stiffness_sweep(s_t: LaneChangeSetup, s_a: AssignedSteeringSetup,
                         stiffnesses: tuple[float, ...] = (80e3, 120e3, 160e3, 250e3, 500e3), *,
                         law: str = "magic") -> dict[str, Any]:
    """Largest lateral deviation [m] and peak slip angle [deg] of the four controllers of
    `TYRE_CONTROLLERS` (setups ``s_t``, ``s_a`` designed on the skate models) closed on the
    tyre plant, per cornering stiffness per axle [N/rad]: where the no-slip design stops
    working. Returns ``{"stiffness_N_rad": [...], <controller>: {"max_lateral_error_m": [...],
    "peak_slip_angle_deg": [...], "bounds_respected": [...]}}``."""
    tp = {"torque": st.tyre_plant("force_torque", law).compile(),
          "assigned": st.tyre_plant("force", law).compile()}
    out: dict[str, Any] = {"stiffness_N_rad": [float(c) for c in stiffnesses], "law": law}
    for name, skate, kind in TYRE_CONTROLLERS:
        rows: dict[str, list] = {"max_lateral_error_m": [], "peak_slip_angle_deg": [],
                                 "bounds_respected": []}
        for C in stiffnesses:
            pp = {"C_R": float(C), "C_F": float(C)}
            r = (closed_loop(s_t, kind, plant_model=tp["torque"], plant_p=pp) if skate == "torque"
                 else closed_loop_assigned(s_a, kind, plant_model=tp["assigned"], plant_p=pp))
            for k in rows:
                rows[k].append(r["numbers"][k])
        out[name] = rows
    return out
