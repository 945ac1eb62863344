"""The third procedure with first-order states (Sect. 7.2) for moving references and l > 0.

Toy: a Chaplygin sleigh (n = 3, m = 0, l = 1, blade at ``a`` from G) pushed along its body X
axis by a DC motor, F = k_t i - c v with the forward speed v = cos(psi) xd + sin(psi) yd, a
yaw torque tau, and the motor current as first-order state,
L_m di/dt = V - R i - k_e v. Inputs [i, V, tau]; state of the Jacobian
[x, psi, x_d, psi_d, y, i] (size 2n - 2m - l + r = 6, l = 1 spurious eigenvalue).

Reference along a trajectory (closed form): yaw psi = psi_a + w t, forward speed v = v0 + b t,
lateral speed of G -a w (the blade constraint), so
x = v sin(psi)/w + b cos(psi)/w^2 - a cos(psi), y = -v cos(psi)/w + b sin(psi)/w^2 - a sin(psi);
m (b + a w^2) = k_t i0 - c v gives the time-varying current i0(t), the yaw balance
tau0 = -a m v w, and V0 = L_m di0/dt + R i0 + k_e v.
"""

import math

import numpy as np
import pytest
import sympy as sp

from nhcontrol.compiled import compile_rates
from nhcontrol.linearization import (identify_spurious_first_order, linearize, linearize_first_order_system,
                                 reduced_ode_jacobian_fd, finite_difference_jacobian)
from nhcontrol.modeling import MultibodySystem, contacts, rot_z
from nhcontrol.reference import Reference

from _toy_models import SLEIGH as P, sleigh_motor

PART = dict(independent=["x", "psi"], admissible_dependent=["y"], dependent=[])
PART_PSI = dict(independent=["x", "y"], admissible_dependent=["psi"], dependent=[])


def _sleigh_motor():
    mb, _ = sleigh_motor("sleigh_motor")
    return mb


@pytest.fixture(scope="module")
def toy():
    mb = _sleigh_motor()
    return mb.compile(), compile_rates(mb)


def _trajectory(cm, psi_a=0.3, w=0.8, v0=1.0, b=0.4):
    """The accelerating turn of the module docstring as a Reference (multipliers by inverse
    dynamics, which also checks that the motion is one of the model)."""
    t = sp.Symbol("t")
    m, a, kt, ke, R, Lm, c = (P[k] for k in ("m", "a", "kt", "ke", "R", "Lm", "c"))
    psi, v = psi_a + w * t, v0 + b * t
    X = sp.Matrix([v * sp.sin(psi) / w + b * sp.cos(psi) / w**2 - a * sp.cos(psi),
                   -v * sp.cos(psi) / w + b * sp.sin(psi) / w**2 - a * sp.sin(psi), psi])
    i0 = (m * (b + a * w**2) + c * v) / kt
    U = sp.Matrix([i0, Lm * sp.diff(i0, t) + R * i0 + ke * v, -a * m * v * w])
    f = [sp.lambdify(t, list(e)) for e in (X, X.diff(t), X.diff(t, 2), U, U.diff(t))]
    x, xd, xdd, u, ud = (lambda s, g=g: np.array(g(s), float) for g in f)
    return Reference.from_functions(cm, x, xd, xdd, u, ud=ud)     # ud: di0/dt = H, Eq. (7.19)


def _steady(cm, psi0=0.3, v=1.2):
    i0 = P["c"] * v / P["kt"]
    return Reference.constant_velocity(cm, [0.1, -0.2, psi0], [v * math.cos(psi0), v * math.sin(psi0), 0.0],
                                       u=[i0, P["R"] * i0 + P["ke"] * v, 0.0])


