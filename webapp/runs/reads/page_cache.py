"""A cache for the pages many people read at once: a run's page and the leaderboards.

Nothing here is invalidated by hand. Each key holds a digest of what its entry was drawn
from, so that an edit, a visibility change, a rescore, a run that finishes or a new
defect registry gives a new key at once, and the old entry just ages out:

- a run page's parts: every column of the run's row (a rescore or a resume rewrites its
  status and times; an edit its name, team or visibility), its dataset's version and its
  latest recorded change (a confirmed listing changes nothing else);
- a leaderboard: the ids and state of exactly the runs in the viewer's scope, so two
  viewers share an entry only when they may see the same runs, drawn the same way.

Who is looking is never part of a shared entry: the permission decisions (may this viewer
see the run, manage it) are made on every request, before a key is built, and a part
that depends on them has them in its key.

A run still going changes with every sample: its page is drawn from one entry
(`live_page`), its snapshot and the parts that change with it, whose event number the page
resumes from (the live feed sends what came after it), and each part the page keeps has the
entry's draw in its key. Past `LIVE_SECONDS` the entry is still served while one request
draws the next once its own answer is sent: a page a few seconds old is as right as a new
one, since the feed brings the rest. A cache that fails (Redis restarting) costs time,
never an answer.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from functools import partial, wraps
from typing import Any, Generic, ParamSpec, TypedDict, TypeVar

from django.core.cache import cache
from django.db.models import Max
from django.http.response import HttpResponseBase
from redis.exceptions import RedisError

from webapp.runs.models import Run, RunChange
from webapp.runs.reads.selectors import LAST_CHANGE

T = TypeVar("T")
R = TypeVar("R", bound=HttpResponseBase)
P = ParamSpec("P")
log = logging.getLogger(__name__)

LIVE_SECONDS = 3
"""How long a run still going keeps a page part, or serves a page entry before one request
draws it again: its live feed brings the rest."""
LIVE_KEPT_SECONDS = 30
"""How long a page entry of a run still going is kept: served past `LIVE_SECONDS` while its
next one is drawn (at most this long, unless `live_page` is told less), or drawn again by
whoever asks once a redraw has failed."""
LIVE_PART_SECONDS = LIVE_KEPT_SECONDS + 2 * LIVE_SECONDS
"""How long a part of a page drawn from such an entry is kept: a little longer than the
entry, which is kept once the page is drawn, so that a request served the entry finds them."""
LIVE_CLAIM_SECONDS = 10
"""How long a request that claimed an entry's redraw has before another may claim it."""
FINISHED_SECONDS = 3600
"""How long a finished run's part is kept unread (a new state has a new key anyway)."""

LIVE_FIELDS = frozenset({
    "done_count", "passed_count", "failed_count", "error_count", "compile_error_count",
    "timeout_count", "memory_count", "sandbox_error_count", "cached_count", "chunks_done",
    "event_seq", "lease_until", "dispatched_at", "manifest", "sandbox_backend",
})
"""What a run still going changes with every chunk: left out of its key, or nothing it
draws would ever be read twice."""

CACHE_ERRORS = (RedisError, OSError)
UNREAD = object()


class LiveEntry(TypedDict, Generic[T]):
    """A page entry of a run still going (`live_entry`)."""

    value: T
    drawn: str
    """Which draw it is: the key of every part of a page drawn from it."""
    fresh_until: float
    """A `time.time()`; served as it is until then, and while its next one is drawn after
    (`live_page`)."""


def digest(parts: Iterable[object]) -> str:
    return hashlib.sha256(repr(tuple(parts)).encode()).hexdigest()[:32]


def run_row(run: Run) -> list[tuple[str, object]]:
    """The run's row as loaded, but the columns a run still going changes all the time."""
    return [(field.attname, getattr(run, field.attname)) for field in Run._meta.concrete_fields
            if not (run.is_active and field.attname in LIVE_FIELDS)]


def run_version(*, run: Run) -> str:
    """What a run page's parts are drawn from: the run's row, its dataset's version and its
    latest change. No query for a run read by `get_run_for_user`, else one."""
    changed = getattr(run, LAST_CHANGE, UNREAD)  # read with the row (`get_run_for_user`)
    if changed is UNREAD:
        changed = RunChange.objects.filter(run_id=run.pk).aggregate(last=Max("pk"))["last"]
    return digest([*run_row(run), run.dataset.version, changed])


def _read(key: str) -> Any:
    try:
        return cache.get(key)
    except CACHE_ERRORS as exc:
        log.warning("page cache unavailable, drawing %s: %s", key, exc)
        return None


def _keep(key: str, value: object, timeout: int) -> None:
    try:
        cache.set(key, value, timeout)
    except CACHE_ERRORS as exc:
        log.warning("page cache unavailable, not keeping %s: %s", key, exc)


def _read_many(keys: list[str]) -> dict[str, Any]:
    try:
        return cache.get_many(keys)
    except CACHE_ERRORS as exc:
        log.warning("page cache unavailable, drawing %d entries: %s", len(keys), exc)
        return {}


_read_early: ContextVar[dict[str, Any] | None] = ContextVar("page_cache_read_early",
                                                            default=None)
"""What `read_ahead` read for the request under way (`reading_ahead`): each entry, or None
where the cache had none."""


