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
