"""What runs inside a worker: one chunk of grid points, failures captured per point.

Kept free of executor logic so that the serial, process-pool and Dask back-ends run literally
the same function on the same chunks (and so give the same values).
"""

from __future__ import annotations

import pickle
from typing import Any, Callable, Sequence

import numpy as np

from .._util.progress import quiet
from ._grid import SweepError

__all__ = ["Outcome", "run_chunk", "run_chunk_in_worker", "init_worker", "picklable_error"]

Outcome = tuple[int, bool, Any]
"""(grid index, succeeded, value or exception)"""

# Per-process state of a process-pool worker, set once by ``init_worker`` (the function and the
# constants are unpickled once per process, not once per task).
_WORKER: dict[str, Any] = {}


def picklable_error(exc: BaseException) -> BaseException:
    """``exc`` itself if it survives pickling, else a RuntimeError carrying its text."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any pickling failure means: send the text instead
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _rng(seed: Any) -> np.random.Generator | None:
    return None if seed is None else np.random.default_rng(seed)


def _call_points(fn: Callable[..., Any], indices: Sequence[int], points: Sequence[dict[str, Any]],
                 constants: dict[str, Any], seeds: Sequence[Any] | None,
                 stop_on_failure: bool = False, stop: Any = None) -> list[Outcome]:
    """Call ``fn`` point by point. ``stop_on_failure`` (``errors="raise"``): return at the first
    failure (it will be raised; the other points are not needed). ``stop``: an event shared by
    the threads of one sweep, set at a failure; set, it ends the chunk before its next point."""
    out: list[Outcome] = []
    for j, (i, p) in enumerate(zip(indices, points)):
        if stop is not None and stop.is_set():
            break
        kwargs = dict(p)
        if seeds is not None:
            kwargs["rng"] = _rng(seeds[j])
        try:
            out.append((i, True, fn(**kwargs, **constants)))
        except Exception as exc:  # noqa: BLE001 - captured per point, re-raised by the caller
            out.append((i, False, picklable_error(exc)))
            if stop_on_failure:
                if stop is not None:
                    stop.set()
                break
    return out


def _call_vectorized(fn: Callable[..., Any], indices: Sequence[int],
                     points: Sequence[dict[str, Any]], constants: dict[str, Any],
                     seeds: Sequence[Any] | None) -> list[Outcome]:
    names = tuple(points[0])
    kwargs: dict[str, Any] = {k: np.asarray([p[k] for p in points]) for k in names}
    if seeds is not None:
        kwargs["rng"] = [_rng(s) for s in seeds]
    values = fn(**kwargs, **constants)
    try:
        n = len(values)
    except TypeError:
        n = -1
    if n != len(points):
        raise SweepError(f"a vectorized sweep function must return one result per point: called "
                         f"with {len(points)} points, it returned "
                         f"{'an object without len()' if n < 0 else f'{n} results'}")
    return [(i, True, v) for i, v in zip(indices, values)]


def run_chunk(fn: Callable[..., Any], indices: Sequence[int], points: Sequence[dict[str, Any]],
              constants: dict[str, Any], seeds: Sequence[Any] | None,
              vectorized: bool, stop_on_failure: bool = False, stop: Any = None) -> list[Outcome]:
    """Evaluate one chunk; a failing vectorized call is retried point by point to find the culprit.

    ``stop_on_failure`` ends the chunk at its first failure (``errors="raise"``); ``stop`` is an
    event shared by the threads of one sweep (see `_call_points`). The chunk runs inside
    `nhcontrol._util.progress.quiet`: a task draws no progress bar (worker processes share the
    terminal; the sweep draws the one outer bar)."""
    with quiet():
        return _run_chunk(fn, indices, points, constants, seeds, vectorized, stop_on_failure, stop)


def _run_chunk(fn: Callable[..., Any], indices: Sequence[int], points: Sequence[dict[str, Any]],
               constants: dict[str, Any], seeds: Sequence[Any] | None,
               vectorized: bool, stop_on_failure: bool, stop: Any) -> list[Outcome]:
    if not vectorized:
        return _call_points(fn, indices, points, constants, seeds, stop_on_failure, stop)
    try:
        return _call_vectorized(fn, indices, points, constants, seeds)
    except SweepError:
        raise  # a broken contract, not a failing point
    except Exception:  # noqa: BLE001 - localise the failure: one point at a time
        out: list[Outcome] = []
        for j, (i, p) in enumerate(zip(indices, points)):
            one_seed = None if seeds is None else [seeds[j]]
            try:
                out.extend(_call_vectorized(fn, [i], [p], constants, one_seed))
            except SweepError:
                raise
            except Exception as exc:  # noqa: BLE001
                out.append((i, False, picklable_error(exc)))
                if stop_on_failure:
                    break
        return out


def init_worker(fn: Callable[..., Any], constants: dict[str, Any]) -> None:
    """Process-pool initializer: keep the function and the constants for every task of this process."""
    _WORKER["fn"] = fn
    _WORKER["constants"] = constants
    try:  # small dense work: one BLAS thread per worker process (the pool is the parallelism)
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return
    _WORKER["limits"] = threadpool_limits(1)


def run_chunk_in_worker(indices: Sequence[int], points: Sequence[dict[str, Any]],
                        seeds: Sequence[Any] | None, vectorized: bool,
                        stop_on_failure: bool = False) -> list[Outcome]:
    """Process-pool task: the function and constants come from `init_worker()`."""
    return run_chunk(_WORKER["fn"], indices, points, _WORKER["constants"], seeds, vectorized,
                     stop_on_failure)


def run_chunk_with_payload(payload: dict[str, Any], indices: Sequence[int],
                           points: Sequence[dict[str, Any]], seeds: Sequence[Any] | None,
                           vectorized: bool, stop_on_failure: bool = False) -> list[Outcome]:
    """Dask task: ``payload`` (function + constants) was scattered once to every worker."""
    return run_chunk(payload["fn"], indices, points, payload["constants"], seeds, vectorized,
                     stop_on_failure)
