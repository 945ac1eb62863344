"""Argument checks shared by the contact helpers of [`nhcontrol.modeling.contacts`][nhcontrol.modeling.contacts].

Each contact function collects *all* problems with its arguments in a list of messages and
raises one `ModelError` listing them (`contact_error()`).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from nhcontrol._util.errors import ModelError

__all__: list[str] = []


def as_vec3(value: Any, what: str, problems: list[str]) -> sp.Matrix | None:
    """``value`` as a ``(3, 1)`` sympy column, or ``None`` with a message appended to ``problems``.

    ``what`` names the argument in the message, e.g. ``"knife_edge 'blade': point"``; rows
    and columns of 3 entries are accepted.
    """
    try:
        vec = sp.Matrix(value)
    except (TypeError, ValueError, sp.SympifyError) as exc:
        problems.append(f"{what} must be a 3-vector (of sympy expressions), got {type(value).__name__}: "
                        f"{str(exc).strip()}")
        return None
    if vec.shape not in ((3, 1), (1, 3)):
        problems.append(f"{what} must have 3 components, got shape {vec.shape}")
        return None
    return vec.reshape(3, 1)


def is_coordinate(mb: Any, sym: Any) -> bool:
    """Whether ``sym`` is a coordinate of ``mb`` (``True`` if ``mb`` does not say)."""
    coords = getattr(mb, "coordinates", None)
    if coords is None:
        return True  # cannot check; MultibodySystem.validate() will
    return any(sym == c for c in coords)


def check_coordinate(mb: Any, sym: Any, what: str, problems: list[str]) -> None:
    """Append a message to ``problems`` unless ``sym`` is a coordinate symbol of ``mb``."""
    if not isinstance(sym, sp.Symbol) or not is_coordinate(mb, sym):
        problems.append(f"{what} must be one of the system's coordinates (add it with "
                        f"mb.add_coordinates), got {sym!r}")


def check_name(name: Any, function: str, problems: list[str]) -> bool:
    """Append a message to ``problems`` unless ``name`` is a non-empty string; return whether it is."""
    if not isinstance(name, str) or not name:
        problems.append(f"{function}: name must be a non-empty string, got {name!r}")
        return False
    return True


def contact_error(contact: str, problems: list[str]) -> ModelError:
    """The error listing every problem found while adding the ``contact`` contact."""
    return ModelError(f"cannot add the {contact} contact:\n  - " + "\n  - ".join(problems))
