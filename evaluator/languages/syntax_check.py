"""What every language's syntax check shares: the limits a parser runs under, the jobs
that run it in the sandbox, and how its answer is read.

A language's `check_syntax` (`evaluator.languages.base.Language`) builds its parser's
command and hands it to `parse_batched` (a parser that takes many files at once and names
the failing ones) or `parse_by_script` (a script that prints a JSON list of answers);
`evaluator.language_check` runs those jobs in a sandboxed runner and decides from the
answers.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from evaluator.sandbox.base import SandboxLimits

__all__ = ["CHECK_LIMITS", "Answer", "RunJob", "failing_sources", "job_steps", "parse_batched",
           "parse_by_script", "step_finished", "tool_output", "tool_step", "writable"]

Answer = bool | None
"""Whether a source parses; None when its parser could not tell (it hit a limit)."""


class RunJob(Protocol):
    """Runs one runner job in a sandbox (`evaluator.sandbox.runtime.runner`)."""

    python: str
    """The interpreter inside that sandbox."""

    def __call__(self, job: dict[str, Any]) -> dict[str, Any]: ...



CHECK_LIMITS = SandboxLimits.for_timeout(10.0, memory_mb=1024, processes=64,
                                         file_size_mb=16, scratch_mb=128)
"""Each parser's limits, as for any program: a front end that needs more than this on a
completion of at most `MAX_SOURCE_CHARS` (a template or `constexpr` bomb) is stopped, and
its sources are left undecided."""
STORED_OUTPUT = 60_000
"""A little under what the runner keeps of a step's output: more means it was cut."""
_LIMIT_WORDS = ("Killed signal|out of memory|memory exhausted|OutOfMemoryError|"
                "Cannot allocate memory|cannot allocate")
"""What a parser says when it ran out of memory rather than found an error."""



def writable(source: str) -> str:
    """`source` as text a file can hold: a lone surrogate becomes U+FFFD."""
    return source.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _source_files(sources: list[str], suffix: str) -> dict[str, str]:
    return {f"s{i}{suffix}": writable(source) for i, source in enumerate(sources)}


def tool_step(argv: Sequence[str], pattern: str, *, address_space: bool = True
              ) -> dict[str, Any]:
    """A step that runs a parser and prints "status N", then only the lines of its output
    that match `pattern`: the runner keeps 64 KB of a step's output, and a parser that
    meets Python in a C++ file says far more than that, mostly notes."""
    script = (f"{shlex.join(argv)} >out.txt 2>err.txt; echo \"status $?\"; "
              f"cat out.txt err.txt | grep -E -e {shlex.quote(pattern + '|' + _LIMIT_WORDS)} "
              "| cut -c1-300; exit 0")
    return {"name": "parse", "argv": ["/bin/sh", "-c", script],
            "limits": CHECK_LIMITS.to_dict(), "address_space_limit": address_space,
            "continue_on_failure": True}


def step_finished(step: Mapping[str, Any]) -> bool:
    """Whether the step ran to its end (no limit, no signal ended it)."""
    return not (step.get("timed_out") or step.get("cpu_timed_out") or step.get("oom_killed")
                or step.get("output_exceeded") or step.get("signal"))


def tool_output(step: Mapping[str, Any] | None, *,
                failure_says: str | None = None) -> str | None:
    """What a `tool_step` printed after its status, or None when the parser did not
    finish: a limit stopped it, it ran out of memory, or what it said was cut.

    With `failure_says` (a parser whose every failure names a line, as g++'s `error:`
    does), a failing status with no such line is no answer either: the parser stopped
    for a reason it did not say, such as memory running out before it could print that
    it had (seen once in a few hundred template bombs, under load)."""
    if step is None or not step_finished(step):
        return None
    status, _, rest = str(step.get("stdout") or "").partition("\n")
    matched = re.fullmatch(r"status (\d+)", status)
    if matched is None or int(matched.group(1)) >= 128 or len(rest) >= STORED_OUTPUT:
        return None
    if re.search(_LIMIT_WORDS, rest):
        return None
    if (failure_says is not None and int(matched.group(1)) != 0
            and not re.search(failure_says, rest)):
        return None
    return rest


def job_steps(answer: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    steps = answer.get("steps")
    return [step for step in steps if isinstance(step, Mapping)] if isinstance(steps, list) else []


def failing_sources(output: str, pattern: str) -> set[int]:
    return {int(m.group(1)) for m in re.finditer(pattern, output, re.MULTILINE)}


def _each_alone(sources: list[str], run: RunJob, suffix: str,
                step_for: Callable[[str], dict[str, Any]],
                failed: Callable[[str, int], bool]) -> list[Answer]:
    """Parse every source in a step of its own, after a batch that hit a limit: one bomb
    is then left undecided, and the others are answered."""
    answer = run({"kind": "command", "files": _source_files(sources, suffix),
                  "steps": [step_for(f"s{i}{suffix}") for i in range(len(sources))]})
    steps = job_steps(answer)
    answers: list[Answer] = []
    for i in range(len(sources)):
        output = tool_output(steps[i]) if i < len(steps) else None
        answers.append(None if output is None else not failed(output, i))
    return answers


def parse_batched(sources: list[str], run: RunJob, *, suffix: str,
                  argv: Callable[[list[str]], list[str]], pattern: str, failing: str,
                  address_space: bool = True,
                  extra_files: Mapping[str, str] | None = None) -> list[Answer]:
    """All sources in one parser run, each in its file; the files named by `failing`'s
    group in the matched output do not parse. Should that run hit a limit, each source
    is parsed alone."""
    files = {**_source_files(sources, suffix), **(extra_files or {})}
    names = [f"s{i}{suffix}" for i in range(len(sources))]
    answer = run({"kind": "command", "files": files,
                  "steps": [tool_step(argv(names), pattern, address_space=address_space)]})
    steps = job_steps(answer)
    output = tool_output(steps[0]) if steps else None
    if output is not None:
        bad = failing_sources(output, failing)
        return [i not in bad for i in range(len(sources))]
    if len(sources) == 1:
        return [None]
    return _each_alone(
        sources, run, suffix,
        lambda name: tool_step(argv([name]), pattern, address_space=address_space),
        lambda output, i: bool(failing_sources(output, failing.replace(r"(\d+)", f"({i})"))))


def _json_answers(answer: Mapping[str, Any], count: int) -> list[Answer]:
    """The list of booleans a script printed; every source undecided when it did not
    finish (a source that makes the parser hit a limit)."""
    steps = job_steps(answer)
    if not steps or not step_finished(steps[0]) or steps[0].get("exit_code") != 0:
        return [None] * count
    try:
        said = json.loads(str(steps[0].get("stdout") or ""))
    except json.JSONDecodeError:
        return [None] * count
    if not isinstance(said, list) or len(said) != count:
        return [None] * count
    return [bool(a) for a in said]


def parse_by_script(sources: list[str], run: RunJob, argv: list[str], script_name: str,
                    script: str) -> list[Answer]:
    """A script that reads `sources.json` and prints whether each source parses; should
    it hit a limit on the whole list, it is asked about each source alone."""
    def job(part: list[str]) -> dict[str, Any]:
        return {"kind": "command",
                "files": {script_name: script, "sources.json": json.dumps(
                    [writable(source) for source in part])},
                "steps": [{"name": "parse", "argv": [*argv, script_name],
                           "limits": CHECK_LIMITS.to_dict(), "address_space_limit": False}]}

    answers = _json_answers(run(job(sources)), len(sources))
    if len(sources) > 1 and None in answers:
        answers = [_json_answers(run(job([source])), 1)[0] for source in sources]
    return answers
