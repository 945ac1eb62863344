"""A model's minimal-state dynamics as CasADi functions ([`to_casadi()`][nhcontrol.interop.to_casadi]).

The third numerical procedure (thesis Sect. 4.2.3) linearizes the nonlinear reduced ODE

$$
\\dot X = f(X, u, p), \\qquad X = [x_{ai}, \\dot x_{ai}, x_{ad}],
$$

of minimal size ``2(n−m)−l`` (Eqs. (4.118)-(4.119), (4.123)): the dependent coordinates
``x_d`` solve the holonomic constraints ``C(x) = 0`` (Eq. (2.109)), the dependent velocities
``ẋ_dd = [ẋ_ad, ẋ_d]`` the velocity constraints ``D(x) ẋ + b = 0`` (Eq. (2.114)), and the
accelerations the index-1 system ``[[M, Dᵀ], [D, 0]] [ẍ; Λ] = [Q; Q_d]`` (Eq. (2.127)). Its
Jacobians at a motion of the model are exactly the ``A, B`` of Steps 1-7 (Eq. (4.124), Sect.
8.1). This module hands ``f`` to CasADi by two routes:

``route="symbolic"``
    The SymPy expressions of ``M, Q, D, Q_d, b, C`` (the model's expression graph) become CasADi
    ``SX`` functions ([`sympy_to_casadi()`][nhcontrol.interop.sympy_to_casadi]); ``x_d`` comes
    from a CasADi Newton ``rootfinder`` (differentiated by the implicit-function theorem), the
    two linear solves are CasADi ``solve`` nodes. CasADi differentiates ``f`` to any order; its
    ``jacobian`` at a motion of the model equals nhcontrol's ``A, B`` (tested to 1e-10).
    Inputs ``(X, u, p)``.
``route="kernels"``
    ``f`` is evaluated by the compiled kernels (a ``casadi.Callback``), and its Jacobian is
    nhcontrol's exact linearization at the point ([`linearize()`][nhcontrol.linearization.linearize]
    of the reference point ``x, ẋ, ẍ, Λ, u`` that ``X, u`` define, by the prepared
    `CompiledModel.linearizer`). The parameters are fixed
    when the function is made (no derivative with respect to ``p`` exists in the kernels), so
    its inputs are ``(X, u)``. First derivatives only.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import InteropError, SolverError
from .sympy_casadi import require_casadi, sympy_to_casadi
from .._util.reprs import concise_repr

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.linearization.partition import Partition
    from nhcontrol.modeling import MultibodySystem

__all__ = ["to_casadi", "CasadiModel", "NEWTON_TOL"]

NEWTON_TOL = 1e-14
"""Absolute tolerance of the Newton iteration on ``C(x) = 0`` for the dependent coordinates."""


@dataclass(frozen=True)
class CasadiModel:
    """The minimal-state dynamics of a model as CasADi functions.

    Attributes
    ----------
    f : casadi.Function
        ``f(X, u, p) → Xdot`` (route ``"symbolic"``) or ``f(X, u) → Xdot`` (route
        ``"kernels"``, parameters fixed at `p`), ``X = [x_ai, ẋ_ai, x_ad]``. Symbolic route
        without holonomic constraints (``m = 0``): an ``SX`` graph with symbolic linear
        solves, callable with numbers, ``SX`` and ``MX`` symbols; with ``m > 0`` an ``MX``
        graph (the Newton rootfinder for ``x_d`` and QR linear solves: numbers and ``MX``
        only).
    AB : casadi.Function
        Same inputs ``→ (A, B)``: ``A = ∂f/∂X``, ``B = ∂f/∂u`` (CasADi's ``jacobian`` of `f`;
        for the kernels route nhcontrol's exact Jacobian).
    coordinates_of : casadi.Function
        Same inputs ``→ (x, xd)``: the full coordinates (``x_d`` by Newton from `x_guess`) and
        velocities of a state ``X``.
    accelerations : casadi.Function or None
        ``(x, xd, u, p) → (xdd, lam)``, the index-1 system Eq. (2.127) (symbolic route).
    terms : casadi.Function or None
        ``(x, xd, u, p) → (M, Q, D, Qd, b)`` (symbolic route).
    route : str
    states, inputs, parameters, coordinates : tuple of str
        Names of the entries of ``X``, ``u``, ``p`` and of the model's coordinates ``x``.
    p : (np,) ndarray
        The parameter vector: defaults (symbolic route) or the values the kernels route is fixed at.
    x_guess : (n,) ndarray
        Start of the Newton iteration for ``x_d``.
    ai, ad, d : tuple of int
        Indices of the partition's sets in ``x``.
    f_sx : casadi.Function or None
        Symbolic route, models without holonomic constraints (``m = 0``): the same ``f`` as one
        ``SX`` graph (the two linear solves as symbolic QR), for tools that need explicit
        expressions, e.g. an acados model ``f_expl_expr = f_sx(X, u, p)`` with ``SX`` symbols.
        ``None`` otherwise (``x_d`` from ``C(x) = 0`` needs the Newton rootfinder).
    """

    __repr__ = concise_repr

    f: Any
    AB: Any
    coordinates_of: Any
    accelerations: Any
    terms: Any
    route: str
    states: tuple[str, ...]
    inputs: tuple[str, ...]
    parameters: tuple[str, ...]
    coordinates: tuple[str, ...]
    p: NDArray[np.float64]
    x_guess: NDArray[np.float64]
    ai: tuple[int, ...]
    ad: tuple[int, ...]
    d: tuple[int, ...]
    f_sx: Any = None
    _keep: tuple = ()

    @property
    def nstates(self) -> int:
        return len(self.states)

    @property
    def ninputs(self) -> int:
        return len(self.inputs)

    def state(self, x: ArrayLike, xd: ArrayLike) -> NDArray[np.float64]:
        """The minimal state ``X = [x_ai, ẋ_ai, x_ad]`` of full coordinates and velocities."""
        x = np.asarray(x, dtype=float).reshape(-1)
        xd = np.asarray(xd, dtype=float).reshape(-1)
        return np.concatenate([x[list(self.ai)], xd[list(self.ai)], x[list(self.ad)]])

    def args(self, X: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> list:
        """Positional arguments of `f` / `AB` (``u`` zeros, ``p`` the model's values by default)."""
        u = np.zeros(self.ninputs) if u is None else np.asarray(u, dtype=float).reshape(-1)
        out = [np.asarray(X, dtype=float).reshape(-1), u]
        if self.route == "symbolic":
            out.append(self.p if p is None else np.asarray(p, dtype=float).reshape(-1))
        elif p is not None:
            raise InteropError("the 'kernels' route fixes the parameters when it is made "
                               "(to_casadi(..., p=...)); its functions take (X, u) only")
        return out


def _names_of(system: Any) -> SimpleNamespace:
    return SimpleNamespace(coordinates=tuple(s.name for s in system.coordinates))


def _resolve(model: Any, system: Any, route: str) -> tuple[Any, Any]:
    """``(system, compiled)``: the symbolic model (symbolic route) and the compiled one (kernels)."""
    from ..compiled import CompiledModel
    from ..modeling import MultibodySystem

    if system is None and not isinstance(model, (MultibodySystem, CompiledModel)):
        inner = getattr(model, "system", None)           # catalogue wrappers (SingleTrackModel)
        if isinstance(inner, MultibodySystem):
            model = inner
    if isinstance(model, MultibodySystem):
        system = model
        cm = model.compile() if route == "kernels" else None
    elif isinstance(model, CompiledModel):
        cm = model
        if route == "symbolic" and system is None:
            from ..compiled.model import _system_for

            system = _system_for(model)
        if route == "symbolic" and system is None:
            raise InteropError(
                f"route='symbolic' translates the SymPy expressions of the model, and compiled model "
                f"{model.name!r} was not compiled in this process (nor from a recipe): pass the symbolic model (e.g. "
                f"to_casadi(benchmark_bicycle.build(), ...), or system=...), or use route='kernels'")
    else:
        raise InteropError(f"to_casadi needs a MultibodySystem or a CompiledModel, got "
                           f"{type(model).__name__}")
    if system is not None and not isinstance(system, MultibodySystem):
        raise InteropError(f"system must be a MultibodySystem, got {type(system).__name__}")
    return system, cm


def _check_supported(first_order: Any, constraint_inputs: Any, name: str) -> None:
    if first_order:
        raise InteropError(f"model {name!r} has first-order states {list(first_order)} (ż = H); "
                           f"to_casadi exports mechanical models only (no hydraulic/motor states yet)")
    if constraint_inputs:
        raise InteropError(f"inputs {list(constraint_inputs)} of model {name!r} enter its nonholonomic "
                           f"constraints (their rates u̇ enter the dynamics); to_casadi does not export "
                           f"such models yet: declare the input as a coordinate driven by a torque, or "
                           f"use nhcontrol's own simulate/linearize")


def _partition(coords: tuple[str, ...], n: int, m: int, l: int,
               partition: Partition | Mapping[str, Any]) -> tuple[list, list, list]:
    from ..linearization.first import partition_indices

    ai, ad, d = partition_indices(SimpleNamespace(coordinates=coords, n=n, m=m, l=l), partition)
    if len(ad) != l:
        raise InteropError(f"to_casadi needs the three-set partition of Eq. (4.96) with l = {l} "
                           f"admissible dependent coordinates, got {len(ad)}")
    return ai, ad, d


def _guess(x_guess: ArrayLike | None, n: int) -> NDArray[np.float64]:
    if x_guess is None:
        return np.zeros(n)
    g = np.asarray(x_guess, dtype=float).reshape(-1)
    if g.size != n or not np.all(np.isfinite(g)):
        raise InteropError(f"x_guess must be {n} finite coordinates (the Newton start for x_d), "
                           f"got {np.asarray(x_guess).tolist()}")
    return g


def to_casadi(model: MultibodySystem | CompiledModel, partition: Partition | Mapping[str, Any], *,
              route: Literal["symbolic", "kernels"] = "symbolic",
              x_guess: ArrayLike | None = None, p: ArrayLike | Mapping[str, float] | None = None,
              system: MultibodySystem | None = None, newton_tol: float = NEWTON_TOL) -> CasadiModel:
    """The minimal-state dynamics ``Ẋ = f(X, u, p)`` of a model and its Jacobians as CasADi functions.

    Parameters
    ----------
    model : MultibodySystem or CompiledModel
        The model (a catalogue wrapper with a ``system`` attribute is accepted too). The
        symbolic route needs the `MultibodySystem`: that of a compiled model compiled in this
        process (or loaded by a catalogue ``model()`` function, whose recipe rebuilds it), or
        ``system=``; the kernels route compiles it if needed.
    partition : Partition or mapping
        ``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)); the state is ``X = [x_ai, ẋ_ai, x_ad]``.
    route : {"symbolic", "kernels"}
        See the module text.
    x_guess : (n,) array_like, optional
        Start of the Newton iteration for the dependent coordinates ``x_d`` (default zeros);
        take a nearby configuration, e.g. the reference's ``x0``: ``C(x) = 0`` may have other
        roots far from it (a wheel touching the ground with its top).
    p : array_like or mapping, optional
        Parameters: the defaults of `CasadiModel.p` (symbolic route; ``f`` still takes ``p``) or
        the values the kernels route is fixed at.
    system : MultibodySystem, optional
        The symbolic model when `model` is a `CompiledModel`.
    newton_tol : float
        Tolerance of the Newton iteration.

    Returns
    -------
    CasadiModel

    Raises
    ------
    InteropError
        Missing CasADi; a model with first-order states or inputs in its nonholonomic
        constraints (not exported yet); an expression without CasADi translation; a bad
        partition size or guess.
    PartitionError
        Unknown names or wrong set sizes in `partition`.

    Examples
    --------
    >>> from nhcontrol.models import benchmark_bicycle as bb
    >>> import numpy as np
    >>> cm = bb.model()
    >>> ref = bb.steady_forward(cm, 5.0)
    >>> cs = to_casadi(bb.build(), bb.PARTITION_4_172, x_guess=ref.x(0.0))
    >>> A, B = cs.AB(*cs.args(cs.state(ref.x(0.0), ref.xd(0.0))))
    >>> A.shape
    (10, 10)
    """
    ca = require_casadi()
    if route not in ("symbolic", "kernels"):
        raise InteropError(f"route must be 'symbolic' or 'kernels', got {route!r}")
    system, cm = _resolve(model, system, route)
    if route == "kernels":
        return _kernels_route(ca, cm, partition, x_guess, p, newton_tol)
    return _symbolic_route(ca, system, partition, x_guess, p, newton_tol)


# --------------------------------------------------------------------------- symbolic route
def _symbolic_route(ca: Any, system: Any, partition: Partition | Mapping[str, Any], x_guess: Any,
                    p: Any,
                    newton_tol: float) -> CasadiModel:
    import sympy as sp

    constraint_inputs = [s.name for s in system.inputs
                         if any(s in sp.sympify(c.expr).free_symbols for c in system.nonholonomic)]
    _check_supported(getattr(system, "first_order_states", ()), constraint_inputs, system.name)
    eom = system.equations()
    n, m, l, k, npar = eom.n, eom.m, eom.l, len(eom.u), len(eom.p)
    c = m + l
    coords = tuple(s.name for s in eom.x)
    ai, ad, d = _partition(coords, n, m, l, partition)
    guess = _guess(x_guess, n)
    defaults = system.defaults
    pvec = np.array([defaults[s.name] for s in eom.p], dtype=float)
    if p is not None:
        pvec = _param_vector(p, [s.name for s in eom.p], pvec)

    x, xd = ca.SX.sym("x", n), ca.SX.sym("xd", n)
    u, pp = ca.SX.sym("u", k), ca.SX.sym("p", npar)
    mapping: dict = {}
    for syms, vec in ((eom.x, x), (eom.xd, xd), (eom.u, u), (eom.p, pp)):
        for i, s in enumerate(syms):
            mapping[s] = vec[i]
    memo: dict = {}

    def conv(mat: Any) -> Any:
        if mat is None or mat.shape[0] * mat.shape[1] == 0:
            return ca.SX(mat.shape[0] if mat is not None else c, mat.shape[1] if mat is not None else 1)
        return ca.SX(sympy_to_casadi(sp.Matrix(mat), mapping, definitions=eom.graph.defs, cache=memo))

    Mx, Q, D, Qd = conv(eom.M_g), conv(eom.Q_g), conv(eom.D_g), conv(eom.Qd_g)
    b = conv(eom.b_g) if eom.b_g is not None else ca.SX(c, 1)
    C = conv(eom.C_g)
    terms = ca.Function("terms", [x, xd, u, pp], [Mx, Q, D, Qd, b], ["x", "xd", "u", "p"],
                        ["M", "Q", "D", "Qd", "b"])
    # the index-1 accelerations as an MX-callable function (numeric LU inside, exact derivatives)
    xm, xdm, um, pm = (ca.MX.sym(s, z) for s, z in (("x", n), ("xd", n), ("u", k), ("p", npar)))
    Mm, Qm, Dm, Qdm, _ = terms(xm, xdm, um, pm)
    augm = ca.vertcat(ca.horzcat(Mm, Dm.T), ca.horzcat(Dm, ca.MX(c, c)))
    solm = ca.solve(augm, ca.vertcat(Qm, Qdm), "qr")
    accelerations = ca.Function("accelerations", [xm, xdm, um, pm], [solm[:n], solm[n:]],
                                ["x", "xd", "u", "p"], ["xdd", "lam"])
    Cfun = ca.Function("C", [x, u, pp], [C], ["x", "u", "p"], ["C"])
    Dfun = ca.Function("D", [x, u, pp], [D, b], ["x", "u", "p"], ["D", "b"])

    g = len(ai)
    ns = 2 * g + l
    X, U, P = ca.MX.sym("X", ns), ca.MX.sym("u", k), ca.MX.sym("p", npar)
    xa_idx = list(ai) + list(ad)
    xa = ca.vertcat(X[:g], X[2 * g:]) if ns else ca.MX(0, 1)

    def assemble(xa_part: Any, xd_part: Any, kind: Any) -> Any:
        entries: list = [None] * n
        for j, i in enumerate(xa_idx):
            entries[i] = xa_part[j]
        for j, i in enumerate(d):
            entries[i] = xd_part[j]
        return ca.vertcat(*entries) if n else kind(0, 1)

    if m:
        z = ca.SX.sym("z", m)
        w = ca.SX.sym("w", n - m + k + npar)
        xs = assemble(w[:n - m], z, ca.SX)
        G = ca.Function("G", [z, w], [Cfun(xs, w[n - m:n - m + k], w[n - m + k:])])
        rf = ca.rootfinder("project_C", "newton", G, {"abstol": newton_tol, "abstolStep": 1e-16,
                                                       "max_iter": 60, "error_on_fail": True})
        xdep = rf(ca.DM(guess[list(d)]), ca.vertcat(xa, U, P))
    else:
        rf = None
        xdep = ca.MX(0, 1)
    xfull = assemble(xa, xdep, ca.MX)
    Dx, bx = Dfun(xfull, U, P)
    dd = list(ad) + list(d)
    vai = X[g:2 * g]
    vdd = -ca.solve(Dx[:, dd], ca.mtimes(Dx[:, list(ai)], vai) + bx, "qr") if c else ca.MX(0, 1)
    vel: list = [None] * n
    for j, i in enumerate(ai):
        vel[i] = vai[j]
    for j, i in enumerate(dd):
        vel[i] = vdd[j]
    xdfull = ca.vertcat(*vel)
    xdd, _ = accelerations(xfull, xdfull, U, P)
    Xdot = ca.vertcat(vai, xdd[list(ai)], xdfull[list(ad)])
    names = ["X", "u", "p"]
    f = ca.Function("f", [X, U, P], [Xdot], names, ["Xdot"])
    AB = ca.Function("AB", [X, U, P], [ca.jacobian(Xdot, X), ca.jacobian(Xdot, U)], names, ["A", "B"])
    coordinates_of = ca.Function("coordinates_of", [X, U, P], [xfull, xdfull], names, ["x", "xd"])
    f_sx = None
    if m == 0:                  # one SX graph: explicit expressions (symbolic QR solves)
        Xs, Us, Ps = ca.SX.sym("X", ns), ca.SX.sym("u", k), ca.SX.sym("p", npar)
        xs_full = assemble(ca.vertcat(Xs[:g], Xs[2 * g:]), ca.SX(0, 1), ca.SX)
        Ds, bs = Dfun(xs_full, Us, Ps)
        vs_ai = Xs[g:2 * g]
        vs_dd = -ca.solve(Ds[:, dd], ca.mtimes(Ds[:, list(ai)], vs_ai) + bs) if c else ca.SX(0, 1)
        vel_s: list = [None] * n
        for j, i in enumerate(ai):
            vel_s[i] = vs_ai[j]
        for j, i in enumerate(dd):
            vel_s[i] = vs_dd[j]
        xd_s = ca.vertcat(*vel_s)
        Ms, Qs, Dss, Qds, _ = terms(xs_full, xd_s, Us, Ps)
        sol_s = ca.solve(ca.vertcat(ca.horzcat(Ms, Dss.T), ca.horzcat(Dss, ca.SX(c, c))), ca.vertcat(Qs, Qds))
        Xdot_s = ca.vertcat(vs_ai, sol_s[list(ai)], xd_s[list(ad)])
        f_sx = ca.Function("f_sx", [Xs, Us, Ps], [Xdot_s], names, ["Xdot"])
        # without holonomic constraints nothing needs a rootfinder: f, AB and coordinates_of are
        # SX graphs (symbolic linear solves), callable with numbers, SX and MX alike
        f = ca.Function("f", [Xs, Us, Ps], [Xdot_s], names, ["Xdot"])
        AB = ca.Function("AB", [Xs, Us, Ps], [ca.jacobian(Xdot_s, Xs), ca.jacobian(Xdot_s, Us)], names,
                         ["A", "B"])
        coordinates_of = ca.Function("coordinates_of", [Xs, Us, Ps], [xs_full, xd_s], names, ["x", "xd"])
    vnames = tuple(s.name for s in eom.xd)
    states = tuple(coords[i] for i in ai) + tuple(vnames[i] for i in ai) + tuple(coords[i] for i in ad)
    return CasadiModel(f=f, AB=AB, coordinates_of=coordinates_of, accelerations=accelerations, f_sx=f_sx,
                       terms=terms, route="symbolic", states=states,
                       inputs=tuple(s.name for s in eom.u), parameters=tuple(s.name for s in eom.p),
                       coordinates=coords, p=_ro(pvec), x_guess=_ro(guess), ai=tuple(ai),
                       ad=tuple(ad), d=tuple(d), _keep=(rf,))


def _ro(a: NDArray[np.float64]) -> NDArray[np.float64]:
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


def _param_vector(p: Any, names: list[str], defaults: NDArray[np.float64]) -> NDArray[np.float64]:
    if isinstance(p, Mapping):
        bad = sorted(set(p) - set(names))
        if bad:
            raise InteropError(f"unknown parameters {bad}; the model has {names}")
        out = defaults.copy()
        for kname, v in p.items():
            out[names.index(kname)] = float(v)
        return out
    arr = np.asarray(p, dtype=float).reshape(-1)
    if arr.size != len(names):
        raise InteropError(f"p must hold {len(names)} parameters {names}, got {arr.size}")
    return arr.copy()


# --------------------------------------------------------------------------- kernels route
class _KernelCore:
    """Numeric reduced ODE of a compiled model (the kernels route), one point at a time."""

    def __init__(self, cm: CompiledModel, partition: Partition | Mapping[str, Any], ai: list,
                 ad: list, d: list,
                 guess: NDArray[np.float64], p: NDArray[np.float64], tol: float) -> None:
        self.cm, self.partition = cm, partition
        self.ai, self.ad, self.d = ai, ad, d
        self.dd = ad + d
        self.g = len(ai)
        self.guess, self.p, self.tol = guess, p, tol
        self.affine = bool(getattr(cm, "affine_names", ()))
        self._lz: Any = None

    def full(self, X: NDArray[np.float64], u: NDArray[np.float64] | None
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        cm, g = self.cm, self.g
        x = self.guess.copy()
        x[self.ai] = X[:g]
        x[self.ad] = X[2 * g:]
        if self.d:
            for _ in range(60):
                Cv = np.asarray(cm.C(x, u, self.p), dtype=float)
                Cd = np.asarray(cm.Cx(x, u, self.p), dtype=float)[:, self.d]
                step = np.linalg.solve(Cd, Cv)
                x[self.d] -= step
                if np.max(np.abs(Cv)) <= self.tol and np.max(np.abs(step)) <= 1e-15 * (1 + np.max(np.abs(x))):
                    break
                if np.max(np.abs(step)) <= 1e-15 * (1 + np.max(np.abs(x))):
                    break
            else:
                raise SolverError(f"Newton on C(x) = 0 for {[cm.coordinates[i] for i in self.d]} did not "
                                  f"converge from x_guess; give a closer x_guess to to_casadi")
        D = np.asarray(cm.D(x, u, self.p), dtype=float)
        rhs = D[:, self.ai] @ X[g:2 * g]
        if self.affine:
            rhs = rhs + np.asarray(cm.b(x, u, self.p), dtype=float)
        xd = np.zeros(cm.n)
        xd[self.ai] = X[g:2 * g]
        if self.dd:
            xd[self.dd] = -np.linalg.solve(D[:, self.dd], rhs)
        return x, xd

    def rhs(self, X: NDArray[np.float64], u: NDArray[np.float64] | None) -> NDArray[np.float64]:
        from ..linearization import index1_accelerations

        x, xd = self.full(X, u)
        xdd, _ = index1_accelerations(self.cm, x, xd, u, self.p)
        return np.concatenate([xd[self.ai], xdd[self.ai], xd[self.ad]])

    def jac(self, X: NDArray[np.float64], u: NDArray[np.float64] | None
            ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        from ..linearization import index1_accelerations

        x, xd = self.full(X, u)
        xdd, lam = index1_accelerations(self.cm, x, xd, u, self.p)
        if self._lz is None:       # the prepared one-point linearization (partition bound once)
            self._lz = self.cm.linearizer(self.partition, p=self.p, check=False)
        A, B = self._lz(x, xd, xdd, lam, u)
        return np.array(A), np.array(B)


def _kernels_route(ca: Any, cm: CompiledModel, partition: Partition | Mapping[str, Any],
                   x_guess: Any, p: Any,
                   newton_tol: float) -> CasadiModel:
    from ..linearization.first import partition_indices, velocity_names

    _check_supported(getattr(cm, "first_order_states", ()), getattr(cm, "constraint_inputs", ()), cm.name)
    ai, ad, d = partition_indices(cm, partition)
    if len(ad) != cm.l:
        raise InteropError(f"to_casadi needs the three-set partition of Eq. (4.96) with l = {cm.l} "
                           f"admissible dependent coordinates, got {len(ad)}")
    names = list(cm.parameters)
    pvec = np.array(list(cm.parameters.values()), dtype=float)
    if p is not None:
        pvec = _param_vector(p, names, pvec)
    guess = _guess(x_guess, cm.n)
    core = _KernelCore(cm, partition, ai, ad, d, guess, pvec, newton_tol)
    ns, k = 2 * len(ai) + len(ad), int(cm.ninputs)
    f = _make_callbacks(ca, core, ns, k)
    X, U = ca.MX.sym("X", ns), ca.MX.sym("u", k)
    Xdot = f(X, U)
    AB = ca.Function("AB", [X, U], [ca.jacobian(Xdot, X), ca.jacobian(Xdot, U)], ["X", "u"], ["A", "B"])
    full = _FullState(ca, core, ns, k)
    vel = velocity_names(cm)
    states = tuple(cm.coordinates[i] for i in ai) + tuple(vel[i] for i in ai) + tuple(cm.coordinates[i] for i in ad)
    return CasadiModel(f=f, AB=AB, coordinates_of=full, accelerations=None, terms=None, route="kernels",
                       states=states, inputs=tuple(cm.inputs), parameters=tuple(names),
                       coordinates=tuple(cm.coordinates), p=_ro(pvec), x_guess=_ro(guess),
                       ai=tuple(ai), ad=tuple(ad), d=tuple(d), _keep=(f, full, core))


def _make_callbacks(ca: Any, core: _KernelCore, ns: int, k: int) -> Any:
    class KernelJacobian(ca.Callback):
        def __init__(self, name: str, opts: dict) -> None:
            ca.Callback.__init__(self)
            self.construct(name, opts)

        def get_n_in(self) -> int:
            return 3

        def get_n_out(self) -> int:
            return 2

        def get_sparsity_in(self, i: int) -> Any:
            return ca.Sparsity.dense((ns, k, ns)[i], 1)

        def get_sparsity_out(self, i: int) -> Any:
            return ca.Sparsity.dense(ns, (ns, k)[i])

        def eval(self, arg: list) -> list:
            X = np.asarray(arg[0], dtype=float).reshape(-1)
            u = np.asarray(arg[1], dtype=float).reshape(-1) if k else None
            A, B = core.jac(X, u)
            return [ca.DM(A), ca.DM(B.reshape(ns, k))]

    class KernelDynamics(ca.Callback):
        def __init__(self, name: str, opts: dict) -> None:
            ca.Callback.__init__(self)
            self._jac: Any = None
            self.construct(name, opts)

        def get_n_in(self) -> int:
            return 2

        def get_n_out(self) -> int:
            return 1

        def get_name_in(self, i: int) -> str:
            return ("X", "u")[i]

        def get_name_out(self, i: int) -> str:
            return "Xdot"

        def get_sparsity_in(self, i: int) -> Any:
            return ca.Sparsity.dense((ns, k)[i], 1)

        def get_sparsity_out(self, i: int) -> Any:
            return ca.Sparsity.dense(ns, 1)

        def eval(self, arg: list) -> list:
            X = np.asarray(arg[0], dtype=float).reshape(-1)
            u = np.asarray(arg[1], dtype=float).reshape(-1) if k else None
            return [ca.DM(core.rhs(X, u))]

        def has_jacobian(self) -> bool:
            return True

        def get_jacobian(self, name: str, inames: list, onames: list, opts: dict) -> Any:
            self._jac = KernelJacobian(name, opts)
            return self._jac

    return KernelDynamics("f", {"enable_fd": False})


def _FullState(ca: Any, core: _KernelCore, ns: int, k: int) -> Any:
    """``(X, u) → (x, xd)`` of the kernels route (no derivatives)."""
    n = core.cm.n

    class FullState(ca.Callback):
        def __init__(self) -> None:
            ca.Callback.__init__(self)
            self.construct("coordinates_of", {})

        def get_n_in(self) -> int:
            return 2

        def get_n_out(self) -> int:
            return 2

        def get_sparsity_in(self, i: int) -> Any:
            return ca.Sparsity.dense((ns, k)[i], 1)

        def get_sparsity_out(self, i: int) -> Any:
            return ca.Sparsity.dense(n, 1)

        def eval(self, arg: list) -> list:
            X = np.asarray(arg[0], dtype=float).reshape(-1)
            u = np.asarray(arg[1], dtype=float).reshape(-1) if k else None
            x, xd = core.full(X, u)
            return [ca.DM(x), ca.DM(xd)]

    return FullState()
