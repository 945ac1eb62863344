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


def _is_slow(fn: ast.FunctionDef, module: ast.Module) -> bool:
    """Marked ``slow`` by a decorator or by the module's ``pytestmark`` (a mark or a list)."""
    if any("slow" in ast.unparse(d) for d in fn.decorator_list):
        return True
    for node in module.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets) \
                    and node.value is not None and "slow" in ast.unparse(node.value):
                return True
    return False


_ASSERTING = re.compile(r"(^|\.)(assert\w*|approx|isclose|allclose|array_equal)$")


def _assertions(fn: ast.FunctionDef) -> list[ast.AST]:
    """The checks of a test function: its ``assert`` statements and the calls of assertion
    functions (``np.testing.assert_allclose``, ``pytest.approx``, ``np.isclose`` ...); never its
    docstring, comments or other statements."""
    found: list[ast.AST] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert):
            found.append(node)
        elif isinstance(node, ast.Call) and _ASSERTING.search(ast.unparse(node.func)):
            found.append(node)
    return found


def _numbers(node: ast.AST, names: dict[str, float]) -> set[float]:
    """The numeric literals of ``node`` and the values of the names it reads that are bound to
    numbers (module constants such as ``REGRESSION_...`` or the function's own assignments)."""
    out: set[float] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, (int, float)) \
                and not isinstance(sub.value, bool):
            out.add(float(sub.value))
        elif isinstance(sub, ast.Name) and sub.id in names:
            out.add(names[sub.id])
    return out


def _bound_numbers(*scopes: ast.AST) -> dict[str, float]:
    names: dict[str, float] = {}
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                try:
                    value = ast.literal_eval(node.value)
                except (ValueError, SyntaxError, TypeError):
                    continue
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    names[node.targets[0].id] = float(value)
    return names


def _canonical(fragment: str) -> str:
    """``fragment`` as ``ast.unparse`` spells it (quotes, spacing): a whole expression
    (``s["V"] == 15.0``) or the right part of a comparison (``<= 4.0``)."""
    for prefix in ("", "_ "):
        try:
            text = ast.unparse(ast.parse(prefix + fragment, mode="eval"))
        except SyntaxError:
            continue
        return " ".join(text[len(prefix):].split())
    return " ".join(fragment.split())


def checks_at(fn: ast.FunctionDef, module: ast.Module, tolerance: str) -> bool:
    """Whether an assertion of ``fn`` checks at ``tolerance``: a number (``2e-14``) that is a
    literal of an assertion or a constant an assertion reads, or an expression
    (``n_spurious == 18``, ``<= 4.0``) that an assertion contains."""
    checks = _assertions(fn)
    if tolerance.isidentifier():              # a named bound (REGRESSION_...), maybe unpacked
        names, grew = {tolerance}, True
        while grew:                           # names bound from it: lo, hi = R; for b, fu in zip(.., R[k])
            grew = False
            for node in ast.walk(fn):
                pairs = ([(t, node.value) for t in node.targets] if isinstance(node, ast.Assign)
                         else [(node.target, node.iter)] if isinstance(node, (ast.For, ast.comprehension))
                         else [])
                for target, value in pairs:
                    if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(value)):
                        new = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} - names
                        if new:
                            names |= new
                            grew = True
        return any(isinstance(n, ast.Name) and n.id in names for c in checks for n in ast.walk(c))
    try:
        number = float(tolerance)
    except ValueError:
        text = _canonical(tolerance)
        return any(text in " ".join(ast.unparse(c).split()) for c in checks)
    names = _bound_numbers(module, fn)
    return any(any(abs(v - number) <= 1e-12 * abs(number) for v in _numbers(c, names))
               for c in checks)


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
    module = ast.parse(path.read_text())
    fn = _function(path, name)
    assert fn is not None, f"{file} has no test function {name}"
    assert not _is_slow(fn, module), f"{guard} is marked slow: a claim needs a default-run guard"
    assert checks_at(fn, module, row["tolerance"]), \
        f"no assertion of {guard} checks at the claimed number {row['tolerance']!r}"


def test_the_guard_reads_assertions_not_text():
    """A tolerance written in a docstring, a comment or an unrelated statement does not count;
    one in an assertion, directly or through a module constant, does; a module-level slow mark
    is seen."""
    src = (
        "import pytest\n"
        "REGRESSION_X = 3e-9\n"
        "def test_doc():\n"
        "    \"checked to 2e-14\"\n"
        "    tol = 2e-14  # 2e-14\n"
        "    assert abs(1.0) <= 1e-3\n"
        "def test_const():\n"
        "    assert abs(1.0 - 1.0) <= REGRESSION_X\n"
        "def test_call():\n"
        "    np.testing.assert_allclose(1.0, 1.0, rtol=5e-5)\n"
        "def test_expr():\n"
        "    assert res['n'] == 18\n")
    mod = ast.parse(src)
    fns = {n.name: n for n in mod.body if isinstance(n, ast.FunctionDef)}
    assert not checks_at(fns["test_doc"], mod, "2e-14")
    assert checks_at(fns["test_doc"], mod, "1e-3")
    assert checks_at(fns["test_const"], mod, "3e-9")
    assert checks_at(fns["test_call"], mod, "5e-5")
    assert checks_at(fns["test_expr"], mod, "res['n'] == 18")
    assert checks_at(fns["test_const"], mod, "REGRESSION_X")
    assert not checks_at(fns["test_doc"], mod, "REGRESSION_X")
    pair = ast.parse("R = (1, 2)\ndef test_p():\n    lo, hi = R\n    x = 1.5\n    assert lo <= x <= hi\n")
    assert checks_at(pair.body[-1], pair, "R")
    loop = ast.parse("R = {'a': (1, 2)}\ndef test_l():\n    for b, fu in zip((1, 2), R['a']):\n"
                     "        assert abs(b - fu) < 1\n")
    assert checks_at(loop.body[-1], loop, "R")
    assert not checks_at(fns["test_expr"], mod, "res['n'] == 19")
    slow = ast.parse("import pytest\npytestmark = [pytest.mark.slow]\ndef test_a():\n    assert 1\n")
    assert _is_slow(slow.body[-1], slow)
    assert not _is_slow(fns["test_doc"], mod)


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
