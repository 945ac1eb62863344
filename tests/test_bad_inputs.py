"""Bad inputs end in a clear error.

Each case of the catalogue asserts the error class and that the message names the culprit in
the user's names (the constraint, coordinate, argument or option) and, where there is one, the
value. Part 1: references that are not motions of their model (constraints, velocity and
acceleration levels, dynamics with the input forces at the reference inputs) are refused when
built and in ``linearize``. Part 5: wrong types and unconvertible values name the argument;
positive definiteness is relative to the weight's scale; the ball-plate reference near
φ0 = 90° warns. Models and parameters (part 2) have their own file,
tests/test_bad_inputs_models.py.
"""

from __future__ import annotations

import math
import warnings

import control as ct
import numpy as np
import pytest

from nhcontrol._util.errors import (ArgumentTypeError, ConditioningWarning, DesignError,
                                    LinearSystemError, PartitionError, ReferenceMotionError,
                                    SimulationInputError, TimeRangeError)
from nhcontrol.analysis import controllability
from nhcontrol.cli import main
from nhcontrol.design import LTVMPC, finite_horizon_lqr, lqr
from nhcontrol.linearization import Partition, linearize, linearize_with_first_order_states, \
    suggest_partition
from nhcontrol.models import ball_plate as bp
from nhcontrol.models import hydraulic_fourbar as hf
from nhcontrol.models import rolling_wheel as rw
from nhcontrol.models import sleigh as sl
from nhcontrol.simulate import forward_dynamics
from nhcontrol.reference import Reference, consistent_initial_conditions, inverse_dynamics
from nhcontrol.reference.admissibility import admissibility_report
from nhcontrol.reference._eval import ModelEvaluator
from nhcontrol.systems import LTVSystem, discretize

R_DISC, V = 0.3, 2.0


class Ctx:
    """Models and references shared by the cases (built once per module)."""

    def __init__(self) -> None:
        self.disc = rw.model_disc(r=R_DISC)
        self.sleigh = sl.model()
        good = rw.upright_rolling(self.disc, V)
        self.x0, self.xd0 = good.x(0.0), good.xd(0.0)
        self.xd_no_spin = self.xd0.copy()
        self.xd_no_spin[self.disc.coordinates.index("theta")] = 0.0
        self.low = self.x0.copy()
        self.low[self.disc.coordinates.index("z")] -= 0.05
        self.sleigh_ref = sl.straight_motion(self.sleigh, 1.0)
        self.ss = ct.ss([[0.0, 1.0], [0.0, 0.0]], [[0.0], [1.0]], np.eye(2), 0)
        self._hyd = None

    @property
    def hyd(self):
        if self._hyd is None:
            eq = hf.equilibrium(phi2_deg=60.0, p3=3.5e6)
            self._hyd = (hf.model(), eq)
        return self._hyd


@pytest.fixture(scope="module")
def ctx() -> Ctx:
    return Ctx()


def _unchecked(c: Ctx, cm, x0, xd0, **kw):
    return Reference.constant_velocity(cm, x0, xd0, check=False, **kw)


def _sleigh_later(c: Ctx):
    """Admissible at t = 0, the blade constraint broken from t = 0.5 on (ẏ grows)."""
    def x(t):
        return [t, 0.1 * max(t - 0.5, 0.0) ** 2, 0.0]

    def xd(t):
        return [1.0, 0.2 * max(t - 0.5, 0.0), 0.0]

    def xdd(t):
        return [0.0, 0.2 if t > 0.5 else 0.0, 0.0]
    return Reference.from_functions(c.sleigh, x, xd, xdd, t_range=(0.0, 2.0))


