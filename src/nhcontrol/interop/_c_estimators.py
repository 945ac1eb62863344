"""C export of the TV-LQR controller, the linearized Kalman filter (`KalmanEstimator`) and the
extended Kalman filter on the constraint manifold (`ExtendedKalmanFilter`).

The EKF's sample is the Python one (``nhcontrol.design.ekf``), in C: the exact ``A, B`` of the
third procedure at the estimate (``nhc_linearize`` of the exported model), ``Ad, Bd`` from one
exponential (degree-16 Taylor polynomial after scaling the 1-norm to ``1/4``, as ``_expm``),
the covariance ``Ad P Adᵀ + Bd Qw Bdᵀ + Qx``, classical Runge–Kutta on Eq. (2.119) with the
input held, the projection onto the manifold (``nhc_rhs``: Newton on ``C(x) = 0`` for
``x_d``, Eq. (2.76) for the dependent velocities), and the Joseph-form update with the output
matrix of the declared outputs through the partition (``output_matrices_from_terms``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util.errors import InteropError
from .c_controllers import _deviation_matrix, _nq, _sample_times, _table


def _ints(v: Any) -> str:
    items = [str(int(i)) for i in np.asarray(v).ravel()]
    return ", ".join(items) if items else "0"


# ------------------------------------------------------------------------------------ TV-LQR
def tvlqr_controller_files(ctrl: Any, steps: int | None) -> tuple[dict[str, str], dict]:
    """``nhc_controller.h/.c`` of a `TVLQRController`: ``u = clip(u0 − K_k δx_k)``."""
    Kg = np.asarray(ctrl.gains.K, float)
    Nh = int(ctrl.gains.horizon)
    K = int(Nh if steps is None else steps)
    if K < 1:
        raise InteropError(f"steps must be a positive number of samples, got {steps!r}")
    if K > Nh and not ctrl.periodic:
        raise InteropError(f"steps = {K} exceeds the LQR horizon of {Nh} samples (periodic=False)")
    kidx = np.arange(K) % Nh
    used = np.unique(kidx)
    Km, kidx = Kg[used], np.searchsorted(used, kidx)
    k, n = Kg.shape[1], Kg.shape[2]
    nq = _nq(ctrl)
    S = _deviation_matrix(ctrl, K)
    if S.shape[0] != n:
        raise InteropError(f"the deviation has {S.shape[0]} entries, the LQR gains {n} states")
    ts = _sample_times(ctrl, K)
    ref = ctrl.reference
    refx = np.hstack([np.asarray(ref.x(ts), float).reshape(K, nq),
                      np.asarray(ref.xd(ts), float).reshape(K, nq)])
    uref = np.asarray(ctrl.u_ref(ts), float).reshape(K, k)
    umin = np.broadcast_to(np.asarray(ctrl.u_min, float), (k,))
    umax = np.broadcast_to(np.asarray(ctrl.u_max, float), (k,))
    h = f"""/* Time-varying LQR tracking controller exported by nhcontrol (TVLQRController); do not edit.
 * nhc_ctrl_step(ws, t, x, xd, u, &status): u = clip(u0(t_k) - K_k S [x - x0(t_k); xd - xd0(t_k)]),
 * status "lqr"; returns 1 (u not written) for a time outside the exported schedule. */
#ifndef NHC_CONTROLLER_H
#define NHC_CONTROLLER_H
#define NHC_CTRL_NQ {nq}
#define NHC_CTRL_NX {n}
#define NHC_CTRL_K {k}
#define NHC_CTRL_STEPS {K}
typedef struct {{
    double work[2 * NHC_CTRL_NQ + NHC_CTRL_NX];
}} nhc_ctrl_workspace;
#define NHC_CTRL_WORKSPACE_BYTES ((unsigned long)sizeof(nhc_ctrl_workspace))
void nhc_ctrl_init(nhc_ctrl_workspace *ws);
int nhc_ctrl_step(nhc_ctrl_workspace *ws, double t, const double *x, const double *xd, double *u,
                  const char **status);
#endif
"""
    c = f"""/* Time-varying LQR tracking controller exported by nhcontrol; do not edit. */