@pytest.mark.parametrize("part", [PART, PART_PSI], ids=["x_ad=y", "x_ad=psi"])
def test_moving_reference_matches_central_differences(toy, part):
    """Along the accelerating turn (xd0, xdd0 != 0, i0(t) varying) the 6x6 equals the central
    differences of the nonlinear reduced ODE [x_ai, xd_ai, x_ad, i] to 1e-7 (relative to ||A||),
    B too. With x_ad = psi the x_ad column enters every row, the current's included. The formula
    at rest (H_x T0, H_xd T0 for x_ai, xd_ai) misses the dependent-velocity sensitivity V0bb and
    is off by more than 1 % of ||A||."""
    cm, rk = toy
    ref = _trajectory(cm)
    n1 = len(part["independent"])
    for t in (0.0, 0.7):
        res = linearize_first_order_system(cm, rk, ref, part, t=t)
        names = part["independent"] + [q + "_d" for q in part["independent"]] + part["admissible_dependent"]
        assert res.A.shape == (6, 6) and res.states == tuple(names) + ("i",) and res.n_spurious == 1
        fd = reduced_ode_jacobian_fd(cm, ref, part, t, h=1e-5, rates=rk)
        assert fd.states == res.states and fd.J.shape == (6, 6) and fd.n_spurious == 1
        scale = np.linalg.norm(res.A)
        assert np.max(np.abs(res.A - fd.J)) < 1e-7 * scale
        np.testing.assert_allclose(res.B, fd.B, atol=1e-7 * np.linalg.norm(res.B))
        # the mechanical block is the third procedure's, with the z column its input matrix
        mech = linearize(cm, ref, part, t)
        np.testing.assert_array_equal(res.A[:5, :5], mech.A)
        np.testing.assert_array_equal(res.A[:5, 5], mech.B[:, 0])
        if part is PART_PSI:
            assert abs(res.A[5, 2 * n1]) > 0.1          # d(di/dt)/d(psi) through the back-emf
        u0 = ref.u(t)
        J = rk.jacobians(ref.x(t), ref.xd(t), u0[:1], u0[1:])
        at_rest = np.hstack([J.H_x @ res.T0, J.H_xd @ res.T0])
        assert np.max(np.abs(res.A[5, :2 * n1] - at_rest)) > 1e-2 * scale


def test_steady_motion_eigenvalues_and_the_spurious_one(toy):
    """Steady straight motion at psi0 = 0.3: the 6x6 has the non-zero eigenvalues of the full
    counterpart [x, xd, i] (7x7, central differences) to 1e-7; exactly l = 1 spurious eigenvalue
    (the y column decouples: 'decoupled', eig(J33) = 0)."""
    cm, rk = toy
    ref = _steady(cm)
    res = linearize_first_order_system(cm, rk, ref, PART)
    sp_id = res.spurious
    assert res.n_spurious == 1 and sp_id.method == "decoupled" and sp_id.exact
    assert sp_id.spurious.size == 1 and abs(sp_id.spurious[0]) < 1e-12
    full = finite_difference_jacobian(cm, ref, 0.0, h=1e-6, rates=rk)
    assert full.J.shape == (7, 7) and full.n_spurious == 2
    ev, ev_full = res.eigenvalues, np.linalg.eigvals(full.J)
    nz = ev[np.abs(ev) > 1e-6]
    assert nz.size == 3                       # yaw-rate mode and the (speed, current) pair
    for lam in nz:
        assert np.min(np.abs(ev_full - lam)) < 1e-7 * abs(lam)
    # closed form: (I_zz + m a^2) psi_dd = m a v psi_d -> lambda = m a v / (I_zz + m a^2)
    lam_yaw = P["m"] * P["a"] * 1.2 / (P["I_zz"] + P["m"] * P["a"] ** 2)
    assert np.min(np.abs(nz - lam_yaw)) < 1e-10 * abs(lam_yaw)
    # speed/current pair: m v_d = kt i - c v, Lm i_d = -R i - ke v
    pair = np.linalg.eigvals([[-P["c"] / P["m"], P["kt"] / P["m"]], [-P["ke"] / P["Lm"], -P["R"] / P["Lm"]]])
    for lam in pair:
        assert np.min(np.abs(nz - lam)) < 1e-10 * abs(lam)
    # the counterpart's zero cluster has 2(m + l) = 2 spurious zeros beyond the physical ones
    n_zero = int(np.sum(np.abs(ev_full) < 1e-4))
    assert n_zero == (ev.size - nz.size - res.n_spurious) + full.n_spurious
    # a steady spectrum does not depend on the partition; with x_ad = psi the structure is not
    # exact in this partition, the spurious one is one of the zeros
    other = linearize_first_order_system(cm, rk, ref, PART_PSI)
    np.testing.assert_allclose(np.sort_complex(other.eigenvalues), np.sort_complex(ev), atol=1e-12)
    assert other.spurious.method == "zero" and other.spurious.spurious.size == 1


