"""Third numerical linearization procedure (thesis Sect. 4.2.3, Eqs. (4.96)-(4.127)).

The index-3 DAE ``M(x,u) ẍ + Dᵀ(x) Λ = Q(x, ẋ, u)``, ``C(x) = 0``, ``B(x) ẋ = 0``
(Eqs. (8.1)-(8.3)) is linearized about a reference ``x0(t), ẋ0(t), ẍ0(t), Λ0(t), u0(t)`` and
reduced, with the partition ``x̃ = [x̃_ai, x̃_ad, x̃_d]`` of Eq. (4.96), to the first-order
system of minimal size ``2(n-m)-l``

$$
\\dot{\\tilde X} = J \\tilde X + B \\tilde u, \\qquad
\\tilde X = [\\tilde x_{ai}, \\dot{\\tilde x}_{ai}, \\tilde x_{ad}]
$$

(Eqs. (4.123)-(4.125), input matrix of Sect. 8.1). The seven steps are implemented literally,
with the thesis names; the blocks ``J21 … J33`` are those of Eq. (4.125). Every matrix carries a
leading ``N`` axis (stacked reference points), so a whole trajectory is linearized with one
fused kernel call and batched ``numpy.linalg.solve`` (no loop over the points).

Internally the coordinates are permuted once to the thesis order ``[x_ai, x_ad, x_d]``
(precomputed index arrays), so the block formulas read exactly as in the thesis.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import warnings
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.blas import limit_blas_threads
from .._util.errors import LinearSystemError, PartitionError, ReferenceMotionError
from .._util.validation import COND_MAX, as_times, require_model, require_reference
from ..compiled.model import LinearizationTerms
from ..reference._eval import constraint_names
from ..reference.admissibility import ADMISSIBILITY_TOL, _passes_one, check_admissible
from . import _cpoint
from ._point import point_procedure, point_suspect
from .outputs import output_matrices
from ._conditioning import _block_condition
from .partition import Partition, PartitionIndices, _report, _singular_message, suggest_partition
from .result import LinearizationResult, SpuriousIdentification, identify_spurious

if TYPE_CHECKING:
    from ..compiled import CompiledModel
    from ..reference import Reference

__all__ = ["linearize", "third_procedure", "INPUT_CONSTRAINT_ATOL", "MAX_PARTITION_SEARCH"]

MAX_PARTITION_SEARCH = 400
"""Largest number of alternative partitions tried when looking for an exact identification of the
spurious eigenvalues of a steady linearization (single swaps first, then double swaps).
"""

# INPUT_CONSTRAINT_ATOL (documented in nhcontrol._util.validation): ∂C/∂u, ∂(D ẍ0)/∂u, ∂Q_d/∂u
# above it mean that inputs enter the constraints at the reference.
from .._util.validation import INPUT_CONSTRAINT_ATOL  # noqa: E402


@lru_cache(maxsize=64)
def _eye(k: int) -> NDArray[np.float64]:
    e = np.eye(k)
    e.setflags(write=False)
    return e


def _mT(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.swapaxes(a, -1, -2)


def third_procedure(terms: Mapping[str, NDArray[np.float64]] | Any, idx: PartitionIndices,
                    ninputs: int, rates: Mapping[str, NDArray[np.float64]] | Any = None
                    ) -> dict[str, NDArray[np.float64]]:
    """Steps 1-7 of Sect. 4.2.3 on stacked linearization terms (pure numpy, no checks).

    Parameters
    ----------
    terms : LinearizationTerms or mapping
        Fields of `CompiledModel.linearization_terms()` with a leading ``N`` axis:
        ``M (N,n,n)``, ``D (N,m+l,n)``, ``Cx (N,m,n)``, ``B (N,l,n)``, ``dMa_dx``,
        ``dDTlam_dx``, ``dQ_dx``, ``dQ_dxd`` ``(N,n,n)``, ``dDv_dx``, ``dDa_dx``,
        ``dQd_dx``, ``dQd_dxd`` ``(N,m+l,n)``, ``dCxv_dx (N,m,n)``, ``dBv_dx (N,l,n)``,
        ``dQ_du``, ``dMa_du`` ``(N,n,k)``.
    idx : PartitionIndices
    ninputs : int
        ``k``.
    rates : InputRateTerms or mapping, optional
        Inputs in the nonholonomic constraints: the fields of
        `CompiledModel.input_rate_terms()` at ``u̇0`` (leading ``N`` axis), ``E (N,m+l,k)``,
        ``dEw_dx``, ``dEw_dxd (N,m+l,n)``, ``dEw_du (N,m+l,k)``, ``dDTlam_du (N,n,k)``. The
        velocity-level input term ``W̄0 = −D_dd⁻¹ E`` and the acceleration-level one
        ``Y0 = −D_dd⁻¹ (∂(Dẍ0)/∂u − ∂(Q_d − E u̇0)/∂u)`` enter ``B``, ``Q_d − E u̇0`` enters
        ``A``, and ``B_rate`` (the matrix of ``u̇``) is returned
        (docs/theory/road_vehicles.md, "Inputs in the constraints").

    Returns
    -------
    dict
        ``A (N, ns, ns)`` (Eq. (4.124), or Eq. (4.127) when ``l = 0``), ``B (N, ns, k)``
        (Sect. 8.1) with ``ns = 2(n-m)-l``, ``B_rate (N, ns, k)`` (with ``rates``), and the intermediate thesis matrices
        ``T0, Vbb0, U0, V0, Th0, Vh0, Vh_ai, Vh_ad, U_nh_ai, V_nh_ai, V_nh_ad, m0, R0, S0,
        J21 … J33`` — all in the permuted (thesis) coordinate order.
    """
    get = (lambda k: terms[k]) if isinstance(terms, Mapping) else (lambda k: getattr(terms, k))
    n, m, l = idx.n, idx.m, idx.l
    n1 = n - m - l            # number of x_ai
    na = n - m                # number of x_a = [x_ai, x_ad]
    k = int(ninputs)
    P = idx.perm
    M = np.asarray(get("M"))
    N = M.shape[0]

    def cols(a: NDArray[np.float64]) -> NDArray[np.float64]:          # permute columns
        return a[..., P]

    def both(a: NDArray[np.float64]) -> NDArray[np.float64]:          # rows and columns
        return a[:, P[:, None], P]

    Mp = both(M)
    dMa_dx = both(np.asarray(get("dMa_dx")))
    dDTlam_dx = both(np.asarray(get("dDTlam_dx")))
    dQ_dx = both(np.asarray(get("dQ_dx")))
    dQ_dxd = both(np.asarray(get("dQ_dxd")))
    D = cols(np.asarray(get("D")))
    dDv_dx = cols(np.asarray(get("dDv_dx")))
    dDa_dx = cols(np.asarray(get("dDa_dx")))
    dQd_dx = cols(np.asarray(get("dQd_dx")))
    dQd_dxd = cols(np.asarray(get("dQd_dxd")))
    rget = None
    if rates is not None:
        rget = (lambda key: np.asarray(rates[key])) if isinstance(rates, Mapping) else \
            (lambda key: np.asarray(getattr(rates, key)))
        dQd_dx = dQd_dx - cols(rget("dEw_dx"))          # ∂(Q_d − E u̇0)/∂x
        dQd_dxd = dQd_dxd - cols(rget("dEw_dxd"))       # ∂(Q_d − E u̇0)/∂ẋ
    kr = k if rget is not None else 0

    out: dict[str, NDArray[np.float64]] = {}

    # ---- Step 1: T0 = T(x0) (Eq. (2.131)), T0ᵀ Dᵀ = 0 eliminates Λ̃ (Eq. (4.97)) ----------
    # ---- Step 2: velocity transformation ẋ̃ = T0 ẋ̃_ai + V̄̄0 x̃ (Eqs. (4.98)-(4.100)) -------
    # ---- Step 3: acceleration transformation ẍ̃ = T0 ẍ̃_ai + U0 ẋ̃ + V0 x̃ (Eq. (4.101)) ----
    if m + l:
        D_ai, D_dd = D[:, :, :n1], D[:, :, n1:]
        # one LU of D_dd for the four right-hand sides of Eqs. (4.99), (4.102), (4.103)
        # (the identity block returns D_dd⁻¹ from the same LU, for the condition check)
        c = m + l
        rhs = np.empty((N, c, n1 + 3 * n + c + 2 * kr))
        rhs[:, :, :n1] = D_ai
        rhs[:, :, n1:n1 + n] = dDv_dx
        rhs[:, :, n1 + n:n1 + 2 * n] = dQd_dxd
        np.subtract(dDa_dx, dQd_dx, out=rhs[:, :, n1 + 2 * n:n1 + 3 * n])
        rhs[:, :, n1 + 3 * n:n1 + 3 * n + c] = _eye(c)
        if kr:
            # input columns: E = ∂(D ẋ0 + b)/∂u and ∂(D ẍ0)/∂u − ∂(Q_d − E u̇0)/∂u
            rhs[:, :, n1 + 3 * n + c:n1 + 3 * n + c + k] = rget("E")
            rhs[:, :, n1 + 3 * n + c + k:] = (np.asarray(get("dDa_du")) - np.asarray(get("dQd_du"))
                                              + rget("dEw_du"))
        sol = np.linalg.solve(D_dd, rhs)
        out["D_perm"], out["D_dd"], out["D_dd_inv"] = D, D_dd, sol[:, :, n1 + 3 * n:n1 + 3 * n + c]
        if kr:
            Wbar_dd = -sol[:, :, n1 + 3 * n + c:n1 + 3 * n + c + k]      # ẋ̃_dd ∋ W̄0 ũ
            Y_dd = -sol[:, :, n1 + 3 * n + c + k:]                       # ẍ̃_dd ∋ Y0 ũ
        T_dd = -sol[:, :, :n1]                                  # Eq. (4.99)
        Vbar = -sol[:, :, n1:n1 + n]                            # Eq. (4.99)
        U_low = sol[:, :, n1 + n:n1 + 2 * n]                    # Eq. (4.102)
        V_low = -sol[:, :, n1 + 2 * n:n1 + 3 * n]               # Eq. (4.103)
        T0 = np.empty((N, n, n1))
        T0[:, :n1] = _eye(n1)
        T0[:, n1:] = T_dd                                       # Eq. (2.131)
        Vbb0, U0, V0 = np.zeros((3, N, n, n))
        Vbb0[:, n1:] = Vbar                                     # Eq. (4.100)
        U0[:, n1:] = U_low                                      # Eq. (4.102)
        V0[:, n1:] = V_low                                      # Eq. (4.103)
    else:
        T0 = np.empty((N, n, n))
        T0[:] = _eye(n)
        Vbb0 = U0 = V0 = np.zeros((N, n, n))
    out.update(T0=T0, Vbb0=Vbb0, U0=U0, V0=V0)

    # ---- Step 4: position transformation x̃ = Vh_ai x̃_ai + Vh_ad x̃_ad (Eqs. (4.105)-(4.108))
    # ---- Step 5: ẋ̃ = Th0 ẋ̃_a + Vh0 x̃ from the differentiated holonomic constraints
    #              (Eqs. (4.110)-(4.113)); note [Vh_ai, Vh_ad] = Th0 (same blocks).
    if m:
        Cx = cols(np.asarray(get("Cx")))
        dCxv_dx = cols(np.asarray(get("dCxv_dx")))
        Cx_a, Cx_d = Cx[:, :, :na], Cx[:, :, na:]
        rhs = np.empty((N, m, na + n + m))
        rhs[:, :, :na] = Cx_a
        rhs[:, :, na:na + n] = dCxv_dx
        rhs[:, :, na + n:] = _eye(m)
        sol = np.linalg.solve(Cx_d, rhs)
        out["Cx_d"], out["Cx_d_inv"] = Cx_d, sol[:, :, na + n:]
        Th0 = np.empty((N, n, na))
        Th0[:, :na] = _eye(na)
        np.negative(sol[:, :, :na], out=Th0[:, na:])            # Eq. (4.112)
        Vh0 = np.zeros((N, n, n))
        np.negative(sol[:, :, na:na + n], out=Vh0[:, na:])      # Eq. (4.113)
    else:
        Th0 = T0 if m + l == 0 else np.empty((N, n, n))
        Th0[:] = _eye(n)
        Vh0 = np.zeros((N, n, n))
    Vh_ai = Th0[:, :, :n1]                                      # Eq. (4.107)
    Vh_ad = Th0[:, :, n1:]                                      # Eq. (4.108)
    out.update(Th0=Th0, Vh0=Vh0, Vh_ai=Vh_ai, Vh_ad=Vh_ad)

    # ---- Step 6: ẋ̃_ad = U_nh_ai ẋ̃_ai + V_nh_ai x̃_ai + V_nh_ad x̃_ad (Eqs. (4.114)-(4.117))
    if l:
        Bm = cols(np.asarray(get("B")))
        dBv_dx = cols(np.asarray(get("dBv_dx")))
        Bbar = Bm @ Th0                                          # B̄ = B Th0, Eq. (4.115)
        Bbar_ai, Bbar_ad = Bbar[:, :, :n1], Bbar[:, :, n1:]
        W = Bm @ Vh0 + dBv_dx                                    # B Vh0 + ∂(B ẋ0)/∂x
        rhs = np.empty((N, l, n1 + na + l + kr))
        rhs[:, :, :n1] = Bbar_ai
        np.matmul(W, Th0, out=rhs[:, :, n1:n1 + na])
        rhs[:, :, n1 + na:n1 + na + l] = _eye(l)
        if kr:
            rhs[:, :, n1 + na + l:] = rget("E")[:, m:, :]      # ∂(B ẋ0 + b)/∂u
        sol = np.linalg.solve(Bbar_ad, rhs)
        out["Bbar_ad"], out["Bbar_ad_inv"] = Bbar_ad, sol[:, :, na + n1:na + n1 + l]
        if kr:
            out["X_nh"] = -sol[:, :, na + n1 + l:]               # ẋ̃_ad ∋ −B̄_ad⁻¹ ∂(Bẋ0+b)/∂u ũ
        U_nh_ai = -sol[:, :, :n1]                                # Eq. (4.117)
        V_nh_ai = -sol[:, :, n1:2 * n1]                          # Eq. (4.117)
        V_nh_ad = -sol[:, :, 2 * n1:na + n1]                     # Eq. (4.117)
        out.update(Bbar=Bbar, U_nh_ai=U_nh_ai, V_nh_ai=V_nh_ai, V_nh_ad=V_nh_ad)

    # ---- Step 7: linearized equations of motion (4.118)-(4.119) and Jacobian (4.124) ------
    T0T = _mT(T0)
    m0 = T0T @ Mp @ T0                                           # Eq. (4.120)
    R0 = T0T @ (dQ_dxd - Mp @ U0)                                # Eq. (4.121)
    S0 = T0T @ (dQ_dx - Mp @ V0 - dMa_dx - dDTlam_dx)            # Eq. (4.122)
    RVS = R0 @ Vbb0 + S0                                         # R0 V̄̄0 + S0
    # one solve with m0 for [(R0 V̄̄0 + S0) [Vh_ai, Vh_ad], R0 T0, input block]
    rhs = np.empty((N, n1, na + n1 + k + kr))
    np.matmul(RVS, Th0, out=rhs[:, :, :na])
    np.matmul(R0, T0, out=rhs[:, :, na:na + n1])
    if k:
        # input matrix, Sect. 8.1: m0⁻¹ T0ᵀ (∂Q/∂u - ∂(M ẍ0)/∂u)
        dQ_du = np.asarray(get("dQ_du"))[:, P, :]
        dMa_du = np.asarray(get("dMa_du"))[:, P, :]
        np.matmul(T0T, dQ_du - dMa_du, out=rhs[:, :, na + n1:na + n1 + k])
    if kr:
        # inputs in the constraints: m0⁻¹ [T0ᵀ(−∂(DᵀΛ0)/∂u − M Y0) + R0 W̄0] and the rate
        # matrix m0⁻¹ (−T0ᵀ M W̄0)
        Pu = -rget("dDTlam_du")[:, P, :]
        if m + l:
            Pu = Pu - Mp[:, :, n1:] @ Y_dd
            rhs[:, :, na + n1:na + n1 + k] += R0[:, :, n1:] @ Wbar_dd
            rhs[:, :, na + n1 + k:] = -(T0T @ (Mp[:, :, n1:] @ Wbar_dd))
        else:
            rhs[:, :, na + n1 + k:] = 0.0
        rhs[:, :, na + n1:na + n1 + k] += T0T @ Pu
    sol = np.linalg.solve(m0, rhs)
    J21 = sol[:, :, :n1]                                         # Eq. (4.125)
    J23 = sol[:, :, n1:na]                                       # Eq. (4.125)
    J22 = sol[:, :, na:na + n1]                                  # Eq. (4.125)
    Bu = sol[:, :, na + n1:na + n1 + k]
    out.update(m0=m0, R0=R0, S0=S0, J21=J21, J22=J22, J23=J23)

    ns = 2 * n1 + l
    A = np.zeros((N, ns, ns))
    A[:, :n1, n1:2 * n1] = _eye(n1)
    A[:, n1:2 * n1, :n1] = J21
    A[:, n1:2 * n1, n1:2 * n1] = J22
    if l:
        A[:, n1:2 * n1, 2 * n1:] = J23
        A[:, 2 * n1:, :n1] = out["V_nh_ai"]                      # J31, Eq. (4.125)
        A[:, 2 * n1:, n1:2 * n1] = out["U_nh_ai"]                # J32
        A[:, 2 * n1:, 2 * n1:] = out["V_nh_ad"]                  # J33
        out.update(J31=out["V_nh_ai"], J32=out["U_nh_ai"], J33=out["V_nh_ad"])
    Bin = np.zeros((N, ns, k))
    if k:
        Bin[:, n1:2 * n1, :] = Bu
    if kr:
        Brate = np.zeros((N, ns, k))
        Brate[:, n1:2 * n1, :] = sol[:, :, na + n1 + k:]
        if l:
            Bin[:, 2 * n1:, :] = out["X_nh"]
        out["B_rate"] = Brate
    out.update(A=A, B=Bin)
    return out


_add_reduce = np.add.reduce


def _stack(a: Any, N: int, shape: tuple[int, ...]) -> NDArray[np.float64]:
    if type(a) is np.ndarray and a.dtype == np.float64 and a.shape == (N,) + shape:
        return a
    arr = np.asarray(a, dtype=float)
    return arr.reshape((N,) + shape)


def _batched_cond(mats: NDArray[np.float64]) -> NDArray[np.float64]:
    if mats.shape[-1] == 0:
        return np.ones(mats.shape[0])
    sv = np.linalg.svd(mats, compute_uv=False)
    with np.errstate(divide="ignore"):
        return np.where(sv[:, -1] > 0, sv[:, 0] / np.where(sv[:, -1] > 0, sv[:, -1], 1.0),
                        np.inf)


@limit_blas_threads(lambda cm, *args, **kwargs: cm.n)   # one BLAS thread for n >= 64 (_util/blas.py)
def linearize(cm: CompiledModel, ref: Reference, partition: Partition | Mapping[str, Any] | None = None,
              t: ArrayLike = 0.0, *, check: bool = True,
              cond_max: float = COND_MAX) -> LinearizationResult:
    """Linearize a constrained multibody model about a reference (third procedure).

    Implements Steps 1-7 of thesis Sect. 4.2.3: the Jacobian ``A`` of Eq. (4.124)
    (``(2(n-m)-l)``-square; Eq. (4.127), ``2(n-m)``-square, when ``l = 0``) in the state
    ``X̃ = [x̃_ai, ẋ̃_ai, x̃_ad]`` (Eq. (4.123)), and the input matrix of Sect. 8.1,

    $$
    B = \\begin{bmatrix} 0 \\\\ m_0^{-1} T_0^T\\left(\\frac{\\partial Q}{\\partial u}
        - \\frac{\\partial (M \\ddot x_0)}{\\partial u}\\right) \\\\ 0 \\end{bmatrix}.
    $$

    Parameters
    ----------
    cm : CompiledModel
        Model with the fused ``linearization_terms`` kernel (contracts, section 2).
    ref : Reference
        Reference motion: ``x, xd, xdd, lam, u`` callables of ``t``, ``steady``,
        ``parameters``.
    partition : Partition or mapping, optional
        ``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)); a mapping goes through
        [`Partition.from_dict()`][nhcontrol.linearization.Partition.from_dict]; ``None`` uses
        [`suggest_partition()`][nhcontrol.linearization.suggest_partition] at the first time.
    t : float or (N,) array_like
        Time(s) on the reference. An array is evaluated vectorised (one stacked kernel call).
    check : bool
        Check, at every time in ``t``, that the reference is a motion of the model: ``C(x0) = 0``
        (Eq. (2.109)), ``D(x0) ẋ0 = 0`` (Eq. (2.114)), ``D ẍ0 = Qd`` (Eq. (2.116)) and
        ``M ẍ0 + Dᵀ Λ0 = Q(x0, ẋ0, u0)`` (Eq. (2.108), input forces at ``u0`` included), each
        relative to the size of its terms with the reference's ``check_tol`` (default ``1e-8``;
        `nhcontrol.reference.admissibility`). It reuses ``M, Q, D, Qd`` of the
        linearization terms (only ``C(x0)`` is evaluated in addition). Also check that
        ``D_dd``, ``∂C/∂x_d``, ``B̄_ad`` are well conditioned at every point (batched SVD).
        ``check=False`` skips both (e.g. in a loop over times already checked); the
        finiteness of the result is always checked.
    cond_max : float
        Condition-number tolerance.

    Returns
    -------
    LinearizationResult
        ``A (ns, ns)`` / ``(N, ns, ns)``, ``B (ns, k)`` / ``(N, ns, k)``, state and input names,
        ``n_spurious = l``.

    Raises
    ------
    PartitionError
        Invalid or singular partition (names the block, the coordinates, the condition number
        and suggests a valid partition).
    ReferenceMotionError
        A reference that is not a motion of the model (``check=True``; the message names the
        constraint or coordinate, the residual, the time and the fix), non-finite reference
        values or linearization, or a singular reduced mass matrix ``m0`` (Eq. (4.120)).
    LinearSystemError
        ``t`` is not a real scalar or a 1-D array of finite times.
    ArgumentTypeError
        ``cm`` is not a compiled model or ``ref`` not a reference (a ``TypeError``).

    Warns
    -----
    UserWarning
        When inputs enter the holonomic constraints at the reference (``∂C/∂u ≠ 0``: quasi-static,
        the input matrix lacks their terms, see docs/theory/inputs.md, Sect. 4).

    Notes
    -----
    When inputs enter the nonholonomic constraints ``B(x, u) ẋ + b(x, u) = 0``
    (``cm.constraint_inputs``), ``B`` also holds their constraint terms and the result has the
    rate matrix ``B_rate`` of ``dX̃/dt = A X̃ + B ũ + B_rate dũ/dt``; the reference's input
    rates ``ref.ud(t)`` enter ``A`` and the admissibility check
    (docs/theory/road_vehicles.md, "Inputs in the constraints").

    For a steady reference with ``l > 0`` the result keeps the terms of its first point, so
    that
    [`LinearizationResult.spurious_eigenvalues`][nhcontrol.linearization.LinearizationResult.spurious_eigenvalues]
    can, if this partition has no exact
    structure, look for another split of ``[x_ai, x_ad]`` that has one (no new kernel call;
    docs/theory/linearization.md, Sect. 6).

    Examples
    --------
    >>> from nhcontrol.models import benchmark_bicycle as bb          # doctest: +SKIP
    >>> cm = bb.model(); ref = bb.steady_forward(cm, 5.0)               # doctest: +SKIP
    >>> res = linearize(cm, ref, Partition.from_dict(bb.PARTITION_4_172))  # doctest: +SKIP
    >>> res.A.shape                                                     # doctest: +SKIP
    (10, 10)
    """
    require_model(cm, "cm", "linearize", needs=("linearization_terms",))
    require_reference(ref, "ref", "linearize")
    ref_coords = getattr(ref, "coordinates", None)
    if ref_coords is not None and tuple(ref_coords) != tuple(cm.coordinates):
        raise ReferenceMotionError(
            f"linearize: the reference was built for model {getattr(ref, 'model_name', '?')!r} "
            f"with coordinates {list(ref_coords)}, but cm is {getattr(cm, 'name', '?')!r} with "
            f"{list(cm.coordinates)}; pass the reference built for this model")
    if type(t) is float and math.isfinite(t):
        t_arr = np.array(t)                   # the common scalar time, already valid
    else:
        t_arr = as_times(t, "t", error=LinearSystemError)
    scalar = t_arr.ndim == 0
    ts = np.atleast_1d(t_arr)
    if partition is None:
        partition = suggest_partition(cm, ref, t=float(ts[0]), cond_max=cond_max)
    elif not isinstance(partition, Partition):
        partition = Partition.from_dict(partition)
    idx = partition.indices(cm)
    n, m, l, k = idx.n, idx.m, idx.l, int(cm.ninputs)
    N = ts.shape[0]

    x, xd, xdd, lam, u = _reference_values(ref, ts, N, n, m + l, k)
    p = getattr(ref, "parameters", None)
    # C kernels: the compiled Steps 1-7 and checks (linearization/_cpoint.py); None when the
    # general path must decide (a failed check, inputs in the constraints, NaN or inf in the
    # reference values, which the C kernels refuse, ...)
    tol = float(getattr(ref, "check_tol", ADMISSIBILITY_TOL))
    fast = (_cpoint.point_function(cm, idx, INPUT_CONSTRAINT_ATOL)
            if getattr(cm, "backend", None) == "c" and (not check or 0.0 < tol < math.inf)
            else None)
    if fast is not None and N == 1:
        got = fast(x[0], xd[0], xdd[0], lam[0], None if u is None else u[0], p, check, tol,
                   cond_max, True)
        if got is not None:
            return _fast_result(cm, ref, partition, idx, got, t_arr, ts, scalar, cond_max)
    if not np.isfinite(np.concatenate((x, xd, xdd, lam), axis=1)).all():
        for name, val in (("x0", x), ("xd0", xd), ("xdd0", xdd), ("lam0", lam)):
            if not np.all(np.isfinite(val)):
                bad = int(np.argwhere(~np.all(np.isfinite(val), axis=-1))[0, 0])
                raise ReferenceMotionError(f"the reference {name}(t) is not finite at t = "
                                           f"{ts[bad]:g}; check the reference motion")
    if fast is not None and N > 1:
        got = fast.many(x, xd, xdd, lam, u, p, check, tol, cond_max)
        if got is not None:
            return _fast_result(cm, ref, partition, idx, got, t_arr, ts, scalar, cond_max)
    # inputs in the nonholonomic constraints: their terms at the reference's input rates u̇0
    rates = _input_rate_terms(cm, ref, ts, x, xd, lam, u, p) if k else None
    if N == 1:
        # one point: the scalar kernel and the single-point Steps 1-7 (linearization/_point.py),
        # free of the per-operation numpy overhead of the stacked path
        terms = cm.linearization_terms(x[0], xd[0], xdd[0], lam[0],
                                       None if u is None else u[0], p)
        if check:
            _check_reference(cm, ref, ts, x, xd, xdd, lam, u, p, terms, rates)
        return _linearize_point(cm, ref, partition, idx, terms, ts, scalar, check, cond_max,
                                rates)
    A = B = tv = None
    Brate = None
    if rates is not None:
        A, B, tv, worst, Brate = _stacked_block(cm, ref, partition, idx, ts, x, xd, xdd, lam, u,
                                                p, check, cond_max, warn=True, rates=rates)
    elif N >= 2 * STACK_CHUNK and (p is None or (isinstance(p, np.ndarray) and p.ndim == 1)):
        # blocks of STACK_CHUNK points from the kernel call to Steps 1-7: smaller temporaries
        # (fewer freshly mapped pages, a working set that stays in the cache; measured 0-30 %
        # less CPU for 1,000 bicycle points depending on the allocator's state); the same
        # per-point operations, so the same numbers. Any error, and the order in which errors
        # are reported, comes from the one-block path below (rerun on the whole stack).
        try:
            A, B, tv, worst = _stacked_chunks(cm, ref, partition, idx, ts, x, xd, xdd, lam, u,
                                              p, check, cond_max)
        except Exception:
            A = B = tv = None
        else:
            if k and worst > INPUT_CONSTRAINT_ATOL:
                _warn_inputs(worst, cm)
    if A is None:
        A, B, tv, worst, _ = _stacked_block(cm, ref, partition, idx, ts, x, xd, xdd, lam, u, p,
                                            check, cond_max, warn=True)
    if scalar:
        A, B = A[0], B[0]
        Brate = None if Brate is None else Brate[0]
    res = _result(cm, ref, partition, idx, A, B, t_arr if scalar else ts.copy(), scalar, Brate)
    if l and res.steady:
        # lazily used by res.spurious_eigenvalues when this partition has no exact structure
        tv0 = {key: val[:1] for key, val in tv.items()}
        res._cache["search"] = partial(_search_exact_partition, tv0, idx, k,
                                       tuple(cm.coordinates), cond_max)
    return res


STACK_CHUNK = 128
"""Points per block of a stacked linearization of at least ``2 * STACK_CHUNK`` points."""


def _stacked_block(cm: CompiledModel, ref: Reference, partition: Partition, idx: PartitionIndices,
                   ts: NDArray[np.float64], x: NDArray[np.float64], xd: NDArray[np.float64],
                   xdd: NDArray[np.float64], lam: NDArray[np.float64],
                   u: NDArray[np.float64] | None, p: Any, check: bool, cond_max: float,
                   warn: bool, rates: Any = None) -> tuple[Any, ...]:
    """Kernel, checks and Steps 1-7 at the stacked times ``ts``: ``A (N, ns, ns)``,
    ``B (N, ns, k)``, the stacked terms, the largest input-in-constraint term not carried and
    ``B_rate (N, ns, k)`` (None without ``rates``)."""
    N = ts.shape[0]
    n, m, l, k = idx.n, idx.m, idx.l, int(cm.ninputs)
    terms = cm.linearization_terms(x, xd, xdd, lam, u, p)
    if check:
        _check_reference(cm, ref, ts, x, xd, xdd, lam, u, p, terms, rates)
    tv = _stacked_terms(terms, N, n, m, l, k)
    worst = _inputs_worst(tv, rates is not None) if k else 0.0
    if warn and worst > INPUT_CONSTRAINT_ATOL:
        _warn_inputs(worst, cm)
    with np.errstate(all="ignore"):
        # Steps 1-7 on the stack (linearization/_point.py; third_procedure is the same in the
        # thesis order, kept as the readable reference); a singular block gives NaN entries
        out = point_procedure(tv, idx, k, N, rates)
    if check:
        _check_stacked(out, partition, idx, tv, ts, cm, ref, cond_max)
    else:
        bad = ~(np.isfinite(out["A"]).all(axis=(1, 2)) & np.isfinite(out["B"]).all(axis=(1, 2)))
        if (m + l) and bad.any():
            _check_blocks(partition, idx, tv, ts, cm, ref, cond_max, np.flatnonzero(bad))
    A, B = out["A"], out["B"]
    _check_finite_result(A, B, out["m0"], ts)
    return A, B, tv, worst, out.get("B_rate")


def _stacked_chunks(cm: CompiledModel, ref: Reference, partition: Partition, idx: PartitionIndices,
                    ts: NDArray[np.float64], x: NDArray[np.float64], xd: NDArray[np.float64],
                    xdd: NDArray[np.float64], lam: NDArray[np.float64],
                    u: NDArray[np.float64] | None, p: Any, check: bool, cond_max: float
                    ) -> tuple[Any, ...]:
    """`_stacked_block` on consecutive blocks of `STACK_CHUNK` points (no warning; the largest
    input-in-constraint term is returned); the stacked terms of the first block."""
    N = ts.shape[0]
    A = B = tv0 = None
    worst = 0.0
    for s in range(0, N, STACK_CHUNK):
        sl = slice(s, s + STACK_CHUNK)
        a, b, tv, w, _ = _stacked_block(cm, ref, partition, idx, ts[sl], x[sl], xd[sl], xdd[sl],
                                     lam[sl], None if u is None else u[sl], p, check, cond_max,
                                     warn=False)
        if A is None:
            A = np.empty((N,) + a.shape[1:])
            B = np.empty((N,) + b.shape[1:])
            tv0 = tv
        A[sl], B[sl] = a, b
        worst = max(worst, w)
    return A, B, tv0, worst


def _check_reference(cm: CompiledModel, ref: Reference, ts: NDArray[np.float64], x: NDArray[np.float64],
                     xd: NDArray[np.float64], xdd: NDArray[np.float64], lam: NDArray[np.float64],
                     u: NDArray[np.float64] | None, p: Any, terms: Any, rates: Any = None) -> None:
    """Admissibility of the reference at ``ts`` from the linearization terms (no extra kernel
    call but ``C(x0)``); with inputs in the constraints the acceleration level is
    ``D ẍ0 = Q_d − E u̇0``; raises `ReferenceMotionError`."""
    N, n, m, ml = x.shape[0], x.shape[1], int(cm.m), lam.shape[1]
    if m:
        C = np.asarray(cm.C(x[0], None if u is None else u[0], p) if N == 1
                       else cm.C(x, u, p), dtype=float).reshape(N, m)
    else:
        C = np.zeros((N, 0))
    b = (np.asarray(cm.b(x, u, p), dtype=float).reshape(N, ml)
         if getattr(cm, "affine_names", ()) else None)
    tol = float(getattr(ref, "check_tol", ADMISSIBILITY_TOL))
    M, Q = _stack(terms.M, N, (n, n)), _stack(terms.Q, N, (n,))
    D, Qd = _stack(terms.D, N, (ml, n)), _stack(terms.Qd, N, (ml,))
    if rates is not None:
        Qd = Qd - np.einsum("nij,nj->ni", _stack(rates.E, N, (ml, u.shape[1])),
                            _stack(rates.ud, N, (u.shape[1],)))
    if N == 1 and tol > 0 and math.isfinite(tol) and _passes_one(
            x[0], xd[0], xdd[0], lam[0], M[0], Q[0], D[0], Qd[0], C[0],
            None if b is None else b[0], tol):
        return    # the one-point decision of check_admissible, without its message arguments
    check_admissible(ts, x, xd, xdd, lam, u, M=M, Q=Q, D=D, Qd=Qd, C=C,
                     coordinates=tuple(cm.coordinates),
                     constraints=constraint_names(cm), inputs=tuple(cm.inputs), b=b,
                     lam_given=getattr(ref, "lam_source", "given") == "given", tol=tol,
                     what=f"the reference of {getattr(cm, 'name', 'the model')!r} passed to "
                          "linearize")


def _input_rate_terms(cm: CompiledModel, ref: Reference, ts: NDArray[np.float64],
                      x: NDArray[np.float64],
                      xd: NDArray[np.float64], lam: NDArray[np.float64],
                      u: NDArray[np.float64] | None, p: Any) -> Any:
    """The terms of inputs that enter the nonholonomic constraints at the reference
    (`CompiledModel.input_rate_terms()` at ``u̇0``, read from ``ref.ud`` when the reference
    has input rates, else zero), with ``ud`` attached; None when no input enters them."""
    if not getattr(cm, "constraint_inputs", ()) or not hasattr(cm, "input_rate_terms"):
        return None
    N, k = ts.shape[0], u.shape[1]
    fud = getattr(ref, "ud", None)
    ud = np.zeros((N, k)) if fud is None else _stack(fud(ts), N, (k,))
    if N == 1:
        terms = cm.input_rate_terms(x[0], xd[0], ud[0], lam[0], u[0], p)
    else:
        terms = cm.input_rate_terms(x, xd, ud, lam, u, p)
    return _RateTerms(terms, ud if N > 1 else ud[0])


class _RateTerms:
    """`InputRateTerms` with the input rates ``ud`` they were evaluated at."""

    def __init__(self, terms: Any, ud: NDArray[np.float64]) -> None:
        self.E, self.dEw_dx, self.dEw_dxd = terms.E, terms.dEw_dx, terms.dEw_dxd
        self.dEw_du, self.dDTlam_du, self.ud = terms.dEw_du, terms.dDTlam_du, ud


def _reference_values(ref: Reference, ts: NDArray[np.float64], N: int, n: int, ml: int, k: int
                      ) -> tuple[NDArray[np.float64], ...]:
    """``x0, ẋ0, ẍ0, Λ0`` (N, ·) and ``u0`` (N, k) or None at the times ``ts``.

    A :class:`~nhcontrol.reference.Reference` evaluates all five with one time check
    (``Reference.values``); any other object with the callables ``x, xd, xdd, lam, u`` works.
    """
    values = getattr(ref, "values", None)
    if values is not None:
        x, xd, xdd, lam, u_val = values(ts)
    else:
        x, xd, xdd, lam = ref.x(ts), ref.xd(ts), ref.xdd(ts), ref.lam(ts)
        u_val = ref.u(ts) if k else None
    u = None
    if k:
        u = np.zeros((N, k)) if u_val is None else _stack(u_val, N, (k,))
    return (_stack(x, N, (n,)), _stack(xd, N, (n,)), _stack(xdd, N, (n,)),
            _stack(lam, N, (ml,)), u)


def _stacked_terms(terms: Any, N: int, n: int, m: int, l: int,  # noqa: E741
                   k: int) -> dict[str, NDArray[np.float64]]:
    """The fields of the kernel's LinearizationTerms with explicit stacked shapes."""
    shapes = {"M": (n, n), "D": (m + l, n), "Cx": (m, n), "B": (l, n), "dMa_dx": (n, n),
              "dDTlam_dx": (n, n), "dQ_dx": (n, n), "dQ_dxd": (n, n), "dDv_dx": (m + l, n),
              "dDa_dx": (m + l, n), "dQd_dx": (m + l, n), "dQd_dxd": (m + l, n),
              "dCxv_dx": (m, n), "dBv_dx": (l, n), "dQ_du": (n, k), "dMa_du": (n, k),
              "dC_du": (m, k), "dDa_du": (m + l, k), "dQd_du": (m + l, k)}
    return {key: _stack(getattr(terms, key), N, shp) for key, shp in shapes.items()}


