"""A cancel ends `Engine.evaluate` at once: the caller (a worker holding a chunk) lets go
without waiting for the program that is running, and that program's result is dropped."""

from __future__ import annotations

import threading
import time

from evaluator.datasets import load_dataset
from evaluator.engine import CANCEL_POLL_SECONDS, Engine, EngineConfig
from evaluator.records import Sample, SampleResult

PROBLEM = load_dataset().problems[0]
SLEEP = 3.0
SLOW = ("    import time\n    if not globals().get('_slept'):\n"
        "        globals()['_slept'] = True\n"
        f"        time.sleep({SLEEP})\n    return False\n")


class DictCache:
    def __init__(self) -> None:
        self.stored: dict[str, SampleResult] = {}

    def get(self, key: str) -> SampleResult | None:
        return self.stored.get(key)

    def put(self, key: str, result: SampleResult) -> None:
        self.stored[key] = result


def test_a_cancel_ends_the_run_without_waiting_for_the_running_program() -> None:
    cache = DictCache()
    cancel = threading.Event()
    samples = [Sample(task_id=PROBLEM.task_id, index=i, raw=SLOW, completion=SLOW)
               for i in range(2)]
    engine = Engine(EngineConfig(backend="none", workers=1, dedup=False, cache=cache))
    try:
        kinds = []
        for event in engine.evaluate({PROBLEM.task_id: PROBLEM}, samples, cancel=cancel):
            kinds.append(event["type"])
            if event["type"] == "sample_started":
                cancelled_at = time.monotonic()
                cancel.set()
        ended = time.monotonic() - cancelled_at
    finally:
        engine.close()  # waits for the program still running on the pool's thread
    assert kinds == ["sample_started", "run_finished"]
    assert ended < SLEEP - 1, f"waited {ended:.1f} s for the running program"
    assert ended < CANCEL_POLL_SECONDS + 1
    assert cache.stored == {}, "a cancelled program's result is dropped"
