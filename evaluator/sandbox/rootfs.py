"""The file system a sandboxed runner sees: a few read-only system paths, nothing else.

Both real backends build the same view, so a program behaves the same under each:
- read-only: the system's programs and libraries (`/usr/bin`, `/usr/lib`, ...), the
  loader's cache, `/etc/alternatives` (Debian's `java`, `cc`, ... are links through it),
  and every `Mount` a language module asks for (a JDK, Go's sources, Node's modules);
- generated: a `passwd` and `group` that know only root and nobody, and a `hosts` that
  knows only localhost, so tools that look up their user or host do not fail;
- private and writable: the scratch tmpfs, of limited size.

The home directories, the project tree, `/etc` at large, other users' files and the
host's `/tmp` are simply not there.

Jobs, argv and environment variables name host paths, so a mount's resolved source
appears at the path the jobs name (its target, else its source) even when the sandbox's
user cannot reach the source (a checkout in a private directory: the view binds a
world-readable staged copy, `Stage`), or when that path lies in the scratch (a checkout
under /tmp: it is a link to where the mount is, `_out_of_scratch`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluator.sandbox.base import LaunchSpec, Mount, SandboxError

SANDBOX_UID = 65534
SANDBOX_GID = 65534
"""nobody/nogroup: the identity of every sandboxed program, inside and (bwrap) outside."""

SCRATCH = "/tmp"
"""Where the scratch tmpfs is mounted inside the sandbox."""
MOVED_MOUNTS = Path("/opt/evaluator-mounts")
"""Where mounts whose paths lie in the scratch are bound; links lead there."""

SYSTEM_PATHS = (
    "/usr/bin",
    "/usr/lib",
    "/usr/lib64",
    "/usr/libexec",
    "/usr/include",
    "/usr/share/zoneinfo",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
)
"""Read-only system paths every runner gets (those that exist on the host)."""

TOP_LEVEL_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
"""Merged-/usr systems make these symbolic links; they are recreated as such."""

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"

GENERATED_FILES = {
    "passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    "nobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin\n",
    "group": "root:x:0:\nnogroup:x:65534:\n",
    "hosts": "127.0.0.1 localhost\n::1 localhost\n",
}

STAGE_LIMIT_MB = 512
"""The most a staged copy may hold: a larger tree out of reach (a whole toolchain) is
better opened to the sandbox's user than copied by every process."""

Stager = Callable[[str], str]
"""Gives a world-readable copy of a host path (`Stage.copy_of`)."""


@dataclass(frozen=True)
class View:
    """What to mount where: binds (source, target, writable) and top-level links."""

    binds: tuple[tuple[str, str, bool], ...]
    links: tuple[tuple[str, str], ...]
    """(link target, path of the link)."""


def blocked_at(path: str, *, traverse: bool = True) -> str | None:
    """Where a user with no rights of its own (`other`, as the sandbox's nobody is) is
    stopped on the way to the existing `path`: a directory above it without o+x (when it
    must `traverse` them), or `path` itself without o+r (o+rx for a directory). None when
    that user can read it."""
    resolved = Path(os.path.realpath(path))
    if traverse:
        for ancestor in reversed(resolved.parents):
            if not ancestor.stat().st_mode & stat.S_IXOTH:
                return str(ancestor)
    mode = resolved.stat().st_mode
    needed = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return None if mode & needed == needed else str(resolved)


def in_scratch(path: str) -> bool:
    return Path(path).is_relative_to(SCRATCH)


