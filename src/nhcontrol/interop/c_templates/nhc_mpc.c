/* Condensed LTV-MPC (see nhc_mpc.h). Part of nhcontrol's C export; licence: that of nhcontrol. */
#include <math.h>
#include <stddef.h>
#include "nhc_mpc.h"
#include "nhc_qp.h"

int nhc_mpc_solve(const nhc_mpc_problem *pr, const double *x0, const double *A, const double *B,
                  const double *c, const double *Qf, const double *qx, const double *qu,
                  const double *u_ref, const double *u_prev, const double *x_ref,
                  double *du, double *dx, int *iters, double *work, int *iwork)
{
    return nhc_mpc_solve_y(pr, x0, A, B, c, Qf, qx, qu, u_ref, u_prev, x_ref, NULL, NULL, NULL,
                           du, dx, iters, work, iwork);
}

int nhc_mpc_solve_y(const nhc_mpc_problem *pr, const double *x0, const double *A, const double *B,
                    const double *c, const double *Qf, const double *qx, const double *qu,
                    const double *u_ref, const double *u_prev, const double *x_ref,
                    const double *Cy, const double *Dy, const double *y_ref,
                    double *du, double *dx, int *iters, double *work, int *iwork)
{
    const int N = pr->N, n = pr->n, k = pr->k, nbx = pr->nbx, soft = pr->soft ? 1 : 0;
    const int nby = Cy ? pr->nby : 0, softy = (pr->softy && nby) ? 1 : 0, py = pr->py;
    const int nu = N * k, nv = NHC_MPC_NV(N, k, nbx, soft, nby, softy);
    const int ns1 = nu + soft * N * nbx;          /* first output slack */
    const int rows = NHC_MPC_ROWS(N, n, k, nbx, soft, nby, softy);
    double *G = work, *w = G + (N + 1) * n * nv, *v = w + (N + 1) * n, *H = v + (N + 1) * n;
    double *g = H + nv * nv, *W = g + nv, *Ac = W + n * nv, *lo = Ac + rows * nv, *hi = lo + rows;
    double *z = hi + rows, *qw = z + nv;
    int i, j, q, a, row, st;
    /* free response w and prediction matrix G (row block j: dx_j in du) */
    for (i = 0; i < (N + 1) * n * nv; i++) G[i] = 0.0;
    for (i = 0; i < n; i++) w[i] = x0[i];
    for (j = 0; j < N; j++) {
        const double *Aj = A + j * n * n, *Bj = B + j * n * k;
        double *Gj = G + j * n * nv, *Gn = G + (j + 1) * n * nv;
        for (i = 0; i < n; i++) {
            double s = c ? c[j * n + i] : 0.0;
            for (q = 0; q < n; q++) s += Aj[i * n + q] * w[j * n + q];
            w[(j + 1) * n + i] = s;
            for (a = 0; a < j * k; a++) {
                double t = 0.0;
                for (q = 0; q < n; q++) t += Aj[i * n + q] * Gj[q * nv + a];
                Gn[i * nv + a] = t;
            }
            for (a = 0; a < k; a++) Gn[i * nv + j * k + a] = Bj[i * k + a];
        }
    }
    /* Hessian and gradient */
    for (i = 0; i < nv * nv; i++) H[i] = 0.0;
    for (i = 0; i < nu; i++) g[i] = qu ? qu[i] : 0.0;
    for (i = nu; i < ns1; i++) g[i] = pr->rho1;
    for (i = ns1; i < nv; i++) g[i] = pr->rhoy1;
    for (j = 1; j <= N; j++) {
        const double *Qj = (j < N) ? pr->Q : Qf, *Gj = G + j * n * nv;
        const int cols = j * k;
        for (i = 0; i < n; i++) {             /* W = Q_j G_j, v = 2 Q_j w_j + qx_j */
            double s = 0.0;
            for (a = 0; a < cols; a++) W[i * nv + a] = 0.0;
            for (q = 0; q < n; q++) {
                const double f = Qj[i * n + q];
                if (f == 0.0) continue;
                s += f * w[j * n + q];
                for (a = 0; a < cols; a++) W[i * nv + a] += f * Gj[q * nv + a];
            }
            v[i] = 2.0 * s + (qx ? qx[j * n + i] : 0.0);
        }
        for (a = 0; a < cols; a++) {
            double s = 0.0;
            for (i = 0; i < n; i++) s += Gj[i * nv + a] * v[i];
            g[a] += s;
            for (q = a; q < cols; q++) {
                double t = 0.0;
                for (i = 0; i < n; i++) t += Gj[i * nv + a] * W[i * nv + q];
                H[a * nv + q] += 2.0 * t;
            }
        }
    }
    for (j = 0; j < N; j++)
        for (i = 0; i < k; i++)
            for (q = 0; q < k; q++) H[(j * k + i) * nv + j * k + q] += 2.0 * pr->R[i * k + q];
    for (i = nu; i < ns1; i++) H[i * nv + i] = 2.0 * pr->rho2;
    for (i = ns1; i < nv; i++) H[i * nv + i] = 2.0 * pr->rhoy2;
    for (a = 0; a < nv; a++)
        for (q = 0; q < a; q++) H[a * nv + q] = H[q * nv + a];
    /* constraint rows: inputs, rates, states */
    for (i = 0; i < rows * nv; i++) Ac[i] = 0.0;
    row = 0;
    for (j = 0; j < N; j++)
        for (i = 0; i < k; i++, row++) {
            Ac[row * nv + j * k + i] = 1.0;
            lo[row] = pr->u_min[i] - u_ref[j * k + i];
            hi[row] = pr->u_max[i] - u_ref[j * k + i];
        }
    for (j = 0; j < N; j++)
        for (i = 0; i < k; i++, row++) {
            const double off = j ? u_ref[j * k + i] - u_ref[(j - 1) * k + i] : u_ref[i] - u_prev[i];
            Ac[row * nv + j * k + i] = 1.0;
            if (j) Ac[row * nv + (j - 1) * k + i] = -1.0;
            lo[row] = pr->du_min[i] - off;
            hi[row] = pr->du_max[i] - off;
        }
    for (j = 1; j <= N; j++)
        for (q = 0; q < nbx; q++) {
            const int ci = pr->ix[q], sc = nu + (j - 1) * nbx + q;
            const double off = (x_ref ? x_ref[j * n + ci] : 0.0) + w[j * n + ci];
            int side;
            for (side = 0; side < (soft ? 2 : 1); side++, row++) {
                for (a = 0; a < nu; a++) Ac[row * nv + a] = G[(j * n + ci) * nv + a];
                if (!soft) {
                    lo[row] = pr->x_min[ci] - off;
                    hi[row] = pr->x_max[ci] - off;
                } else if (side == 0) {          /* dx + s >= x_min - off */
                    Ac[row * nv + sc] = 1.0;
                    lo[row] = pr->x_min[ci] - off;
                    hi[row] = NHC_QP_INF * 10.0;
                } else {                         /* dx - s <= x_max - off */
                    Ac[row * nv + sc] = -1.0;
                    lo[row] = -NHC_QP_INF * 10.0;
                    hi[row] = pr->x_max[ci] - off;
                }
            }
            if (soft) {                          /* s >= 0 */
                Ac[row * nv + sc] = 1.0;
                lo[row] = 0.0;
                hi[row] = NHC_QP_INF * 10.0;
                row++;
            }
        }
    for (j = 1; j <= N; j++)
        for (q = 0; q < nby; q++) {
            const int ci = pr->iy[q], sc = ns1 + (j - 1) * nby + q, ju = (j < N ? j : N - 1);
            const double *Cj = Cy + ((j - 1) * py + ci) * n;
            double off = y_ref ? y_ref[j * py + ci] : 0.0;
            int side, r;
            for (r = 0; r < n; r++) off += Cj[r] * w[j * n + r];
            for (side = 0; side < (softy ? 2 : 1); side++, row++) {
                for (a = 0; a < nu; a++) {
                    double cg = 0.0;
                    for (r = 0; r < n; r++) cg += Cj[r] * G[(j * n + r) * nv + a];
                    Ac[row * nv + a] = cg;
                }
                if (Dy)
                    for (a = 0; a < k; a++) Ac[row * nv + ju * k + a] += Dy[((j - 1) * py + ci) * k + a];
                if (!softy) {
                    lo[row] = pr->y_min[ci] - off;
                    hi[row] = pr->y_max[ci] - off;
                } else if (side == 0) {
                    Ac[row * nv + sc] = 1.0;
                    lo[row] = pr->y_min[ci] - off;
                    hi[row] = NHC_QP_INF * 10.0;
                } else {
                    Ac[row * nv + sc] = -1.0;
                    lo[row] = -NHC_QP_INF * 10.0;
                    hi[row] = pr->y_max[ci] - off;
                }
            }
            if (softy) {
                Ac[row * nv + sc] = 1.0;
                lo[row] = 0.0;
                hi[row] = NHC_QP_INF * 10.0;
                row++;
            }
        }
    st = nhc_qp_solve(nv, rows, H, g, Ac, lo, hi, z, pr->max_iter, pr->tol, iters, qw, iwork);
    for (i = 0; i < nu; i++) du[i] = z[i];
    /* the prediction */
    for (i = 0; i < n; i++) dx[i] = x0[i];
    for (j = 0; j < N; j++) {
        const double *Aj = A + j * n * n, *Bj = B + j * n * k;
        for (i = 0; i < n; i++) {
            double s = c ? c[j * n + i] : 0.0;
            for (q = 0; q < n; q++) s += Aj[i * n + q] * dx[j * n + q];
            for (a = 0; a < k; a++) s += Bj[i * k + a] * du[j * k + a];
            dx[(j + 1) * n + i] = s;
        }
    }
    return st;
}

