"""Checks of numerical parameter values given to the model builders (``nhcontrol.models``).

Every builder of `nhcontrol.models` takes default values of its symbolic parameters
(masses, lengths, gravity, ...) from the user, either as keyword arguments or as a mapping
of overrides of a table of defaults (e.g. Table 4.1 of the thesis for the bicycle). The two
functions here turn those values into floats and collect *all* problems into one
`ModelError` whose message says which names are unknown
(with the valid names), which values are bad and why.
[`parameter_values()`][nhcontrol.modeling.parameter_values] resolves the
``p`` argument (vector, overrides or defaults) of the models' reference-motion functions.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from nhcontrol._util.errors import ModelError
from nhcontrol._util.validation import as_float_array

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray


__all__ = ["check_parameters", "override_parameters", "parameter_values"]


def _problem(key: str, val: Any, *, positive: Collection[str],
             nonnegative: Collection[str]) -> tuple[float | None, str | None]:
    """``(float value, None)`` if ``val`` is admissible for parameter ``key``, else ``(None, reason)``."""
    try:
        num = float(val)
    except (TypeError, ValueError):
        return None, f"{key}={val!r} (not a real number)"
    if not math.isfinite(num):
        return None, f"{key}={val!r} (not finite)"
    if key in positive and num <= 0:
        return None, f"{key}={val!r} (not positive)"
    if key in nonnegative and num < 0:
        return None, f"{key}={val!r} (negative)"
    return num, None


def check_parameters(values: Mapping[str, Any], *, requirement: str,
                     positive: Collection[str] = (),
                     nonnegative: Collection[str] = ()) -> dict[str, float]:
    """Convert parameter values to finite floats, checking their signs.

    Parameters
    ----------
    values : Mapping[str, Any]
        Parameter name -> value (anything `float` accepts). The order is kept.
    requirement : str
        Start of the error message in the model's terms, e.g. ``"Chaplygin sleigh: m and I_zz
        must be positive finite numbers and a finite"``; the bad values are appended.
    positive, nonnegative : Collection[str]
        Names whose values must be ``> 0`` / ``>= 0``; every value must be finite.

    Returns
    -------
    dict[str, float]
        The values as floats, in the order of ``values``.

    Raises
    ------
    ModelError
        Listing every bad value with the reason (not a real number, not finite, not
        positive, negative), e.g. ``"...; got I_zz=-1.0 (not positive)"``.
    """
    out: dict[str, float] = {}
    bad: list[str] = []
    for key, val in values.items():
        num, why = _problem(key, val, positive=positive, nonnegative=nonnegative)
        if why is not None:
            bad.append(why)
        else:
            out[key] = num  # type: ignore[assignment]
    if bad:
        raise ModelError(f"{requirement}; got {', '.join(bad)}")
    return out


def override_parameters(defaults: Mapping[str, float], overrides: Mapping[str, Any], *,
                        model: str, requirement: str, names_note: str = "",
                        sort_names: bool = True, positive: Collection[str] = (),
                        nonnegative: Collection[str] = ()) -> dict[str, float]:
    """Default parameter values updated by user overrides, checked.

    Parameters
    ----------
    defaults : Mapping[str, float]
        Table of all parameters of the model with their default values (trusted, not
        checked); its keys are the only valid names.
    overrides : Mapping[str, Any]
        Parameter name -> new value given by the user (checked as in
        [`check_parameters()`][nhcontrol.modeling.check_parameters]).
    model : str
        Name of the model in messages, e.g. ``"bicycle"`` -> ``"unknown bicycle parameter(s)"``.
    requirement : str
        Start of the message for bad values (see
        [`check_parameters()`][nhcontrol.modeling.check_parameters]).
    names_note : str
        Text appended to the list of valid names in the message for unknown names, e.g.
        ``" (Table 4.1)"``.
    sort_names : bool
        List the valid names sorted (default) or in the order of ``defaults``.
    positive, nonnegative : Collection[str]
        Names whose overriding values must be ``> 0`` / ``>= 0``.

    Returns
    -------
    dict[str, float]
        ``defaults`` (as floats, in their order) with the overridden entries replaced.

    Raises
    ------
    ModelError
        If a name is not in ``defaults`` (message: the unknown names and the valid names),
        or if an overriding value is bad (message: each bad value and why).
    """
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        names = sorted(defaults) if sort_names else list(defaults)
        raise ModelError(f"unknown {model} parameter(s) {unknown}; valid names are {names}{names_note}")
    values = {key: float(val) for key, val in defaults.items()}
    values.update(check_parameters(overrides, requirement=requirement, positive=positive,
                                   nonnegative=nonnegative))
    return values


def parameter_values(model: Any, p: Any = None) -> tuple[NDArray[np.float64], dict[str, float]]:
    """Parameter vector and name -> value mapping of a compiled model for an argument ``p``.

    Parameters
    ----------
    model : CompiledModel
        Anything with ``parameters`` (name -> default, in the model's order) and
        ``param_vector(**overrides)``.
    p : (k,) array_like or Mapping[str, float] or None
        Full parameter vector in the order of ``model.parameters``, or overrides of the
        defaults (passed to ``model.param_vector``), or ``None`` for the defaults.

    Returns
    -------
    pvec : (k,) ndarray
        The parameter vector.
    values : dict[str, float]
        The same values by name, in the order of ``model.parameters``.

    Raises
    ------
    ModelError
        If a vector ``p`` is not numeric or has not the shape ``(k,)``.
    """
    names = list(model.parameters)
    if p is None:
        pvec = np.array([model.parameters[k] for k in names], dtype=float)
    elif isinstance(p, Mapping):
        pvec = np.asarray(model.param_vector(**p), dtype=float)
    else:
        pvec = as_float_array(p, "parameter vector p", error=ModelError)
        if pvec.shape != (len(names),):
            raise ModelError(f"parameter vector p must have shape ({len(names)},) (order {names}), got "
                             f"{pvec.shape}; build it with model.param_vector(**overrides)")
        check = getattr(model, "check_parameters", None)  # finite, bodies that can exist
        if check is not None:
            pvec = np.asarray(check(pvec), dtype=float)
    return pvec, dict(zip(names, pvec.tolist()))
