"""Reads for the fidelity pages: runs' scores as variant tables, the side-by-side view of a
flagged problem, and the translation-defect candidates of a dataset over the suites a
viewer may see. The analysis itself is `webapp.suites.fidelity.analysis`'s."""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from django.db.models import Max
from django.utils.safestring import SafeString

from evaluator.metrics import MetricError
from webapp.benchmarks.diffs import CodeDiff, code_diff, token_diff
from webapp.benchmarks.docstrings import doc_blocks, docstring_of
from webapp.benchmarks.highlight import Token
from webapp.benchmarks.models import Dataset, ProblemVariant
from webapp.benchmarks.selectors import RTL_LANGUAGES, RegisteredDefect, problem_defects
from webapp.runs.models import ProblemResult, Run
from webapp.runs.reads.reports import run_label
from webapp.runs.reads.selectors import Viewer, visible_runs
from webapp.suites.fidelity.analysis import (
    DefectCandidate,
    Fidelity,
    Flag,
    VariantScores,
    defect_candidates,
    fidelity_analysis,
)
from webapp.suites.models import Suite
from webapp.suites.selectors import suite_runs, visible_suites

MAX_RUNS = 24
DETAILS_SHOWN = 8
"""Flagged problems drawn side by side on the page; each of the others opens on its own."""
DIFF_CACHE_SIZE = 512
CANDIDATE_SUITES = 40
"""The newest suites a dataset page looks at: enough models for evidence, bounded work."""
MAX_WORDS = 5000


class CannotAnalyse(ValueError):
    """The runs exist and may be seen, but cannot be analysed together."""


@dataclass(frozen=True)
class RunsFidelity:
    fidelity: Fidelity
    runs: list[Run]
    """In the order of `fidelity.variants`."""
    left_out: list[tuple[Run, str]]
    """Runs not analysed, with the reason."""


def _variant(run: Run, scores: dict[str, tuple[int, int]]) -> VariantScores:
    dataset = run.dataset
    return VariantScores(key=dataset.key, label=dataset.key, language=dataset.language,
                         natural_language=dataset.natural_language, dataset=dataset.name,
                         scores=scores, run_id=run.pk, dataset_id=dataset.pk)


def _scores(run_ids: list[int]) -> dict[int, dict[str, tuple[int, int]]]:
    scores: dict[int, dict[str, tuple[int, int]]] = {run_id: {} for run_id in run_ids}
    for run_id, task_id, n, c in ProblemResult.objects.filter(run_id__in=run_ids).values_list(
            "run_id", "task_id", "n", "c"):
        scores[run_id][task_id] = (n, c)
    return scores


def _one_run_per_variant(runs: list[Run], scores: dict[int, dict[str, tuple[int, int]]]
                         ) -> tuple[list[Run], list[tuple[Run, str]]]:
    """The newest scored run of each dataset key; the others with why they were left out."""
    kept: dict[str, Run] = {}
    left_out: list[tuple[Run, str]] = []
    for run in sorted(runs, key=lambda run: (run.created_at, run.pk), reverse=True):
        if not scores[run.pk]:
            left_out.append((run, "no scores yet: it has not finished"))
        elif run.dataset.key in kept:
            left_out.append((run, f"a newer run, {run_label(kept[run.dataset.key])}, "
                                  f"covers {run.dataset.key}"))
        else:
            kept[run.dataset.key] = run
    order = {run.pk: i for i, run in enumerate(runs)}
    return sorted(kept.values(), key=lambda run: order[run.pk]), left_out


def runs_fidelity(*, runs: list[Run], with_pairs: bool = True) -> RunsFidelity:
    """Raises `CannotAnalyse` with a message for the page."""
    if len(runs) > MAX_RUNS:
        raise CannotAnalyse(f"Choose at most {MAX_RUNS} runs; {len(runs)} were chosen.")
    scores = _scores([run.pk for run in runs])
    kept, left_out = _one_run_per_variant(runs, scores)
    if len(kept) < 2:
        raise CannotAnalyse("Translation fidelity needs finished runs on at least two "
                            "variants (datasets) of the same problems.")
    try:
        fidelity = fidelity_analysis([_variant(run, scores[run.pk]) for run in kept],
                                     with_pairs=with_pairs)
    except MetricError as exc:
        raise CannotAnalyse(f"These runs cannot be analysed together: {exc}.") from None
    return RunsFidelity(fidelity=fidelity, runs=kept, left_out=left_out)


