"""Run sanitized samples twice, as executed and as the model wrote them.

Sanitizing changes what runs, so a run that sanitizes must say which verdicts it changed.
`evaluate_with_raw_verdicts` adds, for every sample whose text sanitizing changed, a twin
that runs the raw text. The twin's status goes on the sample's result as `raw_status`, and
the twin itself is never reported. A twin costs one more program only for changed samples;
the engine runs each distinct program once and its result cache keeps the verdict.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace

from evaluator.engine import (
    Engine,
    EngineEvent,
    RunFinished,
    SampleFinished,
)
from evaluator.records import Problem, Sample, SampleResult, Status

__all__ = ["evaluate_with_raw_verdicts", "verdict_changed"]


def verdict_changed(result: SampleResult) -> bool:
    """Whether sanitizing turned a failure into a pass, or a pass into a failure."""
    return result.raw_status is not None and (result.raw_status == "passed") != result.passed


def evaluate_with_raw_verdicts(
    engine: Engine,
    problems: Mapping[str, Problem],
    samples: Iterable[Sample],
    *,
    cancel: threading.Event | None = None,
) -> Iterator[EngineEvent]:
    """`engine.evaluate`, with `raw_status` set on the result of every sanitized sample.

    Events keep the positions of `samples`. A sanitized sample's `sample_finished` comes
    once both of its programs are done; `run_finished` counts `samples`, while `executed`
    includes the twins that had to run.
    """
    originals = list(samples)
    count = len(originals)
    twins = [
        replace(sample, completion=sample.raw, sanitized=False, notes=())
        for sample in originals if sample.completion != sample.raw
    ]
    if not twins:
        yield from engine.evaluate(problems, originals, cancel=cancel)
        return
    # Twin positions follow the originals: the twin of originals[origin_of[k]] is at k.
    origin_of = dict(zip(
        range(count, count + len(twins)),
        (position for position, sample in enumerate(originals)
         if sample.completion != sample.raw),
        strict=True,
    ))
    sanitized = set(origin_of.values())
    waiting: dict[int, SampleResult] = {}
    raw_status: dict[int, Status] = {}
    events = engine.evaluate(problems, [*originals, *twins], cancel=cancel)
    try:
        for event in events:
            if event["type"] == "run_finished":
                # Only a cancelled run can leave a sample without its twin's verdict.
                for position in sorted(waiting):
                    yield _finished(position, waiting.pop(position))
                yield RunFinished(type="run_finished", samples=count,
                                  executed=event["executed"],
                                  deduplicated=event["deduplicated"],
                                  cache_hits=event["cache_hits"],
                                  seconds=event["seconds"])
                continue
            position = event["position"]
            if event["type"] != "sample_finished":
                if position < count:
                    yield event
                continue
            result = event["result"]
            if position >= count:
                origin = origin_of[position]
                if origin in waiting:
                    yield _finished(origin, replace(waiting.pop(origin), raw_status=result.status))
                else:
                    raw_status[origin] = result.status
            elif position not in sanitized:
                yield event
            elif position in raw_status:
                yield _finished(position, replace(result, raw_status=raw_status.pop(position)))
            else:
                waiting[position] = result
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()  # a caller that stops listening stops the engine's queued work too


def _finished(position: int, result: SampleResult) -> SampleFinished:
    return SampleFinished(type="sample_finished", position=position, result=result)
