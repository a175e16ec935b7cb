"""The sanitizer on real chat-model output (../shared/generations/ollama-8-models)."""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

import pytest

from evaluator.records import Problem
from evaluator.samples import read_samples


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


def test_sanitizing_never_breaks_compiling_output_and_repairs_some(
    shared_dir: Path, problems: list[Problem], by_id: dict[str, Problem]
) -> None:
    for path in ollama_files(shared_dir):
        result = read_samples(path, problems)
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
