"""The evaluator's `Problem` to and from the JSON kept in `ProblemVariant.record`.

JSON, not pickle: the text is readable, and loading it cannot run code. Tuples come back
as lists, so `CallCase.args` is turned back into a tuple.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from evaluator.records import CallCase, Problem


def problem_to_json(problem: Problem) -> str:
    return json.dumps(dataclasses.asdict(problem), ensure_ascii=False)


def problem_from_json(text: str) -> Problem:
    data: dict[str, Any] = json.loads(text)
    cases = tuple(
        CallCase(**{**case, "args": tuple(case.get("args", ()))})
        for case in data.pop("call_cases", ())
    )
    known = {field.name for field in dataclasses.fields(Problem)}
    return Problem(**{key: value for key, value in data.items() if key in known}, call_cases=cases)
