"""Install-time build of nhcontrol's model-independent routine libraries.

The project's metadata is in pyproject.toml. This file adds one step to ``build_ext``: it
compiles the three generic routine libraries (the compiled Steps 1-7 of the linearization, the
MPC condensing and the RTI node work; their C text is in ``src/nhcontrol/_csrc``, read
here without importing nhcontrol, NumPy or SymPy) into the installed package, so that the first
model a user builds compiles only its own kernels. Without a working C compiler the step is
skipped with a message and nhcontrol compiles the libraries into its kernel cache on first use
(or runs its numpy paths), as before. ``NHCONTROL_SHIPPED_ROUTINES=0`` at install skips it too.
"""

import importlib.util
import os
import sys

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "src", "nhcontrol")


def _load(name, path, package_dir=None):
    """Import the file ``path`` as module ``name`` (a package when ``package_dir`` is given)."""
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[package_dir] if package_dir else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class build_ext_with_routines(build_ext):
    """``build_ext`` (nhcontrol has no extension modules) plus the routine libraries."""

    def run(self):
        super().run()
        if os.environ.get("NHCONTROL_SHIPPED_ROUTINES", "").strip() == "0":
            print("nhcontrol: NHCONTROL_SHIPPED_ROUTINES=0, the routine libraries are not compiled "
                  "at install", file=sys.stderr)
            return
        inplace = getattr(self, "editable_mode", False) or self.inplace
        out = (os.path.join(PACKAGE, "_csrc") if inplace
               else os.path.join(self.build_lib, "nhcontrol", "_csrc"))
        try:
            csrc = _load("_nhc_setup_csrc", os.path.join(PACKAGE, "_csrc", "__init__.py"),
                         os.path.join(PACKAGE, "_csrc"))
            tables = _load("_nhc_setup_ffi_tables", os.path.join(PACKAGE, "compiled", "_ffi_tables.py"))
            for f in os.listdir(out) if os.path.isdir(out) else ():
                if f.startswith("nhc_") and (f.endswith(".so") or f.endswith(".dll")
                                             or f.endswith(csrc.RECORD_SUFFIX)):
                    os.unlink(os.path.join(out, f))      # an earlier build's, of other routine texts
            written = csrc.build_shipped(out, csrc.distutils_compile_library,
                                         tables.routine_layout_literal)
        except Exception as exc:  # noqa: BLE001 - no compiler: compiled on first use instead
            print(f"nhcontrol: the routine libraries were not compiled at install ({type(exc).__name__}: "
                  f"{exc}); nhcontrol compiles them into its kernel cache on first use",
                  file=sys.stderr)
            return
        print(f"nhcontrol: compiled {len(written) // 2} routine libraries into {out}", file=sys.stderr)


class BinaryDistribution(Distribution):
    """A platform wheel: it holds compiled libraries."""

    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution, cmdclass={"build_ext": build_ext_with_routines})
