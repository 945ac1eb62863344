"""The fast Steps 1-7 of ``linearize`` against the reference implementation.

``linearize`` runs ``nhcontrol/linearization/_point.py`` (model coordinate order, signed right-hand
sides, one product for R0, S0, m0) at one point (2-D arrays) and on stacks; ``third_procedure``
is the implementation in the thesis order that reads like Sect. 4.2.3 (the one the other tests
validated against closed forms, finite differences and published eigenvalues).
They are the same sums in another order, so they agree to round-off: the tolerance is 1e-14
relative to the largest entry (measured: up to a few 1e-16).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from nhcontrol._util.errors import PartitionError
from nhcontrol.linearization import Partition, linearize
from nhcontrol.linearization._point import point_procedure
from nhcontrol.linearization.third import _stacked_terms, third_procedure
from test_linearize_third_toys import (constant_reference, pendulum, point_reference, sleigh,
                                       sleigh_redundant, sleigh_state)


def _cases():
    """(name, cm, ref, partition, times): toys with m only / l only / both, the skateboard with
    an input, the benchmark bicycle (m = 1, l = 2), the ball-plate circle (inputs, time-varying
    reference)."""
    from nhcontrol.models import ball_plate as bp
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.models import sleigh as sl

    out = []
    pend = pendulum()
    out.append(("pendulum", pend, constant_reference(pend, np.array([0.0, -1.5]),
                                                    np.array([0.5, 0.0])), Partition(["x"], [], ["y"]),
                [0.0]))
    sle = sleigh()
    x, xd = sleigh_state(0.4, 1.2, 0.7)
    # point_reference: the same admissible point at every t (x0 + ẋ0 t would leave the blade
    # constraint as the heading turns)
    out.append(("toy sleigh", sle, point_reference(sle, x, xd),
                Partition(["x", "theta"], ["y"], []), [0.0, 0.5]))
    red = sleigh_redundant()
    xr, xdr = sleigh_state(0.4, 1.2, 0.7, redundant=True)
    out.append(("redundant sleigh", red, point_reference(red, xr, xdr),
                Partition(["xp", "theta"], ["yp"], ["xg", "yg"]), [0.0, 0.3]))
    sk = sl.model_skateboard()
    out.append(("skateboard", sk, sl.skateboard_turn(sk, 2.0, 0.1),
                Partition.from_dict(sl.PARTITION_SKATEBOARD_TURN), [0.0, 0.7]))
    bic = bb.model()
    out.append(("bicycle", bic, bb.steady_forward(bic, 4.0), Partition.from_dict(bb.PARTITION_4_172),
                [0.0, 1.3]))
    ball = bp.model()
    out.append(("ball-plate", ball, bp.circular_motion(ball, 5.0),
                Partition.from_dict(bp.PARTITION_8_72), [0.0, 0.9, 2.6]))
    return out


@pytest.fixture(scope="module")
def cases():
    return _cases()


def _reference_A_B(cm, ref, part, ti):
    """A, B of ``third_procedure`` (thesis order) at one time."""
    idx = part.indices(cm)
    x, xd, xdd, lam, u = ref.x(ti), ref.xd(ti), ref.xdd(ti), ref.lam(ti), ref.u(ti)
    k = int(cm.ninputs)
    terms = cm.linearization_terms(x, xd, xdd, lam, u if k else None, ref.parameters)
    rates = None
    if getattr(cm, "constraint_inputs", ()):   # inputs in B(x, u): their terms (and B_rate)
        r = cm.input_rate_terms(x, xd, ref.ud(ti), lam, u, ref.parameters)
        rates = {f: np.asarray(getattr(r, f))[None] for f in ("E", "dEw_dx", "dEw_dxd", "dEw_du",
                                                             "dDTlam_du")}
    with np.errstate(all="ignore"):
        out = third_procedure(_stacked_terms(terms, 1, idx.n, idx.m, idx.l, k), idx, k, rates)
    return out["A"][0], out["B"][0], (None if rates is None else out["B_rate"][0])


def test_fast_paths_equal_the_thesis_order_reference(cases):
    for name, cm, ref, part, ts in cases:
        for ti in ts:
            A_ref, B_ref, Br_ref = _reference_A_B(cm, ref, part, ti)
            scale = max(1.0, float(np.max(np.abs(A_ref))))
            bscale = max(1.0, float(np.max(np.abs(B_ref)))) if B_ref.size else 1.0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # inputs in constraints (skateboard)
                one = linearize(cm, ref, part, t=ti)
                two = linearize(cm, ref, part, t=[ti, ti])
                arr = linearize(cm, ref, part, t=[ti])
                unchecked = linearize(cm, ref, part, t=ti, check=False)
            assert one.A.shape == A_ref.shape and two.A.shape == (2,) + A_ref.shape, name
            for A, B in ((one.A, one.B), (two.A[0], two.B[0]), (two.A[1], two.B[1])):
                assert np.max(np.abs(A - A_ref)) <= 1e-14 * scale, (name, ti)
                if B.size:
                    assert np.max(np.abs(B - B_ref)) <= 1e-14 * bscale, (name, ti)
            assert one.states == two.states and one.t == ti and not one.stacked
            # a one-element array of times keeps the leading axis (same numbers)
            assert arr.A.shape == (1,) + one.A.shape
            np.testing.assert_array_equal(arr.A[0], one.A)
            np.testing.assert_array_equal(unchecked.A, one.A)


def test_inputs_in_constraints_warning_points_at_the_caller():
    """An input in a holonomic constraint (quasi-static, not carried): the point path warns like
    the stacked one, attributed to the caller's line."""
    from test_linearize_third_toys import winch

    cm, ref = winch()
    for t in (0.0, [0.0, 0.5]):
        with pytest.warns(UserWarning, match=r"the inputs \['ell'\] enter the constraints") as rec:
            linearize(cm, ref, Partition(["x"], [], ["y"]), t=t)
        assert rec[0].filename == __file__


