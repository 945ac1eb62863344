"""Tests of nhcontrol.modeling.parameters (shared checks of the model builders' parameter values)."""

import math

import numpy as np
import pytest

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import check_parameters, override_parameters, parameter_values

DEFAULTS = {"m": 1.0, "a": -0.2, "k": 0.0}


def test_check_parameters_converts_and_keeps_order():
    out = check_parameters({"b": "2.5", "a": 1, "c": -3.0}, requirement="x", positive=("a", "b"))
    assert list(out) == ["b", "a", "c"]
    assert out == {"b": 2.5, "a": 1.0, "c": -3.0}
    assert all(type(v) is float for v in out.values())


@pytest.mark.parametrize("value, reason", [
    ("heavy", "not a real number"), (None, "not a real number"), (math.nan, "not finite"),
    (-math.inf, "not finite"), (0.0, "not positive"), (-1.0, "not positive"),
])
def test_check_parameters_reports_value_and_reason(value, reason):
    with pytest.raises(ModelError, match=rf"^toy: m must be positive; got m={value!r} \({reason}\)$"):
        check_parameters({"m": value}, requirement="toy: m must be positive", positive=("m",))


def test_check_parameters_collects_every_problem_and_nonnegative():
    assert check_parameters({"k": 0.0}, requirement="r", nonnegative=("k",)) == {"k": 0.0}
    with pytest.raises(ModelError, match=r"got k=-0.5 \(negative\), m='x' \(not a real number\)$"):
        check_parameters({"k": -0.5, "a": 1.0, "m": "x"}, requirement="r", nonnegative=("k",))


def test_override_parameters_merges_into_defaults():
    out = override_parameters(DEFAULTS, {"a": "0.3"}, model="toy", requirement="r")
    assert out == {"m": 1.0, "a": 0.3, "k": 0.0}
    assert list(out) == list(DEFAULTS)
    assert override_parameters(DEFAULTS, {}, model="toy", requirement="r") == DEFAULTS


def test_override_parameters_unknown_names():
    with pytest.raises(ModelError, match=r"unknown toy parameter\(s\) \['q', 'z'\]; "
                                         r"valid names are \['a', 'k', 'm'\] \(see Table\)$"):
        override_parameters(DEFAULTS, {"z": 1, "q": 2, "m": 3}, model="toy", requirement="r",
                            names_note=" (see Table)")
    with pytest.raises(ModelError, match=r"valid names are \['m', 'a', 'k'\]$"):
        override_parameters(DEFAULTS, {"z": 1}, model="toy", requirement="r", sort_names=False)


def test_override_parameters_checks_only_overrides():
    # the default k = 0.0 would violate positive=("k",); only user values are checked
    assert override_parameters(DEFAULTS, {"m": 2.0}, model="toy", requirement="r",
                               positive=("m", "k"))["m"] == 2.0
    with pytest.raises(ModelError, match=r"^toy needs m > 0; got m=0 \(not positive\)$"):
        override_parameters(DEFAULTS, {"m": 0}, model="toy", requirement="toy needs m > 0",
                            positive=("m",))


class _Model:
    """Duck-typed compiled model: ``parameters`` and ``param_vector``."""

    parameters = {"m": 1.0, "a": -0.2}

    def param_vector(self, **overrides):
        unknown = set(overrides) - set(self.parameters)
        if unknown:
            raise ModelError(f"unknown parameter(s) {sorted(unknown)}")
        return np.array([float(overrides.get(k, v)) for k, v in self.parameters.items()])


def test_parameter_values_defaults_overrides_vector():
    model = _Model()
    pvec, vals = parameter_values(model)
    np.testing.assert_array_equal(pvec, [1.0, -0.2])
    assert vals == {"m": 1.0, "a": -0.2} and list(vals) == ["m", "a"]
    pvec, vals = parameter_values(model, {"a": 0.5})
    np.testing.assert_array_equal(pvec, [1.0, 0.5])
    assert vals == {"m": 1.0, "a": 0.5}
    pvec, vals = parameter_values(model, [2, 3])
    assert pvec.dtype == np.float64 and vals == {"m": 2.0, "a": 3.0}
    with pytest.raises(ModelError, match=r"unknown parameter\(s\) \['q'\]"):
        parameter_values(model, {"q": 1.0})


@pytest.mark.parametrize("p, match", [
    ([1.0], r"^parameter vector p must have shape \(2,\) \(order \['m', 'a'\]\), got \(1,\); build it with "
            r"model.param_vector\(\*\*overrides\)$"),
    ([[1.0, 2.0]], r"must have shape \(2,\).*got \(1, 2\)"),
    (["x", 1.0], r"parameter vector p must be a real numeric array, got list"),
])
def test_parameter_values_bad_vector(p, match):
    with pytest.raises(ModelError, match=match):
        parameter_values(_Model(), p)