def reading_ahead(view: Callable[P, T]) -> Callable[P, T]:
    """Let `view` read its entries ahead (`read_ahead`); what it read is forgotten when it
    returns. A pool thread serves request after request in one context, so the entries
    must not outlive the request that read them."""

    @wraps(view)
    def scoped(*args: P.args, **kwargs: P.kwargs) -> T:
        token = _read_early.set({})
        try:
            return view(*args, **kwargs)
        finally:
            _read_early.reset(token)

    return scoped


def read_ahead(keys: Iterable[str]) -> None:
    """Read the entries under `keys` in one round trip, for `shared` to take from here for
    the rest of the request: a page that reads several entries (and the fragments its
    template keeps) pays one trip to the cache, not one each. Outside `reading_ahead`
    nothing is read."""
    early = _read_early.get()
    if early is None:
        return
    wanted = [key for key in keys if key not in early]
    if wanted:
        found = _read_many(wanted)
        # A miss is kept too (None), so that `shared` does not ask the cache again before
        # it takes the drawing lock, under which it asks anyway.
        early.update({key: found.get(key) for key in wanted})


def fragment_key(name: object, key: object) -> str:
    """The key of a template's `{% shared_fragment name key %}` part."""
    return key_of("fragment", name, key)


_drawing: weakref.WeakValueDictionary[str, threading.Lock] = weakref.WeakValueDictionary()
_drawing_lock = threading.Lock()


def _lock_of(key: str) -> threading.Lock:
    with _drawing_lock:
        lock = _drawing.get(key)
        if lock is None:
            lock = _drawing[key] = threading.Lock()
        return lock


def shared(key: str, draw: Callable[[], T], *, timeout: int) -> T:
    """The entry under `key`, drawn and kept for `timeout` seconds if there is none.

    The requests of a process that want an entry being drawn wait for it rather than draw
    it too: when a live run's entry expires, twenty viewers would otherwise each pay for
    it at once."""
    early = _read_early.get()
    found = early[key] if early is not None and key in early else _read(key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    lock = _lock_of(key)
    with lock:
        found = _read(key)
        if found is not None:
            return found  # type: ignore[no-any-return]
        value = draw()
        _keep(key, value, timeout)
    return value


def live_page(key: str, draw: Callable[[], T], answer: Callable[[LiveEntry[T]], R | None],
              *, stale_seconds: float = LIVE_KEPT_SECONDS - LIVE_SECONDS) -> R | None:
    """The request's answer (`answer`) drawn from the entry under `key` of a page that
    changes all the time (a run still going); `answer` gives None for an entry that does not
    serve (its run came to rest), which is then never kept.

    An entry is served as it is for `LIVE_SECONDS`, then, stale, for `stale_seconds` more,
    to every request at once. The one request that claims its redraw (through the cache, so
    one across web processes) is answered from it too, and only once its answer is sent
    draws the next entry and an answer from it (which puts its parts in the cache), then
    keeps the entry: no request waits for a redraw while an entry serves. Parts drawn from
    an entry must have its `drawn` stamp in their keys. With no entry, or only one older
    than that, the request draws it, and the requests of its process wait for it (as
    `shared` does)."""
    early = _read_early.get()
    found: LiveEntry[T] | None = early[key] if early is not None and key in early else _read(key)
    if found is not None and time.time() < found["fresh_until"] + stale_seconds:
        answered = answer(found)
        if (answered is not None and time.time() >= found["fresh_until"]
                and _claim(f"{key}:redraw:{found['drawn']}")):
            after_response(answered, partial(_redraw_quietly, key, draw, answer))
        return answered
    with _lock_of(key):
        found = _read(key)
        if found is not None and time.time() < found["fresh_until"] + stale_seconds:
            return answer(found)
        return _redraw(key, draw, answer)


def after_response(response: HttpResponseBase, then: Callable[[], object]) -> None:
    """Call `then` on the request's thread once `response` has been sent: the server closes
    a response after its last byte, and Django's `close()` calls its closers before
    `request_finished` hands the thread's database connection back. A closer's error is
    swallowed there, so `then` must report its own."""
    # Django's own list (what `close()` runs); a test fails should an upgrade rename it.
    response._resource_closers.append(then)  # type: ignore[attr-defined]


def _redraw(key: str, draw: Callable[[], T], answer: Callable[[LiveEntry[T]], R | None],
            ) -> R | None:
    entry: LiveEntry[T] = {"value": draw(), "drawn": secrets.token_hex(8), "fresh_until": 0.0}
    answered = answer(entry)
    if answered is not None:
        # Fresh from when it is kept, not drawn: its answer took a while on a busy machine.
        _keep(key, {**entry, "fresh_until": time.time() + LIVE_SECONDS}, LIVE_KEPT_SECONDS)
    return answered


def _redraw_quietly(key: str, draw: Callable[[], T],
                    answer: Callable[[LiveEntry[T]], R | None]) -> None:
    # Its claim lapses (`LIVE_CLAIM_SECONDS`): another request draws it then.
    try:
        _redraw(key, draw, answer)
    except Exception:
        log.exception("page cache: drawing %s again after a response failed", key)


def _claim(key: str) -> bool:
    """Whether this request is the one to draw a stale entry again; the others serve it."""
    try:
        return bool(cache.add(key, 1, LIVE_CLAIM_SECONDS))
    except CACHE_ERRORS as exc:
        log.warning("page cache unavailable, serving %s as it is: %s", key, exc)
        return False


def key_of(name: str, *parts: Any) -> str:
    return f"page:{name}:{digest(parts)}"

