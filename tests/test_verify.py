"""nhcontrol.applications.verify.monte_carlo: reproducible samples on every back-end, failures recorded as
failed runs, statistics and worst cases, clear errors for malformed studies."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import nhcontrol.applications.verify as verify
from nhcontrol.applications.verify import MonteCarloError, monte_carlo, normal, relative, uniform

import _sweep_funcs as sf

SAMPLERS = {"gain": uniform(0.5, 3.0), "x0": normal(0.0, 1.0)}


def test_docstring_examples_run():
    res = doctest.testmod(verify, optionflags=doctest.ELLIPSIS)
    assert res.attempted >= 4 and res.failed == 0


def test_success_rate_matches_the_criterion_computed_by_hand():
    res = monte_carlo(sf.settle, SAMPLERS, 300, success={"final": 0.2}, seed=3)
    final = np.array([abs(s["x0"]) * math.exp(-s["gain"]) for s in res.samples])
    np.testing.assert_allclose(res.values("final"), final, rtol=0, atol=0)
    assert res.n_success == int(np.count_nonzero(final <= 0.2))
    assert 0.0 < res.success_rate < 1.0
    st = res.statistics()["final"]
    assert st["max"] == pytest.approx(final.max()) and st["median"] == pytest.approx(np.median(final))
    worst = res.worst("final", k=3)
    assert [w["index"] for w in worst] == list(np.argsort(-final)[:3])
    assert worst[0]["sample"] == res.samples[worst[0]["index"]] and not worst[0]["success"]
    # the sampler ranges hold
    g = np.array([s["gain"] for s in res.samples])
    assert g.min() >= 0.5 and g.max() < 3.0


def test_samples_do_not_depend_on_backend_or_n():
    a = monte_carlo(sf.settle, SAMPLERS, 40, success={"final": 0.2}, seed=11)
    b = monte_carlo(sf.settle, SAMPLERS, 25, success={"final": 0.2}, seed=11, backend="processes",
                    max_workers=2)
    assert b.samples == a.samples[:25]
    assert b.metrics == a.metrics[:25]
    assert b.sweep.backend == "processes"
    c = monte_carlo(sf.settle, SAMPLERS, 25, success={"final": 0.2}, seed=12)
    assert c.samples != b.samples


def test_a_raising_run_is_a_failed_run_with_its_message_and_worst_first():
    res = monte_carlo(sf.settle, {"gain": uniform(-1.0, 2.0), "x0": 1.0}, 50,
                      success={"final": 10.0}, seed=0)
    bad = [i for i, s in enumerate(res.samples) if s["gain"] <= 0]
    assert bad and res.n_errors == len(bad)
    assert all("gain must be positive" in res.errors[i] for i in bad)
    assert res.n_success == 50 - len(bad)            # every other run meets the loose criterion
    assert res.worst("final", k=1)[0]["index"] in bad
    df = res.to_dataframe()
    assert list(df.columns[:2]) == ["gain", "x0"] and df["error"].notna().sum() == len(bad)
    d = res.to_dict(worst_metric="final", k=2)
    assert d["n_errors"] == len(bad) and len(d["worst"]) == 2


def test_callable_criterion_and_nan_metric():
    def run(a):
        return {"e": float("nan") if a > 0.9 else a}

    res = monte_carlo(run, {"a": uniform(0.0, 1.0)}, 100, success=lambda m: m["e"] < 0.5,
                      seed=5)
    a = np.array([s["a"] for s in res.samples])
    assert res.n_success == int(np.count_nonzero(a < 0.5))
    assert all(("non-finite" in res.errors[i]) for i in np.flatnonzero(a > 0.9))


@pytest.mark.parametrize("kwargs, words", [
    (dict(n=0), "positive integer"),
    (dict(n=2.5), "positive integer"),
    (dict(samplers={}), "non-empty"),
    (dict(success={"missing": 1.0}), "'missing'"),
    (dict(success="final < 1"), "success must be"),
    (dict(success={"final": float("nan")}), "finite"),
    (dict(constants={"x0": 1.0}), "both sampled and constant"),
])
def test_malformed_studies_are_refused(kwargs, words):
    args = dict(run=sf.settle, samplers=SAMPLERS, n=4, success={"final": 0.2})
    args.update(kwargs)
    with pytest.raises(MonteCarloError, match=words):
        monte_carlo(args.pop("run"), args.pop("samplers"), args.pop("n"), **args)


@pytest.mark.parametrize("make, words", [
    (lambda: uniform(1.0, 0.0), "low <= high"),
    (lambda: normal(0.0, -1.0), "std must be >= 0"),
    (lambda: relative(1.0, -0.1), "spread must be >= 0"),
    (lambda: relative(1.0, 0.1, "triangular"), "distribution"),
    (lambda: uniform("a", 1.0), "numeric"),
])
def test_malformed_samplers_are_refused(make, words):
    with pytest.raises(MonteCarloError, match=words):
        make()


def test_relative_and_vector_samplers():
    rng = np.random.default_rng(0)
    r = [relative(0.05, 0.1)(rng) for _ in range(500)]
    assert 0.045 <= min(r) and max(r) <= 0.055
    v = uniform(-np.ones(3), np.ones(3))(rng)
    assert v.shape == (3,) and np.all(np.abs(v) <= 1)


def test_draw_samples_are_the_study_samples():
    from nhcontrol.applications.verify import draw_samples

    res = monte_carlo(sf.settle, SAMPLERS, 10, success={"final": 0.2}, seed=9)
    assert draw_samples(SAMPLERS, 10, seed=9) == list(res.samples)
