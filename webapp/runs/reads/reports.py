"""Reads behind the exploration pages of a run: its summary, pass@k curves, the failure
breakdown, the per-problem table, sample lists, and one sample's tests. The verdicts of
runs on one problem are read by `webapp.explore.problem_selectors`.

Every function here issues a fixed number of queries whatever the run's size: the
per-problem numbers come from `ProblemResult` and a finished run's breakdowns from its
`RunDigest` (both computed once when the run finished), a live run's breakdowns from one
grouped query, never from a query per sample.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import CharField, Count, Q, QuerySet
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from evaluator.records import STATUSES, SandboxInfo
from evaluator.sandbox.base import wall_backstop
from evaluator.sandbox.levels import level_of_backend
from webapp.query_params import BadQuery
from webapp.runs.domain.events import PassAtKValue, ProblemCount, SnapshotEvent
from webapp.runs.domain.problem_scores import problems_pass_at_k
from webapp.runs.domain.sample_rows import result_from_json, result_lookup, stored_tests
from webapp.runs.models import ProblemResult, Run, RunDigest, RunMetric, Sample
from webapp.runs.reads.char_diffs import CharDiff, char_diff
from webapp.runs.reads.selectors import REPORTED_KS, Viewer, visible_runs

TASK_ID = re.compile(r"HumanEval/\d{1,6}")
OUTPUT_SHOWN = 20_000
"""Characters of stdout / stderr / traceback shown on a sample page (they are capped when
stored too; this keeps a page readable)."""


# -- a run's summary and curves -----------------------------------------------------------
@dataclass(frozen=True)
class RunFacts:
    samples_per_task: str
    sandbox: str
    """One line: the level and backend and how they were chosen, or that nobody knows yet."""
    limits: dict[str, Any]
    duration_seconds: float | None
    largest_k: int
    sandbox_level: str = ""
    sandbox_backend: str = ""
    sandbox_chosen: str = ""
    """"requested", or `auto`'s reason; "" for results made before levels existed."""


def run_facts(*, run: Run) -> RunFacts:
    coverage = run.coverage or {}
    low, high = coverage.get("min_n"), coverage.get("max_n")
    per_task = "—" if low is None else (str(low) if low == high else f"{low}–{high}")
    # The limits every result records; the first sample to finish stands for the run, since
    # one run's options are the same for all its samples. Read through the (run,
    # finished_at) index: filtering on a JSON key would scan every sample of a big run.
    first = (Sample.objects.filter(run=run, finished_at__isnull=False)
             .order_by("finished_at").values_list("result", flat=True).first())
    sandbox = result_from_json(first).sandbox if first else None
    limits: dict[str, Any] = dict(sandbox.limits) if sandbox is not None else {}
    if not limits:
        timeout = run.options.get("timeout_seconds")
        limits = {"cpu_seconds": timeout,
                  "wall_seconds": wall_backstop(float(timeout)) if timeout else None,
                  "memory_mb": run.options.get("memory_mb")}
    # Known once a worker has finished a sample: the worker's own policy decides, so
    # the run's options (an old run's "auto") say nothing about it.
    recorded = sandbox if sandbox is not None else SandboxInfo(backend="", limits={})
    backend = str(recorded.backend or run.sandbox_backend or "")
    level = str(recorded.level or level_of_backend(backend))
    chosen = str(recorded.chosen or "")
    if not backend:
        line = "not known yet: the worker chooses it when it runs the first sample"
    else:
        line = f"{level} ({backend})" if level else backend
        if chosen:
            line += f", {chosen}"
    return RunFacts(samples_per_task=per_task, sandbox=line,
                    limits=limits,
                    duration_seconds=run.duration_seconds,
                    largest_k=int(coverage.get("max_k") or 0),
                    sandbox_level=level, sandbox_backend=backend, sandbox_chosen=chosen)


def run_live_config(*, run: Run, snapshot: SnapshotEvent, table_k: int | None,
                    watching: bool) -> dict[str, Any]:
    """What the run page's script needs to follow the run (`static/runs/run_live.js`): the
    state it was drawn from, up to event `seq`, on which the later events apply."""
    config: dict[str, Any] = {
        "run_id": run.pk,
        "ws_path": f"/ws/runs/{run.pk}/",
        "live": run.is_active and watching,
        "done": snapshot["progress"]["done"],
        "seq": snapshot["seq"],
    }
    if run.is_active:
        config.update(
            problems=[[row["task_id"], row["n"], row["c"]] for row in snapshot["problems"]],
            table_k=table_k,
            samples_per_task=int((run.coverage or {}).get("max_n") or 1),
            label=run_label(run),
            samples_url=samples_url(run),
            # Seconds since the run started, by the server's clock: the page counts on from
            # it, so a wrong clock on the viewer's machine does not matter.
            running_seconds=((timezone.now() - run.started_at).total_seconds()
                             if run.started_at else None),
        )
    return config