def test_identify_spurious_first_order_structures():
    """The 'conserved' structure with a first-order state, and the fall-backs."""
    n1, l = 1, 1
    A = np.zeros((4, 4))                       # [q, q_d, q_ad, z]
    A[0, 1] = 1.0
    A[1] = [-2.0, -0.5, 0.3, 1.0]              # J23 != 0: not decoupled
    A[2, :3] = [0.8, -0.4, 2.0]                # J31 + J33 J32 = 0.8 - 0.8 = 0
    A[3] = [0.1, 0.2, 0.5, -3.0]
    ident = identify_spurious_first_order(A, n1, l)
    assert ident.method == "conserved" and ident.exact
    np.testing.assert_allclose(ident.spurious, [2.0])
    ev = np.linalg.eigvals(A)
    assert np.min(np.abs(ev - 2.0)) < 1e-10
    A[2, 0] = 0.5                              # breaks it: the nearest eigenvalue, not exact
    ident = identify_spurious_first_order(A, n1, l)
    assert ident.method == "nearest" and not ident.exact and ident.spurious.size == 1


def test_fourbar_at_rest_is_unchanged():
    """Regression: at rest with l = 0 the general rows reduce to H_x T0, H_xd T0 (V0bb = 0,
    V^h = T0): the four-bar's 6x6 is bit for bit the formula at rest, with its zero pattern."""
    from nhcontrol.models import hydraulic_fourbar as hf
    lin = hf.linearization()
    eq = hf.equilibrium(60.0)
    cm = hf.model()
    ref = Reference.equilibrium(cm, eq.x, u=eq.p)
    jac = hf.circuit_jacobians(eq).as_kwargs()
    mech = linearize(cm, ref, hf.PARTITION)
    coords = list(cm.coordinates)
    ai = [coords.index(c) for c in hf.PARTITION["independent"]]
    dd = [i for i in range(cm.n) if i not in ai]
    D = np.asarray(cm.D(eq.x, u=eq.p))
    T0 = np.zeros((cm.n, 1))
    T0[ai] = 1.0
    T0[dd] = -np.linalg.solve(D[:, dd], D[:, ai])
    A = np.zeros((6, 6))
    A[:2, :2], A[:2, 2:5] = mech.A, mech.B
    A[2:5, :1], A[2:5, 1:2] = np.asarray(jac["H_x"]) @ T0, np.asarray(jac["H_xd"]) @ T0
    A[2:5, 2:5], A[2:5, 5:] = jac["H_z"], jac["H_w"]
    A[5:, 5:] = jac["W_w"]
    # the formula to round-off (the compiled one-point path inverts D_dd by its own LU, the
    # formula here uses LAPACK's solve: the same numbers to an ulp) with its exact zero pattern
    np.testing.assert_allclose(lin.A, A, rtol=1e-14, atol=0.0)
    np.testing.assert_array_equal(lin.A == 0.0, A == 0.0)
    np.testing.assert_allclose(lin.T0, T0, rtol=1e-14, atol=0.0)
    assert lin.A.shape == (6, 6) and lin.n_spurious == 0 and lin.spurious.method == "none"
    assert lin.states == hf.STATES


