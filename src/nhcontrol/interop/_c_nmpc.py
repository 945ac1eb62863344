"""C export of the real-time-iteration NMPC (`NMPCController(mode="rti")`).

The generated step is the Python one (``nhcontrol.design.nmpc``), in C: shift the plan, make
the ``N`` nodes admissible and re-linearize them exactly through the exported model
(``nhc_rhs``, ``nhc_accelerations``, ``nhc_linearize`` of [`export_c()`][nhcontrol.interop.export_c]),
discretize with one exponential of the stacked augmented matrices (the same scaling for the
stack, degree-10 Taylor polynomial, as ``_expm_nodes``), write the QP about the plan (linear
terms ``2 Q (X̄ − X_ref)``, ``2 R (ū − u_ref)``, defects ``c_j``) and solve it condensed
(``nhc_mpc.c``); the same named fallbacks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util.errors import InteropError
from .c_controllers import _INIT_C, QP_MAX_ITER, _mpc_checks, _mpc_problem_tables, _nq, \
    _riccati_tables, _sample_times, _table


def nmpc_controller_files(ctrl: Any, steps: int | None) -> tuple[dict[str, str], dict]:
    """``nhc_controller.h/.c`` of an RTI NMPC and the model files it calls."""
    from .c_export import export_c

    if ctrl.mode != "rti":
        raise InteropError("the C export covers the real-time iteration (mode='rti'); an SQP "
                           "controller repeats it until convergence and is not exported")
    _mpc_checks(ctrl)
    K = int(ctrl.steps if steps is None else steps)
    if K < 1:
        raise InteropError(f"steps must be a positive number of samples, got {steps!r}")
    meta_m, files = export_c(ctrl.cm, ".", ctrl.partition, write=False)
    mpc = ctrl.mpc
    N, ns, k, n = ctrl.horizon, ctrl.ns, ctrl.k, ctrl.n
    if meta_m["ns"] != ns or meta_m["k"] != k or meta_m["n"] != n:
        raise InteropError("internal: the exported model's sizes differ from the controller's")
    if k < 1:
        raise InteropError("the C export of the NMPC needs a model with inputs")
    nq = _nq(ctrl)
    ts = _sample_times(ctrl, K + N + 1)
    ref = ctrl.reference
    xs = np.asarray(ref.x(ts), float).reshape(K + N + 1, n)
    xds = np.asarray(ref.xd(ts), float).reshape(K + N + 1, n)
    Xref = ctrl.reduce(xs, xds)
    uref = np.asarray(ctrl.u_ref(ts[:K + N]), float).reshape(K + N, k)
    prob_src, prob_init, nbx = _mpc_problem_tables(mpc)
    py = int(mpc.noutputs)
    ytab, yfill, yargs = "", "", "NULL, NULL, NULL"
    if py:
        # output bounds on the absolute y = C X + D u: the plan's outputs are the reference of the
        # QP's rows (NMPCController._plan_outputs), C_j, D_j the LTVMPC's constant window
        ytab = _table("CYW", mpc._Cy) + (_table("DYW", mpc._Dy) if mpc._Dy is not None else "")
        dterm = (f"            for (q = 0; q < k; q++) v += DYW[((j - 1) * {py} + i) * k + q] * "
                 f"Ubar[(j < N ? j : N - 1) * k + q];\n" if mpc._Dy is not None else "")
        yfill = (f"        for (i = 0; i < {py}; i++) Yr[i] = 0.0;\n"
                 f"        for (j = 1; j <= N; j++)\n"
                 f"            for (i = 0; i < {py}; i++) {{\n"
                 f"            double v = 0.0;\n"
                 f"            for (q = 0; q < ns; q++) v += CYW[((j - 1) * {py} + i) * ns + q] * Xbar[j * ns + q];\n"
                 + dterm +
                 f"            Yr[j * {py} + i] = v;\n"
                 f"        }}\n")
        yargs = f"CYW, {'DYW' if mpc._Dy is not None else 'NULL'}, Yr"
    na, nad = len(ctrl._ai), len(ctrl._ad)
    ne = ns + k + 1
    absolute = ctrl.state_bounds == "absolute"
    scratch = ((N + 1) * ns * 6 + N * k * 4 + 2 * N * n + N * ns * ns + N * ns * k + N * ne * ne
               + 3 * ne * ne + 4 * n + 2 * ns + ns * ns + ns * k + max(meta_m["m"] + meta_m["l"], 1)
               + ns + (N + 1) * max(py, 1))
    h = f"""/* RTI nonlinear MPC exported by nhcontrol (NMPCController, mode="rti"); do not edit.
 * nhc_ctrl_step(ws, t, x, xd, u, &status): the input at the sample t for the plant state
 * (x, xd); status "optimal", "fallback: reference linearization", "fallback: shifted plan" or
 * "fallback: lqr" as in Python; returns 0, or 1 (u not written) for a time outside the
 * exported schedule. The model (nhc_model.h) is re-linearized exactly at the N nodes of the
 * plan at every sample. Workspace: NHC_CTRL_WORKSPACE_BYTES bytes, caller-owned. */
