"""Friction utilisation of the wheel contacts: ``|F_t| / (μ N)`` from the constraint multipliers.

A no-slip (nonholonomic) wheel can transmit any tangential force; a real tyre transmits at most
``μ N``. The multipliers ``Λ`` of the equations of motion ``M ẍ + Dᵀ Λ = Q`` (Eq. (2.119); the
reaction on the system is ``−Dᵀ Λ``, Eq. (2.106)) are the contact forces: a wheel constraint
written as ``n · v_P = 0`` with a unit direction ``n`` (the velocity of the contact point ``P``
along ``n``) has the row ``D_i = nᵀ ∂v_P/∂ẋ``, so its reaction is the force ``−Λ_i n`` at ``P``
(derived here). The tangential contact force of a wheel is then the Euclidean norm of the
multipliers of its tangential constraints (orthogonal directions), and the normal load either
the multiplier of its height constraint (``|Λ_z|``, models with vertical dynamics) or a given
load (the static load split of a planar model). The utilisation ``|F_t| / (μ N)`` must stay
below 1 for the no-slip model to be valid (Coulomb's friction circle).

Constraint names of the library's models ([`wheel_contacts`][nhcontrol.reference.friction.wheel_contacts]
finds them):

- single-track skates (`nhcontrol.models.single_track`): ``rear_skate`` (``j_1 · v_R = 0``) and
  ``front_skate`` (``j_F · v_F = 0``), lateral forces only; the rigid-wheel variants add the
  longitudinal ``rear_rolling``, ``front_rolling`` (``i · v_P = r_w φ̇``) to ``rear_lateral``,
  ``front_lateral``. No vertical dynamics: pass ``normal_loads``
  (`nhcontrol.models.single_track.static_axle_loads`). The prescribed speed ``speed`` of the
  kinematic and torque variants is not a wheel constraint (a drive force at ``G``) and is left out;
- benchmark bicycle and e-scooter (`nhcontrol.models.benchmark_bicycle`,
  `nhcontrol.models.escooter`): contacts ``P`` (rear) and ``Q`` (front) with the horizontal
  velocity constraints ``P_vx, P_vy`` (world axes) and the height constraint ``P_z``, whose
  multiplier is ``−N`` (`benchmark_bicycle.steady_forward_multipliers`);
- the sleigh's ``blade_lateral``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ReferenceMotionError
from ._eval import ModelEvaluator
from nhcontrol._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["FrictionUtilisation", "friction_utilisation", "wheel_contacts", "FrictionError",
           "FrictionLimitWarning"]


class FrictionLimitWarning(UserWarning):
    """A motion needs more tangential force than friction provides (utilisation > 1): the
    no-slip (nonholonomic) wheel model is outside its validity there."""


class FrictionError(ReferenceMotionError):
    """A friction-utilisation request that cannot be evaluated (missing normal loads, unknown
    constraint names, a non-positive friction coefficient or normal load)."""


_KNOWN: tuple[tuple[str, tuple[str, ...], str | None], ...] = (
    ("rear", ("rear_skate",), None),
    ("front", ("front_skate",), None),
    ("rear", ("rear_lateral", "rear_rolling"), None),
    ("front", ("front_lateral", "front_rolling"), None),
    ("P", ("P_vx", "P_vy"), "P_z"),
    ("Q", ("Q_vx", "Q_vy"), "Q_z"),
    ("blade", ("blade_lateral",), None),
)


def wheel_contacts(cm: CompiledModel) -> dict[str, tuple[tuple[str, ...], str | None]]:
    """Wheels of a library model from its constraint names: ``{wheel: (tangential constraints,
    normal constraint or None)}`` (see the module notes for the names recognised).

    Raises
    ------
    FrictionError
        No wheel constraint recognised (pass ``wheels=`` to `friction_utilisation`).
    """
    names = set(ModelEvaluator(cm).constraints)
    out: dict[str, tuple[tuple[str, ...], str | None]] = {}
    for wheel, tang, normal in _KNOWN:
        if set(tang) <= names:
            out[wheel] = (tang, normal if normal in names else None)
    if not out:
        raise FrictionError(
            f"no wheel constraint recognised among the constraints {sorted(names)} of model "
            f"{getattr(cm, 'name', '?')!r}; pass wheels={{'wheel': (['<tangential constraints>'], "
            f"'<normal constraint or None>')}}")
    return out


@dataclass(frozen=True)
class FrictionUtilisation:
    """Contact forces and friction utilisation per wheel and time.

    Attributes
    ----------
    t : (N,) ndarray
    wheels : tuple of str
    tangential : (N, w) ndarray
        ``|F_t|`` [N]: norm of the tangential contact force of each wheel.
    components : dict
        ``{constraint name: (N,) multipliers}`` [N] of the tangential and normal constraints
        used (the reaction along ``n`` is ``−Λ``).
    normal : (N, w) ndarray
        Normal load ``N`` [N].
    utilisation : (N, w) ndarray
        ``|F_t| / (μ N)``.
    mu : float
    """

    __repr__ = concise_repr

    t: NDArray[np.float64]
    wheels: tuple[str, ...]
    tangential: NDArray[np.float64]
    components: dict[str, NDArray[np.float64]]
    normal: NDArray[np.float64]
    utilisation: NDArray[np.float64]
    mu: float

    @property
    def peak(self) -> float:
        """Largest utilisation over wheels and times."""
        return float(np.max(self.utilisation))

    @property
    def peak_wheel(self) -> str:
        """Wheel of the largest utilisation."""
        return self.wheels[int(np.argmax(np.max(self.utilisation, axis=0)))]

    @property
    def peak_time(self) -> float:
        """Time [s] of the largest utilisation."""
        return float(self.t[int(np.argmax(np.max(self.utilisation, axis=1)))])

    @property
    def valid(self) -> bool:
        """True when every wheel stays inside its friction circle (utilisation ≤ 1)."""
        return self.peak <= 1.0

    def summary(self) -> dict[str, Any]:
        """JSON-ready peaks: ``peak_friction_utilisation``, its wheel and time, per-wheel peaks
        and peak tangential forces [N]."""
        return {"peak_friction_utilisation": self.peak, "peak_wheel": self.peak_wheel,
                "peak_time_s": self.peak_time, "mu": self.mu,
                "per_wheel": {w: float(np.max(self.utilisation[:, i]))
                              for i, w in enumerate(self.wheels)},
                "peak_tangential_force_N": {w: float(np.max(self.tangential[:, i]))
                                            for i, w in enumerate(self.wheels)}}


def _multipliers(cm: CompiledModel, source: Any, t: ArrayLike | None, p: Any
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(t, Λ)`` of a Reference, a result with ``lam``, or a trajectory ``t, x, xd, u[, ud]``
    (the saddle-point system of Eq. (2.119) solved at each sample with the parameters ``p``)."""
    if callable(getattr(source, "lam", None)):                      # a Reference
        tt = np.asarray(source.default_times(401) if t is None else t, dtype=float).ravel()
        return tt, np.atleast_2d(np.asarray(source.lam(tt), dtype=float))
    if t is not None:
        raise FrictionError("t is only accepted with a Reference; a simulation result is "
                            "evaluated at its own times")
    missing = [a for a in ("t", "x", "xd") if not hasattr(source, a)]
    if missing:
        raise FrictionError(f"source must be a Reference, a simulation result (t, x, xd, u, lam) "
                            f"or a trajectory with t, x, xd, u; {type(source).__name__} has no "
                            f"{missing}")
    tt = np.asarray(source.t, dtype=float).ravel()
    lam = getattr(source, "lam", None)
    if lam is not None:
        return tt, np.atleast_2d(np.asarray(lam, dtype=float))
    ev = ModelEvaluator(cm, p)
    x = ev.states(source.x, "x", error=FrictionError)
    xd = ev.states(source.xd, "xd", error=FrictionError)
    N, n, ml = x.shape[0], ev.n, ev.m + ev.l
    u = ev.input_stack(getattr(source, "u", None), N, error=FrictionError)
    ud = getattr(source, "ud", None)
    ud = None if ud is None else ev.input_stack(ud, N, error=FrictionError)
    M, D = ev.M(x, u), ev.D(x, u)
    Q, Qd = ev.Q(x, xd, u), ev.Qd(x, xd, u, ud)
    K = np.zeros((N, n + ml, n + ml))
    K[:, :n, :n], K[:, :n, n:], K[:, n:, :n] = M, np.transpose(D, (0, 2, 1)), D
    sol = np.linalg.solve(K, np.concatenate([Q, Qd], axis=1)[..., None])[..., 0]
    return tt, sol[:, n:]


