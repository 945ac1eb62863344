"""Test helpers for the validation procedures (no tests are collected from this module).

:class:`SympyKernels` -- kernels of docs/dev/contracts.md section 2 built directly from a model's
symbolic ``EquationsOfMotion`` with plain ``sympy.diff`` + ``lambdify``. It is independent of
``nhcontrol.compiled`` (generated code, CSE, cache), so comparing the two checks the code
generator too.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from _helpers import LambdifiedKernels


class SympyKernels(LambdifiedKernels):
    """Duck-typed ``CompiledModel`` built from ``EquationsOfMotion`` by plain sympy."""

    def __init__(self, eom, defaults, name="model", holonomic_names=(), nonholonomic_names=()):
        x, xd, u, p = list(eom.x), list(eom.xd), list(eom.u), list(eom.p)
        self.name = name
        self.coordinates = tuple(str(s) for s in x)
        self.velocities = tuple(str(s) for s in xd)
        self.inputs = tuple(str(s) for s in u)
        self.parameters = {str(s): float(defaults[str(s)]) for s in p}
        self.n, self.m, self.l, self.ninputs = len(x), eom.C.shape[0], eom.B.shape[0], len(u)
        n, c = self.n, self.m + self.l
        a = sp.symbols(f"a0:{n}")
        v = sp.symbols(f"v0:{n}")
        lam = sp.symbols(f"lam0:{max(c, 1)}")[:c]
        X = sp.Matrix(x)
        self._args = (x, xd, list(a), list(lam), list(v), u, p)
        M, Q, D, C = sp.Matrix(eom.M), sp.Matrix(eom.Q), sp.Matrix(eom.D), sp.Matrix(eom.C)
        Cx, B, Qd = sp.Matrix(eom.Cx), sp.Matrix(eom.B), sp.Matrix(eom.Qd)
        Av, Lv, Vv = sp.Matrix(a), sp.Matrix(lam), sp.Matrix(v)
        exprs = {
            "M": M, "Q": Q, "C": C, "Cx": Cx, "B": B, "D": D, "Qd": Qd,
            "dMa_dx": (M * Av).jacobian(X), "dDTlam_dx": (D.T * Lv).jacobian(X),
            "dQ_dx": Q.jacobian(X), "dQ_dxd": Q.jacobian(sp.Matrix(xd)),
            "dDv_dx": (D * Vv).jacobian(X), "dQd_dx": Qd.jacobian(X),
            "dQd_dxd": Qd.jacobian(sp.Matrix(xd)), "dCxv_dx": (Cx * Vv).jacobian(X),
            "dBv_dx": (B * Vv).jacobian(X),
        }
        flat = [s for grp in self._args for s in grp]
        self._fn = {k: (sp.lambdify(flat, e, "numpy", cse=True), e.shape) for k, e in exprs.items()}
        self._pdef = np.array(list(self.parameters.values()))

    def _call(self, key, x, xd=None, a=None, lam=None, v=None, u=None, p=None):
        out = self._eval(key, x, xd, a, lam, v, u, p)
        return out[..., 0] if key in ("Q", "C", "Qd") else out

    def M(self, x, u=None, p=None): return self._call("M", x, u=u, p=p)
    def Q(self, x, xd, u=None, p=None): return self._call("Q", x, xd, u=u, p=p)
    def C(self, x, u=None, p=None): return self._call("C", x, u=u, p=p)
    def Cx(self, x, u=None, p=None): return self._call("Cx", x, u=u, p=p)
    def B(self, x, u=None, p=None): return self._call("B", x, u=u, p=p)
    def D(self, x, u=None, p=None): return self._call("D", x, u=u, p=p)
    def Qd(self, x, xd, u=None, p=None): return self._call("Qd", x, xd, u=u, p=p)
    def dMa_dx(self, x, a, u=None, p=None): return self._call("dMa_dx", x, a=a, u=u, p=p)
    def dDTlam_dx(self, x, lam, u=None, p=None): return self._call("dDTlam_dx", x, lam=lam, u=u, p=p)
    def dQ_dx(self, x, xd, u=None, p=None): return self._call("dQ_dx", x, xd, u=u, p=p)
    def dQ_dxd(self, x, xd, u=None, p=None): return self._call("dQ_dxd", x, xd, u=u, p=p)
    def dDv_dx(self, x, v, u=None, p=None): return self._call("dDv_dx", x, v=v, u=u, p=p)
    def dQd_dx(self, x, xd, u=None, p=None): return self._call("dQd_dx", x, xd, u=u, p=p)
    def dQd_dxd(self, x, xd, u=None, p=None): return self._call("dQd_dxd", x, xd, u=u, p=p)
    def dCxv_dx(self, x, v, u=None, p=None): return self._call("dCxv_dx", x, v=v, u=u, p=p)
    def dBv_dx(self, x, v, u=None, p=None): return self._call("dBv_dx", x, v=v, u=u, p=p)
