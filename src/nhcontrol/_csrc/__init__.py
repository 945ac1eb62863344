"""The C text of nhcontrol's model-independent routine libraries, and their file names.

Three generic libraries serve every model: the compiled Steps 1-7 of the third linearization
procedure (`point`, used by `nhcontrol.linearization._cpoint`), the MPC condensing
(`condense`, `nhcontrol.design._ccondense`) and the RTI node work (`rti`,
`nhcontrol.design._crti`). Their text lives here, in modules of plain strings that import
nothing outside this package, so that ``setup.py`` can read them without NumPy or SymPy and
compile the libraries when nhcontrol is installed (`build_shipped`): the first model a user
builds then compiles only its own kernels, as acados ships its solver libraries compiled and
generates only the model's code. A library missing from the installation (no compiler at
install time, a build that failed, a routine changed since) is compiled into the kernel cache
on first use, as before (`nhcontrol.compiled.cbackend.load_or_build_routine`).

A library's file name is ``<STEM>_<key[:24]>.<VERSION>.<platform>.so`` with ``key`` the
sha256 of ``VERSION + "\\n" + C_SOURCE``: a shipped library of another text of the routine is
never found, and its layout (``nhc_layout``, checked on opening) names the full key.
"""

from __future__ import annotations

import os
import sys

UNIX_FLAGS = ["-O1", "-g0", "-std=c99", "-ffp-contract=off", "-fno-fast-math", "-fno-lto", "-w"]
"""The C compiler flags of every generated library on Unix (``-O1``: as fast as ``-O2`` on the
straight-line kernels and half their compile time; a routine's ``OPTIMISE`` replaces it; no
fast-math, no contraction: the numbers of the Python kernels)."""

MSVC_FLAGS = ["/O2", "/fp:precise", "/w"]
"""The flags with MSVC."""

ROUTINES = ("point", "condense", "rti")
"""The routine modules of this package, in the order they are built."""

def compiler_flags(compiler_type: str, optimise: str | None = None) -> list[str]:
    """The flags of a library's compilation: `MSVC_FLAGS` for MSVC, else `UNIX_FLAGS` with
    ``optimise`` (``"-O3"``, say) in place of ``-O1``."""
    if compiler_type == "msvc":
        return list(MSVC_FLAGS)
    return [optimise if (optimise and f == "-O1") else f for f in UNIX_FLAGS]


RECORD_SUFFIX = ".sha256"
"""A shipped library's record: the sha256 hex digest of its bytes (`verify_shipped`)."""


def platform_tag() -> str:
    """``sysconfig.get_platform()`` with ``-`` and ``.`` as ``_`` (part of a library's file name);
    on Linux read from ``os.uname()`` as sysconfig does there, without importing sysconfig."""
    if (sys.platform == "linux" and hasattr(os, "uname") and "_PYTHON_HOST_PLATFORM" not in os.environ
            and os.uname().sysname == "Linux"):
        plat = "linux-" + os.uname().machine.replace(" ", "_").replace("/", "-")
    else:
        import sysconfig

        plat = sysconfig.get_platform()
    return plat.replace("-", "_").replace(".", "_")


def library_suffix() -> str:
    """``<platform>.so`` (``.dll`` on Windows): the end of every shared library's file name in
    the cache (the kernels, the routines)."""
    return platform_tag() + (".dll" if sys.platform == "win32" else ".so")


def routine_key(version: str, source: str) -> str:
    """The cache key of a routine library: sha256 of ``version``, a newline and ``source``."""
    import hashlib

    return hashlib.sha256((version + "\n" + source).encode()).hexdigest()


def library_name(stem: str, key: str, version: str) -> str:
    """``<stem>_<key[:24]>.<version>.<platform>.so``: the file name of the routine library of
    cache key ``key``, in the kernel cache and in the installed package alike."""
    return f"{stem}_{key[:24]}.{version}.{library_suffix()}"


def file_name(stem: str, version: str, source: str) -> str:
    """`library_name` of the routine of C text ``source``."""
    return library_name(stem, routine_key(version, source), version)


def build_shipped(out_dir: str, compile_library, layout_literal) -> list[str]:
    """Compile the routine libraries into ``out_dir`` (``setup.py``, when nhcontrol is
    installed); returns the files written.

    ``compile_library(text, path, optimise)`` compiles the C ``text`` into the shared library
    ``path`` (``optimise``: the flag replacing ``-O1``, or None); ``layout_literal(key,
    version, cdef)`` is `nhcontrol.compiled._ffi_tables.routine_layout_literal`. Each library
    is written with its record ``<file>.sha256`` (`RECORD_SUFFIX`), which the loader checks
    before opening it (`nhcontrol.compiled.cbackend.verify_shipped`)."""
    import hashlib
    import importlib

    written = []
    os.makedirs(out_dir, exist_ok=True)
    for name in ROUTINES:
        mod = importlib.import_module(f"{__name__}.{name}")
        key = routine_key(mod.VERSION, mod.C_SOURCE)
        path = os.path.join(out_dir, library_name(mod.STEM, key, mod.VERSION))
        text = mod.C_SOURCE.replace("NHC_LAYOUT", layout_literal(key, mod.VERSION, mod.CDEF))
        compile_library(text, path, mod.OPTIMISE)
        with open(path, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
        with open(path + RECORD_SUFFIX, "w", encoding="ascii") as fh:
            fh.write(digest + "\n")
        written += [path, path + RECORD_SUFFIX]
    return written


def distutils_compile_library(text: str, path: str, optimise: str | None) -> None:
    """Compile the C ``text`` into the shared library ``path`` with distutils' compiler (as
    setuptools provides it), the flags of `UNIX_FLAGS` (``optimise`` replacing ``-O1``) or
    `MSVC_FLAGS`: the compiler of ``setup.py`` (`build_shipped`)."""
    import shutil
    import tempfile

    import setuptools  # noqa: F401  (provides ``distutils`` on Python >= 3.12)
    from distutils.ccompiler import new_compiler
    from distutils.sysconfig import customize_compiler

    cc = new_compiler()
    customize_compiler(cc)
    msvc = cc.compiler_type == "msvc"
    flags = compiler_flags(cc.compiler_type, optimise)
    tmp = tempfile.mkdtemp(prefix="nhc_setup_")
    try:
        src = os.path.join(tmp, "routine.c")
        with open(src, "w", encoding="ascii") as fh:
            fh.write(text)
        objs = cc.compile([src], output_dir=tmp, extra_postargs=flags)
        cc.link_shared_object(objs, path, libraries=[] if msvc else ["m"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
