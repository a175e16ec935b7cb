"""Chromium against the real application.

The stack is the embedded one that `make run` starts: uvicorn and a Celery worker as
separate processes, SQLite, the filesystem broker and the SQLite channel layer, so live
progress travels the real path (worker -> channel layer -> websocket consumer -> page).
Programs run in the `none` sandbox: the generations here are the tests' own.

Debian's chromium is driven by Playwright; no browser is ever downloaded. Without
/usr/bin/chromium the tests are skipped, except in CI (CI=true), where they fail.
Screenshots of the main pages go to artifacts/screenshots/, which CI keeps.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.webapp.services.live_stack import add_user, api
from tests.webapp.support import CRASH_1, RIGHT_0, WRONG_0, write_jsonl
from webapp.stack import REPO_ROOT, Stack, free_port

CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
SCREENSHOTS = REPO_ROOT / "artifacts" / "screenshots"
FIXTURE_DATASETS = REPO_ROOT / "tests" / "fixtures" / "datasets"
USER = "olivia"
PASSWORD = "a-long-browser-password"
RIGHT_2 = "    return number % 1.0\n"
WRONG_2 = "    return number\n"


@pytest.fixture(scope="session")
def chromium() -> Path:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: install Debian's chromium to run the browser tests"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


@dataclass
class LiveSite:
    stack: Stack
    token: str
    work: Path
    alpha: int
    beta: int
    arabic: int

    @property
    def url(self) -> str:
        return self.stack.url


def _wait_finished(stack: Stack, token: str, run_ids: list[int], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    pending = set(run_ids)
    while pending:
        for run_id in sorted(pending):
            _, body = api(stack.url, token, f"/api/runs/{run_id}?problems=0")
            if body["status"] in ("finished", "failed", "cancelled"):
                assert body["status"] == "finished", body
                pending.discard(run_id)
        if time.monotonic() > deadline:
            raise AssertionError(f"runs {sorted(pending)} did not finish")
        time.sleep(0.2)


def _upload(stack: Stack, token: str, path: Path, **fields: str) -> int:
    status, body = api(stack.url, token, "/api/runs", file=path,
                       fields={"visibility": "public", **fields})
    assert status == 201, body
    return int(body["id"])


def _variant(text: str, tag: str) -> str:
    # The same program with a different comment: not deduplicated, not a cache hit.
    return text + f"    # {tag}\n"


@pytest.fixture(scope="session")
def site(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSite]:
    work = tmp_path_factory.mktemp("browser-site")
    stack = Stack(env={
        "WORKBENCH_VAR_DIR": str(work / "var"), "EVALUATOR_SANDBOX": "none",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "DATABASE_URL": "", "REDIS_URL": "",
        "WORKBENCH_CHUNK_SAMPLES": "2",
        # Room for a program that waits for the page (test_pages' gate) on a busy machine.
        "EVALUATOR_TIMEOUT_SECONDS": "120",
    }, port=free_port(), concurrency=1, log_dir=work / "logs")
    try:
        stack.prepare(static=True)
        for relative in ("mhumaneval/Human_Expert_arb_Arab.json", "ruhumaneval.jsonl",
                         "humaneval_x/humaneval_go.jsonl"):
            stack.manage("import_dataset", str(FIXTURE_DATASETS / relative))
        token = add_user(stack, USER, PASSWORD)
        stack.start()
        alpha_records = [
            {"task_id": "HumanEval/0", "completion": _variant(RIGHT_0, "a")},
            {"task_id": "HumanEval/0", "completion": _variant(RIGHT_0, "b")},
            {"task_id": "HumanEval/1", "completion": CRASH_1},
            {"task_id": "HumanEval/1", "completion": _variant(CRASH_1, "b")},
            {"task_id": "HumanEval/2", "completion": RIGHT_2},
            {"task_id": "HumanEval/2", "completion": WRONG_2},
        ]
        beta_records = [
            {"task_id": "HumanEval/0", "completion": WRONG_0},
            {"task_id": "HumanEval/0", "completion": _variant(WRONG_0, "b")},
            {"task_id": "HumanEval/1", "completion": CRASH_1},
            {"task_id": "HumanEval/1", "completion": _variant(CRASH_1, "c")},
            {"task_id": "HumanEval/2", "completion": RIGHT_2},
            {"task_id": "HumanEval/2", "completion": _variant(RIGHT_2, "b")},
        ]
        alpha = _upload(stack, token, write_jsonl(work / "alpha.jsonl", alpha_records),
                        dataset="humaneval/python/en", name="alpha", model_name="alpha-7b")
        beta = _upload(stack, token, write_jsonl(work / "beta.jsonl", beta_records),
                       dataset="humaneval/python/en", name="beta", model_name="beta-3b")
        arabic = _upload(stack, token, write_jsonl(work / "alpha-ar.jsonl", [
            {"task_id": "HumanEval/0", "completion": WRONG_0},
            {"task_id": "HumanEval/2", "completion": RIGHT_2},
        ]), dataset="mhumaneval/python/ar/expert", name="alpha (Arabic)", model_name="alpha-7b")
        _wait_finished(stack, token, [alpha, beta, arabic])
        yield LiveSite(stack=stack, token=token, work=work, alpha=alpha, beta=beta,
                       arabic=arabic)
    finally:
        stack.stop()


@dataclass
class SignedUpStack(Stack):
    """A stack with USER signed up: USER's API token, and the test's folder."""

    token: str = ""
    work: Path = Path()


@contextlib.contextmanager
def embedded_stack(work: Path, **env: str) -> Iterator[SignedUpStack]:
    """The stack `make run` starts, in `work`, with the `none` sandbox, one worker process
    and USER signed up (`stack.token` is USER's API token); `env` adds to its environment."""
    stack = SignedUpStack(env={
        "WORKBENCH_VAR_DIR": str(work / "var"), "EVALUATOR_SANDBOX": "none",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "DATABASE_URL": "", "REDIS_URL": "",
        **env,
    }, port=free_port(), concurrency=1, log_dir=work / "logs", work=work)
    try:
        stack.prepare(static=True)
        stack.token = add_user(stack, USER, PASSWORD)
        stack.start()
        yield stack
    finally:
        stack.stop()


def kill_web_server(stack: Stack, page: Any) -> None:
    """Kill the web server, so that every websocket really drops, and wait until `page`
    says it is reconnecting."""
    web = stack.processes["web"]
    os.killpg(web.pid, signal.SIGKILL)
    web.wait()
    page.wait_for_function(
        "document.getElementById('live-state').textContent.includes('reconnecting')")


# Module scope, not session: Playwright's sync API keeps an event loop running in this
# thread until it stops, and later tests that call asyncio.run() would then fail.
@pytest.fixture(scope="module")
def browser(chromium: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@contextlib.contextmanager
def signed_in_page(browser: Any, base_url: str, *, timeout_ms: int = 20_000,
                   username: str = USER, password: str = PASSWORD) -> Iterator[Any]:
    """A page signed in as `username` (USER); JavaScript errors on any page fail the test."""
    context = browser.new_context(base_url=base_url, viewport={"width": 1300, "height": 900})
    context.set_default_timeout(timeout_ms)
    errors: list[str] = []
    opened = context.new_page()
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto("/accounts/login/")
    opened.fill("#id_username", username)
    opened.fill("#id_password", password)
    opened.click("button[type=submit]")
    opened.wait_for_url("**/")
    yield opened
    context.close()
    assert not errors, errors


@pytest.fixture
def page(browser: Any, site: LiveSite) -> Iterator[Any]:
    with signed_in_page(browser, site.url) as opened:
        yield opened


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
