"""Standalone C99 export of nhcontrol's controllers and estimators with a closed-loop harness.

``MPCController.export_c``, ``NMPCController.export_c`` (real-time iteration),
``TVLQRController.export_c``, ``KalmanEstimator.export_c`` and
[`export_loop()`][nhcontrol.interop.export_loop] write a folder that builds with any C99
compiler (``make``) and needs no Python:

* the model-independent C of ``c_templates/`` (the dense QP solver ``nhc_qp.c``, the condensed
  MPC ``nhc_mpc.c``, small dense linear algebra ``nhc_linalg.c``, the JSON line reader
  ``nhc_json.c`` and the harness ``nhc_loop.c``);
* the generated ``nhc_controller.h/.c`` (and ``nhc_estimator.h/.c``): the controller's data as
  read-only tables (the reference at the samples, the windows of the LTV model, the Riccati
  terminal weights and fallback gains of the schedule) and its step; for the RTI NMPC the model
  itself (``nhc_model.c`` of [`export_c()`][nhcontrol.interop.export_c]) re-linearized online
  through the exported one-point third procedure, as the Python object does;
* ``Makefile`` (honours ``CC`` and ``CFLAGS``), ``README.md``, ``nhc_export.json``.

No generated function allocates memory: the controller's state and scratch are one caller-owned
``nhc_ctrl_workspace`` whose size ``NHC_CTRL_WORKSPACE_BYTES`` the header states.

The programme solved is the controller's own (``nhcontrol.design.LTVMPC``), condensed: the
states eliminated through the prediction, the inputs as variables, solved by a dual active-set
method (Goldfarb and Idnani 1983) to the exact optimum of its active set, so the first input
agrees with a tightly solved Python step to round-off.
"""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._util.errors import InteropError
from .c_export import C_FLAGS, write_files

if TYPE_CHECKING:
    from nhcontrol.design import MPCController, NMPCController, TVLQRController

__all__ = ["export_loop", "export_estimator", "controller_files", "estimator_files", "TEMPLATES", "QP_MAX_ITER",
           "STRICT_FLAGS"]

TEMPLATES = ("nhc_linalg.h", "nhc_linalg.c", "nhc_qp.h", "nhc_qp.c", "nhc_mpc.h", "nhc_mpc.c",
             "nhc_json.h", "nhc_json.c", "nhc_loop.c")
"""The model-independent C files of ``nhcontrol/interop/c_templates`` copied into every export."""

QP_MAX_ITER = 500
"""Iteration limit of the exported QP solver (constraint additions and drops per step); the
step then reports ``fallback: ...`` as the Python controller does after a failed QP."""

QP_TOL = 1e-12
"""Relative feasibility tolerance of the exported QP solver."""

STRICT_FLAGS = "-std=c99 -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror"
"""The warning flags every generated file compiles under (tested with gcc and clang)."""

_BIG = 1e308      # an absent bound in the tables (|bound| >= NHC_QP_INF: no constraint)


def _template(name: str) -> str:
    return resources.files("nhcontrol.interop").joinpath("c_templates", name).read_text(encoding="ascii")


def _num(v: float) -> str:
    v = float(v)
    if math.isinf(v):
        return repr(_BIG if v > 0 else -_BIG)
    if not math.isfinite(v):
        raise InteropError("a table of the export holds NaN; the controller's data are not finite")
    return repr(v)


def _table(name: str, values: Any, ctype: str = "double") -> str:
    """``static const <ctype> name[len] = {...};`` (at least one entry)."""
    arr = np.asarray(values).ravel()
    if ctype == "double":
        items = [_num(v) for v in arr]
    else:
        items = [str(int(v)) for v in arr]
    if not items:
        items = ["0"]
    lines = []
    for i in range(0, len(items), 6):
        lines.append("    " + ", ".join(items[i:i + 6]))
    return f"static const {ctype} {name}[{len(items)}] = {{\n" + ",\n".join(lines) + "\n};\n"


def _bounds(v: Any, size: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(v, dtype=float), (size,)).copy()


def _sample_times(ctrl: Any, count: int) -> np.ndarray:
    return float(ctrl.t0) + float(ctrl.dt) * np.arange(count)


def _nq(ctrl: Any) -> int:
    return int(np.asarray(ctrl.reference.x(float(ctrl.t0)), dtype=float).size)


