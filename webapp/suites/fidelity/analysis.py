"""Translation fidelity: where a variant of the same problems (a translation, another
programming language, another dataset's copy) changes a model's outcome.

The analysis is pure: it takes one table per variant, {`HumanEval/N`: (n, c)}, and needs no
database, so a suite's runs, any chosen runs and hand-made tables all go through it. The
statistics are `evaluator.metrics`' own.

For every pair of variants, over the problems both have:
- a paired test over problems: McNemar's exact test when both have one sample per problem,
  else the sign-flip test on the per-problem differences of c / n; Holm's correction over
  the pairs; the difference in pass@1 with a paired bootstrap interval;
- on each problem, Fisher's exact test of the two variants' passes and fails when it can
  say anything (more than one sample on one side at least); Holm's correction over all
  those per-problem tests.

A problem is *flagged* in a variant (`FLAG_RULE`, shown on the page) when that variant is far
harder than the others. Across several suites (models), a problem flagged in the same
variant for every model that has it is a *translation-defect candidate*: the model did not
fail there, the variant did.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from evaluator.metrics import (
    FloatArray,
    MetricError,
    bootstrap_ci,
    fisher_combined_p,
    fisher_exact_p,
    holm_adjust,
    mcnemar_exact_p,
    sign_flip_p_columns,
)

ALPHA = 0.05
FAR_GAP = 0.5
"""How far below the other variants' median pass rate a variant must be to be flagged."""
RESAMPLES = 2000
PERMUTATIONS = 10_000
FLAG_RULE = (
    f"A problem is flagged in a variant when that variant's pass rate on it is at least "
    f"{FAR_GAP:g} below the median pass rate of the other variants that have the problem, "
    f"and, where Fisher's exact test can decide (more than one sample on a side), the "
    f"variant is significantly below a majority of those others (Holm-adjusted p < "
    f"{ALPHA:g} over all per-problem tests). With one sample per problem no per-problem "
    f"test can be significant, so the gap alone decides and the flag says so."
)


@dataclass(frozen=True)
class VariantScores:
    """One variant's per-problem counts: a run, or a hand-made table."""

    key: str
    """Identifies the variant across suites: the dataset key, `humaneval-xl/python/ru`."""
    label: str
    language: str
    natural_language: str
    dataset: str
    """The dataset's name (`humaneval-xl`), without language parts."""
    scores: Mapping[str, tuple[int, int]]
    """{task id: (n, c)}."""
    run_id: int | None = None
    dataset_id: int | None = None


@dataclass(frozen=True)
class PairTest:
    a: int
    b: int
    """Indices into `Fidelity.variants`."""
    differs_in: str
    """What separates the two: natural language, programming language, dataset, or several."""
    problems: int
    pass1_a: float
    pass1_b: float
    diff: float
    """pass@1 of A minus pass@1 of B over the shared problems."""
    low: float
    high: float
    test: str
    """"mcnemar" or "sign-flip"."""
    p: float
    p_holm: float
    harder_in_a: int
    """Shared problems on which A's pass rate is below B's."""
    harder_in_b: int

    @property
    def significant(self) -> bool:
        return self.p_holm < ALPHA


@dataclass(frozen=True)
class Flag:
    task_id: str
    variant: int
    rate: float
    others_median: float
    others: int
    tested: bool
    """Fisher's exact test could decide against at least one other variant."""
    significant_against: int
    """Other variants this one is significantly below (Holm-adjusted)."""
    p_lower: float
    """One-sided Fisher p of this variant against the others pooled: the evidence that it
    is harder, combined across suites for candidates."""
    reference: int
    """The other variant to show beside it: the best on this problem, then the closest
    (same programming language, English, same dataset)."""

    @property
    def gap(self) -> float:
        return self.others_median - self.rate


