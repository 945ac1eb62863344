"""Output matrices ``C, D`` of declared outputs in the minimal state of the third procedure.

A model with measured outputs ``y = h(x, ẋ, u)`` (`MultibodySystem.add_output`) gives, along a
reference, ``ỹ = ∂h/∂x x̃ + ∂h/∂ẋ ẋ̃ + ∂h/∂u ũ`` in the full deviations. The partition of
Eq. (4.96) expresses them through the minimal state ``X̃ = [x̃_ai, ẋ̃_ai, x̃_ad]`` of
Eq. (4.123) with the same maps that reduce the equations of motion (derived here, see
docs/theory/estimation.md, "Outputs through the partition"):

* position level, the linearized holonomic constraints ``C_x x̃ = 0`` (Eq. (4.97)):
  ``x̃_d = −C_{x,d}⁻¹ C_{x,a} x̃_a`` with ``x_a = [x_ai, x_ad]``, i.e. ``x̃ = T_h x̃_a``;
* velocity level, the linearized constraints ``D ẋ̃ + ∂(D ẋ0 + b)/∂x x̃ + E ũ = 0``
  (Eqs. (4.99), (2.114); ``E = ∂(D ẋ + b)/∂u`` for inputs in the nonholonomic constraints):
  ``ẋ̃_dd = −D_dd⁻¹ (D_ai ẋ̃_ai + ∂(D ẋ0 + b)/∂x x̃ + E ũ)`` for the ``m + l`` dependent
  velocities ``dd = [ad, d]``, i.e. ``ẋ̃ = T ẋ̃_ai + V x̃ + W ũ``.

Then ``G = (h_x + h_ẋ V) T_h`` and

$$ C = [\\,G_{:,ai},\\; h_{\\dot x} T,\\; G_{:,ad}\\,], \\qquad D = h_u + h_{\\dot x} W. $$
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .._util.errors import LinearSystemError
from .._util.fastlinalg import solve as _solve
from .partition import PartitionIndices

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["output_matrices", "output_matrices_from_terms"]

Array = NDArray[np.float64]

_LAYOUTS: dict[int, tuple[PartitionIndices, dict[str, Any]]] = {}


def _layout(idx: PartitionIndices) -> dict[str, Any]:
    """Index arrays of a partition (cached per PartitionIndices object)."""
    hit = _LAYOUTS.get(id(idx))
    if hit is not None and hit[0] is idx:
        return hit[1]
    lay = {"ai": idx.ai, "d": idx.d, "a": np.concatenate([idx.ai, idx.ad]).astype(np.intp),
           "dd": np.concatenate([idx.ad, idx.d]).astype(np.intp)}
    if len(_LAYOUTS) > 256:
        _LAYOUTS.clear()
    _LAYOUTS[id(idx)] = (idx, lay)
    return lay


def output_matrices_from_terms(Cx: Array, Dm: Array, dDv_dx: Array, dh_dx: Array, dh_dxd: Array,
                               dh_du: Array, idx: PartitionIndices,
                               E: Array | None = None) -> tuple[Array, Array]:
    """``C (…, q, ns)`` and ``D (…, q, k)`` from the terms at one point or stacked points.

    Parameters
    ----------
    Cx : (…, m, n)
        ``∂C/∂x`` (Eq. (2.82)).
    Dm : (…, m+l, n)
        ``D = [C_x; B]``.
    dDv_dx : (…, m+l, n)
        ``∂(D ẋ0 + b)/∂x`` (Eq. (4.99)).
    dh_dx, dh_dxd : (…, q, n)
    dh_du : (…, q, k)
    idx : PartitionIndices
    E : (…, m+l, k), optional
        ``∂(D ẋ + b)/∂u`` when inputs enter the nonholonomic constraints.

    Returns
    -------
    C, D : ndarray
        In the state order ``[x_ai, ẋ_ai, x_ad]`` of `LinearizationResult.states`.
    """
    lay = _layout(idx)
    ai, a, d, dd = lay["ai"], lay["a"], lay["d"], lay["dd"]
    n1 = ai.size
    k = dh_du.shape[-1]
    with_E = E is not None and k > 0
    hx, hxd = dh_dx, dh_dxd
    if dd.size:
        # velocity level: ẋ̃_dd = −D_dd⁻¹ (D_ai ẋ̃_ai + ∂(D ẋ0 + b)/∂x x̃ + E ũ); only the dd
        # rows of T, V, W are not trivial, so h_ẋ V = h_ẋ[:, dd] V_dd and so on
        rhs = [Dm[..., :, ai], dDv_dx] + ([E] if with_E else [])
        sol = _solve(Dm[..., :, dd], np.concatenate(rhs, axis=-1))
        hdd = hxd[..., :, dd]
        hx = hx - hdd @ sol[..., :, n1:n1 + idx.n]              # h_x + h_ẋ V
        Cv = hxd[..., :, ai] - hdd @ sol[..., :, :n1]           # h_ẋ T
        D = dh_du - hdd @ sol[..., :, n1 + idx.n:] if with_E else dh_du + 0.0
    else:
        Cv = hxd[..., :, ai]
        D = dh_du + 0.0
    # position level: x̃ = T_h x̃_a, T_h = [I; −C_{x,d}⁻¹ C_{x,a}] (rows a, d)
    G = hx[..., :, a]
    if d.size:
        G = G - hx[..., :, d] @ _solve(Cx[..., :, d], Cx[..., :, a])
    C = np.concatenate([G[..., :, :n1], Cv, G[..., :, n1:]], axis=-1)
    if not (np.isfinite(C).all() and np.isfinite(D).all()):
        raise LinearSystemError("the output matrices C, D are not finite at the reference: a "
                                "dependent block (∂C/∂x_d or D_dd) is singular there; choose "
                                "another partition (nhcontrol.linearization.suggest_partition)")
    return C, D


def output_matrices(cm: CompiledModel, idx: PartitionIndices, x: Array, xd: Array, u: Array | None,
                    p: Any = None) -> tuple[Array, Array]:
    """``C, D`` of the declared outputs of ``cm`` at ``(x0, ẋ0, u0)`` (one point ``(n,)`` or
    stacked ``(N, n)``), through the partition ``idx`` (see the module docstring).

    Raises
    ------
    LinearSystemError
        If the model declares no outputs or a dependent block is singular.
    """
    if not getattr(cm, "outputs", ()):
        raise LinearSystemError(f"model {getattr(cm, 'name', '?')!r} declares no outputs; add "
                                f"sensors with MultibodySystem.add_output(name, expr)")
    ot = cm.output_terms(x, xd, u, p)
    Cx = cm.Cx(x, u, p)
    Dm = cm.D(x, u, p)
    dDv = cm.dDv_dx(x, xd, u, p)
    E = None
    if getattr(cm, "constraint_inputs", ()) and cm.ninputs:
        E = cm.E(x, xd, u, p)
    return output_matrices_from_terms(np.asarray(Cx), np.asarray(Dm), np.asarray(dDv),
                                      np.asarray(ot.dh_dx), np.asarray(ot.dh_dxd),
                                      np.asarray(ot.dh_du), idx, E)
