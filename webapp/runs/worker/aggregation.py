"""A run's scores, computed once all its chunks are done: pass@k per problem and overall,
the digest its pages read (pass^k, the failure breakdown, the unstable count; for a run
scored before digests existed, `run_digest_backfill`), and for a plus run the samples per
problem that passed the plus set's base tests."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from django.db import IntegrityError, transaction

from evaluator.metrics import ALL_OF_K, curve_with_ci, pass_at_k_array, reportable_ks
from evaluator.metrics_plus import declared_groups, passed_base
from evaluator.records import INFRASTRUCTURE_STATUS
from webapp.benchmarks.models import ProblemVariant
from webapp.benchmarks.problem_json import problem_from_json
from webapp.runs.domain.problem_scores import problem_curve
from webapp.runs.domain.scoring import CONFIDENCE, RESAMPLES, SEED, curve_points
from webapp.runs.models import ProblemResult, Run, RunDigest, RunMetric, Sample
from webapp.runs.reads.reports import counted_failures
from webapp.runs.reads.selectors import REPORTED_KS, counted_unstable_samples, sample_result
from webapp.runs.reads.verified import counted_verification
from webapp.runs.worker.execution import run_finish, run_pause
from webapp.runs.worker.leases import Heartbeat, lease_end
from webapp.runs.worker.transient import db_retry


def problem_interval(n: int, c: int, k: int) -> tuple[float, float]:
    """A bootstrap interval for one problem's pass@k: resample its n samples (so c is
    drawn from Binomial(n, c/n)) and take the percentiles of pass@k."""
    draws = np.random.default_rng(SEED).binomial(n, c / n, size=RESAMPLES)
    values = pass_at_k_array(n, draws, k)
    tail = (1.0 - CONFIDENCE) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def run_finalize(*, run_id: int) -> bool:
    """Compute and store the scores of a run whose chunks are all done; then mark it finished.

    Claimed atomically (running -> aggregating) under a heartbeat lease, so only one caller
    computes, and a caller that dies is replaced once its lease has passed. The last step,
    aggregating -> finished, is `execution.run_finish`, with the run's other worker-side
    changes of state.
    """
    failed = (Sample.objects.filter(run_id=run_id, status=INFRASTRUCTURE_STATUS)
              .values_list("message", flat=True).first())
    if failed is not None:
        # Never a score over samples the machine failed (a pause may have lost a race).
        run_pause(run_id=run_id, cause=failed or "an infrastructure failure")
        return False
    claimed = db_retry(lambda: Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(
        status=Run.Status.AGGREGATING, lease_until=lease_end()
    ), what="claiming a run's scores")
    if not claimed:
        return False

    def renew() -> bool:
        return bool(Run.objects.filter(pk=run_id, status=Run.Status.AGGREGATING).update(
            lease_until=lease_end()
        ))

    with Heartbeat(name=f"scores-{run_id}", renew=renew, stop=threading.Event()) as heartbeat:
        _score(run_id=run_id)
    if heartbeat.lost:
        return False
    return run_finish(run_id=run_id)


def _score(*, run_id: int) -> None:
    run = Run.objects.get(pk=run_id)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    problem_ids: dict[str, int] = {}
    failures: dict[str, Counter[str]] = defaultdict(Counter)
    rows = (
        Sample.objects.filter(run=run)
        .exclude(status="pending")
        .values_list("task_id", "variant__problem_id", "status", "error_type", "message")
    )
    for task_id, problem_id, status, error_type, message in rows.iterator(chunk_size=2000):
        counts[task_id][status] += 1
        problem_ids[task_id] = problem_id
        if status != "passed":
            first_line = (message or "").strip().splitlines()[:1]
            failures[task_id][f"{error_type or status}: {first_line[0] if first_line else ''}"] += 1

    task_ids = sorted(counts, key=problem_order)
    ns = [sum(counts[t].values()) for t in task_ids]
    cs = [counts[t]["passed"] for t in task_ids]
    base_cs = base_passes(run=run, passed=dict(zip(task_ids, cs, strict=True)))
    results = []
    for task_id, n, c in zip(task_ids, ns, cs, strict=True):
        results.append(ProblemResult(
            run=run, problem_id=problem_ids[task_id], task_id=task_id, n=n, c=c,
            base_c=base_cs.get(task_id),
            counts=dict(counts[task_id]),
            # The reported k only: a row that grew with n made every read of it grow too.
            pass_at_k=problem_curve(n=n, c=c),
            intervals={str(k): [round(x, 6) for x in problem_interval(n, c, k)]
                       for k in reportable_ks([n], REPORTED_KS)},
            top_failure=(failures[task_id].most_common(1)[0][0][:300]
                         if failures[task_id] else ""),
        ))
    metrics = []
    if task_ids:
        for point in curve_with_ci(ns, cs, confidence=CONFIDENCE, resamples=RESAMPLES,
                                   seed=SEED, task_ids=task_ids):
            metrics.append(RunMetric(run=run, k=point.k, value=point.value, low=point.low,
                                     high=point.high, problems=point.problems))
    digest = run_digest(run=run, task_ids=task_ids, ns=ns, cs=cs)

    def store() -> None:
        with transaction.atomic():
            ProblemResult.objects.filter(run=run).delete()
            RunMetric.objects.filter(run=run).delete()
            RunDigest.objects.filter(run=run).delete()
            ProblemResult.objects.bulk_create(results, batch_size=500)
            RunMetric.objects.bulk_create(metrics, batch_size=500)
            digest.save(force_insert=True)

    db_retry(store, what="storing a run's scores")


def base_passes(*, run: Run, passed: dict[str, int]) -> dict[str, int]:
    """For a plus run, per problem whose tests are split into base and plus, how many of its
    samples passed every base test: EvalPlus's base column, by the command line's own rule
    (`metrics_plus.passed_base`). `passed` is the samples per problem that passed outright;
    {} for any other run."""
    if run.plus_of_id is None:
        return {}
    failed = (Sample.objects.filter(run=run).exclude(status__in=("pending", "passed"))
              .only("task_id", "index", "status", "program_hash", "message", "result"))
    variants = dict(Sample.objects.filter(run=run).order_by()
                    .values_list("variant_id", "task_id").distinct())
    found: dict[str, int] = {}
    # A problem at a time: a plus set's records hold every input, large for some problems.
    for variant_id, record in (ProblemVariant.objects.filter(pk__in=list(variants))
                               .values_list("pk", "record").iterator(chunk_size=20)):
        problem = problem_from_json(record)
        if not declared_groups(problem):
            continue
        task_id = variants[variant_id]
        # A sample that passed every test passed the base ones: only the others are read.
        found[task_id] = passed.get(task_id, 0) + sum(
            passed_base(problem, sample_result(sample))
            for sample in failed.filter(variant_id=variant_id).iterator(chunk_size=200))
    return found


def problem_order(task_id: str) -> int:
    """Where a problem comes in a run's scores: its number (`HumanEval/<number>`)."""
    return int(task_id.rsplit("/", 1)[1])


