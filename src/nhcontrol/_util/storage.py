"""``save``/``load`` of results: one ``.npz`` file with the arrays and a JSON metadata entry."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .errors import NhcontrolError

FORMAT = "nhcontrol-result-1"


class StorageError(NhcontrolError, OSError):
    """A result file cannot be written, read, or is of another kind."""


def save_npz(path: str | os.PathLike, kind: str, arrays: dict[str, Any], meta: dict[str, Any]) -> Path:
    """Write ``arrays`` and ``meta`` (JSON-serialisable) to ``path`` (``.npz`` appended if missing)."""
    p = Path(path)
    if p.suffix != ".npz":
        p = p.with_name(p.name + ".npz")
    header = json.dumps({"format": FORMAT, "kind": kind, "meta": meta})
    try:
        np.savez_compressed(p, __meta__=np.array(header), **{k: np.asarray(v) for k, v in arrays.items()})
    except OSError as exc:
        raise StorageError(f"cannot write {p}: {exc}") from exc
    return p


def load_npz(path: str | os.PathLike, kind: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read a file of `save_npz()`; check that it holds a ``kind``."""
    p = Path(path)
    try:
        with np.load(p, allow_pickle=False) as data:
            header = json.loads(str(data["__meta__"]))
            arrays = {k: data[k] for k in data.files if k != "__meta__"}
    except (OSError, KeyError, ValueError) as exc:
        raise StorageError(f"{p} is not a readable nhcontrol result file ({exc})") from exc
    if header.get("format") != FORMAT or header.get("kind") != kind:
        raise StorageError(f"{p} holds a {header.get('kind')!r} ({header.get('format')}), not a {kind!r}; "
                           f"load it with the matching class")
    return arrays, header["meta"]
