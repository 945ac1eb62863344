"""Benchmark: nhcontrol against CasADi on the benchmark bicycle's minimal Jacobian (prints JSON).

Run ``python benchmarks/peer_casadi.py [--repeat R] [--skip-cold]`` (needs the optional
``peers`` extra, ``pip install nhcontrol[peers]``: CasADi; without it the script prints a
message and ``{"skipped": ...}``).

The CasADi peer is built from the **same SymPy model** (``benchmark_bicycle.build()`` and its
equations ``M, Q, D, Q_d, ∂C/∂x`` with their common-subexpression graph), converted node by
node to CasADi ``SX`` (``nhcontrol.interop.sympy_to_casadi`` when present, else the small
converter below), as the Jacobian of the minimal ODE ``Ẋ = F(X)`` in the state
``X = [x_ai, ẋ_ai, x_ad]`` of Eq. (4.123) (partition Eq. (4.172)) by CasADi's algorithmic
differentiation: the dependent coordinates follow ``C(x) = 0`` to first order
(``x_d = x_d0 − (∂C/∂x_d)⁻¹ ∂C/∂x_a (x_a − x_a0)``, exact for a first derivative), the
dependent velocities ``D(x) ẋ = 0``, the accelerations the projected equations
``T(x)ᵀ (M ẍ − Q) = 0`` with ``D ẍ = Q_d`` (the null-space form, thesis Sect. 2.4), each with
CasADi's symbolic linear solves.  The function ``A(x0, ẋ0, p)`` is generated as C, compiled with
gcc (``-O1``, the flags of nhcontrol's kernels) and loaded with ``casadi.external``.  Its ``A``
is checked against nhcontrol's (``max_rel_diff_A`` ≤ 1e-12).

Timings, in one interleaved run (medians; the ratios are CasADi over nhcontrol, > 1: nhcontrol
faster):

* ``ratio_casadi_buffer_over_prepared``: CasADi's preallocated-buffer call
  (``Function.buffer()``, arguments bound) over nhcontrol's prepared call
  ``lz(x0, ẋ0, ẍ0, Λ0, out=(A, B))`` (`CompiledModel.linearizer`; checks included); goal ≥ 2;
  ``ratio_casadi_buffer_over_bound``: the same against ``lz.bind(...)()`` (nhcontrol's
  arguments bound by memory too, the exact counterpart of the buffer call);
* ``ratio_casadi_map_over_stacked``: CasADi's ``Function.map(1000)`` (serial) over
  ``linearize(cm, ref, partition, t=ts)`` with 1,000 times, per point; goal ≥ 4;
* ``ratio_casadi_cold_over_cold``: from the SymPy model to the first Jacobian in a fresh
  process with an empty cache (nhcontrol: ``build().compile()`` + ``linearizer``; CasADi:
  ``build()``, equations, conversion, AD, code generation, gcc, load), wall time; goal ≥ 5;
* ``ratio_casadi_warm_over_warm``: a fresh process from the first statement to the first
  Jacobian with everything cached (nhcontrol: ``benchmark_bicycle.model()`` +
  ``cm.linearizer(...)`` + one call at the reference point; CasADi: ``import casadi`` +
  ``casadi.external`` + one call; both get the point as JSON), median of 11 interleaved
  processes each (``warm_*_range_s``: their minimum and maximum);
  goal ≥ 1; ``warm_floor_s`` is the same kind of process doing only what both do (``import
  numpy``, ``json``, the point's arrays: most of either time), so
  ``ratio_casadi_warm_over_floor`` is the highest ``ratio_casadi_warm_over_warm`` any
  nhcontrol could reach;
* the underlying times (``*_s``), ``casadi_call_s`` (ordinary CasADi Python call),
  ``load_average``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))   # benchmarks/_common.py
from _common import median_time, run_child  # noqa: E402

SPEED = 5.0


# ----------------------------------------------------------------------- SymPy -> CasADi
def _converter():
    """``convert(exprs, env, defs)``: nhcontrol.interop's converter when present, else a small
    private one (Add, Mul, Pow, the elementary functions, numbers, graph nodes)."""
    try:
        from nhcontrol.interop import sympy_to_casadi  # type: ignore[attr-defined]

        def convert(exprs, env, defs):
            return sympy_to_casadi(list(exprs), env, definitions=defs)

        return convert, "nhcontrol.interop.sympy_to_casadi"
    except ImportError:
        pass
    import casadi as ca
    import sympy as sp

    funcs = {sp.sin: ca.sin, sp.cos: ca.cos, sp.tan: ca.tan, sp.exp: ca.exp, sp.log: ca.log,
             sp.asin: ca.asin, sp.acos: ca.acos, sp.atan: ca.atan, sp.Abs: ca.fabs,
             sp.sinh: ca.sinh, sp.cosh: ca.cosh, sp.tanh: ca.tanh, sp.sign: ca.sign}

    def convert(exprs, env, defs):
        memo: dict = {}

        def go(e):
            hit = memo.get(e)
            if hit is not None:
                return hit
            if e in env:
                out = env[e]
            elif e in defs:
                out = go(defs[e])
            elif e.is_Number or e is sp.pi or e is sp.E:
                out = float(e)
            elif e.is_Add:
                out = 0
                for a in e.args:
                    out = out + go(a)
            elif e.is_Mul:
                out = 1
                for a in e.args:
                    out = out * go(a)
            elif e.is_Pow:
                b, x = e.args
                if x == sp.Rational(1, 2):
                    out = ca.sqrt(go(b))
                elif x.is_Integer:
                    out = ca.constpow(go(b), int(x))
                else:
                    out = ca.power(go(b), go(x))
            elif e.func in funcs:
                out = funcs[e.func](go(e.args[0]))
            elif e.func is sp.atan2:
                out = ca.atan2(go(e.args[0]), go(e.args[1]))
            else:
                raise NotImplementedError(f"no CasADi translation of {e.func}")
            memo[e] = out
            return out

        return [go(sp.sympify(e)) for e in exprs]

    return convert, "private converter (benchmarks/peer_casadi.py)"


def casadi_jacobian(mb, partition: dict):
    """``(casadi.Function A(x0, xd0, p), converter name)`` of the minimal Jacobian (module
    docstring), built from the SymPy model ``mb``."""
    import casadi as ca

    convert, conv_name = _converter()
    eom = mb.equations()
    n, m, l = len(eom.x), len(eom.holonomic_names), len(eom.nonholonomic_names)  # noqa: E741
    names = [str(s) for s in eom.x]
    ai = [names.index(s) for s in partition["independent"]]
    ad = [names.index(s) for s in partition["admissible_dependent"]]
    d = [names.index(s) for s in partition["dependent"]]
    a, dd = ai + ad, ad + d
    n1 = len(ai)
    ns = 2 * n1 + l
    x0, xd0 = ca.SX.sym("x0", n), ca.SX.sym("xd0", n)
    p = ca.SX.sym("p", len(eom.p))
    X = ca.SX.sym("X", ns)
    defs = eom.graph.defs

    def mat(expr, rows, cols, env):
        flat = convert([expr[i, j] for i in range(rows) for j in range(cols)], env, defs)
        out = ca.SX(rows, cols)
        for i in range(rows):
            for j in range(cols):
                out[i, j] = flat[i * cols + j]
        return out

    env_p = {s: p[i] for i, s in enumerate(eom.p)}
    env_p.update({s: 0.0 for s in eom.u})
    # x_d to first order from C(x) = 0 at x0: G = −(∂C/∂x_d)⁻¹ ∂C/∂x_a
    env0 = dict(env_p)
    env0.update({s: x0[i] for i, s in enumerate(eom.x)})
    Cx0 = mat(eom.Cx_g, m, n, env0)
    G = -ca.solve(Cx0[:, d], Cx0[:, a])
    xa = ca.vertcat(X[:n1], X[2 * n1:])
    dxa = xa - x0[a]
    dxd = ca.mtimes(G, dxa)
    x = ca.SX(x0)
    for j, i in enumerate(a):
        x[i] = x0[i] + dxa[j]
    for j, i in enumerate(d):
        x[i] = x0[i] + dxd[j]
    env = dict(env_p)
    env.update({s: x[i] for i, s in enumerate(eom.x)})
    D = mat(eom.D_g, m + l, n, env)
    xdai = X[n1:2 * n1]
    xd_dd = -ca.solve(D[:, dd], ca.mtimes(D[:, ai], xdai))
    xd = ca.SX(n, 1)
    for j, i in enumerate(ai):
        xd[i] = xdai[j]
    for j, i in enumerate(dd):
        xd[i] = xd_dd[j]
    env.update({s: xd[i] for i, s in enumerate(eom.xd)})
    M = mat(eom.M_g, n, n, env)
    Q = mat(eom.Q_g, n, 1, env)
    Qd = mat(eom.Qd_g, m + l, 1, env)
    T = ca.SX(n, n1)
    Tdd = -ca.solve(D[:, dd], D[:, ai])
    for j, i in enumerate(ai):
        T[i, j] = 1.0
    for j, i in enumerate(dd):
        T[i, :] = Tdd[j, :]
    w = ca.solve(D[:, dd], Qd)
    wf = ca.SX(n, 1)
    for j, i in enumerate(dd):
        wf[i] = w[j]
    m0 = ca.mtimes(T.T, ca.mtimes(M, T))
    xdd_ai = ca.solve(m0, ca.mtimes(T.T, Q - ca.mtimes(M, wf)))
    F = ca.vertcat(xdai, xdd_ai, xd[ad])
    J = ca.jacobian(F, X)
    X0 = ca.vertcat(x0[ai], xd0[ai], x0[ad])
    A = ca.substitute(J, X, X0)
    # dense output: the buffer call and map write every entry (column-major)
    return ca.Function("nhc_peer_jac", [x0, xd0, p], [ca.densify(A)]), conv_name


def compile_casadi(f, directory: str):
    """Generate C for ``f``, compile it with gcc and load it (``casadi.external``)."""
    import casadi as ca

    cwd = os.getcwd()
    os.chdir(directory)
    try:
        f.generate("nhc_peer_jac.c")
    finally:
        os.chdir(cwd)
    src = os.path.join(directory, "nhc_peer_jac.c")
    so = os.path.join(directory, "nhc_peer_jac.so")
    subprocess.run(["gcc", "-O1", "-fPIC", "-shared", "-ffp-contract=off", src, "-o", so, "-lm"],
                   check=True)
    return ca.external("nhc_peer_jac", so), so


# ----------------------------------------------------------------------- fresh processes
_COLD_NHC = textwrap.dedent("""
    import time, json, sys
    t0 = time.perf_counter()
    from nhcontrol.models import benchmark_bicycle as bb
    cm = bb.build().compile(cache_dir=sys.argv[1])
    lz = cm.linearizer(bb.PARTITION_4_172)
    ref = bb.steady_forward(cm, 5.0)
    A, B = lz(*ref.values(0.0)[:4])
    print(json.dumps({"s": time.perf_counter() - t0, "backend": cm.backend}))
