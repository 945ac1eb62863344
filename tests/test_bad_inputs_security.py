"""Bad inputs on the surfaces that write generated code and user folders, and on the sampled
estimators and controllers: each case asserts the error class *and* that the message names the
culprit (the user's name or value).

* names that reach generated C/Python are refused where they are declared (modeling layer,
  sympy.mechanics import) and again by the writers; user text goes through one escaping
  (`nhcontrol._util.names.source_text`), checked by compiling and running it;
* exports never destroy: no overwrite of a file nhcontrol did not write, no symbolic link
  followed, one-line CLI errors with exit code 2;
* bounded work (horizons) and environment variables with bad values;
* no NaN in, no NaN out; times off the sample grid refused.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from nhcontrol._util.errors import (ConfigurationError, DesignError, ExportConflictError, ExportError,
                                    InteropError, ModelError, SimulationInputError)
from nhcontrol._util.names import check_name, source_text
from nhcontrol.modeling import MultibodySystem

HOSTILE = ["evil */ int planted; /*", "x */ __attribute__((constructor)) void f(void){} /*",
           "a\nb", "a'b", 'a"b', "a\\b", "??/", "q\x00", "\u03c8", "x y", "1x", "x-y", "x.y", ""]
RESERVED = ["int", "static", "_Bool", "while", "lambda", "None", "class", "nhc_model", "NHC_N",
            "__x", "_Xy"]


# ---------------------------------------------------------------------- names, by construction
@pytest.mark.parametrize("name", HOSTILE + RESERVED + ["x" * 64])
def test_model_name_refused_at_declaration(name):
    with pytest.raises(ModelError, match="model name") as err:
        MultibodySystem(name)
    assert repr(name) in str(err.value)


def _mb():
    mb = MultibodySystem("ok")
    return mb, mb.add_coordinates("x")


DECLARATIONS = [
    ("coordinate", lambda mb, x, nm: mb.add_coordinates([nm])),
    ("parameter", lambda mb, x, nm: mb.add_parameters(**{nm: 1.0})),
    ("input", lambda mb, x, nm: mb.add_inputs([nm])),
    ("first-order state", lambda mb, x, nm: mb.add_first_order_states([nm])),
    ("output", lambda mb, x, nm: mb.add_output(nm, x)),
    ("body", lambda mb, x, nm: mb.add_body(nm, mass=1, inertia=sp.eye(3), position=[x, 0, 0])),
    ("holonomic constraint", lambda mb, x, nm: mb.add_holonomic(x, name=nm)),
    ("nonholonomic constraint", lambda mb, x, nm: mb.add_nonholonomic(mb.velocities[0], name=nm)),
    ("clock", lambda mb, x, nm: mb.add_clock(nm)),
]


@pytest.mark.parametrize("kind,declare", DECLARATIONS, ids=[d[0] for d in DECLARATIONS])
@pytest.mark.parametrize("name", ["x */ int planted; /*", "int", "nhc_work"])
def test_every_kind_of_name_refused_where_declared(kind, declare, name):
    mb, x = _mb()
    with pytest.raises(ModelError, match=kind) as err:
        declare(mb, x, name)
    msg = str(err.value)
    assert repr(name) in msg and "'ok'" in msg and "use e.g." in msg


def test_coordinate_whose_velocity_name_is_too_long():
    mb, _ = _mb()
    name = "q" * 62                       # fits, but q..q_d has 64 characters
    with pytest.raises(ModelError, match="velocity name") as err:
        mb.add_coordinates([name])
    assert repr(name + "_d") in str(err.value)
    assert mb.coordinates == (sp.Symbol("x"),)       # nothing half-added


def test_valid_names_pass_unchanged():
    for nm in ("x", "theta_R", "_private", "q1", "match", "type", "x" * 63):
        assert check_name(nm, "coordinate") == nm


def test_output_with_nan_refused():
    mb, x = _mb()
    with pytest.raises(ModelError, match=r"output 'y_nan'.*non-finite") as err:
        mb.add_output("y_nan", x + sp.nan)
    assert "nan" in str(err.value)
    with pytest.raises(ModelError, match=r"output 'y_inf'"):
        mb.add_output("y_inf", sp.oo * x)
    assert mb.outputs == ()


# ---------------------------------------------------------------------- sympy.mechanics import
def _mechanics(qname="q", body="B", mass_name="m"):
    from sympy.physics import mechanics as me

    q = sp.Function(qname)(me.dynamicsymbols._t)           # any name, as a user could write it
    u = me.dynamicsymbols("u")
    m = sp.Symbol(mass_name)
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", q * N.x)
    P.set_vel(N, u * N.x)
    part = me.Particle(body, P, m)
    kane = me.KanesMethod(N, q_ind=[q], u_ind=[u], kd_eqs=[q.diff() - u])
    kane.kanes_equations([part], [(P, -m * N.x)])
    return kane, m


@pytest.mark.parametrize("field,value", [("qname", "q */ int planted; /*"), ("body", "my body"),
                                         ("mass_name", "int")])
def test_sympy_mechanics_names_refused(field, value):
    from nhcontrol.interop import from_sympy_mechanics

    kane, m = _mechanics(**{field: value})
    with pytest.raises(InteropError, match="sympy.mechanics") as err:
        from_sympy_mechanics(kane, parameters={m: 1.0})
    assert repr(value) in str(err.value)


def test_sympy_mechanics_model_name_refused_and_valid_import_kept():
    from nhcontrol.interop import from_sympy_mechanics

    kane, m = _mechanics()
    with pytest.raises(InteropError, match=r"model name 'evil \*/'"):
        from_sympy_mechanics(kane, parameters={m: 1.0}, name="evil */")
    mb = from_sympy_mechanics(kane, parameters={m: 1.0}, name="slider")
    assert [s.name for s in mb.coordinates] == ["q"]          # q(t) -> q: the user's name


# ---------------------------------------------------------------------- the escaping
@pytest.mark.parametrize("text", HOSTILE + ["*/", "/*", "//", "\\\n", "??=", "%s%n", "{x}", "#include",
                                             "\r\n", "\t", "\u00e9\u20ac", "<U+002A>"])
def test_source_text_is_inert(text):
    out = source_text(text)
    assert out.isascii() and out.isprintable()
    for bad in ("*/", "/*", "//", "\\", '"', "'", "\n", "\r", "??", "\x00", "%", "{", "}", "#"):
        assert bad not in out, (text, out)
    # Python: the same text as a comment, and inside three kinds of string literal
    ns: dict = {}
    exec(f"# {out}\na = \"{out}\"\nb = '{out}'\nc = \"\"\"{out}\"\"\"\n", ns)   # noqa: S102
    assert ns["a"] == ns["b"] == ns["c"] == out


def test_source_text_is_one_to_one():
    texts = ["*", "<U+002A>", "<", "a b", "a_b", "\u03c8", "<U+03C8>"]
    outs = [source_text(t) for t in texts]
    assert len(set(outs)) == len(outs)


@pytest.mark.c_compiler
def test_source_text_compiles_inert_in_c(tmp_path):
    """Every hostile text, escaped, in a comment and a string literal of a C99 unit compiled with
    trigraphs on (-std=c99): the program prints exactly the escaped text and nothing else runs."""
    import shutil
    import sysconfig

    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    cc = cc if shutil.which(cc) else next(c for c in ("cc", "gcc", "clang") if shutil.which(c))
    texts = HOSTILE + ["*/", "??/", "\\\n"]
    body = ["#include <stdio.h>", "int main(void)", "{"]
    for t in texts:
        body += [f"    /* {source_text(t)} */", f'    puts("{source_text(t)}");']
    body += ["    return 0;", "}"]
    src = tmp_path / "probe.c"
    src.write_text("\n".join(body) + "\n", encoding="ascii")
    exe = tmp_path / "probe"
    subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-o", str(exe), str(src)], check=True,
                   capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    assert out.splitlines() == [source_text(t) for t in texts]


@pytest.mark.parametrize("name", ['evil"""\nimport os\nos.system("x")  #', "a'''b", "\\"])
def test_generated_python_module_docstring_escapes_the_name(name):
    """The kernel module's docstring names the model through source_text: a name that would close
    the docstring (a model renamed after its declaration) stays inside it."""
    from nhcontrol.compiled.codegen import generate_module
    from nhcontrol.modeling.graph import ExprGraph

    src = generate_module([], ExprGraph([]), {}, {"name": name, "key": "k"})
    tree = ast.parse(src)
    assert source_text(name) in ast.get_docstring(tree)
    assert [type(n).__name__ for n in tree.body][:4] == ["Expr", "Import", "Import", "Import"]


