"""Standalone C export (nhcontrol.interop.export_c, CompiledModel.export_c, LQRResult.export_c).

Each exported directory is built with its own Makefile (system compiler) and its ``nhc_check``
program is fed random admissible points (a random state on the constraint manifold, random
inputs, accelerations and multipliers of the index-1 system): its ``A, B`` agree with
``nhcontrol.linearize`` to 1e-13 relative. The exported minimal-state right-hand side
``nhc_rhs`` (loaded with ctypes from ``libnhc_model.so``) agrees with the Python reduced ODE.
Models: the Chaplygin sleigh (no inputs), the torque-steered skate (affine constraint, one
input), and the benchmark bicycle with lean and steer torques (m = 4; slow: a 12 s build).
"""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess

import numpy as np
import pytest

from nhcontrol._util.errors import InteropError

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None,
                                reason="the C export tests build with make and the system C compiler (cc)")


def _rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if b.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def _build(cm, part, directory):
    meta = cm.export_c(directory, part)
    for target in ("nhc_check", "libnhc_model.so"):
        r = subprocess.run(["make", "-C", str(directory), target], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    return meta


def _check(directory, point):
    r = subprocess.run([str(directory / "nhc_check")], input=json.dumps(point), capture_output=True,
                       text=True, timeout=60)
    return r.returncode, json.loads(r.stdout) if r.stdout else None, r.stderr


def _random_points(cm, part, X0, scale, count, seed, uscale=1.0, guess=None):
    """Random admissible points: (X, u, x, xd, xdd, lam)."""
    from nhcontrol.interop.casadi_export import _KernelCore
    from nhcontrol.linearization import index1_accelerations
    from nhcontrol.linearization.first import partition_indices

    ai, ad, d = partition_indices(cm, part)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        X = X0 + rng.normal(0.0, scale, X0.size)
        u = rng.normal(0.0, uscale, cm.ninputs)
        g = np.zeros(cm.n) if guess is None else np.asarray(guess, dtype=float)
        core = _KernelCore(cm, part, ai, ad, d, g, np.asarray(cm._p0), 1e-14)
        x, xd = core.full(X, u if cm.ninputs else None)
        xdd, lam = index1_accelerations(cm, x, xd, u if cm.ninputs else None)
        out.append((X, u, x, xd, xdd, lam, core))
    return out


def _compare(cm, part, directory, points):
    from nhcontrol import linearize
    from nhcontrol.reference import reference_points

    lib = ctypes.CDLL(str(directory / "libnhc_model.so"))
    meta = json.loads((directory / "nhc_model.json").read_text())
    dbl = ctypes.POINTER(ctypes.c_double)
    work = np.zeros(meta["work_doubles"])
    iwork = np.zeros(meta["iwork"], dtype=np.int64)
    for X, u, x, xd, xdd, lam, core in points:
        ref = reference_points(cm, x[None], xd[None], xdd[None], u[None] if cm.ninputs else None,
                               lam[None])             # admissibility checked in Python too
        res = linearize(cm, ref, part, 0.0)
        code, got, err = _check(directory, {"x": x.tolist(), "xd": xd.tolist(), "xdd": xdd.tolist(),
                                            "lam": lam.tolist(), "u": u.tolist()})
        assert code == 0 and got["status"] == 0, err
        assert _rel(got["A"], res.A) <= 1e-13
        assert _rel(np.reshape(got["B"], res.B.shape), res.B) <= 1e-13
        # the minimal-state right-hand side
        Xdot = np.zeros(meta["ns"])
        xo, xdo = np.zeros(cm.n), np.zeros(cm.n)
        uu = np.ascontiguousarray(u if cm.ninputs else np.zeros(1))
        st = lib.nhc_rhs(X.ctypes.data_as(dbl), uu.ctypes.data_as(dbl),
                         np.ascontiguousarray(cm._p0).ctypes.data_as(dbl), core.guess.ctypes.data_as(dbl),
                         Xdot.ctypes.data_as(dbl), xo.ctypes.data_as(dbl), xdo.ctypes.data_as(dbl),
                         work.ctypes.data_as(dbl), ctypes.c_int64(work.size),
                         iwork.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)))
        assert st == 0
        assert _rel(xo, x) <= 1e-13 and _rel(xdo, xd) <= 1e-13
        assert _rel(Xdot, core.rhs(X, u if cm.ninputs else None)) <= 1e-12
        # f with its exact Jacobians at X: the third procedure at (x, xd, xdd, lam)
        A = np.zeros((meta["ns"], meta["ns"]))
        B = np.zeros((meta["ns"], max(cm.ninputs, 1)))
        st = lib.nhc_jacobian(X.ctypes.data_as(dbl), uu.ctypes.data_as(dbl),
                              np.ascontiguousarray(cm._p0).ctypes.data_as(dbl), core.guess.ctypes.data_as(dbl),
                              Xdot.ctypes.data_as(dbl), A.ctypes.data_as(dbl), B.ctypes.data_as(dbl),
                              work.ctypes.data_as(dbl), ctypes.c_int64(work.size),
                              iwork.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)))
        assert st == 0
        assert _rel(A, res.A) <= 1e-12
        if cm.ninputs:
            assert _rel(B[:, :cm.ninputs], res.B) <= 1e-12
        # a workspace one double short is refused
        assert lib.nhc_jacobian(X.ctypes.data_as(dbl), uu.ctypes.data_as(dbl),
                                np.ascontiguousarray(cm._p0).ctypes.data_as(dbl),
                                core.guess.ctypes.data_as(dbl), Xdot.ctypes.data_as(dbl),
                                A.ctypes.data_as(dbl), B.ctypes.data_as(dbl), work.ctypes.data_as(dbl),
                                ctypes.c_int64(work.size - 1),
                                iwork.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))) == 16


