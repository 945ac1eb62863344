"""Forward simulation of the bicycle benchmark (nhcontrol.simulate, index-1 DAE Eq. (2.119)).

At 5 m/s the benchmark is self-stable (Meijaard et al. 2007: 4.29 < v < 6.02 m/s), so a
small lean perturbation decays; below the weave speed (3 m/s) it grows. Checks:

* the initial condition is made consistent with ``consistent_initial_conditions``
  (Newton on C for x_d = [z_b, theta_b, xi_R, xi_F], D xd = 0 for the dependent velocities);
* the constraint drift |C| and |D xd| stays below 1e-8 over 5 s (Baumgarte (5, 5),
  rtol 1e-10; measured ~1e-12 and ~4e-11);
* the lean decays (|phi_b| over the last second below 0.4 phi_0; the slowest benchmark
  eigenvalue -0.3229 gives exp(-0.3229 * 4) = 0.27);
* the total energy is conserved (relative 1e-8);
* the nonlinear response agrees with the linear one exp(A t) z_0 (A from central
  differences, as in test_models_bicycle.py): the difference is below 5e-3 phi_0, and since
  the lateral symmetry (phi, delta) -> (-phi, -delta) removes the even-order terms it is
  O(phi_0^3): halving phi_0 divides it by about eight (measured 8.0; accepted 6 to 10).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm

from _helpers import bicycle_lean_steer_matrix
from nhcontrol import simulate
from nhcontrol.models import benchmark_bicycle as bb

IX = {name: i for i, name in enumerate(bb.COORDINATES)}
PART = bb.PARTITION_4_172


@pytest.fixture(scope="module")
def cm():
    return bb.model()


def initial_state(cm, v, phi0):
    x, xd, _ = bb.steady_forward_state(v, 0.0, bb.PARAMETERS)
    x[IX["phi_b"]] = phi0
    ic = simulate.consistent_initial_conditions(cm, x, xd, independent=PART["independent"],
                                                dependent=PART["dependent"])
    return ic


def simulate_lean(cm, v, phi0, tf=5.0):
    ic = initial_state(cm, v, phi0)
    return simulate.forward_dynamics(cm, (0.0, tf), ic.x, ic.xd, t_eval=np.linspace(0.0, tf, 251))


lean_steer_matrix = bicycle_lean_steer_matrix  # tests/_helpers.py


def test_initial_condition_is_consistent(cm):
    ic = initial_state(cm, 5.0, 0.01)
    assert ic.holonomic_residual < 1e-14 and ic.velocity_residual < 1e-14
    assert ic.x[IX["phi_b"]] == 0.01 and ic.xd[IX["x_b"]] == 5.0
    assert ic.x[IX["z_b"]] < bb.PARAMETERS["z_B"]   # leaning lowers the frame


def test_self_stable_at_5_m_s(cm):
    phi0 = 0.01
    res = simulate_lean(cm, 5.0, phi0)
    assert res.holonomic_drift.max() < 1e-8
    assert res.velocity_drift.max() < 1e-8
    phi = res.x[:, IX["phi_b"]]
    assert np.max(np.abs(phi[res.t >= 4.0])) < 0.4 * phi0


def test_energy_is_conserved(cm):
    """Ideal constraints do no work: T + V = 1/2 xdᵀ M xd + g Σ m_i z_Gi is constant (rel. 1e-8)."""
    import sympy as sp

    mb = bb.build()
    subs = {s: mb.defaults[s.name] for s in mb.parameters}
    height = sum((b.mass * b.position[2] for b in mb.bodies), sp.S.Zero) * sp.Symbol("g")
    V = sp.lambdify([mb.coordinates], height.subs(subs))
    res = simulate_lean(cm, 5.0, 0.05)
    E = np.array([0.5 * xd @ cm.M(x) @ xd + V(x) for x, xd in zip(res.x, res.xd)])
    assert np.max(np.abs(E - E[0])) < 1e-8 * abs(E[0])


def test_unstable_below_weave_speed(cm):
    phi0 = 0.01
    res = simulate_lean(cm, 3.0, phi0, tf=4.0)
    assert res.holonomic_drift.max() < 1e-8
    assert np.max(np.abs(res.x[:, IX["phi_b"]])) > 2.0 * phi0


def test_nonlinear_response_matches_linear_to_third_order(cm):
    A = lean_steer_matrix(cm, 5.0)
    diffs = []
    for phi0 in (0.01, 0.005):
        res = simulate_lean(cm, 5.0, phi0)
        lin = np.array([expm(A * t) @ np.array([phi0, 0.0, 0.0, 0.0]) for t in res.t])
        d = max(np.max(np.abs(lin[:, 0] - res.x[:, IX["phi_b"]])),
                np.max(np.abs(lin[:, 1] - res.x[:, IX["delta"]])))
        assert d < 5e-3 * phi0
        diffs.append(d)
    # lateral symmetry (phi, delta) -> (-phi, -delta) kills the even orders: error ~ phi_0^3
    assert 6.0 < diffs[0] / diffs[1] < 10.0
