"""Coordinate partition of the third numerical procedure (thesis Eq. (4.96), Eq. (2.137)).

The ``n`` coordinates are split into

* ``x_ai`` — ``n - m - l`` independent coordinates,
* ``x_ad`` — ``l`` admissible dependent coordinates (one per nonholonomic constraint),
* ``x_d``  — ``m`` dependent coordinates (one per holonomic constraint),

so that ``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)); ``x_dd = [x_ad, x_d]`` is the dependent set of
Eq. (2.129). A partition is *valid at a reference point* when the three blocks that the
procedure inverts are well conditioned there:

* ``D_dd`` — the columns of ``D = [Cx; B]`` of ``x_dd`` (Eq. (2.131)),
* ``∂C/∂x_d`` — the columns of ``Cx`` of ``x_d`` (Eq. (4.105)),
* ``B̄_ad`` — the ``x_ad`` columns of ``B̄ = B T^h`` (Eq. (4.116)).

Because ``D_dd = [[Cx_ad, Cx_d], [B_ad, B_d]]`` has the Schur complement
``B_ad - B_d Cx_d⁻¹ Cx_ad = B̄_ad``, ``det D_dd = det(∂C/∂x_d) det(B̄_ad)``: the automatic
choice ([`suggest_partition()`][nhcontrol.linearization.suggest_partition]) first pivots on ``Cx`` for
``x_d`` and then on ``B̄`` for
``x_ad``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from .._util.errors import PartitionError, PartitionTypeError
from .._util.validation import COND_MAX, RANK_RTOL, require_model, require_reference

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = [
    "Partition",
    "PartitionIndices",
    "PartitionReport",
    "BlockCondition",
    "suggest_partition",
]

PREFER_WEIGHT = 1e-6
"""Weight applied to the columns of coordinates listed in ``prefer`` before the column-pivoted QR of
[`suggest_partition()`][nhcontrol.linearization.suggest_partition]: such columns are only pivoted (made
dependent) when the others are (numerically) exhausted.
"""

_KEY_ALIASES = {
    "independent": "independent", "x_ai": "independent", "ai": "independent",
    "admissible_dependent": "admissible_dependent", "x_ad": "admissible_dependent",
    "ad": "admissible_dependent",
    "dependent": "dependent", "x_d": "dependent", "d": "dependent",
}


def _as_names(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.replace(",", " ").split())
    try:
        return tuple(str(v) for v in value)
    except TypeError as exc:
        raise PartitionError(f"{what} must be a sequence of coordinate names, got "
                             f"{type(value).__name__}") from exc


@dataclass(frozen=True)
class PartitionIndices:
    """Index arrays of a partition in the model's coordinate order (precomputed once).

    Attributes
    ----------
    ai, ad, d : (n-m-l,), (l,), (m,) int arrays
        Positions of ``x_ai``, ``x_ad``, ``x_d`` in the model coordinates.
    perm : (n,) int array
        ``[ai, ad, d]``: ``x[perm]`` is ``x`` in the thesis order of Eq. (4.96).
    n, m, l : int
    """

    ai: NDArray[np.intp]
    ad: NDArray[np.intp]
    d: NDArray[np.intp]
    perm: NDArray[np.intp]
    n: int
    m: int
    l: int  # noqa: E741  (thesis symbol)

    @property
    def n_ai(self) -> int:
        """Number of independent coordinates ``n - m - l``."""
        return self.n - self.m - self.l


@dataclass(frozen=True)
class BlockCondition:
    """Conditioning evidence of one block that the procedure inverts.

    Attributes
    ----------
    block : str
        ``"D_dd"``, ``"dC/dx_d"`` or ``"Bbar_ad"``.
    equation : str
        Thesis equation that defines the block.
    coordinates : tuple of str
        The columns (coordinates) of the block.
    singular_values : (k,) array
        Singular values of the block after scaling each row of the full matrix to unit
        2-norm (descending).
    cond : float
        Relative condition number ``‖F‖₂ / σ_min(F_block)`` where ``F`` is the full matrix
        (``D``, ``Cx`` or ``B̄``) with unit rows and ``F_block`` its columns of this block;
        ``inf`` when singular or a constraint row vanishes, ``1.0`` for an empty block.
        It bounds the classical ``cond(F_block)`` from above and also measures how much
        ``F_block⁻¹`` amplifies the other columns (the entries of ``T = -D_dd⁻¹ D_ai``), so a
        1 x 1 block ``[1e-12]`` next to O(1) entries is rejected although its classical
        condition number is 1.
    cond_max : float
        The tolerance the decision used.
    """

    block: str
    equation: str
    coordinates: tuple[str, ...]
    singular_values: NDArray[np.float64]
    cond: float
    cond_max: float

    @property
    def ok(self) -> bool:
        """``cond < cond_max``."""
        return bool(self.cond < self.cond_max)

    def describe(self) -> str:
        sv = ", ".join(f"{s:.3g}" for s in self.singular_values)
        return (f"{self.block} ({self.equation}) for {list(self.coordinates)}: cond = "
                f"{self.cond:.3g} (tolerance COND_MAX = {self.cond_max:.3g}; singular values "
                f"[{sv}])")


@dataclass(frozen=True)
class PartitionReport:
    """Result of [`Partition.check()`][nhcontrol.linearization.Partition.check]: conditioning of every inverted block.

    Attributes
    ----------
    t : float
        Time at which the reference was evaluated.
    blocks : tuple of BlockCondition
        ``D_dd`` (Eq. (2.131)), ``∂C/∂x_d`` (Eq. (4.105)), ``B̄_ad`` (Eq. (4.116)).
    """

    t: float
    blocks: tuple[BlockCondition, ...]

    @property
    def ok(self) -> bool:
        return all(b.ok for b in self.blocks)

    @property
    def conditions(self) -> dict[str, float]:
        """Mapping block name → condition number."""
        return {b.block: b.cond for b in self.blocks}

    def __str__(self) -> str:
        return f"partition conditioning at t = {self.t:g}:\n  " + "\n  ".join(
            b.describe() for b in self.blocks)


def _block_condition(block: str, equation: str, names: Sequence[str],
                     full: NDArray[np.float64], cols: NDArray[np.intp] | Sequence[int],
                     cond_max: float) -> BlockCondition:
    """Relative condition number of the columns ``cols`` of ``full`` (see BlockCondition)."""
    cols = np.asarray(cols, dtype=np.intp)
    if full.shape[0] == 0 or cols.size == 0:
        sv = np.zeros(0)
        cond = 1.0
    else:
        rn = np.linalg.norm(full, axis=1)
        F = full / np.where(rn > 0, rn, 1.0)[:, None]
        sv = np.linalg.svd(F[:, cols], compute_uv=False)
        if np.any(rn == 0) or sv[-1] == 0:
            cond = float("inf")
        else:
            cond = float(np.linalg.norm(F, 2) / sv[-1])
    sv.setflags(write=False)
    return BlockCondition(block, equation, tuple(names), sv, cond, float(cond_max))


@dataclass(frozen=True)
class Partition:
    """Coordinate partition ``x = [x_ai, x_ad, x_d]`` of Eq. (4.96), by coordinate names.

    Parameters
    ----------
    independent : sequence of str
        ``x_ai``, ``n - m - l`` names.
    admissible_dependent : sequence of str
        ``x_ad``, ``l`` names (one per nonholonomic constraint).
    dependent : sequence of str
        ``x_d``, ``m`` names (one per holonomic constraint).

    Notes
    -----
    The names are only checked against a model by `indices()` / `check()`
    (a partition does not store a model). ``report`` is filled by
    [`suggest_partition()`][nhcontrol.linearization.suggest_partition] and does not take part in
    equality.

    Examples
    --------
    >>> p = Partition(["x", "theta"], ["y"], [])
    >>> p.coordinates
    ('x', 'theta', 'y')
    """

    independent: tuple[str, ...]
    admissible_dependent: tuple[str, ...] = ()
    dependent: tuple[str, ...] = ()
    report: PartitionReport | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "independent", _as_names(self.independent, "independent"))
        object.__setattr__(self, "admissible_dependent",
                           _as_names(self.admissible_dependent, "admissible_dependent"))
        object.__setattr__(self, "dependent", _as_names(self.dependent, "dependent"))

    @classmethod
    def from_dict(cls, d: Mapping[str, Iterable[str]]) -> "Partition":
        """Build a partition from a mapping.

        Accepted keys: ``independent`` / ``x_ai``, ``admissible_dependent`` / ``x_ad``,
        ``dependent`` / ``x_d`` (e.g. ``benchmark_bicycle.PARTITION_4_172``).

        Raises
        ------
        PartitionError
            Unknown keys, or a key given twice under two aliases.
        """
        if isinstance(d, Partition):
            return d
        if not isinstance(d, Mapping):
            raise PartitionTypeError(f"Partition.from_dict expects a mapping with keys 'independent', "
                                 f"'admissible_dependent', 'dependent'; got {type(d).__name__}")
        out: dict[str, Any] = {}
        unknown = [k for k in d if k not in _KEY_ALIASES]
        if unknown:
            raise PartitionError(f"unknown partition keys {unknown}; expected 'independent' "
                                 f"(x_ai), 'admissible_dependent' (x_ad), 'dependent' (x_d)")
        for k, v in d.items():
            key = _KEY_ALIASES[k]
            if key in out:
                raise PartitionError(f"partition key {key!r} given twice (as an alias {k!r})")
            out[key] = v
        if "independent" not in out:
            raise PartitionError("partition mapping needs the 'independent' (x_ai) coordinates")
        return cls(**out)

    def to_dict(self) -> dict[str, list[str]]:
        return dict(independent=list(self.independent),
                    admissible_dependent=list(self.admissible_dependent),
                    dependent=list(self.dependent))

    @property
    def coordinates(self) -> tuple[str, ...]:
        """All names in the thesis order ``[x_ai, x_ad, x_d]``."""
        return self.independent + self.admissible_dependent + self.dependent

    # ------------------------------------------------------------------ structural check
    def indices(self, cm: CompiledModel) -> PartitionIndices:
        """Validate the names against ``cm`` and return the index arrays.

        Raises
        ------
        PartitionError
            Listing *all* problems: unknown, duplicated or missing coordinates and wrong
            counts (``n - m - l`` independent, ``l`` admissible dependent, ``m`` dependent).
        """
        return _indices(self.independent, self.admissible_dependent, self.dependent,
                        tuple(cm.coordinates), int(cm.n), int(cm.m), int(cm.l),
                        str(getattr(cm, "name", "")))

    # ------------------------------------------------------------------ numerical check
    def conditioning(self, cm: CompiledModel, ref: Reference, t: float = 0.0, *,
                     cond_max: float = COND_MAX) -> PartitionReport:
        """Condition numbers of ``D_dd``, ``∂C/∂x_d`` and ``B̄_ad`` at ``ref`` (no raise)."""
        idx = self.indices(cm)
        x0 = np.asarray(ref.x(float(t)), dtype=float)
        p = getattr(ref, "parameters", None)
        u0 = _ref_u(ref, float(t), cm)
        Cx = np.asarray(cm.Cx(x0, u0, p), dtype=float).reshape(idx.m, idx.n)
        B = np.asarray(cm.B(x0, u0, p), dtype=float).reshape(idx.l, idx.n)
        return _report(self, idx, Cx, B, float(t), cond_max)

    def check(self, cm: CompiledModel, ref: Reference, t: float = 0.0, *,
              cond_max: float = COND_MAX) -> PartitionReport:
        """Validate the partition at the reference point ``ref(t)``.

        Parameters
        ----------
        cm : CompiledModel
        ref : Reference
        t : float
            Time of the reference at which the blocks are evaluated.
        cond_max : float
            Blocks with ``cond >= cond_max`` are called singular.

        Returns
        -------
        PartitionReport
            Condition numbers and singular values of ``D_dd`` (Eq. (2.131)),
            ``∂C/∂x_d`` (Eq. (4.105)) and ``B̄_ad`` (Eq. (4.116)).

        Raises
        ------
        PartitionError
            Structural problems (see `indices()`), or an ill-conditioned block: the
            message names the block and its coordinates, the condition number, and
            suggests a valid partition (from
            [`suggest_partition()`][nhcontrol.linearization.suggest_partition]).
        """
        report = self.conditioning(cm, ref, t, cond_max=cond_max)
        if not report.ok:
            raise PartitionError(_singular_message(self, report, cm, ref, float(t), cond_max))
        return report


@lru_cache(maxsize=256)
def _indices(independent: tuple[str, ...], admissible_dependent: tuple[str, ...],
             dependent: tuple[str, ...], coords: tuple[str, ...], n: int, m: int,
             l: int, name: str) -> PartitionIndices:  # noqa: E741
    """Validated index arrays (cached: the hot path calls this for every linearization)."""
    problems: list[str] = []
    allnames = independent + admissible_dependent + dependent
    unknown = [s for s in allnames if s not in coords]
    if unknown:
        problems.append(f"unknown coordinates {unknown} (model {name!r} "
                        f"has {list(coords)})")
    dup = sorted({s for s in allnames if allnames.count(s) > 1})
    if dup:
        problems.append(f"coordinates listed more than once: {dup}")
    missing = [s for s in coords if s not in allnames]
    if missing:
        problems.append(f"coordinates missing from the partition: {missing}")
    for what, names, want, sym in (
            ("independent (x_ai)", independent, n - m - l, "n-m-l"),
            ("admissible_dependent (x_ad)", admissible_dependent, l, "l"),
            ("dependent (x_d)", dependent, m, "m")):
        if len(names) != want:
            problems.append(f"{what} must hold {sym} = {want} names, got {len(names)}: "
                            f"{list(names)} (n = {n} coordinates, m = {m} holonomic, "
                            f"l = {l} nonholonomic constraints)")
    if problems:
        raise PartitionError("invalid partition (Eq. (4.96)):\n  - " + "\n  - ".join(problems))
    pos = {s: i for i, s in enumerate(coords)}
    ai = np.array([pos[s] for s in independent], dtype=np.intp)
    ad = np.array([pos[s] for s in admissible_dependent], dtype=np.intp)
    d = np.array([pos[s] for s in dependent], dtype=np.intp)
    perm = np.concatenate([ai, ad, d]).astype(np.intp)
    for a in (ai, ad, d, perm):
        a.setflags(write=False)
    return PartitionIndices(ai, ad, d, perm, n, m, l)


def _ref_u(ref: Reference, t: float | NDArray[np.float64],
           cm: CompiledModel) -> NDArray[np.float64] | None:
    if int(getattr(cm, "ninputs", 0)) == 0:
        return None
    u = ref.u(t)
    return None if u is None else np.asarray(u, dtype=float)


def _report(part: Partition, idx: PartitionIndices, Cx: NDArray[np.float64],
            B: NDArray[np.float64], t: float, cond_max: float) -> PartitionReport:
    dd = np.concatenate([idx.ad, idx.d])
    D = np.vstack([Cx, B])
    Cxd = Cx[:, idx.d]
    # Th = [I_(n-m); -Cx_d^{-1} Cx_a] (Eq. (4.112)), Bbar = B Th (Eq. (4.116))
    a = np.concatenate([idx.ai, idx.ad])
    if idx.m:
        try:
            Cxd_inv_Cxa = np.linalg.solve(Cxd, Cx[:, a])
        except np.linalg.LinAlgError:
            Cxd_inv_Cxa = np.linalg.lstsq(Cxd, Cx[:, a], rcond=None)[0]
        Bbar = B[:, a] - B[:, idx.d] @ Cxd_inv_Cxa
    else:
        Bbar = B[:, a]
    blocks = (
        _block_condition("D_dd", "Eq. (2.131)", part.admissible_dependent + part.dependent,
                         D, dd, cond_max),
        _block_condition("dC/dx_d", "Eq. (4.105)", part.dependent, Cx, idx.d, cond_max),
        _block_condition("Bbar_ad", "Eq. (4.116)", part.admissible_dependent, Bbar,
                         np.arange(idx.n_ai, idx.n - idx.m), cond_max),
    )
    return PartitionReport(t, blocks)


def _singular_message(part: Partition, report: PartitionReport, cm: CompiledModel, ref: Reference,
                      t: float,
                      cond_max: float) -> str:
    lines = [f"the partition is singular at the reference (t = {t:g}):"]
    for b in report.blocks:
        if not b.ok:
            lines.append(f"  - the block {b.describe()}")
    try:
        sug = suggest_partition(cm, ref, prefer=part.independent, t=t, cond_max=cond_max)
        lines.append(f"choose other coordinates, e.g. independent={list(sug.independent)}, "
                     f"admissible_dependent={list(sug.admissible_dependent)}, "
                     f"dependent={list(sug.dependent)} (suggest_partition: "
                     + ", ".join(f"cond {k} = {v:.3g}" for k, v in sug.report.conditions.items())
                     + ")")
    except PartitionError as exc:
        lines.append(f"no valid partition could be suggested either: {exc}")
    return "\n".join(lines)


def _pivot_columns(mat: NDArray[np.float64], cols: Sequence[int], k: int,
                   prefer_mask: NDArray[np.bool_], what: str,
                   names: Sequence[str]) -> list[int]:
    """Pick ``k`` of ``cols`` by column-pivoted QR, pushing preferred columns last."""
    if k == 0:
        return []
    sub = mat[:, cols].astype(float).copy()
    scale = np.where(prefer_mask[cols], PREFER_WEIGHT, 1.0)
    import scipy.linalg   # here: importing nhcontrol.linearize needs no scipy

    _, _, piv = scipy.linalg.qr(sub * scale, mode="economic", pivoting=True)
    sv = np.linalg.svd(sub, compute_uv=False)
    tol = RANK_RTOL * max(sub.shape) * (sv[0] if sv.size else 0.0)
    rank = int(np.sum(sv > tol))
    if rank < k:
        raise PartitionError(
            f"{what} has rank {rank} < {k} at the reference (singular values "
            f"[{', '.join(f'{s:.3g}' for s in sv)}], tolerance {tol:.3g}): the constraints are "
            f"redundant or singular there, so no partition of {list(names)} can be valid; "
            f"remove the redundant constraints or choose another reference")
    return [cols[i] for i in piv[:k]]


def suggest_partition(cm: CompiledModel, ref: Reference, *, prefer: Sequence[str] = (), t: float = 0.0,
                      cond_max: float = COND_MAX) -> Partition:
    """Propose a valid partition at ``ref(t)`` by column-pivoted QR.

    1. ``x_d`` (``m`` coordinates): the first ``m`` pivots of the QR with column pivoting
       (``scipy.linalg.qr(pivoting=True)``) of ``Cx``.
    2. ``x_ad`` (``l`` coordinates): the first ``l`` pivots of the QR of
       ``B̄ = B T^h`` (Eqs. (4.112), (4.116)) restricted to the remaining columns.
    3. ``x_ai``: the rest, in model order.

    Columns of coordinates in ``prefer`` are down-weighted by `PREFER_WEIGHT` before
    pivoting, so they stay independent whenever the other columns allow it.

    Parameters
    ----------
    cm : CompiledModel
    ref : Reference
    prefer : sequence of str
        Coordinates to keep independent when possible (e.g. ``["x_b", "phi_b", "delta"]``).
    t : float
        Time of the reference point.
    cond_max : float
        Tolerance for the final check.

    Returns
    -------
    Partition
        With ``.report`` holding the condition numbers achieved.

    Raises
    ------
    PartitionError
        Unknown names in ``prefer``, rank-deficient ``Cx`` or ``B̄`` (with singular values and
        tolerance), or a suggestion that is still ill conditioned.
    ArgumentTypeError
        ``cm`` is not a compiled model or ``ref`` not a reference (a ``TypeError``).
    """
    require_model(cm, "cm", "suggest_partition")
    require_reference(ref, "ref", "suggest_partition")
    coords = tuple(cm.coordinates)
    n, m, l = int(cm.n), int(cm.m), int(cm.l)
    prefer = _as_names(prefer, "prefer")
    unknown = [s for s in prefer if s not in coords]
    if unknown:
        raise PartitionError(f"prefer lists unknown coordinates {unknown}; the model has "
                             f"{list(coords)}")
    x0 = np.asarray(ref.x(float(t)), dtype=float)
    p = getattr(ref, "parameters", None)
    u0 = _ref_u(ref, float(t), cm)
    Cx = np.asarray(cm.Cx(x0, u0, p), dtype=float).reshape(m, n)
    B = np.asarray(cm.B(x0, u0, p), dtype=float).reshape(l, n)
    mask = np.array([c in prefer for c in coords])
    d = _pivot_columns(Cx, list(range(n)), m, mask, "Cx (Eq. (4.105))", coords)
    rest = [j for j in range(n) if j not in d]
    if m:
        Th_low = -np.linalg.solve(Cx[:, d], Cx[:, rest])
        Bbar = B[:, rest] + B[:, d] @ Th_low
    else:
        Bbar = B[:, rest]
    ad_local = _pivot_columns(Bbar, list(range(len(rest))), l, mask[rest],
                              "Bbar = B T^h (Eq. (4.116))", coords)
    ad = [rest[j] for j in ad_local]
    ai = [j for j in rest if j not in ad]
    part = Partition([coords[j] for j in ai], [coords[j] for j in sorted(ad)],
                     [coords[j] for j in sorted(d)])
    idx = part.indices(cm)
    report = _report(part, idx, Cx, B, float(t), cond_max)
    if not report.ok:
        raise PartitionError(f"suggest_partition found no well-conditioned partition:\n{report}")
    return Partition(part.independent, part.admissible_dependent, part.dependent, report=report)