@pytest.fixture(scope="module")
def sleigh_export(tmp_path_factory):
    from nhcontrol.models import sleigh

    cm = sleigh.model()
    directory = tmp_path_factory.mktemp("sleigh_c")
    meta = _build(cm, sleigh.PARTITION, directory)
    return cm, sleigh.PARTITION, directory, meta


@pytest.mark.c_compiler
def test_sleigh_export_agrees(sleigh_export):
    cm, part, directory, meta = sleigh_export
    assert meta["ns"] == 5 and meta["k"] == 0
    assert meta["memory_bytes"] == 8 * (meta["work_doubles"] + meta["iwork"])
    X0 = np.array([0.0, 0.0, 1.0, 0.0, 0.0])
    _compare(cm, part, directory, _random_points(cm, part, X0, 0.4, 3, seed=1))


@pytest.mark.c_compiler
def test_skate_export_agrees(tmp_path):
    from nhcontrol.models import single_track as st

    cm = st.build("torque").system.compile()
    part = dict(independent=["gamma"], admissible_dependent=["x", "y", "psi"], dependent=[])
    _build(cm, part, tmp_path)
    _compare(cm, part, tmp_path, _random_points(cm, part, np.zeros(5), 0.3, 3, seed=2, uscale=5.0))


@pytest.mark.c_compiler
def test_check_reports_inadmissible_point_and_bad_input(sleigh_export):
    cm, _, directory, _ = sleigh_export
    # a velocity that violates the knife-edge constraint: NHC_NOT_ADMISSIBLE (1)
    code, got, _ = _check(directory, {"x": [0, 0, 0], "xd": [1.0, 0.5, 0.0], "xdd": [0, 0, 0], "lam": [0.0]})
    assert code == 1 and got["status"] == 1
    code, got, err = _check(directory, {"x": [0, 0], "xd": [1, 0, 0], "xdd": [0, 0, 0], "lam": [0]})
    assert code == 2 and got is None and "x, xd, xdd (3 numbers each)" in err


@pytest.mark.c_compiler
def test_sources_have_no_allocation_or_mutable_globals(sleigh_export):
    _, _, directory, meta = sleigh_export
    src = (directory / "nhc_model.c").read_text()
    for word in ("malloc", "calloc", "realloc", "free(", "printf"):
        assert word not in src, word
    header = (directory / "nhc_model.h").read_text()
    assert f"#define NHC_WORK {meta['work_doubles']}" in header and "bytes in all" in header
    # every file-scope definition is a function (no file-scope variables)
    import re

    for line in src.splitlines():
        if re.match(r"^(static\s+)?(const\s+)?(double|int|int64_t|long|char)\s+\w+\s*(\[|=|;)", line):
            raise AssertionError(f"file-scope variable in the export: {line}")