def test_circuit_beside_the_model_gives_the_same_rows(toy):
    """linearize_with_first_order_states (the model's only input is the current; its rate
    Jacobians passed in, the voltage as a state w with dV/dt = V_ref) along an accelerating
    straight run at psi0 = 0.3 (l = 1, xd0, xdd0 != 0, i0(t) varying) equals the rows of
    linearize_first_order_system for the model with the rate inside."""
    from nhcontrol.linearization import linearize_with_first_order_states
    cm, rk = toy
    mb = MultibodySystem("sleigh_current_input")
    x, y, psi = mb.add_coordinates("x y psi")
    m, I_zz, a, kt, c = mb.add_parameters(**{k: P[k] for k in ("m", "I_zz", "a", "kt", "c")})
    i = mb.add_inputs("i")
    Rz, G = rot_z(psi), sp.Matrix([x, y, 0])
    body = mb.add_body("sleigh", mass=m, inertia=sp.diag(I_zz / 2, I_zz / 2, I_zz), position=G,
                       orientation=Rz)
    contacts.knife_edge(mb, body, G + Rz * sp.Matrix([a, 0, 0]), (1, 0, 0), name="blade")
    v = sp.cos(psi) * mb.velocities[0] + sp.sin(psi) * mb.velocities[1]
    mb.add_force(body, (kt * i - c * v) * (Rz * sp.Matrix([1, 0, 0])))
    cm2 = mb.compile()
    psi0, v0, b = 0.3, 1.0, 0.4
    e = np.array([math.cos(psi0), math.sin(psi0), 0.0])
    i0 = lambda t: (P["m"] * b + P["c"] * (v0 + b * t)) / P["kt"]   # noqa: E731
    V0 = lambda t: P["Lm"] * P["c"] * b / P["kt"] + P["R"] * i0(t) + P["ke"] * (v0 + b * t)  # noqa: E731
    motion = dict(x=lambda t: (v0 * t + b * t * t / 2) * e + [0, 0, psi0], xd=lambda t: (v0 + b * t) * e,
                  xdd=lambda t: b * e)
    di0 = P["c"] * b / P["kt"]
    ref1 = Reference.from_functions(cm, **motion, u=lambda t: np.array([i0(t), V0(t), 0.0]),
                                    ud=[di0, P["R"] * di0 + P["ke"] * b, 0.0])
    ref2 = Reference.from_functions(cm2, **motion, u=lambda t: np.array([i0(t)]))
    t = 0.9
    inside = linearize_first_order_system(cm, rk, ref1, PART, t=t)
    J = rk.jacobians(ref1.x(t), ref1.xd(t), [i0(t)], [V0(t), 0.0])
    beside = linearize_with_first_order_states(
        cm2, ref2, PART, H_x=J.H_x, H_xd=J.H_xd, H_z=J.H_z, H_w=J.H_u[:, :1], W_w=[[0.0]],
        W_r=[[1.0]], z_names=["i"], w_names=["V"], r_names=["V_ref"], t=t)
    assert beside.A.shape == (7, 7) and beside.states == inside.states + ("V",)
    assert beside.n_spurious == 1 and beside.t == t
    np.testing.assert_allclose(beside.A[:6, :6], inside.A, rtol=1e-12, atol=1e-12 * np.linalg.norm(inside.A))
    np.testing.assert_allclose(beside.A[:6, 6], inside.B[:, 0], rtol=1e-12)
    assert abs(inside.A[5, 1]) > 1.0       # the psi column of di/dt (back-emf of the moving sleigh)
    fd = reduced_ode_jacobian_fd(cm, ref1, PART, t, h=1e-5, rates=rk)
    assert np.max(np.abs(inside.A - fd.J)) < 1e-7 * np.linalg.norm(inside.A)
    from nhcontrol._util.errors import LinearSystemError
    with pytest.raises(LinearSystemError, match="one time"):
        linearize_with_first_order_states(
            cm2, ref2, PART, H_x=J.H_x, H_xd=J.H_xd, H_z=J.H_z, H_w=J.H_u[:, :1], W_w=[[0.0]],
            W_r=[[1.0]], z_names=["i"], w_names=["V"], r_names=["V_ref"], t=[0.1, 0.2])


