"""Every public class prints concisely: the API is walked (``__all__`` of every public module)
and no class keeps ``object``'s ``<... object at 0x...>`` or a dataclass's field-by-field dump
of arrays; a set of real results and controllers is printed and checked."""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import inspect
import pkgutil
import re

import control
import numpy as np
import pytest

import nhcontrol


def _public_classes():
    names = ["nhcontrol"] + [m.name for m in pkgutil.walk_packages(nhcontrol.__path__, "nhcontrol.")
                             if not any(p.startswith("_") for p in m.name.split(".")[1:])
                             and ".reproduce" not in m.name and not m.name.endswith(".cli")]
    found = {}
    for mn in names:
        try:
            mod = importlib.import_module(mn)
        except ImportError:            # an optional peer missing (casadi, ...)
            continue
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name, None)
            if inspect.isclass(obj) and obj.__module__.startswith("nhcontrol"):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_public_class_has_a_concise_repr():
    classes = _public_classes()
    assert len(classes) > 80
    bad = []
    for key, cls in sorted(classes.items()):
        if issubclass(cls, (BaseException, enum.Enum)) or getattr(cls, "_is_protocol", False):
            continue
        rep = cls.__repr__
        if rep is object.__repr__:
            bad.append(f"{key}: object's repr")
        elif dataclasses.is_dataclass(cls) and getattr(getattr(rep, "__code__", None), "co_filename",
                                                       "").endswith("dataclasses.py"):
            bad.append(f"{key}: the dataclass's field-by-field repr")
    assert not bad, ("give these classes a concise repr (`__repr__ = concise_repr` from "
                     "nhcontrol._util.reprs, or their own):\n" + "\n".join(bad))


@functools.lru_cache(maxsize=1)
def _examples():
    from nhcontrol.analysis import controllability, gramian, kalman_decomposition
    from nhcontrol.design import (LTVMPC, KalmanEstimator, MPCController, TVLQRController, dlqr,
                                  finite_horizon_lqr, kalman_filter, lqr)
    from nhcontrol.simulate import simulate_discrete
    from nhcontrol.systems import LTVSystem, discretize

    sys = control.ss([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0.0], [1.0], [0.0]],
                     np.eye(3), 0, states=["p", "v", "q"], inputs=["F"], name="cart")
    dsys = control.c2d(control.ss([[0.0, 1.0], [0.0, 0.0]], [[0.0], [1.0]], np.eye(2), 0,
                                  states=["p", "v"], inputs=["F"], name="cart"), 0.1)
    d = discretize(LTVSystem.constant(dsys.A, dsys.B, states=["p", "v"], inputs=["F"]), 0.1, steps=30)
    fh = finite_horizon_lqr(d, np.eye(2), 1.0, np.eye(2))
    kd = kalman_decomposition(sys)
    ddsys = control.ss(dsys.A, dsys.B, [[1.0, 0.0]], 0, 0.1)
    kf = kalman_filter(ddsys, 0.01 * np.eye(2), [[0.1]], N=20)
    ctrl = MPCController(dsys, None, 10, np.eye(2), np.eye(1))
    ctrl.control(0.0, [1.0, 0.0])
    return {
        "LQRResult": lqr(dsys, np.eye(2), 1.0), "finite horizon": fh,
        "TVLQRController": TVLQRController(dlqr(dsys, np.eye(2), 1.0), None),
        "TVLQRController finite": TVLQRController(fh, None, 0.1),
        "MPCController": ctrl, "ControlRecord": ctrl.history[0], "LTVMPC": LTVMPC(10, np.eye(2), np.eye(1)),
        "KalmanFilterResult": kf, "KalmanEstimator": KalmanEstimator(kf, np.zeros((21, 1)), np.zeros((21, 1))),
        "ControllabilityResult": controllability(sys), "KalmanDecomposition": kd,
        "StateCombination": kd.uncontrollable[0],
        "GramianResult": gramian(control.ss([[-1.0]], [[1.0]], [[1.0]], 0), 0.0, 1.0),
        "LinearSimulationResult": simulate_discrete(d, [1.0, 0.0], controller=fh),
        "DiscreteLTV": d, "schedule": ctrl.schedule,
    }


@pytest.mark.parametrize("key", list(_examples()))
def test_results_and_controllers_print_in_one_short_line(key):
    r = repr(_examples()[key])
    assert " at 0x" not in r and "\n" not in r and len(r) < 400, r
    assert re.match(r"^<?[A-Z][A-Za-z]+[( ]", r), r


def test_controller_reprs_read_like_the_issue():
    ex = _examples()
    assert repr(ex["MPCController"]) == "MPCController(cart, N=10, dt=0.1 s, inputs=['F'], qp='daqp')"
    assert repr(ex["TVLQRController"]).startswith("TVLQRController(plain system, states=['p', 'v'], "
                                                  "infinite horizon, dt=0.1 s")
