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

from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from .._util.errors import PartitionError, PartitionTypeError
from .._util.validation import COND_MAX, RANK_RTOL, require_model, require_reference

if TYPE_CHECKING:
    from ._conditioning import BlockCondition, PartitionReport
    from numpy.typing import NDArray
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


class _Frozen:
    """Base of the immutable records of this module (what ``@dataclass(frozen=True)`` gives:
    keyword or positional construction, equality and hash over ``_fields``, a ``repr`` of them,
    no assignment), written out because creating dataclasses costs about a millisecond each
    when the module is imported, which every warm start pays."""

    _fields: tuple[str, ...] = ()

    def _key(self) -> tuple:
        return tuple(getattr(self, f) for f in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._key() == other._key()   # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields) + ")"

    def __setattr__(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")


class PartitionIndices(_Frozen):
    """Index arrays of a partition in the model's coordinate order (precomputed once).

    Attributes
    ----------
    ai, ad, d : (n-m-l,), (l,), (m,) int arrays
        Positions of ``x_ai``, ``x_ad``, ``x_d`` in the model coordinates.
    perm : (n,) int array
        ``[ai, ad, d]``: ``x[perm]`` is ``x`` in the thesis order of Eq. (4.96).
    n, m, l : int
    """

    _fields = ("ai", "ad", "d", "perm", "n", "m", "l")
    __match_args__ = _fields
    ai: NDArray[np.intp]
    ad: NDArray[np.intp]
    d: NDArray[np.intp]
    perm: NDArray[np.intp]
    n: int
    m: int
    l: int  # noqa: E741  (thesis symbol)

    def __init__(self, ai: NDArray[np.intp], ad: NDArray[np.intp], d: NDArray[np.intp],
                 perm: NDArray[np.intp], n: int, m: int, l: int) -> None:  # noqa: E741
        _set = object.__setattr__
        _set(self, "ai", ai)
        _set(self, "ad", ad)
        _set(self, "d", d)
        _set(self, "perm", perm)
        _set(self, "n", n)
        _set(self, "m", m)
        _set(self, "l", l)

    @property
    def n_ai(self) -> int:
        """Number of independent coordinates ``n - m - l``."""
        return self.n - self.m - self.l


class Partition(_Frozen):
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

    _fields = ("independent", "admissible_dependent", "dependent")   # equality, hash and repr
    __match_args__ = ("independent", "admissible_dependent", "dependent", "report")
    independent: tuple[str, ...]
    admissible_dependent: tuple[str, ...]
    dependent: tuple[str, ...]
    report: PartitionReport | None

    def __init__(self, independent: Sequence[str] | str, admissible_dependent: Sequence[str] | str = (),
                 dependent: Sequence[str] | str = (), report: PartitionReport | None = None) -> None:
        _set = object.__setattr__
        _set(self, "independent", _as_names(independent, "independent"))
        _set(self, "admissible_dependent", _as_names(admissible_dependent, "admissible_dependent"))
        _set(self, "dependent", _as_names(dependent, "dependent"))
        _set(self, "report", report)

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
    from ._conditioning import PartitionReport, _block_condition

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


def __getattr__(name: str) -> Any:
    """`BlockCondition` and `PartitionReport` (`nhcontrol.linearization._conditioning`), imported
    when first used (PEP 562)."""
    if name in ("BlockCondition", "PartitionReport"):
        from . import _conditioning

        value = getattr(_conditioning, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
