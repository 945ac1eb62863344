"""Real-time-iteration and SQP nonlinear MPC.

On a linear multibody model (a cart on a spring with a linear holonomic and a linear
nonholonomic constraint: the nodes are made admissible through both) the exponential-Euler
step is the exact ZOH discretization and the linearization is the same everywhere, so RTI must
give the LTV-MPC inputs and the SQP must stop at the same point (the second QP finds no step).
On the ball-plate (nonlinear, 8 states) RTI closes the loop, reports a status and a KKT residual
per sample, and its python-control loop through the sampled plant is the same trajectory."""

from __future__ import annotations

import math

import control
import numpy as np
import pytest
import sympy as sp

from nhcontrol.design import MPCController, NMPCController
from nhcontrol.linearization import linearize
from nhcontrol.modeling import MultibodySystem
from nhcontrol.models import ball_plate as bp
from nhcontrol.reference import Reference, consistent_initial_conditions
from nhcontrol.simulate import forward_dynamics, to_nlsys

TIGHT = dict(eps_abs=1e-10, eps_rel=1e-10)
PART = dict(independent=("a",), admissible_dependent=("c",), dependent=("b",))


@pytest.fixture(scope="module")
def cart():
    mb = MultibodySystem("linear_cart")
    a, b, c = mb.add_coordinates("a b c")
    k_, d_, m_ = mb.add_parameters(k=2.0, d=0.5, m=1.0)
    u = mb.add_inputs("u")
    for name, pos in (("p1", [a, 0, 0]), ("p2", [0, b, 0]), ("p3", [0, 0, c])):
        mb.add_body(name, mass=m_, inertia=sp.eye(3) / 10, position=pos, orientation=sp.eye(3))
    va, vb, vc = mb.velocities
    mb.add_holonomic(b - a, name="link")
    mb.add_nonholonomic(vc - va, name="follow")
    mb.add_generalized_force([-k_ * a - d_ * va + u, 0, 0])
    cm = mb.compile()
    ref = Reference.equilibrium(cm, np.zeros(3), u=[0.0])
    lin = linearize(cm, ref, PART)
    ic = consistent_initial_conditions(cm, [1.0, 0.0, 0.3], [0.0, 0.0, 0.0], partition=PART, u=[0.0])
    return cm, ref, lin, np.asarray(ic.x), np.asarray(ic.xd)


def _controllers(cart, mode):
    cm, ref, lin, x0, xd0 = cart
    kw = dict(u_min=-0.5, u_max=0.5, du_min=-0.2, du_max=0.2, solver_options=TIGHT)
    Q, R = np.diag([10.0, 1.0, 0.0]), np.eye(1)
    ltv = MPCController(lin.to_statespace(), ref, 10, Q, R, dt=0.1, linearization=lin, steps=60, **kw)
    nm = NMPCController(cm, ref, PART, 10, Q, R, dt=0.1, mode=mode, steps=60, **kw)
    return ltv, nm


@pytest.mark.parametrize("mode", ["rti", "sqp"])
def test_on_a_linear_model_rti_and_sqp_equal_ltv_mpc(cart, mode):
    cm, ref, lin, x0, xd0 = cart
    ltv, nm = _controllers(cart, mode)
    assert nm.states == tuple(lin.states)
    runs = [forward_dynamics(cm, (0.0, 3.0), x0, xd0, controller=c, rtol=1e-10, atol=1e-12)
            for c in (ltv, nm)]
    u_ltv, u_nm = (np.asarray(r.control_inputs) for r in runs)
    assert np.max(np.abs(u_ltv)) > 0.45                      # the bounds are active
    np.testing.assert_allclose(u_nm, u_ltv, atol=1e-7)
    np.testing.assert_allclose(runs[1].x, runs[0].x, atol=1e-7)
    assert set(nm.statuses) == {"optimal"}
    if mode == "sqp":   # the second QP finds the first one's point: converged in two
        assert all(r.iterations == 2 for r in nm.history)
        assert max(r.kkt_residual for r in nm.history) < 1e-5
    else:
        assert all(r.iterations == 1 for r in nm.history)


