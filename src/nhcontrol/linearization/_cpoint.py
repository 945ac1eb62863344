"""Steps 1-7 of the third procedure at one point in compiled code: the fast one-point path of
`nhcontrol.linearization.linearize`.

`nhcontrol.linearization._point.point_procedure` (with `point_suspect` and the one-point
admissibility decision of `nhcontrol.reference.admissibility`) is the reference implementation;
the C routine below computes the same matrices with the same formulas, in the model's
coordinate order, for a model with C kernels: one call of the fused kernel (its flat output
buffer, no views), one call of ``C(x0)`` (and ``b(x0)`` for affine constraints) for the check,
and one call of this routine.

The inverses of ``D_dd``, ``∂C/∂x_d``, ``B̄_ad`` and the solve with ``m0`` use an unblocked LU
factorisation with partial pivoting (the algorithm of LAPACK's ``dgetf2``) written here.
Calling LAPACK instead (scipy's ``dgetrf``/``dgetri``/``dgetrs`` through
``scipy.linalg.cython_lapack`` function pointers) was measured first: the OpenBLAS that scipy
ships synchronises its threads even for 4 x 4 blocks, which made one bicycle point cost
40-270 µs instead of 20 µs on a 2-core machine (numpy's ``inv``, used by the general path,
does not show this). The blocks are small (at most ``m + l`` rows; a few tens for the catalogue
models), where LAPACK's blocked ``dgetrf`` runs its unblocked kernel too.

The routine answers only the common case: models whose inputs do not enter the nonholonomic
constraints (``cm.constraint_inputs`` empty: no input-rate terms; those models take the general
path).  Whenever the reference fails the admissibility check, a block may be ill conditioned
(the pre-check bound reaches ``cond_max``), a block is singular, the result is not finite, or
inputs enter the holonomic constraints, it returns a flag and
`linearize` takes the general path, which repeats the work with numpy and raises or warns
with the full message.  The agreement with the general path is tested for every shipped model
(tests/test_linearize_cpoint.py).

The library is generic (not per model): compiled once per cache directory with the kernels'
compiler settings (`nhcontrol.compiled.cbackend.compile_library`), stored with a sha256
record and verified before it is opened, like the kernel libraries.  A library that cannot be
built or loaded gives one warning and the numpy path.
"""

from __future__ import annotations

import os
from _thread import allocate_lock as _new_lock   # threading.Lock, without importing threading
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from pathlib import Path

    from nhcontrol.compiled import CompiledModel

__all__ = ["point_function", "FIELDS", "INPUT_CONSTRAINT_FIELDS", "VERSION"]

VERSION = "p5"
"""Version of the C routine (part of the library's file name and cache key)."""

FIELDS = ("M", "Q", "D", "Cx", "B", "Qd", "dMa_dx", "dMa_du", "dDTlam_dx", "dQ_dx", "dQ_dxd",
          "dQ_du", "dDv_dx", "dDa_dx", "dQd_dx", "dQd_dxd", "dCxv_dx", "dBv_dx", "dQd_du",
          "dDa_du", "dC_du")
"""Kernel fields the routine reads, in the order of its offsets array."""

INPUT_CONSTRAINT_FIELDS = ("dC_du", "dDa_du", "dQd_du")
"""Fields whose entries must all be ``<= INPUT_CONSTRAINT_ATOL`` in magnitude (inputs that enter the
constraints are outside Sect. 8.1: the general path carries or warns about them)."""

_CDEF = """
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

_LOCK = _new_lock()
_LIBS: dict[str, Any] = {}        # cache directory -> _Library or None (unusable: numpy path)


def _source() -> tuple[str, str]:
    """The C source with its layout, and the cache key (sha256 of the routine and its version)."""
    return C_SOURCE.replace("NHC_LAYOUT", _layout_literal()), _key()


def _layout_literal() -> str:
    """The C string literal of the library's layout (with cffi's parsed tables)."""
    from ..compiled._ffi_tables import routine_layout_literal

    return routine_layout_literal(_key(), VERSION, _CDEF)


_KEY: list[str] = []


def _key() -> str:
    """sha256 of the routine's version and source (computed once per process)."""
    if not _KEY:
        from .._util.sha import sha256_hex      # hashlib (OpenSSL) only if already imported

        _KEY.append(sha256_hex((VERSION + "\n" + C_SOURCE).encode()))
    return _KEY[0]


