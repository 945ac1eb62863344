"""IPOPT through cyipopt: the import with a clear error, and one solve with its statistics."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from numpy.typing import NDArray

from .._util.errors import OptimizationError
from .._util.reprs import concise_repr

INSTALL_HINT = ("install the optional extra: pip install 'nhcontrol[optimize]' (it installs "
                "cyipopt-wheels, the cyipopt wheel that bundles IPOPT)")


def require_cyipopt() -> Any:
    """Import and return ``cyipopt``, or raise `OptimizationError` naming the extra."""
    try:
        import cyipopt
    except ImportError as exc:
        raise OptimizationError("nhcontrol.optimize solves its nonlinear programs with IPOPT "
                                "through the optional dependency 'cyipopt'; " + INSTALL_HINT) from exc
    return cyipopt


@dataclass(frozen=True)
class NLPStats:
    """Statistics of one IPOPT solve: ``iterations``, wall ``time`` [s], ``status`` (IPOPT's
    code: 0 solved, 1 solved to acceptable level), ``message``, the sizes ``variables``,
    ``constraints``, ``jacobian_nonzeros``, and ``evaluation_time`` [s], the wall time spent
    in the evaluations IPOPT asked for (objective, gradient, constraints, Jacobian; the rest of
    ``time`` is IPOPT's own: its linear algebra and the cyipopt interface)."""

    __repr__ = concise_repr

    status: int
    message: str
    iterations: int
    time: float
    variables: int
    constraints: int
    jacobian_nonzeros: int
    evaluation_time: float = 0.0

    @property
    def success(self) -> bool:
        return self.status in (0, 1)


def solve_nlp(problem: Any, z0: NDArray[np.float64], lb: NDArray[np.float64], ub: NDArray[np.float64],
              cl: NDArray[np.float64], cu: NDArray[np.float64], *, tol: float, max_iterations: int,
              options: Mapping[str, Any] | None = None, x_scaling: NDArray[np.float64] | None = None,
              g_scaling: NDArray[np.float64] | None = None
              ) -> tuple[NDArray[np.float64], float, NLPStats]:
    """Solve with IPOPT (limited-memory Hessian); returns ``(z, objective, stats)``.

    `problem` has ``objective, gradient, constraints, jacobian, jacobianstructure``.
    """
    cyipopt = require_cyipopt()
    counter = {"it": 0, "eval": 0.0}
    clock = time.perf_counter

    def timed(fun: Any) -> Any:
        def call(*args: Any) -> Any:
            t0 = clock()
            try:
                return fun(*args)
            finally:
                counter["eval"] += clock() - t0
        return call

    class _Counting:
        objective = staticmethod(timed(problem.objective))
        gradient = staticmethod(timed(problem.gradient))
        constraints = staticmethod(timed(problem.constraints))
        jacobian = staticmethod(timed(problem.jacobian))

        def __getattr__(self, name: str) -> Any:
            return getattr(problem, name)

        def intermediate(self, alg_mod: int, iter_count: int, *args: Any) -> bool:
            counter["it"] = int(iter_count)
            return True

    nlp = cyipopt.Problem(n=z0.size, m=cl.size, problem_obj=_Counting(), lb=lb, ub=ub, cl=cl, cu=cu)
    opts = {"tol": float(tol), "max_iter": int(max_iterations), "print_level": 0,
            "hessian_approximation": "limited-memory", "sb": "yes",
            "acceptable_tol": max(1e-6, 100 * float(tol)), "acceptable_iter": 10}
    if x_scaling is not None:
        nlp.set_problem_scaling(obj_scaling=1.0, x_scaling=np.asarray(x_scaling, dtype=float),
                                g_scaling=None if g_scaling is None else np.asarray(g_scaling, dtype=float))
        opts["nlp_scaling_method"] = "user-scaling"   # the caller's options still win
    for key, val in {**opts, **dict(options or {})}.items():
        nlp.add_option(key, val)
    t0 = time.perf_counter()
    z, info = nlp.solve(np.asarray(z0, dtype=float))
    elapsed = time.perf_counter() - t0
    rows, _ = problem.jacobianstructure()
    msg = info["status_msg"]
    msg = msg.decode() if isinstance(msg, bytes) else str(msg)
    stats = NLPStats(status=int(info["status"]), message=msg, iterations=counter["it"], time=elapsed,
                     variables=int(z0.size), constraints=int(cl.size), jacobian_nonzeros=int(len(rows)),
                     evaluation_time=float(counter["eval"]))
    return np.asarray(z, dtype=float), float(info["obj_val"]), stats