#include <math.h>
#include "nhc_controller.h"
#include "nhc_mpc.h"

static const double T0 = {float(ctrl.t0)!r}, DT = {float(ctrl.dt)!r};
{_table("SDEV", S)}{_table("REF", refx)}{_table("UREF", uref)}{_table("KG", Km)}{_table("KIDX", kidx, "int")}{_table("UMIN", umin)}{_table("UMAX", umax)}
void nhc_ctrl_init(nhc_ctrl_workspace *ws)
{{
    int i;
    for (i = 0; i < 2 * NHC_CTRL_NQ + NHC_CTRL_NX; i++) ws->work[i] = 0.0;
}}

int nhc_ctrl_step(nhc_ctrl_workspace *ws, double t, const double *x, const double *xd, double *u,
                  const char **status)
{{
    const int n = NHC_CTRL_NX, k = NHC_CTRL_K, nq = NHC_CTRL_NQ;
    double *s = ws->work, *dx = s + 2 * nq;
    const double *Kg;
    int kk, i, q;
    kk = nhc_sample(t, T0, DT, NHC_CTRL_STEPS);
    if (kk < 0) {{
        *status = "refused: t outside the exported schedule";
        return 1;
    }}
    nhc_deviation(SDEV, REF + kk * 2 * nq, x, xd, nq, n, s, dx);
    Kg = KG + KIDX[kk] * k * n;
    for (i = 0; i < k; i++) {{
        double v = UREF[kk * k + i];
        for (q = 0; q < n; q++) v -= Kg[i * n + q] * dx[q];
        if (v < UMIN[i]) v = UMIN[i];
        if (v > UMAX[i]) v = UMAX[i];
        u[i] = v;
    }}
    *status = "lqr";
    return 0;
}}
"""
    meta = {"controller": "lqr", "nstates": n, "ninputs": k, "ncoordinates": nq, "steps": K,
            "t0": float(ctrl.t0), "dt": float(ctrl.dt),
            "what": f"time-varying LQR ({n} states, {k} inputs, {Km.shape[0]} gain matrices)"}
    return {"nhc_controller.h": h, "nhc_controller.c": c}, meta


# ------------------------------------------------------------------------------------ Kalman
def kalman_files(est: Any, steps: int | None, reference: Any = None) -> tuple[dict[str, str], dict]:
    """``nhc_estimator.h/.c`` of a `KalmanEstimator`: the deviation estimate, handed to the
    controller as the reference plus the estimated deviations of the filter's named states."""
    kf = est.kf
    if reference is None:
        raise InteropError("the C export of a KalmanEstimator needs the reference its deviations are "
                           "taken from (export it with a controller: export_loop(ctrl, out, est))")
    coords = list(getattr(reference, "coordinates", ()) or ())
    names = list(kf.states or ())
    if not names or not coords:
        raise InteropError("the KalmanEstimator's states must be named after the coordinates "
                           "(q, q_d) of the reference for the C export (a DiscreteLTV with states=)")
    nq = len(coords)
    sel = []
    for nm in names:
        if nm in coords:
            sel.append(coords.index(nm))
        elif nm.endswith("_d") and nm[:-2] in coords:
            sel.append(nq + coords.index(nm[:-2]))
        else:
            raise InteropError(f"the Kalman filter state {nm!r} is neither a coordinate of the "
                               f"reference {coords} nor its velocity (<q>_d)")
    Nh = int(kf.horizon)
    K = Nh + 1 if steps is None else min(int(steps), Nh + 1)
    n, p, k = kf.nstates, kf.noutputs, kf.Bd.shape[-1]
    ts = float(est.t0) + float(kf.dt) * np.arange(K)
    refx = np.hstack([np.asarray(reference.x(ts), float).reshape(K, nq),
                      np.asarray(reference.xd(ts), float).reshape(K, nq)])
    h = f"""/* Linearized time-varying Kalman filter exported by nhcontrol (KalmanEstimator); do not edit.
 * nhc_est_update(ws, t, y, u_prev, x, xd, &status): predict with the input held since the last
 * sample (none at the first), correct with y; x, xd = the reference plus the estimated
 * deviations of the filter's states. Returns 1 for a time that is not the next sample. */
#ifndef NHC_ESTIMATOR_H
#define NHC_ESTIMATOR_H
#define NHC_EST_NQ {nq}
#define NHC_EST_NX {n}
#define NHC_EST_NY {p}
#define NHC_EST_K {k}
#define NHC_EST_STEPS {K}
typedef struct {{
    double X[NHC_EST_NX];
    double Xp[NHC_EST_NX];
    double r[NHC_EST_NY];
    long k;
}} nhc_est_workspace;
#define NHC_EST_WORKSPACE_BYTES ((unsigned long)sizeof(nhc_est_workspace))
void nhc_est_init(nhc_est_workspace *ws);
void nhc_est_initial_input(const nhc_est_workspace *ws, double *u);
int nhc_est_update(nhc_est_workspace *ws, double t, const double *y, const double *u_prev,
                   double *x, double *xd, const char **status);
#endif
"""
    c = f"""/* Linearized time-varying Kalman filter exported by nhcontrol; do not edit. */
#include <math.h>
#include "nhc_estimator.h"

static const double T0 = {float(est.t0)!r}, DT = {float(kf.dt)!r};
static const int SEL[{len(sel)}] = {{{_ints(sel)}}};
{_table("X0", est.X)}{_table("AD", kf.Ad[:max(K - 1, 1)])}{_table("BD", kf.Bd[:max(K - 1, 1)])}{_table("CM", kf.C[:K])}{_table("DM", kf.D[:K])}{_table("MG", kf.M[:K])}{_table("Y0", est.y0[:K])}{_table("U0", est.u0[:K])}{_table("REF", refx)}
void nhc_est_init(nhc_est_workspace *ws)
{{
    int i;
    for (i = 0; i < NHC_EST_NX; i++) ws->X[i] = X0[i];
    ws->k = -1;
}}

void nhc_est_initial_input(const nhc_est_workspace *ws, double *u)
{{
    int i;
    (void)ws;
    for (i = 0; i < NHC_EST_K; i++) u[i] = U0[i];
}}

int nhc_est_update(nhc_est_workspace *ws, double t, const double *y, const double *u_prev,
                   double *x, double *xd, const char **status)
{{
    const int n = NHC_EST_NX, p = NHC_EST_NY, k = NHC_EST_K, nq = NHC_EST_NQ;
    const long kk = ws->k + 1;
    const double want = T0 + (double)kk * DT;
    const double *du0 = U0 + (kk > 0 ? kk - 1 : 0) * k;
    int i, q;
    if (fabs(t - want) > 1e-9 * (fabs(want) > 1.0 ? fabs(want) : 1.0) + 1e-12) {{
        *status = "refused: not the estimator's next sample";
        return 1;
    }}
    if (kk >= NHC_EST_STEPS) {{
        *status = "refused: the exported Kalman filter horizon is exhausted";
        return 1;
    }}
    if (kk == 0) for (i = 0; i < n; i++) ws->Xp[i] = ws->X[i];
    else {{
        const double *A = AD + (kk - 1) * n * n, *B = BD + (kk - 1) * n * k;
        for (i = 0; i < n; i++) {{
            double v = 0.0;
            for (q = 0; q < n; q++) v += A[i * n + q] * ws->X[q];
            for (q = 0; q < k; q++) v += B[i * k + q] * (u_prev[q] - du0[q]);
            ws->Xp[i] = v;
        }}
    }}
    for (i = 0; i < p; i++) {{
        double v = y[i] - Y0[kk * p + i];
        for (q = 0; q < n; q++) v -= CM[(kk * p + i) * n + q] * ws->Xp[q];
        for (q = 0; q < k; q++) v -= DM[(kk * p + i) * k + q] * (u_prev[q] - du0[q]);
        ws->r[i] = v;
    }}
    for (i = 0; i < n; i++) {{
        double v = ws->Xp[i];
        for (q = 0; q < p; q++) v += MG[(kk * n + i) * p + q] * ws->r[q];
        ws->X[i] = v;
    }}
    ws->k = kk;
    for (i = 0; i < nq; i++) {{
        x[i] = REF[kk * 2 * nq + i];
        xd[i] = REF[kk * 2 * nq + nq + i];
    }}
    for (i = 0; i < n; i++) {{
        if (SEL[i] < nq) x[SEL[i]] += ws->X[i];
        else xd[SEL[i] - nq] += ws->X[i];
    }}
    *status = "optimal";
    return 0;
}}
"""
    meta = {"estimator": "kf", "ncoordinates": nq, "nstates": n, "noutputs": p, "steps": K,
            "what": f"linearized time-varying Kalman filter ({n} states, {p} outputs)"}
    return {"nhc_estimator.h": h, "nhc_estimator.c": c}, meta


