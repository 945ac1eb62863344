"""The C kernel back-end (nhcontrol.compiled.ccodegen / cbackend): the same numbers as the
Python kernels for every shipped model, the back-end choice, the missing-compiler fallback,
the hash-checked library cache and pickling.

The default suite compiles the sleigh, the rolling disc and the bicycle benchmark; every
other shipped model is compared under ``-m slow``.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from _helpers import c_compiler_present
from nhcontrol._util.errors import ModelError
from nhcontrol.compiled import CompiledModel
from nhcontrol.compiled.cbackend import requested_backend
from nhcontrol.compiled.derivatives import DIRECT_KERNELS
from nhcontrol.modeling import examples

RTOL = 1e-15
SRC = str(Path(__file__).resolve().parents[1] / "src")


def _builders():
    from nhcontrol.models import (ball_plate, benchmark_bicycle, escooter, hydraulic_fourbar, rolling_torus,
                                  rolling_wheel, single_track, sleigh, toroidal_bicycle, waveboard)
    return {
        "ball_plate": ball_plate.build, "escooter": escooter.build, "hydraulic_fourbar": hydraulic_fourbar.build,
        "rolling_torus": rolling_torus.build, "rolling_wheel_disc": rolling_wheel.build_disc,
        "rolling_wheel_hoop": rolling_wheel.build_hoop, "single_track": lambda: single_track.build().system,
        "sleigh_model": sleigh.build, "skateboard": sleigh.build_skateboard,
        "toroidal_bicycle": toroidal_bicycle.build, "waveboard": waveboard.build,
        "bicycle_actuated": lambda: benchmark_bicycle.build(inputs=("T_phi", "T_delta")),
        "pendulum_inputs": lambda: examples.pendulum(with_inputs=True), "spatial_body": examples.spatial_body,
    }


DEFAULT = {"sleigh": examples.sleigh, "rolling_disc": examples.rolling_disc,
           "bicycle": lambda: __import__("nhcontrol.models.benchmark_bicycle", fromlist=["build"]).build()}


def _points(cm: CompiledModel, rng: np.random.Generator, N: int) -> dict:
    n, ml, k = cm.n, cm.m + cm.l, cm.ninputs
    p0 = np.array(list(cm.parameters.values()))
    return {"x": rng.uniform(-1, 1, (N, n)), "xd": rng.uniform(-1, 1, (N, n)), "xdd": rng.uniform(-1, 1, (N, n)),
            "lam": rng.uniform(-1, 1, (N, ml)), "u": rng.uniform(-1, 1, (N, k)),
            "p": p0 * rng.uniform(0.9, 1.1, (N, len(p0)))}


def _close(a: np.ndarray, b: np.ndarray) -> None:
    """Entry-wise relative difference <= 1e-15 (in practice the two are equal bit for bit)."""
    assert a.shape == b.shape
    assert np.all(np.isfinite(a)) and np.all(np.isfinite(b))
    assert np.all(np.abs(a - b) <= RTOL * np.abs(b)), float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def _compare(c: CompiledModel, py: CompiledModel, seed: int = 0, N: int = 6) -> None:
    assert c.backend == "c" and py.backend == "python" and c.model_hash == py.model_hash
    rng = np.random.default_rng(seed)
    P = _points(c, rng, N)
    lin = ("x", "xd", "xdd", "lam", "u", "p")
    for i in range(3):                          # one point
        a = {g: v[i] for g, v in P.items()}
        for f1, f2 in zip(c.linearization_terms(*[a[g] for g in lin]).__dict__.values(),
                          py.linearization_terms(*[a[g] for g in lin]).__dict__.values()):
            _close(f1, f2)
        for f1, f2 in zip(c.dynamics_terms(a["x"], a["xd"], a["u"], a["p"]).__dict__.values(),
                          py.dynamics_terms(a["x"], a["xd"], a["u"], a["p"]).__dict__.values()):
            _close(f1, f2)
        for name in DIRECT_KERNELS:
            _close(getattr(c, name)(a["x"], a["u"], a["p"]), getattr(py, name)(a["x"], a["u"], a["p"]))
    # N points (the Python N-point kernel is numpy-vectorised: compare with its one-point kernel)
    Lc = c.linearization_terms(*[P[g] for g in lin])
    Dc = c.dynamics_terms(P["x"], P["xd"], P["u"], P["p"])
    Mc = c.M(P["x"], P["u"], P["p"][0])          # a 1-D argument broadcast to all points
    for i in range(N):
        Lp = py.linearization_terms(*[P[g][i] for g in lin])
        for f1, f2 in zip(Lc.__dict__.values(), Lp.__dict__.values()):
            _close(f1[i], f2)
        for f1, f2 in zip(Dc.__dict__.values(), py.dynamics_terms(P["x"][i], P["xd"][i], P["u"][i],
                                                                    P["p"][i]).__dict__.values()):
            _close(f1[i], f2)
        _close(Mc[i], py.M(P["x"][i], P["u"][i], P["p"][0]))
    _pattern_holds(c, py, P)


def _pattern_holds(c: CompiledModel, py: CompiledModel, P: dict) -> None:
    """The structural non-zeros recorded in the layout (``"nonzero"``: the entries the C kernel
    writes; the specialised Steps 1-7 of linearization/_cspecial.py rely on them): the C
    kernel writes no other entry (a sentinel survives there) and the Python kernel, evaluated
    independently at random points, is zero there."""
    lin = ("x", "xd", "xdd", "lam", "u", "p")
    for name, spec in c._ck.layout["functions"].items():
        nz = np.zeros(spec["size"], dtype=bool)
        nz[np.asarray(spec["nonzero"], dtype=np.int64)] = True
        if not set(spec["args"]) <= set(P):
            continue
        fn, ffi = getattr(c._ck._lib, f"nhc_{name}"), c._ck._ffi
        args = [np.ascontiguousarray(P[g][0]) for g in spec["args"]]
        out = np.full(spec["size"], 7.25)
        assert fn(*[ffi.from_buffer("double[]", a) for a in args], ffi.from_buffer("double[]", out)) == 0
        assert np.all(out[~nz] == 7.25), name
        if name != "linearization_terms":
            continue
        for i in range(P["x"].shape[0]):
            flat = np.zeros(spec["size"])
            vals = py.linearization_terms(*[P[g][i] for g in lin]).__dict__.values()
            for (at, size, _), v in zip(spec["outputs"], vals):
                flat[at:at + size] = np.asarray(v).ravel()
            assert np.all(flat[~nz] == 0.0), np.nonzero(flat[~nz])


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ckernels")


@pytest.mark.c_compiler
@pytest.mark.parametrize("name", sorted(DEFAULT))
def test_c_kernels_equal_python_kernels(name):
    mb = DEFAULT[name]()   # the default kernel cache: shared with the other tests of these models
    _compare(mb.compile(backend="c"), mb.compile(backend="python"))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_builders()))
def test_c_kernels_equal_python_kernels_every_model(name, cache):
    mb = _builders()[name]()
    _compare(mb.compile(cache_dir=cache, backend="c"), mb.compile(cache_dir=cache, backend="python"), seed=1)


@pytest.mark.c_compiler
def test_c_library_is_cached_with_a_sha256_record(cache):
    mb = examples.sleigh()
    c = mb.compile(cache_dir=cache, backend="c")
    lib = c.library_path
    assert lib is not None and lib.parent == cache and lib.exists()
    record = lib.with_name(lib.name + ".sha256").read_text().split()
    import hashlib
    assert record[1] == hashlib.sha256(lib.read_bytes()).hexdigest() and record[3] == lib.name
    again = mb.compile(cache_dir=cache, backend="c")
    assert again.from_cache and again.backend == "c"


@pytest.mark.c_compiler
def test_tampered_library_is_rebuilt_not_loaded(tmp_path):
    mb = examples.sleigh()
    lib = mb.compile(cache_dir=tmp_path, backend="c").library_path
    blob = bytearray(lib.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    tampered = tmp_path / "tampered"
    tampered.write_bytes(bytes(blob))
    os.replace(tampered, lib)   # a new file (the loaded library must not change under its mapping)
    with pytest.warns(RuntimeWarning, match="unusable C kernel library.*integrity"):
        cm = mb.compile(cache_dir=tmp_path, backend="c")
    assert cm.backend == "c" and not cm.from_cache
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(cm.Q(x, x), mb.compile(cache_dir=tmp_path, backend="python").Q(x, x))


@pytest.mark.c_compiler
def test_backend_choice_and_bad_values(cache, monkeypatch):
    mb = examples.sleigh()
    monkeypatch.setenv("NHCONTROL_BACKEND", "python")
    assert mb.compile(cache_dir=cache).backend == "python"
    assert mb.compile(cache_dir=cache, backend="c").backend == "c"   # the argument wins
    monkeypatch.setenv("NHCONTROL_BACKEND", "fortran")
    with pytest.raises(ModelError, match=r"NHCONTROL_BACKEND='fortran' is not a kernel back-end"):
        mb.compile(cache_dir=cache)
    with pytest.raises(ModelError, match=r"backend='cuda' is not a kernel back-end"):
        mb.compile(cache_dir=cache, backend="cuda")
    monkeypatch.delenv("NHCONTROL_BACKEND")
    assert requested_backend() == "auto"
    assert mb.compile(cache_dir=cache).backend == "c"                # default: C when a compiler works


@pytest.mark.c_compiler
def test_domain_errors_and_nan_arguments_raise_in_c(tmp_path):
    import sympy as sp

    from nhcontrol.modeling import MultibodySystem

    mb = MultibodySystem("domain_c")
    x, y = mb.add_coordinates("x y")
    mb.add_body("b", mass=1, inertia=sp.eye(3), position=[x, y, 0])
    mb.add_generalized_force([sp.log(x), sp.exp(y)])
    cm = mb.compile(cache_dir=tmp_path, backend="c")
    assert cm.Q(np.array([1.0, 0.0]), np.zeros(2)) == pytest.approx([0.0, 1.0])
    with pytest.raises(ModelError, match=r"Q of model 'domain_c' cannot be evaluated.*ZeroDivisionError"):
        cm.Q(np.array([0.0, 0.0]), np.zeros(2))      # log(0): divide-by-zero flag
    with pytest.raises(ModelError, match=r"cannot be evaluated.*ValueError"):
        cm.Q(np.array([-1.0, 0.0]), np.zeros(2))     # log(-1): invalid-operation flag
    with pytest.raises(ModelError, match=r"cannot be evaluated.*OverflowError"):
        cm.Q(np.array([1.0, 1000.0]), np.zeros(2))   # exp(1000)
    with pytest.raises(ModelError, match=r"contain NaN or inf"):
        cm.Q(np.array([1.0, np.inf]), np.zeros(2))
    with pytest.raises(ModelError, match=r"not finite at point 1 of 2"):
        cm.Q(np.array([[1.0, 0.0], [-1.0, 0.0]]), np.zeros(2))


@pytest.mark.c_compiler
def test_non_contiguous_and_list_arguments(cache):
    c = examples.rolling_disc().compile(cache_dir=cache, backend="c")
    py = examples.rolling_disc().compile(cache_dir=cache, backend="python")
    X = np.random.default_rng(3).uniform(-1, 1, (c.n, 4)).T      # rows are non-contiguous
    np.testing.assert_array_equal(c.M(X[1]), py.M(X[1]))
    np.testing.assert_array_equal(c.M(list(X[2])), py.M(X[2]))
    np.testing.assert_array_equal(c.Q(X, X[::-1]), py.Q(X, X[::-1]))
    assert not c.M(X[1]).flags.writeable and not c.Q(X, X).flags.writeable


@pytest.mark.c_compiler
def test_calls_from_threads_agree(cache):
    c = examples.rolling_disc().compile(cache_dir=cache, backend="c")
    X = np.random.default_rng(4).uniform(-1, 1, (64, c.n))
    ref = [c.Q(x, x) for x in X]
    out: dict = {}

    def work(k):
        out[k] = [c.Q(x, x) for x in X]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        for a, b in zip(out[k], ref):
            np.testing.assert_array_equal(a, b)


_NO_CC = textwrap.dedent("""
    import json, sys, warnings
    from nhcontrol.modeling import examples
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a = examples.sleigh().compile(cache_dir=sys.argv[1])
        b = examples.rolling_disc().compile(cache_dir=sys.argv[1])
    try:
        examples.pendulum().compile(cache_dir=sys.argv[1], backend="c")
        strict = "no error"
    except Exception as exc:
        strict = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"backends": [a.backend, b.backend], "warnings": [str(x.message) for x in w],
                      "strict": strict}))
