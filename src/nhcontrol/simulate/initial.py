"""Consistent initial conditions (re-exported from `nhcontrol.reference.consistent`).

The implementation lives in ``reference`` so that ``linearize`` (``lin.from_deviation``) can use it
too; ``nhcontrol.simulate.consistent_initial_conditions`` stays the usual entry point.
"""

from __future__ import annotations

from ..reference.consistent import InitialConditions, consistent_initial_conditions

__all__ = ["InitialConditions", "consistent_initial_conditions"]
