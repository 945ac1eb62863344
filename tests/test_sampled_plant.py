"""The sampled plant ``to_nlsys(cm, dt=h)``: one sample of the nonlinear
model with the input held, as a discrete-time python-control system. Checked against
``forward_dynamics`` with the same held inputs (a discrete controller replaying a schedule), for
a model whose input enters the constraints (the skateboard: velocities re-projected at the input
jumps) and for the ball-plate (8 states, 2 inputs)."""

from __future__ import annotations

import control
import numpy as np
import pytest

from nhcontrol._util.errors import SimulationInputError, SolverError
from nhcontrol.models import ball_plate, sleigh
from nhcontrol.simulate import constraint_drift, forward_dynamics, to_nlsys


def _replay(schedule, h):
    def ctrl(t, x, xd):
        return schedule[min(int(round(t / h)), len(schedule) - 1)]
    return ctrl


def _compare(cm, x0, xd0, U, h):
    plant = to_nlsys(cm, dt=h)
    assert control.isdtime(plant, strict=True) and plant.dt == h
    assert plant.state_labels[:cm.n] == list(cm.coordinates)
    N = len(U)
    T = h * np.arange(N + 1)
    Uext = np.vstack([U, U[-1:]]).T
    r = control.input_output_response(plant, T, Uext, np.concatenate([x0, xd0]))
    fd = forward_dynamics(cm, (0.0, N * h), x0, xd0, controller=_replay(U, h), sample_time=h,
                          t_eval=T)
    np.testing.assert_allclose(r.states[:cm.n].T, fd.x, atol=1e-8)
    # velocities: the sampled state at t_k is the end of the previous hold (left limit); the
    # projection onto the constraints of the new input happens inside the next update, while
    # forward_dynamics reports t_k after it. They agree wherever the input does not jump.
    same = np.r_[True, np.all(U[1:] == U[:-1], axis=1), True]
    np.testing.assert_allclose(r.states[cm.n:].T[same], fd.xd[same], atol=1e-8)
    return plant, r


def test_sampled_skateboard_projects_velocities_like_forward_dynamics():
    cm = sleigh.model_skateboard()
    ref = sleigh.skateboard_turn(cm, 1.0, 0.0)
    U = np.array([[0.0], [0.2], [0.2], [-0.1], [0.3], [0.0]])
    plant, r = _compare(cm, ref.x(0.0), ref.xd(0.0), U, 0.1)
    # the velocities after each step satisfy the constraints of the held input
    assert constraint_drift(cm, np.asarray(r.states)[:, 1:].T, U).max < 1e-8
    # one call = one sample, with no memory: the same call gives the same state
    y0 = np.concatenate([ref.x(0.0), ref.xd(0.0)])
    a = plant.updfcn(0.0, y0, np.array([0.2]), {})
    b = plant.updfcn(0.0, y0, np.array([0.2]), {})
    np.testing.assert_array_equal(a, b)


def test_sampled_ball_plate():
    cm = ball_plate.model()
    ref = ball_plate.circular_motion(cm, 0.0)
    x0, xd0 = ref.x(0.0), ref.xd(0.0)
    U = np.array([ref.u(0.02 * i) for i in range(5)]) + 0.01
    _compare(cm, x0, xd0, U, 0.02)


def test_sampled_plant_errors():
    cm = sleigh.model_skateboard()
    with pytest.raises(SolverError, match="dt must be a positive"):
        to_nlsys(cm, dt=0.0)
    with pytest.raises(SolverError, match="method must be one of"):
        to_nlsys(cm, dt=0.1, method="Euler")


def test_sampled_plant_checks_the_start_of_a_run():
    cm = ball_plate.model()
    ref = ball_plate.circular_motion(cm, 0.0)
    x0, xd0 = ref.x(0.0), ref.xd(0.0).copy()
    xd0[0] += 0.1                              # contact point moving: violates rolling
    plant = to_nlsys(cm, dt=0.02)
    T = 0.02 * np.arange(3)
    U = np.tile(ref.u(0.0), (3, 1)).T
    with pytest.raises(SimulationInputError, match="violates the constraints"):
        control.input_output_response(plant, T, U, np.concatenate([x0, xd0]))
    r = control.input_output_response(plant, T, U, np.concatenate([x0, xd0]),
                                      params={"check_initial": False})
    assert np.all(np.isfinite(r.states))
