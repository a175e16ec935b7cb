"""Shared by the benchmark scripts: where the data is, and how to time a command."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.test import Client

    from tests.webapp.services.real_services import PostgresDatabase, RedisServer
    from webapp.stack import Stack

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BENCH_USER = "bench"
"""Who owns the runs the page benchmarks build, and whom their requests come from."""


def shared_dir() -> Path:
    path = Path(os.environ.get("WORKBENCH_SHARED", REPO.parent / "shared"))
    if not (path / "datasets").is_dir():
        sys.exit(f"benchmark data not found at {path}; set WORKBENCH_SHARED")
    return path


def timed(argv: list[str], *, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run a command to completion; return its wall time and its output.

    Bytecode caching is on for every command, whatever this shell says
    (`PYTHONDONTWRITEBYTECODE`): pip compiled the reference harnesses' modules when it
    installed them, and ours get the same from their first run, as on a user's machine.
    """
    if env is None:
        env = {key: value for key, value in os.environ.items()
               if key != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"{' '.join(argv[:4])}… exited with {proc.returncode}")
    return elapsed, proc


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run_and_sweep(command: list[str], *, cwd: str | Path,
                  env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a reference harness to its end, its output captured, in a session of its own,
    then kill whatever of that session is still running: a harness whose time limit ends
    a program's parent leaves the program itself running, orphaned, for ever. The output
    goes to files, not pipes, because such a program may hold them open."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True, cwd=cwd,
                                   env=env, start_new_session=True)
        try:
            process.wait()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(command, process.returncode, out.read(), err.read())


def report_target(summary: str, median_ms: float, target_ms: float) -> None:
    """Print the load average, then `summary` with whether `median_ms` meets the target;
    exit with status 1 when it does not, so a script that runs the benchmark sees it."""
    print(f"load average after: {load_average()}")
    print(f"{summary} · target {target_ms:.0f} ms: {'ok' if median_ms < target_ms else 'OVER'}")
    if median_ms >= target_ms:
        raise SystemExit(1)


def configure_django(work: Path, database: str) -> None:
    """Point Django at a database and var folder of the benchmark's own under `work`, with
    eager Celery and no Redis, before `django.setup()`."""
    work.mkdir(parents=True, exist_ok=True)
    os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    os.environ["WORKBENCH_VAR_DIR"] = str(work / "var")
    (work / "var" / "staticfiles").mkdir(parents=True, exist_ok=True)
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    os.environ.pop("REDIS_URL", None)
    os.environ["DATABASE_URL"] = f"sqlite:///{work / database}"


def bench_user() -> User:
    """Migrate the benchmark's own database and return its `bench` user, signed up on the
    first run. Django must be set up."""
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from webapp.teams.services import user_sign_up

    call_command("migrate", "--no-input", "-v", "0")
    return User.objects.filter(username=BENCH_USER).first() or user_sign_up(
        username=BENCH_USER, password="bench-password-123")


def bench_client() -> Client:
    """Django's test client, signed in as the `bench` user."""
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client()
    client.force_login(User.objects.get(username=BENCH_USER))
    return client


def start_page_bench(description: str, *, work: str, database: str) -> argparse.Namespace:
    """The start every in-process page benchmark shares: its `--repeats` and `--work`
    options, Django set up on a database of its own under `--work`, and the load average
    before it builds anything."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--work", default=str(REPO / "var" / work))
    args = parser.parse_args()
    configure_django(Path(args.work).resolve(), database)

    import django

    django.setup()
    print(f"load average before: {load_average()}", flush=True)
    return args


def page_times(path: str, repeats: int) -> tuple[bytes, list[float]]:
    """Server time of a page in-process (Django's test client, as the `bench` user): one
    warm-up request (connections, templates), then `repeats` timed ones, in milliseconds.
    Exits on an answer other than 200. Returns the last body with the times."""
    client = bench_client()
    response = client.get(path)
    if response.status_code != 200:
        raise SystemExit(f"{path}: HTTP {response.status_code}")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - start) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{path}: HTTP {response.status_code}")
    return response.content, times


def store_verdicts(run: Any, chunk: Any, variants: Any, passed: Any, samples_each: int, *,
                   text: str = "    pass\n", message: str = "",
                   results: bool = True) -> None:
    """Store a synthetic run's verdicts straight into the database: for each variant,
    `samples_each` samples of which the first `passed[i]` passed, and (with `results`) the
    problem's ProblemResult. Benchmarks of pages build big runs this way instead of
    evaluating them; Django must be set up."""
    from webapp.runs.models import ProblemResult, Sample

    samples: list[Sample] = []
    problems: list[ProblemResult] = []
    for variant, c in zip(variants, [int(x) for x in passed], strict=True):
        task = variant.problem.task_id
        for index in range(samples_each):
            samples.append(Sample(
                run=run, chunk=chunk, variant=variant, task_id=task, source_task_id=task,
                index=index, position=len(samples), line=len(samples) + 1, raw=text,
                completion=text, status="passed" if index < c else "failed",
                **({"message": message} if message and index >= c else {})))
        problems.append(ProblemResult(
            run=run, problem=variant.problem, task_id=task, n=samples_each, c=c,
            counts={"passed": c, "failed": samples_each - c},
            pass_at_k={"1": c / samples_each}))
    Sample.objects.bulk_create(samples, batch_size=2000)
    if results:
        ProblemResult.objects.bulk_create(problems)


def stop_services(*, stack: Stack | None, redis_server: RedisServer | None,
                  database: PostgresDatabase | None) -> None:
    """Stop what a benchmark on the real services started (None: it never started): the
    stack first, as its processes use the other two."""
    if stack is not None:
        stack.stop()
    if redis_server is not None:
        redis_server.stop()
    if database is not None:
        database.drop()


def memory_kb(pid: int) -> tuple[int, int]:
    """The resident set (VmRSS) and its peak (VmHWM) of a live process, in kB; (0, 0) once
    it is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0, 0
    found = dict(line.split(":", 1) for line in lines if line.startswith(("VmRSS", "VmHWM")))
    return (int(found.get("VmRSS", "0 kB").split()[0]),
            int(found.get("VmHWM", "0 kB").split()[0]))


def peak_reset(pids: list[int]) -> dict[int, int]:
    """Start each process's peak (VmHWM) afresh from its resident set (`clear_refs` 5,
    Linux 4.0+), so that the peak read after a step is the step's; each one's resident
    set now, in kB, to measure its growth against."""
    start = {}
    for pid in pids:
        try:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
        except OSError:
            continue
        start[pid] = memory_kb(pid)[0]
    return start
