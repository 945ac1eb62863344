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

Models with first-order states ``z`` (``ż = H(x, ẋ, z, u)``, thesis Ch. 7; the mechanical kernels
see ``z`` as inputs) add a fifth level, checked where the rate kernels are at hand
(`nhcontrol.linearization.linearize_first_order_system()`, ``Reference.from_functions(...,
rates=...)``): the reference's ``ż0`` (its input rates ``u̇0`` in the entries of ``z``) must be
the rate equation at the reference point (Eq. (7.19)),

| residual | row ``i`` at one time | scale |
| --- | --- | --- |
| rate | ``ż0_i - H_i(x0, ẋ0, z0, u0)`` | ``abs(ż0_i) + abs(H_i) + Σ_j abs(H_x,ij) max(1, abs(x0_j)) + ‖H_ẋ,i‖₁ ‖ẋ0‖∞ + Σ_j abs(H_z,ij) abs(z0_j) + Σ_j abs(H_u,ij) abs(u0_j)`` |

(the terms of ``H`` linearized about zero: for the throttle between two chambers, the two
pressure terms whose difference is the flow).

A row fails when ``|residual| > tol · scale + floor``; the default ``tol`` is
`ADMISSIBILITY_TOL` (closed-form motions are exact to round-off, ~1e-15 relative). The
``floor`` is the round-off of the level at the size of the whole problem, independent of
``tol``: ``ρ = 4 (n + m + l) ε`` (``ε`` the machine epsilon) times the largest scale of the
level over its rows (holonomic, velocity), ``ρ S`` (dynamics), and for the acceleration level
``ρ max_i (‖D_i‖₁ (‖ẍ0‖∞ + ‖ẋ0‖∞² + S / max abs(M)) + abs(Qd_i))`` — ``S / max abs(M)``
is the acceleration the forces of the dynamics row can produce. A row whose own terms
vanish (a body at rest: ``ẋ0 = 0`` and ``ẍ0`` zero up to the round-off of the solve that
produced it) is then judged against the round-off of the problem, not against its own
vanishing scale. Derived here (the thesis assumes admissible references, Sect. 4.2.3).

The check costs no extra kernel call in `nhcontrol.linearize()`: ``M, Q, D, Qd`` are fields
of the linearization terms it evaluates anyway; only ``C(x0)`` (a small direct kernel) is added
when ``m > 0``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nhcontrol._util.errors import ModelError, ReferenceMotionError
from nhcontrol._util.validation import ADMISSIBILITY_TOL, readonly
from nhcontrol._util.reprs import concise_repr

__all__ = ["ADMISSIBILITY_TOL", "SAMPLED_ADMISSIBILITY_TOL", "AdmissibilityReport",
           "admissibility_report", "check_admissible", "ADMISSIBILITY_KINDS", "RATE_KIND",
           "rate_residuals", "check_rate_equation", "check_rates"]

ROUNDOFF_FACTOR = 4.0
"""``ρ = ROUNDOFF_FACTOR · (n + m + l) · ε``: the absolute round-off floor of each level
relative to the problem's scale (module docstring)."""


def _rho(n: int, c: int) -> float:
    return ROUNDOFF_FACTOR * (n + c) * float(np.finfo(float).eps)

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

