"""The model-independent routine libraries compiled when nhcontrol is installed
(``setup.py`` -> `nhcontrol._csrc.build_shipped`), and how nhcontrol finds, checks and refuses
them (`nhcontrol.compiled.cbackend.shipped_routine`, `verify_shipped`)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from nhcontrol import _csrc
from nhcontrol._util.errors import CacheError
from nhcontrol.compiled import cbackend
from nhcontrol.compiled._ffi_tables import routine_layout_literal
from nhcontrol.design import _ccondense, _crti
from nhcontrol.linearization import _cpoint

ROOT = Path(__file__).resolve().parents[1]
MODULES = {"point": _cpoint, "condense": _ccondense, "rti": _crti}

pytestmark = pytest.mark.c_compiler


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """The three libraries, built as ``setup.py`` builds them, into a folder of their own."""
    out = tmp_path_factory.mktemp("shipped")
    written = _csrc.build_shipped(str(out), _csrc.distutils_compile_library, routine_layout_literal)
    return str(out), written


def _forget_loaded():
    """Drop the libraries this process has loaded (each routine module keeps them per cache
    directory), so that the next use looks them up again."""
    _cpoint._LIBS.clear()
    _cpoint._FUNCS.clear()
    for module in (_ccondense, _crti):
        module._LIBS.clear()
        module._routine()._loaded.clear()


@pytest.fixture
def use_shipped(shipped, monkeypatch):
    monkeypatch.delenv(cbackend.ENV_SHIPPED, raising=False)
    monkeypatch.delenv("NHCONTROL_BACKEND", raising=False)
    monkeypatch.setattr(cbackend, "SHIPPED_DIR", shipped[0])
    _forget_loaded()
    yield shipped[0]
    _forget_loaded()


def test_the_installed_libraries_are_those_the_routine_modules_look_for(shipped):
    """One library per routine module, named as the module names its file in the kernel cache
    (its key and version), with a record of its sha256 and a layout that names the module's
    full key and carries cffi's parsed tables (no parsing when it is opened)."""
    out, written = shipped
    assert len(written) == 6
    for name, module in MODULES.items():
        path = os.path.join(out, os.path.basename(module.library_file("/nowhere")))
        assert path in written and path + _csrc.RECORD_SUFFIX in written
        cbackend.verify_shipped(path)
        _, layout = cbackend._read_layout(path)
        assert layout["key"] == module._routine().key and layout["generator"] == module.VERSION
        assert isinstance(layout.get("ffi"), dict)


def test_setup_builds_them_without_importing_nhcontrol_numpy_or_sympy(tmp_path):
    """``setup.py build_ext`` compiles the three libraries into the package of its build
    folder from ``nhcontrol/_csrc``, in a process that never imports nhcontrol, NumPy or SymPy
    (an isolated build environment has none of them)."""
    probe = ("import runpy, sys\n"
             "sys.argv = ['setup.py', '-q', 'build_ext', '--build-lib', sys.argv[1], "
             "'--build-temp', sys.argv[2]]\n"
             "runpy.run_path('setup.py', run_name='__main__')\n"
             "bad = [m for m in ('nhcontrol', 'numpy', 'sympy') if m in sys.modules]\n"
             "assert not bad, bad\n")
    env = {k: v for k, v in os.environ.items() if k != cbackend.ENV_SHIPPED}
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "lib"), str(tmp_path / "tmp")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    built = sorted(p.name for p in (tmp_path / "lib" / "nhcontrol" / "_csrc").iterdir())
    want = sorted(n for m in MODULES.values() for n in
                  (os.path.basename(m.library_file("/x")), os.path.basename(m.library_file("/x")) + ".sha256"))
    assert built == want
    assert "compiled 3 routine libraries" in done.stderr


