"""Generated code: the common-subexpression temporaries change the speed, never the values.

Reference: the same model generated with ``cse=False`` (every node definition printed as it
is, the code before the optimisation).  Tolerance: **zero** -- the temporaries only replace
structurally identical subtrees whose printed arithmetic is the same sequence of IEEE
operations, so every output of every scalar and vector function must agree bit for bit.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from nhcontrol._util.errors import ModelError
from nhcontrol.compiled import cache
from nhcontrol.compiled.model import generate_source
from nhcontrol.modeling import examples


def _bicycle():
    from nhcontrol.models import benchmark_bicycle

    return benchmark_bicycle.build()


MODELS = {"sleigh": examples.sleigh, "rolling_disc": examples.rolling_disc,
          "spatial_body": examples.spatial_body, "bicycle": _bicycle}

FUNCS = ("M", "C", "Cx", "B", "D", "linearization_terms", "dynamics_terms")


@pytest.fixture(scope="module", params=sorted(MODELS))
def modules(request):
    mb = MODELS[request.param]()
    src_on = generate_source(mb, key="k" * 64, cse=True)
    src_off = generate_source(mb, key="k" * 64, cse=False)
    return (request.param, cache.module_from_source(src_on, "on" + "0" * 30),
            cache.module_from_source(src_off, "off" + "0" * 30), src_on, src_off)


def _args(meta: dict, fname: str, rng: np.random.Generator) -> list[np.ndarray]:
    n = len(meta["coordinates"])
    k = len(meta["inputs"])
    ml = len(meta["holonomic_names"]) + len(meta["nonholonomic_names"])
    p0 = np.array(meta["parameter_defaults"], dtype=float)
    vals = {"x": 0.5 * rng.normal(size=n), "xd": rng.normal(size=n), "xdd": rng.normal(size=n),
            "lam": rng.normal(size=ml), "u": rng.normal(size=k),
            "p": p0 * (1.0 + 0.1 * rng.normal(size=p0.size))}
    groups = {"linearization_terms": ("x", "xd", "xdd", "lam", "u", "p"),
              "dynamics_terms": ("x", "xd", "u", "p")}.get(fname, ("x", "u", "p"))
    return [vals[g] for g in groups]


@pytest.mark.parametrize("seed", [0, 1])
def test_cse_is_bit_identical(modules, seed):
    """Scalar and vector (N=3) outputs with and without temporaries: exactly equal."""
    name, on, off, _, _ = modules
    rng = np.random.default_rng(seed)
    for fname in FUNCS:
        a = _args(on.META, fname, rng)
        got = getattr(on, fname + "_s")(*[v.tolist() for v in a])
        ref = getattr(off, fname + "_s")(*[v.tolist() for v in a])
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            assert g.shape == r.shape
            np.testing.assert_array_equal(g, r, err_msg=f"{name}.{fname}_s")
        stacked = [np.vstack([v, 1.01 * v, 0.99 * v]) if v.size else np.zeros((3, 0)) for v in a]
        got = getattr(on, fname + "_v")(*stacked, 3)
        ref = getattr(off, fname + "_v")(*stacked, 3)
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g, r, err_msg=f"{name}.{fname}_v")


def _ops(src: str, fname: str) -> int:
    body = src[src.index(f"def {fname}_s("):]
    body = body[:body.index("\n\n\n")]
    body = body[body.index("\n"):]
    return len(re.findall(r"[-+*/]|math\.\w+\(", body))


def test_cse_reduces_operations(modules):
    """The temporaries remove repeated work: fewer arithmetic operators and math calls.

    For the bicycle the fused ``linearization_terms`` must lose at least 15 % of its
    operations (measured: about 30 %); the small models must at least not grow.
    """
    name, _, _, src_on, src_off = modules
    on, off = _ops(src_on, "linearization_terms"), _ops(src_off, "linearization_terms")
    assert on <= off
    if name == "bicycle":
        assert on <= 0.85 * off, (on, off)


def test_cse_temporaries_defined_before_use(modules):
    """Every temporary ``t<k>`` is assigned exactly once per function, before its first use."""
    _, _, _, src_on, _ = modules
    for fn in re.split(r"\n\n\n(?=def )", src_on):
        if not fn.startswith("def "):
            continue
        seen: set[str] = set()
        for line in fn.splitlines()[1:]:
            m = re.match(r"    (\w+) = (.*)$", line)
            if not m:
                continue
            used = set(re.findall(r"\bt\d+\b", m.group(2)))
            assert used <= seen, (line[:80], sorted(used - seen))
            if re.fullmatch(r"t\d+", m.group(1)):
                assert m.group(1) not in seen
                seen.add(m.group(1))


def test_one_point_results_are_read_only(modules):
    """Every output of every one-point function is read-only and cannot be made writeable."""
    name, on, _, _, _ = modules
    rng = np.random.default_rng(3)
    for fname in FUNCS:
        out = getattr(on, fname + "_s")(*[v.tolist() for v in _args(on.META, fname, rng)])
        for o in out:
            assert not o.flags.writeable
            with pytest.raises(ValueError, match="WRITEABLE"):
                o.flags.writeable = True


@pytest.fixture(scope="module")
def sleigh():
    return examples.sleigh().compile(cache=False)


def test_one_point_fast_path_equals_general_path(sleigh):
    """float64 vectors (fast path) and lists / int arrays (general path): identical results."""
    x = np.array([0.3, -0.2, 0.7])
    xd = np.array([1.0, 0.5, -0.4])
    for fast, general in ((sleigh.M(x), sleigh.M(x.tolist())),
                          (sleigh.Q(x, xd), sleigh.Q(x.tolist(), xd.tolist())),
                          (sleigh.D(np.array([1, 2, 3])), sleigh.D(np.array([1.0, 2.0, 3.0])))):
        np.testing.assert_array_equal(fast, general)
        assert not fast.flags.writeable and not general.flags.writeable
    t_fast = sleigh.linearization_terms(x, xd, xd, np.ones(sleigh.m + sleigh.l))
    t_gen = sleigh.linearization_terms(list(x), list(xd), list(xd), [1.0] * (sleigh.m + sleigh.l))
    for a, b in zip(t_fast.__dict__.values(), t_gen.__dict__.values()):
        np.testing.assert_array_equal(a, b)


def test_one_point_fast_path_errors(sleigh):
    """The fast path checks shapes and finiteness like the general path."""
    with pytest.raises(ModelError, match=r"x of model 'sleigh' must have shape \(3,\) or \(N, 3\), got \(2,\)"):
        sleigh.M(np.zeros(2))
    with pytest.raises(ModelError, match=r"M: the arguments of model 'sleigh' contain NaN or inf"):
        sleigh.M(np.array([np.nan, 0.0, 0.0]))
    with pytest.raises(ModelError, match=r"contain NaN or inf"):
        sleigh.Q(np.zeros(3), np.array([0.0, np.inf, 0.0]))


def test_finite_check_does_not_trip_on_overflowing_sum(sleigh):
    """Entries 1e308 are finite although their sum overflows: no false NaN/inf error."""
    x = np.array([1e308, 1e308, 0.0])
    M = sleigh.M(x)
    np.testing.assert_array_equal(M, sleigh.M(np.zeros(3)))  # M depends on theta only (0 in both)
