"""nhcontrol.analysis: transition matrices, controllability (Kalman, PBH, Gramians,
Silverman–Meadows, the Kalman decomposition with named conserved directions) and Floquet
analysis of linear systems (see docs/dev/contracts.md).

Numbers in, numbers out: every function accepts an ``nhcontrol.systems.LTVSystem``, a
python-control ``StateSpace`` or (where it applies) a ``DiscreteLTV``.
"""

from .controllability import (ControllabilityResult, PBHMode, RankResult, controllability,
                              ctrb_matrix, rank_decision)
from .floquet import FloquetResult, floquet
from .observability import (ObservabilityGramianResult, ObservabilityResult, dual_system,
                            observability, observability_gramian, obsv_matrix)
from .gramian import GramianResult, gramian
from .silverman_meadows import SilvermanMeadowsResult, silverman_meadows
from .transition import transition_matrix

__all__ = [
    "controllability", "gramian", "silverman_meadows", "floquet", "RankResult", "rank_decision",
    "ctrb_matrix", "ControllabilityResult", "PBHMode", "transition_matrix", "GramianResult",
    "SilvermanMeadowsResult", "FloquetResult", "observability", "ObservabilityResult",
    "observability_gramian", "ObservabilityGramianResult", "obsv_matrix", "dual_system",
]

# Other analysis modules append their imports below (e.g. stability sweeps).
from .stability import (CriticalPoint, EigenvalueSweep, StructuralZeros, charpoly,  # noqa: E402
                        critical_points, eigenvalues_vs_parameter, match_spectra,
                        spectral_abscissa, structural_zeros)

__all__ += [
    "CriticalPoint", "EigenvalueSweep", "StructuralZeros", "charpoly", "critical_points",
    "eigenvalues_vs_parameter", "match_spectra", "spectral_abscissa", "structural_zeros",
]
from .relative_equilibrium import (MARGINAL_RTOL, RelativeEquilibriumLinearization,  # noqa: E402
                                   charpoly_root, linearize_relative_equilibrium, stability_threshold)
__all__ += ["MARGINAL_RTOL", "RelativeEquilibriumLinearization", "charpoly_root",
            "linearize_relative_equilibrium", "stability_threshold"]
from .steady_turns import (TurnStability, stability_boundary, stable_ranges, turn_floquet,  # noqa: E402
                           turn_stability)
__all__ += ["TurnStability", "stability_boundary", "stable_ranges", "turn_floquet", "turn_stability"]
from .decomposition import (BALANCE_LOG2, DECOMPOSITION_RTOL, KalmanDecomposition,  # noqa: E402
                            StateCombination,
                            echelon_combinations, kalman_decomposition, pbh_directions)
__all__ += ["BALANCE_LOG2", "DECOMPOSITION_RTOL", "KalmanDecomposition", "StateCombination", "echelon_combinations",
            "kalman_decomposition", "pbh_directions"]