def run_digest(*, run: Run, task_ids: list[str], ns: list[int], cs: list[int]) -> RunDigest:
    """What the run's pages would otherwise compute on every read, computed here as they
    compute it (`selectors.computed_pass_hat_k`, `reports.counted_failures`,
    `selectors.counted_unstable_samples`, `verified.counted_verification`), so the figures
    read are the same. The bootstrap
    draws problems by position: `task_ids` are in problem order (`HumanEval/<number>`), the
    order in which the readers load the rows."""
    pass_hat_k = curve_points(ns, cs, task_ids=task_ids, metric=ALL_OF_K)
    compile_errors, suspicious = counted_verification([run.pk]).get(run.pk, (0, 0))
    return RunDigest(
        run=run,
        pass_hat_k=[[p["k"], p["value"], p["low"], p["high"]] for p in pass_hat_k],
        failures=[list(row) for row in counted_failures(run=run)],
        unstable=counted_unstable_samples(run=run),
        compile_errors=compile_errors,
        suspicious=suspicious,
    )


def scored_run_digest(*, run: Run) -> RunDigest:
    """`run_digest` of a scored run, unsaved, from the counts its scores were stored with
    (its `ProblemResult` rows, in `_score`'s order): the digest `_score` would have stored
    beside them, for a run scored before digests existed (`manage.py digest_backfill`)."""
    rows = sorted(ProblemResult.objects.filter(run=run).values_list("task_id", "n", "c"),
                  key=lambda row: problem_order(row[0]))
    return run_digest(run=run, task_ids=[task_id for task_id, _n, _c in rows],
                      ns=[n for _task_id, n, _c in rows], cs=[c for _task_id, _n, c in rows])


