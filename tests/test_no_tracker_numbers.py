"""Code, docs, tests and examples cite equations, sections and papers, never tracker numbers."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATTERN = re.compile(r"\bissues? \d+|\(issue\b|\bissue #?\d+|\(#\d+\)")


def test_no_issue_numbers_in_sources_and_docs():
    hits = []
    for top in ("src", "docs", "examples", "tests", "benchmarks"):
        for path in (ROOT / top).rglob("*"):
            if path.suffix not in {".py", ".md", ".txt", ".yml", ".toml", ".cfg"} or not path.is_file():
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if PATTERN.search(line) and path.name != Path(__file__).name:
                    hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()[:100]}")
    readme = ROOT / "README.md"
    hits += [f"README.md: {ln[:100]}" for ln in readme.read_text(encoding="utf-8").splitlines()
             if PATTERN.search(ln)]
    assert not hits, "tracker numbers found:\n" + "\n".join(hits)
