"""Coordinate partition (Eq. (4.96)): structural and numerical checks, automatic suggestion."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import PartitionError
from nhcontrol._util.validation import COND_MAX
from nhcontrol.linearization import Partition, linearize, suggest_partition
from test_linearize_third_toys import (ToyModel, constant_reference, pendulum, sleigh,
                                       sleigh_redundant, sleigh_state)


@pytest.fixture(scope="module")
def slr():
    return sleigh_redundant()


@pytest.fixture(scope="module")
def slr_ref(slr):
    x0, xd0 = sleigh_state(2.0, 0.3, redundant=True)
    return constant_reference(slr, x0, xd0)


def test_from_dict_aliases_and_roundtrip():
    a = Partition.from_dict({"x_ai": ["x", "theta"], "x_ad": ["y"], "x_d": []})
    b = Partition.from_dict(dict(independent="x theta", admissible_dependent=["y"]))
    assert a == b and a.coordinates == ("x", "theta", "y")
    assert Partition.from_dict(a.to_dict()) == a


@pytest.mark.parametrize("d,match", [
    ({"independent": ["x"], "bogus": ["y"]}, r"unknown partition keys \['bogus'\]"),
    ({"admissible_dependent": ["y"]}, "needs the 'independent'"),
    ({"independent": ["x"], "x_ai": ["y"]}, "given twice"),
    (["x", "y"], "expects a mapping"),
])
def test_from_dict_errors(d, match):
    with pytest.raises(PartitionError, match=match):
        Partition.from_dict(d)


def test_structural_errors_are_all_listed(slr):
    """Unknown, duplicated and missing names and every wrong count in ONE message."""
    bad = Partition(["xp", "xp", "nope"], [], ["xg"])
    with pytest.raises(PartitionError) as exc:
        bad.indices(slr)
    msg = str(exc.value)
    assert "unknown coordinates ['nope']" in msg
    assert "more than once: ['xp']" in msg
    assert "missing from the partition: ['yp', 'yg', 'theta']" in msg
    assert "admissible_dependent (x_ad) must hold l = 1 names" in msg
    assert "dependent (x_d) must hold m = 2 names" in msg
    assert "independent (x_ai) must hold n-m-l = 2 names" in msg


@pytest.mark.parametrize("part,match", [
    (Partition(["xp", "theta", "yp"], [], ["xg", "yg"]), r"x_ad\) must hold l = 1 names, got 0"),
    (Partition(["xp"], ["yp", "theta"], ["xg", "yg"]), r"x_ai\) must hold n-m-l = 2 names"),
    (Partition(["xp", "theta"], ["yp"], ["xg", "zz"]), r"unknown coordinates \['zz'\]"),
])
def test_wrong_counts_and_names(slr, slr_ref, part, match):
    with pytest.raises(PartitionError, match=match):
        part.check(slr, slr_ref)
    with pytest.raises(PartitionError, match=match):
        linearize(slr, slr_ref, part)


def test_singular_dependent_block_pendulum():
    """Pendulum at the bottom: ∂C/∂x = 2x = 0, so x cannot be dependent; D_dd (Eq. (2.131))
    and ∂C/∂x_d (Eq. (4.105)) are named with cond = inf and a valid partition is suggested."""
    cm = pendulum()
    ref = constant_reference(cm, np.array([0.0, -1.5]), np.zeros(2))
    bad = Partition(["y"], [], ["x"])
    with pytest.raises(PartitionError, match=r"D_dd \(Eq. \(2.131\)\) for \['x'\]: cond = inf"
                       ) as exc:
        bad.check(cm, ref)
    msg = str(exc.value)
    assert "dC/dx_d (Eq. (4.105))" in msg
    assert "independent=['x'], admissible_dependent=[], dependent=['y']" in msg
    with pytest.raises(PartitionError, match="singular at the reference"):
        linearize(cm, ref, bad)


def test_singular_bbar_ad_sleigh():
    """Sleigh heading along X (θ = 0): the blade constraint -sin θ ẋ + cos θ ẏ = 0 does not
    involve ẋ, so x cannot be the admissible dependent coordinate: B̄_ad (Eq. (4.116)) is named."""
    cm = sleigh()
    x0, xd0 = sleigh_state(2.0, 0.0)
    ref = constant_reference(cm, x0, xd0)
    bad = Partition(["y", "theta"], ["x"], [])
    with pytest.raises(PartitionError, match=r"Bbar_ad \(Eq. \(4.116\)\) for \['x'\]") as exc:
        bad.check(cm, ref)
    assert "admissible_dependent=['y']" in str(exc.value)
    # at another heading the same partition is valid
    x1, xd1 = sleigh_state(2.0, 0.3)
    rep = bad.check(cm, constant_reference(cm, x1, xd1))
    assert rep.ok and rep.conditions["Bbar_ad"] == pytest.approx(1 / np.sin(0.3))


def test_singular_point_inside_trajectory_reported_with_time():
    """Vectorised linearize checks every point: the sleigh turning through θ = 0 makes the
    partition (y, θ | x) singular exactly at the time the heading crosses zero."""
    cm = sleigh()
    from test_linearize_third_toys import ToyReference, inverse_dynamics
    w = 0.5

    def x(t):
        return np.array([0.0, 0.0, w * (t - 1.0)])

    def xd(t):
        th = w * (t - 1.0)
        return np.array([np.cos(th), np.sin(th), w])

    def xdd(t):
        th = w * (t - 1.0)
        return np.array([-w * np.sin(th), w * np.cos(th), 0.0])

    def forces(t):   # Λ0 and the inputs (F, tau) that drive this turn (inverse dynamics)
        return inverse_dynamics(cm, x(t), xd(t), xdd(t), actuated=True)

    ref = ToyReference(x, xd, xdd, lambda t: forces(t)[0], lambda t: forces(t)[1], False,
                       cm._pdef.copy())
    with pytest.raises(PartitionError, match=r"t = 1\b"):
        linearize(cm, ref, Partition(["y", "theta"], ["x"], []), t=np.array([0.0, 0.5, 1.0, 2.0]))
    # without the singular time the same call works
    res = linearize(cm, ref, Partition(["y", "theta"], ["x"], []), t=np.array([0.0, 0.5, 2.0]))
    assert res.A.shape == (3, 5, 5)


def test_report_contents(slr, slr_ref):
    """The report gives each block's (row-scaled) singular values, its relative condition
    number ‖F‖₂ / σ_min (>= the classical condition number of the block) and the tolerance."""
    part = Partition(["xp", "theta"], ["yp"], ["xg", "yg"])
    rep = part.check(slr, slr_ref)
    assert [b.block for b in rep.blocks] == ["D_dd", "dC/dx_d", "Bbar_ad"]
    for b in rep.blocks:
        assert b.cond_max == COND_MAX
        assert b.singular_values.shape == (len(b.coordinates),)
        assert b.cond >= b.singular_values[0] / b.singular_values[-1] * (1 - 1e-12)
    # D_dd by hand: rows of D scaled to unit norm, columns (yp, xg, yg)
    x0 = slr_ref.x(0.0)
    D = slr.D(x0)
    F = D / np.linalg.norm(D, axis=1)[:, None]
    blk = F[:, [1, 2, 3]]
    np.testing.assert_allclose(rep.blocks[0].cond,
                               np.linalg.norm(F, 2) / np.linalg.svd(blk)[1][-1], rtol=1e-12)
    # det D_dd = det(dC/dx_d) det(Bbar_ad) (Schur complement)
    Cx, B = slr.Cx(x0), slr.B(x0)
    Cxd = Cx[:, [2, 3]]
    Bbar_ad = B[:, [1]] - B[:, [2, 3]] @ np.linalg.solve(Cxd, Cx[:, [1]])
    np.testing.assert_allclose(np.linalg.det(D[:, [1, 2, 3]]),
                               np.linalg.det(Cxd) * np.linalg.det(Bbar_ad), rtol=1e-12)
    assert "cond =" in str(rep)


def test_suggest_partition_valid_and_reports(slr, slr_ref):
    sug = suggest_partition(slr, slr_ref)
    assert sug.report is not None and sug.report.ok
    assert sorted(sug.coordinates) == sorted(slr.coordinates)
    assert sug.check(slr, slr_ref).ok
    assert all(c < 1e3 for c in sug.report.conditions.values())


@pytest.mark.parametrize("prefer", [("xp", "theta"), ("yp", "theta"), ("xg", "yg")])
def test_suggest_partition_keeps_preferred_independent(slr, slr_ref, prefer):
    sug = suggest_partition(slr, slr_ref, prefer=prefer)
    assert set(sug.independent) == set(prefer)
    assert sug.check(slr, slr_ref).ok


def test_suggest_partition_prefer_impossible_falls_back():
    """Pendulum at the bottom: y cannot be independent (∂C/∂x = 0 there), so prefer=['y'] is
    overridden and x stays independent."""
    cm = pendulum()
    ref = constant_reference(cm, np.array([0.0, -1.5]), np.zeros(2))
    sug = suggest_partition(cm, ref, prefer=["y"])
    assert sug.independent == ("x",) and sug.dependent == ("y",)


def test_suggest_partition_unknown_prefer(slr, slr_ref):
    with pytest.raises(PartitionError, match=r"prefer lists unknown coordinates \['q'\]"):
        suggest_partition(slr, slr_ref, prefer=["q"])


def _twice_constrained_point():
    """Point mass on the unit circle given twice (C = [c, 2c], rank Cx = 1 < m = 2) and a
    reference at rest at (0.6, -0.8)."""
    x, y = sp.symbols("x y")
    cm = ToyModel("twice", [x, y], list(sp.symbols("x_d y_d")), [], [sp.Symbol("L")],
                  {"L": 1.0}, sp.eye(2), [0, 0], [x**2 + y**2 - 1, 2 * (x**2 + y**2 - 1)], [])
    from test_linearize_third_toys import ToyReference
    ref = ToyReference(lambda t: np.array([0.6, -0.8]), lambda t: np.zeros(2),
                       lambda t: np.zeros(2), lambda t: np.zeros(2), lambda t: np.zeros(0),
                       True, np.array([1.0]))
    return cm, ref


def test_suggest_partition_redundant_constraints():
    """Two identical holonomic constraints: Cx has rank 1 < m = 2; the error gives the singular
    values and the tolerance."""
    cm, ref = _twice_constrained_point()
    with pytest.raises(PartitionError, match=r"rank 1 < 2 .*singular values \[.*\], tolerance"):
        suggest_partition(cm, ref)


def test_suggested_partition_linearizes_to_same_spectrum(slr, slr_ref):
    """The suggestion gives the closed-form characteristic polynomial λ⁴(λ + k) (1e-10)."""
    res = linearize(slr, slr_ref, suggest_partition(slr, slr_ref))
    k = 3.0 * 0.25 * 2.0 / (0.4 + 3.0 * 0.25**2)
    np.testing.assert_allclose(np.poly(res.A), [1, k, 0, 0, 0, 0], atol=1e-10)


def test_names_must_be_a_sequence():
    with pytest.raises(PartitionError, match="independent must be a sequence of coordinate names"):
        Partition(3.0)


def test_singular_with_no_valid_suggestion():
    """Redundant constraints: the check fails AND no partition can be suggested; the message
    says both."""
    cm, ref = _twice_constrained_point()
    with pytest.raises(PartitionError, match="(?s)D_dd.*no valid partition could be suggested"):
        Partition([], [], ["x", "y"]).check(cm, ref)


def test_suggest_partition_below_tolerance(slr, slr_ref):
    """With an (absurdly) strict cond_max the best pivoted choice is still rejected, with the
    full report."""
    with pytest.raises(PartitionError, match="(?s)no well-conditioned partition.*D_dd"):
        suggest_partition(slr, slr_ref, cond_max=1.5)


def test_nearly_singular_block_caught_by_condition_number():
    """Heading 1e-12 rad: B̄_ad = -sin θ is not exactly zero (the solve succeeds) and its
    classical condition number is 1 (a 1 x 1 block), but relative to the O(1) entry cos θ of
    the same constraint row it is 1e12 times too small: the cheap 1-norm estimate flags the
    point and the SVD decision raises."""
    cm = sleigh()
    x0, xd0 = sleigh_state(2.0, 1e-12)
    ref = constant_reference(cm, x0, xd0)
    part = Partition(["y", "theta"], ["x"], [])
    with pytest.raises(PartitionError, match=r"Bbar_ad \(Eq. \(4.116\)\) for \['x'\]: cond = "):
        linearize(cm, ref, part)
    # with the check disabled the (meaningless) result is returned, finite
    res = linearize(cm, ref, part, check=False)
    assert np.all(np.isfinite(res.A))


def test_partition_is_an_immutable_value():
    """Partition and PartitionIndices behave as the frozen dataclasses they were: keyword or
    positional construction, equality and hash over the names (not the report), a repr of
    them, no assignment, pickling."""
    import pickle
    from dataclasses import FrozenInstanceError

    from nhcontrol.linearization import PartitionIndices

    p = Partition(["x", "theta"], "y", dependent=())
    q = Partition(independent=("x", "theta"), admissible_dependent=["y"])
    assert p == q and hash(p) == hash(q) and p != Partition(["x"], ["theta", "y"])
    assert p != ("x", "theta", "y") and p.__eq__(object()) is NotImplemented
    assert repr(p) == "Partition(independent=('x', 'theta'), admissible_dependent=('y',), dependent=())"
    r = Partition(p.independent, p.admissible_dependent, p.dependent, report="evidence")
    assert r == p and hash(r) == hash(p) and repr(r) == repr(p) and r.report == "evidence"
    with pytest.raises(FrozenInstanceError, match="independent"):
        p.independent = ("y",)
    with pytest.raises(FrozenInstanceError):
        del p.dependent
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(TypeError):
        Partition()                                           # independent is required
    idx = PartitionIndices(np.array([0]), np.array([1]), np.array([], dtype=np.intp),
                           np.array([0, 1]), 2, 0, 1)
    assert idx.n_ai == 1 and repr(idx).startswith("PartitionIndices(ai=array([0]), ad=array([1])")
    with pytest.raises(FrozenInstanceError):
        idx.n = 3
    idx.__dict__["_cache"] = 1                                # third.py caches state names there
    assert idx._cache == 1