RATE_KIND = ("ż0 - H(x0, ẋ0, z0, u0)", "Eq. (7.19)")
"""Formula and thesis equation of the rate level (first-order states)."""


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
    floor : mapping kind -> (N,) ndarray
        Absolute round-off floor of each level (module docstring); empty: none.
    """

    __repr__ = concise_repr

    t: NDArray[np.float64]
    residual: Mapping[str, NDArray[np.float64]]
    scale: Mapping[str, NDArray[np.float64]]
    tol: float
    floor: Mapping[str, NDArray[np.float64]] = field(default_factory=lambda: MappingProxyType({}))

    def ratio(self, kind: str) -> NDArray[np.float64]:
        """``max(|residual| − floor, 0) / scale`` for ``kind`` (``(N, rows)``; 0 where both
        vanish): the row passes when it is ``<= tol``."""
        r, s = np.abs(self.residual[kind]), self.scale[kind]
        f = self.floor.get(kind)
        if f is not None:
            r = np.where(np.isnan(r), r, np.maximum(r - np.asarray(f)[:, None], 0.0))
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
    res, scale, floor = _residuals(x, xd, xdd, lam, M, Q, D, Qd, C, b)
    return AdmissibilityReport(
        t=readonly(np.array(t, dtype=float)),
        residual=MappingProxyType({k: readonly(np.array(v)) for k, v in res.items()}),
        scale=MappingProxyType({k: readonly(np.array(v)) for k, v in scale.items()}),
        tol=float(tol),
        floor=MappingProxyType({k: readonly(np.array(v)) for k, v in floor.items()}))


def _residuals(x: NDArray[np.float64], xd: NDArray[np.float64], xdd: NDArray[np.float64],
               lam: NDArray[np.float64], M: NDArray[np.float64], Q: NDArray[np.float64],
               D: NDArray[np.float64], Qd: NDArray[np.float64], C: NDArray[np.float64],
               b: NDArray[np.float64] | None = None
               ) -> tuple[dict[str, NDArray[np.float64]], dict[str, NDArray[np.float64]],
                          dict[str, NDArray[np.float64]]]:
    """Residuals and scales of the module table, ``(N, rows)`` each, and the round-off floors
    ``(N,)`` of the levels (few, fused numpy calls: this runs in every `nhcontrol.linearize()`)."""
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
    rho = _rho(M.shape[1], D.shape[1])
    maxM = absM.max(axis=(1, 2), initial=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        aF = np.where(maxM > 0, S / np.where(maxM > 0, maxM, 1.0), 0.0)
    acc_floor = (rowD * (ax + vx * vx + aF)[:, None] + np.abs(Qd)).max(axis=1, initial=0.0)
    floor = {"holonomic": rho * scale["holonomic"].max(axis=1, initial=0.0),
             "velocity": rho * scale["velocity"].max(axis=1, initial=0.0),
             "acceleration": rho * acc_floor, "dynamics": rho * S}
    return res, scale, floor


def _passes_one(x: NDArray[np.float64], xd: NDArray[np.float64], xdd: NDArray[np.float64],
                lam: NDArray[np.float64], M: NDArray[np.float64], Q: NDArray[np.float64],
                D: NDArray[np.float64], Qd: NDArray[np.float64], C: NDArray[np.float64],
                b: NDArray[np.float64] | None, tol: float) -> bool:
    """The pass decision of `_residuals()` at one point (same scales and floors), with the
    fewest numpy calls: one residual and one scale buffer filled in place, one comparison."""
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
    rho = _rho(n, ml)
    maxM = float(np.maximum.reduce(absM, axis=None)) if n else 0.0
    aF = S / maxM if maxM > 0 else 0.0
    fl = np.empty(4)
    fl[0] = float(np.maximum.reduce(sc[:m])) if m else 0.0
    fl[1] = float(np.maximum.reduce(sc[m:m + ml])) if ml else 0.0
    fl[2] = float(np.maximum.reduce(rowD * (ax + vx * vx + aF) + np.abs(Qd))) if ml else 0.0
    fl[3] = S
    fl *= rho
    sc *= tol
    sc[:m] += fl[0]
    sc[m:m + ml] += fl[1]
    sc[m + ml:m + 2 * ml] += fl[2]
    sc[m + 2 * ml:] += fl[3]
    np.abs(r, out=r)
    return bool(np.all(r <= sc))


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
        res, scale, floor = _residuals(x, xd, xdd, lam, M, Q, D, Qd, C, b)
        kinds = ("holonomic", "velocity", "acceleration", "dynamics")
        if all(bool(np.all(np.abs(res[k]) <= tol * scale[k] + floor[k][:, None])) for k in kinds):
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


# ---------------------------------------------------------------- first-order states, Eq. (7.19)
def rate_residuals(zd: NDArray[np.float64], H: NDArray[np.float64], x: NDArray[np.float64],
                   xd: NDArray[np.float64], z: NDArray[np.float64], u: NDArray[np.float64],
                   H_x: NDArray[np.float64], H_xd: NDArray[np.float64],
                   H_z: NDArray[np.float64], H_u: NDArray[np.float64]
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Residual ``ż0 - H`` and its scale (module table), ``(N, r)`` each.

    Parameters
    ----------
    zd, H : (N, r) ndarray
        The reference's ``ż0`` and ``H(x0, ẋ0, z0, u0)``.
    x, xd : (N, n) ndarray
    z : (N, r) ndarray
    u : (N, k_u) ndarray
        The inputs that are not first-order states.
    H_x, H_xd : (N, r, n) ndarray
    H_z : (N, r, r) ndarray
    H_u : (N, r, k_u) ndarray
        Exact partial derivatives of ``H`` at the reference point (zeros where they are
        unknown: the scale is then ``abs(ż0) + abs(H)`` and the more).
    """
    vx = np.abs(xd).max(axis=1, initial=0.0)                              # ‖ẋ0‖∞
    scale = (np.abs(zd) + np.abs(H)
             + np.matmul(np.abs(H_x), np.maximum(1.0, np.abs(x))[:, :, None])[:, :, 0]
             + np.abs(H_xd).sum(axis=2) * vx[:, None]
             + np.matmul(np.abs(H_z), np.abs(z)[:, :, None])[:, :, 0]
             + np.matmul(np.abs(H_u), np.abs(u)[:, :, None])[:, :, 0])
    return zd - H, scale


