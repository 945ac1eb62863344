"""The prepared one-point linearization ``cm.linearizer(partition)`` (nhcontrol.linearization.prepared):
the numbers of ``linearize`` at the same point (C and Python kernels), its error messages when a
check fails, ``out=`` buffers, ``at(ref, t)``, converted arguments and threads."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from _helpers import c_compiler_present, require_c_backend

from nhcontrol._util.errors import ArgumentTypeError, PartitionError, ReferenceMotionError
from nhcontrol.linearization import Linearizer, Partition, linearize, prepare_linearizer, suggest_partition
from nhcontrol.reference import Reference


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if not b.size:
        return 0.0
    return float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-300)


@pytest.fixture(scope="module")
def bicycle():
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model()
    return cm, bb.steady_forward(cm, 5.0), Partition.from_dict(bb.PARTITION_4_172)


@pytest.fixture(scope="module")
def actuated():
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.build(inputs=("T_phi", "T_delta")).compile()
    return cm, bb.steady_forward(cm, 3.0), Partition.from_dict(bb.PARTITION_4_172)


@pytest.fixture(scope="module")
def sleigh():
    from nhcontrol.models import sleigh as sl

    cm = sl.model()
    ref = sl.straight_motion(cm, 1.0)
    return cm, ref, suggest_partition(cm, ref)


@pytest.mark.parametrize("case", ["bicycle", "actuated", "sleigh"])
def test_prepared_call_equals_linearize(case, request):
    cm, ref, part = request.getfixturevalue(case)
    lz = cm.linearizer(part)
    assert isinstance(lz, Linearizer) and lz.compiled == c_compiler_present()   # decided by the machine
    for t in (0.0, 0.37, 1.2):
        res = linearize(cm, ref, part, t=t)
        x, xd, xdd, lam, u = ref.values(t)
        A, B = lz(x, xd, xdd, lam, u if u.size else None)
        assert A.shape == res.A.shape and B.shape == res.B.shape
        assert _rel(A, res.A) <= 1e-14 and _rel(B, res.B) <= 1e-14
        A2, B2 = lz.at(ref, t)
        assert _rel(A2, res.A) <= 1e-14 and _rel(B2, res.B) <= 1e-14
    assert lz.states == res.states and lz.inputs == res.inputs
    assert (lz.nstates, lz.ninputs) == res.B.shape


def test_prepared_call_bicycle_eigenvalues(bicycle):
    """The prepared call gives the benchmark bicycle's eigenvalues of Meijaard et al. (2007),
    Table 2, to 1e-12 (the accuracy of the published digits is 1e-13 .. 1e-14)."""
    from nhcontrol.analysis import match_spectra, structural_zeros
    from nhcontrol.reproduce.bicycle_benchmark import reference_data

    cm, ref, part = bicycle
    A, _ = cm.linearizer(part)(*ref.values(0.0)[:4])
    keep = structural_zeros(A).keep
    eig = np.linalg.eigvals(A[np.ix_(keep, keep)])
    assert match_spectra(reference_data()["eigenvalues"][5.0], eig)[1] < 1e-12


def test_out_buffers_and_fresh_results(actuated):
    cm, ref, part = actuated
    lz = prepare_linearizer(cm, part)
    x, xd, xdd, lam, u = ref.values(0.2)
    A0, B0 = lz(x, xd, xdd, lam, u)
    out = (np.full_like(A0, np.nan), np.full_like(B0, np.nan))
    got = lz(x, xd, xdd, lam, u, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    np.testing.assert_array_equal(out[0], A0)
    np.testing.assert_array_equal(out[1], B0)
    A1, _ = lz(*ref.values(0.9))          # a new array: earlier results are not overwritten
    assert A1 is not A0 and not np.shares_memory(A1, A0)
    np.testing.assert_array_equal(A0, lz(x, xd, xdd, lam, u)[0])
    with pytest.raises(ArgumentTypeError, match=r"shape \(8, 8\)|out"):
        lz(x, xd, xdd, lam, u, out=(np.empty((3, 3)), out[1]))


def test_converted_arguments(actuated):
    """Lists, non-contiguous views and integer arrays give the same numbers; wrong sizes a
    clear error."""
    cm, ref, part = actuated
    lz = cm.linearizer(part)
    x, xd, xdd, lam, u = ref.values(0.4)
    A, B = lz(x, xd, xdd, lam, u)
    wide = np.zeros((cm.n, 2))
    wide[:, 0] = x
    A2, B2 = lz(wide[:, 0], list(xd), tuple(xdd), lam.tolist(), list(u))
    np.testing.assert_array_equal(A2, A)
    np.testing.assert_array_equal(B2, B)
    with pytest.raises(ReferenceMotionError, match=r"x must have shape \(11,\)"):
        lz(x[:3], xd, xdd, lam, u)
    with pytest.raises(ReferenceMotionError, match="lam must have shape"):
        lz(x, xd, xdd, lam[:2], u)


def test_failed_checks_give_the_messages_of_linearize(bicycle):
    """A point that is not a motion of the model and a singular partition: the same error
    types and messages as ``linearize`` at that point; check=False skips the motion check."""
    cm, ref, part = bicycle
    x, xd, xdd, lam, _ = ref.values(0.0)
    bad_xd = xd * np.r_[1.0, np.ones(10) * 1.01]
    bad = Reference.constant_velocity(cm, x, bad_xd, lam=lam, check=False)
    with pytest.raises(ReferenceMotionError) as want:
        linearize(cm, bad, part)
    lz = cm.linearizer(part)
    with pytest.raises(ReferenceMotionError) as got:
        lz(x, bad_xd, xdd, lam)
    assert str(got.value) == str(want.value)
    with pytest.raises(ReferenceMotionError) as got_at:
        lz.at(bad, 0.0)
    assert str(got_at.value) == str(want.value)
    free = cm.linearizer(part, check=False)
    np.testing.assert_array_equal(free(x, bad_xd, xdd, lam)[0],
                                  linearize(cm, bad, part, check=False).A)
    with pytest.raises(ReferenceMotionError, match="not finite"):
        lz(x * np.nan, xd, xdd, lam)
    # x_b does not enter the contact constraints on flat ground: with x_b dependent, dC/dx_d
    # has a zero column (the singular partition of test_linearize_cpoint)
    singular = Partition.from_dict({
        "independent": ["xi_R", "phi_b", "delta"],
        "admissible_dependent": ["y_b", "psi_b", "theta_R", "theta_F"],
        "dependent": ["z_b", "theta_b", "x_b", "xi_F"]})
    with pytest.raises(PartitionError) as want_p:
        linearize(cm, ref, singular)
    with pytest.raises(PartitionError) as got_p:
        cm.linearizer(singular)(x, xd, xdd, lam)
    assert str(got_p.value) == str(want_p.value)


@pytest.mark.c_compiler
def test_python_backend_same_numbers(monkeypatch):
    """NHCONTROL_BACKEND=python: the linearizer goes through ``linearize`` with the Python
    kernels; the numbers equal the compiled path's to 1e-14 (the kernels are bit-identical)."""
    from nhcontrol.models import benchmark_bicycle as bb

    monkeypatch.setenv("NHCONTROL_BACKEND", "python")
    py = bb.build(inputs=("T_phi", "T_delta")).compile()
    assert py.backend == "python"
    part = Partition.from_dict(bb.PARTITION_4_172)
    ref = bb.steady_forward(py, 3.0)
    lz = py.linearizer(part)
    assert not lz.compiled
    x, xd, xdd, lam, u = ref.values(0.1)
    A, B = lz(x, xd, xdd, lam, u)
    res = linearize(py, ref, part, t=0.1)
    np.testing.assert_array_equal(A, res.A)
    np.testing.assert_array_equal(B, res.B)
    monkeypatch.delenv("NHCONTROL_BACKEND")
    cc = bb.build(inputs=("T_phi", "T_delta")).compile(backend="c")
    Ac, Bc = cc.linearizer(part)(x, xd, xdd, lam, u)
    assert _rel(Ac, A) <= 1e-14 and _rel(Bc, B) <= 1e-14
    out = (np.empty_like(A), np.empty_like(B))
    lz(x, xd, xdd, lam, u, out=out)
    np.testing.assert_array_equal(out[0], A)


