"""A toy language that lives only in this package: shell functions, run by bash.

It joins the evaluator as an installed plug-in would, through the entry point that
`../toy_shell-1.0.dist-info/entry_points.txt` declares, and uses nothing but the
evaluator's public protocol (`Language`) and the helpers it offers to every language. A
program is the prompt, the completion and the tests, run by `bash`; it passes when it
exits with status 0, as MultiPL-E judges its shell programs.

Its one profile setting, `toysh_errexit`, runs programs under `bash -e`: no built-in
profile sets it, so it shows how a language brings a setting of its own.
"""

from __future__ import annotations

from typing import Any

from evaluator.languages.base import Language, LanguageError, PreparedJob, program_hash
from evaluator.languages.reporting import whole_program_records
from evaluator.languages.syntax_check import Answer, RunJob, parse_batched
from evaluator.languages.toolchains import Tool, ToolchainError
from evaluator.profiles import ProfileKnob, get_profile
from evaluator.records import Problem, RunOptions, Sample, SampleResult, SandboxInfo

BASH = Tool("bash", "TOY_SHELL_BASH", ("/bin/bash",), "apt-get install bash")

ERREXIT = ProfileKnob("toysh_errexit", False, enabled="runs Toy Shell with bash -e",
                      disabled="runs Toy Shell without bash -e")

WHOLE = "a Toy Shell program is judged by its exit status"

# `bash -n` reads one file: each source is parsed by its own run, all in one step.
_PARSE_EACH = 'for f; do "$0" -n "$f" 2>/dev/null || echo "bad $f"; done'


class ToyShell(Language):
    name = "toysh"
    display_name = "Toy Shell"
    aliases = ("toy-shell",)
    fence_tags = ("bash",)
    order = 900
    function_pattern = r"^(\w+)\s*\(\)\s*\{"
    syntax_check = "bash -n"
    selfcheck_body = '  echo "selfcheck stub" >&2; return 1\n}\n'
    toolchain = BASH
    profile_knobs = (ERREXIT,)

    def build(self, problem: Problem, sample: Sample, options: RunOptions) -> tuple[str, int]:
        """The program and the line where its tests start."""
        head = sample.completion if sample.is_full_program else (
            self.prefix(problem, options) + sample.completion)
        head += "\n"
        return head + self.test_text(problem, options), head.count("\n") + 1

    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        try:
            bash = BASH.require()
        except ToolchainError as exc:
            raise LanguageError(str(exc)) from exc
        program, _first_test_line = self.build(problem, sample, options)
        flags = ["-e"] if get_profile(options.profile).setting(ERREXIT) else []
        job: dict[str, Any] = {
            "kind": "command",
            "files": {"program.sh": program},
            "steps": [{"name": "run", "argv": [bash, *flags, "program.sh"],
                       "limits": options.limits.to_dict()}],
            "env": self.environment(),
        }
        return PreparedJob(job=job, program=program,
                           program_hash=program_hash(self.name, *flags, program))

    def interpret(self, prepared: PreparedJob, answer: dict[str, Any], sample: Sample,
                  problem: Problem, options: RunOptions, sandbox: SandboxInfo) -> SampleResult:
        judged = {**answer, "records": whole_program_records(answer, WHOLE)}
        return super().interpret(prepared, judged, sample, problem, options, sandbox)

    def check_syntax(self, sources: list[str], run: RunJob) -> list[Answer]:
        bash = BASH.require()
        return parse_batched(sources, run, suffix=".sh",
                             argv=lambda names: [bash, "-c", _PARSE_EACH, bash, *names],
                             pattern=r"^bad ", failing=r"^bad s(\d+)\.sh$")

    def syntax_contexts(self, code: str) -> list[str]:
        return [code, "_f() {\n" + code + "\n}"]