def library_path(directory: str | os.PathLike) -> Path:
    """``<directory>/nhc_point_<key>.<platform>.so`` (``.dll`` on Windows)."""
    from ..compiled import cache as _cache

    return _cache._path(_library_file(os.fspath(directory)))


def _library_file(directory: str) -> str:
    """``<directory>/nhc_point_<key>.<platform>.so`` (``.dll`` on Windows)."""
    from ..compiled.cbackend import library_suffix     # sysconfig's platform, without sysconfig on Linux

    return os.path.join(directory, f"nhc_point_{_key()[:24]}.{VERSION}.{library_suffix()}")


class _Library:
    """The loaded routine: ``fn``, ``work(dims)`` and the FFI."""

    def __init__(self, path: str) -> None:
        from ..compiled.cbackend import open_routine

        raw, ffi, lib = open_routine(path, _key(), VERSION)
        self.path, self._raw, self.ffi, self.lib = path, raw, ffi, lib
        self.fn, self.fn_n, self.work = lib.nhc_point_third, lib.nhc_point_third_n, lib.nhc_point_work
        self.prepared = lib.nhc_point_prepared
        self.first_order = lib.nhc_point_first_order


def prebuild(directory: str) -> None:
    """Compile the library into ``directory`` ahead of its first use (a cold model build:
    `nhcontrol.compiled.cbackend.prebuild_routines`)."""
    from ..compiled.cbackend import prebuild_routine

    prebuild_routine(_library_file(directory), lambda: _source()[0], _LOCK, _LIBS, str(directory),
                     template=C_SOURCE, layout=_layout_literal)


def _library(directory: str) -> "_Library | None":
    key = str(directory)
    with _LOCK:
        if key in _LIBS:
            return _LIBS[key]
        from ..compiled.cbackend import load_or_build_routine

        lib = load_or_build_routine(
            _library_file(directory), _Library, lambda: _source()[0],
            what="compiled linearization library (Steps 1-7)",
            fallback="nhcontrol linearizes single points with numpy (same results, slower)")
        _LIBS[key] = lib
        return lib


_FUNCS: dict[tuple[int, int], tuple[Any, Any, Any]] = {}


def point_function(cm: CompiledModel, idx: Any, atol_u: float) -> "Callable[..., Any] | None":
    """The compiled one-point linearization of model ``cm`` for partition ``idx``, or None
    (a model without C kernels, or a routine that cannot be built: the numpy path).

    The callable takes ``(x, xd, xdd, lam, u, p, check, tol, cond_max)`` (one point; ``u`` and
    ``p`` may be None) and returns ``(A, B, buffer)`` (``buffer``: the fused kernel's flat
    output, for `CKernels.split`) or None when the general path must decide (see the module
    docstring).  Its attribute ``many`` does the same for stacked points (``x (N, n)`` …).
    """
    ck = getattr(cm, "_ck", None)
    if ck is None or getattr(cm, "_library_path", None) is None or getattr(cm, "constraint_inputs", ()):
        return None     # no C kernels, or inputs in the nonholonomic constraints (input rates)
    hit = _FUNCS.get((id(cm), id(idx)))
    if hit is not None and hit[0] is cm and hit[1] is idx:
        return hit[2]
    lib = _library(os.path.dirname(cm._library_path))
    if lib is None:
        return None
    fn = _make(cm, idx, ck, lib, float(atol_u))
    if len(_FUNCS) > 256:
        _FUNCS.clear()
    _FUNCS[(id(cm), id(idx))] = (cm, idx, fn)
    return fn


