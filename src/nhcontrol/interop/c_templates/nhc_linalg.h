/* Small dense linear algebra for the exported controllers and estimators (row-major, no
 * allocation). Part of nhcontrol's C export; model independent. Licence: that of nhcontrol. */
#ifndef NHC_LINALG_H
#define NHC_LINALG_H

/* C (r x c) = A (r x m) B (m x c); C must not alias A or B */
void nhc_mm(const double *A, const double *B, double *C, int r, int m, int c);
/* C (r x c) = A^T B with A (m x r), B (m x c) */
void nhc_mtm(const double *A, const double *B, double *C, int r, int m, int c);
/* C (r x c) = A B^T with A (r x m), B (c x m) */
void nhc_mmt(const double *A, const double *B, double *C, int r, int m, int c);
/* y (r) = A (r x c) x */
void nhc_mv(const double *A, const double *x, double *y, int r, int c);
/* LU with partial pivoting in place (n x n); 0 or 1 when singular */
int nhc_lu(double *A, int n, int *piv);
/* solve with the LU factors for nrhs right-hand sides stored as the columns of B (n x nrhs) */
void nhc_lu_solve(const double *LU, int n, const int *piv, double *B, int nrhs);
/* Cholesky A = L L^T in place (lower triangle holds L, upper triangle zeroed); 0 or 1 */
int nhc_chol(double *A, int n);
/* exp(E) for E (n x n) whose rows r ... n-1 are zero (an augmented matrix [[A, B], [0, 0]]):
 * Et its first r rows (r x n), Ft the first r rows of exp(E) (the others are [0, I]). Scaling
 * 2^-s so that the largest column 1-norm (norm < 0: of E; else the given one, a common scaling
 * for a stack) is <= theta, a Taylor polynomial of the given degree in Horner form, s squarings,
 * all on the structured factors (work: 2 r n doubles) */
void nhc_expm_top(const double *Et, double *Ft, int r, int n, int degree, double theta,
                  double norm, double *work);
/* the largest column 1-norm of the r x n matrix A */
double nhc_norm1_rows(const double *A, int r, int n);
/* 1 when every entry is finite */
int nhc_all_finite(const double *a, int len);

#endif
