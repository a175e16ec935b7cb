"""A run's manifest: everything that produced its verdicts, as one plain JSON object.

Two runs of the same generation file agree verdict for verdict only when what this records
agrees: the file and the dataset (content hashes), the harness (version, the sandboxed
runtime's hash, the profile and its version), the sanitizer, the sandbox (backend, level,
its own version and what it enforces), the version of every toolchain the run used, the
limits, and the host's kernel. Toolchain and sandbox versions are asked of the real
commands (`g++ --version`, `bwrap --version`...) by the process that evaluates, once per
process: a web app's workers each describe their own machine.

`manifest_differences` lists the fields in which two manifests disagree, which is how a
reproduction says why a verdict moved.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.engine import RUNTIME_FINGERPRINT
from evaluator.languages import LanguageError, get_language
from evaluator.profiles import get_profile
from evaluator.records import HARNESS_VERSION, RunOptions
from evaluator.sandbox.base import Backend
from evaluator.sanitize import SANITIZER_VERSION

MANIFEST_SCHEMA = 1
"""Bumped when a field is renamed, moved or given another meaning (adding one is not)."""
VERSION_TIMEOUT = 60.0
NOT_COMPARED = frozenset({"schema", "mixed"})
"""Top-level keys that say how the manifest is written or gathered, not what produced
the verdicts."""


@dataclass(frozen=True)
class ManifestDifference:
    field: str
    """Dotted path, `toolchains.cpp.version`."""
    old: Any
    new: Any


SANDBOX_VERSION_ARGS: dict[str, tuple[str, ...]] = {
    "bwrap": ("bwrap", "--version"),
    "gvisor": ("runsc", "--version"),
}


def _first_line(argv: list[str]) -> tuple[str | None, str | None]:
    """(the first non-empty line the command prints, None) or (None, why it could not)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{argv[0]}: {exc}"
    # javac 8 and some builds print the version on stderr.
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        if line.strip():
            if done.returncode != 0:
                return None, f"{' '.join(argv)} exited with {done.returncode}: {line.strip()}"
            return line.strip(), None
    return None, f"{' '.join(argv)} printed nothing (exit status {done.returncode})"


@functools.lru_cache(maxsize=32)
def _versioned(path: str, args: tuple[str, ...]) -> dict[str, Any]:
    line, problem = _first_line([path, *args])
    record: dict[str, Any] = {"path": path, "command": " ".join([Path(path).name, *args])}
    if line is not None:
        record["version"] = line
    else:
        record["error"] = problem
    return record


def toolchain_version(language: str, *, python: str = sys.executable) -> dict[str, Any]:
    """`{"path", "command", "version"}` of the toolchain that runs `language` here (the
    language's `tool_path` asked with its `version_args`), or `{"error"}` when it cannot
    be asked. `python` is the interpreter the sandbox backend runs Python programs with
    (`Backend.python()`). Asked once per process and tool."""
    try:
        runner = get_language(language)
    except LanguageError:
        runner = None
    args = runner.version_args if runner is not None else None
    if runner is None or args is None:
        return {"error": f"no version command is known for {language!r}"}
    try:
        path = runner.tool_path(python=python)
    except Exception as exc:  # a missing toolchain is reported, never raised from here
        return {"error": f"{type(exc).__name__}: {exc}"}
    if path is None:
        return {"error": f"no toolchain for {language!r} was found"}
    return dict(_versioned(path, args))


@functools.lru_cache(maxsize=8)
def sandbox_version(backend: str) -> str | None:
    """The sandbox program's own version line (`bubblewrap 0.8.0`), None for `none`."""
    argv = SANDBOX_VERSION_ARGS.get(backend)
    if argv is None:
        return None
    if backend == "gvisor":
        from evaluator.sandbox.gvisor import RUNSC

        argv = (RUNSC, *argv[1:])
    line, problem = _first_line(list(argv))
    return line if line is not None else f"unknown ({problem})"


@functools.lru_cache(maxsize=1)
def host_facts() -> dict[str, str]:
    """The kernel under every sandbox (bubblewrap passes system calls to it), the CPU
    architecture and the distribution."""
    try:
        distribution = platform.freedesktop_os_release().get("PRETTY_NAME", "")
    except OSError:
        distribution = ""
    return {"kernel": platform.release(), "machine": platform.machine(),
            "os": distribution or platform.system()}


def file_sha256(path: str | Path) -> str:
    """The hex SHA-256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_manifest(*, generation_sha256: str, generation_name: str, dataset_key: str,
                   dataset_version: str, options: RunOptions, sanitize: bool, backend: Backend,
                   languages: Iterable[str]) -> dict[str, Any]:
    """The manifest of a run evaluated here with `backend` and `options`; `languages` are
    the programming languages it evaluated (only their toolchains are asked)."""
    profile = get_profile(options.profile)
    details = {key: value for key, value in backend.describe().items() if key != "backend"}
    return {
        "schema": MANIFEST_SCHEMA,
        "generation": {"name": generation_name, "sha256": generation_sha256},
        "dataset": {"key": dataset_key, "content_hash": dataset_version},
        "harness": {"version": HARNESS_VERSION, "runtime": RUNTIME_FINGERPRINT,
                    "profile": profile.name, "profile_version": profile.version},
        "sanitizer": {"enabled": sanitize, "version": SANITIZER_VERSION},
        "sandbox": {"backend": backend.name, "level": backend.level,
                    "version": sandbox_version(backend.name), **details},
        "toolchains": {language: toolchain_version(language, python=backend.python())
                       for language in sorted(set(languages))},
        "limits": {"task": options.task, "tests": options.tests, "patched": options.patched,
                   "run": options.limits.to_dict(), "compile": options.compile_limits.to_dict(),
                   "source": options.limit_source},
        "host": host_facts(),
    }


def flatten(manifest: Mapping[str, Any], *, prefix: str = "") -> dict[str, Any]:
    """Leaves of a manifest by dotted path; lists are leaves."""
    leaves: dict[str, Any] = {}
    for key, value in manifest.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            leaves.update(flatten(value, prefix=f"{path}."))
        else:
            leaves[path] = value
    return leaves


def manifest_differences(old: Mapping[str, Any], new: Mapping[str, Any], *,
                         ignore: Callable[[str], bool] | None = None
                         ) -> list[ManifestDifference]:
    """Every field that one manifest has and the other lacks or gives another value,
    in path order; `schema` and `mixed` are bookkeeping and not compared."""
    before = {k: v for k, v in flatten(old).items() if k.split(".")[0] not in NOT_COMPARED}
    after = {k: v for k, v in flatten(new).items() if k.split(".")[0] not in NOT_COMPARED}
    return [
        ManifestDifference(field=path, old=before.get(path), new=after.get(path))
        for path in sorted(before.keys() | after.keys())
        if before.get(path) != after.get(path) and not (ignore and ignore(path))
    ]


def manifest_merge(stored: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """`stored` with what another worker of the same run recorded: toolchains it used
    that `stored` lacks are added, and a field the two disagree on is listed under
    `mixed` with every value seen, since then no one machine produced the run."""
    if not stored:
        return dict(new)
    merged = {**stored, "toolchains": {**new.get("toolchains", {}),
                                       **stored.get("toolchains", {})}}
    mixed: dict[str, list[Any]] = {key: list(values)
                                   for key, values in stored.get("mixed", {}).items()}
    for difference in manifest_differences(merged, new):
        if difference.new is None:
            continue
        seen = mixed.setdefault(difference.field, [difference.old])
        if difference.new not in seen:
            seen.append(difference.new)
    if mixed:
        merged["mixed"] = mixed
    return merged
