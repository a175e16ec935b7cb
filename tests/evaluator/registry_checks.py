"""What the tests of the defect registry's patches share: building and validating some
problems of one language's Mini plus set from the shared data, as `python -m evaluator
datasets build-plus --validate` does, and the verdicts of completions of one problem as
shipped or patched."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evaluator.__main__ import main
from evaluator.engine import Engine, EngineConfig
from evaluator.records import Problem, RunOptions, Sample


def validated_mini(shared_dir: Path, out: Path, language: str,
                   problems: Iterable[int]) -> dict[str, Any]:
    """The validation of `problems` of `language`'s Mini plus set, built into `out`."""
    datasets = shared_dir / "datasets"
    code = main(["datasets", "build-plus", "--set", "mini", "--languages", language,
                 "--tasks", ",".join(map(str, problems)), "--out", str(out),
                 "--humanevalplus", str(datasets / "humanevalplus"),
                 "--humaneval-x", str(datasets / "humaneval-x"),
                 "--validate", "--workers", "1"])
    assert code == 0
    (built,) = json.loads((out / "report.json").read_text())["languages"]
    validation: dict[str, Any] = built["validation"]
    return validation


def verdicts(problem: Problem, completions: list[str], *, patched: bool) -> list[str]:
    """Each completion's status on `problem`, with the registry's patches or without."""
    samples = [Sample(task_id=problem.task_id, index=n, raw=text, completion=text)
               for n, text in enumerate(completions)]
    with Engine(EngineConfig(backend="none", workers=1, cache=None,
                             options=RunOptions(patched=patched))) as engine:
        results = {e["result"].completion_id: e["result"].status
                   for e in engine.evaluate({problem.task_id: problem}, samples)
                   if e["type"] == "sample_finished"}
    return [results[n] for n in range(len(samples))]