def test_point_procedure_singular_block_gives_nan_not_exception(cases):
    """An exactly singular block makes non-finite entries (the caller's checks name it)."""
    name, cm, ref, part, _ = next(c for c in cases if c[0] == "bicycle")
    idx = part.indices(cm)
    x, xd, xdd, lam, u = ref.values(0.0)
    terms = cm.linearization_terms(x, xd, xdd, lam, u if u.size else None, ref.parameters)

    class Zeroed:
        def __getattr__(self, key):
            val = np.asarray(getattr(terms, key))
            return np.zeros_like(val) if key == "D" else val

    with np.errstate(all="ignore"):
        out = point_procedure(Zeroed(), idx, 0)
    assert not np.all(np.isfinite(out["A"]))


def test_point_path_singular_partition_message_equals_stacked():
    """The toy sleigh heading along y (theta = pi/2): its blade constraint has no y component,
    so ``x_ad = [y]`` is singular; both paths raise the same PartitionError."""
    cm = sleigh()
    x, xd = sleigh_state(0.4, np.pi / 2, 0.0)
    ref = constant_reference(cm, x, xd)
    bad = Partition(["x", "theta"], ["y"], [])
    msgs = []
    for t in (0.0, [0.0, 0.0]):
        with pytest.raises(PartitionError, match=r"the partition is singular at the reference "
                                                 r"\(t = 0\):\n  - the block D_dd") as err:
            linearize(cm, ref, bad, t=t)
        msgs.append(str(err.value).split("\n(")[0])
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("name", ["bicycle", "redundant sleigh", "ball-plate"])
def test_precheck_bound_is_above_the_exact_condition_number(cases, name):
    """The pre-check flags a point whenever cond_max is below the exact relative condition
    number of a block (its bound sqrt(rows) ‖F_blk⁻¹R‖_F is an upper bound), and passes it
    with cond_max a little above the bound's slack (1e3 x the exact value here)."""
    from nhcontrol.linearization._point import point_suspect

    _, cm, ref, part, _ = next(c for c in cases if c[0] == name)
    worst = max(part.conditioning(cm, ref, 0.0).conditions.values())
    idx = part.indices(cm)
    x, xd, xdd, lam, u = ref.x(0.0), ref.xd(0.0), ref.xdd(0.0), ref.lam(0.0), ref.u(0.0)
    k = int(cm.ninputs)
    terms = cm.linearization_terms(x, xd, xdd, lam, u if k else None, ref.parameters)
    out = point_procedure(terms, idx, k)
    assert point_suspect(out, 0.999 * worst)
    assert not point_suspect(out, 1e3 * worst)



