"""The C text of the compiled Steps 1-7 (`nhcontrol.linearization._cpoint`): its version,
declarations and source, in a module of plain strings (no imports) that ``setup.py`` reads to
compile the routine library when nhcontrol is installed (`nhcontrol._csrc`)."""

STEM = "nhc_point"
"""First part of the library's file name."""

VERSION = "p5"
"""Version of the C routine (part of the library's file name and cache key)."""

OPTIMISE = None
"""The optimisation flag of the library (None: the kernels' ``-O1``)."""

CDEF = """
int64_t nhc_point_work(const int64_t *);
int nhc_point_third(const int64_t *, const int64_t *, const double *, const int64_t *,
                    const double *, const double *, const double *, const double *,
                    const double *, const double *, double, double, double, double *, double *,
                    double *, int64_t, int64_t *);
int nhc_point_third_n(int64_t, const int64_t *, const int64_t *, const double *, int64_t,
                      const int64_t *, const double *, int64_t, const double *, int64_t,
                      const double *, const double *, const double *, int64_t, const double *,
                      int64_t, double, double, double, double *, double *, double *, int64_t,
                      int64_t *);
int nhc_point_prepared(const int64_t *, const int64_t *, const int64_t *, const int64_t *,
                       double *, double *, double *, const double *, const double *,
                       const double *, const double *, const double *, const double *, double,
                       double, double, double *, double *, double *, int64_t, int64_t *);
int nhc_point_first_order(const int64_t *, const int64_t *, const int64_t *, const int64_t *,
                          double *, double *, double *, const double *, const double *,
                          const double *, const double *, const double *, const double *, double,
                          double, double, double *, double *, double *, int64_t, int64_t *,
                          const int64_t *, const double *, const double *, const double *,
                          const double *, const double *, const double *, double *, double *);
extern const char nhc_layout[];
"""

