"""Direct collocation of ``Ẋ = f(X, u)``: the NLP's variables, constraints and exact sparse Jacobian.

Variables (``W_j = [X_j, u_j]``, ``nz = ns + k`` entries each): the ``N`` nodes, for
Hermite–Simpson the ``N − 1`` interval midpoints, and, for a free final time, ``T``:
``z = [W_0 … W_{N−1}, W_{1/2} … W_{N−3/2}, (T)]``. With ``h = T/(N−1)`` the defects of interval
``i`` are (docs/theory/optimize.md)

* trapezoidal: ``X_{i+1} − X_i − h/2 (f_i + f_{i+1}) = 0``;
* backward Euler (first order, opty's default; for comparisons): ``X_{i+1} − X_i − h f_{i+1} = 0``;
  for a model without constraints (``X = [q, v]``, ``f = [v, M⁻¹Q]``) in the implicit form
  ``q_{i+1} − q_i − h v_{i+1} = 0``, ``M(q_{i+1}) (v_{i+1} − v_i) − h Q_{i+1} = 0`` (the same
  equations, the velocity rows multiplied by the nonsingular ``M(q_{i+1})``: fewer IPOPT
  iterations than through ``M⁻¹``);
* Hermite–Simpson (separated form): ``X_{i+1} − X_i − h/6 (f_i + 4 f_m + f_{i+1}) = 0`` and
  ``X_m − (X_i + X_{i+1})/2 − h/8 (f_i − f_{i+1}) = 0``.

Their Jacobian has dense ``ns × nz`` blocks at the nodes (and midpoint) of the interval and one
column for ``T``: the blocks are ``±I`` plus multiples of ``J_j = [A_j, B_j]``, the exact
Jacobians of `ReducedDynamics` at all points from one stacked kernel call.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from ._reduced import ReducedDynamics, ReducedPoints

Array = NDArray[np.float64]


class Transcription:
    """Index bookkeeping and defect evaluation of one collocation grid."""

    def __init__(self, rd: ReducedDynamics, N: int, method: str, free_time: bool,
                 T_fixed: float) -> None:
        self.rd, self.N, self.method = rd, N, method
        self.ns, self.k = rd.ns, rd.k
        self.nz = rd.ns + rd.k
        self.hs = method == "hermite-simpson"
        self.Nm = N - 1 if self.hs else 0
        self.P = N + self.Nm                          # evaluation points (nodes, then midpoints)
        self.free_time = free_time
        self.T_fixed = T_fixed
        self.nvar = self.P * self.nz + (1 if free_time else 0)
        self.implicit = method == "backward-euler" and rd.m + rd.l == 0
        self._dyn: tuple[bytes, Array, Array] | None = None
        if self.implicit:       # the states in the model's order?, state -> model order, rows/cols
            self._order = (bool(np.all(rd.ai == np.arange(rd.n))), np.argsort(rd.ai),
                           np.ix_(np.arange(N - 1), rd.ai, rd.ai))
        self.ndef = (N - 1) * self.ns * (2 if self.hs else 1)
        self._structure()

    # ------------------------------------------------------------------ layout
    def split(self, z: Array) -> tuple[Array, Array, float]:
        """``(X (P, ns), U (P, k), T)`` of the variables (nodes first, then midpoints)."""
        W = z[:self.P * self.nz].reshape(self.P, self.nz)
        T = float(z[-1]) if self.free_time else self.T_fixed
        return W[:, :self.ns], W[:, self.ns:], T

    def col(self, point: int) -> int:
        return point * self.nz

    def times(self, T: float) -> tuple[Array, Array]:
        """Node times and midpoint times."""
        t = np.linspace(0.0, T, self.N)
        return t, 0.5 * (t[:-1] + t[1:])

    def point_times(self, T: float) -> Array:
        """Times of the ``P`` evaluation points (nodes, then midpoints)."""
        t, tm = self.times(T)
        return np.concatenate([t, tm]) if self.hs else t

    def quadrature(self, T: float) -> Array:
        """Weights ``w_j`` of ``∫ L dt ≈ Σ w_j L_j`` over the ``P`` points (trapezoid, Simpson)."""
        h = T / (self.N - 1)
        w = np.zeros(self.P)
        if self.hs:
            w[:self.N] = h / 3.0
            w[[0, self.N - 1]] = h / 6.0
            w[self.N:] = 4.0 * h / 6.0
        elif self.method == "backward-euler":
            w[1:self.N] = h                       # right-endpoint rectangles
        else:
            w[:self.N] = h
            w[[0, self.N - 1]] = h / 2.0
        return w

    # ------------------------------------------------------------------ defects
    def _structure(self) -> None:
        ns, nz, N, m = self.ns, self.nz, self.N, self.N - 1
        r, c = np.meshgrid(np.arange(ns), np.arange(nz), indexing="ij")
        i = np.arange(m)
        rows, cols = [], []
        for set_ in range(2 if self.hs else 1):       # per interval: its blocks, then T
            row0 = ((set_ * m + i) * ns)[:, None]
            R = [row0 + r.ravel() for _ in range(3 if self.hs else 2)]
            C = [(pt * nz)[:, None] + c.ravel() for pt in [i, i + 1] + ([N + i] if self.hs else [])]
            if self.free_time:
                R.append(row0 + np.arange(ns))
                C.append(np.full((m, ns), self.nvar - 1))
            rows.append(np.concatenate(R, axis=1).ravel())
            cols.append(np.concatenate(C, axis=1).ravel())
        self.rows = np.concatenate(rows).astype(np.int64)
        self.cols = np.concatenate(cols).astype(np.int64)

    def defects(self, X: Array, f: Array, T: float) -> Array:
        N, h = self.N, T / (self.N - 1)
        Xn, fn = X[:N], f[:N]
        if self.method == "backward-euler":
            return (Xn[1:] - Xn[:-1] - h * fn[1:]).ravel()
        if not self.hs:
            return (Xn[1:] - Xn[:-1] - h / 2 * (fn[:-1] + fn[1:])).ravel()
        Xm, fm = X[N:], f[N:]
        c1 = Xn[1:] - Xn[:-1] - h / 6 * (fn[:-1] + 4 * fm + fn[1:])
        c2 = Xm - 0.5 * (Xn[:-1] + Xn[1:]) - h / 8 * (fn[:-1] - fn[1:])
        return np.concatenate([c1.ravel(), c2.ravel()])

    def defect_jacobian(self, pts: ReducedPoints, T: float) -> Array:
        """Values in the order of ``rows, cols`` (per interval: node ``i``, node ``i+1``,
        midpoint, ``T``)."""
        N, ns, nz = self.N, self.ns, self.nz
        h, dh = T / (N - 1), 1.0 / (N - 1)
        J, f = pts.J[..., :nz], pts.f
        E = np.zeros((ns, nz))
        E[:, :ns] = np.eye(ns)
        Jn, fn = J[:N], f[:N]
        m = N - 1

        def flat(*blocks: Array) -> Array:
            return np.concatenate([b.reshape(m, -1) for b in blocks], axis=1).ravel()

        if self.method == "backward-euler":
            blocks = [np.broadcast_to(-E, (m, ns, nz)), E - h * Jn[1:]]
            if self.free_time:
                blocks.append(-dh * fn[1:])
            return flat(*blocks)
        if not self.hs:
            blocks = [-E - h / 2 * Jn[:-1], E - h / 2 * Jn[1:]]
            if self.free_time:
                blocks.append(-dh / 2 * (fn[:-1] + fn[1:]))
            return flat(*blocks)
        Jm, fm = J[N:], f[N:]
        first = [-E - h / 6 * Jn[:-1], E - h / 6 * Jn[1:], -4 * h / 6 * Jm]
        second = [-0.5 * E - h / 8 * Jn[:-1], -0.5 * E + h / 8 * Jn[1:], np.broadcast_to(E, (m, ns, nz))]
        if self.free_time:
            first.append(-dh / 6 * (fn[:-1] + 4 * fm + fn[1:]))
            second.append(-dh / 8 * (fn[:-1] - fn[1:]))
        return np.concatenate([flat(*first), flat(*second)])

    # ------------------------------------------------------------------ implicit backward Euler
    def _implicit_terms(self, z: Array, jac: bool) -> tuple[Any, ...]:
        """``M, Q`` (and the terms of their derivatives) at nodes ``1 … N−1``, rows and columns
        in the order of the states ``q = x_ai`` (the partition's order of the coordinates)."""
        rd, N, n = self.rd, self.N, self.rd.n
        X, U, T = self.split(z)
        ordered, back, sel = self._order

        def square(a: Array) -> Array:
            return a if ordered else a[sel]

        def rows(a: Array) -> Array:
            return a if ordered else a[:, rd.ai]

        q = X[1:N, :n] if ordered else X[1:N, :n][:, back]
        v = X[1:N, n:2 * n] if ordered else X[1:N, n:2 * n][:, back]
        u = rd._u(U[1:N], N - 1)
        key = np.asarray(z, dtype=float).tobytes()
        if self._dyn is None or self._dyn[0] != key:  # M, Q of this z (constraints, then Jacobian)
            dt = rd.cm.dynamics_terms(q, v, u, rd.p)
            self._dyn = (key, square(np.asarray(dt.M, float).reshape(N - 1, n, n)),
                         rows(np.asarray(dt.Q, float).reshape(N - 1, n)))
        M, Q = self._dyn[1], self._dyn[2]
        dv = X[1:N, n:2 * n] - X[:N - 1, n:2 * n]
        if not jac:
            return X, T, M, Q, dv, None
        lt = rd.cm.linearization_terms(q, v, dv if ordered else dv[:, back], np.zeros((N - 1, 0)), u, rd.p)

        def term(name: str, cols: int, sq: bool) -> Array:
            a = np.asarray(getattr(lt, name), float).reshape(N - 1, n, cols)
            return square(a) if sq else rows(a)

        terms = {name: term(name, n, True) for name in ("dMa_dx", "dQ_dx", "dQ_dxd")}
        if self.k:
            terms.update({name: term(name, self.k, False) for name in ("dMa_du", "dQ_du")})
        return X, T, M, Q, dv, terms

    def implicit_defects(self, z: Array) -> Array:
        """The implicit backward-Euler rows (module docstring) of a model without constraints."""
        n = self.rd.n
        X, T, M, Q, dv, _ = self._implicit_terms(z, jac=False)
        h = T / (self.N - 1)
        Xn = X[:self.N]
        c1 = Xn[1:, :n] - Xn[:-1, :n] - h * Xn[1:, n:2 * n]
        c2 = np.einsum("pij,pj->pi", M, dv) - h * Q
        return np.concatenate([c1, c2], axis=1).ravel()

    def implicit_jacobian(self, z: Array) -> Array:
        """Values of the implicit rows in the order of ``rows, cols``."""
        n, k, ns, nz, m = self.rd.n, self.k, self.ns, self.nz, self.N - 1
        X, T, M, Q, dv, t = self._implicit_terms(z, jac=True)
        h, dh = T / m, 1.0 / m
        eye = np.eye(n)
        B0 = np.zeros((m, ns, nz))
        B1 = np.zeros((m, ns, nz))
        B0[:, :n, :n] = -eye
        B0[:, n:, n:2 * n] = -M
        B1[:, :n, :n] = eye
        B1[:, :n, n:2 * n] = -h * eye
        B1[:, n:, :n] = t["dMa_dx"] - h * t["dQ_dx"]
        B1[:, n:, n:2 * n] = M - h * t["dQ_dxd"]
        if k:
            B1[:, n:, ns:] = t["dMa_du"] - h * t["dQ_du"]
        blocks = [B0.reshape(m, -1), B1.reshape(m, -1)]
        if self.free_time:
            blocks.append(-dh * np.concatenate([X[1:self.N, n:2 * n], Q], axis=1))
        return np.concatenate(blocks, axis=1).ravel()


class Evaluations:
    """The dynamics at the points of one variable vector, evaluated once per new ``z``."""

    def __init__(self, tr: Transcription) -> None:
        self.tr = tr
        self._key: bytes | None = None
        self._pts: ReducedPoints | None = None
        self._jac = False

    def at(self, z: Array, jac: bool) -> ReducedPoints:
        key = np.asarray(z, dtype=float).tobytes()
        if key != self._key or (jac and not self._jac):
            X, U, _ = self.tr.split(np.asarray(z, dtype=float))
            # the values of this z (IPOPT asks for the constraints, then the Jacobian at the
            # same accepted point) are kept for the sensitivities
            same = key == self._key
            self._pts = self.tr.rd.evaluate(X, U, jac=jac, values=self._pts if same else None)
            self._key, self._jac = key, jac
        assert self._pts is not None
        return self._pts


RowFunction = Callable[[ReducedPoints, Array, Array], tuple[Array, Array]]
"""``(points, X, U) → (values (N, r), jacobian (N, r, nz))`` of path constraints at the nodes."""
