"""On-disk cache of generated kernel modules: private, and every artefact hash-checked.

Key: ``sha256(model description + generator version)`` where the description is the
``srepr`` of every expression of the model plus names and parameter defaults
([`description()`][nhcontrol.modeling.MultibodySystem.description]).  One file per model,
``<cache_dir>/nhc_<key>.py``; its compiled code object is kept next to it
(``nhc_<key>.<cache_tag>.marshal``), so the second load neither derives nor parses
anything.

Integrity and trust (threat model: ``docs/dev/kernel_cache.md``):

* the cache directory is created private (mode 0700); a directory that is writable by
  group/others, owned by another user, or below a directory that others can write
  (without the sticky bit) is not used - a warning names it and the kernels are built in
  a private per-process directory instead (`trusted_cache_dir()`);
* every artefact is written atomically (temporary file in the same directory, then
  `os.replace()`) together with a record ``<artefact>.sha256`` holding the sha256 of
  the bytes written (`write_artefact()`, `record_artefact()`);
* before an artefact is executed or loaded, `verify_artefact()` checks that it and its
  record are regular files owned by the user and not writable by group/others, and that
  the sha256 of the bytes read matches the record; it returns exactly those bytes, so what
  is executed is what was checked.  Any failure discards the artefact
  (`discard_artefact()`), the model is rebuilt and one warning is given.
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import stat
import sys
from _thread import allocate_lock as _new_lock   # threading.Lock, without importing threading
import time
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterator

from .._util.debris import pid_alive
from .._util.errors import CacheError, CacheIntegrityError, CacheLockTimeout, ConfigurationError
from .._util.sha import sha256_hex
from ._layout import GENERATOR_VERSION

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path


ENV_VAR = "NHCONTROL_CACHE_DIR"
RECORD_SUFFIX = ".sha256"
"""Suffix of the record file written next to every artefact."""
_RECORD_TAG = "nhcontrol-artefact-sha256"
_MARSHAL_MAGIC = b"nhc-marshal-2 "


def _path(p: Any) -> Path:
    """``pathlib.Path(p)``; pathlib is imported by the functions that return or build paths, not
    by the checks and reads of loading a cached model (which work on ``str``)."""
    from pathlib import Path

    return Path(p)


def _clean(p: str | os.PathLike) -> str:
    """``str(Path(p))`` (no empty or ``.`` parts, no trailing separator) without pathlib for the
    usual POSIX path."""
    s = os.fspath(p)
    if (os.sep == "/" and isinstance(s, str) and s and s != "." and "//" not in s and "/./" not in s
            and not s.endswith(("/", "/.")) and not s.startswith("./")):
        return s
    return str(_path(s))


def _default_dir() -> str:
    env = os.environ.get(ENV_VAR)
    if not env:
        return os.path.join(os.path.expanduser("~"), ".cache", "nhcontrol")
    path = os.path.expanduser(env)
    # a relative folder would follow the working directory (kernels scattered, a cache planted
    # in a shared working folder picked up); a NUL cannot name a file
    if "\0" in path or not os.path.isabs(path):
        why = "contains a NUL character" if "\0" in path else "is not an absolute path"
        hint = (f"e.g. {ENV_VAR}={os.path.abspath(path)!r}" if "\0" not in path
                else f"e.g. {ENV_VAR}=~/.cache/nhcontrol")
        raise ConfigurationError(f"{ENV_VAR}={env!r} {why}; accepted: an absolute folder path "
                                 f"(~ expanded), {hint}, or unset it (default ~/.cache/nhcontrol)")
    return _clean(path)


def _euid() -> int | None:
    return os.geteuid() if hasattr(os, "geteuid") else None


def default_cache_dir() -> Path:
    """``$NHCONTROL_CACHE_DIR`` or ``~/.cache/nhcontrol``."""
    return _path(_default_dir())


def cache_key(description: str) -> str:
    """sha256 hex digest of ``description`` and [`GENERATOR_VERSION`][nhcontrol.compiled.GENERATOR_VERSION]."""
    return sha256_hex((GENERATOR_VERSION + "\n" + description).encode())


# ---------------------------------------------------------------------------------- trust
_WARNED: set[tuple[str, str]] = set()
_WARN_LOCK = _new_lock()


def warn_once(kind: str, subject: str | os.PathLike, message: str, stacklevel: int = 3) -> None:
    """Emit ``message`` as a `RuntimeWarning` once per process for ``(kind, subject)``."""
    token = (kind, str(subject))
    with _WARN_LOCK:
        if token in _WARNED:
            return
        _WARNED.add(token)
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)


def _mode(st: os.stat_result) -> str:
    return oct(stat.S_IMODE(st.st_mode))


def _ownership_problem(st: os.stat_result) -> str | None:
    """Why a directory or file with status ``st`` is not the user's alone, or None: owned by
    someone else, or writable by group/others."""
    euid = _euid()
    if euid is not None and st.st_uid != euid:
        return f"it is owned by uid {st.st_uid}, not by you (uid {euid})"
    if st.st_mode & 0o022:
        return f"it is writable by group/others (mode {_mode(st)})"
    return None


def directory_problem(path: str | os.PathLike) -> str | None:
    """Why the existing directory ``path`` cannot hold trusted kernels, or None if it can.

    Untrusted: not a directory; owned by another user; writable by group or others; or one
    of its ancestors (after resolving symlinks) is owned by another non-root user or is
    writable by group/others without the sticky bit (then others could replace the
    directory itself).
    """
    try:
        real = os.path.realpath(os.fspath(path), strict=True)
        st = os.stat(real)
    except OSError as exc:
        return f"it cannot be inspected ({exc})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    problem = _ownership_problem(st)
    if problem is not None:
        return problem
    euid = _euid()
    if euid is None:  # pragma: no cover - no ownership model (Windows)
        return None
    parent = real
    while os.path.dirname(parent) != parent:      # every ancestor up to the root
        parent = os.path.dirname(parent)
        try:
            pst = os.stat(parent)
        except OSError as exc:  # pragma: no cover
            return f"its parent {parent} cannot be inspected ({exc})"
        if pst.st_uid not in (0, euid):
            return f"its parent {parent} is owned by uid {pst.st_uid} (who could replace it)"
        if pst.st_mode & 0o022 and not pst.st_mode & stat.S_ISVTX:
            return (f"its parent {parent} is writable by group/others without the sticky bit "
                    f"(mode {_mode(pst)}), so others could replace it")
    return None


def file_problem(path: str | os.PathLike) -> str | None:
    """Why the file ``path`` cannot be trusted, or None (it is a regular file - not a symlink -
    owned by the user and not writable by group/others)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file (a symlink or a special file)"
    return _ownership_problem(st)


