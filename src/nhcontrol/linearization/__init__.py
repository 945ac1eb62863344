"""Exact linearization of constrained multibody systems (thesis Ch. 4, Sect. 8.1).

The product path is the third numerical procedure (Sect. 4.2.3, Eqs. (4.96)-(4.127)):
[`linearize()`][nhcontrol.linearization.linearize] with a [`Partition`][nhcontrol.linearization.Partition]
``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)), validated by
[`Partition.check()`][nhcontrol.linearization.Partition.check] or proposed by
[`suggest_partition()`][nhcontrol.linearization.suggest_partition].

The same function is the package's one-line entry point
[`nhcontrol.linearize()`][nhcontrol.linearize]:

```python
import nhcontrol
res = nhcontrol.linearize(model, reference, partition)      # same as linearization.linearize
from nhcontrol.linearization import Partition, suggest_partition, linearize
```

This package was called ``nhcontrol.linearize``; that import path still works
(``from nhcontrol.linearize import Partition`` gives this package's ``Partition``), except
``import nhcontrol.linearize as L``, which now binds the function: write
``import nhcontrol.linearization as L``.
"""

from __future__ import annotations

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
