"""Fisher's exact test per problem and Fisher's method for combining p-values, checked
against scipy on random tables and by hand on the edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.metrics import (
    MetricError,
    fisher_combined_p,
    fisher_exact_p,
    sign_flip_p,
    sign_flip_p_columns,
)

stats = pytest.importorskip("scipy.stats")


def _random_tables(rng: np.random.Generator, count: int, largest: int):
    a_n = rng.integers(1, largest + 1, count)
    b_n = rng.integers(1, largest + 1, count)
    return a_n, rng.integers(0, a_n + 1), b_n, rng.integers(0, b_n + 1)


@pytest.mark.parametrize(("alternative", "largest"), [
    ("two-sided", 5), ("two-sided", 40), ("two-sided", 200), ("less", 5), ("less", 200)])
def test_fisher_matches_scipy_on_random_tables(alternative: str, largest: int) -> None:
    rng = np.random.default_rng(largest)
    a_n, a_c, b_n, b_c = _random_tables(rng, 300, largest)
    ours = fisher_exact_p(a_n, a_c, b_n, b_c, alternative=alternative)
    for i in range(a_n.size):
        table = [[a_c[i], a_n[i] - a_c[i]], [b_c[i], b_n[i] - b_c[i]]]
        theirs = stats.fisher_exact(table, alternative=alternative).pvalue
        assert ours[i] == pytest.approx(theirs, rel=1e-9, abs=1e-14), table


def test_fisher_edge_tables() -> None:
    # Two single samples, one passing: every table is as likely as the observed one.
    assert fisher_exact_p([1], [0], [1], [1])[0] == pytest.approx(1.0)
    # Everything passes on both sides: one possible table.
    assert fisher_exact_p([7], [7], [9], [9])[0] == pytest.approx(1.0)
    # 0 of 10 against 10 of 10: 2 / C(20, 10).
    assert fisher_exact_p([10], [0], [10], [10])[0] == pytest.approx(2 / 184756, rel=1e-9)
    # One sample failing against ten passing: one-sided p is 1 / 11.
    assert fisher_exact_p([1], [0], [10], [10], alternative="less")[0] == pytest.approx(1 / 11)


def test_fisher_refuses_bad_counts() -> None:
    with pytest.raises(MetricError, match="c must be between 0 and n"):
        fisher_exact_p([3], [4], [3], [1])
    with pytest.raises(MetricError, match="n must be at least 1"):
        fisher_exact_p([0], [0], [3], [1])
    with pytest.raises(MetricError, match="differ in length"):
        fisher_exact_p([3, 3], [1, 1], [3], [1])
    with pytest.raises(MetricError, match="alternative"):
        fisher_exact_p([3], [1], [3], [1], alternative="greater")
    with pytest.raises(MetricError, match="integers"):
        fisher_exact_p([3.5], [1], [3], [1])


def test_combined_p_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    for size in (1, 2, 5, 30):
        p = rng.random(size) ** 3
        assert fisher_combined_p(p) == pytest.approx(
            stats.combine_pvalues(p, method="fisher").pvalue, rel=1e-9)


def test_combined_p_extremes() -> None:
    assert fisher_combined_p([1.0, 1.0, 1.0]) == 1.0
    tiny = fisher_combined_p([1e-300] * 40)
    assert 0.0 <= tiny < 1e-300
    with pytest.raises(MetricError):
        fisher_combined_p([])
    with pytest.raises(MetricError):
        fisher_combined_p([0.0, 0.5])
    with pytest.raises(MetricError):
        fisher_combined_p([float("nan")])


def test_sign_flip_columns_match_one_column_at_a_time() -> None:
    rng = np.random.default_rng(12)
    matrix = np.round(rng.normal(0.05, 0.3, size=(40, 5)), 2)
    matrix[rng.random(matrix.shape) < 0.3] = 0.0
    matrix[:, 0] = 0.0
    matrix[:10, 1] = [0.5, -0.2, 0.1, 0.3, 0.0, 0.0, 0.4, -0.1, 0.2, 0.6]
    matrix[10:, 1] = 0.0  # ten non-zero differences: the exact distribution
    ours = sign_flip_p_columns(matrix, permutations=20_000, seed=1)
    assert ours[0] == 1.0
    assert ours[1] == pytest.approx(sign_flip_p(matrix[:10, 1]), rel=1e-12)
    theirs = stats.permutation_test(
        (matrix[:10, 1], np.zeros(10)), lambda x, y: np.sum(x - y),
        permutation_type="samples", n_resamples=np.inf).pvalue
    assert ours[1] == pytest.approx(min(1.0, theirs), rel=1e-9)
    for column in range(2, 5):
        # Zero rows change no sum: Monte Carlo p of the column alone, within sampling error.
        alone = sign_flip_p(matrix[matrix[:, column] != 0, column], permutations=20_000)
        assert ours[column] == pytest.approx(alone, abs=0.02)
    with pytest.raises(MetricError):
        sign_flip_p_columns(np.array([1.0, 2.0]))
    with pytest.raises(MetricError):
        sign_flip_p_columns(np.array([[np.nan]]))
