"""Linear simulation: discrete LTV/LTI sequences and continuous LTV/LTI systems."""

from __future__ import annotations

import control
import numpy as np
import pytest
import scipy.linalg as sla

from nhcontrol._util.errors import LinearSystemError
from nhcontrol.simulate import simulate_discrete, simulate_ltv


class Seq:
    """DiscreteLTV-like duck (Ad (N, n, n), Bd (N, n, k), dt, t0)."""

    def __init__(self, Ad, Bd, dt, t0=0.0, states=None, inputs=None):
        self.Ad, self.Bd, self.dt, self.t0 = np.asarray(Ad), np.asarray(Bd), dt, t0
        if states is not None:
            self.states = states
        if inputs is not None:
            self.inputs = inputs


class Gains:
    """An LQR-result-like object with gains K (N, k, n)."""

    def __init__(self, K):
        self.K = K


def test_discrete_ltv_open_loop_matches_products():
    """x_N = Ad_{N-1} ... Ad_0 x0 + Σ (products) Bd_j u_j, computed independently (1e-13)."""
    rng = np.random.default_rng(0)
    N, n, k = 12, 3, 2
    Ad = rng.normal(scale=0.4, size=(N, n, n))
    Bd = rng.normal(size=(N, n, k))
    u = rng.normal(size=(N, k))
    x0 = rng.normal(size=n)
    res = simulate_discrete(Seq(Ad, Bd, 0.1, t0=2.0), x0, u=u)
    x = x0.copy()
    for j in range(N):
        x = Ad[j] @ x + Bd[j] @ u[j]
    np.testing.assert_allclose(res.x[-1], x, rtol=1e-13, atol=1e-13)
    assert res.t[0] == 2.0 and res.t[-1] == pytest.approx(2.0 + 1.2)
    assert res.x.shape == (N + 1, n) and res.u.shape == (N + 1, k)
    assert res.state_labels == ("x[0]", "x[1]", "x[2]") and res.states.shape == (n, N + 1)


def test_discrete_gain_object_and_callable_controller_agree():
    rng = np.random.default_rng(1)
    N, n, k = 8, 2, 1
    Ad = np.broadcast_to(np.array([[1.0, 0.1], [0.0, 1.0]]), (N, n, n))
    Bd = np.broadcast_to(np.array([[0.005], [0.1]]), (N, n, k))
    K = rng.normal(size=(N, k, n))
    a = simulate_discrete(Seq(Ad, Bd, 0.1), [1.0, 0.0], controller=Gains(K))
    b = simulate_discrete(Seq(Ad, Bd, 0.1), [1.0, 0.0],
                          controller=lambda t, x: -K[int(round(t / 0.1))] @ x)
    np.testing.assert_array_equal(a.x, b.x)


def test_lti_discrete_needs_steps_and_matches_matrix_power():
    A = np.array([[0.9, 0.2], [-0.1, 0.8]])
    B = np.zeros((2, 1))
    res = simulate_discrete(Seq(A, B, 0.5), [1.0, 2.0], steps=7)
    np.testing.assert_allclose(res.x[-1], np.linalg.matrix_power(A, 7) @ [1.0, 2.0], rtol=1e-14)
    with pytest.raises(LinearSystemError, match=r"needs steps="):
        simulate_discrete(Seq(A, B, 0.5), [1.0, 2.0])


def test_continuous_lti_matches_matrix_exponential():
    """ẋ = A x: x(t) = expm(A t) x0 to 1e-9 (DOP853, rtol 1e-10)."""
    A = np.array([[0.0, 1.0], [-4.0, -0.4]])
    sys = control.ss(A, np.zeros((2, 1)), np.eye(2), 0)
    te = np.linspace(0, 3, 7)
    res = simulate_ltv(sys, (0.0, 3.0), [1.0, 0.0], t_eval=te)
    exact = np.stack([sla.expm(A * t) @ [1.0, 0.0] for t in te])
    np.testing.assert_allclose(res.x, exact, atol=1e-9)


def test_continuous_ltv_scalar_closed_form():
    """ẋ = a(t) x + u with a = -1 + sin t, u = 0: x = x0 exp(-t + 1 - cos t) (1e-9)."""
    class LTV:
        def A(self, t):
            return np.array([[-1.0 + np.sin(t)]])

        def B(self, t):
            return np.array([[1.0]])
    te = np.linspace(0, 4, 9)
    res = simulate_ltv(LTV(), (0.0, 4.0), [2.0], t_eval=te)
    np.testing.assert_allclose(res.x[:, 0], 2.0 * np.exp(-te + 1 - np.cos(te)), rtol=1e-9)


def test_zoh_continuous_equals_exact_discretization():
    """Continuous LTI under a ZOH controller equals simulate_discrete with Ad = e^{Ah},
    Bd = ∫ e^{Aτ} dτ B (block exponential) at the sampling instants (1e-9)."""
    A = np.array([[0.0, 1.0], [2.0, -0.5]])
    B = np.array([[0.0], [1.0]])
    h = 0.05
    E = sla.expm(np.block([[A, B], [np.zeros((1, 3))]]) * h)
    Ad, Bd = E[:2, :2], E[:2, 2:]
    K = np.array([[6.0, 3.0]])
    ctrl = lambda t, x: -K @ x          # noqa: E731
    res = simulate_ltv(control.ss(A, B, np.eye(2), 0), (0.0, 2.0), [0.5, 0.0], controller=ctrl,
                       sample_time=h, t_eval=np.arange(41) * h)
    lin = simulate_discrete(Seq(np.broadcast_to(Ad, (40, 2, 2)), np.broadcast_to(Bd, (40, 2, 1)), h),
                            [0.5, 0.0], controller=ctrl)
    np.testing.assert_allclose(res.x, lin.x, atol=1e-9)


