/* Goldfarb-Idnani dual active-set QP solver (see nhc_qp.h). Written for nhcontrol's C export;
 * licence: that of nhcontrol. */
#include <math.h>
#include "nhc_qp.h"
#include "nhc_linalg.h"

/* the side s (0: lower, 1: upper) of row i as n_p^T z >= b_p; the row's nonzero entries lie
   in the columns first[i] ... last[i] - 1 */
static double nhc_qp_side(int n, const double *A, const double *lo, const double *hi, int i,
                          int s, const double *z, double *b, const int *first, const int *last)
{
    const double *a = A + i * n;
    double v = 0.0;
    int j;
    for (j = first[i]; j < last[i]; j++) v += a[j] * z[j];
    if (s == 0) { *b = lo[i]; return v; }
    *b = -hi[i];
    return -v;
}

/* apply the Givens rotation zeroing y against x: returns h with (x, y) -> (h, 0) */
static void nhc_qp_givens(double x, double y, double *c, double *s, double *h)
{
    double r = hypot(x, y);
    if (r == 0.0) { *c = 1.0; *s = 0.0; *h = 0.0; return; }
    *c = x / r;
    *s = y / r;
    *h = r;
}

int nhc_qp_solve(int n, int m, double *H, const double *g, const double *A, const double *lo,
                 const double *hi, double *z, int max_iter, double tol, int *iters,
                 double *work, int *iwork)
{
    double *J = work, *R = J + n * n, *d = R + n * n, *zs = d + n, *r = zs + n, *u = r + n;
    double *np_ = u + n + 1;
    int *act = iwork, *flag = iwork + n, *first = flag + m, *last = first + m;
    int iq = 0, it = 0, i, j, q;
    *iters = 0;
    for (i = 0; i < m; i++) {            /* the nonzero column range of each row */
        first[i] = n;
        last[i] = 0;
        for (j = 0; j < n; j++)
            if (A[i * n + j] != 0.0) {
                if (j < first[i]) first[i] = j;
                last[i] = j + 1;
            }
        if (last[i] == 0) first[i] = 0;
    }
    if (nhc_chol(H, n)) return NHC_QP_NOT_CONVEX;
    /* J = L^-T (upper triangular): solve L^T J = I column by column */
    for (i = 0; i < n * n; i++) J[i] = 0.0;
    for (j = 0; j < n; j++) {
        for (i = n - 1; i >= 0; i--) {
            double s = (i == j) ? 1.0 : 0.0;
            for (q = i + 1; q < n; q++) s -= H[q * n + i] * J[q * n + j];
            J[i * n + j] = s / H[i * n + i];
        }
    }
    for (i = 0; i < n * n; i++) R[i] = 0.0;
    /* unconstrained minimiser z = -J J^T g */
    for (i = 0; i < n; i++) {
        double s = 0.0;
        for (q = 0; q < n; q++) s += J[q * n + i] * g[q];
        d[i] = s;
    }
    for (i = 0; i < n; i++) {
        double s = 0.0;
        for (q = 0; q < n; q++) s += J[i * n + q] * d[q];
        z[i] = -s;
    }
    for (i = 0; i < m; i++) flag[i] = 0;
    for (;;) {
        int p = -1, ps = 0, l;
        double worst = 0.0, bp = 0.0, sp;
        /* step 1: the most violated side (scaled by the size of its bound) */
        for (i = 0; i < m; i++) {
            int s;
            if (flag[i]) continue;
            for (s = 0; s < 2; s++) {
                double b, v, viol;
                if ((s == 0 && !(lo[i] > -NHC_QP_INF)) || (s == 1 && !(hi[i] < NHC_QP_INF))) continue;
                v = nhc_qp_side(n, A, lo, hi, i, s, z, &b, first, last);
                viol = (v - b) / (1.0 + fabs(b));
                if (viol < worst) { worst = viol; p = i; ps = s; }
            }
        }
        if (p < 0 || worst >= -tol) { *iters = it; return NHC_QP_OPTIMAL; }
        for (j = 0; j < n; j++) np_[j] = (ps == 0 ? 1.0 : -1.0) * A[p * n + j];
        sp = nhc_qp_side(n, A, lo, hi, p, ps, z, &bp, first, last) - bp;
        u[iq] = 0.0;
        for (;;) {
            double t1 = HUGE_VAL, t2 = HUGE_VAL, t, zn = 0.0, dd = 0.0;
            if (++it > max_iter) { *iters = it - 1; return NHC_QP_MAX_ITER; }
            /* step 2a: d = J^T n_p, primal direction zs = J2 d2, dual direction r = R^-1 d1 */
            for (i = 0; i < n; i++) {
                double s = 0.0;
                for (q = first[p]; q < last[p]; q++) s += J[q * n + i] * np_[q];
                d[i] = s;
                dd += s * s;
            }
            for (i = 0; i < n; i++) {
                double s = 0.0;
                for (q = iq; q < n; q++) s += J[i * n + q] * d[q];
                zs[i] = s;
                zn += s * np_[i];
            }
            for (i = iq - 1; i >= 0; i--) {
                double s = d[i];
                for (q = i + 1; q < iq; q++) s -= R[i * n + q] * r[q];
                r[i] = s / R[i * n + i];
            }
            /* step 2b: the partial (dual) step t1 and the full step t2 */
            l = -1;
            for (i = 0; i < iq; i++) {
                if (r[i] > 0.0 && u[i] / r[i] < t1) { t1 = u[i] / r[i]; l = i; }
            }
            if (zn > 1e-13 * dd) t2 = -sp / zn;   /* zn = |d2|^2: n_p not in the span of the active normals */
            t = t1 < t2 ? t1 : t2;
            if (!(t < HUGE_VAL)) { *iters = it; return NHC_QP_INFEASIBLE; }
            if (t2 < HUGE_VAL) {
                for (i = 0; i < n; i++) z[i] += t * zs[i];
            }
            for (i = 0; i < iq; i++) u[i] -= t * r[i];
            u[iq] += t;
            if (t2 <= t1) {
                /* full step: add the constraint (Givens rotations zero d[iq+1 ...]) */
                for (j = n - 1; j > iq; j--) {
                    double c, s, h;
                    nhc_qp_givens(d[j - 1], d[j], &c, &s, &h);
                    if (h == 0.0) continue;
                    d[j - 1] = h;
                    d[j] = 0.0;
                    for (i = 0; i < n; i++) {
                        const double a = J[i * n + j - 1], b = J[i * n + j];
                        J[i * n + j - 1] = c * a + s * b;
                        J[i * n + j] = -s * a + c * b;
                    }
                }
                for (i = 0; i <= iq; i++) R[i * n + iq] = d[i];
                if (!(fabs(d[iq]) > 1e-12 * sqrt(dd))) { *iters = it; return NHC_QP_INFEASIBLE; }
                act[iq] = 2 * p + ps;
                flag[p] = 1;
                iq++;
                break;
            }
            /* partial step: drop the active constraint l, re-triangularise R */
            flag[act[l] / 2] = 0;
            for (i = l; i < iq - 1; i++) {
                act[i] = act[i + 1];
                u[i] = u[i + 1];
                for (q = 0; q < iq; q++) R[q * n + i] = R[q * n + i + 1];
            }
            u[iq - 1] = u[iq];
            iq--;
            for (q = 0; q <= iq; q++) R[q * n + iq] = 0.0;
            for (j = l; j < iq; j++) {
                double c, s, h;
                nhc_qp_givens(R[j * n + j], R[(j + 1) * n + j], &c, &s, &h);
                if (h == 0.0) continue;
                for (q = j; q < iq; q++) {
                    const double a = R[j * n + q], b = R[(j + 1) * n + q];
                    R[j * n + q] = c * a + s * b;
                    R[(j + 1) * n + q] = -s * a + c * b;
                }
                R[(j + 1) * n + j] = 0.0;
                for (i = 0; i < n; i++) {
                    const double a = J[i * n + j], b = J[i * n + j + 1];
                    J[i * n + j] = c * a + s * b;
                    J[i * n + j + 1] = -s * a + c * b;
                }
            }
            sp = nhc_qp_side(n, A, lo, hi, p, ps, z, &bp, first, last) - bp;
            if (sp >= 0.0) break;   /* the drop made p feasible: back to step 1 */
        }
    }
}
