"""`nhcontrol._util.gcpause.cyclic_gc_paused`: the collector is paused inside and left as it was."""

import gc
import threading

from nhcontrol._util.gcpause import cyclic_gc_paused
from nhcontrol.modeling import examples


def test_the_collector_is_paused_inside_and_restored_after():
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
        with cyclic_gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()          # the inner block leaves it as the outer found it
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_caller_stays_off():
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_error_inside_restores_the_collector():
    try:
        with cyclic_gc_paused():
            raise KeyError("x")
    except KeyError:
        pass
    assert gc.isenabled()


def test_a_cold_build_pauses_it_and_switches_it_on_again(tmp_path, monkeypatch):
    """During a model build the collector is off; after it, on again."""
    seen = []
    from nhcontrol.compiled import model

    real = model.generate_source

    def spy(*a, **k):
        seen.append((gc.isenabled(), threading.current_thread() is threading.main_thread()))
        return real(*a, **k)

    monkeypatch.setattr(model, "generate_source", spy)
    examples.sleigh().compile(cache_dir=tmp_path, backend="python")
    assert seen == [(False, True)] and gc.isenabled()
