"""Suite-wide pytest hooks: the run names the versions it resolved (header and, since CI runs
``pytest -q``, which hides the header, a line of the terminal summary)."""

from __future__ import annotations

from importlib import metadata

_DEPENDENCIES = ("numpy", "scipy", "sympy", "control", "slycot", "cvxpy", "osqp", "daqp",
                 "clarabel", "matplotlib", "pandas", "dask")


def _versions() -> str:
    found = []
    for name in _DEPENDENCIES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} -")
    return "nhcontrol dependencies: " + ", ".join(found)


def pytest_report_header(config):  # noqa: ARG001 - pytest's hook signature
    return _versions()


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    terminalreporter.write_line(_versions())