def _disc_rising(c: Ctx):
    """Admissible position and velocity at t = 0 but z̈ = 0.1: the acceleration level fails."""
    def f(t):
        x, xd, xdd = rw.upright_rolling_state(V, t, R_DISC)
        x, xd, xdd = x.copy(), xd.copy(), xdd.copy()
        x[2] += 0.05 * t * t
        xd[2] += 0.1 * t
        xdd[2] += 0.1
        return x, xd, xdd
    return Reference.from_functions(c.disc, lambda t: f(t)[0], lambda t: f(t)[1],
                                    lambda t: f(t)[2], t_range=(0.0, 1.0))


def _samples_no_spin(c: Ctx):
    t = np.linspace(0.0, 1.0, 11)
    x, xd, xdd = rw.upright_rolling_state(V, t, R_DISC)
    xd = xd.copy()
    xd[:, c.disc.coordinates.index("theta")] = 0.0
    return Reference.from_samples(c.disc, t, x, xd, np.zeros_like(xdd))


def _hydraulic_half_pressure(c: Ctx, *, linearize_it: bool):
    cm, eq = c.hyd
    u = 0.5 * np.asarray(eq.p)
    if not linearize_it:
        return Reference.equilibrium(cm, eq.x, u=u)
    ref = Reference.equilibrium(cm, eq.x, u=u, check=False)
    return linearize_with_first_order_states(cm, ref, hf.PARTITION,
                                             **hf.circuit_jacobians(eq).as_kwargs())


def _hydraulic_rate(c: Ctx, *, p1_factor: float = 1.0, ud=None):
    """The four-bar at rest with the circuit beside the model: p1 (the hose before the throttle,
    not in the cylinder force) off by ``p1_factor``, or pressure rates ``ud`` that the circuit
    does not give; the mechanics stay admissible, the rate equation (7.19) fails."""
    import dataclasses
    cm, eq = c.hyd
    bad = dataclasses.replace(eq, p=np.asarray(eq.p) * [p1_factor, 1.0, 1.0])
    ref = Reference.from_functions(cm, eq.x, np.zeros(10), np.zeros(10), u=bad.p, ud=ud)
    return linearize_with_first_order_states(cm, ref, hf.PARTITION,
                                             **hf.circuit_jacobians(bad).as_kwargs())


