"""Smoke tests of ``benchmarks/nmpc_peer.py``: the documented keys and
their consistency on a short closed loop; do-mpc skipped with a message when asked (or not
installed), and run (slow) when installed. Timings are only asked to be positive."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest

from _helpers import load_benchmark


def _positive(x) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x > 0


@pytest.mark.slow
def test_nmpc_peer_keys_without_dompc(capsys):
    out = load_benchmark("nmpc_peer").main(["--steps", "2", "--horizon", "8", "--skip-dompc"])
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(out, default=str))
    for key in ("rti_step_s", "sqp_step_s", "rti_step_cpu_s", "rti_rms_error_m"):
        assert _positive(out[key]), (key, out[key])
    assert 0.0 <= out["rti_vs_sqp_first_input_rel_diff"] < 0.1
    for key in ("dompc_step_s", "ratio_dompc_over_rti", "tracking_error_ratio_rti_over_dompc"):
        assert "skipped" in out[key]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("do_mpc") is None, reason="do-mpc not installed")
def test_nmpc_peer_with_dompc(capsys):
    out = load_benchmark("nmpc_peer").main(["--steps", "4"])
    assert out["ratio_dompc_over_rti"] == pytest.approx(out["dompc_step_s"] / out["rti_step_s"])
    # the same problem: do-mpc's first input agrees with the SQP's to its discretization
    assert out["dompc_vs_sqp_first_input_rel_diff"] < 0.05
    assert 0.8 < out["tracking_error_ratio_rti_over_dompc"] < 1.25