# -- one flagged problem side by side ------------------------------------------------------
_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


def _word_tokens(text: str) -> list[Token]:
    words = _WORDS.findall(text)
    if len(words) > MAX_WORDS:
        words = text.splitlines(keepends=True)
    return [Token("", word, "ws" if not word.strip() else "code") for word in words]


def word_diff(a_text: str, b_text: str) -> CodeDiff:
    """Prose compared word by word, whitespace left out of the comparison."""
    return token_diff(_word_tokens(a_text), _word_tokens(b_text), ignore_whitespace=True,
                      ignore_comments=False)


@dataclass(frozen=True)
class Pane:
    """One variant of a flagged problem, its texts drawn with the differences marked."""

    scores: VariantScores
    variant: ProblemVariant | None
    rate: float | None
    n: int
    passed: int
    prose: SafeString
    examples: SafeString
    tests: SafeString
    direction: str
    language_code: str


@dataclass(frozen=True)
class FlagDetail:
    flag: Flag
    flagged: Pane
    reference: Pane
    defects: list[RegisteredDefect]
    prose_changed: int
    examples_changed: int
    tests_changed: int
    rates: list[tuple[VariantScores, float | None]]


def _doc_parts(variant: ProblemVariant | None) -> tuple[str, str]:
    if variant is None:
        return "", ""
    blocks = doc_blocks(docstring_of(variant.prompt, variant.dataset.language))
    prose = "\n\n".join(block.text for block in blocks if block.kind == "prose")
    examples = "\n".join(block.text for block in blocks if block.kind == "code")
    return prose, examples


def _problem_variants(fidelity: Fidelity, flags: list[Flag]
                      ) -> dict[tuple[int, str], ProblemVariant]:
    dataset_ids = {variant.dataset_id for variant in fidelity.variants if variant.dataset_id}
    task_ids = {flag.task_id for flag in flags}
    found = ProblemVariant.objects.filter(
        dataset_id__in=dataset_ids, problem__task_id__in=task_ids).select_related(
        "dataset", "problem")
    return {(variant.dataset_id, variant.problem.task_id): variant for variant in found}


@dataclass(frozen=True)
class VariantDiffs:
    prose: CodeDiff
    examples: CodeDiff
    tests: CodeDiff


_diff_cache: OrderedDict[tuple[str, ...], VariantDiffs] = OrderedDict()
_diff_cache_lock = threading.Lock()


def _variant_diffs(a: ProblemVariant | None, b: ProblemVariant | None, a_language: str,
                   b_language: str) -> VariantDiffs:
    """The three diffs of two variants of a problem, cached per process by the texts they
    are made of: lexing and diffing the tests is most of the side-by-side view's cost, and
    the same problems are flagged again on every visit."""
    key = (a_language, b_language, *(v.prompt if v else "" for v in (a, b)),
           *(v.test if v else "" for v in (a, b)))
    with _diff_cache_lock:
        cached = _diff_cache.get(key)
        if cached is not None:
            _diff_cache.move_to_end(key)
            return cached
    a_prose, a_examples = _doc_parts(a)
    b_prose, b_examples = _doc_parts(b)
    diffs = VariantDiffs(
        prose=word_diff(a_prose, b_prose), examples=word_diff(a_examples, b_examples),
        tests=code_diff(a.test if a else "", a_language, b.test if b else "", b_language,
                        ignore_whitespace=True, ignore_comments=False))
    with _diff_cache_lock:
        _diff_cache[key] = diffs
        while len(_diff_cache) > DIFF_CACHE_SIZE:
            _diff_cache.popitem(last=False)
    return diffs


