"""Helpers shared by the web app's tests."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from asgiref.testing import ApplicationCommunicator
from django.contrib.auth.models import User
from django.test import Client

# Three HumanEval/0 .. /2 completions: one right, one wrong, one that crashes.
RIGHT_0 = (
    "    for i, a in enumerate(numbers):\n"
    "        for j, b in enumerate(numbers):\n"
    "            if i != j and abs(a - b) < threshold:\n"
    "                return True\n"
    "    return False\n"
)
WRONG_0 = "    return False\n"
CRASH_1 = "    raise ValueError('no')\n"


def client_for(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client



def files_left_by_uploads() -> list[Path]:
    """Files under the upload folder. An upload leaves none once its request has ended:
    whatever must wait for a confirmation waits in the database, where any web process
    can find it."""
    from django.conf import settings

    return sorted(path for path in Path(settings.UPLOAD_DIR).rglob("*") if path.is_file())


def write_jsonl(path: Path, records: list[dict[str, Any]], *, compress: bool = False) -> Path:
    text = "".join(json.dumps(record) + "\n" for record in records)
    if compress:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def small_samples() -> list[dict[str, Any]]:
    return [
        {"task_id": "HumanEval/0", "completion": RIGHT_0},
        {"task_id": "HumanEval/0", "completion": WRONG_0},
        {"task_id": "HumanEval/1", "completion": CRASH_1},
        {"task_id": "HumanEval/1", "completion": CRASH_1},
    ]


class WebsocketClient(ApplicationCommunicator):
    """Drives an ASGI websocket application in-process (channels.testing needs daphne)."""

    def __init__(self, application: Any, path: str, headers: list[tuple[bytes, bytes]],
                 query_string: bytes = b"") -> None:
        super().__init__(application, {
            "type": "websocket", "path": path, "raw_path": path.encode(),
            "query_string": query_string,
            "headers": headers, "subprotocols": [], "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        })

    async def connect(self, timeout: float = 5) -> tuple[bool, int | None]:
        await self.send_input({"type": "websocket.connect"})
        message = await self.receive_output(timeout)
        if message["type"] == "websocket.close":
            return False, message.get("code", 1000)
        return True, None

    async def receive_json_from(self, timeout: float = 5) -> Any:
        message = await self.receive_output(timeout)
        assert message["type"] == "websocket.send", message
        return json.loads(message["text"])

    async def disconnect(self, code: int = 1000, timeout: float = 5) -> None:
        await self.send_input({"type": "websocket.disconnect", "code": code})
        await self.wait(timeout)
