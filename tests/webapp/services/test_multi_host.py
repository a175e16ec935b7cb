"""No host assumptions (issue 26): two worker "hosts" that share nothing but PostgreSQL and
Redis run a mixed-language suite, and one of them is lost for good mid-run.

Each host is a Celery worker with its own working directory, var directory, HOME and
TMPDIR, and, where this process may make them (root, `ip netns`), its own network
namespace: a veth pair links it to this one, and PostgreSQL and Redis are reached through
a relay on the host side of the pair, as another machine would reach them over the
network. Nothing a host writes is seen by the other or by the web process. The web
process and beat run here.

A suite of a Python run (300 distinct samples, slow enough that the loss lands mid-run)
and a run for each compiled language installed (HumanEval-X's canonical solutions and a
wrong answer) is uploaded. Once both hosts hold chunks, host A's processes are killed and
its namespace removed: it never comes back. Then every sample of every run has exactly
one result, the runs finish without a manual command, the verdicts are those the
solutions deserve, and host A's chunks are claimed again by host B within the lease,
sweep and slot bound of the chaos suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from evaluator.datasets import load_dataset
from evaluator.languages import get_language
from tests.webapp.services.live_stack import add_user, api
from tests.webapp.services.real_services import PostgresDatabase, services_stack
from tests.webapp.support import write_jsonl
from webapp.stack import ALL_QUEUES, Stack

pytestmark = [pytest.mark.services, pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets" / "humaneval_x"
PASSWORD = "a-long-multi-host-password"
LEASE_SECONDS = 30
SWEEP_SECONDS = 10
BOUND = LEASE_SECONDS + SWEEP_SECONDS + 10
"""As in the chaos suite: the lease runs out, the next sweep takes the work back, and a
slot on the remaining host frees within 10 s."""
TASKS = 30
PER_TASK = 10
LOSS_AT = 40
PANICS = {"go": '    panic("lost host")\n}\n', "rust": '    panic!("lost host");\n}\n'}
"""A body that panics at once: the sample cannot pass."""
DEADLINE = 900.0
"""A backstop only: the test waits for the runs' end, however long recovery takes."""


