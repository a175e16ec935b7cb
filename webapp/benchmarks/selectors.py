"""Reads for datasets and problems."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q, QuerySet

from evaluator.defects import Defect, DefectError, defects_for
from evaluator.languages.base import LanguageError
from evaluator.languages.registry import display_name, get_language, language_rank
from evaluator.records import Problem as EvaluatorProblem
from evaluator.records import RunOptions
from evaluator.variant_detection import Candidate
from webapp.benchmarks.docstrings import DocBlock, doc_blocks, docstring_of
from webapp.benchmarks.models import Dataset, Problem, ProblemVariant
from webapp.benchmarks.problem_json import problem_from_json

_problem_cache: dict[tuple[int, str], dict[str, EvaluatorProblem]] = {}
_problem_cache_lock = threading.Lock()


def dataset_list() -> QuerySet[Dataset]:
    return Dataset.objects.all()


def variant_candidates() -> list[Candidate]:
    """The newest version of every stored variant, with the ids it writes itself (its
    task ids and its source's ids), for telling from a file which variant it is for."""
    newest: dict[str, Dataset] = {}
    for dataset in Dataset.objects.order_by("-imported_at", "-pk"):
        newest.setdefault(dataset.key, dataset)
    ids: dict[int, set[str]] = {dataset.pk: set() for dataset in newest.values()}
    rows = ProblemVariant.objects.filter(dataset_id__in=ids).values_list(
        "dataset_id", "source_id", "problem__task_id")
    for dataset_id, source_id, task_id in rows:
        ids[dataset_id].update(filter(None, (source_id, task_id)))
    return [Candidate(key=d.key, name=d.name, language=d.language,
                      natural_language=d.natural_language, ids=frozenset(ids[d.pk]))
            for d in newest.values()]


def _is_number(text: str) -> bool:
    """Whether `text` is a number a database key can hold: `str.isdigit` alone would take
    "²", which `int` refuses, and a thousand digits, which PostgreSQL's bigint cannot hold."""
    return text.isdecimal() and len(text) <= 18


def dataset_lookup(*, reference: str) -> Dataset | None:
    """A dataset by id, or by key (`humaneval/python/en`, newest version) or `key@version`."""
    reference = reference.strip()
    if _is_number(reference):
        return Dataset.objects.filter(pk=int(reference)).first()
    key, _, version = reference.partition("@")
    found = Dataset.objects.filter(key=key)
    if version:
        found = found.filter(version=version)
    return found.order_by("-imported_at", "-pk").first()


def dataset_problems(*, dataset: Dataset) -> dict[str, EvaluatorProblem]:
    """The evaluator's problems of a dataset, by task id.

    Cached per process by id and version: a stored version never changes, and a worker
    evaluating many chunks of a run should not decode the same problems for each.
    """
    key = (dataset.pk, dataset.version)
    with _problem_cache_lock:
        cached = _problem_cache.get(key)
    if cached is not None:
        return cached
    problems = {}
    for record in ProblemVariant.objects.filter(dataset_id=dataset.pk).values_list(
        "record", flat=True
    ):
        problem = problem_from_json(record)
        problems[problem.task_id] = problem
    with _problem_cache_lock:
        _problem_cache[key] = problems
    return problems


def problem_variant_ids(*, dataset_id: int) -> dict[str, int]:
    """`HumanEval/N` -> ProblemVariant id, for one dataset."""
    return dict(
        ProblemVariant.objects.filter(dataset_id=dataset_id).values_list(
            "problem__task_id", "pk"
        )
    )


def problem_by_number(*, number: int) -> Problem | None:
    return Problem.objects.filter(number=number).first()


def problem_variants(*, problem: Problem) -> QuerySet[ProblemVariant]:
    return problem.variants.select_related("dataset").order_by(
        "dataset__language", "dataset__natural_language", "dataset__name", "-dataset__imported_at"
    )


# -- the problem list and the problem page ------------------------------------------------
NATURAL_LANGUAGE_NAMES = {"en": "English", "ru": "Russian", "ar": "Arabic", "zh": "Chinese",
                          "fr": "French", "de": "German", "es": "Spanish"}
NATURAL_LANGUAGE_ORDER = ("en", "ru", "ar")
RTL_LANGUAGES = frozenset({"ar", "he", "fa", "ur"})
# Which variant stands for a language or a translation when several datasets have one.
DATASET_PREFERENCE = ("humaneval", "humaneval-x", "humanevalplus", "humaneval-xl",
                      "mhumaneval", "multipl-e")


@dataclass(frozen=True)
class ProblemFilters:
    query: str = ""
    dataset: str = ""
    language: str = ""
    natural_language: str = ""


@dataclass(frozen=True)
class FilterChoices:
    datasets: list[str]
    languages: list[str]
    natural_languages: list[str]

    @property
    def language_options(self) -> list[tuple[str, str]]:
        """(name, display name) of each language, for a select box."""
        return [(language, display_name(language)) for language in self.languages]


def problem_filter_choices() -> FilterChoices:
    rows = list(Dataset.objects.values_list("name", "language", "natural_language").distinct())
    return FilterChoices(
        datasets=sorted({name for name, _, _ in rows}, key=_dataset_rank),
        languages=sorted({language for _, language, _ in rows}, key=language_rank),
        natural_languages=sorted({nl for _, _, nl in rows}, key=_natural_language_rank),
    )


def _dataset_rank(name: str) -> tuple[int, str]:
    return (DATASET_PREFERENCE.index(name) if name in DATASET_PREFERENCE else 99, name)


def _natural_language_rank(code: str) -> tuple[int, str]:
    return (NATURAL_LANGUAGE_ORDER.index(code) if code in NATURAL_LANGUAGE_ORDER else 99, code)


def problem_search(*, filters: ProblemFilters) -> QuerySet[Problem]:
    """Problems with a variant in the chosen dataset, language and natural language whose
    number, entry point or prompt matches the query."""
    variants = ProblemVariant.objects.all()
    if filters.dataset:
        variants = variants.filter(dataset__name=filters.dataset)
    if filters.language:
        variants = variants.filter(dataset__language=filters.language)
    if filters.natural_language:
        variants = variants.filter(dataset__natural_language=filters.natural_language)
    query = filters.query.strip()
    number = query.removeprefix("HumanEval/").strip()
    if _is_number(number):
        variants = variants.filter(problem__number=int(number))
    elif query:
        variants = variants.filter(Q(entry_point__icontains=query) | Q(prompt__icontains=query))
    return Problem.objects.filter(pk__in=variants.values("problem_id")).order_by("number")


@dataclass
class VariantIndex:
    entry_point: str = ""
    languages: list[str] = field(default_factory=list)
    natural_languages: list[str] = field(default_factory=list)


def problem_variant_index(*, problem_ids: list[int]) -> dict[int, VariantIndex]:
    """For each problem: an entry point, and the languages and translations it exists in."""
    index: dict[int, VariantIndex] = {}
    rows = ProblemVariant.objects.filter(problem_id__in=problem_ids).values_list(
        "problem_id", "entry_point", "dataset__name", "dataset__language",
        "dataset__natural_language",
    )
    for problem_id, entry_point, _name, language, nl in sorted(
        rows, key=lambda row: (_dataset_rank(row[2]), language_rank(row[3]))
    ):
        item = index.setdefault(problem_id, VariantIndex(entry_point=entry_point))
        if language not in item.languages:
            item.languages.append(language)
        if nl not in item.natural_languages:
            item.natural_languages.append(nl)
    for item in index.values():
        item.languages.sort(key=language_rank)
        item.natural_languages.sort(key=_natural_language_rank)
    return index


def _variant_rank(variant: ProblemVariant) -> tuple[Any, ...]:
    dataset = variant.dataset
    return (_dataset_rank(dataset.name), _natural_language_rank(dataset.natural_language),
            dataset.variant, -dataset.imported_at.timestamp())


def newest_variants(*, problem: Problem) -> list[ProblemVariant]:
    """The problem's variants, one per dataset key (the newest version), best first."""
    seen: set[str] = set()
    chosen = []
    for variant in sorted(problem_variants(problem=problem), key=_variant_rank):
        if variant.dataset.key not in seen:
            seen.add(variant.dataset.key)
            chosen.append(variant)
    return chosen


@dataclass(frozen=True)
class Docstring:
    variant: ProblemVariant
    blocks: list[DocBlock]
    direction: str


@dataclass(frozen=True)
class Translation:
    code: str
    name: str
    direction: str
    primary: Docstring
    others: list[Docstring]


def problem_translations(*, variants: list[ProblemVariant]) -> list[Translation]:
    """One column per natural language: its docstring from the preferred variant (Python
    first), and the differing docstrings of other variants in that language."""
    by_language: dict[str, list[Docstring]] = {}
    seen_text: dict[str, set[str]] = {}
    for variant in sorted(variants, key=lambda v: (language_rank(v.dataset.language),
                                                   _variant_rank(v))):
        nl = variant.dataset.natural_language
        text = docstring_of(variant.prompt, variant.dataset.language)
        if not text or text in seen_text.setdefault(nl, set()):
            continue
        seen_text[nl].add(text)
        direction = "rtl" if nl in RTL_LANGUAGES else "ltr"
        by_language.setdefault(nl, []).append(
            Docstring(variant=variant, blocks=doc_blocks(text), direction=direction))
    return [
        Translation(code=nl, name=NATURAL_LANGUAGE_NAMES.get(nl, nl),
                    direction="rtl" if nl in RTL_LANGUAGES else "ltr",
                    primary=docs[0], others=docs[1:])
        for nl, docs in sorted(by_language.items(),
                               key=lambda item: _natural_language_rank(item[0]))
    ]


@dataclass(frozen=True)
class LanguageTab:
    language: str
    name: str
    primary: ProblemVariant
    others: list[ProblemVariant]


def problem_language_tabs(*, variants: list[ProblemVariant]) -> list[LanguageTab]:
    """One tab per programming language, in the registry's order; the English variant of
    the preferred dataset leads each."""
    by_language: dict[str, list[ProblemVariant]] = {}
    for variant in sorted(variants, key=_variant_rank):
        by_language.setdefault(variant.dataset.language, []).append(variant)
    return [
        LanguageTab(language=language, name=display_name(language),
                    primary=items[0], others=items[1:])
        for language, items in sorted(by_language.items(),
                                      key=lambda item: language_rank(item[0]))
    ]


def variant_prompt(*, variant: ProblemVariant) -> str:
    """The text a solution continues, as the language's harness builds it. HumanEval-X's
    Rust prompt is only the docstring: the `use` lines and the `fn` header the solution
    continues are its declaration, which the harness puts in front of the prompt."""
    try:
        problem = problem_from_json(variant.record)
        return get_language(variant.dataset.language).prefix(problem, RunOptions())
    except (LanguageError, ValueError, KeyError, TypeError):
        # An unknown language or an unreadable record: the stored prompt as it is.
        return variant.prompt


@dataclass(frozen=True)
class RegisteredDefect:
    defect: Defect
    dataset_key: str


def problem_defects(*, variants: list[ProblemVariant]) -> list[RegisteredDefect]:
    """What the defect registry says about this problem in each of its variants."""
    found: list[RegisteredDefect] = []
    seen: set[str] = set()
    for variant in variants:
        try:
            defects = defects_for(problem_from_json(variant.record))
        except (DefectError, ValueError, TypeError, KeyError):
            continue  # A registry being edited must not take the problem page down.
        for defect in defects:
            if defect.id not in seen:
                seen.add(defect.id)
                found.append(RegisteredDefect(defect=defect, dataset_key=variant.dataset.key))
    return found
