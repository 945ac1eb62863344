"""Constraint rows on the full motion at nodes: boundary values of dependent coordinates or
velocities, bounds on non-state coordinates and velocities, declared outputs, multipliers
(contact forces) and friction utilisation; values and exact Jacobians through the
sensitivities ``T_x, T_ẋ, T_Λ`` of `ReducedDynamics` (derived in docs/theory/optimize.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from .._util.errors import OptimizationError
from .._util.reprs import concise_repr
from . import _spec
from ._reduced import ReducedDynamics, ReducedPoints
from ._transcription import Transcription

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

Array = NDArray[np.float64]


@dataclass(frozen=True)
class PathConstraint:
    """A user's path constraint ``lower ≤ g(x, ẋ, u) ≤ upper`` at every node, with its exact
    derivatives.

    Attributes
    ----------
    name : str
    fun : callable
        ``fun(x (P, n), xd (P, n), u (P, k)) -> (g (P, r), g_x (P, r, n), g_xd (P, r, n),
        g_u (P, r, k))``: the values and their partial derivatives (full coordinates,
        velocities, inputs; the chain rule to the minimal state is done here).
    lower, upper : (r,) array_like
        Bounds (``-inf``/``inf`` for an open side).
    """

    __repr__ = concise_repr

    name: str
    fun: Callable[..., tuple[Array, Array, Array, Array]]
    lower: Any
    upper: Any


class PathRows:
    """Rows ``lower ≤ g(x_j, ẋ_j, Λ_j, u_j) ≤ upper``, each at one point ``j`` (boundary rows at
    the first or last node, path rows at every node and Hermite–Simpson midpoint)."""

    def __init__(self, cm: CompiledModel, rd: ReducedDynamics, tr: Transcription, p: Array,
                 init: dict[str, float], fin: dict[str, float], xb: dict, xdb: dict,
                 output_bounds: Mapping[str, Any] | None, friction: Mapping[str, Any] | None,
                 path: Sequence[PathConstraint] = ()) -> None:
        self.cm, self.rd, self.tr, self.p = cm, rd, tr, p
        self.specs: list[tuple[Array, str, Any, float, float]] = []
        self.state_bounds: dict[str, tuple[float, float]] = {}
        all_nodes = np.arange(tr.P)       # nodes and Hermite–Simpson midpoints
        for node, vals in ((0, init), (tr.N - 1, fin)):
            for name, v in vals.items():
                if name not in rd.states and name not in rd.inputs:
                    kind, idx = self._full(name)
                    self.specs.append((np.array([node]), kind, idx, v, v))
        for bounds in (xb, xdb):
            for name, (lo, hi) in bounds.items():
                if name in rd.states:
                    self.state_bounds[name] = (lo, hi)
                else:
                    kind, idx = self._full(name)
                    self.specs.append((all_nodes, kind, idx, lo, hi))
        outputs = tuple(getattr(cm, "outputs", ()) or ())
        from ..reference._eval import constraint_names

        cnames = tuple(constraint_names(cm))
        for name, (lo, hi) in _spec.bounds_of(output_bounds, outputs + cnames, "output_bounds").items():
            if name in outputs:
                self.specs.append((all_nodes, "h", outputs.index(name), lo, hi))
            else:
                self.specs.append((all_nodes, "lam", cnames.index(name), lo, hi))
        if friction is not None:
            for spec in _friction_specs(cm, friction, cnames):
                self.specs.append((all_nodes, "friction", spec, -np.inf, 1.0))
        for pc in path:
            if not isinstance(pc, PathConstraint):
                raise OptimizationError(f"path must hold PathConstraint objects, got {type(pc).__name__}")
            lo_, hi_ = np.atleast_1d(np.asarray(pc.lower, float)), np.atleast_1d(np.asarray(pc.upper, float))
            if lo_.shape != hi_.shape or np.any(lo_ > hi_):
                raise OptimizationError(f"path constraint {pc.name!r}: lower and upper must have one "
                                        f"shape (r,) with lower ≤ upper")
            for j in range(lo_.size):
                self.specs.append((all_nodes, "user", (pc, j), float(lo_[j]), float(hi_[j])))
        self._user: dict[int, Any] = {}
        rows, cols, lo, hi = [], [], [], []
        r = 0
        for nodes, _, _, a, b in self.specs:
            for j in nodes:
                rows.append(np.full(tr.nz, r))
                cols.append(tr.col(int(j)) + np.arange(tr.nz))
                lo.append(a)
                hi.append(b)
                r += 1
        self.rows = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
        self.cols = np.concatenate(cols).astype(np.int64) if cols else np.zeros(0, np.int64)
        self.lower, self.upper = np.array(lo, dtype=float), np.array(hi, dtype=float)
        self.needs_outputs = any(s[1] == "h" for s in self.specs)

    def _full(self, name: str) -> tuple[str, int]:
        rd = self.rd
        if name in rd.coordinates:
            return "x", rd.coordinates.index(name)
        return "xd", rd.velocities.index(name)

    def _outputs(self, pts: ReducedPoints, U: Array) -> Any:
        return self.cm.output_terms(pts.x, pts.xd, U if self.rd.k else None, self.p)

    def _user_eval(self, pts: ReducedPoints, U: Array) -> dict[int, Any]:
        N = self.tr.P
        u = U if self.rd.k else np.zeros((N, 0))
        out: dict[int, Any] = {}
        for _, kind, idx, _, _ in self.specs:
            if kind == "user" and id(idx[0]) not in out:
                g, gx, gxd, gu = (np.asarray(a, dtype=float) for a in idx[0].fun(pts.x, pts.xd, u))
                out[id(idx[0])] = (g.reshape(N, -1), gx.reshape(N, -1, self.rd.n),
                                   gxd.reshape(N, -1, self.rd.n), gu.reshape(N, -1, self.rd.k))
        return out

    def values(self, pts: ReducedPoints, X: Array, U: Array, z: Array) -> Array:
        if not self.specs:
            return np.zeros(0)
        ot = self._outputs(pts, U) if self.needs_outputs else None
        us = self._user_eval(pts, U)
        out = []
        for nodes, kind, idx, _, _ in self.specs:
            if kind == "x":
                out.append(pts.x[nodes, idx])
            elif kind == "xd":
                out.append(pts.xd[nodes, idx])
            elif kind == "lam":
                out.append(pts.lam[nodes, idx])
            elif kind == "h":
                out.append(np.asarray(ot.h, float).reshape(self.tr.P, -1)[nodes, idx])
            elif kind == "user":
                out.append(us[id(idx[0])][0][nodes, idx[1]])
            else:
                out.append(_utilisation2(pts.lam[nodes], idx)[0])
        return np.concatenate(out)

    def jacobian(self, pts: ReducedPoints, X: Array, U: Array, z: Array) -> Array:
        if not self.specs:
            return np.zeros(0)
        N, n, k, ns = self.tr.P, self.rd.n, self.rd.k, self.rd.ns
        ot = self._outputs(pts, U) if self.needs_outputs else None
        us = self._user_eval(pts, U)
        out = []
        for nodes, kind, idx, _, _ in self.specs:
            if kind == "user":
                _, gx, gxd, gu = us[id(idx[0])]
                row = (np.einsum("pn,pnz->pz", gx[nodes, idx[1]], pts.Tx[nodes])
                       + np.einsum("pn,pnz->pz", gxd[nodes, idx[1]], pts.Txd[nodes]))
                if k:
                    row[:, ns:ns + k] += gu[nodes, idx[1]]
                out.append(row)
            elif kind == "x":
                out.append(pts.Tx[nodes, idx, :])
            elif kind == "xd":
                out.append(pts.Txd[nodes, idx, :])
            elif kind == "lam":
                out.append(pts.Tlam[nodes, idx, :])
            elif kind == "h":
                q = len(self.cm.outputs)
                hx = np.asarray(ot.dh_dx, float).reshape(N, q, n)[nodes, idx]
                hxd = np.asarray(ot.dh_dxd, float).reshape(N, q, n)[nodes, idx]
                row = (np.einsum("pn,pnz->pz", hx, pts.Tx[nodes])
                       + np.einsum("pn,pnz->pz", hxd, pts.Txd[nodes]))
                if k:
                    row[:, ns:ns + k] += np.asarray(ot.dh_du, float).reshape(N, q, k)[nodes, idx]
                out.append(row)
            else:
                _, dvals = _utilisation2(pts.lam[nodes], idx)
                out.append(np.einsum("pc,pcz->pz", dvals, pts.Tlam[nodes]))
        return np.concatenate([o.ravel() for o in out])


def _friction_specs(cm: CompiledModel, friction: Mapping[str, Any], cnames: tuple[str, ...]) -> list:
    from ..reference.friction import wheel_contacts

    if not isinstance(friction, Mapping) or "mu" not in friction:
        raise OptimizationError("friction must be a mapping {'mu': μ, 'normal_loads': {wheel: N}, "
                                "'wheels': {...}} (normal_loads and wheels optional)")
    bad = sorted(set(friction) - {"mu", "normal_loads", "wheels"})
    if bad:
        raise OptimizationError(f"friction keys {bad} unknown; use 'mu', 'normal_loads', 'wheels'")
    mu = float(friction["mu"])
    if not (np.isfinite(mu) and mu > 0):
        raise OptimizationError(f"friction['mu'] must be positive and finite, got {mu}")
    wheels = dict(friction.get("wheels") or wheel_contacts(cm))
    loads = dict(friction.get("normal_loads") or {})
    unknown = sorted(set(loads) - set(wheels))
    if unknown:
        raise OptimizationError(f"friction['normal_loads'] names unknown wheels {unknown}; the wheels "
                                f"are {sorted(wheels)}")
    specs = []
    for w, (tang, normal) in wheels.items():
        missing = [c for c in (*tang, *([normal] if normal else [])) if c not in cnames]
        if missing:
            raise OptimizationError(f"wheel {w!r}: {missing} are not constraints of the model {list(cnames)}")
        t_idx = np.array([cnames.index(c) for c in tang], dtype=int)
        if w in loads:
            Nw = float(loads[w])
            if not Nw > 0:
                raise OptimizationError(f"normal load of wheel {w!r} must be positive, got {Nw}")
            specs.append((t_idx, None, mu, Nw))
        elif normal:
            specs.append((t_idx, cnames.index(normal), mu, None))
        else:
            raise OptimizationError(f"wheel {w!r} has no normal constraint: give friction['normal_loads']"
                                    f" = {{'{w}': N}} (e.g. nhcontrol.models.single_track.static_axle_loads)")
    return specs


def _utilisation2(lam: Array, spec: tuple) -> tuple[Array, Array]:
    """``ρ² = Σ Λ_t² / (μ N)²`` (the friction circle squared, smooth) and ``∂ρ²/∂Λ (P, m+l)``."""
    t_idx, n_idx, mu, Nw = spec
    lt = lam[:, t_idx]
    d = np.zeros_like(lam)
    if n_idx is None:
        den = (mu * Nw) ** 2
        val = np.sum(lt ** 2, axis=1) / den
        d[:, t_idx] = 2.0 * lt / den
    else:
        Nn = lam[:, n_idx]
        den = mu ** 2 * Nn ** 2
        val = np.sum(lt ** 2, axis=1) / den
        d[:, t_idx] = 2.0 * lt / den[:, None]
        d[:, n_idx] = -2.0 * val / Nn
    return val, d
