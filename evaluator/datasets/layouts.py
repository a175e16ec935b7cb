"""Which loader reads a file: `LAYOUTS`, and `detect_layout` to choose among them.

Detection trusts the file's name first, since the names the benchmarks ship under are
distinctive (and are the only way to tell HumanEval+ OriginFmt from the original). A
renamed file is recognised by the fields of its first record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from evaluator.datasets.babelcode import QUESTION_FIELDS as BABELCODE_FIELDS
from evaluator.datasets.babelcode import is_babelcode_file, load_babelcode
from evaluator.datasets.dataset import Dataset, DatasetError
from evaluator.datasets.humaneval import HUMANEVAL_FIELDS, load_humaneval
from evaluator.datasets.humaneval_x import is_humaneval_x_file, load_humaneval_x
from evaluator.datasets.humaneval_xl import is_humaneval_xl_file, load_humaneval_xl
from evaluator.datasets.humanevalplus import is_humanevalplus_file, load_humanevalplus
from evaluator.datasets.mera import REQUIRED_FIELDS as MERA_FIELDS
from evaluator.datasets.mera import is_mera_file, load_mera
from evaluator.datasets.mhumaneval import is_mhumaneval_file, load_mhumaneval
from evaluator.datasets.multipl_e import is_multipl_e_file, load_multipl_e
from evaluator.datasets.reading import read_path


class Loader(Protocol):
    def __call__(self, path: Path, *, max_expanded_bytes: int | None = None) -> Dataset: ...


LAYOUTS: dict[str, Loader] = {
    "humaneval": load_humaneval,
    "humaneval-x": load_humaneval_x,
    "humaneval-xl": load_humaneval_xl,
    "humanevalplus": load_humanevalplus,
    "mhumaneval": load_mhumaneval,
    "multipl-e": load_multipl_e,
    "mera-ruhumaneval": load_mera,
    "babelcode": load_babelcode,
}

_HUMANEVAL_FILE = re.compile(r"HumanEval\.jsonl(?:\.gz)?")

# Checked in order: HumanEval+ before HumanEval-X before plain human-eval names.
_BY_NAME: tuple[tuple[Callable[[Path], bool], str], ...] = (
    (is_humanevalplus_file, "humanevalplus"),
    (lambda path: _HUMANEVAL_FILE.fullmatch(path.name) is not None, "humaneval"),
    (is_humaneval_x_file, "humaneval-x"),
    (is_mhumaneval_file, "mhumaneval"),
    (is_multipl_e_file, "multipl-e"),
    (is_humaneval_xl_file, "humaneval-xl"),
    (is_mera_file, "mera-ruhumaneval"),
    (is_babelcode_file, "babelcode"),
)


def detect_layout(path: Path, *, max_expanded_bytes: int | None = None) -> str:
    """The `LAYOUTS` key for `path`, from its name or else its first record."""
    path = Path(path)
    for matches, layout in _BY_NAME:
        if matches(path):
            return layout
    first = read_path(path, max_expanded_bytes=max_expanded_bytes).records[0].data
    found = layout_of_record(first)
    if found is None:
        raise DatasetError(
            f"{path}: unknown dataset layout (first record has fields {sorted(first)}); "
            f"pass layout= one of {sorted(LAYOUTS)}"
        )
    return found


def layout_of_record(record: Mapping[str, Any]) -> str | None:
    keys = set(record)
    if keys >= MERA_FIELDS:
        return "mera-ruhumaneval"
    if keys >= BABELCODE_FIELDS - {"id"}:
        return "babelcode"
    if "base_input" in keys or "plus_input" in keys:
        return "humanevalplus"
    if "stop_tokens" in keys or keys >= {"name", "tests"}:
        return "multipl-e"
    if keys >= {"nl", "pl", "prompt"}:
        return "mhumaneval"
    if keys >= {"description", "natural_language", "entry_point"}:
        return "humaneval-xl"
    if keys >= {"task_id", "declaration"}:
        return "humaneval-x"
    if keys >= HUMANEVAL_FIELDS:
        return "humaneval"
    return None
