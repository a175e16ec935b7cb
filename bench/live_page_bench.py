"""How fast the live run page appears and goes live after "Start the run", in Chromium.

It starts the stack `make run` starts (uvicorn and a Celery worker as processes, SQLite, the
filesystem broker, the SQLite channel layer; static files collected, so under their hashed
names), signs in with Debian's Chromium through Playwright, and for each run size:

1. uploads the file through the upload form, clicks "Start the run" on the confirmation
   page (a fresh browser context: nothing cached), and measures from the click:
   - first paint of the run page: client = first contentful paint; server = first byte of
     its HTML (the POST that creates the run, its redirect and the page's rendering);
   - websocket open: client = the socket's `open`; server = the handshake (open minus the
     moment the page created the socket; loopback, so it is the server's answer time);
   - first live event: client = the first event the page receives; server = when the run
     started (`Run.started_at`, the worker's claim); and the same for the first finished
     sample (server = its `finished_at`). Both clocks are this machine's.
2. waits for the run to finish, then opens its page --repeats times in a fresh context
   (cold cache) and reports the median: server = time to first byte; client = interactive
   (DOMContentLoaded: every deferred script has run, the page answers input) and the
   charts drawn (Plotly fetched, parsed and done).

The sizes: 164 samples (HumanEval's canonical solutions, each tagged so that nothing
comes from the result cache), and 16,400 (CodeGen-16B, 100 per task, from
../shared/generations/codegen-16b-n100; skipped with a message when absent). As the
reference, the cold pages are measured again with the page as it was before: the full
4.8 MB Plotly bundle as a deferred script ahead of the live script (the HTML is rewritten
on its way to the browser; both variants go through the same interception, so that costs
the same). The start is measured with today's page only: Playwright does not intercept
the page that the POST's redirect leads to.

    python bench/live_page_bench.py [--sizes 164,16400] [--sandbox auto] [--repeats 5]
                                    [--timeout 3600] [--keep]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import secrets
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import load_average, shared_dir  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from tests.webapp.services.live_stack import add_user, api  # noqa: E402
from webapp.stack import Stack, free_port  # noqa: E402

CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
# Headless, and nothing in the background that would compete with the page for the CPU.
# A page the bench fulfils itself (the HTML rewritten on its way) counts for Chromium as
# coming from outside this machine, and its Local Network Access checks would then block
# its websocket to 127.0.0.1.
CHROMIUM_FLAGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-features=LocalNetworkAccessChecks"]
USER, PASSWORD = "bench", "a-long-bench-password"
GOALS_MS = {"first paint": 300.0, "first live event": 1000.0, "cold interactive": 1000.0}
RUN_PAGE = re.compile(r"/runs/\d+/(\?.*)?$")

# Installed before any script of the page: the moments the websocket is created, opens and
# delivers its first event and its first finished sample (epoch milliseconds).
WATCH_SOCKET = """
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const marks = window.__bench = {};
  const Native = window.WebSocket;
  window.WebSocket = function (url, protocols) {
    const socket = new Native(url, protocols);
    marks.created = marks.created || now();
    socket.addEventListener("open", () => { marks.open = marks.open || now(); });
    socket.addEventListener("message", (message) => {
      const type = JSON.parse(message.data).type;
      marks.event = marks.event || now();
      if (type === "sample_finished" && !marks.finished) marks.finished = now();
    });
    return socket;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
})();
"""


@dataclass
class Variant:
    name: str
    rewrite: Callable[[str], str]


def as_today(html: str) -> str:
    return html


def as_before(html: str) -> str:
    """The page as it was: the full bundle, deferred, ahead of the live script."""
    script = f'<script src="{FULL_BUNDLE[0]}" defer></script>\n'
    rewritten, count = re.subn(r'(<script src="/static/runs/run_live\.)',
                               lambda m: script + m.group(1), html, count=1)
    if not count:
        raise SystemExit("the run page has no run_live.js script tag to put the bundle before")
    return rewritten


FULL_BUNDLE = ["/static/vendor/plotly/plotly.min.js"]
"""The hashed URL of the full bundle, read from the collected manifest at start."""
VARIANTS = {"partial bundle, after the socket": Variant("today", as_today),
            "full bundle before the socket (as before)": Variant("before", as_before)}


def canonical_file(path: Path, tag: str, problems: int = 164) -> Path:
    """HumanEval's canonical solutions, tagged so that none is found in the result cache."""
    dataset = load_dataset()
    with path.open("w") as out:
        for problem in dataset.problems[:problems]:
            completion = problem.canonical_solution + f"\n    # {tag}\n"
            out.write(json.dumps({"task_id": problem.task_id, "completion": completion}) + "\n")
    return path


