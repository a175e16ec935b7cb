"""The dataset catalogue (`catalogue.toml`): every public dataset the workbench reads, each
pinned to an upstream commit and a sha256, and the download that checks it.

    entries = load_catalogue()
    chosen = select_entries(entries, ["humaneval-x", "mhumaneval/python/ar/expert"])
    with download_entry(chosen[0], base_url=None, progress=print) as path:
        dataset = load_dataset(path=path, layout=chosen[0].layout)

A download goes to a temporary folder, under the entry's relative path (some loaders read
the natural language from the folder and file name), and is hashed as it streams. The file
is handed on only when its size and sha256 match; the folder is removed either way. An
entry may name companion files (`[[entry.companions]]`, each pinned the same way) that its
loader reads beside the main file (BabelCode's fixes beside its questions): they are
downloaded into the same folder, and checked alike, before the main file is handed on.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import tempfile
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evaluator.datasets.dataset import DatasetError

CATALOGUE_PATH = Path(__file__).with_name("catalogue.toml")
CHUNK_BYTES = 64 * 1024
TIMEOUT_SECONDS = 60.0

Progress = Callable[[int, int], None]
"""Called with (bytes received, bytes expected) as a download goes on."""


class CatalogueError(DatasetError):
    """An unknown key, an entry that cannot be downloaded, or a download that failed."""


class HashMismatch(CatalogueError):
    """The bytes served are not the ones the catalogue pins."""


class Unreachable(CatalogueError):
    """The server could not be reached at all: no network, no DNS, nothing listening."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


@dataclass(frozen=True)
class CompanionFile:
    """A file the entry's loader reads beside the main one, pinned like it."""

    path: str
    url: str
    size: int
    sha256: str


@dataclass(frozen=True)
class CatalogueEntry:
    key: str
    """The key the import stores: name/language/natural language[/variant]."""
    group: str
    title: str
    records: int
    repository: str
    commit: str
    url: str
    """The upstream file at the pinned commit."""
    path: str
    """The file's path relative to a mirror's base URL (and to ../shared/datasets)."""
    layout: str
    licence: str
    size: int
    sha256: str
    companions: tuple[CompanionFile, ...] = ()
    """Files downloaded beside the main one (same folder rules), each checked alike."""

    @property
    def downloadable(self) -> bool:
        return bool(self.sha256 and self.path)

    @property
    def total_size(self) -> int:
        """The bytes a download fetches: the main file and its companions."""
        return self.size + sum(companion.size for companion in self.companions)

    @property
    def importable(self) -> bool:
        return self.downloadable and bool(self.layout)

    @property
    def version(self) -> str:
        """The version a stored copy carries (`reading.file_version` of the same bytes)."""
        return self.sha256[:16]

    def source_url(self, base_url: str | None = None) -> str:
        """Where to fetch it: the upstream URL, or the same relative path under a mirror."""
        return _source_url(self.url, self.path, base_url)


def _source_url(url: str, path: str, base_url: str | None) -> str:
    if not base_url:
        return url
    return base_url.rstrip("/") + "/" + urllib.parse.quote(path)


_FIELDS = {name: kind for name, kind in CatalogueEntry.__annotations__.items()}
_OPTIONAL = frozenset({"companions"})
_COMPANION_FIELDS = frozenset(CompanionFile.__annotations__)


def load_catalogue(path: Path | None = None) -> tuple[CatalogueEntry, ...]:
    """Every entry of the catalogue file (the bundled one by default)."""
    path = CATALOGUE_PATH if path is None else path
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogueError(f"{path}: cannot read the dataset catalogue ({exc})") from exc
    entries = []
    for number, item in enumerate(raw.get("entry", []), start=1):
        missing = sorted(set(_FIELDS) - _OPTIONAL - set(item))
        unknown = sorted(set(item) - set(_FIELDS))
        companions = item.get("companions", [])
        for companion in companions:
            missing += sorted(f"companions.{name}" for name in _COMPANION_FIELDS - set(companion))
            unknown += sorted(f"companions.{name}" for name in set(companion) - _COMPANION_FIELDS)
        if missing or unknown:
            raise CatalogueError(f"{path}: entry {number} ({item.get('key', '?')}): "
                                 f"missing {missing}, unknown {unknown}")
        entries.append(CatalogueEntry(**{
            **item, "companions": tuple(CompanionFile(**companion) for companion in companions),
        }))
    keys = [entry.key for entry in entries]
    if len(set(keys)) != len(keys):
        raise CatalogueError(f"{path}: a key appears twice")
    return tuple(entries)