def _check_stacked(out: dict[str, NDArray[np.float64]], partition: Partition,
                   idx: PartitionIndices, tv: dict[str, NDArray[np.float64]],
                   ts: NDArray[np.float64], cm: CompiledModel, ref: Reference, cond_max: float) -> None:
    """Conditioning of the inverted blocks at every point of a stacked linearization.

    With ``R`` the row norms of the full matrix ``F`` and ``F_s = R⁻¹F`` (unit rows), the
    relative condition number of a block is at most ``sqrt(rows) ‖F_blk⁻¹ R‖_F``
    (``‖F_s‖₂ <= ‖F_s‖_F = sqrt(rows)``), from the inverses the procedure computed anyway;
    only points where that bound reaches ``cond_max`` (or is not finite: a singular block) go to
    the exact (SVD) decision.
    """
    suspect = np.zeros(ts.shape[0], bool)
    D = out.get("D")
    blocks = []
    if D is not None:
        blocks += [(D, out["D_dd_inv"]), (D[:, :idx.m], out.get("Cx_d_inv"))]
    blocks.append((out.get("Bbar"), out.get("Bbar_ad_inv")))
    with np.errstate(all="ignore"):
        for full, inv in blocks:
            if inv is None or inv.shape[-1] == 0:
                continue
            rn = np.sqrt(np.einsum("nij,nij->ni", full, full))
            invR = inv * rn[:, None, :]
            bound = np.sqrt(full.shape[1] * np.einsum("nij,nij->n", invR, invR))
            suspect |= ~((bound < cond_max) & np.all(rn > 0, axis=1))
    if np.any(suspect):
        _check_blocks(partition, idx, tv, ts, cm, ref, cond_max, np.flatnonzero(suspect))