def run_label(run: Run) -> str:
    return f"{run.name} (#{run.pk})"


def run_curves(*, runs: list[Run],
               pass_hat_k: Mapping[int, list[PassAtKValue]] | None = None) -> list[dict[str, Any]]:
    """pass@k for k = 1…n with its bootstrap band, one entry per run that has scores, in the
    order given: the data of a Plotly chart. `pass_hat_k` (run id -> `run_pass_hat_k` with
    every k): the entries of those runs also have `pass_hat_k`, its curve in the same
    shape."""
    by_run: dict[int, dict[str, list[float]]] = {
        run.pk: {"k": [], "value": [], "low": [], "high": []} for run in runs
    }
    for run_id, k, value, low, high in RunMetric.objects.filter(
        run_id__in=list(by_run)
    ).order_by("run_id", "k").values_list("run_id", "k", "value", "low", "high"):
        series = by_run[run_id]
        series["k"].append(k)
        series["value"].append(round(value, 6))
        series["low"].append(round(low, 6))
        series["high"].append(round(high, 6))
    curves: list[dict[str, Any]] = []
    for run in runs:
        if not by_run[run.pk]["k"]:
            continue
        curve: dict[str, Any] = {"run_id": run.pk, "label": run_label(run),
                                 "url": run.get_absolute_url(), **by_run[run.pk]}
        if pass_hat_k is not None and run.pk in pass_hat_k:
            points = pass_hat_k[run.pk]
            curve["pass_hat_k"] = {
                "k": [point["k"] for point in points],
                "value": [round(point["value"], 6) for point in points],
                "low": [round(point["low"], 6) for point in points],
                "high": [round(point["high"], 6) for point in points],
            }
        curves.append(curve)
    return curves


def overlay_candidates(*, user: Viewer, run: Run, limit: int = 50) -> QuerySet[Run]:
    """Finished runs the user may see, for the "overlay other runs" picker: the same
    dataset first, then the newest."""
    return (
        visible_runs(user=user).filter(status=Run.Status.FINISHED).exclude(pk=run.pk)
        # Only what the picker shows: loading whole rows (manifests and all) for fifty runs
        # was a tenth of the run page's time.
        .select_related("dataset").only("name", "dataset", "dataset__key")
        .order_by("-created_at")[:limit]
    )


def visible_runs_by_id(*, user: Viewer, ids: list[int], parameter: str) -> list[Run]:
    """The runs named in a query parameter, in order; an id the user may not see is
    reported exactly like one that does not exist."""
    if not ids:
        return []
    found = {run.pk: run for run in visible_runs(user=user).filter(pk__in=ids)
             .select_related("dataset", "team", "owner")}
    missing = [run_id for run_id in ids if run_id not in found]
    if missing:
        raise BadQuery(parameter, f"no run {missing[0]}")
    return [found[run_id] for run_id in ids]


# -- failure breakdown ----------------------------------------------------------------------
@dataclass(frozen=True)
class FailureBar:
    status: str
    error_type: str
    count: int
    url: str

    @property
    def label(self) -> str:
        return f"{self.status}: {self.error_type}" if self.error_type else self.status


def samples_url(run: Run, **filters: str) -> str:
    query = urlencode({key: value for key, value in filters.items() if value})
    base = reverse("runs:samples", args=[run.pk])
    return f"{base}?{query}" if query else base


def run_failure_breakdown(*, run: Run, up_to_seq: int | None = None) -> list[FailureBar]:
    """Samples that did not pass, by status and error type, most frequent first; only those
    finished by event `up_to_seq` when given (a live page adds the later ones). A finished
    run's are in its digest; any other's are counted (`counted_failures`)."""
    stored = None
    if up_to_seq is None and run.status == Run.Status.FINISHED:
        stored = RunDigest.objects.filter(run=run).values_list("failures", flat=True).first()
    rows = counted_failures(run=run, up_to_seq=up_to_seq) if stored is None else stored
    return [
        FailureBar(status=status, error_type=error_type, count=count,
                   url=samples_url(run, status=status, error_type=error_type or "-"))
        for status, error_type, count in rows
    ]


