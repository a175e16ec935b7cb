"""The fidelity pages: a suite's and chosen runs', the dataset page's translation-defect
candidates, and filing one into the review queue, with who gets a 404, a 400 or a login.

Runs here are stored with their per-problem scores directly: the pages read only those, and
what the analysis does with them is tested in test_fidelity_analysis.py. The canonical
suite, evaluated for real, is the known answer: every variant passes, so nothing is flagged.
"""

from __future__ import annotations

import json

import pytest

from evaluator.defects import parse_defect
from tests.webapp.factories import RunFactory
from tests.webapp.support import client_for
from webapp.benchmarks.models import Dataset, Problem
from webapp.runs.models import ProblemResult, Run
from webapp.suites.fidelity_models import DefectProposal
from webapp.suites.models import Suite, SuiteRun
from webapp.suites.services import suite_create, suite_upload

pytestmark = pytest.mark.django_db
TASKS = ("HumanEval/0", "HumanEval/1", "HumanEval/2")


def scored_run(personas, dataset: Dataset, passed: dict[str, tuple[int, int]], *,
               model: str = "alpha-7b", visibility: str = Run.Visibility.TEAM) -> Run:
    run = RunFactory.create(owner=personas.owner, team=personas.team, dataset=dataset,
                            model_name=model, visibility=visibility, name=f"{model} {dataset.key}")
    for task_id, (n, c) in passed.items():
        ProblemResult.objects.create(run=run, problem=Problem.objects.get(task_id=task_id),
                                     task_id=task_id, n=n, c=c)
    return run


def model_suite(personas, suite_variants, model: str, arabic: dict[str, tuple[int, int]],
                *, visibility: str = Run.Visibility.TEAM) -> Suite:
    """A model's suite: every problem passes in English and Russian; Arabic as given."""
    suite = suite_create(owner=personas.owner, team=personas.team, name=f"{model} suite",
                         model_name=model, revision="", decoding={})
    Suite.objects.filter(pk=suite.pk).update(visibility=visibility)
    for code in ("en", "ru", "ar"):
        scores = arabic if code == "ar" else {task: (10, 10) for task in TASKS}
        run = scored_run(personas, suite_variants[code], scores, model=model,
                         visibility=visibility)
        SuiteRun.objects.create(suite=suite, run=run)
    return suite


@pytest.fixture
def two_models(personas, suite_variants) -> list[Suite]:
    """Two models that both fail HumanEval/2 in Arabic; only one fails HumanEval/1 there."""
    return [
        model_suite(personas, suite_variants, "alpha-7b",
                    {"HumanEval/0": (10, 10), "HumanEval/1": (10, 0), "HumanEval/2": (10, 0)}),
        model_suite(personas, suite_variants, "beta-3b",
                    {"HumanEval/0": (10, 9), "HumanEval/1": (10, 10), "HumanEval/2": (10, 1)}),
    ]


def test_suite_page_flags_the_harder_variant_and_shows_it_side_by_side(personas, two_models):
    response = client_for(personas.teammate).get(f"/suites/{two_models[0].pk}/fidelity/")
    assert response.status_code == 200
    html = response.content.decode()
    fidelity = response.context["fidelity"]
    assert [(f.task_id, fidelity.variants[f.variant].natural_language)
            for f in fidelity.flags] == [("HumanEval/1", "ar"), ("HumanEval/2", "ar")]
    assert all(flag.tested and flag.significant_against == 2 for flag in fidelity.flags)
    assert len(fidelity.pairs) == 3
    assert 'id="flag-rule"' in html
    assert "median pass rate of the other variants" in html
    detail = html.split('id="flag-1"')[1].split("</article>")[0]
    # The Arabic prose runs right to left; its examples and tests stay left to right.
    assert 'lang="ar" dir="rtl"' in detail
    assert '<pre class="code doc-example" dir="ltr"' in detail
    assert 'class="diff-del"' in detail, "the translation differs from the English, word by word"
    assert 'data-side="reference" data-variant="humaneval/python/en"' in detail
    assert json.loads(html.split('id="fidelity-chart-data" type="application/json">')[1]
                      .split("</script>")[0])["pairs"][0]["label"].startswith("humaneval/")


def test_suite_page_outsider_gets_404(personas, two_models):
    assert client_for(personas.outsider).get(
        f"/suites/{two_models[0].pk}/fidelity/").status_code == 404
    assert client_for(None).get(f"/suites/{two_models[0].pk}/fidelity/").status_code == 404
    assert client_for(personas.owner).get("/suites/999999/fidelity/").status_code == 404


