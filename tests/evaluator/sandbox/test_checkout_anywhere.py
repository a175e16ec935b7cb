"""The sandbox finds its runtime files wherever the checkout lives (issue 22).

The end-to-end tests copy this working tree (its tracked files and its new ones, as they
are now rather than as committed) into a fresh private directory that
`tempfile.mkdtemp` makes under /tmp: mode 0700, so the sandbox's user (nobody) cannot
enter it, and under /tmp, where every sandbox mounts its scratch. From there they run
canonical solutions with `python -m evaluator selfcheck --json`, in a subprocess of this
venv's Python, and accept only passes and failures the defect registry explains: no
unexplained failure, no sandbox error, and no compile service (JavaScript's pool) that
failed and left the jobs to run on their own.

What the slow matrix runs, and why: all 164 HumanEval-X problems for Python and
JavaScript, the two languages whose runtime files the sandbox reads from the checkout
while it runs (pyharness.py; harness.js, the pool and their modules); the first 20 for
C++, Java, Go and Rust, whose checkout files are compiled on the host into the cache
before anything is sandboxed, so that 20 programs exercise their compile, link and run
steps from the copy as well as 164 would. Under both levels the matrix took 3.5
minutes on this 2-core machine (load 9-11 from other test runs; build cache warm); by
the times per problem measured there, all 164 for the compiled languages would add about
20 minutes.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_programs import LIMITS, REPO_ROOT, require_backend

from evaluator.languages import toolchains
from evaluator.languages.toolchains import ToolchainError, cache_root
from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.base import Mount, SandboxError
from evaluator.sandbox.session import RunnerSession

LANGUAGES = ("python", "cpp", "java", "js", "go", "rust")
WHOLE = ("python", "js")
"""Languages the matrix runs on every problem; the others run `SUBSET`."""
SUBSET = 20
FEW = 3
"""Problems per run in the small tests."""
BACKENDS = {"standard": "bwrap", "strict": "gvisor"}
NODE_MODULES = REPO_ROOT / "evaluator" / "languages" / "runtime" / "js" / "node_modules"
SELFCHECK_TIMEOUT = 1800
SERVICE_FAILED = "compile service failed"
"""What the engine logs when a compile service (JavaScript's pool) fails as a sandbox."""


# -- copies of the checkout ---------------------------------------------------------------

def copy_checkout(dest: Path) -> Path:
    """This working tree's files, as they are now, at `dest`, with node's modules linked
    in (npm installs them beside the runtime, not in git)."""
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO_ROOT, capture_output=True, check=True, timeout=120).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot list the checkout's files with git: {exc}")
    if not NODE_MODULES.is_dir():
        pytest.skip(f"node modules are not installed at {NODE_MODULES}")
    for name in filter(None, os.fsdecode(listing).split("\0")):
        source = REPO_ROOT / name
        if not os.path.lexists(source):
            continue  # deleted in the working tree, not yet in git
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    (dest / NODE_MODULES.relative_to(REPO_ROOT)).symlink_to(NODE_MODULES.resolve())
    imported = subprocess.run(
        [sys.executable, "-c", "import evaluator; print(evaluator.__file__)"],
        cwd=dest, env=_environment(), capture_output=True, text=True, check=True,
        timeout=120).stdout.strip()
    assert Path(imported).is_relative_to(dest), f"the copy would run {imported}"
    return dest


