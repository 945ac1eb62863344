"""Run any function over a parameter grid: serially, in threads, in a process pool, or on a Dask
cluster (the current ``Client``, a scheduler address, or a ``LocalCluster``).

Examples
--------
>>> from nhcontrol.sweep import sweep
>>> res = sweep(lambda v, g: v * g, {"v": [1.0, 2.0], "g": [9.81]})
>>> res.values
(9.81, 19.62)
>>> res.points[1]
{'v': 2.0, 'g': 9.81}

Every back-end runs the same chunks through the same worker function, so values agree exactly
and always come back in grid order. The process back-end pickles the function (define it at
module level); Dask uses cloudpickle and also ships lambdas and closures.
"""

from __future__ import annotations

import math
import os
import pickle
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

import numpy as np

from ._dask import dask_client
from ._grid import SweepError, grid_axes, grid_points
from ._tasks import Outcome, init_worker, run_chunk, run_chunk_in_worker, run_chunk_with_payload
from .result import SweepResult, load_sweep

__all__ = [
    "sweep", "SweepResult", "SweepError", "SweepWarning", "grid_points", "load_sweep", "BACKENDS"
]

BACKENDS = ("serial", "threads", "processes", "dask")
"""Back-end names accepted by [`sweep()`][nhcontrol.sweep.sweep]."""

MAX_DEFAULT_CHUNK = 1024
"""Largest number of points in one chunk when no ``chunk_size`` is given."""


class SweepWarning(UserWarning):
    """A sweep ran differently from what was asked (e.g. Dask missing: processes used)."""


def _check_options(backend: str, max_workers: Any, chunk_size: Any, errors: str) -> None:
    if backend not in BACKENDS:
        raise SweepError(f"unknown sweep backend {backend!r}; choose one of {list(BACKENDS)}")
    if max_workers is not None and (not isinstance(max_workers, (int, np.integer))
                                    or int(max_workers) < 1):
        raise SweepError(f"max_workers must be a positive integer, got {max_workers!r}")
    if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer))
                                   or int(chunk_size) < 1):
        raise SweepError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if errors not in ("raise", "capture"):
        raise SweepError(f"errors must be 'raise' or 'capture', got {errors!r}")


def _chunks(n: int, size: int) -> list[range]:
    return [range(a, min(a + size, n)) for a in range(0, n, size)]


def _default_chunk(n: int, workers: int, parallel: bool, vectorized: bool) -> int:
    if not parallel:
        return min(n, MAX_DEFAULT_CHUNK) if vectorized else 1
    # about four chunks per worker: load balance without per-task overhead dominating
    return max(1, min(MAX_DEFAULT_CHUNK, math.ceil(n / (4 * workers))))


def _seeds(seed: Any, n: int) -> list[np.random.SeedSequence] | None:
    if seed is None:
        return None
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return ss.spawn(n)


def _check_picklable(fn: Callable[..., Any], constants: Mapping[str, Any]) -> None:
    """The process pool pickles with the standard pickle: say what cannot travel, by name."""
    try:
        pickle.dumps(fn)
    except Exception as exc:  # noqa: BLE001 - any pickling error
        raise SweepError(f"backend='processes' must pickle the sweep function "
                         f"{getattr(fn, '__qualname__', fn)!r} and cannot ({exc}); define it at "
                         f"module level, or use backend='dask' (cloudpickle ships lambdas and "
                         f"closures)") from exc
    for k, v in constants.items():
        try:
            pickle.dumps(v)
        except Exception as exc:  # noqa: BLE001
            raise SweepError(f"constant {k!r} ({type(v).__name__}) cannot be pickled for the "
                             f"worker processes ({exc}); pass something picklable or build it "
                             f"inside the function") from exc


