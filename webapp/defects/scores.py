"""Defect-aware scores: a run's pass@k three ways, side by side.

- **original**: on the dataset as published, what papers report (the default);
- **patched**: with the defect registry's patches applied (`evaluator.defects`): the samples
  of each patched problem are run again on the patched problem by a background task
  (`services`), the other problems keep their verdicts;
- **excluding**: over the problems that have no registered defect.

One function, `three_way_scores`, computes the three from per-problem counts, with the
intervals computed as the run's own scores are (`webapp.runs.worker.aggregation`: the problems in
task order, the same bootstrap seed and resamples); "original" is the run's stored pass@k
itself. The run page, the leaderboard and the suite page all draw from it, through
`runs_three_way`, which keeps each run's answer per process.

Which problems a way touches comes from the registry: a problem counts as defective when an
entry names it (not its whole dataset), the entry is not `not_a_defect`, and the entry's
`detect` text, if it has one, is in this copy of the problem (otherwise the defect is not
in the data this run used). Of those, the problems whose patches apply are re-run patched;
a patch written for another copy of the data does not apply, and that problem keeps its
verdict on the patched score.

A run on a plus set (HumanEval-X+, a translated Python variant's plus set) is judged by
HumanEval+'s inputs, so the entries that concern it are those of the `plus` test set: the
defects only the plus tests show (`canonical_fails: ["plus"]`) count there and nowhere
else. An entry of kind `different_interface` is not in a plus copy whose builder left its
inputs out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict
from django.urls import reverse

from evaluator.defects import (
    INTERFACE_KIND,
    Defect,
    DefectError,
    apply_patches,
    is_plus,
    load_registry,
)
from evaluator.metrics import curve_with_ci, reportable_ks
from evaluator.records import Problem
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import dataset_problems
from webapp.defects.models import PatchedScoring
from webapp.query_params import query_choice
from webapp.runs.domain.scoring import CONFIDENCE, RESAMPLES, SEED
from webapp.runs.models import ProblemResult, Run, RunMetric

WAYS = ("original", "patched", "excluding")
WAY_LABELS = {
    "original": "Original dataset",
    "patched": "With the registry's patches",
    "excluding": "Excluding defective problems",
}
WAY_SHORT = {"original": "orig.", "patched": "patched", "excluding": "excl."}
SCORES_PARAM = "scores"

Counts = Mapping[str, tuple[int, int]]
"""task id -> (n, c): samples and passing samples of one problem."""


def query_scores(params: QueryDict) -> str:
    """The `?scores=` of a permalink: which way ranks and leads; unknown values are a 400."""
    return query_choice(params, SCORES_PARAM, WAYS, default="original")


def task_number(task_id: str) -> int:
    tail = task_id.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else 0


# -- what the registry says about a dataset --------------------------------------------------
@dataclass(frozen=True)
class DatasetDefects:
    """The registry's entries that touch one dataset's problems, by task id."""

    registry_version: str
    defective: dict[str, tuple[Defect, ...]]
    """Every problem with a registered defect in this copy: excluded from "excluding"."""
    patched: dict[str, tuple[Defect, ...]]
    """The problems whose patches apply: run again patched for "patched"."""
    unpatched: dict[str, str]
    """Problems with a patch that does not apply to this copy, and why."""
    dataset_wide: tuple[Defect, ...]
    """Entries about the whole dataset (`*`): shown, never excluded."""


def _present(defect: Defect, problem: Problem) -> bool:
    if defect.kind == INTERFACE_KIND and _interface_left_out(problem):
        return False
    if defect.detect is None:
        return True
    return defect.detect.contains in str(getattr(problem, defect.detect.field, ""))


def _interface_left_out(problem: Problem) -> bool:
    """Whether the plus builder left out of this copy the inputs on which the variant asks
    for another output (it counts them as `variant_interface`): the registry's
    `different_interface` entries are then not in its tests. A translated Python variant's
    plus set leaves none out, nor does a build older than the entry."""
    plus = problem.extra.get("plus")
    dropped = plus.get("dropped") if isinstance(plus, dict) else None
    return isinstance(dropped, dict) and bool(dropped.get("variant_interface"))


def problem_test_set(problem: Problem, tests: str) -> str:
    """The test set a run on `tests` judges `problem` by: a plus problem's tests are
    HumanEval+'s inputs (`plus`), whichever set the run names."""
    return "plus" if is_plus(problem) else tests


