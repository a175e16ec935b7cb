"""The facts read with a run's own row (`selectors.run_facts_of`): its latest change, its
plus runs, its reproductions and the viewer's role in its team. Each is hand-written SQL,
so each is held here to the answer of the query it replaces, for every kind of run and
viewer; and a write in the same request makes the next read ask again."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db.models import Max

from tests.webapp.factories import RunFactory
from webapp.runs.models import Run, RunChange
from webapp.runs.reads.page_cache import run_version
from webapp.runs.reads.selectors import (
    HAS_PLUS_RUNS,
    HAS_REPRODUCTIONS,
    LAST_CHANGE,
    VIEWER_ROLE,
    get_run_for_user,
)
from webapp.runs.services.writes import run_change_record
from webapp.teams.models import Membership
from webapp.teams.selectors import keep_roles, role_in_team


def _runs(personas, humaneval) -> dict[str, Run]:
    def made(**fields: object) -> Run:
        return RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                                 **fields)

    plain = made(visibility=Run.Visibility.PUBLIC)
    with_plus = made(visibility=Run.Visibility.TEAM)
    made(plus_of=with_plus)
    reproduced = made(visibility=Run.Visibility.PUBLIC)
    made(reproduction_of=reproduced)
    only_deleted_reproduction = made(visibility=Run.Visibility.PUBLIC)
    made(reproduction_of=only_deleted_reproduction, deleted_at="2026-01-01T00:00:00Z")
    for field in ("name", "visibility"):
        run_change_record(run=reproduced, actor=personas.owner, field=field, before="a",
                          after="b")
    return {"plain": plain, "with plus": with_plus, "reproduced": reproduced,
            "only a deleted reproduction": only_deleted_reproduction}


@pytest.mark.django_db
def test_each_fact_is_what_its_own_query_answers(personas, humaneval):
    runs = _runs(personas, humaneval)
    viewers = [personas.owner, personas.teammate, personas.outsider, AnonymousUser()]
    for name, run in runs.items():
        for viewer in viewers:
            if (run.visibility == Run.Visibility.TEAM
                    and viewer not in (personas.owner, personas.teammate)):
                continue  # not theirs to see: a 404, tested elsewhere
            read = get_run_for_user(user=viewer, run_id=run.pk)
            case = (name, str(viewer))
            assert getattr(read, LAST_CHANGE) == RunChange.objects.filter(
                run_id=run.pk).aggregate(last=Max("pk"))["last"], case
            assert getattr(read, HAS_PLUS_RUNS) == Run.objects.filter(
                plus_of=run).exists(), case
            assert getattr(read, HAS_REPRODUCTIONS) == Run.objects.filter(
                reproduction_of=run, deleted_at__isnull=True).exists(), case
            if viewer.is_authenticated:
                assert getattr(read, VIEWER_ROLE) == Membership.objects.filter(
                    team=run.team, user=viewer).values_list("role", flat=True).first(), case
            else:
                assert not hasattr(read, VIEWER_ROLE), case
    # The cases are not all alike: each fact takes both answers somewhere.
    owners = {name: get_run_for_user(user=personas.owner, run_id=run.pk)
              for name, run in runs.items()}
    assert getattr(owners["with plus"], HAS_PLUS_RUNS) is True
    assert getattr(owners["plain"], HAS_PLUS_RUNS) is False
    assert getattr(owners["reproduced"], HAS_REPRODUCTIONS) is True
    assert getattr(owners["only a deleted reproduction"], HAS_REPRODUCTIONS) is False
    assert getattr(owners["reproduced"], LAST_CHANGE) is not None
    assert getattr(owners["plain"], LAST_CHANGE) is None


@pytest.mark.django_db
def test_the_role_read_with_the_run_answers_the_requests_later_questions(
        personas, humaneval, django_assert_num_queries):
    run = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval)
    keep_roles(personas.teammate)
    get_run_for_user(user=personas.teammate, run_id=run.pk)
    with django_assert_num_queries(0):
        assert role_in_team(user=personas.teammate, team_id=personas.team.pk) == "member"


@pytest.mark.django_db
def test_a_change_recorded_in_the_request_gives_the_run_a_new_version(personas, humaneval):
    run = get_run_for_user(user=personas.owner, run_id=RunFactory.create(
        owner=personas.owner, team=personas.team, dataset=humaneval).pk)
    before = run_version(run=run)
    run_change_record(run=run, actor=personas.owner, field="leaderboard", before="listed",
                      after="confirmed")
    assert run_version(run=run) != before
