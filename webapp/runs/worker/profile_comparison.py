"""A finished run re-scored under every harness profile: the request (a service for the run's
owner), and the worker's side, which calls `evaluator.rescoring` on the run's stored results
and stores pass@k per profile and the problems whose verdict depends on the profile.

Most samples are re-judged from the facts their results recorded; only those whose program
a profile changes (post-processing, Java's `-ea`, Go's vet), or that were stopped sooner than
a profile's limit, are run again, by an engine built as the chunk workers build theirs.

The comparison is claimed atomically and held by a heartbeat lease, like a chunk: a second
delivery of its task does nothing, and one whose worker died is taken back and sent again by
the sweeper (`recovery`) once the lease has passed. Its outcome is written in one
transaction, only by the delivery that holds it.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from evaluator.engine import Engine, EngineConfig
from evaluator.metrics import curve_with_ci, reportable_ks
from evaluator.profiles import PROFILES, Profile, get_profile
from evaluator.records import Problem, RunOptions, SampleResult, cap_text
from evaluator.records import Sample as EvaluatorSample
from evaluator.rescoring import Rescored, compare, rescore
from webapp.benchmarks.selectors import dataset_problems
from webapp.runs.domain.sample_rows import SAMPLE_COLUMNS, stored_result, stored_sample
from webapp.runs.domain.scoring import CONFIDENCE, RESAMPLES, SEED
from webapp.runs.messaging.dispatch import send_profile_comparison
from webapp.runs.models import ProfileComparison, ProfileScore, Run, Sample
from webapp.runs.reads.selectors import REPORTED_KS, run_can_manage
from webapp.runs.worker.execution import DatabaseResultCache, storable
from webapp.runs.worker.jobs import job_claim, job_held, job_run

REASON_LENGTH = 500
"""Characters kept of the reason a problem's verdict depends on the profile."""


def compared_profiles(run: Run) -> list[Profile]:
    """Every profile, the run's own first: the baseline that changes are counted against."""
    own = get_profile(run.profile_name)
    return [own, *(p for p in PROFILES.values() if p.name != own.name)]


# -- the request ----------------------------------------------------------------------------
def profile_comparison_request(*, user: User, run: Run) -> ProfileComparison:
    """Ask for the run to be compared under every profile; the task is sent on commit.

    Who may: as for cancel and re-run. Refused for a run that has not finished (its results
    are not all there) and while a comparison of the run is in progress; a failed or
    finished one is replaced.
    """
    if not run_can_manage(user=user, run=run):
        raise PermissionDenied("Only the run's owner or a team owner can compare its harness "
                               "profiles.")
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("dataset").get(pk=run.pk)
        if locked.is_active:
            raise ValidationError("The run is still going: its harness profiles can be "
                                  "compared once it has finished.")
        if locked.profile_name not in PROFILES:
            raise ValidationError(f"The run was judged under {locked.profile_name!r}, a profile "
                                  "this server no longer knows; re-run it under a known one.")
        if locked.status != Run.Status.FINISHED:
            raise ValidationError(f"The run {locked.get_status_display().lower()} before "
                                  "every sample was evaluated; only a finished run's harness "
                                  "profiles can be compared (re-run it first).")
        existing = ProfileComparison.objects.filter(run=locked).first()
        if existing is not None:
            if existing.in_progress:
                raise ValidationError("This run's harness profiles are already being "
                                      "compared.")
            # A new row, not the old one reset: a late delivery of the old task finds
            # nothing to claim.
            existing.delete()
        comparison = ProfileComparison.objects.create(
            run=locked, requested_by_id=user.pk, baseline=locked.profile_name,
            profiles_total=len(compared_profiles(locked)),
        )
        comparison_id, language = comparison.pk, locked.dataset.language
        transaction.on_commit(lambda: _enqueue(comparison_id, language))
    return comparison


def _enqueue(comparison_id: int, language: str) -> None:
    if not send_profile_comparison(comparison_id=comparison_id, language=language):
        ProfileComparison.objects.filter(
            pk=comparison_id, status=ProfileComparison.Status.QUEUED
        ).update(status=ProfileComparison.Status.FAILED, finished_at=timezone.now(),
                 error="The task queue could not be reached; ask again in a moment.")


# -- the worker's side ----------------------------------------------------------------------
def _claim(comparison_id: int) -> str | None:
    return job_claim(ProfileComparison.objects.filter(pk=comparison_id), profiles_done=0)


def _held(comparison_id: int, claim: str) -> QuerySet[ProfileComparison]:
    return job_held(ProfileComparison.objects.filter(pk=comparison_id), claim)


def profile_comparison_run(*, comparison_id: int) -> str:
    """Compute a requested comparison: "done", "failed" (the reason is stored), "skipped"
    (already taken, finished, or no longer asked for) or "lost" (the lease was taken over).
    Safe to run twice."""
    claim = _claim(comparison_id)
    if claim is None:
        return "skipped"
    return job_run(name=f"profiles-{comparison_id}",
                   job=ProfileComparison.objects.filter(pk=comparison_id), claim=claim,
                   compute=lambda stop: _compare(comparison_id=comparison_id, claim=claim,
                                                 stop=stop))


