"""Conditioning evidence of a partition ([`BlockCondition`][nhcontrol.linearization.BlockCondition],
[`PartitionReport`][nhcontrol.linearization.PartitionReport]): what
[`Partition.check()`][nhcontrol.linearization.Partition.check] and
[`suggest_partition()`][nhcontrol.linearization.suggest_partition] return.  Kept apart from
`nhcontrol.linearization.partition` (which exports both names) so that the prepared linearizer,
which never checks conditioning, does not pay for creating these dataclasses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
from .._util.reprs import concise_repr

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray

__all__ = ["BlockCondition", "PartitionReport"]


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

    __repr__ = concise_repr

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

    __repr__ = concise_repr

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
