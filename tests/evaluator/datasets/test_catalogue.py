"""The dataset catalogue: its pins match the public files, and a download from a real local
HTTP server is checked by size and sha256, reports progress, and says clearly when the
server cannot be reached. A refused download leaves no file behind."""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

import pytest

from evaluator.datasets import load_dataset
from evaluator.datasets.catalogue import (
    CATALOGUE_PATH,
    CatalogueEntry,
    CatalogueError,
    HashMismatch,
    ProgressLine,
    Unreachable,
    download_entry,
    load_catalogue,
    select_entries,
)
from tests.dataset_mirror import closed_port_url, fixture_mirror, serving, write_catalogue

PINNED_URL = re.compile(r"https://raw\.githubusercontent\.com/(?P<repo>[^/]+/[^/]+)/"
                        r"(?P<commit>[0-9a-f]{40})/\S+")


def _fetch(entry: CatalogueEntry, base_url: str) -> bytes:
    with download_entry(entry, base_url=base_url) as path:
        return path.read_bytes()


@pytest.fixture
def scratch_temp(tmp_path, monkeypatch) -> Path:
    # Downloads go to temporary folders: point them here to see that none is left behind.
    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def fixture_entries(tmp_path) -> tuple[Path, tuple[CatalogueEntry, ...]]:
    root = fixture_mirror(tmp_path / "mirror")
    catalogue = write_catalogue(root, tmp_path / "catalogue.toml",
                                upstream="https://example.invalid/data")
    return root, load_catalogue(catalogue)


def test_bundled_catalogue_names_every_dataset_the_workbench_reads():
    entries = load_catalogue()
    groups = {entry.group for entry in entries}
    assert groups >= {"humaneval", "humaneval-x", "humaneval-xl", "mhumaneval",
                      "humanevalplus", "multipl-e", "babelcode", "mera-ruhumaneval"}
    keys = {entry.key for entry in entries}
    assert {f"humaneval-x/{pl}/en" for pl in ("cpp", "go", "java", "js", "python", "rust")} <= keys
    assert {f"humaneval-xl/{pl}/{nl}" for pl in ("python", "java", "js", "go")
            for nl in ("en", "ru", "ar")} <= keys
    assert {"mhumaneval/python/ar/expert", "mhumaneval/python/ar/machine",
            "mhumaneval/python/ru/machine"} <= keys
    for entry in entries:
        assert entry.licence, entry.key
        if entry.downloadable:
            match = PINNED_URL.fullmatch(entry.url)
            assert match is not None, entry.url
            assert match["repo"] == entry.repository
            assert match["commit"] == entry.commit
            assert re.fullmatch(r"[0-9a-f]{64}", entry.sha256)
            assert entry.size > 0


def test_bundled_catalogue_pins_the_public_files(shared_dir):
    # The size and sha256 of each entry are those of the copies in ../shared/datasets, and
    # each importable file loads as the key the catalogue promises.
    for entry in load_catalogue():
        if not entry.downloadable:
            continue
        path = shared_dir / "datasets" / entry.path
        data = path.read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry.size, entry.sha256), entry
        if entry.importable:
            loaded = load_dataset(path=path, layout=entry.layout)
            assert (loaded.key, len(loaded), loaded.version) == (
                entry.key, entry.records, entry.version)


def test_download_checks_the_hash_and_reports_progress(fixture_entries, scratch_temp):
    root, entries = fixture_entries
    entry = next(e for e in entries if e.key == "humaneval-xl/java/ru")
    seen: list[tuple[int, int]] = []
    with serving(root) as mirror, download_entry(entry, base_url=mirror.url,
                                                 progress=lambda *a: seen.append(a)) as path:
        assert path.read_bytes() == (root / entry.path).read_bytes()
        # The loader reads the natural language from the folder and file name.
        assert path.relative_to(path.parents[2]).as_posix() == entry.path
        assert load_dataset(path=path).key == entry.key
        assert mirror.requests == [entry.path]
    assert seen[0] == (0, entry.size)
    assert seen[-1] == (entry.size, entry.size)
    assert list(scratch_temp.iterdir()) == []


