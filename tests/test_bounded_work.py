"""Bounded work and atomic outputs (issue 8, part 4): a stiff model under an explicit method stops
with an error saying how far it got and suggesting Radau/BDF; allocations are estimated before
they are made; ``nhcontrol reproduce --out DIR`` never leaves a mix of old and new files."""

from __future__ import annotations

import json
import types

import control
import numpy as np
import pytest
import sympy as sp

from nhcontrol import cli
from nhcontrol._util.errors import LinearSystemError, SolverError
from nhcontrol._util.memory import check_allocation, format_bytes
from nhcontrol.modeling import MultibodySystem
from nhcontrol.simulate import forward_dynamics
from nhcontrol.systems import DiscreteLTV, discretize


@pytest.fixture(scope="module")
def stiff():
    """A bead of 1 mg on a spring of 1e12 N/m: a mode of 1e9 rad/s."""
    mb = MultibodySystem("stiff_spring")
    x = mb.add_coordinates("x")
    k, m = mb.add_parameters(k=1e12, m=1e-6)
    bead = mb.add_body("bead", mass=m, inertia=sp.zeros(3), position=[x, 0, 0])
    mb.add_spring(None, [0, 0, 0], bead, [x, 0, 0], k)
    return mb.compile(cache=False)


def test_stiff_model_with_the_default_method_stops_with_a_hint(stiff):
    with pytest.raises(SolverError) as err:
        forward_dynamics(stiff, (0.0, 1.0), [1e-3], [0.0])
    msg = str(err.value)
    assert "model 'stiff_spring' stopped at t = " in msg and "% of t_span [0, 1]" in msg
    assert "right-hand-side evaluations" in msg and "max_evaluations=2000000" in msg
    assert "method='DOP853' (explicit)" in msg and "method='Radau' or method='BDF'" in msg


@pytest.mark.parametrize("kw, why", [(dict(max_evaluations=1000, method="Radau"),
                                      r"the work budget max_evaluations=1000 is used up"),
                                     (dict(max_evaluations=None, time_limit=1e-3),
                                      r"the wall-time limit time_limit=0\.001 s is reached")])
def test_explicit_budgets(stiff, kw, why):
    with pytest.raises(SolverError, match=why):
        forward_dynamics(stiff, (0.0, 1.0), [1e-3], [0.0], **kw)


@pytest.mark.parametrize("kw", [dict(max_evaluations=0), dict(max_evaluations=2.5),
                                dict(max_evaluations="many"), dict(time_limit=-1.0),
                                dict(time_limit=float("nan"))])
def test_bad_budget_arguments(stiff, kw):
    (name,) = kw
    with pytest.raises(SolverError, match=name):
        forward_dynamics(stiff, (0.0, 1e-9), [1e-3], [0.0], **kw)


def test_a_short_run_of_the_stiff_model_is_within_budget(stiff):
    """The budget does not change a run that fits: one period of the 1e9 rad/s mode."""
    T = 2 * np.pi / 1e9
    res = forward_dynamics(stiff, (0.0, T), [1e-3], [0.0], rtol=1e-9, atol=1e-15)
    assert res.x[-1, 0] == pytest.approx(1e-3, rel=1e-5)


def test_discretize_estimates_memory_before_allocating():
    sys = control.ss([[0, 1], [-1, 0]], [[0], [1]], np.eye(2), 0)
    with pytest.raises(LinearSystemError, match=r"discretize\(\.\.\., steps=1000000000\) .* n = 2 states "
                                                 r"and k = 1 inputs.*needs about 96 GB of memory.*fewer steps"):
        discretize(sys, 0.01, steps=10**9)
    with pytest.raises(LinearSystemError, match=r"from_lti\(\.\.\., steps=1000000000000\).*needs about"):
        DiscreteLTV.from_lti(np.eye(2), np.ones((2, 1)), 0.1, 10**12)
    assert discretize(sys, 0.01, steps=1000).nsteps == 1000


def test_allocation_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv("NHCONTROL_MAX_BYTES", "1000")
    with pytest.raises(ValueError, match=r"x needs about 2 kB of memory, more than the 1 kB allowed"):
        check_allocation(2000, "x", error=ValueError, hint="less")
    check_allocation(999, "x", error=ValueError, hint="less")
    assert format_bytes(96e9) == "96 GB"


def _fake_target(fail_after: int | None):
    """A reproduce target writing 3 figures (and failing after ``fail_after`` of them)."""
    def run(out=None, quick=False):
        names = []
        for i in range(3):
            if fail_after is not None and i == fail_after:
                raise KeyboardInterrupt
            (out / f"fig{i}.png").write_text("new")
            names.append(str(out / f"fig{i}.png"))
        return {"figures": names, "value": 1.0}

    return types.SimpleNamespace(run=run, summary=lambda result: "summary")


def _old_out(tmp_path):
    out = tmp_path / "figures"
    out.mkdir()
    for i in range(3):
        (out / f"fig{i}.png").write_text("old")
    (out / "skateboard.json").write_text('{"old": true}')
    (out / "other_target.png").write_text("keep")
    return out