def _check_finite_result(A: NDArray[np.float64], B: NDArray[np.float64],
                         m0: NDArray[np.float64], ts: NDArray[np.float64]) -> None:
    """Raise ReferenceMotionError at the first point where ``A`` or ``B`` is not finite."""
    if np.isfinite(A).all() and np.isfinite(B).all():
        return
    bad = int(np.argwhere(~(np.all(np.isfinite(A), axis=(1, 2))
                            & np.all(np.isfinite(B), axis=(1, 2))))[0, 0])
    m0 = m0.reshape(ts.shape[0], *m0.shape[-2:])
    cond_m0 = _batched_cond(m0[bad:bad + 1])[0]
    raise ReferenceMotionError(
        f"the linearization is not finite at t = {ts[bad]:g} (cond of the reduced mass "
        f"matrix m0 = T0ᵀ M T0, Eq. (4.120), is {cond_m0:.3g}); check the reference motion, "
        f"the parameters and the partition")


@lru_cache(maxsize=256)
def _state_names(coords: tuple[str, ...], ai: tuple[int, ...],
                 ad: tuple[int, ...]) -> tuple[str, ...]:
    ai_names = tuple(coords[i] for i in ai)
    return ai_names + tuple(f"{s}_d" for s in ai_names) + tuple(coords[i] for i in ad)


