"""Run any function over a parameter grid: serially, in a process pool, or with Dask.

Examples
--------
>>> from nhcontrol.sweep import sweep
>>> res = sweep(lambda v, g: v * g, {"v": [1.0, 2.0], "g": [9.81]})
>>> res.values
(9.81, 19.62)
>>> res.points[1]
{'v': 2.0, 'g': 9.81}

The process and Dask back-ends need a picklable function (defined at module level) and
picklable results. Results always come back in grid order.
"""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from ._util.errors import NhcontrolError

__all__ = ["SweepError", "SweepResult", "grid_points", "sweep", "BACKENDS"]

#: Back-end names accepted by :func:`sweep`.
BACKENDS = ("serial", "threads", "processes", "dask")


class SweepError(NhcontrolError, ValueError):
    """A sweep was set up wrongly (unknown back-end, empty or malformed grid)."""


@dataclass(frozen=True)
class SweepResult:
    """Results of :func:`sweep`, in grid order.

    Attributes
    ----------
    points : tuple of dict
        The keyword arguments of every call.
    values : tuple
        What the function returned for each point.
    backend : str
        Back-end actually used (``"dask"`` falls back to ``"processes"`` when Dask is missing).
    names : tuple of str
        Parameter names of the grid.
    """

    points: tuple[dict[str, Any], ...]
    values: tuple[Any, ...]
    backend: str
    names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.values)

    def column(self, name: str) -> tuple[Any, ...]:
        """Values of parameter ``name`` over the grid.

        Raises
        ------
        SweepError
            If ``name`` is not a grid parameter.
        """
        if name not in self.names:
            raise SweepError(f"{name!r} is not a parameter of this sweep; parameters are "
                             f"{list(self.names)}")
        return tuple(pt[name] for pt in self.points)


def grid_points(grid: Mapping[str, Iterable[Any]] | Sequence[Mapping[str, Any]]
                ) -> tuple[tuple[str, ...], tuple[dict[str, Any], ...]]:
    """Expand a grid into a list of keyword dictionaries.

    Parameters
    ----------
    grid : mapping name -> sequence, or sequence of mappings
        A mapping gives the Cartesian product (last name varies fastest); a sequence of mappings
        is taken as the explicit list of points.

    Returns
    -------
    names : tuple of str
    points : tuple of dict

    Raises
    ------
    SweepError
        Empty grid, or points with different keys.
    """
    if isinstance(grid, Mapping):
        if not grid:
            raise SweepError("the grid is empty; give e.g. {'v': numpy.linspace(0, 10, 101)}")
        names = tuple(str(k) for k in grid)
        axes = []
        for k in grid:
            vals = list(grid[k]) if not isinstance(grid[k], (str, bytes)) else [grid[k]]
            if not vals:
                raise SweepError(f"grid axis {k!r} has no values")
            axes.append(vals)
        points = tuple(dict(zip(names, combo)) for combo in itertools.product(*axes))
        return names, points
    pts = [dict(p) for p in grid]
    if not pts:
        raise SweepError("the grid is empty; give at least one point")
    names = tuple(pts[0])
    bad = [i for i, p in enumerate(pts) if tuple(p) != names]
    if bad:
        raise SweepError(f"every grid point must have the keys {list(names)}; points {bad[:5]} differ")
    return names, tuple(pts)


def _call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    return fn(**kwargs)


def sweep(fn: Callable[..., Any], grid: Mapping[str, Iterable[Any]] | Sequence[Mapping[str, Any]],
          *, backend: Literal["serial", "threads", "processes", "dask"] = "serial",
          max_workers: int | None = None, progress: bool = False,
          dask_scheduler: str | Any = "processes") -> SweepResult:
    """Call ``fn(**point)`` for every point of a parameter grid.

    Parameters
    ----------
    fn : callable
        Called with the grid parameters as keyword arguments.
    grid : mapping name -> sequence, or sequence of mappings
        See :func:`grid_points`.
    backend : {"serial", "threads", "processes", "dask"}
        ``"processes"`` uses :class:`concurrent.futures.ProcessPoolExecutor` (``fn`` must be
        picklable); ``"dask"`` uses ``dask.delayed`` with ``dask_scheduler`` (a scheduler name
        or a ``distributed.Client``), falling back to ``"processes"`` if Dask is not installed.
    max_workers : int, optional
        Pool size (default: ``os.cpu_count()``).
    progress : bool
        Show a tqdm progress bar (on stderr).
    dask_scheduler : str or distributed.Client
        Passed to ``dask.compute(scheduler=...)``.

    Returns
    -------
    SweepResult
        Values in grid order.

    Raises
    ------
    SweepError
        Unknown back-end or malformed grid. Exceptions raised by ``fn`` propagate unchanged.
    """
    if backend not in BACKENDS:
        raise SweepError(f"unknown sweep backend {backend!r}; choose one of {list(BACKENDS)}")
    if max_workers is not None and int(max_workers) < 1:
        raise SweepError(f"max_workers must be a positive integer, got {max_workers!r}")
    names, points = grid_points(grid)
    workers = int(max_workers) if max_workers else (os.cpu_count() or 1)
    used = backend
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(points), desc=getattr(fn, "__name__", "sweep"))

    def tick(k: int = 1) -> None:
        if bar is not None:
            bar.update(k)

    try:
        if backend == "dask":
            try:
                import dask
            except ImportError:
                used = "processes"
            else:
                tasks = [dask.delayed(_call)(fn, p) for p in points]
                values = list(dask.compute(*tasks, scheduler=dask_scheduler))
                tick(len(points))
                return SweepResult(points, tuple(values), "dask", names)
        if used == "serial" or len(points) == 1:
            values = []
            for p in points:
                values.append(fn(**p))
                tick()
            return SweepResult(points, tuple(values), used, names)
        pool_cls = ThreadPoolExecutor if used == "threads" else ProcessPoolExecutor
        with pool_cls(max_workers=min(workers, len(points))) as pool:
            futures = [pool.submit(_call, fn, p) for p in points]
            values = []
            for fut in futures:
                values.append(fut.result())
                tick()
        return SweepResult(points, tuple(values), used, names)
    finally:
        if bar is not None:
            bar.close()
