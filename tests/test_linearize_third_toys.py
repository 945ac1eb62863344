"""Toy models for the third-procedure tests (plain sympy, independent of nhcontrol.compiled).

* :class:`ToyModel` — a duck-typed ``CompiledModel`` (kernels and the fused
  ``linearization_terms`` of docs/dev/contracts.md section 2) built from sympy ``M, Q, C, B``
  with ``sympy.diff`` + ``lambdify``.
* :func:`pendulum` (n = 2, m = 1, l = 0), :func:`sleigh` (Chaplygin sleigh, n = 3, m = 0,
  l = 1), :func:`sleigh_redundant` (the same sleigh with the centre of mass as extra
  coordinates, n = 5, m = 2, l = 1, singular mass matrix).
* :class:`ToyReference` — a duck-typed ``Reference``.
* :func:`reduced_vector_field` — the nonlinear reduced ODE ``Ẋ = F(X, u)`` for
  ``X = [x_ai, ẋ_ai, x_ad]``, built from the index-1 DAE (Eq. (2.127)) with Newton on
  ``C(x) = 0``; its central-difference Jacobian validates ``A`` and ``B`` (tests only).

The one test in this file checks the toy kernels against central differences.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import numpy as np
import pytest
import sympy as sp

from _helpers import LambdifiedKernels


class ToyModel(LambdifiedKernels):
    """Duck-typed ``CompiledModel`` from sympy expressions (loops over points: tests only)."""

    def __init__(self, name, x, xd, u, p, defaults, M, Q, C, B):
        self.name = name
        self.coordinates = tuple(str(s) for s in x)
        self.velocities = tuple(str(s) for s in xd)
        self.inputs = tuple(str(s) for s in u)
        self.parameters = {str(s): float(defaults[str(s)]) for s in p}
        X, XD, U = sp.Matrix(x), sp.Matrix(xd), sp.Matrix(u)
        C = sp.Matrix(C) if len(C) else sp.zeros(0, 1)
        B = sp.Matrix(B) if len(B) else sp.zeros(0, len(x))
        self.n, self.m, self.l, self.ninputs = len(x), C.shape[0], B.shape[0], len(u)
        self.holonomic_names = tuple(f"C{i}" for i in range(self.m))
        self.nonholonomic_names = tuple(f"B{i}" for i in range(self.l))
        n, c = self.n, self.m + self.l
        a = sp.Matrix(sp.symbols(f"a0:{n}"))
        v = sp.Matrix(sp.symbols(f"v0:{n}"))
        lam = sp.Matrix(sp.symbols(f"lam0:{c}")) if c else sp.zeros(0, 1)
        Cx = C.jacobian(X) if self.m else sp.zeros(0, n)
        D = Cx.col_join(B) if c else sp.zeros(0, n)
        Qd = -(D * XD).jacobian(X) * XD if c else sp.zeros(0, 1)
        M, Q = sp.Matrix(M), sp.Matrix(Q)

        def jac(e, wrt):
            if e.shape[0] == 0 or len(wrt) == 0:
                return sp.zeros(e.shape[0], len(wrt))
            return e.jacobian(wrt)

        exprs = {
            "M": M, "Q": Q, "C": C, "Cx": Cx, "B": B, "D": D, "Qd": Qd,
            "dMa_dx": jac(M * a, X), "dMa_du": jac(M * a, U),
            "dDTlam_dx": jac(D.T * lam, X) if c else sp.zeros(n, n),
            "dQ_dx": jac(Q, X), "dQ_dxd": jac(Q, XD), "dQ_du": jac(Q, U),
            "dDv_dx": jac(D * v, X), "dDa_dx": jac(D * a, X), "dDa_du": jac(D * a, U),
            "dQd_dx": jac(Qd, X), "dQd_dxd": jac(Qd, XD), "dQd_du": jac(Qd, U),
            "dCxv_dx": jac(Cx * v, X), "dBv_dx": jac(B * v, X), "dC_du": jac(C, U),
        }
        self._syms = [*x, *xd, *a, *lam, *v, *u, *p]
        self._fn = {k: (sp.lambdify(self._syms, e, "numpy"), e.shape) for k, e in exprs.items()}
        self._pdef = np.array(list(self.parameters.values()))

    # kernels of contracts section 2 (the subset the tests need)
    def M(self, x, u=None, p=None):
        return self._eval("M", x, u=u, p=p)

    def Q(self, x, xd, u=None, p=None):
        return self._eval("Q", x, xd=xd, u=u, p=p).reshape(np.shape(x))

    def C(self, x, u=None, p=None):
        return self._eval("C", x, u=u, p=p)[..., 0] if self.m else np.zeros(
            np.shape(x)[:-1] + (0,))

    def Cx(self, x, u=None, p=None):
        return self._eval("Cx", x, u=u, p=p)

    def B(self, x, u=None, p=None):
        return self._eval("B", x, u=u, p=p)

    def D(self, x, u=None, p=None):
        return self._eval("D", x, u=u, p=p)

    def Qd(self, x, xd, u=None, p=None):
        c = self.m + self.l
        return self._eval("Qd", x, xd=xd, u=u, p=p).reshape(np.shape(x)[:-1] + (c,))

    def dQ_du(self, x, xd, u=None, p=None):
        return self._eval("dQ_du", x, xd=xd, u=u, p=p)

    def linearization_terms(self, x, xd, xdd, lam, u=None, p=None):
        kw = dict(xd=xd, a=xdd, lam=lam, v=xd, u=u, p=p)
        fields = {k: self._eval(k, x, **kw) for k in self._fn}
        fields["Q"] = fields["Q"][..., 0]
        fields["Qd"] = fields["Qd"][..., 0]
        del fields["C"]
        return SimpleNamespace(**fields)


@dataclass(frozen=True)
class ToyReference:
    """Duck-typed ``Reference``: callables of t (scalar → (n,), (N,) → (N, n))."""

    fx: Callable
    fxd: Callable
    fxdd: Callable
    flam: Callable
    fu: Callable
    steady: bool
    parameters: np.ndarray

    def _v(self, f, t):
        t = np.asarray(t, float)
        if t.ndim == 0:
            return np.asarray(f(float(t)), float)
        return np.array([f(float(s)) for s in t], float)

    def x(self, t):
        return self._v(self.fx, t)

    def xd(self, t):
        return self._v(self.fxd, t)

    def xdd(self, t):
        return self._v(self.fxdd, t)

    def lam(self, t):
        return self._v(self.flam, t)

    def u(self, t):
        return self._v(self.fu, t)


def index1(cm, x, xd, u, p=None):
    """ẍ and Λ from the index-1 DAE, Eq. (2.127) (lstsq: M may be singular)."""
    n, c = cm.n, cm.m + cm.l
    M, Q, D, Qd = cm.M(x, u, p), cm.Q(x, xd, u, p), cm.D(x, u, p), cm.Qd(x, xd, u, p)
    K = np.block([[M, D.T], [D, np.zeros((c, c))]])
    sol = np.linalg.solve(K, np.concatenate([Q, Qd]))
    return sol[:n], sol[n:]


def inverse_dynamics(cm, x, xd, xdd, actuated=True, p=None):
    """Λ0 (and u0 if ``actuated``) with M ẍ + DᵀΛ = Q(u) for Q affine in u."""
    n, c, k = cm.n, cm.m + cm.l, cm.ninputs
    u0 = np.zeros(k)
    D = cm.D(x, u0, p)
    r = cm.Q(x, xd, u0, p) - cm.M(x, u0, p) @ xdd
    if actuated and k:
        Gu = cm.dQ_du(x, xd, u0, p)
        sol, *_ = np.linalg.lstsq(np.hstack([D.T, -Gu]), r, rcond=None)
        return sol[:c], sol[c:]
    sol, *_ = np.linalg.lstsq(D.T, r, rcond=None)
    return sol, u0


def constant_reference(cm, x0, xd0, u0=None, steady=True):
    """Reference through a consistent point moving with constant ẋ0 (x0 + ẋ0 t)."""
    u0 = np.zeros(cm.ninputs) if u0 is None else np.asarray(u0, float)
    xdd0, lam0 = index1(cm, x0, xd0, u0)
    x0, xd0 = np.asarray(x0, float), np.asarray(xd0, float)
    return ToyReference(lambda t: x0 + xd0 * t, lambda t: xd0, lambda t: xdd0,
                        lambda t: lam0, lambda t: u0, steady, cm._pdef.copy())


def point_reference(cm, x0, xd0, u0=None):
    """A reference "through" one consistent point (same values for every t)."""
    u0 = np.zeros(cm.ninputs) if u0 is None else np.asarray(u0, float)
    xdd0, lam0 = index1(cm, x0, xd0, u0)
    return ToyReference(lambda t: x0, lambda t: xd0, lambda t: xdd0, lambda t: lam0,
                        lambda t: u0, False, cm._pdef.copy())


# ------------------------------------------------------------------------------- models
def pendulum():
    """Point mass on a massless rod in Cartesian coordinates; horizontal force input F."""
    x, y = sp.symbols("x y")
    xd_, yd_ = sp.symbols("x_d y_d")
    F = sp.Symbol("F")
    mass, g, L = sp.symbols("mass g L")
    return ToyModel("pendulum", [x, y], [xd_, yd_], [F], [mass, g, L],
                    {"mass": 2.0, "g": 9.81, "L": 1.5},
                    sp.diag(mass, mass), [F, -mass * g], [x**2 + y**2 - L**2], [])


def winch():
    """A point mass on a rope of length ``ell`` given as an input: ``x² + y² − ell² = 0`` (an
    input in a holonomic constraint, quasi-static), at rest hanging 1.5 m below the pivot."""
    x, y, ell = sp.symbols("x y ell")
    mass, g = sp.symbols("mass g")
    cm = ToyModel("winch", [x, y], list(sp.symbols("x_d y_d")), [ell], [mass, g],
                  {"mass": 2.0, "g": 9.81}, sp.diag(mass, mass), [0, -mass * g],
                  [x**2 + y**2 - ell**2], [])
    return cm, constant_reference(cm, np.array([0.0, -1.5]), np.zeros(2), u0=np.array([1.5]))


def _sleigh_syms():
    return sp.symbols("mass I_G a")


def sleigh():
    """Chaplygin sleigh: contact point (x, y), heading theta, CoM at distance a along the blade.

    Inputs: force F along the blade at the contact point, torque tau.
    """
    x, y, th = sp.symbols("x y theta")
    xd_, yd_, thd = sp.symbols("x_d y_d theta_d")
    F, tau = sp.symbols("F tau")
    mass, I, a = _sleigh_syms()
    c, s = sp.cos(th), sp.sin(th)
    J = sp.Matrix([[1, 0, -a * s], [0, 1, a * c]])
    M = mass * J.T * J + sp.diag(0, 0, I)
    Jdot_xd = sp.Matrix([-a * c * thd**2, -a * s * thd**2])
    Q = -mass * J.T * Jdot_xd + sp.Matrix([F * c, F * s, tau])
    return ToyModel("sleigh", [x, y, th], [xd_, yd_, thd], [F, tau], [mass, I, a],
                    {"mass": 3.0, "I_G": 0.4, "a": 0.25}, M, Q, [],
                    sp.Matrix([[-s, c, 0]]))


def sleigh_redundant():
    """The sleigh with the CoM (xg, yg) as extra coordinates: m = 2 holonomic constraints.

    M = diag(0, 0, mass, mass, I_G) is singular (no mass at the contact point).
    """
    xp, yp, xg, yg, th = sp.symbols("xp yp xg yg theta")
    vel = sp.symbols("xp_d yp_d xg_d yg_d theta_d")
    F, tau = sp.symbols("F tau")
    mass, I, a = _sleigh_syms()
    c, s = sp.cos(th), sp.sin(th)
    M = sp.diag(0, 0, mass, mass, I)
    Q = sp.Matrix([F * c, F * s, 0, 0, tau])
    C = [xg - xp - a * c, yg - yp - a * s]
    B = sp.Matrix([[-s, c, 0, 0, 0]])
    return ToyModel("sleigh_redundant", [xp, yp, xg, yg, th], list(vel), [F, tau],
                    [mass, I, a], {"mass": 3.0, "I_G": 0.4, "a": 0.25}, M, Q, C, B)


def sleigh_state(v, theta, omega=0.0, a=0.25, redundant=False):
    """A consistent (x0, ẋ0) of the (redundant) sleigh moving at speed v, heading theta."""
    c, s = np.cos(theta), np.sin(theta)
    x = np.array([0.0, 0.0, theta])
    xd = np.array([v * c, v * s, omega])
    if not redundant:
        return x, xd
    xr = np.array([0.0, 0.0, a * c, a * s, theta])
    xdr = np.array([v * c, v * s, v * c - a * s * omega, v * s + a * c * omega, omega])
    return xr, xdr


# ------------------------------------------------------------------ reduced vector field
def reduced_vector_field(cm, partition, x_ref, p=None):
    """``F(X, u)`` with ``X = [x_ai, ẋ_ai, x_ad]`` (nonlinear; Newton on C(x) = 0 for x_d)."""
    coords = list(cm.coordinates)
    ai = [coords.index(s) for s in partition.independent]
    ad = [coords.index(s) for s in partition.admissible_dependent]
    d = [coords.index(s) for s in partition.dependent]
    dd = ad + d
    n1 = len(ai)

    def F(X, u):
        x = np.array(x_ref, float)
        x[ai] = X[:n1]
        x[ad] = X[2 * n1:]
        for _ in range(50):
            if not d:
                break
            r = cm.C(x, u, p)
            step = np.linalg.solve(cm.Cx(x, u, p)[:, d], r)
            x[d] -= step
            if np.max(np.abs(step)) < 1e-15:
                break
        D = cm.D(x, u, p)
        xd = np.zeros(cm.n)
        xd[ai] = X[n1:2 * n1]
        if dd:
            xd[dd] = -np.linalg.solve(D[:, dd], D[:, ai] @ X[n1:2 * n1])
        xdd, _ = index1(cm, x, xd, u, p)
        return np.concatenate([xd[ai], xdd[ai], xd[ad]])

    return F


def fd_linearization(cm, partition, x0, xd0, u0, h=1e-6):
    """Central-difference A, B of :func:`reduced_vector_field` at a consistent point."""
    coords = list(cm.coordinates)
    ai = [coords.index(s) for s in partition.independent]
    ad = [coords.index(s) for s in partition.admissible_dependent]
    X0 = np.concatenate([x0[ai], xd0[ai], x0[ad]])
    F = reduced_vector_field(cm, partition, x0)
    u0 = np.asarray(u0, float)
    A = np.column_stack([(F(X0 + h * e, u0) - F(X0 - h * e, u0)) / (2 * h)
                         for e in np.eye(X0.size)])
    B = np.column_stack([(F(X0, u0 + h * e) - F(X0, u0 - h * e)) / (2 * h)
                         for e in np.eye(u0.size)]) if u0.size else np.zeros((X0.size, 0))
    return A, B


@pytest.mark.parametrize("make", [pendulum, sleigh, sleigh_redundant])
def test_toy_kernels_match_central_differences(make):
    """The toy derivative kernels equal central differences of M a, Q, D v (rtol 1e-6)."""
    cm = make()
    rng = np.random.default_rng(1)
    n, c, k = cm.n, cm.m + cm.l, cm.ninputs
    x, xd, a, lam, u = (rng.normal(size=n), rng.normal(size=n), rng.normal(size=n),
                        rng.normal(size=c), rng.normal(size=k))
    T = cm.linearization_terms(x, xd, a, lam, u)
    h = 1e-6
    E = np.eye(n)
    fd_Ma = np.column_stack([(cm.M(x + h * e, u) @ a - cm.M(x - h * e, u) @ a) / (2 * h)
                             for e in E])
    fd_Q = np.column_stack([(cm.Q(x + h * e, xd, u) - cm.Q(x - h * e, xd, u)) / (2 * h)
                            for e in E])
    fd_Dv = np.column_stack([(cm.D(x + h * e, u) @ xd - cm.D(x - h * e, u) @ xd) / (2 * h)
                             for e in E])
    np.testing.assert_allclose(T.dMa_dx, fd_Ma, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(T.dQ_dx, fd_Q, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(T.dDv_dx, fd_Dv, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(T.Qd, -T.dDv_dx @ xd, rtol=1e-12, atol=1e-12)
