"""Model checks behind [`MultibodySystem.validate()`][nhcontrol.modeling.MultibodySystem.validate] (all problems collected at once)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import numpy as np
import sympy as sp

if TYPE_CHECKING:  # pragma: no cover
    from .system import MultibodySystem

CHECK_TOL = 1e-9
"""Tolerance of the numeric checks (orthogonality, symmetry, semidefiniteness, linearity)."""


def _numeric(expr_or_mat, values: dict) -> np.ndarray | None:
    """Evaluate at ``values``; None if it cannot be evaluated to finite reals."""
    try:
        if isinstance(expr_or_mat, sp.MatrixBase):
            val = np.array(expr_or_mat.xreplace(values).evalf(), dtype=float)
        else:
            val = np.array(float(sp.sympify(expr_or_mat).xreplace(values).evalf()))
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return val if np.all(np.isfinite(val)) else None


def _names(symbols: Iterable[sp.Symbol]) -> list[str]:
    return sorted(s.name for s in symbols)


class _Shared:
    """All expressions of a model through one ``sympy.cse``: free symbols and numeric values
    without walking the (possibly huge, shared) expression trees again and again."""

    def __init__(self, exprs: list[sp.Expr]) -> None:
        self.cse_syms: list[sp.Symbol] = []
        gen = (sp.Dummy("v") for _ in iter(int, 1))
        self.repl, self.reduced = sp.cse(exprs, symbols=gen, optimizations=None, order="none") \
            if exprs else ([], [])
        self._free: dict = {}
        for sym, e in self.repl:
            fs = set()
            for a in e.free_symbols:
                fs |= self._free[a] if a in self._free else {a}
            self._free[sym] = frozenset(fs)

    def free(self, i: int) -> frozenset:
        fs = set()
        for a in self.reduced[i].free_symbols:
            fs |= self._free[a] if a in self._free else {a}
        return frozenset(fs)

    def evaluate(self, indices: list[int], values: dict) -> list[float] | None:
        """Float values of expressions ``indices`` at ``values`` (None if not evaluable)."""
        env = dict(values)
        try:
            for sym, e in self.repl:
                env[sym] = e.xreplace(env)
            out = [complex(self.reduced[i].xreplace(env).evalf()) for i in indices]
        except (TypeError, ValueError, ZeroDivisionError):
            return None
        if any(abs(v.imag) > 1e-12 or not np.isfinite(v.real) for v in out):
            return None
        return [v.real for v in out]


def collect_problems(mb: "MultibodySystem") -> list[str]:
    """Return the list of problems of ``mb`` (empty if it is valid)."""
    problems: list[str] = []
    x, xd, p, u = set(mb.coordinates), set(mb.velocities), set(mb.parameters), set(mb.inputs)
    pos_ok = x | p | u
    vel_ok = pos_ok | xd

    # duplicate names -----------------------------------------------------
    allnames = ([("coordinate", s.name) for s in mb.coordinates] + [("velocity", s.name) for s in mb.velocities]
                + [("parameter", s.name) for s in mb.parameters] + [("input", s.name) for s in mb.inputs])
    seen: dict[str, str] = {}
    for kind, nm in allnames:
        if nm in seen:
            problems.append(f"duplicate symbol name {nm!r} (used as {seen[nm]} and as {kind}); "
                            f"rename one of them")
        else:
            seen[nm] = kind
    for what, names in (("body", [b.name for b in mb.bodies]),
                        ("constraint", [c.name for c in mb.constraints])):
        dup = sorted({s for s in names if names.count(s) > 1})
        if dup:
            problems.append(f"duplicate {what} names {dup}; give each {what} a unique name")

    # unknown symbols --------------------------------------------------------
    entries: list[tuple[sp.Expr, str, set, bool]] = []
    for b in mb.bodies:
        entries.append((b.mass, f"mass of body {b.name!r}", pos_ok, False))
        entries += [(e, f"inertia of body {b.name!r}", pos_ok, False) for e in b.inertia]
        entries += [(e, f"position of body {b.name!r}", pos_ok, False) for e in b.position]
        entries += [(e, f"orientation of body {b.name!r}", pos_ok, False) for e in b.orientation]
    for c in mb.constraints:
        allow = c.kind == "nonholonomic"
        entries.append((c.expr, f"{c.kind} constraint {c.name!r}", vel_ok if allow else pos_ok, allow))
    for k, ld in enumerate(mb.loads):
        for d in ld.data:
            if isinstance(d, sp.MatrixBase):
                entries += [(e, f"{ld.kind} load #{k}", vel_ok, True) for e in d]
            elif isinstance(d, sp.Basic):
                entries.append((d, f"{ld.kind} load #{k}", vel_ok, True))
    nh_list = list(mb.nonholonomic)
    shared = _Shared([e for e, *_ in entries])
    free_of = [shared.free(i) for i in range(len(entries))]
    reported: set = set()
    for i, (_, where, allowed, allow_vel) in enumerate(entries):
        bad = free_of[i] - allowed
        if not bad:
            continue
        vel = bad & xd
        other = bad - xd
        if vel and not allow_vel and (where, "vel") not in reported:
            reported.add((where, "vel"))
            problems.append(f"{where} depends on velocities {_names(vel)}; positions, orientations, "
                            f"inertias and holonomic constraints may depend only on x, u and parameters")
        if other and (where, "sym") not in reported:
            reported.add((where, "sym"))
            hint = ", ".join(f"{s.name}=<value>" for s in sorted(other, key=lambda s: s.name))
            problems.append(f"{where} contains unknown symbol(s) {_names(other)} that are neither "
                            f"coordinates, velocities, parameters nor inputs; declare them with "
                            f"mb.add_parameters({hint}) (or add_inputs/add_coordinates)")
    nh_index = {id(c): i for i, (e, where, *_r) in enumerate(entries) for c in nh_list
                if where == f"nonholonomic constraint {c.name!r}" and e is c.expr}

    # counts -----------------------------------------------------------------
    n, m, l = mb.n, mb.m, mb.l
    if n == 0:
        problems.append("the model has no coordinates; call mb.add_coordinates(...)")
    elif m + l >= n:
        problems.append(f"m + l = {m} + {l} = {m + l} constraints for n = {n} coordinates leaves "
                        f"n - m - l = {n - m - l} degrees of freedom; expected m + l < n "
                        f"(remove redundant constraints or add coordinates)")
    if not mb.bodies:
        problems.append("the model has no bodies; call mb.add_body(...)")

    # numeric point ----------------------------------------------------------
    rng = np.random.default_rng(20240601)
    values: dict = {s: sp.Float(float(v)) for s, v in
                    zip(mb.coordinates, rng.uniform(-1.0, 1.0, n))}
    values.update({s: sp.Float(float(v)) for s, v in zip(mb.velocities, rng.uniform(-1.0, 1.0, n))})
    values.update({s: sp.Float(float(v)) for s, v in zip(mb.inputs, rng.uniform(-0.5, 0.5, mb.ninputs))})
    values.update({s: sp.Float(mb.defaults[s.name]) for s in mb.parameters})

    # constraints ------------------------------------------------------------
    for c in mb.holonomic:
        if not (c.expr.free_symbols & x):
            problems.append(f"holonomic constraint {c.name!r} = {c.expr} does not depend on any "
                            f"coordinate; it cannot be satisfied by the motion (remove it)")
    base = {k: v for k, v in values.items() if k not in xd}
    v1 = dict(zip(mb.velocities, rng.uniform(-1.0, 1.0, n)))
    v2 = dict(zip(mb.velocities, rng.uniform(-1.0, 1.0, n)))
    vel_sets = {"v1": v1, "v2": v2, "v12": {k: v1[k] + v2[k] for k in v1}, "2v1": {k: 2 * v1[k] for k in v1},
                "0": {k: 0.0 for k in v1}}
    for c in nh_list:
        i = nh_index[id(c)]
        if not (free_of[i] & xd):
            problems.append(f"nonholonomic constraint {c.name!r} = {c.expr} depends on positions only; "
                            f"it is holonomic: use mb.add_holonomic(...) instead")
            continue
        if free_of[i] - vel_ok:
            continue  # unknown symbols already reported
        f = {}
        for key, vs in vel_sets.items():
            r = shared.evaluate([i], {**base, **{k: sp.Float(float(v)) for k, v in vs.items()}})
            f[key] = None if r is None else r[0]
        if any(v is None for v in f.values()):
            continue
        scale = max(1.0, abs(f["v1"]), abs(f["v2"]))
        why = None
        if abs(f["0"]) > CHECK_TOL * scale:
            why = f"it has a velocity-free term (value {f['0']:.3g} at zero velocity)"
        elif abs(f["v12"] - f["v1"] - f["v2"]) > 1e-8 * scale or abs(f["2v1"] - 2 * f["v1"]) > 1e-8 * scale:
            why = "it contains terms of degree > 1 in the velocities"
        if why:
            problems.append(f"nonholonomic constraint {c.name!r} is not linear and homogeneous in the "
                            f"velocities ({why}); expected B(x) · xd with xd = {[s.name for s in mb.velocities]}")

    # bodies -----------------------------------------------------------------
    for b in mb.bodies:
        mval = _numeric(b.mass, values)
        if mval is not None and not float(mval) > 0:
            problems.append(f"mass of body {b.name!r} is {float(mval)} with the default parameters; "
                            f"expected a positive mass")
        Ival = _numeric(b.inertia, values)
        if Ival is not None:
            scale = max(1.0, float(np.max(np.abs(Ival))))
            asym = float(np.max(np.abs(Ival - Ival.T)))
            if asym > CHECK_TOL * scale:
                problems.append(f"inertia tensor of body {b.name!r} is not symmetric (max |I - I^T| = "
                                f"{asym:.3g} with the default parameters); give a symmetric tensor at G")
            else:
                eig = np.linalg.eigvalsh(0.5 * (Ival + Ival.T))
                if eig[0] < -CHECK_TOL * scale:
                    problems.append(f"inertia tensor of body {b.name!r} is not positive semidefinite: "
                                    f"eigenvalues {np.array2string(eig, precision=4)} with the default "
                                    f"parameters; check the signs of the products of inertia")
        Rval = _numeric(b.orientation, values)
        if Rval is not None:
            err = float(np.max(np.abs(Rval @ Rval.T - np.eye(3))))
            det = float(np.linalg.det(Rval))
            if err > 1e-8 or abs(det - 1.0) > 1e-8:
                problems.append(f"orientation matrix of body {b.name!r} is not a rotation at a random point "
                                f"(max |R R^T - I| = {err:.3g}, det R = {det:.6g}); build it from "
                                f"rot_x/rot_y/rot_z or euler_rotation")
    return problems


__all__ = ["collect_problems", "CHECK_TOL"]
