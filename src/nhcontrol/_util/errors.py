"""Exception hierarchy of nhcontrol.

Every exception raised for bad user input subclasses `NhcontrolError`
*and* the builtin that describes it best (mostly `ValueError`), so
``except ValueError`` keeps working for callers that do not know nhcontrol.
Messages say what is wrong, what was expected and what to do, in the user's
coordinate names and the thesis' terms.
"""

from __future__ import annotations


class NhcontrolError(Exception):
    """Base class of every nhcontrol exception."""


class ArgumentTypeError(NhcontrolError, TypeError):
    """An argument has the wrong type (the message names the argument and the expected type)."""


class ModelError(NhcontrolError, ValueError):
    """A symbolic model is inconsistent (collects all problems in one message)."""


class ConstraintError(NhcontrolError, ValueError):
    """A constraint is malformed or violated beyond tolerance."""


class PartitionError(NhcontrolError, ValueError):
    """A coordinate partition is invalid or singular at the reference."""


class ReferenceMotionError(NhcontrolError, ValueError):
    """A reference motion does not satisfy the constraints / equations of motion."""


class LinearSystemError(NhcontrolError, ValueError):
    """A linear system (LTI/LTV/discrete) is malformed or used outside its domain."""


class TimeRangeError(LinearSystemError):
    """A time lies outside the range on which an LTV system is defined."""


class DesignError(NhcontrolError, ValueError):
    """A controller design problem is malformed (weights, horizons, bounds)."""


class SolverError(NhcontrolError, RuntimeError):
    """A numerical solver failed (integration, QP, root finding)."""


class SimulationInputError(SolverError, ValueError):
    """A simulation was asked for with malformed arguments (times, initial state, options).

    A `SolverError` (old ``except`` clauses keep working) and a `ValueError` (it is the
    caller's input, not the integrator, that is wrong)."""


class InteropError(NhcontrolError, ValueError):
    """A model or controller cannot cross the interop door (nhcontrol.interop): an expression, a
    feature of a foreign model or an optional dependency that cannot be translated (the message
    names it and says what to do)."""


class CacheError(NhcontrolError, OSError):
    """The on-disk kernel cache could not be read or written."""


class CacheIntegrityError(CacheError):
    """A cached artefact is untrusted (ownership, permissions) or fails its sha256 check."""


class CacheLockTimeout(CacheError, TimeoutError):
    """The kernel cache lock stayed held by another process longer than the timeout (the
    message names the holder's pid and since when, and what to do)."""


class ExportError(NhcontrolError, OSError):
    """An export cannot write its folder: the target is a file or cannot be written, or a symbolic
    link, folder or special file stands where a file goes (the message names the path and says
    what to do, in one line)."""


class ExportConflictError(ExportError, FileExistsError):
    """An export would overwrite files that nhcontrol did not write, or that were edited since it
    did (all named; ``force=True`` or ``--force`` overwrites them)."""


class ConfigurationError(NhcontrolError, ValueError):
    """An environment setting (``NHCONTROL_*``) has a value that is not valid."""


class OptimizationError(NhcontrolError, ValueError):
    """An optimal-trajectory or identification problem is malformed (names, bounds, weights), or
    its optional NLP solver is missing (the message names the extra to install)."""


class LinearSystemTypeError(LinearSystemError, ArgumentTypeError):
    """A linear system argument has the wrong type (both a `LinearSystemError` and a
    `TypeError`)."""


class DesignTypeError(DesignError, ArgumentTypeError):
    """A design argument (the system) has the wrong type (both a `DesignError` and a
    `TypeError`)."""


class PartitionTypeError(PartitionError, ArgumentTypeError):
    """A partition argument has the wrong type (both a `PartitionError` and a `TypeError`)."""


class ConditioningWarning(UserWarning):
    """A computation is well defined but ill conditioned: results lose accuracy (the message
    gives the condition estimate and the expected loss)."""


__all__ = [
    "ConditioningWarning",
    "NhcontrolError",
    "ConfigurationError",
    "OptimizationError",
    "ArgumentTypeError",
    "LinearSystemTypeError",
    "DesignTypeError",
    "PartitionTypeError",
    "ModelError",
    "ConstraintError",
    "PartitionError",
    "ReferenceMotionError",
    "LinearSystemError",
    "TimeRangeError",
    "DesignError",
    "SolverError",
    "SimulationInputError",
    "CacheError",
    "CacheIntegrityError",
    "CacheLockTimeout",
    "InteropError",
    "ExportError",
    "ExportConflictError",
]
