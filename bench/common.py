"""Shared by the benchmark scripts: where the data is, and how to time a command."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def shared_dir() -> Path:
    path = Path(os.environ.get("WORKBENCH_SHARED", REPO.parent / "shared"))
    if not (path / "datasets").is_dir():
        sys.exit(f"benchmark data not found at {path}; set WORKBENCH_SHARED")
    return path


def timed(argv: list[str], *, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run a command to completion; return its wall time and its output."""
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"{' '.join(argv[:4])}… exited with {proc.returncode}")
    return elapsed, proc


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())
