"""bench/scale_bench.py's `--steps`: a chosen list of steps is measured, so that a bench
that a deadline would stop can be finished a part at a time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.scale_bench import STEPS, chosen_steps

REPO = Path(__file__).resolve().parents[2]


def test_all_is_every_step() -> None:
    assert chosen_steps("all", built=False) == frozenset(STEPS)
    assert "evaluation" in STEPS
    assert {"matrix.json", "api-matrix", "compare"} <= set(STEPS)


def test_a_list_is_taken_as_given() -> None:
    assert chosen_steps("matrix.json, api-matrix", built=False) == {"matrix.json", "api-matrix"}


def test_evaluation_brings_the_staging_it_needs() -> None:
    assert chosen_steps("evaluation,aggregation", built=False) == {
        "staging", "evaluation", "aggregation"}


def test_built_drops_the_evaluation() -> None:
    assert chosen_steps("all", built=True) == frozenset(STEPS) - {"evaluation"}
    assert chosen_steps("evaluation,run-page", built=True) == {"run-page"}


@pytest.mark.parametrize("names", ["matrix.json,matrix.xml", "", " , "])
def test_unknown_or_no_steps_are_refused(names: str) -> None:
    with pytest.raises(ValueError, match="unknown steps matrix.xml|no steps"):
        chosen_steps(names, built=False)


def test_the_command_refuses_an_unknown_step_before_it_starts_anything() -> None:
    done = subprocess.run(
        [sys.executable, "bench/scale_bench.py", "--steps", "upload,evaluate"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "unknown steps evaluate" in done.stderr
    assert done.stdout == ""
