"""Each generation-file layout is recognised and turned into the right `Sample`s."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evaluator.records import Problem
from evaluator.samples import read_samples


def test_reads_human_eval_layout_with_completion_ids(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines(
        [
            {"task_id": "HumanEval/0", "completion": "    return False\n", "completion_id": 7},
            {"task_id": "HumanEval/1", "completion": "    return []\n"},
        ]
    )
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert result.layout == "completion"
    first, second = result.samples
    assert (first.task_id, first.index, first.line, first.layout) == (
        "HumanEval/0",
        7,
        1,
        "completion",
    )
    assert (second.task_id, second.index, second.line) == ("HumanEval/1", 0, 2)
    assert not first.is_full_program


def test_index_is_position_among_the_tasks_samples_when_no_completion_id(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines(
        [
            {"task_id": "HumanEval/3", "completion": "    return True\n"},
            {"task_id": "HumanEval/4", "completion": "    return 0.0\n"},
            {"task_id": "HumanEval/3", "completion": "    return False\n"},
        ]
    )
    samples = read_samples(path, problems).samples
    assert [(s.task_id, s.index) for s in samples] == [
        ("HumanEval/3", 0),
        ("HumanEval/4", 0),
        ("HumanEval/3", 1),
    ]


def test_reads_codegeex_layout_and_normalises_language_prefixed_ids(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines(
        [
            {"task_id": "Python/3", "generation": "    return False\n", "completion_id": 0},
            {"task_id": "Python/3", "generation": "    return True\n", "completion_id": 1},
        ]
    )
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert result.layout == "generation"
    assert [(s.task_id, s.index, s.layout) for s in result.samples] == [
        ("HumanEval/3", 0, "generation"),
        ("HumanEval/3", 1, "generation"),
    ]


def test_reads_codegeex_cpp_ids_through_source_id(
    write_lines: Callable[..., Path], cpp_problems: list[Problem]
) -> None:
    path = write_lines([{"task_id": "CPP/2", "generation": "    return x;\n}\n"}])
    result = read_samples(path, cpp_problems)
    assert result.ok, result.issues
    assert result.samples[0].task_id == "HumanEval/2"


def test_reads_evalplus_solutions_as_full_programs(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    program = "def add(x: int, y: int):\n    return x + y\n"
    path = write_lines([{"task_id": "HumanEval/53", "solution": program}])
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert result.layout == "solution"
    (sample,) = result.samples
    assert sample.is_full_program
    assert sample.completion == program


def test_reads_babelcode_predictions_with_numeric_and_named_qids(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines(
        [
            {"qid": "53", "language": "Python", "code": "def add(x, y):\n    return x + y\n"},
            {"qid": 85, "language": "Python", "code": "def add(lst):\n    return 0\n"},
            {
                "qid": "HumanEval/2",
                "language": "python",
                "code": "def truncate_number(n):\n    return n % 1\n",
            },
        ]
    )
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert result.layout == "babelcode"
    assert [s.task_id for s in result.samples] == ["HumanEval/53", "HumanEval/85", "HumanEval/2"]
    assert all(s.is_full_program and s.layout == "babelcode" for s in result.samples)


def test_reads_codet_records_as_one_sample_per_list_item(
    write_lines: Callable[..., Path], problems: list[Problem], by_id: dict[str, Problem]
) -> None:
    prompt = by_id["HumanEval/23"].prompt.split(">>>")[0].rstrip() + '\n    """\n'
    path = write_lines([{"prompt": prompt, "samples": ["    return len(string)\n", "    pass\n"]}])
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert result.layout == "codet"
    assert [(s.task_id, s.index, s.line) for s in result.samples] == [
        ("HumanEval/23", 0, 1),
        ("HumanEval/23", 1, 1),
    ]


def test_accepts_multipl_e_and_bare_number_ids(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines(
        [
            {"task_id": "HumanEval_23_strlen", "completion": "    return len(string)\n"},
            {"task_id": "23", "completion": "    return 0\n"},
        ]
    )
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert [(s.task_id, s.index) for s in result.samples] == [
        ("HumanEval/23", 0),
        ("HumanEval/23", 1),
    ]


def test_source_id_wins_over_the_number_in_an_id(write_lines: Callable[..., Path]) -> None:
    # HumanEval-XL numbers its 80 problems itself: `python/4` is HumanEval/13.
    xl = [
        Problem(
            dataset="humaneval-xl",
            task_id="HumanEval/13",
            language="python",
            natural_language="ru",
            prompt='def greatest_common_divisor(a, b):\n    """НОД."""\n',
            entry_point="greatest_common_divisor",
            canonical_solution="",
            test="",
            source_id="python/4",
        )
    ]
    path = write_lines([{"task_id": "python/4", "completion": "    return a\n"}])
    result = read_samples(path, xl)
    assert result.ok, result.issues
    assert result.samples[0].task_id == "HumanEval/13"


def test_reads_gzip_detected_by_magic_bytes_not_by_name(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines(
        [{"task_id": "HumanEval/0", "completion": "    return False\n"}],
        name="no-extension",
        compress=True,
    )
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert len(result.samples) == 1


def test_reads_mera_style_completion_files_as_human_eval_layout(
    write_lines: Callable[..., Path], problems: list[Problem]
) -> None:
    path = write_lines(
        [
            {
                "task_id": "HumanEval/13",
                "completion": "    while b:\n        a, b = b, a % b\n    return a\n",
                "meta": {"id": 13},
            },
        ]
    )
    result = read_samples(path, problems)
    assert result.ok, result.issues
    assert result.layout == "completion"