class Relay:
    """A TCP relay: connections to (`listen_host`, a spare port) are joined to `target`.
    It stands for the network between a worker host and the servers."""

    def __init__(self, listen_host: str, target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server((listen_host, 0))
        self.address: tuple[str, int] = self.server.getsockname()[:2]
        self._stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def close(self) -> None:
        self._stopped.set()
        self.server.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy one direction until either side closes; then close both, as a dead link does."""
    with contextlib.suppress(OSError):
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    for end in (source, sink):
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)
        end.close()


def _url_through(url: str, address: tuple[str, int]) -> str:
    """`url` with its host and port replaced by the relay's."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@" if credentials else ""
    return urlunsplit(parts._replace(netloc=f"{netloc}{address[0]}:{address[1]}"))


@dataclass
class Host:
    """One worker machine: its directories, its namespace (or none) and its relays."""

    name: str
    root: Path
    namespace: str = ""
    link: str = ""
    address: str = "127.0.0.1"
    relays: list[Relay] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None

    @property
    def node(self) -> str:
        return f"{self.name}@"

    def start_worker(self, stack: Stack, *, database_url: str, redis_url: str) -> None:
        for folder in ("work", "var", "home", "tmp"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        pg = urlsplit(database_url)
        rd = urlsplit(redis_url)
        self.relays = [Relay(self.address, (pg.hostname or "127.0.0.1", pg.port or 5432)),
                       Relay(self.address, (rd.hostname or "127.0.0.1", rd.port or 6379))]
        env = stack.child_env()
        env.update({
            "DATABASE_URL": _url_through(database_url, self.relays[0].address),
            "REDIS_URL": _url_through(redis_url, self.relays[1].address),
            "WORKBENCH_VAR_DIR": str(self.root / "var"),
            "HOME": str(self.root / "home"),
            "TMPDIR": str(self.root / "tmp"),
        })
        wrap = ["ip", "netns", "exec", self.namespace] if self.namespace else []
        log = (self.root / "worker.log").open("ab")
        self.process = subprocess.Popen(
            [*wrap, stack.python, "-m", "celery", "-A", "webapp", "worker", "--loglevel",
             "INFO", "--queues", ",".join(ALL_QUEUES), "--concurrency", "1",
             "--without-gossip", "--without-mingle", "--hostname", f"{self.name}@%h"],
            env=env, cwd=self.root / "work", stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)

    def freeze(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGSTOP)

    def lose(self) -> None:
        """The machine is gone for good: its processes die and its network with them."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for relay in self.relays:
            relay.close()
        if self.namespace:
            subprocess.run(["ip", "netns", "del", self.namespace], check=False)
            subprocess.run(["ip", "link", "del", self.link], check=False,
                           stderr=subprocess.DEVNULL)
            self.namespace = ""


def _make_namespace(host: Host, index: int) -> bool:
    """Give `host` a network namespace linked to this one by a veth pair; False (and
    nothing left behind) where this process may not."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    tag = secrets.token_hex(3)
    namespace, link, peer = f"wbhost{tag}", f"wbh{tag}", f"wbn{tag}"
    near, far = f"10.231.{index}.1", f"10.231.{index}.2"
    steps = [
        ["ip", "netns", "add", namespace],
        ["ip", "link", "add", link, "type", "veth", "peer", "name", peer],
        ["ip", "link", "set", peer, "netns", namespace],
        ["ip", "addr", "add", f"{near}/30", "dev", link],
        ["ip", "link", "set", link, "up"],
        ["ip", "netns", "exec", namespace, "ip", "addr", "add", f"{far}/30", "dev", peer],
        ["ip", "netns", "exec", namespace, "ip", "link", "set", peer, "up"],
        ["ip", "netns", "exec", namespace, "ip", "link", "set", "lo", "up"],
    ]
    for step in steps:
        if subprocess.run(step, capture_output=True, check=False).returncode != 0:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)
            subprocess.run(["ip", "link", "del", link], capture_output=True, check=False)
            return False
    host.namespace, host.link, host.address = namespace, link, near
    return True


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[list[Host]]:
    made = [Host(name, tmp_path / name) for name in ("host-a", "host-b")]
    separated = [_make_namespace(host, 200 + index) for index, host in enumerate(made)]
    if not all(separated):
        for host in made:
            host.lose()
            host.namespace, host.address = "", "127.0.0.1"
        print("network namespaces could not be made here: the hosts share this one's "
              "network, and nothing else")
    try:
        yield made
    finally:
        for host in made:
            host.lose()


def _python_samples(path: Path) -> tuple[Path, int]:
    """300 distinct samples on HumanEval/0..29, a third right (the canonical solution), a
    little slow so that the loss lands mid-run; and how many should pass."""
    records = []
    right = 0
    for problem in load_dataset().problems[:TASKS]:
        for index in range(PER_TASK):
            body = (problem.canonical_solution, "    return None\n",
                    "    raise RuntimeError('lost')\n")[index % 3]
            right += index % 3 == 0
            prefix = f"    __import__('time').sleep(0.05)\n    _sample = {index}\n"
            records.append({"task_id": problem.task_id, "completion": prefix + body})
    return write_jsonl(path, records), right


def _compiled_runs(tmp_path: Path) -> list[tuple[str, Path, int, int]]:
    """For each compiled fixture language installed: (language, samples, total, right):
    every canonical solution, and the first one again with its body emptied (wrong)."""
    runs = []
    for language in ("go", "rust"):
        if get_language(language).available() is not None:
            continue
        rows = [json.loads(line) for line in
                (FIXTURES / f"humaneval_{language}.jsonl").read_text().splitlines()]
        samples = [{"task_id": row["task_id"], "generation": row["canonical_solution"]}
                   for row in rows]
        samples.append({"task_id": rows[0]["task_id"], "generation": PANICS[language]})
        runs.append((language, write_jsonl(tmp_path / f"{language}.jsonl", samples),
                     len(samples), len(rows)))
    return runs


def _holders(database: PostgresDatabase, run_ids: list[int]) -> set[str]:
    return {str(worker) for (worker,) in database.query(
        "SELECT worker FROM runs_chunk WHERE run_id = ANY(%s) AND status = 'running'",
        run_ids)}


def test_a_host_lost_for_good_loses_nothing(tmp_path: Path, hosts: list[Host],
                                            redis_url: str) -> None:
    database = PostgresDatabase()
    stack = services_stack(tmp_path / "web", {
        "DATABASE_URL": database.url, "REDIS_URL": redis_url,
        "WORKBENCH_LEASE_SECONDS": str(LEASE_SECONDS),
        "WORKBENCH_SWEEP_SECONDS": str(SWEEP_SECONDS)}, concurrency=1, chunk_samples=PER_TASK)
    try:
        stack.prepare(static=False)
        compiled = _compiled_runs(tmp_path)
        for language, *_ in compiled:
            stack.manage("import_dataset", str(FIXTURES / f"humaneval_{language}.jsonl"))
        token = add_user(stack, "owner", PASSWORD)
        for host in hosts:
            host.start_worker(stack, database_url=database.url, redis_url=redis_url)
        stack.start_beat()
        stack.start_web()
        stack.wait_ready(timeout=120)

        _, listed = api(stack.url, token, "/api/datasets")
        keys = {d["language"]: d["key"] for d in listed["datasets"]
                if d["key"].startswith("humaneval-x/")}
        python_file, python_right = _python_samples(tmp_path / "python.jsonl")
        uploads = [("python", python_file, TASKS * PER_TASK, python_right,
                    "humaneval/python/en")]
        uploads += [(language, path, total, right, keys[language])
                    for language, path, total, right in compiled]
        runs: dict[str, tuple[int, int, int]] = {}
        for language, path, total, right, key in uploads:
            status, created = api(stack.url, token, "/api/runs", file=path,
                                  fields={"dataset": key, "name": f"multi-host {language}",
                                          "model_name": "multi-host-1b"})
            assert status == 201, created
            runs[language] = (created["id"], total, right)
        status, suite = api(stack.url, token, "/api/suites", fields={
            "model_name": "multi-host-1b", "name": "across hosts"})
        assert status == 201, suite
        status, body = api(stack.url, token, f"/api/suites/{suite['id']}/runs",
                           fields={"run": ",".join(str(r[0]) for r in runs.values())})
        assert status == 201, body

        run_ids = [run_id for run_id, _, _ in runs.values()]
        python_run = runs["python"][0]
        deadline = time.monotonic() + DEADLINE
        while True:
            holders = _holders(database, run_ids)
            (done,), = database.query("SELECT done_count FROM runs_run WHERE id = %s",
                                      python_run)
            if done >= LOSS_AT and all(any(h.startswith(host.node) for h in holders)
                                       for host in hosts):
                break
            assert done < TASKS * PER_TASK, "the Python run ended before both hosts held work"
            assert time.monotonic() < deadline, "the hosts never both held work"
            time.sleep(0.05)
        # Frozen first, so that what it holds is read while it can no longer finish it.
        hosts[0].freeze()
        held = [int(pk) for pk, worker in database.query(
            "SELECT id, worker FROM runs_chunk WHERE run_id = ANY(%s) AND status = 'running'",
            run_ids) if str(worker).startswith(hosts[0].node)]
        lost_at = datetime.now(UTC)
        hosts[0].lose()

        for language, (run_id, _, _) in runs.items():
            assert database.wait_finished(run_id, timeout=DEADLINE) == "finished", language
        for language, (run_id, total, right) in runs.items():
            assert database.query(
                "SELECT count(*), count(DISTINCT seq) FROM runs_sample WHERE run_id = %s "
                "AND status <> 'pending'", run_id) == [(total, total)], language
            (passed, done), = database.query(
                "SELECT passed_count, done_count FROM runs_run WHERE id = %s", run_id)
            assert (passed, done) == (right, total), language
        # Each chunk host A held was claimed again by host B within the bound, unless A
        # finished it in the instant before the loss.
        assert held, "host A held work when it was lost"
        taken_back = 0
        for pk, started_at, finished_at, worker in database.query(
                "SELECT id, started_at, finished_at, worker FROM runs_chunk WHERE id = ANY(%s)",
                held):
            if str(worker).startswith(hosts[0].node):
                assert finished_at is not None, (pk, worker)
                assert finished_at <= lost_at, (pk, finished_at, lost_at)
                continue
            assert str(worker).startswith(hosts[1].node), (pk, worker)
            assert (started_at - lost_at).total_seconds() <= BOUND, (pk, started_at, lost_at)
            taken_back += 1
        assert taken_back, "no chunk of the lost host had to be taken back"
    finally:
        stack.stop()
        database.drop()
