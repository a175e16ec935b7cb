"""`python -m evaluator submit`: upload a generations file to a workbench server through its
JSON API, and optionally wait for the scores. Standard library only (urllib), so a training
pipeline needs nothing but this package, and the evaluator stays free of Django.

Exit codes (`ExitCode`) tell a calling script what happened without parsing the output.
"""

from __future__ import annotations

import argparse
import difflib
import enum
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

TOKEN_VARIABLE = "WORKBENCH_TOKEN"  # noqa: S105  (the name of a variable, not a secret)
FINAL_STATUSES = ("finished", "failed", "cancelled")
CHUNK_BYTES = 1 << 16
REQUEST_TIMEOUT = 60.0
POLL_FIRST, POLL_FACTOR, POLL_MAX = 0.5, 1.5, 10.0
"""Polling starts after half a second and slows to one request every ten seconds: a
short run is reported promptly, and a long one costs the server little."""
DATASETS_SHOWN = 12
"""How many dataset keys an unknown-dataset error lists, the closest to the asked one first."""
UNREACHABLE_PATIENCE = 120.0
"""Seconds a waiting client keeps trying a server that stopped answering (a restart)."""


class ExitCode(enum.IntEnum):
    OK = 0
    UNEXPECTED = 1
    """The server answered something this client does not understand (a 500, say)."""
    USAGE = 2
    """A bad option or a refused request (an unknown dataset or team)."""
    INVALID_FILE = 3
    AUTH = 4
    """The token is missing, unknown or revoked, or it may not do this."""
    UNREACHABLE = 5
    RUN_FAILED = 6
    RUN_CANCELLED = 7
    TIMED_OUT = 8
    """--max-wait passed before the run ended; it goes on on the server."""


class ClientError(Exception):
    def __init__(self, code: ExitCode, message: str, lines: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.lines = lines


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]


class WorkbenchClient:
    """The few calls `submit` needs; every failure is a `ClientError` with its exit code."""

    def __init__(self, server: str, token: str, *, timeout: float = REQUEST_TIMEOUT) -> None:
        parsed = urllib.parse.urlsplit(server)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ClientError(ExitCode.USAGE, f"--server must be an http(s) URL, not {server!r}")
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout

    def url(self, path: str) -> str:
        return self.server + path

    def _request(self, path: str, **options: Any) -> urllib.request.Request:
        # The scheme was checked in __init__: http(s) only, never file:.
        return urllib.request.Request(self.url(path), **options)  # noqa: S310

    def _send(self, request: urllib.request.Request) -> Answer:
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        try:
            # A Request made by `_request`: http or https only.
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                return Answer(response.status, _json(response.read()))
        except urllib.error.HTTPError as exc:
            return Answer(exc.code, _json(exc.read()))
        except (urllib.error.URLError, OSError) as exc:
            raise ClientError(ExitCode.UNREACHABLE,
                              f"cannot reach {self.server}: {_reason(exc)}; is the workbench "
                              "running there?") from exc

    def get(self, path: str) -> Answer:
        return self._send(self._request(path, method="GET"))

    def upload(self, path: Path, fields: dict[str, str]) -> Answer:
        """`POST /api/runs` as multipart/form-data, the file streamed from disk."""
        boundary = f"workbench-{uuid.uuid4().hex}"
        head = b"".join(_form_field(boundary, name, value) for name, value in fields.items())
        head += (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                 f'filename="{_header_safe(path.name)}"\r\n'
                 "Content-Type: application/octet-stream\r\n\r\n").encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        size = path.stat().st_size
        request = self._request(
            "/api/runs", data=_stream(head, path, tail), method="POST",
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                     "Content-Length": str(len(head) + size + len(tail))})
        try:
            return self._send(request)
        except ClientError as exc:
            if not _cut_off(exc.__cause__):
                raise
            # A server refuses a body over its limit by answering at once and closing, so
            # the client may see only the reset. If it answers a small request, it was that.
            try:
                self.get("/api/datasets")
            except ClientError:
                raise exc from None
            raise ClientError(
                ExitCode.INVALID_FILE,
                f"the server cut the connection while {path.name} ({size:,} bytes) was being "
                "sent: the file is probably larger than the server accepts (its "
                "WORKBENCH_UPLOAD_MAX_BYTES); send it gzip-compressed (.jsonl.gz)") from exc


