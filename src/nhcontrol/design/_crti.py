r"""The model work of one real-time iteration of `NMPCController` in C (one foreign call).

For the ``N`` predicted nodes ``(X̄_j, ū_j)`` the routine ``nhc_rti_nodes`` does, node after
node, what ``NMPCController._model`` does with numpy around the model's kernels:

1. the **admissible node**: ``x_ai, x_ad, ẋ_ai`` from ``X̄_j``, the other coordinates from the
   previous plan, the dependent velocities from ``D(x) ẋ = 0`` (Eq. (2.76));
2. the **accelerations and multipliers** of Eq. (2.119) from the model's fused kernel
   ``dynamics_terms`` (``M, Q, D, Q_d``) and one solve of the saddle-point system;
3. the **exact linearization** (Steps 1-7 of the third procedure) by the prepared one-point
   routine of `nhcontrol.linearization._cpoint` (or the one specialised to the model and the
   partition, `nhcontrol.linearization._cspecial`): ``A_j, B_j``;
4. the **zero-order-hold exponential** of ``h [A_j, B_j, f_j; 0]`` (``f_j = Ẋ̄_j``): ``Φ_j,
   Γ_j`` and ``F(X̄_j, ū_j) = X̄_j + γ_j``, by scaling and squaring with a diagonal Padé
   approximant whose degree is chosen from the 1-norm (Higham 2005, "The scaling and squaring
   method for the matrix exponential revisited", SIAM J. Matrix Anal. Appl. 26(4), 1179-1193;
   the block form of the augmented matrix is derived in docs/theory/nmpc.md, "The ZOH
   exponential in compiled code").

The model's kernels are called through their addresses in the model's own (verified) kernel
library, as the prepared linearizer does. The routine is generic (not per model; its C text
is `nhcontrol._csrc.rti`): compiled into the package when nhcontrol is installed
(``setup.py``), else once per cache directory on first use
(`nhcontrol.compiled.cbackend.RoutineLibrary`), with the kernels' compiler settings at
``-O3`` (no fast-math, no contraction), stored with a sha256 record and verified before it is
opened. It answers only the common case (no
holonomic constraints, no affine constraint terms, inputs present, no inputs in the
constraints); a node it cannot finish (a kernel flag, a non-finite value, a singular block, the
conditioning pre-check) returns a flag and the numpy path repeats the work, raising or falling
back with the full message. When the library cannot be built (no compiler) the numpy path runs
(tested to agree to 1e-12, docs/guide/performance.md).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from nhcontrol.compiled import CompiledModel

__all__ = ["VERSION", "PENDING", "rti_library", "rti_core", "prebuild"]

from .._csrc.rti import VERSION


class _Library:
    """The loaded routines ``nodes``, ``expm``, ``work`` and the FFI."""

    def __init__(self, loaded: tuple[str, Any, Any]) -> None:
        self.path, self.ffi, self.lib = loaded
        self.nodes, self.expm, self.work = (self.lib.nhc_rti_nodes, self.lib.nhc_expm_zoh,
                                            self.lib.nhc_rti_work)


class _Pending:
    def __repr__(self) -> str:
        return "PENDING"


#: `rti_core`'s answer while the routines are still being compiled in the background
PENDING = _Pending()
_LIBS: dict[str, "_Library | None"] = {}


def _routine() -> Any:
    """The `RoutineLibrary` of the RTI routines: its key, file name, build on first use or
    ahead (`prebuild`) and checked loading."""
    from .._csrc import rti
    from ..compiled.cbackend import routine_library

    return routine_library(rti, what="compiled RTI library",
                           fallback="the NMPC nodes are computed with numpy (same results, slower)")


def library_file(directory: str) -> str:
    """The library's file in the cache directory ``directory``."""
    return _routine()._file(directory)


def prebuild(directory: str) -> None:
    """Compile the RTI routines into ``directory`` (a trusted cache directory) ahead of their
    first use (a cold model build: `nhcontrol.compiled.cbackend.prebuild_routines`)."""
    _routine().prebuild(directory)


def rti_library(cache_dir: str | os.PathLike | None = None) -> "_Library | None":
    """The compiled RTI routines of the (trusted) cache directory, built on first use; None
    when they cannot be built or loaded (one warning; the numpy path then runs)."""
    loaded = _routine().load(cache_dir)
    if loaded is None:
        return None
    hit = _LIBS.get(loaded[0])
    if hit is None:
        hit = _LIBS[loaded[0]] = _Library(loaded)
    return hit


