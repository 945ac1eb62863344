"""First-order auxiliary states beside the mechanics (thesis Sect. 7.2, Eqs. (7.32)-(7.72) derived here).

A multibody model whose forces depend on auxiliary states ``z`` (pressures ``p``) that obey
``ż = H(x, ẋ, z, w)``, with further states ``w`` (spool positions ``U``) obeying
``ẇ = W(w, r)`` driven by references ``r`` (``U_ref``), Eqs. (7.9)-(7.13). When the model is
compiled with ``z`` as its inputs ``u``, the third procedure gives the mechanical rows
``[A_m | B_m]`` (Eq. (4.124) and the input matrix of Sect. 8.1 with ``∂Q/∂z``) in
``[x̃_ai, ẋ̃_ai, x̃_ad]``. The linearized rate equations (7.26), (7.28) need ``x̃`` and ``ẋ̃``
in terms of that state; Steps 2 and 4 of the third procedure give them for any reference
(moving, ``l >= 0``):

$$
\\tilde x = T^h_0 \\tilde x_a, \\qquad
\\dot{\\tilde x} = T_0 \\dot{\\tilde x}_{ai} + \\bar{\\bar V}_0 T^h_0 \\tilde x_a ,
\\qquad \\tilde x_a = [\\tilde x_{ai}, \\tilde x_{ad}],
$$

(Eqs. (4.98)-(4.100), (4.105)-(4.108)), so that

$$
\\dot{\\tilde z} = (H_x + H_{\\dot x}\\bar{\\bar V}_0) V^h_{ai} \\tilde x_{ai}
  + H_{\\dot x} T_0 \\dot{\\tilde x}_{ai} + (H_x + H_{\\dot x}\\bar{\\bar V}_0) V^h_{ad} \\tilde x_{ad}
  + H_z \\tilde z + H_w \\tilde w, \\qquad
\\dot{\\tilde w} = W_w \\tilde w + W_r \\tilde r .
$$

The Jacobian has size ``2n - 2m - l + r + u`` in the state ``[x̃_ai, ẋ̃_ai, x̃_ad, z̃, w̃]``
with ``l`` spurious eigenvalues, those of the linearized nonholonomic constraints. The
matrices ``T0``, ``V̄̄0``, ``V^h_ai``, ``V^h_ad`` are those of
[`third_procedure()`][nhcontrol.linearization.third_procedure] on the model's linearization terms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .._util.validation import as_times
from ..reference.admissibility import ADMISSIBILITY_TOL, check_rate_equation, check_rates
from .partition import Partition
from .result import (SPURIOUS_RTOL, ZERO_RTOL, SpuriousIdentification, _remove_matched)
from .third import _reference_values, _stacked_terms, linearize, third_procedure
from . import _cpoint
from . import prepared as _prepared
from .._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["FirstOrderLinearization", "linearize_with_first_order_states",
           "linearize_first_order_system", "identify_spurious_first_order"]


@dataclass(frozen=True)
class FirstOrderLinearization:
    """Jacobian ``A`` and input matrix ``B`` with the auxiliary states appended.

    Attributes
    ----------
    A : (ns, ns) or (N, ns, ns) ndarray
        ``ns = 2n - 2m - l + r + u``, state ``[x̃_ai, ẋ̃_ai, x̃_ad, z̃, w̃]``; stacked for an
        array of times.
    B : (ns, k) or (N, ns, k) ndarray
        Input matrix of the references ``r`` (or of the model's other inputs).
    states, inputs : tuple of str
    T0 : (n, n - m - l) or (N, n, n - m - l) ndarray
        Velocity transformation at the reference (model coordinate order).
    n_spurious : int
        ``l``, the spurious eigenvalues of the linearized nonholonomic constraints.
    n_independent : int
        ``n - m - l``.
    t : float or (N,) ndarray
        Time(s) on the reference.
    C, D : (q, ns), (q, k) ndarray or None
        The model's declared outputs ``y = h(x, ẋ, u)`` (`MultibodySystem.add_output`) in this
        state and these inputs (``(N, ·, ·)`` for stacked times): the mechanical columns through
        the partition as [`linearize()`][nhcontrol.linearize] gives them, ``∂h/∂z`` in the
        columns of the first-order states, zeros in those of ``w`` (derived here,
        docs/theory/estimation.md); None when the model declares no outputs.
    outputs : tuple of str
        Names of the outputs (empty without).
    """

    __repr__ = concise_repr

    A: NDArray[np.float64]
    B: NDArray[np.float64]
    states: tuple[str, ...]
    inputs: tuple[str, ...]
    T0: NDArray[np.float64]
    n_spurious: int = 0
    n_independent: int = field(default=-1)
    t: Any = 0.0
    C: Any = None
    D: Any = None
    outputs: tuple[str, ...] = ()

    @property
    def eigenvalues(self) -> NDArray[np.complex128]:
        """Eigenvalues of ``A`` sorted by real part (``(N, ns)`` for stacked times)."""
        ev = np.linalg.eigvals(self.A)
        return np.take_along_axis(ev, np.argsort(ev.real, axis=-1, kind="stable"), axis=-1)

    @property
    def spurious(self) -> SpuriousIdentification:
        """The ``l`` spurious eigenvalues (see
        [`identify_spurious_first_order()`][nhcontrol.linearization.identify_spurious_first_order]).

        Raises
        ------
        LinearSystemError
            For stacked times (identify them at one time: ``res.A[j]``).
        """
        if self.A.ndim != 2:
            raise LinearSystemError(f"spurious eigenvalues are identified at one time; this result "
                                    f"stacks {self.A.shape[0]} times: use "
                                    f"identify_spurious_first_order(res.A[j], {self.n_independent}, "
                                    f"{self.n_spurious})")
        n1 = self.T0.shape[-1] if self.n_independent < 0 else self.n_independent
        return identify_spurious_first_order(self.A, n1, self.n_spurious)


def identify_spurious_first_order(A: ArrayLike, n_independent: int, l: int,  # noqa: E741
                                  *, rtol: float = SPURIOUS_RTOL) -> SpuriousIdentification:
    """Identify the ``l`` spurious eigenvalues of a Jacobian with first-order states (derived here).

    ``A`` is ordered ``[x̃_ai, ẋ̃_ai, x̃_ad, s̃]`` (``s = [z, w]``, any number). The rows of
    ``x̃_ad`` are ``[J31, J32, J33, 0]`` (the nonholonomic constraints do not involve ``z``), so
    the two exact structures of
    [`identify_spurious()`][nhcontrol.linearization.identify_spurious] carry over: the columns of
    ``x̃_ad`` vanish in every other row (``"decoupled"``: ``eig(J33)`` splits off), or
    ``J31 + J33 J32 = 0`` (``"conserved"``: ``[-J32, 0, I, 0]`` spans a left-invariant
    subspace). Otherwise ``l`` zero eigenvalues (``"zero"``) or the ``l`` nearest to
    ``eig(J33)`` (``"nearest"``) are reported, not exact.

    Parameters
    ----------
    A : (ns, ns) array_like
    n_independent : int
        ``n - m - l``.
    l : int
    rtol : float
        Relative tolerance (w.r.t. ``max(1, ‖A‖)``) of the zero tests.

    Returns
    -------
    SpuriousIdentification
    """
    A = np.asarray(A, dtype=float)
    eigs = np.linalg.eigvals(A)
    if l == 0:
        return SpuriousIdentification(eigs, np.zeros(0, complex), eigs, "none", True, 0.0, rtol)
    n1 = int(n_independent)
    ad = np.arange(2 * n1, 2 * n1 + l)
    other = np.setdiff1d(np.arange(A.shape[0]), ad)
    scale = max(1.0, float(np.linalg.norm(A)))
    J31, J32, J33 = A[ad, :n1], A[ad, n1:2 * n1], A[np.ix_(ad, ad)]
    r_dec = float(np.linalg.norm(A[np.ix_(other, ad)])) / scale
    r_con = (float(np.linalg.norm(J31 + J33 @ J32)) + float(np.linalg.norm(A[ad, 2 * n1 + l:]))
             ) / scale
    residual = min(r_dec, r_con)
    target = np.linalg.eigvals(J33)
    if r_dec <= rtol:
        non = np.linalg.eigvals(A[np.ix_(other, other)])
        return SpuriousIdentification(eigs, target, non, "decoupled", True, residual, rtol)
    if r_con <= rtol:
        _, non = _remove_matched(eigs, target)
        return SpuriousIdentification(eigs, target, non, "conserved", True, residual, rtol)
    small = np.argsort(np.abs(eigs), kind="stable")
    if np.all(np.abs(eigs[small[:l]]) <= ZERO_RTOL * scale):
        mask = np.zeros(eigs.size, bool)
        mask[small[:l]] = True
        return SpuriousIdentification(eigs, eigs[mask], eigs[~mask], "zero", False, residual, rtol)
    spur, non = _remove_matched(eigs, target)
    return SpuriousIdentification(eigs, spur, non, "nearest", False, residual, rtol)


_f64 = np.dtype(np.float64)


def _mat(a: ArrayLike, shape: tuple[int, int], what: str) -> NDArray[np.float64]:
    if type(a) is np.ndarray and a.dtype == _f64 and a.shape == shape and math.isfinite(
            float(np.add.reduce(a, axis=None)) if a.size else 0.0):
        return a        # a finite sum: every entry is finite (the common case, no copies)
    m = np.asarray(a, dtype=float)
    if m.shape != shape:
        raise LinearSystemError(f"{what} must have shape {shape}, got {m.shape}")
    if not np.all(np.isfinite(m)):
        raise LinearSystemError(f"{what} has non-finite entries")
    return m


@dataclass(frozen=True)
class _Kinematics:
    """Steps 1, 2 and 4 of the third procedure at one reference point (thesis order)."""

    perm: NDArray[np.intp]       # x_perm = x[perm], perm = [ai, ad, d]
    T0: NDArray[np.float64]      # (N, n, n1), rows in thesis order, Eq. (2.131)
    Vbb0: NDArray[np.float64]    # (N, n, n), Eq. (4.100)
    Th0: NDArray[np.float64]     # (N, n, n - m) = [Vh_ai, Vh_ad], Eqs. (4.107)-(4.108)

    def rate_rows(self, H_x: NDArray[np.float64], H_xd: NDArray[np.float64]
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``[(H_x + H_ẋ V̄̄0) Th0, H_ẋ T0]``: the columns of ``[x̃_a]`` and ``ẋ̃_ai`` of Eq. (7.26)
        (``H_x``, ``H_ẋ`` of shape ``(N, r, n)``)."""
        Hx, Hxd = H_x[..., self.perm], H_xd[..., self.perm]
        return (Hx + Hxd @ self.Vbb0) @ self.Th0, Hxd @ self.T0

    def T0_model(self) -> NDArray[np.float64]:
        out = np.empty_like(self.T0)
        out[:, self.perm] = self.T0
        return out


def _rates_given(ref: Reference) -> bool:
    """Whether the reference was given its input rates (else it says ``u̇0 = 0``)."""
    return bool(getattr(ref, "has_input_rates", True))


def _refuse_constraint_inputs(cm: CompiledModel) -> None:
    """Raise when inputs of ``cm`` enter its nonholonomic constraints (their terms are not carried)."""
    if getattr(cm, "constraint_inputs", ()):
        raise LinearSystemError(
            f"the inputs {list(cm.constraint_inputs)} of model {getattr(cm, 'name', '?')!r} enter "
            "its nonholonomic constraints B(x, u) ẋ + b(x, u) = 0; the linearization with "
            "first-order states does not carry their constraint and rate terms (B_rate). Use "
            "nhcontrol.linearize for the mechanical part (its B and B_rate carry them), or make "
            "those inputs coordinates of the model")


def _kinematics(cm: CompiledModel, ref: Reference, part: Partition, ts: NDArray[np.float64]
                ) -> tuple[_Kinematics, tuple]:
    """The reference values at the times ``ts`` (N,) and ``T0, V̄̄0, Th0`` from the model's
    linearization terms (one stacked kernel call)."""
    idx = part.indices(cm)
    n, m, l, k = idx.n, idx.m, idx.l, int(cm.ninputs)
    N = ts.shape[0]
    x, xd, xdd, lam, u = _reference_values(ref, ts, N, n, m + l, k)
    terms = cm.linearization_terms(x, xd, xdd, lam, u, getattr(ref, "parameters", None))
    with np.errstate(all="ignore"):
        out = third_procedure(_stacked_terms(terms, N, n, m, l, k), idx, k)
    kin = _Kinematics(perm=np.asarray(idx.perm), T0=out["T0"], Vbb0=out["Vbb0"], Th0=out["Th0"])
    return kin, (x, xd, xdd, lam, u)


def _assemble(lin: Any, kin: _Kinematics, n1: int, l: int,  # noqa: E741
              blocks: dict[str, NDArray[np.float64]], zi: Sequence[int], r: int, nw: int,
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``A`` (N, ns, ns) in ``[x̃_ai, ẋ̃_ai, x̃_ad, z̃, w̃]`` and the mechanical input columns
    (N, 2 n1 + l, k); the blocks ``H_*``, ``W_w`` are stacked ``(N, ·, ·)`` or one matrix."""
    nm = 2 * n1 + l
    ns = nm + r + nw
    N = kin.T0.shape[0]
    Am = np.asarray(lin.A).reshape(N, nm, nm)
    Bm = np.asarray(lin.B).reshape(N, nm, -1)
    Gx, Gxd = kin.rate_rows(blocks["H_x"], blocks["H_xd"])
    A = np.zeros((N, ns, ns))
    A[:, :nm, :nm] = Am
    A[:, :nm, nm:nm + r] = Bm[:, :, list(zi)]
    zr = slice(nm, nm + r)
    A[:, zr, :n1] = Gx[..., :n1]
    A[:, zr, n1:2 * n1] = Gxd
    A[:, zr, 2 * n1:nm] = Gx[..., n1:]
    A[:, zr, nm:nm + r] = blocks["H_z"]
    if nw:
        A[:, zr, nm + r:] = blocks["H_w"]
        A[:, nm + r:, nm + r:] = blocks["W_w"]
    return A, Bm


_SHARED: dict[tuple, tuple[Any, Any]] = {}
_SHARED_QUICK: dict[tuple, tuple[Any, Any, Any, Any]] = {}
_PARTITIONS: dict[tuple, Partition] = {}


def _partition(partition: Partition | Mapping[str, Any]) -> Partition:
    """``partition`` as a `Partition` (mappings converted once per content)."""
    if isinstance(partition, Partition):
        return partition
    try:
        key = tuple(tuple(partition.get(f, ())) for f in
                    ("independent", "admissible_dependent", "dependent")) + (len(partition),)
        hit = _PARTITIONS.get(key)
    except (AttributeError, TypeError):
        return Partition.from_dict(partition)
    if hit is None:
        hit = Partition.from_dict(partition)
        if len(_PARTITIONS) > 256:
            _PARTITIONS.clear()
        _PARTITIONS[key] = hit
    return hit


def _one_time(t: Any) -> NDArray[np.float64]:
    """`as_times` with the common finite float passed through."""
    if type(t) is float and math.isfinite(t):
        return np.array(t)
    return as_times(t, "t", error=LinearSystemError)


def _rate_passes_one(zd: NDArray[np.float64], H: NDArray[np.float64], x: NDArray[np.float64],
                     xd: NDArray[np.float64], z: NDArray[np.float64],
                     blocks: dict[str, NDArray[np.float64]], tol: float,
                     u: NDArray[np.float64] | None = None) -> bool:
    """The decision of `check_rate_equation` at one point (the scale of `rate_residuals`
    without its stacked axis; a failure is reported by `check_rate_equation` itself)."""
    if not (math.isfinite(tol) and tol > 0):
        return False
    res = np.abs(zd - H)
    if bool((res <= tol * (np.abs(zd) + np.abs(H))).all()):
        return True             # within the first two (non-negative) terms of the scale already
    vx = float(np.abs(xd).max(initial=0.0))
    scale = (np.abs(zd) + np.abs(H) + np.abs(blocks["H_x"]) @ np.maximum(1.0, np.abs(x))
             + np.abs(blocks["H_xd"]).sum(axis=1) * vx + np.abs(blocks["H_z"]) @ np.abs(z))
    if u is not None and u.size:
        scale = scale + np.abs(blocks["H_u"]) @ np.abs(u)
    return bool(np.all(res <= tol * scale))


def _shared_linearizer(cm: CompiledModel, part: Partition, check: bool, tol: float, p: Any) -> Any:
    """A prepared linearizer of ``cm`` (C kernels) kept per model, partition, check, tolerance
    and parameters (None: none can be made, the general path)."""
    if getattr(cm, "backend", None) != "c":
        return None
    quick = (id(cm), id(part), bool(check), float(tol), id(p))
    hit = _SHARED_QUICK.get(quick)
    if hit is not None and hit[0] is cm and hit[1] is part and hit[2] is p and (
            p is None or (type(p) is np.ndarray and not p.flags.writeable)):
        return hit[3]           # the same objects as last time, p read-only (no key to build)
    pv = None if p is None else np.asarray(p, dtype=float)
    key = (id(cm), tuple(part.independent), tuple(part.admissible_dependent),
           tuple(part.dependent), bool(check), float(tol),
           None if pv is None else pv.tobytes())
    hit = _SHARED.get(key)
    if hit is not None and hit[0] is cm:
        _remember(quick, cm, part, p, hit[1])
        return hit[1]
    try:
        lz = _prepared.Linearizer(cm, part, p=pv, check=check, tol=tol)
    except Exception:           # noqa: BLE001 - the general path raises with its message
        return None
    if not lz.compiled:
        lz = None
    if len(_SHARED) > 64:
        _SHARED.clear()
    _SHARED[key] = (cm, lz)
    _remember(quick, cm, part, p, lz)
    return lz


def _remember(quick: tuple, cm: CompiledModel, part: Partition, p: Any, lz: Any) -> None:
    if len(_SHARED_QUICK) > 64:
        _SHARED_QUICK.clear()
    _SHARED_QUICK[quick] = (cm, part, p, lz)     # holds the objects: their ids stay theirs


def _fast_point(cm: CompiledModel, ref: Reference, part: Partition, t: float,
                check: bool) -> tuple | None:
    """The mechanical rows and the kinematics of Steps 1, 2, 4 at one time from one compiled
    call (`nhcontrol.linearization.prepared`): ``(lz, A_m, B_m, T0, V̄̄0_dd, Th0, x0, ẋ0, u0)`` in
    model row order, or None (no C kernels, a check that needs the general path, ...)."""
    values = getattr(ref, "values", None)
    if values is None or getattr(cm, "backend", None) != "c":
        return None
    coords = getattr(ref, "coordinates", None)
    if coords is not None and tuple(coords) != tuple(cm.coordinates):
        return None
    tol = float(getattr(ref, "check_tol", ADMISSIBILITY_TOL))
    lz = _shared_linearizer(cm, part, check, tol, getattr(ref, "parameters", None))
    if lz is None:
        return None
    try:
        x, xd, xdd, lam, u = values(float(t))
        got = lz._with_kinematics(x, xd, xdd, lam, u if u.size else None)
    except _prepared._Refused:
        return None
    return (lz, *got, x, xd, u)


def _first_order_plan(lz: Any, r: int, nw: int, nr: int) -> Any:
    """The bound arguments of `_cpoint`'s ``nhc_point_first_order`` for linearizer ``lz`` and
    ``r`` states ``z``, ``nw`` states ``w``, ``nr`` inputs ``r`` (kept on ``lz``), or None."""
    plan = lz.__dict__.get("_fo_plan")
    if plan is not None and plan[0] == (r, nw, nr):
        return plan
    lib = _cpoint.library_for(lz.model)
    fo = getattr(lib, "first_order", None)
    if fo is None or lz._fast is None:
        return None
    _, head, _, c_p, c_u0, scal = lz._fast      # the tail with the work array: lz._kin_tail
    fb, dbl = lz._fb, lz._dbl
    ns, k = lz.nstates, lz._k
    Am, Bm = np.empty(max(1, ns * ns)), np.empty(max(1, ns * k))
    rd = np.array([r, nw, nr], dtype=np.int64)
    after_p = scal + (fb(dbl, Am), fb(dbl, Bm)) + lz._kin_tail + (fb(lib.ffi.typeof("int64_t[]"), rd),)
    plan = ((r, nw, nr), fo, head, after_p, c_p, c_u0, lz._kin_views[0], (Am, Bm, rd), ns + r + nw)
    lz.__dict__["_fo_plan"] = plan
    return plan


def _fast_first_order(cm: CompiledModel, ref: Reference, part: Partition, t: float, check: bool, r: int, nw: int,
                      nr: int, n: int, H_x: Any, H_xd: Any, H_z: Any, H_w: Any, W_w: Any,
                      W_r: Any) -> tuple | None:
    """``(lz, A, B, T0, x0, ẋ0, z0, blocks)`` of `linearize_with_first_order_states` from one
    compiled call, or None (then the general path decides, checks and names every problem)."""
    values = getattr(ref, "values", None)
    if values is None:
        return None
    coords = getattr(ref, "coordinates", None)
    if coords is not None and coords != cm.coordinates and tuple(coords) != tuple(cm.coordinates):
        return None
    blocks = []
    for a, shape in ((H_x, (r, n)), (H_xd, (r, n)), (H_z, (r, r)), (H_w, (r, nw)),
                     (W_w, (nw, nw)), (W_r, (nw, nr))):
        if not (type(a) is np.ndarray and a.dtype == _f64 and a.shape == shape):
            return None
        blocks.append(a if a.flags.c_contiguous else np.ascontiguousarray(a))
    tol = float(getattr(ref, "check_tol", ADMISSIBILITY_TOL))
    lz = _shared_linearizer(cm, part, check, tol, getattr(ref, "parameters", None))
    if lz is None:
        return None
    plan = _first_order_plan(lz, r, nw, nr)
    if plan is None:
        return None
    _, fn, head, after_p, c_p, c_u0, T0view, _, nt = plan
    x, xd, xdd, lam, u = values(t)
    sizes = (n, n, n, lz._c)
    for a, size in zip((x, xd, xdd, lam), sizes):
        if not (type(a) is np.ndarray and a.dtype == _f64 and a.shape == (size,)):
            return None
    if not (type(u) is np.ndarray and u.dtype == _f64 and u.shape == (r,)):
        return None
    fb, dbl = lz._fb, lz._dbl
    A = np.empty((nt, nt))
    B = np.empty((nt, nr))
    try:
        args = (fb(dbl, x), fb(dbl, xd), fb(dbl, xdd), fb(dbl, lam),
                fb(dbl, u) if r else c_u0, c_p)
        bargs = tuple(fb(dbl, b) for b in blocks) + (fb(dbl, A), fb(dbl, B))
        with lz._lock:
            if fn(*head, *args, *after_p, *bargs):
                return None
            T0 = T0view.copy()
    except (ValueError, BufferError, TypeError):
        return None
    return lz, A, B, T0, x, xd, u, blocks


def _finish_first_order(cm: CompiledModel, ref: Reference, whole: tuple, t: float, check: bool, H0: Any,
                        z_names: Sequence[str], w_names: Sequence[str], r_names: Sequence[str],
                        r: int, n1: int, l: int) -> FirstOrderLinearization:  # noqa: E741
    """`linearize_with_first_order_states` after the compiled call: the rate check (Eq. (7.19))."""
    lz, A, B, T0, x0, xd0, z0, (Hx, Hxd, Hz, _, _, _) = whole
    if check and H0 is not None:
        tol = float(getattr(ref, "check_tol", ADMISSIBILITY_TOL))
        zd0 = np.asarray(ref.ud(t), dtype=float).reshape(-1)
        H = np.asarray(H0, dtype=float).reshape(-1)
        ok = H.shape == zd0.shape == (r,) and math.isfinite(tol) and tol > 0
        if ok:      # within the first two (non-negative) terms of the scale (_rate_passes_one)
            for a, b in zip(zd0.tolist(), H.tolist()):
                if not (abs(a - b) <= tol * (abs(a) + abs(b)) and math.isfinite(b)):
                    ok = False
                    break
        if not ok:
            H = _mat(H.reshape(1, -1), (1, r), "H0")
            zd = zd0.reshape(1, r)
            blocks = {"H_x": Hx, "H_xd": Hxd, "H_z": Hz}
            if not _rate_passes_one(zd[0], H[0], x0, xd0, z0, blocks, tol):
                check_rate_equation(
                    np.array([t]), zd, H, x=x0[None], xd=xd0[None], z=z0[None],
                    u=np.zeros((1, 0)), H_x=Hx[None], H_xd=Hxd[None], H_z=Hz[None],
                    H_u=np.zeros((1, r, 0)), states=tuple(z_names), inputs=tuple(w_names),
                    rates_given=_rates_given(ref), tol=tol,
                    what=f"the reference of {cm.name!r} passed to linearize_with_first_order_states")
    A.flags.writeable = False
    B.flags.writeable = False
    T0.flags.writeable = False
    Cy, Dy, outs = _declared_outputs(cm, lz.partition, x0, xd0, z0,
                                     getattr(ref, "parameters", None), range(r), None, len(w_names),
                                     len(r_names))
    return FirstOrderLinearization(A=A, B=B, states=lz.states + tuple(z_names) + tuple(w_names),
                                   inputs=tuple(r_names), T0=T0, n_spurious=l, n_independent=n1,
                                   t=t, C=Cy, D=Dy, outputs=outs)


def _fast_rate_rows(lz: Any, T0: NDArray[np.float64], Vdd: NDArray[np.float64],
                    Th0: NDArray[np.float64], H_x: NDArray[np.float64],
                    H_xd: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """`_Kinematics.rate_rows` in model order at one point: ``(H_x + H_ẋ[:, dd] V̄̄0_dd) Th0``
    and ``H_ẋ T0`` (the permutation of the thesis order cancels in these products)."""
    idx = lz._idx
    dd = idx.__dict__.get("_dd")
    if dd is None:
        dd = np.concatenate([idx.ad, idx.d]).astype(np.intp)
        idx.__dict__["_dd"] = dd
    G = H_x + H_xd[:, dd] @ Vdd if dd.size else H_x
    return G @ Th0, H_xd @ T0


def _declared_outputs(cm: CompiledModel, part: Partition, x0: NDArray[np.float64],
                      xd0: NDArray[np.float64], u0: NDArray[np.float64], p: Any,
                      zi: Sequence[int], ui: Sequence[int] | None, nw: int, nr: int = 0
                      ) -> tuple[Any, Any, tuple[str, ...]]:
    """``C, D`` of the declared outputs in ``[x̃_ai, ẋ̃_ai, x̃_ad, z̃, w̃]`` (one point or
    stacked ``(N, ·)``), or ``(None, None, ())`` without outputs.

    The mechanical columns are those of `output_matrices` (the chain rule through the dependent
    coordinates and velocities, Eqs. (4.98)-(4.100)); the first-order states ``z`` are inputs of
    the mechanical model and enter neither the constraints (refused) nor the dependent
    velocities, so their columns are ``∂h/∂z`` itself; ``w`` does not enter ``h`` (zeros). ``D``
    holds ``∂h/∂u`` of the other inputs ``ui`` (None: ``nr`` zero columns, the references of
    ``w``)."""
    outs = tuple(getattr(cm, "outputs", ()) or ())
    if not outs:
        return None, None, ()
    from .outputs import output_matrices

    idx = part.indices(cm)
    Cm, Dm = output_matrices(cm, idx, x0, xd0, u0 if int(cm.ninputs) else None, p)
    Cm, Dm = np.asarray(Cm, dtype=float), np.asarray(Dm, dtype=float)
    lead = Cm.shape[:-2]
    q = Cm.shape[-2]
    C = np.concatenate([Cm, Dm[..., list(zi)], np.zeros(lead + (q, nw))], axis=-1)
    D = Dm[..., list(ui)] if ui is not None else np.zeros(lead + (q, nr))
    D = np.array(D, dtype=float)
    for a in (C, D):
        a.flags.writeable = False
    return C, D, outs


def _fast_assemble(Am: NDArray[np.float64], Bm: NDArray[np.float64], Gx: NDArray[np.float64],
                   Gxd: NDArray[np.float64], H_z: NDArray[np.float64], zi: Sequence[int],
                   n1: int, l: int, H_w: Any = None,  # noqa: E741
                   W_w: Any = None) -> NDArray[np.float64]:
    """`_assemble` at one point (no leading axis)."""
    nm = 2 * n1 + l
    r = H_z.shape[0]
    nw = 0 if W_w is None else W_w.shape[0]
    ns = nm + r + nw
    A = np.zeros((ns, ns))
    A[:nm, :nm] = Am
    A[:nm, nm:nm + r] = Bm[:, zi]
    zr = slice(nm, nm + r)
    A[zr, :n1] = Gx[:, :n1]
    A[zr, n1:2 * n1] = Gxd
    A[zr, 2 * n1:nm] = Gx[:, n1:]
    A[zr, nm:nm + r] = H_z
    if nw:
        A[zr, nm + r:] = H_w
        A[nm + r:, nm + r:] = W_w
    return A


def linearize_with_first_order_states(cm: CompiledModel, ref: Reference,
                                      partition: Partition | Mapping[str, Any], *,
                                      H_x: ArrayLike, H_xd: ArrayLike, H_z: ArrayLike, H_w: ArrayLike,
                                      W_w: ArrayLike, W_r: ArrayLike, z_names: Sequence[str],
                                      w_names: Sequence[str], r_names: Sequence[str],
                                      t: float = 0.0, check: bool = True,
                                      H0: ArrayLike | None = None) -> FirstOrderLinearization:
    """Third procedure with first-order states ``z`` (model inputs) and ``w`` (Sect. 7.2).

    Valid for any reference (at rest, steady or along a trajectory, ``z0(t)`` time varying)
    and ``l >= 0`` nonholonomic constraints (derived here, ``docs/theory/hydraulics.md``).

    Parameters
    ----------
    cm : CompiledModel
        Mechanical model whose inputs ``u`` are the states ``z`` (same order).
    ref : Reference
        Reference motion with ``u0(t) = z0(t)``.
    partition : Partition or mapping
        ``x = [x_ai, x_ad, x_d]`` (Eq. (7.29)), ``l`` coordinates ``x_ad``.
    H_x, H_xd : (r, n) array_like
        ``∂H/∂x``, ``∂H/∂ẋ`` at the reference point ``(x0, ẋ0, z0, w0)`` (Eq. (7.26)).
    H_z, H_w : (r, r), (r, u) array_like
        ``∂H/∂z``, ``∂H/∂w``.
    W_w, W_r : (u, u), (u, k) array_like
        ``∂W/∂w`` and ``∂W/∂r`` (Eq. (7.28)).
    z_names, w_names, r_names : sequence of str
    t : float
        Time on the reference.
    check : bool
        Check that the reference is a motion of the model with the forces of the states
        ``z0 = u0`` (`linearize()`) and, with ``H0``, that ``ż0 = H0``. ``False`` skips it.
    H0 : (r,) array_like, optional
        ``H(x0, ẋ0, z0, w0)``, the rates at the reference point. Given, the reference's
        ``ż0`` (its input rates ``ref.ud(t)``, zero unless given) is checked against it
        (Eq. (7.19)) relative to ``abs(ż0) + abs(H0)`` and the terms ``H_x x0``, ``H_ẋ ẋ0``,
        ``H_z z0`` (``w0`` is not known here).

    Returns
    -------
    FirstOrderLinearization
        ``A`` of size ``2n - 2m - l + r + u`` in ``[x̃_ai, ẋ̃_ai, x̃_ad, z̃, w̃]``.

    Raises
    ------
    ReferenceMotionError
        If the reference is not a motion of the model with the forces of ``z0``, or
        ``ż0 != H0`` (``check=True``).
    LinearSystemError
        On a shape mismatch, or if inputs of the model enter its nonholonomic constraints.
    """
    _refuse_constraint_inputs(cm)
    if type(t) is float and math.isfinite(t):
        tf = t                  # the common case: one finite time
    else:
        t_arr = _one_time(t)
        if t_arr.ndim:
            raise LinearSystemError(f"linearize_with_first_order_states linearizes at one time "
                                    f"(its H_x, H_xd, ... belong to one reference point); got t "
                                    f"of shape {t_arr.shape}: call it once per time")
        tf = float(t_arr)
    part = _partition(partition)
    n, l = int(cm.n), int(cm.l)
    n1 = n - int(cm.m) - l
    r, nw = len(z_names), len(w_names)
    if int(cm.ninputs) == r and getattr(cm, "backend", None) == "c":
        # C kernels: the whole Jacobian from one compiled call (kernel, Steps 1-7, the rows of
        # Eqs. (7.26), (7.28) and the finiteness of the blocks; _cpoint.nhc_point_first_order)
        whole = _fast_first_order(cm, ref, part, tf, check, r, nw, len(r_names), n,
                                  H_x, H_xd, H_z, H_w, W_w, W_r)
        if whole is not None:
            return _finish_first_order(cm, ref, whole, tf, check, H0, z_names,
                                       w_names, r_names, r, n1, l)
    blocks = dict(H_x=_mat(H_x, (r, n), "H_x"), H_xd=_mat(H_xd, (r, n), "H_xd"),
                  H_z=_mat(H_z, (r, r), "H_z"), H_w=_mat(H_w, (r, nw), "H_w"),
                  W_w=_mat(W_w, (nw, nw), "W_w"))
    Wr = _mat(W_r, (nw, len(r_names)), "W_r")
    # C kernels: the mechanical rows and T0, V̄̄0, Th0 from one compiled call (prepared.py)
    fast = _fast_point(cm, ref, part, tf, check) if int(cm.ninputs) == r else None
    if fast is not None:
        lz, Am, Bm, T0m, Vdd, Th0, x0, xd0, z0 = fast
        states0 = lz.states
        x0, xd0, z0 = x0[None], xd0[None], z0[None]
    else:
        lin = linearize(cm, ref, part, t, check=check)
        if np.asarray(lin.B).shape != (2 * n1 + l, r):
            raise LinearSystemError(f"the model's inputs must be the {r} states z {list(z_names)}; "
                                    f"its input matrix has shape {np.asarray(lin.B).shape}")
        kin, (x0, xd0, _, _, z0) = _kinematics(cm, ref, part, np.array([float(t)]))
        states0 = lin.states
    if check and H0 is not None:
        H = _mat(np.reshape(np.asarray(H0, dtype=float), (1, -1)), (1, r), "H0")
        zd0 = np.asarray(ref.ud(float(t)), dtype=float).reshape(1, r)
        tol = float(getattr(ref, "check_tol", ADMISSIBILITY_TOL))
        if not _rate_passes_one(zd0[0], H[0], x0[0], xd0[0], z0[0], blocks, tol):
            check_rate_equation(
                np.array([float(t)]), zd0, H,
                x=x0, xd=xd0, z=z0, u=np.zeros((1, 0)), H_x=blocks["H_x"][None],
                H_xd=blocks["H_xd"][None], H_z=blocks["H_z"][None], H_u=np.zeros((1, r, 0)),
                states=tuple(z_names), inputs=tuple(w_names), rates_given=_rates_given(ref),
                tol=float(getattr(ref, "check_tol", ADMISSIBILITY_TOL)),
                what=f"the reference of {cm.name!r} passed to linearize_with_first_order_states")
    if fast is not None:
        Gx, Gxd = _fast_rate_rows(lz, T0m, Vdd, Th0, blocks["H_x"], blocks["H_xd"])
        A = _fast_assemble(Am, Bm, Gx, Gxd, blocks["H_z"], list(range(r)), n1, l,
                           blocks["H_w"], blocks["W_w"])
        T0 = T0m
    else:
        A = _assemble(lin, kin, n1, l, blocks, range(r), r, nw)[0][0]
        T0 = kin.T0_model()[0]
    B = np.zeros((A.shape[0], len(r_names)))
    B[2 * n1 + l + r:, :] = Wr
    for a in (A, B, T0):
        a.flags.writeable = False
    states = tuple(states0) + tuple(z_names) + tuple(w_names)
    Cy, Dy, outs = _declared_outputs(cm, part, x0[0], xd0[0], z0[0],
                                     getattr(ref, "parameters", None), range(r), None, nw,
                                     len(r_names))
    return FirstOrderLinearization(A=A, B=B, states=states, inputs=tuple(r_names), T0=T0,
                                   n_spurious=l, n_independent=n1, t=float(t), C=Cy, D=Dy,
                                   outputs=outs)


def linearize_first_order_system(cm: CompiledModel, rates: Any, ref: Reference,
                                 partition: Partition | Mapping[str, Any], *,
                                 t: float = 0.0, check: bool = True) -> FirstOrderLinearization:
    """Third procedure for a model with first-order states built in ``MultibodySystem`` (Sect. 7.2).

    The model's inputs are ``[z, u]`` in declaration order (first-order states ``z`` with
    ``ż = H(x, ẋ, z, u)``, other inputs ``u``); the mechanical rows come from the third
    procedure with its exact input matrix (``∂Q/∂z`` and ``∂Q/∂u`` columns), the rows of ``z``
    from the exact rate Jacobians ([`compile_rates()`][nhcontrol.compiled.compile_rates]) at
    ``(x0, ẋ0, z0, u0)`` and the matrices of Steps 2 and 4 (derived here, see
    ``docs/theory/hydraulics.md``):

    $$
    \\dot{\\tilde z} = (H_x + H_{\\dot x}\\bar{\\bar V}_0) V^h_{ai} \\tilde x_{ai}
      + H_{\\dot x} T_0 \\dot{\\tilde x}_{ai} + (H_x + H_{\\dot x}\\bar{\\bar V}_0) V^h_{ad} \\tilde x_{ad}
      + H_z \\tilde z + H_u \\tilde u .
    $$

    Any reference: at rest, steady, or along a trajectory with time-varying ``z0(t)``, and
    ``l >= 0`` nonholonomic constraints.

    Parameters
    ----------
    cm : CompiledModel
        The compiled system (``system.compile()``).
    rates : RateKernels
        ``compile_rates(system)`` of the same system.
    ref : Reference
        Reference motion; ``u0(t)`` gives the model's full input vector ``[z0, u0]``. It must
        also satisfy ``ż0 = H(x0, ẋ0, z0, u0)`` (Eq. (7.19)), with ``ż0`` its input rates
        ``ref.ud(t)`` in the entries of ``z`` (zero unless given, ``ud=``): a ``z0(t)`` that
        varies needs them. The Jacobian does not use ``ż0``; the check does.
    partition : Partition or mapping
        ``x = [x_ai, x_ad, x_d]`` (Eq. (7.29)).
    t : float or (N,) array_like
        Time(s) on the reference; an array linearizes a trajectory with one stacked kernel
        call for the mechanics (the rate Jacobians are evaluated point by point).
    check : bool
        Admissibility and conditioning checks of `linearize()`, and the rate equation
        ``ż0 = H(x0, ẋ0, z0, u0)`` at every time (relative to the size of its terms,
        `nhcontrol.reference.admissibility`, tolerance ``ref.check_tol``). ``False`` skips
        them.

    Returns
    -------
    FirstOrderLinearization
        ``A`` of size ``2n - 2m - l + r`` in ``[x̃_ai, ẋ̃_ai, x̃_ad, z̃]`` (``(N, ns, ns)`` for
        an array of times), ``B`` for the other inputs ``u``; ``l`` spurious eigenvalues
        (``.spurious``).

    Raises
    ------
    ReferenceMotionError
        If the reference is not a motion of the model, or violates the rate equation of a
        first-order state (the message names it, the residual, its scale, the time and the
        fix; ``check=True``).
    LinearSystemError
        If ``rates`` does not belong to the model (input names differ), or if inputs of the
        model enter its nonholonomic constraints.
    """
    _refuse_constraint_inputs(cm)
    names = list(cm.inputs)
    if (sorted(rates.states + rates.inputs) != sorted(names)
            or [names[i] for i in rates.state_index] != list(rates.states)):
        raise LinearSystemError(f"the rate kernels (states {list(rates.states)}, inputs "
                                f"{list(rates.inputs)}) do not belong to model {cm.name!r} with "
                                f"inputs {names}")
    part = _partition(partition)
    t_arr = _one_time(t)
    ts = np.atleast_1d(t_arr)
    n, l = int(cm.n), int(cm.l)
    n1 = n - int(cm.m) - l
    # one time with C kernels: the mechanical rows and T0, V̄̄0, Th0 from one compiled call
    fast = _fast_point(cm, ref, part, float(t_arr), check) if t_arr.ndim == 0 else None
    if fast is not None:
        return _first_order_point(cm, rates, ref, fast, float(t_arr), check, n1, l)
    lin = linearize(cm, ref, part, t_arr, check=check)
    kin, (x0, xd0, _, _, u_all) = _kinematics(cm, ref, part, ts)
    p = getattr(ref, "parameters", None)
    jac = [rates.jacobians(x0[j], xd0[j], *rates.split_inputs(u_all[j]), p)
           for j in range(ts.shape[0])]
    if check:
        check_rates(rates, ts, x0, xd0, u_all, np.asarray(ref.ud(ts), dtype=float).reshape(u_all.shape),
                    p, jacobians=jac, rates_given=_rates_given(ref),
                    tol=float(getattr(ref, "check_tol", ADMISSIBILITY_TOL)),
                    what=f"the reference of {cm.name!r} passed to linearize_first_order_system")
    H = {key: np.stack([getattr(J, key) for J in jac]) for key in ("H_x", "H_xd", "H_z", "H_u")}
    zi, ui = list(rates.state_index), list(rates.input_index)
    r = len(zi)
    A, Bm = _assemble(lin, kin, n1, l, H, zi, r, 0)
    nm = 2 * n1 + l
    B = np.zeros(A.shape[:2] + (len(ui),))
    B[:, :nm, :] = Bm[:, :, ui]
    B[:, nm:, :] = H["H_u"]
    T0 = kin.T0_model()
    Cy, Dy, outs = _declared_outputs(cm, part, x0, xd0, u_all, p, zi, ui, 0)
    if t_arr.ndim == 0:
        A, B, T0 = A[0], B[0], T0[0]
        if Cy is not None:
            Cy, Dy = Cy[0], Dy[0]
    for a in (A, B, T0):
        a.flags.writeable = False
    states = tuple(lin.states) + tuple(rates.states)
    return FirstOrderLinearization(A=A, B=B, states=states, inputs=tuple(rates.inputs), T0=T0,
                                   n_spurious=l, n_independent=n1,
                                   t=float(t_arr) if t_arr.ndim == 0 else ts.copy(), C=Cy,
                                   D=Dy, outputs=outs)


def _first_order_point(cm: CompiledModel, rates: Any, ref: Reference, fast: tuple, t: float,
                       check: bool,
                       n1: int, l: int) -> FirstOrderLinearization:  # noqa: E741
    """`linearize_first_order_system` at one time from the compiled call (`_fast_point`)."""
    lz, Am, Bm, T0, Vdd, Th0, x0, xd0, u_all = fast
    p = getattr(ref, "parameters", None)
    zi, ui = list(rates.state_index), list(rates.input_index)
    # H and its Jacobians from one call of the rate kernel (RateKernels.jacobians_at)
    rt = rates.model.rate_terms(x0, xd0, u_all, p)
    Hx, Hxd, Hdu = np.asarray(rt.dH_dx), np.asarray(rt.dH_dxd), np.asarray(rt.dH_du)
    if not math.isfinite(float(np.add.reduce(Hx, axis=None) + np.add.reduce(Hxd, axis=None)
                               + np.add.reduce(Hdu, axis=None))):
        J = rates.jacobians(x0, xd0, *rates.split_inputs(u_all), p)   # raises (not finite)
        Hx, Hxd, Hdu = np.asarray(J.H_x), np.asarray(J.H_xd), np.empty((Hx.shape[0], 0))
    J = {"H_x": Hx, "H_xd": Hxd, "H_z": Hdu[:, zi], "H_u": Hdu[:, ui]}
    if check:
        ud = np.asarray(ref.ud(t), dtype=float).reshape(-1)
        tol = float(getattr(ref, "check_tol", ADMISSIBILITY_TOL))
        if not _rate_passes_one(ud[zi], np.asarray(rt.H, dtype=float), x0, xd0, u_all[zi], J,
                                tol, u_all[ui]):
            jac = rates.jacobians(x0, xd0, *rates.split_inputs(u_all), p)
            check_rates(rates, np.array([t]), x0[None], xd0[None], u_all[None], ud[None], p,
                        jacobians=[jac], rates_given=_rates_given(ref), tol=tol,
                        what=f"the reference of {cm.name!r} passed to linearize_first_order_system")
    Gx, Gxd = _fast_rate_rows(lz, T0, Vdd, Th0, Hx, Hxd)
    A = _fast_assemble(Am, Bm, Gx, Gxd, J["H_z"], zi, n1, l)
    nm = 2 * n1 + l
    B = np.zeros((A.shape[0], len(ui)))
    B[:nm, :] = Bm[:, ui]
    B[nm:, :] = J["H_u"]
    for a in (A, B, T0):
        a.flags.writeable = False
    Cy, Dy, outs = _declared_outputs(cm, lz.partition, x0, xd0, u_all, p, zi, ui, 0)
    return FirstOrderLinearization(A=A, B=B, states=tuple(lz.states) + tuple(rates.states),
                                   inputs=tuple(rates.inputs), T0=T0, n_spurious=l,
                                   n_independent=n1, t=t, C=Cy, D=Dy, outputs=outs)
