"""A channel layer in one SQLite file, for the embedded set-up.

Channels' in-memory layer lives inside one process, but in the embedded set-up the events
are emitted by Celery worker processes and the websockets are held by the web server
process. This layer lets them meet without a Redis server: `send` and `group_send` insert
rows into a SQLite file in WAL mode, and `receive` polls for its channel's rows.

Polling costs a small query every `poll_interval` seconds per connected websocket and adds
at most that much latency, which is fine on one machine; production uses the Redis layer.
Messages must be JSON-serialisable (every event of this project is).
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import sqlite3
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer

_SCHEMA = """
CREATE TABLE IF NOT EXISTS channel_message (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    channel TEXT NOT NULL,
    body TEXT NOT NULL,
    expires REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS channel_message_by_channel ON channel_message (channel, id);
CREATE TABLE IF NOT EXISTS channel_group (
    name TEXT NOT NULL,
    channel TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (name, channel)
);
"""


class SQLiteChannelLayer(BaseChannelLayer):
    extensions = ["groups", "flush"]

    def __init__(
        self,
        path: str,
        expiry: int = 60,
        group_expiry: int = 86400,
        capacity: int = 1000,
        channel_capacity: dict[re.Pattern[str] | str, int] | None = None,
        poll_interval: float = 0.05,
        batch: int = 200,
    ) -> None:
        super().__init__(expiry=expiry, capacity=capacity, channel_capacity=channel_capacity)
        self.path = Path(path)
        self.group_expiry = group_expiry
        self.poll_interval = poll_interval
        self.batch = batch
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        # Rows already taken off the table for a channel, handed out one per receive().
        self._buffers: dict[str, deque[dict[str, Any]]] = {}
        self._sends = 0

    # -- the connection -------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                self.path, timeout=30, check_same_thread=False, isolation_level=None
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            self._db = db
        return self._db

    def _run(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._connection().execute(query, params).fetchall()

    def _run_many(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                for query, params in statements:
                    db.execute(query, params)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # -- channels -------------------------------------------------------------------------
    async def new_channel(self, prefix: str = "specific.") -> str:
        return f"{prefix}{secrets.token_hex(8)}!{secrets.token_hex(6)}"

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        self.require_valid_channel_name(channel)
        await asyncio.to_thread(self._insert, [channel], message)

    def _insert(self, channels: list[str], message: dict[str, Any]) -> None:
        body = json.dumps(message)
        now = time.time()
        statements: list[tuple[str, tuple[Any, ...]]] = []
        for channel in channels:
            waiting = self._run(
                "SELECT COUNT(*) FROM channel_message WHERE channel = ? AND expires > ?",
                (channel, now),
            )[0][0]
            if waiting >= self.get_capacity(channel):
                if len(channels) == 1:
                    raise ChannelFull(channel)
                continue  # A group send drops the message for a full member, as Redis does.
            statements.append((
                "INSERT INTO channel_message (channel, body, expires) VALUES (?, ?, ?)",
                (channel, body, now + self.expiry),
            ))
        self._sends += 1
        if self._sends % 500 == 0:
            statements.append(("DELETE FROM channel_message WHERE expires < ?", (now,)))
            statements.append(("DELETE FROM channel_group WHERE expires < ?", (now,)))
        if statements:
            self._run_many(statements)

    async def receive(self, channel: str) -> dict[str, Any]:
        self.require_valid_channel_name(channel)
        buffer = self._buffers.setdefault(channel, deque())
        while not buffer:
            rows = await asyncio.to_thread(self._take, channel)
            if rows:
                buffer.extend(rows)
            else:
                await asyncio.sleep(self.poll_interval)
        message = buffer.popleft()
        if not buffer:
            del self._buffers[channel]
        return message

    def _take(self, channel: str) -> list[dict[str, Any]]:
        # Each channel has one reader (names are random per consumer), so deleting what
        # was read cannot race with another reader of the same channel.
        rows = self._run(
            "DELETE FROM channel_message WHERE id IN (SELECT id FROM channel_message "
            "WHERE channel = ? ORDER BY id LIMIT ?) RETURNING id, body, expires",
            (channel, self.batch),
        )
        now = time.time()
        return [json.loads(body) for _, body, expires in sorted(rows) if expires >= now]

    # -- groups ---------------------------------------------------------------------------
    async def group_add(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        await asyncio.to_thread(
            self._run,
            "INSERT OR REPLACE INTO channel_group (name, channel, expires) VALUES (?, ?, ?)",
            (group, channel, time.time() + self.group_expiry),
        )

    async def group_discard(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        await asyncio.to_thread(
            self._run, "DELETE FROM channel_group WHERE name = ? AND channel = ?", (group, channel)
        )

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.require_valid_group_name(group)
        await asyncio.to_thread(self._group_insert, group, message)

    def _group_insert(self, group: str, message: dict[str, Any]) -> None:
        members = self._run(
            "SELECT channel FROM channel_group WHERE name = ? AND expires > ?",
            (group, time.time()),
        )
        if members:
            self._insert([row[0] for row in members], message)

    # -- flush extension ------------------------------------------------------------------
    async def flush(self) -> None:
        await asyncio.to_thread(
            self._run_many,
            [("DELETE FROM channel_message", ()), ("DELETE FROM channel_group", ())],
        )
        self._buffers.clear()

    async def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