# (id, call(ctx), error class, patterns that must all appear in the message)
PART1 = [
    ("disc_spin_left_out",
     lambda c: Reference.constant_velocity(c.disc, c.x0, c.xd_no_spin),
     ReferenceMotionError, [r"velocity residual", r"'P_tangent'", r"\['theta'\] enter", r"left out",
                            r"at t = 0\b"]),
    ("disc_spin_left_out_linearize",
     lambda c: linearize(c.disc, _unchecked(c, c.disc, c.x0, c.xd_no_spin), rw.PARTITION),
     ReferenceMotionError, [r"passed to linearize", r"'P_tangent'", r"'theta'"]),
    ("disc_centre_5cm_low",
     lambda c: Reference.constant_velocity(c.disc, c.low, c.xd0),
     ReferenceMotionError, [r"holonomic residual C\(x0\)", r"-5\.000e-02", r"'P_z'",
                            r"consistent_initial_conditions"]),
    ("disc_centre_5cm_low_linearize",
     lambda c: linearize(c.disc, _unchecked(c, c.disc, c.low, c.xd0), rw.PARTITION, t=0.0),
     ReferenceMotionError, [r"passed to linearize", r"-5\.000e-02", r"'P_z'"]),
    ("disc_acceleration_level",
     _disc_rising, ReferenceMotionError,
     [r"acceleration residual", r"'P_z'", r"time derivative of ẋ0", r"at t = 0\b"]),
    ("disc_samples_spin_left_out",
     _samples_no_spin, ReferenceMotionError,
     [r"velocity residual", r"'theta'", r"tolerance 1e-03"]),
    ("sleigh_blade_violated",
     lambda c: Reference.constant_velocity(c.sleigh, [0, 0, 0], [1.0, 0.5, 0.0]),
     ReferenceMotionError, [r"nonholonomic constraint 'blade_lateral'", r"5\.000e-01",
                            r"\['psi'\] enter"]),
    ("sleigh_blade_violated_with_lam",
     lambda c: Reference.constant_velocity(c.sleigh, [0, 0, 0], [1.0, 0.5, 0.0], lam=[0.0]),
     ReferenceMotionError, [r"'blade_lateral'", r"least-norm correction of ẋ0 changes 'y'"]),
    ("sleigh_blade_violated_linearize",
     lambda c: linearize(c.sleigh, _unchecked(c, c.sleigh, [0, 0, 0], [1.0, 0.5, 0.0]),
                         sl.PARTITION),
     ReferenceMotionError, [r"passed to linearize", r"'blade_lateral'"]),
    ("sleigh_t_squared_lam0",
     lambda c: Reference.from_functions(c.sleigh, lambda t: [t * t, 0, 0], lambda t: [2 * t, 0, 0],
                                        [2.0, 0.0, 0.0], lam=[0.0]),
     ReferenceMotionError, [r"dynamics residual", r"coordinate 'x'", r"2\.000e\+00",
                            r"No multiplier can remove it"]),
    ("sleigh_t_squared_no_lam",
     lambda c: Reference.from_functions(c.sleigh, lambda t: [t * t, 0, 0], lambda t: [2 * t, 0, 0],
                                        [2.0, 0.0, 0.0]),
     ReferenceMotionError, [r"coordinate 'x'", r"No multiplier can remove it"]),
    ("sleigh_wrong_multiplier",
     lambda c: Reference.constant_velocity(c.sleigh, [0, 0, 0], [1.0, 0.0, 0.0], lam=[7.0]),
     ReferenceMotionError, [r"lam0 = \[7\]", r"Λ0 = \[0\]", r"\['blade_lateral'\]", r"Omit lam"]),
    ("sleigh_wrong_multiplier_linearize",
     lambda c: linearize(c.sleigh, _unchecked(c, c.sleigh, [0, 0, 0], [1.0, 0, 0], lam=[7.0]),
                         sl.PARTITION),
     ReferenceMotionError, [r"passed to linearize", r"lam0 = \[7\]"]),
    ("sleigh_fails_at_later_time",
     _sleigh_later, ReferenceMotionError,
     [r"at t = 1:", r"velocity residual", r"'blade_lateral'"]),
    ("hydraulic_pressures_too_low",
     lambda c: _hydraulic_half_pressure(c, linearize_it=False), ReferenceMotionError,
     [r"dynamics residual", r"'phi32'", r"input forces at u0 = .*\['p1', 'p2', 'p3'\]"]),
    ("hydraulic_first_order_linearize",
     lambda c: _hydraulic_half_pressure(c, linearize_it=True), ReferenceMotionError,
     [r"passed to linearize", r"'phi32'", r"\['p1', 'p2', 'p3'\]"]),
    ("hydraulic_p1_off_throttle_flow",
     lambda c: _hydraulic_rate(c, p1_factor=1.01), ReferenceMotionError,
     [r"passed to linearize_with_first_order_states", r"rate equation of the first-order state "
      r"'p1'", r"ż0 - H\(x0, ẋ0, z0, u0\) \(Eq\. \(7\.19\)\) is 5\.9\d\de\+08",
      r"times its scale 1\.\d+e\+11", r"at t = 0\b", r"correct z0", r"check=False"]),
    ("hydraulic_pressure_rate_not_the_circuit",
     lambda c: _hydraulic_rate(c, ud=[1e6, 0.0, 0.0]), ReferenceMotionError,
     [r"first-order state 'p1'", r"ż0 = 1e\+06", r"H = 0\b", r"Either ud is not the time derivative"]),
    ("reference_of_another_model",
     lambda c: linearize(c.disc, c.sleigh_ref, rw.PARTITION), ReferenceMotionError,
     [r"'chaplygin_sleigh'", r"\['x', 'y', 'psi'\]", r"'rolling_disc'"]),
    ("check_tolerance_negative",
     lambda c: Reference.constant_velocity(c.sleigh, [0, 0, 0], [1, 0, 0], tol=-1.0),
     ReferenceMotionError, [r"tol must be a positive number", r"-1\.0"]),
]