@dataclass(frozen=True)
class DigestOutcome:
    stored: bool
    note: str  # what was done, or why nothing was


def run_digest_backfill(*, run_id: int, replace: bool) -> DigestOutcome:
    """Store the digest of finished run `run_id`, computed by `_score`'s own function from
    its stored scores; with `replace`, over the one it has.

    Safe beside workers that score runs: the digest is computed without a lock, then stored
    under the run's row lock only if the run is still finished and its scores are still the
    ones it was computed from. A run scored again meanwhile (resumed, retried) got a fresh
    digest from `_score` with its new scores, and keeps it."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return DigestOutcome(stored=False, note="deleted meanwhile")
    if run.status != Run.Status.FINISHED:
        return DigestOutcome(stored=False, note=f"not finished (it is {run.status})")
    if not replace and RunDigest.objects.filter(run_id=run_id).exists():
        return DigestOutcome(stored=False, note="has a digest already")
    # Read before the digest is computed: `_score` replaces every row when it stores new
    # scores, so the same primary keys under the lock mean the same scores as computed from.
    scores = scored_rows(run_id=run_id)
    digest = scored_run_digest(run=run)

    def store() -> DigestOutcome:
        with transaction.atomic():
            # Scoring needs the run out of `finished` (resumed, then aggregating): while this
            # lock is held it cannot leave it, so no `_score` can store over what follows.
            locked = Run.objects.select_for_update().filter(pk=run_id).only("status").first()
            if locked is None:
                return DigestOutcome(stored=False, note="deleted meanwhile")
            if locked.status != Run.Status.FINISHED:
                return DigestOutcome(stored=False,
                                     note=f"no longer finished (it is {locked.status})")
            if scored_rows(run_id=run_id) != scores:
                return DigestOutcome(stored=False, note="scored again meanwhile, with a digest")
            existing = RunDigest.objects.filter(run_id=run_id).values_list("pk", flat=True).first()
            if existing is None:
                digest.save(force_insert=True)
                return DigestOutcome(stored=True, note="stored")
            if not replace:
                return DigestOutcome(stored=False, note="a digest appeared meanwhile")
            digest.pk = existing
            digest.save(force_update=True)
            return DigestOutcome(stored=True, note="replaced")

    try:
        return db_retry(store, what=f"storing run {run_id}'s digest")
    except IntegrityError:
        # A scorer whose lease had passed may still store; its digest then stands.
        return DigestOutcome(stored=False, note="a digest appeared meanwhile")


def scored_rows(*, run_id: int) -> list[int]:
    return sorted(ProblemResult.objects.filter(run_id=run_id).values_list("pk", flat=True))


def finished_run_ids(*, lacking_digest: bool, batch_size: int) -> Iterator[int]:
    """Finished runs in id order, a batch of ids a query; the next batch starts after the
    last id seen, so a run whose digest could not be stored is not met again."""
    runs = Run.objects.filter(status=Run.Status.FINISHED)
    if lacking_digest:
        runs = runs.filter(digest__isnull=True)
    last = 0
    while True:
        batch = list(runs.filter(pk__gt=last).order_by("pk")
                     .values_list("pk", flat=True)[:batch_size])
        yield from batch
        if len(batch) < batch_size:
            return
        last = batch[-1]