def test_canonical_suite_is_the_known_answer(personas, suite, canonical_files,
                                             django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert suite_upload(user=personas.owner, suite=suite, files=canonical_files()).created
    response = client_for(personas.owner).get(f"/suites/{suite.pk}/fidelity/")
    assert response.status_code == 200
    fidelity = response.context["fidelity"]
    assert len(fidelity.variants) == 3
    assert fidelity.flags == ()
    assert all(pair.diff == 0 and pair.p == 1.0 for pair in fidelity.pairs)
    assert 'id="no-flags"' in response.content.decode()


def test_chosen_runs_page(personas, two_models):
    runs = [member.run for member in two_models[1].members.select_related("run")]
    client = client_for(personas.owner)
    response = client.get("/suites/fidelity/", {"runs": ",".join(str(r.pk) for r in runs)})
    assert response.status_code == 200
    assert [f.task_id for f in response.context["fidelity"].flags] == ["HumanEval/2"]
    assert client.get("/suites/fidelity/").status_code == 200  # the picker alone


def test_chosen_runs_page_refuses_bad_ids(personas, two_models):
    runs = [member.run for member in two_models[0].members.select_related("run")]
    ids = ",".join(str(r.pk) for r in runs)
    outsider = client_for(personas.outsider).get("/suites/fidelity/", {"runs": ids})
    assert outsider.status_code == 400
    assert f"no run {runs[0].pk}" in outsider.content.decode()
    owner = client_for(personas.owner)
    for bad in ("1,x", "=HYPERLINK(\"http://x\")", "9" * 12, "١٢"):
        assert owner.get("/suites/fidelity/", {"runs": bad}).status_code == 400, bad
    one = owner.get("/suites/fidelity/", {"runs": str(runs[0].pk)})
    assert one.status_code == 400
    assert "at least two variants" in one.content.decode()
    assert owner.get("/suites/fidelity/", {"runs": ids, "oops": "1"}).status_code == 400


def test_two_runs_on_one_variant_keep_the_newest(personas, suite_variants, two_models):
    runs = [member.run for member in two_models[0].members.select_related("run")]
    older = scored_run(personas, suite_variants["ar"], {"HumanEval/0": (10, 0)})
    Run.objects.filter(pk=older.pk).update(created_at=runs[0].created_at.replace(year=2000))
    response = client_for(personas.owner).get(
        "/suites/fidelity/", {"runs": ",".join(str(r.pk) for r in [*runs, older])})
    assert response.status_code == 200
    assert [run.pk for run, _ in response.context["result"].left_out] == [older.pk]


def test_dataset_page_lists_candidates_of_every_model(personas, suite_variants, two_models):
    arabic = suite_variants["ar"]
    response = client_for(personas.teammate).get(f"/datasets/{arabic.pk}/")
    assert response.status_code == 200
    found = response.context["fidelity"]
    assert [(c.task_id, c.models) for c in found.candidates] == [("HumanEval/2", 2)]
    html = response.content.decode()
    assert f'href="/suites/fidelity/propose/{arabic.pk}/2/"' in html
    # The English page has none, and a viewer who sees no suite sees no candidate.
    english = client_for(personas.teammate).get(f"/datasets/{suite_variants['en'].pk}/")
    assert english.context["fidelity"].candidates == []
    outsider = client_for(personas.outsider).get(f"/datasets/{arabic.pk}/")
    assert outsider.context["fidelity"].candidates == []
    assert outsider.context["fidelity"].suites == 0


def test_filing_a_candidate_shows_the_exact_entry_first(personas, suite_variants, two_models):
    arabic = suite_variants["ar"]
    url = f"/suites/fidelity/propose/{arabic.pk}/2/"
    client = client_for(personas.teammate)
    assert client.get(url).status_code == 200
    form = {"kind": "prompt_contradiction", "defect": "The Arabic asks for the integer part.",
            "detect_field": "prompt", "detect_contains": "أعد الجزء"}
    preview = client.post(url, {**form, "action": "preview"})
    assert preview.status_code == 200
    shown = json.loads(preview.context["entry_json"])
    assert list(shown) == ["id", "dataset", "language", "task_id", "source_id", "kind",
                           "defect", "evidence", "effect", "canonical_fails", "tasks",
                           "flaky", "detect"]
    assert shown["task_id"] == "HumanEval/2"
    assert parse_defect(shown).to_dict() == shown, "the registry would load it as shown"
    assert "alpha-7b" in shown["evidence"]
    assert "beta-3b" in shown["evidence"]
    assert not DefectProposal.objects.exists(), "a preview files nothing"
    previewed = preview.context["previewed"]
    skipped = client.post(url, {**form, "action": "confirm"})
    assert skipped.status_code == 409, "no preview, no filing: the entry is shown first"
    edited = client.post(url, {**form, "defect": "Something else.", "action": "confirm",
                               "previewed": previewed})
    assert edited.status_code == 409
    assert json.loads(edited.context["entry_json"])["defect"] == "Something else."
    assert not DefectProposal.objects.exists()
    confirmed = client.post(url, {**form, "action": "confirm", "previewed": previewed})
    assert confirmed.status_code == 302
    assert confirmed["Location"] == "/suites/fidelity/queue/"
    proposal = DefectProposal.objects.get()
    assert proposal.entry == shown
    assert proposal.proposed_by == personas.teammate
    again = client.post(url, {**form, "action": "confirm", "previewed": previewed})
    assert again.status_code == 400
    assert "already has an open proposal" in again.content.decode()
    queue = client.get("/suites/fidelity/queue/")
    assert shown["id"] in queue.content.decode()
    # Another user sees only their own proposals; staff see every one.
    assert shown["id"] not in client_for(personas.owner).get(
        "/suites/fidelity/queue/").content.decode()
    personas.owner.is_staff = True
    personas.owner.save()
    assert shown["id"] in client_for(personas.owner).get(
        "/suites/fidelity/queue/").content.decode()


@pytest.mark.parametrize(("form", "message"), [
    ({"kind": "prompt_contradiction", "defect": "  "}, "Say what is wrong"),
    ({"kind": "no_such_kind", "defect": "x"}, "Unknown kind"),
    ({"kind": "wrong_test", "defect": "x", "detect_field": "prompt",
      "detect_contains": "not in the prompt \u202e"}, "not in this variant"),
    ({"kind": "wrong_test", "defect": "x", "detect_field": "record",
      "detect_contains": "a"}, "Choose where the text is"),
    ({"kind": "wrong_test", "defect": "x" * 2001}, "under 2000 characters"),
    ({"kind": "wrong_test", "defect": "a\u0000b"}, "NUL characters are not allowed"),
])
def test_filing_refuses_bad_drafts(personas, suite_variants, two_models, form, message):
    url = f"/suites/fidelity/propose/{suite_variants['ar'].pk}/2/"
    response = client_for(personas.owner).post(url, {**form, "action": "confirm"})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not DefectProposal.objects.exists()


def test_filing_needs_a_signed_in_user_and_a_candidate(personas, suite_variants, two_models):
    arabic = suite_variants["ar"].pk
    anonymous = client_for(None).get(f"/suites/fidelity/propose/{arabic}/2/")
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/")
    assert client_for(None).get("/suites/fidelity/queue/").status_code == 302
    # HumanEval/1 is not a candidate (beta passes it in Arabic); an outsider sees no suite.
    assert client_for(personas.owner).get(
        f"/suites/fidelity/propose/{arabic}/1/").status_code == 404
    assert client_for(personas.outsider).get(
        f"/suites/fidelity/propose/{arabic}/2/").status_code == 404
    assert client_for(personas.owner).get(
        f"/suites/fidelity/propose/{arabic}/150/").status_code == 404
    assert client_for(personas.owner).get(
        "/suites/fidelity/propose/999999/2/").status_code == 404


def test_one_flag_opens_on_its_own(personas, two_models):
    client = client_for(personas.owner)
    url = f"/suites/{two_models[0].pk}/fidelity/"
    response = client.get(url, {"problem": "2"})
    assert response.status_code == 200
    assert [d.flag.task_id for d in response.context["details"]] == ["HumanEval/2"]
    assert "Only HumanEval/2" in response.content.decode()
    not_flagged = client.get(url, {"problem": "0"})
    assert not_flagged.status_code == 400
    assert "HumanEval/0 is not flagged here" in not_flagged.content.decode()
    assert client.get(url, {"problem": "two"}).status_code == 400


def file_proposal(client, url: str, form: dict[str, str]):
    preview = client.post(url, {**form, "action": "preview"})
    return client.post(url, {**form, "action": "confirm",
                             "previewed": preview.context["previewed"]})


def test_staff_review_proposals_and_no_one_else(personas, suite_variants, two_models):
    arabic = suite_variants["ar"]
    client = client_for(personas.teammate)
    file_proposal(client, f"/suites/fidelity/propose/{arabic.pk}/2/",
                  {"kind": "wrong_test", "defect": "x"})
    proposal = DefectProposal.objects.get()
    url = f"/suites/fidelity/queue/{proposal.pk}/"
    assert client.post(url, {"status": "accepted"}).status_code == 404
    assert client_for(None).post(url, {"status": "accepted"}).status_code == 302
    personas.owner.is_staff = True
    personas.owner.save()
    staff = client_for(personas.owner)
    assert staff.get(url).status_code == 405
    assert staff.post(url, {"status": "merged"}).status_code == 400
    assert staff.post(url, {"status": "accepted"}).status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == DefectProposal.Status.ACCEPTED
    assert staff.post("/suites/fidelity/queue/999999/", {"status": "open"}).status_code == 404
    # Once it is closed, the same problem can be proposed again.
    again = file_proposal(client, f"/suites/fidelity/propose/{arabic.pk}/2/",
                          {"kind": "wrong_test", "defect": "y"})
    assert again.status_code == 302
    assert DefectProposal.objects.count() == 2
