"""``save``/``load`` of results: one ``.npz`` file with the arrays and a JSON metadata entry.

Loading trusts nothing in the file: a damaged or hand-edited file (not a zip, a metadata entry
that is not JSON, a missing field, an array of strings, NaN in a matrix, 7 names for 5 states)
ends in one `StorageError` that names the file and the field, never a ``KeyError``,
``JSONDecodeError`` or ``BadZipFile`` and never a result that is silently wrong
([`LoadedFile`][nhcontrol._util.storage.LoadedFile]).
"""

from __future__ import annotations

import json
import math
import os
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .errors import NhcontrolError

FORMAT = "nhcontrol-result-1"


class StorageError(NhcontrolError, OSError):
    """A result file cannot be written, read, or is of another kind (the message names the file
    and, for a damaged file, the field)."""


def save_npz(path: str | os.PathLike, kind: str, arrays: dict[str, Any], meta: dict[str, Any]) -> Path:
    """Write ``arrays`` and ``meta`` (JSON-serialisable) to ``path`` (``.npz`` appended if missing)."""
    p = Path(path)
    if p.suffix != ".npz":
        p = p.with_name(p.name + ".npz")
    header = json.dumps({"format": FORMAT, "kind": kind, "meta": meta})
    from .staging import write_file

    # a temporary file next to p, then one rename: never through a link, never half written
    return write_file(p, lambda fh: np.savez_compressed(
        fh, __meta__=np.array(header), **{k: np.asarray(v) for k, v in arrays.items()}),
        what=f"{kind}.save", error=StorageError)


_FORMAT_ERRORS = (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile, zlib.error,
                  json.JSONDecodeError, UnicodeDecodeError, TypeError)


