"""The compiled one-point path of ``linearize`` (nhcontrol.linearization._cpoint): the same matrices
as the numpy path (``point_procedure``) for the shipped references and at random points, the
general path (with its messages) whenever the compiled routine declines, and the hash-checked
library cache."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from nhcontrol.linearization import Partition, linearize, suggest_partition
from nhcontrol.linearization import _cpoint
from nhcontrol.linearization import third as third_mod
from nhcontrol.linearization._point import point_procedure
from nhcontrol.modeling import examples
from nhcontrol.reference import Reference


def _cases():
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.models import sleigh as sl

    def bicycle():
        cm = bb.model()
        return cm, bb.steady_forward(cm, 4.0), Partition.from_dict(bb.PARTITION_4_172)

    def bicycle_actuated():
        cm = bb.build(inputs=("T_phi", "T_delta")).compile()
        return cm, bb.steady_forward(cm, 3.0), Partition.from_dict(bb.PARTITION_4_172)

    def sleigh():
        cm = sl.model()
        ref = sl.straight_motion(cm, 1.0)
        return cm, ref, suggest_partition(cm, ref)

    def rolling_disc():
        from nhcontrol.models import rolling_wheel as rw
        cm = rw.model_disc()
        ref = rw.upright_rolling(cm, 3.0)
        return cm, ref, suggest_partition(cm, ref)

    return {"bicycle": bicycle, "bicycle_actuated": bicycle_actuated, "sleigh": sleigh,
            "rolling_disc": rolling_disc}


def _general(monkeypatch, cm, ref, part, **kw):
    """``linearize`` through the numpy path (the compiled routine switched off)."""
    with monkeypatch.context() as mp:
        mp.setattr(_cpoint, "point_function", lambda *a, **k: None)
        return linearize(cm, ref, part, **kw)


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(float(np.max(np.abs(b))), 1e-300) if b.size else 1.0
    return float(np.max(np.abs(a - b))) / scale if b.size else 0.0


@pytest.mark.c_compiler
@pytest.mark.parametrize("name", sorted(_cases()))
def test_compiled_point_equals_numpy_path(name, monkeypatch):
    cm, ref, part = _cases()[name]()
    assert cm.backend == "c"
    idx = part.indices(cm)
    assert _cpoint.point_function(cm, idx, third_mod.INPUT_CONSTRAINT_ATOL) is not None
    for t in (0.0, 0.37):
        fast = linearize(cm, ref, part, t=t)
        slow = _general(monkeypatch, cm, ref, part, t=t)
        assert fast.A.shape == slow.A.shape and fast.B.shape == slow.B.shape
        assert _rel(fast.A, slow.A) <= 1e-14 and _rel(fast.B, slow.B) <= 1e-14
        assert fast.states == slow.states and fast.inputs == slow.inputs
        assert fast.n_spurious == slow.n_spurious
    one = linearize(cm, ref, part, t=[0.2])            # a 1-element array: a leading axis
    assert one.A.shape == (1,) + fast.A.shape


@pytest.mark.parametrize("name", ["bicycle_actuated", "sleigh"])
def test_compiled_stack_equals_numpy_path(name, monkeypatch):
    """Stacked times (more than one block of `_cpoint.BLOCK` points): the same A and B as the
    numpy path, point by point."""
    cm, ref, part = _cases()[name]()
    ts = np.linspace(0.0, 2.0, _cpoint.BLOCK + 37)
    fast = linearize(cm, ref, part, t=ts)
    slow = _general(monkeypatch, cm, ref, part, t=ts)
    assert fast.A.shape == slow.A.shape == (ts.size,) + slow.A.shape[1:]
    assert _rel(fast.A, slow.A) <= 1e-14 and _rel(fast.B, slow.B) <= 1e-14
    np.testing.assert_array_equal(fast.t, ts)


@pytest.mark.c_compiler
def test_stack_through_the_blocked_kernel_equals_one_point_calls_bit_for_bit():
    """A stack of times goes through the blocked (vectorized) kernel entry when the processor
    runs it, and every point has the numbers of the one-point call, bit for bit."""
    cm, ref, part = _cases()["bicycle"]()
    run = _cpoint.point_function(cm, part.indices(cm), third_mod.INPUT_CONSTRAINT_ATOL)
    assert run.kernel_n == ("nhc_linearization_terms_b" if cm.vectorized else "nhc_linearization_terms_n")
    ts = np.linspace(0.0, 1.0, _cpoint.BLOCK + 7)       # a partial block and a partial SIMD block
    stacked = linearize(cm, ref, part, t=ts)
    for i in (0, 3, 4, 5, _cpoint.BLOCK - 1, _cpoint.BLOCK, ts.size - 1):
        one = linearize(cm, ref, part, t=ts[i])
        np.testing.assert_array_equal(stacked.A[i], one.A)


def test_compiled_stack_of_a_time_varying_reference(monkeypatch):
    """A non-steady reference (the lane change of the single-track model): every point differs."""
    from nhcontrol.models import lane_change as lc
    from nhcontrol.models import single_track as st

    cm = st.build("force_torque").system.compile()
    ref = lc.lane_change_reference(cm, 20.0)
    part = suggest_partition(cm, ref)
    ts = np.linspace(*ref.t_range, 300)
    fast = linearize(cm, ref, part, t=ts)
    slow = _general(monkeypatch, cm, ref, part, t=ts)
    assert _rel(fast.A, slow.A) <= 1e-13 and _rel(fast.B, slow.B) <= 1e-13


@pytest.mark.c_compiler
def test_compiled_point_is_the_path_taken(monkeypatch):
    """With C kernels, one point and a stack never reach the numpy Steps 1-7; with the Python
    kernels they do."""
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model()
    ref, part = bb.steady_forward(cm, 5.0), Partition.from_dict(bb.PARTITION_4_172)

    def boom(*a, **k):
        raise AssertionError("numpy path taken")

    monkeypatch.setattr(third_mod, "point_procedure", boom)
    assert linearize(cm, ref, part, t=np.linspace(0.0, 1.0, 300)).A.shape == (300, 10, 10)
    res = linearize(cm, ref, part)
    from nhcontrol.analysis import match_spectra, structural_zeros
    from nhcontrol.reproduce.bicycle_benchmark import reference_data

    A = np.asarray(res.A)
    keep = structural_zeros(A).keep
    eig = np.linalg.eigvals(A[np.ix_(keep, keep)])
    assert match_spectra(reference_data()["eigenvalues"][5.0], eig)[1] < 1e-12  # Meijaard et al. (2007)
    py = bb.build().compile(backend="python")
    with pytest.raises(AssertionError, match="numpy path"):
        linearize(py, bb.steady_forward(py, 5.0), part)


@pytest.mark.parametrize("builder", [examples.sleigh, examples.rolling_disc,
                                     lambda: __import__("nhcontrol.models.benchmark_bicycle",
                                                        fromlist=["build"]).build(
                                         inputs=("T_phi", "T_delta"))])
@pytest.mark.c_compiler
def test_compiled_steps_equal_point_procedure_at_random_points(builder):
    """Steps 1-7 alone (check=False) at random states: the C routine and point_procedure agree
    to round-off relative to the size of A (random points are not motions of the model)."""
    cm = builder().compile()
    rng = np.random.default_rng(3)
    n, ml, k = cm.n, cm.m + cm.l, cm.ninputs
    x0 = rng.uniform(-0.5, 0.5, n)
    part = suggest_partition(cm, Reference.constant_velocity(cm, x0, np.zeros(n), lam=np.zeros(ml),
                                                             check=False))
    idx = part.indices(cm)
    fn = _cpoint.point_function(cm, idx, np.inf)          # inputs in constraints allowed here
    worst = 0.0
    for _ in range(20):
        x, xd, xdd = (rng.uniform(-0.5, 0.5, n) for _ in range(3))
        lam = rng.uniform(-1, 1, ml)
        u = rng.uniform(-1, 1, k) if k else None
        got = fn(x, xd, xdd, lam, u, None, False, 1e-8, 1e8)
        ref = point_procedure(cm.linearization_terms(x, xd, xdd, lam, u), idx, k)
        if got is None:
            assert not (np.all(np.isfinite(ref["A"])) and np.all(np.isfinite(ref["B"])))
            continue
        # round-off grows with the condition of the blocks solved at this (random) point
        kappa = max([np.linalg.cond(ref["m0"])]
                    + [np.linalg.cond(ref[inv]) for inv in ("D_dd_inv", "Cx_d_inv", "Bbar_ad_inv")
                       if inv in ref and ref[inv].size])
        err = max(_rel(got[0], ref["A"]), _rel(got[1], ref["B"]) if k else 0.0)
        worst = max(worst, err / kappa)
    assert worst <= 1e-14, worst


def test_declined_points_get_the_general_messages():
    """A reference that is not a motion, an ill-conditioned partition: the compiled routine
    declines and the general path raises its usual errors (NaN references: test_bad_inputs)."""
    from nhcontrol._util.errors import PartitionError, ReferenceMotionError
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model()
    ref = bb.steady_forward(cm, 5.0)
    part = Partition.from_dict(bb.PARTITION_4_172)
    x0, xd0 = ref.x(0.0), ref.xd(0.0)
    bad = Reference.constant_velocity(cm, x0, xd0 * np.r_[1.0, np.ones(10) * 1.01], lam=ref.lam(0.0),
                                      check=False)
    with pytest.raises(ReferenceMotionError):
        linearize(cm, bad, part)
    # A fixed singular partition, singular for a reason that does not depend on the code under
    # test: on flat ground the horizontal position x_b does not enter the holonomic contact
    # constraints C(x) (Eq. (4.105)), so with x_b dependent (swapped with xi_R) the block
    # dC/dx_d has a zero column: singular value exactly 0.
    singular = Partition.from_dict({
        "independent": ["xi_R", "phi_b", "delta"],
        "admissible_dependent": ["y_b", "psi_b", "theta_R", "theta_F"],
        "dependent": ["z_b", "theta_b", "x_b", "xi_F"]})
    dCdx = np.asarray(cm.Cx(x0))[:, [names.index(c) for c in singular.dependent]] \
        if (names := list(cm.coordinates)) else None
    assert np.all(dCdx[:, 2] == 0.0)                 # the zero column of x_b, independently
    with pytest.raises(PartitionError, match=r"(?s)dC/dx_d.*'x_b'.*singular values \[.*, 0\]"):
        linearize(cm, ref, singular)


@pytest.mark.c_compiler
def test_tampered_routine_library_is_rebuilt(tmp_path, monkeypatch):
    from nhcontrol.compiled import cbackend
    from nhcontrol.models import sleigh as sl

    monkeypatch.setattr(cbackend, "SHIPPED_DIR", None)    # (the library of the kernel cache)

    cm = sl.build().compile(cache_dir=tmp_path)
    ref = sl.straight_motion(cm, 1.0)
    part = suggest_partition(cm, ref)
    first = linearize(cm, ref, part)
    lib = _cpoint.library_path(tmp_path)
    assert lib.exists() and lib.with_name(lib.name + ".sha256").exists()
    blob = bytearray(lib.read_bytes())
    blob[len(blob) // 3] ^= 0xFF
    (tmp_path / "t").write_bytes(bytes(blob))
    os.replace(tmp_path / "t", lib)
    _cpoint._LIBS.pop(str(tmp_path), None)
    _cpoint._FUNCS.clear()
    with pytest.warns(RuntimeWarning, match="unusable compiled linearization library"):
        again = linearize(cm, ref, part)
    np.testing.assert_array_equal(again.A, first.A)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _cpoint._LIBS.pop(str(tmp_path), None)
        _cpoint._FUNCS.clear()
        np.testing.assert_array_equal(linearize(cm, ref, part).A, first.A)


def test_partition_search_terms_of_the_compiled_path(monkeypatch):
    """The lazily used search for a partition with an exact spurious structure (steady
    references) gets the same kernel terms from the compiled path as from the numpy path."""
    cm, ref, part = _cases()["bicycle"]()
    for t in (0.0, np.linspace(0.0, 1.0, 3)):
        fast = linearize(cm, ref, part, t=t)._cache["search"]()
        slow = _general(monkeypatch, cm, ref, part, t=t)._cache["search"]()
        assert (fast is None) == (slow is None)
        if fast is not None:
            assert fast[1] == slow[1] and fast[0].method == slow[0].method
            np.testing.assert_allclose(np.sort_complex(fast[0].spurious),
                                       np.sort_complex(slow[0].spurious), atol=1e-12)


def test_compiled_point_from_threads():
    """Each thread has its own work arrays: concurrent calls give the result of a lone call."""
    import threading

    cm, ref, part = _cases()["bicycle"]()
    A0 = np.array(linearize(cm, ref, part, t=0.3).A)
    bad: list[int] = []

    def work() -> None:
        for i in range(50):
            if not np.array_equal(linearize(cm, ref, part, t=0.3).A, A0):
                bad.append(i)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not bad


# ------------------------------------------------- the routine specialised to model and partition
def _both(cm, idx):
    """``(specialised, generic)`` one-point functions of `_cpoint` for ``cm`` and ``idx``."""
    from nhcontrol.linearization import _cspecial

    assert _cspecial.routine(cm, idx, cm._ck) is not None       # built: point_function loads it
    _cpoint._FUNCS.clear()
    sp = _cpoint.point_function(cm, idx, np.inf)
    assert sp is not None
    orig = _cspecial.routine
    _cspecial.routine = lambda *a, **k: None
    try:
        _cpoint._FUNCS.clear()
        gen = _cpoint.point_function(cm, idx, np.inf)
    finally:
        _cspecial.routine = orig
        _cpoint._FUNCS.clear()
    return sp, gen


def _same_or_both_declined(a, b, tol=1e-13):
    assert (a is None) == (b is None)
    if a is not None:
        assert _rel(a[0], b[0]) <= tol and _rel(a[1], b[1]) <= tol


@pytest.mark.c_compiler
@pytest.mark.parametrize("name", sorted(_cases()))
def test_specialised_routine_equals_generic_routine(name):
    """The routine generated for the model and partition (linearization/_cspecial.py) gives the
    generic routine's A and B (to 1e-13; in practice bit for bit) and declines the same points:
    the shipped reference, points that are not motions (flag 1), random points without the
    check, one and stacked points."""
    cm, ref, part = _cases()[name]()
    sp, gen = _both(cm, part.indices(cm))
    rng = np.random.default_rng(5)
    for t in (0.0, 0.37):
        x, xd, xdd, lam, u = ref.values(t)
        u = u if u.size else None
        a = sp(x, xd, xdd, lam, u, None, True, ref.check_tol, 1e8)
        assert a is not None
        _same_or_both_declined(a, gen(x, xd, xdd, lam, u, None, True, ref.check_tol, 1e8))
        bad = xd * 1.01 + 0.01
        assert sp(x, bad, xdd, lam, u, None, True, ref.check_tol, 1e8) is None
        assert gen(x, bad, xdd, lam, u, None, True, ref.check_tol, 1e8) is None
    n, c, k = cm.n, cm.m + cm.l, cm.ninputs
    for _ in range(10):
        pt = [rng.uniform(-0.5, 0.5, s) for s in (n, n, n, c)]
        u = rng.uniform(-1, 1, k) if k else None
        _same_or_both_declined(sp(*pt, u, None, False, 1e-8, 1e8), gen(*pt, u, None, False, 1e-8, 1e8))
    ts = np.linspace(0.0, 1.0, 7)
    X = ref.values(ts)
    U = X[4] if X[4].size else None
    _same_or_both_declined(sp.many(*X[:4], U, None, True, ref.check_tol, 1e8),
                           gen.many(*X[:4], U, None, True, ref.check_tol, 1e8))


@pytest.mark.c_compiler
def test_specialised_routine_in_the_prepared_linearizer():
    """The prepared linearizer calls the specialised routine; its kinematics for the first-order
    rows (T0, the rows [ad, d] of V̄̄0, Th0) equal the generic routine's."""
    from nhcontrol.linearization import _cspecial

    cm, ref, part = _cases()["bicycle"]()
    lz = cm.linearizer(part)
    lz._specialise()                           # built now (else after SPECIALISE_AFTER calls)
    assert lz._keep[-1] is not None            # the specialised library
    orig = _cspecial.routine
    _cspecial.routine = lambda *a, **k: None
    try:
        lg = cm.linearizer(part)
    finally:
        _cspecial.routine = orig
    assert lg._keep[-1] is None
    for t in (0.0, 0.5):
        vals = ref.values(t)
        got, want = lz._with_kinematics(*vals[:4], None), lg._with_kinematics(*vals[:4], None)
        for a, b in zip(got, want):
            assert _rel(a, b) <= 1e-13
        A, B = lz(*vals[:4])
        assert _rel(A, want[0]) <= 1e-13
        assert np.array_equal(lz.bind(*vals[:4])()[0], A)