#ifndef NHC_CONTROLLER_H
#define NHC_CONTROLLER_H
#include <stdint.h>
#include "nhc_model.h"
#include "nhc_mpc.h"
#define NHC_CTRL_NQ {nq}
#define NHC_CTRL_NX {ns}
#define NHC_CTRL_K {k}
#define NHC_CTRL_HORIZON {N}
#define NHC_CTRL_STEPS {K}
#define NHC_CTRL_QP_MAX_ITER {QP_MAX_ITER}
#define NHC_CTRL_SCRATCH {scratch}
#define NHC_CTRL_WORK (NHC_MPC_WORK({N}, {ns}, {k}, {nbx}) + NHC_CTRL_SCRATCH)
#define NHC_CTRL_IWORK NHC_MPC_IWORK({N}, {ns}, {k}, {nbx})
typedef struct {{
    double u_prev[NHC_CTRL_K];
    double plan_X[(NHC_CTRL_HORIZON + 1) * NHC_CTRL_NX];
    double plan_U[NHC_CTRL_HORIZON * NHC_CTRL_K];
    double plan_x[(NHC_CTRL_HORIZON + 1) * NHC_N];
    long plan_k;
    int started;
    int has_plan;
    double work[NHC_CTRL_WORK];
    int iwork[NHC_CTRL_IWORK];
    double model_work[NHC_WORK];
    int64_t model_iwork[NHC_IWORK];
}} nhc_ctrl_workspace;
#define NHC_CTRL_WORKSPACE_BYTES ((unsigned long)sizeof(nhc_ctrl_workspace))
void nhc_ctrl_init(nhc_ctrl_workspace *ws);
int nhc_ctrl_step(nhc_ctrl_workspace *ws, double t, const double *x, const double *xd, double *u,
                  const char **status);
#endif
"""
    ai = ", ".join(str(int(i)) for i in ctrl._ai) or "0"
    ad = ", ".join(str(int(i)) for i in ctrl._ad) or "0"
    c = f"""/* RTI nonlinear MPC exported by nhcontrol (NMPCController, mode="rti"); do not edit. */
#include <math.h>
#include <stddef.h>
#include "nhc_controller.h"
#include "nhc_linalg.h"
#include "nhc_mpc.h"
#include "nhc_qp.h"

static const double T0 = {float(ctrl.t0)!r}, DT = {float(ctrl.dt)!r};
static const int AI[{max(na, 1)}] = {{{ai}}};
static const int AD[{max(nad, 1)}] = {{{ad}}};
/* the prediction model's parameters */
{_table("PARAM", ctrl.ev.p)}/* the reference in the linear state X = [x_ai, xd_ai, x_ad] at the samples 0 ... STEPS + N */
{_table("XREF", Xref)}/* the reference coordinates (the first guess of the nodes' dependent coordinates) */
{_table("XG", xs[:K + N])}/* the feed-forward u0 of the samples 0 ... STEPS + N - 1 */
{_table("UREF", uref)}{_riccati_tables(ctrl, K)}{ytab}{prob_src}
{prob_init}
{_INIT_C}
/* Phi_j, Gam_j, F_j = Xbar_j + gam_j at the nodes j < N and their full coordinates xf (the
   nodes made admissible, linearized exactly, discretized by the exponential-Euler step) */
