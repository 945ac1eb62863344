"""First-order auxiliary states beside the mechanics at rest (thesis Sect. 7.2, derived here).

A multibody model whose forces depend on auxiliary states ``z`` (pressures ``p``) that obey
``ż = H(x, ẋ, z, w)``, with further states ``w`` (spool positions ``U``) obeying
``ẇ = W(w, r)`` driven by references ``r`` (``U_ref``), Eqs. (7.9)–(7.13). When the model is
compiled with ``z`` as its inputs ``u``, the third procedure gives the mechanical rows
``[A_m | B_m]`` (Eq. (4.124) and the input matrix of Sect. 8.1 with ``∂Q/∂z``). At a reference
at rest (``ẋ0 = 0``) with ``l = 0`` the variations of all coordinates and velocities follow the
independent ones through the velocity transformation ``T0 = [I; -D_dd^{-1} D_ai]`` (the terms
with ``ẋ0`` of Eqs. (7.24), (7.26) vanish), so Eqs. (7.26) and (7.28) give the extra rows

$$
\\dot{\\tilde z} = H_x T_0 \\tilde x_{ai} + H_{\\dot x} T_0 \\dot{\\tilde x}_{ai}
                 + H_z \\tilde z + H_w \\tilde w, \\qquad
\\dot{\\tilde w} = W_w \\tilde w + W_r \\tilde r .
$$

The Jacobian has size ``2(n - m) + r + u`` in the state ``[x̃_ai, ẋ̃_ai, z̃, w̃]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError, ReferenceMotionError
from .partition import Partition
from .third import linearize

__all__ = ["FirstOrderLinearization", "linearize_with_first_order_states",
           "linearize_first_order_system"]


@dataclass(frozen=True)
class FirstOrderLinearization:
    """Jacobian ``A`` and input matrix ``B`` with the auxiliary states appended.

    Attributes
    ----------
    A : (ns, ns) ndarray
        ``ns = 2(n - m) + r + u``, state ``[x̃_ai, ẋ̃_ai, z̃, w̃]``.
    B : (ns, k) ndarray
        Input matrix of the references ``r``.
    states, inputs : tuple of str
    T0 : (n, n - m) ndarray
        Velocity transformation at the reference.
    """

    A: NDArray[np.float64]
    B: NDArray[np.float64]
    states: tuple[str, ...]
    inputs: tuple[str, ...]
    T0: NDArray[np.float64]

    @property
    def eigenvalues(self) -> NDArray[np.complex128]:
        """Eigenvalues of ``A`` sorted by real part."""
        ev = np.linalg.eigvals(self.A)
        return ev[np.argsort(ev.real, kind="stable")]


def _mat(a: ArrayLike, shape: tuple[int, int], what: str) -> NDArray[np.float64]:
    m = np.asarray(a, dtype=float)
    if m.shape != shape:
        raise LinearSystemError(f"{what} must have shape {shape}, got {m.shape}")
    if not np.all(np.isfinite(m)):
        raise LinearSystemError(f"{what} has non-finite entries")
    return m


def linearize_with_first_order_states(cm: Any, ref: Any, partition: Partition | Mapping[str, Any], *,
                                      H_x: ArrayLike, H_xd: ArrayLike, H_z: ArrayLike, H_w: ArrayLike,
                                      W_w: ArrayLike, W_r: ArrayLike, z_names: Sequence[str],
                                      w_names: Sequence[str], r_names: Sequence[str],
                                      t: float = 0.0, check: bool = True) -> FirstOrderLinearization:
    """Third procedure with first-order states ``z`` (model inputs) and ``w`` at a reference at rest.

    Parameters
    ----------
    cm : CompiledModel
        Mechanical model whose inputs ``u`` are the states ``z`` (same order).
    ref : Reference
        Reference at rest (``ẋ0 = 0``) with ``u0 = z0``.
    partition : Partition or mapping
        ``x = [x_ai, x_ad, x_d]``; ``x_ad`` must be empty (``l = 0``).
    H_x, H_xd : (r, n) array_like
        ``∂H/∂x``, ``∂H/∂ẋ`` at the reference (Eq. (7.26)).
    H_z, H_w : (r, r), (r, u) array_like
        ``∂H/∂z``, ``∂H/∂w``.
    W_w, W_r : (u, u), (u, k) array_like
        ``∂W/∂w`` and ``∂W/∂r`` (Eq. (7.28)).
    z_names, w_names, r_names : sequence of str
    t : float
        Time on the reference.
    check : bool
        Check that the reference is an equilibrium of the model with the forces of the states
        ``z0 = u0`` (``M ẍ0 + Dᵀ Λ0 = Q(x0, 0, z0)``, ``C(x0) = 0``; `linearize()`).
        ``False`` skips it.

    Raises
    ------
    ReferenceMotionError
        If the reference is not at rest, not an equilibrium with the forces of ``z0``
        (``check=True``), or the model has nonholonomic constraints.
    LinearSystemError
        On a shape mismatch.
    """
    if cm.l != 0:
        raise ReferenceMotionError(f"linearize_with_first_order_states handles l = 0 only; model "
                                   f"{cm.name!r} has l = {cm.l} nonholonomic constraints")
    xd0 = np.asarray(ref.xd(t), dtype=float)
    if np.max(np.abs(xd0)) > 0:
        raise ReferenceMotionError(f"linearize_with_first_order_states needs a reference at rest "
                                   f"(xd0 = 0); got |xd0|_inf = {np.max(np.abs(xd0)):.3g} at t = {t}")
    part = partition if isinstance(partition, Partition) else Partition.from_dict(partition)
    lin = linearize(cm, ref, part, t, check=check)
    coords = list(cm.coordinates)
    ai = [coords.index(c) for c in part.independent]
    dd = [i for i in range(cm.n) if i not in ai]
    n, k_ai = cm.n, len(ai)
    r, u = len(z_names), len(w_names)
    Hx, Hxd = _mat(H_x, (r, n), "H_x"), _mat(H_xd, (r, n), "H_xd")
    Hz, Hw = _mat(H_z, (r, r), "H_z"), _mat(H_w, (r, u), "H_w")
    Ww, Wr = _mat(W_w, (u, u), "W_w"), _mat(W_r, (u, len(r_names)), "W_r")
    x0 = np.asarray(ref.x(t), dtype=float)
    u0 = np.asarray(ref.u(t), dtype=float)
    D = np.asarray(cm.D(x0, u=u0))
    T0 = np.zeros((n, k_ai))
    T0[ai, :] = np.eye(k_ai)
    T0[dd, :] = -np.linalg.solve(D[:, dd], D[:, ai])
    Am, Bm = np.asarray(lin.A), np.asarray(lin.B)
    if Bm.shape != (2 * k_ai, r):
        raise LinearSystemError(f"the model's inputs must be the {r} states z {list(z_names)}; "
                                f"its input matrix has shape {Bm.shape}")
    ns = 2 * k_ai + r + u
    A = np.zeros((ns, ns))
    A[:2 * k_ai, :2 * k_ai] = Am
    A[:2 * k_ai, 2 * k_ai:2 * k_ai + r] = Bm
    A[2 * k_ai:2 * k_ai + r, :k_ai] = Hx @ T0
    A[2 * k_ai:2 * k_ai + r, k_ai:2 * k_ai] = Hxd @ T0
    A[2 * k_ai:2 * k_ai + r, 2 * k_ai:2 * k_ai + r] = Hz
    A[2 * k_ai:2 * k_ai + r, 2 * k_ai + r:] = Hw
    A[2 * k_ai + r:, 2 * k_ai + r:] = Ww
    B = np.zeros((ns, len(r_names)))
    B[2 * k_ai + r:, :] = Wr
    for a in (A, B, T0):
        a.flags.writeable = False
    states = tuple(lin.states[:2 * k_ai]) + tuple(z_names) + tuple(w_names)
    return FirstOrderLinearization(A=A, B=B, states=states, inputs=tuple(r_names), T0=T0)


def linearize_first_order_system(cm: Any, rates: Any, ref: Any,
                                 partition: Partition | Mapping[str, Any], *,
                                 t: float = 0.0) -> FirstOrderLinearization:
    """Third procedure for a model with first-order states built in ``MultibodySystem`` (Sect. 7.2).

    The model's inputs are ``[z, u]`` in declaration order (first-order states ``z`` with
    ``ż = H(x, ẋ, z, u)``, other inputs ``u``); the mechanical rows come from the third
    procedure with its exact input matrix (``∂Q/∂z`` and ``∂Q/∂u`` columns), the rows of ``z``
    from the exact rate Jacobians ([`compile_rates()`][nhcontrol.compiled.compile_rates]). At a
    reference at rest with ``l = 0`` (derived here, see ``docs/theory/hydraulics.md``):

    $$
    \\dot{\\tilde z} = H_x T_0 \\tilde x_{ai} + H_{\\dot x} T_0 \\dot{\\tilde x}_{ai} + H_z \\tilde z
                      + H_u \\tilde u .
    $$

    Parameters
    ----------
    cm : CompiledModel
        The compiled system (``system.compile()``).
    rates : RateKernels
        ``compile_rates(system)`` of the same system.
    ref : Reference
        Reference at rest; ``u0(t)`` gives the model's full input vector ``[z0, u0]``.
    partition : Partition or mapping
        ``x = [x_ai, x_ad, x_d]`` with ``x_ad`` empty.
    t : float

    Returns
    -------
    FirstOrderLinearization
        ``A`` of size ``2(n - m) + r`` in ``[x̃_ai, ẋ̃_ai, z̃]``, ``B`` for the other inputs ``u``.

    Raises
    ------
    ReferenceMotionError
        If the reference is not at rest or the model has nonholonomic constraints.
    LinearSystemError
        If ``rates`` does not belong to the model (input names differ).
    """
    if cm.l != 0:
        raise ReferenceMotionError(f"linearize_first_order_system handles l = 0 only; model "
                                   f"{cm.name!r} has l = {cm.l} nonholonomic constraints")
    names = list(cm.inputs)
    if (sorted(rates.states + rates.inputs) != sorted(names)
            or [names[i] for i in rates.state_index] != list(rates.states)):
        raise LinearSystemError(f"the rate kernels (states {list(rates.states)}, inputs "
                                f"{list(rates.inputs)}) do not belong to model {cm.name!r} with "
                                f"inputs {names}")
    xd0 = np.asarray(ref.xd(t), dtype=float)
    if np.max(np.abs(xd0)) > 0:
        raise ReferenceMotionError(f"linearize_first_order_system needs a reference at rest "
                                   f"(xd0 = 0); got |xd0|_inf = {np.max(np.abs(xd0)):.3g} at t = {t}")
    part = partition if isinstance(partition, Partition) else Partition.from_dict(partition)
    lin = linearize(cm, ref, part, t)
    coords = list(cm.coordinates)
    ai = [coords.index(c) for c in part.independent]
    dd = [i for i in range(cm.n) if i not in ai]
    n, k_ai = cm.n, len(ai)
    x0 = np.asarray(ref.x(t), dtype=float)
    u_all = np.asarray(ref.u(t), dtype=float)
    z0, u0 = rates.split_inputs(u_all)
    D = np.asarray(cm.D(x0, u=u_all))
    T0 = np.zeros((n, k_ai))
    T0[ai, :] = np.eye(k_ai)
    T0[dd, :] = -np.linalg.solve(D[:, dd], D[:, ai])
    J = rates.jacobians(x0, np.zeros(n), z0, u0)
    Am, Bm = np.asarray(lin.A), np.asarray(lin.B)
    zi, ui = list(rates.state_index), list(rates.input_index)
    r = len(zi)
    ns = 2 * k_ai + r
    A = np.zeros((ns, ns))
    A[:2 * k_ai, :2 * k_ai] = Am
    A[:2 * k_ai, 2 * k_ai:] = Bm[:, zi]
    A[2 * k_ai:, :k_ai] = J.H_x @ T0
    A[2 * k_ai:, k_ai:2 * k_ai] = J.H_xd @ T0
    A[2 * k_ai:, 2 * k_ai:] = J.H_z
    B = np.zeros((ns, len(ui)))
    B[:2 * k_ai, :] = Bm[:, ui]
    B[2 * k_ai:, :] = J.H_u
    for a in (A, B, T0):
        a.flags.writeable = False
    states = tuple(lin.states[:2 * k_ai]) + tuple(rates.states)
    return FirstOrderLinearization(A=A, B=B, states=states, inputs=tuple(rates.inputs), T0=T0)
