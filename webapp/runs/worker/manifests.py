"""A run's manifest (`evaluator.manifest`): recorded by the workers that evaluate it, read
by its page, its JSON export and its reproductions."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from evaluator.engine import Engine
from evaluator.manifest import MANIFEST_SCHEMA, build_manifest, flatten, manifest_merge
from webapp.runs.models import Run

logger = logging.getLogger(__name__)


def run_manifest_record(*, run: Run, engine: Engine, language: str) -> None:
    """Fold this worker's manifest of one evaluated chunk into the run's.

    The first chunk's worker writes it; each later one adds the toolchain of its language
    and, should its machine differ, the field under `mixed` (`manifest_merge`). The run
    row is locked for the merge, so chunks finishing together lose nothing.
    """
    try:
        built = build_manifest(
            generation_sha256=run.file_sha256, generation_name=run.file_name,
            dataset_key=run.dataset.key, dataset_version=run.dataset.version,
            options=engine.config.options, sanitize=bool(run.options.get("sanitize")),
            backend=engine.backend, languages=[language],
        )
    except Exception as exc:
        # The verdicts stand without it: say on the page what went wrong, fail nothing.
        logger.exception("run %s: the manifest could not be built", run.pk)
        built = {"schema": MANIFEST_SCHEMA,
                 "error": f"the manifest could not be built: {type(exc).__name__}: {exc}"}
    with transaction.atomic():
        stored = Run.objects.select_for_update().values_list("manifest", flat=True).get(pk=run.pk)
        merged = manifest_merge(stored or {}, built)
        if merged != stored:
            Run.objects.filter(pk=run.pk).update(manifest=merged)


def manifest_export(*, run: Run) -> dict[str, Any]:
    """The run's manifest as one JSON document, with what identifies the run."""
    return {
        "run": {"id": run.pk, "name": run.name, "model": run.model_name,
                "status": run.status, "created_at": _iso(run.created_at),
                "finished_at": _iso(run.finished_at),
                "reproduction_of": run.reproduction_of_id},
        "manifest": run.manifest or None,
    }


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None


HASH = re.compile(r"^[0-9a-f]{16,}(\.\w+)?$")
"""A value shown abbreviated, with a button that copies it whole."""
SHORT_HASH = 12


@dataclass(frozen=True)
class ManifestRow:
    section: str
    label: str
    value: str
    copy: str = ""
    """The whole value, when `value` shows it abbreviated."""
    hint: str = ""


def _row(section: str, label: str, value: Any, hint: str = "") -> ManifestRow:
    text = "—" if value is None or value == "" else str(value)
    if isinstance(value, bool):
        text = "yes" if value else "no"
    if HASH.match(text) and len(text) > SHORT_HASH + 2:
        return ManifestRow(section, label, f"{text[:SHORT_HASH]}…", copy=text, hint=hint)
    return ManifestRow(section, label, text, hint=hint)


LIMIT_LABELS = (
    ("cpu_seconds", "CPU", " s", 1), ("wall_seconds", "wall", " s", 1),
    ("memory_mb", "memory", " MB", 1), ("processes", "processes", "", 1),
    ("output_bytes", "output", " MiB", 1 << 20), ("file_size_mb", "files", " MB", 1),
    ("scratch_mb", "scratch", " MB", 1),
)


LIMIT_SOURCE_TEXT = {
    "profile": "the profile's own limit",
    "default": "the default limit (the profile sets none)",
    "user": "override: chosen by the person who uploaded the run",
    "server": "override: set by this server's operator (EVALUATOR_TIMEOUT_SECONDS)",
}
"""How the manifest's `limits.source` reads on the run page."""


def _limits_text(limits: dict[str, Any]) -> str:
    return " · ".join(f"{name} {limits[key] / scale:g}{unit}"
                      for key, name, unit, scale in LIMIT_LABELS if key in limits)


def manifest_rows(manifest: dict[str, Any]) -> list[ManifestRow]:
    """The manifest as the run page's table draws it: one row per record, hashes
    abbreviated, anything this code does not know listed by its path at the end."""
    if not manifest:
        return []
    if "harness" not in manifest and manifest.get("error"):
        return [ManifestRow("Not recorded", "why", str(manifest["error"]))]
    rows: list[ManifestRow] = []
    generation = manifest.get("generation", {})
    rows.append(_row("Generation file", "sha256", generation.get("sha256"),
                     hint=generation.get("name", "")))
    dataset = manifest.get("dataset", {})
    rows.append(_row("Dataset", "content hash", dataset.get("content_hash"),
                     hint=dataset.get("key", "")))
    harness = manifest.get("harness", {})
    rows.append(_row("Harness", "version", harness.get("version")))
    rows.append(_row("Harness", "runtime hash", harness.get("runtime")))
    profile = f"{harness.get('profile', '?')} (version {harness.get('profile_version', '?')})"
    rows.append(_row("Harness", "profile", profile))
    sanitizer = manifest.get("sanitizer", {})
    rows.append(_row("Sanitizer", "applied", bool(sanitizer.get("enabled")),
                     hint=f"sanitizer version {sanitizer.get('version', '?')}"))
    sandbox = dict(manifest.get("sandbox", {}))
    level = f"{sandbox.pop('level', '') or '?'} ({sandbox.pop('backend', '?')})"
    rows.append(_row("Sandbox", level,
                     sandbox.pop("version", None) or "no sandbox program (runs on the host)"))
    for path, value in flatten(sandbox).items():
        rows.append(_row("Sandbox", path, value))
    for language, tool in sorted(manifest.get("toolchains", {}).items()):
        rows.append(_row("Toolchain", language, tool.get("version") or tool.get("error"),
                         hint=tool.get("path", "")))
    limits = manifest.get("limits", {})
    rows.append(_row("Limits", "per program", _limits_text(limits.get("run", {})),
                     hint=LIMIT_SOURCE_TEXT.get(str(limits.get("source")), "")))
    rows.append(_row("Limits", "per compile", _limits_text(limits.get("compile", {}))))
    rows.append(_row("Limits", "task and tests",
                     f"{limits.get('task', '?')}, {limits.get('tests', '?')} tests"
                     + (", patched problems" if limits.get("patched") else "")))
    host = manifest.get("host", {})
    rows.append(_row("Host", "system", " · ".join(
        str(host[key]) for key in ("os", "kernel", "machine") if host.get(key))))
    known = {"schema", "generation", "dataset", "harness", "sanitizer", "sandbox",
             "toolchains", "limits", "host", "mixed"}
    for path, value in flatten({k: v for k, v in manifest.items() if k not in known}).items():
        rows.append(_row("Other", path, value))
    return rows