# ---------------------------------------------------------------------- writers refuse too
def _sleigh():
    from nhcontrol.models import sleigh

    return sleigh.build(), sleigh.PARTITION


def test_export_c_refuses_a_name_that_slipped_past_declaration(tmp_path):
    from nhcontrol.interop import export_c

    mb, part = _sleigh()
    mb.name = "evil */ int planted; /*"            # set after the check (defence in depth)
    with pytest.raises(InteropError, match=r"model name 'evil \*/ int planted; /\*'"):
        export_c(mb, tmp_path / "out", part)
    assert not (tmp_path / "out").exists()


def test_export_lqr_c_name_refused(tmp_path):
    from nhcontrol.design import finite_horizon_lqr
    from nhcontrol.interop import export_lqr_c

    lq = finite_horizon_lqr((np.eye(2)[None].repeat(3, 0), np.ones((3, 2, 1))), np.eye(2), np.eye(1),
                            np.eye(2))
    for bad in ("my lqr", "int", "nhc_gain"):
        with pytest.raises(InteropError, match="C prefix") as err:
            export_lqr_c(lq, tmp_path, bad)
        assert repr(bad) in str(err.value)
    info = lq.export_c(tmp_path, "gains")
    assert info["files"] == ["gains.h", "gains.c"] and (tmp_path / ".nhcontrol-export.json").exists()


