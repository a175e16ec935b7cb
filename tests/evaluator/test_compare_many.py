"""Comparing many runs: Holm's correction, the sign-flip test, ranks with ties, the
separating problems and the seed variance split, checked against scipy and by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from evaluator.metrics import (
    MetricError,
    compare_many,
    holm_adjust,
    mcnemar_exact_p,
    paired_comparison,
    rank_with_ties,
    seed_variance,
    separating_problems,
    sign_flip_p,
)


def greedy_runs(rng: np.random.Generator, count: int, problems: int,
                skill: list[float]) -> dict[str, dict[str, tuple[int, int]]]:
    return {f"run{r}": {f"T/{p}": (1, int(rng.random() < skill[r])) for p in range(problems)}
            for r in range(count)}


def sampled_runs(rng: np.random.Generator, count: int, problems: int, n: int,
                 shift: list[float]) -> dict[str, dict[str, tuple[int, int]]]:
    difficulty = rng.uniform(0.05, 0.95, size=problems)
    return {f"run{r}": {f"T/{p}": (n, int(rng.binomial(n, np.clip(difficulty[p] + shift[r],
                                                                    0, 1))))
                        for p in range(problems)} for r in range(count)}


# Holm


def holm_rejects(p: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's procedure as defined: walk up the sorted p-values, stop at the first that
    misses alpha / (m - j + 1)."""
    m = p.size
    rejected = np.zeros(m, dtype=bool)
    for j, index in enumerate(np.argsort(p, kind="stable")):
        if p[index] > alpha / (m - j):
            break
        rejected[index] = True
    return rejected


