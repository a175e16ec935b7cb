"""Generations in the wrong language are caught by parsing them, before anything runs.

Every pair of the six languages, with the real front ends (`ast`, g++, javac, node,
gofmt, rustfmt). A missing toolchain skips its cases here, and fails them in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator import language_check
from evaluator.datasets import load_dataset
from evaluator.language_check import check_language
from evaluator.languages.cpp import Cpp
from evaluator.languages.python import Python
from evaluator.languages.registry import display_name
from evaluator.languages.toolchains import ToolchainError
from evaluator.records import Problem, Sample
from evaluator.samples import read_samples
from tests.polyglot import LANGUAGES, generations, require_parser, write_dataset

REPO = Path(__file__).resolve().parents[2]
@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Problem]]:
    folder = tmp_path_factory.mktemp("datasets")
    return {lang: list(load_dataset(path=write_dataset(folder, lang)).problems)
            for lang in LANGUAGES}


def samples_in(language: str, problems: list[Problem], folder: Path) -> list[Sample]:
    path = folder / f"{language}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in generations(language)))
    read = read_samples(path, problems)
    assert read.ok, read.issues
    return list(read.samples)


@pytest.mark.parametrize("language", LANGUAGES)
def test_generations_in_the_datasets_language_pass(language, datasets, tmp_path):
    require_parser(language)
    problems = datasets[language]
    verdict = check_language(problems, samples_in(language, problems, tmp_path))
    assert verdict.checked == 6
    assert verdict.parses[language] == 6
    assert verdict.fits
    assert not verdict.mismatch
    assert verdict.message() == ""
    # A file that fits is decided by its own language's parser alone.
    assert set(verdict.parses) == {language}


@pytest.mark.parametrize(("written", "dataset"), [
    (written, dataset) for written in LANGUAGES for dataset in LANGUAGES if written != dataset
])
def test_generations_in_another_language_are_detected(written, dataset, datasets, tmp_path):
    for language in (written, dataset):
        require_parser(language)
    problems = datasets[dataset]
    verdict = check_language(problems, samples_in(written, problems, tmp_path))
    assert not verdict.fits
    assert verdict.detected == written
    message = verdict.message()
    name, want = display_name(written), display_name(dataset)
    assert f"look like {name}, not {want}" in message
    assert f"6 of 6 sampled completions parse as {name}" in message


def test_python_against_cpp_as_reported(datasets, tmp_path):
    """The report of issue 13: Python generations against HumanEval-X C++."""
    require_parser("cpp")
    problems = datasets["cpp"]
    verdict = check_language(problems, samples_in("python", problems, tmp_path))
    assert verdict.detected == "python"
    assert verdict.parses["cpp"] == 0
    assert verdict.message().startswith("These generations look like Python, not C++: 6 of 6")


def test_a_spread_of_at_most_twenty_samples_is_parsed(datasets):
    problems = datasets["python"]
    samples = [Sample(task_id=p.task_id, index=i, raw="    return 1\n",
                      completion="    return 1\n") for p in problems for i in range(50)]
    verdict = check_language(problems, samples)
    assert verdict.checked == 20
    chosen = language_check._spread(samples, 20)
    assert {s.task_id for s in chosen} == {p.task_id for p in problems}


def test_file_that_fits_no_language_is_not_called_a_mismatch(datasets, tmp_path):
    for language in LANGUAGES:
        require_parser(language)
    # (Against C++ this prose would pass: after an undeclared name g++ skips the rest of
    # the statement, so no grammar error is left to count. Lenient is the safe side.)
    problems = datasets["python"]
    prose = "Sure! Here is the function you asked for :) (it works ((\n"
    samples = [Sample(task_id=p.task_id, index=0, raw=prose, completion=prose) for p in problems]
    verdict = check_language(problems, samples)
    assert not verdict.fits
    assert verdict.detected is None
    assert not verdict.mismatch
    assert verdict.message().startswith("Only 0 of 3 sampled completions parse as Python")


@pytest.mark.parametrize("completion", [
    '#include "/dev/zero"\n',                       # a read that never ends
    "template<int N> struct F { enum { v = F<N-1>::v + F<N-2>::v }; };\n"
    "int x = F<100000>::v;\n}\n",                   # the compiler's recursion limits
    "    return x;\x00\n}\n",                        # a NUL
    "\u202e}\u202c;\ufeff\u200b\n" * 50,             # bidi controls, BOM, zero width
    "{" * 20000,                                     # nesting that overflows recursion
    "x" * (language_check.MAX_SOURCE_CHARS + 1),     # too long: left out of the sample
])
def test_hostile_completions_give_an_answer_quickly(completion, datasets):
    require_parser("cpp")
    problems = datasets["cpp"]
    samples = [Sample(task_id=p.task_id, index=0, raw=completion, completion=completion)
               for p in problems]
    verdict = check_language(problems, samples)
    assert verdict.checked + verdict.undecided in (0, 3)
    assert not verdict.mismatch or verdict.detected in LANGUAGES


def test_answers_are_cached_by_content(datasets, tmp_path, monkeypatch):
    problems = datasets["python"]
    samples = samples_in("python", problems, tmp_path)
    check_language(problems, samples)
    calls: list[int] = []
    real = Python.check_syntax
    monkeypatch.setattr(Python, "check_syntax", lambda self, sources, run: calls.append(
        len(sources)) or real(self, sources, run))
    assert check_language(problems, samples).parses["python"] == 6
    assert calls == []


def test_missing_parser_is_reported_not_raised(datasets, tmp_path, monkeypatch):
    problems = datasets["cpp"]
    samples = samples_in("python", problems, tmp_path)
    monkeypatch.setattr(language_check, "_cache", {})

    def missing(_self: object, _sources: list[str], _run: object) -> list[bool]:
        raise ToolchainError("g++ is not installed")

    monkeypatch.setattr(Cpp, "check_syntax", missing)
    verdict = check_language(problems, samples)
    assert verdict.checked == 0
    assert verdict.fits
    assert verdict.unavailable == {"cpp": "g++ is not installed"}


# -- the command line -----------------------------------------------------------------------
def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaluator", *args], cwd=cwd, capture_output=True, text=True,
        timeout=300, check=False,
        env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
             "HOME": str(cwd)},
    )


def test_cli_refuses_python_against_cpp_and_names_the_flag(tmp_path):
    require_parser("cpp")
    dataset = write_dataset(tmp_path, "cpp")
    samples = tmp_path / "python.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in generations("python")))
    results = tmp_path / "out.jsonl"
    done = run_cli("evaluate", "--dataset-file", str(dataset), "--samples", str(samples),
                   "--results", str(results), "--sandbox", "none", cwd=tmp_path)
    assert done.returncode != 0
    assert "error: These generations look like Python, not C++" in done.stderr
    assert "--allow-language-mismatch" in done.stderr
    assert not results.exists()


def test_cli_flag_lets_a_mismatch_through_with_a_warning(tmp_path, datasets, capsys):
    import argparse

    from evaluator.__main__ import _check_language
    from evaluator.datasets import load_dataset as load

    require_parser("cpp")
    dataset = load(path=write_dataset(tmp_path, "cpp"))
    samples = samples_in("python", list(dataset.problems), tmp_path)
    args = argparse.Namespace(samples="python.jsonl", allow_language_mismatch=True)
    _check_language(args, dataset, samples)
    assert "warning: These generations look like Python" in capsys.readouterr().err


def test_markdown_fences_do_not_make_python_javascript(datasets):
    """Three backquotes are a JavaScript template literal; the fence is taken off first."""
    for language in LANGUAGES:
        require_parser(language)
    problems = datasets["python"]
    body = "    for n in l:\n        if n > 0:\n            return True\n    return False\n"
    fenced = f"```python\n{body}```\n"
    samples = [Sample(task_id=p.task_id, index=0, raw=fenced, completion=fenced)
               for p in problems]
    verdict = check_language(problems, samples)
    assert verdict.fits
    assert not verdict.mismatch
