"""Optimal trajectories and parameter identification on the exact minimal-state dynamics.

* [`optimal_trajectory()`][nhcontrol.optimize.optimal_trajectory]: direct collocation
  (trapezoidal, Hermite–Simpson) of ``Ẋ = f(X, u)``, ``X = [x_ai, ẋ_ai, x_ad]`` (Eq. (4.123)),
  with the exact sparse constraint Jacobian from the kernels of the third procedure; IPOPT
  through cyipopt (optional extra ``optimize``). The result carries an admissible
  [`Reference`][nhcontrol.reference.Reference] that `nhcontrol.linearize` and the controllers
  of `nhcontrol.design` take directly.
* [`identify()`][nhcontrol.optimize.identify]: output-error parameter identification by
  collocation, with the exact derivative of the dynamics with respect to the parameters.

Theory: docs/theory/optimize.md.
"""

from __future__ import annotations

from ._ipopt import NLPStats, require_cyipopt
from ._paths import PathConstraint
from .identification import IdentificationResult, identify
from .trajectory import METHODS, TrajectorySolution, optimal_trajectory

__all__ = ["optimal_trajectory", "TrajectorySolution", "identify", "IdentificationResult",
           "NLPStats", "PathConstraint", "METHODS", "require_cyipopt"]
