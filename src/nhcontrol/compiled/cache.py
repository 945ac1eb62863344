"""On-disk cache of generated kernel modules.

Key: ``sha256(model description + generator version)`` where the description is the
``srepr`` of every expression of the model plus names and parameter defaults
(:meth:`~nhcontrol.modeling.MultibodySystem.description`).  One file per model,
``<cache_dir>/nhc_<key>.py``, written atomically (temporary file in the same
directory, then :func:`os.replace`), so parallel processes either see the complete
file or none.  The compiled code object is stored next to it
(``nhc_<key>.<cache_tag>.marshal``, stamped with the source's mtime and size), so the
second load neither derives nor parses anything.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
import warnings
from pathlib import Path
from types import ModuleType

from .._util.errors import CacheError
from .codegen import GENERATOR_VERSION

ENV_VAR = "NHCONTROL_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$NHCONTROL_CACHE_DIR`` or ``~/.cache/nhcontrol``."""
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "nhcontrol"


def cache_key(description: str) -> str:
    """sha256 hex digest of ``description`` and :data:`GENERATOR_VERSION`."""
    return hashlib.sha256((GENERATOR_VERSION + "\n" + description).encode()).hexdigest()


def cache_path(key: str, cache_dir: str | os.PathLike | None = None) -> Path:
    base = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return base / f"nhc_{key}.py"


def code_path(path: Path) -> Path:
    """Our own bytecode cache next to the source (works with ``PYTHONDONTWRITEBYTECODE``)."""
    return path.with_name(f"{path.stem}.{sys.implementation.cache_tag}.marshal")


def load_module(path: Path, key: str) -> ModuleType:
    """Import a generated module from ``path`` (raises :class:`CacheError` if unreadable).

    The compiled code object is kept in a ``.marshal`` file (written atomically), so a
    warm load only unmarshals and executes the module body.
    """
    modname = f"_nhcontrol_kernels_{key[:24]}"
    try:
        st = path.stat()
    except OSError as exc:
        raise CacheError(f"cannot read the kernel cache file {path}: {exc}") from exc
    stamp = (str(path), st.st_mtime_ns, st.st_size)
    cached = sys.modules.get(modname)
    if cached is not None and getattr(cached, "__nhcontrol_stamp__", None) == stamp:
        return cached  # same file, already imported in this process
    cpath = code_path(path)
    header = f"{st.st_mtime_ns}:{st.st_size}\n".encode()
    code = None
    try:
        blob = cpath.read_bytes()
        if blob.startswith(header):
            code = marshal.loads(blob[len(header):])
    except (OSError, EOFError, ValueError, TypeError):
        code = None
    try:
        if code is None:
            code = compile(path.read_text(encoding="utf-8"), str(path), "exec")
            write_atomic(cpath, header + marshal.dumps(code), quiet=True)
        module = ModuleType(modname)
        module.__file__ = str(path)
        exec(code, module.__dict__)
    except (OSError, SyntaxError, ValueError, NameError, AttributeError, TypeError) as exc:
        raise CacheError(f"the cached kernel module {path} is unreadable or corrupt ({exc}); "
                         f"delete it or compile with cache=False") from exc
    module.__nhcontrol_stamp__ = stamp
    sys.modules[modname] = module
    return module


def module_from_source(source: str, key: str) -> ModuleType:
    """Execute generated ``source`` in a fresh module (no disk)."""
    module = ModuleType(f"_nhcontrol_kernels_{key[:24]}_mem")
    exec(compile(source, f"<nhcontrol kernels {key[:12]}>", "exec"), module.__dict__)
    module.__nhcontrol_source__ = source
    return module


def write_atomic(path: Path, data: str | bytes, quiet: bool = False) -> bool:
    """Write ``data`` to ``path`` atomically; warn (unless ``quiet``) and return False on failure."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.stem + ".", suffix=".tmp", dir=str(path.parent))
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as exc:
        if quiet:
            return False
        warnings.warn(f"nhcontrol could not write the kernel cache {path} ({exc}); the model works "
                      f"but will be regenerated next time. Set {ENV_VAR} to a writable directory.",
                      RuntimeWarning, stacklevel=3)
        return False
    return True


__all__ = ["default_cache_dir", "cache_key", "cache_path", "code_path", "load_module", "module_from_source",
           "write_atomic", "ENV_VAR"]