""")

_COLD_CASADI = textwrap.dedent("""
    import time, json, sys
    t0 = time.perf_counter()
    import numpy as np
    from peer_casadi import casadi_jacobian, compile_casadi
    from nhcontrol.models import benchmark_bicycle as bb
    f, _ = casadi_jacobian(bb.build(), bb.PARTITION_4_172)
    g, so = compile_casadi(f, sys.argv[1])
    A = np.asarray(g(np.zeros(11), np.zeros(11), np.array(list(bb.PARAMETERS.values()))))
    print(json.dumps({"s": time.perf_counter() - t0}))
""")

_WARM_NHC = textwrap.dedent("""
    import time, sys
    t0 = time.perf_counter()
    from nhcontrol.models import benchmark_bicycle as bb
    cm = bb.model()
    lz = cm.linearizer(bb.PARTITION_4_172)
    import json
    import numpy as np
    x, xd, xdd, lam, p = (np.array(v) for v in json.loads(sys.argv[1]))
    A, B = lz(x, xd, xdd, lam)
    t1 = time.perf_counter()
    print(json.dumps({"s": t1 - t0}))
""")

_WARM_FLOOR = textwrap.dedent("""
    import time, sys
    t0 = time.perf_counter()
    import json
    import numpy as np
    x, xd, xdd, lam, p = (np.array(v) for v in json.loads(sys.argv[1]))
    t1 = time.perf_counter()
    print(json.dumps({"s": t1 - t0}))
