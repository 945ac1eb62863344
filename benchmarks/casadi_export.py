"""Benchmark: the two CasADi routes of ``nhcontrol.interop.to_casadi`` side by side, same run.

Run ``python benchmarks/casadi_export.py [--model bicycle|skate] [--repeats R]``; prints one JSON
object with, for each route (``symbolic``: SX graph from the SymPy expressions, CasADi
differentiates it; ``kernels``: the compiled kernels as a ``casadi.Callback`` whose Jacobian is
nhcontrol's exact linearization):

* ``export_s``: time to make the functions (one call, the SymPy→CasADi translation included;
  the model's symbolic derivation and the compiled kernels are warmed up before);
* ``f_s``, ``AB_s``: median wall time of one evaluation of ``f(X, u)`` and of ``(A, B)`` at the
  reference state (after one warm-up call);
* ``max_rel_difference_A``, ``max_rel_difference_B``: against ``nhcontrol.linearize`` at the
  same point;

and the peer in the same process, ``linearize_s``: the median time of ``nhcontrol.linearize``
at that point (a ``Reference`` built once), plus ``AB_ratio_over_linearize`` per route.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median_time  # noqa: E402


def _setup(model: str):
    if model == "bicycle":
        from nhcontrol.models import benchmark_bicycle as bb

        inputs = ("T_phi", "T_delta")
        cm = bb.model(inputs=inputs)
        ref = bb.steady_forward(cm, 5.0)
        return bb.build(inputs=inputs), cm, ref, bb.PARTITION_4_172
    from nhcontrol.models import single_track as st
    from nhcontrol.reference import Reference

    system = st.build("torque").system
    cm = system.compile()
    V = float(cm.parameters["V"])
    ref = Reference.constant_velocity(cm, np.zeros(4), np.array([V, 0.0, 0.0, 0.0]))
    return system, cm, ref, dict(independent=["gamma"], admissible_dependent=["x", "y", "psi"], dependent=[])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("bicycle", "skate"), default="bicycle")
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be a positive integer, got {args.repeats}")

    import nhcontrol
    from nhcontrol.interop import to_casadi

    system, cm, ref, part = _setup(args.model)
    system.equations()                                   # symbolic derivation: not timed
    x0, xd0 = np.asarray(ref.x(0.0)), np.asarray(ref.xd(0.0))
    lin = nhcontrol.linearize(cm, ref, part, 0.0)
    u0 = np.zeros(cm.ninputs)

    def rel(a, b):
        return float(np.max(np.abs(np.asarray(a) - b)) / max(1.0, float(np.max(np.abs(b)))))

    out: dict = {"problem": {"model": args.model, "nstates": len(lin.states), "ninputs": int(cm.ninputs),
                             "repeats": args.repeats, "clock": "perf_counter"}}
    out["linearize_s"] = median_time(lambda: nhcontrol.linearize(cm, ref, part, 0.0), args.repeats)
    for route in ("symbolic", "kernels"):
        t0 = time.perf_counter()
        cs = to_casadi(system if route == "symbolic" else cm, part, route=route, x_guess=x0)
        export = time.perf_counter() - t0
        a = cs.args(cs.state(x0, xd0), u0)
        A, B = cs.AB(*a)
        ab_s = median_time(lambda: cs.AB(*a), args.repeats)
        out[route] = {"export_s": export, "f_s": median_time(lambda: cs.f(*a), args.repeats),
                      "AB_s": ab_s, "AB_ratio_over_linearize": ab_s / out["linearize_s"],
                      "max_rel_difference_A": rel(A, lin.A), "max_rel_difference_B": rel(B, lin.B)}
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
