/* Condensed LTV-MPC quadratic programme (states eliminated, inputs as variables) solved by
 * the dual active-set method of nhc_qp.h. Part of nhcontrol's C export; model independent;
 * licence: that of nhcontrol.
 *
 *   min  sum_{j<N} dx_j^T Q dx_j + du_j^T R du_j + dx_N^T Qf dx_N + qx^T dx + qu^T du
 *   s.t. dx_0 = x0, dx_{j+1} = A_j dx_j + B_j du_j + c_j,
 *        u_min <= u_ref_j + du_j <= u_max,
 *        du_min <= u_j - u_{j-1} <= du_max (u_{-1} = u_prev),
 *        x_min <= x_ref_j + dx_j <= x_max (j = 1 ... N, the components listed in ix;
 *        soft: x_min - s_j <= x_ref_j + dx_j <= x_max + s_j, s_j >= 0, charged
 *        rho1 sum s + rho2 sum s^2, the slacks extra variables after the inputs),
 *        y_min <= y_ref_j + C_j dx_j + D_j du_min(j, N-1) <= y_max (j = 1 ... N, the
 *        components listed in iy; hard or soft like the states, their slacks last),
 *
 * the programme of nhcontrol.design.LTVMPC. With G the prediction matrix of dx in du and w
 * the free response (du = 0), the condensed Hessian is 2 (sum_j G_j^T Q_j G_j + blkdiag R)
 * and the gradient sum_j G_j^T (2 Q_j w_j + qx_j) + qu. */
#ifndef NHC_MPC_H
#define NHC_MPC_H

typedef struct {
    int N, n, k;            /* horizon, states, inputs */
    int nbx;                /* state components with a finite bound (ix) */
    const int *ix;          /* their indices (nbx) */
    int max_iter;           /* QP iteration limit */
    double tol;             /* QP feasibility tolerance (relative) */
    const double *Q, *R;    /* n x n, k x k */
    const double *u_min, *u_max, *du_min, *du_max;   /* k each (+-NHC_QP_INF or beyond: none) */
    const double *x_min, *x_max;                     /* n each (+-NHC_QP_INF or beyond: none) */
    int soft;               /* soft state bounds: x_min - s <= x_ref + dx <= x_max + s, s >= 0 */
    double rho1, rho2;      /* their penalty rho1 sum s + rho2 sum s^2 (the exact L1 penalty) */
    int py, nby;            /* outputs y = y_ref + C_j dx_j + D_j du_min(j, N-1), bounded ones */
    const int *iy;          /* the bounded output components (nby) */
    const double *y_min, *y_max;                     /* py each */
    int softy;              /* soft output bounds, penalty rhoy1 sum s + rhoy2 sum s^2 */
    double rhoy1, rhoy2;
} nhc_mpc_problem;

/* variables: the N k inputs, then with soft state bounds one slack per bounded state
 * component and predicted sample (soft = 1), then with soft output bounds one per bounded
 * output component and predicted sample (softy = 1) */
#define NHC_MPC_NV(N, k, nbx, soft, nby, softy) ((N) * (k) + (soft) * (N) * (nbx) \
    + (softy) * (N) * (nby))
#define NHC_MPC_ROWS(N, n, k, nbx, soft, nby, softy) (2 * (N) * (k) \
    + (N) * (nbx) * (1 + 2 * (soft)) + (N) * (nby) * (1 + 2 * (softy)))
#define NHC_MPC_WORK(N, n, k, nbx, soft, nby, softy) \
    ((((N) + 1) * (n)) * NHC_MPC_NV(N, k, nbx, soft, nby, softy) + 2 * ((N) + 1) * (n) \
    + 3 * NHC_MPC_NV(N, k, nbx, soft, nby, softy) * NHC_MPC_NV(N, k, nbx, soft, nby, softy) \
    + 7 * NHC_MPC_NV(N, k, nbx, soft, nby, softy) + (n) * NHC_MPC_NV(N, k, nbx, soft, nby, softy) \
    + NHC_MPC_ROWS(N, n, k, nbx, soft, nby, softy) * (NHC_MPC_NV(N, k, nbx, soft, nby, softy) + 2) + 1)
#define NHC_MPC_IWORK(N, n, k, nbx, soft, nby, softy) (NHC_MPC_NV(N, k, nbx, soft, nby, softy) \
    + 3 * NHC_MPC_ROWS(N, n, k, nbx, soft, nby, softy) + 1)

/* Solve the window QP. A (N n n), B (N n k), c (N n, or NULL: zero), Qf (n n), x0 (n),
 * qx ((N+1) n or NULL), qu (N k or NULL), u_ref (N k), u_prev (k), x_ref ((N+1) n or NULL:
 * zero; used by the state bounds). Writes du (N k) and dx ((N+1) n, the prediction).
 * Returns NHC_QP_OPTIMAL or another NHC_QP_* status. */
int nhc_mpc_solve(const nhc_mpc_problem *pr, const double *x0, const double *A, const double *B,
                  const double *c, const double *Qf, const double *qx, const double *qu,
                  const double *u_ref, const double *u_prev, const double *x_ref,
                  double *du, double *dx, int *iters, double *work, int *iwork);

/* nhc_mpc_solve with output bounds: Cy (N py n) and Dy (N py k, or NULL) the output matrices of
 * the predicted samples j = 1 ... N, y_ref ((N+1) py, or NULL: zero; rows 1 ... N used) */
int nhc_mpc_solve_y(const nhc_mpc_problem *pr, const double *x0, const double *A, const double *B,
                    const double *c, const double *Qf, const double *qx, const double *qu,
                    const double *u_ref, const double *u_prev, const double *x_ref,
                    const double *Cy, const double *Dy, const double *y_ref,
                    double *du, double *dx, int *iters, double *work, int *iwork);

/* the applied input: u_ref0 + du0 projected onto [u_min, u_max] and the rate bounds about
 * u_prev (where they are compatible), as LTVMPC.step does */
void nhc_mpc_project(const nhc_mpc_problem *pr, const double *u_ref0, const double *du0,
                     const double *u_prev, double *u);

/* the sample index k = round((t - t0) / dt) of a schedule of `steps` samples, or -1 when t is
 * outside it */
int nhc_sample(double t, double t0, double dt, int steps);

/* dx (n) = S (n x 2 nq) [x - r[0:nq]; xd - r[nq:2 nq]]; s: 2 nq doubles of scratch */
void nhc_deviation(const double *S, const double *r, const double *x, const double *xd, int nq,
                   int n, double *s, double *dx);

/* The named fallbacks of a step whose QP failed (nhcontrol.design's _fallback): while the last
 * plan lasts (0 < k - plan_k < N) its input of sample k, clipped to [u_min, u_max] (returns 1,
 * "fallback: shifted plan"); else the LQR u_ref0 - Kg e (Kg: k x n) clipped to the input and
 * rate bounds about u_prev (returns 2, "fallback: lqr"). */
int nhc_mpc_fallback(const nhc_mpc_problem *pr, int has_plan, long plan_k, long k,
                     const double *plan_u, const double *u_ref0, const double *u_prev,
                     const double *Kg, const double *e, int n, double *u);

#endif
