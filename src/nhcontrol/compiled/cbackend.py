"""The C kernel back-end: build (system C compiler), cache (hash-checked) and call.

* **Build.**  `nhcontrol.compiled.ccodegen.generate_c` prints the translation units;
  they are compiled *in parallel* (one compiler process per core) with setuptools' compiler
  machinery (``distutils.ccompiler`` as shipped by setuptools: it finds the compiler Python
  was built with, or ``$CC``, and knows how to make a shared library on every platform) and
  linked into one shared library; on Linux without compiler variables in the environment the
  same two commands are made from `sysconfig` directly (`_SysconfigCompiler`, tested equal to
  distutils'), which spares the 0.05 s import of setuptools.  Flags: ``-O1 -std=c99 -ffp-contract=off -fno-fast-math``
  (``-O1``: as fast as ``-O2`` on these straight-line kernels and half the compile time; no
  fast-math, no fused multiply-add contraction: the C kernels equal the Python kernels
  to the last bit).
* **Load and call.**  cffi in ABI mode (``ffi.dlopen`` of the library, declarations from
  the library's own layout string, read with ctypes; the type tables cffi parsed at build
  time are stored there too, so loading runs no C parser): no Python extension module has to
  be built, so the chunks can be compiled in parallel by ourselves, and the library does not
  depend on the Python version.  Arguments are passed with ``ffi.from_buffer`` (no copies), the GIL is
  released during a call.
* **Cache.**  ``nhc_<key>.<C_GENERATOR_VERSION>.<platform>.so`` next to the Python kernels,
  with a sha256 record ``<library>.sha256`` written together with it and checked before
  every ``dlopen``; a library that fails the check is removed and rebuilt (one warning).
"""

from __future__ import annotations

import os
import sys
from _thread import allocate_lock as _new_lock   # threading.Lock, without importing threading
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .._util.debris import claim, remove_stale
from .._util.errors import CacheError, ModelError
from . import cache as _cache
from .. import _csrc
from .._csrc import RECORD_SUFFIX as _RECORD_SUFFIX
from .._csrc import library_suffix, platform_tag
from ._layout import C_GENERATOR_VERSION

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

ENV_BACKEND = "NHCONTROL_BACKEND"
"""Environment variable choosing the kernel back-end: ``c`` or ``python`` (unset: ``c`` when a
C compiler works, else ``python`` with one warning)."""
BACKENDS = ("c", "python")


def requested_backend(backend: str | None = None) -> str:
    """``"c"``, ``"python"`` or ``"auto"`` from ``backend`` or ``$NHCONTROL_BACKEND``.

    Raises
    ------
    ModelError
        For any other value.
    """
    src = "backend" if backend is not None else ENV_BACKEND
    value = backend if backend is not None else os.environ.get(ENV_BACKEND, "")
    v = str(value).strip().lower()
    if v in ("", "auto"):
        return "auto"
    if v not in BACKENDS:
        raise ModelError(f"{src}={value!r} is not a kernel back-end; use 'c' (compiled C kernels), "
                         f"'python' (generated Python kernels) or leave it unset (C when a compiler works)")
    return v


def library_path(key: str, directory: Path) -> Path:
    """``<directory>/nhc_<key>.<C generator version>.<platform>.so`` (``.dll`` on Windows)."""
    return _cache._path(library_file(key, directory))


def library_file(key: str, directory: str | os.PathLike) -> str:
    """`library_path()` as a ``str`` (loading a cached model imports no pathlib)."""
    return os.path.join(os.fspath(directory), f"nhc_{key}.{C_GENERATOR_VERSION}.{library_suffix()}")


# ----------------------------------------------------------------------- compiling
_NO_COMPILER: list[str] = []   # the reason, once a build found no working compiler


class CompilerUnavailable(ModelError):
    """No working C compiler (the Python kernels are used)."""


def cffi_problem() -> str | None:
    """Why cffi (which loads the C kernels) is unusable, or None."""
    try:
        import cffi  # noqa: F401
    except ImportError as exc:
        return f"cffi is not installed ({exc})"
    return None


#: environment variables through which distutils' ``customize_compiler`` changes the commands
_COMPILER_ENV = ("CC", "CXX", "CPP", "CFLAGS", "CPPFLAGS", "LDSHARED", "LDCXXSHARED", "LDFLAGS",
                 "AR", "ARFLAGS", "ARCHFLAGS")