def counted_failures(*, run: Run, up_to_seq: int | None = None) -> list[tuple[str, str, int]]:
    """(status, error type, samples) of `run_failure_breakdown`, by one grouped query over
    the run's samples."""
    samples = Sample.objects.filter(run=run)
    if up_to_seq is not None:
        samples = samples.filter(seq__lte=up_to_seq)
    rows = (
        samples
        .exclude(status__in=["passed", "pending"])
        .values_list("status", "error_type")
        .annotate(count=Count("id"))
        .order_by("-count", "status", "error_type")
    )
    return [(status, error_type, count) for status, error_type, count in rows]


# -- per-problem table ----------------------------------------------------------------------
PROBLEM_SORTS = ("task", "n", "passed", "pass1", "passk", "failure")
PROBLEM_SHOWS = ("all", "failing", "unsolved", "solved")


@dataclass(frozen=True)
class ProblemRow:
    number: int
    task_id: str
    n: int
    c: int
    pass1: float
    passk: float | None
    counts: dict[str, int]
    top_failure: str


@dataclass(frozen=True)
class ProblemTable:
    rows: list[ProblemRow]
    k: int | None
    """The larger reported k shown in the pass@k column (10 or 100), if n allows one."""
    total: int
    hidden: frozenset[str] = frozenset()
    """Rows of a live table that the filters hide for now: the page shows them once a
    sample that arrives makes them match (a finished table leaves them out instead)."""

    @property
    def shown(self) -> int:
        return len(self.rows) - len(self.hidden)


def live_status_counts(*, run: Run, up_to_seq: int) -> dict[str, dict[str, int]]:
    """Each problem's finished samples by status, up to event `up_to_seq`: what the status
    filter of a live table starts from. One grouped query."""
    counts: dict[str, dict[str, int]] = {}
    finished = (Sample.objects.filter(run=run, seq__isnull=False, seq__lte=up_to_seq)
                .order_by().values_list("task_id", "status").annotate(n=Count("pk")))
    for task_id, status, n in finished:
        counts.setdefault(task_id, {})[status] = n
    return counts


def evaluated_problem_rows(*, run: Run) -> list[ProblemRow]:
    """The problems that a run stopped early (cancelled, failed) did evaluate, counted from
    its finished samples: such a run has no stored scores, so pass@k is left out."""
    counts: dict[tuple[int, str], dict[str, int]] = {}
    finished = (Sample.objects.filter(run=run).exclude(status="pending").order_by()
                .values_list("variant__problem__number", "task_id", "status")
                .annotate(n=Count("pk")))
    for number, task_id, status, n in finished:
        counts.setdefault((number, task_id), {})[status] = n
    rows = []
    for (number, task_id), by_status in sorted(counts.items()):
        n, c = sum(by_status.values()), by_status.get("passed", 0)
        rows.append(ProblemRow(number=number, task_id=task_id, n=n, c=c, pass1=c / n,
                               passk=None, counts=by_status, top_failure=""))
    return rows


def problem_table_k(run: Run) -> int | None:
    """pass@10 or pass@100 when every problem has that many samples, else pass@n for the
    smallest n above 1 (pass@8 of eight samples), else none."""
    largest = int((run.coverage or {}).get("min_n") or 0)
    bigger = [k for k in REPORTED_KS if 1 < k <= largest]
    if bigger:
        return bigger[-1]
    return largest if largest > 1 else None


def run_reported_ks(run: Run) -> tuple[int, ...]:
    """The k a run's score table shows: 1, 10, 100 as n allows, and the largest k."""
    largest = int((run.coverage or {}).get("min_n") or 0)
    return tuple(sorted({*(k for k in REPORTED_KS if k <= max(1, largest)), max(1, largest)}))


def stored_problem_rows(*, run: Run, k: int | None) -> list[ProblemRow]:
    """The rows a finished run stored (`ProblemResult`), with pass@k for `k` computed from
    their (n, c), whichever k a row stores (`problem_scores`)."""
    stored = list(ProblemResult.objects.filter(run=run).values_list(
        "problem__number", "task_id", "n", "c", "counts", "top_failure"))
    ns, cs = [row[2] for row in stored], [row[3] for row in stored]
    passk = problems_pass_at_k(ns=ns, cs=cs, k=k) if k else [None] * len(stored)
    return [ProblemRow(number=number, task_id=task_id, n=n, c=c, pass1=c / n if n else 0.0,
                       passk=value, counts=counts, top_failure=top_failure.rstrip(": "))
            for (number, task_id, n, c, counts, top_failure), value
            in zip(stored, passk, strict=True)]