@pytest.mark.c_compiler
def test_specialised_routine_guards():
    """A layout without the structural pattern keeps the generic routine; arguments of another
    model or partition are refused (16) instead of being misread."""
    from nhcontrol.linearization import _cspecial

    cm, ref, part = _cases()["sleigh"]()
    idx = part.indices(cm)
    lib = _cspecial.routine(cm, idx, cm._ck)
    assert lib is not None

    class NoPattern:
        layout = {"functions": {"linearization_terms": {
            k: v for k, v in cm._ck.layout["functions"]["linearization_terms"].items() if k != "nonzero"}}}

    assert _cspecial.routine(cm, idx, NoPattern()) is None
    dims, offs, ix = _cpoint.routine_arrays(cm, idx, cm._ck)
    x, xd, xdd, lam, _ = ref.values(0.0)
    T = cm._ck.raw["linearization_terms"](x, xd, xdd, lam, np.zeros(cm.ninputs), cm._p0)
    ns = 2 * (idx.n - idx.m - idx.l) + idx.l
    A, B = np.empty((ns, ns)), np.empty((ns, max(cm.ninputs, 1)))
    ffi = lib.ffi
    fb = ffi.from_buffer

    def call(dims, ix):
        return lib.third(fb("int64_t[]", dims), fb("int64_t[]", ix), fb("double[]", T),
                         fb("int64_t[]", offs), fb("double[]", np.zeros(max(1, idx.m))), ffi.NULL,
                         fb("double[]", x), fb("double[]", xd), fb("double[]", xdd),
                         fb("double[]", lam), 1e-8, 1e8, 1e-12, fb("double[]", A), fb("double[]", B),
                         ffi.NULL, 0, ffi.NULL)

    d0 = dims.copy()
    d0[4] = 0
    assert call(d0, ix) == 0
    assert call(d0, ix[::-1].copy()) == 16
    d1 = d0.copy()
    d1[0] += 1
    assert call(d1, ix) == 16


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ball_plate", "escooter", "rolling_torus", "hoop", "single_track",
                                  "skateboard", "toroidal_bicycle", "waveboard", "hydraulic_fourbar"])
