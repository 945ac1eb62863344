"""Nonlinear simulation of a perturbed steady turn of a bicycle-like model (derived here).

The third check of the stability of steady turns (beside the constant Jacobian and the Floquet
multipliers of [`nhcontrol.analysis.steady_turns`][nhcontrol.analysis.steady_turns]).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .._util.errors import SimulationInputError
from ..models import bicycle_turns as bt
from .forward import forward_dynamics
from .initial import consistent_initial_conditions

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["turn_simulation"]


def turn_simulation(cm: CompiledModel, turn: "bt.SteadyTurn", *, duration: float = 10.0, perturbation: float = 0.01,
                    grow: float = 10.0, rtol: float = 1e-9, atol: float = 1e-11) -> dict:
    """Nonlinear simulation from a perturbed steady turn.

    The lean is perturbed by ``perturbation`` times the steady lean (at least
    ``perturbation * 1 deg``), the other independent coordinates and velocities are kept, and the
    dependent ones are made consistent
    ([`consistent_initial_conditions()`][nhcontrol.simulate.consistent_initial_conditions]).
    The deviation ``e(t) = max(|phi - phi0|, |delta - delta0|)`` is tracked for ``duration`` s.

    Raises
    ------
    SimulationInputError
        A non-positive or non-finite ``duration``, ``perturbation`` or ``grow``.

    Returns
    -------
    dict
        ``e0``, ``e_max``, ``e_end`` (max over the last second), ``stays_within`` (``e_max <=
        grow * e0``), ``diverges`` (``e_end > grow * e0``), ``duration``, ``t_end`` (the run
        stops early, diverged, once the deviation exceeds ``5 grow e0``), ``perturbation``.
    """
    for name, val in (("duration", duration), ("perturbation", perturbation), ("grow", grow)):
        if not (isinstance(val, (int, float)) and math.isfinite(val) and val > 0):
            raise SimulationInputError(f"turn_simulation: {name} must be a positive finite number, got {val!r}")
    c = list(turn.coordinates)
    ip, idl = c.index("phi_b"), c.index("delta")
    x = turn.x0.copy()
    dphi = perturbation * max(abs(x[ip]), math.radians(1.0))
    x[ip] += dphi
    part = bt.turn_partition(cm)
    ic = consistent_initial_conditions(cm, x, turn.xd0.copy(), independent=part["independent"],
                                       dependent=part["dependent"], p=turn.p)
    x0, xd0 = ic
    ts = np.linspace(0.0, duration, int(50 * duration) + 1)
    e_init = abs(float(x0[ip] - turn.x0[ip]))
    limit = 5.0 * grow * max(e_init, 1e-12)

    def escaped(t: float, x: Any, xd: Any) -> float:     # stop once far outside (diverged)
        return limit - max(abs(x[ip] - turn.x0[ip]), abs(x[idl] - turn.x0[idl]))

    escaped.terminal = True  # type: ignore[attr-defined]
    res = forward_dynamics(cm, (0.0, duration), x0, xd0, p=turn.p, t_eval=ts, rtol=rtol, atol=atol,
                           events=escaped)
    X = np.asarray(res.x)
    tt = np.asarray(res.t)
    e = np.maximum(np.abs(X[:, ip] - turn.x0[ip]), np.abs(X[:, idl] - turn.x0[idl]))
    e0 = float(e[0])
    t_end = float(tt[-1])
    stopped = t_end < duration - 1e-9
    last = tt >= t_end - 1.0
    e_max, e_end = float(e.max()), float(e[last].max())
    if stopped:          # the escape event ended the run: the deviation reached 5 grow e0
        e_max = e_end = max(e_max, limit)
    return {"duration": duration, "t_end": t_end, "perturbation": perturbation, "e0": e0, "e_max": e_max,
            "e_end": e_end, "stays_within": bool(e_max <= grow * e0), "diverges": bool(e_end > grow * e0),
            "grow": grow}
