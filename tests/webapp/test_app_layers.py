"""The webapp's apps layer one way, the evaluator's parts layer one way and know nothing
of the webapp, no two modules of a package import each other, and Celery tasks only call
down.

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

In the evaluator, the engine runs languages and a language runs in the sandbox: the
sandbox imports no language and no engine, and a language no engine.

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
    parser = configparser.ConfigParser()
    parser.read(CONFIG)
    contracts = [name for name in parser.sections() if name.startswith("importlinter:contract:")]
    assert f"{len(contracts)} kept, 0 broken" in result.stdout


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
    ("evaluator.sandbox", "evaluator.languages.python", "evaluator-layers"),
    ("evaluator.sandbox", "evaluator.engine", "evaluator-layers"),
    ("evaluator.languages", "evaluator.engine", "evaluator-layers"),
    ("webapp.runs", "webapp.runs.worker.tasks", "tasks-call-down"),
    ("webapp.runs.services.writes", "webapp.runs.worker.execution", "user-writes-stay-user-side"),
    ("webapp.runs.reads.selectors", "webapp.runs.services.writes", "runs-layers"),
    ("webapp.runs.messaging.dispatch", "webapp.runs.upload_checks.files", "runs-layers"),
    ("webapp.runs.worker.execution", "webapp.runs.api.endpoints", "runs-layers"),
    ("webapp.runs.models", "webapp.runs.reads.selectors", "runs-model-knows-domain"),
    ("webapp.runs.domain.scoring", "webapp.runs.models", "runs-domain-reads-no-row"),
    ("webapp.suites.fidelity.analysis", "webapp.suites.fidelity.selectors", "fidelity-layers"),
])
def test_an_import_against_the_layers_breaks_a_contract(tmp_path, source, imported,
                                                        contract):
    _copy_sources(tmp_path)
    # Inside a function: a late import is a dependency all the same. A source that is a
    # module gets the import added at its end; a package gets a new module holding it.
    late = f"\n\ndef late():\n    import {imported}\n    return {imported}\n"
    module = tmp_path.joinpath(*source.split("."))
    if module.with_suffix(".py").exists():
        importer = source
        with module.with_suffix(".py").open("a") as text:
            text.write(late)
    else:
        importer = f"{source}.layer_probe"
        (module / "layer_probe.py").write_text(late)
    result = _lint_imports(tmp_path, "--contract", contract)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0 kept, 1 broken" in result.stdout
    assert f"{importer} -> {imported}" in result.stdout


def test_two_modules_that_import_each_other_break_the_no_cycles_contract(tmp_path):
    _copy_sources(tmp_path)
    runs = tmp_path / "webapp" / "runs"
    # A cycle through a function-level import counts: the two files are still tied.
    (runs / "cycle_a.py").write_text("import webapp.runs.cycle_b\n")
    (runs / "cycle_b.py").write_text("def late():\n    import webapp.runs.cycle_a\n")
    result = _lint_imports(tmp_path, "--contract", "no-cycles")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "No cycles are allowed in webapp.runs" in result.stdout
