"""Isolation levels: the names users choose, and the backend behind each.

This table is the one place that says what `strict`, `standard` and `none` mean.
`--sandbox`, `EVALUATOR_SANDBOX` and the web app's setting accept a level, a backend
name (the older spelling), or `auto`, which lets `evaluator.calibration` pick a
level on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass

AUTO = "auto"


@dataclass(frozen=True)
class Level:
    name: str
    backend: str
    isolates: bool
    summary: str


LEVELS: tuple[Level, ...] = (
    Level("strict", "gvisor", True,
          "gVisor: a user-space kernel between the program and the host"),
    Level("standard", "bwrap", True,
          "bubblewrap: namespaces, a read-only view, no user namespaces inside"),
    Level("none", "none", False,
          "no isolation: the program runs on the host, as you (trusted debugging only)"),
)
"""Strongest first: `auto`'s fixed order when it does not calibrate."""

_BY_NAME = {level.name: level for level in LEVELS}
_BY_BACKEND = {level.backend: level for level in LEVELS}

SANDBOX_CHOICES: tuple[str, ...] = (
    AUTO, *(level.name for level in LEVELS),
    *(level.backend for level in LEVELS if level.backend != level.name),
)
"""Every value `--sandbox` and `EVALUATOR_SANDBOX` accept."""


def get_level(name: str) -> Level:
    """The level called `name`, or the level whose backend is called `name`."""
    level = _BY_NAME.get(name) or _BY_BACKEND.get(name)
    if level is None:
        raise ValueError(f"unknown sandbox backend {name!r}; choose a level or a backend: "
                         f"{', '.join(SANDBOX_CHOICES)}")
    return level


def level_of_backend(backend: str) -> str:
    """The level name of a backend name ("" for a backend outside the table)."""
    level = _BY_BACKEND.get(backend)
    return level.name if level else ""


def describe_choices() -> str:
    """One line for help texts: every level with its backend."""
    levels = ", ".join(f"{level.name} ({level.backend})" for level in LEVELS)
    return f"auto (calibrated: see README), or a level: {levels}; backend names work too"