def run_problem_table(*, run: Run, sort: str = "task", descending: bool = False,
                      query: str = "", show: str = "all", status: str = "",
                      live: list[ProblemCount] | None = None,
                      live_statuses: dict[str, dict[str, int]] | None = None) -> ProblemTable:
    """The per-problem table; for a run still going, `live` (`run_problem_counts`) gives its
    rows so far, which the page then updates from the live events, and `live_statuses`
    (`live_status_counts`) their samples by status. A live table keeps the rows that the
    show and status filters reject, hidden, so that the page can show them when they come
    to match."""
    k = problem_table_k(run)
    if live is not None:
        statuses = live_statuses or {}
        rows = [ProblemRow(number=row["number"], task_id=row["task_id"], n=row["n"], c=row["c"],
                           pass1=row["c"] / row["n"] if row["n"] else 0.0, passk=None,
                           counts=statuses.get(row["task_id"], {}), top_failure="")
                for row in live]
    else:
        rows = stored_problem_rows(run=run, k=k)
    if not rows and run.status in (Run.Status.CANCELLED, Run.Status.FAILED):
        rows = evaluated_problem_rows(run=run)
    total = len(rows)
    needle = query.strip().lower()
    if needle:
        rows = [row for row in rows if needle in row.task_id.lower()
                or needle == str(row.number) or needle in row.top_failure.lower()]
    matching = [row for row in rows if _problem_matches(row, show=show, status=status)]
    hidden: frozenset[str] = frozenset()
    if live is not None:
        hidden = frozenset(row.task_id for row in rows) - {row.task_id for row in matching}
    else:
        rows = matching
    keys = {
        "task": lambda row: (row.number,),
        "n": lambda row: (row.n, row.number),
        "passed": lambda row: (row.c, row.number),
        "pass1": lambda row: (row.pass1, row.number),
        "passk": lambda row: (row.passk if row.passk is not None else -1.0, row.number),
        "failure": lambda row: (row.top_failure, row.number),
    }
    rows.sort(key=keys[sort], reverse=descending)
    return ProblemTable(rows=rows, k=k, total=total, hidden=hidden)


def _problem_matches(row: ProblemRow, *, show: str, status: str) -> bool:
    """The show and status filters of the per-problem table (`run_live.js` applies the
    same rules to a live table's rows)."""
    if status and row.counts.get(status, 0) <= 0:
        return False
    if show == "failing":
        return row.c < row.n
    if show == "unsolved":
        return row.c == 0
    if show == "solved":
        return row.c == row.n
    return True


# -- what sanitizing changed ----------------------------------------------------------------
SANITIZING_FILTERS = ("changed", "verdict")
"""`?sanitizing=changed`: samples whose text sanitizing changed; `verdict`: those whose
verdict it changed too (the raw text's status is `raw_status` in the stored result)."""


def _raw_status() -> Cast:
    # As plain text: lookups on a bare key transform compare JSON, not strings.
    return Cast(KT(result_lookup("raw_status")), output_field=CharField())


def _first_status() -> Cast:
    """The first attempt's status of a sample that was run twice (`SampleResult.first_status`)."""
    return Cast(KT(result_lookup("first_status")), output_field=CharField())


def _verdict_changed() -> Q:
    # SQLite gives a JSON null as the text "null": compare with statuses only.
    failing = [status for status in STATUSES if status != "passed"]
    return (Q(status="passed", raw_status__in=failing)
            | Q(raw_status="passed") & ~Q(status="passed"))


@dataclass(frozen=True)
class SanitizingSummary:
    samples: int
    changed: int
    """Samples whose text sanitizing changed."""
    recorded: int
    """Of those, the ones whose text was also run as written (older runs did not)."""
    verdicts_changed: int
    passed_only_when_sanitized: int
    failed_only_when_sanitized: int
    changed_url: str
    verdicts_url: str

    @property
    def unrecorded(self) -> int:
        return self.changed - self.recorded