def _cut_off(exc: BaseException | None) -> bool:
    """Whether a connection that was open failed under the client (reset, broken pipe)."""
    reason = getattr(exc, "reason", exc)
    return isinstance(reason, (ConnectionResetError, BrokenPipeError))


def _reason(exc: OSError) -> str:
    """Why a connection failed, in words: urllib wraps the socket's error in `reason`."""
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, TimeoutError):
        return "no answer (timed out)"
    return str(getattr(reason, "strerror", None) or reason)


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = raw[:200].decode("utf-8", "replace")
        return {"error": "not_json", "message": f"the server answered: {text!r}"}
    return body if isinstance(body, dict) else {"error": "not_json", "message": repr(body)}


def _header_safe(text: str) -> str:
    return text.replace("\\", "_").replace('"', "_").replace("\r", "_").replace("\n", "_")


def _form_field(boundary: str, name: str, value: str) -> bytes:
    return (f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
            f"{value}\r\n").encode()


def _stream(head: bytes, path: Path, tail: bytes) -> Iterator[bytes]:
    yield head
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            yield chunk
    yield tail


def _refusal(answer: Answer) -> ClientError:
    """The exit code and the lines to print for an error answer of the API."""
    body = answer.body
    message = str(body.get("message") or f"HTTP {answer.status}")
    if answer.status in (401, 403):
        return ClientError(ExitCode.AUTH, f"refused ({answer.status}): {message}")
    if body.get("error") == "invalid_file" or answer.status == 413:
        lines = tuple(_issue_line(issue) for issue in body.get("issues") or ())
        return ClientError(ExitCode.INVALID_FILE, f"the file was refused: {message}", lines)
    if answer.status in (400, 404):
        fields = body.get("fields") or {}
        lines = tuple(f"{name or 'request'}: {_field_text(errors)}"
                      for name, errors in fields.items())
        return ClientError(ExitCode.USAGE, f"the request was refused: {message}", lines)
    return ClientError(ExitCode.UNEXPECTED, f"unexpected answer ({answer.status}): {message}")


def _issue_line(issue: dict[str, Any]) -> str:
    message = str(issue.get("message", ""))
    # The file checker's messages name their line (and column) themselves.
    where = "" if message.startswith("Line ") else ", ".join(
        f"{key} {issue[key]}" for key in ("line", "column", "field")
        if issue.get(key) is not None)
    severity = issue.get("severity", "error")
    return f"{severity}: {where + ': ' if where else ''}{message}"


def _field_text(errors: Any) -> str:
    if isinstance(errors, list):
        return " ".join(e.get("message", str(e)) if isinstance(e, dict) else str(e)
                        for e in errors)
    return str(errors)


def dataset_hint(client: WorkbenchClient, asked: str) -> tuple[str, ...]:
    """Lines naming the datasets the server has, the closest to `asked` first, for an
    upload refused because its dataset is unknown. Best effort: the refusal stands even if
    the list cannot be read."""
    where = (f"all of them: {client.url('/datasets/')}, or GET {client.url('/api/datasets')} "
             "with the token")
    try:
        answer = client.get("/api/datasets")
    except ClientError:
        return (where,)
    datasets = answer.body.get("datasets") if answer.status == 200 else None
    if not isinstance(datasets, list):
        return (where,)
    keys = [str(item.get("key")) for item in datasets if isinstance(item, dict)]
    if not keys:
        return ("the server has no datasets yet: an administrator imports them with "
                "`manage.py import_dataset`",)
    close = difflib.get_close_matches(asked, keys, n=DATASETS_SHOWN, cutoff=0.4)
    shown = close + [key for key in keys if key not in close][:DATASETS_SHOWN - len(close)]
    more = f", and {len(keys) - len(shown)} more" if len(keys) > len(shown) else ""
    return (f"give --dataset one of: {', '.join(shown)}{more}", where)


