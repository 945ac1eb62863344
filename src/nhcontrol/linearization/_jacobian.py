"""Members shared by the result classes of the validation procedures (Sect. 4.2).

[`FirstProcedureResult`][nhcontrol.linearization.FirstProcedureResult],
[`SecondProcedureResult`][nhcontrol.linearization.SecondProcedureResult] and
[`FiniteDifferenceResult`][nhcontrol.linearization.FiniteDifferenceResult] all hold one square
Jacobian ``J`` of a linear ODE ``X~' = J X~`` (Eqs. (4.93), (4.95), (7.110)) together with the
number of its spurious eigenvalues; this mixin gives them the same two read-only members.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__: list[str] = []


class _JacobianMembers:
    """Mixin of a frozen result dataclass with a square Jacobian field ``J``, shape ``(N, N)``."""

    J: NDArray[np.float64]

    @property
    def nstates(self) -> int:
        """Size ``N`` of the square Jacobian ``J`` (``2n`` for the first procedure, ``2n-m-l`` for
        the second, the size of the chosen form for finite differences)."""
        return int(self.J.shape[0])

    def eigenvalues(self) -> NDArray[np.complex128]:
        """All ``N`` eigenvalues of ``J``, shape ``(N,)``, including its ``n_spurious`` spurious ones
        (Sect. 4.3.4)."""
        return np.linalg.eigvals(self.J)