def _result(cm: CompiledModel, ref: Reference, partition: Partition, idx: PartitionIndices,
            A: NDArray[np.float64], B: NDArray[np.float64], t: Any,
            scalar: bool, B_rate: NDArray[np.float64] | None = None) -> LinearizationResult:
    names = idx.__dict__.get("_state_names")
    if names is None or names[0] is not cm.coordinates:
        names = (cm.coordinates, _state_names(tuple(cm.coordinates), tuple(idx.ai.tolist()),
                                              tuple(idx.ad.tolist())))
        idx.__dict__["_state_names"] = names        # PartitionIndices is immutable: a cache
    Cy = Dy = None
    outs = tuple(getattr(cm, "outputs", ()) or ())
    if outs:
        # declared outputs: C, D through the partition (linearization/outputs.py)
        ts = np.atleast_1d(np.asarray(t, dtype=float))
        x, xd, _, _, u = _reference_values(ref, ts, ts.shape[0], idx.n, idx.m + idx.l,
                                           int(cm.ninputs))
        p = getattr(ref, "parameters", None)
        if scalar:
            Cy, Dy = output_matrices(cm, idx, x[0], xd[0], None if u is None else u[0], p)
        else:
            Cy, Dy = output_matrices(cm, idx, x, xd, u, p)
    res = LinearizationResult(
        A=A, B=B, B_rate=B_rate, states=names[1],
        inputs=tuple(cm.inputs), partition=partition, n_spurious=idx.l,
        t=float(t) if scalar else t, steady=bool(getattr(ref, "steady", False)),
        n_independent=idx.n_ai, model_name=str(getattr(cm, "name", "")),
        C=Cy, D=Dy, outputs=outs)
    res._cache["model"] = cm          # for res.from_deviation (not pickled)
    return res


