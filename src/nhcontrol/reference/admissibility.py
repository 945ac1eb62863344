"""Is a reference motion a motion of the model? Scaled residuals of the constraints and the
equations of motion, checked when a `Reference` is built and when
`nhcontrol.linearize()` uses it.

A reference ``x0, ẋ0, ẍ0, Λ0, u0`` must satisfy, at every time used,

* the holonomic constraints ``C(x0) = 0`` (Eq. (2.109)),
* the velocity constraints ``D(x0) ẋ0 = 0`` (holonomic rows ``Cx ẋ0`` and nonholonomic rows
  ``B ẋ0``, Eq. (2.114)),
* their acceleration level ``D(x0) ẍ0 - Qd(x0, ẋ0) = 0`` (Eq. (2.116)),
* the dynamic equations ``M(x0, u0) ẍ0 + Dᵀ(x0) Λ0 - Q(x0, ẋ0, u0) = 0`` (Eq. (2.108)), with the
  input forces at the reference inputs ``u0`` inside ``Q``.

Each residual is compared with ``tol`` times the size of the terms that cancel in it (so the
test is independent of units and of the size of the problem), with lengths and angles measured
against 1 (m, rad) where a term can vanish:

| residual | row ``i`` at one time | scale |
| --- | --- | --- |
| holonomic | ``C_i(x0)`` | ``Σ_j abs(Cx_ij) max(1, abs(x0_j))`` |
| velocity | ``(D ẋ0)_i`` | ``‖D_i‖₁ ‖ẋ0‖∞`` |
| acceleration | ``(D ẍ0 - Qd)_i`` | ``‖D_i‖₁ (‖ẍ0‖∞ + ‖ẋ0‖∞²) + abs(Qd_i)`` |
| dynamics | ``(M ẍ0 + Dᵀ Λ0 - Q)_i`` | ``max(max_i Σ_j abs(terms of row i), max abs(M) (1 + ‖ẋ0‖∞² + ‖ẍ0‖∞))`` |

A row fails when ``|residual| > tol · scale``; the default ``tol`` is
`ADMISSIBILITY_TOL` (closed-form motions are exact to round-off, ~1e-15 relative).
Derived here (the thesis assumes admissible references, Sect. 4.2.3).

The check costs no extra kernel call in `nhcontrol.linearize()`: ``M, Q, D, Qd`` are fields
of the linearization terms it evaluates anyway; only ``C(x0)`` (a small direct kernel) is added
when ``m > 0``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from nhcontrol._util.errors import ReferenceMotionError
from nhcontrol._util.validation import readonly

__all__ = ["ADMISSIBILITY_TOL", "SAMPLED_ADMISSIBILITY_TOL", "AdmissibilityReport",
           "admissibility_report", "check_admissible", "ADMISSIBILITY_KINDS"]

ADMISSIBILITY_TOL = 1e-8
"""Default relative tolerance of the admissibility check (closed-form references)."""

SAMPLED_ADMISSIBILITY_TOL = 1e-3
"""Default relative tolerance for references interpolated from samples
(`Reference.from_samples()`, `Reference.from_simulation()` without dense output):
between the samples the interpolant satisfies the constraints only to its interpolation
error, which this bound admits while still catching a left-out velocity or a wrong offset
(relative residual of order 1).
"""

ADMISSIBILITY_KINDS = {
    "holonomic": ("C(x0)", "Eq. (2.109)"),
    "velocity": ("D(x0) ẋ0", "Eq. (2.114)"),
    "acceleration": ("D(x0) ẍ0 - Qd", "Eq. (2.116)"),
    "dynamics": ("M ẍ0 + Dᵀ Λ0 - Q", "Eq. (2.108)"),
}
"""The four levels, their formula and thesis equation (checked in this order)."""


@dataclass(frozen=True)
class AdmissibilityReport:
    """Scaled residuals of a reference motion at ``N`` times.

    Attributes
    ----------
    t : (N,) ndarray
        Times.
    residual : mapping kind -> (N, rows) ndarray
        Signed residuals (rows: the ``m`` holonomic constraints; the ``m + l`` constraints; the
        ``m + l`` constraints; the ``n`` coordinates).
    scale : mapping kind -> (N, rows) ndarray
        Size of the terms each residual is compared with (module table).
    tol : float
        Relative tolerance.
    """

    t: NDArray[np.float64]
    residual: Mapping[str, NDArray[np.float64]]
    scale: Mapping[str, NDArray[np.float64]]
    tol: float

    def ratio(self, kind: str) -> NDArray[np.float64]:
        """``|residual| / scale`` for ``kind`` (``(N, rows)``; 0 where both vanish)."""
        r, s = np.abs(self.residual[kind]), self.scale[kind]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = np.where(r > 0, r / np.where(s > 0, s, np.finfo(float).tiny), 0.0)
        return np.where(np.isnan(r) | ~np.isfinite(out), np.inf, out)     # NaN fails

    def worst(self, kind: str) -> tuple[int, int, float]:
        """``(sample, row, ratio)`` of the largest scaled residual of ``kind``."""
        q = self.ratio(kind)
        if q.size == 0:
            return 0, 0, 0.0
        i, j = np.unravel_index(int(np.argmax(q)), q.shape)
        return int(i), int(j), float(q[i, j])

    @property
    def failures(self) -> tuple[str, ...]:
        """Kinds whose largest scaled residual exceeds ``tol`` (in checking order)."""
        return tuple(k for k in ADMISSIBILITY_KINDS if not self.worst(k)[2] <= self.tol)

    @property
    def ok(self) -> bool:
        """True when every residual is within ``tol`` of its scale."""
        return not self.failures

    @property
    def maxima(self) -> dict[str, float]:
        """``{kind: largest relative residual}``."""
        return {k: self.worst(k)[2] for k in ADMISSIBILITY_KINDS}


def admissibility_report(t: NDArray[np.float64], x: NDArray[np.float64],
                         xd: NDArray[np.float64], xdd: NDArray[np.float64],
                         lam: NDArray[np.float64], *, M: NDArray[np.float64],
                         Q: NDArray[np.float64], D: NDArray[np.float64], Qd: NDArray[np.float64],
                         C: NDArray[np.float64], b: NDArray[np.float64] | None = None,
                         tol: float = ADMISSIBILITY_TOL) -> AdmissibilityReport:
    """Scaled residuals of a motion (see the module table) from stacked kernel values.

    Parameters
    ----------
    t : (N,) ndarray
    x, xd, xdd : (N, n) ndarray
    lam : (N, m + l) ndarray
    M : (N, n, n) ndarray
        ``M(x0, u0)``.
    Q : (N, n) ndarray
        ``Q(x0, ẋ0, u0)`` (input forces at ``u0`` included).
    D : (N, m + l, n) ndarray
    Qd : (N, m + l) ndarray
    C : (N, m) ndarray
    b : (N, m + l) ndarray, optional
        Velocity-free terms of affine constraints (``D ẋ + b = 0``); zeros when omitted.
    tol : float
        Relative tolerance.

    Returns
    -------
    AdmissibilityReport
    """
    if not (np.isfinite(tol) and tol > 0):
        raise ReferenceMotionError(f"the admissibility tolerance must be a positive number, got {tol!r}")
    res, scale = _residuals(x, xd, xdd, lam, M, Q, D, Qd, C, b)
    return AdmissibilityReport(
        t=readonly(np.array(t, dtype=float)),
        residual=MappingProxyType({k: readonly(np.array(v)) for k, v in res.items()}),
        scale=MappingProxyType({k: readonly(np.array(v)) for k, v in scale.items()}),
        tol=float(tol))


def _residuals(x: NDArray[np.float64], xd: NDArray[np.float64], xdd: NDArray[np.float64],
               lam: NDArray[np.float64], M: NDArray[np.float64], Q: NDArray[np.float64],
               D: NDArray[np.float64], Qd: NDArray[np.float64], C: NDArray[np.float64],
               b: NDArray[np.float64] | None = None
               ) -> tuple[dict[str, NDArray[np.float64]], dict[str, NDArray[np.float64]]]:
    """Residuals and scales of the module table, ``(N, rows)`` each (few, fused numpy calls:
    this runs in every `nhcontrol.linearize()`)."""
    m = C.shape[1]
    V = np.stack([xd, xdd, x], axis=2)                     # (N, n, 3)
    absV = np.abs(V)
    vmax = absV.max(axis=1, initial=0.0)                    # (N, 3): ‖ẋ‖∞, ‖ẍ‖∞, ‖x‖∞
    vx, ax = vmax[:, 0], vmax[:, 1]
    DV = np.matmul(D, V[:, :, :2])                          # D ẋ, D ẍ
    absD = np.abs(D)
    rowD = absD.sum(axis=2)
    absM = np.abs(M)
    dyn = (np.matmul(M, V[:, :, 1:2])[:, :, 0] + np.matmul(lam[:, None, :], D)[:, 0, :] - Q)
    terms = (np.matmul(absM, absV[:, :, 1:2])[:, :, 0]
             + np.matmul(np.abs(lam)[:, None, :], absD)[:, 0, :] + np.abs(Q))
    floor = absM.max(axis=(1, 2), initial=0.0) * (1.0 + vx * vx + ax)
    S = np.maximum(terms.max(axis=1, initial=0.0), floor)
    vel = DV[:, :, 0] if b is None else DV[:, :, 0] + b     # D ẋ + b (affine constraints)
    res = {"holonomic": C, "velocity": vel, "acceleration": DV[:, :, 1] - Qd,
           "dynamics": dyn}
    scale = {"holonomic": np.matmul(absD[:, :m, :], np.maximum(1.0, absV[:, :, 2:3]))[:, :, 0],
             "velocity": rowD * vx[:, None] + (0.0 if b is None else np.abs(b)),
             "acceleration": rowD * (ax + vx * vx)[:, None] + np.abs(Qd),
             "dynamics": np.broadcast_to(S[:, None], dyn.shape)}
    return res, scale


def _passes_one(x: NDArray[np.float64], xd: NDArray[np.float64], xdd: NDArray[np.float64],
                lam: NDArray[np.float64], M: NDArray[np.float64], Q: NDArray[np.float64],
                D: NDArray[np.float64], Qd: NDArray[np.float64], C: NDArray[np.float64],
                b: NDArray[np.float64] | None, tol: float) -> bool:
    """The pass decision of `_residuals()` at one point (same scales), with the fewest numpy
    calls: one residual and one scale buffer filled in place, one comparison."""
    m, ml, n = C.shape[0], D.shape[0], M.shape[0]
    r = np.empty(m + 2 * ml + n)
    sc = np.empty_like(r)
    absD = np.abs(D)
    rowD = np.add.reduce(absD, axis=1)
    vx = float(np.maximum.reduce(np.abs(xd))) if n else 0.0
    ax = float(np.maximum.reduce(np.abs(xdd))) if n else 0.0
    r[:m] = C
    np.matmul(absD[:m], np.maximum(1.0, np.abs(x)), out=sc[:m])
    np.matmul(D, xd, out=r[m:m + ml])
    np.multiply(rowD, vx, out=sc[m:m + ml])
    if b is not None:                                       # D ẋ + b (affine constraints)
        r[m:m + ml] += b
        sc[m:m + ml] += np.abs(b)
    np.matmul(D, xdd, out=r[m + ml:m + 2 * ml])
    r[m + ml:m + 2 * ml] -= Qd
    np.multiply(rowD, ax + vx * vx, out=sc[m + ml:m + 2 * ml])
    sc[m + ml:m + 2 * ml] += np.abs(Qd)
    dyn = r[m + 2 * ml:]
    np.matmul(M, xdd, out=dyn)
    dyn += lam @ D
    dyn -= Q
    absM = np.abs(M)
    terms = absM @ np.abs(xdd) + np.abs(lam) @ absD + np.abs(Q)
    S = max(float(np.maximum.reduce(terms)) if n else 0.0,
            (float(np.maximum.reduce(absM, axis=None)) if n else 0.0) * (1.0 + vx * vx + ax))
    sc[m + 2 * ml:] = S
    np.abs(r, out=r)
    return bool(np.all(r <= tol * sc))


def _fmt(v: NDArray[np.float64]) -> str:
    return "[" + ", ".join(f"{a + 0.0:.6g}" for a in v) + "]"


def _largest(names: Sequence[str], v: NDArray[np.float64], k: int = 2) -> str:
    order = np.argsort(-np.abs(v), kind="stable")[:k]
    return ", ".join(f"{names[j]!r} by {v[j]:+.4g}" for j in order if abs(v[j]) > 0)


def _diagnose(rep: AdmissibilityReport, kind: str, i: int, j: int, *, x: NDArray, xd: NDArray,
              xdd: NDArray, lam: NDArray, u: NDArray | None, M: NDArray, Q: NDArray, D: NDArray,
              coordinates: Sequence[str], constraints: Sequence[str], inputs: Sequence[str],
              lam_given: bool) -> str:
    """The part of the message that says what is wrong and how to fix it."""
    Di = D[i]
    if kind == "holonomic":
        row = Di[j]
        big = [coordinates[c] for c in np.argsort(-np.abs(row), kind="stable")[:3] if row[c] != 0]
        return (f"The coordinates x0 are not a configuration of the model: constraint {constraints[j]!r} "
                f"(it involves {big}) is not satisfied. Solve C(x0) = 0 for the dependent "
                "coordinates, e.g. nhcontrol.reference.consistent_initial_conditions(cm, x0, xd0, "
                "independent=[...]), or correct x0")
    if kind == "velocity":
        row = Di[j]
        missing = [coordinates[c] for c in range(len(coordinates))
                   if row[c] != 0 and xd[i, c] == 0]
        corr = -np.linalg.pinv(Di) @ rep.residual["velocity"][i]     # D ẋ0 (+ b)
        hint = (f" The velocities of {missing} enter this constraint but are 0: left out?"
                if missing else "")
        return (f"The velocities ẋ0 violate constraint {constraints[j]!r}.{hint} The least-norm correction of "
                f"ẋ0 changes {_largest(coordinates, corr)}; solve D(x0) ẋ0 = 0 for the dependent "
                "velocities (e.g. nhcontrol.reference.consistent_initial_conditions) or give the "
                "missing velocity")
    if kind == "acceleration":
        corr = -np.linalg.pinv(Di) @ rep.residual["acceleration"][i]
        return (f"The accelerations ẍ0 violate the differentiated constraint {constraints[j]!r} (Eq. (2.116)): ẍ0 "
                f"must be the time derivative of ẋ0 on the constraints. The least-norm correction "
                f"of ẍ0 changes {_largest(coordinates, corr)}"
                + ("" if not len(inputs) else
                   f". If inputs {list(inputs)} enter this constraint, their rates u̇0 enter its "
                   "acceleration level, D ẍ0 = Q_d − E u̇0: give them to the reference (ud=...)"))
    # dynamics: which part can a multiplier remove?
    b = np.einsum("ij,j->i", M[i], xdd[i]) - Q[i]
    if Di.shape[0]:
        lam_ls = np.linalg.lstsq(-Di.T, b, rcond=None)[0]
    else:
        lam_ls = np.zeros(0)
    r_ls = b + Di.T @ lam_ls
    S = float(rep.scale["dynamics"][i, 0])
    irreducible = float(np.max(np.abs(r_ls), initial=0.0))
    u_txt = ("" if u is None or not len(inputs)
             else f" and the input forces at u0 = {_fmt(u[i])} {list(inputs)}")
    if lam_given and irreducible <= rep.tol * S:
        return (f"The multipliers lam0 = {_fmt(lam[i])} are not those of this motion: inverse "
                f"dynamics (Eq. (2.112)) gives Λ0 = {_fmt(lam_ls)} for {list(constraints)}. Omit "
                "lam to have them computed, or correct it")
    jj = int(np.argmax(np.abs(r_ls))) if r_ls.size else j
    return (f"No multiplier can remove it: the residual that remains with the least-squares "
            f"multipliers of Eq. (2.112) is {irreducible:.3e} in the equation of "
            f"{coordinates[jj]!r}. The motion needs a force there that the constraint "
            f"reactions{u_txt} do not provide: check that ẍ0 is the acceleration of x0, give the inputs "
            "u that drive it, or check the parameters")


def check_admissible(t: NDArray[np.float64], x: NDArray[np.float64], xd: NDArray[np.float64],
                     xdd: NDArray[np.float64], lam: NDArray[np.float64],
                     u: NDArray[np.float64] | None, *, M: NDArray[np.float64],
                     Q: NDArray[np.float64], D: NDArray[np.float64], Qd: NDArray[np.float64],
                     C: NDArray[np.float64], coordinates: Sequence[str],
                     constraints: Sequence[str], inputs: Sequence[str] = (),
                     b: NDArray[np.float64] | None = None,
                     lam_given: bool = True, tol: float = ADMISSIBILITY_TOL,
                     what: str = "the reference motion") -> None:
    """Raise `ReferenceMotionError` unless the motion is admissible (module table).

    Parameters are those of `admissibility_report()` plus the names used in the message,
    ``u (N, k)`` (or ``None``), whether ``lam`` was given by the user (then a dynamic residual
    that other multipliers remove is reported as wrong multipliers) and ``what`` (the subject
    of the message).

    Returns
    -------
    None
        When every level passes (`admissibility_report()` gives the numbers).

    Raises
    ------
    ReferenceMotionError
        At the first failing level (holonomic, velocity, acceleration, dynamics): the
        constraint or coordinate, the residual and its scale, the time, and the fix.
    """
    if not (np.isfinite(tol) and tol > 0):
        raise ReferenceMotionError(f"the admissibility tolerance must be a positive number, got {tol!r}")
    if x.shape[0] == 1:
        if _passes_one(x[0], xd[0], xdd[0], lam[0], M[0], Q[0], D[0], Qd[0], C[0],
                       None if b is None else b[0], tol):
            return None    # the common case in linearize: one point, no report objects built
    else:
        res, scale = _residuals(x, xd, xdd, lam, M, Q, D, Qd, C, b)
        r = np.concatenate([res["holonomic"], res["velocity"], res["acceleration"],
                            res["dynamics"]], axis=1)
        sc = np.concatenate([scale["holonomic"], scale["velocity"], scale["acceleration"],
                             scale["dynamics"]], axis=1)
        if bool(np.all(np.abs(r) <= tol * sc)):
            return None    # no report objects built
    rep = admissibility_report(t, x, xd, xdd, lam, M=M, Q=Q, D=D, Qd=Qd, C=C, b=b, tol=tol)
    fails = rep.failures
    # the earliest failing time, and there the lowest level: a wrong velocity of a motion
    # x0 + ẋ0 t shows first as a velocity residual at t0, later as a drift of C(x0)
    bad = {k: np.max(rep.ratio(k), axis=1, initial=0.0) > tol for k in fails}
    order = np.argsort(np.asarray(t, dtype=float), kind="stable")
    i = next(int(s) for s in order if any(bad[k][s] for k in fails))
    kind = next(k for k in fails if bad[k][i])
    qrow = rep.ratio(kind)[i]
    j = int(np.argmax(qrow))
    q = float(qrow[j])
    formula, eq = ADMISSIBILITY_KINDS[kind]
    r = float(rep.residual[kind][i, j])
    s = float(rep.scale[kind][i, j])
    m = rep.residual["holonomic"].shape[1]
    if kind == "dynamics":
        where = f"in the equation of coordinate {coordinates[j]!r}"
    else:
        cname = constraints[j]
        level = ("holonomic" if kind == "holonomic" or j < m else "nonholonomic")
        where = f"in the {level} constraint {cname!r}"
    fix = _diagnose(rep, kind, i, j, x=x, xd=xd, xdd=xdd, lam=lam, u=u, M=M, Q=Q, D=D,
                    coordinates=coordinates, constraints=constraints, inputs=inputs,
                    lam_given=lam_given)
    others = [k for k in fails if k != kind]
    raise ReferenceMotionError(
        f"{what} is not a motion of the model at t = {float(t[i]):.6g}: the {kind} residual "
        f"{formula} ({eq}) is {r:.3e} {where}, {q:.2e} times its scale {s:.3e} "
        f"(tolerance {tol:.0e} relative). {fix}."
        + (f" (Also failing: {', '.join(others)}.)" if others else "")
        + " Pass check=False to skip this check.")