def test_trajectory_in_one_call(toy):
    """An array of times gives the stacked Jacobians of the per-time calls (the mechanics from
    the stacked kernel path, equal to round-off); spurious eigenvalues are identified per time."""
    from nhcontrol._util.errors import LinearSystemError
    cm, rk = toy
    ref = _trajectory(cm)
    ts = np.array([0.0, 0.35, 0.7])
    res = linearize_first_order_system(cm, rk, ref, PART_PSI, t=ts)
    assert res.A.shape == (3, 6, 6) and res.B.shape == (3, 6, 2) and res.T0.shape == (3, 3, 2)
    assert res.eigenvalues.shape == (3, 6) and np.array_equal(res.t, ts)
    for j, t in enumerate(ts):
        one = linearize_first_order_system(cm, rk, ref, PART_PSI, t=t)
        scale = np.linalg.norm(one.A)
        np.testing.assert_allclose(res.A[j], one.A, rtol=1e-12, atol=1e-13 * scale)
        np.testing.assert_allclose(res.B[j], one.B, rtol=1e-12, atol=1e-13 * np.linalg.norm(one.B))
        np.testing.assert_allclose(res.T0[j], one.T0, rtol=1e-12, atol=1e-14)
    with pytest.raises(LinearSystemError, match="one time"):
        res.spurious
    with pytest.raises(LinearSystemError, match="t must"):
        linearize_first_order_system(cm, rk, ref, PART_PSI, t="now")


@pytest.mark.slow
def test_linear_time_varying_response_along_the_trajectory(toy):
    """The nonlinear sleigh with its motor (forward_dynamics_first_order, inputs V0(t), tau0(t) of
    the reference) started off the accelerating turn, against dS/dt = A(t) dS with the exact A(t):
    every component's difference falls like eps^2 (halving eps divides it by 4 +- 12 %), so A(t)
    is the exact first-order model along the time-varying reference (~9 s)."""
    from scipy.integrate import solve_ivp
    from nhcontrol.simulate import forward_dynamics_first_order
    cm, rk = toy
    ref = _trajectory(cm)
    T = np.linspace(0.0, 1.0, 51)

    def S_ref(t):
        x, xd, u = ref.x(t), ref.xd(t), ref.u(t)
        return np.array([x[0], x[2], xd[0], xd[2], x[1], u[0]])

    diffs = []
    for eps in (2e-2, 1e-2):
        dS0 = eps * np.array([0.0, 1.0, 0.5, -1.0, 0.0, 2.0])       # [x, psi, xd, psid, y, i]
        S0 = S_ref(0.0) + dS0
        yd = (math.sin(S0[1]) * S0[2] - P["a"] * S0[3]) / math.cos(S0[1])   # blade constraint
        sim = forward_dynamics_first_order(cm, (0.0, 1.0), [S0[0], S0[4], S0[1]], [S0[2], yd, S0[3]],
                                           [S0[5]], rates=rk, r=lambda t, *args: ref.u(t)[1:],
                                           t_eval=T, rtol=1e-11)
        S_nl = np.column_stack([sim.x[:, 0], sim.x[:, 2], sim.xd[:, 0], sim.xd[:, 2], sim.x[:, 1], sim.z[:, 0]])
        lin = solve_ivp(lambda t, d: linearize_first_order_system(cm, rk, ref, PART, t=t, check=False).A @ d,
                        (0.0, 1.0), dS0, t_eval=T, rtol=1e-11, atol=1e-14)
        d = np.max(np.abs(S_nl - np.array([S_ref(t) for t in T]) - lin.y.T), axis=0)
        assert np.all(d < 0.05 * np.max(np.abs(lin.y), axis=1))
        diffs.append(d)
    ratio = diffs[0] / diffs[1]
    assert np.all((ratio > 3.5) & (ratio < 4.5)), ratio


