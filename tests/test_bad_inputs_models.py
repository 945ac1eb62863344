"""Models and parameter values that cannot exist are refused.

Each case asserts the error class and that the message names the culprit (the constraint,
body or parameter in the user's names, and the offending expression or value).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import MultibodySystem, euler_rotation, examples, parameter_values, rot_z
from nhcontrol.reference import Reference
from nhcontrol.simulate import forward_dynamics

NAN, INF = float("nan"), float("inf")


def _model(*, nh=None, hol=None, inertia=None, mass=None, position=None, spatial=False, force=None):
    """A knife-edge body (planar, or free to turn about all axes with ``spatial``)."""
    mb = MultibodySystem("probe")
    x, y, th, ph, ps = mb.add_coordinates("x y theta phi psi")
    xd, yd, thd, phd, psd = mb.velocities
    m, I1, I2, I3 = mb.add_parameters(m=1.0, I1=0.1, I2=0.2, I3=0.25)
    R = euler_rotation("zxy", (th, ph, ps)) if spatial else rot_z(th)
    body = mb.add_body("probe_body", mass=m if mass is None else mass,
                       inertia=sp.diag(I1, I2, I3) if inertia is None else inertia,
                       position=[x, y, 0] if position is None else position(mb), orientation=R)
    mb.add_nonholonomic(-sp.sin(th) * xd + sp.cos(th) * yd if nh is None else nh(mb), name="blade")
    if hol is not None:
        mb.add_holonomic(hol(mb), name="guide")
    if force is not None:
        mb.add_force(body, force(mb))
    if not spatial:
        mb.add_holonomic(ph, name="no_roll")
        mb.add_holonomic(ps, name="no_pitch")
    return mb


def _v(mb, name):
    return next(s for s in list(mb.coordinates) + list(mb.velocities) if s.name == name)


# --------------------------------------------------------------------------- model building
MODEL_CASES = {
    "nh_abs_velocity": (dict(nh=lambda mb: sp.Abs(_v(mb, "x_d"))), [r"nonholonomic constraint 'blade'",
                                                                    r"non-smooth", r"Abs\(x_d\)"]),
    "nh_sign_velocity": (dict(nh=lambda mb: sp.sign(_v(mb, "x_d")) * _v(mb, "y_d")),
                         [r"'blade'", r"sign\(x_d\)"]),
    "nh_max_velocity": (dict(nh=lambda mb: sp.Max(_v(mb, "x_d"), _v(mb, "y_d"))), [r"'blade'", r"Max\("]),
    "nh_quadratic": (dict(nh=lambda mb: _v(mb, "x_d") * _v(mb, "y_d")),
                     [r"'blade' is not linear", r"degree > 1", r"d²/dx_d dy_d"]),
    "nh_hidden_quadratic": (dict(nh=lambda mb: (_v(mb, "x_d") + _v(mb, "y_d")) ** 2 - _v(mb, "x_d") ** 2),
                            [r"'blade' is not linear", r"degree > 1"]),
    "nh_sqrt_velocity": (dict(nh=lambda mb: sp.sqrt(_v(mb, "x_d") ** 2 + 1) - 1),
                         [r"'blade' is not linear", r"x_d"]),
    "nh_velocity_free_term": (dict(nh=lambda mb: _v(mb, "x_d") + sp.sin(_v(mb, "theta")) ** 2),
                              [r"'blade' is not linear and homogeneous", r"velocity-free term",
                               r"sin\(theta\)\*\*2"]),
    "hol_abs": (dict(hol=lambda mb: sp.Abs(_v(mb, "x")) - 1), [r"holonomic constraint 'guide'", r"Abs\(x\)"]),
    "hol_sign": (dict(hol=lambda mb: sp.sign(_v(mb, "x")) - _v(mb, "y")), [r"'guide'", r"sign\(x\)"]),
    "position_floor": (dict(position=lambda mb: [sp.floor(_v(mb, "x")), _v(mb, "y"), 0]),
                       [r"position of body 'probe_body'", r"floor\(x\)"]),
    "inertia_triangle": (dict(inertia=sp.diag(0.1, 0.1, 5), spatial=True),
                         [r"body 'probe_body'", r"triangle inequality", r"0\.1 \+ 0\.1 < 5"]),
    "inertia_nan": (dict(inertia=sp.diag(NAN, 1, 1)), [r"inertia of body 'probe_body'", r"non-finite", r"nan"]),
    "inertia_inf": (dict(inertia=sp.diag(1, sp.oo, 1)), [r"inertia of body 'probe_body'", r"non-finite", r"oo"]),
    "mass_nan": (dict(mass=sp.nan), [r"mass of body 'probe_body'", r"non-finite"]),
    "inertia_asymmetric": (dict(inertia=sp.Matrix([[0.2, 0.05, 0], [0, 0.2, 0], [0, 0, 0.3]]), spatial=True),
                           [r"body 'probe_body' is not symmetric"]),
    "inertia_not_psd": (dict(inertia=sp.diag(0.2, -0.1, 0.3), spatial=True),
                        [r"body 'probe_body' is not positive semidefinite", r"-0\.1"]),
}


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_impossible_model_is_refused(case):
    kw, patterns = MODEL_CASES[case]
    with pytest.raises(ModelError) as err:
        _model(**kw).compile(cache=False)
    for pat in patterns:
        assert re.search(pat, str(err.value)), (pat, str(err.value))


def test_sign_of_a_velocity_in_a_force_names_the_expression_it_cannot_print():
    """sign(x_d) in a force is allowed by the model, but its derivative (needed for ∂Q/∂ẋ)
    cannot be generated: a ModelError naming the expression, not a SymPy printer error."""
    mb = _model(force=lambda mb: [-0.3 * sp.sign(_v(mb, "x_d")), 0, 0])
    with pytest.raises(ModelError, match=r"code generator cannot print Derivative\(sign\(x_d\), x_d\).*tanh"):
        mb.compile(cache=False)


@pytest.mark.parametrize("kw", [dict(nh=lambda mb: (_v(mb, "x_d") + _v(mb, "y_d")) ** 2 - _v(mb, "x_d") ** 2
                                     - _v(mb, "y_d") ** 2 - 2 * _v(mb, "x_d") * _v(mb, "y_d") + _v(mb, "y_d")),
                                dict(nh=lambda mb: _v(mb, "x_d") + sp.sin(_v(mb, "theta")) ** 2
                                     + sp.cos(_v(mb, "theta")) ** 2 - 1),             # hidden zero
                                dict(inertia=sp.diag(0, 0.3, 0.3), spatial=True),     # slender rod
                                dict(inertia=sp.diag(0.1, 0.2, 0.3), spatial=True),   # plane lamina: equality
                                dict(inertia=sp.diag(0, 0, 0.3)),                     # planar body: Izz only
                                dict(force=lambda mb: [-0.3 * sp.Abs(_v(mb, "x_d")) * _v(mb, "x_d"), 0, 0])],
                         ids=["linear_after_cancellation", "homogeneous_after_simplification", "slender_rod", "lamina", "planar_body", "drag_abs"])
@pytest.mark.filterwarnings("ignore:nhcontrol uses the Python kernels")  # sign() has no C translation
def test_possible_models_are_accepted(kw):
    cm = _model(**kw).compile(cache=False)
    assert np.all(np.isfinite(cm.M(np.full(5, 0.2))))


def test_non_finite_parameter_default_is_refused():
    mb = MultibodySystem("p")
    with pytest.raises(ModelError, match=r"default value of parameter 'I_zz' must be finite, got nan"):
        mb.add_parameters(I_zz=NAN)


# --------------------------------------------------------------------------- call-time values
@pytest.fixture(scope="module")
def sleigh():
    return examples.sleigh().compile(cache=False)


@pytest.fixture(scope="module")
def spatial():
    return _model(spatial=True, nh=lambda mb: _v(mb, "x_d") - _v(mb, "psi_d")).compile(cache=False)


CALL_CASES = {
    "param_vector_negative_mass": (lambda cm: cm.param_vector(m=-1.0), [r"body 'sleigh' gets the mass -1\.0",
                                                                        r"m=-1\.0", r"positive"]),
    "param_vector_negative_inertia": (lambda cm: cm.param_vector(Iz=-0.05),
                                      [r"inertia tensor of body 'sleigh' is not positive semidefinite",
                                       r"Iz=-0\.05"]),
    "param_vector_nan": (lambda cm: cm.param_vector(Iz=NAN), [r"Iz=nan", r"not finite"]),
    "param_vector_not_a_number": (lambda cm: cm.param_vector(m="heavy"), [r"m='heavy'", r"not a real number"]),
    "kernel_p_mapping_inf": (lambda cm: cm.M([0.0, 0.0, 0.1], p={"m": INF}), [r"m=inf", r"not finite"]),
    "kernel_p_mapping_zero_mass": (lambda cm: cm.Q([0.0, 0.0, 0.1], [1.0, 0.0, 0.0], p={"m": 0.0}),
                                   [r"mass 0\.0", r"m=0\.0"]),
    "reference_negative_mass": (lambda cm: Reference.constant_velocity(cm, [0, 0, 0], [1.0, 0, 0], p={"m": -1.0}),
                                [r"body 'sleigh' gets the mass -1\.0", r"m=-1\.0"]),
    "forward_dynamics_negative_inertia": (lambda cm: forward_dynamics(cm, (0.0, 0.1), [0, 0, 0], [1.0, 0, 0],
                                                                      p={"Iz": -0.05}),
                                          [r"body 'sleigh'", r"Iz=-0\.05"]),
    "forward_dynamics_vector_negative_mass": (
        lambda cm: forward_dynamics(cm, (0.0, 0.1), [0, 0, 0], [1.0, 0, 0], p=[0.3, -1.5, 0.2, 0.1]),
        [r"body 'sleigh' gets the mass -1\.5", r"m=-1\.5"]),
    "parameter_values_vector_nan": (lambda cm: parameter_values(cm, [0.3, 1.5, NAN, 0.1]), [r"Iz=nan", r"not finite"]),
}


@pytest.mark.parametrize("case", sorted(CALL_CASES))
def test_impossible_parameter_values_at_call_time_are_refused(sleigh, case):
    call, patterns = CALL_CASES[case]
    with pytest.raises(ModelError) as err:
        call(sleigh)
    for pat in patterns:
        assert re.search(pat, str(err.value)), (pat, str(err.value))


def test_triangle_inequality_checked_at_call_time_for_a_spatial_body(spatial):
    with pytest.raises(ModelError, match=r"body 'probe_body' violates the triangle inequality.*I3=5\.0"):
        spatial.param_vector(I3=5.0)
    assert spatial.param_vector(I1=0.0, I2=0.3, I3=0.3)[1] == 0.0  # a slender rod is fine


def test_planar_body_checks_no_triangle_at_call_time(sleigh):
    """The sleigh turns about its z axis only: I_zz larger than I_xx + I_yy is allowed."""
    assert sleigh.param_vector(Iz=5.0)[2] == 5.0
    assert math.isfinite(sleigh.M([0.0, 0.0, 0.1], p={"Iz": 5.0})[2, 2])
