"""The C text of the compiled MPC condensing (`nhcontrol.design._ccondense`): its version,
flags, declarations and source, in a module of plain strings (no imports) that ``setup.py``
reads to compile the routine library when nhcontrol is installed (`nhcontrol._csrc`)."""

STEM = "nhc_condense"
"""First part of the library's file name."""

VERSION = "q3"
"""Version of the C routine (part of the library's file name and cache key; ``q3``: the same
routine, rebuilt because a background build had compiled ``q2`` at ``-O2``)."""

OPTIMISE = "-O3"
"""The optimisation flag of the library, built ahead (`prebuild`) or on first use alike."""

CDEF = """
int nhc_condense(const long long *dims, const double *A, const double *B, const double *c,
                 const double *x0, const double *Q, const double *Qf, const double *R,
                 const double *qx, double *M, double *W, double *H, double *g, double *cst);
int nhc_costate(const long long *dims, const double *A, const double *r, double *y);
"""

C_SOURCE = r'''
#include <string.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("unroll-loops")   /* the short column loops (no reassociation: same numbers) */
#endif
#if defined(_WIN32)
#define NHC_API __declspec(dllexport)
#else
#define NHC_API __attribute__((visibility("default")))
#endif

/* dims = {N, n, k, nv, has_c, has_qx}; row-major arrays: A (N, n, n), B (N, n, k), c (N, n),
   x0 (n), Q, Qf (n, n), R (k, k), qx (N+1, n); outputs M (N+1, n, Nk+1), W (N, n, Nk+1)
   (W_l at l-1), H (nv, nv: the leading Nk x Nk block written), g (Nk), cst (1). */
NHC_API int nhc_condense(const long long *dims, const double *A, const double *B,
                         const double *c, const double *x0, const double *Q,
                         const double *Qf, const double *R, const double *qx, double *M,
                         double *W, double *H, double *g, double *cst)
{
    const long long N = dims[0], n = dims[1], k = dims[2], nv = dims[3];
    const int has_c = (int)dims[4], has_qx = (int)dims[5];
    const long long Nk = N * k, C1 = Nk + 1;
    long long j, l, r, q, col, a, b, i;
    memset(M, 0, (size_t)((N + 1) * n * C1) * sizeof(double));
    for (r = 0; r < n; ++r) M[r * C1 + Nk] = x0[r];
    /* forward: M_{j+1} = A_j M_j (columns [0, jk) and Nk) + [B_j in block j | c_j] */
    for (j = 0; j < N; ++j) {
        const double *Aj = A + j * n * n, *Mj = M + j * n * C1;
        double *Mn = M + (j + 1) * n * C1;
        const long long nc = j * k;
        for (r = 0; r < n; ++r) {
            double *row = Mn + r * C1;
            for (q = 0; q < n; ++q) {
                const double arq = Aj[r * n + q];
                const double *src = Mj + q * C1;
                if (arq == 0.0) continue;
                for (col = 0; col < nc; ++col) row[col] += arq * src[col];
                row[Nk] += arq * src[Nk];
            }
            if (has_c) row[Nk] += c[j * n + r];
            for (a = 0; a < k; ++a) row[j * k + a] = B[(j * n + r) * k + a];
        }
    }
    /* backward: W_l = Q_l M_l + 1/2 [0 | qx_l] + A_l^T W_{l+1}, columns [0, lk) and Nk
       (the lower triangle of the Hessian needs no more) */
    memset(W, 0, (size_t)(N * n * C1) * sizeof(double));
    for (l = N; l >= 1; --l) {
        const double *Ql = (l == N) ? Qf : Q, *Ml = M + l * n * C1;
        double *Wl = W + (l - 1) * n * C1;
        const long long nc = l * k;
        for (r = 0; r < n; ++r) {
            double *row = Wl + r * C1;
            for (q = 0; q < n; ++q) {
                const double v = Ql[r * n + q];
                const double *src = Ml + q * C1;
                if (v == 0.0) continue;
                for (col = 0; col < nc; ++col) row[col] += v * src[col];
                row[Nk] += v * src[Nk];
            }
            if (has_qx) row[Nk] += 0.5 * qx[l * n + r];
            if (l < N) {
                const double *Al = A + l * n * n, *Wn = W + l * n * C1;
                for (q = 0; q < n; ++q) {
                    const double v = Al[q * n + r];
                    const double *src = Wn + q * C1;
                    if (v == 0.0) continue;
                    for (col = 0; col < nc; ++col) row[col] += v * src[col];
                    row[Nk] += v * src[Nk];
                }
            }
        }
    }
    /* H block row i = 2 B_i^T W_{i+1} (columns < (i+1)k, mirrored), + 2R; g_i likewise */
    for (i = 0; i < N; ++i) {
        const double *Bi = B + i * n * k, *Wi = W + i * n * C1;
        const long long nc = (i + 1) * k;
        for (a = 0; a < k; ++a) {
            double *hrow = H + (i * k + a) * nv;
            for (col = 0; col < nc; ++col) hrow[col] = 0.0;
            g[i * k + a] = 0.0;
            for (r = 0; r < n; ++r) {
                const double v = 2.0 * Bi[r * k + a];
                const double *src = Wi + r * C1;
                if (v == 0.0) continue;
                for (col = 0; col < nc; ++col) hrow[col] += v * src[col];
                g[i * k + a] += v * src[Nk];
            }
            for (b = 0; b < k; ++b) hrow[i * k + b] += 2.0 * R[a * k + b];
        }
    }
    for (i = 0; i < Nk; ++i)                       /* symmetric: upper from lower */
        for (col = i + 1; col < Nk; ++col) H[i * nv + col] = H[col * nv + i];
    /* cost of the free response */
    {
        double s = 0.0;
        for (j = 0; j <= N; ++j) {
            const double *Qj = (j == N) ? Qf : Q, *xf = M + j * n * C1;
            for (r = 0; r < n; ++r) {
                double t = 0.0;
                for (q = 0; q < n; ++q) t += Qj[r * n + q] * xf[q * C1 + Nk];
                s += xf[r * C1 + Nk] * t;
                if (has_qx) s += qx[j * n + r] * xf[r * C1 + Nk];
            }
        }
        cst[0] = s;
    }
    return 0;
}

/* dims = {N, n}; y_{N-1} = r_{N-1}, y_{j-1} = r_{j-1} + A_j^T y_j (A (N, n, n), r, y (N, n)) */
NHC_API int nhc_costate(const long long *dims, const double *A, const double *r, double *y)
{
    const long long N = dims[0], n = dims[1];
    long long j, a, b;
    for (a = 0; a < n; ++a) y[(N - 1) * n + a] = r[(N - 1) * n + a];
    for (j = N - 1; j >= 1; --j) {
        const double *Aj = A + j * n * n, *yj = y + j * n;
        double *yp = y + (j - 1) * n;
        for (a = 0; a < n; ++a) yp[a] = r[(j - 1) * n + a];
        for (b = 0; b < n; ++b) {
            const double v = yj[b];
            for (a = 0; a < n; ++a) yp[a] += Aj[b * n + a] * v;
        }
    }
    return 0;
}

NHC_API const char nhc_layout[] = NHC_LAYOUT;
'''
"""The routine (``NHC_LAYOUT`` is replaced by the library's layout string)."""
