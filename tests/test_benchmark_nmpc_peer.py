"""Smoke tests of ``benchmarks/nmpc_peer.py``: the documented keys and their consistency on a
short closed loop; do-mpc skipped with a message when asked (or not installed), and run (slow)
when installed. Timings are only asked to be positive; each is a median with its range over the
repeats."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest

from _helpers import load_benchmark


def _positive(x) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x > 0


def _spread_ok(s) -> bool:
    return set(s) == {"median", "min", "max"} and _positive(s["min"]) \
        and s["min"] <= s["median"] <= s["max"]


@pytest.mark.slow
def test_nmpc_peer_keys_without_dompc(capsys):
    out = load_benchmark("nmpc_peer").main(["--steps", "3", "--horizon", "8", "--repeats", "2",
                                            "--skip-dompc"])
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(out, default=str))
    for key in ("rti_step_cpu_s", "rti_step_wall_s", "sqp_step_cpu_s", "sqp_over_rti_cpu"):
        assert _spread_ok(out[key]), (key, out[key])
    assert _positive(out["rti_rms_error_m"])
    assert 0.0 <= out["rti_vs_sqp_first_input_rel_diff"] < 0.1
    assert len(out["load_average"]["before"]) == len(out["load_average"]["after"]) == 3
    for key in ("like_for_like", "scheme_comparison", "tracking_error_ratio_rti_over_dompc"):
        assert "skipped" in out[key]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("do_mpc") is None, reason="do-mpc not installed")
def test_nmpc_peer_with_dompc(capsys):
    out = load_benchmark("nmpc_peer").main(["--steps", "4", "--repeats", "2"])
    assert _spread_ok(out["like_for_like"]["dompc_over_sqp_cpu"])
    assert _spread_ok(out["scheme_comparison"]["dompc_over_rti_cpu"])
    assert out["dompc_success_rate"] == 1.0 and set(out["sqp_statuses"]) == {"optimal"}
    # the same problem: do-mpc's first input agrees with the SQP's to its discretization
    assert out["dompc_vs_sqp_first_input_rel_diff"] < 0.05
    assert 0.8 < out["tracking_error_ratio_rti_over_dompc"] < 1.25
