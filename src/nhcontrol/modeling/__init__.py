"""nhcontrol.modeling — symbolic multibody models in absolute coordinates (thesis Ch. 2).

See ``docs/dev/contracts.md`` section 1 and ``docs/theory/newton_euler.md``.
"""

# Imported lazily (PEP 562): the names below load their submodule (and SymPy) on first use, so
# that a model loaded from the cache (nhcontrol.compiled.recipe) and the SymPy-free helpers
# (nhcontrol.modeling.parameters) cost no SymPy import.
from typing import TYPE_CHECKING as _TYPE_CHECKING

from .._util.lazy import lazy_getattr as _lazy_getattr

if _TYPE_CHECKING:  # the same names for type checkers and the API docs (never run)
    from .equations import EquationsOfMotion, derive_equations
    from .joints import add_joint_spring_damper
    from .parameters import check_parameters, override_parameters, parameter_values
    from .rotations import (PROPER_EULER_SEQUENCES, SEQUENCES, TAIT_BRYAN_SEQUENCES, euler_rotation,
                            rot_x, rot_y, rot_z)
    from .simplify import cheap_trig
    from .system import Body, Constraint, Load, MultibodySystem

_LAZY = {
    "EquationsOfMotion": "equations", "derive_equations": "equations",
    "check_parameters": "parameters", "override_parameters": "parameters",
    "parameter_values": "parameters",
    "PROPER_EULER_SEQUENCES": "rotations", "SEQUENCES": "rotations",
    "TAIT_BRYAN_SEQUENCES": "rotations", "euler_rotation": "rotations", "rot_x": "rotations",
    "rot_y": "rotations", "rot_z": "rotations",
    "cheap_trig": "simplify",
    "Body": "system", "Constraint": "system", "Load": "system", "MultibodySystem": "system",
    "add_joint_spring_damper": "joints",
}
_SUBMODULES = ("contacts", "hydraulics")


__getattr__ = _lazy_getattr(__name__, globals(), _LAZY, _SUBMODULES)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = ["MultibodySystem", "Body", "Constraint", "Load", "EquationsOfMotion", "derive_equations",
           "rot_x", "rot_y", "rot_z", "euler_rotation", "SEQUENCES", "PROPER_EULER_SEQUENCES",
           "TAIT_BRYAN_SEQUENCES", "cheap_trig", "check_parameters", "override_parameters",
           "parameter_values", "contacts", "hydraulics", "add_joint_spring_damper"]
