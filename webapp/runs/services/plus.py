"""Base beside plus (issue 25): a finished run scored again on a plus test set (HumanEval+,
HumanEval-X+), and the two pass@k shown side by side, as EvalPlus reports them.

The plus score is a run of its own (`Run.plus_of`), made by `services.run_copy` over the
same stored samples on the plus dataset: the evaluation's whole path (chunks, sandbox,
verdicts, scores), nothing re-judged in place. It has the base run's owner, team and
visibility. The pair is then compared on the problems both runs scored: a plus set leaves
out the problems none of whose inputs translate, and a base score over more problems
than its plus score would make the drop meaningless.

Base is EvalPlus's: the plus run's samples on the plus set's base inputs, counted when the
plus run was scored (`ProblemResult.base_c`), so base and plus come from the same verdicts
and plus never exceeds base on a problem. The base run's own score (HumanEval's `check`,
whose inputs differ from the base inputs on a few problems) is kept beside it as
`original`. A plus run scored before base counts were kept has none: its Base is the
original score, and says so (`BASE_FROM_ORIGINAL`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import cast

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet

from evaluator.metrics import ANY_OF_K
from evaluator.records import task_order
from webapp.benchmarks.models import Dataset
from webapp.runs.domain.events import PassAtKValue
from webapp.runs.domain.scoring import curve_points
from webapp.runs.models import ProblemResult, Run, Sample
from webapp.runs.reads.reports import run_reported_ks
from webapp.runs.reads.selectors import HAS_PLUS_RUNS, Viewer, may_see_run
from webapp.runs.services.reproduce import EVALUATE_DENIED, run_can_evaluate
from webapp.runs.services.writes import run_copy

PLUS_NAME = "humanevalplus"
PLUS_VARIANT = "plus-"
"""HumanEval+ is a dataset of its own; HumanEval-X+ is a variant (`plus-mini`, `plus-full`)
of HumanEval-X (`evaluator.datasets.humaneval_x`)."""
PYTHON_BASES = ("humaneval", "humaneval-x", "humaneval-xl", "mhumaneval")
"""Python benchmarks that state HumanEval's functions, whatever the prompt's natural
language (same entry points, aligned ids): HumanEval+'s tests are theirs too (issue 25)."""
ANSWERED = (Run.Status.CANCELLED, Run.Status.FAILED)
"""Plus runs that do not stand: asking again makes a new one."""


def is_plus_dataset(dataset: Dataset) -> bool:
    return dataset.name == PLUS_NAME or dataset.variant.startswith(PLUS_VARIANT)


def plus_datasets(*, dataset: Dataset) -> list[Dataset]:
    """The imported plus sets of `dataset`'s problems, its own benchmark's first (a
    `plus-<set>[-<translation>]` variant of the same languages and translation: HumanEval-X+,
    or a translated Python variant's), then HumanEval+ for a Python variant of HumanEval in
    any natural language; newest import first."""
    if is_plus_dataset(dataset):
        return []
    own = [candidate for candidate in Dataset.objects.filter(
               name=dataset.name, variant__startswith=PLUS_VARIANT, language=dataset.language,
               natural_language=dataset.natural_language).order_by("-imported_at", "-pk")
           if _translation(candidate) == dataset.variant]
    if dataset.language != "python" or dataset.name not in PYTHON_BASES:
        return own
    return own + list(Dataset.objects.filter(name=PLUS_NAME, language="python")
                      .order_by("-imported_at", "-pk"))


def _translation(plus: Dataset) -> str:
    """The base variant a `plus-<set>[-<translation>]` variant was built from ("" for none)."""
    parts = plus.variant.split("-", 2)
    return parts[2] if len(parts) == 3 else ""


def plus_refusal(*, user: Viewer, run: Run,
                 datasets: Callable[[], list[Dataset]] | None = None) -> str | None:
    """Why `user` may not have `run` scored on plus tests now, or None. `datasets` gives
    `plus_datasets` of the run's dataset, read only if the answer depends on it."""
    if not run_can_evaluate(user=user, run=run):
        return EVALUATE_DENIED
    if run.reproduction_of_id is not None or run.plus_of_id is not None:
        return "This run re-evaluates another one; score the original run on plus tests."
    if run.status != Run.Status.FINISHED:
        return "Only a finished run can be scored on plus tests: its base score comes first."
    if not (datasets or partial(plus_datasets, dataset=run.dataset))():
        return (f"No plus test set of {run.dataset.key} is imported (HumanEval+ for Python, "
                "HumanEval-X+ built by `python -m evaluator datasets build-plus`).")
    return None