class _SysconfigCompiler:
    """The two commands distutils' Unix compiler runs for a shared library, made from the
    same configuration without importing setuptools (about 0.05 s of every cold build): on
    Linux, when no environment variable of `_COMPILER_ENV` is set, ``customize_compiler`` sets
    ``compiler_so = CC CFLAGS CCSHARED`` and ``linker_so = LDSHARED`` from `sysconfig` (tested
    equal to distutils' own where both exist); elsewhere distutils builds (`_compiler`)."""

    compiler_type = "unix"

    def __init__(self, compiler_so: list[str], linker_so: list[str]) -> None:
        self.compiler_so, self.linker_so = compiler_so, linker_so

    @classmethod
    def from_sysconfig(cls) -> "_SysconfigCompiler | None":
        if not sys.platform.startswith("linux") or any(v in os.environ for v in _COMPILER_ENV):
            return None
        import shlex
        import sysconfig

        cc, cflags, ccshared, ldshared = (sysconfig.get_config_var(v)
                                          for v in ("CC", "CFLAGS", "CCSHARED", "LDSHARED"))
        if not all(isinstance(v, str) for v in (cc, cflags, ccshared, ldshared)) or not cc.strip():
            return None
        return cls(shlex.split(cc) + shlex.split(cflags) + shlex.split(ccshared),
                   shlex.split(ldshared))

    @staticmethod
    def _run(argv: list[str]) -> None:
        import subprocess

        done = subprocess.run(argv, check=False)      # (its messages on stderr, as distutils')
        if done.returncode != 0:
            raise OSError(f"command {argv[0]!r} failed with exit code {done.returncode}")

    def compile(self, sources: list[str], output_dir: str, extra_postargs: list[str]) -> list[str]:
        os.makedirs(output_dir, exist_ok=True)
        objs = []
        for src in sources:
            obj = os.path.join(output_dir, os.path.splitext(os.path.basename(src))[0] + ".o")
            self._run(self.compiler_so + ["-c", src, "-o", obj] + list(extra_postargs))
            objs.append(obj)
        return objs

    def link_shared_object(self, objects: list[str], output: str, libraries: list[str]) -> None:
        self._run(self.linker_so + list(objects) + [f"-l{lib}" for lib in libraries]
                  + ["-o", output])


def _compiler() -> tuple[Any, tuple[type[BaseException], ...]]:
    """A compiler object (`_SysconfigCompiler` where it applies, else distutils' own,
    customised) and the exceptions its failures raise; ImportError when distutils is needed
    and missing."""
    sc = _SysconfigCompiler.from_sysconfig()
    if sc is not None:
        return sc, (OSError,)
    import setuptools  # noqa: F401  (provides ``distutils`` on Python >= 3.12)
    from distutils.ccompiler import new_compiler
    from distutils.errors import CCompilerError, DistutilsError
    from distutils.sysconfig import customize_compiler

    cc = new_compiler()
    customize_compiler(cc)
    return cc, (DistutilsError, CCompilerError, OSError)


def compiler_problem() -> str | None:
    """Why no C compiler can be run on this machine, or None: the executable the build would
    call (``$CC``, else the compiler Python was built with) is looked up on ``PATH`` before any C
    source is generated, so that a machine without a compiler loads the Python kernels from the
    cache without deriving the equations again (the C source is printed from them)."""
    if _NO_COMPILER:
        return _NO_COMPILER[0]
    try:
        cc, _ = _compiler()
    except ImportError as exc:  # pragma: no cover - setuptools is a build requirement
        _NO_COMPILER.append(f"setuptools' compiler machinery is not importable ({exc})")
        return _NO_COMPILER[0]
    import shutil

    exe = (getattr(cc, "compiler_so", None) or [None])[0]
    if cc.compiler_type != "msvc" and exe is not None and not shutil.which(str(exe)):
        _NO_COMPILER.append(f"no C compiler found ({exe!s} is not an executable on PATH)")
        return _NO_COMPILER[0]
    return None


def _workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def compile_library(units: list[str], out: Path, workers: int | None = None,
                    optimise: str | None = None, late: "Callable[[], list[str]] | None" = None) -> None:
    """Compile the translation units ``units`` in parallel and link them into ``out``.

    ``optimise`` (``"-O2"``, say) replaces the ``-O1`` of the Unix flags (MSVC: ``/O2``
    always); the other flags (no fast-math, no contraction) stay. ``late()`` gives more units,
    made by the calling thread while the compiler already works on ``units`` (a routine's
    layout, whose cffi tables take tens of milliseconds to make: `prebuild_routine`).

    Raises
    ------
    CompilerUnavailable
        When no compiler can be run or compiling fails.
    """
    if _NO_COMPILER:
        raise CompilerUnavailable(_NO_COMPILER[0])
    import shutil                                        # (here: loading a cached library needs none)
    import tempfile

    try:
        cc0, errors = _compiler()
    except ImportError as exc:  # pragma: no cover - setuptools is a build requirement
        _NO_COMPILER.append(f"setuptools' compiler machinery is not importable ({exc})")
        raise CompilerUnavailable(_NO_COMPILER[0]) from exc

    def compiler():
        return cc0 if isinstance(cc0, _SysconfigCompiler) else _compiler()[0]

    remove_stale(out.parent, "nhc_build_*")          # left by builds that were killed
    build = _cache._path(tempfile.mkdtemp(prefix="nhc_build_", dir=str(out.parent)))
    claim(build)
    try:
        sources: list[str] = []

        def add(text: str) -> int:
            i = len(sources)
            src = build / f"u{i}.c"
            src.write_text(text, encoding="ascii")
            sources.append(str(src))
            return i

        for text in units:
            add(text)
        flags = _csrc.compiler_flags(cc0.compiler_type, optimise)
        order = sorted(range(len(sources)), key=lambda i: -len(units[i]))   # largest first

        def one(i: int) -> list[str]:
            return compiler().compile([sources[i]], output_dir=str(build / "obj"), extra_postargs=flags)

        try:
            objs = _compile_units(one, order, lambda: [add(t) for t in (late() if late else ())],
                                  workers or _workers())
            libs = [] if cc0.compiler_type == "msvc" else ["m"]
            tmp = build / ("lib" + out.suffix)
            cc0.link_shared_object([o for i in range(len(sources)) for o in objs[i]], str(tmp), libraries=libs)
        except errors as exc:
            reason = f"the C compiler failed ({type(exc).__name__}: {exc})"
            exe = (getattr(cc0, "compiler_so", None) or [None])[0]
            if exe is not None and not shutil.which(str(exe)):
                reason = f"no C compiler found ({exe}: {exc})"
                _NO_COMPILER.append(reason)   # do not try again in this process
            raise CompilerUnavailable(reason) from exc
        blob = tmp.read_bytes()
        _cache.write_artefact(out, blob)
    finally:
        shutil.rmtree(build, ignore_errors=True)


