"""Runs the docstring examples of the LTV systems/analysis modules (they must stay true)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["nhcontrol.systems.discrete", "nhcontrol.systems.ltv", "nhcontrol.systems.discretize",
           "nhcontrol.analysis.transition", "nhcontrol.analysis.gramian",
           "nhcontrol.analysis.silverman_meadows", "nhcontrol.analysis.controllability",
           "nhcontrol.analysis.floquet", "nhcontrol.analysis.decomposition", "nhcontrol.design.lqr"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