_PRIVATE: list[Path] = []
_PRIVATE_LOCK = _new_lock()


def private_fallback_dir() -> Path:
    """A private directory (0700, removed at exit) for this process's kernels."""
    import shutil
    import tempfile

    with _PRIVATE_LOCK:
        if not _PRIVATE:
            d = _path(tempfile.mkdtemp(prefix="nhcontrol-kernels-"))
            atexit.register(shutil.rmtree, str(d), True)
            _PRIVATE.append(d)
        return _PRIVATE[0]


def ensure_private_dir(path: str | os.PathLike) -> Path:
    """Create ``path`` (and any missing parent) with mode 0700 if missing and check that it can
    be trusted (a parent created with the default umask could be group-writable, which would
    make the directory untrusted).

    Raises
    ------
    CacheIntegrityError
        When it exists but cannot be trusted (see `directory_problem()`), or cannot be created.
    """
    p = _path(path).expanduser()
    try:
        missing = []
        q = p
        while not q.exists() and q != q.parent:
            missing.append(q)
            q = q.parent
        for d in reversed(missing):
            try:
                d.mkdir(mode=0o700)
            except FileExistsError:
                pass  # another process was first: checked below like any existing directory
    except OSError as exc:
        raise CacheIntegrityError(f"could not create the kernel cache directory {p} ({exc})") from exc
    problem = directory_problem(p)
    if problem:
        raise CacheIntegrityError(f"the kernel cache directory {p} is not trusted: {problem}")
    return p


