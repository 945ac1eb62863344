"""Warm start without SymPy: a compiled model found from the recipe that builds it.

A model's cache key (`nhcontrol.compiled.cache.cache_key`) is the hash of its symbolic
description, so finding it needs the symbolic model, i.e. SymPy and the whole derivation of the
bodies and constraints (about 0.7 s for the benchmark bicycle).  A *recipe* names the model
without building it:

    recipe key = sha256(nhcontrol version, generator version, the builder's module and name,
                        its arguments, the sha256 of every source file involved)

where the sources are the builder's own module, the ``nhcontrol.modeling`` package (which
turns the builder's calls into equations), for a catalogue builder every module of
``nhcontrol.models`` (they share helpers), and any file the caller names.  The cache holds, per
recipe, a small JSON record ``recipe_<key>.json`` (written with a sha256 record like every
artefact, `nhcontrol.compiled.cache.write_artefact`, and verified before it is read; it is
data, never executed) that gives the model's cache key and its ``META`` (names, sizes,
parameter defaults: what `CompiledModel` reads of the generated module); the C kernel library
is then verified and opened without reading the much larger Python kernel module (which is
verified when the model is pickled), else the kernels are loaded by `load_compiled`
(hash-checked as always).  A missing, damaged or stale record (any change of
a source file or of the arguments gives another recipe key) means a build: the builder runs,
the model is compiled as usual and the record is written.

`cached_model` is what the catalogue's ``model()`` functions use; a user model gets the same
warm start with ``cached_model(my_builder, *args, **kwargs)`` (arguments: numbers, strings,
booleans, None and tuples/lists/dicts of them; anything else is built every time).
Nothing here imports SymPy; the symbolic model is built only when the recipe is unknown, or
when the caller asks for it (``builder(*args)``).
"""

from __future__ import annotations

import json
import math
import os
import time
from _thread import allocate_lock as _new_lock   # threading.Lock, without importing threading
from typing import TYPE_CHECKING, Any, Callable, Iterable

from .._util.errors import CacheError
from .._util.sha import sha256_hex
from . import cache as _cache
from ._layout import C_GENERATOR_VERSION, GENERATOR_VERSION

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

__all__ = ["cached_model", "recipe_key", "RECIPE_VERSION"]

RECIPE_VERSION = "r2"
"""Version of the recipe record format (part of the recipe key); ``r2`` records carry the
model's ``META``."""

_LOCK = _new_lock()
_DIGESTS: dict[str, str] = {}         # source path -> sha256 (once per process)
_MODELS: dict[str, Any] = {}           # recipe key -> CompiledModel (this process)


def _plain(v: Any) -> Any:
    """``v`` as JSON-able plain data, or raise TypeError (an argument a recipe cannot name)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise TypeError("a non-finite number")
        return {"float": v.hex()}
    if isinstance(v, (tuple, list)):
        return [_plain(e) for e in v]
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {"dict": sorted((k, _plain(e)) for k, e in v.items())}
    try:                                     # numpy scalars
        import numpy as np

        if isinstance(v, np.floating):
            return _plain(float(v))
        if isinstance(v, np.integer):
            return int(v)
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    raise TypeError(f"{type(v).__name__}")


def _digest(path: str) -> str:
    hit = _DIGESTS.get(path)
    if hit is None:
        with open(path, "rb") as fh:
            hit = sha256_hex(fh.read())
        _DIGESTS[path] = hit
    return hit


SOURCES_MEMO = "source_digests.json"
"""The cache's record of source digests: ``{"version": 1, "files": {path: [size, mtime_ns,
ctime_ns, inode, device, sha256]}}`` (a verified artefact like every other)."""
_RACY_NS = 2_000_000_000     # a file changed less than 2 s before it was hashed is not recorded
_MEMO_MAX = 2000


def _status(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _digests_from_memo(files: list[str], directory: str) -> None:
    """Put the sha256 of ``files`` into `_DIGESTS`, taken from the cache's record of source digests
    (`SOURCES_MEMO` in ``directory``) for every file whose status (size, modification and change
    times in ns, inode, device) is the recorded one, else read and hashed (and recorded).

    A file is recorded only when it did not change while it was read and its last change is more
    than 2 s older than the reading (a later write then changes its change time, which no
    user-level tool can set back), so the record never stands for other content than the
    file's.  Missing or unreadable files are left to `_digest` (which raises)."""
    path = os.path.join(directory, SOURCES_MEMO)
    memo: dict[str, Any] = {}
    if os.path.exists(path) or os.path.exists(_cache._record(path)):
        try:
            data = json.loads(_cache.verify_artefact(path).decode("utf-8"))
            if data.get("version") == 1 and isinstance(data.get("files"), dict):
                memo = data["files"]
        except (CacheError, OSError, ValueError, UnicodeDecodeError, AttributeError):
            _cache.discard_artefact(path)      # unusable: rebuilt below (it is only a shortcut)
    changed = False
    now = time.time_ns()
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            continue
        status = _status(st)
        entry = memo.get(f)
        if (isinstance(entry, list) and len(entry) == 6 and entry[:5] == status
                and isinstance(entry[5], str) and len(entry[5]) == 64):
            _DIGESTS[f] = entry[5]
            continue
        try:
            with open(f, "rb") as fh:
                blob = fh.read()
            after = _status(os.stat(f))
        except OSError:
            continue
        _DIGESTS[f] = sha256_hex(blob)
        if after == status and max(st.st_mtime_ns, st.st_ctime_ns) < now - _RACY_NS:
            memo[f] = status + [_DIGESTS[f]]
            changed = True
        elif memo.pop(f, None) is not None:
            changed = True
    if changed:
        if len(memo) > _MEMO_MAX:
            memo = {f: memo[f] for f in files if f in memo}
        try:
            _cache.write_artefact(path, json.dumps({"version": 1, "files": memo}, sort_keys=True))
        except CacheError:
            pass                               # a read-only cache: hashed again next time


