"""Suite-wide pytest hooks: the header names the versions this run resolved."""

from __future__ import annotations

from importlib import metadata

_DEPENDENCIES = ("numpy", "scipy", "sympy", "control", "slycot", "cvxpy", "osqp", "clarabel",
                 "matplotlib", "pandas", "dask")


def pytest_report_header(config):  # noqa: ARG001 - pytest's hook signature
    found = []
    for name in _DEPENDENCIES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} -")
    return "nhcontrol dependencies: " + ", ".join(found)