def submit_file(client: WorkbenchClient, path: Path, fields: dict[str, str],
                err: IO[str]) -> dict[str, Any]:
    """Upload; the run as the API describes it. A file already evaluated with the same
    options is not an error: its existing run is the answer."""
    answer = client.upload(path, fields)
    if answer.status == 201:
        return answer.body
    if answer.status == 409 and isinstance(answer.body.get("run"), dict):
        run = answer.body["run"]
        err.write(f"note: this file was already evaluated as run {run['id']}; "
                  "following that run.\n")
        return {"id": run["id"], "url": run["url"], "api_url": run["api_url"]}
    refusal = _refusal(answer)
    if answer.status == 400 and "dataset" in (answer.body.get("fields") or {}):
        refusal.lines += dataset_hint(client, fields.get("dataset", ""))
    raise refusal


def _progress_line(body: dict[str, Any]) -> str:
    progress = body.get("progress") or {}
    done, total = progress.get("done", 0), progress.get("total", 0)
    share = f" ({done / total:.0%})" if total else ""
    passed = (progress.get("by_status") or {}).get("passed", 0)
    return f"run {body.get('id')}: {body.get('status')} {done}/{total}{share}, {passed} passed"


def wait_for_run(client: WorkbenchClient, run_id: int, err: IO[str], *,
                 deadline: float | None = None) -> dict[str, Any]:
    """Poll `GET /api/runs/<id>` with a growing pause until the run ends; progress lines
    go to `err` when they change. A server that stops answering is tried again for
    `UNREACHABLE_PATIENCE` seconds before giving up."""
    pause = POLL_FIRST
    last_line = ""
    unreachable_since: float | None = None
    live = err.isatty()
    while True:
        try:
            answer = client.get(f"/api/runs/{run_id}?problems=0")
        except ClientError as exc:
            if exc.code != ExitCode.UNREACHABLE:
                raise
            unreachable_since = unreachable_since or time.monotonic()
            if time.monotonic() - unreachable_since > UNREACHABLE_PATIENCE:
                raise
            answer = None
        else:
            unreachable_since = None
        if answer is not None:
            if answer.status == 404:
                raise ClientError(ExitCode.UNEXPECTED, f"run {run_id} is gone: deleted, or "
                                                       "no longer visible to this token")
            if answer.status != 200 and answer.status < 500:
                raise _refusal(answer)
            if answer.status == 200:
                body = answer.body
                line = _progress_line(body)
                if line != last_line:
                    err.write(("\r" + line + "\x1b[K") if live else line + "\n")
                    err.flush()
                    last_line = line
                if body.get("status") in FINAL_STATUSES:
                    if live:
                        err.write("\n")
                    return body
        if deadline is not None and time.monotonic() > deadline:
            page = client.url(f"/runs/{run_id}/")
            raise ClientError(ExitCode.TIMED_OUT, f"gave up waiting; the run goes on at {page}")
        time.sleep(pause)
        pause = min(pause * POLL_FACTOR, POLL_MAX)


def scores_text(run: dict[str, Any], server: str) -> str:
    """pass@k with its 95% interval, one line each, as a person reads them."""
    lines = [f"run {run['id']} {run['status']}: {server}{run['url']}",
             f"dataset {run['dataset']['key']}, {run['progress']['total']} samples"]
    if run.get("error"):
        lines.append(f"error: {run['error']}")
    for metric in run.get("pass_at_k") or ():
        lines.append(f"pass@{metric['k']:<4} {metric['value']:7.2%}  "
                     f"[{metric['low']:.2%}, {metric['high']:.2%}]")
    verified = run.get("verified") or {}
    if verified and not verified.get("verified"):
        lines.append("not verified: " + "; ".join(verified.get("failed", {}).values()))
    if verified.get("held"):
        lines.append("held off the leaderboards for review: "
                     + "; ".join(verified.get("review", {}).values()))
    return "\n".join(lines)


def command_submit(args: argparse.Namespace, out: IO[str] = sys.stdout,
                   err: IO[str] = sys.stderr) -> int:
    try:
        return _submit(args, out, err)
    except ClientError as exc:
        err.write(f"error: {exc}\n")
        for line in exc.lines:
            err.write(f"  {line}\n")
        return int(exc.code)
    except KeyboardInterrupt:
        err.write("\ninterrupted; the run goes on on the server\n")
        return 130


