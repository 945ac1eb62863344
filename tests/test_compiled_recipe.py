"""Warm start without SymPy (nhcontrol.compiled.recipe): a model found from the recipe that builds
it, in a fresh process, without the symbolic build; a changed source or argument builds again; a
damaged recipe record is discarded with a warning; ``import nhcontrol`` imports no heavy
dependency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _helpers import c_compiler_present

SRC = str(Path(__file__).resolve().parents[1] / "src")

_MODULE = textwrap.dedent('''
    """A user's model module: SymPy only inside the builder."""


    def build(mass=1.0, name="user_sleigh"):
        from nhcontrol.modeling.examples import sleigh

        mb = sleigh()
        mb.name = name
        return mb
''')

_CHILD = textwrap.dedent('''
    import json, sys, time
    sys.path.insert(0, sys.argv[1])
    import user_model
    from nhcontrol.compiled.recipe import cached_model
    t0 = time.perf_counter()
    cm = cached_model(user_model.build, float(sys.argv[2]))
    t1 = time.perf_counter()
    import numpy as np
    A = cm.M(np.zeros(cm.n)).tolist()
    # whether the Python kernel module was read at load (a C model from a recipe record: no)
    read = hasattr(cm._mod, "__nhcontrol_source_bytes__")
    import pickle
    same = pickle.loads(pickle.dumps(cm)) is cm       # pickling reads and verifies it then
    print(json.dumps({"sympy": "sympy" in sys.modules, "from_cache": cm.from_cache,
                      "key": cm.model_hash, "name": cm.name, "M": A, "s": t1 - t0,
                      "backend": cm.backend, "source_read": read, "pickles": same}))
