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

    def marks(self, find) -> list[frozenset]:
        """For every expression, the set ``find(e)`` collected over its whole tree (through the
        common subexpressions): e.g. the non-smooth function nodes it contains."""
        own: dict = {}
        for sym, e in self.repl:
            ms = set(find(e))
            for a in e.free_symbols:
                if a in own:
                    ms |= own[a]
            own[sym] = frozenset(ms)
        out = []
        for e in self.reduced:
            ms = set(find(e))
            for a in e.free_symbols:
                if a in own:
                    ms |= own[a]
            out.append(frozenset(ms))
        return out

    def velocity_degrees(self, velocities: set) -> list[tuple[float, float]]:
        """Bounds ``(highest, lowest)`` of the polynomial degrees of the terms of every expression
        in ``velocities``: ``highest <= 1`` proves linearity (``inf`` when a velocity enters a
        non-polynomial function), ``lowest >= 1`` proves that no term is free of velocities
        (``inf`` for an expression that is identically 0)."""
        inf = float("inf")
        deg: dict = {}

        def d(e: sp.Basic) -> tuple[float, float]:
            if e in deg:
                return deg[e]
            if e.is_Symbol:
                r = (1.0, 1.0) if e in velocities else (0.0, 0.0)
            elif e.is_Number or not e.args:
                r = (0.0, inf) if e == 0 else (0.0, 0.0)
            elif e.is_Add:
                ds = [d(a) for a in e.args]
                r = (max(h for h, _ in ds), min(lo for _, lo in ds))
            elif e.is_Mul:
                ds = [d(a) for a in e.args]
                r = (sum(h for h, _ in ds), sum(lo for _, lo in ds))
            elif e.is_Pow:
                b, k = e.args
                hb, lb = d(b)
                if hb == 0 and d(k)[0] == 0:
                    r = (0.0, 0.0)
                elif k.is_Integer and int(k) >= 0:
                    r = (hb * int(k), lb * int(k))
                else:
                    r = (inf, 0.0)
            else:
                r = (inf, 0.0) if any(d(a)[0] > 0 for a in e.args) else (0.0, 0.0)
            deg[e] = r
            return r

        for sym, e in self.repl:
            deg[sym] = d(e)
        return [d(e) for e in self.reduced]

    def full(self, e: sp.Expr) -> sp.Expr:
        """``e`` (in terms of the common subexpressions) written out in the model's symbols."""
        subs = dict(self.repl)
        prev = None
        while prev is not e:
            prev, e = e, e.xreplace(subs)
        return e

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


# Functions without derivatives at some point (kinks, jumps): not allowed of x, ẋ, u in
# kinematics, inertias and constraints.
_NONSMOOTH = (sp.Abs, sp.sign, sp.Heaviside, sp.DiracDelta, sp.Piecewise, sp.Max, sp.Min, sp.floor,
              sp.ceiling, sp.frac, sp.Mod)
_NONFINITE = (sp.S.NaN, sp.S.ComplexInfinity, sp.S.Infinity, sp.S.NegativeInfinity)


def _short(e: sp.Expr, limit: int = 120) -> str:
    text = str(e)
    return text if len(text) <= limit else text[:limit] + "..."


def inertia_problem(inertia: np.ndarray, tol: float = CHECK_TOL, spatial: bool = True,
                    context: str = "") -> str | None:
    """Why the numeric ``(3, 3)`` inertia tensor at the centre of mass cannot exist, or None.

    It must be finite, symmetric and positive semidefinite, and (``spatial``) its principal
    moments must satisfy the triangle inequalities ``I1 + I2 >= I3`` (each principal moment is
    an integral of the squared distance to an axis, ``I1 + I2 - I3 = 2 ∫ z^2 dm >= 0`` in
    principal axes; derived here). Equality is allowed: a plane lamina, and a slender rod with
    one zero moment. ``spatial=False`` (a body that turns about one fixed body axis only -
    a planar model - whose other moments never enter the equations and are often given as
    0) skips the triangle inequalities.
    """
    J = np.asarray(inertia, dtype=float)
    if not np.all(np.isfinite(J)):
        return f"has non-finite entries{context}: {np.array2string(J, precision=4)}"
    scale = max(float(np.max(np.abs(J))), np.finfo(float).tiny)
    asym = float(np.max(np.abs(J - J.T)))
    if asym > tol * scale:
        return (f"is not symmetric (max |I - I^T| = {asym:.3g}{context}); give a symmetric tensor at "
                f"the centre of mass G")
    eig = np.linalg.eigvalsh(0.5 * (J + J.T))
    if eig[0] < -tol * scale:
        return (f"is not positive semidefinite{context}: principal moments {np.array2string(eig, precision=4)}; "
                f"check the signs of the moments and products of inertia")
    if spatial and eig[0] + eig[1] < eig[2] - tol * scale:
        return (f"violates the triangle inequality of the principal moments{context}: {eig[0]:.6g} + {eig[1]:.6g} "
                f"< {eig[2]:.6g} (I1 + I2 >= I3 holds for every body: I1 + I2 - I3 = 2 ∫ z² dm); "
                f"check the moments of inertia")
    return None


