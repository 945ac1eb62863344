r"""The LTV-MPC window QP condensed (states eliminated) and solved by DAQP, a dual active-set
solver for small dense QPs.

The sparse QP of [`WindowQP`][nhcontrol.design._osqp.WindowQP] (variables ``δx_0 … δx_N``,
``δu_0 … δu_{N−1}``, slacks) has the states fixed by the dynamics rows
``δx_{j+1} = A_j δx_j + B_j δu_j + c_j``, ``δx_0 = x_0``. Eliminating them (derived here; see
``docs/theory/condensed_qp.md``) leaves a dense QP in ``v = (δu_0 … δu_{N−1}, s, σ)``:

$$
\min_v \tfrac12 v^T H v + g^T v + \text{const} \quad\text{s.t.}\quad
\underline b \le \begin{bmatrix} I \\ A_g \end{bmatrix} v \le \overline b .
$$

**Prediction** (forward, O(N²) blocks): ``M_j = [G_j | x̂_j]`` (n × (Nk+1)) with
``δx_j = G_j U + x̂_j``; ``M_0 = [0 | x_0]``, ``M_{j+1} = A_j M_j + [B_j in block j | c_j]``.

**Hessian and gradient** (backward, O(N²) blocks): ``W_N = Q_f M_N + ½[0 | q_{x,N}]``,
``W_l = Q M_l + ½[0 | q_{x,l}] + A_lᵀ W_{l+1}`` (``l = N−1 … 1``); then the block row ``i`` of
``[H_uu | h]`` is ``2 B_iᵀ W_{i+1}``, ``H_uu += 2 blkdiag(R)``, ``g_u = h + q_u``.

The first ``nv`` entries of the bounds are DAQP's simple bounds on ``v`` (inputs ``δu_j[i]``,
slacks ``≥ 0``); the rows ``A_g`` are, in order, the rate rows, the state rows (hard, or the
two one-sided soft rows) and the output rows (hard or soft), exactly the inequality rows of
`WindowQP` in the same order, so the multipliers map one to one; the multipliers of the
eliminated dynamics rows follow from the backward costate recursion
``y_{l−1} = 2 Q_l δx_l + q_{x,l} + A_lᵀ y_l + E_lᵀ μ_l`` (stationarity in ``δx_l``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

import numpy as np
from numpy.typing import NDArray

from .._util.errors import DesignError
from ._ccondense import as_c
from ._osqp import WindowQP

__all__ = ["CondensedQP", "DAQP_DEFAULTS", "DAQP_STATUS", "DenseWindowQP", "LazyDuals",
           "condensed_qp", "daqp_available"]

DAQP_DEFAULTS: dict[str, Any] = {"primal_tol": 1e-9, "iter_limit": 10000}
"""DAQP settings used unless overridden: a primal tolerance of 1e-9 (DAQP's own 1e-6 would
accept constraint violations of that size) and an iteration limit of 10,000 (bounded work)."""

DAQP_STATUS: dict[int, str] = {1: "optimal", 2: "optimal", -1: "infeasible",
                               -2: "solver_error", -3: "unbounded", -4: "user_limit",
                               -5: "solver_error", -6: "solver_error"}
"""DAQP exit flags → the status words of the OSQP path (2: optimal with soft constraints,
-2 cycling, -5 non-convex, -6 over-determined initial active set)."""

_ACTIVE, _LOWER = 1, 2        # DAQP's constraint-state bits (sense): active, at the lower bound


def daqp_available() -> bool:
    """True when the ``daqp`` package can be imported."""
    try:
        import daqp  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class CondensedQP:
    """The condensed window QP ``min ½ vᵀHv + gᵀv + const``, ``lower ≤ [I; A] v ≤ upper``.

    Attributes
    ----------
    H : (nv, nv) ndarray
        Hessian (symmetric positive definite when ``R ≻ 0`` and ``ρ₂ > 0``).
    g : (nv,) ndarray
        Gradient.
    A : (m, nv) ndarray
        General constraint rows (rates, states, outputs, in `WindowQP`'s order).
    lower, upper : (nv + m,) ndarray
        Bounds: the first ``nv`` on ``v`` itself, then on the rows of ``A`` (``±inf``: none).
    const : float
        Cost of the free response (``v = 0``): the sparse QP's optimal value is
        ``½ vᵀHv + gᵀv + const``.
    M : (N+1, n, Nk+1) ndarray
        Prediction ``δx_j = M_j[:, :Nk] U + M_j[:, Nk]``.
    """

    H: NDArray[np.float64]
    g: NDArray[np.float64]
    A: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    const: float
    M: NDArray[np.float64]


class DenseWindowQP(WindowQP):
    """The window QP of `WindowQP` (same methods, same row layout of the multipliers), solved
    condensed by DAQP.

    Parameters are those of `WindowQP`; ``options`` are DAQP settings overriding
    `DAQP_DEFAULTS`.

    Raises
    ------
    DesignError
        A soft bound with ``ρ₂ = 0`` (singular Hessian; use the OSQP path), or DAQP settings it
        refuses.
    """

    def __init__(self, N: int, n: int, k: int, Q: NDArray[np.float64], R: NDArray[np.float64],
                 Qf: NDArray[np.float64], iu: NDArray[np.intp], ir: NDArray[np.intp],
                 ix: NDArray[np.intp], options: Mapping[str, Any],
                 soft: tuple[float, float] | None = None, iy: NDArray[np.intp] | None = None,
                 ny_d: bool = False, soft_output: tuple[float, float] | None = None) -> None:
        for sf in (soft, soft_output):
            if sf is not None and not sf[1] > 0:
                raise DesignError("the condensed DAQP path needs a positive quadratic slack "
                                  "penalty rho2 (a singular Hessian otherwise); use "
                                  "qp_solver='osqp' or soft penalties (rho1, rho2 > 0)")
        super().__init__(N, n, k, Q, R, Qf, iu, ir, ix, {}, soft=soft, iy=iy, ny_d=ny_d,
                         soft_output=soft_output, setup_solver=False)
        self.Qs, self.Rs, self.Qf = np.array(Q, float), np.array(R, float), np.array(Qf, float)
        self.iu, self.ir, self.ix = (np.asarray(a, np.intp) for a in (iu, ir, ix))
        self.iy = np.zeros(0, np.intp) if iy is None else np.asarray(iy, np.intp)
        self.soft, self.soft_output = soft, soft_output
        settings = dict(DAQP_DEFAULTS)
        settings.update(options)
        import daqp

        known = set(daqp.Model().settings)
        bad = sorted(set(settings) - known)
        if bad:
            raise DesignError(f"unknown DAQP settings {bad} in daqp_options; known: "
                              f"{sorted(known)} (https://darnstrom.github.io/daqp/parameters)")
        try:                            # the values checked once, by DAQP itself
            daqp.Model().settings = settings
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise DesignError(f"DAQP refused the settings {settings!r}: {exc}; see "
                              "https://darnstrom.github.io/daqp/parameters") from exc
        self.settings = settings
        Nk = N * k
        self.nv = Nk + N * self.ns + N * self.nsy
        # constant parts: the rate rows, the slack columns of the soft rows, 2 blkdiag(R), ρ
        nr, nx_, ny = ir.size, ix.size, self.iy.size
        self.m_r = N * nr
        self.m_x = N * nx_ * (2 if self.ns else 1)
        self.m_y = N * ny * (2 if self.nsy else 1)
        m = self.m_r + self.m_x + self.m_y
        self.m = m
        Ag = np.zeros((m, self.nv))
        for j in range(N):
            rr = j * nr + np.arange(nr)
            Ag[rr, j * k + ir] = 1.0
            if j:
                Ag[rr, (j - 1) * k + ir] = -1.0
        if self.ns:
            cols = Nk + np.arange(N * self.ns)
            r0 = self.m_r
            Ag[r0 + np.arange(N * nx_), cols] = 1.0                       # δx + s ≥ lo
            Ag[r0 + N * nx_ + np.arange(N * nx_), cols] = -1.0            # δx − s ≤ hi
        if self.nsy:
            cols = Nk + N * self.ns + np.arange(N * self.nsy)
            r0 = self.m_r + self.m_x
            Ag[r0 + np.arange(N * ny), cols] = 1.0
            Ag[r0 + N * ny + np.arange(N * ny), cols] = -1.0
        self._Ag = Ag
        H0 = np.zeros((self.nv, self.nv))
        g0 = np.zeros(self.nv)
        if self.ns:
            d = Nk + np.arange(N * self.ns)
            H0[d, d] = 2.0 * soft[1]                                       # type: ignore[index]
            g0[d] = soft[0]                                                # type: ignore[index]
        if self.nsy:
            d = Nk + N * self.ns + np.arange(N * self.nsy)
            H0[d, d] = 2.0 * soft_output[1]                                # type: ignore[index]
            g0[d] = soft_output[0]                                         # type: ignore[index]
        self._H0, self._g0 = H0, g0
        self._R2 = np.kron(np.eye(N), 2.0 * self.Rs)
        lo = np.full(self.nv + m, -np.inf)
        hi = np.full(self.nv + m, np.inf)
        lo[Nk:self.nv] = 0.0                                               # slacks ≥ 0
        self._lo0, self._hi0 = lo, hi
        self._ucols = (np.arange(N)[:, None] * k + self.iu[None, :]).ravel()  # δu_j[iu]
        self._A = self._B = None
        self._C = self._D = None
        self._c: NDArray[np.float64] | None = None
        self._x0 = np.zeros(n)
        self._qx: NDArray[np.float64] | None = None
        self._qu: NDArray[np.float64] | None = None
        self._shift: Mapping[str, tuple[NDArray, NDArray]] = {}
        self._sense: NDArray[np.intc] | None = None
        self._layout_stale = False
        self._vectors_stale = False
        self.iterations = 0
        self._Qc, self._Rc = np.ascontiguousarray(self.Qs), np.ascontiguousarray(self.Rs)
        self._zeros_n = np.zeros((N, n))
        self._zeros_qx = np.zeros((N + 1, n))
        self._clib: Any = None
        self._clib_tried = False
        # the QP data of a step, written in place every step (DAQP reads these arrays)
        self._buf = {"H": H0.copy(), "g": g0.copy(), "A": Ag.copy(), "lower": lo.copy(),
                     "upper": hi.copy(), "M": np.empty((N + 1, n, Nk + 1)),
                     "W": np.empty((N, n, Nk + 1)), "cst": np.zeros(1)}
        self._dims = np.array([N, n, k, self.nv, 0, 0], dtype=np.int64)
        self._U1 = np.ones(Nk + 1)
        self._Mflat = self._buf["M"].reshape(-1, Nk + 1)          # (a view: M's rows)
        self._ptrs: dict[str, Any] | None = None
        self._solve_kw = _solve_keywords(daqp, settings)
        self._answer: list[Any] | None = None   # (lam, X, v, A, Qf, qx, C, y): duals on demand

    def _c_library(self, required: bool = False) -> Any:
        """The compiled condensing routines (built on first use), or None (numpy)."""
        if not self._clib_tried:
            from ._ccondense import condense_library

            self._clib, self._clib_tried = condense_library(), True
        if required and self._clib is None:
            raise DesignError("the compiled condensing routine is not available (no C compiler "
                              "or no usable cache directory); use backend='numpy'")
        return self._clib

    # ---- the data of the step (kept as given; written into the sparse layout only for KKT)
    def set_terminal(self, Qf: NDArray[np.float64]) -> None:
        self.Qf = np.array(Qf, dtype=float)

    def set_window(self, A: NDArray[np.float64], B: NDArray[np.float64]) -> None:
        self._A, self._B = A, B
        self._layout_stale = True

    def set_outputs(self, C: NDArray[np.float64], D: NDArray[np.float64] | None) -> None:
        if self.py:
            self._C, self._D = C, D
            self._layout_stale = True

    def set_bounds(self, x0: NDArray[np.float64], shifts: Mapping[str, tuple[
            NDArray[np.float64], NDArray[np.float64]]],
            c: NDArray[np.float64] | None = None) -> None:
        self._vectors_stale = True          # l, u of the sparse layout: written for KKT only
        self._x0 = np.asarray(x0, dtype=float)
        self._c = None if c is None else np.asarray(c, dtype=float).reshape(self.N, self.n)
        self._shift = shifts

    def set_linear(self, qx: NDArray[np.float64] | None, qu: NDArray[np.float64] | None) -> None:
        self._vectors_stale = True
        self._qx = None if qx is None else np.asarray(qx, dtype=float).reshape(self.N + 1, self.n)
        self._qu = None if qu is None else np.asarray(qu, dtype=float).reshape(self.N, self.k)

    def kkt_at_zero(self, y: NDArray[np.float64]) -> dict[str, float]:
        if self._layout_stale:
            WindowQP.set_window(self, self._A, self._B)
            if self.py and self._C is not None:
                WindowQP.set_outputs(self, self._C, self._D)
            self._layout_stale = False
        if self._vectors_stale:
            WindowQP.set_bounds(self, self._x0, self._shift, self._c)
            WindowQP.set_linear(self, self._qx, self._qu)
            self._vectors_stale = False
        self._pending = {}
        return super().kkt_at_zero(y)

    def warm_start(self, z: NDArray[np.float64], y: NDArray[np.float64] | None = None) -> None:
        """Warm start from multipliers ``y`` in `WindowQP`'s row layout (their signs give
        DAQP's initial active set); None: a cold start. The primal ``z`` is not needed (an
        active set determines the iterate)."""
        self._sense = None
        if y is None:
            return
        lam = y.inequality_multipliers() if isinstance(y, LazyDuals) else self._lam_of(
            np.asarray(y, dtype=float))
        if lam.any():                   # (an empty active set is DAQP's cold start)
            self._sense = np.where(lam > 0.0, _ACTIVE, np.where(lam < 0.0, _ACTIVE | _LOWER, 0)
                                   ).astype(np.intc)

    # ---- the condensed QP
    def qp_data(self) -> CondensedQP:
        """The condensed QP of the loaded data (`condensed_qp` on this window)."""
        return condensed_qp(self, self._A, self._B, self._c, self._x0, self.Qf, self._qx,
                            self._qu, self._shift, self._C, self._D)

    def _assemble(self) -> tuple[float, NDArray[np.float64]]:
        """Write this step's condensed QP into the step buffers (``_buf``); ``(const, M)``."""
        buf = self._buf
        lib = self._clib if self._clib_tried else self._c_library()
        if lib is not None:
            ptr = self._ptrs
            fb = lib.ffi.from_buffer
            if ptr is None:
                ptr = {key: fb("double[]", buf[key]) for key in ("M", "W", "H", "g", "cst")}
                ptr.update(dims=fb("long long[]", self._dims), Q=fb("double[]", self._Qc),
                           R=fb("double[]", self._Rc), zn=fb("double[]", self._zeros_n),
                           zq=fb("double[]", self._zeros_qx))
                self._ptrs = ptr
            c, qx = self._c, self._qx
            dims = self._dims
            dims[4], dims[5] = c is not None, qx is not None
            lib.condense(ptr["dims"], fb("double[]", as_c(self._A)), fb("double[]", as_c(self._B)),
                         ptr["zn"] if c is None else fb("double[]", as_c(c)),
                         fb("double[]", as_c(self._x0)), ptr["Q"], fb("double[]", as_c(self.Qf)),
                         ptr["R"], ptr["zq"] if qx is None else fb("double[]", as_c(qx)),
                         ptr["M"], ptr["W"], ptr["H"], ptr["g"], ptr["cst"])
            const = float(buf["cst"][0])
        else:
            const = _condense_numpy(self, self._A, self._B, self._c, self._x0, self.Qf, self._qx,
                                    buf["M"], buf["H"], buf["g"])
        if self._qu is not None:
            buf["g"][:self.N * self.k] += self._qu.ravel()
        np.copyto(buf["lower"], self._lo0)
        np.copyto(buf["upper"], self._hi0)
        _fill_rows(self, buf["M"], self._shift, self._C, self._D, buf["lower"], buf["upper"],
                   buf["A"])
        return const, buf["M"]

    def solve(self) -> tuple[str, NDArray[np.float64] | None, NDArray[np.float64] | None, float]:
        """Condense, solve with DAQP; ``(status, δx (N+1, n), δu (N, k), cost)`` (arrays None
        on failure), with `slack`, `slack_y`, `y` (multipliers in `WindowQP`'s layout, formed
        when first read), `dyn_duals`, `z` as `WindowQP.solve` sets them.

        DAQP is called once per step on the step buffers (``daqp.solve``: the workspace is set
        up for this QP and the unconstrained minimiser is tried first); from the active set of
        `warm_start` when one was given, else from the empty set."""
        import daqp

        const, M = self._assemble()
        buf = self._buf
        sense = self._sense
        self._sense = None
        self._answer = None
        args = (buf["H"], buf["g"], buf["A"], buf["upper"], buf["lower"])
        v, fval, exitflag, info = daqp.solve(*args, sense, **self._solve_kw)
        if exitflag == -6 and sense is not None and np.any(sense):
            # the warm-start active set is linearly dependent: start cold
            v, fval, exitflag, info = daqp.solve(*args, None, **self._solve_kw)
        status = DAQP_STATUS.get(int(exitflag), "solver_error")
        self.iterations = int(info.get("iterations", 0))
        if status != "optimal":
            return status, None, None, float("nan")
        N, n, k = self.N, self.n, self.k
        Nk = N * k
        v = np.asarray(v, dtype=float)
        U = v[:Nk]
        Ue = self._U1                                           # [U; 1]: δx_j = M_j [U; 1]
        Ue[:Nk] = U
        X = np.dot(self._Mflat, Ue).reshape(N + 1, n)
        self.slack = v[Nk:Nk + N * self.ns].reshape(N, self.ns)
        self.slack_y = v[Nk + N * self.ns:].reshape(N, self.nsy)
        # the duals need this step's data: kept (duplicated: the caller may reuse its arrays)
        qx, C = self._qx, self._C
        self._answer = [np.asarray(info["lam"], dtype=float), X, v, np.array(self._A), self.Qf,
                        None if qx is None else np.array(qx), None if C is None else np.array(C),
                        None]
        return "optimal", X, U.reshape(N, k), float(fval) + const

    def lazy_duals(self) -> LazyDuals:
        """The multipliers of the last solve in `WindowQP`'s row layout, formed when first
        called (`LazyDuals`; it keeps this solve's data, so later solves do not change it)."""
        if self._answer is None:
            raise DesignError("internal: no condensed solution to read multipliers from")
        return LazyDuals(self, self._answer)

    def shift_duals(self, y: Any) -> Any:
        """`WindowQP.shift_duals`; multipliers not yet formed (`LazyDuals`) stay so."""
        if isinstance(y, LazyDuals):
            return LazyDuals(y.qp, y.answer, shifted=True)
        return super().shift_duals(y)

    def _duals_of(self, answer: list[Any]) -> NDArray[np.float64]:
        if answer[7] is None:
            lam, X, _, A, Qf, qx, C, _ = answer
            answer[7] = self._y_of(lam, X, A, Qf, qx, C)
        return answer[7]

    @property
    def y(self) -> NDArray[np.float64]:
        """Multipliers of the last solve in `WindowQP`'s row layout."""
        if self._answer is None:
            raise DesignError("internal: no condensed solution to read multipliers from")
        return self._duals_of(self._answer)

    @property
    def dyn_duals(self) -> NDArray[np.float64]:
        """Multipliers of the dynamics rows of the last solve, ``(N, n)``."""
        return self.y[self.n:self.n + self.N * self.n].reshape(self.N, self.n)

    @property
    def z(self) -> NDArray[np.float64]:
        """The sparse QP's variables ``(δx_0 … δx_N, δu, slacks)`` of the last solve."""
        if self._answer is None:
            raise DesignError("internal: no condensed solution")
        return np.concatenate([self._answer[1].ravel(), self._answer[2]])

    # ---- multipliers: DAQP (simple bounds, rows) ↔ WindowQP's rows
    def _row_blocks(self) -> list[tuple[int, int, int]]:
        """``(first WindowQP row, first DAQP entry, count)`` of the inequality blocks."""
        N, nv = self.N, self.nv
        ru, iu = self._rows["u"]
        out = []
        rr, ir = self._rows["r"]
        out.append((rr, nv, N * ir.size))
        rx, ix = self._rows["x"]
        nx_ = ix.size
        if self.ns:
            r1, r2, rs = self._soft_rows
            out += [(r1, nv + self.m_r, N * nx_), (r2, nv + self.m_r + N * nx_, N * nx_),
                    (rs, N * self.k, N * self.ns)]
        else:
            out.append((rx, nv + self.m_r, N * nx_))
        ry = self._rows["y"][0]
        py = self.py
        if self.nsy:
            r1, r2, rs = self._soft_rows_y
            out += [(r1, nv + self.m_r + self.m_x, N * py),
                    (r2, nv + self.m_r + self.m_x + N * py, N * py),
                    (rs, N * self.k + N * self.ns, N * self.nsy)]
        else:
            out.append((ry, nv + self.m_r + self.m_x, N * py))
        return out

    def _row_map(self) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        """``(rows, entries)``: `WindowQP` row ``rows[i]`` is DAQP entry ``entries[i]`` (the
        inequality rows; built once)."""
        hit = self.__dict__.get("_rowmap")
        if hit is None:
            ru, iu = self._rows["u"]
            rows = [ru + np.arange(self.N * iu.size)]
            ents = [self._ucols]
            for r, d, cnt in self._row_blocks():
                rows.append(r + np.arange(cnt))
                ents.append(d + np.arange(cnt))
            hit = (np.concatenate(rows).astype(np.intp), np.concatenate(ents).astype(np.intp))
            self.__dict__["_rowmap"] = hit
        return hit

    def _shift_map(self) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
        """``(src, keep)``: DAQP's multipliers mapped to `WindowQP`'s rows, shifted by one
        stage (`WindowQP.shift_duals`) and mapped back are ``where(keep, lam[src], 0)`` (a
        selection, found once by pushing the entries' numbers through those maps)."""
        hit = self.__dict__.get("_shiftmap")
        if hit is None:
            rows, ents = self._row_map()
            code = np.zeros(self.l.size)
            code[rows] = ents + 1.0                           # entry numbers, 1-based
            moved = self._lam_of(WindowQP.shift_duals(self, code))
            keep = moved > 0.0
            hit = (np.where(keep, moved - 1.0, 0.0).astype(np.intp), keep)
            self.__dict__["_shiftmap"] = hit
        return hit

    def _lam_of(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        rows, ents = self._row_map()
        lam = np.zeros(self.nv + self.m)
        lam[ents] = y[rows]
        return lam

    def _y_of(self, lam: NDArray[np.float64], X: NDArray[np.float64], A: NDArray[np.float64],
              Qf: NDArray[np.float64], qx: NDArray[np.float64] | None,
              C: NDArray[np.float64] | None) -> NDArray[np.float64]:
        N, n = self.N, self.n
        y = np.zeros(self.l.size)
        rows, ents = self._row_map()
        y[rows] = lam[ents]
        # stationarity in δx_l, l = 1 … N: r_l = 2 Q_l δx_l + q_{x,l} + (bound rows)ᵀ μ_l
        rl = 2.0 * X[1:] @ self.Qs
        rl[-1] = 2.0 * Qf @ X[N]
        if qx is not None:
            rl += qx[1:]
        ix = self.ix
        if ix.size:
            rx = self._rows["x"][0]
            if self.ns:
                r1, r2, _ = self._soft_rows
                mu = y[r1:r1 + N * ix.size] + y[r2:r2 + N * ix.size]
            else:
                mu = y[rx:rx + N * ix.size]
            rl[:, ix] += mu.reshape(N, ix.size)            # (ix: distinct components)
        if self.py:
            ry = self._rows["y"][0]
            py = self.py
            if self.nsy:
                r1, r2, _ = self._soft_rows_y
                mu = y[r1:r1 + N * py] + y[r2:r2 + N * py]
            else:
                mu = y[ry:ry + N * py]
            rl += np.einsum("jpn,jp->jn", C, mu.reshape(N, py))
        lib = self._clib
        if lib is not None:
            yd = np.empty((N, n))
            fb = lib.ffi.from_buffer
            lib.costate(fb("long long[]", np.array([N, n], np.int64)), fb("double[]", as_c(A)),
                        fb("double[]", as_c(rl)), fb("double[]", yd))
        else:
            yd = np.empty((N, n))
            acc = rl[N - 1]
            yd[N - 1] = acc
            for j in range(N - 1, 0, -1):               # y_{j−1} = r_j + A_jᵀ y_j
                acc = rl[j - 1] + acc @ A[j]
                yd[j - 1] = acc
        y[n:n + N * n] = yd.ravel()
        r0 = 2.0 * self.Qs @ X[0] + (0.0 if qx is None else qx[0])
        y[:n] = -(r0 + yd[0] @ A[0])
        return y


class LazyDuals:
    """The multipliers of one condensed solve in `WindowQP`'s row layout, formed when called
    (the costate recursion of the dynamics rows), optionally shifted by one stage
    (`WindowQP.shift_duals`); `inequality_multipliers` gives DAQP's entries of the inequality
    rows without the costate recursion (all a warm start of DAQP needs)."""

    __slots__ = ("qp", "answer", "shifted")

    def __init__(self, qp: DenseWindowQP, answer: list[Any], shifted: bool = False) -> None:
        self.qp, self.answer, self.shifted = qp, answer, shifted

    def __call__(self) -> NDArray[np.float64]:
        y = self.qp._duals_of(self.answer)
        return WindowQP.shift_duals(self.qp, y) if self.shifted else y.copy()

    def __reduce__(self) -> tuple[Any, ...]:
        return (np.array, (self(),))          # pickled formed (the layout is not pickled)

    def inequality_multipliers(self) -> NDArray[np.float64]:
        """DAQP's multipliers (bounds, rows), shifted like the sparse ones when `shifted`."""
        qp, lam = self.qp, self.answer[0]
        if not self.shifted:
            return lam
        src, keep = qp._shift_map()
        out = lam[src]
        out[~keep] = 0.0
        return out


def condensed_qp(layout: DenseWindowQP, A: NDArray[np.float64], B: NDArray[np.float64],
                 c: NDArray[np.float64] | None, x0: NDArray[np.float64],
                 Qf: NDArray[np.float64], qx: NDArray[np.float64] | None,
                 qu: NDArray[np.float64] | None,
                 shift: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64]]],
                 C: NDArray[np.float64] | None = None,
                 D: NDArray[np.float64] | None = None,
                 backend: Literal["auto", "c", "numpy"] = "auto") -> CondensedQP:
    """The condensed QP (``H, g, A, lower, upper, const``) of one MPC window.

    Parameters
    ----------
    layout : DenseWindowQP
        Horizon, sizes, weights ``Q, R``, bounded components and soft penalties.
    A, B : (N, n, n), (N, n, k) ndarray
        Window of the model ``δx_{j+1} = A_j δx_j + B_j δu_j + c_j``.
    c : (N, n) ndarray or None
        Constant terms (zero when None).
    x0 : (n,) ndarray
        ``δx_0``.
    Qf : (n, n) ndarray
        Terminal weight.
    qx, qu : (N+1, n), (N, k) ndarray or None
        Linear cost terms.
    shift : mapping
        ``{"u"|"r"|"x"|"y": (lo, hi)}`` (N, p) bounds of the bounded components (as
        `WindowQP.set_bounds` takes them).
    C, D : (N, p_y, n), (N, p_y, k) ndarray, optional
        Rows ``C_j[iy]``, ``D_j[iy]`` of the bounded outputs, ``j = 1 … N``.
    backend : {"auto", "c", "numpy"}
        The recursions in C (`nhcontrol.design._ccondense`, one foreign call; "auto": when the
        library can be built) or in numpy (the same numbers to round-off).

    Returns
    -------
    CondensedQP
        See the module docstring for the recursions.
    """
    L = layout
    N, n, k = L.N, L.n, L.k
    Nk = N * k
    lib = L._c_library() if backend == "auto" else (None if backend == "numpy" else
                                                     L._c_library(required=True))
    H = L._H0.copy()
    g = L._g0.copy()
    M = np.empty((N + 1, n, Nk + 1))
    if lib is not None:
        ffi = lib.ffi
        W = np.empty((N, n, Nk + 1))
        cst = np.zeros(1)
        Ac, Bc = as_c(A), as_c(B)
        cc = as_c(c) if c is not None else L._zeros_n
        qxc = as_c(qx) if qx is not None else L._zeros_qx
        dims = np.array([N, n, k, L.nv, c is not None, qx is not None], dtype=np.int64)
        fb = ffi.from_buffer
        lib.condense(fb("long long[]", dims), fb("double[]", Ac), fb("double[]", Bc),
                     fb("double[]", cc), fb("double[]", as_c(x0)), fb("double[]", L._Qc),
                     fb("double[]", as_c(Qf)), fb("double[]", L._Rc), fb("double[]", qxc),
                     fb("double[]", M), fb("double[]", W), fb("double[]", H),
                     fb("double[]", g), fb("double[]", cst))
        const = float(cst[0])
    else:
        const = _condense_numpy(L, A, B, c, x0, Qf, qx, M, H, g)
    if qu is not None:
        g[:Nk] += qu.ravel()
    lo, hi = L._lo0.copy(), L._hi0.copy()
    Ag = L._Ag.copy()
    _fill_rows(L, M, shift, C, D, lo, hi, Ag)
    return CondensedQP(H=H, g=g, A=Ag, lower=lo, upper=hi, const=const, M=M)


