"""The doors of nhcontrol: models in, models and controllers out (ARCHITECTURE.md, ``interop``).

* [`sympy_to_casadi()`][nhcontrol.interop.sympy_to_casadi],
  [`casadi_function()`][nhcontrol.interop.casadi_function]: SymPy expressions as CasADi graphs.
* [`to_casadi()`][nhcontrol.interop.to_casadi]: a model's minimal-state dynamics
  ``f(X, u, p) → Ẋ`` and its Jacobians ``A, B`` as ``casadi.Function`` objects, by two routes
  (the symbolic graph, or the compiled kernels with nhcontrol's exact Jacobian).
* [`from_sympy_mechanics()`][nhcontrol.interop.from_sympy_mechanics]: a
  ``sympy.physics.mechanics`` ``System`` (or ``KanesMethod``) as a `MultibodySystem`.
* [`export_c()`][nhcontrol.interop.export_c] (also `CompiledModel.export_c`, CLI
  ``nhcontrol export-c``): standalone C99 sources of the model, its minimal-state right-hand
  side and the one-point third procedure; [`export_lqr_c()`][nhcontrol.interop.export_lqr_c]
  (also `LQRResult.export_c`): LQR gain tables.
* [`export_loop()`][nhcontrol.interop.export_loop] (also ``export_c`` of `MPCController`,
  `NMPCController`, `TVLQRController`; CLI ``nhcontrol export-c MODEL --controller``): the
  controllers (LTV-MPC, RTI NMPC, TV-LQR) and estimators (Kalman filter, EKF) as standalone
  C99 with the closed-loop harness ``nhc_loop``.

Optional dependencies (``casadi``, ``sympy.physics.mechanics``) are imported only when a function
that needs them is called.
"""

from __future__ import annotations

from .sympy_casadi import SUPPORTED_FUNCTIONS, casadi_function, require_casadi, sympy_to_casadi
from .casadi_export import CasadiModel, to_casadi
from .c_export import STATUS_CODES, export_c, export_lqr_c
from .c_controllers import export_loop
from .sympy_mechanics import from_sympy_mechanics

__all__ = ["from_sympy_mechanics", "to_casadi", "CasadiModel", "export_c", "export_lqr_c", "export_loop",
           "STATUS_CODES", "sympy_to_casadi", "casadi_function", "SUPPORTED_FUNCTIONS",
           "require_casadi"]