@dataclass(frozen=True)
class Fidelity:
    variants: tuple[VariantScores, ...]
    task_ids: tuple[str, ...]
    """Every problem any variant has, in HumanEval order."""
    n: FloatArray
    """P x V sample counts, 0 where the variant lacks the problem."""
    c: FloatArray
    rates: FloatArray
    """P x V pass rates c / n, NaN where the variant lacks the problem."""
    pairs: tuple[PairTest, ...]
    problem_p: dict[tuple[str, int, int], tuple[float, float]]
    """(task id, a, b) with a < b -> (Fisher p, Holm-adjusted p), for the tests that can
    decide."""
    flags: tuple[Flag, ...]
    """Most striking first: largest gap, then smallest p_lower."""
    greedy: bool
    """Every variant has one sample per problem: no per-problem test can decide."""
    alpha: float = ALPHA
    gap: float = FAR_GAP
    rule: str = FLAG_RULE

    def variant_rates(self, task_id: str) -> list[float | None]:
        row = self.task_ids.index(task_id)
        return [None if math.isnan(rate) else float(rate) for rate in self.rates[row]]

    def flags_by_variant(self) -> list[int]:
        counts = [0] * len(self.variants)
        for flag in self.flags:
            counts[flag.variant] += 1
        return counts


def task_number(task_id: str) -> int:
    """N of `HumanEval/N`; ids of another shape sort last."""
    _, _, number = task_id.rpartition("/")
    return int(number) if number.isdigit() else 10**9


def differs_in(a: VariantScores, b: VariantScores) -> str:
    parts = [name for name, same in (("natural language", a.natural_language == b.natural_language),
                                     ("programming language", a.language == b.language),
                                     ("dataset", a.dataset == b.dataset)) if not same]
    if not parts:
        return "nothing (same dataset)"
    return parts[0] if len(parts) == 1 else " and ".join(parts)


def _check_variants(variants: Sequence[VariantScores]) -> None:
    if len(variants) < 2:
        raise MetricError(f"fidelity needs at least 2 variants, got {len(variants)}")
    keys = [variant.key for variant in variants]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise MetricError(f"two runs on the same variant ({twice[0]}): keep one per variant")
    for variant in variants:
        if not variant.scores:
            raise MetricError(f"{variant.label} has no scores yet")
        for task_id, counts in variant.scores.items():
            n, c = counts
            if isinstance(n, bool) or isinstance(c, bool) or not (
                    isinstance(n, int) and isinstance(c, int)) or n < 1 or not 0 <= c <= n:
                raise MetricError(f"{variant.label}, {task_id}: counts must be whole numbers "
                                  f"with 1 <= n and 0 <= c <= n, got {counts!r}")


def _pair_tests(variants: Sequence[VariantScores], n: FloatArray, c: FloatArray,
                rates: FloatArray) -> list[PairTest]:
    count = len(variants)
    pairs = [(a, b) for a in range(count) for b in range(a + 1, count)
             if np.any((n[:, a] > 0) & (n[:, b] > 0))]
    if not pairs:
        return []
    firsts = np.array([a for a, _ in pairs])
    seconds = np.array([b for _, b in pairs])
    shared = (n[:, firsts] > 0) & (n[:, seconds] > 0)
    # Problems a pair does not share are 0 in its column: no part of its sums or its test.
    differences = np.where(shared, np.nan_to_num(rates[:, firsts] - rates[:, seconds]), 0.0)
    sampled = [i for i, (a, b) in enumerate(pairs)
               if not (np.all(n[shared[:, i], a] == 1) and np.all(n[shared[:, i], b] == 1))]
    p = np.ones(len(pairs), dtype=np.float64)
    if sampled:
        p[sampled] = sign_flip_p_columns(differences[:, sampled], permutations=PERMUTATIONS)
    raw = []
    for i, (a, b) in enumerate(pairs):
        column = differences[shared[:, i], i]
        if i not in sampled:
            ra, rb = rates[shared[:, i], a], rates[shared[:, i], b]
            p[i] = mcnemar_exact_p(int(((ra == 1) & (rb == 0)).sum()),
                                   int(((ra == 0) & (rb == 1)).sum()))
        low, high = bootstrap_ci(column, resamples=RESAMPLES)
        raw.append((a, b, column, low, high, "sign-flip" if i in sampled else "mcnemar"))
    adjusted = holm_adjust(p)
    return [
        PairTest(a=a, b=b, differs_in=differs_in(variants[a], variants[b]),
                 problems=int(column.size),
                 pass1_a=float(rates[shared[:, i], a].mean()),
                 pass1_b=float(rates[shared[:, i], b].mean()), diff=float(column.mean()),
                 low=low, high=high, test=test, p=float(p[i]), p_holm=float(adjusted[i]),
                 harder_in_a=int((column < 0).sum()), harder_in_b=int((column > 0).sum()))
        for i, (a, b, column, low, high, test) in enumerate(raw)
    ]