def _condense_numpy(L: DenseWindowQP, A: NDArray[np.float64], B: NDArray[np.float64],
                    c: NDArray[np.float64] | None, x0: NDArray[np.float64],
                    Qf: NDArray[np.float64], qx: NDArray[np.float64] | None,
                    M: NDArray[np.float64], H: NDArray[np.float64],
                    g: NDArray[np.float64]) -> float:
    """The recursions of the module docstring in numpy: ``M`` (N+1, n, Nk+1), the leading
    ``Nk × Nk`` block of ``H`` and ``g[:Nk]`` written in place; the constant returned."""
    N, k = L.N, L.k
    Nk = N * k
    M[...] = 0.0
    M[0, :, Nk] = x0
    for j in range(N):                              # M_{j+1} = A_j M_j + [B_j | c_j]
        Mj = M[j + 1]
        np.matmul(A[j], M[j], out=Mj)
        Mj[:, j * k:(j + 1) * k] = B[j]
        if c is not None:
            Mj[:, Nk] += c[j]
    W = np.matmul(L.Qs, M[1:])                      # Q M_l (l = 1 … N)
    W[N - 1] = Qf @ M[N]
    if qx is not None:
        W[:, :, Nk] += 0.5 * qx[1:]
    for l in range(N - 1, 0, -1):                   # W_l += A_lᵀ W_{l+1}
        W[l - 1] += A[l].T @ W[l]
    HG = np.matmul(np.transpose(B, (0, 2, 1)), W)   # block row i: B_iᵀ W_{i+1}
    HG *= 2.0
    Huu = HG[:, :, :Nk].reshape(Nk, Nk)
    H[:Nk, :Nk] = 0.5 * (Huu + Huu.T) + L._R2
    g[:Nk] = HG[:, :, Nk].reshape(Nk)
    xf = M[:, :, Nk]                                 # free response δx_j (U = 0)
    const = float(np.sum((xf[:N] @ L.Qs) * xf[:N]) + xf[N] @ Qf @ xf[N])
    if qx is not None:
        const += float(np.sum(qx * xf))
    return const