@pytest.fixture(scope="module")
def ball():
    cm = bp.model()
    x0, xd0 = bp.initial_conditions(cm, 5.0)
    ref = bp.spin_matched_motion(cm, x0, xd0)
    mo = bp.motion_from_reference(cm, ref)
    return cm, x0, xd0, ref, mo, mo.period / 125


def test_rti_ball_plate_closes_the_loop_in_nhcontrol_and_python_control(ball):
    cm, x0, xd0, ref, mo, dt = ball
    b, r = math.radians(10.0), math.radians(0.5)
    Q = np.diag([1.0, 1.0, 1.0, 0.0, 0.1, 0.1, 1e4, 1e4])
    ctrl = NMPCController(cm, ref, bp.PARTITION_8_72, 10, Q, 1e3 * np.eye(2), dt=dt, u_min=-b,
                          u_max=b, du_min=-r, du_max=r, solver_options=TIGHT, report_kkt=True)
    K = 6
    T = dt * np.arange(K + 1)
    own = forward_dynamics(cm, (0.0, K * dt), x0, xd0, controller=ctrl, t_eval=T)
    assert set(ctrl.statuses) == {"optimal"}
    assert all(np.isfinite(h.kkt_residual) and h.iterations == 1 for h in ctrl.history)
    assert np.all(np.abs(np.diff(own.control_inputs, axis=0)) <= r + 1e-9)
    plant = to_nlsys(cm, dt=dt)
    io = ctrl.to_iosystem()
    loop = control.interconnect([plant, io], inplist=[], outlist=plant.output_labels)
    ctrl.reset()
    resp = control.input_output_response(loop, T, 0, np.concatenate([x0, xd0, np.zeros(io.nstates)]))
    np.testing.assert_allclose(np.asarray(resp.states)[:cm.n].T, own.x, atol=1e-7)


def test_infeasible_qp_falls_back_and_soft_bounds_do_not(cart):
    cm, ref, lin, x0, xd0 = cart
    Q, R = np.diag([10.0, 1.0, 0.0]), np.eye(1)
    kw = dict(u_min=-0.5, u_max=0.5, x_min=[-0.5, -1.0, -1.0], x_max=[0.5, 1.0, 1.0])
    hard = NMPCController(cm, ref, PART, 10, Q, R, dt=0.1, steps=60, **kw)
    s = np.concatenate([x0, xd0])                       # a = 1: outside |a| <= 0.5 at once
    u = hard.control(0.0, s)
    assert hard.history[-1].status.startswith("fallback: lqr")
    np.testing.assert_allclose(u, np.clip(-hard.schedule.K(0) @ lin.deviation(ref, 0.0, x0, xd0),
                                          -0.5, 0.5))
    soft = NMPCController(cm, ref, PART, 10, Q, R, dt=0.1, steps=60, soft_state=True, **kw)
    soft.control(0.0, s)
    assert soft.history[-1].status == "optimal" and soft.history[-1].slack_max > 0.1


@pytest.fixture(scope="module")
def pushed_sleigh():
    from nhcontrol.modeling import contacts
    from nhcontrol.modeling.rotations import rot_z

    mb = MultibodySystem("pushed_sleigh")
    x, y, psi = mb.add_coordinates("x y psi")
    m, inertia, a = mb.add_parameters(m=1.0, I=0.05, a=-0.2)
    F, tau = mb.add_inputs("F tau")
    R = rot_z(psi)
    body = mb.add_body("sleigh", mass=m, inertia=sp.diag(inertia / 2, inertia / 2, inertia),
                       position=[x, y, 0], orientation=R)
    contacts.knife_edge(mb, body, sp.Matrix([x, y, 0]) + R * sp.Matrix([a, 0, 0]), (1, 0, 0),
                        name="blade")
    mb.add_force(body, R * sp.Matrix([F, 0, 0]))
    mb.add_torque(body, [0, 0, tau])
    cm = mb.compile()
    ref = Reference.constant_velocity(cm, [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], u=[0.0, 0.0])
    return cm, ref


