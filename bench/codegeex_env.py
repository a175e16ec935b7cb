"""The reference harness, CodeGeeX's HumanEval-X evaluator, in a virtual environment of its own.

`codegeex==1.0` from PyPI is installed with `--no-deps` (its declared dependencies
include torch) into `bench/.codegeex-venv`, with the four small packages its evaluator
imports. Its Java run line ships commented out (zai-org/CodeGeeX#252); this module
restores it in the venv's copy, so every Java sample is not simply an error.

Used by `languages_bench.py` (speed) and `codegeex_agreement.py` (verdicts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import run_and_sweep

BENCH = Path(__file__).resolve().parent
VENV = BENCH / ".codegeex-venv"
IMPORTS = ("numpy", "tqdm", "fire", "regex")
"""What `codegeex.benchmark.evaluate_humaneval_x` imports besides the standard library."""

JAVA_RUN_COMMENTED = (
    "# exec_result = subprocess.run([f'java', '-cp', tmp_dir, 'Main'], timeout=timeout, "
    "capture_output=True)"
)
JAVA_RUN = (
    "exec_result = subprocess.run([f'java', '-cp', tmp_dir, 'Main'], timeout=timeout, "
    "capture_output=True)"
)


def python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv() -> Path:
    """Create the venv (once), install codegeex and restore the Java run line."""
    if not python().exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    probe = subprocess.run([str(python()), "-c", _SKIP_INIT + "import numpy, tqdm, fire, regex\n"
                            "import codegeex.benchmark.execution"],
                           capture_output=True, check=False)
    if probe.returncode != 0:
        subprocess.run([*pip, "--no-deps", "codegeex==1.0"], check=True)
        subprocess.run([*pip, *IMPORTS], check=True)
    execution = package_dir() / "benchmark" / "execution.py"
    text = execution.read_text()
    if JAVA_RUN_COMMENTED in text:
        execution.write_text(text.replace(JAVA_RUN_COMMENTED, JAVA_RUN))
    elif JAVA_RUN not in text:
        raise RuntimeError(f"{execution}: the Java run line was not found; cannot restore it")
    return python()


def package_dir() -> Path:
    found = subprocess.run(
        [str(python()), "-c", "import importlib.util; "
         "print(importlib.util.find_spec('codegeex').submodule_search_locations[0])"],
        capture_output=True, text=True, check=True)
    return Path(found.stdout.strip())


_SKIP_INIT = """
import importlib.util, sys, types
# codegeex/__init__.py imports the model (transformers, torch); the evaluator needs none
# of it, so the package is entered without running its __init__.
_spec = importlib.util.find_spec("codegeex")
_package = types.ModuleType("codegeex")
_package.__path__ = list(_spec.submodule_search_locations)
sys.modules["codegeex"] = _package
"""

_DRIVER = _SKIP_INIT + """
import json, sys
from codegeex.benchmark.evaluate_humaneval_x import evaluate_functional_correctness
job = json.loads(sys.argv[1])
evaluate_functional_correctness(**job)
"""


@dataclass(frozen=True)
class CodegeexRun:
    seconds: float
    results: list[dict[str, Any]]
    """One row per sample: task_id, completion_id, result, passed."""


def run_codegeex(problem_file: Path, samples: list[dict[str, Any]] | None, *, workers: int,
                 timeout: float, example_test: bool = False,
                 work: Path | None = None, env: dict[str, str] | None = None) -> CodegeexRun:
    """Run CodeGeeX's evaluator; `samples=None` evaluates the canonical solutions.

    Samples are CodeGeeX rows: task_id (`CPP/3`), prompt, generation, completion_id.
    """
    ensure_venv()
    with tempfile.TemporaryDirectory(prefix="codegeex-", dir=work) as tmp:
        tmp_path = Path(tmp)
        input_file = tmp_path / "samples.jsonl"
        with input_file.open("w") as handle:
            for row in samples or []:
                handle.write(json.dumps(row) + "\n")
        job = {"input_file": str(input_file), "tmp_dir": str(tmp_path / "work"),
               "n_workers": workers, "timeout": timeout, "problem_file": str(problem_file),
               "test_groundtruth": samples is None, "example_test": example_test}
        (tmp_path / "work").mkdir()
        started = time.monotonic()
        # CodeGeeX's time limit ends a program's parent but not a compiled program that
        # loops (CPP/32's mutants ran on for over 20 minutes), so what is left is killed.
        done = run_and_sweep([str(python()), "-c", _DRIVER, json.dumps(job)], cwd=tmp,
                             env={**os.environ, **(env or {})})
        seconds = time.monotonic() - started
        suffix = "_example_test.jsonl" if example_test else "_results.jsonl"
        output = Path(str(input_file).replace(".jsonl", suffix))
        if done.returncode != 0 or not output.exists():
            raise RuntimeError(f"CodeGeeX's evaluator failed ({done.returncode}):\n"
                               f"{done.stderr[-3000:]}")
        results = [json.loads(line) for line in output.read_text().splitlines() if line]
    return CodegeexRun(seconds=seconds, results=results)
