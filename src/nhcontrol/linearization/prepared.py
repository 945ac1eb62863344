"""The prepared one-point linearization: model, partition and buffers bound once.

`Linearizer` (made by `CompiledModel.linearizer()` or `prepare_linearizer()`) is the hot
path of estimators (EKF) and real-time iterations of nonlinear MPC: a callable
``lz(x, xd, xdd, lam, u=None, *, out=None) -> (A, B)`` that runs, for a model with C kernels,
the fused exact kernel, ``C(x0)`` for the admissibility check and the compiled Steps 1-7 of the
third procedure (`nhcontrol.linearization._cpoint`) in **one** foreign call, with every buffer
(the kernel's output, the work arrays, the C pointers) allocated when it is made.  The
admissibility check of the point and the conditioning pre-check of the inverted blocks run in C
and only return flags; when a flag is raised (or a kernel refuses the point), the call repeats
the point through `nhcontrol.linearization.linearize`, which raises (or warns) with its own
message, or returns the matrices when the exact check passes.  The numbers are those of
`linearize` at the same point (the same kernel and routine: bit for bit with the C kernels).

Without C kernels (``NHCONTROL_BACKEND=python``, no compiler, inputs in the nonholonomic
constraints) every call goes through `linearize` (same numbers, slower).

A `Linearizer` is not meant to be shared between threads without care: its buffers are
protected by a lock, so concurrent calls are correct but serialised; make one per thread for
parallel use.
"""

from __future__ import annotations

import math
from _thread import allocate_lock as _new_lock   # threading.Lock, without importing threading
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from .._util.errors import ArgumentTypeError, ReferenceMotionError
from .._util.validation import (ADMISSIBILITY_TOL, COND_MAX, INPUT_CONSTRAINT_ATOL, require_model,
                                require_reference)
from . import _cpoint
from .partition import Partition

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray
    from nhcontrol.compiled import CompiledModel
    from nhcontrol.reference import Reference

__all__ = ["Linearizer", "prepare_linearizer"]

_nd = np.ndarray
_f64 = np.dtype(np.float64)


class _PointReference:
    """One reference point as the reference `linearize` expects (its general path repeats a
    point with it, for the exact checks and their messages)."""

    steady = False
    lam_source = "given"

    def __init__(self, cm: CompiledModel, x: NDArray[np.float64], xd: NDArray[np.float64],
                 xdd: NDArray[np.float64], lam: NDArray[np.float64],
                 u: NDArray[np.float64], p: NDArray[np.float64], tol: float) -> None:
        self.coordinates = tuple(cm.coordinates)
        self.model_name = str(getattr(cm, "name", ""))
        self.parameters = p
        self.check_tol = tol
        self._v = (x, xd, xdd, lam, u)

    def values(self, ts: Any) -> tuple[NDArray[np.float64], ...]:
        N = np.atleast_1d(ts).shape[0]
        return tuple(np.broadcast_to(v, (N, v.shape[0])) for v in self._v)

    def _one(self, i: int, ts: Any) -> NDArray[np.float64]:
        v = self._v[i]
        return v if np.ndim(ts) == 0 else np.broadcast_to(v, (np.shape(ts)[0], v.shape[0]))

    def x(self, t: Any) -> NDArray[np.float64]:
        return self._one(0, t)

    def xd(self, t: Any) -> NDArray[np.float64]:
        return self._one(1, t)

    def xdd(self, t: Any) -> NDArray[np.float64]:
        return self._one(2, t)

    def lam(self, t: Any) -> NDArray[np.float64]:
        return self._one(3, t)

    def u(self, t: Any) -> NDArray[np.float64]:
        return self._one(4, t)