def friction_utilisation(cm: CompiledModel, source: Any, mu: float,
                         normal_loads: Mapping[str, float | ArrayLike] | None = None, *,
                         wheels: Mapping[str, tuple[Sequence[str], str | None]] | None = None,
                         t: ArrayLike | None = None, p: Any = None) -> FrictionUtilisation:
    """Friction utilisation ``|F_t| / (μ N)`` per wheel and time from the constraint multipliers.

    Parameters
    ----------
    cm : CompiledModel
    source : Reference or simulation result or trajectory
        A [`Reference`][nhcontrol.reference.Reference] (``Λ0(t)``, at the times ``t``, default
        401 points over its range), a result with ``t`` and ``lam`` (``forward_dynamics``), or
        any object with ``t, x, xd, u`` (and optionally ``ud``: input rates of inputs in the
        constraints), e.g. a ``PiecewiseLinearLoop``: then ``ẍ, Λ`` are solved from Eq. (2.119)
        at each sample with the parameters ``p`` (those of the simulated plant).
    mu : float
        Friction coefficient (e.g. 0.9 on a dry road).
    normal_loads : mapping, optional
        ``{wheel: N}`` [N] (a number or an (N,) array over time), for the wheels without a
        normal constraint (planar models: the static load split,
        `nhcontrol.models.single_track.static_axle_loads`); overrides the model's normal load
        where both exist.
    wheels : mapping, optional
        ``{wheel: (tangential constraint names, normal constraint name or None)}``; default
        [`wheel_contacts`][nhcontrol.reference.friction.wheel_contacts] ``(cm)``. Each
        tangential constraint must be written ``n · v_P = 0`` with ``|n| = 1`` (as the library's
        wheel constraints are) so that its multiplier is a force in newtons.
    t : array_like, optional
        Times of a Reference source.
    p : array_like or mapping, optional
        Parameters of the trajectory source (default the model's).

    Returns
    -------
    FrictionUtilisation

    Raises
    ------
    FrictionError
        ``mu`` not positive and finite, an unknown constraint name, a wheel without a normal load,
        a non-positive normal load.
    """
    if not (np.isfinite(mu) and mu > 0):
        raise FrictionError(f"mu must be a positive finite friction coefficient, got {mu!r}")
    names = list(ModelEvaluator(cm).constraints)
    wheels = dict(wheel_contacts(cm) if wheels is None else wheels)
    normal_loads = dict(normal_loads or {})
    unknown = sorted(set(normal_loads) - set(wheels))
    if unknown:
        raise FrictionError(f"normal_loads names unknown wheels {unknown}; the wheels are "
                            f"{sorted(wheels)}")
    tt, lam = _multipliers(cm, source, t, p)
    if lam.shape != (tt.size, len(names)):
        raise FrictionError(f"multipliers of shape {lam.shape} do not match {tt.size} times and "
                            f"the {len(names)} constraints {names}")
    Ft, Nn, comps = [], [], {}
    for w, (tang, normal) in wheels.items():
        bad = [c for c in (*tang, *([normal] if normal else [])) if c not in names]
        if bad:
            raise FrictionError(f"wheel {w!r}: constraints {bad} are not constraints of the model "
                                f"(its constraints are {names})")
        cols = [names.index(c) for c in tang]
        for c, j in zip(tang, cols):
            comps[c] = lam[:, j].copy()
        Ft.append(np.sqrt(np.sum(lam[:, cols] ** 2, axis=1)))
        if w in normal_loads:
            Nw = np.broadcast_to(np.asarray(normal_loads[w], dtype=float), tt.shape).copy()
        elif normal:
            comps[normal] = lam[:, names.index(normal)].copy()
            Nw = np.abs(comps[normal])
        else:
            raise FrictionError(
                f"wheel {w!r} has no normal constraint (the model has no vertical dynamics): pass "
                f"normal_loads={{'{w}': N}} in newtons, e.g. the static load split "
                "(nhcontrol.models.single_track.static_axle_loads(cm) for the single-track models)")
        if not np.all(np.isfinite(Nw)) or np.any(Nw <= 0):
            raise FrictionError(f"wheel {w!r}: the normal load must be positive and finite (a "
                                f"wheel that lifts off has no friction), got min "
                                f"{float(np.min(Nw)):.6g} N")
        Nn.append(Nw)
    Ft_a, N_a = np.column_stack(Ft), np.column_stack(Nn)
    return FrictionUtilisation(t=tt, wheels=tuple(wheels), tangential=Ft_a, components=comps,
                               normal=N_a, utilisation=Ft_a / (float(mu) * N_a), mu=float(mu))
