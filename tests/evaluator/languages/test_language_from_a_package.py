"""A language installed as a package of its own joins the whole evaluator through the
registry's entry point: `tests/toy_language` holds the package (Toy Shell, shell functions
run by bash) and its metadata, and no module of the evaluator names it. Its dataset is
read, its programs are built, run in the default sandbox and judged, the manifest records
its toolchain's version, rescoring asks it about its profile setting, and the language
check of uploads parses with its own front end."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from evaluator import profiles
from evaluator.datasets import load_dataset
from evaluator.engine import Engine, EngineConfig
from evaluator.language_check import SandboxedParsers, check_language, front_end
from evaluator.languages.registry import (
    ENTRY_POINT_GROUP,
    canonical_name,
    get_language,
    language_names,
    load_entry_points,
    unregister,
)
from evaluator.manifest import build_manifest
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.rescoring import rescore
from evaluator.sandbox.base import SandboxLimits
from evaluator.sanitize import sanitize

PACKAGE_SITE = Path(__file__).resolve().parents[2] / "toy_language"
"""Where the toy package and its `.dist-info` are, as in a site-packages directory."""

TESTS = ('[ "$(add 2 3)" = 5 ] || { echo "AssertionError: add 2 3 gave $(add 2 3)" >&2; '
         "exit 1; }\n")
RIGHT = "  echo $(( $1 + $2 ))\n}\n"
WRONG = "  echo $(( $1 - $2 ))\n}\n"
PYTHON = "    return sum((a, b))\n"


@pytest.fixture
def toy_installed() -> Iterator[str]:
    """The toy package on `sys.path`, its entry point read by the registry; taken out
    again afterwards."""
    sys.path.insert(0, str(PACKAGE_SITE))
    importlib.invalidate_caches()
    try:
        assert "toysh" in load_entry_points()
        yield "toysh"
    finally:
        unregister("toysh")
        sys.path.remove(str(PACKAGE_SITE))
        sys.modules.pop("toy_shell", None)
        importlib.invalidate_caches()


@pytest.fixture
def toy_problems(toy_installed: str, tmp_path: Path) -> dict[str, Problem]:
    """Two problems in MultiPL-E's layout, whose records spell the language `toy-shell`."""
    path = tmp_path / "humaneval-toysh.jsonl"
    records = [{"name": f"HumanEval_{n}_add", "language": "toy-shell",
                "prompt": "# add two numbers\nadd() {\n", "tests": TESTS} for n in (0, 1)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return {p.task_id: p for p in load_dataset(path=path).problems}


def _samples(problems: dict[str, Problem], *completions: str) -> list[Sample]:
    return [Sample(task_id=task_id, index=index, raw=text, completion=text)
            for task_id in problems for index, text in enumerate(completions)]


def _evaluate(engine: Engine, problems: dict[str, Problem],
              samples: list[Sample]) -> list[SampleResult]:
    return [event["result"] for event in engine.evaluate(problems, samples)
            if event["type"] == "sample_finished"]


def test_the_entry_point_alone_brings_the_language_in(toy_installed):
    assert "toysh" in {point.name for point in entry_points(group=ENTRY_POINT_GROUP)}
    assert canonical_name("Toy-Shell") == "toysh"
    assert language_names()[-1] == "toysh"
    assert type(get_language("toysh")).__module__ == "toy_shell"


def test_a_toy_language_runs_end_to_end(toy_problems, monkeypatch):
    problems = toy_problems
    assert [(p.task_id, p.language, p.entry_point) for p in problems.values()] == [
        ("HumanEval/0", "toysh", "add"), ("HumanEval/1", "toysh", "add")]
    # The sanitizer takes the code out of a fence tagged with one of its names.
    problem = problems["HumanEval/0"]
    cleaned, _notes = sanitize("Here it is:\n```bash\n" + RIGHT + "```\nDone.", problem)
    assert cleaned.strip() == RIGHT.strip()

    options = RunOptions(limits=SandboxLimits.for_timeout(10.0))
    with Engine(EngineConfig(backend="auto", workers=1, options=options)) as engine:
        samples = _samples(problems, RIGHT, WRONG)
        results = _evaluate(engine, problems, samples)
        assert [(r.task_id, r.completion_id, r.status) for r in results] == [
            ("HumanEval/0", 0, "passed"), ("HumanEval/0", 1, "failed"),
            ("HumanEval/1", 0, "passed"), ("HumanEval/1", 1, "failed")]
        assert "add 2 3 gave -1" in results[1].message
        assert {r.sandbox.backend if r.sandbox else None for r in results} == {
            engine.backend.name}

        manifest = build_manifest(generation_sha256="ab" * 32, generation_name="gen.jsonl",
                                  dataset_key="multipl-e/toysh/en", dataset_version="v1",
                                  options=options, sanitize=False, backend=engine.backend,
                                  languages=["toysh"])
    bash = manifest["toolchains"]["toysh"]
    said = subprocess.run([bash["path"], "--version"], capture_output=True, text=True,
                          check=True, timeout=60).stdout.splitlines()[0]
    assert (bash["command"], bash["version"]) == ("bash --version", said)
    assert said.startswith("GNU bash")

    # Its own profile setting: a profile that turns it on runs the samples again, and
    # says why in the language's words.
    errexit = replace(profiles.STRICT, name="toy-errexit", settings={"toysh_errexit": True})
    monkeypatch.setitem(profiles.PROFILES, errexit.name, errexit)

    def engine_for(profile: profiles.Profile) -> Engine:
        return Engine(EngineConfig(backend="auto", workers=1,
                                   options=replace(options, profile=profile.name)))

    rescored = rescore(samples, results, problems, errexit, engine_for)
    assert rescored.reasons == {"toy-errexit runs Toy Shell with bash -e": 4}
    assert [r.status for r in rescored.results] == ["passed", "failed"] * 2
    again = rescore(samples, results, problems, profiles.HUMANEVAL, engine_for)
    assert again.executed == 0  # no change to its setting: judged from the facts

    # The language check of uploads parses with the toy's own front end, `bash -n`.
    assert front_end("toysh") == "bash -n"
    parsers = SandboxedParsers("auto")
    try:
        fits = check_language(problems, _samples(problems, RIGHT, WRONG), parse=parsers)
        assert (fits.checked, fits.parses["toysh"], fits.fits) == (4, 4, True)
        python = check_language(problems, _samples(problems, PYTHON), parse=parsers)
        assert python.parses["toysh"] == 0
        assert python.detected == "python"
    finally:
        parsers.close()
