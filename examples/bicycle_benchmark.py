"""Benchmark bicycle (thesis Sect. 4.3): exact linearization, quartic, critical speeds, Fig. 4.5.

Run ``python examples/bicycle_benchmark.py [OUTDIR]``. Uses only the public API.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import nhcontrol
from nhcontrol.analysis import critical_points, eigenvalues_vs_parameter, structural_zeros
from nhcontrol.linearization import Partition
from nhcontrol.models import benchmark_bicycle as bb


def main(outdir: str | Path = ".") -> dict:
    cm = bb.model()                                        # compiled once, then from the cache
    partition = Partition.from_dict(bb.PARTITION_4_172)    # x_ai = [x_b, phi_b, delta], Eq. (4.172)

    def jacobian(v: float) -> np.ndarray:
        return np.array(nhcontrol.linearize(cm, bb.steady_forward(cm, v), partition).A)

    res5 = nhcontrol.linearize(cm, bb.steady_forward(cm, 5.0), partition)
    J5 = np.array(res5.A)                                  # 10 x 10, Eq. (4.180) at v = 5 m/s
    zeros = structural_zeros(J5)                           # forward motion + l = 4 spurious
    keep = np.ix_(zeros.keep, zeros.keep)

    # J(v) = J0 + v J1 + v^2 J2 exactly: three linearizations give the whole speed dependence
    J0, J1, J2 = (np.linalg.solve(np.vander([0.0, 1.0, 2.0], 3, increasing=True),
                                  np.array([jacobian(v) for v in (0.0, 1.0, 2.0)]).reshape(3, -1))
                  .reshape(3, *J5.shape))

    def lean_steer(v: float) -> np.ndarray:
        return (J0 + v * J1 + v * v * J2)[keep]

    crit = critical_points(lean_steer, np.linspace(0.0, 10.0, 101))
    names = {"coalescence": "v_d", "oscillatory": "v_w", "real": "v_c"}
    speeds = {names[c.kind]: c.value for c in crit}
    print(f"Jacobian {J5.shape}, {zeros.n_zero} exact zero eigenvalues, "
          f"non-trivial states {[res5.states[i] for i in zeros.keep]}")
    for k, v in speeds.items():
        print(f"{k} = {v:.12f} m/s")
    print("eigenvalues at v = 5 m/s:", np.round(np.sort_complex(np.linalg.eigvals(J5[keep])), 6))

    sweep = eigenvalues_vs_parameter(lean_steer, np.linspace(0.0, 10.0, 401), parameter="v (m/s)")
    from nhcontrol.plotting.stability import plot_eigenvalues_vs_parameter

    fig = plot_eigenvalues_vs_parameter(sweep, critical=crit, ylim=(-10, 10),
                                        labels={"coalescence": "v_d", "oscillatory": "v_w",
                                                "real": "v_c"},
                                        xlabel="forward speed v (m/s)",
                                        title="Benchmark bicycle (thesis Fig. 4.5)")
    path = Path(outdir) / "bicycle_eigenvalues_vs_speed.png"
    fig.savefig(path, dpi=110)
    print(f"saved {path}")
    return {"speeds": speeds, "n_zero": zeros.n_zero, "figure": str(path)}


if __name__ == "__main__":
    import matplotlib

    matplotlib.use("Agg")
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
