"""Reading dataset files: containers, compression, and errors that name file and line."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from evaluator.datasets import DatasetError, reading
from evaluator.datasets.reading import read_bytes, read_path


def test_jsonl_records_remember_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n', encoding="utf-8")
    records = read_path(path).records
    assert [(r.line, r.index, r.data["a"]) for r in records] == [(1, 0, 1), (3, 1, 2)]
    assert records[1].where == f"{path}:3"


def test_json_array_records_remember_their_lines() -> None:
    text = '[\n  {"a": 1},\n  {\n    "a": 2\n  },\n  {"a": 3}\n]\n'
    records = read_bytes(text.encode(), "x.json").records
    assert [(r.line, r.data["a"]) for r in records] == [(2, 1), (3, 2), (6, 3)]


def test_wrapped_split_is_unwrapped() -> None:
    text = json.dumps({"data": {"train": [{"a": 0}], "test": [{"a": 1}, {"a": 2}]}}, indent=2)
    records = read_bytes(text.encode(), "task.json").records
    assert [r.data["a"] for r in records] == [1, 2]
    assert records[1].where == "task.json: data.test[1]"


def test_gzip_is_recognised_by_content_not_name(tmp_path: Path) -> None:
    path = tmp_path / "plain-name.jsonl"
    path.write_bytes(gzip.compress(b'{"a": 1}\n'))
    assert read_path(path).records[0].data == {"a": 1}


def test_version_is_sha256_prefix_of_the_file_bytes(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}\n'))
    assert read_path(path).version == hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def test_malformed_json_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": \n', encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"{path}:3: invalid JSON"):
        read_path(path)


def test_malformed_first_line_is_reported_on_line_one(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"a": 1\n{"a": 2}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"data\.jsonl:1: invalid JSON"):
        read_path(path)


def test_malformed_array_element_names_its_line() -> None:
    with pytest.raises(DatasetError, match=r"x\.json:3: invalid JSON"):
        read_bytes(b'[\n{"a": 1},\n{"a": }\n]', "x.json")


def test_garbage_after_array_is_rejected() -> None:
    with pytest.raises(DatasetError, match=r"x\.json:2: unexpected content after"):
        read_bytes(b'[{"a": 1}]\n[{"a": 2}]', "x.json")


def test_missing_comma_in_array_names_the_line() -> None:
    with pytest.raises(DatasetError, match=r"x\.json:3: expected ',' or ']'"):
        read_bytes(b'[\n{"a": 1},\n{"a": 2} {"a": 3}\n]', "x.json")


@pytest.mark.parametrize("content", [b"", b"\n  \n", b"[]", b"[\n]\n"])
def test_empty_file_is_rejected(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with pytest.raises(DatasetError, match="empty file"):
        read_path(path)


def test_truncated_gzip_is_rejected(tmp_path: Path) -> None:
    whole = gzip.compress(b'{"a": 1}\n' * 200)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DatasetError, match=rf"{path}: truncated gzip"):
        read_path(path)


def test_corrupt_gzip_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(b"\x1f\x8b" + b"\x00" * 30)
    with pytest.raises(DatasetError, match=rf"{path}: corrupt gzip"):
        read_path(path)


def test_gzip_bomb_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "MAX_DECOMPRESSED_BYTES", 1000)
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(b" " * 5000 + b'{"a": 1}\n'))
    with pytest.raises(DatasetError, match="inflates to more than 1000 bytes"):
        read_path(path)


def test_deep_nesting_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"a": 1}\n{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"deep\.jsonl:2: JSON nested too deeply"):
        read_path(path)


def test_non_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"a": "x"}\n{"a": "\xe9"}\n')
    with pytest.raises(DatasetError, match=r"latin\.jsonl:2: not UTF-8"):
        read_path(path)


def test_record_that_is_not_an_object_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "list.jsonl"
    path.write_text('{"a": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"list\.jsonl:2: expected a JSON object, got list"):
        read_path(path)


def test_missing_file_is_a_dataset_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        read_path(tmp_path / "absent.jsonl")


def test_utf8_bom_is_ignored() -> None:
    records = read_bytes(b'\xef\xbb\xbf{"a": 1}\n', "bom.jsonl").records
    assert records[0].data == {"a": 1}


def test_line_separator_inside_a_string_does_not_split_the_record() -> None:
    raw = '{"a": "x\u2028y"}\n'.encode()
    records = read_bytes(raw, "ls.jsonl").records
    assert records[0].data["a"] == "x\u2028y"


def test_field_errors_name_the_line(tmp_path: Path) -> None:
    record = read_bytes(b'{"a": 1}\n', "f.jsonl").records[0]
    with pytest.raises(DatasetError, match=r"f\.jsonl:1: missing field 'b'"):
        record.text("b")
    with pytest.raises(DatasetError, match=r"f\.jsonl:1: field 'a' must be a string, got int"):
        record.text("a")


def test_gzip_limit_can_be_given_per_read(tmp_path: Path) -> None:
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(b" " * 5000 + b'{"a": 1}\n'))
    with pytest.raises(DatasetError, match=rf"{path}: inflates to more than 1000 bytes"):
        read_path(path, max_expanded_bytes=1000)
    assert read_path(path, max_expanded_bytes=6000).records[0].data == {"a": 1}


@pytest.mark.parametrize(("text", "where", "field"), [
    ('{"prompt": "x"}\n{"prompt": "def f():\\n    \\ud800"}\n', ":2", "prompt"),
    ('[{"a": 1}, {"tests": ["ok", "\\udfff"]}]', ":1", "tests[1]"),
    ('{"data": {"test": [{"x\\udc00y": 1}]}}', ": data.test[0]", "x\\udc00y"),
])
def test_lone_surrogate_names_the_record_and_field(text: str, where: str, field: str) -> None:
    with pytest.raises(DatasetError) as caught:
        read_bytes(text.encode(), "data.jsonl")
    message = str(caught.value)
    assert message.startswith(f"data.jsonl{where}: field '{field}' holds \\u")
    message.encode("utf-8")