def run_sanitizing(*, run: Run) -> SanitizingSummary | None:
    """How many samples and verdicts sanitizing changed; None for a run that did not
    sanitize. One grouped query."""
    if not run.options.get("sanitize"):
        return None
    rows = (Sample.objects.filter(run=run, sanitized=True).annotate(raw_status=_raw_status())
            .values("status", "raw_status").annotate(count=Count("id")).order_by())
    changed = recorded = now_pass = now_fail = 0
    for row in rows:
        changed += row["count"]
        if row["raw_status"] not in STATUSES:
            continue  # not run as written (None, or "null" from SQLite)
        recorded += row["count"]
        if (row["raw_status"] == "passed") != (row["status"] == "passed"):
            if row["status"] == "passed":
                now_pass += row["count"]
            else:
                now_fail += row["count"]
    return SanitizingSummary(
        samples=run.samples_total, changed=changed, recorded=recorded,
        verdicts_changed=now_pass + now_fail, passed_only_when_sanitized=now_pass,
        failed_only_when_sanitized=now_fail,
        changed_url=samples_url(run, sanitizing="changed"),
        verdicts_url=samples_url(run, sanitizing="verdict"),
    )


# -- samples --------------------------------------------------------------------------------
@dataclass(frozen=True)
class SampleFilters:
    status: str = ""
    error_type: str = ""
    """Exact error type; "-" means none."""
    task_id: str = ""
    sanitizing: str = ""
    """One of `SANITIZING_FILTERS`, or "" for every sample."""
    unstable: bool = False
    """Only samples whose two attempts disagreed (`SampleResult.unstable`)."""

    def as_query(self) -> dict[str, str]:
        return {key: value for key, value in (("status", self.status),
                ("error_type", self.error_type), ("task", self.task_id),
                ("sanitizing", self.sanitizing),
                ("unstable", "1" if self.unstable else "")) if value}


def check_task_id(value: str, parameter: str = "task") -> str:
    if value and not TASK_ID.fullmatch(value):
        raise BadQuery(parameter, f"expected a task id like HumanEval/0, got {value[:40]!r}")
    return value


def run_samples(*, run: Run, filters: SampleFilters) -> QuerySet[Sample]:
    samples = Sample.objects.filter(run=run)
    if filters.status:
        samples = samples.filter(status=filters.status)
    if filters.error_type == "-":
        samples = samples.filter(error_type="")
    elif filters.error_type:
        samples = samples.filter(error_type=filters.error_type)
    if filters.task_id:
        samples = samples.filter(task_id=filters.task_id)
    if filters.unstable:
        samples = samples.filter(**{result_lookup("unstable"): True})
    samples = samples.annotate(raw_status=_raw_status(), first_status=_first_status())
    if filters.sanitizing:
        samples = samples.filter(sanitized=True)
    if filters.sanitizing == "verdict":
        samples = samples.filter(_verdict_changed())
    return samples.order_by("position").only(
        "pk", "run_id", "task_id", "index", "status", "error_type", "message", "duration_ms",
        "tests_passed", "tests_total", "cached", "sanitized",
    )


@dataclass(frozen=True)
class TestRow:
    index: int
    source: str
    status: str
    expected: str | None
    actual: str | None
    error_type: str | None
    message: str | None
    duration_ms: float
    group: str
    diff: CharDiff | None


def sample_test_rows(result: Mapping[str, Any] | None) -> list[TestRow]:
    """The rows of a sample's stored result's tests (`Sample.result`; none without one)."""
    rows = []
    for test in stored_tests(result):
        expected, actual = test.expected, test.actual
        diff = None
        if test.status != "passed" and expected is not None and actual is not None:
            diff = char_diff(str(expected), str(actual))
        rows.append(TestRow(
            index=test.index, source=test.source, status=test.status, expected=expected,
            actual=actual, error_type=test.error_type, message=test.message,
            duration_ms=float(test.duration_ms or 0.0), group=test.group, diff=diff,
        ))
    return rows


@dataclass(frozen=True)
class CappedText:
    text: str
    hidden: int
    """Characters not shown."""


def capped(text: str | None, limit: int = OUTPUT_SHOWN) -> CappedText:
    text = text or ""
    return CappedText(text=text[:limit], hidden=max(0, len(text) - limit))


def sample_neighbours(*, sample: Sample) -> tuple[int | None, int | None]:
    """The previous and next sample of the same task in the same run (by completion id)."""
    same_task = Sample.objects.filter(run_id=sample.run_id, task_id=sample.task_id)
    before = same_task.filter(index__lt=sample.index).order_by("-index").values_list(
        "pk", flat=True).first()
    after = same_task.filter(index__gt=sample.index).order_by("index").values_list(
        "pk", flat=True).first()
    return before, after


def finished_runs(*, user: Viewer, limit: int) -> list[Run]:
    return list(visible_runs(user=user).filter(status=Run.Status.FINISHED)
                .select_related("dataset").order_by("-created_at")[:limit])

