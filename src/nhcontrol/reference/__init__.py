"""nhcontrol.reference — reference motions, inverse dynamics and residual checks.

A [`Reference`][nhcontrol.reference.Reference] carries ``x0(t), ẋ0(t), ẍ0(t), Λ0(t), u0(t)``
(contract section 3);
[`inverse_dynamics()`][nhcontrol.reference.inverse_dynamics] gives the multipliers (and actuations)
of a prescribed motion,
Eq. (2.112); [`consistent_initial_conditions()`][nhcontrol.reference.consistent_initial_conditions]
makes ``(x, ẋ)`` satisfy the constraints;
[`friction_utilisation()`][nhcontrol.reference.friction_utilisation] gives the wheels' contact
forces from the multipliers and their friction utilisation ``|F_t| / (μ N)``;
[`Reference.check()`][nhcontrol.reference.Reference.check] reports the residuals in the constraints
and the
equations of motion as a [`ResidualReport`][nhcontrol.reference.ResidualReport];
[`check_admissible()`][nhcontrol.reference.check_admissible] (run when a reference is built and by
`nhcontrol.linearize`) refuses a motion whose residuals exceed ``tol`` relative to the size of
their terms.
"""

from .admissibility import (ADMISSIBILITY_TOL, SAMPLED_ADMISSIBILITY_TOL, AdmissibilityReport,
                            admissibility_report, check_admissible)
from .consistent import InitialConditions, consistent_initial_conditions
from .inverse import (INVERSE_DYNAMICS_TOL, InverseDynamicsResult, RankDeficiencyWarning,
                      inverse_dynamics)
from .family import reference_family, reference_points
from .friction import (FrictionError, FrictionLimitWarning, FrictionUtilisation,
                       friction_utilisation, wheel_contacts)
from .reference import CHECK_TOL, Reference, ReferenceSamples, StateComponent
from .residuals import ResidualReport

__all__ = [
    "Reference",
    "reference_family",
    "reference_points",
    "ReferenceSamples",
    "ResidualReport",
    "InverseDynamicsResult",
    "RankDeficiencyWarning",
    "inverse_dynamics",
    "INVERSE_DYNAMICS_TOL",
    "CHECK_TOL",
    "StateComponent",
    "InitialConditions",
    "consistent_initial_conditions",
    "AdmissibilityReport",
    "admissibility_report",
    "check_admissible",
    "ADMISSIBILITY_TOL",
    "SAMPLED_ADMISSIBILITY_TOL",
    "friction_utilisation",
    "FrictionUtilisation",
    "FrictionError",
    "wheel_contacts",
    "FrictionLimitWarning",
]