# ---------------------------------------------------------------------- exports never destroy
def test_export_c_keeps_a_users_makefile_until_force(tmp_path):
    from nhcontrol.interop import export_c

    mb, part = _sleigh()
    out = tmp_path / "out"
    out.mkdir()
    (out / "Makefile").write_text("all:\n\techo mine\n")
    (out / "nhc_model.c").write_text("/* my own model */\n")
    with pytest.raises(ExportConflictError, match=r"holds nhc_model\.c, Makefile, which nhcontrol did not write.*force") as err:
        export_c(mb, out, part)
    assert "\n" not in str(err.value)
    assert (out / "Makefile").read_text() == "all:\n\techo mine\n"
    assert sorted(p.name for p in out.iterdir()) == ["Makefile", "nhc_model.c"]
    export_c(mb, out, part, force=True)
    assert "nhc_check" in (out / "Makefile").read_text()
    export_c(mb, out, part)                 # its own files, unedited: replaced without force


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_export_c_never_writes_through_a_planted_link(tmp_path):
    from nhcontrol.interop import export_c

    mb, part = _sleigh()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / "nhc_model.h")
    for force in (False, True):
        with pytest.raises(ExportError, match=r"nhc_model\.h \(a symbolic link\)"):
            export_c(mb, out, part, force=force)
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in out.iterdir()) == ["nhc_model.h"]


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "nhcontrol.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=600)


