"""The compiled model work of one RTI sample (``nhcontrol.design._crti``) against the numpy path.

Both paths compute the same quantities with backward-stable algorithms that differ only in
round-off: the admissible velocities and the accelerations come from LU solves with partial
pivoting (LAPACK's blocked ``dgesv`` through numpy against an unblocked ``dgetf2`` in C), the
linearization is the same Steps 1-7 routine, and the ZOH exponential is a degree-10 Taylor
polynomial with one scaling of the whole stack (numpy) against a Padé approximant with its
degree and scaling chosen per node (C).  Two such results differ by a few units of round-off
times the conditioning of the solves and of the exponential (``‖A h‖₁`` ≈ 5 on the robot):
measured at most 6e-15 relative on both models, so the bound is 1e-12 relative to each
quantity's largest entry (a 100x margin, independent of the platform's BLAS).  The controllers' inputs go
through a QP whose answer is Lipschitz in its data, hence the 1e-9 bound on the closed loops.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from nhcontrol.design import NMPCController, _crti
from nhcontrol.models import ball_plate as bp
from nhcontrol.models import self_balancing_robot as sbr


def _ball(**kw):
    cm = bp.model()
    x0, xd0 = bp.initial_conditions(cm, 5.0)
    ref = bp.spin_matched_motion(cm, x0, xd0)
    dt = bp.motion_from_reference(cm, ref).period / 125
    b, r = math.radians(10.0), math.radians(0.5)
    ctrl = NMPCController(cm, ref, bp.PARTITION_8_72, 10, np.diag([1.0, 1.0, 1.0, 0.0, 0.1, 0.1, 1e4, 1e4]),
                          1e3 * np.eye(2), dt=dt, u_min=-b, u_max=b, du_min=-r, du_max=r, steps=40, **kw)
    return cm, ref, ctrl, x0, xd0


def _robot(**kw):
    cm = sbr.model()
    ref = sbr.circle(cm, 2.0, 0.5)
    x0, xd0 = np.asarray(ref.x(0.0), float).copy(), np.asarray(ref.xd(0.0), float)
    x0[1] += 0.05
    ctrl = NMPCController(cm, ref, sbr.PARTITION, 10, np.diag([10.0, 0.0, 0.0, 1.0, 0.01, 0.01, 1e3, 1e3, 10.0]),
                          np.eye(2), dt=0.02, u_min=-3.0, u_max=3.0, du_min=-0.3, du_max=0.3, steps=40,
                          **kw)
    return cm, ref, ctrl, x0, xd0


CASES = {"ball-plate": _ball, "robot": _robot}


def _compiled(ctrl):
    from _helpers import require_c_backend

    require_c_backend(ctrl.cm.backend)
    assert ctrl._core is not None, "a C compiler is present but the RTI core was not built"


def _rel(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(1e-300, np.abs(b).max()))


@pytest.mark.parametrize("name", sorted(CASES))
def test_core_gives_the_numpy_nodes(name):
    """Admissible nodes, accelerations, multipliers, Φ_j, Γ_j and F(X̄_j, ū_j) of perturbed
    reference nodes: the compiled core against the numpy path of ``NMPCController._model``."""
    cm, ref, ctrl, x0, xd0 = CASES[name]()
    _compiled(ctrl)
    rng = np.random.default_rng(7)
    N = 12
    ts = 0.37 + ctrl.dt * np.arange(N)
    Xr = ctrl.reduce(np.asarray(ref.x(ts)), np.asarray(ref.xd(ts)))
    X = Xr + 0.02 * rng.standard_normal(Xr.shape) * np.maximum(1.0, np.abs(Xr))
    U = np.atleast_2d(ctrl.u_ref(ts)).reshape(N, ctrl.k) + 0.1 * rng.standard_normal((N, ctrl.k))
    xg = np.asarray(ref.x(ts), dtype=float)
    got = ctrl._core(X, xg, U, ctrl.ev.p, ctrl.dt)
    assert got is not None, f"the core declined (flags {ctrl._core.flags})"
    xd_c, xdd_c, lam_c = ctrl._core.last
    core, ctrl._core = ctrl._core, None
    Phi, Gam, F, x = ctrl._model(ts, X, U, xg)
    xa, xda = ctrl._admissible(X, xg, U)
    xdd, lam = ctrl._accelerations(xa, xda, U)
    np.testing.assert_array_equal(got[0], x)                # copied entries only
    for a, b, what in ((xd_c, xda, "xd"), (xdd_c, xdd, "xdd"), (lam_c, lam, "lam"),
                       (got[1], Phi, "Phi"), (got[2], Gam, "Gam"), (got[3], F, "F")):
        assert _rel(a, b) < 1e-12, (what, _rel(a, b))
    # the perturbed nodes are not the reference: the exponentials are not trivial
    assert np.abs(Phi - np.eye(ctrl.ns)).max() > 1e-3
    ctrl._core = core


@pytest.mark.parametrize("name, mode", [("ball-plate", "rti"), ("robot", "rti"), ("robot", "sqp")])
def test_controller_inputs_equal_the_numpy_paths(name, mode):
    """A closed loop run by the controller with the compiled core and replayed, state by state,
    through a controller on the numpy path: the same inputs (1e-9) and statuses (RTI, and the
    SQP, which calls the core once per iteration)."""
    from nhcontrol.simulate import forward_dynamics

    cm, ref, fast, x0, xd0 = CASES[name](mode=mode)
    _compiled(fast)
    slow = CASES[name](mode=mode)[2]
    slow._core = None
    K = 8
    dt = fast.dt
    run = forward_dynamics(cm, (0.0, K * dt), x0, xd0, controller=fast, sample_time=dt,
                           t_eval=dt * np.arange(K + 1))
    assert len(fast.history) >= K
    for j, rec in enumerate(fast.history[:K]):
        s = np.concatenate([run.x[j], run.xd[j]])
        np.testing.assert_allclose(slow.control(rec.t, s), rec.u, rtol=0, atol=1e-9)
    assert [h.status for h in fast.history[:K]] == [h.status for h in slow.history] == ["optimal"] * K
    assert [h.iterations for h in fast.history[:K]] == [h.iterations for h in slow.history]


def test_core_moves_to_the_specialised_linearization():
    """The core starts with the generic Steps 1-7 routine when the one specialised to the model
    and partition is not built, and takes the specialised one after `_cpoint.SPECIALISE_AFTER`
    nodes (as the stacked linearization does): the same nodes to round-off."""
    cm, ref, ctrl, x0, xd0 = _robot()
    _compiled(ctrl)
    core = ctrl._core
    N = 10
    ts = 0.2 + ctrl.dt * np.arange(N)
    X = ctrl.reduce(np.asarray(ref.x(ts)), np.asarray(ref.xd(ts)))
    U = np.atleast_2d(ctrl.u_ref(ts)).reshape(N, ctrl.k)
    xg = np.asarray(ref.x(ts), dtype=float)
    core._sp, core._fp[3], core._points, core._specialise_after = None, 0, 0, 5
    generic = core(X, xg, U, ctrl.ev.p, ctrl.dt)
    assert generic is not None and core._sp is not None and core._fp[3] != 0
    special = core(X, xg, U, ctrl.ev.p, ctrl.dt)
    for a, b in zip(special, generic):
        assert _rel(a, b) < 1e-12


def test_zoh_exponential_matches_scipy_at_every_degree():
    """The compiled ZOH exponential (top rows of the augmented matrix) against
    ``scipy.linalg.expm`` of the full augmented matrix, with norms that select every Padé degree
    (3, 5, 7, 9, 13) and scaling; a non-finite input is refused."""
    from scipy.linalg import expm

    from _helpers import c_compiler_present

    if not c_compiler_present():
        pytest.skip("no C compiler on this machine")
    lib = _crti.rti_library()
    assert lib is not None
    rng = np.random.default_rng(3)
    seen = set()
    for norm in (1e-3, 0.1, 0.5, 1.5, 3.0, 12.0, 40.0):
        for _ in range(4):
            ns, k = int(rng.integers(2, 10)), int(rng.integers(1, 4))
            Z = rng.standard_normal((ns, ns + k + 1))
            Z *= norm / np.abs(Z).sum(axis=0).max()
            full = np.zeros((ns + k + 1, ns + k + 1))
            full[:ns] = Z
            ref = expm(full)
            E, m, s = _crti.expm_zoh(Z, lib)
            seen.add(m)
            seen.add("scaled" if s else "unscaled")
            assert _rel(E, ref[:ns]) < 1e-12 * max(1.0, norm), (norm, m, s, _rel(E, ref[:ns]))
    assert seen >= {3, 5, 7, 9, 13, "scaled", "unscaled"}
    Z[0, 0] = np.nan
    assert _crti.expm_zoh(Z, lib) is None


def test_zoh_exponential_of_non_normal_matrices():
    """``[[a, b], [0, a]]`` blocks with ``b ≫ |a|``: the powers' norms approach ``|a|`` (no
    scaling by them), but ``|Z|``'s do not, and the ℓ term of Al-Mohy and Higham squares; the
    result against a 60-digit exponential (mpmath)."""
    import mpmath

    from _helpers import c_compiler_present

    if not c_compiler_present():
        pytest.skip("no C compiler on this machine")
    lib = _crti.rti_library()
    mpmath.mp.dps = 60
    scaled = 0
    for a, b in ((0.5, 1e3), (-2.0, 1e5), (0.01, 1e8), (3.0, 50.0)):
        Z = np.array([[a, b, 0.3, 1.0], [0.0, a, -0.2, 0.5]])
        full = np.zeros((4, 4))
        full[:2] = Z
        ref = np.array(mpmath.expm(mpmath.matrix(full.tolist())).tolist(), dtype=float)[:2]
        E, m, s = _crti.expm_zoh(Z, lib)
        scaled += s > 0
        assert _rel(E, ref) < 1e-13, (a, b, m, s, _rel(E, ref))
    assert scaled >= 2


def test_without_a_compiler_the_numpy_path_runs(monkeypatch, tmp_path):
    """No compiler (``CC`` names none): the library is not built (one warning naming the
    fallback), a controller gets no core and runs on the numpy path."""
    from nhcontrol.compiled import cache as _cache
    from nhcontrol.compiled import cbackend

    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.delenv("NHCONTROL_BACKEND", raising=False)   # (a run with =python asks for no build)
    monkeypatch.setattr(cbackend, "SHIPPED_DIR", None)       # (nor was there one at install)
    # the process remembers a missing compiler: this test's memory, dropped after it
    monkeypatch.setattr(cbackend, "_NO_COMPILER", [])
    _cache._WARNED.discard(("backend", "compiled RTI library"))
    with pytest.warns(RuntimeWarning, match="computed with numpy.*cannot be built"):
        assert _crti.rti_library(tmp_path) is None
    _crti._routine()._loaded.pop(_cache.trusted_dir(tmp_path), None)
    assert not any(p.name.startswith("nhc_rti_") for p in tmp_path.iterdir())
    cm, ref, ctrl, x0, xd0 = _robot()
    monkeypatch.setattr(_crti, "rti_library", lambda *a, **k: None)
    bare = NMPCController(cm, ref, sbr.PARTITION, 10, ctrl.Q, ctrl.R, dt=ctrl.dt, u_min=-3.0,
                          u_max=3.0, du_min=-0.3, du_max=0.3, steps=40)
    assert bare._core is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        u = bare.control(0.0, np.concatenate([x0, xd0]))
    assert [h.status for h in bare.history] == ["optimal"] and np.all(np.abs(u) <= 3.0)


def test_a_controller_made_while_the_core_compiles_runs_numpy_then_the_core(monkeypatch):
    """Right after a cold model build the RTI routines may still be compiling in the background
    (`cbackend.prebuild_pending`): the controller does not wait for the compiler, it runs the
    numpy path, and takes the compiled core at the first sample after the build is over; its
    inputs are those of a controller that had the core from the start (to the 1e-9 of the
    module docstring)."""
    import os

    from nhcontrol.compiled import cbackend

    cm, ref, ready, x0, xd0 = _robot()
    _compiled(ready)
    key = (os.path.realpath(os.path.dirname(cm._library_path)), "nhcontrol.design._crti")
    monkeypatch.setattr(cbackend, "_PENDING", {key})
    assert cbackend.prebuild_pending(os.path.dirname(cm._library_path), "nhcontrol.design._crti")
    _, _, late, _, _ = _robot()
    assert late._core is None and late._core_pending
    s0 = np.concatenate([x0, xd0])
    u_late = [late.control(0.0, s0)]
    assert late._core is None and late._core_pending        # still compiling: numpy
    cbackend._PENDING.discard(key)                          # the background build is over
    u_late.append(late.control(ready.dt, s0))
    assert late._core is not None and not late._core_pending
    u_ready = [ready.control(0.0, s0), ready.control(ready.dt, s0)]
    np.testing.assert_allclose(np.asarray(u_late), np.asarray(u_ready), rtol=0, atol=1e-9)


def test_reference_window_is_the_reference_on_the_horizon():
    """The horizon's reference comes from a block evaluated ahead (`_reference_window`,
    `_u_window`): the same values as the reference evaluated on the window, read-only, a new
    block where the window leaves the old one, and, where a block would leave the reference's
    time range, the window alone (an error only where the window itself leaves it); an object
    that is not a `Reference` is evaluated on the window every time."""
    from nhcontrol._util.errors import TimeRangeError

    cm, ref, ctrl, x0, xd0 = _robot()
    N, h = ctrl.horizon, ctrl.dt
    for k in (0, 1, 2, 30, 7, 200, 201):                   # forward, a jump back, a jump ahead
        t = k * h
        X, U = ctrl._reference_window(k, t)
        tn = t + h * np.arange(N + 1)
        X0 = ctrl.reduce(np.asarray(ref.x(tn)), np.asarray(ref.xd(tn)))
        U0 = np.atleast_2d(ctrl.u_ref(tn[:N])).reshape(N, ctrl.k)
        np.testing.assert_allclose(X, X0, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(U, U0, rtol=1e-13, atol=1e-13)
        assert not X.flags.writeable and not U.flags.writeable

    import dataclasses

    ctrl.reference = dataclasses.replace(ref, t_range=(0.0, 1.0))   # defined up to t = 1 s
    k = int(round(1.0 / h)) - N                      # the last window inside [0, 1]
    X, U = ctrl._reference_window(k, k * h)
    assert X.shape == (N + 1, ctrl.ns) and ctrl._ref_block[2].shape[0] == N + 1
    with pytest.raises(TimeRangeError):
        ctrl._reference_window(k + 1, (k + 1) * h)

    class Moving:
        """Not a `Reference`: an object whose motion may change between samples (a command
        updated online), evaluated on the window every time."""
        shift = 0.0

        def __getattr__(self, name):
            return getattr(ref, name)

        def x(self, t):
            return ref.x(t) + self.shift

        def xd(self, t):
            return ref.xd(t)

        def u(self, t):
            return ref.u(t)

    moving = Moving()
    ctrl.reference = moving
    X1, _ = ctrl._reference_window(3, 3 * h)
    moving.shift = 0.25
    X2, _ = ctrl._reference_window(4, 4 * h)
    assert ctrl._ref_block is None
    np.testing.assert_allclose(X2[:-1, 0] - X1[1:, 0], 0.25, rtol=0, atol=1e-12)
