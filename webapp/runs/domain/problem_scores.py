"""pass@k of one problem of a run, from the (n, c) its `ProblemResult` keeps.

A problem's row stores pass@k only for the reported k (`REPORTED_KS`): the whole curve,
every k up to n, would make each row grow with the run (1,000 values a problem at 1,000
samples) while the pages read one or two of them. Any k is the closed form
1 - C(n-c, k) / C(n, k) of two integers, so readers compute it, with the estimator and
the rounding that filled the stored values: the same number, whichever k a row holds
(rows from before held every k until migration 0012 cut them down).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evaluator.metrics import pass_at_k_array, reportable_ks

REPORTED_KS = (1, 10, 100)
"""The k the pages and the API report first, and the k a row stores (`selectors` hands
the name on; it is defined here so that the model needs no selector)."""
DIGITS = 6


def problem_curve(*, n: int, c: int, ks: Sequence[int] = REPORTED_KS) -> dict[str, float]:
    """The JSON a row stores: pass@k for each k of `ks` that n allows, keyed by k as text."""
    return {str(k): _rounded(pass_at_k_array([n], [c], k)[0])
            for k in reportable_ks([n], ks)}


def problems_pass_at_k(*, ns: Sequence[int], cs: Sequence[int], k: int) -> list[float | None]:
    """pass@k of each problem, in the order given; None where n < k (undefined) or k < 1."""
    if not ns or k < 1:
        return [None] * len(ns)
    n_array = np.asarray(ns, dtype=np.int64)
    enough = np.flatnonzero(n_array >= k)
    values: list[float | None] = [None] * len(ns)
    if enough.size:
        scores = pass_at_k_array(n_array[enough], np.asarray(cs, dtype=np.int64)[enough], k)
        for position, score in zip(enough.tolist(), scores.tolist(), strict=True):
            values[position] = _rounded(score)
    return values


def problem_pass_at_k(*, n: int, c: int, k: int) -> float | None:
    """pass@k of one problem; None where n < k (undefined) or k < 1."""
    (value,) = problems_pass_at_k(ns=[n], cs=[c], k=k)
    return value


def _rounded(value: float) -> float:
    return round(float(value), DIGITS)
