"""The webapp's apps layer one way, and the evaluator knows nothing of the webapp.

The rule, from the bottom up (an app may import from the layers below it, never above):

    explore               comparisons, leaderboards, problem pages, the team page
    defects | suites      each reads runs; neither imports the other
    runs                  uploads, runs, results, run pages
    teams | benchmarks    neither imports the other, nor anything above

Defects and suites sit between runs and explore because of what they import: both read
runs (and benchmarks), explore reads them (the leaderboard's defect-aware scores, a
dataset's fidelity candidates), and runs reads neither. Modules at the top of `webapp/`
(settings, urls, asgi, query parameters...) are outside the layers: any app may use the
small shared ones, and urls/asgi wire everything together.

The contracts live in `.importlinter` at the root and are checked by import-linter's
`lint-imports`, which follows every import, those inside functions included, and chains
of imports through modules outside the layers.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".importlinter"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(cwd: Path, *options: str) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS.exists(), "import-linter is in requirements/dev.txt: install it"
    # Wide lines: the report is matched line by line, and it wraps at the terminal's width.
    env = {**os.environ, "PYTHONPATH": str(cwd), "COLUMNS": "400"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(cwd / ".importlinter"), "--no-cache", *options],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False,
    )


def _layers() -> list[set[str]]:
    parser = configparser.ConfigParser()
    parser.read(CONFIG)
    text = parser["importlinter:contract:webapp-apps"]["layers"]
    return [{name.strip() for name in line.split("|")} for line in text.split("\n")
            if line.strip()]


def test_the_imports_keep_the_contracts():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


def test_every_app_of_the_webapp_has_a_layer():
    apps = {path.parent.name for path in (ROOT / "webapp").glob("*/apps.py")}
    placed = set().union(*_layers())
    assert placed == apps, f"apps without a layer: {sorted(apps - placed)}; " \
                           f"layers naming no app: {sorted(placed - apps)}"


def _copy_sources(target: Path) -> None:
    """The Python files of both packages and the contracts, so a test can add a bad import
    without touching the working tree."""
    def ignore(directory: str, names: list[str]) -> list[str]:
        return [name for name in names
                if name in ("__pycache__", "node_modules", "static_packages")
                or (Path(directory, name).is_file() and not name.endswith(".py"))]

    for package in ("webapp", "evaluator"):
        shutil.copytree(ROOT / package, target / package, ignore=ignore)
    shutil.copy(CONFIG, target / ".importlinter")


@pytest.mark.parametrize(("source", "imported", "contract"), [
    ("webapp.teams", "webapp.runs.models", "webapp-apps"),
    ("webapp.benchmarks", "webapp.explore.problem_selectors", "webapp-apps"),
    ("webapp.runs", "webapp.explore.leaderboard", "webapp-apps"),
    ("webapp.runs", "webapp.suites.models", "webapp-apps"),
    ("webapp.defects", "webapp.suites.models", "webapp-apps"),
    ("webapp.teams", "webapp.benchmarks.models", "webapp-apps"),
    ("evaluator", "webapp.runs.models", "evaluator-knows-no-webapp"),
])
def test_an_import_against_the_layers_breaks_a_contract(tmp_path, source, imported,
                                                        contract):
    _copy_sources(tmp_path)
    probe = tmp_path.joinpath(*source.split("."), "layer_probe.py")
    # Inside a function: a late import is a dependency all the same.
    probe.write_text(f"def late():\n    import {imported}\n    return {imported}\n")
    result = _lint_imports(tmp_path, "--contract", contract)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0 kept, 1 broken" in result.stdout
    assert f"{source}.layer_probe -> {imported}" in result.stdout