def test_specialised_routine_equals_generic_every_model(name):
    """Every other shipped model: the specialised and the generic routine at random points
    (Steps 1-7 without the check) agree to 1e-13."""
    from nhcontrol.models import (ball_plate, escooter, hydraulic_fourbar, rolling_torus, rolling_wheel,
                                  single_track, sleigh, toroidal_bicycle, waveboard)
    build = {"ball_plate": ball_plate.build, "escooter": escooter.build, "rolling_torus": rolling_torus.build,
             "hoop": rolling_wheel.build_hoop, "single_track": lambda: single_track.build().system,
             "skateboard": sleigh.build_skateboard, "toroidal_bicycle": toroidal_bicycle.build,
             "waveboard": waveboard.build, "hydraulic_fourbar": hydraulic_fourbar.build}[name]
    cm = build().compile()
    if getattr(cm, "constraint_inputs", ()):
        pytest.skip("inputs in the nonholonomic constraints: the general path")
    rng = np.random.default_rng(11)
    n, c, k = cm.n, cm.m + cm.l, cm.ninputs
    x0 = rng.uniform(-0.5, 0.5, n)
    part = suggest_partition(cm, Reference.constant_velocity(cm, x0, np.zeros(n), lam=np.zeros(c),
                                                             check=False))
    sp, gen = _both(cm, part.indices(cm))
    for _ in range(10):
        pt = [rng.uniform(-0.5, 0.5, s) for s in (n, n, n, c)]
        u = rng.uniform(-1, 1, k) if k else None
        _same_or_both_declined(sp(*pt, u, None, False, 1e-8, 1e8), gen(*pt, u, None, False, 1e-8, 1e8))