class _Collector:
    """Gathers chunk outcomes in grid order, ticks the progress bar, decides when to stop."""

    def __init__(self, n: int, points: Sequence[dict[str, Any]], errors: str, progress: bool | None,
                 desc: str) -> None:
        self.values: list[Any] = [None] * n
        self.errors: list[str | None] = [None] * n
        self.points = points
        self.mode = errors
        self.first_failure: tuple[int, BaseException] | None = None
        self.bar = None
        if progress:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=n, desc=desc)
        elif progress is None:      # automatic: a bar once the sweep has lasted 2 s (terminals only)
            from .._util.progress import progress_bar

            self.bar = progress_bar(n, desc)

    def add(self, outcomes: list[Outcome]) -> bool:
        """Record a chunk; True when the sweep must stop (first failure with errors='raise')."""
        for i, ok, v in outcomes:
            if ok:
                self.values[i] = v
            else:
                self.errors[i] = f"{type(v).__name__}: {v}"
                if self.first_failure is None or i < self.first_failure[0]:
                    self.first_failure = (i, v)
        if self.bar is not None:
            self.bar.update(len(outcomes))
        return self.mode == "raise" and self.first_failure is not None

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def raise_first(self) -> None:
        if self.mode != "raise" or self.first_failure is None:
            return
        i, exc = self.first_failure
        _add_note(exc, f"raised by the sweep at point {i}: {self.points[i]} "
                       f"(errors='capture' records failures and goes on)")
        raise exc


def _add_note(exc: BaseException, note: str) -> None:
    """``exc.add_note(note)`` (PEP 678). Python 3.10 has no ``add_note``: the note is appended to
    ``exc.__notes__`` as 3.11 would, and, because 3.10's traceback does not print notes, also
    logged."""
    if hasattr(exc, "add_note"):
        exc.add_note(note)
        return
    from .._util.log import get_logger

    get_logger(__name__).error("%s: %s", type(exc).__name__, note)
    try:
        notes = getattr(exc, "__notes__", None)
        exc.__notes__ = [*(notes if isinstance(notes, list) else []), note]
    except (AttributeError, TypeError):   # (an exception type that refuses new attributes)
        pass


def _run_local(pool_cls: type, workers: int, fn: Callable[..., Any], constants: dict[str, Any],
               chunks: list[range], points: Sequence[dict[str, Any]], seeds: Any,
               vectorized: bool, col: _Collector) -> None:
    """Run the chunks on a pool, at most ``2 workers`` in flight (submitted as others finish), so
    that with ``errors="raise"`` nothing new starts after the first failure; the threads of a
    pool also share a stop event that ends their running chunks before their next point."""
    import threading

    first = col.mode == "raise"
    stop = threading.Event() if pool_cls is ThreadPoolExecutor else None
    if pool_cls is ProcessPoolExecutor:
        pool = ProcessPoolExecutor(max_workers=workers, initializer=init_worker,
                                   initargs=(fn, constants))

        def submit(c: range) -> Any:
            return pool.submit(run_chunk_in_worker, list(c), [points[i] for i in c],
                               None if seeds is None else [seeds[i] for i in c], vectorized, first)
    else:
        pool = ThreadPoolExecutor(max_workers=workers)

        def submit(c: range) -> Any:
            return pool.submit(run_chunk, fn, list(c), [points[i] for i in c], constants,
                               None if seeds is None else [seeds[i] for i in c], vectorized, first,
                               stop if first else None)
    todo = iter(chunks)
    try:
        pending = set()
        for c in todo:
            pending.add(submit(c))
            if len(pending) >= 2 * workers:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            stop_now = False
            for fut in done:
                stop_now = col.add(fut.result()) or stop_now
            if stop_now:
                if stop is not None:
                    stop.set()
                for fut in pending:
                    fut.cancel()
                return
            for c in todo:
                pending.add(submit(c))
                if len(pending) >= 2 * workers:
                    break
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_dask(client: Any, fn: Callable[..., Any], constants: dict[str, Any], chunks: list[range],
              points: Sequence[dict[str, Any]], seeds: Any, vectorized: bool,
              col: _Collector) -> None:
    from distributed import as_completed

    # the function and the constants travel once to every worker and stay in its memory
    [payload] = client.scatter([{"fn": fn, "constants": constants}], broadcast=True, hash=False)
    first = col.mode == "raise"
    futures = [client.submit(run_chunk_with_payload, payload, list(c), [points[i] for i in c],
                             None if seeds is None else [seeds[i] for i in c], vectorized, first,
                             pure=False) for c in chunks]
    chunk_of = {f.key: c for f, c in zip(futures, chunks)}
    try:
        with client.as_current():
            for fut in as_completed(futures):
                try:
                    outcome = fut.result()
                except Exception as exc:  # noqa: BLE001 - fn's own errors come back as outcomes:
                    # this is the cluster (a worker that died, a task that was lost or cancelled)
                    c = chunk_of[fut.key]
                    lost = SweepError(_lost_message(c, points, exc))
                    if first:
                        raise lost from exc
                    outcome = [(i, False, lost) for i in c]
                if col.add(outcome):
                    return
    finally:
        client.cancel(futures + [payload])


