"""Every public dataset file in ../shared/datasets loads, with the counts and alignment
the MANIFEST records. Skipped when the data is absent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaluator.datasets import Dataset, detect_layout, load_dataset
from evaluator.datasets.humaneval import reference_humaneval
from evaluator.datasets.layouts import layout_of_record
from evaluator.datasets.mhumaneval import INDENT_FIX
from evaluator.datasets.reading import read_path
from evaluator.datasets.signatures import comparable_name

ALL_IDS = [f"HumanEval/{n}" for n in range(164)]
MULTIPL_E_MISSING = {
    "cpp": {32, 38, 50},
    "js": {32, 38, 50},
    "java": {32, 38, 50, 103, 125, 137},
    "go": {12, 32, 38, 50, 90, 103, 125, 128, 137, 162},
    "rs": {22, 32, 38, 50, 103, 125, 137, 148},
}
XL_FILES = [
    f"{pl}/{language}.jsonl"
    for pl in ("python", "java", "javascript", "go")
    for language in ("English", "Russian", "Arabic")
]


@pytest.fixture(scope="module")
def datasets(shared_dir: Path) -> Path:
    return shared_dir / "datasets"


@pytest.fixture(scope="module")
def manifest_xl_mapping(datasets: Path) -> dict[int, int]:
    text = (datasets / "MANIFEST.md").read_text(encoding="utf-8")
    section = text.split("Mapping from `python/N` to `HumanEval/M`", 1)[1].split("\n- ", 1)[0]
    mapping = {int(n): int(m) for n, m in re.findall(r"(\d+)→(\d+)", section)}
    assert len(mapping) == 80
    return mapping


def _load(datasets: Path, relative: str) -> Dataset:
    return load_dataset(path=datasets / relative)


def _code_lines(code: str) -> list[str]:
    return [line for line in code.split("\n") if line.strip()]


def _assert_well_formed(dataset: Dataset) -> None:
    for problem in dataset.problems:
        assert problem.dataset == dataset.name
        assert (problem.language, problem.natural_language) == (
            dataset.language,
            dataset.natural_language,
        )
        assert problem.prompt
        assert problem.entry_point
        assert problem.source_id
        assert problem.dataset_version == dataset.version
        assert re.fullmatch(r".+:\d+", problem.source)


def test_file_copy_of_humaneval_equals_the_bundled_one(datasets: Path) -> None:
    copy = _load(datasets, "humaneval/HumanEval.jsonl.gz")
    bundled = load_dataset()
    assert copy.version == bundled.version
    assert [p.test for p in copy.problems] == [p.test for p in bundled.problems]


@pytest.mark.parametrize("language", ["cpp", "go", "java", "js", "python", "rust"])
def test_humaneval_x_has_164_aligned_problems(datasets: Path, language: str) -> None:
    dataset = _load(datasets, f"humaneval-x/humaneval_{language}.jsonl.gz")
    assert (dataset.layout, dataset.language) == ("humaneval-x", language)
    assert [p.task_id for p in dataset.problems] == ALL_IDS
    _assert_well_formed(dataset)
    for problem in dataset.problems:
        assert problem.entry_point in problem.test, problem.source_id
        assert problem.declaration
    if language == "go":
        assert all({"import", "test_setup", "docstring"} <= set(p.extra) for p in dataset.problems)
        assert dataset.problems[0].extra["test_setup"].startswith("package main")


@pytest.mark.parametrize(
    ("name", "variant", "has_test", "has_cases"),
    [
        ("HumanEvalPlus.jsonl.gz", "", True, True),
        ("HumanEvalPlus-NoExtreme.jsonl.gz", "noextreme", True, True),
        ("HumanEvalPlus-Mini.jsonl.gz", "mini", False, True),
        ("HumanEvalPlus-OriginFmt.jsonl.gz", "originfmt", True, False),
    ],
)
def test_humanevalplus_files(
    datasets: Path, name: str, variant: str, has_test: bool, has_cases: bool
) -> None:
    dataset = _load(datasets, f"humanevalplus/{name}")
    assert (dataset.name, dataset.variant) == ("humanevalplus", variant)
    assert [p.task_id for p in dataset.problems] == ALL_IDS
    _assert_well_formed(dataset)
    assert all(bool(p.test) == has_test for p in dataset.problems)
    assert all(bool(p.call_cases) == has_cases for p in dataset.problems)
    if has_cases:
        groups = {c.group for p in dataset.problems for c in p.call_cases}
        assert groups == {"base", "plus"}
        find_zero = dataset.get("HumanEval/32")
        assert find_zero is not None
        assert find_zero.extra["oracle"] == "poly_root"
        assert find_zero.call_cases[0].atol == 1e-4
        assert "contract" in find_zero.extra


def test_humanevalplus_keeps_every_input(datasets: Path) -> None:
    dataset = _load(datasets, "humanevalplus/HumanEvalPlus.jsonl.gz")
    cases = [c for p in dataset.problems for c in p.call_cases]
    assert len(cases) == 1570 + 122683  # base + plus inputs in v0.1.10


@pytest.mark.parametrize("relative", XL_FILES)
def test_humaneval_xl_mapping_is_the_manifests(
    datasets: Path, manifest_xl_mapping: dict[int, int], relative: str
) -> None:
    dataset = _load(datasets, f"humaneval-xl/{relative}")
    assert len(dataset.problems) == 80
    _assert_well_formed(dataset)
    mapping = {int(p.source_id.split("/")[1]): p.number for p in dataset.problems}
    assert mapping == manifest_xl_mapping
    expected_language = {"English": "en", "Russian": "ru", "Arabic": "ar"}
    assert dataset.natural_language == expected_language[relative.split("/")[1][:-6]]
    reference = reference_humaneval()
    for problem in dataset.problems:
        original = reference.get(problem.task_id)
        assert original is not None
        assert comparable_name(problem.entry_point) == comparable_name(original.entry_point)


def test_humaneval_xl_fallback_reproduces_the_sibling_mapping(
    datasets: Path, manifest_xl_mapping: dict[int, int], tmp_path: Path
) -> None:
    for pl in ("java", "javascript", "go"):
        orphan = tmp_path / pl / "Russian.jsonl"
        orphan.parent.mkdir()
        orphan.write_bytes((datasets / "humaneval-xl" / pl / "Russian.jsonl").read_bytes())
        dataset = load_dataset(path=orphan)
        assert dataset.problems[0].extra["alignment"] == "entry_point_order"
        mapping = {int(p.source_id.split("/")[1]): p.number for p in dataset.problems}
        assert mapping == manifest_xl_mapping


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Human_Expert_arb_Arab.json", "mhumaneval/python/ar/expert"),
        ("mHumanEval-arb_Arab-python.json", "mhumaneval/python/ar/machine"),
        ("mHumanEval-rus_Cyrl-python.json", "mhumaneval/python/ru/machine"),
        ("mHumanEval-eng_Latn-python.json", "mhumaneval/python/en/machine"),
    ],
)
def test_mhumaneval_files(datasets: Path, name: str, key: str) -> None:
    dataset = _load(datasets, f"mhumaneval/{name}")
    assert dataset.key == key
    assert [p.task_id for p in dataset.problems] == ALL_IDS
    _assert_well_formed(dataset)
    reference = reference_humaneval()
    first = dataset.problems[0]
    assert first.extra["fixes"] == [INDENT_FIX]
    original = reference.get("HumanEval/0")
    assert original is not None
    assert _code_lines(first.canonical_solution) == _code_lines(original.canonical_solution)
    compile(first.prompt + first.canonical_solution + first.test, first.source, "exec")
    assert [p.number for p in dataset.problems if "fixes" in p.extra] == [0]
    assert all(
        not any(k == "" or k.startswith("Unnamed") for k in p.extra) for p in dataset.problems
    )


@pytest.mark.parametrize("language", sorted(MULTIPL_E_MISSING))
def test_multipl_e_counts_and_gaps(datasets: Path, language: str) -> None:
    dataset = _load(datasets, f"multipl-e/humaneval-{language}.jsonl")
    missing = MULTIPL_E_MISSING[language]
    assert len(dataset.problems) == 164 - len(missing)
    assert {p.number for p in dataset.problems} == set(range(164)) - missing
    assert dataset.language == {"rs": "rust"}.get(language, language)
    _assert_well_formed(dataset)
    for problem in dataset.problems:
        assert problem.entry_point in problem.test, problem.source_id
        assert {"stop_tokens", "doctests", "prompt_terminology"} <= set(problem.extra)


def test_content_detection_agrees_with_names(datasets: Path) -> None:
    files = [p for p in datasets.rglob("*.json*") if p.parent.name != "babelcode"]
    assert len(files) == 32
    for path in files:
        layout = detect_layout(path)
        first = read_path(path).records[0].data
        expected = "humaneval" if "OriginFmt" in path.name else layout
        assert layout_of_record(first) == expected, path
