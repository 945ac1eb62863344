"""Packaging metadata a laboratory needs before adopting the package: the licence (file, pyproject,
wheel), the citation file (Citation File Format 1.2.0), the changelog (Keep a Changelog), the
classifiers and the type-information marker ``py.typed``."""

from __future__ import annotations

import datetime
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    tomllib = None

needs_tomllib = pytest.mark.skipif(tomllib is None, reason="tomllib is in the standard library from Python 3.11")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _version() -> str:
    return re.search(r'^__version__ = "([^"]+)"', (ROOT / "src/nhcontrol/__init__.py").read_text(), re.M).group(1)


def test_licence_file_is_bsd_3_clause():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "Copyright (c) 2026, nhcontrol developers" in text
    # the three clauses and the disclaimer
    assert text.count("\n1. ") == text.count("\n2. ") == text.count("\n3. ") == 1
    assert "Neither the name of the copyright holder" in text
    assert 'PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"' in text


@needs_tomllib
def test_pyproject_licence_classifiers_and_build_bound():
    proj = _pyproject()
    meta = proj["project"]
    assert meta["license"] == "BSD-3-Clause"             # SPDX expression (PEP 639)
    assert meta["license-files"] == ["LICENSE"]
    # PEP 639 forbids a licence classifier beside a licence expression (setuptools >= 77 refuses it)
    assert not [c for c in meta["classifiers"] if c.startswith("License ::")]
    assert "Typing :: Typed" in meta["classifiers"]
    assert meta["version"] == _version()
    # setuptools reads a licence expression from 77 on; the oldest CI run pins the build
    # environment too (PIP_CONSTRAINT), so its pin must satisfy the build-system bound
    build = [r for r in proj["build-system"]["requires"] if r.startswith("setuptools")]
    bound = tuple(int(p) for p in re.search(r">=\s*([\d.]+)", build[0]).group(1).split("."))
    assert bound >= (77,)
    pinned = re.search(r"^setuptools==([\d.]+)$", (ROOT / "ci/oldest.txt").read_text(), re.M).group(1)
    assert tuple(int(p) for p in pinned.split(".")) >= bound
    # no invented web addresses: URLs, if any, must be real https addresses
    for name, url in meta.get("urls", {}).items():
        assert url.startswith("https://"), (name, url)


@needs_tomllib
def test_py_typed_is_shipped():
    assert (ROOT / "src/nhcontrol/py.typed").is_file()
    assert "py.typed" in _pyproject()["tool"]["setuptools"]["package-data"]["nhcontrol"]


# Citation File Format 1.2.0: the keys this file uses and their rules, taken from the format's
# schema (schema.json of CFF 1.2.0; the file was also validated against that schema with
# jsonschema when written). The reference types are the schema's enumeration, abridged to the
# ones a software paper in this field cites.
_CFF_TOP_REQUIRED = {"cff-version", "message", "title", "authors"}
_CFF_TOP_KEYS = _CFF_TOP_REQUIRED | {"type", "abstract", "version", "license", "keywords", "references",
                                     "date-released", "doi", "repository-code", "url",
                                     "preferred-citation", "identifiers", "contact", "commit"}
_CFF_REFERENCE_TYPES = {"article", "book", "conference-paper", "manual", "report", "software", "thesis",
                        "generic", "proceedings", "data"}
_CFF_REFERENCE_KEYS = {"type", "title", "authors", "year", "institution", "thesis-type", "journal",
                       "volume", "issue", "start", "end", "doi", "notes", "url", "publisher"}


def _check_authors(authors) -> None:
    assert isinstance(authors, list) and authors
    for a in authors:
        assert isinstance(a, dict)
        # a person (family-names, optionally given-names) or an entity (name)
        assert ("family-names" in a) != ("name" in a), a
        assert all(isinstance(v, str) and v for v in a.values()), a


def test_citation_cff_is_valid_cff_1_2():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert _CFF_TOP_REQUIRED <= set(cff) <= _CFF_TOP_KEYS, set(cff) ^ _CFF_TOP_KEYS
    assert cff["type"] in ("software", "dataset")
    assert isinstance(cff["message"], str) and isinstance(cff["title"], str)
    _check_authors(cff["authors"])
    assert cff["version"] == _version()
    assert cff["license"] == "BSD-3-Clause"
    if "date-released" in cff:
        assert isinstance(cff["date-released"], datetime.date)
    for ref in cff["references"]:
        assert {"type", "title", "authors"} <= set(ref) <= _CFF_REFERENCE_KEYS, ref
        assert ref["type"] in _CFF_REFERENCE_TYPES
        _check_authors(ref["authors"])
        if "institution" in ref:
            assert set(ref["institution"]) == {"name"}
        if "year" in ref:
            assert isinstance(ref["year"], int)


def test_citation_cites_the_thesis_and_the_review():
    refs = {r["title"]: r for r in yaml.safe_load((ROOT / "CITATION.cff").read_text())["references"]}
    thesis = refs["Modelling and Linear Stability Analysis of Highly Mobile Nonholonomic Multibody Systems"]
    assert thesis["type"] == "thesis" and thesis["year"] == 2023
    assert thesis["authors"][0]["family-names"] == "García-Agúndez"
    assert thesis["institution"]["name"] == "Universidad de Sevilla"
    assert refs["Nonholonomic dynamics and control of road vehicles: moving toward automation"]["type"] == "article"


_KAC_SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_changelog_keeps_a_changelog():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n")
    assert "keepachangelog.com" in text
    releases = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert releases and releases[0] == "Unreleased"
    assert set(re.findall(r"^### (.+)$", text, re.M)) <= _KAC_SECTIONS
    assert re.search(r"^## \[Unreleased\]\n\n### Added\n\n- ", text, re.M)


def test_readme_names_licence_and_citation_near_the_top():
    readme = (ROOT / "README.md").read_text()
    heads = re.findall(r"^## (.+)$", readme, re.M)
    assert heads[:2] == ["Quickstart", "Licence and citation"]
    section = readme[readme.index("## Licence and citation"):readme.index(f"## {heads[2]}")]
    assert "BSD 3-Clause" in section and "[LICENSE](LICENSE)" in section
    assert "[CITATION.cff](CITATION.cff)" in section


@pytest.mark.slow
def test_wheel_carries_py_typed_and_licence(tmp_path):
    """Build the wheel (isolated build environment, as pip does) and list it."""
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(ROOT), "-w",
                           str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("nhcontrol-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "nhcontrol/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: BSD-3-Clause" in meta
