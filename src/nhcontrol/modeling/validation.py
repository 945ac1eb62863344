"""Model checks behind :meth:`MultibodySystem.validate` (all problems collected at once)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import numpy as np
import sympy as sp

if TYPE_CHECKING:  # pragma: no cover
    from .system import MultibodySystem

#: Tolerance of the numeric checks (orthogonality, symmetry, semidefiniteness, linearity).
CHECK_TOL = 1e-9


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
    def check_symbols(expr, where: str, allowed: set, allow_vel: bool) -> None:
        free = expr.free_symbols
        bad = free - allowed
        if not bad:
            return
        vel = bad & xd
        other = bad - xd
        if vel and not allow_vel:
            problems.append(f"{where} depends on velocities {_names(vel)}; positions, orientations, "
                            f"inertias and holonomic constraints may depend only on x, u and parameters")
        if other:
            hint = ", ".join(f"{s.name}=<value>" for s in sorted(other, key=lambda s: s.name))
            problems.append(f"{where} contains unknown symbol(s) {_names(other)} that are neither "
                            f"coordinates, velocities, parameters nor inputs; declare them with "
                            f"mb.add_parameters({hint}) (or add_inputs/add_coordinates)")

    for b in mb.bodies:
        check_symbols(b.mass, f"mass of body {b.name!r}", pos_ok, False)
        check_symbols(b.inertia, f"inertia of body {b.name!r}", pos_ok, False)
        check_symbols(b.position, f"position of body {b.name!r}", pos_ok, False)
        check_symbols(b.orientation, f"orientation of body {b.name!r}", pos_ok, False)
    for c in mb.constraints:
        allow = c.kind == "nonholonomic"
        check_symbols(c.expr, f"{c.kind} constraint {c.name!r}", vel_ok if allow else pos_ok, allow)
    for k, ld in enumerate(mb.loads):
        for d in ld.data:
            if isinstance(d, (sp.Basic, sp.MatrixBase)):
                check_symbols(d, f"{ld.kind} load #{k}", vel_ok, True)

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
    for c in mb.constraints:
        deps_x = c.expr.free_symbols & x
        if c.kind == "holonomic":
            if not deps_x:
                problems.append(f"holonomic constraint {c.name!r} = {c.expr} does not depend on any "
                                f"coordinate; it cannot be satisfied by the motion (remove it)")
            continue
        deps_v = c.expr.free_symbols & xd
        if not deps_v:
            problems.append(f"nonholonomic constraint {c.name!r} = {c.expr} depends on positions only; "
                            f"it is holonomic: use mb.add_holonomic(...) instead")
            continue
        at_rest = c.expr.xreplace({v: 0 for v in mb.velocities})
        hess = [c.expr.diff(vi).diff(vj) for i, vi in enumerate(mb.velocities)
                for vj in mb.velocities[i:]]
        nonlin = [h for h in hess if h != 0]
        bad = False
        if nonlin:
            vals = [_numeric(h, values) for h in nonlin]
            bad = any(v is None or abs(float(v)) > CHECK_TOL for v in vals)
        offset = at_rest != 0 and (lambda v: v is None or abs(float(v)) > CHECK_TOL)(_numeric(at_rest, values))
        if bad or offset:
            why = "it contains terms of degree > 1 in the velocities" if bad else \
                f"it has a velocity-free term {sp.simplify(at_rest)}"
            problems.append(f"nonholonomic constraint {c.name!r} is not linear and homogeneous in the "
                            f"velocities ({why}); expected B(x) · xd with xd = {[s.name for s in mb.velocities]}")
        B = sp.Matrix([c.expr]).jacobian(sp.Matrix(mb.velocities))
        if not (B.free_symbols & x) and not bad and not offset:
            pass  # constant B: integrable but admissible (e.g. rolling on a line)

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