C_SOURCE = r'''/* Steps 1-7 of the third linearization procedure (thesis Sect. 4.2.3, inputs Sect. 8.1) at one
 * reference point, with the reference admissibility check and the conditioning pre-check of
 * nhcontrol.linearize.third.linearize.  The same formulas, in the same order, as
 * nhcontrol/linearize/_point.py (point_procedure, point_suspect) and
 * nhcontrol/reference/admissibility.py (_passes_one); see those for the equations.
 *
 * All matrices are row-major.  The inverses and the solve with m0 use an unblocked LU
 * factorisation with partial pivoting (LAPACK's dgetf2 algorithm; see the module docstring of
 * nhcontrol/linearize/_cpoint.py for why not LAPACK itself).
 *
 * Return value: 0, or a sum of flags after which the caller takes the general (numpy) path,
 * which repeats the work and raises or warns with the full message:
 *   1  the reference fails the admissibility check     2  a block may be ill conditioned
 *   4  a singular block or a result that is not finite  8  inputs enter the constraints
 *   16 the work array is too small
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(_MSC_VER)
#define NHC_API __declspec(dllexport)
#else
#define NHC_API
#endif

/* field order of the offsets array (nhcontrol.linearize._cpoint.FIELDS) */
enum { F_M, F_Q, F_D, F_Cx, F_B, F_Qd, F_dMa_dx, F_dMa_du, F_dDTlam_dx, F_dQ_dx, F_dQ_dxd,
       F_dQ_du, F_dDv_dx, F_dDa_dx, F_dQd_dx, F_dQd_dxd, F_dCxv_dx, F_dBv_dx, F_dQd_du,
       F_dDa_du, F_dC_du, F_COUNT };

/* C (r x c, row stride ldc) = alpha * A (r x q, lda) * B (q x c, ldb) + beta * C */
static void mm(int64_t r, int64_t q, int64_t c, double alpha, const double *A, int64_t lda, const double *B,
               int64_t ldb, double beta, double *C, int64_t ldc)
{
    for (int64_t i = 0; i < r; i++) {
        double *ci = C + i * ldc;
        if (beta == 0.0) {
            for (int64_t j = 0; j < c; j++) ci[j] = 0.0;
        } else if (beta != 1.0) {
            for (int64_t j = 0; j < c; j++) ci[j] *= beta;
        }
        for (int64_t p = 0; p < q; p++) {
            double a = alpha * A[i * lda + p];
            const double *bp = B + p * ldb;
            if (a == 0.0) continue;
            for (int64_t j = 0; j < c; j++) ci[j] += a * bp[j];
        }
    }
}

/* LU factorisation with partial pivoting of the s x s row-major matrix X, in place (the
   algorithm of LAPACK's unblocked dgetf2); 1 when a pivot is exactly zero */
static int lu(double *X, int64_t s, int64_t *piv)
{
    for (int64_t j = 0; j < s; j++) {
        int64_t p = j;
        double big = fabs(X[j * s + j]);
        for (int64_t i = j + 1; i < s; i++)
            if (fabs(X[i * s + j]) > big) { big = fabs(X[i * s + j]); p = i; }
        piv[j] = p;
        if (!(big != 0.0)) return 1;
        if (p != j)
            for (int64_t q = 0; q < s; q++) {
                double t = X[j * s + q]; X[j * s + q] = X[p * s + q]; X[p * s + q] = t;
            }
        double inv = 1.0 / X[j * s + j];
        for (int64_t i = j + 1; i < s; i++) {
            double f = (X[i * s + j] *= inv);
            if (f == 0.0) continue;
            for (int64_t q = j + 1; q < s; q++) X[i * s + q] -= f * X[j * s + q];
        }
    }
    return 0;
}

/* solve (LU from lu()) X = R for the s x r row-major R (row stride ldr), in place */
static void lu_solve(const double *F, int64_t s, const int64_t *piv, double *R, int64_t r, int64_t ldr)
{
    for (int64_t j = 0; j < s; j++)
        if (piv[j] != j)
            for (int64_t q = 0; q < r; q++) {
                double t = R[j * ldr + q]; R[j * ldr + q] = R[piv[j] * ldr + q]; R[piv[j] * ldr + q] = t;
            }
    for (int64_t i = 1; i < s; i++)            /* L y = P R (unit lower) */
        for (int64_t j = 0; j < i; j++) {
            double f = F[i * s + j];
            if (f == 0.0) continue;
            for (int64_t q = 0; q < r; q++) R[i * ldr + q] -= f * R[j * ldr + q];
        }
    for (int64_t i = s - 1; i >= 0; i--) {     /* U x = y */
        for (int64_t j = i + 1; j < s; j++) {
            double f = F[i * s + j];
            if (f == 0.0) continue;
            for (int64_t q = 0; q < r; q++) R[i * ldr + q] -= f * R[j * ldr + q];
        }
        double inv = 1.0 / F[i * s + i];
        for (int64_t q = 0; q < r; q++) R[i * ldr + q] *= inv;
    }
}

/* inverse of the s x s matrix X (row-major, in place; work: s*s doubles); 1 if singular */
static int inverse(double *X, int64_t s, int64_t *piv, double *work)
{
    if (s == 0) return 0;
    if (lu(X, s, piv)) return 1;
    for (int64_t i = 0; i < s * s; i++) work[i] = 0.0;
    for (int64_t i = 0; i < s; i++) work[i * s + i] = 1.0;
    lu_solve(X, s, piv, work, s, s);
    for (int64_t i = 0; i < s * s; i++) X[i] = work[i];
    return 0;
}

/* the conditioning pre-check of one inverted s x s block (point_suspect in _point.py): 1 when
   s * sum_j (sum_i inv_ij^2) rn2_j is not below lim (rn2: squared row norms of the full matrix) */
static int suspect(const double *inv, int64_t s, const double *rn2, double lim)
{
    double acc = 0.0;
    for (int64_t j = 0; j < s; j++) {
        double cs = 0.0;
        for (int64_t i = 0; i < s; i++) cs += inv[i * s + j] * inv[i * s + j];
        acc += cs * rn2[j];
    }
    return !((double)s * acc < lim);
}

/* squared row norms rn2 of the r x cols matrix F; 1 when a row vanishes (infinitely ill
   conditioned) */
static int row_norms2(const double *F, int64_t r, int64_t cols, double *rn2)
{
    int zero = 0;
    for (int64_t i = 0; i < r; i++) {
        double s = 0.0;
        for (int64_t j = 0; j < cols; j++) s += F[i * cols + j] * F[i * cols + j];
        rn2[i] = s;
        if (!(s != 0.0)) zero = 1;
    }
    return zero;
}

static int finite_all(const double *a, int64_t len)
{
    double s = 0.0;
    for (int64_t i = 0; i < len; i++) s += a[i] * 0.0;   /* NaN for a NaN or inf entry */
    return s == 0.0;
}

/* work array size (doubles) for dims = [n, m, l, k] */
NHC_API int64_t nhc_point_work(const int64_t *dims)
{
    int64_t n = dims[0], m = dims[1], l = dims[2], k = dims[3];
    int64_t n1 = n - m - l, na = n - m, c = m + l, ns = 2 * n1 + l;
    int64_t big = c > n1 ? c : n1;
    return n * n1 + n * (2 * n + n1 + k) + c * c + 2 * c * (n1 + 3 * n) + n1 * (2 * n + n1 + k)
        + n1 * n + n * na + m * m + 2 * m * (na + n) + 3 * l * na + l * n + 2 * l * ns + l * l
        + n1 * na + n1 * n1 + 3 * n1 * (ns + k) + n1 * n1 + (big + 1) * (big + 1) + 2 * n + 4 * c + 16;
}

NHC_API int nhc_point_third(const int64_t *dims, const int64_t *ix, const double *T, const int64_t *off,
                            const double *Cv, const double *bv, const double *x0, const double *xd0,
                            const double *xdd0, const double *lam0, double tol, double cond_max,
                            double atol_u, double *A, double *Bout, double *W, int64_t nW, int64_t *ipiv)
{
    const int64_t n = dims[0], m = dims[1], l = dims[2], k = dims[3], check = dims[4];
    const int64_t n1 = n - m - l, na = n - m, c = m + l, ns = 2 * n1 + l, w7 = 2 * n + n1 + k;
    const int64_t *ai = ix, *ad = ix + n1, *d = ix + n1 + l;
    const double *M = T + off[F_M], *D = T + off[F_D], *Cx = T + off[F_Cx], *Bm = T + off[F_B];
    int flags = 0;
    int64_t i, j;

    if (nW < nhc_point_work(dims)) return 16;

    /* inputs in the constraints (fields listed after the F_COUNT offsets as offset, size
       pairs): outside Sect. 8.1, the general path warns */
    for (int64_t f = 0; f < dims[5]; f++)
        for (i = 0; i < off[F_COUNT + 2 * f + 1]; i++)
            if (!(fabs(T[off[F_COUNT + 2 * f] + i]) <= atol_u)) return 8;

    /* ---- the reference admissibility check (reference/admissibility.py, _passes_one):
       |r| <= tol * scale + floor, floor = rho * (the level's scale over the whole problem) ---- */
    if (check) {
        double vx = 0.0, ax = 0.0, S = 0.0, maxM = 0.0, aF = 0.0;
        double fh = 0.0, fv = 0.0, fa = 0.0;
        const double rho = 4.0 * (double)(n + c) * 2.220446049250313e-16;
        const double *Q = T + off[F_Q], *Qd = T + off[F_Qd];
        for (i = 0; i < n; i++) {
            if (fabs(xd0[i]) > vx) vx = fabs(xd0[i]);
            if (fabs(xdd0[i]) > ax) ax = fabs(xdd0[i]);
        }
        for (i = 0; i < n; i++) {                       /* scale of M xdd0 + D^T Lam0 - Q */
            double t = fabs(Q[i]);
            for (j = 0; j < n; j++) {
                t += fabs(M[i * n + j]) * fabs(xdd0[j]);
                if (fabs(M[i * n + j]) > maxM) maxM = fabs(M[i * n + j]);
            }
            for (j = 0; j < c; j++) t += fabs(lam0[j]) * fabs(D[j * n + i]);
            if (t > S) S = t;
        }
        if (maxM * (1.0 + vx * vx + ax) > S) S = maxM * (1.0 + vx * vx + ax);
        if (maxM > 0.0) aF = S / maxM;
        for (i = 0; i < m; i++) {                       /* floors: largest scale of the level */
            double sc = 0.0;
            for (j = 0; j < n; j++) sc += fabs(D[i * n + j]) * (fabs(x0[j]) > 1.0 ? fabs(x0[j]) : 1.0);
            if (sc > fh) fh = sc;
        }
        for (i = 0; i < c; i++) {
            double row = 0.0;
            for (j = 0; j < n; j++) row += fabs(D[i * n + j]);
            double s1 = row * vx + (bv ? fabs(bv[i]) : 0.0);
            double s2 = row * (ax + vx * vx + aF) + fabs(Qd[i]);
            if (s1 > fv) fv = s1;
            if (s2 > fa) fa = s2;
        }
        fh *= rho; fv *= rho; fa *= rho;
        for (i = 0; i < m; i++) {                       /* C(x0) = 0 */
            double sc = 0.0;
            for (j = 0; j < n; j++) sc += fabs(D[i * n + j]) * (fabs(x0[j]) > 1.0 ? fabs(x0[j]) : 1.0);
            if (!(fabs(Cv[i]) <= tol * sc + fh)) flags |= 1;
        }
        for (i = 0; i < c; i++) {                       /* D xd0 + b = 0, D xdd0 = Qd */
            double row = 0.0, r1 = 0.0, r2 = 0.0;
            for (j = 0; j < n; j++) {
                row += fabs(D[i * n + j]);
                r1 += D[i * n + j] * xd0[j];
                r2 += D[i * n + j] * xdd0[j];
            }
            double s1 = row * vx;
            if (bv) { r1 += bv[i]; s1 += fabs(bv[i]); }
            r2 -= Qd[i];
            if (!(fabs(r1) <= tol * s1 + fv)) flags |= 1;
            if (!(fabs(r2) <= tol * (row * (ax + vx * vx) + fabs(Qd[i])) + fa)) flags |= 1;
        }
        for (i = 0; i < n; i++) {
            double r = 0.0;
            for (j = 0; j < n; j++) r += M[i * n + j] * xdd0[j];
            double dl = 0.0;
            for (j = 0; j < c; j++) dl += lam0[j] * D[j * n + i];
            r = (r + dl) - Q[i];
            if (!(fabs(r) <= tol * S + rho * S)) flags |= 1;
        }
        if (flags) return flags;
    }

    /* ---- work arrays ---- */
    double *p = W;
#define TAKE(name, len) double *name = p; p += (len)
    TAKE(T0, n * n1);
    TAKE(W7, n * w7);
    TAKE(Ddd, c * c);
    TAKE(rhs1, c * (n1 + 3 * n));
    TAKE(sol, c * (n1 + 3 * n));
    TAKE(RS, n1 * w7);
    TAKE(RVS, n1 * n);
    TAKE(Th0, n * na);
    TAKE(Cxd, m * m);
    TAKE(rhsh, m * (na + n));
    TAKE(solh, m * (na + n));
    TAKE(Bbar, l * na);
    TAKE(Wl, l * n);
    TAKE(WT, l * na);
    TAKE(rhsn, l * ns);
    TAKE(Bad, l * l);
    TAKE(soln, l * ns);
    TAKE(RVST, n1 * na);
    TAKE(R0T0, n1 * n1);
    TAKE(rhs7, n1 * (ns + k));
    TAKE(m0c, n1 * n1);
    TAKE(lwork, (c > n1 ? c : n1) * (c > n1 ? c : n1) + 1);
    TAKE(rn2, c + 1);
#undef TAKE
    const double lim = cond_max * cond_max;

    /* ---- Steps 1-3: T0, Vbb0, U0, V0 from one inverse of D_dd ---- */
    memset(T0, 0, sizeof(double) * n * n1);
    for (j = 0; j < n1; j++) T0[ai[j] * n1 + j] = 1.0;
    {
        const double *dQ_dxd = T + off[F_dQ_dxd], *dQ_dx = T + off[F_dQ_dx];
        const double *dMa_dx = T + off[F_dMa_dx], *dDTl = T + off[F_dDTlam_dx];
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) {
                W7[i * w7 + j] = dQ_dxd[i * n + j];
                W7[i * w7 + n + j] = (dQ_dx[i * n + j] - dMa_dx[i * n + j]) - dDTl[i * n + j];
            }
    }
    if (c) {
        const int64_t rw = n1 + 3 * n;
        const double *dDv = T + off[F_dDv_dx], *dQd_dxd = T + off[F_dQd_dxd];
        const double *dDa = T + off[F_dDa_dx], *dQd_dx = T + off[F_dQd_dx];
        for (i = 0; i < c; i++) {
            for (j = 0; j < c; j++) Ddd[i * c + j] = D[i * n + (j < l ? ad[j] : d[j - l])];
            for (j = 0; j < n1; j++) rhs1[i * rw + j] = D[i * n + ai[j]];
            for (j = 0; j < n; j++) {
                rhs1[i * rw + n1 + j] = dDv[i * n + j];
                rhs1[i * rw + n1 + n + j] = -dQd_dxd[i * n + j];
                rhs1[i * rw + n1 + 2 * n + j] = dDa[i * n + j] - dQd_dx[i * n + j];
            }
        }
        if (inverse(Ddd, c, ipiv, lwork)) return 4;
        mm(c, c, rw, -1.0, Ddd, c, rhs1, rw, 0.0, sol, rw);    /* [T_dd, Vbb0_dd, U0_dd, V0_dd] */
        for (i = 0; i < c; i++) {
            int64_t row = i < l ? ad[i] : d[i - l];
            for (j = 0; j < n1; j++) T0[row * n1 + j] = sol[i * rw + j];
        }
        /* W7[:, :2n] -= M[:, dd] @ sol[:, n1+n : n1+3n] */
        for (i = 0; i < n; i++)
            for (int64_t q = 0; q < c; q++) {
                int64_t col = q < l ? ad[q] : d[q - l];
                double a = M[i * n + col];
                if (a == 0.0) continue;
                const double *sq = sol + q * rw + n1 + n;
                for (j = 0; j < 2 * n; j++) W7[i * w7 + j] -= a * sq[j];
            }
        if (check && (row_norms2(D, c, n, rn2) || suspect(Ddd, c, rn2, lim)))
            flags |= 2;                    /* pre-check: D rows and the inverse of D_dd */
    }
    mm(n, n, n1, 1.0, M, n, T0, n1, 0.0, W7 + 2 * n, w7);    /* M T0 */
    if (k) {
        const double *dQ_du = T + off[F_dQ_du], *dMa_du = T + off[F_dMa_du];
        for (i = 0; i < n; i++)
            for (j = 0; j < k; j++) W7[i * w7 + 2 * n + n1 + j] = dQ_du[i * k + j] - dMa_du[i * k + j];
    }
    /* RS = T0^T W7 = [R0, S0, m0, T0^T(dQ/du - d(Mxdd0)/du)] */
    for (i = 0; i < n1; i++)
        for (j = 0; j < w7; j++) RS[i * w7 + j] = 0.0;
    for (int64_t r = 0; r < n; r++)
        for (i = 0; i < n1; i++) {
            double a = T0[r * n1 + i];
            if (a == 0.0) continue;
            for (j = 0; j < w7; j++) RS[i * w7 + j] += a * W7[r * w7 + j];
        }
    for (i = 0; i < n1; i++)
        for (j = 0; j < n; j++) RVS[i * n + j] = RS[i * w7 + n + j];
    if (c) {                                   /* RVS = R0[:, dd] @ Vbb0_dd + RVS */
        const int64_t rw = n1 + 3 * n;
        for (i = 0; i < n1; i++)
            for (int64_t q = 0; q < c; q++) {
                int64_t col = q < l ? ad[q] : d[q - l];
                double a = RS[i * w7 + col];
                if (a == 0.0) continue;
                for (j = 0; j < n; j++) RVS[i * n + j] += a * sol[q * rw + n1 + j];
            }
    }

    /* ---- Steps 4-5: Th0 and Vh0 from one inverse of dC/dx_d ---- */
    memset(Th0, 0, sizeof(double) * n * na);
    for (j = 0; j < na; j++) Th0[(j < n1 ? ai[j] : ad[j - n1]) * na + j] = 1.0;
    if (m) {
        const double *dCxv = T + off[F_dCxv_dx];
        const int64_t rw = na + n;
        for (i = 0; i < m; i++) {
            for (j = 0; j < m; j++) Cxd[i * m + j] = Cx[i * n + d[j]];
            for (j = 0; j < na; j++) rhsh[i * rw + j] = Cx[i * n + (j < n1 ? ai[j] : ad[j - n1])];
            for (j = 0; j < n; j++) rhsh[i * rw + na + j] = dCxv[i * n + j];
        }
        if (inverse(Cxd, m, ipiv, lwork)) return 4;
        mm(m, m, rw, -1.0, Cxd, m, rhsh, rw, 0.0, solh, rw);      /* [Th0_d, Vh0_d] */
        for (i = 0; i < m; i++)
            for (j = 0; j < na; j++) Th0[d[i] * na + j] = solh[i * rw + j];
        if (check && suspect(Cxd, m, rn2, lim)) flags |= 2;
    }

    memset(A, 0, sizeof(double) * ns * ns);
    for (j = 0; j < n1; j++) A[j * ns + n1 + j] = 1.0;
    /* ---- Step 6: the dependent velocities (Eqs. (4.114)-(4.117)) ---- */
    if (l) {
        const double *dBv = T + off[F_dBv_dx];
        mm(l, n, na, 1.0, Bm, n, Th0, na, 0.0, Bbar, na);           /* Bbar = B Th0 */
        for (i = 0; i < l * n; i++) Wl[i] = dBv[i];
        if (m) {                                                    /* B[:, d] Vh0_d + d(Bxd0)/dx */
            const int64_t rw = na + n;
            for (i = 0; i < l; i++)
                for (int64_t q = 0; q < m; q++) {
                    double a = Bm[i * n + d[q]];
                    if (a == 0.0) continue;
                    for (j = 0; j < n; j++) Wl[i * n + j] += a * solh[q * rw + na + j];
                }
        }
        mm(l, n, na, 1.0, Wl, n, Th0, na, 0.0, WT, na);
        for (i = 0; i < l; i++) {
            for (j = 0; j < n1; j++) {
                rhsn[i * ns + j] = WT[i * na + j];
                rhsn[i * ns + n1 + j] = Bbar[i * na + j];
            }
            for (j = 0; j < l; j++) {
                rhsn[i * ns + 2 * n1 + j] = WT[i * na + n1 + j];
                Bad[i * l + j] = Bbar[i * na + n1 + j];
            }
        }
        if (inverse(Bad, l, ipiv, lwork)) return 4;
        mm(l, l, ns, -1.0, Bad, l, rhsn, ns, 0.0, soln, ns);
        for (i = 0; i < l; i++)
            for (j = 0; j < ns; j++) A[(2 * n1 + i) * ns + j] = soln[i * ns + j];
        if (check && (row_norms2(Bbar, l, na, rn2) || suspect(Bad, l, rn2, lim)))
            flags |= 2;
    }

    /* ---- Step 7: [J21, J22, J23 | B_u] from one solve with m0 (Eqs. (4.118)-(4.125)) ---- */
    mm(n1, n, na, 1.0, RVS, n, Th0, na, 0.0, RVST, na);
    /* R0 T0 */
    mm(n1, n, n1, 1.0, RS, w7, T0, n1, 0.0, R0T0, n1);
    {
        const int64_t rw = ns + k;
        for (i = 0; i < n1; i++) {
            for (j = 0; j < n1; j++) {
                rhs7[i * rw + j] = RVST[i * na + j];
                rhs7[i * rw + n1 + j] = R0T0[i * n1 + j];
            }
            for (j = 0; j < l; j++) rhs7[i * rw + 2 * n1 + j] = RVST[i * na + n1 + j];
            for (j = 0; j < k; j++) rhs7[i * rw + ns + j] = RS[i * w7 + 2 * n + n1 + j];
        }
        for (i = 0; i < n1; i++)
            for (j = 0; j < n1; j++) m0c[i * n1 + j] = RS[i * w7 + 2 * n + j];
        if (n1 && lu(m0c, n1, ipiv)) return 4;
        lu_solve(m0c, n1, ipiv, rhs7, rw, rw);
        for (i = 0; i < n1; i++)
            for (j = 0; j < ns; j++) A[(n1 + i) * ns + j] = rhs7[i * rw + j];
        memset(Bout, 0, sizeof(double) * ns * k);
        for (i = 0; i < n1; i++)
            for (j = 0; j < k; j++) Bout[(n1 + i) * k + j] = rhs7[i * rw + ns + j];
    }
    if (!finite_all(A, ns * ns) || !finite_all(Bout, ns * k)) flags |= 4;
    return flags;
}

/* N points: point i reads T + i*sT, Cv + i*sC, bv + i*sb, x0/xd0/xdd0 + i*sx, lam0 + i*sl
   (a stride 0 repeats one row) and writes A + i*ns*ns, Bout + i*ns*k; stops at the first
   point with flags (the general path decides the whole stack) */
NHC_API int nhc_point_third_n(int64_t N, const int64_t *dims, const int64_t *ix, const double *T,
                              int64_t sT, const int64_t *off, const double *Cv, int64_t sC,
                              const double *bv, int64_t sb, const double *x0, const double *xd0,
                              const double *xdd0, int64_t sx, const double *lam0, int64_t sl,
                              double tol, double cond_max, double atol_u, double *A, double *Bout,
                              double *W, int64_t nW, int64_t *ipiv)
{
    const int64_t n1 = dims[0] - dims[1] - dims[2], ns = 2 * n1 + dims[2], k = dims[3];
    for (int64_t i = 0; i < N; i++) {
        int flags = nhc_point_third(dims, ix, T + i * sT, off, Cv + i * sC,
                                    bv ? bv + i * sb : bv, x0 + i * sx, xd0 + i * sx,
                                    xdd0 + i * sx, lam0 + i * sl, tol, cond_max, atol_u,
                                    A + i * ns * ns, Bout + i * ns * k, W, nW, ipiv);
        if (flags) return flags;
    }
    return 0;
}

/* the prepared one-point call (nhcontrol.linearize.prepared): the kernels of the model's own
   library through their addresses fp = [linearization_terms, C (0: none), b (0: none), ...]
   (int nhc_f(const double *..., double *o), nhcontrol/compiled/ccodegen.py), then
   nhc_point_third; T (the kernel's output, zeroed once: the kernel writes the same entries at
   every call), Cv, bv are the caller's buffers.  A kernel that fails returns
   32 | (its flags << 8) (the general path then names the problem). */
typedef int (*nhc_kernel6)(const double *, const double *, const double *, const double *,
                           const double *, const double *, double *);
typedef int (*nhc_kernel3)(const double *, const double *, const double *, double *);
typedef int (*nhc_prepared)(const int64_t *, const int64_t *, const int64_t *, const int64_t *,
                            double *, double *, double *, const double *, const double *,
                            const double *, const double *, const double *, const double *,
                            double, double, double, double *, double *, double *, int64_t,
                            int64_t *);

NHC_API int nhc_point_prepared(const int64_t *fp, const int64_t *dims, const int64_t *ix,
                               const int64_t *off, double *T, double *Cv, double *bv,
                               const double *x, const double *xd, const double *xdd,
                               const double *lam, const double *u, const double *p, double tol,
                               double cond_max, double atol_u, double *A, double *Bout,
                               double *W, int64_t nW, int64_t *ipiv)
{
    int rc = ((nhc_kernel6)(intptr_t)fp[0])(x, xd, xdd, lam, u, p, T);
    if (rc) return 32 | (rc << 8);
    if (dims[4] && fp[1]) {
        rc = ((nhc_kernel3)(intptr_t)fp[1])(x, u, p, Cv);
        if (rc) return 32 | (rc << 8);
    }
    if (dims[4] && fp[2]) {
        rc = ((nhc_kernel3)(intptr_t)fp[2])(x, u, p, bv);
        if (rc) return 32 | (rc << 8);
    }
    return nhc_point_third(dims, ix, T, off, Cv, (dims[4] && fp[2]) ? bv : 0, x, xd, xdd, lam,
                           tol, cond_max, atol_u, A, Bout, W, nW, ipiv);
}

/* the first-order rows of Sect. 7.2 (nhcontrol.linearize.first_order, derived there): after
   nhc_point_prepared (A, B: its mechanical rows, scratch here), with T0 (n x n1), the rows [ad, d]
   of Vbb0 and Th0 (n x (n - m)) in the work array W (model row order, nhc_point_third's layout),
   the full Jacobian Aout (nt x nt, nt = ns + r + nw) in [x_ai, xd_ai, x_ad, z, w] and its input
   matrix Rout (nt x nr, rdims = [r, nw, nr]: zeros above the rows of w, W_r there):
       [ A   B    0  ]        Gx = (H_x + H_xd[:, dd] Vbb0_dd) Th0  (columns x_ai | x_ad)
       [ Gx  H_z  H_w]        Gxd = H_xd T0                         (columns xd_ai)
       [ 0   0    W_w]
   (requires k = r: the model's inputs are the states z).  64 when a block is not finite (the
   caller names it), 4 when the result is not finite; else the flags of nhc_point_prepared. */
NHC_API int nhc_point_first_order(const int64_t *fp, const int64_t *dims, const int64_t *ix,
                                  const int64_t *off, double *T, double *Cv, double *bv,
                                  const double *x, const double *xd, const double *xdd,
                                  const double *lam, const double *u, const double *p, double tol,
                                  double cond_max, double atol_u, double *A, double *Bout,
                                  double *W, int64_t nW, int64_t *ipiv, const int64_t *rdims,
                                  const double *Hx, const double *Hxd, const double *Hz,
                                  const double *Hw, const double *Ww, const double *Wr,
                                  double *Aout, double *Rout)
{
    const int64_t n = dims[0], m = dims[1], l = dims[2], k = dims[3];
    const int64_t r = rdims[0], nw = rdims[1], nr = rdims[2];
    const int64_t n1 = n - m - l, na = n - m, c = m + l, ns = 2 * n1 + l, nt = ns + r + nw;
    const int64_t w7 = 2 * n + n1 + k, rw = n1 + 3 * n;
    const int64_t at_sol = n * n1 + n * w7 + c * c + c * rw;
    const int64_t at_th0 = at_sol + c * rw + n1 * w7 + n1 * n;
    const int64_t *dd = ix + n1;
    int64_t i, j, q, s;
    if (k != r) return 16;
    if (!(finite_all(Hx, r * n) && finite_all(Hxd, r * n) && finite_all(Hz, r * r)
          && finite_all(Hw, r * nw) && finite_all(Ww, nw * nw) && finite_all(Wr, nw * nr)))
        return 64;
    /* fp[3]: the same call specialised to the model and partition (linearization/_cspecial.py;
       0: none), which writes T0, Vbb0 and Th0 into W in the layout of nhc_point_third */
    int rc = fp[3] ? ((nhc_prepared)(intptr_t)fp[3])(fp, dims, ix, off, T, Cv, bv, x, xd, xdd, lam,
                                                     u, p, tol, cond_max, atol_u, A, Bout, W, nW, ipiv)
                   : nhc_point_prepared(fp, dims, ix, off, T, Cv, bv, x, xd, xdd, lam, u, p, tol,
                                        cond_max, atol_u, A, Bout, W, nW, ipiv);
    if (rc) return rc;
    const double *T0 = W, *sol = W + at_sol, *Th0 = W + at_th0;
    for (i = 0; i < nt * nt; i++) Aout[i] = 0.0;
    for (i = 0; i < ns; i++) {
        for (j = 0; j < ns; j++) Aout[i * nt + j] = A[i * ns + j];
        for (j = 0; j < r; j++) Aout[i * nt + ns + j] = Bout[i * k + j];
    }
    for (i = 0; i < r; i++) {
        double *row = Aout + (ns + i) * nt;
        const double *hx = Hx + i * n, *hxd = Hxd + i * n;
        for (q = 0; q < n; q++) {                    /* G[i, q] Th0[q, :] */
            double g = 0.0;
            for (s = 0; s < c; s++) g += hxd[dd[s]] * sol[s * rw + n1 + q];
            g = hx[q] + g;
            if (g == 0.0) continue;
            const double *th = Th0 + q * na;
            for (j = 0; j < n1; j++) row[j] += g * th[j];
            for (j = n1; j < na; j++) row[n1 + j] += g * th[j];
        }
        for (q = 0; q < n; q++) {                    /* H_xd[i, q] T0[q, :] */
            double h = hxd[q];
            if (h == 0.0) continue;
            for (j = 0; j < n1; j++) row[n1 + j] += h * T0[q * n1 + j];
        }
        for (j = 0; j < r; j++) row[ns + j] = Hz[i * r + j];
        for (j = 0; j < nw; j++) row[ns + r + j] = Hw[i * nw + j];
    }
    for (i = 0; i < nw; i++)
        for (j = 0; j < nw; j++) Aout[(ns + r + i) * nt + ns + r + j] = Ww[i * nw + j];
    for (i = 0; i < (ns + r) * nr; i++) Rout[i] = 0.0;
    for (i = 0; i < nw * nr; i++) Rout[(ns + r) * nr + i] = Wr[i];
    return finite_all(Aout, nt * nt) ? 0 : 4;
}

NHC_API const char nhc_layout[] = NHC_LAYOUT;
'''
"""The routine (``NHC_LAYOUT`` is replaced by the library's layout string)."""


def helpers() -> str:
    """The dense LU, inverse, pre-check and finiteness helpers of the routine (the compiled RTI
    and the routines specialised to a model reuse them)."""
    a = C_SOURCE.index("/* LU factorisation with partial pivoting")
    b = C_SOURCE.index("/* squared row norms rn2")
    c = C_SOURCE.index("static int finite_all")
    e = C_SOURCE.index("/* work array size")
    return C_SOURCE[a:b] + C_SOURCE[c:e]
