"""A run's manifest: real versions asked of the real sandbox programs and toolchains, the
CLI's JSON summary carrying it, and the comparison of two manifests."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evaluator.datasets import load_dataset
from evaluator.engine import Engine, EngineConfig
from evaluator.languages.cpp import Cpp
from evaluator.languages.toolchains import ToolchainError
from evaluator.manifest import (
    MANIFEST_SCHEMA,
    build_manifest,
    manifest_differences,
    manifest_merge,
    toolchain_version,
)
from evaluator.records import HARNESS_VERSION, RunOptions, Sample
from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.base import SandboxError, SandboxLimits
from evaluator.sanitize import SANITIZER_VERSION
from tests.evaluator.test_cli import run_cli


def _first_line(*argv: str) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, check=True, timeout=120)
    return next(line.strip() for line in (done.stdout + done.stderr).splitlines()
                if line.strip())


def _evaluated_manifest(backend_name: str) -> dict[str, Any]:
    """A one-sample evaluation under `backend_name`, then the manifest of it."""
    problem = load_dataset().problems[0]
    sample = Sample(task_id=problem.task_id, index=0, raw=problem.canonical_solution,
                    completion=problem.canonical_solution)
    options = RunOptions(profile="humaneval", limits=SandboxLimits.for_timeout(5.0))
    with Engine(EngineConfig(backend=backend_name, workers=1, options=options)) as engine:
        results = [event["result"] for event in engine.evaluate({problem.task_id: problem},
                                                                [sample])
                   if event["type"] == "sample_finished"]
        assert [result.status for result in results] == ["passed"]
        return build_manifest(generation_sha256="ab" * 32, generation_name="gen.jsonl",
                              dataset_key="humaneval/python/en", dataset_version="v1",
                              options=engine.config.options, sanitize=False,
                              backend=engine.backend, languages=["python"])


def test_manifest_of_a_run_without_a_sandbox():
    manifest = _evaluated_manifest("none")
    assert manifest["schema"] == MANIFEST_SCHEMA
    assert manifest["harness"]["version"] == HARNESS_VERSION
    assert manifest["harness"]["profile"] == "humaneval"
    assert manifest["sanitizer"] == {"enabled": False, "version": SANITIZER_VERSION}
    assert manifest["sandbox"] == {"backend": "none", "level": "none", "version": None}
    python = manifest["toolchains"]["python"]
    assert python["path"] == sys.executable
    assert python["version"] == _first_line(sys.executable, "--version")
    assert manifest["limits"]["run"]["cpu_seconds"] == 5.0
    assert manifest["limits"]["run"]["wall_seconds"] == 20.0
    assert manifest["host"]["kernel"]
    json.dumps(manifest)  # plain JSON, nothing else


@pytest.mark.parametrize(("backend", "level", "program", "prefix"), [
    ("bwrap", "standard", "bwrap", "bubblewrap "),
    ("gvisor", "strict", "runsc", "runsc version "),
])
def test_manifest_of_a_run_in_a_sandbox(backend: str, level: str, program: str, prefix: str):
    try:
        get_backend(backend)
    except SandboxError as exc:
        pytest.skip(f"{backend} does not work here: {exc}")
    manifest = _evaluated_manifest(backend)
    sandbox = manifest["sandbox"]
    assert (sandbox["backend"], sandbox["level"]) == (backend, level)
    assert sandbox["version"] == _first_line(program, "--version")
    assert sandbox["version"].startswith(prefix)
    # Python programs run with the system's interpreter inside the sandbox, not ours.
    python = manifest["toolchains"]["python"]
    assert python["path"] == "/usr/bin/python3"
    assert python["version"] == _first_line("/usr/bin/python3", "--version")
    if backend == "bwrap":
        assert sandbox["seccomp"]["default"] == "EPERM"


@pytest.mark.slow
@pytest.mark.parametrize(("language", "argv"), [
    ("cpp", ("g++", "--version")),
    ("java", ("javac", "-version")),
    ("go", ("go", "version")),
    ("rust", ("rustc", "--version")),
    ("js", ("node", "--version")),
])
def test_toolchain_versions_are_the_commands_own(language: str, argv: tuple[str, ...]):
    found = toolchain_version(language)
    if "error" in found:
        pytest.skip(f"{language}: {found['error']}")
    assert found["command"] == " ".join([Path(found["path"]).name, *argv[1:]])
    assert found["version"] == _first_line(found["path"], *argv[1:])
    assert any(char.isdigit() for char in found["version"])


def test_a_missing_toolchain_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch):
    def missing(_self: Cpp, *, python: str) -> str:
        raise ToolchainError("g++ is not installed (apt-get install g++)")

    monkeypatch.setattr(Cpp, "tool_path", missing)
    assert toolchain_version("cpp") == {
        "error": "ToolchainError: g++ is not installed (apt-get install g++)"}
    assert "error" in toolchain_version("cobol")


def test_cli_json_summary_carries_the_manifest(tmp_path: Path):
    problem = load_dataset().problems[0]
    samples = tmp_path / "gen.jsonl"
    samples.write_text(json.dumps({"task_id": problem.task_id,
                                   "completion": problem.canonical_solution}) + "\n")
    proc = run_cli("evaluate", "--samples", str(samples), "--sandbox", "none", "--no-cache",
                   "--json", "--timeout", "4", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads(proc.stdout)["manifest"]
    assert manifest["generation"] == {
        "name": "gen.jsonl", "sha256": hashlib.sha256(samples.read_bytes()).hexdigest()}
    assert manifest["dataset"]["key"] == "humaneval/python/en"
    assert manifest["dataset"]["content_hash"] == load_dataset().version
    assert manifest["limits"]["run"]["cpu_seconds"] == 4.0
    assert list(manifest["toolchains"]) == ["python"]


def test_differences_name_each_changed_field():
    old = {"schema": 1, "sandbox": {"backend": "none", "version": None},
           "toolchains": {"cpp": {"version": "g++ 12"}}, "limits": {"run": {"cpu_seconds": 3}}}
    new = {"schema": 2, "sandbox": {"backend": "bwrap", "version": "bubblewrap 0.8.0"},
           "toolchains": {"cpp": {"version": "g++ 13"}}, "limits": {"run": {"cpu_seconds": 3}}}
    found = {(d.field, d.old, d.new) for d in manifest_differences(old, new)}
    assert found == {
        ("sandbox.backend", "none", "bwrap"),
        ("sandbox.version", None, "bubblewrap 0.8.0"),
        ("toolchains.cpp.version", "g++ 12", "g++ 13"),
    }
    assert manifest_differences(new, new) == []


def test_merging_a_second_worker_adds_toolchains_and_marks_what_differs():
    first = {"schema": 1, "toolchains": {"cpp": {"version": "g++ 12"}},
             "host": {"kernel": "6.1"}}
    second = {"schema": 1, "toolchains": {"cpp": {"version": "g++ 13"},
                                          "go": {"version": "go1.19"}},
              "host": {"kernel": "6.1"}}
    merged = manifest_merge(first, second)
    assert merged["toolchains"] == {"cpp": {"version": "g++ 12"}, "go": {"version": "go1.19"}}
    assert merged["mixed"] == {"toolchains.cpp.version": ["g++ 12", "g++ 13"]}
    assert manifest_merge(merged, second) == merged, "merging the same worker again is a no-op"
    assert manifest_merge({}, second) == second
