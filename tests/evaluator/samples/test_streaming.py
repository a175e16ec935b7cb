"""Reading a generation file as a stream (`SampleReader`): each sample is handed on as its
line is read, what the reader keeps does not grow with the file's text, and a limit on
samples per task stops a file of endless valid lines at once, gzip bomb or not."""

from __future__ import annotations

import gzip
import json
import random
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from evaluator.language_check import MAX_SOURCE_CHARS, SampleSpread, _spread
from evaluator.records import Problem, Sample
from evaluator.samples import SampleReader, read_samples
from tests.bombs import LINE, write_gzip_bomb


def test_each_sample_comes_as_its_line_is_read(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines([LINE.rstrip("\n")] * 20_000)
    reader = SampleReader(problems)
    with path.open("rb") as handle:
        first = next(reader.read(handle))
        assert (first.task_id, first.index, first.line) == ("HumanEval/0", 0, 1)
        assert handle.tell() == len(LINE), "the first sample comes before line 2 is read"


def test_the_reader_keeps_no_text_of_the_samples_it_handed_on(
    tmp_path: Path, problems: list[Problem]
) -> None:
    # 2,000 samples of 20 KB: 40 MB of text, of which the reader must keep none.
    path = tmp_path / "large.jsonl"
    with path.open("w") as out:
        for i in range(2000):
            task = problems[i % len(problems)].task_id
            out.write(json.dumps({"task_id": task,
                                  "completion": f"    return {i}\n" + "#" * 20_000}) + "\n")
    reader = SampleReader(problems, sanitize=True)
    tracemalloc.start()
    try:
        count = sum(1 for _ in reader.read(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 2000
    assert reader.ok, reader.issues
    assert reader.coverage().samples_total == 2000
    assert peak < 12_000_000, f"peak {peak:,} bytes for 40 MB of text"


def test_a_task_past_its_limit_stops_reading_with_too_large(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines([LINE.rstrip("\n")] * 10_000)
    reader = SampleReader(problems, max_samples_per_task=100)
    samples = list(reader.read(path))
    assert len(samples) == 100
    assert [issue.code for issue in reader.issues] == ["too_large"]
    message = reader.issues[0].message
    assert message.startswith("Line 101: more than 100 samples of HumanEval/0, the most a "
                              "file may hold for one task (16,400 in all for the 164 tasks of "
                              "humaneval/python)")
    assert "Split the file into files of at most 100 samples per task, one run each." in message
    assert not reader.ok


def test_a_gzip_bomb_of_valid_lines_is_refused_at_the_limit_not_at_its_end(
    tmp_path: Path, problems: list[Problem]
) -> None:
    """Issue 23: 7.9 MB of gzip, 2.6 GB of valid lines, held in memory line by line until
    1 GiB. Here 1 GiB in 3 MB, refused after 1,000 lines."""
    path = write_gzip_bomb(tmp_path / "bomb.jsonl.gz", expanded=1 << 30)
    assert path.stat().st_size < 4_000_000
    with gzip.open(path, "rt") as text:
        assert [text.readline() for _ in range(3)] == [LINE] * 3, "valid lines"

    started = time.monotonic()
    reader = SampleReader(problems, max_samples_per_task=1000)
    count = sum(1 for _ in reader.read(path, max_expanded_bytes=1 << 31))
    elapsed = time.monotonic() - started
    assert count == 1000
    assert [issue.code for issue in reader.issues] == ["too_large"]
    assert elapsed < 5, f"{elapsed:.1f} s"


@pytest.mark.parametrize("seed", range(12))
def test_the_spread_kept_is_what_the_language_check_would_choose_from_all(
    seed: int, problems: list[Problem]
) -> None:
    rng = random.Random(seed)
    tasks = [p.task_id for p in problems[: rng.choice([1, 2, 3, 7, 19, 20, 21, 164])]]
    samples = []
    per_task: dict[str, int] = {}
    for line in range(1, rng.randint(1, 3000)):
        task = rng.choice(tasks) if rng.random() < 0.7 else tasks[line % len(tasks)]
        text = "x" * (MAX_SOURCE_CHARS + 1) if rng.random() < 0.05 else f"    return {line}\n"
        per_task[task] = per_task.get(task, 0) + 1
        samples.append(Sample(task_id=task, index=per_task[task] - 1, raw=text,
                              completion=text, line=line))
    spread = SampleSpread()
    for sample in samples:
        spread.offer(sample)
    eligible = [s for s in samples if len(s.completion) <= MAX_SOURCE_CHARS]
    assert _spread(spread.samples, 20) == _spread(eligible, 20)
    assert len(spread.samples) <= 20 + len(tasks)


def test_samples_read_again_resolve_against_another_variant(
    write_lines: Callable[..., Path], problems: list[Problem], cpp_problems: list[Problem]
) -> None:
    path = write_lines([
        {"task_id": "HumanEval/1", "completion": "    return [1]\n"},
        {"task_id": "HumanEval/0", "completion": "```python\n    return 1\n```"},
        {"task_id": "HumanEval/1", "completion": "    return [2]\n", "completion_id": 7},
    ])
    first = list(SampleReader(problems).read(path))
    again = SampleReader(cpp_problems, sanitize=True)
    samples = list(again.reread(first))
    assert again.ok, again.issues
    assert [(s.task_id, s.index, s.line, s.source_task_id) for s in samples] == [
        ("HumanEval/1", 0, 1, "HumanEval/1"), ("HumanEval/0", 0, 2, "HumanEval/0"),
        ("HumanEval/1", 7, 3, "HumanEval/1")]
    assert samples[1].raw == first[1].raw
    assert again.coverage().samples_total == 3
    # Ids of the first variant's language are refused by the other, as reading the file
    # against it would refuse them.
    python_ids = [Sample(task_id="HumanEval/0", index=0, raw="x", completion="x", line=4,
                         source_task_id="Python/0")]
    other = SampleReader(cpp_problems)
    assert list(other.reread(python_ids)) == []
    assert [issue.code for issue in other.issues] == ["language_mismatch"]


def test_read_samples_still_gives_the_whole_file(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines([LINE.rstrip("\n")] * 3, compress=True)
    result = read_samples(path, problems)
    assert result.ok
    assert [(s.index, s.line) for s in result.samples] == [(0, 1), (1, 2), (2, 3)]