def trusted_cache_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """The directory to use for kernels: ``cache_dir`` (default [`default_cache_dir()`][nhcontrol.compiled.default_cache_dir])
    created private, or - when it cannot be created or trusted - a private per-process
    directory, with one warning that names the directory, the reason and the fix."""
    return _path(trusted_dir(cache_dir))


def trusted_dir(cache_dir: str | os.PathLike | None = None) -> str:
    """`trusted_cache_dir()` as a ``str`` (what loading a cached model uses: no pathlib)."""
    base = _clean(os.path.expanduser(os.fspath(cache_dir))) if cache_dir is not None else _default_dir()
    try:
        if os.path.isdir(base):    # the usual case: only the checks of ensure_private_dir
            problem = directory_problem(base)
            if problem:
                raise CacheIntegrityError(f"the kernel cache directory {base} is not trusted: {problem}")
            return base
        return str(ensure_private_dir(base))
    except CacheIntegrityError as exc:
        fallback = private_fallback_dir()
        warn_once("dir", base, f"nhcontrol could not write the kernel cache in {base}: {exc}. Kernels are "
                               f"built in the private directory {fallback} for this process (and rebuilt "
                               f"next time). Fix: point {ENV_VAR} to a directory that only you can write "
                               f"(mode 0700, owned by you), or remove the group/other write bits.")
        return str(fallback)


def cache_path(key: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """``<trusted cache dir>/nhc_<key>.py`` (see `trusted_cache_dir()`)."""
    return _path(os.path.join(trusted_dir(cache_dir), f"nhc_{key}.py"))


def code_path(path: Path) -> Path:
    """Our own bytecode cache next to the source (works with ``PYTHONDONTWRITEBYTECODE``)."""
    return path.with_name(f"{path.stem}.{sys.implementation.cache_tag}.marshal")


# ---------------------------------------------------------------------------------- records
def record_path(path: str | os.PathLike) -> Path:
    """Where the sha256 record of artefact ``path`` lives: ``<path>.sha256`` in the same
    (private) directory."""
    return _path(_clean(path) + RECORD_SUFFIX)


def _record(path: str) -> str:
    """`record_path()` of a clean ``str`` path, as a ``str``."""
    return path + RECORD_SUFFIX


ENV_LOCK_TIMEOUT = "NHCONTROL_LOCK_TIMEOUT"
"""Seconds to wait for the cache lock held by another process (default `LOCK_TIMEOUT`)."""
LOCK_TIMEOUT = 30.0
"""Default lock wait in seconds: the lock is held only while an artefact and its record are
written (milliseconds), so a longer wait means a stopped or hung holder."""
LOCK_NAME = ".nhc_lock"


def _lock_timeout() -> float:
    raw = os.environ.get(ENV_LOCK_TIMEOUT)
    if raw is None or raw.strip() == "":
        return LOCK_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value >= 0.0 or value == float("inf"):
        raise ConfigurationError(f"{ENV_LOCK_TIMEOUT}={raw!r} is not a finite number of seconds >= 0; "
                                 f"unset it (default {LOCK_TIMEOUT:g} s) or give e.g. {ENV_LOCK_TIMEOUT}=60")
    return value


def lock_holder(directory: str | os.PathLike) -> dict | None:
    """Who holds (or last held) the cache lock of ``directory``: ``{"pid", "since", "host",
    "alive"}`` read from the lock file, or None when it names nobody. ``alive`` is None when the
    holder runs on another host (it cannot be checked from here)."""
    try:
        text = (_path(directory) / LOCK_NAME).read_text(encoding="ascii", errors="replace").split()
        pid, since, host = int(text[0]), float(text[1]), text[2] if len(text) > 2 else ""
    except (OSError, ValueError, IndexError):
        return None
    alive: bool | None = None
    if host in ("", _HOST):
        alive = pid_alive(pid)
    return {"pid": pid, "since": since, "host": host, "alive": alive}


_HOST = (os.uname().nodename if hasattr(os, "uname") else "") or "localhost"




def _holder_text(holder: dict | None) -> str:
    if holder is None:
        return "by a process that did not record itself"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder["since"]))
    age = max(0.0, time.time() - holder["since"])
    where = f" on host {holder['host']}" if holder["host"] not in ("", _HOST) else ""
    return f"by process {holder['pid']}{where} since {since} ({age:.0f} s ago)"