def _linearize_point(cm: CompiledModel, ref: Reference, partition: Partition, idx: PartitionIndices,
                     terms: Any, ts: NDArray[np.float64], scalar: bool, check: bool,
                     cond_max: float, rates: Any = None) -> LinearizationResult:
    """``linearize`` at one time from the one-point kernel terms (Steps 1-7 in 2-D)."""
    n, m, l, k = idx.n, idx.m, idx.l, int(cm.ninputs)
    if k:
        worst = 0.0
        for key in (("dC_du",) if rates is not None else ("dC_du", "dDa_du", "dQd_du")):
            arr = np.asarray(getattr(terms, key))
            if arr.size:
                worst = max(worst, float(np.abs(arr).max()))
        if worst > INPUT_CONSTRAINT_ATOL:
            _check_inputs_in_constraints(_stacked_terms(terms, 1, n, m, l, k), ts, cm,
                                         rates is not None)
    with np.errstate(all="ignore"):
        out = point_procedure(terms, idx, k, None, rates)
        A, B = out["A"], out["B"]
        # one sum decides when it is finite (a NaN/inf entry makes it non-finite; an overflow
        # of finite entries falls back to the entrywise test)
        finite = (math.isfinite(_add_reduce(A, axis=None) + _add_reduce(B, axis=None))
                  or bool(np.isfinite(A).all() and np.isfinite(B).all()))
    if (check or not finite) and (m + l) and (not finite or point_suspect(out, cond_max)):
        _check_blocks(partition, idx, {"Cx": np.asarray(terms.Cx).reshape(1, m, n),
                                       "B": np.asarray(terms.B).reshape(1, l, n)},
                      ts, cm, ref, cond_max, np.arange(1))
    if not finite:
        _check_finite_result(A[None], B[None], out["m0"], ts)
    Brate = out.get("B_rate")
    if not scalar:
        A, B = A[None], B[None]
        Brate = None if Brate is None else Brate[None]
    res = _result(cm, ref, partition, idx, A, B, ts[0] if scalar else ts.copy(), scalar, Brate)
    if l and res.steady:
        # lazily used by res.spurious_eigenvalues when this partition has no exact structure
        res._cache["search"] = partial(_search_from_terms, terms, idx, k,
                                       tuple(cm.coordinates), cond_max)
    return res


