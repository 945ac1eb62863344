"""Second numerical linearization procedure (thesis Sect. 4.2.2), for validation.

The DAE is linearized first and reduced afterwards with the coordinate partition of Eq. (2.129),
``x = [x_ai, x_dd]`` (``n-m-l`` independent, ``m+l`` dependent coordinates). Steps 1-3 are those
that the third procedure repeats (Sect. 4.2.3):

1. ``T0^T`` eliminates ``Λ~`` from the linearized dynamic equations, Eq. (4.97);
2. velocity transformation ``xd~ = T0 xd~_ai + V̿0 x~``, Eqs. (4.98)-(4.100);
3. acceleration transformation ``xdd~ = T0 xdd~_ai + U0 xd~ + V0 x~``, Eqs. (4.101)-(4.103).

Substituting them into Eq. (4.97) gives the linear ODE of Eqs. (4.89)-(4.90)

$$
m_0 \\ddot{\\tilde x}_{ai} = (R_0 \\bar{\\bar V}_0 + S_0)\\,\\tilde x + R_0 T_0 \\dot{\\tilde x}_{ai},
\\qquad
\\dot{\\tilde x}_{dd} = T^{dd}_0 \\dot{\\tilde x}_{ai} + \\bar V_0 \\tilde x,
$$

with ``m0, R0, S0`` of Eqs. (4.120)-(4.122), and the ``(2n-m-l)``-square Jacobian of Eqs. (4.95)
and (4.169) for ``X~ = [x~_ai, xd~_ai, x~_dd]``:

$$
J = \\begin{pmatrix}
    0 & I & 0 \\\\
    m_0^{-1}(R_0\\bar{\\bar V}_0 + S_0)E_{ai} & m_0^{-1}R_0T_0 & m_0^{-1}(R_0\\bar{\\bar V}_0+S_0)E_{dd} \\\\
    \\bar V_0 E_{ai} & T^{dd}_0 & \\bar V_0 E_{dd}
\\end{pmatrix}.
$$

It has ``m+l`` spurious eigenvalues (Sect. 4.3.4). Its relations (thesis Eqs. (4.66)-(4.95)) are
derived here from first principles, in ``docs/guide/bicycle_benchmark.md``.
Validation only; the product path is
[`nhcontrol.linearization.linearize()`][nhcontrol.linearization.linearize].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .._util.errors import PartitionError
from .._util.validation import readonly
from ._jacobian import _JacobianMembers
from .first import evaluate_terms, partition_indices, reference_point, solve_checked, velocity_names
from .._util.reprs import concise_repr

if TYPE_CHECKING:
    from typing import Mapping
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition
    from nhcontrol.reference import Reference

__all__ = ["SecondProcedureResult", "second_procedure", "velocity_transformation"]


@dataclass(frozen=True)
class SecondProcedureResult(_JacobianMembers):
    """Linearization with the two-set partition ``[x_ai, x_dd]`` (Sect. 4.2.2).

    Attributes
    ----------
    J : (2n-m-l, 2n-m-l) ndarray
        Jacobian of ``X~ = [x~_ai, xd~_ai, x~_dd]``, Eq. (4.95).
    m0 : (n-m-l, n-m-l) ndarray
        Reduced mass matrix ``T0^T M0 T0``, Eq. (4.120).
    R0 : (n-m-l, n) ndarray
        Eq. (4.121).
    S0 : (n-m-l, n) ndarray
        Eq. (4.122).
    T0 : (n, n-m-l) ndarray
        Velocity transformation (null space of ``D0``), Eq. (2.131), in model coordinate order.
    Tdd : (m+l, n-m-l) ndarray
        ``-Ddd^{-1} Dai``, Eq. (4.99).
    Vbar : (m+l, n) ndarray
        ``-Ddd^{-1} ∂(D xd0)/∂x``, Eq. (4.99).
    U0, V0 : (n, n) ndarray
        Acceleration transformation blocks, Eqs. (4.102)-(4.103), model coordinate order.
    states : tuple of str
        ``x_ai`` names, their velocities, then ``x_dd`` names.
    independent, dependent : tuple of str
        The partition used.
    n_spurious : int
        ``m + l``.
    t : float
    """

    __repr__ = concise_repr

    J: NDArray[np.float64]
    m0: NDArray[np.float64]
    R0: NDArray[np.float64]
    S0: NDArray[np.float64]
    T0: NDArray[np.float64]
    Tdd: NDArray[np.float64]
    Vbar: NDArray[np.float64]
    U0: NDArray[np.float64]
    V0: NDArray[np.float64]
    states: tuple[str, ...]
    independent: tuple[str, ...]
    dependent: tuple[str, ...]
    n_spurious: int
    t: float


def velocity_transformation(D: NDArray[np.float64], ai: list[int], dd: list[int], names: tuple,
                            t: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``T(x)`` of Eq. (2.131) and the inverse of ``Ddd`` with a singularity check.

    Returns
    -------
    T0 : (n, n-m-l) ndarray
    Ddd_inv : (m+l, m+l) ndarray

    Raises
    ------
    PartitionError
        If ``Ddd`` (the columns of ``D`` of the dependent coordinates) is singular.
    """
    n = D.shape[1]
    Ddd = D[:, dd]
    dep = [names[i] for i in dd]
    Ddd_inv = solve_checked(
        Ddd, np.eye(len(dd)),
        f"The dependent block D_dd (Eq. (2.131)) for dependent coordinates {dep} at t = {t}",
        PartitionError, "choose other independent coordinates (see "
        "nhcontrol.linearization.suggest_partition)")
    T0 = np.zeros((n, len(ai)))
    T0[ai, :] = np.eye(len(ai))
    T0[dd, :] = -Ddd_inv @ D[:, ai]
    return T0, Ddd_inv


