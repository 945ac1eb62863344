"""cffi's parsed type tables of a library's declarations, made at build time (free of SymPy:
the routines of `nhcontrol.linearization` built on first use call it from a warm start).
`nhcontrol.compiled.ccodegen` re-exports these names."""

from __future__ import annotations

from _thread import allocate_lock as _new_lock   # threading.Lock, without importing threading

__all__ = ["prebuilt_ffi_arguments", "routine_layout_literal"]

# cffi parses with one pycparser parser per process (not thread-safe): the kernels' and a
# routine library's tables may be made in two threads at once (a cold model build)
_LOCK = _new_lock()


def prebuilt_ffi_arguments(cdef: str) -> dict | None:
    """The declarations ``cdef`` parsed once, at build time, for cffi's out-of-line ABI mode.

    cffi parses ``cdef`` text with pycparser, whose first use in a process costs ~15 ms; its
    out-of-line ABI mode (``ffi.set_source(name, None)`` + ``ffi.emit_python_code``) instead
    writes the parsed type tables as a module ``ffi = _cffi_backend.FFI(name, _version=…,
    _types=b"…", _globals=(…))``.  The library stores those literal arguments in its layout
    (as JSON: bytes as latin-1 text) and the loader builds the FFI from them without parsing
    and without executing any file (`nhcontrol.compiled.cbackend`).  None when cffi is
    unavailable or writes another form (the loader then parses ``cdef``).
    """
    try:
        import cffi  # noqa: F401
    except ImportError:
        return None
    with _LOCK:
        return _prebuilt(cdef)


def routine_layout_literal(key: str, generator: str, cdef: str) -> str:
    """The C string literal of a routine library's layout (``nhc_layout``): its ``key``, its
    ``generator`` version and its declarations ``cdef``, with cffi's parsed tables
    (`prebuilt_ffi_arguments`) when they can be made; what replaces ``NHC_LAYOUT`` in the
    routine's C source."""
    import json

    layout: dict = {"key": key, "generator": generator, "cdef": cdef}
    ffi_args = prebuilt_ffi_arguments(cdef)
    if ffi_args is not None:
        layout["ffi"] = ffi_args
    return json.dumps(json.dumps(layout, sort_keys=True))


def _prebuilt(cdef: str) -> dict | None:
    import ast
    import os
    import tempfile

    import cffi

    ffi = cffi.FFI()
    ffi.cdef(cdef)
    ffi.set_source("_nhc_kernels", None)
    fd, tmp = tempfile.mkstemp(suffix=".py")
    os.close(fd)
    try:
        # what `ffi.emit_python_code(tmp)` writes, without its "generating <file>" line: no
        # redirection of sys.stdout, which is process-wide (two threads redirecting at once can
        # leave it redirected for good: a cold model build runs this in two threads)
        from cffi.recompiler import make_py_source

        make_py_source(ffi, "_nhc_kernels", tmp, verbose=False)
        with open(tmp, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except Exception:  # pragma: no cover - another cffi version: parse at load time instead
        return None
    finally:
        os.unlink(tmp)
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and [getattr(t, "id", None) for t in node.targets] == ["ffi"]):
            call = node.value
            try:
                name = ast.literal_eval(call.args[0])
                kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
            except (ValueError, IndexError):  # pragma: no cover
                return None
            return {"name": name, "kwargs": {k: _jsonable(v) for k, v in kw.items()}}
    return None  # pragma: no cover


def _jsonable(v: object) -> object:
    """bytes → ``{"b": latin-1 text}``, tuples → lists (inverse: ``cbackend._from_json``)."""
    if isinstance(v, bytes):
        return {"b": v.decode("latin-1")}
    if isinstance(v, (tuple, list)):
        return [_jsonable(e) for e in v]
    return v