''')


def _child(tmp_path: Path, cache: Path, arg: float = 1.0) -> dict:
    env = dict(os.environ, PYTHONPATH=SRC, NHCONTROL_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path), str(arg)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture()
def user_module(tmp_path):
    mod = tmp_path / "mods"
    mod.mkdir()
    (mod / "user_model.py").write_text(_MODULE)
    return mod


def test_fresh_process_loads_without_sympy(tmp_path, user_module):
    cache = tmp_path / "cache"
    first = _child(user_module, cache)
    assert first["sympy"] and not first["from_cache"]            # built: SymPy needed
    recipes = list(cache.glob("recipe_*.json"))
    assert len(recipes) == 1 and (cache / (recipes[0].name + ".sha256")).exists()
    record = json.loads(recipes[0].read_text())
    assert record["model_key"] == first["key"] and record["meta"]["key"] == first["key"]
    again = _child(user_module, cache)
    assert not again["sympy"] and again["from_cache"]            # the warm start
    assert again["key"] == first["key"] and again["M"] == first["M"] and again["pickles"]
    # with C kernels the META comes from the record: the 0.5 MB kernel module is not read
    assert again["source_read"] == (again["backend"] != "c")
    # another argument is another recipe (here the same model: the argument is unused)
    other = _child(user_module, cache, 2.0)
    assert other["sympy"] and other["key"] == first["key"]
    assert len(list(cache.glob("recipe_*.json"))) == 2
    # a changed source file: the old recipe no longer applies, the model is built again
    (user_module / "user_model.py").write_text(_MODULE.replace('"user_sleigh"', '"user_sleigh2"'))
    changed = _child(user_module, cache)
    assert changed["sympy"] and changed["name"] == "user_sleigh2" and changed["key"] != first["key"]


def test_damaged_recipe_is_discarded(tmp_path, user_module, monkeypatch):
    cache = tmp_path / "cache"
    first = _child(user_module, cache)
    (recipe,) = cache.glob("recipe_*.json")
    data = json.loads(recipe.read_text())
    data["model_key"] = "0" * 64                                  # points elsewhere
    recipe.write_text(json.dumps(data))                          # its sha256 record now differs
    sys.path.insert(0, str(user_module))
    try:
        import user_model
        from nhcontrol.compiled import recipe as rc

        monkeypatch.setenv("NHCONTROL_CACHE_DIR", str(cache))
        rc._MODELS.clear()
        with pytest.warns(RuntimeWarning, match="unusable model recipe"):
            cm = rc.cached_model(user_model.build, 1.0)
        assert cm.model_hash == first["key"]
        assert json.loads(recipe.read_text())["model_key"] == first["key"]   # rewritten
        rc._MODELS.clear()
        assert rc.cached_model(user_model.build, 1.0).model_hash == first["key"]
    finally:
        sys.path.remove(str(user_module))
        sys.modules.pop("user_model", None)


def test_recipe_key_needs_plain_arguments():
    from nhcontrol.compiled.recipe import recipe_key
    from nhcontrol.models import benchmark_bicycle as bb

    k1 = recipe_key(bb.build, ((),), {})
    assert k1 == recipe_key(bb.build, ((),), {}) and len(k1) == 64
    assert recipe_key(bb.build, (("T_phi",),), {}) != k1
    assert recipe_key(bb.build, ((),), {"m_B": 90.0}) != recipe_key(bb.build, ((),), {"m_B": 90.0 + 1e-12})
    assert recipe_key(bb.build, (object(),), {}) is None          # not plain data: no recipe
    assert recipe_key(lambda: None) is None                       # no module-level name


def test_catalogue_model_and_import_are_light(tmp_path):
    """``import nhcontrol`` imports neither numpy nor SymPy; the cached bicycle loads without
    SymPy in a fresh process."""
    env = dict(os.environ, PYTHONPATH=SRC)
    code = "import sys, nhcontrol; print(sorted(m for m in ('numpy', 'sympy', 'scipy', 'cvxpy', 'control') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
    from nhcontrol.models import benchmark_bicycle as bb

    bb.model()                                                    # fills the cache (this process)
    code = ("import sys; from nhcontrol.models import benchmark_bicycle as bb; cm = bb.model(); "
            "lz = cm.linearizer(bb.PARTITION_4_172); "
            "print(cm.from_cache, 'sympy' in sys.modules, 'scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["True", "False", "False"]   # a prepared linearizer, light


def test_source_digests_are_recorded_and_follow_changes(tmp_path, user_module, monkeypatch):
    """The digests of the recipe's source files come from the cache's record of source digests
    while a file's status is the recorded one; a rewrite of the same size with the modification
    time set back still changes the key (its change time moved), and a damaged record is
    rebuilt."""
    from nhcontrol.compiled import cache as _cache
    from nhcontrol.compiled import recipe as rc

    monkeypatch.setattr(rc, "_RACY_NS", -10**15)     # record files changed a moment ago too
    monkeypatch.setattr(rc, "_DIGESTS", {})
    directory = str(_cache.ensure_private_dir(tmp_path / "cache"))
    sys.path.insert(0, str(user_module))
    try:
        import user_model

        src = user_module / "user_model.py"
        k1 = rc._recipe_key(user_model.build, (), {}, (), lambda: directory)
        memo = tmp_path / "cache" / rc.SOURCES_MEMO
        files = json.loads(_cache.verify_artefact(memo))["files"]
        assert str(src.resolve()) in files and len(files) > 10      # the builder's and the modeling sources
        assert k1 == rc.recipe_key(user_model.build)                 # the same key as without the record
        hashed = []
        monkeypatch.setattr(rc, "sha256_hex", lambda b: hashed.append(len(b)) or _cache.sha256_hex(b))
        monkeypatch.setattr(rc, "_DIGESTS", {})
        assert rc._recipe_key(user_model.build, (), {}, (), lambda: directory) == k1
        assert len(hashed) == 1                                      # the key text only: no file read
        st = src.stat()
        text = src.read_text()
        time.sleep(0.05)          # past the file system's timestamp granularity (the record's
        #                          guard against that is the 2 s margin switched off above)
        src.write_text(text.replace('"user_sleigh"', '"user_sleigx"'))   # same size
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))               # same modification time
        assert src.stat().st_size == st.st_size and src.stat().st_mtime_ns == st.st_mtime_ns
        monkeypatch.setattr(rc, "_DIGESTS", {})
        k2 = rc._recipe_key(user_model.build, (), {}, (), lambda: directory)
        monkeypatch.setattr(rc, "_DIGESTS", {})
        assert k2 != k1 and k2 == rc.recipe_key(user_model.build)
        memo.write_text("{not json")                                 # damaged: its sha256 differs
        monkeypatch.setattr(rc, "_DIGESTS", {})
        assert rc._recipe_key(user_model.build, (), {}, (), lambda: directory) == k2
        assert json.loads(_cache.verify_artefact(memo))["version"] == 1   # rebuilt
    finally:
        sys.path.remove(str(user_module))
        sys.modules.pop("user_model", None)


@pytest.mark.c_compiler
def test_loading_a_cached_model_imports_no_pathlib_or_hashlib(tmp_path):
    """The kernel cache's loading path (recipe, record checks, C library) works on str paths and
    the built-in sha256: a fresh process that loads the cached bicycle imports neither pathlib
    nor hashlib (OpenSSL) for it."""
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model()                                               # fills the cache (this process),
    cm.linearizer(bb.PARTITION_4_172)                             # the compiled Steps 1-7 too
    code = ("import sys; before = set(sys.modules); import numpy; "
            "from nhcontrol.models import benchmark_bicycle as bb; cm = bb.model(); "
            "lz = cm.linearizer(bb.PARTITION_4_172); "
            "print(cm.from_cache, lz.compiled, sorted({'pathlib', 'hashlib', 'sysconfig', 'sympy'} "
            "& (set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=SRC),
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"True {c_compiler_present()} []"   # compiled where the machine can


def test_builtin_sha256_equals_hashlib():
    """nhcontrol._util.sha gives hashlib's sha256 whichever implementation it picked."""
    import hashlib

    from nhcontrol._util import sha

    blobs = [b"", b"abc", bytes(range(256)) * 1000]
    for blob in blobs:
        assert sha.sha256_hex(blob) == hashlib.sha256(blob).hexdigest()
        h = sha.sha256(blob[:7])
        h.update(blob[7:])
        assert h.hexdigest() == hashlib.sha256(blob).hexdigest()
    # the interpreter's built-in module (used when hashlib is not imported yet) agrees too
    name = "_sha2" if sys.version_info >= (3, 12) else "_sha256"
    builtin = pytest.importorskip(name).sha256
    assert all(builtin(b).hexdigest() == hashlib.sha256(b).hexdigest() for b in blobs)
