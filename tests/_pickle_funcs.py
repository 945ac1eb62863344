"""Module-level (picklable) functions shared by the pickle-compatibility test and the process
that writes its pickles with older code (only NumPy imported: any version can load it)."""

from __future__ import annotations

import numpy as np


def steer_law(t: float, x: np.ndarray, xd: np.ndarray) -> np.ndarray:
    """A zero-order-hold steering law of the skateboard (``u(0) = 0``, the straight start)."""
    return np.array([0.2 * t - 0.1 * x[2]])


def steer_step(t: float) -> np.ndarray:
    """An open-loop steering input of the skateboard."""
    return np.array([0.2 + 0.1 * np.sin(2.0 * t)])
