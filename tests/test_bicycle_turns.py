"""Hands-free steady turns of the benchmark bicycle (Basu-Mandal et al. 2007): the capsize
bifurcation, the residuals of the steady-turn equations, and the stability from the constant
Jacobian against Floquet multipliers and nonlinear simulations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nhcontrol._util.errors import LinearSystemError, ModelError

MEIJAARD_CAPSIZE = 6.024262   # Meijaard et al. (2007), Table 2 (6.0243 to 4 decimals)


@pytest.fixture(scope="module")
def cm():
    from nhcontrol.models import benchmark_bicycle as bb
    return bb.model()


@pytest.fixture(scope="module")
def reversed_family(cm):
    from nhcontrol.models import bicycle_turns as bt
    _, rev = bt.bifurcation_speed(cm, steer=math.pi)
    return bt.continue_turns(cm, rev[1], rev[0], max_step=0.15, max_points=40)


def test_bifurcation_speed_is_the_capsize_speed(cm):
    from nhcontrol.models import bicycle_turns as bt
    v_c = bt.capsize_speed(cm)
    assert abs(v_c - MEIJAARD_CAPSIZE) < 1e-6
    v_b, turns = bt.bifurcation_speed(cm)
    assert abs(v_b - v_c) < 1e-6
    # the turns used lean right and turn right (yaw rate negative about the upward Z)
    assert turns[0].lean_deg > 0 and turns[0].Omega < 0 and turns[0].speed < v_c


def test_turn_residuals_and_reference_check(cm, reversed_family):
    from nhcontrol.models import bicycle_turns as bt
    assert max(t.residual for t in reversed_family) <= 1e-10
    t = reversed_family[len(reversed_family) // 2]
    rep = bt.turn_reference(cm, t).check(cm)          # inverse dynamics along one period
    assert rep.max_dynamics < 1e-8 and rep.max_holonomic < 1e-12
    # the residual function is what the continuation drives to zero
    r, J = bt.turn_residual(cm, np.concatenate([t.x0[[i for i, c in enumerate(t.coordinates) if c not in bt.CYCLIC]],
                                                [t.xd0[0], t.xd0[1], t.Omega, t.omega_F, t.omega_R], t.lam]), t.p)
    assert np.abs(r).max() <= 1e-10 and J.shape[0] == r.size


def test_residual_jacobian_against_finite_differences(cm, reversed_family):
    from nhcontrol.models import bicycle_turns as bt
    t = reversed_family[5]
    free = [i for i, c in enumerate(t.coordinates) if c not in bt.CYCLIC]
    y = np.concatenate([t.x0[free], [t.xd0[0], t.xd0[1], t.Omega, t.omega_F, t.omega_R], t.lam])
    _, J = bt.turn_residual(cm, y, t.p)
    Jfd = np.empty_like(J)
    for k in range(y.size):
        h = 1e-6 * max(1.0, abs(y[k]))
        yp, ym = y.copy(), y.copy()
        yp[k] += h
        ym[k] -= h
        Jfd[:, k] = (bt.turn_residual(cm, yp, t.p)[0] - bt.turn_residual(cm, ym, t.p)[0]) / (2 * h)
    assert np.abs(J - Jfd).max() < 1e-6 * max(1.0, np.abs(J).max())


REGRESSION_REVERSED_STABLE_SPEEDS = (4.4, 6.2)
"""Bracket [m/s] of the stable section of the handlebar-reversed family (nhcontrol's own earlier
output, docs/dev/claims.md); the checks beside it: unstable next to the bifurcation, the
family's zero eigenvalue below 1e-8."""


def test_reversed_family_has_a_stable_section(cm, reversed_family):
    from nhcontrol.analysis import turn_stability
    stab = [turn_stability(cm, t) for t in reversed_family]
    assert not stab[5].stable                      # near the bifurcation: unstable
    stable_v = [t.speed for t, s in zip(reversed_family, stab) if s.stable]
    lo, hi = REGRESSION_REVERSED_STABLE_SPEEDS
    assert stable_v and lo < min(stable_v) and max(stable_v) < hi
    assert all(s.family_zero < 1e-8 for s in stab)


def test_constant_jacobian_agrees_with_floquet(cm, reversed_family):
    from nhcontrol.analysis import turn_floquet, turn_stability
    t = next(t for t in reversed_family if turn_stability(cm, t).stable)
    f = turn_floquet(cm, t)
    assert f["agree"] and f["stable_floquet"]
    assert f["monodromy_rel_diff"] < 1e-9 and f["spectral_radius_rel_diff"] < 1e-8


