"""How a run's scores are computed from its per-problem counts: one place for the
bootstrap's settings, shared by the worker that stores pass@k and the reads that derive
pass^k from the same counts."""

from __future__ import annotations

from collections.abc import Sequence

from evaluator.metrics import curve_with_ci
from webapp.runs.domain.events import PassAtKValue

RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0


def curve_points(ns: Sequence[int], cs: Sequence[int], *, task_ids: Sequence[str],
                 metric: str, ks: Sequence[int] | None = None) -> list[PassAtKValue]:
    """`metric` (pass@k or pass^k) with its bootstrap interval at each k (default 1..min
    n), as the run's stored pass@k is computed."""
    if not ns:
        return []
    return [PassAtKValue(k=point.k, value=point.value, low=point.low, high=point.high)
            for point in curve_with_ci(ns, cs, ks, confidence=CONFIDENCE, resamples=RESAMPLES,
                                       seed=SEED, task_ids=task_ids, metric=metric)]