def codegen_file() -> Path | None:
    folder = shared_dir() / "generations" / "codegen-16b-n100"
    return next(folder.glob("*.jsonl.gz"), None) if folder.is_dir() else None


def now_ms(page: Any) -> float:
    return float(page.evaluate("performance.timeOrigin + performance.now()"))


def route_html(context: Any, variant: Variant) -> None:
    def handle(route: Any) -> None:
        response = route.fetch()
        body = response.text()
        if "text/html" in response.headers.get("content-type", ""):
            body = variant.rewrite(body)
        route.fulfill(response=response, body=body)

    context.route(RUN_PAGE, handle)


def new_context(browser: Any, base_url: str, variant: Variant) -> Any:
    context = browser.new_context(base_url=base_url, viewport={"width": 1300, "height": 900})
    context.set_default_timeout(600_000)
    page = context.new_page()
    page.goto("/accounts/login/")
    page.fill("#id_username", USER)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/")
    page.close()
    # Signing in filled the cache with the login page's files only; the run page's
    # scripts and Plotly's bundle are still cold.
    route_html(context, variant)
    context.add_init_script(WATCH_SOCKET)
    return context


def database_times(database: Path, run_id: int) -> tuple[float | None, float | None]:
    """The run's start and its first finished sample, epoch milliseconds."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        started = db.execute("SELECT started_at FROM runs_run WHERE id = ?", (run_id,)).fetchone()
        first = db.execute("SELECT MIN(finished_at) FROM runs_sample WHERE run_id = ?",
                           (run_id,)).fetchone()

    def epoch(value: str | None) -> float | None:
        # Django keeps UTC in SQLite, without an offset.
        return (datetime.fromisoformat(value).replace(tzinfo=UTC).timestamp() * 1000
                if value else None)

    return epoch(started[0] if started else None), epoch(first[0] if first else None)


def start_run(browser: Any, stack: Stack, database: Path, variant: Variant, file: Path,
              name: str) -> tuple[int, dict[str, tuple[float | None, float | None]]]:
    """Upload `file`, click "Start the run", and measure; (run id, {figure: (server, client)})."""
    context = new_context(browser, stack.url, variant)
    page = context.new_page()
    page.goto("/runs/new/")
    page.set_input_files("#id_file", str(file))
    page.fill("#id_name", name)
    page.click("form.stacked button[type=submit]")
    start_button = page.get_by_role("button", name="Start the run")
    start_button.wait_for()
    clicked = now_ms(page)
    start_button.click()
    page.wait_for_url(RUN_PAGE)
    page.wait_for_function("window.__bench && window.__bench.finished", polling=20)
    marks = page.evaluate("window.__bench")
    paint = page.evaluate("""() => {
        const entry = performance.getEntriesByName('first-contentful-paint')[0];
        const nav = performance.getEntriesByType('navigation')[0];
        return { fcp: performance.timeOrigin + entry.startTime,
                 redirect: nav.redirectEnd - nav.redirectStart,
                 render: nav.responseStart - nav.requestStart,
                 firstByte: performance.timeOrigin + nav.responseStart };
    }""")
    run_id = int(re.search(r"/runs/(\d+)/", page.url).group(1))  # type: ignore[union-attr]
    full = page.locator('script[src*="/vendor/plotly/plotly.min."]').count()
    if full != (variant.rewrite is as_before):
        raise SystemExit(f"the run page reached after the redirect is not the {variant.name!r} "
                         "variant: its HTML was not rewritten")
    context.close()
    started, first_finished = database_times(database, run_id)
    figures = {
        "  the POST that creates the run, its redirect": (paint["redirect"], None),
        "  the run page's HTML": (paint["render"], None),
        "first paint": (paint["firstByte"] - clicked, paint["fcp"] - clicked),
        "websocket open": (marks["open"] - marks["created"], marks["open"] - clicked),
        "first live event (any)": (
            started - clicked if started else None, marks["event"] - clicked),
        "first finished sample": (first_finished - clicked if first_finished else None,
                                  marks["finished"] - clicked),
    }
    return run_id, figures


def cold_page(browser: Any, stack: Stack, variant: Variant, run_id: int,
              repeats: int) -> dict[str, tuple[float | None, float | None]]:
    server, interactive, charts, opened = [], [], [], []
    for _ in range(repeats):
        context = new_context(browser, stack.url, variant)
        page = context.new_page()
        page.goto(f"/runs/{run_id}/")
        page.wait_for_function(
            "document.querySelector('#pass-at-k-chart .main-svg') !== null", polling=20)
        drawn = float(page.evaluate("performance.now()"))
        if page.evaluate("JSON.parse(document.getElementById('run-live-config').textContent)"
                         ".live"):
            page.wait_for_function("window.__bench && window.__bench.open", polling=20)
        timing = page.evaluate("""() => {
            const nav = performance.getEntriesByType('navigation')[0];
            const marks = window.__bench || {};
            return { server: nav.responseStart - nav.requestStart,
                     interactive: nav.domContentLoadedEventEnd,
                     open: marks.open ? marks.open - performance.timeOrigin : null };
        }""")
        context.close()
        server.append(timing["server"])
        interactive.append(timing["interactive"])
        charts.append(drawn)
        if timing["open"] is not None:
            opened.append(timing["open"])
    figures = {"cold interactive": (statistics.median(server), statistics.median(interactive)),
               "cold page, charts drawn": (None, statistics.median(charts))}
    if opened:  # a running run's page
        figures["cold page, websocket open"] = (None, statistics.median(opened))
    return figures


def wait_finished(stack: Stack, token: str, run_id: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    last_report = 0.0
    while time.monotonic() < deadline:
        _, body = api(stack.url, token, f"/api/runs/{run_id}?problems=0")
        if body["status"] in ("finished", "failed", "cancelled"):
            return bool(body["status"] == "finished")
        if time.monotonic() - last_report > 30:
            progress = body["progress"]
            print(f"    run {run_id}: {progress['done']} / {progress['total']} samples "
                  f"(load {load_average()})", flush=True)
            last_report = time.monotonic()
        time.sleep(1)
    return False


def show(title: str, figures: dict[str, tuple[float | None, float | None]]) -> None:
    """One line a figure; server and client times are from the click (or the request)."""
    print(f"  {title}")
    for figure, (server, client) in figures.items():
        goal = next((f"  (goal < {limit:.0f} ms)" for key, limit in GOALS_MS.items()
                     if figure.startswith(key)), "")
        server_text = f"{server:8.0f} ms" if server is not None else "       —   "
        client_text = f"{client:8.0f} ms" if client is not None else "       —   "
        print(f"    {figure:<44} server {server_text}   client {client_text}{goal}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="164,16400")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--repeats", type=int, default=5, help="cold loads of a finished page")
    parser.add_argument("--starts", type=int, default=3,
                        help="starts of a 164-sample run with each variant")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds to wait for a run to finish before its cold page")
    parser.add_argument("--keep", action="store_true", help="keep the stack's folder")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is missing: install Debian's chromium")
    sizes = [int(size) for size in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="live-page-bench-"))
    stack = Stack(env={
        "WORKBENCH_VAR_DIR": str(work / "var"), "EVALUATOR_SANDBOX": args.sandbox,
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "DATABASE_URL": "", "REDIS_URL": "",
    }, port=free_port(), concurrency=2, log_dir=work / "logs")
    print(f"live page bench · sandbox {args.sandbox} · load {load_average()} before", flush=True)
    try:
        stack.prepare(static=True)
        manifest = json.loads((work / "var" / "staticfiles" / "staticfiles.json").read_text())
        FULL_BUNDLE[0] = "/static/" + manifest["paths"]["vendor/plotly/plotly.min.js"]
        token = add_user(stack, USER, PASSWORD)
        stack.start()
        database = work / "var" / "db.sqlite3"
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                 args=CHROMIUM_FLAGS)
            # A first start that is not counted: the server's first requests compile its
            # templates and open its connections, which no later page pays again.
            warm = canonical_file(work / "warm-up.jsonl", "warm-up", problems=3)
            run_id, _ = start_run(browser, stack, database, VARIANTS[next(iter(VARIANTS))],
                                  warm, "warm-up")
            wait_finished(stack, token, run_id, args.timeout)
            for size in sizes:
                bench_size(browser, stack, token, database, work, size, args)
            browser.close()
    finally:
        stack.stop()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {load_average()}")


def bench_size(browser: Any, stack: Stack, token: str, database: Path, work: Path, size: int,
               args: argparse.Namespace) -> None:
    today = next(iter(VARIANTS))
    if size == 164:
        # --starts times, distinct files (never a duplicate). Only today's page: Playwright
        # does not intercept the page a redirect leads to (the POST of "Start the run"), so
        # the old page is measured on direct loads only (the cold page below).
        starts = [(today, canonical_file(work / f"canonical-{i}.jsonl", f"start {i}"))
                  for i in range(args.starts)]
    elif size == 16400:
        big = codegen_file()
        if big is None:
            print("16,400 samples: skipped, ../shared/generations/codegen-16b-n100 is absent")
            return
        with gzip.open(big, "rt") as lines:
            records = sum(1 for _ in lines)
        assert records == 164, f"{big} has {records} records, not 164"
        # One start only: a second evaluation of 16,400 samples would cost too much.
        starts = [(today, big)]
    else:
        sys.exit(f"--sizes: 164 or 16400, not {size}")
    print(f"\n{size:,} samples · load {load_average()}", flush=True)
    finished = unfinished = None
    measured: dict[str, list[dict[str, tuple[float | None, float | None]]]] = {}
    for key, file in starts:
        run_id, figures = start_run(browser, stack, database, VARIANTS[key], file,
                                    f"bench {size} ({VARIANTS[key].name}) {len(measured)}")
        measured.setdefault(key, []).append(figures)
        if wait_finished(stack, token, run_id, args.timeout):
            finished = run_id
        else:
            print(f"    run {run_id} did not finish within {args.timeout:.0f} s")
            unfinished = run_id
    for key, runs in measured.items():
        show(f"start · {key} · median of {len(runs)} · load {load_average()}", medians(runs))
    # A run that did not finish in time is still measured, as a running page (its live
    # table and curve are drawn from counts instead of stored scores), and said so.
    shown, state = (finished, "finished") if finished is not None else (unfinished, "RUNNING")
    assert shown is not None
    for key, variant in VARIANTS.items():
        show(f"cold page of {state} run {shown} · {key} · median of {args.repeats} · "
             f"load {load_average()}", cold_page(browser, stack, variant, shown, args.repeats))


def medians(runs: list[dict[str, tuple[float | None, float | None]]],
            ) -> dict[str, tuple[float | None, float | None]]:
    def median(values: list[float | None]) -> float | None:
        known = [value for value in values if value is not None]
        return statistics.median(known) if known else None

    return {name: (median([run[name][0] for run in runs]), median([run[name][1] for run in runs]))
            for name in runs[0]}


if __name__ == "__main__":
    main()