def test_singular_partition_along_the_prediction_falls_back_to_the_reference(pushed_sleigh):
    """With x_ad = y the velocity block D_dd = cos ψ vanishes at ψ = 90°: a measured state there
    cannot be a node of this partition, so the sample is solved about the reference (named
    status) and the run goes on."""
    cm, ref = pushed_sleigh
    part = {"independent": ("x", "psi"), "admissible_dependent": ("y",)}
    ctrl = NMPCController(cm, ref, part, 10, np.diag([1.0, 1.0, 0.1, 0.1, 50.0]),
                          np.diag([0.1, 1.0]), dt=0.05, steps=100, u_min=[-2.0, -0.3],
                          u_max=[2.0, 0.3])
    s = np.array([0.0, 0.2, math.pi / 2, 0.0, 1.0, 0.0])   # heading 90°, moving along y
    u = ctrl.control(0.0, s)
    assert ctrl.history[-1].status.startswith("fallback: reference linearization")
    assert np.all(np.isfinite(u)) and np.all(np.abs(u) <= [2.0, 0.3])
    ctrl.control(0.05, np.array([0.0, 0.25, 1.2, 0.0, 1.0, 0.0]))   # off the singularity: normal
    assert ctrl.history[-1].status == "optimal"


def test_node_exponentials_match_scipy():
    from scipy.linalg import expm

    from nhcontrol.design.nmpc import _expm_nodes

    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 11, 11)) * np.array([0.01, 0.3, 1.0, 3.0, 10.0, 0.0])[:, None, None]
    ref = np.array([expm(x) for x in X])
    np.testing.assert_allclose(_expm_nodes(X), ref, rtol=1e-13, atol=1e-13 * np.abs(ref).max())


def test_prediction_model_parameters_reach_the_relinearization(cart):
    """NMPCController(p=...) predicts with those parameters everywhere: its node Jacobians are
    the exact linearization of the model with p (a stiffer spring), not with the reference's."""
    from scipy.linalg import expm

    cm, ref, lin, x0, xd0 = cart
    p2 = {"k": 5.0, "d": 0.5, "m": 1.0}
    nm = NMPCController(cm, ref, PART, 4, np.diag([10.0, 1.0, 0.0]), np.eye(1), dt=0.1,
                        steps=20, p=p2)
    X = np.tile(nm.reduce(x0, xd0), (4, 1))
    Phi, Gam, F, _ = nm._model(0.1 * np.arange(4), X, np.zeros((4, 1)), np.tile(x0, (4, 1)))
    lin2 = linearize(cm, Reference.equilibrium(cm, np.zeros(3), u=[0.0], p=p2), PART)
    np.testing.assert_allclose(Phi[0], expm(0.1 * np.asarray(lin2.A)), atol=1e-12)
    assert not np.allclose(Phi[0], expm(0.1 * np.asarray(lin.A)), atol=1e-6)


def test_output_bounds_act_on_the_absolute_outputs(cart):
    """Output bounds of the NMPC bound ``C_y X`` itself (the QP is written about the plan): on
    the linear cart RTI equals the LTV-MPC with the same soft output bound, which is active (the
    spring pulls harder than |u| <= 0.5 can hold: the slack is used) and changes the inputs."""
    cm, ref, lin, x0, xd0 = cart
    kw = dict(u_min=-0.5, u_max=0.5, solver_options=TIGHT, y_min=-0.3, y_max=0.3,
              C_y=[[0.0, 1.0, 0.0]], soft_output=True)          # the velocity of a
    Q, R = np.diag([10.0, 1.0, 0.0]), np.eye(1)
    ltv = MPCController(lin.to_statespace(), ref, 10, Q, R, dt=0.1, linearization=lin, steps=60, **kw)
    nm = NMPCController(cm, ref, PART, 10, Q, R, dt=0.1, steps=60, **kw)
    free = NMPCController(cm, ref, PART, 10, Q, R, dt=0.1, steps=60, u_min=-0.5, u_max=0.5,
                          solver_options=TIGHT)
    runs = [forward_dynamics(cm, (0.0, 2.0), x0, xd0, controller=c, rtol=1e-10, atol=1e-12)
            for c in (ltv, nm, free)]
    np.testing.assert_allclose(runs[1].control_inputs, runs[0].control_inputs, atol=1e-7)
    assert set(nm.statuses) == {"optimal"} and max(r.slack_max for r in nm.history) > 0.05
    assert np.max(np.abs(runs[2].control_inputs - runs[1].control_inputs)) > 0.05


