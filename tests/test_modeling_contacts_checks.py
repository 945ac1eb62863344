"""Argument checks shared by the contact helpers (nhcontrol/modeling/contacts/_checks.py).

Each contact collects every problem into one ModelError; these tests drive the shared
checks through the public contact functions and directly.
"""

import pytest
import sympy as sp

from nhcontrol._util.errors import ModelError
from nhcontrol.modeling import MultibodySystem, contacts, rot_z
from nhcontrol.modeling.contacts import _checks


@pytest.fixture()
def sleigh():
    mb = MultibodySystem("s")
    x, y, psi = mb.add_coordinates("x y psi")
    body = mb.add_body("s", mass=1, inertia=sp.eye(3), position=[x, y, 0], orientation=rot_z(psi))
    return mb, body, (x, y, psi)


def test_as_vec3_accepts_rows_and_columns():
    a = sp.Symbol("a")
    problems: list[str] = []
    for value in ([a, 1, 2], sp.Matrix([[a, 1, 2]]), sp.Matrix([a, 1, 2])):
        vec = _checks.as_vec3(value, "v", problems)
        assert vec.shape == (3, 1) and list(vec) == [a, 1, 2]
    assert problems == []


def test_as_vec3_reports_type_and_shape():
    problems: list[str] = []
    assert _checks.as_vec3(object(), "p", problems) is None
    assert _checks.as_vec3([1, 2], "q", problems) is None
    assert problems[0].startswith("p must be a 3-vector (of sympy expressions), got object: ")
    assert "\n" not in problems[0]
    assert problems[1] == "q must have 3 components, got shape (2, 1)"


def test_knife_edge_collects_vector_and_name_problems(sleigh):
    mb, body, _ = sleigh
    with pytest.raises(ModelError, match=r"(?s)^cannot add the knife-edge contact:\n  - knife_edge '': point "
                                         r"must be a 3-vector.*got object.*\n  - knife_edge: name must be a "
                                         r"non-empty string, got ''$"):
        contacts.knife_edge(mb, body, object(), (1, 0, 0), name="")


def test_elliptic_torus_checks_both_contact_coordinates(sleigh):
    mb, body, (x, y, psi) = sleigh
    eta = sp.Symbol("eta")
    with pytest.raises(ModelError, match=r"(?s)^cannot add the elliptic torus contact:\n  - elliptic_torus 'T': "
                                         r"eta must be one of the system's coordinates \(add it with "
                                         r"mb.add_coordinates\), got eta$"):
        contacts.elliptic_torus(mb, body, [x, y, 0], sp.eye(3), 0.3, 0.1, 1.0, psi, eta, name="T")
    with pytest.raises(ModelError, match=r"xi must be one of the system's coordinates.*got 2"):
        contacts.elliptic_torus(mb, body, [x, y, 0], sp.eye(3), 0.3, 0.1, 1.0, 2, psi, name="T")


def test_is_coordinate_without_coordinates_defers_the_check():
    assert _checks.is_coordinate(object(), sp.Symbol("q"))
    problems: list[str] = []
    _checks.check_coordinate(object(), sp.Symbol("q"), "q", problems)
    _checks.check_coordinate(object(), 1.5, "r", problems)
    assert problems == ["r must be one of the system's coordinates (add it with mb.add_coordinates), got 1.5"]
