"""Names that may reach generated sources, and the one escaping of user text written into them.

Every name a user declares — the model's, and those of its coordinates, parameters, inputs,
first-order states, outputs, bodies and constraints — can end up in generated C or Python
(comments of an exported ``nhc_model.h``, the docstring of a kernel module, metadata). They are
checked once, where they are declared (`MultibodySystem` and
[`from_sympy_mechanics()`][nhcontrol.interop.from_sympy_mechanics]), by `check_name()`:

* an ASCII identifier of C and Python: a letter or ``_``, then letters, digits, ``_``
  (``[A-Za-z_][A-Za-z0-9_]*``), at most `MAX_LENGTH` characters;
* not a keyword of C (C99/C11: ``int``, ``static``, ``_Bool``, ...) or Python (``lambda``,
  ``None``, ...), see `RESERVED`;
* not in the names C reserves for the implementation (``__x``, ``_X``) nor the prefix of
  generated symbols (``nhc_``/``NHC_``, any case).

A name that breaks a rule is refused with the kind of name, the name, the rule and a valid
suggestion (`suggest()`); nothing is renamed silently. The generated-source writers check the
names they print again (defence in depth: a model loaded from elsewhere cannot slip through).

Free text (a docstring, a label) never enters a generated source raw: `source_text()` maps it to
a string that is inert in a C comment, a C string literal, a Python string literal and a Python
comment at once.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

MAX_LENGTH = 63
"""Longest name (the 63 significant initial characters C99 guarantees for an identifier)."""

C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
_Static_assert _Thread_local
""".split())
"""Keywords of C99 and C11."""

PY_KEYWORDS = frozenset(keyword.kwlist)
"""Keywords of Python (soft keywords such as ``match`` and ``type`` are valid names)."""

RESERVED = C_KEYWORDS | PY_KEYWORDS
"""Names refused whatever the kind."""

RESERVED_PREFIXES = ("nhc_",)
"""Prefixes of generated symbols (compared without case): ``nhc_``, ``NHC_``."""

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be used in generated sources (None when it can)."""
    if not isinstance(name, str):
        return f"it is a {type(name).__name__}, not a string"
    if not name:
        return "it is empty"
    if not name.isascii():
        return "it holds non-ASCII characters"
    if not _IDENT.match(name):
        return ("it is not an identifier (a letter or '_', then letters, digits and '_' only; "
                "no spaces, punctuation, quotes, '*' or '/')")
    if len(name) > MAX_LENGTH:
        return f"it has {len(name)} characters, more than {MAX_LENGTH}"
    if name in C_KEYWORDS:
        return "it is a keyword of C"
    if name in PY_KEYWORDS:
        return "it is a keyword of Python"
    if name.startswith("__") or (name[0] == "_" and name[1:2].isupper()):
        return "C reserves names starting with '__' or '_' and a capital letter"
    if name.lower().startswith(RESERVED_PREFIXES):
        return "the prefix nhc_ / NHC_ is reserved for the symbols nhcontrol generates"
    return None


def suggest(name: Any) -> str:
    """A valid name close to ``name`` (for the error messages)."""
    s = re.sub(r"[^0-9A-Za-z_]+", "_", str(name)).strip("_") or "name"
    if s[0].isdigit():
        s = "n" + s
    if s.lower().startswith(RESERVED_PREFIXES):
        s = "my_" + s[4:]
    if s in RESERVED:
        s = s + "_"
    return s[:MAX_LENGTH]


def check_name(name: Any, kind: str, *, model: str | None = None,
               error: type[Exception] | None = None) -> str:
    """Return ``name`` when it may reach generated sources, else raise ``error``.

    Parameters
    ----------
    name : str
    kind : str
        What the name is, for the message (``"coordinate"``, ``"model"``, ...).
    model : str, optional
        The model's name, for the message.
    error : exception class, optional
        Default `ModelError`.
    """
    why = name_problem(name)
    if why is None:
        return name
    if error is None:
        from .errors import ModelError as error
    where = f" of model {model!r}" if model is not None else ""
    raise error(f"{kind} name {name!r}{where} is refused: {why}. Names reach "
                f"generated C and Python sources, so they must be ASCII identifiers of both "
                f"languages that are not keywords; use e.g. {suggest(name)!r}")


def check_names(names: Any, kind: str, *, model: str | None = None,
                error: type[Exception] | None = None) -> None:
    """`check_name()` for each of ``names``."""
    for nm in names:
        check_name(nm, kind, model=model, error=error)


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,:;+-=()[]!&|^~@>")


def source_text(text: Any) -> str:
    """``text`` as ASCII that is inert in a C comment, a C string literal, a Python string
    literal and a Python comment.

    Letters, digits, space and ``_ . , : ; + - = ( ) [ ] ! & | ^ ~ @ >`` are kept; every other
    character (``*``, ``/``, quotes, ``\\``, ``?``, ``#``, ``%``, ``{``, ``}``, ``<``, newlines and other
    control characters, NUL, non-ASCII) is written ``<U+XXXX>`` (its code point). So no comment
    can be closed or opened (``*/``, ``/*``, ``//``), no string ended, no escape, line
    continuation or trigraph (``??/``) formed, no format directive or preprocessor line started;
    and since ``<`` itself is escaped the mapping is one to one (the text can be read back).
    """
    return "".join(c if c in _SAFE else f"<U+{ord(c):04X}>" for c in str(text))


__all__ = ["check_name", "check_names", "name_problem", "suggest", "source_text", "MAX_LENGTH",
           "RESERVED", "C_KEYWORDS", "PY_KEYWORDS", "RESERVED_PREFIXES"]
