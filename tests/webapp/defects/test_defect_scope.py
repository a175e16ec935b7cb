"""A registered defect leaves out only the runs it can touch: a missing example test says
nothing of a hidden-test run, a declaration broken for translation nothing of a generation
run, a cosmetic entry nothing of any run (issue 22: a C++ hidden-test run lost HumanEval/41,
50, 83, 84 and 160 to `missing_example_test`)."""

from __future__ import annotations

import hashlib

import pytest

from evaluator.defects import load_registry, parse_defect
from tests.webapp.support import RIGHT_0, WRONG_0, write_jsonl
from webapp.defects.scores import run_defects, run_three_way
from webapp.runs.models import Run
from webapp.runs.services.writes import run_create
from webapp.runs.upload_checks.files import EvaluationOptions, upload_check


def _entry(task_id: str, kind: str, **more: object) -> dict[str, object]:
    return {"id": f"t-{kind}-{task_id[-1]}", "dataset": "humaneval", "language": "python",
            "task_id": task_id, "kind": kind, "defect": kind, "evidence": "a test's",
            "effect": "known", **more}


@pytest.mark.parametrize(("entry", "hidden", "example", "translation"), [
    (_entry("HumanEval/1", "missing_example_test"), False, True, False),
    (_entry("HumanEval/1", "wrong_test", canonical_fails=["example"]), False, True, False),
    (_entry("HumanEval/1", "wrong_test", canonical_fails=["hidden"]), True, False, True),
    (_entry("HumanEval/1", "wrong_test"), True, True, True),
    (_entry("HumanEval/1", "broken_declaration", canonical_fails=["hidden"],
            tasks=["translation"]), False, False, True),
    (_entry("HumanEval/1", "cosmetic"), False, False, False),
    (_entry("HumanEval/1", "not_a_defect"), False, False, False),
])
def test_which_runs_a_defect_concerns(entry, hidden, example, translation):
    defect = parse_defect(entry)
    assert defect.concerns(tests="hidden", task="generation") is hidden
    assert defect.concerns(tests="example", task="generation") is example
    assert defect.concerns(tests="hidden", task="translation") is translation


def test_no_missing_example_test_of_the_registry_touches_a_hidden_test_run():
    missing = [d for d in load_registry().defects if d.kind == "missing_example_test"]
    assert len(missing) > 5
    assert not any(d.concerns(tests="hidden", task="generation") for d in missing)


@pytest.fixture
def scoped_registry(install_registry):
    return install_registry("scope-1", [_entry("HumanEval/0", "missing_example_test"),
                                        _entry("HumanEval/1", "wrong_test")])


def test_excluding_leaves_out_only_the_problems_whose_defect_touches_the_run(
        personas, humaneval, tmp_path, scoped_registry, django_capture_on_commit_callbacks):
    records = [{"task_id": "HumanEval/0", "completion": RIGHT_0},
               {"task_id": "HumanEval/0", "completion": WRONG_0},
               {"task_id": "HumanEval/1", "completion": "    return []\n"}]
    path = write_jsonl(tmp_path / "hidden.jsonl", records)
    check = upload_check(path=path, file_name=path.name,
                         sha256=hashlib.sha256(b"hidden").hexdigest(),
                         size=path.stat().st_size, dataset=humaneval,
                         options=EvaluationOptions())
    with django_capture_on_commit_callbacks(execute=True):
        run = run_create(owner=personas.owner, team=personas.team, check=check, name="hidden")
    run.refresh_from_db()
    assert run.status == Run.Status.FINISHED, run.error
    assert run.options["tests"] == "hidden"
    assert set(run_defects(run=run).defective) == {"HumanEval/1"}
    excluding = run_three_way(run=run, ks=(1,)).way("excluding")
    assert excluding.problems == 1
    assert [listed.task_id for listed in excluding.listed] == ["HumanEval/1"]
