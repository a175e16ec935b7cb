"""What the language modules share about rewriting a test harness and reading its report.

Their harnesses run in the program's own process, so the report nonce must not sit in
the environment where the program could read it (`getenv`, `System.getenv`,
`/proc/self/environ`). `LAUNCHER` is a two-line shell script that takes the nonce out
of the environment and hands it to the program on fd 4, which the harness reads once
at start-up, before any program code runs.

Records name the assertion by its site (its position among the rewritten assertions);
`normalise_records` gives each record the assertion's source and line from the job's
context, and turns a run that was judged as a whole into records `judge` understands.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

LAUNCHER_FILE = ".evaluator-launch.sh"
LAUNCHER = (
    'nonce="$EVALUATOR_NONCE"; unset EVALUATOR_NONCE\n'
    'exec "$@" 4<<EVALUATOR_NONCE_END\n'
    "$nonce\n"
    "EVALUATOR_NONCE_END\n"
)
"""Run as `sh LAUNCHER_FILE program args...`: the nonce reaches the program on fd 4."""


BUILD_FILE = ".evaluator-build.sh"
FALLBACK_MARKER = "evaluator: the instrumented test did not compile"


def build_script(*, source: str, first_test_line: int, split: Sequence[str],
                 whole: Sequence[str]) -> str:
    """A shell script compiling the instrumented program, or else the unchanged one.

    `split` compiles `source` (instrumented) in the job directory; `whole` compiles the
    unchanged program, `whole/<source>`, from inside `whole/`. The unchanged program is
    compiled only when no error of the instrumented one lies before the test's first
    line: an error in the completion is the sample's own, and is reported as it is.
    """
    split_command = " ".join(shlex.quote(arg) for arg in split)
    whole_command = " ".join(shlex.quote(arg) for arg in whole)
    name = shlex.quote(source)
    return f"""\
set -u
if {split_command} 2> .split.err; then
    if [ -s .split.err ]; then cat .split.err >&2; fi
    exit 0
fi
if awk -v file={name} -v first={first_test_line} '
    index($0, file ":") == 1 && / error/ {{
        split($0, field, ":")
        if (field[2] + 0 > 0 && field[2] + 0 < first) user = 1
    }}
    END {{ exit user ? 1 : 0 }}' .split.err; then
    echo "{FALLBACK_MARKER}; compiling it unchanged" >&2
    cd whole && exec {whole_command}
fi
cat .split.err >&2
exit 1
"""


def user_error_before(stderr: str, source: str, first_test_line: int) -> bool:
    """True when the compiler's `stderr` reports an error in `source` before the test's
    first line: the sample's own error. The rule `build_script`'s awk applies, for
    builds made outside the sandbox's shell (a warm compile service)."""
    for line in stderr.splitlines():
        if not line.startswith(source + ":") or " error" not in line:
            continue
        fields = line.split(":")
        if len(fields) > 1 and fields[1].strip().isdigit() \
                and 0 < int(fields[1]) < first_test_line:
            return True
    return False


def apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Apply (start, end, replacement) edits, which must not overlap."""
    out: list[str] = []
    position = 0
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1])):
        out.append(text[position:start])
        out.append(replacement)
        position = max(position, end)
    out.append(text[position:])
    return "".join(out)


@dataclass(frozen=True)
class Site:
    """One assertion of the test text that the rewriter instrumented."""

    source: str
    line: int
    """Line within the test text (1-based)."""
    kind: str
    """eq (expected and actual known), truth, or list (one element of a boolean list)."""

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "kind": self.kind}


@dataclass
class Rewrite:
    """A test text with its assertions instrumented, or why it stays whole."""

    text: str
    sites: list[Site] = field(default_factory=list)
    whole_reason: str = ""
    """Non-empty when the harness cannot be split safely: the program runs unchanged and
    is judged by its exit status."""

    @property
    def split(self) -> bool:
        return not self.whole_reason

    def job_context(self, *, test_first_line: int) -> dict[str, Any]:
        """The job context's account of this rewrite, which `normalise_records` (and a
        warm compile, for `test_first_line`) reads back once the job has run."""
        return {
            "mode": "split" if self.split else "whole",
            "whole_reason": self.whole_reason,
            "sites": [site.to_dict() for site in self.sites],
            "test_first_line": test_first_line,
            "fallback_marker": FALLBACK_MARKER if self.split else "",
        }


def normalise_records(context: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The runner's answer, with site-indexed records completed for `judge`."""
    sites: list[dict[str, Any]] = list(context.get("sites", []))
    records: list[dict[str, Any]] = []
    for record in answer.get("records", []):
        if record.get("kind") == "test":
            record = dict(record)
            site = record.get("site")
            if isinstance(site, int) and 0 <= site < len(sites):
                record.setdefault("source", sites[site]["source"])
                record.setdefault("line", sites[site]["line"])
            if record.get("status") == "failed":
                record.setdefault("error_type", "AssertionError")
                record.setdefault("message", _failure_message(record))
        records.append(record)
    whole = str(context.get("whole_reason") or "")
    if context.get("fallback_marker") and _fell_back(answer, str(context["fallback_marker"])):
        whole = ("the instrumented test did not compile, so the program was rebuilt "
                 "unchanged")
    if whole:
        records = [r for r in records if r.get("kind") not in ("test", "done")]
        records.extend(whole_program_records(answer, whole))
    elif sites:
        records.insert(0, {"kind": "plan", "sites": [
            {"source": site["source"], "line": site["line"]} for site in sites]})
    return {**answer, "records": records}


def _failure_message(record: dict[str, Any]) -> str:
    if record.get("expected") is not None:
        return f"expected {record['expected']}, got {record.get('actual')}"
    if record.get("actual") is not None:
        return f"assertion failed; the call returned {record['actual']}"
    return "assertion failed"


def _fell_back(answer: dict[str, Any], marker: str) -> bool:
    return any(step.get("name") == "compile" and marker in str(step.get("stderr") or "")
               for step in answer.get("steps", []))


def whole_program_records(answer: dict[str, Any], reason: str) -> list[dict[str, Any]]:
    """Records for a run judged by its exit status, as the reference harness judges it.

    One test outcome stands for the whole program, so the result shows that the verdict
    was not split and why.
    """
    steps = answer.get("steps", [])
    if not steps or steps[-1].get("name") != "run":
        return []
    run = steps[-1]
    note = f"whole-program verdict: {reason}"
    if run.get("timed_out") or run.get("cpu_timed_out"):
        return []
    stderr = str(run.get("stderr") or "")
    if run.get("exit_code") == 0 and not run.get("signal"):
        return [{"kind": "test", "index": 0, "source": "<whole program>", "status": "passed",
                 "message": note},
                {"kind": "done", "tests": 1, "suspicious": [note]}]
    assertion = next((line for line in stderr.splitlines()
                      if "Assertion" in line or "AssertionError" in line), "")
    first_line = next((line for line in stderr.splitlines() if line.strip()), "")
    detail = assertion or first_line or (
        f"signal {run['signal']}" if run.get("signal") else f"exit status {run.get('exit_code')}")
    return [{"kind": "test", "index": 0, "source": "<whole program>",
             "status": "failed" if assertion else "error",
             "error_type": "AssertionError" if assertion else "RuntimeError",
             "message": f"{detail.strip()[:500]} ({note})"},
            {"kind": "done", "tests": 1, "suspicious": [note]}]
