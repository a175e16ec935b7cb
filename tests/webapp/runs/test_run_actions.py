"""`act_on_run`, behind the run page's buttons that start something on a run (resume, compare
the harness profiles, compute the patched scores): the service acts for the viewer, and the
page is left its refusal or the news that the work started."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.test import RequestFactory

from tests.webapp.factories import RunFactory
from webapp.runs.pages.run_actions import act_on_run


def _request(user):
    request = RequestFactory().post("/")
    request.user = user
    for middleware in (SessionMiddleware, MessageMiddleware):
        middleware(lambda request: HttpResponse()).process_request(request)
    return request


def _left(request) -> list[tuple[str, str]]:
    return [(message.level_tag, message.message) for message in get_messages(request)]


@pytest.fixture
def run(personas, humaneval):
    return RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval)


def test_the_action_runs_for_the_viewer_and_the_page_hears_it_started(personas, run):
    calls = []
    request = _request(personas.owner)
    found = act_on_run(request, run.pk, lambda *, user, run: calls.append((user, run)),
                       started="Under way.")
    assert found == run
    assert calls == [(personas.owner, run)]
    assert _left(request) == [("success", "Under way.")]


def test_a_refusal_is_shown_in_place_of_the_news(personas, run):
    def refuse(*, user, run):
        raise ValidationError(["Not now.", "Try later."])

    request = _request(personas.owner)
    assert act_on_run(request, run.pk, refuse, started="Under way.") == run
    assert _left(request) == [("error", "Not now. Try later.")]


def test_an_outsider_gets_a_404_and_nothing_runs(personas, run):
    calls = []
    with pytest.raises(Http404):
        act_on_run(_request(personas.outsider), run.pk,
                   lambda *, user, run: calls.append(run), started="Under way.")
    assert calls == []
