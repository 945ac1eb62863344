"""Disk cache of generated kernels, argument checks and evaluation errors of CompiledModel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.compiled import CompiledModel
from nhcontrol.modeling import MultibodySystem, examples

_CHILD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import nhcontrol.modeling.equations as E
    def forbidden(*a, **k):
        raise RuntimeError("symbolic derivation called on a warm load")
    if sys.argv[2] == "warm":
        E.derive_equations = forbidden
    from nhcontrol.modeling import examples
    mb = examples.rolling_disc()
    t1 = time.perf_counter()
    cm = mb.compile(cache_dir=sys.argv[1])
    t2 = time.perf_counter()
    x = [0.1, -0.2, 0.25, 0.3, 0.2, -0.4]
    print(json.dumps({"from_cache": cm.from_cache, "compile_s": t2 - t1,
                      "M": cm.M(x).tolist(), "hash": cm.model_hash}))
""")


def _run_child(cache_dir, mode):
    out = subprocess.run([sys.executable, "-c", _CHILD, str(cache_dir), mode], capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cache_hit_in_a_second_process(tmp_path):
    """A second process loads the kernels without any symbolic derivation."""
    cold = _run_child(tmp_path, "cold")
    warm = _run_child(tmp_path, "warm")
    assert cold["from_cache"] is False and warm["from_cache"] is True
    assert warm["hash"] == cold["hash"]
    np.testing.assert_array_equal(warm["M"], cold["M"])
    assert len(list(tmp_path.glob("nhc_*.py"))) == 1


def test_parallel_cold_builds_are_safe(tmp_path):
    """Two processes building the same model into one empty cache both succeed (atomic writes)."""
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path), "cold"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    res = [json.loads(o[0].strip().splitlines()[-1]) for o in outs]
    np.testing.assert_array_equal(res[0]["M"], res[1]["M"])
    assert not list(tmp_path.glob("*.tmp"))


def test_compile_without_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NHCONTROL_CACHE_DIR", str(tmp_path))
    cm = examples.sleigh().compile(cache=False)
    assert cm.source_path is None and not cm.from_cache
    assert not list(tmp_path.iterdir())
    assert cm.B([0.0, 0.0, 0.3]).shape == (1, 3)


@pytest.mark.parametrize("value, why", [("relative/cache", "is not an absolute path"),
                                        ("/tmp/a\0b", "contains a NUL character")])
def test_cache_dir_from_environment_refused(monkeypatch, value, why):
    """A relative NHCONTROL_CACHE_DIR would follow the working directory: refused with the
    variable, its value and an absolute example, never silently used."""
    from nhcontrol._util.errors import ConfigurationError
    from nhcontrol.compiled import default_cache_dir

    monkeypatch.setattr(os, "environ", {**os.environ, "NHCONTROL_CACHE_DIR": value})
    with pytest.raises(ConfigurationError, match=rf"NHCONTROL_CACHE_DIR=.* {why}; accepted: an absolute"):
        default_cache_dir()
    with pytest.raises(ConfigurationError, match="NHCONTROL_CACHE_DIR"):
        examples.sleigh().compile()


def test_default_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("NHCONTROL_CACHE_DIR", str(tmp_path / "cache"))
    cm = examples.sleigh().compile()
    assert cm.source_path is not None and cm.source_path.parent == tmp_path / "cache"
    again = examples.sleigh().compile()
    assert again.from_cache and again.model_hash == cm.model_hash


def test_corrupt_cache_file_is_regenerated(tmp_path):
    cm = examples.sleigh().compile(cache_dir=tmp_path)
    cm.source_path.write_text("this is not python(")
    with pytest.warns(RuntimeWarning, match="ignoring unusable kernel cache file"):
        cm2 = examples.sleigh().compile(cache_dir=tmp_path)
    assert not cm2.from_cache
    np.testing.assert_allclose(cm2.M([0, 0, 0.2]), cm.M([0, 0, 0.2]))


