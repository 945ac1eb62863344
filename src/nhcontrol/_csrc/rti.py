"""The C text of the compiled RTI node work (`nhcontrol.design._crti`): its version, flags,
declarations and source, in a module of plain strings that ``setup.py`` reads to compile the
routine library when nhcontrol is installed (`nhcontrol._csrc`)."""

from .point import helpers

STEM = "nhc_rti"
"""First part of the library's file name."""

OPTIMISE = "-O3"
"""The optimisation flag of the library."""

VERSION = "r1"
"""Version of the C routine (part of the library's file name and cache key)."""

CDEF = """
int64_t nhc_rti_work(const int64_t *);
int nhc_expm_zoh(int64_t, int64_t, const double *, double *, double *, int64_t *);
int nhc_rti_nodes(const int64_t *, const int64_t *, const int64_t *, const int64_t *,
                  const int64_t *, const int64_t *, const double *, const double *,
                  const double *, const double *, const double *, double *, double *, double *,
                  double *, double *, double *, double *, double *, int64_t, int64_t *,
                  int64_t *);
extern const char nhc_layout[];
"""

_HEAD = r'''/* The model work of one real-time iteration (nhcontrol/design/_crti.py; the numpy reference
 * is NMPCController._model in nhcontrol/design/nmpc.py).  All matrices row-major.
 *
 * Return value of nhc_rti_nodes: 0, or flags after which the caller runs the numpy path:
 *   1 a kernel failed or gave a value that is not finite   2 a singular block
 *   4 the linearization routine declined (its flags in info[1])   8 the exponential is not
 *   finite   16 the work array is too small;  info[0]: the node. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(_WIN32)
#define NHC_API __declspec(dllexport)
#else
#define NHC_API __attribute__((visibility("default")))
#endif

typedef int (*nhc_kernel3)(const double *, const double *, const double *, double *);
typedef int (*nhc_kernel4)(const double *, const double *, const double *, const double *,
                           double *);
typedef int (*nhc_prepared)(const int64_t *, const int64_t *, const int64_t *, const int64_t *,
                            double *, double *, double *, const double *, const double *,
                            const double *, const double *, const double *, const double *,
                            double, double, double, double *, double *, double *, int64_t,
                            int64_t *);
'''

