"""nhcontrol.simulate — forward dynamics of the nonlinear model and of linear systems.

[`forward_dynamics()`][nhcontrol.simulate.forward_dynamics] integrates the index-1 DAE with
Baumgarte stabilisation, Eq. (2.119),
open or closed loop (a discrete controller with zero-order hold);
[`consistent_initial_conditions()`][nhcontrol.simulate.consistent_initial_conditions]
projects initial conditions on the constraints;
[`simulate_discrete()`][nhcontrol.simulate.simulate_discrete] and
[`simulate_ltv()`][nhcontrol.simulate.simulate_ltv] simulate linear (LTV/LTI, discrete/continuous)
systems;
[`forward_dynamics_first_order()`][nhcontrol.simulate.forward_dynamics_first_order] integrates
models with first-order auxiliary states (hydraulic pressures and spools, Eq. (7.97)) with a
stiff integrator; [`prescribed_motion()`][nhcontrol.simulate.prescribed_motion] finds the inputs
that realise prescribed coordinates (inverse dynamics of a partly prescribed motion);
[`closed_loop_piecewise_linear()`][nhcontrol.simulate.closed_loop_piecewise_linear] closes a
sampled loop whose controller commands inputs and their rates (the plant sees
``u(t) = u_k + u̇_k (t − t_k)`` over each sample);
[`output_feedback_loop()`][nhcontrol.simulate.output_feedback_loop] closes a sampled loop with
sensors (the declared outputs), seeded measurement and process noise, an estimator and a
controller.
"""

from .forward import DEFAULT_BAUMGARTE, ConditioningWarning, forward_dynamics
from .first_order import THESIS_BAUMGARTE, FirstOrderSimulation, forward_dynamics_first_order
from .initial import InitialConditions, consistent_initial_conditions
from .linear import LinearSimulationResult, simulate_discrete, simulate_ltv
from .piecewise import PiecewiseLinearLoop, closed_loop_piecewise_linear
from .nlsys import ConstraintDrift, constraint_drift, to_nlsys
from .output_feedback import OutputFeedbackResult, output_feedback_loop
from .prescribed import prescribed_motion
from .result import SimulationResult, SimulationSamples
from .turns import turn_simulation

__all__ = [
    "forward_dynamics",
    "consistent_initial_conditions",
    "simulate_discrete",
    "simulate_ltv",
    "SimulationResult",
    "SimulationSamples",
    "InitialConditions",
    "LinearSimulationResult",
    "ConditioningWarning",
    "DEFAULT_BAUMGARTE",
    "to_nlsys",
    "constraint_drift",
    "ConstraintDrift",
    "forward_dynamics_first_order",
    "FirstOrderSimulation",
    "THESIS_BAUMGARTE",
    "prescribed_motion",
    "closed_loop_piecewise_linear",
    "PiecewiseLinearLoop",
    "output_feedback_loop",
    "OutputFeedbackResult",
    "turn_simulation",
]