class Linearizer:
    """A prepared one-point linearization ``(x0, ẋ0, ẍ0, Λ0, u0) -> (A, B)`` of one model and
    partition (third procedure, thesis Sect. 4.2.3, Eqs. (4.96)-(4.125); input matrix of
    Sect. 8.1).

    Make it with [`CompiledModel.linearizer()`][nhcontrol.compiled.CompiledModel.linearizer]
    or [`prepare_linearizer()`][nhcontrol.linearization.prepare_linearizer]; call it as often as
    needed.

    Parameters
    ----------
    cm : CompiledModel
    partition : Partition or mapping
        ``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)); a mapping goes through `Partition.from_dict()`.
    p : (P,) array_like, optional
        Parameter vector (kernel order); default the model's defaults. Checked once here.
    check : bool
        Check at every call that the point is a motion of the model (``C(x0) = 0``,
        ``D ẋ0 = 0``, ``D ẍ0 = Q_d``, ``M ẍ0 + DᵀΛ0 = Q``, relative tolerance ``tol``) and that
        ``D_dd``, ``∂C/∂x_d``, ``B̄_ad`` are well conditioned, as `linearize` does (in C:
        flags; an error only when a check fails, with `linearize`'s message).
    cond_max : float
        Condition-number tolerance of the blocks.
    tol : float
        Relative tolerance of the admissibility check (`linearize` uses the reference's
        ``check_tol``, default ``1e-8``).

    Attributes
    ----------
    model, partition : the bound model and partition
    states : tuple of str
        Names of the ``ns = 2(n-m)-l`` states ``[x_ai, ẋ_ai, x_ad]`` (Eq. (4.123)).
    inputs : tuple of str
    nstates, ninputs : int
    compiled : bool
        True when calls run the compiled one-call path (C kernels), False when they go
        through `linearize`.

    Examples
    --------
    >>> from nhcontrol.models import benchmark_bicycle as bb          # doctest: +SKIP
    >>> cm = bb.model(); ref = bb.steady_forward(cm, 5.0)               # doctest: +SKIP
    >>> lz = cm.linearizer(bb.PARTITION_4_172)                          # doctest: +SKIP
    >>> A, B = lz(*ref.values(0.0))                                     # doctest: +SKIP
    >>> A, B = lz.at(ref, 0.3)                                          # doctest: +SKIP
    """

    def __init__(self, cm: CompiledModel, partition: Partition | Mapping[str, Any], *,
                 p: ArrayLike | None = None, check: bool = True, cond_max: float = COND_MAX,
                 tol: float = ADMISSIBILITY_TOL) -> None:
        require_model(cm, "cm", "linearizer", needs=("linearization_terms",))
        if partition is None:
            raise ArgumentTypeError(
                "linearizer: give a partition (Partition or mapping with 'independent', "
                "'admissible_dependent', 'dependent'); nhcontrol.linearization.suggest_partition(cm, "
                "ref) proposes one for a reference")
        if not isinstance(partition, Partition):
            partition = Partition.from_dict(partition)
        idx = partition.indices(cm)
        if not (isinstance(tol, (int, float)) and 0.0 < float(tol) < math.inf):
            raise ReferenceMotionError(f"linearizer: tol must be a positive finite number, got {tol!r}")
        if not (isinstance(cond_max, (int, float)) and float(cond_max) > 1.0):
            raise ArgumentTypeError(f"linearizer: cond_max must be a number > 1, got {cond_max!r}")
        n, m, l, k = int(idx.n), int(idx.m), int(idx.l), int(cm.ninputs)  # noqa: E741
        self.model = cm
        self.partition = partition
        self.check = bool(check)
        self.cond_max = float(cond_max)
        self.tol = float(tol)
        self._idx = idx
        self._n, self._c, self._k = n, m + l, k
        self.nstates = 2 * (n - m - l) + l
        self.ninputs = k
        self.inputs = tuple(cm.inputs)
        n1 = n - m - l
        ai = [cm.coordinates[i] for i in idx.ai]
        self.states = tuple(ai) + tuple(f"{s}_d" for s in ai) + tuple(cm.coordinates[i] for i in idx.ad)
        assert len(self.states) == self.nstates == 2 * n1 + l
        p0 = np.asarray(getattr(cm, "_p0", ()), dtype=float) if p is None else cm.check_parameters(p)
        self._p = np.array(p0, dtype=float)          # own, contiguous copy
        self._p.setflags(write=False)
        self._u0 = np.zeros(k)
        self._u0.setflags(write=False)
        self._lock = _new_lock()
        self._out_last: Any = None       # (A, B, their cdata) of the last out used
        self._in: Any = None             # (x, xd, xdd, lam, their cdata) of the last call
        self._sp: Any = None
        # the routine specialised to the model and partition (_cspecial.py): loaded when it is
        # in the cache, else built after SPECIALISE_AFTER calls or by bind() (`_specialise`)
        self._calls = 0
        self._build_sp = False
        self._fast = self._bind() if getattr(cm, "backend", None) == "c" else None
        self.compiled = self._fast is not None

    # ------------------------------------------------------------------ binding
    def _bind(self) -> Any:
        """The foreign routine with every argument but the point and the outputs bound, or None."""
        cm, idx = self.model, self._idx
        lib = _cpoint.library_for(cm)
        if lib is None:
            return None
        ck = cm._ck
        dims, offs, ix = _cpoint.routine_arrays(cm, idx, ck)
        if not self.check:
            dims[4] = 0
        kffi, klib = ck._ffi, ck._lib

        def address(name: str) -> int:
            return int(kffi.cast("intptr_t", getattr(klib, f"nhc_{name}")))

        fl = ck.layout["functions"]
        has_C = bool(self.model.m) and "C" in fl
        has_b = bool(getattr(cm, "affine_names", ())) and "b" in fl
        from . import _cspecial

        sp = _cspecial.routine(cm, idx, ck, build=self._build_sp)   # specialised to the model and partition
        fp = np.array([address("linearization_terms"), address("C") if has_C else 0,
                       address("b") if has_b else 0,
                       0 if sp is None else int(sp.ffi.cast("intptr_t", sp.prepared))],
                      dtype=np.int64)
        T = np.zeros(int(fl["linearization_terms"]["size"]))
        Cv = np.zeros(max(1, int(fl["C"]["size"]) if has_C else 1))
        bv = np.zeros(max(1, int(fl["b"]["size"]) if has_b else 1))
        ffi = lib.ffi
        fb = ffi.from_buffer
        i64, dbl = ffi.typeof("int64_t[]"), ffi.typeof("double[]")
        c_dims = fb(i64, dims)
        nwork = int(lib.work(c_dims))
        W = np.empty(nwork)
        piv = np.empty(self._n + 1, dtype=np.int64)
        self._keep = (dims, offs, ix, fp, T, Cv, bv, W, piv, ck, lib, sp)   # alive with the cdata
        # views of the routine's work array after a call (its layout, nhc_point_third in
        # _cpoint.py): T0 (n, n1) and Th0 (n, n - m) in model row order, and the rows ``[ad, d]``
        # of V̄̄0 (m + l, n) (Steps 1, 2, 4: the kinematics of the first-order rows)
        n, m, l, k = self._n, int(idx.m), int(idx.l), self._k  # noqa: E741
        n1, c, na = n - m - l, m + l, n - m
        w7, rw = 2 * n + n1 + k, n1 + 3 * n
        at_sol = n * n1 + n * w7 + c * c + c * rw
        at_th0 = at_sol + c * rw + n1 * w7 + n1 * n
        self._kin_views = (W[:n * n1].reshape(n, n1),
                           W[at_sol:at_sol + c * rw].reshape(c, rw)[:, n1:n1 + n],
                           W[at_th0:at_th0 + n * na].reshape(n, na))
        self._T = T
        self._fb, self._dbl = fb, dbl
        head = (fb(i64, fp), c_dims, fb(i64, ix), fb(i64, offs), fb(dbl, T), fb(dbl, Cv),
                fb(dbl, bv))
        # the tail with the work array (the kinematics views above are filled); the specialised
        # routine needs none for A and B alone (NULL: it skips writing the kinematics)
        self._kin_tail = (fb(dbl, W), nwork, fb(i64, piv))
        if sp is None:
            fn, tail = lib.prepared, self._kin_tail
        else:
            fn, tail = sp.prepared, (ffi.NULL, nwork, self._kin_tail[2])
            # the bound arguments of nhc_sp_call / nhc_sp_bound as one array of addresses
            # (_cspecial.py): fewer foreign arguments per call
            scal = np.array([self.tol, self.cond_max, INPUT_CONSTRAINT_ATOL])

            def addr(a: Any) -> int:
                return 0 if a is None else int(ffi.cast("intptr_t", fb(dbl, a)))

            ctx = np.array(list(fp[:3]) + [int(dims[4]), addr(T), addr(Cv), addr(bv), addr(self._p),
                                          0, addr(scal)] + [0] * 7, dtype=np.int64)
            self._keep += (scal, ctx)
            self._sp = (sp, ctx, fb(i64, ctx))
        c_p, c_u0 = fb(dbl, self._p), fb(dbl, self._u0)
        tol, cond_max, atol_u = self.tol, self.cond_max, INPUT_CONSTRAINT_ATOL
        return fn, head, tail, c_p, c_u0, (tol, cond_max, atol_u)

    # ------------------------------------------------------------------ calls
    def __call__(self, x: ArrayLike, xd: ArrayLike, xdd: ArrayLike, lam: ArrayLike,
                 u: ArrayLike | None = None, *,
                 out: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(A, B)`` at the point ``x0, ẋ0, ẍ0, Λ0, u0`` (``u=None``: zeros).

        Parameters
        ----------
        x, xd, xdd : (n,) array_like
        lam : (m+l,) array_like
        u : (k,) array_like, optional
        out : (A, B), optional
            C-contiguous float64 arrays of shapes ``(ns, ns)`` and ``(ns, k)`` written in place
            (and returned); without it new arrays are returned.

        Returns
        -------
        A : (ns, ns) ndarray
            Eq. (4.124) (Eq. (4.127) when ``l = 0``).
        B : (ns, k) ndarray
            Sect. 8.1.

        Raises
        ------
        ReferenceMotionError, PartitionError
            As `nhcontrol.linearization.linearize` for the same point (a point that is not a
            motion of the model, ill-conditioned blocks, a result that is not finite).
        """
        f = self._fast
        if f is not None and type(x) is _nd and type(xd) is _nd and type(xdd) is _nd \
                and type(lam) is _nd and (u is None or type(u) is _nd):
            n, c = self._n, self._c
            if (x.dtype is _f64 and xd.dtype is _f64 and xdd.dtype is _f64 and lam.dtype is _f64
                    and x.shape == (n,) and xd.shape == (n,) and xdd.shape == (n,)
                    and lam.shape == (c,)
                    and (u is None or (u.dtype is _f64 and u.shape == (self._k,)))):
                fn, head, tail, c_p, c_u0, scal = f
                fb, dbl = self._fb, self._dbl
                try:
                    if out is None:
                        A = np.empty((self.nstates, self.nstates))
                        B = np.empty((self.nstates, self._k))
                        cA, cB = fb(dbl, A), fb(dbl, B)
                    else:
                        A, B = out
                        cA, cB = self._out_cdata(out)
                    # the cdata of the inputs, remembered for the last arrays used (like out):
                    # the same array objects are the same memory
                    last = self._in          # one attribute: read and replaced atomically
                    if last is not None and last[0] is x and last[1] is xd and last[2] is xdd \
                            and last[3] is lam:
                        cin = last[4]
                    else:
                        cin = (fb(dbl, x), fb(dbl, xd), fb(dbl, xdd), fb(dbl, lam))
                        self._in = (x, xd, xdd, lam, cin)
                    cu = c_u0 if u is None else fb(dbl, u)
                    sp = self._sp
                    with self._lock:
                        if sp is not None:
                            flags = sp[0].call(sp[2], *cin, cu, cA, cB)
                        else:
                            flags = fn(*head, *cin, cu, c_p, *scal, cA, cB, *tail)
                except (ValueError, BufferError, TypeError):
                    flags = -1          # not contiguous (from_buffer), a bad out: the slow path
                if not flags:
                    if sp is None:
                        self._calls += 1
                        if self._calls == _cpoint.SPECIALISE_AFTER:
                            self._specialise()
                    return A, B
        return self._general(x, xd, xdd, lam, u, out)

    def _specialise(self) -> None:
        """Build (or load) the Steps 1-7 routine specialised to the model and partition and bind
        it: the calls that follow use it (after `_cpoint.SPECIALISE_AFTER` calls, or from
        `bind`).  One attempt; without it the generic routine stays (same numbers)."""
        if self._sp is not None or self._fast is None or self._build_sp:
            return
        with self._lock:
            self._build_sp = True
            fast = self._bind()
            if fast is not None:
                self._fast = fast

    def _out_cdata(self, out: Any) -> tuple[Any, Any]:
        """The cdata of ``out`` (remembered for the last ``out`` tuple used)."""
        last = self._out_last            # one attribute: read and replaced atomically (threads)
        if last is not None and last[0] is out[0] and last[1] is out[1]:
            return last[2]
        A, B = out
        ns, k = self.nstates, self._k
        for a, shape, name in ((A, (ns, ns), "A"), (B, (ns, k), "B")):
            if not (type(a) is _nd and a.dtype == _f64 and a.shape == shape
                    and a.flags.c_contiguous and a.flags.writeable):
                raise ArgumentTypeError(
                    f"linearizer: out[{'AB'.index(name)}] ({name}) must be a writeable C-contiguous "
                    f"float64 array of shape {shape}, got "
                    f"{type(a).__name__} {getattr(a, 'dtype', '')} {getattr(a, 'shape', '')}")
        c = (self._fb(self._dbl, A), self._fb(self._dbl, B))
        self._out_last = (A, B, c)
        return c

    def _vector(self, a: Any, size: int, name: str) -> NDArray[np.float64]:
        try:
            v = np.ascontiguousarray(a, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ReferenceMotionError(f"linearizer: {name} must be a real vector of length "
                                       f"{size}, got {type(a).__name__}") from exc
        if v.shape != (size,):
            raise ReferenceMotionError(
                f"linearizer: {name} must have shape ({size},) for model "
                f"{getattr(self.model, 'name', '')!r}, got shape {v.shape}")
        return v

    def _general(self, x: Any, xd: Any, xdd: Any, lam: Any, u: Any, out: Any,
                 t: float = 0.0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The point through `linearize` (checks, messages; the Python kernels)."""
        from .third import linearize

        n, c, k = self._n, self._c, self._k
        v = (self._vector(x, n, "x"), self._vector(xd, n, "xd"), self._vector(xdd, n, "xdd"),
             self._vector(lam, c, "lam"),
             self._u0 if u is None else self._vector(u, k, "u"))
        if self._fast is not None and not (all(a is b for a, b in zip(v, (x, xd, xdd, lam)))
                                           and (u is None or v[4] is u)):
            try:        # converted arguments (lists, other dtypes, non-contiguous views)
                return self._call_fast(*v[:4], None if u is None else v[4], out)
            except _Refused:
                pass    # linearize decides below
        ref = _PointReference(self.model, *v, self._p, self.tol)
        res = linearize(self.model, ref, self.partition, float(t), check=self.check,
                        cond_max=self.cond_max)
        return self._deliver(res.A, res.B, out)

    def _deliver(self, A: NDArray[np.float64], B: NDArray[np.float64],
                 out: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        if out is None:
            return np.array(A, dtype=float), np.array(B, dtype=float)
        self._out_cdata(out) if self._fast is not None else _check_out(out, self.nstates, self._k)
        out[0][...] = A
        out[1][...] = B
        return out[0], out[1]

    def at(self, ref: Reference, t: float = 0.0, *,
           out: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
           ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(A, B)`` at time ``t`` of the reference ``ref`` (its values; its parameters and
        ``check_tol`` when they differ from the bound ones go through `linearize`).

        Returns the same numbers as ``linearize(cm, ref, partition, t)`` and raises as it does.
        """
        require_reference(ref, "ref", "Linearizer.at")
        values = getattr(ref, "values", None)
        if values is not None and type(t) in (float, int):
            x, xd, xdd, lam, u = values(float(t))
            p = getattr(ref, "parameters", None)
            same_p = p is None or p is self._p or (
                type(p) is _nd and p.shape == self._p.shape and bool((p == self._p).all()))
            if same_p and float(getattr(ref, "check_tol", ADMISSIBILITY_TOL)) == self.tol:
                ucall = None if (u is None or u.size == 0) else u
                f = self._fast
                if f is not None:
                    try:
                        A, B = self._call_fast(x, xd, xdd, lam, ucall, out)
                    except _Refused:
                        pass
                    else:
                        return A, B
        from .third import linearize

        res = linearize(self.model, ref, self.partition, t, check=self.check,
                        cond_max=self.cond_max)
        if np.ndim(res.A) != 2:
            raise ReferenceMotionError(f"Linearizer.at: t must be one time, got {t!r}")
        return self._deliver(res.A, res.B, out)

    def _call_fast(self, x: Any, xd: Any, xdd: Any, lam: Any, u: Any,
                   out: Any, locked: bool = False) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The compiled call only; `_Refused` when it cannot decide (the caller goes through
        `linearize` with the reference itself, for its messages).  ``locked``: the caller
        holds the lock and reads the kinematics views after the call."""
        f = self._fast
        fn, head, tail, c_p, c_u0, scal = f
        if locked:
            tail = self._kin_tail
        fb, dbl = self._fb, self._dbl
        try:
            if out is None:
                A = np.empty((self.nstates, self.nstates))
                B = np.empty((self.nstates, self._k))
                cA, cB = fb(dbl, A), fb(dbl, B)
            else:
                A, B = out
                cA, cB = self._out_cdata(out)
            for a, size in ((x, self._n), (xd, self._n), (xdd, self._n), (lam, self._c)):
                if not (type(a) is _nd and a.dtype == _f64 and a.shape == (size,)):
                    raise _Refused
            if u is not None and not (type(u) is _nd and u.dtype == _f64 and u.shape == (self._k,)):
                raise _Refused
            args = (fb(dbl, x), fb(dbl, xd), fb(dbl, xdd), fb(dbl, lam),
                    c_u0 if u is None else fb(dbl, u), c_p)
            if locked:
                flags = fn(*head, *args, *scal, cA, cB, *tail)
            else:
                with self._lock:
                    flags = fn(*head, *args, *scal, cA, cB, *tail)
        except (ValueError, BufferError, TypeError):
            raise _Refused from None
        if flags:
            raise _Refused
        return A, B

    def bind(self, x: NDArray[np.float64], xd: NDArray[np.float64], xdd: NDArray[np.float64],
             lam: NDArray[np.float64], u: NDArray[np.float64] | None = None, *,
             out: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
             ) -> Callable[[], tuple[NDArray[np.float64], NDArray[np.float64]]]:
        """A call with its arguments and results bound by memory (like CasADi's
        ``Function.buffer()``): ``call()`` linearizes at the *current contents* of ``x, xd,
        xdd, lam, u`` (update them in place between calls) into ``out`` (allocated once when
        not given) and returns ``out``.

        The arrays must be C-contiguous float64 vectors of the model's sizes (they are used,
        not copied). Checks, errors and numbers are those of a call ``lz(x, xd, xdd, lam, u)``.
        """
        n, c, k, ns = self._n, self._c, self._k, self.nstates
        self._specialise()                  # a bound call is a hot loop: the fast routine now
        for a, size, name in ((x, n, "x"), (xd, n, "xd"), (xdd, n, "xdd"), (lam, c, "lam"),
                              (u if u is not None else self._u0, k, "u")):
            if not (type(a) is _nd and a.dtype == _f64 and a.shape == (size,)
                    and a.flags.c_contiguous):
                raise ArgumentTypeError(
                    f"Linearizer.bind: {name} must be a C-contiguous float64 array of shape "
                    f"({size},) (it is read at every call), got {type(a).__name__} "
                    f"{getattr(a, 'dtype', '')} {getattr(a, 'shape', '')}")
        if out is None:
            out = (np.empty((ns, ns)), np.empty((ns, k)))
        else:
            out = tuple(out)                                    # type: ignore[assignment]
            _check_out(out, ns, k)
        f = self._fast
        if f is None:
            def call_general() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
                return self(x, xd, xdd, lam, u, out=out)
            return call_general
        fn, head, tail, c_p, c_u0, scal = f
        fb, dbl = self._fb, self._dbl
        cA, cB = self._out_cdata(out)
        cin = (fb(dbl, x), fb(dbl, xd), fb(dbl, xdd), fb(dbl, lam), c_u0 if u is None else fb(dbl, u))
        args = head + cin + (c_p,) + scal + (cA, cB) + tail
        lock, general = self._lock, self._general
        keep: tuple = (x, xd, xdd, lam, u, out, cin, cA, cB)   # the memory behind the bound cdata
        if self._sp is not None:         # the specialised routine: every argument in one array
            sp, ctx0, _ = self._sp
            ctx = ctx0.copy()
            ctx[10:17] = [int(sp.ffi.cast("intptr_t", c)) for c in cin + (cA, cB)]
            keep += (ctx,)
            fn, args = sp.bound, (fb(sp.ffi.typeof("int64_t[]"), ctx),)

        def call() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
            with lock:
                flags = fn(*args)
            if flags:
                return general(*keep[:5], out)
            return out                                          # type: ignore[return-value]

        call.__dict__["_keep"] = keep
        return call

    def _with_kinematics(self, x: Any, xd: Any, xdd: Any, lam: Any, u: Any
                         ) -> tuple[NDArray[np.float64], ...]:
        """``(A, B, T0, V̄̄0_dd, Th0)`` from one compiled call (model row order; ``V̄̄0_dd``: the
        rows ``[ad, d]`` of ``V̄̄0``, Eq. (4.100)); `_Refused` when the call cannot decide
        (the caller takes the general path). For the first-order rows of Sect. 7.2
        (`nhcontrol.linearization.first_order`)."""
        if self._fast is None:
            raise _Refused
        with self._lock:
            A, B = self._call_fast(x, xd, xdd, lam, u, None, locked=True)
            T0, Vdd, Th0 = (v.copy() for v in self._kin_views)
        return A, B, T0, Vdd, Th0

    def __repr__(self) -> str:
        return (f"Linearizer(model={getattr(self.model, 'name', '')!r}, nstates={self.nstates}, "
                f"ninputs={self.ninputs}, check={self.check}, "
                f"path={'compiled' if self.compiled else 'linearize'})")


class _Refused(Exception):
    """The compiled call cannot decide this point."""


def _check_out(out: Any, ns: int, k: int) -> None:
    try:
        A, B = out
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"linearizer: out must be a pair (A, B), got {type(out).__name__}") from None
    for a, shape, name in ((A, (ns, ns), "A"), (B, (ns, k), "B")):
        if not (type(a) is _nd and a.dtype == _f64 and a.shape == shape and a.flags.writeable):
            raise ArgumentTypeError(
                f"linearizer: out {name} must be a writeable float64 array of shape {shape}, got "
                f"{type(a).__name__} {getattr(a, 'dtype', '')} {getattr(a, 'shape', '')}")




def prepare_linearizer(cm: CompiledModel, partition: Partition | Mapping[str, Any], *,
                       p: ArrayLike | None = None, check: bool = True,
                       cond_max: float = COND_MAX, tol: float = ADMISSIBILITY_TOL) -> Linearizer:
    """A [`Linearizer`][nhcontrol.linearization.Linearizer]: model, partition and buffers bound once
    (the same as ``cm.linearizer(partition, ...)``; see the class for the parameters)."""
    return Linearizer(cm, partition, p=p, check=check, cond_max=cond_max, tol=tol)
