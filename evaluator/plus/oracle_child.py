"""Run by `oracle.py` in a child process: call a canonical solution on each input.

Reads {"code", "entry_point", "inputs"} as JSON on stdin; writes one JSON line per input,
{"ok": true, "value": <tagged>} or {"ok": false, "error": "..."}. Tuples, dicts with
non-string keys and non-finite floats are tagged so that the parent sees exactly the
Python value the solution returned.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from typing import Any


def tag(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4000:
        # Past what every language holds; only its sign matters.
        return {"__bigint__": 1 if value > 0 else -1}
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, tuple):
        return {"__tuple__": [tag(item) for item in value]}
    if isinstance(value, list):
        return [tag(item) for item in value]
    if isinstance(value, dict):
        return {"__dict__": [[tag(k), tag(v)] for k, v in value.items()]}
    raise TypeError(f"unsupported return type {type(value).__name__}")


def main() -> None:
    request = json.load(sys.stdin)
    namespace: dict[str, Any] = {"__name__": "__plus_oracle__"}
    exec(compile(request["code"], "<canonical>", "exec"), namespace)  # noqa: S102
    function = namespace[request["entry_point"]]
    out = sys.stdout
    for arguments in request["inputs"]:
        try:
            value = tag(function(*copy.deepcopy(arguments)))
            line = json.dumps({"ok": True, "value": value})
        except BaseException as exc:  # noqa: BLE001 - every failure is an answer
            line = json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]})
        out.write(line + "\n")
        out.flush()


main()
