"""Reproductions of the thesis' published results, one module per target.

Each target module exposes ``run(*, out: Path | None = None, quick: bool = False) -> dict``
returning a JSON-serialisable dictionary of headline numbers (and, with ``out``, saving
figures there) and ``summary(result: dict) -> str`` for the human-readable report.
"""

from __future__ import annotations

import importlib
from types import ModuleType

TARGETS: dict[str, tuple[str, str]] = {
    "bicycle-benchmark": ("bicycle_benchmark",
                          "Benchmark bicycle (thesis Sect. 4.3): Jacobian, quartic, critical speeds"),
    "skateboard": ("skateboard", "Skateboard / Chaplygin sleigh along straight motion (Sect. 5.2)"),
    "rolling-hoop": ("rolling_hoop", "Rolling hoop and disc: upright rolling stability (Sect. 5.3)"),
    "toroidal-bicycle": ("toroidal_bicycle", "Bicycle with elliptic toroidal wheels (Sect. 4.5.1)"),
    "ball-plate": ("ball_plate", "Ball on a tilting plate tracking a circle (Ch. 8)"),
    "waveboard": ("waveboard", "Waveboard: torsion bar, two casters, toroidal wheels (Sect. 5.5)"),
    "rolling-torus": ("rolling_torus", "Rolling elliptic torus: circular motion, Floquet validation (Sect. 6.3)"),
    "e-scooter": ("escooter", "E-scooter with toroidal wheels and suspensions (Sect. 5.6, Ch. 9 trends)"),
    "hydraulic-fourbar": ("hydraulic_fourbar", "Hydraulically actuated four-bar: equilibrium, 6x6 Jacobian (Sect. 7.3)"),
    "monte-carlo-ball-plate": ("monte_carlo_ball_plate",
                               "Ball-plate LQR/MPC under mass/radius uncertainty, Monte Carlo (Ch. 8)"),
    "bicycle-circular": ("bicycle_circular",
                         "Benchmark bicycle: hands-free steady turns and their stability (Basu-Mandal et al. 2007)"),
    "road-vehicles": ("road_vehicles", "Single-track models (road-vehicle review, Table 1); ISO 3888-1 lane change, LTV-MPC"),
    "nmpc": ("nmpc", "LTV-MPC vs RTI/SQP nonlinear MPC with exact re-linearization: ball-plate, lane change"),
    "output-feedback": ("output_feedback",
                        "Kalman filters and an EKF on exact linearizations: ball-plate LQG, bicycle EKF"),
    "trajectory-optimization": ("trajectory_optimization",
                                "Optimal trajectories (minimum-time lane change, bicycle countersteer) and identification by collocation"),
}
"""command-line name -> (module, one-line description)"""

TARGET_OPTIONS: dict[str, frozenset[str]] = {
    "bicycle-benchmark": frozenset({"animate"}),
    "ball-plate": frozenset({"animate"}),
    "road-vehicles": frozenset({"animate"}),
    "monte-carlo-ball-plate": frozenset({"n", "address", "backend"}),
    "output-feedback": frozenset({"n"}),
}
"""command-line name -> the target-specific options of ``nhcontrol reproduce`` that the target's
``run()`` accepts as keyword arguments (a target not listed takes none of them).

The command line checks its options against this table before it imports any target, so a
usage error is answered at once; ``tests/test_cli.py`` compares the table with the real ``run``
signatures, so the two cannot drift apart. A new target with an option adds one line here."""

SPECIFIC_OPTIONS: tuple[str, ...] = ("n", "address", "backend", "animate")
"""The target-specific options (``--n``, ``--address``, ``--backend``, ``--animate``); every
target takes ``out`` and ``quick``."""


def targets_with(option: str) -> list[str]:
    """The targets whose ``run()`` accepts ``option`` (from `TARGET_OPTIONS`; no import)."""
    return sorted(t for t in TARGETS if option in TARGET_OPTIONS.get(t, ()))


def load(target: str) -> ModuleType:
    """Import the module of a reproduce target by its command-line name."""
    if target not in TARGETS:
        raise KeyError(f"unknown reproduce target {target!r}; choose one of {sorted(TARGETS)}")
    return importlib.import_module(f"{__name__}.{TARGETS[target][0]}")
