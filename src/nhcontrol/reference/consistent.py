"""Consistent initial conditions: ``C(x) = 0`` and ``D(x) ẋ = 0`` with chosen free coordinates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import PartitionError, SolverError
from nhcontrol._util.validation import COND_MAX, readonly
from ._eval import ModelEvaluator
from nhcontrol._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition


class _LazyScipyLinalg:
    """``scipy.linalg``, imported at first use (loading nhcontrol needs no scipy)."""

    def __getattr__(self, name: str):  # noqa: ANN204
        import scipy.linalg

        return getattr(scipy.linalg, name)


sla = _LazyScipyLinalg()

__all__ = ["InitialConditions", "consistent_initial_conditions"]


@dataclass(frozen=True)
class InitialConditions:
    """Initial coordinates and velocities that satisfy the constraints.

    Unpacks as ``x0, xd0 = consistent_initial_conditions(...)``.

    Attributes
    ----------
    x : (n,) ndarray
        Coordinates with ``|C(x)| <= tol``.
    xd : (n,) ndarray
        Velocities with ``|D(x) ẋ| <= tol``.
    dependent_positions : tuple of str
        The ``m`` coordinates solved from ``C(x) = 0``.
    dependent_velocities : tuple of str
        The ``m + l`` velocities solved from ``D(x) ẋ = 0``.
    iterations : int
        Newton iterations used.
    holonomic_residual, velocity_residual : float
        Final ``max |C|`` and ``max |D ẋ|``.
    cond_position, cond_velocity : float
        Condition numbers of ``∂C/∂x_d`` and ``D_dd`` (Eq. (2.76)) at the solution.
    """

    __repr__ = concise_repr

    x: NDArray[np.float64]
    xd: NDArray[np.float64]
    dependent_positions: tuple[str, ...]
    dependent_velocities: tuple[str, ...]
    iterations: int
    holonomic_residual: float
    velocity_residual: float
    cond_position: float
    cond_velocity: float

    def __iter__(self) -> Iterator[NDArray[np.float64]]:
        yield self.x
        yield self.xd


def _indices(names: Sequence[str], coords: tuple[str, ...], what: str) -> list[int]:
    if isinstance(names, str):
        names = [names]
    names = list(names)
    unknown = [s for s in names if s not in coords]
    dup = sorted({s for s in names if names.count(s) > 1})
    if unknown or dup:
        raise PartitionError(f"{what} must be coordinate names from {list(coords)}; "
                             + (f"unknown: {unknown}" if unknown else "")
                             + ("; " if unknown and dup else "")
                             + (f"duplicated: {dup}" if dup else ""))
    return [coords.index(s) for s in names]


def _cond(A: NDArray) -> float:
    if A.size == 0:
        return 1.0
    s = np.linalg.svd(A, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")


def consistent_initial_conditions(cm: CompiledModel, x_guess: ArrayLike, xd_guess: ArrayLike, *,
                                  independent: Sequence[str] | None = None,
                                  dependent: Sequence[str] | None = None,
                                  partition: Partition | Mapping[str, Any] | None = None,
                                  u: ArrayLike | None = None,
                                  p: ArrayLike | Mapping[str, float] | None = None,
                                  tol: float = 1e-12, max_iter: int = 50) -> InitialConditions:
    """Make ``(x, ẋ)`` satisfy the holonomic and velocity constraints.

    Position level: Newton iterations on ``C(x) = 0`` (Eq. (2.109)) for ``m`` dependent
    coordinates ``x_d``, all others fixed: ``x_d <- x_d - (∂C/∂x_d)⁻¹ C(x)``.
    Velocity level: the linear solve of ``D(x) ẋ = 0`` (Eq. (2.81)) for the ``m + l``
    dependent velocities, ``D_dd ẋ_dd = -D_ai ẋ_ai`` (Eq. (2.76)), keeping the independent
    velocities fixed.

    Parameters
    ----------
    cm : CompiledModel
    x_guess, xd_guess : (n,) array_like
        Starting point; the independent entries are kept.
    independent : sequence of str
        The ``n - m - l`` independent coordinates ``x_ai`` (their positions and velocities are
        kept).
    dependent : sequence of str, optional
        The ``m`` coordinates solved at position level (``x_d``, among the non-independent
        ones). Default: chosen by column-pivoted QR of ``Cx`` on the non-independent columns.
    partition : Partition or mapping, optional
        Instead of ``independent``/``dependent``: an object or dict with ``independent`` and
        ``dependent`` entries, e.g. ``nhcontrol.linearization.Partition`` or the partition dicts of
        the models (``benchmark_bicycle.PARTITION_4_172``); Eq. (4.96).
    u, p : optional
        Inputs and parameters.
    tol : float
        Absolute tolerance on ``max |C|`` (Newton) and the velocity residual check.
    max_iter : int
        Newton iteration limit.

    Returns
    -------
    InitialConditions
        Unpacks to ``x0, xd0``.

    Raises
    ------
    PartitionError
        Unknown/duplicate names, wrong counts, or a singular ``∂C/∂x_d`` or ``D_dd``
        (the message gives the condition number).
    SolverError
        The Newton iterations did not converge (the residual history is reported).
    """
    ev = ModelEvaluator(cm, p)
    n, m, l = ev.n, ev.m, ev.l
    coords = ev.coordinates
    if partition is not None:
        if independent is not None or dependent is not None:
            raise PartitionError("give either partition=... or independent=/dependent=, not both")
        get = (partition.get if isinstance(partition, Mapping)
               else lambda key: getattr(partition, key, None))
        independent, dependent = get("independent"), get("dependent")
        if independent is None:
            raise PartitionError(f"partition must provide 'independent' (and 'dependent') "
                                 f"coordinate names, got {partition!r}")
        dependent = None if dependent is None else list(dependent)
    if independent is None:
        raise PartitionError(f"give the n - m - l = {n - m - l} independent coordinates "
                             f"(independent=[...] from {list(coords)}) or partition=...")
    x = ev.states(x_guess, "x_guess", error=PartitionError)[0].copy()
    xd = ev.states(xd_guess, "xd_guess", error=PartitionError)[0].copy()
    U = ev.input_stack(u, 1, error=PartitionError)
    ind = _indices(independent, coords, "independent")
    if len(ind) != n - m - l:
        raise PartitionError(f"independent must list n - m - l = {n} - {m} - {l} = {n - m - l} "
                             f"coordinates, got {len(ind)}: {list(independent)}")
    rest = [j for j in range(n) if j not in ind]
    if dependent is not None:
        dep = _indices(dependent, coords, "dependent")
        clash = [coords[j] for j in dep if j in ind]
        if clash or len(dep) != m:
            raise PartitionError(f"dependent must list m = {m} coordinates not among the "
                                 f"independent ones, got {list(dependent)}"
                                 + (f" (also independent: {clash})" if clash else ""))
    elif m:
        Cx = ev.D(x[None], U)[0, :m]
        _, _, piv = sla.qr(Cx[:, rest], mode="economic", pivoting=True)
        dep = [rest[int(j)] for j in piv[:m]]
    else:
        dep = []

    # ---- position level: Newton on C(x) = 0 for x_d
    history: list[float] = []
    it = 0
    cond_p = 1.0
    if m:
        for it in range(max_iter + 1):
            C = ev.C(x[None], U)[0]
            res = float(np.max(np.abs(C)))
            history.append(res)
            if res <= tol:
                break
            if it == max_iter:
                raise SolverError(
                    f"Newton iterations on C(x) = 0 (Eq. (2.109)) for {[coords[j] for j in dep]} "
                    f"did not converge in {max_iter} iterations: max |C| history "
                    f"{[f'{h:.2e}' for h in history[-6:]]} (tol {tol:.1e}); start closer to the "
                    "constraint manifold or choose other dependent coordinates")
            J = ev.D(x[None], U)[0, :m][:, dep]
            cond_p = _cond(J)
            if not cond_p < COND_MAX:
                raise PartitionError(
                    f"∂C/∂x_d is singular for the dependent coordinates {[coords[j] for j in dep]} "
                    f"(cond = {cond_p:.3g} >= {COND_MAX:.0e}) at x = {x.tolist()}; choose other "
                    "dependent coordinates (dependent=...)")
            step = np.linalg.solve(J, C)
            if not np.all(np.isfinite(step)):
                raise SolverError("Newton step on C(x) = 0 is not finite; check the model/parameters")
            x[dep] -= step
        cond_p = _cond(ev.D(x[None], U)[0, :m][:, dep])

    # ---- velocity level: D_dd ẋ_dd = -D_ai ẋ_ai (Eq. (2.76))
    cond_v = 1.0
    vres = 0.0
    if m + l:
        D = ev.D(x[None], U)[0]
        Ddd, Dai = D[:, rest], D[:, ind]
        cond_v = _cond(Ddd)
        if not cond_v < COND_MAX:
            raise PartitionError(
                f"D_dd (Eq. (2.131)) is singular for the dependent velocities "
                f"{[coords[j] for j in rest]} (cond = {cond_v:.3g} >= {COND_MAX:.0e}); choose "
                "other independent coordinates")
        bv = ev.b(x[None], U)[0]                          # affine constraints D ẋ + b = 0
        xd[rest] = np.linalg.solve(Ddd, -Dai @ xd[ind] - bv)
        vres = float(np.max(np.abs(D @ xd + bv)))
    hres = float(np.max(np.abs(ev.C(x[None], U)[0]))) if m else 0.0
    return InitialConditions(x=readonly(x), xd=readonly(xd),
                             dependent_positions=tuple(coords[j] for j in dep),
                             dependent_velocities=tuple(coords[j] for j in rest),
                             iterations=int(it), holonomic_residual=hres, velocity_residual=vres,
                             cond_position=float(cond_p), cond_velocity=float(cond_v))