_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))   # .../nhcontrol


def _modeling_sources() -> list[str]:
    """Every ``*.py`` under ``nhcontrol/modeling`` (recursively), sorted (os.walk: a fraction of
    ``Path.rglob``'s time, which every warm start pays)."""
    here = os.path.join(_PACKAGE, "modeling")
    return sorted(os.path.join(root, f) for root, _, files in os.walk(here)
                  for f in files if f.endswith(".py"))


def _catalogue_sources() -> list[str]:
    here = os.path.join(_PACKAGE, "models")
    return sorted(e.path for e in os.scandir(here) if e.name.endswith(".py") and e.is_file())


def _version() -> str:
    from .. import __version__

    return str(__version__)


def recipe_key(builder: Callable[..., Any], args: tuple = (), kwargs: dict | None = None,
               sources: Iterable[str | os.PathLike] = ()) -> str | None:
    """The recipe key of ``builder(*args, **kwargs)`` (sha256 hex), or None when an argument is
    not plain data or the builder's source file is unknown (no recipe: built every time)."""
    return _recipe_key(builder, args, kwargs, sources, None)


def _recipe_key(builder: Callable[..., Any], args: tuple, kwargs: dict | None,
                sources: Iterable[str | os.PathLike],
                directory: Callable[[], str | None] | None) -> str | None:
    """`recipe_key`; the digests of source files not hashed in this process yet are taken from
    the record of source digests in the trusted cache directory ``directory()`` when it has
    them (`_digests_from_memo`)."""
    import sys

    module = sys.modules.get(getattr(builder, "__module__", None) or "")
    file = getattr(module, "__file__", None)
    qual = getattr(builder, "__qualname__", None)
    if file is None or qual is None or "<locals>" in qual:
        return None
    try:
        plain = [_plain(list(args)), _plain(dict(kwargs or {}))]
    except TypeError:
        return None
    files = [os.path.realpath(file)] + _modeling_sources() + [os.path.realpath(s) for s in sources]
    if builder.__module__.startswith("nhcontrol.models."):
        files += _catalogue_sources()       # catalogue builders share helpers (bicycle frame ...)
    try:
        where = directory() if directory is not None and any(f not in _DIGESTS for f in files) else None
        if where is not None:
            _digests_from_memo(files, where)
        digests = [[os.path.basename(f), _digest(f)] for f in files]
    except OSError:
        return None
    text = json.dumps([RECIPE_VERSION, _version(), GENERATOR_VERSION, C_GENERATOR_VERSION,
                       builder.__module__, qual, plain, digests], sort_keys=True)
    return sha256_hex(text.encode())


