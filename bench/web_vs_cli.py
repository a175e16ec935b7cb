"""The web path against the command line: the same file, the same limits, the same number
of programs at once, from upload to a finished run against `python -m evaluator evaluate`.

Both run with their defaults, which are the product: the sandbox `auto` picks, the dataset
profile's limits, and one program per core (the CLI's `--workers`, the web worker's
processes). Neither has a result cache to draw on: the CLI runs with `--no-cache`, and the
web app starts on a fresh database each time. They take turns, CLI first, then the web app
in each set-up asked for: embedded (SQLite and a filesystem broker, `make run`'s) and
services (PostgreSQL + Redis). The web clock starts at the upload and stops when the API
says the run is finished; the stack is started and warmed with a small run before it, as
a server a researcher uploads to has been.

    python bench/web_vs_cli.py [--modes embedded,services] [--per-task 20] [--file PATH]

The file defaults to CodeGen-16B's generations (../shared/generations/codegen-16b-n100,
100 per task); --per-task keeps the first N of each task (0 keeps all 16,400).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import secrets
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir, timed  # noqa: E402
from bench.webapp_bench import services_env, upload, wait_finished  # noqa: E402
from tests.webapp.services.live_stack import add_user, api  # noqa: E402
from webapp.stack import Stack, free_port  # noqa: E402

GOAL = 1.15
"""The web path may cost at most this much more than the CLI (issue 26)."""
CODEGEN = ("generations/codegen-16b-n100/"
           "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz")


def sample_file(source: Path, per_task: int, work: Path) -> tuple[Path, Path, int]:
    """The first `per_task` samples of each task of `source` (all with 0), as .jsonl in
    the file's own layout (CodeT's lines hold a task's samples as a list), and a warm-up
    file of one sample."""
    kept: dict[str, int] = defaultdict(int)
    out, warm = work / "samples.jsonl", work / "warm.jsonl"
    opener = gzip.open if source.suffix == ".gz" else open
    count = 0
    with opener(source, "rt", encoding="utf-8") as lines, \
            out.open("w", encoding="utf-8") as sink:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            if "samples" in record:  # CodeT: {prompt, samples: [...]}
                if per_task:
                    record["samples"] = record["samples"][:per_task]
                count += len(record["samples"])
            else:
                if per_task and kept[record["task_id"]] >= per_task:
                    continue
                kept[record["task_id"]] += 1
                count += 1
            if count and not warm.exists():
                first = dict(record, samples=record["samples"][:1]) if "samples" in record \
                    else record
                warm.write_text(json.dumps(first) + "\n", encoding="utf-8")
            sink.write(json.dumps(record) + "\n")
    return out, warm, count


def run_cli(samples: Path, work: Path) -> dict[str, Any]:
    results = work / "cli-results.jsonl"
    seconds, proc = timed([sys.executable, "-m", "evaluator", "evaluate", "--samples",
                           str(samples), "--no-cache", "--json", "--results", str(results)])
    summary = json.loads(proc.stdout)
    return {"seconds": round(seconds, 1), "pass@1": summary["pass_at_k"]["pass@1"]["value"],
            "sandbox": summary["sandbox_level"], "statuses": summary["statuses"]}


def run_web(mode: str, samples: Path, warm: Path, work: Path, *,
            timeout: float) -> dict[str, Any]:
    var = work / f"var-{mode}"
    env = {"WORKBENCH_VAR_DIR": str(var), "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
           "DATABASE_URL": "", "REDIS_URL": ""}
    with services_env(env, mode):
        return _time_upload(env, mode, samples, warm, work, timeout=timeout)


def _time_upload(env: dict[str, str], mode: str, samples: Path, warm: Path, work: Path, *,
                 timeout: float) -> dict[str, Any]:
    # One worker process per core, as `make run` starts it.
    stack = Stack(env=env, port=free_port(), concurrency=os.cpu_count() or 2,
                  log_dir=work / f"logs-{mode}")
    try:
        stack.prepare(static=False)
        token = add_user(stack, "bench", "bench-password-123")
        stack.start()
        wait_finished(stack, token, [upload(stack, token, warm, "warm-up")], timeout=timeout)
        start = time.perf_counter()
        run_id = upload(stack, token, samples, "timed")
        wait_finished(stack, token, [run_id], timeout=timeout)
        seconds = time.perf_counter() - start
        _, body = api(stack.url, token, f"/api/runs/{run_id}?problems=0")
        return {"seconds": round(seconds, 1), "pass@1": body["pass_at_k"][0]["value"],
                "sandbox": body["sandbox"], "statuses": body["progress"]["by_status"]}
    finally:
        stack.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="embedded,services")
    parser.add_argument("--per-task", type=int, default=20)
    parser.add_argument("--file", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=7200.0)
    args = parser.parse_args()
    source = args.file or shared_dir() / CODEGEN
    with tempfile.TemporaryDirectory(prefix="web-vs-cli-") as scratch:
        work = Path(scratch)
        samples, warm, count = sample_file(source, args.per_task, work)
        print(f"{count} samples from {source.name}; load average {load_average()}", flush=True)
        cli = run_cli(samples, work)
        print(f"cli       {cli['seconds']:8.1f} s  pass@1 {cli['pass@1']:.4f}  "
              f"sandbox {cli['sandbox']}  load {load_average()}", flush=True)
        for mode in args.modes.split(","):
            web = run_web(mode, samples, warm, work, timeout=args.timeout)
            ratio = web["seconds"] / cli["seconds"]
            same = "same pass@1" if abs(web["pass@1"] - cli["pass@1"]) < 1e-9 else \
                f"pass@1 DIFFERS ({web['pass@1']:.4f})"
            print(f"web {mode:<9}{web['seconds']:8.1f} s  {ratio:.2f}× the CLI "
                  f"(goal ≤ {GOAL}×)  {same}  sandbox {web['sandbox']}  "
                  f"load {load_average()}", flush=True)


if __name__ == "__main__":
    main()
