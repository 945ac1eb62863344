"""``nhcontrol.linearize`` is an ordinary function; the subpackage is ``nhcontrol.linearization``
and its former import paths give the very same objects."""

from __future__ import annotations

import importlib
import inspect
import pickle
import subprocess
import sys
import types

import pytest

import nhcontrol
import nhcontrol.linearization as lin


def test_entry_point_is_an_ordinary_function():
    assert isinstance(nhcontrol.linearize, types.FunctionType)
    assert nhcontrol.linearize.__module__ == "nhcontrol"
    assert type(lin) is types.ModuleType                  # no swapped module class
    assert not callable(lin)


def test_entry_point_signature_is_the_real_one():
    assert inspect.signature(nhcontrol.linearize) == inspect.signature(lin.linearize)
    first = [d.strip().splitlines()[0] for d in (nhcontrol.linearize.__doc__, lin.linearize.__doc__)]
    assert first[0] == first[1]


def test_entry_point_gives_the_same_result():
    np = pytest.importorskip("numpy")
    from nhcontrol.models import benchmark_bicycle as bb

    cm = bb.model()
    ref = bb.steady_forward(cm, 3.0)
    a = nhcontrol.linearize(cm, ref, bb.PARTITION_4_172)
    b = lin.linearize(cm, ref, bb.PARTITION_4_172)
    np.testing.assert_array_equal(a.A, b.A)
    np.testing.assert_array_equal(a.B, b.B)
    assert a.states == b.states


def test_former_paths_give_the_same_objects():
    from nhcontrol.linearize import LinearizationResult, Partition, linearize
    from nhcontrol.linearize.prepared import Linearizer
    from nhcontrol.linearize import _cpoint, third
    import nhcontrol.linearize.first_order  # noqa: F401  (the statement form)

    assert Partition is lin.Partition and Partition is lin.partition.Partition
    assert LinearizationResult is lin.result.LinearizationResult
    assert linearize is lin.linearize
    assert Linearizer is lin.prepared.Linearizer
    assert third is lin.third and _cpoint is lin._cpoint
    for sub in ("third", "prepared", "first_order", "partition", "finite_difference", "_point"):
        old = importlib.import_module(f"nhcontrol.linearize.{sub}")
        assert old is importlib.import_module(f"nhcontrol.linearization.{sub}")
        assert sys.modules[f"nhcontrol.linearize.{sub}"] is old
        assert old.__name__ == old.__spec__.name == f"nhcontrol.linearization.{sub}"
    assert nhcontrol.linearize is not lin                  # the function was not clobbered
    assert isinstance(nhcontrol.linearize, types.FunctionType)


def test_former_path_star_import_and_errors():
    ns: dict = {}
    exec("from nhcontrol.linearize import *", ns)
    assert ns["suggest_partition"] is lin.suggest_partition
    assert set(lin.__all__) <= set(ns)
    with pytest.raises(ModuleNotFoundError, match="nhcontrol.linearize.nope"):
        importlib.import_module("nhcontrol.linearize.nope")
    with pytest.raises(ImportError, match="no_such_name"):
        exec("from nhcontrol.linearize import no_such_name", {})


def test_the_one_changed_form_binds_the_function():
    ns: dict = {}
    exec("import nhcontrol.linearize as L", ns)
    assert ns["L"] is nhcontrol.linearize


def test_pickles_use_the_new_names_and_old_ones_load():
    assert lin.LinearizationResult.__module__ == "nhcontrol.linearization.result"
    assert lin.Partition.__module__ == "nhcontrol.linearization.partition"
    for cls in (lin.LinearizationResult, lin.Partition, lin.Linearizer):
        assert pickle.loads(pickle.dumps(cls)) is cls
    part = lin.Partition(independent=["a"], admissible_dependent=[], dependent=["b"])
    back = pickle.loads(pickle.dumps(part))
    assert type(back) is lin.Partition and back == part
    # a pickle written before the rename names the former module path (protocol 0, GLOBAL)
    old = b"cnhcontrol.linearize.result\nLinearizationResult\np0\n."
    assert pickle.loads(old) is lin.LinearizationResult
    old = b"cnhcontrol.linearize.partition\nPartition\np0\n."
    assert pickle.loads(old) is lin.Partition


def test_former_paths_in_a_fresh_process():
    """Old paths imported first (before nhcontrol.linearization): still one copy, and
    ``import nhcontrol`` loads no numpy."""
    code = ("import sys, types\n"
            "import nhcontrol\n"
            "assert 'numpy' not in sys.modules, 'import nhcontrol imported numpy'\n"
            "from nhcontrol.linearize.prepared import Linearizer\n"
            "import nhcontrol.linearization.prepared as p\n"
            "assert Linearizer is p.Linearizer\n"
            "assert isinstance(nhcontrol.linearize, types.FunctionType)\n"
            "assert [m for m in sys.modules if m.startswith('nhcontrol.linearize.')] == "
            "['nhcontrol.linearize.prepared']\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.mark.parametrize("old, new", [("lane_change_control", "lane_change"),
                                      ("verify", "verify"),
                                      ("output_feedback_studies", "output_feedback")])
def test_application_modules_former_paths(old, new):
    """The application studies moved into nhcontrol.applications; the former top-level modules
    re-export the same objects (user code and pickles keep working)."""
    former = importlib.import_module(f"nhcontrol.{old}")
    moved = importlib.import_module(f"nhcontrol.applications.{new}")
    assert former.__all__ == moved.__all__
    for name in moved.__all__:
        assert getattr(former, name) is getattr(moved, name), name
    private = [n for n in vars(moved) if n.startswith("_") and not n.startswith("__")]
    for name in private[:5]:
        assert getattr(former, name) is getattr(moved, name)
    for name in moved.__all__:
        obj = getattr(moved, name)
        if isinstance(obj, type):
            assert obj.__module__ == f"nhcontrol.applications.{new}"
            assert pickle.loads(pickle.dumps(obj)) is obj
            # a pickle written before the move names the former module (protocol 0, GLOBAL)
            assert pickle.loads(f"cnhcontrol.{old}\n{name}\np0\n.".encode()) is obj
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(former, "no_such_name")


def test_verify_stays_a_lazy_attribute():
    assert nhcontrol.verify.monte_carlo is importlib.import_module(
        "nhcontrol.applications.verify").monte_carlo
    assert nhcontrol.applications.verify.monte_carlo is nhcontrol.verify.monte_carlo
