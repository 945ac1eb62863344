"""Appell's equations with pseudo velocities: an independent formulation for cross-checks.

For a [`MultibodySystem`][nhcontrol.modeling.MultibodySystem] with coordinates ``x`` (n) and a
*velocity map* chosen by the user,

$$
\\dot x = \\Phi(x, u, t)\\, w + \\varphi(x, u, t),
$$

with ``w`` the pseudo velocities (``n - m - l`` of them), the map encodes every kinematic
constraint, including affine and rheonomic ones ``B(x, u, t) ẋ + b(x, u, t) = 0`` (the
affine part is ``φ``; e.g. a prescribed speed ``v_G · i_1 = V`` or a steering angle
driven by a rate input ``γ̇ = r``). The Gibbs--Appell function (acceleration energy,
derived here from the Newton--Euler equations of each body)

$$
S = \\sum_i \\tfrac12 m_i\\, a_{G_i}\\cdot a_{G_i}
+ \\tfrac12 \\bar\\alpha_i\\cdot \\bar I_i \\bar\\alpha_i
+ \\bar\\alpha_i\\cdot(\\bar\\omega_i \\times \\bar I_i \\bar\\omega_i)
$$

is generated symbolically as a function of ``(x, w, ẇ, u, t)`` (the accelerations
``a_Gi``, ``ᾱ_i`` are total time derivatives along the velocity map), and Appell's
equations

$$
\\frac{\\partial S}{\\partial \\dot w_k} = \\Pi_k, \\qquad
\\Pi_k = \\sum_{\\text{loads}} \\frac{\\partial v_P}{\\partial w_k}\\cdot F
+ \\frac{\\partial \\omega}{\\partial w_k}\\cdot T
$$

are linear in ``ẇ``: ``M_w ẇ = F_w`` with ``M_w = ∂²S/∂ẇ²`` and
``F_w = Π - ∂S/∂ẇ |_{ẇ = 0}``. No multiplier appears; the constraint forces do no work on
the admissible motions. Nothing here uses the Newton--Euler derivation
(`nhcontrol.modeling.equations`), so the two can check each other.

Inputs ``u`` are held constant by the time derivative (quasi-static, as in the rest of
the toolbox); an input whose rate matters is modelled as a coordinate driven by a rate
input through the velocity map (``γ̇ = r``), so that its rate is an ordinary input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from .._util.errors import ModelError
from .._util.reprs import concise_repr

__all__ = ["AppellEquations", "appell_equations"]


def _vee(W: sp.MatrixBase) -> sp.Matrix:
    return sp.Matrix([W[2, 1], W[0, 2], W[1, 0]])


@dataclass(frozen=True, eq=False)
class AppellEquations:
    """Appell's equations ``M_w(x, u, t) ẇ = F_w(x, w, u, t)`` with ``ẋ = Φ w + φ``.

    Attributes
    ----------
    x, w, u, p : tuple of sympy.Symbol
        Coordinates (n), pseudo velocities, inputs, parameters.
    t : sympy.Symbol
        Time symbol of the rheonomic terms.
    xdot : (n, 1) sympy.ImmutableMatrix
        The velocity map ``Φ w + φ``.
    S : sympy.Expr
        Gibbs--Appell function of ``(x, w, ẇ, u, t)``.
    wdot : tuple of sympy.Symbol
        The symbols ``ẇ`` used in ``S``.
    M_w : (nw, nw), F_w : (nw, 1) sympy.ImmutableMatrix
    defaults : dict
        Parameter defaults of the model.
    """

    __repr__ = concise_repr

    x: tuple
    w: tuple
    u: tuple
    p: tuple
    t: sp.Symbol
    xdot: sp.ImmutableMatrix
    S: sp.Expr = field(repr=False)
    wdot: tuple = field(repr=False)
    M_w: sp.ImmutableMatrix = field(repr=False)
    F_w: sp.ImmutableMatrix = field(repr=False)
    defaults: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return len(self.x)

    @property
    def nw(self) -> int:
        """Number of pseudo velocities (the degrees of freedom of velocity)."""
        return len(self.w)

    @property
    def first_order_odes(self) -> int:
        """``n + nw`` first-order equations (``ẋ = Φ w + φ`` and Appell's)."""
        return self.n + self.nw

    def rhs(self) -> Callable[..., NDArray[np.float64]]:
        """Numeric right-hand side ``f(t, s, u=None, p=None)`` of ``s = [x, w]``.

        Returns ``ṡ = [Φ w + φ, M_w⁻¹ F_w]`` (lambdified once from the symbolic result).
        """
        args = [self.t, list(self.x), list(self.w), list(self.u), list(self.p)]
        f_x = sp.lambdify(args, self.xdot, "numpy", cse=True)
        f_M = sp.lambdify(args, self.M_w, "numpy", cse=True)
        f_F = sp.lambdify(args, self.F_w, "numpy", cse=True)
        n, nw = self.n, self.nw
        p_def = np.array([self.defaults[str(s)] for s in self.p], dtype=float)
        nu = len(self.u)

        def f(t: float, s: ArrayLike, u: ArrayLike | None = None,
              p: ArrayLike | None = None) -> NDArray[np.float64]:
            s = np.asarray(s, dtype=float)
            uu = np.zeros(nu) if u is None else np.asarray(u, dtype=float).reshape(nu)
            pp = p_def if p is None else np.asarray(p, dtype=float)
            a = (t, s[:n], s[n:n + nw], uu, pp)
            xd = np.asarray(f_x(*a), dtype=float).reshape(n)
            if nw == 0:
                return xd
            M = np.asarray(f_M(*a), dtype=float).reshape(nw, nw)
            F = np.asarray(f_F(*a), dtype=float).reshape(nw)
            return np.concatenate([xd, np.linalg.solve(M, F)])

        return f


def _check_pseudo_velocities(mb: Any, pseudo_velocities: Sequence[Any]) -> list[sp.Symbol]:
    """Pseudo velocities must be distinct sympy Symbols, none a coordinate, input or parameter."""
    from .._util.errors import ArgumentTypeError
    try:
        w = list(pseudo_velocities)
    except TypeError:
        raise ArgumentTypeError(f"pseudo_velocities of model {mb.name!r} must be a sequence of sympy "
                                f"Symbols, got {pseudo_velocities!r}") from None
    bad = [repr(s) for s in w if not isinstance(s, sp.Symbol)]
    if bad:
        raise ArgumentTypeError(f"pseudo_velocities of model {mb.name!r} must be sympy Symbols (the ones "
                                f"used in the velocity map), got {', '.join(bad)}; create them with "
                                f"sympy.Symbol('w', real=True) and write the map with them")
    seen: set = set()
    dup = sorted({str(s) for s in w if s in seen or seen.add(s)})
    if dup:
        raise ModelError(f"pseudo_velocities of model {mb.name!r} repeat {dup}: each pseudo velocity is one "
                         f"independent speed; give each once")
    taken = {s: what for what, group in (("coordinate", mb.coordinates), ("input", mb.inputs),
                                         ("parameter", mb.parameters)) for s in group}
    clash = [f"{s} (a {taken[s]})" for s in w if s in taken]
    if clash:
        raise ModelError(f"pseudo_velocities of model {mb.name!r} include {clash}: a pseudo velocity must be "
                         f"a new symbol (or a velocity symbol), not a coordinate, input or parameter")
    return w


def _check_velocity_map(mb: Any, x: list, xdot: sp.Matrix, w: list, t: sp.Symbol, rates: dict) -> None:
    """The velocity map must satisfy every constraint for all pseudo velocities:
    ``B(x, u) (Φ w + φ) + b(x, u) = 0`` and ``C_x (Φ w + φ) (+ ∂C/∂u u̇) = 0`` on ``C(x) = 0``,
    and its columns ``Φ`` must be independent. Checked at random points (on the holonomic
    constraint manifold, found by Newton's method), so a map that lets a knife edge slip
    sideways is refused instead of giving Appell's equations of another system."""
    vel = list(mb.velocities)
    to_map = dict(zip(vel, list(xdot)))
    clock = getattr(mb, "clock", None)
    at_t = {clock: t} if clock is not None else {}
    u, p = list(mb.inputs), list(mb.parameters)
    names, resid, terms = [], [], []
    for c in mb.nonholonomic:
        e = sp.sympify(c.expr)
        Brow = [sp.diff(e, v) for v in vel]
        b = e.xreplace({v: 0 for v in vel})
        names.append(("nonholonomic", c.name))
        resid.append(e.xreplace(to_map).xreplace(at_t))
        terms.append([(Bi * xi).xreplace(at_t) for Bi, xi in zip(Brow, xdot) if Bi != 0] + [b.xreplace(at_t)])
    hol = [sp.sympify(c.expr) for c in mb.holonomic]
    for c, e in zip(mb.holonomic, hol):
        parts = [sp.diff(e, xi) * vi for xi, vi in zip(x, xdot)]
        parts += [sp.diff(e, uj) * rj for uj, rj in rates.items()]
        names.append(("holonomic", c.name))
        resid.append(sp.Add(*parts).xreplace(at_t))
        terms.append([q.xreplace(at_t) for q in parts if q != 0])
    Phi = xdot.jacobian(w) if w else sp.zeros(len(x), 0)
    args = [t, x, w, u, p]
    try:
        f_res = sp.lambdify(args, resid, "numpy")
        f_terms = sp.lambdify(args, [sp.Add(*[sp.Abs(q) for q in tr]) for tr in terms], "numpy")
        f_phi = sp.lambdify(args, Phi.xreplace(at_t), "numpy")
        f_C = sp.lambdify([x, u, p, t], [e.xreplace(at_t) for e in hol], "numpy") if hol else None
        f_Cx = sp.lambdify([x, u, p, t], sp.Matrix(hol).jacobian(x).xreplace(at_t), "numpy") if hol else None
    except Exception:  # pragma: no cover - an expression numpy cannot print: not checked
        return
    pdef = np.array([float(mb.defaults[str(s)]) for s in p], dtype=float)
    rng = np.random.default_rng(2209)
    checked = 0
    for _ in range(12):
        if checked >= 3:
            break
        xv = rng.uniform(-0.5, 0.5, len(x))
        uv = rng.uniform(-0.3, 0.3, len(u))
        tv = float(rng.uniform(0.1, 1.0))
        if clock is not None:
            xv[x.index(clock)] = tv
        wv = rng.uniform(-1.0, 1.0, len(w))
        with np.errstate(all="ignore"):
            if hol:
                for _it in range(30):     # Newton onto C(x) = 0 (least-norm steps)
                    Cv = np.asarray(f_C(xv, uv, pdef, tv), dtype=float).reshape(-1)
                    if not np.all(np.isfinite(Cv)) or np.max(np.abs(Cv)) < 1e-13:
                        break
                    J = np.asarray(f_Cx(xv, uv, pdef, tv), dtype=float).reshape(len(hol), len(x))
                    xv = xv - np.linalg.lstsq(J, Cv, rcond=None)[0]
                Cv = np.asarray(f_C(xv, uv, pdef, tv), dtype=float).reshape(-1)
                if not (np.all(np.isfinite(Cv)) and np.max(np.abs(Cv)) < 1e-10):
                    continue
            a = (tv, xv, wv, uv, pdef)
            try:
                r = np.asarray(f_res(*a), dtype=float).reshape(-1) if resid else np.zeros(0)
                sc = np.asarray(f_terms(*a), dtype=float).reshape(-1) if resid else np.zeros(0)
                P = np.asarray(f_phi(*a), dtype=float).reshape(len(x), len(w))
            except (ArithmeticError, ValueError, TypeError):
                continue
        if not (np.all(np.isfinite(r)) and np.all(np.isfinite(sc)) and np.all(np.isfinite(P))):
            continue
        checked += 1
        bad = np.flatnonzero(np.abs(r) > 1e-8 * (1.0 + sc))
        if bad.size:
            i = int(bad[0])
            kind, cname = names[i]
            where = ", ".join(f"{s} = {v:.3g}" for s, v in zip(x + w, list(xv) + list(wv)))
            level = "B(x, u) ẋ + b" if kind == "nonholonomic" else "C_x ẋ"
            text = str(resid[i])
            raise ModelError(
                f"the velocity map of model {mb.name!r} violates the {kind} constraint {cname!r}: "
                f"{level} = {r[i]:.3g} with ẋ = Φ w + φ at {where} (it must vanish for every value of "
                f"the pseudo velocities {[str(s) for s in w]}); the map allows motions the constraints "
                f"forbid, so Appell's equations would describe another system. Residual: "
                f"{text[:200]}{'...' if len(text) > 200 else ''}")
        if w:
            sv = np.linalg.svd(P, compute_uv=False)
            if sv[-1] <= 1e-10 * max(1.0, sv[0]):
                raise ModelError(
                    f"the pseudo velocities {[str(s) for s in w]} of model {mb.name!r} are not independent "
                    f"in the velocity map: Φ = ∂ẋ/∂w has rank {int(np.sum(sv > 1e-10 * max(1.0, sv[0])))} "
                    f"< {len(w)} (a pseudo velocity missing from the map, or two that always appear "
                    f"together); Appell's mass matrix M_w would be singular")


def appell_equations(mb: Any, velocity_map: Sequence[Any], pseudo_velocities: Sequence[sp.Symbol],
                     *, time: sp.Symbol | None = None,
                     input_rates: dict | None = None) -> AppellEquations:
    """Derive Appell's equations of ``mb`` for the velocity map ``ẋ = Φ w + φ``.

    Parameters
    ----------
    mb : MultibodySystem
        Bodies and loads (gravity, forces, torques, generalized forces) are used; its
        constraints must be satisfied by the velocity map, ``B(Φ w + φ) + b = 0`` for every
        ``w`` (checked here at random points; with a clock, ``τ = t``).
    velocity_map : (n,) sympy expressions
        ``ẋ`` as expressions of ``x, w, u, t`` and parameters, affine in ``w``.
    pseudo_velocities : sequence of sympy.Symbol
        ``w``.
    time : sympy.Symbol, optional
        The symbol ``t`` of explicit time dependence (created when omitted).
    input_rates : dict, optional
        ``{u_j: r_j}``: input ``u_j`` whose rate is the input ``r_j`` (a rheonomic input,
        e.g. an assigned steering angle); the total time derivative adds
        ``∂(·)/∂u_j r_j``. Other inputs are quasi-static.

    Returns
    -------
    AppellEquations

    Raises
    ------
    ModelError
        Wrong length of the map, a map not affine in ``w``, a map that violates a constraint
        (``B (Φ w + φ) + b ≠ 0`` or ``C_x (Φ w + φ) ≠ 0`` at random points, on ``C = 0``),
        dependent or repeated pseudo velocities, or a load Appell's route does not handle
        (springs, dampers: add them as forces).
    ArgumentTypeError
        Pseudo velocities that are not sympy Symbols (strings).
    """
    x = list(mb.coordinates)
    n = len(x)
    w = _check_pseudo_velocities(mb, pseudo_velocities)
    t = time if time is not None else sp.Symbol("t", real=True)
    xdot = sp.Matrix([sp.sympify(e) for e in velocity_map])
    if xdot.shape != (n, 1):
        raise ModelError(f"velocity map of model {mb.name!r} must give one expression per coordinate "
                         f"{[str(s) for s in x]} (n = {n}), got {xdot.shape[0]}")
    for k, e in enumerate(xdot):
        for wk in w:
            if sp.diff(e, wk, 2) != 0:
                raise ModelError(f"velocity map entry for {x[k]} is not affine in the pseudo velocity "
                                 f"{wk}: {e}; write it as Phi(x, u, t) w + phi(x, u, t)")
    wd = [sp.Symbol(f"{s}_dot", real=True) for s in w]
    rates = dict(input_rates or {})
    for uj, rj in rates.items():
        if uj not in mb.inputs or rj not in mb.inputs:
            raise ModelError(f"input_rates of model {mb.name!r}: {uj} -> {rj} must map an input to "
                             f"an input; inputs: {[str(s) for s in mb.inputs]}")
    _check_velocity_map(mb, x, xdot, w, t, rates)

    def ddt(e: Any) -> Any:
        """Total time derivative along the velocity map (inputs quasi-static)."""
        e = sp.sympify(e) if not isinstance(e, sp.MatrixBase) else e
        out = sp.diff(e, t)
        for xi, vi in zip(x, xdot):
            out = out + sp.diff(e, xi) * vi
        for wi, wdi in zip(w, wd):
            out = out + sp.diff(e, wi) * wdi
        for uj, rj in rates.items():
            out = out + sp.diff(e, uj) * rj
        return out

    S = sp.Integer(0)
    vel: dict[int, tuple[sp.Matrix, sp.Matrix]] = {}
    for body in mb.bodies:
        rG = sp.Matrix(body.position)
        vG = ddt(rG)
        aG = ddt(vG)
        R = sp.Matrix(body.orientation)
        om = _vee(R.T * ddt(R))
        al = ddt(om)
        I = sp.Matrix(body.inertia)
        S += body.mass * (aG.T * aG)[0] / 2 + (al.T * I * al)[0] / 2 + (al.T * om.cross(I * om))[0]
        vel[body.index] = (vG, R * om)
    Sg = sp.Matrix(len(wd), 1, [sp.diff(S, s) for s in wd])
    M_w = Sg.jacobian(wd) if wd else sp.zeros(0, 0)
    Pi = sp.zeros(len(w), 1)

    def add_point(body, F, P):
        vP = vel[body.index][0] + vel[body.index][1].cross(sp.Matrix(P) - sp.Matrix(body.position))
        for k, wk in enumerate(w):
            Pi[k] += (sp.diff(vP, wk).T * sp.Matrix(F))[0]

    for load in mb.loads:
        if load.kind == "gravity":
            g, e = load.data
            for body in mb.bodies:
                add_point(body, body.mass * g * sp.Matrix(e), body.position)
        elif load.kind == "force":
            body, F, P = load.data
            add_point(body, F, P)
        elif load.kind == "torque":
            body, T = load.data
            omg = vel[body.index][1]
            for k, wk in enumerate(w):
                Pi[k] += (sp.diff(omg, wk).T * sp.Matrix(T))[0]
        elif load.kind == "generalized":
            (Q,) = load.data
            for k, wk in enumerate(w):
                Pi[k] += (sp.diff(xdot, wk).T * sp.Matrix(Q))[0]
        else:
            raise ModelError(f"Appell's equations of model {mb.name!r}: load kind {load.kind!r} is not "
                             f"supported; add it as a force on the bodies (add_force)")
    F_w = Pi - Sg.subs({s: 0 for s in wd})
    return AppellEquations(x=tuple(x), w=tuple(w), u=tuple(mb.inputs), p=tuple(mb.parameters), t=t,
                           xdot=sp.ImmutableMatrix(xdot), S=S, wdot=tuple(wd),
                           M_w=sp.ImmutableMatrix(M_w), F_w=sp.ImmutableMatrix(F_w),
                           defaults=dict(mb.defaults))