def test_setup_without_a_compiler_installs_without_them(tmp_path):
    """No compiler at install (``CC`` names none): ``setup.py build_ext`` says why and goes on;
    nhcontrol then compiles the libraries into its cache on first use, or runs its numpy
    paths."""
    env = {k: v for k, v in os.environ.items() if k != cbackend.ENV_SHIPPED}
    env["CC"] = str(tmp_path / "no-such-cc")
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
                           "--build-temp", str(tmp_path / "tmp")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the routine libraries were not compiled at install" in done.stderr
    assert "no-such-cc" in done.stderr
    out = tmp_path / "lib" / "nhcontrol" / "_csrc"
    assert not out.exists() or not [p for p in out.iterdir() if p.name.startswith("nhc_")]


def test_the_installed_libraries_serve_without_compiling_anything(use_shipped, tmp_path, monkeypatch):
    """With the installed libraries, a cold model build starts no background build and the
    first linearization, condensing and RTI find their libraries there: nothing of the
    routines is compiled into the kernel cache, even with the background builds switched on."""
    from nhcontrol.linearization import linearize, suggest_partition
    from nhcontrol.models import sleigh as sl

    monkeypatch.setattr(cbackend, "PREBUILD", True)
    monkeypatch.setattr(cbackend, "_workers", lambda: 2)
    monkeypatch.setattr(cbackend, "_STARTED", {})
    compiled = []
    real = cbackend.compile_library
    monkeypatch.setattr(cbackend, "compile_library",
                        lambda units, out, *a, **k: (compiled.append(Path(out).name), real(units, out, *a, **k)))
    before = {t.ident for t in threading.enumerate()}
    cm = sl.build().compile(cache_dir=tmp_path, backend="c")
    assert not [t for t in threading.enumerate() if t.name == "nhcontrol-prebuild" and t.ident not in before]
    ref = sl.straight_motion(cm, 1.0)
    linearize(cm, ref, suggest_partition(cm, ref))
    d = str(tmp_path)
    for lib in (_cpoint._library(d), _ccondense.condense_library(tmp_path), _crti.rti_library(tmp_path)):
        assert lib is not None and os.path.dirname(lib.path) == use_shipped
    assert [n for n in compiled if not n.startswith(f"nhc_{cm.model_hash}")] == []
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("nhc_point", "nhc_condense", "nhc_rti"))]


def test_they_give_the_numbers_of_the_libraries_built_in_the_cache(use_shipped, tmp_path, monkeypatch):
    """The same closed loop (the robot's RTI NMPC: Steps 1-7, the RTI nodes and the
    condensing, all compiled) with the installed libraries and with libraries compiled into a
    fresh kernel cache: the same inputs, bit for bit."""
    from test_design_nmpc_core import _robot

    def loop():
        cm, ref, ctrl, x0, xd0 = _robot()
        x = np.concatenate([x0, xd0])
        u = np.array([ctrl.control(0.02 * k, x + 1e-3 * k) for k in range(8)])
        assert ctrl._core is not None and [lib for lib in _ccondense._LIBS.values() if lib is not None]
        return u, ctrl

    monkeypatch.setenv("NHCONTROL_CACHE_DIR", str(tmp_path / "a"))
    u_shipped, ctrl = loop()
    assert os.path.dirname(ctrl._core.lib.path) == use_shipped
    assert os.path.dirname(ctrl._core.plib.path) == use_shipped
    assert {os.path.dirname(lib.path) for lib in _ccondense._LIBS.values()} == {use_shipped}
    assert not [p for p in (tmp_path / "a").iterdir() if p.name.startswith(("nhc_point", "nhc_condense", "nhc_rti"))]
    monkeypatch.setattr(cbackend, "SHIPPED_DIR", None)
    monkeypatch.setenv("NHCONTROL_CACHE_DIR", str(tmp_path / "b"))
    _forget_loaded()
    u_cache, ctrl = loop()
    for lib in (ctrl._core.lib, ctrl._core.plib, *_ccondense._LIBS.values()):
        assert os.path.dirname(lib.path) != use_shipped and os.path.exists(lib.path + ".sha256")
    np.testing.assert_array_equal(u_shipped, u_cache)