def test_direct_compiled_kernels_give_the_validating_paths_inputs(ball):
    """Without its compiled core (``_crti``) the RTI step calls the stacked C kernels of the
    nodes directly (Steps 1-7, ``D``, the fused ``dynamics_terms``); with them switched off it
    goes through `linearize` and `CompiledModel`'s validating wrappers: the same inputs, sample
    by sample (the core's inputs: test_design_nmpc_core)."""
    from _helpers import require_c_backend

    cm, x0, xd0, ref, mo, dt = ball
    require_c_backend(cm.backend)
    b, r = math.radians(10.0), math.radians(0.5)
    Q = np.diag([1.0, 1.0, 1.0, 0.0, 0.1, 0.1, 1e4, 1e4])

    def make():
        return NMPCController(cm, ref, bp.PARTITION_8_72, 10, Q, 1e3 * np.eye(2), dt=dt,
                              u_min=-b, u_max=b, du_min=-r, du_max=r, steps=20)

    fast, slow = make(), make()
    assert fast._lin_n is not None and set(fast._raw) == {"D", "dynamics_terms"}
    fast._core = None
    slow._lin_n, slow._raw, slow._core = None, {}, None
    K = 5
    run = forward_dynamics(cm, (0.0, K * dt), x0, xd0, controller=fast, sample_time=dt,
                           t_eval=dt * np.arange(K + 1))
    assert len(fast.history) >= K
    for j, rec in enumerate(fast.history):
        assert rec.t == pytest.approx(run.t[j], abs=1e-12)
        s = np.concatenate([run.x[j], run.xd[j]])
        np.testing.assert_allclose(slow.control(rec.t, s), rec.u, rtol=0, atol=1e-13)
    assert set(fast.statuses) == set(slow.statuses) == {"optimal"}


def test_rti_controller_pickles_mid_loop_and_continues_the_same(ball):
    """An RTI controller pickled after some samples (its plan, warm start and history with it;
    the compiled routines left out and attached again on unpickling, as on a Dask worker)
    gives the same inputs as the original on the following samples, and a fresh copy of the
    original gives those of a fresh controller."""
    import pickle

    cm, x0, xd0, ref, mo, dt = ball
    b, r = math.radians(10.0), math.radians(0.5)
    Q = np.diag([1.0, 1.0, 1.0, 0.0, 0.1, 0.1, 1e4, 1e4])
    ctrl = NMPCController(cm, ref, bp.PARTITION_8_72, 10, Q, 1e3 * np.eye(2), dt=dt, u_min=-b,
                          u_max=b, du_min=-r, du_max=r, steps=20)
    sim = forward_dynamics(cm, (0.0, 8 * dt), x0, xd0, controller=ctrl,
                           t_eval=dt * np.arange(9))
    ctrl.reset()
    states = [np.concatenate([sim.x[j], sim.xd[j]]) for j in range(9)]
    for j in range(4):
        ctrl.control(j * dt, states[j])
    copy = pickle.loads(pickle.dumps(ctrl))
    assert copy._core_pending is False or copy._core is None      # attached (or numpy path)
    assert len(copy.history) == len(ctrl.history) == 4
    for j in range(4, 9):
        np.testing.assert_array_equal(copy.control(j * dt, states[j]),
                                      ctrl.control(j * dt, states[j]))
    assert copy.statuses == ctrl.statuses