def test_a_changed_file_is_refused_and_not_kept(fixture_entries, scratch_temp):
    root, entries = fixture_entries
    entry = next(e for e in entries if e.key == "humaneval-x/go/en")
    served = root / entry.path
    data = bytearray(served.read_bytes())
    data[10] ^= 0x01  # same size, other bytes
    served.write_bytes(bytes(data))
    with serving(root) as mirror, pytest.raises(HashMismatch) as refused:
        _fetch(entry, mirror.url)
    message = str(refused.value)
    assert entry.sha256 in message
    assert hashlib.sha256(data).hexdigest() in message
    assert "nothing was stored" in message
    assert list(scratch_temp.iterdir()) == []


def test_a_longer_file_is_refused_as_soon_as_it_passes_the_pinned_size(fixture_entries,
                                                                       scratch_temp):
    root, entries = fixture_entries
    entry = next(e for e in entries if e.key == "humaneval-x/go/en")
    (root / entry.path).write_bytes((root / entry.path).read_bytes() + b"\n" * 10)
    with serving(root) as mirror, pytest.raises(HashMismatch, match="more than"):
        _fetch(entry, mirror.url)
    assert list(scratch_temp.iterdir()) == []


def test_a_closed_port_is_reported_as_unreachable(fixture_entries, scratch_temp):
    _, entries = fixture_entries
    base = closed_port_url()
    with pytest.raises(Unreachable, match="connection refused") as refused:
        _fetch(entries[0], base)
    assert refused.value.url.startswith(base)
    assert list(scratch_temp.iterdir()) == []


def test_an_unknown_host_is_reported_as_unreachable(fixture_entries):
    _, entries = fixture_entries
    with pytest.raises(Unreachable, match="does not resolve"):
        _fetch(entries[0], "http://no-such-host.invalid")


def test_a_missing_file_names_the_http_status(fixture_entries, tmp_path):
    _, entries = fixture_entries
    with serving(tmp_path / "empty") as mirror, pytest.raises(CatalogueError, match="404"):
        _fetch(entries[0], mirror.url)


def test_the_mirror_url_keeps_the_relative_path():
    entry = next(e for e in load_catalogue() if e.key == "mhumaneval/python/ru/machine")
    assert entry.source_url(None) == entry.url
    assert "%7BPL%7D" in entry.url  # the upstream folder is literally named mHumanEval-{PL}
    assert entry.source_url("http://mirror.test/data/") == (
        "http://mirror.test/data/mhumaneval/mHumanEval-rus_Cyrl-python.json")


def test_entries_are_chosen_by_key_group_or_all():
    entries = load_catalogue()
    assert [e.key for e in select_entries(entries, ["mhumaneval/python/ar/expert"])] == [
        "mhumaneval/python/ar/expert"]
    assert len(select_entries(entries, ["humaneval-x"])) == 6
    chosen = select_entries(entries, ["all"])
    assert chosen
    assert all(entry.importable for entry in chosen)
    assert "babelcode/python/en" in {entry.key for entry in chosen}
    assert "mera-ruhumaneval/python/ru" not in {entry.key for entry in chosen}
    with pytest.raises(CatalogueError, match="not in the dataset catalogue.*humaneval-x"):
        select_entries(entries, ["humaneval-y"])


def test_a_malformed_catalogue_is_refused(tmp_path):
    path = tmp_path / "catalogue.toml"
    path.write_text('[[entry]]\nkey = "x"\n', encoding="utf-8")
    with pytest.raises(CatalogueError, match="missing"):
        load_catalogue(path)
    good = next(e for e in load_catalogue() if e.key == "babelcode/python/en")
    text = CATALOGUE_PATH.read_text(encoding="utf-8")
    companion = good.companions[0]
    path.write_text(text.replace(f'sha256 = "{companion.sha256}"\n', "owner = 1\n"),
                    encoding="utf-8")
    with pytest.raises(CatalogueError, match=r"babelcode/python/en.*"
                       r"missing \['companions.sha256'\], unknown \['companions.owner'\]"):
        load_catalogue(path)


def test_progress_line_shows_bytes_percent_and_rate():
    lines: list[str] = []
    show = ProgressLine(write=lines.append, label="humaneval-x/go/en", every=3600)
    show(0, 4096)
    show(1024, 4096)  # within `every` of the start: not shown
    show(4096, 4096)  # the end is always shown
    assert len(lines) == 1
    assert re.fullmatch(r"humaneval-x/go/en: 4\.0 KiB of 4\.0 KiB \(100%\) at [\d.]+ \S+/s",
                        lines[0])
