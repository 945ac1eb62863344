"""Benchmark: the exported C controllers against the same Python controllers, in one run.

The ball-plate case of ``nhcontrol reproduce nmpc`` (N = 20, h = T/125, |α|, |β| ≤ 10°, 0.5° per
sample, Riccati terminal weight; plant ball 10 % larger, 5 cm offset). For the LTV-MPC
(`MPCController`) and the RTI NMPC (`NMPCController`): a Python closed loop of ``--seconds``
records the plant states at the samples and times each Python control step from outside the
call (``time.perf_counter``); the controller is exported (``export_c``), built with ``make``
and its harness ``nhc_loop`` fed the recorded states: its median step (``clock_gettime``
around the control call, measured in C) over the Python median is ``c_over_python_mpc`` /
``c_over_python_rti`` (goal ≤ 0.25). The EKF + LTV-MPC loop gives ``c_ekf_update_s`` (the
estimator's share of the C step). ``build_s``: export + ``make`` of the RTI folder (the model's
kernels, the one-point procedure, the controller and the harness; goal ≤ 10 s on 2 cores);
``max_input_difference_*``: C against Python (rad); ``qp_max_iter``: the stated iteration
limit of the C QP solver (its worst case per step). Run
``python benchmarks/c_controllers.py [--seconds 3]``; prints one JSON object with the load
average before and after.
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
import time
from pathlib import Path

import numpy as np


def _controllers(s):
    from nhcontrol.applications.ball_plate_control import ball_plate_controller, ball_plate_estimator

    mpc = ball_plate_controller(s, "mpc")
    # the RTI's QP polished (solved exactly, as the C one) so that the inputs can be compared
    rti = ball_plate_controller(s, "rti", solver_options={"polishing": True})
    mpc_e = ball_plate_controller(s, "mpc")
    ekf = ball_plate_estimator(s, "ekf", 0, None)
    return mpc, rti, mpc_e, ekf, ekf.cm


def _python_loop(s, ctrl, samples, ekf=None, sensors=None):
    from nhcontrol.simulate import forward_dynamics

    lines, us, times = [], [], []
    held = {"u": None}

    def law(t, x, xd):
        t0 = time.perf_counter()
        if ekf is None:
            u = ctrl(t, x, xd)
            dt_step = time.perf_counter() - t0
            lines.append({"t": float(t), "x": list(map(float, x)), "xd": list(map(float, xd))})
        else:
            u_prev = ekf.u if held["u"] is None else held["u"]
            y = np.asarray(sensors.output(x, xd, u_prev), float)
            t0 = time.perf_counter()
            ekf.update(t, y, u_prev)
            u = ctrl(t, ekf.x, ekf.xd)
            dt_step = time.perf_counter() - t0
            held["u"] = u
            lines.append({"t": float(t), "y": list(map(float, y))})
        times.append(dt_step)
        us.append(np.array(u))
        return u

    ctrl.reset()
    te = s.dt * np.arange(samples + 1)
    forward_dynamics(s.plant, (0.0, float(te[-1])), s.x0, s.xd0, controller=law,
                     sample_time=s.dt, rtol=1e-8, atol=1e-10, t_eval=te)
    return lines[:samples], np.array(us[:samples]), times[:samples]


def _build(folder):
    t0 = time.perf_counter()
    subprocess.run(["make", "-s", "-j2"], cwd=folder, check=True, capture_output=True)
    return time.perf_counter() - t0


def _feed(folder, lines):
    text = "".join(json.dumps(r) + "\n" for r in lines)
    out = subprocess.run(["./nhc_loop"], cwd=folder, input=text, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    res = [json.loads(line) for line in out]
    return np.array([r["u"] for r in res[:-1]]), res[-1]["summary"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args(argv)
    if not shutil.which("make") or not (shutil.which("cc") or shutil.which("gcc")):
        print(json.dumps({"skipped": "no C compiler or make on this machine"}))
        return 0
    from nhcontrol.interop.c_controllers import QP_MAX_ITER

    out = {"load_average_before": [round(v, 2) for v in os.getloadavg()]}
    from nhcontrol.applications.ball_plate_control import ball_plate_nmpc_setup

    s = ball_plate_nmpc_setup()
    mpc, rti, mpc_e, ekf, cms = _controllers(s)
    samples = int(round(args.seconds / s.dt))
    out["samples"] = samples
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        rti.export_c(tmp / "rti")
        export_rti = time.perf_counter() - t0
        build_rti = _build(tmp / "rti")
        mpc.export_c(tmp / "mpc")
        build_mpc = _build(tmp / "mpc")
        mpc_e.export_c(tmp / "ekf", estimator=ekf)    # the filter's initial state
        build_ekf = _build(tmp / "ekf")
        out["build_s"] = export_rti + build_rti
        out["build_s_parts"] = {"rti_export": export_rti, "rti_make": build_rti,
                                "mpc_make": build_mpc, "ekf_mpc_make": build_ekf}
        for name, ctrl in (("mpc", mpc), ("rti", rti)):
            lines, up, tpy = _python_loop(s, ctrl, samples)
            uc, summ = _feed(tmp / name, lines)
            py = statistics.median(tpy[1:])
            out[f"python_{name}_step_s"] = py
            out[f"c_{name}_step_s"] = summ["median_step_s"]
            out[f"c_{name}_max_step_s"] = summ["max_step_s"]
            out[f"c_over_python_{name}"] = summ["median_step_s"] / py
            out[f"max_input_difference_{name}"] = float(np.abs(uc - up).max())
            out[f"workspace_bytes_{name}"] = summ["workspace_bytes"]
        lines, up, tpy = _python_loop(s, mpc_e, samples, ekf, cms)
        uc, summ = _feed(tmp / "ekf", lines)
        out["python_ekf_mpc_step_s"] = statistics.median(tpy[1:])
        out["c_ekf_mpc_step_s"] = summ["median_step_s"]
        out["c_ekf_update_s"] = summ["median_estimator_s"]
        out["max_input_difference_ekf_mpc"] = float(np.abs(uc - up).max())
    out["qp_max_iter"] = QP_MAX_ITER
    out["goals"] = {"c_over_python_mpc<=0.25": out["c_over_python_mpc"] <= 0.25,
                    "c_over_python_rti<=0.25": out["c_over_python_rti"] <= 0.25,
                    "build_s<=10": out["build_s"] <= 10.0}
    out["load_average_after"] = [round(v, 2) for v in os.getloadavg()]
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
