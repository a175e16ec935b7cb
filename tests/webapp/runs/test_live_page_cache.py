"""A running run's page under load (`page_cache.live_entry`): a request that finds its entry
stale is served it at once while one request draws the next, every part of one page comes
from one entry (the one whose event number the page resumes from), a run that came to rest
is never drawn from its live entry, and a cache that fails still answers."""

from __future__ import annotations

import json
import re
import socket
import time
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.cache import cache
from django.http import HttpResponse
from redis.exceptions import ConnectionError as RedisConnectionError

from tests.webapp.support import client_for
from webapp.runs.models import Run
from webapp.runs.pages import views
from webapp.runs.reads import page_cache, reports, selectors
from webapp.runs.worker.tasks import evaluate_run

pytestmark = pytest.mark.django_db(transaction=True)


def _live_config(page: bytes) -> dict[str, Any]:
    match = re.search(rb'<script id="run-live-config" type="application/json">(.*?)</script>',
                      page, re.S)
    assert match, "the run page has no live config"
    return json.loads(match.group(1))


def _kept_keys(prefix: str) -> list[str]:
    # The in-memory cache's own keys are ":<version>:<key>".
    return [key.split(":", 2)[2] for key in getattr(cache, "_cache", {})
            if key.split(":", 2)[2].startswith(prefix)]


def _live_key() -> str:
    (key,) = [key for key in _kept_keys("page:run-live:") if ":redraw:" not in key]
    return key


def _make_stale(key: str) -> dict[str, Any]:
    entry = cache.get(key)
    assert entry is not None, key
    # Stale a moment ago: served while it is drawn again (not yet too old to serve).
    cache.set(key, {**entry, "fresh_until": time.time() - 1}, page_cache.LIVE_KEPT_SECONDS)
    return entry


def _redraw_claim(key: str, entry: dict[str, Any]) -> str:
    return f"{key}:redraw:{entry['drawn']}"


class Answer(HttpResponse):
    """An answer drawn from a live entry: its value."""

    def __init__(self, value: object) -> None:
        super().__init__(str(value))
        self.value = value


def _answered(key: str, draw, *, stale_seconds: float | None = None) -> Answer:
    options = {} if stale_seconds is None else {"stale_seconds": stale_seconds}
    answered = page_cache.live_page(key, draw, lambda entry: Answer(entry["value"]), **options)
    assert isinstance(answered, Answer)
    return answered


def _calls_of(monkeypatch: pytest.MonkeyPatch, where: Any, name: str, real: Any) -> list[int]:
    """`where.name` replaced by `real`, counted: one element a call."""
    calls: list[int] = []

    def counted(**kwargs: Any) -> Any:
        calls.append(1)
        return real(**kwargs)

    monkeypatch.setattr(where, name, counted)
    return calls


def _counting() -> tuple[list[int], Any]:
    draws: list[int] = []

    def draw() -> int:
        draws.append(len(draws) + 1)
        return draws[-1]

    return draws, draw


def test_a_stale_entry_is_answered_at_once_and_drawn_again_once_an_answer_is_sent():
    key = page_cache.key_of("test-live", 1)
    draws, draw = _counting()
    _answered(key, draw).close()
    _make_stale(key)
    winner = _answered(key, draw)
    assert winner.value == 1, "the request that claimed the redraw is answered from the stale entry"
    assert draws == [1], "nothing drawn before its answer is sent"
    for _ in range(3):
        other = _answered(key, draw)
        assert other.value == 1
        other.close()
    assert draws == [1], "one request draws it again, the others draw nothing"
    winner.close()  # the server has sent it
    assert draws == [1, 2], "drawn again once the answer was sent"
    assert _answered(key, draw).value == 2, "kept, and fresh"
    assert draws == [1, 2]