""")


def test_no_compiler_falls_back_to_python_with_one_warning(tmp_path):
    env = dict(os.environ, CC=str(tmp_path / "no-such-cc"), PYTHONPATH=SRC)
    env.pop("NHCONTROL_BACKEND", None)
    out = subprocess.run([sys.executable, "-c", _NO_CC, str(tmp_path)], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["backends"] == ["python", "python"]
    assert len(res["warnings"]) == 1 and "uses the Python kernels" in res["warnings"][0]
    assert "NHCONTROL_BACKEND=python" in res["warnings"][0]
    assert res["strict"].startswith("ModelError: the C kernels of model 'pendulum' cannot be built")


_UNPICKLE = textwrap.dedent("""
    import pickle, sys, numpy as np
    cm = pickle.loads(open(sys.argv[1], "rb").read())
    print(cm.backend, cm.M(np.array([0.1, 0.2, 0.3])).tolist())
""")


@pytest.mark.c_compiler
@pytest.mark.parametrize("same_cache", [True, False])
def test_pickled_c_model_unpickles_in_another_process(tmp_path, same_cache):
    c = examples.sleigh().compile(cache_dir=tmp_path / "a", backend="c")
    blob = tmp_path / "cm.pkl"
    blob.write_bytes(pickle.dumps(c))
    env = dict(os.environ, PYTHONPATH=SRC, NHCONTROL_CACHE_DIR=str(tmp_path / ("a" if same_cache else "b")))
    env.pop("NHCONTROL_BACKEND", None)
    out = subprocess.run([sys.executable, "-c", _UNPICKLE, str(blob)], env=env, capture_output=True, text=True,
                         timeout=300, check=True)
    backend, M = out.stdout.split(" ", 1)
    # the library travels through the cache only; without it the (identical) Python kernels are used
    assert backend == ("c" if same_cache else "python")
    np.testing.assert_array_equal(json.loads(M), c.M(np.array([0.1, 0.2, 0.3])))


@pytest.mark.c_compiler
def test_expression_without_c_translation_uses_python_kernels(tmp_path):
    import sympy as sp

    from nhcontrol.modeling import MultibodySystem

    from sympy.codegen.cfunctions import expm1

    mb = MultibodySystem("expm1_force")
    x, y = mb.add_coordinates("x y")
    mb.add_body("b", mass=1, inertia=sp.eye(3), position=[x, y, 0])
    mb.add_generalized_force([expm1(x), y])     # printed as math.expm1 in Python; no C printer here
    with pytest.warns(RuntimeWarning, match=r"Python kernels for model 'expm1_force'.*no C translation for expm1"):
        cm = mb.compile(cache_dir=tmp_path)
    assert cm.backend == "python"
    assert cm.Q(np.array([0.5, 1.0]), np.zeros(2))[0] == pytest.approx(0.6487212707001282, rel=1e-15)
    with pytest.raises(ModelError, match=r"cannot be built \(no C translation for expm1.*\); use the Python"):
        mb.compile(cache_dir=tmp_path, backend="c")


@pytest.mark.c_compiler
def test_special_functions_equal_python(tmp_path):
    import sympy as sp

    from nhcontrol.modeling import MultibodySystem

    mb = MultibodySystem("special_force")
    x, y = mb.add_coordinates("x y")
    mb.add_body("b", mass=1, inertia=sp.eye(3), position=[x, y, 0])
    mb.add_generalized_force([sp.erf(x) * sp.asinh(y) + sp.erfc(y), sp.atanh(x / 2) + sp.acosh(2 + y ** 2)])
    c = mb.compile(cache_dir=tmp_path, backend="c")
    py = mb.compile(cache_dir=tmp_path, backend="python")
    X = np.random.default_rng(5).uniform(-1, 1, (8, 2))
    for f1, f2 in zip(c.linearization_terms(X, X, X, np.zeros((8, 0))).__dict__.values(),
                      [np.array([getattr(py.linearization_terms(x, x, x, np.zeros(0)), k) for x in X])
                       for k in c.linearization_terms(X[0], X[0], X[0], np.zeros(0)).__dict__]):
        assert np.all(np.abs(f1 - f2) <= RTOL * np.abs(f2))


@pytest.mark.c_compiler
def test_library_loads_without_parsing_declarations(cache):
    """The type tables cffi parsed at build time are in the layout: a fresh process loads the
    cached library without pycparser (~15 ms per process), and the parsed and the prebuilt FFI
    give the same numbers; a layout whose tables cannot be used falls back to parsing."""
    from nhcontrol.compiled import cbackend

    mb = examples.sleigh()
    c = mb.compile(cache_dir=cache, backend="c")
    layout = c._ck.layout
    assert isinstance(layout.get("ffi"), dict)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {SRC!r})
        from nhcontrol.modeling import examples
        cm = examples.sleigh().compile(cache_dir={str(cache)!r}, backend="c")
        assert cm.from_cache and cm.backend == "c"
        print("pycparser" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
    pre, parsed = cbackend._ffi_of(layout), cbackend._ffi_of({**layout, "ffi": {"name": "x", "kwargs": {"_types": 1}}})
    x = np.array([0.1, 0.2, 0.3])
    results = []
    for ffi in (pre, parsed):
        lib = ffi.dlopen(str(c.library_path))
        o = np.zeros(9)
        dbl = ffi.typeof("double[]")
        assert lib.nhc_M(*[ffi.from_buffer(dbl, a) for a in (x, np.zeros(0), np.array(list(c.parameters.values())))],
                         ffi.from_buffer(dbl, o)) == 0
        results.append(o.reshape(3, 3))
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], c.M(x))


@pytest.mark.c_compiler
def test_library_without_a_needed_function_is_discarded_and_rebuilt(tmp_path, monkeypatch):
    """A cached library whose layout lacks a kernel the model needs (a generator mix-up) is
    discarded with one warning and rebuilt, not a KeyError at load."""
    from nhcontrol.compiled import cbackend

    mb = examples.sleigh()
    first = mb.compile(cache_dir=tmp_path, backend="c")
    original = cbackend.CKernels.__init__

    def lacking(self, path, key, built=False):
        original(self, path, key, built)
        if not built:                       # the cached copy only
            self.one.pop("dynamics_terms", None)

    monkeypatch.setattr(cbackend.CKernels, "__init__", lacking)
    from nhcontrol.compiled import model as model_mod
    monkeypatch.setattr(model_mod, "_REGISTRY", {})
    with pytest.warns(RuntimeWarning, match=r"lacks the functions \['dynamics_terms'\]"):
        again = mb.compile(cache_dir=tmp_path, backend="c")
    assert again.backend == "c" and not again.from_cache
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(again.Q(x, x), first.Q(x, x))


def _blocked_vs_pointwise(cm: CompiledModel, seed: int) -> None:
    """``nhc_linearization_terms_b`` (blocks of SIMD_BLOCK points, vectorized) against
    ``nhc_linearization_terms_n`` (point by point): equal bit for bit, for every N around the block
    size and with a broadcast (stride 0) parameter row."""
    ck = cm._ck
    spec = ck.layout["functions"]["linearization_terms"]
    assert spec.get("block") == 4
    fb, lib = ck._ffi.from_buffer, ck._lib
    rng = np.random.default_rng(seed)
    for N in (1, 3, 4, 5, 8, 9, 13):
        P = _points(cm, rng, N)
        args = [np.ascontiguousarray(P[g]) for g in ("x", "xd", "xdd", "lam", "u")] + [P["p"][:1].copy()]
        outs = []
        for fn in (lib.nhc_linearization_terms_n, lib.nhc_linearization_terms_b):
            o = np.zeros((N, spec["size"]))
            call = [N]
            for a in args:
                call += [fb("double[]", a), a.shape[1] if a.shape[0] > 1 else 0]
            assert fn(*call, fb("double[]", o)) == 0
            outs.append(o)
        assert np.array_equal(outs[0], outs[1], equal_nan=True), N


@pytest.mark.c_compiler
@pytest.mark.parametrize("name", sorted(DEFAULT))
def test_blocked_kernel_equals_pointwise_kernel_bit_for_bit(name):
    cm = DEFAULT[name]().compile(backend="c")
    _blocked_vs_pointwise(cm, seed=3)
    # the N-point calls use the blocked entry point exactly when the processor runs it
    assert cm._ck.simd == cm.vectorized == bool(cm._ck._lib.nhc_simd_ok())


@pytest.mark.c_compiler
def test_blocked_kernel_with_special_functions_and_piecewise(tmp_path):
    import sympy as sp

    from nhcontrol.modeling import MultibodySystem

    mb = MultibodySystem("blocked_special")
    x, y = mb.add_coordinates("x y")
    mb.add_body("b", mass=1, inertia=sp.eye(3), position=[x, y, 0])
    mb.add_generalized_force([sp.erf(x) * sp.asinh(y) + sp.sqrt(2 + sp.sin(x * y)) + sp.exp(-y ** 2),
                              sp.Piecewise((x ** 3, x > 0), (sp.cos(y) * x, True)) + sp.atan2(y, 2 + x)])
    cm = mb.compile(cache_dir=tmp_path, backend="c")
    _blocked_vs_pointwise(cm, seed=4)
    py = mb.compile(cache_dir=tmp_path, backend="python")
    X = np.random.default_rng(6).uniform(-1, 1, (9, 2))
    Lc = cm.linearization_terms(X, X, X, np.zeros((9, 0)))
    for i in range(9):
        for f1, f2 in zip(Lc.__dict__.values(), py.linearization_terms(X[i], X[i], X[i], np.zeros(0)).__dict__.values()):
            assert np.all(np.abs(f1[i] - f2) <= RTOL * np.abs(f2))


def test_platform_tag_is_sysconfigs():
    """The library file names use sysconfig's platform (read without sysconfig on Linux)."""
    import sysconfig

    from nhcontrol.compiled.cbackend import library_file, platform_tag

    assert platform_tag() == sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert library_file("k" * 64, "d").endswith(f".{platform_tag()}.so") or sys.platform == "win32"