def _chosen(*, run: Run, dataset_id: int | None) -> Dataset:
    candidates = plus_datasets(dataset=run.dataset)
    if dataset_id is None:
        return candidates[0]
    for candidate in candidates:
        if candidate.pk == dataset_id:
            return candidate
    raise ValidationError({"dataset": f"Dataset {dataset_id} is not a plus test set of "
                                      f"{run.dataset.key}; choose one of "
                                      f"{[c.pk for c in candidates]}."})


def run_score_on_plus(*, user: Viewer, run: Run, dataset_id: int | None = None
                      ) -> tuple[Run, bool]:
    """(the plus run, whether it was made now): a new run of `run`'s samples on the plus
    set `dataset_id` (the newest imported by default), or the one that stands already."""
    refusal = plus_refusal(user=user, run=run)
    if refusal == EVALUATE_DENIED:
        raise PermissionDenied(refusal)
    if refusal is not None:
        raise ValidationError(refusal)
    dataset = _chosen(run=run, dataset_id=dataset_id)
    with transaction.atomic():
        # Two requests at once make one plus run: the second finds the first's.
        Run.objects.select_for_update().filter(pk=run.pk).first()
        standing = (run.plus_runs.filter(dataset=dataset, deleted_at__isnull=True)
                    .exclude(status__in=ANSWERED).order_by("-pk").first())
        if standing is not None:
            return standing, False
        if not Sample.objects.filter(run=run,
                                     variant__problem__variants__dataset=dataset).exists():
            raise ValidationError({"dataset": f"{dataset.key} has none of this run's "
                                              "problems."})
        # The base run's owner, whoever asked: the plus score belongs with the run it scores.
        return run_copy(owner=run.owner, run=run, use_cache=run.use_cache, plus_of=run,
                        dataset=dataset), True


BASE_FROM_PLUS = "plus_base_inputs"
"""A pair's Base is the plus run's samples on the plus set's base inputs, as EvalPlus's."""
BASE_FROM_ORIGINAL = "original_tests"
"""A pair's Base is the base run's score on its dataset's own tests: the plus run has no
base counts (scored before they were kept, or its tests are not split into base and plus)."""


@dataclass(frozen=True)
class PlusScore:
    k: int
    base: PassAtKValue
    """EvalPlus's base, or the original score where the pair has no base counts
    (`PlusPair.base_source`)."""
    plus: PassAtKValue
    original: PassAtKValue
    """The base run's pass@k on its dataset's own tests (HumanEval's `check`)."""

    @property
    def drop(self) -> float:
        return self.base["value"] - self.plus["value"]


@dataclass(frozen=True)
class PlusPair:
    base: Run
    plus: Run
    problems: int
    """Problems both runs scored: the pair's scores are over these."""
    left_out: int
    """Problems of the base run without plus tests."""
    scores: list[PlusScore]
    """Empty until the plus run has finished."""
    base_source: str = BASE_FROM_PLUS
    """Where `scores`' base comes from: `BASE_FROM_PLUS` or `BASE_FROM_ORIGINAL`."""


def _counts(run: Run) -> dict[str, tuple[int, int, int | None]]:
    """(n, c, base_c) per problem, as the run's scores stored them."""
    return {task_id: (n, c, base_c) for task_id, n, c, base_c in ProblemResult.objects
            .filter(run=run).values_list("task_id", "n", "c", "base_c")}


