"""Benchmark: LTV-MPC step time on the ball-plate linearization (thesis Ch. 8), compiled once vs
rebuilt every step, and against python-control's MPC, all measured in the same run.

Run ``python benchmarks/mpc_ball_plate.py [--steps S] [--peer-steps P] [--floor-horizons N,…]``
(``S >= 2``; ``P = 0`` skips python-control); prints one JSON object:

* ``step_s_N20``, ``step_s_N50``: median wall time of one ``LTVMPC.step`` (cvxpy Parameters,
  DPP, OSQP warm start) for horizons N = 20 and 50, on a receding-horizon loop of the 7-state
  controllable formulation (φ0 = 5°, dt = period/125 ≈ 0.05 s) from the deviations of
  Eq. (8.92) with |α|, |β| ≤ 10° (active at the start);
* ``rebuild_step_s_N20``: the same QP built from scratch in cvxpy at every step (constants instead
  of Parameters: construction + canonicalisation + cold OSQP solve), and
  ``ratio_rebuild_over_step_N20``; ``rebuild_max_input_difference`` checks both give the same
  input;
* ``osqp_direct_step_s_N20``: a hand-built OSQP problem of the same QP (sparse standard form
  written here, ``A_j``, ``B_j`` and the bounds overwritten in place each step, warm-started,
  the same OSQP settings), timed interleaved with ``LTVMPC.step`` on the same states (the
  order alternates from step to step); ``ratio_step_over_osqp_direct_N20`` (goal ≤ 1.1; the
  step is the default condensed DAQP path, the hand-built one the sparse OSQP QP): the
  median over the steps of the paired ratio ``LTVMPC.step`` / hand-built step at the same
  receding-horizon step (each pair measured back to back, so load from other processes
  cancels in the ratio), ``ratio_of_medians_step_over_osqp_direct_N20`` the ratio of the two
  medians, ``interleaved_step_s_N20`` the median of ``LTVMPC.step`` in this loop (``step_s_N20``
  is the separate loop above), and ``osqp_direct_max_input_difference``
  (the two first inputs, goal ≤ 1e-6); ``cvxpy_step_s_N20``: ``LTVMPC(...,
  osqp_interface="cvxpy", qp_solver="osqp")`` (cvxpy's parameter path) in the same interleaved
  loop, with
  ``ratio_cvxpy_over_step_N20``;
* ``ratio_step_over_qp_floor`` (goal ≤ 1.5): the whole ``LTVMPC.step`` (N = 20, the default
  condensed path: argument checks, condensing, DAQP, reading the answer, the `MPCStep`) over
  the bare QP solve of the same condensed problem by the chosen solver, called as the step
  calls it (``daqp.solve(H, g, A, upper, lower)`` with the step's settings, from the empty
  active set), timed right after each step; median of the paired per-step ratios;
  ``qp_floor_s_N20`` its median, ``qp_floor_step_s_N20`` the step's median in this loop,
  ``qp_solver`` the solver, ``qp_floor_max_input_difference`` (both bare solves against the
  step's first input); ``qp_floor_model_s_N20`` the same QP through a ``daqp.Model``
  (``Model.update`` + ``Model.solve``, its previous active set reused: the call an earlier
  version of the step made) and ``ratio_step_over_qp_floor_model``; ``condense_s_N20`` the
  compiled condensing of the same window alone (one foreign call, its pointers made beforehand)
  and ``ratio_bound_condense_plus_floor`` the median of ``(condense + bare solve) / bare solve``:
  the ratio of a step that did nothing else, a lower bound of ``ratio_step_over_qp_floor`` for
  any step that condenses its window at every sample;
  ``lean_step_s_N20`` the leanest step written in Python on the same window (one call of the
  compiled condensing, the shifted input bounds, ``daqp.solve`` as the step calls it, the
  projected first input: no argument checks, no multipliers, no predicted states, no
  ``MPCStep``), timed after each step, ``ratio_lean_over_qp_floor`` its paired ratio to the bare
  solve (what moving every check of the step into C could at best approach) and
  ``lean_max_input_difference`` (against the step's first input);
* ``qp_floor_by_horizon`` (with ``--floor-horizons N1,N2,…``): the same QP-floor loop for other
  horizons, ``{N: {"step_s", "qp_floor_s", "condense_s", "ratio_step_over_qp_floor",
  "ratio_bound_condense_plus_floor", "lean_step_s", "ratio_lean_over_qp_floor",
  "qp_floor_max_input_difference"}}`` (terminal weight the
  Riccati matrix of that horizon): how the bound moves with the size of the condensed QP;
* ``peers``: ``python-control`` — ``control.optimal.create_mpc_iosystem`` on the LTI snapshot
  ``(Ad_0, Bd_0)`` (it only accepts a fixed system; scipy SLSQP on the stacked inputs), timed per
  output evaluation over ``--peer-steps`` steps, with our ``LTVMPC`` on the same LTI problem and
  the ratio; ``do-mpc`` — skipped when not installed.

The first MPC step (which canonicalises the problem) is excluded from the medians and reported
as ``first_step_s_N20``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np


class _Skipped(Exception):
    """A peer deliberately not run (reported as ``{"skipped": reason}``)."""


def _setup():
    from nhcontrol.models import ball_plate as bp
    from nhcontrol.reproduce import ball_plate_ltv as bpl
    from nhcontrol.reproduce.ball_plate import Settings
    from nhcontrol.systems import discretize

    st = Settings()
    cm = bp.model()
    ref = bp.circular_motion(cm, 5.0)
    mo = bp.motion_from_reference(cm, ref)
    dt = mo.period / st.steps_per_period
    d = discretize(bpl.controllable_formulation(cm, ref), dt)
    red = bp.spin_reduction(cm, ref)
    x0, xd0 = bp.initial_conditions(cm, 5.0)
    Z0 = red.reduce(bp.deviation(ref, 0.0, x0, xd0))
    Q = np.diag([st.q_angle] * 3 + [st.q_rate] * 2 + [st.q_contact] * 2)
    R = st.r_input * np.eye(2)
    return ref, d, dt, Z0, Q, R


def _loop(step_fn, d, ref, dt, Z0, N, steps):
    """Receding horizon on the linear model; returns per-step times and inputs."""
    from nhcontrol.design import window

    Z = Z0.copy()
    times, inputs = [], []
    for k in range(steps):
        Ad, Bd = window(d, k, N)
        u_ref = np.asarray(ref.u(dt * (k + np.arange(N))), float)
        t0 = time.perf_counter()
        du = step_fn(Z, Ad, Bd, u_ref)
        times.append(time.perf_counter() - t0)
        inputs.append(du)
        Z = Ad[0] @ Z + Bd[0] @ du
    return times, np.array(inputs)


def _ours(N, Q, R, Qf, bound, interface="direct"):
    from nhcontrol.design import LTVMPC

    mpc = LTVMPC(N, Q, R, Qf, u_min=-bound, u_max=bound, osqp_interface=interface,
                 qp_solver="daqp" if interface == "direct" else "osqp")

    def step(Z, Ad, Bd, u_ref):
        return mpc.step(Z, Ad, Bd, u_ref=u_ref).du
    return step


def _osqp_direct(N, Q, R, Qf, bound):
    """A hand-built OSQP problem: z = (x_0..x_N, u_0..u_{N-1}), equality rows x_0 = Z and
    A_j x_j + B_j u_j - x_{j+1} = 0, box rows on u; A_j, B_j, l, u overwritten in place."""
    import osqp
    import scipy.sparse as sp

    from nhcontrol.design._osqp import OSQP_DEFAULTS

    n, k = Q.shape[0], R.shape[0]
    nx, nz = (N + 1) * n, (N + 1) * n + N * k
    P = sp.block_diag([sp.kron(sp.eye(N), 2 * Q), 2 * Qf, sp.kron(sp.eye(N), 2 * R)],
                      format="csc")
    # pattern with entry ids: dense A_j, B_j blocks (ids 1 …), identities and -I (id 0 → value)
    ids = np.arange(1, N * n * (n + k) + 1, dtype=float)
    idA = ids[:N * n * n].reshape(N, n, n)
    idB = ids[N * n * n:].reshape(N, n, k)
    rows = [[None] * (2 * N + 1) for _ in range(N + 1 + N)]
    rows[0][0] = sp.eye(n) * -1e9  # marker values, replaced below
    for j in range(N):
        rows[j + 1][j] = sp.csc_matrix(idA[j])
        rows[j + 1][j + 1] = sp.eye(n) * -2e9
        rows[j + 1][N + 1 + j] = sp.csc_matrix(idB[j])
        rows[N + 1 + j][N + 1 + j] = sp.eye(k) * -1e9
    for j in range(N + 1):  # keep every column block sized
        rows[0][j] = rows[0][j] if j == 0 else sp.csc_matrix((n, n))
    for j in range(N):
        rows[0][N + 1 + j] = sp.csc_matrix((n, k))
    Aid = sp.bmat(rows, format="csc")
    data = Aid.data.copy()
    marker = data < 0
    data[marker] = np.where(data[marker] == -1e9, 1.0, -1.0)
    pos = np.flatnonzero(~marker)
    order = Aid.data[pos].astype(np.int64) - 1  # which A/B entry sits at each position
    nrow = (N + 1) * n + N * k
    lo, hi = np.zeros(nrow), np.zeros(nrow)
    prob = osqp.OSQP()
    prob.setup(P, np.zeros(nz), sp.csc_matrix((data, Aid.indices, Aid.indptr), shape=Aid.shape),
               lo, hi, **OSQP_DEFAULTS)
    last = {}

    def step(Z, Ad, Bd, u_ref):
        AB = np.concatenate([Ad.ravel(), Bd.ravel()])
        if not np.array_equal(AB, last.get("AB")):
            data[pos] = AB[order]
            prob.update(Ax=data)
            last["AB"] = AB
        lo[:n] = hi[:n] = Z
        lo[nx:] = (-bound - u_ref).ravel()
        hi[nx:] = (bound - u_ref).ravel()
        prob.update(l=lo, u=hi)
        res = prob.solve(raise_error=False)
        if res.info.status_val != 1:
            raise RuntimeError(f"hand-built OSQP: {res.info.status}")
        return np.array(res.x[nx:nx + k])
    return step


def _interleaved(steppers, d, ref, dt, Z0, N, steps):
    """Run several step functions on the same states (those of the first), alternating them
    within each receding-horizon step; per-function times and inputs."""
    from nhcontrol.design import window

    Z = Z0.copy()
    times = {name: [] for name in steppers}
    inputs = {name: [] for name in steppers}
    names = list(steppers)
    for kk in range(steps):
        Ad, Bd = window(d, kk, N)
        u_ref = np.asarray(ref.u(dt * (kk + np.arange(N))), float)
        for name in (names if kk % 2 == 0 else names[::-1]):
            t0 = time.perf_counter()
            du = steppers[name](Z, Ad, Bd, u_ref)
            times[name].append(time.perf_counter() - t0)
            inputs[name].append(du)
        Z = Ad[0] @ Z + Bd[0] @ inputs[names[0]][-1]
    return times, {name: np.array(v) for name, v in inputs.items()}


def _qp_floor(N, Q, R, Qf, bound, d, ref, dt, Z0, steps):
    """``LTVMPC.step`` and, right after it, the bare solve of the condensed QP it built, called
    the way the step calls the solver (DAQP: ``daqp.solve`` on ``H, g, A`` and the bounds,
    from the empty active set, as the step without a warm start) and, for comparison, through a
    ``daqp.Model`` (``Model.update`` + ``Model.solve``, reusing its previous active set)."""
    import daqp

    from nhcontrol.design import LTVMPC, window

    mpc = LTVMPC(N, Q, R, Qf, u_min=-bound, u_max=bound)
    if mpc.qp_path != "daqp":
        return {"ratio_step_over_qp_floor": None, "qp_solver": mpc.qp_path,
                "qp_floor_skipped": mpc.qp_path_reason}
    kw = mpc._dense._solve_kw
    lib = mpc._dense._c_library()
    lean = _lean_step(lib, mpc, bound) if lib is not None else None
    model = None
    Z = Z0.copy()
    ts, tf, tm, tc, diff, scratch, tl, dl = [], [], [], [], [], [], [], []
    for kk in range(steps):
        Ad, Bd = window(d, kk, N)
        u_ref = np.asarray(ref.u(dt * (kk + np.arange(N))), float)
        t0 = time.perf_counter()
        du = mpc.step(Z, Ad, Bd, u_ref=u_ref).du
        t1 = time.perf_counter()
        qp = mpc._dense.qp_data()
        A = qp.A
        t2 = time.perf_counter()
        v = daqp.solve(qp.H, qp.g, A, qp.upper, qp.lower, None, **kw)[0]
        t3 = time.perf_counter()
        if model is None:
            model = daqp.Model()
            model.setup(qp.H, qp.g, A, qp.upper, qp.lower)
            model.settings = dict(mpc._dense.settings)
        else:
            model.update(H=qp.H, f=qp.g, A=A if A.shape[0] else None, bupper=qp.upper,
                         blower=qp.lower)
        vm = model.solve()[0]
        t4 = time.perf_counter()
        if lib is not None:         # the compiled condensing of the step's window, alone
            tc.append(_condense_alone(lib, mpc._dense, scratch))
        if lean is not None:        # the leanest step written in Python, same window
            t5 = time.perf_counter()
            du_lean = lean(Z, Ad, Bd, u_ref)
            tl.append(time.perf_counter() - t5)
            dl.append(float(np.max(np.abs(du_lean - du))))
        ts.append(t1 - t0)
        tf.append(t3 - t2)
        tm.append(t4 - t3)
        diff.append(max(float(np.max(np.abs(np.asarray(v[:2]) - du))),
                        float(np.max(np.abs(np.asarray(vm[:2]) - du)))))
        Z = Ad[0] @ Z + Bd[0] @ du
    paired = np.array(ts[1:]) / np.array(tf[1:])
    return {"ratio_step_over_qp_floor": float(np.median(paired)),
            "qp_floor_s_N20": statistics.median(tf[1:]),
            "qp_floor_step_s_N20": statistics.median(ts[1:]),
            "qp_floor_model_s_N20": statistics.median(tm[1:]),
            "ratio_step_over_qp_floor_model": float(np.median(np.array(ts[1:])
                                                               / np.array(tm[1:]))),
            "qp_solver": "daqp", "qp_floor_max_input_difference": max(diff),
            **_condense_bound(tc, tf), **_lean_keys(tl, tf, dl)}


def _lean_step(lib, mpc, bound: float):
    """The leanest condensed step written in Python, for the LTVMPC of `_qp_floor` (input
    bounds ``±bound`` only, no rates, no state bounds, no affine or linear terms): one call of
    the compiled condensing, the shifted input bounds, ``daqp.solve`` as the step calls it (from
    the empty active set), the first input projected on the bounds. No argument checks, no
    multipliers, no predicted states, no `MPCStep`: what any step that condenses at every sample
    and is driven from Python must at least do. Its own buffers (the step's are not touched);
    the foreign-call pointers of the constant arrays are made here, once. None when the layout
    is not that one."""
    import daqp

    dq = mpc._dense
    if dq.m or dq.ns or dq.nsy or dq.py:
        return None
    fb = lib.ffi.from_buffer
    N, n, k, nv = dq.N, dq.n, dq.k, dq.nv
    H, g, A = dq._H0.copy(), dq._g0.copy(), dq._Ag.copy()
    lo, hi = dq._lo0.copy(), dq._hi0.copy()
    keep = [np.array([N, n, k, nv, 0, 0], dtype=np.int64), np.ascontiguousarray(dq.Qf),
            np.zeros((N + 1, n, N * k + 1)), np.zeros((N, n, N * k + 1)), np.zeros(1)]
    dims, Qf, M, W, cst = keep
    const = [fb("long long[]", dims), fb("double[]", dq._zeros_n), fb("double[]", dq._Qc),
             fb("double[]", Qf), fb("double[]", dq._Rc), fb("double[]", dq._zeros_qx),
             fb("double[]", M), fb("double[]", W), fb("double[]", H), fb("double[]", g),
             fb("double[]", cst)]
    ucols, kw = dq._ucols, dq._solve_kw

    def step(Z, Ad, Bd, u_ref):
        lib.condense(const[0], fb("double[]", np.ascontiguousarray(Ad)),
                     fb("double[]", np.ascontiguousarray(Bd)), const[1],
                     fb("double[]", np.ascontiguousarray(Z)), *const[2:])
        lo[ucols] = (-bound - u_ref).ravel()
        hi[ucols] = (bound - u_ref).ravel()
        v = daqp.solve(H, g, A, hi, lo, None, **kw)[0]
        return np.minimum(np.maximum(u_ref[0] + v[:k], -bound), bound) - u_ref[0]
    step.keep = (keep, const)       # (the arrays behind the pointers live with the function)
    return step


def _lean_keys(tl, tf, dl) -> dict:
    """``lean_step_s_N20``, ``ratio_lean_over_qp_floor`` (median of the paired per-step ratios
    to the bare solve) and ``lean_max_input_difference`` (against the step's first input)."""
    if not tl:
        return {"lean_step_s_N20": None, "ratio_lean_over_qp_floor": None,
                "lean_max_input_difference": None}
    return {"lean_step_s_N20": statistics.median(tl[1:]),
            "ratio_lean_over_qp_floor": float(np.median(np.array(tl[1:]) / np.array(tf[1:]))),
            "lean_max_input_difference": max(dl)}


def _condense_alone(lib, qp, scratch: list) -> float:
    """Wall time of one call of the compiled condensing on the step's loaded window (``H``,
    ``g``, the prediction ``M``: the work the step does before the solve), the foreign-call
    pointers made beforehand; written into scratch buffers, not the step's (``scratch``: an
    empty list on the first call, filled then and reused, as the step reuses its buffers: a
    fresh large buffer would add its page faults to the time)."""
    fb = lib.ffi.from_buffer
    N, n, k = qp.N, qp.n, qp.k
    dims = np.array([N, n, k, qp.nv, qp._c is not None, qp._qx is not None], dtype=np.int64)
    if not scratch:
        scratch += [np.zeros((N + 1, n, N * k + 1)), np.zeros((N, n, N * k + 1)),
                    np.zeros((qp.nv, qp.nv)), np.zeros(qp.nv), np.zeros(1)]
    args = [fb("long long[]", dims)] + [fb("double[]", np.ascontiguousarray(a, dtype=float))
                                        for a in (qp._A, qp._B,
                                                  qp._zeros_n if qp._c is None else qp._c,
                                                  qp._x0, qp._Qc, qp.Qf, qp._Rc,
                                                  qp._zeros_qx if qp._qx is None else qp._qx)]
    args += [fb("double[]", a) for a in scratch]
    t0 = time.perf_counter()
    lib.condense(*args)
    return time.perf_counter() - t0


def _condense_bound(tc, tf) -> dict:
    """``condense_s_N20`` and ``ratio_bound_condense_plus_floor``: the ratio a step would have
    that did nothing but the compiled condensing and the bare solve (median of the per-step
    ratios ``(condense + solve) / solve``), a lower bound of ``ratio_step_over_qp_floor`` for any
    step that condenses its window at every sample."""
    if not tc:
        return {"condense_s_N20": None, "ratio_bound_condense_plus_floor": None}
    c, f = np.array(tc[1:]), np.array(tf[1:len(tc)])
    return {"condense_s_N20": float(np.median(c)),
            "ratio_bound_condense_plus_floor": float(np.median((c + f) / f))}


_MIN_N, _MAX_N = 2, 200


def _horizons(parser, text: str) -> list[int]:
    """The horizons of ``--floor-horizons`` (empty: none), each an integer in
    ``[_MIN_N, _MAX_N]``; anything else is an argparse error naming the value."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            N = int(part)
        except ValueError:
            parser.error(f"--floor-horizons takes comma-separated integers, got {part!r}")
        if not _MIN_N <= N <= _MAX_N:
            parser.error(f"--floor-horizons: each horizon must be in [{_MIN_N}, {_MAX_N}], "
                         f"got {N}")
        out.append(N)
    return out


def _by_horizon(res: dict) -> dict:
    """The keys of one `_qp_floor` run under horizon-neutral names."""
    if res.get("ratio_step_over_qp_floor") is None:
        return {"skipped": res.get("qp_floor_skipped", "no DAQP path")}
    return {"step_s": res["qp_floor_step_s_N20"], "qp_floor_s": res["qp_floor_s_N20"],
            "condense_s": res["condense_s_N20"],
            "ratio_step_over_qp_floor": res["ratio_step_over_qp_floor"],
            "ratio_bound_condense_plus_floor": res["ratio_bound_condense_plus_floor"],
            "lean_step_s": res["lean_step_s_N20"],
            "ratio_lean_over_qp_floor": res["ratio_lean_over_qp_floor"],
            "qp_floor_max_input_difference": res["qp_floor_max_input_difference"]}


def _rebuild(N, Q, R, Qf, bound):
    import cvxpy as cp

    from nhcontrol.design._weights import psd_factor

    Lq, Lr, Lf = psd_factor(Q), psd_factor(R), psd_factor(Qf)
    n, k = Q.shape[0], R.shape[0]

    def step(Z, Ad, Bd, u_ref):
        X = cp.Variable((N + 1, n))
        U = cp.Variable((N, k))
        cons = [X[0] == Z] + [X[j + 1] == Ad[j] @ X[j] + Bd[j] @ U[j] for j in range(N)]
        cons += [U >= -bound - u_ref, U <= bound - u_ref]
        cost = cp.sum_squares(X[:N] @ Lq.T) + cp.sum_squares(U @ Lr.T) + cp.sum_squares(Lf @ X[N])
        prob = cp.Problem(cp.Minimize(cost), cons)
        prob.solve(solver="OSQP")
        if prob.status != "optimal":
            raise RuntimeError(f"rebuilt QP: {prob.status}")
        return np.asarray(U.value[0])
    return step


def _python_control(A, B, Q, R, Qf, lo, hi, N, dt, Z0, steps):
    import control
    import control.optimal as opt

    sys = control.ss(A, B, np.eye(A.shape[0]), 0, dt)
    cost = opt.quadratic_cost(sys, Q, R)
    term = opt.quadratic_cost(sys, Qf, None)
    cons = [opt.input_range_constraint(sys, lo, hi)]
    ctrl = opt.create_mpc_iosystem(sys, np.arange(N) * dt, cost, cons, terminal_cost=term)
    xc = np.zeros(ctrl.nstates)
    Z = Z0.copy()
    times, inputs = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        u = np.asarray(ctrl.output(0.0, xc, Z)).reshape(-1)
        times.append(time.perf_counter() - t0)
        inputs.append(u)
        Z = A @ Z + B @ u
    return times, np.array(inputs)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="receding-horizon steps per timing")
    parser.add_argument("--peer-steps", type=int, default=3,
                        help="steps of python-control's MPC (slow: ~seconds each); 0 skips it")
    parser.add_argument("--floor-horizons", default="",
                        help=f"comma-separated horizons N ({_MIN_N}-{_MAX_N}) for which the QP "
                             "floor loop is also run (qp_floor_by_horizon); default none")
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error(f"--steps must be at least 2 (the first step, which canonicalises the "
                     f"problem, is excluded from the medians), got {args.steps}")
    if args.peer_steps < 0:
        parser.error(f"--peer-steps must be >= 0 (0 skips python-control), got {args.peer_steps}")
    horizons = _horizons(parser, args.floor_horizons)

    from nhcontrol.design import finite_horizon_lqr, window

    ref, d, dt, Z0, Q, R = _setup()
    bound = math.radians(10.0)
    Ad_all, Bd_all = window(d, 0, 400)
    P = finite_horizon_lqr((Ad_all, Bd_all), Q, R, Q).P
    out: dict = {"problem": {"nstates": int(Q.shape[0]), "ninputs": 2, "dt_s": dt,
                             "bound_deg": 10.0, "steps": args.steps}}
    inputs = {}
    for N in (20, 50):
        times, u = _loop(_ours(N, Q, R, P[N], bound), d, ref, dt, Z0, N, args.steps)
        out[f"first_step_s_N{N}"] = times[0]
        out[f"step_s_N{N}"] = statistics.median(times[1:])
        inputs[N] = u
    it, iu = _interleaved({"ours": _ours(20, Q, R, P[20], bound),
                           "osqp": _osqp_direct(20, Q, R, P[20], bound),
                           "cvxpy": _ours(20, Q, R, P[20], bound, "cvxpy")},
                          d, ref, dt, Z0, 20, args.steps)
    ours_med = statistics.median(it["ours"][1:])
    out["osqp_direct_step_s_N20"] = statistics.median(it["osqp"][1:])
    paired = np.array(it["ours"][1:]) / np.array(it["osqp"][1:])
    out["ratio_step_over_osqp_direct_N20"] = float(np.median(paired))
    out["ratio_of_medians_step_over_osqp_direct_N20"] = ours_med / out["osqp_direct_step_s_N20"]
    out["osqp_direct_max_input_difference"] = float(np.max(np.abs(iu["osqp"] - iu["ours"])))
    out["interleaved_step_s_N20"] = ours_med
    out["cvxpy_step_s_N20"] = statistics.median(it["cvxpy"][1:])
    out["ratio_cvxpy_over_step_N20"] = out["cvxpy_step_s_N20"] / ours_med
    out["cvxpy_max_input_difference"] = float(np.max(np.abs(iu["cvxpy"] - iu["ours"])))
    out.update(_qp_floor(20, Q, R, P[20], bound, d, ref, dt, Z0, args.steps))
    if horizons:
        out["qp_floor_by_horizon"] = {
            str(N): _by_horizon(_qp_floor(N, Q, R, P[N], bound, d, ref, dt, Z0, args.steps))
            for N in horizons}
    rt, ru = _loop(_rebuild(20, Q, R, P[20], bound), d, ref, dt, Z0, 20, args.steps)
    out["rebuild_step_s_N20"] = statistics.median(rt)
    out["ratio_rebuild_over_step_N20"] = out["rebuild_step_s_N20"] / out["step_s_N20"]
    out["rebuild_max_input_difference"] = float(np.max(np.abs(ru - inputs[20])))

    peers: dict = {}
    # python-control: LTI snapshot, deviation bounds from the largest reference tilt
    A, B = np.asarray(Ad_all[0]), np.asarray(Bd_all[0])
    umax = float(np.max(np.abs(np.asarray(ref.u(np.linspace(0, 2 * np.pi, 200)), float))))
    lo, hi = [-(bound - umax)] * 2, [bound - umax] * 2
    try:
        if args.peer_steps == 0:
            raise _Skipped("--peer-steps 0")
        pt, pu = _python_control(A, B, Q, R, P[20], lo, hi, 20, dt, Z0, args.peer_steps)
        from nhcontrol.design import LTVMPC

        mpc = LTVMPC(20, Q, R, P[20], u_min=lo, u_max=hi)
        Z, ours_t, ours_u = Z0.copy(), [], []
        for _ in range(args.peer_steps + 1):
            t0 = time.perf_counter()
            s = mpc.step(Z, A, B)
            ours_t.append(time.perf_counter() - t0)
            ours_u.append(s.du)
            Z = A @ Z + B @ s.du
        ours = statistics.median(ours_t[1:]) if len(ours_t) > 1 else ours_t[0]
        peers["python-control"] = {
            "function": "control.optimal.create_mpc_iosystem (SLSQP), LTI snapshot (Ad_0, Bd_0), N=20",
            "step_s": statistics.median(pt), "ours_lti_step_s": ours,
            "ratio_over_ours": statistics.median(pt) / ours,
            "max_input_difference": float(np.max(np.abs(pu - np.array(ours_u[:len(pu)])))),
            "steps": args.peer_steps}
    except _Skipped as exc:
        peers["python-control"] = {"skipped": str(exc)}
    except Exception as exc:  # report, don't hide: the peer is optional
        peers["python-control"] = {"skipped": f"{type(exc).__name__}: {exc}"}
    try:
        import do_mpc  # noqa: F401

        peers["do-mpc"] = {"skipped": "installed but not wired in this benchmark"}
    except ImportError:
        peers["do-mpc"] = {"skipped": "do-mpc is not installed"}
    out["peers"] = peers
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