PART5 = [
    ("linearize_model_none", lambda c: linearize(None, c.sleigh_ref, sl.PARTITION),
     ArgumentTypeError, [r"linearize: cm must be a CompiledModel", r"NoneType"]),
    ("linearize_reference_none", lambda c: linearize(c.sleigh, None, sl.PARTITION),
     ArgumentTypeError, [r"linearize: ref must be a nhcontrol\.reference\.Reference", r"NoneType"]),
    ("linearize_reference_string", lambda c: linearize(c.sleigh, "straight", sl.PARTITION),
     ArgumentTypeError, [r"ref must be", r"str 'straight'"]),
    ("linearize_t_string", lambda c: linearize(c.sleigh, c.sleigh_ref, sl.PARTITION, t="abc"),
     LinearSystemError, [r"\bt must be a time in seconds", r"'abc'"]),
    ("linearize_t_complex", lambda c: linearize(c.sleigh, c.sleigh_ref, sl.PARTITION, t=1j),
     LinearSystemError, [r"\bt must be", r"complex"]),
    ("linearize_t_2d", lambda c: linearize(c.sleigh, c.sleigh_ref, sl.PARTITION, t=[[0.0, 1.0]]),
     LinearSystemError, [r"\bt must be a scalar or a 1-D array", r"\(1, 2\)"]),
    ("linearize_t_nan", lambda c: linearize(c.sleigh, c.sleigh_ref, sl.PARTITION, t=math.nan),
     LinearSystemError, [r"\bt must be finite", r"nan"]),
    ("reference_time_string", lambda c: c.sleigh_ref.x("abc"),
     ReferenceMotionError, [r"\bt must be a time", r"'abc'"]),
    ("constant_velocity_model_none",
     lambda c: Reference.constant_velocity(None, [0, 0, 0], [1, 0, 0]),
     ArgumentTypeError, [r"cm must be a CompiledModel", r"NoneType"]),
    ("from_functions_model_string",
     lambda c: Reference.from_functions("sleigh", [0, 0, 0], [0, 0, 0], [0, 0, 0]),
     ArgumentTypeError, [r"cm must be a CompiledModel", r"str 'sleigh'"]),
    ("inverse_dynamics_model_none",
     lambda c: inverse_dynamics(None, [0, 0, 0], [0, 0, 0], [0, 0, 0]),
     ArgumentTypeError, [r"cm must be a CompiledModel"]),
    ("suggest_partition_model_none", lambda c: suggest_partition(None, c.sleigh_ref),
     ArgumentTypeError, [r"suggest_partition: cm must be a CompiledModel"]),
    ("consistent_initial_conditions_model_none",
     lambda c: consistent_initial_conditions(None, [0, 0, 0], [0, 0, 0], independent=["x"]),
     ArgumentTypeError, [r"cm must be a CompiledModel"]),
    ("x0_string", lambda c: Reference.constant_velocity(c.sleigh, "abc", [1, 0, 0]),
     ReferenceMotionError, [r"\bx0 must be a real numeric array", r"'abc'"]),
    ("xd0_wrong_length", lambda c: Reference.constant_velocity(c.sleigh, [0, 0, 0], [1, 0]),
     ReferenceMotionError, [r"\bxd0 must have shape", r"\['x', 'y', 'psi'\]"]),
    ("period_string",
     lambda c: Reference.from_functions(c.sleigh, [0, 0, 0], [0, 0, 0], [0, 0, 0], period="x"),
     ReferenceMotionError, [r"period must be a real number", r"str 'x'"]),
    ("discretize_dt_string", lambda c: discretize(c.ss, "abc"),
     LinearSystemError, [r"\bdt must be a real number", r"'abc'"]),
    ("discretize_t0_none", lambda c: discretize(c.ss, 0.1, t0=None),
     LinearSystemError, [r"\bt0 must be a real number", r"NoneType"]),
    ("lqr_R_zero", lambda c: lqr(c.ss, np.eye(2), [[0.0]]),
     DesignError, [r"\bR must be positive definite", r"smallest eigenvalue 0"]),
    ("lqr_R_relatively_singular",
     lambda c: lqr(ct.ss(np.zeros((2, 2)), np.eye(2), np.eye(2), 0), np.eye(2),
                   np.diag([1.0, 1e-14])),
     DesignError, [r"\bR must be positive definite", r"1e-12 \* largest eigenvalue"]),
    ("lqr_Q_indefinite", lambda c: lqr(c.ss, np.diag([1.0, -1.0]), [[1.0]]),
     DesignError, [r"\bQ must be positive semi-definite", r"-1"]),
]