def test_to_response_labels():
    res = simulate_discrete(Seq(np.eye(2)[None], np.ones((1, 2, 1)), 0.1, states=["a", "b"],
                                inputs=["f"]), [0.0, 0.0], u=[1.0])
    resp = res.to_response()
    assert resp.state_labels == ["a", "b"] and resp.input_labels == ["f"]
    np.testing.assert_allclose(resp.states[:, -1], [1.0, 1.0])


@pytest.mark.parametrize("kwargs, match", [
    (dict(steps=5), r"steps must be in \[0, 3\]"),
    (dict(u=np.ones((3, 2))), r"u \(inputs\) must have shape \(steps, k\)"),
    (dict(u=[1.0], controller=lambda t, x: [0.0]), r"either open-loop inputs u or a controller"),
    (dict(controller=lambda t, x: [0.0, 1.0]), r"must return 1 finite inputs"),
    (dict(controller=Gains(np.ones((3, 2, 2)))), r"controller.K must have shape \(N, k, n\)"),
    (dict(controller=Gains(np.ones((2, 1, 2)))), r"controller.K has 2 gains, step 2 needs more"),
    (dict(controller=object()), r"controller must be callable"),
    (dict(x0=[1.0]), r"x0 must have shape \(2\)"),
])
def test_discrete_errors(kwargs, match):
    d = Seq(np.broadcast_to(np.eye(2), (3, 2, 2)), np.ones((3, 2, 1)), 0.1)
    x0 = kwargs.pop("x0", [0.0, 0.0])
    with pytest.raises(LinearSystemError, match=match):
        simulate_discrete(d, x0, **kwargs)


def test_ltv_errors():
    sys = control.ss([[0.0]], [[1.0]], [[1.0]], 0)
    with pytest.raises(LinearSystemError, match=r"tf > t0"):
        simulate_ltv(sys, (1.0, 0.0), [0.0])
    with pytest.raises(LinearSystemError, match=r"sample_time is the period of a discrete controller"):
        simulate_ltv(sys, (0.0, 1.0), [0.0], sample_time=0.1)
    with pytest.raises(LinearSystemError, match=r"sys must have A and B"):
        simulate_ltv(object(), (0.0, 1.0), [0.0])


def test_real_discrete_ltv_and_lqr_gains_on_the_nonlinear_plant():
    """systems.discretize + design.finite_horizon_lqr: the LQR result (gains K) drives both
    simulate_discrete and the nonlinear cart (ZOH, forward_dynamics); they agree at the
    sampling instants to 1e-9 (the cart is exactly a double integrator)."""
    systems = pytest.importorskip("nhcontrol.systems")
    design = pytest.importorskip("nhcontrol.design")
    from nhcontrol.simulate import forward_dynamics
    from test_simulate_toy_models import cart
    h, N = 0.1, 20
    sysc = control.ss([[0.0, 1.0], [0.0, 0.0]], [[0.0], [0.5]], np.eye(2), 0)   # m = 2
    dsys = systems.discretize(sysc, h, steps=N)
    lqr = design.finite_horizon_lqr(dsys, np.eye(2), np.eye(1), np.eye(2))
    lin = simulate_discrete(dsys, [1.0, 0.0], controller=lqr)

    def ctrl(t, x, xd):
        j = int(round(t / h))
        return -lqr.K[j] @ np.array([x[0], xd[0]])
    res = forward_dynamics(cart(), (0.0, N * h), [1.0, 0.0], [0.0, 0.0], controller=ctrl,
                           sample_time=h)
    sim = res.evaluate(lin.t)
    np.testing.assert_allclose(np.c_[sim.x[:, 0], sim.xd[:, 0]], lin.x, atol=1e-9)


def test_real_ltv_system_named_signals():
    """nhcontrol.systems.LTVSystem: ẋ = a(t) x with a = -1 + sin t (closed form, 1e-9) and its
    state/input names carried into the result."""
    systems = pytest.importorskip("nhcontrol.systems")
    sys = systems.LTVSystem(lambda t: np.array([[-1.0 + np.sin(t)]]), lambda t: np.array([[1.0]]),
                            states=["q"], inputs=["f"], t_range=(0.0, 4.0))
    te = np.linspace(0, 4, 9)
    res = simulate_ltv(sys, (0.0, 4.0), [2.0], t_eval=te)
    np.testing.assert_allclose(res.x[:, 0], 2.0 * np.exp(-te + 1 - np.cos(te)), rtol=1e-9)
    assert res.state_labels == ("q",) and res.input_labels == ("f",)
    assert res.states.shape == (1, 9) and res.inputs.shape == (1, 9) and res.time is res.t


def test_simulate_ltv_stops_at_breakpoints():
    """B(t) jumps at t = 1 (an input of the reference steps there): with breakpoints=[1] the
    integration stops there, reads B on each side only and the state is exact to round-off
    (x = t - 1 after the jump), also inside the hold intervals of a sampled controller."""
    from types import SimpleNamespace
    sys = SimpleNamespace(A=lambda t: np.zeros((1, 1)),
                          B=lambda t: np.array([[1.0 if t >= 1.0 else 0.0]]))
    T = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    res = simulate_ltv(sys, (0.0, 2.0), [0.0], u=[1.0], t_eval=T, breakpoints=[1.0, 5.0],
                       rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(res.x[:, 0], [0.0, 0.0, 0.0, 0.5, 1.0], atol=1e-13)
    held = simulate_ltv(sys, (0.0, 2.0), [0.0], controller=lambda t, x: np.array([1.0]),
                        sample_time=0.3, t_eval=T, breakpoints=[1.0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(held.x[:, 0], [0.0, 0.0, 0.0, 0.5, 1.0], atol=1e-13)