def plus_pair(*, base: Run, plus: Run) -> PlusPair:
    """Base, plus and original pass@k with their bootstrap intervals, over the problems both
    runs scored (the same problems, in the same order, resampled alike)."""
    before = _counts(base)
    after = _counts(plus) if plus.status == Run.Status.FINISHED else {}
    shared = sorted(before.keys() & after.keys(), key=task_order)
    left_out = len(before.keys() - _plus_tasks(plus))
    if not shared:
        return PlusPair(base=base, plus=plus, problems=0, left_out=left_out, scores=[])
    smallest = min(min(before[t][0], after[t][0]) for t in shared)
    ks = [k for k in run_reported_ks(base) if k <= smallest]
    # One problem without a count would mix two sources in one figure: all or none.
    counted = all(after[t][2] is not None for t in shared)

    def curve(counts: dict[str, tuple[int, int, int | None]], passed: int
              ) -> list[PassAtKValue]:
        return curve_points([counts[t][0] for t in shared],
                            [cast(int, counts[t][passed]) for t in shared],
                            task_ids=shared, metric=ANY_OF_K, ks=ks) if ks else []

    original, on_plus = curve(before, 1), curve(after, 1)
    evalplus_base = curve(after, 2) if counted else original
    scores = [PlusScore(k=o["k"], base=b, plus=p, original=o)
              for o, b, p in zip(original, evalplus_base, on_plus, strict=True)]
    return PlusPair(base=base, plus=plus, problems=len(shared), left_out=left_out,
                    scores=scores,
                    base_source=BASE_FROM_PLUS if counted else BASE_FROM_ORIGINAL)


def _plus_tasks(plus: Run) -> set[str]:
    return set(Sample.objects.filter(run=plus).values_list("task_id", flat=True).distinct())


def run_plus_pairs(*, user: Viewer, run: Run) -> list[PlusPair]:
    """Every plus score of `run` that `user` may see, newest first; for a plus run, its
    pair with its base run."""
    # Read plainly, then each run's permission decided on its row (`may_see_run`): most
    # runs have no plus run, and building `visible_runs`' query cost more than that.
    if run.plus_of_id is not None:
        base = Run.objects.select_related("dataset").filter(pk=run.plus_of_id).first()
        if base is None or not may_see_run(user=user, run=base, reproductions=False):
            return []
        return [plus_pair(base=base, plus=run)]
    plus_runs = Run.objects.filter(plus_of=run)
    # Most runs have none: known from the run's row (`get_run_for_user`), or one cheap query
    # (loading rows costs more to build).
    if not getattr(run, HAS_PLUS_RUNS, True) or not plus_runs.exists():
        return []
    return [plus_pair(base=run, plus=plus)
            for plus in plus_runs.select_related("dataset").order_by("-pk")
            if may_see_run(user=user, run=plus, reproductions=False)]


def plus_pair_json(pair: PlusPair) -> dict[str, object]:
    """A pair as the API answers it; `scores` is empty until the plus run has finished."""
    return {
        "base_run": pair.base.pk, "plus_run": pair.plus.pk, "plus_status": pair.plus.status,
        "plus_dataset": pair.plus.dataset.key, "problems": pair.problems,
        "problems_without_plus_tests": pair.left_out, "base_source": pair.base_source,
        "scores": [{"k": score.k, "base": score.base, "plus": score.plus,
                    "original": score.original, "drop": round(score.drop, 6)}
                   for score in pair.scores],
    }


def run_plus_context(*, user: Viewer, run: Run) -> dict[str, object]:
    """What the run page's "Base and plus" section draws."""
    pairs = run_plus_pairs(user=user, run=run)
    datasets = cache(partial(plus_datasets, dataset=run.dataset))
    refusal = plus_refusal(user=user, run=run, datasets=datasets)
    return {"plus": {
        "pairs": pairs,
        "datasets": datasets() if refusal is None else [],
        "refusal": refusal,
        "shown": bool(pairs) or refusal is None,
    }}


PLUS_COLUMNS = ("base", "both")
"""A leaderboard's `tests` choice: the base scores alone, or each beside its plus score."""


def runs_plus_scores(*, runs: list[Run], scope: QuerySet[Run]) -> dict[int, PlusPair]:
    """For each of `runs` with a finished plus run in `scope` (what the viewer may see, as
    the board's runs are), its pair with the newest one."""
    ids = [run.pk for run in runs]
    newest: dict[int, Run] = {}
    for plus in (scope.filter(plus_of_id__in=ids, status=Run.Status.FINISHED)
                 .select_related("dataset").order_by("-finished_at", "-pk")):
        newest.setdefault(cast(int, plus.plus_of_id), plus)
    by_id = {run.pk: run for run in runs}
    return {pk: plus_pair(base=by_id[pk], plus=plus) for pk, plus in newest.items()}
