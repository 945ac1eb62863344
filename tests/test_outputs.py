"""Declared outputs (MultibodySystem.add_output): generated kernels of h and its exact partial
derivatives (C and Python back-ends), and the output matrices C, D of the third procedure
through the partition, against central differences on three models (a pendulum with two
holonomic constraints, the rolling disc with one holonomic and two nonholonomic constraints,
the ball-plate with two nonholonomic constraints and inputs, along its circle)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import nhcontrol
from nhcontrol._util.errors import LinearSystemError, ModelError
from nhcontrol.modeling import MultibodySystem
from nhcontrol.reference import Reference

from _toy_models import pinned_pendulum

EPS = 1e-6
# central differences of smooth functions with step 1e-6: truncation ~1e-12 |h'''|, round-off
# ~1e-16 |h| / 1e-6 = 1e-10; both well below this tolerance (relative to max(1, |C|))
FD_TOL = 1e-7


def _pendulum() -> MultibodySystem:
    mb, s = pinned_pendulum("pendulum_sensor")
    x, y, tau = s.x, s.y, s.tau
    # a camera on the tip (dependent coordinates only), a nonlinear speed-like signal with the input
    mb.add_output(["tip_x", "tip_y"], sp.Matrix([2 * x, 2 * y]))
    mb.add_output("mixed", y * mb.velocities[2] + tau * x ** 2 + sp.sin(mb.velocities[0]))
    return mb


@pytest.fixture(scope="module")
def pendulum():
    cm = _pendulum().compile()
    th0 = 0.4
    m, g, L = 2.0, 9.81, 1.2
    x0 = [L / 2 * math.sin(th0), -L / 2 * math.cos(th0), th0]
    ref = Reference.equilibrium(cm, x0, u=[m * g * L / 2 * math.sin(th0)])
    return cm, ref, {"independent": ["theta"], "admissible_dependent": [], "dependent": ["x", "y"]}


@pytest.fixture(scope="module")
def disc():
    from nhcontrol.models import rolling_wheel as rw

    mb = rw.build_disc()
    q = {s.name: s for s in mb.coordinates}
    v = {s.name: s for s in mb.velocities}
    mb.add_output("height_mix", q["z"] * q["x"] + sp.sin(q["psi"]) * v["y_d"])
    mb.add_output("gyro_x", mb.body_angular_velocity(mb.bodies[0])[0])
    cm = mb.compile()
    ref = rw.upright_rolling(cm, 1.3)
    return cm, ref, rw.PARTITION


@pytest.fixture(scope="module")
def ball_plate():
    from nhcontrol.models import ball_plate as bp

    mb = bp.build()
    xC, yC, psi, phi, theta = mb.coordinates
    alpha, beta = mb.inputs
    mb.add_output(["cam_x", "cam_y"], sp.Matrix([xC, yC]))
    mb.add_output(["enc_alpha", "enc_beta"], sp.Matrix([alpha, beta]))
    mb.add_output("gyro_z", mb.body_angular_velocity(mb.body("ball"))[2])
    mb.add_output("mixed", sp.sin(alpha) * xC ** 2 + beta * mb.velocities[0])
    cm = mb.compile()
    return cm, bp.circular_motion(cm, 5.0), bp.PARTITION_8_72


def _fd_output_matrices(cm, ref, res, t):
    u0 = np.atleast_1d(ref.u(t)) if cm.ninputs else None
    p = ref.parameters
    Cfd = np.zeros(res.C.shape)
    for j in range(res.nstates):
        e = np.zeros(res.nstates)
        e[j] = EPS
        xp, xdp = res.from_deviation(ref, t, e, tol=1e-14)
        xm, xdm = res.from_deviation(ref, t, -e, tol=1e-14)
        Cfd[:, j] = (cm.output(xp, xdp, u0, p) - cm.output(xm, xdm, u0, p)) / (2 * EPS)
    Dfd = np.zeros(res.D.shape)
    x0, xd0 = ref.x(t), ref.xd(t)
    for j in range(cm.ninputs):
        e = np.zeros(cm.ninputs)
        e[j] = EPS
        Dfd[:, j] = (cm.output(x0, xd0, u0 + e, p) - cm.output(x0, xd0, u0 - e, p)) / (2 * EPS)
    return Cfd, Dfd


@pytest.mark.parametrize("name,t", [("pendulum", 0.0), ("disc", 0.0), ("ball_plate", 0.0),
                                    ("ball_plate", 1.7)])
def test_output_matrices_central_differences(name, t, request):
    cm, ref, part = request.getfixturevalue(name)
    res = nhcontrol.linearize(cm, ref, part, t=t)
    assert res.outputs == cm.outputs
    assert res.C.shape == (len(cm.outputs), res.nstates)
    Cfd, Dfd = _fd_output_matrices(cm, ref, res, t)
    scale = max(1.0, float(np.abs(res.C).max()))
    assert np.abs(res.C - Cfd).max() <= FD_TOL * scale
    if res.D.size:
        assert np.abs(res.D - Dfd).max() <= FD_TOL * max(1.0, float(np.abs(res.D).max()))
    assert np.abs(res.C).max() > 0.05           # not a trivially zero output map


def test_output_kernel_partials_central_differences(ball_plate):
    cm, ref, _ = ball_plate
    rng = np.random.default_rng(3)
    x, xd, u = rng.normal(size=5), rng.normal(size=5), rng.normal(size=2)
    ot = cm.output_terms(x, xd, u)
    np.testing.assert_array_equal(ot.h, cm.output(x, xd, u))
    for arg, jac in (("x", ot.dh_dx), ("xd", ot.dh_dxd), ("u", ot.dh_du)):
        base = {"x": x, "xd": xd, "u": u}
        fd = np.zeros(jac.shape)
        for j in range(jac.shape[1]):
            hp, hm = dict(base), dict(base)
            hp[arg] = base[arg].copy(); hp[arg][j] += EPS
            hm[arg] = base[arg].copy(); hm[arg][j] -= EPS
            fd[:, j] = (cm.output(hp["x"], hp["xd"], hp["u"]) - cm.output(hm["x"], hm["xd"], hm["u"])) / (2 * EPS)
        np.testing.assert_allclose(jac, fd, atol=1e-8)


@pytest.mark.c_compiler
def test_python_and_c_backends_bit_identical(tmp_path):
    from nhcontrol.compiled.cbackend import cffi_problem

    if cffi_problem():
        pytest.skip("no C compiler")
    mb = _pendulum()
    py = mb.compile(backend="python", cache_dir=str(tmp_path))
    c = mb.compile(backend="c", cache_dir=str(tmp_path))
    assert (py.backend, c.backend) == ("python", "c")
    rng = np.random.default_rng(0)
    X, XD, U = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 1))
    for a, b in ((py.output_terms(X[0], XD[0], U[0]), c.output_terms(X[0], XD[0], U[0])),
                 (py.output_terms(X, XD, U), c.output_terms(X, XD, U))):
        for f in ("h", "dh_dx", "dh_dxd", "dh_du"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_stacked_matches_points_and_statespace(ball_plate):
    cm, ref, part = ball_plate
    ts = np.array([0.0, 0.9, 2.2])
    res = nhcontrol.linearize(cm, ref, part, t=ts)
    assert res.C.shape == (3, 6, 8) and res.D.shape == (3, 6, 2)
    for i, t in enumerate(ts):
        one = nhcontrol.linearize(cm, ref, part, t=float(t))
        np.testing.assert_allclose(res.C[i], one.C, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(res.D[i], one.D, rtol=1e-13, atol=1e-15)


def test_statespace_declared_outputs(disc):
    cm, ref, part = disc
    res = nhcontrol.linearize(cm, ref, part)
    ss = res.to_statespace(outputs="declared")
    assert list(ss.output_labels) == list(cm.outputs)
    np.testing.assert_array_equal(ss.C, res.C)
    default = res.to_statespace()
    assert default.noutputs == res.nstates        # the state outputs stay the default
    with pytest.raises(LinearSystemError, match="outputs must be"):
        res.to_statespace(outputs="measured")


def test_add_output_errors():
    mb = MultibodySystem("bad_outputs")
    x = mb.add_coordinates("x")
    with pytest.raises(ModelError, match="unknown symbol"):
        mb.add_output("acc", sp.Symbol("x_dd"))
    mb.add_output("enc", x)
    with pytest.raises(ModelError, match="declared twice"):
        mb.add_output("enc", 2 * x)
    with pytest.raises(ModelError, match="one name per output"):
        mb.add_output(["a", "b"], x)


def test_model_without_outputs_refuses_output_kernels():
    from nhcontrol.modeling.examples import sleigh

    cm = sleigh().compile()
    assert cm.outputs == ()
    with pytest.raises(ModelError, match="declares no outputs"):
        cm.output(np.zeros(cm.n), np.zeros(cm.n))


def test_ltv_time_varying_outputs_and_discretize(ball_plate):
    from nhcontrol.systems import LTVSystem, discretize

    cm, ref, part = ball_plate
    sys = LTVSystem.from_linearization(cm, ref, part, t_range=(0.0, 1.0), outputs="declared")
    assert sys.output_labels == list(cm.outputs)
    assert not sys.outputs_constant
    with pytest.raises(LinearSystemError, match="vary with time"):
        sys.C
    C, D = sys.output_matrices(0.4)
    one = nhcontrol.linearize(cm, ref, part, t=0.4)
    np.testing.assert_array_equal(C, one.C)
    np.testing.assert_array_equal(D, one.D)
    Cs, Ds = sys.output_matrices(np.array([0.0, 0.4]))
    np.testing.assert_allclose(Cs[1], one.C, rtol=1e-13, atol=1e-15)
    assert np.abs(Cs[1] - Cs[0]).max() > 1e-3          # C(t) varies along the circle
    ss = sys.at(0.4)
    np.testing.assert_array_equal(ss.D, one.D)
    d = discretize(sys, 0.1, steps=4)
    assert d.Ck.shape == (5, 6, 8) and d.noutputs == 6
    Ck, Dk = d.output_matrices(4)
    np.testing.assert_allclose(Ck, nhcontrol.linearize(cm, ref, part, t=0.4).C, rtol=1e-12, atol=1e-14)
    with pytest.raises(LinearSystemError, match="sample index"):
        d.output_matrices(5)


def test_discrete_ltv_output_checks():
    from nhcontrol.systems import DiscreteLTV

    Ad, Bd = np.eye(2)[None].repeat(3, 0), np.ones((3, 2, 1))
    with pytest.raises(LinearSystemError, match=r"Ck must have shape \(N \+ 1, p, n\)"):
        DiscreteLTV(Ad, Bd, 0.1, Ck=np.ones((3, 1, 2)))
    with pytest.raises(LinearSystemError, match="not both"):
        DiscreteLTV(Ad, Bd, 0.1, C=np.ones((1, 2)), Ck=np.ones((4, 1, 2)))
    d = DiscreteLTV(Ad, Bd, 0.1, C=[[1.0, 0.0]], D=[[0.5]])
    C, D = d.output_matrices(3)
    np.testing.assert_array_equal(D, [[0.5]])
    assert d.at(0).D[0, 0] == 0.5


def test_save_load_keeps_outputs(disc, tmp_path):
    from nhcontrol.linearization import LinearizationResult

    cm, ref, part = disc
    res = nhcontrol.linearize(cm, ref, part)
    back = LinearizationResult.load(res.save(tmp_path / "lin.npz"))
    assert back.outputs == res.outputs
    np.testing.assert_array_equal(back.C, res.C)
    np.testing.assert_array_equal(back.D, res.D)
