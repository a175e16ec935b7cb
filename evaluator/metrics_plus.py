"""Base beside plus, as EvalPlus reports them, from one evaluation on a plus test set.

A plus test set holds HumanEval+'s base inputs and its extra ones. HumanEval+ (Python)
marks each call case `base` or `plus` (`CallCase.group`), and the harness copies the mark
onto each test outcome; a HumanEval-X+ file records the marks in
`Problem.extra["plus"]["groups"]`, one per check, in the order the harness reports them.
A sample passes *base* when every base test passed, and *plus* when every test passed
(base and extra, as EvalPlus's plus score counts them): so plus never exceeds base.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from evaluator.metrics import PassAtK, curve_with_ci, reportable_ks
from evaluator.records import Problem, SampleResult, task_order

BASE = "base"
PLUS = "plus"
WHOLE_PROGRAM = "<whole program>"
"""The source of the outcome a harness reports for the program as a whole, not a test."""


def declared_groups(problem: Problem) -> tuple[str, ...]:
    """The group of each test of `problem` in harness order, or () when its tests are not
    split into base and plus."""
    cases = tuple(case.group for case in problem.call_cases)
    if BASE in cases:
        return cases
    plus = problem.extra.get("plus")
    groups = tuple(str(g) for g in plus.get("groups", ())) if isinstance(plus, dict) else ()
    return groups if BASE in groups else ()


def has_plus_tests(problems: Iterable[Problem]) -> bool:
    return any(declared_groups(problem) for problem in problems)


def passed_base(problem: Problem, result: SampleResult) -> bool:
    """Whether the sample passed every base test of `problem`, each found by its index. A
    base test the program never reported (it did not compile, or died first) is not
    passed; a problem without base tests counts the sample's own verdict."""
    if result.passed:
        return True
    groups = declared_groups(problem)
    passed = {test.index for test in result.tests
              if test.source != WHOLE_PROGRAM and test.status == "passed"}
    base = [index for index, group in enumerate(groups) if group == BASE]
    return bool(base) and all(index in passed for index in base)


@dataclass(frozen=True)
class BasePlus:
    """pass@k on the base tests and on base + plus, over the same problems, with the drop."""

    base: list[PassAtK]
    plus: list[PassAtK]
    problems: int

    def to_dict(self) -> dict[str, object]:
        def points(curve: list[PassAtK]) -> dict[str, dict[str, float]]:
            return {f"pass@{p.k}": {"value": p.value, "low": p.low, "high": p.high}
                    for p in curve}

        return {"problems": self.problems, "base": points(self.base),
                "plus": points(self.plus),
                "drop": {f"pass@{b.k}": b.value - p.value
                         for b, p in zip(self.base, self.plus, strict=True)}}


def base_plus_scores(counts: Mapping[str, tuple[int, int, int]], wanted: Sequence[int],
                     ) -> BasePlus | None:
    """Both curves from `{task_id: (n, passed base, passed plus)}` at the `wanted` k that
    every problem's n allows, each with the bootstrap interval of the run's own scores
    (same seed: the same resampled problems for base and plus). None without problems or
    without a reportable k."""
    tasks = sorted(counts, key=task_order)
    ns = [counts[t][0] for t in tasks]
    ks = reportable_ks(ns, wanted) if ns else []
    if not ks:
        return None
    base, plus = ([counts[t][i] for t in tasks] for i in (1, 2))
    return BasePlus(base=curve_with_ci(ns, base, ks, task_ids=tasks),
                    plus=curve_with_ci(ns, plus, ks, task_ids=tasks), problems=len(tasks))


def run_base_plus(problems: Mapping[str, Problem], results: Iterable[SampleResult],
                  wanted: Sequence[int]) -> BasePlus | None:
    """`base_plus_scores` of an evaluation's results, over the problems that have plus
    tests; None when none has."""
    counts: dict[str, tuple[int, int, int]] = {}
    for result in results:
        problem = problems.get(result.task_id)
        if problem is None or not declared_groups(problem):
            continue
        n, base, plus = counts.get(result.task_id, (0, 0, 0))
        counts[result.task_id] = (n + 1, base + passed_base(problem, result),
                                  plus + result.passed)
    return base_plus_scores(counts, wanted)
