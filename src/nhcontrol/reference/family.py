"""A family of reference motions as one [`Reference`][nhcontrol.reference.Reference], for one stacked linearization.

A design sweep linearizes many references of the same model — the steady forward motion at 40
speeds, the circular motion at several lean angles.
[`reference_family()`][nhcontrol.reference.reference_family] takes each member at
one time and indexes them by ``t = 0, 1, ..., N-1``, so that
``linearize(cm, family, partition, t=np.arange(N))`` evaluates all of them with **one** stacked
kernel call and returns the ``N`` Jacobians at once, equal to the one-by-one linearizations.

Examples
--------
>>> import numpy as np, nhcontrol                                     # doctest: +SKIP
>>> from nhcontrol.models import benchmark_bicycle as bb              # doctest: +SKIP
>>> cm = bb.model()                                                   # doctest: +SKIP
>>> refs = [bb.steady_forward(cm, v=v) for v in np.linspace(0, 10, 41)]   # doctest: +SKIP
>>> fam = reference_family(refs)                                      # doctest: +SKIP
>>> lin = nhcontrol.linearize(cm, fam, bb.PARTITION_4_172, t=np.arange(41))  # doctest: +SKIP
>>> lin.A.shape                                                       # doctest: +SKIP
(41, 10, 10)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import ReferenceMotionError
from nhcontrol._util.validation import as_float_array, check_finite, readonly

from ._eval import ModelEvaluator
from .admissibility import ADMISSIBILITY_TOL, check_admissible
from .inverse import inverse_dynamics
from .reference import Reference

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["reference_family", "reference_points"]


class _Indexed:
    """``t -> values[t]`` for the member indices ``t = 0, ..., N-1`` (picklable)."""

    def __init__(self, values: NDArray[np.float64], what: str) -> None:
        self.values = np.array(values, dtype=float)
        self.values.setflags(write=False)
        self.what = what

    def __call__(self, tt: NDArray[np.float64]) -> NDArray[np.float64]:
        tt = np.asarray(tt, dtype=float)
        i = np.rint(tt).astype(int)
        N = self.values.shape[0]
        bad = (np.abs(tt - i) > 1e-9) | (i < 0) | (i >= N)
        if np.any(bad):
            raise ReferenceMotionError(
                f"a reference family is evaluated at its member indices t = 0, ..., {N - 1}; got "
                f"t = {tt[bad][0]:.6g} for {self.what}(t) (use linearize(..., t=np.arange({N})))")
        return self.values[i].copy()


def reference_family(refs: Sequence[Reference], t: float | ArrayLike = 0.0) -> Reference:
    """Members ``refs[i]`` taken at time ``t`` (or ``t[i]``), as one reference indexed by ``i``.

    Parameters
    ----------
    refs : sequence of Reference
        References of the **same model with the same parameter values** (the kernels take one
        parameter vector per call; group a parameter grid by its parameter values and make one
        family per group).
    t : float or (N,) array_like
        Time at which each member is taken (one for all, or one per member).

    Returns
    -------
    Reference
        ``x(i), ẋ(i), ẍ(i), Λ(i), u(i)`` of member ``i`` at its time, for the integer times
        ``i = 0, ..., N-1`` (other times raise); ``steady`` if every member is; ``source ==
        "family"``.

    Raises
    ------
    ReferenceMotionError
        An empty family, a member that is not a ``Reference``, members of different models or
        with different parameter values (the differing parameters are named), or a ``t`` of
        the wrong length.
    """
    refs = list(refs)
    if not refs:
        raise ReferenceMotionError("reference_family needs at least one reference")
    for i, r in enumerate(refs):
        if not isinstance(r, Reference):
            raise ReferenceMotionError(f"reference_family: member {i} is a {type(r).__name__}, "
                                       f"not a nhcontrol Reference")
    r0 = refs[0]
    for i, r in enumerate(refs[1:], start=1):
        if (r.model_name, r.coordinates, r.inputs, r.constraints) != (
                r0.model_name, r0.coordinates, r0.inputs, r0.constraints):
            raise ReferenceMotionError(
                f"reference_family: member {i} is a reference of {r.model_name!r}, member 0 of "
                f"{r0.model_name!r} (or their coordinates/inputs/constraints differ); a family "
                f"holds references of one model")
        if r.parameters.shape != r0.parameters.shape or not np.array_equal(r.parameters,
                                                                          r0.parameters):
            raise ReferenceMotionError(
                f"reference_family: member {i} has other parameter values than member 0 "
                f"(the stacked kernel call takes one parameter vector); make one family per "
                f"parameter set")
    N = len(refs)
    ta = np.asarray(t, dtype=float)
    if ta.ndim == 0:
        ta = np.full(N, float(ta))
    if ta.shape != (N,) or not np.all(np.isfinite(ta)):
        raise ReferenceMotionError(f"reference_family: t must be one finite time or one per "
                                   f"member ({N}), got shape {np.shape(t)}")

    def stack(get: str) -> NDArray[np.float64]:
        return np.stack([np.asarray(getattr(r, get)(float(ti)), dtype=float).reshape(-1)
                         for r, ti in zip(refs, ta)])

    X, XD, XDD, LAM = stack("x"), stack("xd"), stack("xdd"), stack("lam")
    U = np.stack([np.asarray(r.u(float(ti)), dtype=float).reshape(len(r0.inputs))
                  for r, ti in zip(refs, ta)]) if r0.inputs else np.zeros((N, 0))
    return Reference(coordinates=r0.coordinates, inputs=r0.inputs, constraints=r0.constraints,
                     parameters=r0.parameters, steady=all(r.steady for r in refs), period=None,
                     t_range=(0.0, float(N - 1)), model_name=r0.model_name, source="family",
                     _fx=_Indexed(X, "x"), _fxd=_Indexed(XD, "xd"), _fxdd=_Indexed(XDD, "xdd"),
                     _flam=_Indexed(LAM, "lam"), _fu=_Indexed(U, "u"))


def _points(value: ArrayLike, N: int | None, d: int, what: str) -> NDArray[np.float64]:
    arr = as_float_array(value, what, error=ReferenceMotionError)
    if arr.ndim == 1 and d == 1 and N is not None and arr.shape[0] == N:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] != d or (N is not None and arr.shape[0] != N):
        want = f"({'N' if N is None else N}, {d})"
        raise ReferenceMotionError(f"{what} must have shape {want}, one row per point, got "
                                   f"{arr.shape}")
    return check_finite(arr, what, error=ReferenceMotionError)


def reference_points(cm: CompiledModel, x: ArrayLike, xd: ArrayLike, xdd: ArrayLike,
                     u: ArrayLike | None = None, lam: ArrayLike | None = None,
                     p: Any = None, *, steady: bool = False, check: bool = True,
                     tol: float = ADMISSIBILITY_TOL) -> Reference:
    """``N`` reference points given as arrays, as one reference indexed by ``t = 0, ..., N-1``.

    The array form of `reference_family`: for a design sweep whose reference states are known in
    closed form (e.g. the steady forward motion at many speeds), the points are stacked without
    building one `Reference` per point, checked together (one stacked kernel call) and
    linearized together (`linearize(cm, ref, partition, t=np.arange(N))`).

    Parameters
    ----------
    cm : CompiledModel
    x, xd, xdd : (N, n) array_like
        Coordinates, velocities and accelerations of the points.
    u : (N, k) array_like, optional
        Inputs (zeros when omitted).
    lam : (N, m + l) array_like, optional
        Multipliers; when omitted, inverse dynamics (Eq. (2.112)) in one stacked call.
    p : parameters, optional
        One parameter set for all points.
    steady : bool
        The points are relative equilibria (time-invariant linearizations).
    check : bool
        Check every point's admissibility (constraints at position, velocity and acceleration
        level and the dynamic residual, `nhcontrol.reference.admissibility`) with relative
        tolerance ``tol``; ``check=False`` skips it.

    Returns
    -------
    Reference
        ``source == "points"``; evaluated only at the integer times ``0, ..., N-1``.

    Raises
    ------
    ReferenceMotionError
        Wrong shapes, non-finite values, or a point that is not an admissible motion (the
        message names the point's index as its time).
    """
    ev = ModelEvaluator(cm, p)
    X = _points(x, None, ev.n, "x (points)")
    N = X.shape[0]
    if N == 0:
        raise ReferenceMotionError("reference_points needs at least one point")
    XD = _points(xd, N, ev.n, "xd (points)")
    XDD = _points(xdd, N, ev.n, "xdd (points)")
    U = _points(u, N, ev.k, "u (points)") if (u is not None and ev.k) else np.zeros((N, ev.k))
    ml = ev.m + ev.l
    t = np.arange(N, dtype=float)
    if lam is None:
        res = inverse_dynamics(cm, X, XD, XDD, U if ev.k else None, ev.p, check=False, t=t)
        LAM = np.asarray(res.lam, dtype=float).reshape(N, ml)
    else:
        LAM = _points(lam, N, ml, "lam (points)")
    if check:
        Uc = U if ev.k else None
        check_admissible(t, X, XD, XDD, LAM, Uc, M=ev.M(X, Uc), Q=ev.Q(X, XD, Uc), D=ev.D(X, Uc),
                         Qd=ev.Qd(X, XD, Uc), C=ev.C(X, Uc), b=ev.b(X, Uc),
                         coordinates=ev.coordinates, constraints=ev.constraints,
                         inputs=ev.inputs, lam_given=lam is not None, tol=tol,
                         what=f"the reference points of {ev.name!r} (t = point index)")
    return Reference(coordinates=ev.coordinates, inputs=ev.inputs, constraints=ev.constraints,
                     parameters=readonly(np.array(ev.p)), steady=bool(steady), period=None,
                     t_range=(0.0, float(N - 1)), model_name=ev.name, source="points",
                     _fx=_Indexed(X, "x"), _fxd=_Indexed(XD, "xd"), _fxdd=_Indexed(XDD, "xdd"),
                     _flam=_Indexed(LAM, "lam"), _fu=_Indexed(U, "u"), check_tol=float(tol),
                     lam_source="given" if lam is not None else "inverse_dynamics")
