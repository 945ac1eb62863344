"""The term records of the kernels that the prepared linearizer does not call
([`InputRateTerms`][nhcontrol.compiled.InputRateTerms], [`RateTerms`][nhcontrol.compiled.RateTerms],
[`OutputTerms`][nhcontrol.compiled.OutputTerms], [`DynamicsTerms`][nhcontrol.compiled.DynamicsTerms]):
frozen dataclasses, created when first used (``nhcontrol.compiled.model`` exports them lazily), so
that loading a cached model does not pay for building their classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from .._util.reprs import concise_repr

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float64]

__all__ = ["InputRateTerms", "RateTerms", "OutputTerms", "DynamicsTerms"]


@dataclass(frozen=True)
class InputRateTerms:
    """Terms of inputs that enter the nonholonomic constraints ``B(x, u) ẋ + b(x, u) = 0``.

    With ``E = ∂(B ẋ + b)/∂u`` (holonomic rows zero) the acceleration level of the constraints
    is ``D ẍ = Qd − E u̇`` (docs/theory/road_vehicles.md, "Inputs in the constraints").
    Shapes for one point; ``N`` stacked points add a leading axis.

    Attributes
    ----------
    E : (m+l, k)
        ``∂(D ẋ + b)/∂u``; at the reference also the input term ``∂(D ẋ0 + b)/∂u`` of the
        linearized velocity constraints.
    dEw_dx, dEw_dxd : (m+l, n)
        ``∂(E u̇0)/∂x``, ``∂(E u̇0)/∂ẋ``.
    dEw_du : (m+l, k)
        ``∂(E u̇0)/∂u``.
    dDTlam_du : (n, k)
        ``∂(Dᵀ Λ0)/∂u``.
    """

    __repr__ = concise_repr

    E: Array
    dEw_dx: Array
    dEw_dxd: Array
    dEw_du: Array
    dDTlam_du: Array


@dataclass(frozen=True)
class RateTerms:
    """Rates ``ż = H(x, ẋ, u)`` of the first-order states and their exact partial derivatives
    (thesis Eqs. (7.12)-(7.13), (7.26), (7.28)); ``u`` is the model's whole input vector, the
    states ``z`` included (`CompiledModel.first_order_states`). Shapes for one point; ``N``
    stacked points add a leading axis.

    Attributes
    ----------
    H : (r,)
    dH_dx, dH_dxd : (r, n)
    dH_du : (r, k)
        Columns of the states ``z`` give ``H_z``, the other columns ``H_u``.
    """

    __repr__ = concise_repr

    H: Array
    dH_dx: Array
    dH_dxd: Array
    dH_du: Array


@dataclass(frozen=True)
class OutputTerms:
    """Declared outputs ``y = h(x, ẋ, u)`` (`MultibodySystem.add_output`) and their exact
    partial derivatives; ``u`` is the model's whole input vector (first-order states
    included). Shapes for one point; ``N`` stacked points add a leading axis.

    Attributes
    ----------
    h : (q,)
    dh_dx, dh_dxd : (q, n)
    dh_du : (q, k)
    """

    __repr__ = concise_repr

    h: Array
    dh_dx: Array
    dh_dxd: Array
    dh_du: Array


@dataclass(frozen=True)
class DynamicsTerms:
    """``M (n, n)``, ``Q (n,)``, ``D (m+l, n)``, ``Qd (m+l,)`` of the index-1 form Eq. (2.119)."""

    __repr__ = concise_repr

    M: Array
    Q: Array
    D: Array
    Qd: Array
