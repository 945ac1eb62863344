"""The numeric model [`CompiledModel`][nhcontrol.compiled.CompiledModel] (contracts section 2) and [`compile_system()`][nhcontrol.compiled.compile_system]."""

from __future__ import annotations

import hashlib
import math
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._util.errors import CacheError, ModelError
from .._util.memory import check_allocation
from . import cache as _cache
from . import cbackend as _cb
from .ccodegen import CCodegenError, generate_c
from .codegen import GENERATOR_VERSION, generate_module
from .derivatives import (DIRECT_KERNELS, DYNAMICS_FIELDS, INPUT_RATE_FIELDS, KERNEL_SIGNATURES,
                          LINEARIZATION_FIELDS, RATE_FIELDS, ROUTES, kernel_specs)

if TYPE_CHECKING:  # pragma: no cover
    from ..modeling.system import MultibodySystem

Array = NDArray[np.float64]

KERNEL_ARGS: dict[str, tuple[str, ...]] = {k: v[:-2] for k, v in KERNEL_SIGNATURES.items()}
"""Kernel name -> argument groups (the table of contracts section 2)."""

_FUNC_ARGS = {"linearization_terms": ("x", "xd", "xdd", "lam", "u", "p"),
              "dynamics_terms": ("x", "xd", "u", "p"),
              "input_rate_terms": ("x", "xd", "ud", "lam", "u", "p"),
              "rates": ("x", "xd", "u", "p"), "rate_terms": ("x", "xd", "u", "p")}
_FUNC_FIELDS = {"linearization_terms": LINEARIZATION_FIELDS, "dynamics_terms": DYNAMICS_FIELDS,
                "input_rate_terms": INPUT_RATE_FIELDS, "rates": ("H",), "rate_terms": RATE_FIELDS}
_RATE_FUNCS = ("rates", "rate_terms")   # generated only for models with first-order states