def second_procedure(cm: CompiledModel, ref: Reference, partition: Partition | Mapping[str, Any],
                     t: float = 0.0, *,
                     p: Any = None) -> SecondProcedureResult:
    """Linearize with the second numerical procedure (Sect. 4.2.2, Jacobian Eq. (4.95)).

    Parameters
    ----------
    cm : CompiledModel
    ref : Reference or ReferencePoint
        Reference motion (Eq. (4.1)).
    partition : Partition or mapping
        Either the three-set partition of Eq. (2.137) (``x_dd = [x_ad, x_d]`` in that order) or
        the two-set partition of Eq. (2.129) (``independent`` and ``dependent``).
    t : float
        Instant of the linearization.
    p : (p,) array_like, optional
        Parameter vector.

    Returns
    -------
    SecondProcedureResult
        ``J`` is ``(2n-m-l, 2n-m-l)``.

    Raises
    ------
    PartitionError
        Invalid partition, or ``Ddd`` singular at the reference.
    """
    ai, ad, d = partition_indices(cm, partition)
    dd = ad + d
    names = tuple(cm.coordinates)
    if len(dd) != cm.m + cm.l:
        raise PartitionError(f"x_dd must hold m+l = {cm.m + cm.l} coordinates, got {len(dd)}")
    pt = reference_point(cm, ref, t, p=p)
    T = evaluate_terms(cm, pt)
    n = int(cm.n)
    g = len(ai)
    T0, Ddd_inv = velocity_transformation(T.D, ai, dd, names, pt.t)
    Tdd = T0[dd, :]
    # Step 2, Eqs. (4.98)-(4.100)
    Vbar = -Ddd_inv @ T.dDv_dx
    Vbb = np.zeros((n, n))
    Vbb[dd, :] = Vbar
    # Step 3, Eqs. (4.101)-(4.103)
    U0 = np.zeros((n, n))
    U0[dd, :] = Ddd_inv @ T.dQd_dxd
    V0 = np.zeros((n, n))
    V0[dd, :] = -Ddd_inv @ (T.dDa_dx - T.dQd_dx)
    # Step 1 and Eqs. (4.120)-(4.122)
    m0 = T0.T @ T.M @ T0
    R0 = T0.T @ (T.dQ_dxd - T.M @ U0)
    S0 = T0.T @ (T.dQ_dx - T.M @ V0 - T.dMa_dx - T.dDTlam_dx)
    K = solve_checked(m0, np.hstack([R0 @ Vbb + S0, R0 @ T0]),
                      f"The reduced mass matrix m0 = T0^T M0 T0 (Eq. (4.120)) at t = {pt.t}",
                      PartitionError, "the mass matrix is singular on the independent velocities; "
                      "check the model inertia")
    KX, KV = K[:, :n], K[:, n:]
    N = 2 * g + len(dd)
    J = np.zeros((N, N))
    J[:g, g:2 * g] = np.eye(g)
    J[g:2 * g, :g] = KX[:, ai]
    J[g:2 * g, g:2 * g] = KV
    J[g:2 * g, 2 * g:] = KX[:, dd]
    J[2 * g:, :g] = Vbar[:, ai]
    J[2 * g:, g:2 * g] = Tdd
    J[2 * g:, 2 * g:] = Vbar[:, dd]
    vel = velocity_names(cm)
    states = tuple(names[i] for i in ai) + tuple(vel[i] for i in ai) + tuple(names[i] for i in dd)
    return SecondProcedureResult(
        J=readonly(J), m0=readonly(m0), R0=readonly(R0), S0=readonly(S0), T0=readonly(T0),
        Tdd=readonly(Tdd.copy()), Vbar=readonly(Vbar), U0=readonly(U0), V0=readonly(V0),
        states=states, independent=tuple(names[i] for i in ai),
        dependent=tuple(names[i] for i in dd), n_spurious=len(dd), t=pt.t)