def test_the_next_entry_is_kept_only_once_an_answer_is_drawn_from_it():
    """So that the requests it is served to find the parts of their page drawn."""
    key = page_cache.key_of("test-live", 2)
    draws, draw = _counting()
    _answered(key, draw).close()
    _make_stale(key)
    kept_when_answered: list[object] = []

    def answer(entry: Any) -> Answer:
        kept_when_answered.append(cache.get(key)["drawn"])
        return Answer(entry["value"])

    answered = page_cache.live_page(key, draw, answer)
    assert answered is not None
    answered.close()
    assert draws == [1, 2]
    first, redrawn = kept_when_answered
    assert first == redrawn, "the old entry was still the one kept while its next was drawn"
    assert cache.get(key)["drawn"] != first


def test_a_redraw_that_fails_after_the_answer_keeps_the_entry_before(caplog):
    key = page_cache.key_of("test-live", 3)
    _answered(key, lambda: "old").close()
    entry = _make_stale(key)

    def failing() -> str:
        raise RuntimeError("the database went away")

    answered = _answered(key, failing)
    assert answered.value == "old"
    answered.close()  # no error reaches the server
    assert cache.get(key)["drawn"] == entry["drawn"], "the old entry is still served"
    assert "drawing" in caplog.text
    assert "the database went away" in caplog.text


def test_an_entry_that_does_not_serve_is_neither_kept_nor_drawn_again():
    key = page_cache.key_of("test-live", 4)
    draws, draw = _counting()
    assert page_cache.live_page(key, draw, lambda entry: None) is None
    assert cache.get(key) is None
    _answered(key, draw).close()
    _make_stale(key)
    assert page_cache.live_page(key, draw, lambda entry: None) is None
    assert draws == [1, 2], "no redraw after an answer that was not given"


def test_an_entry_stale_past_its_limit_is_drawn_before_answering():
    key = page_cache.key_of("test-live", 5)
    draws, draw = _counting()
    _answered(key, draw, stale_seconds=3).close()
    entry = cache.get(key)
    cache.set(key, {**entry, "fresh_until": time.time() - 2}, page_cache.LIVE_KEPT_SECONDS)
    stale = _answered(key, draw, stale_seconds=3)
    assert stale.value == 1, "stale within its limit: served"
    stale.close()
    assert draws == [1, 2]
    entry = cache.get(key)
    cache.set(key, {**entry, "fresh_until": time.time() - 4}, page_cache.LIVE_KEPT_SECONDS)
    answered = _answered(key, draw, stale_seconds=3)
    assert answered.value == 3, "past it: drawn for this answer"
    assert draws == [1, 2, 3]
    answered.close()
    assert draws == [1, 2, 3], "and not drawn again after it"


def _evaluated_as_running(unstarted_run, name: str) -> tuple[Run, list[tuple[int, str]]]:
    """A run evaluated for real, then seen as still running at its first event: its
    finished samples as (seq, status), in order."""
    run = unstarted_run(name)
    evaluate_run.delay(run.pk)
    finished = sorted(run.samples.exclude(seq=None).values_list("seq", "status"))
    assert len(finished) >= 3, "the run evaluated samples"
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    _advance(run, finished, up_to=finished[0][0])
    return run, finished


def _advance(run: Run, finished: list[tuple[int, str]], *, up_to: int) -> None:
    """The run's counters and event number as they were at event `up_to`: only what a run
    still going changes with every sample (`page_cache.LIVE_FIELDS`)."""
    statuses = Counter(status for seq, status in finished if seq <= up_to)
    Run.objects.filter(pk=run.pk).update(
        event_seq=up_to, done_count=sum(statuses.values()), cached_count=0,
        **{f"{status}_count": statuses[status] for status in
           ("passed", "failed", "error", "compile_error", "timeout", "memory",
            "sandbox_error")})


def _shown(page: bytes) -> tuple[int, int, int, int]:
    """The event number the page resumes from, and the samples done by it as the live
    config, the progress part and the problem table (kept parts) each show them."""
    config = _live_config(page)
    progress = re.search(rb'<span id="progress-text">(\d+) / \d+</span>', page)
    assert progress
    table = sum(int(n) for n in re.findall(rb'<td class="num" data-cell="n">(\d+)</td>', page))
    return config["seq"], config["done"], int(progress.group(1)), table


