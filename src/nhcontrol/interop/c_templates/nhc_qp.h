/* A dense strictly convex QP solver: the dual active-set method of Goldfarb and Idnani,
 * "A numerically stable dual method for solving strictly convex quadratic programs",
 * Mathematical Programming 27 (1983) 1-33, with the Givens updates of the factors J = L^-T Q,
 * R of the active normals (the organisation of their Sect. 4). Written for nhcontrol's C export;
 * licence: that of nhcontrol. No allocation: the caller passes NHC_QP_WORK(n, m) doubles and
 * NHC_QP_IWORK(n, m) ints.
 *
 *     min_z 1/2 z^T H z + g^T z   s.t.   lo_i <= a_i^T z <= hi_i  (i < m; |bound| >= NHC_QP_INF: no side)
 *
 * H (n x n) positive definite (overwritten by its Cholesky factor), A (m x n) row-major.
 * Each iteration adds the most violated side of a row or drops one constraint; an active set
 * never repeats, so the method terminates; max_iter bounds the work. */
#ifndef NHC_QP_H
#define NHC_QP_H

/* a bound of magnitude >= NHC_QP_INF is no bound */
#define NHC_QP_INF 1e300

#define NHC_QP_OPTIMAL 0
#define NHC_QP_INFEASIBLE 1
#define NHC_QP_MAX_ITER 2
#define NHC_QP_NOT_CONVEX 3

#define NHC_QP_WORK(n, m) (2 * (n) * (n) + 5 * (n) + 1)
#define NHC_QP_IWORK(n, m) ((n) + 3 * (m) + 1)

/* returns one of NHC_QP_*; z (n) the solution (the last iterate otherwise); *iters the
 * iterations (constraint additions and drops) used */
int nhc_qp_solve(int n, int m, double *H, const double *g, const double *A, const double *lo,
                 const double *hi, double *z, int max_iter, double tol, int *iters,
                 double *work, int *iwork);

#endif
