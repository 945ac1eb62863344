"""Pickles written by an older version of nhcontrol load with this one and give the same numbers.

Two refactorings moved picklable classes after commit ``a9626a7``: the input laws of
``forward_dynamics`` (``nhcontrol.simulate.forward._HeldInput``, ``_OpenLoopInput``,
``_ConstantInput``, ``_UserInput`` -> ``nhcontrol.simulate._inputs``) and the time functions of the
``Reference`` constructors (``nhcontrol.reference.reference._Constant``, ``_Vectorized``,
``_Linear``, ``_Previous`` -> ``nhcontrol.reference._timefns``); ``Reference`` and
``SimulationResult`` gained fields (``breakpoints``, input rates).  The pickles are written for
real: the sources of ``a9626a7`` are taken from git and run in a child process (compiling their
own kernels into a temporary cache, about 2 s), and this version loads them.

Every sampled value is compared bit for bit: ``x, ẋ`` of a dense output are the integrator's
interpolant carried in the pickle, and ``ẍ, Λ`` are solved again by today's kernels of the same
model (identical printed expressions give identical numbers for these models).

The compiled model inside such a pickle carries the kernel source of its own generator version;
loading that source is the business of ``nhcontrol.compiled`` (``load_compiled``). The test of
the classes swaps it for today's compiled model of the same name; the plain ``pickle.load`` is
checked separately.
"""

from __future__ import annotations

import ast
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nhcontrol.models import sleigh
from nhcontrol.reference import Reference
from nhcontrol.simulate import forward_dynamics

ROOT = Path(__file__).resolve().parents[1]
OLD_COMMIT = "a9626a7"
"""The last commit before the input laws and the reference time functions moved."""

_WRITER = '''
import pickle, sys
import numpy as np
from nhcontrol.models import sleigh
from nhcontrol.reference import Reference
from nhcontrol.simulate import forward_dynamics
import _pickle_funcs as pf

TS = np.array([0.0, 0.13, 0.29, 0.41, 0.5])
cm, sk = sleigh.model(), sleigh.model_skateboard()
ref = sleigh.straight_motion(cm, 1.0)                       # from_functions (StateComponent)
turn = sleigh.skateboard_turn(sk, 1.0, 0.2)                 # with an input
objs = {"ref_functions": ref, "ref_turn": turn,
        "ref_constant_velocity": Reference.constant_velocity(cm, [0.0, 0.1, 0.0], [0.5, 0.0, 0.0])}
s = turn.sample(np.linspace(0.0, 1.0, 11))
for kind in ("linear", "previous", "cubic"):
    objs["ref_samples_" + kind] = Reference.from_samples(sk, s.t, s.x, s.xd, s.xdd, u=s.u,
                                                         p=turn.parameters, u_interpolation=kind)
x0, xd0 = turn.x(0.0), turn.xd(0.0)
objs["sim_free"] = forward_dynamics(cm, (0.0, 0.5), ref.x(0.0), 1.1 * ref.xd(0.0))
objs["sim_constant_u"] = forward_dynamics(sk, (0.0, 0.5), x0, xd0, u=turn.u(0.0))
objs["sim_user_u"] = forward_dynamics(sk, (0.0, 0.5), x0, xd0, u=pf.steer_step)
objs["sim_reference_u"] = forward_dynamics(sk, (0.0, 0.5), x0, xd0, u=turn)
straight = sleigh.skateboard_turn(sk, 1.0, 0.0)
objs["sim_held"] = forward_dynamics(sk, (0.0, 0.5), straight.x(0.0), straight.xd(0.0),
                                    controller=pf.steer_law, sample_time=0.1)
expected = {}
for name, o in objs.items():
    v = o.evaluate(TS) if name.startswith("sim") else o.sample(TS)
    expected[name] = {f: np.array(getattr(v, f)) for f in ("x", "xd", "xdd", "lam", "u")}
with open(sys.argv[1], "wb") as fh:
    pickle.dump({"objects": objs, "expected": expected, "ts": TS}, fh)
'''


def _old_sources(dest: Path) -> Path:
    """``src/`` of `OLD_COMMIT` extracted under ``dest`` (skips when git or the commit is missing)."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed: the pickles of the older version are written by its "
                    "sources, taken from the repository history")
    try:
        subprocess.run([git, "-C", str(ROOT), "cat-file", "-e", f"{OLD_COMMIT}^{{commit}}"],
                       check=True, capture_output=True, timeout=60)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        pytest.skip(f"commit {OLD_COMMIT} is not in this checkout (not a git clone, or a shallow "
                    f"one): the pickles of the older version are written by its sources")
    archive = subprocess.run([git, "-C", str(ROOT), "archive", OLD_COMMIT, "src"], check=True,
                             capture_output=True, timeout=120).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True, timeout=120)
    return dest / "src"


@pytest.fixture(scope="module")
def old_pickle(tmp_path_factory) -> Path:
    """A pickle of references and simulation results written by the code of `OLD_COMMIT`."""
    tmp = tmp_path_factory.mktemp("old_version")
    src = _old_sources(tmp)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(ROOT / "tests")]),
               NHCONTROL_CACHE_DIR=str(tmp / "cache"))   # the old generator's own kernels
    out = tmp / "old.pkl"
    subprocess.run([sys.executable, "-c", _WRITER, str(out)], env=env, check=True,
                   capture_output=True, timeout=600)
    return out


def _todays_model(source: str):
    """Today's compiled model named in the ``META`` of a carried kernel source."""
    line = next(ln for ln in source.splitlines() if ln.startswith("META = json.loads("))
    name = json.loads(ast.literal_eval(line[len("META = json.loads("):-1]))["name"]
    return {"chaplygin_sleigh": sleigh.model, "skateboard": sleigh.model_skateboard}[name]()


