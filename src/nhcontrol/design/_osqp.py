"""The LTV-MPC quadratic programme handed to OSQP directly (built once, updated in place).

cvxpy's parameter path re-evaluates its reduction tensors and copies the problem data at every
step; for the small, structured QP of [`nhcontrol.design.LTVMPC`][nhcontrol.design.LTVMPC] that
costs several times
the solve itself. This module writes the same QP in OSQP's standard form

$$
\\min_z \\tfrac12 z^T P z \\quad \\text{s.t.} \\quad l \\le A_c z \\le u,
\\qquad z = (δx_0, …, δx_N, δu_0, …, δu_{N-1}),
$$

once, with a fixed sparsity pattern, and at each step overwrites only the numbers that change:
the entries of ``A_j``, ``B_j`` in ``A_c`` (skipped when unchanged, e.g. for an LTI model, so
OSQP keeps its factorisation), the terminal block of ``P`` when ``Q_f`` changes, and the
bound vectors ``l``, ``u``. OSQP warm-starts from the previous solution.

Rows of ``A_c`` (derived here, the same constraints as the cvxpy formulation):

* ``δx_0 = x_0`` (n rows, ``l = u = x_0``);
* ``A_j δx_j + B_j δu_j − δx_{j+1} = 0``, ``j = 0 … N−1`` (N n rows);
* ``δu_j[i]`` for the input components with a finite bound (two-sided rows);
* ``δu_0[i]`` and ``δu_j[i] − δu_{j−1}[i]`` for the components with a finite rate bound;
* ``δx_j[i]``, ``j = 1 … N``, for the state components with a finite bound (hard bounds);
  with soft bounds instead ``δx_j[i] + s_j[i] ≥ lo`` and ``δx_j[i] − s_j[i] ≤ hi`` with one
  slack ``s_j[i] ≥ 0`` per bounded component and step (its own rows ``s_j[i] ≥ 0``);
* output rows ``C_j[i] δx_j + D_j[i] δu_{min(j, N−1)}``, ``j = 1 … N``, for the output
  components with a finite bound (``set_outputs`` writes ``C_j``, ``D_j``), hard or soft like the
  state rows, with their own slacks (after the state slacks) and penalty.

``P = 2 blkdiag(Q, …, Q, Q_f, R, …, R, ρ₂ I)`` (upper triangle; the non-zero entries of the fixed
``Q``, ``R`` blocks, every entry of the ``Q_f`` block so that it can be replaced), so that ``½ zᵀPz + qᵀz`` is the MPC cost
itself; ``q`` holds ``ρ₁`` for the slacks (the exact L1 penalty) and the linear terms of a
cost about a trajectory that is not the reference (``set_linear``). The dynamics rows take a
constant ``c_j`` (``set_bounds(..., c=...)``: ``δx_{j+1} = A_j δx_j + B_j δu_j + c_j``), the
affine term of a model linearized off its own trajectory (RTI) or a disturbance estimate.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from .._util.errors import DesignError

__all__ = ["OSQP_DEFAULTS", "OSQP_STATUS", "WindowQP"]

OSQP_DEFAULTS: dict[str, Any] = {"eps_abs": 1e-5, "eps_rel": 1e-5, "max_iter": 10000,
                                 "polishing": True, "verbose": False, "warm_starting": True}
"""Settings used unless the caller overrides them: cvxpy's defaults for OSQP (tolerances 1e-5, 10,000
iterations) with solution polishing, so answers match the cvxpy formulation.
"""

OSQP_STATUS: dict[int, str] = {1: "optimal", 2: "optimal_inaccurate", 3: "infeasible",
                               4: "infeasible_inaccurate", 5: "unbounded",
                               6: "unbounded_inaccurate", 7: "user_limit", 8: "user_limit",
                               9: "solver_error", 10: "solver_error", 11: "solver_error"}
"""OSQP (>= 1.0) ``info.status_val`` → the status words cvxpy reports for the same outcome."""


class _Pattern:
    """COO triplets collected block by block, with the slice each block occupies."""

    def __init__(self) -> None:
        self.rows: list[NDArray[np.intp]] = []
        self.cols: list[NDArray[np.intp]] = []
        self.vals: list[NDArray[np.float64]] = []
        self.count = 0

    def add(self, r: NDArray[np.intp], c: NDArray[np.intp], v: NDArray[np.float64]) -> slice:
        self.rows.append(np.asarray(r, np.intp).ravel())
        self.cols.append(np.asarray(c, np.intp).ravel())
        self.vals.append(np.asarray(v, float).ravel())
        start = self.count
        self.count += self.rows[-1].size
        return slice(start, self.count)

    def csc(self, shape: tuple[int, int]) -> tuple[sp.csc_matrix, NDArray[np.float64],
                                                   NDArray[np.intp]]:
        """The CSC matrix, the COO values and ``pos`` with ``csc.data[pos[i]] = coo value i``.

        Explicit zeros stay in the pattern (the values are placed by position, not by a
        conversion that would drop them).
        """
        r, c = np.concatenate(self.rows), np.concatenate(self.cols)
        vals = np.concatenate(self.vals)
        order = np.lexsort((r, c))  # column-major, rows ascending within a column
        if np.any((np.diff(c[order]) == 0) & (np.diff(r[order]) == 0)):  # pragma: no cover
            raise DesignError("internal: duplicate entries in the MPC QP pattern")
        pos = np.empty(order.size, np.intp)
        pos[order] = np.arange(order.size)
        indptr = np.zeros(shape[1] + 1, np.int64)
        np.add.at(indptr, c + 1, 1)
        mat = sp.csc_matrix((vals[order], r[order], np.cumsum(indptr)), shape=shape)
        return mat, vals, pos


class WindowQP:
    """The MPC window QP as an OSQP problem set up once and updated in place.

    Parameters
    ----------
    N, n, k : int
        Horizon, states, inputs.
    Q, R, Qf : ndarray
        Weights (validated by the caller).
    iu, ir, ix : (p,) int arrays
        Input, rate and state components that have at least one finite bound.
    options : mapping
        OSQP settings overriding `OSQP_DEFAULTS`.
    soft : (float, float), optional
        ``(ρ₁, ρ₂)``: make the state bounds soft with the penalty ``ρ₁ s + ρ₂ s²`` per slack.
    iy : (p,) int array, optional
        Output components with at least one finite bound (rows ``C_j[iy] δx_j + D_j[iy] δu``).
    ny_d : bool
        Whether the output rows have a feed-through ``D_j`` (its entries enter the pattern).
    soft_output : (float, float), optional
        ``(ρ₁, ρ₂)`` of soft output bounds (hard when None).
    setup_solver : bool
        Set OSQP up (default); False builds the row layout, ``l``, ``u``, ``q`` and the KKT
        residuals only (`nhcontrol.design._condensed.DenseWindowQP` solves the same QP
        condensed).

    Raises
    ------
    DesignError
        OSQP refuses a setting (unknown name or bad value).
    """

    def __init__(self, N: int, n: int, k: int, Q: NDArray[np.float64], R: NDArray[np.float64],
                 Qf: NDArray[np.float64], iu: NDArray[np.intp], ir: NDArray[np.intp],
                 ix: NDArray[np.intp], options: Mapping[str, Any],
                 soft: tuple[float, float] | None = None, iy: NDArray[np.intp] | None = None,
                 ny_d: bool = False, soft_output: tuple[float, float] | None = None,
                 setup_solver: bool = True) -> None:
        self.N, self.n, self.k = N, n, k
        ns = ix.size if soft is not None else 0
        self.ns = ns
        iy = np.zeros(0, np.intp) if iy is None else np.asarray(iy, np.intp)
        py = iy.size
        nsy = py if soft_output is not None else 0
        self.py, self.nsy = py, nsy
        nx, nz = (N + 1) * n, (N + 1) * n + N * k + N * ns + N * nsy
        self._xu = nx  # first column of the inputs
        self._xs = nx + N * k  # first column of the slacks
        self.nz = nz

        # ---- P: upper triangles of 2Q (N times), 2Qf, 2R (N times) -------------------------
        Pp = _Pattern()
        tri_n, tri_k = np.triu_indices(n), np.triu_indices(k)
        # the stage weights Q, R never change: only their non-zero entries enter the pattern
        # (a diagonal Q adds n entries per stage, not n(n+1)/2 explicit zeros that OSQP would
        # carry through its factorisation and every iteration); the terminal block keeps its
        # full triangle so that set_terminal can write any Q_f
        qn = tuple(t[Q[tri_n] != 0.0] for t in tri_n)
        rk = tuple(t[R[tri_k] != 0.0] for t in tri_k)
        for j in range(N):
            Pp.add(j * n + qn[0], j * n + qn[1], 2.0 * Q[qn])
        self._Pf = Pp.add(N * n + tri_n[0], N * n + tri_n[1], 2.0 * Qf[tri_n])
        self._tri_n = tri_n
        for j in range(N):
            Pp.add(nx + j * k + rk[0], nx + j * k + rk[1], 2.0 * R[rk])
        if ns:
            cs = self._xs + np.arange(N * ns)
            Pp.add(cs, cs, np.full(N * ns, 2.0 * float(soft[1])))
        self._ys = self._xs + N * ns          # first column of the output slacks
        if nsy:
            cs = self._ys + np.arange(N * nsy)
            Pp.add(cs, cs, np.full(N * nsy, 2.0 * float(soft_output[1])))   # type: ignore[index]
        P, self._Pvals, self._Ppos = Pp.csc((nz, nz))
        self.q = np.zeros(nz)
        if ns:
            self.q[self._xs:self._ys] = float(soft[0])
        if nsy:
            self.q[self._ys:] = float(soft_output[0])                        # type: ignore[index]
        self._q_slack = self.q[self._xs:].copy()
        self._Pdata = P.data.copy()

        # ---- A_c ---------------------------------------------------------------------------
        Ap = _Pattern()
        eye_n = np.arange(n)
        Ap.add(eye_n, eye_n, np.ones(n))                                   # δx_0 = x_0
        rr, cc = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        rb, cb = np.meshgrid(np.arange(n), np.arange(k), indexing="ij")
        a_sl, b_sl = [], []
        for j in range(N):
            row0 = n + j * n
            a_sl.append(Ap.add(row0 + rr, j * n + cc, np.zeros(n * n)))   # A_j δx_j
            b_sl.append(Ap.add(row0 + rb, nx + j * k + cb, np.zeros(n * k)))  # B_j δu_j
            Ap.add(row0 + eye_n, (j + 1) * n + eye_n, -np.ones(n))        # − δx_{j+1}
        row = n + N * n
        self._rows_dyn = row
        rows_u = row
        for j in range(N):                                                  # δu_j[iu]
            Ap.add(row + np.arange(iu.size), nx + j * k + iu, np.ones(iu.size))
            row += iu.size
        rows_r = row
        for j in range(N):                                                  # δu_j − δu_{j−1}
            Ap.add(row + np.arange(ir.size), nx + j * k + ir, np.ones(ir.size))
            if j:
                Ap.add(row + np.arange(ir.size), nx + (j - 1) * k + ir, -np.ones(ir.size))
            row += ir.size
        rows_x = row
        if ns:
            # soft: δx_j[ix] + s_j ≥ lo (rows_x …), δx_j[ix] − s_j ≤ hi (rows_x2 …), s ≥ 0
            for j in range(1, N + 1):
                sc = self._xs + (j - 1) * ns + np.arange(ns)
                Ap.add(row + np.arange(ns), j * n + ix, np.ones(ns))
                Ap.add(row + np.arange(ns), sc, np.ones(ns))
                row += ns
            rows_x2 = row
            for j in range(1, N + 1):
                sc = self._xs + (j - 1) * ns + np.arange(ns)
                Ap.add(row + np.arange(ns), j * n + ix, np.ones(ns))
                Ap.add(row + np.arange(ns), sc, -np.ones(ns))
                row += ns
            rows_s = row
            Ap.add(row + np.arange(N * ns), self._xs + np.arange(N * ns), np.ones(N * ns))
            row += N * ns
        else:
            for j in range(1, N + 1):                                       # δx_j[ix]
                Ap.add(row + np.arange(ix.size), j * n + ix, np.ones(ix.size))
                row += ix.size
        # output rows C_j[iy] δx_j + D_j[iy] δu_{min(j, N−1)} (+ s / − s when soft), j = 1 … N
        rows_y = row
        c_sl, d_sl = [], []
        ry, cy = np.meshgrid(np.arange(py), np.arange(n), indexing="ij")
        rdy, cdy = np.meshgrid(np.arange(py), np.arange(k), indexing="ij")
        for side in ((0, 1) if nsy else (0,)):
            for j in range(1, N + 1):
                sl_c = Ap.add(row + ry, j * n + cy, np.zeros(py * n))
                sl_d = (Ap.add(row + rdy, nx + min(j, N - 1) * k + cdy, np.zeros(py * k))
                        if ny_d else None)
                if side == 0:
                    c_sl.append(sl_c)
                    d_sl.append(sl_d)
                else:
                    c_sl[j - 1] = (c_sl[j - 1], sl_c)
                    d_sl[j - 1] = (d_sl[j - 1], sl_d)
                if nsy:
                    sc = self._ys + (j - 1) * nsy + np.arange(nsy)
                    Ap.add(row + np.arange(py), sc, np.full(py, 1.0 if side == 0 else -1.0))
                row += py
        rows_y2 = row
        if nsy:
            Ap.add(row + np.arange(N * nsy), self._ys + np.arange(N * nsy), np.ones(N * nsy))
            row += N * nsy
        A, _, Apos = Ap.csc((row, nz))
        self._Adata = A.data.copy()
        # the same numbers as OSQP's A_c (shares _Adata, updated in place) for KKT residuals
        # (the CSC arrays of A_c are the CSR arrays of A_cᵀ)
        self._At = sp.csr_matrix((self._Adata, A.indices.copy(), A.indptr.copy()),
                                 shape=(A.shape[1], A.shape[0]), copy=False)
        self._At.data = self._Adata
        self._posA = np.concatenate([Apos[s] for s in a_sl])  # (j, r, c) order
        self._posB = np.concatenate([Apos[s] for s in b_sl])
        # positions of C_j (and D_j) in A_c, (j, r, c) order; soft: both row sets per stage
        if py:
            sets = [tuple(Apos[t] for t in ((s,) if not nsy else s)) for s in c_sl]
            self._posC = np.stack([np.concatenate([a.reshape(-1) for a in grp]).reshape(
                len(grp), py * n) for grp in sets])            # (N, sides, py n)
            self._posD = (np.stack([np.concatenate([Apos[t].reshape(-1) for t in (
                (s,) if not nsy else s)]).reshape(-1, py * k) for s in d_sl]) if ny_d else None)
        self._last_CD: NDArray[np.float64] | None = None
        self._rows = {"u": (rows_u, iu), "r": (rows_r, ir), "x": (rows_x, ix), "y": (rows_y, iy)}
        self.l = np.zeros(row)
        self.u = np.zeros(row)
        # (first row, rows per stage) of the stage-wise row blocks, for shift_duals
        segs = [(n, n), (rows_u, iu.size), (rows_r, ir.size)]
        segs += ([(rows_x, ns), (rows_x2, ns), (rows_s, ns)] if ns else [(rows_x, ix.size)])
        segs += ([(rows_y, py), (rows_y + N * py, py), (rows_y2, py)] if nsy else [(rows_y, py)])
        self._segments = [(a, b) for a, b in segs if b]
        if ns:
            self._soft_rows = (rows_x, rows_x2, rows_s)
            self.l[rows_x2:rows_s] = -np.inf
            self.u[rows_x:rows_x2] = np.inf
            self.u[rows_s:rows_y] = np.inf
        if nsy:
            self._soft_rows_y = (rows_y, rows_y + N * py, rows_y2)
            self.l[rows_y + N * py:rows_y2] = -np.inf
            self.u[rows_y:rows_y + N * py] = np.inf
            self.u[rows_y2:] = np.inf
        self._last_AB: NDArray[np.float64] | None = None
        self._pending: dict[str, NDArray[np.float64]] = {}

        if not setup_solver:      # the layout only (the condensed DAQP path solves elsewhere)
            self.solver, self._ext, self._infty = None, None, float("inf")
            return
        import osqp

        settings = dict(OSQP_DEFAULTS)
        settings.update(options)
        self.solver = osqp.OSQP()
        try:
            self.solver.setup(P, self.q, A, self.l, self.u, **settings)
        except (ValueError, TypeError) as exc:
            raise DesignError(f"OSQP refused the solver options {dict(options)!r}: {exc}; see "
                              "https://osqp.org/docs/interfaces/solver_settings.html for the "
                              "setting names and ranges") from exc
        self._ext, self._infty = _extension(self.solver)

    def set_terminal(self, Qf: NDArray[np.float64]) -> None:
        """Replace the terminal weight block of ``P`` (OSQP refactorises)."""
        self._Pdata[self._Ppos[self._Pf]] = 2.0 * Qf[self._tri_n]
        self._pending["Px"] = self._Pdata          # sent with the next solve (one factorisation)

    def set_window(self, A: NDArray[np.float64], B: NDArray[np.float64]) -> None:
        """Write ``A_j``, ``B_j`` into ``A_c`` (no update when they equal the previous ones)."""
        AB = np.concatenate([A.ravel(), B.ravel()])
        if self._last_AB is not None and np.array_equal(AB, self._last_AB):
            return
        self._last_AB = AB
        self._Adata[self._posA] = A.ravel()
        self._Adata[self._posB] = B.ravel()
        self._pending["Ax"] = self._Adata          # sent with the next solve (one factorisation)

    def set_outputs(self, C: NDArray[np.float64], D: NDArray[np.float64] | None) -> None:
        """Write the bounded output rows ``C_j[iy]`` (N, py, n) and ``D_j[iy]`` (N, py, k)
        (``j = 1 … N``) into ``A_c`` (no update when they equal the previous ones)."""
        if not self.py:
            return
        CD = np.concatenate([np.ravel(C), np.ravel(D) if D is not None else []])
        if self._last_CD is not None and np.array_equal(CD, self._last_CD):
            return
        self._last_CD = CD
        Cv = np.asarray(C, dtype=float).reshape(self.N, 1, -1)
        self._Adata[self._posC] = Cv
        if self._posD is not None and D is not None:
            self._Adata[self._posD] = np.asarray(D, dtype=float).reshape(self.N, 1, -1)
        self._pending["Ax"] = self._Adata

    def set_bounds(self, x0: NDArray[np.float64], shifts: Mapping[str, tuple[
            NDArray[np.float64], NDArray[np.float64]]],
            c: NDArray[np.float64] | None = None) -> None:
        """Set ``l``, ``u``: the initial state, the constants ``c_j`` (N, n) of the dynamics
        rows (zero when None) and the shifted bounds ``(lo, hi)`` (N, p) per group ``"u"``,
        ``"r"``, ``"x"``."""
        n, N = self.n, self.N
        self.l[:n] = x0
        self.u[:n] = x0
        if c is None:
            self.l[n:n + N * n] = 0.0
            self.u[n:n + N * n] = 0.0
        else:
            cc = -np.asarray(c, dtype=float).ravel()
            self.l[n:n + N * n] = cc
            self.u[n:n + N * n] = cc
        for key, (lo, hi) in shifts.items():
            start, idx = self._rows[key]
            if idx.size:
                if (key == "x" and self.ns) or (key == "y" and self.nsy):
                    r1, r2, _ = self._soft_rows if key == "x" else self._soft_rows_y
                    self.l[r1:r1 + lo.size] = lo.ravel()
                    self.u[r2:r2 + hi.size] = hi.ravel()
                    continue
                stop = start + lo.size
                self.l[start:stop] = lo.ravel()
                self.u[start:stop] = hi.ravel()
        self._pending["l"], self._pending["u"] = self.l, self.u   # sent with the solve

    def set_linear(self, qx: NDArray[np.float64] | None, qu: NDArray[np.float64] | None) -> None:
        """Linear cost terms ``q_xᵀ δx`` ((N+1, n)) and ``q_uᵀ δu`` ((N, k)); None: zero."""
        nx = self._xu
        q = self.q
        q[:nx] = 0.0 if qx is None else np.asarray(qx, dtype=float).ravel()
        q[nx:self._xs] = 0.0 if qu is None else np.asarray(qu, dtype=float).ravel()
        q[self._xs:] = self._q_slack
        self._pending["q"] = q                     # sent with the solve

    def kkt_at_zero(self, y: NDArray[np.float64]) -> dict[str, float]:
        """KKT residuals of the loaded QP at ``z = 0`` with multipliers ``y`` (OSQP's sign
        convention): stationarity ``‖q + A_cᵀ y‖∞``, primal ``max(dist(0, [l, u]))`` (the
        dynamics rows give ``max |c_j|``), complementarity ``max |y_i| dist(0, active side)``.

        With the QP built about an iterate of a nonlinear programme (RTI/SQP), these are the
        KKT residuals of the discretized nonlinear problem at that iterate."""
        stat = self.q + self._At @ y
        lo, hi = self.l, self.u
        prim = np.maximum(np.maximum(lo, 0.0) - 0.0, 0.0 - np.minimum(hi, 0.0))
        with np.errstate(invalid="ignore"):
            comp = np.where(y > 0, y * np.where(np.isfinite(hi), np.abs(hi), 0.0),
                            -y * np.where(np.isfinite(lo), np.abs(lo), 0.0))
        eq = lo == hi                                    # equality rows: no complementarity
        comp[eq] = 0.0
        return {"stationarity": float(np.max(np.abs(stat), initial=0.0)),
                "primal": float(np.max(prim, initial=0.0)),
                "complementarity": float(np.max(np.abs(comp), initial=0.0))}

    def shift_duals(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        """The multipliers ``y`` of the previous window shifted by one stage (the last stage
        repeated), matching a plan shifted by one sample."""
        out = np.array(y, dtype=float, copy=True)
        N = self.N
        for start, per in self._segments:
            blk = out[start:start + N * per].reshape(N, per)
            blk[:-1] = blk[1:].copy()
        return out

    def warm_start(self, z: NDArray[np.float64], y: NDArray[np.float64] | None = None) -> None:
        """Warm start: primal ``z`` (e.g. the previous plan shifted by one step) and dual ``y``
        (zeros when None), so the iterates do not depend on any solve in between."""
        yy = np.zeros(self.l.size) if y is None else np.asarray(y, dtype=float)
        self.solver.warm_start(x=np.asarray(z, dtype=float), y=yy)

    def solve(self) -> tuple[str, NDArray[np.float64] | None, NDArray[np.float64] | None, float]:
        """Solve; return ``(status, δx (N+1, n), δu (N, k), cost)`` (arrays None on failure).

        The slacks of the last solution (soft bounds) are in `slack` ((N, ns), zeros when
        hard), the multipliers of the dynamics rows in `dyn_duals` ((N, n))."""
        ext = self._ext
        if ext is None:                   # an OSQP without the extension object: its interface
            return self._solve_interface()
        pending = self._pending
        if pending:                       # P and A_c changes in one update: one factorisation
            # what OSQP.update does (bounds clipped to ±OSQP_INFTY, vectors before matrices),
            # without the copies it keeps for its derivatives (not used here)
            q, lo, hi = pending.get("q"), pending.get("l"), pending.get("u")
            if lo is not None:
                lo = np.maximum(lo, -self._infty)
            if hi is not None:
                hi = np.minimum(hi, self._infty)
            if q is not None or lo is not None or hi is not None:
                ext.update_data_vec(q=q, l=lo, u=hi)
            if "Px" in pending or "Ax" in pending:
                ext.update_data_mat(P_x=pending.get("Px"), P_i=None, A_x=pending.get("Ax"),
                                    A_i=None)
            self._pending = {}
        ext.solve()
        info = ext.info
        status = OSQP_STATUS.get(int(info.status_val), "solver_error")
        self.iterations = int(info.iter)
        if status not in ("optimal", "optimal_inaccurate"):
            return status, None, None, float("nan")
        sol = ext.solution
        return self._read(status, sol.x, sol.y, float(info.obj_val))

    def _solve_interface(self) -> tuple[str, NDArray[np.float64] | None,
                                         NDArray[np.float64] | None, float]:
        """`solve` through OSQP's Python interface."""
        if self._pending:
            self.solver.update(**self._pending)
            self._pending = {}
        res = self.solver.solve(raise_error=False)
        status = OSQP_STATUS.get(int(res.info.status_val), "solver_error")
        self.iterations = int(getattr(res.info, "iter", 0))
        if status not in ("optimal", "optimal_inaccurate") or res.x is None:
            return status, None, None, float("nan")
        return self._read(status, res.x, res.y, float(res.info.obj_val))

    def _read(self, status: str, x: Any, y: Any, cost: float) -> tuple[
            str, NDArray[np.float64], NDArray[np.float64], float]:
        """The solution ``(status, δx, δu, cost)`` from OSQP's ``x``, ``y`` (own copies)."""
        z = np.array(x, dtype=float)      # a copy: OSQP reuses its buffers
        nx = self._xu
        self.slack = z[self._xs:self._ys].reshape(self.N, self.ns)
        self.slack_y = z[self._ys:].reshape(self.N, self.nsy)
        n = self.n
        self.y = np.array(y, dtype=float)
        self.dyn_duals = self.y[n:n + self.N * n].reshape(self.N, n)
        self.z = z
        return (status, z[:nx].reshape(self.N + 1, self.n), z[nx:self._xs].reshape(self.N, self.k),
                cost)


def _extension(solver: Any) -> tuple[Any, float]:
    """OSQP's extension object behind ``solver`` (osqp >= 1.0: ``solver._solver`` with
    ``update_data_vec``, ``update_data_mat``, ``solve``, ``info``, ``solution``) and
    ``OSQP_INFTY``, or ``(None, inf)`` (then the Python interface is used)."""
    ext = getattr(solver, "_solver", None)
    if ext is None or not all(hasattr(ext, a) for a in ("update_data_vec", "update_data_mat",
                                                          "solve", "info", "solution")):
        return None, float("inf")
    try:
        infty = float(solver.constant("OSQP_INFTY"))
    except Exception:   # noqa: BLE001 - an interface without it: keep the interface path
        return None, float("inf")
    return ext, infty
