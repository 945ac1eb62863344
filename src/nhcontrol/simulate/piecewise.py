"""Sampled closed loop whose controller commands inputs and their rates: over each sample the
plant sees ``u(t) = u_k + u̇_k (t − t_k)`` with ``u̇(t) = u̇_k``.

The sampled-controller path of [`forward_dynamics()`][nhcontrol.simulate.forward_dynamics]
holds inputs (``u̇ = 0``); an input that enters the constraints (an assigned steering angle)
then jumps at the samples and the velocities are re-projected. Commanding the rate as well keeps
such an input continuous and its rate exactly the commanded one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nhcontrol._util.errors import SimulationInputError, SolverError
from nhcontrol._util.memory import check_allocation
from nhcontrol._util.work import check_evaluations

from .controllers import _is_tracking_controller
from .forward import DEFAULT_MAX_EVALUATIONS, MIN_EVALUATIONS_PER_STEP, forward_dynamics
from nhcontrol._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["PiecewiseLinearLoop", "closed_loop_piecewise_linear"]


@dataclass(frozen=True)
class PiecewiseLinearLoop:
    """Result of [`closed_loop_piecewise_linear`][nhcontrol.simulate.closed_loop_piecewise_linear].

    Attributes
    ----------
    t : (M,) ndarray
        Output times (``points_per_step + 1`` per sample, shared ends once).
    x, xd : (M, n) ndarray
        Coordinates and velocities of the nonlinear model.
    u, ud : (M, k) ndarray
        Inputs ``u_k + u̇_k (t − t_k)`` and their rates ``u̇_k`` the plant saw at ``t``.
    t_u : (K,) ndarray
        Sample instants ``t_k``.
    u_k, ud_k : (K, k) ndarray
        Commanded inputs and rates at the samples.
    """

    __repr__ = concise_repr

    t: NDArray[np.float64]
    x: NDArray[np.float64]
    xd: NDArray[np.float64]
    u: NDArray[np.float64]
    ud: NDArray[np.float64]
    t_u: NDArray[np.float64]
    u_k: NDArray[np.float64]
    ud_k: NDArray[np.float64]


class _Ramp:
    """Plant inputs over one sample: ``u(t) = u_k + u̇_k (t − t_k)`` and ``u̇(t) = u̇_k``."""

    def __init__(self, t_k: float, u_k: NDArray[np.float64], ud_k: NDArray[np.float64]) -> None:
        self.t_k, self.u_k, self.ud_k = t_k, u_k, ud_k

    def u(self, t: float) -> NDArray[np.float64]:
        return self.u_k + self.ud_k * (t - self.t_k)

    def ud(self, t: float) -> NDArray[np.float64]:
        return self.ud_k


def closed_loop_piecewise_linear(
        cm: CompiledModel, law: Callable[[int, float, NDArray, NDArray, NDArray], tuple[ArrayLike, ArrayLike]],
        t_final: float, x0: ArrayLike, xd0: ArrayLike, u0: ArrayLike, *, sample_time: float,
        p: dict | None = None, rtol: float = 1e-8, atol: float = 1e-10,
        points_per_step: int = 4, max_evaluations: int | None = DEFAULT_MAX_EVALUATIONS,
        time_limit: float | None = None) -> PiecewiseLinearLoop:
    """Sampled closed loop whose controller commands inputs *and* their rates.

    At ``t_k = k h`` the law ``law(k, t_k, x, xd, u_now) -> (u_k, u̇_k)`` sees the state and the
    inputs ``u_now`` the plant has at ``t_k`` (``u0`` at ``t_0``, the end of the previous ramp
    after); over ``[t_k, t_k + h]`` the nonlinear model (``forward_dynamics``) is driven by

    $$
    u(t) = u_k + \\dot u_k\\,(t - t_k), \\qquad \\dot u(t) = \\dot u_k,
    $$

    so an input that enters the constraints (an assigned steering angle) stays continuous when
    the law keeps ``u_k = u_now`` in its columns: no velocity jump is projected, and its rate is
    exactly the commanded ``u̇_k``.

    Parameters
    ----------
    cm : CompiledModel
    law : callable or TrackingController
        ``law(k, t_k, x (n,), xd (n,), u_now (k,)) -> (u_k (k,), u̇_k (k,))``; or one of
        nhcontrol's controller objects (``nhcontrol.design.TrackingController``: held inputs,
        ``u_k = ctrl.control(t_k, [x; ẋ])``, ``u̇_k = 0``; its ``dt`` must equal
        ``sample_time``; it is reset first).
    t_final : float
        End time [s]; ``round(t_final / h)`` samples are taken.
    x0, xd0 : (n,) array_like
        Initial coordinates and velocities.
    u0 : (k,) array_like
        Inputs at ``t = 0`` (passed to the first call of ``law`` as ``u_now``).
    sample_time : float
        Period ``h`` [s].
    p : dict, optional
        Parameters of the plant that differ from the model's defaults.
    rtol, atol : float
        Integration tolerances.
    points_per_step : int
        Output points per sample (plus the shared end point).
    max_evaluations : int or None, default `DEFAULT_MAX_EVALUATIONS`
        Work budget of the whole loop in right-hand-side evaluations. Counted before the first
        sample (every sample costs at least one DOP853 step, 11 evaluations), projected from the
        rate of the samples done (after 3 samples), and passed on to each sample's
        ``forward_dynamics``. None: no budget (then only ``$NHCONTROL_MAX_ITERATIONS`` samples
        at most).
    time_limit : float or None
        Wall-time limit of the whole loop [s].

    Returns
    -------
    PiecewiseLinearLoop

    Raises
    ------
    SimulationInputError
        A non-positive ``sample_time`` or ``t_final`` shorter than one sample, ``law``
        returning arrays of the wrong shape, or a loop longer than the work budget allows
        (counted before it starts: ``t_final = 1e9, sample_time = 1e-3`` is refused at once).
    SolverError
        The budget or the time limit runs out during the loop (the message says how far it got).
    """
    h = float(sample_time)
    if not (math.isfinite(h) and h > 0):
        raise SimulationInputError(f"sample_time must be a positive number of seconds, got {sample_time!r}")
    try:
        tfin = float(t_final)
    except (TypeError, ValueError) as exc:
        raise SimulationInputError(f"t_final must be a number of seconds, got {t_final!r}") from exc
    if not math.isfinite(tfin):
        raise SimulationInputError(f"t_final must be finite, got {t_final!r}")
    if max_evaluations is not None and (isinstance(max_evaluations, bool) or not isinstance(max_evaluations, int)
                                        or max_evaluations < 1):
        raise SimulationInputError(f"max_evaluations must be a positive integer or None, got {max_evaluations!r}")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and math.isfinite(time_limit)
                                       and time_limit > 0):
        raise SimulationInputError(f"time_limit must be a positive number of seconds or None, got {time_limit!r}")
    what = (f"closed_loop_piecewise_linear(t_final={tfin:g}, sample_time={h:g}) of model "
            f"{getattr(cm, 'name', '?')!r}: {tfin / h:.6g} samples")
    fix = ("shorten t_final, lengthen sample_time, or raise max_evaluations (None: no budget) if a loop "
           "this long is intended")
    check_evaluations(tfin / h, MIN_EVALUATIONS_PER_STEP["DOP853"], max_evaluations, what,
                      error=SimulationInputError, hint=fix)
    if _is_tracking_controller(law):
        ctrl = law
        if abs(float(ctrl.dt) - h) > 1e-12 * h:
            raise SimulationInputError(f"sample_time={h} disagrees with the controller's dt = {ctrl.dt}")
        ctrl.reset()

        def law(k: int, t: float, x: NDArray, xd: NDArray, u_now: NDArray) -> tuple:
            u = np.asarray(ctrl.control(t, np.concatenate([x, xd])), dtype=float)
            return u, np.zeros_like(u)
    nsteps = int(round(tfin / h))
    if nsteps < 1:
        raise SimulationInputError(f"t_final = {t_final!r} is shorter than one sample (h = {h:g} s); "
                          "give t_final >= sample_time")
    check_allocation(8.0 * nsteps * (points_per_step + 1) * (2 * len(cm.coordinates) + 2 * len(cm.inputs) + 1),
                     what + " (the outputs)", error=SimulationInputError, hint=fix)
    start = time.perf_counter()
    used = 0
    x, xd = np.asarray(x0, dtype=float), np.asarray(xd0, dtype=float)
    u_now = np.asarray(u0, dtype=float)
    k_in = len(cm.inputs)
    ts, xs, xds, us, uds, t_u, uks, udks = [], [], [], [], [], [], [], []
    for k in range(nsteps):
        t = k * h
        u_k, ud_k = (np.asarray(v, dtype=float) for v in law(k, t, x, xd, u_now))
        if u_k.shape != (k_in,) or ud_k.shape != (k_in,):
            raise SimulationInputError(f"law(k, t, x, xd, u_now) must return two arrays of shape "
                              f"({k_in},) (inputs {list(cm.inputs)}), got {u_k.shape} and "
                              f"{ud_k.shape} at t = {t:.6g}")
        ramp = _Ramp(t, u_k, ud_k)
        left = None if max_evaluations is None else max(1, max_evaluations - used)
        tleft = None if time_limit is None else time_limit - (time.perf_counter() - start)
        if tleft is not None and tleft <= 0:
            raise SolverError(f"{what}: the wall-time limit time_limit={time_limit:g} s is reached at "
                              f"sample {k} of {nsteps} (t = {t:.6g}); raise time_limit or shorten t_final")
        sim = forward_dynamics(cm, (t, t + h), x, xd, u=ramp.u, ud=ramp.ud, p=p, rtol=rtol,
                               atol=atol, t_eval=np.linspace(t, t + h, points_per_step + 1),
                               max_evaluations=left, time_limit=tleft)
        used += int(sim.nfev)
        if max_evaluations is not None and k >= 2 and used / (k + 1) * nsteps > max_evaluations:
            raise SolverError(f"{what}: at the rate of the first {k + 1} samples ({used / (k + 1):.3g} "
                              f"right-hand-side evaluations each) the loop needs about "
                              f"{used / (k + 1) * nsteps:.3g}, more than max_evaluations={max_evaluations}; "
                              f"{fix}")
        keep = slice(None) if k == nsteps - 1 else slice(0, -1)
        tk = np.asarray(sim.t)[keep]
        ts.append(tk)
        xs.append(np.asarray(sim.x)[keep])
        xds.append(np.asarray(sim.xd)[keep])
        us.append(u_k + ud_k * (tk - t)[:, None])
        uds.append(np.broadcast_to(ud_k, (tk.size, k_in)))
        t_u.append(t)
        uks.append(u_k)
        udks.append(ud_k)
        x, xd, u_now = np.asarray(sim.x)[-1], np.asarray(sim.xd)[-1], u_k + ud_k * h
    return PiecewiseLinearLoop(t=np.concatenate(ts), x=np.concatenate(xs),
                               xd=np.concatenate(xds), u=np.concatenate(us),
                               ud=np.concatenate(uds), t_u=np.asarray(t_u),
                               u_k=np.asarray(uks), ud_k=np.asarray(udks))
