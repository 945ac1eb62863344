"""The index-1 equations of motion with Baumgarte stabilisation, Eq. (2.119).

$$
\\begin{bmatrix} M & D^T \\\\ D & 0 \\end{bmatrix}
\\begin{bmatrix} \\ddot x \\\\ \\Lambda \\end{bmatrix} =
\\begin{bmatrix} Q \\\\ Q_d - 2\\alpha\\, D\\dot x - \\beta^2 [C; 0] \\end{bmatrix}
$$

with ``D ẋ = [Ċ; C_nh] = Q1`` and ``[C; 0] = Q2`` of Eq. (2.118); ``(α, β)`` are the thesis'
``(β_e, γ_e)``.
"""

from __future__ import annotations


import numpy as np
from numpy.typing import NDArray
from scipy.linalg.lapack import dgesv as _dgesv

from nhcontrol._util.errors import SolverError
from nhcontrol._util.validation import COND_MAX
from nhcontrol.reference._eval import ModelEvaluator
from nhcontrol.reference._linalg import column_rank, format_sv

__all__ = ["Dynamics"]


class Dynamics:
    """Fast single-point and stacked evaluation of Eq. (2.119) for one model and parameters.

    Parameters
    ----------
    ev : ModelEvaluator
    alpha, beta : float
        Baumgarte constants (``β_e``, ``γ_e`` of Eq. (2.118)), in 1/s.
    """

    def __init__(self, ev: ModelEvaluator, alpha: float, beta: float) -> None:
        self.ev = ev
        self.n, self.m, self.l = ev.n, ev.m, ev.l
        self.ml = ev.m + ev.l
        self.alpha, self.beta = float(alpha), float(beta)
        cm, p = ev.cm, ev.p
        self._p = p
        self._M, self._Q, self._D, self._Qd, self._C = cm.M, cm.Q, cm.D, cm.Qd, cm.C
        self._fused = getattr(cm, "dynamics_terms", None)
        # affine constraints D ẋ + b = 0: b enters the Baumgarte term and the drifts
        self._b = cm.b if getattr(cm, "affine_names", ()) else None
        # inputs in the nonholonomic constraints: D ẍ = Qd − E u̇ (E = ∂(B ẋ + b)/∂u)
        self._E = cm.E if getattr(cm, "constraint_inputs", ()) else None
        #: open-loop input rates ``u̇(t)`` of the simulation (``t -> (k,)``), or None
        self.input_rates = None
        s = self.n + self.ml
        self._K = np.zeros((s, s))
        self._r = np.zeros(s)

    # ------------------------------------------------------------------ single point
    def accel(self, t: float, x: NDArray[np.float64], xd: NDArray[np.float64],
              u: NDArray[np.float64] | None,
              ud: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """Solve Eq. (2.119) at one point; returns ``[ẍ; Λ]`` of shape ``(n + m + l,)``.

        ``ud``: input rates ``u̇`` (inputs in the nonholonomic constraints, ``Qd − E u̇``); None
        or zero for held inputs."""
        n, ml, p = self.n, self.ml, self._p
        K, r = self._K, self._r
        if self._fused is not None:                 # one generated function for M, Q, D, Qd
            terms = self._fused(x, xd, u, p)
            K[:n, :n] = terms.M
            r[:n] = terms.Q
            D, Qd = terms.D, terms.Qd
        else:
            K[:n, :n] = self._M(x, u, p)
            r[:n] = self._Q(x, xd, u, p)
            D = self._D(x, u, p) if ml else None
            Qd = self._Qd(x, xd, u, p) if ml else None
        if ml:
            D = np.reshape(D, (ml, n))
            K[:n, n:] = D.T
            K[n:, :n] = D
            vres = D @ xd
            if self._b is not None:
                vres = vres + np.reshape(self._b(x, u, p), (ml,))
            g = np.reshape(Qd, (ml,)) - (2.0 * self.alpha) * vres
            if ud is not None and self._E is not None:
                g = g - np.reshape(self._E(x, xd, u, p), (ml, -1)) @ ud
            if self.m:
                g[: self.m] -= (self.beta ** 2) * np.reshape(self._C(x, u, p), (self.m,))
            r[n:] = g
        _, _, sol, info = _dgesv(K, r)      # LU with partial pivoting (LAPACK), low overhead
        if info != 0:
            self.diagnose(t, x, u)
        if not np.all(np.isfinite(sol)):
            raise SolverError(
                f"non-finite accelerations/multipliers at t = {t:.6g} for model {self.ev.name!r} "
                f"(finite right-hand side: {bool(np.all(np.isfinite(r)))}, inputs u = "
                f"{None if u is None else np.asarray(u).tolist()}); check the inputs and the "
                "parameters, or whether the motion left the model's domain")
        return sol

    # ------------------------------------------------------------------ exact Jacobian
    @property
    def has_jacobian(self) -> bool:
        """True when the model provides the fused ``linearization_terms`` kernel."""
        return callable(getattr(self.ev.cm, "linearization_terms", None))

    def jacobian(self, t: float, x: NDArray[np.float64], xd: NDArray[np.float64],
                 u: NDArray[np.float64] | None,
                 ud: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """Exact Jacobian ``∂f/∂y`` of the first-order form ``y = [x; ẋ]``, ``f = [ẋ; ẍ(x, ẋ)]``.

        Differentiating Eq. (2.119), ``K [ẍ; Λ] = [Q; g]`` with
        ``g = Qd − 2α D ẋ − β² [C; 0]``, at fixed input:

        $$
        K \\frac{∂[ẍ; Λ]}{∂x} = \\begin{bmatrix} ∂Q/∂x − ∂(Mẍ)/∂x − ∂(DᵀΛ)/∂x \\\\
        ∂Qd/∂x − 2α ∂(Dẋ)/∂x − β² [Cx; 0] − ∂(Dẍ)/∂x \\end{bmatrix}, \\quad
        K \\frac{∂[ẍ; Λ]}{∂ẋ} = \\begin{bmatrix} ∂Q/∂ẋ \\\\ ∂Qd/∂ẋ − 2α D \\end{bmatrix},
        $$

        all terms from one call of the generated ``linearization_terms`` kernel (exact symbolic
        derivatives, the same as in the linearization, Eqs. (4.99)-(4.103)). Returns ``(2n, 2n)``.
        """
        n, m, ml, p = self.n, self.m, self.ml, self._p
        sol = self.accel(t, x, xd, u, ud)
        a, lam = sol[:n], sol[n:]
        T = self.ev.cm.linearization_terms(x, xd, a, lam, u, p)
        R = None
        if ud is not None and self._E is not None and np.any(ud):
            R = self.ev.cm.input_rate_terms(x, xd, ud, None, u, p)    # ∂(E u̇)/∂x, ∂(E u̇)/∂ẋ
        top_x = np.asarray(T.dQ_dx) - np.asarray(T.dMa_dx) - np.asarray(T.dDTlam_dx)
        rhs = np.zeros((n + ml, 2 * n))
        rhs[:n, :n] = top_x
        rhs[:n, n:] = np.asarray(T.dQ_dxd)
        if ml:
            D = np.reshape(np.asarray(T.D), (ml, n))
            gx = (np.reshape(np.asarray(T.dQd_dx), (ml, n))
                  - 2.0 * self.alpha * np.reshape(np.asarray(T.dDv_dx), (ml, n))
                  - np.reshape(np.asarray(T.dDa_dx), (ml, n)))
            if m:
                gx[:m] -= self.beta ** 2 * np.reshape(np.asarray(T.Cx), (m, n))
            rhs[n:, :n] = gx
            rhs[n:, n:] = np.reshape(np.asarray(T.dQd_dxd), (ml, n)) - 2.0 * self.alpha * D
            if R is not None:
                rhs[n:, :n] -= np.reshape(np.asarray(R.dEw_dx), (ml, n))
                rhs[n:, n:] -= np.reshape(np.asarray(R.dEw_dxd), (ml, n))
        K = self._assemble(x, u)
        S = np.linalg.solve(K, rhs)
        J = np.zeros((2 * n, 2 * n))
        J[:n, n:] = np.eye(n)
        J[n:, :] = S[:n]
        return J

    # ------------------------------------------------------------------ stacked
    def stacked(self, X: NDArray[np.float64], XD: NDArray[np.float64],
                U: NDArray[np.float64] | None,
                UD: NDArray[np.float64] | None = None) -> dict[str, NDArray[np.float64]]:
        """Evaluate Eq. (2.119) and the drifts at ``N`` stacked points (batched solve)."""
        ev, n, ml, N = self.ev, self.n, self.ml, X.shape[0]
        M = ev.M(X, U)
        Q = ev.Q(X, XD, U)
        D = ev.D(X, U)
        Qd = ev.Qd(X, XD, U, UD)
        C = ev.C(X, U)
        Dxd = np.einsum("nij,nj->ni", D, XD)
        if self._b is not None:                      # residual D ẋ + b of affine constraints
            Dxd = Dxd + ev.b(X, U)
        K = np.zeros((N, n + ml, n + ml))
        K[:, :n, :n] = M
        K[:, :n, n:] = np.transpose(D, (0, 2, 1))
        K[:, n:, :n] = D
        g = Qd - 2.0 * self.alpha * Dxd
        g[:, : self.m] -= self.beta ** 2 * C
        rhs = np.concatenate([Q, g], axis=1)
        sol = np.linalg.solve(K, rhs[..., None])[..., 0]
        sv = np.linalg.svd(K, compute_uv=False)
        cond = sv[:, 0] / np.maximum(sv[:, -1], np.finfo(float).tiny)
        return {
            "xdd": sol[:, :n], "lam": sol[:, n:],
            "C": C, "Dxd": Dxd, "Bxd": Dxd[:, self.m:], "cond": cond,
        }

    # ------------------------------------------------------------------ input jumps
    def project_velocities(self, x: NDArray[np.float64], xd: NDArray[np.float64],
                           u: NDArray[np.float64] | None) -> NDArray[np.float64]:
        """Velocities after a jump of inputs that enter the nonholonomic constraints.

        The impulsive form of Eq. (2.119): the constraint impulse ``Dᵀ μ`` changes the
        momentum, ``M (ẋ⁺ − ẋ⁻) + Dᵀ μ = 0``, and ``ẋ⁺`` satisfies the new velocity constraints
        ``D(x, u⁺) ẋ⁺ + b(x, u⁺) = 0``: the projection of ``ẋ⁻`` onto them closest in the
        kinetic-energy metric (docs/theory/road_vehicles.md, "Inputs in the constraints").
        """
        n, ml, p = self.n, self.ml, self._p
        if not ml:
            return xd
        K = self._assemble(x, u)
        r = np.zeros(n + ml)
        r[:n] = K[:n, :n] @ xd
        if self._b is not None:
            r[n:] = -np.reshape(self._b(x, u, p), (ml,))
        if self.m:
            # holonomic rows keep Ċ = C_x ẋ⁻ (inputs in C are quasi-static)
            r[n:n + self.m] = K[n:n + self.m, :n] @ xd
        return np.linalg.solve(K, r)[:n]

    # ------------------------------------------------------------------ conditioning
    def check_conditioning(self, t: float, x: NDArray[np.float64],
                           u: NDArray[np.float64] | None) -> float:
        """Condition number of the saddle-point matrix at ``x``; raises if above ``COND_MAX``."""
        K = self._assemble(x, u)
        s = np.linalg.svd(K, compute_uv=False)
        cond = float(s[0] / s[-1]) if s[-1] > 0 else float("inf")
        if not cond < COND_MAX:
            self.diagnose(t, x, u, cond=cond, sv=s)
        return cond

    def _assemble(self, x: NDArray[np.float64], u: NDArray[np.float64] | None) -> NDArray:
        n, ml, p = self.n, self.ml, self._p
        K = np.zeros((n + ml, n + ml))
        K[:n, :n] = self._M(x, u, p)
        if ml:
            D = np.reshape(self._D(x, u, p), (ml, n))
            K[:n, n:] = D.T
            K[n:, :n] = D
        return K

    def diagnose(self, t: float, x: NDArray[np.float64], u: NDArray[np.float64] | None,
                 cond: float | None = None, sv: NDArray | None = None) -> None:
        """Raise `SolverError` explaining why the saddle-point matrix is singular."""
        ev, n, ml = self.ev, self.n, self.ml
        K = self._assemble(x, u)
        if sv is None:
            sv = np.linalg.svd(K, compute_uv=False)
        if cond is None:
            cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else float("inf")
        head = (f"the saddle-point matrix [[M, Dᵀ], [D, 0]] of Eq. (2.119) of model {ev.name!r} is "
                f"singular at t = {t:.6g} (cond = {cond:.3g} >= {COND_MAX:.0e}, singular values "
                f"{format_sv(sv[::-1])} smallest first)")
        if ml:
            D = K[n:, :n]
            rk = column_rank(D.T, ev.constraints)
            if rk.rank < ml:
                raise SolverError(
                    f"{head}: the constraints are redundant, rank D = {rk.rank} < m + l = {ml} "
                    f"(singular values of D {format_sv(rk.singular_values)}, tol {rk.tol:.3g}); "
                    f"redundant constraints: {list(rk.redundant)}. Remove them from the model "
                    "(or choose independent ones); the multipliers of redundant constraints are "
                    "not determined.")
            # D of full rank: M must be positive definite on the null space of D
            _, s_D, Vh = np.linalg.svd(D)
            T = Vh[rk.rank:].T
        else:
            T = np.eye(n)
        Mr = T.T @ K[:n, :n] @ T
        s_M = np.linalg.svd(Mr, compute_uv=False) if Mr.size else np.zeros(0)
        raise SolverError(
            f"{head}: D has full rank, but the mass matrix is singular on the admissible "
            f"motions (null space of D): singular values of Tᵀ M T {format_sv(s_M[::-1])} "
            "smallest first. Check the masses and inertias (a coordinate without inertia) and "
            "the parameters p.")
