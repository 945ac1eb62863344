"""Helpers of the concise ``__repr__`` / ``_repr_html_`` of the library's result objects."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def short_names(names: Sequence[str], limit: int = 8) -> str:
    """``[a, b, c]``, or the first and last names around an ellipsis for long lists."""
    names = [str(n) for n in names]
    if len(names) <= limit:
        return "[" + ", ".join(names) + "]"
    return "[" + ", ".join(names[:limit - 2]) + ", …, " + ", ".join(names[-2:]) + "]"


def html_table(title: str, rows: Iterable[tuple[str, str]]) -> str:
    """A small two-column HTML table (notebook ``_repr_html_``), every value escaped."""
    import html     # here: only notebooks render it
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
                   f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f"<b>{html.escape(title)}</b><table>{body}</table>"


def short_value(v: object, width: int = 60) -> str:
    """A field's value in a few characters: small arrays printed, large ones by shape, long
    sequences cut, long reprs cut at ``width`` characters (``…``)."""
    import numpy as np

    if isinstance(v, np.ndarray):
        if v.size <= 6:
            return np.array2string(v, precision=4, separator=", ", suppress_small=True).replace("\n", "")
        kind = "" if v.dtype == np.float64 else f" {v.dtype.name}"
        return f"<{'x'.join(str(d) for d in v.shape)}{kind} array>"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    if isinstance(v, (tuple, list)):
        if v and all(isinstance(e, str) for e in v):
            return short_names(v, 6)
        if len(v) > 4:
            return f"<{type(v).__name__} of {len(v)}>"
        return "(" + ", ".join(short_value(e, width // 2) for e in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, dict):
        keys = list(v)
        return "{" + ", ".join(map(str, keys[:5])) + (", …" if len(keys) > 5 else "") + "}"
    if callable(v) and not isinstance(v, type) and hasattr(v, "__name__"):
        return f"<function {v.__name__}>"
    r = repr(v).replace("\n", " ")
    return r if len(r) <= width else r[:width - 1] + "…"


def concise_repr(self: object) -> str:
    """``Name(field=value, ...)`` of a dataclass with every value shortened by `short_value`
    (private fields and fields declared ``repr=False`` left out)."""
    import dataclasses

    parts = [f"{f.name}={short_value(getattr(self, f.name, None))}"
             for f in dataclasses.fields(self) if f.repr and not f.name.startswith("_")]   # type: ignore[arg-type]
    return f"{type(self).__name__}({', '.join(parts)})"


def object_repr(obj: object, **fields: object) -> str:
    """``Name(key=value, ...)`` with the values shortened by `short_value`."""
    return f"{type(obj).__name__}(" + ", ".join(f"{k}={short_value(v)}" for k, v in fields.items()) + ")"