def rotation_axes(R: sp.MatrixBase, coords: list[sp.Symbol], values: dict, samples: int = 4) -> int:
    """How many body axes the orientation ``R(x, u)`` turns about: 0 (it never turns), 1 (it
    turns about one fixed axis only, ``R = R0 · rot_a(θ(x, u))``: a planar body) or 3 (any other).

    Decided without derivatives: for a one-axis rotation every relative rotation
    ``R(q0)ᵀ R(qj)`` between random configurations turns about the same body axis ``a``.
    ``samples`` configurations are drawn around ``values`` (coordinates and inputs only; every
    symbol of ``R`` needs a value). One coordinate is decided the same way as several: a
    single angle can still turn the body about a moving axis (``rot_z(θ) · rot_x(0.3 θ)``).
    """
    qs = [q for q in coords if R.has(q)]
    if not qs:
        return 0
    syms = sorted(R.free_symbols, key=lambda s: s.name)
    try:
        f = sp.lambdify(syms, R.tolist(), modules="math")
        base = [float(values[s]) for s in syms]
        R0 = np.array(f(*base), dtype=float)
    except (KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError):
        return 3
    rng = np.random.default_rng(11)
    axes = []
    for _ in range(samples):
        pt = [v + float(rng.uniform(-1.0, 1.0)) if s in qs else v for s, v in zip(syms, base)]
        try:
            Rj = np.array(f(*pt), dtype=float)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            return 3
        W = R0.T @ Rj                                  # relative rotation, body frame
        w = np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])
        if np.linalg.norm(w) < 1e-9 and np.trace(W) > 3 - 1e-9:
            continue                                   # no rotation between these two points
        if np.linalg.norm(w) < 1e-9:
            return 3                                   # a half turn: axis ambiguous here, be safe
        axes.append(w / np.linalg.norm(w))
    if not axes:
        return 0
    A = np.array(axes)
    return 1 if np.linalg.matrix_rank(A, tol=1e-7) == 1 else 3