def _compile_units(one: Callable[[int], list[str]], order: list[int],
                   late_units: Callable[[], list[int]], workers: int) -> dict[int, list[str]]:
    """``{unit: objects}``: ``one(i)`` for the units ``order`` and, made meanwhile by this
    thread, those of ``late_units()``, in a pool of ``workers`` threads. A unit the pool cannot
    take runs in this thread: when the interpreter is exiting, concurrent.futures starts no
    work (a background build that a process's end waits for: `prebuild_routines`,
    `nhcontrol.linearization._cspecial.routine_soon`)."""
    try:
        from concurrent.futures import ThreadPoolExecutor

        pool: Any = ThreadPoolExecutor(max_workers=workers)
    except RuntimeError:
        pool = None
    futures: dict[int, Any] = {}
    objs: dict[int, list[str]] = {}

    def run(i: int) -> None:
        if pool is not None:
            try:
                futures[i] = pool.submit(one, i)
                return
            except RuntimeError:          # the interpreter is exiting
                pass
        objs[i] = one(i)

    try:
        for i in order:
            run(i)
        for i in late_units():
            run(i)
        objs.update((i, f.result()) for i, f in futures.items())
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return objs


# ----------------------------------------------------------------------- loading and calling
_FFI_LOCK = _new_lock()