def test_rate_equation_of_the_reference(toy):
    """A reference must satisfy the rate equation of its first-order states, ż0 = H(x0, ẋ0, z0,
    u0) (Eq. (7.19)), with ż0 its input rates ud in the entries of z. The accelerating turn with
    ud = dU/dt satisfies it to round-off (relative residual <= 1e-14 at 11 times); with ud left
    out (ż0 = 0 while di0/dt = c b / k_t = 0.24 A/s), a wrong di0/dt or a voltage 1 % off, it is
    refused by linearize_first_order_system and by Reference.from_functions(..., rates=), naming
    the state, the residual, its scale, the time and the fix; check=False skips both."""
    from nhcontrol._util.errors import ReferenceMotionError
    from nhcontrol.reference.admissibility import rate_residuals
    cm, rk = toy
    ref = _trajectory(cm)
    ts = np.linspace(0.0, 1.0, 11)
    x, xd, u, ud = ref.x(ts), ref.xd(ts), ref.u(ts), ref.ud(ts)
    H = np.array([rk.rates(x[j], xd[j], u[j, :1], u[j, 1:]) for j in range(ts.size)])
    jac = [rk.jacobians(x[j], xd[j], u[j, :1], u[j, 1:]) for j in range(ts.size)]
    res, scale = rate_residuals(ud[:, :1], H, x, xd, u[:, :1], u[:, 1:],
                                *(np.stack([getattr(J, k) for J in jac]) for k in ("H_x", "H_xd", "H_z", "H_u")))
    assert np.all(scale > 1.0) and np.max(np.abs(res) / scale) <= 1e-14
    assert linearize_first_order_system(cm, rk, ref, PART, t=ts).A.shape == (11, 6, 6)

    funcs = (ref.x, ref.xd, ref.xdd)
    no_ud = Reference.from_functions(cm, *funcs, ref.u)
    with pytest.raises(ReferenceMotionError,
                       match=r"passed to linearize_first_order_system does not satisfy the rate "
                             r"equation of the first-order state 'i' at t = 0\.5: .*is -2\.400e-01, "
                             r".* times its scale .*ż0 = 0, .*H = 0\.24 .*no input rates \(ud\).*"
                             r"\['i'\].*check=False"):
        linearize_first_order_system(cm, rk, no_ud, PART, t=[0.5, 0.7])
    assert linearize_first_order_system(cm, rk, no_ud, PART, t=0.5, check=False).A.shape == (6, 6)
    with pytest.raises(ReferenceMotionError, match=r"state 'i' at t = 0:.*no input rates"):
        Reference.from_functions(cm, *funcs, ref.u, rates=rk)
    wrong = lambda t: ref.ud(t) + np.array([0.1, 0.0, 0.0])           # noqa: E731
    with pytest.raises(ReferenceMotionError, match=r"'i' at t = 0:.*is 1\.000e-01.*"
                                                   r"Either ud is not the time derivative"):
        Reference.from_functions(cm, *funcs, ref.u, ud=wrong, rates=rk)
    v_off = lambda t: ref.u(t) * np.array([1.0, 1.01, 1.0])            # noqa: E731
    bad = Reference.from_functions(cm, *funcs, v_off, ud=ref.ud)      # mechanics unchanged
    with pytest.raises(ReferenceMotionError, match=r"'i' at t = 0\.3.*\['V', 'tau'\]"):
        linearize_first_order_system(cm, rk, bad, PART, t=0.3)
    Reference.from_functions(cm, *funcs, ref.u, ud=wrong, rates=rk, check=False)
    assert Reference.from_functions(cm, *funcs, ref.u, ud=ref.ud, rates=rk).has_input_rates


def test_sampled_reference_carries_the_rates_of_its_states(toy):
    """Reference.from_samples of the accelerating turn (21 samples): u̇0 is the derivative of the
    cubic input interpolant, so ż0 = H holds to the interpolation error (the check at the
    sampled tolerance 1e-3 passes, also with rates= when built); a held input (ż0 = 0) is
    refused."""
    from nhcontrol._util.errors import ReferenceMotionError
    cm, rk = toy
    ref = _trajectory(cm)
    t = np.linspace(0.0, 1.0, 21)
    args = (cm, t, ref.x(t), ref.xd(t), ref.xdd(t))
    smp = Reference.from_samples(*args, u=ref.u(t), rates=rk)
    assert smp.has_input_rates and abs(smp.ud(0.55)[0] - ref.ud(0.55)[0]) < 1e-6
    linearize_first_order_system(cm, rk, smp, PART, t=[0.25, 0.55])
    held = Reference.from_samples(*args, u=ref.u(t), u_interpolation="previous", check=False)
    with pytest.raises(ReferenceMotionError, match=r"state 'i' at t = 0\.25.*no input rates"):
        linearize_first_order_system(cm, rk, held, PART, t=[0.25, 0.55])
