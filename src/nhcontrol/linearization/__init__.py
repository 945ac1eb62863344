"""Exact linearization of constrained multibody systems (thesis Ch. 4, Sect. 8.1).

The product path is the third numerical procedure (Sect. 4.2.3, Eqs. (4.96)-(4.127)):
[`linearize()`][nhcontrol.linearize.linearize] with a [`Partition`][nhcontrol.linearize.Partition]
``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)), validated by
[`Partition.check()`][nhcontrol.linearize.Partition.check] or proposed by
[`suggest_partition()`][nhcontrol.linearize.suggest_partition].

The module itself is callable:

```python
import nhcontrol
res = nhcontrol.linearize(model, reference, partition)      # same as linearize.linearize
from nhcontrol.linearize import Partition, suggest_partition, linearize
```
"""

from __future__ import annotations

import sys
import types
from typing import Any

from .partition import (BlockCondition, Partition, PartitionIndices, PartitionReport,
                        suggest_partition)
from .result import LinearizationResult, SpuriousIdentification, identify_spurious, state_deviation
from .third import linearize, third_procedure
from .prepared import Linearizer, prepare_linearizer
from .first_order import (FirstOrderLinearization, identify_spurious_first_order,
                          linearize_first_order_system, linearize_with_first_order_states)

__all__ = [
    "linearize",
    "Linearizer",
    "prepare_linearizer",
    "linearize_with_first_order_states",
    "linearize_first_order_system",
    "FirstOrderLinearization",
    "identify_spurious_first_order",
    "third_procedure",
    "Partition",
    "PartitionIndices",
    "PartitionReport",
    "BlockCondition",
    "suggest_partition",
    "LinearizationResult",
    "SpuriousIdentification",
    "identify_spurious",
    "state_deviation",
]


class _CallableModule(types.ModuleType):
    """Module type whose instances delegate ``__call__`` to [`linearize()`][nhcontrol.linearize.linearize]."""

    def __call__(self, *args: Any, **kwargs: Any) -> LinearizationResult:
        return linearize(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

# Validation procedures (first/second numerical procedures, finite differences) are added
# below by their owner.
from .finite_difference import (FiniteDifferenceResult, finite_difference_jacobian,  # noqa: E402
                                finite_difference_jacobian_first_order, index1_accelerations,
                                reduced_ode_jacobian_fd)
from .first import FirstProcedureResult, ReferencePoint, first_procedure  # noqa: E402
from .second import SecondProcedureResult, second_procedure  # noqa: E402

__all__ += [
    "first_procedure", "FirstProcedureResult", "ReferencePoint", "second_procedure",
    "SecondProcedureResult", "finite_difference_jacobian", "reduced_ode_jacobian_fd",
    "finite_difference_jacobian_first_order",
    "index1_accelerations", "FiniteDifferenceResult",
]

from .second_order import SECOND_ORDER_RTOL, second_order_matrices  # noqa: E402

__all__ += ["second_order_matrices", "SECOND_ORDER_RTOL"]
