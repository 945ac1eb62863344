"""ISO 3888-1 double lane change for the single-track skate models: track, path and reference.

**Track** ([ISO 3888-1](../references.md#iso-3888-1), *Passenger cars — Test track for a severe
lane-change manoeuvre — Part 1: Double lane-change*, Table 1 and Fig. 1): six sections of lengths
15, 30, 25, 25, 15 and 15 m; the lanes of sections 1, 3 and 5–6 are marked by cones and are
``1.1 W + 0.25``, ``1.2 W + 0.25`` and ``1.3 W + 0.25`` m wide (``W`` the vehicle width; 1.8 m
here, a typical passenger car, chosen here); the lane of section 3 is offset 3.5 m to the left.
The standard's text is not available here, and public implementations read the 3.5 m two ways
([`OffsetReference`][nhcontrol.models.lane_change.OffsetReference]):

- ``"centre-to-near-row"`` (default): from the centre line of lane 1 to the near (right-hand)
  cone row of lane 3, as in Project Chrono's ISO 3888-1 double-lane-change demo
  ([Chrono](../references.md#chrono-dlc)) — lane 3's centre line at ``3.5 + w_3/2``
  (4.705 m for ``W = 1.8`` m);
- ``"row-to-row"``: between the right-hand cone rows of lanes 1 and 3 — lane 3's centre line at
  ``3.5 + (w_3 − w_1)/2`` (3.59 m).

Both align the right-hand rows of lanes 1 and 5–6 (Chrono does the same), so lane 5's centre
line is at ``(w_5 − w_1)/2`` (0.18 m) ([`Iso3888Track`][nhcontrol.models.lane_change.Iso3888Track]).
The evidence for each reading is collected in docs/theory/road_vehicles.md, "The ISO 3888-1
track".

**Path.** The reference path of the rear-axle centre ``R`` is straight on the centre lines of
lanes 1 and 3 and changes lane twice along the degree-9 smoothstep

$$
Y(X) = Y_a + h\\,s(\\tau),\\quad \\tau = (X - X_a)/\\ell,\\quad
s(\\tau) = 126\\tau^5 - 420\\tau^6 + 540\\tau^7 - 315\\tau^8 + 70\\tau^9,
$$

whose first four derivatives vanish at both ends (curvature, its rate and its second rate are
continuous, so are the steering angle, rate and torque of the reference). A transition starts
``lead`` = 10 m before the end of the lane it leaves and ends ``lead`` after the start of the
lane it enters (``ℓ`` = 50 m and 45 m; chosen here: the smoothstep is so flat at its ends that the
path is within 15 cm (11 cm with ``"row-to-row"``) of the lane centre lines where the lanes end
and begin, and the car's body, 4.58 m by 1.8 m, keeps 12.9 cm (14.9 cm) from every cone line,
[`cone_clearance`][nhcontrol.models.lane_change.cone_clearance]).
The second change returns to lane 1's centre line (lane 5 is 0.18 m wider on the left side).
At [`SPEED`][nhcontrol.models.lane_change.SPEED] = 15 m/s (54 km/h) the peak lateral acceleration
of the mass centre along the body's lateral axis is 5.08 m/s² (``"centre-to-near-row"``) or
3.88 m/s² (``"row-to-row"``)
([`lateral_acceleration`][nhcontrol.models.lane_change.lateral_acceleration]); it grows with
``V²``. [`minimal_peak_lateral_acceleration`][nhcontrol.models.lane_change.minimal_peak_lateral_acceleration]
bounds from below what any path through the cones needs.

**Flatness (derived here).** For the skate single-track models the rear-axle centre is a flat
output: its velocity is ``v_R = u_1 i_1`` (rear skate), so the yaw is the heading of its path and
the front skate gives ``tan γ = L κ``. With ``X_R = X_0 + V t`` (constant longitudinal speed
``V`` along the road) and ``Y_R = Y(X_R)``:

$$
\\psi = \\arctan Y', \\qquad \\kappa = \\frac{Y''}{(1 + Y'^2)^{3/2}},\\qquad
\\gamma = \\arctan(L\\kappa),\\qquad
x_G = X_R + b\\cos\\psi,\\quad y_G = Y_R + b\\sin\\psi,
$$

and their first and second time derivatives follow from ``d/dt = V d/dX`` (up to ``Y''''``).
The inputs ``F_R`` (rear driving force) and ``T`` (steering torque) then come from inverse
dynamics, Eq. (2.112), with the actuation matrix ``A_τ = ∂Q/∂u`` of those two inputs
(``F_F = 0``); the reference is exact (no integration).

For the ``force`` model (steering angle ``γ`` assigned: an input that enters the front skate
constraint) the same map gives ``x, y, ψ`` and the inputs ``γ``, ``gamma_rate = γ̇``; ``F_R``
comes from inverse dynamics with the actuation of ``F_R`` alone, and the input rates are
``u̇ = [Ḟ_R, 0, γ̇, γ̈]`` (`assigned_steering_reference`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np
import sympy as sp
from numpy.polynomial import Polynomial
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol.reference import Reference, inverse_dynamics

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["lane_change_reference", "assigned_steering_reference", "iso_3888_1_path", "lateral_error", "flat_states",
           "LaneChangePath", "ISO_3888_1_SECTIONS", "ISO_3888_1_OFFSET", "DRIVE_INPUTS",
           "ASSIGNED_DRIVE_INPUTS", "Iso3888Track", "ISO_TRACK", "LEAD", "SPEED",
           "lateral_acceleration", "cone_clearance", "OffsetReference", "OFFSET_REFERENCES",
           "iso_3888_1_track", "minimal_peak_lateral_acceleration", "TEST_SPEED"]

ISO_3888_1_SECTIONS: tuple[float, ...] = (15.0, 30.0, 25.0, 25.0, 15.0, 15.0)
"""Section lengths of the ISO 3888-1 track [m]."""

ISO_3888_1_OFFSET: float = 3.5
"""Lateral offset of the lane of section 3 [m] (ISO 3888-1; measured as `OffsetReference`
says)."""

OffsetReference = Literal["centre-to-near-row", "row-to-row"]
"""How the 3.5 m offset of lane 3 is measured: from lane 1's centre line to lane 3's near
(right-hand) cone row (``"centre-to-near-row"``, Project Chrono's reading, the default) or
between the right-hand cone rows of lanes 1 and 3 (``"row-to-row"``)."""

OFFSET_REFERENCES: tuple[str, ...] = get_args(OffsetReference)
"""The readings of `OffsetReference`, the default first."""

TEST_SPEED: float = 80.0 / 3.6
"""Test speed of ISO 3888-1 [m/s] (80 km/h)."""

LEAD: float = 10.0
"""Distance [m] by which a lane change of the reference starts before the end of the lane it
leaves and ends after the start of the lane it enters (chosen here)."""

SPEED: float = 15.0
"""Speed [m/s] of the lane change (54 km/h): peak lateral acceleration 5.07 m/s² of the mass
centre along the body's lateral axis with the default path and ``single_track.DEFAULTS``
(3.88 m/s² with ``offset_reference="row-to-row"``)."""

DRIVE_INPUTS: tuple[str, ...] = ("F_R", "T")
"""Inputs of ``single_track.build("force_torque")`` that drive the lane change (``F_F = 0``)."""

ASSIGNED_DRIVE_INPUTS: tuple[str, ...] = ("F_R",)
"""Input of ``single_track.build("force")`` found by inverse dynamics (``F_F = 0``; the steering
angle ``gamma`` and its rate come from flatness)."""

_FORCE_TORQUE = (("x", "y", "psi", "gamma"), ("F_R", "F_F", "T"))
_FORCE = (("x", "y", "psi"), ("F_R", "F_F", "gamma", "gamma_rate"))
_RATE_STEP = 1e-5
"""Step [s] of the central difference that gives ``Ḟ_R`` of the assigned-steering reference
(``F_R`` enters no constraint: its rate acts on nothing and is carried for consistency)."""

_SMOOTHSTEP = Polynomial([0, 0, 0, 0, 0, 126, -420, 540, -315, 70])
_DERIVS = [_SMOOTHSTEP.deriv(k) for k in range(5)]


@dataclass(frozen=True)
class LaneChangePath:
    """A straight road with smooth lane changes: ``Y(X)`` of the rear-axle centre.

    Attributes
    ----------
    starts, lengths, heights : tuple of float
        Start ``X_a`` [m], length ``ℓ`` [m] and lateral change ``h`` [m] of each transition.
    """

    starts: tuple[float, ...]
    lengths: tuple[float, ...]
    heights: tuple[float, ...]

    def __call__(self, X: ArrayLike, order: int = 0) -> NDArray[np.float64]:
        """``d^order Y / dX^order`` at ``X`` (``order`` 0 … 4)."""
        Xa = np.asarray(X, dtype=float)
        out = np.zeros_like(Xa)
        for Xs, ell, h in zip(self.starts, self.lengths, self.heights):
            tau = np.clip((Xa - Xs) / ell, 0.0, 1.0)
            inside = (Xa > Xs) & (Xa < Xs + ell)
            if order == 0:
                out = out + h * _SMOOTHSTEP(tau)
            else:
                out = out + np.where(inside, h * _DERIVS[order](tau) / ell ** order, 0.0)
        return out

    @property
    def end(self) -> float:
        """``X`` where the last transition ends."""
        return max(s + ell for s, ell in zip(self.starts, self.lengths))


def iso_3888_1_path(offset: float | None = None, x_start: float = 0.0, *, lead: float = LEAD,
                    vehicle_width: float = 1.8,
                    offset_reference: OffsetReference = "centre-to-near-row") -> LaneChangePath:
    """Path of the rear-axle centre through the ISO 3888-1 track, section 1 starting at ``x_start``.

    Lane changes of ``+offset`` and ``−offset`` (default the centre-line offset of lane 3,
    [`Iso3888Track.centre_offset`][nhcontrol.models.lane_change.Iso3888Track]: 4.705 m for a
    vehicle 1.8 m wide with ``offset_reference="centre-to-near-row"``, 3.59 m with
    ``"row-to-row"``) over sections 2 and 4 extended by ``lead`` at both ends (lengths
    ``30 + 2 lead`` and ``25 + 2 lead``; ``0 ≤ lead ≤ 12.5`` m so that the two changes do not
    overlap in section 3).
    """
    if offset is None:
        offset = Iso3888Track(vehicle_width, offset_reference=offset_reference).centre_offset
    if not np.isfinite(offset) or not np.isfinite(x_start):
        raise ModelError(f"offset and x_start must be finite numbers, got {offset!r}, {x_start!r}")
    if not (np.isfinite(lead) and 0.0 <= lead <= min(ISO_3888_1_SECTIONS[0], ISO_3888_1_SECTIONS[2] / 2)):
        raise ModelError(f"lead must be between 0 and 12.5 m (the lane changes may not overlap "
                         f"nor start before the track), got {lead!r}")
    s = np.concatenate([[0.0], np.cumsum(ISO_3888_1_SECTIONS)]) + x_start
    return LaneChangePath(starts=(float(s[1]) - lead, float(s[3]) - lead),
                          lengths=(ISO_3888_1_SECTIONS[1] + 2 * lead,
                                   ISO_3888_1_SECTIONS[3] + 2 * lead),
                          heights=(float(offset), -float(offset)))


@dataclass(frozen=True)
class Iso3888Track:
    """Cone-marked lanes of the ISO 3888-1 double lane change for a vehicle of width ``W``.

    Attributes
    ----------
    vehicle_width : float
        ``W`` [m] (default 1.8 m, a passenger car; chosen here).
    offset : float
        3.5 m: lateral offset of lane 3, measured as ``offset_reference`` says.
    x_start : float
        ``X`` of the start of section 1 [m].
    offset_reference : {"centre-to-near-row", "row-to-row"}
        From lane 1's centre line to lane 3's near cone row (default, Project Chrono's
        reading) or between the right-hand cone rows of lanes 1 and 3 (`OffsetReference`).
    """

    vehicle_width: float = 1.8
    offset: float = ISO_3888_1_OFFSET
    x_start: float = 0.0
    offset_reference: OffsetReference = "centre-to-near-row"

    def __post_init__(self) -> None:
        if self.offset_reference not in OFFSET_REFERENCES:
            raise ModelError(f"offset_reference must be one of {list(OFFSET_REFERENCES)}, got "
                             f"{self.offset_reference!r}")
        if not (np.isfinite(self.vehicle_width) and self.vehicle_width > 0
                and np.isfinite(self.offset) and self.offset > 0 and np.isfinite(self.x_start)):
            raise ModelError(f"Iso3888Track needs a positive finite vehicle_width and offset and "
                             f"a finite x_start, got {self.vehicle_width!r}, {self.offset!r}, "
                             f"{self.x_start!r}")

    @property
    def widths(self) -> tuple[float, float, float]:
        """Widths [m] of lanes 1, 3 and 5–6: ``1.1 W + 0.25``, ``1.2 W + 0.25``, ``1.3 W + 0.25``."""
        W = self.vehicle_width
        return (1.1 * W + 0.25, 1.2 * W + 0.25, 1.3 * W + 0.25)

    @property
    def boundaries(self) -> tuple[float, ...]:
        """``X`` [m] of the section boundaries (7 values, 125 m in all)."""
        return tuple(float(v) for v in
                     np.concatenate([[0.0], np.cumsum(ISO_3888_1_SECTIONS)]) + self.x_start)

    @property
    def lanes(self) -> tuple[tuple[float, float, float, float], ...]:
        """The cone-marked lanes as ``(X_begin, X_end, Y_centre, width)`` [m]: sections 1, 3 and
        5–6 (lane 1 centred on ``Y = 0``; right-hand rows of lanes 1 and 5–6 on ``Y = −w_1/2``;
        lane 3 centred on ``offset + w_3/2`` or ``offset + (w_3 − w_1)/2`` as
        ``offset_reference`` says)."""
        w1, w3, w5 = self.widths
        x = self.boundaries
        y3 = self.offset + (w3 / 2 if self.offset_reference == "centre-to-near-row"
                            else (w3 - w1) / 2)
        return ((x[0], x[1], 0.0, w1), (x[2], x[3], y3, w3), (x[4], x[6], (w5 - w1) / 2, w5))

    @property
    def centre_offset(self) -> float:
        """Lateral offset [m] of lane 3's centre line from lane 1's: ``offset + (w_3 − w_1)/2``."""
        return self.lanes[1][2]

    def cones(self, spacing: float = 5.0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Cone positions ``(X, Y)`` [m]: both rows of every lane, at its ends and at most
        ``spacing`` apart in between (our placement; the standard fixes the lanes' edges)."""
        xs, ys = [], []
        for X0, X1, yc, w in self.lanes:
            n = int(np.ceil((X1 - X0) / spacing)) + 1
            for side in (-1.0, 1.0):
                xs.append(np.linspace(X0, X1, n))
                ys.append(np.full(n, yc + side * w / 2))
        return np.concatenate(xs), np.concatenate(ys)


ISO_TRACK = Iso3888Track()
"""The track for ``W = 1.8`` m: lanes 2.23, 2.41 and 2.59 m wide, lane 3 centred 4.705 m left
(``"centre-to-near-row"``; 3.59 m with ``"row-to-row"``)."""


def iso_3888_1_track(offset_reference: OffsetReference = "centre-to-near-row", *,
                     vehicle_width: float = 1.8, x_start: float = 0.0) -> Iso3888Track:
    """The ISO 3888-1 track (the one definition every study here uses: the reference path,
    the cone clearance, the lower bound of `minimal_peak_lateral_acceleration`)."""
    return Iso3888Track(vehicle_width=vehicle_width, x_start=x_start,
                        offset_reference=offset_reference)


def minimal_peak_lateral_acceleration(V: float, track: Iso3888Track = ISO_TRACK, *,
                                      dx: float = 0.1) -> dict[str, Any]:
    r"""Lower bound [m/s²] of the peak acceleration across the road that *any* motion through the
    cones needs at the constant speed ``V`` along the road (derived here).

    Relaxation: the car's centre ``G`` moves with ``Ẋ = V`` and its lateral position ``y(X)``
    must keep ``W/2`` from both cone rows wherever ``G`` is inside a lane (the body's cross
    section through ``G`` is at least ``W`` wide at any heading, so every motion of the body
    inside the lanes satisfies this; the body's length is ignored). On a grid ``X_k = k dx``
    (``h = dx / V``), the linear programme

    $$
    \min A \quad\text{s.t.}\quad |y_{k+1} - 2 y_k + y_{k-1}| \le A h^2,\qquad
    y_c - w/2 + W/2 \le y_k \le y_c + w/2 - W/2 \ \text{in the lanes}
    $$

    is solved (HiGHS). For any twice differentiable ``y(t)`` the second difference is a
    weighted mean of ``ÿ``, so ``|Δ²y| ≤ h² max |ÿ|``: every admissible motion is feasible for
    the programme with ``A = max |ÿ|``, and the optimum is a lower bound of ``max |ÿ|``, hence
    of the peak horizontal acceleration ``|a_G| ≥ |ÿ|``. Friction caps ``|a_G|`` at ``μ g``
    (the tyre forces sum to ``m a_G``, each at most ``μ`` times its load): a speed whose bound
    exceeds ``μ g`` is not drivable by any trajectory.

    Returns
    -------
    dict
        ``lower_bound_m_s2`` (the optimum ``A``), ``speed_m_s``, ``grid_m`` (``dx``),
        ``status`` (HiGHS's message).

    Raises
    ------
    ModelError
        ``V`` or ``dx`` not positive and finite, or the programme has no solution (lanes
        narrower than the car).
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, vstack

    if not (np.isfinite(V) and V > 0 and np.isfinite(dx) and 0 < dx <= 5.0):
        raise ModelError(f"V must be a positive speed [m/s] and dx a grid step in (0, 5] m, got "
                         f"{V!r}, {dx!r}")
    X0, X1 = track.boundaries[0], track.boundaries[-1]
    K = int(np.ceil((X1 - X0) / dx)) + 1
    X = X0 + dx * np.arange(K)
    h2 = (dx / V) ** 2
    lo, hi = np.full(K, -np.inf), np.full(K, np.inf)
    half = track.vehicle_width / 2
    for a, b, yc, w in track.lanes:
        m = (X >= a - 1e-12) & (X <= b + 1e-12)
        lo[m] = np.maximum(lo[m], yc - w / 2 + half)
        hi[m] = np.minimum(hi[m], yc + w / 2 - half)
    if np.any(lo > hi):
        raise ModelError(f"a car {track.vehicle_width} m wide does not fit the lanes")
    r = np.arange(1, K - 1)
    rows = np.repeat(np.arange(K - 2), 3)
    cols = np.column_stack([r - 1, r, r + 1]).ravel()
    vals = np.tile([1.0, -2.0, 1.0], K - 2)
    D2 = coo_matrix((vals, (rows, cols)), shape=(K - 2, K + 1))
    Acol = coo_matrix((np.full(K - 2, -h2), (np.arange(K - 2), np.full(K - 2, K))),
                      shape=(K - 2, K + 1))
    A_ub = vstack([D2 + Acol, -D2 + Acol]).tocsr()
    c = np.zeros(K + 1)
    c[-1] = 1.0
    bounds = [(None if not np.isfinite(l_) else l_, None if not np.isfinite(u_) else u_)
              for l_, u_ in zip(lo, hi)] + [(0.0, None)]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(2 * (K - 2)), bounds=bounds, method="highs")
    if res.status != 0:
        raise ModelError(f"the lower-bound programme failed: {res.message}")
    return {"lower_bound_m_s2": float(res.x[-1]), "speed_m_s": float(V), "grid_m": float(dx),
            "status": str(res.message)}


def lateral_acceleration(ref: Reference, t: ArrayLike) -> NDArray[np.float64]:
    """Acceleration of the mass centre ``G`` along the body's lateral axis ``j_1``:
    ``a_y = −sin ψ ẍ + cos ψ ÿ`` [m/s²] of the reference at the times ``t`` (coordinates
    ``x, y, ψ`` first, as in the single-track models)."""
    x, xdd = ref.x(t), ref.xdd(t)
    return -np.sin(x[:, 2]) * xdd[:, 0] + np.cos(x[:, 2]) * xdd[:, 1]


def cone_clearance(x: ArrayLike, a: float, b: float, track: Iso3888Track = ISO_TRACK, *,
                   front_overhang: float = 0.9, rear_overhang: float = 1.0) -> float:
    """Smallest lateral distance [m] from the car body's corners to the cone lines of the lanes
    they are in, over the motion ``x`` (N, ≥3: ``x, y, ψ`` of ``G``); negative when a corner
    is outside a lane.

    The body is a rectangle of width ``track.vehicle_width`` from ``a + front_overhang`` ahead
    of ``G`` to ``b + rear_overhang`` behind it (0.9 m and 1.0 m, typical; chosen here). The
    motion must be sampled densely enough (every few centimetres) for the minimum to be sharp.
    """
    X = np.atleast_2d(np.asarray(x, dtype=float))
    c, s = np.cos(X[:, 2]), np.sin(X[:, 2])
    out = np.inf
    for lx in (a + front_overhang, -(b + rear_overhang)):
        for ly in (track.vehicle_width / 2, -track.vehicle_width / 2):
            px, py = X[:, 0] + lx * c - ly * s, X[:, 1] + lx * s + ly * c
            for X0, X1, yc, w in track.lanes:
                m = (px >= X0) & (px <= X1)
                if m.any():
                    out = min(out, float(np.min(w / 2 - np.abs(py[m] - yc))))
    return float(out)


@lru_cache(maxsize=1)
def _flat_map() -> Any:
    """Symbolic flatness map (derived here): ``(XR, Y, Y1..Y4, V, a, b) -> x, ẋ, ẍ``."""
    t, V, a, b, X0 = sp.symbols("t V a b X0", real=True)
    Ys = sp.symbols("Y0:5", real=True)
    Yt = sp.Function("Y")(t)
    XR = X0 + V * t
    psi = sp.atan(Yt.diff(t) / V)
    kappa = V * Yt.diff(t, 2) / (V ** 2 + Yt.diff(t) ** 2) ** sp.Rational(3, 2)
    gam = sp.atan((a + b) * kappa)
    q = sp.Matrix([XR + b * sp.cos(psi), Yt + b * sp.sin(psi), psi, gam])
    qd = q.diff(t)
    qdd = qd.diff(t)
    sub = {Yt.diff(t, k): V ** k * Ys[k] for k in range(4, 0, -1)}
    sub[Yt] = Ys[0]
    exprs = [[e.subs(sub) for e in m] for m in (q, qd, qdd)]
    args = [X0, t, *Ys, V, a, b]
    return sp.lambdify(args, exprs, "numpy", cse=True)


def flat_states(path: LaneChangePath, t: ArrayLike, V: float, a: float, b: float,
                x_start: float = 0.0) -> tuple[NDArray[np.float64], ...]:
    """Coordinates ``[x, y, ψ, γ]`` of ``G`` and their rates from the flat output (derived here).

    Parameters
    ----------
    path : LaneChangePath
    t : (N,) array_like
        Times [s]; the rear axle is at ``X_R = x_start + V t``.
    V : float
        Longitudinal speed of the rear-axle centre along the road [m/s].
    a, b : float
        Distances from ``G`` to the front and rear axles [m].

    Returns
    -------
    x, xd, xdd : (N, 4) ndarray
    """
    tt = np.atleast_1d(np.asarray(t, dtype=float))
    X = x_start + V * tt
    Y = [path(X, k) for k in range(5)]
    f = _flat_map()
    q, qd, qdd = f(x_start, tt, *Y, V, a, b)

    def stack(m: Any) -> NDArray[np.float64]:
        return np.column_stack([np.broadcast_to(np.asarray(e, dtype=float), tt.shape) for e in m])

    return stack(q), stack(qd), stack(qdd)


class _FlatInputs:
    """``u0(t)`` of the lane change by inverse dynamics, Eq. (2.112) (``F_F = 0``).

    ``drive`` are the inputs found by inverse dynamics; with ``assigned`` the model is the
    ``force`` skate: ``x`` holds ``x, y, ψ`` and the inputs ``gamma``, ``gamma_rate`` are the
    flat ``γ``, ``γ̇``, set before inverse dynamics (``D`` depends on ``γ``).
    """

    def __init__(self, cm: CompiledModel, path: LaneChangePath, V: float, a: float, b: float,
                 x_start: float, drive: tuple[str, ...] = DRIVE_INPUTS,
                 assigned: bool = False) -> None:
        self.cm, self.path, self.V, self.a, self.b, self.x_start = cm, path, V, a, b, x_start
        self.cols = [list(cm.inputs).index(s) for s in drive]
        self.assigned = assigned

    def __call__(self, t: ArrayLike) -> NDArray[np.float64]:
        tt = np.atleast_1d(np.asarray(t, dtype=float))
        x, xd, xdd = flat_states(self.path, tt, self.V, self.a, self.b, self.x_start)
        k = len(self.cm.inputs)
        u = np.zeros((tt.size, k))
        if self.assigned:
            names = list(self.cm.inputs)
            u[:, names.index("gamma")], u[:, names.index("gamma_rate")] = x[:, 3], xd[:, 3]
            x, xd, xdd = x[:, :3], xd[:, :3], xdd[:, :3]
        At = np.stack([np.asarray(self.cm.dQ_du(x[i], xd[i], u[i]))[:, self.cols]
                       for i in range(tt.size)])
        res = inverse_dynamics(self.cm, x, xd, xdd, u, actuation=At, t=tt)
        u[:, self.cols] = res.tau
        return u


class _FlatInputRates:
    """``u̇0(t) = [Ḟ_R, 0, γ̇, γ̈]`` of the assigned-steering lane change (``Ḟ_R`` by a central
    difference of step `_RATE_STEP`, ``γ̇``, ``γ̈`` exact from flatness)."""

    def __init__(self, inputs: _FlatInputs) -> None:
        self.inputs = inputs

    def __call__(self, t: ArrayLike) -> NDArray[np.float64]:
        f = self.inputs
        tt = np.atleast_1d(np.asarray(t, dtype=float))
        _, xd, xdd = flat_states(f.path, tt, f.V, f.a, f.b, f.x_start)
        names = list(f.cm.inputs)
        ud = np.zeros((tt.size, len(names)))
        ud[:, f.cols] = ((f(tt + _RATE_STEP) - f(tt - _RATE_STEP)) / (2 * _RATE_STEP))[:, f.cols]
        ud[:, names.index("gamma")], ud[:, names.index("gamma_rate")] = xd[:, 3], xdd[:, 3]
        return ud


def _check_model(cm: CompiledModel, expected: tuple[tuple[str, ...], tuple[str, ...]], variant: str,
                 other: str) -> None:
    if (tuple(cm.coordinates), tuple(cm.inputs)) != expected:
        raise ReferenceMotionError(
            f"{'lane_change_reference' if variant == 'force_torque' else 'assigned_steering_reference'}"
            f" needs the compiled single_track {variant!r} model (coordinates "
            f"{', '.join(expected[0])}; inputs {', '.join(expected[1])}), got coordinates "
            f"{list(cm.coordinates)} and inputs {list(cm.inputs)}; {other}")


def _path_and_geometry(cm: CompiledModel, V: float, path: LaneChangePath | None, t_final: float | None,
                       x_start: float) -> tuple[LaneChangePath, float, float, float]:
    if not (np.isfinite(V) and V > 0):
        raise ReferenceMotionError(f"V must be a positive finite speed [m/s], got {V!r}")
    path = iso_3888_1_path(x_start=x_start) if path is None else path
    p = dict(zip(cm.parameters, cm.param_vector()))
    if t_final is None:
        t_final = sum(ISO_3888_1_SECTIONS) / V + 2.0
    return path, float(p["a"]), float(p["b"]), float(t_final)


def lane_change_reference(cm: CompiledModel, V: float = SPEED, *, path: LaneChangePath | None = None,
                          t_final: float | None = None, x_start: float = 0.0) -> Reference:
    """Reference motion of the double lane change for ``single_track.build("force_torque")``.

    Parameters
    ----------
    cm : CompiledModel
        The compiled ``force_torque`` skate model (coordinates ``x, y, psi, gamma``, inputs
        ``F_R, F_F, T``).
    V : float, default `SPEED` (15 m/s)
        Longitudinal speed of the rear-axle centre [m/s].
    path : LaneChangePath, optional
        Default [`iso_3888_1_path`][nhcontrol.models.lane_change.iso_3888_1_path] starting at ``x_start``.
    t_final : float, optional
        End of ``t_range``; default the time to cover the whole track plus 2 s.
    x_start : float
        ``X_R`` at ``t = 0``.

    Returns
    -------
    Reference
        ``x0, ẋ0, ẍ0`` exact from flatness; ``u0`` by inverse dynamics with the actuation of
        ``F_R`` and ``T``; ``Λ0`` by inverse dynamics (admissibility checked).

    Raises
    ------
    ReferenceMotionError
        Wrong model, or a speed that is not positive and finite.
    """
    _check_model(cm, _FORCE_TORQUE, "force_torque", "for the 'force' model (steering angle "
                 "assigned) use assigned_steering_reference")
    path, a, b, t_final = _path_and_geometry(cm, V, path, t_final, x_start)
    f = _FlatInputs(cm, path, float(V), a, b, x_start)

    def fx(k: int) -> Any:
        return lambda t: flat_states(path, t, float(V), a, b, x_start)[k]

    return Reference.from_functions(cm, fx(0), fx(1), fx(2), u=f, t_range=(0.0, t_final))


def assigned_steering_reference(cm: CompiledModel, V: float = SPEED, *,
                                path: LaneChangePath | None = None,
                                t_final: float | None = None, x_start: float = 0.0) -> Reference:
    """Reference motion of the double lane change for ``single_track.build("force")``.

    The steering angle is assigned: ``γ`` is an input that enters the front skate constraint,
    so the reference carries the input rates ``u̇0`` (docs/theory/road_vehicles.md, "Inputs in
    the constraints").

    Parameters
    ----------
    cm : CompiledModel
        The compiled ``force`` skate model (coordinates ``x, y, psi``, inputs ``F_R, F_F, gamma,
        gamma_rate``).
    V, path, t_final, x_start
        As in [`lane_change_reference`][nhcontrol.models.lane_change.lane_change_reference].

    Returns
    -------
    Reference
        ``x0, ẋ0, ẍ0`` (``x, y, ψ``) exact from flatness; ``u0 = [F_R, 0, γ, γ̇]`` with ``γ``,
        ``γ̇`` from flatness and ``F_R`` by inverse dynamics with the actuation of ``F_R``
        (``n − l = 1`` independent acceleration); ``u̇0 = [Ḟ_R, 0, γ̇, γ̈]`` (``γ̈`` exact,
        ``Ḟ_R`` by a central difference); ``Λ0`` by inverse dynamics (admissibility checked
        with ``Q_d − E u̇0``).

    Raises
    ------
    ReferenceMotionError
        Wrong model, or a speed that is not positive and finite.
    """
    _check_model(cm, _FORCE, "force", "for the 'force_torque' model (steering angle a "
                 "coordinate) use lane_change_reference")
    path, a, b, t_final = _path_and_geometry(cm, V, path, t_final, x_start)
    f = _FlatInputs(cm, path, float(V), a, b, x_start, ASSIGNED_DRIVE_INPUTS, assigned=True)

    def fx(k: int) -> Any:
        return lambda t: flat_states(path, t, float(V), a, b, x_start)[k][:, :3]

    return Reference.from_functions(cm, fx(0), fx(1), fx(2), u=f, ud=_FlatInputRates(f),
                                    t_range=(0.0, t_final))


def lateral_error(ref: Reference, t: ArrayLike, x: ArrayLike) -> NDArray[np.float64]:
    """Lateral deviation of ``G`` from its reference position, normal to the reference heading.

    ``e = -(x - x0) sin ψ0 + (y - y0) cos ψ0`` [m] at each time (positive to the left).
    """
    X = np.atleast_2d(np.asarray(x, dtype=float))
    X0 = np.atleast_2d(ref.x(t))
    psi0 = X0[:, 2]
    return -(X[:, 0] - X0[:, 0]) * np.sin(psi0) + (X[:, 1] - X0[:, 1]) * np.cos(psi0)
