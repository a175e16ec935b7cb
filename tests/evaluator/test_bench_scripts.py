"""The benchmark scripts start: each answers `--help`, and the sandbox names a user types
(`auto` included) resolve the way the evaluator's command line resolves them.

The scripts are run, not imported, by the people who quote their figures; a script that
no longer starts after a change to the evaluator's modules is found here rather than on
the day someone needs its figures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

SCRIPTS = sorted(path for path in (REPO_ROOT / "bench").glob("*.py")
                 if path.name not in ("__init__.py", "common.py")
                 and "def main(" in path.read_text())


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_each_script_answers_help(script: Path) -> None:
    done = _run([str(script), "--help"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: "), done.stdout


def test_languages_bench_resolves_auto_as_the_command_line_does() -> None:
    # Calibration off: `auto` then decides by strength alone, without measuring here.
    code = ("from bench.languages_bench import describe_backend\n"
            "print(describe_backend('auto'))\nprint(describe_backend('none'))\n")
    done = _run(["-c", code], EVALUATOR_AUTO_CALIBRATION="off")
    assert done.returncode == 0, done.stderr
    auto, none = done.stdout.splitlines()
    assert auto.startswith("auto: the "), auto
    assert "; auto: " in auto, auto
    assert none == "none: the none level (none)", none


def test_agreement_bench_explains_a_disagreement_on_a_problem_the_registry_calls_flaky(
) -> None:
    # Go/95's canonical solution depends on Go's random map order: a disagreement there
    # is the problem's, not either harness's. Go/94 has no such entry.
    from bench.codegeex_agreement import _flaky_in_registry
    from evaluator.records import Problem

    def go_problem(number: int) -> Problem:
        return Problem(dataset="humaneval-x", task_id=f"HumanEval/{number}", language="go",
                       natural_language="en", prompt="", entry_point="", canonical_solution="",
                       test="", source_id=f"Go/{number}")

    why = _flaky_in_registry(go_problem(95))
    assert why.startswith("the defect registry lists it as flaky (hx-go-95-flaky): "), why
    assert _flaky_in_registry(go_problem(94)) == ""
