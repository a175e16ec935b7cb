"""A defect registry written by a test, read by the evaluator (which applies its patches)
and by the defect-aware scores, with their per-process caches emptied around it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import evaluator.defects as registry_module
from evaluator.defects import Registry
from webapp.defects import scores as scores_module


@pytest.fixture
def install_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                     ) -> Iterator[Callable[[str, list[dict[str, Any]]], Registry]]:
    read = registry_module.load_registry  # the real reader, before a test replaces it

    def install(version: str, entries: list[dict[str, Any]]) -> Registry:
        # A file per version: a test may install a second registry (the reader keeps each
        # path's answer).
        path = tmp_path / f"registry-{version}.json"
        path.write_text(json.dumps({"version": version, "defects": entries}),
                        encoding="utf-8")
        registry = read(path)
        monkeypatch.setattr(registry_module, "load_registry", lambda *args: registry)
        monkeypatch.setattr(scores_module, "load_registry", lambda *args: registry)
        scores_module._cache.clear()
        scores_module._scores_cache.clear()
        return registry

    yield install
    scores_module._cache.clear()
    scores_module._scores_cache.clear()