class CKernels:
    """The functions of a loaded kernel library, with the calling conventions of the Python
    kernels: ``one[name](*arrays) -> tuple`` of read-only outputs (arrays: float64, 1-D,
    contiguous, finite-checked in C) and ``many[name](*arrays2d, N) -> tuple`` of ``(N, ...)``
    outputs (views of one ``(N, size)`` buffer).
    """

    def __repr__(self) -> str:
        return f"CKernels({len(getattr(self, 'one', {}) or {})} functions)"

    def __init__(self, path: str | Path, key: str, built: bool = False) -> None:
        _cache.verify_artefact(path)   # immediately before dlopen; the cache directory is private
        with _FFI_LOCK:
            raw, layout = _read_layout(path)
            if layout.get("key") != key or layout.get("generator") != C_GENERATOR_VERSION:
                raise CacheError(f"the kernel library {path} belongs to key {str(layout.get('key'))[:12]}... "
                                 f"(generator {layout.get('generator')}), not to {key[:12]}...")
            ffi = _ffi_of(layout)
            lib = ffi.dlopen(str(path))
        self.path = path
        self.layout = layout
        #: False when the library was built by this call's caller, True when found in the cache
        self.loaded_from_cache = not built
        self._ffi, self._lib, self._raw = ffi, lib, raw
        self.one: dict[str, Callable[..., tuple]] = {}
        self.many: dict[str, Callable[..., tuple]] = {}
        #: one point, the flat output buffer itself; ``split[name](buffer)`` gives the outputs
        #: of ``one[name]`` (read-only views of the buffer)
        self.raw: dict[str, Callable[..., np.ndarray]] = {}
        self.split: dict[str, Callable[[np.ndarray], tuple]] = {}
        #: N points, the ``(N, size)`` output buffer itself (rows: the buffers of ``raw``)
        self.raw_many: dict[str, Callable[..., np.ndarray]] = {}
        #: True when the blocked entry points ``nhc_<name>_b`` (vectorized over blocks of points,
        #: `nhcontrol.compiled.ccodegen.SIMD_FUNCTIONS`) are used for ``many``/``raw_many``:
        #: the library has them and the processor runs them (``nhc_simd_ok()``)
        self.simd = bool(getattr(lib, "nhc_simd_ok")()) if "int nhc_simd_ok(void);" in layout["cdef"] else False
        for name, spec in layout["functions"].items():
            self.one[name] = self._make_one(getattr(lib, f"nhc_{name}"), spec, name)
            self.raw[name] = self._make_raw(getattr(lib, f"nhc_{name}"), spec)
            blocked = self.simd and spec.get("block")
            self.many[name] = self._make_many(getattr(lib, f"nhc_{name}_b" if blocked else f"nhc_{name}_n"),
                                              spec, name)

    def _make_one(self, fn: Any, spec: dict, name: str) -> Callable[..., tuple]:
        fb = self._ffi.from_buffer
        dbl = self._ffi.typeof("double[]")     # resolved once (not per argument and call)
        size = spec["size"]
        # per output: a shared read-only empty array, a slice (1-D) or a reshaped slice
        outs: list = []
        for at, sz, shape in spec["outputs"]:
            if sz == 0:
                empty = np.zeros(tuple(shape))
                empty.flags.writeable = False
                outs.append((empty, 0, None))
            else:
                outs.append((at, at + sz, tuple(shape) if len(shape) > 1 else None))
        zeros = np.zeros

        def split(o: np.ndarray) -> tuple:
            o.flags.writeable = False
            return tuple([a if b == 0 else (o[a:b] if shape is None else o[a:b].reshape(shape))
                          for a, b, shape in outs])

        def one(*arrays: np.ndarray) -> tuple:
            o = zeros(size)
            rc = fn(*[fb(dbl, a) for a in arrays], fb(dbl, o))
            if rc:
                raise FloatingPointFlags(rc)
            return split(o)

        self.split[name] = split
        return one

    def _make_raw(self, fn: Any, spec: dict) -> Callable[..., np.ndarray]:
        fb = self._ffi.from_buffer
        dbl = self._ffi.typeof("double[]")
        size = spec["size"]
        zeros = np.zeros

        def raw(*arrays: np.ndarray) -> np.ndarray:
            o = zeros(size)
            rc = fn(*[fb(dbl, a) for a in arrays], fb(dbl, o))
            if rc:
                raise FloatingPointFlags(rc)
            return o

        return raw

    def _make_many(self, fn: Any, spec: dict, name: str) -> Callable[..., tuple]:
        fb = self._ffi.from_buffer
        dbl = self._ffi.typeof("double[]")
        size = spec["size"]
        outs = [(at, at + sz, tuple(shape)) for at, sz, shape in spec["outputs"]]

        def raw_many(*args: Any) -> np.ndarray:
            *arrays, N = args
            o = np.zeros((N, size))
            call: list = [N]
            for a in arrays:
                a = np.ascontiguousarray(a, dtype=np.float64)
                call += [fb(dbl, a), a.shape[1] if a.shape[0] > 1 else 0]
            call.append(fb(dbl, o))
            if N:
                rc = fn(*call)
                if rc:
                    raise MemoryError("the C kernel could not allocate its work array")
            return o

        def many(*args: Any) -> tuple:
            o = raw_many(*args)
            N = o.shape[0]
            return tuple([o[:, a:b].reshape((N,) + shape) for a, b, shape in outs])

        self.raw_many[name] = raw_many
        return many


def _read_layout(path: str | Path) -> tuple[Any, dict]:
    """The library's handle (ctypes, kept open while the kernels live) and its JSON layout
    ``nhc_layout``, read without cffi's declaration parser."""
    import ctypes
    import json

    try:
        raw = ctypes.CDLL(str(path))
        text = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(raw, "nhc_layout")))
        return raw, json.loads(text.decode("ascii"))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise CacheError(f"the kernel library {path} has no readable layout ({exc})") from exc


def _from_json(v: Any) -> Any:
    """Inverse of ``ccodegen._jsonable``: ``{"b": text}`` → bytes, lists → tuples."""
    if isinstance(v, dict):
        return v["b"].encode("latin-1")
    if isinstance(v, list):
        return tuple(_from_json(e) for e in v)
    return v


def _ffi_of(layout: dict) -> Any:
    """The FFI of a library: from the type tables cffi wrote at build time (out-of-line ABI
    mode, no parsing: `nhcontrol.compiled.ccodegen.prebuilt_ffi_arguments`), else by
    parsing the declarations ``layout["cdef"]``."""
    pre = layout.get("ffi")
    if isinstance(pre, dict):
        try:
            import _cffi_backend

            kwargs = {str(k): _from_json(v) for k, v in pre["kwargs"].items()}
            return _cffi_backend.FFI(str(pre["name"]), **kwargs)
        except Exception:   # another cffi version than the one that built the library
            pass
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(layout["cdef"])
    return ffi


ENV_SHIPPED = "NHCONTROL_SHIPPED_ROUTINES"
"""Environment variable: ``0`` ignores the routine libraries compiled when nhcontrol was
installed (`shipped_routine`), so that they are compiled into the kernel cache on first use."""

