"""Steps 1-7 of the third procedure at one reference point, with little Python overhead.

:func:`nhcontrol.linearization.third.third_procedure` works on stacks of points in the permuted
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

Each inverted block is factorised once; its inverse gives all right-hand sides in one product
and serves the conditioning pre-check.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._util.fastlinalg import inv, solve
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
    A0 = np.zeros((2 * n1 + l, 2 * n1 + l))
    A0[:n1, n1:2 * n1] = np.eye(n1)
    lay["A0"] = A0
    lay["perm"] = idx.perm
    lay[f"I{n1}"] = np.eye(n1)
    if len(_LAYOUT) > 256:
        _LAYOUT.clear()
    _LAYOUT[id(idx)] = (idx, lay)
    return lay


def point_procedure(terms: Any, idx: PartitionIndices, k: int,
                    N: int | None = None, rates: Any = None) -> dict[str, NDArray[np.float64]]:
    """``A``, ``B`` of Eqs. (4.124)/(4.127) and Sect. 8.1 at one point or ``N`` stacked points.

    Parameters
    ----------
    terms : LinearizationTerms or mapping
        The kernel's terms: one point (no leading axis) when ``N`` is None, else a leading
        axis of length ``N``.
    idx : PartitionIndices
    k : int
        Number of inputs.
    N : int, optional
        Number of stacked points (None: one point, results without a leading axis).
    rates : InputRateTerms or mapping, optional
        Inputs in the nonholonomic constraints (`CompiledModel.input_rate_terms()` at
        ``u̇0``, same leading axis): their terms enter ``A`` (``∂(E u̇0)/∂x``, ``∂(E u̇0)/∂ẋ``)
        and ``B``, and the input-rate matrix ``B_rate`` is returned
        (docs/theory/road_vehicles.md, "Inputs in the constraints"; the same formulas as
        `nhcontrol.linearization.third_procedure`).

    Returns
    -------
    dict
        ``A (…, ns, ns)``, ``B (…, ns, k)``, ``B_rate (…, ns, k)`` (with ``rates``), ``m0`` and, for the conditioning checks, ``D`` with
        ``D_dd_inv``, ``Cx`` with ``Cx_d_inv``, ``Bbar`` with ``Bbar_ad_inv`` (those present).
        A singular block gives inf/NaN entries (no exception); the caller checks ``A``, ``B``.

    Notes
    -----
    Each inverted block is factorised once (LAPACK ``getrf`` + ``getri`` via numpy's ``inv``
    gufunc): the inverse serves the conditioning check and, in one matrix product, all the
    right-hand sides, which are signed so that the product is the thesis matrices directly:
    ``−D_dd⁻¹ [D_ai, ∂(Dẋ0)/∂x, −∂Q_d/∂ẋ, ∂(Dẍ0)/∂x − ∂Q_d/∂x]`` is
    ``[T_dd, V̄̄0_dd, U0_dd, V0_dd]`` (Eqs. (4.99), (4.102), (4.103)). (For 8 x 8 blocks with
    ~40 right-hand sides, OpenBLAS's ``gesv`` costs about three times ``inv`` + a product.)
    Then one product
    ``T0ᵀ [∂Q/∂ẋ − M U0, ∂Q/∂x − M V0 − ∂(Mẍ0)/∂x − ∂(DᵀΛ0)/∂x, M T0, ∂Q/∂u − ∂(Mẍ0)/∂u]``
    gives ``[R0, S0, m0, ·]`` (Eqs. (4.120)-(4.122)).
    """
    attr = hasattr(terms, "M")
    L = _layout(idx, k)
    n, m, l, n1, na = L["n"], L["m"], L["l"], L["n1"], L["na"]
    c = m + l
    ns = 2 * n1 + l
    d, a, dd = L["d"], L["a"], L["dd"]
    lead: tuple[int, ...] = () if N is None else (int(N),)

    def f(key: str, r: int, cols: int) -> NDArray[np.float64]:
        a = getattr(terms, key) if attr else terms[key]
        shape = lead + (r, cols)
        # the one-point C kernel returns float64 arrays of this shape already
        if type(a) is np.ndarray and a.shape == shape:
            return a
        return np.asarray(a).reshape(shape)

    M = f("M", n, n)
    out: dict[str, NDArray[np.float64]] = {}
    rt = None if rates is None else _rate_terms(rates, lead, n, c, k)
    kr = k if rt is not None else 0     # extra right-hand sides of the input-rate terms

    # ---- Steps 1-3: T0, V̄̄0, U0, V0 (Eqs. (2.131), (4.99)-(4.103)) from one LU of D_dd -----
    if lead:
        T0 = np.empty(lead + (n, n1))
        T0[...] = L["T0"]
    else:
        T0 = L["T0"].copy()
    # [∂Q/∂ẋ − M U0, G − M V0, M T0, ∂Q/∂u − ∂(Mẍ0)/∂u (, −M W̄0 with input rates)]
    W7 = np.empty(lead + (n, 2 * n + n1 + k + kr))
    W7[..., :n] = f("dQ_dxd", n, n)
    np.subtract(f("dQ_dx", n, n), f("dMa_dx", n, n), out=W7[..., n:2 * n])
    W7[..., n:2 * n] -= f("dDTlam_dx", n, n)
    if c:
        D = f("D", c, n)
        Dp = D[..., L["perm"]]
        if rt is None:
            rhs = np.concatenate((Dp[..., :n1], f("dDv_dx", c, n), -f("dQd_dxd", c, n),
                                  f("dDa_dx", c, n) - f("dQd_dx", c, n)), axis=-1)
        else:   # Q_d − E u̇ and the input columns [E, ∂(Dẍ0)/∂u − ∂(Q_d − E u̇0)/∂u]
            rhs = np.concatenate((Dp[..., :n1], f("dDv_dx", c, n),
                                  rt["dEw_dxd"] - f("dQd_dxd", c, n),
                                  f("dDa_dx", c, n) - f("dQd_dx", c, n) + rt["dEw_dx"], rt["E"],
                                  f("dDa_du", c, k) - f("dQd_du", c, k) + rt["dEw_du"]), axis=-1)
        D_dd_inv = inv(Dp[..., n1:])
        sol = np.negative(D_dd_inv) @ rhs  # [T_dd, V̄̄0_dd, U0_dd, V0_dd (, W̄0_dd, Y0_dd)]
        out["D"], out["D_dd_inv"] = D, D_dd_inv
        T0[..., dd, :] = sol[..., :n1]                          # Eq. (2.131)
        W7[..., :2 * n] -= M[..., dd] @ sol[..., n1 + n:n1 + 3 * n]   # − M [U0, V0]
    np.matmul(M, T0, out=W7[..., 2 * n:2 * n + n1])
    if k:
        np.subtract(f("dQ_du", n, k), f("dMa_du", n, k), out=W7[..., 2 * n + n1:2 * n + n1 + k])
    if rt is not None:
        if c:
            W7[..., 2 * n + n1:2 * n + n1 + k] -= (rt["dDTlam_du"] + M[..., dd]
                                                   @ sol[..., n1 + 3 * n + k:])   # − M Y0
            np.matmul(M[..., dd], -sol[..., n1 + 3 * n:n1 + 3 * n + k],
                      out=W7[..., 2 * n + n1 + k:])                               # − M W̄0
        else:
            W7[..., 2 * n + n1:2 * n + n1 + k] -= rt["dDTlam_du"]
            W7[..., 2 * n + n1 + k:] = 0.0
    RS = T0.swapaxes(-1, -2) @ W7    # [R0, S0, m0, T0ᵀ(∂Q/∂u − ∂(Mẍ0)/∂u) (, −T0ᵀ M W̄0)]
    R0, m0 = RS[..., :n], RS[..., 2 * n:2 * n + n1]
    RVS = RS[..., n:2 * n]               # R0 V̄̄0 + S0
    if c:
        RVS = R0[..., dd] @ sol[..., n1:n1 + n] + RVS

    # ---- Steps 4-5: Th0 = [Vh_ai, Vh_ad] and Vh0 (Eqs. (4.105)-(4.113)) ----------------------
    Th0 = L["Th0"]
    if m:
        Cx = f("Cx", m, n)
        rhs = np.concatenate((Cx[..., a], f("dCxv_dx", m, n)), axis=-1)
        Cx_d_inv = inv(Cx[..., d])
        solh = np.negative(Cx_d_inv) @ rhs  # [Th0_d, Vh0_d] (Eqs. (4.112), (4.113))
        out["Cx"], out["Cx_d_inv"] = Cx, Cx_d_inv
        if lead:
            Th0 = np.empty(lead + (n, na))
            Th0[...] = L["Th0"]
        else:
            Th0 = L["Th0"].copy()
        Th0[..., d, :] = solh[..., :na]

    if lead:
        A = np.zeros(lead + (ns, ns))
        A[..., :n1, n1:2 * n1] = L[f"I{n1}"]
    else:
        A = L["A0"].copy()
    # ---- Step 6: ẋ̃_ad = U_nh_ai ẋ̃_ai + V_nh_ai x̃_ai + V_nh_ad x̃_ad (Eqs. (4.114)-(4.117)) ---
    if l:
        Bm = f("B", l, n)
        Bbar = Bm @ Th0                                         # B̄ = B Th0, Eq. (4.115)
        W = f("dBv_dx", l, n)
        if m:
            W = Bm[..., d] @ solh[..., na:na + n] + W           # B Vh0 + ∂(B ẋ0)/∂x
        WT = W @ Th0
        # columns ordered as the last block row of A: [V_nh_ai, U_nh_ai, V_nh_ad]
        parts = (WT[..., :n1], Bbar[..., :n1], WT[..., n1:])
        if rt is not None:
            parts += (rt["E"][..., m:, :],)                     # ∂(B ẋ0 + b)/∂u
        rhs = np.concatenate(parts, axis=-1)
        Bbar_ad_inv = inv(Bbar[..., n1:])
        soln = np.negative(Bbar_ad_inv) @ rhs
        out["Bbar"], out["Bbar_ad_inv"] = Bbar, Bbar_ad_inv
        A[..., 2 * n1:, :] = soln[..., :ns]                     # J31, J32, J33 (Eq. (4.117))

    # ---- Step 7: [J21, J22, J23 | B_u] from one solve with m0 (Eqs. (4.118)-(4.125)) -------
    RVST = RVS @ Th0
    Ru = RS[..., 2 * n + n1:]
    if rt is not None and c:
        Ru = Ru.copy()
        Ru[..., :k] += R0[..., dd] @ sol[..., n1 + 3 * n:n1 + 3 * n + k]   # + R0 W̄0
    rhs = np.concatenate((RVST[..., :n1], R0 @ T0, RVST[..., n1:], Ru), axis=-1)
    sol7 = solve(m0, rhs)
    A[..., n1:2 * n1, :] = sol7[..., :ns]
    Bin = np.zeros(lead + (ns, k))
    Bin[..., n1:2 * n1, :] = sol7[..., ns:ns + k]
    if rt is not None:
        Brate = np.zeros(lead + (ns, k))
        Brate[..., n1:2 * n1, :] = sol7[..., ns + k:]
        if l:
            Bin[..., 2 * n1:, :] = soln[..., ns:]               # − B̄_ad⁻¹ ∂(B ẋ0 + b)/∂u
        out["B_rate"] = Brate
    out.update(A=A, B=Bin, m0=m0)
    return out


_RATE_SHAPES = {"E": "ck", "dEw_dx": "cn", "dEw_dxd": "cn", "dEw_du": "ck", "dDTlam_du": "nk"}


def _rate_terms(rates: Any, lead: tuple[int, ...], n: int, c: int,
                k: int) -> dict[str, NDArray[np.float64]]:
    """The fields of `InputRateTerms` as arrays of explicit shapes."""
    size = {"c": c, "n": n, "k": k}
    get = (lambda key: rates[key]) if isinstance(rates, dict) else (lambda key: getattr(rates, key))
    return {key: np.asarray(get(key), dtype=float).reshape(lead + (size[r], size[q]))
            for key, (r, q) in _RATE_SHAPES.items()}


def point_suspect(out: dict[str, NDArray[np.float64]], cond_max: float) -> bool:
    """The conditioning pre-check of :func:`~nhcontrol.linearization.third.linearize` at one point.

    With ``R`` the row norms of the full matrix ``F`` (``D``, ``∂C/∂x`` = its first ``m`` rows, or
    ``B̄``) and ``F_s = R⁻¹F`` (unit rows), the relative condition number of a block
    (:class:`~nhcontrol.linearization.partition.BlockCondition`) is bounded by
    ``‖F_s‖₂ ‖F_blk⁻¹ R‖₂ <= sqrt(rows) ‖F_blk⁻¹ R‖_F`` (``‖F_s‖₂ <= ‖F_s‖_F = sqrt(rows)``), from
    the inverse the procedure computed anyway. True when that bound reaches ``cond_max`` (or is
    not finite): the exact (SVD) decision is then needed.
    """
    # the squared bound r ‖F_blk⁻¹ R‖_F² = r Σ_j (Σ_i (F_blk⁻¹)_ij²) R_j² from squared row norms:
    # no square roots, four numpy calls per block
    lim = cond_max * cond_max
    D = out.get("D")
    if D is not None:
        rn2 = _sum(D * D, 1)
        if not rn2.all():  # a vanishing constraint row: infinitely ill conditioned
            return True
        for key, rows in (("D_dd_inv", D.shape[0]), ("Cx_d_inv", None)):
            inv = out.get(key)
            if inv is None or inv.shape[1] == 0:
                continue
            rows = inv.shape[1] if rows is None else rows
            if not rows * float(_sum(inv * inv, 0) @ rn2[:inv.shape[1]]) < lim:
                return True
    inv = out.get("Bbar_ad_inv")
    if inv is not None and inv.shape[1]:
        full = out["Bbar"]
        rn2 = _sum(full * full, 1)
        if not rn2.all():
            return True
        if not full.shape[0] * float(_sum(inv * inv, 0) @ rn2) < lim:
            return True
    return False


#: ufunc reduction without the ndarray-method wrapper (one-point hot path)
_sum = np.add.reduce