def recipe_path(key: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """``<cache_dir>/recipe_<key>.json`` (the trusted cache directory)."""
    return _cache._path(_recipe_file(key, cache_dir))


def _recipe_file(key: str, cache_dir: str | os.PathLike | None = None) -> str:
    return os.path.join(_cache.trusted_dir(cache_dir), f"recipe_{key}.json")


def _read(path: str) -> tuple[str, dict | None] | None:
    """The model key of a verified recipe record and the model's ``META`` it carries (None when
    it carries none for that key), or None (missing or unusable: discarded)."""
    if not (os.path.exists(path) or os.path.exists(_cache._record(path))):
        return None
    try:
        data = json.loads(_cache.verify_artefact(path).decode("utf-8"))
        key = data["model_key"]
        if data.get("version") != RECIPE_VERSION or not (
                isinstance(key, str) and len(key) == 64 and all(c in "0123456789abcdef" for c in key)):
            raise CacheError("malformed record")
        meta = data.get("meta")
        return key, (meta if isinstance(meta, dict) and meta.get("key") == key else None)
    except (CacheError, OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        _cache.discard_artefact(path)
        _cache.warn_once("artefact", path, f"ignoring unusable model recipe {path} ({exc}); it was "
                                           "discarded and the model is built again")
        return None


def cached_model(builder: Callable[..., Any], *args: Any,
                 sources: Iterable[str | os.PathLike] = (),
                 cache_dir: str | os.PathLike | None = None, **kwargs: Any) -> Any:
    """The compiled model of ``builder(*args, **kwargs)`` (a `MultibodySystem`), from the
    cache without building it (and without SymPy) when this recipe was compiled before.

    Parameters
    ----------
    builder : callable
        A module-level function returning a ``MultibodySystem``.
    *args, **kwargs
        Its arguments (plain data: numbers, strings, booleans, None, tuples/lists/dicts).
    sources : iterable of path-like
        Further source files whose content the model depends on (the builder's module and
        ``nhcontrol.modeling`` are always included).
    cache_dir : path-like, optional
        Kernel cache directory (default ``$NHCONTROL_CACHE_DIR`` or ``~/.cache/nhcontrol``).

    Returns
    -------
    CompiledModel
        The same object for the same recipe within a process.  Its kernels come from the
        hash-checked cache (`load_compiled`) or from ``builder(*args, **kwargs).compile()``.
    """
    sources = tuple(sources)
    found_dir: list[str | None] = []

    def directory() -> str | None:
        """The trusted cache directory (None: unusable), found once."""
        if not found_dir:
            try:
                found_dir.append(_cache.trusted_dir(cache_dir))
            except (CacheError, OSError):
                found_dir.append(None)
        return found_dir[0]

    key = _recipe_key(builder, args, kwargs, sources, directory)
    if key is None:
        return builder(*args, **kwargs).compile(cache_dir=cache_dir)
    memo = (key, str(cache_dir))
    with _LOCK:
        hit = _MODELS.get(memo)
    if hit is not None:
        return hit
    from .model import load_compiled

    cm = None
    path = os.path.join(directory(), f"recipe_{key}.json") if directory() is not None else None
    found = _read(path) if path is not None else None
    if found is not None:
        from . import cbackend as _cb
        from .model import _load_from_recipe

        model_key, meta = found
        # the C kernels straight from the record's META (the Python kernel module is not read),
        # else the general loader
        cm = _load_from_recipe(model_key, meta, os.path.dirname(path)) if meta is not None else None
        if cm is None:
            try:
                cm = load_compiled(model_key, cache_dir=cache_dir)
            except CacheError:
                cm = None               # the kernels left the cache: build again
        if cm is not None and cm.backend != "c" and _cb.requested_backend(None) != "python" \
                and _cb.compiler_problem() is None:
            cm = None               # no cached C library: compile() builds it (or says why not);
            #                         without a compiler the cached Python kernels are the answer
    if cm is None:
        if path is not None:
            # a cold build follows: the missing model-independent routine libraries start
            # compiling now, while the builder runs (the model build waits for them as usual)
            from . import cbackend as _cb

            _cb.prebuild_routines(os.path.dirname(path))
        from .._util.gcpause import cyclic_gc_paused

        with cyclic_gc_paused():        # the symbolic model and its build (nhcontrol._util.gcpause)
            cm = builder(*args, **kwargs).compile(cache_dir=cache_dir)
        if path is not None and cm.source_path is not None:
            record = {"version": RECIPE_VERSION, "model_key": cm.model_hash,
                      "builder": f"{builder.__module__}.{builder.__qualname__}", "name": cm.name,
                      "meta": getattr(cm._mod, "META", None)}
            try:
                _cache.write_artefact(path, json.dumps(record, sort_keys=True))
            except CacheError:
                pass                # a read-only cache: the next process builds again
    with _LOCK:
        if len(_MODELS) > 64:
            _MODELS.clear()
        _MODELS[memo] = cm
    from functools import partial

    from .model import _remember_builder

    _remember_builder(cm.model_hash, partial(builder, *args, **kwargs))   # for interop's exports
    return cm