@pytest.mark.c_compiler
def test_linearize_specialises_after_some_points(tmp_path, monkeypatch):
    """`linearize` builds the specialised routine only after `_cpoint.SPECIALISE_AFTER` points of
    one model and partition (a one-off call does not wait for the compiler); the prepared
    linearizer builds it at once; the results do not change."""
    from nhcontrol.models import sleigh as sl

    cm = sl.build().compile(cache_dir=tmp_path)
    ref = sl.straight_motion(cm, 1.0)
    part = suggest_partition(cm, ref)
    monkeypatch.setattr(_cpoint, "SPECIALISE_AFTER", 50)
    _cpoint._FUNCS.clear()

    def libs():
        return [p for p in tmp_path.glob("nhc_pspec_*") if not p.name.endswith(".sha256")]

    one = linearize(cm, ref, part, t=0.1)
    assert not libs()
    ts = np.linspace(0.0, 1.0, 60)
    first = linearize(cm, ref, part, t=ts)
    assert len(libs()) == 1
    again = linearize(cm, ref, part, t=ts)
    assert _rel(again.A, first.A) <= 1e-13 and _rel(again.B, first.B) <= 1e-13
    assert _rel(linearize(cm, ref, part, t=0.1).A, one.A) <= 1e-13
    _cpoint._FUNCS.clear()


