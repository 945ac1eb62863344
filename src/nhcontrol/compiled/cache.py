"""On-disk cache of generated kernel modules.

Key: ``sha256(model description + generator version)`` where the description is the
``srepr`` of every expression of the model plus names and parameter defaults
(:meth:`~nhcontrol.modeling.MultibodySystem.description`).  One file per model,
``<cache_dir>/nhc_<key>.py``, written atomically (temporary file in the same
directory, then :func:`os.replace`), so parallel processes either see the complete
file or none.  Python's own bytecode cache (``__pycache__``) makes the second load fast.
"""

from __future__ import annotations

import hashlib
import importlib.util
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


def load_module(path: Path, key: str) -> ModuleType:
    """Import a generated module from ``path`` (raises :class:`CacheError` if unreadable)."""
    modname = f"_nhcontrol_kernels_{key[:24]}"
    try:
        st = path.stat()
    except OSError as exc:
        raise CacheError(f"cannot read the kernel cache file {path}: {exc}") from exc
    stamp = (str(path), st.st_mtime_ns, st.st_size)
    cached = sys.modules.get(modname)
    if cached is not None and getattr(cached, "__nhcontrol_stamp__", None) == stamp:
        return cached  # same file, already imported in this process
    spec = importlib.util.spec_from_file_location(modname, str(path))
    if spec is None or spec.loader is None:
        raise CacheError(f"cannot import the generated kernel module {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (OSError, SyntaxError, ValueError, NameError, AttributeError) as exc:
        raise CacheError(f"the cached kernel module {path} is unreadable or corrupt ({exc}); "
                         f"delete it or compile with cache=False") from exc
    module.__nhcontrol_stamp__ = stamp
    sys.modules[modname] = module
    return module


def module_from_source(source: str, key: str) -> ModuleType:
    """Execute generated ``source`` in a fresh module (no disk)."""
    module = ModuleType(f"_nhcontrol_kernels_{key[:24]}_mem")
    exec(compile(source, f"<nhcontrol kernels {key[:12]}>", "exec"), module.__dict__)
    return module


def write_atomic(path: Path, source: str) -> bool:
    """Write ``source`` to ``path`` atomically; warn and return False if the directory is not writable."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.stem + ".", suffix=".tmp", dir=str(path.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(source)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as exc:
        warnings.warn(f"nhcontrol could not write the kernel cache {path} ({exc}); the model works "
                      f"but will be regenerated next time. Set {ENV_VAR} to a writable directory.",
                      RuntimeWarning, stacklevel=3)
        return False
    return True


__all__ = ["default_cache_dir", "cache_key", "cache_path", "load_module", "module_from_source",
           "write_atomic", "ENV_VAR"]