def test_cli_export_c_to_a_file_path_one_line_exit_2(tmp_path):
    target = tmp_path / "a_file"
    target.write_text("data\n")
    r = _cli("export-c", "sleigh", "--out", str(target))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(target) in lines[0] and "is a file" in lines[0]
    assert target.read_text() == "data\n"
    r = _cli("export-c", "sleigh", "--out", str(target / "sub"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "a_file" in r.stderr


def test_cli_export_c_conflict_then_force(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "Makefile").write_text("mine\n")
    r = _cli("export-c", "sleigh", "--out", str(out))
    assert r.returncode == 2 and "Makefile" in r.stderr and "--force" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and (out / "Makefile").read_text() == "mine\n"
    r = _cli("export-c", "sleigh", "--out", str(out), "--force")
    assert r.returncode == 0, r.stderr
    assert "nhc_check" in (out / "Makefile").read_text()


@pytest.mark.parametrize("args,culprit", [
    (["--inputs", "nope"], "'nope'"),
    (["--inputs", ",,"], "--inputs names no actuator"),
    (["--inputs", "T_phi,T_phi"], "'T_phi', 'T_phi'"),
])
def test_cli_export_c_bad_inputs(tmp_path, capsys, args, culprit):
    from nhcontrol.cli import main

    with pytest.raises(SystemExit) as ex:
        main(["export-c", "benchmark_bicycle", "--out", str(tmp_path / "o"), *args])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and culprit in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_export_c_inputs_for_a_model_without_them_and_not_a_model():
    from nhcontrol.interop.c_export import resolve_model

    with pytest.raises(InteropError, match=r"--inputs 'F'.*takes no inputs="):
        resolve_model("sleigh", ["F"])
    with pytest.raises(InteropError, match=r"os\.getcwd\(\) returned a str"):
        resolve_model("os:getcwd")


# ---------------------------------------------------------------------- environment variables
@pytest.mark.parametrize("value", ["abc", "-1", "0", "inf", "nan"])
def test_bad_max_bytes_refused(monkeypatch, value):
    from nhcontrol._util.memory import check_allocation

    monkeypatch.setenv("NHCONTROL_MAX_BYTES", value)
    with pytest.raises(ConfigurationError, match="NHCONTROL_MAX_BYTES") as err:
        check_allocation(10.0, "probe", error=DesignError, hint="")
    assert repr(value) in str(err.value) and ">= 1" in str(err.value)


@pytest.mark.parametrize("value", ["yes", "2", "true"])
def test_bad_progress_refused(monkeypatch, value):
    from nhcontrol._util.progress import progress

    monkeypatch.setenv("NHCONTROL_PROGRESS", value)
    with pytest.raises(ConfigurationError, match="NHCONTROL_PROGRESS") as err:
        list(progress(range(3)))
    assert repr(value) in str(err.value) and "accepted: 0" in str(err.value)


@pytest.mark.parametrize("value", ["abc", "0", "-5"])
def test_bad_max_iterations_refused(monkeypatch, value):
    from nhcontrol.design import LTVMPC

    monkeypatch.setenv("NHCONTROL_MAX_ITERATIONS", value)
    with pytest.raises(ConfigurationError, match="NHCONTROL_MAX_ITERATIONS") as err:
        LTVMPC(10, np.eye(2), np.eye(1))
    assert repr(value) in str(err.value) and ">= 1" in str(err.value)


def test_bad_traceback_setting_refused_in_one_line(tmp_path):
    r = _cli("export-c", "nope_model", "--out", str(tmp_path / "o"), env={"NHCONTROL_TRACEBACK": "yes"})
    assert r.returncode == 2 and "NHCONTROL_TRACEBACK='yes'" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------------- bounded work
A2 = np.array([[1.0, 0.1], [0.0, 1.0]])
B2 = np.array([[0.005], [0.1]])


@pytest.mark.parametrize("N", [10**6, 10**7, 10**8])
def test_mpc_controller_horizon_refused_before_work(N):
    from nhcontrol.design import MPCController
    from nhcontrol.systems import DiscreteLTV

    from _toy_models import ZeroRef

    dsys = DiscreteLTV.from_lti(A2, B2, dt=0.1, steps=1)
    with pytest.raises(DesignError, match="NHCONTROL_MAX_ITERATIONS") as err:
        MPCController(dsys, ZeroRef(), N, np.eye(2), np.eye(1))
    assert f"horizon={N}" in str(err.value)


@pytest.mark.parametrize("N", [10**7, 10**8])
def test_ltv_mpc_and_offset_free_horizon_refused(N):
    from nhcontrol.design import LTVMPC, OffsetFreeMPCController
    from nhcontrol.systems import DiscreteLTV

    from _toy_models import ZeroRef

    with pytest.raises(DesignError, match=rf"LTVMPC: horizon={N}"):
        LTVMPC(N, np.eye(2), np.eye(1))
    dsys = DiscreteLTV.from_lti(A2, B2, dt=0.1, steps=1, C=np.array([[1.0, 0.0]]))
    with pytest.raises(DesignError, match=rf"OffsetFreeMPCController: horizon={N}"):
        OffsetFreeMPCController(dsys, ZeroRef(), N, np.eye(2), np.eye(1), Qn=np.eye(2) * 1e-6,
                                Rn=[[1e-4]], steps=10)


def test_lowered_iteration_limit_names_the_setting(monkeypatch):
    from nhcontrol.design import LTVMPC

    monkeypatch.setenv("NHCONTROL_MAX_ITERATIONS", "1000")
    LTVMPC(100, np.eye(2), np.eye(1))                                  # 900 block entries: fine
    with pytest.raises(DesignError, match=r"horizon=200 .*more than the 1000 allowed \(\$NHCONTROL_MAX_ITERATIONS\)"):
        LTVMPC(200, np.eye(2), np.eye(1))


@pytest.mark.parametrize("kw,culprit", [
    ({"sqp_tol": -1.0}, "sqp_tol"), ({"sqp_tol": float("nan")}, "sqp_tol"),
    ({"sqp_max_iter": 0}, "sqp_max_iter"), ({"sqp_max_iter": 2.5}, "sqp_max_iter"),
])
def test_nmpc_settings_refused(kw, culprit):
    from nhcontrol.design import NMPCController

    with pytest.raises(DesignError, match=rf"NMPCController: {culprit}") as err:
        NMPCController(None, None, {}, 10, np.eye(2), np.eye(1), dt=0.1, mode="sqp", **kw)
    assert repr(next(iter(kw.values()))) in str(err.value)


# ---------------------------------------------------------------------- no NaN in, no NaN out
def _kalman_estimator():
    from nhcontrol.design import KalmanEstimator, kalman_filter
    from nhcontrol.systems import DiscreteLTV

    d = DiscreteLTV.from_lti(A2, B2, 0.1, 20, C=np.array([[1.0, 0.0]]))
    kf = kalman_filter(d, np.diag([1e-4, 1e-4]), [[1e-2]], P0=np.eye(2))
    return KalmanEstimator(kf, np.zeros((21, 1)), np.zeros((21, 1)))


@pytest.mark.parametrize("t,y,u,culprit", [
    (0.0, [np.nan], None, r"y contains 1 non-finite entry \(y\[0\] = nan\)"),
    (0.0, [1.0, 2.0], None, r"y must have 1 entries"),
    (float("nan"), [0.0], None, r"t = nan is not a finite time"),
    (0.1, [0.0], [np.nan], r"u_prev contains 1 non-finite"),
    (0.1, [0.0], [np.inf], r"u_prev contains 1 non-finite entry \(u_prev\[0\] = inf\)"),
])
def test_kalman_estimator_refuses_nan(t, y, u, culprit):
    est = _kalman_estimator()
    if t == 0.1:
        est.update(0.0, [0.0])
    X = est.X.copy()
    with pytest.raises(DesignError, match=rf"KalmanEstimator.update: {culprit}"):
        est.update(t, y, u)
    np.testing.assert_array_equal(est.X, X)               # nothing changed


def _tvlqr():
    from nhcontrol.design import TVLQRController, finite_horizon_lqr

    from _toy_models import ZeroRef

    lq = finite_horizon_lqr((A2[None].repeat(50, 0), B2[None].repeat(50, 0)), np.eye(2), np.eye(1),
                            np.eye(2))
    return TVLQRController(lq, ZeroRef(), 0.1)


@pytest.mark.parametrize("t,state,culprit", [
    (0.0, [np.nan, 0.0], r"state \[x; xd\] contains 1 non-finite entry \(state \[x; xd\]\[0\] = nan\)"),
    (0.0, [0.0, 0.0, 0.0], r"state \[x; xd\] must have 2 entries"),
    (float("nan"), [0.0, 0.0], r"t = nan is not a finite time"),
    (0.05, [0.0, 0.0], r"at t = 0.05: not a sample time .*dt = 0.1"),
])
def test_tvlqr_control_refuses(t, state, culprit):
    ctrl = _tvlqr()
    with pytest.raises(DesignError, match=rf"TVLQRController.control.*{culprit}"):
        ctrl.control(t, state)
    assert ctrl.history == []
    np.testing.assert_allclose(ctrl.control(0.1, [1.0, 0.0]), -ctrl.gains.K[1] @ [1.0, 0.0])


def _offset_free():
    from nhcontrol.design import OffsetFreeMPCController
    from nhcontrol.systems import DiscreteLTV

    from _toy_models import ZeroRef

    dsys = DiscreteLTV.from_lti(A2, B2, dt=0.1, steps=1, C=np.array([[1.0, 0.0]]))
    return OffsetFreeMPCController(dsys, ZeroRef(), 10, np.eye(2), np.eye(1), disturbance="input",
                                   Qn=(np.diag([1e-6, 1e-6]), [[1e-3]]), Rn=[[1e-4]], steps=100)


def test_offset_free_off_grid_repeated_and_skipped_samples_refused():
    ctrl = _offset_free()
    ctrl.control(0.0, [1.0])
    est = ctrl.estimate
    with pytest.raises(DesignError, match=r"OffsetFreeMPCController.control at t = 0.05: not a sample time"):
        ctrl.control(0.05, [1.0])
    with pytest.raises(DesignError, match=r"at t = 0 \(sample k = 0\): the next sample .* k = 1"):
        ctrl.control(0.0, [1.0])                        # the same measurement a second time
    with pytest.raises(DesignError, match=r"sample k = 2\): the next sample .* k = 1"):
        ctrl.control(0.2, [1.0])                        # a sample skipped
    np.testing.assert_array_equal(ctrl.estimate[0], est[0])   # the estimate did not move
    ctrl.control(0.1, [1.0])
    with pytest.raises(DesignError, match=r"y contains 1 non-finite"):
        ctrl.control(0.2, [np.nan])
    ctrl.reset()
    ctrl.control(0.0, [1.0])                            # reset: starts over


def test_output_feedback_loop_checks_noise_and_controller_output():
    from nhcontrol._util.checks import covariance

    with pytest.raises(SimulationInputError, match=r"measurement_noise is not positive semidefinite"):
        covariance([[1.0, 0.0], [0.0, -1.0]], 2, "measurement_noise", what="output_feedback_loop",
                   error=SimulationInputError)
    with pytest.raises(SimulationInputError, match=r"Rn is not positive definite"):
        covariance([[1.0, 1.0], [1.0, 1.0]], 2, "Rn", what="probe", error=SimulationInputError,
                   definite=True)
    with pytest.raises(SimulationInputError, match=r"Qw is not symmetric"):
        covariance([[1.0, 0.5], [0.0, 1.0]], 2, "Qw", what="probe", error=SimulationInputError)


@pytest.fixture(scope="module")
def pendulum():
    import math

    from nhcontrol.reference import Reference

    from _toy_models import pinned_pendulum

    mb, s = pinned_pendulum("pendulum_bad_inputs")
    mb.add_output("camera_tip_x", 2 * s.x)
    cm = mb.compile()
    tau0 = 2.0 * 9.81 * 0.6 * math.sin(0.4)
    ref = Reference.equilibrium(cm, [0.6 * math.sin(0.4), -0.6 * math.cos(0.4), 0.4], u=[tau0])
    return cm, ref, tau0


PART = {"independent": ["theta"], "admissible_dependent": [], "dependent": ["x", "y"]}


def test_ekf_nan_measurement_named_y_and_z0_refused(pendulum):
    from nhcontrol.design import ExtendedKalmanFilter

    cm, ref, tau0 = pendulum
    kw = dict(Rn=[[1e-6]], x0=ref.x(0.0), xd0=ref.xd(0.0), P0=np.eye(2), u0=[tau0])
    ekf = ExtendedKalmanFilter(cm, PART, 0.01, **kw)
    with pytest.raises(DesignError, match=r"EKF.update: y contains 1 non-finite entry \(y\[0\] = nan\)"):
        ekf.update(0.0, [np.nan])
    with pytest.raises(DesignError, match=r"EKF.update: u_prev contains 1 non-finite entry \(u_prev\[0\] = nan\)"):
        ekf.update(0.0, [0.0], [np.nan])
    with pytest.raises(DesignError, match=r"EKF.update: t = inf"):
        ekf.update(float("inf"), [0.0])
    with pytest.raises(DesignError, match=r"z0 was given, but model 'pendulum_bad_inputs' has no first-order"):
        ExtendedKalmanFilter(cm, PART, 0.01, z0=[0.0], **kw)
    with pytest.raises(DesignError, match=r"Rn"):
        ExtendedKalmanFilter(cm, PART, 0.01, **{**kw, "Rn": [[-1.0]]})


def test_output_feedback_loop_wrong_size_and_nan_controller_output(pendulum):
    from nhcontrol.design import ExtendedKalmanFilter
    from nhcontrol.simulate import output_feedback_loop

    cm, ref, tau0 = pendulum
    for bad, culprit in (([tau0, 0.0], r"shape \(2,\)"), ([np.nan], r"\[nan\]")):
        ekf = ExtendedKalmanFilter(cm, PART, 0.02, Rn=[[1e-6]], x0=ref.x(0.0), xd0=ref.xd(0.0),
                                   P0=np.eye(2), u0=[tau0])
        with pytest.raises(SimulationInputError, match=rf"controller\(k, t, X\) at t = 0 .*must return 1 finite inputs.*{culprit}"):
            output_feedback_loop(cm, (0.0, 0.1), ref.x(0.0), ref.xd(0.0), estimator=ekf,
                                 controller=lambda k, t, X, b=bad: b, sample_time=0.02)
    ekf = ExtendedKalmanFilter(cm, PART, 0.02, Rn=[[1e-6]], x0=ref.x(0.0), xd0=ref.xd(0.0),
                               P0=np.eye(2), u0=[tau0])
    with pytest.raises(SimulationInputError, match=r"measurement_noise is not positive semidefinite"):
        output_feedback_loop(cm, (0.0, 0.1), ref.x(0.0), ref.xd(0.0), estimator=ekf,
                             controller=lambda k, t, X: [tau0], sample_time=0.02,
                             measurement_noise=[[-1e-4]])


# ---------------------------------------------------------------------- results and files
def test_steady_turn_families_refuse_a_negative_wheel_radius():
    from nhcontrol.models import benchmark_bicycle as bb
    from nhcontrol.models import bicycle_turns as bt

    cm = bb.model()
    with pytest.raises(ModelError, match=r"families: the bicycle parameters rho_R = -0.3 are not physical"):
        bt.families(cm, {"rho_R": -0.3})
    with pytest.raises(ModelError, match=r"straight_turn: the bicycle parameters rho_F = 0, w = -1 are"):
        bt.straight_turn(cm, 3.0, {"rho_F": 0.0, "w": -1.0})


def test_sweep_save_below_a_file_and_onto_a_folder(tmp_path):
    pytest.importorskip("pyarrow")
    from nhcontrol.sweep import sweep

    res = sweep(lambda a: 2 * a, {"a": [1, 2]})
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(ExportError, match=r"SweepResult.save: cannot write .*file\.txt/s\.parquet.*is a file") as err:
        res.save(blocker / "s.parquet")
    assert isinstance(err.value, OSError)
    with pytest.raises(ExportError, match=r"SweepResult.save: .* is a folder"):
        res.save(tmp_path)
    assert res.save(tmp_path / "ok.parquet").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "ok.parquet"]   # no temp left


@pytest.mark.parametrize("fn", ["finite_horizon_lqr", "kalman_filter"])
def test_recursion_length_refused_before_work(fn):
    import control

    from nhcontrol import design

    sys_ = control.ss(A2, B2, np.array([[1.0, 0.0]]), 0, 0.1)
    args = ((np.eye(2), np.eye(1), np.eye(2)) if fn == "finite_horizon_lqr"
            else (np.eye(2) * 1e-4, [[1e-2]]))
    with pytest.raises(DesignError, match=rf"{fn}\(N=100000000\).*\$NHCONTROL_MAX_ITERATIONS"):
        getattr(design, fn)(sys_, *args, N=10**8)


@pytest.mark.parametrize("substeps,culprit", [(0, "must be an integer >= 1, got 0"),
                                              (2.5, "got 2.5"),
                                              (10**9, r"substeps=1000000000.*NHCONTROL_MAX_ITERATIONS")])
def test_ekf_substeps_refused(pendulum, substeps, culprit):
    from nhcontrol.design import ExtendedKalmanFilter

    cm, ref, tau0 = pendulum
    with pytest.raises(DesignError, match=rf"ExtendedKalmanFilter.*{culprit}"):
        ExtendedKalmanFilter(cm, PART, 0.01, Rn=[[1e-6]], x0=ref.x(0.0), xd0=ref.xd(0.0),
                             P0=np.eye(2), u0=[tau0], substeps=substeps)


def _one_figure_target():
    import types

    def run(out=None, quick=False):
        (out / "fig0.png").write_text("new")
        return {"figures": [str(out / "fig0.png")]}

    return types.SimpleNamespace(run=run, summary=lambda result: "summary")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_reproduce_out_keeps_foreign_files_and_never_follows_links(tmp_path, monkeypatch, capsys):
    from nhcontrol import cli

    monkeypatch.setattr(cli, "load", lambda target: _one_figure_target())
    out = tmp_path / "figs"
    out.mkdir()
    (out / "fig0.png").write_text("my own picture")
    with pytest.raises(SystemExit) as ex:
        cli.main(["reproduce", "skateboard", "--out", str(out)])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and "fig0.png" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert (out / "fig0.png").read_text() == "my own picture"
    victim = tmp_path / "victim.json"
    victim.write_text("precious")
    (out / "fig0.png").unlink()
    os.symlink(victim, out / "skateboard.json")
    with pytest.raises(SystemExit) as ex:
        cli.main(["reproduce", "skateboard", "--out", str(out), "--force"])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and "skateboard.json (a symbolic link)" in err
    assert victim.read_text() == "precious" and not (out / "fig0.png").exists()


def test_discretize_of_a_time_varying_system_counts_its_integrations(monkeypatch):
    from nhcontrol._util.errors import LinearSystemError
    from nhcontrol.systems import LTVSystem, discretize

    s = LTVSystem(lambda t: [[0.0, 1.0], [-2.0 - np.cos(t), -0.1]], lambda t: [[0.0], [1.0]])
    monkeypatch.setenv("NHCONTROL_MAX_BYTES", "1e15")              # memory is not what stops it
    with pytest.raises(LinearSystemError, match=r"discretize\(\.\.\., steps=100000000\): 100000000 "
                                                r"integrations.*\$NHCONTROL_MAX_ITERATIONS"):
        discretize(s, 0.01, steps=10**8)


@pytest.mark.parametrize("name,args", [("M */ void planted(void) { } /*", ("x",)),
                                       ("M", ("x); system(\"id\"", ))])
def test_kernel_writers_refuse_a_non_identifier(name, args):
    """Defence in depth: the C and Python kernel printers accept identifiers only (the kernel
    names are the library's own; no user text can become a symbol)."""
    from nhcontrol.compiled.ccodegen import CCodegenError, _Function
    from nhcontrol.compiled.codegen import generate_function
    from nhcontrol.compiled.derivatives import FunctionSpec
    from nhcontrol.modeling.graph import ExprGraph

    spec = FunctionSpec(name, args, ())
    bad = name if name != "M" else args[0]
    with pytest.raises(CCodegenError, match="cannot become a C symbol") as err:
        _Function(spec, ExprGraph([]), {}, {}, {"x": 1}, True)
    assert repr(bad) in str(err.value)
    with pytest.raises(ValueError, match="cannot become a Python name") as err:
        generate_function(spec, ExprGraph([]), {}, {}, {"x": 1})
    assert repr(bad) in str(err.value)


def test_cli_checks_every_setting_up_front(tmp_path):
    r = _cli("targets", env={"NHCONTROL_MAX_BYTES": "abc", "NHCONTROL_PROGRESS": "yes",
                             "NHCONTROL_LOCK_TIMEOUT": "-3", "NHCONTROL_BLAS_THREADS": "many",
                             "NHCONTROL_CACHE_DIR": "relative/cache"})
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr
    for culprit in ("NHCONTROL_MAX_BYTES='abc'", "NHCONTROL_PROGRESS='yes'", "NHCONTROL_LOCK_TIMEOUT='-3'",
                    "NHCONTROL_BLAS_THREADS='many'", "NHCONTROL_CACHE_DIR='relative/cache' is not an absolute"):
        assert culprit in lines[0]
    assert _cli("targets", env={"NHCONTROL_PROGRESS": "0", "NHCONTROL_MAX_BYTES": "4e9"}).returncode == 0


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_result_files_written_atomically_and_never_through_a_link(tmp_path):
    """save() of a result (the .npz files of nhcontrol._util.storage) writes a temporary file
    next to the target and renames it: a link at the target is replaced, not followed; a path
    below a file is one clear StorageError."""
    from nhcontrol._util.storage import StorageError, load_npz, save_npz

    victim = tmp_path / "victim.npz"
    victim.write_bytes(b"precious")
    os.symlink(victim, tmp_path / "res.npz")
    p = save_npz(tmp_path / "res", "Probe", {"a": np.arange(3.0)}, {"m": 1})
    assert victim.read_bytes() == b"precious" and not os.path.islink(p)
    arrays, meta = load_npz(p, "Probe")
    assert arrays["a"].tolist() == [0.0, 1.0, 2.0] and meta == {"m": 1}
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(StorageError, match=r"Probe.save: cannot write .*file\.txt/r\.npz.*is a file"):
        save_npz(blocker / "r", "Probe", {"a": np.zeros(1)}, {})
    assert sorted(q.name for q in tmp_path.iterdir()) == ["file.txt", "res.npz", "victim.npz"]


@pytest.mark.parametrize("t0", [float("nan"), float("inf"), "soon"])
def test_nonfinite_start_time_refused(t0):
    from nhcontrol.design import KalmanEstimator, TVLQRController, finite_horizon_lqr

    from _toy_models import ZeroRef

    lq = finite_horizon_lqr((A2[None].repeat(5, 0), B2[None].repeat(5, 0)), np.eye(2), np.eye(1), np.eye(2))
    with pytest.raises(DesignError, match=r"TVLQRController: t0"):
        TVLQRController(lq, ZeroRef(), 0.1, t0=t0)
    kf = _kalman_estimator().kf
    with pytest.raises(DesignError, match=r"KalmanEstimator: t0"):
        KalmanEstimator(kf, np.zeros((21, 1)), np.zeros((21, 1)), t0=t0)
