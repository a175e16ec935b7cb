"""Long-lived evaluation engines, one per worker process and configuration.

An `Engine` keeps its worker threads and its sandboxed runner sessions across `evaluate()`
calls, so a Celery worker process that evaluates chunk after chunk pays the sandbox
start-up once rather than once per chunk. Engines are kept per distinct configuration
(backend, threads, run options: limits decide how a runner is started) and leased out
whole: a prefork worker holds one at a time, and a threaded server that evaluates several
chunks at once gets one engine per concurrent chunk, since one engine's runner sessions
must not take two chunks' programs interleaved with two chunks' caches.

All engines are closed when the process ends: at interpreter exit, and on Celery's
`worker_process_shutdown` (pool processes leave through `os._exit`, which skips atexit).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from evaluator.engine import Engine, EngineConfig, ResultCache
from evaluator.records import RunOptions

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineKey:
    backend: str
    workers: int
    options: RunOptions


_lock = threading.Lock()
_idle: dict[EngineKey, list[Engine]] = {}
_open: list[Engine] = []


def _new_engine(key: EngineKey) -> Engine:
    # Per-test outcomes are streamed only while someone watches the run (the chunk's
    # evaluation sets `stream_tests`: `webapp.runs.messaging.watching`).
    engine = Engine(EngineConfig(backend=key.backend, workers=key.workers, options=key.options))
    with _lock:
        _open.append(engine)
    return engine


def _discard(engine: Engine) -> None:
    with _lock:
        if engine in _open:
            _open.remove(engine)
    try:
        engine.close()
    except Exception:
        logger.exception("closing an evaluation engine failed")


@contextlib.contextmanager
def engine_lease(*, backend: str, workers: int, options: RunOptions,
                 cache: ResultCache | None) -> Iterator[Engine]:
    """An engine for this configuration, reused if one is idle, with `cache` attached for
    the lease. An engine whose evaluation raised is closed, not reused: its runners may be
    in any state."""
    key = EngineKey(backend=backend, workers=workers, options=options)
    with _lock:
        idle = _idle.get(key)
        engine = idle.pop() if idle else None
    if engine is None:
        engine = _new_engine(key)
    engine.config.cache = cache
    try:
        yield engine
    except BaseException:
        engine.config.cache = None
        _discard(engine)
        raise
    engine.config.cache = None
    engine.config.stream_tests = False
    with _lock:
        if engine in _open:
            _idle.setdefault(key, []).append(engine)


def engines_open() -> int:
    with _lock:
        return len(_open)


def engines_close() -> None:
    """Close every engine of this process (threads and runner sessions)."""
    with _lock:
        engines = list(_open)
        _open.clear()
        _idle.clear()
    for engine in engines:
        try:
            engine.close()
        except Exception:
            logger.exception("closing an evaluation engine failed")


atexit.register(engines_close)