def test_holm_matches_textbook_values() -> None:
    # R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") -> 0.03 0.06 0.06 0.02
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # Holm (1979)-style example: five tests, adjusted values capped at 1.
    assert holm_adjust([0.2, 0.5, 0.01]) == pytest.approx([0.4, 0.5, 0.03])
    assert holm_adjust([0.6, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm_adjust([0.04]) == pytest.approx([0.04])


def test_holm_rejects_exactly_what_the_step_down_procedure_rejects() -> None:
    rng = np.random.default_rng(1979)
    for _ in range(300):
        m = int(rng.integers(1, 30))
        p = np.where(rng.random(m) < 0.5, rng.random(m) * 0.02, rng.random(m))
        adjusted = holm_adjust(p)
        assert np.all(adjusted >= p - 1e-15)
        assert np.all(adjusted <= 1.0)
        for alpha in (0.001, 0.01, 0.05, 0.1, 0.2):
            assert np.array_equal(adjusted <= alpha, holm_rejects(p, alpha)), (p, alpha)


def test_holm_is_never_weaker_than_bonferroni_and_refuses_bad_p() -> None:
    p = np.random.default_rng(3).random(12)
    assert np.all(holm_adjust(p) <= np.minimum(1, p * p.size) + 1e-15)
    with pytest.raises(MetricError):
        holm_adjust([0.1, 1.5])
    with pytest.raises(MetricError):
        holm_adjust([0.1, float("nan")])


# the paired tests


def test_mcnemar_in_the_matrix_matches_scipy_binomtest() -> None:
    rng = np.random.default_rng(2021)
    runs = greedy_runs(rng, 4, 120, [0.3, 0.35, 0.5, 0.55])
    result = compare_many(runs, resamples=200)
    assert result.test == "mcnemar"
    for i, j in itertools.combinations(range(4), 2):
        a, b = runs[f"run{i}"], runs[f"run{j}"]
        only_i = sum(a[t][1] == 1 and b[t][1] == 0 for t in a)
        only_j = sum(a[t][1] == 0 and b[t][1] == 1 for t in a)
        expected = stats.binomtest(only_i, only_i + only_j, 0.5).pvalue if only_i + only_j else 1
        assert result.p_values[i, j] == pytest.approx(expected, rel=1e-9)
        assert result.p_values[j, i] == result.p_values[i, j]


def test_sign_flip_matches_scipy_exact_permutation_test() -> None:
    rng = np.random.default_rng(7)
    for _ in range(25):
        differences = np.round(rng.normal(0.1, 0.3, size=int(rng.integers(2, 13))), 2)
        differences[rng.random(differences.size) < 0.2] = 0.0
        ours = sign_flip_p(differences)
        theirs = stats.permutation_test(
            (differences, np.zeros_like(differences)),
            lambda x, y: np.sum(x - y), permutation_type="samples",
            alternative="two-sided", n_resamples=np.inf,
        ).pvalue
        assert ours == pytest.approx(min(1.0, theirs), rel=1e-9), differences


def test_sign_flip_monte_carlo_is_close_to_scipy() -> None:
    rng = np.random.default_rng(11)
    differences = np.round(rng.normal(0.05, 0.3, size=60), 2)
    ours = sign_flip_p(differences, permutations=20_000, seed=5)
    theirs = stats.permutation_test(
        (differences, np.zeros_like(differences)), lambda x, y: np.sum(x - y),
        permutation_type="samples", n_resamples=20_000, rng=np.random.default_rng(6),
    ).pvalue
    assert ours == pytest.approx(theirs, abs=0.015)
    assert 0 < ours <= 1


def test_sign_flip_on_verdicts_is_mcnemar() -> None:
    differences = np.array([1.0] * 9 + [-1.0] * 3 + [0.0] * 20)
    assert sign_flip_p(differences) == pytest.approx(mcnemar_exact_p(9, 3), rel=1e-12)
    assert sign_flip_p(np.zeros(5)) == 1.0


# the matrix


def test_matrix_intervals_use_one_resample_for_every_pair() -> None:
    rng = np.random.default_rng(99)
    runs = sampled_runs(rng, 5, 80, 10, [0.0, 0.02, 0.1, -0.1, 0.0])
    result = compare_many(runs, resamples=500, seed=4)
    assert result.test == "sign-flip"
    for i, j in itertools.combinations(range(5), 2):
        low, high = result.diff_low[i, j], result.diff_high[i, j]
        assert low <= high
        assert result.diff_low[j, i] == pytest.approx(-high)
        assert result.diff_high[j, i] == pytest.approx(-low)
        assert result.diff[i, j] == pytest.approx(result.pass1[i] - result.pass1[j])
        alone = paired_comparison(runs[f"run{i}"], runs[f"run{j}"], resamples=500, seed=4)
        assert (low, high) == pytest.approx((alone.diff_low, alone.diff_high), abs=1e-12)
    assert np.array_equal(result.p_holm, result.p_holm.T)
    assert np.all(result.p_holm >= result.p_values - 1e-15)


def test_two_runs_agree_with_the_pairwise_comparison() -> None:
    rng = np.random.default_rng(5)
    runs = greedy_runs(rng, 2, 164, [0.4, 0.6])
    result = compare_many(runs, resamples=1000, seed=3)
    alone = paired_comparison(runs["run0"], runs["run1"], resamples=1000, seed=3)
    assert result.diff[0, 1] == pytest.approx(alone.diff, abs=1e-12)
    assert (result.diff_low[0, 1], result.diff_high[0, 1]) == pytest.approx(
        (alone.diff_low, alone.diff_high), abs=1e-12)
    assert result.p_values[0, 1] == alone.mcnemar_p
    assert result.p_holm[0, 1] == alone.mcnemar_p, "one comparison: Holm changes nothing"


def test_identical_runs_are_tied_with_p_one() -> None:
    rng = np.random.default_rng(8)
    one = sampled_runs(rng, 1, 50, 5, [0.0])["run0"]
    result = compare_many({"a": one, "b": dict(one), "c": dict(one)}, resamples=300)
    assert np.all(result.diff == 0)
    assert np.all(result.p_values == 1.0)
    assert result.ranks == (1, 1, 1)
    assert not result.separated.any()
    assert separating_problems(result) == []


def test_runs_over_different_problems_are_compared_on_the_intersection() -> None:
    a = {"T/0": (1, 1), "T/1": (1, 0), "T/2": (1, 1), "T/3": (1, 1)}
    b = {"T/1": (1, 1), "T/2": (1, 0), "T/3": (1, 1)}
    c = {"T/2": (1, 1), "T/3": (1, 0), "T/9": (1, 1)}
    result = compare_many({"a": a, "b": b, "c": c}, resamples=100)
    assert result.task_ids == ("T/2", "T/3")
    assert result.left_out == (2, 1, 1)
    assert result.pass1 == pytest.approx([1.0, 0.5, 0.5])
    with pytest.raises(MetricError, match="share no task ids"):
        compare_many({"a": {"T/0": (1, 1)}, "b": {"T/1": (1, 1)}})


@pytest.mark.parametrize("runs", [{}, {"only": {"T/0": (1, 1)}}])
def test_fewer_than_two_runs_is_an_error(runs) -> None:
    with pytest.raises(MetricError, match="at least 2 runs"):
        compare_many(runs)


def test_bad_counts_name_the_run_and_the_problem() -> None:
    with pytest.raises(MetricError, match=r"b, T/0"):
        compare_many({"a": {"T/0": (1, 1)}, "b": {"T/0": (1, 2)}})


def test_clear_differences_are_separated_and_ranked() -> None:
    rng = np.random.default_rng(12)
    runs = greedy_runs(rng, 4, 164, [0.2, 0.8, 0.8, 0.5])
    # run2 is run1 with two problems flipped to passing: close, never separated.
    runs["run2"] = dict(runs["run1"])
    flipped = [task for task, (_, c) in runs["run1"].items() if c == 0][:2]
    runs["run2"].update({task: (1, 1) for task in flipped})
    result = compare_many(runs, resamples=1000)
    assert result.order[:2] in ((1, 2), (2, 1))
    assert result.ranks[1] == result.ranks[2] == 1
    assert result.ranks[3] == 3
    assert result.ranks[0] == 4
    assert result.separated[1, 0]
    assert result.separated[0, 1]
    assert not result.separated[1, 2]


# ranks with ties


def test_ranks_group_runs_that_are_not_separated() -> None:
    apart = np.array([[0, 1, 1, 1], [1, 0, 0, 1], [1, 0, 0, 1], [1, 1, 1, 0]], dtype=bool)
    assert rank_with_ties([0.9, 0.7, 0.6, 0.2], apart) == (1, 2, 2, 4)
    assert rank_with_ties([0.2, 0.7, 0.6, 0.9], apart[::-1, ::-1]) == (4, 2, 2, 1)
    # A beats C, B is separated from neither: chaining keeps all three together.
    chain = np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]], dtype=bool)
    assert rank_with_ties([0.9, 0.8, 0.7], chain) == (1, 1, 1)
    assert rank_with_ties([0.5, 0.4], np.zeros((2, 2), dtype=bool)) == (1, 1)


