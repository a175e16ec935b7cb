"""`import_dataset --catalogue` and the Datasets page's catalogue, against a real local HTTP
server: the download is checked before anything is stored, a refused or unreachable one
stores nothing, and importing the same version again is a no-op."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.urls import reverse

from evaluator.datasets.catalogue import load_catalogue
from tests.dataset_mirror import closed_port_url, fixture_mirror, serving, write_catalogue
from tests.webapp.factories import PASSWORD
from webapp.benchmarks.catalogue import catalogue_missing
from webapp.benchmarks.models import CatalogueImport, Dataset, ProblemVariant
from webapp.benchmarks.problem_json import problem_from_json
from webapp.teams.services import user_sign_up

FIXTURE_KEYS = {"humaneval-x/go/en", "humaneval-xl/java/ru", "mhumaneval/python/ar/expert",
                "multipl-e/cpp/en", "babelcode/python/en"}


@pytest.fixture
def mirror_root(tmp_path, settings):
    root = fixture_mirror(tmp_path / "mirror")
    settings.DATASET_CATALOGUE = write_catalogue(
        root, tmp_path / "catalogue.toml", upstream="https://example.invalid/data")
    return root


@pytest.fixture
def mirror(mirror_root, settings):
    with serving(mirror_root) as served:
        settings.DATASET_BASE_URL = served.url
        yield served


def _change_a_byte(path):
    data = bytearray(path.read_bytes())
    data[10] ^= 0x01
    path.write_bytes(bytes(data))


def test_catalogue_all_downloads_checks_and_imports_with_progress(db, mirror, capsys):
    call_command("import_dataset", "--catalogue", "all")
    out = capsys.readouterr().out
    assert set(Dataset.objects.values_list("key", flat=True)) == FIXTURE_KEYS
    for key in FIXTURE_KEYS:
        assert f"Imported {key} version" in out
        assert f"  {key}: " in out
        assert "(100%) at " in out
    stored = Dataset.objects.get(key="humaneval-xl/java/ru")
    # The stored source is the pinned upstream URL: the mirror served the same bytes.
    assert stored.source == "https://example.invalid/data/humaneval-xl/java/Russian.jsonl"
    assert stored.version == hashlib.sha256(
        (mirror.root / "humaneval-xl/java/Russian.jsonl").read_bytes()).hexdigest()[:16]
    # BabelCode's fixes came with its questions, as the entry's companion, and applied.
    fixed = ProblemVariant.objects.get(dataset__key="babelcode/python/en",
                                       problem__task_id="HumanEval/2")
    assert fixed.entry_point == "double"
    assert problem_from_json(fixed.record).extra["babelcode_fix"]["fields"] == [
        "entry_fn_name", "solution", "testing_code", "text"]
    assert "babelcode/human_eval.jsonl" in mirror.requests


def test_importing_the_same_version_again_downloads_nothing(db, mirror, capsys):
    call_command("import_dataset", "--catalogue", "humaneval-x")
    requests = list(mirror.requests)
    variants = ProblemVariant.objects.count()
    capsys.readouterr()
    call_command("import_dataset", "--catalogue", "humaneval-x/go/en")
    assert "already imported" in capsys.readouterr().out
    assert mirror.requests == requests
    assert ProblemVariant.objects.count() == variants
    assert Dataset.objects.count() == 1


def test_a_changed_file_is_refused_and_nothing_is_stored(db, mirror, capsys):
    _change_a_byte(mirror.root / "humaneval-x/humaneval_go.jsonl")
    with pytest.raises(CommandError, match="1 of 5 not imported: humaneval-x/go/en"):
        call_command("import_dataset", "--catalogue", "all")
    err = capsys.readouterr().err
    assert "humaneval-x/go/en" in err
    assert "does not match the catalogue" in err
    assert "nothing was stored" in err
    # The others, served unchanged, were imported; the changed one left no trace.
    assert set(Dataset.objects.values_list("key", flat=True)) == FIXTURE_KEYS - {
        "humaneval-x/go/en"}
    assert not ProblemVariant.objects.filter(dataset__key="humaneval-x/go/en").exists()


def test_offline_says_so_and_names_the_mirror_setting(db, mirror_root, settings):
    settings.DATASET_BASE_URL = closed_port_url()
    with pytest.raises(CommandError) as refused:
        call_command("import_dataset", "--catalogue", "all")
    message = str(refused.value)
    assert "Offline?" in message
    assert "connection refused" in message
    assert "WORKBENCH_DATASET_BASE_URL" in message
    assert "import_dataset PATH" in message
    assert Dataset.objects.count() == 0


def test_a_file_that_matches_its_pin_but_does_not_load_stores_nothing(db, tmp_path, settings,
                                                                     capsys):
    # A catalogue entry pinned to a broken file: the hash passes, the loader refuses the
    # third record, and not one problem of the first two is stored.
    root = fixture_mirror(tmp_path / "mirror")
    path = root / "humaneval-xl/java/Russian.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = '{"task_id": "java/2"'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for other in ("humaneval-x", "mhumaneval", "multipl-e"):
        for file in (root / other).iterdir():
            file.unlink()
    catalogue = tmp_path / "catalogue.toml"
    data = path.read_bytes()
    good = write_catalogue(fixture_mirror(tmp_path / "good"), tmp_path / "good.toml",
                           upstream="https://example.invalid")
    text = good.read_text(encoding="utf-8")
    pinned = next(e for e in load_catalogue(good) if e.key == "humaneval-xl/java/ru")
    catalogue.write_text(text.replace(pinned.sha256, hashlib.sha256(data).hexdigest())
                         .replace(f"size = {pinned.size}\n", f"size = {len(data)}\n"),
                         encoding="utf-8")
    settings.DATASET_CATALOGUE = catalogue
    with serving(root) as served:
        settings.DATASET_BASE_URL = served.url
        with pytest.raises(CommandError, match="humaneval-xl/java/ru"):
            call_command("import_dataset", "--catalogue", "humaneval-xl/java/ru")
        assert f"{served.url}/humaneval-xl/java/Russian.jsonl:3: invalid JSON" in (
            capsys.readouterr().err)
    assert Dataset.objects.count() == 0
    assert ProblemVariant.objects.count() == 0


def test_unknown_catalogue_key_is_refused(db, mirror):
    with pytest.raises(CommandError, match="not in the dataset catalogue"):
        call_command("import_dataset", "--catalogue", "humaneval-y")


def test_catalogue_entry_without_a_pinned_file_says_how_to_import_it(db, settings, capsys):
    settings.DATASET_BASE_URL = closed_port_url()  # never reached
    with pytest.raises(CommandError):
        call_command("import_dataset", "--catalogue", "mera-ruhumaneval/python/ru")
    assert "--layout mera-ruhumaneval" in capsys.readouterr().err


def test_every_public_dataset_imports_from_a_mirror_of_shared(db, shared_dir, settings, capsys):
    with serving(shared_dir / "datasets") as served:
        settings.DATASET_BASE_URL = served.url
        call_command("import_dataset", "--catalogue", "all")
    importable = [entry for entry in load_catalogue() if entry.importable]
    stored = dict(Dataset.objects.values_list("key", "problem_count"))
    assert stored == {entry.key: entry.records for entry in importable}
    assert capsys.readouterr().out.count("(100%)") == len(importable)


# -- the Datasets page -------------------------------------------------------------------


@pytest.fixture
def staff(db):
    user = user_sign_up(username="ada", password=PASSWORD)
    User.objects.filter(pk=user.pk).update(is_staff=True)
    return User.objects.get(pk=user.pk)


def _signed_in(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_page_lists_what_is_not_stored_with_source_licence_and_size(client, staff, mirror):
    call_command("import_dataset", "--catalogue", "multipl-e")
    page = _signed_in(client, staff).get(reverse("benchmarks:datasets")).content.decode()
    assert "Fixture humaneval-x/go/en" in page
    assert "Fixture multipl-e/cpp/en" not in page
    assert "example/fixtures" in page
    assert "MIT" in page
    assert page.count('aria-label="Add ') == 4  # humaneval-x, humaneval-xl, mhumaneval, babelcode


def test_non_staff_see_how_to_ask_and_cannot_add(client, mirror, db):
    user = user_sign_up(username="bob", password=PASSWORD)
    page = _signed_in(client, user).get(reverse("benchmarks:datasets")).content.decode()
    assert "Only an administrator can add these" in page
    assert 'aria-label="Add ' not in page
    response = client.post(reverse("benchmarks:catalogue_import"),
                           {"key": "humaneval-x/go/en"})
    assert response.status_code == 403
    assert CatalogueImport.objects.count() == 0


def test_anonymous_visitors_see_how_to_ask(client, mirror, db):
    page = client.get(reverse("benchmarks:datasets")).content.decode()
    assert "Only an administrator can add these" in page


def test_staff_click_imports_in_the_background(client, staff, mirror,
                                               django_capture_on_commit_callbacks):
    client = _signed_in(client, staff)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("benchmarks:catalogue_import"),
                               {"key": "humaneval-xl/java/ru"})
    assert response.status_code == 302
    job = CatalogueImport.objects.get()
    status = json.loads(client.get(
        reverse("benchmarks:catalogue_import_status", args=[job.pk])).content)
    assert status["status"] == "done"
    assert status["percent"] == 100
    assert not status["in_progress"]
    assert "Imported" in status["html"]
    assert Dataset.objects.filter(key="humaneval-xl/java/ru").exists()
    assert "humaneval-xl/java/ru" not in {row.entry.key for row in catalogue_missing()}


def test_staff_click_on_a_changed_file_fails_clearly(client, staff, mirror,
                                                     django_capture_on_commit_callbacks):
    _change_a_byte(mirror.root / "humaneval-x/humaneval_go.jsonl")
    client = _signed_in(client, staff)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("benchmarks:catalogue_import"), {"key": "humaneval-x/go/en"})
    job = CatalogueImport.objects.get()
    status = json.loads(client.get(
        reverse("benchmarks:catalogue_import_status", args=[job.pk])).content)
    assert status["status"] == "failed"
    assert "does not match the catalogue" in status["error"]
    assert "Try again" in status["html"]
    assert Dataset.objects.count() == 0


def test_staff_click_while_offline_fails_clearly(client, staff, mirror_root, settings,
                                                 django_capture_on_commit_callbacks):
    settings.DATASET_BASE_URL = closed_port_url()
    client = _signed_in(client, staff)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("benchmarks:catalogue_import"), {"key": "humaneval-x/go/en"})
    job = CatalogueImport.objects.get()
    assert job.status == "failed"
    assert "Offline?" in job.error
    assert "WORKBENCH_DATASET_BASE_URL" in job.error
    page = client.get(reverse("benchmarks:datasets")).content.decode()
    assert "Not added: Offline?" in page


def test_a_second_click_while_one_runs_is_refused(client, staff, mirror):
    client = _signed_in(client, staff)
    # Without on-commit callbacks the task is never sent: the first job stays queued.
    client.post(reverse("benchmarks:catalogue_import"), {"key": "humaneval-x/go/en"})
    response = client.post(reverse("benchmarks:catalogue_import"),
                           {"key": "humaneval-x/go/en"}, follow=True)
    assert "already being added" in response.content.decode()
    assert CatalogueImport.objects.count() == 1


def test_import_status_is_not_found_for_non_staff(client, staff, mirror, db):
    job = CatalogueImport.objects.create(key="humaneval-x/go/en", sha256="0" * 64)
    user = user_sign_up(username="bob", password=PASSWORD)
    response = _signed_in(client, user).get(
        reverse("benchmarks:catalogue_import_status", args=[job.pk]))
    assert response.status_code == 404


# -- make run --------------------------------------------------------------------------


def test_make_run_imports_the_catalogue_when_asked_and_starts_even_offline(tmp_path):
    from webapp.stack import Stack

    root = fixture_mirror(tmp_path / "mirror")
    catalogue = write_catalogue(root, tmp_path / "catalogue.toml",
                                upstream="https://example.invalid/data")
    env = {"WORKBENCH_VAR_DIR": str(tmp_path / "var"), "DATABASE_URL": "", "REDIS_URL": "",
           "WORKBENCH_DATASET_CATALOGUE": str(catalogue),
           "WORKBENCH_IMPORT_CATALOGUE": "humaneval-x,mhumaneval"}
    show_keys = ("from webapp.benchmarks.models import Dataset; "
                 "print(sorted(Dataset.objects.values_list('key', flat=True)))")
    offline = Stack(env={**env, "WORKBENCH_DATASET_BASE_URL": closed_port_url()})
    offline.prepare(static=False)  # the download fails; the start does not
    assert offline.manage("shell", "-c", show_keys, capture=True).splitlines()[-1] == (
        "['humaneval/python/en']")
    with serving(root) as served:
        Stack(env={**env, "WORKBENCH_DATASET_BASE_URL": served.url}).prepare(static=False)
    assert offline.manage("shell", "-c", show_keys, capture=True).splitlines()[-1] == (
        "['humaneval-x/go/en', 'humaneval/python/en', 'mhumaneval/python/ar/expert']")


def test_offline_without_a_mirror_says_how_to_set_one(db, mirror_root, settings):
    # The fixture catalogue's upstream host is under .invalid: its name never resolves.
    settings.DATASET_BASE_URL = None
    with pytest.raises(CommandError) as refused:
        call_command("import_dataset", "--catalogue", "humaneval-x/go/en")
    message = str(refused.value)
    assert "Offline?" in message
    assert "example.invalid (the host name does not resolve)" in message
    assert "set WORKBENCH_DATASET_BASE_URL to a mirror" in message
    assert Dataset.objects.count() == 0


def test_ensure_user_staff_makes_the_demo_account_able_to_add_and_keeps_its_session(
        client, db, mirror):
    # `make run` makes its demo account staff, so the person at the machine can add
    # datasets with a click; running it again signs no one out.
    call_command("ensure_user", "demo", "--password", PASSWORD, "--staff")
    assert client.login(username="demo", password=PASSWORD)
    page = client.get(reverse("benchmarks:datasets")).content.decode()
    assert 'aria-label="Add humaneval-x/go/en"' in page
    call_command("ensure_user", "demo", "--password", PASSWORD, "--staff")
    assert User.objects.get(username="demo").is_staff
    assert 'aria-label="Add ' in client.get(reverse("benchmarks:datasets")).content.decode()


def test_non_staff_do_not_see_import_failures(client, db, mirror_root, settings):
    settings.DATASET_BASE_URL = closed_port_url()
    CatalogueImport.objects.create(key="humaneval-x/go/en", sha256="0" * 64,
                                   status=CatalogueImport.Status.FAILED,
                                   error=f"Offline? cannot reach {settings.DATASET_BASE_URL}")
    page = client.get(reverse("benchmarks:datasets")).content.decode()
    assert "Fixture humaneval-x/go/en" in page
    assert "Offline?" not in page