def _problem_tests(task_ids: Sequence[str], n: FloatArray, c: FloatArray
                   ) -> dict[tuple[str, int, int], tuple[float, float]]:
    rows, firsts, seconds = [], [], []
    count = n.shape[1]
    for a in range(count):
        for b in range(a + 1, count):
            # Two single samples give a table whose every p is 1: no test to count in Holm.
            decidable = (n[:, a] > 0) & (n[:, b] > 0) & (n[:, a] + n[:, b] > 2)
            for row in np.flatnonzero(decidable):
                rows.append(int(row))
                firsts.append(a)
                seconds.append(b)
    if not rows:
        return {}
    index = np.asarray(rows)
    a_index, b_index = np.asarray(firsts), np.asarray(seconds)
    p = fisher_exact_p(n[index, a_index].astype(np.int64), c[index, a_index].astype(np.int64),
                       n[index, b_index].astype(np.int64), c[index, b_index].astype(np.int64))
    adjusted = holm_adjust(p)
    return {(task_ids[row], a, b): (float(p[i]), float(adjusted[i]))
            for i, (row, a, b) in enumerate(zip(rows, firsts, seconds, strict=True))}


def _closeness(flagged: VariantScores, other: VariantScores) -> int:
    # The English original in the same programming language is what a translation is read
    # against; the same dataset's copy breaks ties.
    return (2 * (other.language == flagged.language) + 2 * (other.natural_language == "en")
            + (other.dataset == flagged.dataset))


def _flags(variants: Sequence[VariantScores], task_ids: Sequence[str], n: FloatArray,
           c: FloatArray, rates: FloatArray,
           problem_p: Mapping[tuple[str, int, int], tuple[float, float]]) -> list[Flag]:
    count = len(variants)
    # others[p, v, u]: u's rate on p when u is another variant that has p, else NaN; the
    # median over u is then each variant's "the others" at once.
    others_rates = np.broadcast_to(rates[:, None, :], (len(task_ids), count, count)).copy()
    others_rates[:, np.arange(count), np.arange(count)] = np.nan
    present = n > 0
    enough = present & (present.sum(axis=1) >= 2)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # rows with no other variant
        medians = np.nanmedian(others_rates, axis=2)
    far = enough & (medians - np.nan_to_num(rates, nan=1.0) >= FAR_GAP - 1e-12)
    candidates: list[tuple[int, int, float, list[int]]] = []
    for row, v in zip(*np.nonzero(far), strict=True):
        others = [u for u in np.flatnonzero(present[row]).tolist() if u != v]
        candidates.append((int(row), int(v), float(medians[row, v]), others))
    if not candidates:
        return []
    # One-sided Fisher of the variant against the others pooled, for every candidate at once.
    a_n = np.array([int(n[row, v]) for row, v, _, _ in candidates])
    a_c = np.array([int(c[row, v]) for row, v, _, _ in candidates])
    b_n = np.array([int(n[row, others].sum()) for row, _, _, others in candidates])
    b_c = np.array([int(c[row, others].sum()) for row, _, _, others in candidates])
    p_lower = fisher_exact_p(a_n, a_c, b_n, b_c, alternative="less")
    flags = []
    for i, (row, v, median, others) in enumerate(candidates):
        task_id = task_ids[row]
        tested, significant = False, 0
        for u in others:
            found = problem_p.get((task_id, min(u, v), max(u, v)))
            if found is None:
                continue
            tested = True
            if found[1] < ALPHA and rates[row, u] > rates[row, v]:
                significant += 1
        if tested and significant * 2 <= len(others):
            continue
        reference = max(others, key=lambda u: (rates[row, u],
                                               _closeness(variants[v], variants[u]), -u))
        flags.append(Flag(task_id=task_id, variant=v, rate=float(rates[row, v]),
                          others_median=median, others=len(others), tested=tested,
                          significant_against=significant, p_lower=float(p_lower[i]),
                          reference=reference))
    flags.sort(key=lambda flag: (-flag.gap, flag.p_lower, task_number(flag.task_id),
                                 flag.variant))
    return flags


