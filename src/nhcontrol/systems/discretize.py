"""Exact zero-order-hold discretization of LTI and LTV systems.

For piecewise-constant inputs ``u(t) = u_k`` on ``[t_k, t_{k+1})`` the solution of
``ẋ = A(t) x + B(t) u`` is, exactly,

$$
x_{k+1} = \\Phi(t_{k+1}, t_k)\\, x_k + \\Big(\\int_{t_k}^{t_{k+1}} \\Phi(t_{k+1}, \\tau) B(\\tau)\\,
d\\tau\\Big)\\, u_k ,
$$

with the state transition matrix ``Φ`` of Sect. 6.1 (Eq. (8.85) uses the same ``Φ``). Both blocks
are the transition matrix of the augmented system ``d/dt [x; u] = [[A, B], [0, 0]] [x; u]`` over
one step, which is what is integrated here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import expm

from .._util.errors import LinearSystemError, SolverError
from .._util.memory import check_allocation
from .._util.work import check_iterations
from .._util.validation import as_real
from .discrete import DiscreteLTV, _check_steps
from .ltv import LTVSystem, as_ltv

if TYPE_CHECKING:  # python-control is imported where it is used (it takes ~1 s)
    import control

__all__ = ["discretize", "DISCRETIZE_RTOL"]

DISCRETIZE_RTOL = 1e-11
"""Default relative accuracy of the LTV discretization."""

# Gauss–Legendre nodes of order 6 (3 points) on [0, 1].
_GL3 = np.array([0.5 - np.sqrt(15.0) / 10.0, 0.5, 0.5 + np.sqrt(15.0) / 10.0])


def discretize(sys: LTVSystem | control.StateSpace, dt: float, *, t0: float = 0.0,
               steps: int | None = None, method: Literal["zoh"] = "zoh",
               integrator: Literal["magnus", "ivp"] = "magnus", rtol: float = DISCRETIZE_RTOL,
               max_substeps: int = 1024) -> DiscreteLTV:
    """Zero-order-hold discretization ``x[k+1] = Ad[k] x[k] + Bd[k] u[k]``.

    Parameters
    ----------
    sys : LTVSystem or control.StateSpace
        Continuous-time system (a ``StateSpace`` is treated as time invariant).
    dt : float
        Sampling time ``> 0``.
    t0 : float, default 0.0
        Time of sample 0.
    steps : int, optional
        Number of steps ``N``. Default: as many as fit in ``t_range``; one period for periodic
        systems; ``1`` for time-invariant systems.
    method : {"zoh"}
        Hold of the input (only zero-order hold, exact for piecewise-constant inputs).
    integrator : {"magnus", "ivp"}, default "magnus"
        ``"magnus"``: sixth-order Magnus expansion (three Gauss–Legendre nodes, Blanes–Casas–Ros)
        of the augmented matrix, with every step split into ``m`` equal substeps and ``m`` doubled
        per step until two successive results agree to ``rtol`` (the kept result is ~63× more
        accurate than that estimate). ``"ivp"``: one ``solve_ivp`` (DOP853) integrating the
        augmented matrix ODE of all steps at once in local time ``s ∈ [0, dt]`` (restarted at every
        step by construction), ``rtol`` and ``atol = rtol * 1e-3``.
    rtol : float, default 1e-11
    max_substeps : int, default 1024
        Largest ``m`` for the Magnus scheme before `SolverError`.

    Returns
    -------
    DiscreteLTV
        ``Ad[k] = Φ(t_{k+1}, t_k)``, ``Bd[k] = ∫ Φ(t_{k+1}, τ) B(τ) dτ``, ``t_k = t0 + k dt``;
        ``breakpoints``: those of ``sys`` on the grid's interval.

    Raises
    ------
    LinearSystemError
        Bad ``dt``/``steps``/``method``; ``TimeRangeError`` when the grid leaves ``t_range``.
    SolverError
        The integration did not reach the requested accuracy.

    Notes
    -----
    Time-invariant systems use the matrix exponential of the augmented matrix,
    ``expm([[A, B], [0, 0]] dt) = [[Ad, Bd], [0, I]]`` (same as ``control.sample_system``).
    For periodic systems whose period is an integer multiple ``p`` of ``dt``, only ``p`` steps are
    integrated and then repeated (``period_steps = p``), unless ``sys.breakpoints`` fall on the
    grid's interval (then every step is integrated and ``period_steps`` is None).

    A jump of ``A(t)``, ``B(t)`` at a breakpoint ``t_j`` inside a step ``[t_k, t_{k+1}]``
    (``sys.breakpoints``, e.g. a step of the reference inputs) is integrated in two pieces, each
    reading the matrices on its own side of the jump, whose augmented transition matrices
    compose (derived here):

    $$
    A_{d,k} = \\Phi(t_{k+1}, t_j^+)\\, \\Phi(t_j^-, t_k), \\qquad
    B_{d,k} = \\Phi(t_{k+1}, t_j^+) \\int_{t_k}^{t_j} \\Phi(t_j^-, \\tau) B(\\tau)\\, d\\tau
              + \\int_{t_j}^{t_{k+1}} \\Phi(t_{k+1}, \\tau) B(\\tau)\\, d\\tau ,
    $$

    the exact zero-order hold of the piecewise system with ``u_k`` held over the whole step (a
    breakpoint on the grid or at a step's end only selects the side read there). For a
    linearization the held input is the deviation ``ũ = u − u0(t)``: across a jump of ``u0``
    inside a step the applied input ``u`` jumps with ``u0``; choose ``dt`` and ``t0`` so that
    the jumps are samples when the applied input itself is held.

    Examples
    --------
    >>> import numpy as np, control
    >>> d = discretize(control.ss([[0, 1], [0, 0]], [[0], [1]], np.eye(2), 0), 0.5, steps=3)
    >>> d.Bd[0].ravel().tolist()  # [dt²/2, dt] for the double integrator
    [0.125, 0.5]
    >>> from nhcontrol.systems import LTVSystem
    >>> sys = LTVSystem(lambda t: [[0.0, 1.0], [-1.0 - 0.1 * np.cos(t), 0.0]], [[0.0], [1.0]],
    ...                 period=2 * np.pi)
    >>> d = discretize(sys, 2 * np.pi / 50, steps=120)
    >>> d.nsteps, d.period_steps
    (120, 50)
    """
    if method != "zoh":
        raise LinearSystemError(f"method must be 'zoh' (zero-order hold), got {method!r}")
    if integrator not in ("magnus", "ivp"):
        raise LinearSystemError(f"integrator must be 'magnus' or 'ivp', got {integrator!r}")
    s = as_ltv(sys)
    dtf = as_real(dt, "dt")
    if not (np.isfinite(dtf) and dtf > 0):
        raise LinearSystemError(f"dt must be a positive finite sampling time, got {dt!r}")
    if not (0 < rtol < 1):
        raise LinearSystemError(f"rtol must lie in (0, 1), got {rtol!r}")
    t0f = as_real(t0, "t0")
    n, k = s.nstates, s.ninputs
    p_steps = _period_steps(s.period, dtf)
    if steps is None:
        if s.is_constant:
            N = 1
        elif s.t_range is not None:
            N = int(np.floor((s.t_range[1] - t0f) / dtf + 1e-9))
            if N < 1:
                raise LinearSystemError(
                    f"no full step of dt = {dtf} fits between t0 = {t0f} and the end of t_range "
                    f"{s.t_range}; pass a smaller dt or an earlier t0")
        elif p_steps is not None:
            N = p_steps
        else:
            why = ("its period is not a multiple of dt" if s.period is not None
                   else "it is neither periodic nor limited by t_range")
            raise LinearSystemError(
                f"steps is required: the number of steps cannot be inferred because {why}; "
                "pass steps=N")
    else:
        N = _check_steps(steps)
    s.check_time(np.array([t0f, t0f + N * dtf]), "discretization grid")
    nint_est = 1 if s.is_constant else (N if (p_steps is None or p_steps >= N) else p_steps)
    # A_k, B_k (N of each, plus the finiteness checks) and the augmented exponentials integrated
    check_allocation(8.0 * (2 * N * n * (n + k) + 3 * nint_est * (n + k) ** 2),
                     f"discretize(..., steps={N}) of a system with n = {n} states and k = {k} inputs "
                     f"({N} matrices A_k ({n}, {n}) and B_k ({n}, {k}))", error=LinearSystemError,
                     hint="use fewer steps or a larger dt (a periodic system needs one period only)")
    check_iterations(nint_est, f"discretize(..., steps={N}): {nint_est} integrations of the "
                     f"time-varying system", error=LinearSystemError,
                     hint="use fewer steps or a larger dt (a periodic system needs one period only)")
    if s.is_constant:
        Ad, Bd = _zoh_lti(s.A(t0f), s.B(t0f), dtf)
        out = DiscreteLTV.from_lti(Ad, Bd, dtf, N, t0=t0f, states=s.states, inputs=s.inputs,
                                   C=s.C if s.outputs_constant else None,
                                   outputs=s.outputs if s.outputs_constant else None)
        return _with_outputs(out, s)
    bps = np.asarray(s.breakpoints, dtype=float)
    bps = bps[(bps >= t0f) & (bps <= t0f + N * dtf)]
    if bps.size:
        p_steps = None                   # the jumps need not repeat with the period
    nint = N if (p_steps is None or p_steps >= N) else p_steps
    tk = t0f + dtf * np.arange(nint)

    def step(sys_: "LTVSystem | _OneSided", starts: NDArray[np.float64], h: float) -> NDArray[np.float64]:
        if integrator == "magnus":
            return _magnus_steps(sys_, starts, h, rtol, max_substeps)
        return _ivp_steps(sys_, starts, h, rtol)

    split = ((bps[None, :] >= tk[:, None]) & (bps[None, :] <= tk[:, None] + dtf)).any(axis=1)
    E = np.empty((nint, n + k, n + k))
    if not split.all():
        E[~split] = step(s, tk[~split], dtf)
    for i in np.flatnonzero(split):
        E[i] = _split_step(s, float(tk[i]), dtf, bps, step)
    Ad, Bd = E[:, :n, :n], E[:, :n, n:]
    if nint < N:
        reps = -(-N // nint)
        Ad = np.tile(Ad, (reps, 1, 1))[:N]
        Bd = np.tile(Bd, (reps, 1, 1))[:N]
    out = DiscreteLTV(Ad, Bd, dtf, t0f, s.states, s.inputs,
                      period_steps=p_steps if p_steps is not None and p_steps <= N else None,
                      C=s.C if s.outputs_constant else None,
                      outputs=s.outputs if s.outputs_constant else None,
                      breakpoints=tuple(bps.tolist()))
    return _with_outputs(out, s)


def _with_outputs(d: DiscreteLTV, s: LTVSystem) -> DiscreteLTV:
    """``d`` with the output map of ``s``: its constant ``D``, or ``C(t_k)``, ``D(t_k)`` sampled
    at the ``N + 1`` grid times when the outputs vary with time."""
    from dataclasses import replace

    if s.outputs_constant:
        D = s.D
        return d if not np.any(D) else replace(d, D=D)
    Ck, Dk = s.output_matrices(np.asarray(d.times))
    return replace(d, C=None, D=None, Ck=Ck, Dk=Dk, outputs=s.outputs)


class _OneSided:
    """``sys`` read on ``[lo, hi]`` only (times clipped): one side of the jumps at its ends."""

    def __init__(self, sys: LTVSystem, lo: float, hi: float) -> None:
        self.sys, self.lo, self.hi = sys, lo, hi
        self.nstates, self.ninputs = sys.nstates, sys.ninputs

    def AB(self, t: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.sys.AB(np.clip(t, self.lo, self.hi))


def _split_step(s: LTVSystem, a: float, dt: float, bps: NDArray[np.float64],
                step: Callable[..., NDArray[np.float64]]) -> NDArray[np.float64]:
    """The augmented transition matrix over ``[a, a + dt]`` composed of the pieces between the
    breakpoints ``bps``, each integrated on its own side of the jumps at its ends."""
    b = a + dt
    edges = np.concatenate([[a], bps[(bps > a) & (bps < b)], [b]])
    E = np.eye(s.nstates + s.ninputs)
    for c, d in zip(edges[:-1], edges[1:]):
        if not d > c:
            continue
        lo = float(np.nextafter(c, np.inf)) if np.any(bps == c) else float(c)
        hi = float(np.nextafter(d, -np.inf)) if np.any(bps == d) else float(d)
        E = step(_OneSided(s, lo, hi), np.array([c]), float(d - c))[0] @ E
    return E


def _zoh_lti(A: NDArray[np.float64], B: NDArray[np.float64], dt: float) -> tuple[NDArray, NDArray]:
    n, k = B.shape
    Maug = np.zeros((n + k, n + k))
    Maug[:n, :n] = A
    Maug[:n, n:] = B
    E = expm(Maug * dt)
    return E[:n, :n], E[:n, n:]


def _period_steps(period: float | None, dt: float) -> int | None:
    if period is None:
        return None
    r = period / dt
    p = int(round(r))
    if p >= 1 and abs(r - p) <= 1e-9 * max(1.0, r):
        return p
    return None


def _augmented(s: LTVSystem, t: NDArray[np.float64]) -> NDArray[np.float64]:
    """``Z(t) = [[A, B], [0, 0]]`` for t of shape (M,) -> (M, n+k, n+k)."""
    n, k = s.nstates, s.ninputs
    Z = np.zeros((t.size, n + k, n + k))
    Z[:, :n, :] = s.AB(t)
    return Z


def _comm(X: NDArray, Y: NDArray) -> NDArray:
    return X @ Y - Y @ X


def _magnus6(s: LTVSystem, ta: NDArray[np.float64], h: float) -> NDArray[np.float64]:
    """One sixth-order Magnus step from each ``ta[i]`` over ``h`` (augmented), (M, n+k, n+k).

    Blanes, Casas & Ros (2000); Blanes, Casas, Oteo & Ros, Phys. Rep. 470 (2009), Eq. (253):

    ```python
    α1 = h A2,  α2 = √15 h/3 (A3 − A1),  α3 = 10 h/3 (A3 − 2 A2 + A1)
    C1 = [α1, α2],  C2 = −1/60 [α1, 2 α3 + C1]
    Ω  = α1 + α3/12 + 1/240 [−20 α1 − α3 + C1, α2 + C2]
    ```
    """
    nodes = (ta[:, None] + h * _GL3[None, :]).reshape(-1)
    Z = _augmented(s, nodes).reshape(ta.size, 3, *(_augmented_shape(s)))
    A1, A2, A3 = Z[:, 0], Z[:, 1], Z[:, 2]
    a1 = h * A2
    a2 = (np.sqrt(15.0) * h / 3.0) * (A3 - A1)
    a3 = (10.0 * h / 3.0) * (A3 - 2.0 * A2 + A1)
    C1 = _comm(a1, a2)
    C2 = -_comm(a1, 2.0 * a3 + C1) / 60.0
    Om = a1 + a3 / 12.0 + _comm(-20.0 * a1 - a3 + C1, a2 + C2) / 240.0
    return expm_batch(Om)


def expm_batch(X: NDArray[np.float64]) -> NDArray[np.float64]:
    """Matrix exponentials of a stack ``X`` (M, m, m) by scaling and squaring.

    Each matrix is scaled by ``2^-s`` so that its 1-norm is ``<= 1/2``, exponentiated by the
    degree-18 Taylor polynomial (truncation ``< 0.5^19/19! ≈ 2e-23``, below round-off) in Horner
    form, then squared ``s`` times. Vectorised over the stack (scipy's ``expm`` loops in Python
    over stacked input); agrees with ``scipy.linalg.expm`` to ~1e-15 relative (tested).
    """
    X = np.asarray(X, dtype=float)
    m = X.shape[-1]
    norm = np.abs(X).sum(axis=-2).max(axis=-1)
    with np.errstate(divide="ignore"):
        sc = np.where(norm > 0.5, np.ceil(np.log2(np.maximum(norm, 1e-300) / 0.5)), 0.0).astype(int)
    Y = X * (0.5 ** sc)[:, None, None]
    eye = np.eye(m)
    E = eye + Y / 18.0
    for j in range(17, 0, -1):
        E = eye + (Y @ E) / j
    for j in range(int(sc.max()) if sc.size else 0):
        sel = sc > j
        E[sel] = E[sel] @ E[sel]
    return E


def _augmented_shape(s: LTVSystem) -> tuple[int, int]:
    m = s.nstates + s.ninputs
    return (m, m)


def _magnus_composite(s: LTVSystem, tk: NDArray[np.float64], dt: float, m: int) -> NDArray[np.float64]:
    h = dt / m
    starts = (tk[:, None] + h * np.arange(m)[None, :]).reshape(-1)
    Es = _magnus6(s, starts, h).reshape(tk.size, m, *_augmented_shape(s))
    E = Es[:, 0]
    for j in range(1, m):
        E = Es[:, j] @ E
    return E


def _magnus_steps(s: LTVSystem, tk: NDArray[np.float64], dt: float, rtol: float,
                  max_substeps: int) -> NDArray[np.float64]:
    out = np.empty((tk.size, *_augmented_shape(s)))
    active = np.arange(tk.size)
    m = 1
    with np.errstate(over="ignore", invalid="ignore"):
        E_prev = _magnus_composite(s, tk, dt, m)
    while active.size:
        if 2 * m > max_substeps:
            raise SolverError(
                f"ZOH discretization did not reach rtol = {rtol} with {max_substeps} Magnus substeps "
                f"per step for {active.size} step(s) (first at t = {tk[active[0]]}); use a smaller dt, "
                "a looser rtol or a larger max_substeps")
        with np.errstate(over="ignore", invalid="ignore"):
            E_new = _magnus_composite(s, tk[active], dt, 2 * m)
        scale = np.maximum(1.0, np.abs(E_new).max(axis=(1, 2)))
        with np.errstate(over="ignore", invalid="ignore"):
            err = np.abs(E_new - E_prev).max(axis=(1, 2)) / scale
        ok = err <= rtol  # NaN/inf (overflow of a huge step) is never accepted
        out[active[ok]] = E_new[ok]
        active = active[~ok]
        E_prev = E_new[~ok]
        m *= 2
    return out


def _ivp_steps(s: LTVSystem, tk: NDArray[np.float64], dt: float, rtol: float) -> NDArray[np.float64]:
    n, k = s.nstates, s.ninputs
    N = tk.size
    y0 = np.zeros((N, n, n + k))
    y0[:, :, :n] = np.eye(n)
    Ibot = np.zeros((N, k, n + k))
    Ibot[:, :, n:] = np.eye(k)

    def rhs(sl: float, y: NDArray) -> NDArray:
        Y = y.reshape(N, n, n + k)
        AB = s.AB(tk + sl)
        d = AB[:, :, :n] @ Y
        d[:, :, n:] += AB[:, :, n:]
        return d.reshape(-1)

    from scipy.integrate import solve_ivp   # (imported when used: with scipy.optimize ~0.3 s)

    sol = solve_ivp(rhs, (0.0, dt), y0.reshape(-1), method="DOP853", rtol=rtol, atol=rtol * 1e-3)
    if not sol.success:
        raise SolverError(f"solve_ivp failed while discretizing: {sol.message}")
    Y = sol.y[:, -1].reshape(N, n, n + k)
    return np.concatenate([Y, Ibot], axis=1)
