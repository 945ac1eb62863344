"""Discrete-time ball-plate system (the derivations standing for thesis Sects. 8.2-8.3).

``docs/theory/inputs.md`` Sect. 5 derives: the zero-order-hold discretization keeps the
uncontrollable spin direction ``w`` of Eq. (8.74) (``wᵀ A_k = wᵀ``, ``wᵀ B_k = 0``), so the
discrete reachability Gramian has rank 7 of 8 with kernel ``w`` while the 7-state controllable
formulation is reachable; and the finite-horizon Riccati recursion of the 8-state system has
converging gains but a cost-to-go that grows *linearly* with the horizon along ``w`` (the spin
error can never be removed, so it costs the same every period), while the 7-state cost-to-go
converges. These tests check each
statement on the ball-plate model (φ0 = 5°, 125 samples per period, weights of the reproduction).
"""

from __future__ import annotations

import numpy as np
import pytest

from nhcontrol.analysis import gramian
from nhcontrol.design import finite_horizon_lqr, window
from nhcontrol.models import ball_plate as bp
from nhcontrol.reproduce import ball_plate_ltv as bpl
from nhcontrol.reproduce.ball_plate import Settings
from nhcontrol.systems import discretize

STEPS = 125  # samples per period (the reproduction's default)


@pytest.fixture(scope="module")
def setup():
    cm = bp.model()
    ref = bp.circular_motion(cm, 5.0)
    mo = bp.motion_from_reference(cm, ref)
    dt = mo.period / STEPS
    d8 = discretize(bpl.ltv_system(cm, ref, method="closed_form"), dt, steps=STEPS)
    d7 = discretize(bpl.controllable_formulation(cm, ref, method="closed_form"), dt,
                    steps=STEPS)
    red = bp.spin_reduction(cm, ref)
    st = Settings()
    Q = np.diag([st.q_angle] * 3 + [st.q_rate] * 3 + [st.q_contact] * 2)
    R = st.r_input * np.eye(2)
    return dict(d8=d8, d7=d7, w=np.asarray(red.w), Q=Q, R=R)


def test_zoh_keeps_the_spin_direction(setup):
    """``wᵀ A_k = wᵀ`` and ``wᵀ B_k = 0`` for every sample of one period (1e-12 relative to
    ``|w|``, ``|B_k|``): ``wᵀ Φ(t, τ) = wᵀ`` because ``wᵀ A(t) = 0``."""
    d, w = setup["d8"], setup["w"]
    Ad, Bd = window(d, 0, STEPS)
    assert Ad.shape == (STEPS, 8, 8)
    assert np.max(np.abs(w @ Ad - w)) <= 1e-12 * np.linalg.norm(w)
    assert np.max(np.abs(np.einsum("i,kij->kj", w, Bd))) <= 1e-12 * np.max(np.abs(Bd))


def test_discrete_gramian_rank_7_of_8_kernel_w_and_reduced_full(setup):
    """Discrete reachability Gramian over one period: 8-state rank 7 (σ8/σ1 < 1e-14, σ7/σ1 >
    1e-5, as in the continuous Gramian (8.85)), kernel parallel to ``w`` (|cos| > 1 - 1e-9);
    7-state controllable formulation rank 7 (σ7/σ1 > 1e-5)."""
    g8 = gramian(setup["d8"])
    s = g8.singular_values
    assert g8.rank == 7
    assert s[-1] / s[0] < 1e-14 and s[-2] / s[0] > 1e-5
    _, _, vt = np.linalg.svd(np.asarray(g8.W))
    w = setup["w"] / np.linalg.norm(setup["w"])
    assert abs(vt[-1] @ w) > 1 - 1e-9
    g7 = gramian(setup["d7"])
    assert g7.rank == 7 and g7.singular_values[-1] / g7.singular_values[0] > 1e-5


def test_riccati_gains_converge_cost_grows_linearly_along_spin(setup):
    """Finite-horizon LQR (Qf = Q) over 1..7 periods, values at the same phase.

    8-state system (8.74): the per-period increment of ``wᵀ P_0 w`` tends to a positive
    constant (≈ 2.573e5 per period): its last change is below 1e-3 of the increment and below
    1e-2 of the first change (measured 2.2e-4 and 2.5e-3), i.e. the cost-to-go grows linearly
    and never converges (each period adds more than the whole first period's value / 2).
    The gain differences per period fall at least 2.5x per period (measured ≈ 3.4x) and the
    last is < 1e-3 of ``|K|`` (measured 3.8e-5): the gains converge although ``P`` does not.
    7-state formulation: ``P`` itself converges (last per-period change < 1e-4 relative;
    measured 3e-7, factor ≈ 11 per period)."""
    d, w, Q, R = setup["d8"], setup["w"], setup["Q"], setup["R"]
    M = 7
    Ad, Bd = window(d, 0, M * STEPS)
    res = finite_horizon_lqr((Ad, Bd), Q, R, Q)
    K, P = np.asarray(res.K), np.asarray(res.P)
    left = [M * STEPS - j * STEPS for j in range(1, M + 1)]   # index with j periods to go
    p = np.array([w @ P[i] @ w for i in left])
    inc = np.diff(p)
    change = np.abs(np.diff(inc))
    assert np.all(inc > 0.5 * inc[-1]) and inc[-1] > 0.5 * p[0]
    assert change[-1] <= 1e-3 * inc[-1] and change[-1] <= 1e-2 * change[0]
    dk = np.array([np.max(np.abs(K[a] - K[b])) for a, b in zip(left[:-1], left[1:])])
    assert np.all(dk[1:] <= dk[:-1] / 2.5) and dk[-1] <= 1e-3 * np.max(np.abs(K[0]))
    S = np.delete(np.eye(8), bp.LTV_STATES.index("psi_d"), axis=0)
    Q7 = S @ Q @ S.T
    A7, B7 = window(setup["d7"], 0, M * STEPS)
    P7 = np.asarray(finite_horizon_lqr((A7, B7), Q7, R, Q7).P)
    assert np.max(np.abs(P7[left[-1]] - P7[left[-2]])) <= 1e-4 * np.max(np.abs(P7[0]))
