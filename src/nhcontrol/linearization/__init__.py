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

from typing import TYPE_CHECKING

from .._util.lazy import lazy_getattr

if TYPE_CHECKING:   # the names below, for type checkers and the API pages (imported on first use)
    from .finite_difference import (FiniteDifferenceResult, finite_difference_jacobian,
                                    finite_difference_jacobian_first_order, index1_accelerations,
                                    reduced_ode_jacobian_fd)
    from .first import FirstProcedureResult, ReferencePoint, first_procedure
    from .first_order import (FirstOrderLinearization, identify_spurious_first_order,
                              linearize_first_order_system, linearize_with_first_order_states)
    from ._conditioning import BlockCondition, PartitionReport
    from .partition import Partition, PartitionIndices, suggest_partition
    from .prepared import Linearizer, prepare_linearizer
    from .result import (LinearizationResult, SpuriousIdentification, identify_spurious,
                         state_deviation)
    from .second import SecondProcedureResult, second_procedure
    from .signals import ReferenceSignals, reference_signals
    from .second_order import SECOND_ORDER_RTOL, second_order_matrices
    from .third import linearize, third_procedure

# name -> submodule that defines it.  Each submodule is imported when one of its names is first
# used, so that the prepared linearizer (``CompiledModel.linearizer``) loads only what it runs
# (``partition``, ``prepared``, ``_cpoint``), not the general path, the validation procedures
# or the result class.
_EXPORTS: dict[str, str] = {
    "linearize": "third",
    "Linearizer": "prepared",
    "prepare_linearizer": "prepared",
    "linearize_with_first_order_states": "first_order",
    "linearize_first_order_system": "first_order",
    "FirstOrderLinearization": "first_order",
    "identify_spurious_first_order": "first_order",
    "third_procedure": "third",
    "Partition": "partition",
    "PartitionIndices": "partition",
    "PartitionReport": "_conditioning",
    "BlockCondition": "_conditioning",
    "suggest_partition": "partition",
    "LinearizationResult": "result",
    "SpuriousIdentification": "result",
    "identify_spurious": "result",
    "state_deviation": "result",
    "ReferenceSignals": "signals",
    "reference_signals": "signals",
    # validation procedures (first/second numerical procedures, finite differences)
    "first_procedure": "first",
    "FirstProcedureResult": "first",
    "ReferencePoint": "first",
    "second_procedure": "second",
    "SecondProcedureResult": "second",
    "finite_difference_jacobian": "finite_difference",
    "reduced_ode_jacobian_fd": "finite_difference",
    "finite_difference_jacobian_first_order": "finite_difference",
    "index1_accelerations": "finite_difference",
    "FiniteDifferenceResult": "finite_difference",
    "second_order_matrices": "second_order",
    "SECOND_ORDER_RTOL": "second_order",
}

__all__ = [
    "linearize", "Linearizer", "prepare_linearizer", "linearize_with_first_order_states",
    "linearize_first_order_system", "FirstOrderLinearization", "identify_spurious_first_order",
    "third_procedure", "Partition", "PartitionIndices", "PartitionReport", "BlockCondition",
    "suggest_partition", "LinearizationResult", "SpuriousIdentification", "identify_spurious",
    "state_deviation", "ReferenceSignals", "reference_signals",
    "first_procedure", "FirstProcedureResult", "ReferencePoint", "second_procedure",
    "SecondProcedureResult", "finite_difference_jacobian", "reduced_ode_jacobian_fd",
    "finite_difference_jacobian_first_order", "index1_accelerations", "FiniteDifferenceResult",
    "second_order_matrices", "SECOND_ORDER_RTOL",
]                                   # the keys of _EXPORTS (tests/test_linearize_prepared.py)


__getattr__ = lazy_getattr(__name__, globals(), _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