def fidelity_analysis(variants: Sequence[VariantScores], *, with_pairs: bool = True
                      ) -> Fidelity:
    """Raises `MetricError` with a message for the page when the tables cannot be compared.

    `with_pairs=False` leaves out the paired tests over problems (bootstrap and sign flips,
    the costly part) when only the flags are wanted.
    """
    _check_variants(variants)
    task_ids = sorted({task for variant in variants for task in variant.scores},
                      key=lambda task: (task_number(task), task))
    row_of = {task: row for row, task in enumerate(task_ids)}
    n = np.zeros((len(task_ids), len(variants)), dtype=np.float64)
    c = np.zeros_like(n)
    for column, variant in enumerate(variants):
        for task_id, (samples, passed) in variant.scores.items():
            n[row_of[task_id], column] = samples
            c[row_of[task_id], column] = passed
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(n > 0, c / np.where(n > 0, n, 1.0), np.nan)
    if not np.any((n > 0).sum(axis=1) >= 2):
        raise MetricError("no two of these variants share a problem")
    pairs = _pair_tests(variants, n, c, rates) if with_pairs else []
    problem_p = _problem_tests(task_ids, n, c)
    flags = _flags(variants, task_ids, n, c, rates, problem_p)
    return Fidelity(variants=tuple(variants), task_ids=tuple(task_ids), n=n, c=c,
                    rates=rates, pairs=tuple(pairs), problem_p=problem_p,
                    flags=tuple(flags), greedy=bool(np.all(n[n > 0] == 1)))


# -- across suites ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CandidateEvidence:
    suite: str
    """The suite's (model's) label."""
    rate: float
    others_median: float
    p_lower: float
    reference_key: str


@dataclass(frozen=True)
class DefectCandidate:
    task_id: str
    variant_key: str
    language: str
    natural_language: str
    dataset: str
    models: int
    """Suites in which this problem is flagged in this variant: all that have it there."""
    combined_p: float
    """Fisher's combination of the suites' one-sided p-values."""
    evidence: tuple[CandidateEvidence, ...] = field(default=())

    @property
    def number(self) -> int:
        return task_number(self.task_id)


def defect_candidates(suites: Sequence[tuple[str, Fidelity]]) -> list[DefectCandidate]:
    """Problems flagged in the same variant by every suite that has that problem in that
    variant and in at least one other, strongest evidence first: the most models, then the
    smallest combined p, then HumanEval order.

    A suite that has the problem in the variant without flagging it vetoes the candidate:
    one model that does as well there as elsewhere shows the variant is solvable.
    """
    flagged: dict[tuple[str, str], list[tuple[str, Fidelity, Flag]]] = {}
    covering: dict[tuple[str, str], int] = {}
    for label, analysis in suites:
        for flag in analysis.flags:
            key = (flag.task_id, analysis.variants[flag.variant].key)
            flagged.setdefault(key, []).append((label, analysis, flag))
        for row, task_id in enumerate(analysis.task_ids):
            present = np.flatnonzero(analysis.n[row] > 0)
            if present.size < 2:
                continue
            for column in present.tolist():
                key = (task_id, analysis.variants[column].key)
                covering[key] = covering.get(key, 0) + 1
    candidates = []
    for (task_id, variant_key), found in flagged.items():
        if len(found) < covering.get((task_id, variant_key), 0):
            continue
        first = found[0][1].variants[found[0][2].variant]
        evidence = tuple(
            CandidateEvidence(suite=label, rate=flag.rate, others_median=flag.others_median,
                              p_lower=flag.p_lower,
                              reference_key=analysis.variants[flag.reference].key)
            for label, analysis, flag in found)
        candidates.append(DefectCandidate(
            task_id=task_id, variant_key=variant_key, language=first.language,
            natural_language=first.natural_language, dataset=first.dataset,
            models=len(found),
            combined_p=fisher_combined_p([max(item.p_lower, 1e-300) for item in evidence]),
            evidence=evidence))
    candidates.sort(key=lambda item: (-item.models, item.combined_p, item.number,
                                      item.variant_key))
    return candidates