_BODY = r'''/* finite_all with eight independent sums (NaN for a NaN or inf entry): the single sum of
   finite_all waits on each addition, which made the check of the linearization kernel's ~300
   outputs per node a tenth of the routine */
static int finite_many(const double *a, int64_t len)
{
    double s[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    int64_t i = 0;
    for (; i + 8 <= len; i += 8)
        for (int j = 0; j < 8; j++) s[j] += a[i + j] * 0.0;
    for (; i < len; i++) s[0] += a[i] * 0.0;
    return (s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7]) == 0.0;
}

/* ---------------------------------------------------------------- the ZOH exponential
   An augmented matrix [[P11, P12], [0, c I]] (P11: ns x ns, P12: ns x (nt - ns)) is stored as
   its top rows P = [P11 | P12] (ns x nt) and the scalar c.  Products:
   [[P11, P12], [0, p I]] [[Q11, Q12], [0, q I]] = [[P11 Q11, P11 Q12 + q P12], [0, p q I]]. */

/* C = top rows of P Q (q: Q's bottom scalar); C must not alias P or Q.  One instance per row
   length nt = 2 ... 24 (a compile-time row: its accumulators stay in registers, the loops are
   unrolled and vectorised) and one for any nt; the same operations in the same order. */
#define NHC_TOP_MUL(NT)                                                                      \
static void top_mul_##NT(int64_t ns, const double *P, const double *Q, double q, double *C)  \
{                                                                                            \
    for (int64_t i = 0; i < ns; i++) {                                                       \
        double acc[NT];                                                                      \
        const double *pi = P + i * NT;                                                       \
        for (int j = 0; j < NT; j++) acc[j] = 0.0;                                           \
        for (int64_t r = 0; r < ns; r++) {                                                   \
            const double a = pi[r];                                                          \
            const double *qr = Q + r * NT;                                                   \
            if (a == 0.0) continue;                                                          \
            for (int j = 0; j < NT; j++) acc[j] += a * qr[j];                                \
        }                                                                                    \
        if (q != 0.0)                                                                        \
            for (int64_t j = ns; j < NT; j++) acc[j] += q * pi[j];                           \
        for (int j = 0; j < NT; j++) C[i * NT + j] = acc[j];                                 \
    }                                                                                        \
}
NHC_TOP_MUL(2) NHC_TOP_MUL(3) NHC_TOP_MUL(4) NHC_TOP_MUL(5) NHC_TOP_MUL(6) NHC_TOP_MUL(7)
NHC_TOP_MUL(8) NHC_TOP_MUL(9) NHC_TOP_MUL(10) NHC_TOP_MUL(11) NHC_TOP_MUL(12) NHC_TOP_MUL(13)
NHC_TOP_MUL(14) NHC_TOP_MUL(15) NHC_TOP_MUL(16) NHC_TOP_MUL(17) NHC_TOP_MUL(18) NHC_TOP_MUL(19)
NHC_TOP_MUL(20) NHC_TOP_MUL(21) NHC_TOP_MUL(22) NHC_TOP_MUL(23) NHC_TOP_MUL(24)

static void top_mul_any(int64_t ns, int64_t nt, const double *P, const double *Q, double q,
                        double *C)
{
    for (int64_t i = 0; i < ns; i++) {
        double *c = C + i * nt;
        const double *pi = P + i * nt;
        for (int64_t j = 0; j < nt; j++) c[j] = 0.0;
        for (int64_t r = 0; r < ns; r++) {
            const double a = pi[r];
            const double *qr = Q + r * nt;
            if (a == 0.0) continue;
            for (int64_t j = 0; j < nt; j++) c[j] += a * qr[j];
        }
        if (q != 0.0)
            for (int64_t j = ns; j < nt; j++) c[j] += q * pi[j];
    }
}

static void top_mul(int64_t ns, int64_t nt, const double *P, const double *Q, double q,
                    double *C)
{
    switch (nt) {
#define NHC_CASE(NT) case NT: top_mul_##NT(ns, P, Q, q, C); return;
    NHC_CASE(2) NHC_CASE(3) NHC_CASE(4) NHC_CASE(5) NHC_CASE(6) NHC_CASE(7) NHC_CASE(8)
    NHC_CASE(9) NHC_CASE(10) NHC_CASE(11) NHC_CASE(12) NHC_CASE(13) NHC_CASE(14) NHC_CASE(15)
    NHC_CASE(16) NHC_CASE(17) NHC_CASE(18) NHC_CASE(19) NHC_CASE(20) NHC_CASE(21) NHC_CASE(22)
    NHC_CASE(23) NHC_CASE(24)
#undef NHC_CASE
    default: top_mul_any(ns, nt, P, Q, q, C);
    }
}

/* Pade coefficients b_0 ... b_m of degree m (Higham 2005, Eq. (2.2) and Table 2.3) */
static const double PADE3[] = {120.0, 60.0, 12.0, 1.0};
static const double PADE5[] = {30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0};
static const double PADE7[] = {17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0,
                               56.0, 1.0};
static const double PADE9[] = {17643225600.0, 8821612800.0, 2075673600.0, 302702400.0,
                               30270240.0, 2162160.0, 110880.0, 3960.0, 90.0, 1.0};
static const double PADE13[] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                                1187353796428800.0, 129060195264000.0, 10559470521600.0,
                                670442572800.0, 33522128640.0, 1323241920.0, 40840800.0,
                                960960.0, 16380.0, 182.0, 1.0};
/* theta_m: the largest eta for which the degree-m approximant has a backward error below the
   unit roundoff 2^-53 (Higham 2005, Table 2.3); theta_13 = 4.25 as in Al-Mohy and Higham 2009,
   Algorithm 5.1 */
static const double THETA3 = 1.495585217958292e-2, THETA5 = 2.539398330063230e-1,
                    THETA7 = 9.504178996162932e-1, THETA9 = 2.097847961257068e0,
                    THETA13 = 4.25;

static double norm1(int64_t ns, int64_t nt, const double *P)   /* 1-norm (bottom rows 0) */
{
    double norm = 0.0;
    for (int64_t j = 0; j < nt; j++) {
        double s = 0.0;
        for (int64_t i = 0; i < ns; i++) s += fabs(P[i * nt + j]);
        if (s > norm || s != s) norm = s;
    }
    return norm;
}

/* ell(scale A, m) of Al-Mohy and Higham 2009, Eq. (5.5) (scipy.linalg's _ell): the extra
   squarings that keep the rounding errors of r_m within the bound,
   max(ceil(log2(alpha / u) / (2m)), 0), u = 2^-53, alpha = |c_{2m+1}| || |B|^{2m+1} ||_1 / ||B||_1
   (B = scale A, 1 / |c_{2m+1}| = C(2p, p) (2p + 1)!, p = 2m + 1).  The 1-norm of the
   non-negative |B|^p is computed exactly: the largest entry of 1^T |B|^p (p vector products).
   normA: ||A||_1.  v: 2 nt doubles. */
static int ell(int64_t ns, int64_t nt, const double *A, double scale, double normA, int m,
               double *v)
{
    const double c_recip = m == 3 ? 4487938430976000.0 : m == 5 ? 1.8236839872145106e+28
                         : m == 7 ? 1.275506339396217e+42 : m == 9 ? 7.209685231212166e+56
                         : 2.4719128253168207e+88;
    const int p = 2 * m + 1;
    double *v0 = v, *v1 = v + nt;
    if (!(normA > 0.0)) return 0;
    /* || |B|^p ||_1 <= ||B||_1^p: when that bound already gives 0, so does the exact norm */
    const double bound = pow(scale * normA, p - 1) / c_recip;
    if (isfinite(bound) && bound <= 0x1p-53) return 0;
    double lg = 0.0;                              /* log2 of the factor taken out of v */
    for (int64_t j = 0; j < nt; j++) v0[j] = 1.0;
    for (int it = 0; it < p; it++) {              /* v <- v |B| (rows >= ns of B are 0) */
        for (int64_t j = 0; j < nt; j++) v1[j] = 0.0;
        for (int64_t i = 0; i < ns; i++) {
            const double vi = v0[i] * scale;
            const double *ai = A + i * nt;
            for (int64_t j = 0; j < nt; j++) v1[j] += vi * fabs(ai[j]);
        }
        double big = 0.0;                         /* rescaled: no overflow for any norm */
        for (int64_t j = 0; j < nt; j++) if (v1[j] > big) big = v1[j];
        if (!(big > 0.0) || !isfinite(big)) return 0;
        for (int64_t j = 0; j < nt; j++) v1[j] /= big;
        lg += log2(big);
        double *t = v0; v0 = v1; v1 = t;
    }
    /* log2(alpha) = log2 || |B|^p ||_1 - log2(||B||_1 / |c_{2m+1}|) */
    const double log2_alpha = lg - log2(scale * normA) - log2(c_recip);
    if (!isfinite(log2_alpha)) return 0;
    const double val = ceil((log2_alpha + 53.0) / (2.0 * m));
    return val > 0.0 ? (int)val : 0;
}

static int ceil_log2(double x)                    /* ceil(log2(x)), x > 0, exactly */
{
    int e;
    const double fr = frexp(x, &e);               /* x = fr 2^e, fr in [0.5, 1) */
    return fr == 0.5 ? e - 1 : e;
}

/* exp of the augmented matrix [[Z11, Z12], [0, 0]] given by its top rows Z (ns x nt): the top
   rows E = [exp(Z11) | phi_1(Z11) Z12] (ns x nt; the bottom rows of the exponential are
   [0, I]).  Scaling and squaring with the diagonal Pade approximant r_m, the degree and the
   scaling chosen as in Al-Mohy and Higham 2009, Algorithm 5.1 (scipy.linalg.expm), with the
   estimates of ||A^p||_1 replaced by exact norms of the powers formed and by submultiplicative
   upper bounds of the others (larger eta: never a lower degree than the estimates give):
   d_p = ||A^p||^(1/p);  m = 3 if max(d4, d6) <= ||A^2||^(1/2) <= theta_3, m = 5 if
   max(d4, d6) <= theta_5, m = 7 (9) if max(d6, d8) <= theta_7 (theta_9), each when ell = 0;
   else m = 13 with s = max(ceil(log2(min(eta_3, max(d8, d10)) / theta_13)), 0) + ell.
   Work: 9 ns nt + ns + 2 nt doubles; ms (or NULL): {m, s}.  1 when the result is not
   finite. */
NHC_API int nhc_expm_zoh(int64_t ns, int64_t nt, const double *Z, double *E, double *W,
                         int64_t *ms)
{
    const int64_t sz = ns * nt;
    double *A = W, *A2 = W + sz, *A4 = W + 2 * sz, *A6 = W + 3 * sz, *T1 = W + 4 * sz,
           *T2 = W + 5 * sz, *U = W + 6 * sz, *V = W + 7 * sz, *Q = W + 8 * sz;
    int64_t *piv = (int64_t *)(W + 9 * sz);
    double *v = W + 9 * sz + ns;
    const double nA = norm1(ns, nt, Z);
    if (!isfinite(nA)) return 1;
    memcpy(A, Z, (size_t)sz * sizeof(double));
    top_mul(ns, nt, A, A, 0.0, A2);
    const double nA2 = norm1(ns, nt, A2);
    int m, sq = 0;
    if (sqrt(nA2) <= THETA3 && ell(ns, nt, Z, 1.0, nA, 3, v) == 0) m = 3;
    else {
        top_mul(ns, nt, A2, A2, 0.0, A4);
        const double nA4 = norm1(ns, nt, A4);
        /* max(d4, d6) <= theta_5 without roots: d4 <= t <=> ||A^4|| <= t^4 (and so on) */
        if (nA4 <= THETA5 * THETA5 * THETA5 * THETA5
                && nA4 * nA2 <= THETA5 * THETA5 * THETA5 * THETA5 * THETA5 * THETA5
                && ell(ns, nt, Z, 1.0, nA, 5, v) == 0) m = 5;
        else {
            top_mul(ns, nt, A4, A2, 0.0, A6);
            const double nA6 = norm1(ns, nt, A6);
            const double d8b = pow(fmin(nA4 * nA4, nA6 * nA2), 0.125);
            const double d6 = pow(nA6, 1.0 / 6.0);
            const double eta3 = fmax(d6, d8b);
            if (eta3 <= THETA7 && ell(ns, nt, Z, 1.0, nA, 7, v) == 0) m = 7;
            else if (eta3 <= THETA9 && ell(ns, nt, Z, 1.0, nA, 9, v) == 0) m = 9;
            else {
                const double d10b = pow(fmin(nA4 * nA6, nA2 * nA4 * nA4), 0.1);
                const double eta5 = fmin(eta3, fmax(d8b, d10b));
                m = 13;
                sq = eta5 > 0.0 ? ceil_log2(eta5 / THETA13) : 0;
                if (sq < 0) sq = 0;
                sq += ell(ns, nt, Z, ldexp(1.0, -sq), nA, 13, v);
                if (sq) {                         /* exact: powers of two */
                    const double s1 = ldexp(1.0, -sq), s2 = ldexp(1.0, -2 * sq);
                    const double s4 = ldexp(1.0, -4 * sq), s6 = ldexp(1.0, -6 * sq);
                    for (int64_t i = 0; i < sz; i++) {
                        A[i] *= s1; A2[i] *= s2; A4[i] *= s4; A6[i] *= s6;
                    }
                }
            }
        }
    }
    if (ms) { ms[0] = m; ms[1] = sq; }
    const double *b = m == 3 ? PADE3 : m == 5 ? PADE5 : m == 7 ? PADE7 : m == 9 ? PADE9 : PADE13;
    /* T1 = the odd part's factor sum_i b_{2i+1} A^{2i} (its bottom scalar b_1), V the even
       part sum_i b_{2i} A^{2i} (bottom scalar b_0); the identity's top rows are [I | 0] */
    if (m <= 9) {
        const double *P[5] = {0, A2, A4, A6, 0};
        if (m == 9) { top_mul(ns, nt, A4, A4, 0.0, T2); P[4] = T2; }   /* A^8 */
        const int64_t hm = m / 2;                 /* powers A^2 ... A^{m-1} */
        for (int64_t i = 0; i < sz; i++) {
            double t = 0.0, w = 0.0;
            for (int64_t q = hm; q >= 1; q--) {
                t += b[2 * q + 1] * P[q][i];
                w += b[2 * q] * P[q][i];
            }
            T1[i] = t;
            V[i] = w;
        }
    } else {
        for (int64_t i = 0; i < sz; i++) {
            T1[i] = b[13] * A6[i] + b[11] * A4[i] + b[9] * A2[i];
            T2[i] = b[12] * A6[i] + b[10] * A4[i] + b[8] * A2[i];
        }
        top_mul(ns, nt, A6, T1, 0.0, U);         /* A6 (b13 A6 + b11 A4 + b9 A2) */
        top_mul(ns, nt, A6, T2, 0.0, V);         /* A6 (b12 A6 + b10 A4 + b8 A2) */
        for (int64_t i = 0; i < sz; i++) {
            T1[i] = U[i] + b[7] * A6[i] + b[5] * A4[i] + b[3] * A2[i];
            V[i] += b[6] * A6[i] + b[4] * A4[i] + b[2] * A2[i];
        }
    }
    for (int64_t i = 0; i < ns; i++) { T1[i * nt + i] += b[1]; V[i * nt + i] += b[0]; }
    top_mul(ns, nt, A, T1, b[1], U);             /* U = A T1 (bottom scalar 0) */
    /* (V - U) X = V + U: with the bottom scalars b_0 of both, X = [[X11, X12], [0, I]] and
       (V11 - U11) [X11 | X12] = [V11 + U11 | 2 U12] (derived in docs/theory/nmpc.md) */
    for (int64_t i = 0; i < ns; i++)
        for (int64_t j = 0; j < ns; j++) Q[i * ns + j] = V[i * nt + j] - U[i * nt + j];
    for (int64_t i = 0; i < ns; i++) {
        for (int64_t j = 0; j < ns; j++) E[i * nt + j] = V[i * nt + j] + U[i * nt + j];
        for (int64_t j = ns; j < nt; j++) E[i * nt + j] = 2.0 * U[i * nt + j];
    }
    if (lu(Q, ns, piv)) return 1;
    lu_solve(Q, ns, piv, E, nt, nt);
    for (int k = 0; k < sq; k++) {               /* squaring: [[E11, E12], [0, I]]^2 */
        double *src = (k % 2 == 0) ? E : T1, *dst = (k % 2 == 0) ? T1 : E;
        top_mul(ns, nt, src, src, 1.0, dst);
    }
    if (sq % 2 == 1) memcpy(E, T1, (size_t)sz * sizeof(double));
    return finite_many(E, sz) ? 0 : 1;
}

/* rd = {N, n, c (= l: the constraint rows), k, na (= n - c), nad, ns, size of D's kernel
   output, size of dynamics_terms' output, size of linearization_terms' output, offsets of
   M, Q, D, Qd in dynamics_terms' output, work of the linearization routine} */
enum { R_N, R_n, R_c, R_k, R_na, R_nad, R_ns, R_sD, R_sDyn, R_sLin, R_oM, R_oQ, R_oD, R_oQd,
       R_nWlin, R_COUNT };

NHC_API int64_t nhc_rti_work(const int64_t *rd)
{
    const int64_t n = rd[R_n], c = rd[R_c], ns = rd[R_ns], nt = ns + rd[R_k] + 1;
    const int64_t nK = n + c;
    return rd[R_sD] + rd[R_sDyn] + rd[R_sLin] + 2 + c * c + c + nK * nK + nK
           + 2 * ns * nt + 9 * ns * nt + ns + 2 * nt + rd[R_nWlin] + 8;
}

/* fp = {linearization_terms, 0, 0, specialised prepared routine (0: none), generic prepared
   routine, D, dynamics_terms}: addresses; ix = {ai (na), ad (nad)}; dims, ixl, off: the
   linearization routine's arrays (check off); sc = {h, tol, cond_max, atol_u}.
   X (N, ns), xg (N, n), U (N, k), p; outputs x, xd, xdd (N, n), lam (N, c), Phi (N, ns, ns),
   Gam (N, ns, k), F (N, ns).  ipiv: max(n + c, n + 1) integers. */
NHC_API int nhc_rti_nodes(const int64_t *rd, const int64_t *fp, const int64_t *ix,
                          const int64_t *dims, const int64_t *ixl, const int64_t *off,
                          const double *X, const double *xg, const double *U, const double *p,
                          const double *sc, double *x, double *xd, double *xdd, double *lam,
                          double *Phi, double *Gam, double *F, double *W, int64_t nW,
                          int64_t *ipiv, int64_t *info)
{
    const int64_t N = rd[R_N], n = rd[R_n], c = rd[R_c], k = rd[R_k], na = rd[R_na];
    const int64_t nad = rd[R_nad], ns = rd[R_ns], nt = ns + k + 1, nK = n + c;
    const int64_t *ai = ix, *ad = ix + na;
    const double h = sc[0], tol = sc[1], cond_max = sc[2], atol_u = sc[3];
    if (nW < nhc_rti_work(rd)) return 16;
    double *Dv = W, *Tdyn = Dv + rd[R_sD], *Tlin = Tdyn + rd[R_sDyn];
    double *dummy = Tlin + rd[R_sLin], *S = dummy + 2, *rhs = S + c * c, *K = rhs + c;
    double *sol = K + nK * nK, *Z = sol + nK, *E = Z + ns * nt, *We = E + ns * nt;
    double *Wlin = We + 9 * ns * nt + ns + 2 * nt;         /* the linearization routine's work */
    /* the kernels write their structural non-zeros only: the buffers are zeroed once */
    memset(W, 0, (size_t)(rd[R_sD] + rd[R_sDyn] + rd[R_sLin]) * sizeof(double));
    nhc_kernel3 kD = (nhc_kernel3)(intptr_t)fp[5];
    nhc_kernel4 kDyn = (nhc_kernel4)(intptr_t)fp[6];
    nhc_prepared lin = fp[3] ? (nhc_prepared)(intptr_t)fp[3] : (nhc_prepared)(intptr_t)fp[4];
    /* phase by phase over the nodes (each kernel's code stays in the instruction cache) */
    for (int64_t j = 0; j < N; j++) {    /* 1. the admissible nodes */
        double *xj = x + j * n, *xdj = xd + j * n;
        const double *Xj = X + j * ns, *uj = U + j * k;
        info[0] = j;
        memcpy(xj, xg + j * n, (size_t)n * sizeof(double));
        for (int64_t i = 0; i < na; i++) xj[ai[i]] = Xj[i];
        for (int64_t i = 0; i < nad; i++) xj[ad[i]] = Xj[2 * na + i];
        for (int64_t i = 0; i < n; i++) xdj[i] = 0.0;
        for (int64_t i = 0; i < na; i++) xdj[ai[i]] = Xj[na + i];
        if (c) {                 /* D[:, ad] xd_ad = -D[:, ai] xd_ai  (Eq. (2.76)) */
            int rc = kD(xj, uj, p, Dv);
            if (rc || !finite_many(Dv, c * n)) return 1;
            for (int64_t r = 0; r < c; r++) {
                double s = 0.0;
                for (int64_t i = 0; i < na; i++) s += Dv[r * n + ai[i]] * xdj[ai[i]];
                rhs[r] = -s;
                for (int64_t i = 0; i < c; i++) S[r * c + i] = Dv[r * n + ad[i]];
            }
            if (lu(S, c, ipiv)) return 2;
            lu_solve(S, c, ipiv, rhs, 1, 1);
            for (int64_t i = 0; i < c; i++) xdj[ad[i]] = rhs[i];
        }
    }
    for (int64_t j = 0; j < N; j++) {    /* 2. [[M, D^T], [D, 0]] [xdd; lam] = [Q; Qd] */
        double *xj = x + j * n, *xdj = xd + j * n, *xddj = xdd + j * n, *lamj = lam + j * c;
        const double *uj = U + j * k;
        info[0] = j;
        int rc = kDyn(xj, xdj, uj, p, Tdyn);
        if (rc || !finite_many(Tdyn, rd[R_sDyn])) return 1;
        const double *M = Tdyn + rd[R_oM], *Qv = Tdyn + rd[R_oQ];
        const double *Dd = Tdyn + rd[R_oD], *Qd = Tdyn + rd[R_oQd];
        for (int64_t r = 0; r < n; r++) {
            for (int64_t i = 0; i < n; i++) K[r * nK + i] = M[r * n + i];
            for (int64_t i = 0; i < c; i++) K[r * nK + n + i] = Dd[i * n + r];
            sol[r] = Qv[r];
        }
        for (int64_t r = 0; r < c; r++) {
            for (int64_t i = 0; i < n; i++) K[(n + r) * nK + i] = Dd[r * n + i];
            for (int64_t i = 0; i < c; i++) K[(n + r) * nK + n + i] = 0.0;
            sol[n + r] = Qd[r];
        }
        if (lu(K, nK, ipiv)) return 2;
        lu_solve(K, nK, ipiv, sol, 1, 1);
        for (int64_t i = 0; i < n; i++) xddj[i] = sol[i];
        for (int64_t i = 0; i < c; i++) lamj[i] = sol[n + i];
        if (!finite_many(sol, nK)) return 1;
    }
    for (int64_t j = 0; j < N; j++) {    /* 3. the exact linearization: A, B into Phi_j, Gam_j */
        double *xj = x + j * n, *xdj = xd + j * n, *xddj = xdd + j * n, *lamj = lam + j * c;
        const double *uj = U + j * k;
        info[0] = j;
        int rc = lin(fp, dims, ixl, off, Tlin, dummy, dummy, xj, xdj, xddj, lamj, uj, p, tol,
                     cond_max, atol_u, Phi + j * ns * ns, Gam + j * ns * k, fp[3] ? 0 : Wlin,
                     rd[R_nWlin], ipiv);
        if (rc) { info[1] = rc; return 4; }
        if (!finite_many(Tlin, rd[R_sLin])) return 1;
    }
    for (int64_t j = 0; j < N; j++) {    /* 4. exp(h [A, B, f; 0]), f = [xd_ai, xdd_ai, xd_ad] */
        double *Aj = Phi + j * ns * ns, *Bj = Gam + j * ns * k;
        const double *xdj = xd + j * n, *xddj = xdd + j * n, *Xj = X + j * ns;
        info[0] = j;
        for (int64_t r = 0; r < ns; r++) {
            for (int64_t i = 0; i < ns; i++) Z[r * nt + i] = h * Aj[r * ns + i];
            for (int64_t i = 0; i < k; i++) Z[r * nt + ns + i] = h * Bj[r * k + i];
        }
        for (int64_t i = 0; i < na; i++) {
            Z[i * nt + nt - 1] = h * xdj[ai[i]];
            Z[(na + i) * nt + nt - 1] = h * xddj[ai[i]];
        }
        for (int64_t i = 0; i < nad; i++) Z[(2 * na + i) * nt + nt - 1] = h * xdj[ad[i]];
        if (nhc_expm_zoh(ns, nt, Z, E, We, 0)) return 8;
        for (int64_t r = 0; r < ns; r++) {
            for (int64_t i = 0; i < ns; i++) Aj[r * ns + i] = E[r * nt + i];
            for (int64_t i = 0; i < k; i++) Bj[r * k + i] = E[r * nt + ns + i];
            F[j * ns + r] = Xj[r] + E[r * nt + nt - 1];
        }
    }
    return 0;
}

NHC_API const char nhc_layout[] = NHC_LAYOUT;
'''


def _c_source() -> str:
    return _HEAD + "\n" + helpers() + _BODY


C_SOURCE = _c_source()
"""The routine, with the dense LU and finiteness helpers of the compiled Steps 1-7
(`nhcontrol.linearization._cpoint`; ``NHC_LAYOUT`` is replaced by the library's layout
string)."""
