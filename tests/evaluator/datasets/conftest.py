"""Fixtures for the dataset loader tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def data_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "datasets"
