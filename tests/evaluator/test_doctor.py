"""`python -m evaluator doctor`: every installed language's canaries pass under the real
sandboxes, and a broken toolchain, a missing runtime file, a sandbox that does not work or
a harness that passes everything is reported with its cause and a hint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from evaluator import doctor as doctor_module
from evaluator.__main__ import main
from evaluator.canary import canary_languages, canary_problems
from evaluator.doctor import DoctorReport, LanguageCheck, check_language, doctor
from evaluator.languages import get_language
from evaluator.languages.registry import language_names
from evaluator.sandbox.base import SandboxError
from tests.backends import require_backend

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_doctor(*args: str, cwd: Path = REPO_ROOT,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(cwd), **(env or {})}
    return subprocess.run([sys.executable, "-m", "evaluator", "doctor", *args], cwd=cwd,
                          env=environment, capture_output=True, text=True, timeout=600,
                          check=False)


def installed_languages() -> list[str]:
    return [name for name in language_names() if get_language(name).available() is None]


# -- the canary data ------------------------------------------------------------------------


def test_every_language_has_canaries_and_a_wrong_solution():
    assert set(canary_languages()) == set(language_names())
    for language in language_names():
        problems = canary_problems(language)
        assert problems, language
        assert all(p.problem.language == language for p in problems)
        assert all(p.problem.canonical_solution.strip() for p in problems)
        wrong = [p for p in problems if p.wrong_solution]
        assert wrong, f"{language}: a canary that passes everything proves nothing"
        assert all(p.wrong_solution != p.problem.canonical_solution for p in wrong)


# -- the real thing ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("level", "backend"), [("standard", "bwrap"), ("strict", "gvisor")])
def test_every_installed_language_passes(level, backend):
    require_backend(backend)
    languages = installed_languages()
    assert "python" in languages
    report = doctor(languages=languages, sandboxes=[level])
    failures = [(c.language, c.cause) for c in report.checks if not c.ok]
    assert failures == []
    assert report.ok
    assert {c.sandbox for c in report.checks} == {level}
    assert {c.backend for c in report.checks} == {backend}
    # Each canonical and each wrong solution ran: nothing came from a cache.
    for check in report.checks:
        problems = canary_problems(check.language)
        assert check.programs == len(problems) + sum(1 for p in problems if p.wrong_solution)


def test_the_command_passes_and_prints_a_table():
    done = run_doctor("--language", "python", "--sandbox", "none")
    assert done.returncode == 0, done.stdout + done.stderr
    header, row, verdict = done.stdout.splitlines()
    assert header.split()[:4] == ["language", "sandbox", "result", "time"]
    assert row.split()[:3] == ["Python", "none", "ok"]
    assert verdict == "every language is ready"


@pytest.mark.parametrize(("language", "variable", "tool"), [
    ("cpp", "EVALUATOR_CXX", "g++"),
    ("java", "EVALUATOR_JAVAC", "javac"),
    ("js", "EVALUATOR_NODE", "node"),
    ("go", "EVALUATOR_GO", "go"),
    ("rust", "EVALUATOR_RUSTC", "rustc"),
])
def test_a_toolchain_pointed_at_a_missing_path_fails_with_its_cause(language, variable, tool):
    missing = f"/nonexistent/{tool}"
    done = run_doctor("--language", f"{language},python", "--sandbox", "none", "--json",
                      env={variable: missing})
    assert done.returncode == 1, done.stdout + done.stderr
    checks = {c["language"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["python"]["ok"], "only the broken language fails"
    broken = checks[language]
    assert not broken["ok"]
    assert f"{variable} is set to {missing}, which does not exist" in broken["cause"]
    assert "toolchain is missing" in broken["cause"]
    assert variable in broken["hint"]


def test_the_table_gives_the_cause_and_the_hint():
    done = run_doctor("--language", "cpp", "--sandbox", "none",
                      env={"EVALUATOR_CXX": "/nonexistent/g++"})
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[1].split()[:3] == ["C++", "none", "FAILED"]
    assert "EVALUATOR_CXX is set to /nonexistent/g++" in lines[1]
    assert lines[2].strip().startswith("hint: point EVALUATOR_CXX at an installed tool")
    assert lines[-1] == "not ready: C++"


def test_a_missing_runtime_file_fails_with_its_cause(tmp_path):
    if get_language("js").available() is not None:
        pytest.skip(f"JavaScript is not installed: {get_language('js').available()}")
    project = tmp_path / "project"
    shutil.copytree(REPO_ROOT / "evaluator", project / "evaluator",
                    ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    harness = project / "evaluator" / "languages" / "runtime" / "js" / "harness.js"
    harness.unlink()
    modules = REPO_ROOT / "evaluator" / "languages" / "runtime" / "js" / "node_modules"
    done = run_doctor("--language", "js,python", "--sandbox", "none", "--json", cwd=project,
                      env={"EVALUATOR_NODE_MODULES": str(modules)})
    assert done.returncode == 1, done.stdout + done.stderr
    checks = {c["language"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["python"]["ok"], "the copy itself works"
    assert not checks["js"]["ok"]
    assert checks["js"]["cause"] == f"a runtime file of the evaluator is missing: {harness}"
    assert "restore it from the repository" in checks["js"]["hint"]


# -- the judge, on made-up canaries ------------------------------------------------------------


def test_a_wrong_solution_that_passes_fails_the_canary(monkeypatch):
    # A harness that passes everything would pass every canonical solution too.
    first, *rest = canary_problems("python")
    right = replace(first, wrong_solution=first.problem.canonical_solution)
    monkeypatch.setattr(doctor_module, "canary_problems", lambda language: (right, *rest))
    check = check_language("python", "none")
    assert not check.ok
    assert check.cause.startswith("a deliberately wrong Python solution (Canary/0) passed")
    assert "harness" in check.hint


def test_a_correct_program_that_fails_is_reported(monkeypatch):
    first = canary_problems("python")[0]
    broken = replace(first.problem, canonical_solution=first.wrong_solution)
    monkeypatch.setattr(doctor_module, "canary_problems",
                        lambda language: (replace(first, problem=broken),))
    check = check_language("python", "none")
    assert not check.ok
    assert check.cause.startswith("a correct Python program (Canary/0) did not pass (failed)")


def test_a_sandbox_that_does_not_work_fails_every_language(monkeypatch):
    def refuse(name: str):
        raise SandboxError("bwrap: setting up uid map: Permission denied")

    monkeypatch.setattr(doctor_module, "resolve_backend", refuse)
    report = doctor(languages=["python", "cpp"], sandboxes=["standard"])
    assert not report.ok
    for check in report.checks:
        assert check.sandbox == "standard"
        assert check.cause == ("the standard sandbox does not work here: bwrap: setting up "
                               "uid map: Permission denied")
        assert "python -m evaluator sandbox" in check.hint


def test_unknown_names_are_usage_errors(capsys):
    assert main(["doctor", "--language", "cobol"]) == 2
    assert "unknown language 'cobol'" in capsys.readouterr().err
    assert main(["doctor", "--sandbox", "docker"]) == 2
    assert "unknown sandbox 'docker'" in capsys.readouterr().err


def test_a_check_survives_json():
    check = LanguageCheck(language="cpp", sandbox="standard", backend="bwrap", ok=False,
                          seconds=0.4, checked_at="2026-01-02T03:04:05+00:00",
                          cause="the C++ toolchain is missing", hint="install it", programs=0)
    assert LanguageCheck.from_dict(json.loads(json.dumps(check.to_dict()))) == check
    assert DoctorReport((check,)).to_dict()["ok"] is False
