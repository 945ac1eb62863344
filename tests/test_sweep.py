"""nhcontrol.sweep: every back-end returns the same values in grid order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nhcontrol.sweep import SweepError, SweepResult, grid_points, sweep


def _f(a, b):
    """Module-level (picklable) function with an order-sensitive result."""
    return a * 10 + b + math.sin(a)


GRID = {"a": [0, 1, 2], "b": [0.5, 0.25]}
EXPECTED = tuple(_f(a, b) for a in GRID["a"] for b in GRID["b"])


def test_grid_points_cartesian_last_fastest():
    names, pts = grid_points(GRID)
    assert names == ("a", "b")
    assert pts[:3] == ({"a": 0, "b": 0.5}, {"a": 0, "b": 0.25}, {"a": 1, "b": 0.5})
    assert len(pts) == 6


def test_grid_points_explicit_list():
    names, pts = grid_points([{"a": 1, "b": 2}, {"a": 3, "b": 4}])
    assert names == ("a", "b") and pts[1] == {"a": 3, "b": 4}


@pytest.mark.parametrize("backend", ["serial", "threads", "processes", "dask"])
def test_backends_agree(backend):
    res = sweep(_f, GRID, backend=backend, max_workers=2)
    assert isinstance(res, SweepResult)
    assert res.values == EXPECTED
    assert res.column("a") == (0, 0, 1, 1, 2, 2)
    assert len(res) == 6
    if backend == "dask":
        pytest.importorskip("dask")
        assert res.backend == "dask"
    else:
        assert res.backend == backend


def test_progress_bar_does_not_change_results(capsys):
    res = sweep(_f, GRID, progress=True)
    assert res.values == EXPECTED
    assert "6/6" in capsys.readouterr().err


def test_numpy_values_and_lambda_serial():
    res = sweep(lambda v: np.linalg.eigvals(np.array([[0.0, 1.0], [-v, 0.0]])),
                {"v": np.linspace(1.0, 4.0, 4)})
    assert np.allclose([np.max(r.imag) for r in res.values], [1.0, np.sqrt(2), np.sqrt(3), 2.0])


def test_errors():
    with pytest.raises(SweepError, match="unknown sweep backend 'mpi'"):
        sweep(_f, GRID, backend="mpi")
    with pytest.raises(SweepError, match="grid is empty"):
        sweep(_f, {})
    with pytest.raises(SweepError, match="grid axis 'b' has no values"):
        sweep(_f, {"a": [1], "b": []})
    with pytest.raises(SweepError, match=r"every grid point must have the keys \['a', 'b'\]"):
        grid_points([{"a": 1, "b": 2}, {"a": 1}])
    with pytest.raises(SweepError, match="max_workers must be a positive integer"):
        sweep(_f, GRID, backend="processes", max_workers=0)
    with pytest.raises(SweepError, match="'c' is not a parameter"):
        sweep(_f, GRID).column("c")
    with pytest.raises(ZeroDivisionError):
        sweep(lambda a: 1 / a, {"a": [1, 0]})
    assert issubclass(SweepError, ValueError)
