"""nhcontrol.modeling — symbolic multibody models in absolute coordinates (thesis Ch. 2).

See ``docs/dev/contracts.md`` section 1 and ``docs/theory/newton_euler.md``.
"""

from .equations import EquationsOfMotion, derive_equations
from .parameters import check_parameters, override_parameters, parameter_values
from .rotations import (PROPER_EULER_SEQUENCES, SEQUENCES, TAIT_BRYAN_SEQUENCES, euler_rotation,
                        rot_x, rot_y, rot_z)
from .simplify import cheap_trig
from .system import Body, Constraint, Load, MultibodySystem
from . import contacts  # noqa: E402  (contact helpers, one module each)
from . import hydraulics  # noqa: E402  (lumped-fluid components, thesis Sect. 7.1.1)
from .joints import add_joint_spring_damper  # noqa: E402

__all__ = ["MultibodySystem", "Body", "Constraint", "Load", "EquationsOfMotion", "derive_equations",
           "rot_x", "rot_y", "rot_z", "euler_rotation", "SEQUENCES", "PROPER_EULER_SEQUENCES",
           "TAIT_BRYAN_SEQUENCES", "cheap_trig", "check_parameters", "override_parameters",
           "parameter_values", "contacts", "hydraulics", "add_joint_spring_damper"]