def build_view(spec: LaunchSpec, workdir: Path, *, traverse: bool = True) -> View:
    """The binds and links for `spec`; the files they need are written under `workdir`
    (`etc/`: the generated /etc files; `held/`: see `_out_of_scratch`).

    `traverse`: the backend's launcher opens the sources as an unprivileged user (bwrap
    as nobody), who must pass every directory above them. A read-only source the
    sandbox's user cannot reach is replaced by `spec.stage`'s copy of it; a writable one,
    or one without a stager, is an error that says which directory to open.
    """
    etc_dir = workdir / "etc"
    etc_dir.mkdir(parents=True, exist_ok=True)
    wanted: list[tuple[str, str, bool, bool]] = []
    """(resolved source, target, writable, the target is the source as named)."""

    def add(mount: Mount) -> None:
        source = os.path.realpath(mount.source)
        if os.path.exists(source):
            target = os.path.abspath(mount.target or mount.source)
            wanted.append((source, target, mount.writable, mount.target is None))

    links: list[tuple[str, str]] = []
    for name in TOP_LEVEL_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            links.append((os.readlink(path), str(path)))
        elif path.is_dir():
            add(Mount(path))
    for system_path in SYSTEM_PATHS:
        add(Mount(Path(system_path)))
    for name, text in GENERATED_FILES.items():
        generated = etc_dir / name
        generated.write_text(text)
        generated.chmod(0o644)
        add(Mount(generated, Path("/etc") / name))
    for mount in spec.mounts:
        add(mount)

    targets = [target for _, target, _, _ in wanted]
    binds: list[tuple[str, str, bool]] = []
    seen: set[str] = set()
    for source, target, writable, as_named in wanted:
        if as_named and target != source and _behind_link_in_mount(target, targets):
            # A link inside another mount (a checkout's node_modules linked to another
            # checkout's): that mount carries the link, so the tree goes where it leads.
            target = source
        if target in seen:
            continue
        seen.add(target)
        _check_target(target, writable)
        binds.append((_reachable(source, writable, spec.stage, traverse=traverse),
                      target, writable))
    return View(tuple(_out_of_scratch(binds, workdir / "held")), tuple(links))


def _out_of_scratch(binds: list[tuple[str, str, bool]],
                    held_dir: Path) -> list[tuple[str, str, bool]]:
    """`binds`, with those whose targets lie deep in the scratch (a checkout under /tmp)
    moved to `MOVED_MOUNTS`, and read-only binds of skeletons that lead there from
    their own paths by links: one skeleton per top directory of the scratch, mounted on
    top of the scratch, which backends mount first.

    Mounted in place, they would sit in the scratch that the runner empties after every
    job: it would walk every file of them each time (a real node_modules: 20 ms a job
    under bwrap, 300 ms under gVisor), and the directories on the way would be the
    scratch's own, which a program could fill (gVisor makes them 0777) or, under bwrap,
    rename away, and put files of its own where a later job looks for its harness.
    """
    targets = [target for _, target, _ in binds if in_scratch(target) and target != SCRATCH]
    at_top = [target for target in targets if Path(target).parent == Path(SCRATCH)]
    # What lies inside a mount at the top stays in it, where its mount point is.
    deep = [target for target in targets if target not in at_top
            and not any(Path(target).is_relative_to(top) for top in at_top)]
    outermost = sorted(target for target in deep if not any(
        other != target and Path(target).is_relative_to(other) for other in deep))
    moved = {target: str(MOVED_MOUNTS / str(n)) for n, target in enumerate(outermost)}
    out: list[tuple[str, str, bool]] = []
    for source, target, writable in binds:
        outer = next((o for o in outermost if Path(target).is_relative_to(o)), None)
        if outer is not None:
            target = str(Path(moved[outer]) / Path(target).relative_to(outer))
        out.append((source, target, writable))
    held: list[tuple[str, str, bool]] = []
    for original, target in moved.items():
        top = Path(SCRATCH) / Path(original).relative_to(SCRATCH).parts[0]
        link = held_dir / Path(original).relative_to(SCRATCH)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
        if (str(held_dir / top.name), str(top), False) not in held:
            held.append((str(held_dir / top.name), str(top), False))
    if held:
        _open_to_all(held_dir)
    return [*held, *out]


def _behind_link_in_mount(target: str, targets: list[str]) -> bool:
    """Whether `target` lies inside another mount's target, below a symbolic link."""
    for outer in targets:
        if outer == target or not Path(target).is_relative_to(outer):
            continue
        step = Path(outer)
        for part in Path(target).relative_to(outer).parts:
            step = step / part
            if step.is_symlink():
                return True
    return False


def _check_target(target: str, writable: bool) -> None:
    if target == SCRATCH or (writable and Path(target).parent == Path(SCRATCH)):
        # The runner empties the scratch after every job, what is mounted at its top
        # included (deeper mounts are moved out of it).
        raise SandboxError(
            f"cannot mount {'a writable directory' if writable else 'anything'} at "
            f"{target}: the sandbox's scratch is {SCRATCH}, emptied after every job; "
            f"move it elsewhere")


def _reachable(source: str, writable: bool, stage: Stager | None, *, traverse: bool) -> str:
    """`source`, or a copy the sandbox's user can read."""
    blocked = blocked_at(source, traverse=traverse)
    if blocked is None:
        return source
    fix = (f"let every user traverse the directories above it and read it "
           f"(chmod o+x on {blocked}, chmod -R o+rX {source}), or move it")
    if writable:
        raise SandboxError(f"the sandbox's user cannot reach {source}, which it must "
                           f"write ({blocked} is closed to other users): {fix}")
    if stage is None:
        raise SandboxError(f"the sandbox's user cannot reach {source} ({blocked} is "
                           f"closed to other users): {fix}")
    return stage(source)