def private_directory() -> Path:
    """A fresh directory under /tmp that only its owner may enter."""
    path = Path(tempfile.mkdtemp(dir="/tmp"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    return path


def remove(path: Path) -> None:
    for directory, _, _ in os.walk(path):
        with_write = os.stat(directory).st_mode | stat.S_IWUSR
        os.chmod(directory, with_write)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def checkout() -> Iterator[Path]:
    """A copy in a private directory under /tmp."""
    parent = private_directory()
    try:
        yield copy_checkout(parent / "checkout")
    finally:
        remove(parent)


@pytest.fixture(scope="module")
def spaced_checkout() -> Iterator[Path]:
    """A copy in a private directory under /tmp, at a path with spaces."""
    parent = private_directory()
    try:
        yield copy_checkout(parent / "a checkout" / "with spaces")
    finally:
        remove(parent)


# -- datasets and the selfcheck -----------------------------------------------------------

@pytest.fixture(scope="module")
def humaneval_x(shared_dir: Path) -> Path:
    path = shared_dir / "datasets" / "humaneval-x"
    missing = [lang for lang in LANGUAGES if not (path / f"humaneval_{lang}.jsonl.gz").is_file()]
    if missing:
        pytest.skip(f"HumanEval-X data for {', '.join(missing)} is not in {path}")
    return path


def first_problems(humaneval_x: Path, language: str, count: int | None, into: Path) -> Path:
    """HumanEval-X's file for `language`, or a copy of its first `count` problems."""
    source = humaneval_x / f"humaneval_{language}.jsonl.gz"
    if count is None:
        return source
    with gzip.open(source, "rt", encoding="utf-8") as lines:
        head = [line for _, line in zip(range(count), lines, strict=False)]
    subset = into / f"humaneval_{language}_first{count}.jsonl.gz"
    with gzip.open(subset, "wt", encoding="utf-8") as out:
        out.writelines(head)
    return subset


def _environment(**changes: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    # The read-only checkout must stay unchanged: Python's bytecode cache is not ours.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(changes)
    return env


def run_selfcheck(checkout: Path, dataset: Path, level: str, *, read_only: bool = False,
                  **env: str) -> dict[str, Any]:
    """`python -m evaluator selfcheck --json` from `checkout`; its report."""
    require_backend(BACKENDS[level])
    argv = [sys.executable, "-m", "evaluator", "selfcheck", "--dataset-file", str(dataset),
            "--sandbox", level, "--no-cache", "--json"]
    if read_only:
        # A bind of the copy onto itself, read-only, in a mount namespace of the run's
        # own: writes fail even for root, as in a read-only image.
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount --bind -o ro "$0" "$0" && cd "$0" && exec "$@"', str(checkout), *argv]
    done = subprocess.run(argv, cwd=checkout, env=_environment(**env), capture_output=True,
                          text=True, timeout=SELFCHECK_TIMEOUT, check=False)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout)
    report["stderr"] = done.stderr
    return report


def assert_passes_or_registered(report: dict[str, Any], problems: int) -> None:
    failures = report["failures"]
    assert report["problems"] == problems
    assert [f for f in failures if f["status"] == "sandbox_error"] == []
    assert [f for f in failures if not f["explained_by"]] == []
    assert report["passed"] + report["explained"] == problems
    assert SERVICE_FAILED not in report["stderr"], report["stderr"][-3000:]


# -- every language under both levels -----------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("level", ["standard", "strict"])
@pytest.mark.parametrize("language", LANGUAGES)
def test_canonical_solutions_pass_from_a_private_checkout_under_tmp(
        checkout: Path, humaneval_x: Path, tmp_path: Path, language: str, level: str) -> None:
    count = None if language in WHOLE else SUBSET
    dataset = first_problems(humaneval_x, language, count, tmp_path)
    report = run_selfcheck(checkout, dataset, level)
    assert_passes_or_registered(report, count or 164)


# -- other places a checkout or a home can be ---------------------------------------------

@pytest.mark.parametrize("level", ["standard", "strict"])
@pytest.mark.parametrize("language", ["js", "python"])
def test_a_checkout_at_a_path_with_spaces(spaced_checkout: Path, humaneval_x: Path,
                                          tmp_path: Path, language: str, level: str) -> None:
    dataset = first_problems(humaneval_x, language, FEW, tmp_path)
    assert_passes_or_registered(run_selfcheck(spaced_checkout, dataset, level), FEW)


def _tree_state(root: Path) -> dict[str, tuple[int, int, int]]:
    state = {}
    for directory, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            info = os.lstat(os.path.join(directory, name))
            state[os.path.relpath(os.path.join(directory, name), root)] = (
                info.st_mode, info.st_size, info.st_mtime_ns)
    return state


def test_a_read_only_checkout(humaneval_x: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a read-only bind of the checkout needs root and unshare")
    parent = private_directory()
    try:
        copy = copy_checkout(parent / "read only")
        subprocess.run(["chmod", "-R", "a-w", str(copy)], check=True, timeout=60)
        before = _tree_state(copy)
        for level in ("standard", "strict"):
            for language in ("js", "python"):
                dataset = first_problems(humaneval_x, language, FEW, tmp_path)
                report = run_selfcheck(copy, dataset, level, read_only=True)
                assert_passes_or_registered(report, FEW)
        assert _tree_state(copy) == before
    finally:
        remove(parent)


@pytest.mark.parametrize("level", ["standard", "strict"])
def test_a_home_only_its_owner_may_enter(checkout: Path, humaneval_x: Path, tmp_path: Path,
                                         level: str) -> None:
    home = private_directory()
    try:
        for language in ("js", "python"):
            dataset = first_problems(humaneval_x, language, FEW, tmp_path)
            report = run_selfcheck(checkout, dataset, level, HOME=str(home))
            assert_passes_or_registered(report, FEW)
    finally:
        remove(home)


def test_a_home_that_does_not_exist(checkout: Path, humaneval_x: Path, tmp_path: Path) -> None:
    parent = private_directory()
    try:
        for language in ("js", "python"):
            dataset = first_problems(humaneval_x, language, FEW, tmp_path)
            report = run_selfcheck(checkout, dataset, "standard",
                                   HOME=str(parent / "no" / "such" / "home"))
            assert_passes_or_registered(report, FEW)
    finally:
        remove(parent)


# -- mounts in the scratch, and mounts out of reach ---------------------------------------

PROBE = """
import errno, json, os
tree, top = {tree!r}, {top!r}
seen = {{"read": open(os.path.join(tree, "harness.txt")).read()}}
def attempt(name, action):
    try:
        action()
        seen[name] = "done"
    except OSError as exc:
        seen[name] = errno.errorcode.get(exc.errno, str(exc.errno))
attempt("rename_top", lambda: os.rename(top, "/tmp/moved"))
attempt("forge_beside", lambda: open(os.path.join(top, "forged.txt"), "w").close())
attempt("rename_tree", lambda: os.rename(tree, tree + ".old"))
attempt("unlink_tree", lambda: os.unlink(tree))
attempt("write_inside", lambda: open(os.path.join(tree, "harness.txt"), "w").close())
print(json.dumps(seen))
"""


def _probe(session: RunnerSession, tree: Path) -> dict[str, str]:
    top = Path("/tmp") / tree.relative_to("/tmp").parts[0]
    job = {"kind": "command",
           "files": {"probe.py": PROBE.format(tree=str(tree), top=str(top))},
           "steps": [{"name": "run", "argv": ["/usr/bin/python3", "probe.py"],
                      "limits": LIMITS.to_dict()}]}
    step = session.run(job)["steps"][-1]
    assert step["exit_code"] == 0, step
    seen: dict[str, str] = json.loads(step["stdout"])
    return seen


@pytest.mark.parametrize("backend", ["bwrap", "gvisor"])
def test_a_program_cannot_move_or_forge_a_mount_in_the_scratch(backend: str) -> None:
    # The tree lies in a private directory under /tmp, where the sandbox's scratch is: a
    # staged copy of it is reached at its own path, through a read-only skeleton on top
    # of the scratch, which a program must not be able to change before the next job
    # looks there, nor the runner empty after each job.
    require_backend(backend)
    parent = private_directory()
    tree = parent / "runtime"
    tree.mkdir()
    (tree / "harness.txt").write_text("the real harness")
    session = RunnerSession(get_backend(backend), limits=LIMITS, mounts=[Mount(tree)])
    try:
        session.start()
        first = _probe(session, tree)
        assert first.pop("read") == "the real harness"
        assert "done" not in first.values(), first
        assert _probe(session, tree)["read"] == "the real harness"
    finally:
        session.close()
        remove(parent)


def test_a_mount_the_sandbox_cannot_use_stops_the_start_with_the_fix() -> None:
    require_backend("bwrap")
    parent = private_directory()
    try:
        cache = parent / "cache"
        cache.mkdir()
        # Out of nobody's reach, and writable: a copy would not do.
        session = RunnerSession(get_backend("bwrap"), limits=LIMITS,
                                mounts=[Mount(cache, Path("/opt/cache"), writable=True)])
        with pytest.raises(SandboxError, match=rf"cannot reach {cache}.*chmod o\+x on {parent}"):
            session.start()
        session.close()
        # At the top of the scratch, which the runner empties after every job.
        parent.chmod(0o755)
        session = RunnerSession(get_backend("bwrap"), limits=LIMITS,
                                mounts=[Mount(cache, Path("/tmp/cache"), writable=True)])
        with pytest.raises(SandboxError, match=r"at /tmp/cache: .* emptied after every job"):
            session.start()
        session.close()
    finally:
        remove(parent)


WRITE_THEN_READ = """
import os, sys
path = os.path.join({cache!r}, "note.txt")
if sys.argv[1] == "write":
    open(path, "w").write("kept")
print(open(path).read())
"""


@pytest.mark.parametrize("backend", ["bwrap", "gvisor"])
def test_a_writable_mount_in_the_scratch_outlives_the_sweep(backend: str) -> None:
    # A cache under /tmp, open to nobody: what a program writes there is on the host, and
    # still there for the next job, after the runner has emptied the scratch.
    require_backend(backend)
    parent = private_directory()
    parent.chmod(0o755)
    cache = parent / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    session = RunnerSession(get_backend(backend), limits=LIMITS,
                            mounts=[Mount(cache, writable=True)])
    try:
        session.start()
        for action in ("write", "read"):
            job = {"kind": "command",
                   "files": {"note.py": WRITE_THEN_READ.format(cache=str(cache))},
                   "steps": [{"name": "run", "argv": ["/usr/bin/python3", "note.py", action],
                              "limits": LIMITS.to_dict()}]}
            step = session.run(job)["steps"][-1]
            assert (step["exit_code"], step["stdout"].strip()) == (0, "kept"), step
        assert (cache / "note.txt").read_text() == "kept"
    finally:
        session.close()
        remove(parent)


# -- the cache when home is no place for it -----------------------------------------------

def test_the_cache_leaves_a_home_the_sandbox_cannot_enter(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root's sandbox runs as another user (nobody)")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    shared = tmp_path / "var-tmp"
    shared.mkdir()
    monkeypatch.delenv(toolchains.CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(home))
    # No system cache: its parent is a file.
    (tmp_path / "file").write_text("")
    monkeypatch.setattr(toolchains, "SYSTEM_CACHE", tmp_path / "file" / "evaluator")
    monkeypatch.setattr(toolchains, "SHARED_TEMPORARY", shared)
    root = cache_root()
    assert root == shared / f"evaluator-cache-{os.geteuid()}"
    assert stat.S_IMODE(root.stat().st_mode) == 0o755
    # One that another user made first is refused, not used.
    os.chown(root, 65534, 65534)
    with pytest.raises(ToolchainError, match=toolchains.CACHE_ENV):
        cache_root()
    os.chown(root, 0, 0)
    root.chmod(0o777)
    with pytest.raises(ToolchainError, match="only it can write"):
        cache_root()
