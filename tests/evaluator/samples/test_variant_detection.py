"""Telling from the first lines of a generation file which stored variant it was written
for: ids, layout, code and prompt language decide; the file's name only breaks ties."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.datasets import load_dataset
from evaluator.variant_detection import (
    Candidate,
    Evidence,
    detect_variant,
    read_evidence,
)

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"

PY_BODY = ("    for i, x in enumerate(numbers):\n        if x is None:\n            return False\n"
           "    return True\n")
CPP_BODY = ("    for (int i=0;i<numbers.size();i++)\n"
            "        if (std::abs(numbers[i])) return true;\n")
RUST_BODY = "    let mut total: i32 = 0;\n    for x in v.iter() { total += x; }\n    total\n}\n"


def _numbers(prefix: str, count: int = 164) -> frozenset[str]:
    return frozenset(f"{prefix}/{n}" for n in range(count))


def _candidate(key: str, *, source_prefix: str = "HumanEval", count: int = 164) -> Candidate:
    name, language, natural = key.split("/")[:3]
    return Candidate(key=key, name=name, language=language, natural_language=natural,
                     ids=_numbers("HumanEval", count) | _numbers(source_prefix, count))


CANDIDATES = [
    _candidate("humaneval/python/en"),
    _candidate("humaneval-x/python/en", source_prefix="Python"),
    _candidate("humaneval-x/cpp/en", source_prefix="CPP"),
    _candidate("humaneval-x/rust/en", source_prefix="Rust"),
    _candidate("mhumaneval/python/ru/machine"),
    _candidate("mhumaneval/python/ar/expert"),
]


def _evidence(records: list[dict[str, Any]], *, gzipped: bool = False,
              max_lines: int = 200) -> Evidence:
    data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode()
    return read_evidence(io.BytesIO(gzip.compress(data) if gzipped else data),
                         max_lines=max_lines)


def test_humaneval_x_ids_win_over_a_name_that_says_python():
    records = [{"task_id": f"Python/{n}", "generation": PY_BODY} for n in range(164)]
    detection = detect_variant(_evidence(records), CANDIDATES, file_name="samples_python.jsonl")
    assert detection.key == "humaneval-x/python/en"
    assert detection.reason == ("ids Python/0…163 in the HumanEval-X (CodeGeeX) layout, "
                                "Python code → humaneval-x/python/en")
    mismatch = detection.mismatch("humaneval/python/en")
    assert "points to humaneval-x/python/en" in mismatch
    assert "humaneval/python/en uses none of the 164 distinct ids read" in mismatch
    assert detection.mismatch("humaneval-x/python/en") == ""


def test_cpp_ids_and_code_point_to_the_cpp_variant_even_gzipped():
    records = [{"task_id": f"CPP/{n}", "completion": CPP_BODY} for n in range(10)]
    detection = detect_variant(_evidence(records, gzipped=True), CANDIDATES,
                               file_name="samples_python.jsonl")
    assert detection.key == "humaneval-x/cpp/en"
    assert "C++ code" in detection.reason
    assert "the code is C++ and humaneval/python/en is Python" in detection.mismatch(
        "humaneval/python/en")


def test_the_code_decides_when_the_ids_name_no_language():
    records = [{"task_id": f"HumanEval/{n}", "completion": RUST_BODY} for n in range(5)]
    detection = detect_variant(_evidence(records), CANDIDATES, file_name="out.jsonl")
    assert detection.key == "humaneval-x/rust/en"
    assert detection.evidence.code_language == "rust"


def test_the_name_only_breaks_ties_among_variants_the_content_fits():
    records = [{"task_id": f"HumanEval/{n}", "completion": PY_BODY} for n in range(5)]
    evidence = _evidence(records)
    assert detect_variant(evidence, CANDIDATES, file_name="x.jsonl").key == \
        "humaneval/python/en", "the original benchmark when nothing tells them apart"
    arabic = detect_variant(evidence, CANDIDATES, file_name="mhumaneval-python-ar-expert.jsonl")
    assert arabic.key == "mhumaneval/python/ar/expert"
    assert "the file's name chose" in arabic.reason
    # Every Python variant that writes HumanEval/N fits: choosing another is no mismatch.
    assert set(arabic.fitting) == {"humaneval/python/en", "humaneval-x/python/en",
                                   "mhumaneval/python/ru/machine",
                                   "mhumaneval/python/ar/expert"}
    assert arabic.mismatch("mhumaneval/python/ru/machine") == ""


def test_prompts_show_the_natural_language():
    prompt = 'def f(x):\n    """Возвращает наибольший общий делитель двух целых чисел."""\n'
    records = [{"prompt": prompt, "samples": [PY_BODY, PY_BODY]} for _ in range(3)]
    detection = detect_variant(_evidence(records), CANDIDATES, file_name="humaneval.jsonl")
    assert detection.key == "mhumaneval/python/ru/machine"
    assert "prompts in Russian" in detection.reason
    assert "the prompts are in Russian and humaneval/python/en is in English" in \
        detection.mismatch("humaneval/python/en")


def test_only_the_first_lines_are_read():
    records = [{"task_id": f"Python/{n}", "generation": PY_BODY} for n in range(50)]
    records += [{"task_id": f"CPP/{n}", "completion": CPP_BODY} for n in range(500)]
    evidence = _evidence(records, max_lines=20)
    assert evidence.lines == 20
    assert evidence.ids == [f"Python/{n}" for n in range(20)]


def test_hostile_heads_give_no_guess_and_no_error():
    data = b"\xff\xfe not json\n[1, 2]\n{\"task_id\": 7}\n" + b"x" * 3000 + b"\n"
    evidence = read_evidence(io.BytesIO(data))
    detection = detect_variant(evidence, CANDIDATES, file_name="")
    assert detection.key == "humaneval/python/en" or detection.key is None
    assert detection.mismatch("humaneval-x/cpp/en") == ""
    # The page sends the first bytes of a file: a gzip stream cut short still gives its lines.
    lines = "".join(json.dumps({"task_id": f"CPP/{n}", "completion": f"int x = {n * 7919};"})
                    + "\n" for n in range(3000)).encode()
    packed = gzip.compress(lines)
    assert read_evidence(io.BytesIO(packed[:len(packed) // 3])).ids[:2] == ["CPP/0", "CPP/1"]
    assert detect_variant(Evidence(), [], file_name="a.jsonl").key is None


def test_stored_fixture_datasets_as_candidates():
    loaded = [load_dataset(path=FIXTURES / "humaneval" / "HumanEval.jsonl"),
              load_dataset(path=FIXTURES / "humaneval_x" / "humaneval_python.jsonl"),
              load_dataset(path=FIXTURES / "humaneval_x" / "humaneval_go.jsonl")]
    candidates = [Candidate(key=d.key, name=d.name, language=d.language,
                            natural_language=d.natural_language,
                            ids=frozenset({p.task_id for p in d.problems}
                                          | {p.source_id for p in d.problems if p.source_id}))
                  for d in loaded]
    records = [{"task_id": "Python/0", "generation": PY_BODY},
               {"task_id": "Python/2", "generation": PY_BODY}]
    detection = detect_variant(_evidence(records), candidates, file_name="samples_python.jsonl")
    assert detection.key == "humaneval-x/python/en"
    assert detection.reason.startswith("ids Python/0, Python/2 in the HumanEval-X")


@pytest.mark.skipif(not (SHARED / "datasets" / "humaneval-x").is_dir(),
                    reason="../shared/datasets is missing: the real HumanEval-X files are "
                           "needed for this check")
@pytest.mark.parametrize("language", ["cpp", "go", "java", "js", "python", "rust"])
def test_real_canonical_solutions_are_told_apart(language):
    candidates = []
    for name in ("cpp", "go", "java", "js", "python", "rust"):
        dataset = load_dataset(path=SHARED / "datasets" / "humaneval-x" /
                               f"humaneval_{name}.jsonl.gz")
        candidates.append(Candidate(
            key=dataset.key, name=dataset.name, language=dataset.language,
            natural_language="en",
            ids=frozenset({p.task_id for p in dataset.problems}
                          | {p.source_id for p in dataset.problems if p.source_id})))
    wanted = next(c for c in candidates if c.language == language)
    with gzip.open(SHARED / "datasets" / "humaneval-x" / f"humaneval_{language}.jsonl.gz") as f:
        # HumanEval/N ids: only the code can tell the languages apart.
        records = [{"task_id": "HumanEval/" + r["task_id"].split("/")[1],
                    "completion": r["canonical_solution"]} for r in map(json.loads, f)]
    detection = detect_variant(_evidence(records), candidates, file_name="samples.jsonl")
    assert detection.key == wanted.key, detection.evidence.code_marks


@pytest.mark.skipif(not (SHARED / "generations" / "codegen-16b-n100").is_dir(),
                    reason="../shared/generations is missing: the real CodeT file is needed")
def test_a_real_codet_file_is_read_no_further_than_its_head():
    [path] = (SHARED / "generations" / "codegen-16b-n100").glob("*.jsonl.gz")
    with path.open("rb") as handle:
        evidence = read_evidence(handle, max_lines=20)
    assert evidence.lines == 20
    assert evidence.layout == "codet"
    assert (evidence.code_language, evidence.natural_language) == ("python", "en")
    candidates = [c for c in CANDIDATES if c.language == "python"]
    detection = detect_variant(evidence, candidates, file_name=path.name)
    assert detection.key == "humaneval/python/en"
    assert detection.mismatch("mhumaneval/python/ru/machine").endswith(
        "the prompts are in English and mhumaneval/python/ru/machine is in Russian.")