def test_bad_arguments(cm, reversed_family):
    from nhcontrol.analysis import stability_boundary
    from nhcontrol.models import bicycle_turns as bt
    with pytest.raises(ModelError, match="fix must be one of"):
        bt.solve_steady_turn(cm, reversed_family[1], fix="speed")
    from nhcontrol._util.errors import SimulationInputError
    from nhcontrol.simulate import turn_simulation
    with pytest.raises(SimulationInputError, match="duration must be a positive"):
        turn_simulation(cm, reversed_family[1], duration=-1.0)
    with pytest.raises(LinearSystemError, match="same stability"):
        stability_boundary(cm, reversed_family[1], reversed_family[2])
    from nhcontrol._util.errors import SolverError
    start, prev = reversed_family[1], reversed_family[0]
    # a min_step of 0 would halve a failing step forever; a huge max_points is unbounded work
    with pytest.raises(SolverError, match=r"min_step=0\.0 must be a positive finite number"):
        bt.continue_turns(cm, start, prev, min_step=0.0)
    with pytest.raises(SolverError, match=r"min_step=0\.5 must not exceed step=0\.02"):
        bt.continue_turns(cm, start, prev, min_step=0.5)
    with pytest.raises(SolverError, match=r"max_points=2\.5 must be a positive integer"):
        bt.continue_turns(cm, start, prev, max_points=2.5)
    with pytest.raises(SolverError, match=r"max_speed=nan must be a positive finite"):
        bt.continue_turns(cm, start, prev, max_speed=float("nan"))
    with pytest.raises(SolverError, match=r"continue_turns\(max_points=100000000000\).*NHCONTROL_MAX_ITERATIONS"):
        bt.continue_turns(cm, start, prev, max_points=10**11)
    assert len(bt.continue_turns(cm, start, prev, max_points=2)) == 2


@pytest.mark.slow
def test_simulations_agree_with_linear_stability(cm, reversed_family):
    from nhcontrol.analysis import turn_stability
    from nhcontrol.simulate import turn_simulation
    stab = [turn_stability(cm, t) for t in reversed_family]
    stable = next(t for t, s in zip(reversed_family, stab) if s.stable and s.max_real < -0.05)
    s = turn_simulation(cm, stable)
    assert s["stays_within"] and not s["diverges"]
    from nhcontrol.models import bicycle_turns as bt
    _, fwd = bt.bifurcation_speed(cm)
    fam = bt.continue_turns(cm, fwd[1], fwd[0], max_step=0.2, max_points=40)
    unstable = next(t for t in fam if t.speed < 3.0)          # family (i): max Re(lambda) ~ 2 1/s
    assert turn_stability(cm, unstable).max_real > 0.5
    s = turn_simulation(cm, unstable)
    assert s["diverges"]


@pytest.mark.slow
def test_reproduce_bicycle_circular_quick(tmp_path):
    from nhcontrol.reproduce import bicycle_circular as bc
    res = bc.run(out=tmp_path, quick=True)
    for key in ("families", "capsize_bifurcation_speed", "max_residual", "simulation_checks", "stable_ranges"):
        assert key in res
    assert abs(res["capsize_bifurcation_speed"] - MEIJAARD_CAPSIZE) < 1e-6
    assert res["max_residual"] <= 1e-10
    assert set(res["families"]) == {"i_handlebar_forward", "ii_handlebar_reversed", "iii_pivoting"}
    for pts in res["families"].values():
        assert {"v", "lean_deg", "steer_deg", "radius_m", "stable", "max_real_eig"} <= set(pts[0])
    assert all(f["agree"] for f in res["floquet_checks"])
    assert len(res["stable_ranges"]["ii_handlebar_reversed"]) == 1
    assert not res["stable_ranges"]["i_handlebar_forward"]
    assert (tmp_path / "bicycle_circular_families.png").exists()


# nhcontrol's own output (the paper prints no digits for these): kept to notice change
REGRESSION_III_GAINED_V = 3.255273
REGRESSION_III_FOLD_V = 3.387883
REGRESSION_III_LOST_V = 3.386105


