"""BLAS threads for the small dense work of the hot paths.

The matrices nhcontrol factorizes and multiplies in its hot paths are small (``n`` up to about
100: Steps 1-7 of the third procedure, Riccati recursions, discretizations).  A multi-threaded
BLAS (OpenBLAS, MKL, BLIS) splits such operations across threads whose hand-off and spin-waiting
cost more than the arithmetic: on 2 cores the same work takes several times the CPU time and no
less wall time (``benchmarks/blas_threads.py`` measures it).

Policy (derived here from that measurement): the hot paths (``linearize``, ``finite_horizon_lqr``)
of a problem with state dimension ``n >= MIN_DIM`` run inside `blas_threads()`, which limits every
loaded BLAS to ``NHCONTROL_BLAS_THREADS`` threads (default 1) for the duration of the call and
restores the previous setting afterwards, so the rest of the program keeps its own BLAS
threading; smaller problems are not touched (the BLAS does not split them).  ``NHCONTROL_BLAS_THREADS=off`` leaves BLAS alone.  The BLAS libraries are found once
(threadpoolctl) at the first limited call; entering and leaving costs a few microseconds (two
calls into the BLAS library per library).  Nested and concurrent limited calls share one
setting: the first to enter limits, the last to leave restores.
"""

from __future__ import annotations

import functools
import os
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

from .errors import ConfigurationError

ENV_BLAS_THREADS = "NHCONTROL_BLAS_THREADS"
"""Environment variable: BLAS threads inside the hot paths (default 1; ``off`` leaves BLAS alone)."""

_LOCK = threading.Lock()
_LIBS: list[Any] | None = None
_DEPTH = 0
_SAVED: list[int] = []

F = TypeVar("F", bound=Callable[..., Any])


def configured_limit() -> int | None:
    """The thread limit from ``$NHCONTROL_BLAS_THREADS``: an integer >= 1, or None for ``off``.

    Raises
    ------
    ConfigurationError
        For any other value.
    """
    raw = os.environ.get(ENV_BLAS_THREADS, "").strip().lower()
    if raw in ("", "1"):
        return 1
    if raw in ("off", "none", "0"):
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigurationError(f"{ENV_BLAS_THREADS}={raw!r} is not valid; use a thread count >= 1 (default 1) "
                              f"or 'off' to leave the BLAS threads alone")
    return value


def _libraries() -> list[Any]:
    """The threadpoolctl controllers of the loaded BLAS libraries (found once)."""
    global _LIBS
    if _LIBS is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a declared dependency
            _LIBS = []
        else:
            _LIBS = list(ThreadpoolController().select(user_api="blas").lib_controllers)
    return _LIBS


@contextmanager
def blas_threads(limit: int | None | str = "env") -> Iterator[None]:
    """Limit the BLAS libraries to ``limit`` threads inside the block (default: the configured
    limit, `configured_limit()`; None: no limit)."""
    global _DEPTH, _SAVED
    n = configured_limit() if limit == "env" else limit
    if n is None:
        yield
        return
    libs = _libraries()
    with _LOCK:
        if _DEPTH == 0:
            _SAVED = [lib.get_num_threads() for lib in libs]
            for lib, was in zip(libs, _SAVED):
                if was is not None and was > n:
                    lib.set_num_threads(n)
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0:
                for lib, was in zip(libs, _SAVED):
                    if was is not None and was > n:
                        lib.set_num_threads(was)


MIN_DIM = 64
"""Smallest state dimension at which the hot paths limit the BLAS threads.  Below it the BLAS
libraries measured (OpenBLAS 0.3) run these sizes on one thread anyway, so limiting would only
add the cost of switching (a few microseconds); from n = 80 the limit saves 5-7x CPU time."""


def limit_blas_threads(dim: Callable[..., int]) -> Callable[[F], F]:
    """Decorator: run the function inside `blas_threads()` when ``dim(*args, **kwargs)`` (its
    state dimension) is at least `MIN_DIM`; smaller problems run untouched."""

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                big = dim(*args, **kwargs) >= MIN_DIM
            except Exception:  # the function reports bad arguments itself
                big = False
            if not big:
                return fn(*args, **kwargs)
            with blas_threads():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return deco


__all__ = ["blas_threads", "limit_blas_threads", "configured_limit", "ENV_BLAS_THREADS", "MIN_DIM"]