def defects_of_problems(problems: Mapping[str, Problem], *, tests: str = "hidden",
                        task: str = "generation") -> DatasetDefects:
    """Match the registry against the problems of one dataset (`task id -> Problem`), for
    runs on `tests` and `task`: an entry that cannot change such a run's verdicts
    (`Defect.concerns`, on the plus tests for a plus problem) leaves its problem in."""
    registry = load_registry()
    defective: dict[str, tuple[Defect, ...]] = {}
    patched: dict[str, tuple[Defect, ...]] = {}
    unpatched: dict[str, str] = {}
    dataset_wide: dict[str, Defect] = {}
    for task_id, problem in problems.items():
        found = registry.for_problem(problem)
        for defect in found:
            if defect.task_id == "*":
                dataset_wide.setdefault(defect.id, defect)
        judged_by = problem_test_set(problem, tests)
        mine = tuple(d for d in found if d.task_id == task_id
                     and d.concerns(tests=judged_by, task=task) and _present(d, problem))
        if not mine:
            continue
        defective[task_id] = mine
        with_patch = tuple(d for d in mine if d.patch is not None)
        if not with_patch:
            continue
        try:
            apply_patches(problem)
        except DefectError as exc:
            unpatched[task_id] = str(exc)
        else:
            patched[task_id] = with_patch
    return DatasetDefects(registry_version=registry.version, defective=defective,
                          patched=patched, unpatched=unpatched,
                          dataset_wide=tuple(dataset_wide.values()))


_cache: dict[tuple[int, str, str, str, str], DatasetDefects] = {}
_cache_lock = threading.Lock()


def dataset_defects(*, dataset: Dataset, tests: str = "hidden",
                    task: str = "generation") -> DatasetDefects:
    """`defects_of_problems` for a stored dataset and a run's test set and task, cached per
    process by those, the dataset's version and the registry's version (none of which
    changes what a cached answer says)."""
    key = (dataset.pk, dataset.version, load_registry().version, tests, task)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    found = defects_of_problems(dataset_problems(dataset=dataset), tests=tests, task=task)
    with _cache_lock:
        _cache[key] = found
    return found


# -- the three numbers -----------------------------------------------------------------------
@dataclass(frozen=True)
class Point:
    k: int
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class ListedProblem:
    """A problem a way patched or left out, for the legend."""

    task_id: str
    n: int
    c: int
    defects: tuple[Defect, ...]
    patched_c: int | None = None
    """Passing samples once patched (the "patched" way only)."""

    @property
    def url(self) -> str:
        return reverse("benchmarks:problem", args=[task_number(self.task_id)])


@dataclass(frozen=True)
class Way:
    key: str
    state: str
    """"ready"; for "patched" also "not_computed", "queued", "running" or "failed"."""
    points: dict[int, Point] = field(default_factory=dict)
    problems: int = 0
    listed: tuple[ListedProblem, ...] = ()
    note: str = ""
    progress: tuple[int, int] = (0, 0)
    """(samples done, samples to run) while the patched verdicts are being computed."""
    counts: Counts = field(default_factory=dict)
    """The per-problem counts this way scores (empty until it is ready)."""

    @property
    def label(self) -> str:
        return WAY_LABELS[self.key]

    @property
    def short(self) -> str:
        return WAY_SHORT[self.key]

    @property
    def summary(self) -> str:
        """One line on what this way counts, for a tooltip."""
        if self.key == "original":
            return f"All {self.problems} problems as published."
        names = ", ".join(item.task_id for item in self.listed)
        if not self.listed:
            return self.note
        if self.key == "patched":
            return f"Patched: {names}; the other problems keep their verdicts."
        return f"Left out: {names}; {self.problems} problems remain."

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    def at(self, k: int) -> Point | None:
        return self.points.get(k) if self.ready else None


@dataclass(frozen=True)
class ThreeWay:
    ways: tuple[Way, Way, Way]
    ks: tuple[int, ...]
    registry_version: str
    dataset_wide: tuple[Defect, ...]
    unpatched: dict[str, str]

    def way(self, key: str) -> Way:
        return next(way for way in self.ways if way.key == key)


