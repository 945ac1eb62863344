"""Benchmark: linearization of the benchmark bicycle (thesis Sect. 4.3) by the third procedure
and by the finite-difference counterpart of Eqs. (7.104)-(7.110), measured in the same run.

Run ``python benchmarks/linearize_bicycle.py [--repeat R] [--speed V]``; prints one JSON object:

* ``third_procedure_s``: median wall time of one full ``nhcontrol.linearize(cm, ref, partition)``
  (fused exact kernel + Steps 1-7 + the reference and partition checks; with C kernels Steps 1-7
  and the checks are compiled too, ``nhcontrol.linearization._cpoint``) at one instant of the steady
  forward motion;
* ``finite_difference_s``: median time of one central-difference Jacobian of the index-1 ODE
  (``2n = 22`` columns, 44 perturbed points in one stacked kernel call, ``h = 1e-5``);
* ``ratio_fd_over_third``;
* ``vectorised_1000_s``: one ``linearize`` call with 1,000 time samples (stacked kernels), and
  ``vectorised_per_point_s`` (= ``stacked_per_point_s``, its former name: goal ≤ 2e-5 s);
* ``kernel_one_point_s``: the one-point ``linearization_terms`` call alone (the rest of
  ``third_procedure_s`` is Steps 1-7, the checks, the reference and the result object:
  ``point_overhead_s``); ``third_procedure_unchecked_s``: the same with ``check=False`` (no
  reference admissibility check, no conditioning pre-check); ``kernel_backend``: ``"c"`` or ``"python"`` (the generated kernels
  in use);
* ``prepared_point_s``: one call of the prepared one-point linearizer
  ``lz = cm.linearizer(partition)``, ``lz(x0, ẋ0, ẍ0, Λ0, out=(A, B))`` (the same numbers as
  ``linearize``, its checks included as flags; `nhcontrol.linearization.prepared`; goal ≤ 1.5e-5 s),
  ``prepared_point_unchecked_s`` (``check=False``), ``prepared_at_s`` (``lz.at(ref, t)``: the
  reference evaluated too), ``prepared_bound_s`` (``lz.bind(x0, ẋ0, ẍ0, Λ0)()``: arguments and
  results bound by memory, like CasADi's buffer call) and ``prepared_point_max_rel_diff``
  (against ``linearize``);
* ``eigenvalue_error_third`` / ``eigenvalue_error_fd``: max error of the four non-trivial
  eigenvalues against Meijaard et al. (2007), Table 2, at the chosen speed (integer speeds only).

``cpu`` repeats the three timings with ``time.process_time`` (robust on a shared machine).
The thesis reports 0.5 ms per linearization in MATLAB; the target here is ≤ 0.1 ms per point
(goals: ``third_procedure_s`` ≤ 1e-4 s, ``ratio_fd_over_third`` ≥ 10).
The model is compiled (or loaded from the disk cache) before timing starts.
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


def _load() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the OS has none): the context of the
    timings on a shared machine."""
    import os

    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--speed", type=float, default=5.0)
    args = parser.parse_args(argv)

    from nhcontrol.analysis import match_spectra, structural_zeros
    from nhcontrol.linearization import Partition, finite_difference_jacobian, linearize
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.reproduce.bicycle_benchmark import reference_data

    t0 = time.perf_counter()
    cm = bb.model()
    load_s = time.perf_counter() - t0
    ref = bb.steady_forward(cm, args.speed)
    part = Partition.from_dict(bb.PARTITION_4_172)

    x, xd, xdd, lam, u = ref.values(0.0)
    u = u if u.size else None
    kernel = median_time(lambda: cm.linearization_terms(x, xd, xdd, lam, u, ref.parameters),
                          args.repeat)
    third = median_time(lambda: linearize(cm, ref, part), args.repeat)
    unchecked = median_time(lambda: linearize(cm, ref, part, check=False), args.repeat)
    fd = median_time(lambda: finite_difference_jacobian(cm, ref, h=1e-5), args.repeat)
    ts = np.linspace(0.0, 1.0, 1000)
    vec = median_time(lambda: linearize(cm, ref, part, t=ts), max(3, args.repeat // 10))
    lz, lz_free = cm.linearizer(part), cm.linearizer(part, check=False)
    buf = lz(x, xd, xdd, lam, u)
    buf = (np.empty_like(buf[0]), np.empty_like(buf[1]))
    prepared = median_time(lambda: lz(x, xd, xdd, lam, u, out=buf), args.repeat * 4)
    prepared_free = median_time(lambda: lz_free(x, xd, xdd, lam, u, out=buf), args.repeat * 4)
    prepared_at = median_time(lambda: lz.at(ref, 0.0), args.repeat * 4)
    bound = lz.bind(*(np.array(v, dtype=float) for v in (x, xd, xdd, lam)))
    prepared_bound = median_time(bound, args.repeat * 4)
    # CPU time of this process (less sensitive to other load on a shared machine)
    cpu = time.process_time
    third_cpu = median_time(lambda: linearize(cm, ref, part), args.repeat, cpu)
    fd_cpu = median_time(lambda: finite_difference_jacobian(cm, ref, h=1e-5), args.repeat, cpu)
    vec_cpu = median_time(lambda: linearize(cm, ref, part, t=ts), max(3, args.repeat // 10), cpu)
    prepared_cpu = median_time(lambda: lz(x, xd, xdd, lam, u, out=buf), args.repeat * 4, cpu)
    kernel_cpu = median_time(lambda: cm.linearization_terms(x, xd, xdd, lam, u, ref.parameters),
                              args.repeat, cpu)

    A = np.array(linearize(cm, ref, part).A)
    A_lz = lz(x, xd, xdd, lam, u)[0]
    keep = structural_zeros(A).keep
    true = np.linalg.eigvals(A[np.ix_(keep, keep)])
    Jfd = finite_difference_jacobian(cm, ref, h=1e-5).J
    out = {
        "speed_m_s": args.speed,
        "repeat": args.repeat,
        "model_load_s": load_s,
        "third_procedure_s": third,
        "finite_difference_s": fd,
        "ratio_fd_over_third": fd / third,
        "vectorised_1000_s": vec,
        "vectorised_per_point_s": vec / ts.size,
        "stacked_per_point_s": vec / ts.size,
        "kernel_one_point_s": kernel,
        "third_procedure_unchecked_s": unchecked,
        "point_overhead_s": third - kernel,
        "prepared_point_s": prepared,
        "prepared_point_unchecked_s": prepared_free,
        "prepared_at_s": prepared_at,
        "prepared_bound_s": prepared_bound,
        "prepared_point_max_rel_diff": float(np.max(np.abs(A_lz - A)) / np.max(np.abs(A))),
        "prepared_compiled": bool(lz.compiled),
        "kernel_backend": str(getattr(cm, "backend", "python")),
        "cpu": {"third_procedure_s": third_cpu, "finite_difference_s": fd_cpu,
                "ratio_fd_over_third": fd_cpu / third_cpu, "vectorised_1000_s": vec_cpu,
                "stacked_per_point_s": vec_cpu / ts.size, "kernel_one_point_s": kernel_cpu,
                "point_overhead_s": third_cpu - kernel_cpu, "prepared_point_s": prepared_cpu},
        "jacobian_shapes": {"third": list(A.shape), "finite_difference": list(Jfd.shape)},
    }
    table = reference_data()["eigenvalues"]
    if float(args.speed) in table:
        out["eigenvalue_error_third"] = match_spectra(table[float(args.speed)], true)[1]
        out["eigenvalue_error_fd"] = match_spectra(table[float(args.speed)],
                                                   np.linalg.eigvals(Jfd))[1]
    out["load_average"] = _load()
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
