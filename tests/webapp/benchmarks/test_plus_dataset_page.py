"""A plus test set's page: per language, the inputs kept, dropped by reason (also of the
problems the file left out), and flagged with the registry entries that explain them."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from evaluator.datasets import load_dataset
from tests.webapp.support import client_for
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import

ADD = {"prompt": "", "example_test": "", "test": "int main(){}\n",
       "declaration": "#include<stdio.h>\nint add(int x,int y){\n",
       "canonical_solution": "    return x+y;\n}\n"}
OMITTED = {"HumanEval/32": {"property_oracle": 9}}


def _plus_file(path: Path, language: str, plus: dict[str, Any]) -> Path:
    prefix = {"cpp": "CPP", "js": "JavaScript"}[language]
    record = {**ADD, "task_id": f"{prefix}/53", "plus": {
        "set": "mini", "inputs": 6, "kept": [0, 1, 3], "groups": ["base", "base", "plus"],
        "omitted": OMITTED, **plus}}
    if language == "js":
        record["declaration"] = "\nconst add = (x, y) => {\n"
        record["canonical_solution"] = "  return x + y;\n};\n"
    record["prompt"] = record["declaration"]
    path.mkdir(parents=True, exist_ok=True)
    target = path / f"humaneval_{language}.jsonl.gz"
    with gzip.open(target, "wt", encoding="utf-8") as stream:
        stream.write(json.dumps(record) + "\n")
    return target


def _import(path: Path) -> Dataset:
    dataset_import(loaded=load_dataset(path=path), source=str(path))
    return Dataset.objects.get(source=str(path))


@pytest.fixture
def plus_sets(db: None, tmp_path: Path) -> tuple[Dataset, Dataset]:
    cpp = _import(_plus_file(tmp_path / "cpp", "cpp", {
        "dropped": {"int_out_of_range": 2, "wrong_type": 1},
        "flagged": [{"input": 3, "inputs": 1, "cause": "overflow",
                     "defects": ["hx-js-112-canonical"]},
                    {"input": 1, "inputs": 1, "cause": "unexplained", "defects": []}]}))
    js = _import(_plus_file(tmp_path / "js", "js", {"dropped": {"text_outside_bmp": 3}}))
    return cpp, js


def _row(body: str, language: str) -> list[str]:
    start = body.index(f'data-language="{language}"')
    row = body[start:body.index("</tr>", start)]
    return [re.sub(r"<[^>]+>", "", cell).strip()
            for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]


def test_shows_kept_dropped_and_flagged_per_language(personas, plus_sets):
    cpp, js = plus_sets
    assert cpp.variant == "plus-mini"
    body = client_for(personas.owner).get(cpp.get_absolute_url()).content.decode()
    # language, problems, left out, inputs (6 + the 9 of the omitted problem), kept,
    # dropped, by reason, flagged, unexplained
    assert _row(body, "cpp") == [
        "cpp", "1", "1", "15", "3", "12",
        "property_oracle 9, int_out_of_range 2, wrong_type 1", "2", "1"]
    assert _row(body, "js")[5:] == ["12", "property_oracle 9, text_outside_bmp 3",
                                    "not validated"]
    assert "HumanEval/32: property_oracle 9" in re.sub(r"<[^>]+>", "", body)
    assert "hx-js-112-canonical" in body
    assert "1 unexplained" in body


def test_a_base_dataset_has_no_plus_section(personas, db, tmp_path):
    path = tmp_path / "humaneval_cpp.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write(json.dumps({**ADD, "task_id": "CPP/53",
                                 "prompt": ADD["declaration"]}) + "\n")
    dataset = _import(path)
    body = client_for(personas.owner).get(dataset.get_absolute_url()).content.decode()
    assert 'id="plus"' not in body