def _score(counts: Counts, ks: Iterable[int]) -> dict[int, Point]:
    task_ids = sorted(counts, key=lambda t: (task_number(t), t))
    if not task_ids:
        return {}
    ns = [counts[t][0] for t in task_ids]
    wanted = reportable_ks(ns, list(ks))
    if not wanted:
        return {}
    curve = curve_with_ci(ns, [counts[t][1] for t in task_ids], wanted,
                          confidence=CONFIDENCE, resamples=RESAMPLES, seed=SEED,
                          task_ids=task_ids)
    return {p.k: Point(k=p.k, value=p.value, low=p.low, high=p.high) for p in curve}


def _patched_way(counts: Counts, defects: DatasetDefects, scoring: PatchedScoring | None,
                 ks: tuple[int, ...], original: dict[int, Point]) -> Way:
    tasks = sorted((t for t in counts if t in defects.patched), key=task_number)
    if not tasks:
        return Way(key="patched", state="ready", points=original,
                   problems=len(counts), counts=counts,
                   note="No registry patch applies to this run's problems: the same "
                        "verdicts as the original.")
    listed = [ListedProblem(task_id=t, n=counts[t][0], c=counts[t][1],
                            defects=defects.patched[t]) for t in tasks]
    if scoring is None:
        return Way(key="patched", state="not_computed", problems=len(counts),
                   listed=tuple(listed),
                   note=f"The samples of {len(tasks)} patched problem(s) must be run again.")
    if (scoring.status == PatchedScoring.Status.DONE
            and scoring.registry_version == defects.registry_version
            and sorted(scoring.patched_tasks, key=task_number) == tasks):
        merged = dict(counts)
        done = []
        for entry in listed:
            n, c = scoring.counts.get(entry.task_id, (entry.n, entry.c))
            merged[entry.task_id] = (int(n), int(c))
            done.append(ListedProblem(task_id=entry.task_id, n=entry.n, c=entry.c,
                                      defects=entry.defects, patched_c=int(c)))
        return Way(key="patched", state="ready", points=_score(merged, ks),
                   problems=len(merged), listed=tuple(done), counts=merged)
    if scoring.status == PatchedScoring.Status.DONE:
        return Way(key="patched", state="not_computed", problems=len(counts),
                   listed=tuple(listed), note=(
                       f"Computed under registry {scoring.registry_version}; the registry is "
                       f"now {defects.registry_version}: compute again."
                       if scoring.registry_version != defects.registry_version else
                       "The registry now patches other problems of this run: compute again."))
    if scoring.status == PatchedScoring.Status.FAILED or not scoring.in_progress:
        stalled = ("No worker took it; ask again." if scoring.status == PatchedScoring.Status.QUEUED
                   else "The worker computing it stopped; ask again.")
        return Way(key="patched", state="failed", problems=len(counts), listed=tuple(listed),
                   note=scoring.error or stalled)
    return Way(key="patched", state=str(scoring.status), problems=len(counts),
               listed=tuple(listed),
               progress=(scoring.samples_done, scoring.samples_total))


def three_way_scores(*, counts: Counts, defects: DatasetDefects,
                     scoring: PatchedScoring | None, ks: Iterable[int],
                     stored: Mapping[int, Point] | None = None) -> ThreeWay:
    """The three ways of one run, from its per-problem counts.

    `scoring` is the run's patched re-run, if one was asked for; `ks` the pass@k wanted
    (each way reports those its problems' n allow); `stored` the run's own pass@k as its
    aggregation stored them, which "original" then shows as they are (a way that changes
    nothing shows them too, rather than bootstrapping the same numbers again).
    """
    wanted = tuple(ks)
    reported = _score(counts, wanted) if not stored else {
        k: point for k, point in stored.items() if k in wanted}
    kept = {t: v for t, v in counts.items() if t not in defects.defective}
    left_out = tuple(
        ListedProblem(task_id=t, n=counts[t][0], c=counts[t][1], defects=defects.defective[t])
        for t in sorted((t for t in counts if t in defects.defective), key=task_number)
    )
    original = Way(key="original", state="ready", points=reported, problems=len(counts),
                   counts=counts)
    excluding = Way(key="excluding", state="ready",
                    points=_score(kept, wanted) if left_out else reported,
                    problems=len(kept), listed=left_out, counts=kept,
                    note="" if left_out else "No problem of this run has a registered "
                                             "defect: the same as the original.")
    patched = _patched_way(counts, defects, scoring, wanted, reported)
    return ThreeWay(ways=(original, patched, excluding), ks=wanted,
                    registry_version=defects.registry_version,
                    dataset_wide=defects.dataset_wide,
                    unpatched={t: why for t, why in defects.unpatched.items() if t in counts})


