"""The suite upload tells each file's variant from its content: the page is told the guess
and its reason, and a file whose content contradicts the variant chosen for it is refused
until the user confirms the choice."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluator.datasets import load_dataset
from tests.webapp.support import client_for, write_jsonl
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.runs.models import Run
from webapp.suites.models import Suite
from webapp.suites.services import SuiteFile, suite_upload

pytestmark = pytest.mark.django_db

BODY = "    for i, x in enumerate(numbers):\n        if x is None:\n            return False\n" \
       "    return True\n"


@pytest.fixture
def humaneval_x(humaneval: Dataset, fixtures_dir: Path) -> Dataset:
    """HumanEval-X's Python (Python/0, /2, /23) beside OpenAI's HumanEval."""
    path = fixtures_dir / "datasets" / "humaneval_x" / "humaneval_python.jsonl"
    return dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset


def _codegeex_file(tmp_path: Path, name: str = "samples_python.jsonl") -> Path:
    """The case that ran silently on the wrong variant: named for Python, ids `Python/N`."""
    return write_jsonl(tmp_path / name, [{"task_id": f"Python/{n}", "generation": BODY}
                                         for n in (0, 2, 23)])


def test_a_file_whose_content_points_elsewhere_is_refused_until_confirmed(
        personas, suite: Suite, humaneval, humaneval_x, tmp_path):
    path = _codegeex_file(tmp_path)

    def upload(*, confirm_variants: bool = False, dry_run: bool = False):
        item = SuiteFile(uploaded=SimpleUploadedFile(path.name, path.read_bytes()),
                         dataset=humaneval)
        return suite_upload(user=personas.owner, suite=suite, files=[item],
                            confirm_variants=confirm_variants, dry_run=dry_run)

    refused = upload()
    assert not refused.ok
    [issue] = refused.files[0].errors
    assert issue.code == "variant_mismatch"
    assert issue.message.startswith(
        "The content points to humaneval-x/python/en (ids Python/0, Python/2, Python/23 in "
        "the HumanEval-X (CodeGeeX) layout, Python code), not to humaneval/python/en")
    assert "humaneval/python/en uses none of the 3 distinct ids read" in issue.message
    assert Run.objects.count() == 0
    confirmed = upload(confirm_variants=True, dry_run=True)
    assert confirmed.ok, [i.message for f in confirmed.files for i in f.errors]


def test_the_detected_variant_itself_is_accepted(personas, suite, humaneval_x, tmp_path):
    path = _codegeex_file(tmp_path)
    item = SuiteFile(uploaded=SimpleUploadedFile(path.name, path.read_bytes()),
                     dataset=humaneval_x)
    outcome = suite_upload(user=personas.owner, suite=suite, files=[item], dry_run=True)
    assert outcome.ok, [i.message for f in outcome.files for i in f.errors]


def test_the_page_shows_the_mismatch_and_the_box_that_confirms_it(
        personas, suite, humaneval, humaneval_x, tmp_path):
    client = client_for(personas.owner)
    page = client.get(f"/suites/{suite.pk}/runs/").content.decode()
    assert f'data-detect-url="/suites/{suite.pk}/runs/detect/"' in page
    assert 'name="confirm_variants"' in page
    path = _codegeex_file(tmp_path)
    with path.open("rb") as handle:
        response = client.post(f"/suites/{suite.pk}/runs/",
                               {"file": [handle], "dataset": [humaneval.key]})
    assert response.status_code == 400
    assert "points to humaneval-x/python/en" in response.content.decode()
    with path.open("rb") as handle:
        response = client.post(f"/suites/{suite.pk}/runs/",
                               {"file": [handle], "dataset": [humaneval.key],
                                "confirm_variants": "on", "dry_run": "on"})
    assert response.status_code == 200, response.content.decode()[:3000]
    assert "Every file passes its checks" in response.content.decode()


def test_the_api_names_the_mismatch_and_takes_the_confirmation(
        personas, suite, humaneval, humaneval_x, token_client, tmp_path):
    client = token_client(personas.owner)
    path = _codegeex_file(tmp_path)
    with path.open("rb") as handle:
        refused = client.post(f"/api/suites/{suite.pk}/runs",
                              {"file": [handle], "dataset": [humaneval.key]})
    assert refused.status_code == 400
    assert refused.json()["files"][0]["issues"][0]["code"] == "variant_mismatch"
    with path.open("rb") as handle:
        checked = client.post(f"/api/suites/{suite.pk}/runs",
                              {"file": [handle], "dataset": [humaneval.key],
                               "confirm_variants": "true", "dry_run": "true"})
    assert checked.status_code == 200, checked.content


def test_detect_answers_the_guess_with_its_reason(personas, suite, humaneval, humaneval_x,
                                                  tmp_path):
    path = _codegeex_file(tmp_path)
    url = f"/suites/{suite.pk}/runs/detect/"
    with path.open("rb") as handle:
        answer = client_for(personas.owner).post(url, {"head": handle, "name": path.name})
    assert answer.status_code == 200
    body = answer.json()
    assert body["key"] == "humaneval-x/python/en"
    assert body["reason"] == ("ids Python/0, Python/2, Python/23 in the HumanEval-X "
                              "(CodeGeeX) layout, Python code → humaneval-x/python/en")
    assert body["fitting"] == ["humaneval-x/python/en"]
    # The head of a gzip file, cut anywhere, is read as far as it goes.
    lines = "".join(json.dumps({"task_id": f"Python/{n % 3 * 2}", "generation": BODY + f"#{n}"})
                    + "\n" for n in range(4000)).encode()
    packed = gzip.compress(lines)
    head = SimpleUploadedFile("big.jsonl.gz", packed[:len(packed) // 2])
    body = client_for(personas.owner).post(url, {"head": head, "name": "big.jsonl.gz"}).json()
    assert body["key"] == "humaneval-x/python/en"
    assert body["lines"] == 200, "only the first lines are read"


def test_detect_is_for_those_who_may_upload(personas, suite, humaneval, tmp_path):
    path = _codegeex_file(tmp_path)
    url = f"/suites/{suite.pk}/runs/detect/"
    with path.open("rb") as handle:
        assert client_for(personas.outsider).post(url, {"head": handle}).status_code == 404
    with path.open("rb") as handle:
        assert client_for(personas.teammate).post(url, {"head": handle}).status_code == 403
    assert client_for(None).post(url).status_code == 302
    assert client_for(personas.owner).get(url).status_code == 405
    assert client_for(personas.owner).post(url, {}).status_code == 400
    whole = SimpleUploadedFile("whole.jsonl", b"{}\n" * (1 << 19))
    assert client_for(personas.owner).post(url, {"head": whole}).status_code == 400