def test_interrupted_reproduce_leaves_out_untouched(tmp_path, monkeypatch):
    out = _old_out(tmp_path)
    monkeypatch.setattr(cli, "load", lambda target: _fake_target(fail_after=2))
    with pytest.raises(KeyboardInterrupt):
        cli.main(["reproduce", "skateboard", "--out", str(out)])
    assert {p.name: p.read_text() for p in out.iterdir()} == {
        "fig0.png": "old", "fig1.png": "old", "fig2.png": "old", "skateboard.json": '{"old": true}',
        "other_target.png": "keep"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures"]  # no staging folder left


def test_completed_reproduce_moves_everything_into_place(tmp_path, monkeypatch, capsys):
    out = _old_out(tmp_path)
    monkeypatch.setattr(cli, "load", lambda target: _fake_target(fail_after=None))
    # the old files were not written by nhcontrol (no manifest): kept, the run stops
    with pytest.raises(SystemExit) as ex:
        cli.main(["reproduce", "skateboard", "--out", str(out)])
    assert ex.value.code == 2 and "fig0.png, fig1.png, fig2.png, skateboard.json" in capsys.readouterr().err
    assert (out / "fig0.png").read_text() == "old"
    assert cli.main(["reproduce", "skateboard", "--out", str(out), "--force"]) == 0
    assert cli.main(["reproduce", "skateboard", "--out", str(out)]) == 0   # its own files now
    files = {p.name: p.read_text() for p in out.iterdir() if p.name != ".nhcontrol-export.json"}
    assert [files[f"fig{i}.png"] for i in range(3)] == ["new"] * 3 and files["other_target.png"] == "keep"
    result = json.loads(files["skateboard.json"])
    assert result["figures"] == [str(out / f"fig{i}.png") for i in range(3)]  # paths of the final folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures"]
    assert "written to" in capsys.readouterr().out


def test_stacked_kernel_call_estimates_its_outputs_first(monkeypatch):
    """Stacked evaluations (linearize over many times, sweeps) refuse before allocating outputs
    that cannot fit; the inputs themselves are small here thanks to broadcasting."""
    from nhcontrol._util.errors import ModelError
    from nhcontrol.modeling import examples

    cm = examples.sleigh().compile(cache=False)
    monkeypatch.setenv("NHCONTROL_MAX_BYTES", str(10**6))
    X = np.broadcast_to(np.zeros(3), (10**5, 3))
    with pytest.raises(ModelError, match=r"linearization_terms of model 'sleigh' at N = 100000 stacked points "
                                         r"\(its 21 output array\(s\) alone\) needs about 151 MB.*chunks"):
        cm.linearization_terms(X, X, X, np.zeros(1))
    assert cm.M(X[:100]).shape == (100, 3, 3)


def test_first_order_simulation_has_the_same_budget():
    """forward_dynamics_first_order (mechanics with first-order states) is bounded the same way."""
    from nhcontrol.simulate import forward_dynamics_first_order

    mb = MultibodySystem("stiff_actuated")
    x = mb.add_coordinates("x")
    k, m = mb.add_parameters(k=1e12, m=1e-6)
    f = mb.add_inputs("f")
    bead = mb.add_body("bead", mass=m, inertia=sp.zeros(3), position=[x, 0, 0])
    mb.add_spring(None, [0, 0, 0], bead, [x, 0, 0], k)
    mb.add_force(bead, [f, 0, 0])
    cm = mb.compile(cache=False)
    with pytest.raises(SolverError, match=r"model 'stiff_actuated' stopped at t = .*max_evaluations=2000 is used up"):
        forward_dynamics_first_order(cm, (0.0, 1.0), [1e-3], [0.0], [0.0], z_rate=lambda x, xd, z, w: -z,
                                     w_rate=lambda w, r: np.zeros(0), max_evaluations=2000)


def test_reproduce_out_on_another_file_system(tmp_path, monkeypatch):
    """--out as a mount point: the staging folder next to it is on another file system, so the
    files are copied next to their targets and renamed there."""
    import errno
    import os

    out = _old_out(tmp_path)
    real_replace = os.replace

    def replace(src, dst):
        if ".nhcontrol-" in str(src) and ".nhcontrol-tmp" not in str(src):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_replace(src, dst)

    monkeypatch.setattr(cli.os, "replace", replace)
    monkeypatch.setattr(cli, "load", lambda target: _fake_target(fail_after=None))
    assert cli.main(["reproduce", "skateboard", "--out", str(out), "--force"]) == 0
    files = {p.name: p.read_text() for p in out.iterdir()}
    assert sorted(files) == [".nhcontrol-export.json", "fig0.png", "fig1.png", "fig2.png",
                             "other_target.png", "skateboard.json"]
    assert files["fig1.png"] == "new"


def test_lqr_horizon_estimates_memory_first(monkeypatch):
    from nhcontrol._util.errors import DesignError
    from nhcontrol.design import finite_horizon_lqr

    dsys = control.ss([[1.0, 0.1], [0.0, 1.0]], [[0.0], [0.1]], np.eye(2), 0, 0.1)
    with pytest.raises(DesignError, match=r"finite_horizon_lqr\(N=1000000000000\).*NHCONTROL_MAX_ITERATIONS"):
        finite_horizon_lqr(dsys, np.eye(2), np.eye(1), np.eye(2), N=10**12)
    monkeypatch.setenv("NHCONTROL_MAX_ITERATIONS", "1e13")      # the memory estimate refuses too
    with pytest.raises(DesignError, match=r"finite_horizon_lqr over a horizon of N = 1000000000000 steps.*"
                                          r"needs about .* of memory.*shorter horizon"):
        finite_horizon_lqr(dsys, np.eye(2), np.eye(1), np.eye(2), N=10**12)
    assert finite_horizon_lqr(dsys, np.eye(2), np.eye(1), np.eye(2), N=50).K.shape == (50, 1, 2)