def _fast_result(cm: CompiledModel, ref: Reference, partition: Partition, idx: PartitionIndices,
                 got: tuple,
                 t_arr: NDArray[np.float64], ts: NDArray[np.float64], scalar: bool,
                 cond_max: float) -> LinearizationResult:
    """The result of the compiled path (``got = (A, B, kernel buffer of the first point)``)."""
    A, B, buf = got
    if A.ndim == 2 and not scalar:
        A, B = A[None], B[None]
    res = _result(cm, ref, partition, idx, A, B, t_arr if scalar else ts.copy(), scalar)
    if idx.l and res.steady:
        # lazily used by res.spurious_eigenvalues when this partition has no exact structure
        res._cache["search"] = partial(_search_from_buffer, cm, buf, idx, int(cm.ninputs),
                                       cond_max)
    return res


def _search_from_buffer(cm: CompiledModel, buf: NDArray[np.float64], idx: PartitionIndices, k: int,
                        cond_max: float) -> tuple[SpuriousIdentification, tuple[str, ...]] | None:
    """`_search_from_terms` from the flat output of the fused C kernel (compiled path)."""
    terms = LinearizationTerms(*cm._ck.split["linearization_terms"](buf))
    return _search_from_terms(terms, idx, k, tuple(cm.coordinates), cond_max)