""")

_WARM_CASADI = textwrap.dedent("""
    import time, sys
    t0 = time.perf_counter()
    import casadi
    g = casadi.external("nhc_peer_jac", sys.argv[2])
    import json
    import numpy as np
    x, xd, xdd, lam, p = (np.array(v) for v in json.loads(sys.argv[1]))
    A = g(x, xd, p)
    t1 = time.perf_counter()
    print(json.dumps({"s": t1 - t0}))
""")


def _load() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):  # pragma: no cover
        return None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--skip-cold", action="store_true",
                        help="no cold builds in fresh processes (they take a minute of CPU)")
    args = parser.parse_args(argv)
    try:
        import casadi as ca
    except ImportError as exc:
        out = {"skipped": f"CasADi is not installed ({exc}); pip install nhcontrol[peers]"}
        print(f"peer_casadi: skipped, CasADi is not installed ({exc}); "
              "install the optional extra: pip install nhcontrol[peers]", file=sys.stderr)
        print(json.dumps(out, indent=2))
        return out

    from nhcontrol.linearization import Partition, linearize
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model()
    ref = bb.steady_forward(cm, SPEED)
    part = Partition.from_dict(bb.PARTITION_4_172)
    work = tempfile.mkdtemp(prefix="nhc_peer_")
    try:
        t0 = time.perf_counter()
        f, conv_name = casadi_jacobian(bb.build(), bb.PARTITION_4_172)
        g, so = compile_casadi(f, work)
        build_in_process_s = time.perf_counter() - t0

        x, xd, xdd, lam, u = ref.values(0.0)
        p = np.asarray(ref.parameters, dtype=float)
        lz = cm.linearizer(part)
        A_nhc = lz(x, xd, xdd, lam)[0]
        A_cas = np.asarray(g(x, xd, p))
        rel = float(np.max(np.abs(A_cas - A_nhc)) / np.max(np.abs(A_nhc)))

        # one point: prepared call vs CasADi's buffer call (arguments bound once)
        out = (np.empty_like(A_nhc), np.empty((A_nhc.shape[0], 0)))
        buf, evaluate = g.buffer()
        args_c = [np.ascontiguousarray(v, dtype=float) for v in (x, xd, p)]
        res_c = np.zeros(A_nhc.size)
        for i, v in enumerate(args_c):
            buf.set_arg(i, memoryview(v))
        buf.set_res(0, memoryview(res_c))
        bound = lz.bind(*(np.array(v, dtype=float) for v in (x, xd, xdd, lam)), out=out)
        times = {"prepared": [], "bound": [], "buffer": [], "call": []}
        for _ in range(5):                           # interleaved rounds
            times["prepared"].append(median_time(lambda: lz(x, xd, xdd, lam, out=out),
                                                 args.repeat, time.process_time))
            times["bound"].append(median_time(bound, args.repeat, time.process_time))
            times["buffer"].append(median_time(evaluate, args.repeat, time.process_time))
            times["call"].append(median_time(lambda: g(x, xd, p), args.repeat,
                                             time.process_time))
        # CasADi's buffer is column-major: A^T in row-major memory
        buf_rel = float(np.max(np.abs(res_c.reshape(A_nhc.shape).T - A_nhc)) / np.max(np.abs(A_nhc)))

        # 1,000 points: stacked linearize vs Function.map
        ts = np.linspace(0.0, 1.0, 1000)
        X, XD, _, _, _ = ref.values(ts)
        gm = g.map(ts.size)
        XT, XDT = np.ascontiguousarray(X.T), np.ascontiguousarray(XD.T)
        stacked, mapped = [], []
        for _ in range(3):
            stacked.append(median_time(lambda: linearize(cm, ref, part, t=ts), 5,
                                       time.process_time))
            mapped.append(median_time(lambda: gm(XT, XDT, p), 5, time.process_time))
        Am = np.asarray(gm(XT, XDT, p))
        As = np.asarray(linearize(cm, ref, part, t=ts).A)
        ns = A_nhc.shape[0]
        Am = Am.reshape(ns, ts.size, ns).transpose(1, 0, 2)      # columns point after point
        map_rel = float(np.max(np.abs(Am - As)) / np.max(np.abs(As)))

        med = statistics.median
        result = {
            "speed_m_s": SPEED, "repeat": args.repeat, "casadi_version": ca.__version__,
            "converter": conv_name,
            "max_rel_diff_A": rel, "max_rel_diff_A_buffer": buf_rel,
            "max_rel_diff_A_map": map_rel,
            "prepared_point_s": med(times["prepared"]),
            "casadi_buffer_s": med(times["buffer"]),
            "casadi_call_s": med(times["call"]),
            "ratio_casadi_buffer_over_prepared": med(times["buffer"]) / med(times["prepared"]),
            "prepared_bound_s": med(times["bound"]),
            "ratio_casadi_buffer_over_bound": med(times["buffer"]) / med(times["bound"]),
            "stacked_per_point_s": med(stacked) / ts.size,
            "casadi_map_per_point_s": med(mapped) / ts.size,
            "ratio_casadi_map_over_stacked": med(mapped) / med(stacked),
            "casadi_build_in_process_s": build_in_process_s,
            "clock": "process_time (CPU) for the calls, wall for the fresh processes",
        }
        if rel > 1e-12 or map_rel > 1e-12:
            result["warning"] = "CasADi's A differs from nhcontrol's by more than 1e-12"
        print(json.dumps(result), file=sys.stderr)          # the in-process part, early

        # warm: fresh processes, everything cached (the model once loaded by this process)
        warm_n, warm_c, warm_f = [], [], []
        point = json.dumps([np.asarray(v, dtype=float).tolist() for v in (x, xd, xdd, lam, p)])
        run_child(_WARM_NHC, point)
        run_child(_WARM_CASADI, point, so)
        jobs = [(warm_n, _WARM_NHC, ()), (warm_c, _WARM_CASADI, (so,)), (warm_f, _WARM_FLOOR, ())]
        for i in range(11):                          # interleaved, the order reversed every round
            for out_, script, extra in (jobs if i % 2 == 0 else jobs[::-1]):
                out_.append(run_child(script, point, *extra)["s"])
        result.update({"warm_nhcontrol_s": med(warm_n), "warm_casadi_s": med(warm_c),
                       "ratio_casadi_warm_over_warm": med(warm_c) / med(warm_n),
                       "warm_floor_s": med(warm_f),
                       "ratio_casadi_warm_over_floor": med(warm_c) / med(warm_f),
                       **{f"warm_{k}_range_s": [min(v), max(v)] for k, v in
                          (("nhcontrol", warm_n), ("casadi", warm_c), ("floor", warm_f))}})

        if not args.skip_cold:
            cold_n = run_child(_COLD_NHC, tempfile.mkdtemp(prefix="nhc_cold_", dir=work))
            cold_c = run_child(_COLD_CASADI, tempfile.mkdtemp(prefix="cas_cold_", dir=work))
            result.update({"cold_nhcontrol_s": cold_n["s"], "cold_casadi_s": cold_c["s"],
                           "ratio_casadi_cold_over_cold": cold_c["s"] / cold_n["s"]})
        result["load_average"] = _load()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