SHIPPED_DIR: str | None = os.path.dirname(os.path.abspath(_csrc.__file__))
"""Where ``setup.py`` puts the routine libraries it compiles when nhcontrol is installed
(`nhcontrol._csrc.build_shipped`); None switches them off in this process."""


def shipped_routine(path: str) -> str | None:
    """The installed copy of the routine library ``path`` (a file of the kernel cache): the file
    of the same name, with its record, in `SHIPPED_DIR`; None when there is none or
    ``$NHCONTROL_SHIPPED_ROUTINES`` is ``0``. The name holds the routine's key and version, so
    a library of another text of the routine is never found."""
    if SHIPPED_DIR is None or not _shipped_wanted():
        return None
    p = os.path.join(SHIPPED_DIR, os.path.basename(path))
    return p if os.path.isfile(p) and os.path.isfile(p + _RECORD_SUFFIX) else None


def _shipped_wanted() -> bool:
    """``$NHCONTROL_SHIPPED_ROUTINES``: ``0`` False, ``1`` or unset True.

    Raises
    ------
    ModelError
        For any other value."""
    v = os.environ.get(ENV_SHIPPED, "").strip()
    if v in ("", "1"):
        return True
    if v == "0":
        return False
    raise ModelError(f"{ENV_SHIPPED}={v!r} is not 0 or 1; use 0 to ignore the routine libraries "
                     f"compiled when nhcontrol was installed, 1 (or leave it unset) to use them")


def _shipped_module(name: str, directory: str) -> bool:
    """Whether routine module ``name`` (`PREBUILT_ROUTINES`) has its library installed with
    nhcontrol (nothing to compile into the cache directory ``directory``)."""
    if SHIPPED_DIR is None:
        return False
    import importlib

    return shipped_routine(importlib.import_module(name).library_file(directory)) is not None


def verify_shipped(path: str) -> None:
    """Check an installed routine library against the record ``setup.py`` wrote beside it (the
    sha256 of its bytes) before it is opened.

    Installed files are as trusted as nhcontrol's own modules, which Python imports from the
    same directory, so they need not be owned by the user as the kernel cache's artefacts
    must; a library or record writable by everybody is refused all the same.

    Raises
    ------
    CacheError
        A missing or malformed record, a world-writable file, or bytes that do not match.
    """
    import stat

    from .._util.sha import sha256_hex

    record = path + _RECORD_SUFFIX
    try:
        for f in (path, record):
            mode = os.stat(f).st_mode
            if not stat.S_ISREG(mode) or mode & stat.S_IWOTH:
                raise CacheError(f"the installed routine library file {f} is not a regular file "
                                 f"or is writable by everybody; reinstall nhcontrol")
        with open(record, encoding="ascii") as fh:
            want = fh.read().strip()
        with open(path, "rb") as fh:
            got = sha256_hex(fh.read())
    except (OSError, UnicodeDecodeError) as exc:
        raise CacheError(f"the installed routine library {path} cannot be read ({exc})") from exc
    if got != want:
        raise CacheError(f"the installed routine library {path} does not match its record "
                         f"(sha256 {got[:12]}... != {want[:12]}...); reinstall nhcontrol")


def open_routine(path: str, key: str, generator: str) -> tuple[Any, Any, Any]:
    """Open a generic routine library (not per model: the one-point procedure, the MPC
    condensing, the RTI): verify its sha256 record immediately before opening (in the kernel
    cache, `nhcontrol.compiled.cache.verify_artefact`; installed with nhcontrol,
    `verify_shipped`), check that its layout names ``key`` and ``generator``; ``(ctypes
    handle, FFI, cffi library)``.

    Raises
    ------
    CacheError
        A record that does not match, or a library of another version of the routine.
    """
    if SHIPPED_DIR is not None and os.path.dirname(os.path.abspath(path)) == SHIPPED_DIR:
        verify_shipped(path)
    else:
        _cache.verify_artefact(path)     # immediately before opening (private directory)
    raw, layout = _read_layout(path)
    if layout.get("key") != key or layout.get("generator") != generator:
        raise CacheError(f"the library {path} belongs to another version of the routine")
    ffi = _ffi_of(layout)
    return raw, ffi, ffi.dlopen(str(path))


