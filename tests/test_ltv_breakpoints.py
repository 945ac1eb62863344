"""Jump times of ``A(t)``, ``B(t)`` carried by the linear systems (``LTVSystem.breakpoints``).

* ``LTVSystem.from_linearization`` takes the reference's ``breakpoints`` (the jumps of its
  inputs ``u0(t)``, where the linearization jumps too); `simulate_ltv` uses them by default;
* `discretize` integrates a step that contains a jump in pieces, each on one side of it:
  closed forms for a scalar system (``Ad = e^{a dt}``, ``Bd = (1 − e^{−a (t_{k+1} − t_j)})/a``
  for ``B`` switched on at ``t_j``), at 1e-12 (the discretization's ``rtol`` is 1e-11);
* on the skateboard linearized along a steering step, ``x[k+1] = Ad x[k] + Bd u[k]`` equals the
  continuous system simulated with the held input to 1e-12 (both integrations at ~1e-13;
  measured 4e-14), with either integrator.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nhcontrol._util.errors import LinearSystemError
from nhcontrol.models import sleigh
from nhcontrol.reference import Reference
from nhcontrol.simulate import forward_dynamics, simulate_ltv
from nhcontrol.systems import DiscreteLTV, LTVSystem, discretize

JUMP = 0.23
"""Steering step of the skateboard reference (inside the step [0.2, 0.3] of dt = 0.1)."""


def _switched(t_jump: float, a: float = -1.0, **kw) -> LTVSystem:
    """``ẋ = a x + B(t) u`` with ``B`` switched from 0 to 1 at ``t_jump`` (right-continuous)."""
    return LTVSystem(lambda t: np.array([[a]]), lambda t: np.array([[1.0 if t >= t_jump else 0.0]]),
                     breakpoints=[t_jump], **kw)


def test_ltv_system_breakpoints_validated():
    assert _switched(1.0).breakpoints == (1.0,)
    s = LTVSystem(np.zeros((1, 1)), np.ones((1, 1)), t_range=(0.0, 2.0), breakpoints=[3.0, 1.5, 1.5])
    assert s.breakpoints == (1.5,)                 # sorted, distinct, inside t_range
    assert LTVSystem(np.zeros((1, 1)), np.ones((1, 1))).breakpoints == ()
    with pytest.raises(LinearSystemError, match=r"breakpoints must be finite times"):
        LTVSystem(np.zeros((1, 1)), np.ones((1, 1)), breakpoints=[0.5, math.nan])


def test_simulate_ltv_uses_the_system_breakpoints():
    """x = t − 1 after B switches on at t = 1 (u = 1, a = 0): exact to round-off by default."""
    s = _switched(1.0, a=0.0)
    T = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    res = simulate_ltv(s, (0.0, 2.0), [0.0], u=[1.0], t_eval=T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(res.x[:, 0], [0.0, 0.0, 0.0, 0.5, 1.0], atol=1e-13)


@pytest.mark.parametrize("integrator", ["magnus", "ivp"])
@pytest.mark.parametrize("t_jump", [1.0, 0.93])    # on the grid (t_4 = 1.0), inside a step
def test_discretize_splits_the_step_at_a_jump(integrator, t_jump):
    a, dt = -1.0, 0.25
    d = discretize(_switched(t_jump, a), dt, steps=6, integrator=integrator)
    assert d.breakpoints == (t_jump,) and d.period_steps is None
    after = np.clip(d.times[1:] - np.maximum(d.times[:-1], t_jump), 0.0, None)   # time after the jump
    np.testing.assert_allclose(d.Ad[:, 0, 0], np.exp(a * dt), rtol=1e-12)
    np.testing.assert_allclose(d.Bd[:, 0, 0], (1.0 - np.exp(a * after)) / -a, atol=1e-12)


def test_discrete_ltv_breakpoints_saved(tmp_path):
    d = DiscreteLTV(np.ones((2, 1, 1)), np.ones((2, 1, 1)), 0.1, breakpoints=[0.15, 0.05])
    assert d.breakpoints == (0.05, 0.15)
    assert DiscreteLTV.load(d.save(tmp_path / "d.npz")).breakpoints == (0.05, 0.15)
    with pytest.raises(LinearSystemError, match=r"breakpoints must be finite"):
        DiscreteLTV(np.ones((2, 1, 1)), np.ones((2, 1, 1)), 0.1, breakpoints=[math.inf])


def steer_step(t: float) -> np.ndarray:
    """Steering of the skateboard: 0.2 rad, then 0.3 rad from `JUMP` on."""
    return np.array([0.2 if t < JUMP else 0.3])


@pytest.fixture(scope="module")
def step_system():
    """The skateboard linearized along a run whose steering steps at `JUMP`."""
    sk = sleigh.model_skateboard()
    turn = sleigh.skateboard_turn(sk, 1.0, 0.2)
    run = forward_dynamics(sk, (0.0, 0.5), turn.x(0.0), turn.xd(0.0), u=steer_step,
                           breakpoints=[JUMP], rtol=1e-11, atol=1e-11)
    ref = Reference.from_simulation(run)
    sys_ = LTVSystem.from_linearization(sk, ref, sleigh.PARTITION_SKATEBOARD_TURN, input_states=True)
    return ref, sys_


def test_from_linearization_carries_the_reference_breakpoints(step_system):
    ref, s = step_system
    assert ref.breakpoints == (JUMP,) and s.breakpoints == (JUMP,)
    before, after = s.A(np.nextafter(JUMP, -np.inf)), s.A(np.nextafter(JUMP, np.inf))
    assert np.abs(after - before).max() > 0.1          # A(t) jumps with the steering
    x0 = 1e-3 * np.ones(s.nstates)
    u0 = np.zeros(s.ninputs)
    default = simulate_ltv(s, (0.0, 0.5), x0, u=u0, t_eval=[0.5])
    given = simulate_ltv(s, (0.0, 0.5), x0, u=u0, t_eval=[0.5], breakpoints=[JUMP])
    np.testing.assert_array_equal(default.x, given.x)


@pytest.mark.parametrize("integrator", ["magnus", "ivp"])
def test_discretized_jump_matches_the_held_simulation(step_system, integrator):
    """Without the split the Magnus scheme does not converge across the jump (SolverError at
    1024 substeps) and the one-piece ``solve_ivp`` is off by ~1e-11 relative."""
    _, s = step_system
    d = discretize(s, 0.1, steps=5, integrator=integrator)
    assert d.breakpoints == (JUMP,)
    x0, uk = 1e-3 * np.ones(s.nstates), np.full(s.ninputs, 0.05)
    X = x0
    for k in range(5):
        X = d.Ad[k] @ X + d.Bd[k] @ uk
    held = simulate_ltv(s, (0.0, 0.5), x0, controller=lambda t, x: uk, sample_time=0.1,
                        t_eval=[0.5], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(X, held.x[0], rtol=0, atol=1e-12)