def _compare(*, comparison_id: int, claim: str, stop: threading.Event) -> bool:
    comparison = ProfileComparison.objects.select_related("run", "run__dataset").get(
        pk=comparison_id)
    run = comparison.run
    problems = dataset_problems(dataset=run.dataset)
    samples, results = _stored_results(run=run, problems=problems)
    profiles = compared_profiles(run)
    own, others = profiles[0], profiles[1:]
    # The run's own verdicts are its baseline as they stand: its headline numbers use them.
    rescored = [Rescored(profile=own, results=results)]
    _held(comparison_id, claim).update(profiles_done=1)
    cache = DatabaseResultCache() if run.use_cache else None
    for position, profile in enumerate(others, start=2):
        if stop.is_set():
            return False
        rescored.append(rescore(samples, results, problems, profile,
                                _engine_factory(run=run, cache=cache)))
        if cache is not None:
            cache.flush()
        _held(comparison_id, claim).update(profiles_done=position)
    comparison_of = compare(rescored)
    n_of = _samples_per_task(results)
    scores = [
        ProfileScore(
            comparison_id=comparison_id, profile=entry.profile.name,
            version=entry.profile.version, pass_at_k=_pass_at_k(entry.results),
            changed=comparison_of.changed_problems(entry.profile.name, own.name),
            rejudged=entry.rejudged, executed=entry.executed, reasons=storable(entry.reasons),
        )
        for entry in rescored
    ]
    dependent = [
        {"task_id": d.task_id, "n": n_of.get(d.task_id, 0), "passed": d.passed,
         "reason": cap_text(d.reason, REASON_LENGTH)}
        for d in comparison_of.dependent
    ]
    if stop.is_set():
        return False
    with transaction.atomic():
        if not _held(comparison_id, claim).select_for_update().exists():
            return False
        ProfileScore.objects.filter(comparison_id=comparison_id).delete()
        ProfileScore.objects.bulk_create(scores)
        _held(comparison_id, claim).update(
            status=ProfileComparison.Status.DONE, dependent=storable(dependent),
            profiles_done=len(profiles), finished_at=timezone.now(), lease_until=None)
    return True


def _stored_results(*, run: Run, problems: dict[str, Problem]
                    ) -> tuple[list[EvaluatorSample], list[SampleResult]]:
    """The run's evaluated samples, in file order, with their stored results."""
    rows = (
        Sample.objects.filter(run=run).exclude(status="pending").order_by("position")
        .values_list(*SAMPLE_COLUMNS, "status", "message", "program_hash", "result")
    )
    samples: list[EvaluatorSample] = []
    results: list[SampleResult] = []
    width = len(SAMPLE_COLUMNS)
    for row in rows.iterator(chunk_size=1000):
        sample = stored_sample(row[:width])
        status, message, program_hash, stored = row[width:]
        samples.append(sample)
        task_id, index = sample.task_id, sample.index
        result = stored_result(stored=stored, task_id=task_id, index=index, status=status,
                               program_hash=program_hash, message=message)
        problem = problems.get(task_id)
        results.append(replace(result, task_id=task_id, completion_id=index,
                               language=problem.language if problem else result.language))
    return samples, results


def _engine_factory(*, run: Run, cache: DatabaseResultCache | None
                    ) -> Callable[[Profile], Engine]:
    """Engines as the chunk workers build them (`execution._evaluate`), under `profile`, and
    never with a shorter limit than the profile's own: a sample run again because it was
    stopped before that limit must get it."""
    language = run.dataset.language
    stored = RunOptions.from_dict(run.options)

    def make(profile: Profile) -> Engine:
        timeout = max(stored.limits.cpu_seconds, profile.time_limit(language) or 0.0)
        options = RunOptions.from_dict({**run.options, "profile": profile.name,
                                        "timeout_seconds": timeout})
        return Engine(EngineConfig(backend=settings.EVALUATOR_SANDBOX,
                                   workers=settings.EVALUATOR_WORKERS, options=options,
                                   cache=cache))

    return make


def _samples_per_task(results: list[SampleResult]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for result in results:
        counts[result.task_id] += 1
    return dict(counts)


def _task_number(task_id: str) -> tuple[int, str]:
    tail = task_id.rsplit("/", 1)[-1]
    return (int(tail), task_id) if tail.isdigit() else (0, task_id)


def _pass_at_k(results: list[SampleResult]) -> list[dict[str, Any]]:
    """pass@k with its bootstrap interval for the k that every problem's n allows, computed
    as the run's own scores are (`aggregation`): same problems order, seed and resamples,
    so the run's own profile gives its headline numbers exactly."""
    n: dict[str, int] = defaultdict(int)
    c: dict[str, int] = defaultdict(int)
    for result in results:
        n[result.task_id] += 1
        c[result.task_id] += int(result.passed)
    task_ids = sorted(n, key=_task_number)
    if not task_ids:
        return []
    ns = [n[t] for t in task_ids]
    ks = reportable_ks(ns, REPORTED_KS)
    if not ks:
        return []
    return [
        {"k": point.k, "value": round(point.value, 6), "low": round(point.low, 6),
         "high": round(point.high, 6)}
        for point in curve_with_ci(ns, [c[t] for t in task_ids], ks, confidence=CONFIDENCE,
                                   resamples=RESAMPLES, seed=SEED, task_ids=task_ids)
    ]