def _open_lock(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


@contextlib.contextmanager
def _locked(directory: Path, timeout: float | None = None) -> Iterator[None]:
    """Exclusive advisory lock of ``directory`` (artefact + record are written as a pair).

    The holder writes ``pid time host`` into the lock file. A waiter polls for at most
    ``timeout`` seconds (default ``$NHCONTROL_LOCK_TIMEOUT`` or `LOCK_TIMEOUT`). A lock whose
    recorded holder is a dead process on this host is taken over (the lock file is replaced);
    otherwise the wait ends in `CacheLockTimeout`, which names the holder (pid, since when) and
    what to do. A lock of a process that died is released by the operating system (``flock``),
    so a crashed build never blocks the next one.
    """
    try:  # POSIX advisory locks keep an artefact and its record consistent between processes
        import fcntl    # here: loading verified artefacts takes no lock
    except ImportError:  # pragma: no cover - Windows
        fcntl = None  # type: ignore[assignment]
    if fcntl is None:  # pragma: no cover
        yield
        return
    limit = _lock_timeout() if timeout is None else float(timeout)
    path = _path(directory) / LOCK_NAME
    deadline = time.monotonic() + limit
    delay = 0.005
    dead: tuple | None = None   # ((pid, since), when first seen dead)
    while True:
        fd = _open_lock(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = lock_holder(directory)
            if holder is not None and holder["alive"] is False and dead is not None \
                    and dead[0] == (holder["pid"], holder["since"]) and time.monotonic() - dead[1] > 0.1:
                # recorded holder is dead, yet the lock is held (an inherited descriptor): take over
                with contextlib.suppress(OSError):
                    os.unlink(path)
                warn_once("lock", f"{directory}:{holder['pid']}",
                          f"took over the kernel cache lock {path} left {_holder_text(holder)}, "
                          f"which is no longer running", stacklevel=4)
                continue
            if holder is not None and holder["alive"] is False:
                # seen dead: confirmed on a later poll (a new holder records itself at once)
                if dead is None or dead[0] != (holder["pid"], holder["since"]):
                    dead = ((holder["pid"], holder["since"]), time.monotonic())
            else:
                dead = None
            confirming = dead is not None and time.monotonic() - dead[1] <= 0.3
            if time.monotonic() >= deadline and not confirming:
                raise CacheLockTimeout(
                    f"the kernel cache {directory} is locked {_holder_text(holder)}; waited {limit:g} s "
                    f"for the lock file {path}. If that process is stopped or hung, resume it or end it "
                    f"(kill {holder['pid'] if holder else '<pid>'}); or point {ENV_VAR} to another "
                    f"directory; or wait longer with {ENV_LOCK_TIMEOUT}=<seconds>") from None
            time.sleep(min(delay, max(0.02 if confirming else 0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.2)
            continue
        except OSError:
            os.close(fd)
            raise
        try:   # the file we locked may have been replaced by a take-over: lock the current one
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except OSError:
            same = False
        if not same:
            os.close(fd)
            continue
        break
    try:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {time.time():.3f} {_HOST}\n".encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)


def _replace_atomic(path: Path, data: bytes) -> None:
    import tempfile     # here: loading cached kernels writes nothing

    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _record_text(path: Path, digest: str, size: int) -> bytes:
    return f"{_RECORD_TAG} {digest} {size} {path.name}\n".encode()


def write_artefact(path: str | os.PathLike, data: str | bytes) -> str:
    """Write ``data`` to ``path`` atomically (mode 0600) and record its sha256 next to it.

    The digest is computed from ``data`` in memory (not re-read from disk).  ``path`` must
    be in a directory returned by `trusted_cache_dir()`.

    Returns
    -------
    str
        The sha256 hex digest recorded.

    Raises
    ------
    CacheError
        When the directory cannot be written.
    """
    p = _path(path)
    blob = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    digest = sha256_hex(blob)
    try:
        with _locked(p.parent):
            _replace_atomic(p, blob)
            _replace_atomic(record_path(p), _record_text(p, digest, len(blob)))
    except OSError as exc:
        raise CacheError(f"could not write the kernel cache artefact {p} ({exc})") from exc
    return digest


def record_artefact(path: str | os.PathLike) -> str:
    """Record the sha256 of an artefact that another tool wrote to ``path`` (e.g. a shared
    library from the C compiler), after checking that the file is trusted.

    Call it right after the tool finished, in a directory from `trusted_cache_dir()`
    (nobody else can write there, so the bytes hashed are the bytes the tool produced).

    Returns
    -------
    str
        The sha256 hex digest recorded.
    """
    p = _path(path)
    problem = file_problem(p)
    if problem:
        raise CacheIntegrityError(f"cannot record the kernel cache artefact {p}: {problem}")
    try:
        with _locked(p.parent):
            blob = p.read_bytes()
            digest = sha256_hex(blob)
            _replace_atomic(record_path(p), _record_text(p, digest, len(blob)))
    except OSError as exc:
        raise CacheError(f"could not record the kernel cache artefact {p} ({exc})") from exc
    return digest


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _verify_once(p: str) -> bytes:
    rp = _record(p)
    for f in (p, rp):
        problem = file_problem(f)
        if problem:
            raise CacheIntegrityError(f"the kernel cache file {f} is not trusted: {problem}")
    try:
        rec = _read_bytes(rp).decode("ascii").split()
        blob = _read_bytes(p)
    except (OSError, UnicodeDecodeError) as exc:
        raise CacheIntegrityError(f"cannot read the kernel cache artefact {p} or its record ({exc})") from exc
    if len(rec) != 4 or rec[0] != _RECORD_TAG or rec[3] != os.path.basename(p):
        raise CacheIntegrityError(f"the sha256 record {rp} of {p} is malformed")
    digest = sha256_hex(blob)
    if digest != rec[1] or str(len(blob)) != rec[2]:
        raise CacheIntegrityError(f"the kernel cache artefact {p} fails its integrity check (sha256 "
                                  f"{digest[:12]}..., {len(blob)} bytes; recorded {rec[1][:12]}..., "
                                  f"{rec[2]} bytes): it was modified or truncated after it was written")
    return blob


def verify_artefact(path: str | os.PathLike) -> bytes:
    """Check the artefact ``path`` against its record and return its verified bytes.

    Execute or load only the bytes returned (for a shared library that must be opened by
    path, verify immediately before opening: the directory is private, so nobody else can
    swap the file in between).

    Raises
    ------
    CacheIntegrityError
        When the artefact or its record is missing, not a regular file owned by the user,
        writable by group/others, or when the sha256 or size of the bytes read differs from
        the record.
    """
    p = _clean(path)
    try:
        return _verify_once(p)
    except CacheIntegrityError:
        if not os.path.isdir(os.path.dirname(p) or "."):
            raise
        with _locked(_path(p).parent):  # a writer may have been between the artefact and its record
            return _verify_once(p)


def discard_artefact(path: str | os.PathLike) -> None:
    """Remove the artefact ``path`` and its record (missing files are ignored)."""
    p = _clean(path)
    for f in (p, _record(p)):
        with contextlib.suppress(OSError):
            os.unlink(f)


def write_atomic(path: Path, data: str | bytes, quiet: bool = False) -> bool:
    """`write_artefact()` that warns (unless ``quiet``) and returns False on failure."""
    try:
        write_artefact(path, data)
    except CacheError as exc:
        if not quiet:
            warnings.warn(f"nhcontrol could not write the kernel cache {path} ({exc}); the model works "
                          f"but will be regenerated next time. Set {ENV_VAR} to a writable directory.",
                          RuntimeWarning, stacklevel=3)
        return False
    return True


# ---------------------------------------------------------------------------------- modules
def _modname(key: str) -> str:
    return f"_nhcontrol_kernels_{key[:24]}"


def load_module(path: Path, key: str) -> ModuleType:
    """Import a generated module from ``path`` after its integrity check.

    The source and its compiled code object (``.marshal``, which names the sha256 of the
    source it was compiled from) are both verified against their records before use.

    Raises
    ------
    CacheError
        When an artefact is untrusted, fails its check, or the module cannot be executed
        (any exception at import, `SystemExit` included).  The caller discards the
        artefacts and rebuilds.
    """
    path = _path(path)
    source = verify_artefact(path)
    digest = sha256_hex(source)
    modname = _modname(key)
    cached = sys.modules.get(modname)
    if cached is not None and getattr(cached, "__nhcontrol_stamp__", None) == (str(path), digest):
        return cached  # same verified bytes, already imported in this process
    cpath = code_path(path)
    header = _MARSHAL_MAGIC + digest.encode() + b"\n"
    code = None
    if cpath.exists() and not record_path(cpath).exists() and file_problem(cpath) is None:
        discard_artefact(cpath)  # written by a version without records: rebuilt quietly
    if cpath.exists() or record_path(cpath).exists():
        try:
            blob = verify_artefact(cpath)
            if blob.startswith(header):  # else compiled from another source: rebuilt below
                code = marshal.loads(blob[len(header):])
        except (CacheError, EOFError, ValueError, TypeError) as exc:
            discard_artefact(cpath)
            warn_once("artefact", cpath, f"discarded the unusable compiled kernel cache file {cpath} ({exc}); "
                                         f"it is rebuilt from the verified source")
            code = None
    try:
        if code is None:
            code = compile(source.decode("utf-8"), str(path), "exec")
            with contextlib.suppress(CacheError):
                write_artefact(cpath, header + marshal.dumps(code))
        # no __file__: tools that scan sys.modules for the user's own code (hypothesis harvests
        # the constants of every "local" module at its first test, coverage) would otherwise parse
        # the generated kernels (0.6-1.2 MB of source per model; 15-30 s inside a test suite);
        # the source path stays in the code objects (tracebacks) and in __nhcontrol_stamp__
        module = ModuleType(modname)
        exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:
        raise CacheError(f"the cached kernel module {path} is unreadable or corrupt "
                         f"({type(exc).__name__}: {exc})") from exc
    module.__nhcontrol_stamp__ = (str(path), digest)
    module.__nhcontrol_source_bytes__ = source  # the verified bytes (pickling never re-reads the disk)
    sys.modules[modname] = module
    return module


def discard_module(path: Path, key: str) -> None:
    """Forget the kernel module of ``key`` and remove its artefacts (source, code, records)."""
    sys.modules.pop(_modname(key), None)
    discard_artefact(path)
    discard_artefact(code_path(_path(path)))


def module_from_source(source: str, key: str) -> ModuleType:
    """Execute generated ``source`` in a fresh module (no disk)."""
    module = ModuleType(f"_nhcontrol_kernels_{key[:24]}_mem")
    exec(compile(source, f"<nhcontrol kernels {key[:12]}>", "exec"), module.__dict__)
    module.__nhcontrol_source__ = source
    return module


__all__ = ["default_cache_dir", "cache_key", "cache_path", "code_path", "load_module", "module_from_source",
           "write_atomic", "ENV_VAR", "CacheIntegrityError", "trusted_cache_dir", "ensure_private_dir",
           "directory_problem", "file_problem", "write_artefact", "record_artefact", "verify_artefact",
           "discard_artefact", "discard_module", "record_path", "private_fallback_dir", "warn_once",
           "RECORD_SUFFIX", "lock_holder", "ENV_LOCK_TIMEOUT", "LOCK_TIMEOUT", "CacheLockTimeout"]
