"""The status page and its JSON twin: staff only, every worker with its queues and the last
canary of each language, a failing language in red with its error, and an HTTP status a
readiness probe can read."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.test import Client
from django.utils import timezone

from evaluator.doctor import LanguageCheck
from tests.webapp.support import client_for
from webapp.health.models import CanaryCheck, Worker
from webapp.health.services import canary_record, worker_register, worker_stopped
from webapp.teams.services import token_issue

CXX_CAUSE = "the C++ toolchain is missing: EVALUATOR_CXX is set to /nonexistent/g++"


def check(language: str, *, ok: bool = True, cause: str = "", ago: float = 5.0,
          sandbox: str = "standard") -> LanguageCheck:
    when = timezone.now() - dt.timedelta(seconds=ago)
    return LanguageCheck(language=language, sandbox=sandbox, backend="bwrap", ok=ok,
                         seconds=0.8, checked_at=when.isoformat(), cause=cause,
                         hint="point EVALUATOR_CXX at an installed tool" if cause else "")


def worker_with(name: str, checks: list[LanguageCheck],
                queues: tuple[str, ...] = ("default", "eval-python", "eval-cpp")) -> Worker:
    worker = worker_register(name=name, queues=list(queues), sandbox="auto")
    for item in checks:
        canary_record(worker=worker, check=item)
    consuming = ["default", *(f"eval-{c.language}" for c in checks if c.ok)]
    Worker.objects.filter(pk=worker.pk).update(
        consuming=[q for q in queues if q in consuming],
        levels=sorted({c.sandbox for c in checks}))
    worker.refresh_from_db()
    return worker


@pytest.fixture
def staff(personas):
    personas.owner.is_staff = True
    personas.owner.save()
    return personas.owner


@pytest.fixture
def broken_cpp(db):
    return worker_with("worker-1@host", [check("python"), check("cpp", ok=False, cause=CXX_CAUSE)])


def test_staff_see_workers_their_queues_languages_and_last_canary(staff, broken_cpp):
    response = client_for(staff).get("/status/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "<title>Status · Workbench</title>" in page
    assert "worker-1@host" in page
    assert "<code>eval-cpp</code> <span class=\"warning\">(not consumed)</span>" in page
    assert "<code>eval-python</code>," in page
    python_row = re.search(r'<tr class="(\S+)" data-language="python">(.*?)</tr>', page, re.S)
    assert python_row is not None
    assert python_row.group(1) == "status-row-passed"
    checked = CanaryCheck.objects.get(language="python").checked_at
    assert f"{checked:%Y-%m-%d %H:%M:%S}" in python_row.group(2)


def test_a_failing_language_is_red_with_its_error(staff, broken_cpp):
    page = client_for(staff).get("/status/").content.decode()
    row = re.search(r'<tr class="(\S+)" data-language="cpp">(.*?)</tr>', page, re.S)
    assert row is not None
    assert row.group(1) == "status-row-failed"
    assert '<td class="status status-failed">FAILED</td>' in row.group(2)
    assert f'<span class="error">{CXX_CAUSE}</span>' in row.group(2)
    assert "Hint: point EVALUATOR_CXX at an installed tool" in row.group(2)
    assert "Not ready." in page
    assert re.search(r'<th scope="row">C\+\+.*?not ready', page, re.S)


def test_outsiders_get_404_and_strangers_the_login_page(personas, broken_cpp):
    outsider = client_for(personas.outsider)
    assert outsider.get("/status/").status_code == 404
    assert outsider.get("/status.json").status_code == 404
    anonymous = Client().get("/status/")
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/")
    refused = Client().get("/status.json")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"].startswith("Bearer")


def test_the_json_says_not_ready_with_503_while_a_language_has_no_healthy_worker(
        staff, broken_cpp):
    response = client_for(staff).get("/status.json")
    assert response.status_code == 503
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert body["ready"] is False
    languages = {item["language"]: item for item in body["languages"]}
    assert languages["python"]["ready"] is True
    assert languages["python"]["healthy_workers"] == ["worker-1@host"]
    assert languages["cpp"]["ready"] is False
    assert CXX_CAUSE in languages["cpp"]["reason"]
    assert body["problems"] == [f"C++: {languages['cpp']['reason']}"]
    (worker,) = body["workers"]
    assert worker["state"] == "running"
    assert worker["queues"] == ["default", "eval-python", "eval-cpp"]
    assert worker["consuming"] == ["default", "eval-python"]
    assert worker["languages"] == ["python", "cpp"]
    failing = next(c for c in worker["checks"] if c["language"] == "cpp")
    assert (failing["ok"], failing["error"]) == (False, CXX_CAUSE)


def test_a_healthy_worker_for_each_language_makes_it_ready(staff, broken_cpp):
    worker_with("worker-2@host", [check("cpp")], queues=("eval-cpp",))
    response = client_for(staff).get("/status.json")
    assert response.status_code == 200, response.json()["problems"]
    cpp = next(i for i in response.json()["languages"] if i["language"] == "cpp")
    assert cpp["healthy_workers"] == ["worker-2@host"]


def test_a_stale_or_stopped_worker_vouches_for_nothing(staff, db, settings):
    settings.CANARY_STALE_SECONDS = 600
    worker_with("old@host", [check("python", ago=601)], queues=("eval-python",))
    body = client_for(staff).get("/status.json").json()
    assert body["ready"] is False
    assert "more than 600 s ago" in body["languages"][0]["reason"]
    worker_with("new@host", [check("python")], queues=("eval-python",))
    assert client_for(staff).get("/status.json").status_code == 200
    worker_stopped(name="new@host")
    body = client_for(staff).get("/status.json").json()
    assert body["ready"] is False
    assert "worker new@host stopped" in body["languages"][0]["reason"]


def test_readiness_requires_the_languages_of_imported_datasets(staff, broken_cpp, humaneval):
    # Only Python is imported: a broken C++ worker does not make the site unready...
    assert client_for(staff).get("/status.json").status_code == 200
    # ...unless the probe asks for C++ by name.
    response = client_for(staff).get("/status.json?language=cpp")
    assert response.status_code == 503
    assert [i["required"] for i in response.json()["languages"]
            if i["language"] == "cpp"] == [True]


def test_no_worker_at_all_is_not_ready(staff):
    body = client_for(staff).get("/status.json").json()
    assert body["ready"] is False
    assert body["problems"] == ["no worker has vouched for any language yet"]


def test_a_probe_may_use_a_staff_members_token(staff, personas, broken_cpp):
    staff_token = token_issue(user=staff, name="probe").secret
    assert Client(HTTP_AUTHORIZATION=f"Bearer {staff_token}").get(
        "/status.json").status_code == 503
    outsider_token = token_issue(user=personas.outsider, name="probe").secret
    assert Client(HTTP_AUTHORIZATION=f"Bearer {outsider_token}").get(
        "/status.json").status_code == 404
    assert Client(HTTP_AUTHORIZATION="Bearer wb_nonsense").get("/status.json").status_code == 401
