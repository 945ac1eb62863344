"""nhcontrol.compiled — exact generated numeric kernels with a disk cache (contracts section 2).

See ``docs/theory/newton_euler.md`` for the kernel table and the cache.
"""

from .cache import default_cache_dir
from .cbackend import ENV_BACKEND
from ._layout import C_GENERATOR_VERSION, GENERATOR_VERSION
from .model import (KERNEL_ARGS, LINEARIZATION_FIELDS, CompiledModel, DynamicsTerms, InputRateTerms,
                    LinearizationTerms, OutputTerms, RateTerms,
                    compile_system, generate_c_source, generate_source, load_compiled)
from .rates import RateJacobians, RateKernels, compile_rates

__all__ = [
    "compile_system", "CompiledModel", "LinearizationTerms", "DynamicsTerms", "InputRateTerms",
    "generate_source",
    "load_compiled", "default_cache_dir", "KERNEL_ARGS", "LINEARIZATION_FIELDS",
    "GENERATOR_VERSION", "generate_c_source", "C_GENERATOR_VERSION", "ENV_BACKEND",
    "compile_rates", "RateKernels", "RateJacobians", "RateTerms", "OutputTerms",
]