# -- reading runs ----------------------------------------------------------------------------
def problem_counts(*, run_ids: Iterable[int]) -> dict[int, dict[str, tuple[int, int]]]:
    """run id -> task id -> (n, c), from the runs' stored per-problem results."""
    counts: dict[int, dict[str, tuple[int, int]]] = {run_id: {} for run_id in run_ids}
    rows = ProblemResult.objects.filter(run_id__in=list(counts)).values_list(
        "run_id", "task_id", "n", "c")
    for run_id, task_id, n, c in rows:
        counts[run_id][task_id] = (n, c)
    return counts


CACHED_RUNS = 2048
_scores_cache: OrderedDict[tuple[Any, ...], ThreeWay] = OrderedDict()
_scores_lock = threading.Lock()


def _job_state(scoring: PatchedScoring | None) -> tuple[Any, ...] | None:
    """What of a patched job its way shows: asking again makes a new row, and the job moves
    on with its status, progress and end; `in_progress` turns false by time alone."""
    if scoring is None:
        return None
    return (scoring.pk, scoring.status, scoring.samples_done, scoring.finished_at,
            scoring.in_progress)


def _cache_key(run: Run, scoring: PatchedScoring | None, ks: tuple[int, ...]) -> tuple[Any, ...]:
    # A finished run's counts change only when it finishes again (a resumed run), and the
    # registry and the patched job each carry what would change their part.
    return (run.pk, run.status, run.finished_at, run.dataset.version,
            load_registry().version, _job_state(scoring), ks)


def three_way_version(*, run: Run) -> tuple[Any, ...]:
    """What a run's three ways depend on besides its own row and its dataset's version (the
    page cache's `run_version` holds those): the registry's version and the state of the
    run's patched job, read without computing any score. The job is not read where no patch
    of the registry applies to the run's dataset: the patched way is then the original."""
    if run.is_active:
        return ()
    defects = run_defects(run=run)
    if not defects.patched:
        return (defects.registry_version,)
    return (defects.registry_version,
            _job_state(PatchedScoring.objects.filter(run_id=run.pk).first()))


def runs_three_way(*, runs: Iterable[Run], ks: Iterable[int]) -> dict[int, ThreeWay]:
    """`three_way_scores` of many runs in a few queries: run id -> its three ways. Kept
    per process, so a leaderboard of many runs bootstraps each run's scores once."""
    chosen = list(runs)
    wanted = tuple(ks)
    scorings = {s.run_id: s for s in PatchedScoring.objects.filter(
        run_id__in=[run.pk for run in chosen])}
    keys = {run.pk: _cache_key(run, scorings.get(run.pk), wanted) for run in chosen}
    found: dict[int, ThreeWay] = {}
    with _scores_lock:
        for run_id, key in keys.items():
            if key in _scores_cache:
                _scores_cache.move_to_end(key)
                found[run_id] = _scores_cache[key]
    missing = [run for run in chosen if run.pk not in found]
    if not missing:
        return found
    counts = problem_counts(run_ids=[run.pk for run in missing])
    stored: dict[int, dict[int, Point]] = {run.pk: {} for run in missing}
    for metric in RunMetric.objects.filter(run_id__in=list(stored), k__in=wanted):
        stored[metric.run_id][metric.k] = Point(k=metric.k, value=metric.value,
                                                low=metric.low, high=metric.high)
    for run in missing:
        found[run.pk] = three_way_scores(counts=counts[run.pk],
                                         defects=run_defects(run=run),
                                         scoring=scorings.get(run.pk), ks=wanted,
                                         stored=stored[run.pk])
    with _scores_lock:
        for run in missing:
            _scores_cache[keys[run.pk]] = found[run.pk]
        while len(_scores_cache) > CACHED_RUNS:
            _scores_cache.popitem(last=False)
    return found


def run_defects(*, run: Run) -> DatasetDefects:
    """The registry's entries that concern `run`: its dataset's, for its test set and task."""
    options = run.options or {}
    return dataset_defects(dataset=run.dataset, tests=str(options.get("tests") or "hidden"),
                           task=str(options.get("task") or "generation"))


def run_three_way(*, run: Run, ks: Iterable[int]) -> ThreeWay:
    return runs_three_way(runs=[run], ks=ks)[run.pk]
