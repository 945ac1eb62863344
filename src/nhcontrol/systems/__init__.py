"""nhcontrol.systems: LTI/LTV linear systems and their exact ZOH discretization.

See ``docs/dev/contracts.md`` (section 5) and ``docs/guide/ltv.md``.
"""

from .discrete import DiscreteLTV

__all__ = ["DiscreteLTV"]
