"""MultibodySystem.validate(): every problem collected into one ModelError."""

from __future__ import annotations

import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError, NhcontrolError
from nhcontrol.modeling import MultibodySystem, examples, rot_x, rot_z


def _base(name="m"):
    mb = MultibodySystem(name)
    x, y, th = mb.add_coordinates("x y theta")
    (m,) = (mb.add_parameters(m=1.0),)
    body = mb.add_body("b", mass=m, inertia=sp.diag(0.1, 0.1, 0.1), position=[x, y, 0], orientation=rot_z(th))
    return mb, (x, y, th), body


def test_valid_examples_pass():
    for f in (examples.pendulum, examples.sleigh, examples.rolling_disc, examples.spatial_body):
        f().validate()


def test_nonlinear_nonholonomic_constraint():
    mb, (x, y, th), _ = _base()
    xd, yd, thd = mb.velocities
    mb.add_nonholonomic(xd**2 - yd, name="bad")
    with pytest.raises(ModelError, match=r"'bad' is not linear and homogeneous.*degree > 1"):
        mb.validate()


def test_affine_nonholonomic_constraint():
    mb, (x, y, th), _ = _base()
    xd, yd, thd = mb.velocities
    mb.add_nonholonomic(xd - 1, name="offset")
    with pytest.raises(ModelError, match=r"'offset'.*velocity-free term"):
        mb.validate()


def test_position_only_nonholonomic_suggests_holonomic():
    mb, (x, y, th), _ = _base()
    mb.add_nonholonomic(x - y, name="pos")
    with pytest.raises(ModelError, match=r"'pos'.*depends on positions only.*add_holonomic"):
        mb.validate()


def test_unknown_symbol_is_named_with_fix():
    mb, (x, y, th), _ = _base()
    k = sp.Symbol("k_unknown")
    mb.add_holonomic(x - k, name="c")
    with pytest.raises(ModelError, match=r"unknown symbol\(s\) \['k_unknown'\].*add_parameters\(k_unknown=<value>\)"):
        mb.validate()


def test_velocity_in_position_is_rejected():
    mb = MultibodySystem("v")
    (x,) = (mb.add_coordinates("x"),)
    mb.add_coordinates("y")
    mb.add_body("b", mass=1, inertia=sp.eye(3), position=[mb.velocities[0], 0, 0])
    with pytest.raises(ModelError, match=r"position of body 'b' depends on velocities \['x_d'\]"):
        mb.validate()


def test_counts_must_leave_degrees_of_freedom():
    mb, (x, y, th), _ = _base()
    mb.add_holonomic(x, name="c1")
    mb.add_holonomic(y, name="c2")
    mb.add_holonomic(th, name="c3")
    with pytest.raises(ModelError, match=r"m \+ l = 3 \+ 0 = 3 constraints for n = 3.*expected m \+ l < n"):
        mb.validate()


def test_constraint_without_coordinates():
    mb, _, _ = _base()
    (p,) = (mb.add_parameters(p=2.0),)
    mb.add_holonomic(p - 1, name="constant")
    with pytest.raises(ModelError, match=r"'constant'.*does not depend on any coordinate"):
        mb.validate()


def test_inertia_not_symmetric_and_not_psd():
    mb = MultibodySystem("I")
    x, y = mb.add_coordinates("x y")
    mb.add_body("asym", mass=1, inertia=sp.Matrix([[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]), position=[x, 0, 0])
    mb.add_body("neg", mass=1, inertia=sp.diag(1, -2, 1), position=[0, y, 0])
    with pytest.raises(ModelError, match=r"(?s)'asym' is not symmetric.*'neg' is not positive semidefinite"):
        mb.validate()


def test_non_positive_mass():
    mb = MultibodySystem("mass")
    (x,) = (mb.add_coordinates("x"),)
    mb.add_coordinates("y")
    (m,) = (mb.add_parameters(m=-1.0),)
    mb.add_body("b", mass=m, inertia=sp.eye(3), position=[x, 0, 0])
    with pytest.raises(ModelError, match=r"mass of body 'b' is -1.0.*expected a positive mass"):
        mb.validate()


def test_orientation_not_orthogonal():
    mb = MultibodySystem("R")
    x, a = mb.add_coordinates("x a")
    mb.add_body("b", mass=1, inertia=sp.eye(3), position=[x, 0, 0], orientation=2 * rot_x(a))
    with pytest.raises(ModelError, match=r"orientation matrix of body 'b' is not a rotation"):
        mb.validate()


def test_duplicate_names():
    mb, (x, y, th), _ = _base()
    mb.add_parameters(x=1.0)
    mb.add_body("b", mass=1, inertia=sp.eye(3), position=[x, 0, 0])
    mb.add_holonomic(x, name="c")
    mb.add_holonomic(y, name="c")
    with pytest.raises(ModelError) as info:
        mb.validate()
    msg = str(info.value)
    assert "duplicate symbol name 'x' (used as coordinate and as parameter)" in msg
    assert "duplicate body names ['b']" in msg
    assert "duplicate constraint names ['c']" in msg


def test_all_problems_in_one_message():
    mb, (x, y, th), _ = _base("many")
    xd = mb.velocities[0]
    mb.add_nonholonomic(xd**2, name="nl")
    mb.add_holonomic(x - sp.Symbol("q"), name="h")
    mb.add_body("neg", mass=1, inertia=sp.diag(1, -1, 1), position=[y, 0, 0])
    with pytest.raises(ModelError, match=r"model 'many' has 3 problem\(s\)") as info:
        mb.validate()
    assert isinstance(info.value, NhcontrolError) and isinstance(info.value, ValueError)


def test_immediate_shape_errors():
    mb = MultibodySystem("s")
    (x,) = (mb.add_coordinates("x"),)
    with pytest.raises(ModelError, match=r"position of body 'b' must be a 3-vector of shape \(3, 1\), got shape \(2, 1\)"):
        mb.add_body("b", mass=1, inertia=sp.eye(3), position=[x, 0])
    with pytest.raises(ModelError, match=r"inertia of body 'b' must have shape \(3, 3\)"):
        mb.add_body("b", mass=1, inertia=sp.eye(2), position=[x, 0, 0])
    with pytest.raises(ModelError, match=r"default value of parameter 'k' must be finite"):
        mb.add_parameters(k=float("nan"))
    with pytest.raises(ModelError, match=r"is not a body of model 's'"):
        mb.add_torque("not a body", [0, 0, 1])
    with pytest.raises(ModelError, match=r"generalized force must have shape \(1, 1\)"):
        mb.add_generalized_force([1, 2])


def test_equations_and_compile_validate_first(tmp_path):
    mb, (x, y, th), _ = _base()
    mb.add_holonomic(x - sp.Symbol("zz"), name="c")
    with pytest.raises(ModelError, match="zz"):
        mb.equations()
    with pytest.raises(ModelError, match="zz"):
        mb.compile(cache_dir=tmp_path)