def test_unwritable_cache_dir_warns_and_works(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.warns(RuntimeWarning, match="could not write the kernel cache"):
        cm = examples.sleigh().compile(cache_dir=blocker / "sub")
    # built in a private per-process directory instead
    assert cm.source_path is not None and cm.source_path.parent != blocker / "sub"
    assert cm.source_path.parent.stat().st_mode & 0o077 == 0
    assert cm.M([0, 0, 0.1]).shape == (3, 3)


@pytest.fixture(scope="module")
def sleigh(tmp_path_factory) -> CompiledModel:
    return examples.sleigh().compile(cache_dir=tmp_path_factory.mktemp("c"))


def test_metadata(sleigh):
    assert sleigh.coordinates == ("x", "y", "theta")
    assert sleigh.velocities == ("x_d", "y_d", "theta_d")
    assert dict(sleigh.parameters) == {"a": 0.3, "m": 1.5, "Iz": 0.2, "c": 0.1}
    assert (sleigh.n, sleigh.m, sleigh.l, sleigh.ninputs) == (3, 0, 1, 0)
    assert sleigh.nonholonomic_names == ("blade",)
    with pytest.raises(TypeError):
        sleigh.parameters["a"] = 1.0


def test_param_vector_and_overrides(sleigh):
    np.testing.assert_array_equal(sleigh.param_vector(m=3.0), [0.3, 3.0, 0.2, 0.1])
    with pytest.raises(ModelError, match=r"unknown parameter\(s\) \['mass'\].*valid names are \['a', 'm', 'Iz', 'c'\]"):
        sleigh.param_vector(mass=1.0)
    x = [0.1, 0.2, 0.3]
    np.testing.assert_allclose(sleigh.M(x, p={"m": 3.0}), sleigh.M(x, p=sleigh.param_vector(m=3.0)))
    assert sleigh.M(x, p={"m": 3.0})[0, 0] == pytest.approx(3.0)


def test_results_are_read_only(sleigh):
    M = sleigh.M([0.0, 0.0, 0.0])
    with pytest.raises(ValueError):
        M[0, 0] = 1.0


def test_argument_shape_errors(sleigh):
    with pytest.raises(ModelError, match=r"x of model 'sleigh' must have shape \(3,\) or \(N, 3\), got \(2,\)"):
        sleigh.M([0.0, 0.0])
    with pytest.raises(ModelError, match=r"a of model 'sleigh' must have shape \(3,\) or \(N, 3\), got \(4,\)"):
        sleigh.dMa_dx([0.0, 0.0, 0.0], [1.0, 2, 3, 4])
    with pytest.raises(ModelError, match=r"disagree on the number of points N"):
        sleigh.Q(np.zeros((4, 3)), np.zeros((5, 3)))
    with pytest.raises(ModelError, match=r"contain NaN or inf"):
        sleigh.M([np.nan, 0.0, 0.0])


def test_domain_errors_raise_instead_of_nan(tmp_path):
    mb = MultibodySystem("domain")
    x, y = mb.add_coordinates("x y")
    mb.add_body("b", mass=1, inertia=sp.eye(3), position=[x, y, 0])
    mb.add_generalized_force([1 / x, sp.sqrt(y)])
    cm = mb.compile(cache_dir=tmp_path)
    assert cm.Q([2.0, 4.0], [0, 0]) == pytest.approx([0.5, 2.0])
    with pytest.raises(ModelError, match=r"Q of model 'domain' cannot be evaluated.*ZeroDivisionError"):
        cm.Q([0.0, 1.0], [0, 0])
    with pytest.raises(ModelError, match=r"cannot be evaluated.*ValueError"):
        cm.Q([1.0, -1.0], [0, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ModelError, match=r"not finite at point 1 of 2"):
            cm.Q([[1.0, 1.0], [1.0, -1.0]], [0, 0])


def test_compiled_model_is_immutable(sleigh):
    with pytest.raises(AttributeError, match="CompiledModel is immutable; cannot set 'name'"):
        sleigh.name = "other"


def test_stacked_parameters_and_empty_stack(sleigh):
    """p may be stacked (N, P) for sweeps; N = 0 gives empty results with the right shape."""
    X = np.tile([0.1, 0.2, 0.3], (3, 1))
    Pm = np.array([sleigh.param_vector(m=v) for v in (1.0, 2.0, 3.0)])
    M = sleigh.M(X, p=Pm)
    np.testing.assert_allclose(M[:, 0, 0], [1.0, 2.0, 3.0])
    assert sleigh.linearization_terms(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)),
                                      np.zeros((0, 1))).dQ_dx.shape == (0, 3, 3)


_BIKE = textwrap.dedent("""
    import json, sys, time
    from nhcontrol.models.benchmark_bicycle import build
    t0 = time.perf_counter()
    mb = build()
    t1 = time.perf_counter()
    cm = mb.compile(cache_dir=sys.argv[1], backend="python")
    t2 = time.perf_counter()
    print(json.dumps({"build_s": t1 - t0, "compile_s": t2 - t1, "from_cache": cm.from_cache}))
""")


def test_bicycle_cold_build_then_warm_load_from_cache(tmp_path):
    """A second process finds the bicycle's kernels in the cache a first one wrote (Python
    kernels). The times are measured by benchmarks/model_build.py (cold_build_s, warm_load_s)
    and benchmarks/kernels.py (C back-end), not asserted here: a loaded machine is no failure."""
    def run():
        out = subprocess.run([sys.executable, "-c", _BIKE, str(tmp_path)], capture_output=True, text=True,
                             timeout=300, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold, warm = run(), run()
    assert not cold["from_cache"] and warm["from_cache"]


def test_kernel_modules_do_not_look_like_user_code(tmp_path):
    """Generated kernel modules in sys.modules carry no ``__file__``: tools that scan the loaded
    modules for the user's own code (hypothesis harvests the constants of every local module at
    its first test; coverage) would otherwise parse megabytes of generated source (this made the
    first hypothesis test of the suite take 15-30 s). Tracebacks still name the source file."""
    import sys

    from nhcontrol.models import sleigh

    sleigh.build().compile(cache_dir=str(tmp_path), backend="python")
    mods = [m for name, m in list(sys.modules.items()) if name.startswith("_nhcontrol_kernels_")]
    assert mods
    assert all(getattr(m, "__file__", None) is None for m in mods)
    files = {v.__code__.co_filename for m in mods for v in vars(m).values()
             if callable(v) and hasattr(v, "__code__")}
    assert any(f.startswith(str(tmp_path)) and f.endswith(".py") for f in files)
