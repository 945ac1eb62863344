"""[`LinearizationTerms`][nhcontrol.compiled.LinearizationTerms]: every term the third numerical
procedure needs at one point (a frozen dataclass), created when first used
(``nhcontrol.compiled.model`` exports it lazily): the prepared linearizer's compiled call reads
the kernel's flat output (its field order is ``LINEARIZATION_FIELDS``) and never builds one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from .._util.reprs import concise_repr

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float64]

__all__ = ["LinearizationTerms"]


@dataclass(frozen=True)
class LinearizationTerms:
    """All terms the third numerical procedure needs at one point (or N points).

    Shapes are given for one point; with ``N`` stacked points every field has a leading
    ``N`` axis.  ``a = ẍ0`` and ``v = ẋ0`` (Sect. 4.2.3).

    Attributes
    ----------
    M : (n, n)
        Mass matrix, Eq. (2.103).
    Q : (n,)
        Generalized forces ``Qa + Qv``, Eq. (2.108).
    D, Cx, B : (m+l, n), (m, n), (l, n)
        Constraint Jacobians, Eq. (2.82).
    Qd : (m+l,)
        ``-∂(D ẋ)/∂x ẋ``, Eq. (2.117).
    dMa_dx, dMa_du : (n, n), (n, k)
        ``∂(M ẍ0)/∂x``, ``∂(M ẍ0)/∂u``.
    dDTlam_dx : (n, n)
        ``∂(Dᵀ Λ0)/∂x``.
    dQ_dx, dQ_dxd, dQ_du : (n, n), (n, n), (n, k)
    dDv_dx : (m+l, n)
        ``∂(D ẋ0)/∂x`` of Eq. (4.99).
    dDa_dx : (m+l, n)
        ``∂(D ẍ0)/∂x`` of Eq. (4.103).
    dQd_dx, dQd_dxd : (m+l, n)
    dCxv_dx, dBv_dx : (m, n), (l, n)
        ``∂(Cx ẋ0)/∂x``, ``∂(B ẋ0)/∂x``.
    dQd_du, dDa_du : (m+l, k)
        ``∂Qd/∂u``, ``∂(D ẍ0)/∂u`` (Sect. 8.1).
    dC_du : (m, k)
    """

    __repr__ = concise_repr

    M: Array
    Q: Array
    D: Array
    Cx: Array
    B: Array
    Qd: Array
    dMa_dx: Array
    dMa_du: Array
    dDTlam_dx: Array
    dQ_dx: Array
    dQ_dxd: Array
    dQ_du: Array
    dDv_dx: Array
    dDa_dx: Array
    dQd_dx: Array
    dQd_dxd: Array
    dCxv_dx: Array
    dBv_dx: Array
    dQd_du: Array
    dDa_du: Array
    dC_du: Array