void nhc_mpc_project(const nhc_mpc_problem *pr, const double *u_ref0, const double *du0,
                     const double *u_prev, double *u)
{
    int i;
    for (i = 0; i < pr->k; i++) {
        double v = u_ref0[i] + du0[i], lo, hi;
        if (v < pr->u_min[i]) v = pr->u_min[i];
        if (v > pr->u_max[i]) v = pr->u_max[i];
        lo = u_prev[i] + pr->du_min[i];
        hi = u_prev[i] + pr->du_max[i];
        if (pr->u_min[i] > lo) lo = pr->u_min[i];
        if (pr->u_max[i] < hi) hi = pr->u_max[i];
        if (lo <= hi) {
            if (v < lo) v = lo;
            if (v > hi) v = hi;
        }
        u[i] = v;
    }
}

int nhc_sample(double t, double t0, double dt, int steps)
{
    const double kf = (t - t0) / dt;
    if (!(kf > -0.5 && kf < (double)steps - 0.5)) return -1;
    return (int)floor(kf + 0.5);
}

void nhc_deviation(const double *S, const double *r, const double *x, const double *xd, int nq,
                   int n, double *s, double *dx)
{
    int i, q;
    for (i = 0; i < nq; i++) {
        s[i] = x[i] - r[i];
        s[nq + i] = xd[i] - r[nq + i];
    }
    for (i = 0; i < n; i++) {
        double v = 0.0;
        for (q = 0; q < 2 * nq; q++) v += S[i * 2 * nq + q] * s[q];
        dx[i] = v;
    }
}

int nhc_mpc_fallback(const nhc_mpc_problem *pr, int has_plan, long plan_k, long k,
                     const double *plan_u, const double *u_ref0, const double *u_prev,
                     const double *Kg, const double *e, int n, double *u)
{
    int i, q;
    if (has_plan && k - plan_k > 0 && k - plan_k < pr->N) {
        const long off = (k - plan_k) * pr->k;
        for (i = 0; i < pr->k; i++) {
            double v = plan_u[off + i];
            if (v < pr->u_min[i]) v = pr->u_min[i];
            if (v > pr->u_max[i]) v = pr->u_max[i];
            u[i] = v;
        }
        return 1;
    }
    for (i = 0; i < pr->k; i++) {
        double v = u_ref0[i], lo = u_prev[i] + pr->du_min[i], hi = u_prev[i] + pr->du_max[i];
        for (q = 0; q < n; q++) v -= Kg[i * n + q] * e[q];
        if (pr->u_min[i] > lo) lo = pr->u_min[i];
        if (pr->u_max[i] < hi) hi = pr->u_max[i];
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        u[i] = v;
    }
    return 2;
}