def _fill_rows(L: DenseWindowQP, M: NDArray[np.float64],
               shift: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64]]],
               C: NDArray[np.float64] | None, D: NDArray[np.float64] | None,
               lo: NDArray[np.float64], hi: NDArray[np.float64], Ag: NDArray[np.float64]) -> None:
    """The bounds of the inputs and rates and the state and output rows of the step (written
    into ``lo``, ``hi``, ``Ag``, which hold the step-independent entries)."""
    N, k = L.N, L.k
    Nk = N * k
    xf = M[:, :, Nk]
    if L.iu.size and "u" in shift:
        ul, uh = shift["u"]
        lo[L._ucols] = np.ravel(ul)
        hi[L._ucols] = np.ravel(uh)
    nv = L.nv
    if L.ir.size and "r" in shift:
        rl_, rh_ = shift["r"]
        lo[nv:nv + L.m_r] = np.ravel(rl_)
        hi[nv:nv + L.m_r] = np.ravel(rh_)
    ix = L.ix
    if ix.size:
        G = M[1:, ix, :Nk].reshape(N * ix.size, Nk)
        xl, xh = shift["x"] if "x" in shift else (np.full((N, ix.size), -np.inf),
                                                   np.full((N, ix.size), np.inf))
        fx = xf[1:, ix]
        r0 = nv + L.m_r
        cnt = N * ix.size
        if L.ns:
            Ag[L.m_r:L.m_r + cnt, :Nk] = G
            Ag[L.m_r + cnt:L.m_r + 2 * cnt, :Nk] = G
            lo[r0:r0 + cnt] = np.ravel(xl - fx)
            hi[r0 + cnt:r0 + 2 * cnt] = np.ravel(xh - fx)
        else:
            Ag[L.m_r:L.m_r + cnt, :Nk] = G
            lo[r0:r0 + cnt] = np.ravel(xl - fx)
            hi[r0:r0 + cnt] = np.ravel(xh - fx)
    if L.py:
        if C is None:
            raise DesignError("internal: the bounded output rows need C_j")
        py = L.py
        CM = np.matmul(C, M[1:])                          # (N, py, Nk+1)
        if D is not None:
            for j in range(1, N + 1):                     # D_j δu_{min(j, N−1)}
                b = min(j, N - 1)
                CM[j - 1, :, b * k:(b + 1) * k] += D[j - 1]
        Gy = CM[:, :, :Nk].reshape(N * py, Nk)
        fy = CM[:, :, Nk]
        yl, yh = shift["y"]
        r0 = nv + L.m_r + L.m_x
        a0 = L.m_r + L.m_x
        cnt = N * py
        if L.nsy:
            Ag[a0:a0 + cnt, :Nk] = Gy
            Ag[a0 + cnt:a0 + 2 * cnt, :Nk] = Gy
            lo[r0:r0 + cnt] = np.ravel(yl - fy)
            hi[r0 + cnt:r0 + 2 * cnt] = np.ravel(yh - fy)
        else:
            Ag[a0:a0 + cnt, :Nk] = Gy
            lo[r0:r0 + cnt] = np.ravel(yl - fy)
            hi[r0:r0 + cnt] = np.ravel(yh - fy)


def _solve_keywords(daqp: Any, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings as keyword arguments of ``daqp.solve``; a setting it does not take is
    refused (`DesignError`), never dropped."""
    import inspect

    try:
        names = set(inspect.signature(daqp.solve).parameters)
    except (TypeError, ValueError):      # pragma: no cover - a build without a signature
        return dict(settings)
    missing = sorted(set(settings) - names)
    if missing:
        raise DesignError(f"daqp.solve of the installed daqp does not take the settings "
                          f"{missing} (daqp_options); leave them out or update daqp")
    return dict(settings)
