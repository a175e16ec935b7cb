"""While the channel layer is away, a run page's websocket is told "try again", never "not
allowed": uvicorn on PostgreSQL with the Redis channel layer, on a Redis server of the
test's own that is really stopped and started again.

Before the fix, the consumer closed a socket it had not yet accepted, which the server
answers with HTTP 403, the answer for a viewer who may not see the run; the page could
not tell the two apart.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.webapp.services.live_stack import Browser, add_user, api
from tests.webapp.services.real_services import PostgresDatabase, RedisServer, services_stack
from tests.webapp.support import RIGHT_0, WRONG_0, write_jsonl
from webapp.runs.pages.consumers import CLOSE_NOT_ALLOWED, CLOSE_TRY_AGAIN
from webapp.stack import Stack

PASSWORD = "layer-down-password-123"


@dataclass
class Site:
    stack: Stack
    redis: RedisServer
    browser: Browser
    run_id: int


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("layer-down")
    database = PostgresDatabase()
    redis = RedisServer(tmp / "logs")
    stack = services_stack(tmp, {"DATABASE_URL": database.url, "REDIS_URL": redis.url})
    try:
        stack.prepare(static=False)
        token = add_user(stack, "owner", PASSWORD)
        # A worker too: an upload's language check runs on one. Any run the viewer may see
        # will do, running or finished: its socket joins the run's group all the same.
        stack.start_worker()
        stack.start_web()
        stack.wait_ready(timeout=120)
        status, created = api(stack.url, token, "/api/runs", file=write_jsonl(
            tmp / "samples.jsonl", [{"task_id": "HumanEval/0", "completion": RIGHT_0},
                                    {"task_id": "HumanEval/0", "completion": WRONG_0}]),
            fields={"dataset": "humaneval/python/en", "name": "layer down"})
        assert status == 201, created
        browser = Browser(stack.url)
        browser.sign_in("owner", PASSWORD)
        yield Site(stack=stack, redis=redis, browser=browser, run_id=int(created["id"]))
    finally:
        stack.stop()
        redis.stop()
        database.drop()


def _first_message(site: Site, *, run_id: int | None = None) -> Any:
    """Open a run page's socket: its first message, or the ConnectionClosed that ended it."""
    try:
        with site.browser.websocket(run_id or site.run_id) as socket:
            return socket.recv(timeout=30)
    except ConnectionClosed as closed:
        return closed


def _read_until_closed(socket: Any) -> None:
    while True:
        socket.recv(timeout=60)


def _close_code(outcome: Any) -> int | None:
    assert isinstance(outcome, ConnectionClosed), f"expected a close, got {outcome!r}"
    return outcome.rcvd.code if outcome.rcvd is not None else None


def test_a_viewer_is_told_to_try_again_while_the_layer_is_down(site: Site) -> None:
    # Up: the snapshot.
    assert '"type": "snapshot"' in _first_message(site)

    # A viewer watching when Redis stops is closed with "try again".
    with site.browser.websocket(site.run_id) as watching:
        assert '"type": "snapshot"' in watching.recv(timeout=30)
        site.redis.kill()
        with pytest.raises(ConnectionClosed) as dropped:
            _read_until_closed(watching)
        assert dropped.value.rcvd is not None
        assert dropped.value.rcvd.code == CLOSE_TRY_AGAIN

    # Reconnecting while it is down: the handshake succeeds (no HTTP 403), then the socket
    # is closed with "try again", every time.
    for _ in range(3):
        try:
            outcome = _first_message(site)
        except InvalidStatus as refused:  # the old answer: HTTP 403
            pytest.fail(f"the handshake was refused: {refused}")
        assert _close_code(outcome) == CLOSE_TRY_AGAIN
        assert _close_code(outcome) != CLOSE_NOT_ALLOWED

    # Back up: the viewer, retrying as the page does, gets its snapshot again; any attempt
    # before the server's connections to Redis are back is also told "try again".
    site.redis.start()
    codes = []
    for _ in range(30):
        outcome = _first_message(site)
        if isinstance(outcome, str):
            assert '"type": "snapshot"' in outcome
            break
        codes.append(_close_code(outcome))
        time.sleep(0.5)
    else:
        pytest.fail(f"no snapshot after Redis came back; closed with {codes}")
    assert set(codes) <= {CLOSE_TRY_AGAIN}, codes


def test_a_run_the_viewer_may_not_see_is_still_refused(site: Site) -> None:
    """The "try again" answer is for the layer only: a missing run is refused as before."""
    with pytest.raises(InvalidStatus) as refused:
        _first_message(site, run_id=999_999)
    assert refused.value.response.status_code == 403


def test_the_page_script_knows_both_close_codes() -> None:
    """run_live.js retries on CLOSE_TRY_AGAIN, saying so, and stops on CLOSE_NOT_ALLOWED."""
    script = (Path(__file__).resolve().parents[3] / "static/runs/run_live.js").read_text()
    assert f"const CLOSE_TRY_AGAIN = {CLOSE_TRY_AGAIN};" in script
    assert f"const CLOSE_NOT_ALLOWED = {CLOSE_NOT_ALLOWED};" in script
