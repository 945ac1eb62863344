"""Benchmark: how cost grows with the model size — a Chaplygin sleigh pulling N knife-edge trailers.

The family (derived here): a planar sleigh (centre ``(x_0, y_0)``, yaw ``psi_0``, blade ``a``
ahead of its centre of mass along the body X axis) pulls ``N`` trailers in a chain; trailer
``i`` (absolute coordinates ``x_i, y_i, psi_i``) hangs at a pin ``h`` behind the centre of
body ``i − 1`` by its drawbar point ``d`` ahead of its own centre, and rides on a blade at
``b`` along its X axis. With absolute coordinates ``n = 3(N + 1)``, ``m = 2N`` hitch
constraints, ``l = N + 1`` blades: two degrees of freedom for every ``N``; ``N = 32`` gives
``n = 99``. Straight motion along ``x`` at speed ``v`` is a relative equilibrium with zero
multipliers.

For each ``N`` in ``--trailers`` (default 1 2 4 8 16 32), through the public API only:

* ``cold_build_s``: ``build()`` + ``compile()`` into an empty cache, in a fresh process;
* ``warm_load_s``: ``build()`` + ``compile()`` that finds the cached kernels, fresh process;
* ``kernel_one_point_s``: one ``linearization_terms`` call (median);
* ``linearize_one_point_s``: one ``nhcontrol.linearize`` at a point of the straight motion
  (median, ``check=True``, the partition from ``suggest_partition`` and the constant
  multipliers, by inverse dynamics, computed once);
* ``sympy``: ``sympy.physics.mechanics.KanesMethod`` on the same family in minimal
  coordinates (``x_0, y_0, psi_0 … psi_N``, hitch points from the kinematic chain, ``N + 1``
  velocity constraints), ``kanes_equations`` + ``linearize`` at the same operating point
  (symbolic, then the parameter values), in a child process killed after ``--sympy-cap``
  seconds (default 120): ``derive_linearize_s`` or ``{"timeout": cap}``;
* ``eigenvalue_max_difference``: both linearizations have ``N + 5`` states
  (``2(n − m) − l`` here; ``N + 3`` coordinates and 2 independent speeds there); their
  spectra are matched (``nhcontrol.analysis.match_spectra``) where both finished.

Top-level keys: ``cases`` (a list, one entry per ``N``), ``exponent_cold_build`` and
``exponent_linearize`` (least-squares slopes of log time against log ``n`` over the cases;
goal for the linearization ≤ 1.5), ``ratio_sympy_over_nhcontrol_N4`` (SymPy derive +
linearize over nhcontrol's build of the model + loading its cached kernels + one
linearization at ``N = 4``, the work a user repeats in a new session; goal ≥ 50) and
``ratio_sympy_over_nhcontrol_cold_N4`` (over the cold build, code generation and compilation
included, + one linearization). After a SymPy case passes the cap, larger ``N`` are skipped.

Run ``python benchmarks/scaling.py [--trailers 1 2 4] [--sympy-cap 30] [--repeat 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

#: Parameter values shared by all bodies: mass, yaw inertia, sleigh blade offset a, hitch
#: offset h behind a centre, drawbar offset d ahead of a trailer centre, trailer blade offset b.
VALUES = {"m": 1.0, "I": 0.05, "a": -0.2, "h": 0.3, "d": 0.4, "b": -0.1}

#: Speed of the straight motion [m/s].
SPEED = 1.0


def build(N: int):
    """The sleigh with ``N`` trailers as an ``nhcontrol`` MultibodySystem (public API)."""
    import sympy as sp

    from nhcontrol.modeling import MultibodySystem, contacts, rot_z

    mb = MultibodySystem(f"sleigh_{N}_trailers")
    names = []
    for i in range(N + 1):
        names += [f"x{i}", f"y{i}", f"psi{i}"]
    q = mb.add_coordinates(" ".join(names))
    m, I, a, h, d, b = mb.add_parameters(**VALUES)
    rear = None
    for i in range(N + 1):
        x, y, psi = q[3 * i:3 * i + 3]
        R = rot_z(psi)
        G = sp.Matrix([x, y, 0])
        body = mb.add_body(f"body{i}", mass=m, inertia=sp.diag(I / 2, I / 2, I), position=G,
                           orientation=R)
        blade = a if i == 0 else b
        contacts.knife_edge(mb, body, G + R * sp.Matrix([blade, 0, 0]), (1, 0, 0),
                            name=f"blade{i}")
        if rear is not None:
            front = G + R * sp.Matrix([d, 0, 0])
            mb.add_holonomic(front[0] - rear[0], name=f"hitch{i}_x")
            mb.add_holonomic(front[1] - rear[1], name=f"hitch{i}_y")
        rear = G + R * sp.Matrix([-h, 0, 0])
    return mb


def straight_state(N: int) -> tuple[np.ndarray, np.ndarray]:
    """``x0`` (bodies in a row along x, centre of body 0 at the origin) and ``ẋ0``."""
    x0 = np.zeros(3 * (N + 1))
    xd0 = np.zeros(3 * (N + 1))
    pos = 0.0
    for i in range(N + 1):
        if i:
            pos -= VALUES["h"] + VALUES["d"]
        x0[3 * i] = pos
        xd0[3 * i] = SPEED
    return x0, xd0


def _child_build(N: int, cache_dir: str) -> dict:
    import sympy  # noqa: F401  (imports are not part of the build)

    import nhcontrol.modeling  # noqa: F401

    t0 = time.perf_counter()
    mb = build(N)
    t1 = time.perf_counter()
    cm = mb.compile(cache_dir=cache_dir)
    t2 = time.perf_counter()
    return {"build_s": t1 - t0, "compile_s": t2 - t1, "total_s": t2 - t0,
            "from_cache": bool(getattr(cm, "from_cache", False)),
            "backend": str(getattr(cm, "backend", "python"))}


def sympy_linearize(N: int) -> dict:
    """KanesMethod derive + linearize of the same family; eigenvalues at the straight motion."""
    import sympy as sp
    import sympy.physics.mechanics as me

    t0 = time.perf_counter()
    m, I, a, h, d, b = sp.symbols("m I a h d b")
    q = me.dynamicsymbols(f"q0:{N + 3}")          # x0, y0, psi0, psi1 … psiN
    u = me.dynamicsymbols(f"u0:{N + 3}")
    N_ = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N_, 0)
    bodies, cons = [], []
    hitch = None
    for i in range(N + 1):
        F = N_.orientnew(f"F{i}", "Axis", (q[2 + i], N_.z))
        F.set_ang_vel(N_, u[2 + i] * N_.z)
        if i == 0:
            G = O.locatenew("G0", q[0] * N_.x + q[1] * N_.y)
            G.set_vel(N_, u[0] * N_.x + u[1] * N_.y)
            blade = G.locatenew("P0", a * F.x)
        else:
            G = hitch.locatenew(f"G{i}", -d * F.x)
            G.v2pt_theory(hitch, N_, F)
            blade = G.locatenew(f"P{i}", b * F.x)
        blade.v2pt_theory(G, N_, F)
        cons.append(blade.vel(N_).dot(F.y))
        hitch = G.locatenew(f"H{i}", -h * F.x)
        hitch.v2pt_theory(G, N_, F)
        bodies.append(me.RigidBody(f"B{i}", G, F, m, (me.inertia(F, I / 2, I / 2, I), G)))
    kd = [qi.diff(me.dynamicsymbols._t) - ui for qi, ui in zip(q, u)]
    u_ind = [u[0], u[2]]
    u_dep = [u[1]] + list(u[3:])
    KM = me.KanesMethod(N_, q_ind=q, u_ind=u_ind, u_dependent=u_dep, kd_eqs=kd,
                        velocity_constraints=cons)
    KM.kanes_equations(bodies, [])
    op = {qi: 0.0 for qi in q}
    op.update({u[0]: SPEED})
    op.update({ui: 0.0 for ui in u[1:]})
    op.update({ui.diff(me.dynamicsymbols._t): 0.0 for ui in u})
    A, _, _ = KM.linearize(op_point=op, A_and_B=True)
    vals = dict(zip((m, I, a, h, d, b), (VALUES[k] for k in ("m", "I", "a", "h", "d", "b"))))
    An = np.array(A.subs(vals).evalf(), dtype=float)
    t1 = time.perf_counter()
    lam = np.linalg.eigvals(An)
    return {"derive_linearize_s": t1 - t0, "nstates": int(An.shape[0]),
            "eig_real": lam.real.tolist(), "eig_imag": lam.imag.tolist()}


def _run_child(args: list[str], timeout: float | None) -> dict:
    """Run this script as a child (fresh interpreter); ``{"timeout": cap}`` if killed."""
    env = dict(os.environ)
    # bytecode caching as for an installed package (pip compiles bytecode at install time, as it
    # did for SymPy); with PYTHONDONTWRITEBYTECODE every child would recompile nhcontrol's sources
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), *args], check=True,
                             capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def _fit(ns, ts) -> float | None:
    ok = [(n, t) for n, t in zip(ns, ts) if t is not None and t > 0]
    if len(ok) < 2:
        return None
    x, y = np.log([n for n, _ in ok]), np.log([t for _, t in ok])
    return float(np.polyfit(x, y, 1)[0])


def one_case(N: int, repeat: int, sympy_cap: float, sympy_skip: str | None = None) -> dict:
    from nhcontrol.analysis import match_spectra
    from nhcontrol.linearization import linearize, suggest_partition
    from nhcontrol.reference import Reference

    with tempfile.TemporaryDirectory(prefix="nhc_scaling_") as cache:
        cold = _run_child(["--child-build", str(N), cache], None)
        # median of three fresh processes (a single process start varies by ~10 %)
        warms = [_run_child(["--child-build", str(N), cache], None) for _ in range(3)]
        warm = sorted(warms, key=lambda w: w["total_s"])[1]
        cm = build(N).compile(cache_dir=cache)
        x0, xd0 = straight_state(N)
        # the multipliers of the straight motion by inverse dynamics once (they are constant),
        # then given, as a user of a steady motion would
        lam0 = Reference.constant_velocity(cm, x0, xd0).lam(0.0)
        ref = Reference.constant_velocity(cm, x0, xd0, lam=lam0)
        X, XD, XDD, LAM, U = ref.values(0.0)
        p = ref.parameters
        kern = _median(lambda: cm.linearization_terms(X, XD, XDD, LAM, U if U.size else None,
                                                      p), repeat)
        part = suggest_partition(cm, ref)
        lin_s = _median(lambda: linearize(cm, ref, part), repeat)
        lin = linearize(cm, ref, part)
        eig = np.linalg.eigvals(np.asarray(lin.A))
    case = {"trailers": N, "n": int(cm.n), "m": int(cm.m), "l": int(cm.l),
            "nstates": int(lin.A.shape[0]), "partition": part.to_dict(), "cold_build_s": cold["total_s"],
            "cold_build": cold, "warm_load_s": warm["total_s"], "warm_from_cache": warm["from_cache"],
            "kernel_one_point_s": kern, "linearize_one_point_s": lin_s,
            "backend": cold.get("backend"),
            "eig_real": eig.real.tolist(), "eig_imag": eig.imag.tolist()}
    if sympy_skip:
        case["sympy"] = {"skipped": sympy_skip}
    elif sympy_cap > 0:
        sym = _run_child(["--child-sympy", str(N)], sympy_cap)
        case["sympy"] = {k: v for k, v in sym.items() if not k.startswith("eig_")}
        if "derive_linearize_s" in sym:
            lam_s = np.array(sym["eig_real"]) + 1j * np.array(sym["eig_imag"])
            case["eigenvalue_max_difference"] = match_spectra(eig, lam_s)[1]
            scale = max(1.0, float(np.max(np.abs(eig))))
            case["eigenvalues_agree"] = bool(case["eigenvalue_max_difference"] <= 1e-8 * scale)
    else:
        case["sympy"] = {"skipped": "--sympy-cap 0"}
    return case


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trailers", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--sympy-cap", type=float, default=120.0,
                        help="seconds per SymPy case (0 skips SymPy)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--child-build", nargs=2, metavar=("N", "CACHE"), help=argparse.SUPPRESS)
    parser.add_argument("--child-sympy", type=int, metavar="N", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_build:
        out = _child_build(int(args.child_build[0]), args.child_build[1])
        print(json.dumps(out))
        return out
    if args.child_sympy is not None:
        out = sympy_linearize(args.child_sympy)
        print(json.dumps(out))
        return out
    if any(N < 1 for N in args.trailers):
        parser.error(f"--trailers must be positive integers, got {args.trailers}")
    if args.repeat < 1:
        parser.error(f"--repeat must be a positive integer, got {args.repeat}")
    if args.sympy_cap < 0:
        parser.error(f"--sympy-cap must be >= 0 seconds (0 skips SymPy), got {args.sympy_cap}")

    cases, skip = [], None
    for N in sorted(args.trailers):
        cases.append(one_case(N, args.repeat, args.sympy_cap, skip))
        if "timeout" in cases[-1]["sympy"]:
            skip = f"SymPy passed the {args.sympy_cap:g} s cap at N = {N} (costs grow with N)"
    ns = [c["n"] for c in cases]
    out: dict = {"speed_m_s": SPEED, "parameters": VALUES, "sympy_cap_s": args.sympy_cap,
                 "repeat": args.repeat, "clock": "process_time (kernel, linearize); wall "
                 "(builds, SymPy)", "cases": cases,
                 "exponent_cold_build": _fit(ns, [c["cold_build_s"] for c in cases]),
                 "exponent_linearize": _fit(ns, [c["linearize_one_point_s"] for c in cases]),
                 "exponent_kernel": _fit(ns, [c["kernel_one_point_s"] for c in cases])}
    four = [c for c in cases if c["trailers"] == 4]
    out["ratio_sympy_over_nhcontrol_N4"] = out["ratio_sympy_over_nhcontrol_cold_N4"] = None
    if four and "derive_linearize_s" in four[0]["sympy"]:
        c = four[0]
        s = c["sympy"]["derive_linearize_s"]
        out["ratio_sympy_over_nhcontrol_N4"] = s / (c["warm_load_s"] + c["linearize_one_point_s"])
        out["ratio_sympy_over_nhcontrol_cold_N4"] = s / (c["cold_build_s"]
                                                         + c["linearize_one_point_s"])
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