def test_a_running_run_page_is_served_stale_while_another_request_draws_it(
    personas, unstarted_run, monkeypatch,
):
    run, finished = _evaluated_as_running(unstarted_run, "stale")
    snapshots = _calls_of(monkeypatch, views, "run_snapshot", selectors.run_snapshot)
    client = client_for(personas.owner)
    first = finished[0][0]
    assert _shown(client.get(run.get_absolute_url()).content) == (first, 1, 1, 1)
    _advance(run, finished, up_to=finished[-1][0])
    key = _live_key()
    entry = _make_stale(key)
    # Another request (another web process, say) claimed its redraw: this one is served
    # the entry it has, at once, all of it from that entry.
    assert cache.add(_redraw_claim(key, entry), 1, page_cache.LIVE_CLAIM_SECONDS)
    assert _shown(client.get(run.get_absolute_url()).content) == (first, 1, 1, 1)
    assert len(snapshots) == 1, "nothing drawn by a request served the stale entry"
    # The claim lapsed unanswered (that request died): the next request claims it, is
    # answered from the entry it found, and draws the next once its answer is sent (the
    # test client closes a response as a server does after its last byte).
    cache.delete(_redraw_claim(key, entry))
    assert _shown(client.get(run.get_absolute_url()).content) == (first, 1, 1, 1)
    assert len(snapshots) == 2, "drawn again after that answer"
    tables = _calls_of(monkeypatch, views, "run_problem_table", reports.run_problem_table)
    done = len(finished)
    assert _shown(client.get(run.get_absolute_url()).content) == (finished[-1][0], done,
                                                                  done, done)
    assert (len(snapshots), tables) == (2, []), "its page's parts were drawn with it"


def test_every_part_of_a_redrawn_page_comes_from_its_new_entry(personas, unstarted_run):
    """The progress part and the table are kept under the page's key: drawn again with the
    entry, never carried over from the page of the entry before, whose event number the
    page no longer resumes from (the events between would never be counted)."""
    run, finished = _evaluated_as_running(unstarted_run, "one-entry")
    client = client_for(personas.owner)
    before = None
    for up_to in (finished[0][0], finished[1][0], finished[-1][0]):
        _advance(run, finished, up_to=up_to)
        if before is not None:
            _make_stale(_live_key())
            # The request that finds it stale is answered from it, all of it.
            assert _shown(client.get(run.get_absolute_url()).content) == before
        seq, config_done, progress_done, table_done = _shown(
            client.get(run.get_absolute_url()).content)
        done = sum(1 for at, _ in finished if at <= up_to)
        assert (seq, config_done, progress_done, table_done) == (up_to, done, done, done)
        before = (seq, config_done, progress_done, table_done)


def test_a_run_that_came_to_rest_is_never_drawn_from_its_live_entry(
    personas, unstarted_run, monkeypatch,
):
    run, finished = _evaluated_as_running(unstarted_run, "rest")
    client = client_for(personas.owner)
    live = client.get(run.get_absolute_url()).content
    assert _live_config(live)["live"] is True
    assert b"running pass@1" in live
    # It finishes between the request's read of its row and the reread after its live
    # entry (fresh, and its parts kept) was found.
    real = selectors.run_can_manage

    def finishing(**kwargs: Any) -> bool:
        Run.objects.filter(pk=run.pk).update(status=Run.Status.FINISHED)
        return real(**kwargs)

    monkeypatch.setattr(views, "run_can_manage", finishing)
    page = client.get(run.get_absolute_url()).content
    assert _live_config(page)["live"] is False
    assert "problems" not in _live_config(page)
    assert b"running pass@1" not in page
    assert b"Most common failure" in page
    # And once its row says so, its page is a finished run's from the start.
    monkeypatch.setattr(views, "run_can_manage", real)
    page = client.get(run.get_absolute_url()).content
    assert _live_config(page)["live"] is False
    assert b"running pass@1" not in page