static int nhc_nodes(nhc_ctrl_workspace *ws, const double *Xbar, const double *Ubar,
                     const double *xguess, double *Phi, double *Gam, double *F, double *xf,
                     double *S)
{{
    const int N = NHC_CTRL_HORIZON, ns = NHC_CTRL_NX, k = NHC_CTRL_K, ne = NHC_CTRL_NX + NHC_CTRL_K + 1;
    double *E = S, *Ex = E + N * ne * ne, *ew = Ex + ne * ne, *xd = ew + 2 * ne * ne, *xdd = xd + NHC_N;
    double *lam = xdd + NHC_N, *Xdot = lam + (NHC_C > 0 ? NHC_C : 1), *A = Xdot + ns, *B = A + ns * ns;
    double norm = 0.0;
    int i, j, q, st;
    for (j = 0; j < N; j++) {{
        double *x = xf + j * NHC_N, *Ej = E + j * ne * ne;
        st = nhc_rhs(Xbar + j * ns, Ubar + j * k, PARAM, xguess + j * NHC_N, Xdot, x, xd,
                     ws->model_work, NHC_WORK, ws->model_iwork);
        if (st) return st;
        st = nhc_accelerations(x, xd, Ubar + j * k, PARAM, xdd, lam, ws->model_work, NHC_WORK,
                               ws->model_iwork);
        if (st) return st;
        st = nhc_linearize(x, xd, xdd, lam, Ubar + j * k, PARAM, 0, NHC_ADMISSIBILITY_TOL,
                           NHC_COND_MAX, A, B, ws->model_work, NHC_WORK, ws->model_iwork);
        if (st) return st;
        if (!nhc_all_finite(A, ns * ns) || !nhc_all_finite(B, ns * k)) return NHC_SINGULAR;
        for (i = 0; i < ne * ne; i++) Ej[i] = 0.0;
        for (i = 0; i < ns; i++) {{
            for (q = 0; q < ns; q++) Ej[i * ne + q] = A[i * ns + q] * DT;
            for (q = 0; q < k; q++) Ej[i * ne + ns + q] = B[i * k + q] * DT;
            Ej[i * ne + ne - 1] = Xdot[i] * DT;
        }}
        {{
            const double nj = nhc_norm1_rows(Ej, ns, ne);
            if (nj > norm) norm = nj;
        }}
    }}
    for (j = 0; j < N; j++) {{
        nhc_expm_top(E + j * ne * ne, Ex, ns, ne, 10, 0.2, norm, ew);   /* rows ns...: zero */
        for (i = 0; i < ns; i++) {{
            for (q = 0; q < ns; q++) Phi[(j * ns + i) * ns + q] = Ex[i * ne + q];
            for (q = 0; q < k; q++) Gam[(j * ns + i) * k + q] = Ex[i * ne + ns + q];
            F[j * ns + i] = Xbar[j * ns + i] + Ex[i * ne + ne - 1];
        }}
    }}
    return 0;
}}