def test_stable_section_with_a_fold_is_a_set_of_turns(cm):
    """Family (iii) gains stability at 3.2553 m/s, folds in speed at 3.3879 m/s while still
    stable, and loses stability on the return branch at 3.3861 m/s: the section's speed range
    is the maximum over its turns (the fold), not its end speeds, and the fold is reported.
    Independent of the refinement: the fold turn is stable, and the family's turns on both of
    its sides are slower."""
    from nhcontrol.analysis import stable_ranges, turn_stability
    from nhcontrol.reproduce import bicycle_circular as bc

    fam = bc.families(cm, quick=True)["iii_pivoting"]
    sections = stable_ranges(cm, fam)
    assert len(sections) == 1
    (r,) = sections
    gained, lost = r["boundaries"]
    assert gained["kind"] == "stability gained" and lost["kind"] == "stability lost"
    assert abs(gained["v"] - REGRESSION_III_GAINED_V) < 2e-6
    assert abs(lost["v"] - REGRESSION_III_LOST_V) < 2e-6
    assert gained["crossing"] == "complex pair" and lost["crossing"] == "real"
    (fold,) = r["folds"]
    assert fold["kind"] == "maximum" and abs(fold["v"] - REGRESSION_III_FOLD_V) < 2e-6
    assert r["v_min"] == gained["v"] and r["v_max"] == fold["v"] > lost["v"]
    stab = [turn_stability(cm, t).stable for t in fam]
    inside = [t.speed for t, s in zip(fam, stab) if s]
    assert len(inside) == r["points"] and max(inside) <= r["v_max"] and min(inside) >= r["v_min"]
    k = int(np.argmax([t.speed if s else -np.inf for t, s in zip(fam, stab)]))
    assert fam[k - 1].speed < fold["v"] and fam[k + 1].speed < fold["v"]
    assert bc._section_text(r).startswith("v in [3.255273, 3.387883] m/s")


# nhcontrol's own output quoted in docs/theory/bicycle_turns.md (the paper prints no eigenvalues):
# (v [m/s], lean [deg], real eigenvalue, complex pair re, im, fast real eigenvalue) [1/s]
REGRESSION_III_EIGENVALUES = ((3.37, -27.500, (-0.335, -0.518, 3.250, -8.569)),
                              (3.3714, -27.507, (-0.324, -0.529, 3.253, -8.566)))


def test_family_iii_eigenvalues_quoted_in_the_docs(cm):
    """docs/theory/bicycle_turns.md: the stable turn of family (iii) at v = 3.37 m/s has the
    eigenvalues -0.335, -0.518 +- 3.250i, -8.569 (lean -27.500 deg); at v = 3.3714 m/s (the
    default run's simulation-check point, lean -27.507 deg) -0.324, -0.529 +- 3.253i, -8.566.
    Checked at the printed precision (3 decimals of 1/s)."""
    from nhcontrol.analysis.steady_turns import turn_stability
    from nhcontrol.models import bicycle_turns as bt

    piv = bt.pivot_turn(cm)
    half = bt.continue_turns(cm, piv, bt.nudge(piv, 0.01), max_step=0.2, max_speed=4.0,
                             stop_at_rest=False, max_rate=30.0)
    # omega_R < 0 half, past the fold in speed (the stable side): time-reversed, v >= 0
    guess = next(t for t in half if t.omega_R < 0 and t.lean_deg < -27.3 and abs(t.omega_R) < 11.24)
    guess = bt.time_reversed(guess)
    rho_R = 0.3                                                   # rear wheel radius (Table 4.1)
    for v, lean, eig in REGRESSION_III_EIGENVALUES:
        t = bt.solve_steady_turn(cm, guess, fix="omega_R", value=v / rho_R)
        assert t.speed == pytest.approx(v, abs=1e-9)
        assert round(t.lean_deg, 3) == lean
        st = turn_stability(cm, t)
        assert st.stable
        lam = st.eigenvalues
        real = sorted(x.real for x in lam if abs(x.imag) < 1e-9)
        pair = [x for x in lam if x.imag > 1e-9]
        assert [round(x, 3) for x in real] == [eig[3], eig[0]]
        assert len(pair) == 1 and (round(pair[0].real, 3), round(pair[0].imag, 3)) == eig[1:3]
        guess = t


