"""nhcontrol.systems: LTI/LTV linear systems and their exact ZOH discretization.

See ``docs/dev/contracts.md`` (section 5) and ``docs/guide/ltv.md``.
"""

from .discrete import DiscreteLTV
from .discretize import DISCRETIZE_RTOL, discretize
from .ltv import LTVSystem, as_ltv
from .reduction import RESTRICT_RTOL, restrict
from .transform import change_of_variables

__all__ = [
    "LTVSystem", "discretize", "DiscreteLTV", "as_ltv", "DISCRETIZE_RTOL", "change_of_variables",
    "restrict", "RESTRICT_RTOL"
]
