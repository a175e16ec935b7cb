"""Whether a sandbox backend works here: tests that need one skip with the reason, except
in CI (`CI=true`), where every backend must work and a missing one fails the test."""

from __future__ import annotations

import os

import pytest

from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.base import SandboxError

_availability: dict[str, str | None] = {}


def backend_reason(name: str) -> str | None:
    """None when backend `name` works here, else why not (probed once per process)."""
    if name not in _availability:
        try:
            get_backend(name)
            _availability[name] = None
        except SandboxError as exc:
            _availability[name] = str(exc)
    return _availability[name]


def require_backend(name: str) -> None:
    """Skip (or, in CI, fail) the calling test unless backend `name` works here."""
    reason = backend_reason(name)
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"backend {name} must work in CI: {reason}")
    pytest.skip(f"backend {name} is not available here: {reason}")