int nhc_ctrl_step(nhc_ctrl_workspace *ws, double t, const double *x, const double *xd, double *u,
                  const char **status)
{{
    const int N = NHC_CTRL_HORIZON, ns = NHC_CTRL_NX, k = NHC_CTRL_K, n = NHC_N, ne = NHC_CTRL_NX + NHC_CTRL_K + 1;
    double *Xbar = ws->work, *Ubar = Xbar + (N + 1) * ns, *xg = Ubar + N * k, *xf = xg + N * n;
    double *Phi = xf + N * n, *Gam = Phi + N * ns * ns, *F = Gam + N * ns * k, *cc = F + N * ns;
    double *e = cc + N * ns, *qx = e + (N + 1) * ns, *qu = qx + (N + 1) * ns, *du = qu + N * k;
    double *dX = du + N * k, *X0 = dX + (N + 1) * ns, *S = X0 + ns;
    double *Yr = S + N * ne * ne + 3 * ne * ne + 4 * n + 2 * ns + ns * ns + ns * k + (NHC_C > 0 ? NHC_C : 1);
    double *W = Yr + (N + 1) * {max(py, 1)};
    const double *Xr, *ur, *up, *Pn;
    int kk, i, j, q, st, iters, lin_fallback = 0;
    kk = nhc_sample(t, T0, DT, NHC_CTRL_STEPS);
    if (kk < 0) {{
        *status = "refused: t outside the exported schedule";
        return 1;
    }}
    Xr = XREF + kk * ns;
    ur = UREF + kk * k;
    up = ws->started ? ws->u_prev : ur;
    Pn = PF + PIDX[kk] * ns * ns;
    for (j = 0; j < {na}; j++) {{ X0[j] = x[AI[j]]; X0[{na} + j] = xd[AI[j]]; }}
    for (j = 0; j < {nad}; j++) X0[{2 * na} + j] = x[AD[j]];
    /* 1. shift the plan (or start from the reference) */
    if (ws->has_plan && kk - ws->plan_k == 1) {{
        for (j = 0; j <= N; j++)
            for (i = 0; i < ns; i++) Xbar[j * ns + i] = ws->plan_X[(j < N ? j + 1 : N) * ns + i];
        for (j = 0; j < N; j++)
            for (i = 0; i < k; i++) Ubar[j * k + i] = ws->plan_U[(j < N - 1 ? j + 1 : N - 1) * k + i];
        for (j = 0; j < N; j++)
            for (i = 0; i < n; i++) xg[j * n + i] = ws->plan_x[(j + 1) * n + i];
    }} else {{
        for (i = 0; i < (N + 1) * ns; i++) Xbar[i] = Xr[i];
        for (i = 0; i < N * k; i++) Ubar[i] = ur[i];
        for (i = 0; i < N * n; i++) xg[i] = XG[kk * n + i];
    }}
    for (i = 0; i < ns; i++) Xbar[i] = X0[i];
    for (i = 0; i < n; i++) xg[i] = x[i];
    /* 2-4. admissible nodes, exact re-linearization, discretization */
    st = nhc_nodes(ws, Xbar, Ubar, xg, Phi, Gam, F, xf, S);
    if (st) {{
        lin_fallback = 1;
        for (i = 0; i < (N + 1) * ns; i++) Xbar[i] = Xr[i];
        for (i = 0; i < N * k; i++) Ubar[i] = ur[i];
        for (i = 0; i < N * n; i++) xg[i] = XG[kk * n + i];
        st = nhc_nodes(ws, Xbar, Ubar, xg, Phi, Gam, F, xf, S);
    }}
    if (!st) {{
        /* 5. the QP about the plan */
        for (j = 0; j < N; j++)
            for (i = 0; i < ns; i++) cc[j * ns + i] = F[j * ns + i] - Xbar[(j + 1) * ns + i];
        for (i = 0; i < (N + 1) * ns; i++) e[i] = Xbar[i] - Xr[i];
        for (j = 0; j < N; j++)
            for (i = 0; i < ns; i++) {{
                double v = 0.0;
                for (q = 0; q < ns; q++) v += e[j * ns + q] * QW[q * ns + i];
                qx[j * ns + i] = 2.0 * v;
            }}
        for (i = 0; i < ns; i++) {{
            double v = 0.0;
            for (q = 0; q < ns; q++) v += Pn[i * ns + q] * e[N * ns + q];
            qx[N * ns + i] = 2.0 * v;
        }}
        for (j = 0; j < N; j++)
            for (i = 0; i < k; i++) {{
                double v = 0.0;
                for (q = 0; q < k; q++) v += (Ubar[j * k + q] - ur[j * k + q]) * RW[q * k + i];
                qu[j * k + i] = 2.0 * v;
            }}
        for (i = 0; i < ns; i++) X0[i] = 0.0;     /* X(t_k) - Xbar_0 */
{yfill}        st = nhc_mpc_solve_y(&PROB, X0, Phi, Gam, cc, Pn, qx, qu, Ubar, up, {"Xbar" if absolute else "e"},
                             {yargs}, du, dX, &iters, W, ws->iwork);
        if (st == NHC_QP_OPTIMAL) {{
            nhc_mpc_project(&PROB, Ubar, du, up, u);
            for (i = 0; i < (N + 1) * ns; i++) ws->plan_X[i] = Xbar[i] + dX[i];
            for (i = 0; i < N * k; i++) ws->plan_U[i] = Ubar[i] + du[i];
            for (i = 0; i < N * n; i++) ws->plan_x[i] = xf[i];
            for (i = 0; i < n; i++) ws->plan_x[N * n + i] = xf[(N - 1) * n + i];
            ws->plan_k = kk;
            ws->has_plan = 1;
            *status = lin_fallback ? "fallback: reference linearization" : "optimal";
            for (i = 0; i < k; i++) ws->u_prev[i] = u[i];
            ws->started = 1;
            return 0;
        }}
    }}
    /* fallbacks: the next input of the previous plan, else the LQR of the Riccati schedule */
    for (j = 0; j < {na}; j++) {{ e[j] = x[AI[j]]; e[{na} + j] = xd[AI[j]]; }}
    for (j = 0; j < {nad}; j++) e[{2 * na} + j] = x[AD[j]];
    for (i = 0; i < ns; i++) e[i] -= Xr[i];
    st = nhc_mpc_fallback(&PROB, ws->has_plan, ws->plan_k, kk, ws->plan_U, ur, up,
                          KG + KIDX[kk] * k * ns, e, ns, u);
    *status = st == 1 ? "fallback: shifted plan" : "fallback: lqr";
    for (i = 0; i < k; i++) ws->u_prev[i] = u[i];
    ws->started = 1;
    return 0;
}}
"""
    files = {name: text for name, text in files.items() if name in ("nhc_model.h", "nhc_model.c")}
    files["nhc_controller.h"] = h
    files["nhc_controller.c"] = c
    meta = {"controller": "rti", "horizon": N, "nstates": ns, "ninputs": k, "ncoordinates": nq,
            "steps": K, "t0": float(ctrl.t0), "dt": float(ctrl.dt), "qp_max_iter": QP_MAX_ITER,
            "model": meta_m["model"], "model_work_doubles": meta_m["work_doubles"],
            "what": (f"RTI nonlinear MPC (N = {N}, {ns} states, {k} inputs) re-linearizing the model "
                     f"{meta_m['model']!r} exactly at the nodes, condensed QP of {N * k} variables")}
    return files, meta