@pytest.mark.c_compiler
def test_cold_build_compiles_the_generic_routines_meanwhile(tmp_path, monkeypatch):
    """A cold model build compiles the model-independent routine libraries missing from the
    cache in a background thread (the compiler overlaps the derivation on two cores), the
    Steps 1-7 joined before the build returns, the condensing and the RTI routines going on
    meanwhile (`prebuild_pending` says so until they are there): all are then in the cache with
    the model, no thread is left, and their first use loads them instead of compiling them
    again."""
    import nhcontrol.design  # noqa: F401  (the MPC condensing is built once design is in use)
    from nhcontrol.compiled import cbackend
    from nhcontrol.design import _ccondense, _crti
    from nhcontrol.linearization import _cpoint

    monkeypatch.setattr(cbackend, "_workers", lambda: 2)
    monkeypatch.setattr(cbackend, "PREBUILD", True)
    monkeypatch.setattr(cbackend, "SHIPPED_DIR", None)    # (as installed without a compiler)
    cm = examples.sleigh().compile(cache_dir=tmp_path, backend="c")
    assert cm.backend == "c" and not cm.from_cache
    for t in threading.enumerate():
        if t.name == "nhcontrol-prebuild":
            t.join(120.0)
    assert "nhcontrol-prebuild" not in {t.name for t in threading.enumerate()}
    assert not cbackend.prebuild_pending(str(tmp_path), "nhcontrol.design._crti")
    assert os.path.exists(_crti._routine()._file(str(tmp_path)))
    point = _cpoint.library_path(tmp_path)
    assert point.exists() and point.with_name(point.name + ".sha256").exists()
    assert os.path.exists(_ccondense.library_file(str(tmp_path)))
    # each compiled from its routine and, made meanwhile, its layout as a unit of its own
    assert all(cbackend.split_layout(t) is not None
               for t in (_cpoint.C_SOURCE, _ccondense.C_SOURCE, _crti._routine().source))
    compiled = []
    monkeypatch.setattr(cbackend, "compile_library", lambda *a, **k: compiled.append(a))
    _cpoint._LIBS.pop(str(tmp_path), None)
    assert _cpoint._library(str(tmp_path)) is not None and compiled == []
    _cpoint._LIBS.pop(str(tmp_path), None)
    from nhcontrol.compiled import cache as _cache

    for routine in (_ccondense._routine(), _crti._routine()):
        routine._loaded.pop(_cache.trusted_dir(tmp_path), None)
        loaded = routine.load(tmp_path)
        assert loaded is not None and compiled == [] and os.path.dirname(loaded[0]) == str(tmp_path)
        routine._loaded.pop(_cache.trusted_dir(tmp_path), None)