@pytest.mark.parametrize("damage", ["bytes", "record", "world-writable"])
def test_a_damaged_installed_library_is_refused_and_built_in_the_cache(shipped, tmp_path, monkeypatch, damage):
    """An installed library whose bytes do not match its record, whose record is unreadable, or
    that anybody may overwrite is never opened: one warning names it and the library of the
    kernel cache is compiled and used instead, with the same numbers."""
    from nhcontrol.linearization import linearize, suggest_partition
    from nhcontrol.models import sleigh as sl

    out = tmp_path / "installed"
    shutil.copytree(shipped[0], out)
    name = os.path.basename(_cpoint.library_file("/x"))
    lib = out / name
    if damage == "bytes":
        blob = bytearray(lib.read_bytes())
        blob[len(blob) // 3] ^= 0xFF
        lib.write_bytes(bytes(blob))
    elif damage == "record":
        (out / (name + ".sha256")).write_text("not a digest\n")
    else:
        lib.chmod(0o666)
    monkeypatch.setattr(cbackend, "SHIPPED_DIR", str(out))
    monkeypatch.delenv(cbackend.ENV_SHIPPED, raising=False)
    cache = tmp_path / "cache"
    cache.mkdir()
    _forget_loaded()
    try:
        cm = sl.build().compile(cache_dir=cache)
        ref = sl.straight_motion(cm, 1.0)
        part = suggest_partition(cm, ref)
        with pytest.warns(RuntimeWarning, match="ignoring the installed compiled linearization library"):
            got = _cpoint._library(str(cache))
        assert got is not None and os.path.dirname(got.path) == str(cache)
        with pytest.raises(CacheError):
            cbackend.verify_shipped(str(lib))
        first = linearize(cm, ref, part)
        monkeypatch.setattr(cbackend, "SHIPPED_DIR", shipped[0])
        _forget_loaded()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_array_equal(linearize(cm, ref, part).A, first.A)
    finally:
        _forget_loaded()


def test_the_environment_variable_switches_them_off_and_refuses_other_values(shipped, monkeypatch):
    monkeypatch.setattr(cbackend, "SHIPPED_DIR", shipped[0])
    path = _cpoint.library_file("/some/cache")
    monkeypatch.setenv(cbackend.ENV_SHIPPED, "1")
    assert cbackend.shipped_routine(path) == os.path.join(shipped[0], os.path.basename(path))
    monkeypatch.setenv(cbackend.ENV_SHIPPED, "0")
    assert cbackend.shipped_routine(path) is None
    monkeypatch.setenv(cbackend.ENV_SHIPPED, "no")
    with pytest.raises(cbackend.ModelError, match="NHCONTROL_SHIPPED_ROUTINES='no' is not 0 or 1"):
        cbackend.shipped_routine(path)


def test_a_library_of_another_routine_text_is_never_found(shipped, monkeypatch):
    """The file name holds the routine's key: a routine whose C text changed since nhcontrol was
    installed looks for another file, and the kernel cache builds it."""
    monkeypatch.setattr(cbackend, "SHIPPED_DIR", shipped[0])
    monkeypatch.delenv(cbackend.ENV_SHIPPED, raising=False)
    src = _csrc.point.C_SOURCE + "\n/* changed */\n"
    other = _csrc.file_name(_csrc.point.STEM, _csrc.point.VERSION, src)
    assert other != os.path.basename(_cpoint.library_file("/x"))
    assert cbackend.shipped_routine(os.path.join("/cache", other)) is None


def test_csrc_imports_nothing_outside_the_standard_library():
    """``setup.py`` imports `nhcontrol._csrc` and `nhcontrol.compiled._ffi_tables` by path, in
    a build environment without nhcontrol's dependencies (cffi aside): their imports are the
    standard library's, setuptools', cffi's and their own."""
    allowed = set(sys.stdlib_module_names) | {"setuptools", "distutils", "cffi", "__future__"}
    files = list((ROOT / "src" / "nhcontrol" / "_csrc").glob("*.py")) + [
        ROOT / "src" / "nhcontrol" / "compiled" / "_ffi_tables.py"]
    for f in files:
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:      # relative: within _csrc only
                    assert f.parent.name == "_csrc" and (node.module or "") in ("", *_csrc.ROUTINES), f
                    continue
                names = [(node.module or "").split(".")[0]]
            else:
                continue
            assert set(names) <= allowed, (f.name, names)
