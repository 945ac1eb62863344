"""Small hand-written models exposing the CompiledModel kernel interface (contract section 2).

They are independent of ``nhcontrol.modeling``/``nhcontrol.compiled`` (written by hand from the
textbook equations) and are used by the reference and simulate tests. The tests in this file
check the hand-written kernels themselves (Qd against central differences, D = [Cx; B]).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp


class ToyModel:
    """A model given by sympy expressions M(x,u,p), Q(x,xd,u,p), C(x,u,p), B(x,u,p).

    Cx, D = [Cx; B] and Qd = -∂(D xd)/∂x · xd (Eq. (2.117)) are derived symbolically.
    Kernels accept one point or N stacked points, like a CompiledModel.
    """

    def __init__(self, name, coords, M, Q, C, B, params, inputs=()):
        self.name = name
        self._q = list(coords)
        self.coordinates = tuple(str(s) for s in coords)
        self._qd = [sp.Symbol(f"{s}_d") for s in self.coordinates]
        self.velocities = tuple(str(s) for s in self._qd)
        self._u = list(inputs)
        self.inputs = tuple(str(s) for s in inputs)
        self._p = list(params)
        self.parameters = {str(k): float(v) for k, v in params.items()}
        self.n, self.ninputs = len(coords), len(inputs)
        C = sp.Matrix(C) if C is not None else sp.zeros(0, 1)
        B = sp.Matrix(B) if B is not None else sp.zeros(0, self.n)
        self.m, self.l = C.shape[0], B.shape[0]
        self.holonomic_names = tuple(f"hol{i}" for i in range(self.m))
        self.nonholonomic_names = tuple(f"nh{i}" for i in range(self.l))
        self.model_hash = name
        q, qd = sp.Matrix(self._q), sp.Matrix(self._qd)
        Cx = C.jacobian(q) if self.m else sp.zeros(0, self.n)
        D = Cx.col_join(B) if (self.m + self.l) else sp.zeros(0, self.n)
        Qd = -(D * qd).jacobian(q) * qd if (self.m + self.l) else sp.zeros(0, 1)
        args = (self._q, self._qd, self._u, self._p)
        self._f = {}
        for key, expr, shape in (("M", sp.Matrix(M), (self.n, self.n)),
                                 ("Q", sp.Matrix(Q), (self.n,)), ("C", C, (self.m,)),
                                 ("Cx", Cx, (self.m, self.n)), ("B", B, (self.l, self.n)),
                                 ("D", D, (self.m + self.l, self.n)),
                                 ("Qd", Qd, (self.m + self.l,))):
            self._f[key] = (sp.lambdify(args, expr, "numpy"), shape)

    def param_vector(self, **overrides):
        bad = set(overrides) - set(self.parameters)
        if bad:
            raise ValueError(f"unknown parameters {sorted(bad)}")
        d = dict(self.parameters, **overrides)
        return np.array([d[k] for k in self.parameters])

    def _eval(self, key, x, xd, u, p):
        f, shape = self._f[key]
        x = np.asarray(x, float)
        p = self.param_vector() if p is None else np.asarray(p, float)
        single = x.ndim == 1
        X = np.atleast_2d(x)
        XD = np.zeros_like(X) if xd is None else np.atleast_2d(np.asarray(xd, float))
        N = X.shape[0]
        if u is None:
            U = np.zeros((N, self.ninputs))
        else:
            U = np.broadcast_to(np.atleast_2d(np.asarray(u, float)), (N, self.ninputs))
        out = np.empty((N, *shape))
        for i in range(N):
            out[i] = np.asarray(f(X[i], XD[i], U[i], p), float).reshape(shape)
        return out[0] if single else out

    def M(self, x, u=None, p=None):
        return self._eval("M", x, None, u, p)

    def Q(self, x, xd, u=None, p=None):
        return self._eval("Q", x, xd, u, p)

    def C(self, x, u=None, p=None):
        return self._eval("C", x, None, u, p)

    def Cx(self, x, u=None, p=None):
        return self._eval("Cx", x, None, u, p)

    def B(self, x, u=None, p=None):
        return self._eval("B", x, None, u, p)

    def D(self, x, u=None, p=None):
        return self._eval("D", x, None, u, p)

    def Qd(self, x, xd, u=None, p=None):
        return self._eval("Qd", x, xd, u, p)


def pendulum():
    """Planar pendulum, Cartesian (X, Y), C = (X² + Y² - L²)/2; tension T = λ L."""
    X, Y = sp.symbols("X Y")
    m, g, L = sp.symbols("m g L")
    return ToyModel("pendulum", [X, Y], sp.diag(m, m), [0, -m * g],
                    [(X**2 + Y**2 - L**2) / 2], None, {m: 1.5, g: 9.81, L: 0.8})


def sleigh():
    """Chaplygin sleigh (x, y, th): knife edge at distance a behind G, -s ẋ + c ẏ - a θ̇ = 0."""
    x, y, th = sp.symbols("x y th")
    m, I, a = sp.symbols("m I a")
    B = [[-sp.sin(th), sp.cos(th), -a]]
    return ToyModel("sleigh", [x, y, th], sp.diag(m, m, I), [0, 0, 0], None, B,
                    {m: 2.0, I: 0.3, a: 0.0})


def cart():
    """Point mass on the line Y = 0 pushed by a force F: Ẍ = F/m, a double integrator."""
    X, Y, F = sp.symbols("X Y F")
    m, g = sp.symbols("m g")
    return ToyModel("cart", [X, Y], sp.diag(m, m), [F, -m * g], [Y], None, {m: 2.0, g: 9.81},
                    inputs=[F])


def cart_pendulum():
    """Cart (s) with a pendulum bob in Cartesian coordinates (X, Y), force F on the cart."""
    s, X, Y, F = sp.symbols("s X Y F")
    mc, mb, g, L = sp.symbols("m_c m_b g L")
    C = [((X - s)**2 + Y**2 - L**2) / 2]
    return ToyModel("cart_pendulum", [s, X, Y], sp.diag(mc, mb, mb), [F, 0, -mb * g], C, None,
                    {mc: 1.0, mb: 0.5, g: 9.81, L: 0.6}, inputs=[F])


ALL = {"pendulum": pendulum, "sleigh": sleigh, "cart": cart, "cart_pendulum": cart_pendulum}


@pytest.mark.parametrize("name", sorted(ALL))
def test_toy_Qd_is_minus_dDxd_dx_xd(name):
    """Qd = -∂(D xd)/∂x · xd (Eq. (2.117)) checked by central differences (h = 1e-6, tol 1e-7)."""
    cm = ALL[name]()
    rng = np.random.default_rng(1)
    x, xd = rng.normal(size=cm.n), rng.normal(size=cm.n)
    u = rng.normal(size=cm.ninputs)
    h = 1e-6
    J = np.zeros((cm.m + cm.l, cm.n))
    for j in range(cm.n):
        e = np.zeros(cm.n)
        e[j] = h
        J[:, j] = (cm.D(x + e, u) @ xd - cm.D(x - e, u) @ xd) / (2 * h)
    np.testing.assert_allclose(cm.Qd(x, xd, u), -J @ xd, atol=1e-7)
    if cm.m:
        np.testing.assert_allclose(cm.D(x, u)[: cm.m], cm.Cx(x, u), atol=0)


def test_toy_stacking_matches_single_points():
    """Stacked evaluation equals point-wise evaluation (exactly)."""
    cm = cart_pendulum()
    X = np.random.default_rng(2).normal(size=(4, 3))
    assert cm.M(X).shape == (4, 3, 3)
    np.testing.assert_array_equal(cm.Qd(X, X, np.ones(1))[2], cm.Qd(X[2], X[2], np.ones(1)))