def test_parameters_bound_once(actuated):
    cm, ref, part = actuated
    p = cm.param_vector(m_R=3.0)
    lz = cm.linearizer(part, p=p)
    ref2 = Reference.constant_velocity(cm, ref.x(0.0), ref.xd(0.0), u=ref.u(0.0), p=p)
    A, B = lz.at(ref2, 0.0)
    res = linearize(cm, ref2, part)
    assert _rel(A, res.A) <= 1e-14 and _rel(B, res.B) <= 1e-14
    assert _rel(A, linearize(cm, ref, part).A) > 1e-6       # the parameters matter


def test_bad_construction(bicycle):
    cm, _, part = bicycle
    with pytest.raises(ArgumentTypeError, match="give a partition"):
        cm.linearizer(None)
    with pytest.raises(ArgumentTypeError, match="must be a CompiledModel"):
        Linearizer(object(), part)
    with pytest.raises(PartitionError):
        cm.linearizer({"independent": ["nope"], "admissible_dependent": [], "dependent": []})


def test_threads_share_one_linearizer(bicycle):
    cm, ref, part = bicycle
    lz = cm.linearizer(part)
    x, xd, xdd, lam, _ = ref.values(0.3)
    A0 = lz(x, xd, xdd, lam)[0].copy()
    bad: list[int] = []

    def work() -> None:
        for i in range(200):
            if not np.array_equal(lz(x, xd, xdd, lam)[0], A0):
                bad.append(i)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not bad