def load_or_build_routine(path: str, make: Callable[[str], Any], source: Callable[[], str], *,
                          what: str, fallback: str, optimise: str | None = None) -> Any:
    """``make(path)`` of a generic routine library, built from ``source()`` into ``path`` when
    it is absent or unusable (discarded with a warning); None, with one warning naming
    ``fallback`` (what runs instead), when no compiler or no usable cache can give it. The
    library installed with nhcontrol (`shipped_routine`) comes first; one that cannot be
    opened gives one warning and the kernel cache's."""
    shipped = shipped_routine(path)
    if shipped is not None:
        try:
            return make(shipped)
        except (CacheError, OSError, ValueError, KeyError, AttributeError) as exc:
            _cache.warn_once("artefact", shipped, f"ignoring the installed {what} {shipped} "
                                                  f"({exc}); it is compiled into the kernel cache")
    lib = None
    try:
        if os.path.exists(path) or os.path.exists(_cache._record(path)):
            try:
                lib = make(path)
            except (CacheError, OSError, ValueError, KeyError) as exc:
                _cache.discard_artefact(path)
                _cache.warn_once("artefact", path, f"discarded the unusable {what} {path} "
                                                   f"({exc}); it is rebuilt")
        if lib is None:
            compile_library([source()], _cache._path(path), workers=1, optimise=optimise)
            lib = make(path)
    except (CompilerUnavailable, CacheError, OSError, ValueError, KeyError, AttributeError) as exc:
        _cache.warn_once("backend", what, f"{fallback}: the {what} cannot be built or loaded "
                                          f"({exc})")
        lib = None
    return lib


class RoutineLibrary:
    """A generic routine library (one per cache directory, not per model) of the C text
    ``source`` (``NHC_LAYOUT`` in it is replaced by the layout string): its cache key (sha256
    of ``version`` and ``source``), the file ``<directory>/<stem>_<key>.<version>.<platform>``,
    and `load`, which opens the verified library of a (trusted) cache directory, built on first
    use with ``optimise``; None, with one warning naming ``fallback``, when it cannot be.
    ``NHCONTROL_BACKEND=python`` asks for the fallback."""

    def __init__(self, stem: str, version: str, source: str, cdef: str, *, what: str,
                 fallback: str, optimise: str | None = None) -> None:
        self.stem, self.version, self.source, self.cdef = stem, version, source, cdef
        self.what, self.fallback, self.optimise = what, fallback, optimise
        self._lock = _new_lock()
        _ROUTINE_LIBRARIES.append(self)
        self._loaded: dict[str, Any] = {}
        self._key = ""

    def __repr__(self) -> str:
        from .._util.reprs import object_repr

        return object_repr(self, stem=self.stem, version=self.version, what=self.what,
                           loaded=len(self._loaded))

    @property
    def key(self) -> str:
        if not self._key:
            from .._util.sha import sha256_hex

            self._key = sha256_hex((self.version + "\n" + self.source).encode())
        return self._key

    def _text(self) -> str:
        return self.source.replace("NHC_LAYOUT", self._layout_literal())

    def _layout_literal(self) -> str:
        from ._ffi_tables import routine_layout_literal

        return routine_layout_literal(self.key, self.version, self.cdef)

    def _open(self, path: str) -> tuple[str, Any, Any]:
        raw, ffi, lib = open_routine(path, self.key, self.version)
        return path, ffi, lib

    def load(self, cache_dir: str | os.PathLike | None = None,
             fresh: bool = False) -> "tuple[str, Any, Any] | None":
        """``(path, FFI, library)`` of the cache directory ``cache_dir`` (default: the user's),
        or None (the fallback runs). ``fresh``: open (and check) the library again even if this
        process has it already."""
        if os.environ.get(ENV_BACKEND, "").lower() == "python":
            return None
        try:
            directory = _cache.trusted_dir(cache_dir)
        except (CacheError, OSError) as exc:
            _cache.warn_once("backend", self.what, f"{self.fallback}: no cache directory ({exc})")
            return None
        with self._lock:
            if fresh or directory not in self._loaded:
                self._loaded[directory] = load_or_build_routine(
                    self._file(directory), self._open, self._text, what=self.what,
                    fallback=self.fallback, optimise=self.optimise)
            return self._loaded[directory]

    def _file(self, directory: str) -> str:
        return os.path.join(directory, _csrc.library_name(self.stem, self.key, self.version))

    def prebuild(self, directory: str) -> None:
        """Compile the library into the trusted cache directory ``directory`` ahead of its
        first use when it is absent (`prebuild_routine`; a cold model build starts it in the
        background, `prebuild_routines`)."""
        prebuild_routine(self._file(directory), self._text, self._lock, self._loaded, directory,
                         optimise=self.optimise, template=self.source, layout=self._layout_literal)


_OF_SOURCE: dict[str, "RoutineLibrary"] = {}


def routine_library(source: Any, *, what: str, fallback: str) -> RoutineLibrary:
    """The `RoutineLibrary` of the routine module ``source`` of `nhcontrol._csrc` (its
    ``STEM``, ``VERSION``, ``C_SOURCE``, ``CDEF`` and ``OPTIMISE``), made on first use, one per
    routine; ``what`` and ``fallback`` name it and what runs without it in warnings."""
    lib = _OF_SOURCE.get(source.STEM)
    if lib is None:
        lib = _OF_SOURCE[source.STEM] = RoutineLibrary(
            source.STEM, source.VERSION, source.C_SOURCE, source.CDEF, what=what,
            fallback=fallback, optimise=source.OPTIMISE)
    return lib


