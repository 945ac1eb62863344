"""nhcontrol — exact linearization, analysis and control of nonholonomic multibody systems.

The pipeline (see ``docs/dev/contracts.md``)::

    modeling -> compiled -> reference -> linearization -> systems -> analysis -> design
                                                                   simulate <-'

plus the application layer ``nhcontrol.applications`` (studies built on the pipeline: the
lane-change controller set-up, Monte-Carlo verification, output-feedback studies).

Subpackages are imported lazily, so ``import nhcontrol`` is cheap.
[`nhcontrol.linearize()`][nhcontrol.linearize] is the one-line entry point, an ordinary function:
``nhcontrol.linearize(model, reference, partition)``; the subpackage is
[`nhcontrol.linearization`][nhcontrol.linearization].

Former import paths keep working: ``from nhcontrol.linearize import Partition``,
``from nhcontrol.linearize.prepared import Linearizer``, ``importlib.import_module(
"nhcontrol.linearize.third")`` and pickles that name ``nhcontrol.linearize.<module>`` give the
very objects of ``nhcontrol.linearization`` (no second copy). The one form whose meaning changed
is the attribute form: ``import nhcontrol.linearize as L`` (and ``import
nhcontrol.linearize.third as T``) now reach the *function* ``nhcontrol.linearize``; write
``import nhcontrol.linearization as L`` (``import nhcontrol.linearization.third as T``) instead.
Likewise ``nhcontrol.lane_change_control``, ``nhcontrol.verify`` and
``nhcontrol.output_feedback_studies`` re-export ``nhcontrol.applications.lane_change``,
``.verify`` and ``.output_feedback``.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .compiled import CompiledModel
    from .linearization import LinearizationResult, Partition
    from .reference import Reference

__version__ = "0.1.0"

_SUBPACKAGES = (
    "modeling", "compiled", "reference", "linearization", "systems", "analysis", "design",
    "simulate", "models", "plotting", "reproduce", "sweep", "applications", "verify", "cli",
    "interop",
)

__all__ = ["__version__", "linearize", *_SUBPACKAGES]


def linearize(cm: CompiledModel, ref: Reference, partition: Partition | Mapping[str, Any] | None = None,
              t: ArrayLike = 0.0, *, check: bool = True,
              cond_max: float = 1e10) -> LinearizationResult:
    """Linearize a constrained multibody model about a reference (third procedure).

    The one-line entry point: ``nhcontrol.linearize(cm, ref, partition, t)`` is
    [`nhcontrol.linearization.linearize()`][nhcontrol.linearization.linearize] (same parameters,
    result, errors and warnings; documented there), imported when first called so that
    ``import nhcontrol`` stays cheap.

    Parameters
    ----------
    cm : CompiledModel
        Model with the fused ``linearization_terms`` kernel.
    ref : Reference
        Reference motion.
    partition : Partition or mapping, optional
        ``x = [x_ai, x_ad, x_d]`` (Eq. (4.96)); ``None`` suggests one at the first time.
    t : float or (N,) array_like
        Time(s) on the reference; an array is evaluated vectorised.
    check : bool
        Check that the reference is a motion of the model and the partition well conditioned.
    cond_max : float
        Condition-number tolerance.

    Returns
    -------
    LinearizationResult
        ``A``, ``B`` (stacked along a leading axis when ``t`` is an array), names, partition.
    """
    from .linearization.third import linearize as _linearize

    return _linearize(cm, ref, partition, t, check=check, cond_max=cond_max)


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'nhcontrol' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


# ---- the former subpackage name ``nhcontrol.linearize`` as an import path ----------------------
# ``nhcontrol.linearize`` is the function above. The import path of the same name is an alias
# module in ``sys.modules`` (registered here, before any import could load a module of that name
# and bind it over the function), whose attributes and submodules are nhcontrol.linearization's.


class _MovedPackage(types.ModuleType):
    """A former package path: attributes come from the package that replaced it."""

    def __init__(self, name: str, target: str) -> None:
        super().__init__(name, f"Former import path of {target} (every name and submodule is "
                               f"{target}'s).")
        self.__path__: list[str] = []            # a package: submodules go through _MovedFinder
        self.__package__ = name
        self._MOVED_TO = target
        self.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)

    def __getattr__(self, name: str) -> Any:
        target = importlib.import_module(self.__dict__["_MOVED_TO"])
        try:
            return getattr(target, name)
        except AttributeError:
            raise AttributeError(f"module {self.__name__!r} (now {target.__name__!r}) has no "
                                 f"attribute {name!r}") from None

    def __dir__(self) -> list[str]:
        return dir(importlib.import_module(self.__dict__["_MOVED_TO"]))


class _MovedLoader:
    """Loader of ``<old>.<sub>``: the module ``<new>.<sub>`` itself (already imported)."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec: Any) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self.spec              # the import system set the alias's spec


class _MovedFinder:
    """``sys.meta_path`` finder: ``<old>.<sub>`` is the module ``<new>.<sub>`` (same object)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith(self.old + "."):
            return None
        real = self.new + fullname[len(self.old):]
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as exc:
            if exc.name == real:
                return None                      # "No module named <fullname>", as before
            raise
        return importlib.machinery.ModuleSpec(fullname, _MovedLoader(module),
                                              origin=getattr(module, "__file__", None))


def _alias_package(old: str, new: str) -> None:
    old, new = f"{__name__}.{old}", f"{__name__}.{new}"
    if not isinstance(sys.modules.get(old), _MovedPackage):
        sys.modules[old] = _MovedPackage(old, new)
    if not any(isinstance(f, _MovedFinder) and f.old == old for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder(old, new))


_alias_package("linearize", "linearization")
