"""Java: OpenJDK 17's `javac` and `java -ea`, with every check of the test reported alone.

The recipe. The program is the reference harness's: prompt (or declaration) + completion
+ "\\n" + test, in the file and with the main class `main_class.class_names` reads from the
dataset's text (`Main.java` for HumanEval-X, `Problem.java` for MultiPL-E); javatuples is
on the class path when the program imports it. The test's checks are rewritten to report
one by one (`asserts`); a build script compiles that version, and the test unchanged when
the rewrite breaks a program that compiles as it is. The launcher
(`evaluator_harness.Launch`) runs the main class and reports `done` when main returns; a
test with no recognised check runs unchanged and is judged by its exit status, and the
result says so.

The rest is in this package's modules: finding the JDK and building the runtime once
(`toolchain`), and compiling with a warm javac instead of the job's own step
(`compile_service`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.languages import lexing
from evaluator.languages.base import (
    AskCompiler,
    CompileService,
    Language,
    LanguageError,
    PreparedJob,
    RemoteBuild,
    program_hash,
    required_toolchain,
)
from evaluator.languages.java.asserts import rewrite_test
from evaluator.languages.java.compile_service import build_with_service, javac_service
from evaluator.languages.java.main_class import class_names
from evaluator.languages.java.toolchain import (
    FAST_JVM,
    JAVAC,
    JVM_THREADS,
    Jdk,
    javatuples,
    jdk,
)
from evaluator.languages.reporting import (
    BUILD_FILE,
    LAUNCHER,
    LAUNCHER_FILE,
    Rewrite,
    build_script,
    normalise_records,
)
from evaluator.languages.syntax_check import Answer, RunJob, parse_batched
from evaluator.languages.toolchains import ToolchainError, cache_root
from evaluator.profiles import ProfileKnob, get_profile
from evaluator.records import Problem, RunOptions, Sample
from evaluator.sandbox.base import Mount, SandboxLimits

__all__ = ["FAST_JVM", "Java", "JavaProgram", "Jdk", "class_names", "javatuples", "jdk",
           "rewrite_test"]


ASSERT_WORD = re.compile(r"\bassert\b")
"""A Java program without this word runs the same with and without `-ea`, so its
execution is shared between profiles that differ only in that flag."""

ASSERTIONS_KNOB = ProfileKnob(
    "java_assertions", True, enabled="runs Java with -ea", disabled="runs Java without -ea",
    matters=lambda problem, completion: ASSERT_WORD.search(
        problem.prompt + completion + problem.test) is not None)


@dataclass(frozen=True)
class JavaProgram:
    program: str
    instrumented: str
    test_first_line: int
    rewrite: Rewrite
    file_name: str
    main_class: str
    javatuples: bool


class Java(Language):
    name = "java"
    display_name = "Java"
    order = 30
    pygments_lexer = "java"
    # A return type before the name, which also keeps `if (` out.
    function_pattern = (r"^\s*(?:public|private|protected)\s+(?:static\s+)?"
                        r"[\w<>\[\],.? ]+\s(\w+)\s*\(")
    syntax_check = "javac"
    toolchain = JAVAC
    version_args = ("-version",)
    profile_knobs = (ASSERTIONS_KNOB,)
    selfcheck_body = "        throw new RuntimeException(\"selfcheck stub\");\n"

    def build(self, problem: Problem, sample: Sample, options: RunOptions) -> JavaProgram:
        prefix = "" if sample.is_full_program else self.prefix(problem, options)
        head = prefix + sample.completion + "\n"
        test = self.test_text(problem, options)
        rewrite = rewrite_test(test, (problem.entry_point,))
        file_name, main_class = class_names(prefix or sample.completion, test)
        return JavaProgram(
            program=head + test, instrumented=head + rewrite.text,
            test_first_line=head.count("\n") + 1, rewrite=rewrite, file_name=file_name,
            main_class=main_class,
            javatuples=re.search(r"^\s*import\s+org\.javatuples\b", head, re.MULTILINE)
            is not None)

    def prepare(self, problem: Problem, sample: Sample, options: RunOptions) -> PreparedJob:
        built = self.build(problem, sample, options)
        tools = required_toolchain(jdk)
        classpath = _classpath(tools, built)
        javac = [tools.javac, *(f"-J{flag}" for flag in FAST_JVM)]
        if tools.javac_archive is not None:
            javac.append(f"-J-XX:SharedArchiveFile={tools.javac_archive}")
        javac_options = ["-encoding", "UTF-8", "-proc:none", "-cp", ":".join(classpath)]
        javac += javac_options
        files = {LAUNCHER_FILE: LAUNCHER}
        if built.rewrite.split:
            files.update({
                built.file_name: built.instrumented,
                f"whole/{built.file_name}": built.program,
                BUILD_FILE: build_script(
                    source=built.file_name, first_test_line=built.test_first_line,
                    split=[*javac, "-d", "classes", built.file_name],
                    whole=[*javac, "-d", "../classes", built.file_name]),
            })
            compile_argv = ["/bin/sh", BUILD_FILE]
        else:
            files[built.file_name] = built.program
            compile_argv = [*javac, "-d", "classes", built.file_name]
        memory = options.limits.memory_mb
        # java.io is opened so the harness can write to its inherited report fd (Java has
        # no public API for that, and gVisor cannot reopen a pipe through /proc).
        run_argv = ["/bin/sh", LAUNCHER_FILE, tools.java,
                    *_assertion_flags(built.program, options), *FAST_JVM, f"-Xmx{memory}m",
                    "--add-opens", "java.base/java.io=ALL-UNNAMED",
                    "-cp", ":".join([*classpath, "classes"]), "evaluator_harness.Launch",
                    built.main_class]
        steps: list[dict[str, Any]] = [
            {"name": "compile", "argv": compile_argv,
             "limits": _with_threads(options.compile_limits), "address_space_limit": False},
            {"name": "run", "argv": run_argv, "limits": _with_threads(options.limits),
             "report": True, "address_space_limit": False},
        ]
        job: dict[str, Any] = {"kind": "command", "files": files, "steps": steps}
        digest = program_hash("java", tools.version, json.dumps([compile_argv, run_argv]),
                              json.dumps(files, sort_keys=True))
        context: dict[str, Any] = {
            **built.rewrite.job_context(test_first_line=built.test_first_line),
            "main_class": built.main_class,
            # What `build_remotely` needs to compile this program with the warm javac.
            "remote": {"options": javac_options, "file_name": built.file_name,
                       "split": built.instrumented if built.rewrite.split else None,
                       "whole": built.program, "run_step": steps[1]},
        }
        return PreparedJob(job=job, program=built.program, program_hash=digest,
                           context=context)

    def complete_answer(self, prepared: PreparedJob, answer: dict[str, Any]) -> dict[str, Any]:
        return normalise_records(prepared.context, answer)

    def compile_service(self, limits: SandboxLimits) -> CompileService | None:
        try:
            return javac_service(jdk(), limits)
        except ToolchainError:
            return None

    def build_remotely(self, prepared: PreparedJob, ask: AskCompiler) -> RemoteBuild | None:
        return build_with_service(prepared, ask)

    def mounts(self) -> list[Mount]:
        mounts = [Mount(cache_root())]
        try:
            home = jdk().home
        except ToolchainError:
            return mounts
        # Debian keeps the JDK's configuration in /etc/java-17-openjdk, linked from the
        # JDK's conf/ and lib/jvm.cfg; /usr itself is mounted by every backend.
        config = Path(os.path.realpath(home / "lib" / "jvm.cfg")).parent
        if not config.is_relative_to("/usr"):
            mounts.append(Mount(config))
        jar = javatuples()
        if jar is not None:
            mounts.append(Mount(Path(os.path.realpath(jar))))
        return mounts

    def selfcheck_stub(self, problem: Problem, stub: str) -> str:
        """`stub`, closing the method and its class when the tests do not.

        MultiPL-E's tests begin by closing both; HumanEval-XL's open a class of their own
        right after the prompt's, so a bare body would leave the prompt's class open.
        """
        if problem.test.lstrip().startswith("}"):
            return stub
        return stub + "    }\n}\n"

    def require_toolchain(self) -> None:
        jdk()

    def tool_path(self, *, python: str) -> str | None:
        return jdk().javac

    def check_syntax(self, sources: list[str], run: RunJob) -> list[Answer]:
        # javac told to stop after parsing, one process for all files: a missing class
        # or symbol is not a parse error.
        javac = JAVAC.beside("javac")
        fast = [f"-J{flag}" for flag in FAST_JVM]
        return parse_batched(sources, run, suffix=".java",
                             argv=lambda names: [javac, *fast, "-proc:none", "-encoding",
                                                 "UTF-8", "-Xmaxerrs", "100000",
                                                 "-XDshould-stop.ifError=PARSE",
                                                 "-XDshould-stop.ifNoError=PARSE", "-d",
                                                 "out", *names],
                             pattern=r"^s[0-9]+\.java:[0-9]+: error:",
                             failing=r"^s(\d+)\.java:\d+: error:", address_space=False)

    def syntax_contexts(self, code: str) -> list[str]:
        # By the braces it closes: a method's body and its class, or the body alone, or
        # whole members or classes (javac's start-up is paid per run, its files not).
        blanked = lexing.blank(code, "java")
        closes = blanked.count("}") - blanked.count("{")
        method = "class _C {\nObject _f() {\n" + code
        if closes >= 2:
            return [method]
        if closes == 1:
            return [method + "\n}"]
        whole = code if re.search(r"\b(?:class|interface|enum|record)\b", blanked) else (
            "class _C {\n" + code + "\n}")
        return [whole, method + "\n}\n}"]


def _classpath(tools: Jdk, built: JavaProgram) -> list[str]:
    """The harness's classes, and javatuples for a program that imports it."""
    classpath = [str(tools.harness)]
    if built.javatuples:
        jar = javatuples()
        if jar is None:
            raise LanguageError("the program imports org.javatuples, which is not "
                                "installed (apt-get install libjavatuples-java)")
        classpath.append(jar)
    return classpath


def _with_threads(limits: SandboxLimits) -> dict[str, Any]:
    data = limits.to_dict()
    data["processes"] = int(data.get("processes") or 0) + JVM_THREADS
    return data


def _assertion_flags(program: str, options: RunOptions) -> list[str]:
    """`-ea` unless the profile runs Java without it and the program has an `assert`
    statement for the flag to switch off: a program without one runs the same job under
    every profile, so its execution is shared between them."""
    if get_profile(options.profile).java_assertions or not ASSERT_WORD.search(program):
        return ["-ea"]
    return []