class FloatingPointFlags(ArithmeticError):
    """Floating-point exception flags of a one-point C kernel call (translated by the model)."""

    def __init__(self, flags: int) -> None:
        self.flags = flags
        if flags & 16:
            text = "the arguments contain NaN or inf"
        elif flags & 8:
            text = "out of memory"
        elif flags & 2:
            text = "ZeroDivisionError: division by zero (floating-point divide-by-zero flag)"
        elif flags & 1:
            text = "ValueError: math domain error (floating-point invalid-operation flag)"
        else:
            text = "OverflowError: math range error (floating-point overflow flag)"
        super().__init__(text)


def prebuild_routine(path: str, source: Callable[[], str], lock: Any, loaded: Any, key: str, *,
                     optimise: str | None = None, template: str | None = None,
                     layout: Callable[[], str] | None = None) -> None:
    """Compile a generic routine library into ``path`` ahead of its first use when it is
    absent, and nothing else: no loading, no warning (its first use, `load_or_build_routine`,
    loads it, or builds it and says why it cannot). ``lock`` is the routine module's lock,
    held meanwhile, so that a first use waits for this build instead of starting its own;
    ``loaded`` its table of loaded libraries (``key`` in it: nothing to do).

    With ``template`` (``source()`` is ``template`` with ``NHC_LAYOUT`` replaced by
    ``layout()``, the C literal of the layout) the compiler starts on the routine at once and
    the layout, made meanwhile, is compiled as a unit of its own (`split_layout`): the same
    library, ready sooner."""
    with lock:
        if (key in loaded or os.path.exists(path) or os.path.exists(_cache._record(path))
                or shipped_routine(path) is not None):
            return
        parts = split_layout(template) if template is not None and layout is not None else None
        if parts is None:
            compile_library([source()], _cache._path(path), workers=1, optimise=optimise)
            return
        body, unit = parts
        compile_library([body], _cache._path(path), workers=1, optimise=optimise,
                        late=lambda: [unit.replace("NHC_LAYOUT", layout())])


_LAYOUT_LINE = "NHC_API const char nhc_layout[] = NHC_LAYOUT;\n"


def split_layout(template: str) -> "tuple[str, str] | None":
    """A routine's C ``template`` as ``(routine, layout unit)``: the routine without the line
    ``NHC_API const char nhc_layout[] = NHC_LAYOUT;`` and a unit of that line after the
    template's own ``NHC_API`` definition block; None when the template has not exactly that
    form (then it is compiled whole)."""
    import re

    api = re.search(r"^#if defined\((?:_MSC_VER|_WIN32)\)\n#define NHC_API [^\n]*\n#else\n"
                    r"#define NHC_API[^\n]*\n#endif\n", template, re.M)
    if api is None or template.count(_LAYOUT_LINE) != 1 or template.count("nhc_layout") != 1:
        return None
    return template.replace(_LAYOUT_LINE, ""), api.group(0) + _LAYOUT_LINE


#: whether a cold model build compiles the missing routine libraries in the background
#: (`prebuild_routines`); False: each on its first use only (the test suite, whose many
#: throw-away caches would each get them)
PREBUILD = True

#: the routine modules whose ``prebuild(directory)`` a cold model build starts: each with the
#: module that must already be imported for it to be worth building (None: always) and who
#: waits for it: ``"build"`` the model build, before it returns; ``"first use"`` nobody but its
#: first use (which takes the routine module's lock, held by the build meanwhile); ``"idle"``
#: nobody, its user runs its numpy path until the library is there (`prebuild_pending`), and it
#: is compiled last, at a lower priority (`BACKGROUND_NICENESS`)
PREBUILT_ROUTINES: tuple[tuple[str, str | None, str], ...] = (
    ("nhcontrol.linearization._cpoint", None, "build"),                 # Steps 1-7 (any linearization)
    ("nhcontrol.design._ccondense", "nhcontrol.design", "first use"),   # MPC condensing (control design)
    ("nhcontrol.design._crti", "nhcontrol.design", "idle"),             # the RTI's node work (NMPC)
)
_ORDER = {"build": 0, "first use": 1, "idle": 2}


#: (cache directory, routine module) of the background builds not yet finished
_PENDING: set[tuple[str, str]] = set()

#: the `RoutineLibrary` objects made (a few module-level singletons)
_ROUTINE_LIBRARIES: list["RoutineLibrary"] = []


#: cache directory -> (routine modules whose background build started, their waiters): a
#: second `prebuild_routines` of the same directory (the recipe's early start, then the model
#: build) starts only what the first did not and waits for both
_STARTED: dict[str, tuple[set[str], list[Callable[[], Any]]]] = {}


