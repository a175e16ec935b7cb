"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def shared_path() -> Path:
    """`../shared` beside the checkout, or `$WORKBENCH_SHARED`."""
    return Path(os.environ.get("WORKBENCH_SHARED", REPO_ROOT.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    path = shared_path()
    if not (path / "datasets").is_dir():
        pytest.skip(f"public benchmark data not found at {path} "
                    "(set WORKBENCH_SHARED to ../shared)")
    return path


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
