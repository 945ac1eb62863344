"""benchmarks/sweep.py: its two eigenvalue paths (one linearization per call, and a chunk of
closed-form reference points in one stacked call) agree, and the grid sweep through both gives
the same table. Timings are the benchmark's business, not asserted here."""

from __future__ import annotations

import numpy as np

from nhcontrol.models import benchmark_bicycle as bb
from nhcontrol.sweep import sweep

from _helpers import load_benchmark


def _load():
    return load_benchmark("sweep")


def test_chunked_and_point_paths_agree():
    mod = _load()
    model, part = bb.model(), bb.PARTITION_4_172
    grid = {"c": [0.06, 0.1], "v": [0.5, 4.0, 6.5, 9.0]}
    consts = {"model": model, "part": part}
    one = sweep(mod.eig_point, grid, constants=consts)
    chunk = sweep(mod.eig_chunk, grid, constants=consts, vectorized=True, chunk_size=4)
    for a, b in zip(one.values, chunk.values):
        assert a.shape == (4,)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    # with a trail of 0.1 m the weave is unstable at 0.5 m/s, the bicycle self-stable at 6.5 m/s
    nominal = dict(zip([(p["c"], p["v"]) for p in one.points], one.values))
    assert np.max(nominal[(0.1, 6.5)].real) < 0 < np.max(nominal[(0.1, 0.5)].real)
