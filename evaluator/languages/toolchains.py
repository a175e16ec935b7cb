"""Where compiled toolchain artefacts live, and building them once.

Some languages need things compiled before the first sample: the Rust crates the
dataset declares, and Go's test-reporting packages. They are built on the host, from
trusted sources only (never from a sample), once per toolchain version, into a cache
directory that the sandboxed runner mounts read-only.

The cache directory must be readable by the unprivileged sandbox user, so it is not
under `/root` by default: `$EVALUATOR_CACHE_DIR` if set, else `/var/cache/evaluator`
when that can be created, else `~/.cache/evaluator` when the sandbox can reach it (an
ordinary user's bwrap runs as that user), else `/var/tmp/evaluator-cache-<uid>`. A
configured directory the sandbox user cannot reach is copied for it only while small
(`rootfs.STAGE_LIMIT_MB`); the prebuilt artefacts soon outgrow that.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluator.sandbox.rootfs import blocked_at

CACHE_ENV = "EVALUATOR_CACHE_DIR"
SYSTEM_CACHE = Path("/var/cache/evaluator")
SHARED_TEMPORARY = Path("/var/tmp")
"""Where the cache goes when neither the system's nor the home's will do: every user can
traverse it, and it outlives a reboot."""


class ToolchainError(RuntimeError):
    """A toolchain is missing or a prebuild failed; the message says how to fix it."""


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        root = Path(configured)
    elif _usable(SYSTEM_CACHE):
        root = SYSTEM_CACHE
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evaluator"
        if not _usable(root) or (os.geteuid() == 0 and blocked_at(str(root)) is not None):
            # No home to write to, or root's own, which bwrap (run as nobody) cannot
            # enter.
            return _own_directory(SHARED_TEMPORARY / f"evaluator-cache-{os.geteuid()}")
    root.mkdir(parents=True, exist_ok=True)
    _world_readable(root)
    return root


def _own_directory(path: Path) -> Path:
    """`path`, made if missing, refused unless it is a directory of ours that no other
    user can write (anyone may make a directory under /var/tmp first)."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o755)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise ToolchainError(f"{path} is not a directory of this user's that only it can "
                             f"write; set {CACHE_ENV} to a cache directory")
    _world_readable(path)
    return path


def _usable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def _world_readable(path: Path) -> None:
    with contextlib.suppress(OSError):
        mode = path.stat().st_mode
        path.chmod(mode | 0o755 if path.is_dir() else mode | 0o644)


def version_key(*parts: str | bytes) -> str:
    """A short hash naming one build of an artefact (toolchain version, sources...)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()[:16]


def tree_key(root: Path) -> str:
    """A hash of every file under `root` (names and contents), for source trees."""
    parts: list[str | bytes] = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and "target" not in path.relative_to(root).parts:
            parts.append(str(path.relative_to(root)))
            parts.append(path.read_bytes())
    return version_key(*parts)


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prebuilt(name: str, key: str, build: Callable[[Path], None], *,
             keep: int | None = None) -> Path:
    """`<cache>/<name>-<key>`, made by `build(directory)` the first time it is asked for.

    Builders run under a file lock, into a temporary directory that is renamed into
    place only when complete, so concurrent workers (threads or processes) build once
    and never see half a build. With `keep`, only that many of the newest builds of
    `name` are kept: for artefacts with one live key per toolchain and code version,
    whose older builds only an older process still running might use.
    """
    root = cache_root()
    final = root / f"{name}-{key}"
    if (final / ".complete").exists():
        return final
    with _locked(root / f".{name}.lock"):
        if (final / ".complete").exists():
            return final
        work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
        try:
            build(work)
            (work / ".complete").write_text(key)
            for path in [work, *work.rglob("*")]:
                _world_readable(path)
            if final.exists():
                shutil.rmtree(final)
            work.rename(final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        if keep is not None:
            _prune(root, name, keep=keep)
    return final


def _prune(root: Path, name: str, *, keep: int) -> None:
    """Remove all but the `keep` newest builds of `name` (each code change makes one)."""
    builds = sorted((p for p in root.glob(f"{name}-*") if (p / ".complete").exists()),
                    key=lambda p: (p / ".complete").stat().st_mtime, reverse=True)
    for stale in builds[keep:]:
        shutil.rmtree(stale, ignore_errors=True)


def run_tool(argv: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
             timeout: float = 900.0) -> str:
    """Run a trusted build command on the host; raise ToolchainError with its output."""
    try:
        done = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"{argv[0]} failed: {exc}") from exc
    if done.returncode != 0:
        raise ToolchainError(
            f"{' '.join(argv)} exited with {done.returncode}:\n{done.stderr[-3000:]}"
        )
    return done.stdout


def executable(name: str, env_var: str, preferred: Sequence[str] = ()) -> str | None:
    """The path of a tool: `$env_var`, else the first existing preferred path, else PATH."""
    configured = os.environ.get(env_var)
    if configured:
        return configured if Path(configured).exists() else None
    for candidate in preferred:
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(name)


@dataclass(frozen=True)
class Tool:
    """Where a language finds one of its programs: `$variable` if set, else the first of
    `preferred` that exists, else `name` on PATH. The language module, the manifest and
    the language check all ask the same object, so they find the same program."""

    name: str
    variable: str
    preferred: tuple[str, ...] = ()
    install_hint: str = ""
    """What to install when it is missing (`apt-get install g++`)."""

    def find(self) -> str | None:
        return executable(self.name, self.variable, self.preferred)

    def require(self) -> str:
        """Its path; ToolchainError, saying what to install, when it is missing."""
        found = self.find()
        if found is None:
            hint = f" ({self.install_hint})" if self.install_hint else ""
            raise ToolchainError(f"{self.name} is not installed{hint}")
        return found

    def beside(self, program: str) -> str:
        """Another program of the same installation (gofmt beside go, rustfmt beside
        rustc): the one in this tool's directory, else the first on PATH."""
        found = self.find()
        if found is not None:
            if program == self.name:
                return found
            sibling = Path(found).resolve().parent / program
            if sibling.is_file():
                return str(sibling)
        path = shutil.which(program)
        if path is None:
            raise ToolchainError(f"{program} is not installed")
        return path
