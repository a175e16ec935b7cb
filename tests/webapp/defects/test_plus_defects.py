"""Defects only the plus tests show (`canonical_fails: ["plus"]`) in defect-aware scores
(issue 25): they exclude or repair a problem of a run on a plus set, as the base entries do
for a base run, and change nothing for a run on the base set.

The data is our own (tests/webapp/translated_plus.py): HumanEval-XL's Russian HumanEval/0
and /1, and their plus set, whose HumanEval/0 is built with a canonical solution that gives
up on lists longer than six. The plus tests take their expected values from it, so a right
sample fails them: the kind of defect `build-plus --validate` records as `hx-...-plus`.
Registry (written here): HumanEval/0 has that plus-only defect, with a patch that restores
the solution; HumanEval/1 has a defect of its shipped test (`float_equality`).

Samples: HumanEval/0 two right, one wrong; HumanEval/1 three right. pass@1:
  base run   original (2/3 + 1) / 2 = 5/6, excluding (/1 out) 2/3, patched: nothing to patch;
  plus run   original (0 + 1) / 2 = 1/2, excluding (/0 out) 1, patched (2/3 + 1) / 2 = 5/6.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evaluator.defects import INTERFACE_KIND, parse_defect
from evaluator.records import Problem
from tests.webapp.support import RIGHT_0, WRONG_0
from tests.webapp.translated_plus import (
    SOLUTION_0,
    SOLUTION_1,
    Translated,
    finished_run,
    import_translated,
)
from webapp.defects.scores import defects_of_problems, run_defects, run_three_way
from webapp.defects.services import patched_scoring_request
from webapp.runs.models import Run

GIVES_UP = "    if len(numbers) > 6:\n        return False\n"
SAMPLES = [{"task_id": "HumanEval/0", "completion": RIGHT_0},
           {"task_id": "HumanEval/0", "completion": RIGHT_0},
           {"task_id": "HumanEval/0", "completion": WRONG_0},
           *[{"task_id": "HumanEval/1", "completion": SOLUTION_1}] * 3]


def _entry(defect_id: str, task_id: str, kind: str, **more: Any) -> dict[str, Any]:
    return {"id": defect_id, "dataset": "humaneval-xl", "language": "python",
            "task_id": task_id, "kind": kind, "defect": f"{kind} in {task_id}",
            "evidence": "written for a test", "effect": "known", **more}


PLUS_ONLY = _entry("t-xl-0-plus", "HumanEval/0", "wrong_canonical", canonical_fails=["plus"],
                   patch={"description": "Keep long lists.",
                          "edits": [{"field": "canonical_solution", "old": GIVES_UP,
                                     "new": ""}]})
SHIPPED = _entry("t-xl-1-float", "HumanEval/1", "float_equality")


@pytest.fixture
def translated(db: None, fixtures_dir: Path, tmp_path: Path, install_registry) -> Translated:
    install_registry("plus-1", [PLUS_ONLY, SHIPPED])
    return import_translated(fixtures_dir, tmp_path,
                             canonical={"HumanEval/0": GIVES_UP + SOLUTION_0})


@pytest.fixture
def runs(personas, translated, tmp_path, token_client,
         django_capture_on_commit_callbacks) -> tuple[Run, Run]:
    """(the base run on HumanEval-XL's Russian, its plus run)."""
    client = token_client(personas.owner)
    base = finished_run(client, django_capture_on_commit_callbacks, tmp_path,
                        "humaneval-xl/python/ru", SAMPLES)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/api/runs/{base.pk}/plus").status_code == 201
    plus = Run.objects.get(plus_of=base)
    assert (plus.status, plus.dataset) == (Run.Status.FINISHED, translated.russian_plus)
    return base, plus


def _value(run: Run, way: str) -> float | None:
    point = run_three_way(run=run, ks=(1,)).way(way).at(1)
    return None if point is None else point.value


def test_a_plus_only_defect_leaves_the_base_run_alone(runs) -> None:
    base, _ = runs
    defects = run_defects(run=base)
    assert set(defects.defective) == {"HumanEval/1"}
    assert defects.patched == {}
    three = run_three_way(run=base, ks=(1,))
    assert [item.task_id for item in three.way("excluding").listed] == ["HumanEval/1"]
    assert _value(base, "original") == pytest.approx(5 / 6)
    assert _value(base, "excluding") == pytest.approx(2 / 3)
    assert three.way("patched").state == "ready"
    assert _value(base, "patched") == pytest.approx(5 / 6)


def test_a_plus_only_defect_is_excluded_from_the_plus_run(runs) -> None:
    _, plus = runs
    defects = run_defects(run=plus)
    # The shipped test's defect is not in tests built from HumanEval+'s inputs.
    assert set(defects.defective) == {"HumanEval/0"}
    assert [d.id for d in defects.patched["HumanEval/0"]] == ["t-xl-0-plus"]
    three = run_three_way(run=plus, ks=(1,))
    assert [item.task_id for item in three.way("excluding").listed] == ["HumanEval/0"]
    assert _value(plus, "original") == pytest.approx(1 / 2)
    assert _value(plus, "excluding") == pytest.approx(1.0)
    assert three.way("patched").state == "not_computed"


def test_a_plus_only_defect_is_repaired_by_its_patch_on_the_plus_run(
        runs, personas, django_capture_on_commit_callbacks) -> None:
    _, plus = runs
    with django_capture_on_commit_callbacks(execute=True):
        patched_scoring_request(user=personas.owner, run=plus)
    three = run_three_way(run=plus, ks=(1,))
    patched = three.way("patched")
    assert patched.state == "ready", patched.note
    # The restored solution gives the long lists their right expected values.
    (listed,) = patched.listed
    assert (listed.task_id, listed.c, listed.patched_c) == ("HumanEval/0", 0, 2)
    assert _value(plus, "patched") == pytest.approx(5 / 6)


def _plus_problem(dropped: dict[str, int]) -> Problem:
    return Problem(dataset="humaneval-xl", task_id="HumanEval/0", language="python",
                   natural_language="ru", prompt="", entry_point="f", canonical_solution="",
                   test="", extra={"plus": {"set": "mini", "dropped": dropped}})


def test_an_interface_entry_counts_only_where_its_inputs_were_not_left_out(
        install_registry) -> None:
    entry = _entry("t-xl-0-interface", "HumanEval/0", INTERFACE_KIND,
                   canonical_fails=["plus"], inputs=["[[1.0], 0.5]"])
    assert parse_defect(entry).test_sets == ("plus",)
    install_registry("plus-2", [entry])
    built_without = {"HumanEval/0": _plus_problem({"variant_interface": 1})}
    assert defects_of_problems(built_without).defective == {}
    built_with = {"HumanEval/0": _plus_problem({})}
    assert set(defects_of_problems(built_with).defective) == {"HumanEval/0"}


@pytest.mark.parametrize(("kind", "fails", "plus"), [
    ("float_equality", [], False),
    ("vacuous_test", [], False),
    ("wrong_test", [], False),
    ("wrong_test", ["hidden", "plus"], True),
    ("wrong_canonical", [], True),
    ("wrong_canonical", ["plus"], True),
    ("broken_declaration", ["hidden"], True),
])
def test_which_entries_concern_the_plus_tests(kind: str, fails: list[str], plus: bool
                                              ) -> None:
    defect = parse_defect(_entry("t", "HumanEval/0", kind, canonical_fails=fails))
    assert defect.concerns(tests="plus", task="generation") is plus
    assert defect.concerns(tests="hidden", task="generation") is (fails != ["plus"])
