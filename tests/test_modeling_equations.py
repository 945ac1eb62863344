"""Newton-Euler derivation (Eqs. (2.98)-(2.117)) against independent hand derivations.

All comparisons are exact (symbolic) or at round-off level: tolerances 1e-10 (relative to
O(1) quantities) leave room only for floating-point error of a few hundred operations.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from nhcontrol.modeling import MultibodySystem, euler_rotation, examples, rot_z


def _solve_index1(cm, x, xd, u=None):
    """ẍ, Λ from the index-1 form Eq. (2.119) without Baumgarte terms."""
    M, Q, D, Qd = cm.M(x, u), cm.Q(x, xd, u), cm.D(x, u), cm.Qd(x, xd, u)
    n, r = cm.n, D.shape[0]
    A = np.block([[M, D.T], [D, np.zeros((r, r))]])
    sol = np.linalg.solve(A, np.concatenate([Q, Qd]))
    return sol[:n], sol[n:]


def test_pendulum_matches_hand_derivation_symbolically():
    """M = diag(m, m, m L²/12), Q = (0, -m g, 0), Qd = -(L/2 sinθ θ̇², -L/2 cosθ θ̇²) (exact)."""
    mb = examples.pendulum()
    x, y, th = mb.coordinates
    _, _, thd = mb.velocities
    L, m, g = mb.parameters
    eom = mb.equations()
    assert sp.simplify(eom.M - sp.diag(m, m, m * L**2 / 12)) == sp.zeros(3, 3)
    assert sp.simplify(eom.Q - sp.Matrix([0, -m * g, 0])) == sp.zeros(3, 1)
    assert sp.simplify(eom.D - sp.Matrix([[1, 0, -L / 2 * sp.cos(th)], [0, 1, -L / 2 * sp.sin(th)]])) == sp.zeros(2, 3)
    ref_Qd = -sp.Matrix([L / 2 * sp.sin(th) * thd**2, -L / 2 * sp.cos(th) * thd**2])
    assert sp.simplify(eom.Qd - ref_Qd) == sp.zeros(2, 1)


def test_pendulum_dynamics_is_the_physical_pendulum(tmp_path):
    """θ̈ = -(3 g / 2 L) sin θ for a uniform bar pinned at its end (to 1e-12)."""
    cm = examples.pendulum().compile(cache_dir=tmp_path)
    L, m, g = (cm.parameters[k] for k in ("L", "m", "g"))
    for th, thd in [(0.3, 0.0), (-1.1, 2.0), (2.5, -0.7)]:
        x = np.array([L / 2 * np.sin(th), -L / 2 * np.cos(th), th])
        xd = np.array([L / 2 * np.cos(th) * thd, L / 2 * np.sin(th) * thd, thd])
        xdd, lam = _solve_index1(cm, x, xd)
        assert xdd[2] == pytest.approx(-1.5 * g / L * np.sin(th), rel=1e-12, abs=1e-12)
        # reaction at the pin: -Λ are the constraint forces (Sect. 2.3.2); total vertical balance
        # m ÿ = -m g - λ_y
        assert m * xdd[1] == pytest.approx(-m * g - lam[1], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seq", ["zxz", "zyx", "xyz"])
def test_free_rigid_body_follows_euler_equations(seq, tmp_path):
    """Free body: r̈ = 0 and Ī ω̄̇ + ω̄ × Ī ω̄ = 0 (Euler's equations, Eq. (2.93)) to 1e-10.

    ω̄ and its derivatives are taken from ``body_angular_velocity`` (tree expressions,
    lambdified), independent of the graph used by the compiled kernels.
    """
    mb = MultibodySystem(f"free_body_{seq}")
    q = mb.add_coordinates("x y z a b c")
    m, I1, I2, I3, I13 = mb.add_parameters(m=2.0, I1=0.4, I2=0.7, I3=0.9, I13=0.1)
    Ib = sp.Matrix([[I1, 0, I13], [0, I2, 0], [I13, 0, I3]])
    body = mb.add_body("b", mass=m, inertia=Ib, position=q[:3], orientation=euler_rotation(seq, q[3:]))
    cm = mb.compile(cache_dir=tmp_path)
    wbar = mb.body_angular_velocity(body)
    qs, qds = list(mb.coordinates), list(mb.velocities)
    subs = {s: mb.defaults[s.name] for s in mb.parameters}
    w_f = sp.lambdify([qs, qds], wbar.subs(subs), "numpy")
    Gb_f = sp.lambdify([qs, qds], wbar.jacobian(sp.Matrix(qds)).subs(subs), "numpy")
    dw_dx_f = sp.lambdify([qs, qds], wbar.jacobian(sp.Matrix(qs)).subs(subs), "numpy")
    Inum = np.array(Ib.subs(subs), dtype=float)
    rng = np.random.default_rng(5)
    for _ in range(3):
        x = rng.uniform(-1, 1, 6)
        x[4] = 0.8  # away from the singularity of the sequence
        xd = rng.uniform(-1, 1, 6)
        xdd, _ = _solve_index1(cm, x, xd)
        np.testing.assert_allclose(xdd[:3], 0, atol=1e-12)
        w = np.ravel(w_f(x, xd))
        wdot = np.ravel(np.asarray(Gb_f(x, xd), float) @ xdd + np.asarray(dw_dx_f(x, xd), float) @ xd)
        np.testing.assert_allclose(Inum @ wdot + np.cross(w, Inum @ w), 0, atol=1e-10)


def _V_check(mb, V, tmp_path, seed=0):
    """Q(x, 0) = -∂V/∂x for conservative loads."""
    cm = mb.compile(cache_dir=tmp_path)
    subs = {s: mb.defaults[s.name] for s in mb.parameters}
    grad = sp.lambdify([list(mb.coordinates), list(mb.inputs)],
                       sp.Matrix([V]).jacobian(sp.Matrix(mb.coordinates)).subs(subs), "numpy")
    rng = np.random.default_rng(seed)
    for _ in range(3):
        x = rng.uniform(-1, 1, cm.n)
        u = rng.uniform(-0.5, 0.5, cm.ninputs)
        np.testing.assert_allclose(cm.Q(x, np.zeros(cm.n), u), -np.ravel(grad(x, u)), rtol=1e-10, atol=1e-10)
    return cm


def test_spring_and_gravity_are_conservative(tmp_path):
    """Spring to ground with rest length (sqrt path), spring between bodies (L0 = 0), gravity."""
    mb = MultibodySystem("springs")
    x, y, z, a, x2 = mb.add_coordinates("x y z a x2")
    k, k2, L0, m, g = mb.add_parameters(k=12.0, k2=3.0, L0=0.3, m=1.5, g=9.81)
    (u,) = (mb.add_inputs("u"),)
    R = rot_z(a)
    b1 = mb.add_body("b1", mass=m, inertia=sp.diag(0.1, 0.2, 0.3), position=[x, y, z], orientation=R)
    b2 = mb.add_body("b2", mass=2 * m, inertia=sp.diag(0.1, 0.1, 0.1), position=[x2, 0, 0])
    tip = sp.Matrix([x, y, z]) + R * sp.Matrix([0.4, 0.1, 0])
    anchor = sp.Matrix([u, 0.5, 2.0])
    mb.add_spring(None, anchor, b1, tip, k, L0)
    mb.add_spring(b1, tip, b2, [x2, 0, 0], k2)
    mb.add_gravity(g)
    d1 = tip - anchor
    d2 = sp.Matrix([x2, 0, 0]) - tip
    V = k / 2 * (sp.sqrt((d1.T * d1)[0]) - L0) ** 2 + k2 / 2 * (d2.T * d2)[0] + m * g * z
    _V_check(mb, V, tmp_path)


def test_force_torque_damper_virtual_power(tmp_path):
    """Qᵀẋ equals the power of the loads: F·v_P, T·ω and -c L̇² (to 1e-10)."""
    mb = MultibodySystem("power")
    x, y, z, a, b, c = mb.add_coordinates("x y z a b c")
    cdamp, = (mb.add_parameters(cd=0.8),)
    R = euler_rotation("zyx", (a, b, c))
    body = mb.add_body("b", mass=1.0, inertia=sp.diag(0.3, 0.4, 0.5), position=[x, y, z], orientation=R)
    P = sp.Matrix([x, y, z]) + R * sp.Matrix([0.2, -0.1, 0.3])
    F = sp.Matrix([1.0, -2.0, 0.5])
    T = sp.Matrix([0.3, 0.2, -0.4])
    mb.add_force(body, F, point=P)
    mb.add_torque(body, T)
    mb.add_damper(None, [0, 0, 1.0], body, P, cdamp)
    cm = mb.compile(cache_dir=tmp_path)
    qs, qds = list(mb.coordinates), list(mb.velocities)
    vP = mb.velocity_of(P)
    w = mb.angular_velocity(body)
    d = P - sp.Matrix([0, 0, 1.0])
    Ldot = (d.T * vP)[0] / sp.sqrt((d.T * d)[0])
    power = (F.T * vP)[0] + (T.T * w)[0] - cdamp * Ldot**2
    power = power.subs({cdamp: 0.8})
    pf = sp.lambdify([qs, qds], power, "numpy")
    # point_velocity of a body-fixed point equals the time derivative of its position
    vdiff = sp.lambdify([qs, qds], mb.point_velocity(body, P) - vP, "numpy")
    rng = np.random.default_rng(2)
    for _ in range(3):
        xv, xdv = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)
        np.testing.assert_allclose(np.ravel(vdiff(xv, xdv)), 0, atol=1e-12)
    # Qa alone: same model without loads gives Qv; the difference is Qa
    mb0 = MultibodySystem("power0")
    q0 = mb0.add_coordinates("x y z a b c")
    mb0.add_body("b", mass=1.0, inertia=sp.diag(0.3, 0.4, 0.5), position=q0[:3],
                 orientation=euler_rotation("zyx", q0[3:]))
    cm0 = mb0.compile(cache_dir=tmp_path)
    for _ in range(3):
        xv, xdv = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)
        Qa = cm.Q(xv, xdv) - cm0.Q(xv, xdv)
        assert Qa @ xdv == pytest.approx(float(pf(xv, xdv)), rel=1e-10, abs=1e-10)


def test_kinetic_energy_rate_equals_qv_power(tmp_path):
    """Free body without loads: the kinetic energy is conserved,
    ẋᵀ M ẍ + ½ ẋᵀ Ṁ ẋ = 0 with ẍ = M⁻¹ Qv and Ṁ ẋ = ∂(M ẋ)/∂x ẋ (to 1e-10)."""
    mb = examples.rolling_disc()
    # drop constraints and gravity: a free disc
    free = MultibodySystem("free_disc")
    q = free.add_coordinates(" ".join(s.name for s in mb.coordinates))
    r, m = free.add_parameters(r=0.3, m=2.0)
    free.add_body("disc", mass=m, inertia=sp.diag(m * r**2 / 4, m * r**2 / 2, m * r**2 / 4),
                  position=q[:3], orientation=euler_rotation("zxy", q[3:]))
    cm = free.compile(cache_dir=tmp_path)
    rng = np.random.default_rng(9)
    for _ in range(3):
        x, xd = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)
        xdd = np.linalg.solve(cm.M(x), cm.Q(x, xd))
        Mdot = cm.dMa_dx(x, xd) @ xd  # Ṁ ẋ = ∂(M ẋ)/∂x ẋ
        assert xd @ cm.M(x) @ xdd + 0.5 * xd @ Mdot == pytest.approx(0.0, abs=1e-10)


def test_quasi_static_inputs_in_kinematics(tmp_path):
    """Inputs in the pivot position enter C(x, u) but not the velocities (Sect. 8.1)."""
    mb = examples.pendulum(with_inputs=True)
    eom = mb.equations()
    u_piv, tau = mb.inputs
    assert u_piv in eom.C.free_symbols
    assert not (set(mb.inputs) & eom.D.free_symbols)
    cm = mb.compile(cache_dir=tmp_path)
    x = np.array([0.1, -0.5, 0.3])
    np.testing.assert_allclose(cm.dC_du(x, [0.2, 0.0]), [[-1.0, 0.0], [0.0, 0.0]], atol=1e-15)
    # the torque input enters Q linearly: ∂Q_theta/∂tau = 1
    assert cm.dQ_du(x, np.zeros(3), [0.2, 0.7])[2, 1] == pytest.approx(1.0, abs=1e-14)


def test_model_hash_is_canonical():
    a, b = examples.sleigh(), examples.sleigh()
    assert a.model_hash() == b.model_hash()
    c = examples.sleigh()
    c.add_parameters(extra=1.0)
    assert c.model_hash() != a.model_hash()