def _submit(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    token = args.token or os.environ.get(TOKEN_VARIABLE, "")
    if not token:
        raise ClientError(ExitCode.AUTH, f"give --token or set {TOKEN_VARIABLE} (make a token "
                                         "on the server's API tokens page)")
    path = Path(args.file)
    if not path.is_file():
        raise ClientError(ExitCode.USAGE, f"{path}: no such file")
    client = WorkbenchClient(args.server, token)
    fields = {"dataset": args.dataset, "visibility": args.visibility}
    optional = {"name": args.name, "model_name": args.model, "team": args.team,
                "profile": args.profile}
    fields.update({name: value for name, value in optional.items() if value})
    if args.allow_language_mismatch:
        fields["allow_language_mismatch"] = "true"
    created = submit_file(client, path, fields, err)
    page = client.url(str(created["url"]))
    if not args.wait:
        out.write(json.dumps(created) + "\n" if args.json else page + "\n")
        return int(ExitCode.OK)
    err.write(f"{page}\n")
    err.flush()
    deadline = time.monotonic() + args.max_wait if args.max_wait else None
    run = wait_for_run(client, int(created["id"]), err, deadline=deadline)
    out.write(json.dumps(run) + "\n" if args.json else scores_text(run, client.server) + "\n")
    ending = ending_text(run)
    if ending:
        err.write(f"error: {ending}\n")
    return int({"finished": ExitCode.OK, "failed": ExitCode.RUN_FAILED,
                "cancelled": ExitCode.RUN_CANCELLED}[run["status"]])


def ending_text(run: dict[str, Any]) -> str:
    """Why a run that ended without finishing did, for stderr; "" for a finished run."""
    status = run.get("status")
    progress = run.get("progress") or {}
    done = f"{progress.get('done', 0)} of {progress.get('total', 0)} samples were evaluated"
    if status == "failed":
        return f"run {run['id']} failed: {run.get('error') or 'no reason given'} ({done})"
    if status == "cancelled":
        return (f"run {run['id']} was cancelled ({done}); its page can resume it")
    return ""


def add_submit_parser(commands: Any) -> None:
    """The `submit` subcommand on `python -m evaluator`'s parser."""
    codes = ", ".join(f"{code.value} {code.name.lower().replace('_', ' ')}" for code in ExitCode)
    submit = commands.add_parser(
        "submit", help="upload a generations file to a workbench server",
        description="Upload a generations file to a workbench server and print the run's "
                    "URL; with --wait, follow the run and print its scores.",
        epilog=f"exit codes: {codes}")
    submit.add_argument("file", help=".jsonl or .jsonl.gz generations")
    submit.add_argument("--server", required=True, help="the workbench, e.g. "
                                                        "http://localhost:8000")
    submit.add_argument("--token", default="",
                        help=f"API token (default: ${TOKEN_VARIABLE}, which keeps it out of "
                             "the process list)")
    submit.add_argument("--dataset", default="humaneval/python/en",
                        help="dataset key or id (default: humaneval/python/en)")
    submit.add_argument("--name", default="", help="the run's name (default: the file's)")
    submit.add_argument("--model", default="", help="the model's name, for leaderboards")
    submit.add_argument("--team", default="", help="team slug (default: your own team)")
    submit.add_argument("--visibility", default="team", choices=("private", "team", "public"))
    submit.add_argument("--profile", default="",
                        help="harness profile (default: the dataset's reference harness)")
    submit.add_argument("--allow-language-mismatch", action="store_true",
                        help="evaluate even if the generations look like another language "
                             "(the run stays off leaderboards until you confirm it)")
    submit.add_argument("--wait", action="store_true",
                        help="follow the run (progress on stderr) and print its scores")
    submit.add_argument("--max-wait", type=float, default=0.0,
                        help="with --wait, give up after this many seconds (default: never)")
    submit.add_argument("--json", action="store_true",
                        help="print the API's answer as JSON instead of text")
    submit.set_defaults(handler=command_submit)