def expm_zoh(Z: np.ndarray, lib: "_Library") -> tuple[np.ndarray, int, int] | None:
    """``([exp(Z11) | φ₁(Z11) Z12], m, s)``: the top rows of the exponential of the augmented
    matrix with top rows ``Z`` (ns × nt) and zero bottom rows by the compiled routine, its Padé
    degree and squarings (for tests); None when the result is not finite."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    ns, nt = Z.shape
    E = np.empty((ns, nt))
    W = np.empty(9 * ns * nt + ns + 2 * nt)
    ms = np.zeros(2, dtype=np.int64)
    fb, dbl = lib.ffi.from_buffer, lib.ffi.typeof("double[]")
    if lib.expm(ns, nt, fb(dbl, Z), fb(dbl, E), fb(dbl, W), fb(lib.ffi.typeof("int64_t[]"), ms)):
        return None
    return E, int(ms[0]), int(ms[1])


def rti_core(cm: CompiledModel, idx: Any, tol: float, cond_max: float, *,
             wait: bool = True) -> "RTICore | None | object":
    """The compiled model work of the RTI for model ``cm`` and partition ``idx`` (see the
    module docstring), or None: a model outside the routine's case, no C kernels, or a library
    that cannot be built (the numpy path).
    With ``wait=False``, `PENDING` while a cold model build is still compiling the routines
    in the background (`nhcontrol.compiled.cbackend.prebuild_pending`): the caller runs the
    numpy path meanwhile and asks again later."""
    ck = getattr(cm, "_ck", None)
    if (ck is None or getattr(cm, "backend", None) != "c"
            or getattr(cm, "_library_path", None) is None or int(idx.m)
            or getattr(cm, "affine_names", ()) or getattr(cm, "constraint_inputs", ())
            or not int(cm.ninputs)):
        return None
    fl = ck.layout["functions"]
    n, l, k = int(idx.n), int(idx.l), int(cm.ninputs)  # noqa: E741
    if len(idx.ad) != l or len(idx.d):
        return None                 # the dependent velocities are x_ad's (no holonomic rows)
    want = {"D": (["x", "u", "p"], [(l, n)]),
            "dynamics_terms": (["x", "xd", "u", "p"], [(n, n), (n,), (l, n), (l,)]),
            "linearization_terms": (["x", "xd", "xdd", "lam", "u", "p"], None)}
    for name, (args, shapes) in want.items():
        spec = fl.get(name)
        if spec is None or list(spec["args"]) != args:
            return None
        if shapes is not None and [tuple(o[2]) for o in spec["outputs"]] != shapes:
            return None
    from ..compiled.cbackend import prebuild_pending
    from ..linearization import _cpoint

    directory = os.path.dirname(cm._library_path)
    if not wait and prebuild_pending(directory, __name__):
        return PENDING
    plib = _cpoint.library_for(cm)
    lib = rti_library(directory)
    if plib is None or lib is None:
        return None
    return RTICore(cm, idx, ck, lib, plib, float(tol), float(cond_max))


class RTICore:
    """``core(X, xguess, U, p, h)``: ``(x, Φ, Γ, F)`` of the ``N`` nodes (the outputs of
    ``NMPCController._model``; ``xd, ẍ, Λ`` in ``core.last``), or None (the numpy path
    decides). One per controller: its work arrays are reused from call to call (a controller
    is not shared between threads either)."""

    def __init__(self, cm: CompiledModel, idx: Any, ck: Any, lib: _Library, plib: Any,
                 tol: float, cond_max: float) -> None:
        from ..linearization import _cpoint, _cspecial
        from .._util.validation import INPUT_CONSTRAINT_ATOL

        self.cm, self.idx, self.ck, self.lib, self.plib = cm, idx, ck, lib, plib
        fl = ck.layout["functions"]
        n, l, k = int(idx.n), int(idx.l), int(cm.ninputs)  # noqa: E741
        ai, ad = np.asarray(idx.ai, np.int64), np.asarray(idx.ad, np.int64)
        na, nad = ai.size, ad.size
        ns = 2 * na + nad
        dims, offs, ixl = _cpoint.routine_arrays(cm, idx, ck)
        dims[4] = 0                                   # no reference check (as `_model`)
        ffi = lib.ffi
        i64, dbl = ffi.typeof("int64_t[]"), ffi.typeof("double[]")
        fb = ffi.from_buffer
        nwl = int(plib.work(plib.ffi.from_buffer("int64_t[]", dims)))
        dyn = fl["dynamics_terms"]["outputs"]
        rd = np.array([0, n, l, k, na, nad, ns, int(fl["D"]["size"]), int(fl["dynamics_terms"]["size"]),
                       int(fl["linearization_terms"]["size"]), int(dyn[0][0]), int(dyn[1][0]),
                       int(dyn[2][0]), int(dyn[3][0]), nwl], dtype=np.int64)
        kffi, klib = ck._ffi, ck._lib

        def address(f: Any, obj: Any) -> int:
            return int(f.cast("intptr_t", obj))

        self._sp = _cspecial.routine(cm, idx, ck, build=False)
        fp = np.array([address(kffi, klib.nhc_linearization_terms), 0, 0,
                       0 if self._sp is None else address(self._sp.ffi, self._sp.prepared),
                       address(plib.ffi, plib.prepared), address(kffi, klib.nhc_D),
                       address(kffi, klib.nhc_dynamics_terms)], dtype=np.int64)
        self._specialise_after = _cpoint.SPECIALISE_AFTER
        self._points = 0
        self.n, self.l, self.k, self.ns = n, l, k, ns
        self._rd, self._fp, self._dims, self._offs, self._ixl = rd, fp, dims, offs, ixl
        self._ix = np.concatenate([ai, ad])
        self._sc = np.array([0.0, float(tol), float(cond_max), INPUT_CONSTRAINT_ATOL])
        self._psize = int(np.asarray(cm._p0).shape[0])
        self._info = np.zeros(2, dtype=np.int64)
        self._piv = np.zeros(n + l + 2, dtype=np.int64)
        # the cdata of the bound arrays (their buffers live as long as this object)
        self._c = {nm: fb(i64, a) for nm, a in (("fp", fp), ("ix", self._ix), ("dims", dims),
                                                ("ixl", ixl), ("offs", offs), ("rd", rd),
                                                ("piv", self._piv), ("info", self._info))}
        self._c["sc"] = fb(dbl, self._sc)
        self._p: Any = None
        self._cp: Any = None
        self._fb, self._dbl, self._i64 = fb, dbl, i64
        self._work: dict[int, tuple] = {}
        self.last: tuple | None = None
        self.flags = 0

    def _specialise(self, N: int) -> None:
        """After `_cpoint.SPECIALISE_AFTER` nodes, the routine specialised to the model and
        partition (built once, as the stacked linearization does)."""
        self._points += N
        if self._sp is None and self._points >= self._specialise_after:
            from ..linearization import _cspecial

            self._points = -(1 << 62)                 # one attempt
            sp = _cspecial.routine(self.cm, self.idx, self.ck)
            if sp is not None:
                self._sp = sp
                self._fp[3] = int(sp.ffi.cast("intptr_t", sp.prepared))

    def __call__(self, X: np.ndarray, xguess: np.ndarray, U: np.ndarray, p: Any, h: float
                 ) -> tuple | None:
        N = X.shape[0]
        n, l, k, ns = self.n, self.l, self.k, self.ns
        if not (type(p) is np.ndarray and p.dtype == np.float64 and p.shape == (self._psize,)):
            return None
        if X.shape != (N, ns) or xguess.shape != (N, n) or U.shape != (N, k):
            return None
        fb, dbl, c = self._fb, self._dbl, self._c
        work = self._work.get(N)
        if work is None:               # per horizon: the work array, the outputs' offsets
            self._rd[0] = N
            W = np.empty(int(self.lib.work(c["rd"])))
            sizes = np.array([N * n, N * n, N * n, N * l, N * ns * ns, N * ns * k, N * ns])
            work = self._work[N] = (W, fb(dbl, W), W.size, int(sizes.sum()),
                                    [int(o) for o in np.concatenate([[0], np.cumsum(sizes)])])
        if self._p is not p:           # the parameters' buffer (the same array every sample)
            self._p, self._cp = p, fb(dbl, np.ascontiguousarray(p))
        self._rd[0] = N
        self._sc[0] = h
        out = np.empty(work[3])        # x, xd, xdd, lam, Φ, Γ, F in one buffer
        o = work[4]
        co = fb(dbl, out)
        flags = self.lib.nodes(
            c["rd"], c["fp"], c["ix"], c["dims"], c["ixl"], c["offs"],
            fb(dbl, np.ascontiguousarray(X, dtype=np.float64)),
            fb(dbl, np.ascontiguousarray(xguess, dtype=np.float64)),
            fb(dbl, np.ascontiguousarray(U, dtype=np.float64)), self._cp, c["sc"], co,
            co + o[1], co + o[2], co + o[3], co + o[4], co + o[5], co + o[6], work[1], work[2],
            c["piv"], c["info"])
        self.flags = int(flags)
        if flags:
            return None
        if self._points >= 0:
            self._specialise(N)
        self.last = (out[o[1]:o[2]].reshape(N, n), out[o[2]:o[3]].reshape(N, n),
                     out[o[3]:o[4]].reshape(N, l))
        return (out[:o[1]].reshape(N, n), out[o[4]:o[5]].reshape(N, ns, ns),
                out[o[5]:o[6]].reshape(N, ns, k), out[o[6]:o[7]].reshape(N, ns))