def _ro(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class LinearizationTerms:
    """All terms the third numerical procedure needs at one point (or N points).

    Shapes are given for one point; with ``N`` stacked points every field has a leading
    ``N`` axis.  ``a = ẍ0`` and ``v = ẋ0`` (Sect. 4.2.3).

    Attributes
    ----------
    M : (n, n)
        Mass matrix, Eq. (2.103).
    Q : (n,)
        Generalized forces ``Qa + Qv``, Eq. (2.108).
    D, Cx, B : (m+l, n), (m, n), (l, n)
        Constraint Jacobians, Eq. (2.82).
    Qd : (m+l,)
        ``-∂(D ẋ)/∂x ẋ``, Eq. (2.117).
    dMa_dx, dMa_du : (n, n), (n, k)
        ``∂(M ẍ0)/∂x``, ``∂(M ẍ0)/∂u``.
    dDTlam_dx : (n, n)
        ``∂(Dᵀ Λ0)/∂x``.
    dQ_dx, dQ_dxd, dQ_du : (n, n), (n, n), (n, k)
    dDv_dx : (m+l, n)
        ``∂(D ẋ0)/∂x`` of Eq. (4.99).
    dDa_dx : (m+l, n)
        ``∂(D ẍ0)/∂x`` of Eq. (4.103).
    dQd_dx, dQd_dxd : (m+l, n)
    dCxv_dx, dBv_dx : (m, n), (l, n)
        ``∂(Cx ẋ0)/∂x``, ``∂(B ẋ0)/∂x``.
    dQd_du, dDa_du : (m+l, k)
        ``∂Qd/∂u``, ``∂(D ẍ0)/∂u`` (Sect. 8.1).
    dC_du : (m, k)
    """

    M: Array
    Q: Array
    D: Array
    Cx: Array
    B: Array
    Qd: Array
    dMa_dx: Array
    dMa_du: Array
    dDTlam_dx: Array
    dQ_dx: Array
    dQ_dxd: Array
    dQ_du: Array
    dDv_dx: Array
    dDa_dx: Array
    dQd_dx: Array
    dQd_dxd: Array
    dCxv_dx: Array
    dBv_dx: Array
    dQd_du: Array
    dDa_du: Array
    dC_du: Array


@dataclass(frozen=True)
class InputRateTerms:
    """Terms of inputs that enter the nonholonomic constraints ``B(x, u) ẋ + b(x, u) = 0``.

    With ``E = ∂(B ẋ + b)/∂u`` (holonomic rows zero) the acceleration level of the constraints
    is ``D ẍ = Qd − E u̇`` (docs/theory/road_vehicles.md, "Inputs in the constraints").
    Shapes for one point; ``N`` stacked points add a leading axis.

    Attributes
    ----------
    E : (m+l, k)
        ``∂(D ẋ + b)/∂u``; at the reference also the input term ``∂(D ẋ0 + b)/∂u`` of the
        linearized velocity constraints.
    dEw_dx, dEw_dxd : (m+l, n)
        ``∂(E u̇0)/∂x``, ``∂(E u̇0)/∂ẋ``.
    dEw_du : (m+l, k)
        ``∂(E u̇0)/∂u``.
    dDTlam_du : (n, k)
        ``∂(Dᵀ Λ0)/∂u``.
    """

    E: Array
    dEw_dx: Array
    dEw_dxd: Array
    dEw_du: Array
    dDTlam_du: Array


@dataclass(frozen=True)
class RateTerms:
    """Rates ``ż = H(x, ẋ, u)`` of the first-order states and their exact partial derivatives
    (thesis Eqs. (7.12)-(7.13), (7.26), (7.28)); ``u`` is the model's whole input vector, the
    states ``z`` included (`CompiledModel.first_order_states`). Shapes for one point; ``N``
    stacked points add a leading axis.

    Attributes
    ----------
    H : (r,)
    dH_dx, dH_dxd : (r, n)
    dH_du : (r, k)
        Columns of the states ``z`` give ``H_z``, the other columns ``H_u``.
    """

    H: Array
    dH_dx: Array
    dH_dxd: Array
    dH_du: Array


@dataclass(frozen=True)
class DynamicsTerms:
    """``M (n, n)``, ``Q (n,)``, ``D (m+l, n)``, ``Qd (m+l,)`` of the index-1 form Eq. (2.119)."""

    M: Array
    Q: Array
    D: Array
    Qd: Array


class CompiledModel:
    """Exact numeric kernels of a [`MultibodySystem`][nhcontrol.modeling.MultibodySystem].

    Created by `MultibodySystem.compile()`; immutable.  Every kernel accepts one
    point (``x`` of shape ``(n,)``) or ``N`` stacked points (``(N, n)``; 1-D arguments
    are then broadcast); ``u=None`` means zeros, ``p=None`` the parameter defaults.
    The results are read-only arrays.

    Attributes
    ----------
    name : str
    coordinates, velocities, inputs : tuple of str
        Lengths n, n, k.
    parameters : mapping str -> float
        Defaults in kernel order (read-only).
    holonomic_names, nonholonomic_names : tuple of str
        Lengths m, l.
    n, m, l, ninputs : int
    model_hash : str
        Cache key (sha256 hex).
    from_cache : bool
        True when the kernels were loaded from the disk cache without symbolic derivation.
    source_path : pathlib.Path or None
        The generated module file (None for ``cache=False``).
    build_time : float
        Seconds spent deriving/generating (or loading) the kernels, including the C compile.
    backend : str
        ``"c"`` (compiled C kernels) or ``"python"`` (generated Python kernels); both give the
        same numbers (to 1e-15 relative; in practice bit for bit).  See [`compile_system`][nhcontrol.compiled.compile_system].
    library_path : pathlib.Path or None
        The shared library of the C kernels (None for the Python back-end).
    """

    def __init__(self, module: ModuleType, meta: Mapping[str, Any], *, from_cache: bool,
                 source_path: Path | None, build_time: float, ckernels: "_cb.CKernels | None" = None) -> None:
        self._mod = module
        self.backend: str = "c" if ckernels is not None else "python"
        self.library_path: Path | None = ckernels.path if ckernels is not None else None
        self._ck = ckernels
        self.name: str = meta["name"]
        self.coordinates: tuple[str, ...] = tuple(meta["coordinates"])
        self.velocities: tuple[str, ...] = tuple(meta["velocities"])
        self.inputs: tuple[str, ...] = tuple(meta["inputs"])
        self.parameters: Mapping[str, float] = MappingProxyType(dict(zip(meta["parameter_names"],
                                                                         meta["parameter_defaults"])))
        self.holonomic_names: tuple[str, ...] = tuple(meta["holonomic_names"])
        self.nonholonomic_names: tuple[str, ...] = tuple(meta["nonholonomic_names"])
        self.affine_names: tuple[str, ...] = tuple(meta.get("affine_names", ()))
        self.clock: str | None = meta.get("clock")   # clock coordinate (MultibodySystem.add_clock)
        # inputs that enter the nonholonomic constraints B(x, u) ẋ + b(x, u) = 0 (their rates
        # enter the acceleration level, D ẍ = Qd − E u̇)
        self.constraint_inputs: tuple[str, ...] = tuple(meta.get("constraint_inputs", ()))
        # first-order states z among the inputs, ż = H(x, ẋ, u) (kernel `rate_terms`)
        self.first_order_states: tuple[str, ...] = tuple(meta.get("first_order_states", ()))
        self.n: int = len(self.coordinates)
        self.m: int = len(self.holonomic_names)
        self.l: int = len(self.nonholonomic_names)  # noqa: E741
        self.ninputs: int = len(self.inputs)
        self.model_hash: str = meta["key"]
        self.from_cache = from_cache
        self.source_path = source_path
        self.build_time = build_time
        self._p0 = _ro(np.array(meta["parameter_defaults"], dtype=float))
        self._u0 = _ro(np.zeros(self.ninputs))
        self._sizes = {"x": self.n, "xd": self.n, "xdd": self.n, "a": self.n, "v": self.n,
                       "lam": self.m + self.l, "u": self.ninputs, "p": len(self._p0),
                       "ud": self.ninputs}
        self._argnames = {"x": "x", "xd": "xd", "xdd": "xdd", "a": "a", "v": "v", "lam": "lam",
                          "u": "u", "p": "p", "ud": "ud"}
        self._zeros = {g: _ro(np.zeros(sz)) for g, sz in self._sizes.items()}
        # defaults as Python lists for the one-point fast path (never mutated by the kernels)
        self._lists0 = {g: (self._p0 if g == "p" else z).tolist() for g, z in self._zeros.items()}
        self._body_specs = [b for b in meta.get("bodies", ()) if b.get("mass") is not None]
        self._bodies_fn = None
        self._checked: set[bytes] = set()   # parameter vectors already checked (bounded)
        if self._body_specs:  # expressions from the verified kernel module (same trust as its code)
            args = ", ".join(f"_p{i}" for i in range(len(self._p0))) or "*_"
            body = ", ".join(f"({b['mass']}, {b['inertia']})" for b in self._body_specs)
            self._bodies_fn = eval(f"lambda {args}: ({body},)", {"math": math})  # noqa: S307
        funcs = list(DIRECT_KERNELS) + [f for f in _FUNC_ARGS
                                        if f not in _RATE_FUNCS or self.first_order_states]
        if ckernels is not None:
            missing = [nm for nm in funcs if nm not in ckernels.one or nm not in ckernels.many]
            if missing:
                raise CacheError(f"the C kernel library {ckernels.path} lacks the functions {missing}")
            # one point: float64 contiguous 1-D arrays (finiteness checked in C); N points: as Python
            self._fs = {nm: ckernels.one[nm] for nm in funcs}
            self._fv = {nm: ckernels.many[nm] for nm in funcs}
        else:
            self._fs = {nm: getattr(module, nm + "_s") for nm in funcs}
            self._fv = {nm: getattr(module, nm + "_v") for nm in funcs}
        # kernel -> (function, argument groups, positions of the kernel's own arguments, output index)
        self._routes: dict[str, tuple[str, tuple[str, ...], tuple[int, ...] | None, int]] = {}
        for name, sig in KERNEL_SIGNATURES.items():
            if name in DIRECT_KERNELS:
                self._routes[name] = (name, sig, None, 0)  # pos None: arguments in order
                continue
            fn, amap, field = ROUTES[name]
            groups = _FUNC_ARGS[fn]
            pos = tuple(groups.index(amap[a]) if a in amap else groups.index(a) for a in sig)
            if pos == tuple(range(len(groups))):
                pos = None
            self._routes[name] = (fn, groups, pos, _FUNC_FIELDS[fn].index(field))
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"CompiledModel is immutable; cannot set {name!r} (compile a new model "
                                 f"or pass parameters with p=...)")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ helpers
    @property
    def dof(self) -> float:
        """Degrees of freedom ``n − m − l/2`` without the clock (see `MultibodySystem.dof`)."""
        c = 1 if self.clock is not None else 0
        return (self.n - c) - self.m - (self.l - c) / 2

    @property
    def first_order_odes(self) -> int:
        """``2(n − m) − l``: the size of the minimal state ``[x_ai, ẋ_ai, x_ad]`` (Eq. (4.123));
        with a clock (`MultibodySystem.add_clock`) one less: the linearization state has
        ``first_order_odes + 1`` entries, one ``x_ad`` entry being the clock's deviation."""
        c = 1 if self.clock is not None else 0
        return 2 * (self.n - c - self.m) - (self.l - c)

    def param_vector(self, **overrides: float) -> Array:
        """Parameter vector ``p`` (in kernel order) from the defaults and ``overrides``.

        Raises
        ------
        ModelError
            For a name that is not a parameter of the model.
        """
        bad = sorted(set(overrides) - set(self.parameters))
        if bad:
            raise ModelError(f"unknown parameter(s) {bad} for model {self.name!r}; valid names are "
                             f"{list(self.parameters)}")
        vals = []
        for k, v in self.parameters.items():
            val = overrides.get(k, v)
            try:
                vals.append(float(val))
            except (TypeError, ValueError) as exc:
                raise ModelError(f"parameter {k}={val!r} of model {self.name!r} is not a real number") from exc
        return self.check_parameters(vals, changed=overrides)

    def check_parameters(self, p: ArrayLike, changed: Any = None) -> Array:
        """Check a parameter vector against what the bodies of the model can be.

        Every value must be finite; every body whose mass and inertia depend on parameters
        only must get a positive mass and an inertia tensor that is symmetric, positive
        semidefinite and (for a body turning about more than one axis) satisfies the triangle
        inequalities of its principal moments.

        Parameters
        ----------
        p : (P,) array_like
            Parameter vector in kernel order.
        changed : iterable of str, optional
            Names of the parameters the user set (named in the messages); all when omitted.

        Returns
        -------
        (P,) ndarray
            ``p`` as floats.

        Raises
        ------
        ModelError
            Naming the parameters, their values and the body they make impossible.
        """
        pv = np.asarray(p, dtype=float)
        names = list(self.parameters)
        if pv.shape != (len(names),):
            raise ModelError(f"parameter vector p of model {self.name!r} must have shape ({len(names)},) "
                             f"(order {names}), got {pv.shape}")
        changed = set(names if changed is None else changed)
        bad = [f"{k}={v!r}" for k, v in zip(names, pv.tolist()) if not math.isfinite(v)]
        if bad:
            raise ModelError(f"parameter value(s) {', '.join(bad)} of model {self.name!r} are not finite; "
                             f"give finite numbers")
        if self._bodies_fn is None:
            return pv
        token = pv.tobytes()
        if token in self._checked:  # the same values were found possible before
            return pv
        from ..modeling.validation import inertia_problem

        problems = []
        for spec, (mass, inertia) in zip(self._body_specs, self._bodies_fn(*pv.tolist())):
            if mass is None:
                continue
            shown = [k for k in spec["params"] if k in changed] or spec["params"]
            given = ", ".join(f"{k}={float(pv[names.index(k)])!r}" for k in shown)
            if not mass > 0:
                problems.append(f"body {spec['name']!r} gets the mass {mass!r} from {given}; a mass must "
                                f"be positive")
            why = inertia_problem(np.array(inertia, dtype=float), spatial=spec["spatial"])
            if why:
                problems.append(f"the inertia tensor of body {spec['name']!r} {why} (from {given})")
        if problems:
            raise ModelError(f"parameter values of model {self.name!r} describe bodies that cannot exist: "
                             + "; ".join(problems))
        if len(self._checked) >= 256:
            self._checked.clear()
        self._checked.add(token)
        return pv

    def _bad_shape(self, arg: str, a: np.ndarray, label: str | None = None) -> ModelError:
        size = self._sizes[arg]
        return ModelError(f"{label or arg} of model {self.name!r} must have shape ({size},) or (N, {size}), "
                          f"got {a.shape}")

    def _eval(self, fname: str, groups: tuple[str, ...], values: tuple,
              labels: tuple[str, ...] | None = None, display: str | None = None) -> tuple:
        shown = display or fname
        # fast path for one point: every argument None or a float64 vector of the right length
        lists: list | None = []
        sizes = self._sizes
        if self._ck is not None:
            arrays0 = self._zeros
            for g, val in zip(groups, values):
                if val is None:
                    lists.append(self._p0 if g == "p" else arrays0[g])
                elif type(val) is np.ndarray and val.ndim == 1 and val.dtype == np.float64 \
                        and val.shape[0] == sizes[g] and val.flags.c_contiguous:
                    lists.append(val)
                else:
                    lists = None
                    break
            if lists is not None:
                return self._call_c(fname, lists, shown)
        else:
            lists0 = self._lists0
            for g, val in zip(groups, values):
                if val is None:
                    lists.append(lists0[g])
                elif type(val) is np.ndarray and val.ndim == 1 and val.dtype == np.float64 \
                        and val.shape[0] == sizes[g]:
                    lists.append(val.tolist())
                else:
                    lists = None
                    break
            if lists is not None:
                return self._call_scalar(fname, lists, shown)
        arrs = []
        N = -1
        for i, (g, val) in enumerate(zip(groups, values)):
            if val is None:
                a = self._p0 if g == "p" else self._zeros[g]
            elif g == "p" and isinstance(val, Mapping):
                a = self.param_vector(**val)
            else:
                a = np.asarray(val, dtype=float)
            if a.ndim == 1:
                if a.shape[0] != self._sizes[g]:
                    raise self._bad_shape(g, a, labels and labels[i])
            elif a.ndim == 2:
                if a.shape[1] != self._sizes[g]:
                    raise self._bad_shape(g, a, labels and labels[i])
                if N >= 0 and a.shape[0] != N:
                    raise ModelError(f"stacked arguments of {shown} disagree on the number of points N: "
                                     f"{g} has {a.shape[0]} rows, an earlier argument {N}")
                N = a.shape[0]
            else:
                raise self._bad_shape(g, a, labels and labels[i])
            arrs.append(a)
        if N > 0:
            nfields = len(_FUNC_FIELDS.get(fname, ("out",)))
            check_allocation(8.0 * N * nfields * max(self.n, self.m + self.l, self.ninputs, 1) ** 2,
                             f"{shown} of model {self.name!r} at N = {N} stacked points (its {nfields} "
                             f"output array(s) alone)", error=ModelError,
                             hint="evaluate the points in chunks (e.g. np.array_split) or fewer points")
        try:
            if N < 0:
                if self._ck is not None:
                    out = self._call_c(fname, [np.ascontiguousarray(a) for a in arrs], shown)
                else:
                    out = self._call_scalar(fname, [a.tolist() for a in arrs], shown)
            else:
                arrs2 = [a if a.ndim == 2 else a[None, :] for a in arrs]
                with np.errstate(all="ignore"):
                    out = self._fv[fname](*arrs2, N)
                for o in out:
                    o.flags.writeable = False
                    if not np.isfinite(o).all():
                        bad = np.argwhere(~np.isfinite(o))[0]
                        raise ModelError(f"{shown} of model {self.name!r} is not finite at point "
                                         f"{int(bad[0])} of {N}; the point is outside the model's "
                                         f"domain (e.g. a division by zero) or an argument is NaN/inf")
        except (ZeroDivisionError, ValueError, OverflowError) as exc:
            if isinstance(exc, ModelError):
                raise
            raise ModelError(f"{shown} of model {self.name!r} cannot be evaluated at this point "
                             f"({type(exc).__name__}: {exc}); the point is outside the model's domain") from exc
        return out

    def _call_scalar(self, fname: str, lists: list, shown: str) -> tuple:
        """The one-point function on argument lists (finiteness of the arguments checked).

        The generated one-point functions return views of one buffer that they made
        read-only (codegen), so the results need no further protection.
        """
        if not math.isfinite(sum(map(sum, lists))):
            # a sum can overflow to inf with finite entries: decide entry by entry
            if not all(math.isfinite(v) for li in lists for v in li):
                raise ModelError(f"{shown}: the arguments of model {self.name!r} contain NaN or inf")
        try:
            return self._fs[fname](*lists)
        except (ZeroDivisionError, ValueError, OverflowError) as exc:
            raise ModelError(f"{shown} of model {self.name!r} cannot be evaluated at this point "
                             f"({type(exc).__name__}: {exc}); the point is outside the model's domain") from exc

    def _call_c(self, fname: str, arrays: list, shown: str) -> tuple:
        """The one-point C function on contiguous float64 arrays (the C code checks finiteness
        of the arguments and the floating-point exception flags of the evaluation)."""
        try:
            return self._fs[fname](*arrays)
        except _cb.FloatingPointFlags as exc:
            if exc.flags & 16:
                raise ModelError(f"{shown}: the arguments of model {self.name!r} contain NaN or inf") from None
            if exc.flags & 8:
                raise MemoryError(f"{shown} of model {self.name!r}: the C kernel could not allocate "
                                  f"its work array") from None
            raise ModelError(f"{shown} of model {self.name!r} cannot be evaluated at this point ({exc}); "
                             f"the point is outside the model's domain") from None

    def _kernel(self, name: str, *values: Any) -> Array:
        fn, groups, pos, out_index = self._routes[name]
        if pos is None:
            return self._eval(fn, groups, values, None, name)[out_index]
        lst: list = [None] * len(groups)
        labels = list(groups)
        for pi, v, lab in zip(pos, values, KERNEL_SIGNATURES[name]):
            lst[pi] = v
            labels[pi] = lab
        return self._eval(fn, groups, tuple(lst), tuple(labels), name)[out_index]

    # ------------------------------------------------------------------ fused
    def linearization_terms(self, x: ArrayLike, xd: ArrayLike, xdd: ArrayLike, lam: ArrayLike,
                            u: ArrayLike | None = None, p: ArrayLike | None = None) -> LinearizationTerms:
        """All terms of the linearization (Sect. 4.2.3, Sect. 8.1) from one generated function.

        Parameters
        ----------
        x, xd, xdd : (n,) or (N, n) array_like
            Reference ``x0, ẋ0, ẍ0``.
        lam : (m+l,) or (N, m+l) array_like
            Reference multipliers ``Λ0``.
        u : (k,) or (N, k) array_like, optional
        p : (P,) or (N, P) array_like or mapping, optional

        Returns
        -------
        LinearizationTerms
        """
        out = self._eval("linearization_terms", ("x", "xd", "xdd", "lam", "u", "p"), (x, xd, xdd, lam, u, p))
        return LinearizationTerms(*out)

    def input_rate_terms(self, x: ArrayLike, xd: ArrayLike, ud: ArrayLike | None = None,
                         lam: ArrayLike | None = None, u: ArrayLike | None = None,
                         p: ArrayLike | None = None) -> InputRateTerms:
        """Terms of the inputs in the nonholonomic constraints from one generated function.

        Parameters
        ----------
        x, xd : (n,) or (N, n) array_like
        ud : (k,) or (N, k) array_like, optional
            Input rates ``u̇0`` (zeros when omitted).
        lam : (m+l,) or (N, m+l) array_like, optional
            Multipliers ``Λ0`` (zeros when omitted).
        u, p : as in the other kernels.

        Returns
        -------
        InputRateTerms
        """
        return InputRateTerms(*self._eval("input_rate_terms", ("x", "xd", "ud", "lam", "u", "p"),
                                          (x, xd, ud, lam, u, p)))

    def E(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None,
          p: ArrayLike | None = None) -> Array:
        """``E = ∂(D ẋ + b)/∂u`` (m+l, k), holonomic rows zero: ``D ẍ = Qd − E u̇``."""
        return self._kernel("E", x, xd, u, p)

    def rate_terms(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None,
                   p: ArrayLike | None = None) -> RateTerms:
        """Rates ``H`` of the first-order states and their Jacobians from one generated function.

        Parameters
        ----------
        x, xd : (n,) or (N, n) array_like
        u : (k,) or (N, k) array_like, optional
            The model's inputs, first-order states ``z`` included.
        p : as in the other kernels.

        Returns
        -------
        RateTerms

        Raises
        ------
        ModelError
            If the model has no first-order states, or a rate is not defined at the point.
        """
        self._need_rates()
        return RateTerms(*self._eval("rate_terms", _FUNC_ARGS["rate_terms"], (x, xd, u, p)))

    def rates(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None,
              p: ArrayLike | None = None) -> Array:
        """Rates ``ż = H(x, ẋ, u)`` (r,) of the first-order states (``u`` includes ``z``), from
        a generated function of their own (the field ``H`` of `rate_terms`, without Jacobians).

        Raises
        ------
        ModelError
            If the model has no first-order states, or a rate is not defined at the point.
        """
        self._need_rates()
        return self._eval("rates", _FUNC_ARGS["rates"], (x, xd, u, p))[0]

    def _need_rates(self) -> None:
        if not self.first_order_states:
            raise ModelError(f"model {self.name!r} has no first-order states; add them with "
                             f"add_first_order_states and set_rates")

    def dynamics_terms(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None,
                       p: ArrayLike | None = None) -> DynamicsTerms:
        """``M, Q, D, Qd`` of the index-1 form Eq. (2.119) from one generated function.

        Returns
        -------
        DynamicsTerms
        """
        return DynamicsTerms(*self._eval("dynamics_terms", ("x", "xd", "u", "p"), (x, xd, u, p)))

    # ------------------------------------------------------------------ kernels
    def M(self, x: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """Mass matrix ``M(x, u)`` (n, n), Eq. (2.103)."""
        return self._kernel("M", x, u, p)

    def Q(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """Generalized forces ``Q = Qa + Qv`` (n,), Eqs. (2.104), (2.105), (2.108)."""
        return self._kernel("Q", x, xd, u, p)

    def C(self, x: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """Holonomic constraints ``C(x, u)`` (m,), Eq. (2.109)."""
        return self._kernel("C", x, u, p)

    def Cx(self, x: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂C/∂x`` (m, n)."""
        return self._kernel("Cx", x, u, p)

    def B(self, x: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """Nonholonomic constraint matrix ``B(x, u)`` (l, n), Eq. (2.110)."""
        return self._kernel("B", x, u, p)

    def D(self, x: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``D = [Cx; B]`` (m+l, n), Eq. (2.82)."""
        return self._kernel("D", x, u, p)

    def b(self, x: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """Velocity-free terms ``b`` (m+l,) of the constraints ``D ẋ + b = 0`` (zero for the
        holonomic rows and the homogeneous nonholonomic ones; see `affine_names`)."""
        return self._kernel("b", x, u, p)

    def Qd(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``Qd = -∂(D ẋ)/∂x ẋ`` (m+l,), Eq. (2.117)."""
        return self._kernel("Qd", x, xd, u, p)

    def dMa_dx(self, x: ArrayLike, a: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂(M(x, u) a)/∂x`` (n, n) for a given vector ``a`` (n,)."""
        return self._kernel("dMa_dx", x, a, u, p)

    def dMa_du(self, x: ArrayLike, a: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂(M(x, u) a)/∂u`` (n, k)."""
        return self._kernel("dMa_du", x, a, u, p)

    def dDTlam_dx(self, x: ArrayLike, lam: ArrayLike, u: ArrayLike | None = None,
                  p: ArrayLike | None = None) -> Array:
        """``∂(Dᵀ λ)/∂x`` (n, n) for multipliers ``lam`` (m+l,)."""
        return self._kernel("dDTlam_dx", x, lam, u, p)

    def dQ_dx(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂Q/∂x`` (n, n)."""
        return self._kernel("dQ_dx", x, xd, u, p)

    def dQ_dxd(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂Q/∂ẋ`` (n, n)."""
        return self._kernel("dQ_dxd", x, xd, u, p)

    def dQ_du(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂Q/∂u`` (n, k)."""
        return self._kernel("dQ_du", x, xd, u, p)

    def dDv_dx(self, x: ArrayLike, v: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂(D v + b)/∂x`` (m+l, n) for a velocity ``v`` (n,): ``∂(D v)/∂x`` plus, for affine
        constraints (`affine_names`), ``∂b/∂x`` — the velocity term of Eq. (4.99)."""
        return self._kernel("dDv_dx", x, v, u, p)

    def dDv_du(self, x: ArrayLike, v: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂(D v)/∂u`` (m+l, k)."""
        return self._kernel("dDv_du", x, v, u, p)

    def dQd_dx(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂Qd/∂x`` (m+l, n)."""
        return self._kernel("dQd_dx", x, xd, u, p)

    def dQd_dxd(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂Qd/∂ẋ`` (m+l, n)."""
        return self._kernel("dQd_dxd", x, xd, u, p)

    def dQd_du(self, x: ArrayLike, xd: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂Qd/∂u`` (m+l, k)."""
        return self._kernel("dQd_du", x, xd, u, p)

    def dCxv_dx(self, x: ArrayLike, v: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂(Cx v)/∂x`` (m, n)."""
        return self._kernel("dCxv_dx", x, v, u, p)

    def dBv_dx(self, x: ArrayLike, v: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂(B v)/∂x`` (l, n)."""
        return self._kernel("dBv_dx", x, v, u, p)

    def dC_du(self, x: ArrayLike, u: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
        """``∂C/∂u`` (m, k)."""
        return self._kernel("dC_du", x, u, p)

    def kernel_source(self) -> str:
        """The generated Python kernel module's source text (what the cache key stands for)."""
        src = getattr(self._mod, "__nhcontrol_source__", None)
        raw = getattr(self._mod, "__nhcontrol_source_bytes__", None)
        if src is None and raw is not None:   # the bytes verified and executed at load time
            src = raw.decode("utf-8")
        if src is None and self.source_path is not None:
            try:
                src = _cache.verify_artefact(self.source_path).decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CacheError(f"cannot read the kernel module {self.source_path} of model "
                                 f"{self.name!r} to pickle it ({exc}); recompile the model") from exc
        if src is None:  # pragma: no cover - every module is created with its source
            raise CacheError(f"the kernel source of model {self.name!r} is not available; recompile it")
        return src

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # A model pickles by its cache key plus the generated *Python* kernel source and its
        # sha256: the receiving process reuses the model it already has for that key, else the
        # disk cache, else the carried source (hash-checked) - never a SymPy re-derivation.
        src = self.kernel_source()
        return (load_compiled, (self.model_hash, src, hashlib.sha256(src.encode("utf-8")).hexdigest()))

    def __repr__(self) -> str:
        return (f"CompiledModel({self.name!r}, n={self.n}, m={self.m}, l={self.l}, k={self.ninputs}, "
                f"hash={self.model_hash[:12]}, from_cache={self.from_cache}, backend={self.backend!r})")


_REGISTRY: "weakref.WeakValueDictionary[str, CompiledModel]" = weakref.WeakValueDictionary()
"""Per-process registry: cache key -> CompiledModel (weak, so unused models are freed)."""
_REGISTRY_LOCK = threading.Lock()


def _register(cm: CompiledModel) -> CompiledModel:
    with _REGISTRY_LOCK:
        have = _REGISTRY.get(cm.model_hash)
        if have is not None:
            return have
        _REGISTRY[cm.model_hash] = cm
        return cm


def _registered(cm: CompiledModel) -> CompiledModel:
    """Record ``cm`` for unpickling in this process (unless a model with its key is alive); return ``cm``."""
    _register(cm)
    return cm


def _c_kernels(key: str, directory: Path | None, backend: str, model_name: str,
               units: "Callable[[], list[str]] | None") -> "_cb.CKernels | None":
    """The C kernels for ``key``: the library cached in ``directory`` (hash-checked) or, when
    ``units`` can print the C source, a fresh build; None means the Python kernels.

    ``backend="auto"``: a missing compiler (or a model the C printer cannot translate) gives
    one warning and the Python kernels; ``backend="c"`` raises instead.
    """
    if backend == "python":
        return None
    if directory is not None:
        path = _cb.library_path(key, directory)
        if path.exists():
            try:
                return _cb.CKernels(path, key)
            except (CacheError, OSError, KeyError, ValueError) as exc:
                _cache.warn_once("artefact", path, f"ignoring unusable C kernel library {path} of model "
                                                   f"{model_name!r} ({exc}); it was discarded and is rebuilt",
                                 stacklevel=5)
                _cache.discard_artefact(path)
    if units is None:
        return None   # unpickled where the library is not cached: the (identical) Python kernels
    try:
        problem = _cb.cffi_problem()
        if problem:
            raise _cb.CompilerUnavailable(problem)
        text = units()
        try:
            path = _cb.library_path(key, directory if directory is not None else _cache.private_fallback_dir())
            _cb.compile_library(text, path)
        except OSError:
            if directory is None:
                raise
            path = _cb.library_path(key, _cache.private_fallback_dir())   # cache not writable
            _cb.compile_library(text, path)
        return _cb.CKernels(path, key, built=True)
    except (_cb.CompilerUnavailable, CCodegenError, CacheError, OSError) as exc:
        if backend == "c":
            fix = "" if isinstance(exc, CCodegenError) else "install a C compiler, or "
            raise ModelError(f"the C kernels of model {model_name!r} cannot be built ({exc}); {fix}use the "
                             f"Python kernels with {_cb.ENV_BACKEND}=python or compile(backend='python')") from exc
        kind = "compiler" if isinstance(exc, _cb.CompilerUnavailable) else f"model:{key}"
        _cache.warn_once("backend", kind,
                         f"nhcontrol uses the Python kernels for model {model_name!r} (same results, slower): "
                         f"the C kernels cannot be built ({exc}). Set {_cb.ENV_BACKEND}=python to choose the "
                         f"Python kernels without this warning", stacklevel=6)
        return None


def load_compiled(key: str, source: str | None = None, sha256: str | None = None, *,
                  cache_dir: str | Path | None = None) -> CompiledModel:
    """Reload a [`CompiledModel`][nhcontrol.compiled.CompiledModel] from its cache key (the target of unpickling).

    Parameters
    ----------
    key : str
        `CompiledModel.model_hash`.
    source, sha256 : str, optional
        The generated Python kernel module and the sha256 hex digest of its UTF-8 text, as
        a pickled model carries them.
    cache_dir : path-like, optional
        Kernel cache directory (default ``$NHCONTROL_CACHE_DIR`` or ``~/.cache/nhcontrol``).

    Returns
    -------
    CompiledModel
        In order of preference: the model with this key already alive in this process
        (the same object), the disk cache, or ``source`` after its hash is checked (it is then
        written to the cache for the next process).  The C kernels are used when the back-end
        (``$NHCONTROL_BACKEND``) allows it and their library is in the cache (hash-checked);
        otherwise the Python kernels, which give the same numbers.

    Raises
    ------
    CacheError
        When the source does not match its sha256 or its own key, or when neither the cache
        nor a source is available.
    """
    with _REGISTRY_LOCK:
        have = _REGISTRY.get(key)
    if have is not None:
        return have
    t0 = time.perf_counter()
    backend = _cb.requested_backend(None)
    path = _cache.cache_path(key, cache_dir)
    cm = _load_cached(path, key, t0)
    if cm is not None:
        return _register(_with_c(cm, backend, None, t0))
    if source is None:
        raise CacheError(f"no compiled model with key {key[:12]}... in this process or in the kernel "
                         f"cache {path.parent}; compile the model again (system.compile())")
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    if sha256 is None or digest != sha256:
        raise CacheError(f"the kernel source carried for model key {key[:12]}... fails its integrity "
                         f"check (sha256 {digest[:12]}... != {str(sha256)[:12]}...); it is not executed. "
                         "Recompile the model and pickle it again")
    module, spath = _store_and_load(path, key, source, warn=False)
    if module.META.get("key") != key:
        raise CacheError(f"the kernel source carried for key {key[:12]}... belongs to key "
                         f"{str(module.META.get('key'))[:12]}...; it is not used")
    cm = CompiledModel(module, module.META, from_cache=True, source_path=spath, build_time=time.perf_counter() - t0)
    return _register(_with_c(cm, backend, None, t0))


def _with_c(cm: CompiledModel, backend: str, units: "Callable[[], list[str]] | None", t0: float) -> CompiledModel:
    """``cm`` (Python kernels) with the C kernels attached when the back-end and the cache
    (or a build from ``units``) allow it."""
    directory = cm.source_path.parent if cm.source_path is not None else None
    ck = _c_kernels(cm.model_hash, directory, backend, cm.name, units)
    if ck is None:
        return cm
    try:
        return CompiledModel(cm._mod, cm._mod.META, from_cache=cm.from_cache and ck.loaded_from_cache,
                             source_path=cm.source_path, build_time=time.perf_counter() - t0,
                             ckernels=ck)
    except CacheError as exc:
        # a library that does not serve this model's kernels (its layout lacks some): discarded,
        # rebuilt from ``units`` when available, else the Python kernels
        _cache.warn_once("artefact", ck.path, f"ignoring unusable C kernel library {ck.path} of model "
                                              f"{cm.name!r} ({exc}); it was discarded", stacklevel=4)
        _cache.discard_artefact(ck.path)
        if not ck.loaded_from_cache or units is None:
            return cm
        return _with_c(cm, backend, units, t0)


def _first_call(cm: CompiledModel) -> None:
    """Call the one-point dynamics kernel once at the defaults: a module that imports but
    cannot run (e.g. a damaged function body) fails here, not at the user's first call.
    Domain errors of the model itself (a division by zero at x = 0) are not failures."""
    try:
        cm._fs["dynamics_terms"](*(cm._lists0[g] for g in _FUNC_ARGS["dynamics_terms"]))
    except (ArithmeticError, ValueError):
        pass


def _load_cached(path: Path, key: str, t0: float) -> CompiledModel | None:
    """The model from the cached artefacts of ``key``, or None when there are none or they are
    unusable (then they are discarded, with one warning, and the caller rebuilds)."""
    if not (path.exists() or _cache.record_path(path).exists()):
        return None
    if not _cache.record_path(path).exists() and _cache.file_problem(path) is None:
        _cache.discard_module(path, key)  # written by a version without records: rebuilt quietly
        return None
    try:
        module = _cache.load_module(path, key)
        meta = module.META
        if meta.get("key") != key:
            raise CacheError(f"it belongs to key {str(meta.get('key'))[:12]}..., not {key[:12]}...")
        cm = CompiledModel(module, meta, from_cache=True, source_path=path, build_time=time.perf_counter() - t0)
        _first_call(cm)
        return cm
    except (Exception, SystemExit) as exc:
        _cache.discard_module(path, key)
        _cache.warn_once("artefact", path, f"ignoring unusable kernel cache file {path}: {exc}; it was "
                                           f"discarded and the kernels are rebuilt", stacklevel=4)
        return None


def _store_and_load(path: Path | None, key: str, source: str, warn: bool) -> tuple[ModuleType, Path | None]:
    """Write ``source`` to the cache (with its sha256 record) and import it from there; if that
    fails, execute it from memory (``path`` None)."""
    if path is not None and _cache.write_atomic(path, source, quiet=not warn):
        try:
            return _cache.load_module(path, key), path
        except CacheError:
            _cache.discard_module(path, key)
    return _cache.module_from_source(source, key), None


def _body_meta(mb: "MultibodySystem") -> list[dict]:
    """Mass and inertia of every body as Python expressions of the parameters ``_p0, _p1, ...``
    (None when they depend on coordinates or inputs), for the call-time checks of parameter
    values ([`check_parameters`][nhcontrol.compiled.CompiledModel.check_parameters])."""
    import numpy as _np
    import sympy as sp
    from sympy.printing.pycode import pycode

    from ..modeling.validation import rotation_axes

    params = list(mb.parameters)
    sub = {s: sp.Symbol(f"_p{i}") for i, s in enumerate(params)}
    values = {s: sp.Float(mb.defaults[s.name]) for s in params}
    rng = _np.random.default_rng(7)
    values.update({s: sp.Float(float(v)) for s in list(mb.coordinates) + list(mb.inputs)
                   for v in rng.uniform(-1.0, 1.0, 1)})
    out = []
    for b in mb.bodies:
        free = b.mass.free_symbols | b.inertia.free_symbols
        ok = free <= set(params)
        used = [s.name for s in params if s in free]
        out.append({"name": b.name, "params": used,
                    "mass": pycode(b.mass.xreplace(sub), fully_qualified_modules=True) if ok else None,
                    "inertia": pycode(sp.Matrix(b.inertia).xreplace(sub).tolist(),
                                      fully_qualified_modules=True) if ok else None,
                    "spatial": rotation_axes(b.orientation, list(mb.coordinates) + list(mb.inputs), values) > 1})
    return out


def _meta(mb: "MultibodySystem", key: str) -> dict:
    import sympy as sp

    defaults = mb.defaults
    return {"bodies": _body_meta(mb),"name": mb.name, "key": key,
            "coordinates": [s.name for s in mb.coordinates], "velocities": [s.name for s in mb.velocities],
            "inputs": [s.name for s in mb.inputs], "parameter_names": [s.name for s in mb.parameters],
            "parameter_defaults": [defaults[s.name] for s in mb.parameters],
            "holonomic_names": [c.name for c in mb.holonomic],
            "nonholonomic_names": [c.name for c in mb.nonholonomic],
            "affine_names": [c.name for c in mb.nonholonomic if c.affine],
            "constraint_inputs": [s.name for s in mb.inputs
                                  if any(s in sp.sympify(c.expr).free_symbols for c in mb.nonholonomic)],
            **({"clock": mb.clock.name} if getattr(mb, "clock", None) is not None else {}),
            **({"first_order_states": [z.name for z in _rates(mb)[0]]} if _rates(mb)[1] else {}),
            "generator": GENERATOR_VERSION}


def _rates(mb: "MultibodySystem") -> tuple[tuple, tuple]:
    """``(states z, rates H)`` of the first-order states, both empty unless every state has a rate."""
    states = tuple(getattr(mb, "first_order_states", ()))
    if not states:
        return (), ()
    try:
        return states, tuple(mb.rates)
    except ModelError:
        return (), ()


class _Derivation:
    """The kernel specifications of one model, derived once and shared by the Python and the C
    printers of one build (with the per-function plans both print)."""

    def __init__(self, mb: "MultibodySystem") -> None:
        self.mb = mb
        self._specs: tuple | None = None
        self.plans: dict = {}

    @property
    def specs(self) -> tuple:
        if self._specs is None:
            eom = self.mb.equations()
            specs, symbols = kernel_specs(eom, _rates(self.mb)[1])
            self._specs = (specs, eom.graph, symbols)
        return self._specs


def generate_source(mb: "MultibodySystem", key: str | None = None, cse: bool = True,
                    _derived: _Derivation | None = None) -> str:
    """Derive the equations of ``mb`` and return the source of its kernel module.

    ``cse=False`` switches off the common-subexpression temporaries of the generated code
    (the values are identical bit for bit; used to test exactly that).
    """
    key = key or _cache.cache_key(mb.description())
    d = _derived or _Derivation(mb)
    specs, graph, symbols = d.specs
    return generate_module(specs, graph, symbols, _meta(mb, key), cse=cse, plans=d.plans)


def generate_c_source(mb: "MultibodySystem", key: str | None = None,
                      _derived: _Derivation | None = None) -> list[str]:
    """Derive the equations of ``mb`` and return the C translation units of its kernel library
    (``[entry points and layout, chunk units...]``, see ``nhcontrol.compiled.ccodegen``).

    Raises
    ------
    ModelError
        When an expression of the model has no C translation.
    """
    key = key or _cache.cache_key(mb.description())
    d = _derived or _Derivation(mb)
    specs, graph, symbols = d.specs
    return generate_c(specs, graph, symbols, {"name": mb.name, "key": key}, plans=d.plans)[0]


def compile_system(mb: "MultibodySystem", cache: bool = True,
                   cache_dir: str | Path | None = None, backend: str | None = None) -> CompiledModel:
    """Compile ``mb`` into a [`CompiledModel`][nhcontrol.compiled.CompiledModel] (load from / store to the disk cache).

    Parameters
    ----------
    mb : MultibodySystem
    cache : bool
        Use the disk cache.
    cache_dir : path-like, optional
        Cache directory (default ``$NHCONTROL_CACHE_DIR`` or ``~/.cache/nhcontrol``).
    backend : {"c", "python"}, optional
        Kernel back-end; default ``$NHCONTROL_BACKEND``, and when that is unset the C kernels
        if a C compiler works, else the Python kernels with one warning.  ``"c"`` raises
        `ModelError` when the C kernels cannot be built.

    Returns
    -------
    CompiledModel
    """
    t0 = time.perf_counter()
    which = _cb.requested_backend(backend)
    key = _cache.cache_key(mb.description())
    path = _cache.cache_path(key, cache_dir) if cache else None

    derived = _Derivation(mb)

    def c_units() -> list[str]:
        return generate_c_source(mb, key, derived)

    if path is not None:
        cm = _load_cached(path, key, t0)
        if cm is not None:
            return _registered(_with_c(cm, which, c_units, t0))
    source = generate_source(mb, key, _derived=derived)
    module, spath = _store_and_load(path, key, source, warn=True)
    cm = CompiledModel(module, module.META, from_cache=False, source_path=spath, build_time=time.perf_counter() - t0)
    return _registered(_with_c(cm, which, c_units, t0))


__all__ = ["CompiledModel", "load_compiled", "LinearizationTerms", "DynamicsTerms", "InputRateTerms", "RateTerms",
           "compile_system", "generate_source",
           "generate_c_source",
           "KERNEL_ARGS", "LINEARIZATION_FIELDS"]