def _nonlinear_in_velocities(expr: sp.Expr, velocities: list[sp.Symbol], values: dict) -> str | None:
    """Decide symbolically that ``expr`` has no terms of degree > 1 in ``velocities``
    (every second derivative identically zero); the reason if it has, else None."""
    vs = [v for v in velocities if expr.has(v)]
    for v in vs:
        g = sp.diff(expr, v)
        for w in (w for w in vs if g.has(w)):
            h = sp.diff(g, w)
            if h == 0:
                continue
            num = _numeric(h, values)
            if num is None or abs(float(num)) > CHECK_TOL * max(1.0, abs(float(num))) \
                    or sp.simplify(h) != 0:
                return (f"it contains terms of degree > 1 in the velocities: d²/d{v.name} d{w.name} = "
                        f"{_short(h)} is not identically zero")
    return None


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
    # non-finite numbers and non-smooth functions of the state -----------------
    state = x | xd | u

    def find(e: sp.Expr) -> set:
        found = {("nonfinite", a) for a in e.atoms(*_NONFINITE)} if e.has(*_NONFINITE) else set()
        for node in e.atoms(*_NONSMOOTH):
            fs = set()
            for a in node.free_symbols:
                fs |= shared._free.get(a, {a})
            if fs & state:
                found.add(("nonsmooth", node))
        return found

    nonsmooth_in: set[str] = set()
    for i, ((_, where, _a, _v), marks) in enumerate(zip(entries, shared.marks(find))):
        if (where, "marks") in reported or not marks:
            continue
        reported.add((where, "marks"))
        bad_nums = sorted({str(a) for kind, a in marks if kind == "nonfinite"})
        if bad_nums:
            problems.append(f"{where} contains the non-finite number(s) {bad_nums} (e.g. a NaN or inf "
                            f"passed as a value); give finite values")
        nodes = sorted({_short(shared.full(a)) for kind, a in marks if kind == "nonsmooth"})
        if nodes and not where.endswith(("load #", "load")) and " load #" not in where:
            nonsmooth_in.add(where)
            problems.append(f"{where} contains the non-smooth function(s) {nodes} of the coordinates, "
                            f"velocities or inputs; the equations and their linearization need exact "
                            f"derivatives, which do not exist at its kink. Replace it by a smooth "
                            f"function, e.g. sqrt(v**2 + eps**2) for Abs(v) or tanh(v/eps) for sign(v)")

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
    vel_sets = {"v1": v1, "v2": v2, "0": {k: 0.0 for k in v1}}
    vel_degree = shared.velocity_degrees(xd) if nh_list else []
    for c in nh_list:
        i = nh_index[id(c)]
        if not (free_of[i] & xd):
            problems.append(f"nonholonomic constraint {c.name!r} = {c.expr} depends on positions only; "
                            f"it is holonomic: use mb.add_holonomic(...) instead")
            continue
        if free_of[i] - vel_ok or f"nonholonomic constraint {c.name!r}" in nonsmooth_in:
            continue  # unknown symbols / non-smooth functions already reported
        hi, lo = vel_degree[i]
        why = None if hi <= 1 else _nonlinear_in_velocities(c.expr, list(mb.velocities), values)
        if why is None and lo < 1 and not c.affine:  # not proven homogeneous: f(x, 0) must vanish
            f0 = c.expr.xreplace({v: sp.S.Zero for v in mb.velocities})
            if f0 != 0 and sp.simplify(f0) != 0:
                why = (f"it has a velocity-free term: at zero velocity it is {_short(f0)}, not "
                       "identically 0; if that is intended, add it with add_nonholonomic(..., affine=True)")
        if why is None and not c.affine:
            f = {}
            for key, vs in vel_sets.items():
                r = shared.evaluate([i], {**base, **{k: sp.Float(float(v)) for k, v in vs.items()}})
                f[key] = None if r is None else r[0]
            if all(v is not None for v in f.values()):
                scale = max(1.0, abs(f["v1"]), abs(f["v2"]))
                if abs(f["0"]) > CHECK_TOL * scale:
                    why = (f"it has a velocity-free term (value {f['0']:.3g} at zero velocity); "
                           "if that is intended, add it with add_nonholonomic(..., affine=True)")
        if why:
            problems.append(f"nonholonomic constraint {c.name!r} is not linear"
                            + ("" if c.affine else " and homogeneous")
                            + f" in the velocities ({why}); expected B(x) · xd"
                            + (" + b(x)" if c.affine else "")
                            + f" with xd = {[s.name for s in mb.velocities]}")

    # bodies -----------------------------------------------------------------
    for b in mb.bodies:
        mval = _numeric(b.mass, values)
        if mval is not None and not float(mval) > 0:
            problems.append(f"mass of body {b.name!r} is {float(mval)} with the default parameters; "
                            f"expected a positive mass")
        Ival = _numeric(b.inertia, values)
        if Ival is not None:
            why = inertia_problem(Ival, context=" with the default parameters")
            if why and "triangle" in why and rotation_axes(
                    b.orientation, list(mb.coordinates) + list(mb.inputs), values) <= 1:
                why = None  # turns about one body axis only: the other moments never enter
            if why:
                problems.append(f"inertia tensor of body {b.name!r} {why}")
        Rval = _numeric(b.orientation, values)
        if Rval is not None:
            err = float(np.max(np.abs(Rval @ Rval.T - np.eye(3))))
            det = float(np.linalg.det(Rval))
            if err > 1e-8 or abs(det - 1.0) > 1e-8:
                problems.append(f"orientation matrix of body {b.name!r} is not a rotation at a random point "
                                f"(max |R R^T - I| = {err:.3g}, det R = {det:.6g}); build it from "
                                f"rot_x/rot_y/rot_z or euler_rotation")
    return problems


__all__ = ["collect_problems", "CHECK_TOL", "inertia_problem", "rotation_axes"]