def load_npz(path: str | os.PathLike, kind: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read a file of `save_npz()`; check that it holds a ``kind`` (use `LoadedFile` to check
    its fields too)."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            magic = fh.read(4)
    except FileNotFoundError as exc:
        raise StorageError(f"cannot read {p}: no such file") from exc
    except OSError as exc:
        raise StorageError(f"cannot read {p}: {exc}") from exc
    if magic[:2] != b"PK":
        raise StorageError(f"{p} is not a readable nhcontrol result file: it is not an .npz (zip) archive "
                           f"(it starts with {magic!r}); load a file written by save()")
    try:
        with np.load(p, allow_pickle=False) as data:
            if "__meta__" not in data.files:
                raise StorageError(f"{p} is not an nhcontrol result file: it has no '__meta__' entry "
                                   f"(entries: {sorted(data.files)[:8]})")
            header = json.loads(str(data["__meta__"]))
            arrays = {k: data[k] for k in data.files if k != "__meta__"}
    except StorageError:
        raise
    except FileNotFoundError as exc:
        raise StorageError(f"cannot read {p}: no such file") from exc
    except _FORMAT_ERRORS as exc:
        raise StorageError(f"{p} is not a readable nhcontrol result file ({type(exc).__name__}: {exc}); "
                           f"it is damaged or of another format: save the result again") from exc
    if not isinstance(header, dict) or not isinstance(header.get("meta"), dict):
        raise StorageError(f"{p}: the metadata entry '__meta__' is not an object with a 'meta' field "
                           f"(got {str(header)[:80]!r}); the file was edited or damaged: save it again")
    if header.get("format") != FORMAT or header.get("kind") != kind:
        raise StorageError(f"{p} holds a {header.get('kind')!r} ({header.get('format')}), not a {kind!r}; "
                           f"load it with the matching class")
    return arrays, header["meta"]


_MISSING = object()


class LoadedFile:
    """The checked fields of one result file: every accessor names the file and the field in
    its `StorageError`.

    Examples
    --------
    ``f = LoadedFile(path, "DiscreteLTV"); Ad = f.array("Ad", ndim=3); dt = f.number("dt", positive=True)``
    """

    def __init__(self, path: str | os.PathLike, kind: str) -> None:
        self.path = Path(path)
        self.kind = kind
        self.arrays, self.meta = load_npz(path, kind)

    def fail(self, field: str, why: str) -> StorageError:
        """The error for a bad ``field`` (return value: ``raise f.fail(...)``)."""
        return StorageError(f"{self.path}: field {field!r} of the saved {self.kind} {why}; the file is "
                            f"damaged or was edited by hand: save the result again")

    # ---------------------------------------------------------------- arrays
    def array(self, key: str, *, ndim: int | tuple[int, ...] | None = None, finite: bool = True,
              optional: bool = False) -> np.ndarray | None:
        """A real numeric array (bool/int/float stored; returned as float64), checked for its
        number of dimensions and finiteness; None when ``optional`` and absent."""
        if key not in self.arrays:
            if optional:
                return None
            raise self.fail(key, "is missing")
        a = self.arrays[key]
        if a.dtype.kind not in "biuf":
            raise self.fail(key, f"has dtype {a.dtype} (expected real numbers)")
        if ndim is not None and a.ndim not in ((ndim,) if isinstance(ndim, int) else ndim):
            raise self.fail(key, f"has {a.ndim} dimensions (shape {a.shape}), expected {ndim}")
        a = np.asarray(a, dtype=float)
        if finite and not np.all(np.isfinite(a)):
            bad = np.argwhere(~np.isfinite(a))[0]
            raise self.fail(key, f"has non-finite entries (first at index {tuple(int(i) for i in bad)}: "
                                 f"{a[tuple(bad)]})")
        return a

    def shape(self, key: str, a: np.ndarray, expected: tuple, what: str) -> None:
        """Check ``a.shape == expected`` (``None`` entries are free)."""
        if len(a.shape) != len(expected) or any(e is not None and s != e for s, e in zip(a.shape, expected)):
            shown = "(" + ", ".join("*" if e is None else str(e) for e in expected) + ("," if len(expected) == 1
                                                                                  else "") + ")"
            raise self.fail(key, f"has shape {a.shape}, but {what} needs {shown}")

    # ---------------------------------------------------------------- metadata
    def field(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self.meta:
            if default is not _MISSING:
                return default
            raise self.fail(key, "is missing from the metadata")
        return self.meta[key]

    def number(self, key: str, *, positive: bool = False, default: Any = _MISSING,
               allow_none: bool = False) -> float | None:
        v = self.field(key, default)
        if v is None and allow_none:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise self.fail(key, f"is {v!r}, not a finite number")
        if positive and v <= 0:
            raise self.fail(key, f"is {v!r}, not a positive number")
        return float(v)

    def integer(self, key: str, *, minimum: int = 0, default: Any = _MISSING, allow_none: bool = False) -> int | None:
        v = self.field(key, default)
        if v is None and allow_none:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise self.fail(key, f"is {v!r}, not an integer >= {minimum}")
        return int(v)

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        v = self.field(key, default)
        if not isinstance(v, bool):
            raise self.fail(key, f"is {v!r}, not true/false")
        return v

    def text(self, key: str, default: Any = _MISSING, allow_none: bool = False) -> str | None:
        v = self.field(key, default)
        if v is None and allow_none:
            return None
        if not isinstance(v, str):
            raise self.fail(key, f"is {v!r}, not a string")
        return v

    def names(self, key: str, n: int | None = None, what: str = "", *, allow_none: bool = False,
              default: Any = _MISSING) -> tuple[str, ...] | None:
        """A list of distinct strings, of length ``n`` (the size of ``what``) when given."""
        v = self.field(key, default)
        if v is None and allow_none:
            return None
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            raise self.fail(key, f"is {str(v)[:80]!r}, not a list of names")
        if n is not None and len(v) != n:
            raise self.fail(key, f"has {len(v)} names {v[:8]}, but {what} has {n}")
        if len(set(v)) != len(v):
            dup = sorted({s for s in v if v.count(s) > 1})
            raise self.fail(key, f"repeats the names {dup}")
        return tuple(v)

    def numbers(self, key: str, default: Any = _MISSING) -> tuple[float, ...]:
        v = self.field(key, default)
        if not isinstance(v, list) or not all(isinstance(b, (int, float)) and not isinstance(b, bool)
                                              and math.isfinite(b) for b in v):
            raise self.fail(key, f"is {str(v)[:80]!r}, not a list of finite numbers")
        return tuple(float(b) for b in v)

    def build(self, make: Any) -> Any:
        """``make()`` with the errors of the class's own checks named as errors of this file."""
        try:
            return make()
        except StorageError:
            raise
        except (ValueError, TypeError, KeyError) as exc:
            raise StorageError(f"{self.path}: the saved data do not form a valid {self.kind} ({exc}); the "
                               f"file is damaged or was edited by hand: save the result again") from exc


__all__ = ["StorageError", "save_npz", "load_npz", "LoadedFile", "FORMAT"]
