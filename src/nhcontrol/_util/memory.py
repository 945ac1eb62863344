"""Memory estimates before large allocations (a clear error instead of a `MemoryError` or swap).

The limit is half of the memory the operating system reports as available
(``MemAvailable`` of ``/proc/meminfo``; the physical memory elsewhere), or the number of
bytes in the environment variable ``NHCONTROL_MAX_BYTES``.
"""

from __future__ import annotations

import os

ENV_VAR = "NHCONTROL_MAX_BYTES"
FRACTION = 0.5
"""Share of the available memory one allocation may take."""
_SMALL = 64e6


def available_bytes() -> int:
    """Memory available to this process now, in bytes (best effort; 8 GiB when unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def allocation_limit() -> int:
    """Largest allocation allowed, in bytes (``$NHCONTROL_MAX_BYTES`` or half the available memory).

    Raises
    ------
    ConfigurationError
        ``$NHCONTROL_MAX_BYTES`` is set to something other than a finite number >= 1.
    """
    env = os.environ.get(ENV_VAR)
    if env is not None and env.strip():
        try:
            value = float(env)
        except ValueError:
            value = float("nan")
        if not (value >= 1 and value != float("inf")):
            from .errors import ConfigurationError
            raise ConfigurationError(f"{ENV_VAR}={env!r} is not a number of bytes; accepted: a finite "
                                     f"number >= 1 (e.g. {ENV_VAR}=4e9 for 4 GB), or unset it (default: "
                                     f"half the available memory)")
        return int(value)
    return int(FRACTION * available_bytes())


def format_bytes(n: float) -> str:
    """``1.5 GB`` style (decimal units)."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000.0
    return f"{n:.3g} PB"  # pragma: no cover


def check_allocation(nbytes: float, what: str, *, error: type[Exception], hint: str) -> None:
    """Raise ``error`` when ``nbytes`` exceeds [`allocation_limit()`][nhcontrol._util.memory.allocation_limit].

    Parameters
    ----------
    nbytes : float
        Estimated size of the arrays about to be allocated.
    what : str
        What is allocated, with the user's argument that decides the size, e.g.
        ``"discretize(..., steps=1000000000): 1000000000 pairs A_k (2, 2), B_k (2, 1)"``.
    error : exception class
        The stage's error class (a project error subclassing `ValueError`).
    hint : str
        What to do instead.
    """
    if nbytes < _SMALL and ENV_VAR not in os.environ:
        return  # fast path: no system call for the everyday sizes
    limit = allocation_limit()
    if nbytes > limit:
        raise error(f"{what} needs about {format_bytes(nbytes)} of memory, more than the "
                    f"{format_bytes(limit)} allowed (half of the available memory, or ${ENV_VAR}); {hint}")


__all__ = ["check_allocation", "allocation_limit", "available_bytes", "format_bytes", "ENV_VAR"]