@pytest.mark.slow
def test_bicycle_export_agrees(tmp_path):
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model(inputs=("T_phi", "T_delta"))
    ref = bb.steady_forward(cm, 4.0)
    _build(cm, bb.PARTITION_4_172, tmp_path)
    x0, xd0 = np.asarray(ref.x(0.4)), np.asarray(ref.xd(0.4))
    from nhcontrol.linearization.first import partition_indices

    ai, ad, _ = partition_indices(cm, bb.PARTITION_4_172)
    X0 = np.concatenate([x0[ai], xd0[ai], x0[ad]])
    _compare(cm, bb.PARTITION_4_172, tmp_path, _random_points(cm, bb.PARTITION_4_172, X0, 0.05, 3,
                                                              seed=3, uscale=2.0, guess=x0))


def test_export_errors(tmp_path):
    from nhcontrol.interop import export_c
    from nhcontrol.models import single_track as st

    with pytest.raises(InteropError, match="enter its nonholonomic"):
        export_c(st.build("rigid_kinematic").system, tmp_path,
                 dict(independent=[], admissible_dependent=["x", "y", "psi", "phi_R", "phi_F"], dependent=[]))
    with pytest.raises(InteropError, match="CompiledModel or a MultibodySystem"):
        export_c(object(), tmp_path, {})


def test_lqr_gain_tables(tmp_path):
    from nhcontrol.design import finite_horizon_lqr

    rng = np.random.default_rng(0)
    N, n, k = 12, 4, 2
    Ad = np.eye(n) + 0.05 * rng.standard_normal((N, n, n))
    Bd = 0.1 * rng.standard_normal((N, n, k))
    res = finite_horizon_lqr((Ad, Bd), np.eye(n), 0.1 * np.eye(k), 10 * np.eye(n))
    info = res.export_c(tmp_path, name="ctrl")
    assert info["table_bytes"] == N * n * k * 8
    main = tmp_path / "main.c"
    main.write_text("""#include <stdio.h>
#include "ctrl.h"
int main(void) { double dx[4] = {0.3, -1.0, 2.0, 0.5}, u[2]; long s;
  for (s = 0; s < CTRL_STEPS; s++) { ctrl_control(s, dx, u); printf("%.17g %.17g\\n", u[0], u[1]); }
  return ctrl_control(CTRL_STEPS, dx, u) == 1 ? 0 : 3; }
""")
    exe = tmp_path / "main"
    r = subprocess.run(["cc", "-std=c99", "-O2", "-o", str(exe), str(main), str(tmp_path / "ctrl.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    assert out.returncode == 0
    got = np.loadtxt(out.stdout.splitlines())
    dx = np.array([0.3, -1.0, 2.0, 0.5])
    want = np.array([res.control(s, dx) for s in range(N)])
    assert _rel(got, want) <= 1e-14


def test_cli_export_c(tmp_path, capsys):
    from nhcontrol.cli import main

    out = tmp_path / "sled"
    assert main(["export-c", "sleigh", "--out", str(out),
                 "--partition", "independent=x,psi;admissible_dependent=y;dependent="]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert meta["model"] == "chaplygin_sleigh" and meta["states"] == ["x", "psi", "x_d", "psi_d", "y"]
    # the listed files and the manifest of what the export wrote (.nhcontrol-export.json)
    assert sorted(p.name for p in out.iterdir()) == sorted(meta["files"] + [".nhcontrol-export.json"])
    # package.module:function, the module's partition constant by name
    assert main(["export-c", "nhcontrol.models.sleigh:build", "--out", str(tmp_path / "b"),
                 "--partition", "PARTITION"]) == 0
    capsys.readouterr()
    for argv, msg in ((["export-c", "nope", "--out", str(tmp_path / "c")], "no model 'nope'"),
                      (["export-c", "benchmark_bicycle", "--out", str(tmp_path / "c")], "give --partition"),
                      (["export-c", "sleigh", "--out", str(tmp_path / "c"), "--partition", "foo=x"],
                       "unknown set 'foo'")):
        with pytest.raises(SystemExit, match="^2$"):
            main(argv)
        assert msg in capsys.readouterr().err
