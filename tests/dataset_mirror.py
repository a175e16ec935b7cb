"""A local mirror for the dataset catalogue: a real HTTP server (http.server, in a thread)
serving a folder by relative path, as WORKBENCH_DATASET_BASE_URL expects, and a catalogue
of the tests' own small fixture files.

A file can be held half-sent (`hold`) until the test releases it, so a test sees a download
in progress without sleeping.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import shutil
import socket
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.datasets import load_dataset

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "datasets"
SHARED_DATASETS = REPO_ROOT.parent / "shared" / "datasets"

# The tests' own files, under the relative paths a mirror serves them by.
FIXTURE_FILES = {
    "humaneval-x/humaneval_go.jsonl": FIXTURES / "humaneval_x" / "humaneval_go.jsonl",
    "humaneval-xl/java/Russian.jsonl": FIXTURES / "humaneval_xl" / "java" / "Russian.jsonl",
    "mhumaneval/Human_Expert_arb_Arab.json":
        FIXTURES / "mhumaneval" / "Human_Expert_arb_Arab.json",
    "multipl-e/humaneval-cpp.jsonl": FIXTURES / "multipl_e" / "humaneval-cpp.jsonl",
    "babelcode/human_eval_questions.jsonl":
        FIXTURES / "babelcode" / "human_eval_questions.jsonl",
    "babelcode/human_eval.jsonl": FIXTURES / "babelcode" / "human_eval.jsonl",
}
COMPANIONS = {"babelcode/human_eval_questions.jsonl": ("babelcode/human_eval.jsonl",)}
"""Files that go into the catalogue as companions of another entry, not as entries."""


@dataclass
class Hold:
    """Send `path`'s first half, then wait for `release` before the rest."""

    path: str
    half_sent: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@dataclass
class DatasetMirror:
    root: Path
    url: str
    requests: list[str] = field(default_factory=list)
    holds: dict[str, Hold] = field(default_factory=dict)
    stop: Callable[[], None] = lambda: None
    """Stop serving: nothing listens on the port afterwards."""

    def hold(self, path: str) -> Hold:
        self.holds[path] = Hold(path)
        return self.holds[path]


@contextlib.contextmanager
def serving(root: Path) -> Iterator[DatasetMirror]:
    """Serve `root` on a free local port until the block ends."""
    mirror = DatasetMirror(root=root, url="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            relative = urllib.parse.unquote(urllib.parse.urlparse(self.path).path).lstrip("/")
            mirror.requests.append(relative)
            target = (root / relative).resolve()
            if not target.is_file() or root.resolve() not in target.parents:
                self.send_error(404)
                return
            data = target.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            hold = mirror.holds.get(relative)
            if hold is None:
                self.wfile.write(data)
                return
            middle = len(data) // 2
            self.wfile.write(data[:middle])
            self.wfile.flush()
            hold.half_sent.set()
            hold.release.wait(timeout=300)
            self.wfile.write(data[middle:])

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    mirror.url = f"http://127.0.0.1:{server.server_address[1]}"
    stopped = threading.Event()

    def stop() -> None:
        if stopped.is_set():
            return
        stopped.set()
        for hold in mirror.holds.values():
            hold.release.set()
        server.shutdown()
        server.server_close()

    mirror.stop = stop
    try:
        yield mirror
    finally:
        stop()


def closed_port_url() -> str:
    """A local URL where nothing listens: a connection there is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def fixture_mirror(folder: Path) -> Path:
    """Copy the fixture files into `folder` under their mirror paths; return `folder`."""
    for relative, source in FIXTURE_FILES.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return folder


def write_catalogue(mirror_root: Path, target: Path, *, upstream: str) -> Path:
    """A catalogue of every file under `mirror_root` (its pinned size and sha256 as the
    files are now), with `upstream` + path as each entry's upstream URL."""
    lines = []
    companions = {name for names in COMPANIONS.values() for name in names}
    for path in sorted(p for p in mirror_root.rglob("*") if p.is_file()):
        relative = path.relative_to(mirror_root).as_posix()
        if relative in companions:
            continue
        data = path.read_bytes()
        loaded = load_dataset(path=path)
        lines += [
            "[[entry]]", f'key = "{loaded.key}"', f'group = "{loaded.name}"',
            f'title = "Fixture {loaded.key}"', f"records = {len(loaded)}",
            'repository = "example/fixtures"', 'commit = "0123456789abcdef"',
            f'url = "{upstream}/{relative}"', f'path = "{relative}"',
            f'layout = "{loaded.layout}"', 'licence = "MIT"', f"size = {len(data)}",
            f'sha256 = "{hashlib.sha256(data).hexdigest()}"', "",
        ]
        for companion in COMPANIONS.get(relative, ()):
            extra = (mirror_root / companion).read_bytes()
            lines += [
                "[[entry.companions]]", f'path = "{companion}"',
                f'url = "{upstream}/{companion}"', f"size = {len(extra)}",
                f'sha256 = "{hashlib.sha256(extra).hexdigest()}"', "",
            ]
    target.write_text("\n".join(lines), encoding="utf-8")
    return target
