"""A finished run of any size, built straight into the database: its chunks, its samples
with verdicts already set, then the real scoring (`run_finalize`). No program is run, so a
16,400-sample run takes seconds; the run page, the leaderboard and the benches then read
the same rows an evaluation would have left.

From a stack's own process (its database is the stack's):

    manage.py shell -c "from tests.webapp.large_run import main; main('olivia', 100)"
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import problem_variant_ids
from webapp.runs.models import Chunk, Run, Sample
from webapp.runs.worker.aggregation import _score as score_run
from webapp.runs.worker.execution import run_finish
from webapp.runs.worker.leases import lease_end
from webapp.teams.models import Team
from webapp.teams.selectors import default_team

DATASET = "humaneval/python/en"
# Each failure kind once in a while, so the failure chart and the "what is wrong" list
# have something to show: (status, error type, message).
FAILURES = (
    ("failed", "AssertionError", "assert candidate([1.0, 2.0]) == False"),
    ("failed", "AssertionError", "assert candidate('') == []"),
    ("error", "TypeError", "unsupported operand type(s) for +: 'int' and 'str'"),
    ("timeout", "", "the program ran longer than 10 s"),
    ("error", "NameError", "name 'math' is not defined"),
)


def verdict(task: int, index: int, shift: int = 0) -> tuple[str, str, str]:
    """A fixed, varied pattern: task t passes about ((t * 37 + shift) % 101)% of its
    samples; runs with another `shift` differ on some problems."""
    rate = (task * 37 + shift) % 101
    if (index * 53 + task * 11) % 100 < rate:
        return "passed", "", ""
    return FAILURES[(task + index) % len(FAILURES)]


def large_run_create(*, owner: User, team: Team, dataset: Dataset, per_task: int,
                     name: str, status: str = Run.Status.FINISHED,
                     visibility: str = Run.Visibility.PUBLIC) -> Run:
    """A run of `per_task` samples for every problem of `dataset`, scored. With
    `status` running, it stays running with its samples done: a page to time during load."""
    variants = problem_variant_ids(dataset_id=dataset.pk)
    tasks = sorted(variants, key=lambda t: int(t.rsplit("/", 1)[1]))
    started = timezone.now() - timedelta(minutes=30)
    shift = int(hashlib.sha256(name.encode()).hexdigest(), 16) % 9
    run = Run.objects.create(
        owner=owner, team=team, visibility=visibility, name=name,
        model_name=name.split(" ")[0], dataset=dataset, file_name=f"{name}.jsonl",
        file_sha256=secrets.token_hex(32), file_size=per_task * 200,
        file_layout="completion", fingerprint=secrets.token_hex(32),
        harness_version="1.0.0", started_at=started,
        # Scored below under a lease, as `run_finalize` would: a sweeper of a running stack
        # that saw a running run with all its chunks done would score it too.
        status=Run.Status.AGGREGATING if status == Run.Status.FINISHED else status,
        lease_until=lease_end(),
        samples_total=per_task * len(tasks), done_count=per_task * len(tasks),
        chunks_total=len(tasks), chunks_done=len(tasks), sandbox_backend="bwrap",
        coverage={"tasks_total": len(tasks), "tasks_with_samples": len(tasks),
                  "missing_tasks": [], "samples_total": per_task * len(tasks),
                  "min_n": per_task, "max_n": per_task, "max_k": per_task,
                  "unequal_n": False, "layout": "completion", "sanitized": 0},
    )
    chunks = Chunk.objects.bulk_create([
        Chunk(run=run, index=i, language=dataset.language, sample_count=per_task,
              status=Chunk.Status.DONE, started_at=started, finished_at=started)
        for i in range(len(tasks))
    ])
    samples, counts = [], {"passed": 0, "failed": 0, "error": 0, "timeout": 0}
    for number, (task_id, chunk) in enumerate(zip(tasks, chunks, strict=True)):
        task = int(task_id.rsplit("/", 1)[1])
        for index in range(per_task):
            verdict_status, error_type, message = verdict(task, index, shift)
            counts[verdict_status] += 1
            position = number * per_task + index
            samples.append(Sample(
                run=run, chunk=chunk, variant_id=variants[task_id], task_id=task_id,
                source_task_id=task_id, index=index, position=position, line=position + 1,
                raw=f"    return {index}\n", completion=f"    return {index}\n",
                status=verdict_status, error_type=error_type, message=message,
                duration_ms=40.0 + index % 17, tests_passed=3 if verdict_status == "passed" else 1,
                tests_total=3, finished_at=started + timedelta(milliseconds=position * 50),
                seq=position + 1,
            ))
    Sample.objects.bulk_create(samples, batch_size=2000)
    Run.objects.filter(pk=run.pk).update(
        event_seq=len(samples), passed_count=counts["passed"], failed_count=counts["failed"],
        error_count=counts["error"], timeout_count=counts["timeout"],
    )
    if status == Run.Status.FINISHED:
        score_run(run_id=run.pk)
        if not run_finish(run_id=run.pk):
            raise RuntimeError(f"run {run.pk} could not be finished")
    run.refresh_from_db()
    return run


def main(username: str, per_task: int, name: str = "codegen-16b n=100",
         status: str = Run.Status.FINISHED, visibility: str = Run.Visibility.PUBLIC) -> None:
    """Build the run for `username`'s default team and print its id (the last line)."""
    owner = User.objects.get(username=username)
    run = large_run_create(owner=owner, team=default_team(user=owner),
                           dataset=Dataset.objects.get(key=DATASET), per_task=per_task,
                           name=name, status=status, visibility=visibility)
    print(run.pk)