_EARLY: list = []


def _sleigh_seen_by_builder():
    """A recipe's builder that records the background builds under way when it is called."""
    from nhcontrol.compiled import cbackend

    _EARLY.append({d: set(names) for d, (names, _) in cbackend._STARTED.items()})
    return examples.sleigh()


@pytest.mark.c_compiler
def test_a_recipe_starts_the_routine_build_before_its_builder(tmp_path, monkeypatch):
    """A model of a recipe whose record is not in the cache starts compiling the routine
    libraries before its builder runs (the compiler overlaps the symbolic model too); the
    model build's own `prebuild_routines` starts nothing twice and waits for what was started:
    each routine is prebuilt once, and before the build returns."""
    import types

    from nhcontrol.compiled import cbackend
    from nhcontrol.compiled.recipe import cached_model

    calls: list = []
    fake = types.ModuleType("_nhc_fake_routine")
    fake.prebuild = lambda directory: (threading.Event().wait(0.2), calls.append(directory))
    monkeypatch.setitem(sys.modules, "_nhc_fake_routine", fake)
    monkeypatch.setattr(cbackend, "PREBUILT_ROUTINES", (("_nhc_fake_routine", None, "build"),))
    monkeypatch.setattr(cbackend, "_workers", lambda: 2)
    monkeypatch.setattr(cbackend, "PREBUILD", True)
    monkeypatch.setattr(cbackend, "SHIPPED_DIR", None)    # (as installed without a compiler)
    monkeypatch.setattr(cbackend, "_STARTED", {})
    _EARLY.clear()
    cm = cached_model(_sleigh_seen_by_builder, cache_dir=tmp_path)
    real = os.path.realpath(str(tmp_path))
    assert _EARLY == [{real: {"_nhc_fake_routine"}}]
    assert len(calls) == 1 and os.path.realpath(calls[0]) == real
    assert not cm.from_cache
    cbackend.prebuild_routines(str(tmp_path))()     # again: nothing new starts
    assert len(calls) == 1


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread niceness is Linux's")
def test_background_build_lowers_its_priority_only_for_the_builds_nobody_waits_for(tmp_path, monkeypatch):
    """The background thread builds what the model build waits for first, then what a first use
    will wait for, then raises its niceness (inherited by the compiler it starts) for the
    builds nobody waits for."""
    import types

    from nhcontrol.compiled import cbackend

    events: list = []
    for name in ("_nhc_fake_waited", "_nhc_fake_soon", "_nhc_fake_later"):
        mod = types.ModuleType(name)
        mod.prebuild = lambda directory, name=name: events.append(name)
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(cbackend, "PREBUILT_ROUTINES", (("_nhc_fake_later", None, "idle"),
                                                        ("_nhc_fake_soon", None, "first use"),
                                                        ("_nhc_fake_waited", None, "build")))
    monkeypatch.setattr(cbackend, "_workers", lambda: 2)
    monkeypatch.setattr(cbackend, "PREBUILD", True)
    monkeypatch.setattr(cbackend, "SHIPPED_DIR", None)    # (as installed without a compiler)
    monkeypatch.setattr(cbackend, "_STARTED", {})
    monkeypatch.setattr(cbackend, "compiler_problem", lambda: None)
    monkeypatch.setattr(os, "setpriority", lambda which, who, prio: events.append(("nice", who, prio)))
    cbackend.prebuild_routines(str(tmp_path))()
    for t in threading.enumerate():
        if t.name == "nhcontrol-prebuild":
            t.join(30.0)
    assert [e if isinstance(e, str) else e[0] for e in events] == ["_nhc_fake_waited", "_nhc_fake_soon",
                                                                   "nice", "_nhc_fake_later"]
    assert events[2][2] >= cbackend.BACKGROUND_NICENESS and events[2][1] != threading.get_native_id()


