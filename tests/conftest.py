"""Suite-wide pytest hooks: the run names the versions it resolved (header and, since CI runs
``pytest -q``, which hides the header, a line of the terminal summary), tests marked
``c_compiler`` are skipped on a machine without a C compiler (decided from the machine by
``_helpers.c_compiler_present``, never from the back-end nhcontrol chose: where a compiler is
present they run, and fail when the C path was not taken), and the BLAS libraries run on one
thread per test process: the suite's matrices are small and its parallelism is pytest-xdist's
(one worker per core, ``-n auto`` in pyproject.toml), so a multi-threaded BLAS in each worker would
only oversubscribe the cores. ``tests/test_blas_threads.py`` raises the limit for its own tests.
"""

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


def pytest_configure(config):
    # load both BLAS libraries (numpy's and SciPy's) before limiting them: threadpoolctl acts on
    # the libraries loaded at the time
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    config._nhcontrol_blas_limit = threadpool_limits(limits=1, user_api="blas")
    # the routine libraries are compiled on first use only: a cold model build would otherwise
    # also compile them into each of the suite's throw-away caches (its own test enables it)
    from nhcontrol.compiled import cbackend

    cbackend.PREBUILD = False


def pytest_report_header(config):  # noqa: ARG001 - pytest's hook signature
    return _versions()


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    terminalreporter.write_line(_versions())


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest's hook signature
    import pytest
    from _helpers import c_compiler_present

    if c_compiler_present():
        return
    skip = pytest.mark.skip(reason="needs a C compiler on this machine ($CC, sysconfig CC, cc, gcc, "
                                   "clang): none found; the Python kernels are tested elsewhere")
    for item in items:
        if item.get_closest_marker("c_compiler") is not None:
            item.add_marker(skip)
