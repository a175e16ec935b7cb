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
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from evaluator.sandbox.base import LaunchSpec, Mount

SANDBOX_UID = 65534
SANDBOX_GID = 65534
"""nobody/nogroup: the identity of every sandboxed program, inside and (bwrap) outside."""

SCRATCH = "/tmp"
"""Where the scratch tmpfs is mounted inside the sandbox."""

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


@dataclass(frozen=True)
class View:
    """What to mount where: binds (source, target, writable) and top-level links."""

    binds: tuple[tuple[str, str, bool], ...]
    links: tuple[tuple[str, str], ...]
    """(link target, path of the link)."""


def build_view(spec: LaunchSpec, etc_dir: Path) -> View:
    """The binds and links for `spec`; the generated /etc files are written to `etc_dir`."""
    etc_dir.mkdir(parents=True, exist_ok=True)
    binds: list[tuple[str, str, bool]] = []
    seen: set[str] = set()

    def add(mount: Mount) -> None:
        source = os.path.abspath(mount.source)
        target = os.path.abspath(mount.target or mount.source)
        if target in seen or not os.path.exists(source):
            return
        seen.add(target)
        binds.append((source, target, mount.writable))

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
    return View(tuple(binds), tuple(links))


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