def test_ffi_tables_made_in_two_threads_leave_stdout_alone():
    """The parsed cffi tables of two libraries made at once (a cold model build and the routine
    libraries compiled meanwhile) neither leave ``sys.stdout`` redirected (a process-wide
    redirection restored out of order did: later prints vanished) nor differ from one made
    alone."""
    pytest.importorskip("cffi")
    from nhcontrol.compiled._ffi_tables import prebuilt_ffi_arguments

    real = sys.stdout
    alone = prebuilt_ffi_arguments("int f(int); double g(double *, int);")
    for _ in range(20):
        barrier, got = threading.Barrier(2), []

        def make() -> None:
            barrier.wait()
            got.append(prebuilt_ffi_arguments("int f(int); double g(double *, int);"))
        threads = [threading.Thread(target=make) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sys.stdout is real
        assert got == [alone, alone]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
# (Python >= 3.12 warns of a fork in a multi-threaded process: forking during a build is the case)
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_process_forked_during_a_background_build_forgets_it(monkeypatch, tmp_path):
    """A process forked while the RTI routines compile in the background (a sweep with
    ``backend="processes"`` right after a cold model build) inherits their lock held and their
    build pending, but not the thread that ends both: it forgets them, so its first NMPC
    controller neither waits forever nor keeps the numpy path forever."""
    from nhcontrol.compiled import cbackend
    from nhcontrol.design import _crti

    lib = _crti._routine()
    key = (os.path.realpath(str(tmp_path)), "nhcontrol.design._crti")
    monkeypatch.setattr(cbackend, "_PENDING", {key})
    assert lib._lock.acquire(blocking=False)          # as the background build holds it
    try:
        pid = os.fork()
        if pid == 0:                                    # the child: report by exit status
            ok = (not cbackend.prebuild_pending(str(tmp_path), "nhcontrol.design._crti")
                  and lib._lock.acquire(blocking=False))
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        lib._lock.release()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert cbackend.prebuild_pending(str(tmp_path), "nhcontrol.design._crti")  # the parent keeps it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sysconfig driver is Linux's")
def test_sysconfig_driver_runs_the_commands_of_distutils(tmp_path, monkeypatch):
    """On Linux without compiler variables in the environment the build makes distutils' two
    commands from `sysconfig` without importing setuptools: the same ``compiler_so`` and
    ``linker_so`` as distutils' customised Unix compiler; a library it builds computes what
    one built through distutils computes; ``$CC`` (or another variable ``customize_compiler``
    reads) hands the build back to distutils."""
    import setuptools  # noqa: F401
    from distutils.ccompiler import new_compiler
    from distutils.sysconfig import customize_compiler

    from nhcontrol.compiled import cbackend

    for var in cbackend._COMPILER_ENV:
        monkeypatch.delenv(var, raising=False)
    # (a verdict "no compiler" this process reached under the variables just removed, e.g. a
    # $CC that does not exist, is not this environment's)
    monkeypatch.setattr(cbackend, "_NO_COMPILER", [])
    own = cbackend._SysconfigCompiler.from_sysconfig()
    ref = new_compiler()
    customize_compiler(ref)
    assert own is not None and ref.compiler_type == "unix"
    assert own.compiler_so == list(ref.compiler_so)
    assert own.linker_so == list(ref.linker_so)
    if c_compiler_present():
        src = "double nhc_probe(double x) { return x * x / 3.0 - 2.0 * x; }\n"
        out = {}
        for which in ("sysconfig", "distutils"):
            if which == "distutils":
                monkeypatch.setattr(cbackend._SysconfigCompiler, "from_sysconfig",
                                    classmethod(lambda cls: None))
            path = tmp_path / which / "probe.so"
            path.parent.mkdir()
            cbackend.compile_library([src], path)
            import ctypes

            lib = ctypes.CDLL(str(path))
            lib.nhc_probe.restype = ctypes.c_double
            lib.nhc_probe.argtypes = [ctypes.c_double]
            out[which] = [lib.nhc_probe(x) for x in (0.1, 1.7, -3.3)]
        assert out["sysconfig"] == out["distutils"]
        monkeypatch.undo()
    monkeypatch.setenv("CC", "gcc")
    assert cbackend._SysconfigCompiler.from_sysconfig() is None


@pytest.mark.c_compiler
def test_a_process_that_exits_at_once_lets_the_background_builds_finish(tmp_path):
    """A process that ends right after starting the background routine builds waits for them
    at exit (at most a minute) and leaves the libraries in the cache: Steps 1-7, the MPC
    condensing and the RTI routines. (The interpreter's exit stops concurrent.futures, whose
    pool the compiler runs in; the build's last units then compile in its own thread.)"""
    script = textwrap.dedent("""
        import nhcontrol.design
        from nhcontrol.compiled import cache, cbackend
        cbackend._workers = lambda: 2
        cbackend.PREBUILD = True
        cbackend.prebuild_routines(cache.trusted_dir(None))
    """)
    env = {k: v for k, v in os.environ.items() if k != "NHCONTROL_BACKEND"}
    env["NHCONTROL_CACHE_DIR"] = str(tmp_path)
    env["NHCONTROL_SHIPPED_ROUTINES"] = "0"                 # (as installed without a compiler)
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=180)
    from nhcontrol.design import _ccondense, _crti
    from nhcontrol.linearization import _cpoint

    for path in (_cpoint.library_path(tmp_path), Path(_ccondense.library_file(str(tmp_path))),
                 Path(_crti._routine()._file(str(tmp_path)))):
        assert path.exists() and path.with_name(path.name + ".sha256").exists(), path


