/* Small dense linear algebra for the exported controllers and estimators (row-major, no
 * allocation). Part of nhcontrol's C export; model independent. Licence: that of nhcontrol. */
#include <math.h>
#include "nhc_linalg.h"

void nhc_mm(const double *A, const double *B, double *C, int r, int m, int c)
{
    int i, j, q;
    for (i = 0; i < r; i++) {
        for (j = 0; j < c; j++) C[i * c + j] = 0.0;
        for (q = 0; q < m; q++) {
            const double a = A[i * m + q];
            if (a == 0.0) continue;
            for (j = 0; j < c; j++) C[i * c + j] += a * B[q * c + j];
        }
    }
}

void nhc_mtm(const double *A, const double *B, double *C, int r, int m, int c)
{
    int i, j, q;
    for (i = 0; i < r * c; i++) C[i] = 0.0;
    for (q = 0; q < m; q++) {
        for (i = 0; i < r; i++) {
            const double a = A[q * r + i];
            if (a == 0.0) continue;
            for (j = 0; j < c; j++) C[i * c + j] += a * B[q * c + j];
        }
    }
}

void nhc_mmt(const double *A, const double *B, double *C, int r, int m, int c)
{
    int i, j, q;
    for (i = 0; i < r; i++) {
        for (j = 0; j < c; j++) {
            double s = 0.0;
            for (q = 0; q < m; q++) s += A[i * m + q] * B[j * m + q];
            C[i * c + j] = s;
        }
    }
}

void nhc_mv(const double *A, const double *x, double *y, int r, int c)
{
    int i, j;
    for (i = 0; i < r; i++) {
        double s = 0.0;
        for (j = 0; j < c; j++) s += A[i * c + j] * x[j];
        y[i] = s;
    }
}

int nhc_lu(double *A, int n, int *piv)
{
    int i, j, q;
    for (q = 0; q < n; q++) {
        int p = q;
        double big = fabs(A[q * n + q]);
        for (i = q + 1; i < n; i++) {
            if (fabs(A[i * n + q]) > big) { big = fabs(A[i * n + q]); p = i; }
        }
        piv[q] = p;
        if (!(big > 0.0)) return 1;
        if (p != q) {
            for (j = 0; j < n; j++) {
                const double t = A[q * n + j];
                A[q * n + j] = A[p * n + j];
                A[p * n + j] = t;
            }
        }
        for (i = q + 1; i < n; i++) {
            const double f = A[i * n + q] / A[q * n + q];
            A[i * n + q] = f;
            if (f == 0.0) continue;
            for (j = q + 1; j < n; j++) A[i * n + j] -= f * A[q * n + j];
        }
    }
    return 0;
}

void nhc_lu_solve(const double *LU, int n, const int *piv, double *B, int nrhs)
{
    int i, j, q;
    for (q = 0; q < n; q++) {
        if (piv[q] != q) {
            for (j = 0; j < nrhs; j++) {
                const double t = B[q * nrhs + j];
                B[q * nrhs + j] = B[piv[q] * nrhs + j];
                B[piv[q] * nrhs + j] = t;
            }
        }
    }
    for (i = 0; i < n; i++)
        for (q = 0; q < i; q++) {
            const double f = LU[i * n + q];
            if (f == 0.0) continue;
            for (j = 0; j < nrhs; j++) B[i * nrhs + j] -= f * B[q * nrhs + j];
        }
    for (i = n - 1; i >= 0; i--) {
        for (q = i + 1; q < n; q++) {
            const double f = LU[i * n + q];
            if (f == 0.0) continue;
            for (j = 0; j < nrhs; j++) B[i * nrhs + j] -= f * B[q * nrhs + j];
        }
        for (j = 0; j < nrhs; j++) B[i * nrhs + j] /= LU[i * n + i];
    }
}

int nhc_chol(double *A, int n)
{
    int i, j, q;
    for (j = 0; j < n; j++) {
        double s = A[j * n + j];
        for (q = 0; q < j; q++) s -= A[j * n + q] * A[j * n + q];
        if (!(s > 0.0)) return 1;
        s = sqrt(s);
        A[j * n + j] = s;
        for (i = j + 1; i < n; i++) {
            double t = A[i * n + j];
            for (q = 0; q < j; q++) t -= A[i * n + q] * A[j * n + q];
            A[i * n + j] = t / s;
        }
        for (i = 0; i < j; i++) A[i * n + j] = 0.0;
    }
    return 0;
}

double nhc_norm1_rows(const double *A, int r, int n)
{
    double big = 0.0;
    int i, j;
    for (j = 0; j < n; j++) {
        double s = 0.0;
        for (i = 0; i < r; i++) s += fabs(A[i * n + j]);
        if (s > big) big = s;
    }
    return big;
}

/* T (r x n) = X_top F with F = [[F_top], [0, I]] (X_top, F_top: r x n) */
static void nhc_mul_top(const double *X, const double *F, double *T, int r, int n)
{
    int i, j, q;
    for (i = 0; i < r; i++) {
        for (j = 0; j < n; j++) T[i * n + j] = 0.0;
        for (q = 0; q < r; q++) {
            const double a = X[i * n + q];
            if (a == 0.0) continue;
            for (j = 0; j < n; j++) T[i * n + j] += a * F[q * n + j];
        }
        for (j = r; j < n; j++) T[i * n + j] += X[i * n + j];
    }
}

void nhc_expm_top(const double *Et, double *Ft, int r, int n, int degree, double theta,
                  double norm, double *work)
{
    double *Y = work, *T = work + r * n;
    double nrm = norm < 0.0 ? nhc_norm1_rows(Et, r, n) : norm, scale = 1.0;
    int s = 0, i, j;
    if (nrm > theta) s = (int)ceil(log2(nrm / theta));
    for (i = 0; i < s; i++) scale *= 0.5;
    for (i = 0; i < r * n; i++) Y[i] = Et[i] * scale;
    for (i = 0; i < r * n; i++) Ft[i] = Y[i] / (double)degree;
    for (i = 0; i < r; i++) Ft[i * n + i] += 1.0;
    for (j = degree - 1; j >= 1; j--) {
        nhc_mul_top(Y, Ft, T, r, n);
        for (i = 0; i < r * n; i++) Ft[i] = T[i] / (double)j;
        for (i = 0; i < r; i++) Ft[i * n + i] += 1.0;
    }
    for (j = 0; j < s; j++) {
        nhc_mul_top(Ft, Ft, T, r, n);
        for (i = 0; i < r * n; i++) Ft[i] = T[i];
    }
}

int nhc_all_finite(const double *a, int len)
{
    double s = 0.0;
    int i;
    for (i = 0; i < len; i++) s += a[i] * 0.0;
    return s == 0.0;
}
