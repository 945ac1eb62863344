"""nhcontrol.compiled — exact generated numeric kernels with a disk cache (contracts section 2).

See ``docs/theory/newton_euler.md`` for the kernel table and the cache.

The names below are imported from their modules when first used (PEP 562), so that loading a
cached model (`cached_model`, `load_compiled`) imports only what that needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_getattr

if TYPE_CHECKING:   # the names below, for type checkers and the API pages (imported on first use)
    from ._layout import C_GENERATOR_VERSION, GENERATOR_VERSION
    from .cache import default_cache_dir
    from .cbackend import ENV_BACKEND
    from ._linearization_terms import LinearizationTerms
    from ._terms import DynamicsTerms, InputRateTerms, OutputTerms, RateTerms
    from .model import (KERNEL_ARGS, LINEARIZATION_FIELDS, CompiledModel, compile_system,
                        generate_c_source, generate_source, load_compiled)
    from .rates import RateJacobians, RateKernels, compile_rates
    from .recipe import cached_model

__all__ = [
    "compile_system", "CompiledModel", "LinearizationTerms", "DynamicsTerms", "InputRateTerms",
    "generate_source",
    "load_compiled", "default_cache_dir", "KERNEL_ARGS", "LINEARIZATION_FIELDS",
    "GENERATOR_VERSION", "generate_c_source", "C_GENERATOR_VERSION", "ENV_BACKEND",
    "compile_rates", "RateKernels", "RateJacobians", "RateTerms", "OutputTerms", "cached_model",
]

# name -> module that defines it (the keys are __all__)
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["compile_system", "CompiledModel", "generate_source", "load_compiled",
                     "KERNEL_ARGS", "LINEARIZATION_FIELDS", "generate_c_source"], "model"),
    "LinearizationTerms": "_linearization_terms",
    **dict.fromkeys(["DynamicsTerms", "InputRateTerms", "RateTerms", "OutputTerms"], "_terms"),
    "default_cache_dir": "cache",
    "GENERATOR_VERSION": "_layout",
    "C_GENERATOR_VERSION": "_layout",
    "ENV_BACKEND": "cbackend",
    **dict.fromkeys(["compile_rates", "RateKernels", "RateJacobians"], "rates"),
    "cached_model": "recipe",
}


__getattr__ = lazy_getattr(__name__, globals(), _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