def routine_arrays(cm: CompiledModel, idx: Any, ck: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dims, offsets, ix)`` of the routine for model ``cm`` (C kernels ``ck``) and partition
    ``idx``: ``dims = [n, m, l, k, check = 1, number of input-constraint fields]``, the
    offsets of `FIELDS` (then offset, size pairs of `INPUT_CONSTRAINT_FIELDS`) in the fused
    kernel's output, and the permutation ``[ai, ad, d]``."""
    n, m, l, k = int(idx.n), int(idx.m), int(idx.l), int(cm.ninputs)  # noqa: E741
    spec = ck.layout["functions"]["linearization_terms"]
    from ..compiled._layout import LINEARIZATION_FIELDS as names
    at = {nm: int(o[0]) for nm, o in zip(names, spec["outputs"])}
    sizes = {nm: int(o[1]) for nm, o in zip(names, spec["outputs"])}
    ucons = [f for f in INPUT_CONSTRAINT_FIELDS if f in at]
    offs = np.array([at[f] for f in FIELDS] + [v for f in ucons for v in (at[f], sizes[f])],
                    dtype=np.int64)
    ix = np.concatenate([idx.ai, idx.ad, idx.d]).astype(np.int64)
    dims_on = np.array([n, m, l, k, 1, len(ucons)], dtype=np.int64)
    return dims_on, offs, ix


def library_for(cm: CompiledModel) -> "_Library | None":
    """The routine's library for the cache directory of ``cm``'s C kernels, or None (a model
    without C kernels or inputs in its nonholonomic constraints, or a routine that cannot be
    built: the numpy path)."""
    if (getattr(cm, "_ck", None) is None or getattr(cm, "_library_path", None) is None
            or getattr(cm, "constraint_inputs", ())):
        return None
    return _library(os.path.dirname(cm._library_path))


