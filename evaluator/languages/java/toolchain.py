"""The JDK the Java recipe uses, and the libraries its programs may import.

`jdk()` finds `javac` (OpenJDK 17 preferred), and builds once, in the cache directory, what
every Java job shares: the `evaluator_harness` classes the rewritten tests call, the
`evaluator_compiler` classes of the warm compile service, and an AppCDS archive of javac's
own classes. With that archive, C1 only and the serial collector, a `javac` started per
job costs less than half the CPU of a cold one: the same compiler on the same input, so
the same verdict.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from evaluator.languages.toolchains import (
    Tool,
    ToolchainError,
    prebuilt,
    run_tool,
    tree_key,
    version_key,
)

RUNTIME = Path(__file__).resolve().parent.parent / "runtime" / "java"
JDK17_JAVAC = "/usr/lib/jvm/java-17-openjdk-amd64/bin/javac"
JAVAC = Tool("javac", "EVALUATOR_JAVAC", (JDK17_JAVAC,), "apt-get install openjdk-17-jdk-headless")

FAST_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData", "-Xshare:auto")
"""JVM flags for short runs: C1 only (no C2 warm-up cost), one GC thread, no perf file
in /tmp. They change speed, not behaviour."""

JVM_THREADS = 64
"""A JVM starts ~14 threads, and RLIMIT_NPROC counts threads: a Java step gets this many
more processes than its limits say, so a correct program cannot fail to start."""

JAVATUPLES = ("/usr/share/java/javatuples.jar",)

_WARM_UP = """\
import java.util.*;
import java.util.stream.*;
class Solution {
    public List<Integer> f(List<Integer> xs, String s) {
        Map<String, Integer> m = new HashMap<>();
        m.put(s.toLowerCase(), xs.stream().mapToInt(x -> x).sum());
        return xs.stream().filter(x -> x % 2 == 0).sorted().collect(Collectors.toList());
    }
}
public class Main {
    public static void main(String[] args) {
        Solution s = new Solution();
        List<Boolean> correct = Arrays.asList(
            s.f(new ArrayList<>(Arrays.asList(1, 2)), "a").equals(Arrays.asList(2)));
        { evaluator_harness.Site site = evaluator_harness.Site.open(0);
          site.truth(Objects.equals(site.tap(s.f(List.of(), "")), List.of())); }
        if (correct.contains(false)) { throw new AssertionError(); }
    }
}
"""


@dataclass(frozen=True)
class Jdk:
    javac: str
    java: str
    home: Path
    version: str
    harness: Path
    """Compiled `evaluator_harness` classes."""
    compiler: Path
    """Compiled `evaluator_compiler` classes (the warm compile service)."""
    javac_archive: Path | None
    """AppCDS archive of javac's classes, when it could be built."""


@functools.lru_cache(maxsize=1)
def jdk() -> Jdk:
    javac = JAVAC.find()
    if javac is None:
        raise ToolchainError("javac is not installed (apt-get install openjdk-17-jdk-headless)")
    home = Path(os.path.realpath(javac)).parent.parent
    java = str(home / "bin" / "java")
    version = run_tool([javac, "-version"], timeout=120).strip()
    sources = sorted((RUNTIME / "evaluator_harness").glob("*.java"))
    server = sorted((RUNTIME / "evaluator_compiler").glob("*.java"))
    key = version_key(version, tree_key(RUNTIME), *FAST_JVM)

    def build(work: Path) -> None:
        run_tool([javac, "-encoding", "UTF-8", "-d", str(work / "classes"),
                  *map(str, sources)], timeout=600)
        run_tool([javac, "-encoding", "UTF-8", "-d", str(work / "compiler"),
                  *map(str, server)], timeout=600)
        (work / "Main.java").write_text(_WARM_UP)
        try:
            run_tool([javac, *(f"-J{flag}" for flag in FAST_JVM),
                      f"-J-XX:ArchiveClassesAtExit={work / 'javac.jsa'}",
                      "-encoding", "UTF-8", "-proc:none", "-cp", str(work / "classes"),
                      "-d", str(work / "warm-up"), "Main.java"], cwd=work, timeout=600)
        except ToolchainError:
            (work / "javac.jsa").unlink(missing_ok=True)

    built = prebuilt("java-harness", key, build)
    archive = built / "javac.jsa"
    return Jdk(javac=javac, java=java, home=home, version=version,
               harness=built / "classes", compiler=built / "compiler",
               javac_archive=archive if archive.exists() else None)


def javatuples() -> str | None:
    configured = os.environ.get("EVALUATOR_JAVATUPLES")
    if configured:
        return configured if Path(configured).exists() else None
    return next((path for path in JAVATUPLES if Path(path).exists()), None)
