"""Test helpers for the validation procedures (no tests are collected from this module).

* :class:`SympyKernels` -- kernels of docs/dev/contracts.md section 2 built directly from a
  model's symbolic ``EquationsOfMotion`` with plain ``sympy.diff`` + ``lambdify``. It is
  independent of ``nhcontrol.compiled`` (generated code, CSE, cache), so comparing the two is a
  check of the code generator too.
* :func:`rolling_disc` -- a small disc rolling without slipping (n = 7, m = 2, l = 2), built with
  ``nhcontrol.modeling`` only.
* :func:`consistent_point` / :func:`simulated_point` -- non-steady reference points that satisfy
  the constraints and the index-1 dynamics.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

from nhcontrol.linearize.finite_difference import index1_accelerations
from nhcontrol.linearize.first import ReferencePoint


class SympyKernels:
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

    def param_vector(self, **overrides):
        pv = dict(self.parameters)
        pv.update(overrides)
        return np.array(list(pv.values()))

    def _call(self, key, x, xd=None, a=None, lam=None, v=None, u=None, p=None):
        fn, shape = self._fn[key]
        x = np.asarray(x, float)
        single = x.ndim == 1
        X = np.atleast_2d(x)
        N = X.shape[0]

        def rows(val, size):
            if val is None:
                return np.zeros((N, size))
            val = np.asarray(val, float)
            return np.broadcast_to(val, (N, size)) if val.ndim == 1 else val

        n, c, k = self.n, self.m + self.l, self.ninputs
        XD, A, L, V, U = rows(xd, n), rows(a, n), rows(lam, c), rows(v, n), rows(u, k)
        P = self._pdef if p is None else np.asarray(p, float)
        out = np.empty((N,) + shape)
        for i in range(N):
            out[i] = np.asarray(fn(*X[i], *XD[i], *A[i], *L[i], *V[i], *U[i], *P),
                                dtype=float).reshape(shape)
        if key in ("Q", "C", "Qd"):
            out = out[..., 0]
        return out[0] if single else out

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


DISC_PARTITION = dict(independent=["psi", "phi", "theta"], admissible_dependent=["x", "y"],
                      dependent=["z", "xi"])


def rolling_disc_system(with_input: bool = False):
    """A thin disc (radius r, mass m) rolling without slipping: x y z psi phi theta xi.

    ``R = Rz(psi) Rx(phi) Ry(theta)``, spin axis body ``y``; contact by
    ``modeling.contacts.rolling_hoop``. With ``with_input`` a torque ``tau`` acts on the
    lean axis (global x after yaw) so that the input matrix is exercised.
    """
    from nhcontrol.modeling import MultibodySystem, contacts, rot_x, rot_y, rot_z

    mb = MultibodySystem("validation_disc")
    x, y, z, psi, phi, theta, xi = mb.add_coordinates("x y z psi phi theta xi")
    r, m, g = mb.add_parameters(r=0.3, m=2.0, g=9.81)
    R = rot_z(psi) * rot_x(phi) * rot_y(theta)
    inertia = sp.diag(m * r**2 / 4, m * r**2 / 2, m * r**2 / 4)
    body = mb.add_body("disc", mass=m, inertia=inertia, position=sp.Matrix([x, y, z]),
                       orientation=R)
    mb.add_gravity(g, direction=(0, 0, -1))
    contacts.rolling_hoop(mb, body, sp.Matrix([x, y, z]), R, r, xi, name="P", axis="y")
    if with_input:
        tau = mb.add_inputs("tau")
        mb.add_torque(body, rot_z(psi) * sp.Matrix([tau, 0, 0]))
    return mb


def rolling_disc(with_input: bool = False) -> SympyKernels:
    mb = rolling_disc_system(with_input)
    eom = mb.equations()
    return SympyKernels(eom, mb.defaults, name="validation_disc")


def upright_disc_point(cm, speed=2.0, t=0.0) -> ReferencePoint:
    """Steady upright rolling along x (psi = phi = 0, theta_dot = -speed / r)."""
    r = cm.parameters["r"]
    x = np.zeros(cm.n)
    names = list(cm.coordinates)
    x[names.index("z")] = r
    x[names.index("xi")] = np.pi / 2
    xd = np.zeros(cm.n)
    xd[names.index("x")] = speed
    w = speed / r
    xd[names.index("theta")] = w
    xd[names.index("xi")] = -w
    # the sign of the spin that rolls forward is whatever the constraints say:
    D = cm.D(x)
    if np.max(np.abs(D @ xd)) > 1e-12:
        xd[names.index("theta")] = -w
        xd[names.index("xi")] = w
    assert np.max(np.abs(D @ xd)) < 1e-12
    return finish_point(cm, t, x, xd)


def finish_point(cm, t, x, xd, u=None) -> ReferencePoint:
    xdd, lam = index1_accelerations(cm, x, xd, u)
    return ReferencePoint(t, x, xd, xdd, lam, None if u is None else np.asarray(u, float), None)


def consistent_point(cm, partition, rng, t=0.0) -> ReferencePoint:
    """A random state on the constraint manifold with consistent velocities (non-steady)."""
    from nhcontrol.linearize.finite_difference import _project_holonomic
    from nhcontrol.linearize.first import partition_indices

    ai, ad, d = partition_indices(cm, partition)
    x0 = upright_disc_point(cm, 1.0).x.copy()
    x = x0.copy()
    x[ai + ad] += rng.uniform(-0.3, 0.3, len(ai + ad))
    x = _project_holonomic(cm, x[None, :], d, None, None)[0]
    xd = np.zeros(cm.n)
    xd[ai] = rng.uniform(-2, 2, len(ai))
    D = cm.D(x)
    dd = ad + d
    xd[dd] = -np.linalg.solve(D[:, dd], D[:, ai] @ xd[ai])
    return finish_point(cm, t, x, xd)


def simulated_reference(cm, start: ReferencePoint, t_end=0.6):
    """Integrate the index-1 ODE from a consistent point (DOP853, rtol 1e-12).

    Returns a duck-typed reference with ``x, xd, xdd, lam, u`` methods (xdd, lam exact from the
    dynamics at the integrated state).
    """
    n = cm.n

    def rhs(_t, s):
        xdd, _ = index1_accelerations(cm, s[:n], s[n:])
        return np.concatenate([s[n:], xdd])

    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([start.x, start.xd]), method="DOP853",
                    rtol=1e-12, atol=1e-12, dense_output=True)

    def state(t):
        return sol.sol(t)

    return SimpleNamespace(
        x=lambda t: state(t)[:n], xd=lambda t: state(t)[n:],
        xdd=lambda t: index1_accelerations(cm, state(t)[:n], state(t)[n:])[0],
        lam=lambda t: index1_accelerations(cm, state(t)[:n], state(t)[n:])[1],
        u=lambda t: None, parameters=None, sol=sol)
