"""BLAS threads in the hot paths (nhcontrol._util.blas): limited inside, restored after, only
for state dimensions >= MIN_DIM, configurable through NHCONTROL_BLAS_THREADS."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from nhcontrol._util import blas
from nhcontrol._util.errors import ConfigurationError


@pytest.fixture(autouse=True)
def _several_blas_threads():
    """The suite runs BLAS on one thread (conftest.py); these tests need a multi-threaded BLAS to
    see the limit act, so they run with two threads and restore the suite's setting after."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):
        yield


def _threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_configured_limit(monkeypatch):
    monkeypatch.delenv(blas.ENV_BLAS_THREADS, raising=False)
    assert blas.configured_limit() == 1
    monkeypatch.setenv(blas.ENV_BLAS_THREADS, "3")
    assert blas.configured_limit() == 3
    monkeypatch.setenv(blas.ENV_BLAS_THREADS, "off")
    assert blas.configured_limit() is None
    monkeypatch.setenv(blas.ENV_BLAS_THREADS, "many")
    with pytest.raises(ConfigurationError, match=r"NHCONTROL_BLAS_THREADS='many' is not valid"):
        blas.configured_limit()


def test_limit_inside_restore_after_nested(monkeypatch):
    monkeypatch.delenv(blas.ENV_BLAS_THREADS, raising=False)
    before = _threads()
    assert before, "numpy links a BLAS that threadpoolctl sees"
    with blas.blas_threads():
        assert all(n == 1 for n in _threads())
        with blas.blas_threads():
            assert all(n == 1 for n in _threads())
        assert all(n == 1 for n in _threads())          # the outer block still holds the limit
    assert _threads() == before
    monkeypatch.setenv(blas.ENV_BLAS_THREADS, "off")
    with blas.blas_threads():
        assert _threads() == before


def test_decorator_limits_only_large_problems(monkeypatch):
    monkeypatch.delenv(blas.ENV_BLAS_THREADS, raising=False)
    before = _threads()
    seen = {}

    @blas.limit_blas_threads(lambda n: n)
    def work(n):
        seen[n] = _threads()
        return np.eye(n).sum()

    assert work(blas.MIN_DIM - 1) == blas.MIN_DIM - 1 and work(blas.MIN_DIM) == blas.MIN_DIM
    assert seen[blas.MIN_DIM - 1] == before
    assert all(n == 1 for n in seen[blas.MIN_DIM])
    assert _threads() == before


def test_concurrent_limited_calls_restore_once():
    before = _threads()
    barrier = threading.Barrier(4)

    def run():
        with blas.blas_threads(1):
            barrier.wait()
            np.linalg.solve(np.eye(80) * 2.0, np.ones(80))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _threads() == before


def test_finite_horizon_lqr_runs_limited_for_large_n(monkeypatch):
    """The decorated hot path gives the same gains with the limit and without it."""
    from nhcontrol.design import finite_horizon_lqr

    rng = np.random.default_rng(0)
    n, k, N = blas.MIN_DIM + 4, 3, 5
    Ad = np.eye(n) + 0.01 * rng.standard_normal((N, n, n))
    Bd = 0.1 * rng.standard_normal((N, n, k))
    monkeypatch.setenv(blas.ENV_BLAS_THREADS, "off")
    free = finite_horizon_lqr((Ad, Bd), np.eye(n), np.eye(k), np.eye(n))
    monkeypatch.delenv(blas.ENV_BLAS_THREADS)
    limited = finite_horizon_lqr((Ad, Bd), np.eye(n), np.eye(k), np.eye(n))
    np.testing.assert_allclose(limited.K, free.K, rtol=1e-12, atol=1e-14)