def test_one_point_admissibility_decision_equals_the_stacked_one():
    """The one-point decision of the reference check (_passes_one, used by linearize at one
    time) equals the stacked residual/scale decision on the same numbers: admissible bicycle
    points, each level perturbed by a fraction (pass) and by multiples (fail) of the tolerance,
    and a NaN."""
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.reference.admissibility import _passes_one, _residuals

    cm = bb.model()
    ref = bb.steady_forward(cm, 4.0)
    p = ref.parameters
    rng = np.random.default_rng(7)
    decided = {True: 0, False: 0}
    for t in (0.0, 0.37, 1.9):
        x, xd, xdd, lam, _ = ref.values(t)
        for level, scale in [(None, 0.0)] + [(lv, s) for lv in ("x", "xd", "xdd", "lam")
                                             for s in (1e-12, 1e-6, 1e-3)]:
            v = {"x": x.copy(), "xd": xd.copy(), "xdd": xdd.copy(), "lam": lam.copy()}
            if level is not None:
                v[level] += scale * rng.standard_normal(v[level].shape)
            terms = cm.linearization_terms(v["x"], v["xd"], v["xdd"], v["lam"], None, p)
            C = np.asarray(cm.C(v["x"], None, p), dtype=float)
            M, Q, D, Qd = (np.asarray(getattr(terms, k)) for k in ("M", "Q", "D", "Qd"))
            fast = _passes_one(v["x"], v["xd"], v["xdd"], v["lam"], M, Q, D, Qd, C, None, 1e-8)
            res, sc, fl = _residuals(*(v[k][None] for k in ("x", "xd", "xdd", "lam")), M[None],
                                     Q[None], D[None], Qd[None], C[None])
            full = all(bool(np.all(np.abs(res[k]) <= 1e-8 * sc[k] + fl[k][:, None])) for k in res)
            assert fast == full, (t, level, scale)
            decided[fast] += 1
    assert decided[True] >= 3 and decided[False] >= 3       # both outcomes exercised
    x, xd, xdd, lam, _ = ref.values(0.0)
    terms = cm.linearization_terms(x, xd, xdd, lam, None, p)
    bad = xdd.copy()
    bad[0] = np.nan
    assert not _passes_one(x, xd, bad, lam, terms.M, terms.Q, terms.D, terms.Qd,
                           np.asarray(cm.C(x, None, p)), None, 1e-8)


def test_stacked_blocks_equal_one_block_and_report_the_same_error(monkeypatch):
    """A long stack is linearized in blocks of STACK_CHUNK points (kernel to Steps 1-7): the
    same A, B bit for bit as one block, the steady search terms of the first point, and a
    reference that stops being a motion part-way gives the error of the one-block path."""
    from nhcontrol._util.errors import ReferenceMotionError
    from nhcontrol.linearization import third
    from nhcontrol.models import benchmark_bicycle as bb

    # the blocks of the numpy path (the compiled path has its own: test_linearize_cpoint.py)
    monkeypatch.setattr(third._cpoint, "point_function", lambda *a, **k: None)
    cm = bb.model()
    ref = bb.steady_forward(cm, 4.0)
    part = Partition.from_dict(bb.PARTITION_4_172)
    ts = np.linspace(0.0, 2.0, 2 * third.STACK_CHUNK + 37)
    blocks = linearize(cm, ref, part, t=ts)
    monkeypatch.setattr(third, "STACK_CHUNK", 10**9)
    one = linearize(cm, ref, part, t=ts)
    assert np.array_equal(blocks.A, one.A) and np.array_equal(blocks.B, one.B)
    assert blocks._cache["search"].args[0]["M"].tobytes() == one._cache["search"].args[0]["M"].tobytes()

    pend = pendulum()                      # x0 + ẋ0 t leaves the circle as t grows
    bad = constant_reference(pend, np.array([0.0, -1.5]), np.array([0.5, 0.0]))
    ts = np.linspace(0.0, 1.0, 600)
    messages = []
    for chunk in (10**9, 64):
        monkeypatch.setattr(third, "STACK_CHUNK", chunk)
        with pytest.raises(ReferenceMotionError) as err:
            linearize(pend, bad, Partition(["x"], [], ["y"]), t=ts)
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "not a motion" in messages[0]
