"""Exact derivatives of the model terms with respect to chosen parameters (derived here).

The compiled kernels differentiate with respect to ``x, ẋ, u`` only (the third procedure needs
no more). Identification needs ``∂/∂θ`` of ``M, Q, C, D, b, Q_d`` for the parameters ``θ``
estimated: they are differentiated symbolically on the model's expression graph
(`ExprGraph.jacobian`, the same chain rule through the common subexpressions as the kernels),
expanded to explicit expressions and printed as one NumPy function (``sympy.lambdify`` with
common-subexpression elimination), cached per model and parameter set for the process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from .._util.errors import OptimizationError

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

Array = NDArray[np.float64]

_CACHE: dict[tuple[str, tuple[str, ...]], "ParameterTerms"] = {}
_FIELDS = ("M", "Q", "C", "D", "b", "Qd")


@dataclass(frozen=True)
class ParameterTerms:
    """``∂M/∂θ (P, n, n, r)``, ``∂Q/∂θ (P, n, r)``, ``∂C/∂θ (P, m, r)``, ``∂D/∂θ (P, c, n, r)``,
    ``∂b/∂θ (P, c, r)``, ``∂Q_d/∂θ (P, c, r)`` at ``P`` points (a callable)."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    fn: Callable[..., Any]

    def __call__(self, x: Array, xd: Array, u: Array | None, p: Array) -> dict[str, Array]:
        P = x.shape[0]
        args = [x.T[i] for i in range(x.shape[1])] + [xd.T[i] for i in range(xd.shape[1])]
        if u is not None:
            args += [u.T[i] for i in range(u.shape[1])]
        args += [np.full(P, v) for v in p]
        vals = self.fn(*args)
        out, pos = {}, 0
        r = len(self.names)
        for name, shape in zip(_FIELDS, self.shapes):
            size = int(np.prod(shape)) * r
            block = np.stack([np.broadcast_to(np.asarray(v, dtype=float), (P,)) for v in vals[pos:pos + size]],
                             axis=-1) if size else np.zeros((P, 0))
            out[name] = block.reshape((P,) + shape + (r,))
            pos += size
        return out


def parameter_terms(cm: CompiledModel, names: Sequence[str]) -> ParameterTerms:
    """The cached `ParameterTerms` of `names` for `cm` (needs its symbolic model)."""
    key = (str(cm.model_hash), tuple(names))
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    from ..compiled.model import _system_for

    mb = _system_for(cm)
    if mb is None:
        raise OptimizationError(
            f"identification differentiates the model terms with respect to parameters "
            f"symbolically and needs the symbolic model of {cm.name!r}: compile it in this process "
            f"(system.compile()) or load it with a catalogue model() function")
    eom = mb.equations()
    g = eom.graph
    psyms = {s.name: s for s in eom.p}
    thetas = [psyms[nm] for nm in names]
    c = eom.m + eom.l
    mats = {"M": eom.M_g, "Q": eom.Q_g, "C": eom.C_g, "D": eom.D_g,
            "b": eom.b_g if eom.b_g is not None else sp.zeros(c, 1), "Qd": eom.Qd_g}
    exprs, shapes = [], []
    for f in _FIELDS:
        mat = mats[f]
        if mat is None:
            mat = sp.zeros(0, 1)
        flat = list(mat)
        shape = (mat.shape[0],) if mat.shape[1] == 1 and f != "M" and f != "D" else tuple(mat.shape)
        shapes.append(shape)
        if flat:
            jac = g.jacobian(flat, thetas)
            exprs.extend(g.expand(e) for e in jac)
    args = list(eom.x) + list(eom.xd) + list(eom.u) + list(eom.p)
    fn = sp.lambdify(args, exprs, modules="numpy", cse=True)
    out = ParameterTerms(tuple(names), tuple(shapes), fn)
    _CACHE[key] = out
    return out
