"""The sandbox and the engine know no language (issue 12): everything language-specific
reaches them through a `Language` (its jobs, mounts, environment and hooks).

Read from the source, not imported: what is checked is what the code names. Comments and
docstrings may speak of languages; code may not import a language's module, compare with
a language's name, or name Python's harness or numpy.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
LANGUAGES = REPO / "evaluator" / "languages"
SCANNED = (*sorted((REPO / "evaluator" / "sandbox").rglob("*.py")),
           REPO / "evaluator" / "engine.py")
WORDS = re.compile("pyharness|numpy", re.IGNORECASE)
"""What no string or name of the sandbox or the engine may contain."""


@dataclass(frozen=True)
class LanguageModules:
    modules: frozenset[str]
    """Dotted names of the modules that define a `Language` (a language's own module)."""
    names: frozenset[str]
    """The languages' names and aliases, lower-cased."""


def _defines_language(tree: ast.Module) -> list[ast.ClassDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and any(
        (isinstance(base, ast.Name) and base.id == "Language")
        or (isinstance(base, ast.Attribute) and base.attr == "Language")
        for base in node.bases)]


def _declared_names(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for statement in cls.body:
        if isinstance(statement, ast.Assign):
            targets = [t.id for t in statement.targets if isinstance(t, ast.Name)]
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            targets = [statement.target.id]
        else:
            continue
        if {"name", "aliases"} & set(targets) and statement.value is not None:
            names |= {node.value.lower() for node in ast.walk(statement.value)
                      if isinstance(node, ast.Constant) and isinstance(node.value, str)
                      and node.value}
    return names


def language_modules() -> LanguageModules:
    modules: set[str] = set()
    names: set[str] = set()
    for path in sorted(LANGUAGES.rglob("*.py")):
        if "runtime" in path.relative_to(LANGUAGES).parts:
            continue
        classes = _defines_language(ast.parse(path.read_text(encoding="utf-8")))
        if not classes:
            continue
        parts = path.relative_to(REPO).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules.add(".".join(parts))
        for cls in classes:
            names |= _declared_names(cls)
    return LanguageModules(frozenset(modules), frozenset(names))


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the string constants that are docstrings (or bare strings after an
    assignment, which this project uses to document constants)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for statement in body:
            if (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, str)):
                found.add(id(statement.value))
    return found


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    return []


def findings(source: str, known: LanguageModules) -> list[str]:
    """What in `source` names a language: one line per finding."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        where = getattr(node, "lineno", "?")
        imported: list[str] = []
        if isinstance(node, ast.Import):
            imported = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        hits = [name for name in imported
                if any(name == m or name.startswith(m + ".") for m in known.modules)]
        if hits:
            found.append(f"line {where}: imports {hits[-1]}")
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings
                and (node.value.lower() in known.names or WORDS.search(node.value))):
            found.append(f"line {where}: the string {node.value!r}")
        found += [f"line {where}: the name {name}" for name in _identifiers(node)
                  if WORDS.search(name)]
    return found


def test_the_checker_finds_what_it_looks_for() -> None:
    known = language_modules()
    assert "evaluator.languages.python" in known.modules
    assert {"python", "cpp"} <= known.names
    source = (
        '"""A docstring may say python and numpy."""\n'
        "from evaluator.languages.python import plain_job\n"
        "import evaluator.languages.cpp\n"
        "from evaluator.languages import base, python\n"
        "# a comment may too: numpy\n"
        'if job["kind"] == "python":\n'
        "    import pyharness\n"
        "    numpy_modules = ('numpy',)\n"
    )
    assert sorted(findings(source, known)) == [
        "line 2: imports evaluator.languages.python.plain_job",
        "line 3: imports evaluator.languages.cpp",
        "line 4: imports evaluator.languages.python",
        "line 6: the string 'python'",
        "line 7: the name pyharness",
        "line 8: the name numpy_modules",
        "line 8: the string 'numpy'",
    ]


def test_the_sandbox_and_the_engine_name_no_language() -> None:
    known = language_modules()
    report = {}
    for path in SCANNED:
        relative = path.relative_to(REPO).as_posix()
        found = findings(path.read_text(encoding="utf-8"), known)
        if found:
            report[relative] = found
    assert report == {}
