"""Forward dynamics with first-order auxiliary states (thesis Eq. (7.97)).

A mechanical model whose inputs ``u`` are auxiliary states ``z`` (chamber pressures ``p``)
obeying ``ż = H(x, ẋ, z, w)``, with further states ``w`` (spool positions ``U``) obeying
``ẇ = W(w, r)`` driven by references ``r`` (``U_ref``), is integrated as the index-1 DAE with
Baumgarte stabilisation of Eq. (7.97):

$$
\\begin{bmatrix} M & D^T \\\\ D & 0 \\end{bmatrix}
\\begin{bmatrix} \\ddot x \\\\ \\Lambda \\end{bmatrix} =
\\begin{bmatrix} Q(x, \\dot x, z) + Q_{ext}(t, x, \\dot x) \\\\
                 Q_d - 2\\beta_e D\\dot x - \\gamma_e^2 [C; 0] \\end{bmatrix},\\qquad
\\dot z = H,\\quad \\dot w = W,
$$

in the state ``y = [x, ẋ, z, w]`` with a stiff integrator (``Radau`` or ``BDF`` of
``scipy.integrate.solve_ivp``): the hydraulic modes are fast (about ``-2e4`` 1/s for the
four-bar of Sect. 7.3). ``r`` may be a constant, a function of time or a state feedback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp

from nhcontrol._util.errors import SolverError
from nhcontrol._util.validation import readonly
from nhcontrol.reference._eval import param_vector

from .forward import DEFAULT_MAX_EVALUATIONS, work_budget
from nhcontrol._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["FirstOrderSimulation", "forward_dynamics_first_order", "THESIS_BAUMGARTE"]

#: Baumgarte constants ``(β_e, γ_e)`` of Sect. 7.3.4 (1/s).
THESIS_BAUMGARTE = (50.0, 50.0)


@dataclass(frozen=True)
class FirstOrderSimulation:
    """Samples of a simulation with first-order states.

    Attributes
    ----------
    t : (N,) ndarray
    x, xd : (N, n) ndarray
    z : (N, r) ndarray
    w : (N, u) ndarray
    r : (N, k) ndarray
        References applied (``r(t, x, ẋ, z, w)`` at the samples).
    constraint_residual : float
        ``max |C(x)|`` over the samples.
    nfev : int
        Right-hand-side evaluations of the integrator.
    """

    __repr__ = concise_repr

    t: NDArray[np.float64]
    x: NDArray[np.float64]
    xd: NDArray[np.float64]
    z: NDArray[np.float64]
    w: NDArray[np.float64]
    r: NDArray[np.float64]
    constraint_residual: float
    nfev: int


def _as_reference(r: Any, k_hint: int | None) -> tuple[Callable[..., NDArray[np.float64]], int]:
    if callable(r):
        return r, -1
    arr = np.atleast_1d(np.asarray(r, dtype=float)).ravel()
    if not np.all(np.isfinite(arr)):
        raise SolverError(f"the reference r must be finite, got {arr.tolist()}")
    return (lambda t, x, xd, z, w: arr), arr.size


def forward_dynamics_first_order(cm: CompiledModel, t_span: tuple[float, float], x0: ArrayLike,
                                 xd0: ArrayLike,
                                 z0: ArrayLike, w0: ArrayLike = (), *,
                                 z_rate: Callable[..., Any] | None = None,
                                 w_rate: Callable[..., Any] | None = None, r: Any = 0.0,
                                 rates: Any = None,
                                 generalized_force: Callable[..., Any] | None = None,
                                 baumgarte: tuple[float, float] = THESIS_BAUMGARTE,
                                 method: Literal["Radau", "BDF", "LSODA"] = "Radau",
                                 rtol: float = 1e-8, atol: ArrayLike | None = None,
                                 t_eval: ArrayLike | None = None, max_step: float = np.inf,
                                 jacobian: Literal["initial", "update"] = "initial",
                                 p: Any = None, max_evaluations: int | None = DEFAULT_MAX_EVALUATIONS,
                                 time_limit: float | None = None) -> FirstOrderSimulation:
    """Integrate Eq. (7.97): mechanics with auxiliary first-order states ``z`` and ``w``.

    Parameters
    ----------
    cm : CompiledModel
        Mechanical model whose inputs ``u`` are the states ``z`` (same order).
    t_span : (float, float)
    x0, xd0 : (n,) array_like
        Initial coordinates and velocities (should satisfy the constraints).
    z0, w0 : array_like
        Initial auxiliary states (``w0`` empty with ``rates``).
    z_rate : callable
        ``z_rate(x, xd, z, w) -> (r,)`` (single point): ``H`` of Eq. (7.12).
    w_rate : callable
        ``w_rate(w, r) -> (u,)``: ``W`` of Eq. (7.13).
    r : array_like or callable
        References: a constant, or ``r(t, x, xd, z, w) -> (k,)`` (open loop or feedback). With
        ``rates``: the model's inputs that are not first-order states.
    rates : RateKernels, optional
        Instead of ``z_rate``/``w_rate``: the compiled rates of a model built with first-order
        states ([`compile_rates()`][nhcontrol.compiled.compile_rates]); ``z`` are then all its
        first-order states, the model's input vector is assembled from ``z`` and ``r``.
    generalized_force : callable, optional
        ``Q_ext(t, x, xd) -> (n,)``, added to ``Q`` (e.g. the torque pulse ``Q_M`` of Eq. (7.97)).
    baumgarte : (float, float)
        ``(β_e, γ_e)`` in 1/s; the thesis uses 50, 50.
    method : {"Radau", "BDF", "LSODA"}
        Stiff integrator of ``scipy.integrate.solve_ivp``.
    rtol : float
    atol : float or (2n + r + u,) array_like, optional
        Default: ``1e-10`` for ``x, ẋ`` and ``1e-10 max(1, |z0|)``, ``1e-10`` for ``z, w``
        (pressures of megapascals need their own scale).
    t_eval : array_like, optional
        Output times (default: the integrator's steps).
    max_step : float
    jacobian : {"initial", "update"}
        Iteration matrix of the implicit integrator. ``"initial"``: the Jacobian of the
        right-hand side at ``t0, y0`` (central differences, once), kept for the whole run: the
        accuracy is set by ``rtol``/``atol`` (the Jacobian only drives the Newton iterations),
        and it suits motions near an equilibrium at a fraction of the cost. ``"update"``: the
        integrator re-evaluates it by finite differences when its Newton iterations slow down.
    p : parameters, optional
    max_evaluations, time_limit : int or None, float or None
        Work budget in right-hand-side evaluations and wall-time limit in seconds, as in
        [`forward_dynamics`][nhcontrol.simulate.forward_dynamics]: a run that cannot finish
        within them stops with a `SolverError` saying how far it got.

    Returns
    -------
    FirstOrderSimulation

    Raises
    ------
    SolverError
        On bad options, a singular saddle-point matrix, non-finite rates or integrator failure.
    """
    if method not in ("Radau", "BDF", "LSODA"):
        raise SolverError(f"method must be a stiff integrator 'Radau', 'BDF' or 'LSODA', got "
                          f"{method!r} (the hydraulic modes are fast)")
    try:
        be, ge = (float(v) for v in baumgarte)
    except (TypeError, ValueError) as exc:
        raise SolverError(f"baumgarte must be a pair (beta_e, gamma_e), got {baumgarte!r}") from exc
    if not (be >= 0 and ge >= 0 and np.isfinite(be) and np.isfinite(ge)):
        raise SolverError(f"Baumgarte constants must be finite and non-negative, got {baumgarte!r}")
    n, m, ml = int(cm.n), int(cm.m), int(cm.m) + int(cm.l)
    x0 = np.asarray(x0, dtype=float).ravel()
    xd0 = np.asarray(xd0, dtype=float).ravel()
    z0 = np.atleast_1d(np.asarray(z0, dtype=float)).ravel()
    w0 = np.atleast_1d(np.asarray(w0, dtype=float)).ravel()
    if x0.size != n or xd0.size != n:
        raise SolverError(f"x0 and xd0 must have {n} entries for model {cm.name!r}, got "
                          f"{x0.size} and {xd0.size}")
    k_all = int(cm.ninputs)
    if rates is not None:
        if z_rate is not None or w_rate is not None or w0.size:
            raise SolverError("give either rates (a model built with first-order states) or "
                              "z_rate/w_rate/w0, not both")
        if z0.size != len(rates.states) or len(rates.states) + len(rates.inputs) != k_all:
            raise SolverError(f"z0 must have one entry per first-order state {list(rates.states)} "
                              f"of model {cm.name!r}, got {z0.size}")
        zi, ui = list(rates.state_index), list(rates.input_index)

        def z_rate(x: Any, xd: Any, z: Any, w: Any, rr: Any = None) -> Any:  # noqa: F811
            return rates.rates(x, xd, z, rr, pv)

        def w_rate(w: Any, rr: Any) -> Any:  # noqa: F811
            return np.zeros(0)
    else:
        if z_rate is None or w_rate is None:
            raise SolverError("z_rate and w_rate are required without rates")
        if z0.size != k_all:
            raise SolverError(f"z0 must have one entry per model input {list(cm.inputs)}, got {z0.size}")
    nz, nw = z0.size, w0.size
    pv = param_vector(cm, p)
    ref, _ = _as_reference(r, None)
    fused = getattr(cm, "dynamics_terms", None)
    K = np.zeros((n + ml, n + ml))

    budget = work_budget(float(t_span[0]), float(t_span[1]), max_evaluations, time_limit, method, cm.name)

    def rhs(t: float, y: NDArray[np.float64]) -> NDArray[np.float64]:
        budget.tick(t)
        x, xd, z, w = y[:n], y[n:2 * n], y[2 * n:2 * n + nz], y[2 * n + nz:]
        rr = np.atleast_1d(np.asarray(ref(t, x, xd, z, w), dtype=float))
        if rates is not None:
            u = np.empty(k_all)
            u[zi], u[ui] = z, rr
        else:
            u = z
        if fused is not None:
            T = fused(x, xd, u, pv)
            M, Q, D, Qd = T.M, T.Q, T.D, T.Qd
        else:
            M, Q, D, Qd = cm.M(x, u, pv), cm.Q(x, xd, u, pv), cm.D(x, u, pv), cm.Qd(x, xd, u, pv)
        Q = np.array(Q, dtype=float).reshape(n)
        if generalized_force is not None:
            Q = Q + np.asarray(generalized_force(t, x, xd), dtype=float).reshape(n)
        K[:n, :n] = np.reshape(M, (n, n))
        g = np.zeros(ml)
        if ml:
            D = np.reshape(D, (ml, n))
            K[:n, n:] = D.T
            K[n:, :n] = D
            vres = D @ xd
            if getattr(cm, "affine_names", ()):
                vres = vres + np.reshape(cm.b(x, z, pv), (ml,))
            g = np.reshape(Qd, (ml,)) - 2.0 * be * vres
            if m:
                g[:m] -= ge ** 2 * np.reshape(cm.C(x, u, pv), (m,))
        try:
            xdd = np.linalg.solve(K, np.concatenate([Q, g]))[:n]
        except np.linalg.LinAlgError as exc:
            raise SolverError(f"the saddle-point matrix of Eq. (7.97) of model {cm.name!r} is "
                              f"singular at t = {t:.6g}") from exc
        zd = np.asarray(z_rate(x, xd, z, w, rr) if rates is not None else z_rate(x, xd, z, w),
                        dtype=float).reshape(nz)
        wd = np.asarray(w_rate(w, rr), dtype=float).reshape(nw)
        out = np.concatenate([xd, xdd, zd, wd])
        if not np.all(np.isfinite(out)):
            raise SolverError(f"non-finite rates at t = {t:.6g} (z = {z.tolist()}, w = {w.tolist()}); "
                              "the motion left the domain of the rate equations")
        return out

    y0 = np.concatenate([x0, xd0, z0, w0])
    if atol is None:
        atol = np.concatenate([np.full(2 * n, 1e-10), 1e-10 * np.maximum(1.0, np.abs(z0)),
                               np.full(nw, 1e-10)])
    extra: dict[str, Any] = {}
    if jacobian == "initial":
        ta = float(t_span[0])
        step = 1e-7 * np.maximum(1.0, np.abs(y0))
        J0 = np.empty((y0.size, y0.size))
        for j in range(y0.size):
            e = np.zeros_like(y0)
            e[j] = step[j]
            J0[:, j] = (rhs(ta, y0 + e) - rhs(ta, y0 - e)) / (2 * step[j])
        extra["jac"] = J0
    elif jacobian != "update":
        raise SolverError(f"jacobian must be 'initial' or 'update', got {jacobian!r}")
    sol = solve_ivp(rhs, (float(t_span[0]), float(t_span[1])), y0, method=method, rtol=rtol,
                    atol=atol, t_eval=None if t_eval is None else np.asarray(t_eval, dtype=float),
                    max_step=max_step, **extra)
    if not sol.success:
        raise SolverError(f"{method} failed on model {cm.name!r}: {sol.message}; try a looser rtol "
                          f"or another stiff method")
    Y = sol.y.T
    X, XD = Y[:, :n], Y[:, n:2 * n]
    Z, Wst = Y[:, 2 * n:2 * n + nz], Y[:, 2 * n + nz:]
    R = np.array([np.atleast_1d(ref(ti, X[i], XD[i], Z[i], Wst[i])) for i, ti in enumerate(sol.t)],
                 dtype=float)
    if rates is not None:
        Uall = np.empty((len(sol.t), k_all))
        Uall[:, zi], Uall[:, ui] = Z, R
    else:
        Uall = Z
    C = np.asarray(cm.C(X, Uall, pv), dtype=float).reshape(len(sol.t), -1) if m else np.zeros((1, 1))
    return FirstOrderSimulation(t=readonly(sol.t), x=readonly(X), xd=readonly(XD), z=readonly(Z),
                                w=readonly(Wst), r=readonly(R),
                                constraint_residual=float(np.max(np.abs(C))), nfev=int(sol.nfev))
