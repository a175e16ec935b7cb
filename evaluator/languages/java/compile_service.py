"""The warm javac: compiling Java in a long-lived JVM instead of a JVM per sample.

Compilation dominates a Java sample (javac ~0.8 s of CPU, nearly all of it a cold JVM
loading and warming up the compiler). The `evaluator_compiler.Server` runtime keeps the
JDK's own compiler (`javax.tools`) loaded, in a sandbox of its own that runs no program
(javac with `-proc:none` executes nothing it compiles). It gets the options the command
line would get, and answers with javac's exit status, its messages as the command line
prints them, and the class files, which the run's job then carries.

Without the service (`EngineConfig.warm_compilers` off, or its sandbox failing), each
job runs `javac` itself, as its compile step says.
"""

from __future__ import annotations

import base64
from typing import Any

from evaluator.languages.base import AskCompiler, CompileService, PreparedJob, RemoteBuild
from evaluator.languages.java.toolchain import JVM_THREADS, Jdk
from evaluator.languages.reporting import (
    FALLBACK_MARKER,
    LAUNCHER,
    LAUNCHER_FILE,
    user_error_before,
)
from evaluator.sandbox.base import SandboxLimits

OUT_OF_MEMORY = 137
"""The compile service's status for javac running out of its heap (it then exits)."""


def javac_service(tools: Jdk, limits: SandboxLimits) -> CompileService:
    # Half the compile memory for the heap; the rest is the JVM's own and the
    # sandbox's. Tiered compilation stays on: this JVM lives long enough to gain.
    return CompileService(
        name="javac",
        argv=(tools.java, "-XX:+UseSerialGC", "-XX:-UsePerfData",
              f"-Xmx{max(256, limits.memory_mb // 2)}m", "-cp", str(tools.compiler),
              "evaluator_compiler.Server"),
        extra_processes=JVM_THREADS)


def build_with_service(prepared: PreparedJob, ask: AskCompiler) -> RemoteBuild | None:
    """Compile a prepared Java job with the warm javac, applying the build script's
    instrumented-else-unchanged rule the same way; None for a job not prepared for it."""
    remote = prepared.context.get("remote")
    if not remote:
        return None
    name = remote["file_name"]

    def compile_text(text: str) -> tuple[dict[str, Any], list[str]]:
        answer = ask(["compile", str(len(remote["options"])), *remote["options"],
                      "1", name, text])
        return dict(answer["steps"][0]), list(answer.get("outputs", []))

    if remote["split"] is not None:
        step, outputs = compile_text(remote["split"])
        if step.get("exit_code") == 1 and not user_error_before(
                str(step.get("stderr") or ""), name, prepared.context["test_first_line"]):
            # The rewrite broke a program that may compile unchanged: the build
            # script's rule, the same message.
            first_ms = float(step.get("wall_ms") or 0)
            step, outputs = compile_text(remote["whole"])
            step["stderr"] = (f"{FALLBACK_MARKER}; compiling it unchanged\n"
                              + str(step.get("stderr") or ""))
            step["wall_ms"] = first_ms + float(step.get("wall_ms") or 0)
    else:
        step, outputs = compile_text(remote["whole"])
    if step.get("exit_code") == OUT_OF_MEMORY:
        step["oom_killed"] = True
    if step.get("exit_code") != 0 or step.get("timed_out") or step.get("oom_killed"):
        return RemoteBuild(steps=[step], job=None)
    classes = {f"classes/{base64.b64decode(path).decode('utf-8')}": data
               for path, data in zip(outputs[::2], outputs[1::2], strict=True)}
    job = {"kind": "command", "files": {LAUNCHER_FILE: LAUNCHER},
           "binary_files": classes, "steps": [remote["run_step"]]}
    return RemoteBuild(steps=[step], job=job)
