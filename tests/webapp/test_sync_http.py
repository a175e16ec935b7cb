"""HTTP through the web process's ASGI application (webapp/sync_http.py): Django's sync
handler, each request wholly on one long-lived thread of a pool, answers as Django would,
streams a download a part at a time, and stops drawing for a client that went away."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import MutableMapping
from typing import Any

import pytest
from django.core.signals import request_finished, request_started
from django.test import override_settings

from tests.webapp import sync_http_views
from webapp.sync_http import SyncDjangoHTTP, wsgi_environ

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.urls("tests.webapp.sync_http_views")]


def scope_of(path: str, *, method: str = "GET", query: bytes = b"",
             headers: list[tuple[bytes, bytes]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
            "query_string": query, "root_path": "",
            "headers": [(b"host", b"127.0.0.1:8000"), *(headers or [])],
            "client": ("10.0.0.7", 50123), "server": ("127.0.0.1", 8000), **extra}


class Exchange:
    """One request through the application, with the messages it sent. `hang_up_after`:
    the client disconnects once it has that many body messages."""

    def __init__(self, app: SyncDjangoHTTP, scope: dict[str, Any], body: bytes = b"",
                 *, chunk: int = 0, hang_up_after: int | None = None) -> None:
        self.app, self.scope = app, scope
        pieces = [body[i:i + chunk] for i in range(0, len(body), chunk)] if chunk else [body]
        self.incoming: list[dict[str, Any]] = [
            {"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1}
            for i, piece in enumerate(pieces)]
        self.sent: list[dict[str, Any]] = []
        self.hang_up_after = hang_up_after
        self.drawn_at_first_body = -1

    async def run(self) -> None:
        hung_up = asyncio.Event()

        async def receive() -> dict[str, Any]:
            if self.incoming:
                return self.incoming.pop(0)
            await hung_up.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            self.sent.append(dict(message))
            bodies = [m for m in self.sent if m["type"] == "http.response.body"]
            if len(bodies) == 1:
                self.drawn_at_first_body = len(sync_http_views.drawn)
            if self.hang_up_after is not None and len(bodies) >= self.hang_up_after:
                hung_up.set()
                await asyncio.sleep(0)  # the watcher sees the disconnect first

        await asyncio.wait_for(self.app(self.scope, receive, send), timeout=60)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        return list(self.sent[0]["headers"])

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent[1:])


def exchange(app: SyncDjangoHTTP, scope: dict[str, Any], body: bytes = b"",
             **kwargs: Any) -> Exchange:
    done = Exchange(app, scope, body, **kwargs)
    asyncio.run(done.run())
    return done


@pytest.fixture
def app() -> SyncDjangoHTTP:
    return SyncDjangoHTTP(threads=2)


def test_a_page_is_answered_as_django_would(app):
    done = exchange(app, scope_of("/where/a/b", query=b"q=%C3%A9t%C3%A9",
                                  headers=[(b"cookie", b"a=1"), (b"cookie", b"b=2")]))
    assert done.status == 200
    answer = json.loads(done.body)
    assert answer["path"] == "/where/a/b"
    assert answer["q"] == "été"
    assert answer["host"] == "127.0.0.1:8000"
    assert answer["remote"] == "10.0.0.7"
    assert answer["secure"] is False
    assert answer["cookies"] == {"a": "1", "b": "2"}, "two Cookie headers are one jar"
    # The whole answer went in one trip: start, then the body that ends it.
    assert [m["type"] for m in done.sent] == ["http.response.start", "http.response.body"]
    assert done.sent[-1]["more_body"] is False


def test_a_path_in_any_script_reaches_the_view_as_sent(app):
    done = exchange(app, scope_of("/where/été/ш/ع/😀"))
    assert json.loads(done.body)["path"] == "/where/été/ш/ع/😀"


def test_an_https_request_behind_the_proxy_is_secure(app):
    done = exchange(app, scope_of("/where/x", scheme="https"))
    assert json.loads(done.body)["secure"] is True


def test_a_body_sent_in_pieces_is_read_whole(app):
    body = bytes(range(256)) * 1000
    done = exchange(app, scope_of("/echo/", method="POST", headers=[
        (b"content-type", b"application/octet-stream"),
        (b"content-length", str(len(body)).encode())]), body, chunk=4096)
    assert done.status == 200
    assert done.body == body[::-1]


def test_a_failing_view_is_a_500_page_not_a_dropped_connection(app):
    done = exchange(app, scope_of("/fails/"))
    assert done.status == 500


def test_requests_reuse_the_pools_threads_and_end_on_the_thread_they_ran_on(app):
    """Django's ASGI handler made a thread per request; here the pool's threads serve
    them all, and each request's signals (which open and hand back the database
    connection) fire on the thread its view ran on."""
    seen: list[tuple[str, int]] = []

    def started(**_: Any) -> None:
        seen.append(("started", threading.get_ident()))

    def finished(**_: Any) -> None:
        seen.append(("finished", threading.get_ident()))

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        threads = [json.loads(exchange(app, scope_of(f"/where/{i}")).body)["thread"]
                   for i in range(6)]
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert len(set(threads)) <= 2
    assert threading.get_ident() not in threads
    assert [kind for kind, _ in seen] == ["started", "finished"] * 6
    for index, thread in enumerate(threads):
        assert seen[2 * index] == ("started", thread)
        assert seen[2 * index + 1] == ("finished", thread)


def test_a_pool_thread_keeps_its_cache_client_between_requests():
    """Django keeps a cache client per thread in a context variable. Run in a new context
    for each request, every request made a new client, and with Redis a new connection:
    a TCP connect and a handshake on every page."""
    app = SyncDjangoHTTP(threads=1)
    answers = [json.loads(exchange(app, scope_of("/cache/")).body) for _ in range(4)]
    assert len({answer["thread"] for answer in answers}) == 1
    assert len({answer["cache"] for answer in answers}) == 1


def test_a_download_leaves_a_part_at_a_time(app):
    done = exchange(app, scope_of("/stream/", query=b"n=500"))
    assert done.status == 200
    assert (b"content-disposition", b'attachment; filename="parts.txt"') in done.headers
    assert done.body == "".join(f"{i}\n" for i in range(500)).encode()
    bodies = [m for m in done.sent if m["type"] == "http.response.body"]
    assert len(bodies) == 500, "a message per part"
    assert [m["more_body"] for m in bodies] == [True] * 499 + [False]
    assert done.drawn_at_first_body <= 2, "the first part waited for the rest"
    assert sync_http_views.drawn == list(range(500))


def test_a_client_that_hangs_up_stops_the_drawing(app):
    done = exchange(app, scope_of("/stream/", query=b"n=100000"), hang_up_after=10)
    assert done.status == 200
    assert len(sync_http_views.drawn) < 1000, "drawing went on for a client that was gone"


@override_settings(FILE_UPLOAD_MAX_MEMORY_SIZE=1024)
def test_a_large_body_is_spooled_to_disk_not_held(app, monkeypatch):
    """The body is read into a spooled file before Django runs, as Django's ASGI handler
    does: past FILE_UPLOAD_MAX_MEMORY_SIZE it is on disk."""
    sizes: list[bool] = []
    real = wsgi_environ

    def spying(scope: dict[str, Any], body: Any) -> dict[str, Any]:
        sizes.append(bool(body._rolled))
        return real(scope, body)

    monkeypatch.setattr("webapp.sync_http.wsgi_environ", spying)
    body = b"x" * 100_000
    done = exchange(app, scope_of("/echo/", method="POST", headers=[
        (b"content-length", str(len(body)).encode())]), body, chunk=8192)
    assert done.body == body
    assert sizes == [True]


def test_a_client_gone_before_its_body_is_whole_gets_nothing(app):
    done = Exchange(app, scope_of("/echo/", method="POST"), b"abc" * 10, chunk=3)
    done.incoming = done.incoming[:2]  # then the client hangs up
    done.hang_up_after = 0

    async def run() -> None:
        async def receive() -> dict[str, Any]:
            if done.incoming:
                return done.incoming.pop(0)
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            done.sent.append(dict(message))

        await app(done.scope, receive, send)

    asyncio.run(run())
    assert done.sent == []


def test_the_web_process_serves_http_through_it():
    from webapp.asgi import application

    http = application.application_mapping["http"]
    assert isinstance(getattr(http, "app", None), SyncDjangoHTTP)