def check_rate_equation(t: NDArray[np.float64], zd: NDArray[np.float64], H: NDArray[np.float64],
                        *, x: NDArray[np.float64], xd: NDArray[np.float64],
                        z: NDArray[np.float64], u: NDArray[np.float64],
                        H_x: NDArray[np.float64], H_xd: NDArray[np.float64],
                        H_z: NDArray[np.float64], H_u: NDArray[np.float64],
                        states: Sequence[str], inputs: Sequence[str] = (),
                        rates_given: bool = True, tol: float = ADMISSIBILITY_TOL,
                        what: str = "the reference motion") -> None:
    """Raise `ReferenceMotionError` unless ``ż0 = H(x0, ẋ0, z0, u0)`` (Eq. (7.19)) at every time.

    Parameters are those of `rate_residuals()` plus the times ``t (N,)``, the names of the
    first-order states and of the other inputs, whether the reference was given its input
    rates (``ud``; else ``ż0 = 0`` is what it says), the relative tolerance and the subject of
    the message.

    Raises
    ------
    ReferenceMotionError
        At the earliest failing time: the first-order state, the residual and its scale, the
        values of ``ż0`` and ``H``, and the fix.
    """
    if not (np.isfinite(tol) and tol > 0):
        raise ReferenceMotionError(f"the admissibility tolerance must be a positive number, got {tol!r}")
    res, scale = rate_residuals(zd, H, x, xd, z, u, H_x, H_xd, H_z, H_u)
    r_abs = np.abs(res)
    bad = ~(r_abs <= tol * scale)                      # NaN fails
    if not bad.any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bad, r_abs / np.where(scale > 0, scale, np.finfo(float).tiny), 0.0)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    order = np.argsort(np.asarray(t, dtype=float), kind="stable")
    i = next(int(s) for s in order if bad[s].any())
    j = int(np.argmax(ratio[i]))
    name = states[j]
    others = [states[c] for c in range(len(states)) if c != j and bad[:, c].any()]
    u_txt = f" or the other arguments of H {list(inputs)}" if len(inputs) else ""
    if not rates_given:
        fix = (f"The reference has no input rates (ud), so it says ż0 = 0: a z0(t) that varies "
               f"needs its rates, ud=... with dz0/dt in the entries of {list(states)} (e.g. "
               f"Reference.from_functions(..., ud=...)); a z0 meant to be constant must make H "
               f"vanish: correct z0{u_txt}, or x0, ẋ0")
    else:
        fix = (f"Either ud is not the time derivative of z0(t) in the entries of {list(states)}, "
               f"or z0(t) does not follow the rate equation along x0, ẋ0: correct ud, z0{u_txt}")
    raise ReferenceMotionError(
        f"{what} does not satisfy the rate equation of the first-order state {name!r} at "
        f"t = {float(t[i]):.6g}: the rate residual {RATE_KIND[0]} ({RATE_KIND[1]}) is "
        f"{float(res[i, j]):.3e}, {float(ratio[i, j]):.2e} times its scale "
        f"{float(scale[i, j]):.3e} (tolerance {tol:.0e} relative): the reference has "
        f"ż0 = {float(zd[i, j]):.6g}, the rate equation gives H = {float(H[i, j]):.6g} at "
        f"z0 = {float(z[i, j]):.6g}. {fix}."
        + (f" (Also failing: {others}.)" if others else "")
        + " Pass check=False to skip this check.")


def check_rates(rates: Any, t: NDArray[np.float64], x: NDArray[np.float64],
                xd: NDArray[np.float64], u: NDArray[np.float64], ud: NDArray[np.float64],
                p: NDArray[np.float64] | None, *, jacobians: Sequence[Any] | None = None,
                rates_given: bool = True, tol: float = ADMISSIBILITY_TOL,
                what: str = "the reference motion") -> None:
    """`check_rate_equation()` with ``H`` and its Jacobians from rate kernels.

    Parameters
    ----------
    rates : RateKernels
        ``nhcontrol.compiled.compile_rates(system)`` of the model.
    t : (N,) ndarray
    x, xd : (N, n) ndarray
    u, ud : (N, k) ndarray
        The model's full input vector ``[z, u]`` and its rates (``ż0`` in the entries of ``z``).
    p : (np,) ndarray or None
        Parameters (kernel order).
    jacobians : sequence of RateJacobians, optional
        Already evaluated at the ``N`` points (else evaluated here; where ``H`` is not
        differentiable the scale falls back to ``abs(ż0) + abs(H)``).
    rates_given, tol, what
        As in `check_rate_equation()`.
    """
    zi, ui = list(rates.state_index), list(rates.input_index)
    N, n, r = x.shape[0], x.shape[1], len(zi)
    z, uo = u[:, zi], u[:, ui]
    H = np.empty((N, r))
    J = {key: np.zeros((N, r, d)) for key, d in
         (("H_x", n), ("H_xd", n), ("H_z", r), ("H_u", len(ui)))}
    for j in range(N):
        H[j] = rates.rates(x[j], xd[j], z[j], uo[j], p)
        if jacobians is not None:
            jac = jacobians[j]
        else:
            try:
                jac = rates.jacobians(x[j], xd[j], z[j], uo[j], p)
            except ModelError:          # not differentiable here: scale by |ż0| + |H| only
                continue
        for key in J:
            J[key][j] = getattr(jac, key)
    check_rate_equation(t, ud[:, zi], H, x=x, xd=xd, z=z, u=uo, **J, states=rates.states,
                        inputs=rates.inputs, rates_given=rates_given, tol=tol, what=what)
