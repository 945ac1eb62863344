"""Helpers shared by several test modules (no tests are collected from this module).

Imported as ``from _helpers import ...``: pytest's default ``prepend`` import mode puts
``tests/`` (which has no ``__init__.py``) on ``sys.path``, as for the ``test_*`` modules that
other tests import their toy models from.

* :class:`LambdifiedKernels` -- the evaluation part of the duck-typed ``CompiledModel`` s built
  from plain sympy in ``test_linearize_third_toys.py`` and ``test_linearize_validation_fixtures.py``.
* :func:`project`, :func:`accelerations`, :func:`central_jacobian`,
  :func:`bicycle_lean_steer_matrix` -- test-only validation by central finite differences of
  the nonlinear index-1 dynamics on the constraint manifold (``test_models_bicycle.py``,
  ``test_models_bicycle_simulation.py``, ``test_models_rolling_wheel.py``).
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from collections.abc import Callable

import numpy as np


def c_compiler_present() -> bool:
    """Whether this machine has the C compiler nhcontrol would run (``$CC`` when set, else the
    one Python was built with, ``sysconfig``'s ``CC``, else ``cc``/``gcc``/``clang`` on ``PATH``)
    and C kernels are not switched off.

    Decided from the machine, not from what nhcontrol chose: a test that needs the C path
    skips only when this is False, and fails when it is True but the code fell back to Python.
    """
    if os.environ.get("NHCONTROL_BACKEND", "").lower() == "python":
        return False
    if os.environ.get("CC", "").strip():     # distutils' customize_compiler uses $CC first
        return shutil.which(os.environ["CC"].split()[0]) is not None
    cc = (sysconfig.get_config_var("CC") or "").split()
    candidates = ([cc[0]] if cc else []) + ["cc", "gcc", "clang"]
    return any(shutil.which(c) for c in candidates)


def c_compiler() -> str | None:
    """The C compiler :func:`c_compiler_present` found (a command name or path), or None."""
    if not c_compiler_present():
        return None
    if os.environ.get("CC", "").strip():
        return os.environ["CC"].split()[0]
    cc = (sysconfig.get_config_var("CC") or "").split()
    for cand in ([cc[0]] if cc else []) + ["cc", "gcc", "clang"]:
        if shutil.which(cand):
            return cand
    return None


def require_c_backend(backend: str) -> None:
    """Skip when the machine has no C compiler; fail when it has one but ``backend`` is not C."""
    import pytest

    if not c_compiler_present():
        pytest.skip("no C compiler on this machine (sysconfig CC, cc, gcc, clang)")
    assert backend == "c", ("a C compiler is present but the model fell back to the Python "
                            "kernels: the C path is broken")


class LambdifiedKernels:
    """Evaluation of lambdified kernels ``self._fn[key] = (f, shape)``, point by point.

    Subclasses set ``parameters`` (name -> default), ``_pdef`` (the default vector), ``_fn``
    and ``n, m, l, ninputs``; ``f`` takes the flat arguments ``x, xd, a, lam, v, u, p``.
    """

    def param_vector(self, **overrides):
        """Parameter vector of the defaults with ``overrides`` replaced, shape ``(p,)``."""
        pv = dict(self.parameters)
        pv.update(overrides)
        return np.array(list(pv.values()))

    def _eval(self, key, x, xd=None, a=None, lam=None, v=None, u=None, p=None):
        """Kernel ``key`` at ``x`` of shape ``(n,)`` -> ``shape`` or ``(N, n)`` -> ``(N,) + shape``.

        Missing arguments are zeros; ``(k,)`` arguments are broadcast to all ``N`` points.
        """
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
        return out[0] if single else out


def project(cm, x, xd_ind, independent, hol_dependent, p=None):
    """Solve C(x) = 0 for ``hol_dependent`` (Newton) and D xd = 0 for the dependent velocities.

    Returns ``(x, xd)``, both ``(n,)``; ``xd[independent] = xd_ind``.
    """
    x = np.array(x, dtype=float)
    for _ in range(50):
        c = cm.C(x, p=p)
        if np.max(np.abs(c)) < 1e-15:
            break
        x[hol_dependent] -= np.linalg.solve(cm.Cx(x, p=p)[:, hol_dependent], c)
    D = cm.D(x, p=p)
    dd = [i for i in range(cm.n) if i not in independent]
    xd = np.zeros(cm.n)
    xd[independent] = xd_ind
    xd[dd] = -np.linalg.solve(D[:, dd], D[:, independent] @ xd[independent])
    return x, xd


def accelerations(cm, x, xd, p=None):
    """Index-1 forward dynamics, Eq. (2.119) without Baumgarte terms: returns (xdd, lam)."""
    M, D = cm.M(x, p=p), cm.D(x, p=p)
    k = D.shape[0]
    K = np.block([[M, D.T], [D, np.zeros((k, k))]])
    sol = np.linalg.solve(K, np.concatenate([cm.Q(x, xd, p=p), cm.Qd(x, xd, p=p)]))
    return sol[:cm.n], sol[cm.n:]


def central_jacobian(g: Callable[[np.ndarray], np.ndarray], size: int, h: float) -> np.ndarray:
    """``(size, size)`` central-difference Jacobian of ``g`` at ``z = 0`` (error O(h^2))."""
    A = np.zeros((size, size))
    for j in range(size):
        e = np.zeros(size)
        e[j] = h
        A[:, j] = (g(e) - g(-e)) / (2 * h)
    return A


def bicycle_lean_steer_matrix(cm, v, h=1e-6):
    """Central-difference 4x4 state matrix of (phi_b, delta, phi_b_d, delta_d) of the benchmark
    bicycle at speed v (partition of Eq. (4.172))."""
    from nhcontrol.models import benchmark_bicycle as bb

    IX = {name: i for i, name in enumerate(bb.COORDINATES)}
    x0, _, _ = bb.steady_forward_state(v, 0.0, bb.PARAMETERS)
    ind = [IX[c] for c in bb.PARTITION_4_172["independent"]]
    hol = [IX[c] for c in bb.PARTITION_4_172["dependent"]]

    def g(z):
        x = x0.copy()
        x[IX["phi_b"]], x[IX["delta"]] = z[0], z[1]
        x, xd = project(cm, x, [v, z[2], z[3]], ind, hol)
        a, _ = accelerations(cm, x, xd)
        return np.array([z[2], z[3], a[IX["phi_b"]], a[IX["delta"]]])

    return central_jacobian(g, 4, h)


def load_benchmark(name: str):
    """Import ``benchmarks/<name>.py`` as a module (the benchmark scripts are not a package)."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", script)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod
