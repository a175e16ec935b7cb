"""HumanEval-X Python is assembled as CodeGeeX's evaluator assembles it: its fixed import
header (math, re, numpy as np, `from typing import *`...) comes before the prompt."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from language_support import evaluate_one, local_engine

from evaluator.engine import Engine, EngineConfig
from evaluator.languages.python import Python
from evaluator.records import Problem, RunOptions, Sample

PROMPT = 'def add(a: int, b: int) -> int:\n    """Add two numbers."""\n'
TEST = "\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n\ncheck(add)\n"
USES_MATH = "    return int(math.floor(a)) + b\n"


def problem(dataset: str) -> Problem:
    return Problem(dataset=dataset, task_id="HumanEval/53", language="python",
                   natural_language="en", prompt=PROMPT, entry_point="add",
                   canonical_solution="    return a + b\n", test=TEST,
                   source_id="Python/53")


def sample(completion: str) -> Sample:
    return Sample(task_id="HumanEval/53", index=0, raw=completion, completion=completion)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with local_engine(seconds=10, memory_mb=1024) as eng:
        yield eng


def test_the_program_starts_with_codegeexs_header() -> None:
    program, first_test_line = Python().build(problem("humaneval-x"), sample(USES_MATH),
                                              RunOptions())
    assert program.startswith("import math\nimport re\nimport sys\n")
    assert "import numpy as np\n" in program
    assert "from typing import *\n" in program
    assert program.splitlines()[first_test_line - 1:][2] == "def check(candidate):"


def test_other_datasets_get_no_header() -> None:
    program, _ = Python().build(problem("humaneval"), sample(USES_MATH), RunOptions())
    assert program.startswith(PROMPT)


def test_a_module_from_the_header_needs_no_import(engine: Engine) -> None:
    # CodeGeeX passes this generation; without the header it is a NameError.
    result = evaluate_one(engine, problem("humaneval-x"), sample(USES_MATH))
    assert result.status == "passed", result.message


def test_a_module_from_the_header_needs_no_import_under_codegeex() -> None:
    options = RunOptions(profile="codegeex")
    with Engine(EngineConfig(backend="none", workers=1, options=options)) as engine:
        result = evaluate_one(engine, problem("humaneval-x"), sample(USES_MATH))
    assert result.status == "passed", result.message


def test_numpy_as_np_is_available(engine: Engine) -> None:
    completion = "    return int(np.add(a, b))\n"
    assert evaluate_one(engine, problem("humaneval-x"), sample(completion)).status == "passed"