@pytest.mark.c_compiler
def test_a_cold_build_compiles_the_c_kernels_while_it_prints_the_python_ones(tmp_path, monkeypatch):
    """A cold build prints the C kernels first and compiles them in a thread of its own (the
    layout, with cffi's tables, printed meanwhile as a unit of its own) while it prints and
    stores the Python kernels: the compiler has started before the Python kernels are printed.
    The library serves the same layout and the same numbers, bit for bit, as one built from
    `generate_c_source`'s units (the layout in the entry unit)."""
    from nhcontrol.compiled import cbackend, model
    from nhcontrol.compiled.ccodegen import generate_c

    events: list[str] = []
    real_compile, real_source, real_start = (cbackend.compile_library, model.generate_source,
                                             model._EarlyCBuild.start)

    def compile_library(units, out, *a, **k):
        events.append(f"compile in {threading.current_thread().name}")
        return real_compile(units, out, *a, **k)

    def generate_source(*a, **k):
        events.append("python")
        return real_source(*a, **k)

    def start(*a, **k):
        early = real_start(*a, **k)
        events.append("started" if early is not None else "not started")
        return early

    monkeypatch.setattr(cbackend, "compile_library", compile_library)
    monkeypatch.setattr(model, "generate_source", generate_source)
    monkeypatch.setattr(model._EarlyCBuild, "start", start)
    mb = examples.sleigh()
    cm = mb.compile(cache_dir=tmp_path / "early", backend="c")
    assert cm.backend == "c"
    assert [e for e in events if not e.startswith("compile")] == ["started", "python"]
    assert events.count("compile in nhcontrol-kernels") == 1 and len(events) == 3
    early = cm._ck
    # the same model built from the units with the layout in the entry unit
    d = model._Derivation(mb)
    specs, graph, symbols = d.specs
    units, layout = generate_c(specs, graph, symbols, {"name": mb.name, "key": cm.model_hash})
    path = cbackend.library_path(cm.model_hash, tmp_path / "whole")
    (tmp_path / "whole").mkdir()
    real_compile(units, path)
    whole = cbackend.CKernels(path, cm.model_hash)
    assert early.layout == whole.layout == json.loads(json.dumps(layout))
    rng = np.random.default_rng(3)
    point = {g: np.asarray(v, float) + rng.normal(scale=0.3, size=len(v)) for g, v in cm._lists0.items()}
    names = sorted(early.layout["functions"])
    assert {"M", "D", "Cx"} <= set(names)
    for name in names:
        args = [point[g] for g in early.layout["functions"][name]["args"]]
        for a, b in zip(early.one[name](*args), whole.one[name](*args)):
            np.testing.assert_array_equal(a, b)