def test_turn_of_radius_is_held_by_a_steer_torque(cm):
    """A steady turn of given speed and radius with the steer torque as an unknown constant:
    it solves the steady-turn equations, its reference passes inverse dynamics with that torque,
    and a hands-free turn of family (i) is found again with zero torque (independent check)."""
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.models import bicycle_turns as bt
    cmT = bb.model(inputs=("T_delta",))
    tr = bt.turn_of_radius(cmT, 5.0, 10.0)
    assert abs(tr.radius - 10.0) <= 1e-9 and abs(tr.speed - 5.0) <= 1e-12 and tr.residual <= 1e-10
    assert tr.Omega > 0 and tr.lean_deg < 0 and tr.steer_deg < 0     # left: lean and steer left
    # quoted in docs/theory/bicycle_turns.md (a torque out of the turn holds it)
    assert (round(tr.lean_deg, 1), round(tr.steer_deg, 2), round(float(tr.u[0]), 3)) == (-14.0, -5.94, 0.147)
    rep = bt.turn_reference(cmT, tr).check(cmT)
    assert rep.max_dynamics < 1e-8 and rep.max_holonomic < 1e-12
    # the exact Jacobian, input column included, against central differences
    free = [i for i, c in enumerate(tr.coordinates) if c not in bt.CYCLIC]
    y = np.concatenate([tr.x0[free], [tr.xd0[0], tr.xd0[1], tr.Omega, tr.omega_F, tr.omega_R], tr.lam, tr.u])
    r0, J = bt.turn_residual(cmT, y, tr.p)
    assert np.abs(r0).max() <= 1e-10
    Jfd = np.empty_like(J)
    for k in range(y.size):
        h = 1e-6 * max(1.0, abs(y[k]))
        yp, ym = y.copy(), y.copy()
        yp[k] += h
        ym[k] -= h
        Jfd[:, k] = (bt.turn_residual(cmT, yp, tr.p)[0] - bt.turn_residual(cmT, ym, tr.p)[0]) / (2 * h)
    assert np.abs(J - Jfd).max() < 1e-6 * max(1.0, np.abs(J).max()) and np.abs(J[:, -1]).max() > 1e-3
    _, fwd = bt.bifurcation_speed(cm)
    free = fwd[1]
    held = bt.turn_of_radius(cmT, free.speed, free.radius, left=free.Omega > 0)
    assert abs(held.u[0]) < 1e-8
    assert abs(held.lean_deg - free.lean_deg) < 1e-7 and abs(held.steer_deg - free.steer_deg) < 1e-7
    with pytest.raises(ModelError, match="one input"):
        bt.turn_of_radius(cm, 5.0, 10.0)
    with pytest.raises(ModelError, match="positive"):
        bt.turn_of_radius(cmT, 5.0, -1.0)
    with pytest.raises(ModelError, match="fix must be one of"):
        bt.solve_steady_turn(cmT, tr, fix="omega_R")       # a torque needs one more fixed unknown


def test_turn_of_radius_tends_to_the_linear_benchmark():
    """Reference: Meijaard et al. (2007)'s linear equations (their M, C1, K0, K2 as published) in
    a steady turn, ``(g K0 + v² K2) [φ, δ] = [0, T_δ]`` with the kinematic radius
    ``R = w / (δ cos λ)``: the nonlinear turn held by the steer torque agrees as ``R`` grows, the
    difference falling like ``1/R²`` (measured: torque 1e-3 relative at 200 m, 4e-5 at 1000 m)."""
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.models import bicycle_turns as bt
    from nhcontrol.reproduce import bicycle_benchmark as bm
    mats = bm.reference_data()["matrices"]
    cmT = bb.model(inputs=("T_delta",))
    v, g, w, lam = 5.0, 9.81, 1.02, math.pi / 10
    K = g * np.array(mats["K0"]) + v * v * np.array(mats["K2"])
    errs = []
    for R in (200.0, 1000.0):
        tr = bt.turn_of_radius(cmT, v, R)
        d = -w / (R * math.cos(lam))                     # Meijaard's steer, left turn
        phi = -K[0, 1] * d / K[0, 0]
        T = K[1, 0] * phi + K[1, 1] * d
        errs.append([abs(math.radians(tr.lean_deg) / phi - 1), abs(math.radians(tr.steer_deg) / d - 1),
                     abs(float(tr.u[0]) / T - 1)])
    assert max(errs[1]) < 5e-4
    assert errs[0][2] > 10 * errs[1][2]                  # second order in 1/R (25 for 5x)
