"""Loops whose length the user sets are counted before they start (a clear error instead of a
run that never ends).

Two bounds, in the style of the work budget of
[`forward_dynamics`][nhcontrol.simulate.forward_dynamics]:

* `check_iterations` - a Python-level loop (one controller call, one hold interval, one matrix
  product per iteration) may not have more than ``$NHCONTROL_MAX_ITERATIONS`` iterations
  (default `MAX_ITERATIONS`);
* `check_evaluations` - a loop of integrations needs at least ``per_iteration`` right-hand-side
  evaluations per iteration; more than the caller's ``max_evaluations`` in total is refused
  before the first one.
"""

from __future__ import annotations

import math
import os

ENV_VAR = "NHCONTROL_MAX_ITERATIONS"
MAX_ITERATIONS = 10_000_000
"""Default largest number of iterations of a loop whose length the user sets (about a minute of
Python-level work at a few microseconds per iteration)."""


def iteration_limit() -> int:
    """``$NHCONTROL_MAX_ITERATIONS`` (a positive integer) or `MAX_ITERATIONS`."""
    raw = os.environ.get(ENV_VAR)
    if not raw:
        return MAX_ITERATIONS
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value >= 1):
        from .errors import ConfigurationError
        raise ConfigurationError(f"{ENV_VAR}={raw!r} is not a positive number of iterations; accepted: "
                                 f"a finite number >= 1 (e.g. {ENV_VAR}=100000000), or unset it "
                                 f"(default {MAX_ITERATIONS})")
    return int(value)


def _count(count: float) -> str:
    return f"{count:.3g}" if count >= 1e6 else f"{int(count)}"


def check_iterations(count: float, what: str, *, error: type[Exception], hint: str) -> None:
    """Raise ``error`` when a loop of ``count`` iterations exceeds `iteration_limit()`.

    ``what`` names the call and the arguments that set the count, e.g.
    ``"simulate_ltv(t_span=(0, 1e9), sample_time=0.001): 1e+12 hold intervals"``.
    """
    limit = iteration_limit()
    if not count <= limit:
        raise error(f"{what}: {_count(count)} iterations, more than the {_count(limit)} allowed "
                    f"(${ENV_VAR}); {hint}")


def check_evaluations(count: float, per_iteration: float, max_evaluations: int | None, what: str, *,
                      error: type[Exception], hint: str) -> None:
    """Raise ``error`` when ``count`` integrations of at least ``per_iteration`` right-hand-side
    evaluations each exceed ``max_evaluations`` (None: only `check_iterations`)."""
    if max_evaluations is not None and count * per_iteration > max_evaluations:
        raise error(f"{what}: at least {_count(count * per_iteration)} right-hand-side evaluations "
                    f"({per_iteration:g} per interval at the least), more than max_evaluations="
                    f"{max_evaluations}; {hint}")
    check_iterations(count, what, error=error, hint=hint)


__all__ = ["check_iterations", "check_evaluations", "iteration_limit", "ENV_VAR", "MAX_ITERATIONS"]