def test_threads_with_their_own_points(bicycle):
    """Threads calling one linearizer with their own arrays (fresh or reused, with and without
    out=): each gets its own point's matrices (the remembered cdata of the last inputs and
    outputs never mix two calls)."""
    from nhcontrol.models import benchmark_bicycle as bb

    cm, _, part = bicycle
    lz = cm.linearizer(part)
    refs = [bb.steady_forward(cm, v) for v in (3.0, 4.0, 5.0, 6.0)]
    want = [lz(*r.values(0.1)[:4])[0].copy() for r in refs]
    assert not np.array_equal(want[0], want[1])
    bad: list[tuple] = []

    def work(j: int) -> None:
        pts = [np.array(v) for v in refs[j].values(0.1)[:4]]
        out = (np.empty_like(want[j]), np.empty((want[j].shape[0], lz.ninputs)))
        for i in range(150):
            args = pts if i % 2 else [v.copy() for v in pts]
            got = lz(*args, out=out)[0] if i % 3 else lz(*args)[0]
            if not np.array_equal(got, want[j]):
                bad.append((j, i))

    threads = [threading.Thread(target=work, args=(j,)) for j in range(len(refs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not bad


def test_first_order_paths_compiled_equal_general(monkeypatch):
    """linearize_first_order_system and linearize_with_first_order_states take the compiled
    one-point call (mechanical rows and T0, V̄̄0, Th0 from one call) with C kernels: the same
    matrices as the general path (linearize + third_procedure) to 1e-14, on a moving reference
    with l = 1 (the motor-driven sleigh of test_first_order_general) and the hydraulic four-bar."""
    from test_first_order_general import PART, _sleigh_motor, _trajectory

    from nhcontrol.compiled import compile_rates
    from nhcontrol.linearization import first_order as fo
    from nhcontrol.linearization import linearize_first_order_system, linearize_with_first_order_states
    from nhcontrol.models import hydraulic_fourbar as hf

    mb = _sleigh_motor()
    cm, rk = mb.compile(), compile_rates(mb)
    ref = _trajectory(cm)
    calls = []
    real = fo._fast_point
    monkeypatch.setattr(fo, "_fast_point",
                        lambda *a: (lambda got: calls.append(got is not None) or got)(real(*a)))
    for t in (0.0, 0.7):
        fast = linearize_first_order_system(cm, rk, ref, PART, t=t)
        with monkeypatch.context() as mp:
            mp.setattr(fo, "_fast_point", lambda *a: None)
            slow = linearize_first_order_system(cm, rk, ref, PART, t=t)
        assert _rel(fast.A, slow.A) <= 1e-14 and _rel(fast.B, slow.B) <= 1e-14
        assert _rel(fast.T0, slow.T0) <= 1e-14 and fast.states == slow.states
    eq = hf.equilibrium(60.0, 3.5e6)
    hcm = hf.model()
    href = Reference.equilibrium(hcm, eq.x, u=eq.p)
    kw = hf.circuit_jacobians(eq).as_kwargs()
    real_whole = fo._fast_first_order       # the whole Jacobian from one compiled call
    monkeypatch.setattr(fo, "_fast_first_order",
                        lambda *a: (lambda got: calls.append(got is not None) or got)(real_whole(*a)))
    fast = linearize_with_first_order_states(hcm, href, hf.PARTITION, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(fo, "_fast_point", lambda *a: None)
        mp.setattr(fo, "_fast_first_order", lambda *a: None)
        slow = linearize_with_first_order_states(hcm, href, hf.PARTITION, **kw)
    with monkeypatch.context() as mp:          # the one-point call with the rows in numpy
        mp.setattr(fo, "_fast_first_order", lambda *a: None)
        mixed = linearize_with_first_order_states(hcm, href, hf.PARTITION, **kw)
    for other in (slow, mixed):
        assert _rel(fast.A, other.A) <= 1e-14 and _rel(fast.B, other.B) <= 1e-14
        assert _rel(fast.T0, other.T0) <= 1e-14 and fast.states == other.states
    if c_compiler_present():
        assert calls == [True, True, True, True]      # the compiled paths were taken


def test_bound_call_reads_the_current_arguments(actuated):
    """lz.bind(...)(): arguments bound by memory, updated in place between calls; the numbers
    and errors of an ordinary call."""
    cm, ref, part = actuated
    lz = cm.linearizer(part)
    bufs = [np.array(v, dtype=float) for v in ref.values(0.0)]
    call = lz.bind(*bufs)
    for t in (0.0, 0.5, 1.1):
        for b, v in zip(bufs, ref.values(t)):
            b[...] = v
        A, B = call()
        A1, B1 = lz(*ref.values(t))
        np.testing.assert_array_equal(A, A1)
        np.testing.assert_array_equal(B, B1)
    bufs[1][1:] *= 1.01                               # not a motion of the model any more
    with pytest.raises(ReferenceMotionError):
        call()
    with pytest.raises(ArgumentTypeError, match="C-contiguous float64"):
        lz.bind(bufs[0][::-1][::-1].astype(np.float32), *bufs[1:])


def test_first_order_states_rate_check_on_the_compiled_path():
    """linearize_with_first_order_states on the compiled path still refuses ż0 != H0 (with the
    message of check_rate_equation) and accepts it with check=False."""
    from nhcontrol.linearization import linearize_with_first_order_states
    from nhcontrol.models import hydraulic_fourbar as hf

    eq = hf.equilibrium(60.0, 3.5e6)
    cm = hf.model()
    ref = Reference.equilibrium(cm, eq.x, u=eq.p)
    kw = hf.circuit_jacobians(eq).as_kwargs()
    kw["H0"] = np.asarray(kw["H0"]) + np.array([0.0, 1e3, 0.0])     # p2 would be changing
    with pytest.raises(ReferenceMotionError, match=r"rate equation of the first-order state 'p2'"):
        linearize_with_first_order_states(cm, ref, hf.PARTITION, **kw)
    res = linearize_with_first_order_states(cm, ref, hf.PARTITION, check=False, **kw)
    assert res.A.shape == (6, 6)


def test_admissibility_floor_at_rest():
    """A body at rest: ẋ0 = 0 and ẍ0 zero up to round-off. The acceleration row's own scale
    ‖D_i‖₁‖ẍ0‖∞ is then round-off itself; the check judges it against the round-off floor of the
    problem (ρ ‖D‖ S/max|M|), so the point passes with the checks on (compiled path and linearize)
    and gives linearize's matrices, while an ẍ0 that is wrong by 1e-9 is still refused.

    The round-off is built explicitly (ẍ0 = [1e-15, 0, 0], where the exact static answer is 0),
    not left to the KKT solve: a LAPACK that solves this system exactly leaves no residual at all.
    The floors here are ≈ 7e-14 (acceleration rows) and ≈ 9e-14 (dynamics rows), 40-70 times the
    residuals built, while the tolerance relative to the row alone (1e-8 ‖D_i‖₁‖ẍ0‖∞ ≈ 2e-23)
    is far below them."""
    import math

    from _toy_models import pinned_pendulum

    from nhcontrol.reference.admissibility import _passes_one

    mb, _ = pinned_pendulum("pendulum_at_rest")
    cm = mb.compile()
    th0 = 0.4
    xv = np.array([0.6 * math.sin(th0), -0.6 * math.cos(th0), th0])
    xdv = np.zeros(3)
    u = np.array([2.0 * 9.81 * 0.6 * math.sin(th0)])     # the torque that holds it: ẍ0 = 0 exactly
    t = cm.dynamics_terms(xv, xdv, u)
    xdd = np.array([1e-15, 0.0, 0.0])                     # a round-off residual of chosen size
    lam = np.linalg.lstsq(t.D.T, t.Q - t.M @ xdd, rcond=None)[0]
    part = {"independent": ["theta"], "admissible_dependent": [], "dependent": ["x", "y"]}
    terms = cm.linearization_terms(xv, xdv, xdd, lam, u)
    C = np.asarray(cm.C(xv, u))
    acc = np.asarray(terms.D) @ xdd - np.asarray(terms.Qd)
    row = np.abs(terms.D).sum(axis=1) * np.abs(xdd).max()
    assert np.abs(acc).max() == pytest.approx(1e-15, rel=1e-12)
    assert np.any(np.abs(acc) > 1e-8 * row)          # the tolerance relative to the row alone fails
    assert _passes_one(xv, xdv, xdd, lam, terms.M, terms.Q, terms.D, terms.Qd, C, None, 1e-8)
    lz = cm.linearizer(part, check=True)
    A, B = lz(xv, xdv, xdd, lam, u)
    ref = Reference.equilibrium(cm, xv, u=u)
    lin = linearize(cm, ref, part)
    np.testing.assert_allclose(A, lin.A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(B, lin.B, rtol=1e-12, atol=1e-12)
    bad = xdd + np.array([0.0, 1e-9, 0.0])
    assert not _passes_one(xv, xdv, bad, lam, terms.M, terms.Q, terms.D, terms.Qd, C, None, 1e-8)
    with pytest.raises(ReferenceMotionError, match="acceleration residual"):
        lz(xv, xdv, bad, lam, u)


def test_first_order_states_non_finite_blocks_named_on_the_compiled_path():
    """A non-finite circuit block is refused by the one compiled call of
    linearize_with_first_order_states and named by the general path (not returned as NaN)."""
    from nhcontrol._util.errors import LinearSystemError
    from nhcontrol.linearization import linearize_with_first_order_states
    from nhcontrol.models import hydraulic_fourbar as hf

    eq = hf.equilibrium(60.0, 3.5e6)
    cm = hf.model()
    ref = Reference.equilibrium(cm, eq.x, u=eq.p)
    for name in ("H_x", "H_xd", "H_z", "H_w", "W_w"):
        kw = hf.circuit_jacobians(eq).as_kwargs()
        bad = np.array(kw[name], dtype=float)
        bad[0, 0] = np.inf if name != "H_z" else np.nan
        kw[name] = bad
        with pytest.raises(LinearSystemError, match=rf"{name} has non-finite entries"):
            linearize_with_first_order_states(cm, ref, hf.PARTITION, **kw)


def test_constants_of_the_compiled_path_are_the_stages_own():
    # defined once in _util.validation, so that the compiled path imports neither the general
    # path (third) nor the reference stage, and the same objects there
    from nhcontrol._util import validation
    from nhcontrol.linearization import prepared, third
    from nhcontrol.reference import admissibility

    assert prepared.INPUT_CONSTRAINT_ATOL is third.INPUT_CONSTRAINT_ATOL
    assert validation.ADMISSIBILITY_TOL is admissibility.ADMISSIBILITY_TOL
    assert Linearizer.__init__.__kwdefaults__["tol"] == admissibility.ADMISSIBILITY_TOL


def test_package_exports_are_lazy_but_complete():
    import nhcontrol.linearization as L

    assert set(L.__all__) == set(L._EXPORTS) and len(L.__all__) == len(L._EXPORTS)
    assert set(L.__all__) <= set(dir(L))
    for name in L.__all__:
        obj = getattr(L, name)
        assert obj is getattr(importlib.import_module(f"nhcontrol.linearization.{L._EXPORTS[name]}"), name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        L.nope


def test_warm_linearizer_imports_only_the_compiled_path(bicycle):
    # a fresh process with the model cached: loading it and linearizing one point with the C
    # kernels imports neither SymPy nor the general path, the reference stage or the validation
    # procedures (what the warm start of benchmarks/peer_casadi.py measures)
    cm, ref, part = bicycle
    require_c_backend(cm.backend)
    code = ("import sys, numpy as np\n"
            "from nhcontrol.models import benchmark_bicycle as bb\n"
            "cm = bb.model(); lz = cm.linearizer(bb.PARTITION_4_172)\n"
            f"A, B = lz(*(np.array(v) for v in {[v.tolist() for v in ref.values(0.0)[:4]]!r}))\n"
            "assert lz.compiled and cm.backend == 'c' and cm.from_cache\n"
            "print(' '.join(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ)).stdout.split()
    loaded = set(out)
    unwanted = ["sympy", "nhcontrol.linearization.third", "nhcontrol.linearization.result",
                "nhcontrol.linearization.first_order", "nhcontrol.linearization.finite_difference",
                "nhcontrol.linearization.first", "nhcontrol.linearization.second",
                "nhcontrol.reference", "nhcontrol.compiled.codegen", "nhcontrol.compiled.ccodegen"]
    assert not [m for m in unwanted if m in loaded]
    # the Python kernel module is not executed when the C kernels load (its META is read from
    # the verified source)
    assert not [m for m in loaded if m.startswith("_nhcontrol_kernels_")]


def test_meta_read_from_the_source_is_the_executed_one(bicycle):
    import time

    from nhcontrol.compiled import cache as _cache
    from nhcontrol.compiled.model import _cached_meta, _load_cached

    cm = bicycle[0]
    if cm.source_path is None:
        pytest.skip("no cached kernel module")
    full = _load_cached(cm.source_path, cm.model_hash, time.perf_counter())
    assert full is not None and full.backend == "python"
    assert _cached_meta(_cache.verify_artefact(cm.source_path)) == full._mod.META
    assert cm.kernel_source() == full.kernel_source()