def _search_from_terms(terms: Any, idx: PartitionIndices, k: int, coords: tuple[str, ...],
                       cond_max: float) -> tuple[SpuriousIdentification, tuple[str, ...]] | None:
    tv0 = _stacked_terms(terms, 1, idx.n, idx.m, idx.l, k)
    return _search_exact_partition(tv0, idx, k, coords, cond_max)


def _swap_candidates(ai: list[int], ad: list[int], limit: int) -> list[tuple[int, ...]]:
    """x_ad choices obtained from ``ad`` by one, then two swaps with ``ai`` (at most ``limit``)."""
    out: list[tuple[int, ...]] = []
    for r in (1, 2):
        for out_ad in itertools.combinations(range(len(ad)), r):
            for in_ai in itertools.combinations(ai, r):
                new = [a for i, a in enumerate(ad) if i not in out_ad] + list(in_ai)
                out.append(tuple(sorted(new)))
                if len(out) >= limit:
                    return out
    return out


def _search_exact_partition(tv0: dict[str, NDArray[np.float64]], idx: PartitionIndices, k: int,
                            coords: tuple[str, ...], cond_max: float
                            ) -> tuple[SpuriousIdentification, tuple[str, ...]] | None:
    """Find another split of ``[x_ai, x_ad]`` (same ``x_d``) with an exact spurious structure.

    For a steady reference all valid partitions give the same spectrum, so the spurious
    eigenvalues found there are those of the original Jacobian. Re-uses the terms of the first
    point (no kernel call); each candidate costs one run of
    [`third_procedure()`][nhcontrol.linearization.third_procedure].
    """
    n1, l, na = idx.n_ai, idx.l, idx.n - idx.m
    for ad in _swap_candidates(list(idx.ai), list(idx.ad), MAX_PARTITION_SEARCH):
        ad_arr = np.array(ad, dtype=np.intp)
        ai_arr = np.array([j for j in np.concatenate([idx.ai, idx.ad]) if j not in ad],
                          dtype=np.intp)
        alt = PartitionIndices(ai_arr, ad_arr, idx.d,
                               np.concatenate([ai_arr, ad_arr, idx.d]).astype(np.intp),
                               idx.n, idx.m, l)
        try:
            with np.errstate(all="ignore"):
                out = third_procedure(tv0, alt, k)
        except np.linalg.LinAlgError:
            continue
        if not np.all(np.isfinite(out["A"])):
            continue
        if not _block_condition("Bbar_ad", "", (), out["Bbar"][0], np.arange(n1, na),
                                cond_max).ok:
            continue
        ident = identify_spurious(out["A"][0], n1, l)
        if ident.exact:
            return ident, tuple(coords[j] for j in ad_arr)
    return None