def test_a_claim_the_cache_fails_to_take_still_serves_the_page(
    personas, unstarted_run, monkeypatch,
):
    run, finished = _evaluated_as_running(unstarted_run, "claim-fails")
    client = client_for(personas.owner)
    client.get(run.get_absolute_url())
    _make_stale(_live_key())

    def failing(*args: Any, **kwargs: Any) -> bool:
        raise RedisConnectionError("Redis is restarting")

    monkeypatch.setattr(cache, "add", failing)
    response = client.get(run.get_absolute_url())
    assert response.status_code == 200
    assert _shown(response.content)[0] == finished[0][0]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_cache_that_is_down_costs_the_drawing_never_the_page(
    personas, unstarted_run, settings, caplog,
):
    run, finished = _evaluated_as_running(unstarted_run, "down")
    settings.CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": f"redis://127.0.0.1:{_closed_port()}/0",
        "OPTIONS": {"socket_timeout": 1, "socket_connect_timeout": 1},
    }}
    client = client_for(personas.owner)
    for up_to in (finished[0][0], finished[-1][0]):
        _advance(run, finished, up_to=up_to)
        response = client.get(run.get_absolute_url())
        assert response.status_code == 200
        done = sum(1 for at, _ in finished if at <= up_to)
        assert _shown(response.content) == (up_to, done, done, done), "drawn each time"
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FINISHED)
    response = client.get(run.get_absolute_url())
    assert response.status_code == 200
    assert _live_config(response.content)["live"] is False
    assert "page cache unavailable" in caplog.text, "the cache was really down"


def test_a_running_runs_summary_is_answered_stale_for_one_live_period_at_most(
    personas, unstarted_run, token_client, monkeypatch,
):
    """`GET /api/runs/<id>`: its status and progress read on every request, the rest kept
    `LIVE_SECONDS`, then served while it is drawn again after a response, up to one more."""
    from webapp.runs.api import endpoints as api

    run, finished = _evaluated_as_running(unstarted_run, "api")
    draws: list[int] = []
    real = selectors.run_summary

    def counted(**kwargs: Any) -> dict[str, Any]:
        draws.append(1)
        return {**real(**kwargs), "draw": len(draws)}

    monkeypatch.setattr(api, "run_summary", counted)
    client = token_client(personas.owner)
    url = f"/api/runs/{run.pk}"
    assert [client.get(url).json()["draw"] for _ in range(2)] == [1, 1]
    (key,) = [key for key in _kept_keys("page:api-run:") if ":redraw:" not in key]
    _make_stale(key)
    _advance(run, finished, up_to=finished[-1][0])
    body = client.get(url).json()
    assert (body["draw"], body["progress"]["done"]) == (1, len(finished)), "progress is fresh"
    assert len(draws) == 2, "drawn again once that answer was sent"
    assert client.get(url).json()["draw"] == 2
    cache.set(key, {**cache.get(key), "fresh_until": time.time() - page_cache.LIVE_SECONDS - 1},
              page_cache.LIVE_KEPT_SECONDS)
    assert client.get(url).json()["draw"] == 3, "older than that: drawn for the answer"


def test_a_running_runs_defect_aware_block_is_not_drawn_again_every_few_seconds(
    personas, unstarted_run, monkeypatch,
):
    """It says the scores come when the run finishes until the run's state (its key) changes."""
    from django.core.cache.backends import locmem

    from webapp.defects import views as defect_views
    from webapp.defects.templatetags import defect_scores

    run, _ = _evaluated_as_running(unstarted_run, "block")
    drawn = _calls_of(monkeypatch, defect_scores, "defect_aware_context",
                      defect_views.defect_aware_context)
    client = client_for(personas.owner)
    assert b"Computed when the run finishes." in client.get(run.get_absolute_url()).content
    now = time.time
    monkeypatch.setattr(locmem, "time",
                        SimpleNamespace(time=lambda: now() + 2 * page_cache.LIVE_SECONDS))
    assert b"Computed when the run finishes." in client.get(run.get_absolute_url()).content
    assert drawn == [1]
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FINISHED)
    client.get(run.get_absolute_url())
    assert drawn == [1, 1], "a new state, a new block"
