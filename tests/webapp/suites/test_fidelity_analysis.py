"""The fidelity analysis on hand-made tables: the paired tests and Holm against scipy, the
flag rule, the candidates across suites, and the tables it refuses."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evaluator.metrics import MetricError
from webapp.suites.fidelity.analysis import (
    FAR_GAP,
    VariantScores,
    defect_candidates,
    fidelity_analysis,
)

stats = pytest.importorskip("scipy.stats")


def variant(key: str, scores: dict[str, tuple[int, int]], *, nl: str = "en",
            language: str = "python") -> VariantScores:
    return VariantScores(key=key, label=key, language=language, natural_language=nl,
                         dataset=key.split("/")[0], scores=scores)


def tasks(count: int) -> list[str]:
    return [f"HumanEval/{i}" for i in range(count)]


def canonical(key: str, count: int, fails: tuple[int, ...] = (), **kwargs: str) -> VariantScores:
    return variant(key, {t: (1, 0 if i in fails else 1) for i, t in enumerate(tasks(count))},
                   **kwargs)


def holm_by_hand(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    adjusted, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def test_canonical_suite_flags_only_the_variant_that_fails() -> None:
    result = fidelity_analysis([
        canonical("humaneval/python/en", 10),
        canonical("mhumaneval/python/ar", 10, fails=(7,), nl="ar"),
        canonical("mhumaneval/python/ru", 10, nl="ru"),
    ])
    assert [(flag.task_id, result.variants[flag.variant].key) for flag in result.flags] == [
        ("HumanEval/7", "mhumaneval/python/ar")]
    flag = result.flags[0]
    assert (flag.rate, flag.others_median, flag.others) == (0.0, 1.0, 2)
    assert not flag.tested, "one sample per problem: no per-problem test can decide"
    assert flag.p_lower == pytest.approx(1 / 3)  # 0 of 1 against 2 of 2
    # The English original is shown beside it rather than another translation.
    assert result.variants[flag.reference].key == "humaneval/python/en"
    assert result.greedy
    assert result.problem_p == {}
    assert result.flags_by_variant() == [0, 1, 0]


def test_greedy_pairs_use_mcnemar_and_holm_over_pairs() -> None:
    rng = np.random.default_rng(5)
    count = 80
    tables = [{t: (1, int(rng.random() < rate)) for t in tasks(count)}
              for rate in (0.7, 0.5, 0.65)]
    variants = [variant(f"d{i}/python/en", table) for i, table in enumerate(tables)]
    result = fidelity_analysis(variants)
    assert len(result.pairs) == 3
    raw = []
    for pair, (a, b) in zip(result.pairs, itertools.combinations(range(3), 2), strict=True):
        assert (pair.a, pair.b, pair.test) == (a, b, "mcnemar")
        only_a = sum(tables[a][t][1] == 1 and tables[b][t][1] == 0 for t in tables[a])
        only_b = sum(tables[a][t][1] == 0 and tables[b][t][1] == 1 for t in tables[a])
        expected = stats.binomtest(only_a, only_a + only_b, 0.5).pvalue if only_a + only_b else 1
        assert pair.p == pytest.approx(expected, rel=1e-9)
        assert pair.diff == pytest.approx(np.mean([tables[a][t][1] - tables[b][t][1]
                                                   for t in tables[a]]))
        assert pair.low <= pair.diff <= pair.high
        raw.append(pair.p)
    assert [pair.p_holm for pair in result.pairs] == pytest.approx(holm_by_hand(raw))


def test_sampled_pairs_use_the_exact_sign_flip_test() -> None:
    a = variant("x/python/en", {"HumanEval/0": (10, 9), "HumanEval/1": (10, 8),
                                "HumanEval/2": (10, 10), "HumanEval/3": (10, 2)})
    b = variant("x/python/ru", {"HumanEval/0": (10, 5), "HumanEval/1": (10, 8),
                                "HumanEval/2": (10, 6), "HumanEval/3": (10, 3)}, nl="ru")
    (pair,) = fidelity_analysis([a, b]).pairs
    differences = np.array([0.4, 0.0, 0.4, -0.1])
    expected = stats.permutation_test(
        (differences, np.zeros(4)), lambda x, y: np.sum(x - y), permutation_type="samples",
        n_resamples=np.inf).pvalue
    assert pair.test == "sign-flip"
    assert pair.p == pytest.approx(min(1.0, expected), rel=1e-9)
    assert (pair.harder_in_a, pair.harder_in_b, pair.differs_in) == (1, 2, "natural language")


def test_per_problem_fisher_tests_are_holm_corrected_over_all_of_them() -> None:
    rng = np.random.default_rng(9)
    variants = []
    for nl in ("en", "ru", "ar"):
        variants.append(variant(f"d/python/{nl}", {
            t: (20, int(rng.integers(0, 21))) for t in tasks(12)}, nl=nl))
    result = fidelity_analysis(variants)
    keys = sorted(result.problem_p)
    assert len(keys) == 12 * 3
    raw = []
    for task_id, a, b in keys:
        na, ca = variants[a].scores[task_id]
        nb, cb = variants[b].scores[task_id]
        expected = stats.fisher_exact([[ca, na - ca], [cb, nb - cb]]).pvalue
        assert result.problem_p[(task_id, a, b)][0] == pytest.approx(expected, rel=1e-9)
        raw.append(result.problem_p[(task_id, a, b)][0])
    assert [result.problem_p[key][1] for key in keys] == pytest.approx(holm_by_hand(raw))


def test_a_large_gap_needs_a_significant_fisher_test_when_there_are_samples() -> None:
    few = fidelity_analysis([
        variant("d/python/en", {"HumanEval/0": (2, 2), "HumanEval/1": (2, 2)}),
        variant("d/python/ru", {"HumanEval/0": (2, 0), "HumanEval/1": (2, 2)}, nl="ru"),
    ])
    assert few.flags == (), "0 of 2 against 2 of 2 is not significant: no flag"
    many = fidelity_analysis([
        variant("d/python/en", {"HumanEval/0": (50, 48), "HumanEval/1": (50, 40)}),
        variant("d/python/ru", {"HumanEval/0": (50, 3), "HumanEval/1": (50, 41)}, nl="ru"),
    ])
    (flag,) = many.flags
    assert (flag.task_id, flag.variant, flag.tested, flag.significant_against) == (
        "HumanEval/0", 1, True, 1)
    assert flag.gap == pytest.approx(0.9)


def test_the_gap_is_measured_against_the_median_of_the_others() -> None:
    # Arabic fails; of the other three one also fails, so their median is still 1.
    rows = {"en": 1, "ru": 1, "ar": 0, "zh": 0}
    result = fidelity_analysis([variant(f"d/python/{nl}", {"HumanEval/0": (1, c),
                                                          "HumanEval/1": (1, 1)}, nl=nl)
                                for nl, c in rows.items()])
    # For ar the others are en, ru, zh (median 1); for zh they are en, ru, ar (median 1).
    assert sorted(result.variants[flag.variant].key for flag in result.flags) == [
        "d/python/ar", "d/python/zh"]
    just_under = fidelity_analysis([
        variant("d/python/en", {"HumanEval/0": (10, 10)}),
        variant("d/python/ru", {"HumanEval/0": (10, 6)}, nl="ru")])
    assert FAR_GAP > 1.0 - 0.6
    assert just_under.flags == ()


def test_candidates_need_every_suite_that_has_the_variant() -> None:
    def suite(ar_fails: tuple[int, ...], ru_fails: tuple[int, ...] = ()):
        return fidelity_analysis([
            canonical("he/python/en", 6), canonical("m/python/ar", 6, ar_fails, nl="ar"),
            canonical("m/python/ru", 6, ru_fails, nl="ru")], with_pairs=False)

    found = defect_candidates([("model-a", suite((1, 4), (2,))),
                               ("model-b", suite((1, 4, 5))),
                               ("model-c", suite((1,)))])
    assert [(c.task_id, c.variant_key, c.models) for c in found] == [
        ("HumanEval/1", "m/python/ar", 3)], "4 is vetoed by model-c, 2 and 5 by the others"
    (candidate,) = found
    assert candidate.combined_p == pytest.approx(
        stats.combine_pvalues([1 / 3] * 3, method="fisher").pvalue, rel=1e-9)
    assert [item.suite for item in candidate.evidence] == ["model-a", "model-b", "model-c"]
    # Fewer models with the same evidence each rank below more models.
    ranked = defect_candidates([("a", suite((1,), (3,))), ("b", suite((1,)))])
    assert [(c.task_id, c.models) for c in ranked] == [("HumanEval/1", 2)]
    only_one = defect_candidates([("a", suite((1,), (3,)))])
    assert [(c.task_id, c.models) for c in only_one] == [("HumanEval/1", 1),
                                                          ("HumanEval/3", 1)]


def test_variants_with_different_problem_sets_pair_on_what_they_share() -> None:
    result = fidelity_analysis([
        canonical("humaneval/python/en", 164),
        variant("humaneval-xl/python/ru", {"HumanEval/3": (1, 0), "HumanEval/8": (1, 1)},
                nl="ru")])
    (pair,) = result.pairs
    assert pair.problems == 2
    assert [flag.task_id for flag in result.flags] == ["HumanEval/3"]
    assert result.variant_rates("HumanEval/100") == [1.0, None]


@pytest.mark.parametrize(("variants", "message"), [
    ([canonical("a/python/en", 3)], "at least 2 variants"),
    ([canonical("a/python/en", 3), canonical("a/python/en", 3)], "same variant"),
    ([canonical("a/python/en", 3), variant("b/python/en", {})], "no scores"),
    ([canonical("a/python/en", 3), variant("b/python/en", {"HumanEval/0": (1, 2)})],
     "0 <= c <= n"),
    ([canonical("a/python/en", 3), variant("b/python/en", {"HumanEval/0": (True, 1)})],
     "whole numbers"),
    ([canonical("a/python/en", 3), variant("b/python/en", {"HumanEval/0": (0, 0)})],
     "1 <= n"),
    ([canonical("a/python/en", 3), variant("b/python/en", {"HumanEval/99": (1, 1)})],
     "share a problem"),
])
def test_refuses_tables_that_cannot_be_compared(variants: list[VariantScores],
                                                message: str) -> None:
    with pytest.raises(MetricError, match=message):
        fidelity_analysis(variants)