# ------------------------------------------------------------------------------------ EKF
def ekf_files(ekf: Any, steps: int | None, reference: Any = None) -> tuple[dict[str, str], dict]:
    """``nhc_estimator.h/.c`` of an `ExtendedKalmanFilter` and the model files it calls (the
    filter's current estimate, covariance, held input and time are its initial state)."""
    from .c_export import export_c

    if ekf.r:
        raise InteropError("the C export of the EKF covers mechanical models (no first-order states)")
    meta_m, mfiles = export_c(ekf.cm, ".", ekf.partition, write=False)
    n, m, l, k, ns = ekf.n, ekf.m, ekf.l, ekf.k, ekf.ns
    q = len(ekf.outputs)
    if meta_m.get("ny", 0) != q:
        raise InteropError("internal: the exported model's outputs differ from the filter's")
    if k < 1:
        raise InteropError("the C export of the EKF needs a model with inputs")
    ai, ad, d = (np.asarray(v, int) for v in (ekf._ai, ekf._ad, ekf._d))
    n1, c = ai.size, m + l
    a = np.concatenate([ai, ad])
    dd = np.concatenate([ad, d])
    na = a.size
    ne = ns + k
    if ekf._started:
        want_next = ekf.t + ekf.dt
    else:
        want_next = ekf.t
    work = (4 * ne * ne + 6 * ns * ns + 2 * ns * k + 5 * q * ns + 2 * q * q + 16 * n
            + 4 * max(c, 1) + 4 * ns + 2 * q + max(c, 1) * (n1 + n) + max(c, 1) ** 2 + q * n
            + q * max(n1, 1) + q * na + max(m, 1) * na + max(m, 1) ** 2 + 64)
    h = f"""/* Extended Kalman filter on the constraint manifold exported by nhcontrol
 * (ExtendedKalmanFilter); do not edit. nhc_est_update(ws, t, y, u_prev, x, xd, &status): one
 * sample (prediction with u_prev held since the last sample, none at the first; the measurement
 * update with y); x, xd the estimate on the manifold. Returns 0, 1 (a time that is not the next
 * sample) or 2 (a model routine failed: status names it). */
#ifndef NHC_ESTIMATOR_H
#define NHC_ESTIMATOR_H
#include <stdint.h>
#include "nhc_model.h"
#define NHC_EST_NQ {n}
#define NHC_EST_NS {ns}
#define NHC_EST_NY {q}
#define NHC_EST_K {k}
#define NHC_EST_WORK ({work} + NHC_TERMS_SIZE + NHC_OUTPUTS_SIZE + NHC_KERNEL_WORK)
#define NHC_EST_IWORK {max(q, c, m, ns, 1) + 1}
typedef struct {{
    double x[NHC_N], xd[NHC_N], P[NHC_EST_NS * NHC_EST_NS], u[NHC_EST_K];
    double t;
    int started;
    double work[NHC_EST_WORK];
    int iwork[NHC_EST_IWORK];
    double model_work[NHC_WORK];
    int64_t model_iwork[NHC_IWORK];
}} nhc_est_workspace;
#define NHC_EST_WORKSPACE_BYTES ((unsigned long)sizeof(nhc_est_workspace))
void nhc_est_init(nhc_est_workspace *ws);
void nhc_est_initial_input(const nhc_est_workspace *ws, double *u);
int nhc_est_update(nhc_est_workspace *ws, double t, const double *y, const double *u_prev,
                   double *x, double *xd, const char **status);
#endif
"""
    cbody = f"""/* Extended Kalman filter on the constraint manifold exported by nhcontrol; do not edit. */
#include <math.h>
#include "nhc_estimator.h"
#include "nhc_linalg.h"

static const double DT = {float(ekf.dt)!r}, T_FIRST = {float(want_next)!r};
static const int SUBSTEPS = {int(ekf.substeps)};
static const int AI[{max(n1, 1)}] = {{{_ints(ai)}}};
static const int ADI[{max(l, 1)}] = {{{_ints(ad)}}};
static const int AA[{max(na, 1)}] = {{{_ints(a)}}};
static const int DD[{max(c, 1)}] = {{{_ints(dd)}}};
static const int DI[{max(m, 1)}] = {{{_ints(d)}}};
{_table("PARAM", ekf.p)}{_table("RN", ekf.Rn)}{_table("QW", ekf.Qw)}{_table("QX", ekf.Qx)}{_table("X_INIT", ekf.x)}{_table("XD_INIT", ekf.xd)}{_table("P_INIT", ekf.P)}{_table("U_INIT", ekf.u)}
void nhc_est_init(nhc_est_workspace *ws)
{{
    int i;
    for (i = 0; i < NHC_N; i++) {{ ws->x[i] = X_INIT[i]; ws->xd[i] = XD_INIT[i]; }}
    for (i = 0; i < NHC_EST_NS * NHC_EST_NS; i++) ws->P[i] = P_INIT[i];
    for (i = 0; i < NHC_EST_K; i++) ws->u[i] = U_INIT[i];
    ws->t = T_FIRST;
    ws->started = {1 if ekf._started else 0};
}}

void nhc_est_initial_input(const nhc_est_workspace *ws, double *u)
{{
    int i;
    for (i = 0; i < NHC_EST_K; i++) u[i] = ws->u[i];
}}

static void nhc_reduce(const double *x, const double *xd, double *X)
{{
    int j;
    for (j = 0; j < {n1}; j++) {{ X[j] = x[AI[j]]; X[{n1} + j] = xd[AI[j]]; }}
    for (j = 0; j < {l}; j++) X[{2 * n1} + j] = x[ADI[j]];
}}

/* onto the manifold: x_ai, x_ad, xd_ai kept (from X), x_d by Newton, dependent velocities by
   Eq. (2.76) (nhc_rhs) */
static int nhc_project(nhc_est_workspace *ws, const double *X, double *x, double *xd, double *Xdot,
                       double *xn, double *xdn)
{{
    int i, st = nhc_rhs(X, ws->u, PARAM, x, Xdot, xn, xdn, ws->model_work, NHC_WORK, ws->model_iwork);
    if (st) return st;
    for (i = 0; i < NHC_N; i++) {{ x[i] = xn[i]; xd[i] = xdn[i]; }}
    return 0;
}}

static int nhc_predict(nhc_est_workspace *ws, const double *u, double *W)
{{
    const int ns = NHC_EST_NS, k = NHC_EST_K, ne = NHC_EST_NS + NHC_EST_K, n = NHC_N;
    double *E = W, *F = E + ne * ne, *ew = F + ne * ne, *A = ew + 2 * ne * ne, *B = A + ns * ns;
    double *T1 = B + ns * k, *T2 = T1 + ns * ns, *xdd = T2 + ns * ns, *lam = xdd + n;
    double *x2 = lam + (NHC_C > 0 ? NHC_C : 1), *v2 = x2 + n, *x3 = v2 + n, *v3 = x3 + n, *x4 = v3 + n;
    double *v4 = x4 + n, *a1 = v4 + n, *a2 = a1 + n, *a3 = a2 + n, *a4 = a3 + n, *X = a4 + n;
    double *Xdot = X + ns, *xn = Xdot + ns, *xdn = xn + n;
    double *x = ws->x, *xd = ws->xd, h = DT / (double)SUBSTEPS;
    int i, j, q, s, st;
    st = nhc_accelerations(x, xd, u, PARAM, xdd, lam, ws->model_work, NHC_WORK, ws->model_iwork);
    if (st) return st;
    st = nhc_linearize(x, xd, xdd, lam, u, PARAM, 0, NHC_ADMISSIBILITY_TOL, NHC_COND_MAX, A, B,
                       ws->model_work, NHC_WORK, ws->model_iwork);
    if (st) return st;
    if (!nhc_all_finite(A, ns * ns) || !nhc_all_finite(B, ns * k)) return NHC_SINGULAR;
    for (i = 0; i < ne * ne; i++) E[i] = 0.0;
    for (i = 0; i < ns; i++) {{
        for (q = 0; q < ns; q++) E[i * ne + q] = A[i * ns + q] * DT;
        for (q = 0; q < k; q++) E[i * ne + ns + q] = B[i * k + q] * DT;
    }}
    nhc_expm_top(E, F, ns, ne, 16, 0.25, -1.0, ew);      /* the rows of the inputs are zero */
    for (i = 0; i < ns; i++) {{
        for (q = 0; q < ns; q++) A[i * ns + q] = F[i * ne + q];
        for (q = 0; q < k; q++) B[i * k + q] = F[i * ne + ns + q];
    }}
    /* P = Ad P Ad^T + Bd Qw Bd^T + Qx, symmetrised */
    nhc_mm(A, ws->P, T1, ns, ns, ns);
    nhc_mmt(T1, A, T2, ns, ns, ns);
    for (i = 0; i < ns; i++)
        for (j = 0; j < ns; j++) {{
            double v = 0.0;
            int r1, r2;
            for (r1 = 0; r1 < k; r1++)
                for (r2 = 0; r2 < k; r2++) v += B[i * k + r1] * QW[r1 * k + r2] * B[j * k + r2];
            T1[i * ns + j] = T2[i * ns + j] + v + QX[i * ns + j];
        }}
    for (i = 0; i < ns; i++)
        for (j = 0; j < ns; j++) ws->P[i * ns + j] = 0.5 * (T1[i * ns + j] + T1[j * ns + i]);
    /* classical Runge-Kutta with the input held */
    for (s = 0; s < SUBSTEPS; s++) {{
        st = nhc_accelerations(x, xd, u, PARAM, a1, lam, ws->model_work, NHC_WORK, ws->model_iwork);
        if (st) return st;
        for (i = 0; i < n; i++) {{ x2[i] = x[i] + 0.5 * h * xd[i]; v2[i] = xd[i] + 0.5 * h * a1[i]; }}
        st = nhc_accelerations(x2, v2, u, PARAM, a2, lam, ws->model_work, NHC_WORK, ws->model_iwork);
        if (st) return st;
        for (i = 0; i < n; i++) {{ x3[i] = x[i] + 0.5 * h * v2[i]; v3[i] = xd[i] + 0.5 * h * a2[i]; }}
        st = nhc_accelerations(x3, v3, u, PARAM, a3, lam, ws->model_work, NHC_WORK, ws->model_iwork);
        if (st) return st;
        for (i = 0; i < n; i++) {{ x4[i] = x[i] + h * v3[i]; v4[i] = xd[i] + h * a3[i]; }}
        st = nhc_accelerations(x4, v4, u, PARAM, a4, lam, ws->model_work, NHC_WORK, ws->model_iwork);
        if (st) return st;
        for (i = 0; i < n; i++) {{
            x[i] = x[i] + h / 6.0 * (xd[i] + 2.0 * v2[i] + 2.0 * v3[i] + v4[i]);
            xd[i] = xd[i] + h / 6.0 * (a1[i] + 2.0 * a2[i] + 2.0 * a3[i] + a4[i]);
        }}
    }}
    if (!nhc_all_finite(x, n) || !nhc_all_finite(xd, n)) return NHC_DOMAIN;
    for (i = 0; i < k; i++) ws->u[i] = u[i];
    nhc_reduce(x, xd, X);
    st = nhc_project(ws, X, x, xd, Xdot, xn, xdn);
    if (st) return st;
    ws->t += DT;
    return 0;
}}

/* the output matrix H (q x ns) of the declared outputs through the partition
   (nhcontrol.linearization.outputs.output_matrices_from_terms) and h at the estimate */
static int nhc_output_matrix(nhc_est_workspace *ws, double *H, double *hv, double *W)
{{
    const int n = NHC_N, q = NHC_EST_NY, ns = NHC_EST_NS, c = NHC_C, m = NHC_M, n1 = {n1}, na = {na};
    double *T = W, *O = T + NHC_TERMS_SIZE, *KW = O + NHC_OUTPUTS_SIZE, *z = KW + NHC_KERNEL_WORK;
    double *Ddd = z + n + (c > 0 ? c : 1), *sol = Ddd + (c > 0 ? c * c : 1), *hx = sol + (c > 0 ? c : 1) * (n1 + n);
    double *Cv = hx + q * n, *G = Cv + q * (n1 > 0 ? n1 : 1), *Cd = G + q * na, *s2 = Cd + (m > 0 ? m * m : 1);
    const double *Dm, *dDv, *hxd;
    int i, j, r, st;
    for (i = 0; i < n + (c > 0 ? c : 1); i++) z[i] = 0.0;
    st = nhc_terms(ws->x, ws->xd, z, z + n, ws->u, PARAM, T, KW);
    if (st) return st;
    st = nhc_output_terms(ws->x, ws->xd, ws->u, PARAM, O, KW);
    if (st) return st;
    Dm = T + NHC_TERMS_D;
    dDv = T + NHC_TERMS_dDv_dx;
    hxd = O + NHC_OUTPUTS_dh_dxd;
    for (i = 0; i < q; i++) hv[i] = O[NHC_OUTPUTS_h + i];
    for (i = 0; i < q * n; i++) hx[i] = O[NHC_OUTPUTS_dh_dx + i];
    for (i = 0; i < q; i++)
        for (j = 0; j < n1; j++) Cv[i * n1 + j] = hxd[i * n + AI[j]];
    if (c > 0) {{
        for (i = 0; i < c; i++) {{
            for (j = 0; j < c; j++) Ddd[i * c + j] = Dm[i * n + DD[j]];
            for (j = 0; j < n1; j++) sol[i * (n1 + n) + j] = Dm[i * n + AI[j]];
            for (j = 0; j < n; j++) sol[i * (n1 + n) + n1 + j] = dDv[i * n + j];
        }}
        if (nhc_lu(Ddd, c, ws->iwork)) return NHC_SINGULAR;
        nhc_lu_solve(Ddd, c, ws->iwork, sol, n1 + n);
        for (i = 0; i < q; i++)
            for (r = 0; r < c; r++) {{
                const double f = hxd[i * n + DD[r]];
                for (j = 0; j < n; j++) hx[i * n + j] -= f * sol[r * (n1 + n) + n1 + j];
                for (j = 0; j < n1; j++) Cv[i * n1 + j] -= f * sol[r * (n1 + n) + j];
            }}
    }}
    for (i = 0; i < q; i++)
        for (j = 0; j < na; j++) G[i * na + j] = hx[i * n + AA[j]];
    if (m > 0) {{
        for (i = 0; i < m; i++) {{
            for (j = 0; j < m; j++) Cd[i * m + j] = Dm[i * n + DI[j]];
            for (j = 0; j < na; j++) s2[i * na + j] = Dm[i * n + AA[j]];
        }}
        if (nhc_lu(Cd, m, ws->iwork)) return NHC_SINGULAR;
        nhc_lu_solve(Cd, m, ws->iwork, s2, na);
        for (i = 0; i < q; i++)
            for (r = 0; r < m; r++) {{
                const double f = hx[i * n + DI[r]];
                for (j = 0; j < na; j++) G[i * na + j] -= f * s2[r * na + j];
            }}
    }}
    for (i = 0; i < q; i++) {{
        for (j = 0; j < n1; j++) H[i * ns + j] = G[i * na + j];
        for (j = 0; j < n1; j++) H[i * ns + n1 + j] = Cv[i * n1 + j];
        for (j = n1; j < na; j++) H[i * ns + n1 + j] = G[i * na + j];
    }}
    return nhc_all_finite(H, q * ns) ? 0 : NHC_SINGULAR;
}}

static int nhc_correct(nhc_est_workspace *ws, const double *y, double *W)
{{
    const int ns = NHC_EST_NS, q = NHC_EST_NY;
    double *H = W, *hv = H + q * ns, *HP = hv + q, *S = HP + q * ns, *Kt = S + q * q, *X = Kt + q * ns;
    double *IKH = X + ns, *T1 = IKH + ns * ns, *T2 = T1 + ns * ns, *Xdot = T2 + ns * ns;
    double *xn = Xdot + ns, *xdn = xn + NHC_N, *W2 = xdn + NHC_N;
    int i, j, r, st;
    st = nhc_output_matrix(ws, H, hv, W2);
    if (st) return st;
    nhc_mm(H, ws->P, HP, q, ns, ns);
    nhc_mmt(HP, H, S, q, ns, q);
    for (i = 0; i < q * q; i++) S[i] += RN[i];
    for (i = 0; i < q * ns; i++) Kt[i] = HP[i];
    if (nhc_lu(S, q, ws->iwork)) return NHC_SINGULAR;
    nhc_lu_solve(S, q, ws->iwork, Kt, ns);           /* K^T = S^-1 H P */
    if (!nhc_all_finite(Kt, q * ns)) return NHC_SINGULAR;
    nhc_reduce(ws->x, ws->xd, X);
    for (i = 0; i < ns; i++)
        for (r = 0; r < q; r++) X[i] += Kt[r * ns + i] * (y[r] - hv[r]);
    for (i = 0; i < ns; i++)
        for (j = 0; j < ns; j++) {{
            double v = (i == j) ? 1.0 : 0.0;
            for (r = 0; r < q; r++) v -= Kt[r * ns + i] * H[r * ns + j];
            IKH[i * ns + j] = v;
        }}
    nhc_mm(IKH, ws->P, T1, ns, ns, ns);
    nhc_mmt(T1, IKH, T2, ns, ns, ns);
    for (i = 0; i < ns; i++)
        for (j = 0; j < ns; j++) {{
            double v = 0.0;
            int r2;
            for (r = 0; r < q; r++)
                for (r2 = 0; r2 < q; r2++) v += Kt[r * ns + i] * RN[r * q + r2] * Kt[r2 * ns + j];
            T1[i * ns + j] = T2[i * ns + j] + v;
        }}
    for (i = 0; i < ns; i++)
        for (j = 0; j < ns; j++) ws->P[i * ns + j] = 0.5 * (T1[i * ns + j] + T1[j * ns + i]);
    for (j = 0; j < {n1}; j++) {{ ws->x[AI[j]] = X[j]; ws->xd[AI[j]] = X[{n1} + j]; }}
    for (j = 0; j < {l}; j++) ws->x[ADI[j]] = X[{2 * n1} + j];
    return nhc_project(ws, X, ws->x, ws->xd, Xdot, xn, xdn);
}}

int nhc_est_update(nhc_est_workspace *ws, double t, const double *y, const double *u_prev,
                   double *x, double *xd, const char **status)
{{
    const double want = ws->started ? ws->t + DT : ws->t;
    int i, st;
    if (fabs(t - want) > 1e-9 * (fabs(want) > 1.0 ? fabs(want) : 1.0) + 1e-12) {{
        *status = "refused: not the estimator's next sample";
        return 1;
    }}
    if (ws->started) {{
        st = nhc_predict(ws, u_prev, ws->work);
        if (st) {{ *status = "estimator: the prediction failed (model status)"; return 2; }}
    }} else {{
        for (i = 0; i < NHC_EST_K; i++) ws->u[i] = u_prev[i];
    }}
    ws->started = 1;
    st = nhc_correct(ws, y, ws->work);
    if (st) {{ *status = "estimator: the measurement update failed (model status)"; return 2; }}
    for (i = 0; i < NHC_N; i++) {{ x[i] = ws->x[i]; xd[i] = ws->xd[i]; }}
    *status = "optimal";
    return 0;
}}
"""
    files = {nm: txt for nm, txt in mfiles.items() if nm in ("nhc_model.h", "nhc_model.c")}
    files["nhc_estimator.h"] = h
    files["nhc_estimator.c"] = cbody
    meta = {"estimator": "ekf", "ncoordinates": n, "nstates": ns, "noutputs": q,
            "model": meta_m["model"],
            "what": (f"extended Kalman filter on the constraint manifold of {meta_m['model']!r} "
                     f"({ns} states, {q} outputs)")}
    return files, meta
