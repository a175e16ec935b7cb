"""The sandbox backends by name, and the one way to get a working one.

Each backend module knows only `base`; this module knows every backend. Deciding `auto`
is not done here but above the sandbox, in `evaluator.calibration`, since it measures
programs that a language prepares.
"""

from __future__ import annotations

from evaluator.sandbox.base import Backend, SandboxError
from evaluator.sandbox.bwrap import BwrapBackend
from evaluator.sandbox.gvisor import GvisorBackend
from evaluator.sandbox.levels import AUTO, LEVELS, get_level
from evaluator.sandbox.none import NoneBackend

_REGISTRY: dict[str, type[Backend]] = {
    backend.name: backend for backend in (GvisorBackend, BwrapBackend, NoneBackend)
}


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def _probe(backend_name: str) -> tuple[Backend | None, str | None]:
    cls = _REGISTRY.get(backend_name)
    if cls is None:
        return None, "no such backend"
    backend = cls()
    reason = backend.probe()
    return (backend, None) if reason is None else (None, reason)


def get_backend(name: str) -> Backend:
    """The backend of level or backend `name` (`levels.get_level`).

    `auto` is not decided here: choosing it measures real programs, which takes a
    language, so `evaluator.calibration.resolve_backend` decides it, above the sandbox.
    """
    if name == AUTO:
        raise SandboxError("`auto` is decided by evaluator.calibration.resolve_backend")
    try:
        level = get_level(name)
    except ValueError as exc:
        raise SandboxError(str(exc)) from None
    backend, reason = _probe(level.backend)
    if backend is None:
        raise SandboxError(f"sandbox {name!r} ({level.name}: the {level.backend} backend) "
                           f"does not work here: {reason}")
    return backend


def probe_levels() -> tuple[dict[str, Backend], dict[str, str]]:
    """Every level's backend tried once: (working backends, why the others fail), by level."""
    working: dict[str, Backend] = {}
    unavailable: dict[str, str] = {}
    for level in LEVELS:
        backend, reason = _probe(level.backend)
        if backend is not None:
            working[level.name] = backend
        else:
            unavailable[level.name] = reason or "unknown"
    return working, unavailable