class _TodaysModels(pickle.Unpickler):
    """Loads a pickle with each compiled model replaced by today's compiled model of its name."""

    def find_class(self, module: str, name: str):
        if (module, name) == ("nhcontrol.compiled.model", "load_compiled"):
            return lambda key, source=None, sha256=None: _todays_model(source)
        return super().find_class(module, name)


def _load(path: Path) -> dict:
    with open(path, "rb") as fh:
        return _TodaysModels(fh).load()


def test_old_pickles_give_the_same_numbers(old_pickle):
    data = _load(old_pickle)
    ts = data["ts"]
    assert len(data["objects"]) == 11
    for name, obj in data["objects"].items():
        if name.startswith("sim"):
            assert obj.has_dense_output, name
            got = obj.evaluate(ts)
        else:
            got = obj.sample(ts)
        for field, want in data["expected"][name].items():
            np.testing.assert_array_equal(np.asarray(getattr(got, field)), want, err_msg=f"{name}.{field}")
        assert obj.breakpoints == (), name                      # a field added since: default


def test_old_objects_work_with_todays_api(old_pickle):
    """Fields added since take their defaults (no input rates, no jumps); re-pickled, the
    objects name today's classes; an old reference drives today's simulation."""
    objs = _load(old_pickle)["objects"]
    turn = objs["ref_turn"]
    assert not turn.has_input_rates
    np.testing.assert_array_equal(turn.ud([0.1, 0.2]), np.zeros((2, 1)))
    lo, hi = turn.u_limits(0.3)
    np.testing.assert_array_equal(lo, hi)
    for name, obj in objs.items():
        blob = pickle.dumps(obj)
        assert b"_HeldInput" not in blob and b"nhcontrol.reference.reference\n_Constant" not in blob
        back = pickle.loads(blob)
        if name.startswith("sim"):
            np.testing.assert_array_equal(back.x, obj.x)
    sim = objs["sim_held"]
    back = pickle.loads(pickle.dumps(sim))
    np.testing.assert_array_equal(back.evaluate([0.17, 0.33]).xdd, sim.evaluate([0.17, 0.33]).xdd)
    sk = sleigh.model_skateboard()
    res = forward_dynamics(sk, (0.0, 0.3), turn.x(0.0), turn.xd(0.0), u=turn)
    assert res.status == 0
    ref = Reference.from_simulation(objs["sim_reference_u"])
    np.testing.assert_allclose(ref.x(0.25), objs["sim_reference_u"].evaluate(0.25).x[0], atol=1e-6)


def test_old_pickle_loads_with_its_own_models(old_pickle, tmp_path, monkeypatch):
    monkeypatch.setenv("NHCONTROL_CACHE_DIR", str(tmp_path / "cache"))   # the carried sources land here
    with open(old_pickle, "rb") as fh:
        data = pickle.load(fh)
    got = data["objects"]["sim_free"].evaluate(data["ts"])
    np.testing.assert_array_equal(got.xdd, data["expected"]["sim_free"]["xdd"])


def test_kernel_modules_of_earlier_generators():
    """A kernel module without a kernel the model needs is refused with a message that says to
    recompile; one without the input-rate terms of a model that has no inputs in its
    constraints works, and that kernel says why it is missing when called."""
    import types

    from nhcontrol._util.errors import CacheError, ModelError
    from nhcontrol.compiled.model import CompiledModel
    from nhcontrol.modeling import examples

    cm = examples.sleigh().compile(backend="python")

    def without(*names):
        mod = types.ModuleType("old_kernels")
        mod.__dict__.update({k: v for k, v in cm._mod.__dict__.items()
                             if not any(k.startswith(nm + "_") for nm in names)})
        meta = dict(cm._mod.META, generator="nhcontrol-codegen-12")
        return mod, meta

    mod, meta = without("dynamics_terms")
    with pytest.raises(CacheError, match=r"nhcontrol-codegen-12 and lack \['dynamics_terms'\].*compile the model again"):
        CompiledModel(mod, meta, from_cache=True, source_path=None, build_time=0.0)
    mod, meta = without("input_rate_terms")
    old = CompiledModel(mod, meta, from_cache=True, source_path=None, build_time=0.0)
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(old.Q(x, x), cm.Q(x, x))
    with pytest.raises(ModelError, match="compiled by nhcontrol-codegen-12"):
        old.input_rate_terms(x, x, np.zeros(0), np.zeros(cm.m + cm.l))
