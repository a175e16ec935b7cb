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

from evaluator.records import Problem, SampleResult
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


def _hx_problem(language: str, source: str, number: int) -> Problem:
    return Problem(dataset="humaneval-x", task_id=f"HumanEval/{number}", language=language,
                   natural_language="en", prompt="", entry_point="", canonical_solution="",
                   test="", source_id=f"{source}/{number}")


def test_agreement_bench_explains_a_disagreement_on_a_problem_the_registry_calls_flaky(
) -> None:
    # Go/95's canonical solution depends on Go's random map order: a disagreement there
    # is the problem's, not either harness's. Go/94 has no such entry.
    from bench.codegeex_agreement import _registry_explanation

    why = _registry_explanation(_hx_problem("go", "Go", 95))
    assert why.startswith("explained by registry entry hx-go-95-flaky (flaky_canonical): "), why
    assert _registry_explanation(_hx_problem("go", "Go", 94)) == ""


def test_agreement_bench_explains_a_disagreement_on_a_random_test_on_its_own_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # JavaScript/32's hidden test draws its polynomials with Math.random(): a wrong
    # solution's verdicts there are drawn by chance. The raw agreement still counts the
    # disagreement; a separate line says the registry explains it. JavaScript/31 has no
    # such entry, so its disagreement stays unexplained.
    from bench import codegeex_agreement as bench

    cases = [bench.Case(_hx_problem("js", "JavaScript", number), f"mutant {index}", "x",
                        index) for index, number in enumerate((32, 31, 30, 32))]
    verdicts = {0: "failed", 1: "failed", 2: "passed", 3: "failed"}
    calls: list[int] = []

    def ours(cases_: list[bench.Case], **_: object) -> tuple[dict[int, SampleResult], str]:
        return {c.index: SampleResult(task_id=c.problem.task_id, completion_id=c.index,
                                      status="passed", program_hash="h")
                for c in cases_}, "none"

    def theirs(_plugin: object, cases_: list[bench.Case], **_: object) -> dict[int, str]:
        # The bench runs the disagreements again: the second JavaScript/32 variant's
        # verdict changes (it agrees now), as a random test's may.
        calls.append(len(cases_))
        return {c.index: "passed" if c.index == 3 and len(calls) == 2 else verdicts[c.index]
                for c in cases_}

    monkeypatch.setattr(bench, "ours", ours)
    monkeypatch.setattr(bench, "theirs", theirs)
    bench.compare(bench.PLUGINS["js"], cases, problems=4, workers=1, backend="none",
                  profile="codegeex")
    out = capsys.readouterr().out
    assert calls == [4, 3], calls
    rerun = out.index("codegeex changed its verdict on a re-run of variant 3 (JavaScript/32 "
                      "[mutant 3]): 'failed' -> 'passed'")
    assert out[rerun:].splitlines()[1].strip().startswith(
        "why: explained by registry entry hx-js-32-random-test"), out
    assert "agreement 2/4 " in out, out
    assert "1 of the 2 disagreement(s) explained by the defect registry" in out, out
    assert "agreement on the rest 2/3" in out, out
    lines = out.splitlines()
    (listed,) = [n for n, line in enumerate(lines) if "- JavaScript/32 [mutant 0]" in line]
    assert lines[listed + 1].strip().startswith(
        "why: explained by registry entry hx-js-32-random-test (nondeterministic_test)"), out
    assert out.count("why: UNEXPLAINED") == 1, out
