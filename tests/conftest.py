"""Suite-wide pytest hooks: the run names the versions it resolved (header and, since CI runs
``pytest -q``, which hides the header, a line of the terminal summary), and the BLAS libraries
run on one thread.

One BLAS thread per test process: the suite's matrices are small, the parallelism is pytest-xdist's
(one worker per core, ``-n auto`` in pyproject.toml), and a multi-threaded BLAS on a busy machine
made small dense work wait for its threads: inside the full suite, 30 calls of SciPy's
``expm`` (``pade_UV_calc``) on matrices of at most 8 x 8 took 1.6 s instead of milliseconds, and
``test_systems_properties.py::test_lti_zoh_equals_sample_system`` 3-34 s instead of 0.4 s.
``tests/test_blas_threads.py`` raises the limit for its own tests.
"""

from __future__ import annotations

from importlib import metadata

_DEPENDENCIES = ("numpy", "scipy", "sympy", "control", "slycot", "cvxpy", "osqp", "clarabel",
                 "matplotlib", "pandas", "dask")


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


def pytest_report_header(config):  # noqa: ARG001 - pytest's hook signature
    return _versions()


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    terminalreporter.write_line(_versions())