STAGES = [
    ("lqr_system_none", lambda c: lqr(None, np.eye(2), [[1.0]]),
     DesignError, [r"sys must be a control\.StateSpace", r"NoneType"]),
    ("finite_horizon_lqr_system_none",
     lambda c: finite_horizon_lqr(None, np.eye(2), [[1.0]], np.eye(2)),
     DesignError, [r"DiscreteLTV", r"NoneType"]),
    ("finite_horizon_lqr_Q_shape",
     lambda c: finite_horizon_lqr((np.eye(2), [[0.0], [1.0]]), np.eye(3), [[1.0]], np.eye(2)),
     DesignError, [r"\bQ must have shape \(2, 2\)", r"\(3, 3\)"]),
    ("finite_horizon_lqr_R_nan",
     lambda c: finite_horizon_lqr((np.eye(2), [[0.0], [1.0]]), np.eye(2), [[math.nan]], np.eye(2)),
     DesignError, [r"\bR\b", r"non-finite"]),
    ("mpc_horizon_zero", lambda c: LTVMPC(0, np.eye(2), [[1.0]]),
     DesignError, [r"horizon must be a positive integer", r"\b0\b"]),
    ("ltv_matrix_string", lambda c: LTVSystem(lambda t: "abc", lambda t: np.zeros((1, 1))),
     LinearSystemError, [r"A\(t\) must be a real numeric array", r"'abc'"]),
    ("ltv_matrix_not_square", lambda c: LTVSystem(np.ones((2, 3)), np.ones((2, 1))),
     LinearSystemError, [r"A\(t\) must be a square", r"\(2, 3\)"]),
    ("ltv_time_string", lambda c: LTVSystem(np.eye(1), np.ones((1, 1))).A("abc"),
     LinearSystemError, [r"\bt must be a real numeric array", r"'abc'"]),
    ("ltv_time_outside_range",
     lambda c: LTVSystem(np.eye(1), np.ones((1, 1)), t_range=(0.0, 1.0)).A(2.5),
     TimeRangeError, [r"\bt = 2\.5", r"t_range = \(0\.0, 1\.0\)"]),
    ("discretize_system_none", lambda c: discretize(None, 0.1),
     LinearSystemError, [r"expected an LTVSystem", r"NoneType"]),
    ("controllability_system_string", lambda c: controllability("abc"),
     LinearSystemError, [r"expected an LTVSystem", r"got str"]),
    ("discretize_dt_negative", lambda c: discretize(c.ss, -0.1),
     LinearSystemError, [r"\bdt must be a positive", r"-0\.1"]),
    ("partition_not_a_mapping", lambda c: linearize(c.sleigh, c.sleigh_ref, "x,y"),
     PartitionError, [r"Partition\.from_dict expects a mapping", r"got str"]),
    ("forward_dynamics_t_span_string",
     lambda c: forward_dynamics(c.sleigh, "ab", [0, 0, 0], [0, 0, 0]),
     SimulationInputError, [r"\bt_span must be a real numeric array", r"str"]),
    ("forward_dynamics_x0_string",
     lambda c: forward_dynamics(c.sleigh, (0.0, 1.0), "ab", [0, 0, 0]),
     SimulationInputError, [r"\bx0 \(initial coordinates\) must be a real numeric array"]),
    ("forward_dynamics_xd0_short",
     lambda c: forward_dynamics(c.sleigh, (0.0, 1.0), [0, 0, 0], [0, 0]),
     SimulationInputError, [r"\bxd0 \(initial velocities\) must have shape", r"\(2,\)"]),
    ("partition_unknown_coordinate",
     lambda c: linearize(c.sleigh, c.sleigh_ref, Partition(["x", "psi"], ["q"], [])),
     PartitionError, [r"'q'"]),
]