def _check_blocks(partition: Partition, idx: PartitionIndices, tv: dict[str, NDArray[np.float64]],
                  ts: NDArray[np.float64], cm: CompiledModel, ref: Reference, cond_max: float,
                  points: NDArray[np.intp]) -> None:
    """Exact (SVD) conditioning of D_dd, ∂C/∂x_d and B̄_ad at ``points``; raise a
    PartitionError at the first point where a block has ``cond >= cond_max``."""
    bad = [j for j in points
           if not _report(partition, idx, tv["Cx"][j], tv["B"][j], float(ts[j]), cond_max).ok]
    if bad:
        j = int(bad[0])
        report = _report(partition, idx, tv["Cx"][j], tv["B"][j], float(ts[j]), cond_max)
        msg = _singular_message(partition, report, cm, ref, float(ts[j]), cond_max)
        if len(bad) > 1:
            msg += (f"\n({len(bad)} of the reference points are singular; first at "
                    f"t = {ts[j]:g}, last at t = {ts[int(bad[-1])]:g})")
        raise PartitionError(msg)


def _caller_stacklevel() -> int:
    """``stacklevel`` for ``warnings.warn`` that names the first frame outside nhcontrol (the
    user's call, whatever wrappers and helpers lie between)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _inputs_worst(tv: dict[str, NDArray[np.float64]], carried: bool = False) -> float:
    """Largest ``|∂C/∂u|``, ``|∂(D ẍ0)/∂u|``, ``|∂Q_d/∂u|`` entry (only ``|∂C/∂u|`` when the
    terms of the nonholonomic constraints are ``carried``)."""
    worst = 0.0
    for key in (("dC_du",) if carried else ("dC_du", "dDa_du", "dQd_du")):
        arr = tv[key]
        if arr.size:
            worst = max(worst, float(np.max(np.abs(arr))))
    return worst


def _check_inputs_in_constraints(tv: dict[str, NDArray[np.float64]], ts: NDArray[np.float64],
                                 cm: CompiledModel, carried: bool = False) -> None:
    """Warn when inputs enter the constraints and their terms are not carried."""
    worst = _inputs_worst(tv, carried)
    if worst > INPUT_CONSTRAINT_ATOL:
        _warn_inputs(worst, cm)


def _warn_inputs(worst: float, cm: CompiledModel) -> None:
    warnings.warn(
        f"the inputs {list(cm.inputs)} enter the constraints of model "
        f"{getattr(cm, 'name', '')!r} at the reference (max |∂C/∂u|, |∂(D ẍ0)/∂u|, "
        f"|∂Q_d/∂u| = {worst:.3g} > {INPUT_CONSTRAINT_ATOL:g}). Inputs in holonomic "
        f"constraints C(x, u) are quasi-static: the input matrix does not contain their "
        f"position- and velocity-level terms (Eq. (4.105)), so terms from these constraints "
        f"are missing. A is unaffected.", UserWarning, stacklevel=_caller_stacklevel())
