"""Benchmark: the hydraulic four-bar (thesis Sect. 7.3.5), third procedure vs conventional counterpart.

Run ``python benchmarks/hydraulic_fourbar.py [--repeat R] [--h H]``; prints one JSON object:

* ``third_s``: median wall time of the 6x6 Jacobian (7.96) at the equilibrium: the exact circuit
  partials (``hydraulic_fourbar.circuit_jacobians``) plus
  ``nhcontrol.linearization.linearize_with_first_order_states`` (third procedure + rows (7.26), (7.28));
* ``counterpart_s``: median wall time of the 24x24 Jacobian (7.109) by central differences
  (``finite_difference_jacobian_first_order``: 48 perturbed points in one stacked call, step ``h``);
* ``ratio``: ``counterpart_s / third_s`` (the thesis reports 0.016 s / 0.005 s = 3.2 in MATLAB);
* ``third_cpu_s``, ``counterpart_cpu_s``, ``ratio_cpu``: the same with ``time.process_time``
  (less sensitive to other load on a shared machine);
* ``eigenvalue_max_rel_diff``: largest relative difference between the four non-zero eigenvalues
  of the two Jacobians at this ``h``;
* ``first_order_s``: median wall time of the same Jacobian with the circuit inside the model
  (``hydraulic_fourbar.build_with_circuit``, first-order states ``p1, p2, p3, U``):
  ``nhcontrol.linearization.linearize_first_order_system`` with the generated rate kernels;
  ``rate_jacobians_s``, ``rates_s``: one-point ``RateKernels.jacobians`` and ``rates`` of that
  model; ``compile_rates_s``: ``compile_rates`` once the model is compiled (its reference
  holds the equilibrium multipliers, as for ``third_s``);
* ``load_average``: the machine's 1, 5, 15 minute load averages at the end of the run.

With C kernels both linearizations run the compiled one-point routine
(`nhcontrol.linearization.prepared`): the mechanical rows and the matrices ``T0``, ``V̄̄0``, ``Th0``
of Steps 1, 2 and 4 come from one foreign call; for ``third_s`` the same call also assembles the
rows of Eqs. (7.26), (7.28) and ``B`` (``nhc_point_first_order`` in
`nhcontrol.linearization._cpoint`).

Both start from the same compiled model, equilibrium and ``Reference`` (built before timing, with
the equilibrium multipliers ``Λ0`` of Eqs. (7.91)-(7.94) stored in it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))   # benchmarks/_common.py
from _common import median_time  # noqa: E402


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--h", type=float, default=1e-5)
    args = parser.parse_args(argv)

    from nhcontrol.linearization import (finite_difference_jacobian_first_order,
                                     linearize_with_first_order_states)
    from nhcontrol.models import hydraulic_fourbar as hf
    from nhcontrol.reference import Reference

    eq = hf.equilibrium(60.0, 3.5e6)
    cm = hf.model()
    # the multipliers of the equilibrium are part of the reference (closed form (7.91)-(7.94));
    # obtained once here by inverse dynamics, so neither timing includes them
    lam0 = Reference.equilibrium(cm, eq.x, u=eq.p).lam(0.0)
    ref = Reference.constant_velocity(cm, eq.x, np.zeros(10), u=eq.p, lam=lam0)
    tau = hf.HYDRAULIC_DEFAULTS["tau_v"]

    def third():
        return linearize_with_first_order_states(cm, ref, hf.PARTITION,
                                                 **hf.circuit_jacobians(eq).as_kwargs())

    def counterpart():
        return finite_difference_jacobian_first_order(
            cm, ref, z_rate=lambda x, v, z, w, r: hf.circuit_rates(x, v, z, w[:, 0]),
            w_rate=lambda w, r: hf.spool_rates(w, r, tau), w0=[0.0], r0=[0.0], h=args.h)

    # the third procedure first (wall, then CPU): the counterpart's stacked numpy calls may
    # leave BLAS threads spinning for a while, which process_time would charge to it
    cpu = time.process_time
    t3 = median_time(third, args.repeat)
    t3c = median_time(third, args.repeat, cpu)
    tc = median_time(counterpart, args.repeat)
    tcc = median_time(counterpart, args.repeat, cpu)
    ev6 = np.linalg.eigvals(third().A)
    ev24 = np.linalg.eigvals(counterpart().J)
    nz = ev6[np.abs(ev6) > 1e-6 * np.abs(ev6).max()]
    rel = max(float(np.min(np.abs(ev24 - e)) / abs(e)) for e in nz)
    out = {"repeat": args.repeat, "h": args.h, "third_s": t3, "counterpart_s": tc, "ratio": tc / t3,
           "third_cpu_s": t3c, "counterpart_cpu_s": tcc, "ratio_cpu": tcc / t3c,
           "shapes": [list(third().A.shape), list(counterpart().J.shape)],
           "eigenvalue_max_rel_diff": rel, **_first_order(args.repeat)}
    try:
        import os

        out["load_average"] = [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):  # pragma: no cover
        out["load_average"] = None
    print(json.dumps(out, indent=2))
    return out


def _first_order(repeat: int) -> dict:
    """Timings of the model with the circuit inside (first-order states, generated rate kernels)."""
    from nhcontrol.compiled import compile_rates
    from nhcontrol.linearization import linearize_first_order_system
    from nhcontrol.models import hydraulic_fourbar as hf
    from nhcontrol.reference import Reference

    mb = hf.build_with_circuit()
    cm = mb.compile()
    t0 = time.perf_counter()
    rk = compile_rates(mb)
    t_rates = time.perf_counter() - t0
    eq = hf.equilibrium(60.0)
    u_all = np.r_[eq.p, 0.0, 0.0]
    # as for third_s: the equilibrium multipliers stored in the reference (not recomputed by
    # inverse dynamics at every call, which is the reference's cost, not the linearization's)
    lam0 = Reference.equilibrium(cm, eq.x, u=u_all).lam(0.0)
    ref = Reference.constant_velocity(cm, eq.x, np.zeros(cm.n), u=u_all, lam=lam0)
    z, u = rk.split_inputs(u_all)
    xd = np.zeros(cm.n)
    return {"first_order_s": median_time(lambda: linearize_first_order_system(cm, rk, ref, hf.PARTITION),
                                         repeat),
            "rate_jacobians_s": median_time(lambda: rk.jacobians(eq.x, xd, z, u), 4 * repeat),
            "rates_s": median_time(lambda: rk.rates(eq.x, xd, z, u), 4 * repeat),
            "compile_rates_s": t_rates}


if __name__ == "__main__":
    main()
