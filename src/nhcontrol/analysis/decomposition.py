"""Kalman (controllable/observable) decomposition with named directions.

A linearization of a nonholonomic system about a steady motion typically has directions that no
input moves: combinations of the cyclic coordinates that the nonholonomic constraints tie to
each other (for a two-wheeled robot ``x − r(φL + φR)/2`` and ``ψ − r(φR − φL)/d``). They are the
left null space of the controllability matrix; here they are written as combinations of the
named states, in reduced row echelon form, so that each one reads "state = combination of other
states" (derived here; the decomposition itself is Kalman's, e.g. Antsaklis & Michel, *Linear
Systems*, Sect. 3.4, and thesis Sect. 8.3 for the rank tests).

The controllable part is offered in named coordinates: a maximal set of states whose selection
is invertible on the controllable subspace (the complement of the pivots of the echelon form),
with the transformation documented in
[`KalmanDecomposition`][nhcontrol.analysis.KalmanDecomposition].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import control
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .._util.validation import as_float_array, readonly
from .controllability import RankResult, ctrb_matrix, rank_decision
from .observability import obsv_matrix
from ..systems.ltv import LTVSystem
from .._util.combinations import COEF_RTOL, echelon_combinations, format_combination, pbh_directions

if TYPE_CHECKING:
    from nhcontrol.linearization import LinearizationResult

__all__ = ["BALANCE_LOG2", "DECOMPOSITION_RTOL", "StateCombination", "KalmanDecomposition", "kalman_decomposition", "echelon_combinations",
           "pbh_directions"]

BALANCE_LOG2 = 16
"""The state scaling of `kalman_decomposition` stays within ``2^±16``."""

DECOMPOSITION_RTOL = 1e-9
"""Default relative rank threshold of `kalman_decomposition()` (``tol = rtol · s_max``): a
numerical linearization carries round-off far above machine precision, as in the PBH test of
``design.lqr``."""

@dataclass(frozen=True, eq=False)
class StateCombination:
    """A linear combination ``Σ c_i x_i`` of named states (a row of an echelon form).

    Attributes
    ----------
    coefficients : (n,) ndarray
        ``c`` (the pivot's coefficient is 1).
    states : tuple of str
        Names of all ``n`` states.
    pivot : str
        The state whose coefficient is 1 and that no other combination of the same set contains.
    rate : float or complex
        For an uncontrollable combination ``w``: the eigenvalue of ``d(w x)/dt`` when the
        combination evolves on its own (discrete time: its multiplier minus 1, the rate of
        ``w x[k+1] − w x[k]``); ``0``: it is conserved; ``nan`` when it is coupled to the
        other uncontrollable combinations.
    """

    coefficients: NDArray[np.float64]
    states: tuple[str, ...]
    pivot: str
    rate: complex | float = float("nan")

    @property
    def carriers(self) -> tuple[str, ...]:
        """The states with a nonzero coefficient."""
        c = np.abs(self.coefficients)
        tol = COEF_RTOL * max(1.0, float(c.max(initial=0.0)))
        return tuple(s for s, v in zip(self.states, c) if v > tol)

    @property
    def conserved(self) -> bool:
        """True when the combination is constant along every motion of the linear system."""
        return bool(np.isfinite(self.rate) and self.rate == 0)

    def __str__(self) -> str:
        return format_combination(self.coefficients, self.states, first=self.states.index(self.pivot))

    def __repr__(self) -> str:
        extra = ", conserved" if self.conserved else (f", rate={self.rate:.4g}"
                                                      if np.isfinite(self.rate) else "")
        return f"StateCombination({self}{extra})"


def _rates(R: NDArray[np.float64], A: NDArray[np.float64]) -> list[complex | float]:
    """For left-invariant combinations ``η = R x`` (``R A = M R``): the eigenvalue of each
    combination that evolves on its own (a zero row of ``M`` off its diagonal), else ``nan``."""
    if R.shape[0] == 0:
        return []
    M = R @ A @ np.linalg.pinv(R)
    scale = max(1.0, float(np.abs(A).max()))
    out: list[complex | float] = []
    for i in range(R.shape[0]):
        off = np.delete(M[i], i)
        if np.all(np.abs(off) <= 1e-9 * scale):
            d = float(M[i, i])
            out.append(0.0 if abs(d) <= 1e-9 * scale else d)
        else:
            out.append(float("nan"))
    return out


@dataclass(frozen=True, eq=False)
class KalmanDecomposition:
    """Controllable and observable subspaces of an LTI system, with named directions.

    Attributes
    ----------
    states, inputs, outputs : tuple of str
    controllability : RankResult
        Rank of the controllability matrix of the balanced pair ``(A_b/α, B_b)``,
        ``A_b = D⁻¹ A D``, ``B_b = D⁻¹ B`` (``D`` diagonal, powers of 2, from
        ``scipy.linalg.matrix_balance`` of ``[[A, B], [0, 0]]``, bounded to ``2^±16``;
        ``α = max(1, ‖A_b‖₂)``): the same subspaces as ``[B, AB, …]``, with singular values
        and tolerance of a matrix where pressures in Pa and angles in rad weigh alike.
    observability : RankResult or None
        Rank of the observability matrix of ``(C, A/α)`` (``None`` without outputs).
    controllable_basis : (n, r) ndarray
        Orthonormal basis ``V`` of the controllable subspace.
    uncontrollable : tuple of StateCombination
        The ``n − r`` combinations ``w x`` no input moves (``w V = 0``): first the conserved
        ones (``rate`` 0; reduced row echelon form, pivots in ``pivot_order``), then the
        directions they drive (e.g. a position driven by a conserved speed; ``rate`` nan).
    unobservable : tuple of StateCombination
        Directions ``v`` of the state space the outputs cannot see (``C Aʲ v = 0``), in
        echelon form (read ``"a + 0.5 b"`` as the state change ``δa = 1, δb = 0.5``).
    kept_states : tuple of str
        The ``r`` states that name the controllable subsystem: all states but the pivots of
        `uncontrollable`.
    T : (r, n) ndarray
        ``z = T x``: the coordinates of the controllable subsystem, ``T = S V Vᵀ`` with ``S``
        the selection of `kept_states` (the projection onto the controllable subspace, read
        on the kept states): on the controllable subspace ``z`` equals the kept states.
    A_c, B_c : (r, r), (r, k) ndarray
        The controllable subsystem ``ż = A_c z + B_c u``:
        ``A_c = (S V)(Vᵀ A V)(S V)⁻¹``, ``B_c = S B``.
    """

    states: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    controllability: RankResult
    observability: RankResult | None
    controllable_basis: NDArray[np.float64]
    uncontrollable: tuple[StateCombination, ...]
    unobservable: tuple[StateCombination, ...]
    kept_states: tuple[str, ...]
    T: NDArray[np.float64]
    A_c: NDArray[np.float64]
    B_c: NDArray[np.float64]
    dt: float | bool = 0

    @property
    def nstates(self) -> int:
        """Number of states ``n``."""
        return len(self.states)

    @property
    def conserved(self) -> tuple[StateCombination, ...]:
        """The uncontrollable combinations that stay constant (``rate`` 0)."""
        return tuple(c for c in self.uncontrollable if c.conserved)

    @property
    def dropped_states(self) -> tuple[str, ...]:
        """The pivots of `uncontrollable`: the states the controllable subsystem leaves out."""
        return tuple(c.pivot for c in self.uncontrollable)

    def controllable_subsystem(self, name: str | None = None) -> control.StateSpace:
        """The controllable part as a named python-control ``StateSpace``.

        States and outputs are `kept_states` (``C = I``), inputs are `inputs`; a design on it
        (``K_c``) acts on the full state through `full_gain()`.
        """
        r = len(self.kept_states)
        return control.ss(self.A_c, self.B_c, np.eye(r), np.zeros((r, len(self.inputs))), self.dt,
                          states=list(self.kept_states), inputs=list(self.inputs),
                          outputs=list(self.kept_states), name=name)

    def full_gain(self, K_c: ArrayLike) -> NDArray[np.float64]:
        """``K = K_c T`` (k, n): a gain of the controllable subsystem on the full state."""
        Kc = as_float_array(K_c, "K_c", ndim=2, error=LinearSystemError)
        if Kc.shape[1] != self.T.shape[0]:
            raise LinearSystemError(f"K_c must have {self.T.shape[0]} columns (the kept states "
                                    f"{list(self.kept_states)}), got shape {Kc.shape}")
        return Kc @ self.T

    def __str__(self) -> str:
        lines = [f"Kalman decomposition: {self.controllability.rank} of {self.nstates} states "
                 f"controllable (tol {self.controllability.tol:.2e})"]
        for c in self.uncontrollable:
            tag = "conserved" if c.conserved else (f"rate {c.rate:.4g}" if np.isfinite(c.rate)
                                                   else "coupled")
            lines.append(f"  uncontrollable: {c}   ({tag})")
        if self.observability is not None:
            lines.append(f"  {self.observability.rank} of {self.nstates} states observable")
            lines += [f"  unobservable direction: {c}" for c in self.unobservable]
        lines.append(f"  controllable subsystem states: {list(self.kept_states)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        obs = "" if self.observability is None else f", observable={self.observability.rank}"
        unc = ", ".join(f"'{c}'" for c in self.uncontrollable)
        return (f"KalmanDecomposition(nstates={self.nstates}, controllable="
                f"{self.controllability.rank}{obs}, uncontrollable=[{unc}])")


def _physical_pivots(sys: Any) -> list[str]:
    """For a linearization: its admissible dependent coordinates ``x_ad`` (Eq. (4.123)), the
    positions the nonholonomic constraints tie to the others, as the first pivots."""
    part = getattr(sys, "partition", None)
    if part is None or not hasattr(sys, "to_statespace"):
        return []
    names = list(sys.states)
    return [s for s in (getattr(part, "admissible_dependent", ()) or ()) if s in names]


def _as_matrices(sys: Any, states: Sequence[str] | None
                 ) -> tuple[NDArray, NDArray, NDArray | None, list[str], list[str], list[str], Any]:
    if hasattr(sys, "to_statespace") and hasattr(sys, "partition"):      # a linearization
        if not getattr(sys, "steady", True):
            raise LinearSystemError(
                "kalman_decomposition decomposes an LTI system; this linearization is about a reference "
                "that is not steady (A(t), B(t) vary with time). For the time-varying system use "
                "nhcontrol.analysis.gramian or silverman_meadows (Eqs. (8.85)-(8.87)); to look at the "
                "frozen pair at one instant anyway pass (lin.A, lin.B) with states=lin.states")
        sys = sys.to_statespace()
    if isinstance(sys, LTVSystem):
        if not sys.is_constant:
            raise LinearSystemError("kalman_decomposition decomposes an LTI system; this LTVSystem varies "
                                    "with time: freeze it (sys.at(t)) or use gramian / silverman_meadows")
        sys = sys.at(0.0 if sys.t_range is None else sys.t_range[0])
    if isinstance(sys, control.StateSpace):
        A, B, C = (np.asarray(m, dtype=float) for m in (sys.A, sys.B, sys.C))
        names = list(sys.state_labels)
        ins, outs, dt = list(sys.input_labels), list(sys.output_labels), sys.dt
        if C.shape[0] == A.shape[0] and np.array_equal(C, np.eye(A.shape[0])):
            C = None                       # the outputs are the states: nothing to decompose
    elif isinstance(sys, tuple) and len(sys) in (2, 3):
        A = as_float_array(sys[0], "A", ndim=2, error=LinearSystemError)
        B = as_float_array(sys[1], "B", error=LinearSystemError)
        B = B.reshape(-1, 1) if B.ndim == 1 else B
        C = None if len(sys) == 2 else as_float_array(sys[2], "C", ndim=2, error=LinearSystemError)
        names = [f"x[{i}]" for i in range(A.shape[0])]
        ins = [f"u[{i}]" for i in range(B.shape[1])]
        outs = [] if C is None else [f"y[{i}]" for i in range(C.shape[0])]
        dt = 0
    else:
        raise LinearSystemError(f"kalman_decomposition takes a linearization, a control.StateSpace or "
                                f"an (A, B[, C]) tuple, got {type(sys).__name__}")
    n = A.shape[0]
    if A.shape != (n, n) or B.shape[0] != n or (C is not None and C.shape[1] != n):
        raise LinearSystemError(f"A must be (n, n), B (n, k) and C (p, n), got {A.shape}, {B.shape}"
                                f"{'' if C is None else ', ' + str(C.shape)}")
    if states is not None:
        names = list(states)
        if len(names) != n:
            raise LinearSystemError(f"states must name the {n} states, got {len(names)} names")
    return A, B, C, names, ins, outs, dt


def _conserved_first(W: NDArray[np.float64], A: NDArray[np.float64], names: list[str],
                     order: Sequence[str] | None) -> tuple[NDArray[np.float64], list[int]]:
    """Echelon form of the uncontrollable directions ``W`` with the conserved ones first.

    ``η = W x`` obeys ``η̇ = M η``; the conserved combinations are ``c W`` with ``c M = 0``.
    They are put in echelon form first (pivots in ``order``); the remaining directions are
    reduced by them (their pivot columns cleared) and put in echelon form on the other columns.
    The pivot block is then block triangular with identity blocks, so the states outside the
    pivots still name the controllable subspace (see `kalman_decomposition`).
    """
    n = W.shape[1]
    if W.shape[0] == 0:
        return np.zeros((0, n)), []
    Wo, _ = echelon_combinations(W, names)                 # a basis of the row space
    M = Wo @ A @ np.linalg.pinv(Wo)
    scale = max(1.0, float(np.abs(A).max()))
    _, sv, Vt = np.linalg.svd(M.T)                         # c M = 0: the null space of Mᵀ
    k0 = int(np.sum(sv > 1e-9 * scale))
    Cn = Vt[k0:]
    if Cn.shape[0] in (0, Wo.shape[0]):
        return echelon_combinations(W, names, order=order)
    Rc, pc = echelon_combinations(Cn @ Wo, names, order=order)
    rest = Wo - (Wo @ np.linalg.pinv(Rc)) @ Rc               # the part not in the conserved span
    rest = rest - rest[:, pc] @ Rc                         # clear the conserved pivots
    taken = [names[j] for j in pc]
    rest_order = [o for o in (order or []) if o not in taken] + [nm for nm in names if nm not in taken]
    Rr, pr = echelon_combinations(rest, names, order=rest_order)
    Rr[:, pc] = 0.0
    return np.vstack([Rc, Rr]), pc + pr


def _balancing(A: NDArray[np.float64], B: NDArray[np.float64]) -> NDArray[np.float64]:
    """Diagonal state scaling ``d`` (powers of 2) of ``[[A, B], [0, 0]]`` (scipy's balancing)."""
    from scipy.linalg import matrix_balance

    n, k = B.shape
    if n == 0:
        return np.ones(0)
    M = np.block([[A, B], [np.zeros((k, n)), np.zeros((k, k))]])
    _, (scale, _) = matrix_balance(M, permute=False, separate=True)
    d = np.asarray(scale[:n], dtype=float)
    d = np.where(np.isfinite(d) & (d > 0), d, 1.0)
    # a zero column (a cyclic coordinate) drives balancing to extremes: bound the scaling to
    # 2^±BALANCE_LOG2 (enough for pressures in Pa beside angles in rad)
    return np.clip(d, 2.0 ** -BALANCE_LOG2, 2.0 ** BALANCE_LOG2)


def _unbalance(R: NDArray[np.float64], f: NDArray[np.float64], pivots: list[int]) -> NDArray[np.float64]:
    """Echelon rows of balanced coordinates in the original ones: columns times ``f``, each row
    divided by its pivot entry (the zeros of the echelon form stay zeros)."""
    out = R * f[None, :]
    for i, j in enumerate(pivots):
        out[i] /= out[i, j]
        out[i, j] = 1.0
    out[np.abs(out) <= COEF_RTOL * np.abs(out).max(axis=1, keepdims=True)] = 0.0
    return out


def kalman_decomposition(sys: LinearizationResult | control.StateSpace | tuple,
                         *, states: Sequence[str] | None = None,
                         tol: float | None = None, rtol: float | None = None,
                         pivot_order: Sequence[str] | None = None) -> KalmanDecomposition:
    r"""Kalman decomposition of an LTI system, with the directions named by the states.

    Parameters
    ----------
    sys : LinearizationResult, control.StateSpace, LTVSystem or (A, B[, C]) tuple
        A linearization about a steady reference (its ``to_statespace()``), a continuous or
        discrete ``StateSpace`` (outputs other than the states themselves are decomposed too),
        a constant ``LTVSystem``, or matrices.
    states : sequence of str, optional
        State names (default: the system's).
    tol, rtol : float, optional
        Rank thresholds of [`rank_decision()`][nhcontrol.analysis.rank_decision]; default
        ``rtol = DECOMPOSITION_RTOL`` (1e-9).
    pivot_order : sequence of str, optional
        The states tried first as pivots of the uncontrollable combinations (the states the
        controllable subsystem leaves out), then the others in the state order. Default for a
        linearization: its admissible dependent coordinates ``x_ad`` (the positions the
        nonholonomic constraints tie to the others: a two-wheeled robot's ``x, y, psi`` give
        ``x - 0.05 phiL - 0.05 phiR`` and ``psi + 0.25 phiL - 0.25 phiR``, i.e.
        ``x − r(φL + φR)/2`` and ``ψ − r(φR − φL)/d``); for other systems the state order.
        ``["phiL", "phiR"]`` would write them as ``phiL = …`` and keep ``x`` and ``psi``.

    Returns
    -------
    KalmanDecomposition

    Notes
    -----
    Let ``V`` (n, r) be an orthonormal basis of the controllable subspace (the range of the
    controllability matrix) and ``W`` the echelon form of its left null space, ``W V = 0``.
    ``W`` is left-invariant, ``W A = M W``, and ``W B = 0``, so ``η = W x`` obeys ``η̇ = M η``
    whatever the input: ``c W`` with ``c M = 0`` is a conserved combination. With ``S`` the
    selection of the states that are not pivots of ``W``, ``S V`` is invertible (a vector of
    the subspace that vanished on the kept states would be supported on the pivots, where
    ``W`` is unit block triangular, so ``W v ≠ 0``), and ``z = S V Vᵀ x`` gives

    $$ \dot z = (S V)(V^T A V)(S V)^{-1} z + S B u + (S V) V^T A (I - V V^T) x , $$

    whose last term vanishes on the controllable subspace (and for conserved combinations
    that do not enter the dynamics, e.g. cyclic coordinates).

    Examples
    --------
    >>> import control, numpy as np
    >>> from nhcontrol.analysis import kalman_decomposition
    >>> sys = control.ss([[0, 0, 1.0], [0, 0, 1.0], [0, 0, -1.0]], [[0], [0], [1.0]],
    ...                  np.eye(3), 0, states=["a", "b", "v"])
    >>> kd = kalman_decomposition(sys)
    >>> [str(c) for c in kd.uncontrollable], kd.kept_states
    (['a - b'], ('b', 'v'))
    """
    if pivot_order is None:
        pivot_order = _physical_pivots(sys)
    A, B, C, names, ins, outs, dt = _as_matrices(sys, states)
    bad = [s for s in pivot_order if s not in names]
    if bad:
        raise LinearSystemError(f"pivot_order names {bad}, which are not states {names}")
    n = A.shape[0]
    if tol is None and rtol is None:
        rtol = DECOMPOSITION_RTOL
    # balance the states (powers of 2, scipy.linalg.matrix_balance of [[A, B], [0, 0]]): the rank
    # decisions and the pivots are taken in x_b = D⁻¹ x, where pressures in Pa and angles in rad
    # weigh alike; covectors map back as w = w_b D⁻¹, vectors as v = D v_b (echelon structure kept)
    d = _balancing(A, B)
    Ab, Bb = A / d[:, None] * d[None, :], B / d[:, None]
    alpha = max(1.0, float(np.linalg.norm(Ab, 2)))
    K = ctrb_matrix(Ab / alpha, Bb)
    ctr = rank_decision(K, tol=tol, rtol=rtol,
                        name="controllability matrix [B, (A/α)B, ...] of the balanced states")
    U, _, _ = np.linalg.svd(K, full_matrices=True)
    r = ctr.rank
    V = np.linalg.qr(d[:, None] * U[:, :r])[0] if r else np.zeros((n, 0))
    # conserved: d(w x)/dt = 0, or w x[k+1] = w x[k] in discrete time (the quotient of A − I)
    discrete = not (dt is None or dt == 0) if not isinstance(dt, bool) else bool(dt)
    Ab_q = Ab - np.eye(n) if discrete else Ab
    Wb, piv = _conserved_first(U[:, r:].T, Ab_q, names, pivot_order)
    rates = _rates(Wb, Ab_q)
    Wr = _unbalance(Wb, 1.0 / d, piv)
    unc = tuple(StateCombination(readonly(Wr[i].copy()), tuple(names), names[piv[i]], rates[i])
                for i in range(Wr.shape[0]))
    obs = None
    unobs: tuple[StateCombination, ...] = ()
    if C is not None and C.shape[0]:
        O = obsv_matrix(Ab / alpha, C * d[None, :])
        obs = rank_decision(O.T, tol=tol, rtol=rtol,
                            name="observability matrix [C; C(A/α); ...] of the balanced states")
        N = np.asarray(obs.uncontrollable_directions)          # null space of O (balanced)
        Nb, npiv = echelon_combinations(N.T, names)
        Nr = _unbalance(Nb, d, npiv)
        unobs = tuple(StateCombination(readonly(Nr[i].copy()), tuple(names), names[npiv[i]])
                      for i in range(Nr.shape[0]))
    alpha = max(1.0, float(np.linalg.norm(A, 2)))
    keep = [j for j in range(n) if j not in piv]
    S = np.eye(n)[keep]
    SV = S @ V
    SVinv = np.linalg.inv(SV) if r else np.zeros((0, 0))
    T = SV @ V.T
    A_c = SV @ (V.T @ A @ V) @ SVinv
    B_c = S @ B
    A_c[np.abs(A_c) <= 1e-13 * alpha] = 0.0          # round-off of the change of basis
    return KalmanDecomposition(
        states=tuple(names), inputs=tuple(ins), outputs=tuple(outs), controllability=ctr,
        observability=obs, controllable_basis=readonly(V.copy()), uncontrollable=unc,
        unobservable=unobs, kept_states=tuple(names[j] for j in keep), T=readonly(T),
        A_c=readonly(A_c), B_c=readonly(B_c), dt=dt)