def select_entries(entries: Iterable[CatalogueEntry], wanted: Iterable[str]
                   ) -> list[CatalogueEntry]:
    """The entries named by key or by group, in catalogue order; `all` is every importable
    one. An unknown name is refused, naming the groups there are."""
    entries = list(entries)
    chosen: dict[str, CatalogueEntry] = {}
    for name in wanted:
        if name == "all":
            matched = [entry for entry in entries if entry.importable]
        else:
            matched = [entry for entry in entries if name in (entry.key, entry.group)]
        if not matched:
            groups = sorted({entry.group for entry in entries})
            raise CatalogueError(f"{name!r} is not in the dataset catalogue; give a key, "
                                 f"a group ({', '.join(groups)}) or 'all'")
        for entry in matched:
            chosen[entry.key] = entry
    return [entry for entry in entries if entry.key in chosen]


@contextlib.contextmanager
def download_entry(entry: CatalogueEntry, *, base_url: str | None = None,
                   progress: Progress | None = None,
                   timeout: float = TIMEOUT_SECONDS) -> Iterator[Path]:
    """Download `entry` (and its companions, beside it) into a temporary folder and yield
    the verified main file; the folder is removed when the block ends, whether it
    succeeded or not. Progress counts the bytes of every file against `total_size`."""
    if not entry.downloadable:
        raise CatalogueError(f"{entry.key} has no pinned file to download; import it from "
                             "a local file instead")
    files = [CompanionFile(path=entry.path, url=entry.url, size=entry.size,
                           sha256=entry.sha256), *entry.companions]
    with tempfile.TemporaryDirectory(prefix="catalogue-") as folder:
        done = 0
        for pinned in files:
            target = Path(folder) / pinned.path
            target.parent.mkdir(parents=True, exist_ok=True)
            _fetch(entry.key, pinned, _source_url(pinned.url, pinned.path, base_url), target,
                   progress=_offset(progress, done, entry.total_size), timeout=timeout)
            done += pinned.size
        yield Path(folder) / entry.path


def _offset(progress: Progress | None, done: int, total: int) -> Progress | None:
    """`progress` for one file of several: its bytes come after `done`, out of `total`."""
    if progress is None:
        return None
    return lambda received, _expected: progress(done + received, total)


def _fetch(key: str, pinned: CompanionFile | CatalogueEntry, url: str, target: Path, *,
           progress: Progress | None, timeout: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "code-eval-workbench"})  # noqa: S310
    digest = hashlib.sha256()
    received = 0
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, \
                target.open("wb") as out:  # noqa: S310
            if progress is not None:
                progress(0, pinned.size)
            # read1: what has arrived, so progress moves while a slow server sends.
            while chunk := response.read1(CHUNK_BYTES):
                received += len(chunk)
                if received > pinned.size:
                    raise HashMismatch(
                        f"{url}: the server sent more than the {pinned.size:,} bytes the "
                        f"catalogue pins for {key}; nothing was stored")
                digest.update(chunk)
                out.write(chunk)
                if progress is not None:
                    progress(received, pinned.size)
    except urllib.error.HTTPError as exc:
        raise CatalogueError(f"{url}: the server answered {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if _is_unreachable(reason):
            host = urllib.parse.urlparse(url).netloc
            raise Unreachable(f"cannot reach {host} ({_describe(reason)})", url=url) from exc
        raise CatalogueError(f"{url}: the download failed ({_describe(reason)})") from exc
    found = digest.hexdigest()
    if received != pinned.size or found != pinned.sha256:
        raise HashMismatch(
            f"{url}: the file does not match the catalogue, so nothing was stored. "
            f"Expected {pinned.size:,} bytes with sha256 {pinned.sha256}; received "
            f"{received:,} bytes with sha256 {found}.")


def _is_unreachable(reason: object) -> bool:
    return isinstance(reason, ConnectionRefusedError | socket.gaierror | TimeoutError
                      | ConnectionResetError | socket.timeout) or (
        isinstance(reason, OSError) and reason.errno in (101, 113))  # network/host unreachable


def _describe(reason: object) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return "the host name does not resolve"
    if isinstance(reason, TimeoutError | socket.timeout):
        return "timed out"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason)


@dataclass
class ProgressLine:
    """A line-based progress display: `write` gets one line of text each time, at most
    every `every` seconds and once at the end, with bytes, percent and rate."""

    write: Callable[[str], None]
    label: str
    every: float = 0.5
    _started: float = 0.0
    _shown: float = 0.0

    def __call__(self, received: int, expected: int) -> None:
        now = time.monotonic()
        if received == 0 or not self._started:
            self._started = now
            self._shown = now
            return
        if received < expected and now - self._shown < self.every:
            return
        self._shown = now
        self.write(progress_text(self.label, received, expected, now - self._started))


def progress_text(label: str, received: int, expected: int, seconds: float) -> str:
    percent = 100.0 * received / expected if expected else 100.0
    rate = received / seconds if seconds > 0 else 0.0
    return (f"{label}: {human_bytes(received)} of {human_bytes(expected)} "
            f"({percent:.0f}%) at {human_bytes(rate)}/s")


def human_bytes(count: float) -> str:
    if count < 1024:
        return f"{count:.0f} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"