class Stage:
    """World-readable copies of what the sandbox's user cannot reach, one per content.

    They live in `root` (a directory every user may traverse, but only we may write);
    a source is hashed again only when its files' sizes or times change.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._copies: dict[str, tuple[list[tuple[str, int, int, int]], str]] = {}

    def copy_of(self, source: str) -> str:
        with self._lock:
            listing = _listing(source)
            known = self._copies.get(source)
            if known is not None and known[0] == listing and os.path.exists(known[1]):
                return known[1]
            size = sum(entry[2] for entry in listing)
            if size > STAGE_LIMIT_MB * 1024 * 1024:
                raise SandboxError(
                    f"the sandbox's user cannot reach {source}, and at "
                    f"{size // (1024 * 1024)} MB it is too large to copy for it: let every "
                    f"user traverse the directories above it and read it (chmod o+x on "
                    f"each, chmod -R o+rX {source}), or move it")
            try:
                copy = self._make(source, listing)
            except (OSError, shutil.Error) as exc:
                raise SandboxError(f"could not stage a readable copy of {source} for the "
                                   f"sandbox: {exc}") from exc
            self._copies[source] = (listing, copy)
            return copy

    def _make(self, source: str, listing: list[tuple[str, int, int, int]]) -> str:
        key = _content_key(source, listing)
        final = self.root / key
        copy = final / os.path.basename(source)
        if not final.exists():
            part = Path(tempfile.mkdtemp(prefix=".part-", dir=self.root))
            try:
                if os.path.isdir(source):
                    shutil.copytree(source, part / copy.name, symlinks=True,
                                    copy_function=shutil.copyfile)
                else:
                    shutil.copyfile(source, part / copy.name)
                _open_to_all(part)
                part.rename(final)
            finally:
                shutil.rmtree(part, ignore_errors=True)
        blocked = blocked_at(str(copy))
        if blocked is not None:
            raise SandboxError(
                f"the copy of {source} staged for the sandbox is out of its user's reach "
                f"too ({blocked} is closed to other users): point TMPDIR at a directory "
                f"every user can traverse")
        return str(copy)


def _listing(source: str) -> list[tuple[str, int, int, int]]:
    """(relative path, mode, size, mtime) of everything under `source`, links unfollowed."""
    entries = []
    paths = [source]
    if os.path.isdir(source):
        for directory, dirs, files in os.walk(source):
            dirs.sort()
            paths += [os.path.join(directory, name) for name in sorted(dirs + files)]
    for path in paths:
        info = os.lstat(path)
        entries.append((os.path.relpath(path, source), info.st_mode, info.st_size,
                        info.st_mtime_ns))
    return entries


def _content_key(source: str, listing: list[tuple[str, int, int, int]]) -> str:
    digest = hashlib.sha256()
    for relative, mode, _, _ in listing:
        path = os.path.normpath(os.path.join(source, relative))
        if stat.S_ISLNK(mode):
            body = b"link " + os.fsencode(os.readlink(path))
        elif stat.S_ISDIR(mode):
            body = b"dir"
        else:
            # What the copy keeps of the mode: whether it can be executed.
            with open(path, "rb") as handle:
                body = b"exec " if mode & 0o111 else b"file "
                body += hashlib.sha256(handle.read()).digest()
        for part in (os.fsencode(relative), body):
            digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()[:32]


def _open_to_all(root: Path) -> None:
    for directory, dirs, files in os.walk(root):
        Path(directory).chmod(0o755)
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            # A link's own mode means nothing, and chmod would follow it out of the copy.
            if stat.S_ISREG(info.st_mode):
                os.chmod(path, 0o755 if info.st_mode & 0o111 else 0o644)


def runner_environment(spec: LaunchSpec, **extra: str) -> dict[str, str]:
    """The runner's whole environment inside a sandbox: ours, then the spec's."""
    env = {
        "PATH": SANDBOX_PATH,
        "LANG": "C.UTF-8",
        "HOME": SCRATCH,
        "TMPDIR": SCRATCH,
        "EVALUATOR_SCRATCH": SCRATCH,
    }
    env.update(extra)
    env.update(spec.env)
    return env
