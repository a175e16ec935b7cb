"""A running run's page under load (`page_cache.live_entry`): a request that finds its entry
stale is served it at once while one request draws the next, every part of one page comes
from one entry (the one whose event number the page resumes from), a run that came to rest
is never drawn from its live entry, and a cache that fails still answers."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections import Counter
from typing import Any

import pytest
from django.core.cache import cache
from redis.exceptions import ConnectionError as RedisConnectionError

from tests.webapp.support import client_for
from webapp.runs.models import Run
from webapp.runs.pages import views
from webapp.runs.reads import page_cache, selectors
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
    cache.set(key, {**entry, "fresh_until": 0.0}, page_cache.LIVE_KEPT_SECONDS)
    return entry


def _redraw_claim(key: str, entry: dict[str, Any]) -> str:
    return f"{key}:redraw:{entry['drawn']}"


def test_a_stale_entry_is_served_at_once_while_one_request_draws_the_next():
    key = page_cache.key_of("test-live", 1)
    draws: list[int] = []

    def draw() -> int:
        draws.append(len(draws) + 1)
        return draws[-1]

    with page_cache.live_entry(key, draw) as entry:
        assert entry["value"] == 1
    _make_stale(key)
    redrawing, drawn = threading.Event(), threading.Event()
    seen_by_winner: list[int] = []

    def winner() -> None:
        with page_cache.live_entry(key, draw) as entry:
            seen_by_winner.append(entry["value"])
            redrawing.set()
            # Its page is being drawn: the others must not wait for it, nor see its entry.
            drawn.wait(30)

    thread = threading.Thread(target=winner)
    thread.start()
    try:
        assert redrawing.wait(30), "no request drew the stale entry again"
        for _ in range(3):
            with page_cache.live_entry(key, draw) as entry:
                assert entry["value"] == 1, "served the stale entry, not one half drawn"
    finally:
        drawn.set()
        thread.join(30)
    assert seen_by_winner == [2]
    assert draws == [1, 2], "one request drew it again, the others drew nothing"
    with page_cache.live_entry(key, draw) as entry:
        assert entry["value"] == 2, "kept once its page was drawn, and fresh"
    assert draws == [1, 2]


def test_an_entry_whose_page_failed_to_draw_is_not_kept():
    key = page_cache.key_of("test-live", 2)
    with page_cache.live_entry(key, lambda: "old"):
        pass
    entry = _make_stale(key)
    with pytest.raises(RuntimeError), page_cache.live_entry(key, lambda: "new"):
        raise RuntimeError("the page failed")
    assert cache.get(key)["drawn"] == entry["drawn"], "the page's entry is the old one still"


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
    snapshots: list[int] = []
    real = selectors.run_snapshot

    def counted(**kwargs: Any) -> Any:
        snapshots.append(1)
        return real(**kwargs)

    monkeypatch.setattr(views, "run_snapshot", counted)
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
    # The claim lapsed unanswered (that request died): the next request draws it again.
    cache.delete(_redraw_claim(key, entry))
    done = len(finished)
    assert _shown(client.get(run.get_absolute_url()).content) == (finished[-1][0], done,
                                                                  done, done)
    assert len(snapshots) == 2


def test_every_part_of_a_redrawn_page_comes_from_its_new_entry(personas, unstarted_run):
    """The progress part and the table are kept under the page's key: drawn again with the
    entry, never carried over from the page of the entry before, whose event number the
    page no longer resumes from (the events between would never be counted)."""
    run, finished = _evaluated_as_running(unstarted_run, "one-entry")
    client = client_for(personas.owner)
    for up_to in (finished[0][0], finished[1][0], finished[-1][0]):
        _advance(run, finished, up_to=up_to)
        if up_to != finished[0][0]:
            _make_stale(_live_key())
        seq, config_done, progress_done, table_done = _shown(
            client.get(run.get_absolute_url()).content)
        done = sum(1 for at, _ in finished if at <= up_to)
        assert (seq, config_done, progress_done, table_done) == (up_to, done, done, done)


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
