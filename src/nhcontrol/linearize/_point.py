"""Steps 1-7 of the third procedure at one reference point, with little Python overhead.

:func:`nhcontrol.linearize.third.third_procedure` works on stacks of points in the permuted
(thesis) coordinate order, which reads like the thesis and is fast per point for many points.
For one point its cost is dominated by numpy's per-call overhead (permutations of ten
matrices, three-dimensional slicing). This module computes the same matrices in the model's
coordinate order, derived here from the permuted formulas:

with ``P`` the permutation ``[ai, ad, d]`` and ``E_P`` its matrix (``x_perm = E_P x``),
every permuted matrix is ``E_P X E_Pᵀ`` (or ``X E_Pᵀ``), so a product such as
``T0ᵀ M_p T0`` equals ``T0_oᵀ M T0_o`` with ``T0_o = E_Pᵀ T0`` (the rows of ``T0`` put back
in model order: identity rows at ``ai``, ``T_dd`` at ``[ad, d]``). The matrices that are
non-zero only in the dependent rows (``V̄̄0``, ``U0``, ``V0``, ``V^h0``) are kept as those rows,
so ``M U0 = M[:, dd] U_dd``. The products are the same sums in another order: the results
agree with the stacked path to round-off (tested to 1e-14 relative for every model).

Each block is solved once with the identity appended (one LAPACK ``dgesv`` call returns the
solution and the inverse), and the conditioning pre-check reuses those inverses, as the stacked
path does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._util.fastlinalg import solve
from .partition import PartitionIndices

__all__ = ["point_procedure", "point_suspect"]

_LAYOUT: dict[int, tuple[PartitionIndices, dict[str, Any]]] = {}


def _layout(idx: PartitionIndices, k: int) -> dict[str, Any]:
    """Index arrays and templates of a partition (cached per PartitionIndices object)."""
    hit = _LAYOUT.get(id(idx))
    if hit is not None and hit[0] is idx and hit[1]["k"] == k:
        return hit[1]
    n, m, l = idx.n, idx.m, idx.l
    n1, na = n - m - l, n - m
    lay: dict[str, Any] = {"k": k, "n": n, "m": m, "l": l, "n1": n1, "na": na,
                           "ai": idx.ai, "ad": idx.ad, "d": idx.d,
                           "a": np.concatenate([idx.ai, idx.ad]),
                           "dd": np.concatenate([idx.ad, idx.d])}
    T0 = np.zeros((n, n1))
    T0[idx.ai, np.arange(n1)] = 1.0
    Th0 = np.zeros((n, na))
    Th0[lay["a"], np.arange(na)] = 1.0
    lay["T0"], lay["Th0"] = T0, Th0
    for r in {m + l, m, l, n1}:
        lay[f"I{r}"] = np.eye(r)
    if len(_LAYOUT) > 256:
        _LAYOUT.clear()
    _LAYOUT[id(idx)] = (idx, lay)
    return lay


def point_procedure(terms: Any, idx: PartitionIndices, k: int) -> dict[str, NDArray[np.float64]]:
    """``A (ns, ns)``, ``B (ns, k)`` of Eqs. (4.124)/(4.127) and Sect. 8.1 at one point.

    Parameters
    ----------
    terms : LinearizationTerms
        One point (no leading axis).
    idx : PartitionIndices
    k : int
        Number of inputs.

    Returns
    -------
    dict
        ``A``, ``B``, ``m0`` and, for the conditioning checks, ``D`` with ``D_dd_inv``,
        ``Cx`` with ``Cx_d_inv``, ``Bbar`` with ``Bbar_ad_inv`` (those present). A singular
        block gives inf/NaN entries (no exception); the caller checks ``A`` and ``B``.
    """
    L = _layout(idx, k)
    n, m, l, n1, na = L["n"], L["m"], L["l"], L["n1"], L["na"]
    c = m + l
    ns = 2 * n1 + l
    ai, d, a, dd = L["ai"], L["d"], L["a"], L["dd"]
    M = np.asarray(terms.M).reshape(n, n)
    out: dict[str, NDArray[np.float64]] = {}

    # ---- Steps 1-3: T0, V̄̄0, U0, V0 (Eqs. (2.131), (4.99)-(4.103)) from one LU of D_dd -----
    T0 = L["T0"].copy()
    dQ_dx = np.asarray(terms.dQ_dx).reshape(n, n)
    dQ_dxd = np.asarray(terms.dQ_dxd).reshape(n, n)
    G = dQ_dx - np.asarray(terms.dMa_dx).reshape(n, n) - np.asarray(terms.dDTlam_dx).reshape(n, n)
    if c:
        D = np.asarray(terms.D).reshape(c, n)
        rhs = np.empty((c, n1 + 3 * n + c))
        rhs[:, :n1] = D[:, ai]
        rhs[:, n1:n1 + n] = np.asarray(terms.dDv_dx).reshape(c, n)
        rhs[:, n1 + n:n1 + 2 * n] = np.asarray(terms.dQd_dxd).reshape(c, n)
        np.subtract(np.asarray(terms.dDa_dx).reshape(c, n),
                    np.asarray(terms.dQd_dx).reshape(c, n), out=rhs[:, n1 + 2 * n:n1 + 3 * n])
        rhs[:, n1 + 3 * n:] = L[f"I{c}"]
        sol = solve(D[:, dd], rhs)
        out["D"], out["D_dd_inv"] = D, sol[:, n1 + 3 * n:]
        T0[dd] = -sol[:, :n1]                                   # T_dd, Eq. (4.99)
        Vbar = -sol[:, n1:n1 + n]                               # V̄̄0 rows dd, Eq. (4.99)
        Mdd = M[:, dd]
        # R0 = T0ᵀ (∂Q/∂ẋ − M U0) (4.121); S0 = T0ᵀ (∂Q/∂x − M V0 − ∂(Mẍ0)/∂x − ∂(DᵀΛ0)/∂x) (4.122)
        R0 = T0.T @ (dQ_dxd - Mdd @ sol[:, n1 + n:n1 + 2 * n])
        S0 = T0.T @ (G + Mdd @ sol[:, n1 + 2 * n:n1 + 3 * n])
        RVS = R0[:, dd] @ Vbar + S0                             # R0 V̄̄0 + S0
    else:
        R0 = T0.T @ dQ_dxd
        RVS = T0.T @ G

    # ---- Steps 4-5: Th0 = [Vh_ai, Vh_ad] and Vh0 (Eqs. (4.105)-(4.113)) ----------------------
    Th0 = L["Th0"]
    Vh_d = None
    if m:
        Cx = np.asarray(terms.Cx).reshape(m, n)
        rhs = np.empty((m, na + n + m))
        rhs[:, :na] = Cx[:, a]
        rhs[:, na:na + n] = np.asarray(terms.dCxv_dx).reshape(m, n)
        rhs[:, na + n:] = L[f"I{m}"]
        sol = solve(Cx[:, d], rhs)
        out["Cx"], out["Cx_d_inv"] = Cx, sol[:, na + n:]
        Th0 = Th0.copy()
        Th0[d] = -sol[:, :na]                                   # Eq. (4.112)
        Vh_d = -sol[:, na:na + n]                               # Vh0 rows d, Eq. (4.113)

    A = np.zeros((ns, ns))
    A[:n1, n1:2 * n1] = L[f"I{n1}"]
    # ---- Step 6: ẋ̃_ad = U_nh_ai ẋ̃_ai + V_nh_ai x̃_ai + V_nh_ad x̃_ad (Eqs. (4.114)-(4.117)) ---
    if l:
        Bm = np.asarray(terms.B).reshape(l, n)
        Bbar = Bm @ Th0                                         # B̄ = B Th0, Eq. (4.115)
        W = np.asarray(terms.dBv_dx).reshape(l, n)
        if m:
            W = Bm[:, d] @ Vh_d + W                             # B Vh0 + ∂(B ẋ0)/∂x
        WT = W @ Th0
        # columns ordered as the last block row of A: [V_nh_ai, U_nh_ai, V_nh_ad], then B̄_ad⁻¹
        rhs = np.empty((l, ns + l))
        rhs[:, :n1] = WT[:, :n1]
        rhs[:, n1:2 * n1] = Bbar[:, :n1]
        rhs[:, 2 * n1:ns] = WT[:, n1:]
        rhs[:, ns:] = L[f"I{l}"]
        sol = solve(Bbar[:, n1:], rhs)
        out["Bbar"], out["Bbar_ad_inv"] = Bbar, sol[:, ns:]
        np.negative(sol[:, :ns], out=A[2 * n1:])                # J31, J32, J33 (Eq. (4.117))

    # ---- Step 7: m0, and [J21, J22, J23 | B_u] from one solve (Eqs. (4.120)-(4.125)) -------
    m0 = T0.T @ M @ T0                                          # Eq. (4.120)
    RVST = RVS @ Th0
    rhs = np.empty((n1, ns + k))
    rhs[:, :n1] = RVST[:, :n1]                                  # → J21
    np.matmul(R0, T0, out=rhs[:, n1:2 * n1])                    # → J22
    rhs[:, 2 * n1:ns] = RVST[:, n1:]                            # → J23
    if k:
        # input matrix, Sect. 8.1: m0⁻¹ T0ᵀ (∂Q/∂u − ∂(M ẍ0)/∂u)
        np.matmul(T0.T, np.asarray(terms.dQ_du).reshape(n, k)
                  - np.asarray(terms.dMa_du).reshape(n, k), out=rhs[:, ns:])
    sol = solve(m0, rhs)
    A[n1:2 * n1] = sol[:, :ns]
    Bin = np.zeros((ns, k))
    Bin[n1:2 * n1] = sol[:, ns:]
    out.update(A=A, B=Bin, m0=m0)
    return out


def point_suspect(out: dict[str, NDArray[np.float64]], cond_max: float) -> bool:
    """The 1-norm pre-check of :func:`~nhcontrol.linearize.third.linearize` at one point.

    ``‖R⁻¹F‖₁ ‖F_blk⁻¹ R‖₁`` (``R``: row norms of the full matrix ``F``) from the inverses the
    solves returned; True when a block may reach ``cond_max`` and needs the exact (SVD)
    decision (the same bound, ``cond_max / sqrt(cols_F · size)``, as the stacked path).
    Call it with finite ``out`` (a non-finite one goes to the exact decision directly).
    """
    for full_key, inv_key in (("D", "D_dd_inv"), ("Cx", "Cx_d_inv"), ("Bbar", "Bbar_ad_inv")):
        inv = out.get(inv_key)
        if inv is None or inv.shape[-1] == 0:
            continue
        full = out[full_key]
        rn = np.sqrt(np.square(full).sum(axis=1))
        if not rn.all():  # a vanishing constraint row: infinitely ill conditioned
            return True
        c1 = (np.abs(full / rn[:, None]).sum(axis=0).max()
              * np.abs(inv * rn).sum(axis=0).max())
        if not c1 < cond_max / np.sqrt(full.shape[-1] * inv.shape[-1]):
            return True
    return False
