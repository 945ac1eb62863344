"""Temporary folders of killed runs are removed by the next run.

A run that is killed (``kill -9``, a closed terminal, a crashed machine) cannot clean up after
itself: ``nhcontrol reproduce --out DIR`` leaves its hidden staging folder next to ``DIR`` and an
interrupted C build leaves ``nhc_build_*`` in the kernel cache. Every such folder gets an owner
file (`claim()`: pid, start time, host) as soon as it is created; `remove_stale()` removes the
folders matching a pattern that are *not in use* (no owner, or an owner that is not running on
this host) and *older than the running process* (so a folder another run just created is never
touched).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

OWNER_FILE = ".nhcontrol-owner"


def _hostname() -> str:
    """This machine's name (``uname``'s node name, as the kernel cache's lock records it;
    ``socket.gethostname()`` where there is no ``uname``)."""
    if hasattr(os, "uname"):
        name = os.uname().nodename
    else:   # pragma: no cover - Windows
        import socket

        name = socket.gethostname()
    return name or "localhost"


_HOST = _hostname()


def process_start_time() -> float:
    """When this process started (``/proc/<pid>`` on Linux; else when nhcontrol was imported)."""
    try:
        return os.stat(f"/proc/{os.getpid()}").st_ctime
    except OSError:
        return _IMPORTED


_IMPORTED = time.time()


def claim(folder: str | os.PathLike) -> None:
    """Mark ``folder`` as in use by this process (best effort)."""
    try:
        from pathlib import Path   # here: loading cached kernels imports no pathlib

        (Path(folder) / OWNER_FILE).write_text(f"{os.getpid()} {time.time():.3f} {_HOST}\n")
    except OSError:
        pass


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (another user's process counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def in_use(folder: Path) -> bool:
    """True when the owner file of ``folder`` names a process that runs (or runs elsewhere)."""
    try:
        parts = (folder / OWNER_FILE).read_text().split()
        pid, host = int(parts[0]), parts[2] if len(parts) > 2 else _HOST
    except (OSError, ValueError, IndexError):
        return False
    if host != _HOST:
        return True     # cannot be checked from here: leave it
    return pid != os.getpid() and pid_alive(pid)


def remove_stale(parent: str | os.PathLike, pattern: str) -> list[Path]:
    """Remove the folders ``parent/pattern`` left by runs that are no longer running.

    A folder is removed when it is a real directory (not a symlink), owned by this user, last
    modified before this process started, and not in use (`in_use()`). Returns the removed ones.
    """
    start = process_start_time()
    removed: list[Path] = []
    try:
        from pathlib import Path

        candidates = list(Path(parent).glob(pattern))
    except OSError:
        return removed
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    for d in candidates:
        try:
            st = os.lstat(d)
        except OSError:
            continue
        if not d.is_dir() or d.is_symlink() or (euid is not None and st.st_uid != euid):
            continue
        if st.st_mtime >= start or in_use(d):
            continue
        import shutil   # here: a process that loads cached kernels does not need it

        shutil.rmtree(d, ignore_errors=True)
        if not d.exists():
            removed.append(d)
    return removed


__all__ = ["claim", "remove_stale", "in_use", "process_start_time", "OWNER_FILE"]
