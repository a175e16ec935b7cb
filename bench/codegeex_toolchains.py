"""What CodeGeeX's evaluator needs to run JavaScript, Go and Rust here, offline.

CodeGeeX's own set-up is a Docker image (js-md5 installed globally, a Go module with
testify vendored, a Cargo project with crates.io access). Here each is rebuilt from what
the machine has, and warmed before any timing, as a machine that has run it before is:

- JavaScript: `js-md5` from our pinned node_modules, on NODE_PATH.
- Go: testify from Debian's GOPATH (`GO111MODULE=off`), and a build cache kept between
  runs. CodeGeeX's command (`go test`, vet included) is left as it is.
- Rust: the Cargo project CodeGeeX expects at `codegeex/benchmark/rust` (the PyPI wheel
  does not ship it), with Debian's regex and md5 as a directory source, and our rand
  crate with the 0.4 API that its tests need (rand 0.4 is not packaged). Debian's cargo
  and rustc, the toolchain our evaluator uses too.

Everything lives inside the benchmark's virtual environment (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

from bench.codegeex_env import VENV, ensure_venv, package_dir

CACHE = VENV / "toolchains"
REPO = Path(__file__).resolve().parent.parent
RUNTIME = REPO / "evaluator" / "languages" / "runtime"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""Debian's tools first: not a rustup toolchain that happens to be earlier on PATH."""


def js_env() -> dict[str, str]:
    # NODE_EXTRA_CA_CERTS (set on machines behind a TLS proxy, as here) makes every node
    # start parse the whole CA bundle: about 35 ms of CPU on top of node's own 25 ms.
    # Our programs never see it (the sandbox clears the environment); empty, node skips
    # it, so CodeGeeX's node starts as on a machine without it, like ours.
    return {"NODE_PATH": os.environ.get("EVALUATOR_NODE_MODULES",
                                        str(RUNTIME / "js" / "node_modules")),
            "NODE_EXTRA_CA_CERTS": ""}


def go_env() -> dict[str, str]:
    env = {"GO111MODULE": "off", "GOPATH": "/usr/share/gocode", "GOFLAGS": "",
           "GOCACHE": str(CACHE / "go-build"), "PATH": SYSTEM_PATH}
    marker = CACHE / "go-build" / ".warm"
    if not marker.exists():
        # Build the standard library and testify into the cache once, untimed.
        work = CACHE / "go-warm"
        work.mkdir(parents=True, exist_ok=True)
        (work / "main_test.go").write_text(textwrap.dedent("""\
            package main

            import (
                "testing"
                "github.com/stretchr/testify/assert"
            )

            func TestWarm(t *testing.T) {
                assert.Equal(t, 1, 1)
            }
            """))
        subprocess.run(["go", "test", "main_test.go"], cwd=work, check=True,
                       env={**os.environ, **env}, capture_output=True)
        marker.write_text("warm\n")
    return env


def rust_env() -> dict[str, str]:
    ensure_venv()
    project = package_dir() / "benchmark" / "rust"
    home = CACHE / "cargo-home"
    # CodeGeeX runs `cargo test` with no time limit (os.system), so a sample that loops
    # hangs its evaluation forever and outlives it: cargo's target runner gives each test
    # binary the sample timeout the benchmark passes CodeGeeX (60 s).
    env = {"PATH": SYSTEM_PATH, "CARGO_HOME": str(home), "RUSTC": "/usr/bin/rustc",
           "CARGO_NET_OFFLINE": "true",
           "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER": "timeout -s KILL 60"}
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[source.crates-io]\nreplace-with = "debian"\n\n'
        '[source.debian]\ndirectory = "/usr/share/cargo/registry"\n\n[net]\noffline = true\n')
    manifest = textwrap.dedent(f"""\
        [package]
        name = "rust"
        version = "0.1.0"
        edition = "2021"

        [dependencies]
        rand = {{ path = "{RUNTIME / 'rust' / 'rand'}" }}
        regex = "1"
        md5 = "0.7"
        """)
    bins = project / "src" / "bin"
    if (project / "Cargo.toml").exists() and (project / "Cargo.toml").read_text() == manifest:
        # Samples of an earlier run: CodeGeeX leaves one file per task behind.
        for path in bins.glob("*.rs"):
            if path.name != "warm.rs":
                path.unlink()
        shutil.rmtree(project / "tmp", ignore_errors=True)
        return env
    bins.mkdir(parents=True, exist_ok=True)
    (project / "Cargo.toml").write_text(manifest)
    (bins / "warm.rs").write_text("fn main() {}\n")
    # CodeGeeX runs `cargo check` then `cargo test` for each sample: compile the crates
    # for both once, untimed.
    for command in (["cargo", "check", "--bin", "warm"], ["cargo", "test", "--bin", "warm"]):
        subprocess.run(command, cwd=project, check=True, env={**os.environ, **env},
                       capture_output=True)
    return env