CATALOGUE = PART1 + PART5 + STAGES

#: Wrong types raised as a stage's error class that is also a TypeError.
TYPE_ERRORS = {"lqr_system_none", "finite_horizon_lqr_system_none", "discretize_system_none",
               "partition_not_a_mapping", "controllability_system_string"}


@pytest.mark.parametrize("case, call, error, patterns", CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_bad_input(ctx, case, call, error, patterns):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # e.g. inputs in the constraints
        with pytest.raises(error) as info:
            call(ctx)
    text = str(info.value)
    missing = [p for p in patterns if not __import__("re").search(p, text)]
    assert not missing, f"{case}: message lacks {missing}:\n{text}"
    if error is ArgumentTypeError or case in TYPE_ERRORS:
        assert isinstance(info.value, TypeError), f"{case}: a wrong type must be a TypeError"


CLI = [
    ("unknown_target", ["reproduce", "no-such-target"], [r"invalid choice: 'no-such-target'"]),
    ("n_not_an_integer", ["reproduce", "skateboard", "--n", "abc"],
     [r"argument --n", r"invalid int value: 'abc'"]),
    ("unknown_format", ["reproduce", "skateboard", "--format", "bmp"],
     [r"argument --format", r"invalid choice: 'bmp'"]),
    ("unknown_backend", ["reproduce", "skateboard", "--backend", "gpu"],
     [r"argument --backend", r"invalid choice: 'gpu'"]),
    ("unknown_command", ["reproducee"], [r"invalid choice: 'reproducee'"]),
]


@pytest.mark.parametrize("case, argv, patterns", CLI, ids=[c[0] for c in CLI])
def test_cli_bad_input(capsys, case, argv, patterns):
    """The CLI exits with status 2 and a message naming the option and the value (no traceback)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert all(__import__("re").search(p, err) for p in patterns), err
    assert "Traceback" not in err


def test_ball_plate_near_90_degrees_warns():
    """φ0 = 89.99°: sec φ0 = 5.7e3 > SEC_PHI_WARN, a ConditioningWarning naming φ0 and the loss."""
    cm = bp.model()
    with pytest.warns(ConditioningWarning, match=r"phi0 = 89\.99 deg .*sec\(phi0\) = 5\.73e\+03"):
        bp.circular_motion(cm, 89.99)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConditioningWarning)
        bp.circular_motion(cm, 35.0)                      # the thesis case: no warning


def test_catalogue_counts():
    """At least 40 cases over parts 1 and 5 and the design, LTV and CLI stages."""
    assert len(PART1) >= 15 and len(PART5) >= 15 and len(STAGES) >= 10
    assert len(CATALOGUE) + len(CLI) + 1 >= 40


# ---------------------------------------------------------------------------- valid inputs
def test_check_false_skips_the_check(ctx):
    """check=False builds the inconsistent motion; linearize(check=False) uses it as told."""
    ref = Reference.constant_velocity(ctx.disc, ctx.x0, ctx.xd_no_spin, check=False)
    res = linearize(ctx.disc, ref, rw.PARTITION, check=False)
    # the sliding disc's lean mode is a real pair (unstable), unlike the admissible motion's
    good = linearize(ctx.disc, rw.upright_rolling(ctx.disc, V), rw.PARTITION)
    lean_bad = np.linalg.eigvals(res.A)
    lean_good = np.linalg.eigvals(good.A)
    assert np.max(lean_bad.real) > 1.0 and np.max(np.abs(lean_good.real)) < 1e-9


def test_small_weights_are_valid(ctx):
    """R = 1e-13, Q = 1e-12 I is the problem Q = I, R = 0.1 scaled by 1e-12: same gain."""
    small = lqr(ctx.ss, 1e-12 * np.eye(2), [[1e-13]])
    unit = lqr(ctx.ss, np.eye(2), [[0.1]])
    np.testing.assert_allclose(small.K, unit.K, rtol=1e-9)
    Ad = np.broadcast_to(np.array([[1.0, 0.1], [0.0, 1.0]]), (20, 2, 2))
    Bd = np.broadcast_to(np.array([[0.005], [0.1]]), (20, 2, 1))
    fs = finite_horizon_lqr((Ad, Bd), 1e-12 * np.eye(2), [[1e-13]], 1e-12 * np.eye(2))
    fu = finite_horizon_lqr((Ad, Bd), np.eye(2), [[0.1]], np.eye(2))
    np.testing.assert_allclose(fs.K, fu.K, rtol=1e-9)


CATALOGUE_REFERENCES = {
    "rolling disc": lambda: (rw.model_disc(), lambda cm: rw.upright_rolling(cm, 3.0)),
    "sleigh": lambda: (sl.model(), lambda cm: sl.straight_motion(cm, 1.0)),
    "skateboard turn": lambda: (sl.model_skateboard(), lambda cm: sl.skateboard_turn(cm, 2.0, 0.2)),
    "ball-plate 35 deg": lambda: (bp.model(), lambda cm: bp.circular_motion(cm, 35.0)),
}


@pytest.mark.parametrize("name", sorted(CATALOGUE_REFERENCES))
def test_catalogue_references_pass_with_margin(name):
    """Shipped motions are admissible to round-off: every relative residual <= 1e-13 over
    21 times (8 orders of magnitude inside the default tolerance 1e-8)."""
    cm, make = CATALOGUE_REFERENCES[name]()
    ref = make(cm)
    ts = np.linspace(0.0, 2.0, 21)
    s = ref.sample(ts)
    ev = ModelEvaluator(cm, ref.parameters)
    U = s.u if ev.k else None
    rep = admissibility_report(s.t, s.x, s.xd, s.xdd, s.lam, M=ev.M(s.x, U),
                               Q=ev.Q(s.x, s.xd, U), D=ev.D(s.x, U), Qd=ev.Qd(s.x, s.xd, U),
                               C=ev.C(s.x, U))
    assert rep.ok and max(rep.maxima.values()) <= 1e-13, rep.maxima


def test_hydraulic_equilibrium_satisfies_the_rate_equation(ctx):
    """The four-bar at rest (Eq. (7.99)): the circuit's rates at the equilibrium are zero to
    round-off against their scale (the throttle terms, ~1.2e11 Pa/s), and the linearization
    with H0 checked gives the 6x6 of hf.linearization()."""
    cm, eq = ctx.hyd
    cj = hf.circuit_jacobians(eq)
    scale = np.abs(cj.H_p) @ np.abs(eq.p)
    assert scale[0] > 1e11 and np.all(np.abs(cj.H) <= 1e-14 * scale[0])
    lin = linearize_with_first_order_states(cm, Reference.equilibrium(cm, eq.x, u=eq.p),
                                            hf.PARTITION, **cj.as_kwargs())
    np.testing.assert_array_equal(lin.A, hf.linearization().A)
