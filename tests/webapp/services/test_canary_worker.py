"""A canary before work, with a real Celery worker on Redis and PostgreSQL: a worker whose
C++ toolchain is broken when it starts consumes `eval-python` and not `eval-cpp`, and the
status page and its JSON say so; once the toolchain is there and a canary is asked for,
the worker takes `eval-cpp` again."""

from __future__ import annotations

import json
import re
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import pytest
from celery import Celery

from tests.webapp.services.live_stack import Browser, add_user
from tests.webapp.services.real_services import PostgresDatabase, services_stack

pytestmark = [pytest.mark.services, pytest.mark.slow]

T = TypeVar("T")
PASSWORD = "a-long-test-password"


def wait_for(probe: Callable[[], T | None], what: str, *, timeout: float = 300) -> T:
    """The first truthy answer of `probe`; the timeout is a backstop against a hang."""
    deadline = time.monotonic() + timeout
    while True:
        answer = probe()
        if answer:
            return answer
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.3)


def consumed(control: Any, node: str) -> set[str]:
    replies = control.inspect(destination=[node], timeout=5).active_queues() or {}
    return {queue["name"] for queue in replies.get(node, [])}


def status_json(url: str, token: str) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(f"{url}/status.json?language=python,cpp",
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_broken_toolchain_keeps_the_worker_off_its_queue_until_a_canary_passes(
        tmp_path, redis_url):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    toolchain = tmp_path / "toolchain"  # not there when the worker starts
    database = PostgresDatabase()
    stack = services_stack(tmp_path, {"DATABASE_URL": database.url, "REDIS_URL": redis_url,
                                      "EVALUATOR_CXX": str(toolchain / "g++")})
    try:
        stack.prepare(static=False)
        token = add_user(stack, "admin", PASSWORD)
        with psycopg.connect(database.url, autocommit=True) as connection:
            connection.execute("UPDATE auth_user SET is_staff = true WHERE username = 'admin'")
        stack.start_worker("worker", ("default", "eval-python", "eval-cpp"))
        stack.start_web()
        stack.wait_ready(timeout=120)

        def checked() -> dict[str, tuple[str, bool, str]] | None:
            rows = database.query(
                "SELECT c.language, w.name, c.ok, c.error FROM health_canarycheck c "
                "JOIN health_worker w ON w.id = c.worker_id")
            found = {language: (name, ok, error) for language, name, ok, error in rows}
            return found if {"python", "cpp"} <= set(found) else None

        canaries = wait_for(checked, "both canaries")
        node = canaries["python"][0]
        assert canaries["python"][1:] == (True, "")
        assert canaries["cpp"][1] is False
        assert f"EVALUATOR_CXX is set to {toolchain / 'g++'}, which does not exist" \
            in canaries["cpp"][2]

        control = Celery(broker=redis_url).control
        wait_for(lambda: "eval-python" in consumed(control, node),
                 "the worker to consume eval-python")
        assert consumed(control, node) == {"default", "eval-python"}

        status, body = status_json(stack.url, token)
        assert status == 503
        languages = {item["language"]: item for item in body["languages"]}
        assert languages["python"]["healthy_workers"] == [node]
        assert languages["cpp"]["ready"] is False
        assert "EVALUATOR_CXX" in languages["cpp"]["reason"]
        (worker,) = body["workers"]
        assert worker["consuming"] == ["default", "eval-python"]

        browser = Browser(stack.url)
        browser.sign_in("admin", PASSWORD)
        code, page = browser.get("/status/")
        assert code == 200
        row = re.search(rb'<tr class="(\S+)" data-language="cpp">(.*?)</tr>', page, re.S)
        assert row is not None
        assert row.group(1) == b"status-row-failed"
        assert b"EVALUATOR_CXX is set to" in row.group(2)

        # The toolchain appears; a canary asked for (as after a failure) finds it.
        toolchain.mkdir()
        (toolchain / "g++").symlink_to(gxx)
        replies = control.broadcast("canary_check", destination=[node], reply=True, timeout=10)
        assert replies == [{node: {"ok": "canaries will run again"}}]
        wait_for(lambda: "eval-cpp" in consumed(control, node), "the worker to take eval-cpp")

        def ready() -> dict[str, Any] | None:
            # The worker's record follows its answer to the control message.
            status, body = status_json(stack.url, token)
            return body if status == 200 and "eval-cpp" in body["workers"][0]["consuming"] \
                else None

        body = wait_for(ready, "the status to say ready")
        assert body["workers"][0]["consuming"] == ["default", "eval-python", "eval-cpp"]
    finally:
        stack.stop()
        database.drop()