def _lost_message(c: range, points: Sequence[dict[str, Any]], exc: BaseException) -> str:
    """Which grid points a lost Dask task carried, on which worker, and what to do."""
    worker = getattr(getattr(exc, "last_worker", None), "address", None)
    shown = ", ".join(str(points[i]) for i in list(c)[:3]) + (", ..." if len(c) > 3 else "")
    where = f"on worker {worker}" if worker else "on a worker that is gone (its address is unknown)"
    return (f"the Dask task for grid points {list(c)[:10]}{' ...' if len(c) > 10 else ''} ({shown}) was "
            f"lost {where}: {type(exc).__name__}: {exc}. A worker died (out of memory, killed, a crash "
            f"in compiled code) or left the cluster; check the worker logs, give the workers more "
            f"memory, or run these points with errors='capture' to record them as failed and go on")


def sweep(fn: Callable[..., Any], grid: Mapping[str, Iterable[Any]] | Sequence[Mapping[str, Any]],
          *, backend: Literal["serial", "threads", "processes", "dask"] = "serial",
          max_workers: int | None = None, progress: bool | None = None,
          chunk_size: int | None = None, vectorized: bool = False,
          constants: Mapping[str, Any] | None = None,
          errors: Literal["raise", "capture"] = "raise", seed: Any = None,
          client: Any = None, address: str | None = None, connect_timeout: float = 30.0,
          dask_scheduler: Any = None) -> SweepResult:
    """Call ``fn(**point, **constants)`` for every point of a parameter grid.

    Parameters
    ----------
    fn : callable
        Called with the grid parameters (and ``constants``, and ``rng`` when ``seed`` is given)
        as keyword arguments.
    grid : mapping name -> sequence, or sequence of mappings
        See [`grid_points()`][nhcontrol.sweep.grid_points].
    backend : {"serial", "threads", "processes", "dask"}
        ``"processes"``: a `ProcessPoolExecutor` (``fn`` and
        ``constants`` must pickle). ``"dask"``: a ``dask.distributed`` cluster — ``client`` if
        given, else a new connection to ``address``, else the current default ``Client``, else a
        ``LocalCluster`` of ``max_workers`` single-threaded worker processes, started and closed
        here. The same call runs on a multi-machine cluster by giving its ``address``.
    max_workers : int, optional
        Pool or ``LocalCluster`` size (default: ``os.cpu_count()``).
    progress : bool or None
        A tqdm progress bar (stderr) that advances as chunks complete: ``True`` always,
        ``False`` never, ``None`` (default) when the sweep lasts more than 2 s and standard
        error is a terminal (``NHCONTROL_PROGRESS`` overrides, see ``nhcontrol --help``).
    chunk_size : int, optional
        Grid points per task. Default: one point per call serially, about four chunks per
        worker in parallel (at most `MAX_DEFAULT_CHUNK`).
    vectorized : bool
        ``fn`` takes a whole chunk at once: every grid parameter arrives as a 1-D array (and
        ``rng`` as a list of generators) and it returns one result per point — e.g. one stacked
        kernel call for a chunk of linearizations. A failing chunk is retried point by point to
        find the failing points.
    constants : mapping, optional
        Keyword arguments passed unchanged to every call: a compiled model, a reference, a
        controller. They are shipped once to every worker process (pool initializer, or
        ``Client.scatter(..., broadcast=True)``), not once per task.
    errors : {"raise", "capture"}
        ``"raise"`` (default): the first failure stops the sweep and is re-raised unchanged (with
        a note naming the point). ``"capture"``: a failure becomes ``None`` in ``values`` and its
        message in ``errors``; the sweep goes on.
    seed : int or numpy.random.SeedSequence, optional
        Gives ``fn`` a keyword ``rng``: a generator seeded by child ``i`` of
        ``SeedSequence(seed)`` for point ``i`` — the same numbers whatever the back-end, the
        number of workers or the chunking.
    client : dask.distributed.Client, optional
        Cluster for ``backend="dask"``.
    address : str, optional
        Scheduler address (``"tcp://host:8786"``) for ``backend="dask"``.
    connect_timeout : float
        Seconds to wait for the scheduler at ``address`` before giving up with an error.
    dask_scheduler : distributed.Client, optional
        Deprecated spelling of ``client`` (kept for old calls).

    Returns
    -------
    SweepResult
        Values in grid order; ``to_dataframe()``, ``to_xarray()``, ``save()``.

    Raises
    ------
    SweepError
        Unknown back-end, malformed grid or options, a function or constant the process pool
        cannot pickle, an unreachable scheduler. With ``errors="raise"``, exceptions raised by
        ``fn`` propagate unchanged.

    Warns
    -----
    SweepWarning
        ``backend="dask"`` without Dask installed: the process pool is used instead.
    """
    _check_options(backend, max_workers, chunk_size, errors)
    if dask_scheduler is not None:
        if isinstance(dask_scheduler, str):
            raise SweepError("dask_scheduler=<name> is no longer supported; backend='dask' runs on "
                             "dask.distributed: pass client=..., address='tcp://...', or nothing "
                             "(a LocalCluster is started)")
        client = client if client is not None else dask_scheduler
    if constants is not None and not isinstance(constants, Mapping):
        raise SweepError(f"constants must be a mapping of keyword arguments, got "
                         f"{type(constants).__name__}")
    consts = dict(constants or {})
    names, points = grid_points(grid)
    clash = sorted(set(consts) & set(names))
    if clash or (seed is not None and ("rng" in names or "rng" in consts)):
        raise SweepError(f"keyword arguments {clash or ['rng']} are given twice (grid, constants "
                         f"and the seeded 'rng' must not share names)")
    n = len(points)
    workers = int(max_workers) if max_workers else (os.cpu_count() or 1)
    used = backend
    if backend == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            from .._util.log import get_logger

            get_logger(__name__).warning("dask.distributed missing: backend 'processes' instead of 'dask'")
            warnings.warn("backend='dask' needs dask.distributed, which is not installed; using "
                          "backend='processes' (pip install 'nhcontrol[dask]')", SweepWarning,
                          stacklevel=2)
            used = "processes"
    parallel = used != "serial" and n > 1
    size = int(chunk_size) if chunk_size else _default_chunk(n, workers, parallel, vectorized)
    chunks = _chunks(n, size)
    seeds = _seeds(seed, n)
    col = _Collector(n, points, errors, progress, getattr(fn, "__name__", "sweep"))
    from .._util.log import get_logger

    log = get_logger(__name__)
    log.info("sweep %s over %d points: backend %s, %d chunks", getattr(fn, "__name__", "fn"), n,
             used if parallel else "serial", len(chunks))
    cluster = ""
    try:
        if not parallel:
            used = "serial"
            for c in chunks:
                if col.add(run_chunk(fn, list(c), [points[i] for i in c], consts,
                                     None if seeds is None else [seeds[i] for i in c],
                                     vectorized, errors == "raise")):
                    break
        elif used == "dask":
            with dask_client(client, address, n_workers=min(workers, len(chunks)),
                             timeout=connect_timeout) as (cl, how):
                cluster = how
                _run_dask(cl, fn, consts, chunks, points, seeds, vectorized, col)
        else:
            if used == "processes":
                _check_picklable(fn, consts)
            pool_cls = ProcessPoolExecutor if used == "processes" else ThreadPoolExecutor
            _run_local(pool_cls, min(workers, len(chunks)), fn, consts, chunks, points, seeds,
                       vectorized, col)
    finally:
        col.close()
    col.raise_first()
    return SweepResult(points, tuple(col.values), used, names, tuple(col.errors),
                       grid_axes(grid), cluster)
