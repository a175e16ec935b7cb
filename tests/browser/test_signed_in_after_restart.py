"""`make run` restarted: a browser signed in before is still signed in after (issue 24 §5).

`bin/serve` itself is started, signed in to as its demo account with the password it
keeps beside the database, stopped with SIGTERM (as Ctrl-C stops it), and started again
on the same var folder; the same browser context then opens a page that needs a sign-in.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import signed_in_page
from webapp.stack import REPO_ROOT, free_port

pytestmark = pytest.mark.slow


def _start(var_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "WORKBENCH_VAR_DIR": str(var_dir), "DATABASE_URL": "",
           "REDIS_URL": "", "EVALUATOR_SANDBOX": "none",
           "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    serve = subprocess.Popen([sys.executable, str(REPO_ROOT / "bin" / "serve"), "--port",
                              str(port), "--workers", "1"], env=env, cwd=REPO_ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while True:
        assert serve.poll() is None, "bin/serve stopped while starting"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/",  # noqa: S310
                                        timeout=2):
                return serve
        except OSError:
            assert time.monotonic() < deadline, "bin/serve never answered"
            time.sleep(0.2)


def _stop(serve: subprocess.Popen[bytes]) -> None:
    serve.send_signal(signal.SIGTERM)
    assert serve.wait(timeout=120) is not None


def test_a_browser_stays_signed_in_across_a_restart_of_bin_serve(browser: Any,
                                                                 tmp_path: Path) -> None:
    var_dir = tmp_path / "var"
    port = free_port()
    serve = _start(var_dir, port)
    try:
        password = (var_dir / "demo-password").read_text().strip()
        with signed_in_page(browser, f"http://127.0.0.1:{port}", username="demo",
                            password=password) as page:
            page.goto("/runs/new/")
            assert "/accounts/login/" not in page.url
            _stop(serve)
            serve = _start(var_dir, port)
            page.goto("/runs/new/")
            assert "/accounts/login/" not in page.url, "the restart signed the browser out"
            assert page.locator("input[type=file]").count() >= 1
    finally:
        if serve.poll() is None:
            _stop(serve)
