"""Result of the third numerical linearization procedure (Eqs. (4.123)-(4.125), Sect. 8.1)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import LinearSystemError
from .._util.reprs import html_table, short_names
from .._util.validation import readonly
from .._util.reprs import concise_repr

if TYPE_CHECKING:
    from .signals import ReferenceSignals
    from typing import Mapping
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition
    from nhcontrol.reference import Reference

__all__ = ["LinearizationResult", "SpuriousIdentification", "SPURIOUS_RTOL", "ZERO_RTOL",
           "identify_spurious", "state_deviation", "InputStateForm", "input_state_form"]

SPURIOUS_RTOL = 1e-9
"""Relative tolerance (w.r.t. ``max(1, ‖A‖)``) under which a coupling block is called zero when the
spurious eigenvalues are identified.
"""

ZERO_RTOL = 1e-5
"""Relative tolerance (w.r.t. ``max(1, ‖A‖)``) under which an eigenvalue counts as zero in the
``"zero"`` identification; loose because zero eigenvalues of Jordan blocks of size k are perturbed
by round-off to about ``eps**(1/k)``.
"""

SpuriousMethod = Literal["none", "decoupled", "conserved", "zero", "nearest"]


@dataclass(frozen=True)
class SpuriousIdentification:
    """How the ``l`` spurious eigenvalues of one Jacobian were identified.

    Attributes
    ----------
    eigenvalues : (ns,) complex array
        All eigenvalues of ``A``.
    spurious : (l,) complex array
        The spurious ones (associated with the ``l`` linearized nonholonomic constraints).
    nonspurious : (ns-l,) complex array
        The ``2(n-m-l)`` eigenvalues of the constrained motion.
    method : {"none", "decoupled", "conserved", "nearest"}
        ``"decoupled"``: ``J23 = 0`` (the ``x_ad`` block does not enter the dynamics,
        Sect. 4.5.2); ``A`` is block triangular and the spurious eigenvalues are exactly
        ``eig(J33)``. ``"conserved"``: ``J31 + J33 J32 = 0``; the rows
        ``[-J32, 0, I]`` span a left-invariant subspace (the linearized nonholonomic
        constraints close on themselves) and the spurious eigenvalues are exactly ``eig(J33)``
        (at an equilibrium these are ``l`` zeros). ``"zero"``: neither structure holds for
        this partition but ``A`` has at least ``l`` zero eigenvalues (``|λ| <= ZERO_RTOL
        max(1, ‖A‖)``), as at the relative equilibria of the thesis (bicycle, hoop, torus);
        the ``l`` of smallest modulus are reported. ``"nearest"``: none of these; the ``l``
        eigenvalues of ``A`` nearest to ``eig(J33)`` are reported (a heuristic, with a
        warning). ``"none"``: ``l = 0``.
    exact : bool
        True for ``"none"``, ``"decoupled"``, ``"conserved"``.
    residual : float
        ``min(‖J23‖, ‖J31 + J33 J32‖) / max(1, ‖A‖)`` (Frobenius norms): the evidence.
    tol : float
        The tolerance the decision used (``SPURIOUS_RTOL``).
    via : tuple of str
        Empty when the structure was found in the result's own partition. Otherwise the
        ``x_ad`` names of the alternative partition (same ``x_d``, another split of
        ``[x_ai, x_ad]``) in which [`linearize()`][nhcontrol.linearization.linearize] found the exact
        structure for a steady
        reference, whose spectrum equals this one (see docs/theory/linearization.md).
    """

    __repr__ = concise_repr

    eigenvalues: NDArray[np.complex128]
    spurious: NDArray[np.complex128]
    nonspurious: NDArray[np.complex128]
    method: SpuriousMethod
    exact: bool
    residual: float
    tol: float
    via: tuple[str, ...] = ()


def _remove_matched(eigs: NDArray[np.complex128], targets: NDArray[np.complex128]
                    ) -> tuple[NDArray[np.complex128], NDArray[np.complex128]]:
    """Split ``eigs`` into the entries matched one-to-one to ``targets`` and the rest."""
    from scipy.optimize import linear_sum_assignment

    if targets.size == 0:
        return np.zeros(0, complex), eigs.copy()
    cost = np.abs(eigs[:, None] - targets[None, :])
    rows, _ = linear_sum_assignment(cost)
    mask = np.zeros(eigs.size, bool)
    mask[rows] = True
    return eigs[mask], eigs[~mask]


def identify_spurious(A: NDArray[np.float64], n_independent: int, l: int,  # noqa: E741
                      *, rtol: float = SPURIOUS_RTOL) -> SpuriousIdentification:
    """Identify the ``l`` spurious eigenvalues of a Jacobian of Eq. (4.124).

    Parameters
    ----------
    A : (ns, ns) array
        Jacobian with the block structure of Eq. (4.124), ``ns = 2 n_ai + l``.
    n_independent : int
        ``n_ai = n - m - l``.
    l : int
        Number of nonholonomic constraints.
    rtol : float
        Relative tolerance for the zero tests.

    Returns
    -------
    SpuriousIdentification

    Notes
    -----
    With ``X̃ = [x̃_ai, ẋ̃_ai, x̃_ad]`` the Jacobian is
    ``[[0, I, 0], [J21, J22, J23], [J31, J32, J33]]``.

    * If ``J23 = 0`` the subspace ``{x̃_ai = 0, ẋ̃_ai = 0}`` is invariant: the spectrum is
      ``eig([[0, I], [J21, J22]]) ∪ eig(J33)`` and the second set, belonging to the
      linearized nonholonomic constraints (4.119), is spurious.
    * If ``J31 + J33 J32 = 0`` then with ``L = [-J32, 0, I]``, ``L A = J33 L``: the
      combinations ``x̃_ad - J32 x̃_ai`` obey ``d/dt (L X̃) = J33 (L X̃)`` on their own, so
      ``eig(J33)`` is again an exact part of the spectrum.
    * Otherwise no exact split is available in this partition. For a steady reference the
      full spectrum does not depend on the partition, and in the thesis' examples the ``l``
      spurious eigenvalues are zeros (Sect. 4.3.5): if ``A`` has at least ``l`` zero
      eigenvalues, ``l`` of them are returned (``"zero"``). Failing that, the ``l``
      eigenvalues of ``A`` closest to ``eig(J33)`` (optimal one-to-one assignment) are
      returned (``"nearest"``, a heuristic). Both have ``exact = False``; a partition for
      which ``J23 = 0`` gives the exact answer.
    """
    A = np.asarray(A, dtype=float)
    eigs = np.linalg.eigvals(A)
    if l == 0:
        return SpuriousIdentification(eigs, np.zeros(0, complex), eigs, "none", True, 0.0, rtol)
    n1 = int(n_independent)
    J23 = A[n1:2 * n1, 2 * n1:]
    J31, J32, J33 = A[2 * n1:, :n1], A[2 * n1:, n1:2 * n1], A[2 * n1:, 2 * n1:]
    scale = max(1.0, float(np.linalg.norm(A)))
    r_dec = float(np.linalg.norm(J23)) / scale
    r_con = float(np.linalg.norm(J31 + J33 @ J32)) / scale
    residual = min(r_dec, r_con)
    spur_target = np.linalg.eigvals(J33)
    if r_dec <= rtol:
        top = np.zeros((2 * n1, 2 * n1))
        top[:n1, n1:] = np.eye(n1)
        top[n1:, :n1] = A[n1:2 * n1, :n1]
        top[n1:, n1:] = A[n1:2 * n1, n1:2 * n1]
        non = np.linalg.eigvals(top)
        return SpuriousIdentification(eigs, spur_target, non, "decoupled", True, residual, rtol)
    if r_con <= rtol:
        spur, non = _remove_matched(eigs, spur_target)
        return SpuriousIdentification(eigs, spur_target, non, "conserved", True, residual, rtol)
    small = np.argsort(np.abs(eigs), kind="stable")
    if np.all(np.abs(eigs[small[:l]]) <= ZERO_RTOL * scale):
        mask = np.zeros(eigs.size, bool)
        mask[small[:l]] = True
        return SpuriousIdentification(eigs, eigs[mask], eigs[~mask], "zero", False, residual,
                                      rtol)
    spur, non = _remove_matched(eigs, spur_target)
    return SpuriousIdentification(eigs, spur, non, "nearest", False, residual, rtol)


def _adopt(own: SpuriousIdentification, alt: SpuriousIdentification,
           via: tuple[str, ...]) -> SpuriousIdentification:
    """Own eigenvalues, spurious ones taken from an exact identification of the same spectrum
    in another partition."""
    spur, non = _remove_matched(own.eigenvalues, alt.spurious)
    return SpuriousIdentification(own.eigenvalues, alt.spurious, non, alt.method, True,
                                  alt.residual, alt.tol, via)


def _state_columns(states: Sequence[str], coords: Sequence[str],
                   error: type[Exception] = LinearSystemError) -> list[tuple[int, int]]:
    """``(level, j)`` per state: level 0 for coordinate ``j``, 1 for its velocity ``<q>_d``."""
    coords = list(coords)
    cols = []
    for s in states:
        if s in coords:
            cols.append((0, coords.index(s)))
        elif s.endswith("_d") and s[:-2] in coords:
            cols.append((1, coords.index(s[:-2])))
        else:
            raise error(f"state {s!r} is neither a coordinate of the reference {coords} nor "
                        "'<coordinate>_d'")
    return cols


def state_deviation(states: Sequence[str], ref: Reference, t: ArrayLike, x: ArrayLike, xd: ArrayLike, *,
                    error: type[Exception] = LinearSystemError) -> NDArray[np.float64]:
    """Deviation of ``(x, ẋ)`` from ``ref`` at ``t`` in the named linear states.

    Entry ``i`` is ``x_q − x0_q(t)`` for ``states[i] = q`` (a coordinate) and ``ẋ_q − ẋ0_q(t)``
    for ``states[i] = "<q>_d"`` — the deviation ``X̃`` of Eq. (4.96) in any order;
    [`LinearizationResult.deviation()`][nhcontrol.linearization.LinearizationResult.deviation] is this
    with the result's own states.

    Parameters
    ----------
    states : sequence of str
    ref : Reference
    t : float or (N,) array_like
    x, xd : (n,) or (N, n) array_like
    error : exception class
        Raised (with the shapes) for wrong shapes or unknown state names.

    Returns
    -------
    (len(states),) or (N, len(states)) ndarray
    """
    coords = list(ref.coordinates)
    cols = _state_columns(states, coords, error)
    X = np.asarray(x, dtype=float)
    XD = np.asarray(xd, dtype=float)
    if X.shape != XD.shape or X.shape[-1] != len(coords) or X.ndim > 2:
        raise error(f"x and xd must both be of shape ({len(coords)},) or (N, {len(coords)}) (coordinates "
                    f"{coords}), got {X.shape} and {XD.shape}")
    dx = X - ref.x(t)
    dxd = XD - ref.xd(t)
    return np.stack([(dxd if lvl else dx)[..., j] for lvl, j in cols], axis=-1)


REDUCE_RTOL = 1e-10
"""Relative size below which an entry of ``A`` counts as zero in
[`LinearizationResult.to_statespace()`][nhcontrol.linearization.LinearizationResult.to_statespace].
"""


class _EigenvalueArray(np.ndarray):
    """The eigenvalue array; calling it (the former method form) returns the same array."""

    def __call__(self) -> NDArray[np.complex128]:
        warnings.warn("LinearizationResult.eigenvalues is a property now; write lin.eigenvalues "
                      "without parentheses", DeprecationWarning, stacklevel=2)
        return self


@dataclass(frozen=True)
class InputStateForm:
    """``dX̃/dt = A X̃ + B ũ + B_rate dũ/dt`` with the rate-carrying inputs made states.

    States ``[X̃; ũ_r]``, inputs ``[ũ_o; dũ_r/dt]`` (``ũ_r`` the inputs whose rates act, ``ũ_o``
    the others):

    $$ A_{aug} = \\begin{bmatrix} A & B_r \\\\ 0 & 0 \\end{bmatrix},\\qquad
       B_{aug} = \\begin{bmatrix} B_o & B_{rate,r} \\\\ 0 & I \\end{bmatrix} . $$

    Attributes
    ----------
    A : (ns + r, ns + r) or (N, ns + r, ns + r) array
    B : (ns + r, k) or (N, ns + r, k) array
    states : tuple of str
        The linearization's states, then the rate-carrying input names.
    inputs : tuple of str
        The other inputs, then ``<input>_dot`` of the rate-carrying ones (``_`` appended while
        the name is taken).
    """

    __repr__ = concise_repr

    A: NDArray[np.float64]
    B: NDArray[np.float64]
    states: tuple[str, ...]
    inputs: tuple[str, ...]


def input_state_form(A: ArrayLike, B: ArrayLike, B_rate: ArrayLike, states: Sequence[str],
                     inputs: Sequence[str], rate_inputs: Sequence[str]) -> InputStateForm:
    """The rate-carrying inputs ``rate_inputs`` as states driven by their rates (`InputStateForm`).

    Exact for time-varying matrices too (no derivative of ``B_rate`` is needed), so it is the
    form for an LTV route and for bounds on input rates (a steering-rate limit).
    """
    A, B, Br = (np.asarray(a, dtype=float) for a in (A, B, B_rate))
    inputs = list(inputs)
    bad = [s for s in rate_inputs if s not in inputs]
    if bad:
        raise LinearSystemError(f"rate_inputs {bad} are not inputs of the linearization {inputs}")
    r = [inputs.index(s) for s in rate_inputs]
    o = [j for j in range(len(inputs)) if j not in r]
    lead, ns, nr = A.shape[:-2], A.shape[-1], len(r)
    Aa = np.zeros(lead + (ns + nr, ns + nr))
    Aa[..., :ns, :ns] = A
    Aa[..., :ns, ns:] = B[..., r]
    Ba = np.zeros(lead + (ns + nr, len(inputs)))
    Ba[..., :ns, :len(o)] = B[..., o]
    Ba[..., :ns, len(o):] = Br[..., r]
    Ba[..., ns:, len(o):] = np.eye(nr)
    rate_names = []
    for j in r:
        nm = f"{inputs[j]}_dot"
        while nm in inputs or nm in rate_names:     # a name the model already uses
            nm += "_"
        rate_names.append(nm)
    return InputStateForm(A=readonly(Aa), B=readonly(Ba),
                          states=tuple(states) + tuple(inputs[j] for j in r),
                          inputs=tuple(inputs[j] for j in o) + tuple(rate_names))


@dataclass(frozen=True)
class LinearizationResult:
    """Linearized equations ``dX̃/dt = A X̃ + B ũ + B_rate dũ/dt`` of the third procedure.

    Attributes
    ----------
    A : (ns, ns) or (N, ns, ns) array
        Jacobian of Eq. (4.124) (Eq. (4.127) when ``l = 0``), ``ns = 2(n-m)-l``; read-only.
    B : (ns, k) or (N, ns, k) array
        Input matrix (Sect. 8.1); zero rows for ``x̃_ai`` and ``x̃_ad``; read-only.
    states : tuple of str
        ``x_ai`` names, their rates ``<name>_d``, ``x_ad`` names (Eq. (4.123)).
    inputs : tuple of str
        Input names (length ``k``).
    partition : Partition
        The partition used.
    n_spurious : int
        ``l``, the number of spurious eigenvalues.
    t : float or (N,) array
        Reference time(s).
    steady : bool
        ``ref.steady``: the linearization does not depend on time.
    n_independent : int
        ``n - m - l``.
    model_name : str
    B_rate : (ns, k) or (N, ns, k) array
        Input-rate matrix: inputs that enter the nonholonomic constraints
        ``B(x, u) ẋ + b(x, u) = 0`` make their rates act on the motion (a steering angle's
        rate turns the velocities); zero rows for ``x̃_ai`` and ``x̃_ad``, zeros when no input
        enters the constraints; read-only. `to_statespace()` removes it by the state change
        ``X' = X̃ − B_rate ũ`` (docs/theory/road_vehicles.md, "Inputs in the constraints").
    C, D : (q, ns), (q, k) or stacked (N, q, ns), (N, q, k) arrays, or None
        Output matrices ``ỹ = C X̃ + D ũ`` of the model's declared outputs
        (`MultibodySystem.add_output`), through the partition's maps
        ([`nhcontrol.linearization.outputs`][nhcontrol.linearization.outputs]); None when the model
        declares no outputs; read-only.
    outputs : tuple of str
        Names of the declared outputs (rows of ``C``; empty without outputs).
    """

    A: NDArray[np.float64]
    B: NDArray[np.float64]
    states: tuple[str, ...]
    inputs: tuple[str, ...]
    partition: Partition
    n_spurious: int
    t: float | NDArray[np.float64]
    steady: bool
    n_independent: int
    model_name: str = ""
    B_rate: NDArray[np.float64] | None = None
    C: NDArray[np.float64] | None = None
    D: NDArray[np.float64] | None = None
    outputs: tuple[str, ...] = ()
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "A", readonly(np.asarray(self.A, dtype=float)))
        object.__setattr__(self, "B", readonly(np.asarray(self.B, dtype=float)))
        Br = np.zeros(self.B.shape) if self.B_rate is None else np.asarray(self.B_rate, dtype=float)
        if Br.shape != self.B.shape:
            raise LinearSystemError(f"B_rate must have the shape of B {self.B.shape}, got {Br.shape}")
        object.__setattr__(self, "B_rate", readonly(Br))
        if self.C is not None:
            Cm = np.asarray(self.C, dtype=float)
            Dm = (np.zeros(Cm.shape[:-1] + (self.B.shape[-1],)) if self.D is None
                  else np.asarray(self.D, dtype=float))
            if Cm.shape[:-2] != self.A.shape[:-2] or Cm.shape[-1] != self.A.shape[-1] \
                    or Dm.shape != Cm.shape[:-1] + (self.B.shape[-1],) \
                    or len(self.outputs) != Cm.shape[-2]:
                raise LinearSystemError(
                    f"C must have shape (q, ns) = (q, {self.A.shape[-1]}) and D (q, k) = "
                    f"(q, {self.B.shape[-1]}) (leading N axis as A), with one name per output; "
                    f"got C {Cm.shape}, D {Dm.shape}, outputs {list(self.outputs)}")
            object.__setattr__(self, "C", readonly(Cm))
            object.__setattr__(self, "D", readonly(Dm))
            object.__setattr__(self, "outputs", tuple(self.outputs))
        elif self.outputs:
            raise LinearSystemError(f"outputs {list(self.outputs)} given without their matrix C")
        if isinstance(self.t, np.ndarray):
            object.__setattr__(self, "t", readonly(self.t))

    # python-control dimension names
    @property
    def nstates(self) -> int:
        return int(self.A.shape[-1])

    @property
    def ninputs(self) -> int:
        return int(self.B.shape[-1])

    @property
    def stacked(self) -> bool:
        """True when evaluated at an array of times (leading ``N`` axis)."""
        return self.A.ndim == 3

    def _summary(self) -> tuple[str, str]:
        """(where, eigen) parts of the representation; eigenvalues only for one point."""
        if self.stacked:
            tt = np.asarray(self.t).reshape(-1)
            where = f"{self.A.shape[0]} points, t in [{tt.min():g}, {tt.max():g}]"
            return where, ""
        where = f"t = {float(np.asarray(self.t).reshape(-1)[0]):g}" + (", steady" if self.steady else "")
        ev = np.linalg.eigvals(self.A) if self.A.size else np.zeros(0)
        eig = f", max Re(eig A) = {float(np.max(ev.real)):.4g}" if ev.size else ""
        return where, eig

    def __repr__(self) -> str:
        where, eig = self._summary()
        name = f" {self.model_name!r}" if self.model_name else ""
        rate = ", input rates act (B_rate ≠ 0)" if np.any(self.B_rate) else ""
        return (f"<LinearizationResult{name} at {where}: {self.nstates} states "
                f"{short_names(self.states)}, {self.ninputs} inputs {short_names(self.inputs)}, "
                f"{self.n_spurious} spurious{eig}{rate}>")

    def _repr_html_(self) -> str:
        where, eig = self._summary()
        rows = [("model", self.model_name), ("at", where), ("states", ", ".join(self.states)),
                ("inputs", ", ".join(self.inputs)), ("spurious eigenvalues", str(self.n_spurious)),
                ("A", f"{self.A.shape}"), ("B", f"{self.B.shape}")]
        if eig:
            rows.append(("eigenvalues", np.array2string(np.sort_complex(np.linalg.eigvals(self.A)),
                                                        precision=4, max_line_width=100)))
        return html_table("LinearizationResult", rows)

    def _identifications(self) -> list[SpuriousIdentification]:
        if "ident" not in self._cache:
            mats = self.A if self.stacked else self.A[None]
            ids = [identify_spurious(a, self.n_independent, self.n_spurious) for a in mats]
            search = self._cache.get("search")
            if search is not None and not all(i.exact for i in ids):
                found = search()
                if found is not None:
                    alt, via = found
                    ids = [_adopt(i, alt, via) for i in ids]
            if any(i.method == "nearest" for i in ids):
                worst = max(i.residual for i in ids)
                warnings.warn(
                    f"spurious eigenvalues of {self.model_name!r} identified heuristically "
                    f"(nearest to eig(J33)): with partition x_ad = "
                    f"{list(self.partition.admissible_dependent)} neither J23 = 0 nor "
                    f"J31 + J33 J32 = 0 (relative residual {worst:.3g} > {SPURIOUS_RTOL:g}); "
                    f"a partition whose x_ad block does not enter the dynamics (Sect. 4.5.2) "
                    f"gives an exact identification", UserWarning, stacklevel=3)
            self._cache["ident"] = ids
        return self._cache["ident"]

    @property
    def eigenvalues(self) -> NDArray[np.complex128]:
        """All ``2(n-m)-l`` eigenvalues, shape ``(ns,)`` or ``(N, ns)`` (a property, like
        `spurious_eigenvalues`; the former call ``lin.eigenvalues()`` still works)."""
        ev = np.array([i.eigenvalues for i in self._identifications()])
        return readonly(ev if self.stacked else ev[0]).view(_EigenvalueArray)

    @property
    def spurious_identification(self) -> SpuriousIdentification | list[SpuriousIdentification]:
        """The evidence behind `spurious_eigenvalues` (one per point when stacked)."""
        ids = self._identifications()
        return ids if self.stacked else ids[0]

    @property
    def spurious_eigenvalues(self) -> NDArray[np.complex128]:
        """The ``l`` spurious eigenvalues, shape ``(l,)`` or ``(N, l)`` (see
        [`identify_spurious()`][nhcontrol.linearization.identify_spurious])."""
        ids = self._identifications()
        ev = np.array([i.spurious for i in ids], dtype=complex).reshape(len(ids),
                                                                         self.n_spurious)
        return readonly(ev if self.stacked else ev[0])

    @property
    def nonspurious_eigenvalues(self) -> NDArray[np.complex128]:
        """The ``2(n-m-l)`` eigenvalues of the constrained motion."""
        ev = np.array([i.nonspurious for i in self._identifications()])
        return readonly(ev if self.stacked else ev[0])

    def blocks(self) -> dict[str, NDArray[np.float64]]:
        """The blocks ``J21 … J33`` of Eq. (4.125), sliced from ``A``."""
        n1, l = self.n_independent, self.n_spurious
        A = self.A
        out = {"J21": A[..., n1:2 * n1, :n1], "J22": A[..., n1:2 * n1, n1:2 * n1]}
        if l:
            out.update(J23=A[..., n1:2 * n1, 2 * n1:], J31=A[..., 2 * n1:, :n1],
                       J32=A[..., 2 * n1:, n1:2 * n1], J33=A[..., 2 * n1:, 2 * n1:])
        return out

    def to_statespace(self, states: Sequence[str] | Literal["reduced"] | None = None, *,
                      rtol: float = REDUCE_RTOL,
                      outputs: Literal["states", "declared"] = "states") -> Any:
        """python-control ``StateSpace`` with named states and inputs (steady references).

        The outputs are the states (``C = I``, ``D = 0``), named after the states as
        python-control names the outputs of a system whose output is its state
        (``control.nlsys(f, None, states=...)``, and [`to_nlsys()`][nhcontrol.simulate.to_nlsys]),
        so that a controller from ``control.create_statefbk_iosystem(sys, K)`` reads the
        states of the plant by name. For a stacked
        result of a steady reference (all points equal) the first point is used.

        When inputs enter the nonholonomic constraints (`B_rate` ≠ 0) the linear equations
        ``dX̃/dt = A X̃ + B ũ + B_rate dũ/dt`` are not a state space; the state change
        ``X' = X̃ − B_rate ũ`` (exact for constant ``A, B, B_rate``) gives

        $$ \\dot X' = A X' + (A B_{rate} + B)\\,\\tilde u,\\qquad
           y = X' + B_{rate}\\,\\tilde u , $$

        so the outputs are still the deviations ``X̃`` (a feed-through ``D = B_rate``). The
        states whose row of ``B_rate`` is non-zero are named ``<state>_shift``. ``X'`` is
        continuous where ``ũ`` jumps (zero-order hold), ``X̃`` jumps by ``B_rate Δũ``: the
        re-projection of the velocities onto the new constraint manifold.

        Parameters
        ----------
        states : None, sequence of str or "reduced"
            ``None``: all `states`. A list of state names: those states, in that order,
            after checking that none of them depends on a dropped state (``A[kept, dropped]``
            must vanish). ``"reduced"``: drop, repeatedly, every state whose column of ``A``
            vanishes among the remaining states — a cyclic coordinate (its position enters
            nothing), then the velocity that only fed it, and spurious directions that do not
            enter the dynamics (``J23 = 0``, Sect. 4.3.4). Each dropped state carries a zero
            eigenvalue that no input can move, so ``control.lqr`` needs them gone; the bicycle
            gives ``phi_b, delta, phi_b_d, delta_d``.
        rtol : float
            Entries below ``rtol · max|A|`` count as zero (`REDUCE_RTOL`).
        outputs : {"states", "declared"}, default "states"
            ``"declared"``: the outputs are the model's declared outputs
            (`MultibodySystem.add_output`), ``y = C X̃ + D ũ`` with the matrices `C`, `D` and
            the names `outputs` (after the state change ``X' = X̃ − B_rate ũ`` the
            feed-through is ``D + C B_rate``); dropped states must not enter ``C``.

        Raises
        ------
        LinearSystemError
            If the reference is not steady (use the LTV route: evaluate
            ``res = linearize(cm, ref, partition, t=ts)`` and build
            ``nhcontrol.systems.LTVSystem.from_samples(ts, res.A, res.B, states=res.states,
            inputs=res.inputs)``), for unknown state names, or when a kept state depends on a
            dropped one (the coupling is named).
        """
        import control

        if not self.steady:
            raise LinearSystemError(
                "the reference is not steady (ref.steady is False): the linearization A(t), "
                "B(t) depends on time and is not an LTI StateSpace; evaluate "
                "linearize(..., t=ts) on an array of times and use the LTV route "
                "(nhcontrol.systems.LTVSystem)")
        A = self.A[0] if self.stacked else self.A
        B = self.B[0] if self.stacked else self.B
        B1 = self.B_rate[0] if self.stacked else self.B_rate
        keep = self._kept_states(A, states, rtol)
        if np.any(B1):
            B = A @ B1 + B              # X' = X̃ − B_rate ũ (kept rows of A vanish on dropped states)
        if outputs not in ("states", "declared"):
            raise LinearSystemError(f"outputs must be 'states' or 'declared', got {outputs!r}")
        if outputs == "declared":
            Cy, Dy = self._declared_outputs(keep, B1, rtol)
        A, B, B1 = A[np.ix_(keep, keep)], B[keep], B1[keep]
        names = [self.states[i] for i in keep]
        shifted = [f"{s}_shift" if np.any(B1[i]) else s for i, s in enumerate(names)]
        ns = A.shape[0]
        if outputs == "declared":
            return control.ss(A, B, Cy, Dy, states=shifted, inputs=list(self.inputs),
                              outputs=list(self.outputs), name=self.model_name or None)
        return control.ss(A, B, np.eye(ns), B1,
                          states=shifted, inputs=list(self.inputs),
                          outputs=list(names),
                          name=self.model_name or None)

    def _declared_outputs(self, keep: list[int], B1: NDArray[np.float64], rtol: float
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``C`` on the kept states and ``D + C B_rate`` (first point when stacked)."""
        if self.C is None:
            raise LinearSystemError(
                f"model {self.model_name!r} declares no outputs: to_statespace(outputs='declared') "
                "needs sensors added with MultibodySystem.add_output(name, expr) before compiling")
        C = self.C[0] if self.stacked else self.C
        D = self.D[0] if self.stacked else self.D
        drop = [j for j in range(C.shape[1]) if j not in keep]
        tol = rtol * max(1.0, float(np.abs(C).max()))
        seen = [self.states[j] for j in drop if np.any(np.abs(C[:, j]) > tol)]
        if seen:
            raise LinearSystemError(f"the declared outputs {list(self.outputs)} depend on the "
                                    f"dropped state(s) {seen}; keep them in states=")
        return C[:, keep], D + C @ B1

    def input_state_form(self, rate_inputs: Sequence[str] | None = None) -> InputStateForm:
        """The inputs whose rates act (non-zero columns of `B_rate`, or ``rate_inputs``) as
        states driven by their rates: states ``[X̃; ũ_r]``, inputs ``[ũ_o; dũ_r/dt]``
        (named ``<input>_dot``)
        (`InputStateForm`); the alternative to the state change of `to_statespace()`, exact
        for time-varying ``A(t), B(t), B_rate(t)`` as well."""
        if rate_inputs is None:
            Br = self.B_rate.reshape(-1, *self.B_rate.shape[-2:])
            rate_inputs = [s for j, s in enumerate(self.inputs) if np.any(Br[..., j])]
        return input_state_form(self.A, self.B, self.B_rate, self.states, self.inputs, rate_inputs)

    def save(self, path: Any) -> Any:
        """Save to ``path`` (``.npz``: ``A``, ``B``, ``t`` and JSON metadata); see `load()`."""
        from .._util.storage import save_npz

        part = self.partition
        pmeta = None if part is None else {k: list(getattr(part, k, None) or (part.get(k, []) if isinstance(
            part, dict) else [])) for k in ("independent", "admissible_dependent", "dependent")}
        arrays = {"A": self.A, "B": self.B, "t": np.asarray(self.t), "B_rate": self.B_rate}
        if self.C is not None:
            arrays.update(C=self.C, D=self.D)
        return save_npz(path, "LinearizationResult", arrays,
                        {"states": list(self.states), "inputs": list(self.inputs), "partition": pmeta,
                         "n_spurious": int(self.n_spurious), "steady": bool(self.steady),
                         "n_independent": int(self.n_independent), "model_name": self.model_name,
                         "t_is_scalar": bool(np.ndim(self.t) == 0),
                         "outputs": list(self.outputs)})

    @classmethod
    def load(cls, path: Any) -> "LinearizationResult":
        """Read a file written by `save()` (the partition comes back as a dict of names).

        Raises
        ------
        StorageError
            The file is not a saved `LinearizationResult`, or a field is missing, of the wrong
            type, non-finite, or inconsistent with the others (``A`` not square, names that do
            not match the sizes of ``A`` and ``B``); the message names the file and the field.
        """
        from .._util.storage import LoadedFile

        f = LoadedFile(path, "LinearizationResult")
        A = f.array("A", ndim=(2, 3))
        if A.shape[-1] != A.shape[-2]:
            raise f.fail("A", f"has shape {A.shape}: a state matrix must be square")
        B = f.array("B", ndim=A.ndim)
        f.shape("B", B, A.shape[:-1] + (None,), f"A {A.shape}")
        Br = f.array("B_rate", ndim=B.ndim, optional=True)
        if Br is not None:
            f.shape("B_rate", Br, B.shape, f"B {B.shape}")
        scalar = f.flag("t_is_scalar")
        tt = f.array("t", ndim=0 if scalar else 1)
        if not scalar and A.ndim == 3 and tt.shape != (A.shape[0],):
            raise f.fail("t", f"has {tt.size} times, but A holds {A.shape[0]} matrices")
        states = f.names("states", A.shape[-1], f"A {A.shape}")
        inputs = f.names("inputs", B.shape[-1], f"B {B.shape}")
        part = f.field("partition", None)
        if part is not None and not (isinstance(part, dict) and all(
                isinstance(v, list) and all(isinstance(q, str) for q in v) for v in part.values())):
            raise f.fail("partition", f"is {str(part)[:80]!r}, not a mapping of lists of coordinate names")
        t = float(tt) if scalar else readonly(np.array(tt))
        C = f.array("C", ndim=None, optional=True)
        D = f.array("D", ndim=None, optional=True)
        outputs = tuple(f.field("outputs", ()) or ())
        return f.build(lambda: cls(A=readonly(A), B=readonly(B), states=states, inputs=inputs, partition=part,
                                   n_spurious=f.integer("n_spurious"), t=t, steady=f.flag("steady"),
                                   n_independent=f.integer("n_independent"),
                                   model_name=f.text("model_name", default=""),
                                   B_rate=None if Br is None else readonly(Br),
                                   C=None if C is None else np.array(C),
                                   D=None if D is None else np.array(D), outputs=outputs))

    def deviation(self, ref: Reference, t: ArrayLike, x: ArrayLike,
                  xd: ArrayLike) -> NDArray[np.float64]:
        """The linear state of this linearization for the motion ``(x, ẋ)`` at ``t``.

        Entry ``i`` is ``x_q − x0_q(t)`` for a state named after a coordinate ``q`` and
        ``ẋ_q − ẋ0_q(t)`` for ``<q>_d``, in the order of `states` — the deviation
        ``X̃`` of Eq. (4.96) for any model and partition. `from_deviation()` is the inverse.

        Parameters
        ----------
        ref : Reference
            The reference this result linearizes about.
        t : float or (N,) array_like
        x, xd : (n,) or (N, n) array_like

        Returns
        -------
        (ns,) or (N, ns) ndarray
        """
        return state_deviation(self.states, ref, t, x, xd)

    def reference_signals(self, ref: Reference, t: ArrayLike, states: Any = None) -> ReferenceSignals:
        """Desired states ``xd(t)`` (in the order of `states`, or of ``states=``) and inputs
        ``ud(t)`` along ``ref``, for python-control controllers such as
        ``control.create_statefbk_iosystem`` (no name mapping by hand); see
        [`reference_signals()`][nhcontrol.linearization.signals.reference_signals]."""
        from .signals import reference_signals

        return reference_signals(self, ref, t, states)

    def from_deviation(self, ref: Reference, t: ArrayLike, dX: ArrayLike, *,
                       cm: CompiledModel | None = None,
                       tol: float = 1e-12, max_iter: int = 50
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Consistent coordinates and velocities ``(x, ẋ)`` with the linear state ``dX`` at ``t``.

        The inverse of `deviation()`, for initial conditions of nonlinear simulations. The
        entries of ``dX`` fix ``x_ai = x_ai0(t) + x̃_ai``, ``ẋ_ai = ẋ_ai0(t) + ẋ̃_ai`` and
        ``x_ad = x_ad0(t) + x̃_ad`` (Eq. (4.123)); the dependent coordinates ``x_d`` are then
        solved from the holonomic constraints ``C(x) = 0`` (Eq. (2.109), Newton from
        ``x_d0(t)``) and the ``m + l`` dependent velocities from ``D(x) ẋ = 0`` (Eq. (2.76)), by
        [`nhcontrol.reference.consistent_initial_conditions()`][nhcontrol.reference.consistent_initial_conditions]
        with this result's partition.
        So ``deviation(ref, t, *from_deviation(ref, t, dX)) == dX`` and the constraints hold to
        ``tol``; the solved entries agree with the linearized constraints to second order in
        ``dX``.

        Parameters
        ----------
        ref : Reference
            The reference this result linearizes about (its parameters and inputs ``u0(t)`` are
            used in the constraints).
        t : float or (N,) array_like
        dX : (ns,) or (N, ns) array_like
            Linear state(s) in the order of `states`.
        cm : CompiledModel, optional
            The model; default the one [`nhcontrol.linearize()`][nhcontrol.linearize] was called
            with (not kept by
            pickling or `load()`: pass it then).
        tol, max_iter
            Absolute tolerance on ``max |C|`` and Newton iteration limit.

        Returns
        -------
        x, xd : (n,) or (N, n) ndarray

        Raises
        ------
        LinearSystemError
            Wrong shapes, a state that is not a coordinate or its rate, or no model.
        PartitionError, SolverError
            From the constraint solve (singular blocks, no convergence).
        """
        from ..reference import consistent_initial_conditions

        model = cm if cm is not None else self._cache.get("model")
        if model is None:
            raise LinearSystemError("from_deviation needs the compiled model (this result was loaded or "
                                    "unpickled): pass cm=<the CompiledModel used by linearize>")
        if self.partition is None:
            raise LinearSystemError("from_deviation needs the partition of this linearization; it has none")
        coords = list(ref.coordinates)
        cols = _state_columns(self.states, coords)
        T = np.asarray(t, dtype=float)
        D = np.asarray(dX, dtype=float)
        ns = self.nstates
        if T.ndim > 1 or D.ndim != T.ndim + 1 or D.shape[-1] != ns or (T.ndim and D.shape[0] != T.size):
            raise LinearSystemError(f"dX must be ({ns},) for a scalar t or (N, {ns}) for t of shape (N,) "
                                    f"(states {list(self.states)}), got dX {D.shape} and t {T.shape}")
        if not np.all(np.isfinite(D)):
            raise LinearSystemError(f"dX must be finite, got {D.tolist()}")
        ts = np.atleast_1d(T)
        Ds = D.reshape(-1, ns)
        x0, xd0, u0 = (np.atleast_2d(f(ts)) for f in (ref.x, ref.xd, ref.u))
        xs, xds = np.empty_like(x0), np.empty_like(xd0)
        for k in range(ts.size):
            x, xd = x0[k].copy(), xd0[k].copy()
            for i, (lvl, j) in enumerate(cols):
                (xd if lvl else x)[j] += Ds[k, i]
            ic = consistent_initial_conditions(model, x, xd, partition=self.partition,
                                               u=u0[k] if u0.shape[-1] else None, p=ref.parameters,
                                               tol=tol, max_iter=max_iter)
            xs[k], xds[k] = ic.x, ic.xd
        if T.ndim == 0:
            return xs[0], xds[0]
        return xs, xds

    def __getstate__(self) -> dict[str, Any]:
        # the compiled model behind from_deviation is not pickled (pass cm= after unpickling)
        state = dict(self.__dict__)
        state["_cache"] = {k: v for k, v in self._cache.items() if k != "model"}
        return state

    def reduced_states(self, rtol: float = REDUCE_RTOL) -> tuple[str, ...]:
        """The states ``to_statespace(states="reduced")`` keeps (see there)."""
        A = self.A[0] if self.stacked else self.A
        return tuple(self.states[i] for i in self._kept_states(A, "reduced", rtol))

    def _kept_states(self, A: NDArray[np.float64], states: Any, rtol: float) -> list[int]:
        all_names = list(self.states)
        tol = rtol * max(1.0, float(np.abs(A).max()))
        if states is None:
            return list(range(len(all_names)))
        if isinstance(states, str):
            if states != "reduced":
                raise LinearSystemError(f"states must be None, 'reduced' or a list of state names, "
                                        f"got {states!r}")
            keep = list(range(len(all_names)))
            changed = True
            while changed:
                changed = False
                for j in list(keep):
                    if np.all(np.abs(A[keep, j]) <= tol):
                        keep.remove(j)
                        changed = True
            return keep
        names = list(states)
        bad = [s for s in names if s not in all_names]
        if bad or len(set(names)) != len(names):
            raise LinearSystemError(f"states {bad or names} are not distinct states of this "
                                    f"linearization; valid names are {all_names}")
        keep = [all_names.index(s) for s in names]
        drop = [j for j in range(len(all_names)) if j not in keep]
        if drop:
            C = np.abs(A[np.ix_(keep, drop)])
            if np.any(C > tol):
                pairs = [(all_names[keep[i]], all_names[drop[j]], float(A[keep[i], drop[j]]))
                         for i, j in zip(*np.nonzero(C > tol))]
                txt = ", ".join(f"d({a})/dt depends on {b!r} (A = {v:.3g})" for a, b, v in pairs[:6])
                raise LinearSystemError(
                    f"cannot drop {sorted({b for _, b, _ in pairs})}: {txt}; keep them, or use "
                    f"states='reduced' (which keeps {list(self.reduced_states(rtol))})")
        return keep