@pytest.mark.c_compiler
def test_a_failed_early_build_is_reported_as_before(tmp_path, monkeypatch):
    """A compiler that fails in the early build's thread: one warning and the Python kernels
    (``backend=None``), or the error naming the model (``backend="c"``)."""
    from nhcontrol.compiled import cache as _cache
    from nhcontrol.compiled import cbackend

    def broken(units, out, *a, **k):
        raise cbackend.CompilerUnavailable("the C compiler failed (a test's compiler)")

    monkeypatch.setattr(cbackend, "compile_library", broken)
    monkeypatch.delenv("NHCONTROL_BACKEND", raising=False)
    with pytest.raises(ModelError, match="C kernels of model 'sleigh' cannot be built.*a test's compiler"):
        examples.sleigh().compile(cache_dir=tmp_path / "c", backend="c")
    _cache._WARNED.clear()
    with pytest.warns(RuntimeWarning, match="uses the Python kernels for model 'sleigh'.*a test's compiler"):
        cm = examples.sleigh().compile(cache_dir=tmp_path / "auto")
    assert cm.backend == "python"


@pytest.mark.c_compiler
def test_only_the_one_point_entry_points_are_compiled_at_O0(tmp_path, monkeypatch):
    """The one-point entry points (checks, work array, floating-point flags) sit between the
    ``-O0`` pragmas of the entry unit; the N-point loops and the blocked entry points after
    them (at ``-O0`` the loops slowed a small model's stacked evaluation by 40 %). A library
    with the pragmas and one without give the same numbers bit for bit, at one point and at
    many."""
    from nhcontrol.compiled import cbackend, ccodegen, model

    mb = examples.sleigh()
    d = model._Derivation(mb)
    specs, graph, symbols = d.specs
    meta = {"name": mb.name, "key": "k"}
    units, layout = ccodegen.generate_c(specs, graph, symbols, meta)
    entry = units[0]
    push, pop = entry.index('#pragma GCC optimize("O0")'), entry.index("#pragma GCC pop_options")
    names = sorted(layout["functions"])
    for name in names:
        one, many = entry.index(f"NHC_API int nhc_{name}("), entry.index(f"NHC_API int nhc_{name}_n(")
        assert push < one < pop < many, name
    assert entry.count("#pragma GCC push_options") == entry.count("#pragma GCC pop_options") == 1
    monkeypatch.setattr(ccodegen, "_ENTRY_PUSH", "")
    monkeypatch.setattr(ccodegen, "_ENTRY_POP", "")
    plain, _ = ccodegen.generate_c(specs, graph, symbols, meta)
    assert "optimize" not in plain[0]
    libs = []
    for tag, us in (("o0", units), ("o1", plain)):
        (tmp_path / tag).mkdir()
        path = cbackend.library_path("k", tmp_path / tag)
        cbackend.compile_library(us, path)
        libs.append(cbackend.CKernels(path, "k"))
    rng = np.random.default_rng(5)
    cm = mb.compile(cache_dir=tmp_path / "cm", backend="c")
    for name in names:
        groups = libs[0].layout["functions"][name]["args"]
        point = [np.asarray(cm._lists0[g], float) + rng.normal(scale=0.3, size=len(cm._lists0[g]))
                 for g in groups]
        for a, b in zip(libs[0].one[name](*point), libs[1].one[name](*point)):
            np.testing.assert_array_equal(a, b)
        stacked = [np.tile(p, (7, 1)) + rng.normal(scale=0.1, size=(7, p.size)) for p in point]
        spec = libs[0].layout["functions"][name]
        loops = [lib._make_many(getattr(lib._lib, f"nhc_{name}_n"), spec, name) for lib in libs]
        for a, b, c in zip(libs[0].many[name](*stacked, 7), libs[1].many[name](*stacked, 7),
                           loops[0](*stacked, 7)):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, c)
        for a, b in zip(loops[0](*stacked, 7), loops[1](*stacked, 7)):
            np.testing.assert_array_equal(a, b)
