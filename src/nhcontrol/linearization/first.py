"""First numerical linearization procedure (thesis Sect. 4.2.1), for validation.

The index-1 DAE (Eqs. (2.125)-(2.126))

$$
M(x)\\ddot x + D^T(x)\\Lambda = Q(x, \\dot x), \\qquad D(x)\\ddot x = Q_d(x, \\dot x)
$$

is linearized directly about a reference ``x0(t), xd0(t), xdd0(t), Λ0(t)`` in the redundant
coordinates ``x`` (no partition). With the variations of Eq. (4.50),
``x~ = x - x0``, ``Λ~ = Λ - Λ0``, the linearized dynamic equations and acceleration constraints are

$$
\\begin{gathered}
M_0 \\ddot{\\tilde x} + D_0^T \\tilde\\Lambda
    = K_x \\tilde x + K_v \\dot{\\tilde x}, \\qquad
D_0 \\ddot{\\tilde x} = K_{dx} \\tilde x + K_{dv} \\dot{\\tilde x}, \\\\
K_x = \\frac{\\partial Q}{\\partial x} - \\frac{\\partial (M \\ddot x_0)}{\\partial x}
      - \\frac{\\partial (D^T \\Lambda_0)}{\\partial x},\\quad
K_v = \\frac{\\partial Q}{\\partial \\dot x},\\quad
K_{dx} = \\frac{\\partial Q_d}{\\partial x} - \\frac{\\partial (D \\ddot x_0)}{\\partial x},\\quad
K_{dv} = \\frac{\\partial Q_d}{\\partial \\dot x},
\\end{gathered}
$$

all evaluated on the reference. The relations (thesis Eqs. (4.51)-(4.65)) are derived
here from first principles, in
``docs/guide/bicycle_benchmark.md`` (section "Validation procedures"). Solving the saddle-point
system gives the ``2n x 2n`` Jacobian of ``X~ = [x~, xd~]`` (the exact counterpart of the
conventional Eq. (3.39) and of the finite-difference Eq. (7.109)); its spectrum holds the
``2(n-m-l)`` eigenvalues of the constrained system and ``2(m+l)`` spurious ones
(Sect. 4.3.4).

This module exists to validate [`nhcontrol.linearization.linearize()`][nhcontrol.linearization.linearize]
(third procedure); it is
not the product path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from .._util.errors import ConstraintError, PartitionError, ReferenceMotionError
from .._util.validation import COND_MAX, as_float_array, check_finite, readonly
from ._jacobian import _JacobianMembers
from .._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition
    from nhcontrol.reference import Reference

__all__ = [
    "ReferencePoint",
    "FirstProcedureResult",
    "reference_point",
    "first_procedure",
    "velocity_names",
    "partition_indices",
    "evaluate_terms",
]


# --------------------------------------------------------------------------------------------
# shared helpers (also used by second.py and finite_difference.py)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReferencePoint:
    """One instant of a reference motion, Eq. (4.1): ``x0, xd0, xdd0, Λ0, u0`` and parameters.

    Attributes
    ----------
    t : float
    x, xd, xdd : (n,) ndarray
    lam : (m+l,) ndarray
    u : (k,) ndarray or None
    p : (p,) ndarray or None
    """

    __repr__ = concise_repr

    t: float
    x: NDArray[np.float64]
    xd: NDArray[np.float64]
    xdd: NDArray[np.float64]
    lam: NDArray[np.float64]
    u: NDArray[np.float64] | None
    p: NDArray[np.float64] | None


def _as_vector(value: Any, name: str, size: int) -> NDArray[np.float64]:
    arr = as_float_array(value, name, error=ReferenceMotionError).reshape(-1)
    if arr.size != size:
        raise ReferenceMotionError(f"{name} must have {size} entries, got {arr.size}; the reference "
                                   "does not belong to this model")
    return readonly(check_finite(arr.copy(), name, error=ReferenceMotionError))


def reference_point(cm: CompiledModel, ref: Reference, t: float = 0.0, *,
                    p: Any = None) -> ReferencePoint:
    """Evaluate a reference motion at time ``t``.

    Parameters
    ----------
    cm : CompiledModel
        Gives ``n``, ``m``, ``l``, ``ninputs``.
    ref : Reference or ReferencePoint
        Anything with methods ``x(t), xd(t), xdd(t), lam(t), u(t)`` (the contract of
        ``nhcontrol.reference.Reference``), or an already evaluated
        [`ReferencePoint`][nhcontrol.linearization.ReferencePoint].
    t : float
        Time of evaluation.
    p : (p,) array_like, optional
        Parameter vector; default ``ref.parameters`` if present, else the model defaults.

    Returns
    -------
    ReferencePoint

    Raises
    ------
    ReferenceMotionError
        If a reference array has the wrong size or is not finite.
    """
    if isinstance(ref, ReferencePoint):
        return ref
    n, ncons, k = int(cm.n), int(cm.m) + int(cm.l), int(getattr(cm, "ninputs", 0))
    t = float(t)
    x = _as_vector(ref.x(t), "reference x0(t)", n)
    xd = _as_vector(ref.xd(t), "reference xd0(t)", n)
    xdd = _as_vector(ref.xdd(t), "reference xdd0(t)", n)
    lam = _as_vector(ref.lam(t), "reference Λ0(t)", ncons)
    u = None
    if k:
        u_val = ref.u(t) if hasattr(ref, "u") else None
        u = np.zeros(k) if u_val is None else _as_vector(u_val, "reference u0(t)", k)
    if p is None:
        p = getattr(ref, "parameters", None)
    p_arr = None if p is None else readonly(as_float_array(p, "parameter vector p").reshape(-1).copy())
    return ReferencePoint(t, x, xd, xdd, lam, u, p_arr)


def velocity_names(cm: CompiledModel) -> tuple[str, ...]:
    """Names of the velocities ``xd`` (``cm.velocities`` or ``<coord>_d``)."""
    names = getattr(cm, "velocities", None)
    if names is None or isinstance(names, str) or len(names) != cm.n:
        return tuple(f"{c}_d" for c in cm.coordinates)
    return tuple(str(s) for s in names)


def partition_indices(cm: CompiledModel,
                      partition: Partition | Mapping[str, Any]) -> tuple[list[int], list[int], list[int]]:
    """Resolve a coordinate partition (Eq. (2.137)) to index lists ``(ai, ad, d)``.

    ``partition`` may be a [`nhcontrol.linearization.Partition`][nhcontrol.linearization.Partition], any
    object with attributes
    ``independent``, ``admissible_dependent``, ``dependent``, or a mapping with those keys (the
    ``PARTITION_4_172``-style dicts of the model catalogue). A two-set partition of Eq. (2.129)
    (``independent`` and ``dependent`` only) is accepted: then ``ad`` is empty and ``d`` holds
    all ``m+l`` dependent coordinates.

    Raises
    ------
    PartitionError
        Unknown or repeated names, a coordinate missing, or wrong set sizes.
    """
    def get(key: str) -> Sequence[str]:
        if isinstance(partition, Mapping):
            val = partition.get(key, ())
        else:
            val = getattr(partition, key, ())
        if isinstance(val, str):
            val = val.split()
        return tuple(str(s) for s in (val or ()))

    ai, ad, d = get("independent"), get("admissible_dependent"), get("dependent")
    coords = tuple(cm.coordinates)
    problems = []
    unknown = [s for s in (*ai, *ad, *d) if s not in coords]
    if unknown:
        problems.append(f"unknown coordinates {unknown} (the model has {list(coords)})")
    allnames = [*ai, *ad, *d]
    dup = sorted({s for s in allnames if allnames.count(s) > 1})
    if dup:
        problems.append(f"coordinates listed more than once: {dup}")
    missing = [c for c in coords if c not in allnames]
    if missing:
        problems.append(f"coordinates in no set: {missing}")
    n, m, l = int(cm.n), int(cm.m), int(cm.l)
    if len(ai) != n - m - l:
        problems.append(f"independent x_ai must hold n-m-l = {n - m - l} coordinates, got {len(ai)}")
    if ad and len(ad) != l:
        problems.append(f"admissible dependent x_ad must hold l = {l} coordinates, got {len(ad)}")
    if problems:
        raise PartitionError("Invalid coordinate partition (Eq. (2.137)): " + "; ".join(problems)
                             + ". Give every coordinate exactly once: independent (n-m-l), "
                               "admissible_dependent (l), dependent (m).")
    idx = {c: i for i, c in enumerate(coords)}
    return [idx[s] for s in ai], [idx[s] for s in ad], [idx[s] for s in d]


def _one(value: Any) -> NDArray[np.float64]:
    return np.asarray(value, dtype=float)


class _Terms:
    """Exact kernel values needed by the validation procedures at one reference point."""

    __slots__ = ("M", "Q", "D", "Cx", "B", "Qd", "dMa_dx", "dDTlam_dx", "dQ_dx", "dQ_dxd",
                 "dDv_dx", "dDa_dx", "dQd_dx", "dQd_dxd", "dCxv_dx", "dBv_dx")


def evaluate_terms(cm: CompiledModel, pt: ReferencePoint) -> _Terms:
    """Evaluate every exact (symbolic) kernel at a reference point.

    Uses the fused ``cm.linearization_terms`` when the model has it, else the single kernels
    (docs/dev/contracts.md, section 2). ``dDv_dx`` is ``∂(D xd0)/∂x`` (Eq. (4.99)) and
    ``dDa_dx`` is ``∂(D xdd0)/∂x`` (Eq. (4.103)).
    """
    out = _Terms()
    u, p = pt.u, pt.p
    fused = getattr(cm, "linearization_terms", None)
    got = None
    if fused is not None:
        got = fused(pt.x, pt.xd, pt.xdd, pt.lam, u, p)
    for name in _Terms.__slots__:
        val = getattr(got, name, None) if got is not None else None
        if val is None:
            if name in ("M", "D", "Cx", "B"):
                val = getattr(cm, name)(pt.x, u, p)
            elif name in ("Q", "Qd", "dQ_dx", "dQ_dxd", "dQd_dx", "dQd_dxd"):
                val = getattr(cm, name)(pt.x, pt.xd, u, p)
            elif name == "dMa_dx":
                val = cm.dMa_dx(pt.x, pt.xdd, u, p)
            elif name == "dDTlam_dx":
                val = cm.dDTlam_dx(pt.x, pt.lam, u, p)
            elif name == "dDv_dx":
                val = cm.dDv_dx(pt.x, pt.xd, u, p)
            elif name == "dDa_dx":
                val = cm.dDv_dx(pt.x, pt.xdd, u, p)
            elif name == "dCxv_dx":
                val = cm.dCxv_dx(pt.x, pt.xd, u, p) if cm.m else np.zeros((0, cm.n))
            elif name == "dBv_dx":
                val = cm.dBv_dx(pt.x, pt.xd, u, p) if cm.l else np.zeros((0, cm.n))
        arr = _one(val)
        setattr(out, name, check_finite(arr, f"kernel {name}", error=ReferenceMotionError,
                                        where=f"at t = {pt.t}"))
    n, c = int(cm.n), int(cm.m) + int(cm.l)
    out.Cx = out.Cx.reshape(int(cm.m), n)
    out.B = out.B.reshape(int(cm.l), n)
    out.dCxv_dx = out.dCxv_dx.reshape(int(cm.m), n)
    out.dBv_dx = out.dBv_dx.reshape(int(cm.l), n)
    out.D = out.D.reshape(c, n)
    out.Qd = out.Qd.reshape(c)
    for name in ("dDv_dx", "dDa_dx", "dQd_dx", "dQd_dxd"):
        setattr(out, name, getattr(out, name).reshape(c, n))
    return out


def solve_checked(A: NDArray[np.float64], B: NDArray[np.float64], what: str,
                  error: type[Exception], hint: str) -> NDArray[np.float64]:
    """Solve ``A X = B`` after checking ``cond(A) <= COND_MAX`` (reports singular values)."""
    if A.shape[0] == 0:
        return np.zeros((0,) + B.shape[1:])
    s = np.linalg.svd(A, compute_uv=False)
    cond = np.inf if s[-1] == 0 else s[0] / s[-1]
    if not np.isfinite(cond) or cond > COND_MAX:
        raise error(f"{what} is singular (cond = {cond:.3g} > COND_MAX = {COND_MAX:.0e}; singular "
                    f"values {np.array2string(s, precision=3)}); {hint}")
    return np.linalg.solve(A, B)


# --------------------------------------------------------------------------------------------
# the first numerical procedure
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FirstProcedureResult(_JacobianMembers):
    """Linearization of the index-1 DAE in redundant coordinates (Sect. 4.2.1).

    Attributes
    ----------
    J : (2n, 2n) ndarray
        Jacobian of ``X~ = [x~, xd~]``: ``dX~/dt = J X~``.
    J_lambda : (m+l, 2n) ndarray
        ``Λ~ = J_lambda X~`` (the multiplier variations, solved with the accelerations).
    E, A : (2n+m+l, 2n+m+l) ndarray
        The linear index-1 DAE in descriptor form ``E dz/dt = A z``, ``z = [x~, xd~, Λ~]``:
        ``E = [[I,0,0],[0,M0,0],[0,D0,0]]``, ``A = [[0,I,0],[Kx,Kv,-D0^T],[Kdx,Kdv,0]]``; its
        finite generalized eigenvalues are those of ``J``.
    Kx, Kv : (n, n) ndarray
        Linearized dynamic equations (right-hand side blocks, see module docstring).
    Kdx, Kdv : (m+l, n) ndarray
        Linearized acceleration constraints.
    states : tuple of str
        ``2n`` names: coordinates then velocities.
    n_spurious : int
        ``2(m+l)`` spurious eigenvalues (Sect. 4.3.4).
    t : float
        Time of the reference point.
    """

    __repr__ = concise_repr

    J: NDArray[np.float64]
    J_lambda: NDArray[np.float64]
    E: NDArray[np.float64]
    A: NDArray[np.float64]
    Kx: NDArray[np.float64]
    Kv: NDArray[np.float64]
    Kdx: NDArray[np.float64]
    Kdv: NDArray[np.float64]
    states: tuple[str, ...]
    n_spurious: int
    t: float


def first_procedure(cm: CompiledModel, ref: Reference, t: float = 0.0, *,
                    p: Any = None) -> FirstProcedureResult:
    """Linearize the index-1 DAE directly in redundant coordinates (Sect. 4.2.1).

    Parameters
    ----------
    cm : CompiledModel
        Exact kernels ``M, D, dMa_dx, dDTlam_dx, dQ_dx, dQ_dxd, dDv_dx, dQd_dx, dQd_dxd``.
    ref : Reference or ReferencePoint
        The reference motion ``x0(t), xd0(t), xdd0(t), Λ0(t), u0(t)`` (Eq. (4.1)).
    t : float
        Instant of the linearization.
    p : (p,) array_like, optional
        Parameter vector (default: the reference's, else the model defaults).

    Returns
    -------
    FirstProcedureResult
        ``J`` is ``(2n, 2n)``.

    Raises
    ------
    ConstraintError
        If the saddle-point matrix ``[[M0, D0^T], [D0, 0]]`` of Eq. (2.127) is singular at the
        reference (redundant constraints or a singular mass matrix on the constraint null space).

    Notes
    -----

    $$
    \\begin{pmatrix} M_0 & D_0^T \\\\ D_0 & 0 \\end{pmatrix}
    \\begin{pmatrix} \\ddot{\\tilde x} \\\\ \\tilde\\Lambda \\end{pmatrix} =
    \\begin{pmatrix} K_x & K_v \\\\ K_{dx} & K_{dv} \\end{pmatrix}
    \\begin{pmatrix} \\tilde x \\\\ \\dot{\\tilde x} \\end{pmatrix},\\qquad
    J = \\begin{pmatrix} 0 & I_n \\\\ J_{21} & J_{22} \\end{pmatrix}.
    $$
    """
    pt = reference_point(cm, ref, t, p=p)
    T = evaluate_terms(cm, pt)
    n, c = int(cm.n), int(cm.m) + int(cm.l)
    Kx = T.dQ_dx - T.dMa_dx - T.dDTlam_dx
    Kv = T.dQ_dxd
    Kdx = T.dQd_dx - T.dDa_dx
    Kdv = T.dQd_dxd
    Aug = np.block([[T.M, T.D.T], [T.D, np.zeros((c, c))]])
    rhs = np.block([[Kx, Kv], [Kdx, Kdv]])
    sol = solve_checked(Aug, rhs, f"The saddle-point matrix [[M, D^T], [D, 0]] of Eq. (2.127) at "
                        f"t = {pt.t}", ConstraintError,
                        "check that the constraints are independent at the reference (rank of D "
                        "must be m+l) and that M is positive definite on the null space of D")
    J = np.zeros((2 * n, 2 * n))
    J[:n, n:] = np.eye(n)
    J[n:, :] = sol[:n]
    I = np.eye(n)
    Z = np.zeros
    E = np.block([[I, Z((n, n)), Z((n, c))], [Z((n, n)), T.M, Z((n, c))],
                  [Z((c, n)), T.D, Z((c, c))]])
    A = np.block([[Z((n, n)), I, Z((n, c))], [Kx, Kv, -T.D.T], [Kdx, Kdv, Z((c, c))]])
    states = tuple(cm.coordinates) + velocity_names(cm)
    return FirstProcedureResult(
        J=readonly(J), J_lambda=readonly(sol[n:].copy()), E=readonly(E), A=readonly(A),
        Kx=readonly(Kx), Kv=readonly(np.array(Kv)), Kdx=readonly(Kdx), Kdv=readonly(np.array(Kdv)),
        states=states, n_spurious=2 * c, t=pt.t)