def _deviation_matrix(ctrl: Any, steps: int) -> np.ndarray:
    """The matrix ``S`` with ``ctrl.deviation(t, x, ẋ) = S [x − x0(t); ẋ − ẋ0(t)]`` (the
    deviation, the linearization's or a user callable, and the state map), identified at the
    first sample and checked at three samples with other offsets; InteropError when the
    deviation is not of this form (a C export cannot run a Python callable)."""
    ref = ctrl.reference
    nq = _nq(ctrl)
    t = float(ctrl.t0)
    x0, xd0 = np.asarray(ref.x(t), float), np.asarray(ref.xd(t), float)
    base = np.asarray(ctrl.deviation(t, x0, xd0), float)
    S = np.empty((base.size, 2 * nq))
    for i in range(2 * nq):           # unit steps: exact for an affine map (no truncation)
        e = np.zeros(2 * nq)
        e[i] = 1.0
        S[:, i] = np.asarray(ctrl.deviation(t, x0 + e[:nq], xd0 + e[nq:]), float) - base
    S[np.abs(S) < 1e-13 * max(1.0, float(np.abs(S).max(initial=0.0)))] = 0.0   # round-off
    rng = np.random.default_rng(7)
    for ts in sorted({t, t + ctrl.dt * (steps // 2), t + ctrl.dt * max(steps - 1, 0)}):
        r = 0.1 * rng.standard_normal(2 * nq)
        xs, xds = np.asarray(ref.x(ts), float), np.asarray(ref.xd(ts), float)
        got = np.asarray(ctrl.deviation(ts, xs + r[:nq], xds + r[nq:]), float)
        if got.shape != base.shape or not np.allclose(got, S @ r, rtol=1e-9, atol=1e-12):
            raise InteropError(
                f"the controller's deviation is not S [x - x0(t); xd - xd0(t)] with a constant S "
                f"(checked at t = {ts:.6g}); the C export evaluates the deviation as such a map: use "
                f"the default deviation, a linearization's, or a linear deviation with a constant "
                f"state_map")
    return S


def _files_common(files: dict[str, str]) -> None:
    for name in TEMPLATES:
        files[name] = _template(name)


def _makefile(sources: list[str], estimator: bool) -> str:
    objs = " ".join(s[:-2] + ".o" for s in sources)
    return f"""# Builds the closed-loop harness nhc_loop of an exported nhcontrol controller{' and estimator' if estimator else ''}.
# make CC=clang CFLAGS="-O2 -std=c99 ..." overrides the compiler and its flags.
CC ?= cc
CFLAGS ?= {C_FLAGS}
OBJS = {objs}

nhc_loop: $(OBJS)
\t$(CC) $(CFLAGS) -o nhc_loop $(OBJS) -lm

%.o: %.c *.h
\t$(CC) $(CFLAGS) -c $< -o $@

clean:
\trm -f nhc_loop $(OBJS)

.PHONY: clean
"""


_README = """# {title}

Generated by nhcontrol {version}; do not edit. Standalone C99: no Python, no allocation
(`malloc`, `calloc`, `realloc`, `free` are never called), no global mutable state outside the
caller-owned workspace (`nhc_ctrl_workspace`{est_ws}; its size in bytes is
`NHC_CTRL_WORKSPACE_BYTES`{est_bytes}, reported by `nhc_loop` as `workspace_bytes`).

Build and run the closed-loop harness:

    make                      # or: make CC=clang CFLAGS="-O2 -std=c99"
    ./nhc_loop < states.jsonl > inputs.jsonl

Each input line is one JSON object, {line_format}; each output line is
`{{"u": [...], "status": "..."}}` (`"u": null` and `"status": "refused: ..."` for a line
that cannot be used); the last line is
`{{"summary": {{"steps", "median_step_s", "max_step_s", "workspace_bytes"}}}}`, the step times
measured with `clock_gettime(CLOCK_MONOTONIC)` around the control call only.

Controller: {what}
Worst case per step: the QP solver stops after `NHC_CTRL_QP_MAX_ITER` = {qp_max} active-set
changes (each O(n^2 + m n) for n variables and m constraint rows; the step then takes the
named fallback), the exported model's Newton iteration on C(x) = 0 after 60 steps per node;
no other loop depends on the data.
Schedule: samples k = 0 ... {steps_m1} at t = t0 + k dt (t0 = {t0!r}, dt = {dt!r}); a time
outside is refused.

Files: {files}.

Licence: every file here was written by nhcontrol (the QP solver `nhc_qp.c` is nhcontrol's
own implementation of the dual active-set method of D. Goldfarb and A. Idnani, Mathematical
Programming 27 (1983) 1-33); they carry nhcontrol's licence ({licence}). No third-party
source is included.
"""


def _licence() -> str:
    try:
        from importlib.metadata import metadata

        md = metadata("nhcontrol")
        return str(md.get("License") or md.get("License-Expression") or "see the nhcontrol package")
    except Exception:   # noqa: BLE001 - a source checkout without metadata
        return "see the nhcontrol package"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("nhcontrol")
    except Exception:   # noqa: BLE001
        return "(source)"


# ------------------------------------------------------------------------------------ MPC
def _mpc_checks(ctrl: Any) -> None:
    mpc = ctrl.mpc
    if mpc.soft_output is not None and not float(mpc.soft_output[1]) > 0.0:
        raise InteropError("soft output bounds need a positive quadratic penalty rho2 for the C "
                           f"export: soft_output={tuple(mpc.soft_output)}")
    if mpc.soft_state is not None and not float(mpc.soft_state[1]) > 0.0:
        raise InteropError("soft state bounds need a positive quadratic penalty rho2 for the C export "
                           "(its dense QP solver needs a strictly convex programme): "
                           f"soft_state={tuple(mpc.soft_state)}")


def _mpc_problem_tables(mpc: Any) -> tuple[str, str, str]:
    """The constant weights and bounds of an LTVMPC and the ``nhc_mpc_problem`` initialiser."""
    n, k = mpc.nstates, mpc.ninputs
    b = mpc.bounds
    xlo, xhi = _bounds(b["x_min"], n), _bounds(b["x_max"], n)
    ix = np.flatnonzero(np.isfinite(xlo) | np.isfinite(xhi))
    src = "".join([_table("QW", mpc.Q), _table("RW", mpc.R),
                   _table("UMIN", _bounds(b["u_min"], k)), _table("UMAX", _bounds(b["u_max"], k)),
                   _table("DUMIN", _bounds(b["du_min"], k)), _table("DUMAX", _bounds(b["du_max"], k)),
                   _table("XMIN", xlo), _table("XMAX", xhi), _table("IX", ix, "int")])
    soft = mpc.soft_state is not None and ix.size > 0
    rho = tuple(float(r) for r in mpc.soft_state) if soft else (0.0, 0.0)
    py = int(mpc.noutputs)
    iy = np.asarray(mpc._idx["y"], int) if py else np.zeros(0, int)
    softy = mpc.soft_output is not None and iy.size > 0
    rhoy = tuple(float(r) for r in mpc.soft_output) if softy else (0.0, 0.0)
    src += "".join([_table("YMIN", _bounds(b["y_min"], py) if py else [0.0]),
                    _table("YMAX", _bounds(b["y_max"], py) if py else [0.0]),
                    _table("IY", iy, "int")])
    init = (f"static const nhc_mpc_problem PROB = {{{mpc.horizon}, {n}, {k}, {ix.size}, IX, "
            f"NHC_CTRL_QP_MAX_ITER, {QP_TOL!r}, QW, RW, UMIN, UMAX, DUMIN, DUMAX, XMIN, XMAX, "
            f"{1 if soft else 0}, {rho[0]!r}, {rho[1]!r}, {py}, {iy.size}, IY, YMIN, YMAX, "
            f"{1 if softy else 0}, {rhoy[0]!r}, {rhoy[1]!r}}};\n")
    return src, init, f"{ix.size}, {1 if soft else 0}, {iy.size}, {1 if softy else 0}"


def _schedule_index(schedule: Any, js: Any, which: str) -> tuple[np.ndarray, np.ndarray]:
    """The matrices ``schedule.P(j)`` / ``schedule.K(j)`` used over ``js`` (``which`` = "P"
    or "K") and the index of each ``j`` among them (the schedule's own wrapping and clipping)."""
    table = np.asarray(schedule.lqr.P if which == "P" else schedule.lqr.K, float)
    js = np.asarray(js, dtype=int)
    if schedule.period:
        js = js % int(schedule.period)
    rows = np.minimum(js, table.shape[0] - 1)
    used = np.unique(rows)
    return table[used], np.searchsorted(used, rows)


_INIT_C = """void nhc_ctrl_init(nhc_ctrl_workspace *ws)
{
    int i;
    for (i = 0; i < NHC_CTRL_K; i++) ws->u_prev[i] = 0.0;
    ws->started = 0;
    ws->has_plan = 0;
    ws->plan_k = -1;
}
"""


def _riccati_tables(ctrl: Any, K: int) -> str:
    """The C tables of the Riccati schedule a step reads: the terminal weights ``P(k + N)`` (or
    the fixed ``Q_f``) and the fallback gains ``K(k)``, each with its index per sample."""
    N = ctrl.horizon
    if ctrl.terminal == "riccati":
        Pm, pidx = _schedule_index(ctrl.schedule, np.arange(N, K + N), "P")
    else:
        Pm, pidx = np.asarray(ctrl.mpc._Qf, float)[None], np.zeros(K, int)
    Km, kidx = _schedule_index(ctrl.schedule, np.arange(K), "K")
    return ("/* terminal weights P(k + N) of the Riccati schedule (or the fixed Qf), index per sample */\n"
            + _table("PF", Pm) + _table("PIDX", pidx, "int")
            + "/* the LQR gains K(k) of the fallback and their index per sample */\n"
            + _table("KG", Km) + _table("KIDX", kidx, "int"))


def _output_tables(ctrl: Any, K: int) -> tuple[str, str, str, int]:
    """The output bounds' data of an MPCController step: C tables, the C that fills the window
    buffer ``Yw``, the ``Cy, Dy, y_ref`` arguments of ``nhc_mpc_solve_y`` and the buffer size."""
    mpc = ctrl.mpc
    py, N, n, k = int(mpc.noutputs), ctrl.horizon, mpc.nstates, mpc.ninputs
    if not py:
        return "", "", "NULL, NULL, NULL", 1
    src, copy = "", ""
    yref = "NULL"
    if ctrl.y_ref is not None:
        ts = _sample_times(ctrl, K + N + 1)
        src += _table("YREFT", np.array([np.asarray(ctrl.y_ref(t), float) for t in ts]))
        yref = "YREFT + kk * PROB.py"
    if ctrl._Cy_seq is None:          # one window for every step (LTVMPC's own)
        src += _table("CYW", mpc._Cy)
        dy = "NULL"
        if mpc._Dy is not None:
            src += _table("DYW", mpc._Dy)
            dy = "DYW"
        return src, "", f"CYW, {dy}, {yref}", 1
    # the outputs of the samples k+1 ... k+N (wrapped or clipped like the model's steps)
    Cs = np.asarray(ctrl._Cy_seq, float)
    rows = np.array([np.minimum(ctrl._indices(kk + 1, N), Cs.shape[0] - 1) for kk in range(K)])
    used = np.unique(rows)
    src += _table("CYS", Cs[used]) + _table("CYIDX", np.searchsorted(used, rows), "int")
    size = N * py * n
    copy = (f"    for (j = 0; j < N; j++)\n        for (i = 0; i < {py * n}; i++) "
            f"Yw[j * {py * n} + i] = CYS[CYIDX[kk * N + j] * {py * n} + i];\n")
    dy = "NULL"
    if ctrl._Dy_seq is not None:
        Ds = np.asarray(ctrl._Dy_seq, float)
        drows = np.minimum(rows, Ds.shape[0] - 1)
        dused = np.unique(drows)
        src += _table("DYS", Ds[dused]) + _table("DYIDX", np.searchsorted(dused, drows), "int")
        copy += (f"    for (j = 0; j < N; j++)\n        for (i = 0; i < {py * k}; i++) "
                 f"Yw[{size} + j * {py * k} + i] = DYS[DYIDX[kk * N + j] * {py * k} + i];\n")
        dy = f"Yw + {size}"
        size += N * py * k
    elif mpc._Dy is not None:
        src += _table("DYW", mpc._Dy)
        dy = "DYW"
    return src, copy, f"Yw, {dy}, {yref}", size


def _mpc_controller_files(ctrl: MPCController, steps: int | None) -> tuple[dict[str, str], dict]:
    from ..design import MPCController

    if not isinstance(ctrl, MPCController):
        raise InteropError(f"expected an MPCController, got {type(ctrl).__name__}")
    _mpc_checks(ctrl)
    K = int(ctrl.steps if steps is None else steps)
    if K < 1:
        raise InteropError(f"steps must be a positive number of samples, got {steps!r}")
    mpc = ctrl.mpc
    N, n, k = ctrl.horizon, mpc.nstates, mpc.ninputs
    nq = _nq(ctrl)
    ni = int(ctrl.ni)                    # integrators of the offset-free tracking (appended)
    S = _deviation_matrix(ctrl, K)
    if S.shape[0] != n - ni:
        raise InteropError(f"the deviation has {S.shape[0]} entries, the MPC model {n - ni} states")
    ci = np.asarray(ctrl.Ci, float) if ni else np.zeros((1, 1))
    ts = _sample_times(ctrl, K + N + 1)
    ref = ctrl.reference
    refx = np.hstack([np.asarray(ref.x(ts[:K]), float).reshape(K, nq),
                      np.asarray(ref.xd(ts[:K]), float).reshape(K, nq)])
    uref = np.asarray(ctrl.u_ref(ts[:K + N]), float).reshape(K + N, k)
    win = ctrl._indices(0, K + N)
    used = np.unique(win)
    remap = np.searchsorted(used, win)
    Ad, Bd = np.asarray(ctrl.Ad)[used], np.asarray(ctrl.Bd)[used]
    xref = None
    if ctrl.x_ref is not None:
        xref = np.array([np.asarray(ctrl.x_ref(t), float) for t in ts])
    prob_src, prob_init, nbx = _mpc_problem_tables(mpc)
    out_src, out_copy, out_args, out_work = _output_tables(ctrl, K)
    h = f"""/* LTV-MPC controller exported by nhcontrol (MPCController); do not edit.
 * nhc_ctrl_step(ws, t, x, xd, u, &status): the input at the sample t for the plant state
 * (x, xd) (NHC_CTRL_NQ coordinates and velocities); status "optimal", "fallback: shifted plan"
 * or "fallback: lqr" as in Python; returns 0, or 1 (u not written) for a time outside the
 * exported schedule. The workspace holds the controller's memory (the previous input and the
 * last plan) and all scratch: NHC_CTRL_WORKSPACE_BYTES bytes, caller-owned. */
#ifndef NHC_CONTROLLER_H
#define NHC_CONTROLLER_H
#include "nhc_mpc.h"
#define NHC_CTRL_NQ {nq}
#define NHC_CTRL_NX {n}
#define NHC_CTRL_NI {ni}
#define NHC_CTRL_K {k}
#define NHC_CTRL_HORIZON {N}
#define NHC_CTRL_STEPS {K}
#define NHC_CTRL_QP_MAX_ITER {QP_MAX_ITER}
#define NHC_CTRL_WORK (NHC_MPC_WORK({N}, {n}, {k}, {nbx}) + {2 * n + 2 * nq + N * n * n + N * n * k + N * k + (N + 1) * n + out_work})
#define NHC_CTRL_IWORK NHC_MPC_IWORK({N}, {n}, {k}, {nbx})
typedef struct {{
    double u_prev[NHC_CTRL_K];
    double z[NHC_CTRL_NI + 1];          /* the integrators of the offset-free tracking */
    double plan_u[NHC_CTRL_HORIZON * NHC_CTRL_K];
    long plan_k;
    int started;
    int has_plan;
    double work[NHC_CTRL_WORK];
    int iwork[NHC_CTRL_IWORK];
}} nhc_ctrl_workspace;
#define NHC_CTRL_WORKSPACE_BYTES ((unsigned long)sizeof(nhc_ctrl_workspace))
void nhc_ctrl_init(nhc_ctrl_workspace *ws);
int nhc_ctrl_step(nhc_ctrl_workspace *ws, double t, const double *x, const double *xd, double *u,
                  const char **status);
#endif
"""
    c = f"""/* LTV-MPC controller exported by nhcontrol (MPCController); do not edit. */
#include <math.h>
#include <stddef.h>
#include "nhc_controller.h"
#include "nhc_mpc.h"
#include "nhc_qp.h"

static const double T0 = {float(ctrl.t0)!r}, DT = {float(ctrl.dt)!r};
/* deviation S [x - x0(t_k); xd - xd0(t_k)] (NX x 2 NQ) */
{_table("SDEV", S)}/* the tracked components C_i of the integrators z_(k+1) = z_k + dt C_i dx_k */
{_table("CI", ci)}/* the reference [x0; xd0] at the samples (STEPS x 2 NQ) */
{_table("REF", refx)}/* the feed-forward u0 of the samples 0 ... STEPS + N - 1 */
{_table("UREF", uref)}/* the discrete model's steps used and the step of each sample */
{_table("AD", Ad)}{_table("BD", Bd)}{_table("WIN", remap, "int")}{_riccati_tables(ctrl, K)}{_table("XREF", xref) if xref is not None else ""}{out_src}{prob_src}
{prob_init}
{_INIT_C}
int nhc_ctrl_step(nhc_ctrl_workspace *ws, double t, const double *x, const double *xd, double *u,
                  const char **status)
{{
    const int N = NHC_CTRL_HORIZON, n = NHC_CTRL_NX, k = NHC_CTRL_K, nq = NHC_CTRL_NQ;
    double *dx = ws->work, *s = dx + n, *A = s + 2 * nq, *B = A + N * n * n, *du = B + N * n * k;
    double *xp = du + N * k, *Yw = xp + (N + 1) * n, *W = Yw + {out_work};
    const double *ur, *up;
    int kk, i, j, st, iters;
    kk = nhc_sample(t, T0, DT, NHC_CTRL_STEPS);
    if (kk < 0) {{
        *status = "refused: t outside the exported schedule";
        return 1;
    }}
    nhc_deviation(SDEV, REF + kk * 2 * nq, x, xd, nq, n - NHC_CTRL_NI, s, dx);
    for (i = 0; i < NHC_CTRL_NI; i++) dx[n - NHC_CTRL_NI + i] = ws->started ? ws->z[i] : 0.0;
    for (j = 0; j < N; j++) {{
        const int w = WIN[kk + j];
        for (i = 0; i < n * n; i++) A[j * n * n + i] = AD[w * n * n + i];
        for (i = 0; i < n * k; i++) B[j * n * k + i] = BD[w * n * k + i];
    }}
    ur = UREF + kk * k;
    up = ws->started ? ws->u_prev : ur;
{out_copy}    st = nhc_mpc_solve_y(&PROB, dx, A, B, NULL, PF + PIDX[kk] * n * n, NULL, NULL, ur, up,
                         {"XREF + kk * n" if xref is not None else "NULL"}, {out_args}, du, xp,
                         &iters, W, ws->iwork);
    if (st == NHC_QP_OPTIMAL) {{
        nhc_mpc_project(&PROB, ur, du, up, u);
        for (i = 0; i < N * k; i++) ws->plan_u[i] = ur[i] + du[i];
        ws->plan_k = kk;
        ws->has_plan = 1;
        *status = "optimal";
    }} else {{
        st = nhc_mpc_fallback(&PROB, ws->has_plan, ws->plan_k, kk, ws->plan_u, ur, up,
                              KG + KIDX[kk] * k * n, dx, n, u);
        *status = st == 1 ? "fallback: shifted plan" : "fallback: lqr";
    }}
    for (i = 0; i < NHC_CTRL_NI; i++) {{
        double v = dx[n - NHC_CTRL_NI + i];
        for (j = 0; j < n - NHC_CTRL_NI; j++) v += DT * CI[i * (n - NHC_CTRL_NI) + j] * dx[j];
        ws->z[i] = v;
    }}
    for (i = 0; i < k; i++) ws->u_prev[i] = u[i];
    ws->started = 1;
    return 0;
}}
"""
    meta = {"controller": "mpc", "horizon": N, "nstates": n, "ninputs": k, "ncoordinates": nq,
            "steps": K, "t0": float(ctrl.t0), "dt": float(ctrl.dt), "qp_max_iter": QP_MAX_ITER,
            "what": f"LTV-MPC (N = {N}, {n} states, {k} inputs), condensed QP of {N * k} inputs"
                    + (" and the slacks of the soft state bounds" if mpc.soft_state is not None else "")}
    return {"nhc_controller.h": h, "nhc_controller.c": c}, meta


# ------------------------------------------------------------------------------------ dispatch
def controller_files(controller: Any, steps: int | None = None) -> tuple[dict[str, str], dict]:
    """The generated controller files ``{name: text}`` (``nhc_controller.h/.c`` and, for the
    RTI NMPC, the model's ``nhc_model.h/.c``) and their metadata."""
    from ..design import MPCController, NMPCController, TVLQRController

    if isinstance(controller, MPCController):
        return _mpc_controller_files(controller, steps)
    if isinstance(controller, NMPCController):
        from ._c_nmpc import nmpc_controller_files

        return nmpc_controller_files(controller, steps)
    if isinstance(controller, TVLQRController):
        from ._c_estimators import tvlqr_controller_files

        return tvlqr_controller_files(controller, steps)
    raise InteropError(f"no C export for a {type(controller).__name__}; exportable controllers: "
                       "MPCController, NMPCController (mode='rti'), TVLQRController")


def estimator_files(estimator: Any, steps: int | None = None,
                    reference: Any = None) -> tuple[dict[str, str], dict]:
    """The generated estimator files (``nhc_estimator.h/.c``, the model's for the EKF)."""
    from ..design import ExtendedKalmanFilter, KalmanEstimator
    from ._c_estimators import ekf_files, kalman_files

    if isinstance(estimator, KalmanEstimator):
        return kalman_files(estimator, steps, reference)
    if isinstance(estimator, ExtendedKalmanFilter):
        return ekf_files(estimator, steps, reference)
    raise InteropError(f"no C export for a {type(estimator).__name__}; exportable estimators: "
                       "KalmanEstimator, ExtendedKalmanFilter")


def export_loop(controller: MPCController | NMPCController | TVLQRController, out: str | Path,
                estimator: Any = None, *, steps: int | None = None, force: bool = False) -> dict:
    """Write a controller (and an estimator) as standalone C99 with the harness ``nhc_loop``.

    Parameters
    ----------
    controller : MPCController, NMPCController (``mode="rti"``) or TVLQRController
    out : path-like
        Output folder (created). ``make`` there builds ``nhc_loop``.
    estimator : KalmanEstimator or ExtendedKalmanFilter, optional
        With an estimator the harness reads ``{"t", "y"}`` lines: the estimator's update
        (prediction with the input the controller applied at the previous sample, then the
        measurement update) gives the state the controller acts on.
    steps : int, optional
        Samples the exported schedule covers (default: the controller's ``steps``).
    force : bool, default False
        Overwrite files in ``out`` that nhcontrol did not write (never a symbolic link); the
        files are written through `nhcontrol._util.staging.write_tree` (staging folder, a
        manifest ``.nhcontrol-export.json``).

    Returns
    -------
    dict
        The metadata also written to ``nhc_export.json`` (``files``, ``controller``,
        ``estimator``, ``workspace`` ...).

    Raises
    ------
    InteropError
        A controller or an option the C export does not cover (named in the message).
    ExportError
        ``out`` cannot be written; `ExportConflictError` when it holds files nhcontrol did not
        write and ``force`` is False (nothing is written then).
    """
    files, meta = controller_files(controller, steps)
    est_meta = None
    if estimator is not None:
        efiles, est_meta = estimator_files(estimator, meta["steps"] + 1, controller.reference)
        for name, text in efiles.items():
            if name in files and files[name] != text:
                raise InteropError(f"the controller and the estimator need different {name} (two "
                                   "different models); export them into separate folders")
            files[name] = text
        if est_meta["ncoordinates"] != meta["ncoordinates"]:
            raise InteropError(f"the estimator estimates {est_meta['ncoordinates']} coordinates, the "
                               f"controller needs {meta['ncoordinates']}")
    files.pop("nhc_check.c", None)
    files.pop("Makefile", None)
    _files_common(files)
    files["nhc_loop_config.h"] = ("/* Generated by nhcontrol; do not edit. */\n#ifndef NHC_LOOP_CONFIG_H\n"
                                  "#define NHC_LOOP_CONFIG_H\n"
                                  f"#define NHC_LOOP_ESTIMATOR {1 if estimator is not None else 0}\n"
                                  + ("#define NHC_LOOP_WORKSPACE_BYTES (NHC_CTRL_WORKSPACE_BYTES + "
                                     "NHC_EST_WORKSPACE_BYTES)\n" if estimator is not None else
                                     "#define NHC_LOOP_WORKSPACE_BYTES NHC_CTRL_WORKSPACE_BYTES\n")
                                  + "#endif\n")
    sources = sorted(n for n in files if n.endswith(".c"))
    files["Makefile"] = _makefile(sources, estimator is not None)
    names = sorted(files) + ["README.md", "nhc_export.json"]
    files["README.md"] = _README.format(
        title=f"nhcontrol {meta['controller']} controller" + (
            f" with {est_meta['estimator']} estimator" if est_meta else "") + " in C99",
        version=_version(), est_ws=", `nhc_est_workspace`" if est_meta else "",
        est_bytes="; `NHC_EST_WORKSPACE_BYTES` for the estimator" if est_meta else "",
        line_format=('`{"t": ..., "y": [...]}` (the sample time and the measurements)' if est_meta
                     else '`{"t": ..., "x": [...], "xd": [...]}` (the sample time, the coordinates '
                          'and the velocities of the plant)'),
        what=meta["what"] + (f"; estimator: {est_meta['what']}" if est_meta else ""),
        steps_m1=meta["steps"] - 1, t0=meta["t0"], dt=meta["dt"], files=", ".join(names),
        qp_max=QP_MAX_ITER,
        licence=_licence())
    out_meta = {"controller": meta, "estimator": est_meta, "files": names, "sources": sources,
                "cflags": C_FLAGS, "strict_flags": STRICT_FLAGS}
    files["nhc_export.json"] = json.dumps(out_meta, indent=1)
    info = write_files(out, files, force=force, what=f"{type(controller).__name__}.export_c")
    out_meta["directory"] = info.get("directory")
    return out_meta


def export_estimator(estimator: Any, out: str | Path, *, controller: Any = None,
                     reference: Any = None, steps: int | None = None, force: bool = False) -> dict:
    """Write an estimator (`KalmanEstimator`, `ExtendedKalmanFilter`) as standalone C99.

    With ``controller`` this is ``export_loop(controller, out, estimator)`` (the harness closes
    the loop). Alone, the folder holds ``nhc_estimator.h/.c`` (and the model for the EKF), the
    model-independent C and a ``Makefile`` whose default target compiles them (``make``) into
    objects to link into your program: ``nhc_est_init``, ``nhc_est_update(ws, t, y, u_prev, x,
    xd, &status)`` with one caller-owned ``nhc_est_workspace``.

    Parameters
    ----------
    estimator : KalmanEstimator or ExtendedKalmanFilter
        Its current state (estimate, covariance, held input, time) is the exported start.
    out : path-like
    controller : MPCController, NMPCController or TVLQRController, optional
    reference : Reference, optional
        The reference whose coordinates the Kalman filter's deviations are added to (required
        for a `KalmanEstimator` without ``controller``; the controller's otherwise).
    steps : int, optional
        Samples covered (the Kalman filter's horizon at most).
    force : bool, default False
        Overwrite files in ``out`` that nhcontrol did not write.

    Returns
    -------
    dict
        The metadata written to ``nhc_export.json``.
    """
    if controller is not None:
        return export_loop(controller, out, estimator, steps=steps, force=force)
    files, meta = estimator_files(estimator, steps, reference)
    _files_common(files)
    files.pop("nhc_loop.c")
    sources = sorted(n for n in files if n.endswith(".c"))
    objs = " ".join(s[:-2] + ".o" for s in sources)
    files["Makefile"] = (f"# Compiles the exported nhcontrol estimator (objects to link into your program).\n"
                         f"CC ?= cc\nCFLAGS ?= {C_FLAGS}\nOBJS = {objs}\n\nall: $(OBJS)\n\n"
                         f"%.o: %.c *.h\n\t$(CC) $(CFLAGS) -c $< -o $@\n\nclean:\n\trm -f $(OBJS)\n\n"
                         f".PHONY: all clean\n")
    out_meta = {"controller": None, "estimator": meta, "files": sorted(files) + ["nhc_export.json"],
                "sources": sources, "cflags": C_FLAGS, "strict_flags": STRICT_FLAGS}
    files["nhc_export.json"] = json.dumps(out_meta, indent=1)
    info = write_files(out, files, force=force, what=f"{type(estimator).__name__}.export_c")
    out_meta["directory"] = info.get("directory")
    return out_meta