def test_ranks_keep_the_promise_on_random_separations() -> None:
    rng = np.random.default_rng(31)
    for _ in range(200):
        count = int(rng.integers(2, 9))
        upper = np.triu(rng.random((count, count)) < 0.6, k=1)
        apart = upper | upper.T
        ranks = rank_with_ties(rng.random(count), apart)
        for i, j in itertools.combinations(range(count), 2):
            if not apart[i, j]:
                assert ranks[i] == ranks[j]
            if ranks[i] != ranks[j]:
                assert apart[i, j]


# separating problems


def test_separating_problems_are_those_the_top_runs_disagree_on() -> None:
    runs = {
        "best": {"T/0": (4, 4), "T/1": (4, 0), "T/2": (4, 2), "T/3": (4, 4)},
        "second": {"T/0": (4, 0), "T/1": (4, 4), "T/2": (4, 3), "T/3": (4, 4)},
        "last": {"T/0": (4, 0), "T/1": (4, 0), "T/2": (4, 0), "T/3": (4, 0)},
    }
    result = compare_many(runs, resamples=100)
    found = separating_problems(result, top=2)
    assert [row.task_id for row in found] == ["T/0", "T/1", "T/2"]
    assert found[0].spread == 1.0
    assert found[2].spread == pytest.approx(0.25)
    assert separating_problems(result, top=2, limit=1)[0].task_id == "T/0"
    with pytest.raises(MetricError):
        separating_problems(result, top=1)