def _after_fork_in_child() -> None:
    """A process forked while a background build (`prebuild_routines`) was under way has
    its locks held and its builds pending, but not the thread that would release them: it
    forgets them (a library it then needs is loaded if the parent finished it, else built)."""
    _PENDING.clear()
    _STARTED.clear()
    for lib in _ROUTINE_LIBRARIES:
        if lib._lock.locked():
            lib._lock = _new_lock()
    for name, _, _ in PREBUILT_ROUTINES:
        module = sys.modules.get(name)
        lock = getattr(module, "_LOCK", None)
        if lock is not None and lock.locked():
            module._LOCK = _new_lock()      # type: ignore[union-attr]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def prebuild_pending(directory: str, module: str) -> bool:
    """Whether a background build (`prebuild_routines`) of routine module ``module`` into the
    cache directory ``directory`` is under way: its user then keeps its fallback for now
    instead of waiting (a first control step does not wait for a compiler)."""
    return bool(_PENDING) and (os.path.realpath(directory), module) in _PENDING


def prebuild_routines(directory: str) -> Callable[[], None]:
    """Start compiling the model-independent routine libraries missing from ``directory`` in
    one background thread; returns the function that waits for those the model build waits
    for (``"build"`` in `PREBUILT_ROUTINES`; the others go on after it returns,
    `prebuild_pending`).

    A cold model build spends its first seconds in SymPy (one core); the C compiler runs in
    its own process, so on a machine with two cores these libraries, which the first
    linearization (and, once `nhcontrol.design` is imported, the first MPC step) would
    otherwise compile one after the other, are built meanwhile. Failures are silent here and
    reported by the routine's first use.

    A second call for the same directory in this process (`nhcontrol.compiled.recipe` starts
    the build before it calls the model's builder, then the model build asks again) starts
    only the routines the first did not, and its function waits for those of both."""
    if (not PREBUILD or requested_backend(None) == "python" or _workers() < 2
            or compiler_problem() is not None):
        return lambda: None      # (the model build reports a missing compiler, as before)
    import importlib
    import threading

    real = os.path.realpath(directory)
    started, waiters = _STARTED.setdefault(real, (set(), []))
    todo = sorted([(name, when) for name, needs, when in PREBUILT_ROUTINES
                   if (needs is None or needs in sys.modules) and name not in started
                   and not _shipped_module(name, real)],
                  key=lambda item: _ORDER[item[1]])        # the model build's first, idle ones last
    if not todo:
        return _wait_all(list(waiters))
    started.update(name for name, _ in todo)
    for name, when in todo:
        if when != "build":
            _PENDING.add((real, name))
    ready = threading.Event()

    def work() -> None:
        try:
            lowered = False
            for name, when in todo:
                if when != "build":
                    ready.set()
                if when == "idle" and not lowered:
                    lowered = True
                    _lower_thread_priority()
                try:
                    importlib.import_module(name).prebuild(directory)
                except Exception:  # noqa: BLE001 - reported by the routine's first use
                    pass
                finally:
                    _PENDING.discard((real, name))
        finally:
            ready.set()

    # (the model build waits for its own routines; the others may still be compiling at exit)
    start_background(work, "nhcontrol-prebuild",
                     wait_at_exit=any(when != "build" for _, when in todo))
    waiters.append(ready.wait)
    return _wait_all(list(waiters))


EXIT_WAIT_S = 60.0
"""How long a process that ends waits for a background build (`start_background`)."""


def start_background(work: Callable[[], None], name: str, *, wait_at_exit: bool = True) -> None:
    """Run ``work`` in a daemon thread called ``name``. ``wait_at_exit``: a process that ends
    meanwhile lets it finish (at most `EXIT_WAIT_S`), so that the cache holds the library it
    builds and the next process does not compile it on first use."""
    import threading

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    if wait_at_exit:
        import atexit

        atexit.register(thread.join, EXIT_WAIT_S)


BACKGROUND_NICENESS = 10
"""Niceness added to the background thread of `prebuild_routines` (Linux) before the ``"idle"``
builds of `PREBUILT_ROUTINES` (the RTI routines, about a second of ``-O3``): their compiler then
takes the CPU the process does not use, instead of a third of it from the first linearizations
and controllers of a cold start."""


def _lower_thread_priority() -> None:
    """Raise the calling thread's niceness by `BACKGROUND_NICENESS` (Linux: niceness is per
    thread and inherited by the processes it starts, so the compiler runs at that priority;
    elsewhere nothing: it would apply to the whole process)."""
    if sys.platform != "linux" or not hasattr(os, "setpriority"):
        return
    try:
        import threading

        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICENESS))
    except OSError:
        pass


def _wait_all(waiters: list[Callable[[], Any]]) -> Callable[[], None]:
    def wait() -> None:
        for w in waiters:
            w()
    return wait


__all__ = ["ENV_BACKEND", "BACKENDS", "requested_backend", "library_path", "compile_library", "CKernels",
           "CompilerUnavailable", "FloatingPointFlags", "cffi_problem", "open_routine",
           "load_or_build_routine", "RoutineLibrary", "prebuild_routine", "prebuild_routines", "prebuild_pending"]