@pytest.mark.c_compiler
def test_linearize_specialises_in_the_background(tmp_path, monkeypatch):
    """With background builds on (two cores or more, `cbackend.PREBUILD`), the point after
    `_cpoint.SPECIALISE_AFTER` does not wait for the compiler: the specialised routine is built
    in a thread, the generic one serves meanwhile (``routine(build=False)`` says None at once),
    then it is swapped in; the numbers are the generic routine's, bit for bit."""
    import threading

    from nhcontrol.compiled import cbackend
    from nhcontrol.linearization import _cspecial
    from nhcontrol.models import sleigh as sl

    cm = sl.build().compile(cache_dir=tmp_path)
    ref = sl.straight_motion(cm, 1.0)
    part = suggest_partition(cm, ref)
    idx = part.indices(cm)
    monkeypatch.setattr(_cpoint, "SPECIALISE_AFTER", 50)
    monkeypatch.setattr(cbackend, "PREBUILD", True)
    monkeypatch.setattr(cbackend, "_workers", lambda: 2)
    _cpoint._FUNCS.clear()
    release = threading.Event()
    real = _cspecial.routine

    def slow(*a, **k):                  # the build holds until the test has looked
        if k.get("build", True):
            release.wait(60.0)
        return real(*a, **k)
    monkeypatch.setattr(_cspecial, "routine", slow)
    ts = np.linspace(0.0, 1.0, 60)
    first = linearize(cm, ref, part, t=ts)                       # starts the build, returns
    try:
        assert [t.name for t in threading.enumerate()].count("nhcontrol-specialise") == 1
        assert real(cm, idx, cm._ck, build=False) is None        # building: generic meanwhile
        during = linearize(cm, ref, part, t=ts)
    finally:
        release.set()
    for t in threading.enumerate():
        if t.name == "nhcontrol-specialise":
            t.join(120.0)
    assert list(tmp_path.glob("nhc_pspec_*.so"))
    after = linearize(cm, ref, part, t=ts)                       # the specialised routine
    for got in (during, after):
        np.testing.assert_array_equal(got.A, first.A)
        np.testing.assert_array_equal(got.B, first.B)
    _cpoint._FUNCS.clear()


