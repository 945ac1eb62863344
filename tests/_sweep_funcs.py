"""Module-level (picklable) functions for the sweep tests, importable by worker processes."""

from __future__ import annotations

import math
import os

import numpy as np

_LOADS = {"n": 0}


class Heavy:
    """Stands in for a compiled model: counts how often a process unpickles it."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __setstate__(self, state):
        self.__dict__.update(state)
        _LOADS["n"] += 1


def f(a, b):
    return a * 10 + b + math.sin(a)


def with_model(a, model):
    return {"pid": os.getpid(), "loads": _LOADS["n"], "y": model.scale * a}


def noisy(a, rng):
    return float(a + rng.standard_normal())


def fails_at_zero(a):
    return {"inv": 1.0 / a, "eig": np.array([a, -a], dtype=float)}


def eig_stacked(v):
    """Vectorized: eigenvalues of [[0, 1], [-v, -0.1]] for a chunk of v at once."""
    A = np.zeros((len(v), 2, 2))
    A[:, 0, 1] = 1.0
    A[:, 1, 0] = -v
    A[:, 1, 1] = -0.1
    return list(np.linalg.eigvals(A))


def eig_one(v):
    return np.linalg.eigvals(np.array([[0.0, 1.0], [-v, -0.1]]))


def settle(gain, x0, t=1.0):
    """A first-order loop x' = -gain x from x0: metrics for nhcontrol.applications.verify tests."""
    if gain <= 0:
        raise ValueError(f"gain must be positive, got {gain}")
    return {"final": abs(x0) * math.exp(-gain * t), "peak": abs(x0)}


def dies_at(a, at):
    """Kills its worker process at ``a == at`` (a worker that dies: out of memory, a segfault)."""
    if a == at:
        os._exit(3)
    return float(a)


_CALLS = {"n": 0}


def fails_at_one(a):
    """Raises at the second grid point; counts its calls (threads share this module)."""
    _CALLS["n"] += 1
    if a == 1:
        raise ValueError("no solution at a = 1")
    import time
    time.sleep(0.0005)
    return float(a)


#: Events whose setting `fails_at_one_gated` waits for (the sweep's stop event is recorded here
#: by a test that wraps ``threading.Event``).
GATES: list = []


def fails_at_one_gated(a):
    """`fails_at_one`, except that every point after the failing one returns only once one of
    `GATES` is set (the sweep's stop event): each worker thread is then inside exactly one call
    when the failure is recorded, whatever the scheduling."""
    _CALLS["n"] += 1
    if a == 1:
        raise ValueError("no solution at a = 1")
    if a > 1:
        import time
        t_end = time.monotonic() + 60.0       # a broken stop event costs a minute, never a hang
        while not any(g.is_set() for g in GATES) and time.monotonic() < t_end:
            time.sleep(0.001)
    return float(a)


def with_inner_bar(a):
    """A task that would draw its own progress bar (a closed-loop simulation does)."""
    from nhcontrol._util.progress import progress, spinner

    total = 0
    for i in progress(range(3), "inner task bar", delay=0.0):
        total += i
    with spinner("inner spinner", delay=0.0, interval=0.01):
        pass
    return a + total
