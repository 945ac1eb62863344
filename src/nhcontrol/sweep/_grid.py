"""Grids of keyword arguments: Cartesian products or explicit point lists."""

from __future__ import annotations

import itertools
import math
from typing import Any, Iterable, Mapping, Sequence

from .._util.errors import NhcontrolError

__all__ = ["SweepError", "grid_points", "grid_axes"]


class SweepError(NhcontrolError, ValueError):
    """A sweep was set up wrongly (unknown back-end, empty or malformed grid, bad options)."""


def _axis_values(name: str, values: Any) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        return [values]
    if hasattr(values, "__len__"):   # counted before it is listed (a range(10**12) axis)
        _check_size(len(values), f"grid axis {name!r}")
    vals = list(values)
    if not vals:
        raise SweepError(f"grid axis {name!r} has no values; give at least one value")
    return vals


def _check_size(count: int, what: str) -> None:
    from .._util.work import check_iterations
    check_iterations(count, f"{what}: {count:.6g} grid points", error=SweepError,
                     hint="sweep a coarser grid, or split it into several sweeps")


def grid_axes(grid: Mapping[str, Iterable[Any]] | Sequence[Mapping[str, Any]]
              ) -> dict[str, list[Any]] | None:
    """Axes of a Cartesian grid (``None`` for an explicit list of points).

    A scalar value is an axis of length one.
    """
    if not isinstance(grid, Mapping):
        return None
    return {str(k): _axis_values(str(k), v) for k, v in grid.items()}


def grid_points(grid: Mapping[str, Iterable[Any]] | Sequence[Mapping[str, Any]]
                ) -> tuple[tuple[str, ...], tuple[dict[str, Any], ...]]:
    """Expand a grid into a list of keyword dictionaries.

    Parameters
    ----------
    grid : mapping name -> sequence, or sequence of mappings
        A mapping gives the Cartesian product (last name varies fastest; a scalar is an axis of
        length one); a sequence of mappings is taken as the explicit list of points.

    Returns
    -------
    names : tuple of str
    points : tuple of dict

    Raises
    ------
    SweepError
        Empty grid, an empty axis, or points with different keys.

    Examples
    --------
    >>> grid_points({"v": [1.0, 2.0], "g": 9.81})
    (('v', 'g'), ({'v': 1.0, 'g': 9.81}, {'v': 2.0, 'g': 9.81}))
    """
    if isinstance(grid, Mapping):
        if not grid:
            raise SweepError("the grid is empty; give e.g. {'v': numpy.linspace(0, 10, 101)}")
        axes = grid_axes(grid)
        assert axes is not None
        names = tuple(axes)
        _check_size(math.prod(len(v) for v in axes.values()),
                    "the Cartesian grid " + " x ".join(f"{k} ({len(v)})" for k, v in axes.items()))
        points = tuple(dict(zip(names, combo)) for combo in itertools.product(*axes.values()))
        return names, points
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Iterable):
        raise SweepError(f"a grid is a mapping name -> values or a list of mappings, got "
                         f"{type(grid).__name__}")
    pts = []
    for i, p in enumerate(grid):
        if not isinstance(p, Mapping):
            raise SweepError(f"grid point {i} is a {type(p).__name__}, expected a mapping of "
                             f"keyword arguments such as {{'v': 1.0}}")
        pts.append({str(k): v for k, v in p.items()})
    if not pts:
        raise SweepError("the grid is empty; give at least one point")
    names = tuple(pts[0])
    bad = [i for i, p in enumerate(pts) if tuple(p) != names]
    if bad:
        raise SweepError(f"every grid point must have the keys {list(names)}; points {bad[:5]} differ")
    return names, tuple(pts)
