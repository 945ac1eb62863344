"""Inverse dynamics, Eq. (2.112): multipliers (and actuations) of prescribed motions."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import ReferenceMotionError
from nhcontrol.reference import RankDeficiencyWarning, inverse_dynamics
from test_simulate_toy_models import ToyModel, pendulum, sleigh

M_P, G, L = 1.5, 9.81, 0.8     # pendulum parameters (test_simulate_toy_models.pendulum)


def pendulum_motion(phi, phid, phidd):
    """Cartesian x, xd, xdd of the bob for angle phi from the downward vertical."""
    s, c = np.sin(phi), np.cos(phi)
    x = np.stack([L * s, -L * c], axis=-1)
    xd = np.stack([L * c * phid, L * s * phid], axis=-1)
    xdd = np.stack([L * (c * phidd - s * phid**2), L * (s * phidd + c * phid**2)], axis=-1)
    return x, xd, xdd


def test_pendulum_uniform_rotation_without_gravity():
    """g = 0, φ = ω t is a motion; with C = (X²+Y²-L²)/2 the multiplier is λ = T/L = m ω².

    Closed form (centripetal force m ω² L along the rod); agreement to 1e-12 relative (the
    computation is a 2x1 least-squares problem in double precision).
    """
    cm = pendulum()
    p = cm.param_vector(g=0.0)
    omega = 2.7
    t = np.linspace(0, 3, 50)
    x, xd, xdd = pendulum_motion(omega * t, omega + 0 * t, 0 * t)
    res = inverse_dynamics(cm, x, xd, xdd, p=p)
    assert res.lam.shape == (50, 1) and res.tau.shape == (50, 0)
    np.testing.assert_allclose(res.lam[:, 0], M_P * omega**2, rtol=1e-12)
    assert res.admissible and res.max_residual < 1e-12
    assert np.all(res.rank == 1)


def test_pendulum_actuated_tension_and_torque():
    """Any φ(t) is realisable with a tangential actuation A_τ(x) = tangent direction.

    Closed form: tension T = m (L φ̇² + g cos φ), λ = T / L; tangential force
    τ = m (L φ̈ + g sin φ). Agreement to 1e-11 relative (square 2x2 solve).
    """
    cm = pendulum()
    t = np.linspace(0, 2, 40)
    phi, phid, phidd = 0.6 * np.sin(2 * t), 1.2 * np.cos(2 * t), -2.4 * np.sin(2 * t)
    x, xd, xdd = pendulum_motion(phi, phid, phidd)

    def A_tau(xi):
        return np.array([[-xi[1]], [xi[0]]]) / L      # unit tangent (cos φ, sin φ)

    res = inverse_dynamics(cm, x, xd, xdd, actuation=A_tau)
    T = M_P * (L * phid**2 + G * np.cos(phi))
    np.testing.assert_allclose(res.lam[:, 0], T / L, rtol=1e-11)
    np.testing.assert_allclose(res.tau[:, 0], M_P * (L * phidd + G * np.sin(phi)), rtol=1e-11,
                               atol=1e-11)
    # the same with a stacked actuation array (N, n, nτ)
    At = np.stack([A_tau(xi) for xi in x])
    res2 = inverse_dynamics(cm, x, xd, xdd, actuation=At)
    np.testing.assert_allclose(res2.tau, res.tau, rtol=0, atol=1e-13)


def test_not_admissible_motion_is_rejected_with_numbers():
    """Forcing an arbitrary φ(t) without actuation leaves a residual; the error names it."""
    cm = pendulum()
    t = np.linspace(0, 1, 5)
    x, xd, xdd = pendulum_motion(0.5 * t, 0.5 + 0 * t, 0 * t)   # uniform rotation against gravity
    with pytest.raises(ReferenceMotionError, match=r"not dynamically admissible at t = .*Eq\. \(2\.112\)"):
        inverse_dynamics(cm, x, xd, xdd, t=t)
    res = inverse_dynamics(cm, x, xd, xdd, check=False)
    assert not res.admissible
    # residual = tangential part of gravity, m g |sin φ| (up to rounding)
    np.testing.assert_allclose(res.residual, np.max(np.abs(
        M_P * G * np.sin(0.5 * t)[:, None] * np.stack([np.cos(0.5 * t), np.sin(0.5 * t)], 1)), 1),
        rtol=1e-10, atol=1e-12)


def test_sleigh_circular_motion_multiplier():
    """Sleigh with the blade at G (a = 0): θ = ω t, speed v along the heading.

    Closed form: the lateral reaction is m v ω along n = (-sin θ, cos θ); with B = (-s, c, 0)
    and reaction -Bᵀλ this is λ = -m v ω. Agreement 1e-12 relative.
    """
    cm = sleigh()
    m = cm.parameters["m"]
    v, w = 1.3, 0.7
    t = np.linspace(0, 4, 30)
    th = w * t
    x = np.stack([v / w * np.sin(th), -v / w * np.cos(th), th], 1)
    xd = np.stack([v * np.cos(th), v * np.sin(th), w + 0 * t], 1)
    xdd = np.stack([-v * w * np.sin(th), v * w * np.cos(th), 0 * t], 1)
    res = inverse_dynamics(cm, x, xd, xdd)
    np.testing.assert_allclose(res.lam[:, 0], -m * v * w, rtol=1e-12)


def test_single_point_and_stacked_agree():
    """One point gives unstacked shapes with the same numbers as the stacked call."""
    cm = pendulum()
    x, xd, xdd = pendulum_motion(np.array([0.3, 0.4]), np.array([1.0, 2.0]), np.array([0.0, 0.0]))
    res = inverse_dynamics(cm, x, xd, xdd, check=False)
    one = inverse_dynamics(cm, x[1], xd[1], xdd[1], check=False)
    assert one.lam.shape == (1,) and np.ndim(one.residual) == 0
    np.testing.assert_array_equal(one.lam, res.lam[1])
    with pytest.raises(ValueError):
        one.lam[0] = 1.0        # read-only result


def test_redundant_constraints_warn_with_singular_values():
    """Y = 0 stated twice: the multipliers are not unique; a warning reports the evidence."""
    X, Y = sp.symbols("X Y")
    m, g = sp.symbols("m g")
    cm = ToyModel("twice", [X, Y], sp.diag(m, m), [0, -m * g], [Y, 2 * Y], None, {m: 1.0, g: 9.81})
    with pytest.warns(RankDeficiencyWarning, match=r"rank deficient.*singular values \[2\.24, 0\], tol"):
        res = inverse_dynamics(cm, [0.0, 0.0], [1.0, 0.0], [0.0, 0.0])
    # minimum-norm solution of λ1 + 2 λ2 = -m g (Dᵀλ = Q)
    np.testing.assert_allclose(res.lam, [-9.81 / 5, -2 * 9.81 / 5], rtol=1e-12)
    assert int(res.rank) == 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(x=np.zeros(3)), r"x \(coordinates\) must have shape \(n,\) or \(N, n\) with n = 2"),
    (dict(xd=np.zeros((3, 2))), r"same number of samples"),
    (dict(u=[1.0]), r"has no inputs"),
    (dict(actuation=np.zeros((3, 1))), r"actuation matrix A_τ .* must have shape"),
    (dict(tol=-1.0), r"tol must be a positive number"),
    (dict(x=[np.nan, 0.0]), r"non-finite"),
])
def test_error_paths(kwargs, match):
    cm = pendulum()
    args = dict(x=np.array([0.0, -L]), xd=np.zeros(2), xdd=np.zeros(2))
    args.update(kwargs)
    with pytest.raises(ReferenceMotionError, match=match):
        inverse_dynamics(cm, **args)


def test_compiled_bicycle_steady_forward_multipliers():
    """Compiled benchmark bicycle: inverse dynamics of the steady forward motion (v = 5 m/s)
    reproduces the closed-form wheel loads Λ_Pz = -N_P, Λ_Qz = -N_Q (statics), others zero.

    Tolerance 1e-9 relative to the wheel loads (~500 N): exact kernels, one 11x8 SVD.
    """
    bb = pytest.importorskip("nhcontrol.models.benchmark_bicycle")
    cm = bb.model()
    x, xd, xdd = bb.steady_forward_state(5.0, np.linspace(0, 1, 4), dict(cm.parameters))
    res = inverse_dynamics(cm, x, xd, xdd)
    expected = bb.steady_forward_multipliers(cm)
    np.testing.assert_allclose(res.lam, np.broadcast_to(expected, res.lam.shape),
                               atol=1e-9 * np.max(np.abs(expected)))
    assert np.all(res.rank == 8)


def test_inverse_dynamics_of_a_simulated_bicycle_returns_its_multipliers():
    """Forward vs inverse dynamics: along a simulated bicycle motion (5 m/s, 0.05 rad lean,
    1 s) the samples (x, ẋ, ẍ) are dynamically admissible and Eq. (2.112) returns the
    multipliers the simulation solved for (Eq. (2.119)), to 1e-9 relative to the wheel loads.
    (Baumgarte terms modify only the constraint rows, not M ẍ + Dᵀ Λ = Q.)"""
    bb = pytest.importorskip("nhcontrol.models.benchmark_bicycle")
    from nhcontrol.simulate import consistent_initial_conditions, forward_dynamics
    cm = bb.model()
    x, xd, _ = bb.steady_forward_state(5.0, 0.0, dict(cm.parameters))
    x = x.copy()
    x[4] = 0.05
    x0, xd0 = consistent_initial_conditions(cm, x, xd, partition=bb.PARTITION_4_172)
    sim = forward_dynamics(cm, (0.0, 1.0), x0, xd0, t_eval=np.linspace(0, 1, 21))
    res = inverse_dynamics(cm, sim.x, sim.xd, sim.xdd, t=sim.t)
    assert res.admissible and res.max_residual < 1e-9
    np.testing.assert_allclose(res.lam, sim.lam, atol=1e-9 * np.max(np.abs(sim.lam)))
