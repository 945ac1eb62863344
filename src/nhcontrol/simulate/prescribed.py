"""Inverse dynamics of a partly prescribed motion (servo constraints), derived here.

Thesis Eq. (2.112) gives the actuations of a *fully* prescribed motion. When only some
coordinates ``q_p`` are prescribed — as many as there are inputs, e.g. the lean and twist a rider
imposes on a board — the others follow from the dynamics, and the inputs that realise the
prescription are unknowns of the same saddle-point system (2.119):

$$
\\begin{bmatrix} M & D^T & -A_u \\\\ D & 0 & 0 \\\\ S_p & 0 & 0 \\end{bmatrix}
\\begin{bmatrix} \\ddot x \\\\ \\Lambda \\\\ u \\end{bmatrix} =
\\begin{bmatrix} Q_0 \\\\ g \\\\ \\ddot q_p^* \\end{bmatrix},
$$

with ``Q = Q_0 + A_u u``, ``g`` the constraint rows of (2.119) (Baumgarte terms included) and
``S_p`` selecting ``q_p``. Because the accelerations of (2.119) are
affine in ``u`` when the inputs enter ``Q`` linearly and ``M``, ``D`` do not depend on them,
``ẍ(u) = a_0 + G u`` exactly, with ``a_0 = ẍ(0)`` and column ``j`` of ``G`` equal to
``ẍ(e_j) − a_0``; ``u`` solves ``S_p G u = q̈_p^* − S_p a_0`` (square, ``k`` prescribed coordinates
for ``k`` inputs). The target ``q̈_p^* = q̈_p(t) + k_d (q̇_p(t) − q̇_p) + k_p (q_p(t) − q_p)`` adds
proportional-derivative terms that vanish on the exact solution and only remove integration
drift (the prescription then holds like the holonomic constraints under Baumgarte).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import ModelError, SolverError
from .._util.validation import COND_MAX
from ..reference._eval import ModelEvaluator
from ._dynamics import Dynamics
from .forward import DEFAULT_BAUMGARTE, forward_dynamics

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["prescribed_motion", "AFFINE_RTOL"]

AFFINE_RTOL = 1e-7
"""Relative size (w.r.t. ``max(1, |ẍ|)``) accepted for the miss of the prescribed accelerations
after the affine solve and one refinement step (round-off of the saddle-point solves)."""

Prescription = Callable[[float], Sequence[float]]


class _ServoController:
    """``controller(t, x, ẋ) -> u`` that realises the prescribed accelerations exactly."""

    def __init__(self, dyn: Dynamics, idx: list[int], names: list[str], funcs: list[Prescription],
                 k: int, input_idx: list[int], kp: float, kd: float) -> None:
        self.dyn, self.idx, self.names, self.funcs = dyn, idx, names, funcs
        self.k, self.input_idx, self.kp, self.kd = k, input_idx, kp, kd

    def target(self, t: float) -> NDArray[np.float64]:
        out = np.empty((3, len(self.funcs)))
        for j, f in enumerate(self.funcs):
            val = np.asarray(f(t), dtype=float).reshape(-1)
            if val.shape != (3,) or not np.all(np.isfinite(val)):
                raise ModelError(f"the prescription of {self.names[j]!r} must return finite (q, q_d, q_dd) "
                                 f"at t = {t:g}, got {val.tolist()}")
            out[:, j] = val
        return out

    def __call__(self, t: float, x: NDArray[np.float64], xd: NDArray[np.float64]) -> NDArray[np.float64]:
        n, idx = self.dyn.n, self.idx
        q, qd, qdd = self.target(t)
        want = qdd + self.kd * (qd - xd[idx]) + self.kp * (q - x[idx])
        u = np.zeros(self.k)
        a0 = self.dyn.accel(t, x, xd, u)[:n]
        G = np.empty((len(idx), len(self.input_idx)))
        for c, j in enumerate(self.input_idx):
            u[j] = 1.0
            G[:, c] = self.dyn.accel(t, x, xd, u)[:n][idx] - a0[idx]
            u[j] = 0.0
        s = np.linalg.svd(G, compute_uv=False)
        if not (s[-1] > 0 and s[0] / s[-1] < COND_MAX):
            raise SolverError(
                f"at t = {t:g} the inputs {[self.dyn.ev.inputs[j] for j in self.input_idx]} cannot set the "
                f"accelerations of {self.names} (cond of the input-to-acceleration map = "
                f"{s[0] / s[-1] if s[-1] > 0 else float('inf'):.3g}); prescribe coordinates the inputs act on")
        u[self.input_idx] = np.linalg.solve(G, want - a0[idx])
        got = self.dyn.accel(t, x, xd, u)[:n]
        u[self.input_idx] += np.linalg.solve(G, want - got[idx])       # one refinement (round-off)
        got = self.dyn.accel(t, x, xd, u)[:n]
        err = float(np.max(np.abs(got[idx] - want)))
        scale = max(1.0, float(np.max(np.abs(want))), float(np.max(np.abs(got))))
        if not err <= AFFINE_RTOL * scale:
            raise SolverError(
                f"at t = {t:g} the accelerations of {self.names} are not affine in the inputs (miss "
                f"{err:.3g} after the exact affine solve): prescribed_motion needs inputs that enter Q "
                "linearly and a mass matrix and constraints independent of them")
        return u


def prescribed_motion(cm: CompiledModel, t_span: Sequence[float], x0: ArrayLike, xd0: ArrayLike,
                      prescribed: Mapping[str, Prescription], *, inputs: Sequence[str] | None = None,
                      p: ArrayLike | Mapping[str, float] | None = None, gains: tuple[float, float] = (400.0, 40.0),
                      baumgarte: tuple[float, float] = DEFAULT_BAUMGARTE, **kwargs: Any) -> Any:
    """Simulate with some coordinates prescribed and return the inputs that realise them.

    Parameters
    ----------
    cm : CompiledModel
    t_span : (t0, tf)
    x0, xd0 : (n,) array_like
        Consistent initial state whose prescribed entries match the prescription at ``t0``.
    prescribed : mapping coordinate name -> callable ``f(t) -> (q, q̇, q̈)``
        The prescribed coordinates and their motion (value, rate, acceleration).
    inputs : sequence of str, optional
        The inputs that realise it (default: all of ``cm.inputs``); as many as prescribed
        coordinates. Other inputs are zero.
    p : parameters, optional
    gains : (k_p, k_d)
        Drift correction in 1/s² and 1/s (default a critically damped 20 rad/s).
    baumgarte : (α, β)
        As [`forward_dynamics()`][nhcontrol.simulate.forward_dynamics].
    **kwargs
        Passed to [`forward_dynamics()`][nhcontrol.simulate.forward_dynamics] (``t_eval``, ``rtol``, ``atol``, ``method``, ...).

    Returns
    -------
    SimulationResult
        ``res.u`` holds the required inputs at ``res.t``; the prescribed coordinates follow the
        prescription to the integration tolerance.

    Raises
    ------
    ModelError
        Unknown names, counts that differ, a prescription of the wrong form.
    SolverError
        The inputs cannot set the prescribed accelerations (singular map, the names are given),
        or they do not enter affinely.
    """
    ev = ModelEvaluator(cm, p)
    coords, ins = list(ev.coordinates), list(ev.inputs)
    names = list(prescribed)
    bad = [s for s in names if s not in coords]
    if bad or not names:
        raise ModelError(f"prescribed must map coordinate names of {ev.name!r} to functions of time; "
                         f"unknown: {bad or names} (coordinates {coords})")
    use = ins if inputs is None else ([inputs] if isinstance(inputs, str) else list(inputs))
    badin = [s for s in use if s not in ins]
    if badin or len(set(use)) != len(use) or len(use) != len(names):
        raise ModelError(f"inputs must be {len(names)} distinct input names of {ev.name!r} (one per prescribed "
                         f"coordinate {names}), got {use}" + (f"; unknown: {badin} (inputs {ins})" if badin else ""))
    funcs = [prescribed[s] for s in names]
    if not all(callable(f) for f in funcs):
        raise ModelError("each prescription must be a callable f(t) -> (q, q_d, q_dd)")
    kp, kd = (float(g) for g in gains)
    ctrl = _ServoController(Dynamics(ev, *baumgarte), [coords.index(s) for s in names], names, funcs,
                            len(ins), [ins.index(s) for s in use], kp, kd)
    return forward_dynamics(cm, t_span, x0, xd0, p=ev.p, baumgarte=baumgarte, controller=ctrl, **kwargs)
