"""sha256 hex digests for the kernel cache without the cost of importing ``hashlib``.

``import hashlib`` loads OpenSSL's ``_hashlib`` (a few milliseconds, paid by every fresh process
that loads a cached model).  The digests here are the same sha256: from ``hashlib`` when some
module has imported it already (OpenSSL is the fastest), otherwise from the interpreter's
built-in implementation (``_sha2`` on Python >= 3.12, ``_sha256`` before), and from ``hashlib``
when the interpreter has no built-in one.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

__all__ = ["sha256", "sha256_hex"]

_IMPL: list[Callable[..., Any]] = []


def _impl() -> Callable[..., Any]:
    if not _IMPL:
        hashlib = sys.modules.get("hashlib")
        if hashlib is not None:
            _IMPL.append(hashlib.sha256)
        else:
            # the module of this version only (a failed import searches the whole sys.path)
            name = "_sha2" if sys.version_info >= (3, 12) else "_sha256"
            try:
                fn = __import__(name).sha256
            except (ImportError, AttributeError):  # pragma: no cover - no built-in hashes
                from hashlib import sha256 as fn
            _IMPL.append(fn)
    return _IMPL[0]


def sha256(data: bytes = b"") -> Any:
    """A sha256 hash object (``update``, ``digest``, ``hexdigest``) of ``data``."""
    return _impl()(data)


def sha256_hex(data: bytes) -> str:
    """The sha256 hex digest of ``data``."""
    return _impl()(data).hexdigest()