# seed variance


def test_seed_split_sums_of_squares_match_scipy_one_way_anova() -> None:
    rng = np.random.default_rng(17)
    seeds = sampled_runs(rng, 4, 40, 20, [0.0, 0.03, -0.02, 0.01])
    split = seed_variance(seeds)
    x = np.array([[c / n for n, c in run.values()] for run in seeds.values()])  # S x P
    # One-way ANOVA with seeds as groups: its between-groups mean square is MS_seed.
    f_seed = stats.f_oneway(*x).statistic
    within = np.sum((x - x.mean(axis=1, keepdims=True)) ** 2) / (x.size - x.shape[0])
    assert split.seed * split.problems == pytest.approx(f_seed * within)
    f_problem = stats.f_oneway(*x.T).statistic
    within_p = np.sum((x - x.mean(axis=0, keepdims=True)) ** 2) / (x.size - x.shape[1])
    ms_problem = f_problem * within_p
    assert split.problem == pytest.approx(
        max(0.0, ms_problem - split.residual) / (split.seeds * split.problems))
    assert split.seed == pytest.approx(np.var(x.mean(axis=1), ddof=1))


def test_seed_split_is_unbiased_on_simulated_effects() -> None:
    rng = np.random.default_rng(2024)
    seeds, problems, s2_a, s2_b, s2_e = 5, 60, 0.0004, 0.0064, 0.0016
    estimates = []
    for _ in range(400):
        x = (0.5 + rng.normal(0, np.sqrt(s2_a), (seeds, 1))
             + rng.normal(0, np.sqrt(s2_b), (1, problems))
             + rng.normal(0, np.sqrt(s2_e), (seeds, problems)))
        # Counts out of 10^6 stand in for real-valued scores.
        runs = {f"s{s}": {f"T/{p}": (10**6, int(round(x[s, p] * 10**6)))
                          for p in range(problems)} for s in range(seeds)}
        split = seed_variance(runs)
        estimates.append((split.seed, split.problem))
    seed_part, problem_part = np.mean(estimates, axis=0)
    assert seed_part == pytest.approx(s2_a + s2_e / problems, rel=0.1)
    assert problem_part == pytest.approx(s2_b / problems, rel=0.1)


def test_seed_split_needs_two_seeds_and_two_problems() -> None:
    with pytest.raises(MetricError, match="at least 2 runs"):
        seed_variance({"s0": {"T/0": (1, 1)}})
    with pytest.raises(MetricError, match="2 shared problems"):
        seed_variance({"s0": {"T/0": (1, 1)}, "s1": {"T/0": (1, 0)}})
    same = seed_variance({"s0": {"T/0": (2, 1), "T/1": (2, 2)},
                          "s1": {"T/0": (2, 1), "T/1": (2, 2)}})
    assert same.seed == 0.0
    assert same.seed_share == 0.0


@pytest.mark.parametrize(
    "value", [(1, True), (1.0, 1), (1, 1, 1), ("1", "1"), (1, 10**30), 1, None])
def test_counts_must_be_pairs_of_integers(value) -> None:
    with pytest.raises(MetricError):
        compare_many({"a": {"T/0": (1, 1)}, "b": {"T/0": value}})


def test_separating_problems_with_equal_disagreement_come_in_task_number_order() -> None:
    tasks = ("HumanEval/0", "HumanEval/1", "HumanEval/103", "HumanEval/12", "HumanEval/2")
    runs = {"a": {t: (1, 1) for t in tasks}, "b": {t: (1, 0) for t in tasks}}
    found = separating_problems(compare_many(runs, resamples=50))
    assert [row.task_id for row in found] == [
        "HumanEval/0", "HumanEval/1", "HumanEval/2", "HumanEval/12", "HumanEval/103"]