def flag_details(*, fidelity: Fidelity, limit: int = DETAILS_SHOWN,
                 task_id: str | None = None) -> list[FlagDetail]:
    """The first `limit` flags (or only `task_id`'s) side by side with their reference
    variant: docstring prose and examples word by word, tests token by token, and the
    registry's entries."""
    if task_id is not None:
        flags = [flag for flag in fidelity.flags if flag.task_id == task_id]
    else:
        flags = list(fidelity.flags[:limit])
    variants = _problem_variants(fidelity, flags)
    details = []
    for flag in flags:
        row = fidelity.task_ids.index(flag.task_id)
        sides = []
        for column in (flag.variant, flag.reference):
            scores = fidelity.variants[column]
            sides.append((column, scores, variants.get((scores.dataset_id or 0, flag.task_id))))
        (_, a_scores, a_variant), (_, b_scores, b_variant) = sides
        diffs = _variant_diffs(a_variant, b_variant, a_scores.language, b_scores.language)
        panes = []
        for (column, scores, variant), prose_html, examples_html, tests_html in (
                (sides[0], diffs.prose.a_html, diffs.examples.a_html, diffs.tests.a_html),
                (sides[1], diffs.prose.b_html, diffs.examples.b_html, diffs.tests.b_html)):
            rate = fidelity.rates[row, column]
            panes.append(Pane(
                scores=scores, variant=variant, rate=None if math.isnan(rate) else float(rate),
                n=int(fidelity.n[row, column]), passed=int(fidelity.c[row, column]),
                prose=prose_html, examples=examples_html,
                tests=tests_html, language_code=scores.natural_language,
                direction="rtl" if scores.natural_language in RTL_LANGUAGES else "ltr"))
        registered = problem_defects(variants=[v for v in (a_variant, b_variant) if v])
        details.append(FlagDetail(
            flag=flag, flagged=panes[0], reference=panes[1], defects=registered,
            prose_changed=diffs.prose.changed_a + diffs.prose.changed_b,
            examples_changed=diffs.examples.changed_a + diffs.examples.changed_b,
            tests_changed=diffs.tests.changed_a + diffs.tests.changed_b,
            rates=list(zip(fidelity.variants, fidelity.variant_rates(flag.task_id),
                           strict=True))))
    return details


# -- a dataset's translation-defect candidates ----------------------------------------------
@dataclass(frozen=True)
class DatasetCandidates:
    candidates: list[DefectCandidate]
    suites: int
    """Suites that have this dataset among at least two variants and were analysed."""
    skipped: list[str]


def dataset_defect_candidates(*, user: Viewer, dataset: Dataset) -> DatasetCandidates:
    """Candidates in which `dataset`'s key is the harder variant, over the newest
    `CANDIDATE_SUITES` suites the viewer may see that have a visible run on that key."""
    runs_on_key = visible_runs(user=user).filter(dataset__key=dataset.key)
    suites = list(
        visible_suites(user=user).filter(members__run__in=runs_on_key)
        .annotate(newest=Max("members__added_at")).order_by("-newest", "-pk")
        .distinct()[:CANDIDATE_SUITES])
    analysed: list[tuple[str, Fidelity]] = []
    skipped: list[str] = []
    for suite in suites:
        runs = suite_runs(user=user, suite=suite)
        try:
            found = runs_fidelity(runs=runs, with_pairs=False)
        except CannotAnalyse as exc:
            skipped.append(f"{suite.name}: {exc}")
            continue
        analysed.append((_suite_label(suite), found.fidelity))
    candidates = [candidate for candidate in defect_candidates(analysed)
                  if candidate.variant_key == dataset.key]
    return DatasetCandidates(candidates=candidates, suites=len(analysed), skipped=skipped)


def _suite_label(suite: Suite) -> str:
    return f"{suite.model_name or suite.name} (suite #{suite.pk})"


def candidate_for(*, user: Viewer, dataset: Dataset, task_id: str) -> DefectCandidate | None:
    found = dataset_defect_candidates(user=user, dataset=dataset).candidates
    return next((item for item in found if item.task_id == task_id), None)

