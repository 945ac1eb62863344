"""Residuals of a motion in the constraints and in the equations of motion."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np
from numpy.typing import NDArray

from nhcontrol._util.errors import ReferenceMotionError
from nhcontrol._util.validation import readonly

from ._eval import ModelEvaluator
from nhcontrol._util.reprs import concise_repr

__all__ = ["ResidualReport", "compute_residuals", "RESIDUAL_KINDS"]

RESIDUAL_KINDS = {
    "holonomic": ("|C(x)|", "Eq. (2.109)"),
    "velocity": ("|D xd|", "Eq. (2.114)"),
    "acceleration": ("|D xdd - Qd|", "Eq. (2.116)"),
    "dynamics": ("|M xdd + Dᵀλ - Q|", "Eq. (2.108)"),
}
"""The four residuals, their formula and thesis equation."""


@dataclass(frozen=True)
class ResidualReport:
    """Residuals of a motion at sample times (all absolute, infinity norm per sample).

    Attributes
    ----------
    t : (N,) ndarray
        Sample times.
    holonomic : (N,) ndarray
        ``max_i |C_i(x)|`` (Eq. (2.109)); zeros when ``m = 0``.
    velocity : (N,) ndarray
        ``max_i |(D xd)_i|`` (Eq. (2.114)).
    acceleration : (N,) ndarray
        ``max_i |(D xdd - Qd)_i|`` (Eq. (2.116)).
    dynamics : (N,) ndarray
        ``max_j |(M xdd + Dᵀλ - Q)_j|`` (Eq. (2.108)).
    tol : float
        Absolute tolerance every residual is compared with.
    worst : mapping (read-only)
        For each kind, the name of the constraint (or coordinate, for ``dynamics``) where the
        maximum occurs.
    """

    __repr__ = concise_repr

    t: NDArray[np.float64]
    holonomic: NDArray[np.float64]
    velocity: NDArray[np.float64]
    acceleration: NDArray[np.float64]
    dynamics: NDArray[np.float64]
    tol: float
    worst: Mapping[str, str | None]

    def _max(self, kind: str) -> tuple[float, float]:
        arr = getattr(self, kind)
        if arr.size == 0:
            return 0.0, 0.0
        i = int(np.argmax(arr))
        return float(arr[i]), float(self.t[i])

    @property
    def max_holonomic(self) -> float:
        """Largest ``|C|``."""
        return self._max("holonomic")[0]

    @property
    def max_velocity(self) -> float:
        """Largest ``|D xd|``."""
        return self._max("velocity")[0]

    @property
    def max_acceleration(self) -> float:
        """Largest ``|D xdd - Qd|``."""
        return self._max("acceleration")[0]

    @property
    def max_dynamics(self) -> float:
        """Largest ``|M xdd + Dᵀλ - Q|``."""
        return self._max("dynamics")[0]

    @property
    def maxima(self) -> dict[str, float]:
        """``{kind: max residual}`` for the four kinds."""
        return {k: self._max(k)[0] for k in RESIDUAL_KINDS}

    @property
    def argmax_t(self) -> dict[str, float]:
        """``{kind: time of the max residual}``."""
        return {k: self._max(k)[1] for k in RESIDUAL_KINDS}

    @property
    def failures(self) -> tuple[str, ...]:
        """Kinds whose maximum exceeds ``tol``."""
        return tuple(k for k, v in self.maxima.items() if not v <= self.tol)

    @property
    def ok(self) -> bool:
        """True when every residual is within ``tol``."""
        return not self.failures

    def __str__(self) -> str:
        lines = [f"ResidualReport over {self.t.size} samples, t in "
                 f"[{self.t.min():.6g}, {self.t.max():.6g}], tol = {self.tol:.1e}: "
                 f"{'ok' if self.ok else 'FAILED'}"]
        for k, (formula, eq) in RESIDUAL_KINDS.items():
            v, tt = self._max(k)
            flag = "ok" if v <= self.tol else "FAIL"
            w = self.worst.get(k)
            lines.append(f"  {k:<13}{formula:<20}{eq:<13} max {v:.3e} at t = {tt:.6g}"
                         + (f" ({w})" if w else "") + f"  {flag}")
        return "\n".join(lines)

    def raise_if_failed(self, what: str = "the reference motion") -> None:
        """Raise `ReferenceMotionError` listing every residual above ``tol``."""
        if self.ok:
            return
        parts = []
        for k in self.failures:
            formula, eq = RESIDUAL_KINDS[k]
            v, tt = self._max(k)
            w = self.worst.get(k)
            parts.append(f"{k} residual {formula} ({eq}) = {v:.3e} at t = {tt:.6g}"
                         + (f" in {w!r}" if w else ""))
        raise ReferenceMotionError(
            f"{what} violates the equations of motion beyond tol = {self.tol:.1e}: "
            + "; ".join(parts)
            + ". Check the coordinates, velocities and accelerations (and the multipliers and "
            "inputs) of the motion, or loosen tol if the motion comes from interpolated data.")


def compute_residuals(ev: ModelEvaluator, t: NDArray[np.float64], x: NDArray[np.float64],
                      xd: NDArray[np.float64], xdd: NDArray[np.float64],
                      lam: NDArray[np.float64], u: NDArray[np.float64] | None,
                      tol: float, ud: NDArray[np.float64] | None = None) -> ResidualReport:
    """Evaluate the four residuals at stacked samples (see [`ResidualReport`][nhcontrol.reference.ResidualReport]).

    Parameters
    ----------
    ev : ModelEvaluator
    t : (N,) ndarray
    x, xd, xdd : (N, n) ndarray
    lam : (N, m + l) ndarray
    u : (N, k) ndarray or None
    tol : float
    ud : (N, k) ndarray, optional
        Input rates (inputs in the nonholonomic constraints: ``D ẍ = Q_d − E u̇``).
    """
    N = x.shape[0]
    C = ev.C(x, u)
    D = ev.D(x, u)
    Qd = ev.Qd(x, xd, u, ud)
    M = ev.M(x, u)
    Q = ev.Q(x, xd, u)
    Dxd = np.einsum("nij,nj->ni", D, xd) + ev.b(x, u)          # D ẋ + b (affine rows)
    acc = np.einsum("nij,nj->ni", D, xdd) - Qd
    dyn = np.einsum("nij,nj->ni", M, xdd) + np.einsum("nji,nj->ni", D, lam) - Q

    def rowmax(a: NDArray, names: tuple[str, ...]) -> tuple[NDArray, str | None]:
        if a.shape[1] == 0:
            return np.zeros(N), None
        r = np.max(np.abs(a), axis=1)
        i = int(np.argmax(r))
        return r, names[int(np.argmax(np.abs(a[i])))]

    hol, wh = rowmax(C, ev.holonomic)
    vel, wv = rowmax(Dxd, ev.constraints)
    ac, wa = rowmax(acc, ev.constraints)
    dy, wd = rowmax(dyn, ev.coordinates)
    worst = {"holonomic": wh, "velocity": wv, "acceleration": wa, "dynamics": wd}
    if not (np.isfinite(tol) and tol > 0):
        raise ReferenceMotionError(f"tol must be a positive number, got {tol!r}")
    return ResidualReport(t=readonly(np.array(t, dtype=float)), holonomic=readonly(hol),
                          velocity=readonly(vel), acceleration=readonly(ac), dynamics=readonly(dy),
                          tol=float(tol), worst=MappingProxyType(worst))