@pytest.mark.c_compiler
def test_prepared_linearizer_specialises_after_some_calls_or_when_bound(tmp_path, monkeypatch):
    """In an empty cache a linearizer starts with the generic routine (no compiler wait for a
    few calls), binds the specialised one after `_cpoint.SPECIALISE_AFTER` calls, or at once
    for `bind`; the numbers do not change."""
    from nhcontrol.models import sleigh as sl

    cm = sl.build().compile(cache_dir=tmp_path)
    ref = sl.straight_motion(cm, 1.0)
    part = suggest_partition(cm, ref)
    monkeypatch.setattr(_cpoint, "SPECIALISE_AFTER", 5)
    vals = [ref.values(t)[:4] for t in np.linspace(0.0, 1.0, 8)]
    lz = cm.linearizer(part)
    assert lz.compiled and lz._sp is None
    first = [lz(*v)[0].copy() for v in vals]
    assert lz._sp is not None                       # after 5 calls
    for v, A in zip(vals, first):
        np.testing.assert_array_equal(lz(*v)[0], A)
    again = cm.linearizer(part)                     # now in the cache: loaded at once
    assert again._sp is not None
    other = suggest_partition(cm, ref)
    fresh = sl.build().compile(cache_dir=tmp_path / "b")
    lb = fresh.linearizer(other)
    assert lb._sp is None
    call = lb.bind(*[np.array(a) for a in vals[0]])
    assert lb._sp is not None                       # bind: a hot loop, specialised at once
    np.testing.assert_array_equal(call()[0], first[0])


@pytest.mark.c_compiler
def test_documented_sizes_of_the_compiled_paths():
    """The numbers docs/theory/linearization.md and docs/guide/performance.md state: the
    bicycle kernel's written entries (439 of 1,064 with SymPy 1.14, 436 where SymPy cancels
    the three sums of ∂Q/∂x that vanish numerically; M 53 of 121), the specialisation
    threshold (1,000), the stacked block (128 points), the blocked kernel's four points and the
    specialised routine's size cap (3,000 values)."""
    from nhcontrol.compiled.ccodegen import SIMD_BLOCK
    from nhcontrol.linearization import _cspecial

    cm, _, _ = _cases()["bicycle"]()
    spec = cm._ck.layout["functions"]["linearization_terms"]
    assert len(spec["nonzero"]) in (436, 439) and spec["size"] == 1064
    at, size, _ = spec["outputs"][0]                        # M
    assert (sum(at <= k < at + size for k in spec["nonzero"]), size) == (53, 121)
    assert _cpoint.SPECIALISE_AFTER == 1000 and _cpoint.BLOCK == 128
    assert SIMD_BLOCK == 4 and _cspecial.MAX_VALUES == 3000
