"""Python programs for tests that drive a runner directly, as the engine would send them:
jobs that name Python's harness, and the mounts and environment a runner needs for them
(the sandbox itself knows no language)."""

from __future__ import annotations

from typing import Any

from evaluator.languages import get_language
from evaluator.languages.python import HARNESS_JOB

PYTHON = get_language("python")
PYTHON_MOUNTS = tuple(PYTHON.mounts())
PYTHON_ENV = {"EVALUATOR_PRELOAD": ",".join(PYTHON.preload), **PYTHON.environment()}


def python_job(**fields: Any) -> dict[str, Any]:
    """A job for Python's harness: `mode`, `source`, `limits`..."""
    return {**HARNESS_JOB, **fields}
