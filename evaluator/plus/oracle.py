"""Expected outputs: HumanEval+'s canonical Python solution, run in a child process.

The builder never runs dataset code in its own process. Each problem's solution runs in
a fresh `python -I` child (`oracle_child.py`) with limits on CPU time, address space and
wall time; it answers one JSON line per input, so a crash or a timeout part-way keeps the
answers already given and marks the rest as not computed.
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHILD = Path(__file__).resolve().parent / "oracle_child.py"


BIG_INTEGER = 2 ** 4001
"""Stands for an integer the child did not send whole (past 4000 bits): what matters is
that no language's integer types hold it."""


@dataclass(frozen=True)
class Answer:
    ok: bool
    value: Any = None
    """The returned value, with tuples as `tuple` and dicts as `dict` again."""
    error: str = ""


def _limits(cpu_seconds: int, memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))


def expected_outputs(code: str, entry_point: str, inputs: list[list[Any]], *,
                     cpu_seconds: int = 120, memory_mb: int = 2048,
                     wall_seconds: float = 300.0) -> list[Answer]:
    """One `Answer` per input: what `entry_point`, defined by `code`, returns for it."""
    request = json.dumps({"code": code, "entry_point": entry_point, "inputs": inputs})
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and script
            [sys.executable, "-I", str(CHILD)], input=request, capture_output=True,
            text=True, timeout=wall_seconds, check=False,
            preexec_fn=lambda: _limits(cpu_seconds, memory_mb))  # noqa: PLW1509
        stdout, note = done.stdout, (done.stderr.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired as exc:
        raw = exc.stdout or b""
        stdout = raw.decode() if isinstance(raw, bytes) else raw
        note = f"the canonical solution took more than {wall_seconds:g}s"
    answers = []
    for line in stdout.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            break
        if record.get("ok"):
            answers.append(Answer(True, untag(record["value"])))
        else:
            answers.append(Answer(False, error=str(record.get("error", ""))))
    missing = Answer(False, error=f"not computed: {note or 'the child stopped'}")
    return answers[:len(inputs)] + [missing] * (len(inputs) - len(answers))


def tag(value: Any) -> Any:
    """`value` as JSON can hold it; `untag` gives it back (the child's own encoding)."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4000:
        return {"__bigint__": 1 if value > 0 else -1}
    if isinstance(value, tuple):
        return {"__tuple__": [tag(item) for item in value]}
    if isinstance(value, list):
        return [tag(item) for item in value]
    if isinstance(value, dict):
        return {"__dict__": [[tag(k), tag(v)] for k, v in value.items()]}
    return value


def untag(value: Any) -> Any:
    if isinstance(value, list):
        return [untag(item) for item in value]
    if isinstance(value, dict):
        if "__tuple__" in value:
            return tuple(untag(item) for item in value["__tuple__"])
        if "__dict__" in value:
            return {_key(untag(k)): untag(v) for k, v in value["__dict__"]}
        if "__float__" in value:
            return float(value["__float__"])
        if "__bigint__" in value:
            return int(value["__bigint__"]) * BIG_INTEGER
    if isinstance(value, float) and not math.isfinite(value):
        return value
    return value


def _key(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