def _make(cm: CompiledModel, idx: Any, ck: Any, lib: _Library, atol_u: float) -> Callable[..., Any]:
    n, m, l, k = int(idx.n), int(idx.m), int(idx.l), int(cm.ninputs)  # noqa: E741
    n1 = n - m - l
    ns = 2 * n1 + l
    c = m + l
    spec = ck.layout["functions"]["linearization_terms"]
    dims_on, offs, ix = routine_arrays(cm, idx, ck)
    dims_off = dims_on.copy()
    dims_off[4] = 0
    ffi = lib.ffi
    fb = ffi.from_buffer
    i64 = ffi.typeof("int64_t[]")
    dbl = ffi.typeof("double[]")
    c_on, c_off, c_ix, c_offs = fb(i64, dims_on), fb(i64, dims_off), fb(i64, ix), fb(i64, offs)
    keep = (dims_on, dims_off, ix, offs)            # the buffers behind the cdata above
    nwork = int(lib.work(c_on))
    raw_terms = ck.raw["linearization_terms"]
    raw_C = ck.raw.get("C") if m else None
    raw_b = ck.raw.get("b") if getattr(cm, "affine_names", ()) else None
    p0 = np.ascontiguousarray(cm._p0)
    u0 = np.zeros(k)
    psize = p0.shape[0]
    empty = np.zeros(1)
    null = ffi.NULL
    from . import _cspecial

    # the routine specialised to the model and partition (_cspecial.py) when its library is
    # in the cache; else the generic one until SPECIALISE_AFTER points have gone through this
    # function, then it is built in the background and swapped in when it is there (a call
    # never waits for a compiler; both give the same numbers)
    sp = _cspecial.routine(cm, idx, ck, build=False)
    cur = [(lib.fn, lib.fn_n, None) if sp is None else (sp.third, sp.third_n, null),
           sp is not None, 0]                  # routines (one tuple), specialised tried, points

    def swap(got: Any) -> None:
        cur[0] = (got.third, got.third_n, null)      # one assignment: a call reads one tuple

    def count(N: int) -> None:
        cur[2] += N
        if not cur[1] and cur[2] >= SPECIALISE_AFTER:
            cur[1] = True
            _cspecial.routine_soon(cm, idx, ck, swap)

    import threading

    local = threading.local()        # per-thread work arrays of the routine (reused)
    from ..compiled.cbackend import FloatingPointFlags

    def run(x: np.ndarray, xd: np.ndarray, xdd: np.ndarray, lam: np.ndarray, u: Any, p: Any,
            check: bool, tol: float, cond_max: float, trusted: bool = False) -> tuple | None:
        """``trusted``: ``x, xd, xdd, lam, u`` are float64 vectors of the model's sizes (as
        `linearize` makes them); only their contiguity is left to ``from_buffer``."""
        if p is None:
            p = p0
        elif not (type(p) is np.ndarray and p.ndim == 1 and p.dtype == np.float64
                  and p.shape[0] == psize):
            return None
        if u is None:
            u = u0
        if not trusted:
            for a, size in ((x, n), (xd, n), (xdd, n), (lam, c), (u, k)):
                if not (type(a) is np.ndarray and a.shape == (size,) and a.dtype == np.float64):
                    return None
        try:        # ValueError: an argument that is not contiguous (from_buffer)
            buf = raw_terms(x, xd, xdd, lam, u, p)
            Cv = raw_C(x, u, p) if (check and raw_C is not None) else empty
            bv = raw_b(x, u, p) if (check and raw_b is not None) else None
            A = np.empty((ns, ns))
            B = np.empty((ns, k))
            fn, _, work_arg = cur[0]
            try:
                c_W, c_piv = local.work
            except AttributeError:      # first call in this thread: its own work arrays
                W, piv = np.empty(nwork), np.empty(n + 1, dtype=np.int64)
                local.work = c_W, c_piv = fb(dbl, W), fb(i64, piv)
                local.keep = (W, piv)
            flags = fn(c_on if check else c_off, c_ix, fb(dbl, buf), c_offs, fb(dbl, Cv),
                       null if bv is None else fb(dbl, bv), fb(dbl, x), fb(dbl, xd), fb(dbl, xdd),
                       fb(dbl, lam), tol, cond_max, atol_u, fb(dbl, A), fb(dbl, B),
                       c_W if work_arg is None else work_arg, nwork, c_piv)
        except (FloatingPointFlags, ValueError):
            return None
        if flags:
            return None
        if not cur[1]:
            count(1)
        return A, B, buf

    raw_terms_n = ck.raw_many["linearization_terms"]
    # the N-point kernel called directly (cbackend.CKernels: N, then argument, row stride pairs,
    # then the output) when its arguments are those of the raw call
    direct = list(spec["args"]) == ["x", "xd", "xdd", "lam", "u", "p"]
    # the blocked (vectorized) N-point entry when the processor runs it: the same numbers
    kern_name = ("nhc_linearization_terms_b" if (getattr(ck, "simd", False) and spec.get("block"))
                 else "nhc_linearization_terms_n")
    kern_n = getattr(ck._lib, kern_name)
    kfb, kdbl = ck._ffi.from_buffer, ck._ffi.typeof("double[]")
    raw_C_n = ck.raw_many.get("C") if m else None
    raw_b_n = ck.raw_many.get("b") if getattr(cm, "affine_names", ()) else None
    size = int(spec["size"])
    sizeC = int(ck.layout["functions"]["C"]["size"]) if raw_C_n is not None else 0
    sizeb = int(ck.layout["functions"]["b"]["size"]) if raw_b_n is not None else 0
    u0row = np.zeros((1, k))
    p0row = p0[None]
    empty2 = np.zeros((1, 1))
    contiguous = np.ascontiguousarray

    def run_n(x: np.ndarray, xd: np.ndarray, xdd: np.ndarray, lam: np.ndarray, u: Any, p: Any,
              check: bool, tol: float, cond_max: float) -> tuple | None:
        """``N`` stacked points (``x (N, n)`` …, ``u (N, k)`` or None, ``p`` None, ``(P,)`` or
        ``(N, P)``) in blocks of `BLOCK` points: ``(A (N, ns, ns), B (N, ns, k), buffer of the
        first point)`` or None."""
        N = x.shape[0]
        if p is None:
            p = p0row
        elif type(p) is np.ndarray and p.dtype == np.float64 and p.shape == (psize,):
            p = p[None]
        elif not (type(p) is np.ndarray and p.dtype == np.float64 and p.shape == (N, psize)):
            return None
        for a, size_ in ((x, n), (xd, n), (xdd, n), (lam, c)):
            if not (type(a) is np.ndarray and a.shape == (N, size_) and a.dtype == np.float64):
                return None
        if u is not None and not (type(u) is np.ndarray and u.shape == (N, k)):
            return None
        fn_n = cur[0][1]
        A = np.empty((N, ns, ns))
        B = np.empty((N, ns, k))
        W = np.empty(nwork)
        piv = np.empty(n + 1, dtype=np.int64)
        c_W, c_piv = fb(dbl, W), fb(i64, piv)
        first = None
        # one zeroed kernel buffer for all blocks: the kernel writes the same entries (its
        # structural non-zeros) at every point, the others stay zero (a fresh 1 MB buffer per
        # block cost its zeroing and page faults)
        kbuf = np.zeros((min(N, BLOCK), size))
        c_kbuf = kfb(kdbl, kbuf)
        for s in range(0, N, BLOCK):
            e = min(N, s + BLOCK)
            nb = e - s
            xs, xds, xdds = contiguous(x[s:e]), contiguous(xd[s:e]), contiguous(xdd[s:e])
            lams = contiguous(lam[s:e])
            us = u0row if u is None else contiguous(u[s:e], dtype=np.float64)
            ps = p if p.shape[0] == 1 else contiguous(p[s:e])
            try:
                if nb and not direct:
                    kbuf[:nb] = raw_terms_n(xs, xds, xdds, lams, us, ps, nb)
                elif nb:
                    rows = (xs, xds, xdds, lams, us, ps)
                    strided = [v for a in rows for v in (kfb(kdbl, a), a.shape[1] if a.shape[0] > 1 else 0)]
                    if kern_n(nb, *strided, c_kbuf):
                        raise MemoryError("the C kernel could not allocate its work array")
                buf = kbuf[:nb]
                Cv = raw_C_n(xs, us, ps, nb) if (check and raw_C_n is not None) else empty2
                bv = raw_b_n(xs, us, ps, nb) if (check and raw_b_n is not None) else None
            except MemoryError:
                return None
            if not np.isfinite(buf).all():       # outside the model's domain: the general
                return None                      # path names the point
            flags = fn_n(nb, c_on if check else c_off, c_ix, fb(dbl, buf), size, c_offs,
                         fb(dbl, Cv), sizeC if Cv is not empty2 else 0,
                         null if bv is None else fb(dbl, bv), sizeb, fb(dbl, xs), fb(dbl, xds),
                         fb(dbl, xdds), n, fb(dbl, lams), c, tol, cond_max, atol_u,
                         fb(dbl, A[s:e]), fb(dbl, B[s:e]), c_W, nwork, c_piv)
            if flags:
                return None
            if first is None:
                first = buf[0].copy()
        if not cur[1]:
            count(N)
        return A, B, first

    run.__dict__["_keep"] = keep
    run.__dict__["nstates"] = ns
    run.__dict__["c"] = c
    run.__dict__["many"] = run_n
    run.__dict__["kernel_n"] = kern_name if direct else "raw_many"
    return run


SPECIALISE_AFTER = 1000
"""Points a compiled one-point function of `linearize` runs with the generic routine before it
builds the routine specialised to its model and partition (`_cspecial`; about 0.1-1.5 s of
compiling, once per model and partition, in a background thread on two cores or more, the
generic routine serving meanwhile: `_cspecial.routine_soon`; the prepared linearizer builds it
after as many calls, or at once when a call is bound with `Linearizer.bind`)."""

BLOCK = 128
"""Points per kernel call of the stacked compiled path (the kernel output of a block, ~0.3 MB for
the bicycle, stays in the cache; see docs/theory/linearization.md, "Stacks in blocks")."""
