"""The claims table (docs/dev/claims.md) is true and complete for the README.

For every row: the claim is still written in its file; the guard is a test function that exists,
is not marked ``slow`` and contains the row's tolerance (or, for a benchmark, a script that prints
the row's key). Every number the README states (outside the install commands) is covered by a row.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ROOT / "docs" / "dev" / "claims.md"

#: What counts as a stated number in the README: tolerances (1e-12), digits, ≤/< bounds, values
#: with a unit, counts of runs, "N times faster", signed decimals (eigenvalues).
NUMBER = re.compile(
    r"\d+(?:\.\d+)?e-\d+"                                        # 1e-12, 5e-13
    r"|\d+\+? (?:significant )?digits"                           # 14 digits
    r"|[≤<] ?\d[\d.,]*"                                          # ≤ 5 mm
    r"|\d[\d,]*(?:\.\d+)? ?(?:MPa|mm|cm|m/s|rad/s|runs|times|spurious)\b"
    r"|-\d+\.\d{3,}")                                            # -0.7753


def _rows(section: str) -> list[dict[str, str]]:
    text = CLAIMS.read_text()
    body = text[text.index(f"## {section}"):]
    body = body[:body.find("\n## ", 4)] if "\n## " in body[4:] else body
    rows = []
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("claim", "---"):
            rows.append(dict(zip(("claim", "file", "guard", "tolerance", "kind"), cells)))
    return rows


README_ROWS = _rows("README")


def _function(path: Path, name: str) -> ast.FunctionDef | None:
    tree = ast.parse(path.read_text())
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _is_slow(fn: ast.FunctionDef) -> bool:
    return any("slow" in ast.unparse(d) for d in fn.decorator_list)


def test_table_has_rows():
    assert len(README_ROWS) >= 8


@pytest.mark.parametrize("row", README_ROWS, ids=lambda r: r["claim"][:40])
def test_row_is_guarded_at_its_number(row):
    assert row["claim"] in (ROOT / row["file"]).read_text(), \
        f"{row['file']} no longer states {row['claim']!r}: update docs/dev/claims.md"
    guard = row["guard"]
    if guard.startswith("benchmarks/"):
        script = (ROOT / guard).read_text()
        assert row["tolerance"] in script, f"{guard} prints no key {row['tolerance']!r}"
        return
    file, _, name = guard.partition("::")
    path = ROOT / file
    assert path.is_file(), f"guard file {file} does not exist"
    fn = _function(path, name)
    assert fn is not None, f"{file} has no test function {name}"
    assert not _is_slow(fn), f"{guard} is marked slow: a claim needs a default-run guard"
    src = ast.get_source_segment(path.read_text(), fn) or ""
    assert row["tolerance"] in src, \
        f"{guard} does not check at the claimed number {row['tolerance']!r}"


def test_every_readme_number_has_a_row():
    readme = (ROOT / "README.md").read_text()
    quick = readme[readme.index("## Quickstart"):]
    quick = quick[:quick.index("```", quick.index("```") + 3) + 3]     # the install commands
    text = readme.replace(quick, "")
    covered = [r["claim"] for r in README_ROWS]
    missing = []
    for line in text.splitlines():
        for m in NUMBER.finditer(line):
            if not any(m.group(0) in c and c in line for c in covered):
                missing.append(f"{m.group(0)!r} in: {line.strip()[:100]}")
    assert not missing, ("README numbers without a row in docs/dev/claims.md:\n  "
                         + "\n  ".join(missing))
